// arenas: a many-threaded glibc program that spreads its heap over many
// malloc arenas and keeps freed memory in them, the shape behind
// malloc_arenas_many (incident 5 in miniature).
//
// usage: arenas THREADS MIB_PER_THREAD
// Each thread allocates MIB_PER_THREAD MiB in 4 KiB blocks, frees every block
// but one in 64 (so the arena keeps its pages: the survivors pin them), and
// then all threads stay alive. Prints "ready <pid>" and sleeps until killed.
// Run with GLIBC_TUNABLES=glibc.malloc.arena_max=N to get more arenas than
// the default 8 x CPUs.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t per_thread;
static pthread_barrier_t ready;

static void *worker(void *arg) {
	(void)arg;
	size_t n = per_thread / 4096;
	char **blocks = malloc(n * sizeof *blocks);
	for (size_t i = 0; i < n; i++) {
		blocks[i] = malloc(4000);
		memset(blocks[i], 7, 4000);
	}
	for (size_t i = 0; i < n; i++)
		if (i % 64 != 0) free(blocks[i]);
	pthread_barrier_wait(&ready);
	for (;;) pause();
	return NULL;
}

int main(int argc, char **argv) {
	int threads = argc > 1 ? atoi(argv[1]) : 32;
	per_thread = (size_t)(argc > 2 ? atoi(argv[2]) : 16) << 20;
	pthread_barrier_init(&ready, NULL, threads + 1);
	for (int i = 0; i < threads; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	pthread_barrier_wait(&ready);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) pause();
}
