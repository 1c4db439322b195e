package html

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	stdhtml "html"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleettest"
	"github.com/memdoctor/memdoctor/internal/model"
)

// fleetPageBudget is the most a fleet page's index may weigh at 10,000
// instances, every one with findings.
const fleetPageBudget = 5 << 20

func fleetPage(hosts []fleettest.HostFindings) *Page {
	p := &Page{Source: "http://127.0.0.1:9090", Generated: time.Unix(1.7e9, 0),
		Fleet: &Fleet{Scanned: len(hosts) + 500, Command: `memdoctor diagnose --prometheus http://127.0.0.1:9090 --match '{instance="INSTANCE"}'`}}
	for _, h := range hosts {
		p.Fleet.Hosts = append(p.Fleet.Hosts, FleetHost{Name: h.Instance, Findings: h.Findings})
	}
	return p
}

// A scan of 10,000 instances, every one with findings (hostile names among
// them), renders to a page under its budget: grouped by rule, ten
// instances named in each group and the others counted, one index line an
// instance, an anchor for every instance's findings of each rule made from
// the two, and one script, the one the page's policy allows by its hash.
func TestFleetPageAt10kHosts(t *testing.T) {
	hosts := fleettest.Findings(10000, 1)
	var buf bytes.Buffer
	t0 := time.Now()
	if err := Render(&buf, fleetPage(hosts)); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	t.Logf("10,000 instances, %d bytes, rendered in %v", buf.Len(), time.Since(t0).Round(time.Millisecond))
	if buf.Len() >= fleetPageBudget {
		t.Errorf("the page of 10,000 instances weighs %d bytes, past its budget of %d", buf.Len(), fleetPageBudget)
	}

	// Groups: one per rule that fired, with every instance that has it
	// counted, at most ten named, the rest counted.
	perRule := map[string]map[string]bool{}
	findings := 0
	for _, h := range hosts {
		for _, f := range h.Findings {
			if perRule[f.ID] == nil {
				perRule[f.ID] = map[string]bool{}
			}
			perRule[f.ID][h.Instance] = true
			findings++
		}
	}
	groupRe := regexp.MustCompile(`(?s)<div class="group" id="g-([a-z_]+)" data-rule="([a-z_]+)" data-hosts="(\d+)">(.*?)</div>`)
	groups := groupRe.FindAllStringSubmatch(page, -1)
	if len(groups) != len(perRule) {
		t.Fatalf("%d groups, want one for each of the %d rules that fired", len(groups), len(perRule))
	}
	for _, g := range groups {
		want := len(perRule[g[2]])
		if n, _ := strconv.Atoi(g[3]); n != want {
			t.Errorf("group %s counts %d instances, want %d", g[2], n, want)
		}
		rows := strings.Count(g[4], "<li ")
		rest := 0
		if m := regexp.MustCompile(`data-rest="(\d+)"`).FindStringSubmatch(g[4]); m != nil {
			rest, _ = strconv.Atoi(m[1])
		}
		if rows != min(10, want) || rows+rest != want {
			t.Errorf("group %s names %d instances and counts %d more, want 10 named of %d", g[2], rows, rest, want)
		}
	}

	// Anchors: every instance and every (instance, rule) once, as
	// FindingAnchor makes it, and no id twice on the page.
	ids := map[string]int{}
	for _, m := range regexp.MustCompile(` id="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		ids[m[1]]++
	}
	for id, n := range ids {
		if n > 1 {
			t.Errorf("id %q appears %d times", id, n)
		}
	}
	for _, h := range hosts {
		if ids[HostAnchor(h.Instance)] != 1 {
			t.Errorf("no index line for %q", h.Instance)
		}
		for id := range perRuleOf(h.Findings) {
			if ids[FindingAnchor(h.Instance, id)] != 1 {
				t.Errorf("no anchor for %q's %s", h.Instance, id)
			}
		}
	}
	if got := strings.Count(page, `<li id="h-`); got != len(hosts) {
		t.Errorf("%d index lines, want %d", got, len(hosts))
	}

	// Hostile names are text, never markup; the one script is the
	// page's own, allowed by its hash and nothing else.
	if strings.Count(page, "<script") != 1 || strings.Contains(page, "<img") || strings.Contains(page, "onmouseover='") {
		t.Error("a hostile instance name became markup")
	}
	m := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no script on the fleet page")
	}
	sum := sha256.Sum256([]byte(m[1]))
	csp := regexp.MustCompile(`http-equiv="Content-Security-Policy" content="([^"]*)"`).FindStringSubmatch(page)
	if want := "script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; csp == nil || !strings.HasSuffix(stdhtml.UnescapeString(csp[1]), "; "+want) {
		t.Errorf("the policy does not allow exactly the page's script (want %s)", want)
	}
	if csp == nil || !strings.HasPrefix(stdhtml.UnescapeString(csp[1]), "default-src 'none';") {
		t.Error("the page lost its default-src 'none'")
	}
	t.Logf("%d findings on %d instances in %d groups", findings, len(hosts), len(groups))
}

func perRuleOf(fs []model.Finding) map[string]bool {
	m := map[string]bool{}
	for _, f := range fs {
		m[f.ID] = true
	}
	return m
}

// Anchors are the same for the same instance and rule, valid fragments as
// they are, and different for different instances, even ones an escaping
// could merge.
func TestFindingAnchor(t *testing.T) {
	seen := map[string]string{}
	names := append([]string{"host-1:9100", "host_1:9100", "HOST-1:9100", ""}, fleettest.HostileNames...)
	for _, n := range names {
		a := FindingAnchor(n, "dying_cgroups")
		if a != FindingAnchor(n, "dying_cgroups") {
			t.Errorf("%q: anchor not stable", n)
		}
		if !regexp.MustCompile(`^f-[A-Za-z0-9._:~-]*--dying_cgroups$`).MatchString(a) {
			t.Errorf("%q: anchor %q is not a plain fragment", n, a)
		}
		if o, dup := seen[a]; dup {
			t.Errorf("%q and %q share the anchor %q", n, o, a)
		}
		seen[a] = n
	}
	if got := FindingAnchor("host-1:9100", "slab_unreclaimable_growth"); got != "f-host-1:9100--slab_unreclaimable_growth" {
		t.Errorf("anchor %q", got)
	}
}
