/*
 * sampler_kit: the sampler object's state and what a probe may call; for agent/observe/ only.
 *
 * The sampler is three floors. sampler.c, on top, has the probe table, the object's lifecycle and the calls of
 * sampler.h. Each probe_*.c file below it holds one probe or a tight family of them and exports its sample
 * functions, which the table names (probe_stub.c: the stub_status fetch that sampler.c hands to its caller).
 * sampler_kit.c, at the bottom, is what the probes share: their health, the metric-id cache with its put_*
 * helpers, the reads under the configured root, and the cadence of the slower parts. A probe reads through
 * sampler_read() (rooted, files kept open), puts values through sampler_put_*() (deltas, metric ids), and ends
 * every run with exactly one sampler_probe_ok() or sampler_probe_fail() for its id. Its state lives in struct
 * sampler, in the fields marked with its file; the nginx pid and namespace (probe_nginx.c's) are read by the
 * probes that follow nginx, and a new pid makes probe_nginx.c close the files kept open in the old namespace.
 * A probe must not write to the host, read a clock (the tick count is its time) or call another probe, and logs
 * only what changes what the sampler follows (a new nginx master); its failures are logged by sampler_probe_fail,
 * once per change of the error.
 */
#ifndef NGXAT_SAMPLER_KIT_H
#define NGXAT_SAMPLER_KIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "config.h"
#include "core/hist.h"
#include "core/metrics.h"
#include "core/parse.h"
#include "observe/logtail.h"
#include "observe/probe.h"
#include "observe/procfile.h"
#include "observe/sampler.h"

#define MAX_CPUS PARSE_MAX_CPUS /* /proc/softirqs lists possible CPUs: big VMs have many */
#define MAX_WORKERS 256
#define MAX_LINKS 256
#define MAX_NET_IRQS 256
#define MAX_READ (8u << 20)          /* largest /proc file we read (a big /proc/interrupts is ~1 MiB) */
#define KEEP_MAX 64 /* workers and NIC IRQs whose files stay open (two and one descriptors each); more are reopened */
#define LINK_FIELDS 9
#define NTCP 16 /* netstat and snmp values taken (probe_proc.c's tcp_keys) */

/* The files read every tick, each kept open where procfile can (see procfile.h). */
enum pf_slot {
	PF_PIDFILE,
	PF_NETSTAT,
	PF_SNMP,
	PF_SOCKSTAT,
	PF_SOFTNET,
	PF_SOFTIRQS,
	PF_STAT,
	PF_INTERRUPTS,
	PF_CHILDREN,
	PF_SCRATCH, /* opened for each read: workers and IRQs past KEEP_MAX */
	PF_COUNT
};

/* The ids of one link's counters, for the link last seen at that position of the dump. */
struct link_ids {
	bool valid;
	char name[16];
	uint32_t id[LINK_FIELDS];
};

struct worker_prev {
	pid_t pid;
	uint64_t run_ns, wait_ns, vcsw, ivcsw;
};

struct id_slot;
struct logtail;
struct probe_netlink;
struct stub_handle;
struct client_handle;

struct sampler {
	/* sampler.c (the lifecycle) and sampler_kit.c */
	struct config cfg;
	struct metric_registry *reg;
	struct counters ctr;
	uint64_t tick;
	uint64_t *seen_tick; /* per metric id: tick of its last counter sample */
	size_t seen_cap;
	struct probe_health health[PROBE_COUNT];
	const char *probe_names[PROBE_COUNT]; /* from the table, for the log lines */
	struct procbuf pb; /* the text of the file read last */
	struct procfile pf[PF_COUNT]; /* each used by the probe that reads that file */
	struct id_slot *ids; /* metric key -> id (see SAMPLER_KEY) */
	size_t ids_mask, ids_n;

