/*
 * stress: THREADS threads malloc and free for SECONDS, a quarter of the
 * frees of blocks that another thread allocated (test (e) of run.sh: with
 * MEMDOCTOR_TRIM_FREED=4MiB (the minimum) the library trims constantly from inside
 * free()). Prints "stress: ok OPS" and exits 0; a deadlock is caught by
 * the caller's timeout, a crash by the exit status.
 *
 * usage: stress THREADS SECONDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 512
#define SHARED 64

static atomic_int stop;
static atomic_long ops;
static _Atomic(void *) shared[SHARED]; /* blocks handed between threads */

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	void *mine[WINDOW] = {0};
	long n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned r = rand_r(&seed);
		size_t i = r % WINDOW;
		free(mine[i]);
		size_t sz = (size_t)16 << (r >> 8) % 13; /* 16 B .. 64 KiB */
		if ((r >> 16) % 64 == 0)
			sz = (size_t)1 << 20; /* now and then an mmap-sized block */
		mine[i] = malloc(sz);
		if (!mine[i])
			abort();
		memset(mine[i], (int)r, sz < 256 ? sz : 256);
		if ((r >> 20) % 4 == 0) {
			/* Swap with the shared pool: another thread frees this one. */
			void *p = atomic_exchange(&shared[(r >> 24) % SHARED], mine[i]);
			mine[i] = p;
		}
		n += 2;
	}
	for (size_t i = 0; i < WINDOW; i++)
		free(mine[i]);
	atomic_fetch_add(&ops, n);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 16;
	int seconds = argc > 2 ? atoi(argv[2]) : 10;
	pthread_t *t = calloc((size_t)threads, sizeof *t);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1))) {
			perror("pthread_create");
			return 2;
		}
	sleep((unsigned)seconds);
	atomic_store(&stop, 1);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < SHARED; i++)
		free(atomic_load(&shared[i]));
	printf("stress: ok %ld\n", atomic_load(&ops));
	return 0;
}
