/*
 * Internal interface of libmemdoctor_preload.so, shared by its source files
 * and by the unit tests (test/unit.c links the sources directly).
 *
 * Nothing in here allocates: the library runs inside free() of arbitrary
 * programs, so every helper formats into caller-provided buffers and reads
 * /proc with open/read into stack buffers.
 */
#ifndef MEMDOCTOR_PRELOAD_H
#define MEMDOCTOR_PRELOAD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define MD_PREFIX "memdoctor-preload: "

/* ---- parse.c: environment values ---- */

/*
 * md_parse_duration parses "500ms", "30s", "5m", "1h" (a decimal number,
 * optionally with a fraction, and exactly one unit) into milliseconds.
 * "0" and "off" mean disabled (*ms = 0). Returns 0 on success, -1 when the
 * value is malformed, has no unit, or is below 1 ms or above 30 days.
 */
int md_parse_duration(const char *s, uint64_t *ms);

/*
 * md_parse_size parses "1GiB", "512MiB", "64KiB", "4096B", "4096", "1G",
 * "1M", "1K" (case-insensitive; K/M/G/T and KB/MB/GB/TB are binary
 * multiples, as for KiB/MiB/GiB/TiB) into bytes. "0" and "off" mean
 * disabled. Returns 0 on success, -1 on a malformed value or overflow.
 */
int md_parse_size(const char *s, uint64_t *bytes);

/*
 * md_expand_path copies pattern to out, replacing "%p" with pid and "%%"
 * with "%". Returns 0, or -1 if out is too small or another % sequence is
 * used.
 */
int md_expand_path(const char *pattern, long pid, char *out, size_t outlen);

/* ---- format.c: JSON lines without malloc ---- */

/* md_buf is a fixed buffer that remembers overflow instead of writing past it. */
struct md_buf {
	char *p;
	size_t len, cap;
	int overflow;
};

void md_buf_init(struct md_buf *b, char *mem, size_t cap);
void md_puts(struct md_buf *b, const char *s);
void md_putu(struct md_buf *b, uint64_t v);
void md_puti(struct md_buf *b, int64_t v);
/* md_put_ms writes a duration in nanoseconds as milliseconds with 3 decimals. */
void md_put_ms(struct md_buf *b, uint64_t ns);
/* md_put_str writes s as a quoted JSON string (escaping quotes, backslashes, control characters). */
void md_put_str(struct md_buf *b, const char *s);
/* md_put_time writes ts (CLOCK_REALTIME) as a quoted RFC 3339 UTC time with milliseconds. */
void md_put_time(struct md_buf *b, const struct timespec *ts);

/*
 * md_format_time writes ts as "2026-05-01T12:34:56.789Z" (24 characters and a
 * NUL, so n must be at least 25). Computed from the seconds since the epoch
 * by hand: gmtime_r may load time zone data (malloc) on its first call.
 */
void md_format_time(char *out, size_t n, const struct timespec *ts);

/* md_rss_bytes reads the resident set size from /proc/self/statm; -1 on failure. */
int64_t md_rss_bytes(void);

/*
 * md_heap_counter counts "<heap nr=" in a stream fed in pieces (the
 * malloc_info XML has one such element per arena).
 */
struct md_heap_counter {
	unsigned matched;
	uint64_t count;
};
void md_heap_count(struct md_heap_counter *c, const char *p, size_t n);

/* ---- profile.c: sampled heap profile (MEMDOCTOR_PROFILE) ---- */

/* md_prof_init turns sampling on: rate = mean bytes between samples, pattern
 * = the dump path (%p = pid). 0, or -1 when the path or tables fail. */
int md_prof_init(uint64_t rate, const char *pattern);
/* md_prof_rate is the sampling rate in effect, 0 = off. */
extern _Atomic uint64_t md_prof_rate;
/* md_prof_path is the expanded dump path. */
const char *md_prof_path(void);
/* md_prof_untrack forgets p if it is a sampled block (before the real free). */
void md_prof_untrack(void *p);
/* md_prof_untrack_slow: the same, once md_prof_words said p may be sampled. */
void md_prof_untrack_slow(void *p);
/*
 * md_prof_words is what free() reads to tell, without a lock, that p was
 * never sampled: one 16-bit word per MD_FILTER_SLOT(p) (address bits 4-19),
 * 0 when no live sampled block falls in the slot, MD_FILTER_TAG(p) of the
 * one that does (bits 20-49 folded: a block whose slot is taken by another
 * is told apart in one comparison), or MD_FILTER_MANY when several did
 * since the slot was last empty. Only md_prof_maybe() true goes on to the
 * locked table. A static array (free() indexes it without loading a
 * pointer first), read by every free() whether profiling or not: all zero
 * (pages never written) while profiling is off.
 */
#define MD_NFILTER (1u << 16)
#define MD_FILTER_SLOT(p) ((uint32_t)((uintptr_t)(p) >> 4) & (MD_NFILTER - 1))
#define MD_FILTER_TAG(p) ((uint16_t)(0x8000u | ((((uintptr_t)(p) >> 20) ^ ((uintptr_t)(p) >> 35)) & 0x7fffu)))
#define MD_FILTER_MANY 1u
extern _Atomic uint16_t md_prof_words[MD_NFILTER];
/* md_prof_word is p's filter word; md_prof_match says a nonzero word may
 * stand for p. */
static inline uint16_t md_prof_word(_Atomic uint16_t *flt, const void *p)
{
	return atomic_load_explicit(&flt[MD_FILTER_SLOT(p)], memory_order_relaxed);
}
static inline int md_prof_match(uint16_t v, const void *p)
{
	return v == MD_FILTER_MANY || v == MD_FILTER_TAG(p);
}
static inline int md_prof_maybe(_Atomic uint16_t *flt, const void *p)
{
	uint16_t v = md_prof_word(flt, p);
	return __builtin_expect(v != 0, 0) && md_prof_match(v, p);
}
/* md_prof_dump writes the profile (callers hold preload.c's busy); 0 or an errno. */
int md_prof_dump(void);
void md_prof_fork_child(void);
/* md_boot_owns: p came from the bootstrap buffer (never freed); md_boot_used
 * says the buffer was used. */
int md_boot_owns(const void *p);
extern _Atomic int md_boot_used;
/* md_free_route points free() at the real free or at the full path
 * (counting, profiling, bootstrap blocks); preload.c. */
void md_free_route(void);

/* ---- preload.c: test hooks ---- */
#ifdef MD_TEST_HOOKS
/* md_test_dlsym replaces dlsym when resolving the real free (tests only). */
extern void *(*md_test_dlsym)(void *, const char *);
/* md_test_reset forgets the resolved free, so the next free() resolves again. */
void md_test_reset(void);
uint64_t md_bootstrap_leaks(void);
/* md_test_prof_counts: live sampled blocks, samples taken, and frees that
 * went to the locked table for a block that was never sampled. */
void md_test_prof_counts(uint64_t *live, uint64_t *samples, uint64_t *misses);
#endif

#endif
