package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/safeio"
	"github.com/memdoctor/memdoctor/internal/termsafe"

	"github.com/memdoctor/memdoctor/internal/compare"
	"github.com/memdoctor/memdoctor/internal/probe"
	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/source"
	"github.com/memdoctor/memdoctor/internal/store"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newCompareCmd) }

func newCompareCmd() *cobra.Command {
	var (
		pf         promFlags
		selA, selB string
		winA, winB string
		until      string
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "compare [A B | SRC --a-window … --b-window …]",
		Short: "Compare two groups of hosts, two recordings, two time windows or two probe results, with a verdict",
		Long: `compare turns an experiment into a verdict. The groups are any of:

  label selectors over Prometheus (--prometheus URL --a SEL --b SEL): each
    host's values over --range; a host is in a group when its
    node_uname_info or node_memory_MemTotal_bytes matches the selector, so
    '{release=~"5.0.*"}' selects by kernel;
  two recordings or other sources (compare A B), each as diagnose --from
    reads them;
  two time windows of one source (compare SRC --a-window FROM/TO
    --b-window FROM/TO);
  two probe results (compare before.json after.json), recognised by the
    "kind" of the JSON document.

For unreclaimable slab growth per day, memory-cgroup growth per day,
available memory and the recorded processes' USS it shows the values,
the difference of the medians (B − A) with a bootstrap 95% interval
(seeded: the same data gives the same interval) and a plain verdict. The
values are hosts; when a group is a single host, its days.`,
		Example: `  memdoctor compare --prometheus http://prom:9090 --a '{release=~"5.0.*"}' --b '{release=~"5.3.*"}' --range 7d
  memdoctor compare rack1.db rack2.db
  memdoctor compare host.db --a-window 2020-01-01/2020-01-08 --b-window 2020-01-08/2020-01-15 --json
  memdoctor compare before.json after.json`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res *compare.Result
			var err error
			switch {
			case pf.url != "":
				if len(args) > 0 || winA != "" {
					return errors.New("with --prometheus the groups are --a and --b selectors; give no files or windows")
				}
				if selA == "" || selB == "" {
					return errors.New("--prometheus needs --a and --b label selectors, e.g. --a '{rack=\"r1\"}' --b '{rack=\"r2\"}'")
				}
				res, err = comparePrometheus(cmd, &pf, selA, selB, until)
			case len(args) == 2 && isProbeResult(args[0]) && isProbeResult(args[1]):
				return compareProbes(cmd, args[0], args[1], asJSON)
			case len(args) == 2:
				res, err = compareSources(cmd, args[0], "", args[1], "")
			case len(args) == 1:
				if winA == "" || winB == "" {
					return errors.New("one source needs two windows: --a-window FROM/TO --b-window FROM/TO")
				}
				res, err = compareSources(cmd, args[0], winA, args[0], winB)
			default:
				return errors.New("give two groups: --prometheus URL --a SEL --b SEL, two sources, one source with --a-window and --b-window, or two probe results")
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			return compareText(cmd.OutOrStdout(), res)
		},
	}
	pf.register(cmd, true)
	cmd.Flags().StringVar(&selA, "a", "", "with --prometheus: label `SELECTOR` of group A (control)")
	cmd.Flags().StringVar(&selB, "b", "", "with --prometheus: label `SELECTOR` of group B (experiment)")
	cmd.Flags().StringVar(&winA, "a-window", "", "time window `FROM/TO` of group A in a single source")
	cmd.Flags().StringVar(&winB, "b-window", "", "time window `FROM/TO` of group B in a single source")
	cmd.Flags().StringVar(&until, "until", "", "with --prometheus: end of the range (RFC 3339, a date or -DURATION; default now)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return cmd
}

func comparePrometheus(cmd *cobra.Command, pf *promFlags, a, b, until string) (*compare.Result, error) {
	end, r, _, err := pf.window(until)
	if err != nil {
		return nil, err
	}
	for _, s := range []struct {
		flag string
		sel  *string
	}{{"--a", &a}, {"--b", &b}} {
		m, err := promql.ParseMatch(*s.sel)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", s.flag, *s.sel, err)
		}
		*s.sel = m
	}
	c, err := pf.client()
	if err != nil {
		return nil, err
	}
	ctx, endSession := pf.session(cmd, c, nil, "comparing the groups")
	va, vb, err := compare.PromGroups(ctx, c, a, b, pf.match, end, r)
	if err = endSession(err); err != nil {
		return nil, err
	}
	printWarnings(cmd.ErrOrStderr(), c.Warnings())
	return compare.Compare(a, b, "host", va, vb), nil
}

