// Package deploy holds the Kubernetes manifests; its test checks them
// against what the recorder needs.
package deploy

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/safeio"
	"go.yaml.in/yaml/v3"
)

type doc = map[string]any

// docs parses every YAML document of a file.
func docs(t *testing.T, name string) []doc {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var out []doc
	for {
		var d doc
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d != nil {
			out = append(out, d)
		}
	}
}

// get walks keys (string) and list indexes (int); nil when absent.
func get(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(doc)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any, keys ...any) string { s, _ := get(v, keys...).(string); return s }
func list(v any, keys ...any) []any { l, _ := get(v, keys...).([]any); return l }

func find(t *testing.T, ds []doc, kind string) doc {
	t.Helper()
	for _, d := range ds {
		if d["kind"] == kind {
			return d
		}
	}
	t.Fatalf("no %s", kind)
	return nil
}

// The DaemonSet, its Service and the Namespace have what the API server
// and the recorder need.
func TestDaemonSet(t *testing.T) {
	ds := docs(t, "daemonset.yaml")
	for _, d := range ds {
		if str(d, "apiVersion") == "" || str(d, "kind") == "" || str(d, "metadata", "name") == "" {
			t.Errorf("document without apiVersion, kind or metadata.name: %v", d)
		}
		if d["kind"] != "Namespace" && str(d, "metadata", "namespace") != "memdoctor" {
			t.Errorf("%s %s not in the memdoctor namespace", d["kind"], str(d, "metadata", "name"))
		}
	}
	dset := find(t, ds, "DaemonSet")
	if str(dset, "apiVersion") != "apps/v1" {
		t.Errorf("DaemonSet apiVersion %q", str(dset, "apiVersion"))
	}
	spec := get(dset, "spec", "template", "spec")
	podLabels, _ := get(dset, "spec", "template", "metadata", "labels").(doc)
	sel, _ := get(dset, "spec", "selector", "matchLabels").(doc)
	if len(sel) == 0 {
		t.Error("DaemonSet without spec.selector.matchLabels")
	}
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("selector %s=%v does not match the pod template's labels %v", k, v, podLabels)
		}
	}
	if get(spec, "hostPID") != true {
		t.Error("hostPID must be true: the recorder reads every process of the node in /proc")
	}
	if get(spec, "hostNetwork") == true {
		t.Error("hostNetwork: the recorder needs no node network")
	}
	ctrs := list(spec, "containers")
	if len(ctrs) != 1 {
		t.Fatalf("%d containers, want the recorder alone", len(ctrs))
	}
	c := ctrs[0]
	if str(c, "image") == "" {
		t.Error("container without image")
	}
	var args []string
	for _, a := range list(c, "args") {
		args = append(args, a.(string))
	}
	if len(args) == 0 || args[0] != "record" {
		t.Errorf("args %v: want memdoctor record", args)
	}
	port := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--listen="); ok {
			port = v[strings.LastIndex(v, ":")+1:]
			if !strings.HasPrefix(v, ":") {
				t.Errorf("--listen=%s: a pod must listen on its own address (':PORT') to be scraped", v)
			}
		}
	}
	var metricsPort any
	for _, p := range list(c, "ports") {
		if get(p, "name") == "metrics" {
			metricsPort = get(p, "containerPort")
		}
	}
	if port == "" || metricsPort == nil || port != strings.TrimSpace(strings.Trim(yamlString(metricsPort), `"`)) {
		t.Errorf("--listen port %q and the container port named metrics (%v) differ", port, metricsPort)
	}
	for _, probe := range []string{"readinessProbe", "livenessProbe"} {
		if str(c, probe, "httpGet", "path") != "/healthz" || get(c, probe, "httpGet", "port") != "metrics" {
			t.Errorf("%s: want GET /healthz on the metrics port", probe)
		}
	}
	sc := get(c, "securityContext")
	if get(sc, "privileged") == true || get(sc, "allowPrivilegeEscalation") != false || get(sc, "readOnlyRootFilesystem") != true {
		t.Errorf("securityContext %v: want unprivileged, no privilege escalation, read-only root", sc)
	}
	caps := list(sc, "capabilities", "add")
	if !slices.Contains(list(sc, "capabilities", "drop"), any("ALL")) || !slices.Contains(caps, any("SYS_PTRACE")) {
		t.Errorf("capabilities %v: want ALL dropped and SYS_PTRACE (reading other users' smaps_rollup) added", get(sc, "capabilities"))
	}
	// Every volume mounted, every mount a volume; the store is the one
	// writable node path.
	vols := map[string]any{}
	for _, v := range list(spec, "volumes") {
		vols[str(v, "name")] = v
	}
	for _, m := range list(c, "volumeMounts") {
		v, ok := vols[str(m, "name")]
		if !ok {
			t.Errorf("mount %s of no volume", str(m, "name"))
			continue
		}
		if hp := str(v, "hostPath", "path"); hp != "" && get(m, "readOnly") != true && str(m, "mountPath") != "/var/lib/memdoctor" {
			t.Errorf("node path %s mounted writable at %s", hp, str(m, "mountPath"))
		}
		if p := str(m, "mountPath"); p == "/proc" || strings.HasPrefix(p, "/proc/") {
			t.Errorf("a volume over %s: runtimes refuse it; hostPID gives the node's /proc", p)
		}
	}
	db := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--db="); ok {
			db = v
		}
	}
	if db == "" || mountOf(c, path.Dir(db)) == nil {
		t.Errorf("--db=%s is not on a mounted volume (the root file system is read-only)", db)
	}
	// The Service points at the pods and their metrics port.
	svc := find(t, ds, "Service")
	ssel, _ := get(svc, "spec", "selector").(doc)
	for k, v := range ssel {
		if podLabels[k] != v {
			t.Errorf("Service selector %s=%v does not match the pods", k, v)
		}
	}
	if len(ssel) == 0 || str(svc, "spec", "ports", 0, "name") != "metrics" || str(svc, "spec", "ports", 0, "targetPort") != "metrics" {
		t.Errorf("Service: want a selector and a port named metrics to the pods' metrics port: %v", get(svc, "spec"))
	}
}

