package text

import (
	"fmt"

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
}
