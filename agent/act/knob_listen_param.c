/*
 * knob_listen_param: a flag of nginx's listen lines as a knob (knob_listen_param_ops), onoff. Two are managed:
 *   - `reuseport`: nginx opens one listening socket per worker (SO_REUSEPORT) and the kernel spreads new
 *     connections over them by hash, instead of every worker waiting on one shared socket, where one worker can
 *     take most of them (accept_mutex with multi_accept, or the epoll wake-up order);
 *   - `deferred` (http listens; stream has none): nginx sets TCP_DEFER_ACCEPT on the socket, so the kernel hands
 *     a connection to accept() only once its first bytes arrived, and a client that connects and pauses costs
 *     nginx no accept, no wake-up, no connection slot meanwhile. On Linux nginx sets 1 s (read back: 1): a
 *     connection still silent then is established by the client's answer to the SYN-ACK sent again (measured:
 *     20 of 20 idle connections accepted by 1.5 s), so only pauses shorter than a second are kept out.
 * rcvbuf= and sndbuf= are not knobs: a reload that removes them leaves the socket's buffer as it was set and
 * locked against autotuning (measured: rb32768 stayed after rcvbuf=16k went and nginx reloaded), so only a
 * restart of nginx could undo them.
 *
 * Where: the parameter goes on the listen directive of each address:port that carries socket options (nginx
 * allows them once per address:port; nginx_conf decides which, as for backlog=), edited in place in the
 * operator's file: " reuseport" (" deferred") after the last parameter, or the word and the blank before it
 * removed, no other byte changed.
 *
 * Live value: the listening sockets of the target listens' addresses and ports, found through inet_diag
 * (another daemon's on nginx's port at another address is not nginx's). With reuseport each address:port has one
 * listening socket per worker, so the value is "on" when every address:port of those listens has more than one
 * socket and "off" when each has one; with a single worker the sockets cannot tell, and the configuration (the
 * last nginx -T) says. A reload that adds reuseport makes nginx set SO_REUSEPORT on the socket it has and open the
 * workers' beside it; one that removes it closes them. deferred is read from the sockets themselves: each is
 * found by its inode among the master's descriptors (/proc/PID/fd), copied with pidfd_getfd(2) and asked for
 * TCP_DEFER_ACCEPT ("on" when every one has it, "off" when none has); a reload sets or clears it on the socket
 * nginx keeps. A write is complete when the new generation shows what it asked for.
 *
 * Revert, and what survives a crash: the first write that edits a file keeps its bytes in
 * ENV->include_dir/listen-param-backup/ENCODED-PATH for reuseport, listen-deferred-backup/ for deferred (each
 * parameter's own: one's way back must not be taken for the other's), written and synced before the file
 * changes. A write whose result differs from the backup only in this parameter, with as many of them, is the way
 * back: the backup itself is written, so the file is the operator's again byte for byte, and the backup goes once
 * nginx runs it. A file edited by the operator since keeps their edits and gets only the parameter changed.
 */
#define _GNU_SOURCE

#include "act/knob.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/policy.h"
#include "act/nginx_conf.h"
#include "act/nginx_ctl.h"
#include "observe/probe_netlink.h"
#include "strutil.h"

#define SOCKETS_MAX 4096 /* listening sockets read from inet_diag */

/* The knob's own: the write in flight and the inet_diag probe its reads keep open. */
struct lp_priv {
	struct nginx_change *change;
	struct probe_netlink *nl;
	pid_t nl_pid;
	struct probe_netlink_listen_queue *lq;
};

/* One write: the parameter's new state and the backups it makes (undo) or brings back (commit). */
struct lp_change {
	const struct lp_spec *spec;
	bool on;
	char **made, **restored;
	size_t nmade, nrestored;
	long workers; /* of the configuration written: 0 when it cannot say (auto) */
};

static struct lp_priv *priv_of(struct knob *k)
{
	return nginx_ctl_knob_priv(k, sizeof(struct lp_priv));
}

