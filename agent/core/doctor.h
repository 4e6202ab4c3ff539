/*
 * doctor: the tuning checklist an experienced engineer walks by hand, as pure checks that produce advisories.
 *
 * Owns the checks, the model of nginx's configuration they read (struct doctor_conf: every directive, block start
 * and end and included file in nginx's reading order, built from `nginx -T` by agent/doctor_conf.c), the live facts
 * they weigh (struct doctor_facts, gathered by agent/doctor.c), their findings, and the bookkeeping of when each
 * finding was first and last seen. A finding has a stable id ("nginx.worker_processes"), a subject that tells
 * instances apart (an upstream's name, a listen address), a severity, the evidence with the exact values seen (and
 * file:line for configuration), the fix in a line or two, and a reference (the directive or sysctl to read about).
 *
 * Pure, like the rest of core: no I/O, no clock, no logging. A fact the caller could not gather is unknown
 * (DOCTOR_UNKNOWN, or an empty string) and the checks that need it stay silent rather than guess. A finding whose fix
 * is a change of one of the agent's knobs carries it (struct doctor_remedy): the planner tries those causes before
 * the symptoms' knobs. nginx's own
 * defaults (worker_processes 1, worker_connections 512, backlog 511, proxy_http_version 1.0, ...) stand in for
 * directives the configuration does not set, and the evidence says so.
 */
#ifndef NGXAT_DOCTOR_H
#define NGXAT_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DOCTOR_UNKNOWN (-1)
#define DOCTOR_ID_MAX 48
#define DOCTOR_SUBJECT_MAX 128
#define DOCTOR_TITLE_MAX 96
#define DOCTOR_EVIDENCE_MAX 640
#define DOCTOR_FIX_MAX 768
#define DOCTOR_REF_MAX 96
#define DOCTOR_WHERE_MAX 320
#define DOCTOR_FINDINGS_MAX 256 /* findings of one run; more are counted in doctor_report.dropped */
/* Nodes of one configuration: each takes about 200 bytes with its words, so this bounds the model to about 10 MiB
 * (the contents of map, geo and types blocks are not nodes; diagnose/doctor_conf.c). */
#define DOCTOR_NODES_MAX 50000
#define DOCTOR_NICS_MAX 16
#define DOCTOR_CPUS_MAX 1024
#define DOCTOR_UPSTREAMS_MAX 64 /* distinct upstream addresses kept from the access log */
#define DOCTOR_PATH_MAX 512      /* a path or URL among the facts (the agent's configuration allows as much) */

/* ---- the configuration ------------------------------------------------------------------------------------ */

enum doctor_node_kind {
	DOCTOR_DIRECTIVE, /* "name args;" */
	DOCTOR_BLOCK,     /* "name args {" */
	DOCTOR_END,       /* "}" of the innermost open block */
	DOCTOR_INCLUDE    /* a file an include brings in here: args[0] is its path; file:line is the include's */
};

struct doctor_node {
	enum doctor_node_kind kind;
	const char *file;  /* the file it is written in */
	unsigned line;
	const char *name;  /* directive or block name; "include" for DOCTOR_INCLUDE; "" for DOCTOR_END */
	char **args;       /* NARGS words after the name, unescaped */
	size_t nargs;
	size_t parent;     /* the enclosing DOCTOR_BLOCK, or DOCTOR_TOP (set by doctor_conf_finish) */
	size_t end;        /* DOCTOR_BLOCK: its DOCTOR_END (set by doctor_conf_finish) */
};

#define DOCTOR_TOP ((size_t)-1)

struct doctor_conf {
	struct doctor_node *nodes;
	size_t n, cap;
	char **files; /* interned paths */
	size_t nfiles, fcap;
	bool finished;
};

/* An empty configuration. */
void doctor_conf_init(struct doctor_conf *c);
/*
 * Append a node: WORDS[0] is the name of a directive or block, the included path of an include, unused for an end;
 * FILE and LINE say where it is written. Strings are copied. 0, -EINVAL (no name, or added after finish), -E2BIG
 * (more than DOCTOR_NODES_MAX nodes), -ENOMEM.
 */
