/*
 * knob_nginx: the nginx drivers. knob_nginx_ops drives one directive in the agent's include files;
 * knob_listen_ops drives the accept-queue limit of nginx's listening sockets (somaxconn plus `backlog=`).
 *
 * Include files. The agent owns ENV->include_dir/main.conf, events.conf and http.conf; the operator adds once, to
 * nginx.conf, `include DIR/main.conf;` at the top level, `include DIR/events.conf;` inside events {} and
 * `include DIR/http.conf;` inside http {}. A directive knob (policy target = directive, context = main, events or
 * http) is one line of CONTEXT.conf; the other lines of the file are left as they are. Reading: the line in our
 * file when nginx includes that file in that context, else the directive's effective value from `nginx -T`, else
 * nginx's documented default. probe fails (-ENOENT) when nginx does not include our file where it must, and
 * (-ENOTSUP) when the directive is also set elsewhere in that context, since our line would then be a duplicate
 * that `nginx -t` refuses, or be overridden.
 *
 * Listen queue (knob value = the live backlog). The kernel caps a listen() backlog at net.core.somaxconn *when
 * listen() is called*, and an nginx reload calls listen() again only for listeners whose backlog= changed: raising
 * somaxconn alone leaves the live limit where it was. So a write raises somaxconn in nginx's network namespace when
 * it is below the value, sets backlog=VALUE on the operator's listen lines (nginx_conf decides which: one per
 * address:port), reloads, and checks through inet_diag that every listening socket of those ports now has that
 * backlog. read is the smallest live backlog over the ports of nginx's listen lines.
 *
 * Revert, and what survives a crash. The first change of the listen queue records in ENV->include_dir:
 *   listen-queue.state         "original N" (the live value before), "somaxconn BEFORE SET", "file PATH" lines
 *   listen-backup/ENCODED-PATH the operator's file as it was (ENCODED-PATH: PATH with '%' as %25 and '/' as %2F)
 * both written and synced before any file or sysctl changes. The backups live in our directory, not beside the
 * files, because Debian's glob include of sites-enabled would load a FILE.bak next to FILE. A write of the recorded
 * original value is a revert: each recorded file that still differs from its backup only in backlog= parameters is
 * put back byte for byte; a file an operator has edited since keeps their edits and gets backlog= set to the
 * original value instead; somaxconn goes back to BEFORE if it still reads SET (else someone else changed it, and it
 * is left alone); and once nginx runs with that, the state and the backups are removed. This works the same from a
 * restarted agent or an offline revert, since all it needs is on disk. Any other write edits backlog= and keeps the
 * first backups.
 *
 * Every write is asynchronous (-EINPROGRESS, DONE later, on ENV->loop): `nginx -T` for a fresh view of the
 * files, the candidate files written atomically (temporary file and rename; symlinks such as sites-enabled/default
 * are followed, owner and mode kept) with the previous contents kept in memory, `nginx -t` (killed past
 * ENV->nginx_timeout_ms), SIGHUP to the master, then a timer polls /proc/PID/task/PID/children until a new
 * generation of workers runs (new worker pids; every old worker gone or "shutting down") and, for the listen
 * queue, until inet_diag shows the new backlog (a listen write that leaves some socket's configured backlog as it
 * was goes in two such reloads, see plan_nudge). A failing `nginx -t` puts the previous files back and completes
 * with -EINVAL and nginx's own message; a reload that does not show up within the timeout puts them back, reloads
 * again, and completes with -ETIMEDOUT (-EIO when the workers came but the live backlog is wrong). One nginx write
 * runs at a time in the process (-EBUSY otherwise): a second reload would blur the generation check.
 *
 * probe is synchronous and needs `nginx -T`: it runs it on a private loop, bounded by nginx_timeout_ms, and all
 * knobs probed within DUMP_FRESH_MS share that one run (the engine probes every knob in one pass). read never
 * spawns synchronously: it uses the last dump and refreshes it in the background once DUMP_STALE_MS old.
 */
#define _GNU_SOURCE

#include "act/knob.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/policy.h"
#include "act/nginx_conf.h"
#include "observe/probe_netlink.h"
#include "act/spawn.h"

#define POLL_MS 50              /* generation and inet_diag checks after a reload */
#define DUMP_FRESH_MS 2000      /* probes within this share one nginx -T */
#define DUMP_STALE_MS 30000     /* reads refresh the dump in the background past this */
#define TEST_OUT_MAX 65536      /* bytes of nginx -t output kept */
#define FILE_MAX (16u << 20)    /* one configuration file */
#define CHILDREN_MAX 4096       /* children of the master */
#define LISTEN_SOCKETS_MAX 4096 /* listening sockets read from inet_diag */
#define STATE_FILES_MAX 256     /* files recorded in listen-queue.state */

#define STATE_NAME "listen-queue.state"
#define BACKUP_DIR "listen-backup"
#define WORKER_TITLE "nginx: worker process"
#define MASTER_TITLE "nginx: master process"

