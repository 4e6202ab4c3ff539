/*
 * detect: the detectors of ngx-autotune.policy(5), fed one frame per tick, and where request time goes.
 *
 * Owns short windows of the metrics the detectors read (ring buffers sized once at detect_new: pushing a frame
 * allocates nothing), the metric ids it reads (looked up by name and cached; names not yet interned are looked
 * up again only when the registry has grown), and the evaluation of each detector over the window into a reading
 * with its value in the unit that policy triggers use and one line of evidence with the numbers. It also decides
 * whether nginx and the kernel are the bottleneck at all: when the upstream's own time is most of request time
 * while connects to it are cheap and succeed, or nginx is idle, no reading is actionable and the status says why.
 * Where requests cannot be counted (no stub_status reading, no access log) the host is blind, not idle: the
 * readings that need no request count stay actionable, and the status says which probe is missing and the fix.
 * Findings no knob can fix are advisories.
 * It must not choose knobs or read policies (plan does), and must not judge trials (judge does). Pure: no I/O, no
 * clock; the frames carry the time.
 */
#ifndef NGXAT_DETECT_H
#define NGXAT_DETECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

#define DETECT_TEXT_MAX 256        /* evidence and status lines, with their NUL */
#define DETECT_WINDOW_MAX 3600     /* ticks a window may hold */
#define DETECT_CPUS_MAX 1024       /* CPUs the softirq detector may follow (knobval's CPU range) */

/* The detector vocabulary; the order is the planner's priority (documented in plan.h). */
enum detect_id {
	DETECT_FILE_LIMIT,          /* "Too many open files": nginx cannot accept or open; first, as it starves all */
	DETECT_LISTEN_OVERFLOWS,
	DETECT_SYN_QUEUE_OVERFLOW,
	DETECT_WORKER_CONNECTIONS_EXHAUSTED,
	DETECT_PORT_EXHAUSTION,
	DETECT_SOFTNET_DROPS,
	DETECT_SOFTNET_SQUEEZE,
	DETECT_SOFTIRQ_IMBALANCE,
	DETECT_WORKER_SATURATION,
	DETECT_WORKER_IMBALANCE,    /* one worker does most of the work: accepts land unevenly */
	DETECT_WORKER_RUN_DELAY,
	DETECT_RETRANSMISSIONS,
	DETECT_KEEPALIVE_SHORT,
	DETECT_TIMEWAIT_PILEUP,
	DETECT_FINWAIT_PILEUP,
	DETECT_SILENT_CONNECTIONS,       /* connections accepted that have not spoken: the listen's deferred keeps them */
	DETECT_COUNT
};

/* Findings the agent reports and never acts on. */
enum detect_advisory_id {
	DETECT_ADV_CLOSE_WAIT,   /* CLOSE_WAIT piling up: the application does not close its sockets */
	DETECT_ADV_FILE_LIMIT,   /* "Too many open files": worker_rlimit_nofile / LimitNOFILE, not a tunable here */
	DETECT_ADV_COUNT
};

enum detect_bottleneck {
	DETECT_BOTTLENECK_UNKNOWN,  /* not enough data in the window to say */
	DETECT_BOTTLENECK_HERE,     /* nginx or the kernel: readings are actionable */
	DETECT_BOTTLENECK_UPSTREAM, /* the upstream's own time is most of request time, its connects cheap and sound */
	DETECT_BOTTLENECK_IDLE,     /* too few requests for any change to matter or to be measured */
	DETECT_BOTTLENECK_BLIND,    /* requests cannot be counted: only the readings that need no count are acted on
				     * (their needs_requests false; the others are held not sustained) */
};

