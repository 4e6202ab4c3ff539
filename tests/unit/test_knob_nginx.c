/*
 * Tests for the nginx knob drivers that edit the operator's files (act/knob_nginx.c: gzip_comp_level in every place
 * it is set, worker_connections with the workers' file limit; act/knob_upstream.c: upstream keepalive), against a
 * fake root and the real nginx binary: `nginx -T` and `nginx -t` run on the test's own configuration files (so what
 * the drivers write must pass nginx's own checks), while nginx's master is a child of this test standing in for it.
 * Its /proc entries live under the fake root; on SIGHUP it "reloads": a new worker appears in its children (the
 * generation nginx_ctl waits for), with the limits the test put in ROOT/worker-limits. Every file is compared byte
 * for byte with what it must be; no sleeps: each write runs the loop until the driver reports.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "act/knob.h"
#include "act/nginx_ctl.h"
#include "core/policy.h"
#include "testskip.h"

#define WORKER_BASE 3000000 /* the fake workers' pids (never looked up as real processes: ROOT/proc only) */

struct fx {
	char dir[64];
	char root[96];
	char etc[96];
	char inc[128];
	char nginx[PATH_MAX];
	char conf[160];
	pid_t master;
	uv_loop_t loop;
	struct nginx_ctl *ctl;
	struct knob_env env;
	struct policy_set set; /* for drivers that look at another knob's policy */
	int64_t now;
};

/* ---- files -------------------------------------------------------------------------------------------------- */

static void mkdirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(buf, 0755);
		*p = '/';
	}
	mkdir(buf, 0755);
}

static void put(const char *path, const char *content)
{
	char dir[PATH_MAX], *slash;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	mkdirs(dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(content, 1, strlen(content), f), strlen(content));
	assert_int_equal(fclose(f), 0);
}