static void set_why(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (!why || whylen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

static bool real_root(const struct knob_env *env)
{
	return !env->root || env->root[0] == '\0' || strcmp(env->root, "/") == 0;
}

/* ENV->root followed by the formatted path. 0 or -ENAMETOOLONG. */
static int rooted(const struct knob_env *env, char *out, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int rooted(const struct knob_env *env, char *out, size_t n, const char *fmt, ...)
{
	char rel[PATH_MAX];
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= sizeof(rel))
		return -ENAMETOOLONG;
	k = snprintf(out, n, "%s%s", real_root(env) ? "" : env->root, rel);
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

/* ---- files ------------------------------------------------------------------------------------------------ */

/* The whole file at PATH (at most MAX bytes) into a malloc'd, NUL-terminated *OUT. 0 or -errno (-EFBIG). */
static int read_whole(const char *path, size_t max, char **out, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	int fd, e;

	*out = NULL;
	*len = 0;
	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		free(buf);
		return -e;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			if (cap >= max) {
				close(fd);
				free(buf);
				return -EFBIG;
			}
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				close(fd);
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			close(fd);
			free(buf);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, data, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

static int sync_dir_of(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd, r = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

/*
 * Replace the file at PATH (not a symlink: callers resolve) with DATA: a temporary file beside it (a dot name, so
 * no include glob loads it), synced, given the owner and mode of the file it replaces (MODE for a new one),
 * renamed over it, and the directory synced. 0 or -errno; PATH is unchanged on failure.
 */
static int write_atomic(const char *path, const char *data, size_t len, mode_t mode)
{
	char tmp[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int fd, r;

	if (!slash)
		return -EINVAL;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%.*s/.ngxat-tmp.XXXXXX", (int)(slash - path), path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write_all(fd, data, len);
	if (r == 0) {
		if (stat(path, &st) == 0) {
			if (fchown(fd, st.st_uid, st.st_gid) < 0 && errno != EPERM)
				r = -errno;
			if (r == 0 && fchmod(fd, st.st_mode & 07777) < 0)
				r = -errno;
		} else if (fchmod(fd, mode) < 0) {
			r = -errno;
		}
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	return sync_dir_of(path);
}

/* The agent's include file for CONTEXT into OUT. */
static int include_path(const struct knob_env *env, const char *context, char *out, size_t n)
{
	const char *dir = env->include_dir && env->include_dir[0] ? env->include_dir : "/etc/nginx/ngx-autotune";
	size_t dl = strlen(dir);
	int k;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	k = snprintf(out, n, "%.*s/%s.conf", (int)dl, dir, context);
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

static int dir_path(const struct knob_env *env, const char *name, char *out, size_t n)
{
	const char *dir = env->include_dir && env->include_dir[0] ? env->include_dir : "/etc/nginx/ngx-autotune";
	size_t dl = strlen(dir);
	int k;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	k = snprintf(out, n, "%.*s/%s", (int)dl, dir, name);
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

/* ---- child processes -------------------------------------------------------------------------------------- */

/* What a finished child means: RC 0 (exit 0) or -errno; MSG its complaint; OUT its standard output. */
struct run_result {
	int rc;
	char msg[KNOB_WHY_MAX];
	char *out;
	size_t outlen;
};

/*
 * LINE (LEN bytes) as a person wants to read it, into OUT: without what nginx puts before the level (a timestamp
 * or "nginx: ") and after it (the "PID#TID: " of its error log format). Returns the length written.
 */
static size_t clean_line(const char *line, size_t len, char *out, size_t outlen)
{
	const char *p = line, *e = line + len, *close, *q = NULL;
	int k;

	if (len > 20 && isdigit((unsigned char)p[0]) && p[4] == '/' && p[7] == '/' && p[10] == ' ' && p[13] == ':')
		p += 20;
	else if (len > 7 && memcmp(p, "nginx: ", 7) == 0)
		p += 7;
	if (p < e && *p == '[' && (close = memchr(p, ']', (size_t)(e - p))) && close + 2 < e && close[1] == ' ') {
		for (q = close + 2; q < e && (isdigit((unsigned char)*q) || *q == '#'); q++)
			;
		if (q == close + 2 || q + 1 >= e || q[0] != ':' || q[1] != ' ')
			q = NULL;
	}
	if (q)
		k = snprintf(out, outlen, "%.*s %.*s", (int)(close + 1 - p), p, (int)(e - q - 2), q + 2);
	else
		k = snprintf(out, outlen, "%.*s", (int)(e - p), p);
	return k < 0 ? 0 : (size_t)k >= outlen ? outlen - 1 : (size_t)k;
}

/* nginx's complaint, one line: its [emerg], [alert] and [crit] lines when it has some, else every line. */
static void child_message(const struct outbuf *b, char *msg, size_t msglen)
{
	size_t n = 0;

	msg[0] = '\0';
	for (int pass = 0; pass < 2 && n == 0; pass++) {
		const char *p = b->p, *end = b->p ? b->p + b->len : NULL;

		while (p && p < end && n + 3 < msglen) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
			bool severe = memmem(p, len, "[emerg]", 7) || memmem(p, len, "[alert]", 7) ||
				      memmem(p, len, "[crit]", 6);

			if (len && (pass == 1 || severe)) {
				if (n)
					n += (size_t)snprintf(msg + n, msglen - n, "; ");
				n += clean_line(p, len, msg + n, msglen - n);
			}
			p = nl ? nl + 1 : end;
		}
	}
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
}

/* The result of a finished child (its stdout moves into RES). */
static void spawn_result(struct spawn *sp, const char *what, int64_t timeout_ms, struct run_result *res)
{
	char text[KNOB_WHY_MAX];

	memset(res, 0, sizeof(*res));
	child_message(&sp->ebuf, text, sizeof(text));
	if (sp->spawn_rc < 0) {
		res->rc = sp->spawn_rc;
		set_why(res->msg, sizeof(res->msg), "cannot run %s: %s", what, strerror(-sp->spawn_rc));
	} else if (sp->timed_out) {
		res->rc = -ETIMEDOUT;
		set_why(res->msg, sizeof(res->msg), "%s did not finish within %lld ms and was killed", what,
			(long long)timeout_ms);
	} else if (sp->obuf.over) {
		res->rc = -EFBIG;
		set_why(res->msg, sizeof(res->msg), "%s printed more than %zu bytes", what, sp->obuf.max);
	} else if (sp->term_signal || sp->status != 0) {
		res->rc = -EIO;
		if (text[0])
			set_why(res->msg, sizeof(res->msg), "%s", text);
		else
			set_why(res->msg, sizeof(res->msg), "%s exited with %s %d", what,
				sp->term_signal ? "signal" : "status", sp->term_signal ? sp->term_signal : (int)sp->status);
	} else {
		res->out = sp->obuf.p;
		res->outlen = sp->obuf.len;
		sp->obuf.p = NULL;
	}
}

/* argv of `nginx -q -T` or `nginx -q -t`, with -c when the configuration is named. */
static void nginx_argv(const struct knob_env *env, const char *flag, char **argv)
{
	size_t i = 0;

	argv[i++] = (char *)(env->nginx_bin && env->nginx_bin[0] ? env->nginx_bin : "nginx");
	argv[i++] = (char *)"-q";
	argv[i++] = (char *)flag;
	if (env->nginx_prefix && env->nginx_prefix[0]) {
		argv[i++] = (char *)"-p";
		argv[i++] = (char *)env->nginx_prefix;
	}
	if (env->nginx_conf && env->nginx_conf[0]) {
		argv[i++] = (char *)"-c";
		argv[i++] = (char *)env->nginx_conf;
	}
	argv[i] = NULL;
}

static int64_t timeout_of(const struct knob_env *env)
{
	return env->nginx_timeout_ms > 0 ? env->nginx_timeout_ms : 10000;
}

struct sync_run {
	bool done;
	const char *what;
	int64_t timeout_ms;
	struct run_result res;
};

static void sync_done(struct spawn *sp)
{
	struct sync_run *s = sp->ctx;

	spawn_result(sp, s->what, s->timeout_ms, &s->res);
	s->done = true;
}

/* Run `nginx FLAG` to the end on a private loop (blocking, bounded by the timeout). */
static void run_sync(const struct knob_env *env, const char *flag, size_t max_out, struct run_result *res)
{
	struct sync_run s = { .what = strcmp(flag, "-T") == 0 ? "nginx -T" : "nginx -t" };
	uv_loop_t loop;
	char *argv[8];
	int r;

	s.timeout_ms = timeout_of(env);
	memset(res, 0, sizeof(*res));
	r = uv_loop_init(&loop);
	if (r < 0) {
		res->rc = r;
		set_why(res->msg, sizeof(res->msg), "uv_loop_init: %s", uv_strerror(r));
		return;
	}
	nginx_argv(env, flag, argv);
	r = spawn_start(&loop, argv, max_out, TEST_OUT_MAX, s.timeout_ms, sync_done, &s, NULL);
	if (r < 0) {
		res->rc = r;
		set_why(res->msg, sizeof(res->msg), "%s", strerror(-r));
	} else {
		while (!s.done)
			uv_run(&loop, UV_RUN_ONCE);
		*res = s.res;
	}
	uv_loop_close(&loop);
}

/* ---- the shared nginx -T ---------------------------------------------------------------------------------- */

/*
 * The last `nginx -T` of the process, shared by every nginx knob of one environment: one file per process, like
 * the master it describes. USERS counts the knobs holding it; the last release frees it.
 */
static struct dump_cache {
	const struct knob_env *env;
	struct nginx_conf conf;
	bool have;
	uint64_t at;
	bool stale;
	bool refreshing;
	unsigned users;
} cache;

static void cache_clear(void)
{
	nginx_conf_free(&cache.conf);
	cache.have = false;
}

/* Replace the cached dump with OUT (LEN bytes). 0 or -errno with WHY. */
static int cache_store(const struct knob_env *env, const char *out, size_t len, char *why, size_t whylen)
{
	struct nginx_conf c;
	char err[KNOB_WHY_MAX];
	int r = nginx_conf_parse(out, len, &c, err, sizeof(err));

	if (r < 0) {
		set_why(why, whylen, "nginx -T: %s", err);
		return r;
	}
	cache_clear();
	cache.conf = c;
	cache.env = env;
	cache.have = true;
	cache.stale = false;
	cache.at = env->loop ? uv_now(env->loop) : 0;
	return 0;
}

static void cache_refreshed(struct spawn *sp)
{
	const struct knob_env *env = sp->ctx;
	struct run_result res;

	/* ENV is dereferenced only while a knob holds the cache, i.e. while the engine's environment exists. */
	spawn_result(sp, "nginx -T", 0, &res);
	cache.refreshing = false;
	if (res.rc == 0 && cache.users > 0 && cache.env == env)
		cache_store(env, res.out, res.outlen, NULL, 0);
	free(res.out);
}

/* The dump, taken now unless one of at most DUMP_FRESH_MS is cached. NULL with -errno in *RC and WHY. */
static const struct nginx_conf *cache_get_sync(const struct knob_env *env, int *rc, char *why, size_t whylen)
{
	struct run_result res;
	uint64_t now = env->loop ? uv_now(env->loop) : 0;

	*rc = 0;
	if (cache.have && cache.env == env && !cache.stale && now - cache.at <= DUMP_FRESH_MS)
		return &cache.conf;
	run_sync(env, "-T", NGINX_CONF_DUMP_MAX, &res);
	if (res.rc < 0) {
		*rc = res.rc;
		set_why(why, whylen, "%s", res.msg);
		return NULL;
	}
	*rc = cache_store(env, res.out, res.outlen, why, whylen);
	free(res.out);
	return *rc < 0 ? NULL : &cache.conf;
}

/* The cached dump of any age (NULL if none), starting a background refresh when it is stale. */
static const struct nginx_conf *cache_peek(const struct knob_env *env)
{
	uint64_t now = env->loop ? uv_now(env->loop) : 0;
	bool have = cache.have && cache.env == env;

	if (env->loop && !cache.refreshing && (!have || cache.stale || now - cache.at > DUMP_STALE_MS)) {
		char *argv[8];

		nginx_argv(env, "-T", argv);
		if (spawn_start(env->loop, argv, NGINX_CONF_DUMP_MAX, TEST_OUT_MAX, timeout_of(env), cache_refreshed,
				(void *)env, NULL) == 0)
			cache.refreshing = true;
	}
	return have ? &cache.conf : NULL;
}

/* ---- nginx -T for others ---------------------------------------------------------------------------------- */

struct dump_req {
	knob_dump_fn done;
	void *ctx;
	int64_t timeout_ms;
};

static void dump_finished(struct spawn *sp)
{
	struct dump_req *q = sp->ctx;
	struct run_result res;

	spawn_result(sp, "nginx -T", q->timeout_ms, &res);
	q->done(res.rc, res.msg, res.out, res.outlen, q->ctx);
	free(q);
}

int knob_nginx_dump(const struct knob_env *env, knob_dump_fn done, void *ctx)
{
	struct dump_req *q = malloc(sizeof(*q));
	char *argv[8];
	int r;

	if (!q)
		return -ENOMEM;
	q->done = done;
	q->ctx = ctx;
	q->timeout_ms = timeout_of(env);
	nginx_argv(env, "-T", argv);
	r = spawn_start(env->loop, argv, NGINX_CONF_DUMP_MAX, TEST_OUT_MAX, q->timeout_ms, dump_finished, q, NULL);
	if (r < 0)
		free(q);
	return r;
}

/* ---- the master and its workers --------------------------------------------------------------------------- */

/* The process title of PID (its cmdline up to the first NUL) into OUT. 0 or -errno. */
static int title_of(const struct knob_env *env, pid_t pid, char *out, size_t n)
{
	char path[PATH_MAX];
	int fd, r;
	ssize_t k;

	r = rooted(env, path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	k = read(fd, out, n - 1);
	r = k < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	out[k] = '\0';
	return 0;
}

static bool is_master(const struct knob_env *env, pid_t pid)
{
	char t[256];

	return pid > 0 && title_of(env, pid, t, sizeof(t)) == 0 && strncmp(t, MASTER_TITLE, strlen(MASTER_TITLE)) == 0;
}

static bool is_worker(const struct knob_env *env, pid_t pid)
{
	char t[256];

	return title_of(env, pid, t, sizeof(t)) == 0 && strcmp(t, WORKER_TITLE) == 0;
}

/* Children of PID from /proc/PID/task/PID/children, else (no CONFIG_PROC_CHILDREN) by a scan of /proc. */
static int children_of(const struct knob_env *env, pid_t pid, pid_t *out, size_t max, size_t *n)
{
	char path[PATH_MAX], buf[16];
	char *text;
	size_t len;
	DIR *d;
	struct dirent *de;
	int r;

	*n = 0;
	r = rooted(env, path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (r < 0)
		return r;
	r = read_whole(path, 1 << 20, &text, &len);
	if (r == 0) {
		char *p = text, *end;

		for (;;) {
			long v;

			while (*p == ' ' || *p == '\n')
				p++;
			if (!*p)
				break;
			v = strtol(p, &end, 10);
			if (end == p || v <= 0 || v > INT_MAX || *n == max) {
				free(text);
				return -EINVAL;
			}
			out[(*n)++] = (pid_t)v;
			p = end;
		}
		free(text);
		return 0;
	}
	if (r != -ENOENT)
		return r;
	r = rooted(env, path, sizeof(path), "/proc");
	if (r < 0 || !(d = opendir(path)))
		return r < 0 ? r : -errno;
	while ((de = readdir(d))) {
		char stat_path[PATH_MAX + 300], *close_paren;
		long child, ppid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		child = strtol(de->d_name, NULL, 10);
		snprintf(stat_path, sizeof(stat_path), "%s/%s/stat", path, de->d_name);
		if (read_whole(stat_path, 4096, &text, &len) < 0)
			continue;
		close_paren = strrchr(text, ')');
		if (close_paren && sscanf(close_paren + 1, " %15s %ld", buf, &ppid) == 2 && ppid == pid && *n < max)
			out[(*n)++] = (pid_t)child;
		free(text);
	}
	closedir(d);
	return 0;
}

/* ---- somaxconn in nginx's network namespace --------------------------------------------------------------- */

/*
 * open() /proc/sys/net/core/somaxconn as nginx's listen() sees it: the kernel binds /proc/sys/net files to the
 * network namespace of the task that opens them, so the open happens inside nginx's namespace (setns on this
 * thread, and back at once), as knob_sysctl.c does. Under a fake root there is no namespace: the file is opened
 * under the root. The descriptor, or -errno.
 */
static int open_somaxconn(const struct knob_env *env, pid_t pid, int flags)
{
	char path[PATH_MAX];
	struct stat mine, theirs;
	int target, self, fd, e;

	if (!real_root(env)) {
		if (rooted(env, path, sizeof(path), "/proc/sys/net/core/somaxconn") < 0)
			return -ENAMETOOLONG;
		fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
		return fd < 0 ? -errno : fd;
	}
	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	target = open(path, O_RDONLY | O_CLOEXEC);
	if (target < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if (fstat(target, &theirs) < 0 || stat("/proc/thread-self/ns/net", &mine) < 0) {
		e = errno;
		close(target);
		return -e;
	}
	if (mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino) {
		close(target);
		fd = open("/proc/sys/net/core/somaxconn", flags | O_CLOEXEC | O_NOFOLLOW);
		return fd < 0 ? -errno : fd;
	}
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0 || setns(target, CLONE_NEWNET) < 0) {
		e = errno;
		if (self >= 0)
			close(self);
		close(target);
		return -e;
	}
	fd = open("/proc/sys/net/core/somaxconn", flags | O_CLOEXEC | O_NOFOLLOW);
	e = errno;
	if (setns(self, CLONE_NEWNET) < 0)
		/* Cannot happen short of a kernel bug; the loop thread left in nginx's namespace would be wrong. */
		abort();
	close(self);
	close(target);
	return fd < 0 ? -e : fd;
}

static int somaxconn_read(const struct knob_env *env, pid_t pid, int64_t *out)
{
	char buf[32];
	char *end;
	ssize_t n;
	int fd = open_somaxconn(env, pid, O_RDONLY);
	long long v;

	if (fd < 0)
		return fd;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	v = strtoll(buf, &end, 10);
	if (end == buf || (*end && *end != '\n') || v < 0)
		return -EIO;
	*out = v;
	return 0;
}

static int somaxconn_write(const struct knob_env *env, pid_t pid, int64_t v)
{
	char buf[32];
	int64_t back;
	int fd = open_somaxconn(env, pid, O_WRONLY), r;

	if (fd < 0)
		return fd;
	snprintf(buf, sizeof(buf), "%lld\n", (long long)v);
	r = write_all(fd, buf, strlen(buf));
	close(fd);
	if (r < 0)
		return r;
	r = somaxconn_read(env, pid, &back);
	if (r < 0)
		return r;
	return back == v ? 0 : -EIO;
}

/* ---- directives and values -------------------------------------------------------------------------------- */

#define T(x) (1u << (x))

/* What the driver knows of each directive: where it goes, the types it can hold, nginx's default (NULL: none). */
static const struct directive_info {
	const char *name, *context, *dflt;
	unsigned types;
} directives[] = {
	{ "worker_processes", "main", "1", T(KNOB_T_INT) | T(KNOB_T_ENUM) },
	{ "worker_cpu_affinity", "main", "", T(KNOB_T_CPULIST) },
	{ "worker_rlimit_nofile", "main", NULL, T(KNOB_T_INT) },
	{ "worker_priority", "main", "0", T(KNOB_T_INT) },
	{ "worker_connections", "events", "512", T(KNOB_T_INT) },
	{ "multi_accept", "events", "off", T(KNOB_T_ONOFF) },
	{ "accept_mutex", "events", "off", T(KNOB_T_ONOFF) },
	{ "keepalive_requests", "http", "1000", T(KNOB_T_INT) },
	{ "sendfile", "http", "off", T(KNOB_T_ONOFF) },
	{ "tcp_nopush", "http", "off", T(KNOB_T_ONOFF) },
	{ "tcp_nodelay", "http", "on", T(KNOB_T_ONOFF) },
	{ "reset_timedout_connection", "http", "off", T(KNOB_T_ONOFF) },
};

static const struct directive_info *directive_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(directives) / sizeof(directives[0]); i++)
		if (strcmp(directives[i].name, name) == 0)
			return &directives[i];
	return NULL;
}

/* Whether the policy names a directive this driver can own: a plain name, in a context we have a file for. */
static int directive_check(const struct knob_policy *pol, char *why, size_t whylen)
{
	const struct directive_info *d;
	const char *name = pol->target;
	size_t n = strlen(name);

	if (n == 0 || n > 63) {
		set_why(why, whylen, "no directive named");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!islower((unsigned char)name[i]) && !isdigit((unsigned char)name[i]) && name[i] != '_') {
			set_why(why, whylen, "'%s' is not a directive name", name);
			return -EINVAL;
		}
	}
	if (strcmp(pol->context, "main") != 0 && strcmp(pol->context, "events") != 0 &&
	    strcmp(pol->context, "http") != 0) {
		set_why(why, whylen, "context '%s': the agent has include files for main, events and http only",
			pol->context);
		return -ENOTSUP;
	}
	d = directive_lookup(name);
	if (d && strcmp(d->context, pol->context) != 0) {
		set_why(why, whylen, "%s belongs in %s, not %s", name, d->context, pol->context);
		return -EINVAL;
	}
	if (d ? !(d->types & T(pol->type))
	      : pol->type != KNOB_T_INT && pol->type != KNOB_T_ONOFF && pol->type != KNOB_T_ENUM) {
		set_why(why, whylen, "%s cannot hold a value of type %s", name, knobval_type_name(pol->type));
		return -ENOTSUP;
	}
	return 0;
}

/* The online CPUs (a CPU list) under the root. */
static int online_cpus(const struct knob_env *env, struct knobval *out)
{
	char path[PATH_MAX], *text;
	size_t len;
	int r = rooted(env, path, sizeof(path), "/sys/devices/system/cpu/online");

	if (r < 0)
		return r;
	r = read_whole(path, 65536, &text, &len);
	if (r < 0)
		return r;
	r = knobval_parse(KNOB_T_CPULIST, text, out, NULL, 0);
	free(text);
	return r;
}

/* A knob VALUE as the arguments of its directive into ARGS ("" and *REMOVE for the empty CPU list). */
static int value_to_nginx(const struct knob_policy *pol, const char *value, char *args, size_t n, bool *remove,
			  char *why, size_t whylen)
{
	struct knobval v;
	char err[128];
	unsigned lo, hi;

	*remove = false;
	if (knobval_parse(pol->type, value, &v, err, sizeof(err)) < 0) {
		set_why(why, whylen, "value '%.64s': %s", value, err);
		return -EINVAL;
	}
	switch (pol->type) {
	case KNOB_T_INT:
		snprintf(args, n, "%lld", (long long)v.v[0]);
		return 0;
	case KNOB_T_ONOFF:
		snprintf(args, n, "%s", v.v[0] ? "on" : "off");
		return 0;
	case KNOB_T_ENUM:
		snprintf(args, n, "%s", v.word);
		return 0;
	case KNOB_T_CPULIST:
		/* "auto MASK": one worker per CPU of the set, as nginx spreads them; the rightmost bit is CPU 0. */
		if (knobval_cpuset_span(&v.cpus, &lo, &hi) < 0) {
			*remove = true;
			args[0] = '\0';
			return 0;
		}
		/* The mask is one word, and nginx_conf returns words of NGINX_CONF_WORD_MAX - 1 bytes at most. */
		if (hi + 1 >= NGINX_CONF_WORD_MAX || hi + 7 >= n) {
			set_why(why, whylen, "CPU %u: worker_cpu_affinity masks stop at CPU %d here", hi,
				NGINX_CONF_WORD_MAX - 2);
			return -ERANGE;
		}
		memcpy(args, "auto ", 5);
		for (unsigned c = 0; c <= hi; c++)
			args[5 + hi - c] = knobval_cpuset_has(&v.cpus, c) ? '1' : '0';
		args[5 + hi + 1] = '\0';
		return 0;
	default:
		return -ENOTSUP;
	}
}

/* The arguments of a directive as the knob's canonical value into OUT. */
static int nginx_to_value(const struct knob *k, const struct nginx_conf_directive *d, char *out, size_t n,
			  char *why, size_t whylen)
{
	const struct knob_policy *pol = k->pol;
	struct knobval v;
	char text[NGINX_CONF_WORD_MAX * 2];
	int r;

	if (pol->type == KNOB_T_CPULIST) {
		size_t len;

		if (d->nargs == 0) {
			text[0] = '\0';
		} else if (d->nargs == 1 && strcmp(d->args[0], "auto") == 0) {
			r = online_cpus(k->env, &v);
			if (r < 0)
				return r;
			return knobval_format(&v, out, n) < 0 ? -ERANGE : 0;
		} else if (d->nargs == 2 && strcmp(d->args[0], "auto") == 0 && (len = strlen(d->args[1])) > 0 &&
			   strspn(d->args[1], "01") == len && len <= KNOBVAL_CPUS_MAX) {
			memset(&v, 0, sizeof(v));
			v.type = KNOB_T_CPULIST;
			v.n = 1;
			for (size_t c = 0; c < len; c++)
				if (d->args[1][len - 1 - c] == '1')
					knobval_cpuset_add(&v.cpus, (unsigned)c);
			return knobval_format(&v, out, n) < 0 ? -ERANGE : 0;
		} else {
			set_why(why, whylen, "%s with %zu mask(s) cannot be read as one CPU list", pol->target,
				d->nargs);
			return -EINVAL;
		}
	} else {
		if (d->nargs != 1) {
			set_why(why, whylen, "%s has %zu arguments", pol->target, d->nargs);
			return -EINVAL;
		}
		snprintf(text, sizeof(text), "%s", d->args[0]);
		if (pol->type == KNOB_T_ONOFF)
			for (char *c = text; *c; c++)
				*c = (char)tolower((unsigned char)*c);
		if (pol->type == KNOB_T_INT && strcmp(text, "auto") == 0) {
			r = online_cpus(k->env, &v);
			if (r < 0)
				return r;
			snprintf(text, sizeof(text), "%u", knobval_cpuset_count(&v.cpus));
		}
	}
	r = knobval_parse(pol->type, text, &v, NULL, 0);
	if (r < 0) {
		set_why(why, whylen, "%s %.64s is not a %s", pol->target, text, knobval_type_name(pol->type));
		return -EINVAL;
	}
	return knobval_format(&v, out, n) < 0 ? -ERANGE : 0;
}

/*
 * Where nginx takes the directive from: 0 when our file is included in its context (then *SET_ELSEWHERE tells
 * whether another file of that context sets it too, with WHY saying where), -ENOENT with WHY otherwise.
 */
static int check_included(const struct knob *k, const struct nginx_conf *c, bool *set_elsewhere, char *why,
			  size_t whylen)
{
	const struct knob_policy *pol = k->pol;
	char ours[PATH_MAX], ctx[NGINX_CONF_CONTEXT_MAX], err[KNOB_WHY_MAX];
	struct nginx_conf_directive d;
	int r = include_path(k->env, pol->context, ours, sizeof(ours));

	*set_elsewhere = false;
	if (r < 0)
		return r;
	r = nginx_conf_included(c, ours, ctx, sizeof(ctx), err, sizeof(err));
	if (r == -ENOENT) {
		set_why(why, whylen, "nginx does not include %s", ours);
		return -ENOENT;
	}
	if (r < 0) {
		set_why(why, whylen, "%s", err);
		return r;
	}
	if (strcmp(ctx, pol->context) != 0) {
		set_why(why, whylen, "nginx includes %s in %s, not %s", ours, ctx,
			strcmp(pol->context, "main") == 0 ? "at the top level" : pol->context);
		return -ENOENT;
	}
	r = nginx_conf_find(c, pol->context, pol->target, &d, err, sizeof(err));
	if (r == 0 && strcmp(c->files[d.file].path, ours) != 0) {
		*set_elsewhere = true;
		set_why(why, whylen, "%s is set in %s:%u; remove it there so that ngx-autotune can manage it in %s",
			pol->target, c->files[d.file].path, d.line, ours);
	}
	return r < 0 && r != -ENOENT ? r : 0;
}

/* ---- the knob's private state ----------------------------------------------------------------------------- */

struct op;

struct nginx_priv {
	struct op *op;    /* the write in flight */
	struct probe_netlink *nl;
	pid_t nl_pid;
	struct probe_netlink_listen_queue *lq;
};

static struct op *in_flight; /* the process's one nginx write */

static struct nginx_priv *priv_of(struct knob *k)
{
	struct nginx_priv *p = k->priv;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	k->priv = p;
	cache.users++;
	if (cache.env != k->env) {
		cache_clear();
		cache.env = k->env;
	}
	return p;
}

/* ---- nginx_directive: probe and read ---------------------------------------------------------------------- */

static int directive_probe(struct knob *k, char *why, size_t whylen)
{
	const struct nginx_conf *c;
	char live[KNOB_VALUE_MAX];
	bool elsewhere;
	int r;

	if (!priv_of(k))
		return -ENOMEM;
	r = directive_check(k->pol, why, whylen);
	if (r < 0)
		return r;
	c = cache_get_sync(k->env, &r, why, whylen);
	if (!c)
		return r == -ENOENT ? -ENOENT : -ENOTSUP;
	r = check_included(k, c, &elsewhere, why, whylen);
	if (r < 0)
		return r;
	if (elsewhere)
		return -ENOTSUP;
	r = k->ops->read(k, live, sizeof(live));
	if (r < 0 && why && !why[0])
		set_why(why, whylen, "cannot read %s: %s", k->pol->target, strerror(-r));
	return r < 0 ? -ENOTSUP : 0;
}

static int directive_read(struct knob *k, char *out, size_t outlen)
{
	const struct knob_policy *pol = k->pol;
	const struct directive_info *info;
	const struct nginx_conf *c;
	struct nginx_conf_directive d;
	char ours[PATH_MAX], why[KNOB_WHY_MAX], *text;
	size_t len;
	bool elsewhere = false;
	int r;

	if (!priv_of(k))
		return -ENOMEM;
	r = directive_check(pol, why, sizeof(why));
	if (r < 0)
		return r;
	r = include_path(k->env, pol->context, ours, sizeof(ours));
	if (r < 0)
		return r;
	c = cache_peek(k->env);
	/* Our file counts only where nginx reads it; without a dump yet, trust it (probe has checked). */
	if (!c || check_included(k, c, &elsewhere, why, sizeof(why)) == 0) {
		r = read_whole(ours, FILE_MAX, &text, &len);
		if (r == 0) {
			r = nginx_conf_file_find(text, len, pol->target, &d, why, sizeof(why));
			free(text);
			if (r == 0 && !elsewhere)
				return nginx_to_value(k, &d, out, outlen, why, sizeof(why));
			if (r == -EINVAL)
				return r;
		} else if (r != -ENOENT) {
			return r;
		}
	}
	if (!c)
		return -EAGAIN;
	r = nginx_conf_find(c, pol->context, pol->target, &d, why, sizeof(why));
	/* A dump older than our last write may still show our file's former line: our file itself said no. */
	if (r == 0 && strcmp(c->files[d.file].path, ours) != 0)
		return nginx_to_value(k, &d, out, outlen, why, sizeof(why));
	if (r < 0 && r != -ENOENT)
		return r;
	info = directive_lookup(pol->target);
	if (!info || !info->dflt)
		return -ENOENT;
	memset(&d, 0, sizeof(d));
	if (info->dflt[0]) {
		d.nargs = 1;
		snprintf(d.args[0], sizeof(d.args[0]), "%s", info->dflt);
	}
	return nginx_to_value(k, &d, out, outlen, why, sizeof(why));
}

/* ---- writes ----------------------------------------------------------------------------------------------- */

/* One file a write changes, with what to put back. */
struct op_file {
	char *path;      /* as nginx names it */
	char *real;      /* where it is written (symlinks resolved) */
	char *old;       /* its content before (NULL: it did not exist) */
	size_t oldlen;
	char *new;
	size_t newlen;
	char *nudge;     /* listen: the text of the first of two reloads (NULL: this file keeps OLD in it) */
	size_t nudgelen;
	bool written;
};

/* listen-queue.state. */
struct lq_state {
	bool have;
	int64_t original, so_before, so_set;
	char **files;
	size_t nfiles;
};

enum op_kind { OP_DIRECTIVE, OP_LISTEN };

struct op {
	enum op_kind kind;
	struct knob *k;          /* NULL once the knob is released: the write runs to its end, unreported */
	struct knob_env *env;
	knob_done_fn done;
	void *ctx;
	char target[POLICY_TARGET_MAX], context[16];
	char args[NGINX_CONF_LINE_MAX]; /* directive: the new arguments */
	bool remove;
	int64_t value;           /* listen: the backlog */
	pid_t pid;
	struct op_file *files;
	size_t nfiles;
	/* listen */
	bool so_changed;
	int64_t so_old;
	bool state_written;
	char *state_old;         /* listen-queue.state before (NULL: none) */
	size_t state_oldlen;
	char **backups_made;     /* backups created by this write */
	size_t nbackups_made;
	bool clear_state;        /* on success: remove the state and the backups */
	bool nudging;            /* the first of two reloads is under way (see plan_nudge) */
	struct lq_state st;
	uint16_t *ports;
	size_t nports;
	/* reload */
	pid_t *old_children;
	size_t nold;
	uv_timer_t timer;
	uint64_t deadline;
	bool reloaded;
	char msg[KNOB_WHY_MAX];
};

static void lq_state_free(struct lq_state *s)
{
	for (size_t i = 0; i < s->nfiles; i++)
		free(s->files[i]);
	free(s->files);
	memset(s, 0, sizeof(*s));
}

static void op_free(struct op *op)
{
	for (size_t i = 0; i < op->nfiles; i++) {
		free(op->files[i].path);
		free(op->files[i].real);
		free(op->files[i].old);
		free(op->files[i].new);
		free(op->files[i].nudge);
	}
	free(op->files);
	free(op->state_old);
	for (size_t i = 0; i < op->nbackups_made; i++)
		free(op->backups_made[i]);
	free(op->backups_made);
	lq_state_free(&op->st);
	free(op->ports);
	free(op->old_children);
	free(op);
}

static void op_closed(uv_handle_t *h)
{
	op_free(h->data);
}

/* Report RC and MSG (once), release the process's write slot, and free OP once its timer is closed. */
static void op_finish(struct op *op, int rc, const char *msg)
{
	struct knob *k = op->k;

	uv_timer_stop(&op->timer);
	if (in_flight == op)
		in_flight = NULL;
	cache.stale = true;
	if (k) {
		struct nginx_priv *p = k->priv;

		if (p && p->op == op)
			p->op = NULL;
		op->done(k, rc, msg && msg[0] ? msg : NULL, op->ctx);
	}
	uv_close((uv_handle_t *)&op->timer, op_closed);
}

static int op_add_file(struct op *op, const char *path, char *old, size_t oldlen, char *new, size_t newlen)
{
	struct op_file *f = realloc(op->files, (op->nfiles + 1) * sizeof(*f));
	char *real;

	if (!f)
		return -ENOMEM;
	op->files = f;
	f = &op->files[op->nfiles];
	memset(f, 0, sizeof(*f));
	real = realpath(path, NULL);
	f->path = strdup(path);
	f->real = real ? real : strdup(path);
	if (!f->path || !f->real) {
		free(f->path);
		free(f->real);
		return -ENOMEM;
	}
	f->old = old;
	f->oldlen = oldlen;
	f->new = new;
	f->newlen = newlen;
	op->nfiles++;
	return 0;
}

/* Write every file's new content, stopping at the first failure. */
static int op_write_files(struct op *op)
{
	for (size_t i = 0; i < op->nfiles; i++) {
		struct op_file *f = &op->files[i];
		int r = write_atomic(f->real, f->new, f->newlen, 0644);

		if (r < 0) {
			set_why(op->msg, sizeof(op->msg), "cannot write %s: %s", f->real, strerror(-r));
			return r;
		}
		f->written = true;
	}
	return 0;
}

/* Write the nudge text of the files that have one (the first of two reloads, see plan_nudge). */
static int op_write_nudge(struct op *op)
{
	for (size_t i = 0; i < op->nfiles; i++) {
		struct op_file *f = &op->files[i];
		int r;

		if (!f->nudge)
			continue;
		r = write_atomic(f->real, f->nudge, f->nudgelen, 0644);
		if (r < 0) {
			set_why(op->msg, sizeof(op->msg), "cannot write %s: %s", f->real, strerror(-r));
			return r;
		}
		f->written = true;
	}
	return 0;
}

/* Put back everything this write changed (files, somaxconn, the state and backups it created). */
static void op_rollback(struct op *op)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < op->nfiles; i++) {
		struct op_file *f = &op->files[i];

		if (!f->written)
			continue;
		if (f->old)
			write_atomic(f->real, f->old, f->oldlen, 0644);
		else
			unlink(f->real);
		f->written = false;
	}
	if (op->so_changed && somaxconn_write(op->env, op->pid, op->so_old) == 0)
		op->so_changed = false;
	if (op->state_written && dir_path(op->env, STATE_NAME, path, sizeof(path)) == 0) {
		if (op->state_old)
			write_atomic(path, op->state_old, op->state_oldlen, 0600);
		else
			unlink(path);
		op->state_written = false;
	}
	for (size_t i = 0; i < op->nbackups_made; i++)
		unlink(op->backups_made[i]);
	op->nbackups_made = 0;
}

static void op_fail(struct op *op, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Undo, reload when nginx may have taken the new files, and report RC. */
static void op_fail(struct op *op, int rc, const char *fmt, ...)
{
	va_list ap;
	char msg[KNOB_WHY_MAX];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	op_rollback(op);
	if (op->reloaded && is_master(op->env, op->pid))
		kill(op->pid, SIGHUP);
	op_finish(op, rc, msg);
}

static bool has_pid(const pid_t *v, size_t n, pid_t p)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == p)
			return true;
	return false;
}

/* A new generation: some worker that was not a child before, and no old worker still working. */
static bool generation_up(struct op *op)
{
	pid_t now[CHILDREN_MAX];
	size_t n;
	bool fresh = false;

	if (children_of(op->env, op->pid, now, CHILDREN_MAX, &n) < 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool old = has_pid(op->old_children, op->nold, now[i]);

		if (!old && is_worker(op->env, now[i]))
			fresh = true;
		if (old && is_worker(op->env, now[i]))
			return false;
	}
	return fresh;
}

static int listen_live(const struct knob_env *env, pid_t pid, const uint16_t *ports, size_t nports,
		       struct probe_netlink **nl, pid_t *nl_pid, struct probe_netlink_listen_queue **lq, int64_t *min,
		       int64_t *max, char *why, size_t whylen);

static int backup_path(const struct knob_env *env, const char *path, char *out, size_t n);

/* The revert is complete: the state file and the backups it lists go. */
static void remove_state_and_backups(struct op *op)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < op->st.nfiles; i++)
		if (backup_path(op->env, op->st.files[i], path, sizeof(path)) == 0)
			unlink(path);
	if (dir_path(op->env, STATE_NAME, path, sizeof(path)) == 0)
		unlink(path);
	if (dir_path(op->env, BACKUP_DIR, path, sizeof(path)) == 0)
		rmdir(path);
}

static void op_test(struct op *op);

static void op_poll(uv_timer_t *t)
{
	struct op *op = t->data;
	uint64_t now = uv_now(op->env->loop);
	int64_t min = 0, max = 0;
	char why[KNOB_WHY_MAX] = "";
	bool up;

	if (!op->k) {
		op_fail(op, -ECANCELED, "the knob was released during the change");
		return;
	}
	up = generation_up(op);

	if (up && op->nudging) {
		/* nginx listened again with the nudge backlog; now the files this write is for. */
		int r;

		op->nudging = false;
		uv_timer_stop(&op->timer);
		free(op->old_children);
		op->old_children = NULL;
		op->nold = 0;
		r = op_write_files(op);
		if (r < 0) {
			op_fail(op, r, "%s", op->msg);
			return;
		}
		op_test(op);
		return;
	}
	if (up && op->kind == OP_LISTEN) {
		struct probe_netlink *nl = NULL;
		struct probe_netlink_listen_queue *lq = NULL;
		pid_t nl_pid = 0;
		int r = listen_live(op->env, op->pid, op->ports, op->nports, &nl, &nl_pid, &lq, &min, &max, why,
				    sizeof(why));

		probe_netlink_close(nl);
		free(lq);
		/* Replaced: every socket has it. Restored: the smallest is the original (as read recorded it). */
		up = r == 0 && (op->clear_state ? min == op->value : min == op->value && max == op->value);
	}
	if (up) {
		if (op->clear_state)
			remove_state_and_backups(op);
		op_finish(op, 0, NULL);
		return;
	}
	if (now < op->deadline)
		return;
	if (op->kind == OP_LISTEN && generation_up(op))
		op_fail(op, -EIO, "nginx reloaded but the live backlog of its ports is %lld..%lld, not %lld%s%s; "
			"the previous configuration was put back", (long long)min, (long long)max, (long long)op->value,
			why[0] ? ": " : "", why);
	else
		op_fail(op, -ETIMEDOUT, "nginx did not start a new generation of workers within %lld ms (see its "
			"error log); the previous configuration was put back", (long long)timeout_of(op->env));
}

/* nginx -t passed: signal the master and poll for the new generation. */
static void op_reload(struct op *op)
{
	size_t cap = CHILDREN_MAX;
	int r;

	if (!is_master(op->env, op->pid)) {
		op_fail(op, -ESRCH, "pid %d is not an nginx master any more", (int)op->pid);
		return;
	}
	op->old_children = calloc(cap, sizeof(pid_t));
	if (!op->old_children) {
		op_fail(op, -ENOMEM, "out of memory");
		return;
	}
	r = children_of(op->env, op->pid, op->old_children, cap, &op->nold);
	if (r < 0) {
		op_fail(op, r, "cannot list the children of nginx %d: %s", (int)op->pid, strerror(-r));
		return;
	}
	if (kill(op->pid, SIGHUP) < 0) {
		r = -errno;
		op_fail(op, r, "cannot signal nginx %d: %s", (int)op->pid, strerror(-r));
		return;
	}
	op->reloaded = true;
	op->deadline = uv_now(op->env->loop) + (uint64_t)timeout_of(op->env);
	uv_timer_start(&op->timer, op_poll, POLL_MS, POLL_MS);
}

static void op_tested(struct spawn *sp)
{
	struct op *op = sp->ctx;
	struct run_result res;

	spawn_result(sp, "nginx -t", timeout_of(op->env), &res);
	free(res.out);
	if (!op->k) {
		op_fail(op, -ECANCELED, "the knob was released during the change");
		return;
	}
	if (res.rc == -EIO) {
		/* nginx refused the candidate: that value cannot be used here. */
		op_fail(op, -EINVAL, "%s", res.msg);
		return;
	}
	if (res.rc < 0) {
		op_fail(op, res.rc, "%s", res.msg);
		return;
	}
	op_reload(op);
}

static void op_test(struct op *op)
{
	char *argv[8];
	int r;

	nginx_argv(op->env, "-t", argv);
	r = spawn_start(op->env->loop, argv, TEST_OUT_MAX, TEST_OUT_MAX, timeout_of(op->env), op_tested, op, NULL);
	if (r < 0)
		op_fail(op, r, "cannot run nginx -t: %s", strerror(-r));
}

static void directive_dumped(struct op *op, struct nginx_conf *c)
{
	struct knob shadow;
	struct knob_policy pol;
	char ours[PATH_MAX], err[KNOB_WHY_MAX] = "", *old = NULL, *new = NULL;
	size_t oldlen = 0, newlen = 0;
	bool elsewhere;
	int r;

	/* check_included wants a knob; the op outlives it, so it gets one made of the op's copies. */
	memset(&shadow, 0, sizeof(shadow));
	memset(&pol, 0, sizeof(pol));
	snprintf(pol.target, sizeof(pol.target), "%s", op->target);
	snprintf(pol.context, sizeof(pol.context), "%s", op->context);
	shadow.pol = &pol;
	shadow.env = op->env;
	r = check_included(&shadow, c, &elsewhere, err, sizeof(err));
	if (r < 0 || elsewhere) {
		op_finish(op, r < 0 ? r : -ENOTSUP, err);
		return;
	}
	r = include_path(op->env, op->context, ours, sizeof(ours));
	if (r == 0) {
		r = read_whole(ours, FILE_MAX, &old, &oldlen);
		if (r == -ENOENT)
			r = 0;
	}
	if (r < 0) {
		op_finish(op, r, "cannot read the include file");
		return;
	}
	r = nginx_conf_set_directive(old ? old : "", oldlen, op->target, op->remove ? NULL : op->args, &new, &newlen,
				     err, sizeof(err));
	if (r < 0) {
		free(old);
		op_finish(op, r, err);
		return;
	}
	r = op_add_file(op, ours, old, oldlen, new, newlen);
	if (r < 0) {
		free(old);
		free(new);
		op_finish(op, r, "out of memory");
		return;
	}
	r = op_write_files(op);
	if (r < 0) {
		op_fail(op, r, "%s", op->msg);
		return;
	}
	op_test(op);
}

static void listen_dumped(struct op *op, struct nginx_conf *c);

static void op_dumped(struct spawn *sp)
{
	struct op *op = sp->ctx;
	struct run_result res;
	struct nginx_conf c;
	char err[KNOB_WHY_MAX];
	int r;

	spawn_result(sp, "nginx -T", timeout_of(op->env), &res);
	if (!op->k) {
		free(res.out);
		op_finish(op, -ECANCELED, NULL);
		return;
	}
	if (res.rc < 0) {
		op_finish(op, res.rc, res.msg);
		return;
	}
	r = nginx_conf_parse(res.out, res.outlen, &c, err, sizeof(err));
	free(res.out);
	if (r < 0) {
		op_finish(op, r, err);
		return;
	}
	if (op->kind == OP_DIRECTIVE)
		directive_dumped(op, &c);
	else
		listen_dumped(op, &c);
	nginx_conf_free(&c);
}

/* A new write of K: checks that need no child, then nginx -T. -EINPROGRESS or -errno. */
static int op_start(struct knob *k, struct op *op, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct nginx_priv *p = priv_of(k);
	char *argv[8];
	int r;

	if (!p) {
		free(op);
		return -ENOMEM;
	}
	if (!k->env->loop) {
		free(op);
		set_why(why, whylen, "no event loop");
		return -EINVAL;
	}
	if (in_flight) {
		free(op);
		set_why(why, whylen, "another nginx change is in flight");
		return -EBUSY;
	}
	if (!is_master(k->env, k->env->nginx_pid)) {
		free(op);
		set_why(why, whylen, "no nginx master running (pid %d)", (int)k->env->nginx_pid);
		return -ESRCH;
	}
	op->k = k;
	op->env = k->env;
	op->done = done;
	op->ctx = ctx;
	op->pid = k->env->nginx_pid;
	snprintf(op->target, sizeof(op->target), "%s", k->pol->target);
	snprintf(op->context, sizeof(op->context), "%s", k->pol->context);
	uv_timer_init(k->env->loop, &op->timer);
	op->timer.data = op;
	nginx_argv(k->env, "-T", argv);
	r = spawn_start(k->env->loop, argv, NGINX_CONF_DUMP_MAX, TEST_OUT_MAX, timeout_of(k->env), op_dumped, op, NULL);
	if (r < 0) {
		op->k = NULL;
		uv_close((uv_handle_t *)&op->timer, op_closed);
		return r;
	}
	in_flight = op;
	p->op = op;
	return -EINPROGRESS;
}

static int directive_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done,
			   void *ctx)
{
	struct op *op;
	int r;

	r = directive_check(k->pol, why, whylen);
	if (r < 0)
		return r;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->kind = OP_DIRECTIVE;
	r = value_to_nginx(k->pol, value, op->args, sizeof(op->args), &op->remove, why, whylen);
	if (r < 0) {
		free(op);
		return r;
	}
	return op_start(k, op, why, whylen, done, ctx);
}

static void release(struct knob *k)
{
	struct nginx_priv *p = k->priv;

	if (!p)
		return;
	if (p->op)
		p->op->k = NULL;
	probe_netlink_close(p->nl);
	free(p->lq);
	free(p);
	k->priv = NULL;
	if (cache.users > 0 && --cache.users == 0)
		cache_clear();
}

const struct knob_ops knob_nginx_ops = {
	.kind = "nginx_directive",
	.probe = directive_probe,
	.read = directive_read,
	.write = directive_write,
	.release = release,
};

/* ---- listen_queue ----------------------------------------------------------------------------------------- */

/*
 * The smallest and largest live backlog over the listening TCP sockets of PORTS in nginx's namespace (a probe
 * kept in *NL while *NL_PID is nginx's pid). 0, -ENOENT (no such socket), -errno with WHY.
 */
static int listen_live(const struct knob_env *env, pid_t pid, const uint16_t *ports, size_t nports,
		       struct probe_netlink **nl, pid_t *nl_pid, struct probe_netlink_listen_queue **lq, int64_t *min,
		       int64_t *max, char *why, size_t whylen)
{
	size_t n = 0, seen = 0;
	int r;

	if (*nl && *nl_pid != pid) {
		probe_netlink_close(*nl);
		*nl = NULL;
	}
	if (!*nl) {
		r = probe_netlink_open(real_root(env) ? pid : 0, nl, why, whylen);
		if (r < 0)
			return r;
		*nl_pid = pid;
	}
	if (!*lq && !(*lq = calloc(LISTEN_SOCKETS_MAX, sizeof(**lq))))
		return -ENOMEM;
	r = probe_netlink_tcp(*nl, *lq, LISTEN_SOCKETS_MAX, &n, NULL);
	if (r < 0) {
		set_why(why, whylen, "inet_diag: %s", strerror(-r));
		probe_netlink_close(*nl);
		*nl = NULL;
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		const struct probe_netlink_listen_queue *q = &(*lq)[i];
		bool ours = false;

		for (size_t j = 0; j < nports && !ours; j++)
			ours = q->port == ports[j];
		if (!ours)
			continue;
		if (seen == 0 || q->backlog < *min)
			*min = q->backlog;
		if (seen == 0 || q->backlog > *max)
			*max = q->backlog;
		seen++;
	}
	if (seen == 0) {
		set_why(why, whylen, "no listening socket of nginx's ports found");
		return -ENOENT;
	}
	return 0;
}

/* The TCP ports of C's listen directives (TARGETS_ONLY: of those that carry backlog=) into a malloc'd *OUT. */
static int listen_ports(const struct nginx_conf *c, bool targets_only, uint16_t **out, size_t *n, size_t *ntargets,
			char *why, size_t whylen)
{
	struct nginx_listen *l;
	size_t nl;
	int r = nginx_conf_listens(c, &l, &nl, why, whylen);

	*out = NULL;
	*n = 0;
	if (ntargets)
		*ntargets = 0;
	if (r < 0)
		return r;
	*out = calloc(nl ? nl : 1, sizeof(**out));
	if (!*out) {
		free(l);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nl; i++) {
		if (l[i].family == AF_UNIX || l[i].udp || l[i].port == 0 || (targets_only && !l[i].target))
			continue;
		if (l[i].target && ntargets)
			(*ntargets)++;
		bool dup = false;

		for (size_t j = 0; j < *n; j++)
			dup = dup || (*out)[j] == l[i].port;
		if (!dup)
			(*out)[(*n)++] = l[i].port;
	}
	free(l);
	return 0;
}

static int listen_read(struct knob *k, char *out, size_t outlen)
{
	struct nginx_priv *p = priv_of(k);
	const struct nginx_conf *c;
	uint16_t *ports;
	size_t n;
	int64_t min = 0, max = 0;
	char why[KNOB_WHY_MAX];
	int r;

	if (!p)
		return -ENOMEM;
	if (k->env->nginx_pid <= 0)
		return -ESRCH;
	c = cache_peek(k->env);
	if (!c)
		return -EAGAIN;
	r = listen_ports(c, false, &ports, &n, NULL, why, sizeof(why));
	if (r < 0)
		return r;
	r = listen_live(k->env, k->env->nginx_pid, ports, n, &p->nl, &p->nl_pid, &p->lq, &min, &max, why,
			sizeof(why));
	free(ports);
	if (r < 0)
		return r;
	return snprintf(out, outlen, "%lld", (long long)min) >= (int)outlen ? -ERANGE : 0;
}

static int listen_probe(struct knob *k, char *why, size_t whylen)
{
	const struct nginx_conf *c;
	uint16_t *ports;
	size_t n, ntargets;
	char dir[PATH_MAX], live[32];
	int64_t so;
	int r;

	if (!priv_of(k))
		return -ENOMEM;
	if (k->pol->type != KNOB_T_INT) {
		set_why(why, whylen, "the listen queue is an int, not %s", knobval_type_name(k->pol->type));
		return -ENOTSUP;
	}
	if (k->env->nginx_pid <= 0) {
		set_why(why, whylen, "nginx is not running");
		return -ENOENT;
	}
	c = cache_get_sync(k->env, &r, why, whylen);
	if (!c)
		return r == -ENOENT ? -ENOENT : -ENOTSUP;
	r = listen_ports(c, true, &ports, &n, &ntargets, why, whylen);
	free(ports);
	if (r < 0)
		return -ENOTSUP;
	if (ntargets == 0) {
		set_why(why, whylen, "no TCP listen directive in nginx's configuration");
		return -ENOENT;
	}
	r = somaxconn_read(k->env, k->env->nginx_pid, &so);
	if (r < 0) {
		set_why(why, whylen, "cannot read net.core.somaxconn in nginx's namespace: %s", strerror(-r));
		return -ENOTSUP;
	}
	r = dir_path(k->env, "", dir, sizeof(dir));
	if (r == 0 && access(dir, W_OK) < 0)
		r = -errno;
	if (r < 0) {
		set_why(why, whylen, "%s: %s (the listen queue keeps its backups there)", dir, strerror(-r));
		return -ENOENT;
	}
	r = listen_read(k, live, sizeof(live));
	if (r < 0) {
		set_why(why, whylen, "cannot read the live backlog: %s", strerror(-r));
		return -ENOTSUP;
	}
	return 0;
}

/* The backup of PATH (as nginx names it) into OUT. */
static int backup_path(const struct knob_env *env, const char *path, char *out, size_t n)
{
	char name[PATH_MAX], rel[PATH_MAX + 32];
	size_t o = 0;

	for (const char *p = path; *p; p++) {
		if (o + 4 >= sizeof(name))
			return -ENAMETOOLONG;
		if (*p == '/' || *p == '%')
			o += (size_t)snprintf(name + o, sizeof(name) - o, "%%%02X", (unsigned char)*p);
		else
			name[o++] = *p;
	}
	name[o] = '\0';
	if ((size_t)snprintf(rel, sizeof(rel), "%s/%s", BACKUP_DIR, name) >= sizeof(rel))
		return -ENAMETOOLONG;
	return dir_path(env, rel, out, n);
}

/* Read listen-queue.state (absent: S->have false). 0, or -EINVAL when it is not ours. */
static int state_load(const struct knob_env *env, struct lq_state *s, char **raw, size_t *rawlen)
{
	char path[PATH_MAX], *text, *line, *save = NULL;
	size_t len;
	bool orig = false, so = false;
	int r = dir_path(env, STATE_NAME, path, sizeof(path));

	memset(s, 0, sizeof(*s));
	*raw = NULL;
	*rawlen = 0;
	if (r < 0)
		return r;
	r = read_whole(path, 1 << 20, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (memchr(text, '\0', len)) {
		free(text);
		return -EINVAL;
	}
	*raw = strdup(text);
	if (!*raw) {
		free(text);
		return -ENOMEM;
	}
	*rawlen = len;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long long a, b;
		int used = 0;

		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (sscanf(line, "original %lld%n", &a, &used) == 1 && line[used] == '\0' && a > 0) {
			s->original = a;
			orig = true;
		} else if (sscanf(line, "somaxconn %lld %lld%n", &a, &b, &used) == 2 && line[used] == '\0' && a >= 0 &&
			   b >= 0) {
			s->so_before = a;
			s->so_set = b;
			so = true;
		} else if (strncmp(line, "file /", 6) == 0 && s->nfiles < STATE_FILES_MAX) {
			char **v = realloc(s->files, (s->nfiles + 1) * sizeof(*v));

			if (!v || !(v[s->nfiles] = strdup(line + 5))) {
				if (v)
					s->files = v;
				r = -ENOMEM;
				break;
			}
			s->files = v;
			s->nfiles++;
		} else {
			r = -EINVAL;
			break;
		}
	}
	free(text);
	if (r == 0 && (!orig || !so))
		r = -EINVAL;
	if (r < 0) {
		lq_state_free(s);
		free(*raw);
		*raw = NULL;
		return r;
	}
	s->have = true;
	return 0;
}

static int state_text(const struct lq_state *s, char **out, size_t *len)
{
	size_t cap = 512, n;
	char *buf;

	for (size_t i = 0; i < s->nfiles; i++)
		cap += strlen(s->files[i]) + 8;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	n = (size_t)snprintf(buf, cap,
			     "# ngx-autotune listen_queue: what its first change replaced; this file and %s/ are\n"
			     "# removed when that is restored. Do not edit.\noriginal %lld\nsomaxconn %lld %lld\n",
			     BACKUP_DIR, (long long)s->original, (long long)s->so_before, (long long)s->so_set);
	for (size_t i = 0; i < s->nfiles; i++)
		n += (size_t)snprintf(buf + n, cap - n, "file %s\n", s->files[i]);
	*out = buf;
	*len = n;
	return 0;
}

static bool state_has(const struct lq_state *s, const char *path)
{
	for (size_t i = 0; i < s->nfiles; i++)
		if (strcmp(s->files[i], path) == 0)
			return true;
	return false;
}

static int state_add(struct lq_state *s, const char *path)
{
	char **v;

	if (state_has(s, path))
		return 0;
	if (s->nfiles >= STATE_FILES_MAX)
		return -E2BIG;
	v = realloc(s->files, (s->nfiles + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->files = v;
	if (!(v[s->nfiles] = strdup(path)))
		return -ENOMEM;
	s->nfiles++;
	return 0;
}

/*
 * Revert: each recorded file whose only changes since its backup are backlog= parameters goes back to its backup,
 * byte for byte. A file an operator has edited since is left to plan_edit, which sets backlog= to the original.
 */
static int plan_restore(struct op *op)
{
	for (size_t i = 0; i < op->st.nfiles; i++) {
		char bpath[PATH_MAX], *bak = NULL, *cur = NULL;
		size_t blen = 0, clen = 0;
		int r = backup_path(op->env, op->st.files[i], bpath, sizeof(bpath));

		if (r == 0 && (read_whole(bpath, FILE_MAX, &bak, &blen) < 0 ||
			       read_whole(op->st.files[i], FILE_MAX, &cur, &clen) < 0 ||
			       !nginx_conf_same_but_backlog(bak, blen, cur, clen))) {
			free(bak);
			free(cur);
			continue;
		}
		if (r == 0)
			r = op_add_file(op, op->st.files[i], cur, clen, bak, blen);
		if (r < 0) {
			free(bak);
			free(cur);
			set_why(op->msg, sizeof(op->msg), "cannot restore %s: %s", op->st.files[i], strerror(-r));
			return r;
		}
	}
	return 0;
}

static bool planned(const struct op *op, const char *path)
{
	for (size_t i = 0; i < op->nfiles; i++)
		if (strcmp(op->files[i].path, path) == 0)
			return true;
	return false;
}

/* Edit: backlog= on the target listens of each file not planned yet, which must read as nginx -T showed it. */
static int plan_edit(struct op *op, const struct nginx_conf *c)
{
	struct nginx_listen *l;
	size_t nl, *starts;
	char err[KNOB_WHY_MAX];
	int r = nginx_conf_listens(c, &l, &nl, err, sizeof(err));

	if (r < 0) {
		set_why(op->msg, sizeof(op->msg), "%s", err);
		return r;
	}
	starts = calloc(nl ? nl : 1, sizeof(*starts));
	if (!starts) {
		free(l);
		return -ENOMEM;
	}
	for (size_t fi = 0; fi < c->nfiles && r == 0; fi++) {
		const struct nginx_conf_file *f = &c->files[fi];
		size_t ns = 0, curlen, newlen;
		char *cur = NULL, *new = NULL;

		for (size_t i = 0; i < nl; i++)
			if (l[i].target && l[i].file == fi)
				starts[ns++] = l[i].start;
		if (ns == 0 || planned(op, f->path))
			continue;
		r = read_whole(f->path, FILE_MAX, &cur, &curlen);
		if (r < 0) {
			set_why(op->msg, sizeof(op->msg), "cannot read %s: %s", f->path, strerror(-r));
			break;
		}
		if (curlen != f->len || memcmp(cur, f->text, curlen) != 0) {
			free(cur);
			set_why(op->msg, sizeof(op->msg), "%s changed while it was being read; try again", f->path);
			r = -EAGAIN;
			break;
		}
		r = nginx_conf_set_backlog(cur, curlen, starts, ns, op->value, &new, &newlen, err, sizeof(err));
		if (r < 0) {
			free(cur);
			set_why(op->msg, sizeof(op->msg), "%s: %s", f->path, err);
			break;
		}
		if (newlen == curlen && memcmp(new, cur, curlen) == 0) {
			free(cur);
			free(new);
			continue;
		}
		r = op_add_file(op, f->path, cur, curlen, new, newlen);
		if (r < 0) {
			free(cur);
			free(new);
		}
	}
	free(starts);
	free(l);
	return r;
}

/* Backups of the files this edit touches for the first time; they join the state's list. */
static int make_backups(struct op *op)
{
	char dir[PATH_MAX];
	int r = dir_path(op->env, BACKUP_DIR, dir, sizeof(dir));

	if (r < 0)
		return r;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	for (size_t i = 0; i < op->nfiles; i++) {
		const struct op_file *f = &op->files[i];
		char bpath[PATH_MAX], **v;

		if (state_has(&op->st, f->path) || (f->old && f->newlen == f->oldlen &&
						     memcmp(f->new, f->old, f->oldlen) == 0))
			continue;
		r = backup_path(op->env, f->path, bpath, sizeof(bpath));
		if (r == 0)
			r = write_atomic(bpath, f->old, f->oldlen, 0600);
		if (r < 0) {
			set_why(op->msg, sizeof(op->msg), "cannot back up %s: %s", f->path, strerror(-r));
			return r;
		}
		v = realloc(op->backups_made, (op->nbackups_made + 1) * sizeof(*v));
		if (!v || !(v[op->nbackups_made] = strdup(bpath))) {
			if (v)
				op->backups_made = v;
			unlink(bpath);
			return -ENOMEM;
		}
		op->backups_made = v;
		op->nbackups_made++;
		r = state_add(&op->st, f->path);
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_state(struct op *op)
{
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	int r = dir_path(op->env, STATE_NAME, path, sizeof(path));

	if (r == 0)
		r = state_text(&op->st, &text, &len);
	if (r < 0)
		return r;
	r = write_atomic(path, text, len, 0600);
	free(text);
	if (r == 0)
		op->state_written = true;
	else
		set_why(op->msg, sizeof(op->msg), "cannot write %s: %s", path, strerror(-r));
	return r;
}

/* nginx's backlog for a listen without backlog= (NGX_LISTEN_BACKLOG on Linux). */
#define NGINX_BACKLOG_DEFAULT 511

static int64_t configured_backlog(const struct nginx_listen *l)
{
	return l->has_backlog ? l->backlog : NGINX_BACKLOG_DEFAULT;
}

static struct op_file *op_file_of(const struct op *op, const char *path)
{
	for (size_t i = 0; i < op->nfiles; i++)
		if (strcmp(op->files[i].path, path) == 0)
			return &op->files[i];
	return NULL;
}

/* The listens of the dump C with OP's new files in place of theirs (the configuration this write leaves). */
static int listens_after(const struct op *op, const struct nginx_conf *c, struct nginx_listen **out, size_t *n,
			 char *err, size_t errlen)
{
	struct nginx_conf after;
	size_t cap = 1, len = 0;
	char *dump;
	int r;

	for (size_t i = 0; i < c->nfiles; i++) {
		const struct op_file *f = op_file_of(op, c->files[i].path);

		cap += strlen(c->files[i].path) + 32 + (f ? f->newlen : c->files[i].len);
	}
	dump = malloc(cap);
	if (!dump)
		return -ENOMEM;
	for (size_t i = 0; i < c->nfiles; i++) {
		const struct op_file *f = op_file_of(op, c->files[i].path);
		const char *text = f ? f->new : c->files[i].text;
		size_t tlen = f ? f->newlen : c->files[i].len;

		len += (size_t)snprintf(dump + len, cap - len, "# configuration file %s:\n", c->files[i].path);
		memcpy(dump + len, text, tlen);
		len += tlen;
		dump[len++] = '\n';
	}
	r = nginx_conf_parse(dump, len, &after, err, errlen);
	free(dump);
	if (r < 0)
		return r;
	r = nginx_conf_listens(&after, out, n, err, errlen);
	nginx_conf_free(&after);
	return r;
}

/*
 * nginx calls listen() again on reload only for a socket whose configured backlog changed (ngx_init_cycle compares
 * the old and new backlog), and the kernel fixes the limit at listen() as min(backlog, somaxconn). So when
 * somaxconn cut the live limit and this write leaves a socket's configured backlog as it was (the default 511
 * written out as backlog=511, or restored from backlog=511 to none), the reload changes nothing (found on a real
 * nginx: listen_queue 16 -> 511 with somaxconn 16 failed, the live limit stayed 16). Such a write goes in two
 * reloads: first every target listen at a backlog that neither configuration has, then the files this write is
 * for. Sets OP->nudging and each file's nudge text; nothing when one reload does it.
 */
static int plan_nudge(struct op *op, const struct nginx_conf *c)
{
	struct nginx_listen *cur = NULL, *fin = NULL;
	size_t ncur = 0, nfin = 0, *starts = NULL;
	int64_t min = 0, max = 0, nudge;
	struct probe_netlink *nl = NULL;
	struct probe_netlink_listen_queue *lq = NULL;
	pid_t nl_pid = 0;
	char err[KNOB_WHY_MAX];
	bool same = false;
	int r;

	r = listen_live(op->env, op->pid, op->ports, op->nports, &nl, &nl_pid, &lq, &min, &max, err, sizeof(err));
	probe_netlink_close(nl);
	free(lq);
	if (r < 0 || (min == op->value && max == op->value))
		return 0; /* nothing to move (or nothing to read: the reload's own check will say) */
	r = nginx_conf_listens(c, &cur, &ncur, err, sizeof(err));
	if (r == 0)
		r = listens_after(op, c, &fin, &nfin, err, sizeof(err));
	if (r < 0) {
		set_why(op->msg, sizeof(op->msg), "%s", err);
		goto out;
	}
	/* Same files but backlog=, so the same listens in the same order; anything else: nudge to be safe. */
	same = nfin != ncur;
	for (size_t i = 0; i < ncur && !same; i++)
		same = cur[i].target && configured_backlog(&cur[i]) == configured_backlog(&fin[i]);
	if (!same)
		goto out;
	/* A backlog neither configuration has (below the value, else above), so both reloads change every socket. */
	for (int64_t step = 1;; step++) {
		bool taken = false;

		nudge = step < op->value ? op->value - step : op->value + (step - op->value + 1);
		for (size_t i = 0; i < ncur && !taken; i++)
			taken = (cur[i].target && configured_backlog(&cur[i]) == nudge) ||
				(i < nfin && fin[i].target && configured_backlog(&fin[i]) == nudge);
		if (!taken)
			break;
	}
	starts = calloc(ncur ? ncur : 1, sizeof(*starts));
	if (!starts) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t fi = 0; fi < c->nfiles && r == 0; fi++) {
		const struct nginx_conf_file *cf = &c->files[fi];
		struct op_file *f = op_file_of(op, cf->path);
		size_t ns = 0;

		for (size_t i = 0; i < ncur; i++)
			if (cur[i].target && cur[i].file == fi)
				starts[ns++] = cur[i].start;
		if (ns == 0)
			continue;
		if (!f) {
			/* This write leaves the file as it is; it still takes the nudge, and is put back after. */
			char *now = NULL, *copy;
			size_t nowlen = 0;

			r = read_whole(cf->path, FILE_MAX, &now, &nowlen);
			if (r < 0) {
				set_why(op->msg, sizeof(op->msg), "cannot read %s: %s", cf->path, strerror(-r));
				break;
			}
			copy = malloc(nowlen + 1);
			if (copy) {
				memcpy(copy, now, nowlen);
				copy[nowlen] = '\0';
			}
			r = copy ? op_add_file(op, cf->path, now, nowlen, copy, nowlen) : -ENOMEM;
			if (r < 0) {
				free(now);
				free(copy);
				break;
			}
			f = &op->files[op->nfiles - 1];
		}
		if (f->oldlen != cf->len || !f->old || memcmp(f->old, cf->text, cf->len) != 0) {
			set_why(op->msg, sizeof(op->msg), "%s changed while it was being read; try again", cf->path);
			r = -EAGAIN;
			break;
		}
		r = nginx_conf_set_backlog(f->old, f->oldlen, starts, ns, nudge, &f->nudge, &f->nudgelen, err,
					   sizeof(err));
		if (r < 0)
			set_why(op->msg, sizeof(op->msg), "%s: %s", cf->path, err);
	}
	if (r == 0)
		op->nudging = true;
out:
	free(starts);
	free(cur);
	free(fin);
	return r;
}

static void listen_dumped(struct op *op, struct nginx_conf *c)
{
	size_t ntargets = 0;
	int64_t so_cur, so_target, min = 0, max = 0;
	char why[KNOB_WHY_MAX] = "";
	struct probe_netlink *nl = NULL;
	struct probe_netlink_listen_queue *lq = NULL;
	pid_t nl_pid = 0;
	int r;

	r = listen_ports(c, true, &op->ports, &op->nports, &ntargets, why, sizeof(why));
	if (r == 0 && ntargets == 0) {
		r = -ENOENT;
		set_why(why, sizeof(why), "no TCP listen directive in nginx's configuration");
	}
	if (r < 0) {
		op_finish(op, r, why);
		return;
	}
	r = state_load(op->env, &op->st, &op->state_old, &op->state_oldlen);
	if (r < 0) {
		op_finish(op, r, "listen-queue.state is damaged; restore the files from listen-backup/ by hand");
		return;
	}
	r = somaxconn_read(op->env, op->pid, &so_cur);
	if (r < 0) {
		op_finish(op, r, "cannot read net.core.somaxconn in nginx's namespace");
		return;
	}
	if (!op->st.have) {
		/* The first change: what it replaces is the original a revert must find again. */
		r = listen_live(op->env, op->pid, op->ports, op->nports, &nl, &nl_pid, &lq, &min, &max, why,
				sizeof(why));
		probe_netlink_close(nl);
		free(lq);
		if (r < 0) {
			op_finish(op, r, why);
			return;
		}
		op->st.original = min;
		op->st.so_before = so_cur;
		op->st.so_set = so_cur;
	}
	op->clear_state = op->st.have && op->value == op->st.original;
	r = op->clear_state ? plan_restore(op) : 0;
	if (r == 0)
		r = plan_edit(op, c);
	if (r == 0)
		r = plan_nudge(op, c);
	if (r < 0) {
		op_finish(op, r, op->msg);
		return;
	}
	/* somaxconn: at least the value; what we raised comes down again, never below what it was before us. */
	so_target = so_cur;
	if (so_cur < op->value)
		so_target = op->value;
	else if (op->st.have && so_cur == op->st.so_set)
		so_target = op->value > op->st.so_before ? op->value : op->st.so_before;
	if (!op->clear_state) {
		op->st.so_set = so_target;
		r = make_backups(op);
		if (r == 0)
			r = write_state(op);
		if (r < 0) {
			op_fail(op, r, "%s", op->msg);
			return;
		}
	}
	if (so_target != so_cur) {
		r = somaxconn_write(op->env, op->pid, so_target);
		if (r < 0) {
			op_fail(op, r, "cannot set net.core.somaxconn to %lld in nginx's namespace: %s",
				(long long)so_target, strerror(-r));
			return;
		}
		op->so_changed = true;
		op->so_old = so_cur;
	}
	r = op->nudging ? op_write_nudge(op) : op_write_files(op);
	if (r < 0) {
		op_fail(op, r, "%s", op->msg);
		return;
	}
	op_test(op);
}

static int listen_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct knobval v;
	struct op *op;
	char err[128];

	if (k->pol->type != KNOB_T_INT || knobval_parse(KNOB_T_INT, value, &v, err, sizeof(err)) < 0 ||
	    v.v[0] < 1 || v.v[0] > INT32_MAX) {
		set_why(why, whylen, "backlog '%.64s' is not an integer from 1 to %d", value, INT32_MAX);
		return -EINVAL;
	}
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->kind = OP_LISTEN;
	op->value = v.v[0];
	return op_start(k, op, why, whylen, done, ctx);
}

const struct knob_ops knob_listen_ops = {
	.kind = "listen_queue",
	.probe = listen_probe,
	.read = listen_read,
	.write = listen_write,
	.release = release,
};
