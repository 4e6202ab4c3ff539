#include "build-config.h"

#include "observe/sampler.h"

#include <assert.h>
#include <ctype.h>
#include <curl/curl.h>
#include <sched.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/hist.h"
#include "core/parse.h"
#include "log.h"
#include "observe/logtail.h"
#include "observe/probe_netlink.h"
#include "observe/procfile.h"
#include "observe/stubhttp.h"
#include "strutil.h"

#define MAX_CPUS PARSE_MAX_CPUS /* /proc/softirqs lists possible CPUs: big VMs have many */
#define MAX_WORKERS 256
#define MAX_LISTEN 256
#define MAX_LINKS 256
#define MAX_NET_IRQS 256
#define NET_IRQS_EVERY_MS 60000 /* how often NICs and their IRQs are discovered again */
#define MAX_READ (8u << 20)          /* largest /proc file we read (a big /proc/interrupts is ~1 MiB) */
#define KEEP_MAX 64 /* workers and NIC IRQs whose files stay open (two and one descriptors each); more are reopened */
#define ACCESS_BYTES_PER_TICK (16u << 20)
#define ERROR_BYTES_PER_TICK (1u << 20)
/*
 * Counting TCP states through inet_diag makes the kernel walk the whole established hash, which is sized by RAM
 * and shared by all namespaces: 2.7 ms per dump on a 24 GiB VM with a dozen sockets. So states are counted every
 * STATES_EVERY_MS; each tick has the cheap /proc/net/sockstat figures (TIME_WAIT, in use, orphans) instead.
 */
#define STATES_EVERY_MS 10000
#define LINK_NAMES_EVERY_MS 60000 /* how often link names are read again (a rename keeps the index) */

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

#define LINK_FIELDS 9
#define NTCP 16 /* netstat and snmp values taken (tcp_keys) */

/* The ids of one link's counters, for the link last seen at that position of the dump. */
struct link_ids {
	bool valid;
	char name[16];
	uint32_t id[LINK_FIELDS];
};

/* One entry of the metric-id cache (see KEY). */
struct id_slot {
	uint64_t key; /* 0: empty */
	uint32_t id;
};

struct worker_prev {
	pid_t pid;
	uint64_t run_ns, wait_ns, vcsw, ivcsw;
};

struct stub_handle {
	struct stubhttp *http;   /* plain http:// URLs: a kept-alive connection, no libcurl */
	CURL *curl;              /* anything else (https://) */
	int netns_fd;            /* a dup of sampler.netns_fd for one fetch, closed by the fetch */
	uint64_t netns_gen;      /* sampler.netns_gen at prepare */
	char url[CONFIG_PATH_MAX];
	long timeout_ms;
	struct stub_result *res; /* valid during a fetch */
};

struct sampler {
	struct config cfg;
	struct metric_registry *reg;
	struct counters ctr;
	uint64_t tick;
	uint64_t *seen_tick; /* per metric id: tick of its last counter sample */
	size_t seen_cap;
	struct probe_health health[PROBE_COUNT];

	struct procbuf pb; /* the text of the file read last */
	struct procfile pf[PF_COUNT];
	struct procfile pf_sched[KEEP_MAX], pf_status[KEEP_MAX], pf_irq[KEEP_MAX];

	pid_t nginx_pid;
	int nginx_pidfd;      /* a pidfd of nginx_pid (real root only), else -1: liveness without a path lookup */
	struct stat pidfile_st; /* the pid file as last read: read again only when it changes */
	pid_t pidfile_pid;    /* what it said then; 0: not read */
	size_t nworkers;
	struct worker_prev workers[MAX_WORKERS];

	struct cpu_times prev_cpu[MAX_CPUS + 1]; /* index 0: aggregate */
	bool have_prev_cpu[MAX_CPUS + 1];

	struct logtail *access, *errlog;
	char access_path[CONFIG_PATH_MAX], errlog_path[CONFIG_PATH_MAX];
	struct hist tick_hist;
	uint64_t acc_n, acc_class[6], acc_req_ms, acc_up_ms, acc_bad, err_kind[ERRLOG_KIND_COUNT];

	struct probe_netlink *nl;
	pid_t nl_pid;
	uint64_t states_tick;   /* tick of the last TCP state count */
	uint64_t link_names_tick; /* tick links were last dumped whole */

	char netifs[16][16]; /* interface names from /sys/class/net, for spotting NIC queue IRQs */
	size_t nnetifs;
	unsigned net_irqs[MAX_NET_IRQS]; /* the NICs' IRQs */
	size_t nnet_irqs;
	bool net_irqs_sysfs;  /* their counts come from /sys/kernel/irq/N/per_cpu_count */
	uint64_t netifs_tick; /* tick of the last discovery; 0: due */

	struct netstat_want tcp_want[NTCP]; /* tcp_keys' names, as parse_netstat_pick takes them */

	int netns_fd; /* nginx's network namespace when it is not ours, else -1 */
	uint64_t netns_gen; /* bumped when nginx's pid changes: connections made before go */
	struct stub_handle stub;

	struct id_slot *ids; /* metric key -> id (see KEY) */
	size_t ids_mask, ids_n;
	struct link_ids link_ids[MAX_LINKS];
};

/* What the sampler takes from netstat and snmp (of ~300 names); parse_netstat_pick finds them in one pass. */
static const struct tcp_key {
	struct netstat_want w;
	const char *metric;
	bool gauge;
} tcp_keys[NTCP] = {
	{{"Tcp", "ActiveOpens"}, "tcp.active_opens", false},
	{{"Tcp", "AttemptFails"}, "tcp.attempt_fails", false},
	{{"Tcp", "CurrEstab"}, "tcp.curr_estab", true},
	{{"Tcp", "EstabResets"}, "tcp.estab_resets", false},
	{{"Tcp", "InErrs"}, "tcp.in_errs", false},
	{{"Tcp", "InSegs"}, "tcp.in_segs", false},
	{{"Tcp", "OutSegs"}, "tcp.out_segs", false},
	{{"Tcp", "PassiveOpens"}, "tcp.passive_opens", false},
	{{"Tcp", "RetransSegs"}, "tcp.retrans_segs", false},
	{{"TcpExt", "ListenDrops"}, "tcp.listen_drops", false},
	{{"TcpExt", "ListenOverflows"}, "tcp.listen_overflows", false},
	{{"TcpExt", "SyncookiesSent"}, "tcp.syncookies_sent", false},
	{{"TcpExt", "TCPAbortOnMemory"}, "tcp.abort_on_memory", false},
	{{"TcpExt", "TCPBacklogDrop"}, "tcp.backlog_drop", false},
	{{"TcpExt", "TCPReqQFullDrop"}, "tcp.reqq_full_drop", false},
	{{"TcpExt", "TCPTimeWaitOverflow"}, "tcp.timewait_overflow", false},
};

static void probe_netstat(struct sampler *s, struct frame *fr);
static void probe_softnet(struct sampler *s, struct frame *fr);
static void probe_softirqs(struct sampler *s, struct frame *fr);
static void probe_stat(struct sampler *s, struct frame *fr);
static void probe_interrupts(struct sampler *s, struct frame *fr);
static void probe_nginx(struct sampler *s, struct frame *fr);
static void probe_workers(struct sampler *s, struct frame *fr);
static void probe_access(struct sampler *s, struct frame *fr);
static void probe_errorlog(struct sampler *s, struct frame *fr);
static void probe_netlink(struct sampler *s, struct frame *fr);

/* When in the tick a probe runs. */
enum probe_stage {
	STAGE_BEGIN,   /* sampler_begin: nginx's pid and namespace, which the stub_status fetch needs */
	STAGE_COLLECT, /* sampler_collect */
	STAGE_CALLER,  /* fetched off the loop by the caller, through sampler_stub_* (the one probe that can block) */
};

