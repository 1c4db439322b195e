/*
 * leakcore.h: the leaking and the healthy call path shared by the CPython
 * (pyleak.c) and Ruby (rbleak.c) extensions of the heap profile tests.
 *
 * keep_record allocates a record and keeps it on a list forever (the
 * leak); scratch_buffer allocates a buffer that its caller frees at once
 * (healthy). Both allocate with malloc/calloc/realloc directly, not with
 * the interpreter's allocator: CPython's pymalloc hands out small objects
 * from arenas it obtained in 256 KiB pieces (mmap), and Ruby's object
 * heap from pages of its own, so an interpreter allocation would be
 * attributed to the arena's or page's allocation, not to the code that
 * asked for the object. A C extension that leaks with malloc is the case
 * the profile sees at the leaking function.
 *
 * The extension counts what it keeps (leak_bytes) and what the healthy
 * path holds (healthy_live, 0 between calls): the figures the profile is
 * checked against.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

struct record {
	struct record *next;
	size_t size;
};

static struct record *kept;
static size_t leak_bytes, healthy_live;
static unsigned seed = 12345;

static size_t next_size(void)
{
	seed = seed * 1103515245u + 12345u;
	return 256 + (seed >> 8) % 16384; /* 256 B .. 16.6 KiB */
}

/* keep_record: the leak. Returns the bytes it kept. */
NOINLINE static size_t keep_record(void)
{
	size_t n = next_size();
	struct record *r = malloc(n); /* leakext: the leaking allocation */
	if (!r)
		abort();
	memset(r, 0xab, n);
	r->size = n;
	r->next = kept;
	kept = r;
	leak_bytes += n;
	return n;
}

NOINLINE static void *scratch_buffer(size_t n, int how)
{
	void *p = NULL;
	switch (how % 3) {
	case 0:
		p = malloc(n);
		break;
	case 1:
		p = calloc(1, n);
		break;
	case 2:
		p = realloc(malloc(n / 2), n);
		break;
	}
	if (!p)
		abort();
	memset(p, 0xcd, n);
	healthy_live += n;
	return p;
}

/* scratch: the healthy path, as many bytes as a record, freed at once. */
NOINLINE static size_t scratch(void)
{
	static int k;
	size_t n = next_size();
	void *p = scratch_buffer(n, k++);
	free(p);
	healthy_live -= n;
	return n;
}