// parseWindow reads FROM/TO (each as --since reads it).
func parseWindow(s string, end time.Time) (from, to time.Time, err error) {
	f, t, ok := strings.Cut(s, "/")
	if !ok {
		return from, to, fmt.Errorf("window %q: want FROM/TO, e.g. 2020-01-01/2020-01-08", s)
	}
	if from, err = parseWhen(f, end); err != nil {
		return from, to, err
	}
	if to, err = parseWhen(t, end); err != nil {
		return from, to, err
	}
	if !to.After(from) {
		return from, to, fmt.Errorf("window %q ends before it starts", s)
	}
	return from, to, nil
}

// loadWindows reads every instance of a source (within win, when given),
// with what reading it left out, one line each.
func loadWindows(cmd *cobra.Command, path, win string) ([]*sample.Window, []string, error) {
	bar := newProgress(cmd.ErrOrStderr(), "reading "+path)
	st, cleanup, ist, err := source.OpenStore(path, source.IngestOptions{Progress: bar.update})
	bar.done()
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	for _, n := range ist.Notes {
		notes = append(notes, n.Source+": "+n.Message)
	}
	defer cleanup()
	insts, err := st.Instances()
	if err != nil {
		return nil, nil, err
	}
	var out []*sample.Window
	for _, inst := range insts {
		first, last, err := st.TimeRange(inst)
		if err != nil {
			return nil, nil, err
		}
		from, to := first, last
		if win != "" {
			if from, to, err = parseWindow(win, last); err != nil {
				return nil, nil, err
			}
		}
		ss, err := st.Select(store.Query{Instance: inst, Names: compare.WindowNames, From: from, To: to})
		if err != nil {
			return nil, nil, err
		}
		w := &sample.Window{Instance: inst, From: from, To: to}
		for _, s := range ss {
			w.Add(s)
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s holds no samples", path)
	}
	return out, notes, nil
}

func compareSources(cmd *cobra.Command, pa, wa, pb, wb string) (*compare.Result, error) {
	a, notesA, err := loadWindows(cmd, pa, wa)
	if err != nil {
		return nil, fmt.Errorf("group A: %w", err)
	}
	b, notesB, err := loadWindows(cmd, pb, wb)
	if pb == pa {
		notesB = nil // one source, two windows: its notes once
	}
	if err != nil {
		return nil, fmt.Errorf("group B: %w", err)
	}
	perDay := len(a) < 2 || len(b) < 2
	unit := "host"
	if perDay {
		unit = "day"
	}
	name := func(p, w string) string {
		if w != "" {
			return p + " " + w
		}
		return p
	}
	res := compare.Compare(name(pa, wa), name(pb, wb), unit, compare.FromWindows(a, perDay), compare.FromWindows(b, perDay))
	res.Notes = append(res.Notes, compare.NonFinite("A", a)...)
	res.Notes = append(res.Notes, compare.NonFinite("B", b)...)
	for _, n := range notesA {
		res.Notes = append(res.Notes, "group A: "+n)
	}
	for _, n := range notesB {
		res.Notes = append(res.Notes, "group B: "+n)
	}
	return res, nil
}

func compareText(out io.Writer, r *compare.Result) error {
	w := bufio.NewWriter(out)
	pf := func(format string, a ...any) { _, _ = termsafe.Fprintf(w, format, a...) } // bufio keeps the first error for Flush
	pf("memdoctor compare: A = %s\n                   B = %s\n", r.A, r.B)
	pf("values are %ss; difference of medians with a bootstrap 95%% interval\n\n", r.Unit)
	for _, row := range r.Rows {
		pf("%s\n", row.Title)
		pf("  A: median %-14s (%d %ss)\n", compare.Format(row.MedianA, row.Unit), len(row.A), r.Unit)
		pf("  B: median %-14s (%d %ss)\n", compare.Format(row.MedianB, row.Unit), len(row.B), r.Unit)
		pf("  → %s\n\n", row.Verdict)
	}
	if len(r.Rows) == 0 {
		pf("no metric is present in both groups\n")
	}
	for _, n := range r.Notes {
		pf("note: %s\n", n)
	}
	return w.Flush()
}

// isProbeResult reports whether path is a JSON document whose "kind" names
// a probe result.
func isProbeResult(path string) bool {
	f, err := safeio.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&head); err != nil {
		return false
	}
	return head.Kind == probe.Kind
}

// compareProbes compares two probe results (memory and latency
// percentiles side by side): the one place probe results are dispatched.
func compareProbes(cmd *cobra.Command, a, b string, asJSON bool) error {
	ra, err := probe.Load(a)
	if err != nil {
		return err
	}
	rb, err := probe.Load(b)
	if err != nil {
		return err
	}
	c := probe.Compare(ra, rb)
	if asJSON {
		return c.WriteJSON(cmd.OutOrStdout())
	}
	return c.WriteText(cmd.OutOrStdout())
}
