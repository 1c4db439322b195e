package leaktrace

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkProbeCost times a tight malloc/free loop
// (testdata/programs/malloc_loop.c) without probes and with leaks --ebpf's
// probes sampling it at 512 KiB, and reports the wall time per allocation
// call (a malloc or a free) of each and the difference. Root only.
//
//	go test -run '^$' -bench ProbeCost -benchtime 1x ./internal/leaktrace/
func BenchmarkProbeCost(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		b.Skip("gcc not installed")
	}
	bin := filepath.Join(b.TempDir(), "malloc_loop")
	src, _ := filepath.Abs("../../testdata/programs/malloc_loop.c")
	if out, err := exec.Command("gcc", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = in.Close(); _ = cmd.Wait() }()
	out := bufio.NewScanner(stdout)
	loop := func(pairs int) float64 {
		if _, err := fmt.Fprintf(in, "run %d\n", pairs); err != nil {
			b.Fatal(err)
		}
		var ns float64
		if !out.Scan() {
			b.Fatal("malloc_loop ended")
		}
		if _, err := fmt.Sscanf(out.Text(), "ns_per_call=%g", &ns); err != nil {
			b.Fatalf("malloc_loop said %q", out.Text())
		}
		return ns
	}
	loop(200000) // warm up the heap
	for b.Loop() {
		plain := min(loop(1000000), loop(1000000))
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan struct{})
		done := make(chan error, 1)
		var est Estimate
		go func() {
			_, err := Run(ctx, Options{PID: cmd.Process.Pid, Duration: 5 * time.Minute,
				Estimate: func(e Estimate) error { est = e; return nil },
				Started:  func() { close(started) }})
			done <- err
		}()
		select {
		case <-started:
		case err := <-done:
			b.Fatal(err)
		}
		probed := min(loop(20000), loop(20000))
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(plain, "ns/call-plain")
		b.ReportMetric(probed, "ns/call-probed")
		b.ReportMetric(probed-plain, "ns/call-added")
		b.ReportMetric(float64(est.ProbeHit.Nanoseconds()), "ns/hit-calibrated")
		b.ReportMetric(float64(est.ProbeStep.Nanoseconds()), "ns/stepped-hit-calibrated")
		for _, f := range est.Functions {
			if f.Name == "malloc" || f.Name == "free" {
				b.ReportMetric(float64(f.PerCall.Nanoseconds()), "ns/"+f.Name+"-estimated")
			}
		}
	}
}
