package html

import (
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
)

// Fleet is the index of a fleet scan's page: every instance with findings,
// grouped by mechanism (rule), the worst few of each group in words and
// the rest counted, and one compact line for every instance that a search
// box filters. Every finding has an anchor made from its instance and
// rule (FindingAnchor), so that a link to it survives another scan.
type Fleet struct {
	// Scanned is how many instances the scan read.
	Scanned int
	// Hosts are the instances with findings, worst first.
	Hosts []FleetHost
	// Top is how many instances each group shows in words (default 10).
	Top int
	// Command, when set, is the command that gives one instance's whole
	// diagnosis, with INSTANCE where its name goes (shell-quoted by the
	// caller's convention: the page shows it as text, never runs it).
	Command string
}

// FleetHost is one instance's findings.
type FleetHost struct {
	Name     string
	Findings []model.Finding
}

// fleetScript filters the index by instance name and opens the folded
// list a link points into. It is the page's only script, allowed by its
// hash in the Content-Security-Policy.
const fleetScript = `(function(){
var q=document.getElementById("host-search"),n=document.getElementById("host-count"),
all=document.getElementById("fleet-all"),rows=document.querySelectorAll("#fleet li[data-h],#fleet-hosts>li"),keys=[];
for(var i=0;i<rows.length;i++)keys.push((rows[i].getAttribute("data-h")||rows[i].firstChild.textContent).toLowerCase());
function filter(){var s=q.value.trim().toLowerCase(),k=0;
if(s&&all)all.open=true;
for(var i=0;i<rows.length;i++){var r=rows[i],m=!s||keys[i].indexOf(s)>=0;
r.hidden=!m;if(m&&r.parentNode===list)k++;}
n.textContent=s?k+" of "+list.children.length+" instances match":"";}
var list=document.getElementById("fleet-hosts");
function open(){var id;try{id=decodeURIComponent(location.hash.slice(1));}catch(e){return;}
var e=id&&document.getElementById(id);if(!e)return;
for(var p=e;p;p=p.parentNode){if(p.tagName==="DETAILS")p.open=true;if(p.hidden)p.hidden=false;}
e.scrollIntoView();}
q.addEventListener("input",filter);window.addEventListener("hashchange",open);open();})();`

// fleetScriptHash is computed on first use, not at init.
var fleetScriptHash = sync.OnceValue(func() string {
	h := sha256.Sum256([]byte(fleetScript))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
})

// FindingAnchor is the id of an instance's findings of one rule on a
// fleet page: "f-" + the instance's name, with every byte outside
// [A-Za-z0-9._:-] written as ~XX, + "--" + the rule. It is the same for the
// same instance and rule in any scan, is a valid URL fragment as it is,
// and no two instances share one (rule ids have no '-', so the last "--"
// splits it).
func FindingAnchor(instance, rule string) string {
	return "f-" + anchorName(instance) + "--" + anchorName(rule)
}

// HostAnchor is the id of an instance's line in a fleet page's index.
func HostAnchor(instance string) string { return "h-" + anchorName(instance) }

func anchorName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == ':', c == '-', c == '_':
			b.WriteByte(c)
		default:
			b.WriteString("~" + strings.ToUpper(strconv.FormatUint(uint64(c)|0x100, 16)[1:]))
		}
	}
	return b.String()
}

type fleetView struct {
	Scanned, Affected int
	Groups            []groupView
	Hosts             []hostView
	Command           string
	Script            template.JS
}

type groupView struct {
	Anchor, ID, Title string
	Counts            []sevCount
	Hosts             int
	Rows              []groupRow
	Rest              int
}

type groupRow struct {
	Host, Search, Severity, Subject, Summary string
	// Link goes to the finding: its article when the instance is drawn in
	// full on the page, else its line in the index.
	Link template.URL
	More int
}

type hostView struct {
	Anchor, Name, Severity string
	Findings               []chipView
}

type chipView struct {
	Anchor, ID, Severity, Subjects string
	Group                          template.URL
}

