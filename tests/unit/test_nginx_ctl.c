/*
 * Tests for nginx_ctl's runner and dump cache, against a stand-in nginx: a shell script that counts its runs,
 * prints a dump whose worker_connections is the number of the run (so each test knows which run a dump came
 * from), and fails like nginx does while a file FAIL exists. While BIG exists it prints a dump with a comment of
 * that many bytes; while NOMEM exists it fails as nginx does when an allocation fails; while LIMITED exists it
 * waits until its data limit (ulimit -d, KiB) is the number in LIMITED and writes it to "limit". The dump's age is
 * measured with the now_ms the tests hand in, never a clock; a stale dump is refreshed in the background only when
 * there is a loop to run it on.
 */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "act/knob.h"
#include "act/nginx_conf.h"
#include "act/nginx_ctl.h"

struct fx {
	char dir[64];
	char bin[128];
	struct knob_env env;
	struct nginx_ctl *ctl;
	uv_loop_t loop;
};

static void path_in(const struct fx *f, const char *name, char *out, size_t n)
{
	assert_true((size_t)snprintf(out, n, "%s/%s", f->dir, name) < n);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	FILE *fp;

	assert_non_null(f);
	strcpy(f->dir, "/tmp/ngxat-test-nginx-ctl.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	path_in(f, "nginx", f->bin, sizeof(f->bin));
	fp = fopen(f->bin, "w");
	assert_non_null(fp);
	fprintf(fp, "#!/bin/sh\n"
		    "cd '%s' || exit 9\n"
		    "n=$(( $(cat runs 2>/dev/null || echo 0) + 1 ))\n"
		    "echo $n > runs\n"
		    "echo \"$*\" >> args\n"
		    "if [ -e LIMITED ]; then\n"
		    "  while [ \"$(ulimit -d)\" != \"$(cat LIMITED)\" ]; do :; done; ulimit -d > limit\n"
		    "fi\n"
		    "if [ -e FAIL ]; then\n"
		    "  echo 'nginx: [emerg] unknown directive \"bogus\" in /x/nginx.conf:3' >&2; exit 1\n"
		    "fi\n"
		    "if [ -e NOMEM ]; then\n"
		    "  echo \"nginx: [emerg] malloc(2097152) failed (12: Cannot allocate memory)\" >&2\n"
		    "  echo 'nginx: configuration file /x/nginx.conf test failed' >&2; exit 1\n"
		    "fi\n"
		    "if [ -e BIG ]; then\n"
		    "  printf '# configuration file /x/nginx.conf:\\nevents { worker_connections %%s; }\\n#' $n\n"
		    "  head -c $(cat BIG) /dev/zero | tr '\\0' x; printf '\\n\\n'; exit 0\n"
		    "fi\n"
		    "case \" $* \" in *' -V '*)\n"
		    "  printf 'nginx version: nginx/1.22.1\\nconfigure arguments: --prefix=/usr/share/nginx\\n' >&2;;\n"
		    "esac\n"
		    "case \" $* \" in *' -T '*)\n"
		    "  printf '# configuration file /x/nginx.conf:\\nevents { worker_connections %%s; }\\n\\n' $n;;\n"
		    "esac\n"
		    "exit 0\n",
		f->dir);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(f->bin, 0755), 0);
	f->env.root = "/";
	f->env.nginx_bin = f->bin;
	f->env.nginx_conf = "/x/nginx.conf";
	f->env.nginx_timeout_ms = 10000;
	assert_int_equal(nginx_ctl_new(&f->ctl), 0);
	f->env.nginx = f->ctl;
	assert_int_equal(uv_loop_init(&f->loop), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	uv_run(&f->loop, UV_RUN_DEFAULT);
	nginx_ctl_free(f->ctl);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* The number in the stand-in's file NAME, 0 when there is none. */
static int file_number(const struct fx *f, const char *name)
{
	char p[128];
	FILE *fp;
	int n = 0;

	path_in(f, name, p, sizeof(p));
	fp = fopen(p, "r");
	if (!fp)
		return 0;
	assert_int_equal(fscanf(fp, "%d", &n), 1);
	fclose(fp);
	return n;
}

/* How many times the stand-in ran. */
static int runs(const struct fx *f)
{
	return file_number(f, "runs");
}

/* Create the stand-in's file NAME holding TEXT, or (TEXT NULL) remove it. */
static void set_file(const struct fx *f, const char *name, const char *text)
{
	char p[128];
	FILE *fp;

	path_in(f, name, p, sizeof(p));
	if (!text) {
		assert_int_equal(unlink(p), 0);
		return;
	}
	fp = fopen(p, "w");
	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static void set_fail(const struct fx *f, bool on)
{
	set_file(f, "FAIL", on ? "" : NULL);
}

/* The run a dump came from (its worker_connections). */
static int run_of(const struct nginx_conf *c)
{
	struct nginx_conf_directive d;
	char err[256];

	assert_non_null(c);
	assert_int_equal(nginx_conf_find(c, "events", "worker_connections", &d, err, sizeof(err)), 0);
	return atoi(d.args[0]);
}

static void test_dump_age(void **state)
{
	struct fx *f = *state;
	const struct nginx_conf *c;
	char why[256];
	int rc;

	nginx_ctl_hold(f->ctl);
	/* no dump yet, no loop: nothing to return, nothing started */
	assert_null(nginx_ctl_conf_peek(f->ctl, &f->env));
	assert_int_equal(runs(f), 0);
	f->env.now_ms = 1000;
	c = nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why));
	assert_int_equal(rc, 0);
	assert_int_equal(run_of(c), 1);
	/* within 2 s of it (a probe pass): shared */
	f->env.now_ms = 3000;
	assert_int_equal(run_of(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why))), 1);
	f->env.now_ms = 3001;
	assert_int_equal(run_of(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why))), 2);
	/* time that went back says nothing about the dump's age */
	f->env.now_ms = 2000;
	assert_int_equal(run_of(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why))), 3);
	/* reads take any age; without a loop they never spawn */
	f->env.now_ms = 1000000;
	assert_int_equal(run_of(nginx_ctl_conf_peek(f->ctl, &f->env)), 3);
	assert_int_equal(runs(f), 3);
	/* with a loop: refreshed in the background past 30 s, and the old one served meanwhile */
	f->env.loop = &f->loop;
	f->env.now_ms = 2000 + 30000;
	assert_int_equal(run_of(nginx_ctl_conf_peek(f->ctl, &f->env)), 3);
	assert_false(uv_loop_alive(&f->loop));
	f->env.now_ms = 2000 + 30001;
	assert_int_equal(run_of(nginx_ctl_conf_peek(f->ctl, &f->env)), 3);
	assert_true(uv_loop_alive(&f->loop));
	/* one refresh at a time */
	assert_int_equal(run_of(nginx_ctl_conf_peek(f->ctl, &f->env)), 3);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(runs(f), 4);
	assert_int_equal(run_of(nginx_ctl_conf_peek(f->ctl, &f->env)), 4);
	assert_false(uv_loop_alive(&f->loop));
	/* the last driver gone: forgotten */
	nginx_ctl_drop(f->ctl);
	f->env.loop = NULL;
	assert_null(nginx_ctl_conf_peek(f->ctl, &f->env));
}

