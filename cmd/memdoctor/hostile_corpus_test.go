package main

import (
	"bytes"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"
)

// hostileRun is one command on one hostile input.
type hostileRun struct {
	input string
	args  []string
	json  bool
}

// corpusStats are the figures of a corpus run.
type corpusStats struct {
	inputs, runs, panics, hangs, nonzero int
	worstAlloc                           uint64
	worstInput                           string
}

// controlChars: what a terminal acts on. Text output may hold newlines and
// tabs, nothing else below 0x20, no DEL and no C1 controls.
var controlChars = regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]")

// runHostile runs one command in-process with a deadline and a recover,
// and checks what every command owes any input: no panic, no hang, a
// message with a failure, no terminal control in text output.
func runHostile(t *testing.T, st *corpusStats, r hostileRun) {
	t.Helper()
	type result struct {
		out, errOut string
		code        int
		panicked    any
		alloc       uint64
	}
	done := make(chan result, 1)
	go func() {
		var res result
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		defer func() {
			res.panicked = recover()
			runtime.ReadMemStats(&after)
			res.alloc = after.TotalAlloc - before.TotalAlloc
			done <- res
		}()
		var o, e bytes.Buffer
		res.code = run(r.args, &o, &e)
		res.out, res.errOut = o.String(), e.String()
	}()
	st.runs++
	select {
	case res := <-done:
		if res.panicked != nil {
			st.panics++
			t.Errorf("%s: %v panicked: %v", r.input, r.args, res.panicked)
			return
		}
		if res.alloc > st.worstAlloc {
			st.worstAlloc, st.worstInput = res.alloc, r.input+" "+strings.Join(r.args[:1], " ")
		}
		if res.code != 0 {
			st.nonzero++
			if strings.TrimSpace(res.errOut) == "" && strings.TrimSpace(res.out) == "" {
				t.Errorf("%s: %v exited %d without a word", r.input, r.args, res.code)
			}
		}
		text := res.errOut
		if !r.json {
			text += res.out
		}
		if m := controlChars.FindString(text); m != "" {
			i := strings.Index(text, m)
			t.Errorf("%s: %v printed the control character %q: ...%q...", r.input, r.args, m, text[max(0, i-40):min(len(text), i+40)])
		}
	case <-time.After(30 * time.Second):
		st.hangs++
		t.Errorf("%s: %v did not finish within 30 s", r.input, r.args)
	}
}

