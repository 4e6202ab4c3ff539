/* Unit tests for agent/api/http_frame.c (a request head's syntax and framing) and common/termsafe.c (what may reach a
 * terminal), on the requests of issue 15's report and the escapes they should come out as. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/http_frame.h"
#include "termsafe.h"

static int check(const char *head, char *detail, size_t n)
{
	detail[0] = '\0';
	return http_head_check(head, strlen(head), detail, n);
}

static void test_good(void **state)
{
	char d[128];

	(void)state;
	assert_int_equal(check("GET /v1/status HTTP/1.1\r\nHost: localhost\r\n\r\n", d, sizeof(d)), 0);
	assert_int_equal(check("GET /v1/status HTTP/1.0\r\n\r\n", d, sizeof(d)), 0);
	assert_int_equal(check("\r\nPOST /v1/pause HTTP/1.1\nHost: x\nContent-Length: 2\n\n{}", d, sizeof(d)), 0);
	assert_int_equal(check("POST /v1/pause HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\n\r\n", d,
			       sizeof(d)), 0);
	assert_int_equal(check("GET / HTTP/1.1\r\nHost: x\r\nOrigin: http://x\r\nUser-Agent: caf\xc3\xa9\r\n\r\n", d,
			       sizeof(d)), 0);
}

/* A header's value in a complete head: the first of its name (any case), without the blanks around it. */
static void test_head_value(void **state)
{
	static const char head[] = "\r\nGET /v1/status HTTP/1.1\r\nHost: x\r\nauthorization:   Bearer abc  \r\n"
				   "Authorization: Bearer second\r\nX-Empty:\r\n\r\nAuthorization: in the body";
	char v[32];

	(void)state;
	assert_int_equal(http_head_value(head, strlen(head), "Authorization", v, sizeof(v)), 0);
	assert_string_equal(v, "Bearer abc");
	assert_int_equal(http_head_value(head, strlen(head), "host", v, sizeof(v)), 0);
	assert_string_equal(v, "x");
	assert_int_equal(http_head_value(head, strlen(head), "X-Empty", v, sizeof(v)), 0);
	assert_string_equal(v, "");
	assert_int_equal(http_head_value(head, strlen(head), "Origin", v, sizeof(v)), -ENOENT);
	assert_int_equal(http_head_value(head, strlen(head), "Authorization", v, 10), -ENOSPC);
	/* The request line is no header, and nothing after the head's end is. */
	assert_int_equal(http_head_value(head, strlen(head), "GET /v1/status HTTP/1.1\r\nHost", v, sizeof(v)),
			 -ENOENT);
	assert_int_equal(http_head_value("GET / HTTP/1.1\r\n\r\nHost: y\r\n", 23, "Host", v, sizeof(v)), -ENOENT);
	assert_int_equal(http_head_value("GET / HT", 8, "Host", v, sizeof(v)), -ENOENT);
}

static void test_incomplete(void **state)
{
	char d[128], big[HTTP_HEAD_MAX + 16];

	(void)state;
	assert_int_equal(check("", d, sizeof(d)), -EAGAIN);
	assert_int_equal(check("G", d, sizeof(d)), -EAGAIN);
	assert_int_equal(check("GET /v1/sta", d, sizeof(d)), -EAGAIN);
	assert_int_equal(check("GET /v1/status HTTP/1.1\r\nHost: x\r\n", d, sizeof(d)), -EAGAIN);
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /", 5);
	assert_int_equal(http_head_check(big, sizeof(big), d, sizeof(d)), -EMSGSIZE);
	assert_string_equal(d, "the request line and headers are over 8192 bytes");
}

static void refused(const char *head, const char *why)
{
	char d[128], want[160];

	snprintf(want, sizeof(want), "malformed request: %s", why);
	assert_int_equal(check(head, d, sizeof(d)), -EBADMSG);
	assert_string_equal(d, want);
}