	/* probe_nginx.c; the nginx pid and namespace are read by the other probes */
	pid_t nginx_pid;
	int nginx_pidfd;      /* a pidfd of nginx_pid (real root only), else -1: liveness without a path lookup */
	struct stat pidfile_st; /* the pid file as last read: read again only when it changes */
	pid_t pidfile_pid;    /* what it said then; 0: not read */
	size_t nworkers;
	struct worker_prev workers[MAX_WORKERS];
	struct procfile pf_sched[KEEP_MAX], pf_status[KEEP_MAX], pf_cmdline[KEEP_MAX];
	uint64_t orphans_tick;  /* tick tcp_max_orphans was last read (a setting: every ORPHANS_EVERY_MS) */
	double max_orphans;     /* what it said then, NAN: unreadable */
	int netns_fd; /* nginx's network namespace when it is not ours, else -1 */
	uint64_t netns_gen; /* bumped when nginx's pid changes: connections made before go */
	sampler_ns_tcp_fn ns_tcp; /* sampler_set_ns_tcp's: sockets of nginx's namespace (netns_fd then unused), or NULL */
	void *ns_tcp_ctx;
	logtail_opener open_log; /* sampler_set_open_log's: how nginx's logs are opened, or NULL (open(2)) */
	void *open_log_ctx;

	/* probe_proc.c */
	struct cpu_times prev_cpu[MAX_CPUS + 1]; /* index 0: aggregate */
	bool have_prev_cpu[MAX_CPUS + 1];
	char netifs[16][16]; /* interface names from /sys/class/net, for spotting NIC queue IRQs */
	size_t nnetifs;
	unsigned net_irqs[MAX_NET_IRQS]; /* the NICs' IRQs */
	size_t nnet_irqs;
	bool net_irqs_sysfs;  /* their counts come from /sys/kernel/irq/N/per_cpu_count */
	uint64_t netifs_tick; /* tick of the last discovery; 0: due */
	struct procfile pf_irq[KEEP_MAX];
	struct netstat_want tcp_want[NTCP]; /* tcp_keys' names, as parse_netstat_pick takes them */

	/* probe_logs.c */
	struct logtail *access, *errlog;
	char access_path[CONFIG_PATH_MAX], errlog_path[CONFIG_PATH_MAX];
	struct hist tick_hist;
	uint64_t acc_n, acc_timed, acc_class[6], acc_req_ms, acc_up_ms, acc_bad, err_kind[ERRLOG_KIND_COUNT];
	uint64_t acc_502, acc_504, acc_conn_ms, acc_conn_n; /* 502s, 504s; $upstream_connect_time's sum, lines with one */
	bool conn_seen; /* a line with $upstream_connect_time was read: a tick without requests then has 0 ms */

	/* probe_sockets.c */
	struct probe_netlink *nl;
	pid_t nl_pid;
	sampler_ns_netlink_fn ns_netlink; /* sampler_set_ns_netlink's, or NULL */
	void *ns_ctx;
	bool nl_asked;          /* a tick asked for them: taken between ticks when they come */
	int nl_err;             /* a refusal that came between ticks, for the next tick to report (NL_WHY) */
	char nl_why[160];
	uint64_t states_tick;   /* tick of the last TCP state count */
	uint64_t link_names_tick; /* tick links were last dumped whole */
	struct link_ids link_ids[MAX_LINKS];
	double queued_sum;      /* connections waiting to be accepted, summed over the samples since the last tick */
	unsigned queued_n;      /* those samples (sampler_listen_sample) */
	struct probe_netlink_listen_queue *lq_last; /* the last one's queues (MAX_LISTEN), nlq_last of them */
	size_t nlq_last;

	/* probe_stub.c */
	struct stub_handle *stub; /* made by the first sampler_stub_prepare */

	/* probe_client.c */
	struct client_handle *client; /* made by the first sampler_client_prepare */
	char client_default_urls[CONFIG_PATH_MAX]; /* from nginx's configuration (sampler_client_default_urls) */
};

