// shared_private: a process with a known memory shape, for comparing
// memdoctor's per-process USS/PSS/RSS with other tools.
//
// It maps SHARED_MIB of shared anonymous memory, forks a child that touches
// all of it too (so each process' PSS counts half of it), then touches
// PRIVATE_MIB of private heap. It prints "ready <pid> <child pid>" and sleeps
// until killed. Build it static so no other process shares its text pages.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SHARED_MIB 32
#define PRIVATE_MIB 96

int main(void) {
	size_t shared = (size_t)SHARED_MIB << 20, priv = (size_t)PRIVATE_MIB << 20;
	char *s = mmap(NULL, shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(s, 1, shared);
	pid_t child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		volatile char sum = 0;
		for (size_t i = 0; i < shared; i += 4096) sum += s[i];
		for (;;) pause();
	}
	char *p = malloc(priv);
	if (!p) return 1;
	memset(p, 2, priv);
	printf("ready %d %d\n", (int)getpid(), (int)child);
	fflush(stdout);
	for (;;) pause();
}
