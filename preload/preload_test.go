package preload

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The Makefile and the Go build use the same flags.
func TestMakefileFlagsAgree(t *testing.T) {
	b, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[1] == "?=" || f[1] == "+=") {
			switch f[0] {
			case "CFLAGS", "LDFLAGS", "LDLIBS":
				got[f[0]] = append(got[f[0]], f[2:]...)
			}
		}
	}
	want := map[string][]string{"CFLAGS": CFLAGS, "LDFLAGS": LDFLAGS, "LDLIBS": LDLIBS}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Makefile flags differ from embed.go (-go +Makefile):\n%s", d)
	}
}

func TestEmbeddedSources(t *testing.T) {
	files, key, err := sourceFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Makefile", "src/preload.c", "src/parse.c", "src/format.c", "src/preload.h"} {
		if _, ok := files[want]; !ok {
			t.Errorf("%s not embedded", want)
		}
	}
	// Every C file the Makefile builds is embedded, and no other.
	mk := string(files["Makefile"])
	for name := range files {
		if strings.HasSuffix(name, ".c") && !strings.Contains(mk, name) {
			t.Errorf("%s embedded but not in the Makefile's SRCS", name)
		}
	}
	if len(key) != 12 {
		t.Errorf("source key %q", key)
	}
}

func TestReadEvents(t *testing.T) {
	in := `{"event":"start","time":"2026-05-01T10:00:00.000Z","pid":7,"ppid":1,"version":1,"glibc":"2.36","rss":1773568,"config":{"trimIntervalMs":30000,"trimFreedBytes":0,"statsIntervalMs":60000,"requestPollMs":1000}}
{"event":"trim","time":"2026-05-01T10:00:30.001Z","pid":7,"trigger":"interval","elapsedMs":59.414,"rss":{"before":591970304,"after":116740096,"diff":475230208},"mallinfo2":{"arena":590123008,"ordblks":13030,"smblks":0,"hblks":0,"hblkhd":0,"fsmblks":0,"uordblks":69123200,"fordblks":520999808,"keepcost":3168},"arenas":10,"freedBytes":0,"statsMs":7.537}
{"event":"trim","time":"2026-05-01T10:00:31.000Z","pid":7,"trigger":"freed","rss":{"before":null,"after":null,"diff":null}}
{"event":"summary","time":"2026-05-01T10:01:00.000Z","pid":7,"rss":116768768,"trims":3}
{"event":"half a li`
	evs, err := ReadEvents(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4 (the unterminated line ignored)", len(evs))
	}
	if c := evs[0].Config; c == nil || c.TrimIntervalMs != 30000 || evs[0].Glibc != "2.36" || evs[0].RSS.Current != 1773568 {
		t.Errorf("start: %+v %+v", evs[0], c)
	}
	tr := evs[1]
	if tr.Trigger != "interval" || tr.RSS.Diff != 475230208 || tr.RSS.Before != 591970304 || tr.Arenas != 10 ||
		tr.Mallinfo2 == nil || tr.Mallinfo2.Fordblks != 520999808 || tr.ElapsedMs != 59.414 {
		t.Errorf("trim: %+v", tr)
	}
	if want := time.Date(2026, 5, 1, 10, 0, 30, 1e6, time.UTC); !tr.Time.Equal(want) {
		t.Errorf("time %v, want %v", tr.Time, want)
	}
	if evs[3].RSS.Current != 116768768 || evs[3].Trims != 3 {
		t.Errorf("summary: %+v", evs[3])
	}
	if _, err := ReadEvents(strings.NewReader("{\"event\":1}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad line: %v", err)
	}
}