/* One probe. Its id is its bit in frames (stored: never renumbered); its place in the table is its turn. */
struct probe_row {
	enum probe_id id;
	const char *name;                                    /* in status, logs and NGXAT_PROBE= */
	enum probe_stage stage;
	bool (*enabled)(const struct config *c);             /* by configuration; NULL: always on */
	void (*sample)(struct sampler *s, struct frame *fr); /* NULL for STAGE_CALLER */
};

static bool interrupts_on(const struct config *c)
{
	return c->probe_interrupts;
}

static bool nginx_on(const struct config *c)
{
	return c->pid_file[0] != '\0';
}

static bool stub_on(const struct config *c)
{
	return c->stub_status_url[0] != '\0';
}

static bool workers_on(const struct config *c)
{
	return c->probe_workers && c->pid_file[0];
}

static bool access_on(const struct config *c)
{
	return c->access_log[0] != '\0';
}

static bool errorlog_on(const struct config *c)
{
	return c->error_log[0] != '\0';
}

static bool netlink_on(const struct config *c)
{
	return c->probe_netlink;
}

/* Every probe, in the order a tick runs them within its stage. Adding a probe: an id in sampler.h, a row here. */
static const struct probe_row probes[] = {
	{PROBE_NETSTAT, "netstat", STAGE_COLLECT, NULL, probe_netstat},
	{PROBE_SOFTNET, "softnet", STAGE_COLLECT, NULL, probe_softnet},
	{PROBE_SOFTIRQS, "softirqs", STAGE_COLLECT, NULL, probe_softirqs},
	{PROBE_STAT, "stat", STAGE_COLLECT, NULL, probe_stat},
	{PROBE_INTERRUPTS, "interrupts", STAGE_COLLECT, interrupts_on, probe_interrupts},
	{PROBE_NGINX, "nginx", STAGE_BEGIN, nginx_on, probe_nginx},
	{PROBE_STUB, "stub_status", STAGE_CALLER, stub_on, NULL},
	{PROBE_WORKERS, "workers", STAGE_COLLECT, workers_on, probe_workers},
	{PROBE_ACCESSLOG, "access_log", STAGE_COLLECT, access_on, probe_access},
	{PROBE_ERRORLOG, "error_log", STAGE_COLLECT, errorlog_on, probe_errorlog},
	{PROBE_NETLINK, "netlink", STAGE_COLLECT, netlink_on, probe_netlink},
};

#define NPROBES (sizeof(probes) / sizeof(probes[0]))
_Static_assert(NPROBES == PROBE_COUNT, "a row per probe id");

const char *sampler_probe_name(enum probe_id id)
{
	for (size_t i = 0; i < NPROBES; i++)
		if (probes[i].id == id)
			return probes[i].name;
	return "?";
}

const struct probe_health *sampler_health(const struct sampler *s, enum probe_id id)
{
	return &s->health[id];
}

void sampler_nginx(const struct sampler *s, pid_t *master, unsigned *workers)
{
	*master = s->nginx_pid;
	*workers = (unsigned)s->nworkers;
}

size_t sampler_worker_pids(const struct sampler *s, pid_t *out, size_t max)
{
	size_t n = s->nworkers < max ? s->nworkers : max;

	for (size_t i = 0; i < n; i++)
		out[i] = s->workers[i].pid;
	return n;
}

static void set_enabled(struct sampler *s)
{
	for (size_t i = 0; i < NPROBES; i++)
		s->health[probes[i].id].enabled = !probes[i].enabled || probes[i].enabled(&s->cfg);
}

int sampler_new(const struct config *cfg, struct metric_registry *reg, struct sampler **out)
{
	struct sampler *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < NPROBES; i++)
		for (size_t j = 0; j < i; j++)
			assert(probes[i].id != probes[j].id);
	s->cfg = *cfg;
	s->reg = reg;
	counters_init(&s->ctr);
	hist_reset(&s->tick_hist);
	s->netns_fd = s->stub.netns_fd = -1;
	s->nginx_pidfd = -1;
	for (size_t i = 0; i < NTCP; i++)
		s->tcp_want[i] = tcp_keys[i].w;
	for (size_t i = 0; i < PF_COUNT; i++)
		procfile_init(&s->pf[i]);
	for (size_t i = 0; i < KEEP_MAX; i++) {
		procfile_init(&s->pf_sched[i]);
		procfile_init(&s->pf_status[i]);
		procfile_init(&s->pf_irq[i]);
	}
	set_enabled(s);
	*out = s;
	return 0;
}

static void close_files(struct procfile *pf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		procfile_close(&pf[i]);
}

static void close_tailers(struct sampler *s)
{
	logtail_close(s->access);
	logtail_close(s->errlog);
	s->access = s->errlog = NULL;
}

void sampler_free(struct sampler *s)
{
	if (!s)
		return;
	close_tailers(s);
	probe_netlink_close(s->nl);
	if (s->stub.curl)
		curl_easy_cleanup(s->stub.curl);
	stubhttp_free(s->stub.http);
	if (s->netns_fd >= 0)
		close(s->netns_fd);
	if (s->nginx_pidfd >= 0)
		close(s->nginx_pidfd);
	counters_free(&s->ctr);
	free(s->seen_tick);
	free(s->ids);
	close_files(s->pf, PF_COUNT);
	close_files(s->pf_sched, KEEP_MAX);
	close_files(s->pf_status, KEEP_MAX);
	close_files(s->pf_irq, KEEP_MAX);
	procbuf_free(&s->pb);
	free(s);
}

void sampler_reconfigure(struct sampler *s, const struct config *cfg)
{
	bool root_changed = strcmp(s->cfg.root, cfg->root) != 0;

	s->cfg = *cfg;
	set_enabled(s);
	if (strcmp(s->access_path, cfg->access_log) != 0) {
		logtail_close(s->access);
		s->access = NULL;
	}
	if (strcmp(s->errlog_path, cfg->error_log) != 0) {
		logtail_close(s->errlog);
		s->errlog = NULL;
	}
	if (root_changed || !cfg->probe_netlink) {
		probe_netlink_close(s->nl);
		s->nl = NULL;
	}
}

/* ---- health ---------------------------------------------------------------------------------------------- */

static void probe_ok(struct sampler *s, struct frame *fr, enum probe_id id)
{
	struct probe_health *h = &s->health[id];

	if (!h->ok && h->failures) {
		char field[64];
		const char *fields[] = {field, NULL};

		snprintf(field, sizeof(field), "NGXAT_PROBE=%s", sampler_probe_name(id));
		log_fields(LOG_NOTICE, fields, "probe %s recovered", sampler_probe_name(id));
	}
	h->ok = true;
	h->err = 0;
	h->msg[0] = '\0';
	fr->probes_ok |= 1u << id;
}

