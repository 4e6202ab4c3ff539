#include "api/frame_json.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"

int metric_filter_parse(const char *s, struct metric_filter *f, char *err, size_t errlen)
{
	const char *p = s;

	memset(f, 0, sizeof(*f));
	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == 0 || len >= METRIC_NAME_MAX) {
			snprintf(err, errlen, "metric names must be 1 to %d characters", METRIC_NAME_MAX - 1);
			return -EINVAL;
		}
		if (f->n == METRIC_FILTER_MAX) {
			snprintf(err, errlen, "at most %d metric names", METRIC_FILTER_MAX);
			return -E2BIG;
		}
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)p[i];

			if (c <= ' ' || c >= 0x7f || (c == '*' && i != len - 1)) {
				snprintf(err, errlen, "bad character in metric name (only a trailing '*' is a wildcard)");
				return -EINVAL;
			}
		}
		memcpy(f->pat[f->n], p, len);
		if (p[len - 1] == '*') {
			f->pat[f->n][len - 1] = '\0';
			f->prefix[f->n] = true;
		}
		f->n++;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

bool metric_filter_match(const struct metric_filter *f, const char *name)
{
	if (!f || f->n == 0)
		return true;
	for (size_t i = 0; i < f->n; i++) {
		if (f->prefix[i] ? strncmp(name, f->pat[i], strlen(f->pat[i])) == 0 : strcmp(name, f->pat[i]) == 0)
			return true;
	}
	return false;
}

json_t *frame_to_json(const struct frame *fr, const struct metric_registry *reg, const struct metric_filter *f)
{
	json_t *o = json_object(), *vals = json_object();

	if (!o || !vals) {
		json_decref(o);
		json_decref(vals);
		return NULL;
	}
	json_object_set_new(o, API_K_TS, json_integer(fr->ts_ms));
	json_object_set_new(o, API_K_DT, json_real(fr->dt_s));
	for (size_t i = 0; i < fr->n; i++) {
		const char *name = metric_name(reg, fr->vals[i].id);
		double v = fr->vals[i].v;

		if (!name || !metric_filter_match(f, name))
			continue;
		json_object_set_new(vals, name, isfinite(v) ? json_real(v) : json_null());
	}
	for (size_t i = 0; f && i < f->n; i++)
		if (!f->prefix[i] && !json_object_get(vals, f->pat[i]))
			json_object_set_new(vals, f->pat[i], json_null());
	json_object_set_new(o, API_K_VALUES, vals);
	return o;
}

/* Decimal digits of V into S (at least 21 bytes); their count. */
static size_t put_i64(char *s, int64_t v)
{
	char tmp[24];
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	size_t n = 0, k = 0;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		s[k++] = '-';
	while (n)
		s[k++] = tmp[--n];
	return k;
}

void json_real_append(struct sbuf *b, double v)
{
	char s[64], *e;
	size_t n;

	/* An integer below 1e17 prints whole under %.17g, with no exponent: its digits and ".0", without printf. */
	if (fabs(v) < 1e17 && v == (double)(int64_t)v && !(v == 0 && signbit(v))) {
		n = put_i64(s, (int64_t)v);
		memcpy(s + n, ".0", 2);
		sbuf_add(b, s, n + 2);
		return;
	}
	n = (size_t)snprintf(s, sizeof(s) - 3, "%.17g", v);
	if (!strchr(s, '.') && !strchr(s, 'e')) {
		memcpy(s + n, ".0", 3);
		n += 2;
	}
	e = strchr(s, 'e');
	if (e) {
		char *start = e + 1, *end = start + 1;

		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, n - (size_t)(end - s) + 1);
			n -= (size_t)(end - start);
		}
	}
	sbuf_add(b, s, n);
}

/* A metric name or filter pattern as a JSON string: both are ASCII 0x21..0x7e (metric_intern,
 * metric_filter_parse), so only '"' and '\\' need escaping. */
static void put_name(struct sbuf *b, const char *name)
{
	const char *p = name, *q;

	sbuf_add(b, "\"", 1);
	while ((q = strpbrk(p, "\"\\"))) {
		sbuf_add(b, p, (size_t)(q - p));
		sbuf_add(b, *q == '"' ? "\\\"" : "\\\\", 2);
		p = q + 1;
	}
	sbuf_puts(b, p);
	sbuf_add(b, "\"", 1);
}

#define REAL_MAX 26 /* "%.17g" is at most 24 characters ("-1.2345678901234567e-308"), and ".0" may follow */
#define I64_MAX_LEN 20

