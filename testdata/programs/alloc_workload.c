// alloc_workload: real allocation patterns for the allocator tests.
//
// usage: alloc_workload MODE THREADS MIB_PER_THREAD [ROUNDS]
//   hoard    each thread, ROUNDS times: allocates MIB_PER_THREAD MiB in
//            blocks of 64 B .. 16 KiB (mixed sizes), then frees all but one
//            block in 32, scattered: the survivors pin the pages, so the
//            arenas hold most of the memory as free chunks (incident 5:
//            RSS far above what is in use, no leak).
//   leak     like hoard, but nothing is ever freed: in-use memory grows.
//   healthy  allocates and frees everything each round. Run it with a small
//            MIB_PER_THREAD: glibc keeps even fully freed arena memory
//            until a trim, so "healthy" means a small working set, not
//            a different allocator behaviour.
// After the last round every thread stops; the program prints one line
//   ready {"pid":N,"arena":...,"uordblks":...,"fordblks":...,"hblkhd":...,"keepcost":...,"rss_kb":...}
// with its own mallinfo2() and VmRSS, then waits for commands on stdin:
//   "info" prints the line again; "more" runs one more round in every
//   thread (a leak keeps growing); "spawn" starts one more thread that
//   runs ROUNDS rounds and then keeps its survivors until exit (a server
//   gaining threads, and so arenas, over time: RSS grows by about
//   MIB_PER_THREAD each time while in-use grows by 1/32 of it in hoard
//   mode); "exit" exits.
// With MODE=hoard and ROUNDS=0 the threads keep cycling until "exit",
// printing nothing more: a throughput workload (ops are counted and
// printed on "info" as "ops").
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum mode { HOARD, LEAK, HEALTHY };
static enum mode mode;
static size_t per_thread;
static int rounds;
static atomic_long ops;
static atomic_int stop;
static pthread_barrier_t done_barrier;
static pthread_mutex_t go_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cv = PTHREAD_COND_INITIALIZER;
static int generation;

struct slot { void **blocks; size_t n; };

static unsigned long long xorshift(unsigned long long *s) {
	*s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s;
}

static void one_round(struct slot *sl, unsigned long long *seed) {
	size_t used = 0, cap = 1024, n = 0;
	void **b = malloc(cap * sizeof *b);
	while (used < per_thread) {
		size_t sz = 64u << (xorshift(seed) % 9); // 64 B .. 16 KiB
		sz += xorshift(seed) % sz;
		if (n == cap) { cap *= 2; b = realloc(b, cap * sizeof *b); }
		b[n] = malloc(sz);
		memset(b[n], 1, sz);
		used += sz;
		n++;
		atomic_fetch_add_explicit(&ops, 1, memory_order_relaxed);
	}
	size_t keep = 0;
	for (size_t i = 0; i < n; i++) {
		int survive = mode == LEAK || (mode == HOARD && i % 32 == 0);
		if (survive) b[keep++] = b[i];
		else { free(b[i]); atomic_fetch_add_explicit(&ops, 1, memory_order_relaxed); }
	}
	// Survivors accumulate across rounds (hoard: a trickle; leak: everything).
	sl->blocks = realloc(sl->blocks, (sl->n + keep) * sizeof *sl->blocks);
	memcpy(sl->blocks + sl->n, b, keep * sizeof *b);
	sl->n += keep;
	free(b);
}

static void *worker(void *arg) {
	unsigned long long seed = (unsigned long long)(uintptr_t)arg * 2654435761u + 1;
	struct slot sl = {0};
	int seen = 0;
	if (rounds == 0) {
		while (!atomic_load(&stop)) {
			struct slot tmp = {0};
			one_round(&tmp, &seed);
			for (size_t i = 0; i < tmp.n; i++) free(tmp.blocks[i]);
			free(tmp.blocks);
		}
		pthread_barrier_wait(&done_barrier);
		return NULL;
	}
	for (int r = 0; r < rounds; r++) one_round(&sl, &seed);
	for (;;) {
		pthread_barrier_wait(&done_barrier);
		pthread_mutex_lock(&go_mu);
		while (generation == seen && !atomic_load(&stop)) pthread_cond_wait(&go_cv, &go_mu);
		seen = generation;
		pthread_mutex_unlock(&go_mu);
		if (atomic_load(&stop)) return NULL;
		one_round(&sl, &seed);
	}
}