static void probe_fail(struct sampler *s, struct frame *fr, enum probe_id id, int err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void probe_fail(struct sampler *s, struct frame *fr, enum probe_id id, int err, const char *fmt, ...)
{
	struct probe_health *h = &s->health[id];
	char msg[sizeof(h->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Log on a change of the error only: a dead nginx must not write a line per second. */
	if (h->ok || h->failures == 0 || strcmp(msg, h->msg) != 0) {
		char field[64], errno_field[32];
		const char *fields[] = {field, errno_field, NULL};

		snprintf(field, sizeof(field), "NGXAT_PROBE=%s", sampler_probe_name(id));
		snprintf(errno_field, sizeof(errno_field), "ERRNO=%d", -err);
		log_fields(LOG_WARNING, fields, "probe %s failing: %s", sampler_probe_name(id), msg);
	}
	h->ok = false;
	h->err = err;
	h->failures++;
	memcpy(h->msg, msg, sizeof(msg));
	fr->probes_bad |= 1u << id;
}

/* ---- values ---------------------------------------------------------------------------------------------- */

/*
 * Metric ids are looked up by a 64-bit key instead of formatting and interning the name every tick (about 115
 * values a tick): a fixed name's key is the address of its string literal, a formatted one's is KEY(kind, a, b)
 * with the top byte >= 0x80, above any user-space address. A key maps to one name for the life of the sampler,
 * since the registry never renames an id; only links, whose names can change, are cached by position and name.
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
};

#define KEY(kind, a, b) (((uint64_t)(kind) << 56) | ((uint64_t)(uint32_t)(a) << 16) | (uint64_t)(uint16_t)(b))

static uint32_t *find_id(struct sampler *s, uint64_t key)
{
	for (size_t i = (size_t)(key ^ (key >> 29)) * 0x9e3779b97f4a7c15ull >> 32 & s->ids_mask;;
	     i = (i + 1) & s->ids_mask) {
		if (s->ids[i].key == key)
			return &s->ids[i].id;
		if (s->ids[i].key == 0)
			return NULL;
	}
}

/* Remember KEY -> ID; kept at most half full. A failure only means the name is formatted again next time. */
static void remember_id(struct sampler *s, uint64_t key, uint32_t id)
{
	size_t i;

	if (s->ids_n + 1 > (s->ids_mask + 1) / 2) {
		size_t cap = s->ids ? (s->ids_mask + 1) * 2 : 256;
		struct id_slot *old = s->ids, *t = calloc(cap, sizeof(*t));
		size_t oldn = s->ids ? s->ids_mask + 1 : 0;

		if (!t)
			return;
		s->ids = t;
		s->ids_mask = cap - 1;
		s->ids_n = 0;
		for (i = 0; i < oldn; i++)
			if (old[i].key)
				remember_id(s, old[i].key, old[i].id);
		free(old);
	}
	for (i = (size_t)(key ^ (key >> 29)) * 0x9e3779b97f4a7c15ull >> 32 & s->ids_mask; s->ids[i].key;
	     i = (i + 1) & s->ids_mask)
		;
	s->ids[i].key = key;
	s->ids[i].id = id;
	s->ids_n++;
}

static uint32_t cached_id(struct sampler *s, uint64_t key)
{
	uint32_t *p = s->ids ? find_id(s, key) : NULL;

	return p ? *p : 0;
}

/* Intern NAME and remember it under KEY. 0 on failure. */
static uint32_t new_id(struct sampler *s, uint64_t key, const char *name)
{
	uint32_t id;

	if (metric_intern(s->reg, name, &id) < 0)
		return 0;
	remember_id(s, key, id);
	return id;
}

/* Id of a fixed NAME, which must have static storage: its address is the key. */
static uint32_t static_id(struct sampler *s, const char *name)
{
	uint32_t id = cached_id(s, (uint64_t)(uintptr_t)name);

	return id ? id : new_id(s, (uint64_t)(uintptr_t)name, name);
}

/* Id of the metric KEY stands for; FMT with AP is its name, formatted and interned the first time only. */
static uint32_t format_id(struct sampler *s, uint64_t key, const char *fmt, va_list ap)
{
	char name[METRIC_NAME_MAX];
	uint32_t id = cached_id(s, key);

	if (id)
		return id;
	vsnprintf(name, sizeof(name), fmt, ap);
	return new_id(s, key, name);
}

static void put_gauge_id(struct frame *fr, uint32_t id, double v)
{
	if (id)
		frame_put(fr, id, v);
}

/*
 * A counter's delta is only meaningful against the previous tick: after a gap (probe failed, source vanished)
 * the next sample is a new base, so an outage never shows as a spike.
 */
static void put_counter_id(struct sampler *s, struct frame *fr, uint32_t id, uint64_t raw)
{
	uint64_t delta;

	if (!id)
		return;
	if (id >= s->seen_cap) {
		size_t cap = s->seen_cap ? s->seen_cap : 256;
		uint64_t *p;

		while (cap <= id)
			cap *= 2;
		p = realloc(s->seen_tick, cap * sizeof(*p));
		if (!p)
			return;
		memset(p + s->seen_cap, 0, (cap - s->seen_cap) * sizeof(*p));
		s->seen_tick = p;
		s->seen_cap = cap;
	}
	if (s->seen_tick[id] + 1 != s->tick)
		counters_forget(&s->ctr, id);
	s->seen_tick[id] = s->tick;
	if (counters_delta(&s->ctr, id, raw, &delta) == 0)
		frame_put(fr, id, (double)delta);
	else
		frame_put(fr, id, NAN);
}

/* NAME: a string with static storage (a literal, a static table's). */
static void put_gauge(struct sampler *s, struct frame *fr, const char *name, double v)
{
	put_gauge_id(fr, static_id(s, name), v);
}

static void put_counter(struct sampler *s, struct frame *fr, const char *name, uint64_t raw)
{
	put_counter_id(s, fr, static_id(s, name), raw);
}

/* The metric named by FMT, found by KEY: the name is formatted only the first time. */
static void putk_counter(struct sampler *s, struct frame *fr, uint64_t key, uint64_t raw, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void putk_counter(struct sampler *s, struct frame *fr, uint64_t key, uint64_t raw, const char *fmt, ...)
{
	va_list ap;
	uint32_t id;

	va_start(ap, fmt);
	id = format_id(s, key, fmt, ap);
	va_end(ap);
	put_counter_id(s, fr, id, raw);
}

static void putk_gauge(struct sampler *s, struct frame *fr, uint64_t key, double v, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void putk_gauge(struct sampler *s, struct frame *fr, uint64_t key, double v, const char *fmt, ...)
{
	va_list ap;
	uint32_t id;

	va_start(ap, fmt);
	id = format_id(s, key, fmt, ap);
	va_end(ap);
	put_gauge_id(fr, id, v);
}

/* ---- cadence ------------------------------------------------------------------------------------------------ */

/*
 * Whether a part of a probe that runs more seldom than every tick (a costly count, a discovery) is due: LAST is
 * the tick it last ran, 0 for never (or to force it). Whole probes run every tick: a counter's delta is taken
 * against the previous tick only, so a probe run every N ticks would give no deltas at all.
 */
static bool due(const struct sampler *s, uint64_t last, uint64_t every_ms)
{
	return !last || (s->tick - last) * (uint64_t)s->cfg.tick_ms >= every_ms;
}

/* ---- file access ----------------------------------------------------------------------------------------- */

static void rooted(const struct sampler *s, char *out, size_t n, const char *path)
{
	const char *root = s->cfg.root;

	if (strcmp(root, "/") == 0 || root[0] == '\0')
		snprintf(out, n, "%s", path);
	else
		snprintf(out, n, "%s%s", root, path);
}

/* Read PATH (not rooted) whole into s->pb through PF, which keeps it open where it can. 0 or -errno. */
static int read_proc(struct sampler *s, struct procfile *pf, const char *path)
{
	char full[CONFIG_PATH_MAX + 128];

	rooted(s, full, sizeof(full), path);
	return procfile_read(pf, full, pf != &s->pf[PF_SCRATCH], &s->pb, MAX_READ);
}

/*
 * The network-namespace view: nginx's when its pid is known, else the agent's. No fallback from one to the other
 * within a tick: counters of two namespaces must never be subtracted from each other.
 */
static int read_netns(struct sampler *s, struct procfile *pf, const char *file)
{
	char path[128];

	if (s->nginx_pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)s->nginx_pid, file);
	else
		snprintf(path, sizeof(path), "/proc/net/%s", file);
	return read_proc(s, pf, path);
}

/* ---- kernel probes --------------------------------------------------------------------------------------- */

static const struct {
	const char *key, *metric;
} sockstat_keys[] = {
	{"inuse", "tcp.sockstat.inuse"},
	{"orphan", "tcp.sockstat.orphan"},
	{"tw", "tcp.sockstat.time_wait"},
	{"mem", "tcp.sockstat.mem_pages"},
};

struct kv_ctx {
	struct sampler *s;
	struct frame *fr;
	unsigned found;
};

static int on_sockstat(void *arg, const char *prefix, const char *name, int64_t value)
{
	struct kv_ctx *c = arg;

	if (strcmp(prefix, "TCP") != 0)
		return 0;
	for (size_t i = 0; i < sizeof(sockstat_keys) / sizeof(sockstat_keys[0]); i++)
		if (strcmp(sockstat_keys[i].key, name) == 0)
			put_gauge(c->s, c->fr, sockstat_keys[i].metric, (double)value);
	return 0;
}

static void probe_netstat(struct sampler *s, struct frame *fr)
{
	struct kv_ctx c = {.s = s, .fr = fr};
	static const char *const files[] = {"netstat", "snmp"};
	static const enum pf_slot slots[] = {PF_NETSTAT, PF_SNMP};
	int64_t vals[NTCP];
	uint64_t found = 0;
	int r;

	/* Both files parse before any value is used: half a file would look like counters that stopped moving. */
	for (size_t i = 0; i < 2; i++) {
		r = read_netns(s, &s->pf[slots[i]], files[i]);
		if (r == 0)
			r = parse_netstat_pick(s->pb.data, s->pb.len, s->tcp_want, NTCP, vals, &found);
		if (r < 0) {
			probe_fail(s, fr, PROBE_NETSTAT, r, "%s: %s", files[i], strerror(-r));
			return;
		}
	}
	for (size_t i = 0; i < NTCP; i++) {
		if (!(found >> i & 1))
			continue;
		if (tcp_keys[i].gauge)
			put_gauge(s, fr, tcp_keys[i].metric, (double)vals[i]);
		else if (vals[i] >= 0)
			put_counter(s, fr, tcp_keys[i].metric, (uint64_t)vals[i]);
	}
	r = read_netns(s, &s->pf[PF_SOCKSTAT], "sockstat");
	if (r == 0)
		r = parse_sockstat(s->pb.data, s->pb.len, on_sockstat, &c);
	if (r < 0) {
		probe_fail(s, fr, PROBE_NETSTAT, r, "sockstat: %s", strerror(-r));
		return;
	}
	probe_ok(s, fr, PROBE_NETSTAT);
}

static void probe_softnet(struct sampler *s, struct frame *fr)
{
	struct softnet_cpu rows[MAX_CPUS];
	uint64_t processed = 0, dropped = 0, squeeze = 0;
	size_t n = 0;
	int r = read_netns(s, &s->pf[PF_SOFTNET], "softnet_stat");

	if (r == 0)
		r = parse_softnet(s->pb.data, s->pb.len, rows, MAX_CPUS, &n);
	if (r < 0) {
		probe_fail(s, fr, PROBE_SOFTNET, r, "softnet_stat: %s", strerror(-r));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t cpu = rows[i].cpu;

		putk_counter(s, fr, KEY(K_SOFTNET, cpu, 0), rows[i].processed, "softnet.%u.processed", cpu);
		putk_counter(s, fr, KEY(K_SOFTNET, cpu, 1), rows[i].dropped, "softnet.%u.dropped", cpu);
		putk_counter(s, fr, KEY(K_SOFTNET, cpu, 2), rows[i].time_squeeze, "softnet.%u.time_squeeze", cpu);
		processed += rows[i].processed;
		dropped += rows[i].dropped;
		squeeze += rows[i].time_squeeze;
	}
	/* softnet counters are 32-bit in the kernel: a wrap on one CPU makes the total go backwards and that
	 * tick's total is then missing, as it should be. */
	put_counter(s, fr, "softnet.processed", processed);
	put_counter(s, fr, "softnet.dropped", dropped);
	put_counter(s, fr, "softnet.time_squeeze", squeeze);
	probe_ok(s, fr, PROBE_SOFTNET);
}

static void probe_softirqs(struct sampler *s, struct frame *fr)
{
	uint64_t rx[MAX_CPUS], tx[MAX_CPUS], trx = 0, ttx = 0;
	size_t n = 0;
	int r = read_proc(s, &s->pf[PF_SOFTIRQS], "/proc/softirqs");

	if (r == 0)
		r = parse_softirqs(s->pb.data, s->pb.len, rx, tx, MAX_CPUS, &n);
	if (r < 0) {
		probe_fail(s, fr, PROBE_SOFTIRQS, r, "softirqs: %s", strerror(-r));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		putk_counter(s, fr, KEY(K_SOFTIRQ, i, 0), rx[i], "softirq.%zu.net_rx", i);
		putk_counter(s, fr, KEY(K_SOFTIRQ, i, 1), tx[i], "softirq.%zu.net_tx", i);
		trx += rx[i];
		ttx += tx[i];
	}
	put_counter(s, fr, "softirq.net_rx", trx);
	put_counter(s, fr, "softirq.net_tx", ttx);
	probe_ok(s, fr, PROBE_SOFTIRQS);
}

static uint64_t cpu_sum(const struct cpu_times *t)
{
	return t->user + t->nice + t->system + t->idle + t->iowait + t->irq + t->softirq + t->steal;
}

/* Shares of one CPU's time in this tick, in percent. */
static void put_cpu_shares(struct sampler *s, struct frame *fr, const char *label, size_t slot,
			   const struct cpu_times *now)
{
	const struct cpu_times *p = &s->prev_cpu[slot];
	uint64_t total;
	static const char *const names[] = {"user", "system", "irq", "softirq", "idle", "iowait", "steal"};
	uint64_t a[7], b[7];

	if (s->have_prev_cpu[slot] && cpu_sum(now) > cpu_sum(p)) {
		a[0] = now->user + now->nice, b[0] = p->user + p->nice;
		a[1] = now->system, b[1] = p->system;
		a[2] = now->irq, b[2] = p->irq;
		a[3] = now->softirq, b[3] = p->softirq;
		a[4] = now->idle, b[4] = p->idle;
		a[5] = now->iowait, b[5] = p->iowait;
		a[6] = now->steal, b[6] = p->steal;
		total = cpu_sum(now) - cpu_sum(p);
		for (size_t i = 0; i < 7; i++)
			putk_gauge(s, fr, KEY(K_CPU, slot, i),
				   a[i] >= b[i] ? 100.0 * (double)(a[i] - b[i]) / (double)total : NAN, "cpu.%s.%s",
				   label, names[i]);
	}
	s->prev_cpu[slot] = *now;
	s->have_prev_cpu[slot] = true;
}

static void probe_stat(struct sampler *s, struct frame *fr)
{
	struct cpu_times cpus[MAX_CPUS];
	struct proc_stat st = {.cpus = cpus};
	char label[16];
	int r = read_proc(s, &s->pf[PF_STAT], "/proc/stat");

	if (r == 0)
		r = parse_stat(s->pb.data, s->pb.len, &st, MAX_CPUS);
	if (r < 0) {
		probe_fail(s, fr, PROBE_STAT, r, "stat: %s", strerror(-r));
		return;
	}
	put_cpu_shares(s, fr, "all", 0, &st.total);
	for (size_t i = 0; i < st.ncpu; i++) {
		if (st.cpus[i].cpu < 0 || st.cpus[i].cpu >= MAX_CPUS)
			continue;
		snprintf(label, sizeof(label), "%d", st.cpus[i].cpu);
		put_cpu_shares(s, fr, label, (size_t)st.cpus[i].cpu + 1, &st.cpus[i]);
	}
	put_counter(s, fr, "sys.ctxt", st.ctxt);
	put_gauge(s, fr, "sys.procs_running", (double)st.procs_running);
	put_gauge(s, fr, "sys.cpus", (double)st.ncpu);
	probe_ok(s, fr, PROBE_STAT);
}

static void add_net_irq(struct sampler *s, unsigned irq)
{
	for (size_t i = 0; i < s->nnet_irqs; i++)
		if (s->net_irqs[i] == irq)
			return;
	if (s->nnet_irqs < MAX_NET_IRQS)
		s->net_irqs[s->nnet_irqs++] = irq;
}

/* The IRQs of a NIC's PCI function: DEV/device/msi_irqs, or its parent's for virtio-net. */
static void add_msi_irqs(struct sampler *s, const char *dev)
{
	static const char *const where[] = {"device/msi_irqs", "device/../msi_irqs"};
	char path[CONFIG_PATH_MAX + 96], rel[96];
	struct dirent *de;
	DIR *d = NULL;

	for (size_t i = 0; i < 2 && !d; i++) {
		snprintf(rel, sizeof(rel), "/sys/class/net/%.16s/%s", dev, where[i]);
		rooted(s, path, sizeof(path), rel);
		d = opendir(path);
	}
	if (!d)
		return;
	while ((de = readdir(d))) {
		int64_t irq;

		if (str_to_i64(de->d_name, 0, 1 << 20, &irq) == 0)
			add_net_irq(s, (unsigned)irq);
	}
	closedir(d);
}

static bool is_net_irq(const struct sampler *s, const char *desc)
{
	if (strstr(desc, "virtio") && (strstr(desc, "-input") || strstr(desc, "-output")))
		return true;
	for (size_t i = 0; i < s->nnetifs; i++) {
		const char *p = strstr(desc, s->netifs[i]);
		size_t n = strlen(s->netifs[i]);

		if (p && (p == desc || p[-1] == ' ') && (p[n] == '\0' || p[n] == '-' || p[n] == ' ' || p[n] == '@'))
			return true;
	}
	return false;
}

/* NIC IRQs named in /proc/interrupts (drivers without msi_irqs in sysfs). */
static void add_irqs_by_name(struct sampler *s, const struct irq_table *t)
{
	for (size_t i = 0; i < t->nirq; i++) {
		int64_t irq;

		if (is_net_irq(s, t->rows[i].desc) && str_to_i64(t->rows[i].id, 0, 1 << 20, &irq) == 0)
			add_net_irq(s, (unsigned)irq);
	}
}

/*
 * Which IRQs belong to NICs, and whether each can be read alone. /proc/interrupts costs the kernel a line per IRQ
 * per CPU to format (several ms on a big host), so it is read only here, once a minute, unless the kernel lacks
 * /sys/kernel/irq/N/per_cpu_count.
 */
static void discover_net_irqs(struct sampler *s)
{
	char path[CONFIG_PATH_MAX + 64];
	struct dirent *de;
	DIR *d;

	s->netifs_tick = s->tick;
	s->nnetifs = s->nnet_irqs = 0;
	close_files(s->pf_irq, KEEP_MAX); /* an IRQ freed since would otherwise stay open */
	rooted(s, path, sizeof(path), "/sys/class/net");
	d = opendir(path);
	if (d) {
		while ((de = readdir(d)) && s->nnetifs < 16) {
			if (de->d_name[0] == '.' || strcmp(de->d_name, "lo") == 0 || strlen(de->d_name) >= 16)
				continue;
			strcpy(s->netifs[s->nnetifs++], de->d_name);
			add_msi_irqs(s, de->d_name);
		}
		closedir(d);
	}
	if (s->nnet_irqs == 0 && read_proc(s, &s->pf[PF_INTERRUPTS], "/proc/interrupts") == 0) {
		struct irq_table t = {0};

		if (parse_interrupts(s->pb.data, s->pb.len, &t) == 0)
			add_irqs_by_name(s, &t);
		irq_table_free(&t);
	}
	s->net_irqs_sysfs = false;
	if (s->nnet_irqs) {
		char rel[64];

		snprintf(rel, sizeof(rel), "/sys/kernel/irq/%u/per_cpu_count", s->net_irqs[0]);
		rooted(s, path, sizeof(path), rel);
		s->net_irqs_sysfs = access(path, R_OK) == 0;
	}
}

static void put_irq(struct sampler *s, struct frame *fr, unsigned irq, const uint64_t *counts, size_t n)
{
	uint64_t total = 0;

	for (size_t c = 0; c < n; c++) {
		putk_counter(s, fr, KEY(K_IRQ, irq, c), counts[c], "irq.%u.%zu", irq, c);
		total += counts[c];
	}
	putk_counter(s, fr, KEY(K_IRQ, irq, 0xffff), total, "irq.%u.total", irq);
}

/* Old kernels: the whole /proc/interrupts every tick, NIC rows only (columns are online CPUs in order). */
static int irqs_from_proc(struct sampler *s, struct frame *fr)
{
	struct irq_table t = {0};
	int r = read_proc(s, &s->pf[PF_INTERRUPTS], "/proc/interrupts");

	if (r == 0)
		r = parse_interrupts(s->pb.data, s->pb.len, &t);
	if (r < 0)
		return r;
	for (size_t i = 0; i < t.nirq; i++) {
		int64_t irq;

		if (str_to_i64(t.rows[i].id, 0, 1 << 20, &irq) < 0)
			continue;
		for (size_t j = 0; j < s->nnet_irqs; j++)
			if (s->net_irqs[j] == (unsigned)irq)
				put_irq(s, fr, (unsigned)irq, &t.counts[i * t.ncpu], t.ncpu);
	}
	irq_table_free(&t);
	return 0;
}

static void probe_interrupts(struct sampler *s, struct frame *fr)
{
	uint64_t counts[MAX_CPUS];
	char path[64];
	size_t n;
	int r = 0;

	if (due(s, s->netifs_tick, NET_IRQS_EVERY_MS))
		discover_net_irqs(s);
	if (!s->net_irqs_sysfs) {
		r = irqs_from_proc(s, fr);
	} else {
		for (size_t i = 0; i < s->nnet_irqs && r == 0; i++) {
			snprintf(path, sizeof(path), "/sys/kernel/irq/%u/per_cpu_count", s->net_irqs[i]);
			r = read_proc(s, i < KEEP_MAX ? &s->pf_irq[i] : &s->pf[PF_SCRATCH], path);
			if (r == 0)
				r = parse_irq_counts(s->pb.data, s->pb.len, counts, MAX_CPUS, &n);
			if (r == 0) {
				put_irq(s, fr, s->net_irqs[i], counts, n);
			}
		}
		if (r < 0)
			s->netifs_tick = 0; /* an IRQ went away (driver reload): discover again next tick */
	}
	if (r < 0) {
		probe_fail(s, fr, PROBE_INTERRUPTS, r, "NIC IRQ counts: %s", strerror(-r));
		return;
	}
	put_gauge(s, fr, "irq.net_irqs", (double)s->nnet_irqs);
	probe_ok(s, fr, PROBE_INTERRUPTS);
}

/* ---- nginx ----------------------------------------------------------------------------------------------- */

/*
 * stub_status is fetched from inside nginx's network namespace: where nginx runs in a namespace or container,
 * 127.0.0.1 in the agent's namespace is another host. Only with the real root (under --root the pid is fake).
 */
static void follow_netns(struct sampler *s)
{
	char path[64];
	struct stat mine, theirs;
	int fd;

	if (s->netns_fd >= 0)
		close(s->netns_fd);
	s->netns_fd = -1;
	s->netns_gen++;
	if (!s->nginx_pid || strcmp(s->cfg.root, "/") != 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)s->nginx_pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		log_warn("cannot open %s (%s): stub_status is fetched from the agent's network namespace", path,
			 strerror(errno));
		return;
	}
	if (fstat(fd, &theirs) < 0 || stat("/proc/self/ns/net", &mine) < 0 ||
	    (mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev)) {
		close(fd);
		return;
	}
	s->netns_fd = fd;
}

static void set_nginx_pid(struct sampler *s, pid_t pid)
{
	if (pid == s->nginx_pid)
		return;
	if (s->nginx_pid && pid)
		log_notice("nginx master pid changed from %d to %d", (int)s->nginx_pid, (int)pid);
	s->nginx_pid = pid;
	s->nworkers = 0;
	if (s->nginx_pidfd >= 0)
		close(s->nginx_pidfd);
	/* Under --root the pid is fake: its liveness is the fake /proc's. */
	s->nginx_pidfd = pid && strcmp(s->cfg.root, "/") == 0 ? pidfd_open(pid, 0) : -1;
	/* Another master may live in another namespace, and its stub_status counters start again: every counter
	 * takes a new base (one tick of missing values) rather than a delta across two sources. */
	counters_free(&s->ctr);
	counters_init(&s->ctr);
	/* The old master's files: its namespace's (which a kept descriptor would hold alive) and its workers'. */
	for (enum pf_slot i = PF_NETSTAT; i <= PF_SOFTNET; i++)
		procfile_close(&s->pf[i]);
	procfile_close(&s->pf[PF_CHILDREN]);
	close_files(s->pf_sched, KEEP_MAX);
	close_files(s->pf_status, KEEP_MAX);
	follow_netns(s);
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The pid in the pid file: read again only when a stat says the file changed (nginx writes it once at start). */
static int read_pid_file(struct sampler *s, pid_t *out)
{
	struct stat st;
	int64_t pid;
	int r;

	/* Like the read below, not under --root: the pid file is nginx's, wherever the tree is. */
	if (stat(s->cfg.pid_file, &st) < 0) {
		s->pidfile_pid = 0;
		return -errno;
	}
	if (s->pidfile_pid && same_file_state(&st, &s->pidfile_st)) {
		*out = s->pidfile_pid;
		return 0;
	}
	s->pidfile_pid = 0;
	r = procfile_read(&s->pf[PF_PIDFILE], s->cfg.pid_file, false, &s->pb, MAX_READ);
	if (r < 0)
		return r;
	while (s->pb.len && isspace((unsigned char)s->pb.data[s->pb.len - 1]))
		s->pb.data[--s->pb.len] = '\0';
	if (str_to_i64(s->pb.data, 1, 0x3fffffff, &pid) < 0)
		return -EBADMSG;
	/* Half-written (nginx truncates, then writes) reads as empty, which is not cached: it fails above. */
	s->pidfile_st = st;
	s->pidfile_pid = (pid_t)pid;
	*out = (pid_t)pid;
	return 0;
}

/* Whether PID (the one the pid file names) is running: its pidfd when it is the master we follow (no path
 * lookup, and not fooled by a reused pid), else a stat of its /proc directory. */
static int nginx_alive(struct sampler *s, pid_t pid)
{
	char path[64], full[CONFIG_PATH_MAX + 64];
	struct stat st;

	/* Signal 0 checks without sending; EPERM (an agent without the right to signal nginx) is alive too. */
	if (pid == s->nginx_pid && s->nginx_pidfd >= 0)
		return pidfd_send_signal(s->nginx_pidfd, 0, NULL, 0) < 0 && errno != EPERM ? -errno : 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	rooted(s, full, sizeof(full), path);
	return stat(full, &st) < 0 ? -errno : 0;
}

static void probe_nginx(struct sampler *s, struct frame *fr)
{
	pid_t pid = 0;
	int r;

	r = read_pid_file(s, &pid);
	if (r == -EBADMSG) {
		set_nginx_pid(s, 0);
		probe_fail(s, fr, PROBE_NGINX, r, "%s: not a pid", s->cfg.pid_file);
		return;
	}
	if (r < 0) {
		set_nginx_pid(s, 0);
		probe_fail(s, fr, PROBE_NGINX, r, "%s: %s (is nginx running?)", s->cfg.pid_file, strerror(-r));
		return;
	}
	r = nginx_alive(s, pid);
	if (r < 0) {
		set_nginx_pid(s, 0);
		probe_fail(s, fr, PROBE_NGINX, r, "pid %d from %s is not running (stale pid file)", (int)pid,
			   s->cfg.pid_file);
		return;
	}
	set_nginx_pid(s, pid);
	probe_ok(s, fr, PROBE_NGINX);
}

/* Workers are the master's children: /proc/PID/task/PID/children (CONFIG_PROC_CHILDREN, on in distro kernels). */
static int list_workers(struct sampler *s, pid_t *out, size_t max, size_t *n)
{
	char path[96];
	const char *p;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)s->nginx_pid, (int)s->nginx_pid);
	r = read_proc(s, &s->pf[PF_CHILDREN], path);
	if (r < 0)
		return r;
	*n = 0;
	for (p = s->pb.data; *p && *n < max;) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v > 0)
			out[(*n)++] = (pid_t)v;
		p = end;
	}
	return 0;
}