// fleetIndex builds the index; detailed maps an instance and rule to the
// anchor of its first finding drawn in full.
func fleetIndex(f *Fleet, detailed map[[2]string]string) *fleetView {
	top := f.Top
	if top <= 0 {
		top = 10
	}
	v := &fleetView{Scanned: f.Scanned, Affected: len(f.Hosts), Command: f.Command, Script: template.JS(fleetScript)}
	titles := map[string]string{}
	for _, r := range diagnose.Rules() {
		m := r.Meta()
		titles[m.ID] = m.Title
	}
	type member struct {
		host  int
		worst model.Finding
		n     int
		subj  []string
	}
	groups := map[string][]member{}
	for hi := range f.Hosts {
		h := &f.Hosts[hi]
		hv := hostView{Anchor: HostAnchor(h.Name), Name: h.Name}
		byRule := map[string]*member{}
		var rules []string
		for _, fd := range h.Findings {
			m := byRule[fd.ID]
			if m == nil {
				m = &member{host: hi, worst: fd}
				byRule[fd.ID] = m
				rules = append(rules, fd.ID)
			} else if fd.Severity.Rank() > m.worst.Severity.Rank() {
				m.worst = fd
			}
			m.n++
			m.subj = append(m.subj, subjectText(h.Name, fd.Subject))
			if hv.Severity == "" || fd.Severity.Rank() > model.Severity(hv.Severity).Rank() {
				hv.Severity = string(fd.Severity)
			}
		}
		for _, id := range rules {
			m := byRule[id]
			groups[id] = append(groups[id], *m)
			hv.Findings = append(hv.Findings, chipView{Anchor: FindingAnchor(h.Name, id), Group: template.URL("#g-" + anchorName(id)), ID: id,
				Severity: string(m.worst.Severity), Subjects: subjectsText(m.subj)})
		}
		v.Hosts = append(v.Hosts, hv)
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	worst := func(ms []member) int {
		w := 0
		for _, m := range ms {
			w = max(w, m.worst.Severity.Rank())
		}
		return w
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := groups[ids[i]], groups[ids[j]]
		if wa, wb := worst(a), worst(b); wa != wb {
			return wa > wb
		}
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return ids[i] < ids[j]
	})
	for _, id := range ids {
		ms := groups[id]
		// Worst finding first; the scan's rank of the instance after.
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].worst.Severity.Rank() > ms[j].worst.Severity.Rank() })
		g := groupView{Anchor: "g-" + anchorName(id), ID: id, Title: titles[id], Hosts: len(ms)}
		counts := map[model.Severity]int{}
		for k, m := range ms {
			counts[m.worst.Severity]++
			if k >= top {
				continue
			}
			h := f.Hosts[m.host].Name
			// Anchors are made of [A-Za-z0-9._:~-] only: a fragment as it is.
			link := template.URL("#" + detailed[[2]string{h, id}])
			if link == "#" {
				link = template.URL("#" + FindingAnchor(h, id))
			}
			g.Rows = append(g.Rows, groupRow{Host: h, Search: strings.ToLower(h), Severity: string(m.worst.Severity),
				Subject: subjectText(h, m.worst.Subject), Summary: m.worst.Summary, Link: link, More: m.n - 1})
		}
		g.Rest = max(0, len(ms)-top)
		for _, s := range []model.Severity{model.Critical, model.Warning, model.Info} {
			if counts[s] > 0 {
				g.Counts = append(g.Counts, sevCount{string(s), counts[s]})
			}
		}
		v.Groups = append(v.Groups, g)
	}
	return v
}

// subjectText is a finding's subject less the instance's name it starts
// with, and nothing for the host itself ("host-1:9100 host").
func subjectText(instance, subject string) string {
	s := strings.TrimPrefix(subject, instance+" ")
	if s == "host" {
		return ""
	}
	return s
}

// subjectsText names a group of subjects on one line: the first three and
// how many more.
func subjectsText(s []string) string {
	if len(s) == 1 && s[0] == "" {
		return ""
	}
	if len(s) <= 3 {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:3], ", ") + " and " + strconv.Itoa(len(s)-3) + " more"
}
