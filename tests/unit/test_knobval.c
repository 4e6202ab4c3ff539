/* Unit tests for knobval: strict parsing to canonical text, round trips, and hostile input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "knobval.h"

struct parse_case {
	enum knob_type type;
	const char *text;
	int rc;
	const char *canon; /* when rc == 0 */
};

static const struct parse_case cases[] = {
	/* INT */
	{KNOB_T_INT, "4096", 0, "4096"},
	{KNOB_T_INT, "  4096\n", 0, "4096"},
	{KNOB_T_INT, "\t0007\t", 0, "7"},
	{KNOB_T_INT, "-1", 0, "-1"},
	{KNOB_T_INT, "-0", 0, "0"},
	{KNOB_T_INT, "9223372036854775807", 0, "9223372036854775807"},
	{KNOB_T_INT, "-9223372036854775808", 0, "-9223372036854775808"},
	{KNOB_T_INT, "9223372036854775808", -EINVAL, NULL},
	{KNOB_T_INT, "-9223372036854775809", -EINVAL, NULL},
	{KNOB_T_INT, "99999999999999999999999999", -EINVAL, NULL},
	{KNOB_T_INT, "", -EINVAL, NULL},
	{KNOB_T_INT, "   ", -EINVAL, NULL},
	{KNOB_T_INT, "-", -EINVAL, NULL},
	{KNOB_T_INT, "+5", -EINVAL, NULL},
	{KNOB_T_INT, "0x10", -EINVAL, NULL},
	{KNOB_T_INT, "1e3", -EINVAL, NULL},
	{KNOB_T_INT, "12 13", -EINVAL, NULL},
	{KNOB_T_INT, "4096;rm -rf /", -EINVAL, NULL},
	{KNOB_T_INT, "4096\r", -EINVAL, NULL},
	{KNOB_T_INT, "1.5", -EINVAL, NULL},
	/* INTVEC */
	{KNOB_T_INTVEC, "4096 131072 6291456", 0, "4096 131072 6291456"},
	{KNOB_T_INTVEC, "4096\t131072\t6291456\n", 0, "4096 131072 6291456"},
	{KNOB_T_INTVEC, "  32768    60999 ", 0, "32768 60999"},
	{KNOB_T_INTVEC, "5", 0, "5"},
	{KNOB_T_INTVEC, "1 2 3 4 5 6 7 8", 0, "1 2 3 4 5 6 7 8"},
	{KNOB_T_INTVEC, "1 2 3 4 5 6 7 8 9", -EINVAL, NULL},
	{KNOB_T_INTVEC, "", -EINVAL, NULL},
	{KNOB_T_INTVEC, "1,2", -EINVAL, NULL},
	{KNOB_T_INTVEC, "1 x 3", -EINVAL, NULL},
	{KNOB_T_INTVEC, "1 2 99999999999999999999", -EINVAL, NULL},
	/* CPULIST */
	{KNOB_T_CPULIST, "0-3,8", 0, "0-3,8"},
	{KNOB_T_CPULIST, "8,3,2,1,0", 0, "0-3,8"},
	{KNOB_T_CPULIST, "0-2,1-5,7,6", 0, "0-7"},
	{KNOB_T_CPULIST, "5,5,5", 0, "5"},
	{KNOB_T_CPULIST, "", 0, ""},
	{KNOB_T_CPULIST, "\n", 0, ""},
	{KNOB_T_CPULIST, "0-1023", 0, "0-1023"},
	{KNOB_T_CPULIST, "1023", 0, "1023"},
	{KNOB_T_CPULIST, "1024", -EINVAL, NULL},
	{KNOB_T_CPULIST, "0-1024", -EINVAL, NULL},
	{KNOB_T_CPULIST, "4294967296", -EINVAL, NULL},
	{KNOB_T_CPULIST, "3-1", -EINVAL, NULL},
	{KNOB_T_CPULIST, "1,", -EINVAL, NULL},
	{KNOB_T_CPULIST, ",1", -EINVAL, NULL},
	{KNOB_T_CPULIST, "1,,2", -EINVAL, NULL},
	{KNOB_T_CPULIST, "1-", -EINVAL, NULL},
	{KNOB_T_CPULIST, "-1", -EINVAL, NULL},
	{KNOB_T_CPULIST, "1-2-3", -EINVAL, NULL},
	{KNOB_T_CPULIST, "0-7:2", -EINVAL, NULL},
	{KNOB_T_CPULIST, "1, 2", -EINVAL, NULL},
	{KNOB_T_CPULIST, "ff", -EINVAL, NULL},
	/* ENUM */
	{KNOB_T_ENUM, "auto", 0, "auto"},
	{KNOB_T_ENUM, " bbr\n", 0, "bbr"},
	{KNOB_T_ENUM, "fq_codel", 0, "fq_codel"},
	{KNOB_T_ENUM, "a.b-c_d9", 0, "a.b-c_d9"},
	{KNOB_T_ENUM, "Auto", -EINVAL, NULL},
	{KNOB_T_ENUM, "_x", -EINVAL, NULL},
	{KNOB_T_ENUM, "auto off", -EINVAL, NULL},
	{KNOB_T_ENUM, "a/b", -EINVAL, NULL},
	{KNOB_T_ENUM, "", -EINVAL, NULL},
	{KNOB_T_ENUM, "abcdefghijabcdefghijabcdefghij1", 0, "abcdefghijabcdefghijabcdefghij1"},
	{KNOB_T_ENUM, "abcdefghijabcdefghijabcdefghij12", -EINVAL, NULL},
	{KNOB_T_ENUM, "x\x1b[2J", -EINVAL, NULL},
	/* ONOFF */
	{KNOB_T_ONOFF, "on", 0, "on"},
	{KNOB_T_ONOFF, "off\n", 0, "off"},
	{KNOB_T_ONOFF, "1", 0, "on"},
	{KNOB_T_ONOFF, "0", 0, "off"},
	{KNOB_T_ONOFF, "ON", -EINVAL, NULL},
	{KNOB_T_ONOFF, "yes", -EINVAL, NULL},
	{KNOB_T_ONOFF, "2", -EINVAL, NULL},
	{KNOB_T_ONOFF, "onn", -EINVAL, NULL},
	{KNOB_T_ONOFF, "", -EINVAL, NULL},
	/* CPUMAP */
	{KNOB_T_CPUMAP, "45:0-3;46:4-7", 0, "45:0-3;46:4-7"},
	{KNOB_T_CPUMAP, "46:7,6,5,4;45:3,2,1,0", 0, "45:0-3;46:4-7"},
	{KNOB_T_CPUMAP, "0:", 0, "0:"},
	{KNOB_T_CPUMAP, "", 0, ""},
	{KNOB_T_CPUMAP, "4294967295:1", 0, "4294967295:1"},
	{KNOB_T_CPUMAP, "4294967296:1", -EINVAL, NULL},
	{KNOB_T_CPUMAP, "45:1;45:2", -EINVAL, NULL},
	{KNOB_T_CPUMAP, "45:1;", -EINVAL, NULL},
	{KNOB_T_CPUMAP, ";45:1", -EINVAL, NULL},
	{KNOB_T_CPUMAP, "45", -EINVAL, NULL},
	{KNOB_T_CPUMAP, ":1", -EINVAL, NULL},
	{KNOB_T_CPUMAP, "x:1", -EINVAL, NULL},
	{KNOB_T_CPUMAP, "45:1:2", -EINVAL, NULL},
	{KNOB_T_CPUMAP, "45:1024", -EINVAL, NULL},
	{KNOB_T_CPUMAP, "45 :1", -EINVAL, NULL},
};

