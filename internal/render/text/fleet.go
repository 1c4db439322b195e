package text

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// FleetText prints a fleet scan: the cost, the top instances with
// findings (worst first), the correlations, the suspects the rules
// cleared, errors and the server's warnings.
func FleetText(out io.Writer, res *fleet.Result, top int) error {
	w := bufio.NewWriter(out)
	pf := func(format string, a ...any) { _, _ = termsafe.Fprintf(w, format, a...) } // bufio keeps the first error for Flush
	pf("memdoctor diagnose: %d instances at %s, %s … %s\n", len(res.Instances), res.Source,
		res.From.UTC().Format("2006-01-02 15:04"), res.To.UTC().Format("2006-01-02 15:04"))
	pf("scan: %d aggregated queries; %d suspects fetched in full (step %gs); %d queries, %s received in %.1fs\n",
		res.Cost.ScanQueries, res.Suspects, res.StepSeconds, res.Cost.Queries, format.Bytes(res.Cost.WireBytes), res.Cost.DurationSeconds)
	if res.Kubelet != nil {
		pf("%s\n", res.Kubelet.Note)
	}
	affected := 0
	for _, in := range res.Instances {
		if len(in.Findings) > 0 {
			affected++
		}
	}
	pf("\nFINDINGS (%d instances)\n", affected)
	shown := 0
	for _, in := range res.Instances {
		if len(in.Findings) == 0 || shown >= top {
			continue
		}
		shown++
		var ids []string
		for _, f := range in.Findings {
			ids = append(ids, f.ID)
		}
		pf("  %-8s %s  %s  %s\n", in.Severity, in.Instance, in.Labels["release"], strings.Join(ids, ", "))
		for _, f := range in.Findings {
			pf("           %s\n", f.Summary)
		}
	}
	if affected > shown {
		pf("  … %d more (--top, or --json)\n", affected-shown)
	}
	var errs []string
	for _, in := range res.Instances {
		if in.Error != "" {
			errs = append(errs, in.Instance+": "+in.Error)
		}
	}
	if len(res.Correlation) > 0 {
		pf("\nCORRELATIONS\n")
		for _, c := range res.Correlation {
			pf("  %s\n", c.Summary)
		}
	}
	var quiet []string
	for _, in := range res.Instances {
		if in.Suspect && len(in.Findings) == 0 && in.Error == "" {
			quiet = append(quiet, in.Instance)
		}
	}
	if len(quiet) > 0 {
		sort.Strings(quiet)
		pf("\nsuspects the rules cleared: %d (%s)\n", len(quiet), listN(quiet, 8))
	}
	if len(errs) > 0 {
		pf("\nERRORS\n  %s\n", strings.Join(errs, "\n  "))
	}
	if len(res.Warnings) > 0 {
		pf("\nWARNINGS (partial data)\n  %s\n", strings.Join(res.Warnings, "\n  "))
	}
	return w.Flush()
}

func listN(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(", … %d more", len(xs)-n)
}