// DecodeLine fills Event as json.Unmarshal does and says which of pid,
// elapsedMs and arenas the line holds: a trim of "0.000" ms is measured,
// "arenas":null (malloc_info failed) and a missing pid are not there.
func TestDecodeLine(t *testing.T) {
	tr, err := DecodeLine([]byte(`{"event":"trim","time":"2026-05-01T10:00:30.001Z","pid":7,"trigger":"freed","elapsedMs":0.000,"rss":{"before":591970304,"after":116740096,"diff":475230208},"mallinfo2":{"arena":590123008,"uordblks":69123200,"fordblks":520999808,"hblkhd":4096},"arenas":10,"freedBytes":5,"statsMs":7.537}`))
	if err != nil {
		t.Fatal(err)
	}
	if !tr.HasPID || tr.PID != 7 || !tr.HasElapsedMs || tr.ElapsedMs != 0 || !tr.HasArenas || tr.Arenas != 10 {
		t.Errorf("trim: pid %d %v, elapsedMs %v %v, arenas %d %v", tr.PID, tr.HasPID, tr.ElapsedMs, tr.HasElapsedMs, tr.Arenas, tr.HasArenas)
	}
	var ev Event
	if err := json.Unmarshal([]byte(`{"event":"trim","time":"2026-05-01T10:00:30.001Z","pid":7,"trigger":"freed","elapsedMs":0.000,"rss":{"before":591970304,"after":116740096,"diff":475230208},"mallinfo2":{"arena":590123008,"uordblks":69123200,"fordblks":520999808,"hblkhd":4096},"arenas":10,"freedBytes":5,"statsMs":7.537}`), &ev); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(ev, tr.Event); d != "" {
		t.Errorf("DecodeLine's Event differs from json.Unmarshal's (-Unmarshal +DecodeLine):\n%s", d)
	}
	su, err := DecodeLine([]byte(`{"event":"summary","time":"2026-05-01T10:01:00.000Z","rss":null,"mallinfo2":{"arena":1},"arenas":null,"trims":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if su.HasPID || su.HasElapsedMs || su.HasArenas || su.Trims != 3 || su.Mallinfo2 == nil || su.Mallinfo2.Arena != 1 {
		t.Errorf("summary: %+v", su)
	}
	if _, err := DecodeLine([]byte(`{"event":"summary","pid":"7"}`)); err == nil {
		t.Error(`"pid":"7" decoded`)
	}
}

// Newest reads the end of a file shared by a process (pid 7) and its
// forked child (pid 8), cut in the middle of a line at both ends.
func TestNewest(t *testing.T) {
	tail := []byte(`"arena":1},"arenas":2}
{"event":"trim","time":"2026-05-01T10:00:30.001Z","pid":7,"elapsedMs":1.250,"mallinfo2":{"arena":100},"arenas":2}
{"event":"summary","time":"2026-05-01T10:00:31.000Z","pid":8,"mallinfo2":{"arena":800},"arenas":3}
{"event":"trim","time":"2026-05-01T10:00:32.000Z","pid":7,"elapsedMs":4.000}
{"event":"summary","time":"2026-05-01T10:00:33.000Z","pid":7,"mallinfo2":{"arena":300},"arenas":null}
{"event":"summary","time":"2026-05-01T10:00:34.000Z","pid":7,"mallinfo2":{"ar`)
	su, tr := Newest(tail, 7)
	if su == nil || su.Mallinfo2.Arena != 300 || su.HasArenas {
		t.Errorf("pid 7 summary %+v, want arena 300 without arenas", su)
	}
	if tr == nil || tr.ElapsedMs != 1.25 || tr.Mallinfo2.Arena != 100 {
		t.Errorf("pid 7 trim %+v, want the one with mallinfo2 (1.25 ms)", tr)
	}
	su, tr = Newest(tail, 8)
	if su == nil || su.Mallinfo2.Arena != 800 || tr != nil {
		t.Errorf("pid 8: summary %+v trim %+v, want arena 800 and no trim", su, tr)
	}
	if su, tr := Newest([]byte("{\"event\":\"start\",\"pid\":9}\n"), 9); su != nil || tr != nil {
		t.Errorf("a start line: %+v %+v, want none", su, tr)
	}
}

func TestBuildWithoutCompiler(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CC", "")
	_, err := Build(context.Background(), BuildOptions{CacheDir: t.TempDir()})
	if !errors.Is(err, ErrNoCompiler) || !strings.Contains(err.Error(), "apt-get install gcc") {
		t.Fatalf("err = %v, want ErrNoCompiler with an install hint", err)
	}
	_, err = Build(context.Background(), BuildOptions{CacheDir: t.TempDir(), CC: "/nonexistent/cc -O1"})
	if !errors.Is(err, ErrNoCompiler) || !strings.Contains(err.Error(), "/nonexistent/cc") {
		t.Fatalf("err = %v, want ErrNoCompiler naming CC", err)
	}
}

// needCC skips without a C compiler.
func needCC(t *testing.T) string {
	t.Helper()
	for _, c := range []string{"cc", "gcc"} {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	t.Skip("no C compiler (apt-get install gcc)")
	return ""
}

func TestBuildCachesAndFallsBack(t *testing.T) {
	needCC(t)
	dir := t.TempDir()
	lib, err := Build(context.Background(), BuildOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(lib) != LibName || !strings.HasPrefix(lib, dir) {
		t.Fatalf("built %s", lib)
	}
	st, err := os.Stat(filepath.Dir(lib))
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("build directory mode %v (%v), want 0755 so other users can load it", st.Mode(), err)
	}
	again, err := Build(context.Background(), BuildOptions{CacheDir: dir})
	if err != nil || again != lib {
		t.Errorf("second build: %s, %v; want the cached %s", again, err, lib)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".build-*")); len(m) > 0 {
		t.Errorf("temporary build directories left: %v", m)
	}
	// No compiler now, but this source's build is cached.
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CC", "")
	cached, err := Build(context.Background(), BuildOptions{CacheDir: dir})
	if err != nil || cached != lib {
		t.Errorf("without a compiler: %s, %v; want the cached %s", cached, err, lib)
	}
}

// A real process with the library: info, trim and a bad action, through Request.
func TestRequestProtocol(t *testing.T) {
	cc := needCC(t)
	dir := t.TempDir()
	lib, err := Build(context.Background(), BuildOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "alloc_workload")
	if out, err := exec.Command(cc, "-O2", "-pthread", "-o", bin, "../testdata/programs/alloc_workload.c").CombinedOutput(); err != nil {
		t.Fatalf("building alloc_workload: %v\n%s", err, out)
	}
	stats := filepath.Join(dir, "stats.jsonl")
	cmd := exec.Command(bin, "hoard", "4", "32", "2")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "MEMDOCTOR_STATS="+stats)
	startReady(t, cmd)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := Request(ctx, stats, "info")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name `xml:"malloc"`
		Heaps   []struct {
			Nr int `xml:"nr,attr"`
		} `xml:"heap"`
	}
	if err := xml.Unmarshal(info.XML, &doc); err != nil {
		t.Fatalf("malloc_info XML: %v", err)
	}
	if info.Event.Event != "info" || info.Event.Arenas != len(doc.Heaps) || len(doc.Heaps) < 2 || info.Event.PID != cmd.Process.Pid {
		t.Errorf("info: %+v with %d heaps in the XML", info.Event, len(doc.Heaps))
	}

	trim, err := Request(ctx, stats, "trim")
	if err != nil {
		t.Fatal(err)
	}
	if trim.Event.Event != "trim" || trim.Event.Trigger != "request" || trim.Event.RSS.Diff <= 0 {
		t.Errorf("trim: %+v", trim.Event)
	}
	if _, err := Request(ctx, stats, "bogus"); err == nil {
		t.Error("action bogus accepted")
	}

	// Nobody answers for another path: the request is withdrawn.
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	other := filepath.Join(dir, "nobody.jsonl")
	if _, err := Request(short, other, "info"); !errors.Is(err, ErrNoAnswer) {
		t.Errorf("no process: %v, want ErrNoAnswer", err)
	}
	if _, err := os.Stat(other + ".request"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unanswered request left behind: %v", err)
	}
}

