/*
 * setup_plan: the edits of `ngx-autotune --setup` on real `nginx -T` dumps (Debian 12's nginx 1.22.1, in a
 * bookworm container): the stock /etc/nginx (debian-stock.txt); a layout with conf.d and sites-enabled symlinks,
 * three servers with access logs of their own, one off, a location with its own, and an events block whose brace
 * is on the next line (setup-multi.txt, from `nginx -T -c /tmp-layouts/multi/nginx.conf`); and one that has part
 * of the setup already: two of the include lines, the ngxat_json format at http level, a stub_status server
 * (setup-partial.txt). Every plan is applied to its files, dumped again, and planned again: the second plan must be
 * empty (idempotent).
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
#include "act/setup_plan.h"
#include "strutil.h"

static const struct setup_params params = {
	.include_dir = "/etc/nginx/ngx-autotune",
	.agent_log = "/var/log/nginx/ngx-autotune.log",
	.status_port = 8190,
};

static char *fixture(const char *name, size_t *len)
{
	const char *srcdir = getenv("srcdir");
	char path[4096];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tests/fixtures/nginx-T/%s", srcdir ? srcdir : ".", name);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void plan_of(const char *dump, size_t len, struct nginx_conf *c, struct setup_plan *plan)
{
	char err[512] = "";
	int r = nginx_conf_parse(dump, len, c, err, sizeof(err));

	if (r < 0)
		fail_msg("parse: %s", err);
	r = setup_plan_nginx(c, &params, plan, err, sizeof(err));
	if (r < 0)
		fail_msg("plan: %s", err);
}

static const struct setup_edit *edit_of(const struct setup_plan *plan, const char *path)
{
	for (size_t i = 0; i < plan->n; i++)
		if (strcmp(plan->edits[i].path, path) == 0)
			return &plan->edits[i];
	return NULL;
}

/* The dump nginx would print after the plan: each file of C with the plan's new text, the new files after the
 * file that includes them (nginx prints files in the order it reads them; the parser takes any order). */
static char *dump_after(const struct nginx_conf *c, const struct setup_plan *plan, size_t *len)
{
	struct sbuf b;

	sbuf_init(&b);
	for (size_t i = 0; i < c->nfiles; i++) {
		const struct setup_edit *e = edit_of(plan, c->files[i].path);

		sbuf_printf(&b, "# configuration file %s:\n", c->files[i].path);
		if (e)
			sbuf_add(&b, e->text_new, e->len_new);
		else
			sbuf_add(&b, c->files[i].text, c->files[i].len);
		sbuf_puts(&b, "\n");
	}
	for (size_t i = 0; i < plan->n; i++) {
		if (plan->edits[i].text_old)
			continue;
		sbuf_printf(&b, "# configuration file %s:\n", plan->edits[i].path);
		sbuf_add(&b, plan->edits[i].text_new, plan->edits[i].len_new);
		sbuf_puts(&b, "\n");
	}
	assert_false(b.oom);
	*len = b.len;
	return b.p;
}

static void assert_idempotent(const struct nginx_conf *c, const struct setup_plan *plan)
{
	struct nginx_conf c2 = {0};
	struct setup_plan again;
	size_t len;
	char *dump = dump_after(c, plan, &len);

	plan_of(dump, len, &c2, &again);
	for (size_t i = 0; i < again.n; i++)
		print_message("still to change: %s\n", again.edits[i].path);
	assert_int_equal(again.n, 0);
	setup_plan_free(&again);
	nginx_conf_free(&c2);
	free(dump);
}

/* The new text of PATH minus its old text: what was inserted, in order (one insert per call of NEXT). */
static bool has(const struct setup_edit *e, const char *needle)
{
	return e && strstr(e->text_new, needle) != NULL;
}

