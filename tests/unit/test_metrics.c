/*
 * Unit tests for agent/core/metrics.c: registry, frames, counter deltas, frame encoding.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/metrics.h"

static void test_name_validation(void **state)
{
	char max_ok[METRIC_NAME_MAX], too_long[METRIC_NAME_MAX + 1];
	const struct {
		const char *name;
		int rc;
	} cases[] = {
		{ "tcp.listen_overflows", 0 },
		{ "cpu.1.softirq", 0 },
		{ "a", 0 },
		{ "x!~{}[]", 0 },
		{ max_ok, 0 },
		{ "", -EINVAL },
		{ too_long, -EINVAL },
		{ "a b", -EINVAL },
		{ "a\tb", -EINVAL },
		{ "a\nb", -EINVAL },
		{ "del\x7f", -EINVAL },
		{ "\x01", -EINVAL },
		{ "caf\xc3\xa9", -EINVAL },
		{ NULL, -EINVAL },
	};
	struct metric_registry *reg;
	uint32_t id, want = 0;

	(void)state;
	memset(max_ok, 'm', sizeof(max_ok) - 1);
	max_ok[sizeof(max_ok) - 1] = '\0';
	memset(too_long, 'm', sizeof(too_long) - 1);
	too_long[sizeof(too_long) - 1] = '\0';
	assert_int_equal(metric_registry_new(&reg), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		id = 0;
		assert_int_equal(metric_intern(reg, cases[i].name, &id), cases[i].rc);
		assert_int_equal(metric_register(reg, cases[i].name, 1000 + (uint32_t)i),
				 cases[i].rc == 0 ? -EEXIST : -EINVAL);
		if (cases[i].rc == 0) {
			assert_int_equal(id, ++want);
			assert_string_equal(metric_name(reg, id), cases[i].name);
		} else {
			assert_int_equal(metric_lookup(reg, cases[i].name, &id), -ENOENT);
		}
	}
	assert_int_equal(metric_max_id(reg), want);
	metric_registry_free(reg);
}

static void test_intern_lookup(void **state)
{
	const char *names[] = { "tcp.listen_overflows", "tcp.listen_drops", "cpu.0.softirq", "cpu.1.softirq" };
	struct metric_registry *reg;
	uint32_t id;

	(void)state;
	assert_int_equal(metric_registry_new(&reg), 0);
	assert_int_equal(metric_max_id(reg), 0);
	assert_null(metric_name(reg, 0));
	assert_null(metric_name(reg, 1));
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(metric_intern(reg, names[i], &id), 0);
		assert_int_equal(id, i + 1);
	}
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(metric_intern(reg, names[i], &id), 0);
		assert_int_equal(id, i + 1);
		assert_int_equal(metric_lookup(reg, names[i], &id), 0);
		assert_int_equal(id, i + 1);
		assert_string_equal(metric_name(reg, i + 1), names[i]);
	}
	assert_int_equal(metric_lookup(reg, "tcp.listen", &id), -ENOENT);
	assert_int_equal(metric_max_id(reg), 4);
	assert_null(metric_name(reg, 5));
	assert_null(metric_name(reg, UINT32_MAX));
	metric_registry_free(reg);
	metric_registry_free(NULL);
}

static void test_register_conflicts(void **state)
{
	const struct {
		const char *name;
		uint32_t id;
		int rc;
	} steps[] = {
		{ "a", 5, 0 },
		{ "a", 5, 0 },           /* same pair again: fine */
		{ "a", 6, -EEXIST },     /* name taken by another id */
		{ "b", 5, -EEXIST },     /* id taken by another name */
		{ "b", 0, -EINVAL },
		{ "b", METRIC_ID_MAX + 1, -EINVAL },
		{ "b", 2, 0 },           /* below the max: gaps are fine */
		{ "c", 1000, 0 },
		{ "", 7, -EINVAL },
	};
	struct metric_registry *reg;
	uint32_t id;

	(void)state;
	assert_int_equal(metric_registry_new(&reg), 0);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		assert_int_equal(metric_register(reg, steps[i].name, steps[i].id), steps[i].rc);
	assert_int_equal(metric_max_id(reg), 1000);
	assert_string_equal(metric_name(reg, 5), "a");
	assert_string_equal(metric_name(reg, 2), "b");
	assert_null(metric_name(reg, 3));
	/* New names go above the highest id, never into a gap a store may still own. */
	assert_int_equal(metric_intern(reg, "d", &id), 0);
	assert_int_equal(id, 1001);
	assert_int_equal(metric_register(reg, "top", METRIC_ID_MAX), 0);
	assert_int_equal(metric_intern(reg, "e", &id), -ENOSPC);
	assert_int_equal(metric_intern(reg, "d", &id), 0);
	assert_int_equal(id, 1001);
	assert_int_equal(metric_max_id(reg), METRIC_ID_MAX);
	metric_registry_free(reg);
}

