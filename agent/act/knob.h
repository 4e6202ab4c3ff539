/*
 * knob: the drivers that read and write guarded parameters on the host.
 *
 * A knob is one parameter (a sysctl, a NIC's IRQ affinity, its RPS masks, the scheduler slice, an nginx
 * directive) with the driver that reads and writes it. Values cross this interface as canonical text (see
 * core/knobval.h). Drivers do no policy: they are handed values that the engine has already validated against
 * the policy, and they write only what they are told, to the path they own, under the configured root. They
 * re-read after writing (verify), classify errors by errno, and never log: the engine decides and journals. In a
 * dry run (env->dry_run) every knob's ops are the dry-run backend (knob_dry.c) over its real driver: it reads
 * like the real one and records writes in memory only.
 */
#ifndef NGXAT_KNOB_H
#define NGXAT_KNOB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#define KNOB_NAME_MAX 64
#define KNOB_VALUE_MAX 1024 /* a CPUMAP of 64 IRQs with CPU lists fits */
#define KNOB_WHY_MAX 256

struct knob;
struct knob_policy; /* core/policy.h */
struct policy_set;  /* core/policy.h */
struct nginx_ctl;   /* act/nginx_ctl.h */

/* What every driver may need from the host; owned by the engine, shared by all knobs. */
struct knob_env {
	const char *root;        /* prefix of /proc and /sys paths ("/" in production) */
	uv_loop_t *loop;         /* for asynchronous drivers (nginx: nginx -t, reload) */
	bool dry_run;            /* knobs are instantiated behind the dry-run backend (knob_dry_wrap) */
	pid_t nginx_pid;         /* the master, 0 if unknown (updated by the engine each tick) */
	const char *nginx_bin;   /* "nginx" or a path */
	const char *nginx_conf;  /* the main configuration file nginx runs with ("" = nginx's default) */
	const char *nginx_prefix; /* nginx's -p, where its relative paths resolve ("" or NULL = its default) */
	const char *include_dir; /* where the agent's nginx include files live (/etc/nginx/ngx-autotune) */
	int64_t nginx_timeout_ms; /* bound on nginx -t and on waiting for a new worker generation */
	size_t nginx_dump_max;   /* bytes of one nginx -T the agent keeps and parses (0: NGINX_CTL_DUMP_MAX_DEFAULT) */
	size_t nginx_memory_max; /* data limit of an nginx -t or -T child (0: NGINX_CTL_MEMORY_MAX_DEFAULT) */
	struct nginx_ctl *nginx; /* runs nginx and caches its dump for the nginx drivers (NULL: they are unsupported) */
	int64_t now_ms;          /* wall ms as the engine last saw it (set each tick): drivers read no clock */
	/* The policies in force (set by the engine; NULL: none known). A driver that moves another knob's parameter
	 * with its own (worker_connections raises worker_rlimit_nofile) holds it to that knob's bounds. */
	const struct policy_set *policies;
	/* Where writes go when not a dry run: WRAP puts each knob made (name, pol, ops, env set; priv NULL) behind a
	 * backend of its own (the privileged writer's, priv/knob_remote.h) with WRAP_CTX; NULL: the real drivers. */
	int (*wrap)(struct knob *k, void *ctx);
	void *wrap_ctx;
	/* nginx -T made elsewhere (the writer's, priv/wdump.h) for nginx_ctl_dump and the cached dump's refresh in the
	 * background: DUMP(DUMP_CTX, DONE, CTX) as nginx_ctl_dump (DONE a nginx_ctl_dump_fn); NULL: run here. */
	int (*dump)(void *dump_ctx, void (*done)(int rc, const char *msg, char *out, size_t len, void *ctx), void *ctx);
	void *dump_ctx;
	/* The interfaces of nginx's network namespace a per-interface policy's glob matches (RPS's knobs), found
	 * elsewhere (the writer's, which may enter it: priv/nssock.h): as knob_ns_nics (names of at most 16 bytes);
	 * NULL: found here. */
	int (*ns_nics)(void *ctx, const char *glob, char (*names)[16], size_t max, size_t *n);
	void *ns_nics_ctx;
	/* A net.* sysctl as nginx's namespace has it, read elsewhere (the writer's: the doctor's facts): its integers,
	 * blank-separated, into OUT; 0 or -errno. NULL: read here, by the sysctl driver. */
	int (*sysctl)(void *ctx, const char *name, char *out, size_t outlen);
	void *sysctl_ctx;
	/* nginx's access or error log at PATH opened read-only elsewhere (the writer's, for an engine that may not read
	 * them: priv/nssock.h): a descriptor (O_CLOEXEC, non-blocking), or -errno. NULL: open(2) here. */
	int (*open_log)(void *ctx, const char *path);
	void *open_log_ctx;
};

/* Completion of an asynchronous write: RESULT is 0 or -errno, MSG says why (e.g. the text of a failing nginx -t). */
typedef void (*knob_done_fn)(struct knob *k, int result, const char *msg, void *ctx);

