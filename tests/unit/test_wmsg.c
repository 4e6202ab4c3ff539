/* Unit tests for agent/priv/wmsg.c: every message the engine and the writer exchange goes through encode and decode
 * unchanged, and every datagram that is not exactly one of them is refused with what was wrong (table-driven: the
 * bytes a compromised engine could send). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "priv/wmsg.h"

static struct wmsg msg(enum wmsg_type type, uint16_t op, const char *a, const char *b)
{
	struct wmsg m = {.type = type, .op = op, .id = 77};

	switch (type) {
	case WMSG_SET: strcpy(m.name, a); strcpy(m.value, b); break;
	case WMSG_RESTORE:
	case WMSG_READ:
	case WMSG_PROBE:
	case WMSG_SYSCTL: strcpy(m.name, a); break;
	case WMSG_OPEN_LOG: strcpy(m.path, a); break;
	case WMSG_NICS: strcpy(m.value, a); break;
	case WMSG_RESULT: strcpy(m.text, a); m.result = -EPERM; break;
	default: break;
	}
	return m;
}

static void test_round_trip(void **state)
{
	const struct wmsg cases[] = {
		msg(WMSG_SET, 0, "net.core.somaxconn", "4096"),
		msg(WMSG_SET, 0, "rps.eth0", ""), /* an empty CPU list is a value */
		msg(WMSG_SET, 0, "irq_affinity.eth0", "45:0-3;46:4-7"),
		msg(WMSG_SET, 0, "rps.enP1s0", "0-3"), /* an interface's name in upper case */
		msg(WMSG_RESTORE, 0, "nginx.worker_connections", NULL),
		msg(WMSG_NGINX, WMSG_NGINX_TEST, NULL, NULL),
		msg(WMSG_NGINX, WMSG_NGINX_RELOAD, NULL, NULL),
		msg(WMSG_NGINX, WMSG_NGINX_DUMP, NULL, NULL),
		msg(WMSG_SOCKET, WMSG_SOCKET_DIAG, NULL, NULL),
		msg(WMSG_SOCKET, WMSG_SOCKET_TCP, NULL, NULL),
		msg(WMSG_SOCKET, WMSG_SOCKET_TCP6, NULL, NULL),
		msg(WMSG_SOCKET, WMSG_SOCKET_ROUTE, NULL, NULL),
		msg(WMSG_OPEN_LOG, 0, "/var/log/nginx/access.log", NULL),
		msg(WMSG_RELOAD, 0, NULL, NULL),
		msg(WMSG_RESULT, 0, "nginx: [emerg] unknown directive \"x\"\tcaf\xc3\xa9", NULL),
		msg(WMSG_RESULT, 0, "", NULL),
		msg(WMSG_READ, 0, "nginx.worker_connections", NULL),
		msg(WMSG_PROBE, 0, "sched_slice", NULL),
		msg(WMSG_NICS, 0, "eth*", NULL),
		msg(WMSG_NICS, 0, "", NULL), /* every NIC */
		msg(WMSG_SYSCTL, 0, "net.ipv4.ip_local_port_range", NULL),
	};
	uint8_t buf[WMSG_MAX];
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct wmsg got;
		int n = wmsg_encode(&cases[i], buf, sizeof(buf));

		assert_true(n >= 20);
		assert_int_equal(wmsg_decode(buf, (size_t)n, &got, err, sizeof(err)), 0);
		assert_memory_equal(&got, &cases[i], sizeof(got));
	}
	/* The largest SET fits WMSG_MAX. */
	{
		struct wmsg m = {.type = WMSG_SET, .id = 1}, got;
		int n;

		memset(m.name, 'a', WMSG_NAME_MAX - 1);
		memset(m.value, '9', WMSG_VALUE_MAX - 1);
		n = wmsg_encode(&m, buf, sizeof(buf));
		assert_int_equal(n, WMSG_MAX - 2);
		assert_int_equal(wmsg_decode(buf, (size_t)n, &got, err, sizeof(err)), 0);
		assert_int_equal(wmsg_encode(&m, buf, (size_t)n - 1), -ENOSPC);
	}
}

