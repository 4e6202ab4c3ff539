/*
 * parse_stub: the nginx stub_status page.
 *
 * nginx (ngx_http_stub_status_module.c) prints exactly:
 *
 *   "Active connections: %uA \n"
 *   "server accepts handled requests\n"
 *   " %uA %uA %uA \n"
 *   "Reading: %uA Writing: %uA Waiting: %uA \n"
 *
 * The match is strict about words, their order, the line breaks and the seven numbers, so a proxy's error page, a
 * forked format with extra columns (Tengine's request_time) or a truncated body is refused rather than misread.
 * It forgives only the amount of blank space, missing trailing blanks and a CR before each LF. The final LF is
 * required: without it a body cut inside the last number ("Waiting: 10" of 106) would parse as a plausible, wrong
 * value. Numbers must fit in 64 bits.
 */
#include "parse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

bool stub_late_saturated(const struct stub_late *l, char *why, size_t whylen)
{
	double share = NAN;

	if (!isnan(l->run_ms) && !isnan(l->wait_ms) && l->workers >= 1 && l->dt_s > 0)
		share = (l->run_ms + l->wait_ms) / (l->workers * l->dt_s * 1000);
	if (share >= STUB_BUSY_SHARE) {
		snprintf(why, whylen, "the %s %.0f%% of the tick", l->workers > 1 ? "workers were each runnable"
								     : "worker was runnable",
			 100 * (share > 1 ? 1 : share));
		return true;
	}
	if (l->client_timeouts >= 1) {
		snprintf(why, whylen, "%.0f of the synthetic client's requests timed out too", l->client_timeouts);
		return true;
	}
	if (whylen)
		why[0] = '\0';
	return false;
}

/* Template: ' ' matches a run of blanks (empty only at the end of a line, where editors and proxies trim), '\n'
 * matches blanks, an optional CR and a LF, '#' a number, anything else itself. */
static const char stub_template[] = "Active connections: # \n"
				    "server accepts handled requests\n"
				    " # # # \n"
				    "Reading: # Writing: # Waiting: # \n";

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Unsigned decimal at *P; no sign, no overflow. */
static int scan_u64(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	if (s == end || *s < '0' || *s > '9')
		return -EBADMSG;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -EBADMSG;
		x = x * 10 + d;
	}
	*p = s;
	*v = x;
	return 0;
}

int parse_stub_status(const char *buf, size_t len, struct stub_status *st)
{
	struct stub_status tmp; /* filled first, so a failed parse leaves *ST alone */
	uint64_t *slot[] = { &tmp.active, &tmp.accepts, &tmp.handled, &tmp.requests,
			     &tmp.reading, &tmp.writing, &tmp.waiting };
	const char *p = buf, *end = buf + len, *t;
	size_t n = 0;

	if (!buf)
		return -EBADMSG;
	for (t = stub_template; *t; t++) {
		switch (*t) {
		case ' ': {
			const char *b = p;

			while (p < end && is_blank(*p))
				p++;
			if (p == b && t[1] != '\n')
				return -EBADMSG;
			break;
		}
		case '\n':
			while (p < end && is_blank(*p))
				p++;
			if (p < end && *p == '\r')
				p++;
			if (p == end || *p != '\n')
				return -EBADMSG;
			p++;
			break;
		case '#':
			if (scan_u64(&p, end, slot[n++]) < 0)
				return -EBADMSG;
			break;
		default:
			if (p == end || *p != *t)
				return -EBADMSG;
			p++;
		}
	}
	/* Only blank space may follow. */
	for (; p < end; p++)
		if (!is_blank(*p) && *p != '\r' && *p != '\n')
			return -EBADMSG;
	*st = tmp;
	return 0;
}

/* VAL (VLEN bytes) into OUT: 0 or -ENAMETOOLONG. */
static int take_value(const char *val, size_t vlen, char *out, size_t outlen)
{
	if (vlen >= outlen)
		return -ENAMETOOLONG;
	memcpy(out, val, vlen);
	out[vlen] = '\0';
	return 0;
}

int parse_nginx_master_title(const char *title, char *conf, size_t conflen, char *prefix, size_t prefixlen)
{
	static const char head[] = "nginx: master process ";
	const char *p;

	if (!title || strncmp(title, head, sizeof(head) - 1) != 0 || conflen == 0 || prefixlen == 0)
		return -EINVAL;
	conf[0] = prefix[0] = '\0';
	p = title + sizeof(head) - 1;
	/* nginx's title is its command line joined by blanks: the binary, then its flags, read as nginx's
	 * ngx_get_options reads them: flags may share a word ("-qc FILE"), a value may follow its flag in the same
	 * word ("-cFILE") or be the next one, and the last -c or -p wins. A word that is no flag is part of the value
	 * before it (-g "daemon off;" shows as two words). */
	p += strcspn(p, " ");
	while (*p) {
		const char *word, *end;

		p += strspn(p, " ");
		word = p;
		p += strcspn(p, " ");
		end = p;
		if (word == end || word[0] != '-')
			continue;
		for (const char *f = word + 1; f < end; f++) {
			const char *val;
			size_t vlen;
			int r = 0;

			if (strchr("?hvVtTq", *f))
				continue;
			if (!strchr("pecgs", *f))
				break;
			if (f + 1 < end) {
				val = f + 1;
				vlen = (size_t)(end - val);
			} else {
				val = p + strspn(p, " ");
				vlen = strcspn(val, " ");
				if (vlen == 0)
					return -EBADMSG;
				p = val + vlen;
			}
			if (*f == 'c')
				r = take_value(val, vlen, conf, conflen);
			else if (*f == 'p')
				r = take_value(val, vlen, prefix, prefixlen);
			if (r < 0)
				return r;
			break;
		}
	}
	return 0;
}
