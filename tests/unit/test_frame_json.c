/*
 * test_frame_json: the frames API's direct writer must print what jansson printed before it, byte for byte: each
 * real (a table of edge cases and 200k random doubles against json_dumps of json_real), and whole frames (every
 * kind of filter, missing values, names that need escaping, roll-ups) against json_dumps of frame_to_json.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "api/frame_json.h"
#include "proto.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void check_real(double v)
{
	json_t *j = json_real(v);
	char *want = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
	struct sbuf b;

	assert_non_null(want);
	sbuf_init(&b);
	json_real_append(&b, v);
	if (strcmp(sbuf_str(&b), want) != 0)
		fail_msg("%a: wrote '%s', jansson '%s'", v, sbuf_str(&b), want);
	sbuf_free(&b);
	free(want);
	json_decref(j);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_reals(void **state)
{
	static const double cases[] = {
		0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 1e-5, 1e-300, 5e-324, 2.2250738585072014e-308, 123456789.0, 1e16,
		1e16 + 2, 9.999999999999998e16, 1e17, 1e17 + 16, 1e20, 1.5e20, -1e22, 1e300, 1.7976931348623157e308,
		-1.7976931348623157e308, 9007199254740992.0, 9007199254740993.0, -9007199254740991.0, 60.0, 0.001,
		1234.5678, 100.0, 99.99, 1e-7, 3.0e-10, 12345678901234567890.0, 4294967295.0, 0.30000000000000004,
	};
	uint64_t s = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		check_real(cases[i]);
	for (int i = 0; i < 200000; i++) {
		uint64_t r = rnd(&s);
		double v;

		switch (i % 4) {
		case 0: /* any finite bit pattern */
			memcpy(&v, &r, sizeof(v));
			if (!isfinite(v))
				continue;
			break;
		case 1: /* counters: integers of every size */
			v = (double)(int64_t)(r >> (r % 64));
			break;
		case 2: /* rates and shares: thousandths */
			v = (double)(int64_t)(r % 20000000) / 1000.0 - 5000.0;
			break;
		default: /* near the integer fast path's edge */
			v = 1e17 + (double)(int64_t)(r % 2001) * 8.0 - 8000.0;
			break;
		}
		check_real(v);
	}
}

/* What the API wrote for a frame before the direct writer: frame_to_json, with on_frame's roll-up fields. */
static char *via_jansson(const struct frame *fr, const struct metric_registry *reg, const struct metric_filter *f,
			 bool rollup)
{
	json_t *o = frame_to_json(fr, reg, f);
	char *s;

	assert_non_null(o);
	if (rollup) {
		json_object_set_new(o, API_K_TICKS, json_integer((json_int_t)fr->dt_s));
		json_object_set_new(o, API_K_DT, json_real(60.0));
	}
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	assert_non_null(s);
	return s;
}

static void test_frames(void **state)
{
	static const char *const names[] = {
		"http.requests", "http.p99_ms", "cpu.0.softirq", "cpu.1.softirq", "listen.8080.queued",
		"odd\"name", "back\\slash", "tcp.listen_overflows", "link.eth0.rx_packets",
	};
	static const char *const filters[] = {
		"", "http.requests", "http.*", "cpu.*,http.p99_ms", "absent.metric",
		"http.requests,absent.one,absent.one",
		"odd\"name,back\\slash", "missing.*", "tcp.listen_overflows,http.*,tcp.listen_overflows,nope",
		"cpu.0.softirq,cpu.0.softirq",
	};
	static const double values[] = {12345, 3.25, 0.1, NAN, 7, -0.0, 1e21, INFINITY, 42};
	struct metric_registry *reg;
	uint32_t ids[ARRAY_LEN(names)];
	struct frame fr;

	(void)state;
	assert_int_equal(metric_registry_new(&reg), 0);
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		assert_int_equal(metric_intern(reg, names[i], &ids[i]), 0);
	frame_init(&fr);
	for (size_t mask = 0; mask < 8; mask++) {
		frame_clear(&fr);
		fr.ts_ms = 1764500000123 + (int64_t)mask;
		fr.dt_s = mask == 3 ? 0.9995 : 1.0 + (double)mask;
		for (size_t i = 0; i < ARRAY_LEN(names); i++)
			if (mask == 0 || (i + mask) % 3 != 0) /* every metric, then frames lacking some */
				assert_int_equal(frame_put(&fr, ids[i], values[i]), 0);
		for (size_t k = 0; k < ARRAY_LEN(filters); k++) {
			struct metric_filter f;
			char err[128];

			assert_int_equal(metric_filter_parse(filters[k], &f, err, sizeof(err)), 0);
			for (int rollup = 0; rollup <= 1; rollup++) {
				char *want = via_jansson(&fr, reg, k ? &f : NULL, rollup);
				struct sbuf b;

				sbuf_init(&b);
				frame_json_append(&b, &fr, reg, k ? &f : NULL, rollup);
				if (strcmp(sbuf_str(&b), want) != 0)
					fail_msg("frame %zu, filter '%s', rollup %d:\n wrote   %s\n jansson %s", mask,
						 filters[k], rollup, sbuf_str(&b), want);
				if (frame_json_bound(&fr, reg, k ? &f : NULL, rollup) < b.len)
					fail_msg("frame %zu, filter '%s', rollup %d: bound %zu < %zu written", mask,
						 filters[k], rollup, frame_json_bound(&fr, reg, k ? &f : NULL, rollup),
						 b.len);
				sbuf_free(&b);
				free(want);
			}
		}
	}
	frame_free(&fr);
	metric_registry_free(reg);
}

