/* sampler_kit: what the probes share (health, metric ids and deltas, rooted reads, cadence); see sampler_kit.h. */
#include "build-config.h"

#include "observe/sampler_kit.h"
#include "strutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* One entry of the metric-id cache (see SAMPLER_KEY). */
struct id_slot {
	uint64_t key; /* 0: empty */
	uint32_t id;
};

void sampler_close_files(struct procfile *pf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		procfile_close(&pf[i]);
}

/* ---- health ---------------------------------------------------------------------------------------------- */

void sampler_probe_ok(struct sampler *s, struct frame *fr, enum probe_id id)
{
	struct probe_health *h = &s->health[id];

	h->saturated = false;
	if (!h->ok && h->failures) {
		char field[64];
		const char *fields[] = {field, NULL};

		snprintf(field, sizeof(field), "NGXAT_PROBE=%s", s->probe_names[id]);
		log_fields(LOG_NOTICE, fields, "probe %s recovered", s->probe_names[id]);
	}
	h->ok = true;
	h->err = 0;
	h->msg[0] = '\0';
	fr->probes_ok |= 1u << id;
}

__attribute__((format(printf, 6, 0))) static void probe_bad(struct sampler *s, struct frame *fr, enum probe_id id,
							      int err, bool saturated, const char *fmt, va_list ap)
{
	struct probe_health *h = &s->health[id];
	char msg[sizeof(h->msg)];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* Log on a change of the error only: a dead nginx must not write a line per second. Saturation's evidence
	 * changes every tick; its start is what is logged. */
	if (h->ok || h->failures == 0 || h->saturated != saturated || (!saturated && strcmp(msg, h->msg) != 0)) {
		char field[64], errno_field[32];
		const char *fields[] = {field, errno_field, NULL};

		snprintf(field, sizeof(field), "NGXAT_PROBE=%s", s->probe_names[id]);
		snprintf(errno_field, sizeof(errno_field), "ERRNO=%d", -err);
		log_fields(LOG_WARNING, fields, "probe %s %s: %s", s->probe_names[id], saturated ? "saturated" : "failing",
			   msg);
	}
	h->saturated = saturated;
	h->ok = false;
	h->err = err;
	h->failures++;
	memcpy(h->msg, msg, sizeof(msg));
	fr->probes_bad |= 1u << id;
}

void sampler_probe_fail(struct sampler *s, struct frame *fr, enum probe_id id, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	probe_bad(s, fr, id, err, false, fmt, ap);
	va_end(ap);
}

void sampler_probe_saturated(struct sampler *s, struct frame *fr, enum probe_id id, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	probe_bad(s, fr, id, err, true, fmt, ap);
	va_end(ap);
}

bool sampler_frame_value(const struct sampler *s, const struct frame *fr, const char *name, double *v)
{
	uint32_t id;

	return metric_lookup(s->reg, name, &id) == 0 && frame_get(fr, id, v);
}

/* ---- values ---------------------------------------------------------------------------------------------- */

static uint32_t *find_id(struct sampler *s, uint64_t key)
{
	for (size_t i = (size_t)(key ^ (key >> 29)) * 0x9e3779b97f4a7c15ull >> 32 & s->ids_mask;;
	     i = (i + 1) & s->ids_mask) {
		if (s->ids[i].key == key)
			return &s->ids[i].id;
		if (s->ids[i].key == 0)
			return NULL;
	}
}

/* Remember KEY -> ID; kept at most half full. A failure only means the name is formatted again next time. */
static void remember_id(struct sampler *s, uint64_t key, uint32_t id)
{
	size_t i;

	if (s->ids_n + 1 > (s->ids_mask + 1) / 2) {
		size_t cap = s->ids ? (s->ids_mask + 1) * 2 : 256;
		struct id_slot *old = s->ids, *t = calloc(cap, sizeof(*t));
		size_t oldn = s->ids ? s->ids_mask + 1 : 0;

		if (!t)
			return;
		s->ids = t;
		s->ids_mask = cap - 1;
		s->ids_n = 0;
		for (i = 0; i < oldn; i++)
			if (old[i].key)
				remember_id(s, old[i].key, old[i].id);
		free(old);
	}
	for (i = (size_t)(key ^ (key >> 29)) * 0x9e3779b97f4a7c15ull >> 32 & s->ids_mask; s->ids[i].key;
	     i = (i + 1) & s->ids_mask)
		;
	s->ids[i].key = key;
	s->ids[i].id = id;
	s->ids_n++;
}

