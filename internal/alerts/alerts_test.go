package alerts

// The rules are checked and unit-tested with Debian's promtool: each alert
// fires on a series with the pathology and stays quiet on a healthy one.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/memdoctor/memdoctor/internal/model"
)

// caseSeries is one alert's input: a sick and a healthy instance.
type caseSeries struct {
	alert string
	// series: name{labels} → values, for "sick" and "ok" (the instance
	// label is added).
	sick, ok map[string]string
	// labels of the firing alert beyond instance, severity, memdoctor_rule.
	labels map[string]string
	// fast cases are sampled every minute for three hours (runtime
	// counters, rated over minutes); the others hourly for 16 days.
	fast bool
}

func repeat(block string, n int) string {
	return strings.TrimSpace(strings.Repeat(block+" ", n))
}

const hours = 16 * 24 // input length

func cases() []caseSeries {
	steady := fmt.Sprintf("200+0x%d", hours)
	return []caseSeries{
		{alert: "MemdoctorDyingCgroupsGrowing",
			// +500 an hour and never freed, against a count that climbs all
			// day and falls back every night (5.3 and later).
			sick:   map[string]string{`node_cgroups_cgroups{job="node",subsys_name="memory"}`: fmt.Sprintf("100+500x%d", hours)},
			ok:     map[string]string{`node_cgroups_cgroups{job="node",subsys_name="memory"}`: repeat("200+125x23", 17)},
			labels: map[string]string{"job": "node", "subsys_name": "memory"}},
		{alert: "MemdoctorDyingCgroupsGrowing", // memdoctor record's dying count
			sick:   map[string]string{`memdoctor_memcg_dying_cgroups{job="memdoctor"}`: fmt.Sprintf("0+10x%d", hours)},
			ok:     map[string]string{`memdoctor_memcg_dying_cgroups{job="memdoctor"}`: steady},
			labels: map[string]string{"job": "memdoctor"}},
		{alert: "MemdoctorSlabUnreclaimableGrowing",
			sick: map[string]string{`node_memory_SUnreclaim_bytes{job="node"}`: fmt.Sprintf("300000000+20000000x%d", hours),
				`node_memory_MemTotal_bytes{job="node"}`: fmt.Sprintf("68719476736+0x%d", hours)},
			ok: map[string]string{`node_memory_SUnreclaim_bytes{job="node"}`: repeat("300000000+1000000x11 311000000-1000000x11", 17),
				`node_memory_MemTotal_bytes{job="node"}`: fmt.Sprintf("68719476736+0x%d", hours)},
			labels: map[string]string{"job": "node"}},
		{alert: "MemdoctorWatermarkThrash",
			sick:   map[string]string{`node_vmstat_kswapd_low_wmark_hit_quickly{job="node"}`: fmt.Sprintf("0+10x%d", hours)},
			ok:     map[string]string{`node_vmstat_kswapd_low_wmark_hit_quickly{job="node"}`: fmt.Sprintf("0+1x%d", hours)},
			labels: map[string]string{"job": "node"}},
		{alert: "MemdoctorWatermarkThrash", // direct-reclaim stalls alone
			sick: map[string]string{`node_vmstat_allocstall_normal{job="node2"}`: fmt.Sprintf("0+1x%d", hours),
				`node_vmstat_allocstall_movable{job="node2"}`: fmt.Sprintf("0+0x%d", hours)},
			ok:     map[string]string{`node_vmstat_allocstall_normal{job="node2"}`: repeat("0+0x23 1+0x23", 9)},
			labels: map[string]string{"job": "node2"}},
		{alert: "MemdoctorGCTimeHigh",
			// 6 s of GC a minute is 10 %; 0.6 s is 1 %.
			sick:   map[string]string{`memdoctor_runtime_gc_seconds_total{job="memdoctor",runtime="jvm",target="pid/41"}`: "0+6x180"},
			ok:     map[string]string{`memdoctor_runtime_gc_seconds_total{job="memdoctor",runtime="jvm",target="pid/41"}`: "0+0.6x180"},
			labels: map[string]string{"job": "memdoctor", "runtime": "jvm", "target": "pid/41"}, fast: true},
		{alert: "MemdoctorInducedGC",
			sick:   map[string]string{`memdoctor_runtime_gc_induced_total{cause="explicit",job="memdoctor",runtime="dotnet",target="pid/7"}`: "0+1x180"},
			ok:     map[string]string{`memdoctor_runtime_gc_induced_total{cause="explicit",job="memdoctor",runtime="dotnet",target="pid/7"}`: "3+0x180"},
			labels: map[string]string{"cause": "explicit", "job": "memdoctor", "runtime": "dotnet", "target": "pid/7"}, fast: true},
		{alert: "MemdoctorMemoryAboveBaseline",
			// Daily peaks of 24 GB for 15 days, then 44 GB; the healthy host
			// keeps its daily cycle.
			sick: map[string]string{`node_memory_MemAvailable_bytes{job="base"}`: fmt.Sprintf("40000000000+0x%d 20000000000+0x%d", 15*24, hours-15*24-1),
				`node_memory_MemTotal_bytes{job="base"}`: fmt.Sprintf("64000000000+0x%d", hours)},
			ok: map[string]string{`node_memory_MemAvailable_bytes{job="base"}`: repeat("44000000000-500000000x11 38500000000+500000000x11", 17),
				`node_memory_MemTotal_bytes{job="base"}`: fmt.Sprintf("64000000000+0x%d", hours)},
			labels: map[string]string{"job": "base"}},
	}
}