func yamlString(v any) string {
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}

// mountOf returns the volume mount under which p lies, nil if none.
func mountOf(c any, p string) any {
	var best any
	bestLen := -1
	for _, m := range list(c, "volumeMounts") {
		mp := str(m, "mountPath")
		if (p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > bestLen {
			best, bestLen = m, len(mp)
		}
	}
	return best
}

// recordingFS remembers every name opened.
type recordingFS struct {
	fs.FS
	mu    sync.Mutex
	names map[string]bool
}

func (r *recordingFS) note(name string) {
	r.mu.Lock()
	r.names[name] = true
	r.mu.Unlock()
}

func (r *recordingFS) Open(name string) (fs.File, error) { r.note(name); return r.FS.Open(name) }

func (r *recordingFS) ReadLink(name string) (string, error) {
	r.note(name)
	return fs.ReadLink(r.FS, name)
}

func (r *recordingFS) Lstat(name string) (fs.FileInfo, error) {
	r.note(name)
	return fs.Lstat(r.FS, name)
}

// procOnly is a root with only /proc and /sys, as in a FROM scratch image.
type procOnly struct{ fs.FS }

func (p procOnly) Open(name string) (fs.File, error) {
	if name != "." && !strings.HasPrefix(name, "proc/") && !strings.HasPrefix(name, "sys/") && name != "proc" && name != "sys" {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return p.FS.Open(name)
}

// The paths the collectors read on this host are the ones the pod gives
// them: /proc through hostPID, everything else through a read-only mount
// of the same node path at the same place.
func TestDaemonSetMountsWhatCollectorsRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: as another user the collectors skip what they may not read, and the list would be short")
	}
	rec := &recordingFS{FS: safeio.NewDirFS("/", safeio.ProcFile), names: map[string]bool{}}
	// The recorder's own options (internal/record), on the live host.
	if _, err := collect.Collect(procfs.NewFSFrom(rec, os.Getpagesize()), collect.Options{
		TopProcesses: 50, TopCgroups: 10, ArenaScan: true, Live: true, Runtimes: true}); err != nil {
		t.Fatal(err)
	}
	// What was read, as directories to provide: proc, sys/fs/cgroup, ...
	need := map[string]bool{}
	for n := range rec.names {
		parts := strings.Split(n, "/")
		switch {
		case n == procfs.GlibcVersionFile:
			// Only in captures.
		case parts[0] == "proc":
			need["/proc"] = true
		case parts[0] == "sys" && len(parts) >= 3:
			need["/"+path.Join(parts[:3]...)] = true
		case parts[0] == "tmp":
			// The recorder's own /tmp (JVMs of this mount namespace; the
			// node's are reached through /proc/PID/root/tmp): scratch
			// space of the pod, not the node's.
			need["/tmp"] = true
		case strings.HasSuffix(n, "/libc.so.6"):
			// The glibc version, from this root's libc: the image has
			// none (FROM scratch), and the node's is read through
			// /proc/1/root (below).
			need["libc"] = true
		default:
			need["/"+n] = true
		}
	}
	if _, err := os.ReadDir("/proc/1/root"); need["libc"] && err != nil {
		t.Logf("init's root is not readable here (%v): the glibc fallback through /proc/1/root is left to internal/procfs's tests", err)
		delete(need, "libc")
	}
	if need["libc"] {
		delete(need, "libc")
		want, _, err := procfs.NewFSFrom(rec, os.Getpagesize()).GlibcVersion()
		scratch := procfs.NewFSFrom(procOnly{rec.FS}, os.Getpagesize())
		got, _, err2 := scratch.GlibcVersion()
		if err != nil || err2 != nil || got != want {
			t.Errorf("glibc version in an image without libc: %q, %v; on the host %q, %v", got, err2, want, err)
		}
	}
	var needed []string
	for p := range need {
		needed = append(needed, p)
	}
	sort.Strings(needed)
	t.Logf("the collectors read below: %v", needed)

	ds := docs(t, "daemonset.yaml")
	spec := get(find(t, ds, "DaemonSet"), "spec", "template", "spec")
	c := list(spec, "containers")[0]
	vols := map[string]any{}
	for _, v := range list(spec, "volumes") {
		vols[str(v, "name")] = v
	}
	for _, p := range needed {
		if p == "/proc" {
			if get(spec, "hostPID") != true {
				t.Errorf("the collectors read /proc: the pod needs hostPID")
			}
			continue
		}
		if p == "/tmp" {
			if m := mountOf(c, p); m == nil || get(vols[str(m, "name")], "emptyDir") == nil {
				t.Errorf("/tmp: want an emptyDir (the root file system is read-only)")
			}
			continue
		}
		m := mountOf(c, p)
		if m == nil {
			t.Errorf("the collectors read %s, which no volume provides", p)
			continue
		}
		v := vols[str(m, "name")]
		if hp := str(v, "hostPath", "path"); hp != str(m, "mountPath") {
			t.Errorf("%s: mounted from node path %q at %s, not the same path", p, hp, str(m, "mountPath"))
		}
		if get(m, "readOnly") != true {
			t.Errorf("%s: the mount that provides it is writable", p)
		}
	}
	// And no node path is mounted that nothing reads (the store aside).
	for _, m := range list(c, "volumeMounts") {
		mp := str(m, "mountPath")
		if str(vols[str(m, "name")], "hostPath", "path") == "" || mp == "/var/lib/memdoctor" {
			continue
		}
		used := false
		for _, p := range needed {
			if p == mp || strings.HasPrefix(p, mp+"/") {
				used = true
			}
		}
		if !used {
			t.Errorf("node path %s is mounted but the collectors read nothing below it", mp)
		}
	}
}

