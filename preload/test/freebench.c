/*
 * freebench: the cost of free() itself. THREADS threads each run a loop of
 * malloc + free over a small ring of live blocks (the tcache path, where an
 * interposed free's extra instructions show most) for SECONDS, and the
 * program prints "freebench: NS ns per malloc+free pair (OPS pairs)", NS the
 * process' CPU time (user + system, all threads) per pair: a figure other
 * load on the host does not move much, unlike wall time.
 * Run with and without LD_PRELOAD=libmemdoctor_preload.so.
 *
 * usage: freebench THREADS SECONDS [PAIRS]
 * With PAIRS, each thread runs PAIRS/THREADS pairs and the program ends
 * (SECONDS is ignored): a fixed amount of work, to time from outside.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static atomic_long pairs;
static long quota; /* pairs per thread, 0 = until stopped */

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	void *ring[64] = {0};
	long n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int k = 0; k < 1024; k++) {
			unsigned i = (unsigned)k % 64;
			free(ring[i]);
			ring[i] = malloc(16 + (rand_r(&seed) & 511));
		}
		n += 1024;
		if (quota && n >= quota)
			break;
	}
	for (int i = 0; i < 64; i++)
		free(ring[i]);
	atomic_fetch_add(&pairs, n);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	double seconds = argc > 2 ? atof(argv[2]) : 2;
	long total = argc > 3 ? atol(argv[3]) : 0;
	pthread_t t[256];
	if (threads < 1 || threads > 256 || total < 0)
		return 2;
	quota = total / threads;
	struct timespec a, b;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	if (!quota) {
		usleep((useconds_t)(seconds * 1e6));
		atomic_store(&stop, 1);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	long p = atomic_load(&pairs);
	printf("freebench: %.2f ns per malloc+free pair (%ld pairs)\n", ns / (double)p, p);
	return 0;
}