/*
 * Metric ids are looked up by a 64-bit key instead of formatting and interning the name every tick (about 115
 * values a tick): a fixed name's key is the address of its string literal, a formatted one's is
 * SAMPLER_KEY(kind, a, b) with the top byte >= 0x80, above any user-space address. A key maps to one name for the
 * life of the sampler, since the registry never renames an id; only links, whose names can change, are cached by
 * position and name.
 */
enum key_kind {
	K_SOFTNET = 0x81, /* a: cpu, b: field */
	K_SOFTIRQ,        /* a: cpu, b: field */
	K_CPU,            /* a: 0 for "all" else cpu + 1, b: field */
	K_IRQ,            /* a: irq, b: cpu column, or 0xffff for the total */
	K_HTTP_CLASS,     /* a: status class 1..5 */
	K_HTTP_LAT,       /* a: bucket */
	K_ERRLOG,         /* a: kind */
	K_LISTEN,         /* a: port, b: field */
	K_CLIENT_LAT,     /* a: phase (probe_client.c), b: bucket */
};

#define SAMPLER_KEY(kind, a, b) \
	(((uint64_t)(kind) << 56) | ((uint64_t)(uint32_t)(a) << 16) | (uint64_t)(uint16_t)(b))

/* ---- what a probe may call (sampler_kit.c) ---------------------------------------------------------------- */

