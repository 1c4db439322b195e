/*
 * forker: fork with and without exec while other threads allocate, with the
 * preload library loaded (test (d) of run.sh).
 *
 * usage: forker ROUNDS            parent: 4 allocating threads; each round
 *                                 forks a child that allocates, frees and
 *                                 stays alive long enough for periodic trims,
 *                                 and a child that execs "forker child"
 *        forker child             allocate and free, then exit 0
 *
 * Prints "forker: ok PIDS..." (the pids of the children that did not exec)
 * and exits 0 when every child exited 0; any hang is caught by the
 * caller's timeout.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

/* churn allocates about mib MiB in mixed blocks and frees 31 of 32. */
static void churn(int mib, unsigned seed)
{
	size_t n = (size_t)mib * 256, kept = 0;
	void **b = malloc(n * sizeof *b);
	if (!b)
		exit(3);
	for (size_t i = 0; i < n; i++) {
		size_t sz = 64u << (rand_r(&seed) % 7); /* 64 B .. 4 KiB */
		b[i] = malloc(sz);
		if (!b[i])
			exit(3);
		memset(b[i], 1, sz);
	}
	for (size_t i = 0; i < n; i++)
		if (i % 32)
			free(b[i]);
		else
			b[kept++] = b[i];
	for (size_t i = 0; i < kept; i++)
		free(b[i]);
	free(b);
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	while (!atomic_load(&stop))
		churn(2, seed++);
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child")) {
		churn(8, (unsigned)getpid());
		return 0;
	}
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	pid_t *plain = calloc((size_t)rounds, sizeof *plain);
	int bad = 0;
	for (int r = 0; r < rounds; r++) {
		pid_t a = fork();
		if (a < 0) {
			perror("fork");
			return 2;
		}
		if (a == 0) {
			/* Without exec: a child of a multithreaded parent, allocating,
			 * and alive for a few of the library's trim intervals. */
			for (int i = 0; i < 5; i++) {
				churn(8, (unsigned)(getpid() + i));
				sleep_ms(60);
			}
			exit(0);
		}
		plain[r] = a;
		pid_t b = fork();
		if (b < 0) {
			perror("fork");
			return 2;
		}
		if (b == 0) {
			execl("/proc/self/exe", argv[0], "child", (char *)NULL);
			_exit(127);
		}
		int st;
		for (pid_t w = b; w;) {
			if (waitpid(w, &st, 0) < 0) {
				perror("waitpid");
				return 2;
			}
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "forker: child %d: status 0x%x\n", (int)w, st);
				bad = 1;
			}
			w = w == b ? a : 0;
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (bad)
		return 1;
	printf("forker: ok");
	for (int r = 0; r < rounds; r++)
		printf(" %d", (int)plain[r]);
	printf("\n");
	return 0;
}