/* The listens reuseport goes on: http and stream TCP (nginx's mail listen has no reuseport). */
static bool tcp_target(const struct nginx_listen *l)
{
	return l->target && l->family != AF_UNIX && !l->udp && l->port != 0 && l->module != NGINX_LISTEN_MAIL;
}

/* The listens deferred goes on: http TCP (stream's listen has no deferred; nginx -t refuses it). */
static bool http_target(const struct nginx_listen *l)
{
	return tcp_target(l) && l->module == NGINX_LISTEN_HTTP;
}

static bool has_reuseport(const struct nginx_listen *l)
{
	return l->reuseport;
}

static bool has_deferred(const struct nginx_listen *l)
{
	return l->deferred;
}

/* A parameter the knob manages: its word, the listens it goes on, whether a listen has it, and where the live
 * sockets show it: their number (reuseport) or their TCP_DEFER_ACCEPT (deferred). */
struct lp_spec {
	const char *name;
	bool (*target)(const struct nginx_listen *l);
	bool (*flagged)(const struct nginx_listen *l);
	bool defer;
	const char *backup_dir; /* under include_dir: one of its own, as each knob's way back is its own */
};

static const struct lp_spec specs[] = {
	{ "reuseport", tcp_target, has_reuseport, false, "listen-param-backup" },
	{ "deferred", http_target, has_deferred, true, "listen-deferred-backup" },
};

static const struct lp_spec *spec_of(const char *name)
{
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		if (strcmp(specs[i].name, name) == 0)
			return &specs[i];
	return NULL;
}

/* nginx's listening sockets of the addresses and ports of the listens S targets, in nginx's namespace (a probe
 * kept in P): p->lq[0 .. *N). 0, -errno with WHY. */
static int our_sockets(const struct knob_env *env, pid_t pid, struct lp_priv *p, const struct lp_spec *s,
		       const struct nginx_listen *l, size_t nl, size_t *n, char *why, size_t whylen)
{
	struct nginx_endpoint *ep = NULL;
	size_t all = 0, nep = 0;
	int r;

	if (p->nl && p->nl_pid != pid) {
		probe_netlink_close(p->nl);
		p->nl = NULL;
	}
	if (!p->nl) {
		r = probe_netlink_open(nginx_ctl_real_root(env) ? pid : 0, &p->nl, why, whylen);
		if (r < 0)
			return r;
		p->nl_pid = pid;
	}
	if (!p->lq && !(p->lq = calloc(SOCKETS_MAX, sizeof(*p->lq))))
		return -ENOMEM;
	r = probe_netlink_tcp(p->nl, p->lq, SOCKETS_MAX, &all, NULL);
	if (r < 0) {
		str_err(why, whylen, "inet_diag: %s", strerror(-r));
		probe_netlink_close(p->nl);
		p->nl = NULL;
		return r;
	}
	r = nginx_endpoints(l, nl, s->target, &ep, &nep);
	if (r < 0)
		return r;
	*n = 0;
	for (size_t i = 0; i < all; i++)
		if (nginx_endpoint_has(ep, nep, p->lq[i].family, p->lq[i].addr, p->lq[i].port))
			p->lq[(*n)++] = p->lq[i];
	free(ep);
	return 0;
}

/* The smallest and largest number of listening sockets of one address of the target listens' ports (P's probe).
 * 0, -ENOENT with WHY when there is none, -errno with WHY. */
static int live_sockets(const struct knob_env *env, pid_t pid, struct lp_priv *p, const struct lp_spec *s,
			const struct nginx_listen *l, size_t nl, size_t *min, size_t *max, char *why, size_t whylen)
{
	size_t n = 0, groups = 0;
	int r = our_sockets(env, pid, p, s, l, nl, &n, why, whylen);

	if (r < 0)
		return r;
	/* Each socket starts a group of those with its family, address and port, counted at its first member. */
	for (size_t i = 0; i < n; i++) {
		const struct probe_netlink_listen_queue *q = &p->lq[i];
		bool first = true;
		size_t count = 0;

		for (size_t j = 0; j < i && first; j++)
			first = !(p->lq[j].family == q->family && p->lq[j].port == q->port &&
				  strcmp(p->lq[j].addr, q->addr) == 0);
		if (!first)
			continue;
		for (size_t j = i; j < n; j++)
			count += p->lq[j].family == q->family && p->lq[j].port == q->port &&
				 strcmp(p->lq[j].addr, q->addr) == 0;
		if (groups == 0 || count < *min)
			*min = count;
		if (groups == 0 || count > *max)
			*max = count;
		groups++;
	}
	if (groups == 0) {
		str_err(why, whylen, "no listening socket of nginx's ports found");
		return -ENOENT;
	}
	return 0;
}

