package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleettest"
	"github.com/memdoctor/memdoctor/internal/render/html"
)

// The fleet page of 10,000 instances with findings opens in chromium
// without an error (its one script runs under the page's policy), the
// search box narrows the index to the instances whose name holds what is
// typed, a hostile name found by it is text, and a link to a finding of an
// instance folded in the index opens the index and shows that line.
func TestFleetPageInBrowser(t *testing.T) {
	skipShort(t)
	hosts := fleettest.Findings(10000, 2)
	p := &html.Page{Source: "http://127.0.0.1:9090", Generated: time.Now(), Fleet: &html.Fleet{Scanned: 10000}}
	for _, h := range hosts {
		p.Fleet.Hosts = append(p.Fleet.Hosts, html.FleetHost{Name: h.Instance, Findings: h.Findings})
	}
	var buf bytes.Buffer
	if err := html.Render(&buf, p); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "fleet.html")
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	d := b.page(t)
	t0 := time.Now()
	if errs := d.open(t, "file://"+out); len(errs) > 0 {
		t.Fatalf("the browser reports errors:\n%s", strings.Join(errs, "\n"))
	}
	t.Logf("%d bytes, loaded in %v", buf.Len(), time.Since(t0).Round(time.Millisecond))

	d.screenshot(t, filepath.Join(artifactsDir(t), "fleet-laptop.png"), 1280, false)

	// Search: one instance by a part of its name, every seventh by its
	// data centre (in capitals: the search ignores case), and a hostile
	// name.
	type state struct {
		Shown, Count int
		Text         string
		Open         bool
	}
	search := func(s string) state {
		var st state
		d.eval(t, `(() => { const q = document.getElementById("host-search"); q.value = `+jsString(s)+`;
			q.dispatchEvent(new Event("input"));
			const rows = [...document.querySelectorAll("#fleet-hosts > li")];
			return {Shown: rows.filter(r => !r.hidden && r.offsetParent !== null).length,
				Count: rows.filter(r => r.querySelector("b").textContent.toLowerCase().includes(`+jsString(strings.ToLower(s))+`)).length,
				Text: document.getElementById("host-count").textContent, Open: document.getElementById("fleet-all").open}; })()`, &st)
		return st
	}
	for _, q := range []string{"host-00123.", "DC3", "<script>"} {
		st := search(q)
		if st.Count == 0 || st.Shown != st.Count || !st.Open || !strings.HasPrefix(st.Text, itoa(st.Count)+" of 10000") {
			t.Errorf("search %q: %d lines shown, %d hold it, count says %q, index open %v", q, st.Shown, st.Count, st.Text, st.Open)
		}
	}
	var injected bool
	d.eval(t, `typeof window.alert !== "function" || document.querySelectorAll("img").length > 0`, &injected)
	if injected {
		t.Error("a hostile name became markup")
	}
	if st := search(""); st.Text != "" || st.Shown != 10000 {
		t.Errorf("an empty search shows %d of 10000 lines (%q)", st.Shown, st.Text)
	}

	// A link to a finding folded in the index: a fresh load of the page
	// at that anchor opens the index and puts the line on the screen.
	target := hosts[7777]
	anchor := html.FindingAnchor(target.Instance, target.Findings[0].ID)
	d.open(t, "about:blank") // else only the fragment changes: no load
	if errs := d.open(t, "file://"+out+"#"+anchor); len(errs) > 0 {
		t.Fatalf("the browser reports errors:\n%s", strings.Join(errs, "\n"))
	}
	var at struct {
		Open    bool
		Top     float64
		Height  float64
		Visible bool
	}
	d.eval(t, `(() => { const e = document.getElementById(`+jsString(anchor)+`), r = e.getBoundingClientRect();
		return {Open: document.getElementById("fleet-all").open, Top: r.top, Height: window.innerHeight, Visible: e.offsetParent !== null}; })()`, &at)
	if !at.Open || !at.Visible || at.Top < 0 || at.Top > at.Height {
		t.Errorf("#%s: index open %v, the finding visible %v at %g px of a %g px window", anchor, at.Open, at.Visible, at.Top, at.Height)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s) // a JSON string is a JavaScript string, < and > escaped
	return string(b)
}