int doctor_conf_add(struct doctor_conf *c, enum doctor_node_kind kind, const char *file, unsigned line,
		    const char *const *words, size_t nwords);
/* Link each node to its block. 0, or -EINVAL with ERR when blocks do not balance. */
int doctor_conf_finish(struct doctor_conf *c, char *err, size_t errlen);
/* Free C; it is left empty. */
void doctor_conf_free(struct doctor_conf *c);

/* ---- the facts -------------------------------------------------------------------------------------------- */

/* One network interface of nginx's namespace (receive drops) and of the host (queues). */
struct doctor_nic {
	char name[16];
	bool physical;     /* backed by a device: queues are hardware queues */
	int64_t rx_queues; /* DOCTOR_UNKNOWN when not read */
	int64_t irqs;
	bool rps;          /* some rx queue has a non-zero rps_cpus */
	int64_t rx_drops;  /* rx_dropped + rx_missed over the window */
};

/* One upstream server as the access log's tail shows it. */
struct doctor_upstream {
	char addr[64];
	uint64_t tries; /* tries with a time */
	uint64_t ms;    /* their summed time */
};

/* What the doctor knows of the live system. doctor_facts_init makes every fact unknown. */
struct doctor_facts {
	/* the agent's own settings */
	char include_dir[DOCTOR_PATH_MAX];        /* where nginx should include the agent's files ("" unknown) */
	char access_log[DOCTOR_PATH_MAX];         /* the access log the agent reads ("" none) */
	char nginx_halt[DOCTOR_EVIDENCE_MAX];     /* why the agent stopped changing nginx ("" it has not) */
	/* Why nginx -T gave no configuration, when it is the agent's own bound: -EFBIG (more than [nginx] dump_max),
	 * -ENOMEM (nginx ran out of [nginx] memory_max); 0 otherwise. */
	int conf_rc;
	int64_t backend_keepalive_ms; /* how long the backends keep idle connections ([doctor]); 0 unknown */
	/* the host */
	int64_t cpus;
	int64_t mem_total_kb;
	char thp[16];                 /* transparent hugepages mode: "always", "madvise", "never", "" unknown */
	int64_t governor_cpus;        /* CPUs with a cpufreq governor (0: none has cpufreq) */
	int64_t governor_other;       /* of them, how many are not on "performance" */
	char governor[32];            /* the governor of the first of those */
	/* nginx */
	int64_t master_pid;
	int64_t master_nofile;        /* soft "Max open files" of the master */
	int64_t worker_pid;
	int64_t worker_nofile;        /* of one worker */
	/* sysctls as nginx's network namespace sees them (DOCTOR_UNKNOWN: unreadable or absent) */
	int64_t somaxconn;
	int64_t tw_recycle;
	int64_t port_lo, port_hi;     /* net.ipv4.ip_local_port_range */
	int64_t conntrack_count, conntrack_max;
	/* sockets now */
	int64_t time_wait;
	int64_t close_wait;
	int64_t close_wait_min;       /* the fewest seen over the window */
	/* counters over the window: WINDOW_S seconds, or since boot when 0 */
	double window_s;
	int64_t retrans_segs, out_segs, listen_overflows, active_opens;
	uint64_t net_rx[DOCTOR_CPUS_MAX]; /* NET_RX softirqs per CPU */
	size_t nnet_rx;                   /* CPUs in net_rx; 0 unknown */
	struct doctor_nic nics[DOCTOR_NICS_MAX];
	size_t nnics;
	/* nginx over the window */
	int64_t peak_active;          /* stub_status Active connections, the most seen */
	int64_t peak_established;     /* connections established to nginx's ports (accepted or in the accept
				       * queue: inet_diag), the most seen */
	int64_t err_worker_connections, err_too_many_files, err_upstream_premature, err_addr_not_avail;
	bool stub_known;              /* the agent fetched stub_status: STUB_OK says how it went */
	bool stub_ok;
	char stub_url[DOCTOR_PATH_MAX];
	char stub_error[192];
	/* the access log's last lines */
	int64_t log_lines;            /* lines that parsed (DOCTOR_UNKNOWN: not read) */
	uint64_t log_request_ms, log_upstream_ms;
	struct doctor_upstream upstreams[DOCTOR_UPSTREAMS_MAX];
	size_t nupstreams;
	uint64_t upstreams_other_tries, upstreams_other_ms; /* addresses past DOCTOR_UPSTREAMS_MAX */
};

