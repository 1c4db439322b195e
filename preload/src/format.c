/*
 * JSON formatting, time stamps and RSS for the stats lines, all without
 * malloc and without locks, so they can run inside free().
 */
#include "preload.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

void md_buf_init(struct md_buf *b, char *mem, size_t cap)
{
	b->p = mem;
	b->len = 0;
	b->cap = cap;
	b->overflow = 0;
	if (cap)
		mem[0] = 0;
}

static void put_bytes(struct md_buf *b, const char *s, size_t n)
{
	if (b->overflow || b->len + n + 1 > b->cap) {
		b->overflow = 1;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

void md_puts(struct md_buf *b, const char *s)
{
	put_bytes(b, s, strlen(s));
}

void md_putu(struct md_buf *b, uint64_t v)
{
	char tmp[24];
	size_t i = sizeof tmp;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put_bytes(b, tmp + i, sizeof tmp - i);
}

void md_puti(struct md_buf *b, int64_t v)
{
	if (v < 0) {
		put_bytes(b, "-", 1);
		md_putu(b, (uint64_t)0 - (uint64_t)v);
		return;
	}
	md_putu(b, (uint64_t)v);
}

void md_put_ms(struct md_buf *b, uint64_t ns)
{
	uint64_t us = (ns + 500) / 1000;
	char frac[4];
	md_putu(b, us / 1000);
	frac[0] = '.';
	frac[1] = (char)('0' + us / 100 % 10);
	frac[2] = (char)('0' + us / 10 % 10);
	frac[3] = (char)('0' + us % 10);
	put_bytes(b, frac, 4);
}

void md_put_str(struct md_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	put_bytes(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			put_bytes(b, e, 2);
		} else if (c < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			put_bytes(b, e, 6);
		} else {
			put_bytes(b, (const char *)&c, 1);
		}
	}
	put_bytes(b, "\"", 1);
}

static int leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static void two(char *p, int v)
{
	p[0] = (char)('0' + v / 10 % 10);
	p[1] = (char)('0' + v % 10);
}

void md_format_time(char *out, size_t n, const struct timespec *ts)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (n < 25) {
		if (n)
			out[0] = 0;
		return;
	}
	int64_t secs = ts->tv_sec < 0 ? 0 : ts->tv_sec;
	int64_t days = secs / 86400, rem = secs % 86400;
	int64_t year = 1970;
	/* Walk whole years, then months: a few dozen steps for present-day times. */
	for (;;) {
		int64_t ylen = leap(year) ? 366 : 365;
		if (days < ylen)
			break;
		days -= ylen;
		year++;
	}
	int month = 0;
	for (;;) {
		int mlen = mdays[month] + (month == 1 && leap(year));
		if (days < mlen)
			break;
		days -= mlen;
		month++;
	}
	long ms = ts->tv_nsec / 1000000;
	/* YYYY-MM-DDTHH:MM:SS.mmmZ */
	out[0] = (char)('0' + year / 1000 % 10);
	out[1] = (char)('0' + year / 100 % 10);
	out[2] = (char)('0' + year / 10 % 10);
	out[3] = (char)('0' + year % 10);
	out[4] = '-';
	two(out + 5, month + 1);
	out[7] = '-';
	two(out + 8, (int)days + 1);
	out[10] = 'T';
	two(out + 11, (int)(rem / 3600));
	out[13] = ':';
	two(out + 14, (int)(rem / 60 % 60));
	out[16] = ':';
	two(out + 17, (int)(rem % 60));
	out[19] = '.';
	out[20] = (char)('0' + ms / 100 % 10);
	out[21] = (char)('0' + ms / 10 % 10);
	out[22] = (char)('0' + ms % 10);
	out[23] = 'Z';
	out[24] = 0;
}

void md_put_time(struct md_buf *b, const struct timespec *ts)
{
	char t[25];
	md_format_time(t, sizeof t, ts);
	put_bytes(b, "\"", 1);
	md_puts(b, t);
	put_bytes(b, "\"", 1);
}

int64_t md_rss_bytes(void)
{
	/* "size resident shared text lib data dt", in pages. Opened each time:
	 * a descriptor kept open would keep reading the parent after fork. */
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n;
	do
		n = read(fd, buf, sizeof buf - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	const char *p = buf;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p != ' ')
		return -1;
	p++;
	if (*p < '0' || *p > '9')
		return -1;
	uint64_t pages = 0;
	while (*p >= '0' && *p <= '9')
		pages = pages * 10 + (uint64_t)(*p++ - '0');
	long psz = sysconf(_SC_PAGESIZE);
	return (int64_t)(pages * (uint64_t)(psz > 0 ? psz : 4096));
}

void md_heap_count(struct md_heap_counter *c, const char *p, size_t n)
{
	static const char pat[] = "<heap nr=";
	const unsigned plen = sizeof pat - 1;
	for (size_t i = 0; i < n; i++) {
		/* No proper prefix of the pattern is also a suffix of it, so on a
		 * mismatch the only possible restart is at this character. */
		if (p[i] == pat[c->matched]) {
			if (++c->matched == plen) {
				c->count++;
				c->matched = 0;
			}
		} else {
			c->matched = p[i] == pat[0] ? 1 : 0;
		}
	}
}