static void test_stock_debian(void **state)
{
	struct nginx_conf c = {0};
	struct setup_plan plan;
	const struct setup_edit *e;
	size_t len;
	char *dump = fixture("debian-stock.txt", &len);

	(void)state;
	plan_of(dump, len, &c, &plan);
	/* main.conf, events.conf, http.conf and setup.conf created; nginx.conf edited; nothing else. */
	assert_int_equal(plan.n, 5);
	assert_true(plan.adds_status && plan.adds_log);
	assert_int_equal(plan.nnotes, 0);
	e = edit_of(&plan, "/etc/nginx/nginx.conf");
	assert_non_null(e);
	assert_non_null(e->text_old);
	/* Exactly four lines added, in their contexts, nothing else changed. */
	assert_true(has(e, "include /etc/nginx/modules-enabled/*.conf;\n\ninclude /etc/nginx/ngx-autotune/main.conf;\n"
			   "events {\n\tinclude /etc/nginx/ngx-autotune/events.conf;\n\tworker_connections 768;\n"));
	assert_true(has(e, "http {\n\tinclude /etc/nginx/ngx-autotune/http.conf;\n"
			   "\tinclude /etc/nginx/ngx-autotune/setup.conf;\n\n\t##\n"));
	assert_int_equal(e->len_new, e->len_old + strlen("include /etc/nginx/ngx-autotune/main.conf;\n") +
					     strlen("\n\tinclude /etc/nginx/ngx-autotune/events.conf;") +
					     strlen("\n\tinclude /etc/nginx/ngx-autotune/http.conf;") +
					     strlen("\n\tinclude /etc/nginx/ngx-autotune/setup.conf;"));
	/* The stock default site has no access_log of its own: nothing to add there. */
	assert_null(edit_of(&plan, "/etc/nginx/sites-enabled/default"));
	e = edit_of(&plan, "/etc/nginx/ngx-autotune/setup.conf");
	assert_non_null(e);
	assert_null(e->text_old);
	assert_true(has(e, "log_format ngxat_json escape=json\n"));
	assert_true(has(e, "\naccess_log /var/log/nginx/ngx-autotune.log ngxat_json buffer=64k flush=1s;\n"));
	assert_true(has(e, "\tlisten 127.0.0.1:8190;\n"));
	assert_true(has(e, "\tlocation = /nginx_status {\n\t\tstub_status;\n\t\tallow 127.0.0.1;\n\t\tdeny all;\n"));
	for (const char *f = "main\0events\0http\0"; *f; f += strlen(f) + 1) {
		char path[128];

		snprintf(path, sizeof(path), "/etc/nginx/ngx-autotune/%s.conf", f);
		e = edit_of(&plan, path);
		assert_non_null(e);
		assert_null(e->text_old);
		assert_true(has(e, "# Owned by ngx-autotune"));
	}
	assert_idempotent(&c, &plan);
	setup_plan_free(&plan);
	nginx_conf_free(&c);
	free(dump);
}

