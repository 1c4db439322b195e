/*
 * libmemdoctor_preload.so: give glibc malloc's free memory back to the
 * kernel, from inside a running program, and say how much that saved.
 *
 * Loaded with LD_PRELOAD. Everything is off unless an environment variable
 * turns it on (see README.md):
 *
 *   MEMDOCTOR_TRIM_INTERVAL=30s   a background thread calls malloc_trim(0)
 *   MEMDOCTOR_TRIM_FREED=1GiB     free() counts bytes freed; the thread that
 *                                 crosses the threshold calls malloc_trim(0)
 *   MEMDOCTOR_STATS=PATH          JSON lines about each trim, a summary every
 *                                 MEMDOCTOR_STATS_INTERVAL (60s), and
 *                                 malloc_info dumps on request (PATH.request)
 *
 * Why: glibc keeps freed chunks in its arenas; malloc_trim(0) (glibc >= 2.8)
 * walks every arena and madvise(MADV_DONTNEED)s the free pages inside them,
 * which automatic trimming on free never does for chunks below the top of a
 * heap.
 *
 * Rules this file keeps, because it runs inside free() of any program:
 *   - The idle path is a read of one filter word (always the same word,
 *     zero, while the heap profile is off), a branch never taken, and a
 *     tail call through one pointer to the real free.
 *   - Nothing here takes a lock that free() callers could hold. Trims and
 *     stats are serialised by one atomic owner word ("busy"): a free() that
 *     finds it taken skips the trim instead of waiting, so a free() called
 *     from inside a trim (fclose in malloc_info's output path) only counts.
 *   - No malloc on the free() path when stats are off; with stats on, the
 *     only allocation is the stdio FILE that malloc_info needs, made after
 *     the real free has returned and with no lock held.
 *   - A failure (bad value, unwritable stats file, no thread) is reported
 *     once on stderr, prefixed "memdoctor-preload:", and turns the feature
 *     off. The host program always keeps running.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef __GLIBC__
#error "libmemdoctor_preload works with glibc malloc only"
#endif

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Requests are looked for this often (one stat-like open per period). */
#define REQUEST_POLL_MS 1000
/* free() adds to the shared counter in batches of at most this much per thread. */
#define MAX_BATCH (256 * 1024)
/*
 * The smallest MEMDOCTOR_TRIM_FREED: each trim walks every arena under its
 * lock, so a threshold of a few KiB trims thousands of times a second in a
 * program that frees steadily (1KiB made a 16-thread program 15x slower).
 * A smaller value is raised to this, with one line on stderr.
 */
#define MIN_TRIM_FREED ((uint64_t)4 << 20)
#define MIN_TRIM_FREED_TEXT "4MiB"

typedef void (*free_fn)(void *);
extern void __libc_free(void *);

/* ---- configuration: written by the constructor (and the fork child handler) ---- */

static uint64_t cfg_interval_ms;        /* MEMDOCTOR_TRIM_INTERVAL, 0 = off */
static _Atomic uint64_t cfg_freed;      /* MEMDOCTOR_TRIM_FREED, 0 = off; read by free() */
static uint64_t cfg_freed_asked;        /* the value given, when it was raised to MIN_TRIM_FREED */
static uint64_t cfg_batch;              /* per-thread batch before the shared counter */
static uint64_t cfg_stats_interval_ms = 60000;
static char stats_pattern[PATH_MAX];    /* MEMDOCTOR_STATS as given (may hold %p) */
static char stats_path[PATH_MAX];       /* expanded for this process */
static atomic_int stats_fd = -1;        /* -1 = stats off */
static int active;                      /* some feature is on: fork handlers work */
static int request_off;                 /* the request file could not be removed */
static uint64_t cfg_dump_ms = 10000;    /* MEMDOCTOR_PROFILE_INTERVAL */
#define DEFAULT_PROFILE_PATH "/tmp/memdoctor-heap.%p"
static int dump_failed;                 /* a dump failed: said once, no more dumps */

/* ---- state ---- */

static _Atomic(free_fn) real_free;
/* What free() calls: free_bootstrap until the real free is known, then the
 * real free itself (idle) or free_full (counting, profiling). */
static void free_bootstrap(void *p);
static void free_full(void *p);
static void dump_profile(void);
/* fn: where free() jumps once it knows p was never sampled. mask: the
 * filter slots free() may read, 0 while the heap profile is off (every
 * free() then reads md_prof_words[0], one word in one cache line and one
 * page, always 0), MD_NFILTER - 1 while it is on. One cache line, written
 * only when the routes change. */
