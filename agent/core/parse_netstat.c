#include "parse.h"
#include "parse_util.h"

#include <errno.h>
#include <string.h>

/* Kernel prefixes are short ("MPTcpExt") and MIB names stay under 32 bytes; these leave room for new ones. */
#define PREFIX_SIZE 32
#define NAME_SIZE 128
#define INT64_MAG_MAX 9223372036854775808ull /* |INT64_MIN| */

/*
 * The sampler reads netstat and snmp every tick (about 640 tokens), so the walk classifies bytes by table and
 * fuses tokenising with checking: 44 us -> a few us per tick against the generic cursor helpers.
 */
enum { C_BLANK = 1, C_ALPHA = 2, C_DIGIT = 4, C_UNDER = 8 };
#define C_NAME (C_ALPHA | C_DIGIT | C_UNDER)

static const unsigned char cls[256] = {
	[' '] = C_BLANK, ['\t'] = C_BLANK, ['_'] = C_UNDER,
	['0' ... '9'] = C_DIGIT, ['A' ... 'Z'] = C_ALPHA, ['a' ... 'z'] = C_ALPHA,
};

static const char *skip_blanks(const char *s, const char *e)
{
	while (s < e && (cls[(unsigned char)*s] & C_BLANK))
		s++;
	return s;
}

/*
 * A MIB name (a C-like identifier) at *S, ending at a blank or E; *S is left after it. Requiring a leading letter
 * keeps a value line from being taken for a names line, so two value lines in a row (a lost names line) are
 * refused instead of emitting numbers as names. Its length, or 0 when it is not one.
 */
static size_t take_name(const char **s, const char *e)
{
	const char *b = *s, *p = b;

	if (p == e || !(cls[(unsigned char)*p] & C_ALPHA))
		return 0;
	while (p < e && (cls[(unsigned char)*p] & C_NAME))
		p++;
	if (p < e && !(cls[(unsigned char)*p] & C_BLANK))
		return 0;
	*s = p;
	return (size_t)(p - b);
}

/* "TcpExt:" first on [*S, E): the length of its name (*NAME), *S left after the colon; 0 when it is not there. */
static size_t take_prefix(const char **s, const char *e, const char **name)
{
	const char *b = skip_blanks(*s, e), *p = b;

	*name = b;
	if (p == e || !(cls[(unsigned char)*p] & C_ALPHA))
		return 0;
	while (p < e && (cls[(unsigned char)*p] & C_NAME))
		p++;
	if (p == e || *p != ':' || (p + 1 < e && !(cls[(unsigned char)p[1]] & C_BLANK)))
		return 0;
	*s = p + 1;
	return (size_t)(p - b);
}

/* A decimal int64 at *S ("-1", "152"), ending at a blank or E; *S is left after it. 0 or -EBADMSG. */
static int take_i64(const char **s, const char *e, int64_t *out)
{
	const char *p = *s;
	uint64_t mag = 0;
	bool neg = p < e && *p == '-';

	if (neg)
		p++;
	if (p == e || !(cls[(unsigned char)*p] & C_DIGIT))
		return -EBADMSG;
	for (; p < e && (cls[(unsigned char)*p] & C_DIGIT); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (mag > (INT64_MAG_MAX - d) / 10)
			return -EBADMSG;
		mag = mag * 10 + d;
	}
	if ((p < e && !(cls[(unsigned char)*p] & C_BLANK)) || (!neg && mag > INT64_MAG_MAX - 1))
		return -EBADMSG;
	*out = mag == INT64_MAG_MAX ? INT64_MIN : neg ? -(int64_t)mag : (int64_t)mag;
	*s = p;
	return 0;
}

/* The end of the line starting at P (its '\n' or END). */
static const char *line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return nl ? nl : end;
}

