package treat

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A wrong method or timeout is refused before anything is done; gdb, the
// old name, is read as ptrace and said so.
func TestRequestChecked(t *testing.T) {
	t.Parallel()
	for _, r := range []Request{{Method: "xyz", Timeout: time.Second}, {Method: "auto"}, {Method: "ptrace", Timeout: -time.Second}} {
		if err := r.Check(); err == nil {
			t.Errorf("%+v: accepted", r)
		}
	}
	var said []string
	r := Request{Method: "gdb", Timeout: time.Second, Warn: func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }}
	if err := r.Check(); err != nil || len(said) != 0 {
		t.Fatalf("Check(gdb) = %v, said %q: want it accepted, silently", err, said)
	}
	opt, err := r.options(true)
	if err != nil || opt.Method != "ptrace" || len(said) != 1 || !strings.Contains(said[0], "--method ptrace") {
		t.Errorf("gdb: method %q, %v, said %q; want ptrace and one line saying so", opt.Method, err, said)
	}
}

// A process that is gone is an error, quickly: nothing waits on it.
func TestInspectGoneProcess(t *testing.T) {
	t.Parallel()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	_ = c.Process.Kill()
	_ = c.Wait()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, run := range []func() error{
		func() error {
			_, err := Inspect(ctx, Request{PID: pid, Method: "auto", Timeout: 5 * time.Second})
			return err
		},
		func() error {
			_, err := Estimate(ctx, Request{PID: pid, Method: "auto", Timeout: 5 * time.Second}, true)
			return err
		},
		func() error {
			_, err := Trim(ctx, Request{PID: pid, Method: "auto", Timeout: 5 * time.Second})
			return err
		},
	} {
		if err := run(); err == nil {
			t.Errorf("pid %d (exited): no error", pid)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v on a gone process", d)
	}
}
