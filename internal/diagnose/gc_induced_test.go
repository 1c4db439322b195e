package diagnose

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/model"
)

// gc_induced names the callers of GC.Collect() the port found, with their
// share of the induced collections; a name that cannot be shown as it is
// is left out, and without callers the source stays the generic one.
func TestGCInducedCallers(t *testing.T) {
	eval := func(callers map[string]float64) model.Finding {
		t.Helper()
		r := model.Runtime{Target: "pid/42", Runtime: "dotnet", Source: "eventpipe", PID: 42, Comm: "app",
			Induced: map[string]float64{"GC.Collect() gen2": 20}, InducedCallers: callers,
			Recent: &model.GCRates{Seconds: 3, Old: 20, Induced: map[string]float64{"GC.Collect() gen2": 20}}}
		fs := gcInduced{}.Eval(&Input{Host: &model.Host{Runtimes: []model.Runtime{r}}})
		if len(fs) != 1 {
			t.Fatalf("findings %+v", fs)
		}
		return fs[0]
	}
	f := eval(map[string]float64{"Acme.Cache.Flush": 12, "Python.Runtime.MethodBinder.Invoke": 3, "Evil\x1b[2J.Name": 5, "Long." + strings.Repeat("x", 600): 1})
	want := "induced by GC.Collect() called from Acme.Cache.Flush (12 of 20 induced collections); Python.Runtime.MethodBinder.Invoke (3 of 20 induced collections), pythonnet's bridge"
	if !strings.Contains(f.Summary, want) || strings.Contains(f.Summary, "Evil") || strings.Contains(f.Summary, "xxx") {
		t.Errorf("summary %q\nwant %q and neither unprintable nor overlong names", f.Summary, want)
	}
	var callers []string
	for _, e := range f.Evidence {
		if e.Name == "caller" {
			callers = append(callers, e.Text)
		}
	}
	if strings.Join(callers, ",") != "Acme.Cache.Flush,Python.Runtime.MethodBinder.Invoke" {
		t.Errorf("caller evidence %v", callers)
	}
	if len(f.Remedies) == 0 || !strings.Contains(f.Remedies[0].Title, "the GC.Collect() call in Acme.Cache.Flush") {
		t.Errorf("remedies %+v", f.Remedies)
	}
	// More collections by a caller than in the span (counted from the
	// triggers, not the starts): at most all of them.
	if f := eval(map[string]float64{"Acme.Cache.Flush": 25}); !strings.Contains(f.Summary, "Acme.Cache.Flush (20 of 20 induced collections)") {
		t.Errorf("summary %q", f.Summary)
	}
	// pythonnet's bridge alone: the remedy speaks of the Python code.
	if f := eval(map[string]float64{"Python.Runtime.MethodBinder.Invoke": 20}); !strings.Contains(f.Remedies[0].Title, "Python code") {
		t.Errorf("remedies %+v", f.Remedies)
	}
	if f := eval(nil); strings.Contains(f.Summary, "called from") || !strings.Contains(f.Summary, "in the program or a library") {
		t.Errorf("without callers: %q", f.Summary)
	}
}
