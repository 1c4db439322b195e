package prometheus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// HeartbeatEvery is how often a long read from Prometheus says how far it
// got.
var HeartbeatEvery = 10 * time.Second

// Answering is a Prometheus client as a session sees it.
type Answering interface {
	URL() string
	Answers() int64
}

// Session bounds one read from Prometheus (what names it in messages):
// its context ends at the server's Deadline (--prometheus-deadline); every
// HeartbeatEvery a line given to line (stderr, through a bar that may
// draw on a terminal) says how many answers came so far; end stops both
// and turns an error caused by the deadline into one that names it (calls
// after the first only do that).
func (o PromServer) Session(parent context.Context, c Answering, line func(string), what string) (ctx context.Context, end func(error) error) {
	ctx, cancel := context.WithCancel(parent)
	if o.Deadline > 0 {
		ctx, cancel = context.WithTimeout(parent, o.Deadline)
	}
	start := time.Now()
	status := func() string {
		s := fmt.Sprintf("memdoctor: %s: %d answers from %s in %s", what, c.Answers(), c.URL(), time.Since(start).Round(time.Second))
		if o.Deadline > 0 {
			s += fmt.Sprintf(" (--prometheus-deadline %s)", o.Deadline)
		}
		return s
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				line(status())
			}
		}
	}()
	var once sync.Once
	return ctx, func(err error) error {
		once.Do(func() {
			close(stop)
			<-done
		})
		expired := errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil
		cancel()
		if err != nil && expired {
			return fmt.Errorf("%s: gave up at --prometheus-deadline %s with %d answers received (raise it, or narrow --match or --range): %w",
				what, o.Deadline, c.Answers(), err)
		}
		return err
	}
}