static void test_parse_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct parse_case *c = &cases[i];
		struct knobval v;
		char err[128] = "", buf[KNOBVAL_TEXT_MAX];
		int r = knobval_parse(c->type, c->text, &v, err, sizeof(err));

		if (r != c->rc)
			fail_msg("case %zu (%s '%s'): got %d, want %d (%s)", i, knobval_type_name(c->type), c->text, r,
				 c->rc, err);
		if (r < 0) {
			assert_true(err[0] != '\0'); /* every refusal says why */
			continue;
		}
		assert_int_equal(knobval_format(&v, buf, sizeof(buf)), 0);
		if (strcmp(buf, c->canon) != 0)
			fail_msg("case %zu: '%s' formats as '%s', want '%s'", i, c->text, buf, c->canon);
		assert_true(knobval_text_equal(c->type, c->text, c->canon));
	}
}

/* Errors never repeat the input: hostile bytes must not reach logs through the message. */
static void test_errors_do_not_echo(void **state)
{
	struct knobval v;
	char err[256];

	(void)state;
	assert_int_equal(knobval_parse(KNOB_T_INT, "\x1b]0;pwned\x07", &v, err, sizeof(err)), -EINVAL);
	assert_null(strchr(err, '\x1b'));
	assert_null(strstr(err, "pwned"));
	assert_int_equal(knobval_parse(KNOB_T_CPUMAP, "1:\x1b", &v, err, sizeof(err)), -EINVAL);
	assert_null(strchr(err, '\x1b'));
	/* NULL error buffer is fine. */
	assert_int_equal(knobval_parse(KNOB_T_INT, "x", &v, NULL, 0), -EINVAL);
	assert_int_equal(knobval_parse(KNOB_T_INT, NULL, &v, err, sizeof(err)), -EINVAL);
}

