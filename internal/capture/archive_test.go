package capture

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/tools/txtar"
)

// faultFS fails Open of the paths in fail with the given errors. It has only
// an Open method, so fs.ReadFile, fs.ReadDir and fs.Stat go through it.
type faultFS struct {
	fsys fs.FS
	fail map[string]error
}

func (f faultFS) Open(name string) (fs.File, error) {
	if err, ok := f.fail[name]; ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f.fsys.Open(name)
}

// makeTree creates files below dir; a name ending in "/" is an empty
// directory.
func makeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	secretCmdline = "/usr/bin/app\x00--password=hunter2\x00--verbose\x00"
	titleCmdline  = "chrome --type=renderer --token=abc123"
	secretEnv     = "SECRET=s3cr3t\x00PATH=/bin\x00"
)

// hostTree is a small fake host.
var hostTree = map[string]string{
	"proc/meminfo":                       "MemTotal:       16314980 kB\nMemFree:         1234 kB\n",
	"proc/cmdline":                       "BOOT_IMAGE=/vmlinuz root=/dev/sda1 hugepages=16\n",
	"proc/1234/cmdline":                  secretCmdline,
	"proc/1234/environ":                  secretEnv,
	"proc/1234/status":                   "Name:\tapp\nVmRSS:\t  1024 kB\n",
	"proc/1234/task/1234/cmdline":        secretCmdline,
	"proc/5678/cmdline":                  titleCmdline,
	"proc/5678/status":                   "Name:\tchrome\n",
	"proc/slabinfo":                      "slabinfo - version: 2.1\n",
	"sys/fs/cgroup/memory/a/memory.stat": "cache 0\nrss 4096\n",
	"sys/fs/cgroup/memory/b/":            "",
	"sys/fs/cgroup/memory/empty/":        "",
	"weird/marker":                       "line\n-- x --\nafter\n",
	"weird/crlf-marker":                  "-- y --\r\n",
	"weird/nonl":                         "no newline at end",
	"weird/name.qtxt":                    "plain text\n",
	"weird/nul":                          "a\x00b\n",
	"weird/empty":                        "",
	"usr/lib/libc.so.6":                  "\x7fELF\x02\x01\x01 GNU C Library stable release version 2.39.\n",
	"usr/lib/plugin":                     "\x7fELF\x02\x01\x01\n",
	"big":                                strings.Repeat("x", 2000) + "\n",
}