func withInstance(series, inst string) string {
	i := strings.Index(series, "{")
	return series[:i+1] + `instance=` + strconv.Quote(inst) + `,` + series[i+1:]
}

// render expands an annotation as Prometheus does: text/template with
// $labels set and Prometheus' reReplaceAll.
func render(t *testing.T, tmpl string, labels map[string]string) string {
	t.Helper()
	tp, err := template.New("").Funcs(template.FuncMap{"reReplaceAll": func(pattern, repl, text string) string {
		return regexp.MustCompile(pattern).ReplaceAllString(text, repl)
	}}).Parse("{{$labels := .}}" + tmpl)
	if err != nil {
		t.Fatalf("%q: %v", tmpl, err)
	}
	var b strings.Builder
	if err := tp.Execute(&b, labels); err != nil {
		t.Fatalf("%q: %v", tmpl, err)
	}
	return b.String()
}

// yamlSingle is s as a YAML single-quoted scalar.
func yamlSingle(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// promtoolTests writes the promtool unit-test file for rules; suffix ends
// the sick instances' names.
func promtoolTests(t *testing.T, o Options, rulesFile, suffix string) []string {
	t.Helper()
	byName := map[string]Alert{}
	for _, a := range Alerts(o) {
		byName[a.Name] = a
	}
	// One file per sampling: the evaluation interval is per file.
	return []string{
		fmt.Sprintf("rule_files:\n  - %s\nevaluation_interval: 1h\ntests:\n%s", rulesFile, testGroup(t, byName, false, suffix)),
		fmt.Sprintf("rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n%s", rulesFile, testGroup(t, byName, true, suffix)),
	}
}

func testGroup(t *testing.T, byName map[string]Alert, fast bool, suffix string) string {
	t.Helper()
	var in, exp strings.Builder
	type expect struct{ labels []map[string]string }
	fired := map[string]*expect{}
	var order []string
	for i, c := range cases() {
		if c.fast != fast {
			continue
		}
		a, ok := byName[c.alert]
		if !ok {
			t.Fatalf("no alert %s", c.alert)
		}
		sick, healthy := fmt.Sprintf("sick-%d", i)+suffix, fmt.Sprintf("ok-%d", i)
		for s, v := range c.sick {
			fmt.Fprintf(&in, "      - series: %s\n        values: '%s'\n", yamlSingle(withInstance(s, sick)), v)
		}
		for s, v := range c.ok {
			fmt.Fprintf(&in, "      - series: %s\n        values: '%s'\n", yamlSingle(withInstance(s, healthy)), v)
		}
		ls := map[string]string{"instance": sick, "severity": a.Severity, "memdoctor_rule": a.Rule}
		for k, v := range c.labels {
			ls[k] = v
		}
		if fired[c.alert] == nil {
			fired[c.alert] = &expect{}
			order = append(order, c.alert)
		}
		fired[c.alert].labels = append(fired[c.alert].labels, ls)
	}
	interval, evalAt := "1h", fmt.Sprintf("%dh", hours-6)
	if fast {
		interval, evalAt = "1m", "150m"
	}
	for _, name := range order {
		a := byName[name]
		fmt.Fprintf(&exp, "      - eval_time: %s\n        alertname: %s\n        exp_alerts:\n", evalAt, name)
		for _, ls := range fired[name].labels {
			exp.WriteString("          - exp_labels:\n")
			for k, v := range ls {
				fmt.Fprintf(&exp, "              %s: %q\n", k, v)
			}
			fmt.Fprintf(&exp, "            exp_annotations:\n              summary: %q\n              runbook: %q\n", render(t, a.Summary, ls), render(t, Runbook(a), ls))
		}
	}
	return fmt.Sprintf("  - interval: %s\n    input_series:\n%s    alert_rule_test:\n%s", interval, in.String(), exp.String())
}

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	return p
}