/* TCP_DEFER_ACCEPT of nginx's socket FD, copied through PIDFD: 0 with *V, -errno with WHY. */
static int defer_of(int pidfd, int fd, const struct probe_netlink_listen_queue *q, int *v, char *why, size_t whylen)
{
	socklen_t len = sizeof(*v);
	int sfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0), r = 0;

	if (sfd < 0 || getsockopt(sfd, IPPROTO_TCP, TCP_DEFER_ACCEPT, v, &len) < 0) {
		r = -errno;
		str_err(why, whylen, "%s of nginx's socket %s:%u: %s", sfd < 0 ? "pidfd_getfd" : "TCP_DEFER_ACCEPT",
			q->addr, (unsigned)q->port, strerror(-r));
	}
	if (sfd >= 0)
		close(sfd);
	return r;
}

/*
 * How many of the target listens' sockets have TCP_DEFER_ACCEPT (*NSET) of how many (*NSOCK): one pass over the
 * descriptors of nginx's master PID finds each by its inode, copies it with pidfd_getfd(2) and asks (a reuseport
 * host has a socket per worker and port: one readdir, not one per socket). 0, -errno with WHY.
 */
static int live_deferred(const struct knob_env *env, pid_t pid, struct lp_priv *p, const struct lp_spec *s,
			 const struct nginx_listen *l, size_t nl, size_t *nset, size_t *nsock, char *why, size_t whylen)
{
	char dir[64], path[PATH_MAX], link[64];
	struct dirent *e;
	size_t n = 0;
	bool *seen;
	DIR *d;
	int pidfd, r;

	*nset = *nsock = 0;
	if (!nginx_ctl_real_root(env)) {
		/* Under a fake root, ROOT/proc is not this host's processes. */
		str_err(why, whylen, "the sockets' TCP_DEFER_ACCEPT cannot be read under a fake root");
		return -ENOTSUP;
	}
	r = our_sockets(env, pid, p, s, l, nl, &n, why, whylen);
	if (r < 0)
		return r;
	if (n == 0) {
		str_err(why, whylen, "no listening socket of nginx's http ports found");
		return -ENOENT;
	}
	snprintf(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
	if (!(seen = calloc(n, sizeof(*seen))))
		return -ENOMEM;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	d = pidfd < 0 ? NULL : opendir(dir);
	if (!d) {
		r = -errno;
		str_err(why, whylen, "%s %ld: %s", pidfd < 0 ? "pidfd_open" : "opendir /proc/PID/fd", (long)pid,
			strerror(-r));
	}
	while (r == 0 && d && (e = readdir(d))) {
		unsigned long inode;
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%lu]", &inode) != 1)
			continue;
		for (size_t i = 0; i < n && r == 0; i++) {
			int v = 0;

			if (seen[i] || p->lq[i].inode != inode)
				continue;
			seen[i] = true;
			r = defer_of(pidfd, atoi(e->d_name), &p->lq[i], &v, why, whylen);
			*nset += r == 0 && v > 0;
			(*nsock)++;
		}
	}
	for (size_t i = 0; i < n && r == 0; i++)
		if (!seen[i]) {
			r = -ENOENT;
			str_err(why, whylen, "the socket of %s:%u is not among nginx's (pid %ld) descriptors",
				p->lq[i].addr, (unsigned)p->lq[i].port, (long)pid);
		}
	if (d)
		closedir(d);
	if (pidfd >= 0)
		close(pidfd);
	free(seen);
	return r;
}