// TestHostileCorpus feeds testdata/hostile (and variants made from a real
// capture: every kernel file emptied, cut in half, replaced by random bytes,
// by NULs, by one 1 MiB line, or prefixed with terminal escapes) to every
// command that reads that kind of input, and serves each Prometheus answer
// of the corpus to diagnose --prometheus.
func TestHostileCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole corpus: not in -short")
	}
	// Its CPU goes to inputs of its own (about 20 s of it), and its only
	// clock is a 30 s deadline on runs of well under a second: it runs
	// among the waiting tests.
	t.Parallel()
	root := "../../testdata/hostile"
	base, err := txtar.ParseFile("../../testdata/captures/healthy-6.18-x86_64-hybrid.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st := &corpusStats{}
	byCat := map[string]int{}

	// Kernel files: the committed variants, then the generic ones.
	replace := func(target string, data []byte) []byte {
		a := &txtar.Archive{Comment: base.Comment}
		put := false
		for _, f := range base.Files {
			name := strings.TrimSuffix(f.Name, ".qtxt")
			if name == target {
				a.Files = append(a.Files, encodeEntry(target, data))
				put = true
				continue
			}
			if name == "memdoctor/end" && !put {
				a.Files = append(a.Files, encodeEntry(target, data))
			}
			a.Files = append(a.Files, f)
		}
		return txtar.Format(a)
	}
	checkCapture := func(label string, archive []byte) {
		p := filepath.Join(dir, fmt.Sprintf("c%d.txtar", st.inputs))
		if err := os.WriteFile(p, archive, 0o600); err != nil {
			t.Fatal(err)
		}
		st.inputs++
		runHostile(t, st, hostileRun{input: label, args: []string{"check", "--capture", p}})
		runHostile(t, st, hostileRun{input: label, args: []string{"check", "--json", "--capture", p}, json: true})
	}
	procDir := filepath.Join(root, "proc")
	err = filepath.WalkDir(procDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		target := filepath.ToSlash(filepath.Dir(rel))
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		byCat["kernel files (committed)"]++
		checkCapture(rel, replace(target, data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, f := range base.Files {
		name := strings.TrimSuffix(f.Name, ".qtxt")
		if strings.HasPrefix(name, "memdoctor/") || strings.HasPrefix(name, "proc/") && name[5] >= '0' && name[5] <= '9' && !strings.HasPrefix(name, "proc/14542/") {
			continue
		}
		targets = append(targets, name)
	}
	sort.Strings(targets)
	rnd := rand.New(rand.NewSource(1))
	for _, target := range targets {
		var orig []byte
		for _, f := range base.Files {
			if f.Name == target {
				orig = f.Data
			}
		}
		garbage := make([]byte, 4096)
		rnd.Read(garbage)
		for _, v := range []struct {
			name string
			data []byte
		}{
			{"empty", nil},
			{"half", orig[:len(orig)/2]},
			{"random", garbage},
			{"nul", bytes.Repeat([]byte{0}, 4096)},
			{"long-line", bytes.Repeat([]byte("9"), 1<<20)},
			{"escapes", append([]byte("\x1b]0;pwned\x07\x1b[2J"), orig...)},
		} {
			byCat["kernel files (generated)"]++
			checkCapture(target+"/"+v.name, replace(target, v.data))
		}
	}
	// Whole captures cut short anywhere.
	whole := txtar.Format(base)
	for i := 1; i <= 8; i++ {
		byCat["captures cut short"]++
		checkCapture(fmt.Sprintf("capture cut at %d/9", i), whole[:len(whole)*i/9])
	}

	// Recordings in OpenMetrics text, JSON probe results, lint inputs.
	files := func(sub string) []string {
		m, _ := filepath.Glob(filepath.Join(root, sub, "*"))
		return m
	}
	for _, p := range files("openmetrics") {
		byCat["OpenMetrics files"]++
		st.inputs++
		name := filepath.Base(p)
		runHostile(t, st, hostileRun{input: name, args: []string{"diagnose", "--from", p}})
		runHostile(t, st, hostileRun{input: name, args: []string{"diagnose", "--json", "--from", p}, json: true})
		runHostile(t, st, hostileRun{input: name, args: []string{"report", "--from", p, "-o", filepath.Join(dir, "r.html")}})
		runHostile(t, st, hostileRun{input: name, args: []string{"export", "--from", p, "-o", filepath.Join(dir, "e.prom")}})
		runHostile(t, st, hostileRun{input: name, args: []string{"compare", "--json", p, p}, json: true})
	}
	for _, p := range files("captures") {
		byCat["captures"]++
		st.inputs++
		name := filepath.Base(p)
		runHostile(t, st, hostileRun{input: name, args: []string{"check", "--capture", p}})
		runHostile(t, st, hostileRun{input: name, args: []string{"check", "--json", "--capture", p}, json: true})
		runHostile(t, st, hostileRun{input: name, args: []string{"report", "--from", p, "-o", filepath.Join(dir, "r.html")}})
	}
	for _, p := range files("json") {
		byCat["probe results"]++
		st.inputs++
		runHostile(t, st, hostileRun{input: filepath.Base(p), args: []string{"compare", p, p}})
	}
	// Prometheus answers: a server giving the same answer to every query.
	for _, p := range files("prometheus") {
		byCat["Prometheus answers"]++
		st.inputs++
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}))
		runHostile(t, st, hostileRun{input: filepath.Base(p), args: []string{"diagnose", "--prometheus", srv.URL, "--prometheus-retries", "0"}})
		runHostile(t, st, hostileRun{input: filepath.Base(p), args: []string{"diagnose", "--json", "--prometheus", srv.URL, "--prometheus-retries", "0"}, json: true})
		srv.Close()
	}
	for _, p := range files("lint") {
		byCat["lint inputs"]++
		st.inputs++
		for _, format := range []string{"", "java", "librdkafka", "python"} {
			args := []string{"lint", p}
			if format != "" {
				args = []string{"lint", "--format", format, p}
			}
			runHostile(t, st, hostileRun{input: filepath.Base(p), args: args})
		}
	}
	var cats []string
	for c, n := range byCat {
		cats = append(cats, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(cats)
	t.Logf("hostile corpus: %d inputs (%s), %d runs: %d panics, %d hangs, %d refused with a message; most allocated by one run: %d MiB (%s)",
		st.inputs, strings.Join(cats, ", "), st.runs, st.panics, st.hangs, st.nonzero, st.worstAlloc>>20, st.worstInput)
}

// encodeEntry writes a capture entry as the capture format does: verbatim
// when txtar can hold it, else quoted line by line under name.qtxt.
func encodeEntry(name string, data []byte) txtar.File {
	if (len(data) == 0 || data[len(data)-1] == '\n') && !bytes.HasPrefix(data, []byte("-- ")) && !bytes.Contains(data, []byte("\n-- ")) {
		return txtar.File{Name: name, Data: data}
	}
	var out []byte
	for _, p := range bytes.Split(data, []byte("\n")) {
		out = append(out, '>')
		out = append(out, p...)
		out = append(out, '\n')
	}
	return txtar.File{Name: name + ".qtxt", Data: out}
}
