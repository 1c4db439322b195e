package fleet

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestRunAllBoundsAndErrors(t *testing.T) {
	var running, most, ran atomic.Int64
	block := make(chan struct{})
	var tasks []func() error
	for range 20 {
		tasks = append(tasks, func() error {
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			<-block
			running.Add(-1)
			ran.Add(1)
			return nil
		})
	}
	done := make(chan error)
	go func() { done <- runAll(context.Background(), 3, tasks) }()
	close(block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 20 || most.Load() > 3 || most.Load() < 1 {
		t.Errorf("ran %d of 20, at most %d at once (want ≤ 3)", ran.Load(), most.Load())
	}

	// The first error is returned and the tasks not yet started are skipped.
	boom := errors.New("boom")
	ran.Store(0)
	tasks = tasks[:0]
	tasks = append(tasks, func() error { return boom })
	for range 50 {
		tasks = append(tasks, func() error { ran.Add(1); return nil })
	}
	if err := runAll(context.Background(), 1, tasks); !errors.Is(err, boom) {
		t.Errorf("runAll = %v, want boom", err)
	}
	if ran.Load() > 1 {
		t.Errorf("%d tasks ran after the error", ran.Load())
	}

	// A cancelled context is the error when no task failed.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runAll(ctx, 2, tasks[1:]); !errors.Is(err, context.Canceled) {
		t.Errorf("runAll on a cancelled context = %v", err)
	}
}