struct detect_config {
	size_t window_ticks;        /* ticks in a window (60 at 1 Hz) */
	size_t min_ticks;           /* ticks with data before a reading is valid (default: half the window) */
	size_t min_event_ticks;     /* ticks with events before a counter's reading is sustained, not a blip */
	size_t cpus_max;            /* CPUs followed by softirq_imbalance: cpu.0 .. cpu.(cpus_max - 1) */
	double upstream_share_max;  /* upstream ms / request ms at or above which the upstream is the bottleneck */
	double idle_rps;            /* requests per second below which nginx is idle */
	double min_out_segs;        /* TCP segments sent in the window before a retransmission rate is trusted */
	double min_conns;           /* connections accepted in the window before requests per connection is */
	double min_worker_ms;       /* worker CPU ms in the window before the workers' ratios are */
	double keepalive_enough;    /* requests per connection at which keepalive_short is no limit (500) */
	double worker_busy_min;     /* worker_imbalance counts only while the busiest worker is this busy (0.5 CPU) */
	double close_wait_min;      /* CLOSE_WAIT sockets at or above which the advisory fires (when not falling) */
	size_t gross_ticks;         /* a counter in every one of the last gross_ticks ticks (0: off) ... */
	double gross_p;             /* ... and more events than a Poisson rate at its threshold explains at this level
				     * is gross: acted on before the window is full */
	double gross_floor_rate;    /* the rate (events/s) a threshold of 0 is tested at */
	double orphan_share_min;    /* finwait_pileup counts only with orphans at this share of tcp_max_orphans (0.25) */
	/* nginx's side of the upstream connection: the upstream is not the bottleneck while any of these holds */
	double connect_fail_share;  /* failed upstream connects (error log) per logged request (0.01) */
	double gateway_share;       /* 502 responses per logged request (0.05) */
	double connect_share_max;   /* $upstream_connect_time's share of $upstream_response_time (0.2) */
	double outgoing_tw_share;   /* TIME_WAIT of connections made from nginx's namespace per local port (0.5) */
	double stub_busy_share;     /* a late stub_status is saturation with the workers runnable this share (0.9) */
	double threshold[DETECT_COUNT]; /* the shipped policies' trigger thresholds, for status; plan uses policies */
};

/* Values the detectors need that are knob values, not metrics; NAN when unknown (that detector is not valid). */
struct detect_env {
	double keepalive_requests;  /* nginx's keepalive_requests, for keepalive_short */
	double port_range;          /* ports in net.ipv4.ip_local_port_range, for timewait_pileup */
};

struct detect_reading {
	enum detect_id id;
	const char *name;           /* the detector's name in the policy vocabulary */
	bool valid;                 /* the window held enough data to compute VALUE */
	bool sustained;             /* seen in enough ticks not to be a blip (counters), or valid (ratios, levels) */
	bool active;                /* valid, sustained and VALUE > THRESHOLD */
	bool gross;                 /* active on the last gross_ticks alone: strong enough to act on at once */
	bool recent;                /* worker_connections_exhausted and file_limit: an event in one of the last
				     * gross_ticks ticks, valid or not; evidence that a cause is present now */
	bool needs_requests;        /* what it says depends on nginx being the bottleneck of requests it serves: not
				     * acted on while blind (sustained, active and gross are then false). False for
				     * the losses the kernel and nginx count themselves: listen and SYN queues,
				     * softnet drops and squeezes, descriptors, worker connections, local ports */
	double value;               /* in the unit of ngx-autotune.policy(5); NAN when not valid */
	double threshold;           /* the configured threshold (config.threshold) */
	double window_s;            /* seconds of data VALUE was computed from */
	char evidence[DETECT_TEXT_MAX]; /* one line with the numbers, or why the reading is not valid */
};

struct detect_advisory {
	enum detect_advisory_id id;
	const char *name;           /* "close_wait_pileup", "file_limit" */
	bool active;
	double value;
	char text[DETECT_TEXT_MAX];
};

#define DETECT_IDLEST_MAX 32       /* CPUs listed in struct detect_cpus, most idle first */
#define DETECT_LINKS_MAX 128       /* interfaces followed for the busiest receivers (the first so many named) */
#define DETECT_RX_DEVS 8           /* the busiest receivers listed in struct detect_cpus */
#define DETECT_DEV_MAX 16          /* an interface name and its NUL (IFNAMSIZ) */

/* Where the NET_RX load sits, for the CPU placement knobs (RPS, IRQ affinity): the softirq_imbalance reading's
 * CPUs, filled whenever that reading is valid (HOT is -1 otherwise), and the interfaces that received most (lo
 * and virtual ones among them: which of them have knobs is the planner's business). */
