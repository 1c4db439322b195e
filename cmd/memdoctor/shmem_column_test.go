package main

// The process table has a shmem column: a process whose RSS is mostly
// shared memory (as a PostgreSQL backend's shared buffers are) reads
// rss = anon + file + shmem, with nothing left unexplained.

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var sizeCell = regexp.MustCompile(`(\d+(?:\.\d+)?) (B|KiB|MiB|GiB)`)

func TestProcessTableShowsShmem(t *testing.T) {
	requireLinuxRoot(t)
	uid := 40000 + (os.Getpid()+13)%20000
	parent := startAs(t, "shared_private", uid)[0]
	shmem := statusKB(t, parent, "RssShmem") << 10
	if shmem < 30<<20 {
		t.Fatalf("the program's RssShmem is %d bytes, want its 32 MiB of shared memory: the test proves nothing", shmem)
	}

	out, errOut, code := runCLI(t, "check", "--pid", strconv.Itoa(parent))
	if code != 0 {
		t.Fatalf("check exited %d: %s", code, errOut)
	}
	var header []string
	var row string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && f[0] == "pid" && f[len(f)-1] == "comm" {
			header = f
		}
		if header != nil && len(f) > 0 && f[0] == strconv.Itoa(parent) {
			row = l
		}
	}
	if header == nil || row == "" {
		t.Fatalf("no process table with pid %d:\n%s", parent, out)
	}
	t.Logf("%s\n%s", strings.Join(header, " "), row)
	// The size columns in order: pss uss rss swap anon file [shmem].
	var sizeCols []string
	for _, h := range header {
		if h != "pid" && h != "threads" && h != "arenas" && h != "malloc" && h != "comm" {
			sizeCols = append(sizeCols, h)
		}
	}
	cells := sizeCell.FindAllStringSubmatch(row, -1)
	if len(cells) != len(sizeCols) {
		t.Fatalf("%d size cells for columns %v: %q", len(cells), sizeCols, row)
	}
	v := map[string]float64{}
	for i, c := range cells {
		n, _ := strconv.ParseFloat(c[1], 64)
		v[sizeCols[i]] = n * map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[c[2]]
	}
	if _, ok := v["shmem"]; !ok {
		t.Fatalf("the process table has no shmem column: %v", header)
	}
	if d := v["shmem"] - float64(shmem); d > 1<<20 || d < -1<<20 {
		t.Errorf("shmem column %.0f bytes, RssShmem %d", v["shmem"], shmem)
	}
	if d := v["rss"] - v["anon"] - v["file"] - v["shmem"]; d > 2<<20 || d < -2<<20 {
		t.Errorf("rss %.0f != anon %.0f + file %.0f + shmem %.0f: %.0f bytes unexplained", v["rss"], v["anon"], v["file"], v["shmem"], d)
	}
}