static void test_registry_stress(void **state)
{
	const uint32_t n = 100000;
	struct metric_registry *reg, *reg2;
	char name[METRIC_NAME_MAX];
	uint32_t id;

	(void)state;
	assert_int_equal(metric_registry_new(&reg), 0);
	assert_int_equal(metric_registry_new(&reg2), 0);
	for (uint32_t i = 1; i <= n; i++) {
		snprintf(name, sizeof(name), "irq.%u.cpu%u", i / 64, i % 64);
		assert_int_equal(metric_intern(reg, name, &id), 0);
		assert_int_equal(id, i);
	}
	/* A store loads names in any order. */
	for (uint32_t i = n; i >= 1; i--) {
		snprintf(name, sizeof(name), "irq.%u.cpu%u", i / 64, i % 64);
		assert_int_equal(metric_register(reg2, name, i), 0);
	}
	assert_int_equal(metric_max_id(reg), n);
	assert_int_equal(metric_max_id(reg2), n);
	for (uint32_t i = 1; i <= n; i++) {
		snprintf(name, sizeof(name), "irq.%u.cpu%u", i / 64, i % 64);
		assert_int_equal(metric_lookup(reg, name, &id), 0);
		assert_int_equal(id, i);
		assert_int_equal(metric_lookup(reg2, name, &id), 0);
		assert_int_equal(id, i);
		assert_string_equal(metric_name(reg, i), name);
		assert_string_equal(metric_name(reg2, i), name);
	}
	assert_int_equal(metric_lookup(reg, "irq.0.cpu64", &id), -ENOENT);
	metric_registry_free(reg);
	metric_registry_free(reg2);
}

static void assert_sorted_unique(const struct frame *fr)
{
	for (size_t i = 1; i < fr->n; i++)
		assert_true(fr->vals[i - 1].id < fr->vals[i].id);
}

static void test_frame_put_get(void **state)
{
	const struct {
		uint32_t id;
		double v;
		int rc;
	} puts[] = {
		{ 3, 30, 0 }, { 1, 10, 0 }, { 7, 70, 0 }, { 5, 50, 0 }, { 3, 33, 0 }, /* replace */
		{ 9, NAN, 0 }, { 2, -2.5, 0 }, { 7, 77, 0 }, { 0, 1, -EINVAL }, { METRIC_ID_MAX + 1, 1, -EINVAL },
	};
	const struct {
		uint32_t id;
		bool present;
		double v;
	} gets[] = {
		{ 1, true, 10 }, { 2, true, -2.5 }, { 3, true, 33 }, { 4, false, 0 }, { 5, true, 50 },
		{ 7, true, 77 }, { 8, false, 0 }, { 9, true, NAN }, { 0, false, 0 }, { 100, false, 0 },
	};
	struct frame fr;
	double v;

	(void)state;
	frame_init(&fr);
	assert_false(frame_get(&fr, 1, &v));
	for (size_t i = 0; i < sizeof(puts) / sizeof(puts[0]); i++)
		assert_int_equal(frame_put(&fr, puts[i].id, puts[i].v), puts[i].rc);
	assert_int_equal(fr.n, 6);
	assert_sorted_unique(&fr);
	for (size_t i = 0; i < sizeof(gets) / sizeof(gets[0]); i++) {
		v = 12345;
		assert_int_equal(frame_get(&fr, gets[i].id, &v), gets[i].present);
		if (!gets[i].present)
			assert_true(v == 12345);
		else if (isnan(gets[i].v))
			assert_true(isnan(v));
		else
			assert_true(v == gets[i].v);
	}
	frame_clear(&fr);
	assert_int_equal(fr.n, 0);
	assert_true(fr.cap >= 6);
	assert_false(frame_get(&fr, 1, &v));
	frame_free(&fr);
	assert_null(fr.vals);
	assert_int_equal(fr.cap, 0);
}