struct knob_ops {
	const char *kind; /* "sysctl", "irq_affinity", "rps", "rps_flows", "sched_slice", "nginx_directive", ... */
	/* Whether the knob can be used here: 0, or -ENOTSUP / -ENOENT with the reason in WHY ("debugfs not mounted",
	 * "irqbalance is running (pid 812)" for IRQ knobs, which are then reported as conflicting, not fought). */
	int (*probe)(struct knob *k, char *why, size_t whylen);
	/* The live value, canonical, into OUT. 0 or -errno. */
	int (*read)(struct knob *k, char *out, size_t outlen);
	/* Write VALUE. Synchronous drivers write, re-read, compare, and return 0, -EIO (read back differs, WHY says
	 * what was read), or the write's -errno. Asynchronous drivers return -EINPROGRESS and call DONE exactly once
	 * later, from the loop thread. */
	int (*write)(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx);
	/* Release PRIV. */
	void (*release)(struct knob *k);
	/* Put the knob back to the value it had before the agent's first write, ORIGINAL as the caller knows it: a
	 * backend whose writer keeps originals of its own (knob_remote: RESTORE) has this, as write; NULL elsewhere
	 * (knob_restore writes ORIGINAL). */
	int (*restore)(struct knob *k, const char *original, char *why, size_t whylen, knob_done_fn done, void *ctx);
};

struct knob {
	char name[KNOB_NAME_MAX];      /* unique: the policy's knob name, plus ".DEV" for per-interface knobs */
	const struct knob_policy *pol; /* its policy */
	const struct knob_ops *ops;
	struct knob_env *env;
	void *priv;                    /* the driver's */
};

/* The drivers. */
extern const struct knob_ops knob_sysctl_ops;
extern const struct knob_ops knob_irq_ops;
extern const struct knob_ops knob_rps_ops;
extern const struct knob_ops knob_rps_flows_ops;
extern const struct knob_ops knob_sched_ops;
extern const struct knob_ops knob_nginx_ops;
extern const struct knob_ops knob_listen_ops;
extern const struct knob_ops knob_listen_param_ops;
extern const struct knob_ops knob_upstream_ops;

/* The driver for a policy kind ("sysctl", ...), or NULL. */
const struct knob_ops *knob_ops_for(const char *kind);

/*
 * Expand one policy into knobs: one for most kinds; one per matching interface for irq_affinity and rps (target
 * is a glob over /sys/class/net, NICs with queues only). Fills at most MAX into OUT (name, pol, ops, env set;
 * priv NULL, or in a dry run the dry-run backend's: each knob filled in, also on -ENOSPC, is released with
 * ops->release). 0 or -errno.
 */
int knob_instantiate(const struct knob_policy *pol, struct knob_env *env, struct knob *out, size_t max, size_t *n);

/*
 * A decorator over one knob's real driver (the dry run's backend, the writer's remote one): the decorator's own
 * struct starts with this and is calloc'ed. knob_decorate puts K (ops set, priv the driver's) behind D: K's probes go
 * to the real driver, its reads and writes to READ and WRITE (knob_decor_of gives D back, D->real the real knob),
 * and its release releases the real driver, gives K back its driver's ops and frees D. 0 or -EINVAL.
 */
struct knob_decor {
	struct knob real;    /* the real driver's knob (same name, policy and environment; its ops and priv) */
	struct knob_ops ops; /* the decorator's, with the real driver's kind (reports name the kind) */
};

int knob_decorate(struct knob *k, struct knob_decor *d, int (*read)(struct knob *, char *, size_t),
		  int (*write)(struct knob *, const char *, char *, size_t, knob_done_fn, void *));
struct knob_decor *knob_decor_of(struct knob *k);
/* The decorator's release (its ops.release unless the decorator sets its own, which ends with this one). */
void knob_decor_release(struct knob *k);

/*
 * Put K (name, pol, ops, env set; priv NULL) behind the dry-run backend: probes, and reads until the first write,
 * go to its driver; writes are remembered and return 0 at once, never reach the host, and read back (-ERANGE when
 * OUTLEN is too small; -EINVAL for a value of KNOB_VALUE_MAX bytes or more). 0, -EINVAL or -ENOMEM.
 */
int knob_dry_wrap(struct knob *k);

/* K back to ORIGINAL, the value it had before the agent's first write: ops->restore where the backend has one,
 * else ops->write of ORIGINAL; as knob_write. */
int knob_restore(struct knob *k, const char *original, char *why, size_t whylen, knob_done_fn done, void *ctx);

/* Invariant 7 after a policy is removed: a sysctl changed under a policy that no longer exists stays reachable for
 * reverts only, through a stand-in policy P (disabled, kind sysctl, its shape told by ORIGINAL: a vector has blanks
 * between its elements). Only net.* sysctls qualify: their knob name is the sysctl's name, and the driver needs
 * nothing else. 0, or -EINVAL for a name that is not one. */
int knob_orphan_policy(const char *name, const char *original, struct knob_policy *p);

/* K's live value (ops->read), with the arguments checked. */
int knob_read(struct knob *k, char *out, size_t outlen);
/* Write VALUE (ops->write) with WHY emptied first and the arguments checked. Same contract as ops->write. */
int knob_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx);

/* How the engine must treat an errno from a driver. */
enum knob_errclass {
	KNOB_ERR_NONE,        /* 0 */
	KNOB_ERR_RETRY,       /* EBUSY, EAGAIN, EINTR: try again next tick */
	KNOB_ERR_UNSUPPORTED, /* EINVAL, ERANGE, ENOENT, ENOTSUP, EOPNOTSUPP: mark this knob unsupported */
	KNOB_ERR_READONLY,    /* EPERM, EACCES, EROFS: stop writing anything, go observe-only */
	KNOB_ERR_OTHER        /* anything else (EIO: read back differs): fail this change */
};
/* Classify R (0 or -errno). */
enum knob_errclass knob_errclass(int r);

#endif
