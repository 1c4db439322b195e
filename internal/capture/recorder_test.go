package capture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// env is the world a Recorder scenario runs in: a mutable in-memory FS and
// the errors to inject.
type env struct {
	m    fstest.MapFS
	fail map[string]error
	rec  *Recorder
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s), Mode: 0o444} }

func dir() *fstest.MapFile { return &fstest.MapFile{Mode: fs.ModeDir | 0o555} }

func TestRecorderPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files fstest.MapFS
		opts  RecordOptions
		run   func(t *testing.T, e *env)
		want  Contents
	}{
		{
			name:  "first read wins",
			files: fstest.MapFS{"a": file("1\n")},
			run: func(t *testing.T, e *env) {
				mustRead(t, e.rec, "a", "1\n")
				e.m["a"] = file("2\n")
				mustRead(t, e.rec, "a", "2\n")
			},
			want: Contents{Files: map[string][]byte{"a": []byte("1\n")}},
		},
		{
			name:  "success replaces failure",
			files: fstest.MapFS{"a": file("1\n")},
			run: func(t *testing.T, e *env) {
				e.fail["a"] = fs.ErrPermission
				mustFail(t, e.rec, "a", fs.ErrPermission)
				delete(e.fail, "a")
				mustRead(t, e.rec, "a", "1\n")
			},
			want: Contents{Files: map[string][]byte{"a": []byte("1\n")}},
		},
		{
			name:  "failure after success is ignored",
			files: fstest.MapFS{"a": file("1\n")},
			run: func(t *testing.T, e *env) {
				mustRead(t, e.rec, "a", "1\n")
				e.fail["a"] = fs.ErrPermission
				mustFail(t, e.rec, "a", fs.ErrPermission)
			},
			want: Contents{Files: map[string][]byte{"a": []byte("1\n")}},
		},
		{
			name:  "failure kinds",
			files: fstest.MapFS{"proc/slabinfo": file(""), "sys/x": file("")},
			run: func(t *testing.T, e *env) {
				e.fail["proc/slabinfo"] = fs.ErrPermission
				e.fail["sys/x"] = errors.New("input/output error")
				e.fail["proc/7/status"] = errESRCH
				mustFail(t, e.rec, "proc/slabinfo", fs.ErrPermission)
				mustFail(t, e.rec, "sys/x", nil)
				mustFail(t, e.rec, "proc/7/status", nil)
				mustFail(t, e.rec, "proc/8/status", fs.ErrNotExist)
			},
			want: Contents{Failures: map[string]FailureKind{
				"proc/slabinfo": Permission, "sys/x": Other, "proc/7/status": NotExist, "proc/8/status": NotExist,
			}},
		},
		{
			name:  "stat records files and directories",
			files: fstest.MapFS{"sys/fs/cgroup/cgroup.controllers": file("memory\n"), "sys/fs/cgroup/x": dir()},
			run: func(t *testing.T, e *env) {
				for _, name := range []string{"sys/fs/cgroup/cgroup.controllers", "sys/fs/cgroup/x"} {
					if _, err := fs.Stat(e.rec, name); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := fs.Stat(e.rec, "sys/fs/cgroup/memory"); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("Stat error = %v, want not-exist", err)
				}
			},
			want: Contents{
				Files:    map[string][]byte{"sys/fs/cgroup/cgroup.controllers": []byte("memory\n")},
				Dirs:     []string{"sys/fs/cgroup/x"},
				Failures: map[string]FailureKind{"sys/fs/cgroup/memory": NotExist},
			},
		},
		{
			name:  "open read to EOF records, closed early does not",
			files: fstest.MapFS{"a": file("abc\n"), "b": file("def\n")},
			run: func(t *testing.T, e *env) {
				f, err := e.rec.Open("a")
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(io.LimitReader(f, 2))
				if err != nil || string(got) != "ab" {
					t.Fatalf("partial read = %q, %v", got, err)
				}
				f.Close()
				g, err := e.rec.Open("b")
				if err != nil {
					t.Fatal(err)
				}
				got, err = io.ReadAll(g)
				if err != nil || string(got) != "def\n" {
					t.Fatalf("read = %q, %v", got, err)
				}
				g.Close()
			},
			want: Contents{Files: map[string][]byte{"b": []byte("def\n")}},
		},
		{
			name:  "open directory and list it in batches",
			files: fstest.MapFS{"proc/1/status": file(""), "proc/2/status": file(""), "proc/meminfo": file(""), "proc/3": dir()},
			run: func(t *testing.T, e *env) {
				f, err := e.rec.Open("proc")
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				d := f.(fs.ReadDirFile)
				for {
					_, err := d.ReadDir(1)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			},
			want: Contents{Dirs: []string{"proc", "proc/1", "proc/2", "proc/3"}},
		},
		{
			name:  "listing failure",
			files: fstest.MapFS{"proc/1/fd": dir(), "proc/1/fd/0": file("x\n")},
			run: func(t *testing.T, e *env) {
				e.fail["proc/1/fd"] = fs.ErrPermission
				if _, err := fs.ReadDir(e.rec, "proc/1/fd"); !errors.Is(err, fs.ErrPermission) {
					t.Fatalf("ReadDir error = %v", err)
				}
				delete(e.fail, "proc/1/fd")
				if _, err := fs.Stat(e.rec, "proc/1/fd"); err != nil {
					t.Fatal(err)
				}
				mustRead(t, e.rec, "proc/1/fd/0", "x\n")
			},
			want: Contents{
				Files:    map[string][]byte{"proc/1/fd/0": []byte("x\n")},
				Failures: map[string]FailureKind{"proc/1/fd/": Permission},
			},
		},
		{
			name:  "default exclude",
			files: fstest.MapFS{"lib/libc.so.6": file("\x7fELF..."), "lib/libfoo.so": file("x"), "bin/sh": file("\x7fELF"), "ok": file("ok\n")},
			run: func(t *testing.T, e *env) {
				for _, name := range []string{"lib/libc.so.6", "lib/libfoo.so", "bin/sh", "ok"} {
					if _, err := fs.ReadFile(e.rec, name); err != nil {
						t.Fatal(err)
					}
				}
				e.fail["lib/libm.so.6"] = fs.ErrPermission
				mustFail(t, e.rec, "lib/libm.so.6", fs.ErrPermission)
			},
			want: Contents{Files: map[string][]byte{"ok": []byte("ok\n")}},
		},
		{
			name:  "custom exclude",
			files: fstest.MapFS{"secret/a": file("a"), "secret/b": dir(), "ok": file("ok\n")},
			opts:  RecordOptions{Exclude: func(name string, _ []byte) bool { return strings.HasPrefix(name, "secret") }},
			run: func(t *testing.T, e *env) {
				mustRead(t, e.rec, "secret/a", "a")
				mustRead(t, e.rec, "ok", "ok\n")
				mustFail(t, e.rec, "secret/c", fs.ErrNotExist)
				if _, err := fs.ReadDir(e.rec, "secret"); err != nil {
					t.Fatal(err)
				}
			},
			want: Contents{Files: map[string][]byte{"ok": []byte("ok\n")}},
		},
		{
			name:  "size limit",
			files: fstest.MapFS{"small": file("123"), "big": file("1234"), "bigopen": file("1234"), "bigstat": file("1234")},
			opts:  RecordOptions{MaxFileSize: 3},
			run: func(t *testing.T, e *env) {
				mustRead(t, e.rec, "small", "123")
				mustRead(t, e.rec, "big", "1234")
				f, err := e.rec.Open("bigopen")
				if err != nil {
					t.Fatal(err)
				}
				if got, err := io.ReadAll(f); err != nil || string(got) != "1234" {
					t.Fatalf("read = %q, %v", got, err)
				}
				f.Close()
				if _, err := fs.Stat(e.rec, "bigstat"); err != nil {
					t.Fatal(err)
				}
			},
			want: Contents{Files: map[string][]byte{"small": []byte("123")}},
		},
		{
			name:  "no size limit",
			files: fstest.MapFS{"big": file(strings.Repeat("x", DefaultMaxFileSize+1))},
			opts:  RecordOptions{MaxFileSize: -1},
			run: func(t *testing.T, e *env) {
				mustRead(t, e.rec, "big", strings.Repeat("x", DefaultMaxFileSize+1))
			},
			want: Contents{Files: map[string][]byte{"big": []byte(strings.Repeat("x", DefaultMaxFileSize+1))}},
		},
		{
			name:  "reserved and invalid names are not recorded",
			files: fstest.MapFS{"memdoctor/provenance": file("x\n")},
			run: func(t *testing.T, e *env) {
				mustRead(t, e.rec, "memdoctor/provenance", "x\n")
				mustFail(t, e.rec, "../etc/passwd", nil)
				if _, err := fs.ReadDir(e.rec, "."); err != nil {
					t.Fatal(err)
				}
			},
			want: Contents{},
		},
		{
			name:  "tree changed: the file is kept",
			files: fstest.MapFS{"a": file("1\n")},
			run: func(t *testing.T, e *env) {
				mustRead(t, e.rec, "a", "1\n")
				delete(e.m, "a")
				e.m["a/b"] = file("2\n")
				mustRead(t, e.rec, "a/b", "2\n")
			},
			want: Contents{Files: map[string][]byte{"a": []byte("1\n")}},
		},
		{
			name:  "failure below a file is dropped",
			files: fstest.MapFS{"a": file("1\n")},
			run: func(t *testing.T, e *env) {
				mustRead(t, e.rec, "a", "1\n")
				e.fail["a/b"] = errors.New("not a directory")
				mustFail(t, e.rec, "a/b", nil)
			},
			want: Contents{Files: map[string][]byte{"a": []byte("1\n")}},
		},
		{
			name:  "not-exist above a success is dropped",
			files: fstest.MapFS{"p/x": file("1\n")},
			run: func(t *testing.T, e *env) {
				e.fail["p"] = fs.ErrNotExist
				if _, err := fs.ReadDir(e.rec, "p"); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("ReadDir error = %v", err)
				}
				mustFail(t, e.rec, "p", fs.ErrNotExist)
				delete(e.fail, "p")
				mustRead(t, e.rec, "p/x", "1\n")
			},
			want: Contents{Files: map[string][]byte{"p/x": []byte("1\n")}},
		},
		{
			name:  "read of a directory is not a failure of the directory",
			files: fstest.MapFS{"d/x": file("")},
			run: func(t *testing.T, e *env) {
				if _, err := fs.ReadDir(e.rec, "d"); err != nil {
					t.Fatal(err)
				}
				if _, err := fs.ReadFile(e.rec, "d"); err == nil {
					t.Fatal("ReadFile of a directory succeeded")
				}
			},
			want: Contents{Dirs: []string{"d"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := &env{m: tt.files, fail: map[string]error{}}
			e.rec = NewRecorder(faultFS{fsys: e.m, fail: e.fail}, tt.opts)
			tt.run(t, e)
			got := e.rec.Contents()
			if diff := cmp.Diff(flat(got), flat(tt.want)); diff != "" {
				t.Errorf("Contents mismatch (-got +want):\n%s", diff)
			}
			var b bytes.Buffer
			if err := Write(&b, Provenance{}, got, WriteOptions{}); err != nil {
				t.Errorf("Write(Contents()): %v", err)
			}
		})
	}
}