/* Whether every target listen of L carries the flag S (configured), and how many there are. */
static bool all_flagged(const struct lp_spec *s, const struct nginx_listen *l, size_t nl, size_t *ntargets)
{
	bool all = true;

	*ntargets = 0;
	for (size_t i = 0; i < nl; i++) {
		if (!s->target(&l[i]))
			continue;
		(*ntargets)++;
		all = all && s->flagged(&l[i]);
	}
	return all && *ntargets > 0;
}

/* worker_processes of C: the number (auto: the CPUs online), 1 when unset (nginx's default), 0 when it cannot
 * be read. */
static long workers_of(const struct nginx_conf *c)
{
	struct nginx_conf_directive d;
	char err[128];
	int64_t v;

	long cpus;
	int r = nginx_conf_find(c, "main", "worker_processes", &d, err, sizeof(err));

	if (r == -ENOENT)
		return 1;
	if (r < 0 || d.nargs != 1)
		return 0;
	if (strcmp(d.args[0], "auto") == 0) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		return cpus > 0 ? cpus : 0;
	}
	if (str_to_i64(d.args[0], 1, 65536, &v) < 0)
		return 0;
	return (long)v;
}

/* The live value of S: "on" or "off" into OUT. 0, -errno with WHY. */
static int read_live(struct knob *k, const struct lp_spec *s, char *out, size_t outlen, char *why, size_t whylen)
{
	struct lp_priv *p = priv_of(k);
	const struct nginx_conf *c;
	struct nginx_listen *l;
	size_t nl, min = 0, max = 0, nset = 0, nsock = 0, ntargets;
	bool on;
	int r;

	if (!p)
		return -ENOMEM;
	if (k->env->nginx_pid <= 0)
		return -ESRCH;
	c = nginx_ctl_conf_peek(k->env->nginx, k->env);
	if (!c)
		return -EAGAIN;
	r = nginx_conf_listens(c, &l, &nl, why, whylen);
	if (r < 0)
		return r;
	on = all_flagged(s, l, nl, &ntargets);
	if (ntargets == 0)
		r = -ENOENT;
	else if (s->defer)
		r = live_deferred(k->env, k->env->nginx_pid, p, s, l, nl, &nset, &nsock, why, whylen);
	else
		r = live_sockets(k->env, k->env->nginx_pid, p, s, l, nl, &min, &max, why, whylen);
	free(l);
	if (r < 0)
		return r;
	/* deferred: on when every socket has it (an operator's partial deferred reads off). */
	if (s->defer)
		on = nset == nsock;
	/* reuseport: one socket each is off, unless a single worker holds them all (then the configuration says). */
	else if (min >= 2)
		on = true;
	else if (max <= 1 && workers_of(c) != 1)
		on = false;
	return snprintf(out, outlen, "%s", on ? "on" : "off") >= (int)outlen ? -ERANGE : 0;
}

static int param_read(struct knob *k, char *out, size_t outlen)
{
	const struct lp_spec *s = spec_of(k->pol->target);
	char why[KNOB_WHY_MAX];

	return s ? read_live(k, s, out, outlen, why, sizeof(why)) : -ENOTSUP;
}