static void test_values(void **state)
{
	struct knobval v;

	(void)state;
	assert_int_equal(knobval_parse(KNOB_T_INTVEC, "4096 131072 6291456", &v, NULL, 0), 0);
	assert_int_equal(v.n, 3);
	assert_int_equal(v.v[0], 4096);
	assert_int_equal(v.v[2], 6291456);
	assert_int_equal(knobval_parse(KNOB_T_CPULIST, "0-3,8,1023", &v, NULL, 0), 0);
	assert_int_equal(knobval_cpuset_count(&v.cpus), 6);
	assert_true(knobval_cpuset_has(&v.cpus, 8));
	assert_false(knobval_cpuset_has(&v.cpus, 7));
	assert_false(knobval_cpuset_has(&v.cpus, 5000));
	assert_int_equal(knobval_parse(KNOB_T_CPUMAP, "46:4-7;45:0-3;2:", &v, NULL, 0), 0);
	assert_int_equal(v.n, 3);
	assert_int_equal(v.map[0].key, 2);
	assert_int_equal(knobval_cpuset_count(&v.map[0].cpus), 0);
	assert_int_equal(v.map[1].key, 45);
	assert_int_equal(v.map[2].key, 46);
	assert_true(knobval_cpuset_has(&v.map[2].cpus, 7));
	assert_int_equal(knobval_parse(KNOB_T_ONOFF, "on", &v, NULL, 0), 0);
	assert_int_equal(v.v[0], 1);
}

