/* retain: allocates N MiB in small blocks and frees two of every three,
 * then prints "ready" and answers commands on stdin until it closes.
 * Linked with, or preloaded with, the allocator under test.
 *
 *   retain MIB            frees blocks i%3 != 0: the survivors keep most
 *                         pages partly used (fragmentation: nothing whole
 *                         to give back)
 *   retain MIB block      frees the first two thirds of the blocks, which
 *                         were allocated one after the other: whole free
 *                         pages the allocator keeps (retention)
 *   retain MIB keep       frees nothing: a healthy heap, all in use
 *
 * Commands: "stats" prints the allocator's own figures as one JSON line,
 * read in the process through its own interface (jemalloc's mallctl,
 * tcmalloc's MallocExtension_GetNumericProperty, mimalloc's mi_process_info,
 * looked up with dlsym), and
 * the process' VmRSS; "more" allocates and frees again as at start. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef int (*tcprop_fn)(const char *, size_t *);
typedef void (*miinfo_fn)(size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *);

static long rss_kb(void) {
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static size_t je_get(mallctl_fn je, const char *name) {
	size_t v = 0, sz = sizeof v;
	if (je(name, &v, &sz, NULL, 0) != 0)
		return (size_t)-1;
	return v;
}

static void stats(void) {
	mallctl_fn je = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	tcprop_fn tc = (tcprop_fn)dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty");
	miinfo_fn mi;
	if (je) {
		uint64_t e = 1;
		size_t sz = sizeof e;
		je("epoch", &e, &sz, &e, sz);
		size_t page = je_get(je, "arenas.page");
		printf("{\"allocator\":\"jemalloc\",\"allocated\":%zu,\"active\":%zu,\"resident\":%zu,\"mapped\":%zu,\"dirty\":%zu,\"rss_kb\":%ld}\n",
		       je_get(je, "stats.allocated"), je_get(je, "stats.active"), je_get(je, "stats.resident"),
		       je_get(je, "stats.mapped"), je_get(je, "stats.arenas.4096.pdirty") * page, rss_kb());
	} else if (tc) {
		size_t a = 0, h = 0, f = 0, u = 0;
		tc("generic.current_allocated_bytes", &a);
		tc("generic.heap_size", &h);
		tc("tcmalloc.pageheap_free_bytes", &f);
		tc("tcmalloc.pageheap_unmapped_bytes", &u);
		printf("{\"allocator\":\"tcmalloc\",\"allocated\":%zu,\"heap_size\":%zu,\"pageheap_free\":%zu,\"pageheap_unmapped\":%zu,\"rss_kb\":%ld}\n",
		       a, h, f, u, rss_kb());
	} else if ((mi = (miinfo_fn)dlsym(RTLD_DEFAULT, "mi_process_info"))) {
		size_t e, u, s, r, pr, c, pc, pf;
		mi(&e, &u, &s, &r, &pr, &c, &pc, &pf);
		printf("{\"allocator\":\"mimalloc\",\"committed\":%zu,\"rss_kb\":%ld}\n", c, rss_kb());
	} else {
		printf("{\"allocator\":\"\",\"rss_kb\":%ld}\n", rss_kb());
	}
	fflush(stdout);
}

static char **blocks;
static size_t n, size = 512;
static int block, keep;

static int fill(void) {
	for (size_t i = 0; i < n; i++) {
		if (blocks[i])
			continue;
		blocks[i] = malloc(size);
		if (!blocks[i])
			return 1;
		memset(blocks[i], 1, size);
	}
	for (size_t i = 0; i < n; i++)
		if (!keep && (block ? i < n / 3 * 2 : i % 3 != 0)) {
			free(blocks[i]);
			blocks[i] = NULL;
		}
	return 0;
}

int main(int argc, char **argv) {
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	block = argc > 2 && strcmp(argv[2], "block") == 0;
	keep = argc > 2 && strcmp(argv[2], "keep") == 0;
	n = (mib << 20) / size;
	blocks = calloc(n, sizeof *blocks);
	if (!blocks || fill())
		return 1;
	printf("ready\n");
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "stats", 5) == 0)
			stats();
		else if (strncmp(line, "more", 4) == 0) {
			if (fill())
				return 1;
			printf("ready\n");
			fflush(stdout);
		}
	}
	return 0;
}
