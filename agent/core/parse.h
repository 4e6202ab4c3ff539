/*
 * parse: pure parsers for the kernel and nginx texts the sampler reads.
 *
 * Each parser takes bytes (not necessarily NUL-terminated) that a thin driver read, and fills plain structs.
 * The input is untrusted: a malformed, truncated or hostile text yields -EBADMSG (or -E2BIG when it exceeds a
 * documented limit), never a crash, a hang or an unbounded allocation. Parsers never read files, clocks or logs.
 * One .c file per source: parse_netstat.c, parse_sockstat.c, parse_softnet.c, parse_softirqs.c, parse_stat.c,
 * parse_interrupts.c, parse_schedstat.c, parse_stub.c, parse_accesslog.c, parse_errorlog.c, parse_loadgen.c.
 */
#ifndef NGXAT_PARSE_H
#define NGXAT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PARSE_MAX_CPUS 1024

/*
 * /proc/net/netstat and /proc/net/snmp: pairs of lines "Prefix: name1 name2 ..." / "Prefix: v1 v2 ...".
 * CB is called once per (prefix, name, value), e.g. ("TcpExt", "ListenOverflows", 12); a non-zero return from
 * CB stops the parse and is returned. Values may be negative (Tcp MaxConn is -1).
 */
typedef int (*parse_kv_cb)(void *ctx, const char *prefix, const char *name, int64_t value);
/* Parse netstat/snmp text; CB sees nothing from a text that fails to parse. 0, -EBADMSG (unpaired or mismatched
 * lines, a value outside int64), or CB's return. */
int parse_netstat(const char *buf, size_t len, parse_kv_cb cb, void *ctx);

/* One value parse_netstat_pick is to find: ("TcpExt", "ListenOverflows"). */
struct netstat_want {
	const char *prefix, *name;
};
/* One pass over netstat/snmp text that checks all of it as parse_netstat does but keeps only the N (<= 64) names
 * of WANT: VALS[i] gets WANT[i]'s value and bit i of *FOUND is set when the text has it (other bits are left
 * alone, so two files can fill one set). After -EBADMSG, VALS and *FOUND may hold part of the text and must not
 * be used. 0, -EBADMSG, -EINVAL (N > 64, a NULL or empty name). */
int parse_netstat_pick(const char *buf, size_t len, const struct netstat_want *want, size_t n, int64_t *vals,
		       uint64_t *found);

/* /proc/net/sockstat: lines "TCP: inuse 5 orphan 0 tw 0 alloc 7 mem 1"; CB gets ("TCP", "tw", 0) and so on.
 * Cheap to read, unlike an inet_diag dump of every socket. 0, -EBADMSG, or CB's return. */
int parse_sockstat(const char *buf, size_t len, parse_kv_cb cb, void *ctx);

/* One row of /proc/net/softnet_stat. */
struct softnet_cpu {
	uint32_t cpu; /* from the index column where the kernel prints it (>= 5.10), else the row number */
	uint64_t processed, dropped, time_squeeze;
	uint64_t received_rps, flow_limit; /* flow_limit: 0 before 3.11, which has no such column */
	uint64_t backlog_len; /* UINT64_MAX when the layout has no backlog column */
};
/* Parse softnet_stat: old layouts (10 or 11 columns) and new ones (13, 15, or wider as the kernel appends up to 32).
 * Fills at most MAX rows. 0, -EBADMSG, -E2BIG (more than MAX rows). */
int parse_softnet(const char *buf, size_t len, struct softnet_cpu *out, size_t max, size_t *n);

/* /proc/softirqs: per-CPU NET_RX and NET_TX counts. NCPU is the number of CPU columns. 0, -EBADMSG, -E2BIG. */
int parse_softirqs(const char *buf, size_t len, uint64_t *net_rx, uint64_t *net_tx, size_t max, size_t *ncpu);

/* One cpu line of /proc/stat, in USER_HZ ticks. cpu = -1 for the aggregate "cpu" line. */
struct cpu_times {
	int cpu;
	uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
};
struct proc_stat {
	struct cpu_times total;
	struct cpu_times *cpus; /* caller's array of MAX entries */
	size_t ncpu;            /* filled */
	uint64_t ctxt, procs_running, procs_blocked;
};
/* Parse /proc/stat into ST (st->cpus must point at MAX entries). Missing trailing columns (old kernels) read as 0.
 * The cpu, ctxt, procs_running and procs_blocked lines are required. 0, -EBADMSG, -E2BIG. */
int parse_stat(const char *buf, size_t len, struct proc_stat *st, size_t max);

