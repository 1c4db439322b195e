package text

import (
	"fmt"
	"strings"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// runtimes prints the language runtimes whose garbage collector was read.
func runtimes(p *printer, h *model.Host) {
	var rs []model.Runtime
	for _, r := range h.Runtimes {
		if r.Source != "maps" {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	p.heading("RUNTIMES (garbage collectors; rates over the last interval)")
	tw := tab(p)
	_, _ = termsafe.Fprintf(tw, "  \truntime\tgc time\tyoung/s\told/s\tinduced\tlive\tcommitted\t target\n")
	num := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return hb(int64(*v))
	}
	for _, r := range rs {
		gc, young, old, ind := "-", "-", "-", "-"
		if g := r.Recent; g != nil {
			if g.GCTimeShare != nil {
				gc = fmt.Sprintf("%.1f%%", 100**g.GCTimeShare)
			}
			young = fmt.Sprintf("%.1f", g.Per(g.Young))
			old = fmt.Sprintf("%.2f", g.Per(g.Old+g.Full))
			ind = fmt.Sprintf("%.0f", g.InducedTotal())
		}
		target := r.Target
		switch {
		case r.Comm != "" && r.Also != "":
			target += " (" + r.Comm + "; also " + r.Also + ")"
		case r.Comm != "":
			target += " (" + r.Comm + ")"
		case r.Also != "":
			target += " (also " + r.Also + ")"
		}
		_, _ = termsafe.Fprintf(tw, "  \t%s\t%s\t%s\t%s\t%s\t%s\t%s\t %s\n", r.Runtime, gc, young, old, ind,
			num(r.HeapLiveBytes), num(r.HeapCommittedBytes), target)
	}
	_ = tw.Flush()
	for _, r := range rs {
		if d := gcSettings(&r); d != "" {
			_, _ = termsafe.Fprintf(p.w, "  %s: %s\n", r.Target, d)
		}
		if pr := r.Process; pr != nil {
			_, _ = termsafe.Fprintf(p.w, "  %s: %s %s, runtime instance %s, command line: %s\n", r.Target, pr["os"], pr["arch"], pr["runtime_cookie"], pr["command_line"])
		}
	}
}

// gcSettings writes a runtime's GC settings in force ("Server GC,
// concurrent, 2 heaps, latency mode Interactive, heap hard limit 200.0
// MiB (from COMPlus_gcServer, app.runtimeconfig.json, events)").
func gcSettings(r *model.Runtime) string {
	s := r.GCSettings
	if len(s) == 0 && r.HeapLimitBytes == nil {
		return ""
	}
	var parts []string
	switch s["gc"] {
	case "server":
		parts = append(parts, "Server GC")
	case "workstation":
		parts = append(parts, "Workstation GC")
	}
	switch s["concurrent"] {
	case "true":
		parts = append(parts, "concurrent")
	case "false":
		parts = append(parts, "not concurrent")
	}
	for _, k := range []struct{ key, label string }{{"heaps", "heaps"}, {"latency_mode", "latency mode"},
		{"heap_hard_limit_percent", "heap hard limit %"}, {"gen0size", "gen0 size"}, {"dynamic_adaptation", "dynamic adaptation mode"}} {
		if v, ok := s[k.key]; ok {
			parts = append(parts, k.label+" "+v)
		}
	}
	if r.Runtime == "dotnet" && r.HeapLimitBytes != nil {
		parts = append(parts, "heap hard limit "+hb(int64(*r.HeapLimitBytes)))
	}
	if len(parts) == 0 {
		return ""
	}
	out := "GC settings: " + strings.Join(parts, ", ")
	if f := s["from"]; f != "" {
		out += " (from " + strings.ReplaceAll(f, ",", ", ") + ")"
	}
	return out
}
