package cgroups

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kubePod is one pod of a fake kubelet tree: its containers by name, each
// with its container id.
type kubePod struct {
	ns, name, uid string
	ctrs          map[string]string
}

// writeKube lays out the kubelet's log directories below root as the
// kubelet does: /var/log/pods/<ns>_<pod>_<uid>/<container>/0.log and the
// /var/log/containers/<pod>_<ns>_<container>-<id>.log links to them.
func writeKube(t testing.TB, root string, pods ...kubePod) {
	t.Helper()
	for _, p := range pods {
		pd := filepath.Join(root, "var/log/pods", p.ns+"_"+p.name+"_"+p.uid)
		for c, id := range p.ctrs {
			mustMkdir(t, filepath.Join(pd, c))
			mustWrite(t, filepath.Join(pd, c, "0.log"), "a log line\n")
			mustMkdir(t, filepath.Join(root, "var/log/containers"))
			link := filepath.Join(root, "var/log/containers", p.name+"_"+p.ns+"_"+c+"-"+id+".log")
			if err := os.Symlink(filepath.Join("/var/log/pods", p.ns+"_"+p.name+"_"+p.uid, c, "0.log"), link); err != nil {
				t.Fatal(err)
			}
		}
		mustMkdir(t, pd)
	}
}

func mustMkdir(t testing.TB, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, p, s string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hexID makes a distinct container id from n.
func hexID(n int) string { return fmt.Sprintf("%064x", 0xc0ffee0000+n) }

// podUID makes a distinct pod UID from n.
func podUID(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }

// dockerConfig is a config.v2.json as Docker writes it, in its key order:
// the container's environment (with a secret) before its name.
func dockerConfig(name string) string {
	return `{"StreamConfig":{},"State":{"Running":true,"Pid":42},"ID":"x","Path":"/bin/sh","Args":["-c","sleep 1"],` +
		`"Config":{"Hostname":"h","Env":["PATH=/usr/bin","DB_PASSWORD=hunter2-secret"],"Labels":{"Name":"not-this"}},` +
		`"Image":"sha256:00","Name":` + jsonString(name) + `,"RestartCount":0,"Driver":"overlay2"}`
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// TestRuntimeNamesKubernetes: a fake kubelet tree names pods and their
// containers on both cgroup drivers: namespace/pod/container for a
// container, namespace/pod for the pod; a container without a log link
// (the pause container) keeps its runtime and id under the pod's name; a
// pod the tree does not know keeps its UID.
func TestRuntimeNamesKubernetes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeKube(t, root, kubePod{"shop", "cart-7d9f-x2x", podUID(1), map[string]string{"app": hexID(1), "sidecar": hexID(2)}},
		kubePod{"kube-system", "coredns-1", podUID(2), map[string]string{"coredns": hexID(3)}})
	r := NewRuntime(root)
	uidU := strings.ReplaceAll(podUID(1), "-", "_")
	cases := []struct {
		path               string
		name, ns, pod, ctr string
	}{
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice", "shop/cart-7d9f-x2x", "shop", "cart-7d9f-x2x", ""},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + hexID(1) + ".scope",
			"shop/cart-7d9f-x2x/app", "shop", "cart-7d9f-x2x", "app"},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + hexID(9) + ".scope",
			"shop/cart-7d9f-x2x containerd " + hexID(9)[:12], "shop", "cart-7d9f-x2x", ""},
		{"/kubepods/pod" + podUID(2) + "/" + hexID(3), "kube-system/coredns-1/coredns", "kube-system", "coredns-1", "coredns"},
		{"/kubepods/besteffort/pod" + podUID(3), "pod " + podUID(3), "", "", ""},
		{"/system.slice/nginx.service", "nginx.service", "", "", ""},
	}
	for _, c := range cases {
		got := r.Name(c.path)
		if got.Name != c.name || got.Namespace != c.ns || got.Pod != c.pod || got.Container != c.ctr {
			t.Errorf("Name(%s) = %+v, want name %q, namespace %q, pod %q, container %q", c.path, got, c.name, c.ns, c.pod, c.ctr)
		}
		if plain := Name(c.path); got.PodUID != plain.PodUID || got.ContainerID != plain.ContainerID || got.QoS != plain.QoS {
			t.Errorf("Name(%s): the path's identity changed: %+v, from the path %+v", c.path, got, plain)
		}
	}
	if got := (*Runtime)(nil).Name(cases[1].path); got != Name(cases[1].path) {
		t.Errorf("a nil Runtime named %+v", got)
	}
	if got := NewRuntime("").Name(cases[1].path); got != Name(cases[1].path) {
		t.Errorf("a Runtime without a root named %+v", got)
	}
}

