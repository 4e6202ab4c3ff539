/*
 * knob_listen: the listen-queue driver (knob_listen_ops): the accept-queue limit of nginx's listening sockets
 * (somaxconn plus `backlog=`).
 *
 * Knob value = the live backlog. The kernel caps a listen() backlog at net.core.somaxconn *when listen() is
 * called*, and an nginx reload calls listen() again only for listeners whose backlog= changed: raising somaxconn
 * alone leaves the live limit where it was. So a write raises somaxconn in nginx's network namespace when it is
 * below the value, sets backlog=VALUE on the operator's listen lines (nginx_conf decides which: one per
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
 * first backups; with no state, a write of the value every socket already has is nothing to do (no backlog= written,
 * no state: recovery after a kill in arm A, which had put the files back already).
 *
 * Every write is a change of nginx_ctl (asynchronous: nginx -T, the files, nginx -t, reload, new generation; see
 * nginx_ctl.h) that this driver plans, with two additions: the change is complete only when inet_diag shows the new
 * backlog (-EIO when the workers came but the live backlog is wrong), and a write that leaves some socket's
 * configured backlog as it was goes in two reloads (see listen_plan_nudge). probe takes the dump synchronously;
 * read uses the last one.
 */
#define _GNU_SOURCE

#include "act/knob.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/policy.h"
#include "act/nginx_conf.h"
#include "act/nginx_ctl.h"
#include "observe/probe_netlink.h"
#include "strutil.h"

#define LISTEN_SOCKETS_MAX 4096 /* listening sockets read from inet_diag */
#define STATE_FILES_MAX 256     /* files recorded in listen-queue.state */

#define STATE_NAME "listen-queue.state"
#define BACKUP_DIR "listen-backup"

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

	if (!nginx_ctl_real_root(env)) {
		if (str_rooted(path, sizeof(path), env->root, "/proc/sys/net/core/somaxconn") < 0)
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
	r = nginx_ctl_write_fd(fd, buf, strlen(buf));
	close(fd);
	if (r < 0)
		return r;
	r = somaxconn_read(env, pid, &back);
	if (r < 0)
		return r;
	return back == v ? 0 : -EIO;
}

/* listen-queue.state. */
struct lq_state {
	bool have;
	int64_t original, so_before, so_set;
	char **files;
	size_t nfiles;
};

/* The knob's own: the write in flight and the inet_diag probe its reads keep open. */
struct listen_priv {
	struct nginx_change *change;
	struct probe_netlink *nl;
	pid_t nl_pid;
	struct probe_netlink_listen_queue *lq;
};

/* One write: the backlog, and what it changes beside the files (to put back on failure). */
struct listen_change {
	int64_t value;
	bool so_changed;
	int64_t so_old;
	bool state_written;
	char *state_old;         /* listen-queue.state before (NULL: none) */
	size_t state_oldlen;
	char **backups_made;     /* backups created by this write */
	size_t nbackups_made;
	bool clear_state;        /* on success: remove the state and the backups */
	struct lq_state st;
	struct nginx_endpoint *ports; /* the target listens' addresses and ports */
	size_t nports;
};

static struct listen_priv *priv_of(struct knob *k)
{
	return nginx_ctl_knob_priv(k, sizeof(struct listen_priv));
}

static int backup_path(const struct knob_env *env, const char *path, char *out, size_t n);

static void lq_state_free(struct lq_state *s)
{
	for (size_t i = 0; i < s->nfiles; i++)
		free(s->files[i]);
	free(s->files);
	memset(s, 0, sizeof(*s));
}

/* The revert is complete: the state file and the backups it lists go. */
static void lq_state_remove(struct nginx_change *ch)
{
	struct listen_change *lc = ch->priv;
	char path[PATH_MAX];

	for (size_t i = 0; i < lc->st.nfiles; i++)
		if (backup_path(ch->env, lc->st.files[i], path, sizeof(path)) == 0)
			unlink(path);
	if (nginx_ctl_own_path(ch->env, STATE_NAME, path, sizeof(path)) == 0)
		unlink(path);
	if (nginx_ctl_own_path(ch->env, BACKUP_DIR, path, sizeof(path)) == 0)
		rmdir(path);
}

/*
 * The smallest and largest live backlog over the listening TCP sockets of PORTS (addresses and ports) in nginx's
 * namespace (a probe kept in *NL while *NL_PID is nginx's pid). 0, -ENOENT (no such socket), -errno with WHY.
 */
