/*
 * Tests for nginx_conf on `nginx -T` dumps captured from a real nginx 1.22 (tests/fixtures/nginx-T/capture.sh):
 * the split into files (including lines that only look like dump headers), directives found in their context
 * through includes, which files are included where, the listen directives and which of them carry backlog=, and
 * every backlog= edit checked byte for byte. Then small synthetic dumps for what Debian's nginx-light cannot load
 * (stream, mail) and for hostile input: truncation at many offsets, garbage, unbalanced braces, include loops.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "act/nginx_conf.h"

#define MULTI "/tmp/ngxat-fixture/multi/"
#define DEBIAN "/tmp/ngxat-fixture/debian/"
#define NOTINC "/tmp/ngxat-fixture/notincluded/"

static char *load(const char *name, size_t *len)
{
	const char *srcdir = getenv("srcdir");
	char path[4096];
	FILE *f;
	char *buf;
	long n;

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
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void parse_fixture(const char *name, struct nginx_conf *c)
{
	char err[256];
	size_t len;
	char *dump = load(name, &len);
	int r = nginx_conf_parse(dump, len, c, err, sizeof(err));

	if (r != 0)
		fail_msg("%s: %s", name, err);
	free(dump);
}

/* The file of C named PATH (which must be there). */
static const struct nginx_conf_file *file(const struct nginx_conf *c, const char *path)
{
	int i = nginx_conf_file_index(c, path);

	if (i < 0)
		fail_msg("%s not in the dump", path);
	return &c->files[i];
}

static bool contains(const struct nginx_conf_file *f, const char *s)
{
	return memmem(f->text, f->len, s, strlen(s)) != NULL;
}

/* ---- the split -------------------------------------------------------------------------------------------- */

static void test_split_multi(void **state)
{
	static const char *const paths[] = {
		MULTI "nginx.conf", MULTI "ngx-autotune/main.conf", MULTI "ngx-autotune/events.conf",
		MULTI "ngx-autotune/http.conf", MULTI "mime.types", MULTI "map-entries.conf", MULTI "conf.d/long.conf",
		MULTI "conf.d/servers.conf",
	};
	struct nginx_conf c;
	const struct nginx_conf_file *f;

	(void)state;
	parse_fixture("multi.txt", &c);
	assert_int_equal(c.nfiles, 8);
	for (size_t i = 0; i < c.nfiles; i++)
		assert_string_equal(c.files[i].path, paths[i]);
	assert_string_equal(c.prefix, MULTI);
	/* The comment and the quoted line that look like headers stay inside nginx.conf. */
	f = &c.files[0];
	assert_true(contains(f, "\n# configuration file " MULTI "conf.d/servers.conf:\ninclude ngx-autotune/main.conf;"));
	assert_true(contains(f, "\n# configuration file " MULTI "conf.d/long.conf:\nstill the same string';"));
	assert_int_equal(f->text[f->len - 1], '\n');
	assert_memory_equal(f->text + f->len - 5, "\t}\n}\n", 5);
	/* A file without a final newline keeps none; the newline nginx adds is not part of it. */
	f = file(&c, MULTI "ngx-autotune/http.conf");
	assert_int_equal(f->len, strlen("keepalive_requests 500;"));
	assert_memory_equal(f->text, "keepalive_requests 500;", f->len);
	f = file(&c, MULTI "ngx-autotune/events.conf");
	assert_int_equal(f->len, strlen("# Managed by ngx-autotune.\nworker_connections 2048;\n"));
	f = file(&c, MULTI "conf.d/long.conf");
	assert_true(f->len > 15000);
	assert_null(memchr(f->text, '\n', f->len - 1));
	f = file(&c, MULTI "conf.d/servers.conf");
	assert_memory_equal(f->text + f->len - strlen("\treturn 200 \"e\\n\";\n}\n"), "\treturn 200 \"e\\n\";\n}\n",
			    strlen("\treturn 200 \"e\\n\";\n}\n"));
	nginx_conf_free(&c);
	assert_null(c.buf);
	assert_int_equal(c.nfiles, 0);
	nginx_conf_free(&c);
}

/* The agent's path: the dump nginx printed is parsed where it lies (the files are pieces of it), one copy of it in
 * memory, not two; the same split as from a copy; the buffer is the conf's to free, also when it does not parse. */
static void test_parse_owned(void **state)
{
	struct nginx_conf c, copy;
	char err[256];
	size_t len;
	char *dump = load("multi.txt", &len), *bad;

	(void)state;
	assert_int_equal(nginx_conf_parse(dump, len, &copy, err, sizeof(err)), 0);
	assert_ptr_not_equal(copy.buf, dump);
	assert_int_equal(nginx_conf_parse_owned(dump, len, &c, err, sizeof(err)), 0);
	assert_ptr_equal(c.buf, dump);
	assert_int_equal(c.nfiles, copy.nfiles);
	for (size_t i = 0; i < c.nfiles; i++) {
		assert_true(c.files[i].text >= dump && c.files[i].text + c.files[i].len <= dump + len);
		assert_string_equal(c.files[i].path, copy.files[i].path);
		assert_int_equal(c.files[i].len, copy.files[i].len);
		assert_memory_equal(c.files[i].text, copy.files[i].text, c.files[i].len);
	}
	nginx_conf_free(&copy);
	nginx_conf_free(&c); /* frees DUMP: a leak or a double free shows in the ASan build */
	bad = strdup("not a dump\n");
	assert_non_null(bad);
	assert_int_equal(nginx_conf_parse_owned(bad, strlen(bad), &c, err, sizeof(err)), -EINVAL);
	assert_null(c.buf);
	assert_int_equal(nginx_conf_parse_owned(NULL, 0, &c, err, sizeof(err)), -EINVAL);
}

static void test_split_debian(void **state)
{
	struct nginx_conf c;

	(void)state;
	parse_fixture("debian.txt", &c);
	assert_int_equal(c.nfiles, 6);
	assert_string_equal(c.files[5].path, DEBIAN "sites-enabled/default");
	assert_int_equal(file(&c, DEBIAN "ngx-autotune/main.conf")->len, 0);
	assert_int_equal(file(&c, DEBIAN "ngx-autotune/http.conf")->len, 0);
	assert_true(contains(file(&c, DEBIAN "sites-enabled/default"), "\tlisten [::]:80 default_server;\n"));
	assert_int_equal(nginx_conf_file_index(&c, DEBIAN "sites-available/default"), -ENOENT);
	nginx_conf_free(&c);
}

/* ---- directives in context -------------------------------------------------------------------------------- */

struct find_case {
	const char *fixture, *context, *name;
	int rc;
	const char *path;
	unsigned line;
	size_t nargs;
	const char *arg0, *arg1;
};

static const struct find_case find_cases[] = {
	{ "multi.txt", "main", "worker_processes", 0, MULTI "nginx.conf", 7, 1, "2", NULL },
	{ "multi.txt", "main", "worker_rlimit_nofile", 0, MULTI "ngx-autotune/main.conf", 1, 1, "4096", NULL },
	{ "multi.txt", "events", "worker_connections", 0, MULTI "ngx-autotune/events.conf", 2, 1, "2048", NULL },
	{ "multi.txt", "events", "multi_accept", 0, MULTI "nginx.conf", 10, 1, "on", NULL },
	{ "multi.txt", "http", "keepalive_requests", 0, MULTI "ngx-autotune/http.conf", 1, 1, "500", NULL },
	{ "multi.txt", "http", "default_type", 0, MULTI "nginx.conf", 15, 1, "application/octet-stream", NULL },
	{ "multi.txt", "http/map", "default", 0, MULTI "nginx.conf", 21, 1, "a;b}", NULL },
	{ "multi.txt", "http/map", "~^x\"{", 0, MULTI "nginx.conf", 22, 1, "1", NULL },
	{ "multi.txt", "http/map", "~^y", 0, MULTI "map-entries.conf", 1, 1, "2", NULL },
	{ "multi.txt", "http/server", "server_name", 0, MULTI "conf.d/long.conf", 1, 1, "long.example", NULL },
	{ "multi.txt", "http", "sendfile", -ENOENT, NULL, 0, 0, NULL, NULL },
	{ "multi.txt", "main", "worker_connections", -ENOENT, NULL, 0, 0, NULL, NULL },
	{ "multi.txt", "main", "user", -ENOENT, NULL, 0, 0, NULL, NULL },
	{ "debian.txt", "main", "worker_processes", 0, DEBIAN "nginx.conf", 2, 1, "auto", NULL },
	{ "debian.txt", "main", "user", 0, DEBIAN "nginx.conf", 1, 1, "www-data", NULL },
	{ "debian.txt", "events", "worker_connections", 0, DEBIAN "nginx.conf", 10, 1, "768", NULL },
	{ "debian.txt", "events", "multi_accept", -ENOENT, NULL, 0, 0, NULL, NULL },
	{ "debian.txt", "http", "keepalive_requests", -ENOENT, NULL, 0, 0, NULL, NULL },
	{ "debian.txt", "http", "sendfile", 0, DEBIAN "nginx.conf", 21, 1, "on", NULL },
	{ "debian.txt", "http/types", "text/html", 0, DEBIAN "mime.types", 3, 3, "html", "htm" },
	{ "notincluded.txt", "http", "keepalive_requests", 0, NOTINC "nginx.conf", 6, 1, "100", NULL },
};