/* /proc/interrupts. Rows keep their id ("45", "NMI", "LOC") and description ("IR-PCI-MSI 524288-edge eth0-rx-0":
 * blank runs folded to one space, cut to fit). Column j is the j-th CPU of the header, which lists online CPUs
 * only. Rows with fewer counts than CPUs (ERR, MIS) have 0 in the missing columns. */
struct irq_row {
	char id[16];
	char desc[80];
	uint64_t total;
};
struct irq_table {
	size_t ncpu, nirq;
	struct irq_row *rows; /* nirq rows */
	uint64_t *counts;     /* nirq * ncpu, row-major */
};
/* Parse /proc/interrupts into T (overwritten, zeroed on failure; allocates; free with irq_table_free). At most 8192
 * rows and PARSE_MAX_CPUS cpus. 0, -EBADMSG, -E2BIG, -ENOMEM. */
int parse_interrupts(const char *buf, size_t len, struct irq_table *t);
/* Free what parse_interrupts allocated; T may be zeroed. */
void irq_table_free(struct irq_table *t);
/* /sys/kernel/irq/N/per_cpu_count: "49,0,7" (one count per possible CPU, index = CPU number). Fills at most MAX.
 * 0, -EBADMSG, -E2BIG. */
int parse_irq_counts(const char *buf, size_t len, uint64_t *out, size_t max, size_t *n);

/* /proc/PID/schedstat: "run_ns wait_ns timeslices". 0, -EBADMSG. */
int parse_schedstat(const char *buf, size_t len, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices);
/* /proc/PID/status: voluntary_ctxt_switches and nonvoluntary_ctxt_switches. 0, -EBADMSG if either is absent. */
int parse_ctxt_switches(const char *buf, size_t len, uint64_t *voluntary, uint64_t *nonvoluntary);

/* nginx stub_status body. */
struct stub_status {
	uint64_t active, accepts, handled, requests, reading, writing, waiting;
};
/* Parse the stub_status page. 0, -EBADMSG. */
int parse_stub_status(const char *buf, size_t len, struct stub_status *st);
/* What the tick knew when a stub_status fetch had no complete answer in time (NAN: not sampled). */
struct stub_late {
	double run_ms, wait_ms; /* the workers' CPU and run-queue wait in the tick (schedstat), summed */
	double workers;         /* how many */
	double dt_s;            /* the tick's length */
	double client_timeouts; /* the synthetic client's requests that timed out too */
};
#define STUB_BUSY_SHARE 0.9 /* each worker runnable at least this share of the tick: saturated */
/*
 * Whether a late stub_status is saturation, not a missing value: nginx answers it from the event loop of a worker,
 * which a worker busy for a whole turn answers late (measured: worker_processes 1 gzipping 1 MB under 100 clients
 * had no answer in 400 ms in half the ticks or more, the worker runnable 500 ms of 500). Saturated when the workers
 * were each runnable (CPU plus run-queue wait) STUB_BUSY_SHARE of the tick or more, or the synthetic client timed
 * out as well; WHY gets the evidence ("the workers were each runnable 98% of the tick"). False when neither shows
 * it.
 */
bool stub_late_saturated(const struct stub_late *l, char *why, size_t whylen);

/*
 * nginx access log, one line. These formats are understood (docs/ngx-autotune.conf.5 gives the exact log_format):
 *  - JSON (log_format ... escape=json) with keys "status", "request_time", "upstream_response_time" and
 *    "upstream_connect_time" (the last two optional);
 *  - nginx's predefined combined, and main-style variants of it with more quoted fields after the user agent
 *    (such as "$http_x_forwarded_for"): status counted, no times (has_time 0);
 *  - either of those with " $request_time $upstream_response_time" appended (has_time 1).
 * upstream_response_time may be "-", a number, or a list ("0.010, 0.020 : 0.003"); the sum is taken.
 */
struct access_rec {
	int status;             /* 100..599 */
	int has_time;           /* 1 when the line has $request_time (and $upstream_response_time) */
	uint32_t request_ms;    /* request_time in ms, rounded; saturates at UINT32_MAX (49.7 days); 0 without */
	uint32_t upstream_ms;   /* sum of upstream times in ms; 0 when none; saturates likewise */
	int has_upstream;       /* 1 when an upstream was involved */
	uint32_t upstream_connect_ms; /* JSON only: sum of $upstream_connect_time in ms; 0 when none */
	int has_connect;        /* 1 when the line has the key "upstream_connect_time" (the log can show connects) */
};
/* Parse one line (without its newline). 0, -EBADMSG. */
int parse_access_line(const char *line, size_t len, struct access_rec *rec);
/* Called for each upstream server a request tried: its address (not NUL-terminated) and its time in ms. */
typedef int (*parse_upstream_cb)(void *ctx, const char *addr, size_t addrlen, uint32_t ms);
/*
 * The upstreams of one JSON line: "upstream_addr" and "upstream_response_time" zipped element by element (nginx
 * joins servers tried in turn with ", " and groups after an internal redirect with " : "); a server without a time
 * ("-") is skipped. CB runs only for a line that parses whole; a non-zero return stops and is returned. 0 (also
 * for a request without an upstream), -ENOENT (no "upstream_addr" key: the combined format, or a JSON format
 * without it), -EBADMSG (not JSON, lists of different lengths, a bad time).
 */
