package fleettest

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartVictoria runs Debian's victoria-metrics with its data in dir on a
// free loopback port, extra flags after the test's own, until the test
// ends; it returns the URL and what stops it sooner (to start it again on
// the same data with other flags). A test binary that dies takes it
// along. The test is skipped when victoria-metrics is not installed.
func StartVictoria(t testing.TB, dir string, extra ...string) (string, func()) {
	t.Helper()
	bin, err := exec.LookPath("victoria-metrics")
	if err != nil {
		t.Skip("victoria-metrics not installed (apt-get install victoria-metrics)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	logPath := filepath.Join(dir, "victoria.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-storageDataPath=" + filepath.Join(dir, "vmdata"), "-httpListenAddr=" + addr,
		"-retentionPeriod=100y", "-search.disableCache", "-loggerLevel=WARN"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(syscall.SIGINT) // flushes and releases its data directory
		done := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logf.Close()
	})
	t.Cleanup(stop)
	url := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(url + "/health")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, stop
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("victoria-metrics not ready after 60 s:\n%s", b)
		}
	}
}