static void test_sites_and_conf_d(void **state)
{
	struct nginx_conf c = {0};
	struct setup_plan plan;
	const struct setup_edit *e;
	size_t len;
	char *dump = fixture("setup-multi.txt", &len);
	static const char ours[] = "access_log /var/log/nginx/ngx-autotune.log ngxat_json buffer=64k flush=1s;";

	(void)state;
	plan_of(dump, len, &c, &plan);
	e = edit_of(&plan, "/tmp-layouts/multi/nginx.conf");
	/* The brace of events on the next line: the include goes after it. */
	assert_true(has(e, "include /etc/nginx/ngx-autotune/main.conf;\nevents\n{\n\tinclude "
			   "/etc/nginx/ngx-autotune/events.conf;\n\tworker_connections 1024;"));
	/* A server with its own access_log gets ours beside it (it does not inherit http's); location
	 * /static/ (off) and the server "quiet" (off) get none; a location with its own gets one. */
	e = edit_of(&plan, "/tmp-layouts/multi/sites-enabled/shop");
	assert_non_null(e);
	assert_true(has(e, "\taccess_log /var/log/nginx/shop.access.log main;\n\taccess_log /var/log/nginx/ngx-autotune.log"));
	assert_true(has(e, "\t\taccess_log off;\n\t\troot /var/www/shop;"));
	assert_int_equal(e->len_new, e->len_old + 2 + strlen(ours));
	e = edit_of(&plan, "/tmp-layouts/multi/sites-enabled/blog");
	assert_non_null(e);
	assert_true(has(e, "\t\taccess_log /var/log/nginx/blog-api.log;\n\t\taccess_log /var/log/nginx/ngx-autotune.log"));
	assert_int_equal(e->len_new, e->len_old + 3 + strlen(ours));
	assert_null(edit_of(&plan, "/tmp-layouts/multi/sites-enabled/quiet"));
	assert_null(edit_of(&plan, "/tmp-layouts/multi/conf.d/upstreams.conf"));
	/* The symlinks are edited by their dump path (setup.c writes through to the target). */
	assert_int_equal(plan.n, 7);
	assert_idempotent(&c, &plan);
	setup_plan_free(&plan);
	nginx_conf_free(&c);
	free(dump);
}

static void test_partly_set_up(void **state)
{
	struct nginx_conf c = {0};
	struct setup_plan plan;
	const struct setup_edit *e;
	size_t len;
	char *dump = fixture("setup-partial.txt", &len);

	(void)state;
	plan_of(dump, len, &c, &plan);
	/* main and events are included already; the operator's stub_status and ngxat_json log stay theirs. */
	assert_false(plan.adds_status);
	assert_false(plan.adds_log);
	assert_int_equal(plan.nnotes, 2);
	assert_non_null(strstr(plan.notes[0], "/tmp-layouts/partial/conf.d/status.conf:4"));
	e = edit_of(&plan, "/tmp-layouts/partial/nginx.conf");
	assert_non_null(e);
	assert_int_equal(e->len_new, e->len_old + strlen("\n\tinclude /etc/nginx/ngx-autotune/http.conf;") +
					     strlen("\n\tinclude /etc/nginx/ngx-autotune/setup.conf;"));
	assert_null(edit_of(&plan, "/etc/nginx/ngx-autotune/main.conf"));
	assert_null(edit_of(&plan, "/etc/nginx/ngx-autotune/events.conf"));
	assert_non_null(edit_of(&plan, "/etc/nginx/ngx-autotune/http.conf"));
	/* Its own file has neither a second log_format ngxat_json (nginx -t would fail) nor a log nor a server. */
	e = edit_of(&plan, "/etc/nginx/ngx-autotune/setup.conf");
	assert_non_null(e);
	assert_false(has(e, "log_format"));
	assert_false(has(e, "access_log"));
	assert_false(has(e, "server"));
	assert_int_equal(plan.n, 3);
	assert_idempotent(&c, &plan);
	setup_plan_free(&plan);
	nginx_conf_free(&c);
	free(dump);
}