// A spawned thread: ROUNDS rounds, then park holding its survivors.
static pthread_mutex_t spawn_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t spawn_cv = PTHREAD_COND_INITIALIZER;
static int spawn_done;

static void *spawned(void *arg) {
	unsigned long long seed = (unsigned long long)(uintptr_t)arg * 2654435761u + 1;
	struct slot sl = {0};
	for (int r = 0; r < rounds; r++) one_round(&sl, &seed);
	pthread_mutex_lock(&spawn_mu);
	spawn_done++;
	pthread_cond_broadcast(&spawn_cv);
	while (!atomic_load(&stop)) pthread_cond_wait(&spawn_cv, &spawn_mu);
	pthread_mutex_unlock(&spawn_mu);
	return NULL;
}

static long rss_kb(void) {
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", &v) == 1) break;
	if (f) fclose(f);
	return v;
}

static void report(void) {
	struct mallinfo2 mi = mallinfo2();
	printf("ready {\"pid\":%d,\"arena\":%zu,\"uordblks\":%zu,\"fordblks\":%zu,\"hblkhd\":%zu,\"keepcost\":%zu,\"rss_kb\":%ld,\"ops\":%ld}\n",
	       (int)getpid(), mi.arena, mi.uordblks, mi.fordblks, mi.hblkhd, mi.keepcost, rss_kb(), atomic_load(&ops));
	fflush(stdout);
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: %s hoard|leak|healthy THREADS MIB_PER_THREAD [ROUNDS]\n", argv[0]);
		return 2;
	}
	mode = !strcmp(argv[1], "leak") ? LEAK : !strcmp(argv[1], "healthy") ? HEALTHY : HOARD;
	int threads = atoi(argv[2]);
	per_thread = (size_t)atoi(argv[3]) << 20;
	rounds = argc > 4 ? atoi(argv[4]) : 4;
	pthread_barrier_init(&done_barrier, NULL, threads + 1);
	pthread_t *t = calloc(threads, sizeof *t);
	for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	if (rounds > 0) pthread_barrier_wait(&done_barrier);
	report();
	char cmd[64];
	while (fgets(cmd, sizeof cmd, stdin)) {
		if (!strncmp(cmd, "exit", 4)) break;
		if (!strncmp(cmd, "more", 4) && rounds > 0) {
			pthread_mutex_lock(&go_mu);
			generation++;
			pthread_cond_broadcast(&go_cv);
			pthread_mutex_unlock(&go_mu);
			pthread_barrier_wait(&done_barrier);
		}
		if (!strncmp(cmd, "spawn", 5) && rounds > 0) {
			static int spawned_n;
			pthread_t st;
			pthread_mutex_lock(&spawn_mu);
			int want = ++spawned_n;
			pthread_mutex_unlock(&spawn_mu);
			pthread_create(&st, NULL, spawned, (void *)(uintptr_t)(1000 + want));
			pthread_detach(st);
			pthread_mutex_lock(&spawn_mu);
			while (spawn_done < want) pthread_cond_wait(&spawn_cv, &spawn_mu);
			pthread_mutex_unlock(&spawn_mu);
		}
		report();
	}
	atomic_store(&stop, 1);
	pthread_mutex_lock(&spawn_mu);
	pthread_cond_broadcast(&spawn_cv);
	pthread_mutex_unlock(&spawn_mu);
	pthread_mutex_lock(&go_mu);
	pthread_cond_broadcast(&go_cv);
	pthread_mutex_unlock(&go_mu);
	if (rounds == 0) pthread_barrier_wait(&done_barrier);
	return 0;
}
