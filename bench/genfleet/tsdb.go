package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/memdoctor/memdoctor/internal/fleettest"
)

// writeTSDB writes the fleet into the Prometheus data directory dir as
// blocks of span each (aligned to multiples of span since the epoch),
// through the TSDB's own block writer: what promtool's backfill of the
// OpenMetrics files makes, without the text in between.
func writeTSDB(f *fleettest.Fleet, dir string, span time.Duration) (blocks int, err error) {
	ctx := context.Background()
	logger := promslog.NewNopLogger()
	var (
		w   *tsdb.BlockWriter
		app storage.Appender
		cur = -1
		// A block is written out while the next span is appended: one
		// flush at a time in the background.
		flushed  = make(chan error, 1)
		flushing bool
	)
	wait := func() error {
		if !flushing {
			return nil
		}
		flushing = false
		if err := <-flushed; err != nil {
			return err
		}
		blocks++
		return nil
	}
	flush := func() error {
		if w == nil {
			return nil
		}
		if err := wait(); err != nil {
			return err
		}
		bw, a := w, app
		w, flushing = nil, true
		go func() {
			err := a.Commit()
			if err == nil {
				_, err = bw.Flush(ctx)
			}
			if cerr := bw.Close(); err == nil {
				err = cerr
			}
			flushed <- err
		}()
		return nil
	}
	defer func() {
		if w != nil {
			_ = w.Close() // only after an error: flush closes it otherwise
		}
		if werr := wait(); err == nil {
			err = werr
		}
	}()
	lbls := make([][fleettest.Metrics]labels.Labels, len(f.Hosts))
	var b labels.ScratchBuilder
	err = f.Stream(span, func(c, host int, series []fleettest.Series) error {
		if c != cur {
			if err := flush(); err != nil {
				return err
			}
			// Twice the span, as promtool does: the head refuses samples
			// more than half its range before the newest committed one,
			// and every host starts again at the span's beginning.
			var err error
			if w, err = tsdb.NewBlockWriter(logger, dir, 2*span.Milliseconds()); err != nil {
				return err
			}
			app, cur = w.Appender(ctx), c
		}
		for m, s := range series {
			if lbls[host][m].IsEmpty() {
				b.Reset()
				b.Add(model.MetricNameLabel, s.Name)
				for _, l := range s.Labels {
					b.Add(l.Name, l.Value)
				}
				b.Sort()
				lbls[host][m] = b.Labels()
			}
			var ref storage.SeriesRef
			for j, t := range s.T {
				var err error
				if ref, err = app.Append(ref, lbls[host][m], t, s.V[j]); err != nil {
					return fmt.Errorf("%s %s at %d: %w", s.Name, lbls[host][m], t, err)
				}
			}
		}
		// Committed a host at a time: the head's pending samples stay few.
		if err := app.Commit(); err != nil {
			return err
		}
		app = w.Appender(ctx)
		return nil
	})
	if err != nil {
		return blocks, err
	}
	return blocks, flush() // the deferred wait counts the last block
}