static const struct worker_prev *find_prev(const struct worker_prev *prev, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (prev[i].pid == pid)
			return &prev[i];
	return NULL;
}

static void probe_workers(struct sampler *s, struct frame *fr)
{
	pid_t pids[MAX_WORKERS];
	struct worker_prev now[MAX_WORKERS];
	size_t n = 0, m = 0;
	double run = 0, wait = 0, wait_max = 0, vcsw = 0, ivcsw = 0;
	char path[96];
	int r;

	if (!s->nginx_pid) {
		probe_fail(s, fr, PROBE_WORKERS, -ESRCH, "no nginx master");
		return;
	}
	r = list_workers(s, pids, MAX_WORKERS, &n);
	if (r < 0) {
		probe_fail(s, fr, PROBE_WORKERS, r, "children of %d: %s", (int)s->nginx_pid, strerror(-r));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct worker_prev w = {.pid = pids[i]};
		const struct worker_prev *p;
		uint64_t slices;
		struct procfile *sched = i < KEEP_MAX ? &s->pf_sched[i] : &s->pf[PF_SCRATCH];
		struct procfile *status = i < KEEP_MAX ? &s->pf_status[i] : &s->pf[PF_SCRATCH];

		/* A read or parse failing is a worker exiting between the listing and the read: it is left out. */
		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)w.pid);
		if (read_proc(s, sched, path) < 0 ||
		    parse_schedstat(s->pb.data, s->pb.len, &w.run_ns, &w.wait_ns, &slices) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/status", (int)w.pid);
		if (read_proc(s, status, path) < 0 || parse_ctxt_switches(s->pb.data, s->pb.len, &w.vcsw, &w.ivcsw) < 0)
			continue;
		now[m++] = w;
		/* Per-worker deltas: a worker that is new this tick contributes nothing, so a reload is no spike. */
		p = find_prev(s->workers, s->nworkers, w.pid);
		if (!p || w.run_ns < p->run_ns || w.wait_ns < p->wait_ns || w.vcsw < p->vcsw || w.ivcsw < p->ivcsw)
			continue;
		run += (double)(w.run_ns - p->run_ns) / 1e6;
		wait += (double)(w.wait_ns - p->wait_ns) / 1e6;
		if ((double)(w.wait_ns - p->wait_ns) / 1e6 > wait_max)
			wait_max = (double)(w.wait_ns - p->wait_ns) / 1e6;
		vcsw += (double)(w.vcsw - p->vcsw);
		ivcsw += (double)(w.ivcsw - p->ivcsw);
	}
	/* Fewer workers than last tick (a reload with a smaller worker_processes): the rest are dead. */
	for (size_t i = n; i < KEEP_MAX; i++) {
		procfile_close(&s->pf_sched[i]);
		procfile_close(&s->pf_status[i]);
	}
	memcpy(s->workers, now, m * sizeof(now[0]));
	s->nworkers = m;
	put_gauge(s, fr, "nginx.workers", (double)m);
	put_gauge(s, fr, "nginx.worker_run_ms", run);
	put_gauge(s, fr, "nginx.worker_wait_ms", wait);
	put_gauge(s, fr, "nginx.worker_wait_max_ms", wait_max);
	put_gauge(s, fr, "nginx.worker_vcsw", vcsw);
	put_gauge(s, fr, "nginx.worker_ivcsw", ivcsw);
	probe_ok(s, fr, PROBE_WORKERS);
}

