// inject_integrity: a target that notices any trace a foreign call leaves.
//
// memdoctor's tests stop one of its threads, make that thread call libc
// functions (mmap, fmemopen, malloc_info, malloc_trim, ...), put back the
// thread's registers, extended (vector) state and signal mask, and let it
// go. This program checks that nothing changed:
//
//   - Four threads block in a system call made from inline assembly, with
//     known values in every register the kernel keeps across a system call:
//     the vector registers (zmm0-31 and k1-k7 with AVX-512, ymm0-15 with
//     AVX2, xmm0-15 otherwise), MXCSR, rbx, r12-r14 and the argument
//     registers. Right after the call returns they are compared with what
//     was loaded. The calls: clock_nanosleep (sleep), read on a pipe
//     nothing writes to (read), FUTEX_WAIT (futex), epoll_wait (epoll).
//     Their results are checked too: a kernel-internal -ERESTART* code
//     (512..516) reaching user space is counted apart, and a sleep that
//     returns 0 must have lasted as long as asked.
//   - One thread (vector) never blocks: it loops in user mode with the same
//     registers live and changing (xor with a key, twice), and checks them
//     after each loop. It is stopped mid-loop by the tests.
//   - The main thread reads commands on stdin (blocked in read).
//   - A POSIX timer sends SIGRTMIN+2 to the process every millisecond; its
//     handler clobbers vector registers (a memset), which the kernel must
//     undo. SIGRTMIN+1 (queued, so none is lost) is counted per receiving
//     thread: the tests send some with tgkill and expect every one.
//
// Protocol (one line each, flushed):
//   ready {"pid":N,"vector_isa":"avx512f|avx2|sse2|none","tids":{...}}
//   "status" on stdin  -> status {"errors":N,"restart_codes":N,"checks":{...},
//                                 "signals":{"timer":N,"rt1":{...}},"first_error":"..."}
//   "exit" on stdin (or EOF) -> the final status line; exit 0 when errors
//                                and restart_codes are 0, else 1.
//
// Build: gcc -O2 -pthread -o inject_integrity inject_integrity.c
// (no -m flags: the vector code is chosen at run time). With
// -DSELFTEST_CORRUPT one register value of the vector thread is changed
// once after its loop, to show the checks are not blind.
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { T_MAIN, T_SLEEP, T_READ, T_FUTEX, T_EPOLL, T_VECTOR, NT };
static const char *names[NT] = {"main", "sleep", "read", "futex", "epoll", "vector"};

static atomic_long checks[NT], rt1[NT], errors, restart_codes, timer_hits;
static _Atomic pid_t tids[NT];
static atomic_int stopping, started;
static atomic_int have_error;
static char first_error[256];
static int isa; // 2 avx512f, 1 avx2, 0 sse2, -1 none (not x86-64)
static int wake_pipe[2], epoll_pipe[2], epfd;
static atomic_int futex_word;

static void fail(const char *fmt, ...) {
	if (!atomic_exchange(&have_error, 1)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(first_error, sizeof first_error, fmt, ap);
		va_end(ap);
	}
	atomic_fetch_add(&errors, 1);
}

static int slot_of_self(void) {
	pid_t me = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < NT; i++)
		if (atomic_load(&tids[i]) == me)
			return i;
	return -1;
}

static void on_rt1(int sig) {
	(void)sig;
	int i = slot_of_self();
	if (i >= 0)
		atomic_fetch_add(&rt1[i], 1);
}

static void on_timer(int sig) {
	(void)sig;
	volatile char buf[4096];
	memset((char *)buf, sig, sizeof buf); // vector stores in glibc's memset
	atomic_fetch_add(&timer_hits, 1);
}