static void test_dump_fails(void **state)
{
	struct fx *f = *state;
	char why[256] = "";
	int rc;

	nginx_ctl_hold(f->ctl);
	set_fail(f, true);
	assert_null(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why)));
	assert_int_equal(rc, -EIO);
	assert_string_equal(why, "[emerg] unknown directive \"bogus\" in /x/nginx.conf:3");
	/* the other probes of the same pass share the failure: one run, not one per knob */
	set_fail(f, false);
	why[0] = '\0';
	f->env.now_ms = 2000;
	assert_null(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why)));
	assert_int_equal(rc, -EIO);
	assert_string_equal(why, "[emerg] unknown directive \"bogus\" in /x/nginx.conf:3");
	assert_int_equal(runs(f), 1);
	/* and no longer */
	f->env.now_ms = 2001;
	assert_int_equal(run_of(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why))), 2);
	/* the agent's reload (nginx_ctl_forget) runs it again at once */
	set_fail(f, true);
	f->env.now_ms = 10000;
	assert_null(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why)));
	set_fail(f, false);
	nginx_ctl_forget(f->ctl);
	assert_int_equal(run_of(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why))), 4);
	/* and a failure after the reload is shared by the rest of its pass too (it was not: each of the 12 nginx knobs
	 * of the big-conf test ran nginx -T, 0.9 s each, holding the loop 10 s) */
	set_fail(f, true);
	nginx_ctl_forget(f->ctl);
	f->env.now_ms = 20000;
	for (int i = 0; i < 5; i++) {
		assert_null(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why)));
		assert_int_equal(rc, -EIO);
	}
	assert_int_equal(runs(f), 5);
	/* the next reload: runs again */
	nginx_ctl_forget(f->ctl);
	assert_null(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why)));
	assert_int_equal(runs(f), 6);
	nginx_ctl_drop(f->ctl);
}

