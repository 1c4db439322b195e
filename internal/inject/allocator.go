package inject

// Which allocator serves a process' malloc: the object whose malloc the
// executable's references bind to. The dynamic linker looks a symbol up in
// the executable, then in the LD_PRELOAD objects, then in the executable's
// DT_NEEDED objects breadth first (each one's own DT_NEEDED after all of
// its level); the first object that defines (exports, in .dynsym) malloc
// serves it. memdoctor's preload library is skipped: it forwards malloc to
// the next definition. That order is followed here over the objects the
// process maps (/proc/PID/maps), each opened as Resolve opens libc
// (map_files, else the process' root; safeio) and its symbols read within
// elfsym's bounds. An executable linked statically (or one that defines
// and exports malloc itself) is named by the allocator-specific functions
// it defines (mallctl, tc_malloc or MallocExtension, mi_malloc).

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/elfsym"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Allocators memdoctor tells apart.
const (
	AllocGlibc    = "glibc"
	AllocJemalloc = "jemalloc"
	AllocTcmalloc = "tcmalloc"
	AllocMimalloc = "mimalloc"
	AllocMusl     = "musl"
	AllocOther    = "other"
)

// MallocServer is the allocator that serves a process' malloc.
type MallocServer struct {
	Name   string // AllocGlibc, AllocJemalloc, ...
	Object string // the object defining the malloc bound, as mapped
	Static bool   // defined in the executable itself
}

// Bounds of the walk: objects looked at, DT_NEEDED entries and name bytes
// read from one object.
const (
	maxObjects   = 512
	maxDynamic   = 64 << 10
	maxNeededLen = 256
)

// allocatorMarks are functions only one allocator defines, looked for in
// the object that defines malloc.
var allocatorMarks = []struct{ name, alloc string }{
	{"mallctl", AllocJemalloc}, {"je_mallctl", AllocJemalloc}, {"je_malloc", AllocJemalloc},
	{"tc_malloc", AllocTcmalloc}, {"MallocExtension_GetNumericProperty", AllocTcmalloc}, {"TCMallocInternalMalloc", AllocTcmalloc},
	{"mi_malloc", AllocMimalloc}, {"mi_collect", AllocMimalloc},
	{"gnu_get_libc_version", AllocGlibc}, {"__libc_malloc", AllocGlibc},
}

// mappedObject is one file the process maps, by its first mapping.
type mappedObject struct {
	m      procfs.Mapping
	path   string // without " (deleted)"
	base   string // path.Base(path), made once ("": not yet)
	soname string // read when a DT_NEEDED name matches no path
	read   bool
}

// FindMallocServer names the allocator that serves malloc in process pid,
// whose maps are given; preload is its LD_PRELOAD ("" when unset). A
// caller naming the allocators of many processes at once uses one
// Objects for all of them.
func FindMallocServer(ctx context.Context, pid int, maps []procfs.Mapping, preload string) (MallocServer, error) {
	return NewObjects().FindMallocServer(ctx, pid, maps, preload)
}

// Objects remembers what the objects mapped by the processes of one pass
// said (by the device, inode and path their mappings name), so that an
// object many processes map, such as libc, is opened and read once in the
// pass however many processes map it. A pass is short and sees the files
// as they were when it started; the next pass opens them again (and reads
// only those changed since: objectCache). Safe for concurrent use.
type Objects struct {
	mu   sync.Mutex
	m    map[string]*passObject
	exes map[int]string // pid -> its executable's key in m
}

// passObject is one object's entry in a pass.
type passObject struct {
	entry cachedObject
	err   error // the object could not be read
}

// NewObjects starts a pass.
func NewObjects() *Objects { return &Objects{m: map[string]*passObject{}, exes: map[int]string{}} }

// GoVersion is the Go version in the build information of pid's
// executable as read in this pass ("" for an executable that has none);
// read is false when this pass did not read it.
func (p *Objects) GoVersion(pid int) (version string, read bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[p.exes[pid]]
	if !ok || e.err != nil || !e.entry.exeRead {
		return "", false
	}
	return e.entry.goVersion, true
}

func passKey(m procfs.Mapping) string {
	return m.Dev + ":" + strconv.FormatUint(m.Inode, 10) + ":" + m.Path
}

