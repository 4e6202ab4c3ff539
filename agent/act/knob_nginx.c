/*
 * knob_nginx: the nginx directive driver (knob_nginx_ops): one directive, where the operator set it, else in the
 * agent's include files.
 *
 * Where. A directive the operator's configuration sets in the knob's context (nginx.conf, conf.d, sites-enabled:
 * any file but ours, as `nginx -T` shows it) is edited there, in place: its arguments alone, the rest of the file
 * byte for byte (nginx_conf_set_args_at). The first edit of such a file keeps its bytes in
 * ENV->include_dir/directive-backup/ENCODED-PATH (nginx_ctl_backup_path), written and synced before the file
 * changes; a write that brings the file back to that backup but for this directive's value formatting (the revert
 * to the first value) writes the backup itself, and the backup is removed once nginx runs it. A directive set
 * nowhere is one line of the agent's CONTEXT.conf (context main, events or http; its backup and byte-exact
 * revert follow the same rule, and a write of nginx's default removes the line whatever the file's state, with or
 * without a backup: plan_own_edit), which the operator includes
 * once in nginx.conf: `include DIR/main.conf;` at the top level, `include DIR/events.conf;` inside events {} and
 * `include DIR/http.conf;` inside http {}; the other lines of that file are left as they are. Reading: the
 * operator's directive as their file reads now, else the line in our file when nginx includes that file in that
 * context, else the directive's effective value from `nginx -T`, else nginx's documented default. probe fails
 * (-ENOENT) when the directive is set nowhere and nginx does not include our file where it must; on success it
 * says where an operator's directive is ("set in PATH:LINE").
 *
 * Two directives do more. gzip_comp_level is every place the operator sets it (http, server, location: its value is
 * the highest, plan_every_edit). worker_connections moves the workers' file limit with it (worker_rlimit_nofile,
 * plan_nofile), in the same change.
 *
 * A write is asynchronous (-EINPROGRESS, DONE later, on ENV->loop): it is a change of nginx_ctl (nginx -T for a
 * fresh view, the file written, nginx -t, reload, new generation; put back on failure: see nginx_ctl.h), of which
 * this driver plans the one edit. probe takes the dump synchronously (shared by the knobs of one probe pass);
 * read never spawns synchronously: it uses the last dump and has nginx_ctl refresh it in the background.
 */
#define _GNU_SOURCE

#include "act/knob.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/policy.h"
#include "act/nginx_conf.h"
#include "act/nginx_ctl.h"
#include "strutil.h"

/* The agent's include file for CONTEXT into OUT. */
static int include_path(const struct knob_env *env, const char *context, char *out, size_t n)
{
	char name[NGINX_CONF_CONTEXT_MAX + 8];

	if ((size_t)snprintf(name, sizeof(name), "%s.conf", context) >= sizeof(name))
		return -ENAMETOOLONG;
	return nginx_ctl_own_path(env, name, out, n);
}

/* ---- directives and values -------------------------------------------------------------------------------- */

#define T(x) (1u << (x))

/*
 * What the driver knows of each directive: where it goes, the types it can hold, nginx's default (NULL: none), and
 * whether the knob is every occurrence of it in its context and the blocks nested there (EVERY: operators set
 * gzip_comp_level in http, server and location blocks alike; see plan_every_edit).
 */
static const struct directive_info {
	const char *name, *context, *dflt;
	unsigned types;
	bool every;
} directives[] = {
	{ "worker_processes", "main", "1", T(KNOB_T_INT) | T(KNOB_T_ENUM), false },
	{ "worker_cpu_affinity", "main", "", T(KNOB_T_CPULIST), false },
	{ "worker_rlimit_nofile", "main", NULL, T(KNOB_T_INT), false },
	{ "worker_priority", "main", "0", T(KNOB_T_INT), false },
	{ "worker_connections", "events", "512", T(KNOB_T_INT), false },
	{ "multi_accept", "events", "off", T(KNOB_T_ONOFF), false },
	{ "accept_mutex", "events", "off", T(KNOB_T_ONOFF), false },
	{ "keepalive_requests", "http", "1000", T(KNOB_T_INT), false },
	{ "sendfile", "http", "off", T(KNOB_T_ONOFF), false },
	{ "tcp_nopush", "http", "off", T(KNOB_T_ONOFF), false },
	{ "tcp_nodelay", "http", "on", T(KNOB_T_ONOFF), false },
	{ "reset_timedout_connection", "http", "off", T(KNOB_T_ONOFF), false },
	{ "gzip_comp_level", "http", "1", T(KNOB_T_INT), true },
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
		str_err(why, whylen, "no directive named");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!islower((unsigned char)name[i]) && !isdigit((unsigned char)name[i]) && name[i] != '_') {
			str_err(why, whylen, "'%s' is not a directive name", name);
			return -EINVAL;
		}
	}
	if (strcmp(pol->context, "main") != 0 && strcmp(pol->context, "events") != 0 &&
	    strcmp(pol->context, "http") != 0) {
		str_err(why, whylen, "context '%s': the agent has include files for main, events and http only",
			pol->context);
		return -ENOTSUP;
	}
	d = directive_lookup(name);
	if (d && strcmp(d->context, pol->context) != 0) {
		str_err(why, whylen, "%s belongs in %s, not %s", name, d->context, pol->context);
		return -EINVAL;
	}
	if (d ? !(d->types & T(pol->type))
	      : pol->type != KNOB_T_INT && pol->type != KNOB_T_ONOFF && pol->type != KNOB_T_ENUM) {
		str_err(why, whylen, "%s cannot hold a value of type %s", name, knobval_type_name(pol->type));
		return -ENOTSUP;
	}
	return 0;
}

/* The online CPUs (a CPU list) under the root. */
static int online_cpus(const struct knob_env *env, struct knobval *out)
{
	char path[PATH_MAX], *text;
	size_t len;
	int r = str_rooted(path, sizeof(path), env->root, "/sys/devices/system/cpu/online");

	if (r < 0)
		return r;
	r = nginx_ctl_read_file(path, 65536, &text, &len);
	if (r < 0)
		return r;
	r = knobval_parse(KNOB_T_CPULIST, text, out, NULL, 0);
	free(text);
	return r;
}

