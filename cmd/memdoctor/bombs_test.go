package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Peak memory of memdoctor on any input stays under a fixed budget, and a
// bomb is refused (or read) within a bound that holds on a loaded machine.
const (
	bombRSSBudget = 200 << 20
	bombTimeLimit = 120 * time.Second
)

// bombLine is one sample of one series at one time: repeated, it is the
// duplicate-sample bomb (one sample, a gigabyte of text).
const bombLine = "node_memory_MemTotal_bytes 1 1700000000\n"

// gzipRepeat returns a gzip stream of unit repeated until about total
// bytes: one gzip member of 1 MiB of units, compressed at level 9, repeated
// (a reader sees one stream of total bytes; writing it costs one member's
// compression).
func gzipRepeat(t *testing.T, prefix, unit, suffix string, total int64) []byte {
	t.Helper()
	member := func(s []byte) []byte {
		var b bytes.Buffer
		zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(s); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	chunk := bytes.Repeat([]byte(unit), (1<<20)/len(unit))
	m := member(chunk)
	var out bytes.Buffer
	out.Write(member([]byte(prefix)))
	for n := int64(0); n+int64(len(chunk)) <= total; n += int64(len(chunk)) {
		out.Write(m)
	}
	out.Write(member([]byte(suffix)))
	return out.Bytes()
}

// runMeasured runs the binary and returns its output, exit code, wall time
// and peak resident memory (the kernel's maximum RSS of the child).
func runMeasured(t *testing.T, args ...string) (stdout, stderr string, code int, took time.Duration, peak int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*bombTimeLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	if cmd.ProcessState == nil {
		t.Fatalf("%v: %v", args, err)
	}
	code = cmd.ProcessState.ExitCode()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak = ru.Maxrss << 10 // KiB on Linux
	}
	return out.String(), errOut.String(), code, took, peak
}

// A 2 MB .om.gz of one series repeated at one time, 1 GiB decoded, took
// diagnose to 2.4 GB and 26-57 s: every repeat was held (12 bytes each)
// until the end. Repeats are now dropped as they stream and a gzip file
// expanding more than 100-fold is refused, so diagnose stays under
// bombRSSBudget; the same text uncompressed (256 MiB of it) is read, held
// as one sample, under the same budget.
func TestDuplicateSampleBombFile(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a gigabyte of text")
	}
	dir := t.TempDir()
	gz := filepath.Join(dir, "bomb.om.gz")
	if err := os.WriteFile(gz, gzipRepeat(t, "", bombLine, "", 1<<30), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(gz)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bomb: %.1f MB compressed, 1 GiB decoded", float64(st.Size())/1e6)
	plain := filepath.Join(dir, "bomb.om")
	f, err := os.Create(plain)
	if err != nil {
		t.Fatal(err)
	}
	chunk := strings.Repeat(bombLine, (1<<20)/len(bombLine))
	for range 256 {
		if _, err := io.WriteString(f, chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	_, errOut, code, took, peak := runMeasured(t, "diagnose", "--from", gz)
	t.Logf("gzip bomb: exit %d after %s, peak RSS %d MiB: %s", code, took.Round(time.Millisecond), peak>>20, strings.TrimSpace(errOut))
	if code == 0 || !strings.Contains(errOut, "expands more than 100-fold") || !strings.Contains(errOut, "decompress it first") {
		t.Errorf("gzip bomb: exit %d, want a refusal that says why and what to do: %q", code, errOut)
	}
	checkBudget(t, "gzip bomb", took, peak)

	out, errOut, code, took, peak := runMeasured(t, "diagnose", "--from", plain, "--json")
	t.Logf("plain 256 MiB of one sample: exit %d after %s, peak RSS %d MiB", code, took.Round(time.Millisecond), peak>>20)
	if code != 0 {
		t.Errorf("plain repeats: exit %d: %s", code, errOut)
	}
	// One sample held; the repeats are counted in a note.
	want := fmt.Sprintf("%d samples repeat a series at the same time", 256*((1<<20)/len(bombLine))-1)
	if !strings.Contains(out, want) {
		t.Errorf("the JSON does not say %q", want)
	}
	checkBudget(t, "plain repeats", took, peak)
}

func checkBudget(t *testing.T, what string, took time.Duration, peak int64) {
	t.Helper()
	if peak == 0 {
		t.Errorf("%s: no peak RSS measured", what)
	}
	if peak > bombRSSBudget {
		t.Errorf("%s: peak RSS %d MiB, budget %d MiB", what, peak>>20, bombRSSBudget>>20)
	}
	if took > bombTimeLimit {
		t.Errorf("%s: took %s, limit %s", what, took.Round(time.Millisecond), bombTimeLimit)
	}
}

// A Prometheus answering range queries with one series at one time
// repeated, 1 GiB decoded (gzip -9: about 1 MB on the wire, with
// Content-Encoding: gzip) or sent plainly without end, took diagnose
// --prometheus to 289 MiB here (512 MiB reported): each answer was read
// whole (up to 128 MiB) before decoding, and scan queries run two at a
// time. Answers are now decoded as they stream, repeats dropped, a gzip
// answer expanding more than 100-fold refused, and any answer decoding
// past 256 MiB refused, with messages naming the budget.
func TestDuplicateSampleBombPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("serves gigabyte answers")
	}
	const ts = "1700000000"
	head := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"h1"},"values":[`
	pair := `[` + ts + `,"1"],`
	tail := `[` + ts + `,"1"]]}]}}`
	gz := gzipRepeat(t, head, pair, tail, 1<<30)
	t.Logf("answer bomb: %.1f MB compressed, 1 GiB decoded", float64(len(gz))/1e6)
	chunk := []byte(strings.Repeat(pair, (1<<20)/len(pair)))
	for _, gzipped := range []bool{true, false} {
		name := map[bool]string{true: "gzip answer", false: "plain endless answer"}[gzipped]
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path != "/api/v1/query_range" {
				_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"h1"},"value":[%s,"8589934592"]}]}}`, ts)
				return
			}
			if gzipped {
				w.Header().Set("Content-Encoding", "gzip")
				_, _ = w.Write(gz)
				return
			}
			_, _ = io.WriteString(w, head)
			for range 4096 { // 4 GiB at most: the client hangs up long before
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}))
		_, errOut, code, took, peak := runMeasured(t, "diagnose", "--prometheus", srv.URL, "--range", "14d",
			"--until", "2023-11-14T22:13:20Z", "--prometheus-retries", "0")
		srv.Close()
		t.Logf("%s: exit %d after %s, peak RSS %d MiB: %s", name, code, took.Round(time.Millisecond), peak>>20, strings.TrimSpace(errOut))
		want := map[bool]string{true: "expands more than 100-fold from gzip", false: "decodes to more than 256 MiB"}[gzipped]
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, want the answer refused (%q): %q", name, code, want, errOut)
		}
		checkBudget(t, name, took, peak)
	}
}