// startReady starts a workload, waits for its "ready" line and stops it
// when the test ends (closing its standard input first).
func startReady(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready ") {
		t.Fatalf("workload: %q, %v", line, err)
	}
}

// A packaged library is used as it is: no compiler needed, no cache
// written; a cache directory or compiler asked for, or a missing package
// file, means a build of our own.
func TestBuildPrefersPackagedLib(t *testing.T) {
	cc := needCC(t)
	dir := t.TempDir()
	own, err := Build(context.Background(), BuildOptions{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	pkgLib := filepath.Join(dir, "usr-lib", LibName)
	data, err := os.ReadFile(own)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(pkgLib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pkgLib, data, 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(old string) { PackagedLib = old }(PackagedLib)
	PackagedLib = pkgLib

	path := os.Getenv("PATH")
	t.Setenv("PATH", filepath.Join(dir, "no-such-bin")) // no compiler to be found
	t.Setenv("CC", "")
	got, err := Build(context.Background(), BuildOptions{})
	if err != nil || got != pkgLib {
		t.Fatalf("Build with a packaged library = %q, %v; want %q", got, err, pkgLib)
	}
	t.Setenv("PATH", path)
	other := filepath.Join(dir, "cache2")
	got, err = Build(context.Background(), BuildOptions{CacheDir: other})
	if err != nil || !strings.HasPrefix(got, other+string(os.PathSeparator)) {
		t.Errorf("Build with --cache-dir = %q, %v; want a build in %s", got, err, other)
	}
	PackagedLib = filepath.Join(dir, "missing", LibName)
	if _, err := Build(context.Background(), BuildOptions{CC: cc, CacheDir: filepath.Join(dir, "cache3")}); err != nil {
		t.Errorf("Build with the packaged library missing: %v", err)
	}
}