static int param_probe(struct knob *k, char *why, size_t whylen)
{
	const struct lp_spec *s = spec_of(k->pol->target);
	const struct nginx_conf *c;
	struct nginx_listen *l;
	size_t nl, ntargets;
	char dir[PATH_MAX], live[8], err[KNOB_WHY_MAX] = "";
	int r;

	if (!priv_of(k))
		return -ENOMEM;
	if (!s || k->pol->type != KNOB_T_ONOFF) {
		str_err(why, whylen, "the listen parameter knob manages reuseport and deferred (onoff), not %s",
			k->pol->target);
		return -ENOTSUP;
	}
	if (k->env->nginx_pid <= 0) {
		str_err(why, whylen, "nginx is not running");
		return -ENOENT;
	}
	c = nginx_ctl_conf(k->env->nginx, k->env, &r, why, whylen);
	if (!c)
		return r == -ENOENT ? -ENOENT : -ENOTSUP;
	r = nginx_conf_listens(c, &l, &nl, why, whylen);
	if (r < 0)
		return -ENOTSUP;
	all_flagged(s, l, nl, &ntargets);
	for (size_t i = 0; i < nl; i++) {
		if (!s->target(&l[i]))
			continue;
		/* Where the operator reads it: the first listen line it goes on, and how many more. */
		str_err(why, whylen, "on listen %s:%u at %s:%u%s", l[i].addr, (unsigned)l[i].port,
			c->files[l[i].file].path, l[i].line, ntargets > 1 ? " and the other address:ports" : "");
		break;
	}
	free(l);
	if (ntargets == 0) {
		str_err(why, whylen, "no %s listen directive in nginx's configuration", s->defer ? "http TCP" : "TCP");
		return -ENOENT;
	}
	r = nginx_ctl_own_path(k->env, "", dir, sizeof(dir));
	if (r == 0 && access(dir, W_OK) < 0)
		r = -errno;
	if (r < 0) {
		str_err(why, whylen, "%s: %s (the listen parameters keep their backups there)", dir, strerror(-r));
		return -ENOENT;
	}
	r = read_live(k, s, live, sizeof(live), err, sizeof(err));
	if (r < 0) {
		str_err(why, whylen, "cannot read the listening sockets: %s", err[0] ? err : strerror(-r));
		return -ENOTSUP;
	}
	return 0;
}

static int remember(char ***v, size_t *n, const char *path)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(path)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Whether a backup reads "on": every target listen of its file flagged, that is as many flags as the file with
 * the parameter set on its targets has (ON_COUNT). An operator's partial reuseport (one address of two) reads
 * off, and comes back as it was on the way back to off. */
static bool backup_reads(const char *bak, size_t baklen, const char *param, int on_count)
{
	int n = nginx_conf_listen_param_count(bak, baklen, param);

	return n >= 0 && on_count >= 0 && n >= on_count;
}

/* The backup of PATH, made now from CUR if there is none; or, when NEW differs from it only in this parameter
 * and the backup reads as the value written, the backup itself in place of NEW (the way back, byte for byte).
 * ON_COUNT: the flags of the file with the parameter on its targets. */
static int backup_or_restore(struct nginx_change *ch, const char *path, const char *cur, size_t curlen, char **new,
			     size_t *newlen, int on_count)
{
	struct lp_change *pc = ch->priv;
	char bpath[PATH_MAX], dir[PATH_MAX], *bak = NULL;
	size_t baklen = 0;
	int r = nginx_ctl_backup_path(ch->env, pc->spec->backup_dir, path, bpath, sizeof(bpath));

	if (r == 0)
		r = nginx_ctl_read_file(bpath, NGINX_CTL_FILE_MAX, &bak, &baklen);
	if (r == 0 && backup_reads(bak, baklen, pc->spec->name, on_count) == pc->on) {
		/* The parameter goes back to what the backup has: the file becomes the backup when nothing else
		 * differs; else (the operator's edits, another knob's) no byte-for-byte way back is left, and the
		 * backup, which only a way back would use, goes too once nginx runs the file (found: listen_queue and
		 * listen_reuseport reverted in the other order left it behind for good). */
		if (nginx_conf_same_but_listen_param(bak, baklen, *new, *newlen, pc->spec->name)) {
			free(*new);
			*new = bak;
			*newlen = baklen;
			bak = NULL;
		}
		r = remember(&pc->restored, &pc->nrestored, bpath);
	} else if (r == -ENOENT) {
		r = nginx_ctl_own_path(ch->env, pc->spec->backup_dir, dir, sizeof(dir));
		if (r == 0 && mkdir(dir, 0700) < 0 && errno != EEXIST)
			r = -errno;
		if (r == 0)
			r = nginx_ctl_write_file(bpath, cur, curlen, 0600);
		if (r == 0)
			r = remember(&pc->made, &pc->nmade, bpath);
	}
	free(bak);
	if (r < 0)
		str_err(ch->msg, sizeof(ch->msg), "cannot back up %s: %s", path, strerror(-r));
	return r;
}

