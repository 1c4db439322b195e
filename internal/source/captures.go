package source

// Capture archives written by memdoctor capture: one file, a directory of
// them (*.txtar, *.txtar.gz), or a directory unpacked by capture.Unpack.
// Each capture is one snapshot at its provenance time.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/safeio"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

const captureMagicPrefix = "memdoctor capture "

// isCaptureFile reports whether a file starts with the capture magic line
// (after decompression for gzip).
func isCaptureFile(path string) bool {
	f, err := safeio.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read-only
	r, err := maybeGunzip(f, path)
	if err != nil {
		return false
	}
	head := make([]byte, len(captureMagicPrefix))
	n, _ := io.ReadFull(r, head) // short: not a capture
	return string(head[:n]) == captureMagicPrefix
}

// findCaptures lists the capture archives directly in dir, sorted by name.
func findCaptures(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".txtar") && !strings.HasSuffix(n, ".txtar.gz") {
			continue
		}
		p := filepath.Join(dir, n)
		if isCaptureFile(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

type captureRef struct {
	file  string
	dir   bool // unpacked capture directory
	prov  capture.Provenance
	mtime bool // time taken from the file's modification time
}

func readCaptures(path string, opt IngestOptions, w *writer) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	var refs []*captureRef
	fallbackInst := baseName(path, ".gz", ".txtar")
	switch {
	case !st.IsDir():
		refs = append(refs, &captureRef{file: path})
	case exists(filepath.Join(path, "memdoctor", "provenance")):
		refs = append(refs, &captureRef{file: path, dir: true})
	default:
		files, err := findCaptures(path)
		if err != nil {
			return err
		}
		var other []string
		ents, _ := os.ReadDir(path) // listed by findCaptures already
		for _, e := range ents {
			p := filepath.Join(path, e.Name())
			if !strings.HasPrefix(e.Name(), ".") && !slices.Contains(files, p) {
				other = append(other, e.Name())
			}
		}
		if len(other) > 0 {
			w.notes.add(sample.Note{Source: path, Message: fmt.Sprintf("%d entries are not capture archives, ignored: %s",
				len(other), listSome(other, 10))})
		}
		for _, f := range files {
			refs = append(refs, &captureRef{file: f})
		}
	}
	// Order by provenance time: read the headers first.
	kept := refs[:0]
	for _, r := range refs {
		if err := r.readProvenance(); err != nil {
			if !opt.Lenient {
				return err
			}
			w.skipped++
			w.notes.add(sample.Note{Source: r.file, Message: "capture skipped: " + err.Error(), Hides: "that snapshot"})
			continue
		}
		if r.mtime {
			w.notes.add(sample.Note{Source: r.file, Message: "capture has no time in its provenance: its file modification time is used"})
		}
		kept = append(kept, r)
	}
	refs = kept
	slices.SortStableFunc(refs, func(a, b *captureRef) int { return a.prov.Time.Compare(b.prov.Time) })
	if len(refs) == 0 {
		return fmt.Errorf("%s: no readable capture archive", path)
	}
	prog := newProgress(opt.Progress, int64(len(refs)))
	b := newBatcher(w)
	last := map[string]time.Time{}
	total := len(refs)
	var firstSkip error
	err = collectOrdered(len(refs), opt.Workers,
		func(i int) (*collect.Result, error) {
			r := refs[i]
			fsys, err := r.load()
			if err != nil {
				return nil, err
			}
			pfs := procfs.NewFSFrom(fsys, r.prov.PageSize)
			pfs.GlibcBanner = r.prov.Glibc
			co := collect.Profile(collect.Check, opt.Top, false) // as check --capture reads it
			co.SysctlVM = nil                                    // but every sysctl the capture holds, for export
			co.Now = func() time.Time { return r.prov.Time }
			res, err := collect.Collect(pfs, co)
			if err != nil {
				return nil, fmt.Errorf("capture %s: %w", r.file, err)
			}
			inst := opt.Instance
			if inst == "" {
				if h, err := fs.ReadFile(fsys, "proc/sys/kernel/hostname"); err == nil && strings.TrimSpace(string(h)) != "" {
					inst = sample.HostName(strings.TrimSpace(string(h)))
				}
			}
			if inst == "" {
				inst = fallbackInst
			}
			res.Snapshot.Instance = inst
			return res, nil
		},
		func(i int, res *collect.Result, err error) error {
			prog.update(int64(i))
			r := refs[i]
			if err != nil {
				if !opt.Lenient {
					return err
				}
				w.skipped++
				if firstSkip == nil {
					firstSkip = err
				}
				w.notes.add(sample.Note{Source: r.file, Message: "capture skipped: " + err.Error(), Hides: "that snapshot"})
				return nil
			}
			inst := res.Snapshot.Instance
			if t, ok := last[inst]; ok && !res.Snapshot.Time.After(t) {
				w.skipped++
				w.notes.add(sample.Note{Source: r.file, Message: fmt.Sprintf("capture of %s at %s duplicates the time of another capture: skipped",
					inst, t.UTC().Format(time.RFC3339))})
				return nil
			}
			last[inst] = res.Snapshot.Time
			for _, n := range res.Notes {
				w.notes.addOf(n, total)
			}
			dropTimings(&res.Snapshot)
			return b.add(inst, &res.Snapshot)
		})
	if err != nil {
		return err
	}
	if err := b.flush(); err != nil {
		return err
	}
	if w.snapshots == 0 && firstSkip != nil {
		return fmt.Errorf("%s: no capture could be read; the first problem: %w", path, firstSkip)
	}
	prog.finish()
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// readProvenance reads the header of a capture without loading it.
func (r *captureRef) readProvenance() error {
	if r.dir {
		prov, err := capture.ReadProvenanceDir(r.file)
		if err != nil {
			return err
		}
		r.prov = prov
	} else {
		f, err := safeio.Open(r.file)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // read-only
		zr, err := maybeGunzip(f, r.file)
		if err != nil {
			return err
		}
		head := make([]byte, 64<<10)
		n, err := io.ReadFull(zr, head)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return &InputError{File: r.file, Err: err}
		}
		head = head[:n]
		if bytes.HasPrefix(head, []byte("-- ")) {
			head = nil
		} else if i := bytes.Index(head, []byte("\n-- ")); i >= 0 {
			head = head[:i+1]
		}
		prov, err := capture.ParseProvenance(head)
		if err != nil {
			return &InputError{File: r.file, Err: err}
		}
		r.prov = prov
	}
	if r.prov.Time.IsZero() {
		st, err := os.Stat(r.file)
		if err != nil {
			return err
		}
		r.prov.Time, r.mtime = st.ModTime().UTC(), true
	}
	return nil
}

func (r *captureRef) load() (fs.FS, error) {
	if r.dir {
		fsys, _, err := capture.OpenDir(r.file)
		return fsys, err
	}
	f, err := safeio.Open(r.file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	zr, err := maybeGunzip(f, r.file)
	if err != nil {
		return nil, err
	}
	fsys, _, err := capture.Load(zr)
	if err != nil {
		return nil, &InputError{File: r.file, Err: err}
	}
	return fsys, nil
}
