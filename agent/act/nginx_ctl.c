/*
 * nginx_ctl: see nginx_ctl.h. Moved here from knob_nginx.c, where the dump cache and the write in flight were
 * file-scope state; they now hang off struct nginx_ctl.
 */
#define _GNU_SOURCE

#include "act/nginx_ctl.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "act/crash.h"
#include "act/spawn.h"
#include "core/parse.h"
#include "config.h"
#include "netns.h"
#include "strutil.h"
#include "trust.h"

#define POLL_MS 50           /* generation checks after a reload */
#define STRAGGLER_MS 2000    /* a new generation up this long beside old workers that never got the quit */
#define DUMP_FRESH_MS 2000   /* probes within this share one nginx -T */
#define DUMP_STALE_MS 30000  /* reads refresh the dump in the background past this */
#define TEST_OUT_MAX 65536   /* bytes of nginx -t output kept */
#define CHILDREN_MAX 4096    /* children of the master */

#define WORKER_TITLE "nginx: worker process"
#define SHUTTING_TITLE "nginx: worker process is shutting down"
#define ERROR_TAIL 4096 /* bytes of nginx's error log quoted when a reload brings no workers */
#define MASTER_TITLE "nginx: master process"

struct nginx_ctl {
	/* The last `nginx -T`, shared by every nginx knob of the environment. USERS counts the knobs holding it;
	 * the last drop forgets it. */
	struct nginx_conf conf;
	bool have;
	int64_t at;                 /* ENV->now_ms when it was taken */
	bool stale;                 /* a change has ended since */
	unsigned gen;               /* counts the marks of STALE: a failure is of the files as they were at its start */
	int fail_rc;                /* the last nginx_ctl_conf's nginx -T failed (-errno), at FAIL_AT, saying FAIL_WHY */
	int64_t fail_at;
	char fail_why[KNOB_WHY_MAX];
	bool refreshing;            /* a background nginx -T is running, started at generation REFRESH_GEN */
	unsigned refresh_gen;
	const struct knob_env *refresh_env;
	unsigned users;
	struct nginx_change *change; /* the one change in flight */
	bool freeing;               /* nginx_ctl_free was called while a child or a change ran */
	/* A reload brought no new generation of workers: no change starts until nginx_ctl_forget (the agent's
	 * reload). HALT says what happened, with the last lines of nginx's error log. */
	bool halted;
	pid_t halt_pid;             /* the master it happened to: a new master (nginx restarted) lifts it */
	char halt[1024];
	/* The nginx children on the loop, one at a time (nginx_start): one runs, the others wait in order. */
	bool child_running;
	struct turn *waiting;
	unsigned turns;             /* running and waiting: CTL is not freed before they have ended */
};

/* What a finished child means: RC 0 (exit 0) or -errno; MSG its complaint; OUT its standard output. */
struct nginx_ctl_result {
	int rc;
	char msg[KNOB_WHY_MAX];
	char *out;
	size_t outlen;
};

/* ---- files ---------------------------------------------------------------------------------------------------- */

bool nginx_ctl_real_root(const struct knob_env *env)
{
	return !env->root || env->root[0] == '\0' || strcmp(env->root, "/") == 0;
}

/* ---- endpoints ---------------------------------------------------------------------------------------------- */

/* E from listen L: its numeric address (a host name, or an address that does not parse, is any address). */
static void endpoint_of(const struct nginx_listen *l, struct nginx_endpoint *e)
{
	memset(e, 0, sizeof(*e));
	e->family = l->family;
	e->port = l->port;
	if ((l->family != AF_INET && l->family != AF_INET6) || inet_pton(l->family, l->addr, e->addr) != 1)
		e->family = AF_UNSPEC;
}

int nginx_endpoints(const struct nginx_listen *l, size_t nl, bool (*keep)(const struct nginx_listen *),
		    struct nginx_endpoint **out, size_t *n)
{
	*n = 0;
	*out = calloc(nl ? nl : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < nl; i++) {
		struct nginx_endpoint e;
		bool dup = false;

		if (!keep(&l[i]))
			continue;
		endpoint_of(&l[i], &e);
		for (size_t j = 0; j < *n && !dup; j++)
			dup = memcmp(&(*out)[j], &e, sizeof(e)) == 0;
		if (!dup)
			(*out)[(*n)++] = e;
	}
	return 0;
}

bool nginx_endpoint_has(const struct nginx_endpoint *e, size_t n, int family, const char *addr, uint16_t port)
{
	unsigned char a[16] = { 0 };
	bool parsed = (family == AF_INET || family == AF_INET6) && inet_pton(family, addr, a) == 1;

	for (size_t i = 0; i < n; i++) {
		if (e[i].port != port)
			continue;
		if (e[i].family == AF_UNSPEC || !parsed)
			return true;
		if (e[i].family == family && memcmp(e[i].addr, a, family == AF_INET ? 4 : 16) == 0)
			return true;
	}
	return false;
}

int nginx_ctl_own_path(const struct knob_env *env, const char *name, char *out, size_t n)
{
	const char *dir = env->include_dir && env->include_dir[0] ? env->include_dir : "/etc/nginx/ngx-autotune";
	size_t dl = strlen(dir);
	int k;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	k = snprintf(out, n, "%.*s/%s", (int)dl, dir, name);
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

int nginx_ctl_backup_path(const struct knob_env *env, const char *dir, const char *path, char *out, size_t n)
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
	if ((size_t)snprintf(rel, sizeof(rel), "%s/%s", dir, name) >= sizeof(rel))
		return -ENAMETOOLONG;
	return nginx_ctl_own_path(env, rel, out, n);
}

int nginx_ctl_read_file(const char *path, size_t max, char **out, size_t *len)
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

int nginx_ctl_write_fd(int fd, const char *data, size_t len)
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

