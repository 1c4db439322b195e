package inject

import (
	"bufio"
	"context"
	"debug/elf"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/elfsym"
	"github.com/memdoctor/memdoctor/internal/elfsym/elfsymtest"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// libDir is where Debian puts the allocators' shared objects.
func libDir() string {
	if runtime.GOARCH == "arm64" {
		return "/usr/lib/aarch64-linux-gnu"
	}
	return "/usr/lib/x86_64-linux-gnu"
}

// TestFindMallocServer names the allocator of real processes: a glibc
// program, the same program linked with Debian's jemalloc, run with
// jemalloc or tcmalloc in LD_PRELOAD, linked statically, and redis-server
// (linked with jemalloc).
func TestFindMallocServer(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	je := filepath.Join(libDir(), "libjemalloc.so.2")
	tc := filepath.Join(libDir(), "libtcmalloc_minimal.so.4")
	src, _ := filepath.Abs("../../testdata/programs/retain.c")
	dir := t.TempDir()
	build := func(name string, args ...string) string {
		bin := filepath.Join(dir, name)
		if out, err := exec.Command("gcc", append([]string{"-O1", "-o", bin, src}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", name, err, out)
		}
		return bin
	}
	plain := build("plain")
	for _, c := range []struct {
		name, want, object string
		static             bool
		need               string
		cmd                func() *exec.Cmd
	}{
		{name: "glibc", want: AllocGlibc, object: "libc.so.6", cmd: func() *exec.Cmd { return exec.Command(plain, "1") }},
		{name: "static", want: AllocGlibc, static: true, cmd: func() *exec.Cmd { return exec.Command(build("static", "-static"), "1") }},
		{name: "linked jemalloc", want: AllocJemalloc, object: "libjemalloc.so.2", need: je, cmd: func() *exec.Cmd { return exec.Command(build("je", je), "1") }},
		{name: "preloaded jemalloc", want: AllocJemalloc, object: "libjemalloc.so.2", need: je, cmd: func() *exec.Cmd {
			c := exec.Command(plain, "1")
			c.Env = append(os.Environ(), "LD_PRELOAD="+je)
			return c
		}},
		{name: "preloaded tcmalloc", want: AllocTcmalloc, object: "libtcmalloc_minimal.so.4", need: tc, cmd: func() *exec.Cmd {
			c := exec.Command(plain, "1")
			c.Env = append(os.Environ(), "LD_PRELOAD="+tc)
			return c
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.need != "" {
				if _, err := os.Stat(c.need); err != nil {
					t.Skipf("%s not installed (scripts/install-test-deps.sh)", c.need)
				}
			}
			cmd := c.cmd()
			stdin, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
			if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
				t.Fatalf("not ready: %v", err)
			}
			ms := find(t, cmd.Process.Pid, cmd.Env)
			if ms.Name != c.want || ms.Static != c.static || c.object != "" && !strings.HasPrefix(filepath.Base(ms.Object), c.object) {
				t.Errorf("got %+v, want %s (static %v) in %s", ms, c.want, c.static, c.object)
			}
		})
	}
	t.Run("redis-server", func(t *testing.T) {
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			t.Skip("redis-server not installed (scripts/install-test-deps.sh)")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		_ = l.Close()
		cmd := exec.Command(bin, "--port", port, "--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--bind", "127.0.0.1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		var ms MallocServer
		for i := 0; i < 50; i++ { // until its libraries are mapped
			if ms = find(t, cmd.Process.Pid, nil); ms.Name != "" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if ms.Name != AllocJemalloc {
			t.Errorf("redis-server: got %+v, want jemalloc", ms)
		}
	})
}

func find(t *testing.T, pid int, env []string) MallocServer {
	t.Helper()
	maps, err := procfs.NewFS("/").ProcMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	var preload string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "LD_PRELOAD="); ok {
			preload = v
		}
	}
	ms, err := FindMallocServer(context.Background(), pid, maps, preload)
	if err != nil {
		t.Logf("pid %d: %v", pid, err)
	}
	return ms
}

// benchProcess is the process the benchmarks read (the one named by
// MALLOC_SERVER_BENCH_PID, else this test binary) and its mappings.
func benchProcess(b *testing.B) (int, []procfs.Mapping) {
	b.Helper()
	pid := os.Getpid()
	if v := os.Getenv("MALLOC_SERVER_BENCH_PID"); v != "" {
		pid, _ = strconv.Atoi(v)
	}
	maps, err := procfs.NewFS("/").ProcMaps(pid)
	if err != nil {
		b.Fatal(err)
	}
	return pid, maps
}

// BenchmarkFindMallocServer times naming the allocator of a running
// program (benchProcess), its objects read once and then remembered.
func BenchmarkFindMallocServer(b *testing.B) {
	pid, maps := benchProcess(b)
	for i := 0; i < b.N; i++ {
		ms, err := FindMallocServer(context.Background(), pid, maps, "")
		if i == 0 {
			b.Logf("pid %d: %+v %v", pid, ms, err)
		}
	}
}

// BenchmarkReadObjectCold reads what every object a process maps
// (benchProcess) says of malloc, from its file, the cache emptied first:
// what a check run pays for each distinct object the top processes map
// (a Python process maps 33).
func BenchmarkReadObjectCold(b *testing.B) {
	pid, maps := benchProcess(b)
	var objs []*mappedObject
	seen := map[uint64]bool{}
	for _, m := range maps {
		if m.Inode == 0 || seen[m.Inode] || strings.HasPrefix(m.Path, "[") {
			continue
		}
		seen[m.Inode] = true
		objs = append(objs, &mappedObject{m: m, path: m.Path})
	}
	b.Logf("%d objects", len(objs))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		objectCache.mu.Lock()
		objectCache.m = map[objectKey]cachedObject{}
		objectCache.mu.Unlock()
		for _, o := range objs {
			_, _ = readObject(context.Background(), pid, o, false) // not every mapped file is ELF
		}
	}
}