static void putf(const char *content, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(const char *content, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	put(path, content);
}

/* The whole file at PATH (static buffer; "" with errno set when it cannot be read). */
static const char *get(const char *path)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return buf;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* A text with every "@D@" replaced by the test's directory (configurations name their own paths). */
static char *expand(const struct fx *f, const char *text)
{
	size_t dl = strlen(f->dir), cap = strlen(text) * (dl + 1) + 1, o = 0;
	char *out = malloc(cap);

	assert_non_null(out);
	for (const char *p = text; *p;) {
		if (strncmp(p, "@D@", 3) == 0) {
			memcpy(out + o, f->dir, dl);
			o += dl;
			p += 3;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
	return out;
}

/* Write TEXT (with "@D@" expanded) to the test's directory + REL. */
static void conf(const struct fx *f, const char *rel, const char *text)
{
	char *t = expand(f, text);

	putf(t, "%s%s", f->dir, rel);
	free(t);
}

/* Whether the file at REL (under the test's directory) is TEXT (with "@D@" expanded), byte for byte. */
static void assert_file(const struct fx *f, const char *rel, const char *text)
{
	char path[PATH_MAX], *want = expand(f, text);
	const char *got;

	snprintf(path, sizeof(path), "%s%s", f->dir, rel);
	got = get(path);
	if (strcmp(got, want) != 0)
		fail_msg("%s:\n--- got\n%s--- want\n%s---", rel, got, want);
	free(want);
}

/* ---- the stand-in master -------------------------------------------------------------------------------------- */

static char m_children[PATH_MAX], m_tmp[PATH_MAX], m_proc[PATH_MAX], m_limits_src[PATH_MAX];
static volatile sig_atomic_t m_gen;

static size_t utoa(unsigned long v, char *out)
{
	char tmp[24];
	size_t n = 0, k = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	while (n)
		out[k++] = tmp[--n];
	out[k] = '\0';
	return k;
}

/* Append S to BUF at *O (async-signal-safe string building). */
static void cat(char *buf, size_t *o, const char *s)
{
	size_t l = strlen(s);

	memcpy(buf + *o, s, l);
	*o += l;
	buf[*o] = '\0';
}

static void write_all(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return;
	while (len > 0) {
		ssize_t w = write(fd, data, len);

		if (w <= 0)
			break;
		data += w;
		len -= (size_t)w;
	}
	close(fd);
}

/* SIGHUP: a new generation, one worker, pid WORKER_BASE + generation (async-signal-safe calls only). */
static void on_hup(int sig)
{
	char path[PATH_MAX], num[24], buf[8192];
	size_t o = 0;
	int fd;
	ssize_t n;

	(void)sig;
	m_gen++;
	utoa(WORKER_BASE + (unsigned long)m_gen, num);
	cat(path, &o, m_proc);
	cat(path, &o, "/");
	cat(path, &o, num);
	mkdir(path, 0755);
	cat(path, &o, "/limits");
	fd = open(m_limits_src, O_RDONLY);
	n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0)
		write_all(path, buf, (size_t)n);
	o -= strlen("/limits");
	path[o] = '\0';
	cat(path, &o, "/cmdline");
	write_all(path, "nginx: worker process", 22);
	o = strlen(num);
	num[o++] = '\n';
	write_all(m_tmp, num, o);
	rename(m_tmp, m_children);
}

static void master_body(const char *root, int ready)
{
	struct sigaction sa;
	pid_t me = getpid();

	snprintf(m_children, sizeof(m_children), "%s/proc/%d/task/%d/children", root, (int)me, (int)me);
	snprintf(m_tmp, sizeof(m_tmp), "%s/proc/%d/task/%d/.children", root, (int)me, (int)me);
	snprintf(m_proc, sizeof(m_proc), "%s/proc", root);
	snprintf(m_limits_src, sizeof(m_limits_src), "%s/worker-limits", root);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	if (write(ready, "x", 1) != 1)
		_exit(1);
	close(ready);
	for (;;)
		pause();
}

#define LIMITS_FMT                                                                                               \
	"Limit                     Soft Limit           Hard Limit           Units     \n"                      \
	"Max cpu time              unlimited            unlimited            seconds   \n"                      \
	"Max open files            %lld                 %lld                 files     \n"                      \
	"Max locked memory         8388608              8388608              bytes     \n"

/* The master's soft and hard RLIMIT_NOFILE as /proc/PID/limits shows them. */
static void master_limits(struct fx *f, long long soft, long long hard)
{
	char text[512];

	snprintf(text, sizeof(text), LIMITS_FMT, soft, hard);
	putf(text, "%s/proc/%d/limits", f->root, (int)f->master);
}

/* ---- fixture -------------------------------------------------------------------------------------------------- */

static bool find_nginx(char *out, size_t n)
{
	const char *path = getenv("PATH");
	char dirs[4096];

	snprintf(dirs, sizeof(dirs), "%s:/usr/sbin:/sbin", path ? path : "");
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, n, "%s/nginx", d);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int ready[2];
	char c;

	assert_non_null(f);
	strcpy(f->dir, "/tmp/ngxat-test-knob-nginx.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->root, sizeof(f->root), "%s/root", f->dir);
	snprintf(f->etc, sizeof(f->etc), "%s/etc", f->dir);
	snprintf(f->inc, sizeof(f->inc), "%s/etc/ngx-autotune", f->dir);
	snprintf(f->conf, sizeof(f->conf), "%s/etc/nginx.conf", f->dir);
	mkdirs(f->inc);
	mkdirs(f->root);
	*state = f;
	if (!find_nginx(f->nginx, sizeof(f->nginx)))
		return 0; /* each test skips */
	assert_int_equal(pipe(ready), 0);
	f->master = fork();
	assert_true(f->master >= 0);
	if (f->master == 0) {
		close(ready[0]);
		master_body(f->root, ready[1]);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	putf("nginx: master process nginx", "%s/proc/%d/cmdline", f->root, (int)f->master);
	putf("3000000\n", "%s/proc/%d/task/%d/children", f->root, (int)f->master, (int)f->master);
	putf("nginx: worker process", "%s/proc/3000000/cmdline", f->root);
	master_limits(f, 1024, 524288);
	assert_int_equal(uv_loop_init(&f->loop), 0);
	assert_int_equal(nginx_ctl_new(&f->ctl), 0);
	f->now = 1000000;
	f->env = (struct knob_env){ .root = f->root, .loop = &f->loop, .nginx_pid = f->master, .nginx_bin = f->nginx,
				    .nginx_conf = f->conf, .include_dir = f->inc, .nginx_timeout_ms = 5000,
				    .nginx = f->ctl, .now_ms = f->now };
	policy_set_init(&f->set);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->master > 0) {
		kill(f->master, SIGKILL);
		waitpid(f->master, NULL, 0);
		nginx_ctl_free(f->ctl);
		uv_run(&f->loop, UV_RUN_DEFAULT);
		assert_int_equal(uv_loop_close(&f->loop), 0);
	}
	policy_set_free(&f->set);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void need_nginx(const struct fx *f)
{
	if (f->master <= 0)
		testskip("no nginx binary in PATH, /usr/sbin or /sbin");
}

/* ---- knobs ---------------------------------------------------------------------------------------------------- */

/* A policy of KIND for TARGET in CONTEXT of TYPE, added to the fixture's set (so drivers can find it). */
static const struct knob_policy *policy(struct fx *f, const char *name, const char *kind, const char *target,
					const char *context, const char *type, const char *min, const char *max)
{
	char err[256];
	static const char *const keys[] = { "kind", "target", "context", "type", "min", "max", "step",
					    "objective" };
	const char *vals[] = { kind, target, context, type, min, max, "+1", "http.p99_ms lower" };
	char section[96];

	snprintf(section, sizeof(section), "knob %s", name);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!vals[i] || (i == 2 && strcmp(kind, "nginx_directive") != 0))
			continue;
		if ((i == 4 || i == 5 || i == 6) && strcmp(type, "int") != 0)
			continue;
		if (policy_set_add(&f->set, "test.policy", (int)i + 1, section, keys[i], vals[i], err, sizeof(err)) < 0)
			fail_msg("%s", err);
	}
	if (policy_set_validate(&f->set, NULL, NULL, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	f->env.policies = &f->set;
	return policy_find(&f->set, name);
}

static void knob_of(struct fx *f, struct knob *k, const struct knob_policy *pol, const struct knob_ops *ops)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", pol->name);
	k->pol = pol;
	k->ops = ops;
	k->env = &f->env;
}

/* Time passes between the test's steps: the cached dump is old at the next probe. */
static void later(struct fx *f)
{
	f->now += 60000;
	f->env.now_ms = f->now;
}

struct wait {
	bool done;
	int rc;
	char msg[KNOB_WHY_MAX];
};

static void on_done(struct knob *k, int result, const char *msg, void *ctx)
{
	struct wait *w = ctx;

	(void)k;
	w->done = true;
	w->rc = result;
	snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : "");
}

/* Write VALUE and wait for the driver's report: its result, its message into MSG. */
static int wr(struct fx *f, struct knob *k, const char *value, char *msg, size_t msglen)
{
	struct wait w = { 0 };
	char why[KNOB_WHY_MAX] = "";
	int r;

	later(f);
	r = k->ops->write(k, value, why, sizeof(why), on_done, &w);
	if (r != -EINPROGRESS) {
		snprintf(msg, msglen, "%s", why);
		return r;
	}
	while (!w.done)
		uv_run(&f->loop, UV_RUN_ONCE);
	snprintf(msg, msglen, "%s", w.msg);
	return w.rc;
}

/* Read K's live value into OUT (a fresh dump first: probe takes one). */
static void rd(struct fx *f, struct knob *k, char *out, size_t n)
{
	char why[KNOB_WHY_MAX] = "";
	int r;

	later(f);
	r = k->ops->probe(k, why, sizeof(why));
	if (r < 0)
		fail_msg("probe of %s: %d %s", k->name, r, why);
	r = k->ops->read(k, out, n);
	if (r < 0)
		fail_msg("read of %s: %d", k->name, r);
	/* the read may refresh the dump in the background: let it end */
	uv_run(&f->loop, UV_RUN_DEFAULT);
}

static void expect_write(struct fx *f, struct knob *k, const char *value)
{
	char msg[KNOB_WHY_MAX], live[KNOB_VALUE_MAX];
	int r = wr(f, k, value, msg, sizeof(msg));

	if (r != 0)
		fail_msg("write %s %s: %d %s", k->name, value, r, msg);
	rd(f, k, live, sizeof(live));
	if (strcmp(live, value) != 0)
		fail_msg("write %s %s: reads back %s", k->name, value, live);
}

/* The backup path of REL in the include directory's DIR. */
static void backup_of(const struct fx *f, const char *dir, const char *rel, char *out, size_t n)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s%s", f->dir, rel);
	assert_int_equal(nginx_ctl_backup_path(&f->env, dir, path, out, n), 0);
}

