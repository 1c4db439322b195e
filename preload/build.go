package preload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// ErrNoCompiler is returned by Build when no C compiler is found and no
// build of the same sources is cached.
var ErrNoCompiler = errors.New("no C compiler found")

// PackagedLib is the library a distribution package installs beside the
// binary, built from the same sources (the Debian package sets it to
// /usr/lib/memdoctor/libmemdoctor_preload.so with -ldflags -X). Build
// returns it, when it is there, unless asked for a cache directory or a
// compiler of its own. Empty in a plain build.
var PackagedLib = ""

// BuildOptions say where to build and with what.
type BuildOptions struct {
	// CacheDir holds the builds, one directory per source and compiler
	// version; DefaultCacheDir() when empty.
	CacheDir string
	// CC is the compiler command; $CC, then cc, gcc, clang when empty.
	CC string
}

// DefaultCacheDir is /var/cache/memdoctor for root (a place other users'
// services can load the library from), else $XDG_CACHE_HOME/memdoctor or
// ~/.cache/memdoctor.
func DefaultCacheDir() (string, error) {
	if os.Geteuid() == 0 {
		return "/var/cache/memdoctor", nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "memdoctor"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (%w): set XDG_CACHE_HOME or use --cache-dir", err)
	}
	return filepath.Join(h, ".cache", "memdoctor"), nil
}

// Build returns PackagedLib when it applies; otherwise it compiles the
// embedded sources into CacheDir, unless a build of the
// same sources with the same compiler version is already there, and returns
// the library's absolute path. Builds are made in a temporary directory and
// renamed into place, so concurrent callers never see half a library. With
// no compiler it falls back to a cached build of the same sources made by
// any compiler.
func Build(ctx context.Context, opt BuildOptions) (string, error) {
	if PackagedLib != "" && opt.CacheDir == "" && opt.CC == "" {
		if st, err := os.Stat(PackagedLib); err == nil && st.Mode().IsRegular() {
			return PackagedLib, nil
		}
	}
	dir := opt.CacheDir
	if dir == "" {
		var err error
		if dir, err = DefaultCacheDir(); err != nil {
			return "", err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	files, srcKey, err := sourceFiles()
	if err != nil {
		return "", err
	}
	cc, err := findCompiler(opt.CC)
	if err != nil {
		if cached := anyCached(dir, srcKey); cached != "" {
			return cached, nil
		}
		return "", err
	}
	version, err := exec.CommandContext(ctx, cc[0], append(cc[1:len(cc):len(cc)], "--version")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w: %s", strings.Join(cc, " "), err, bytes.TrimSpace(version))
	}
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%s\n", runtime.GOARCH, version, // hash writes never fail
		strings.Join(CFLAGS, " "), strings.Join(LDFLAGS, " "), strings.Join(LDLIBS, " "))
	final := filepath.Join(dir, "preload-"+srcKey+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	lib := filepath.Join(final, LibName)
	if st, err := os.Stat(lib); err == nil && st.Mode().IsRegular() {
		return lib, nil
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cache directory: %w (use --cache-dir)", err)
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", fmt.Errorf("cache directory: %w (use --cache-dir)", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // after a successful rename there is nothing left here
	var srcs []string
	for name, data := range files {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return "", err
		}
		if strings.HasSuffix(name, ".c") {
			srcs = append(srcs, p)
		}
	}
	sort.Strings(srcs)
	args := append(append(append(append(cc[1:len(cc):len(cc)], CFLAGS...), LDFLAGS...),
		"-o", filepath.Join(tmp, LibName)), srcs...)
	args = append(args, LDLIBS...)
	cmd := exec.CommandContext(ctx, cc[0], args...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("compiling %s: %s %s: %w\n%s", LibName, cc[0], strings.Join(args, " "), err, out)
	}
	// MkdirTemp made it 0700: other users' processes must be able to load it.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		// Someone else finished the same build first: use theirs.
		if st, serr := os.Stat(lib); serr == nil && st.Mode().IsRegular() {
			return lib, nil
		}
		return "", fmt.Errorf("cache directory: %w", err)
	}
	return lib, nil
}

// sourceFiles returns the embedded files by slash path, and a key of their
// names and contents.
func sourceFiles() (map[string][]byte, string, error) {
	files := map[string][]byte{}
	var names []string
	err := fs.WalkDir(sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(p)
		if err != nil {
			return err
		}
		files[p] = b
		names = append(names, p)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		_, _ = fmt.Fprintf(h, "%s %d\n", n, len(files[n]))
		h.Write(files[n])
	}
	return files, hex.EncodeToString(h.Sum(nil))[:12], nil
}

// findCompiler returns the compiler command: cc if set, else $CC (which may
// carry arguments, as in make), else the first of cc, gcc, clang on PATH.
func findCompiler(cc string) ([]string, error) {
	if cc == "" {
		cc = os.Getenv("CC")
	}
	if f := strings.Fields(cc); len(f) > 0 {
		p, err := exec.LookPath(f[0])
		if err != nil {
			return nil, fmt.Errorf("%w: CC=%q: %w", ErrNoCompiler, cc, err)
		}
		return append([]string{p}, f[1:]...), nil
	}
	for _, c := range []string{"cc", "gcc", "clang"} {
		if p, err := exec.LookPath(c); err == nil {
			return []string{p}, nil
		}
	}
	return nil, fmt.Errorf("%w (looked for $CC, cc, gcc and clang on PATH): install one with "+
		"\"apt-get install gcc\" (Debian, Ubuntu) or \"dnf install gcc\" (Fedora, RHEL), or run "+
		"\"make -C preload\" on a machine of the same architecture and copy %s", ErrNoCompiler, LibName)
}

// anyCached returns a cached build of the same sources by any compiler, or "".
func anyCached(dir, srcKey string) string {
	m, _ := filepath.Glob(filepath.Join(dir, "preload-"+srcKey+"-*", LibName))
	sort.Strings(m)
	for _, p := range m {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}