/* ---- logs ------------------------------------------------------------------------------------------------ */

static void on_access_line(void *ctx, const char *line, size_t len)
{
	struct sampler *s = ctx;
	struct access_rec rec;

	if (parse_access_line(line, len, &rec) < 0) {
		s->acc_bad++;
		return;
	}
	s->acc_n++;
	s->acc_class[rec.status / 100]++;
	s->acc_req_ms += rec.request_ms;
	s->acc_up_ms += rec.upstream_ms;
	hist_add(&s->tick_hist, rec.request_ms);
}

static void on_error_line(void *ctx, const char *line, size_t len)
{
	struct sampler *s = ctx;

	s->err_kind[parse_errorlog_line(line, len)]++;
}

static int ensure_tail(struct logtail **t, char *saved, const char *path)
{
	int r;

	if (*t)
		return 0;
	r = logtail_open(path, t);
	if (r == 0)
		snprintf(saved, CONFIG_PATH_MAX, "%s", path);
	return r;
}

static void probe_access(struct sampler *s, struct frame *fr)
{
	bool more = false;
	int r;

	s->acc_n = s->acc_req_ms = s->acc_up_ms = s->acc_bad = 0;
	memset(s->acc_class, 0, sizeof(s->acc_class));
	hist_reset(&s->tick_hist);
	r = ensure_tail(&s->access, s->access_path, s->cfg.access_log);
	if (r == 0)
		r = logtail_poll(s->access, ACCESS_BYTES_PER_TICK, on_access_line, s, &more);
	if (r < 0) {
		probe_fail(s, fr, PROBE_ACCESSLOG, r, "%s: %s", s->cfg.access_log, strerror(-r));
		return;
	}
	put_gauge(s, fr, "http.requests", (double)s->acc_n);
	for (int c = 1; c <= 5; c++)
		putk_gauge(s, fr, KEY(K_HTTP_CLASS, c, 0), (double)s->acc_class[c], "http.%dxx", c);
	put_gauge(s, fr, "http.unparsed", (double)s->acc_bad);
	put_gauge(s, fr, "http.request_ms_sum", (double)s->acc_req_ms);
	put_gauge(s, fr, "http.upstream_ms_sum", (double)s->acc_up_ms);
	/* nginx rounds request and upstream times separately, so sub-millisecond requests can sum above 1. */
	put_gauge(s, fr, "http.upstream_share",
		  s->acc_req_ms ? fmin(1.0, (double)s->acc_up_ms / (double)s->acc_req_ms) : NAN);
	put_gauge(s, fr, "http.p50_ms", hist_quantile(&s->tick_hist, 0.50));
	put_gauge(s, fr, "http.p90_ms", hist_quantile(&s->tick_hist, 0.90));
	put_gauge(s, fr, "http.p99_ms", hist_quantile(&s->tick_hist, 0.99));
	put_gauge(s, fr, "http.backlog", more ? 1 : 0);
	/* The histogram is stored sparse: a bucket absent from a frame that has http.requests is zero. */
	for (unsigned i = 0; i < HIST_NBUCKETS; i++)
		if (s->tick_hist.b[i])
			putk_gauge(s, fr, KEY(K_HTTP_LAT, i, 0), (double)s->tick_hist.b[i], "http.lat.b%u", i);
	probe_ok(s, fr, PROBE_ACCESSLOG);
}