/*
 * The bounds of issue 22 (R5): a dump above [nginx] dump_max is read to its end, counted and refused (the agent
 * keeps at most the bound of it); nginx runs with [nginx] memory_max as its data limit, and running out of it is
 * told apart from a configuration nginx refuses.
 */
static void test_dump_bounds(void **state)
{
	struct fx *f = *state;
	const struct nginx_conf *c;
	char why[256] = "", text[32];
	int rc;

	nginx_ctl_hold(f->ctl);
	f->env.nginx_dump_max = 64 << 10;
	f->env.nginx_memory_max = 8 << 20;
	/* under the bound: kept and parsed, the file whole (the events line, "#", the comment and its line break) */
	set_file(f, "BIG", "65000");
	f->env.now_ms = 1000;
	c = nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why));
	assert_int_equal(rc, 0);
	assert_int_equal(run_of(c), 1);
	assert_int_equal(c->files[0].len, 33 + 1 + 65000 + 1);
	/* over it: refused, with the size nginx printed and the setting */
	set_file(f, "BIG", "100000");
	f->env.now_ms = 10000;
	assert_null(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why)));
	assert_int_equal(rc, -EFBIG);
	assert_string_equal(why, "nginx -T printed 97.7 KiB, more than the 64 KiB the agent reads ([nginx] dump_max)");
	set_file(f, "BIG", NULL);
	/* the child runs with the data limit (8 MiB is 8192 KiB for ulimit -d) */
	snprintf(text, sizeof(text), "%d", 8 << 10);
	set_file(f, "LIMITED", text);
	f->env.now_ms = 20000;
	assert_int_equal(run_of(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why))), 3);
	assert_int_equal(file_number(f, "limit"), 8 << 10);
	set_file(f, "LIMITED", NULL);
	/* nginx out of that memory: -ENOMEM with the setting, not -EIO (a refused configuration) */
	set_file(f, "NOMEM", "");
	f->env.now_ms = 30000;
	assert_null(nginx_ctl_conf(f->ctl, &f->env, &rc, why, sizeof(why)));
	assert_int_equal(rc, -ENOMEM);
	assert_string_equal(why, "nginx -T ran out of memory within the 8 MiB the agent lets it use ([nginx] memory_max): "
				 "[emerg] malloc(2097152) failed (12: Cannot allocate memory)");
	nginx_ctl_drop(f->ctl);
}

/* This process's children (zombies included: the loop has not reaped them). */
static int children(void)
{
	char path[300], buf[512], *p;
	struct dirent *de;
	int n = 0;
	DIR *d = opendir("/proc");

	assert_non_null(d);
	while ((de = readdir(d))) {
		FILE *fp;
		long ppid;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fp = fopen(path, "r");
		if (!fp)
			continue;
		if (fgets(buf, sizeof(buf), fp) && (p = strrchr(buf, ')')) && sscanf(p + 1, " %*c %ld", &ppid) == 1 &&
		    ppid == (long)getpid())
			n++;
		fclose(fp);
	}
	closedir(d);
	return n;
}

struct order {
	int seen[4];
	int n;
};

static void on_dump_order(int rc, const char *msg, char *out, size_t len, void *ctx)
{
	struct order *o = ctx;
	struct nginx_conf c;
	char err[256];

	(void)msg;
	assert_int_equal(rc, 0);
	assert_int_equal(nginx_conf_parse_owned(out, len, &c, err, sizeof(err)), 0);
	o->seen[o->n++] = run_of(&c);
	nginx_conf_free(&c);
}

/* The refresh of the dump and the doctor's nginx -T run one after the other, never side by side: each may use
 * [nginx] memory_max, and two would need twice that in the agent's cgroup. */
static void test_one_child(void **state)
{
	struct fx *f = *state;
	struct order o = { 0 };

	nginx_ctl_hold(f->ctl);
	f->env.loop = &f->loop;
	f->env.now_ms = 1000;
	assert_int_equal(children(), 0);
	assert_null(nginx_ctl_conf_peek(f->ctl, &f->env)); /* starts the refresh */
	assert_int_equal(nginx_ctl_dump(&f->env, on_dump_order, &o), 0);
	assert_int_equal(nginx_ctl_dump(&f->env, on_dump_order, &o), 0);
	/* uv_spawn returns once the child has exec'd: only the first one runs (or has ended, unreaped) */
	assert_int_equal(children(), 1);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(runs(f), 3);
	assert_int_equal(run_of(nginx_ctl_conf_peek(f->ctl, &f->env)), 1);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.seen[0], 2);
	assert_int_equal(o.seen[1], 3);
	nginx_ctl_drop(f->ctl);
}