int nginx_ctl_write_file(const char *path, const char *data, size_t len, mode_t mode)
{
	static const char because[] = "a file the agent writes as root";
	char dir[PATH_MAX], tmp[64], err[512];
	const char *slash = strrchr(path, '/'), *base;
	struct stat st;
	int dfd, sfd, fd, r;
	bool exists;

	if (!slash || !slash[1])
		return -EINVAL;
	if ((size_t)snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path) >= sizeof(dir))
		return -ENAMETOOLONG;
	base = slash + 1;
	/* The directory is walked from / and kept open: every step below is relative to what was checked (issue 22,
	 * R3), and the name itself is never a link (nginx_change_add_file resolves them first). */
	r = trust_walk(dir, geteuid(), 0, because, &dfd, err, sizeof(err));
	if (r < 0)
		return r;
	exists = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!exists && errno != ENOENT) {
		r = -errno;
		goto out;
	}
	if (exists && (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode))) {
		r = S_ISLNK(st.st_mode) ? -ELOOP : -EINVAL;
		goto out;
	}
	if (exists && ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		r = -EPERM;
		goto out;
	}
	for (int i = 0;; i++) {
		static unsigned seq;

		snprintf(tmp, sizeof(tmp), ".ngxat-tmp.%ld.%u", (long)getpid(), seq++);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST || i == 100)
			break;
	}
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = nginx_ctl_write_fd(fd, data, len);
	if (r == 0) {
		if (exists) {
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
	if (r == 0 && renameat(dfd, tmp, dfd, base) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		goto out;
	}
	sfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0 || fsync(sfd) < 0)
		r = -errno;
	if (sfd >= 0)
		close(sfd);
out:
	close(dfd);
	return r;
}


/* ---- child processes ------------------------------------------------------------------------------------------ */

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

/* Whether the child failed for want of memory under the data limit the agent gave it (nginx says "malloc(N) failed
 * (12: Cannot allocate memory)", or "mmap(...) failed" with the same errno). */
static bool out_of_memory(const struct spawn *sp)
{
	return sp->data_max && sp->ebuf.p && memmem(sp->ebuf.p, sp->ebuf.len, "(12: ", 5);
}

/* The result of a finished child (its stdout moves into RES, without the slack of its growth). */
static void child_result(struct spawn *sp, const char *what, int64_t timeout_ms, struct nginx_ctl_result *res)
{
	char text[KNOB_WHY_MAX], got[32], max[32];

	memset(res, 0, sizeof(*res));
	child_message(&sp->ebuf, text, sizeof(text));
	if (sp->spawn_rc < 0) {
		res->rc = sp->spawn_rc;
		str_err(res->msg, sizeof(res->msg), "cannot run %s: %s", what,
			sp->refused[0] ? sp->refused : strerror(-sp->spawn_rc));
	} else if (sp->timed_out) {
		res->rc = -ETIMEDOUT;
		str_err(res->msg, sizeof(res->msg), "%s did not finish within %lld ms and was killed", what,
			(long long)timeout_ms);
	} else if (sp->obuf.over) {
		res->rc = -EFBIG;
		str_size(got, sizeof(got), sp->obuf.total);
		str_size(max, sizeof(max), sp->obuf.max);
		if (strcmp(what, "nginx -T") == 0)
			str_err(res->msg, sizeof(res->msg), "nginx -T printed %s, more than the %s the agent reads "
				"([nginx] dump_max)", got, max);
		else
			str_err(res->msg, sizeof(res->msg), "%s printed %s, more than %s", what, got, max);
	} else if ((sp->term_signal || sp->status != 0) && out_of_memory(sp)) {
		/* Not a refusal of the configuration: nginx could not read it within its limit. */
		res->rc = -ENOMEM;
		str_size(max, sizeof(max), sp->data_max);
		str_err(res->msg, sizeof(res->msg), "%s ran out of memory within the %s the agent lets it use "
			"([nginx] memory_max): %s", what, max, text);
	} else if (sp->term_signal || sp->status != 0) {
		res->rc = -EIO;
		if (text[0])
			str_err(res->msg, sizeof(res->msg), "%s", text);
		else
			str_err(res->msg, sizeof(res->msg), "%s exited with %s %d", what,
				sp->term_signal ? "signal" : "status", sp->term_signal ? sp->term_signal : (int)sp->status);
	} else {
		/* Without the slack of its growth, with room for the NUL the parser puts after it. */
		char *p = sp->obuf.p ? realloc(sp->obuf.p, sp->obuf.len + 1) : NULL;

		res->out = p ? p : sp->obuf.p;
		res->outlen = sp->obuf.len;
		sp->obuf.p = NULL;
	}
}

/* argv of `nginx -q -T` or `nginx -q -t`, with -c when the configuration is named. */
static void argv_of(const struct knob_env *env, const char *flag, char **argv)
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

/* The most of one nginx -T the agent keeps: ENV's [nginx] dump_max, never past what the parser takes. */
static size_t dump_max_of(const struct knob_env *env)
{
	size_t m = env->nginx_dump_max ? env->nginx_dump_max : CONFIG_NGINX_DUMP_MAX;

	return m < NGINX_CONF_DUMP_MAX ? m : NGINX_CONF_DUMP_MAX;
}

/*
 * spawn_start for nginx -t and -T, forked in nginx's network namespace: nginx -t binds every listen address, and one
 * that exists only in nginx's namespace (a container's or a namespace's own address) fails in any other (found on a
 * real nginx in a namespace: "bind() to 10.78.0.1:18490 failed (99: Cannot assign requested address)", and every
 * nginx knob refused). Under a fake root the pid is no real process: the agent's own namespace, as when the
 * namespace cannot be entered.
 *
 * The child runs with ENV's [nginx] memory_max as its data limit: it runs in the agent's cgroup (the unit's
 * MemoryMax counts it), and nginx reading a large configuration takes many times its size (measured, nginx 1.22:
 * 12x for maps, 200x for server blocks), so that without a limit the cgroup's OOM killer would end it, or the
 * agent. A failed prlimit leaves the child unlimited, as before; the agent goes on.
 */
static int nginx_spawn(const struct knob_env *env, uv_loop_t *loop, char **argv, size_t max_out, int64_t timeout_ms,
		       spawn_fn cb, void *ctx)
{
	size_t mem = env->nginx_memory_max ? env->nginx_memory_max : CONFIG_NGINX_MEMORY_MAX;
	int ns = -1, saved = -1, r;
	struct spawn *sp = NULL;

	if (env->nginx_pid > 0 && (!env->root || strcmp(env->root, "/") == 0))
		ns = netns_open_pid(env->nginx_pid);
	if (ns >= 0 && netns_enter(ns, &saved) < 0)
		saved = -1;
	r = spawn_start_trusted(loop, argv, "the nginx binary the agent runs as root", max_out, TEST_OUT_MAX, timeout_ms,
				cb, ctx, &sp);
	if (netns_leave(saved) < 0)
		abort(); /* the loop thread left in nginx's namespace would be wrong for everything it does next */
	if (ns >= 0)
		close(ns);
	if (r == 0 && sp && mem != SIZE_MAX)
		spawn_limit_data(sp, mem);
	return r;
}