static void probe_errorlog(struct sampler *s, struct frame *fr)
{
	bool more = false;
	int r;

	memset(s->err_kind, 0, sizeof(s->err_kind));
	r = ensure_tail(&s->errlog, s->errlog_path, s->cfg.error_log);
	if (r == 0)
		r = logtail_poll(s->errlog, ERROR_BYTES_PER_TICK, on_error_line, s, &more);
	if (r < 0) {
		probe_fail(s, fr, PROBE_ERRORLOG, r, "%s: %s", s->cfg.error_log, strerror(-r));
		return;
	}
	for (int k = 1; k < ERRLOG_KIND_COUNT; k++)
		putk_gauge(s, fr, KEY(K_ERRLOG, k, 0), (double)s->err_kind[k], "nginx.err.%s",
			   errlog_kind_name((enum errlog_kind)k));
	probe_ok(s, fr, PROBE_ERRORLOG);
}

/* ---- netlink --------------------------------------------------------------------------------------------- */

static const char *const link_fields[LINK_FIELDS] = {
	"rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped", "rx_missed", "tx_dropped", "rx_errors",
	"tx_errors",
};

/* A link's counters, by the ids cached for its position in the dump; a new name there interns them again. */
static void put_link(struct sampler *s, struct frame *fr, struct link_ids *c,
		     const struct probe_netlink_link_stats *l)
{
	const uint64_t v[LINK_FIELDS] = {
		l->rx_packets, l->tx_packets, l->rx_bytes,   l->tx_bytes,  l->rx_dropped,
		l->rx_missed,  l->tx_dropped, l->rx_errors, l->tx_errors,
	};

	if (!c->valid || strcmp(c->name, l->name) != 0) {
		for (size_t f = 0; f < LINK_FIELDS; f++) {
			char name[METRIC_NAME_MAX];

			snprintf(name, sizeof(name), "link.%.15s.%s", l->name, link_fields[f]);
			if (metric_intern(s->reg, name, &c->id[f]) < 0)
				c->id[f] = 0;
		}
		memcpy(c->name, l->name, sizeof(c->name));
		c->valid = true;
	}
	for (size_t f = 0; f < LINK_FIELDS; f++)
		put_counter_id(s, fr, c->id[f], v[f]);
}

