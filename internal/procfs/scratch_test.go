package procfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// scratchRoot is a root holding the captured host's files for two
// processes, 1 and 2, whose maps and status differ, read through the live
// host's reader (safeio, the kept buffers).
func scratchRoot(t *testing.T) (FS, string) {
	t.Helper()
	root := t.TempDir()
	put := func(name string, b []byte) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	maps := readTestdata(t, "host/proc/7130/maps")
	status := readTestdata(t, "host/proc/7130/status")
	put("proc/1/maps", maps)
	put("proc/1/status", status)
	// Process 2: fewer, longer lines, and another name: what a later read
	// writes over a buffer still held would show in process 1's results.
	lines := strings.SplitAfter(string(maps), "\n")
	put("proc/2/maps", []byte(strings.ReplaceAll(strings.Join(lines[:10], ""), "/usr/lib", "/usr/lib/elsewhere/quite/far/down")))
	put("proc/2/status", bytes.Replace(status, []byte("Name:\t"), []byte("Name:\tzzzzzzzzzzzzzz"), 1))
	put("proc/slabinfo", readTestdata(t, "host/proc/slabinfo"))
	put("proc/sys/vm/swappiness", []byte("60\n"))
	put("proc/sys/vm/overcommit_memory", []byte("  1 \n"))
	return NewFS(root), root
}