static void test_frame_set_sort(void **state)
{
	struct metric_registry *reg;
	struct frame fr;
	double v;
	uint32_t id;

	(void)state;
	assert_int_equal(metric_registry_new(&reg), 0);
	frame_init(&fr);
	assert_int_equal(frame_set(&fr, reg, "b", 2), 0);
	assert_int_equal(frame_set(&fr, reg, "a", 1), 0);
	assert_int_equal(frame_set(&fr, reg, "bad name", 1), -EINVAL);
	assert_int_equal(frame_set(&fr, reg, "b", 22), 0);
	assert_int_equal(fr.n, 2);
	assert_int_equal(metric_lookup(reg, "a", &id), 0);
	assert_int_equal(id, 2);
	assert_true(frame_get(&fr, 1, &v) && v == 22);
	assert_true(frame_get(&fr, 2, &v) && v == 1);

	/* Direct writes (e.g. a bulk copy) are put back in order, duplicates collapse. */
	frame_clear(&fr);
	assert_int_equal(frame_put(&fr, 1, 0), 0);
	assert_int_equal(frame_put(&fr, 2, 0), 0);
	assert_int_equal(frame_put(&fr, 3, 0), 0);
	assert_int_equal(frame_put(&fr, 4, 0), 0);
	fr.vals[0] = (struct frame_value){ 40, 4 };
	fr.vals[1] = (struct frame_value){ 10, 1 };
	fr.vals[2] = (struct frame_value){ 40, 4 };
	fr.vals[3] = (struct frame_value){ 20, 2 };
	frame_sort(&fr);
	assert_int_equal(fr.n, 3);
	assert_sorted_unique(&fr);
	assert_int_equal(fr.vals[0].id, 10);
	assert_int_equal(fr.vals[1].id, 20);
	assert_int_equal(fr.vals[2].id, 40);
	assert_true(fr.vals[2].v == 4);
	frame_free(&fr);
	metric_registry_free(reg);
}

static void test_frame_put_many(void **state)
{
	struct frame fr;
	double v;

	(void)state;
	frame_init(&fr);
	/* Descending order exercises the insert path. */
	for (uint32_t i = 5000; i >= 1; i--)
		assert_int_equal(frame_put(&fr, i * 3, i), 0);
	assert_int_equal(fr.n, 5000);
	assert_sorted_unique(&fr);
	for (uint32_t i = 1; i <= 5000; i++) {
		assert_true(frame_get(&fr, i * 3, &v));
		assert_true(v == i);
		assert_false(frame_get(&fr, i * 3 + 1, &v));
	}
	frame_free(&fr);
}

