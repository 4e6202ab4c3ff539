/*
 * policy: the rules around each knob, parsed and validated as a whole.
 *
 * A policy set is built from entries (section, key, value, file, line) that a loader read from policy files; this
 * module never reads files and never includes the INI library. It validates the whole set (types, bounds, hard
 * caps per kind, unknown keys and metrics, constraint targets and cycles) and answers whether a value may be
 * written (bounds, largest step, cross-knob constraints, forbidden targets). Pure: no I/O, no clock, no logs.
 *
 * It also owns two vocabularies that policy files name and later modules implement: the detectors a trigger may
 * name (policy_detector_known) and the metric names an objective or guardrail may name (policy_metric_known: the
 * sampler's metrics and a short table of derived ones, policy_derived_at). The file format is documented in
 * ngx-autotune.policy(5); keep the two in step.
 */
#ifndef NGXAT_POLICY_H
#define NGXAT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "knobval.h"

#define POLICY_NAME_MAX 64
#define POLICY_TARGET_MAX 128
#define POLICY_METRIC_MAX 96
#define POLICY_GUARDRAILS_MAX 8
#define POLICY_CONSTRAINTS_MAX 4
#define POLICY_ENUM_MAX 8
#define POLICY_FORBID_MAX 16
#define POLICY_PATH_MAX 256  /* a policy file's path as the loader named it */
#define POLICY_KEYS_MAX 24   /* keys a [knob] section may hold (see policy.c) */
#define POLICY_KNOBS_MAX 256 /* knobs in one set: bounds the allocation a hostile directory can cause */
#define POLICY_SETTLE_MIN_MS 1000
#define POLICY_SETTLE_MAX_MS 3600000
#define POLICY_SETTLE_DEFAULT_MS 30000

enum policy_kind {
	POLICY_SYSCTL,
	POLICY_IRQ_AFFINITY,
	POLICY_RPS,
	POLICY_RPS_FLOWS,
	POLICY_SCHED_SLICE,
	POLICY_NGINX_DIRECTIVE,
	POLICY_LISTEN_QUEUE,
	POLICY_LISTEN_PARAM,
	POLICY_UPSTREAM_KEEPALIVE,
	POLICY_KIND_COUNT
};

/* Whether a write of a knob of KIND reloads nginx (its directives, listen parameters, upstream keepalive). */
bool policy_kind_reloads_nginx(enum policy_kind kind);

enum policy_direction { POLICY_LOWER_IS_BETTER, POLICY_HIGHER_IS_BETTER };
enum policy_cmp { POLICY_LE, POLICY_LT, POLICY_GE, POLICY_GT };

struct policy_metric {
	char metric[POLICY_METRIC_MAX];
	enum policy_direction dir;
	bool implied;                      /* not the policy's: one of what clients get, watched in every trial
					    * (plan.c); it ends a trial on clear harm only */
	bool ledger;                       /* implied for the clients' time ledger alone (judge.c): weighed, it
					    * ends no trial (the judge's overflow trip stands for clear harm) */
};


struct policy_constraint {
	int elem;                          /* element of this knob's vector, -1 for the scalar */
	enum policy_cmp op;
	char other[POLICY_NAME_MAX];       /* the other knob's name; this knob's own name for "[0] < [1]" */
	int other_elem;                    /* -1 for its scalar */
	int line;                          /* of the constraint key */
};

struct knob_policy {
	char name[POLICY_NAME_MAX];        /* e.g. "net.core.somaxconn" */
	char file[64];                     /* the policy file it came from (family), without directory */
	enum policy_kind kind;
	char kind_name[24];                /* "sysctl", "irq_affinity", ... (as in the file) */
	char target[POLICY_TARGET_MAX];    /* sysctl name, interface glob, or directive */
	char context[16];                  /* nginx directives: "main", "events" or "http" */
	enum knob_type type;
	size_t nelem;                      /* INTVEC: elements; else 1 */
	int64_t min[KNOBVAL_VEC_MAX], max[KNOBVAL_VEC_MAX]; /* per element; INT uses [0]; CPU types: CPU range */
	char values[POLICY_ENUM_MAX][32];  /* ENUM: the allowed words */
	size_t nvalues;
	bool step_mul;                     /* step is a factor (x2) or an addend (+1024) */
	double step;
	double max_step;                   /* largest factor (step_mul) or difference one change may make; 0: none */
	char trigger[POLICY_METRIC_MAX];   /* detector name; "" when the agent never proposes this knob itself */
	double trigger_threshold;
	struct policy_metric objective;
	struct policy_metric guardrails[POLICY_GUARDRAILS_MAX];
	size_t nguardrails;
	int64_t settle_ms;
	int64_t settle_min_ms;             /* settle_min: the settle of blocks sized by the signal (0: settle_ms; above
					    * settle_ms it counts as settle_ms, so that an override may shorten settle) */
	bool approval_required;
	bool enabled;
	struct policy_constraint constraints[POLICY_CONSTRAINTS_MAX];
	size_t nconstraints;

	/* Added by the policy module: where each part came from, for FILE:LINE errors, and parse state. */
	enum policy_cmp trigger_op;        /* detector value OP threshold fires the trigger */
	bool max_step_mul;                 /* max_step was written as a factor (must match step_mul) */
	char path[POLICY_PATH_MAX];        /* the file as the loader named it */
	int line;                          /* line of the section's first key */
	int key_line[POLICY_KEYS_MAX];     /* line of each key, 0 when absent (index: policy.c's key table) */
	size_t nmin, nmax;                 /* numbers given for min and max (checked against nelem) */
};

