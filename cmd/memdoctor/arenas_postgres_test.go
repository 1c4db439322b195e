package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMallocArenasQuietOnPostgres: PostgreSQL backends are single-threaded
// processes whose large memory is the shared buffer pool (shmem, not
// anonymous): under pgbench, plain check judges none of them to have many
// malloc arenas, whatever the host's arena limit. PostgreSQL refuses to run
// as root, so the cluster runs as uid 65534 in the test's directory.
// It guards against a false alarm: it passes before and after the arena
// threshold follows the host's limit (a backend has one arena).
func TestMallocArenasQuietOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a PostgreSQL cluster under pgbench for ~15 s")
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(found) == 0 {
		t.Skip("PostgreSQL missing: apt-get install postgresql (scripts/install-test-deps.sh)")
	}
	bin := filepath.Dir(found[len(found)-1])
	binary(t)
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(root), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	as := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.SysProcAttr = nobody
		cmd.Dir = root
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=" + root}
		return cmd
	}
	if out, err := as("initdb", "-D", data, "-U", "pg", "--auth=trust").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := strconv.Itoa(freePort(t))
	pg := as("postgres", "-D", data, "-p", port, "-k", data, "-c", "listen_addresses=127.0.0.1",
		"-c", "shared_buffers=256MB", "-c", "max_connections=20",
		"-c", "logging_collector=on", "-c", "log_directory=log")
	// Its log goes to the data directory, not the test's output.
	if err := pg.Start(); err != nil {
		t.Fatalf("postgres: %v", err)
	}
	t.Cleanup(func() { _ = pg.Process.Signal(syscall.SIGINT); _ = pg.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for as("pg_isready", "-h", "127.0.0.1", "-p", port).Run() != nil {
		if time.Now().After(deadline) {
			t.Fatal("postgres did not get ready")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := as("pgbench", "-h", "127.0.0.1", "-p", port, "-U", "pg", "-i", "-s", "10", "postgres").CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	bench := as("pgbench", "-h", "127.0.0.1", "-p", port, "-U", "pg", "-c", "8", "-j", "2", "-T", "15", "-S", "postgres")
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bench.Process.Kill(); _ = bench.Wait() })
	time.Sleep(5 * time.Second)

	// The postmaster and its backends: every process of uid 65534 named
	// postgres that is a child of the postmaster.
	pids := []string{strconv.Itoa(pg.Process.Pid)}
	out, err := exec.Command("pgrep", "-P", strconv.Itoa(pg.Process.Pid)).Output()
	if err != nil {
		t.Fatalf("pgrep: %v", err)
	}
	pids = append(pids, strings.Fields(string(out))...)
	if len(pids) < 8 {
		t.Fatalf("only %d postgres processes under pgbench: %v", len(pids), pids)
	}
	rep := runCheck(t, "--top", "50", "--pid", strings.Join(pids, ","))
	read := 0
	for _, pid := range pids {
		n, _ := strconv.Atoi(pid)
		p := processOf(rep, n)
		if p == nil || p.MallocArenas == nil {
			continue
		}
		read++
		who := fmt.Sprintf("(pid %d)", n)
		for _, f := range rep.Findings {
			if strings.Contains(f.Subject, who) && (f.ID == "malloc_arenas_many" || f.ID == "allocator_hoarding") {
				t.Errorf("%s on a PostgreSQL process %s: %s", f.ID, who, f.Summary)
			}
		}
		t.Logf("%s %s: ~%d arenas, %d threads, anon %d MiB, shmem %d MiB", p.Comm, who, *p.MallocArenas, p.Threads, p.AnonBytes>>20, p.ShmemBytes>>20)
	}
	if read < 8 {
		t.Errorf("only %d of the %d PostgreSQL processes were read with an arena estimate", read, len(pids))
	}
}