// record reads the fake host through a Recorder the way collectors do.
func record(t *testing.T) *Recorder {
	t.Helper()
	dir := t.TempDir()
	makeTree(t, dir, hostTree)
	host := faultFS{fsys: os.DirFS(dir), fail: map[string]error{"proc/slabinfo": fs.ErrPermission}}
	rec := NewRecorder(host, RecordOptions{MaxFileSize: 1024})
	for _, name := range []string{
		"proc/meminfo", "proc/cmdline", "proc/1234/cmdline", "proc/1234/environ", "proc/1234/status",
		"proc/1234/task/1234/cmdline", "proc/5678/cmdline", "weird/marker", "weird/crlf-marker",
		"weird/nonl", "weird/name.qtxt", "weird/nul", "weird/empty", "usr/lib/libc.so.6", "usr/lib/plugin", "big",
	} {
		if _, err := fs.ReadFile(rec, name); err != nil {
			t.Fatalf("ReadFile(%s): %v", name, err)
		}
	}
	if _, err := fs.ReadFile(rec, "proc/slabinfo"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("ReadFile(proc/slabinfo) error = %v, want permission", err)
	}
	if _, err := fs.ReadFile(rec, "proc/404/status"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile(proc/404/status) error = %v, want not-exist", err)
	}
	// Open + read to EOF records too.
	f, err := rec.Open("proc/5678/status")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := fs.ReadDir(rec, "sys/fs/cgroup/memory"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadDir(rec, "proc"); err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	prov := Provenance{Kernel: "6.1.0", Arch: "amd64", PageSize: 4096, CgroupMode: "v1",
		Time: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC), Tool: "memdoctor test"}
	wantFiles := map[string]string{
		"proc/meminfo":                       hostTree["proc/meminfo"],
		"proc/cmdline":                       hostTree["proc/cmdline"],
		"proc/1234/cmdline":                  "/usr/bin/app\x00",
		"proc/1234/status":                   hostTree["proc/1234/status"],
		"proc/1234/task/1234/cmdline":        "/usr/bin/app\x00",
		"proc/5678/cmdline":                  "chrome\x00",
		"proc/5678/status":                   hostTree["proc/5678/status"],
		"sys/fs/cgroup/memory/a/memory.stat": "", // listed, not read: absent
		"weird/marker":                       hostTree["weird/marker"],
		"weird/crlf-marker":                  hostTree["weird/crlf-marker"],
		"weird/nonl":                         hostTree["weird/nonl"],
		"weird/name.qtxt":                    hostTree["weird/name.qtxt"],
		"weird/nul":                          hostTree["weird/nul"],
		"weird/empty":                        "",
	}
	delete(wantFiles, "sys/fs/cgroup/memory/a/memory.stat")
	tests := []struct {
		name      string
		opts      WriteOptions
		overrides map[string]string
	}{
		{name: "redacted"},
		{name: "not redacted", opts: WriteOptions{NoRedact: true}, overrides: map[string]string{
			"proc/1234/cmdline":           secretCmdline,
			"proc/1234/task/1234/cmdline": secretCmdline,
			"proc/5678/cmdline":           titleCmdline,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := record(t)
			var archive bytes.Buffer
			if err := Write(&archive, prov, rec.Contents(), tt.opts); err != nil {
				t.Fatalf("Write: %v", err)
			}
			for _, s := range []string{"s3cr3t", "environ", "libc", "ELF", "xxxxxxxx"} {
				if bytes.Contains(archive.Bytes(), []byte(s)) {
					t.Errorf("archive contains %q:\n%s", s, archive.Bytes())
				}
			}
			if !tt.opts.NoRedact {
				for _, s := range []string{"hunter2", "--password", "--verbose", "abc123", "renderer"} {
					if bytes.Contains(archive.Bytes(), []byte(s)) {
						t.Errorf("redacted archive contains %q:\n%s", s, archive.Bytes())
					}
				}
			}

			fsys, gotProv, err := Load(bytes.NewReader(archive.Bytes()))
			if err != nil {
				t.Fatalf("Load: %v\n%s", err, archive.Bytes())
			}
			wantProv := prov
			wantProv.Redacted = !tt.opts.NoRedact
			if diff := cmp.Diff(gotProv, wantProv); diff != "" {
				t.Errorf("provenance mismatch (-got +want):\n%s", diff)
			}

			want := map[string]string{}
			for k, v := range wantFiles {
				want[k] = v
			}
			for k, v := range tt.overrides {
				want[k] = v
			}
			got := map[string]string{}
			err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				data, err := fs.ReadFile(fsys, p)
				if err == nil {
					got[p] = string(data)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("replayed files mismatch (-got +want):\n%s", diff)
			}

			// Failures replay.
			if _, err := fs.ReadFile(fsys, "proc/slabinfo"); !errors.Is(err, fs.ErrPermission) {
				t.Errorf("ReadFile(proc/slabinfo) error = %v, want permission", err)
			}
			if _, err := fs.Stat(fsys, "proc/slabinfo"); err != nil {
				t.Errorf("Stat(proc/slabinfo) = %v, want it to exist", err)
			}
			for _, name := range []string{"proc/404/status", "proc/1234/environ", "usr/lib/libc.so.6", "big"} {
				if _, err := fs.ReadFile(fsys, name); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("ReadFile(%s) error = %v, want not-exist", name, err)
				}
			}

			// Directories replay, empty ones included.
			for dir, want := range map[string][]string{
				"sys/fs/cgroup/memory":       {"a", "b", "empty"},
				"sys/fs/cgroup/memory/empty": {},
				"proc":                       {"1234", "5678", "cmdline", "meminfo", "slabinfo"},
			} {
				es, err := fs.ReadDir(fsys, dir)
				if err != nil {
					t.Errorf("ReadDir(%s): %v", dir, err)
					continue
				}
				var got []string
				for _, e := range es {
					got = append(got, e.Name())
				}
				if diff := cmp.Diff(got, want, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("ReadDir(%s) mismatch (-got +want):\n%s", dir, diff)
				}
			}

			// Writing the replay again gives the same archive.
			c, err := ReadContents(fsys)
			if err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			if err := Write(&again, gotProv, c, tt.opts); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(again.String(), archive.String()); diff != "" {
				t.Errorf("rewritten archive differs (-got +want):\n%s", diff)
			}
		})
	}
}