// The register file one checked call loads and reads back. Offsets are
// used by the assembly below.
struct regs {
	uint8_t vec[32][64];   //    0: vector registers, 64 bytes each
	uint64_t k[8];         // 2048: opmask k0-k7 (k0 unused)
	uint64_t gpr[10];      // 2112: rbx r12 r13 r14 rdi rsi rdx r10 r8 r9
	uint64_t nr;           // 2192: system call number
	int64_t ret;           // 2200: its result
	uint64_t gpr_after[10];// 2208
	uint32_t mxcsr;        // 2288: value loaded
	uint32_t mxcsr_after;  // 2292
	uint32_t mxcsr_saved;  // 2296: the thread's own, put back after
	uint32_t pad;
	uint8_t vec_after[32][64]; // 2304
	uint64_t k_after[8];       // 4352
};
_Static_assert(__builtin_offsetof(struct regs, vec_after) == 2304, "layout");
_Static_assert(__builtin_offsetof(struct regs, k_after) == 4352, "layout");

static uint64_t xorshift(uint64_t *s) {
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(struct regs *r, uint64_t seed) {
	for (size_t i = 0; i < sizeof r->vec; i += 8) {
		uint64_t v = xorshift(&seed);
		memcpy((uint8_t *)r->vec + i, &v, 8);
	}
	for (int i = 0; i < 8; i++)
		r->k[i] = xorshift(&seed);
	for (int i = 0; i < 4; i++)
		r->gpr[i] = xorshift(&seed);
	r->mxcsr = 0x7f80; // all exceptions masked, round toward zero
}

#if defined(__x86_64__)
#define REP16(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define REP32(M) REP16(M) M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) \
	M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)
#define ZL(i) "vmovdqu64 " #i "*64(%%r15), %%zmm" #i "\n\t"
#define ZS(i) "vmovdqu64 %%zmm" #i ", 2304+" #i "*64(%%r15)\n\t"
#define YL(i) "vmovdqu " #i "*64(%%r15), %%ymm" #i "\n\t"
#define YS(i) "vmovdqu %%ymm" #i ", 2304+" #i "*64(%%r15)\n\t"
#define XL(i) "movdqu " #i "*64(%%r15), %%xmm" #i "\n\t"
#define XS(i) "movdqu %%xmm" #i ", 2304+" #i "*64(%%r15)\n\t"
#define KL(i) "kmovq 2048+" #i "*8(%%r15), %%k" #i "\n\t"
#define KS(i) "kmovq %%k" #i ", 4352+" #i "*8(%%r15)\n\t"
#define X16 "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", \
	"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"
#define X32 X16, "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", \
	"xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31"

// The general part around the system call: load the patterns and the
// arguments, call, store everything back. r15 holds the struct.
#define GPR_CALL \
	"stmxcsr 2296(%%r15)\n\t" \
	"ldmxcsr 2288(%%r15)\n\t" \
	"mov 2112(%%r15), %%rbx\n\t" \
	"mov 2120(%%r15), %%r12\n\t" \
	"mov 2128(%%r15), %%r13\n\t" \
	"mov 2136(%%r15), %%r14\n\t" \
	"mov 2144(%%r15), %%rdi\n\t" \
	"mov 2152(%%r15), %%rsi\n\t" \
	"mov 2160(%%r15), %%rdx\n\t" \
	"mov 2168(%%r15), %%r10\n\t" \
	"mov 2176(%%r15), %%r8\n\t" \
	"mov 2184(%%r15), %%r9\n\t" \
	"mov 2192(%%r15), %%rax\n\t" \
	"syscall\n\t" \
	"mov %%rax, 2200(%%r15)\n\t" \
	"mov %%rbx, 2208(%%r15)\n\t" \
	"mov %%r12, 2216(%%r15)\n\t" \
	"mov %%r13, 2224(%%r15)\n\t" \
	"mov %%r14, 2232(%%r15)\n\t" \
	"mov %%rdi, 2240(%%r15)\n\t" \
	"mov %%rsi, 2248(%%r15)\n\t" \
	"mov %%rdx, 2256(%%r15)\n\t" \
	"mov %%r10, 2264(%%r15)\n\t" \
	"mov %%r8, 2272(%%r15)\n\t" \
	"mov %%r9, 2280(%%r15)\n\t" \
	"stmxcsr 2292(%%r15)\n\t"
#define GPR_CLOBBERS "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "memory", "cc"

