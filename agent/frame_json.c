#include "frame_json.h"

#include <errno.h>
#include <math.h>
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
