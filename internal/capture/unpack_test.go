package capture

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// observe describes what a replay shows for each path: content or error
// kind of ReadFile, whether Stat succeeds, and the names ReadDir lists.
func observe(fsys fs.FS, paths []string) map[string]string {
	m := map[string]string{}
	for _, p := range paths {
		if data, err := fs.ReadFile(fsys, p); err != nil {
			m[p+" read"] = "error: " + string(KindOf(err))
		} else {
			m[p+" read"] = string(data)
		}
		_, err := fs.Stat(fsys, p)
		m[p+" stat"] = "error: " + string(KindOf(err))
		if es, err := fs.ReadDir(fsys, p); err != nil {
			m[p+" list"] = "error: " + string(KindOf(err))
		} else {
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			m[p+" list"] = strings.Join(names, " ")
		}
	}
	return m
}

// sample is a capture exercising every kind of path.
var sample = Contents{
	Files: map[string][]byte{
		"proc/meminfo":           []byte("MemTotal: 1 kB\n"),
		"proc/1/cmdline":         []byte("/sbin/init\x00splash\x00"),
		"proc/1/fd/0":            []byte("x\n"),
		"proc/1/environ":         []byte("HOME=/\x00"),
		"sys/kernel/mm/nonl":     []byte("[always] madvise never"),
		"sys/fs/cgroup/a/marker": []byte("-- a --\n"),
	},
	Dirs: []string{"sys/fs/cgroup/empty", "sys/fs/cgroup/a"},
	Failures: map[string]FailureKind{
		"proc/slabinfo":   Permission,
		"proc/1/fd/":      Permission,
		"proc/1/io":       Other,
		"proc/9/":         NotExist,
		"proc/kpageflags": NotExist,
	},
}

var samplePaths = []string{
	".", "proc", "proc/meminfo", "proc/1", "proc/1/cmdline", "proc/1/fd", "proc/1/fd/0", "proc/1/environ",
	"proc/1/io", "proc/9", "proc/kpageflags", "proc/slabinfo", "sys/kernel/mm/nonl", "sys/fs/cgroup",
	"sys/fs/cgroup/a", "sys/fs/cgroup/a/marker", "sys/fs/cgroup/empty", "memdoctor", "memdoctor/provenance",
}

func TestUnpack(t *testing.T) {
	t.Parallel()
	prov := Provenance{Kernel: "6.1.0", PageSize: 16384, Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Note: "unpack test"}
	tests := []struct {
		name string
		opts WriteOptions
	}{
		{"redacted", WriteOptions{}},
		{"not redacted", WriteOptions{NoRedact: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := Write(&b, prov, sample, tt.opts); err != nil {
				t.Fatal(err)
			}
			loaded, lprov, err := Load(&b)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "root")
			if err := Unpack(loaded, lprov, dir); err != nil {
				t.Fatalf("Unpack: %v", err)
			}

			gotProv, err := ReadProvenanceDir(dir)
			if err != nil {
				t.Fatalf("ReadProvenanceDir: %v", err)
			}
			if diff := cmp.Diff(gotProv, lprov); diff != "" {
				t.Errorf("provenance mismatch (-got +want):\n%s", diff)
			}
			if got, err := os.ReadFile(filepath.Join(dir, "sys/kernel/mm/nonl")); err != nil || string(got) != "[always] madvise never" {
				t.Errorf("unpacked file = %q, %v", got, err)
			}
			info, err := os.Stat(filepath.Join(dir, "proc/slabinfo"))
			if err != nil || info.Mode().Perm() != 0 {
				t.Errorf("placeholder of a permission failure: %v, %v; want mode 0", info, err)
			}

			replay, dprov, err := OpenDir(dir)
			if err != nil {
				t.Fatalf("OpenDir: %v", err)
			}
			if diff := cmp.Diff(dprov, lprov); diff != "" {
				t.Errorf("OpenDir provenance mismatch (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(observe(replay, samplePaths), observe(loaded, samplePaths)); diff != "" {
				t.Errorf("unpacked replay differs from the archive replay (-got +want):\n%s", diff)
			}

			if err := Unpack(loaded, lprov, dir); !errors.Is(err, fs.ErrExist) {
				t.Errorf("second Unpack error = %v, want it to refuse overwriting", err)
			}
		})
	}
}

