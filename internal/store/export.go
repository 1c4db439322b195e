package store

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/parquet"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// ExportOpenMetrics writes every selected series as OpenMetrics text with
// timestamps (seconds), accepted by `promtool tsdb create-blocks-from
// openmetrics`. The instance becomes an "instance" label (a series' own
// "instance" label is renamed "exported_instance"); an empty q.Instance
// exports every instance. # TYPE and # HELP come from sample.Describe:
// counters named *_total form the family without the suffix, untyped series
// are "unknown". A positive q.Step exports the last sample of each step.
// Samples are streamed: memory does not grow with the time range.
func (s *Store) ExportOpenMetrics(w io.Writer, q Query) error {
	sn, err := s.queryTx(q, true)
	if err != nil {
		return err
	}
	defer sn.close()
	for i := range sn.series {
		if err := checkExportName(sn.series[i].name, sn.series[i].labels); err != nil {
			return fmt.Errorf("store %s: export OpenMetrics: %w", s.path, err)
		}
	}
	names := map[string]bool{}
	for i := range sn.series {
		names[sn.series[i].name] = true
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	from, to := q.bounds()
	step := q.Step.Milliseconds()
	var family string
	var line []byte
	for i := range sn.series {
		sel := &sn.series[i]
		fam, typ := familyOf(sel.name, names)
		prefix := seriesPrefix(sel)
		wrote := false
		emit := func(t int64, v float64) {
			if !wrote && fam != family {
				// The family's header goes with its first sample, so a
				// family without samples in range leaves no empty header.
				family = fam
				_, _ = fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", fam, escapeHelp(sample.Describe(sel.name).Help), fam, typ)
			}
			wrote = true
			line = append(line[:0], prefix...)
			line = append(line, ' ')
			line = strconv.AppendFloat(line, v, 'g', -1, 64)
			line = append(line, ' ')
			line = appendTimestamp(line, t)
			line = append(line, '\n')
			bw.Write(line) //nolint:errcheck // the error sticks in bw, checked at Flush
		}
		if err := sn.exported(sel, from, to, step, emit); err != nil {
			return err
		}
	}
	bw.WriteString("# EOF\n") //nolint:errcheck // checked at Flush
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("store %s: export OpenMetrics: %w", s.path, err)
	}
	return nil
}

// exported calls fn for the samples of sel an export writes: every sample
// in [from, to], or with a step the last sample of each step.
func (sn *queryTx) exported(sel *selected, from, to, step int64, fn func(t int64, v float64)) error {
	if step <= 0 {
		return sn.samples(sel, from, to, fn)
	}
	b := newBuilder(sel, from, to, step, 0) // Points only: an export writes the last sample of each step
	if err := sn.samples(sel, from, to, b.add); err != nil {
		return err
	}
	if ser := b.finish(); ser != nil {
		for _, p := range ser.Points {
			fn(p.T, p.V)
		}
	}
	return nil
}

// familyOf returns the OpenMetrics family of a series name and its type.
// A counter not named *_total, or whose family name is also a series name
// of its own, is exported as unknown under its full name.
func familyOf(name string, names map[string]bool) (family, typ string) {
	switch sample.Describe(name).Kind {
	case sample.Counter:
		if f, ok := strings.CutSuffix(name, "_total"); ok && f != "" && !names[f] {
			return f, "counter"
		}
	case sample.Gauge:
		return name, "gauge"
	}
	return name, "unknown"
}

// seriesPrefix renders name{labels,instance="..."}.
func seriesPrefix(sel *selected) string {
	ls := make(sample.Labels, 0, len(sel.labels)+1)
	for _, l := range sel.labels {
		if l.Name == "instance" {
			l.Name = "exported_instance"
		}
		ls = append(ls, l)
	}
	ls = append(ls, sample.Label{Name: "instance", Value: sel.instance})
	return sel.name + ls.String()
}

// escapeHelp escapes a HELP text as OpenMetrics wants.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// checkExportName rejects names OpenMetrics (and promtool) cannot read.
func checkExportName(name string, ls sample.Labels) error {
	if !validName(name, true) {
		return fmt.Errorf("series %s: not a valid OpenMetrics metric name", name)
	}
	for _, l := range ls {
		if !validName(l.Name, false) || strings.HasPrefix(l.Name, "__") {
			return fmt.Errorf("series %s: label %q is not a valid OpenMetrics label name", name, l.Name)
		}
	}
	return nil
}

func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (i > 0 && c >= '0' && c <= '9') || (colon && c == ':')
		if !ok {
			return false
		}
	}
	return true
}

// appendTimestamp renders a millisecond timestamp in seconds such that a
// parser converting back with int64(seconds*1000) (Prometheus) or with
// rounding both get the same millisecond: ms/1000 exactly when the float
// arithmetic allows, else nudged up by a fraction of a millisecond.
func appendTimestamp(b []byte, ms int64) []byte {
	sec, frac := floorDiv(ms, 1000), ms-floorDiv(ms, 1000)*1000
	start := len(b)
	b = strconv.AppendInt(b, sec, 10)
	if frac == 0 && sec >= 0 {
		return b // whole seconds are exact
	}
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	base := len(b)
	for _, nudge := range []string{"", "0005", "001", "002", "004", "008", "016", "032"} {
		b = append(b[:base], nudge...)
		f, err := strconv.ParseFloat(string(b[start:]), 64)
		if err == nil && int64(f*1000) == ms && int64(math.Round(f*1000)) == ms {
			return b
		}
	}
	return b[:base]
}

// parquetColumns are the columns of a Parquet export, in the order
// ExportParquet sets them.
var parquetColumns = []parquet.Column{
	{Name: "instance", Type: parquet.String},
	{Name: "name", Type: parquet.String},
	{Name: "labels", Type: parquet.String},
	{Name: "timestamp_ms", Type: parquet.TimestampMillis},
	{Name: "value", Type: parquet.Double},
}

// ExportParquet writes every selected sample as rows (instance, name,
// labels, timestamp, value) of a Parquet file (internal/parquet): labels
// in the store's canonical text ({a="1",b="2"}), timestamp_ms as a
// millisecond UTC timestamp, strings dictionary-encoded, GZIP-compressed,
// in the order of ExportOpenMetrics. An empty q.Instance exports every
// instance; a positive q.Step exports the last sample of each step. Rows
// are written a row group at a time, so memory does not grow with the
// time range.
func (s *Store) ExportParquet(w io.Writer, q Query) error {
	sn, err := s.queryTx(q, true)
	if err != nil {
		return err
	}
	defer sn.close()
	pw, err := parquet.NewWriter(w, parquetColumns, parquet.Options{CreatedBy: "memdoctor"})
	if err != nil {
		return fmt.Errorf("store %s: export Parquet: %w", s.path, err)
	}
	from, to := q.bounds()
	step := q.Step.Milliseconds()
	var werr error
	for i := range sn.series {
		sel := &sn.series[i]
		emit := func(t int64, v float64) {
			pw.String(0, sel.instance)
			pw.String(1, sel.name)
			pw.String(2, sel.text)
			pw.Int64(3, t)
			pw.Double(4, v)
			if err := pw.EndRow(); err != nil && werr == nil {
				werr = err
			}
		}
		if err := sn.exported(sel, from, to, step, emit); err != nil {
			return err
		}
		if werr != nil {
			break
		}
	}
	if err := pw.Close(); err != nil && werr == nil {
		werr = err
	}
	if werr != nil {
		return fmt.Errorf("store %s: export Parquet: %w", s.path, werr)
	}
	return nil
}