func TestWriteFormat(t *testing.T) {
	t.Parallel()
	c := Contents{
		Files: map[string][]byte{
			"proc/meminfo":   []byte("MemTotal: 1 kB\n"),
			"proc/1/cmdline": []byte("/sbin/init\x00splash\x00"),
			"a/marker":       []byte("-- x --\n"),
			"a/nonl":         []byte("x"),
			"a/x.qtxt":       []byte("y\n"),
		},
		Dirs:     []string{"sys/fs/cgroup/empty", "a"},
		Failures: map[string]FailureKind{"proc/slabinfo": Permission, "proc/9/": NotExist, "we\u00a0ird": Other},
	}
	want := "memdoctor capture v1\n" +
		"redacted: true\n" +
		"-- a/marker.qtxt --\n>-- x --\n>\n" +
		"-- a/nonl.qtxt --\n>x\n" +
		"-- a/x.qtxt.qtxt --\n>y\n>\n" +
		"-- proc/1/cmdline.qtxt --\n>/sbin/init\x00\n" +
		"-- proc/meminfo --\nMemTotal: 1 kB\n" +
		"-- sys/fs/cgroup/empty/ --\n" +
		"-- memdoctor/errors --\n" +
		"proc/9/\tnot-exist\n" +
		"proc/slabinfo\tpermission\n" +
		`"we\u00a0ird"` + "\tother\n" +
		"-- memdoctor/end --\n"
	for i := range 2 {
		var b bytes.Buffer
		if err := Write(&b, Provenance{}, c, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(b.String(), want); diff != "" {
			t.Errorf("Write #%d mismatch (-got +want):\n%s", i, diff)
		}
		// The output is a plain txtar archive.
		a := txtar.Parse(b.Bytes())
		if got := len(a.Files); got != 8 {
			t.Errorf("txtar.Parse found %d files, want 8", got)
		}
	}
}

func TestEncodeExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		quoted  bool
	}{
		{"empty", "", false},
		{"newline", "\n", false},
		{"text", "a\nb\n", false},
		{"no final newline", "a\nb", true},
		{"single byte", "x", true},
		{"marker first", "-- a --\n", true},
		{"marker later", "a\n-- b --\nc\n", true},
		{"marker with CR", "a\n-- b --\r\n", true},
		{"dash prefix only", "a\n-- b\n", true},
		{"not a marker", "a\n--b--\n", false},
		{"NUL", "\x00", true},
		{"NUL line", "\x00\n", false},
		{"quote char", ">\n", false},
		{"CR only", "\r", true},
		{"blank lines", "\n\n\n", false},
		{"invalid UTF-8", "\xff\xfe\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			c := Contents{Files: map[string][]byte{"f": []byte(tt.content)}}
			if err := Write(&b, Provenance{}, c, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(b.Bytes(), []byte("-- f.qtxt --\n")); got != tt.quoted {
				t.Errorf("stored quoted = %v, want %v:\n%s", got, tt.quoted, b.Bytes())
			}
			fsys, _, err := Load(&b)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got, err := fs.ReadFile(fsys, "f")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(got), tt.content); diff != "" {
				t.Errorf("content mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestNamesExact(t *testing.T) {
	t.Parallel()
	names := []string{"a ", "a\u00a0", "dir /x", "x.qtxt", "x.qtxt.qtxt", "-- a --", "a --", "a/-- b --/c", "é/ü", "a\\b", `"q"`}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := Contents{
				Files:    map[string][]byte{name: []byte("content\n"), "d/" + name + "/f": nil},
				Dirs:     []string{"e/" + name},
				Failures: map[string]FailureKind{"f/" + name: Permission, "g/" + name + "/": Other},
			}
			var b bytes.Buffer
			if err := Write(&b, Provenance{}, c, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			fsys, _, err := Load(&b)
			if err != nil {
				t.Fatalf("Load: %v\n%s", err, b.Bytes())
			}
			got, err := ReadContents(fsys)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(flat(got), flat(c)); diff != "" {
				t.Errorf("mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Contents
		prov Provenance
		want string
	}{
		{"dot-dot", Contents{Files: map[string][]byte{"a/../b": nil}}, Provenance{}, `invalid path "a/../b"`},
		{"rooted", Contents{Files: map[string][]byte{"/proc/meminfo": nil}}, Provenance{}, "invalid path"},
		{"invalid UTF-8", Contents{Files: map[string][]byte{"\xff": nil}}, Provenance{}, "invalid path"},
		{"leading blank", Contents{Files: map[string][]byte{" a": nil}}, Provenance{}, "invalid path"},
		{"leading no-break space", Contents{Dirs: []string{"\u00a0a"}}, Provenance{}, "invalid path"},
		{"newline", Contents{Files: map[string][]byte{"a\nb": nil}}, Provenance{}, "invalid path"},
		{"reserved", Contents{Files: map[string][]byte{"memdoctor/errors": nil}}, Provenance{}, "invalid path"},
		{"root dir", Contents{Dirs: []string{"."}}, Provenance{}, "invalid path"},
		{"file and dir", Contents{Files: map[string][]byte{"a": nil}, Dirs: []string{"a"}}, Provenance{}, `path "a" is recorded twice (file and directory)`},
		{"file below file", Contents{Files: map[string][]byte{"a": nil, "a/b": nil}}, Provenance{}, `path "a/b" is below "a", which is a file`},
		{"file below missing", Contents{Files: map[string][]byte{"a/b": nil}, Failures: map[string]FailureKind{"a/": NotExist}}, Provenance{}, `path "a" is a path recorded as not existing but has entries below it`},
		{"file and failure", Contents{Files: map[string][]byte{"a": nil}, Failures: map[string]FailureKind{"a": Permission}}, Provenance{}, "recorded twice (file and failed file)"},
		{"unknown kind", Contents{Failures: map[string]FailureKind{"a": "gone"}}, Provenance{}, `unknown failure kind "gone"`},
		{"bad extra key", Contents{}, Provenance{Extra: map[string]string{"a b": ""}}, "malformed extra key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			err := Write(&b, tt.prov, tt.c, WriteOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Write error = %v, want it to contain %q", err, tt.want)
			}
			if b.Len() != 0 {
				t.Errorf("Write wrote %d bytes on error", b.Len())
			}
		})
	}
}

func TestWriteFailedDirWithEntries(t *testing.T) {
	t.Parallel()
	// A directory that cannot be listed (mode 0711) may still have files
	// read below it.
	c := Contents{
		Files:    map[string][]byte{"proc/1/fd/x": []byte("y\n")},
		Failures: map[string]FailureKind{"proc/1/fd/": Permission},
	}
	var b bytes.Buffer
	if err := Write(&b, Provenance{}, c, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	fsys, _, err := Load(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadDir(fsys, "proc/1/fd"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("ReadDir error = %v, want permission", err)
	}
	info, err := fs.Stat(fsys, "proc/1/fd")
	if err != nil || !info.IsDir() {
		t.Errorf("Stat = %v, %v; want a directory", info, err)
	}
	if got, err := fs.ReadFile(fsys, "proc/1/fd/x"); err != nil || string(got) != "y\n" {
		t.Errorf("ReadFile = %q, %v; want \"y\\n\"", got, err)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	const head = "memdoctor capture v1\nredacted: true\n"
	const end = "-- memdoctor/end --\n"
	tests := []struct {
		name    string
		archive string
		wantErr error
		wantMsg string
	}{
		{"empty", "", ErrNotCapture, "line 1: not a memdoctor capture"},
		{"plain txtar", "-- a --\nb\n", ErrNotCapture, "line 1: not a memdoctor capture"},
		{"header only", head, ErrCorrupt, "line 2: archive is truncated"},
		{"truncated in a file", head + "-- a --\nb\nc", ErrCorrupt, "line 5: archive is truncated"},
		{"truncated in the trailer marker", head + "-- a --\nb\n-- memdoctor/en", ErrCorrupt, "line 5: archive is truncated"},
		{"trailer with content", head + end + "junk\n", ErrCorrupt, "line 4: the memdoctor/end trailer has content"},
		{"two trailers", head + end + end, ErrCorrupt, "line 3: the memdoctor/end trailer is followed by more entries"},
		{"entry after trailer", head + end + "-- a --\n" + end, ErrCorrupt, "line 3: the memdoctor/end trailer is followed"},
		{"duplicate", head + "-- a --\n-- a --\n" + end, ErrCorrupt, `line 4: duplicate entry "a"`},
		{"plain and quoted", head + "-- a --\n-- a.qtxt --\n>\n" + end, ErrCorrupt, `line 4: path "a" is recorded twice`},
		{"dir with content", head + "-- a/ --\nx\n" + end, ErrCorrupt, `line 4: directory entry "a/" has content`},
		{"bad quoted line", head + "-- a.qtxt --\n>ok\nnot quoted\n" + end, ErrCorrupt, "line 5: quoted line does not start with '>'"},
		{"empty quoted", head + "-- a.qtxt --\n" + end, ErrCorrupt, "line 4: quoted entry is empty"},
		{"invalid path", head + "-- a/../b --\n" + end, ErrCorrupt, `line 3: invalid path "a/../b"`},
		{"reserved path", head + "-- memdoctor --\n" + end, ErrCorrupt, `line 3: invalid path "memdoctor"`},
		{"file below file", head + "-- a --\nx\n-- a/b --\n" + end, ErrCorrupt, `line 5: path "a/b" is below "a", which is a file`},
		{"errors without tab", head + "-- memdoctor/errors --\nproc/x permission\n" + end, ErrCorrupt, "line 4: malformed failure line"},
		{"errors unknown kind", head + "-- memdoctor/errors --\n\nproc/x\tgone\n" + end, ErrCorrupt, `line 5: unknown failure kind "gone"`},
		{"errors bad quote", head + "-- memdoctor/errors --\n\"proc/x\tother\n" + end, ErrCorrupt, "line 4: bad quoted path"},
		{"errors conflict", head + "-- a --\n-- memdoctor/errors --\na\tother\n" + end, ErrCorrupt, `line 5: path "a" is recorded twice (file and failed file)`},
		{"bad provenance", "memdoctor capture v1\npagesize: big\n" + end, ErrCorrupt, "line 2: provenance key \"pagesize\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Load(strings.NewReader(tt.archive))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Load error = %v, want errors.Is %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Load error = %q, want it to contain %q", err, tt.wantMsg)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Errorf("Load error %v is not a *FormatError", err)
			}
		})
	}
}

func TestLoadTolerant(t *testing.T) {
	t.Parallel()
	archive := "memdoctor capture v1\r\nfuture: yes\r\n" +
		"-- a --\r\nb\r\n" +
		"-- memdoctor/checksums --\nignored by v1\n" +
		"-- memdoctor/end --" // no final newline
	fsys, prov, err := Load(strings.NewReader(archive))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if diff := cmp.Diff(prov, Provenance{Extra: map[string]string{"future": "yes"}}); diff != "" {
		t.Errorf("provenance mismatch (-got +want):\n%s", diff)
	}
	got, err := fs.ReadFile(fsys, "a")
	if err != nil || string(got) != "b\r\n" {
		t.Errorf("ReadFile(a) = %q, %v; want %q", got, err, "b\r\n")
	}
	if _, err := fs.Stat(fsys, "memdoctor"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(memdoctor) error = %v, want not-exist", err)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := filepath.Join(dir, "host.capture")
	if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Contents{Files: map[string][]byte{"proc/meminfo": []byte("MemTotal: 1 kB\n")}}
	if err := WriteFile(name, Provenance{Note: "n"}, c, WriteOptions{}); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	info, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o600 {
		t.Errorf("mode = %v, want 0600", got)
	}
	fsys, prov, err := LoadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	mustRead(t, fsys, "proc/meminfo", "MemTotal: 1 kB\n")
	if prov.Note != "n" {
		t.Errorf("Note = %q, want n", prov.Note)
	}

	// A failed write leaves the old file and no temporary file.
	bad := Contents{Files: map[string][]byte{"a": nil, "a/b": nil}}
	if err := WriteFile(name, Provenance{}, bad, WriteOptions{}); err == nil {
		t.Fatal("WriteFile of invalid contents succeeded")
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 {
		t.Errorf("directory holds %d entries after a failed write, want 1", len(es))
	}
	if _, _, err := LoadFile(name); err != nil {
		t.Errorf("previous capture damaged: %v", err)
	}
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.txtar")
	bad := filepath.Join(dir, "bad.txtar")
	if err := os.WriteFile(good, []byte("memdoctor capture v1\ncgroup: v2\n-- x --\ny\n-- memdoctor/end --\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("memdoctor capture v1\n-- x --\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, prov, err := LoadFile(good)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if prov.CgroupMode != "v2" {
		t.Errorf("CgroupMode = %q, want v2", prov.CgroupMode)
	}
	if got, err := fs.ReadFile(fsys, "x"); err != nil || string(got) != "y\n" {
		t.Errorf("ReadFile(x) = %q, %v", got, err)
	}
	_, _, err = LoadFile(bad)
	if want := "load capture " + bad + ": line 2: archive is truncated"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("LoadFile(bad) error = %v, want prefix %q", err, want)
	}
	_, _, err = LoadFile(filepath.Join(dir, "missing"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadFile(missing) error = %v, want not-exist", err)
	}
}

func TestReplayFSConforms(t *testing.T) {
	t.Parallel()
	c := Contents{
		Files: map[string][]byte{
			"proc/meminfo":             []byte("MemTotal: 1 kB\n"),
			"proc/1/status":            []byte("Name:\tinit\n"),
			"sys/kernel/mm/x":          []byte("x"),
			"sys/fs/cgroup/a/b/memory": nil,
		},
		Dirs: []string{"sys/fs/cgroup/empty", "sys/fs/cgroup/a"},
	}
	var b bytes.Buffer
	if err := Write(&b, Provenance{Time: time.Unix(1700000000, 0)}, c, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	fsys, _, err := Load(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(fsys, "proc/meminfo", "proc/1/status", "sys/kernel/mm/x", "sys/fs/cgroup/a/b/memory", "sys/fs/cgroup/empty"); err != nil {
		t.Error(err)
	}
	info, err := fs.Stat(fsys, "proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	if !info.ModTime().Equal(time.Unix(1700000000, 0)) {
		t.Errorf("ModTime = %v, want the capture time", info.ModTime())
	}
	// The replay is read-only: changing a returned slice changes nothing.
	data, _ := fs.ReadFile(fsys, "proc/meminfo")
	data[0] = 'X'
	again, _ := fs.ReadFile(fsys, "proc/meminfo")
	if string(again) != "MemTotal: 1 kB\n" {
		t.Errorf("replay was modified through ReadFile's result: %q", again)
	}
}

func TestReplayFailureKinds(t *testing.T) {
	t.Parallel()
	c := Contents{Failures: map[string]FailureKind{
		"proc/slabinfo":       Permission,
		"sys/kernel/x":        Other,
		"proc/42/status":      NotExist,
		"proc/1/map_files/":   Permission,
		"sys/fs/cgroup/gone/": NotExist,
	}}
	var b bytes.Buffer
	if err := Write(&b, Provenance{}, c, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	fsys, _, err := Load(&b)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		op         func(string) error
		path       string
		wantErr    error
		wantExists bool
	}{
		{"read permission", readFile(fsys), "proc/slabinfo", fs.ErrPermission, true},
		{"open permission", open(fsys), "proc/slabinfo", fs.ErrPermission, true},
		{"read other", readFile(fsys), "sys/kernel/x", ErrCaptureFailed, true},
		{"read not-exist", readFile(fsys), "proc/42/status", fs.ErrNotExist, false},
		{"list permission", readDir(fsys), "proc/1/map_files", fs.ErrPermission, true},
		{"list not-exist", readDir(fsys), "sys/fs/cgroup/gone", fs.ErrNotExist, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.op(tt.path); !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want errors.Is %v", err, tt.wantErr)
			}
			_, err := fs.Stat(fsys, tt.path)
			if got := err == nil; got != tt.wantExists {
				t.Errorf("Stat error = %v, want exists %v", err, tt.wantExists)
			}
			es, err := fs.ReadDir(fsys, path.Dir(tt.path))
			listed := false
			for _, e := range es {
				listed = listed || e.Name() == path.Base(tt.path)
			}
			if listed != tt.wantExists {
				t.Errorf("listed in its directory = %v (err %v), want %v", listed, err, tt.wantExists)
			}
		})
	}
}

func readFile(fsys fs.FS) func(string) error {
	return func(name string) error { _, err := fs.ReadFile(fsys, name); return err }
}

func readDir(fsys fs.FS) func(string) error {
	return func(name string) error { _, err := fs.ReadDir(fsys, name); return err }
}

func open(fsys fs.FS) func(string) error {
	return func(name string) error {
		f, err := fsys.Open(name)
		if err == nil {
			f.Close()
		}
		return err
	}
}
