package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/model"
)

// TestCheckNamesDockerContainer: a Docker-style memory cgroup of the
// test's own (/docker/<id>, the cgroupfs driver's shape) with a 64 MiB
// limit and 56 MiB of anon in it, and Docker's state for that id in a
// directory given as the runtime root: check names the container by its
// Docker name in the CONTAINERS section, the owner info, the near-limit
// finding's summary (which names its python3 as the process the OOM
// killer would kill), and check --cgroup NAME finds it; the secret in the
// config's environment is printed nowhere. Without that state (the host's
// own, which has no such container) the name matches nothing. With
// --root (the host captured, then unpacked, with the state added) the
// name is found below the root; with --capture there is none, and no
// error.
func TestCheckNamesDockerContainer(t *testing.T) {
	root := v1Root(t)
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	liveCgroup(t, root, "docker/"+id)
	cg := "/docker/" + id
	name := fmt.Sprintf("memdoctor-web-%d", os.Getpid())
	const secret = "DB_PASSWORD=hunter2-never-printed"
	state := func(top string) {
		p := filepath.Join(top, "var/lib/docker/containers", id, "config.v2.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		cfg := `{"State":{"Running":true},"Config":{"Env":["` + secret + `"],"Labels":{"Name":"label"}},"Name":"/` + name + `"}`
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rt := t.TempDir()
	state(rt)

	stdout, stderr, code := runCLI(t, "check", "--json", "--runtime-root", rt)
	if code != 0 {
		t.Fatalf("check: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "hunter2") {
		t.Errorf("check printed the container's environment")
	}
	r := decodeReport(t, stdout)
	var row *model.CgroupUse
	for i := range r.Cgroups.Top {
		if r.Cgroups.Top[i].Cgroup == cg {
			row = &r.Cgroups.Top[i]
		}
	}
	if row == nil || row.Owner == nil || row.Owner.Name != name || row.Owner.Container != name || row.Owner.ContainerID != id || row.Owner.Runtime != "docker" {
		t.Fatalf("check: the container's row %+v (owner %+v), want it named %s", row, ownerOf(row), name)
	}
	var near *model.Finding
	for i, f := range r.Findings {
		if f.ID == "cgroup_near_limit" && f.Subject == "cgroup "+cg {
			near = &r.Findings[i]
		}
	}
	if near == nil || !strings.HasPrefix(near.Summary, name+": ") || !hasEvidence(near, "owner", name+" ("+cg+")") {
		t.Errorf("check: the near-limit finding %+v does not name %s", near, name)
	} else if !strings.Contains(near.Summary, "the OOM killer kills in it, most likely python3 (pid ") {
		// check reads processes: the container's only one is who the
		// OOM killer would kill.
		t.Errorf("check: the near-limit finding does not name the container's python3 as the OOM killer's choice: %s", near.Summary)
	}

	stdout, stderr, code = runCLI(t, "check", "--top", "5", "--runtime-root", rt)
	if code != 0 && code != 2 {
		t.Fatalf("check: exit %d: %s", code, stderr)
	}
	sec := stdout[strings.Index(stdout, "CONTAINERS"):]
	if !strings.Contains(stdout, "CONTAINERS") || !strings.Contains(sec, " "+name+" ("+cg+")\n") {
		t.Errorf("check: no CONTAINERS line names %s (%s):\n%s", name, cg, stdout)
	}

	start := time.Now()
	r = checkJSON(t, "--top", "0", "--runtime-root", rt, "--cgroup", name)
	t.Logf("check --cgroup %s: %v", name, time.Since(start))
	if r.Cgroup == nil || r.Cgroup.Cgroup != cg || r.Cgroup.Owner == nil || r.Cgroup.Owner.Container != name {
		t.Errorf("check --cgroup %s: %+v", name, r.Cgroup)
	}
	_, stderr, code = runCLI(t, "check", "--json", "--top", "0", "--cgroup", name)
	if code == 0 || !strings.Contains(stderr, "no memory cgroup has this path or name") {
		t.Errorf("check --cgroup %s without its runtime state: exit %d: %s", name, code, stderr)
	}

	// --root: the host captured, unpacked, the state added below it.
	archive := filepath.Join(t.TempDir(), "host.txtar")
	if _, stderr, code := runCLI(t, "capture", "--top", "5", "-o", archive); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, stderr)
	}
	fsys, prov, err := capture.LoadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Open("var/lib/docker"); err == nil {
		t.Errorf("the capture holds Docker's state")
	}
	unpacked := filepath.Join(t.TempDir(), "root")
	if err := capture.Unpack(fsys, prov, unpacked); err != nil {
		t.Fatal(err)
	}
	state(unpacked)
	r = checkJSON(t, "--top", "0", "--root", unpacked, "--cgroup", name)
	if r.Cgroup == nil || r.Cgroup.Cgroup != cg || r.Cgroup.Owner == nil || r.Cgroup.Owner.Name != name {
		t.Errorf("check --root --cgroup %s: %+v", name, r.Cgroup)
	}
	r = checkJSON(t, "--top", "5", "--capture", archive)
	for _, u := range r.Cgroups.Top {
		if u.Cgroup == cg && (u.Owner == nil || u.Owner.Container != "" || u.Owner.Name != "docker "+id[:12]) {
			t.Errorf("check --capture: the container's owner %+v, want its id only", u.Owner)
		}
	}
}

// v1Root is the v1 memory hierarchy's mount, for tests that write v1
// limit files and run python3.
func v1Root(t *testing.T) string {
	t.Helper()
	root, v2 := memoryHierarchy(t)
	if v2 {
		t.Skip("the test writes v1 limit files")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	return root
}

// liveCgroup makes the memory cgroup rel below root (and the parents it
// lacks, removed after it) with a 64 MiB limit and a process holding 56
// MiB of anon in it, killed when the test ends.
func liveCgroup(t *testing.T, root, rel string) {
	t.Helper()
	var made []string
	for d := filepath.Join(root, rel); d != root; d = filepath.Dir(d) {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			made = append(made, d)
		}
	}
	dir := filepath.Join(root, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Skipf("cannot make memory cgroups: %v", err)
	}
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec python3 -c 'import time
b = bytearray(56 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("ready", flush=True)
time.sleep(120)'`, dir))
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		for _, d := range made { // the deepest first
			for try := 0; try < 100; try++ {
				if err := os.Remove(d); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.Itoa(64<<20)), 0); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "ready" {
		t.Fatalf("workload did not start: %q %v", buf, err)
	}
}

// TestCheckNamesKubernetesContainer: a Kubernetes-style container cgroup
// of the test's own on the cgroupfs driver (/kubepods/burstable/pod<uid>/
// <id>), near its limit, and the kubelet's log directories for that pod
// in a runtime root: check names it namespace/pod/container (the owner
// info, the CONTAINERS line, the finding's summary) with kubectl remedies
// for that container; check --cgroup finds the pod by its name and the
// container by namespace/pod/container.
func TestCheckNamesKubernetesContainer(t *testing.T) {
	root := v1Root(t)
	b := make([]byte, 48)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	uid := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	cid := h[32:]
	podDir := "kubepods/burstable/pod" + uid
	liveCgroup(t, root, podDir+"/"+cid)
	ns, pod, ctr := "shop", fmt.Sprintf("cart-%d-x7k2p", os.Getpid()), "app"
	rt := t.TempDir()
	logs := filepath.Join(rt, "var/log/pods", ns+"_"+pod+"_"+uid, ctr)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "0.log"), []byte("started\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(rt, "var/log/containers"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("/var/log/pods", ns+"_"+pod+"_"+uid, ctr, "0.log"),
		filepath.Join(rt, "var/log/containers", pod+"_"+ns+"_"+ctr+"-"+cid+".log")); err != nil {
		t.Fatal(err)
	}
	cg := "/" + podDir + "/" + cid
	full := ns + "/" + pod + "/" + ctr

	r := checkJSON(t, "--runtime-root", rt)
	var owner *model.CgroupOwner
	for _, u := range r.Cgroups.Top {
		if u.Cgroup == cg {
			owner = u.Owner
		}
	}
	if owner == nil || owner.Name != full || owner.Namespace != ns || owner.Pod != pod || owner.Container != ctr || owner.PodUID != uid || owner.QoS != "burstable" {
		t.Fatalf("check: the container's owner %+v, want %s", owner, full)
	}
	var near *model.Finding
	for i, f := range r.Findings {
		if f.ID == "cgroup_near_limit" && f.Subject == "cgroup "+cg {
			near = &r.Findings[i]
		}
	}
	if near == nil || !strings.HasPrefix(near.Summary, full+": ") {
		t.Fatalf("check: the near-limit finding %+v does not name %s", near, full)
	}
	kubectl := false
	for _, rm := range near.Remedies {
		for _, c := range rm.Commands {
			kubectl = kubectl || strings.Contains(c, "kubectl set resources <kind>/<owner> -n "+ns+" -c "+ctr+" ")
		}
	}
	if !kubectl {
		t.Errorf("check: no kubectl remedy for %s: %+v", full, near.Remedies)
	}
	stdout, stderr, code := runCLI(t, "check", "--top", "5", "--runtime-root", rt)
	if code != 0 && code != 2 {
		t.Fatalf("check: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, " "+full+" ("+cg+")\n") {
		t.Errorf("check: no CONTAINERS line names %s:\n%s", full, stdout)
	}
	for q, want := range map[string]string{pod: "/" + podDir, ns + "/" + pod: "/" + podDir, full: cg} {
		r := checkJSON(t, "--top", "0", "--runtime-root", rt, "--cgroup", q)
		if r.Cgroup == nil || r.Cgroup.Cgroup != want {
			t.Errorf("check --cgroup %s: %+v, want %s", q, r.Cgroup, want)
		}
	}
}

func ownerOf(u *model.CgroupUse) *model.CgroupOwner {
	if u == nil {
		return nil
	}
	return u.Owner
}

func decodeReport(t *testing.T, s string) *model.Report {
	t.Helper()
	var r model.Report
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("check --json: %v\n%s", err, s)
	}
	return &r
}

func hasEvidence(f *model.Finding, name, text string) bool {
	for _, e := range f.Evidence {
		if e.Name == name && e.Text == text {
			return true
		}
	}
	return false
}