struct policy_set {
	struct knob_policy *knobs;
	size_t n, cap;
	char forbidden[POLICY_FORBID_MAX][POLICY_TARGET_MAX]; /* sysctl names never written */
	size_t nforbidden;

	/* Builder state of policy_set_add: the section that entries are being added to. */
	char cur_path[POLICY_PATH_MAX];
	char cur_section[POLICY_NAME_MAX + 8];
};

/* A metric that the judge computes from sampled ones: NAME and how (documentation for humans and the judge). */
struct policy_derived {
	const char *name;
	const char *definition;
};

/* An empty set (no allocation yet). */
void policy_set_init(struct policy_set *set);
/* Release SET's memory; it is empty again. */
void policy_set_free(struct policy_set *set);

/*
 * Add one entry, read at FILE:LINE: KEY = VALUE in SECTION ("knob NAME" or "forbid"). Consecutive entries of one
 * section of one file build one knob; a knob name defined twice, an unknown section or key, a key given twice in a
 * section, or a VALUE that does not parse for its key is an error "FILE:LINE: message" in ERR. 0, -EINVAL, -ENOMEM
 * (or -ENOSPC past POLICY_KNOBS_MAX knobs). Checks that need the whole section (type against bounds, ...) wait for
 * policy_set_validate. After an error, the set is only fit for policy_set_free.
 */
int policy_set_add(struct policy_set *set, const char *file, int line, const char *section, const char *key,
		   const char *value, char *err, size_t errlen);
/* Begin a new section at FILE:LINE even if it has the name of the one before it (the loader calls this for each
 * "[...]" line so that a section repeated later in the file is seen as a second definition). */
void policy_set_section(struct policy_set *set, const char *file, int line, const char *section);

/*
 * Validate SET as a whole: required keys, types per kind, element counts, min <= max, the hard caps per kind and
 * target, nginx directives and their contexts, steps, triggers (known detectors), objectives and guardrails (known
 * to METRIC_KNOWN, skipped when NULL), unique targets, forbidden targets, constraint targets, element indexes and
 * cycles. Fills defaults (max_step = step). 0, or -EINVAL with "FILE:LINE: message" (the first error) in ERR.
 */
int policy_set_validate(struct policy_set *set, bool (*metric_known)(const char *name, void *ctx), void *ctx,
			char *err, size_t errlen);

/* The policy named NAME, or NULL. */
const struct knob_policy *policy_find(const struct policy_set *set, const char *name);
/* True when writing sysctl NAME is forbidden: by SET's [forbid] sections or by the built-in list (tcp_tw_recycle). */
bool policy_forbidden(const struct policy_set *set, const char *name);

/*
 * May knob P go from CURRENT to PROPOSED? Both are texts of P's type; CURRENT may be NULL when unknown (then a
 * knob with a step rule is refused). Checks, in order: P enabled and its target not forbidden (-EPERM), PROPOSED
 * parses as P's type with P's element count (-EINVAL), ENUM membership, bounds and kind rules (-ERANGE), the
 * largest step from CURRENT clamped into the bounds (-ERANGE; so a knob found outside its bounds may be brought to
 * the nearest bound in one change), then every constraint that P takes part in, its own and other knobs' that
 * name it (-ERANGE). VALUE_OF gives another knob's current or planned value as text: 0, or -ENOENT when that knob
 * is disabled or absent on this host, which lets the constraint pass; any other error refuses. ERR says why.
 * Reverts to a recorded original are not changes and are not checked here.
 */
int policy_check(const struct policy_set *set, const struct knob_policy *p, const char *current, const char *proposed,
		 int (*value_of)(const char *knob, char *out, size_t outlen, void *ctx), void *ctx, char *err,
		 size_t errlen);

/*
 * The value one step UP (or down) from CURRENT by P's step rule into OUT, for the planner. Every element moves the
 * same way, never against it: an element at or past its bound in that direction stays, one outside the bounds on
 * the other side goes to the nearest bound, the others move one step and are clamped (rps_flows: to a power of
 * two). Vectors whose elements must move apart (ip_local_port_range) are the planner's to compose. 0, -EINVAL
 * (CURRENT does not parse, or P has no step), -ENOSPC, -ERANGE (no element can move).
 */
int policy_step_value(const struct knob_policy *p, const char *current, bool up, char *out, size_t outlen);
/* P's bounds as text for status and the API: "128..65535", "[4096..65536] [65536..1048576]", "auto|off", "on|off",
 * "CPUs 0..1023". 0 or -ENOSPC. */
int policy_bounds_text(const struct knob_policy *p, char *buf, size_t len);

/* The policy-file word of KIND ("sysctl", ...), or "?". */
const char *policy_kind_name(enum policy_kind kind);
/* True when NAME is a detector a trigger may name (the detector vocabulary of ngx-autotune.policy(5)). */
bool policy_detector_known(const char *name);
/* True when NAME is a metric the sampler emits or a derived metric; a component "*" stands for any CPU, port,
 * interface or number ("listen.*.fill_pct"). CTX is unused: this is the default METRIC_KNOWN of validation. */
bool policy_metric_known(const char *name, void *ctx);
/* The I-th derived metric, or NULL past the end. */
const struct policy_derived *policy_derived_at(size_t i);

#endif