// TestRuntimeNamesCached: the listings are read again only when their
// directory changed: a pod added later is named after the next Begin, and
// a removed tree names nothing.
func TestRuntimeNamesCached(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeKube(t, root, kubePod{"a", "one", podUID(1), map[string]string{"c": hexID(1)}})
	r := NewRuntime(root)
	p2 := "/kubepods/pod" + podUID(2)
	r.Begin()
	if got := r.Name(p2); got.Pod != "" {
		t.Fatalf("pod two named before it exists: %+v", got)
	}
	writeKube(t, root, kubePod{"a", "two", podUID(2), map[string]string{"c": hexID(2)}})
	if got := r.Name(p2); got.Pod != "" {
		t.Errorf("the listing was read again within a generation: %+v", got)
	}
	r.Begin()
	if got := r.Name(p2); got.Pod != "two" {
		t.Errorf("pod two not named after its directory was made: %+v", got)
	}
	if err := os.RemoveAll(filepath.Join(root, "var")); err != nil {
		t.Fatal(err)
	}
	r.Begin()
	if got := r.Name(p2); got.Pod != "" {
		t.Errorf("pod two still named with no kubelet tree: %+v", got)
	}
}

// TestRuntimeNamesDockerPodman: Docker's name comes from config.v2.json's
// top-level Name (not a label's) and nothing else of the file is kept:
// the secret in its environment is in no field of the identity or the
// Runtime's cache. Podman's come from containers.json.
func TestRuntimeNamesDockerPodman(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, dockerDir, hexID(1), "config.v2.json"), dockerConfig("/web-1"))
	mustWrite(t, filepath.Join(root, podmanStore), `[{"id":"`+hexID(2)+`","names":["db"],"image":"x","metadata":"{\"secret\":1}"},`+
		`{"id":"`+hexID(3)+`","names":"wrong type"},{"id":"`+hexID(4)+`","names":["cache"]}]`)
	r := NewRuntime(root)
	for _, c := range []struct{ path, want string }{
		{"/system.slice/docker-" + hexID(1) + ".scope", "web-1"},
		{"/docker/" + hexID(1), "web-1"},
		{"/docker/" + hexID(5), "docker " + hexID(5)[:12]}, // no config
		{"/machine.slice/libpod-" + hexID(2) + ".scope", "db"},
		{"/machine.slice/libpod-" + hexID(4) + ".scope", "cache"},
		{"/machine.slice/libpod-" + hexID(3) + ".scope", "podman " + hexID(3)[:12]},
	} {
		got := r.Name(c.path)
		if got.Name != c.want {
			t.Errorf("Name(%s) = %+v, want %q", c.path, got, c.want)
		}
		if strings.Contains(fmt.Sprintf("%+v", got), "hunter2") {
			t.Errorf("Name(%s) kept the environment: %+v", c.path, got)
		}
	}
	if s := fmt.Sprintf("%+v", *r); strings.Contains(s, "hunter2") || strings.Contains(s, "PASSWORD") {
		t.Errorf("the Runtime kept the environment: %s", s)
	}
}

