/*
 * nginx_ctl: the one module that runs nginx for the agent. It runs `nginx -t` and `nginx -T` (ENV's binary,
 * configuration and prefix, killed past ENV->nginx_timeout_ms), caches the parsed dump for the nginx knob drivers,
 * and carries a change of nginx's files to its end: the candidate files written atomically with the previous
 * contents kept in memory, `nginx -t`, SIGHUP to the master, then a wait until a new generation of workers runs
 * (new worker pids; every old worker gone or "shutting down"); a failure puts the previous files back. One change
 * runs at a time per nginx_ctl (-EBUSY otherwise): a second reload would blur the generation check.
 *
 * Every nginx -T keeps at most ENV->nginx_dump_max bytes (more fails, counted), every nginx child runs with
 * ENV->nginx_memory_max as its data limit, and those on the agent's loop run one at a time: the agent's memory and
 * its children's stay within a bound whatever nginx's configuration ([nginx] dump_max, memory_max).
 *
 * Its state (the dump, the change in flight) lives in struct nginx_ctl, owned by whoever owns the knob
 * environment (ENV->nginx). It reads no clock: the dump's age is measured with ENV->now_ms, the time its caller
 * hands in, and a reload's deadline is a timer on ENV->loop. It decides nothing about values and never logs: the
 * drivers (knob_nginx.c, knob_listen.c) plan what a change writes, the engine decides and journals.
 */
#ifndef NGXAT_NGINX_CTL_H
#define NGXAT_NGINX_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "act/knob.h"
#include "act/nginx_conf.h"

#define NGINX_CTL_FILE_MAX (16u << 20) /* one configuration file */

struct nginx_ctl;

/* A new controller with nothing cached. 0 or -ENOMEM. */
int nginx_ctl_new(struct nginx_ctl **out);
/* Free CTL (NULL is fine); a dump refresh or a change still running frees it when it ends. */
void nginx_ctl_free(struct nginx_ctl *ctl);

/* Completion of nginx_ctl_dump: RC 0 and nginx's standard output (OUT, LEN bytes, malloc'd: DONE frees it), or
 * -errno with MSG (nginx's own complaint, or a timeout) and OUT NULL. */
typedef void (*nginx_ctl_dump_fn)(int rc, const char *msg, char *out, size_t len, void *ctx);
/* Run `nginx -q -T` as a child on ENV->loop, in its turn after the other nginx children of ENV->nginx when there is
 * one (one runs at a time), bounded by ENV's nginx_dump_max and nginx_memory_max. DONE runs exactly once, later,
 * from the loop. 0, or -ENOMEM (DONE will not run). Needs no nginx_ctl: the doctor calls it too. */
int nginx_ctl_dump(const struct knob_env *env, nginx_ctl_dump_fn done, void *ctx);

/* K's driver state of SIZE bytes (k->priv), made zeroed on first use, when K's driver starts using the dump of
 * k->env->nginx (held: nginx_ctl_drop when the knob is released). NULL without an nginx_ctl or on ENOMEM. */
void *nginx_ctl_knob_priv(struct knob *k, size_t size);
/* A knob driver starts (hold) and stops (drop) using CTL's dump; the last drop forgets it. */
void nginx_ctl_hold(struct nginx_ctl *ctl);
void nginx_ctl_drop(struct nginx_ctl *ctl);
/* The dump, taken now (blocking, on a private loop) unless the cached one is fresh (the engine probes every knob
 * in one pass: they share one run, and one failure). NULL with -errno in *RC and WHY: -EFBIG above ENV's
 * nginx_dump_max, -ENOMEM when nginx ran out of nginx_memory_max. */
const struct nginx_conf *nginx_ctl_conf(struct nginx_ctl *ctl, const struct knob_env *env, int *rc, char *why,
					size_t whylen);
/* Take the cached dump as stale: the next nginx_ctl_conf runs nginx -T again, whatever its age (the agent's
 * reload: nginx's files may have changed a moment ago, by ngx-autotune --setup or an operator), and lift a halt
 * (nginx_ctl_halted): the operator has seen to nginx. */
void nginx_ctl_forget(struct nginx_ctl *ctl);
/* Why CTL starts no change (a reload of MASTER brought no new generation of workers: what happened, with the last
 * lines of nginx's error log), or NULL; NULL too when MASTER is another pid (nginx was restarted since). Cleared by
 * nginx_ctl_forget. */
