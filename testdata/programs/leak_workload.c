/*
 * leak_workload: a leaking call path and a healthy one, for the heap
 * profile (MEMDOCTOR_PROFILE).
 *
 * Commands on stdin, one per line:
 *   leak MIB   a new thread runs worker_main: ingest_batch keeps the
 *              records parse_record allocates (MIB MiB, the leak), and
 *              frees every buffer scratch_buffer allocates (as many bytes
 *              again, through malloc, calloc, realloc, posix_memalign and
 *              aligned_alloc);
 *   exit       ends the program.
 * After each command it prints "ready leaked=BYTES healthy_live=BYTES":
 * the bytes the leaking path requested and still holds, counted by the
 * program itself, and those the healthy path holds (0 between commands).
 *
 * Build with -fno-omit-frame-pointer for full stacks.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

struct record {
	struct record *next;
	size_t size;
};

static struct record *kept;
static size_t leaked, healthy_live;
static unsigned seed = 12345;

static size_t next_size(void)
{
	seed = seed * 1103515245u + 12345u;
	return 256 + (seed >> 8) % 16384; /* 256 B .. 16.6 KiB */
}

NOINLINE static struct record *parse_record(size_t n)
{
	struct record *r = malloc(n); /* leak-site: the leaking malloc (a test finds this line) */
	if (!r)
		abort();
	memset(r, 0xab, n);
	r->size = n;
	return r;
}

NOINLINE static void *scratch_buffer(size_t n, int how)
{
	void *p = NULL;
	switch (how % 5) {
	case 0:
		p = malloc(n);
		break;
	case 1:
		p = calloc(1, n);
		break;
	case 2:
		p = realloc(malloc(n / 2), n);
		break;
	case 3:
		if (posix_memalign(&p, 64, n))
			p = NULL;
		break;
	case 4:
		p = aligned_alloc(64, (n + 63) & ~(size_t)63);
		break;
	}
	if (!p)
		abort();
	memset(p, 0xcd, n);
	healthy_live += n;
	return p;
}

NOINLINE static void ingest_batch(size_t bytes)
{
	size_t done = 0;
	int k = 0;
	while (done < bytes) {
		size_t n = next_size();
		struct record *r = parse_record(n);
		r->next = kept;
		kept = r;
		leaked += n;
		size_t m = next_size();
		void *s = scratch_buffer(m, k++);
		free(s);
		healthy_live -= m;
		done += n;
	}
}

NOINLINE static void *worker_main(void *arg)
{
	ingest_batch((size_t)(uintptr_t)arg);
	return NULL;
}

int main(void)
{
	char line[128];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		unsigned long mib;
		if (sscanf(line, "leak %lu", &mib) == 1) {
			pthread_t t;
			if (pthread_create(&t, NULL, worker_main, (void *)(uintptr_t)(mib << 20)) != 0)
				return 1;
			pthread_join(t, NULL);
		} else if (!strncmp(line, "exit", 4)) {
			break;
		}
		printf("ready leaked=%zu healthy_live=%zu\n", leaked, healthy_live);
	}
	return 0;
}
