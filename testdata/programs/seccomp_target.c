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
 *   seccomp_target container   (built with -DLIBSECCOMP, linked with
 *                              libseccomp) an allow list compiled by
 *                              libseccomp as container runtimes do: the
 *                              calls a small service makes, everything
 *                              else fails with EPERM
 *   seccomp_target exact       an allow list of exactly the system calls
 *                              memdoctor declares for its calls (and what
 *                              this program needs), any other kills the
 *                              process; the reading thread never
 *                              allocated, so a call that allocates in it
 *                              sets up its tcache and maybe an arena
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
#include <sched.h>
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

#ifdef LIBSECCOMP
/* libseccomp's API (seccomp.h), declared here so that only the library,
 * not its headers, is needed. */
typedef void *scmp_filter_ctx;
struct scmp_arg_cmp {
	unsigned int arg;
	int op;
	unsigned long long datum_a;
	unsigned long long datum_b;
};
#define SCMP_ACT_ALLOW 0x7fff0000U
#define SCMP_ACT_ERRNO(x) (0x00050000U | ((x)&0x0000ffffU))
#define SCMP_CMP_EQ 4
scmp_filter_ctx seccomp_init(unsigned int def_action);
int seccomp_rule_add(scmp_filter_ctx ctx, unsigned int action, int syscall, unsigned int arg_cnt, ...);
int seccomp_load(scmp_filter_ctx ctx);

static void container(void) {
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(1));
	if (ctx == NULL)
		die("seccomp_init");
	static const int allowed[] = {
		__NR_read, __NR_write, __NR_readv, __NR_writev, __NR_pread64, __NR_pwrite64,
		__NR_open, __NR_openat, __NR_close, __NR_fstat, __NR_newfstatat, __NR_lseek,
		__NR_mmap, __NR_mprotect, __NR_munmap, __NR_brk, __NR_mremap, __NR_madvise,
		__NR_rt_sigaction, __NR_rt_sigprocmask, __NR_rt_sigreturn, __NR_sigaltstack,
		__NR_futex, __NR_sched_yield, __NR_sched_getaffinity, __NR_nanosleep,
		__NR_clock_nanosleep, __NR_clock_gettime, __NR_gettimeofday, __NR_getrandom,
		__NR_getpid, __NR_gettid, __NR_getuid, __NR_geteuid, __NR_getgid, __NR_getegid,
		__NR_epoll_create1, __NR_epoll_ctl, __NR_epoll_wait, __NR_epoll_pwait, __NR_poll,
		__NR_ppoll, __NR_pipe2, __NR_dup, __NR_dup3, __NR_fcntl, __NR_ioctl,
		__NR_socket, __NR_connect, __NR_accept4, __NR_bind, __NR_listen, __NR_sendto,
		__NR_recvfrom, __NR_sendmsg, __NR_recvmsg, __NR_shutdown, __NR_getsockopt,
		__NR_setsockopt, __NR_clone, __NR_clone3, __NR_set_robust_list, __NR_rseq,
		__NR_restart_syscall, __NR_exit, __NR_exit_group, __NR_tgkill, __NR_uname,
		__NR_prlimit64, __NR_sysinfo, __NR_statx, __NR_readlink, __NR_getcwd,
	};
	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0) != 0)
			die("seccomp_rule_add");
	/* As container profiles do for personality: one argument value only. */
	struct scmp_arg_cmp persona = {.arg = 0, .op = SCMP_CMP_EQ, .datum_a = 0};
	if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, __NR_personality, 1, persona) != 0)
		die("seccomp_rule_add personality");
	if (seccomp_load(ctx) != 0)
		die("seccomp_load");
}
#endif

/* exact_filter allows only the listed system calls. */
static void exact_filter(void) {
	static const int allowed[] = {
		/* memdoctor's list (internal/malloc sessionSyscalls) */
		__NR_mmap, __NR_mprotect, __NR_munmap, __NR_brk, __NR_mremap, __NR_madvise,
		__NR_futex, __NR_sched_getaffinity, __NR_getrandom, __NR_openat, __NR_open,
		__NR_read, __NR_close,
		/* this program's own */
		__NR_write, __NR_exit, __NR_exit_group, __NR_rt_sigreturn,
	};
	enum { n = sizeof allowed / sizeof allowed[0] };
	struct sock_filter f[4 + 2 * n + 1];
	int i = 0;
	f[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH);
	f[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR);
	for (int k = 0; k < n; k++) {
		f[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[k], 0, 1);
		f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	struct sock_fprog p = {.len = (unsigned short)i, .filter = f};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &p) != 0)
		die("SECCOMP_SET_MODE_FILTER");
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

static volatile int reader_started;

static void *reader(void *arg) {
	(void)arg;
	__atomic_store_n(&reader_started, 1, __ATOMIC_RELEASE);
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
	} else if (strcmp(argv[1], "exact") == 0) {
		/* The thread first, then the filter on both (TSYNC): starting a
		 * thread takes calls the list does not have. */
		pthread_t t;
		if (pthread_create(&t, NULL, reader, NULL) != 0)
			die("pthread_create");
		/* Once it runs its function it has made its start-up calls
		 * (rseq among them). */
		while (!__atomic_load_n(&reader_started, __ATOMIC_ACQUIRE))
			sched_yield();
		exact_filter();
		say(ready, (size_t)rn);
		pthread_join(t, NULL);
		return 0;
#ifdef LIBSECCOMP
	} else if (strcmp(argv[1], "container") == 0) {
		container();
#endif
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
