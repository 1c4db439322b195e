/*
 * Sampled heap profile: which call stacks allocated the memory a process
 * keeps (MEMDOCTOR_PROFILE, see README.md "Heap profile").
 *
 * The allocation functions (malloc, calloc, realloc, memalign,
 * posix_memalign, aligned_alloc) are interposed like free(). malloc counts
 * the thread's bytes and makes an indirect tail jump to the next definition
 * whether profiling or not (no flag to test); the others test one flag and
 * make the same jump while profiling is off, and test the thread's byte
 * count before it while it is on (one indirect jump either way). With
 * MEMDOCTOR_PROFILE=RATE, each thread counts the bytes it allocates
 * down from an exponentially distributed gap of mean RATE (a Poisson
 * process over allocated bytes, as Go's runtime.MemProfileRate); the
 * allocation that crosses zero is sampled: its call stack is taken by
 * walking frame pointers, and the block is entered in a fixed table so
 * that its free() is matched. A sampled block of n bytes stands for
 * n / (1 - exp(-n/RATE)) bytes, the unbiased estimate for this sampling.
 *
 * Rules, on top of those of preload.c:
 *   - Nothing here allocates. The tables are one anonymous mapping made
 *     by the constructor; a fork child replaces it with fresh zero pages.
 *   - The only lock is a spin lock around the two tables, held for a few
 *     hundred instructions and never across a call into libc, and not
 *     across fork (the child starts with fresh tables). A thread
 *     that is interrupted by a signal handler while holding it, and whose
 *     handler allocates, does not sample in the handler (tl_in_table).
 *   - The stack is read by a frame-pointer walk bounded by the mapping of
 *     the thread's stack (read once per thread from /proc/self/maps with
 *     raw system calls: no malloc, no lock, no cancellation point). A
 *     frame chain broken by code built without frame pointers ends the
 *     walk early: the stack is shallower, never a fault. backtrace() was
 *     not used: it loads libgcc_s with malloc and dl locks on first use,
 *     and the unwinder takes a global lock on each call.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define MAX_DEPTH 32
#define NSTACKS 4096          /* distinct stacks kept; slot 0 takes the rest */
#define NBLOCKS (1u << 16)    /* live sampled blocks at most NBLOCKS*3/4 */
#define NFILTER MD_NFILTER    /* the words free() checks before the table */

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*memalign_fn)(size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

/* ---- the next definitions (glibc's, or another preloaded allocator's) ---- */

static void *malloc_boot(size_t n);
static void *calloc_boot(size_t k, size_t n);
static void *realloc_boot(void *p, size_t n);
static void *memalign_boot(size_t a, size_t n);
static void *aligned_alloc_boot(size_t a, size_t n);
static int posix_memalign_boot(void **pp, size_t a, size_t n);

/* The boot functions until resolved: a thread that sees rt.prof set
 * before the resolved pointers still lands somewhere that works. */
static struct {
	malloc_fn malloc;
	calloc_fn calloc;
	realloc_fn realloc;
	memalign_fn memalign, aligned_alloc;
	posix_memalign_fn posix_memalign;
} real = {malloc_boot, calloc_boot, realloc_boot, memalign_boot, aligned_alloc_boot, posix_memalign_boot};
static _Atomic int real_ready;
static TLS int in_resolve;

/*
 * Where the exported functions go: the *_boot functions until the real
 * ones are known, then the real ones (or realloc_checked). With prof set
 * (sampling on) all but malloc take their profiled path instead, which ends
 * in a tail jump through real: one indirect jump either way (malloc counts
 * in either mode and goes through rt.malloc). One cache line, written only
 * when the routes change.
 */
static struct {
	_Atomic(malloc_fn) malloc;
	_Atomic(calloc_fn) calloc;
	_Atomic(realloc_fn) realloc;
	_Atomic(memalign_fn) memalign, aligned_alloc;
	_Atomic(posix_memalign_fn) posix_memalign;
	_Atomic int prof;
} rt __attribute__((aligned(64))) = {malloc_boot, calloc_boot, realloc_boot, memalign_boot, aligned_alloc_boot,
				     posix_memalign_boot, 0};

/*
 * Allocations made while dlsym resolves the real functions (older glibc
 * allocated dlerror state there) come from this buffer; free() ignores
 * them and realloc() moves them out.
 */
static _Alignas(64) char boot_buf[65536];
static _Atomic size_t boot_off;
_Atomic int md_boot_used;

int md_boot_owns(const void *p)
{
	return (const char *)p >= boot_buf && (const char *)p < boot_buf + sizeof boot_buf;
}

static void *boot_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	if (align > 4096 || n > sizeof boot_buf)
		return NULL;
	size_t off = atomic_load(&boot_off), start;
	do {
		start = (off + 16 + align - 1) & ~(align - 1); /* 16 bytes before: the size */
		if (start + n > sizeof boot_buf)
			return NULL;
	} while (!atomic_compare_exchange_weak(&boot_off, &off, start + n));
	memcpy(boot_buf + start - sizeof(size_t), &n, sizeof n);
	if (!atomic_exchange(&md_boot_used, 1))
		md_free_route();
	return boot_buf + start; /* static storage: already zero */
}