/* ---- gzip_comp_level ---------------------------------------------------------------------------------------- */

static const char gz_main[] =
	"pid @D@/nginx.pid;\n"
	"error_log @D@/error.log;\n"
	"events { }\n"
	"http {\n"
	"\tinclude @D@/etc/ngx-autotune/http.conf;\n"
	"\taccess_log off;\n"
	"\tgzip on;\n"
	"\tgzip_comp_level  9 ; # by hand\n"
	"\tinclude @D@/etc/sites/*;\n"
	"}\n";
static const char gz_site[] =
	"server {\n"
	"\tlisten unix:@D@/s.sock;\n"
	"\tlocation / { return 200; }\n"
	"\tlocation /api { gzip_comp_level \"2\"; return 200; }\n"
	"\tlocation /mid {\n"
	"\t\tgzip_comp_level 7;\n"
	"\t}\n"
	"}\n";

static void gz_files(struct fx *f)
{
	conf(f, "/etc/nginx.conf", gz_main);
	conf(f, "/etc/sites/a", gz_site);
	conf(f, "/etc/ngx-autotune/http.conf", "");
}

/* Set in three places across two files: the knob is the highest; a write sets those at it and lowers any other
 * above the value; the highest value written back puts both files back byte for byte, and the backups go. */
static void test_gzip_every_place(void **state)
{
	struct fx *f = *state;
	const struct knob_policy *pol;
	char why[KNOB_WHY_MAX] = "", live[32], bmain[PATH_MAX], bsite[PATH_MAX];
	struct knob k;

	need_nginx(f);
	gz_files(f);
	pol = policy(f, "nginx.gzip_comp_level", "nginx_directive", "gzip_comp_level", "http", "int", "1", "9");
	knob_of(f, &k, pol, &knob_nginx_ops);
	assert_int_equal(k.ops->probe(&k, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "set in 3 places, the highest (9) at "));
	assert_non_null(strstr(why, "/etc/nginx.conf:8 (http)"));
	rd(f, &k, live, sizeof(live));
	assert_string_equal(live, "9");
	backup_of(f, "directive-backup", "/etc/nginx.conf", bmain, sizeof(bmain));
	backup_of(f, "directive-backup", "/etc/sites/a", bsite, sizeof(bsite));

	expect_write(f, &k, "5");
	{
		char *m = expand(f, gz_main);

		assert_string_equal(get(bmain), m); /* the operator's bytes, before the first edit */
		free(m);
	}
	assert_file(f, "/etc/sites/a",
		    "server {\n\tlisten unix:@D@/s.sock;\n\tlocation / { return 200; }\n"
		    "\tlocation /api { gzip_comp_level \"2\"; return 200; }\n\tlocation /mid {\n\t\tgzip_comp_level 5;\n"
		    "\t}\n}\n");
	assert_non_null(strstr(get(f->conf), "\tgzip_comp_level  5 ; # by hand\n"));
	assert_file(f, "/etc/ngx-autotune/http.conf", "");

	/* raised again: only the places that had the highest follow */
	expect_write(f, &k, "8");
	assert_non_null(strstr(get(f->conf), "\tgzip_comp_level  8 ; # by hand\n"));
	/* the site is back to what it had (7 and "2"): its own bytes, and its backup has done its work */
	assert_file(f, "/etc/sites/a", gz_site);
	assert_false(exists(bsite));
	assert_true(exists(bmain));
	/* below every place */
	expect_write(f, &k, "1");
	assert_non_null(strstr(get(f->conf), "\tgzip_comp_level  1 ; # by hand\n"));
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/etc/sites/a", f->dir);
		assert_non_null(strstr(get(path), "location /api { gzip_comp_level 1; return 200; }"));
		assert_non_null(strstr(get(path), "\t\tgzip_comp_level 1;\n"));
	}
	/* the first value: byte for byte, the "2" as the operator wrote it, no backup left */
	expect_write(f, &k, "9");
	assert_file(f, "/etc/nginx.conf", gz_main);
	assert_file(f, "/etc/sites/a", gz_site);
	assert_false(exists(bmain));
	assert_false(exists(bsite));
	{
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s/directive-backup", f->inc);
		assert_false(exists(dir));
	}
	k.ops->release(&k);
}

/* An operator's edit of a file between the change and the way back stays; the backup, which no byte-for-byte way
 * back can use any more, goes. A value nginx -t refuses changes nothing and leaves no backup. */
static void test_gzip_edited_and_refused(void **state)
{
	struct fx *f = *state;
	const struct knob_policy *pol;
	char msg[KNOB_WHY_MAX], bsite[PATH_MAX], path[PATH_MAX];
	struct knob k;

	need_nginx(f);
	gz_files(f);
	pol = policy(f, "nginx.gzip_comp_level", "nginx_directive", "gzip_comp_level", "http", "int", "1", "9");
	knob_of(f, &k, pol, &knob_nginx_ops);
	backup_of(f, "directive-backup", "/etc/sites/a", bsite, sizeof(bsite));
	snprintf(path, sizeof(path), "%s/etc/sites/a", f->dir);

	/* nginx refuses 10: its message, the files as they were, no backup */
	assert_int_equal(wr(f, &k, "10", msg, sizeof(msg)), -EINVAL);
	if (!strstr(msg, "[emerg] value must be between 1 and 9 in ") || !strstr(msg, "/etc/nginx.conf:8"))
		fail_msg("nginx -t's message: %s", msg);
	assert_file(f, "/etc/nginx.conf", gz_main);
	assert_file(f, "/etc/sites/a", gz_site);
	assert_false(exists(bsite));

	expect_write(f, &k, "4");
	{
		char *edited = expand(f, gz_site), *t = NULL;
		const char *cur = get(path);

		/* the operator adds a location to the site as it is now */
		assert_non_null(strstr(cur, "gzip_comp_level 4;"));
		t = malloc(strlen(cur) + 64);
		assert_non_null(t);
		strcpy(t, cur);
		strcpy(strrchr(t, '}'), "\tlocation /new { return 204; }\n}\n");
		put(path, t);
		free(t);
		free(edited);
	}
	expect_write(f, &k, "9");
	assert_file(f, "/etc/nginx.conf", gz_main);
	assert_file(f, "/etc/sites/a",
		    "server {\n\tlisten unix:@D@/s.sock;\n\tlocation / { return 200; }\n"
		    "\tlocation /api { gzip_comp_level \"2\"; return 200; }\n\tlocation /mid {\n\t\tgzip_comp_level 7;\n"
		    "\t}\n\tlocation /new { return 204; }\n}\n");
	assert_false(exists(bsite));
	k.ops->release(&k);
}