static void test_cpuset_helpers(void **state)
{
	struct knobval_cpuset s = {{0}};
	unsigned lo, hi;
	char buf[16];

	(void)state;
	assert_int_equal(knobval_cpuset_span(&s, &lo, &hi), -ENOENT);
	assert_int_equal(knobval_cpuset_add(&s, 1024), -ERANGE);
	assert_int_equal(knobval_cpuset_add(&s, 3), 0);
	assert_int_equal(knobval_cpuset_add(&s, 64), 0);
	assert_int_equal(knobval_cpuset_add(&s, 65), 0);
	assert_int_equal(knobval_cpuset_span(&s, &lo, &hi), 0);
	assert_int_equal(lo, 3);
	assert_int_equal(hi, 65);
	assert_int_equal(knobval_cpuset_format(&s, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "3,64-65");
	assert_int_equal(knobval_cpuset_format(&s, buf, 5), -ENOSPC);
	assert_string_equal(buf, "");
}

static void test_equal(void **state)
{
	struct knobval a, b;

	(void)state;
	assert_int_equal(knobval_parse(KNOB_T_INT, "5", &a, NULL, 0), 0);
	assert_int_equal(knobval_parse(KNOB_T_INTVEC, "5", &b, NULL, 0), 0);
	assert_false(knobval_equal(&a, &b)); /* same number, different types */
	assert_true(knobval_text_equal(KNOB_T_INTVEC, "1 2", "1\t2\n"));
	assert_false(knobval_text_equal(KNOB_T_INTVEC, "1 2", "1 2 3"));
	assert_false(knobval_text_equal(KNOB_T_INTVEC, "1 2", "garbage"));
	assert_true(knobval_text_equal(KNOB_T_CPUMAP, "1:0-1;2:3", "2:3;1:1,0"));
	assert_false(knobval_text_equal(KNOB_T_CPUMAP, "1:0-1;2:3", "1:0-1;2:4"));
	assert_false(knobval_text_equal(KNOB_T_CPUMAP, "1:0-1;2:3", "1:0-1;3:3"));
	assert_true(knobval_text_equal(KNOB_T_ONOFF, "1", "on"));
	assert_false(knobval_text_equal(KNOB_T_ENUM, "auto", "off"));
	assert_true(knobval_text_equal(KNOB_T_CPULIST, "", " "));
}

static void test_format_small_buffers(void **state)
{
	struct knobval v;
	char buf[8];

	(void)state;
	assert_int_equal(knobval_parse(KNOB_T_INTVEC, "4096 131072", &v, NULL, 0), 0);
	for (size_t len = 0; len <= 11; len++) {
		memset(buf, 'x', sizeof(buf));
		assert_int_equal(knobval_format(&v, buf, len < sizeof(buf) ? len : sizeof(buf)), -ENOSPC);
		if (len > 0)
			assert_int_equal(buf[0], '\0');
	}
	assert_int_equal(knobval_parse(KNOB_T_ONOFF, "off", &v, NULL, 0), 0);
	assert_int_equal(knobval_format(&v, buf, 3), -ENOSPC);
	assert_int_equal(knobval_format(&v, buf, 4), 0);
	assert_string_equal(buf, "off");
}

/* The limits: 64 keys fit, 65 do not; a value whose canonical text passes KNOBVAL_TEXT_MAX is refused. */
static void test_limits(void **state)
{
	char text[8192], buf[KNOBVAL_TEXT_MAX];
	struct knobval v;
	size_t len = 0;

	(void)state;
	for (int k = 63; k >= 0; k--)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%d:%d", k == 63 ? "" : ";", k, k % 16);
	assert_int_equal(knobval_parse(KNOB_T_CPUMAP, text, &v, NULL, 0), 0);
	assert_int_equal(v.n, 64);
	assert_int_equal(v.map[0].key, 0);
	assert_int_equal(v.map[63].key, 63);
	assert_int_equal(knobval_format(&v, buf, sizeof(buf)), 0);
	assert_int_equal(strncmp(buf, "0:0;1:1;2:2;", 12), 0);
	snprintf(text + len, sizeof(text) - len, ";99:1");
	assert_int_equal(knobval_parse(KNOB_T_CPUMAP, text, &v, NULL, 0), -EINVAL);

	/* Every second CPU: 512 items, about 2 KiB of canonical text. */
	len = 0;
	for (int c = 0; c < 1024; c += 2)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%d", c ? "," : "", c);
	assert_int_equal(knobval_parse(KNOB_T_CPULIST, text, &v, NULL, 0), -EINVAL);
	/* The same CPUs as ranges of two merge into a short text. */
	len = 0;
	for (int c = 0; c < 1024; c += 2)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%d-%d", c ? "," : "", c, c + 1);
	assert_int_equal(knobval_parse(KNOB_T_CPULIST, text, &v, NULL, 0), 0);
	assert_int_equal(knobval_format(&v, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0-1023");
}

static void test_type_names(void **state)
{
	enum knob_type t;

	(void)state;
	for (int i = KNOB_T_INT; i <= KNOB_T_CPUMAP; i++) {
		assert_int_equal(knobval_type_parse(knobval_type_name((enum knob_type)i), &t), 0);
		assert_int_equal(t, i);
	}
	assert_int_equal(knobval_type_parse("integer", &t), -EINVAL);
	assert_string_equal(knobval_type_name((enum knob_type)99), "?");
}

/*
 * Random texts over the alphabet of every type: parsing must never crash, and whatever parses must format to a
 * canonical text that parses again to the same value and formats identically (a fixed point).
 */
static void test_random_round_trip(void **state)
{
	static const char alphabet[] = "0123456789-,;: \t\nabox.";
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned parsed = 0;

	(void)state;
	for (int iter = 0; iter < 200000; iter++) {
		char text[40], canon[KNOBVAL_TEXT_MAX], again[KNOBVAL_TEXT_MAX];
		size_t len;
		struct knobval a, b;
		enum knob_type type;

		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		len = seed % (sizeof(text) - 1);
		type = (enum knob_type)((seed >> 8) % 6);
		for (size_t i = 0; i < len; i++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			text[i] = alphabet[seed % (sizeof(alphabet) - 1)];
		}
		text[len] = '\0';
		if (knobval_parse(type, text, &a, NULL, 0) < 0)
			continue;
		parsed++;
		assert_int_equal(knobval_format(&a, canon, sizeof(canon)), 0);
		assert_int_equal(knobval_parse(type, canon, &b, NULL, 0), 0);
		assert_true(knobval_equal(&a, &b));
		assert_int_equal(knobval_format(&b, again, sizeof(again)), 0);
		assert_string_equal(canon, again);
	}
	/* The alphabet makes valid values common enough for the round trip to be exercised. */
	assert_true(parsed > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_errors_do_not_echo),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_cpuset_helpers),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_format_small_buffers),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_random_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