static void *sym(const char *name, void *fallback)
{
	void *s = dlsym(RTLD_NEXT, name);
	return s ? s : fallback;
}

static void *libc_aligned_alloc(size_t a, size_t n) { return __libc_memalign(a, n); }
static int libc_posix_memalign(void **pp, size_t a, size_t n)
{
	if (a % sizeof(void *) || (a & (a - 1)))
		return EINVAL;
	void *p = __libc_memalign(a, n);
	if (!p)
		return ENOMEM;
	*pp = p;
	return 0;
}

static void route(void);

/* resolve_alloc finds the real functions; 0 when called from inside dlsym. */
static int resolve_alloc(void)
{
	if (atomic_load_explicit(&real_ready, memory_order_acquire))
		return 1;
	if (in_resolve)
		return 0;
	in_resolve = 1;
	void *m = sym("malloc", (void *)__libc_malloc), *c = sym("calloc", (void *)__libc_calloc),
	     *r = sym("realloc", (void *)__libc_realloc), *ma = sym("memalign", (void *)__libc_memalign),
	     *aa = sym("aligned_alloc", (void *)libc_aligned_alloc),
	     *pm = sym("posix_memalign", (void *)libc_posix_memalign);
	in_resolve = 0;
	memcpy(&real.malloc, &m, sizeof m);
	memcpy(&real.calloc, &c, sizeof c);
	memcpy(&real.realloc, &r, sizeof r);
	memcpy(&real.memalign, &ma, sizeof ma);
	memcpy(&real.aligned_alloc, &aa, sizeof aa);
	memcpy(&real.posix_memalign, &pm, sizeof pm);
	atomic_store_explicit(&real_ready, 1, memory_order_release);
	route();
	return 1;
}

static void *malloc_boot(size_t n)
{
	if (!resolve_alloc())
		return boot_alloc(n, 16);
	return atomic_load_explicit(&rt.malloc, memory_order_relaxed)(n);
}

static void *calloc_boot(size_t k, size_t n)
{
	if (!resolve_alloc()) {
		size_t t;
		return __builtin_mul_overflow(k, n, &t) ? NULL : boot_alloc(t, 16);
	}
	return atomic_load_explicit(&rt.calloc, memory_order_relaxed)(k, n);
}

static void *realloc_boot(void *p, size_t n)
{
	if (!resolve_alloc()) {
		void *q = boot_alloc(n, 16);
		if (q && p) {
			size_t old;
			memcpy(&old, (char *)p - sizeof old, sizeof old);
			memcpy(q, p, old < n ? old : n);
		}
		return q;
	}
	return atomic_load_explicit(&rt.realloc, memory_order_relaxed)(p, n);
}

static void *memalign_boot(size_t a, size_t n)
{
	if (!resolve_alloc())
		return boot_alloc(n, a);
	return atomic_load_explicit(&rt.memalign, memory_order_relaxed)(a, n);
}

static void *aligned_alloc_boot(size_t a, size_t n)
{
	if (!resolve_alloc())
		return boot_alloc(n, a);
	return atomic_load_explicit(&rt.aligned_alloc, memory_order_relaxed)(a, n);
}

static int posix_memalign_boot(void **pp, size_t a, size_t n)
{
	if (!resolve_alloc()) {
		void *p = boot_alloc(n, a);
		if (!p)
			return ENOMEM;
		*pp = p;
		return 0;
	}
	return atomic_load_explicit(&rt.posix_memalign, memory_order_relaxed)(pp, a, n);
}