static void test_counters(void **state)
{
	const struct {
		char op; /* 'd': delta, 'f': forget */
		uint32_t id;
		uint64_t raw;
		int rc;
		uint64_t delta;
	} steps[] = {
		{ 'd', 1, 100, -ENODATA, 0 },
		{ 'd', 1, 150, 0, 50 },
		{ 'd', 1, 150, 0, 0 },                /* equal: no events */
		{ 'd', 1, 40, -ERANGE, 0 },           /* reset */
		{ 'd', 1, 45, 0, 5 },                 /* the reset value became the base */
		{ 'd', 7, 0, -ENODATA, 0 },
		{ 'd', 7, UINT64_MAX, 0, UINT64_MAX },
		{ 'd', 7, 3, -ERANGE, 0 },            /* 64-bit wrap */
		{ 'f', 1, 0, 0, 0 },
		{ 'd', 1, 1000, -ENODATA, 0 },        /* forgotten: first sample again */
		{ 'd', 1, 1001, 0, 1 },
		{ 'f', 999999, 0, 0, 0 },             /* never seen: harmless */
		{ 'd', 5000, 9, -ENODATA, 0 },        /* grows */
		{ 'd', 5000, 19, 0, 10 },
		{ 'd', 7, 4, 0, 1 },                  /* old ids survive growth */
		{ 'd', METRIC_ID_MAX + 1, 1, -EINVAL, 0 },
	};
	struct counters c;

	(void)state;
	counters_init(&c);
	counters_forget(&c, 3);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		uint64_t d = 777;

		if (steps[i].op == 'f') {
			counters_forget(&c, steps[i].id);
			continue;
		}
		assert_int_equal(counters_delta(&c, steps[i].id, steps[i].raw, &d), steps[i].rc);
		assert_true(d == steps[i].delta);
	}
	counters_free(&c);
	assert_null(c.last);
}

static void test_encode_golden(void **state)
{
	/* id 1 = 1.0; id 129 (delta 128, two varint bytes) = NaN; id 16513 (delta 16384, three bytes) = -2.0 */
	const uint8_t want[] = {
		0x01, 0x00, 0x00, 0x80, 0x3f,
		0x80, 0x01, 0x00, 0x00, 0xc0, 0x7f,
		0x80, 0x80, 0x01, 0x00, 0x00, 0x00, 0xc0,
	};
	struct frame fr;
	uint8_t *buf;
	size_t len;

	(void)state;
	frame_init(&fr);
	assert_int_equal(frame_put(&fr, 16513, -2.0), 0);
	assert_int_equal(frame_put(&fr, 1, 1.0), 0);
	assert_int_equal(frame_put(&fr, 129, NAN), 0);
	assert_int_equal(frame_encode(&fr, &buf, &len), 0);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	free(buf);

	frame_clear(&fr);
	assert_int_equal(frame_encode(&fr, &buf, &len), 0);
	assert_non_null(buf);
	assert_int_equal(len, 0);
	free(buf);

	/* Bad ids written directly are refused rather than encoded into something undecodable. */
	assert_int_equal(frame_put(&fr, 1, 1.0), 0);
	fr.vals[0].id = 0;
	assert_int_equal(frame_encode(&fr, &buf, &len), -EINVAL);
	assert_null(buf);
	frame_free(&fr);
}

static void test_encode_roundtrip(void **state)
{
	const struct {
		uint32_t id;
		double v;
		double want; /* after float32 */
	} vals[] = {
		{ 1, 0.0, 0.0 },
		{ 2, NAN, NAN },
		{ 3, 1.0 / 3.0, (double)(1.0f / 3.0f) },
		{ 127, 16777216.0, 16777216.0 },
		{ 128, -1e-3, (double)-1e-3f },
		{ 16383, INFINITY, INFINITY },
		{ 16384, 1e300, INFINITY },
		{ 1048000, -1e300, -INFINITY },
		{ 1048001, 123456.0, 123456.0 },
		{ METRIC_ID_MAX - 1, -0.0, -0.0 },
		{ METRIC_ID_MAX, 42.5, 42.5 },
	};
	const size_t nv = sizeof(vals) / sizeof(vals[0]);
	struct frame fr, out;
	uint8_t *buf;
	size_t len;

	(void)state;
	frame_init(&fr);
	frame_init(&out);
	for (size_t i = nv; i-- > 0;)
		assert_int_equal(frame_put(&fr, vals[i].id, vals[i].v), 0);
	assert_int_equal(frame_encode(&fr, &buf, &len), 0);
	assert_int_equal(frame_put(&out, 77, 1), 0); /* cleared by decode */
	assert_int_equal(frame_decode(buf, len, &out), 0);
	free(buf);
	assert_int_equal(out.n, nv);
	for (size_t i = 0; i < nv; i++) {
		assert_int_equal(out.vals[i].id, vals[i].id);
		if (isnan(vals[i].want)) {
			assert_true(isnan(out.vals[i].v));
		} else {
			assert_true(out.vals[i].v == vals[i].want);
			assert_int_equal(signbit(out.vals[i].v) != 0, signbit(vals[i].want) != 0);
		}
	}
	assert_int_equal(frame_decode(NULL, 0, &out), 0);
	assert_int_equal(out.n, 0);
	frame_free(&fr);
	frame_free(&out);
}

