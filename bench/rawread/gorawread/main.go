// Command gorawread is bench/rawread/rawread.c in Go: it replays the same
// plan (bench/rawread/plan.py) with the same system calls (open, read or
// pread into one reusable buffer, getdents64, close) and nothing parsed.
// It is the floor of a Go program doing check's reads: what the Go
// runtime (its start, its scheduler's system-call bookkeeping, its
// threads) adds to the C replay, before any parsing.
//
// usage: gorawread PLAN   (prints "read N skipped M", as rawread does)
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gorawread PLAN")
		os.Exit(2)
	}
	plan, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buf := make([]byte, 1<<20)
	sc := bufio.NewScanner(plan)
	sc.Buffer(make([]byte, 8192), 8192)
	fd := -1
	files, skipped := 0, 0
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 4)
		if len(f) < 4 {
			continue
		}
		off, err1 := strconv.ParseInt(f[1], 10, 64)
		n, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if f[0] == "P" { // on the file opened last
			for fd >= 0 && n > 0 {
				r, err := syscall.Pread(fd, buf[:min(n, int64(len(buf)))], off)
				if r <= 0 || err != nil {
					break
				}
				off += int64(r)
				n -= int64(r)
			}
			continue
		}
		if fd >= 0 {
			_ = syscall.Close(fd)
		}
		flags := syscall.O_RDONLY | syscall.O_CLOEXEC
		if f[0] == "D" {
			flags |= syscall.O_DIRECTORY
		}
		if fd, err = syscall.Open(f[3], flags, 0); err != nil {
			fd = -1
			skipped++
			continue
		}
		files++
		if f[0] == "D" {
			for {
				if r, err := syscall.ReadDirent(fd, buf); r <= 0 || err != nil {
					break
				}
			}
			continue
		}
		// As rawread.c: reads of at most n bytes in all, or one read of
		// the whole buffer when n is 0.
		for left := n; ; {
			want := int64(len(buf))
			if left > 0 && left < want {
				want = left
			}
			r, err := syscall.Read(fd, buf[:want])
			if r <= 0 || err != nil {
				break
			}
			if left -= int64(r); left <= 0 {
				break
			}
		}
	}
	if fd >= 0 {
		_ = syscall.Close(fd)
	}
	fmt.Printf("read %d skipped %d\n", files, skipped)
}