static uint32_t cached_id(struct sampler *s, uint64_t key)
{
	uint32_t *p = s->ids ? find_id(s, key) : NULL;

	return p ? *p : 0;
}

/* Intern NAME and remember it under KEY. 0 on failure. */
static uint32_t new_id(struct sampler *s, uint64_t key, const char *name)
{
	uint32_t id;

	if (metric_intern(s->reg, name, &id) < 0)
		return 0;
	remember_id(s, key, id);
	return id;
}

/* Id of a fixed NAME, which must have static storage: its address is the key. */
static uint32_t static_id(struct sampler *s, const char *name)
{
	uint32_t id = cached_id(s, (uint64_t)(uintptr_t)name);

	return id ? id : new_id(s, (uint64_t)(uintptr_t)name, name);
}

/* Id of the metric KEY stands for; FMT with AP is its name, formatted and interned the first time only. */
static uint32_t format_id(struct sampler *s, uint64_t key, const char *fmt, va_list ap)
{
	char name[METRIC_NAME_MAX];
	uint32_t id = cached_id(s, key);

	if (id)
		return id;
	vsnprintf(name, sizeof(name), fmt, ap);
	return new_id(s, key, name);
}

static void put_gauge_id(struct frame *fr, uint32_t id, double v)
{
	if (id)
		frame_put(fr, id, v);
}

/*
 * A counter's delta is only meaningful against the previous tick: after a gap (probe failed, source vanished)
 * the next sample is a new base, so an outage never shows as a spike.
 */
void sampler_put_counter_id(struct sampler *s, struct frame *fr, uint32_t id, uint64_t raw)
{
	uint64_t delta;

	if (!id)
		return;
	if (id >= s->seen_cap) {
		size_t cap = s->seen_cap ? s->seen_cap : 256;
		uint64_t *p;

		while (cap <= id)
			cap *= 2;
		p = realloc(s->seen_tick, cap * sizeof(*p));
		if (!p)
			return;
		memset(p + s->seen_cap, 0, (cap - s->seen_cap) * sizeof(*p));
		s->seen_tick = p;
		s->seen_cap = cap;
	}
	if (s->seen_tick[id] + 1 != s->tick)
		counters_forget(&s->ctr, id);
	s->seen_tick[id] = s->tick;
	if (counters_delta(&s->ctr, id, raw, &delta) == 0)
		frame_put(fr, id, (double)delta);
	else
		frame_put(fr, id, NAN);
}

void sampler_put_gauge(struct sampler *s, struct frame *fr, const char *name, double v)
{
	put_gauge_id(fr, static_id(s, name), v);
}

void sampler_put_counter(struct sampler *s, struct frame *fr, const char *name, uint64_t raw)
{
	sampler_put_counter_id(s, fr, static_id(s, name), raw);
}

void sampler_putk_counter(struct sampler *s, struct frame *fr, uint64_t key, uint64_t raw, const char *fmt, ...)
{
	va_list ap;
	uint32_t id;

	va_start(ap, fmt);
	id = format_id(s, key, fmt, ap);
	va_end(ap);
	sampler_put_counter_id(s, fr, id, raw);
}

void sampler_putk_gauge(struct sampler *s, struct frame *fr, uint64_t key, double v, const char *fmt, ...)
{
	va_list ap;
	uint32_t id;

	va_start(ap, fmt);
	id = format_id(s, key, fmt, ap);
	va_end(ap);
	put_gauge_id(fr, id, v);
}

/* ---- cadence ------------------------------------------------------------------------------------------------ */

/*
 * Whether a part of a probe that runs more seldom than every tick (a costly count, a discovery) is due: LAST is
 * the tick it last ran, 0 for never (or to force it). Whole probes run every tick: a counter's delta is taken
 * against the previous tick only, so a probe run every N ticks would give no deltas at all.
 */
bool sampler_due(const struct sampler *s, uint64_t last, uint64_t every_ms)
{
	return !last || (s->tick - last) * (uint64_t)s->cfg.tick_ms >= every_ms;
}

/* ---- file access ----------------------------------------------------------------------------------------- */

void sampler_rooted(const struct sampler *s, char *out, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	str_vrooted(out, n, s->cfg.root, fmt, ap); /* a path too long to fit then fails to open, and is reported */
	va_end(ap);
}

int sampler_read(struct sampler *s, struct procfile *pf, const char *path)
{
	char full[CONFIG_PATH_MAX + 128];

	sampler_rooted(s, full, sizeof(full), "%s", path);
	return procfile_read(pf, full, pf != &s->pf[PF_SCRATCH], &s->pb, MAX_READ);
}