__attribute__((target("avx512f"))) static void call512(struct regs *r) {
	register struct regs *p asm("r15") = r;
	asm volatile(REP32(ZL) KL(1) KL(2) KL(3) KL(4) KL(5) KL(6) KL(7)
		GPR_CALL
		REP32(ZS) KS(1) KS(2) KS(3) KS(4) KS(5) KS(6) KS(7)
		"ldmxcsr 2296(%%r15)\n\t"
		"vzeroupper\n\t"
		: : "r"(p) : GPR_CLOBBERS, X32, "k1", "k2", "k3", "k4", "k5", "k6", "k7");
}

__attribute__((target("avx2"))) static void call256(struct regs *r) {
	register struct regs *p asm("r15") = r;
	asm volatile(REP16(YL) GPR_CALL REP16(YS)
		"ldmxcsr 2296(%%r15)\n\t"
		"vzeroupper\n\t"
		: : "r"(p) : GPR_CLOBBERS, X16);
}

static void call128(struct regs *r) {
	register struct regs *p asm("r15") = r;
	asm volatile(REP16(XL) GPR_CALL REP16(XS)
		"ldmxcsr 2296(%%r15)\n\t"
		: : "r"(p) : GPR_CLOBBERS, X16);
}

// The vector thread's loop: registers live and changing, no system call.
#define ZX(i) "vpxorq 4416(%%r15), %%zmm" #i ", %%zmm" #i "\n\t"
#define YX(i) "vpxor 4416(%%r15), %%ymm" #i ", %%ymm" #i "\n\t"
#define XX(i) "pxor 4416(%%r15), %%xmm" #i "\n\t"
#define LOOP_GPR \
	"mov 2112(%%r15), %%rbx\n\t" \
	"mov 2120(%%r15), %%r12\n\t" \
	"mov 2128(%%r15), %%r13\n\t" \
	"mov 2136(%%r15), %%r14\n\t" \
	"mov $100000, %%rcx\n\t"
#define LOOP_END \
	"add $7, %%rbx\n\t" \
	"sub $7, %%rbx\n\t" \
	"xor %%rcx, %%r12\n\t" \
	"xor %%rcx, %%r12\n\t" \
	"dec %%rcx\n\t" \
	"jnz 1b\n\t" \
	"mov %%rbx, 2208(%%r15)\n\t" \
	"mov %%r12, 2216(%%r15)\n\t" \
	"mov %%r13, 2224(%%r15)\n\t" \
	"mov %%r14, 2232(%%r15)\n\t"

struct loopregs {
	struct regs r;
	uint8_t key[64]; // 4416 (pxor wants it 16-byte aligned)
} __attribute__((aligned(64)));
_Static_assert(__builtin_offsetof(struct loopregs, key) == 4416, "layout");

__attribute__((target("avx512f"))) static void loop512(struct loopregs *l) {
	register struct loopregs *p asm("r15") = l;
	asm volatile(REP32(ZL) KL(1) KL(2) KL(3) KL(4) KL(5) KL(6) KL(7) LOOP_GPR
		"1:\n\t" REP32(ZX) REP32(ZX) LOOP_END
		REP32(ZS) KS(1) KS(2) KS(3) KS(4) KS(5) KS(6) KS(7) "vzeroupper\n\t"
		: : "r"(p) : GPR_CLOBBERS, X32, "k1", "k2", "k3", "k4", "k5", "k6", "k7");
}

__attribute__((target("avx2"))) static void loop256(struct loopregs *l) {
	register struct loopregs *p asm("r15") = l;
	asm volatile(REP16(YL) LOOP_GPR "1:\n\t" REP16(YX) REP16(YX) LOOP_END REP16(YS) "vzeroupper\n\t"
		: : "r"(p) : GPR_CLOBBERS, X16);
}

static void loop128(struct loopregs *l) {
	register struct loopregs *p asm("r15") = l;
	asm volatile(REP16(XL) LOOP_GPR "1:\n\t" REP16(XX) REP16(XX) LOOP_END REP16(XS)
		: : "r"(p) : GPR_CLOBBERS, X16);
}
#endif