static void test_refused_layouts(void **state)
{
	static const struct {
		const char *dump;
		const char *why;
	} cases[] = {
		{"# configuration file /x/nginx.conf:\nevents { worker_connections 64; }\nhttp {\n}\n\n",
		 "/x/nginx.conf:1: the events block opens and closes on one line"},
		{"# configuration file /x/nginx.conf:\nevents {\n}\n\n", "/x/nginx.conf has no http block"},
		{"# configuration file /x/nginx.conf:\nevents {\n}\nhttp {\n\tserver {\n\t\tinclude "
		 "/etc/nginx/ngx-autotune/http.conf;\n\t}\n}\n\n# configuration file /etc/nginx/ngx-autotune/http.conf:\n"
		 "\n\n",
		 "/etc/nginx/ngx-autotune/http.conf is included in http/server, not in http"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nginx_conf c = {0};
		struct setup_plan plan;
		char err[512] = "";

		assert_int_equal(nginx_conf_parse(cases[i].dump, strlen(cases[i].dump), &c, err, sizeof(err)), 0);
		assert_int_equal(setup_plan_nginx(&c, &params, &plan, err, sizeof(err)), -EINVAL);
		if (strncmp(err, cases[i].why, strlen(cases[i].why)) != 0)
			fail_msg("case %zu: %s", i, err);
		assert_int_equal(plan.n, 0);
		nginx_conf_free(&c);
	}
}

static void test_ini_set(void **state)
{
	static const struct {
		const char *in, *key, *value, *out;
	} cases[] = {
		/* The shipped file: the commented default stays, the key follows the section header. */
		{"[agent]\n# x = 1\n\n[nginx]\n# stub_status_url = http://127.0.0.1/nginx_status\n[tuning]\n",
		 "stub_status_url", "http://127.0.0.1:8190/nginx_status",
		 "[agent]\n# x = 1\n\n[nginx]\nstub_status_url = http://127.0.0.1:8190/nginx_status\n"
		 "# stub_status_url = http://127.0.0.1/nginx_status\n[tuning]\n"},
		/* Set already: replaced in place, other sections' keys of the same name untouched. */
		{"[probes]\naccess_log = 1\n[nginx]\n  access_log=/a.log\nerror_log = /e\n", "access_log", "/b.log",
		 "[probes]\naccess_log = 1\n[nginx]\n  access_log = /b.log\nerror_log = /e\n"},
		/* A longer key that starts with KEY is another key. */
		{"[nginx]\naccess_log_x = 1\n", "access_log", "/b.log", "[nginx]\naccess_log = /b.log\naccess_log_x = 1\n"},
		/* No section: appended; no file: created. */
		{"[agent]\nlog_level = debug", "access_log", "/b.log", "[agent]\nlog_level = debug\n\n[nginx]\naccess_log = /b.log\n"},
		{"", "access_log", "/b.log", "[nginx]\naccess_log = /b.log\n"},
		/* A header without a newline at the end of the file. */
		{"[nginx]", "access_log", "/b.log", "[nginx]\naccess_log = /b.log\n"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out;
		size_t len;

		assert_int_equal(setup_ini_set(cases[i].in, strlen(cases[i].in), "nginx", cases[i].key, cases[i].value,
					       &out, &len), 0);
		if (strcmp(out, cases[i].out) != 0)
			fail_msg("case %zu:\n%s\n--- wanted\n%s", i, out, cases[i].out);
		assert_int_equal(len, strlen(cases[i].out));
		free(out);
	}
}

/*
 * The file a running master was started with, as nginx resolves it (ngx_get_options, then ngx_process_options).
 * The expected paths are nginx's own: each case with a filesystem behind it was checked with nginx 1.22.1's
 * `nginx -t` (its "the configuration file X syntax is ok"), e.g. `-p pp -c sub/x.conf` from /tmp/w reads
 * /tmp/w/pp/sub/x.conf and a relative -c without -p on Debian reads /usr/share/nginx/sub/x.conf; DEBIAN is the
 * real `nginx -V` of Debian 12's nginx; a build without --prefix or --conf-path prints an empty argument list.
 */
static void test_running_conf(void **state)
{
	static const char stock[] = "nginx version: nginx/1.25.3\nbuilt by gcc 12.2.0 (Debian 12.2.0-14)\n"
				    "configure arguments:\n";
	static const char quoted[] = "nginx version: nginx/1.25.3\nconfigure arguments: --with-cc-opt='-O2 "
				     "--prefix=/not' --prefix=/opt/ng --conf-path='/etc/my nginx/n.conf'\n";
	char *debian, longc[5200];
	size_t dlen;
	struct {
		const char *title, *cwd;
		int version; /* 0: none (nginx -V did not run), 1: Debian's, 2: a stock build's, 3: quoted values */
		int rc;
		const char *conf, *prefix, *err;
		bool builtin;
	} cases[] = {
		/* Debian's unit: no -c, the compiled-in --conf-path. */
		{"nginx: master process /usr/sbin/nginx -g daemon on; master_process on;", "/", 1, 0,
		 "/etc/nginx/nginx.conf", "", NULL, true},
		/* The tester's copy: -c wins, nginx -V is not needed. */
		{"nginx: master process nginx -c /tmp/t/nginx/nginx.conf -e /tmp/t/logs/error.log", "/root", 0, 0,
		 "/tmp/t/nginx/nginx.conf", "", NULL, false},
		{"nginx: master process nginx -p /srv/n -c conf/site.conf", "/", 0, 0, "/srv/n/conf/site.conf",
		 "/srv/n", NULL, false},
		/* A relative -p is under the master's working directory. */
		{"nginx: master process nginx -p pp -c sub/x.conf", "/tmp/w", 0, 0, "/tmp/w/pp/sub/x.conf", "/tmp/w/pp",
		 NULL, false},
		/* A relative -c without -p: under the compiled-in prefix. */
		{"nginx: master process nginx -c sub/x.conf", "/tmp/w", 1, 0, "/usr/share/nginx/sub/x.conf", "", NULL,
		 false},
		/* Debian's absolute --conf-path ignores -p; a stock build's relative one is under it. */
		{"nginx: master process nginx -p /srv", "/", 1, 0, "/etc/nginx/nginx.conf", "/srv", NULL, true},
		{"nginx: master process nginx -p /srv/n/", "/", 2, 0, "/srv/n/conf/nginx.conf", "/srv/n", NULL, true},
		{"nginx: master process ./sbin/nginx", "/usr/local/nginx", 2, 0, "/usr/local/nginx/conf/nginx.conf", "",
		 NULL, true},
		{"nginx: master process nginx", "/", 3, 0, "/etc/my nginx/n.conf", "", NULL, true},
		{"nginx: master process nginx -c n.conf", "/", 3, 0, "/opt/ng/n.conf", "", NULL, false},
		/* Flags as nginx reads them; "." and "//" taken out of the path. */
		{"nginx: master process nginx -qc./a//b.conf -p /x/", "/", 0, 0, "/x/a/b.conf", "/x", NULL, false},
		{"nginx: master process nginx -c /etc/nginx/./nginx.conf", "/", 0, 0, "/etc/nginx/nginx.conf", "", NULL,
		 false},
		/* Bad input: a clear error. */
		{"nginx: worker process", "/", 1, -EINVAL, NULL, NULL, "not an nginx master's command line", false},
		{"", "/", 1, -EINVAL, NULL, NULL, "not an nginx master's command line: \"\"", false},
		{"nginx: master process nginx -c", "/", 1, -EBADMSG, NULL, NULL, "a -c or -p without its value", false},
		{"nginx: master process /usr/sbin/nginx", "/", 0, -EINVAL, NULL, NULL,
		 "the master runs no -c, and nginx's compiled-in configuration path is unknown: nginx -V did not run",
		 false},
		{"nginx: master process nginx -c x.conf", "/", 0, -EINVAL, NULL, NULL,
		 "the master runs -c x.conf without -p, and nginx's compiled-in prefix is unknown", false},
		{"nginx: master process nginx -p pp -c /a.conf", NULL, 0, -EINVAL, NULL, NULL,
		 "the master runs -p pp, relative to a working directory that is unknown", false},
		{longc, "/", 0, -ENAMETOOLONG, NULL, NULL, "a path too long", false},
	};

	(void)state;
	debian = fixture("../nginx-V/debian-12.txt", &dlen);
	snprintf(longc, sizeof(longc), "nginx: master process nginx -c /%05000d", 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *v = cases[i].version == 1 ? debian : cases[i].version == 2 ? stock :
				cases[i].version == 3 ? quoted : NULL;
		struct setup_running run;
		char err[512] = "";
		int r = setup_running_conf(cases[i].title, cases[i].cwd, v, &run, err, sizeof(err));

		if (r != cases[i].rc)
			fail_msg("case %zu: rc %d, wanted %d (%s)", i, r, cases[i].rc, err);
		if (r < 0) {
			if (!strstr(err, cases[i].err))
				fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, err, cases[i].err);
			continue;
		}
		if (strcmp(run.conf, cases[i].conf) != 0 || strcmp(run.prefix, cases[i].prefix) != 0 ||
		    run.builtin != cases[i].builtin)
			fail_msg("case %zu: conf %s prefix \"%s\" builtin %d, wanted %s \"%s\" %d", i, run.conf,
				 run.prefix, run.builtin, cases[i].conf, cases[i].prefix, cases[i].builtin);
	}
	free(debian);
}

/* nginx -V's compiled-in paths; what is not nginx -V's output is refused. */
static void test_nginx_builtin(void **state)
{
	char prefix[256], conf[256], err[256];
	char *debian;
	size_t dlen;

	(void)state;
	debian = fixture("../nginx-V/debian-12.txt", &dlen);
	assert_int_equal(setup_nginx_builtin(debian, prefix, sizeof(prefix), conf, sizeof(conf), err, sizeof(err)), 0);
	assert_string_equal(prefix, "/usr/share/nginx");
	assert_string_equal(conf, "/etc/nginx/nginx.conf");
	assert_int_equal(setup_nginx_builtin("nginx version: nginx/1.25.3\n", prefix, sizeof(prefix), conf,
					     sizeof(conf), err, sizeof(err)), 0);
	assert_string_equal(prefix, "/usr/local/nginx/");
	assert_string_equal(conf, "conf/nginx.conf");
	assert_int_equal(setup_nginx_builtin("Usage: nginx [-?hvVtTq]\n", prefix, sizeof(prefix), conf, sizeof(conf),
					     err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "not what nginx -V prints"));
	assert_int_equal(setup_nginx_builtin(NULL, prefix, sizeof(prefix), conf, sizeof(conf), err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(setup_nginx_builtin(debian, prefix, 8, conf, sizeof(conf), err, sizeof(err)), -ENAMETOOLONG);
	free(debian);
}

/* A -c with blanks: the title splits it into words, and [nginx] conf is taken only as -c's whole value. */
static void test_title_names(void **state)
{
	static const struct {
		const char *title, *path;
		bool names;
	} cases[] = {
		{"nginx: master process nginx -c /srv/my nginx/nginx.conf", "/srv/my nginx/nginx.conf", true},
		{"nginx: master process nginx -qc/srv/my nginx/n.conf -p /srv", "/srv/my nginx/n.conf", true},
		{"nginx: master process nginx -c /srv/my nginx/nginx.conf.bak", "/srv/my nginx/nginx.conf", false},
		{"nginx: master process nginx -e /srv/my nginx/nginx.conf", "/srv/my nginx/nginx.conf", false},
		{"nginx: master process nginx -c /a -g pid /srv/my nginx/nginx.conf;", "/srv/my nginx/nginx.conf",
		 false},
		{"nginx: master process nginx -xc /srv/n.conf", "/srv/n.conf", false},
		{"nginx: master process nginx -c /srv/n.conf", "", false},
		{NULL, "/srv/n.conf", false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (setup_title_names(cases[i].title, cases[i].path) != cases[i].names)
			fail_msg("case %zu: %s", i, cases[i].names ? "not found" : "found");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stock_debian),
		cmocka_unit_test(test_sites_and_conf_d),
		cmocka_unit_test(test_partly_set_up),
		cmocka_unit_test(test_refused_layouts),
		cmocka_unit_test(test_ini_set),
		cmocka_unit_test(test_running_conf),
		cmocka_unit_test(test_nginx_builtin),
		cmocka_unit_test(test_title_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