// FindMallocServer is FindMallocServer within the pass.
func (p *Objects) FindMallocServer(ctx context.Context, pid int, maps []procfs.Mapping, preload string) (MallocServer, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var objs []*mappedObject
	seen := map[string]bool{}
	for _, m := range maps {
		if m.Path == "" || m.Inode == 0 || strings.HasPrefix(m.Path, "[") {
			continue
		}
		k := m.Dev + ":" + strconv.FormatUint(m.Inode, 10)
		if seen[k] {
			continue
		}
		seen[k] = true
		if len(objs) == maxObjects {
			break
		}
		objs = append(objs, &mappedObject{m: m, path: strings.TrimSuffix(m.Path, " (deleted)")})
	}
	exe := exeObject(pid, objs)
	if exe == nil {
		return MallocServer{}, fmt.Errorf("%w: the executable of pid %d is not among its mappings", ErrNoSymbol, pid)
	}
	p.mu.Lock()
	p.exes[pid] = passKey(exe.m)
	p.mu.Unlock()
	order := []*mappedObject{exe}
	queued := map[*mappedObject]bool{exe: true}
	for _, pr := range strings.FieldsFunc(preload, func(r rune) bool { return r == ' ' || r == ':' || r == '\t' }) {
		if o := p.byName(ctx, pid, objs, pr); o != nil && !queued[o] {
			queued[o] = true
			order = append(order, o)
		}
	}
	// Breadth first over DT_NEEDED, checking each object as it comes.
	for i := 0; i < len(order); i++ {
		if err := ctx.Err(); err != nil {
			return MallocServer{}, fmt.Errorf("%w: reading the objects of pid %d: %w", ErrNoSymbol, pid, err)
		}
		o := order[i]
		ms, needed, err := p.lookMalloc(ctx, pid, o, o == exe)
		if err != nil {
			// An object that cannot be read (refused past elfsym's
			// bounds, replaced on disk) may be the one defining malloc:
			// unknown, rather than the next one's name.
			return MallocServer{}, fmt.Errorf("which allocator serves pid %d's malloc is not known: %w", pid, err)
		}
		if ms != nil {
			return *ms, nil
		}
		for _, n := range needed {
			if o := p.byName(ctx, pid, objs, n); o != nil && !queued[o] {
				queued[o] = true
				order = append(order, o)
			}
		}
	}
	return MallocServer{}, fmt.Errorf("%w: no object pid %d maps defines malloc", ErrNoSymbol, pid)
}

// exeObject is the mapped object that is /proc/PID/exe (same inode and
// device).
func exeObject(pid int, objs []*mappedObject) *mappedObject {
	fi, err := os.Stat(procfs.PIDPath(pid, "exe"))
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	dev := fmt.Sprintf("%02x:%02x", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev))) //nolint:unconvert // int32 on darwin
	for _, o := range objs {
		if o.m.Inode == st.Ino && o.m.Dev == dev {
			return o
		}
	}
	for _, o := range objs {
		if o.m.Inode == st.Ino {
			return o
		}
	}
	return nil
}

// byName finds the mapped object a DT_NEEDED or LD_PRELOAD name loads: the
// same path, the same file name, else the object whose DT_SONAME it is.
func (p *Objects) byName(ctx context.Context, pid int, objs []*mappedObject, name string) *mappedObject {
	if name == "" {
		return nil
	}
	slash := strings.Contains(name, "/")
	for _, o := range objs {
		if o.path == name || !slash && o.baseName() == name {
			return o
		}
	}
	if slash {
		name = path.Base(name)
	}
	// The file a SONAME names is usually that name and a version
	// (libstdc++.so.6: libstdc++.so.6.0.30): those are read first, and
	// every object only when none of them is it (reading one reads its
	// symbol table too).
	versioned := name + "."
	for _, o := range objs {
		if !o.read && strings.HasPrefix(o.baseName(), versioned) {
			o.read = true
			if c, err := p.describe(ctx, pid, o, false); err == nil {
				o.soname = c.soname
			}
			if o.soname == name {
				return o
			}
		}
	}
	for _, o := range objs {
		if !o.read {
			o.read = true
			if c, err := p.describe(ctx, pid, o, false); err == nil {
				o.soname = c.soname
			}
		}
		if o.soname == name {
			return o
		}
	}
	return nil
}

// baseName is the object's file name, made on first use (byName asks it
// of every object for every DT_NEEDED name).
func (o *mappedObject) baseName() string {
	if o.base == "" {
		o.base = path.Base(o.path)
	}
	return o.base
}

// lookMalloc reports which allocator an object is if it defines malloc
// (nil if not), with its DT_NEEDED names.
func (p *Objects) lookMalloc(ctx context.Context, pid int, o *mappedObject, isExe bool) (*MallocServer, []string, error) {
	c, err := p.describe(ctx, pid, o, isExe)
	if err != nil {
		return nil, nil, err
	}
	if c.alloc != "" {
		return &MallocServer{Name: c.alloc, Object: o.path, Static: isExe}, c.needed, nil
	}
	if isExe && c.static != "" {
		return &MallocServer{Name: c.static, Object: o.path, Static: true}, c.needed, nil
	}
	return nil, c.needed, nil
}