func TestRulesPromtool(t *testing.T) {
	pt := promtool(t)
	for _, c := range []struct {
		name   string
		o      Options
		suffix string
	}{
		{"subquery baseline", Options{}, ""},
		{"static baselines", Options{Baselines: []Baseline{{Instance: "sick-7", Bytes: 24e9, Days: 14}, {Instance: "ok-7", Bytes: 25.5e9, Days: 14}}}, ""},
		{"with a selector", Options{Match: `{instance=~".+"}`}, ""},
		// Prometheus' own template engine writes the runbooks as render does
		{"hostile instance names", Options{}, hostileInstance},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // its own rules and tests, its own promtool
			dir := t.TempDir()
			rules := filepath.Join(dir, "memdoctor.yml")
			if err := os.WriteFile(rules, []byte(YAML(c.o)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(pt, "check", "rules", rules).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, YAML(c.o))
			}
			args := []string{"test", "rules"}
			for i, body := range promtoolTests(t, c.o, "memdoctor.yml", c.suffix) {
				tests := filepath.Join(dir, fmt.Sprintf("memdoctor_test%d.yml", i))
				if err := os.WriteFile(tests, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, tests)
			}
			out, err = exec.Command(pt, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool test rules: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "SUCCESS") {
				t.Fatalf("promtool test rules: %s", out)
			}
		})
	}
}

// TestEveryExpressibleRule: each alert names a memdoctor rule, and the
// rules PromQL can express all have one.
func TestEveryExpressibleRule(t *testing.T) {
	want := []string{"dying_cgroups", "slab_unreclaimable_growth", "watermark_thrash", "gc_time_high", "gc_induced", "memory_baseline_exceeded"}
	have := map[string]bool{}
	for _, a := range Alerts(Options{}) {
		have[a.Rule] = true
		if a.Summary == "" || a.Expr == "" {
			t.Errorf("%s: empty summary or expression", a.Name)
		}
	}
	for _, r := range want {
		if !have[r] {
			t.Errorf("no alert for %s", r)
		}
	}
}

// hostileInstance ends instance labels in the tests: whoever the targets'
// discovery lets name an instance writes shell and PromQL quoting into it.
const hostileInstance = ":9100'$(touch X)\"\\`touch Y`'\\''"

// TestRunbookQuotesInstance: the runbook of every alert that names the
// firing instance, expanded for an instance label with quotes, backslashes,
// command substitutions, a leading dash, unicode or control characters,
// is one command that sh -n accepts; run by sh it creates no file and
// gives memdoctor diagnose a --match whose PromQL string is exactly the
// label, or model.Unprintable for a label that cannot be printed.
func TestRunbookQuotesInstance(t *testing.T) {
	labels := []string{"db7:9100", "-x", "a b", "db7" + hostileInstance, `"\"`, "'", "é中🙂", "a\nrm -rf x", "a\x1b[2J", "a\u202eb", "a\xffb", "$HOME", "${UNSET}"}
	n := 0
	for _, a := range Alerts(Options{}) {
		if a.Runbook != "" {
			continue
		}
		n++
		for _, inst := range labels {
			cmd := render(t, Runbook(a), map[string]string{"instance": inst})
			if strings.ContainsAny(cmd, "\n\r\x1b") || !model.Printable(cmd) {
				t.Errorf("%s: the runbook for instance %q is not one printable line: %q", a.Name, inst, cmd)
				continue
			}
			if out, err := exec.Command("sh", "-n", "-c", cmd).CombinedOutput(); err != nil {
				t.Errorf("%s: sh -n rejects %q: %v: %s", a.Name, cmd, err, out)
				continue
			}
			dir := t.TempDir()
			c := exec.Command("sh", "-c", "set -u\nmemdoctor() { printf '%s\\0' \"$@\"; }\n"+cmd)
			c.Dir = dir
			c.Env = []string{"PATH=/usr/bin:/bin"}
			out, err := c.Output()
			if err != nil {
				t.Errorf("%s: %q: %v", a.Name, cmd, err)
				continue
			}
			if es, _ := os.ReadDir(dir); len(es) > 0 {
				t.Errorf("%s: the runbook for instance %q made %s", a.Name, inst, es[0].Name())
			}
			args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			want := inst
			if !model.Printable(inst) {
				want = model.Unprintable
			}
			if len(args) != 5 || args[0] != "diagnose" || args[3] != "--match" || !strings.HasPrefix(args[4], "{instance=") || !strings.HasSuffix(args[4], "}") {
				t.Errorf("%s: the runbook for instance %q runs memdoctor %q", a.Name, inst, args)
				continue
			}
			if got, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(args[4], "{instance="), "}")); err != nil || got != want {
				t.Errorf("%s: --match %s names instance %q (%v), want %q", a.Name, args[4], got, err, want)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alert has the default runbook")
	}
}
