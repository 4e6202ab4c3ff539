/*
 * metrics: name interning, frames, counter deltas and the frame encoding. See metrics.h.
 */
#include "metrics.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Names live in an array indexed by id (id -> name is the hot path of the store and the API) and in an open
 * addressing hash table of ids (name -> id is the hot path of the sampler). The table holds at most half its slots
 * so linear probing stays short.
 */
struct slot {
	uint32_t id; /* 0: empty */
	uint32_t hash;
};

struct metric_registry {
	char **names;  /* names[id], index 0 unused */
	uint32_t names_cap;
	uint32_t max_id;
	uint32_t count;
	struct slot *slots;
	uint32_t mask; /* slots has mask + 1 entries, a power of two */
};

static uint32_t name_hash(const char *s, size_t len)
{
	/* FNV-1a, folded: names are short and come from the kernel and our own code, not from clients. */
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return (uint32_t)(h ^ (h >> 32));
}

/* Length of a valid name, or 0. */
static size_t name_check(const char *name)
{
	size_t len;

	if (!name)
		return 0;
	for (len = 0; name[len]; len++) {
		unsigned char c = (unsigned char)name[len];

		if (len >= METRIC_NAME_MAX - 1 || c < 0x21 || c > 0x7e)
			return 0;
	}
	return len;
}

int metric_registry_new(struct metric_registry **out)
{
	struct metric_registry *reg;

	*out = NULL;
	reg = calloc(1, sizeof(*reg));
	if (!reg)
		return -ENOMEM;
	reg->mask = 63;
	reg->slots = calloc(reg->mask + 1, sizeof(*reg->slots));
	if (!reg->slots) {
		free(reg);
		return -ENOMEM;
	}
	*out = reg;
	return 0;
}

void metric_registry_free(struct metric_registry *reg)
{
	if (!reg)
		return;
	for (uint32_t i = 0; i < reg->names_cap; i++)
		free(reg->names[i]);
	free(reg->names);
	free(reg->slots);
	free(reg);
}

/* Slot holding NAME, or the empty slot where it would go. */
static struct slot *find_slot(const struct metric_registry *reg, const char *name, uint32_t hash)
{
	uint32_t i = hash & reg->mask;

	for (;;) {
		struct slot *s = &reg->slots[i];

		if (s->id == 0)
			return s;
		if (s->hash == hash && strcmp(reg->names[s->id], name) == 0)
			return s;
		i = (i + 1) & reg->mask;
	}
}

static int grow_slots(struct metric_registry *reg)
{
	uint32_t ncap = (reg->mask + 1) * 2;
	struct slot *old = reg->slots;
	uint32_t oldn = reg->mask + 1;
	struct slot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	reg->slots = ns;
	reg->mask = ncap - 1;
	for (uint32_t i = 0; i < oldn; i++) {
		uint32_t j;

		if (old[i].id == 0)
			continue;
		j = old[i].hash & reg->mask;
		while (ns[j].id != 0)
			j = (j + 1) & reg->mask;
		ns[j] = old[i];
	}
	free(old);
	return 0;
}

static int grow_names(struct metric_registry *reg, uint32_t id)
{
	uint32_t ncap = reg->names_cap ? reg->names_cap : 64;
	char **nn;

	if (id < reg->names_cap)
		return 0;
	while (ncap <= id)
		ncap *= 2; /* id <= METRIC_ID_MAX, so no overflow */
	nn = realloc(reg->names, (size_t)ncap * sizeof(*nn));
	if (!nn)
		return -ENOMEM;
	memset(nn + reg->names_cap, 0, (size_t)(ncap - reg->names_cap) * sizeof(*nn));
	reg->names = nn;
	reg->names_cap = ncap;
	return 0;
}

/* Insert a validated NAME (not present) as ID (free). */
static int insert(struct metric_registry *reg, const char *name, size_t len, uint32_t hash, uint32_t id)
{
	struct slot *s;
	char *copy;
	int rc;

	if ((uint64_t)(reg->count + 1) * 2 > (uint64_t)reg->mask + 1) {
		rc = grow_slots(reg);
		if (rc < 0)
			return rc;
	}
	rc = grow_names(reg, id);
	if (rc < 0)
		return rc;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, name, len + 1);
	reg->names[id] = copy;
	s = find_slot(reg, name, hash);
	s->id = id;
	s->hash = hash;
	reg->count++;
	if (id > reg->max_id)
		reg->max_id = id;
	return 0;
}

int metric_intern(struct metric_registry *reg, const char *name, uint32_t *id)
{
	size_t len = name_check(name);
	uint32_t hash;
	struct slot *s;
	int rc;

	if (len == 0)
		return -EINVAL;
	hash = name_hash(name, len);
	s = find_slot(reg, name, hash);
	if (s->id != 0) {
		*id = s->id;
		return 0;
	}
	if (reg->max_id >= METRIC_ID_MAX)
		return -ENOSPC;
	rc = insert(reg, name, len, hash, reg->max_id + 1);
	if (rc < 0)
		return rc;
	*id = reg->max_id;
	return 0;
}