// TestFindMallocServerHostileObject: a process preloading a copy of
// jemalloc whose .dynsym section header points at 1,500 more entries all
// named by one 1 MiB string (it still loads and serves malloc) is not
// named by the next object (glibc): looked up through its GNU hash table,
// as the dynamic linker binds it, it is jemalloc, and the bomb's entries,
// which no hash chain reaches, are never read; without that table the
// read stops at elfsym's bounds. Either way quickly and without holding
// the names.
func TestFindMallocServerHostileObject(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	je := filepath.Join(libDir(), "libjemalloc.so.2")
	lib, err := os.ReadFile(je)
	if err != nil {
		t.Skipf("%s not installed (scripts/install-test-deps.sh)", je)
	}
	bomb, err := elfsymtest.PatchDynamic(lib, 1500, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hostile := filepath.Join(dir, "libjemalloc.so.2")
	if err := os.WriteFile(hostile, bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	src, _ := filepath.Abs("../../testdata/programs/retain.c")
	bin := filepath.Join(dir, "retain")
	if out, err := exec.Command("gcc", "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	cmd, maps := startRetain(t, bin, "LD_PRELOAD="+hostile)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	ms, err := FindMallocServer(context.Background(), cmd.Process.Pid, maps, hostile)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if hashed := hasSection(t, hostile, ".gnu.hash"); hashed && (err != nil || ms.Name != AllocJemalloc) {
		t.Errorf("named %+v (err %v); want jemalloc, through its hash table", ms, err)
	} else if !hashed && (err == nil || !errors.Is(err, elfsym.ErrBound)) {
		t.Errorf("named %+v (err %v); want the bound's refusal", ms, err)
	}
	if took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("allocated %d MiB reading it", grew>>20)
	}
	t.Logf("answered in %s: %+v %v", took.Round(time.Millisecond), ms, err)
}

// hasSection reports whether the ELF object at path has a section name.
func hasSection(t *testing.T, path, name string) bool {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ef.Close() }()
	return ef.Section(name) != nil
}