static void probe_netlink(struct sampler *s, struct frame *fr)
{
	struct probe_netlink_listen_queue lq[MAX_LISTEN];
	struct probe_netlink_link_stats links[MAX_LINKS];
	struct probe_netlink_tcp_states st;
	/* The agent's own namespace under a fake root: the nginx pid there is not a real process. */
	pid_t want = strcmp(s->cfg.root, "/") == 0 ? s->nginx_pid : 0;
	size_t nlq = 0, nlinks = 0;
	bool count_states;
	char err[160];
	int r;

	if (s->nl && s->nl_pid != want) {
		probe_netlink_close(s->nl);
		s->nl = NULL;
	}
	if (!s->nl) {
		r = probe_netlink_open(want, &s->nl, err, sizeof(err));
		if (r < 0) {
			probe_fail(s, fr, PROBE_NETLINK, r, "%s", err);
			return;
		}
		s->nl_pid = want;
	}
	if (due(s, s->link_names_tick, LINK_NAMES_EVERY_MS)) {
		probe_netlink_links_renamed(s->nl);
		s->link_names_tick = s->tick;
	}
	/* Listen queues alone cost 0.03 ms (the listening hash only); states see STATES_EVERY_MS. */
	count_states = due(s, s->states_tick, STATES_EVERY_MS);
	r = probe_netlink_tcp(s->nl, lq, MAX_LISTEN, &nlq, count_states ? &st : NULL);
	if (r == 0)
		r = probe_netlink_links(s->nl, links, MAX_LINKS, &nlinks);
	if (r < 0) {
		/* A socket error may mean the namespace is gone: reopen next tick. */
		probe_netlink_close(s->nl);
		s->nl = NULL;
		probe_fail(s, fr, PROBE_NETLINK, r, "netlink dump: %s", strerror(-r));
		return;
	}
	if (count_states) {
		s->states_tick = s->tick;
		put_gauge(s, fr, "tcp.state.established", st.established);
		put_gauge(s, fr, "tcp.state.syn_recv", st.syn_recv);
		put_gauge(s, fr, "tcp.state.time_wait", st.time_wait);
		put_gauge(s, fr, "tcp.state.close_wait", st.close_wait);
		put_gauge(s, fr, "tcp.state.fin_wait", st.fin_wait1 + st.fin_wait2);
		put_gauge(s, fr, "tcp.state.listen", st.listen);
	}
	/* Per port, summed over addresses and reuseport sockets; fill is the fullest socket's share. */
	for (size_t i = 0; i < nlq; i++) {
		uint32_t queued = 0, backlog = 0;
		double fill = 0;
		bool first = true;

		for (size_t j = 0; j < i; j++)
			if (lq[j].port == lq[i].port)
				first = false;
		if (!first)
			continue;
		for (size_t j = i; j < nlq; j++) {
			if (lq[j].port != lq[i].port)
				continue;
			queued += lq[j].queued;
			backlog += lq[j].backlog;
			if (lq[j].backlog && 100.0 * lq[j].queued / lq[j].backlog > fill)
				fill = 100.0 * lq[j].queued / lq[j].backlog;
		}
		putk_gauge(s, fr, KEY(K_LISTEN, lq[i].port, 0), queued, "listen.%u.queued", lq[i].port);
		putk_gauge(s, fr, KEY(K_LISTEN, lq[i].port, 1), backlog, "listen.%u.backlog", lq[i].port);
		putk_gauge(s, fr, KEY(K_LISTEN, lq[i].port, 2), fill, "listen.%u.fill_pct", lq[i].port);
	}
	for (size_t i = 0; i < nlinks; i++)
		put_link(s, fr, &s->link_ids[i], &links[i]);
	probe_ok(s, fr, PROBE_NETLINK);
}