/* A refresh that failed is not tried again at every read: once per 30 s, or at once after nginx_ctl_forget. */
static void test_refresh_failed(void **state)
{
	struct fx *f = *state;

	nginx_ctl_hold(f->ctl);
	f->env.loop = &f->loop;
	set_fail(f, true);
	f->env.now_ms = 1000;
	assert_null(nginx_ctl_conf_peek(f->ctl, &f->env));
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(runs(f), 1);
	f->env.now_ms = 31000;
	assert_null(nginx_ctl_conf_peek(f->ctl, &f->env));
	assert_false(uv_loop_alive(&f->loop));
	f->env.now_ms = 31001;
	assert_null(nginx_ctl_conf_peek(f->ctl, &f->env));
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(runs(f), 2);
	set_fail(f, false);
	nginx_ctl_forget(f->ctl);
	assert_null(nginx_ctl_conf_peek(f->ctl, &f->env));
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(run_of(nginx_ctl_conf_peek(f->ctl, &f->env)), 3);
	nginx_ctl_drop(f->ctl);
}

/* The setup's runs (ngx-autotune --setup): blocking, with the environment's -p and -c; nginx -V's text comes from
 * its standard error, where nginx prints it; a failure is nginx's message; only -t, -T and -V are run. */
static void test_run_for_setup(void **state)
{
	struct fx *f = *state;
	char msg[256] = "", *out, args[256] = "", p[128];
	size_t len;
	FILE *fp;

	f->env.nginx_prefix = "/srv/n";
	assert_int_equal(nginx_ctl_run(&f->env, "-V", &out, &len, msg, sizeof(msg)), 0);
	assert_string_equal(out, "nginx version: nginx/1.22.1\nconfigure arguments: --prefix=/usr/share/nginx\n");
	assert_int_equal(len, strlen(out));
	free(out);
	assert_int_equal(nginx_ctl_run(&f->env, "-T", &out, &len, msg, sizeof(msg)), 0);
	assert_string_equal(out, "# configuration file /x/nginx.conf:\nevents { worker_connections 2; }\n\n");
	free(out);
	path_in(f, "args", p, sizeof(p));
	fp = fopen(p, "r");
	assert_non_null(fp);
	assert_non_null(fgets(args, sizeof(args), fp));
	assert_string_equal(args, "-q -V -p /srv/n -c /x/nginx.conf\n");
	fclose(fp);
	set_fail(f, true);
	assert_int_equal(nginx_ctl_run(&f->env, "-t", &out, &len, msg, sizeof(msg)), -EIO);
	assert_null(out);
	assert_string_equal(msg, "[emerg] unknown directive \"bogus\" in /x/nginx.conf:3");
	assert_int_equal(nginx_ctl_run(&f->env, "-s", &out, &len, msg, sizeof(msg)), -EINVAL);
	assert_int_equal(runs(f), 3);
}

struct got {
	int calls, rc;
	char msg[256];
	char *out; /* LEN bytes, not NUL-terminated */
	size_t len;
};

static void on_dump(int rc, const char *msg, char *out, size_t len, void *ctx)
{
	struct got *g = ctx;

	g->len = len;
	g->calls++;
	g->rc = rc;
	snprintf(g->msg, sizeof(g->msg), "%s", msg ? msg : "");
	g->out = out;
}

