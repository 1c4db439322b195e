/*
 * Unit tests of the preload library's pieces, linked with its sources (so
 * this executable's free() is the library's): value parsing, path
 * expansion, JSON and time formatting, the malloc_info heap counter, RSS,
 * and the bootstrap of the real free when dlsym re-enters free().
 */
#define _GNU_SOURCE
#include "../src/preload.h"

#include <stdatomic.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			failures++;                                            \
			fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);  \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
		}                                                              \
	} while (0)

static void test_duration(void)
{
	static const struct {
		const char *in;
		int ok;
		uint64_t ms;
	} cases[] = {
		{"30s", 1, 30000}, {"500ms", 1, 500}, {"5m", 1, 300000}, {"1h", 1, 3600000},
		{"1.5s", 1, 1500}, {"0.5m", 1, 30000}, {"0", 1, 0}, {"off", 1, 0}, {"OFF", 1, 0},
		{"1ms", 1, 1}, {"720h", 1, 720ull * 3600000},
		{"30", 0, 0}, {"", 0, 0}, {"s", 0, 0}, {"abc", 0, 0}, {"30S", 0, 0}, {"30 s", 0, 0},
		{"-5s", 0, 0}, {"1m30s", 0, 0}, {"0.1ms", 0, 0}, {"721h", 0, 0}, {"0s", 0, 0},
		{"99999999999999999999999s", 0, 0}, {".s", 0, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t got = 12345;
		int r = md_parse_duration(cases[i].in, &got);
		CHECK((r == 0) == cases[i].ok, "md_parse_duration(%s) = %d, want ok=%d", cases[i].in, r,
		      cases[i].ok);
		if (cases[i].ok && r == 0)
			CHECK(got == cases[i].ms, "md_parse_duration(%s) = %llu ms, want %llu", cases[i].in,
			      (unsigned long long)got, (unsigned long long)cases[i].ms);
	}
	CHECK(md_parse_duration(NULL, &(uint64_t){0}) < 0, "md_parse_duration(NULL) accepted");
}

static void test_size(void)
{
	static const struct {
		const char *in;
		int ok;
		uint64_t bytes;
	} cases[] = {
		{"1GiB", 1, 1ull << 30}, {"1G", 1, 1ull << 30}, {"1g", 1, 1ull << 30}, {"1GB", 1, 1ull << 30},
		{"512MiB", 1, 512ull << 20}, {"1M", 1, 1 << 20}, {"64KiB", 1, 64 << 10}, {"64K", 1, 64 << 10},
		{"4096B", 1, 4096}, {"4096", 1, 4096}, {"1.5GiB", 1, 3ull << 29}, {"2TiB", 1, 2ull << 40},
		{"0", 1, 0}, {"off", 1, 0},
		{"", 0, 0}, {"GiB", 0, 0}, {"1XB", 0, 0}, {"1 GiB", 0, 0}, {"-1G", 0, 0}, {"1Gi", 0, 0},
		{"0B", 0, 0}, {"99999999999999999999", 0, 0}, {"17179869184G", 0, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t got = 12345;
		int r = md_parse_size(cases[i].in, &got);
		CHECK((r == 0) == cases[i].ok, "md_parse_size(%s) = %d, want ok=%d", cases[i].in, r,
		      cases[i].ok);
		if (cases[i].ok && r == 0)
			CHECK(got == cases[i].bytes, "md_parse_size(%s) = %llu, want %llu", cases[i].in,
			      (unsigned long long)got, (unsigned long long)cases[i].bytes);
	}
}

static void test_expand(void)
{
	char out[64];
	CHECK(md_expand_path("/tmp/s.%p.jsonl", 4242, out, sizeof out) == 0 &&
		      !strcmp(out, "/tmp/s.4242.jsonl"),
	      "expand %%p: %s", out);
	CHECK(md_expand_path("/tmp/100%%", 1, out, sizeof out) == 0 && !strcmp(out, "/tmp/100%"),
	      "expand %%%%: %s", out);
	CHECK(md_expand_path("/tmp/plain", 1, out, sizeof out) == 0 && !strcmp(out, "/tmp/plain"),
	      "plain: %s", out);
	CHECK(md_expand_path("/tmp/%d", 1, out, sizeof out) < 0, "%%d accepted");
	CHECK(md_expand_path("/tmp/%", 1, out, sizeof out) < 0, "trailing %% accepted");
	CHECK(md_expand_path("/tmp/abcdef", 1, out, 8) < 0, "overflow accepted");
	CHECK(md_expand_path("/tmp/abc", 1, out, 9) == 0, "exact fit refused");
}

static void test_format(void)
{
	char mem[64];
	struct md_buf b;
	md_buf_init(&b, mem, sizeof mem);
	md_putu(&b, 0);
	md_puts(&b, " ");
	md_putu(&b, UINT64_MAX);
	md_puts(&b, " ");
	md_puti(&b, -42);
	md_puts(&b, " ");
	md_put_ms(&b, 1969999999);
	md_puts(&b, " ");
	md_put_ms(&b, 190000);
	CHECK(!strcmp(mem, "0 18446744073709551615 -42 1970.000 0.190") && !b.overflow, "numbers: %s",
	      mem);

	md_buf_init(&b, mem, sizeof mem);
	md_put_str(&b, "a\"b\\c\n\x01");
	CHECK(!strcmp(mem, "\"a\\\"b\\\\c\\u000a\\u0001\""), "json string: %s", mem);

	md_buf_init(&b, mem, 8);
	md_puts(&b, "1234567");
	CHECK(!b.overflow && b.len == 7, "exact fit overflowed");
	md_puts(&b, "8");
	CHECK(b.overflow && !strcmp(mem, "1234567"), "overflow not kept: %s", mem);

	static const struct {
		long long sec;
		long nsec;
		const char *want;
	} times[] = {
		{0, 0, "1970-01-01T00:00:00.000Z"},
		{951782400, 5000000, "2000-02-29T00:00:00.005Z"},   /* leap day, 400-year rule */
		{4107542399, 999999999, "2100-02-28T23:59:59.999Z"}, /* 2100 is not leap */
		{1767225599, 123456789, "2025-12-31T23:59:59.123Z"},
		{1772323200, 0, "2026-03-01T00:00:00.000Z"},
		{1709164800, 0, "2024-02-29T00:00:00.000Z"},
	};
	for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
		struct timespec ts = {(time_t)times[i].sec, times[i].nsec};
		char out[25];
		md_format_time(out, sizeof out, &ts);
		CHECK(!strcmp(out, times[i].want), "time %lld: %s, want %s", times[i].sec, out, times[i].want);
		/* Cross-check with the C library, which we avoid at run time. */
		struct tm tm;
		char ref[32];
		gmtime_r(&ts.tv_sec, &tm);
		strftime(ref, sizeof ref, "%Y-%m-%dT%H:%M:%S", &tm);
		CHECK(!strncmp(out, ref, 19), "time %lld: %s, gmtime %s", times[i].sec, out, ref);
	}
	/* Every day for 200 years against gmtime_r. */
	for (time_t t = 0; t < (time_t)200 * 366 * 86400; t += 86400 + 3661) {
		struct timespec ts = {t, 0};
		struct tm tm;
		char out[25], ref[32];
		md_format_time(out, sizeof out, &ts);
		gmtime_r(&t, &tm);
		strftime(ref, sizeof ref, "%Y-%m-%dT%H:%M:%S", &tm);
		if (strncmp(out, ref, 19)) {
			CHECK(0, "time %lld: %s, gmtime %s", (long long)t, out, ref);
			break;
		}
	}
}

static void test_heap_counter(void)
{
	const char *xml = "<malloc version=\"1\">\n<heap nr=\"0\">\n</heap>\n<heap nr=\"1\">\n</heap>\n"
			  "<<heap nr=\"2\"></heap><heap  nr=\"x\"><hea p nr=></malloc>";
	/* Fed whole, byte by byte, and in every two-piece split. */
	struct md_heap_counter c = {0};
	md_heap_count(&c, xml, strlen(xml));
	CHECK(c.count == 3, "whole: %llu heaps, want 3", (unsigned long long)c.count);
	struct md_heap_counter d = {0};
	for (size_t i = 0; xml[i]; i++)
		md_heap_count(&d, xml + i, 1);
	CHECK(d.count == 3, "bytewise: %llu heaps, want 3", (unsigned long long)d.count);
	for (size_t cut = 0; cut <= strlen(xml); cut++) {
		struct md_heap_counter e = {0};
		md_heap_count(&e, xml, cut);
		md_heap_count(&e, xml + cut, strlen(xml) - cut);
		if (e.count != 3) {
			CHECK(0, "split at %zu: %llu heaps", cut, (unsigned long long)e.count);
			break;
		}
	}
}

static void test_rss(void)
{
	int64_t before = md_rss_bytes();
	size_t n = 64 << 20;
	char *p = malloc(n);
	memset(p, 1, n);
	int64_t after = md_rss_bytes();
	CHECK(before > 0 && after - before >= (int64_t)(n * 9 / 10), "rss %lld -> %lld after touching 64 MiB",
	      (long long)before, (long long)after);
	free(p);
}

/* A dlsym that frees a block, as older glibc did while resolving. */
static void *nested_block;
static int nested_calls;
static void *reentrant_dlsym(void *h, const char *name)
{
	nested_calls++;
	void *p = nested_block;
	nested_block = NULL;
	free(p); /* re-enters the library's free while it resolves */
	return dlsym(h, name);
}

static void test_bootstrap(void)
{
	nested_block = malloc(100);
	uint64_t leaks = md_bootstrap_leaks();
	md_test_reset();
	md_test_dlsym = reentrant_dlsym;
	void *q = malloc(200);
	free(q); /* resolves: dlsym calls free(nested_block), which must not recurse */
	CHECK(nested_calls == 1, "dlsym called %d times, want 1 (recursion?)", nested_calls);
	CHECK(md_bootstrap_leaks() == leaks + 1, "nested free during resolve: %llu leaks, want %llu",
	      (unsigned long long)md_bootstrap_leaks(), (unsigned long long)leaks + 1);
	md_test_dlsym = dlsym;
	/* Resolved now: ordinary frees go through, dlsym is not called again. */
	for (int i = 0; i < 1000; i++)
		free(malloc(64));
	CHECK(nested_calls == 1, "dlsym called again after resolving");
	CHECK(md_bootstrap_leaks() == leaks + 1, "leaked after resolving");
}

/*
 * test_prof_filter: with thousands of sampled blocks live (one sample per
 * 16 KiB, 100,000 blocks of 256 B to 1 KiB held at once), frees of the
 * blocks that were never sampled almost never reach the locked table (at
 * most 1 in 100; a filter of bare counters per slot sent about 1 in 35
 * there), and every sampled block's free is matched.
 */
static void test_prof_filter(void)
{
	enum { N = 100000 };
	static void *blocks[N];
	const char *tmp = getenv("TMPDIR");
	char dir[4096], pattern[4200];
	snprintf(dir, sizeof dir, "%s/memdoctor-unit.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp %s failed", dir);
		return;
	}
	snprintf(pattern, sizeof pattern, "%s/heap.%%p", dir);
	if (md_prof_init(16384, pattern) != 0) {
		CHECK(0, "md_prof_init failed");
		rmdir(dir);
		return;
	}
	unsigned seed = 7;
	for (int i = 0; i < N; i++)
		blocks[i] = malloc(256 + (rand_r(&seed) & 767));
	uint64_t live, samples, misses0, misses;
	md_test_prof_counts(&live, &samples, &misses0);
	CHECK(live > 2000, "%llu sampled blocks live, want thousands", (unsigned long long)live);
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	uint64_t left;
	md_test_prof_counts(&left, &samples, &misses);
	CHECK(left == 0, "%llu sampled blocks still live after every free", (unsigned long long)left);
	uint64_t unsampled = N - live;
	CHECK((misses - misses0) * 100 <= unsampled, "%llu of %llu frees of unsampled blocks took the lock",
	      (unsigned long long)(misses - misses0), (unsigned long long)unsampled);
	printf("unit: %llu sampled live, %llu of %llu unsampled frees reached the table\n", (unsigned long long)live,
	       (unsigned long long)(misses - misses0), (unsigned long long)unsampled);
	atomic_store(&md_prof_rate, 0); /* no dump at exit: the directory goes */
	unlink(md_prof_path());
	rmdir(dir);
}

int main(void)
{
	test_duration();
	test_size();
	test_expand();
	test_format();
	test_heap_counter();
	test_rss();
	test_bootstrap();
	test_prof_filter();
	if (failures) {
		fprintf(stderr, "unit: %d failures\n", failures);
		return 1;
	}
	printf("unit: ok\n");
	return 0;
}