/* ---- stub_status ----------------------------------------------------------------------------------------- */

bool sampler_stub_enabled(const struct sampler *s)
{
	return s->health[PROBE_STUB].enabled;
}

/* curl's socket, created in nginx's namespace; setns() changes only this (pool) thread, and back at once. */
static curl_socket_t stub_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct stub_handle *h = arg;
	curl_socket_t fd;
	int self;

	(void)purpose;
	if (h->netns_fd < 0)
		return socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0 || setns(h->netns_fd, CLONE_NEWNET) < 0) {
		if (self >= 0)
			close(self);
		return CURL_SOCKET_BAD;
	}
	fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
	if (setns(self, CLONE_NEWNET) < 0) {
		/* Cannot happen short of a kernel bug; a pool thread left in nginx's namespace would be wrong. */
		abort();
	}
	close(self);
	return fd;
}

static size_t stub_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct stub_handle *h = arg;
	struct stub_result *res = h->res;
	size_t n = size * nmemb;

	if (res->len + n >= sizeof(res->body))
		return 0; /* a stub_status page is ~100 bytes: anything this big is not one */
	memcpy(res->body + res->len, data, n);
	res->len += n;
	return n;
}

/* A plain http:// URL goes through stubhttp; curl is set up for anything else, or when stubhttp refuses the URL
 * (curl then says what is wrong with it). */
static bool use_stubhttp(struct stub_handle *h)
{
	char err[128];

	if (!h->http && stubhttp_handles(h->url))
		stubhttp_new(h->url, &h->http, err, sizeof(err));
	return h->http != NULL;
}

void *sampler_stub_prepare(struct sampler *s)
{
	struct stub_handle *h = &s->stub;

	if (strcmp(h->url, s->cfg.stub_status_url) != 0) {
		stubhttp_free(h->http);
		h->http = NULL;
		snprintf(h->url, sizeof(h->url), "%s", s->cfg.stub_status_url);
	}
	h->timeout_ms = (long)s->cfg.stub_status_timeout_ms;
	if (!use_stubhttp(h)) {
		if (!h->curl) {
			h->curl = curl_easy_init();
			if (!h->curl)
				return NULL;
		}
		curl_easy_setopt(h->curl, CURLOPT_URL, h->url);
		curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, h->timeout_ms);
		curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, h->timeout_ms);
		curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h->curl, CURLOPT_NOPROXY, "*");
		curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
		curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "ngx-autotune/" PACKAGE_VERSION);
		curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, stub_write);
		curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
		curl_easy_setopt(h->curl, CURLOPT_OPENSOCKETFUNCTION, stub_socket);
		curl_easy_setopt(h->curl, CURLOPT_OPENSOCKETDATA, h);
	}
	/* The fetch owns a duplicate: the loop may switch namespaces (nginx restarted) while it runs. */
	h->netns_fd = s->netns_fd >= 0 ? fcntl(s->netns_fd, F_DUPFD_CLOEXEC, 0) : -1;
	h->netns_gen = s->netns_gen;
	return h;
}

static void fetch_http(struct stub_handle *h, struct stub_result *res)
{
	char err[160];
	int status = 0, r;

	r = stubhttp_get(h->http, h->netns_fd, h->netns_gen, (int)h->timeout_ms, res->body, sizeof(res->body),
			 &res->len, &status, err, sizeof(err));
	if (r < 0) {
		res->err = r;
		snprintf(res->msg, sizeof(res->msg), "%.80s: %.100s", h->url, err);
	} else if (status != 200) {
		res->err = -EPROTO;
		snprintf(res->msg, sizeof(res->msg), "%.100s: HTTP %d (is stub_status on at that location?)", h->url,
			 status);
	}
}

void sampler_stub_fetch(void *handle, struct stub_result *res)
{
	struct stub_handle *h = handle;
	char errbuf[CURL_ERROR_SIZE] = "";
	long code = 0;
	CURLcode rc;

	memset(res, 0, sizeof(*res));
	if (h->http) {
		fetch_http(h, res);
		goto out;
	}
	h->res = res;
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, errbuf);
	rc = curl_easy_perform(h->curl);
	if (rc != CURLE_OK) {
		res->err = rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
		snprintf(res->msg, sizeof(res->msg), "%.80s: %.100s", h->url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
	} else {
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
		if (code != 200) {
			res->err = -EPROTO;
			snprintf(res->msg, sizeof(res->msg), "%.100s: HTTP %ld (is stub_status on at that location?)",
				 h->url, code);
		}
	}
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, NULL);
	h->res = NULL;
out:
	if (h->netns_fd >= 0)
		close(h->netns_fd);
	h->netns_fd = -1;
}

void sampler_stub_apply(struct sampler *s, struct frame *fr, const struct stub_result *res)
{
	struct stub_status st;
	int r = res->err;

	if (r < 0) {
		probe_fail(s, fr, PROBE_STUB, r, "%s", res->msg);
		return;
	}
	r = parse_stub_status(res->body, res->len, &st);
	if (r < 0) {
		probe_fail(s, fr, PROBE_STUB, r, "%s: not a stub_status page", s->cfg.stub_status_url);
		return;
	}
	put_gauge(s, fr, "nginx.active", (double)st.active);
	put_gauge(s, fr, "nginx.reading", (double)st.reading);
	put_gauge(s, fr, "nginx.writing", (double)st.writing);
	put_gauge(s, fr, "nginx.waiting", (double)st.waiting);
	put_counter(s, fr, "nginx.accepts", st.accepts);
	put_counter(s, fr, "nginx.handled", st.handled);
	put_counter(s, fr, "nginx.requests", st.requests);
	probe_ok(s, fr, PROBE_STUB);
}

void sampler_stub_skip(struct sampler *s, struct frame *fr, const char *why)
{
	probe_fail(s, fr, PROBE_STUB, -EBUSY, "%s", why);
}

/* ---- the tick -------------------------------------------------------------------------------------------- */

static void run_stage(struct sampler *s, struct frame *fr, enum probe_stage stage)
{
	for (size_t i = 0; i < NPROBES; i++)
		if (probes[i].stage == stage && s->health[probes[i].id].enabled)
			probes[i].sample(s, fr);
}

void sampler_begin(struct sampler *s, struct frame *fr)
{
	s->tick++;
	run_stage(s, fr, STAGE_BEGIN);
}

void sampler_collect(struct sampler *s, struct frame *fr)
{
	run_stage(s, fr, STAGE_COLLECT);
}
