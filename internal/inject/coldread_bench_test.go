package inject

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// BenchmarkReadObjectCold reads what every object this test binary maps
// says of malloc, from its file, the cache emptied first: what a check
// run pays for each distinct object the top processes map.
func BenchmarkReadObjectCold(b *testing.B) {
	pid := os.Getpid()
	if v := os.Getenv("MALLOC_SERVER_BENCH_PID"); v != "" {
		pid, _ = strconv.Atoi(v)
	}
	maps, err := procfs.NewFS("/").ProcMaps(pid)
	if err != nil {
		b.Fatal(err)
	}
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