static int listen_live(const struct knob_env *env, pid_t pid, const struct nginx_endpoint *ports, size_t nports,
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
		r = probe_netlink_open(nginx_ctl_real_root(env) ? pid : 0, nl, why, whylen);
		if (r < 0)
			return r;
		*nl_pid = pid;
	}
	if (!*lq && !(*lq = calloc(LISTEN_SOCKETS_MAX, sizeof(**lq))))
		return -ENOMEM;
	r = probe_netlink_tcp(*nl, *lq, LISTEN_SOCKETS_MAX, &n, NULL);
	if (r < 0) {
		str_err(why, whylen, "inet_diag: %s", strerror(-r));
		probe_netlink_close(*nl);
		*nl = NULL;
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		const struct probe_netlink_listen_queue *q = &(*lq)[i];

		if (!nginx_endpoint_has(ports, nports, q->family, q->addr, q->port))
			continue;
		if (seen == 0 || q->backlog < *min)
			*min = q->backlog;
		if (seen == 0 || q->backlog > *max)
			*max = q->backlog;
		seen++;
	}
	if (seen == 0) {
		str_err(why, whylen, "no listening socket of nginx's ports found");
		return -ENOENT;
	}
	return 0;
}

static bool tcp_listen(const struct nginx_listen *l)
{
	return l->family != AF_UNIX && !l->udp && l->port != 0;
}

static bool tcp_target(const struct nginx_listen *l)
{
	return tcp_listen(l) && l->target;
}

/* The addresses and ports of C's TCP listen directives (TARGETS_ONLY: of those that carry backlog=) into a
 * malloc'd *OUT; *NTARGETS: how many target listens there are. */
static int listen_ports(const struct nginx_conf *c, bool targets_only, struct nginx_endpoint **out, size_t *n,
			size_t *ntargets, char *why, size_t whylen)
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
	for (size_t i = 0; i < nl && ntargets; i++)
		*ntargets += tcp_target(&l[i]);
	r = nginx_endpoints(l, nl, targets_only ? tcp_target : tcp_listen, out, n);
	free(l);
	return r;
}

static int listen_read(struct knob *k, char *out, size_t outlen)
{
	struct listen_priv *p = priv_of(k);
	const struct nginx_conf *c;
	struct nginx_endpoint *ports;
	size_t n;
	int64_t min = 0, max = 0;
	char why[KNOB_WHY_MAX];
	int r;

	if (!p)
		return -ENOMEM;
	if (k->env->nginx_pid <= 0)
		return -ESRCH;
	c = nginx_ctl_conf_peek(k->env->nginx, k->env);
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
	struct nginx_endpoint *ports;
	size_t n, ntargets;
	char dir[PATH_MAX], live[32];
	int64_t so;
	int r;

	if (!priv_of(k))
		return -ENOMEM;
	if (k->pol->type != KNOB_T_INT) {
		str_err(why, whylen, "the listen queue is an int, not %s", knobval_type_name(k->pol->type));
		return -ENOTSUP;
	}
	if (k->env->nginx_pid <= 0) {
		str_err(why, whylen, "nginx is not running");
		return -ENOENT;
	}
	c = nginx_ctl_conf(k->env->nginx, k->env, &r, why, whylen);
	if (!c)
		return r == -ENOENT ? -ENOENT : -ENOTSUP;
	r = listen_ports(c, true, &ports, &n, &ntargets, why, whylen);
	free(ports);
	if (r < 0)
		return -ENOTSUP;
	if (ntargets == 0) {
		str_err(why, whylen, "no TCP listen directive in nginx's configuration");
		return -ENOENT;
	}
	r = somaxconn_read(k->env, k->env->nginx_pid, &so);
	if (r < 0) {
		str_err(why, whylen, "cannot read net.core.somaxconn in nginx's namespace: %s", strerror(-r));
		return -ENOTSUP;
	}
	r = nginx_ctl_own_path(k->env, "", dir, sizeof(dir));
	if (r == 0 && access(dir, W_OK) < 0)
		r = -errno;
	if (r < 0) {
		str_err(why, whylen, "%s: %s (the listen queue keeps its backups there)", dir, strerror(-r));
		return -ENOENT;
	}
	r = listen_read(k, live, sizeof(live));
	if (r < 0) {
		str_err(why, whylen, "cannot read the live backlog: %s", strerror(-r));
		return -ENOTSUP;
	}
	return 0;
}

