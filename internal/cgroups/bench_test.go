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