// compare reports every register that differs; gprs is how many of
// rbx r12 r13 r14 rdi rsi rdx r10 r8 r9 to compare.
static void compare(const char *who, struct regs *r, int gprs, int mxcsr) {
	static const char *gn[10] = {"rbx", "r12", "r13", "r14", "rdi", "rsi", "rdx", "r10", "r8", "r9"};
	int nvec = isa == 2 ? 32 : 16, width = isa == 2 ? 64 : isa == 1 ? 32 : 16;
	if (isa < 0)
		return;
	for (int i = 0; i < nvec; i++)
		if (memcmp(r->vec[i], r->vec_after[i], width) != 0)
			fail("%s: vector register %d changed", who, i);
	if (isa == 2)
		for (int i = 1; i < 8; i++)
			if (r->k[i] != r->k_after[i])
				fail("%s: k%d changed", who, i);
	for (int i = 0; i < gprs; i++)
		if (r->gpr[i] != r->gpr_after[i])
			fail("%s: %s changed (%#llx, want %#llx)", who, gn[i],
			     (unsigned long long)r->gpr_after[i], (unsigned long long)r->gpr[i]);
	if (mxcsr && r->mxcsr != r->mxcsr_after)
		fail("%s: mxcsr changed (%#x, want %#x)", who, r->mxcsr_after, r->mxcsr);
}

// checked makes one system call with the register discipline above and
// returns its result (a negative errno).
static long checked(int who, struct regs *r, long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
	long args[6] = {a1, a2, a3, a4, a5, a6};
	for (int i = 0; i < 6; i++)
		r->gpr[4 + i] = (uint64_t)args[i];
	r->nr = (uint64_t)nr;
#if defined(__x86_64__)
	if (isa == 2)
		call512(r);
	else if (isa == 1)
		call256(r);
	else
		call128(r);
	compare(names[who], r, 10, 1);
	long ret = r->ret;
#else
	long ret = syscall(nr, a1, a2, a3, a4, a5, a6);
	if (ret < 0)
		ret = -errno;
#endif
	if (ret <= -512 && ret >= -516) {
		atomic_fetch_add(&restart_codes, 1);
		fail("%s: system call %ld returned %ld (a kernel-internal restart code)", names[who], nr, ret);
	}
	atomic_fetch_add(&checks[who], 1);
	return ret;
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void registered(int who) {
	atomic_store(&tids[who], (pid_t)syscall(SYS_gettid));
	atomic_fetch_add(&started, 1);
}

static void *sleeper(void *arg) {
	struct regs r;
	(void)arg;
	registered(T_SLEEP);
	fill(&r, 11);
	while (!atomic_load(&stopping)) {
		struct timespec ts = {0, 20 * 1000 * 1000}, rem;
		double t0 = now();
		for (;;) {
			long ret = checked(T_SLEEP, &r, SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)&ts, (long)&rem, 0, 0);
			if (ret == -EINTR) {
				ts = rem;
				continue;
			}
			if (ret != 0)
				fail("sleep: clock_nanosleep returned %ld", ret);
			else if (now() - t0 < 0.0199)
				fail("sleep: 20 ms asked, %.3f ms slept", (now() - t0) * 1e3);
			break;
		}
	}
	return NULL;
}

static void *reader(void *arg) {
	struct regs r;
	char b;
	(void)arg;
	registered(T_READ);
	fill(&r, 22);
	while (!atomic_load(&stopping)) {
		long ret = checked(T_READ, &r, SYS_read, wake_pipe[0], (long)&b, 1, 0, 0, 0);
		if (ret != 1 && ret != -EINTR)
			fail("read: returned %ld", ret);
	}
	return NULL;
}

static void *waiter(void *arg) {
	struct regs r;
	(void)arg;
	registered(T_FUTEX);
	fill(&r, 33);
	while (!atomic_load(&stopping)) {
		long ret = checked(T_FUTEX, &r, SYS_futex, (long)&futex_word, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0);
		if (ret != 0 && ret != -EAGAIN && ret != -EINTR)
			fail("futex: returned %ld", ret);
	}
	return NULL;
}

static void *poller(void *arg) {
	struct regs r;
	struct epoll_event ev;
	(void)arg;
	registered(T_EPOLL);
	fill(&r, 44);
	while (!atomic_load(&stopping)) {
		long ret = checked(T_EPOLL, &r, SYS_epoll_wait, epfd, (long)&ev, 1, 100, 0, 0);
		if (ret != 0 && ret != -EINTR)
			fail("epoll: returned %ld", ret);
	}
	return NULL;
}