static void test_find(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(find_cases) / sizeof(find_cases[0]); i++) {
		const struct find_case *t = &find_cases[i];
		struct nginx_conf c;
		struct nginx_conf_directive d;
		char err[256] = "";
		int r;

		parse_fixture(t->fixture, &c);
		r = nginx_conf_find(&c, t->context, t->name, &d, err, sizeof(err));
		if (r != t->rc)
			fail_msg("case %zu (%s %s): %d, want %d (%s)", i, t->context, t->name, r, t->rc, err);
		if (r == 0) {
			assert_string_equal(c.files[d.file].path, t->path);
			if (d.line != t->line)
				fail_msg("case %zu: line %u, want %u", i, d.line, t->line);
			assert_int_equal(d.nargs, t->nargs);
			assert_string_equal(d.args[0], t->arg0);
			if (t->arg1)
				assert_string_equal(d.args[1], t->arg1);
		}
		nginx_conf_free(&c);
	}
}

static void test_find_long_argument(void **state)
{
	struct nginx_conf c;
	struct nginx_conf_directive d;
	char err[256] = "";

	(void)state;
	parse_fixture("multi.txt", &c);
	/* The log_format string spans three lines and holds a header look-alike; it is one word. */
	assert_int_equal(nginx_conf_find(&c, "http", "log_format", &d, err, sizeof(err)), 0);
	assert_int_equal(d.nargs, 2);
	assert_string_equal(d.args[0], "braces");
	assert_string_equal(d.args[1], "$remote_addr \"{\" $request ; } # not a comment\n# configuration file " MULTI
			    "conf.d/long.conf:\nstill the same string");
	/* The first return of a location is long.conf's 3000-byte word: refused by value, not truncated. */
	assert_int_equal(nginx_conf_find(&c, "http/server/location", "return", &d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "longer than"));
	nginx_conf_free(&c);
}

struct included_case {
	const char *fixture, *path;
	int rc;
	const char *context;
};

static const struct included_case included_cases[] = {
	{ "multi.txt", MULTI "ngx-autotune/main.conf", 0, "main" },
	{ "multi.txt", MULTI "ngx-autotune/events.conf", 0, "events" },
	{ "multi.txt", MULTI "ngx-autotune/http.conf", 0, "http" },
	{ "multi.txt", MULTI "map-entries.conf", 0, "http/map" },
	{ "multi.txt", MULTI "conf.d/servers.conf", 0, "http" },
	{ "multi.txt", MULTI "nginx.conf", -ENOENT, NULL },
	{ "multi.txt", "/etc/nginx/ngx-autotune/http.conf", -ENOENT, NULL },
	{ "debian.txt", DEBIAN "ngx-autotune/main.conf", 0, "main" },
	{ "debian.txt", DEBIAN "ngx-autotune/events.conf", 0, "events" },
	{ "debian.txt", DEBIAN "ngx-autotune/http.conf", 0, "http" },
	{ "debian.txt", DEBIAN "sites-enabled/default", 0, "http" },
	{ "notincluded.txt", NOTINC "ngx-autotune/http.conf", 0, "main" },
	{ "notincluded.txt", NOTINC "ngx-autotune/events.conf", -ENOENT, NULL },
};

static void test_included(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(included_cases) / sizeof(included_cases[0]); i++) {
		const struct included_case *t = &included_cases[i];
		struct nginx_conf c;
		char ctx[NGINX_CONF_CONTEXT_MAX] = "", err[256] = "";
		int r;

		parse_fixture(t->fixture, &c);
		r = nginx_conf_included(&c, t->path, ctx, sizeof(ctx), err, sizeof(err));
		if (r != t->rc)
			fail_msg("case %zu (%s): %d, want %d (%s)", i, t->path, r, t->rc, err);
		if (r == 0)
			assert_string_equal(ctx, t->context);
		nginx_conf_free(&c);
	}
}

/* ---- listen directives ------------------------------------------------------------------------------------ */

struct listen_want {
	const char *path;
	unsigned line;
	int family;
	const char *addr;
	uint16_t port;
	bool wildcard, options, has_backlog;
	int64_t backlog;
	bool target;
};

static const struct listen_want multi_listens[] = {
	{ MULTI "conf.d/long.conf", 1, AF_INET, "127.0.0.1", 18086, false, false, false, 0, true },
	/* Shares 127.0.0.1:18081 with nginx.conf's default server, which has the options. */
	{ MULTI "conf.d/servers.conf", 4, AF_INET, "127.0.0.1", 18081, false, false, false, 0, false },
	{ MULTI "conf.d/servers.conf", 9, AF_INET, "0.0.0.0", 18082, true, false, false, 0, true },
	/* Served by the wildcard socket of *:18082: giving it backlog= would bind it on its own. */
	{ MULTI "conf.d/servers.conf", 10, AF_INET, "127.0.0.1", 18082, false, false, false, 0, false },
	{ MULTI "conf.d/servers.conf", 11, AF_INET6, "::1", 18083, false, true, false, 0, true },
	{ MULTI "conf.d/servers.conf", 16, AF_INET, "127.0.0.1", 18084, false, false, false, 0, true },
	{ MULTI "conf.d/servers.conf", 16, AF_INET, "127.0.0.1", 18085, false, true, true, 64, true },
	{ MULTI "nginx.conf", 27, AF_INET, "127.0.0.1", 18081, false, true, true, 511, true },
	{ MULTI "nginx.conf", 28, AF_INET6, "::1", 18081, false, false, false, 0, true },
	{ MULTI "nginx.conf", 29, AF_UNIX, "unix:" MULTI "nginx.sock", 0, false, false, false, 0, false },
};

static const struct listen_want debian_listens[] = {
	{ DEBIAN "sites-enabled/default", 22, AF_INET, "0.0.0.0", 80, true, false, false, 0, true },
	{ DEBIAN "sites-enabled/default", 23, AF_INET6, "::", 80, true, false, false, 0, true },
};

static void check_listens(const char *fixture, const struct listen_want *want, size_t nwant)
{
	struct nginx_conf c;
	struct nginx_listen *l;
	size_t n;
	char err[256] = "";

	parse_fixture(fixture, &c);
	if (nginx_conf_listens(&c, &l, &n, err, sizeof(err)) != 0)
		fail_msg("%s: %s", fixture, err);
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++) {
		const struct listen_want *w = &want[i];

		assert_string_equal(c.files[l[i].file].path, w->path);
		if (l[i].line != w->line)
			fail_msg("%s listen %zu: line %u, want %u", fixture, i, l[i].line, w->line);
		assert_int_equal(l[i].module, NGINX_LISTEN_HTTP);
		assert_int_equal(l[i].family, w->family);
		assert_string_equal(l[i].addr, w->addr);
		assert_int_equal(l[i].port, w->port);
		assert_int_equal(l[i].wildcard, w->wildcard);
		assert_int_equal(l[i].options, w->options);
		assert_int_equal(l[i].has_backlog, w->has_backlog);
		if (w->has_backlog)
			assert_int_equal(l[i].backlog, w->backlog);
		if (l[i].target != w->target)
			fail_msg("%s listen %zu (%s:%u): target %d, want %d", fixture, i, l[i].addr, l[i].port,
				 l[i].target, w->target);
		assert_false(l[i].udp);
		assert_memory_equal(c.files[l[i].file].text + l[i].start, "listen", 6);
	}
	free(l);
	nginx_conf_free(&c);
}

static void test_listens(void **state)
{
	(void)state;
	check_listens("multi.txt", multi_listens, sizeof(multi_listens) / sizeof(multi_listens[0]));
	check_listens("debian.txt", debian_listens, sizeof(debian_listens) / sizeof(debian_listens[0]));
}

/* TEXT with each FROM[i] (which must occur exactly once) replaced by TO[i]. */
static char *replaced(const char *text, size_t len, const char *const *from, const char *const *to, size_t n)
{
	char *cur = strndup(text, len);

	assert_non_null(cur);
	for (size_t i = 0; i < n; i++) {
		char *at = strstr(cur, from[i]), *next;
		size_t fl = strlen(from[i]), tl = strlen(to[i]), cl = strlen(cur);

		if (!at || strstr(at + 1, from[i]))
			fail_msg("'%s' is not in the text exactly once", from[i]);
		next = malloc(cl - fl + tl + 1);
		assert_non_null(next);
		memcpy(next, cur, (size_t)(at - cur));
		memcpy(next + (at - cur), to[i], tl);
		strcpy(next + (at - cur) + tl, at + fl);
		free(cur);
		cur = next;
	}
	return cur;
}

/* Edit the NTARGETS target listens of PATH in FIXTURE to VALUE; compare with the file under the FROM -> TO edits. */
static void check_edit(const char *fixture, const char *path, int64_t value, size_t ntargets,
		       const char *const *from, const char *const *to, size_t n)
{
	struct nginx_conf c;
	struct nginx_listen *l;
	size_t nl, starts[16], ns = 0, outlen;
	char err[256] = "", *out, *want;
	const struct nginx_conf_file *f;

	parse_fixture(fixture, &c);
	assert_int_equal(nginx_conf_listens(&c, &l, &nl, err, sizeof(err)), 0);
	f = file(&c, path);
	for (size_t i = 0; i < nl; i++)
		if (l[i].target && &c.files[l[i].file] == f)
			starts[ns++] = l[i].start;
	assert_int_equal(ns, ntargets);
	if (nginx_conf_set_backlog(f->text, f->len, starts, ns, value, &out, &outlen, err, sizeof(err)) != 0)
		fail_msg("%s: %s", path, err);
	want = replaced(f->text, f->len, from, to, n);
	assert_int_equal(outlen, strlen(want));
	assert_string_equal(out, want);
	/* Only backlog= changed, and the edit is undone by stripping it on both sides. */
	assert_true(nginx_conf_same_but_backlog(f->text, f->len, out, outlen));
	free(want);
	free(out);
	free(l);
	nginx_conf_free(&c);
}