/* ---- sampling state ---- */

_Atomic uint64_t md_prof_rate; /* mean bytes between samples; 0 = off */
/* Bytes left before the next sample; while the profile is off, before
 * malloc() next looks whether it was turned on (IDLE_GAP). malloc() counts
 * in either mode: it has no flag to test. */
static TLS int64_t tl_next;
#define IDLE_GAP ((int64_t)64 << 20)
static TLS uint64_t tl_rng;     /* 0 = this thread has not drawn yet */
static TLS int tl_in_table;     /* inside a table operation (a signal handler must not wait) */
static TLS uintptr_t tl_stack_lo, tl_stack_hi;

struct stack {
	uint64_t hash;
	uint32_t depth, used;
	uintptr_t pc[MAX_DEPTH];
	double alloc_n, alloc_b, free_n, free_b;
};

struct block {
	uintptr_t p;
	uint32_t stack;
	uint32_t pad;
	double n, b; /* what this block stands for */
};

struct tables {
	struct stack stacks[NSTACKS];
	struct block blocks[NBLOCKS];
	uint16_t fcount[NFILTER]; /* live sampled blocks per filter slot (md_prof_words) */
	uint64_t live, samples, dropped;
	/* The slots of stacks in use, in the order first used: the dump reads
	 * these, not every slot (4,096 slots of 304 bytes: a process that
	 * sampled little would fault in 300 zero pages at each exit). */
	uint32_t nused;
	uint16_t used[NSTACKS];
};

static struct tables *tab;
static _Atomic int tab_lock;
_Alignas(4096) _Atomic uint16_t md_prof_words[NFILTER]; /* whole pages: a fork child maps fresh ones */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* lock spins briefly (the lock is held for a few hundred instructions),
 * then yields the CPU to a holder that was preempted. */