/* ---- one child at a time ------------------------------------------------------------------------------------- */

/*
 * The agent's nginx children on its loop (the cached dump's refresh, the doctor's nginx -T, a change's -T and -t)
 * run one at a time, in the order asked, when the environment has a controller: each may use [nginx] memory_max,
 * and two at once would need twice that beside the agent in its cgroup (found: the refresh and the doctor's
 * nginx -T at start, 32 MiB each, made the OOM killer end one under MemoryMax=64M). The blocking runs on a private
 * loop (nginx_ctl_conf's probe pass, the command line) are not queued: they cannot wait for the loop they block.
 */
struct turn {
	struct nginx_ctl *ctl;
	const struct knob_env *env;
	const char *flag;  /* "-t" or "-T": the command line is made when its turn comes, from ENV as it is then */
	size_t max_out;
	int64_t timeout_ms;
	spawn_fn cb;
	void *ctx;
	struct turn *next;
};

static int turn_start(struct turn *t);

static void turn_done(struct spawn *sp)
{
	struct turn *t = sp->ctx, *next;
	struct nginx_ctl *ctl = t->ctl;
	int r;

	next = ctl->waiting;
	if (next)
		ctl->waiting = next->next;
	ctl->turns--;
	ctl->child_running = next != NULL; /* held for NEXT: a child the callback asks for goes after it */
	sp->ctx = t->ctx;
	/* CTL stays while NEXT is queued (turns counts it); without one, the callback may free it. */
	t->cb(sp);
	free(t);
	if (next && (r = turn_start(next)) < 0) {
		/* Its caller was told it started: it ends (from the loop, as always) as a child that could not start. */
		struct spawn failed;

		memset(&failed, 0, sizeof(failed));
		failed.spawn_rc = r;
		failed.ctx = next;
		turn_done(&failed);
	}
}

static int turn_start(struct turn *t)
{
	char *argv[8];

	t->ctl->child_running = true;
	argv_of(t->env, t->flag, argv);
	return nginx_spawn(t->env, t->env->loop, argv, t->max_out, t->timeout_ms, turn_done, t);
}