// TestKeptBufferNotAliased: what a reader returns keeps its values after
// later reads reuse the buffer it was read into, sequentially and from
// many goroutines at once.
func TestKeptBufferNotAliased(t *testing.T) {
	f, _ := scratchRoot(t)
	if _, ok := f.fsys.(intoReader); !ok {
		t.Fatal("the live host's FS does not read into kept buffers")
	}
	// The expected values, parsed from copies of the files.
	want := map[string]any{}
	read := map[string]func() (any, error){
		"maps 1":    func() (any, error) { return f.ProcMaps(1) },
		"maps 2":    func() (any, error) { return f.ProcMaps(2) },
		"status 1":  func() (any, error) { return f.ProcStatusBrief(1) },
		"status 2":  func() (any, error) { return f.ProcStatus(2) },
		"slabinfo":  func() (any, error) { return f.Slabinfo() },
		"swappines": func() (any, error) { return f.Sysctl("vm/swappiness") },
		"sysctl vm": func() (any, error) { v, _, err := f.SysctlVM(); return v, err },
	}
	for name, fn := range read {
		v, err := fn()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want[name] = deepCopy(t, v)
	}
	if got := want["swappines"]; got != "60" {
		t.Fatalf("vm/swappiness read %q", got)
	}
	if got := want["sysctl vm"].(map[string]string)["overcommit_memory"]; got != "1" {
		t.Fatalf("vm/overcommit_memory read %q", got)
	}
	// Sequentially: every result held while all the others are read again.
	held := map[string]any{}
	for name, fn := range read {
		held[name], _ = fn()
		for _, other := range read {
			if _, err := other(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, v := range held {
		if !reflect.DeepEqual(v, want[name]) {
			t.Errorf("%s changed after later reads", name)
		}
	}
	// At once, from goroutines that each hold what they read.
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []any
			var names []string
			for i := range 50 {
				for name, fn := range read {
					if (i+g)%3 != 0 {
						continue
					}
					v, err := fn()
					if err != nil {
						errs <- err.Error()
						return
					}
					mine, names = append(mine, v), append(names, name)
				}
			}
			for i, v := range mine {
				if !reflect.DeepEqual(v, want[names[i]]) {
					errs <- names[i] + " changed while other goroutines read"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// deepCopy copies v through its printed form's parse: values made of
// strings, numbers, maps and slices, with nothing shared with v.
func deepCopy(t *testing.T, v any) any {
	t.Helper()
	c := reflect.New(reflect.TypeOf(v)).Elem()
	copyValue(c, reflect.ValueOf(v))
	if !reflect.DeepEqual(c.Interface(), v) {
		t.Fatalf("copy of %T differs", v)
	}
	return c.Interface()
}

func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(strings.Clone(src.String()))
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			copyValue(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeMapWithSize(src.Type(), src.Len()))
		for _, k := range src.MapKeys() {
			kc := reflect.New(k.Type()).Elem()
			copyValue(kc, k)
			vc := reflect.New(src.Type().Elem()).Elem()
			copyValue(vc, src.MapIndex(k))
			dst.SetMapIndex(kc, vc)
		}
	case reflect.Struct:
		for i := range src.NumField() {
			if !dst.Field(i).CanSet() {
				panic(fmt.Sprintf("unexported field %s of %s", src.Type().Field(i).Name, src.Type()))
			}
			copyValue(dst.Field(i), src.Field(i))
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.New(src.Type().Elem()))
		copyValue(dst.Elem(), src.Elem())
	default:
		dst.Set(src)
	}
}

// TestKeptBufferBounded: a file larger than a kept buffer may be is read
// whole, after smaller ones, and its buffer is not kept; the buffers kept
// are few and small.
func TestKeptBufferBounded(t *testing.T) {
	f, root := scratchRoot(t)
	if _, err := f.ProcStatus(1); err != nil { // a small buffer kept
		t.Fatal(err)
	}
	// A hostile maps of 1 MiB: 8,000 lines, each naming a long path.
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "%08x-%08x r--p 00000000 08:01 %d /x/%s\n", i<<12, (i+1)<<12, i, strings.Repeat("p", 100))
	}
	if err := os.MkdirAll(filepath.Join(root, "proc/3"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/3/maps"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := ParseMaps([]byte(b.String()), "proc/3/maps")
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.ProcMaps(3)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("a 1 MiB maps: %d mappings (%v), want %d", len(got), err, len(want))
	}
	scratch.mu.Lock()
	defer scratch.mu.Unlock()
	if len(scratch.free) > scratchKeep {
		t.Errorf("%d buffers kept, want at most %d", len(scratch.free), scratchKeep)
	}
	for _, k := range scratch.free {
		if cap(k) > scratchMax {
			t.Errorf("a buffer of %d bytes kept, over %d", cap(k), scratchMax)
		}
	}
}

// TestSysctlAllocatesTheValues: reading the host's vm sysctls costs the
// heap their values and names, not a read buffer of 4 KiB for each (a
// recorder's sample reads some 50 of them, and the processes' status,
// maps and smaps_rollup the same way).
func TestSysctlAllocatesTheValues(t *testing.T) {
	if _, err := os.Stat("/proc/sys/vm/swappiness"); err != nil {
		t.Skip("no /proc/sys/vm")
	}
	f := NewFS("/")
	vals, _, err := f.SysctlVM()
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	for range n {
		if _, _, err := f.SysctlVM(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&b)
	per := float64(b.TotalAlloc-a.TotalAlloc) / n / float64(len(vals))
	t.Logf("%d sysctls: %.0f bytes allocated for each", len(vals), per)
	// Its directory entry, the path, the map's slot and the value: some
	// 300 bytes; a buffer a file was 4 KiB more.
	if per > 1024 {
		t.Errorf("reading a vm sysctl allocates %.0f bytes, want under 1 KiB", per)
	}
	// A process' status and smaps_rollup the same way: what the parse
	// keeps, under the 4 KiB a read buffer cost before it.
	self := os.Getpid()
	for name, read := range map[string]func() error{
		"status":       func() error { _, err := f.ProcStatusBrief(self); return err },
		"smaps_rollup": func() error { _, err := f.ProcSmapsRollup(self); return err },
	} {
		_ = read()
		runtime.ReadMemStats(&a)
		for range n {
			if err := read(); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&b)
		per := float64(b.TotalAlloc-a.TotalAlloc) / n
		t.Logf("%s: %.0f bytes allocated a read", name, per)
		if per > 4096 {
			t.Errorf("reading a process' %s allocates %.0f bytes, want under 4 KiB", name, per)
		}
	}
}