int metric_register(struct metric_registry *reg, const char *name, uint32_t id)
{
	size_t len = name_check(name);
	uint32_t hash;
	struct slot *s;

	if (len == 0 || id == 0 || id > METRIC_ID_MAX)
		return -EINVAL;
	hash = name_hash(name, len);
	s = find_slot(reg, name, hash);
	if (s->id != 0)
		return s->id == id ? 0 : -EEXIST;
	if (id < reg->names_cap && reg->names[id])
		return -EEXIST;
	return insert(reg, name, len, hash, id);
}

int metric_lookup(const struct metric_registry *reg, const char *name, uint32_t *id)
{
	size_t len = name_check(name);
	const struct slot *s;

	if (len == 0)
		return -ENOENT;
	s = find_slot(reg, name, name_hash(name, len));
	if (s->id == 0)
		return -ENOENT;
	*id = s->id;
	return 0;
}

const char *metric_name(const struct metric_registry *reg, uint32_t id)
{
	if (!reg || id >= reg->names_cap)
		return NULL;
	return reg->names[id];
}

uint32_t metric_max_id(const struct metric_registry *reg)
{
	return reg ? reg->max_id : 0;
}

void frame_init(struct frame *fr)
{
	memset(fr, 0, sizeof(*fr));
}

void frame_clear(struct frame *fr)
{
	fr->n = 0;
}

void frame_free(struct frame *fr)
{
	free(fr->vals);
	frame_init(fr);
}