/* `nginx FLAG` on ENV->loop as nginx_spawn does, in its turn (above). 0, or -ENOMEM (CB will not run). */
static int nginx_start(const struct knob_env *env, const char *flag, size_t max_out, int64_t timeout_ms, spawn_fn cb,
		       void *ctx)
{
	struct nginx_ctl *ctl = env->nginx;
	struct turn *t, **tail;
	char *argv[8];

	if (!ctl) {
		argv_of(env, flag, argv);
		return nginx_spawn(env, env->loop, argv, max_out, timeout_ms, cb, ctx);
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = (struct turn){ .ctl = ctl, .env = env, .flag = flag, .max_out = max_out, .timeout_ms = timeout_ms,
			    .cb = cb, .ctx = ctx };
	ctl->turns++;
	if (!ctl->child_running) {
		int r = turn_start(t);

		if (r < 0) {
			ctl->turns--;
			ctl->child_running = false;
			free(t);
		}
		return r;
	}
	for (tail = &ctl->waiting; *tail; tail = &(*tail)->next)
		;
	*tail = t;
	return 0;
}

struct sync_run {
	bool done;
	const char *what;
	int64_t timeout_ms;
	struct nginx_ctl_result res;
};

static void sync_done(struct spawn *sp)
{
	struct sync_run *s = sp->ctx;

	child_result(sp, s->what, s->timeout_ms, &s->res);
	/* nginx -V prints on its standard error. */
	if (s->res.rc == 0 && strcmp(s->what, "nginx -V") == 0) {
		free(s->res.out);
		s->res.out = strndup(sp->ebuf.p ? sp->ebuf.p : "", sp->ebuf.len);
		s->res.outlen = s->res.out ? strlen(s->res.out) : 0;
		if (!s->res.out) {
			s->res.rc = -ENOMEM;
			str_err(s->res.msg, sizeof(s->res.msg), "out of memory");
		}
	}
	s->done = true;
}

/* Run `nginx FLAG` to the end on a private loop (blocking, bounded by the timeout). */
static void run_sync(const struct knob_env *env, const char *flag, size_t max_out, struct nginx_ctl_result *res)
{
	struct sync_run s = { .what = strcmp(flag, "-T") == 0 ? "nginx -T" : strcmp(flag, "-V") == 0 ? "nginx -V" :
				      "nginx -t" };
	uv_loop_t loop;
	char *argv[8];
	int r;

	s.timeout_ms = timeout_of(env);
	memset(res, 0, sizeof(*res));
	r = uv_loop_init(&loop);
	if (r < 0) {
		res->rc = r;
		str_err(res->msg, sizeof(res->msg), "uv_loop_init: %s", uv_strerror(r));
		return;
	}
	argv_of(env, flag, argv);
	r = nginx_spawn(env, &loop, argv, max_out, s.timeout_ms, sync_done, &s);
	if (r < 0) {
		res->rc = r;
		str_err(res->msg, sizeof(res->msg), "%s", strerror(-r));
	} else {
		while (!s.done)
			uv_run(&loop, UV_RUN_ONCE);
		*res = s.res;
	}
	uv_loop_close(&loop);
}

int nginx_ctl_run(const struct knob_env *env, const char *flag, char **out, size_t *len, char *msg, size_t msglen)
{
	struct nginx_ctl_result res;

	*out = NULL;
	*len = 0;
	if (strcmp(flag, "-t") != 0 && strcmp(flag, "-T") != 0 && strcmp(flag, "-V") != 0)
		return -EINVAL;
	run_sync(env, flag, dump_max_of(env), &res);
	if (res.rc < 0) {
		str_err(msg, msglen, "%s", res.msg);
		free(res.out);
		return res.rc;
	}
	/* NUL-terminated, for the callers that read it as a string. */
	*out = realloc(res.out, res.outlen + 1);
	if (!*out) {
		free(res.out);
		str_err(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	(*out)[res.outlen] = '\0';
	*len = res.outlen;
	return 0;
}

/* ---- the master and its workers ------------------------------------------------------------------------------ */

/* The process title of PID (its cmdline up to the first NUL) into OUT. 0 or -errno. */
static int title_of(const struct knob_env *env, pid_t pid, char *out, size_t n)
{
	char path[PATH_MAX];
	int fd, r;
	ssize_t k;

	r = str_rooted(path, sizeof(path), env->root, "/proc/%d/cmdline", (int)pid);
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
	r = str_rooted(path, sizeof(path), env->root, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (r < 0)
		return r;
	r = nginx_ctl_read_file(path, 1 << 20, &text, &len);
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
	r = str_rooted(path, sizeof(path), env->root, "/proc");
	if (r < 0 || !(d = opendir(path)))
		return r < 0 ? r : -errno;
	while ((de = readdir(d))) {
		char stat_path[PATH_MAX + 300], *close_paren;
		long child, ppid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		child = strtol(de->d_name, NULL, 10);
		snprintf(stat_path, sizeof(stat_path), "%s/%s/stat", path, de->d_name);
		if (nginx_ctl_read_file(stat_path, 4096, &text, &len) < 0)
			continue;
		close_paren = strrchr(text, ')');
		if (close_paren && sscanf(close_paren + 1, " %15s %ld", buf, &ppid) == 2 && ppid == pid && *n < max)
			out[(*n)++] = (pid_t)child;
		free(text);
	}
	closedir(d);
	return 0;
}


/* Workers of PID's earlier generations still finishing their connections. */
static size_t shutting_down(const struct knob_env *env, pid_t pid)
{
	pid_t now[CHILDREN_MAX];
	size_t n, k = 0;
	char t[256];

	if (children_of(env, pid, now, CHILDREN_MAX, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (title_of(env, now[i], t, sizeof(t)) == 0 && strcmp(t, SHUTTING_TITLE) == 0)
			k++;
	return k;
}

static bool has_pid(const pid_t *v, size_t n, pid_t p)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == p)
			return true;
	return false;
}

/* A new generation: some worker that was not a child before, and no old worker still working. */
static bool generation_up(const struct nginx_change *ch)
{
	pid_t now[CHILDREN_MAX];
	size_t n;
	bool fresh = false;

	if (children_of(ch->env, ch->pid, now, CHILDREN_MAX, &n) < 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool old = has_pid(ch->old_children, ch->nold, now[i]);

		if (!old && is_worker(ch->env, now[i]))
			fresh = true;
		if (old && is_worker(ch->env, now[i]))
			return false;
	}
	return fresh;
}

/* Whether a worker that was not a child before the reload is among the master's children NOW[0..N). */
static bool fresh_among(const struct nginx_change *ch, const pid_t *now, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!has_pid(ch->old_children, ch->nold, now[i]) && is_worker(ch->env, now[i]))
			return true;
	return false;
}

/* Whether a worker that was not a child before the reload runs. */
static bool fresh_workers(const struct nginx_change *ch)
{
	pid_t now[CHILDREN_MAX];
	size_t n;

	return children_of(ch->env, ch->pid, now, CHILDREN_MAX, &n) == 0 && fresh_among(ch, now, n);
}

/*
 * With a new generation up for STRAGGLER_MS: old workers still titled as working never got the master's quit, which
 * it sends about 100 ms after it starts the new workers (a worker that got it retitles itself "is shutting down" in
 * its next turn of its event loop). One at its file limit loses the message: the master first passes it the new
 * workers' channels, its recvmsg() cannot take the descriptor ("recvmsg() returned invalid ancillary data" in the
 * error log), and it closes its own channel, the quit with it. Found on a real nginx with worker_rlimit_nofile 256
 * under 1000 clients, whose old worker then lived on; each such arm of a trial waited the whole [nginx] timeout
 * (20 s in the tests) before this SIGQUIT. Each gets the SIGQUIT the master meant, a graceful stop (the same flag
 * the channel sets: harmless to one that got the quit and has not retitled yet). The number of them, 0 when the new
 * generation is not up or none is left. One read of the children serves both.
 */
static size_t quit_stragglers(const struct nginx_change *ch)
{
	pid_t now[CHILDREN_MAX];
	size_t n, k = 0;
	bool fresh;

	/* Under a fake root the pids of ROOT/proc are not this host's processes. */
	if (!nginx_ctl_real_root(ch->env) || children_of(ch->env, ch->pid, now, CHILDREN_MAX, &n) < 0)
		return 0;
	fresh = fresh_among(ch, now, n);
	for (size_t i = 0; fresh && i < n; i++)
		if (has_pid(ch->old_children, ch->nold, now[i]) && is_worker(ch->env, now[i]) &&
		    kill(now[i], SIGQUIT) == 0)
			k++;
	return k;
}

/* ---- the controller and its dump ------------------------------------------------------------------------------ */

int nginx_ctl_new(struct nginx_ctl **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static void dump_clear(struct nginx_ctl *ctl)
{
	nginx_conf_free(&ctl->conf);
	ctl->have = false;
}

/* Free CTL if nginx_ctl_free was called and nothing of it runs any more. */
static void free_if_done(struct nginx_ctl *ctl)
{
	if (!ctl->freeing || ctl->refreshing || ctl->change || ctl->turns)
		return;
	dump_clear(ctl);
	free(ctl);
}

void nginx_ctl_free(struct nginx_ctl *ctl)
{
	if (!ctl)
		return;
	ctl->freeing = true;
	free_if_done(ctl);
}

void nginx_ctl_hold(struct nginx_ctl *ctl)
{
	ctl->users++;
}

void nginx_ctl_drop(struct nginx_ctl *ctl)
{
	if (ctl->users > 0 && --ctl->users == 0)
		dump_clear(ctl);
}

/* Replace the cached dump with OUT (LEN bytes, malloc'd with room for a NUL: taken, freed on failure too). The
 * previous one goes once the new one has parsed: a dump that does not parse leaves the one in use. 0 or -errno with
 * WHY. */
static int dump_store(struct nginx_ctl *ctl, const struct knob_env *env, char *out, size_t len, char *why,
		      size_t whylen)
{
	struct nginx_conf c;
	char err[KNOB_WHY_MAX];
	int r = nginx_conf_parse_owned(out, len, &c, err, sizeof(err));

	if (r < 0) {
		str_err(why, whylen, "nginx -T: %s", err);
		return r;
	}
	dump_clear(ctl);
	ctl->conf = c;
	ctl->have = true;
	ctl->stale = false;
	ctl->at = env->now_ms;
	ctl->fail_rc = 0;
	return 0;
}

/* The background refresh ended: RC, MSG, OUT (LEN bytes, taken) as nginx_ctl_dump's. */
static void refreshed(int rc, const char *msg, char *out, size_t len, void *ctx)
{
	struct nginx_ctl *ctl = ctx;
	struct nginx_ctl_result res = {.rc = rc, .out = out, .outlen = len};

	snprintf(res.msg, sizeof(res.msg), "%s", msg ? msg : "");
	ctl->refreshing = false;
	/* The environment is dereferenced only while a knob holds the dump, i.e. while it exists. */
	if (ctl->users > 0 && !ctl->freeing) {
		if (res.rc == 0) {
			res.rc = dump_store(ctl, ctl->refresh_env, res.out, res.outlen, res.msg, sizeof(res.msg));
			if (ctl->refresh_gen != ctl->gen)
				ctl->stale = true; /* of the files before a change: taken, and taken again at the next read */
		} else {
			free(res.out);
		}
		/* A failure of files a change has replaced since says nothing of them now. */
		if (res.rc < 0 && ctl->refresh_gen == ctl->gen) {
			ctl->fail_rc = res.rc;
			ctl->fail_at = ctl->refresh_env->now_ms;
			snprintf(ctl->fail_why, sizeof(ctl->fail_why), "%s", res.msg);
		}
	} else {
		free(res.out);
	}
	free_if_done(ctl);
}

static void dump_refreshed(struct spawn *sp)
{
	struct nginx_ctl_result res;

	child_result(sp, "nginx -T", 0, &res);
	refreshed(res.rc, res.msg, res.out, res.outlen, sp->ctx);
}

const struct nginx_conf *nginx_ctl_conf(struct nginx_ctl *ctl, const struct knob_env *env, int *rc, char *why,
					size_t whylen)
{
	struct nginx_ctl_result res;
	int64_t age = env->now_ms - ctl->at, fail_age = env->now_ms - ctl->fail_at;

	*rc = 0;
	if (ctl->have && !ctl->stale && age >= 0 && age <= DUMP_FRESH_MS)
		return &ctl->conf;
	/* A failure is shared the same way: the knobs of one probe pass wait for one nginx -T, not one each (with a
	 * configuration nginx cannot read within its memory, 31 runs held the start for 4 s). */
	if (ctl->fail_rc && fail_age >= 0 && fail_age <= DUMP_FRESH_MS) {
		*rc = ctl->fail_rc;
		str_err(why, whylen, "%s", ctl->fail_why);
		return NULL;
	}
	run_sync(env, "-T", dump_max_of(env), &res);
	if (res.rc == 0) {
		res.rc = dump_store(ctl, env, res.out, res.outlen, res.msg, sizeof(res.msg));
		if (res.rc == 0)
			return &ctl->conf;
	}
	ctl->fail_rc = res.rc;
	ctl->fail_at = env->now_ms;
	snprintf(ctl->fail_why, sizeof(ctl->fail_why), "%s", res.msg);
	*rc = res.rc;
	str_err(why, whylen, "%s", res.msg);
	return NULL;
}

void *nginx_ctl_knob_priv(struct knob *k, size_t size)
{
	if (k->priv)
		return k->priv;
	if (!k->env->nginx || !(k->priv = calloc(1, size)))
		return NULL;
	nginx_ctl_hold(k->env->nginx);
	return k->priv;
}

void nginx_ctl_forget(struct nginx_ctl *ctl)
{
	if (!ctl)
		return;
	ctl->stale = true;
	ctl->gen++;
	ctl->fail_rc = 0;
	ctl->halted = false;
	ctl->halt[0] = '\0';
}

const char *nginx_ctl_halted(const struct nginx_ctl *ctl, pid_t master)
{
	return ctl && ctl->halted && master == ctl->halt_pid ? ctl->halt : NULL;
}

const struct nginx_conf *nginx_ctl_conf_peek(struct nginx_ctl *ctl, const struct knob_env *env)
{
	int64_t age = env->now_ms - ctl->at, fail_age = env->now_ms - ctl->fail_at;
	/* nginx -T failed lately (a configuration above the agent's bounds fails the same way every time): once per
	 * DUMP_STALE_MS, not at every read. */
	bool failed = ctl->fail_rc && fail_age >= 0 && fail_age <= DUMP_STALE_MS;

	if (env->loop && !ctl->refreshing && !failed && (!ctl->have || ctl->stale || age < 0 || age > DUMP_STALE_MS)) {
		if ((env->dump ? env->dump(env->dump_ctx, refreshed, ctl) :
				 nginx_start(env, "-T", dump_max_of(env), timeout_of(env), dump_refreshed, ctl)) == 0) {
			ctl->refreshing = true;
			ctl->refresh_env = env;
			ctl->refresh_gen = ctl->gen;
		}
	}
	return ctl->have ? &ctl->conf : NULL;
}

int nginx_ctl_conf_now(struct nginx_ctl *ctl, const struct knob_env *env, struct nginx_conf *out, char *why,
		       size_t whylen)
{
	const struct nginx_conf *c = nginx_ctl_conf_peek(ctl, env);
	size_t cap = 0, len = 0, max = dump_max_of(env);
	char *dump = NULL, err[KNOB_WHY_MAX], size[32];
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!c)
		return -EAGAIN;
	/* One file at a time into the dump: no more than the dump and one file are held beside the cached one. */
	for (size_t i = 0; i < c->nfiles && r == 0; i++) {
		char *text = NULL, *p;
		size_t tl = 0, need;
		const char *t;

		/* A file that cannot be read now is taken as nginx last read it. */
		if (nginx_ctl_read_file(c->files[i].path, NGINX_CTL_FILE_MAX, &text, &tl) < 0)
			text = NULL;
		t = text ? text : c->files[i].text;
		tl = text ? tl : c->files[i].len;
		need = len + strlen(c->files[i].path) + 32 + tl;
		if (need > max) {
			str_size(size, sizeof(size), max);
			str_err(why, whylen, "nginx's files as they are now are more than the %s the agent reads ([nginx] "
				"dump_max)", size);
			r = -EFBIG;
		} else if (need + 1 > cap) {
			size_t ncap = cap * 2 > need + 1 ? cap * 2 : need + 1;

			ncap = ncap < max + 1 ? ncap : max + 1;
			p = realloc(dump, ncap);
			if (p) {
				dump = p;
				cap = ncap;
			} else {
				r = -ENOMEM;
			}
		}
		if (r == 0) {
			len += (size_t)snprintf(dump + len, cap - len, "# configuration file %s:\n", c->files[i].path);
			memcpy(dump + len, t, tl);
			len += tl;
			dump[len++] = '\n';
		}
		free(text);
	}
	if (r < 0) {
		free(dump);
		return r;
	}
	r = nginx_conf_parse_owned(dump, len, out, err, sizeof(err));
	if (r < 0)
		str_err(why, whylen, "nginx's files as they are now: %s", err);
	return r;
}

int nginx_ctl_workers(const struct knob_env *env, pid_t master, pid_t *out, size_t max, size_t *n)
{
	pid_t now[CHILDREN_MAX];
	size_t k;
	int r = children_of(env, master, now, CHILDREN_MAX, &k);

	*n = 0;
	if (r < 0)
		return r;
	for (size_t i = 0; i < k; i++) {
		if (!is_worker(env, now[i]))
			continue;
		if (*n == max)
			return -ENOSPC;
		out[(*n)++] = now[i];
	}
	return 0;
}

/* ---- nginx -T for others -------------------------------------------------------------------------------------- */

struct dump_req {
	nginx_ctl_dump_fn done;
	void *ctx;
	int64_t timeout_ms;
};

static void dump_finished(struct spawn *sp)
{
	struct dump_req *q = sp->ctx;
	struct nginx_ctl_result res;

	child_result(sp, "nginx -T", q->timeout_ms, &res);
	q->done(res.rc, res.msg, res.out, res.outlen, q->ctx);
	free(q);
}

int nginx_ctl_dump(const struct knob_env *env, nginx_ctl_dump_fn done, void *ctx)
{
	struct dump_req *q;
	int r;

	if (env->dump)
		return env->dump(env->dump_ctx, done, ctx);
	q = malloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->done = done;
	q->ctx = ctx;
	q->timeout_ms = timeout_of(env);
	r = nginx_start(env, "-T", dump_max_of(env), q->timeout_ms, dump_finished, q);
	if (r < 0)
		free(q);
	return r;
}

/* ---- a change ------------------------------------------------------------------------------------------------- */

static void change_free(struct nginx_change *ch)
{
	for (size_t i = 0; i < ch->nfiles; i++) {
		free(ch->files[i].path);
		free(ch->files[i].real);
		free(ch->files[i].old);
		free(ch->files[i].new);
		free(ch->files[i].nudge);
	}
	free(ch->files);
	free(ch->old_children);
	if (ch->ops->free)
		ch->ops->free(ch->priv);
	free(ch);
}

static void change_closed(uv_handle_t *h)
{
	struct nginx_change *ch = h->data;

	if (--ch->handles == 0)
		change_free(ch);
}

/* Close CH's timers; it is freed once both are closed. */
static void change_close(struct nginx_change *ch)
{
	ch->handles = 2;
	uv_close((uv_handle_t *)&ch->poll, change_closed);
	uv_close((uv_handle_t *)&ch->deadline, change_closed);
}

void nginx_change_finish(struct nginx_change *ch, int rc, const char *msg)
{
	struct nginx_ctl *ctl = ch->ctl;
	struct knob *k = ch->k;

	uv_timer_stop(&ch->poll);
	uv_timer_stop(&ch->deadline);
	if (ctl->change == ch)
		ctl->change = NULL;
	ctl->stale = true;
	ctl->gen++;
	ctl->fail_rc = 0;
	if (ch->slot && *ch->slot == ch)
		*ch->slot = NULL;
	if (k)
		ch->done(k, rc, msg && msg[0] ? msg : NULL, ch->ctx);
	change_close(ch);
	free_if_done(ctl);
}

void nginx_change_orphan(struct nginx_change *ch)
{
	ch->k = NULL;
	ch->slot = NULL;
}

int nginx_change_add_file(struct nginx_change *ch, const char *path, char *old, size_t oldlen, char *new,
			  size_t newlen)
{
	struct nginx_change_file *f = realloc(ch->files, (ch->nfiles + 1) * sizeof(*f));
	char *real;

	if (!f) {
		free(old);
		free(new);
		return -ENOMEM;
	}
	ch->files = f;
	f = &ch->files[ch->nfiles];
	memset(f, 0, sizeof(*f));
	real = realpath(path, NULL);
	f->path = strdup(path);
	f->real = real ? real : strdup(path);
	if (!f->path || !f->real) {
		free(f->path);
		free(f->real);
		free(old);
		free(new);
		return -ENOMEM;
	}
	f->old = old;
	f->oldlen = oldlen;
	f->new = new;
	f->newlen = newlen;
	ch->nfiles++;
	return 0;
}

struct nginx_change_file *nginx_change_file(const struct nginx_change *ch, const char *path)
{
	for (size_t i = 0; i < ch->nfiles; i++)
		if (strcmp(ch->files[i].path, path) == 0)
			return &ch->files[i];
	return NULL;
}

int nginx_change_write(struct nginx_change *ch)
{
	if (ch->nfiles)
		crash_point("backed-up");
	for (size_t i = 0; i < ch->nfiles; i++) {
		struct nginx_change_file *f = &ch->files[i];
		const char *text = ch->nudging ? f->nudge : f->new;
		size_t len = ch->nudging ? f->nudgelen : f->newlen;
		int r;

		if (!text)
			continue;
		r = nginx_ctl_write_file(f->real, text, len, 0644);
		if (r < 0) {
			str_err(ch->msg, sizeof(ch->msg), "cannot write %s: %s", f->real, strerror(-r));
			return r;
		}
		f->written = true;
	}
	return 0;
}

/* Put back everything this change wrote: the files, then what the driver changed beside them. */
static void change_rollback(struct nginx_change *ch)
{
	for (size_t i = 0; i < ch->nfiles; i++) {
		struct nginx_change_file *f = &ch->files[i];

		if (!f->written)
			continue;
		if (f->old)
			nginx_ctl_write_file(f->real, f->old, f->oldlen, 0644);
		else
			unlink(f->real);
		f->written = false;
	}
	if (ch->ops->undo)
		ch->ops->undo(ch);
}

void nginx_change_fail(struct nginx_change *ch, int rc, const char *fmt, ...)
{
	va_list ap;
	char msg[KNOB_WHY_MAX];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	change_rollback(ch);
	if (ch->reloaded && is_master(ch->env, ch->pid))
		kill(ch->pid, SIGHUP);
	nginx_change_finish(ch, rc, msg);
}

/*
 * The last lines of nginx's error log (the first error_log of the main context in the last dump, when it is an
 * absolute path) into OUT as "error log PATH, newest first: LINE | LINE | LINE", or "" when there is none to read
 * (nginx started with -e, or a relative or syslog error_log).
 */
static void error_tail(const struct nginx_ctl *ctl, char *out, size_t n)
{
	struct nginx_conf_directive d;
	char err[KNOB_WHY_MAX], *buf, *lines[3];
	size_t k = 0, len, o;
	ssize_t got;
	off_t size;
	int fd;

	out[0] = '\0';
	if (!ctl->have || nginx_conf_find(&ctl->conf, "main", "error_log", &d, err, sizeof(err)) < 0 || d.nargs < 1 ||
	    d.args[0][0] != '/')
		return;
	fd = open(d.args[0], O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	buf = malloc(ERROR_TAIL + 1);
	if (size < 0 || !buf || lseek(fd, size > ERROR_TAIL ? size - ERROR_TAIL : 0, SEEK_SET) < 0 ||
	    (got = read(fd, buf, ERROR_TAIL)) <= 0) {
		free(buf);
		close(fd);
		return;
	}
	close(fd);
	len = (size_t)got;
	while (len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	/* The last three lines, lines[0] the newest; control bytes become '?'. */
	for (size_t i = len; i > 0 && k < 3; i--) {
		if (buf[i - 1] == '\n') {
			buf[i - 1] = '\0';
			lines[k++] = buf + i;
		}
	}
	if (k < 3 && (size <= ERROR_TAIL || k == 0))
		lines[k++] = buf;
	/* Newest first: a message cut short keeps the line that matters most. */
	o = (size_t)snprintf(out, n, "error log %s, newest first:", d.args[0]);
	for (size_t i = 0; i < k && o < n; i++)
		o += (size_t)snprintf(out + o, n - o, "%s %s", i == 0 ? "" : " |", lines[i]);
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	free(buf);
}

static void change_deadline(uv_timer_t *t);

/* Whether the reload has taken: at every poll, and once more (FINAL) when the deadline fires. */
static void change_check(struct nginx_change *ch, bool final)
{
	char why[KNOB_WHY_MAX] = "";
	bool up;

	if (!ch->k) {
		nginx_change_fail(ch, -ECANCELED, "the knob was released during the change");
		return;
	}
	up = generation_up(ch);
	if (up && ch->nudging) {
		/* nginx listened again with the nudge text; now the files this change is for (the nudge's own old
		 * generation may still be shutting down: this second reload is part of the change, not stacked on
		 * someone else's). */
		int r;

		ch->nudging = false;
		ch->drained = true;
		ch->requit = false;
		ch->stragglers = 0;
		ch->straggle_polls = 0;
		uv_timer_stop(&ch->poll);
		uv_timer_stop(&ch->deadline);
		free(ch->old_children);
		ch->old_children = NULL;
		ch->nold = 0;
		r = nginx_change_write(ch);
		if (r < 0) {
			nginx_change_fail(ch, r, "%s", ch->msg);
			return;
		}
		nginx_change_test(ch);
		return;
	}
	if (up && ch->ops->settled)
		up = ch->ops->settled(ch, why, sizeof(why));
	if (up) {
		char note[KNOB_WHY_MAX] = "";

		if (ch->ops->committed)
			ch->ops->committed(ch);
		snprintf(note, sizeof(note), "%s", ch->note);
		if (ch->stragglers) {
			size_t l = strlen(note);

			snprintf(note + l, sizeof(note) - l, "%s%zu old worker%s never got nginx's quit and got SIGQUIT from "
				 "the agent", l ? "; " : "", ch->stragglers, ch->stragglers == 1 ? "" : "s");
		}
		nginx_change_finish(ch, 0, note);
		return;
	}
	if (!final) {
		/* Polls since the new generation came up beside old workers still working: at STRAGGLER_MS, the quit
		 * they missed (quit_stragglers), and a whole timeout from then for them to go. */
		if (!ch->requit && fresh_workers(ch) && ++ch->straggle_polls >= STRAGGLER_MS / POLL_MS &&
		    (ch->stragglers = quit_stragglers(ch)) > 0) {
			ch->requit = true;
			uv_timer_start(&ch->deadline, change_deadline, (uint64_t)timeout_of(ch->env), 0);
		}
		return;
	}
	if (!ch->requit && (ch->stragglers = quit_stragglers(ch)) > 0) {
		/* One more timeout for them to go; the change completes if they do. */
		ch->requit = true;
		uv_timer_start(&ch->deadline, change_deadline, (uint64_t)timeout_of(ch->env), 0);
		return;
	}
	if (ch->ops->settled && generation_up(ch)) {
		if (!why[0])
			ch->ops->settled(ch, why, sizeof(why));
		nginx_change_fail(ch, -EIO, "%s; the previous configuration was put back", why);
	} else if (fresh_workers(ch)) {
		/* New workers came, old ones did not go even after our SIGQUIT: not a halt, nginx can start workers. */
		nginx_change_fail(ch, -EIO, "old workers of nginx %d still work %lld ms after the agent's SIGQUIT to them "
				  "(they missed nginx's quit); the previous configuration was put back",
				  (int)ch->pid, (long long)timeout_of(ch->env));
	} else {
		char tail[480];

		error_tail(ch->ctl, tail, sizeof(tail));
		ch->ctl->halted = true;
		ch->ctl->halt_pid = ch->pid;
		snprintf(ch->ctl->halt, sizeof(ch->ctl->halt),
			 "nginx did not start a new generation of workers within %lld ms (put back)%s%s",
			 (long long)timeout_of(ch->env), tail[0] ? "; " : "", tail);
		nginx_change_fail(ch, -ETIMEDOUT, "%s", ch->ctl->halt);
	}
}

static void change_reload(struct nginx_change *ch);

static void change_poll(uv_timer_t *t)
{
	struct nginx_change *ch = t->data;

	if (ch->draining) {
		/* Waiting for an earlier generation to go before reloading: never a reload on top of it. */
		if (!ch->k) {
			nginx_change_fail(ch, -ECANCELED, "the knob was released during the change");
			return;
		}
		if (shutting_down(ch->env, ch->pid) == 0) {
			uv_timer_stop(&ch->poll);
			uv_timer_stop(&ch->deadline);
			ch->draining = false;
			change_reload(ch);
		}
		return;
	}
	change_check(ch, false);
}

static void change_deadline(uv_timer_t *t)
{
	struct nginx_change *ch = t->data;
	size_t k;

	if (ch->draining) {
		k = shutting_down(ch->env, ch->pid);
		if (k == 0 && ch->k) {
			/* They went between the last poll and now. */
			uv_timer_stop(&ch->poll);
			ch->draining = false;
			change_reload(ch);
			return;
		}
		nginx_change_fail(ch, -EAGAIN, "%zu worker%s of an earlier generation still shutting down after %lld ms: "
				  "no reload on top of %s; try again when %s gone", k, k == 1 ? "" : "s",
				  (long long)timeout_of(ch->env), k == 1 ? "it" : "them", k == 1 ? "it has" : "they have");
		return;
	}
	change_check(ch, true);
}

/* nginx -t passed: signal the master, poll for the new generation until the deadline. */
static void change_reload(struct nginx_change *ch)
{
	size_t cap = CHILDREN_MAX;
	int r;

	if (!is_master(ch->env, ch->pid)) {
		nginx_change_fail(ch, -ESRCH, "pid %d is not an nginx master any more", (int)ch->pid);
		return;
	}
	if (!ch->drained && shutting_down(ch->env, ch->pid) > 0) {
		ch->draining = ch->drained = true;
		uv_timer_start(&ch->deadline, change_deadline, (uint64_t)timeout_of(ch->env), 0);
		uv_timer_start(&ch->poll, change_poll, POLL_MS, POLL_MS);
		return;
	}
	ch->old_children = calloc(cap, sizeof(pid_t));
	if (!ch->old_children) {
		nginx_change_fail(ch, -ENOMEM, "out of memory");
		return;
	}
	r = children_of(ch->env, ch->pid, ch->old_children, cap, &ch->nold);
	if (r < 0) {
		nginx_change_fail(ch, r, "cannot list the children of nginx %d: %s", (int)ch->pid, strerror(-r));
		return;
	}
	if (kill(ch->pid, SIGHUP) < 0) {
		r = -errno;
		nginx_change_fail(ch, r, "cannot signal nginx %d: %s", (int)ch->pid, strerror(-r));
		return;
	}
	ch->reloaded = true;
	uv_timer_start(&ch->deadline, change_deadline, (uint64_t)timeout_of(ch->env), 0);
	uv_timer_start(&ch->poll, change_poll, POLL_MS, POLL_MS);
}

static void change_tested(struct spawn *sp)
{
	struct nginx_change *ch = sp->ctx;
	struct nginx_ctl_result res;

	child_result(sp, "nginx -t", timeout_of(ch->env), &res);
	free(res.out);
	if (!ch->k) {
		nginx_change_fail(ch, -ECANCELED, "the knob was released during the change");
		return;
	}
	if (res.rc == -EIO) {
		/* nginx refused the candidate: that value cannot be used here. */
		nginx_change_fail(ch, -EINVAL, "%s", res.msg);
		return;
	}
	if (res.rc < 0) {
		nginx_change_fail(ch, res.rc, "%s", res.msg);
		return;
	}
	change_reload(ch);
}

void nginx_change_test(struct nginx_change *ch)
{
	int r = nginx_start(ch->env, "-t", TEST_OUT_MAX, timeout_of(ch->env), change_tested, ch);

	if (r < 0)
		nginx_change_fail(ch, r, "cannot run nginx -t: %s", strerror(-r));
}

static void change_dumped(struct spawn *sp)
{
	struct nginx_change *ch = sp->ctx;
	struct nginx_ctl_result res;
	struct nginx_conf c;
	char err[KNOB_WHY_MAX];
	int r;

	child_result(sp, "nginx -T", timeout_of(ch->env), &res);
	if (!ch->k) {
		free(res.out);
		nginx_change_finish(ch, -ECANCELED, NULL);
		return;
	}
	if (res.rc < 0) {
		nginx_change_finish(ch, res.rc, res.msg);
		return;
	}
	/* The newest dump: it replaces the cached one (which the drivers read meanwhile) rather than being held beside
	 * it, while a knob holds the cache. */
	if (ch->ctl->users > 0 && !ch->ctl->freeing) {
		r = dump_store(ch->ctl, ch->env, res.out, res.outlen, err, sizeof(err));
		if (r < 0) {
			nginx_change_finish(ch, r, err);
			return;
		}
		ch->ops->dumped(ch, &ch->ctl->conf);
		return;
	}
	r = nginx_conf_parse_owned(res.out, res.outlen, &c, err, sizeof(err));
	if (r < 0) {
		nginx_change_finish(ch, r, err);
		return;
	}
	ch->ops->dumped(ch, &c);
	nginx_conf_free(&c);
}

int nginx_change_start(struct knob *k, const struct nginx_change_ops *ops, void *priv, struct nginx_change **slot,
		       char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct knob_env *env = k->env;
	struct nginx_ctl *ctl = env->nginx;
	struct nginx_change *ch;
	int r;

	if (!env->loop || !ctl) {
		ops->free(priv);
		str_err(why, whylen, "%s", !env->loop ? "no event loop" : "no nginx control");
		return -EINVAL;
	}
	if (ctl->change) {
		ops->free(priv);
		str_err(why, whylen, "another nginx change is in flight");
		return -EBUSY;
	}
	if (ctl->halted && env->nginx_pid != ctl->halt_pid)
		ctl->halted = false; /* nginx was restarted since: a new master */
	if (ctl->halted) {
		ops->free(priv);
		str_err(why, whylen, "the agent changes nothing in nginx until it is reloaded (systemctl reload "
			"ngx-autotune): a reload brought no new workers (ngxctl doctor: agent.nginx_reload)");
		return -EIO;
	}
	if (!is_master(env, env->nginx_pid)) {
		ops->free(priv);
		str_err(why, whylen, "no nginx master running (pid %d)", (int)env->nginx_pid);
		return -ESRCH;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		ops->free(priv);
		return -ENOMEM;
	}
	ch->ops = ops;
	ch->priv = priv;
	ch->ctl = ctl;
	ch->env = env;
	ch->k = k;
	ch->pid = env->nginx_pid;
	ch->slot = slot;
	ch->done = done;
	ch->ctx = ctx;
	uv_timer_init(env->loop, &ch->poll);
	uv_timer_init(env->loop, &ch->deadline);
	ch->poll.data = ch;
	ch->deadline.data = ch;
	r = nginx_start(env, "-T", dump_max_of(env), timeout_of(env), change_dumped, ch);
	if (r < 0) {
		nginx_change_orphan(ch);
		change_close(ch);
		return r;
	}
	ctl->change = ch;
	*slot = ch;
	return -EINPROGRESS;
}

int nginx_ctl_master_args(const char *root, pid_t pid, char *conf, size_t conflen, char *prefix, size_t prefixlen)
{
	char path[PATH_MAX], title[2 * PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/proc/%d/cmdline", strcmp(root, "/") == 0 ? "" : root, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, title, sizeof(title) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	title[n] = '\0';
	return parse_nginx_master_title(title, conf, conflen, prefix, prefixlen) < 0 ? -EINVAL : 0;
}