static struct {
	_Atomic(free_fn) fn;
	_Atomic uint32_t mask;
} fr __attribute__((aligned(64))) = {free_bootstrap, 0};
static TLS int in_resolve;
static _Atomic uint64_t bootstrap_leaks;
static TLS uint64_t local_freed;
static _Atomic uint64_t freed_since_trim;
static _Atomic uintptr_t busy;          /* pthread_self() of the trimming thread, 0 = free */
static TLS int fork_owned;              /* this thread held busy when it forked */
static _Atomic uint64_t trims, released_bytes;
static char xml_iobuf[16384];           /* stdio buffer for malloc_info; used under busy */

enum trigger { TRIG_INTERVAL, TRIG_FREED, TRIG_REQUEST };
static const char *const trigger_names[] = {"interval", "freed", "request"};

#ifdef MD_TEST_HOOKS
void *(*md_test_dlsym)(void *, const char *) = dlsym;
#define DLSYM md_test_dlsym
#else
#define DLSYM dlsym
#endif

/* ---- small helpers ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static const char *errtext(int e)
{
	const char *s = strerrordesc_np(e);
	return s ? s : "unknown error";
}

/*
 * say writes one line "memdoctor-preload: " + the NULL-terminated list of
 * strings to stderr, with one write so it is not interleaved.
 */
__attribute__((sentinel)) static void say(const char *first, ...)
{
	char mem[1024];
	size_t len = strlen(MD_PREFIX), cap = sizeof mem - 1;
	memcpy(mem, MD_PREFIX, len);
	va_list ap;
	va_start(ap, first);
	for (const char *s = first; s; s = va_arg(ap, const char *)) {
		/* Long values are cut rather than dropping the whole message. */
		size_t n = strlen(s);
		if (n > cap - len)
			n = cap - len;
		memcpy(mem + len, s, n);
		len += n;
	}
	va_end(ap);
	mem[len++] = '\n';
	ssize_t r = write(2, mem, len);
	(void)r; /* nowhere left to report a failed write to stderr */
}

/* ---- the real free, and the bootstrap problem ---- */

/*
 * resolve_free finds the next definition of free (glibc's, or another
 * preloaded allocator's) with dlsym(RTLD_NEXT). If dlsym itself calls
 * free() while we resolve (older glibc allocated dlerror state; 2.34+ does
 * not on success), the nested call gets NULL and leaks its pointer: freeing
 * it with glibc's __libc_free would corrupt memory when the next allocator
 * is not glibc's, and a leak of a few bytes, once, is harmless. Only if
 * dlsym fails outright do we fall back to __libc_free.
 */
static free_fn resolve_free(void)
{
	if (in_resolve)
		return NULL;
	in_resolve = 1;
	void *sym = DLSYM(RTLD_NEXT, "free");
	in_resolve = 0;
	free_fn f = __libc_free;
	if (sym && sym != (void *)free)
		memcpy(&f, &sym, sizeof f);
	atomic_store_explicit(&real_free, f, memory_order_relaxed);
	/* From now on free() jumps straight there, unless the constructor
	 * already switched it to counting. */
	free_fn boot = free_bootstrap;
	free_fn to = atomic_load(&md_boot_used) ? free_full : f;
	atomic_compare_exchange_strong(&fr.fn, &boot, to);
	return f;
}

/* ---- one trim or stats operation at a time ---- */

static _Atomic int waiters; /* threads in acquire(): free() leaves busy to them */

static int try_acquire(void)
{
	uintptr_t none = 0, self = (uintptr_t)pthread_self();
	return atomic_load_explicit(&busy, memory_order_relaxed) == 0 &&
	       atomic_compare_exchange_strong_explicit(&busy, &none, self, memory_order_acquire,
						       memory_order_relaxed);
}

/* acquire waits for busy: the background thread, and fork. */
static void acquire(void)
{
	atomic_fetch_add(&waiters, 1);
	while (!try_acquire())
		sleep_ns(200000);
	atomic_fetch_sub(&waiters, 1);
}

static void release(void)
{
	atomic_store_explicit(&busy, 0, memory_order_release);
}

/* ---- stats output (callers hold busy) ---- */

static void stats_off(const char *what, int err)
{
	int fd = atomic_exchange(&stats_fd, -1);
	if (fd >= 0) {
		close(fd);
		say(what, stats_path, ": ", errtext(err), "; stats disabled", (char *)NULL);
	}
}

