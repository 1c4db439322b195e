package capture

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/tools/txtar"
)

// FuzzLoad checks, for any bytes: that the archive splitter agrees with
// txtar.Parse; that Load never panics and that what it loads writes back
// to an archive replaying the same; and that Write then Load of the bytes
// as file content and as provenance values is exact.
func FuzzLoad(f *testing.F) {
	var b bytes.Buffer
	if err := Write(&b, Provenance{Kernel: "6.1", Note: "seed", Extra: map[string]string{"k": "v"}}, sample, WriteOptions{NoRedact: true}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	for _, s := range []string{
		"",
		"memdoctor capture v1\n-- memdoctor/end --\n",
		"memdoctor capture v1\n-- a.qtxt --\n>x\n-- a/ --\n-- memdoctor/errors --\nb/\tpermission\n-- memdoctor/end --",
		"memdoctor capture v1\r\nnote: \"\\x00\"\r\n-- x --\r\n-- y --\r\n-- memdoctor/end --\r\n",
		"-- a --\n-- --\n--  --\n-- -- --\n",
		"\x00\n-- \xff --\n-- memdoctor/end --",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The splitter is txtar.Parse with line numbers.
		comment, entries, _ := splitArchive(data)
		a := txtar.Parse(data)
		if !bytes.Equal(comment, a.Comment) || len(entries) != len(a.Files) {
			t.Fatalf("splitArchive = %q, %d entries; txtar.Parse = %q, %d files", comment, len(entries), a.Comment, len(a.Files))
		}
		for i, e := range entries {
			if e.name != a.Files[i].Name || !bytes.Equal(e.data, a.Files[i].Data) {
				t.Fatalf("entry %d: splitArchive %q %q, txtar.Parse %q %q", i, e.name, e.data, a.Files[i].Name, a.Files[i].Data)
			}
		}

		// Load never panics; a loaded archive writes back equivalently.
		if fsys, prov, err := Load(bytes.NewReader(data)); err == nil {
			checkRewrite(t, fsys, prov)
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotCapture) {
			t.Fatalf("Load error %v matches neither ErrCorrupt nor ErrNotCapture", err)
		}

		// Write then Load of fuzzed content and provenance is exact.
		prov := Provenance{Note: string(data), Glibc: strings.TrimSpace(string(data)), Extra: map[string]string{"fuzz": string(data)}}
		roundTrip(t, prov, map[string][]byte{
			"proc/1/status":  data,
			"x.qtxt":         data,
			"sys/a/b.qtxt.q": data[:len(data)/2],
		})
		// And of fuzzed names.
		if name := string(data); validName(name) {
			roundTrip(t, Provenance{}, map[string][]byte{name: data})
			roundTrip(t, Provenance{}, map[string][]byte{"d/" + name + "/f": data})
		}
	})
}

// roundTrip writes files with prov, loads the archive and checks that both
// come back exactly.
func roundTrip(t *testing.T, prov Provenance, files map[string][]byte) {
	t.Helper()
	var out bytes.Buffer
	if err := Write(&out, prov, Contents{Files: files}, WriteOptions{NoRedact: true}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	fsys, got, err := Load(&out)
	if err != nil {
		t.Fatalf("Load of Write output: %v\n%q", err, out.Bytes())
	}
	if diff := cmp.Diff(got, prov, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("provenance mismatch (-got +want):\n%s", diff)
	}
	for name, want := range files {
		got, err := fs.ReadFile(fsys, name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("ReadFile(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
}

// checkRewrite writes a loaded archive again and checks that the result
// loads to the same contents, and is canonical.
func checkRewrite(t *testing.T, fsys fs.FS, prov Provenance) {
	t.Helper()
	c, err := ReadContents(fsys)
	if err != nil {
		t.Fatalf("ReadContents: %v", err)
	}
	var b bytes.Buffer
	if err := Write(&b, prov, c, WriteOptions{NoRedact: true}); err != nil {
		t.Fatalf("Write of a loaded archive: %v", err)
	}
	fsys2, prov2, err := Load(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("Load of a rewritten archive: %v\n%q", err, b.Bytes())
	}
	prov.Redacted = false
	if diff := cmp.Diff(prov2, prov, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("rewritten provenance mismatch (-got +want):\n%s", diff)
	}
	c2, err := ReadContents(fsys2)
	if err != nil {
		t.Fatalf("ReadContents: %v", err)
	}
	want := flat(c)
	for k := range want {
		_, name, _ := strings.Cut(k, " ")
		if !strings.HasPrefix(k, "dir ") && isProcFile(name, "environ") {
			delete(want, k)
		}
	}
	if diff := cmp.Diff(flat(c2), want); diff != "" {
		t.Errorf("rewritten contents mismatch (-got +want):\n%s", diff)
	}
	var again bytes.Buffer
	if err := Write(&again, prov2, c2, WriteOptions{NoRedact: true}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), b.Bytes()) {
		t.Errorf("Write is not canonical:\n%q\n%q", again.Bytes(), b.Bytes())
	}
}