/* The flags of TEXT with the parameter set on its targets: NEW's count when NEW is that (ON), else computed. */
static int on_count(const char *text, size_t len, const size_t *starts, size_t ns, const char *param,
		    const char *new, size_t newlen, bool on)
{
	char err[KNOB_WHY_MAX], *out = NULL;
	size_t outlen = 0;
	int n;

	if (on)
		return nginx_conf_listen_param_count(new, newlen, param);
	if (nginx_conf_set_listen_param(text, len, starts, ns, param, "", &out, &outlen, err, sizeof(err)) < 0)
		return -EINVAL;
	n = nginx_conf_listen_param_count(out, outlen, param);
	free(out);
	return n;
}

/* The parameter on the target listens of each file, which must read as nginx -T showed it. */
static int plan_edits(struct nginx_change *ch, const struct nginx_conf *c, const struct nginx_listen *l, size_t nl)
{
	struct lp_change *pc = ch->priv;
	size_t *starts = calloc(nl ? nl : 1, sizeof(*starts));
	char err[KNOB_WHY_MAX];
	int r = 0;

	if (!starts)
		return -ENOMEM;
	for (size_t fi = 0; fi < c->nfiles && r == 0; fi++) {
		const struct nginx_conf_file *f = &c->files[fi];
		size_t ns = 0, curlen = 0, newlen = 0;
		char *cur = NULL, *new = NULL;

		for (size_t i = 0; i < nl; i++)
			if (pc->spec->target(&l[i]) && l[i].file == fi)
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
		r = nginx_conf_set_listen_param(cur, curlen, starts, ns, pc->spec->name, pc->on ? "" : NULL, &new, &newlen,
						err, sizeof(err));
		if (r < 0)
			str_err(ch->msg, sizeof(ch->msg), "%s: %s", f->path, err);
		else if (newlen != curlen || memcmp(new, cur, curlen) != 0)
			r = backup_or_restore(ch, f->path, cur, curlen, &new, &newlen,
					      on_count(cur, curlen, starts, ns, pc->spec->name, new, newlen, pc->on));
		else {
			free(cur);
			free(new);
			continue;
		}
		if (r < 0) {
			free(cur);
			free(new);
			break;
		}
		r = nginx_change_add_file(ch, f->path, cur, curlen, new, newlen);
	}
	free(starts);
	return r;
}

static void param_dumped(struct nginx_change *ch, const struct nginx_conf *c)
{
	struct lp_change *pc = ch->priv;
	struct nginx_listen *l;
	size_t nl, ntargets;
	char why[KNOB_WHY_MAX] = "";
	int r = nginx_conf_listens(c, &l, &nl, why, sizeof(why));

	if (r < 0) {
		nginx_change_finish(ch, r, why);
		return;
	}
	all_flagged(pc->spec, l, nl, &ntargets);
	if (ntargets == 0) {
		free(l);
		nginx_change_finish(ch, -ENOENT, pc->spec->defer ? "no http TCP listen directive in nginx's configuration"
							    : "no TCP listen directive in nginx's configuration");
		return;
	}
	pc->workers = workers_of(c);
	if (!pc->spec->defer && pc->on && pc->workers == 1) {
		free(l);
		/* One socket either way, and nothing the live sockets could verify. */
		nginx_change_finish(ch, -ENOTSUP, "nginx runs one worker: reuseport would give it one socket, as now");
		return;
	}
	r = plan_edits(ch, c, l, nl);
	free(l);
	if (r < 0) {
		nginx_change_fail(ch, r, "%s", ch->msg);
		return;
	}
	/* No file to edit (every listen already says so): the reload shows whether nginx runs it. */
	r = nginx_change_write(ch);
	if (r < 0) {
		nginx_change_fail(ch, r, "%s", ch->msg);
		return;
	}
	nginx_change_test(ch);
}

/* The new generation shows the sockets: reuseport, more than one per address:port when on (but for a single
 * worker), one when off; deferred, TCP_DEFER_ACCEPT on every one when on, on none when off. */