// A DT_NEEDED name that is not a file name (libstdc++.so.6, the file
// libstdc++.so.6.0.30) is found among the objects whose name it begins,
// without reading every object the process maps: a program linked with
// libstdc++ is named glibc's having read its executable, libstdc++ and
// libc, not libm, libgcc_s or the dynamic linker.
func TestFindMallocServerReadsTheObjectsOnItsWay(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	src, _ := filepath.Abs("../../testdata/programs/retain.c")
	bin := filepath.Join(t.TempDir(), "retain-cxx")
	if out, err := exec.Command("gcc", "-O1", "-o", bin, src, "-Wl,--no-as-needed", "-lstdc++").CombinedOutput(); err != nil {
		t.Skipf("gcc with libstdc++: %v\n%s", err, out)
	}
	cmd, maps := startRetain(t, bin)
	var cxx bool
	others := map[string]bool{}
	for _, m := range maps {
		b := filepath.Base(m.Path)
		switch {
		case strings.HasPrefix(b, "libstdc++.so.6."):
			cxx = true
		case strings.HasPrefix(b, "libm.so") || strings.HasPrefix(b, "libgcc_s.so") || strings.HasPrefix(b, "ld-linux"):
			others[m.Dev+":"+strconv.FormatUint(m.Inode, 10)+":"+m.Path] = true
		}
	}
	if !cxx || len(others) == 0 {
		t.Skipf("the program maps no versioned libstdc++ or none of libm, libgcc_s, ld-linux: %v", others)
	}
	p := NewObjects()
	ms, err := p.FindMallocServer(context.Background(), cmd.Process.Pid, maps, "")
	if err != nil || ms.Name != AllocGlibc {
		t.Fatalf("got %+v, %v; want glibc's", ms, err)
	}
	var read []string
	for k := range p.m {
		read = append(read, k)
		if others[k] {
			t.Errorf("read %s, which is not on the way to malloc", k)
		}
	}
	t.Logf("objects read: %v", read)
}

// startRetain runs the retain program at bin (env added) until the test
// ends, once it says it is ready, and gives its memory map.
func startRetain(t *testing.T, bin string, env ...string) (*exec.Cmd, []procfs.Mapping) {
	t.Helper()
	cmd := exec.Command(bin, "1")
	cmd.Env = append(os.Environ(), env...)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("%s not ready (a library it loads failed?): %v", bin, err)
	}
	maps, err := procfs.NewFS("/").ProcMaps(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, maps
}

// dynNames reads the DT_NEEDED and DT_SONAME names debug/elf reads, of
// real objects, in one piece of the string table or, past maxNamesSpan,
// each on its own.
func TestDynNamesAsDebugElf(t *testing.T) {
	var paths []string
	for _, p := range []string{"/usr/bin/qemu-system-x86_64", "/usr/bin/python3", "/usr/bin/bash", "/usr/bin/chromium"} {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
		}
	}
	libs, _ := filepath.Glob(filepath.Join(libDir(), "lib*.so.*"))
	paths = append(paths, libs[:min(len(libs), 60)]...)
	if len(paths) < 10 {
		t.Skipf("only %d objects to read", len(paths))
	}
	read := 0
	for _, p := range paths {
		ef, err := elf.Open(p)
		if err != nil {
			continue // a linker script or not ELF
		}
		want := map[elf.DynTag][]string{}
		for _, tag := range []elf.DynTag{elf.DT_NEEDED, elf.DT_SONAME} {
			if v, err := ef.DynString(tag); err == nil && len(v) > 0 {
				want[tag] = v
			}
		}
		_ = ef.Close()
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sf, err := elfsym.Sections(f)
		if err != nil {
			_ = f.Close()
			continue
		}
		for _, span := range []uint64{maxNamesSpan, 0} {
			got, err := dynNamesWithin(sf, span, elf.DT_NEEDED, elf.DT_SONAME)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if got == nil {
				got = map[elf.DynTag][]string{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (span %d): %v, debug/elf %v", p, span, got, want)
			}
		}
		_ = f.Close()
		read++
	}
	if read < 10 {
		t.Fatalf("only %d objects read", read)
	}
}

// BenchmarkFindMallocServerManyObjects names the allocator of a program
// of many libraries, read afresh each time (its objects forgotten):
// qemu-system-x86_64 (31 DT_NEEDED, libc the last, so every one of them
// is read on the way), paused before it runs anything.
func BenchmarkFindMallocServerManyObjects(b *testing.B) {
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		b.Skip("qemu-system-x86_64 not installed (make test-deps installs it)")
	}
	cmd := exec.Command(qemu, "-machine", "none", "-nographic", "-S", "-monitor", "none", "-serial", "none")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var maps []procfs.Mapping
	for range 100 { // until its libraries are mapped
		maps, err = procfs.NewFS("/").ProcMaps(cmd.Process.Pid)
		if err == nil && len(maps) > 100 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		objectCache.mu.Lock()
		objectCache.m = map[objectKey]cachedObject{}
		objectCache.mu.Unlock()
		ms, err := NewObjects().FindMallocServer(context.Background(), cmd.Process.Pid, maps, "")
		if err != nil || ms.Name != AllocGlibc {
			b.Fatalf("%+v, %v", ms, err)
		}
	}
}