/* Probe ID succeeded this tick: its bit in FR, its health cleared (a recovery is logged once). */
void sampler_probe_ok(struct sampler *s, struct frame *fr, enum probe_id id);
/* Probe ID failed with ERR (-errno) for the reason FMT: its bit in FR, its health; logged on a change only. */
void sampler_probe_fail(struct sampler *s, struct frame *fr, enum probe_id id, int err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Probe ID had no value because what it reads was saturated (FMT: the evidence): as sampler_probe_fail, with the
 * health's saturated set. */
void sampler_probe_saturated(struct sampler *s, struct frame *fr, enum probe_id id, int err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* FR's value of the metric NAME: false when the registry or the frame lacks it. */
bool sampler_frame_value(const struct sampler *s, const struct frame *fr, const char *name, double *v);

/* A gauge named NAME, a string with static storage (a literal, a static table's): its address is the key. */
void sampler_put_gauge(struct sampler *s, struct frame *fr, const char *name, double v);
/* A counter's delta against the previous tick (missing after a gap or a reset); NAME as for sampler_put_gauge. */
void sampler_put_counter(struct sampler *s, struct frame *fr, const char *name, uint64_t raw);
/* A counter by metric id (0: none, nothing is put), for names the caller interns itself. */
void sampler_put_counter_id(struct sampler *s, struct frame *fr, uint32_t id, uint64_t raw);
/* A counter found by KEY (SAMPLER_KEY): the name, FMT, is formatted only the first time. */
void sampler_putk_counter(struct sampler *s, struct frame *fr, uint64_t key, uint64_t raw, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* A gauge found by KEY, as sampler_putk_counter. */
void sampler_putk_gauge(struct sampler *s, struct frame *fr, uint64_t key, double v, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Whether a part of a probe that runs more seldom than every tick is due: LAST is its tick, 0 for never. */
bool sampler_due(const struct sampler *s, uint64_t last, uint64_t every_ms);

/* The path formatted from FMT under the configured root into OUT (truncated to N). */
void sampler_rooted(const struct sampler *s, char *out, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* PATH (not rooted) whole into s->pb through PF, which keeps it open unless it is PF_SCRATCH. 0 or -errno. */
int sampler_read(struct sampler *s, struct procfile *pf, const char *path);
/* Close the N procfiles at PF (they stay usable). */
void sampler_close_files(struct procfile *pf, size_t n);

/* ---- the probes (rows of sampler.c's table) -------------------------------------------------------------- */

/* probe_proc.c: TCP counters (netstat, snmp, sockstat) in nginx's namespace. */
void probe_proc_netstat(struct sampler *s, struct frame *fr);
/* probe_proc.c: per-CPU softnet_stat in nginx's namespace. */
void probe_proc_softnet(struct sampler *s, struct frame *fr);
/* probe_proc.c: NET_RX and NET_TX softirqs per CPU. */
void probe_proc_softirqs(struct sampler *s, struct frame *fr);
/* probe_proc.c: CPU time shares, context switches, runnable tasks. */
void probe_proc_stat(struct sampler *s, struct frame *fr);
/* probe_proc.c: the NICs' IRQ counts per CPU (the NICs and their IRQs found again every minute). */
void probe_proc_interrupts(struct sampler *s, struct frame *fr);
/* probe_nginx.c: the master's pid from the pid file, and whether it runs; follows its namespace. */
void probe_nginx_master(struct sampler *s, struct frame *fr);
/* probe_nginx.c: the workers' run and wait time and context switches. */
void probe_nginx_workers(struct sampler *s, struct frame *fr);
/* probe_logs.c: what the access log gained since the last tick. */
void probe_logs_access(struct sampler *s, struct frame *fr);
/* probe_logs.c: what the error log gained, by kind of error. */
void probe_logs_error(struct sampler *s, struct frame *fr);
/* probe_sockets.c: listen queues, TCP states and link counters over netlink, in nginx's namespace. */
void probe_sockets_sample(struct sampler *s, struct frame *fr);
void probe_sockets_between(struct sampler *s);
/* probe_stub.c: prepare a fetch (the handle is made on first use); the handle or NULL. See sampler_stub_prepare. */
/* The maker of sockets of nginx's namespace one fetch uses (taken at prepare: the loop may follow another master
 * while a pool thread fetches): FN NULL when none is set, or nginx's namespace is the sampler's to enter (no master
 * known, a fake root). */
struct ns_maker {
	sampler_ns_tcp_fn fn;
	void *ctx;
	pid_t pid;
};
void sampler_ns_maker(const struct sampler *s, struct ns_maker *m);
/* A socket of M (a struct ns_maker *) of FAMILY: a stubhttp_socket_fn. */
int sampler_ns_make(void *m, int family);
void *probe_stub_prepare(struct sampler *s);
/* probe_stub.c: the blocking fetch, on a pool thread: touches nothing but HANDLE and RES. */
void probe_stub_fetch(void *handle, struct stub_result *res);
/* probe_stub.c: parse RES into FR and account stub_status's health (on the loop thread). */
void probe_stub_apply(struct sampler *s, struct frame *fr, const struct stub_result *res);
/* probe_stub.c: stub_status missing this tick, for WHY. */
void probe_stub_skip(struct sampler *s, struct frame *fr, const char *why);
/* probe_stub.c: free the stub_status handle; NULL is fine. */
void probe_stub_free(struct stub_handle *h);
/* probe_client.c: prepare a run of the synthetic client (the handle is made on first use); the handle or NULL. */
void *probe_client_prepare(struct sampler *s);
/* probe_client.c: the run is to start U (uniform in [0, 1)) into the slack of its budget (client_start_delay_ms):
 * its budget less that, the delay in ms returned for the caller to wait. */
int64_t probe_client_delay(void *handle, double u);
/* probe_client.c: the blocking run, on a pool thread: touches nothing but HANDLE and RES. */
void probe_client_run(void *handle, struct client_result *res);
/* probe_client.c: put RES into FR and account the client's health (on the loop thread). */
void probe_client_apply(struct sampler *s, struct frame *fr, const struct client_result *res);
/* probe_client.c: the client missing this tick, for WHY. */
void probe_client_skip(struct sampler *s, struct frame *fr, const char *why);
/* probe_client.c: free the client's handle; NULL is fine. */
void probe_client_free(struct client_handle *h);

#endif
