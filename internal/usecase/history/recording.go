package history

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"sync"

	"github.com/memdoctor/memdoctor/internal/model"
)

// RecordingFindings diagnoses the recording in db for the recorder's
// /metrics (record --listen) as `memdoctor diagnose --from DB --instance I
// --json` does, in the recorder's own process. A child process (memdoctor
// diagnose) started the whole binary again in the recorder's memory
// cgroup: its start-up read the executable anew (8 MiB read-ahead windows:
// all of its 28.8 MiB) and its runtime came on top of its heap, the
// recorder's peak (49.2 MiB charged, against 41.0 in process;
// bench/record.sh, one run). Here the diagnosis' heap is the recorder's,
// under its soft memory limit, given back to the kernel after, and the
// code and tables it mapped are dropped again (record.Config.Lean). A
// panic is an evaluation that failed, not a recorder that stops; when ctx
// ends first (the recorder closes), the answer is dropped.
//
// The recorder's soft memory limit (28 MiB) is lifted while a diagnosis
// runs: a long recording's diagnosis holds more (205 MB for 30 days), and
// under the limit the collector would run without pause, at up to half
// the CPUs, for the whole evaluation. The limit is set back after, and
// the heap given back with it.
func RecordingFindings(db string) func(ctx context.Context, instance string) ([]model.Finding, error) {
	type answer struct {
		list []model.Finding
		err  error
	}
	var one sync.Mutex // one evaluation at a time owns the limit
	return func(ctx context.Context, instance string) ([]model.Finding, error) {
		done := make(chan answer, 1)
		go func() {
			var a answer
			one.Lock()
			prev := debug.SetMemoryLimit(math.MaxInt64)
			defer func() {
				debug.SetMemoryLimit(prev)
				debug.FreeOSMemory()
				one.Unlock()
				if p := recover(); p != nil {
					a = answer{err: fmt.Errorf("the diagnosis failed: %v", p)}
				}
				done <- a
			}()
			s, err := Open(db, instance, false, nil)
			if err != nil {
				a.err = err
				return
			}
			defer s.Close()
			out, err := Diagnose(s, "", "")
			if err != nil {
				a.err = err
				return
			}
			a.list = out.Findings
		}()
		select {
		case a := <-done:
			return a.list, a.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