func TestUnpackRedactsLikeWrite(t *testing.T) {
	t.Parallel()
	src := fstest.MapFS{
		"proc/1/cmdline": &fstest.MapFile{Data: []byte("app\x00--password=hunter2\x00")},
		"proc/1/environ": &fstest.MapFile{Data: []byte("TOKEN=x\x00")},
		"proc/meminfo":   &fstest.MapFile{Data: []byte("MemTotal: 1 kB\n")},
	}
	dir := t.TempDir()
	if err := Unpack(src, Provenance{Redacted: true}, dir); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			got = append(got, filepath.ToSlash(rel)+"="+string(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	want := []string{
		"memdoctor/provenance=memdoctor capture v1\nredacted: true\n",
		"proc/1/cmdline=app\x00",
		"proc/meminfo=MemTotal: 1 kB\n",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("unpacked files mismatch (-got +want):\n%s", diff)
	}
}

func TestUnpackStaysInside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "proc")); err != nil {
		t.Skipf("symlink: %v", err)
	}
	src := fstest.MapFS{"proc/meminfo": &fstest.MapFile{Data: []byte("x\n")}}
	if err := Unpack(src, Provenance{}, dir); err == nil {
		t.Error("Unpack through a symlink leaving the directory succeeded")
	}
	if es, _ := os.ReadDir(outside); len(es) != 0 {
		t.Errorf("Unpack wrote outside its directory: %v", es)
	}
}

func TestReadProvenanceDir(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "memdoctor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "memdoctor", "provenance"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		dir     string
		wantErr error
	}{
		{"missing is zero", empty, nil},
		{"missing directory is zero", filepath.Join(empty, "nope"), nil},
		{"not a provenance", bad, ErrNotCapture},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadProvenanceDir(tt.dir)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("ReadProvenanceDir error = %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(got, Provenance{}); diff != "" {
					t.Errorf("mismatch (-got +want):\n%s", diff)
				}
			}
		})
	}
}

func TestOpenDirPlain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeTree(t, dir, map[string]string{"proc/meminfo": "MemTotal: 1 kB\n", "memdoctor/notes": "mine\n"})
	fsys, prov, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(prov, Provenance{}); diff != "" {
		t.Errorf("provenance mismatch (-got +want):\n%s", diff)
	}
	mustRead(t, fsys, "proc/meminfo", "MemTotal: 1 kB\n")
	// Without a provenance file the directory is not an unpacked capture:
	// nothing is hidden.
	mustRead(t, fsys, "memdoctor/notes", "mine\n")

	if _, _, err := OpenDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenDir(missing) error = %v, want not-exist", err)
	}
	if _, _, err := OpenDir(filepath.Join(dir, "proc/meminfo")); err == nil {
		t.Error("OpenDir of a file succeeded")
	}
}

func TestOpenDirHidesMetadata(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := Write(&b, Provenance{}, sample, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	loaded, prov, err := Load(&b)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Unpack(loaded, prov, dir); err != nil {
		t.Fatal(err)
	}
	fsys, _, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	for {
		es, err := f.(fs.ReadDirFile).ReadDir(1)
		for _, e := range es {
			names = append(names, e.Name())
		}
		if err != nil {
			break
		}
	}
	if diff := cmp.Diff(names, []string{"proc", "sys"}); diff != "" {
		t.Errorf("root listing mismatch (-got +want):\n%s", diff)
	}
}

func TestReadContentsWalk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeTree(t, dir, map[string]string{
		"proc/meminfo":      "MemTotal: 1 kB\n",
		"sys/empty/":        "",
		"memdoctor/ignored": "x",
	})
	src := faultFS{fsys: os.DirFS(dir), fail: map[string]error{"proc/slabinfo": fs.ErrPermission}}
	if err := os.WriteFile(filepath.Join(dir, "proc/slabinfo"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadContents(src)
	if err != nil {
		t.Fatal(err)
	}
	want := Contents{
		Files:    map[string][]byte{"proc/meminfo": []byte("MemTotal: 1 kB\n")},
		Dirs:     []string{"proc", "sys", "sys/empty"},
		Failures: map[string]FailureKind{"proc/slabinfo": Permission},
	}
	if diff := cmp.Diff(flat(got), flat(want)); diff != "" {
		t.Errorf("ReadContents mismatch (-got +want):\n%s", diff)
	}
}
