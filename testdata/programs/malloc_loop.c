/*
 * malloc_loop: a tight loop of malloc/free pairs, to time what probes on
 * the allocation functions add to each call (memdoctor leaks --ebpf).
 *
 * Reads lines on stdin: "run N" makes N malloc+free pairs of sizes 16 B ..
 * 4 KiB and prints "ns_per_call=X" (X: wall time per malloc or free call);
 * "exit" (or EOF) ends it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(void)
{
	char line[64];
	unsigned seed = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		unsigned long n;
		if (sscanf(line, "run %lu", &n) == 1) {
			double t0 = now_ns();
			for (unsigned long i = 0; i < n; i++) {
				seed = seed * 1103515245u + 12345u;
				volatile char *p = malloc(16 + (seed >> 8) % 4080);
				p[0] = 1;
				free((void *)p);
			}
			printf("ns_per_call=%.1f\n", (now_ns() - t0) / (2.0 * (double)n));
		} else if (!strncmp(line, "exit", 4)) {
			break;
		}
	}
	return 0;
}
