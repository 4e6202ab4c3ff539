/* Unit tests for common/log.c: a message longer than a line is cut between UTF-8 characters, never inside one, and
 * no line carries a control byte or invalid UTF-8, whatever its caller put in it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"

static char got[2048];

static void sink(int prio, const char *const *fields, const char *msg)
{
	(void)prio;
	(void)fields;
	snprintf(got, sizeof(got), "%s", msg);
}

/* Whether S is well-formed UTF-8 (every sequence complete). */
static bool utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = *p < 0x80 ? 1 : *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc0 ? 2 : 0;

		if (!n)
			return false;
		for (size_t i = 1; i < n; i++)
			if ((p[i] & 0xc0) != 0x80)
				return false;
		p += n;
	}
	return true;
}

/* Issue 22: a refused body of 'é' (escaped text, valid UTF-8) reached the journal cut inside a character, at
 * whatever byte the 1023rd was; every offset of the cut is tried, with characters of 2, 3 and 4 bytes. */
static void test_cut_between_characters(void **state)
{
	static const char *const chars[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
	char text[1400];

	(void)state;
	log_set_sink(sink);
	log_set_level(LOG_INFO);
	for (size_t c = 0; c < 3; c++) {
		for (size_t pad = 0; pad < 4; pad++) {
			size_t n = strlen(chars[c]), off = 0;

			memset(text, 'x', pad);
			off = pad;
			while (off + n < sizeof(text) - 1) {
				memcpy(text + off, chars[c], n);
				off += n;
			}
			text[off] = '\0';
			log_msg(LOG_INFO, "%s", text);
			assert_true(utf8(got));
			/* Only the partial character goes: at most n - 1 bytes short of the line. */
			assert_true(strlen(got) >= 1023 - (n - 1));
			assert_memory_equal(got, text, strlen(got));
		}
	}
	/* A short message, and one cut within ASCII, are as they were. */
	log_msg(LOG_INFO, "%s", "plain \xc3\xa9");
	assert_string_equal(got, "plain \xc3\xa9");
	memset(text, 'a', 1200);
	text[1200] = '\0';
	log_msg(LOG_INFO, "%s", text);
	assert_int_equal(strlen(got), 1023);
	log_set_sink(NULL);
}

/* Issue 22: logs carry no raw client bytes. A caller that put a client's bytes in a message unescaped (an access
 * log line, a request, nginx -T) still emits them escaped as for a terminal; escaped text stays as it is. */
static void test_escaped(void **state)
{
	char text[1400];

	(void)state;
	log_set_sink(sink);
	log_set_level(LOG_INFO);
	log_msg(LOG_WARNING, "refused %s from %s", "GET /\x1b[2J\r\nX: \xff\x01 caf\xc3\xa9 \xc2\x9b", "127.0.0.1");
	assert_string_equal(got, "refused GET /\\x1b[2J\\r\\nX: \\xff\\x01 caf\xc3\xa9 \\xc2\\x9b from 127.0.0.1");
	log_msg(LOG_INFO, "%s", "already \\x1b escaped");
	assert_string_equal(got, "already \\x1b escaped");
	/* A long one: cut at the line, escaped within it, never inside an escape. */
	memset(text, '\x1b', 1300);
	text[1300] = '\0';
	log_msg(LOG_INFO, "%s", text);
	assert_true(strlen(got) <= 1023);
	assert_int_equal(strlen(got) % 4, 0);
	assert_memory_equal(got, "\\x1b\\x1b", 8);
	assert_true(utf8(got));
	log_set_sink(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_between_characters),
		cmocka_unit_test(test_escaped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