static void test_decode_bad(void **state)
{
	const struct {
		const char *what;
		uint8_t buf[16];
		size_t len;
	} cases[] = {
		{ "truncated float", { 0x01, 0x00, 0x00, 0x80 }, 4 },
		{ "varint without end", { 0x80 }, 1 },
		{ "varint, no float", { 0x01 }, 1 },
		{ "second value truncated", { 0x01, 0, 0, 0x80, 0x3f, 0x01, 0 }, 7 },
		{ "six-byte varint", { 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0, 0 }, 10 },
		{ "varint above 32 bits", { 0xff, 0xff, 0xff, 0xff, 0x1f, 0, 0, 0, 0 }, 9 },
		{ "padded varint", { 0x81, 0x00, 0, 0, 0, 0 }, 6 },
		{ "zero delta first", { 0x00, 0, 0, 0, 0 }, 5 },
		{ "zero delta (duplicate id)", { 0x01, 0, 0, 0, 0, 0x00, 0, 0, 0, 0 }, 10 },
		{ "id above max", { 0x81, 0x80, 0x40, 0, 0, 0, 0 }, 7 },             /* 1 + (1 << 20) */
		{ "sum above max", { 0x80, 0x80, 0x40, 0, 0, 0, 0, 0x01, 0, 0, 0, 0 }, 12 },
		{ "garbage", { 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef }, 8 },
	};
	struct frame fr;

	(void)state;
	frame_init(&fr);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(frame_put(&fr, 5, 5), 0);
		if (frame_decode(cases[i].buf, cases[i].len, &fr) != -EBADMSG)
			fail_msg("case '%s' not refused", cases[i].what);
		assert_int_equal(fr.n, 0);
	}
	frame_free(&fr);
}

static void test_decode_random(void **state)
{
	/* Whatever the bytes, decode either refuses them or yields valid, increasing ids. */
	uint8_t buf[64];
	struct frame fr;
	unsigned ok = 0, bad = 0;
	uint32_t x = 12345;

	(void)state;
	frame_init(&fr);
	for (int round = 0; round < 200000; round++) {
		size_t len = 1 + (size_t)(round % (int)sizeof(buf));
		int rc;

		for (size_t i = 0; i < len; i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (uint8_t)(x >> 16);
			if (round & 1)
				buf[i] &= 0x83; /* small deltas, so some buffers decode */
		}
		rc = frame_decode(buf, len, &fr);
		if (rc == 0) {
			ok++;
			assert_sorted_unique(&fr);
			for (size_t i = 0; i < fr.n; i++)
				assert_true(fr.vals[i].id >= 1 && fr.vals[i].id <= METRIC_ID_MAX);
			assert_true(fr.n <= len / 5);
		} else {
			bad++;
			assert_int_equal(rc, -EBADMSG);
			assert_int_equal(fr.n, 0);
		}
	}
	assert_true(ok > 100);
	assert_true(bad > 100);
	frame_free(&fr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_validation),
		cmocka_unit_test(test_intern_lookup),
		cmocka_unit_test(test_register_conflicts),
		cmocka_unit_test(test_registry_stress),
		cmocka_unit_test(test_frame_put_get),
		cmocka_unit_test(test_frame_set_sort),
		cmocka_unit_test(test_frame_put_many),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_encode_golden),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_decode_bad),
		cmocka_unit_test(test_decode_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