/* What a walk does with each (prefix, name, value): nothing (validate only), call CB, or pick WANT's values. */
struct sink {
	parse_kv_cb cb;
	void *ctx;
	const struct netstat_want *want;
	size_t nwant;
	int64_t *vals;
	uint64_t *found;
	size_t nlen[64]; /* strlen of want[i].name for the wanted names of the current line */
};

/* Bits of SINK's wanted names whose prefix is the LEN bytes at P. */
static uint64_t wanted_here(struct sink *k, const char *p, size_t len)
{
	uint64_t m = 0;

	for (size_t i = 0; i < k->nwant; i++) {
		const char *w = k->want[i].prefix;

		if (w[0] == p[0] && strncmp(w, p, len) == 0 && w[len] == '\0') {
			m |= 1ull << i;
			k->nlen[i] = strlen(k->want[i].name);
		}
	}
	return m;
}

static int deliver(const struct sink *k, uint64_t here, const char *prefix, size_t plen, const char *name,
		   size_t nlen, int64_t v)
{
	for (size_t i = 0; here; i++, here >>= 1) {
		if ((here & 1) && k->nlen[i] == nlen && memcmp(k->want[i].name, name, nlen) == 0) {
			k->vals[i] = v;
			*k->found |= 1ull << i;
		}
	}
	if (k->cb) {
		char p[PREFIX_SIZE], n[NAME_SIZE];

		memcpy(p, prefix, plen);
		p[plen] = '\0';
		memcpy(n, name, nlen);
		n[nlen] = '\0';
		return k->cb(k->ctx, p, n, v);
	}
	return 0;
}

/* One pass over the text: every pair of lines is checked whole, whatever the sink wants of it. */
static int walk(const char *buf, size_t len, struct sink *k)
{
	const char *p = buf, *end = buf + len;
	size_t npairs = 0;

	while (p < end) {
		const char *ns = p, *ne = line_end(p, end), *vs, *ve, *pname, *vname;
		size_t plen, vplen;
		uint64_t here;

		if (ne == end)
			return -EBADMSG; /* a names line with no values line */
		vs = ne + 1;
		ve = line_end(vs, end);
		p = ve < end ? ve + 1 : end;
		plen = take_prefix(&ns, ne, &pname);
		vplen = take_prefix(&vs, ve, &vname);
		if (plen == 0 || plen >= PREFIX_SIZE || vplen != plen || memcmp(pname, vname, plen) != 0)
			return -EBADMSG;
		here = k ? wanted_here(k, pname, plen) : 0;
		for (;;) {
			const char *name;
			size_t nlen;
			int64_t v;
			int r;

			ns = skip_blanks(ns, ne);
			vs = skip_blanks(vs, ve);
			if ((ns == ne) != (vs == ve))
				return -EBADMSG;
			if (ns == ne)
				break;
			name = ns;
			nlen = take_name(&ns, ne);
			if (nlen == 0 || nlen >= NAME_SIZE || take_i64(&vs, ve, &v) < 0)
				return -EBADMSG;
			if ((here || (k && k->cb)) && (r = deliver(k, here, pname, plen, name, nlen, v)) != 0)
				return r;
		}
		npairs++;
	}
	return npairs > 0 ? 0 : -EBADMSG;
}

int parse_netstat(const char *buf, size_t len, parse_kv_cb cb, void *ctx)
{
	struct sink k = {.cb = cb, .ctx = ctx};
	int r;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	/* Validate first: a half-delivered file would look like counters that stopped moving. */
	r = walk(buf, len, NULL);
	if (r < 0)
		return r;
	return cb ? walk(buf, len, &k) : 0;
}

int parse_netstat_pick(const char *buf, size_t len, const struct netstat_want *want, size_t n, int64_t *vals,
		       uint64_t *found)
{
	struct sink k = {.want = want, .nwant = n, .vals = vals, .found = found};

	if (n > 64 || (n && (!want || !vals || !found)))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!want[i].prefix || !want[i].prefix[0] || !want[i].name || !want[i].name[0])
			return -EINVAL;
	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	return walk(buf, len, &k);
}
