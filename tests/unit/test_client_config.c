/* Unit tests for common/config.c's [client] section: defaults, every key, the derived URL, and bad values with
 * FILE:LINE. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

static char path[64];

static void write_conf(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	int fd;

	(void)state;
	strcpy(path, "/tmp/ngxat-client-conf-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void test_defaults(void **state)
{
	struct config c;
	char err[256], url[CONFIG_PATH_MAX];

	(void)state;
	assert_int_equal(config_load("/nonexistent/agent.conf", false, &c, err, sizeof(err)), 0);
	assert_true(c.client_enabled);
	assert_string_equal(c.client_url, "");
	assert_int_equal(c.client_requests, 4);
	assert_int_equal(c.client_timeout_ms, 500);
	/* The default stub_status_url is http://127.0.0.1/nginx_status: its host, path /. */
	assert_int_equal(config_client_url(&c, url, sizeof(url)), 0);
	assert_string_equal(url, "http://127.0.0.1/");
}

static void test_every_key(void **state)
{
	struct config c;
	char err[256], url[CONFIG_PATH_MAX];

	(void)state;
	write_conf("[client]\nenabled = no\nurl = http://[::1]:8080/health?x=1\nrequests_per_tick = 7\n"
		   "timeout = 250ms\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_false(c.client_enabled);
	assert_string_equal(c.client_url, "http://[::1]:8080/health?x=1");
	assert_int_equal(c.client_requests, 7);
	assert_int_equal(c.client_timeout_ms, 250);
	assert_int_equal(config_client_url(&c, url, sizeof(url)), 0);
	assert_string_equal(url, "http://[::1]:8080/health?x=1");
}

/* Without [client] url: stub_status_url's scheme, host and port, path "/". */
static void test_derived_url(void **state)
{
	static const struct {
		const char *stub, *want;
		int r;
	} cases[] = {
		{"http://127.0.0.1:8080/nginx_status", "http://127.0.0.1:8080/", 0},
		{"http://[::1]:81/st?x", "http://[::1]:81/", 0},
		{"http://localhost", "http://localhost/", 0},
		{"http://10.0.0.1:9000?q", "http://10.0.0.1:9000/", 0},
		{"https://example.test/st", "https://example.test/", 0}, /* the probe says it cannot do https */
		{"", "", -ENOENT},
	};
	struct config c;
	char url[CONFIG_PATH_MAX], tiny[12];

	(void)state;
	config_default(&c);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(c.stub_status_url, sizeof(c.stub_status_url), "%s", cases[i].stub);
		url[0] = '\0';
		assert_int_equal(config_client_url(&c, url, sizeof(url)), cases[i].r);
		if (cases[i].r == 0)
			assert_string_equal(url, cases[i].want);
	}
	snprintf(c.stub_status_url, sizeof(c.stub_status_url), "http://127.0.0.1:8080/nginx_status");
	assert_int_equal(config_client_url(&c, tiny, sizeof(tiny)), -ENAMETOOLONG);
}

static const struct {
	const char *text;
	const char *expect; /* substring of the error, which always starts with PATH:LINE */
	int line;
} bad[] = {
	{"[client]\nenabled = sometimes\n", "enabled: 'sometimes' is not yes or no", 2},
	{"[client]\nurl = https://127.0.0.1/\n", "url: must be an http:// URL", 2},
	{"[client]\n\nurl = 127.0.0.1:80\n", "url: must be an http:// URL", 3},
	{"[client]\nrequests_per_tick = 0\n", "requests_per_tick: '0' is not a whole number from 1 to 32", 2},
	{"[client]\nrequests_per_tick = 33\n", "from 1 to 32", 2},
	{"[client]\nrequests_per_tick = four\n", "from 1 to 32", 2},
	{"[client]\ntimeout = 5s\n", "timeout: '5s' is not a duration between 10ms and 4000ms", 2},
	{"[client]\ntimeout = 1ms\n", "between 10ms and 4000ms", 2},
	{"[client]\ntimeout = soon\n", "not a duration", 2},
	{"[client]\nrate = 5\n", "unknown key 'rate' in section [client]", 2},
};

static void test_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct config c;
		char err[512], prefix[128];

		write_conf(bad[i].text);
		assert_int_equal(config_load(path, true, &c, err, sizeof(err)), -EINVAL);
		snprintf(prefix, sizeof(prefix), "%s:%d: ", path, bad[i].line);
		if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, bad[i].expect))
			fail_msg("case %zu: got '%s', want prefix '%s' and '%s'", i, err, prefix, bad[i].expect);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test_setup_teardown(test_every_key, setup, teardown),
		cmocka_unit_test(test_derived_url),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