struct detect_cpus {
	int hot;                    /* the busiest CPU in softirq, -1 unknown */
	double hot_softirq;         /* its mean softirq share over the window, percent */
	size_t n;                   /* the other CPUs followed, in IDLEST (at most DETECT_IDLEST_MAX) */
	uint16_t idlest[DETECT_IDLEST_MAX]; /* most idle first (cpu.N.idle; ties: less softirq, then lower number) */
	double idle[DETECT_IDLEST_MAX];     /* their mean idle share, percent; NAN when cpu.N.idle is not sampled */
	double softirq[DETECT_IDLEST_MAX];  /* their mean softirq share, percent */
	size_t nrx;                         /* interfaces in RX_DEV (those that received packets in the window) */
	char rx_dev[DETECT_RX_DEVS][DETECT_DEV_MAX]; /* most packets received first (link.DEV.rx_packets) */
	double rx_pps[DETECT_RX_DEVS];      /* their packets per second over the ticks that had the counter */
};

struct detect_report {
	int64_t ts_ms;              /* time of the newest frame in the window */
	size_t ticks;               /* frames in the window */
	double window_s;            /* seconds they cover (sum of their dt) */
	enum detect_bottleneck bottleneck;
	bool actionable;            /* bottleneck is HERE, or BLIND (then only readings without needs_requests are
				     * sustained): the planner may act on sustained readings */
	bool gross_here;            /* the last gross_ticks ticks alone put the bottleneck here (gross readings may be
				     * acted on before the window is full) */
	double request_rate;        /* requests per second (stub_status, less the agent's own fetch; else the log) */
	double upstream_share;      /* upstream ms / request ms over the window; NAN without request times */
	bool upstream_nginx_side;   /* connects to upstreams fail or cost (status says which): not the upstream's time */
	bool stub_saturated;        /* stub_status late in a third of its fetches or more (too few answers to count
				     * with) while the workers were runnable stub_busy_share of the window */
	char status[DETECT_TEXT_MAX]; /* why the readings are or are not actionable, in one sentence */
	struct detect_reading r[DETECT_COUNT];
	struct detect_advisory adv[DETECT_ADV_COUNT];
	struct detect_cpus cpus;
};

struct detect;

/* CFG filled with the defaults: 60 ticks, 30 to be valid, 3 ticks with events, 256 CPUs, 90% upstream, 1 req/s;
 * gross after 8 ticks in a row at p < 1e-6 against the threshold's rate (at least 10/s); the upstream is not the
 * bottleneck with 1% of connects failing, 5% of responses 502, connects 20% of upstream time, or outgoing
 * TIME_WAIT at half the local ports. */
void detect_config_default(struct detect_config *cfg);
/* A detector with empty windows. 0, -EINVAL (window 0 or above DETECT_WINDOW_MAX, min_ticks above the window,
 * cpus_max 0 or above DETECT_CPUS_MAX, a share outside 0..1, a negative or NAN setting) or -ENOMEM. */
int detect_new(const struct detect_config *cfg, struct detect **out);
/* Free D; NULL is fine. */
void detect_free(struct detect *d);
/* Forget every window (after a change of the host: what came before no longer describes it). */
void detect_reset(struct detect *d);
/* Add one tick. REG is the registry FR's ids belong to (one registry for D's life; another one is -EINVAL). A
 * value that is NAN, infinite or negative counts as missing; a tick whose dt is not in (0, 3600] keeps no rate. */
int detect_push(struct detect *d, const struct metric_registry *reg, const struct frame *fr);
/* Evaluate every detector and advisory over the window into OUT (fully overwritten). ENV may be NULL. */
void detect_evaluate(struct detect *d, const struct detect_env *env, struct detect_report *out);

/* The vocabulary name of ID ("listen_overflows"), or "?" outside the enum. */
const char *detect_name(enum detect_id id);
/* ID of the detector NAME: 0 or -ENOENT. */
int detect_lookup(const char *name, enum detect_id *id);
/* The metric a rate detector counts (its reading is that metric's events per second): "tcp.listen_overflows" for
 * listen_overflows; NULL for the ratios and levels. */
const char *detect_counted_metric(enum detect_id id);
/* "unknown", "here", "upstream", "idle", "blind". */
const char *detect_bottleneck_name(enum detect_bottleneck b);

#endif
