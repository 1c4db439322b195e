/*
 * profsafe: a program whose output must not change under the library with
 * sampling on. THREADS threads each allocate, fill, check and free blocks
 * with every interposed function (ITERATIONS counted in the checksum, then
 * on until the forks are done) while FORKERS threads (the main thread and
 * FORKERS-1 more) fork and exec FORKS times in all, a timer interrupts the
 * threads with SIGALRM every 2 ms (the handler only counts), and libm is
 * dlopen'ed and called. It prints one checksum per thread, the fork count
 * and the dlopen'ed cos(0); a block whose contents changed aborts.
 *
 * Each child execs /bin/true (dynamic: under LD_PRELOAD it loads the
 * library, which writes its profile at exit), or, with HELPER, HELPER
 * (a static program: exec'ing it costs neither the dynamic loader nor the
 * library) for all but every EVERY-th fork.
 *
 * With PROFSAFE_PIDS=FILE set, it writes to FILE the pids of the children
 * that exec'd /bin/true, one a line (the profiles they leave are named so).
 *
 * usage: profsafe THREADS FORKS ITERATIONS [FORKERS [HELPER EVERY]]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
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
static atomic_int forks_done;          /* the workers stop once set */
static long nforks, every = 1;
static const char *helper;
static atomic_long next_fork, ok_forks; /* forks started, children that exited 0 */
static pid_t *dyn_pids;                 /* the children that exec'd /bin/true, by k / every */

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
	for (long it = 0; it < iterations || !atomic_load_explicit(&forks_done, memory_order_relaxed); it++) {
		seed = seed * 1103515245u + 12345u;
		unsigned i = (seed >> 8) % 256;
		if (ring[i]) {
			for (size_t k = 0; k < len[i]; k += 61)
				if (ring[i][k] != (unsigned char)(len[i] + k))
					abort();
			if (it < iterations) /* the checksum does not depend on how long the forks take */
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

/* forker forks and execs until FORKS forks were started in all. */
static void *forker(void *arg)
{
	(void)arg;
	for (;;) {
		long k = atomic_fetch_add(&next_fork, 1);
		if (k >= nforks)
			return NULL;
		const char *prog = helper && k % every ? helper : "/bin/true";
		pid_t pid = fork();
		if (pid < 0) {
			perror("profsafe: fork");
			exit(2);
		}
		if (pid == 0) {
			execl(prog, prog, (char *)NULL);
			_exit(127);
		}
		if (!helper || k % every == 0)
			dyn_pids[k / every] = pid;
		int st;
		while (waitpid(pid, &st, 0) < 0) {
			if (errno != EINTR) {
				perror("profsafe: waitpid");
				exit(2);
			}
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			atomic_fetch_add(&ok_forks, 1);
	}
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	nforks = argc > 2 ? atol(argv[2]) : 100;
	iterations = argc > 3 ? atol(argv[3]) : 1000000;
	int forkers = argc > 4 ? atoi(argv[4]) : 1;
	if (argc > 6) {
		helper = argv[5];
		every = atol(argv[6]);
	}
	if (threads < 0 || forkers < 1 || every < 1) {
		fprintf(stderr, "usage: profsafe THREADS FORKS ITERATIONS [FORKERS [HELPER EVERY]]\n");
		return 2;
	}
	if (!helper)
		every = 1;
	long ndyn = (nforks + every - 1) / every;
	dyn_pids = calloc((size_t)ndyn + 1, sizeof *dyn_pids);
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 2000}, {0, 2000}};
	setitimer(ITIMER_REAL, &it, NULL);

	pthread_t *t = calloc((size_t)threads, sizeof *t);
	pthread_t *f = calloc((size_t)forkers, sizeof *f);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 1; i < forkers; i++)
		pthread_create(&f[i], NULL, forker, NULL);
	forker(NULL);
	for (int i = 1; i < forkers; i++)
		pthread_join(f[i], NULL);
	void *m = dlopen("libm.so.6", RTLD_NOW);
	double (*cosf_)(double) = m ? (double (*)(double))dlsym(m, "cos") : NULL;
	atomic_store(&forks_done, 1);
	for (int i = 0; i < threads; i++) {
		uint64_t *s;
		pthread_join(t[i], (void **)&s);
		printf("thread %d: %llu bytes checked\n", i, (unsigned long long)*s);
		free(s);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("forks: %ld of %ld exec'd and exited 0\n", atomic_load(&ok_forks), nforks);
	printf("dlopen libm: cos(0) = %.1f\n", cosf_ ? cosf_(0.0) : -1.0);
	printf("signals: %s\n", atomic_load(&alarms) > 0 ? "delivered" : "none");
	const char *pids = getenv("PROFSAFE_PIDS");
	if (pids) {
		FILE *pf = fopen(pids, "w");
		for (long i = 0; pf && i < ndyn; i++)
			fprintf(pf, "%d\n", (int)dyn_pids[i]);
		if (!pf || fclose(pf)) {
			perror("profsafe: PROFSAFE_PIDS");
			return 2;
		}
	}
	free(dyn_pids);
	free(t);
	free(f);
	return 0;
}