/* The longest texts a value can print: the bound must hold for them too. */
static void test_bound_worst(void **state)
{
	static const double worst[] = {-1.2345678901234567e-308, -0.00012345678901234567, -12345678901234567.0,
				       -1.7976931348623157e308, -4.9406564584124654e-324, -99999999999999999.0};
	struct metric_registry *reg;
	struct frame fr;
	uint32_t id;
	char name[METRIC_NAME_MAX];

	(void)state;
	assert_int_equal(metric_registry_new(&reg), 0);
	frame_init(&fr);
	fr.ts_ms = INT64_MIN;
	fr.dt_s = worst[0];
	for (size_t i = 0; i < ARRAY_LEN(worst); i++) {
		memset(name, '"', sizeof(name) - 1); /* every character escaped */
		name[sizeof(name) - 1] = '\0';
		name[i] = 'a';
		assert_int_equal(metric_intern(reg, name, &id), 0);
		assert_int_equal(frame_put(&fr, id, worst[i]), 0);
	}
	for (int rollup = 0; rollup <= 1; rollup++) {
		struct sbuf b;

		fr.dt_s = rollup ? -9.2233720368547758e18 : worst[0];
		sbuf_init(&b);
		frame_json_append(&b, &fr, reg, NULL, rollup);
		assert_true(frame_json_bound(&fr, reg, NULL, rollup) >= b.len);
		sbuf_free(&b);
	}
	frame_free(&fr);
	metric_registry_free(reg);
}

/* Issue 22, R2: a page of frames never holds more than its bytes (one hour of frames of a host of 64 CPUs was a 39
 * MB answer); the frames that fit are all there, in order, and truncated says more follow. */
static void test_page(void **state)
{
	struct metric_registry *reg;
	struct frame_page page;
	struct frame fr;
	json_t *o;
	size_t fitted = 0;

	(void)state;
	assert_int_equal(metric_registry_new(&reg), 0);
	frame_init(&fr);
	for (int cpu = 0; cpu < 64; cpu++) {
		static const char *const kinds[] = {"user", "system", "softirq", "idle", "iowait"};

		for (size_t k = 0; k < ARRAY_LEN(kinds); k++) {
			char name[64];
			uint32_t id;

			snprintf(name, sizeof(name), "cpu.%d.%s", cpu, kinds[k]);
			assert_int_equal(metric_intern(reg, name, &id), 0);
			assert_int_equal(frame_put(&fr, id, 0.1 * cpu + (double)k / 3.0), 0);
		}
	}
	/* 64 KiB: some frames fit, not all of 1000. */
	frame_page_init(&page, 65536);
	for (int i = 0; i < 1000; i++) {
		int r;

		fr.ts_ms = 1764500000000 + i * 1000;
		fr.dt_s = 1.0;
		r = frame_page_add(&page, &fr, reg, NULL, false);
		assert_true(r == 0 || r == 1);
		if (r == 1)
			break;
		fitted++;
	}
	assert_true(fitted > 1 && fitted < 1000);
	assert_int_equal(page.n, fitted);
	assert_true(page.full);
	assert_int_equal(frame_page_add(&page, &fr, reg, NULL, false), 1);
	assert_int_equal(frame_page_end(&page, false), 0);
	assert_true(page.out.len <= 65536);
	o = json_loadb(page.out.p, page.out.len, 0, NULL);
	assert_non_null(o);
	assert_true(json_is_true(json_object_get(o, API_K_TRUNCATED)));
	assert_int_equal(json_array_size(json_object_get(o, API_K_FRAMES)), fitted);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(o, API_K_FRAMES), fitted - 1),
							    API_K_TS)), 1764500000000 + (int64_t)(fitted - 1) * 1000);
	json_decref(o);
	frame_page_free(&page);
	/* All fit: truncated only when the caller says more may follow; the first frame goes in whatever its size. */
	for (int more = 0; more <= 1; more++) {
		frame_page_init(&page, 1 << 20);
		assert_int_equal(frame_page_add(&page, &fr, reg, NULL, true), 0);
		assert_int_equal(frame_page_add(&page, &fr, reg, NULL, true), 0);
		assert_int_equal(frame_page_end(&page, more), 0);
		o = json_loadb(page.out.p, page.out.len, 0, NULL);
		assert_non_null(o);
		assert_int_equal(json_is_true(json_object_get(o, API_K_TRUNCATED)), more);
		json_decref(o);
		frame_page_free(&page);
	}
	frame_page_init(&page, 10);
	assert_int_equal(frame_page_add(&page, &fr, reg, NULL, false), 0);
	assert_int_equal(frame_page_add(&page, &fr, reg, NULL, false), 1);
	assert_int_equal(frame_page_end(&page, false), 0);
	assert_int_equal(page.n, 1);
	frame_page_free(&page);
	frame_free(&fr);
	metric_registry_free(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reals),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_bound_worst),
		cmocka_unit_test(test_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