// flat returns c as one map, for comparisons: "file NAME" to the content,
// "dir NAME" to "", "fail KEY" to the kind.
func flat(c Contents) map[string]string {
	m := map[string]string{}
	for name, data := range c.Files {
		m["file "+name] = string(data)
	}
	for _, name := range c.Dirs {
		m["dir "+name] = ""
	}
	for key, kind := range c.Failures {
		m["fail "+key] = string(kind)
	}
	return m
}

// mustRead reads name through fsys and checks what the caller sees.
func mustRead(t *testing.T, fsys fs.FS, name, want string) {
	t.Helper()
	got, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", name, err)
	}
	if string(got) != want {
		t.Fatalf("ReadFile(%s) = %q, want %q", name, got, want)
	}
}

// mustFail reads name through fsys and checks that it fails, with want if
// not nil.
func mustFail(t *testing.T, fsys fs.FS, name string, want error) {
	t.Helper()
	_, err := fs.ReadFile(fsys, name)
	if err == nil || (want != nil && !errors.Is(err, want)) {
		t.Fatalf("ReadFile(%s) error = %v, want %v", name, err, want)
	}
}

func TestRecorderSymlinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	makeTree(t, root, map[string]string{
		"sys/devices/node0/meminfo":          "Node 0 MemTotal: 1 kB\n",
		path.Join("proc", "1", "root") + "/": "",
	})
	for _, l := range []struct{ target, link string }{
		{"../devices/node0", "sys/class/node0"},
		{"root", "proc/1/cwd"},
	} {
		if err := os.Symlink(l.target, filepath.Join(root, filepath.FromSlash(l.link))); err != nil {
			t.Skipf("symlink: %v", err)
		}
	}
	rec := NewRecorder(os.DirFS(root), RecordOptions{})
	for _, d := range []string{"sys/class", "proc/1"} {
		if _, err := fs.ReadDir(rec, d); err != nil {
			t.Fatal(err)
		}
	}
	want := Contents{Dirs: []string{"proc/1", "proc/1/root", "sys/class", "sys/class/node0"}}
	if diff := cmp.Diff(flat(rec.Contents()), flat(want)); diff != "" {
		t.Errorf("Contents mismatch (-got +want):\n%s", diff)
	}
}