const char *nginx_ctl_halted(const struct nginx_ctl *ctl, pid_t master);
/* The cached dump of any age (NULL if none); never blocks, and refreshes it in the background when it is old. */
const struct nginx_conf *nginx_ctl_conf_peek(struct nginx_ctl *ctl, const struct knob_env *env);
/* Run `nginx FLAG` (-t, -T or -V) as every run here is made (ENV's binary, -p and -c; in nginx's network namespace
 * when ENV->nginx_pid is a real master), to its end on a private loop: blocking, bounded by ENV->nginx_timeout_ms.
 * For the command line (ngx-autotune --setup), never on the agent's loop. 0 with what nginx printed (its standard
 * output; for -V its standard error, where nginx prints it) in a malloc'd *OUT of *LEN bytes and a NUL, or -errno
 * with nginx's complaint (or the timeout) in MSG and *OUT NULL. */
int nginx_ctl_run(const struct knob_env *env, const char *flag, char **out, size_t *len, char *msg, size_t msglen);

/*
 * The cached dump's files as they are on disk now, parsed into OUT (nginx_conf_free it): what a driver's read must
 * see right after its own write, before nginx -T runs again (which this starts in the background when the dump is
 * old). A file that cannot be read is taken as the dump has it. 0, -EAGAIN (no dump yet), -errno with WHY.
 */
int nginx_ctl_conf_now(struct nginx_ctl *ctl, const struct knob_env *env, struct nginx_conf *out, char *why,
		       size_t whylen);
/* The worker processes of MASTER (its children titled "nginx: worker process"; not those shutting down) into OUT.
 * 0, -ENOSPC (more than MAX), -errno. */
int nginx_ctl_workers(const struct knob_env *env, pid_t master, pid_t *out, size_t max, size_t *n);

/* ---- files ---------------------------------------------------------------------------------------------------- */

/* Whether ENV's root is the host's "/" (then nginx's namespaces are real, not a fake tree). */
bool nginx_ctl_real_root(const struct knob_env *env);
/* ENV->include_dir (the agent's own nginx directory) followed by "/NAME" into OUT. 0 or -ENAMETOOLONG. */
int nginx_ctl_own_path(const struct knob_env *env, const char *name, char *out, size_t n);
/* The whole file at PATH (at most MAX bytes) into a malloc'd, NUL-terminated *OUT. 0 or -errno (-EFBIG). */
int nginx_ctl_read_file(const char *path, size_t max, char **out, size_t *len);
/* Where the driver whose backups live in DIR (under the include directory) keeps the one of PATH: DIR/ENCODED, with
 * '%' as %25 and '/' as %2F (in our directory, not beside PATH: a glob include of sites-enabled would load a copy
 * beside the file). 0 or -ENAMETOOLONG. */
int nginx_ctl_backup_path(const struct knob_env *env, const char *dir, const char *path, char *out, size_t n);
/* Write LEN bytes of DATA to FD, retrying short writes. 0 or -errno. */
int nginx_ctl_write_fd(int fd, const char *data, size_t len);
/*
 * Replace the file at PATH (not a symlink: callers resolve) with DATA: a temporary file beside it (a dot name, so
 * no include glob loads it), synced, given the owner and mode of the file it replaces (MODE for a new one),
 * renamed over it, and the directory synced. Its directory must pass trust_walk (root or the agent's user own every
 * component, none writable by others) and is used through the descriptor that walk opened; a file it replaces must
 * be a regular file owned by root or the agent's user, writable by no one else. 0 or -errno (-EPERM, -ELOOP: not
 * trusted); PATH is unchanged on failure.
 */
int nginx_ctl_write_file(const char *path, const char *data, size_t len, mode_t mode);

/* ---- nginx's listening sockets ------------------------------------------------------------------------------- */

/* An address:port nginx listens on over TCP, to find its sockets among those inet_diag shows. */
struct nginx_endpoint {
	int family;              /* AF_INET or AF_INET6; AF_UNSPEC for a host name: any address of the port */
	unsigned char addr[16];  /* network byte order; the wildcard is all zeros */
	uint16_t port;
};

/* The distinct endpoints of the listens of L (NL of them) that KEEP accepts, into a malloc'd *OUT (*N of them).
 * 0 or -ENOMEM. */
int nginx_endpoints(const struct nginx_listen *l, size_t nl, bool (*keep)(const struct nginx_listen *),
		    struct nginx_endpoint **out, size_t *n);
/* Whether a socket bound to ADDR (numeric, as inet_ntop writes it) of FAMILY and PORT is one of E's N endpoints:
 * another daemon's socket on nginx's port at another address is not. */
bool nginx_endpoint_has(const struct nginx_endpoint *e, size_t n, int family, const char *addr, uint16_t port);

/* ---- a change of nginx's files -------------------------------------------------------------------------------- */