int parse_access_upstreams(const char *line, size_t len, parse_upstream_cb cb, void *ctx);

/* nginx error log messages that matter for tuning. */
enum errlog_kind {
	ERRLOG_OTHER = 0,
	ERRLOG_WORKER_CONNECTIONS, /* "worker_connections are not enough" */
	ERRLOG_TOO_MANY_FILES,     /* "Too many open files" */
	ERRLOG_UPSTREAM_PREMATURE, /* "upstream prematurely closed" */
	ERRLOG_BUFFERED_TEMP,      /* "buffered to a temporary file" */
	ERRLOG_ADDR_NOT_AVAIL,     /* "Cannot assign requested address" */
	ERRLOG_UPSTREAM_TIMEOUT,   /* "upstream timed out", other than while connecting */
	ERRLOG_CONN_REFUSED,       /* connect() to an upstream: "Connection refused" */
	ERRLOG_CONNECT_TIMEOUT,    /* "upstream timed out (110: ...) while connecting to upstream" */
	ERRLOG_NO_LIVE_UPSTREAMS,  /* "no live upstreams": every server of the group marked failed */
	ERRLOG_KIND_COUNT
};
/* Classify one error-log line. */
enum errlog_kind parse_errorlog_line(const char *line, size_t len);
/* Metric-name suffix of a kind ("worker_connections", ...); NULL for ERRLOG_OTHER. */
const char *errlog_kind_name(enum errlog_kind k);

/* The -c and -p of an nginx master's process title ("nginx: master process /usr/sbin/nginx -p /srv -c conf/x.conf",
 * its command line joined by blanks) into CONF and PREFIX, each "" when not given, read as nginx reads its flags
 * ("-qc FILE", "-cFILE"; the last one wins). 0, -EINVAL (not a master's title), -EBADMSG (a flag without its
 * value), -ENAMETOOLONG. Paths with blanks cannot be told apart. */
int parse_nginx_master_title(const char *title, char *conf, size_t conflen, char *prefix, size_t prefixlen);

/* ---- a load generator's summary (parse_loadgen.c) ---- */

/* What one run of wrk or ab printed: NAN where the tool did not print it (wrk without --latency has no
 * percentiles). ERRORS: non-2xx/3xx responses, failed requests, connect and write errors; READ_ERRORS: wrk's read
 * errors (a server's close counts there); TIMEOUTS: wrk's request timeouts. */
struct loadgen_result {
	const char *tool;   /* "wrk" or "ab" */
	double rps;
	double requests;
	double duration_s;
	double p50_ms, p90_ms, p99_ms;
	double errors, read_errors, timeouts;
};

/* Parse the output of one wrk or ab run from BUF[0..LEN) into R. 0, or -EBADMSG with ERR when it is neither tool's
 * summary or the run did not finish (no requests per second or request count). */
int parse_loadgen(const char *buf, size_t len, struct loadgen_result *r, char *err, size_t errlen);

/* Host texts the doctor reads (parse_host.c). */
#define PARSE_UNLIMITED INT64_MAX
/* /proc/PID/limits: the soft and hard "Max open files" (PARSE_UNLIMITED for "unlimited"). 0, -EBADMSG. */
int parse_limits_nofile(const char *buf, size_t len, int64_t *soft, int64_t *hard);
/* One interface of /proc/net/dev (receive side). rx_drop is the kernel's rx_dropped + rx_missed_errors. */
struct netdev_row {
	char name[16];
	uint64_t rx_bytes, rx_packets, rx_errs, rx_drop, rx_fifo;
};
/* Parse /proc/net/dev (two header lines, then "NAME: 16 numbers"). Fills at most MAX rows. 0, -EBADMSG, -E2BIG. */
int parse_netdev(const char *buf, size_t len, struct netdev_row *out, size_t max, size_t *n);
/* /proc/meminfo's MemTotal in kB. 0, -EBADMSG. */
int parse_meminfo_total(const char *buf, size_t len, uint64_t *kb);
/* /sys/kernel/mm/transparent_hugepage/enabled ("always [madvise] never"): the bracketed word into MODE.
 * 0, -EBADMSG (none, two, or one that does not fit). */
int parse_thp_mode(const char *buf, size_t len, char *mode, size_t modelen);

#endif