func TestRecorderImplementsFS(t *testing.T) {
	t.Parallel()
	m := fstest.MapFS{"a/b": file("b\n"), "a/c/d": file("d\n"), "e": file("")}
	rec := NewRecorder(m, RecordOptions{})
	if err := fstest.TestFS(rec, "a/b", "a/c/d", "e"); err != nil {
		t.Error(err)
	}
	var (
		_ fs.ReadFileFS = rec
		_ fs.ReadDirFS  = rec
		_ fs.StatFS     = rec
	)
}

func TestRecorderConcurrent(t *testing.T) {
	t.Parallel()
	m := fstest.MapFS{}
	want := Contents{Files: map[string][]byte{}}
	for i := range 50 {
		name := fmt.Sprintf("proc/%d/status", i)
		m[name] = file(fmt.Sprintf("Pid:\t%d\n", i))
		want.Files[name] = []byte(fmt.Sprintf("Pid:\t%d\n", i))
		want.Dirs = append(want.Dirs, fmt.Sprintf("proc/%d", i))
	}
	want.Dirs = append(want.Dirs, "proc")
	rec := NewRecorder(m, RecordOptions{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				name := fmt.Sprintf("proc/%d/status", (i+g*7)%50)
				if _, err := fs.ReadFile(rec, name); err != nil {
					t.Error(err)
				}
				if _, err := fs.ReadDir(rec, "proc"); err != nil {
					t.Error(err)
				}
				_ = rec.Contents()
			}
		}()
	}
	wg.Wait()
	got := rec.Contents()
	if diff := cmp.Diff(flat(got), flat(want)); diff != "" {
		t.Errorf("Contents mismatch (-got +want):\n%s", diff)
	}
}
