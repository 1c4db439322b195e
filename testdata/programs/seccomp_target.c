/* A sandboxed service: a glibc process that puts itself under seccomp and
 * then waits in read() on stdin, answering each line with "echo LINE".
 *
 *   seccomp_target kill-mmap   a filter that kills the process
 *                              (SECCOMP_RET_KILL_PROCESS) on mmap
 *   seccomp_target strict      strict mode: read, write, exit, sigreturn
 *   seccomp_target mdwe        what systemd's MemoryDenyWriteExecute= and
 *                              a small deny list install: mmap and mprotect
 *                              of memory both writable and executable fail
 *                              with EPERM, kexec_load kills the process,
 *                              everything else is allowed
 *   seccomp_target sleeper     a filter that kills the process on
 *                              restart_syscall (what resumes a sleep after
 *                              the sleeper was stopped) and allows the
 *                              rest; the main thread sleeps, a second
 *                              thread reads
 *
 * Before the sandbox it allocates and frees, so malloc has state to show.
 * It says "ready PID" once sandboxed, and exits (status 0) at the end of
 * its input: a process killed by its filter dies of SIGSYS instead.
 * Only read, write and exit are made after the sandbox is in place (and
 * clock_nanosleep, and what starting a thread takes, in sleeper mode).
 */
#define _GNU_SOURCE
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NR (offsetof(struct seccomp_data, nr))
#define ARCH (offsetof(struct seccomp_data, arch))
#define ARG2 (offsetof(struct seccomp_data, args[2]))

static void say(const char *s, size_t n) {
	while (n > 0) {
		ssize_t w = write(1, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void die(const char *what) {
	perror(what);
	exit(2);
}

/* echo answers each line read on stdin until its end. */
static void echo(void) {
	char buf[256];
	for (;;) {
		ssize_t n = read(0, buf + 5, sizeof buf - 5);
		if (n <= 0)
			return;
		memcpy(buf, "echo ", 5);
		say(buf, (size_t)n + 5);
	}
}

static void *reader(void *arg) {
	(void)arg;
	echo();
	_exit(0);
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: seccomp_target kill-mmap|strict|mdwe\n");
		return 2;
	}
	/* Malloc state: 2000 chunks, every other one freed. */
	static void *keep[2000];
	for (int i = 0; i < 2000; i++)
		keep[i] = malloc(512 + (size_t)(i % 7) * 64);
	for (int i = 0; i < 2000; i += 2) {
		free(keep[i]);
		keep[i] = NULL;
	}
	char ready[64];
	int rn = snprintf(ready, sizeof ready, "ready %d\n", (int)getpid());

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die("PR_SET_NO_NEW_PRIVS");
	if (strcmp(argv[1], "strict") == 0) {
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 0, NULL) != 0)
			die("SECCOMP_SET_MODE_STRICT");
	} else if (strcmp(argv[1], "kill-mmap") == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog p = {.len = sizeof f / sizeof f[0], .filter = f};
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p) != 0)
			die("SECCOMP_SET_MODE_FILTER");
	} else if (strcmp(argv[1], "mdwe") == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_kexec_load, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 1, 0),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 0, 4),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG2),
			BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1 /* EPERM */),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog p = {.len = sizeof f / sizeof f[0], .filter = f};
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p) != 0)
			die("SECCOMP_SET_MODE_FILTER");
	} else if (strcmp(argv[1], "sleeper") == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_restart_syscall, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog p = {.len = sizeof f / sizeof f[0], .filter = f};
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p) != 0)
			die("SECCOMP_SET_MODE_FILTER");
		pthread_t t;
		if (pthread_create(&t, NULL, reader, NULL) != 0)
			die("pthread_create");
		say(ready, (size_t)rn);
		for (;;) {
			struct timespec ts = {.tv_sec = 3600};
			clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		}
	} else {
		fprintf(stderr, "seccomp_target: unknown sandbox %s\n", argv[1]);
		return 2;
	}

	say(ready, (size_t)rn);
	echo();
	/* exit, not exit_group: strict mode allows only the former. */
	syscall(SYS_exit, 0);
	return 0;
}
