package cgroups

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkScan: one collection's cgroup pass on real v1 memory cgroups
// the benchmark makes (a slice of pods of containers, like a busy node):
// every cgroup's Brief, the selection (top 20 plus up to 50 near a limit
// or killed) and the full read of the selected ones.
func BenchmarkScan(b *testing.B) {
	for _, n := range []int{200, 5000} {
		b.Run(fmt.Sprintf("cgroups=%d", n), func(b *testing.B) {
			dir := testParent(b)
			made := 0
			for pod := 0; made < n; pod++ {
				p := fmt.Sprintf("%s/pod%d", dir, pod)
				if err := os.Mkdir(p, 0o755); err != nil {
					b.Fatal(err)
				}
				made++
				for c := 0; c < 9 && made < n; c++ {
					if err := os.Mkdir(fmt.Sprintf("%s/c%d", p, c), 0o755); err != nil {
						b.Fatal(err)
					}
					made++
				}
			}
			r := hostReader()
			r.Root = strings.TrimPrefix(dir, "/")
			b.ResetTimer()
			for b.Loop() {
				briefs, dirs, _ := r.Scan(20000)
				if dirs != n+1 {
					b.Fatalf("walked %d directories, want %d", dirs, n+1)
				}
				for _, s := range Select(briefs, 20, 50) {
					r.ReadBrief(s)
				}
			}
		})
	}
}

// BenchmarkRuntimeNames: naming the cgroups of 200 pods (a pod cgroup and
// two containers each, on the systemd driver) from a fake kubelet tree of
// 200 pods: cold (a new Runtime: both listings read) and warm (a new
// generation over unchanged listings: two directory checks).
func BenchmarkRuntimeNames(b *testing.B) {
	root := b.TempDir()
	var paths []string
	for i := 0; i < 200; i++ {
		p := kubePod{"ns" + fmt.Sprint(i%7), fmt.Sprintf("app-%d-x7k2p", i), podUID(i), map[string]string{"main": hexID(2 * i), "sidecar": hexID(2*i + 1)}}
		writeKube(b, root, p)
		slice := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(p.uid, "-", "_") + ".slice"
		paths = append(paths, slice, slice+"/cri-containerd-"+hexID(2*i)+".scope", slice+"/cri-containerd-"+hexID(2*i+1)+".scope")
	}
	name := func(r *Runtime) {
		for _, p := range paths {
			if id := r.Name(p); id.Pod == "" {
				b.Fatalf("%s not named: %+v", p, id)
			}
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			name(NewRuntime(root))
		}
	})
	b.Run("warm", func(b *testing.B) {
		r := NewRuntime(root)
		name(r)
		for b.Loop() {
			r.Begin()
			name(r)
		}
	})
	b.Run("path-only", func(b *testing.B) {
		for b.Loop() {
			for _, p := range paths {
				_ = Name(p)
			}
		}
	})
}
