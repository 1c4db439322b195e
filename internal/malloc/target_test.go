package malloc

import (
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

func TestChooseThread(t *testing.T) {
	t.Parallel()
	x86, _ := (&target{elf64: true, machine: emX8664}).syscalls()
	const pid = 100
	for _, c := range []struct {
		name string
		ths  []threadState
		want int
	}{
		{"main blocked in read", []threadState{{tid: 100, syscall: 0}, {tid: 101, syscall: 0}}, 100},
		{"main in user code, worker in epoll_wait", []threadState{{tid: 100, syscall: -1}, {tid: 101, syscall: 202}, {tid: 102, syscall: 232}}, 102},
		{"only futex waits", []threadState{{tid: 100, syscall: -1}, {tid: 101, syscall: 202}}, 101},
		{"main in futex preferred", []threadState{{tid: 100, syscall: 202}, {tid: 101, syscall: 202}}, 100},
		{"mmap and madvise are malloc's", []threadState{{tid: 100, syscall: 9}, {tid: 101, syscall: 28}}, 100},
		{"all running", []threadState{{tid: 100, running: true}, {tid: 101, running: true}}, 100},
	} {
		got, why := chooseThread(pid, c.ths, x86, true)
		if got != c.want {
			t.Errorf("%s: thread %d (%s), want %d", c.name, got, why, c.want)
		}
	}
	if got, _ := chooseThread(pid, []threadState{{tid: 101, syscall: 0}}, syscalls{}, false); got != pid {
		t.Errorf("unknown architecture: thread %d, want the main thread", got)
	}
}

func TestReadMaps(t *testing.T) {
	t.Parallel()
	maps, err := procfs.ParseMaps([]byte(`55d2cb0c0000-55d2cb0c1000 r--p 00000000 fe:00 1 /usr/bin/daemon
7f0000000000-7f0004000000 rw-p 00000000 00:00 0
7f4530000000-7f4534000000 rw-p 00000000 00:00 0
7f4538000000-7f4538a00000 rw-p 00000000 00:00 0
7f4538a00000-7f453c000000 ---p 00000000 00:00 0
7f6b673b0000-7f6b673d8000 r--p 00000000 fe:00 2 /usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)
7f6b67400000-7f6b67410000 r-xp 00000000 fe:00 3 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2
7f6b67500000-7f6b67510000 r-xp 00000000 fe:00 4 /var/cache/memdoctor/x/libmemdoctor_preload.so
`), "maps")
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{}
	tg.readMaps(maps)
	if tg.libcPath != "/usr/lib/x86_64-linux-gnu/libc.so.6" || !tg.libcDeleted || tg.libcStart != 0x7f6b673b0000 ||
		tg.heaps != 3 || !tg.preloadLib || len(tg.allocators) != 1 || tg.allocators[0] != "jemalloc" {
		t.Errorf("%+v", tg)
	}
	musl, _ := procfs.ParseMaps([]byte("7f0000000000-7f0000001000 r-xp 00000000 fe:00 1 /lib/ld-musl-x86_64.so.1\n"), "maps")
	tg = &target{}
	tg.readMaps(musl)
	if !tg.musl || tg.libcPath != "" {
		t.Errorf("musl: %+v", tg)
	}
}

func TestGlibcAtLeast(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"2.36": true, "2.33": true, "2.32": false, "3.0": true, "1.99": false, "": false, "2.40.9000": true} {
		if got := (&target{glibc: v}).glibcAtLeast(2, 33); got != want {
			t.Errorf("%q ≥ 2.33: %v", v, got)
		}
	}
}