static void test_framing(void **state)
{
	(void)state;
	refused("POST /v1/pause HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 30\r\n\r\n",
		"more than one Content-Length");
	refused("POST /v1/pause HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n",
		"more than one Content-Length");
	refused("POST /v1/pause HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n",
		"both Content-Length and Transfer-Encoding");
	refused("POST /v1/pause HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"a Transfer-Encoding other than chunked");
	refused("POST /v1/pause HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
		"a Content-Length that is not a number");
	refused("GET /v1/status HTTP/1.1\r\n\r\n", "no Host (HTTP/1.1 needs one)");
	refused("GET /v1/status HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "more than one Host");
	refused("GET /v1/status HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", "more than one Host");
	refused("POST /v1/pause HTTP/1.1\r\nHost: x\r\nOrigin: http://x\r\nOrigin: http://evil\r\n\r\n",
		"more than one Origin");
}

static void test_syntax(void **state)
{
	(void)state;
	/* Garbage is refused from its first bytes, without waiting for a line end. */
	refused("\x16\x03\x01\x02", "the request line is not METHOD TARGET HTTP/1.x");
	refused("hello world\r\n\r\n", "the request line is not METHOD TARGET HTTP/1.x");
	refused("GET /v1/status HTTP/2.0\r\n\r\n", "the request line is not METHOD TARGET HTTP/1.x");
	refused("GET  /v1/status HTTP/1.1\r\n\r\n", "the request line is not METHOD TARGET HTTP/1.x");
	refused("GET /v1/status\rHTTP/1.1\r\n\r\n", "a bare CR in the request line");
	refused("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", "a header folded over two lines");
	refused("GET / HTTP/1.1\r\nHost x\r\n\r\n", "a header line is not NAME: VALUE");
	refused("GET / HTTP/1.1\r\nHost : x\r\n\r\n", "a header line is not NAME: VALUE");
	refused("GET / HTTP/1.1\r\nHost: x\x1b[2J\r\n\r\n", "a control character in a header");
	refused("GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n", "a bare CR in a header");
}

static void test_framing_counts(void **state)
{
	struct http_framing f = {0};
	char d[128];

	(void)state;
	http_framing_add(&f, "host", 4, "x", 1);
	http_framing_add(&f, "Content-Length", 14, " 12 ", 4);
	assert_int_equal(http_framing_check(&f, true, d, sizeof(d)), 0);
	http_framing_add(&f, "Transfer-Encoding", 17, "chunked", 7);
	assert_int_equal(http_framing_check(&f, true, d, sizeof(d)), -EBADMSG);
	assert_string_equal(d, "malformed request: both Content-Length and Transfer-Encoding");
	f = (struct http_framing){0};
	assert_int_equal(http_framing_check(&f, false, d, sizeof(d)), 0);
}

static void escaped(const char *in, size_t len, const char *want)
{
	char out[128];

	assert_int_equal(termsafe_escaped_size(in, len), strlen(want) + 1);
	assert_string_equal(termsafe_escape(in, len, out, sizeof(out)), want);
	assert_int_equal(termsafe_clean(in, len), strcmp(in, want) == 0 && strlen(in) == len);
}

static void test_termsafe(void **state)
{
	char small[8];

	(void)state;
	escaped("plain text, caf\xc3\xa9 \xe2\x82\xac", 21, "plain text, caf\xc3\xa9 \xe2\x82\xac");
	escaped("\x1b]0;owned\x07\x1b[2Jx", 15, "\\x1b]0;owned\\x07\\x1b[2Jx");
	escaped("a\r\nb\tc\x7f", 7, "a\\r\\nb\\tc\\x7f");
	escaped("\xc2\x9b" "31m", 5, "\\xc2\\x9b31m");      /* C1 CSI */
	escaped("\xff\xc3(", 3, "\\xff\\xc3(");            /* not UTF-8 */
	escaped("a\0b", 3, "a\\x00b");
	/* Cut at the buffer, never inside an escape. */
	assert_string_equal(termsafe_escape("abc\x1b" "def", 7, small, sizeof(small)), "abc\\x1b");
	assert_string_equal(termsafe_escape("abc\x1b" "def", 7, small, 6), "abc");
	assert_string_equal(termsafe_escape("abcdefghij", 10, small, sizeof(small)), "abcdefg");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_head_value),
		cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_framing_counts),
		cmocka_unit_test(test_termsafe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