// The ServiceMonitor selects the Service and scrapes its metrics port.
func TestServiceMonitor(t *testing.T) {
	sm := find(t, docs(t, "servicemonitor.yaml"), "ServiceMonitor")
	if str(sm, "apiVersion") != "monitoring.coreos.com/v1" {
		t.Errorf("apiVersion %q", str(sm, "apiVersion"))
	}
	svc := find(t, docs(t, "daemonset.yaml"), "Service")
	svcLabels, _ := get(svc, "metadata", "labels").(doc)
	sel, _ := get(sm, "spec", "selector", "matchLabels").(doc)
	if len(sel) == 0 {
		t.Error("ServiceMonitor without a selector")
	}
	for k, v := range sel {
		if svcLabels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%v; the Service has %v", k, v, svcLabels)
		}
	}
	if !slices.Contains(list(sm, "spec", "namespaceSelector", "matchNames"), get(svc, "metadata", "namespace")) {
		t.Error("ServiceMonitor does not look in the Service's namespace")
	}
	ep := get(sm, "spec", "endpoints", 0)
	if str(ep, "port") != str(svc, "spec", "ports", 0, "name") || str(ep, "path") != "/metrics" {
		t.Errorf("endpoint %v: want the Service's port by name and /metrics", ep)
	}
}

// The plain scrape config is one Prometheus accepts (promtool), keeping
// the pods the DaemonSet makes.
func TestPrometheusScrapeConfig(t *testing.T) {
	d := docs(t, "prometheus-scrape.yaml")[0]
	job := get(d, "scrape_configs", 0)
	if str(job, "job_name") == "" || str(job, "metrics_path") != "/metrics" {
		t.Errorf("job %v", job)
	}
	keep := get(job, "relabel_configs", 0)
	if str(keep, "action") != "keep" || str(keep, "regex") != "memdoctor;metrics" {
		t.Errorf("first relabeling %v: want keep memdoctor;metrics", keep)
	}
	podLabels, _ := get(find(t, docs(t, "daemonset.yaml"), "DaemonSet"), "spec", "template", "metadata", "labels").(doc)
	if podLabels["app.kubernetes.io/name"] != "memdoctor" {
		t.Errorf("the pods' app.kubernetes.io/name is %v, the scrape config keeps memdoctor", podLabels["app.kubernetes.io/name"])
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (scripts/install-test-deps.sh installs prometheus)")
	}
	cfg := filepath.Join(t.TempDir(), "prometheus.yml")
	b, _ := os.ReadFile("prometheus-scrape.yaml")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "config", "--syntax-only", cfg).CombinedOutput()
	if err != nil && strings.Contains(string(out), "field kubernetes_sd_configs not found") {
		// Debian builds Prometheus without Kubernetes service discovery.
		t.Skipf("this promtool cannot read kubernetes_sd_configs (built without Kubernetes discovery):\n%s", out)
	}
	if err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}