static void *vectors(void *arg) {
	static struct loopregs l;
	(void)arg;
	registered(T_VECTOR);
	fill(&l.r, 55);
	uint64_t seed = 66;
	for (size_t i = 0; i < sizeof l.key; i += 8) {
		uint64_t v = xorshift(&seed);
		memcpy(l.key + i, &v, 8);
	}
	int rounds = 0;
	while (!atomic_load(&stopping)) {
#if defined(__x86_64__)
		if (isa == 2)
			loop512(&l);
		else if (isa == 1)
			loop256(&l);
		else
			loop128(&l);
#ifdef SELFTEST_CORRUPT
		if (rounds == 0)
			l.r.vec_after[3][5] ^= 1;
#endif
		compare("vector", &l.r, 4, 0);
#endif
		rounds++;
		atomic_fetch_add(&checks[T_VECTOR], 1);
	}
	return NULL;
}

static void print_status(const char *word) {
	printf("%s {\"errors\":%ld,\"restart_codes\":%ld,\"checks\":{", word, atomic_load(&errors), atomic_load(&restart_codes));
	for (int i = 0; i < NT; i++)
		printf("%s\"%s\":%ld", i ? "," : "", names[i], atomic_load(&checks[i]));
	printf("},\"signals\":{\"timer\":%ld,\"rt1\":{", atomic_load(&timer_hits));
	for (int i = 0; i < NT; i++)
		printf("%s\"%s\":%ld", i ? "," : "", names[i], atomic_load(&rt1[i]));
	printf("}},\"first_error\":\"");
	for (const char *c = first_error; *c; c++)
		if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20)
			putchar(*c);
	printf("\"}\n");
	fflush(stdout);
}

int main(void) {
#if defined(__x86_64__)
	__builtin_cpu_init();
	isa = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
#else
	isa = -1;
#endif
	if (pipe(wake_pipe) || pipe(epoll_pipe)) {
		perror("pipe");
		return 2;
	}
	epfd = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN};
	if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, epoll_pipe[0], &ev)) {
		perror("epoll");
		return 2;
	}
	struct sigaction sa = {0};
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_rt1;
	sigaction(SIGRTMIN + 1, &sa, NULL);
	sa.sa_handler = on_timer;
	sigaction(SIGRTMIN + 2, &sa, NULL);
	registered(T_MAIN);

	pthread_t th[NT];
	void *(*fns[NT])(void *) = {NULL, sleeper, reader, waiter, poller, vectors};
	for (int i = 1; i < NT; i++)
		if (pthread_create(&th[i], NULL, fns[i], NULL)) {
			perror("pthread_create");
			return 2;
		}
	while (atomic_load(&started) < NT)
		usleep(1000);

	timer_t timer;
	struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN + 2};
	struct itimerspec its = {{0, 1000000}, {0, 1000000}};
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) || timer_settime(timer, 0, &its, NULL)) {
		perror("timer");
		return 2;
	}

	printf("ready {\"pid\":%d,\"vector_isa\":\"%s\",\"tids\":{", getpid(),
	       isa == 2 ? "avx512f" : isa == 1 ? "avx2" : isa == 0 ? "sse2" : "none");
	for (int i = 0; i < NT; i++)
		printf("%s\"%s\":%d", i ? "," : "", names[i], atomic_load(&tids[i]));
	printf("}}\n");
	fflush(stdout);

	char line[64];
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "status", 6) == 0)
			print_status("status");
		else if (strncmp(line, "exit", 4) == 0)
			break;
	}

	timer_delete(timer);
	atomic_store(&stopping, 1);
	if (write(wake_pipe[1], "x", 1) != 1)
		fail("waking the reader");
	atomic_store(&futex_word, 1);
	syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	for (int i = 1; i < NT; i++)
		pthread_join(th[i], NULL);
	print_status("status");
	return atomic_load(&errors) == 0 && atomic_load(&restart_codes) == 0 ? 0 : 1;
}
