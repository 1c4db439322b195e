package malloc

import (
	"context"
	"fmt"
	"path"

	"github.com/memdoctor/memdoctor/internal/inject"
)

// NativeAdvice is how each allocator other than glibc's is made to give
// freed memory back, set in the environment the process starts with.
var NativeAdvice = map[string]string{
	inject.AllocJemalloc: "MALLOC_CONF=background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0 <command> (jemalloc purges freed pages itself, in a background thread, within about a second)",
	inject.AllocTcmalloc: "TCMALLOC_RELEASE_RATE=10 <command> (gperftools returns free pages to the system faster; Google's tcmalloc: MallocExtension::SetBackgroundReleaseRate)",
	inject.AllocMimalloc: "MIMALLOC_PURGE_DELAY=0 <command> (mimalloc purges freed pages at once; older versions: MIMALLOC_RESET_DELAY)",
}

// checkMallocServer finds the allocator that serves malloc when another
// one than glibc's is mapped (jemalloc or tcmalloc linked in or
// preloaded): glibc's malloc_info would describe glibc's unused main arena
// and malloc_trim would give back nothing. jemalloc, tcmalloc and mimalloc are read
// and treated through their own functions (nativealloc.go: t.server is
// set); another one is refused, saying which allocator serves malloc and
// what memdoctor can do about it.
func (t *target) checkMallocServer() error {
	if len(t.allocators) == 0 {
		return nil // glibc serves malloc: nothing else is mapped
	}
	ms, err := inject.FindMallocServer(context.Background(), t.pid, t.maps, readEnv(t.pid, "LD_PRELOAD")["LD_PRELOAD"])
	if err != nil || ms.Name == inject.AllocGlibc {
		return nil
	}
	if nativeReadable(ms.Name) {
		t.server = ms
		return nil
	}
	how := path.Base(ms.Object)
	if ms.Static {
		how += ", linked statically"
	}
	advice := ""
	if a, ok := NativeAdvice[ms.Name]; ok {
		advice = "; to have it give freed memory back by itself, restart it with " + a
	}
	return fmt.Errorf("%w: pid %d (%s) allocates with %s (%s), not glibc's malloc: memdoctor reads and trims glibc's, jemalloc's, tcmalloc's and mimalloc's allocators only, and reading or trimming %s natively is not supported yet, so it shows no arena table and has nothing to trim here (glibc's arenas in this process are unused)%s",
		ErrNotGlibc, t.pid, t.comm, ms.Name, how, ms.Name, advice)
}
