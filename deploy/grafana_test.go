package deploy

// The Grafana dashboard (grafana/memdoctor.json) and its provisioning: its
// shape, its types against Grafana's own schema package, and (in
// grafana_prometheus_test.go) every query rendered against a real
// Prometheus scraping a real recorder.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/sample"
)

const dashboardFile = "grafana/memdoctor.json"

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashTarget struct {
	RefID      string `json:"refId"`
	Expr       string `json:"expr"`
	Instant    bool   `json:"instant"`
	Range      bool   `json:"range"`
	Format     string `json:"format"`
	Datasource *dsRef `json:"datasource"`
}

type gridPos struct{ X, Y, W, H int }

type dashPanel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Datasource  *dsRef         `json:"datasource"`
	GridPos     gridPos        `json:"gridPos"`
	Targets     []dashTarget   `json:"targets"`
	Panels      []dashPanel    `json:"panels"`
	Options     map[string]any `json:"options"`
	FieldConfig struct {
		Defaults map[string]any `json:"defaults"`
	} `json:"fieldConfig"`
}

type dashVar struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Query      any    `json:"query"`
	AllValue   string `json:"allValue"`
	IncludeAll bool   `json:"includeAll"`
	Datasource *dsRef `json:"datasource"`
}

type dashboard struct {
	UID           string      `json:"uid"`
	Title         string      `json:"title"`
	SchemaVersion int         `json:"schemaVersion"`
	Panels        []dashPanel `json:"panels"`
	Templating    struct {
		List []dashVar `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) (*dashboard, []byte) {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return &d, b
}

// panels lists the panels that query, rows' children included.
func (d *dashboard) panels() []dashPanel {
	var out []dashPanel
	for _, p := range d.Panels {
		if p.Type == "row" {
			out = append(out, p.Panels...)
			continue
		}
		out = append(out, p)
	}
	return out
}

func (d *dashboard) variable(name string) *dashVar {
	for i := range d.Templating.List {
		if d.Templating.List[i].Name == name {
			return &d.Templating.List[i]
		}
	}
	return nil
}

// varQuery is the PromQL of a query variable (Grafana keeps it as a
// string or as {query: ...}).
func (v *dashVar) varQuery() string {
	switch q := v.Query.(type) {
	case string:
		return q
	case map[string]any:
		s, _ := q["query"].(string)
		return s
	}
	return ""
}

// The dashboard's shape: a current schema, the four variables, panels of
// the kinds asked for on the chosen data source, laid out without
// overlap, the three views present and each container query narrowed to
// the chosen pods.
func TestGrafanaDashboard(t *testing.T) {
	d, _ := loadDashboard(t)
	if d.SchemaVersion < 39 {
		t.Errorf("schemaVersion %d: want 39 or more (Grafana 11+)", d.SchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: provisioning needs both", d.UID, d.Title)
	}
	if v := d.variable("datasource"); v == nil || v.Type != "datasource" || v.Query != "prometheus" {
		t.Errorf("variable datasource: %+v, want a datasource variable of type prometheus", v)
	}
	for _, name := range []string{"instance", "namespace", "pod"} {
		v := d.variable(name)
		if v == nil {
			t.Errorf("no variable %s", name)
			continue
		}
		if v.Type != "query" || v.Datasource == nil || v.Datasource.UID != "${datasource}" || !strings.HasPrefix(v.varQuery(), "label_values(") {
			t.Errorf("variable %s: %+v, want a label_values query on ${datasource}", name, v)
		}
		if !v.IncludeAll || v.AllValue != ".*" {
			t.Errorf("variable %s: want All, as .* (a cgroup without the label matches it)", name)
		}
	}
	allowed := []string{"timeseries", "table", "stat", "bargauge"}
	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	var exprs []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			if len(p.Panels) != 0 {
				t.Errorf("row %q: keep rows open (collapsed rows' panels are not laid out in the grid)", p.Title)
			}
		}
		if prev, ok := ids[p.ID]; ok || p.ID <= 0 {
			t.Errorf("panel %q: id %d not positive or already used by %q", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, g)
		}
	grid:
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if o, ok := taken[cell{x, y}]; ok {
					t.Errorf("panel %q overlaps %q at %d,%d", p.Title, o, x, y)
					break grid
				}
				taken[cell{x, y}] = p.Title
			}
		}
	}
	for _, p := range d.panels() {
		if !slices.Contains(allowed, p.Type) {
			t.Errorf("panel %q: type %q, want one of %v", p.Title, p.Type, allowed)
		}
		if p.Title == "" || p.Description == "" {
			t.Errorf("panel %d: want a title and a description that says what it shows", p.ID)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want ${datasource}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: query %+v without expr, or refId missing or used twice", p.Title, tg)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q query %s: datasource %+v, want ${datasource}", p.Title, tg.RefID, tg.Datasource)
			}
			if (p.Type == "table" || p.Type == "stat" || p.Type == "bargauge") != tg.Instant {
				t.Errorf("panel %q query %s: instant %v; tables, stats and bar gauges show the latest value, time series a range",
					p.Title, tg.RefID, tg.Instant)
			}
			if strings.Contains(tg.Expr, "memdoctor_cgroup_") && !strings.Contains(tg.Expr, `pod=~"$pod"`) {
				t.Errorf("panel %q query %s: a per-cgroup query not narrowed to the chosen pods: %s", p.Title, tg.RefID, tg.Expr)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	// The views the dashboard is for: the mechanisms, the node's memory
	// accounting, the containers' OOM-relevant memory.
	all := strings.Join(exprs, "\n")
	for _, name := range []string{"memdoctor_finding", "node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes",
		"node_memory_AnonPages_bytes", "node_memory_Active_file_bytes", "node_memory_SUnreclaim_bytes",
		"node_zoneinfo_min_pages", "node_zoneinfo_low_pages", "node_zoneinfo_high_pages",
		"memdoctor_cgroup_memory_unreclaimable_bytes", "memdoctor_cgroup_memory_oom_distance_bytes",
		"memdoctor_cgroup_memory_oom_eta_seconds", "memdoctor_cgroup_memory_limit_bytes",
		"memdoctor_cgroup_memory_working_set_bytes", "memdoctor_cgroup_owner_info"} {
		if !slices.Contains(metricNames(all), name) {
			t.Errorf("no panel shows %s", name)
		}
	}
}

// The dashboard type-checks against Grafana's own schema package
// (@grafana/schema, the TypeScript types Grafana generates from its
// dashboard and panel schemas) with tsc: the dashboard against Dashboard,
// each panel's options and field config against its panel type's Options
// and FieldConfig. A misspelt key, a value of the wrong type or outside an
// enumeration, or a required option left out fails.
func TestGrafanaDashboardSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("tsc reads Grafana's types: about 25 s of CPU")
	}
	d, raw := loadDashboard(t)
	const dir = "/opt/memdoctor-test/grafana-schema"
	tsc := filepath.Join(dir, "node_modules", ".bin", "tsc")
	types := filepath.Join(dir, "node_modules", "@grafana", "schema", "dist", "types")
	if _, err := os.Stat(filepath.Join(types, "index.d.ts")); err != nil {
		t.Skipf("Grafana's schema package is not installed in %s (scripts/install-test-deps.sh installs it with npm): %v", dir, err)
	}
	if _, err := os.Stat(tsc); err != nil {
		t.Skipf("tsc is not installed in %s (scripts/install-test-deps.sh): %v", dir, err)
	}
	var src strings.Builder
	fmt.Fprintf(&src, "import type { Dashboard } from %q;\n", filepath.Join(types, "index"))
	kinds := []string{"bargauge", "stat", "table", "timeseries"}
	for _, k := range kinds {
		cfg := filepath.Join(types, "raw", "composable", k, "panelcfg", "x", "types.gen")
		fmt.Fprintf(&src, "import type * as %s from %q;\n", k, cfg)
	}
	// JSON has no enumerations: a string enumeration's members are
	// accepted as the strings they stand for, everything else as typed.
	src.WriteString("type Json<T> = T extends string ? `${T}` : T extends number | boolean | null | undefined ? T :\n" +
		"  T extends Array<infer U> ? Array<Json<U>> : T extends object ? { [K in keyof T]: Json<T[K]> } : T;\n")
	// Grafana writes a query variable's "definition" (the query as its
	// editor shows it), which the schema does not declare: a dashboard
	// exported from Grafana keeps it.
	var whole map[string]any
	if err := json.Unmarshal(raw, &whole); err != nil {
		t.Fatal(err)
	}
	if tm, ok := whole["templating"].(map[string]any); ok {
		vars, _ := tm["list"].([]any)
		for _, v := range vars {
			if m, ok := v.(map[string]any); ok {
				delete(m, "definition")
			}
		}
	}
	compact, err := json.Marshal(whole)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&src, "export const dashboard: Json<Dashboard> = %s;\n", compact)
	checked := 0
	for _, p := range d.panels() {
		if !slices.Contains(kinds, p.Type) {
			t.Errorf("panel %q: type %q has no options type here", p.Title, p.Type)
			continue
		}
		opts, _ := json.Marshal(p.Options)
		fmt.Fprintf(&src, "export const options%d: Json<%s.Options> = %s;\n", p.ID, p.Type, opts)
		checked++
		// stat and bargauge have no custom field config of their own.
		if c, ok := p.FieldConfig.Defaults["custom"]; ok && (p.Type == "timeseries" || p.Type == "table") {
			b, _ := json.Marshal(c)
			fmt.Fprintf(&src, "export const custom%d: Json<%s.FieldConfig> = %s;\n", p.ID, p.Type, b)
		}
	}
	work := t.TempDir()
	file := filepath.Join(work, "dashboard.ts")
	if err := os.WriteFile(file, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tsc, "--noEmit", "--strict", "--target", "es2022", "--moduleResolution", "node", file).CombinedOutput()
	if err != nil {
		t.Fatalf("the dashboard does not type-check against @grafana/schema (line 8 is the dashboard, the lines after it each panel's options):\n%s", out)
	}
	if v, err := os.ReadFile(filepath.Join(dir, "node_modules", "@grafana", "schema", "package.json")); err == nil {
		var pkg struct{ Version string }
		_ = json.Unmarshal(v, &pkg)
		t.Logf("the dashboard and %d panels' options type-check against @grafana/schema %s", checked, pkg.Version)
	}
}

// The provisioning files Grafana reads: a file provider for the dashboard
// and a Prometheus data source whose scrape interval is the recorders'.
func TestGrafanaProvisioning(t *testing.T) {
	p := docs(t, "grafana/provisioning/dashboards/memdoctor.yaml")[0]
	if get(p, "apiVersion") != 1 {
		t.Errorf("dashboards: apiVersion %v, want 1", get(p, "apiVersion"))
	}
	prov := get(p, "providers", 0)
	if str(prov, "type") != "file" || !path.IsAbs(str(prov, "options", "path")) {
		t.Errorf("dashboard provider %v: want type file and an absolute options.path", prov)
	}
	ds := docs(t, "grafana/provisioning/datasources/prometheus.yaml")[0]
	if get(ds, "apiVersion") != 1 {
		t.Errorf("datasources: apiVersion %v, want 1", get(ds, "apiVersion"))
	}
	src := get(ds, "datasources", 0)
	if str(src, "type") != "prometheus" || str(src, "url") == "" || str(src, "access") != "proxy" {
		t.Errorf("data source %v: want type prometheus, a url, access proxy", src)
	}
	scrape := str(get(docs(t, "prometheus-scrape.yaml")[0], "scrape_configs", 0), "scrape_interval")
	if ti := str(src, "jsonData", "timeInterval"); ti != scrape {
		t.Errorf("data source timeInterval %q, the recorders are scraped every %q", ti, scrape)
	}
}

// metricNames returns the metric names a PromQL expression selects:
// identifiers outside strings, label matchers, grouping lists and ranges
// that are not functions, aggregations or keywords.
func metricNames(expr string) []string {
	s := regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).ReplaceAllString(expr, `""`)
	s = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(s, " ")
	s = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(s, " ")
	s = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`).ReplaceAllString(s, " ")
	keywords := []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"}
	var out []string
	ident := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	for _, loc := range ident.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && (isWordByte(s[loc[0]-1]) || s[loc[0]-1] == '.') {
			continue // the exponent or unit of a number
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") || slices.Contains(keywords, strings.ToLower(name)) {
			continue
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// seriesCatalog is what memdoctor says it produces: the names of the
// tables of docs/metrics.md (kept to the collectors by internal/collect's
// TestMetricsDocumented; * a wildcard), each also known to the exposition
// catalog of internal/sample.
type seriesCatalog []string

func loadSeriesCatalog(t *testing.T) seriesCatalog {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	var c seriesCatalog
	span := regexp.MustCompile("`([a-zA-Z_:*0-9]+)`")
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "|") {
			continue
		}
		for _, m := range span.FindAllStringSubmatch(cells[1], -1) {
			c = append(c, m[1])
		}
	}
	if len(c) < 20 {
		t.Fatalf("docs/metrics.md lists only %d names", len(c))
	}
	return c
}

// has says whether name is a documented series with an exposition entry.
func (c seriesCatalog) has(name string) bool {
	if strings.HasPrefix(sample.Describe(name).Help, "memdoctor series ") {
		return false // the generic text of a name the catalog does not know
	}
	for _, p := range c {
		if m, _ := path.Match(p, name); m || p == name {
			return true
		}
	}
	return false
}