// describe reads what one object says of malloc (cachedObject), opening
// it at most once in the pass; isExe also reads the whole symbol table of
// an executable linked statically.
func (p *Objects) describe(ctx context.Context, pid int, o *mappedObject, isExe bool) (cachedObject, error) {
	k := passKey(o.m)
	p.mu.Lock()
	e, ok := p.m[k]
	p.mu.Unlock()
	if ok && (e.err != nil || !isExe || e.entry.exeRead) {
		return e.entry, e.err
	}
	c, err := readObject(ctx, pid, o, isExe)
	if ctx.Err() != nil {
		return c, err // this caller's time ran out, not the object's fault
	}
	p.mu.Lock()
	p.m[k] = &passObject{entry: c, err: err}
	p.mu.Unlock()
	return c, err
}

// readObject opens one object and reads what it says of malloc.
func readObject(ctx context.Context, pid int, o *mappedObject, isExe bool) (c cachedObject, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: malformed ELF (%v)", ErrNoSymbol, o.path, r)
		}
	}()
	f, info, err := openMappedFD(pid, o.m)
	if err != nil {
		return c, err
	}
	defer func() { _ = f.Close() }() // read-only
	key := objectKey{dev: info.Dev, ino: info.Ino, size: uint64(info.Size), ctime: info.CtimeNS}
	if c, ok := objectCache.get(key); ok && (!isExe || c.exeRead) {
		return c, nil
	}
	// The sections' buffers go back for the next object once this one is
	// read: nothing of them is kept (the names kept are copies).
	ef, release, err := elfsym.SectionsReuse(f)
	if err != nil {
		return c, fmt.Errorf("%w: %s: %w", ErrNoSymbol, o.path, err)
	}
	defer release()
	dyn, _ := dynNames(ef, elf.DT_NEEDED, elf.DT_SONAME)
	c.needed = dyn[elf.DT_NEEDED]
	if n := dyn[elf.DT_SONAME]; len(n) > 0 {
		c.soname = n[0]
	}
	names := []string{"malloc"}
	for _, a := range allocatorMarks {
		names = append(names, a.name)
	}
	exp, derr := elfsym.Exported(ctx, ef, elfsym.Default, names...)
	if derr != nil && !errors.Is(derr, elfsym.ErrNoTable) {
		return c, fmt.Errorf("%w: %s: %w", ErrNoSymbol, o.path, derr)
	}
	if _, ok := exp["malloc"]; ok && path.Base(o.path) != preloadLibName { // the library forwards to the next definition
		c.alloc = allocatorOf(exp, o.path)
	}
	// An executable without .dynsym is linked statically: malloc, if it
	// has one, is its own. (A Go program without cgo has no malloc: its
	// table, often 100k entries, is not read.)
	static := derr != nil && ef.Section(".go.buildinfo") == nil
	if isExe {
		c.exeRead = true
		c.goVersion, _ = elfsym.GoVersion(f, ef)
	}
	if isExe && c.alloc == "" && static {
		all, err := elfsym.Functions(ctx, ef, elfsym.Default)
		if err != nil {
			return c, fmt.Errorf("%w: %s, linked statically: %w", ErrNoSymbol, o.path, err)
		}
		defined := map[string]elfsym.Symbol{}
		for _, s := range all {
			defined[s.Name] = s
		}
		if _, ok := defined["malloc"]; ok {
			c.static = allocatorOf(defined, o.path)
		}
	}
	objectCache.put(key, c)
	return c, nil
}

// preloadLibName is memdoctor's preload library (preload.LibName; inject
// does not import preload).
const preloadLibName = "libmemdoctor_preload.so"

// allocatorOf names the allocator of an object that defines malloc.
func allocatorOf(defined map[string]elfsym.Symbol, p string) string {
	for _, a := range allocatorMarks {
		if _, ok := defined[a.name]; ok {
			return a.alloc
		}
	}
	b := path.Base(p)
	switch {
	case strings.HasPrefix(b, "libc.musl") || strings.HasPrefix(b, "ld-musl"):
		return AllocMusl
	case IsLibc(p):
		return AllocGlibc
	}
	return AllocOther
}

// dynNames reads the names of some tags of ef's dynamic section, by tag,
// within bounds (debug/elf's DynString copies every entry's string
// whole): a section of at most maxDynamic bytes, read once, names of at
// most maxNeededLen.
func dynNames(ef *elf.File, tags ...elf.DynTag) (map[elf.DynTag][]string, error) {
	return dynNamesWithin(ef, maxNamesSpan, tags...)
}

