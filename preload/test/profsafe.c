/*
 * profsafe: a program whose output must not change under the library with
 * sampling on. THREADS threads each allocate, fill, check and free ITERATIONS blocks with
 * every interposed function while the main thread forks and execs
 * /bin/true FORKS times, a timer interrupts the threads with SIGALRM (the
 * handler only counts), and libm is dlopen'ed and called. It prints one
 * checksum per thread, the fork count and the dlopen'ed cos(0); a block
 * whose contents changed aborts.
 *
 * usage: profsafe THREADS FORKS ITERATIONS (allocations per thread)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static long iterations;
static atomic_long alarms;

static void on_alarm(int sig)
{
	(void)sig;
	atomic_fetch_add(&alarms, 1);
}

static void *alloc_one(unsigned r, size_t n)
{
	void *p = NULL;
	switch (r % 6) {
	case 0: return malloc(n);
	case 1: return calloc(1, n);
	case 2: return realloc(malloc(n / 2 + 1), n);
	case 3: return posix_memalign(&p, 32, n) ? NULL : p;
	case 4: return aligned_alloc(64, (n + 63) & ~(size_t)63);
	default: return memalign(128, n);
	}
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	uint64_t sum = 0;
	unsigned char *ring[256] = {0};
	size_t len[256] = {0};
	for (long it = 0; it < iterations; it++) {
		seed = seed * 1103515245u + 12345u;
		unsigned i = (seed >> 8) % 256;
		if (ring[i]) {
			for (size_t k = 0; k < len[i]; k += 61)
				if (ring[i][k] != (unsigned char)(len[i] + k))
					abort();
			sum += len[i];
			free(ring[i]);
			ring[i] = NULL;
		}
		len[i] = 1 + (seed >> 4) % 20000;
		ring[i] = alloc_one(seed >> 16, len[i]);
		if (!ring[i])
			abort();
		for (size_t k = 0; k < len[i]; k += 61)
			ring[i][k] = (unsigned char)(len[i] + k);
	}
	for (int i = 0; i < 256; i++)
		free(ring[i]);
	uint64_t *out = malloc(sizeof *out);
	*out = sum;
	return out;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4, forks = argc > 2 ? atoi(argv[2]) : 100;
	iterations = argc > 3 ? atol(argv[3]) : 1000000;
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 2000}, {0, 2000}};
	setitimer(ITIMER_REAL, &it, NULL);

	pthread_t *t = calloc((size_t)threads, sizeof *t);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	int ok = 0;
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	}
	void *m = dlopen("libm.so.6", RTLD_NOW);
	double (*cosf_)(double) = m ? (double (*)(double))dlsym(m, "cos") : NULL;
	for (int i = 0; i < threads; i++) {
		uint64_t *s;
		pthread_join(t[i], (void **)&s);
		printf("thread %d: %llu bytes checked\n", i, (unsigned long long)*s);
		free(s);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("forks: %d of %d exec'd and exited 0\n", ok, forks);
	printf("dlopen libm: cos(0) = %.1f\n", cosf_ ? cosf_(0.0) : -1.0);
	printf("signals: %s\n", atomic_load(&alarms) > 0 ? "delivered" : "none");
	free(t);
	return 0;
}