static void lock(void)
{
	for (unsigned i = 0;; i++) {
		int zero = 0;
		if (atomic_load_explicit(&tab_lock, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak_explicit(&tab_lock, &zero, 1, memory_order_acquire,
							  memory_order_relaxed))
			return;
		if (i < 100)
			cpu_relax();
		else
			sched_yield();
	}
}

/* lock_bounded gives up after about a second (a thread that died holding
 * it: only at exit, when another thread was stopped mid-operation). */
static int lock_bounded(void)
{
	for (int i = 0; i < 5000; i++) {
		int zero = 0;
		if (atomic_compare_exchange_strong_explicit(&tab_lock, &zero, 1, memory_order_acquire,
							    memory_order_relaxed))
			return 0;
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void unlock(void)
{
	atomic_store_explicit(&tab_lock, 0, memory_order_release);
}

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t rng_next(void)
{
	/* xorshift64* */
	uint64_t x = tl_rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	tl_rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* draw returns an exponentially distributed gap with mean md_prof_rate. */
static int64_t draw(void)
{
	double u = ((double)(rng_next() >> 11) + 1.0) / 9007199254740992.0; /* (0, 1] */
	double g = -log(u) * (double)atomic_load_explicit(&md_prof_rate, memory_order_relaxed);
	return g > 9e18 ? INT64_MAX : (int64_t)g;
}

/* ---- the thread's stack, from /proc/self/maps ---- */

static long raw_open(const char *path) { return syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC); }

static uintptr_t parse_hex(const char **s, const char *end)
{
	uintptr_t v = 0;
	for (; *s < end; (*s)++) {
		char c = **s;
		if (c >= '0' && c <= '9')
			v = v * 16 + (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uintptr_t)(c - 'a' + 10);
		else
			break;
	}
	return v;
}

/* stack_bounds finds the mapping that holds sp. */
static int stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi)
{
	long fd = raw_open("/proc/self/maps");
	if (fd < 0)
		return -1;
	char buf[4096];
	size_t have = 0;
	int found = -1;
	for (;;) {
		long n = syscall(SYS_read, (int)fd, buf + have, sizeof buf - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		size_t start = 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			const char *s = buf + start, *e = buf + i;
			uintptr_t a = parse_hex(&s, e);
			if (s < e && *s == '-') {
				s++;
				uintptr_t b = parse_hex(&s, e);
				if (sp >= a && sp < b) {
					*lo = a;
					*hi = b;
					found = 0;
				}
			}
			start = i + 1;
		}
		if (found == 0)
			break;
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == sizeof buf)
			have = 0; /* a line longer than the buffer: skip it */
	}
	syscall(SYS_close, (int)fd);
	return found;
}

/*
 * walk follows the frame-pointer chain from frame (the sampling
 * function's frame: [0] the caller's frame pointer, [1] the return address
 * into the caller of malloc). Every frame read lies between the current
 * stack pointer and the top of the thread's stack mapping, and frames must
 * go up the stack: a broken chain ends the walk.
 */
__attribute__((noinline)) static int walk(uintptr_t *pc, const void *frame)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (sp < tl_stack_lo || sp >= tl_stack_hi) {
		uintptr_t lo = 0, hi = 0;
		if (stack_bounds(sp, &lo, &hi) < 0)
			return 0;
		tl_stack_lo = lo;
		tl_stack_hi = hi;
	}
	uintptr_t hi = tl_stack_hi, fp = (uintptr_t)frame;
	int n = 0;
	while (n < MAX_DEPTH) {
		if (fp < sp || fp > hi - 2 * sizeof(uintptr_t) || (fp & (sizeof(uintptr_t) - 1)))
			break;
		const uintptr_t *f = (const uintptr_t *)fp;
		uintptr_t ret = f[1], next = f[0];
		if (ret < 4096)
			break;
		pc[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

/* ---- the tables (callers hold the lock) ---- */

static uint32_t stack_slot(uint64_t h, const uintptr_t *pc, int depth)
{
	for (uint32_t i = 0; i < 64; i++) {
		uint32_t s = 1 + (uint32_t)((h + i) % (NSTACKS - 1));
		struct stack *st = &tab->stacks[s];
		if (!st->used) {
			st->used = 1;
			tab->used[tab->nused++] = (uint16_t)s;
			st->hash = h;
			st->depth = (uint32_t)depth;
			memcpy(st->pc, pc, (size_t)depth * sizeof *pc);
			return s;
		}
		if (st->hash == h && st->depth == (uint32_t)depth &&
		    !memcmp(st->pc, pc, (size_t)depth * sizeof *pc))
			return s;
	}
	if (!tab->stacks[0].used) { /* full: counted as an unknown stack */
		tab->stacks[0].used = 1;
		tab->used[tab->nused++] = 0;
	}
	return 0;
}

static inline uint32_t block_home(uintptr_t p) { return (uint32_t)mix(p) & (NBLOCKS - 1); }
static inline uint32_t filter_slot(uintptr_t p) { return MD_FILTER_SLOT(p); }

static void block_freed(const struct block *b)
{
	struct stack *st = &tab->stacks[b->stack];
	st->free_n += b->n;
	st->free_b += b->b;
	uint32_t f = filter_slot(b->p);
	if (!--tab->fcount[f]) /* a slot once shared stays MANY until it empties */
		atomic_store_explicit(&md_prof_words[f], 0, memory_order_relaxed);
	tab->live--;
}

/* block_remove takes p out of the table (backward-shift deletion: no
 * tombstones, so probes stay short however long the program runs). */
static int block_remove(uintptr_t p, struct block *out)
{
	uint32_t i = block_home(p);
	for (;;) {
		if (!tab->blocks[i].p)
			return 0;
		if (tab->blocks[i].p == p)
			break;
		i = (i + 1) & (NBLOCKS - 1);
	}
	*out = tab->blocks[i];
	uint32_t hole = i;
	for (uint32_t j = (i + 1) & (NBLOCKS - 1); tab->blocks[j].p; j = (j + 1) & (NBLOCKS - 1)) {
		uint32_t home = block_home(tab->blocks[j].p);
		/* move j into the hole if the hole is no farther from j than its home */
		if (((j - home) & (NBLOCKS - 1)) >= ((j - hole) & (NBLOCKS - 1))) {
			tab->blocks[hole] = tab->blocks[j];
			hole = j;
		}
	}
	tab->blocks[hole].p = 0;
	return 1;
}

static void block_insert(const struct block *b)
{
	struct block old;
	if (block_remove(b->p, &old)) /* a free we could not see (a signal handler's) */
		block_freed(&old);
	if (tab->live >= NBLOCKS / 4 * 3) {
		tab->dropped++;
		return;
	}
	uint32_t i = block_home(b->p);
	while (tab->blocks[i].p)
		i = (i + 1) & (NBLOCKS - 1);
	tab->blocks[i] = *b;
	tab->live++;
	struct stack *st = &tab->stacks[b->stack];
	st->alloc_n += b->n;
	st->alloc_b += b->b;
	uint32_t f = filter_slot(b->p);
	atomic_store_explicit(&md_prof_words[f], tab->fcount[f]++ ? (uint16_t)MD_FILTER_MANY : MD_FILTER_TAG(b->p),
			      memory_order_relaxed);
}

static int table_enter(void)
{
	if (tl_in_table)
		return -1;
	tl_in_table = 1;
	lock();
	return 0;
}

static void table_leave(void)
{
	unlock();
	tl_in_table = 0;
}

/* ---- sampling ---- */

/* due counts n down from the thread's gap. In unsigned arithmetic: a
 * request above INT64_MAX bytes, which fails anyway, may wrap the count and
 * go unsampled, and no clamp costs the common path three instructions. */
static inline int due(size_t n)
{
	uint64_t left = (uint64_t)tl_next - (uint64_t)n;
	tl_next = (int64_t)left;
	return (int64_t)left < 0;
}

__attribute__((noinline)) static void sample(void *p, size_t n, const void *frame)
{
	if (!tab || tl_in_table)
		return;
	if (!tl_rng) {
		tl_rng = mix((uintptr_t)&tl_rng ^ (uint64_t)syscall(SYS_gettid) << 32 ^ (uintptr_t)p) | 1;
		tl_next = draw() - (int64_t)n;
		if (tl_next >= 0)
			return;
	}
	tl_next = draw();
	double rate = (double)atomic_load_explicit(&md_prof_rate, memory_order_relaxed);
	if (rate <= 0)
		return;
	double q = n ? -expm1(-(double)n / rate) : 1.0; /* chance that a block of n bytes is sampled */
	if (q <= 0)
		q = 1.0;
	uintptr_t pc[MAX_DEPTH];
	int depth = walk(pc, frame);
	uint64_t h = 14695981039346656037ULL;
	for (int i = 0; i < depth; i++)
		h = mix(h ^ pc[i]);
	if (table_enter() < 0)
		return;
	struct block b = {.p = (uintptr_t)p, .stack = stack_slot(h, pc, depth), .n = 1.0 / q, .b = (double)n / q};
	tab->samples++;
	block_insert(&b);
	table_leave();
}

/* md_prof_untrack forgets p if it is a sampled block (free() calls it
 * before the real free: afterwards the address may be handed out again). */
void md_prof_untrack(void *p)
{
	if (!tab || !md_prof_maybe(md_prof_words, p))
		return;
	md_prof_untrack_slow(p);
}

#ifdef MD_TEST_HOOKS
static uint64_t slow_misses;
void md_test_prof_counts(uint64_t *live, uint64_t *samples, uint64_t *misses)
{
	lock();
	*live = tab ? tab->live : 0;
	*samples = tab ? tab->samples : 0;
	*misses = slow_misses;
	unlock();
}
#endif

void md_prof_untrack_slow(void *p)
{
	if (table_enter() < 0)
		return;
	struct block b;
	if (block_remove((uintptr_t)p, &b))
		block_freed(&b);
#ifdef MD_TEST_HOOKS
	else
		slow_misses++;
#endif
	table_leave();
}

/*
 * The sampling versions. The common case (not due) tail-calls the real
 * function; only a due allocation enters a *_sampled function, which runs
 * the real one and samples with its own frame: reached through tail calls
 * only, that frame's return address is in the caller of malloc.
 */
#define FAST __attribute__((optimize("omit-frame-pointer")))
#define SLOW __attribute__((noinline, optimize("no-omit-frame-pointer")))

SLOW static void *malloc_sampled(size_t n)
{
	if (unlikely(!atomic_load_explicit(&rt.prof, memory_order_relaxed))) {
		/* Not sampling: back here after IDLE_GAP more bytes (a thread
		 * that counted before the profile was turned on starts sampling
		 * at the latest then). */
		tl_next = IDLE_GAP;
		return atomic_load_explicit(&rt.malloc, memory_order_relaxed)(n);
	}
	void *p = real.malloc(n);
	if (p)
		sample(p, n, __builtin_frame_address(0));
	return p;
}

SLOW static void *calloc_sampled(size_t k, size_t n, size_t t)
{
	void *p = real.calloc(k, n);
	if (p)
		sample(p, t, __builtin_frame_address(0));
	return p;
}

FAST static void *calloc_prof(size_t k, size_t n)
{
	size_t t;
	if (__builtin_mul_overflow(k, n, &t) || likely(!due(t)))
		return real.calloc(k, n);
	return calloc_sampled(k, n, t);
}

SLOW static void *realloc_sampled(void *p, size_t n)
{
	void *q = real.realloc(p, n);
	if (q && n)
		sample(q, n, __builtin_frame_address(0));
	return q;
}

FAST static void *realloc_prof(void *p, size_t n)
{
	if (unlikely(md_boot_owns(p))) {
		void *q = malloc(n);
		if (q) {
			size_t old;
			memcpy(&old, (char *)p - sizeof old, sizeof old);
			memcpy(q, p, old < n ? old : n);
		}
		return q;
	}
	/* The old block is gone once realloc returns (moved or shrunk in
	 * place); the new one is a new allocation. On failure it stays but is
	 * no longer followed: rare, and costs one sample. */
	if (p)
		md_prof_untrack(p);
	if (likely(!due(n)))
		return real.realloc(p, n);
	return realloc_sampled(p, n);
}

SLOW static void *memalign_sampled(size_t a, size_t n)
{
	void *p = real.memalign(a, n);
	if (p)
		sample(p, n, __builtin_frame_address(0));
	return p;
}

FAST static void *memalign_prof(size_t a, size_t n)
{
	if (likely(!due(n)))
		return real.memalign(a, n);
	return memalign_sampled(a, n);
}

SLOW static void *aligned_alloc_sampled(size_t a, size_t n)
{
	void *p = real.aligned_alloc(a, n);
	if (p)
		sample(p, n, __builtin_frame_address(0));
	return p;
}

FAST static void *aligned_alloc_prof(size_t a, size_t n)
{
	if (likely(!due(n)))
		return real.aligned_alloc(a, n);
	return aligned_alloc_sampled(a, n);
}

SLOW static int posix_memalign_sampled(void **pp, size_t a, size_t n)
{
	int r = real.posix_memalign(pp, a, n);
	if (!r)
		sample(*pp, n, __builtin_frame_address(0));
	return r;
}

FAST static int posix_memalign_prof(void **pp, size_t a, size_t n)
{
	if (likely(!due(n)))
		return real.posix_memalign(pp, a, n);
	return posix_memalign_sampled(pp, a, n);
}

/* realloc_checked: profiling off, but a bootstrap block may come back. */
static void *realloc_checked(void *p, size_t n)
{
	if (unlikely(md_boot_owns(p))) {
		void *q = malloc(n);
		if (q) {
			size_t old;
			memcpy(&old, (char *)p - sizeof old, sizeof old);
			memcpy(q, p, old < n ? old : n);
		}
		return q;
	}
	return real.realloc(p, n);
}

/* ---- the exported functions ---- */

/*
 * malloc: the thread's byte count, a branch not taken unless a sample is
 * due, and an indirect tail jump to the real function; no flag test, and
 * the same instructions whether sampling or not (while not sampling the
 * count only brings it to malloc_sampled once per IDLE_GAP bytes, which
 * goes on to the real function). A flag test costs one of the two modes a
 * taken branch before the indirect jump: 2-3% of a malloc+free pair, more
 * than the count (see free() in preload.c). The other functions, called
 * less often, test rt.prof: not sampling, one load, the test and an
 * indirect tail jump to the real function; sampling, the test, the
 * thread's byte count, and an indirect tail jump to the real function, or,
 * when a sample is due, a direct tail call to the sampling version. Built
 * without a frame of their own (FAST), so that a *_sampled function's
 * return address is in the caller of malloc.
 */
FAST EXPORT void *malloc(size_t n)
{
	if (unlikely(due(n)))
		return malloc_sampled(n);
	/* rt.malloc is real.malloc once resolved, sampling or not */
	return atomic_load_explicit(&rt.malloc, memory_order_relaxed)(n);
}

FAST EXPORT void *calloc(size_t k, size_t n)
{
	if (unlikely(atomic_load_explicit(&rt.prof, memory_order_relaxed)))
		return calloc_prof(k, n);
	return atomic_load_explicit(&rt.calloc, memory_order_relaxed)(k, n);
}

FAST EXPORT void *realloc(void *p, size_t n)
{
	if (unlikely(atomic_load_explicit(&rt.prof, memory_order_relaxed)))
		return realloc_prof(p, n);
	return atomic_load_explicit(&rt.realloc, memory_order_relaxed)(p, n);
}

FAST EXPORT void *memalign(size_t a, size_t n)
{
	if (unlikely(atomic_load_explicit(&rt.prof, memory_order_relaxed)))
		return memalign_prof(a, n);
	return atomic_load_explicit(&rt.memalign, memory_order_relaxed)(a, n);
}

FAST EXPORT void *aligned_alloc(size_t a, size_t n)
{
	if (unlikely(atomic_load_explicit(&rt.prof, memory_order_relaxed)))
		return aligned_alloc_prof(a, n);
	return atomic_load_explicit(&rt.aligned_alloc, memory_order_relaxed)(a, n);
}

FAST EXPORT int posix_memalign(void **pp, size_t a, size_t n)
{
	if (unlikely(atomic_load_explicit(&rt.prof, memory_order_relaxed)))
		return posix_memalign_prof(pp, a, n);
	return atomic_load_explicit(&rt.posix_memalign, memory_order_relaxed)(pp, a, n);
}

/* route points the exported functions at the real ones, or at the
 * sampling versions. */
static void route(void)
{
	if (!atomic_load_explicit(&real_ready, memory_order_acquire))
		return;
	int on = atomic_load(&md_prof_rate) && tab;
	atomic_store(&rt.malloc, real.malloc);
	atomic_store(&rt.calloc, real.calloc);
	atomic_store(&rt.realloc, atomic_load(&md_boot_used) ? realloc_checked : real.realloc);
	atomic_store(&rt.memalign, real.memalign);
	atomic_store(&rt.aligned_alloc, real.aligned_alloc);
	atomic_store(&rt.posix_memalign, real.posix_memalign);
	atomic_store(&rt.prof, on);
}

/* ---- set-up, fork ---- */

static char prof_pattern[PATH_MAX];
static char prof_path[PATH_MAX];

static struct tables *map_tables(void *at)
{
	void *m = mmap(at, sizeof(struct tables), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

int md_prof_init(uint64_t rate, const char *pattern)
{
	if (strlen(pattern) >= sizeof prof_pattern)
		return -1;
	strcpy(prof_pattern, pattern);
	if (md_expand_path(prof_pattern, getpid(), prof_path, sizeof prof_path) < 0)
		return -1;
	tab = map_tables(NULL);
	if (!tab)
		return -1;
	atomic_store(&md_prof_rate, rate);
	/* free() reads the filter before malloc() samples anything. */
	md_free_route();
	resolve_alloc();
	route();
	/* This thread's count so far ran down IDLE_GAP: start with a draw. */
	tl_next = 0;
	return 0;
}

const char *md_prof_path(void) { return prof_path; }

/*
 * The child starts an empty profile of its own (fresh zero pages: no copy
 * of the parent's tables), written to its own file. The lock is not taken
 * around fork: another thread may hold it, or be halfway through a table
 * update, when the parent forks, but the child drops the tables and the
 * lock word altogether. Taking it in a prepare handler would deadlock: a
 * thread that allocates while holding a stdio lock (getline) could wait
 * for it, while fork waits for stdio's list lock.
 */
void md_prof_fork_child(void)
{
	if (!tab)
		return;
	tl_in_table = 0;
	/* The filter words of the parent's samples: fresh zero pages, or zeros
	 * written when the mapping cannot be replaced. */
	if (mmap(md_prof_words, sizeof md_prof_words, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		memset((void *)md_prof_words, 0, sizeof md_prof_words);
	if (!map_tables(tab)) {
		atomic_store(&md_prof_rate, 0);
		route();
		md_free_route();
	}
	atomic_store(&tab_lock, 0);
	if (md_expand_path(prof_pattern, getpid(), prof_path, sizeof prof_path) < 0)
		prof_path[0] = 0;
}

/* ---- the dump: raw records for memdoctor (README.md "Heap profile") ---- */

struct out {
	int fd, err;
	struct md_buf b;
	char mem[8192];
};

static void out_flush(struct out *o)
{
	size_t off = 0;
	while (!o->err && off < o->b.len) {
		ssize_t w = write(o->fd, o->mem + off, o->b.len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			o->err = w < 0 ? errno : EIO;
		else
			off += (size_t)w;
	}
	md_buf_init(&o->b, o->mem, sizeof o->mem);
}

static void out_room(struct out *o, size_t n)
{
	if (o->b.cap - o->b.len < n)
		out_flush(o);
}

static void put_hex(struct md_buf *b, uint64_t v)
{
	char s[17];
	int i = 16;
	s[i] = 0;
	do {
		s[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	md_puts(b, s + i);
}

static uint64_t round_u(double x) { return x <= 0 ? 0 : (uint64_t)(x + 0.5); }

/*
 * md_prof_dump writes the profile to PATH.tmp and renames it to PATH.
 * Called with preload.c's busy word held. Returns 0 or an errno.
 */
int md_prof_dump(void)
{
	if (!tab || !prof_path[0])
		return 0;
	char tmp[PATH_MAX + 8];
	struct md_buf pb;
	md_buf_init(&pb, tmp, sizeof tmp);
	md_puts(&pb, prof_path);
	md_puts(&pb, ".tmp");
	if (pb.overflow)
		return ENAMETOOLONG;
	unlink(tmp);
	static struct out o; /* under busy: one dump at a time */
	o.err = 0;
	o.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (o.fd < 0)
		return errno;
	md_buf_init(&o.b, o.mem, sizeof o.mem);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	if (lock_bounded() < 0) {
		close(o.fd);
		unlink(tmp);
		return EDEADLK;
	}
	uint64_t samples = tab->samples, dropped = tab->dropped, live = tab->live;
	uint32_t nused = tab->nused;
	unlock();
	md_puts(&o.b, "memdoctor heap profile 1\npid ");
	md_puti(&o.b, getpid());
	md_puts(&o.b, "\nrate ");
	md_putu(&o.b, atomic_load(&md_prof_rate));
	md_puts(&o.b, "\ntime ");
	md_putu(&o.b, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
	md_puts(&o.b, "\nsamples ");
	md_putu(&o.b, samples);
	md_puts(&o.b, "\nlive ");
	md_putu(&o.b, live);
	md_puts(&o.b, "\ndropped ");
	md_putu(&o.b, dropped);
	md_puts(&o.b, "\n");
	for (uint32_t k = 0; k < nused && !o.err; k++) { /* a slot, once used, stays used */
		struct stack st;
		if (lock_bounded() < 0) {
			o.err = EDEADLK;
			break;
		}
		st = tab->stacks[tab->used[k]];
		unlock();
		out_room(&o, 64 + 5 * 24 + MAX_DEPTH * 17);
		/* stack ALLOC_OBJECTS ALLOC_BYTES INUSE_OBJECTS INUSE_BYTES PC... */
		md_puts(&o.b, "stack ");
		md_putu(&o.b, round_u(st.alloc_n));
		md_puts(&o.b, " ");
		md_putu(&o.b, round_u(st.alloc_b));
		md_puts(&o.b, " ");
		md_putu(&o.b, round_u(st.alloc_n - st.free_n));
		md_puts(&o.b, " ");
		md_putu(&o.b, round_u(st.alloc_b - st.free_b));
		for (uint32_t i = 0; i < st.depth && i < MAX_DEPTH; i++) {
			md_puts(&o.b, " ");
			put_hex(&o.b, st.pc[i]);
		}
		md_puts(&o.b, "\n");
	}
	/* The mappings, to symbolize the addresses after the process is gone. */
	out_room(&o, 16);
	md_puts(&o.b, "maps\n");
	out_flush(&o);
	long mfd = raw_open("/proc/self/maps");
	if (mfd >= 0) {
		for (;;) {
			long n = syscall(SYS_read, (int)mfd, o.mem, sizeof o.mem);
			if (n <= 0)
				break;
			o.b.len = (size_t)n;
			out_flush(&o);
		}
		syscall(SYS_close, (int)mfd);
	}
	out_flush(&o);
	int err = o.err;
	if (close(o.fd) < 0 && !err)
		err = errno;
	if (!err && rename(tmp, prof_path) < 0)
		err = errno;
	if (err)
		unlink(tmp);
	return err;
}