static void test_edit_servers(void **state)
{
	static const char *const from[] = {
		"\tlisten 18082;\n",
		"\tlisten [::1]:18083 ipv6only=on;\n",
		"\tlisten 127.0.0.1:18084; listen 127.0.0.1:18085\n\t\tbacklog=64;\n",
	};
	static const char *const to[] = {
		"\tlisten 18082 backlog=4096;\n",
		"\tlisten [::1]:18083 ipv6only=on backlog=4096;\n",
		"\tlisten 127.0.0.1:18084 backlog=4096; listen 127.0.0.1:18085\n\t\tbacklog=4096;\n",
	};

	(void)state;
	/* Four targets in three replacements: the third holds two directives on one line. */
	check_edit("multi.txt", MULTI "conf.d/servers.conf", 4096, 4, from, to, 3);
}

static void test_edit_nginx_conf(void **state)
{
	static const char *const from[] = {
		"listen 127.0.0.1:18081 default_server backlog=511 reuseport;",
		"listen [::1]:18081;",
	};
	static const char *const to[] = {
		"listen 127.0.0.1:18081 default_server backlog=16 reuseport;",
		"listen [::1]:18081 backlog=16;",
	};

	(void)state;
	check_edit("multi.txt", MULTI "nginx.conf", 16, 2, from, to, 2);
}

static void test_edit_long_line_and_debian(void **state)
{
	static const char *const lfrom[] = { "server { listen 127.0.0.1:18086; server_name long.example;" };
	static const char *const lto[] = { "server { listen 127.0.0.1:18086 backlog=65535; server_name long.example;" };
	static const char *const dfrom[] = { "\tlisten 80 default_server;\n", "\tlisten [::]:80 default_server;\n" };
	static const char *const dto[] = { "\tlisten 80 default_server backlog=4096;\n",
					   "\tlisten [::]:80 default_server backlog=4096;\n" };

	(void)state;
	check_edit("multi.txt", MULTI "conf.d/long.conf", 65535, 1, lfrom, lto, 1);
	check_edit("debian.txt", DEBIAN "sites-enabled/default", 4096, 2, dfrom, dto, 2);
}

static void test_edit_round_trip(void **state)
{
	struct nginx_conf c;
	struct nginx_listen *l;
	size_t nl, starts[4], ns = 0, len1, len2;
	char err[256] = "", *once, *back, *other;
	const struct nginx_conf_file *f;

	(void)state;
	parse_fixture("multi.txt", &c);
	assert_int_equal(nginx_conf_listens(&c, &l, &nl, err, sizeof(err)), 0);
	f = &c.files[0];
	for (size_t i = 0; i < nl; i++)
		if (l[i].target && l[i].file == 0)
			starts[ns++] = l[i].start;
	assert_int_equal(ns, 2);
	assert_int_equal(nginx_conf_set_backlog(f->text, f->len, starts, ns, 4096, &once, &len1, err, sizeof(err)), 0);
	/* The same directives start at the same offsets after an edit before them of equal length or none. */
	assert_int_equal(nginx_conf_set_backlog(once, len1, starts, 1, 511, &back, &len2, err, sizeof(err)), 0);
	assert_true(nginx_conf_same_but_backlog(f->text, f->len, back, len2));
	assert_non_null(strstr(back, "listen 127.0.0.1:18081 default_server backlog=511 reuseport;"));
	assert_non_null(strstr(back, "listen [::1]:18081 backlog=4096;"));
	/* A change of anything else is seen. */
	other = strdup(once);
	assert_non_null(other);
	*strstr(other, "a.example") = 'A';
	assert_false(nginx_conf_same_but_backlog(f->text, f->len, other, len1));
	assert_false(nginx_conf_same_but_backlog(f->text, f->len, once, len1 - 1));
	/* Offsets that are not a listen directive, and values nginx would refuse. */
	free(back);
	starts[0] = 0;
	assert_int_equal(nginx_conf_set_backlog(f->text, f->len, starts, 1, 10, &back, &len2, err, sizeof(err)),
			 -EINVAL);
	assert_null(back);
	assert_int_equal(nginx_conf_set_backlog(once, len1, starts, 0, 0, &back, &len2, err, sizeof(err)), -EINVAL);
	assert_int_equal(nginx_conf_set_backlog(once, len1, starts, 0, (int64_t)1 << 40, &back, &len2, err,
						sizeof(err)), -EINVAL);
	free(other);
	free(once);
	free(l);
	nginx_conf_free(&c);
}

/* ---- the agent's include files ---------------------------------------------------------------------------- */

struct directive_case {
	const char *text, *name, *args;
	int rc;
	const char *want;
};

static const struct directive_case directive_cases[] = {
	{ "", "worker_connections", "2048", 0, "worker_connections 2048;\n" },
	{ "# Managed by ngx-autotune.\nworker_connections 2048;\n", "worker_connections", "4096", 0,
	  "# Managed by ngx-autotune.\nworker_connections 4096;\n" },
	{ "keepalive_requests 500;", "multi_accept", "on", 0, "keepalive_requests 500;\nmulti_accept on;\n" },
	{ "a 1;\nworker_connections 2;\nb 3;\n", "worker_connections", NULL, 0, "a 1;\nb 3;\n" },
	{ "a 1; worker_connections 2; b 3;\n", "worker_connections", NULL, 0, "a 1;  b 3;\n" },
	{ "worker_connections 1;\nworker_connections 2;\n", "worker_connections", "3", 0, "worker_connections 3;\n" },
	{ "worker_cpu_affinity auto 1111; # four\n", "worker_cpu_affinity", "auto 11", 0,
	  "worker_cpu_affinity auto 11; # four\n" },
	{ "events { worker_connections 1; }\n", "worker_connections", "2", 0,
	  "events { worker_connections 1; }\nworker_connections 2;\n" },
	{ "worker_connections { }\n", "worker_connections", "2", -EINVAL, NULL },
	{ "worker_connections \"2;\n", "worker_connections", "2", -EINVAL, NULL },
	{ "}\n", "worker_connections", "2", -EINVAL, NULL },
	{ "", "multi_accept", NULL, 0, "" },
};

static void test_set_directive(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(directive_cases) / sizeof(directive_cases[0]); i++) {
		const struct directive_case *t = &directive_cases[i];
		char err[256] = "", *out = NULL;
		size_t outlen = 0;
		int r = nginx_conf_set_directive(t->text, strlen(t->text), t->name, t->args, &out, &outlen, err,
						 sizeof(err));

		if (r != t->rc)
			fail_msg("case %zu: %d, want %d (%s)", i, r, t->rc, err);
		if (r == 0) {
			assert_string_equal(out, t->want);
			assert_int_equal(outlen, strlen(t->want));
		} else {
			assert_null(out);
			assert_true(err[0] != '\0');
		}
		free(out);
	}
}

/* nginx_conf_set_args_at: the directive at an offset (as nginx -T's walk gives it) gets new arguments in place. */
static const struct at_case {
	const char *text, *at; /* AT: the text from the directive's name on (its first occurrence in TEXT) */
	const char *name, *args;
	int rc;
	const char *want;
} at_cases[] = {
	{ "events {\n\tworker_connections 768;\n\t# multi_accept on;\n}\n", "worker_connections 768",
	  "worker_connections", "2048", 0, "events {\n\tworker_connections 2048;\n\t# multi_accept on;\n}\n" },
	{ "http { keepalive_requests   100 ; # by hand\n}\n", "keepalive_requests", "keepalive_requests", "200", 0,
	  "http { keepalive_requests   200 ; # by hand\n}\n" },
	{ "worker_processes \"4\";\n", "worker_processes", "worker_processes", "auto", 0, "worker_processes auto;\n" },
	{ "worker_cpu_affinity auto 0101;\nx 1;\n", "worker_cpu_affinity", "worker_cpu_affinity", "auto 11", 0,
	  "worker_cpu_affinity auto 11;\nx 1;\n" },
	{ "multi_accept;\n", "multi_accept", "multi_accept", "on", 0, "multi_accept on;\n" },
	/* the second of two: only it changes */
	{ "a { keepalive_requests 1; }\nb { keepalive_requests 1; }\n", "keepalive_requests 1; }\n",
	  "keepalive_requests", "5", 0, "a { keepalive_requests 1; }\nb { keepalive_requests 5; }\n" },
	{ "worker_connections 768;\n", "768", "worker_connections", "2", -ENOENT, NULL },
	{ "worker_connections 768;\n", "worker_connections", "multi_accept", "on", -ENOENT, NULL },
	{ "events { }\n", "events", "events", "x", -EINVAL, NULL },
	{ "worker_connections 768;\n", "worker_connections", "worker_connections", "", -EINVAL, NULL },
	{ "worker_connections \"768;\n", "worker_connections", "worker_connections", "2", -EINVAL, NULL },
};