/* Every fact unknown. */
void doctor_facts_init(struct doctor_facts *f);
/* Count one upstream try of MS ms at ADDR (LEN bytes) into F's table. */
void doctor_facts_add_upstream(struct doctor_facts *f, const char *addr, size_t len, uint32_t ms);

/* ---- findings --------------------------------------------------------------------------------------------- */

enum doctor_severity { DOCTOR_INFO, DOCTOR_WARNING, DOCTOR_CRITICAL };

#define DOCTOR_KNOB_MAX 64

/* The fix of a finding as a change the agent can make: its knob (the policy vocabulary's name) and the value that
 * fixes it. The planner proposes it before any symptom's knob (plan.h, causes). */
struct doctor_remedy {
	char knob[DOCTOR_KNOB_MAX];   /* "" when the fix is not the agent's to make */
	char value[DOCTOR_KNOB_MAX];  /* the value that fixes it; "" for one step of the knob's own rule */
	bool limit;                   /* the fix raises a limit the load meets; else it removes work or connections */
};

struct doctor_finding {
	char id[DOCTOR_ID_MAX];
	char subject[DOCTOR_SUBJECT_MAX]; /* "" when there is one instance at most */
	enum doctor_severity severity;
	char title[DOCTOR_TITLE_MAX];
	char evidence[DOCTOR_EVIDENCE_MAX];
	char fix[DOCTOR_FIX_MAX];
	char ref[DOCTOR_REF_MAX];
	char where[DOCTOR_WHERE_MAX];     /* "file:line" of the configuration it is about, "" for live findings */
	struct doctor_remedy remedy;      /* the agent's own fix, when it has one */
};

struct doctor_report {
	struct doctor_finding *v; /* in report order: where the time goes first, then by severity, id, subject */
	size_t n, cap;
	size_t dropped;           /* findings past DOCTOR_FINDINGS_MAX */
};

/* "info", "warning", "critical". */
const char *doctor_severity_name(enum doctor_severity s);

/*
 * Run every check into REP (emptied first). CONF NULL means nginx's configuration could not be read, and
 * CONF_ERR says why (reported as the finding doctor.nginx_config; the configuration checks are skipped). 0 or
 * -ENOMEM.
 */
int doctor_check(const struct doctor_conf *conf, const char *conf_err, const struct doctor_facts *facts,
		 struct doctor_report *rep);
/* Free REP's findings; it is left empty. */
void doctor_report_free(struct doctor_report *rep);

/* ---- first seen, last seen -------------------------------------------------------------------------------- */

struct doctor_tracked {
	struct doctor_finding f;
	int64_t first_seen_ms, last_seen_ms;
	bool fresh;     /* new in the last merge */
	bool escalated; /* became critical in the last merge (new, or more severe than before) */
};

struct doctor_state {
	struct doctor_tracked *v; /* the current findings, in report order */
	size_t n, cap;
	struct doctor_finding *gone; /* findings the last merge no longer saw */
	size_t ngone, gonecap;
	int64_t checked_ms;          /* when the last merge ran; 0: never */
};

/* Merge REP, checked at NOW_MS, into ST: a finding seen before (same id and subject) keeps its first_seen, a new
 * one starts at NOW_MS, one REP no longer has moves to ST->gone. 0 or -ENOMEM (ST unchanged). */
int doctor_state_merge(struct doctor_state *st, const struct doctor_report *rep, int64_t now_ms);
/* Findings of ST by severity into COUNTS[DOCTOR_INFO..DOCTOR_CRITICAL]. */
void doctor_state_counts(const struct doctor_state *st, size_t counts[3]);
/* Free ST; it is left empty. */
void doctor_state_free(struct doctor_state *st);

#endif