/* Set nowhere: one line of the agent's http.conf, gone again (byte for byte) with nginx's default. */
static void test_gzip_set_nowhere(void **state)
{
	struct fx *f = *state;
	const struct knob_policy *pol;
	char why[KNOB_WHY_MAX] = "", live[32], bak[PATH_MAX];
	struct knob k;

	need_nginx(f);
	conf(f, "/etc/nginx.conf",
	     "pid @D@/nginx.pid;\nerror_log @D@/error.log;\nevents { }\nhttp {\n"
	     "\tinclude @D@/etc/ngx-autotune/http.conf;\n\taccess_log off;\n\tgzip on;\n"
	     "\tserver { listen unix:@D@/s.sock; }\n}\n");
	conf(f, "/etc/ngx-autotune/http.conf", "# Managed by ngx-autotune.\n");
	pol = policy(f, "nginx.gzip_comp_level", "nginx_directive", "gzip_comp_level", "http", "int", "1", "9");
	knob_of(f, &k, pol, &knob_nginx_ops);
	assert_int_equal(k.ops->probe(&k, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	rd(f, &k, live, sizeof(live));
	assert_string_equal(live, "1");
	expect_write(f, &k, "4");
	assert_file(f, "/etc/ngx-autotune/http.conf", "# Managed by ngx-autotune.\ngzip_comp_level 4;\n");
	expect_write(f, &k, "1");
	assert_file(f, "/etc/ngx-autotune/http.conf", "# Managed by ngx-autotune.\n");
	/* nginx's default again, with the file already so: nothing written, no line, no backup (recovery after a kill
	 * in arm A, issue 22 R6: it wrote "gzip_comp_level 1;"). */
	expect_write(f, &k, "1");
	assert_file(f, "/etc/ngx-autotune/http.conf", "# Managed by ngx-autotune.\n");
	/* The line there and its backup gone (a kill after the backup went): the default still removes the line. */
	expect_write(f, &k, "4");
	backup_of(f, "directive-backup", "/etc/ngx-autotune/http.conf", bak, sizeof(bak));
	assert_true(exists(bak));
	assert_int_equal(unlink(bak), 0);
	expect_write(f, &k, "1");
	assert_false(exists(bak));
	assert_file(f, "/etc/ngx-autotune/http.conf", "# Managed by ngx-autotune.\n");
	k.ops->release(&k);
}

/* ---- worker_connections with the workers' file limit ------------------------------------------------------- */

static const char wc_main[] =
	"include @D@/etc/ngx-autotune/main.conf;\n"
	"pid @D@/nginx.pid;\n"
	"error_log @D@/error.log;\n"
	"events {\n"
	"\tworker_connections 768; # Debian's\n"
	"}\n"
	"http {\n"
	"\taccess_log off;\n"
	"\tserver { listen unix:@D@/s.sock; }\n"
	"}\n";

/* The limits the next workers start with, and the master's capabilities (CapEff) and fs.nr_open. */
static void next_workers(struct fx *f, long long soft)
{
	char text[512];

	snprintf(text, sizeof(text), LIMITS_FMT, soft, soft);
	putf(text, "%s/worker-limits", f->root);
}

static void master_caps(struct fx *f, bool sys_resource, const char *nr_open)
{
	putf(sys_resource ? "Name:\tnginx\nCapEff:\t000001ffffffffff\n" : "Name:\tnginx\nCapEff:\t0000000000000000\n",
	     "%s/proc/%d/status", f->root, (int)f->master);
	putf(nr_open, "%s/proc/sys/fs/nr_open", f->root);
}

static const struct knob_policy *wc_policies(struct fx *f, const char *nofile_max)
{
	policy(f, "nginx.worker_rlimit_nofile", "nginx_directive", "worker_rlimit_nofile", "main", "int", "1024",
	       nofile_max);
	return policy(f, "nginx.worker_connections", "nginx_directive", "worker_connections", "events", "int", "16",
		      "65536");
}

/* Debian's 768 with the master's soft limit 1024: 4096 sets worker_rlimit_nofile 8192 in main.conf in the same
 * change (checked on the new workers), and 768 again puts both files back byte for byte and leaves no state. */
static void test_wc_raises_nofile(void **state)
{
	struct fx *f = *state;
	const struct knob_policy *pol;
	char why[KNOB_WHY_MAX] = "", msg[KNOB_WHY_MAX], path[PATH_MAX], bak[PATH_MAX];
	struct knob k;

	need_nginx(f);
	conf(f, "/etc/nginx.conf", wc_main);
	conf(f, "/etc/ngx-autotune/main.conf", "");
	master_caps(f, true, "1048576\n");
	pol = wc_policies(f, "1048576");
	knob_of(f, &k, pol, &knob_nginx_ops);
	assert_int_equal(k.ops->probe(&k, why, sizeof(why)), 0);
	if (!strstr(why, "/etc/nginx.conf:5 (edited there)") || strstr(why, "worker_rlimit_nofile"))
		fail_msg("probe before: %s", why);

	next_workers(f, 8192);
	if (wr(f, &k, "4096", msg, sizeof(msg)) != 0)
		fail_msg("4096: %s", msg);
	if (!strstr(msg, "worker_rlimit_nofile 1024 (the master's) -> 8192 in ") ||
	    !strstr(msg, "/etc/ngx-autotune/main.conf with it (twice 4096)"))
		fail_msg("the write's message: %s", msg);
	assert_file(f, "/etc/ngx-autotune/main.conf", "worker_rlimit_nofile 8192;\n");
	assert_non_null(strstr(get(f->conf), "\tworker_connections 4096; # Debian's\n"));
	snprintf(path, sizeof(path), "%s/worker-nofile.state", f->inc);
	assert_non_null(strstr(get(path), "\nconnections 768\nbefore 1024 inherited\nset 8192\nfile "));
	backup_of(f, "nofile-backup", "/etc/ngx-autotune/main.conf", bak, sizeof(bak));
	assert_true(exists(bak));
	assert_string_equal(get(bak), "");
	assert_int_equal(k.ops->probe(&k, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "; worker_rlimit_nofile 8192 set with it in "));
	assert_non_null(strstr(why, "(before: 1024, the master's)"));

	/* while it is the agent's, the limit follows: twice 2048 */
	next_workers(f, 4096);
	if (wr(f, &k, "2048", msg, sizeof(msg)) != 0)
		fail_msg("2048: %s", msg);
	assert_non_null(strstr(msg, "worker_rlimit_nofile 8192 (the agent's) -> 4096 in "));
	assert_file(f, "/etc/ngx-autotune/main.conf", "worker_rlimit_nofile 4096;\n");

	next_workers(f, 1024);
	assert_int_equal(wr(f, &k, "768", msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "worker_rlimit_nofile 4096 -> 1024 (the master's again: the line went)"));
	assert_file(f, "/etc/nginx.conf", wc_main);
	assert_file(f, "/etc/ngx-autotune/main.conf", "");
	assert_false(exists(path));
	assert_false(exists(bak));
	snprintf(path, sizeof(path), "%s/nofile-backup", f->inc);
	assert_false(exists(path));
	snprintf(path, sizeof(path), "%s/directive-backup", f->inc);
	assert_false(exists(path));
	k.ops->release(&k);
}

/* Held to what nginx can set (the master's hard limit without CAP_SYS_RESOURCE) and to the file limit's policy;
 * set by the operator in the same file as worker_connections, both come back byte for byte. */
static void test_wc_nofile_bounds(void **state)
{
	struct fx *f = *state;
	const struct knob_policy *pol;
	char msg[KNOB_WHY_MAX];
	struct knob k;
	static const char main_set[] =
		"include @D@/etc/ngx-autotune/main.conf;\n"
		"pid @D@/nginx.pid;\n"
		"worker_rlimit_nofile   2048;\n"
		"error_log @D@/error.log;\n"
		"events { worker_connections \"768\"; }\n"
		"http { access_log off; server { listen unix:@D@/s.sock; } }\n";

	need_nginx(f);
	conf(f, "/etc/nginx.conf", wc_main);
	conf(f, "/etc/ngx-autotune/main.conf", "");
	master_limits(f, 1024, 4096);
	master_caps(f, false, "1048576\n");
	pol = wc_policies(f, "1048576");
	knob_of(f, &k, pol, &knob_nginx_ops);
	next_workers(f, 4096);
	assert_int_equal(wr(f, &k, "4096", msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "-> 4096 in "));
	assert_non_null(strstr(msg, "(twice 4096, as far as nginx can set it)"));
	assert_file(f, "/etc/ngx-autotune/main.conf", "worker_rlimit_nofile 4096;\n");
	next_workers(f, 1024);
	assert_int_equal(wr(f, &k, "768", msg, sizeof(msg)), 0);
	assert_file(f, "/etc/ngx-autotune/main.conf", "");
	k.ops->release(&k);

	/* the operator's own line, beside worker_connections in nginx.conf; the policy's bound (6000) holds */
	conf(f, "/etc/nginx.conf", main_set);
	master_caps(f, true, "1048576\n");
	policy_set_free(&f->set);
	policy_set_init(&f->set);
	pol = wc_policies(f, "6000");
	knob_of(f, &k, pol, &knob_nginx_ops);
	next_workers(f, 6000);
	assert_int_equal(wr(f, &k, "4096", msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "worker_rlimit_nofile 2048 (set) -> 6000 in "));
	assert_non_null(strstr(get(f->conf), "\nworker_rlimit_nofile   6000;\n"));
	assert_non_null(strstr(get(f->conf), "worker_connections 4096;"));
	assert_file(f, "/etc/ngx-autotune/main.conf", "");
	next_workers(f, 2048);
	assert_int_equal(wr(f, &k, "768", msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "worker_rlimit_nofile 6000 -> 2048 (as it was set)"));
	assert_file(f, "/etc/nginx.conf", main_set);
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/worker-nofile.state", f->inc);
		assert_false(exists(path));
		snprintf(path, sizeof(path), "%s/nofile-backup", f->inc);
		assert_false(exists(path));
		snprintf(path, sizeof(path), "%s/directive-backup", f->inc);
		assert_false(exists(path));
	}
	k.ops->release(&k);
}

/* Set nowhere and no main.conf nginx includes: worker_connections is written, and the write says the limit is not. */
static void test_wc_nofile_nowhere(void **state)
{
	struct fx *f = *state;
	const struct knob_policy *pol;
	char msg[KNOB_WHY_MAX], live[32];
	struct knob k;
	static const char no_main[] =
		"pid @D@/nginx.pid;\nerror_log @D@/error.log;\nevents {\n\tworker_connections 768;\n}\n"
		"http { access_log off; server { listen unix:@D@/s.sock; } }\n";

	need_nginx(f);
	conf(f, "/etc/nginx.conf", no_main);
	master_caps(f, true, "1048576\n");
	pol = wc_policies(f, "1048576");
	knob_of(f, &k, pol, &knob_nginx_ops);
	next_workers(f, 1024);
	assert_int_equal(wr(f, &k, "4096", msg, sizeof(msg)), 0);
	if (!strstr(msg, "worker_rlimit_nofile not raised with it: worker_connections 4096 needs a file limit of 8192, "
			 "the workers' is 1024, and nginx does not include "))
		fail_msg("%s", msg);
	rd(f, &k, live, sizeof(live));
	assert_string_equal(live, "4096");
	k.ops->release(&k);
}

/* New workers without the limit (setrlimit failed): the change fails, everything as it was. A limit someone else
 * changed since the agent raised it is theirs: the way back leaves it and forgets it. */
static void test_wc_nofile_unverified_and_taken(void **state)
{
	struct fx *f = *state;
	const struct knob_policy *pol;
	char msg[KNOB_WHY_MAX], path[PATH_MAX];
	struct knob k;

	need_nginx(f);
	conf(f, "/etc/nginx.conf", wc_main);
	conf(f, "/etc/ngx-autotune/main.conf", "");
	master_caps(f, true, "1048576\n");
	pol = wc_policies(f, "1048576");
	knob_of(f, &k, pol, &knob_nginx_ops);
	snprintf(path, sizeof(path), "%s/worker-nofile.state", f->inc);
	f->env.nginx_timeout_ms = 600;
	next_workers(f, 1024);
	assert_int_equal(wr(f, &k, "4096", msg, sizeof(msg)), -EIO);
	if (!strstr(msg, "has a file limit of 1024, not 8192 (setrlimit failed: see nginx's error log)"))
		fail_msg("%s", msg);
	assert_file(f, "/etc/nginx.conf", wc_main);
	assert_file(f, "/etc/ngx-autotune/main.conf", "");
	assert_false(exists(path));
	{
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s/nofile-backup", f->inc);
		assert_false(exists(dir));
	}
	f->env.nginx_timeout_ms = 5000;

	next_workers(f, 8192);
	assert_int_equal(wr(f, &k, "4096", msg, sizeof(msg)), 0);
	conf(f, "/etc/ngx-autotune/main.conf", "worker_rlimit_nofile 10000;\n"); /* someone else's now */
	next_workers(f, 10000);
	assert_int_equal(wr(f, &k, "768", msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	assert_file(f, "/etc/nginx.conf", wc_main);
	assert_file(f, "/etc/ngx-autotune/main.conf", "worker_rlimit_nofile 10000;\n");
	assert_false(exists(path));
	k.ops->release(&k);
}

/* ---- upstream keepalive ------------------------------------------------------------------------------------- */

#define UK "# ngx-autotune upstream_keepalive"

/* The reverse proxy of issue 21: proxy_pass to an address in two locations; one sends its own headers (Connection
 * "" among them), the other inherits the server's. */
static const char up_main[] =
	"pid @D@/nginx.pid;\n"
	"error_log @D@/error.log;\n"
	"events { }\n"
	"http {\n"
	"\tinclude @D@/etc/ngx-autotune/http.conf;\n"
	"\taccess_log off;\n"
	"\tserver {\n"
	"\t\tlisten unix:@D@/s.sock;\n"
	"\t\tproxy_set_header Host $host;\n"
	"\t\tproxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n"
	"\t\tlocation / {\n"
	"\t\t\tproxy_pass http://10.77.0.2:18081;\n"
	"\t\t\tproxy_http_version 1.1;\n"
	"\t\t\tproxy_set_header Host $host;\n"
	"\t\t\tproxy_set_header Connection \"\";\n"
	"\t\t}\n"
	"\t\tlocation /b {\n"
	"\t\t\tproxy_pass http://10.77.0.2:18081/b/;\n"
	"\t\t}\n"
	"\t\tlocation = /ws { proxy_pass http://10.77.0.2:18082; proxy_set_header Connection $http_connection; }\n"
	"\t\tlocation /v { proxy_pass http://10.77.0.2:18081$request_uri; }\n"
	"\t\tlocation /u { proxy_pass http://unix:@D@/app.sock:/; }\n"
	"\t}\n"
	"}\n";

static const char up_main_64[] =
	"pid @D@/nginx.pid;\n"
	"error_log @D@/error.log;\n"
	"events { }\n"
	"http {\n"
	"\tinclude @D@/etc/ngx-autotune/http.conf;\n"
	"\taccess_log off;\n"
	"\tserver {\n"
	"\t\tlisten unix:@D@/s.sock;\n"
	"\t\tproxy_set_header Host $host;\n"
	"\t\tproxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n"
	"\t\tlocation / {\n"
	"\t\t\tproxy_pass http://ngxat_up_10_77_0_2_18081; " UK ": proxy_pass was http://10.77.0.2:18081\n"
	"\t\t\tproxy_http_version 1.1;\n"
	"\t\t\tproxy_set_header Host $host;\n"
	"\t\t\tproxy_set_header Connection \"\";\n"
	"\t\t\tproxy_redirect http://10.77.0.2:18081/ /; " UK "\n"
	"\t\t}\n"
	"\t\tlocation /b {\n"
	"\t\t\tproxy_pass http://ngxat_up_10_77_0_2_18081/b/; " UK ": proxy_pass was http://10.77.0.2:18081/b/\n"
	"\t\t\tproxy_set_header Host $host; " UK "\n"
	"\t\t\tproxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; " UK "\n"
	"\t\t\tproxy_set_header Connection \"\"; " UK "\n"
	"\t\t\tproxy_http_version 1.1; " UK "\n"
	"\t\t\tproxy_redirect http://10.77.0.2:18081/b/ /b; " UK "\n"
	"\t\t}\n"
	"\t\tlocation = /ws { proxy_pass http://10.77.0.2:18082; proxy_set_header Connection $http_connection; }\n"
	"\t\tlocation /v { proxy_pass http://10.77.0.2:18081$request_uri; }\n"
	"\t\tlocation /u { proxy_pass http://unix:@D@/app.sock:/; }\n"
	"\t}\n"
	"}\n";

static const char up_ours_64[] =
	"# Managed by ngx-autotune.\n"
	"upstream ngxat_up_10_77_0_2_18081 { " UK "\n"
	"\tserver 10.77.0.2:18081; " UK "\n"
	"\tkeepalive 64; " UK "\n"
	"} " UK "\n";

static const struct knob_policy *up_policy(struct fx *f)
{
	return policy(f, "nginx.upstream_keepalive", "upstream_keepalive", "*", NULL, "int", "0", "1024");
}

/* The address gets an upstream block of the agent's, both locations the three directives, the one that inherited its
 * headers a copy of them; what the driver leaves alone it says; 0 gives every file back byte for byte. */
static void test_upstream_address(void **state)
{
	struct fx *f = *state;
	const struct knob_policy *pol;
	char why[KNOB_WHY_MAX] = "", msg[KNOB_WHY_MAX], live[32], bak[PATH_MAX], dir[PATH_MAX];
	struct knob k;

	need_nginx(f);
	conf(f, "/etc/nginx.conf", up_main);
	conf(f, "/etc/ngx-autotune/http.conf", "# Managed by ngx-autotune.\n");
	pol = up_policy(f);
	knob_of(f, &k, pol, &knob_upstream_ops);
	assert_int_equal(k.ops->probe(&k, why, sizeof(why)), 0);
	if (!strstr(why, "2 proxy_passes: 0 to upstream blocks, 2 to addresses (an upstream each); left alone: ") ||
	    !strstr(why, "/etc/nginx.conf:20 (sets the Connection header itself) and others"))
		fail_msg("probe: %s", why);
	rd(f, &k, live, sizeof(live));
	assert_string_equal(live, "0");

	assert_int_equal(wr(f, &k, "64", msg, sizeof(msg)), 0);
	if (strncmp(msg, "keepalive 64 for 2 locations; left alone: ", 42) != 0 ||
	    !strstr(msg, "/etc/nginx.conf:20 (sets the Connection header itself) and others"))
		fail_msg("write 64: %s", msg);
	rd(f, &k, live, sizeof(live));
	assert_string_equal(live, "64");
	assert_file(f, "/etc/nginx.conf", up_main_64);
	assert_file(f, "/etc/ngx-autotune/http.conf", up_ours_64);
	backup_of(f, "upstream-backup", "/etc/nginx.conf", bak, sizeof(bak));
	{
		char *want = expand(f, up_main);

		assert_string_equal(get(bak), want);
		free(want);
	}
	/* another value: the agent's own block's keepalive, nothing else */
	expect_write(f, &k, "128");
	assert_file(f, "/etc/nginx.conf", up_main_64);
	assert_file(f, "/etc/ngx-autotune/http.conf",
		    "# Managed by ngx-autotune.\nupstream ngxat_up_10_77_0_2_18081 { " UK "\n"
		    "\tserver 10.77.0.2:18081; " UK "\n\tkeepalive 128; " UK "\n} " UK "\n");
	/* 0: as the operator had it, byte for byte, no backup left */
	expect_write(f, &k, "0");
	assert_file(f, "/etc/nginx.conf", up_main);
	assert_file(f, "/etc/ngx-autotune/http.conf", "# Managed by ngx-autotune.\n");
	assert_false(exists(bak));
	snprintf(dir, sizeof(dir), "%s/upstream-backup", f->inc);
	assert_false(exists(dir));
	/* nothing of the knob's left: 0 again changes nothing */
	assert_int_equal(wr(f, &k, "0", msg, sizeof(msg)), 0);
	assert_file(f, "/etc/nginx.conf", up_main);
	k.ops->release(&k);
}

/* The operator's upstream: its keepalive changed where it stands and noted, HTTP/1.0 made 1.1, a location with no
 * headers anywhere gets Connection "" alone (nginx's default Host stays); a configuration that had keepalive
 * complete reads its value, and writing that value back is the way back. Someone else's edit in between stays. */
static const char op_main[] =
	"pid @D@/nginx.pid;\n"
	"error_log @D@/error.log;\n"
	"events { }\n"
	"http {\n"
	"\tinclude @D@/etc/ngx-autotune/http.conf;\n"
	"\taccess_log off;\n"
	"\tupstream app {\n"
	"\t\tserver 10.77.0.2:18081;\n"
	"\t\tkeepalive 16; # mine\n"
	"\t}\n"
	"\tupstream api { server 10.77.0.2:18082; }\n"
	"\tserver {\n"
	"\t\tlisten unix:@D@/s.sock;\n"
	"\t\tlocation / {\n"
	"\t\t\tproxy_pass http://app;\n"
	"\t\t\tproxy_http_version 1.0;\n"
	"\t\t}\n"
	"\t\tlocation /api { proxy_pass https://api/v1/; }\n"
	"\t}\n"
	"}\n";

static void test_upstream_blocks(void **state)
{
	struct fx *f = *state;
	const struct knob_policy *pol;
	char msg[KNOB_WHY_MAX], live[32];
	struct knob k;

	need_nginx(f);
	conf(f, "/etc/nginx.conf", op_main);
	conf(f, "/etc/ngx-autotune/http.conf", "");
	pol = up_policy(f);
	knob_of(f, &k, pol, &knob_upstream_ops);
	rd(f, &k, live, sizeof(live));
	assert_string_equal(live, "0");
	assert_int_equal(wr(f, &k, "64", msg, sizeof(msg)), 0);
	assert_string_equal(msg, "keepalive 64 for 2 locations");
	assert_file(f, "/etc/nginx.conf",
		    "pid @D@/nginx.pid;\n"
		    "error_log @D@/error.log;\n"
		    "events { }\n"
		    "http {\n"
		    "\tinclude @D@/etc/ngx-autotune/http.conf;\n"
		    "\taccess_log off;\n"
		    "\tupstream app {\n"
		    "\t\tserver 10.77.0.2:18081;\n"
		    "\t\tkeepalive 64; # mine " UK ": keepalive was 16\n"
		    "\t}\n"
		    "\tupstream api { server 10.77.0.2:18082; \n"
		    "\t\tkeepalive 64; " UK " (new line)\n"
		    "}\n"
		    "\tserver {\n"
		    "\t\tlisten unix:@D@/s.sock;\n"
		    "\t\tlocation / {\n"
		    "\t\t\tproxy_pass http://app;\n"
		    "\t\t\tproxy_http_version 1.1; " UK ": proxy_http_version was 1.0\n"
		    "\t\t\tproxy_set_header Connection \"\"; " UK "\n"
		    "\t\t}\n"
		    "\t\tlocation /api { proxy_pass https://api/v1/; \n"
		    "\t\t\tproxy_set_header Connection \"\"; " UK " (new line)\n"
		    "\t\t\tproxy_http_version 1.1; " UK "\n"
		    "}\n"
		    "\t}\n"
		    "}\n");
	assert_file(f, "/etc/ngx-autotune/http.conf", "");
	rd(f, &k, live, sizeof(live));
	assert_string_equal(live, "64");
	/* someone else adds a line to the same file meanwhile: it stays on the way back */
	{
		char path[PATH_MAX], *t;
		const char *cur;

		snprintf(path, sizeof(path), "%s/etc/nginx.conf", f->dir);
		cur = get(path);
		t = malloc(strlen(cur) + 32);
		assert_non_null(t);
		strcpy(t, cur);
		memcpy(strstr(t, "\taccess_log off;"), "\taccess_log  on;", 16);
		put(path, t);
		free(t);
	}
	expect_write(f, &k, "0");
	{
		char *want = expand(f, op_main);

		memcpy(strstr(want, "\taccess_log off;"), "\taccess_log  on;", 16);
		assert_string_equal(get(f->conf), want);
		free(want);
	}
	k.ops->release(&k);

	/* keepalive complete as the operator wrote it: the knob reads 32, and 32 written back is the way back */
	conf(f, "/etc/nginx.conf",
	     "pid @D@/nginx.pid;\nerror_log @D@/error.log;\nevents { }\nhttp {\n"
	     "\tinclude @D@/etc/ngx-autotune/http.conf;\n\taccess_log off;\n"
	     "\tupstream app { server 10.77.0.2:18081; keepalive 32; }\n"
	     "\tserver { listen unix:@D@/s.sock;\n"
	     "\t\tproxy_http_version 1.1;\n\t\tproxy_set_header Connection \"\";\n"
	     "\t\tlocation / { proxy_pass http://app; }\n\t}\n}\n");
	knob_of(f, &k, pol, &knob_upstream_ops);
	rd(f, &k, live, sizeof(live));
	assert_string_equal(live, "32");
	expect_write(f, &k, "64");
	assert_non_null(strstr(get(f->conf), "\tupstream app { server 10.77.0.2:18081; keepalive 64; } " UK
				   ": keepalive was 32\n"));
	expect_write(f, &k, "32");
	assert_file(f, "/etc/nginx.conf",
		    "pid @D@/nginx.pid;\nerror_log @D@/error.log;\nevents { }\nhttp {\n"
		    "\tinclude @D@/etc/ngx-autotune/http.conf;\n\taccess_log off;\n"
		    "\tupstream app { server 10.77.0.2:18081; keepalive 32; }\n"
		    "\tserver { listen unix:@D@/s.sock;\n"
		    "\t\tproxy_http_version 1.1;\n\t\tproxy_set_header Connection \"\";\n"
		    "\t\tlocation / { proxy_pass http://app; }\n\t}\n}\n");
	k.ops->release(&k);
}

/* https to an address with no headers anywhere: Host as $proxy_host was, the TLS name as it was; nginx -t refusing the
 * result (an upstream block named like the agent's, by hand) leaves every file as it was. */
static void test_upstream_https_and_refused(void **state)
{
	struct fx *f = *state;
	const struct knob_policy *pol;
	char msg[KNOB_WHY_MAX], live[32];
	struct knob k;
	static const char tls[] =
		"pid @D@/nginx.pid;\nerror_log @D@/error.log;\nevents { }\nhttp {\n"
		"\tinclude @D@/etc/ngx-autotune/http.conf;\n\taccess_log off;\n"
		"\tserver {\n\t\tlisten unix:@D@/s.sock;\n"
		"\t\tlocation /s/ {\n\t\t\tproxy_pass https://10.0.0.9:8443/;\n\t\t}\n\t}\n}\n";

	need_nginx(f);
	conf(f, "/etc/nginx.conf", tls);
	conf(f, "/etc/ngx-autotune/http.conf", "");
	pol = up_policy(f);
	knob_of(f, &k, pol, &knob_upstream_ops);
	expect_write(f, &k, "8");
	assert_file(f, "/etc/nginx.conf",
		    "pid @D@/nginx.pid;\nerror_log @D@/error.log;\nevents { }\nhttp {\n"
		    "\tinclude @D@/etc/ngx-autotune/http.conf;\n\taccess_log off;\n"
		    "\tserver {\n\t\tlisten unix:@D@/s.sock;\n"
		    "\t\tlocation /s/ {\n\t\t\tproxy_pass https://ngxat_up_10_0_0_9_8443/; " UK
		    ": proxy_pass was https://10.0.0.9:8443/\n"
		    "\t\t\tproxy_set_header Connection \"\"; " UK "\n"
		    "\t\t\tproxy_set_header Host 10.0.0.9:8443; " UK "\n"
		    "\t\t\tproxy_http_version 1.1; " UK "\n"
		    "\t\t\tproxy_redirect https://10.0.0.9:8443/ /s/; " UK "\n"
		    "\t\t\tproxy_ssl_name 10.0.0.9; " UK "\n"
		    "\t\t}\n\t}\n}\n");
	assert_file(f, "/etc/ngx-autotune/http.conf",
		    "upstream ngxat_up_10_0_0_9_8443 { " UK "\n\tserver 10.0.0.9:8443; " UK "\n\tkeepalive 8; " UK
		    "\n} " UK "\n");
	expect_write(f, &k, "0");
	assert_file(f, "/etc/nginx.conf", tls);
	assert_file(f, "/etc/ngx-autotune/http.conf", "");

	/* nginx -t refuses the result (a stand-in binary that runs nginx but refuses every -t): every file as it was, no
	 * backup left */
	{
		char bin[PATH_MAX], text[PATH_MAX + 160], bdir[PATH_MAX];

		snprintf(bin, sizeof(bin), "%s/refusing-nginx", f->dir);
		snprintf(text, sizeof(text), "#!/bin/sh\nfor a; do [ \"$a\" = -t ] && { echo 'nginx: [emerg] refused by "
			 "the test' >&2; exit 1; }; done\nexec %s \"$@\"\n", f->nginx);
		put(bin, text);
		assert_int_equal(chmod(bin, 0755), 0);
		f->env.nginx_bin = bin;
		assert_int_equal(wr(f, &k, "8", msg, sizeof(msg)), -EINVAL);
		assert_string_equal(msg, "[emerg] refused by the test");
		f->env.nginx_bin = f->nginx;
		assert_file(f, "/etc/nginx.conf", tls);
		assert_file(f, "/etc/ngx-autotune/http.conf", "");
		snprintf(bdir, sizeof(bdir), "%s/upstream-backup", f->inc);
		assert_false(exists(bdir));
		rd(f, &k, live, sizeof(live));
		assert_string_equal(live, "0");
	}
	k.ops->release(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_gzip_every_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gzip_edited_and_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gzip_set_nowhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wc_raises_nofile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wc_nofile_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wc_nofile_unverified_and_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wc_nofile_nowhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upstream_address, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upstream_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upstream_https_and_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