static void test_set_args_at(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(at_cases) / sizeof(at_cases[0]); i++) {
		const struct at_case *t = &at_cases[i];
		const char *at = strstr(t->text, t->at);
		char err[256] = "", *out = NULL;
		size_t outlen = 0;
		struct nginx_conf_directive d;
		int r;

		assert_non_null(at);
		if (i == 5)
			at = strstr(at + 1, t->at);
		r = nginx_conf_set_args_at(t->text, strlen(t->text), (size_t)(at - t->text), t->name, t->args, &out,
					   &outlen, err, sizeof(err));
		if (r != t->rc)
			fail_msg("case %zu: %d, want %d (%s)", i, r, t->rc, err);
		if (r == 0) {
			assert_string_equal(out, t->want);
			assert_int_equal(outlen, strlen(t->want));
			/* and the edited directive reads back where it was */
			assert_int_equal(nginx_conf_file_at(out, outlen, (size_t)(at - t->text), t->name, &d, err,
							    sizeof(err)), 0);
			assert_int_equal(d.start, (size_t)(at - t->text));
		} else {
			assert_null(out);
			assert_true(err[0] != '\0');
		}
		free(out);
	}
}

/* nginx_conf_set_listen_param: one parameter of the listen directive at an offset, every other byte as it was. */
static const struct param_case {
	const char *text, *name, *value; /* VALUE NULL: remove */
	int rc;
	const char *want;
} param_cases[] = {
	{ "server { listen 80; }\n", "reuseport", "", 0, "server { listen 80 reuseport; }\n" },
	{ "server { listen 80 default_server  backlog=511 ; }\n", "reuseport", "", 0,
	  "server { listen 80 default_server  backlog=511 reuseport ; }\n" },
	/* already there: as written */
	{ "server { listen [::]:80   reuseport\tbacklog=4096; }\n", "reuseport", "", 0,
	  "server { listen [::]:80   reuseport\tbacklog=4096; }\n" },
	/* removed with the blank before it; the rest stays */
	{ "server { listen 80   reuseport\tbacklog=4096; # mine\n}\n", "reuseport", NULL, 0,
	  "server { listen 80\tbacklog=4096; # mine\n}\n" },
	{ "server { listen 80 reuseport reuseport; }\n", "reuseport", "", 0, "server { listen 80 reuseport; }\n" },
	{ "server { listen 80; }\n", "reuseport", NULL, 0, "server { listen 80; }\n" },
	/* a flag's name as part of another word is not the flag */
	{ "server { listen 80 so_keepalive=on; }\n", "reuseport", NULL, 0, "server { listen 80 so_keepalive=on; }\n" },
	{ "server { listen 80 rcvbuf=64k; }\n", "rcvbuf", "256k", 0, "server { listen 80 rcvbuf=256k; }\n" },
	{ "server { listen 80 rcvbuf=64k sndbuf=1m; }\n", "sndbuf", NULL, 0, "server { listen 80 rcvbuf=64k; }\n" },
	{ "server { listen 80\n\t\tssl; }\n", "sndbuf", "128k", 0, "server { listen 80\n\t\tssl sndbuf=128k; }\n" },
	/* deferred: a flag like reuseport, beside it and the other parameters */
	{ "server { listen 80 reuseport; }\n", "deferred", "", 0, "server { listen 80 reuseport deferred; }\n" },
	{ "server { listen 80 deferred backlog=4096 deferred; }\n", "deferred", NULL, 0,
	  "server { listen 80 backlog=4096; }\n" },
	{ "server { listen 80; }\n", "deferred", "60", -EINVAL, NULL },
	{ "server { listen 80; }\n", "fastopen", "", -EINVAL, NULL },
	{ "server { listen 80; }\n", "reuseport", "on", -EINVAL, NULL },
	{ "server { listen 80; }\n", "rcvbuf", "", -EINVAL, NULL },
	{ "server { listen 80; }\n", "rcvbuf", "1k;x", -EINVAL, NULL },
};

static void test_listen_param(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(param_cases) / sizeof(param_cases[0]); i++) {
		const struct param_case *t = &param_cases[i];
		size_t start = (size_t)(strstr(t->text, "listen") - t->text), outlen = 0;
		char err[256] = "", *out = NULL;
		int r = nginx_conf_set_listen_param(t->text, strlen(t->text), &start, 1, t->name, t->value, &out,
						    &outlen, err, sizeof(err));

		if (r != t->rc)
			fail_msg("case %zu: %d, want %d (%s)", i, r, t->rc, err);
		if (r != 0) {
			assert_null(out);
			assert_true(err[0] != '\0');
			continue;
		}
		if (strcmp(out, t->want) != 0)
			fail_msg("case %zu: got [%s], want [%s]", i, out, t->want);
		assert_int_equal(outlen, strlen(t->want));
		assert_true(nginx_conf_same_but_listen_param(t->text, strlen(t->text), out, outlen, t->name));
		assert_false(strcmp(t->name, "backlog") != 0 && strcmp(out, t->text) != 0 &&
			     nginx_conf_same_but_listen_param(t->text, strlen(t->text), out, outlen, "backlog"));
		free(out);
	}
	/* no listen at the offset */
	{
		static const char text[] = "server { listen 80; }\n";
		size_t start = 0, outlen;
		char err[256], *out;

		assert_int_equal(nginx_conf_set_listen_param(text, strlen(text), &start, 1, "reuseport", "", &out, &outlen,
							     err, sizeof(err)), -EINVAL);
	}
}

static void test_file_find(void **state)
{
	static const char text[] = "# c\nevents { worker_connections 1; }\nworker_connections \"20\\\"48\";\n";
	struct nginx_conf_directive d;
	char err[256], big[1100];

	(void)state;
	assert_int_equal(nginx_conf_file_find(text, strlen(text), "worker_connections", &d, err, sizeof(err)), 0);
	assert_int_equal(d.line, 3);
	assert_int_equal(d.nargs, 1);
	assert_string_equal(d.args[0], "20\"48");
	assert_int_equal(nginx_conf_file_find(text, strlen(text), "multi_accept", &d, err, sizeof(err)), -ENOENT);
	/* A worker_cpu_affinity mask of 1024 CPUs is one word that comes back whole. */
	{
		char mask[1025], *out;
		size_t outlen;

		memset(mask, '0', 1024);
		mask[0] = '1';
		mask[1024] = '\0';
		snprintf(big, sizeof(big), "auto %s", mask);
		assert_int_equal(nginx_conf_set_directive("", 0, "worker_cpu_affinity", big, &out, &outlen, err,
							  sizeof(err)), 0);
		assert_int_equal(nginx_conf_file_find(out, outlen, "worker_cpu_affinity", &d, err, sizeof(err)), 0);
		assert_int_equal(d.nargs, 2);
		assert_string_equal(d.args[1], mask);
		free(out);
	}
	assert_int_equal(nginx_conf_file_find("a \"b;", 5, "a", &d, err, sizeof(err)), -EINVAL);
}

/* ---- synthetic dumps -------------------------------------------------------------------------------------- */

static int parse_str(const char *dump, struct nginx_conf *c, char *err, size_t errlen)
{
	return nginx_conf_parse(dump, strlen(dump), c, err, errlen);
}