/* The backup of PATH (as nginx names it) into OUT. */
static int backup_path(const struct knob_env *env, const char *path, char *out, size_t n)
{
	return nginx_ctl_backup_path(env, BACKUP_DIR, path, out, n);
}

/* Read listen-queue.state (absent: S->have false). 0, or -EINVAL when it is not ours. */
static int lq_state_load(const struct knob_env *env, struct lq_state *s, char **raw, size_t *rawlen)
{
	char path[PATH_MAX], *text, *line, *save = NULL;
	size_t len;
	bool orig = false, so = false;
	int r = nginx_ctl_own_path(env, STATE_NAME, path, sizeof(path));

	memset(s, 0, sizeof(*s));
	*raw = NULL;
	*rawlen = 0;
	if (r < 0)
		return r;
	r = nginx_ctl_read_file(path, 1 << 20, &text, &len);
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

static int lq_state_text(const struct lq_state *s, char **out, size_t *len)
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

static bool lq_state_has(const struct lq_state *s, const char *path)
{
	for (size_t i = 0; i < s->nfiles; i++)
		if (strcmp(s->files[i], path) == 0)
			return true;
	return false;
}

static int lq_state_add(struct lq_state *s, const char *path)
{
	char **v;

	if (lq_state_has(s, path))
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
 * byte for byte. A file an operator has edited since is left to listen_plan_edit, which sets backlog= to the
 * original.
 */
static int listen_plan_restore(struct nginx_change *ch)
{
	struct listen_change *lc = ch->priv;

	for (size_t i = 0; i < lc->st.nfiles; i++) {
		char bpath[PATH_MAX], *bak = NULL, *cur = NULL;
		size_t blen = 0, clen = 0;
		int r = backup_path(ch->env, lc->st.files[i], bpath, sizeof(bpath));

		if (r == 0 && (nginx_ctl_read_file(bpath, NGINX_CTL_FILE_MAX, &bak, &blen) < 0 ||
			       nginx_ctl_read_file(lc->st.files[i], NGINX_CTL_FILE_MAX, &cur, &clen) < 0 ||
			       !nginx_conf_same_but_backlog(bak, blen, cur, clen))) {
			free(bak);
			free(cur);
			continue;
		}
		if (r == 0)
			r = nginx_change_add_file(ch, lc->st.files[i], cur, clen, bak, blen);
		if (r < 0) {
			str_err(ch->msg, sizeof(ch->msg), "cannot restore %s: %s", lc->st.files[i], strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Edit: backlog= on the target listens of each file not planned yet, which must read as nginx -T showed it. */
static int listen_plan_edit(struct nginx_change *ch, const struct nginx_conf *c)
{
	struct listen_change *lc = ch->priv;
	struct nginx_listen *l;
	size_t nl, *starts;
	char err[KNOB_WHY_MAX];
	int r = nginx_conf_listens(c, &l, &nl, err, sizeof(err));

	if (r < 0) {
		str_err(ch->msg, sizeof(ch->msg), "%s", err);
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
		if (ns == 0 || nginx_change_file(ch, f->path))
			continue;
		r = nginx_ctl_read_file(f->path, NGINX_CTL_FILE_MAX, &cur, &curlen);
		if (r < 0) {
			str_err(ch->msg, sizeof(ch->msg), "cannot read %s: %s", f->path, strerror(-r));
			break;
		}
		if (curlen != f->len || memcmp(cur, f->text, curlen) != 0) {
			free(cur);
			str_err(ch->msg, sizeof(ch->msg), "%s changed while it was being read; try again", f->path);
			r = -EAGAIN;
			break;
		}
		r = nginx_conf_set_backlog(cur, curlen, starts, ns, lc->value, &new, &newlen, err, sizeof(err));
		if (r < 0) {
			free(cur);
			str_err(ch->msg, sizeof(ch->msg), "%s: %s", f->path, err);
			break;
		}
		if (newlen == curlen && memcmp(new, cur, curlen) == 0) {
			free(cur);
			free(new);
			continue;
		}
		r = nginx_change_add_file(ch, f->path, cur, curlen, new, newlen);
	}
	free(starts);
	free(l);
	return r;
}

/* Backups of the files this edit touches for the first time; they join the state's list. */
static int make_backups(struct nginx_change *ch)
{
	struct listen_change *lc = ch->priv;
	char dir[PATH_MAX];
	int r = nginx_ctl_own_path(ch->env, BACKUP_DIR, dir, sizeof(dir));

	if (r < 0)
		return r;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	for (size_t i = 0; i < ch->nfiles; i++) {
		const struct nginx_change_file *f = &ch->files[i];
		char bpath[PATH_MAX], **v;

		if (lq_state_has(&lc->st, f->path) || (f->old && f->newlen == f->oldlen &&
						     memcmp(f->new, f->old, f->oldlen) == 0))
			continue;
		r = backup_path(ch->env, f->path, bpath, sizeof(bpath));
		if (r == 0)
			r = nginx_ctl_write_file(bpath, f->old, f->oldlen, 0600);
		if (r < 0) {
			str_err(ch->msg, sizeof(ch->msg), "cannot back up %s: %s", f->path, strerror(-r));
			return r;
		}
		v = realloc(lc->backups_made, (lc->nbackups_made + 1) * sizeof(*v));
		if (!v || !(v[lc->nbackups_made] = strdup(bpath))) {
			if (v)
				lc->backups_made = v;
			unlink(bpath);
			return -ENOMEM;
		}
		lc->backups_made = v;
		lc->nbackups_made++;
		r = lq_state_add(&lc->st, f->path);
		if (r < 0)
			return r;
	}
	return 0;
}

static int lq_state_write(struct nginx_change *ch)
{
	struct listen_change *lc = ch->priv;
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	int r = nginx_ctl_own_path(ch->env, STATE_NAME, path, sizeof(path));

	if (r == 0)
		r = lq_state_text(&lc->st, &text, &len);
	if (r < 0)
		return r;
	r = nginx_ctl_write_file(path, text, len, 0600);
	free(text);
	if (r == 0)
		lc->state_written = true;
	else
		str_err(ch->msg, sizeof(ch->msg), "cannot write %s: %s", path, strerror(-r));
	return r;
}

/* nginx's backlog for a listen without backlog= (NGX_LISTEN_BACKLOG on Linux). */
#define NGINX_BACKLOG_DEFAULT 511

static int64_t configured_backlog(const struct nginx_listen *l)
{
	return l->has_backlog ? l->backlog : NGINX_BACKLOG_DEFAULT;
}

/* The listens of the dump C with CH's new files in place of theirs (the configuration this write leaves). */
static int listens_after(const struct nginx_change *ch, const struct nginx_conf *c, struct nginx_listen **out,
			 size_t *n, char *err, size_t errlen)
{
	struct nginx_conf after;
	size_t cap = 1, len = 0;
	char *dump;
	int r;

	for (size_t i = 0; i < c->nfiles; i++) {
		const struct nginx_change_file *f = nginx_change_file(ch, c->files[i].path);

		cap += strlen(c->files[i].path) + 32 + (f ? f->newlen : c->files[i].len);
	}
	dump = malloc(cap);
	if (!dump)
		return -ENOMEM;
	for (size_t i = 0; i < c->nfiles; i++) {
		const struct nginx_change_file *f = nginx_change_file(ch, c->files[i].path);
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
 * for. Sets CH->nudging and each file's nudge text; nothing when one reload does it.
 */
static int listen_plan_nudge(struct nginx_change *ch, const struct nginx_conf *c)
{
	struct listen_change *lc = ch->priv;
	struct nginx_listen *cur = NULL, *fin = NULL;
	size_t ncur = 0, nfin = 0, *starts = NULL;
	int64_t min = 0, max = 0, nudge;
	struct probe_netlink *nl = NULL;
	struct probe_netlink_listen_queue *lq = NULL;
	pid_t nl_pid = 0;
	char err[KNOB_WHY_MAX];
	bool same = false;
	int r;

	r = listen_live(ch->env, ch->pid, lc->ports, lc->nports, &nl, &nl_pid, &lq, &min, &max, err, sizeof(err));
	probe_netlink_close(nl);
	free(lq);
	if (r < 0 || (min == lc->value && max == lc->value))
		return 0; /* nothing to move (or nothing to read: the reload's own check will say) */
	r = nginx_conf_listens(c, &cur, &ncur, err, sizeof(err));
	if (r == 0)
		r = listens_after(ch, c, &fin, &nfin, err, sizeof(err));
	if (r < 0) {
		str_err(ch->msg, sizeof(ch->msg), "%s", err);
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

		nudge = step < lc->value ? lc->value - step : lc->value + (step - lc->value + 1);
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
		struct nginx_change_file *f = nginx_change_file(ch, cf->path);
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

			r = nginx_ctl_read_file(cf->path, NGINX_CTL_FILE_MAX, &now, &nowlen);
			if (r < 0) {
				str_err(ch->msg, sizeof(ch->msg), "cannot read %s: %s", cf->path, strerror(-r));
				break;
			}
			copy = malloc(nowlen + 1);
			if (copy) {
				memcpy(copy, now, nowlen);
				copy[nowlen] = '\0';
			}
			if (!copy)
				free(now);
			r = copy ? nginx_change_add_file(ch, cf->path, now, nowlen, copy, nowlen) : -ENOMEM;
			if (r < 0)
				break;
			f = &ch->files[ch->nfiles - 1];
		}
		if (f->oldlen != cf->len || !f->old || memcmp(f->old, cf->text, cf->len) != 0) {
			str_err(ch->msg, sizeof(ch->msg), "%s changed while it was being read; try again", cf->path);
			r = -EAGAIN;
			break;
		}
		r = nginx_conf_set_backlog(f->old, f->oldlen, starts, ns, nudge, &f->nudge, &f->nudgelen, err,
					   sizeof(err));
		if (r < 0)
			str_err(ch->msg, sizeof(ch->msg), "%s: %s", cf->path, err);
	}
	if (r == 0)
		ch->nudging = true;
out:
	free(starts);
	free(cur);
	free(fin);
	return r;
}

static void listen_dumped(struct nginx_change *ch, const struct nginx_conf *c)
{
	struct listen_change *lc = ch->priv;
	size_t ntargets = 0;
	int64_t so_cur, so_target, min = 0, max = 0;
	char why[KNOB_WHY_MAX] = "";
	struct probe_netlink *nl = NULL;
	struct probe_netlink_listen_queue *lq = NULL;
	pid_t nl_pid = 0;
	int r;

	r = listen_ports(c, true, &lc->ports, &lc->nports, &ntargets, why, sizeof(why));
	if (r == 0 && ntargets == 0) {
		r = -ENOENT;
		str_err(why, sizeof(why), "no TCP listen directive in nginx's configuration");
	}
	if (r < 0) {
		nginx_change_finish(ch, r, why);
		return;
	}
	r = lq_state_load(ch->env, &lc->st, &lc->state_old, &lc->state_oldlen);
	if (r < 0) {
		nginx_change_finish(ch, r,
				    "listen-queue.state is damaged; restore the files from listen-backup/ by hand");
		return;
	}
	r = somaxconn_read(ch->env, ch->pid, &so_cur);
	if (r < 0) {
		nginx_change_finish(ch, r, "cannot read net.core.somaxconn in nginx's namespace");
		return;
	}
	if (!lc->st.have) {
		/* The first change: what it replaces is the original a revert must find again. */
		r = listen_live(ch->env, ch->pid, lc->ports, lc->nports, &nl, &nl_pid, &lq, &min, &max, why,
				sizeof(why));
		probe_netlink_close(nl);
		free(lq);
		if (r < 0) {
			nginx_change_finish(ch, r, why);
			return;
		}
		lc->st.original = min;
		lc->st.so_before = so_cur;
		lc->st.so_set = so_cur;
		/* Already so, with nothing of ours to put back: no edit, no state (a kill in arm A after the revert
		 * removed the state, then recovery's write of the original, wrote backlog=511 and a state file). */
		if (lc->value == min && min == max && so_cur >= lc->value) {
			nginx_change_finish(ch, 0, NULL);
			return;
		}
	}
	lc->clear_state = lc->st.have && lc->value == lc->st.original;
	r = lc->clear_state ? listen_plan_restore(ch) : 0;
	if (r == 0)
		r = listen_plan_edit(ch, c);
	if (r == 0)
		r = listen_plan_nudge(ch, c);
	if (r < 0) {
		nginx_change_finish(ch, r, ch->msg);
		return;
	}
	/* somaxconn: at least the value; what we raised comes down again, never below what it was before us. */
	so_target = so_cur;
	if (so_cur < lc->value)
		so_target = lc->value;
	else if (lc->st.have && so_cur == lc->st.so_set)
		so_target = lc->value > lc->st.so_before ? lc->value : lc->st.so_before;
	if (!lc->clear_state) {
		lc->st.so_set = so_target;
		r = make_backups(ch);
		if (r == 0)
			r = lq_state_write(ch);
		if (r < 0) {
			nginx_change_fail(ch, r, "%s", ch->msg);
			return;
		}
	}
	if (so_target != so_cur) {
		r = somaxconn_write(ch->env, ch->pid, so_target);
		if (r < 0) {
			nginx_change_fail(ch, r, "cannot set net.core.somaxconn to %lld in nginx's namespace: %s",
				(long long)so_target, strerror(-r));
			return;
		}
		lc->so_changed = true;
		lc->so_old = so_cur;
	}
	r = nginx_change_write(ch);
	if (r < 0) {
		nginx_change_fail(ch, r, "%s", ch->msg);
		return;
	}
	nginx_change_test(ch);
}

/* Put back somaxconn, listen-queue.state and the backups this write created. */
static void listen_undo(struct nginx_change *ch)
{
	struct listen_change *lc = ch->priv;
	char path[PATH_MAX];

	if (lc->so_changed && somaxconn_write(ch->env, ch->pid, lc->so_old) == 0)
		lc->so_changed = false;
	if (lc->state_written && nginx_ctl_own_path(ch->env, STATE_NAME, path, sizeof(path)) == 0) {
		if (lc->state_old)
			nginx_ctl_write_file(path, lc->state_old, lc->state_oldlen, 0600);
		else
			unlink(path);
		lc->state_written = false;
	}
	for (size_t i = 0; i < lc->nbackups_made; i++) {
		unlink(lc->backups_made[i]);
		free(lc->backups_made[i]);
	}
	lc->nbackups_made = 0;
}

/* Replaced: every socket has the value. Restored: the smallest is the original (as read recorded it). */
static bool listen_settled(struct nginx_change *ch, char *why, size_t whylen)
{
	struct listen_change *lc = ch->priv;
	struct probe_netlink *nl = NULL;
	struct probe_netlink_listen_queue *lq = NULL;
	pid_t nl_pid = 0;
	int64_t min = 0, max = 0;
	char err[KNOB_WHY_MAX] = "";
	int r = listen_live(ch->env, ch->pid, lc->ports, lc->nports, &nl, &nl_pid, &lq, &min, &max, err, sizeof(err));
	bool ok;

	probe_netlink_close(nl);
	free(lq);
	ok = r == 0 && (lc->clear_state ? min == lc->value : min == lc->value && max == lc->value);
	if (!ok)
		str_err(why, whylen, "nginx reloaded but the live backlog of its ports is %lld..%lld, not %lld%s%s",
			(long long)min, (long long)max, (long long)lc->value, err[0] ? ": " : "", err);
	return ok;
}

static void listen_committed(struct nginx_change *ch)
{
	struct listen_change *lc = ch->priv;

	if (lc->clear_state)
		lq_state_remove(ch);
}

static void listen_change_free(void *priv)
{
	struct listen_change *lc = priv;

	lq_state_free(&lc->st);
	free(lc->state_old);
	for (size_t i = 0; i < lc->nbackups_made; i++)
		free(lc->backups_made[i]);
	free(lc->backups_made);
	free(lc->ports);
	free(lc);
}

static const struct nginx_change_ops listen_change_ops = {
	.dumped = listen_dumped,
	.settled = listen_settled,
	.committed = listen_committed,
	.undo = listen_undo,
	.free = listen_change_free,
};

static int listen_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct listen_priv *p;
	struct listen_change *lc;
	struct knobval v;
	char err[128];

	if (k->pol->type != KNOB_T_INT || knobval_parse(KNOB_T_INT, value, &v, err, sizeof(err)) < 0 ||
	    v.v[0] < 1 || v.v[0] > INT32_MAX) {
		str_err(why, whylen, "backlog '%.64s' is not an integer from 1 to %d", value, INT32_MAX);
		return -EINVAL;
	}
	lc = calloc(1, sizeof(*lc));
	if (!lc)
		return -ENOMEM;
	lc->value = v.v[0];
	p = priv_of(k);
	if (!p) {
		free(lc);
		return -ENOMEM;
	}
	return nginx_change_start(k, &listen_change_ops, lc, &p->change, why, whylen, done, ctx);
}

static void listen_release(struct knob *k)
{
	struct listen_priv *p = k->priv;

	if (!p)
		return;
	if (p->change)
		nginx_change_orphan(p->change);
	probe_netlink_close(p->nl);
	free(p->lq);
	nginx_ctl_drop(k->env->nginx);
	free(p);
	k->priv = NULL;
}

const struct knob_ops knob_listen_ops = {
	.kind = "listen_queue",
	.probe = listen_probe,
	.read = listen_read,
	.write = listen_write,
	.release = listen_release,
};
