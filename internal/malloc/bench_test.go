package malloc

import (
	"context"
	"sort"
	"testing"
)

// The hold of `memdoctor malloc PID` and `trim --apply` on the hoard
// workload (8 threads × 64 MiB, 9 arenas): how long the calling thread was
// held, attach to detach, over b.N inspections. Run with -benchtime=100x
// for the figures of the README:
//
//	go test ./internal/malloc -run '^$' -bench Hold -benchtime=100x
func BenchmarkHoldInspect(b *testing.B) {
	w := startWorkload(b, false, nil, "hoard", "8", "64")
	ctx := context.Background()
	if _, err := Inspect(ctx, w.pid, Options{Method: MethodPtrace}); err != nil { // the canary runs once
		b.Fatal(err)
	}
	var held, calls, malloc []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := Inspect(ctx, w.pid, Options{Method: MethodPtrace})
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, rep.Pause.AttachedMs)
		calls = append(calls, rep.Pause.CallsMs)
		for _, c := range rep.Pause.Calls {
			if c.Function == "malloc_info" {
				malloc = append(malloc, c.Ms)
			}
		}
	}
	b.StopTimer()
	report(b, "held", held)
	report(b, "calls", calls)
	report(b, "malloc_info", malloc)
}

// BenchmarkHoldTrim: the hold of trim --apply beyond malloc_trim itself.
func BenchmarkHoldTrim(b *testing.B) {
	w := startWorkload(b, false, nil, "hoard", "8", "64")
	ctx := context.Background()
	var extra, trim []float64
	for i := 0; i < b.N; i++ {
		if i%10 == 0 {
			b.StopTimer()
			w.do("more") // hoard again, so that some trims have work to do
			b.StartTimer()
		}
		res, err := Trim(ctx, w.pid, Options{Method: MethodPtrace})
		if err != nil {
			b.Fatal(err)
		}
		extra = append(extra, res.Pause.AttachedMs-res.ElapsedMs)
		trim = append(trim, res.ElapsedMs)
	}
	report(b, "held-minus-trim", extra)
	report(b, "malloc_trim", trim)
}

func report(b *testing.B, name string, v []float64) {
	if len(v) == 0 {
		return
	}
	sort.Float64s(v)
	b.ReportMetric(v[len(v)/2], name+"-median-ms")
	// Nearest rank: the smallest value at least 99 % of the reads are
	// under or at (the 99th of 100; v[len(v)*99/100] was the maximum).
	b.ReportMetric(v[(len(v)*99+99)/100-1], name+"-p99-ms")
	b.ReportMetric(v[len(v)-1], name+"-max-ms")
}

// BenchmarkHoldInspectNative: the hold of `memdoctor malloc PID` on a
// process whose malloc jemalloc or tcmalloc serves (retain.c freeing 128
// MiB of 192 in whole pages), over b.N reads of the allocator's own
// figures. For the figures of docs/runtimes/allocators.md:
//
//	go test ./internal/malloc -run '^$' -bench HoldInspectNative -benchtime=100x
func BenchmarkHoldInspectNative(b *testing.B) {
	for _, c := range []struct{ name, lib string }{
		{"jemalloc", "libjemalloc.so.2"},
		{"tcmalloc", "libtcmalloc_minimal.so.4"},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := startRetain(b, nativeLib(b, c.lib), false, 192, "block")
			ctx := context.Background()
			if _, err := Inspect(ctx, p.pid, Options{}); err != nil { // the canary runs once
				b.Fatal(err)
			}
			var held, calls []float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rep, err := Inspect(ctx, p.pid, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Native == nil || rep.Native.Allocator != c.name {
					b.Fatalf("read %+v, want %s's figures", rep.Native, c.name)
				}
				held = append(held, rep.Pause.AttachedMs)
				calls = append(calls, rep.Pause.CallsMs)
			}
			b.StopTimer()
			report(b, "held", held)
			report(b, "calls", calls)
		})
	}
}