static void test_stream_and_mail(void **state)
{
	static const char dump[] =
		"# configuration file /s/nginx.conf:\n"
		"events { }\n"
		"stream { server { listen 12345 backlog=100; proxy_pass 127.0.0.1:1; }\n"
		"  server { listen 127.0.0.1:53 udp; proxy_pass 127.0.0.1:2; }\n"
		"  server { listen \"127.0.0.1:8080\" \"backlog=5\"; proxy_pass 127.0.0.1:3; } }\n"
		"mail { server { listen localhost:25; protocol smtp; } }\n"
		"http { server { listen 8081 deferred reuseport; } }\n\n";
	struct nginx_conf c;
	struct nginx_listen *l;
	size_t n, len;
	char err[256] = "", *out;
	size_t start;

	(void)state;
	assert_int_equal(parse_str(dump, &c, err, sizeof(err)), 0);
	assert_int_equal(nginx_conf_listens(&c, &l, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 5);
	assert_int_equal(l[0].module, NGINX_LISTEN_STREAM);
	assert_false(l[0].deferred || l[0].reuseport);
	assert_int_equal(l[4].module, NGINX_LISTEN_HTTP);
	assert_true(l[4].deferred && l[4].reuseport && l[4].options && l[4].target);
	assert_int_equal(l[0].port, 12345);
	assert_true(l[0].wildcard && l[0].target && l[0].has_backlog);
	assert_int_equal(l[0].backlog, 100);
	assert_true(l[1].udp);
	assert_false(l[1].target);
	assert_int_equal(l[2].port, 8080);
	assert_int_equal(l[2].backlog, 5);
	assert_true(l[2].target);
	assert_int_equal(l[3].module, NGINX_LISTEN_MAIL);
	assert_int_equal(l[3].family, AF_UNSPEC);
	assert_string_equal(l[3].addr, "localhost");
	assert_int_equal(l[3].port, 25);
	assert_true(l[3].target);
	/* Quoted words are replaced whole, quotes included. */
	start = l[2].start;
	assert_int_equal(nginx_conf_set_backlog(c.files[0].text, c.files[0].len, &start, 1, 9, &out, &len, err,
						sizeof(err)), 0);
	assert_non_null(strstr(out, "server { listen \"127.0.0.1:8080\" backlog=9; proxy_pass"));
	free(out);
	free(l);
	nginx_conf_free(&c);
}

struct bad_case {
	const char *dump;
	int rc;
	size_t nfiles; /* when rc == 0 */
	const char *walk_err; /* when the split succeeds but a walk must fail: a word of the message */
};

static const struct bad_case bad_cases[] = {
	{ "", -EINVAL, 0, NULL },
	{ "hello\n", -EINVAL, 0, NULL },
	{ "# configuration file rel.conf:\na 1;\n\n", -EINVAL, 0, NULL },
	/* Without the newline nginx adds, the file's own last newline is taken for it. */
	{ "# configuration file /a.conf:\na 1;\n", 0, 1, NULL },
	{ "# configuration file /a.conf:\na 1;\n\n# configuration file /b.conf:\nb 2;", -EINVAL, 0, NULL },
	{ "# configuration file /a.conf:\na \"1;\n\n", -EINVAL, 0, NULL }, /* unterminated string */
	{ "# configuration file /a.conf:\na { b 1;\n\n", -EINVAL, 0, NULL },
	{ "# configuration file /a.conf:\na 1; }\n\n", -EINVAL, 0, NULL },
	{ "# configuration file /a.conf:\n\"a\"b;\n\n", -EINVAL, 0, NULL },
	{ "# configuration file /a.conf:\n;\n\n", -EINVAL, 0, NULL },
	/* Not named by any include: the look-alike stays in /a.conf. */
	{ "# configuration file /a.conf:\na 1;\n\n# configuration file /b.conf:\nb 2;\n\n", 0, 1, NULL },
	/* Named, but the file before it is inside a block there. */
	{ "# configuration file /a.conf:\nhttp { include /b.conf;\n# configuration file /b.conf:\n}\n\n", 0, 1,
	  "not in the output" },
	{ "# configuration file /a.conf:\ninclude /b.conf;\n\n# configuration file /b.conf:\nb 2;\n\n", 0, 2, NULL },
	/* A file that includes itself: nginx would not start; the walk stops at the depth bound. */
	{ "# configuration file /a.conf:\ninclude /a.conf;\n\n", 0, 1, "deeper" },
	{ "# configuration file /a.conf:\ninclude /missing.conf;\n\n", 0, 1, "not in the output" },
	{ "# configuration file /a.conf:\nlisten x;\nhttp { server { listen 1.2.3.4:99999; } }\n\n", 0, 1, "listen" },
	{ "# configuration file /a.conf:\nhttp { server { listen 80 backlog=x; } }\n\n", 0, 1, "backlog" },
};

/* A directive of the http block set again inside servers and locations keeps its own value there; the upstream
 * block's keepalive_requests is the upstream module's, another directive. */
static void test_nested(void **state)
{
	static const char dump[] =
		"# configuration file /n/nginx.conf:\n"
		"events { }\n"
		"http {\n"
		"\tkeepalive_requests 1;\n"
		"\tupstream app { server 127.0.0.1:9; keepalive_requests 50; }\n"
		"\tinclude /n/site;\n"
		"}\n"
		"\n"
		"# configuration file /n/site:\n"
		"server {\n"
		"\tlisten 80;\n"
		"\tlocation / { keepalive_requests 7; }\n"
		"}\n"
		"server { keepalive_requests 9; }\n";
	struct nginx_conf_directive d;
	char err[256] = "", ctx[NGINX_CONF_CONTEXT_MAX] = "";
	struct nginx_conf c;
	size_t n = 99;

	(void)state;
	assert_int_equal(parse_str(dump, &c, err, sizeof(err)), 0);
	assert_int_equal(nginx_conf_nested(&c, "http", "keepalive_requests", &d, ctx, sizeof(ctx), &n, err,
					   sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(c.files[d.file].path, "/n/site");
	assert_int_equal(d.line, 3);
	assert_string_equal(d.args[0], "7");
	assert_string_equal(ctx, "http/server/location");
	/* Nothing nests in main or events; a directive set nowhere else. */
	assert_int_equal(nginx_conf_nested(&c, "events", "worker_connections", &d, ctx, sizeof(ctx), &n, err,
					   sizeof(err)), 0);
	assert_int_equal(n, 0);
	assert_int_equal(nginx_conf_nested(&c, "http", "sendfile", &d, ctx, sizeof(ctx), &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	/* "http/server" itself: only the location's. */
	assert_int_equal(nginx_conf_nested(&c, "http/server", "keepalive_requests", &d, ctx, sizeof(ctx), &n, err,
					   sizeof(err)), 0);
	assert_int_equal(n, 1);
	nginx_conf_free(&c);
}

static void test_bad_dumps(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *t = &bad_cases[i];
		struct nginx_conf c;
		struct nginx_listen *l;
		size_t n;
		char err[256] = "";
		int r = parse_str(t->dump, &c, err, sizeof(err));

		if (r != t->rc)
			fail_msg("case %zu: %d, want %d (%s)", i, r, t->rc, err);
		if (r < 0) {
			assert_true(err[0] != '\0');
			assert_null(c.buf);
			continue;
		}
		assert_int_equal(c.nfiles, t->nfiles);
		r = nginx_conf_listens(&c, &l, &n, err, sizeof(err));
		if (t->walk_err) {
			if (r != -EINVAL || !strstr(err, t->walk_err))
				fail_msg("case %zu: walk %d (%s), want -EINVAL with '%s'", i, r, err, t->walk_err);
		} else {
			assert_int_equal(r, 0);
			free(l);
		}
		nginx_conf_free(&c);
	}
}

/* A NUL byte in a word (found by fuzz_nginx_conf): the word would be cut short as a C string, so that a block
 * "http\0x" passed for "http"; it is refused wherever the text is read. One in a comment is harmless. */
static void test_nul_byte(void **state)
{
	static const char dump[] = "# configuration file /a.conf:\nhttp\0x { keepalive_timeout 5; }\n\n";
	static const char comment[] = "# configuration file /a.conf:\n# a \0 b\nhttp { keepalive_timeout 5; }\n\n";
	static const char file[] = "worker_rlimit_nofile 1\0 2;\n";
	struct nginx_conf c;
	struct nginx_conf_directive d;
	char err[256] = "", *out = NULL;
	size_t outlen;

	(void)state;
	assert_int_equal(nginx_conf_parse(dump, sizeof(dump) - 1, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "NUL byte"));
	assert_null(c.buf);
	assert_int_equal(nginx_conf_parse(comment, sizeof(comment) - 1, &c, err, sizeof(err)), 0);
	assert_int_equal(nginx_conf_find(&c, "http", "keepalive_timeout", &d, err, sizeof(err)), 0);
	assert_string_equal(d.args[0], "5");
	nginx_conf_free(&c);
	assert_int_equal(nginx_conf_file_find(file, sizeof(file) - 1, "worker_rlimit_nofile", &d, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(nginx_conf_set_directive(file, sizeof(file) - 1, "worker_rlimit_nofile", "4", &out, &outlen,
						  err, sizeof(err)),
			 -EINVAL);
	assert_null(out);
}

/* Blocks nested past the bound, and includes that double at every level: both end in an error, quickly. */
static void test_bounds(void **state)
{
	struct nginx_conf c;
	struct nginx_conf_directive d;
	char err[256] = "", *dump, *p;
	size_t cap = 1 << 18;
	int k;

	(void)state;
	dump = malloc(cap);
	assert_non_null(dump);
	p = dump + sprintf(dump, "# configuration file /a.conf:\n");
	for (k = 0; k < NGINX_CONF_DEPTH_MAX + 1; k++)
		p += sprintf(p, "b {");
	for (k = 0; k < NGINX_CONF_DEPTH_MAX + 1; k++)
		p += sprintf(p, "}");
	sprintf(p, "\n\n");
	assert_int_equal(parse_str(dump, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nested"));

	p = dump + sprintf(dump, "# configuration file /f0.conf:\ninclude /f1.conf; include /f1.conf;\n\n");
	for (k = 1; k < 30; k++)
		p += sprintf(p, "# configuration file /f%d.conf:\n# %04000d\ninclude /f%d.conf; include /f%d.conf;\n\n",
			     k, 0, k + 1, k + 1);
	sprintf(p, "# configuration file /f30.conf:\nx 1;\n\n");
	assert_int_equal(parse_str(dump, &c, err, sizeof(err)), 0);
	assert_int_equal(c.nfiles, 31);
	assert_int_equal(nginx_conf_find(&c, "main", "y", &d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "larger than"));
	nginx_conf_free(&c);
	free(dump);
}

/* Every prefix of a real dump gives an error or a configuration that walks; never a crash or a hang. */
static void test_truncated(void **state)
{
	static const char *const fixtures[] = { "notincluded.txt", "debian.txt", "multi.txt" };

	(void)state;
	for (size_t f = 0; f < sizeof(fixtures) / sizeof(fixtures[0]); f++) {
		size_t len, ok = 0, step;
		char *dump = load(fixtures[f], &len);

		step = len < 1000 ? 1 : len / 400;
		for (size_t cut = 0; cut < len; cut += step) {
			struct nginx_conf c;
			struct nginx_listen *l;
			size_t n;
			char err[256];

			if (nginx_conf_parse(dump, cut, &c, err, sizeof(err)) != 0)
				continue;
			ok++;
			if (nginx_conf_listens(&c, &l, &n, err, sizeof(err)) == 0)
				free(l);
			nginx_conf_free(&c);
		}
		/* Cuts right after a file's added newline are whole dumps of fewer files; most cuts are not. */
		assert_true(ok < len / step / 2);
		free(dump);
	}
}

/* ---- the public walk ------------------------------------------------------------------------------------- */

struct walk_rec {
	char out[65536];
	size_t n, blocks, ends, includes, directives, maxdepth, stop_after, seen;
};

/* Records each step as one line: "D|B|E|I depth context file:line words...". */
static int record(void *ctx, const struct nginx_conf_node *node)
{
	static const char kinds[] = "DBEI";
	struct walk_rec *w = ctx;
	char word[NGINX_CONF_TOKEN_MAX];
	int k;

	switch (node->event) {
	case NGINX_CONF_DIRECTIVE: w->directives++; break;
	case NGINX_CONF_BLOCK: w->blocks++; break;
	case NGINX_CONF_BLOCK_END: w->ends++; break;
	case NGINX_CONF_INCLUDE: w->includes++; break;
	}
	if (node->depth > w->maxdepth)
		w->maxdepth = node->depth;
	k = snprintf(w->out + w->n, sizeof(w->out) - w->n, "%c %zu %s %zu:%u", kinds[node->event], node->depth,
		     node->context, node->file, node->line);
	w->n += k > 0 && (size_t)k < sizeof(w->out) - w->n ? (size_t)k : 0;
	k = node->event == NGINX_CONF_INCLUDE ? snprintf(w->out + w->n, sizeof(w->out) - w->n, " ->%zu",
							   node->included) : 0;
	w->n += k > 0 && (size_t)k < sizeof(w->out) - w->n ? (size_t)k : 0;
	for (size_t i = 0; i < node->nwords && i < 3; i++) {
		assert_true(nginx_conf_node_word(node, i, word, sizeof(word)) >= 0);
		k = snprintf(w->out + w->n, sizeof(w->out) - w->n, " %.40s", word);
		w->n += k > 0 && (size_t)k < sizeof(w->out) - w->n ? (size_t)k : 0;
	}
	assert_int_equal(nginx_conf_node_word(node, node->nwords, word, sizeof(word)), -EINVAL);
	if (w->n + 1 < sizeof(w->out))
		w->out[w->n++] = '\n';
	w->out[w->n] = '\0';
	return w->stop_after && ++w->seen == w->stop_after ? 7 : 0;
}

static void test_walk(void **state)
{
	struct nginx_conf c;
	struct walk_rec *w = calloc(1, sizeof(*w));
	char err[256] = "";

	(void)state;
	assert_non_null(w);
	parse_fixture("multi.txt", &c);
	assert_int_equal(nginx_conf_walk(&c, record, w, err, sizeof(err)), 0);
	/* Every block closes, in the context it opened in; each included file is shown before its directives. */
	assert_int_equal(w->blocks, w->ends);
	assert_int_equal(w->includes, 7); /* main, events, http, mime.types, map-entries, long, servers */
	assert_non_null(strstr(w->out, "D 0 main 0:4 include ngx-autotune/main.conf\nI 0 main 0:4 ->1\n"
					"D 0 main 1:1 worker_rlimit_nofile 4096\n"));
	assert_non_null(strstr(w->out, "B 0 main 0:8 events\nD 1 events 0:9 include"));
	assert_non_null(strstr(w->out, "I 1 events 0:9 ->2\nD 1 events 2:2 worker_connections 2048\n"
					"D 1 events 0:10 multi_accept on\nE 0 main 0:11\n"));
	/* The quoted braces of the map and the location regex are words, not blocks. */
	assert_non_null(strstr(w->out, "D 2 http/map 0:21 default a;b}\n"));
	assert_non_null(strstr(w->out, "B 2 http/server 0:32 location ~ ^/x{2,3}$\n"));
	assert_non_null(strstr(w->out, "I 2 http/map 0:23 ->5\nD 2 http/map 5:1 ~^y 2\nE 1 http 0:24\n"));
	assert_int_equal(w->maxdepth, 3);
	/* A positive return stops the walk and is handed back. */
	memset(w, 0, sizeof(*w));
	w->stop_after = 5;
	assert_int_equal(nginx_conf_walk(&c, record, w, err, sizeof(err)), 7);
	assert_int_equal(w->seen, 5);
	nginx_conf_free(&c);

	/* Debian's default site comes in through a glob include of sites-enabled/. */
	parse_fixture("debian.txt", &c);
	memset(w, 0, sizeof(*w));
	assert_int_equal(nginx_conf_walk(&c, record, w, err, sizeof(err)), 0);
	assert_int_equal(w->blocks, w->ends);
	assert_non_null(strstr(w->out, "I 1 http 0:63 ->5\nB 1 http 5:21 server\nD 2 http/server 5:22 listen 80 default_server\n"));
	nginx_conf_free(&c);
	free(w);
}

/* ---- nginx_conf_find_each, nginx_conf_file_each ------------------------------------------------------------ */

/* nginx_conf_find_each answers at most NGINX_CONF_EACH_MAX directives (each holds its arguments by value): more is
 * an error, not 8.5 KiB more per directive. */
static void test_find_each_bound(void **state)
{
	struct nginx_conf_found *f = NULL;
	struct nginx_conf c;
	char err[256] = "", *dump, *p;
	size_t n = 0;

	(void)state;
	for (int k = NGINX_CONF_EACH_MAX; k <= NGINX_CONF_EACH_MAX + 1; k++) {
		dump = malloc(64 + (size_t)k * 64);
		assert_non_null(dump);
		p = dump + sprintf(dump, "# configuration file /e/nginx.conf:\nhttp {\n");
		for (int i = 0; i < k; i++)
			p += sprintf(p, "location /%d { gzip_comp_level 1; }\n", i);
		sprintf(p, "}\n\n");
		assert_int_equal(parse_str(dump, &c, err, sizeof(err)), 0);
		if (k == NGINX_CONF_EACH_MAX) {
			assert_int_equal(nginx_conf_find_each(&c, "http", "gzip_comp_level", &f, &n, err, sizeof(err)), 0);
			assert_int_equal(n, NGINX_CONF_EACH_MAX);
			free(f);
			assert_int_equal(nginx_conf_file_each(c.files[0].text, c.files[0].len, "gzip_comp_level", &f, &n,
							      err, sizeof(err)), 0);
			assert_int_equal(n, NGINX_CONF_EACH_MAX);
			free(f);
		} else {
			assert_int_equal(nginx_conf_find_each(&c, "http", "gzip_comp_level", &f, &n, err, sizeof(err)),
					 -EINVAL);
			assert_string_equal(err, "gzip_comp_level is set in more than 256 places");
			assert_int_equal(nginx_conf_file_each(c.files[0].text, c.files[0].len, "gzip_comp_level", &f, &n,
							      err, sizeof(err)), -EINVAL);
		}
		nginx_conf_free(&c);
		free(dump);
	}
}

static void test_find_each(void **state)
{
	static const char dump[] =
		"# configuration file /e/nginx.conf:\n"
		"events { }\n"
		"http {\n"
		"\tgzip_comp_level 9;\n"
		"\tupstream app { server 127.0.0.1:9; gzip_comp_level 3; }\n"
		"\tinclude /e/site;\n"
		"\tinclude /e/site;\n"
		"}\n"
		"\n"
		"# configuration file /e/site:\n"
		"server {\n"
		"\tlisten 80;\n"
		"\tlocation / { gzip_comp_level \"2\"; location /x { gzip_comp_level 5; } }\n"
		"}\n";
	struct nginx_conf_found *f = NULL;
	struct nginx_conf c;
	char err[256] = "";
	size_t n = 99;

	(void)state;
	assert_int_equal(parse_str(dump, &c, err, sizeof(err)), 0);
	assert_int_equal(nginx_conf_find_each(&c, "http", "gzip_comp_level", &f, &n, err, sizeof(err)), 0);
	/* http's, then the site's two once (it is included twice); the upstream's is another directive */
	assert_int_equal(n, 3);
	assert_string_equal(f[0].context, "http");
	assert_string_equal(f[0].d.args[0], "9");
	assert_int_equal(f[0].d.line, 3);
	assert_string_equal(c.files[f[1].d.file].path, "/e/site");
	assert_string_equal(f[1].context, "http/server/location");
	assert_string_equal(f[1].d.args[0], "2");
	assert_int_equal(f[1].d.start, (size_t)(strstr(c.files[1].text, "gzip_comp_level") - c.files[1].text));
	assert_string_equal(f[2].context, "http/server/location/location");
	assert_string_equal(f[2].d.args[0], "5");
	free(f);
	/* Nothing: NULL and 0; "events" finds nothing nested either */
	assert_int_equal(nginx_conf_find_each(&c, "http", "gzip", &f, &n, err, sizeof(err)), 0);
	assert_null(f);
	assert_int_equal(n, 0);
	assert_int_equal(nginx_conf_find_each(&c, "http/server", "gzip_comp_level", &f, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	free(f);
	/* one file alone: every depth, the upstream's included */
	assert_int_equal(nginx_conf_file_each(c.files[0].text, c.files[0].len, "gzip_comp_level", &f, &n, err,
					      sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(f[1].context, "http/upstream");
	assert_string_equal(f[1].d.args[0], "3");
	free(f);
	assert_int_equal(nginx_conf_file_each("a { b 1;", 8, "b", &f, &n, err, sizeof(err)), -EINVAL);
	assert_null(f);
	assert_true(err[0] != '\0');
	nginx_conf_free(&c);
}

/* ---- nginx_conf_edit ----------------------------------------------------------------------------------------- */

#define NOTE "ngx-autotune test"

/* One batch: up to three edits, each at the first occurrence of AT (its Nth with "AT@N") in TEXT. */
static const struct edit_case {
	const char *text;
	struct {
		enum nginx_conf_edit_op op;
		const char *at, *name, *text, *note;
	} e[3];
	int rc;
	const char *want;
} edit_cases[] = {
	/* arguments, plain and noted (once per line; a line's own comment stays before the note) */
	{ "http { gzip_comp_level 9; }\n", { { NGINX_CONF_EDIT_ARGS, "gzip", "gzip_comp_level", "5", NULL } }, 0,
	  "http { gzip_comp_level 5; }\n" },
	{ "upstream b {\n\tkeepalive  16 ;   # mine\n}\n", { { NGINX_CONF_EDIT_ARGS, "keepalive", "keepalive", "64",
	  NOTE } }, 0, "upstream b {\n\tkeepalive  64 ;   # mine # " NOTE ": keepalive was 16\n}\n" },
	{ "l {\n\tproxy_pass http://127.0.0.1:8080/x;\n}", { { NGINX_CONF_EDIT_ARGS, "proxy_pass", "proxy_pass",
	  "http://ngxat_up_127_0_0_1_8080/x", NOTE } }, 0,
	  "l {\n\tproxy_pass http://ngxat_up_127_0_0_1_8080/x; # " NOTE ": proxy_pass was http://127.0.0.1:8080/x\n}" },
	{ "a \"1\" '2'; # x\n", { { NGINX_CONF_EDIT_ARGS, "a", "a", "3", NOTE } }, 0,
	  "a 3; # x # " NOTE ": a was \"1\" '2'\n" },
	{ "multi_accept;\n", { { NGINX_CONF_EDIT_ARGS, "multi_accept", "multi_accept", "on", NOTE } }, 0,
	  "multi_accept on; # " NOTE ": multi_accept was \n" },
	/* a line noted already keeps its first note */
	{ "k 2; # " NOTE ": k was 1\n", { { NGINX_CONF_EDIT_ARGS, "k", "k", "3", NOTE } }, 0,
	  "k 3; # " NOTE ": k was 1\n" },
	/* lines added at the end of a block, indented as its first line; one tab deeper when it has none */
	{ "server {\n    location / {\n        proxy_pass http://b;\n    }\n}\n",
	  { { NGINX_CONF_EDIT_ADD, "location", "location", "proxy_http_version 1.1;\nproxy_set_header Connection \"\";",
	      NOTE } }, 0,
	  "server {\n    location / {\n        proxy_pass http://b;\n        proxy_http_version 1.1; # " NOTE "\n"
	  "        proxy_set_header Connection \"\"; # " NOTE "\n    }\n}\n" },
	{ "upstream b {\n}\n", { { NGINX_CONF_EDIT_ADD, "upstream", "upstream", "keepalive 8;", NULL } }, 0,
	  "upstream b {\n\tkeepalive 8;\n}\n" },
	/* a block closed on the line of its last directive: the '}' goes to a line of its own, noted */
	{ "\tlocation / { proxy_pass http://b; }\n", { { NGINX_CONF_EDIT_ADD, "location", "location",
	  "proxy_http_version 1.1;\nkeepalive_timeout 5s;", NOTE } }, 0,
	  "\tlocation / { proxy_pass http://b; \n\t\tproxy_http_version 1.1; # " NOTE " (new line)\n"
	  "\t\tkeepalive_timeout 5s; # " NOTE "\n}\n" },
	/* several at once, in two blocks and an argument; the nested block's lines go into it alone */
	{ "a {\n\tb {\n\t\tx 1;\n\t}\n\ty 2;\n}\n",
	  { { NGINX_CONF_EDIT_ADD, "a", "a", "z 3;", NULL }, { NGINX_CONF_EDIT_ADD, "b", "b", "w 4;", NULL },
	    { NGINX_CONF_EDIT_ARGS, "y", "y", "5", NULL } }, 0,
	  "a {\n\tb {\n\t\tx 1;\n\t\tw 4;\n\t}\n\ty 5;\n\tz 3;\n}\n" },
	/* a noted argument and lines added to the block closed on its line: the note stays with its directive */
	{ "server { listen 80; location / { x 1; } }\n",
	  { { NGINX_CONF_EDIT_ADD, "location", "location", "y 2;", NOTE }, { NGINX_CONF_EDIT_ARGS, "listen", "listen",
	    "81", NOTE }, { NGINX_CONF_EDIT_ADD, "server", "server", "z 3;", NOTE } }, 0,
	  "server { listen 81; location / { x 1;  # " NOTE ": listen was 80\n\ty 2; # " NOTE " (new line)\n}"
	  " \n\tz 3; # " NOTE " (new line)\n}\n" },
	/* a file's end */
	{ "http {\n}", { { NGINX_CONF_EDIT_APPEND, NULL, NULL, "upstream u {\n\tserver 127.0.0.1:1;\n}", NULL } }, 0,
	  "http {\n}\nupstream u {\n\tserver 127.0.0.1:1;\n}\n" },
	{ "", { { NGINX_CONF_EDIT_APPEND, NULL, NULL, "x 1;\n", NULL } }, 0, "x 1;\n" },
	/* noted: line by line, so that the way back takes the block out whole */
	{ "# mine\n", { { NGINX_CONF_EDIT_APPEND, NULL, NULL, "upstream u {\n\tkeepalive 2;\n}", NOTE } }, 0,
	  "# mine\nupstream u { # " NOTE "\n\tkeepalive 2; # " NOTE "\n} # " NOTE "\n" },
	{ "x 1;", { { NGINX_CONF_EDIT_APPEND, NULL, NULL, "y 2;", NOTE } }, 0, "x 1;\ny 2; # " NOTE " (new line)\n" },
	{ "", { { NGINX_CONF_EDIT_APPEND, NULL, NULL, "y 2; # c", NOTE } }, -EINVAL, NULL },
	/* refused: a clear error and no text */
	{ "a 1;\n", { { NGINX_CONF_EDIT_ARGS, "a", "b", "2", NULL } }, -ENOENT, NULL },
	{ "a { }\n", { { NGINX_CONF_EDIT_ARGS, "a", "a", "2", NULL } }, -EINVAL, NULL },
	{ "a 1;\n", { { NGINX_CONF_EDIT_ADD, "a", "a", "b 2;", NULL } }, -EINVAL, NULL },
	{ "a 1;\n", { { NGINX_CONF_EDIT_ARGS, "a", "a", "", NULL } }, -EINVAL, NULL },
	{ "a 1;\n", { { NGINX_CONF_EDIT_ARGS, "a", "a", "2\n3", NULL } }, -EINVAL, NULL },
	/* more on the line: the note goes after it; a line that ends inside a string takes none */
	{ "u { a 1; b 2; }\n", { { NGINX_CONF_EDIT_ARGS, "a", "a", "3", NOTE } }, 0,
	  "u { a 3; b 2; } # " NOTE ": a was 1\n" },
	{ "a 1; b \"x\ny\";\n", { { NGINX_CONF_EDIT_ARGS, "a", "a", "2", NOTE } }, -EINVAL, NULL },
	{ "a 1\n 2;\n", { { NGINX_CONF_EDIT_ARGS, "a", "a", "2", NOTE } }, -EINVAL, NULL },
	{ "a 1; a 2;\n", { { NGINX_CONF_EDIT_ARGS, "a", "a", "3", NOTE }, { NGINX_CONF_EDIT_ARGS, "a@2", "a", "4",
	  NOTE } }, -EINVAL, NULL },
	{ "a 1;\n", { { NGINX_CONF_EDIT_ARGS, "a", "a", "2", "has # in it" } }, -EINVAL, NULL },
	{ "a { }\n", { { NGINX_CONF_EDIT_ADD, "a", "a", "b 1; c 2;", NULL } }, -EINVAL, NULL },
	{ "a { }\n", { { NGINX_CONF_EDIT_ADD, "a", "a", "b { }", NULL } }, -EINVAL, NULL },
	{ "a { }\n", { { NGINX_CONF_EDIT_ADD, "a", "a", "b 1; # c", NULL } }, -EINVAL, NULL },
	{ "a { }\n", { { NGINX_CONF_EDIT_ADD, "a", "a", "b \"1;", NULL } }, -EINVAL, NULL },
	{ "a { }\n", { { NGINX_CONF_EDIT_APPEND, NULL, NULL, "b {", NULL } }, -EINVAL, NULL },
	{ "a { \n", { { NGINX_CONF_EDIT_APPEND, NULL, NULL, "b 1;", NULL } }, -EINVAL, NULL },
	{ "a 1;\n", { { NGINX_CONF_EDIT_ARGS, "a", "a", "2", NULL }, { NGINX_CONF_EDIT_ARGS, "a", "a", "3", NULL } },
	  -EINVAL, NULL },
};

/* The offset of AT in TEXT ("AT@N": its Nth occurrence). */
static size_t offset_of(const char *text, const char *at)
{
	char word[64];
	const char *p = text, *sep = strchr(at, '@');
	int nth = sep ? atoi(sep + 1) : 1;

	snprintf(word, sizeof(word), "%.*s", (int)(sep ? sep - at : (long)strlen(at)), at);
	for (int i = 0; i < nth; i++) {
		p = strstr(i ? p + 1 : p, word);
		assert_non_null(p);
	}
	return (size_t)(p - text);
}

static void test_edit(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(edit_cases) / sizeof(edit_cases[0]); i++) {
		const struct edit_case *t = &edit_cases[i];
		struct nginx_conf_edit e[3];
		char err[256] = "", *out = NULL, *back = NULL;
		size_t n = 0, outlen = 0, backlen = 0, count = 0;
		bool noted = false;
		int r;

		for (; n < 3 && (t->e[n].name || t->e[n].op == NGINX_CONF_EDIT_APPEND) && t->e[n].text; n++) {
			e[n] = (struct nginx_conf_edit){ .op = t->e[n].op, .name = t->e[n].name, .text = t->e[n].text,
							 .note = t->e[n].note };
			e[n].start = t->e[n].at ? offset_of(t->text, t->e[n].at) : 0;
			noted = noted || t->e[n].note;
		}
		r = nginx_conf_edit(t->text, strlen(t->text), e, n, &out, &outlen, err, sizeof(err));
		if (r != t->rc)
			fail_msg("case %zu: %d, want %d (%s)", i, r, t->rc, err);
		if (r != 0) {
			assert_null(out);
			assert_true(err[0] != '\0');
			continue;
		}
		if (strcmp(out, t->want) != 0)
			fail_msg("case %zu: got [%s], want [%s]", i, out, t->want);
		assert_int_equal(outlen, strlen(t->want));
		/* The way back from the noted edits: byte for byte (case 5 was noted before this edit). */
		if (noted && i != 5) {
			assert_int_equal(nginx_conf_unedit(out, outlen, NOTE, &back, &backlen, &count, err, sizeof(err)),
					 0);
			if (strcmp(back, t->text) != 0)
				fail_msg("case %zu: unedit gave [%s], want [%s]", i, back, t->text);
			assert_true(count > 0);
			free(back);
		}
		free(out);
	}
}

/* nginx_conf_unedit: what others changed since stays; a note without its directive is refused. */
static void test_unedit(void **state)
{
	static const char text[] = "upstream b {\n\tserver x;\n\tkeepalive 16;\n}\nserver {\n\tlocation / {\n"
				   "\t\tproxy_pass http://b;\n\t}\n}\n";
	struct nginx_conf_edit e[2];
	char err[256] = "", *out = NULL, *back = NULL, *mixed = NULL;
	size_t outlen, backlen, count = 0, mixedlen;

	(void)state;
	e[0] = (struct nginx_conf_edit){ NGINX_CONF_EDIT_ARGS, (size_t)(strstr(text, "keepalive") - text), "keepalive",
					 "64", NOTE };
	e[1] = (struct nginx_conf_edit){ NGINX_CONF_EDIT_ADD, (size_t)(strstr(text, "location") - text), "location",
					 "proxy_http_version 1.1;", NOTE };
	assert_int_equal(nginx_conf_edit(text, strlen(text), e, 2, &out, &outlen, err, sizeof(err)), 0);
	/* someone else edits the same file afterwards: server x becomes y, a line is added */
	{
		struct nginx_conf_edit o[2] = {
			{ NGINX_CONF_EDIT_ARGS, (size_t)(strstr(out, "server x") - out), "server", "y", NULL },
			{ NGINX_CONF_EDIT_ADD, (size_t)(strstr(out, "location") - out), "location", "gzip on;", NULL },
		};

		assert_int_equal(nginx_conf_edit(out, outlen, o, 2, &mixed, &mixedlen, err, sizeof(err)), 0);
	}
	assert_int_equal(nginx_conf_unedit(mixed, mixedlen, NOTE, &back, &backlen, &count, err, sizeof(err)), 0);
	assert_int_equal(count, 2);
	assert_string_equal(back, "upstream b {\n\tserver y;\n\tkeepalive 16;\n}\nserver {\n\tlocation / {\n"
				  "\t\tproxy_pass http://b;\n\t\tgzip on;\n\t}\n}\n");
	free(back);
	/* another note is not ours: nothing taken back */
	assert_int_equal(nginx_conf_unedit(out, outlen, "ngx-autotune other", &back, &backlen, &count, err,
					   sizeof(err)), 0);
	assert_int_equal(count, 0);
	assert_string_equal(back, out);
	free(back);
	free(out);
	free(mixed);
	/* a "was" note whose directive has gone, or that does not say what was there */
	{
		static const char gone[] = "x 1; # " NOTE ": keepalive was 16\n", mute[] = "x 1; # " NOTE ": x\n";

		assert_int_equal(nginx_conf_unedit(gone, sizeof(gone) - 1, NOTE, &back, &backlen, &count, err,
						   sizeof(err)), -EINVAL);
		assert_null(back);
		assert_true(err[0] != '\0');
		assert_int_equal(nginx_conf_unedit(mute, sizeof(mute) - 1, NOTE, &back, &backlen, &count, err,
						   sizeof(err)), -EINVAL);
	}
	assert_int_equal(nginx_conf_unedit("x 1;\n", 5, "bad # note", &back, &backlen, &count, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(nginx_conf_unedit("x \"1;\n", 6, NOTE, &back, &backlen, &count, err, sizeof(err)), 0);
	free(back);
}

/* nginx_conf_same_but_args: the same to nginx, other bytes only in the named directives' arguments. */
static const struct same_case {
	const char *a, *b;
	bool same;
} same_cases[] = {
	{ "http { gzip_comp_level 9; }\n", "http { gzip_comp_level \"9\"; }\n", true },
	{ "http { gzip_comp_level 9; }\n", "http { gzip_comp_level  '9'  ; }\n", false }, /* the blank before ';' */
	{ "http { gzip_comp_level  9  ; }\n", "http { gzip_comp_level  '9'  ; }\n", true },
	{ "http { gzip_comp_level 9; }\n", "http { gzip_comp_level 5; }\n", false },
	{ "http { gzip_comp_level 9; }\n", "http { gzip_comp_level 9; } \n", false },
	{ "a \"x y\";\nworker_connections 1;\n", "a \"x y\";\nworker_connections \"1\";\n", true },
	{ "a \"x y\";\n", "a x y;\n", false }, /* not a named directive: bytes count */
	{ "worker_connections \"x y\";\n", "worker_connections x y;\n", false }, /* one word is not two */
	{ "worker_connections 1;\n", "worker_connections 1;", false },
	{ "worker_connections 1;\n", "worker_connections \"1;\n", false },
};

static void test_same_but_args(void **state)
{
	static const char *const names[] = { "gzip_comp_level", "worker_connections" };

	(void)state;
	for (size_t i = 0; i < sizeof(same_cases) / sizeof(same_cases[0]); i++) {
		const struct same_case *t = &same_cases[i];

		if (nginx_conf_same_but_args(t->a, strlen(t->a), t->b, strlen(t->b), names, 2) != t->same)
			fail_msg("case %zu: not %s", i, t->same ? "the same" : "different");
		assert_true(nginx_conf_same_but_args(t->a, strlen(t->a), t->a, strlen(t->a), names, 2) ||
			    i == sizeof(same_cases) / sizeof(same_cases[0]) - 1);
	}
}

/* Each node of the walk says where it is written: the name's offset and the ';', '{' or '}'. */
struct span_rec {
	const struct nginx_conf *c;
	bool ok;
	size_t n;
};

static int span_check(void *ctx, const struct nginx_conf_node *node)
{
	struct span_rec *s = ctx;
	const char *t = s->c->files[node->file].text;
	size_t off, end;

	if (node->event == NGINX_CONF_BLOCK_END) {
		s->ok = s->ok && t[node->start] == '}' && node->start == node->end;
	} else if (node->event == NGINX_CONF_INCLUDE) {
		s->ok = s->ok && strncmp(t + node->start, "include", 7) == 0 && t[node->end] == ';';
	} else {
		s->ok = s->ok && t[node->end] == (node->event == NGINX_CONF_BLOCK ? '{' : ';') &&
			nginx_conf_node_span(node, 0, &off, &end) == 0 && off == node->start &&
			nginx_conf_node_span(node, node->nwords, &off, &end) == -EINVAL;
		if (node->nwords > 1 && nginx_conf_node_span(node, node->nwords - 1, &off, &end) == 0)
			s->ok = s->ok && end <= node->end;
	}
	s->n++;
	return 0;
}

static void test_node_offsets(void **state)
{
	struct nginx_conf c;
	struct span_rec s = { .c = &c, .ok = true };
	char err[256];

	(void)state;
	parse_fixture("debian.txt", &c);
	assert_int_equal(nginx_conf_walk(&c, span_check, &s, err, sizeof(err)), 0);
	assert_true(s.ok);
	assert_true(s.n > 50);
	nginx_conf_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_multi),
		cmocka_unit_test(test_parse_owned),
		cmocka_unit_test(test_split_debian),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_find_long_argument),
		cmocka_unit_test(test_included),
		cmocka_unit_test(test_listens),
		cmocka_unit_test(test_edit_servers),
		cmocka_unit_test(test_edit_nginx_conf),
		cmocka_unit_test(test_edit_long_line_and_debian),
		cmocka_unit_test(test_edit_round_trip),
		cmocka_unit_test(test_set_directive),
		cmocka_unit_test(test_set_args_at),
		cmocka_unit_test(test_file_find),
		cmocka_unit_test(test_stream_and_mail),
		cmocka_unit_test(test_bad_dumps),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_listen_param),
		cmocka_unit_test(test_find_each),
		cmocka_unit_test(test_find_each_bound),
		cmocka_unit_test(test_edit),
		cmocka_unit_test(test_unedit),
		cmocka_unit_test(test_same_but_args),
		cmocka_unit_test(test_node_offsets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
