/* hog MIB [MS]: allocates MIB MiB one MiB at a time, touching every page,
 * MS milliseconds apart (default 0), then waits to be killed. In a cgroup
 * whose memory.max is below MIB it is the OOM killer's victim. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: hog MIB [MS]\n");
		return 2;
	}
	long mib = atol(argv[1]);
	long ms = argc > 2 ? atol(argv[2]) : 0;
	for (long i = 0; i < mib; i++) {
		char *p = malloc(1 << 20);
		if (!p) {
			perror("malloc");
			return 1;
		}
		memset(p, (int)(i & 0xff) | 1, 1 << 20);
		if (ms)
			usleep(ms * 1000);
	}
	printf("hog: holding %ld MiB\n", mib);
	fflush(stdout);
	for (;;)
		pause();
}