/* A knob VALUE as the arguments of its directive into ARGS ("" and *REMOVE for the empty CPU list). */
static int value_to_args(const struct knob_policy *pol, const char *value, char *args, size_t n, bool *remove,
			 char *why, size_t whylen)
{
	struct knobval v;
	char err[128];
	unsigned lo, hi;

	*remove = false;
	if (knobval_parse(pol->type, value, &v, err, sizeof(err)) < 0) {
		str_err(why, whylen, "value '%.64s': %s", value, err);
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
			str_err(why, whylen, "CPU %u: worker_cpu_affinity masks stop at CPU %d here", hi,
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
static int args_to_value(const struct knob *k, const struct nginx_conf_directive *d, char *out, size_t n,
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
			str_err(why, whylen, "%s with %zu mask(s) cannot be read as one CPU list", pol->target,
				d->nargs);
			return -EINVAL;
		}
	} else {
		if (d->nargs != 1) {
			str_err(why, whylen, "%s has %zu arguments", pol->target, d->nargs);
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
		str_err(why, whylen, "%s %.64s is not a %s", pol->target, text, knobval_type_name(pol->type));
		return -EINVAL;
	}
	return knobval_format(&v, out, n) < 0 ? -ERANGE : 0;
}

/* Where a directive knob's line is: in the agent's include file for its context, or where the operator set it. */
struct where {
	bool operator;                 /* set in the operator's file PATH (D: as the dump shows it) */
	const char *path;              /* points into the dump */
	struct nginx_conf_directive d;
	struct nginx_conf_found *all;  /* a directive of EVERY: each place the operator sets it (ALL[0] is D) */
	size_t nall;
};

static void where_free(struct where *w)
{
	free(w->all);
	w->all = NULL;
	w->nall = 0;
}

static bool every_directive(const char *name)
{
	const struct directive_info *d = directive_lookup(name);

	return d && d->every;
}

/*
 * Where nginx takes K's directive from, per the dump C: the operator's file when a file other than ours sets it in
 * its context (it is edited there, in place); else our file, which nginx must include in that context (-ENOENT
 * with WHY otherwise).
 */
static int locate(const struct knob *k, const struct nginx_conf *c, struct where *w, char *why, size_t whylen)
{
	const struct knob_policy *pol = k->pol;
	char ours[PATH_MAX], ctx[NGINX_CONF_CONTEXT_MAX], err[KNOB_WHY_MAX];
	int r = include_path(k->env, pol->context, ours, sizeof(ours));

	memset(w, 0, sizeof(*w));
	if (r < 0)
		return r;
	if (every_directive(pol->target)) {
		/* Every place the operator sets it (our own file's line aside): all of them are edited in place. */
		struct nginx_conf_found *all;
		size_t n = 0, kept = 0;

		r = nginx_conf_find_each(c, pol->context, pol->target, &all, &n, err, sizeof(err));
		if (r < 0) {
			str_err(why, whylen, "%s", err);
			return r;
		}
		for (size_t i = 0; i < n; i++)
			if (strcmp(c->files[all[i].d.file].path, ours) != 0)
				all[kept++] = all[i];
		if (kept > 0) {
			w->operator = true;
			w->all = all;
			w->nall = kept;
			w->d = all[0].d;
			w->path = c->files[w->d.file].path;
			return 0;
		}
		free(all);
	}
	r = nginx_conf_find(c, pol->context, pol->target, &w->d, err, sizeof(err));
	if (r < 0 && r != -ENOENT) {
		str_err(why, whylen, "%s", err);
		return r;
	}
	if (r == 0 && strcmp(c->files[w->d.file].path, ours) != 0) {
		w->operator = true;
		w->path = c->files[w->d.file].path;
		return 0;
	}
	r = nginx_conf_included(c, ours, ctx, sizeof(ctx), err, sizeof(err));
	if (r == -ENOENT) {
		str_err(why, whylen, "nginx does not include %s", ours);
		return -ENOENT;
	}
	if (r < 0) {
		str_err(why, whylen, "%s", err);
		return r;
	}
	if (strcmp(ctx, pol->context) != 0) {
		str_err(why, whylen, "nginx includes %s in %s, not %s", ours, ctx,
			strcmp(pol->context, "main") == 0 ? "at the top level" : pol->context);
		return -ENOENT;
	}
	return 0;
}

/* The operator's directive as their file reads now: the one at W's offset when it is still there (our own edits
 * change only its arguments), else as the dump showed it. */
static int operator_value(const struct knob *k, const struct where *w, char *out, size_t n)
{
	struct nginx_conf_directive d = w->d;
	char why[KNOB_WHY_MAX], *text;
	size_t len;

	if (nginx_ctl_read_file(w->path, NGINX_CTL_FILE_MAX, &text, &len) == 0) {
		if (nginx_conf_file_at(text, len, w->d.start, k->pol->target, &d, why, sizeof(why)) < 0)
			d = w->d;
		free(text);
	}
	return args_to_value(k, &d, out, n, why, sizeof(why));
}

/* The integer value of the directive D. */
static int int_of(const struct knob *k, const struct nginx_conf_directive *d, int64_t *v)
{
	char text[KNOB_VALUE_MAX], why[KNOB_WHY_MAX];
	int r = args_to_value(k, d, text, sizeof(text), why, sizeof(why));

	return r < 0 ? r : str_to_i64(text, INT64_MIN, INT64_MAX, v);
}

/* A directive of EVERY that the operator sets (W, in the configuration C): the highest of its values, which is what
 * the costliest place pays (gzip_comp_level), as the knob's value; *AT: where it is. */
static int every_value(const struct knob *k, const struct where *w, char *out, size_t n, size_t *at)
{
	int64_t best = 0, v;
	int r;

	for (size_t i = 0; i < w->nall; i++) {
		r = int_of(k, &w->all[i].d, &v);
		if (r < 0)
			return r;
		if (i == 0 || v > best) {
			best = v;
			if (at)
				*at = i;
		}
	}
	return (size_t)snprintf(out, n, "%lld", (long long)best) >= n ? -ERANGE : 0;
}

/* ---- the knob's private state ----------------------------------------------------------------------------- */

struct directive_priv {
	struct nginx_change *change; /* the write in flight */
};

/* A write's own copies: the knob may be released before the change ends. */
struct directive_change {
	char target[POLICY_TARGET_MAX], context[16];
	enum knob_type type;
	char args[NGINX_CONF_LINE_MAX]; /* the new arguments */
	bool remove;
	bool bare;                      /* our include file: the value is what nginx has without the line (its
					 * default), so the line goes (plan_own_edit) */
	char backup[PATH_MAX];          /* the operator's file's backup, removed once the file is back to it */
	char **made, **done;            /* backups this write made (gone if it fails), and those whose work it ends */
	size_t nmade, ndone;
	/* worker_connections: the workers' file limit moves with it (plan_nofile). */
	bool nofile;
	int64_t nofile_min, nofile_max;  /* the worker_rlimit_nofile policy's bounds (0: no such policy) */
	int64_t nofile_expect;           /* the soft limit the new workers must have (0: not checked) */
	bool nofile_clear;               /* once nginx runs the files: the state and its backup go */
	bool nofile_state_written;       /* the state was written for this write: undo puts back NOFILE_STATE_OLD */
	char *nofile_state_old;          /* the state before (NULL: none) */
	size_t nofile_state_oldlen;
	char nofile_backup[PATH_MAX];    /* the backup this write made ("" if none) */
	char nofile_drop[PATH_MAX];      /* with NOFILE_CLEAR: the backup that goes with the state */
};

static void directive_change_free(void *priv)
{
	struct directive_change *dc = priv;

	for (size_t i = 0; i < dc->nmade; i++)
		free(dc->made[i]);
	for (size_t i = 0; i < dc->ndone; i++)
		free(dc->done[i]);
	free(dc->made);
	free(dc->done);
	free(dc->nofile_state_old);
	free(dc);
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

#define BACKUP_DIR "directive-backup"

static struct directive_priv *priv_of(struct knob *k)
{
	return nginx_ctl_knob_priv(k, sizeof(struct directive_priv));
}

/* ---- nginx_directive: probe and read ---------------------------------------------------------------------- */

static void nofile_note(const struct knob *k, char *why, size_t whylen);

/*
 * Blocks inside the knob's context that set its directive again keep their own value whatever the knob writes
 * (keepalive_requests 1 in one server block beside the http block's): appended to WHY, for the operator.
 */
static void nested_note(const struct knob *k, const struct nginx_conf *c, char *why, size_t whylen)
{
	char ctx[NGINX_CONF_CONTEXT_MAX], err[KNOB_WHY_MAX];
	struct nginx_conf_directive *d = malloc(sizeof(*d));
	size_t n = 0, len;

	if (!d || !why || whylen == 0)
		goto out;
	if (nginx_conf_nested(c, k->pol->context, k->pol->target, d, ctx, sizeof(ctx), &n, err, sizeof(err)) < 0 ||
	    n == 0)
		goto out;
	len = strnlen(why, whylen);
	snprintf(why + len, whylen - len, "%salso set in %zu nested block%s, which %s (%s:%u in %s%s)",
		 len ? "; " : "", n, n == 1 ? "" : "s", n == 1 ? "keeps its own value" : "keep their own values",
		 c->files[d->file].path, d->line, ctx, n > 1 ? ", the first" : "");
out:
	free(d);
}

static int directive_probe(struct knob *k, char *why, size_t whylen)
{
	const struct nginx_conf *c;
	char live[KNOB_VALUE_MAX];
	struct where w;
	int r;

	if (!priv_of(k))
		return -ENOMEM;
	r = directive_check(k->pol, why, whylen);
	if (r < 0)
		return r;
	c = nginx_ctl_conf(k->env->nginx, k->env, &r, why, whylen);
	if (!c)
		return r == -ENOENT ? -ENOENT : -ENOTSUP;
	r = locate(k, c, &w, why, whylen);
	if (r < 0)
		return r;
	r = k->ops->read(k, live, sizeof(live));
	if (r < 0 && why && !why[0])
		str_err(why, whylen, "cannot read %s: %s", k->pol->target, strerror(-r));
	if (r < 0) {
		where_free(&w);
		return -ENOTSUP;
	}
	/* Where it is set, for the operator (ngxctl knobs): the engine keeps a successful probe's WHY. */
	if (w.operator && w.all) {
		size_t at = 0;
		char v[32] = "?";

		every_value(k, &w, v, sizeof(v), &at);
		if (w.nall == 1)
			str_err(why, whylen, "set in %s:%u (%s; edited there)", c->files[w.all[0].d.file].path,
				w.all[0].d.line, w.all[0].context);
		else
			str_err(why, whylen, "set in %zu places, the highest (%s) at %s:%u (%s): the knob is the highest; "
				"a write sets those at it and lowers any other above the value, in place", w.nall, v,
				c->files[w.all[at].d.file].path, w.all[at].d.line, w.all[at].context);
	} else if (w.operator) {
		str_err(why, whylen, "set in %s:%u (edited there)", w.path, w.d.line);
	}
	if (!w.all)
		nested_note(k, c, why, whylen);
	if (strcmp(k->pol->target, "worker_connections") == 0)
		nofile_note(k, why, whylen);
	where_free(&w);
	return 0;
}

/* The soft and hard RLIMIT_NOFILE of PID from ROOT/proc/PID/limits ("Max open files  SOFT  HARD  files"). 0, -ENOENT,
 * -ENAMETOOLONG. */
static int proc_nofile(const struct knob_env *env, pid_t pid, int64_t *soft, int64_t *hard)
{
	char path[PATH_MAX], *text, *line;
	long long s = -1, h = -1;
	size_t len;
	int r;

	if (pid <= 0)
		return -ENOENT;
	r = str_rooted(path, sizeof(path), env->root, "/proc/%d/limits", (int)pid);
	if (r == 0)
		r = nginx_ctl_read_file(path, 65536, &text, &len);
	if (r < 0)
		return r == -ENAMETOOLONG ? r : -ENOENT;
	line = strstr(text, "\nMax open files");
	if (!line || sscanf(line + 15, " %lld %lld", &s, &h) != 2)
		s = h = -1;
	free(text);
	if (s <= 0 || h <= 0)
		return -ENOENT;
	*soft = s;
	*hard = h;
	return 0;
}

/* worker_rlimit_nofile set nowhere: the workers keep the soft RLIMIT_NOFILE the master has (systemd's LimitNOFILE,
 * 1024 by default). */
static int inherited_nofile(const struct knob *k, char *out, size_t outlen)
{
	int64_t soft, hard;
	int r = proc_nofile(k->env, k->env->nginx_pid, &soft, &hard);

	if (r < 0)
		return r;
	return (size_t)snprintf(out, outlen, "%lld", (long long)soft) >= outlen ? -ERANGE : 0;
}

static int directive_read(struct knob *k, char *out, size_t outlen)
{
	const struct knob_policy *pol = k->pol;
	const struct directive_info *info;
	const struct nginx_conf *c;
	struct nginx_conf_directive d;
	char ours[PATH_MAX], why[KNOB_WHY_MAX], *text;
	struct where w;
	size_t len;
	int r;

	if (!priv_of(k))
		return -ENOMEM;
	r = directive_check(pol, why, sizeof(why));
	if (r < 0)
		return r;
	r = include_path(k->env, pol->context, ours, sizeof(ours));
	if (r < 0)
		return r;
	if (every_directive(pol->target)) {
		/* Its places can move as its values are written: the files as they are now say. */
		struct nginx_conf now;

		r = nginx_ctl_conf_now(k->env->nginx, k->env, &now, why, sizeof(why));
		if (r < 0)
			return r;
		r = locate(k, &now, &w, why, sizeof(why));
		r = r == 0 && w.operator ? every_value(k, &w, out, outlen, NULL) : 1;
		where_free(&w);
		nginx_conf_free(&now);
		if (r <= 0)
			return r;
	}
	c = nginx_ctl_conf_peek(k->env->nginx, k->env);
	r = c ? locate(k, c, &w, why, sizeof(why)) : 0;
	if (c && r == 0 && w.operator && !every_directive(pol->target)) {
		r = operator_value(k, &w, out, outlen);
		where_free(&w);
		return r;
	}
	where_free(&w);
	/* Our file counts only where nginx reads it; without a dump yet, trust it (probe has checked). */
	if (r == 0) {
		r = nginx_ctl_read_file(ours, NGINX_CTL_FILE_MAX, &text, &len);
		if (r == 0) {
			r = nginx_conf_file_find(text, len, pol->target, &d, why, sizeof(why));
			free(text);
			if (r == 0)
				return args_to_value(k, &d, out, outlen, why, sizeof(why));
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
		return args_to_value(k, &d, out, outlen, why, sizeof(why));
	if (r < 0 && r != -ENOENT)
		return r;
	info = directive_lookup(pol->target);
	if (info && strcmp(info->name, "worker_rlimit_nofile") == 0 && !info->dflt)
		return inherited_nofile(k, out, outlen);
	if (!info || !info->dflt)
		return -ENOENT;
	memset(&d, 0, sizeof(d));
	if (info->dflt[0]) {
		d.nargs = 1;
		snprintf(d.args[0], sizeof(d.args[0]), "%s", info->dflt);
	}
	return args_to_value(k, &d, out, outlen, why, sizeof(why));
}

/* ---- writes ----------------------------------------------------------------------------------------------- */

/* The knob a change's checks want: the change outlives the knob, so one made of the change's copies. */
static void shadow_knob(const struct nginx_change *ch, struct knob *k, struct knob_policy *pol)
{
	const struct directive_change *dc = ch->priv;

	memset(k, 0, sizeof(*k));
	memset(pol, 0, sizeof(*pol));
	snprintf(pol->target, sizeof(pol->target), "%s", dc->target);
	snprintf(pol->context, sizeof(pol->context), "%s", dc->context);
	pol->type = dc->type;
	k->pol = pol;
	k->env = ch->env;
}

/* The value of K's directive in TEXT (a file: at START for an operator's, else its top-level line, else nginx's
 * default) as this driver writes its arguments, into ARGS. */
static int args_in(const struct knob *k, const char *text, size_t len, const struct where *w, char *args, size_t n)
{
	const struct directive_info *info = directive_lookup(k->pol->target);
	struct nginx_conf_directive d;
	char why[KNOB_WHY_MAX], value[KNOB_VALUE_MAX];
	bool remove;
	int r = w ? nginx_conf_file_at(text, len, w->d.start, k->pol->target, &d, why, sizeof(why))
		  : nginx_conf_file_find(text, len, k->pol->target, &d, why, sizeof(why));

	if (r == -ENOENT && !w && info && info->dflt) {
		memset(&d, 0, sizeof(d));
		if (info->dflt[0]) {
			d.nargs = 1;
			snprintf(d.args[0], sizeof(d.args[0]), "%s", info->dflt);
		}
		r = 0;
	}
	if (r == -ENOENT && !w && info && strcmp(info->name, "worker_rlimit_nofile") == 0) {
		/* Set nowhere, it is the master's own limit: a revert to that removes the line (no pinned limit). */
		r = inherited_nofile(k, value, sizeof(value));
		if (r == 0)
			r = value_to_args(k->pol, value, args, n, &remove, why, sizeof(why));
		return r;
	}
	if (r == 0)
		r = args_to_value(k, &d, value, sizeof(value), why, sizeof(why));
	if (r == 0)
		r = value_to_args(k->pol, value, args, n, &remove, why, sizeof(why));
	return r == 0 && remove ? (args[0] = '\0', 0) : r;
}

/* TEXT with K's directive set to the change's arguments: at W's offset for an operator's file, else our line. */
static int edit_text(const struct nginx_change *ch, const char *text, size_t len, const struct where *w, char **out,
		     size_t *outlen, char *err, size_t errlen)
{
	const struct directive_change *dc = ch->priv;

	if (w)
		return nginx_conf_set_args_at(text, len, w->d.start, dc->target, dc->args, out, outlen, err, errlen);
	return nginx_conf_set_directive(text, len, dc->target, dc->remove || dc->bare ? NULL : dc->args, out, outlen,
					err, errlen);
}

/*
 * The backup of PATH, whose text is CUR and is to become *NEW: the first edit of a file keeps its bytes in
 * BACKUP_DIR (written and synced before the file changes); a write that brings the file back to its backup but
 * for the formatting of this directive (the revert to its first value: the file differs from the backup in this
 * directive alone, and the value is the backup's) writes the backup itself, so that the file is as it was byte
 * for byte, and the backup goes once nginx runs it (directive_committed). W: the operator's directive, or NULL
 * for our include file.
 */
static int backup_or_restore(struct nginx_change *ch, const struct knob *k, const char *path, const char *cur,
			     size_t curlen, const struct where *w, char **new, size_t *newlen)
{
	struct directive_change *dc = ch->priv;
	char err[KNOB_WHY_MAX], dir[PATH_MAX], was[NGINX_CONF_LINE_MAX], *bak = NULL, *same = NULL;
	size_t baklen = 0, samelen = 0;
	int r = nginx_ctl_backup_path(ch->env, BACKUP_DIR, path, dc->backup, sizeof(dc->backup));

	if (r == 0)
		r = nginx_ctl_read_file(dc->backup, NGINX_CTL_FILE_MAX, &bak, &baklen);
	if (r == 0) {
		if (args_in(k, bak, baklen, w, was, sizeof(was)) == 0 && strcmp(was, dc->remove ? "" : dc->args) == 0 &&
		    edit_text(ch, bak, baklen, w, &same, &samelen, err, sizeof(err)) == 0 && samelen == *newlen &&
		    memcmp(same, *new, samelen) == 0) {
			free(*new);
			*new = bak;
			*newlen = baklen;
			bak = NULL;
		}
	} else if (r == -ENOENT && !w && (dc->remove || dc->bare)) {
		r = 0; /* our line goes: the file as nginx has it by default needs no backup to come back to */
	} else if (r == -ENOENT) {
		r = nginx_ctl_own_path(ch->env, BACKUP_DIR, dir, sizeof(dir));
		if (r == 0 && mkdir(dir, 0700) < 0 && errno != EEXIST)
			r = -errno;
		if (r == 0)
			r = nginx_ctl_write_file(dc->backup, cur, curlen, 0600);
	}
	free(same);
	free(bak);
	if (r < 0)
		str_err(ch->msg, sizeof(ch->msg), "cannot back up %s: %s", path, strerror(-r));
	return r;
}

/* The edit of a directive the operator set (W, in C): its arguments in place, in their file. */
static int plan_operator_edit(struct nginx_change *ch, const struct knob *k, const struct nginx_conf *c,
			      const struct where *w)
{
	struct directive_change *dc = ch->priv;
	const struct nginx_conf_file *f = &c->files[w->d.file];
	char err[KNOB_WHY_MAX], *cur = NULL, *new = NULL;
	size_t curlen, newlen;
	int r;

	if (dc->remove) {
		str_err(ch->msg, sizeof(ch->msg), "%s is set in %s:%u: the agent edits its arguments there, it does "
			"not remove the operator's line", dc->target, w->path, w->d.line);
		return -ENOTSUP;
	}
	r = nginx_ctl_read_file(f->path, NGINX_CTL_FILE_MAX, &cur, &curlen);
	if (r < 0) {
		str_err(ch->msg, sizeof(ch->msg), "cannot read %s: %s", f->path, strerror(-r));
		return r;
	}
	if (curlen != f->len || memcmp(cur, f->text, curlen) != 0) {
		free(cur);
		str_err(ch->msg, sizeof(ch->msg), "%s changed while it was being read; try again", f->path);
		return -EAGAIN;
	}
	r = edit_text(ch, cur, curlen, w, &new, &newlen, err, sizeof(err));
	if (r < 0)
		str_err(ch->msg, sizeof(ch->msg), "%s: %s", f->path, err);
	else
		r = backup_or_restore(ch, k, f->path, cur, curlen, w, &new, &newlen);
	if (r < 0) {
		free(cur);
		free(new);
		return r;
	}
	return nginx_change_add_file(ch, f->path, cur, curlen, new, newlen);
}

/* The backup of PATH goes when the file (TEXT) is back to it: one made before a kill cut the write it was for. */
static void drop_backup_if(struct nginx_change *ch, const char *path, const char *text, size_t len)
{
	char bpath[PATH_MAX], dir[PATH_MAX], *bak;
	size_t baklen;

	if (nginx_ctl_backup_path(ch->env, BACKUP_DIR, path, bpath, sizeof(bpath)) < 0 ||
	    nginx_ctl_read_file(bpath, NGINX_CTL_FILE_MAX, &bak, &baklen) < 0)
		return;
	if (baklen == len && (len == 0 || memcmp(bak, text, len) == 0)) {
		unlink(bpath);
		if (nginx_ctl_own_path(ch->env, BACKUP_DIR, dir, sizeof(dir)) == 0)
			rmdir(dir);
	}
	free(bak);
}

/*
 * The edit of a directive in our include file for its context. A value that nginx has without the line (its default;
 * worker_rlimit_nofile: the master's own limit) is no line: the line goes, whatever state the file is in, so that a
 * write of the original puts the file back as the operator had it even when its backup is gone (found on a real
 * nginx: killed in arm A of a keepalive_requests trial, after the backup went, recovery wrote
 * `keepalive_requests 1000;` into http.conf, and a later one in the operator's http {} failed nginx -t). Nothing
 * to change: no file (directive_dumped finishes without a reload).
 */
static int plan_own_edit(struct nginx_change *ch, const struct knob *k)
{
	struct directive_change *dc = ch->priv;
	char ours[PATH_MAX], bare[NGINX_CONF_LINE_MAX], *old = NULL, *new = NULL;
	size_t oldlen = 0, newlen = 0;
	int r = include_path(ch->env, dc->context, ours, sizeof(ours));

	dc->bare = !dc->remove && args_in(k, "", 0, NULL, bare, sizeof(bare)) == 0 && strcmp(bare, dc->args) == 0;

	if (r == 0) {
		r = nginx_ctl_read_file(ours, NGINX_CTL_FILE_MAX, &old, &oldlen);
		if (r == -ENOENT)
			r = 0;
	}
	if (r < 0) {
		str_err(ch->msg, sizeof(ch->msg), "cannot read the include file");
		return r;
	}
	r = edit_text(ch, old ? old : "", oldlen, NULL, &new, &newlen, ch->msg, sizeof(ch->msg));
	if (r == 0 && newlen == oldlen && (oldlen == 0 || memcmp(new, old, oldlen) == 0)) {
		drop_backup_if(ch, ours, old, oldlen);
		free(old);
		free(new);
		return 0;
	}
	if (r == 0 && old)
		r = backup_or_restore(ch, k, ours, old, oldlen, NULL, &new, &newlen);
	if (r < 0) {
		free(old);
		free(new);
		return r;
	}
	r = nginx_change_add_file(ch, ours, old, oldlen, new, newlen);
	if (r < 0)
		str_err(ch->msg, sizeof(ch->msg), "out of memory");
	return r;
}

/*
 * The edit of a directive of EVERY that the operator sets (W, in C), in place in each of their files. The knob is the
 * highest value set anywhere: a write of V sets the places that had the highest value to V and lowers any other
 * that is above V; the others keep their own (gzip_comp_level 9 in http and 2 in one location: 5 gives 5 and 2, 9
 * again 9 and 2). What each place "had" is its value in the file's backup (the first edit of a file keeps its bytes
 * in BACKUP_DIR), as long as the file still has as many of them; else its value now. A write of the highest value
 * they had puts each back, and a file that differs from its backup only in how those are written gets the backup's
 * own bytes; its backup goes once nginx runs that (or any file where every place is back to what it had).
 */
static int plan_every_edit(struct nginx_change *ch, const struct knob *k, const struct nginx_conf *c,
			   const struct where *w)
{
	struct directive_change *dc = ch->priv;
	const char *names[] = { dc->target };
	struct file_plan {
		size_t file;
		char *cur, *bak;
		size_t curlen, baklen;
		struct nginx_conf_found *occ; /* the file's directives now */
		size_t nocc;
		int64_t *had;
		bool *managed;
	} *fp;
	size_t nfp = 0;
	int64_t v, top = 0;
	bool any = false;
	char err[KNOB_WHY_MAX], bpath[PATH_MAX], dir[PATH_MAX];
	int r = str_to_i64(dc->args, INT64_MIN, INT64_MAX, &v);

	if (r < 0 || dc->type != KNOB_T_INT) {
		str_err(ch->msg, sizeof(ch->msg), "%s: '%s' is not an integer", dc->target, dc->args);
		return -EINVAL;
	}
	fp = calloc(w->nall, sizeof(*fp));
	if (!fp)
		return -ENOMEM;
	/* Each file once, with what its places had. */
	for (size_t i = 0; i < w->nall && r == 0; i++) {
		struct file_plan *f = NULL;
		struct nginx_conf_found *bocc = NULL;
		size_t nb = 0;

		for (size_t j = 0; j < nfp; j++)
			if (fp[j].file == w->all[i].d.file)
				f = &fp[j];
		if (f)
			continue;
		f = &fp[nfp++];
		f->file = w->all[i].d.file;
		r = nginx_ctl_read_file(c->files[f->file].path, NGINX_CTL_FILE_MAX, &f->cur, &f->curlen);
		if (r < 0) {
			str_err(ch->msg, sizeof(ch->msg), "cannot read %s: %s", c->files[f->file].path, strerror(-r));
			break;
		}
		if (f->curlen != c->files[f->file].len || memcmp(f->cur, c->files[f->file].text, f->curlen) != 0) {
			str_err(ch->msg, sizeof(ch->msg), "%s changed while it was being read; try again",
				c->files[f->file].path);
			r = -EAGAIN;
			break;
		}
		r = nginx_conf_file_each(f->cur, f->curlen, dc->target, &f->occ, &f->nocc, err, sizeof(err));
		if (r == 0 && !(f->had = calloc(f->nocc + 1, sizeof(*f->had))))
			r = -ENOMEM;
		if (r == 0 && !(f->managed = calloc(f->nocc + 1, sizeof(*f->managed))))
			r = -ENOMEM;
		if (r == 0)
			r = nginx_ctl_backup_path(ch->env, BACKUP_DIR, c->files[f->file].path, bpath, sizeof(bpath));
		if (r == 0 && nginx_ctl_read_file(bpath, NGINX_CTL_FILE_MAX, &f->bak, &f->baklen) == 0 &&
		    nginx_conf_file_each(f->bak, f->baklen, dc->target, &bocc, &nb, err, sizeof(err)) < 0)
			nb = 0;
		for (size_t j = 0; r == 0 && j < f->nocc; j++) {
			r = int_of(k, nb == f->nocc ? &bocc[j].d : &f->occ[j].d, &f->had[j]);
			for (size_t m = 0; m < w->nall; m++)
				f->managed[j] |= w->all[m].d.file == f->file && w->all[m].d.start == f->occ[j].d.start;
			if (r == 0 && f->managed[j] && (!any || f->had[j] > top)) {
				top = f->had[j];
				any = true;
			}
		}
		if (r < 0 && !ch->msg[0])
			str_err(ch->msg, sizeof(ch->msg), "%s in %s: %s", dc->target, c->files[f->file].path,
				err[0] ? err : strerror(-r));
		free(bocc);
	}
	for (size_t i = 0; i < nfp && r == 0; i++) {
		struct file_plan *f = &fp[i];
		struct nginx_conf_edit *e = calloc(f->nocc + 1, sizeof(*e));
		char (*args)[24] = calloc(f->nocc + 1, sizeof(*args));
		const char *path = c->files[f->file].path;
		bool back = true;
		size_t ne = 0, newlen = 0;
		char *new = NULL;

		if (!e || !args) {
			free(e);
			free(args);
			r = -ENOMEM;
			break;
		}
		for (size_t j = 0; j < f->nocc && r == 0; j++) {
			int64_t now, want;

			if (!f->managed[j])
				continue;
			want = f->had[j] >= top ? v : (f->had[j] < v ? f->had[j] : v);
			back = back && want == f->had[j];
			r = int_of(k, &f->occ[j].d, &now);
			if (r < 0 || now == want)
				continue;
			snprintf(args[ne], sizeof(args[ne]), "%lld", (long long)want);
			e[ne] = (struct nginx_conf_edit){ .op = NGINX_CONF_EDIT_ARGS, .start = f->occ[j].d.start,
							  .name = dc->target, .text = args[ne] };
			ne++;
		}
		if (r == 0 && ne)
			r = nginx_conf_edit(f->cur, f->curlen, e, ne, &new, &newlen, err, sizeof(err));
		free(e);
		free(args);
		if (r < 0) {
			str_err(ch->msg, sizeof(ch->msg), "%s: %s", path, err);
			break;
		}
		r = nginx_ctl_backup_path(ch->env, BACKUP_DIR, path, bpath, sizeof(bpath));
		if (r == 0 && f->bak) {
			/* The way back: the backup's own bytes where only how the values are written differs. */
			if (ne && nginx_conf_same_but_args(new, newlen, f->bak, f->baklen, names, 1)) {
				free(new);
				new = f->bak;
				newlen = f->baklen;
				f->bak = NULL;
			}
			if (back)
				r = remember(&dc->done, &dc->ndone, bpath);
		} else if (r == 0 && ne) {
			r = nginx_ctl_own_path(ch->env, BACKUP_DIR, dir, sizeof(dir));
			if (r == 0 && mkdir(dir, 0700) < 0 && errno != EEXIST)
				r = -errno;
			if (r == 0)
				r = nginx_ctl_write_file(bpath, f->cur, f->curlen, 0600);
			if (r == 0)
				r = remember(&dc->made, &dc->nmade, bpath);
			if (r < 0)
				str_err(ch->msg, sizeof(ch->msg), "cannot back up %s: %s", path, strerror(-r));
		}
		if (r == 0 && ne) {
			r = nginx_change_add_file(ch, path, f->cur, f->curlen, new, newlen);
			f->cur = NULL;
			new = NULL;
		}
		free(new);
	}
	for (size_t i = 0; i < nfp; i++) {
		free(fp[i].cur);
		free(fp[i].bak);
		free(fp[i].occ);
		free(fp[i].had);
		free(fp[i].managed);
	}
	free(fp);
	return r;
}

/* ---- worker_connections and the workers' file limit ------------------------------------------------------ */

/*
 * Each connection, to a client or an upstream, takes a file descriptor of the worker, so worker_connections W needs a
 * file limit of 2W (ngx-autotune.policy(5)). The workers' limit is worker_rlimit_nofile as set, else the master's
 * soft RLIMIT_NOFILE, which they inherit. When a write of W finds it below 2W, the same change (one nginx -t, one
 * reload) sets worker_rlimit_nofile to 2W, held to the worker_rlimit_nofile policy's bounds when there is one and to
 * what nginx can set: its workers call setrlimit() with soft = hard = the value before they drop root, so a master
 * with CAP_SYS_RESOURCE may go up to fs.nr_open, any other only up to its hard limit (above it setrlimit fails, nginx
 * logs an alert and the workers keep the old limit). It goes where the operator set it, else into the agent's
 * main.conf. What it replaced is kept in ENV->include_dir: NOFILE_STATE ("connections W0": worker_connections then,
 * "before N inherited|set", "set N", "file PATH") and the file's bytes under NOFILE_BACKUP_DIR, written before the
 * files change. While the limit is the agent's it follows: twice each later worker_connections (never below what it
 * was), and a write of W0 or less puts it back (the file's bytes where it differs from them only in these two
 * directives) and the state goes, so the revert of the worker_connections change, and each arm of its trial, moves
 * both. A limit someone else changed since is theirs: it is left alone and the state goes. The change is complete
 * when the new workers have the limit (/proc/PID/limits).
 */
#define NOFILE_STATE "worker-nofile.state"
#define NOFILE_BACKUP_DIR "nofile-backup"
#define CAP_SYS_RESOURCE_BIT 24

struct nofile_state {
	bool have;
	int64_t connections;  /* worker_connections when the limit was first raised */
	int64_t before, set;
	bool before_set; /* BEFORE was worker_rlimit_nofile's (else the master's soft limit) */
	char file[PATH_MAX];
};

/* NOFILE_STATE into S (absent: S->have false); its bytes into *RAW (NULL when absent). 0, -EINVAL (not ours). */
static int nofile_state_load(const struct knob_env *env, struct nofile_state *s, char **raw, size_t *rawlen)
{
	char path[PATH_MAX], *save = NULL, *text;
	bool b = false, st = false, f = false, wc = false;
	int r = nginx_ctl_own_path(env, NOFILE_STATE, path, sizeof(path));

	memset(s, 0, sizeof(*s));
	*raw = NULL;
	*rawlen = 0;
	if (r < 0)
		return r;
	r = nginx_ctl_read_file(path, 65536, raw, rawlen);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	text = strdup(*raw);
	if (!text)
		return -ENOMEM;
	for (char *line = strtok_r(text, "\n", &save); line && r == 0; line = strtok_r(NULL, "\n", &save)) {
		long long v;
		char how[16];
		int used = 0;

		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (sscanf(line, "before %lld %15s%n", &v, how, &used) == 2 && !line[used] && v > 0 &&
		    (strcmp(how, "set") == 0 || strcmp(how, "inherited") == 0)) {
			s->before = v;
			s->before_set = strcmp(how, "set") == 0;
			b = true;
		} else if (sscanf(line, "set %lld%n", &v, &used) == 1 && !line[used] && v > 0) {
			s->set = v;
			st = true;
		} else if (sscanf(line, "connections %lld%n", &v, &used) == 1 && !line[used] && v > 0) {
			s->connections = v;
			wc = true;
		} else if (strncmp(line, "file /", 6) == 0 && strlen(line + 5) < sizeof(s->file)) {
			snprintf(s->file, sizeof(s->file), "%s", line + 5);
			f = true;
		} else {
			r = -EINVAL;
		}
	}
	free(text);
	if (r == 0 && !(b && st && f && wc))
		r = -EINVAL;
	s->have = r == 0;
	return r;
}

static int nofile_state_write(struct nginx_change *ch, const struct nofile_state *s)
{
	char path[PATH_MAX], text[PATH_MAX + 512];
	int n, r = nginx_ctl_own_path(ch->env, NOFILE_STATE, path, sizeof(path));

	if (r < 0)
		return r;
	n = snprintf(text, sizeof(text),
		     "# ngx-autotune nginx.worker_connections: the workers' file limit it raised with it. This file and\n"
		     "# %s/ go when that is put back. Do not edit.\nconnections %lld\nbefore %lld %s\nset %lld\n"
		     "file %s\n", NOFILE_BACKUP_DIR, (long long)s->connections, (long long)s->before,
		     s->before_set ? "set" : "inherited", (long long)s->set, s->file);
	if (n < 0 || (size_t)n >= sizeof(text))
		return -ENAMETOOLONG;
	return nginx_ctl_write_file(path, text, (size_t)n, 0600);
}

/* Whether PID may raise its hard RLIMIT_NOFILE: CAP_SYS_RESOURCE in its effective set. */
static bool can_raise_hard(const struct knob_env *env, pid_t pid)
{
	char path[PATH_MAX], *text, *line;
	unsigned long long caps = 0;
	size_t len;
	bool yes = false;

	if (str_rooted(path, sizeof(path), env->root, "/proc/%d/status", (int)pid) < 0 ||
	    nginx_ctl_read_file(path, 65536, &text, &len) < 0)
		return false;
	line = strstr(text, "\nCapEff:");
	if (line && sscanf(line + 8, " %llx", &caps) == 1)
		yes = caps >> CAP_SYS_RESOURCE_BIT & 1;
	free(text);
	return yes;
}

/* The most the workers of master PID can set: fs.nr_open when it may raise the hard limit, else HARD. */
static int64_t nofile_ceiling(const struct knob_env *env, pid_t pid, int64_t hard)
{
	char path[PATH_MAX], *text;
	size_t len;
	long long v = 0;

	if (!can_raise_hard(env, pid))
		return hard;
	if (str_rooted(path, sizeof(path), env->root, "/proc/sys/fs/nr_open") < 0 ||
	    nginx_ctl_read_file(path, 64, &text, &len) < 0)
		return hard;
	if (sscanf(text, "%lld", &v) != 1 || v < hard)
		v = hard;
	free(text);
	return v;
}

/* The new text of PATH in CH so far (planned, else as it is now, which for an operator's file must be as the dump
 * shows it: -EAGAIN otherwise), copied into *OUT; a file of ours that does not exist is empty. */
static int text_now(struct nginx_change *ch, const struct nginx_conf *c, const char *path, bool ours, char **out,
		    size_t *outlen)
{
	const struct nginx_change_file *f = nginx_change_file(ch, path);
	int i, r;

	if (f) {
		*out = malloc(f->newlen + 1);
		if (!*out)
			return -ENOMEM;
		memcpy(*out, f->new, f->newlen);
		(*out)[f->newlen] = '\0';
		*outlen = f->newlen;
		return 0;
	}
	r = nginx_ctl_read_file(path, NGINX_CTL_FILE_MAX, out, outlen);
	if (r == -ENOENT && ours) {
		*out = strdup("");
		*outlen = 0;
		return *out ? 0 : -ENOMEM;
	}
	if (r < 0)
		return r;
	i = nginx_conf_file_index(c, path);
	if (!ours && i >= 0 && (c->files[i].len != *outlen || memcmp(c->files[i].text, *out, *outlen) != 0)) {
		free(*out);
		*out = NULL;
		return -EAGAIN;
	}
	return 0;
}

/* NEW (of PATH) is the bytes of one of its backups (the directives' and the file limit's) when it differs from them
 * only in how these two directives' arguments are written: the way back, byte for byte. */
static void byte_exact(struct nginx_change *ch, const char *path, char **new, size_t *newlen)
{
	static const char *const names[] = { "worker_connections", "worker_rlimit_nofile" };
	static const char *const dirs[] = { BACKUP_DIR, NOFILE_BACKUP_DIR };
	char bpath[PATH_MAX], *bak;
	size_t baklen;

	for (size_t i = 0; i < 2; i++) {
		if (nginx_ctl_backup_path(ch->env, dirs[i], path, bpath, sizeof(bpath)) < 0 ||
		    nginx_ctl_read_file(bpath, NGINX_CTL_FILE_MAX, &bak, &baklen) < 0)
			continue;
		if (nginx_conf_same_but_args(*new, *newlen, bak, baklen, names, 2)) {
			free(*new);
			*new = bak;
			*newlen = baklen;
			return;
		}
		free(bak);
	}
}

/* worker_connections in the configuration C (nginx's default, 512, when set nowhere). */
static int64_t connections_in(const struct nginx_conf *c)
{
	struct nginx_conf_directive d;
	char err[KNOB_WHY_MAX];
	int64_t v;

	if (nginx_conf_find(c, "events", "worker_connections", &d, err, sizeof(err)) < 0 || d.nargs != 1 ||
	    str_to_i64(d.args[0], 1, INT64_MAX, &v) < 0)
		return 512;
	return v;
}

/* Plan the file limit that worker_connections (CH's value) needs, into CH; nothing when the limit suffices. 0, or
 * -errno with CH->msg. */
static int plan_nofile(struct nginx_change *ch, const struct nginx_conf *c)
{
	struct directive_change *dc = ch->priv;
	struct knob shadow = { .env = ch->env };
	struct knob_policy pol = { .type = KNOB_T_INT };
	struct nofile_state st, next;
	struct nginx_conf_directive d;
	struct where w;
	char err[KNOB_WHY_MAX], ours[PATH_MAX], path[PATH_MAX], args[32], *text = NULL, *new = NULL, *raw = NULL;
	size_t textlen = 0, newlen = 0, rawlen = 0;
	int64_t wc, need, live, soft, hard, ceiling, target;
	bool set, mine, restore = false, located;
	int r;

	if (str_to_i64(dc->args, 1, INT64_MAX / 4, &wc) < 0)
		return 0;
	need = 2 * wc;
	r = nofile_state_load(ch->env, &st, &raw, &rawlen);
	if (r < 0) {
		free(raw);
		str_err(ch->msg, sizeof(ch->msg), "%s is damaged; put worker_rlimit_nofile back by hand from %s/",
			NOFILE_STATE, NOFILE_BACKUP_DIR);
		return r;
	}
	snprintf(pol.target, sizeof(pol.target), "worker_rlimit_nofile");
	snprintf(pol.context, sizeof(pol.context), "main");
	shadow.pol = &pol;
	r = include_path(ch->env, "main", ours, sizeof(ours));
	if (r < 0)
		goto out;
	located = locate(&shadow, c, &w, err, sizeof(err)) == 0;
	where_free(&w);
	snprintf(path, sizeof(path), "%s", located && w.operator ? w.path : ours);
	if (located) {
		r = text_now(ch, c, path, !w.operator, &text, &textlen);
		if (r == -EAGAIN)
			str_err(ch->msg, sizeof(ch->msg), "%s changed while it was being read; try again", path);
		else if (r < 0)
			str_err(ch->msg, sizeof(ch->msg), "cannot read %s: %s", path, strerror(-r));
		if (r < 0)
			goto out;
		r = nginx_conf_file_find(text, textlen, "worker_rlimit_nofile", &d, err, sizeof(err));
		if (r < 0 && r != -ENOENT) {
			str_err(ch->msg, sizeof(ch->msg), "%s: %s", path, err);
			goto out;
		}
		set = r == 0;
	} else {
		set = false;
	}
	r = proc_nofile(ch->env, ch->pid, &soft, &hard);
	if (set && str_to_i64(d.args[0], 1, INT64_MAX, &live) < 0) {
		str_err(ch->msg, sizeof(ch->msg), "worker_rlimit_nofile %.32s in %s is not a number", d.args[0], path);
		r = -EINVAL;
		goto out;
	}
	if (r < 0 && !set) {
		/* Not known: nothing is moved, and the write says so. */
		str_err(ch->note, sizeof(ch->note), "the workers' file limit is unknown (no /proc/%d/limits): "
			"worker_rlimit_nofile left as it is", (int)ch->pid);
		r = 0;
		goto out;
	}
	if (!set)
		live = soft;
	ceiling = r == 0 ? nofile_ceiling(ch->env, ch->pid, hard) : INT64_MAX;
	r = 0;
	mine = st.have && set && live == st.set && strcmp(st.file, path) == 0;
	if (st.have && (!mine || wc <= st.connections)) {
		/* Put back now, or changed by someone else since (theirs now): the state and its backup go. */
		dc->nofile_clear = true;
		nginx_ctl_backup_path(ch->env, NOFILE_BACKUP_DIR, st.file, dc->nofile_drop, sizeof(dc->nofile_drop));
	}
	if (mine && wc <= st.connections) {
		restore = true;
		target = st.before;
	} else {
		target = need;
		if (dc->nofile_max > 0 && target > dc->nofile_max)
			target = dc->nofile_max;
		if (dc->nofile_min > 0 && target < dc->nofile_min)
			target = dc->nofile_min;
		if (target > ceiling)
			target = ceiling;
		if (mine && target < st.before)
			target = st.before;
		if ((!mine && live >= need) || target == live)
			goto out; /* enough already, or as far as it goes */
		if (!mine && target < live)
			goto out;
	}
	if (!located) {
		/* worker_connections is still what was asked for; the write says what it could not do beside it. */
		str_err(ch->note, sizeof(ch->note), "worker_rlimit_nofile not raised with it: worker_connections %lld "
			"needs a file limit of %lld, the workers' is %lld, and %s", (long long)wc, (long long)need,
			(long long)live, err);
		goto out;
	}
	/* The edit. */
	snprintf(args, sizeof(args), "%lld", (long long)target);
	if (restore && !st.before_set)
		r = nginx_conf_set_directive(text, textlen, "worker_rlimit_nofile", NULL, &new, &newlen, err, sizeof(err));
	else if (set)
		r = nginx_conf_set_args_at(text, textlen, d.start, "worker_rlimit_nofile", args, &new, &newlen, err,
					   sizeof(err));
	else
		r = nginx_conf_set_directive(text, textlen, "worker_rlimit_nofile", args, &new, &newlen, err, sizeof(err));
	if (r < 0) {
		str_err(ch->msg, sizeof(ch->msg), "%s: %s", path, err);
		goto out;
	}
	if (restore) {
		byte_exact(ch, path, &new, &newlen);
	} else {
		/* What it replaces, kept before anything changes: the state, and the file's bytes on its first edit. */
		next = mine ? st : (struct nofile_state){ .have = true, .connections = connections_in(c),
							  .before = live, .before_set = set };
		next.set = target;
		snprintf(next.file, sizeof(next.file), "%s", path);
		if (!mine) {
			const struct nginx_change_file *f = nginx_change_file(ch, path);
			char dir[PATH_MAX], *cur = NULL;
			size_t curlen = 0;

			r = nginx_ctl_backup_path(ch->env, NOFILE_BACKUP_DIR, path, dc->nofile_backup,
						  sizeof(dc->nofile_backup));
			if (r == 0)
				r = nginx_ctl_own_path(ch->env, NOFILE_BACKUP_DIR, dir, sizeof(dir));
			if (r == 0 && mkdir(dir, 0700) < 0 && errno != EEXIST)
				r = -errno;
			if (r == 0 && !f)
				r = nginx_ctl_read_file(path, NGINX_CTL_FILE_MAX, &cur, &curlen);
			if (r == 0)
				r = nginx_ctl_write_file(dc->nofile_backup, f ? f->old : cur, f ? f->oldlen : curlen, 0600);
			free(cur);
			if (r < 0) {
				dc->nofile_backup[0] = '\0';
				str_err(ch->msg, sizeof(ch->msg), "cannot back up %s: %s", path, strerror(-r));
				goto out;
			}
		}
		dc->nofile_state_old = raw;
		dc->nofile_state_oldlen = rawlen;
		raw = NULL;
		if (dc->nofile_clear && strcmp(dc->nofile_drop, dc->nofile_backup) == 0)
			dc->nofile_drop[0] = '\0'; /* the stale state's backup was just written anew: it stays */
		dc->nofile_clear = false;
		r = nofile_state_write(ch, &next);
		if (r < 0) {
			str_err(ch->msg, sizeof(ch->msg), "cannot write %s: %s", NOFILE_STATE, strerror(-r));
			goto out;
		}
		dc->nofile_state_written = true;
		byte_exact(ch, path, &new, &newlen);
	}
	{
		struct nginx_change_file *f = nginx_change_file(ch, path);

		if (f) {
			free(f->new);
			f->new = new;
			f->newlen = newlen;
		} else {
			char *cur = NULL;
			size_t curlen = 0;

			r = nginx_ctl_read_file(path, NGINX_CTL_FILE_MAX, &cur, &curlen);
			if (r == -ENOENT)
				r = 0;
			if (r == 0)
				r = nginx_change_add_file(ch, path, cur, curlen, new, newlen);
			else
				free(new);
		}
		new = NULL;
	}
	dc->nofile_expect = target;
	if (restore)
		str_err(ch->note, sizeof(ch->note), "worker_rlimit_nofile %lld -> %lld (%s) in %s with it", (long long)live,
			(long long)target, st.before_set ? "as it was set" : "the master's again: the line went", path);
	else
		str_err(ch->note, sizeof(ch->note), "worker_rlimit_nofile %lld (%s) -> %lld in %s with it (twice %lld%s)",
			(long long)live, mine ? "the agent's" : set ? "set" : "the master's", (long long)target, path, (long long)wc,
			target < need ? ", as far as nginx can set it" : "");
out:
	free(text);
	free(new);
	free(raw);
	return r;
}

/* The new workers have the file limit the change set (their soft RLIMIT_NOFILE). */
static bool nofile_settled(struct nginx_change *ch, char *why, size_t whylen)
{
	const struct directive_change *dc = ch->priv;
	pid_t workers[256];
	size_t n = 0;
	int64_t soft, hard;

	if (dc->nofile_expect <= 0)
		return true;
	if (nginx_ctl_workers(ch->env, ch->pid, workers, 256, &n) < 0 || n == 0) {
		str_err(why, whylen, "no worker of nginx %d to check the file limit of", (int)ch->pid);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		if (proc_nofile(ch->env, workers[i], &soft, &hard) < 0) {
			str_err(why, whylen, "cannot read the file limit of worker %d", (int)workers[i]);
			return false;
		}
		if (soft != dc->nofile_expect) {
			str_err(why, whylen, "nginx reloaded but worker %d has a file limit of %lld, not %lld "
				"(setrlimit failed: see nginx's error log)", (int)workers[i], (long long)soft,
				(long long)dc->nofile_expect);
			return false;
		}
	}
	return true;
}

/* The probe's word on the file limit, when the agent set it with worker_connections: what it set, and what was. */
static void nofile_note(const struct knob *k, char *why, size_t whylen)
{
	struct nofile_state st;
	char *raw = NULL;
	size_t rawlen, len = strnlen(why, whylen);

	if (nofile_state_load(k->env, &st, &raw, &rawlen) == 0 && st.have)
		snprintf(why + len, whylen - len, "%sworker_rlimit_nofile %lld set with it in %s (before: %lld, %s)",
			 len ? "; " : "", (long long)st.set, st.file, (long long)st.before,
			 st.before_set ? "set" : "the master's");
	free(raw);
}

static void directive_dumped(struct nginx_change *ch, const struct nginx_conf *c)
{
	struct knob shadow;
	struct knob_policy pol;
	char err[KNOB_WHY_MAX] = "";
	struct where w;
	int r;

	shadow_knob(ch, &shadow, &pol);
	r = locate(&shadow, c, &w, err, sizeof(err));
	if (r < 0) {
		nginx_change_finish(ch, r, err);
		return;
	}
	r = w.all ? plan_every_edit(ch, &shadow, c, &w)
		  : w.operator ? plan_operator_edit(ch, &shadow, c, &w) : plan_own_edit(ch, &shadow);
	where_free(&w);
	if (r == 0 && ((struct directive_change *)ch->priv)->nofile)
		r = plan_nofile(ch, c);
	if (r < 0 && ((struct directive_change *)ch->priv)->nofile_state_written) {
		nginx_change_fail(ch, r, "%s", ch->msg); /* puts the state back too */
		return;
	}
	if (r < 0) {
		nginx_change_finish(ch, r, ch->msg);
		return;
	}
	if (ch->nfiles == 0 && !((struct directive_change *)ch->priv)->nofile_state_written &&
	    !((struct directive_change *)ch->priv)->nofile_clear) {
		nginx_change_finish(ch, 0, NULL); /* the files already read so: nothing to reload */
		return;
	}
	r = nginx_change_write(ch);
	if (r < 0) {
		nginx_change_fail(ch, r, "%s", ch->msg);
		return;
	}
	nginx_change_test(ch);
}

/* The backup of the change's file has done its work when the file is back to it (NEW: as written, else as put
 * back): it goes, and its directory with the last of them. */
static void drop_backup(struct nginx_change *ch, bool new)
{
	const struct directive_change *dc = ch->priv;
	char *bak, dir[PATH_MAX];
	size_t baklen;

	if (!dc->backup[0] || nginx_ctl_read_file(dc->backup, NGINX_CTL_FILE_MAX, &bak, &baklen) < 0)
		return;
	for (size_t i = 0; i < ch->nfiles; i++) {
		const struct nginx_change_file *f = &ch->files[i];
		const char *text = new ? f->new : f->old;
		size_t len = new ? f->newlen : f->oldlen;

		if (text && len == baklen && memcmp(text, bak, baklen) == 0) {
			unlink(dc->backup);
			if (nginx_ctl_own_path(ch->env, BACKUP_DIR, dir, sizeof(dir)) == 0)
				rmdir(dir);
		}
	}
	free(bak);
}

/* The backups at PATHS go, and their directory with the last of them. */
static void drop_paths(struct nginx_change *ch, char **paths, size_t n)
{
	char dir[PATH_MAX];

	for (size_t i = 0; i < n; i++)
		unlink(paths[i]);
	if (n && nginx_ctl_own_path(ch->env, BACKUP_DIR, dir, sizeof(dir)) == 0)
		rmdir(dir); /* fails while others remain, as it should */
}

/* The file limit's own: NOFILE_STATE and, when given, the backup BAK, and their directory with the last backup. */
static void nofile_drop(struct nginx_change *ch, bool state, const char *bak)
{
	char path[PATH_MAX];

	if (state && nginx_ctl_own_path(ch->env, NOFILE_STATE, path, sizeof(path)) == 0)
		unlink(path);
	if (bak && bak[0]) {
		unlink(bak);
		if (nginx_ctl_own_path(ch->env, NOFILE_BACKUP_DIR, path, sizeof(path)) == 0)
			rmdir(path);
	}
}

/* nginx runs the new files: a backup the file is back to has done its work. */
static void directive_committed(struct nginx_change *ch)
{
	struct directive_change *dc = ch->priv;

	drop_backup(ch, true);
	drop_paths(ch, dc->done, dc->ndone);
	if (dc->nofile_clear)
		nofile_drop(ch, true, dc->nofile_drop);
}

/* The change failed and its files were put back: a backup made for it (the file as it was) goes too, and the file
 * limit's state is as it was. */
static void directive_undo(struct nginx_change *ch)
{
	struct directive_change *dc = ch->priv;
	char path[PATH_MAX];

	drop_backup(ch, false);
	drop_paths(ch, dc->made, dc->nmade);
	if (dc->nofile_state_written && nginx_ctl_own_path(ch->env, NOFILE_STATE, path, sizeof(path)) == 0) {
		if (dc->nofile_state_old)
			nginx_ctl_write_file(path, dc->nofile_state_old, dc->nofile_state_oldlen, 0600);
		else
			unlink(path);
		dc->nofile_state_written = false;
	}
	nofile_drop(ch, false, dc->nofile_backup);
}

static const struct nginx_change_ops directive_change_ops = {
	.dumped = directive_dumped,
	.settled = nofile_settled,
	.committed = directive_committed,
	.undo = directive_undo,
	.free = directive_change_free,
};

static int directive_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done,
			   void *ctx)
{
	struct directive_priv *p;
	struct directive_change *dc;
	int r;

	r = directive_check(k->pol, why, whylen);
	if (r < 0)
		return r;
	dc = calloc(1, sizeof(*dc));
	if (!dc)
		return -ENOMEM;
	r = value_to_args(k->pol, value, dc->args, sizeof(dc->args), &dc->remove, why, whylen);
	if (r < 0) {
		free(dc);
		return r;
	}
	snprintf(dc->target, sizeof(dc->target), "%s", k->pol->target);
	snprintf(dc->context, sizeof(dc->context), "%s", k->pol->context);
	dc->type = k->pol->type;
	if (strcmp(dc->target, "worker_connections") == 0 && dc->type == KNOB_T_INT) {
		dc->nofile = true;
		/* The file limit is held to its own knob's policy, as that knob's writes are. */
		for (size_t i = 0; k->env->policies && i < k->env->policies->n; i++) {
			const struct knob_policy *q = &k->env->policies->knobs[i];

			if (q->kind == POLICY_NGINX_DIRECTIVE && strcmp(q->target, "worker_rlimit_nofile") == 0) {
				dc->nofile_min = q->min[0];
				dc->nofile_max = q->max[0];
			}
		}
	}
	p = priv_of(k);
	if (!p) {
		free(dc);
		return -ENOMEM;
	}
	return nginx_change_start(k, &directive_change_ops, dc, &p->change, why, whylen, done, ctx);
}

static void directive_release(struct knob *k)
{
	struct directive_priv *p = k->priv;

	if (!p)
		return;
	if (p->change)
		nginx_change_orphan(p->change);
	nginx_ctl_drop(k->env->nginx);
	free(p);
	k->priv = NULL;
}

const struct knob_ops knob_nginx_ops = {
	.kind = "nginx_directive",
	.probe = directive_probe,
	.read = directive_read,
	.write = directive_write,
	.release = directive_release,
};