static bool param_settled(struct nginx_change *ch, char *why, size_t whylen)
{
	struct lp_change *pc = ch->priv;
	struct lp_priv p = { 0 };
	const struct nginx_conf *c = nginx_ctl_conf_peek(ch->env->nginx, ch->env);
	struct nginx_listen *l = NULL;
	size_t nl = 0, min = 0, max = 0;
	char err[KNOB_WHY_MAX] = "";
	bool ok;
	int r = c ? nginx_conf_listens(c, &l, &nl, err, sizeof(err)) : -EAGAIN;

	if (r == 0 && pc->spec->defer)
		r = live_deferred(ch->env, ch->pid, &p, pc->spec, l, nl, &min, &max, err, sizeof(err));
	else if (r == 0)
		r = live_sockets(ch->env, ch->pid, &p, pc->spec, l, nl, &min, &max, err, sizeof(err));
	probe_netlink_close(p.nl);
	free(p.lq);
	free(l);
	if (pc->spec->defer) {
		/* min: the sockets with TCP_DEFER_ACCEPT, max: all of them */
		ok = r == 0 && (pc->on ? min == max : min == 0);
		if (!ok)
			str_err(why, whylen, "nginx reloaded but %zu of its %zu listening sockets have TCP_DEFER_ACCEPT, "
				"not %s%s%s", min, max, pc->on ? "every one" : "none", err[0] ? ": " : "", err);
		return ok;
	}
	ok = r == 0 && (pc->on ? min >= 2 : max == 1);
	if (!ok)
		str_err(why, whylen, "nginx reloaded but its listening sockets are %zu..%zu per address:port, not %s%s%s",
			min, max, pc->on ? "one per worker" : "one", err[0] ? ": " : "", err);
	return ok;
}

static void drop_all(struct nginx_change *ch, char **paths, size_t n)
{
	const struct lp_change *pc = ch->priv;
	char dir[PATH_MAX];

	for (size_t i = 0; i < n; i++)
		unlink(paths[i]);
	if (n && nginx_ctl_own_path(ch->env, pc->spec->backup_dir, dir, sizeof(dir)) == 0)
		rmdir(dir); /* fails while other backups remain, as it should */
}

/* nginx runs the files: the backups this write brought back have done their work. */
static void param_committed(struct nginx_change *ch)
{
	struct lp_change *pc = ch->priv;

	drop_all(ch, pc->restored, pc->nrestored);
}

/* The files are back as they were: the backups made for this write go too. */
static void param_undo(struct nginx_change *ch)
{
	struct lp_change *pc = ch->priv;

	drop_all(ch, pc->made, pc->nmade);
}

static void param_change_free(void *priv)
{
	struct lp_change *pc = priv;

	for (size_t i = 0; i < pc->nmade; i++)
		free(pc->made[i]);
	for (size_t i = 0; i < pc->nrestored; i++)
		free(pc->restored[i]);
	free(pc->made);
	free(pc->restored);
	free(pc);
}

static const struct nginx_change_ops param_change_ops = {
	.dumped = param_dumped,
	.settled = param_settled,
	.committed = param_committed,
	.undo = param_undo,
	.free = param_change_free,
};

static int param_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct lp_priv *p;
	struct lp_change *pc;
	struct knobval v;
	char err[128];

	if (k->pol->type != KNOB_T_ONOFF || knobval_parse(KNOB_T_ONOFF, value, &v, err, sizeof(err)) < 0) {
		str_err(why, whylen, "%s '%.64s' is not on or off", k->pol->target, value);
		return -EINVAL;
	}
	if (!spec_of(k->pol->target)) {
		str_err(why, whylen, "'%.64s' is not a listen parameter the agent manages", k->pol->target);
		return -EINVAL;
	}
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pc->spec = spec_of(k->pol->target);
	pc->on = v.v[0] != 0;
	p = priv_of(k);
	if (!p) {
		free(pc);
		return -ENOMEM;
	}
	return nginx_change_start(k, &param_change_ops, pc, &p->change, why, whylen, done, ctx);
}

static void param_release(struct knob *k)
{
	struct lp_priv *p = k->priv;

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

const struct knob_ops knob_listen_param_ops = {
	.kind = "listen_param",
	.probe = param_probe,
	.read = param_read,
	.write = param_write,
	.release = param_release,
};