/* One file a change writes, with what to put back. */

struct nginx_change_file {
	char *path;      /* as nginx names it */
	char *real;      /* where it is written (symlinks resolved) */
	char *old;       /* its content before (NULL: it did not exist) */
	size_t oldlen;
	char *new;
	size_t newlen;
	char *nudge;     /* the text of the first of two reloads (NULL: this file keeps OLD in it then) */
	size_t nudgelen;
	bool written;
};

struct nginx_change;

/* What the driver of a change does at each step. */
struct nginx_change_ops {
	/* nginx -T came back with C: plan the files (nginx_change_add_file), write them and call nginx_change_test,
	 * or end the change (nginx_change_finish before anything is written, nginx_change_fail after). */
	void (*dumped)(struct nginx_change *ch, const struct nginx_conf *c);
	/* NULL, or whether the new generation shows the change (else WHY says what it shows instead). */
	bool (*settled)(struct nginx_change *ch, char *why, size_t whylen);
	/* NULL, or what to do once the change has settled, before it completes with 0. */
	void (*committed)(struct nginx_change *ch);
	/* NULL, or put back what the driver changed beside the files (after the files are put back). */
	void (*undo)(struct nginx_change *ch);
	/* Free PRIV. */
	void (*free)(void *priv);
};

/* A change in flight. The fields are the driver's to read; FILES, NUDGING, MSG and NOTE are also its to set. */
struct nginx_change {
	const struct nginx_change_ops *ops;
	void *priv;               /* the driver's */
	struct nginx_ctl *ctl;
	struct knob_env *env;
	struct knob *k;           /* NULL once the knob is released: the change runs to its end, unreported */
	pid_t pid;                /* the master */
	struct nginx_change_file *files;
	size_t nfiles;
	bool nudging;             /* the next reload is the first of two: files get their NUDGE text, then NEW */
	char msg[KNOB_WHY_MAX];   /* why the last step failed */
	char note[KNOB_WHY_MAX];  /* the driver's: what to say when the change completes (another parameter it moved) */
	/* private */
	struct nginx_change **slot;
	knob_done_fn done;
	void *ctx;
	pid_t *old_children;
	size_t nold;
	uv_timer_t poll, deadline;
	int handles;
	bool reloaded;
	bool draining, drained;   /* waiting (once) for an earlier generation to exit before the reload */
	bool requit;              /* old workers that missed the master's quit got SIGQUIT from us (once) */
	size_t stragglers;        /* how many */
	unsigned straggle_polls;  /* polls with a new generation up beside old workers still working */
};

/*
 * Start a change of K's configuration, driven by OPS with PRIV (freed by OPS->free whatever happens): checks that
 * need no child (an event loop, no change in flight, ENV->nginx_pid a running master), then `nginx -T`. On
 * -EINPROGRESS *SLOT holds the change until it ends (it is cleared then) and DONE will run once, later; any other
 * return is -errno with WHY, and DONE will not run.
 */
int nginx_change_start(struct knob *k, const struct nginx_change_ops *ops, void *priv, struct nginx_change **slot,
		       char *why, size_t whylen, knob_done_fn done, void *ctx);
/* The knob of CH is being released: CH runs to its end without reporting. */
void nginx_change_orphan(struct nginx_change *ch);
/* Add PATH with its OLD and NEW contents (both owned by CH from now on, also on failure). 0 or -ENOMEM. */
int nginx_change_add_file(struct nginx_change *ch, const char *path, char *old, size_t oldlen, char *new,
			  size_t newlen);
/* The planned file named PATH, or NULL. */
struct nginx_change_file *nginx_change_file(const struct nginx_change *ch, const char *path);
/* Write every file's new content (or, while NUDGING, the nudge text of those that have one), stopping at the
 * first failure with CH->msg. 0 or -errno. */
int nginx_change_write(struct nginx_change *ch);
/* The files are written: `nginx -t`, then reload and wait. */
void nginx_change_test(struct nginx_change *ch);
/* End CH with RC and MSG before anything was written. */
void nginx_change_finish(struct nginx_change *ch, int rc, const char *msg);
/* Undo (files, then OPS->undo), reload when nginx may have taken the new files, and end CH with RC. */
void nginx_change_fail(struct nginx_change *ch, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The -c and -p nginx's master PID runs with, from its command line under ROOT ("/" or a fake tree's): 0 with CONF
 * and PREFIX ("" for none), or -errno (no such process, not a master's title). */
int nginx_ctl_master_args(const char *root, pid_t pid, char *conf, size_t conflen, char *prefix, size_t prefixlen);

#endif
