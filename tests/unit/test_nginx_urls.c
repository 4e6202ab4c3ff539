/*
 * Unit tests for nginx_urls: the synthetic client's URLs from `nginx -T` dumps of a real nginx
 * (tests/fixtures/nginx-T, captured by its capture.sh): the first address served over plain HTTP, and beside it
 * a location nginx proxies in the server a request without a Host of its own reaches.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "act/nginx_conf.h"
#include "act/nginx_urls.h"

static void parse_fixture(const char *name, struct nginx_conf *c)
{
	const char *srcdir = getenv("srcdir");
	char path[512], err[256];
	FILE *f;
	long n;
	char *buf;

	snprintf(path, sizeof(path), "%s/tests/fixtures/nginx-T/%s", srcdir ? srcdir : ".", name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	if (nginx_conf_parse(buf, (size_t)n, c, err, sizeof(err)) != 0)
		fail_msg("%s: %s", name, err);
	free(buf);
}

static void test_fixtures(void **state)
{
	static const struct {
		const char *fixture, *stub, *want;
	} cases[] = {
		/* The agent's status server (stub_status alone) and a proxy_protocol listen are not what clients ask;
		 * of a.example's locations the regex and the named one have no URL of their own, "^~ /api v1/" has
		 * (encoded); b.example's /b/ is not reached without its name. */
		{"proxy.txt", "http://127.0.0.1:18094/nginx_status",
		 "http://127.0.0.1:18090/ http://127.0.0.1:18090/api%20v1/"},
		{"proxy.txt", "", "http://127.0.0.1:18090/ http://127.0.0.1:18090/api%20v1/"},
		/* blog.example serves 18082 first and proxies /api/; shop.example proxies "/" on 18081, after it. */
		{"setup-multi.txt", "", "http://127.0.0.1:18082/ http://127.0.0.1:18082/api/"},
		/* stub_status's host and port, where nginx serves, stay the first URL, as written */
		{"setup-multi.txt", "http://127.0.0.1:18081/nginx_status", "http://127.0.0.1:18081/ http://127.0.0.1:18082/api/"},
		/* Debian's default site: listen 80 and [::]:80, nothing proxied */
		{"debian.txt", "http://127.0.0.1/nginx_status", "http://127.0.0.1/"},
		{"debian.txt", "", "http://127.0.0.1:80/"},
		{"debian.txt", "http://127.0.0.1:8080/nginx_status", "http://127.0.0.1:80/"},
		/* the first listen of the first server nginx reads: conf.d/long.conf's, included above 18081's */
		{"multi.txt", "", "http://127.0.0.1:18086/"},
		{"multi.txt", "http://[::1]:18081/nginx_status", "http://[::1]:18081/"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nginx_conf c;
		char out[1024], err[256];
		int r;

		parse_fixture(cases[i].fixture, &c);
		r = nginx_urls_client(&c, cases[i].stub, out, sizeof(out), err, sizeof(err));
		print_message("%s (%s): %s\n", cases[i].fixture, cases[i].stub, out);
		if (r != 0)
			fail_msg("%s: %d %s", cases[i].fixture, r, err);
		assert_string_equal(out, cases[i].want);
		/* a buffer one byte short is an error, never half a list */
		assert_int_equal(nginx_urls_client(&c, cases[i].stub, out, strlen(cases[i].want), err, sizeof(err)),
				 -ENAMETOOLONG);
		assert_string_equal(out, "");
		nginx_conf_free(&c);
	}
}

/* No listen a plain HTTP client can ask: nothing. */
static void test_none(void **state)
{
	static const char dump[] = "# configuration file /x/nginx.conf:\n"
				   "events {}\nhttp { server { listen 127.0.0.1:443 ssl; location / { proxy_pass http://b; } }\n"
				   "server { listen unix:/run/n.sock; }\n"
				   "server { listen 127.0.0.1:81; location = /st { stub_status; } } }\n";
	struct nginx_conf c;
	char out[256] = "x", err[256];

	(void)state;
	assert_int_equal(nginx_conf_parse(dump, sizeof(dump) - 1, &c, err, sizeof(err)), 0);
	assert_int_equal(nginx_urls_client(&c, "", out, sizeof(out), err, sizeof(err)), -ENOENT);
	assert_string_equal(out, "");
	nginx_conf_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