/* The doctor's nginx -T: the same binary and arguments, no cache. */
static void test_dump_for_doctor(void **state)
{
	struct fx *f = *state;
	static const char dump[] = "# configuration file /x/nginx.conf:\nevents { worker_connections 1; }\n\n";
	struct got g = {0};
	char p[128], args[256];
	FILE *fp;

	f->env.loop = &f->loop;
	assert_int_equal(nginx_ctl_dump(&f->env, on_dump, &g), 0);
	assert_int_equal(g.calls, 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(g.calls, 1);
	assert_int_equal(g.rc, 0);
	assert_non_null(g.out);
	assert_int_equal(g.len, strlen(dump));
	assert_memory_equal(g.out, dump, g.len);
	free(g.out);
	set_fail(f, true);
	memset(&g, 0, sizeof(g));
	assert_int_equal(nginx_ctl_dump(&f->env, on_dump, &g), 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(g.calls, 1);
	assert_int_equal(g.rc, -EIO);
	assert_null(g.out);
	assert_string_equal(g.msg, "[emerg] unknown directive \"bogus\" in /x/nginx.conf:3");
	path_in(f, "args", p, sizeof(p));
	fp = fopen(p, "r");
	assert_non_null(fp);
	assert_non_null(fgets(args, sizeof(args), fp));
	fclose(fp);
	assert_string_equal(args, "-q -T -c /x/nginx.conf\n");
}

static int freed;

static void count_free(void *priv)
{
	freed++;
	free(priv);
}

static void no_dump(struct nginx_change *ch, const struct nginx_conf *c)
{
	(void)c;
	fail_msg("a refused change reached nginx -T");
	nginx_change_finish(ch, -EIO, NULL);
}

static void no_done(struct knob *k, int result, const char *msg, void *ctx)
{
	(void)k;
	(void)result;
	(void)msg;
	(void)ctx;
	fail_msg("a refused change completed");
}

/* Refused before any child runs, the driver's state freed, and nothing left in flight. */
static void test_change_refused(void **state)
{
	static const struct nginx_change_ops ops = {.dumped = no_dump, .free = count_free};
	struct fx *f = *state;
	struct nginx_change *slot = NULL;
	struct knob_policy *pol = NULL;
	struct knob k;
	char why[256];

	memset(&k, 0, sizeof(k));
	strcpy(k.name, "nginx.worker_connections");
	k.pol = pol;
	k.env = &f->env;
	freed = 0;
	assert_int_equal(nginx_change_start(&k, &ops, malloc(8), &slot, why, sizeof(why), no_done, NULL), -EINVAL);
	assert_string_equal(why, "no event loop");
	f->env.loop = &f->loop;
	f->env.nginx_pid = 0;
	assert_int_equal(nginx_change_start(&k, &ops, malloc(8), &slot, why, sizeof(why), no_done, NULL), -ESRCH);
	assert_string_equal(why, "no nginx master running (pid 0)");
	f->env.nginx_pid = getpid(); /* a process, not an nginx master */
	assert_int_equal(nginx_change_start(&k, &ops, malloc(8), &slot, why, sizeof(why), no_done, NULL), -ESRCH);
	assert_int_equal(freed, 3);
	assert_null(slot);
	assert_int_equal(runs(f), 0);
	assert_false(uv_loop_alive(&f->loop));
}

/* Which live sockets are nginx's: by address and port, a host name by port alone. */
static bool any_tcp(const struct nginx_listen *l)
{
	return l->family != AF_UNIX;
}

static void test_endpoints(void **state)
{
	static const struct nginx_listen l[] = {
		{ .family = AF_INET, .addr = "127.0.0.1", .port = 80 },
		{ .family = AF_INET, .addr = "127.0.0.1", .port = 80 }, /* a second server on it: one endpoint */
		{ .family = AF_INET6, .addr = "::", .port = 443 },
		{ .family = AF_UNSPEC, .addr = "web.example", .port = 8080 },
		{ .family = AF_UNIX, .addr = "/run/x.sock" },
	};
	static const struct {
		int family;
		const char *addr;
		uint16_t port;
		bool has;
	} cases[] = {
		{ AF_INET, "127.0.0.1", 80, true },
		{ AF_INET, "127.0.0.2", 80, false }, /* another daemon on nginx's port */
		{ AF_INET, "0.0.0.0", 80, false },
		{ AF_INET6, "::", 443, true },
		{ AF_INET6, "0:0::0", 443, true },   /* the same address written otherwise */
		{ AF_INET6, "::1", 443, false },
		{ AF_INET, "0.0.0.0", 443, false },  /* the family too */
		{ AF_INET, "10.1.2.3", 8080, true }, /* a host name: any address of its port */
		{ AF_INET, "127.0.0.1", 81, false },
	};
	struct nginx_endpoint *e = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(nginx_endpoints(l, sizeof(l) / sizeof(l[0]), any_tcp, &e, &n), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (nginx_endpoint_has(e, n, cases[i].family, cases[i].addr, cases[i].port) != cases[i].has)
			fail_msg("case %zu: %s port %u: want %d", i, cases[i].addr, cases[i].port, cases[i].has);
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dump_age, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dump_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dump_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_child, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh_failed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dump_for_doctor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_for_setup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_change_refused, setup, teardown),
		cmocka_unit_test(test_endpoints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
