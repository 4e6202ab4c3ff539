#include "strutil.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int str_to_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < lo || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

int str_to_pid(const char *buf, size_t len, int *out)
{
	char s[24];
	int64_t v;
	int r;

	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		len--;
	if (len == 0 || memchr(buf, '\0', len))
		return -EINVAL;
	if (len >= sizeof(s)) {
		for (size_t i = 0; i < len; i++)
			if (buf[i] < '0' || buf[i] > '9')
				return -EINVAL;
		return -ERANGE;
	}
	memcpy(s, buf, len);
	s[len] = '\0';
	r = str_to_i64(s, 1, 0x3fffffff, &v);
	if (r < 0)
		return r;
	*out = (int)v;
	return 0;
}

int str_to_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* A unit's suffix and what one of it is worth. */
struct unit {
	const char *suffix;
	int64_t scale;
};

/* S: a decimal integer and one of the N suffixes of UNITS, scaled, within [LO, HI]: 0, -EINVAL or -ERANGE. */
static int scaled(const char *s, const struct unit *units, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		if (v > INT64_MAX / units[i].scale)
			return -ERANGE;
		v *= units[i].scale;
		if (v < lo || v > hi)
			return -ERANGE;
		*out = v;
		return 0;
	}
	return -EINVAL;
}

int str_to_duration_ms(const char *s, int64_t lo_ms, int64_t hi_ms, int64_t *out)
{
	static const struct unit units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
					    {"", 1000}};

	return scaled(s, units, sizeof(units) / sizeof(units[0]), lo_ms, hi_ms, out);
}

int str_to_size(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	static const struct unit units[] = {{"", 1}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}};

	return scaled(s, units, sizeof(units) / sizeof(units[0]), lo, hi, out);
}

size_t str_size(char *out, size_t n, uint64_t bytes)
{
	int k;

	if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
		k = snprintf(out, n, "%llu MiB", (unsigned long long)(bytes >> 20));
	else if (bytes >= (1u << 20))
		k = snprintf(out, n, "%.1f MiB", (double)bytes / (1u << 20));
	else if (bytes >= 1024 && bytes % 1024 == 0)
		k = snprintf(out, n, "%llu KiB", (unsigned long long)(bytes >> 10));
	else if (bytes >= 1024)
		k = snprintf(out, n, "%.1f KiB", (double)bytes / 1024);
	else
		k = snprintf(out, n, "%llu bytes", (unsigned long long)bytes);
	return k < 0 ? 0 : (size_t)k;
}

int str_to_mode(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '7')
		return -EINVAL;
	v = strtoul(s, &end, 8);
	if (*end || v > 07777)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

int str_to_listen(const char *s, struct sockaddr_storage *sa, unsigned *salen, bool *loopback)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon;
	size_t hlen;
	int64_t port;

	if (!s)
		return -EINVAL;
	colon = s[0] == '[' ? strstr(s, "]:") : strrchr(s, ':');
	if (!colon)
		return -EINVAL;
	if (s[0] == '[') {
		hlen = (size_t)(colon - s - 1);
		colon++;
	} else {
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= sizeof(host) || str_to_i64(colon + 1, 1, 65535, &port) < 0)
		return -EINVAL;
	memcpy(host, s[0] == '[' ? s + 1 : s, hlen);
	host[hlen] = '\0';
	memset(sa, 0, sizeof(*sa));
	if (strcmp(host, "localhost") == 0 && s[0] != '[')
		strcpy(host, "127.0.0.1");
	if (s[0] != '[') {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;

		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return -EINVAL;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*salen = sizeof(*in);
		*loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
		const uint8_t *b = in6->sin6_addr.s6_addr;

		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*salen = sizeof(*in6);
		*loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && b[12] == 127);
	}
	return 0;
}

int str_copy(char *dst, size_t n, const char *src)
{
	size_t len = strlen(src);

	if (len >= n)
		return -ENAMETOOLONG;
	memcpy(dst, src, len + 1);
	return 0;
}

void sbuf_init(struct sbuf *b)
{
	memset(b, 0, sizeof(*b));
}

void sbuf_free(struct sbuf *b)
{
	free(b->p);
	sbuf_init(b);
}

void sbuf_reset(struct sbuf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

static bool reserve(struct sbuf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return false;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void sbuf_add(struct sbuf *b, const char *s, size_t len)
{
	if (!reserve(b, len))
		return;
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
}

void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

const char *sbuf_str(const struct sbuf *b)
{
	return b->p && !b->oom ? b->p : "";
}

void str_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int str_vrooted(char *out, size_t n, const char *root, const char *fmt, va_list ap)
{
	size_t rl = root ? strlen(root) : 0;
	int w, k;

	while (rl > 0 && root[rl - 1] == '/')
		rl--;
	if (n == 0)
		return -ENAMETOOLONG;
	k = snprintf(out, n, "%.*s", (int)rl, rl ? root : "");
	if (k < 0 || (size_t)k >= n)
		return -ENAMETOOLONG;
	w = vsnprintf(out + k, n - (size_t)k, fmt, ap);
	return w < 0 || (size_t)w >= n - (size_t)k ? -ENAMETOOLONG : 0;
}

int str_rooted(char *out, size_t n, const char *root, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = str_vrooted(out, n, root, fmt, ap);
	va_end(ap);
	return r;
}

void str_fmt_ms(char *out, size_t n, double ms, bool fine)
{
	if (!isfinite(ms))
		snprintf(out, n, "-");
	else if (!fine && ms < 1)
		snprintf(out, n, "<1");
	else
		snprintf(out, n, fine && ms < 1 ? "%.2f" : fine && ms < 10 ? "%.1f" : "%.0f", ms);
}