// TestRuntimeNamesHostile: runtime state a container's owner could shape
// names nothing it should not, and costs little: links out of the root
// (a directory on the way, the file itself, the pods directory) are not
// followed, a 100 MB config is read no further than its cap, invalid JSON
// and a FIFO give no name (without blocking), and names with terminal
// escapes or other bytes Kubernetes and Docker refuse are dropped.
func TestRuntimeNamesHostile(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	outside := filepath.Join(filepath.Dir(root), "outside")
	mustWrite(t, filepath.Join(outside, "c", "config.v2.json"), dockerConfig("/escaped"))
	mustWrite(t, filepath.Join(outside, "pods", "x_stolen_"+podUID(7), "c", "0.log"), "")
	dd := filepath.Join(root, dockerDir)
	mustMkdir(t, dd)
	// 1: the container's directory is a link out of the root.
	if err := os.Symlink(filepath.Join(outside, "c"), filepath.Join(dd, hexID(1))); err != nil {
		t.Fatal(err)
	}
	// 2: the config itself is a link out.
	mustMkdir(t, filepath.Join(dd, hexID(2)))
	if err := os.Symlink(filepath.Join(outside, "c", "config.v2.json"), filepath.Join(dd, hexID(2), "config.v2.json")); err != nil {
		t.Fatal(err)
	}
	// 3: 100 MB, the name past the cap.
	big, err := os.Create(filepath.Join(mustDir(t, filepath.Join(dd, hexID(3))), "config.v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(big, 1<<20)
	_, _ = w.WriteString(`{"Config":{"Env":["A=`)
	chunk := strings.Repeat("a", 1<<20)
	for i := 0; i < 100; i++ {
		_, _ = w.WriteString(chunk)
	}
	_, _ = w.WriteString(`"]},"Name":"/big"}`)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = big.Close()
	// 4: invalid JSON before the name; 5: a name with terminal escapes; 6: a FIFO; 7: a
	// name of another type; 8: a valid one beside them all.
	mustWrite(t, filepath.Join(dd, hexID(4), "config.v2.json"), `{"Config":{"Env":["A=1",}},"Name":"/ok"}`)
	mustWrite(t, filepath.Join(dd, hexID(5), "config.v2.json"), dockerConfig("/\x1b[2J\x1b]0;owned\x07evil"))
	mustMkdir(t, filepath.Join(dd, hexID(6)))
	if err := syscall.Mkfifo(filepath.Join(dd, hexID(6), "config.v2.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dd, hexID(7), "config.v2.json"), `{"Name":{"x":"/y"}}`)
	mustWrite(t, filepath.Join(dd, hexID(8), "config.v2.json"), dockerConfig("/fine"))
	// The kubelet's tree: pods is a link out; containers holds escapes.
	mustMkdir(t, filepath.Join(root, "var/log"))
	if err := os.Symlink(filepath.Join(outside, "pods"), filepath.Join(root, "var/log/pods")); err != nil {
		t.Fatal(err)
	}
	cl := filepath.Join(root, "var/log/containers")
	mustMkdir(t, cl)
	for i, n := range []string{"pod_ns_\x1b[31mred-" + hexID(10) + ".log", "pod_ns\x07_c-" + hexID(11) + ".log", "pod_ns_c_d-" + hexID(12) + ".log",
		"p_ns_" + strings.Repeat("c", 64) + "-" + hexID(13) + ".log", "p_ns_c-" + hexID(14) + ".log"} {
		if err := os.WriteFile(filepath.Join(cl, n), nil, 0o644); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
	}

	r := NewRuntime(root)
	start := time.Now()
	for i, want := range map[int]string{1: "", 2: "", 3: "", 4: "", 5: "", 6: "", 7: "", 8: "fine"} {
		p := "/docker/" + hexID(i)
		got := r.Name(p)
		if got.Container != want {
			t.Errorf("config %d: container name %q, want %q", i, got.Container, want)
		}
		if want == "" && got.Name != "docker "+hexID(i)[:12] {
			t.Errorf("config %d: display name %q", i, got.Name)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("reading the hostile configs took %v", took)
	}
	if got := r.Name("/kubepods/pod" + podUID(7)); got.Pod != "" {
		t.Errorf("a pods directory linked out of the root named %+v", got)
	}
	for i := 10; i <= 14; i++ {
		got := r.Name("/kubepods/pod" + podUID(7) + "/" + hexID(i))
		want := ""
		if i == 14 {
			want = "c"
		}
		if got.Container != want {
			t.Errorf("log link %d: container %q, want %q", i, got.Container, want)
		}
		if strings.ContainsAny(got.Name, "\x1b\x07") {
			t.Errorf("log link %d: an escape in the name %q", i, got.Name)
		}
	}
}

func mustDir(t testing.TB, d string) string {
	mustMkdir(t, d)
	return d
}

// TestMatchNamed: check --cgroup finds a pod by its name (alone or with
// its namespace) and a container by its name, namespace/pod/container or
// Docker name; a container name shared by two pods is ambiguous.
func TestMatchNamed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeKube(t, root, kubePod{"shop", "cart", podUID(1), map[string]string{"app": hexID(1)}},
		kubePod{"shop", "web", podUID(2), map[string]string{"app": hexID(2), "proxy": hexID(3)}})
	mustWrite(t, filepath.Join(root, dockerDir, hexID(4), "config.v2.json"), dockerConfig("/builder"))
	pod1 := "/kubepods/burstable/pod" + podUID(1)
	pod2 := "/kubepods/burstable/pod" + podUID(2)
	paths := []string{"/", "/kubepods", "/kubepods/burstable", pod1, pod1 + "/" + hexID(1), pod2, pod2 + "/" + hexID(2), pod2 + "/" + hexID(3),
		"/docker", "/docker/" + hexID(4)}
	r := NewRuntime(root)
	for q, want := range map[string][]string{
		"cart": {pod1}, "shop/cart": {pod1}, "shop/web/proxy": {pod2 + "/" + hexID(3)}, "proxy": {pod2 + "/" + hexID(3)},
		"shop/cart/app": {pod1 + "/" + hexID(1)}, "app": {pod1 + "/" + hexID(1), pod2 + "/" + hexID(2)}, "builder": {"/docker/" + hexID(4)},
	} {
		found, _ := MatchNamed(paths, q, r.Name)
		if fmt.Sprint(found) != fmt.Sprint(want) {
			t.Errorf("MatchNamed(%q) = %v, want %v", q, found, want)
		}
		if found, _ := Match(paths, q); len(found) != 0 {
			t.Errorf("Match(%q) without names found %v", q, found)
		}
	}
	if _, near := MatchNamed(paths, "cartt", r.Name); len(near) == 0 || near[0] != pod1 {
		t.Errorf("MatchNamed(cartt): close matches %v, want %s first", near, pod1)
	}
}