// dynNamesWithin is dynNames reading the names in one piece of the string
// table when they lie within span bytes.
func dynNamesWithin(ef *elf.File, span uint64, tags ...elf.DynTag) (map[elf.DynTag][]string, error) {
	ds := ef.Section(".dynamic")
	if ds == nil || ds.Type == elf.SHT_NOBITS || ds.ReaderAt == nil {
		return nil, nil
	}
	if ds.Size > maxDynamic {
		return nil, fmt.Errorf("%w: .dynamic of %d bytes", elfsym.ErrBound, ds.Size)
	}
	if int(ds.Link) >= len(ef.Sections) || ef.Sections[ds.Link].ReaderAt == nil {
		return nil, fmt.Errorf("%w: .dynamic links to no string table", ErrNoSymbol)
	}
	str := ef.Sections[ds.Link]
	data := make([]byte, ds.Size)
	if _, err := ds.ReadAt(data, 0); err != nil {
		return nil, err
	}
	size := 16
	if ef.Class == elf.ELFCLASS32 {
		size = 8
	}
	type entry struct {
		tag elf.DynTag
		off uint64
	}
	var want []entry
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for i := 0; i+size <= len(data); i += size {
		var t, v uint64
		if size == 16 {
			t, v = ef.ByteOrder.Uint64(data[i:]), ef.ByteOrder.Uint64(data[i+8:])
		} else {
			t, v = uint64(ef.ByteOrder.Uint32(data[i:])), uint64(ef.ByteOrder.Uint32(data[i+4:]))
		}
		tag := elf.DynTag(t)
		if tag == elf.DT_NULL {
			break
		}
		if !slices.Contains(tags, tag) || v >= str.Size {
			continue
		}
		want = append(want, entry{tag, v})
		lo, hi = min(lo, v), max(hi, v)
	}
	if len(want) == 0 {
		return nil, nil
	}
	// The names are read in one piece of the string table when they lie
	// within maxNamesSpan of each other (a linker writes them together, at
	// its start: a program's thirty DT_NEEDED names were thirty reads),
	// else each on its own.
	var piece []byte
	if end := min(hi+maxNeededLen, str.Size); end-lo <= span {
		piece = make([]byte, end-lo)
		if n, _ := str.ReadAt(piece, int64(lo)); n < len(piece) {
			piece = piece[:n]
		}
	}
	var out map[elf.DynTag][]string
	var buf []byte
	for _, w := range want {
		var name []byte
		if piece != nil {
			if w.off-lo < uint64(len(piece)) {
				name = piece[w.off-lo : min(uint64(len(piece)), w.off-lo+maxNeededLen)]
			}
		} else {
			if buf == nil {
				buf = make([]byte, maxNeededLen)
			}
			n, _ := str.ReadAt(buf, int64(w.off))
			name = buf[:n]
		}
		if j := bytes.IndexByte(name, 0); j > 0 {
			if out == nil {
				out = map[elf.DynTag][]string{}
			}
			out[w.tag] = append(out[w.tag], string(name[:j]))
		}
	}
	return out, nil
}

// maxNamesSpan bounds the piece of a string table read at once for an
// object's DT_NEEDED and DT_SONAME names.
const maxNamesSpan = 64 << 10

// objectKey identifies an object's file: device, inode, size and change
// time (a file rewritten in place is read again).
type objectKey struct {
	dev, ino, size uint64
	ctime          int64
}

// cachedObject is what one object says of malloc: the allocator if it
// defines (exports) malloc, its DT_NEEDED names and DT_SONAME, and for an
// executable linked statically (no .dynsym) the allocator its whole
// symbol table names (static), and its Go build version (goVersion, ""
// when not Go, kept for the runtimes collector, which then need not open
// it again): exeRead says these were read.
type cachedObject struct {
	alloc, soname, static string
	goVersion             string
	needed                []string
	exeRead               bool
}

// objectCache keeps what the objects read so far said, so that libc,
// libstdc++ and the others many processes share are read once in a run;
// at most maxCached objects (then it starts over).
var objectCache = &objCache{m: map[objectKey]cachedObject{}}

const maxCached = 2048

type objCache struct {
	mu sync.Mutex
	m  map[objectKey]cachedObject
}

func (c *objCache) get(k objectKey) (cachedObject, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *objCache) put(k objectKey, v cachedObject) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCached {
		clear(c.m)
	}
	c.m[k] = v
}