static void emit(struct md_buf *b)
{
	int fd = atomic_load(&stats_fd);
	if (fd < 0)
		return;
	if (b->overflow) /* cannot happen with the fixed fields; never write half a line */
		return;
	b->p[b->len++] = '\n'; /* md_buf keeps one byte for the NUL */
	size_t off = 0;
	while (off < b->len) {
		ssize_t n = write(fd, b->p + off, b->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			stats_off("writing ", n < 0 ? errno : EIO);
			return;
		}
		off += (size_t)n;
	}
}

static void head(struct md_buf *b, const char *event)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	md_puts(b, "{\"event\":");
	md_put_str(b, event);
	md_puts(b, ",\"time\":");
	md_put_time(b, &now);
	md_puts(b, ",\"pid\":");
	md_puti(b, getpid());
}

static void put_num_or_null(struct md_buf *b, int64_t v)
{
	if (v < 0)
		md_puts(b, "null");
	else
		md_puti(b, v);
}

static void put_mallinfo2(struct md_buf *b)
{
	struct mallinfo2 mi = mallinfo2();
	md_puts(b, ",\"mallinfo2\":{\"arena\":");
	md_putu(b, mi.arena);
	md_puts(b, ",\"ordblks\":");
	md_putu(b, mi.ordblks);
	md_puts(b, ",\"smblks\":");
	md_putu(b, mi.smblks);
	md_puts(b, ",\"hblks\":");
	md_putu(b, mi.hblks);
	md_puts(b, ",\"hblkhd\":");
	md_putu(b, mi.hblkhd);
	md_puts(b, ",\"fsmblks\":");
	md_putu(b, mi.fsmblks);
	md_puts(b, ",\"uordblks\":");
	md_putu(b, mi.uordblks);
	md_puts(b, ",\"fordblks\":");
	md_putu(b, mi.fordblks);
	md_puts(b, ",\"keepcost\":");
	md_putu(b, mi.keepcost);
	md_puts(b, "}");
}

struct tee {
	int fd, err;
	struct md_heap_counter heaps;
};