size_t frame_json_bound(const struct frame *fr, const struct metric_registry *reg, const struct metric_filter *f,
			bool rollup)
{
	/* {"ts":I,"dt":R,"values":{...}} and ,"ticks":I for a roll-up; each value ,"NAME":R (a name escaped at most
	 * doubles), each pattern ,"PAT":null. */
	size_t n = sizeof(API_K_TS) + sizeof(API_K_DT) + sizeof(API_K_VALUES) + 16 + I64_MAX_LEN + REAL_MAX;

	if (rollup)
		n += sizeof(API_K_TICKS) + 4 + I64_MAX_LEN;
	for (size_t i = 0; i < fr->n; i++) {
		const char *name = metric_name(reg, fr->vals[i].id);

		if (name && metric_filter_match(f, name))
			n += 2 * strlen(name) + 4 + REAL_MAX;
	}
	for (size_t i = 0; f && i < f->n; i++)
		n += 2 * strlen(f->pat[i]) + 8;
	return n;
}

#define PAGE_HEAD "{\"" API_K_FRAMES "\":["
#define PAGE_TAIL "],\"" API_K_TRUNCATED "\":false}"

void frame_page_init(struct frame_page *p, size_t max_bytes)
{
	*p = (struct frame_page){.max_bytes = max_bytes};
	sbuf_init(&p->out);
	sbuf_puts(&p->out, PAGE_HEAD);
}

int frame_page_add(struct frame_page *p, const struct frame *fr, const struct metric_registry *reg,
		   const struct metric_filter *f, bool rollup)
{
	size_t need = 1 + frame_json_bound(fr, reg, f, rollup) + sizeof(PAGE_TAIL);

	if (p->full || (p->n && p->out.len + need > p->max_bytes)) {
		p->full = true;
		return 1;
	}
	if (p->n)
		sbuf_add(&p->out, ",", 1);
	frame_json_append(&p->out, fr, reg, f, rollup);
	p->n++;
	return p->out.oom ? -ENOMEM : 0;
}

int frame_page_end(struct frame_page *p, bool more)
{
	sbuf_puts(&p->out, "],\"" API_K_TRUNCATED "\":");
	sbuf_puts(&p->out, p->full || more ? "true}" : "false}");
	return p->out.oom ? -ENOMEM : 0;
}

void frame_page_free(struct frame_page *p)
{
	sbuf_free(&p->out);
}

/* Whether exact pattern I of F is printed as null: the frame lacks it, and no earlier exact pattern is the same. */
static bool null_pattern(const struct frame *fr, const struct metric_registry *reg, const struct metric_filter *f,
			 size_t i)
{
	uint32_t id;
	double v;

	if (f->prefix[i] || (metric_lookup(reg, f->pat[i], &id) == 0 && frame_get(fr, id, &v)))
		return false;
	for (size_t j = 0; j < i; j++)
		if (!f->prefix[j] && strcmp(f->pat[j], f->pat[i]) == 0)
			return false;
	return true;
}

void frame_json_append(struct sbuf *b, const struct frame *fr, const struct metric_registry *reg,
		       const struct metric_filter *f, bool rollup)
{
	char s[32];
	bool first = true;

	sbuf_add(b, "{\"" API_K_TS "\":", sizeof(API_K_TS) + 3);
	sbuf_add(b, s, put_i64(s, fr->ts_ms));
	sbuf_add(b, ",\"" API_K_DT "\":", sizeof(API_K_DT) + 3);
	json_real_append(b, rollup ? 60.0 : fr->dt_s);
	sbuf_add(b, ",\"" API_K_VALUES "\":{", sizeof(API_K_VALUES) + 4);
	for (size_t i = 0; i < fr->n; i++) {
		const char *name = metric_name(reg, fr->vals[i].id);
		double v = fr->vals[i].v;

		if (!name || !metric_filter_match(f, name))
			continue;
		if (!first)
			sbuf_add(b, ",", 1);
		first = false;
		put_name(b, name);
		sbuf_add(b, ":", 1);
		if (isfinite(v))
			json_real_append(b, v);
		else
			sbuf_add(b, "null", 4);
	}
	for (size_t i = 0; f && i < f->n; i++) {
		if (!null_pattern(fr, reg, f, i))
			continue;
		if (!first)
			sbuf_add(b, ",", 1);
		first = false;
		put_name(b, f->pat[i]);
		sbuf_add(b, ":null", 5);
	}
	sbuf_add(b, "}", 1);
	if (rollup) {
		sbuf_add(b, ",\"" API_K_TICKS "\":", sizeof(API_K_TICKS) + 3);
		sbuf_add(b, s, put_i64(s, (int64_t)fr->dt_s));
	}
	sbuf_add(b, "}", 1);
}
