/* burst MIB COUNT MS: COUNT times, allocates MIB MiB, touches every page and
 * frees it again, MS milliseconds apart: short allocation bursts that need
 * free pages at once while a reader keeps the page cache full.
 *
 * BURST_KEEP=1 keeps each burst's memory instead of freeing it, so every
 * burst needs pages the page cache gives back. BURST_RT=1 runs the bursts
 * on CPU 0 under SCHED_FIFO after moving kswapd there too: kswapd cannot run
 * while a burst touches its pages, so the burst itself must reclaim (direct
 * reclaim) once free pages reach the min watermark. For a guest of its own,
 * never a shared host. */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* pin_kswapd moves every kswapd thread to CPU 0; returns how many. */
static int pin_kswapd(const cpu_set_t *set) {
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof comm, f) && strncmp(comm, "kswapd", 6) == 0 &&
		    sched_setaffinity(atoi(e->d_name), sizeof *set, set) == 0)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: burst MIB COUNT MS\n");
		return 2;
	}
	size_t len = (size_t)atol(argv[1]) << 20;
	long count = atol(argv[2]), ms = atol(argv[3]);
	int keep = getenv("BURST_KEEP") && atoi(getenv("BURST_KEEP"));
	if (getenv("BURST_RT") && atoi(getenv("BURST_RT"))) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		struct sched_param sp = {.sched_priority = 1};
		if (sched_setaffinity(0, sizeof set, &set) || sched_setscheduler(0, SCHED_FIFO, &sp)) {
			perror("burst: SCHED_FIFO on CPU 0");
			return 1;
		}
		int n = pin_kswapd(&set);
		fprintf(stderr, "burst: SCHED_FIFO on CPU 0, with %d kswapd thread(s)\n", n);
		if (n == 0)
			return 1;
	}
	for (long i = 0; i < count; i++) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		memset(p, 1, len);
		if (!keep)
			munmap(p, len);
		usleep(ms * 1000);
	}
	return 0;
}
