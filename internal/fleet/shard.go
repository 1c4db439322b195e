package fleet

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/promql"
)

// sharder asks the scan's aggregated queries in parts of the fleet when
// the engine refuses one whole for a limit on what one query may touch
// (VictoriaMetrics' -search.maxUniqueTimeseries and
// -search.maxSamplesPerQuery, Prometheus' --query.max-samples, Thanos'
// and Mimir's series limits): the instances are listed once (the label
// values API) and the query is asked again for each half of them, with
// an instance matcher added to --match, each half again while it is
// refused, down to one instance. A query the engine does not answer in
// time (--prometheus-timeout, or the engine's own query timeout) is split
// the same way, at once rather than sent whole again: a part touches
// fewer series and takes less time. The aggregates are by instance, so
// the parts' answers are disjoint and are joined as they come.
type sharder struct {
	c        *prom.Client
	match    string
	from, to time.Time

	once  sync.Once
	insts []string
	err   error
}

func (s *sharder) instances(ctx context.Context) ([]string, error) {
	s.once.Do(func() {
		s.insts, s.err = s.c.LabelValues(ctx, "instance", promql.Selector("node_memory_MemTotal_bytes", s.match), s.from, s.to)
		sort.Strings(s.insts)
	})
	return s.insts, s.err
}

// each runs run(match), or, refused for a limit or not answered in time,
// run(narrower) for parts of the instances; run keeps what it read only
// when it returns nil. run's context marks its queries as splittable
// (prom.Splittable): a timeout comes back at once.
func (s *sharder) each(ctx context.Context, run func(ctx context.Context, match string) error) error {
	sctx := prom.Splittable(ctx)
	err := run(sctx, s.match)
	if err == nil || !splittable(err) {
		return err
	}
	insts, lerr := s.instances(ctx)
	if lerr != nil {
		return fmt.Errorf("%w; listing the instances to ask in parts: %w", err, lerr)
	}
	return s.split(sctx, run, insts, err)
}

// splittable reports whether a query that failed with err may pass for
// fewer instances.
func splittable(err error) bool { return prom.IsLimit(err) || prom.IsTimeout(err) }

func (s *sharder) split(ctx context.Context, run func(ctx context.Context, match string) error, insts []string, refused error) error {
	if len(insts) < 2 {
		if prom.IsTimeout(refused) {
			return fmt.Errorf("%w (not answered in time for one instance: raise --prometheus-timeout, or narrow --range)", refused)
		}
		return fmt.Errorf("%w (refused for one instance: raise the engine's limit, or narrow --match or --range)", refused)
	}
	s.c.Split()
	h := len(insts) / 2
	for _, part := range [][]string{insts[:h], insts[h:]} {
		err := run(ctx, withInstances(s.match, part))
		if err != nil && splittable(err) {
			err = s.split(ctx, run, part, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// withInstances is match with a matcher that keeps only insts.
func withInstances(match string, insts []string) string {
	alts := make([]string, len(insts))
	for i, in := range insts {
		alts[i] = regexp.QuoteMeta(in)
	}
	ms := promql.Matchers(match)
	if ms != "" {
		ms += ","
	}
	return "{" + ms + `instance=~"` + escape(strings.Join(alts, "|")) + `"}`
}
