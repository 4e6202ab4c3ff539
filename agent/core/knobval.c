#include "knobval.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Errors never echo the text: it is untrusted and may hold anything; they say what is wrong and where. */
__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Decimal int64 in [p, end) exactly: an optional '-', then digits. 0 or -EINVAL (empty, stray byte, overflow). */
static int scan_i64(const char *p, const char *end, int64_t *out)
{
	bool neg = false;
	uint64_t v = 0, lim;

	if (p < end && *p == '-')
		neg = true, p++;
	if (p == end)
		return -EINVAL;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; p < end; p++) {
		if (!is_digit(*p))
			return -EINVAL;
		if (v > (lim - (uint64_t)(*p - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (neg)
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	return 0;
}

/* Unsigned decimal in [p, end) exactly, at most MAX. 0, -EINVAL (not digits), -ERANGE (above MAX). */
static int scan_u32(const char *p, const char *end, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;

	if (p == end)
		return -EINVAL;
	for (; p < end; p++) {
		if (!is_digit(*p))
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > max)
			v = (uint64_t)max + 1; /* saturate: keep scanning for stray bytes, report range after */
	}
	if (v > max)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

/* A bounded appender: FULL sticks once anything did not fit. */
struct out {
	char *buf;
	size_t len, pos;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->full)
		return;
	if (o->pos + n >= o->len) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->pos, s, n);
	o->pos += n;
	o->buf[o->pos] = '\0';
}

static void put_i64(struct out *o, int64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%lld", (long long)v);

	put(o, tmp, (size_t)n);
}

static int finish(struct out *o)
{
	if (o->full) {
		if (o->len)
			o->buf[0] = '\0';
		return -ENOSPC;
	}
	return 0;
}

bool knobval_cpuset_has(const struct knobval_cpuset *s, unsigned cpu)
{
	if (cpu >= KNOBVAL_CPUS_MAX)
		return false;
	return (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

int knobval_cpuset_add(struct knobval_cpuset *s, unsigned cpu)
{
	if (cpu >= KNOBVAL_CPUS_MAX)
		return -ERANGE;
	s->bits[cpu / 64] |= (uint64_t)1 << (cpu % 64);
	return 0;
}

unsigned knobval_cpuset_count(const struct knobval_cpuset *s)
{
	unsigned n = 0;

	for (size_t i = 0; i < KNOBVAL_CPUS_MAX / 64; i++)
		n += (unsigned)__builtin_popcountll(s->bits[i]);
	return n;
}

int knobval_cpuset_span(const struct knobval_cpuset *s, unsigned *lo, unsigned *hi)
{
	bool any = false;

	for (unsigned c = 0; c < KNOBVAL_CPUS_MAX; c++) {
		if (!knobval_cpuset_has(s, c))
			continue;
		if (!any)
			*lo = c;
		*hi = c;
		any = true;
	}
	return any ? 0 : -ENOENT;
}

static void put_cpuset(struct out *o, const struct knobval_cpuset *s)
{
	bool first = true;

	for (unsigned c = 0; c < KNOBVAL_CPUS_MAX; c++) {
		unsigned e = c;

		if (!knobval_cpuset_has(s, c))
			continue;
		while (e + 1 < KNOBVAL_CPUS_MAX && knobval_cpuset_has(s, e + 1))
			e++;
		if (!first)
			put(o, ",", 1);
		put_i64(o, c);
		if (e > c) {
			put(o, "-", 1);
			put_i64(o, e);
		}
		first = false;
		c = e;
	}
}

int knobval_cpuset_format(const struct knobval_cpuset *s, char *buf, size_t len)
{
	struct out o = {buf, len, 0, len == 0};

	if (len)
		buf[0] = '\0';
	put_cpuset(&o, s);
	return finish(&o);
}

/* "0-3,8" in [p, end) into S (added to what S holds). An empty range is the empty set. */
static int scan_cpulist(const char *p, const char *end, struct knobval_cpuset *s, char *err, size_t errlen)
{
	unsigned idx = 0;

	if (p == end)
		return 0;
	for (;;) {
		const char *e = p, *dash = NULL;
		uint32_t lo, hi;
		int r;

		idx++;
		while (e < end && *e != ',') {
			if (*e == '-' && !dash)
				dash = e;
			e++;
		}
		if (e == p)
			return fail(err, errlen, "CPU list item %u is empty", idx);
		r = scan_u32(p, dash ? dash : e, KNOBVAL_CPUS_MAX - 1, &lo);
		if (r == 0 && dash)
			r = scan_u32(dash + 1, e, KNOBVAL_CPUS_MAX - 1, &hi);
		else
			hi = lo;
		if (r == -ERANGE)
			return fail(err, errlen, "CPU list item %u: CPU numbers stop at %d", idx, KNOBVAL_CPUS_MAX - 1);
		if (r < 0)
			return fail(err, errlen, "CPU list item %u is not N or N-M", idx);
		if (lo > hi)
			return fail(err, errlen, "CPU list item %u: range %u-%u runs backwards", idx, lo, hi);
		for (uint32_t c = lo; c <= hi; c++)
			knobval_cpuset_add(s, c);
		if (e == end)
			return 0;
		p = e + 1;
	}
}

static int parse_cpumap(const char *p, const char *end, struct knobval *out, char *err, size_t errlen)
{
	if (p == end)
		return 0;
	for (;;) {
		const char *e = p, *colon = NULL;
		struct knobval_cpuset cpus = {{0}};
		uint32_t key;
		size_t at;
		int r;

		while (e < end && *e != ';') {
			if (*e == ':' && !colon)
				colon = e;
			e++;
		}
		if (!colon)
			return fail(err, errlen, "CPU map entry %zu is not KEY:CPULIST", out->n + 1);
		r = scan_u32(p, colon, UINT32_MAX, &key);
		if (r < 0)
			return fail(err, errlen, "CPU map entry %zu: the key is not a number", out->n + 1);
		r = scan_cpulist(colon + 1, e, &cpus, err, errlen);
		if (r < 0)
			return r;
		if (out->n == KNOBVAL_MAP_MAX)
			return fail(err, errlen, "CPU map has more than %d entries", KNOBVAL_MAP_MAX);
		at = out->n;
		while (at > 0 && out->map[at - 1].key > key)
			at--;
		if (at > 0 && out->map[at - 1].key == key)
			return fail(err, errlen, "CPU map names key %u twice", key);
		memmove(&out->map[at + 1], &out->map[at], (out->n - at) * sizeof(out->map[0]));
		out->map[at].key = key;
		out->map[at].cpus = cpus;
		out->n++;
		if (e == end)
			return 0;
		p = e + 1;
	}
}

static int parse_intvec(const char *p, const char *end, struct knobval *out, char *err, size_t errlen)
{
	while (p < end) {
		const char *e = p;

		while (e < end && !is_blank(*e))
			e++;
		if (out->n == KNOBVAL_VEC_MAX)
			return fail(err, errlen, "more than %d numbers", KNOBVAL_VEC_MAX);
		if (scan_i64(p, e, &out->v[out->n]) < 0)
			return fail(err, errlen, "number %zu is not a decimal integer in the int64 range", out->n + 1);
		out->n++;
		while (e < end && is_blank(*e))
			e++;
		p = e;
	}
	if (out->n == 0)
		return fail(err, errlen, "no numbers");
	return 0;
}

static int parse_word(const char *p, const char *end, struct knobval *out, char *err, size_t errlen)
{
	size_t n = (size_t)(end - p);

	if (n == 0)
		return fail(err, errlen, "empty word");
	if (n >= KNOBVAL_WORD_MAX)
		return fail(err, errlen, "word longer than %d characters", KNOBVAL_WORD_MAX - 1);
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		bool ok = (c >= 'a' && c <= 'z') || is_digit(c) || (i > 0 && (c == '_' || c == '.' || c == '-'));

		if (!ok)
			return fail(err, errlen, "character %zu of the word is not one of a-z 0-9 _ . -", i + 1);
	}
	memcpy(out->word, p, n);
	out->word[n] = '\0';
	return 0;
}

int knobval_parse(enum knob_type type, const char *text, struct knobval *out, char *err, size_t errlen)
{
	const char *p = text, *end;
	char canon[KNOBVAL_TEXT_MAX];
	int r;

	memset(out, 0, sizeof(*out));
	out->type = type;
	out->n = 1;
	if (err && errlen)
		err[0] = '\0';
	if (!text)
		return fail(err, errlen, "no value");
	end = p + strlen(p);
	while (p < end && is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		end--;

	switch (type) {
	case KNOB_T_INT:
		r = scan_i64(p, end, &out->v[0]) < 0 ? fail(err, errlen, "not a decimal integer in the int64 range") : 0;
		break;
	case KNOB_T_INTVEC:
		out->n = 0;
		r = parse_intvec(p, end, out, err, errlen);
		break;
	case KNOB_T_CPULIST:
		r = scan_cpulist(p, end, &out->cpus, err, errlen);
		break;
	case KNOB_T_ENUM:
		r = parse_word(p, end, out, err, errlen);
		break;
	case KNOB_T_ONOFF:
		/* sysctl switches read back as 1/0: they are the same value as on/off. */
		if ((end - p == 2 && memcmp(p, "on", 2) == 0) || (end - p == 1 && *p == '1'))
			out->v[0] = 1, r = 0;
		else if ((end - p == 3 && memcmp(p, "off", 3) == 0) || (end - p == 1 && *p == '0'))
			out->v[0] = 0, r = 0;
		else
			r = fail(err, errlen, "not on or off");
		break;
	case KNOB_T_CPUMAP:
		out->n = 0;
		r = parse_cpumap(p, end, out, err, errlen);
		break;
	default:
		r = fail(err, errlen, "unknown value type");
	}
	if (r == 0 && knobval_format(out, canon, sizeof(canon)) < 0)
		r = fail(err, errlen, "value longer than %d characters once written out", KNOBVAL_TEXT_MAX - 1);
	return r;
}

int knobval_format(const struct knobval *v, char *buf, size_t len)
{
	struct out o = {buf, len, 0, len == 0};

	if (len)
		buf[0] = '\0';
	switch (v->type) {
	case KNOB_T_INT:
		put_i64(&o, v->v[0]);
		break;
	case KNOB_T_INTVEC:
		for (size_t i = 0; i < v->n && i < KNOBVAL_VEC_MAX; i++) {
			if (i)
				put(&o, " ", 1);
			put_i64(&o, v->v[i]);
		}
		break;
	case KNOB_T_CPULIST:
		put_cpuset(&o, &v->cpus);
		break;
	case KNOB_T_ENUM:
		put(&o, v->word, strnlen(v->word, sizeof(v->word) - 1));
		break;
	case KNOB_T_ONOFF:
		put(&o, v->v[0] ? "on" : "off", v->v[0] ? 2 : 3);
		break;
	case KNOB_T_CPUMAP:
		for (size_t i = 0; i < v->n && i < KNOBVAL_MAP_MAX; i++) {
			if (i)
				put(&o, ";", 1);
			put_i64(&o, v->map[i].key);
			put(&o, ":", 1);
			put_cpuset(&o, &v->map[i].cpus);
		}
		break;
	default:
		o.full = true;
	}
	return finish(&o);
}

bool knobval_equal(const struct knobval *a, const struct knobval *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case KNOB_T_INT:
	case KNOB_T_ONOFF:
		return a->v[0] == b->v[0];
	case KNOB_T_INTVEC:
		if (a->n != b->n || a->n > KNOBVAL_VEC_MAX)
			return false;
		return memcmp(a->v, b->v, a->n * sizeof(a->v[0])) == 0;
	case KNOB_T_CPULIST:
		return memcmp(&a->cpus, &b->cpus, sizeof(a->cpus)) == 0;
	case KNOB_T_ENUM:
		return strncmp(a->word, b->word, sizeof(a->word)) == 0;
	case KNOB_T_CPUMAP:
		if (a->n != b->n || a->n > KNOBVAL_MAP_MAX)
			return false;
		for (size_t i = 0; i < a->n; i++)
			if (a->map[i].key != b->map[i].key || memcmp(&a->map[i].cpus, &b->map[i].cpus, sizeof(a->map[i].cpus)))
				return false;
		return true;
	}
	return false;
}

bool knobval_text_equal(enum knob_type type, const char *a, const char *b)
{
	struct knobval va, vb;

	if (knobval_parse(type, a, &va, NULL, 0) < 0 || knobval_parse(type, b, &vb, NULL, 0) < 0)
		return false;
	return knobval_equal(&va, &vb);
}

static const char *const type_names[] = {
	[KNOB_T_INT] = "int",       [KNOB_T_INTVEC] = "intvec", [KNOB_T_CPULIST] = "cpulist",
	[KNOB_T_ENUM] = "enum",     [KNOB_T_ONOFF] = "onoff",   [KNOB_T_CPUMAP] = "cpumap",
};

const char *knobval_type_name(enum knob_type type)
{
	if ((unsigned)type >= sizeof(type_names) / sizeof(type_names[0]))
		return "?";
	return type_names[type];
}

int knobval_type_parse(const char *name, enum knob_type *out)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (strcmp(name, type_names[i]) == 0) {
			*out = (enum knob_type)i;
			return 0;
		}
	}
	return -EINVAL;
}