static int frame_reserve(struct frame *fr, size_t want)
{
	size_t ncap = fr->cap ? fr->cap : 32;
	struct frame_value *nv;

	if (want <= fr->cap)
		return 0;
	while (ncap < want) {
		if (ncap > SIZE_MAX / 2 / sizeof(*nv))
			return -ENOMEM;
		ncap *= 2;
	}
	nv = realloc(fr->vals, ncap * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	fr->vals = nv;
	fr->cap = ncap;
	return 0;
}

/* Index of the first value with id >= ID. */
static size_t lower_bound(const struct frame *fr, uint32_t id)
{
	size_t lo = 0, hi = fr->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fr->vals[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int frame_put(struct frame *fr, uint32_t id, double v)
{
	size_t i;
	int rc;

	if (id == 0 || id > METRIC_ID_MAX)
		return -EINVAL;
	/* Samplers visit metrics in the order they were interned, so appending is the common case. */
	if (fr->n == 0 || fr->vals[fr->n - 1].id < id) {
		i = fr->n;
	} else {
		i = lower_bound(fr, id);
		if (fr->vals[i].id == id) {
			fr->vals[i].v = v;
			return 0;
		}
	}
	rc = frame_reserve(fr, fr->n + 1);
	if (rc < 0)
		return rc;
	memmove(&fr->vals[i + 1], &fr->vals[i], (fr->n - i) * sizeof(*fr->vals));
	fr->vals[i].id = id;
	fr->vals[i].v = v;
	fr->n++;
	return 0;
}

int frame_set(struct frame *fr, struct metric_registry *reg, const char *name, double v)
{
	uint32_t id;
	int rc = metric_intern(reg, name, &id);

	if (rc < 0)
		return rc;
	return frame_put(fr, id, v);
}

bool frame_get(const struct frame *fr, uint32_t id, double *v)
{
	size_t i = lower_bound(fr, id);

	if (i >= fr->n || fr->vals[i].id != id)
		return false;
	*v = fr->vals[i].v;
	return true;
}

static int cmp_value(const void *a, const void *b)
{
	uint32_t x = ((const struct frame_value *)a)->id, y = ((const struct frame_value *)b)->id;

	return (x > y) - (x < y);
}

void frame_sort(struct frame *fr)
{
	size_t i, j;

	for (i = 1; i < fr->n; i++)
		if (fr->vals[i - 1].id >= fr->vals[i].id)
			break;
	if (i >= fr->n)
		return;
	qsort(fr->vals, fr->n, sizeof(*fr->vals), cmp_value);
	for (i = 0, j = 0; i < fr->n; i++) {
		if (j > 0 && fr->vals[j - 1].id == fr->vals[i].id)
			fr->vals[j - 1] = fr->vals[i];
		else
			fr->vals[j++] = fr->vals[i];
	}
	fr->n = j;
}

void counters_init(struct counters *c)
{
	memset(c, 0, sizeof(*c));
}

void counters_free(struct counters *c)
{
	free(c->last);
	free(c->seen);
	counters_init(c);
}

int counters_delta(struct counters *c, uint32_t id, uint64_t raw, uint64_t *delta)
{
	*delta = 0;
	if (id > METRIC_ID_MAX)
		return -EINVAL;
	if (id >= c->cap) {
		size_t ncap = c->cap ? c->cap : 64;
		uint64_t *nl;
		uint8_t *ns;

		while (ncap <= id)
			ncap *= 2;
		nl = realloc(c->last, ncap * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		c->last = nl;
		ns = realloc(c->seen, ncap);
		if (!ns)
			return -ENOMEM; /* last is larger than cap, which is harmless */
		memset(ns + c->cap, 0, ncap - c->cap);
		c->seen = ns;
		c->cap = ncap;
	}
	if (!c->seen[id]) {
		c->seen[id] = 1;
		c->last[id] = raw;
		return -ENODATA;
	}
	if (raw < c->last[id]) {
		c->last[id] = raw;
		return -ERANGE;
	}
	*delta = raw - c->last[id];
	c->last[id] = raw;
	return 0;
}

void counters_forget(struct counters *c, uint32_t id)
{
	if (id < c->cap)
		c->seen[id] = 0;
}

#define VARINT_MAX 5 /* a uint32 in 7-bit groups */
#define VALUE_MAX (VARINT_MAX + 4)
#define VALUE_MIN 5 /* one varint byte and the float */

static uint32_t float_bits(double v)
{
	float f;
	uint32_t u;

	if (isnan(v))
		return 0x7fc00000u;
	/* Out-of-range conversion is undefined in ISO C; make the IEEE result explicit. */
	if (v > FLT_MAX)
		f = INFINITY;
	else if (v < -FLT_MAX)
		f = -INFINITY;
	else
		f = (float)v;
	memcpy(&u, &f, sizeof(u));
	return u;
}

int frame_encode(struct frame *fr, uint8_t **buf, size_t *len)
{
	uint8_t *b, *p;
	uint32_t prev = 0;

	*buf = NULL;
	*len = 0;
	frame_sort(fr);
	if (fr->n > 0 && (fr->vals[0].id == 0 || fr->vals[fr->n - 1].id > METRIC_ID_MAX))
		return -EINVAL; /* the decoder would refuse it */
	if (fr->n > (SIZE_MAX - 1) / VALUE_MAX)
		return -ENOMEM;
	b = malloc(fr->n * VALUE_MAX + 1); /* +1: never malloc(0) */
	if (!b)
		return -ENOMEM;
	p = b;
	for (size_t i = 0; i < fr->n; i++) {
		uint32_t d = fr->vals[i].id - prev;
		uint32_t u = float_bits(fr->vals[i].v);

		prev = fr->vals[i].id;
		while (d >= 0x80) {
			*p++ = (uint8_t)(d | 0x80);
			d >>= 7;
		}
		*p++ = (uint8_t)d;
		p[0] = (uint8_t)u;
		p[1] = (uint8_t)(u >> 8);
		p[2] = (uint8_t)(u >> 16);
		p[3] = (uint8_t)(u >> 24);
		p += 4;
	}
	*buf = b;
	*len = (size_t)(p - b);
	return 0;
}

/* Read a minimal LEB128 uint32 at *POS. */
static int read_varint(const uint8_t *buf, size_t len, size_t *pos, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < VARINT_MAX; i++) {
		uint8_t b;

		if (*pos >= len)
			return -EBADMSG;
		b = buf[(*pos)++];
		if (i == VARINT_MAX - 1 && b > 0x0f)
			return -EBADMSG; /* more than 32 bits, or a sixth byte */
		v |= (uint32_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (b == 0 && i > 0)
				return -EBADMSG; /* padded: the same id has one encoding only */
			*out = v;
			return 0;
		}
	}
	return -EBADMSG;
}

int frame_decode(const uint8_t *buf, size_t len, struct frame *fr)
{
	size_t pos = 0;
	uint32_t id = 0;
	int rc;

	fr->n = 0;
	if (len == 0)
		return 0;
	if (!buf)
		return -EBADMSG;
	/* Sized by the input, which bounds the allocation by what the caller already holds. */
	rc = frame_reserve(fr, len / VALUE_MIN + 1);
	if (rc < 0)
		return rc;
	while (pos < len) {
		uint32_t d, u;
		float f;

		rc = read_varint(buf, len, &pos, &d);
		if (rc < 0)
			goto bad;
		if (d == 0 || d > METRIC_ID_MAX - id)
			goto bad;
		id += d;
		if (len - pos < 4)
			goto bad;
		u = (uint32_t)buf[pos] | (uint32_t)buf[pos + 1] << 8 | (uint32_t)buf[pos + 2] << 16 |
		    (uint32_t)buf[pos + 3] << 24;
		pos += 4;
		memcpy(&f, &u, sizeof(f));
		fr->vals[fr->n].id = id;
		fr->vals[fr->n].v = isnan(f) ? NAN : (double)f;
		fr->n++;
	}
	return 0;
bad:
	fr->n = 0;
	return -EBADMSG;
}