/* Encode refuses what decode would: the writer's answers and the engine's requests obey the same rules. */
static void test_encode_refuses(void **state)
{
	const struct wmsg cases[] = {
		msg(WMSG_SET, 0, "", "1"),                        /* no name */
		msg(WMSG_SET, 0, "net/core", "1"),                /* a slash */
		msg(WMSG_SET, 0, "../../etc/shadow", "1"),        /* a path as a name */
		msg(WMSG_SET, 0, "net.core.somaxconn", "1\n2"),   /* a control character */
		msg(WMSG_SET, 1, "net.core.somaxconn", "1"),      /* an op where none is */
		msg(WMSG_NGINX, 0, NULL, NULL),                   /* no op */
		msg(WMSG_NGINX, 4, NULL, NULL),                   /* an op past the last */
		msg(WMSG_SOCKET, 5, NULL, NULL),
		msg(WMSG_OPEN_LOG, 0, "access.log", NULL),        /* not absolute */
		msg(WMSG_RESULT, 0, "a\x1b[2J", NULL),            /* ESC */
		msg((enum wmsg_type)0, 0, NULL, NULL),
		msg((enum wmsg_type)12, 0, NULL, NULL),
		msg(WMSG_SYSCTL, 0, "net/core", NULL),            /* a path as a name */
		msg(WMSG_NICS, 0, "eth\n", NULL),                 /* a control character */
		msg(WMSG_READ, 0, "", NULL),                      /* no name */
		msg(WMSG_PROBE, 1, "net.core.somaxconn", NULL),   /* an op where none is */
		msg(WMSG_RELOAD, 1, NULL, NULL),                  /* an op where none is */
	};
	struct wmsg with_result = msg(WMSG_RESTORE, 0, "rps.eth0", NULL);
	uint8_t buf[WMSG_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(wmsg_encode(&cases[i], buf, sizeof(buf)), -EINVAL);
	with_result.result = -1;
	assert_int_equal(wmsg_encode(&with_result, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(wmsg_encode(NULL, buf, sizeof(buf)), -EINVAL);
}

/* A datagram of HEAD's 20 bytes (little-endian fields as listed) and then BODY. */
static size_t dgram(uint8_t *out, uint32_t magic, uint16_t type, uint16_t op, int32_t result, uint16_t la, uint16_t lb,
		    const char *body, size_t blen)
{
	const uint32_t w[] = {magic, (uint32_t)type | (uint32_t)op << 16, 77, (uint32_t)result,
			      (uint32_t)la | (uint32_t)lb << 16};

	for (size_t i = 0; i < 5; i++)
		for (size_t b = 0; b < 4; b++)
			out[i * 4 + b] = (uint8_t)(w[i] >> (8 * b));
	memcpy(out + 20, body, blen);
	return 20 + blen;
}

static void test_decode_refuses(void **state)
{
	static const struct {
		uint32_t magic;
		uint16_t type, op;
		int32_t result;
		uint16_t la, lb;
		const char *body;
		size_t blen;
		const char *why;
	} cases[] = {
		{0x3257584e, WMSG_SET, 0, 0, 1, 1, "a1", 2, "not a message of this version"},
		{WMSG_MAGIC, 0, 0, 0, 0, 0, "", 0, "unknown type 0"},
		{WMSG_MAGIC, 12, 0, 0, 0, 0, "", 0, "unknown type 12"},
		{WMSG_MAGIC, WMSG_READ, 0, 0, 1, 1, "a1", 2, "read: no such string in it (1 bytes)"},
		{WMSG_MAGIC, WMSG_PROBE, 0, 0, 0, 0, "", 0, "a knob name that is not one: 0 bytes"},
		{WMSG_MAGIC, WMSG_NGINX, 0, 0, 0, 0, "", 0, "nginx: op 0 is none of its ops"},
		{WMSG_MAGIC, WMSG_RELOAD, 0, 0, 1, 0, "a", 1, "reload: no such string in it (1 bytes)"},
		{WMSG_MAGIC, WMSG_SET, 2, 0, 1, 1, "a1", 2, "set: op 2 is none of its ops"},
		{WMSG_MAGIC, WMSG_SET, 0, -1, 1, 1, "a1", 2, "set: a result in a request"},
		{WMSG_MAGIC, WMSG_RESULT, 0, 1, 0, 0, "", 0, "a result that is neither 0 nor an errno"},
		{WMSG_MAGIC, WMSG_RESULT, 0, -5000, 0, 0, "", 0, "a result that is neither 0 nor an errno"},
		{WMSG_MAGIC, WMSG_SET, 0, 0, 1, 2, "a1", 2, "strings of 1 and 2 bytes in a message of 22"},
		{WMSG_MAGIC, WMSG_SET, 0, 0, 1, 1, "a1x", 3, "strings of 1 and 1 bytes in a message of 23"},
		{WMSG_MAGIC, WMSG_SET, 0, 0, 0, 1, "1", 1, "a knob name that is not one: 0 bytes"},
		{WMSG_MAGIC, WMSG_SET, 0, 0, 2, 1, "a\0" "1", 3, "a knob name that is not one: 2 bytes"},
		{WMSG_MAGIC, WMSG_SET, 0, 0, 1, 2, "a1\n", 3, "a value that is not one: 2 bytes"},
		{WMSG_MAGIC, WMSG_SET, 0, 0, 1, 2, "a1\xff", 3, "a value that is not one: 2 bytes"},
		{WMSG_MAGIC, WMSG_RESTORE, 0, 0, 1, 1, "ab", 2, "restore: no such string in it (1 bytes)"},
		{WMSG_MAGIC, WMSG_NGINX, 1, 0, 1, 0, "a", 1, "nginx: no such string in it (1 bytes)"},
		{WMSG_MAGIC, WMSG_OPEN_LOG, 0, 0, 3, 0, "x/y", 3, "a path that is not one: 3 bytes"},
		{WMSG_MAGIC, WMSG_RESULT, 0, 0, 2, 0, "\x01x", 2, "a text that is not one: 2 bytes"},
	};
	uint8_t buf[WMSG_MAX + 8];
	char err[128];
	struct wmsg m;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = dgram(buf, cases[i].magic, cases[i].type, cases[i].op, cases[i].result, cases[i].la,
				 cases[i].lb, cases[i].body, cases[i].blen);

		err[0] = '\0';
		assert_int_equal(wmsg_decode(buf, n, &m, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, cases[i].why));
	}
	/* Short, long, and a name past its limit. */
	assert_int_equal(wmsg_decode(buf, 19, &m, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "19 bytes: shorter than a message's 20");
	memset(buf + 20, 'a', WMSG_MAX - 20 + 1);
	assert_int_equal(wmsg_decode(buf, WMSG_MAX + 1, &m, err, sizeof(err)), -EBADMSG);
	dgram(buf, WMSG_MAGIC, WMSG_RESTORE, 0, 0, WMSG_NAME_MAX, 0, "", 0);
	assert_int_equal(wmsg_decode(buf, 20 + WMSG_NAME_MAX, &m, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "a knob name that is not one: 64 bytes, over its limit");
	assert_int_equal(wmsg_decode(NULL, 0, &m, err, sizeof(err)), -EBADMSG);
	assert_string_equal(wmsg_type_name(WMSG_OPEN_LOG), "open-log");
	assert_string_equal(wmsg_type_name(WMSG_PROBE), "probe");
	assert_string_equal(wmsg_type_name(WMSG_NICS), "nics");
	assert_string_equal(wmsg_type_name(WMSG_SYSCTL), "sysctl");
	assert_string_equal(wmsg_type_name((enum wmsg_type)12), "?");
	assert_string_equal(wmsg_type_name((enum wmsg_type)0), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_encode_refuses),
		cmocka_unit_test(test_decode_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