static ssize_t tee_write(void *cookie, const char *p, size_t n)
{
	struct tee *t = cookie;
	md_heap_count(&t->heaps, p, n);
	for (size_t off = 0; t->fd >= 0 && !t->err && off < n;) {
		ssize_t w = write(t->fd, p + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			t->err = w < 0 ? errno : EIO;
		else
			off += (size_t)w;
	}
	return (ssize_t)n;
}

/*
 * malloc_info_to runs malloc_info(0, ...) and returns the number of arenas
 * (one <heap nr="..."> element each); with fd >= 0 the XML is also written
 * there. -1 on failure, with *err set when writing failed.
 */
static int64_t malloc_info_to(int fd, int *err)
{
	struct tee t = {.fd = fd};
	cookie_io_functions_t io = {.write = tee_write};
	FILE *fp = fopencookie(&t, "w", io);
	if (!fp) {
		if (err)
			*err = errno;
		return -1;
	}
	setvbuf(fp, xml_iobuf, _IOFBF, sizeof xml_iobuf);
	int r = malloc_info(0, fp);
	if (fclose(fp) != 0 && r == 0)
		r = -1;
	if (err)
		*err = t.err ? t.err : (r ? EIO : 0);
	return r == 0 && !t.err ? (int64_t)t.heaps.count : -1;
}

/* ---- trimming ---- */

struct request {
	char action[16];
	char id[72];
	const char *xml;
};

static void do_trim(enum trigger trig, const struct request *req)
{
	uint64_t freed = atomic_exchange_explicit(&freed_since_trim, 0, memory_order_relaxed);
	if (atomic_load(&stats_fd) < 0) {
		malloc_trim(0);
		atomic_fetch_add(&trims, 1);
		return;
	}
	char mem[2048];
	struct md_buf b;
	md_buf_init(&b, mem, sizeof mem - 1);
	head(&b, "trim");
	int64_t before = md_rss_bytes();
	uint64_t t0 = mono_ns();
	malloc_trim(0);
	uint64_t t1 = mono_ns();
	int64_t after = md_rss_bytes();
	atomic_fetch_add(&trims, 1);
	if (before >= 0 && after >= 0 && before > after)
		atomic_fetch_add(&released_bytes, (uint64_t)(before - after));
	md_puts(&b, ",\"trigger\":");
	md_put_str(&b, trigger_names[trig]);
	if (req && req->id[0]) {
		md_puts(&b, ",\"request\":");
		md_put_str(&b, req->id);
	}
	md_puts(&b, ",\"elapsedMs\":");
	md_put_ms(&b, t1 - t0);
	md_puts(&b, ",\"rss\":{\"before\":");
	put_num_or_null(&b, before);
	md_puts(&b, ",\"after\":");
	put_num_or_null(&b, after);
	md_puts(&b, ",\"diff\":");
	if (before >= 0 && after >= 0)
		md_puti(&b, before - after);
	else
		md_puts(&b, "null");
	md_puts(&b, "}");
	put_mallinfo2(&b);
	md_puts(&b, ",\"arenas\":");
	put_num_or_null(&b, malloc_info_to(-1, NULL));
	md_puts(&b, ",\"freedBytes\":");
	md_putu(&b, freed);
	if (req && req->xml) {
		md_puts(&b, ",\"xml\":");
		md_put_str(&b, req->xml);
	}
	md_puts(&b, ",\"statsMs\":");
	md_put_ms(&b, mono_ns() - t1);
	md_puts(&b, "}");
	emit(&b);
}

static void write_summary(const char *event, const struct request *req)
{
	char mem[2048];
	struct md_buf b;
	md_buf_init(&b, mem, sizeof mem - 1);
	uint64_t t0 = mono_ns();
	head(&b, event);
	if (req) {
		md_puts(&b, ",\"trigger\":\"request\"");
		if (req->id[0]) {
			md_puts(&b, ",\"request\":");
			md_put_str(&b, req->id);
		}
	}
	md_puts(&b, ",\"rss\":");
	put_num_or_null(&b, md_rss_bytes());
	put_mallinfo2(&b);
	md_puts(&b, ",\"arenas\":");
	put_num_or_null(&b, malloc_info_to(-1, NULL));
	md_puts(&b, ",\"trims\":");
	md_putu(&b, atomic_load(&trims));
	md_puts(&b, ",\"releasedBytes\":");
	md_putu(&b, atomic_load(&released_bytes));
	md_puts(&b, ",\"freedSinceTrim\":");
	md_putu(&b, atomic_load(&freed_since_trim));
	if (req && req->xml) {
		md_puts(&b, ",\"xml\":");
		md_put_str(&b, req->xml);
	}
	md_puts(&b, ",\"statsMs\":");
	md_put_ms(&b, mono_ns() - t0);
	md_puts(&b, "}");
	emit(&b);
}

static void write_start(void)
{
	char mem[1024];
	struct md_buf b;
	md_buf_init(&b, mem, sizeof mem - 1);
	head(&b, "start");
	md_puts(&b, ",\"ppid\":");
	md_puti(&b, getppid());
	md_puts(&b, ",\"version\":1,\"glibc\":");
	md_put_str(&b, gnu_get_libc_version());
	md_puts(&b, ",\"rss\":");
	put_num_or_null(&b, md_rss_bytes());
	md_puts(&b, ",\"config\":{\"trimIntervalMs\":");
	md_putu(&b, cfg_interval_ms);
	md_puts(&b, ",\"trimFreedBytes\":");
	md_putu(&b, atomic_load(&cfg_freed));
	if (cfg_freed_asked) {
		md_puts(&b, ",\"trimFreedAskedBytes\":");
		md_putu(&b, cfg_freed_asked);
	}
	md_puts(&b, ",\"statsIntervalMs\":");
	md_putu(&b, cfg_stats_interval_ms);
	md_puts(&b, ",\"requestPollMs\":");
	md_putu(&b, REQUEST_POLL_MS);
	md_puts(&b, "}}");
	emit(&b);
}

static void write_error(const struct request *req, const char *a, const char *b2, const char *c,
			const char *d)
{
	char mem[2048];
	struct md_buf b;
	md_buf_init(&b, mem, sizeof mem - 1);
	head(&b, "error");
	md_puts(&b, ",\"trigger\":\"request\"");
	if (req->id[0]) {
		md_puts(&b, ",\"request\":");
		md_put_str(&b, req->id);
	}
	char msg[PATH_MAX + 256];
	struct md_buf m;
	md_buf_init(&m, msg, sizeof msg);
	md_puts(&m, a);
	md_puts(&m, b2);
	md_puts(&m, c);
	md_puts(&m, d);
	md_puts(&b, ",\"error\":");
	md_put_str(&b, msg);
	md_puts(&b, "}");
	emit(&b);
}

/*
 * account adds n freed bytes. Each thread adds to the shared counter only
 * every cfg_batch bytes (at most 256 KiB, at most 1/16 of the threshold), so
 * 16 threads freeing at full speed do not all write one cache line.
 */
__attribute__((noinline)) static void account(uint64_t n, uint64_t threshold)
{
	uint64_t l = local_freed + n;
	if (l < cfg_batch) {
		local_freed = l;
		return;
	}
	local_freed = 0;
	uint64_t total = atomic_fetch_add_explicit(&freed_since_trim, l, memory_order_relaxed) + l;
	/* Skip rather than wait; a waiting background thread or fork goes first. */
	if (total < threshold || atomic_load_explicit(&waiters, memory_order_relaxed) || !try_acquire())
		return;
	/* Another thread may have trimmed between our add and our acquire. */
	if (atomic_load_explicit(&freed_since_trim, memory_order_relaxed) >= threshold)
		do_trim(TRIG_FREED, NULL);
	release();
}

/* free_bootstrap: free() before the real free is resolved. */
static void free_bootstrap(void *p)
{
	free_fn f = atomic_load_explicit(&real_free, memory_order_relaxed);
	if (!f && !(f = resolve_free())) {
		atomic_fetch_add(&bootstrap_leaks, 1);
		return;
	}
	if (md_boot_owns(p))
		return;
	f(p);
}

/*
 * free_full: free() with MEMDOCTOR_TRIM_FREED set, or once the allocation
 * bootstrap handed out a block of its own. (A sampled block was already
 * matched by free() itself.)
 */
static void free_full(void *p)
{
	free_fn f = atomic_load_explicit(&real_free, memory_order_relaxed);
	if (!f && !(f = resolve_free())) {
		atomic_fetch_add(&bootstrap_leaks, 1);
		return;
	}
	if (!p || md_boot_owns(p))
		return; /* free(NULL) does nothing; a bootstrap block is never freed */
	uint64_t threshold = atomic_load_explicit(&cfg_freed, memory_order_relaxed);
	if (!threshold) {
		f(p);
		return;
	}
	/* Measure before: after free the chunk may already belong to someone else. */
	size_t n = malloc_usable_size(p);
	f(p);
	account(n, threshold);
}

/* free_prof_taken: free() of a p whose filter slot a sampled block
 * holds: one comparison tells most such p apart from that block. */
__attribute__((noinline)) static void free_prof_taken(void *p, uint16_t v)
{
	if (p && md_prof_match(v, p))
		md_prof_untrack_slow(p); /* before: afterwards p may be handed out again */
	atomic_load_explicit(&fr.fn, memory_order_relaxed)(p);
}

void md_free_route(void)
{
	free_fn f = atomic_load_explicit(&real_free, memory_order_relaxed);
	free_fn to = !f || atomic_load(&cfg_freed) || atomic_load(&md_boot_used) ? free_full : f;
	atomic_store(&fr.fn, to);
	/* Set before malloc() samples anything (md_prof_init), cleared after
	 * the words were zeroed (a fork child without tables). */
	atomic_store(&fr.mask, atomic_load(&md_prof_rate) ? MD_NFILTER - 1 : 0);
}

/*
 * free: one filter word read, a branch that is not taken unless a sampled
 * block holds p's filter slot, and an indirect tail jump to the real free
 * (or to free_full): no flag test, one indirect jump, and no frame. While
 * the profile is off the slot is masked to 0 and word 0 is never written,
 * so the branch is never taken (reading p's own slot instead cost 1% more:
 * one more page and line per slot the program's frees touch).
 *
 * Why no flag: a test of "is the profile on?" costs nothing in instructions,
 * but one of the two modes must then take the branch around the other's
 * code, and a taken branch before the indirect jump cost 2-3% of a
 * malloc+free pair (two, as when the profile's path branched back to a
 * shared jump, 8-10%); the filter read and the byte count in malloc() cost
 * less than that, in either mode (README.md, "Cost of sampling").
 */
__attribute__((optimize("omit-frame-pointer"))) EXPORT void free(void *p)
{
	/* = MD_FILTER_SLOT(p) while profiling: the mask is at most MD_NFILTER - 1 */
	uint32_t slot = (uint32_t)((uintptr_t)p >> 4) & atomic_load_explicit(&fr.mask, memory_order_relaxed);
	uint16_t v = atomic_load_explicit(&md_prof_words[slot], memory_order_relaxed);
	if (unlikely(v)) {
		free_prof_taken(p, v);
		return;
	}
	atomic_load_explicit(&fr.fn, memory_order_relaxed)(p);
}

/*
 * cfree: removed from glibc's API in 2.26 but still exported for binaries
 * linked before that (an alias of free there). Such binaries bind to the
 * first definition, so defining it here counts their frees too.
 */
EXPORT void cfree(void *p);
EXPORT void cfree(void *p)
{
	free(p);
}

/* ---- the malloc_info request protocol (README.md) ---- */

static void handle_request(void)
{
	char req_path[PATH_MAX + 16], xml[PATH_MAX + 32], tmp[PATH_MAX + 48];
	struct md_buf b;
	md_buf_init(&b, req_path, sizeof req_path);
	md_puts(&b, stats_path);
	md_puts(&b, ".request");
	/* O_NONBLOCK: a FIFO put there by mistake must not hang the thread. */
	int fd = open(req_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return;
	/* Only a regular file of this process' user (or root) is a request:
	 * another user who can write the directory must not make it trim. */
	struct stat st;
	char owner[24] = "";
	int foreign = fstat(fd, &st) < 0 || !S_ISREG(st.st_mode);
	if (!foreign && st.st_uid != getuid() && st.st_uid != geteuid() && st.st_uid != 0) {
		struct md_buf ob;
		md_buf_init(&ob, owner, sizeof owner);
		md_putu(&ob, st.st_uid);
		foreign = 1;
	}
	char body[256];
	ssize_t n = foreign ? 0 : read(fd, body, sizeof body - 1);
	close(fd);
	body[n > 0 ? n : 0] = 0;

	/* "ACTION [ID]": ACTION is info (default) or trim; ID is echoed back. */
	struct request req = {.action = "info"};
	char *save = NULL, *tok = strtok_r(body, " \t\r\n", &save);
	int bad = 0;
	if (tok) {
		if (strlen(tok) < sizeof req.action)
			strcpy(req.action, tok);
		else
			bad = 1;
		tok = strtok_r(NULL, " \t\r\n", &save);
		if (tok) {
			strncpy(req.id, tok, sizeof req.id - 1);
			req.id[sizeof req.id - 1] = 0;
		}
	}
	if (strcmp(req.action, "info") && strcmp(req.action, "trim"))
		bad = 1;

	md_buf_init(&b, xml, sizeof xml);
	md_puts(&b, stats_path);
	md_puts(&b, ".malloc_info.xml");
	md_buf_init(&b, tmp, sizeof tmp);
	md_puts(&b, xml);
	md_puts(&b, ".tmp");

	acquire();
	if (foreign) {
		write_error(&req, req_path, owner[0] ? ": owned by uid " : ": not a regular file", owner,
			    owner[0] ? ", not this process' user or root: ignored" : ": ignored");
	} else if (bad) {
		write_error(&req, "unknown request \"", req.action, "\": want info or trim", "");
	} else {
		/* O_EXCL after unlink: never write through a planted symlink. */
		unlink(tmp);
		int xfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
		int err = xfd < 0 ? errno : 0;
		if (xfd >= 0) {
			malloc_info_to(xfd, &err);
			if (close(xfd) < 0 && !err)
				err = errno;
		}
		if (err) {
			unlink(tmp);
			write_error(&req, "writing ", tmp, ": ", errtext(err));
		} else if (rename(tmp, xml) < 0) {
			err = errno;
			unlink(tmp);
			write_error(&req, "renaming to ", xml, ": ", errtext(err));
		} else {
			req.xml = xml;
			if (!strcmp(req.action, "trim"))
				do_trim(TRIG_REQUEST, &req);
			else
				write_summary("info", &req);
		}
	}
	release();
	if (unlink(req_path) < 0 && errno != ENOENT) {
		say("cannot remove ", req_path, ": ", errtext(errno), "; malloc_info requests disabled", (char *)NULL);
		request_off = 1;
	}
}

/* ---- the background thread ---- */

static void sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *background(void *arg)
{
	(void)arg;
	/* Named by itself: pthread_setname_np from the creating thread writes
	 * /proc/self/task/TID/comm (an open, and /proc entries the kernel must
	 * drop again when the process ends: a cost paid by every fork child). */
	prctl(PR_SET_NAME, "memdoctor-trim", 0, 0, 0);
	const uint64_t ms = 1000000, never = UINT64_MAX;
	uint64_t now = mono_ns();
	uint64_t next_trim = cfg_interval_ms ? now + cfg_interval_ms * ms : never;
	uint64_t next_summary = never, next_poll = never;
	uint64_t next_dump = atomic_load(&md_prof_rate) ? now + cfg_dump_ms * ms : never;
	if (atomic_load(&stats_fd) >= 0) {
		next_poll = now + REQUEST_POLL_MS * ms;
		if (cfg_stats_interval_ms)
			next_summary = now + cfg_stats_interval_ms * ms;
	}
	for (;;) {
		if (atomic_load(&stats_fd) < 0)
			next_summary = next_poll = never;
		if (request_off)
			next_poll = never;
		uint64_t next = next_trim;
		if (next_summary < next)
			next = next_summary;
		if (next_poll < next)
			next = next_poll;
		if (dump_failed)
			next_dump = never;
		if (next_dump < next)
			next = next_dump;
		if (next == never)
			return NULL; /* nothing left to do (stats failed, no interval) */
		sleep_until(next);
		now = mono_ns();
		if (now >= next_poll) {
			handle_request();
			next_poll = mono_ns() + REQUEST_POLL_MS * ms;
		}
		if (now >= next_trim) {
			acquire();
			do_trim(TRIG_INTERVAL, NULL);
			release();
			/* From the end of the trim: a slow trim never runs back to back. */
			next_trim = mono_ns() + cfg_interval_ms * ms;
		}
		if (now >= next_dump) {
			acquire();
			dump_profile();
			release();
			next_dump = mono_ns() + cfg_dump_ms * ms;
		}
		if (now >= next_summary) {
			acquire();
			write_summary("summary", NULL);
			release();
			next_summary += cfg_stats_interval_ms * ms;
			if (next_summary <= now)
				next_summary = now + cfg_stats_interval_ms * ms;
		}
	}
}

/* dump_profile writes the heap profile (callers hold busy). */
static void dump_profile(void)
{
	if (dump_failed || !atomic_load(&md_prof_rate))
		return;
	int e = md_prof_dump();
	if (e) {
		dump_failed = 1;
		say("writing the heap profile ", md_prof_path(), ": ", errtext(e), "; no more dumps", (char *)NULL);
	}
}

static void start_thread(void)
{
	if (!cfg_interval_ms && atomic_load(&stats_fd) < 0 && !atomic_load(&md_prof_rate))
		return;
	pthread_t tid;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Block every signal in the new thread: process signals (SIGINT,
	 * SIGCHLD, sigwait users) must keep going to the program's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&tid, &attr, background, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (e) {
		say("cannot start the background thread: ", errtext(e),
		    "; periodic trimming and stats disabled", (char *)NULL);
		cfg_interval_ms = 0;
		int fd = atomic_exchange(&stats_fd, -1);
		if (fd >= 0)
			close(fd);
		return;
	}
}

/* ---- fork ---- */

/*
 * Before fork, wait for a trim or stats operation in another thread to end,
 * so the child never inherits busy (or the stdio lock inside malloc_info)
 * held by a thread that does not exist there. glibc runs these handlers
 * before it takes the malloc locks itself.
 */
static void fork_prepare(void)
{
	if (atomic_load(&busy) == (uintptr_t)pthread_self()) {
		fork_owned = 1; /* fork from a signal handler that interrupted a trim */
		return;
	}
	acquire();
	fork_owned = 0;
}

static void fork_parent(void)
{
	if (!fork_owned)
		release();
	fork_owned = 0;
}

static int open_stats(long pid);

static void fork_child(void)
{
	fork_owned = 0;
	atomic_store(&waiters, 0);
	release();
	atomic_store(&freed_since_trim, 0);
	atomic_store(&trims, 0);
	atomic_store(&released_bytes, 0);
	md_prof_fork_child();
	dump_failed = 0;
	if (atomic_load(&stats_fd) >= 0) {
		if (strstr(stats_pattern, "%p")) {
			close(atomic_exchange(&stats_fd, -1));
			open_stats(getpid()); /* a file of its own, starting with "start" */
		} else {
			write_start(); /* same file: "start" with the child's pid */
		}
	}
	/* The parent's background thread does not exist here: start ours. */
	start_thread();
}

/* ---- start-up ---- */

static int open_stats(long pid)
{
	if (md_expand_path(stats_pattern, pid, stats_path, sizeof stats_path) < 0) {
		say("MEMDOCTOR_STATS=\"", stats_pattern,
		    "\": too long, or a % other than %p and %%; stats disabled", (char *)NULL);
		return -1;
	}
	int fd = open(stats_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		say("MEMDOCTOR_STATS: cannot open ", stats_path, ": ", errtext(e), "; stats disabled",
		    (char *)NULL);
		return -1;
	}
	atomic_store(&stats_fd, fd);
	/* Written here, before any thread of ours runs: the first line of a
	 * process is always "start". */
	write_start();
	return 0;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static void bad_value(const char *name, const char *value, const char *want)
{
	char mem[512];
	struct md_buf b;
	md_buf_init(&b, mem, sizeof mem);
	md_puts(&b, name);
	md_puts(&b, "=\"");
	if (strlen(value) < 64)
		md_puts(&b, value);
	else
		md_puts(&b, "(too long)");
	md_puts(&b, "\": ");
	say(mem, want, (char *)NULL);
}

__attribute__((constructor)) static void md_init(void)
{
	if (!atomic_load(&real_free))
		resolve_free();
	const char *v;
	uint64_t x;
	if ((v = env("MEMDOCTOR_TRIM_INTERVAL"))) {
		if (md_parse_duration(v, &x) < 0)
			bad_value("MEMDOCTOR_TRIM_INTERVAL", v,
				  "want a duration such as 500ms, 30s, 5m or 1h; periodic trimming disabled");
		else
			cfg_interval_ms = x;
	}
	uint64_t threshold = 0;
	if ((v = env("MEMDOCTOR_TRIM_FREED"))) {
		if (md_parse_size(v, &x) < 0)
			bad_value("MEMDOCTOR_TRIM_FREED", v,
				  "want a size such as 64MiB or 1GiB; trimming on free disabled");
		else
			threshold = x;
		if (threshold && threshold < MIN_TRIM_FREED) {
			bad_value("MEMDOCTOR_TRIM_FREED", v,
				  "below the minimum of " MIN_TRIM_FREED_TEXT
				  " (each trim walks every arena); using " MIN_TRIM_FREED_TEXT);
			cfg_freed_asked = threshold;
			threshold = MIN_TRIM_FREED;
		}
	}
	cfg_batch = threshold / 16 < MAX_BATCH ? threshold / 16 : MAX_BATCH;
	atomic_store_explicit(&cfg_freed, threshold, memory_order_release);
	if ((v = env("MEMDOCTOR_PROFILE"))) {
		if (md_parse_size(v, &x) < 0) {
			bad_value("MEMDOCTOR_PROFILE", v,
				  "want a sampling rate in bytes such as 512KiB or 1MiB; heap profile disabled");
		} else if (x) {
			const char *pi = env("MEMDOCTOR_PROFILE_INTERVAL");
			if (pi && (md_parse_duration(pi, &cfg_dump_ms) < 0 || !cfg_dump_ms)) {
				bad_value("MEMDOCTOR_PROFILE_INTERVAL", pi,
					  "want a duration such as 10s or 1m; using 10s");
				cfg_dump_ms = 10000;
			}
			const char *pp = env("MEMDOCTOR_PROFILE_PATH");
			if (md_prof_init(x, pp ? pp : DEFAULT_PROFILE_PATH) < 0)
				bad_value("MEMDOCTOR_PROFILE_PATH", pp ? pp : DEFAULT_PROFILE_PATH,
					  "too long, a % other than %p and %%, or no memory for the tables; heap profile disabled");
		}
	}
	md_free_route(); /* real_free was resolved above */
	if ((v = env("MEMDOCTOR_STATS"))) {
		const char *si = env("MEMDOCTOR_STATS_INTERVAL");
		if (si) {
			if (md_parse_duration(si, &x) < 0) {
				bad_value("MEMDOCTOR_STATS_INTERVAL", si,
					  "want a duration such as 60s or 5m; summary lines disabled");
				x = 0;
			}
			cfg_stats_interval_ms = x;
		}
		if (strlen(v) >= sizeof stats_pattern) {
			bad_value("MEMDOCTOR_STATS", v, "path too long; stats disabled");
		} else {
			strcpy(stats_pattern, v);
			open_stats(getpid());
		}
	}
	active = cfg_interval_ms || threshold || atomic_load(&stats_fd) >= 0 || atomic_load(&md_prof_rate);
	if (!active)
		return; /* idle: free() only passes through */
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	start_thread();
}

/* At exit: a last dump, so a program that ends leaves its profile. Waits
 * at most about a second for a trim or dump in progress. */
__attribute__((destructor)) static void md_fini(void)
{
	if (!atomic_load(&md_prof_rate) || dump_failed)
		return;
	for (int i = 0; i < 5000; i++) {
		if (try_acquire()) {
			dump_profile();
			release();
			return;
		}
		sleep_ns(200000);
	}
}

#ifdef MD_TEST_HOOKS
void md_test_reset(void)
{
	atomic_store(&real_free, NULL);
	atomic_store(&fr.fn, free_bootstrap);
}

uint64_t md_bootstrap_leaks(void)
{
	return atomic_load(&bootstrap_leaks);
}
#endif
