/*
 * jumpcount: how many indirect branches a malloc+free pair takes inside
 * libmemdoctor_preload.so, counted by single-stepping a child with ptrace
 * (exact, unlike timing on a shared host). The child runs under the
 * library (LD_PRELOAD and MEMDOCTOR_* as given to this program), warms up
 * (lazy binding, the first sampling draw), stops itself, makes PAIRS
 * malloc(100)+free pairs and stops again; the parent steps through the
 * pairs and counts, at each instruction whose address is in the library's
 * (the file LD_PRELOAD names)
 * code, the indirect jumps and calls (opcode FF /2 to /5 after prefixes).
 *
 * Prints "jumpcount: B indirect branches, I instructions in the library
 * for P pairs". x86-64 only (elsewhere, or where ptrace is refused, it
 * prints "jumpcount: skipped").
 *
 * usage: jumpcount PAIRS
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
static void *volatile sink;

static int child(int pairs)
{
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
		return 1;
	for (int i = 0; i < 1000; i++) { /* bind malloc and free, first draw */
		sink = malloc(100);
		free(sink);
	}
	raise(SIGSTOP);
	for (int i = 0; i < pairs; i++) {
		sink = malloc(100);
		free(sink);
	}
	raise(SIGSTOP);
	return 0;
}

/* lib_text finds the executable mapping of the library in pid. */
static int lib_text(pid_t pid, const char *name, uintptr_t *lo, uintptr_t *hi)
{
	char path[64], line[4096];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int found = -1;
	while (fgets(line, sizeof line, f)) {
		unsigned long a, b;
		char perm[8];
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perm) == 3 && perm[2] == 'x' &&
		    strstr(line, name)) {
			*lo = a;
			*hi = b;
			found = 0;
		}
	}
	fclose(f);
	return found;
}

/* indirect says the instruction at pc is an indirect jump or call. */
static int indirect(pid_t pid, uintptr_t pc)
{
	unsigned char c[16];
	for (int i = 0; i < 16; i += 8) {
		long w = ptrace(PTRACE_PEEKTEXT, pid, (void *)(pc + (uintptr_t)i), NULL);
		memcpy(c + i, &w, 8);
	}
	int k = 0;
	while (k < 14 && (c[k] == 0x2e || c[k] == 0x3e || c[k] == 0xf2 || c[k] == 0xf3 || c[k] == 0x66 ||
			  (c[k] & 0xf0) == 0x40))
		k++;
	if (c[k] != 0xff)
		return 0;
	int reg = (c[k + 1] >> 3) & 7;
	return reg >= 2 && reg <= 5;
}

int main(int argc, char **argv)
{
	int pairs = argc > 1 ? atoi(argv[1]) : 1;
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0)
		_exit(child(pairs));
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return 2;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 1) { /* PTRACE_TRACEME refused (seccomp, Yama 3) */
		printf("jumpcount: skipped (no ptrace)\n");
		return 0;
	}
	if (!WIFSTOPPED(st)) /* the first SIGSTOP */
		return 2;
	const char *lib = getenv("LD_PRELOAD"), *slash = lib ? strrchr(lib, '/') : NULL;
	uintptr_t lo, hi;
	if (!lib || lib_text(pid, slash ? slash + 1 : lib, &lo, &hi) < 0) {
		fprintf(stderr, "jumpcount: the library is not loaded in the child\n");
		kill(pid, SIGKILL);
		return 2;
	}
	long branches = 0, insns = 0;
	for (;;) {
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) < 0 || waitpid(pid, &st, 0) < 0)
			return 2;
		if (!WIFSTOPPED(st))
			return 2;
		if (WSTOPSIG(st) == SIGSTOP)
			break;
		struct user_regs_struct r;
		ptrace(PTRACE_GETREGS, pid, NULL, &r);
		if (r.rip >= lo && r.rip < hi) {
			insns++;
			branches += indirect(pid, r.rip);
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	printf("jumpcount: %ld indirect branches, %ld instructions in the library for %d pairs\n", branches,
	       insns, pairs);
	return 0;
}
#else
int main(void)
{
	printf("jumpcount: skipped\n");
	return 0;
}
#endif
