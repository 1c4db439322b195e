/* creep FIRST: allocates FIRST MiB one MiB at a time, touching every page,
 * writes "ready" and waits for SIGUSR1; then goes on one MiB at a time,
 * writing after each the MiB it has added since, until the OOM killer
 * kills it. The last number written is where the kill came. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t go;

/* where each MiB is kept: the compiler cannot drop an allocation that
 * escapes to a global, nor the page writes through a volatile pointer */
static char *volatile kept;

static void on_usr1(int sig) {
	(void)sig;
	go = 1;
}

static void say(const char *s) {
	if (write(1, s, strlen(s)) < 0)
		exit(1);
}

static void grab(long i) {
	char *p = malloc(1 << 20);
	if (!p) {
		perror("malloc");
		exit(1);
	}
	for (long off = 0; off < 1 << 20; off += 4096)
		((volatile char *)p)[off] = (char)(i | 1);
	kept = p;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: creep FIRST\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	long first = atol(argv[1]);
	for (long i = 0; i < first; i++)
		grab(i);
	say("ready\n");
	while (!go)
		pause();
	char line[32];
	for (long n = 1;; n++) {
		grab(n);
		snprintf(line, sizeof line, "%ld\n", n);
		say(line);
	}
}
