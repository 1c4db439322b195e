/*
 * Parsing of the MEMDOCTOR_* environment values. Strict on purpose: a value
 * that is not understood disables the feature with one message on stderr,
 * rather than trimming every millisecond because "30" was read as 30 ms.
 */
#include "preload.h"

#include <string.h>
#include <strings.h>

/*
 * parse_decimal reads "123" or "123.45" at *s: the integer part into *whole,
 * up to 9 fraction digits scaled to nanounits into *frac_nano. Advances *s.
 * Returns -1 when there is no digit or the integer part overflows.
 */
static int parse_decimal(const char **s, uint64_t *whole, uint64_t *frac_nano)
{
	const char *p = *s;
	uint64_t w = 0, f = 0, scale = 100000000; /* first fraction digit = 10^8 nanounits */
	int digits = 0;
	while (*p >= '0' && *p <= '9') {
		if (w > (UINT64_MAX - 9) / 10)
			return -1;
		w = w * 10 + (uint64_t)(*p - '0');
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			f += (uint64_t)(*p - '0') * scale;
			scale /= 10;
			p++;
			digits++;
		}
	}
	if (digits == 0)
		return -1;
	*whole = w;
	*frac_nano = f;
	*s = p;
	return 0;
}

/* scaled returns whole*mult + frac_nano*mult/1e9, or -1 on overflow. */
static int scaled(uint64_t whole, uint64_t frac_nano, uint64_t mult, uint64_t *out)
{
	if (mult != 0 && whole > UINT64_MAX / mult)
		return -1;
	uint64_t v = whole * mult;
	/* frac_nano < 1e9; split mult to keep the product in range. */
	uint64_t fpart = (mult / 1000000000u) * frac_nano + (mult % 1000000000u) * frac_nano / 1000000000u;
	if (v > UINT64_MAX - fpart)
		return -1;
	*out = v + fpart;
	return 0;
}

int md_parse_duration(const char *s, uint64_t *ms)
{
	if (!s)
		return -1;
	if (!strcmp(s, "0") || !strcasecmp(s, "off")) {
		*ms = 0;
		return 0;
	}
	uint64_t whole, frac;
	if (parse_decimal(&s, &whole, &frac) < 0)
		return -1;
	uint64_t unit;
	if (!strcmp(s, "ms"))
		unit = 1;
	else if (!strcmp(s, "s"))
		unit = 1000;
	else if (!strcmp(s, "m"))
		unit = 60 * 1000;
	else if (!strcmp(s, "h"))
		unit = 60 * 60 * 1000;
	else
		return -1;
	uint64_t v;
	if (scaled(whole, frac, unit, &v) < 0 || v < 1 || v > 30ull * 24 * 3600 * 1000)
		return -1;
	*ms = v;
	return 0;
}

int md_parse_size(const char *s, uint64_t *bytes)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {
		{"", 0}, {"b", 0},
		{"k", 10}, {"kb", 10}, {"kib", 10},
		{"m", 20}, {"mb", 20}, {"mib", 20},
		{"g", 30}, {"gb", 30}, {"gib", 30},
		{"t", 40}, {"tb", 40}, {"tib", 40},
	};
	if (!s)
		return -1;
	if (!strcmp(s, "0") || !strcasecmp(s, "off")) {
		*bytes = 0;
		return 0;
	}
	uint64_t whole, frac;
	if (parse_decimal(&s, &whole, &frac) < 0)
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcasecmp(s, units[i].suffix))
			continue;
		uint64_t v;
		if (scaled(whole, frac, (uint64_t)1 << units[i].shift, &v) < 0 || v == 0)
			return -1;
		*bytes = v;
		return 0;
	}
	return -1;
}

int md_expand_path(const char *pattern, long pid, char *out, size_t outlen)
{
	size_t n = 0;
	for (const char *p = pattern; *p; p++) {
		char num[24];
		const char *piece = num;
		size_t plen;
		if (*p != '%') {
			num[0] = *p;
			plen = 1;
		} else if (p[1] == '%') {
			num[0] = '%';
			plen = 1;
			p++;
		} else if (p[1] == 'p') {
			char tmp[24];
			size_t k = 0;
			unsigned long v = pid < 0 ? 0 : (unsigned long)pid;
			do {
				tmp[k++] = (char)('0' + v % 10);
				v /= 10;
			} while (v);
			for (plen = 0; plen < k; plen++)
				num[plen] = tmp[k - 1 - plen];
			p++;
		} else {
			return -1;
		}
		if (n + plen >= outlen)
			return -1;
		memcpy(out + n, piece, plen);
		n += plen;
	}
	if (n >= outlen)
		return -1;
	out[n] = 0;
	return 0;
}
