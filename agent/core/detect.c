/*
 * detect: windows of frames and the detectors of ngx-autotune.policy(5). See detect.h.
 */
#include "detect.h"
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DT_MAX_S 3600.0

/* The scalar metrics the detectors read; one ring of doubles each. */
enum series {
	S_LISTEN_OVERFLOWS, S_LISTEN_DROPS, S_SYNCOOKIES, S_REQQ_FULL, S_SQUEEZE, S_SN_DROPPED, S_SN_PROCESSED,
	S_ACCEPTS, S_HANDLED, S_NGX_REQUESTS, S_WORKERS, S_RUN_MS, S_RUN_MAX, S_RUN_MEAN, S_WAIT_MS, S_ERR_WC,
	S_ERR_NOFILE, S_ERR_ADDR, S_RETRANS, S_OUT_SEGS, S_TIME_WAIT, S_ORPHAN, S_MAX_ORPHANS, S_SERVED_CLOSED,
	S_SERVED_ESTAB, S_CURR_ESTAB, S_CLOSE_WAIT, S_HTTP_REQUESTS, S_HTTP_UNPARSED, S_REQ_MS, S_UP_MS, S_SILENT,
	S_STUB_LATE, S_HTTP_TIMED, S_HTTP_502, S_UP_CONN_MS, S_ERR_REFUSED, S_ERR_CONN_TO, S_ERR_NO_LIVE,
	S_OUT_TW, S_CLIENT_REQ, S_CLIENT_FAIL, S_CLIENT_TO,
	S_COUNT
};

static const char *const series_names[S_COUNT] = {
	[S_LISTEN_OVERFLOWS] = "tcp.listen_overflows", [S_LISTEN_DROPS] = "tcp.listen_drops",
	[S_SYNCOOKIES] = "tcp.syncookies_sent",        [S_REQQ_FULL] = "tcp.reqq_full_drop",
	[S_SQUEEZE] = "softnet.time_squeeze",          [S_SN_DROPPED] = "softnet.dropped",
	[S_SN_PROCESSED] = "softnet.processed",        [S_ACCEPTS] = "nginx.accepts",
	[S_HANDLED] = "nginx.handled",                 [S_NGX_REQUESTS] = "nginx.requests",
	[S_WORKERS] = "nginx.workers",                 [S_RUN_MS] = "nginx.worker_run_ms",
	[S_RUN_MAX] = "nginx.worker_run_max_ms",       [S_RUN_MEAN] = "nginx.worker_run_mean_ms",
	[S_WAIT_MS] = "nginx.worker_wait_ms",          [S_ERR_WC] = "nginx.err.worker_connections",
	[S_ERR_NOFILE] = "nginx.err.too_many_files",   [S_ERR_ADDR] = "nginx.err.addr_not_avail",
	[S_RETRANS] = "tcp.retrans_segs",              [S_OUT_SEGS] = "tcp.out_segs",
	[S_TIME_WAIT] = "tcp.sockstat.time_wait",      [S_ORPHAN] = "tcp.sockstat.orphan",
	[S_MAX_ORPHANS] = "tcp.max_orphans",          [S_SERVED_CLOSED] = "tcp.served.closed",
	[S_SERVED_ESTAB] = "tcp.served.established",
	[S_CURR_ESTAB] = "tcp.curr_estab",             [S_CLOSE_WAIT] = "tcp.served.close_wait",
	[S_HTTP_REQUESTS] = "http.requests",           [S_HTTP_UNPARSED] = "http.unparsed",
	[S_REQ_MS] = "http.request_ms_sum",
	[S_UP_MS] = "http.upstream_ms_sum",
	[S_SILENT] = "tcp.served.silent",
	[S_STUB_LATE] = "nginx.stub_late",            [S_HTTP_TIMED] = "http.timed",
	[S_HTTP_502] = "http.502",
	[S_UP_CONN_MS] = "http.upstream_connect_ms_sum",
	[S_ERR_REFUSED] = "nginx.err.conn_refused",    [S_ERR_CONN_TO] = "nginx.err.connect_timeout",
	[S_ERR_NO_LIVE] = "nginx.err.no_live_upstreams",
	[S_OUT_TW] = "tcp.outgoing.time_wait",
	[S_CLIENT_REQ] = "client.requests",            [S_CLIENT_FAIL] = "client.failures",
	[S_CLIENT_TO] = "client.timeouts",
};

static const char *const detector_names[DETECT_COUNT] = {
	[DETECT_FILE_LIMIT] = "file_limit",
	[DETECT_LISTEN_OVERFLOWS] = "listen_overflows",
	[DETECT_SYN_QUEUE_OVERFLOW] = "syn_queue_overflow",
	[DETECT_WORKER_CONNECTIONS_EXHAUSTED] = "worker_connections_exhausted",
	[DETECT_PORT_EXHAUSTION] = "port_exhaustion",
	[DETECT_SOFTNET_DROPS] = "softnet_drops",
	[DETECT_SOFTNET_SQUEEZE] = "softnet_squeeze",
	[DETECT_SOFTIRQ_IMBALANCE] = "softirq_imbalance",
	[DETECT_WORKER_SATURATION] = "worker_saturation",
	[DETECT_WORKER_IMBALANCE] = "worker_imbalance",
	[DETECT_WORKER_RUN_DELAY] = "worker_run_delay",
	[DETECT_RETRANSMISSIONS] = "retransmissions",
	[DETECT_KEEPALIVE_SHORT] = "keepalive_short",
	[DETECT_TIMEWAIT_PILEUP] = "timewait_pileup",
	[DETECT_FINWAIT_PILEUP] = "finwait_pileup",
	[DETECT_SILENT_CONNECTIONS] = "silent_connections",
};

/*
 * The readings that say something whatever limits the requests, so a blind host (no request count) still acts on
 * them: losses the kernel and nginx count themselves (connections overflowing the listen or SYN queue, packets
 * dropped or squeezed, descriptors, worker connections or local ports run out). The others (CPU, imbalance,
 * reconnects, piles of closing sockets) matter only if nginx is the bottleneck of the requests, which a blind host
 * cannot know.
 */
static const bool counts_itself[DETECT_COUNT] = {
	[DETECT_FILE_LIMIT] = true,
	[DETECT_LISTEN_OVERFLOWS] = true,
	[DETECT_SYN_QUEUE_OVERFLOW] = true,
	[DETECT_WORKER_CONNECTIONS_EXHAUSTED] = true,
	[DETECT_PORT_EXHAUSTION] = true,
	[DETECT_SOFTNET_DROPS] = true,
	[DETECT_SOFTNET_SQUEEZE] = true,
};

static const char *const advisory_names[DETECT_ADV_COUNT] = {
	[DETECT_ADV_CLOSE_WAIT] = "close_wait_pileup",
	[DETECT_ADV_FILE_LIMIT] = "file_limit",
};

struct detect {
	struct detect_config cfg;
	const struct metric_registry *reg;
	uint32_t seen_max_id;       /* the registry's size when ids were last resolved */
	uint32_t ids[S_COUNT];      /* 0: not interned yet */
	uint32_t *cpu_ids;          /* [cpus_max]: cpu.N.softirq */
	uint32_t *rx_ids;           /* [cpus_max]: softirq.N.net_rx */
	uint32_t *idle_ids;         /* [cpus_max]: cpu.N.idle */
	uint32_t link_ids[DETECT_LINKS_MAX]; /* link.DEV.rx_packets, in the order they were interned */
	char link_dev[DETECT_LINKS_MAX][DETECT_DEV_MAX];
	size_t nlinks;
	size_t head, count;         /* ring position of the next tick, ticks held */
	double *dt;                 /* [window]: seconds of each tick, 0 when it keeps no rate */
	int64_t *ts;                /* [window] */
	double *val;                /* [S_COUNT][window] */
	float *cpu_soft;            /* [cpus_max][window]: softirq share in percent */
	float *cpu_rx;              /* [cpus_max][window]: NET_RX softirqs */
	float *cpu_idle;            /* [cpus_max][window]: idle share in percent */
	float *link_rx;             /* [DETECT_LINKS_MAX][window]: packets received */
	double *scratch;            /* [cpus_max]: the median's sort */
	double *mean_soft, *mean_idle; /* [cpus_max]: each CPU's means over the window (NAN: too few ticks) */
};

void detect_config_default(struct detect_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->window_ticks = 60;
	cfg->min_ticks = 30;
	cfg->min_event_ticks = 3;
	cfg->cpus_max = 256;
	cfg->upstream_share_max = 0.9;
	cfg->idle_rps = 1.0;
	cfg->min_out_segs = 1000;
	cfg->min_conns = 100;
	cfg->min_worker_ms = 100;
	cfg->worker_busy_min = 0.5;
	cfg->keepalive_enough = 500;
	cfg->close_wait_min = 100;
	cfg->gross_ticks = 8;
	cfg->gross_p = 1e-6;
	cfg->gross_floor_rate = 10.0;
	cfg->orphan_share_min = 0.25;
	cfg->connect_fail_share = 0.01;
	cfg->gateway_share = 0.05;
	cfg->connect_share_max = 0.2;
	cfg->outgoing_tw_share = 0.5;
	cfg->stub_busy_share = 0.9;
	/* As the shipped policies' triggers; timewait_pileup has no knob, half the port range is already a risk. */
	cfg->threshold[DETECT_FILE_LIMIT] = 0;
	cfg->threshold[DETECT_LISTEN_OVERFLOWS] = 0;
	cfg->threshold[DETECT_SYN_QUEUE_OVERFLOW] = 0;
	cfg->threshold[DETECT_WORKER_CONNECTIONS_EXHAUSTED] = 0;
	cfg->threshold[DETECT_PORT_EXHAUSTION] = 0;
	cfg->threshold[DETECT_SOFTNET_DROPS] = 0;
	cfg->threshold[DETECT_SOFTNET_SQUEEZE] = 1;
	cfg->threshold[DETECT_SOFTIRQ_IMBALANCE] = 50;
	cfg->threshold[DETECT_WORKER_SATURATION] = 0.8;
	cfg->threshold[DETECT_WORKER_IMBALANCE] = 1.25;
	cfg->threshold[DETECT_WORKER_RUN_DELAY] = 0.1;
	cfg->threshold[DETECT_RETRANSMISSIONS] = 0.01;
	cfg->threshold[DETECT_KEEPALIVE_SHORT] = 0.5;
	cfg->threshold[DETECT_TIMEWAIT_PILEUP] = 0.5;
	cfg->threshold[DETECT_FINWAIT_PILEUP] = 50;
	cfg->threshold[DETECT_SILENT_CONNECTIONS] = 100;
}

static bool bad_setting(double v)
{
	return isnan(v) || isinf(v) || v < 0;
}

int detect_new(const struct detect_config *cfg, struct detect **out)
{
	struct detect *d;
	size_t w = cfg->window_ticks, nc = cfg->cpus_max;

	*out = NULL;
	if (w == 0 || w > DETECT_WINDOW_MAX || cfg->min_ticks > w || nc == 0 || nc > DETECT_CPUS_MAX)
		return -EINVAL;
	if (bad_setting(cfg->upstream_share_max) || cfg->upstream_share_max > 1 || bad_setting(cfg->idle_rps) ||
	    bad_setting(cfg->min_out_segs) || bad_setting(cfg->min_conns) || bad_setting(cfg->min_worker_ms) ||
	    bad_setting(cfg->worker_busy_min) || cfg->worker_busy_min > 1 || bad_setting(cfg->keepalive_enough) ||
	    bad_setting(cfg->close_wait_min) || bad_setting(cfg->orphan_share_min) || cfg->orphan_share_min > 1 ||
	    bad_setting(cfg->connect_fail_share) || cfg->connect_fail_share > 1 || bad_setting(cfg->gateway_share) ||
	    cfg->gateway_share > 1 || bad_setting(cfg->connect_share_max) || cfg->connect_share_max > 1 ||
	    bad_setting(cfg->outgoing_tw_share) || cfg->outgoing_tw_share > 1 || bad_setting(cfg->stub_busy_share) ||
	    cfg->gross_ticks > w || !(cfg->gross_p > 0 && cfg->gross_p < 1) ||
	    !(cfg->gross_floor_rate > 0) || isinf(cfg->gross_floor_rate))
		return -EINVAL;
	for (size_t i = 0; i < DETECT_COUNT; i++)
		if (isnan(cfg->threshold[i]) || isinf(cfg->threshold[i]))
			return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cfg = *cfg;
	if (d->cfg.min_ticks == 0)
		d->cfg.min_ticks = 1;
	d->cpu_ids = calloc(nc, sizeof(*d->cpu_ids));
	d->rx_ids = calloc(nc, sizeof(*d->rx_ids));
	d->idle_ids = calloc(nc, sizeof(*d->idle_ids));
	d->dt = calloc(w, sizeof(*d->dt));
	d->ts = calloc(w, sizeof(*d->ts));
	d->val = calloc((size_t)S_COUNT * w, sizeof(*d->val));
	d->cpu_soft = calloc(nc * w, sizeof(*d->cpu_soft));
	d->cpu_rx = calloc(nc * w, sizeof(*d->cpu_rx));
	d->cpu_idle = calloc(nc * w, sizeof(*d->cpu_idle));
	d->link_rx = calloc((size_t)DETECT_LINKS_MAX * w, sizeof(*d->link_rx));
	d->scratch = calloc(nc, sizeof(*d->scratch));
	d->mean_soft = calloc(nc, sizeof(*d->mean_soft));
	d->mean_idle = calloc(nc, sizeof(*d->mean_idle));
	if (!d->cpu_ids || !d->rx_ids || !d->idle_ids || !d->dt || !d->ts || !d->val || !d->cpu_soft || !d->cpu_rx ||
	    !d->cpu_idle || !d->link_rx || !d->scratch || !d->mean_soft || !d->mean_idle) {
		detect_free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void detect_free(struct detect *d)
{
	if (!d)
		return;
	free(d->cpu_ids);
	free(d->rx_ids);
	free(d->idle_ids);
	free(d->dt);
	free(d->ts);
	free(d->val);
	free(d->cpu_soft);
	free(d->cpu_rx);
	free(d->cpu_idle);
	free(d->link_rx);
	free(d->scratch);
	free(d->mean_soft);
	free(d->mean_idle);
	free(d);
}

void detect_reset(struct detect *d)
{
	d->head = 0;
	d->count = 0;
}

/* Look up the names not interned yet; cheap when the registry has not grown since the last time. */
static void resolve(struct detect *d)
{
	char name[METRIC_NAME_MAX];
	uint32_t max = metric_max_id(d->reg), from = d->seen_max_id;

	if (max == d->seen_max_id)
		return;
	d->seen_max_id = max;
	/* Every new link.DEV.rx_packets is followed, the first DETECT_LINKS_MAX names (a store's old names count). */
	for (uint32_t id = from + 1; id <= max && d->nlinks < DETECT_LINKS_MAX; id++) {
		const char *nm = metric_name(d->reg, id), *dev, *end;
		size_t len;

		if (!nm || strncmp(nm, "link.", 5) != 0)
			continue;
		dev = nm + 5;
		end = strrchr(dev, '.');
		len = end ? (size_t)(end - dev) : 0;
		if (!end || strcmp(end, ".rx_packets") != 0 || len == 0 || len >= DETECT_DEV_MAX)
			continue;
		memcpy(d->link_dev[d->nlinks], dev, len);
		d->link_dev[d->nlinks][len] = '\0';
		d->link_ids[d->nlinks++] = id;
	}
	for (size_t i = 0; i < S_COUNT; i++)
		if (!d->ids[i])
			(void)metric_lookup(d->reg, series_names[i], &d->ids[i]);
	for (size_t c = 0; c < d->cfg.cpus_max; c++) {
		if (!d->cpu_ids[c]) {
			snprintf(name, sizeof(name), "cpu.%zu.softirq", c);
			(void)metric_lookup(d->reg, name, &d->cpu_ids[c]);
		}
		if (!d->rx_ids[c]) {
			snprintf(name, sizeof(name), "softirq.%zu.net_rx", c);
			(void)metric_lookup(d->reg, name, &d->rx_ids[c]);
		}
		if (!d->idle_ids[c]) {
			snprintf(name, sizeof(name), "cpu.%zu.idle", c);
			(void)metric_lookup(d->reg, name, &d->idle_ids[c]);
		}
	}
}

/* FR's value of ID, NAN when absent or not a usable (finite, non-negative) number. */
static double get(const struct frame *fr, uint32_t id)
{
	double v;

	if (!id || !frame_get(fr, id, &v) || isnan(v) || isinf(v) || v < 0)
		return NAN;
	return v;
}

int detect_push(struct detect *d, const struct metric_registry *reg, const struct frame *fr)
{
	size_t w = d->cfg.window_ticks, h = d->head;
	double dt = fr->dt_s;

	if (!reg || (d->reg && d->reg != reg))
		return -EINVAL;
	d->reg = reg;
	resolve(d);
	d->dt[h] = (isnan(dt) || dt <= 0 || dt > DT_MAX_S) ? 0 : dt;
	d->ts[h] = fr->ts_ms;
	for (size_t i = 0; i < S_COUNT; i++)
		d->val[i * w + h] = get(fr, d->ids[i]);
	for (size_t c = 0; c < d->cfg.cpus_max; c++) {
		double s = get(fr, d->cpu_ids[c]), r = get(fr, d->rx_ids[c]), idle = get(fr, d->idle_ids[c]);

		/* A share is a percentage; anything above is garbage, not a busier CPU. */
		d->cpu_soft[c * w + h] = (float)(s > 100 ? NAN : s);
		d->cpu_rx[c * w + h] = (float)r;
		d->cpu_idle[c * w + h] = (float)(idle > 100 ? NAN : idle);
	}
	for (size_t l = 0; l < d->nlinks; l++)
		d->link_rx[l * w + h] = (float)get(fr, d->link_ids[l]);
	d->head = (h + 1) % w;
	if (d->count < w)
		d->count++;
	return 0;
}

/* ---- window aggregates ------------------------------------------------------------------------------------- */

/* Over the ticks where a series has a value: its sum, their seconds, how many, how many were above zero. */
struct agg {
	double sum, dt;
	size_t n, events;
	double first, last; /* oldest and newest values present */
};

/* Index of the I-th oldest tick held. */
static size_t slot(const struct detect *d, size_t i)
{
	size_t w = d->cfg.window_ticks;

	return (d->head + w - d->count + i) % w;
}

static struct agg aggregate(const struct detect *d, enum series s)
{
	struct agg a = {0, 0, 0, 0, NAN, NAN};
	const double *v = d->val + (size_t)s * d->cfg.window_ticks;

	for (size_t i = 0; i < d->count; i++) {
		size_t k = slot(d, i);

		if (isnan(v[k]))
			continue;
		a.sum += v[k];
		a.dt += d->dt[k];
		a.n++;
		a.events += v[k] > 0;
		if (isnan(a.first))
			a.first = v[k];
		a.last = v[k];
	}
	return a;
}

/* Sums of two counters over the ticks where both have a value. */
static void aggregate_pair(const struct detect *d, enum series x, enum series y, struct agg *ax, struct agg *ay)
{
	const double *vx = d->val + (size_t)x * d->cfg.window_ticks, *vy = d->val + (size_t)y * d->cfg.window_ticks;

	memset(ax, 0, sizeof(*ax));
	memset(ay, 0, sizeof(*ay));
	for (size_t i = 0; i < d->count; i++) {
		size_t k = slot(d, i);

		if (isnan(vx[k]) || isnan(vy[k]))
			continue;
		ax->sum += vx[k], ay->sum += vy[k];
		ax->dt += d->dt[k], ay->dt += d->dt[k];
		ax->n++, ay->n++;
		ax->events += vx[k] > 0, ay->events += vy[k] > 0;
	}
}

/* ---- readings ---------------------------------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void say(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, DETECT_TEXT_MAX, fmt, ap);
	va_end(ap);
}

static void invalid(struct detect_reading *r, const char *why)
{
	r->valid = r->sustained = r->active = false;
	r->value = NAN;
	say(r->evidence, "%s", why);
}

static void finish(const struct detect *d, struct detect_reading *r, double value, double window_s, bool sustained)
{
	r->valid = !isnan(value);
	r->value = value;
	r->window_s = window_s;
	r->sustained = r->valid && sustained;
	r->active = r->sustained && value > d->cfg.threshold[r->id];
}

/*
 * Detection that scales with the evidence: a counter seen in every one of the last gross_ticks ticks, with more
 * events than a Poisson rate at its threshold explains (at gross_p), is a gross symptom, acted on without waiting
 * for a full window (2000 drops a second is not a blip; 3 overflows a minute still need the long window). The
 * rate and the seconds of those ticks go to *RATE and *DT.
 */
static bool gross_run(const struct detect *d, enum series s, double threshold, double *rate, double *dt)
{
	const double *v = d->val + (size_t)s * d->cfg.window_ticks;
	size_t g = d->cfg.gross_ticks;
	double k = 0, t = 0, lambda = threshold > d->cfg.gross_floor_rate ? threshold : d->cfg.gross_floor_rate;

	if (g == 0 || d->count < g)
		return false;
	for (size_t i = d->count - g; i < d->count; i++) {
		size_t j = slot(d, i);

		if (isnan(v[j]) || !(v[j] > 0) || !(d->dt[j] > 0))
			return false;
		k += v[j];
		t += d->dt[j];
	}
	*rate = k / t;
	*dt = t;
	return k < 1e15 && stats_poisson_tail((uint64_t)k, lambda * t) < d->cfg.gross_p;
}

/* Whether series S counted an event in one of the last gross_ticks ticks (or of the ticks held, if fewer). */
static bool recent_event(const struct detect *d, enum series s)
{
	const double *v = d->val + (size_t)s * d->cfg.window_ticks;
	size_t g = d->cfg.gross_ticks ? d->cfg.gross_ticks : 1;

	for (size_t i = d->count > g ? d->count - g : 0; i < d->count; i++)
		if (v[slot(d, i)] > 0)
			return true;
	return false;
}

/* A per-second rate of one counter: the detectors whose unit is "METRIC per second". */
static void rate_reading(const struct detect *d, struct detect_reading *r, enum series s)
{
	struct agg a = aggregate(d, s);
	double grate, gdt;
	bool gross = gross_run(d, s, d->cfg.threshold[r->id], &grate, &gdt);

	if (gross && (a.n < d->cfg.min_ticks || a.dt <= 0)) {
		finish(d, r, grate, gdt, true);
		r->gross = r->active;
		say(r->evidence, "%s: %.0f in %.0f s (%.3g/s), in each of the last %zu ticks (gross)", series_names[s],
		    grate * gdt, gdt, grate, d->cfg.gross_ticks);
		return;
	}
	if (a.n < d->cfg.min_ticks || a.dt <= 0) {
		say(r->evidence, "%s: %zu of %zu ticks with data, %zu needed", series_names[s], a.n, d->count,
		    d->cfg.min_ticks);
		r->valid = false;
		r->value = NAN;
		return;
	}
	finish(d, r, a.sum / a.dt, a.dt, a.events >= d->cfg.min_event_ticks);
	r->gross = gross && r->active;
	say(r->evidence, "%s: %.0f in %.0f s (%.3g/s), in %zu of %zu ticks", series_names[s], a.sum, a.dt,
	    a.sum / a.dt, a.events, a.n);
}

static void read_listen(const struct detect *d, struct detect_reading *r)
{
	struct agg drops = aggregate(d, S_LISTEN_DROPS);
	size_t len;

	rate_reading(d, r, S_LISTEN_OVERFLOWS);
	len = strlen(r->evidence);
	if (r->valid && drops.n > 0)
		snprintf(r->evidence + len, DETECT_TEXT_MAX - len, "; listen drops %.0f", drops.sum);
}

static void read_syn(const struct detect *d, struct detect_reading *r)
{
	struct agg c = aggregate(d, S_SYNCOOKIES), q = aggregate(d, S_REQQ_FULL);
	double sum = 0, dt = 0;
	size_t n = c.n > q.n ? c.n : q.n, events = c.events > q.events ? c.events : q.events;

	/* Either counter may be absent on a kernel; the rate is the sum of the rates of those present. */
	if (n < d->cfg.min_ticks) {
		say(r->evidence, "tcp.syncookies_sent and tcp.reqq_full_drop: %zu of %zu ticks with data, %zu needed",
		    n, d->count, d->cfg.min_ticks);
		r->valid = false;
		r->value = NAN;
		return;
	}
	if (c.n >= d->cfg.min_ticks && c.dt > 0)
		sum += c.sum / c.dt, dt = c.dt;
	if (q.n >= d->cfg.min_ticks && q.dt > 0)
		sum += q.sum / q.dt, dt = q.dt > dt ? q.dt : dt;
	if (dt <= 0) {
		invalid(r, "tcp.syncookies_sent and tcp.reqq_full_drop: no tick with a time");
		return;
	}
	finish(d, r, sum, dt, events >= d->cfg.min_event_ticks);
	say(r->evidence, "SYN queue: %.0f syncookies sent, %.0f requests dropped (queue full) in %.0f s (%.3g/s)",
	    c.sum, q.sum, dt, sum);
}

static void read_worker_connections(const struct detect *d, struct detect_reading *r)
{
	struct agg acc, han, wc = aggregate(d, S_ERR_WC), nofile = aggregate(d, S_ERR_NOFILE);
	const double *va = d->val + (size_t)S_ACCEPTS * d->cfg.window_ticks;
	const double *vh = d->val + (size_t)S_HANDLED * d->cfg.window_ticks;
	double unhandled = 0, value = 0, dt = 0;
	size_t unhandled_ticks = 0, events;

	const double *vw = d->val + (size_t)S_WORKERS * d->cfg.window_ticks;
	double net = 0, workers = 1;

	aggregate_pair(d, S_ACCEPTS, S_HANDLED, &acc, &han);
	for (size_t i = 0; i < d->count; i++) {
		size_t k = slot(d, i);

		if (!isnan(va[k]) && !isnan(vh[k])) {
			net += va[k] - vh[k];
			if (va[k] > vh[k])
				unhandled += va[k] - vh[k], unhandled_ticks++;
		}
		if (!isnan(vw[k]) && vw[k] > workers)
			workers = vw[k];
	}
	/* nginx counts accepts a moment before handled, so a stub_status read can see one connection per worker in
	 * between, taken back at the next tick (handled > accepts then). Ticks up and down that net out to no more
	 * than that are this race, not connections nginx could not handle. */
	if (net <= workers)
		unhandled = 0, unhandled_ticks = 0;
	/* nginx stops accepting while a worker has less than an eighth of its connections free, so the error can be
	 * rare (2/s beside 500 listen overflows/s, seen in CI): any in the last ticks is evidence enough of the cause,
	 * long before a window is full. */
	r->recent = recent_event(d, S_ERR_WC);
	if (acc.n < d->cfg.min_ticks && wc.n < d->cfg.min_ticks) {
		say(r->evidence, "nginx.accepts/handled and nginx.err.worker_connections: too few ticks with data "
				 "(%zu, %zu of %zu needed)", acc.n, wc.n, d->cfg.min_ticks);
		r->valid = false;
		r->value = NAN;
		return;
	}
	if (acc.n >= d->cfg.min_ticks && acc.dt > 0)
		value += unhandled / acc.dt, dt = acc.dt;
	if (wc.n >= d->cfg.min_ticks && wc.dt > 0)
		value += wc.sum / wc.dt, dt = wc.dt > dt ? wc.dt : dt;
	if (dt <= 0) {
		invalid(r, "nginx.accepts/handled: no tick with a time");
		return;
	}
	events = unhandled_ticks > wc.events ? unhandled_ticks : wc.events;
	finish(d, r, value, dt, events >= d->cfg.min_event_ticks);
	say(r->evidence, "%.0f connections accepted and not handled (of %.0f), %.0f \"worker_connections are not "
			 "enough\" in %.0f s (%.3g/s); %.0f \"Too many open files\"", unhandled, acc.sum, wc.sum, dt,
	    value, nofile.sum);
}

static void read_softnet_drops(const struct detect *d, struct detect_reading *r)
{
	struct agg p = aggregate(d, S_SN_PROCESSED);
	size_t len;

	rate_reading(d, r, S_SN_DROPPED);
	len = strlen(r->evidence);
	if (r->valid && p.sum > 0)
		snprintf(r->evidence + len, DETECT_TEXT_MAX - len, "; %.0f processed", p.sum);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Whether CPU A (idle IA, softirq SA) is a better place for moved work than B: more idle, then less softirq, then
 * the lower number (so the same CPU is named every time). An unknown idle share ranks last. */
static bool idler(double ia, double sa, unsigned a, double ib, double sb, unsigned b)
{
	if (isnan(ia) != isnan(ib))
		return !isnan(ia);
	if (!isnan(ia) && ia != ib)
		return ia > ib;
	if (sa != sb)
		return sa < sb;
	return a < b;
}

/* The interfaces that received the most packets in the window into C, most first (ties: the first named). */
static void busiest_links(const struct detect *d, struct detect_cpus *c)
{
	size_t w = d->cfg.window_ticks;
	double sums[DETECT_RX_DEVS];

	for (size_t l = 0; l < d->nlinks; l++) {
		const float *x = d->link_rx + l * w;
		double sum = 0, dt = 0;
		size_t j;

		for (size_t i = 0; i < d->count; i++) {
			size_t k = slot(d, i);

			if (!isnan(x[k]))
				sum += x[k], dt += d->dt[k];
		}
		if (!(sum > 0) || dt <= 0)
			continue;
		j = c->nrx < DETECT_RX_DEVS ? c->nrx++ : DETECT_RX_DEVS;
		for (; j > 0 && sum > sums[j - 1]; j--) {
			if (j < DETECT_RX_DEVS) {
				sums[j] = sums[j - 1];
				c->rx_pps[j] = c->rx_pps[j - 1];
				memcpy(c->rx_dev[j], c->rx_dev[j - 1], DETECT_DEV_MAX);
			}
		}
		if (j < DETECT_RX_DEVS) {
			sums[j] = sum;
			c->rx_pps[j] = sum / dt;
			snprintf(c->rx_dev[j], DETECT_DEV_MAX, "%s", d->link_dev[l]);
		}
	}
}

static void read_softirq(struct detect *d, struct detect_reading *r, struct detect_cpus *cpus)
{
	size_t w = d->cfg.window_ticks, ncpu = 0, busiest = 0, nother = 0;
	double top = -1, median, rx_top = 0, rx_all = 0, dt = 0;
	double *soft = d->mean_soft, *idle = d->mean_idle;

	memset(cpus, 0, sizeof(*cpus));
	cpus->hot = -1;
	for (size_t i = 0; i < d->count; i++)
		dt += d->dt[slot(d, i)];
	busiest_links(d, cpus);
	for (size_t c = 0; c < d->cfg.cpus_max; c++) {
		const float *s = d->cpu_soft + c * w, *x = d->cpu_rx + c * w, *id = d->cpu_idle + c * w;
		double sum = 0, rx = 0, isum = 0;
		size_t n = 0, ni = 0;

		soft[c] = idle[c] = NAN;
		if (!d->cpu_ids[c])
			continue;
		for (size_t i = 0; i < d->count; i++) {
			size_t k = slot(d, i);

			if (!isnan(s[k]))
				sum += s[k], n++;
			if (!isnan(x[k]))
				rx += x[k];
			if (!isnan(id[k]))
				isum += id[k], ni++;
		}
		rx_all += rx;
		if (n < d->cfg.min_ticks)
			continue;
		soft[c] = sum / (double)n;
		idle[c] = ni >= d->cfg.min_ticks ? isum / (double)ni : NAN;
		ncpu++;
		/* Ties go to the lowest CPU number, so the evidence names one CPU the same way every time. */
		if (soft[c] > top)
			top = soft[c], busiest = c, rx_top = rx;
	}
	if (ncpu < 2) {
		say(r->evidence, "cpu.N.softirq: %zu CPUs with %zu ticks of data, 2 needed", ncpu, d->cfg.min_ticks);
		r->valid = false;
		r->value = NAN;
		return;
	}
	for (size_t c = 0; c < d->cfg.cpus_max; c++) {
		size_t j;

		if (isnan(soft[c]) || c == busiest)
			continue;
		d->scratch[nother++] = soft[c];
		/* The DETECT_IDLEST_MAX idlest of the others, in order (an insertion into a short sorted list). */
		j = cpus->n < DETECT_IDLEST_MAX ? cpus->n++ : DETECT_IDLEST_MAX;
		while (j > 0 && idler(idle[c], soft[c], (unsigned)c, cpus->idle[j - 1], cpus->softirq[j - 1],
				      cpus->idlest[j - 1])) {
			if (j < DETECT_IDLEST_MAX) {
				cpus->idlest[j] = cpus->idlest[j - 1];
				cpus->idle[j] = cpus->idle[j - 1];
				cpus->softirq[j] = cpus->softirq[j - 1];
			}
			j--;
		}
		if (j < DETECT_IDLEST_MAX) {
			cpus->idlest[j] = (uint16_t)c;
			cpus->idle[j] = idle[c];
			cpus->softirq[j] = soft[c];
		}
	}
	cpus->hot = (int)busiest;
	cpus->hot_softirq = top;
	qsort(d->scratch, nother, sizeof(*d->scratch), cmp_double);
	median = nother % 2 ? d->scratch[nother / 2] : (d->scratch[nother / 2 - 1] + d->scratch[nother / 2]) / 2;
	/* The points of CPU the busiest spends in softirq beyond the median of the other CPUs: near 0 when every CPU
	 * is busy alike, and no cliff where a ratio would have one (a rule "the others below half of the busiest"
	 * read a veth's 50.0% against 23.5% as 50, and would read 48% against 25% as 0). */
	finish(d, r, top - median, dt, true);
	if (rx_all > 0)
		say(r->evidence, "CPU %zu spends %.1f%% in softirq, the median of the other %zu %.1f%%; it ran %.0f%% of "
				 "NET_RX softirqs", busiest, top, nother, median, 100 * rx_top / rx_all);
	else
		say(r->evidence, "CPU %zu spends %.1f%% in softirq, the median of the other %zu %.1f%%", busiest, top,
		    nother, median);
}

static void read_workers(const struct detect *d, struct detect_reading *sat, struct detect_reading *delay)
{
	const double *run = d->val + (size_t)S_RUN_MS * d->cfg.window_ticks;
	const double *wait = d->val + (size_t)S_WAIT_MS * d->cfg.window_ticks;
	const double *wk = d->val + (size_t)S_WORKERS * d->cfg.window_ticks;
	double run_ms = 0, wait_ms = 0, cap_ms = 0, run_ms_sat = 0, dt = 0, dt_sat = 0;
	size_t n = 0, n_sat = 0;

	for (size_t i = 0; i < d->count; i++) {
		size_t k = slot(d, i);

		if (isnan(run[k]))
			continue;
		if (!isnan(wait[k]))
			run_ms += run[k], wait_ms += wait[k], dt += d->dt[k], n++;
		if (!isnan(wk[k]) && wk[k] >= 1 && d->dt[k] > 0)
			run_ms_sat += run[k], cap_ms += wk[k] * d->dt[k] * 1000, dt_sat += d->dt[k], n_sat++;
	}
	if (n_sat < d->cfg.min_ticks || cap_ms <= 0) {
		say(sat->evidence, "nginx.worker_run_ms and nginx.workers: %zu of %zu ticks with data, %zu needed",
		    n_sat, d->count, d->cfg.min_ticks);
		sat->valid = false;
		sat->value = NAN;
	} else {
		finish(d, sat, run_ms_sat / cap_ms, dt_sat, true);
		say(sat->evidence, "workers ran %.0f ms of CPU in %.0f s: %.2f of one CPU each", run_ms_sat, dt_sat,
		    run_ms_sat / cap_ms);
	}
	if (n < d->cfg.min_ticks || run_ms < d->cfg.min_worker_ms) {
		say(delay->evidence, "nginx.worker_wait_ms/run_ms: %zu ticks and %.0f ms of worker CPU; %zu ticks and "
				     "%.0f ms needed", n, run_ms, d->cfg.min_ticks, d->cfg.min_worker_ms);
		delay->valid = false;
		delay->value = NAN;
	} else {
		finish(d, delay, wait_ms / run_ms, dt, true);
		say(delay->evidence, "workers waited %.0f ms on a run queue for %.0f ms of CPU in %.0f s (ratio %.3f)",
		    wait_ms, run_ms, dt, wait_ms / run_ms);
	}
}

/*
 * How unevenly the workers share the work: the busiest worker's CPU over the mean worker's, summed over the ticks
 * with two workers or more (1: alike; 2 workers at 2:1 give 1.33). It matters only while the busiest worker is
 * busy, as when one worker takes most new connections (accept_mutex with multi_accept, or the epoll wake-up order
 * under keep-alive): measured on a real nginx, 2 workers at 5307 and 2298 ms of CPU in 8 s, 1.40.
 */
static void read_imbalance(const struct detect *d, struct detect_reading *r)
{
	const double *mx = d->val + (size_t)S_RUN_MAX * d->cfg.window_ticks;
	const double *mn = d->val + (size_t)S_RUN_MEAN * d->cfg.window_ticks;
	const double *wk = d->val + (size_t)S_WORKERS * d->cfg.window_ticks;
	double top = 0, mean = 0, dt = 0, workers = 0;
	size_t n = 0;

	for (size_t i = 0; i < d->count; i++) {
		size_t k = slot(d, i);

		if (isnan(mx[k]) || isnan(mn[k]) || isnan(wk[k]) || wk[k] < 2 || d->dt[k] <= 0)
			continue;
		top += mx[k], mean += mn[k], dt += d->dt[k], n++;
		workers = wk[k] > workers ? wk[k] : workers;
	}
	if (n < d->cfg.min_ticks || mean * workers < d->cfg.min_worker_ms || mean <= 0) {
		say(r->evidence, "nginx.worker_run_max_ms/mean_ms with 2 workers or more: %zu ticks and %.0f ms of "
				 "worker CPU; %zu ticks and %.0f ms needed", n, mean * workers, d->cfg.min_ticks,
		    d->cfg.min_worker_ms);
		r->valid = false;
		r->value = NAN;
		return;
	}
	if (top / (dt * 1000) < d->cfg.worker_busy_min) {
		say(r->evidence, "the busiest worker ran %.0f%% of a CPU (%.0f%% needed for an uneven share to matter)",
		    100 * top / (dt * 1000), 100 * d->cfg.worker_busy_min);
		r->valid = false;
		r->value = NAN;
		return;
	}
	finish(d, r, top / mean, dt, true);
	say(r->evidence, "the busiest of %.0f workers ran %.0f ms of CPU in %.0f s, the mean worker %.0f ms (%.2fx)",
	    workers, top, dt, mean, top / mean);
}

static void read_retrans(const struct detect *d, struct detect_reading *r)
{
	struct agg re, out;

	aggregate_pair(d, S_RETRANS, S_OUT_SEGS, &re, &out);
	if (re.n < d->cfg.min_ticks || out.sum < d->cfg.min_out_segs || out.sum <= 0) {
		say(r->evidence, "tcp.retrans_segs/out_segs: %zu ticks and %.0f segments; %zu ticks and %.0f needed",
		    re.n, out.sum, d->cfg.min_ticks, d->cfg.min_out_segs);
		r->valid = false;
		r->value = NAN;
		return;
	}
	finish(d, r, re.sum / out.sum, re.dt, true);
	say(r->evidence, "%.0f of %.0f segments retransmitted in %.0f s (%.2f%%)", re.sum, out.sum, re.dt,
	    100 * re.sum / out.sum);
}

static void read_keepalive(const struct detect *d, const struct detect_env *env, struct detect_reading *r)
{
	struct agg req, acc;
	double ka = env ? env->keepalive_requests : NAN, rpc;

	aggregate_pair(d, S_NGX_REQUESTS, S_ACCEPTS, &req, &acc);
	if (isnan(ka) || ka < 1) {
		invalid(r, "keepalive_requests unknown");
		return;
	}
	if (req.n < d->cfg.min_ticks || acc.sum < d->cfg.min_conns || acc.sum <= 0) {
		say(r->evidence, "nginx.requests/accepts: %zu ticks and %.0f connections; %zu ticks and %.0f needed",
		    req.n, acc.sum, d->cfg.min_ticks, d->cfg.min_conns);
		r->valid = false;
		r->value = NAN;
		return;
	}
	/* stub_status counts the agent's own fetch, one request per tick. */
	rpc = (req.sum > (double)req.n ? req.sum - (double)req.n : 0) / acc.sum;
	/* A handshake every 500 requests or more costs nothing a trial could measure: 400 clients at 100k
	 * requests/s reconnect 100 times a second at nginx's default keepalive_requests 1000 (seen on a real nginx,
	 * where it was proposed before the uneven workers that were the limit). */
	if (rpc >= d->cfg.keepalive_enough) {
		say(r->evidence, "%.0f requests per connection: at %.0f and more, reconnects cost nothing measurable",
		    rpc, d->cfg.keepalive_enough);
		r->valid = false;
		r->value = NAN;
		return;
	}
	finish(d, r, rpc / ka, req.dt, true);
	say(r->evidence, "%.1f requests per connection (%.0f / %.0f) in %.0f s, keepalive_requests %.0f (%.2f)", rpc,
	    req.sum - (double)req.n, acc.sum, req.dt, ka, rpc / ka);
}

static double mean_level(const struct detect *d, enum series s, struct agg *a)
{
	*a = aggregate(d, s);
	return a->n ? a->sum / (double)a->n : NAN;
}

static void read_timewait(const struct detect *d, const struct detect_env *env, struct detect_reading *r)
{
	struct agg a;
	double range = env ? env->port_range : NAN, tw = mean_level(d, S_TIME_WAIT, &a);

	if (isnan(range) || range < 1) {
		invalid(r, "the local port range is unknown");
		return;
	}
	if (a.n < d->cfg.min_ticks) {
		say(r->evidence, "tcp.sockstat.time_wait: %zu of %zu ticks with data, %zu needed", a.n, d->count,
		    d->cfg.min_ticks);
		r->valid = false;
		r->value = NAN;
		return;
	}
	finish(d, r, tw / range, a.dt, true);
	say(r->evidence, "%.0f sockets in TIME_WAIT on average (now %.0f) for %.0f local ports (%.2f)", tw, a.last,
	    range, tw / range);
}

/*
 * Connections to nginx's ports whose client has sent nothing since the handshake (tcp.served.silent: established,
 * no byte received, in the accept queue or accepted; counted with the states every 10 s): clients that connect
 * and pause before they speak. Each accepted one holds a worker connection (stub_status counts it as Waiting) and
 * woke a worker for nothing; with the listen's deferred the kernel hands them over only once their first bytes
 * arrived (within nginx's 1 s TCP_DEFER_ACCEPT: longer pauses are accepted anyway, which the trial shows). The
 * reading is the fewest of the window's counts, so that a burst of reconnects (every client at once after a
 * reload) is not a pile; two counts at least.
 */
static void read_silent(const struct detect *d, struct detect_reading *r)
{
	const double *v = d->val + (size_t)S_SILENT * d->cfg.window_ticks;
	double low = NAN, dt = 0;
	size_t n = 0;

	for (size_t i = 0; i < d->count; i++) {
		size_t k = slot(d, i);

		dt += d->dt[k];
		if (isnan(v[k]))
			continue;
		low = n == 0 || v[k] < low ? v[k] : low;
		n++;
	}
	if (n < 2) {
		say(r->evidence, "tcp.served.silent: %zu counts in the window, 2 needed", n);
		r->valid = false;
		r->value = NAN;
		return;
	}
	finish(d, r, low, dt, true);
	say(r->evidence, "at least %.0f connections to nginx's ports silent since their handshake in each of %zu "
	    "counts in %.0f s", low, n, dt);
}

static void read_finwait(const struct detect *d, struct detect_reading *r)
{
	struct agg o, e, m, so, se;
	double orphan = mean_level(d, S_ORPHAN, &o), estab = mean_level(d, S_CURR_ESTAB, &e), limit;
	double closed = mean_level(d, S_SERVED_CLOSED, &so), served = mean_level(d, S_SERVED_ESTAB, &se);
	bool own = so.n > 0 && se.n > 0;
	char what[160];

	if (o.n < d->cfg.min_ticks || e.n < d->cfg.min_ticks) {
		say(r->evidence, "tcp.sockstat.orphan and tcp.curr_estab: %zu and %zu ticks with data, %zu needed", o.n,
		    e.n, d->cfg.min_ticks);
		r->valid = false;
		r->value = NAN;
		return;
	}
	/* nginx's own sockets when they are counted (every 10 s, through inet_diag by its listening ports): a load
	 * generator's or an upstream connection's closing sockets are not nginx's pile-up. */
	if (own)
		snprintf(what, sizeof(what), "%.0f of nginx's sockets closed and not gone for %.0f established", closed,
			 served);
	else
		snprintf(what, sizeof(what), "%.0f orphaned sockets for %.0f established", orphan, estab);
	if (!own)
		closed = orphan, served = estab;
	/* With no connection established a few orphans are no pile-up; count against at least one. */
	finish(d, r, 1000 * closed / (served > 1 ? served : 1), o.dt, true);
	/* Orphans limit nothing far from tcp_max_orphans (host-wide, as sockstat's count), where the kernel starts
	 * resetting connections (a load generator's closing sockets counted 80 per 1000 on a real nginx and got
	 * tcp_fin_timeout proposed). */
	limit = mean_level(d, S_MAX_ORPHANS, &m);
	if (m.n > 0 && limit > 0 && orphan < d->cfg.orphan_share_min * limit) {
		r->sustained = r->active = false;
		say(r->evidence, "%s on average (%.1f per 1000); %.0f orphans on the host, below %.0f%% of "
				 "tcp_max_orphans %.0f: not a limit", what, r->value, orphan, 100 * d->cfg.orphan_share_min,
		    limit);
		return;
	}
	if (m.n > 0)
		say(r->evidence, "%s on average (%.1f per 1000); %.0f orphans on the host, near tcp_max_orphans %.0f",
		    what, r->value, orphan, limit);
	else
		say(r->evidence, "%s on average (%.1f per 1000)", what, r->value);
}

static void read_advisories(const struct detect *d, struct detect_report *rep)
{
	struct detect_advisory *cw = &rep->adv[DETECT_ADV_CLOSE_WAIT], *fl = &rep->adv[DETECT_ADV_FILE_LIMIT];
	struct agg a = aggregate(d, S_CLOSE_WAIT), nf = aggregate(d, S_ERR_NOFILE);

	/* Counted every 10 s: the newest sample is the level, the oldest in the window says whether it drains. */
	cw->value = a.last;
	cw->active = a.n > 0 && a.last >= d->cfg.close_wait_min && a.last >= a.first;
	if (cw->active)
		say(cw->text, "%.0f of nginx's sockets in CLOSE_WAIT (%.0f at the start of the window): the application "
			      "does not close connections its peer closed; no kernel or nginx knob fixes that", a.last,
		    a.first);
	else if (a.n > 0)
		say(cw->text, "%.0f of nginx's sockets in CLOSE_WAIT", a.last);
	else
		say(cw->text, "tcp.served.close_wait not sampled in the window");
	fl->value = nf.sum;
	fl->active = nf.events >= d->cfg.min_event_ticks;
	if (fl->active)
		say(fl->text, "%.0f \"Too many open files\" in %.0f s: raise worker_rlimit_nofile (the agent's "
			      "nginx.worker_rlimit_nofile policy can) or the unit's LimitNOFILE", nf.sum, nf.dt);
	else
		say(fl->text, "%.0f \"Too many open files\" in the window", nf.sum);
}

/*
 * Requests per second over the window: the larger of what stub_status counted (less the agent's own fetch) and
 * what the access log holds, lines it could not parse included (they are requests in a format it does not know).
 * Either source alone shows that nginx is not idle: a log in an unknown format read as 0 requests next to a
 * stub_status of thousands gave "nginx is idle" on a stock Debian nginx under 50k req/s. A stub_status that answers
 * late every tick (saturated workers) has too few ticks and leaves the count to the log.
 */
static double request_rate(const struct detect *d)
{
	struct agg s = aggregate(d, S_NGX_REQUESTS), h = aggregate(d, S_HTTP_REQUESTS), u = aggregate(d, S_HTTP_UNPARSED);
	double rate = NAN;

	if (s.n >= d->cfg.min_ticks && s.dt > 0)
		rate = (s.sum > (double)s.n ? s.sum - (double)s.n : 0) / s.dt;
	if (h.n >= d->cfg.min_ticks && h.dt > 0) {
		double log = (h.sum + (u.n ? u.sum : 0)) / h.dt;

		rate = isnan(rate) || log > rate ? log : rate;
	}
	return rate;
}

/* The failed connects to upstreams in the error log, each kind over the window. */
struct connect_fails {
	struct agg addr, refused, timeout, no_live;
	double sum;
	size_t ticks; /* ticks with any of them, from the FROM-th oldest on */
};

static void connect_fails(const struct detect *d, size_t from, struct connect_fails *f)
{
	static const enum series kinds[] = {S_ERR_ADDR, S_ERR_REFUSED, S_ERR_CONN_TO, S_ERR_NO_LIVE};

	f->addr = aggregate(d, S_ERR_ADDR);
	f->refused = aggregate(d, S_ERR_REFUSED);
	f->timeout = aggregate(d, S_ERR_CONN_TO);
	f->no_live = aggregate(d, S_ERR_NO_LIVE);
	f->sum = f->addr.sum + f->refused.sum + f->timeout.sum + f->no_live.sum;
	f->ticks = 0;
	for (size_t i = from; i < d->count; i++) {
		size_t k = slot(d, i);
		bool any = false;

		for (size_t j = 0; j < sizeof(kinds) / sizeof(kinds[0]); j++)
			any = any || d->val[(size_t)kinds[j] * d->cfg.window_ticks + k] > 0;
		f->ticks += any;
	}
}

/* Append the formatted text to BUF (of DETECT_TEXT_MAX) at *OFF. */
__attribute__((format(printf, 3, 4))) static void add(char *buf, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= DETECT_TEXT_MAX)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, DETECT_TEXT_MAX - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n;
}

/*
 * nginx's side of the upstream connection: connects that fail (the error log, by errno; 502s), that cost (the
 * share of $upstream_connect_time in upstream time) or that are about to fail (connections made from nginx's
 * namespace holding local ports in TIME_WAIT). Each is nginx's and the kernel's to fix (upstream keepalive, the
 * local port range, TIME_WAIT reuse), and each makes upstream time look like the upstream's: a connect that fails
 * at once is logged with the upstream time of the request, a handshake per request is upstream time too. Found on
 * a real nginx: 85% of responses 502 and 1.66 M "Cannot assign requested address" in 5 minutes got "the bottleneck
 * is the upstream". True with WHY (the evidence, one clause) when any holds.
 */
static bool nginx_side(const struct detect *d, const struct detect_env *env, char *why)
{
	struct connect_fails f;
	struct agg req = aggregate(d, S_HTTP_REQUESTS), g = aggregate(d, S_HTTP_502), c, u, tw;
	double gshare = req.sum > 0 && g.n > 0 ? g.sum / req.sum : NAN, range = env ? env->port_range : NAN, twm;
	size_t off = 0;

	why[0] = '\0';
	connect_fails(d, 0, &f);
	if (f.ticks >= d->cfg.min_event_ticks && (req.sum <= 0 || f.sum / req.sum >= d->cfg.connect_fail_share)) {
		const struct {
			const struct agg *a;
			const char *what;
		} kinds[] = {{&f.addr, "\"Cannot assign requested address\""}, {&f.refused, "refused"},
			     {&f.timeout, "timed out"}, {&f.no_live, "\"no live upstreams\""}};
		double dt = 0;
		const char *sep = " ";

		add(why, &off, "upstream connects fail:");
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			dt = kinds[i].a->dt > dt ? kinds[i].a->dt : dt;
			if (kinds[i].a->sum > 0) {
				add(why, &off, "%s%.0f %s", sep, kinds[i].a->sum, kinds[i].what);
				sep = ", ";
			}
		}
		add(why, &off, " in %.0f s", dt);
		if (gshare > 0)
			add(why, &off, ", %.0f%% of responses 502", 100 * gshare);
		return true;
	}
	if (g.n >= d->cfg.min_ticks && gshare >= d->cfg.gateway_share) {
		add(why, &off, "%.0f%% of responses 502 (%.0f in %.0f s): upstream connections fail", 100 * gshare, g.sum,
		    g.dt);
		return true;
	}
	aggregate_pair(d, S_UP_CONN_MS, S_UP_MS, &c, &u);
	if (c.n >= d->cfg.min_ticks && u.sum > 0 && c.sum / u.sum >= d->cfg.connect_share_max) {
		add(why, &off, "connecting to upstreams takes %.0f%% of upstream time (%.0f of %.0f ms): a handshake per "
		    "request", 100 * c.sum / u.sum, c.sum, u.sum);
		return true;
	}
	twm = (tw = aggregate(d, S_OUT_TW)).n ? tw.sum / (double)tw.n : NAN;
	if (range >= 1 && twm >= d->cfg.outgoing_tw_share * range) {
		add(why, &off, "%.0f connections from nginx's namespace in TIME_WAIT for %.0f local ports: connects to "
		    "upstreams are about to fail", twm, range);
		return true;
	}
	return false;
}

/* Over the last gross_ticks ticks alone: requests every tick, above the idle rate, and the upstream's share of their
 * request time (0 ms in all: none of it) under upstream_share_max, or upstream connects failing in every tick. */
static bool gross_here(const struct detect *d)
{
	const double *vr = d->val + (size_t)S_HTTP_REQUESTS * d->cfg.window_ticks;
	const double *vq = d->val + (size_t)S_REQ_MS * d->cfg.window_ticks;
	const double *vu = d->val + (size_t)S_UP_MS * d->cfg.window_ticks;
	size_t g = d->cfg.gross_ticks;
	double req = 0, ms = 0, up = 0, t = 0;
	struct connect_fails f;

	if (g == 0 || d->count < g)
		return false;
	for (size_t i = d->count - g; i < d->count; i++) {
		size_t j = slot(d, i);

		if (isnan(vr[j]) || isnan(vq[j]))
			return false;
		req += vr[j];
		ms += vq[j];
		up += isnan(vu[j]) ? 0 : vu[j];
		t += d->dt[j];
	}
	if (!(t > 0) || req / t < d->cfg.idle_rps)
		return false;
	connect_fails(d, d->count - g, &f);
	if (f.ticks == g)
		return true;
	return ms > 0 ? up / ms < d->cfg.upstream_share_max : up == 0;
}

/* The share of the window the workers were runnable (CPU plus run-queue wait, over workers x seconds); NAN
 * without their figures. */
static double runnable_share(const struct detect *d)
{
	const double *run = d->val + (size_t)S_RUN_MS * d->cfg.window_ticks;
	const double *wait = d->val + (size_t)S_WAIT_MS * d->cfg.window_ticks;
	const double *wk = d->val + (size_t)S_WORKERS * d->cfg.window_ticks;
	double busy = 0, cap = 0;

	for (size_t i = 0; i < d->count; i++) {
		size_t k = slot(d, i);

		if (isnan(run[k]) || isnan(wait[k]) || isnan(wk[k]) || wk[k] < 1 || !(d->dt[k] > 0))
			continue;
		busy += run[k] + wait[k];
		cap += wk[k] * d->dt[k] * 1000;
	}
	return cap > 0 ? busy / cap : NAN;
}

/* Evidence that nginx serves requests although the access log counts next to none: losses the kernel counts at
 * its ports, the synthetic client failing, busy workers, a stub_status answering late. The first found into WHY. */
static bool traffic_seen(const struct detect *d, const struct detect_report *rep, char *why, size_t n)
{
	struct agg o = aggregate(d, S_LISTEN_OVERFLOWS), sy = aggregate(d, S_SYNCOOKIES), q = aggregate(d, S_REQQ_FULL);
	struct agg cr = aggregate(d, S_CLIENT_REQ), cf = aggregate(d, S_CLIENT_FAIL), ct = aggregate(d, S_CLIENT_TO);
	struct agg late = aggregate(d, S_STUB_LATE);
	const struct detect_reading *w = &rep->r[DETECT_WORKER_SATURATION];
	size_t bad = 0;

	for (size_t i = 0; i < d->count; i++) {
		size_t k = slot(d, i);

		bad += d->val[(size_t)S_CLIENT_FAIL * d->cfg.window_ticks + k] > 0 ||
		       d->val[(size_t)S_CLIENT_TO * d->cfg.window_ticks + k] > 0;
	}
	if (o.events >= d->cfg.min_event_ticks && o.dt > 0)
		snprintf(why, n, "%.0f listen overflows/s", o.sum / o.dt);
	else if (sy.events + q.events >= d->cfg.min_event_ticks)
		snprintf(why, n, "%.0f SYNs the SYN queue had no room for", sy.sum + q.sum);
	else if (bad >= d->cfg.min_event_ticks && cr.sum > 0)
		snprintf(why, n, "the synthetic client failing %.0f of %.0f", cf.sum + ct.sum, cr.sum);
	else if (w->valid && w->value >= w->threshold)
		snprintf(why, n, "workers busy (%.2f of a CPU each)", w->value);
	else if (late.events >= d->cfg.min_event_ticks)
		snprintf(why, n, "stub_status answering late in %zu ticks", late.events);
	else
		return false;
	return true;
}

/*
 * Why requests cannot be counted, into REP's status: which probe has no count and the fix. A host without a count
 * is blind, never idle: Debian's stock nginx (no stub_status, its log not the agent's) under 2000 clients was said
 * to be "idle (0.00 requests/s)" for 220 s beside 170 listen overflows/s.
 */
static void say_blind(const struct detect *d, struct detect_report *rep, const char *evidence)
{
	struct agg s = aggregate(d, S_NGX_REQUESTS), late = aggregate(d, S_STUB_LATE), h = aggregate(d, S_HTTP_REQUESTS);
	char stub[96], log[112];

	if (late.events > 0)
		snprintf(stub, sizeof(stub), "stub_status answered late in %zu of %zu ticks", late.events, d->count);
	else if (s.n > 0)
		snprintf(stub, sizeof(stub), "stub_status read in %zu of %zu ticks", s.n, d->count);
	else
		snprintf(stub, sizeof(stub), "no stub_status");
	if (evidence)
		snprintf(log, sizeof(log), "the access log counts %.2f requests/s beside %s", rep->request_rate, evidence);
	else if (h.n > 0)
		snprintf(log, sizeof(log), "the access log read in %zu of %zu ticks", h.n, d->count);
	else
		snprintf(log, sizeof(log), "no access log read");
	rep->bottleneck = DETECT_BOTTLENECK_BLIND;
	say(rep->status, "blind: %s, %s: run `ngx-autotune --setup` or set [nginx] stub_status_url and access_log; "
			 "acting on queues, drops and limits only", stub, log);
}

static void where_time_goes(const struct detect *d, const struct detect_env *env, struct detect_report *rep)
{
	struct agg req, up, timed = aggregate(d, S_HTTP_TIMED), late = aggregate(d, S_STUB_LATE);
	struct agg stub = aggregate(d, S_NGX_REQUESTS);
	size_t timed_ticks = 0;
	double share;
	char side[DETECT_TEXT_MAX], seen[96], note[192] = "";
	/* A log whose lines have no times (nginx's combined) counts requests and says nothing of where time goes;
	 * its ticks without requests must not pass for a log that has times in a few ticks. */
	bool untimed = timed.n >= d->cfg.min_ticks && timed.sum == 0;

	rep->request_rate = request_rate(d);
	/* stub_status late in a third of its fetches or more, too few answers to count with: the count is the log's,
	 * and with the workers runnable all the time that is saturation (measured: one worker gzipping for 100
	 * clients, stub_status late in every other tick). */
	if (late.events >= d->cfg.min_event_ticks && late.events * 3 >= late.n && stub.n < d->cfg.min_ticks) {
		double busy = runnable_share(d);
		struct agg to = aggregate(d, S_CLIENT_TO);

		/* The same evidence as the probe's (stub_late_saturated): busy workers, or the synthetic client's
		 * requests timing out too (a CI run: stub_status late in 42 of 60 ticks, the worker runnable under 90%
		 * of the window while it wrote to clients that read slowly, and the client's requests timed out). */
		rep->stub_saturated = busy >= d->cfg.stub_busy_share || to.sum >= 1;
		if (busy >= d->cfg.stub_busy_share)
			snprintf(note, sizeof(note), " (stub_status late in %zu of %zu ticks, the workers runnable "
				 "%.0f%% of the time: saturated; counts from the access log)", late.events, late.n,
				 100 * (busy > 1 ? 1 : busy));
		else if (rep->stub_saturated)
			snprintf(note, sizeof(note), " (stub_status late in %zu of %zu ticks, %.0f of the synthetic "
				 "client's requests timed out too: saturated; counts from the access log)", late.events,
				 late.n, to.sum);
		else
			snprintf(note, sizeof(note), " (stub_status late in %zu of %zu ticks; counts from the access log)",
				 late.events, late.n);
	}
	aggregate_pair(d, S_REQ_MS, S_UP_MS, &req, &up);
	/* Static content has no upstream time at all: then all of the time is nginx's. */
	if (req.n < d->cfg.min_ticks) {
		struct agg only = aggregate(d, S_REQ_MS);

		req = only;
		up.sum = 0;
	}
	/* Requests served in under a millisecond each (a return, a small static file) log request_time 0.000: a
	 * window of them sums to 0 ms. No upstream time either means none of it is upstream's, not "unknown"
	 * (found on a real nginx: the listen-queue scenario got no proposal). */
	if (req.n < d->cfg.min_ticks)
		share = NAN;
	else if (req.sum > 0)
		share = up.sum / req.sum;
	else
		share = up.sum > 0 ? 1 : 0;
	if (share > 1)
		share = 1; /* nginx rounds the two times separately */
	rep->upstream_share = share;
	rep->upstream_nginx_side = nginx_side(d, env, side);
	for (size_t i = 0; i < d->count; i++)
		timed_ticks += d->dt[slot(d, i)] > 0;
	if (timed_ticks < d->cfg.min_ticks) {
		rep->bottleneck = DETECT_BOTTLENECK_UNKNOWN;
		say(rep->status, "not enough data yet: %zu ticks in the window, %zu with request counts needed",
		    d->count, d->cfg.min_ticks);
	} else if (isnan(rep->request_rate)) {
		say_blind(d, rep, NULL);
	} else if (rep->request_rate < d->cfg.idle_rps && stub.n < d->cfg.min_ticks &&
		   traffic_seen(d, rep, seen, sizeof(seen))) {
		/* Only the log counted, next to nothing, while the kernel or the client shows traffic: not nginx's log. */
		say_blind(d, rep, seen);
	} else if (rep->request_rate < d->cfg.idle_rps) {
		rep->bottleneck = DETECT_BOTTLENECK_IDLE;
		say(rep->status, "nginx is idle (%.2f requests/s, below %.2f): no change would matter or be measurable",
		    rep->request_rate, d->cfg.idle_rps);
	} else if (isnan(share) && aggregate(d, S_REQ_MS).n > 0 && !untimed) {
		/* Some ticks have request times and too few: where time goes is unknown, not "here". Taking it as
		 * "here" proposed changes on an upstream-bound host after one missing access-log tick (found by
		 * tests/sim/test_loop_sim). */
		rep->bottleneck = DETECT_BOTTLENECK_UNKNOWN;
		say(rep->status, "request times in only %zu of %zu ticks: not enough to say where time goes",
		    aggregate(d, S_REQ_MS).n, d->count);
	} else if (!isnan(share) && share >= d->cfg.upstream_share_max && rep->upstream_nginx_side) {
		rep->bottleneck = DETECT_BOTTLENECK_HERE;
		say(rep->status, "%s: nginx's side of the upstream connection, not the upstream (upstream time %.0f%% of "
				 "request time)", side, 100 * share);
	} else if (!isnan(share) && share >= d->cfg.upstream_share_max) {
		rep->bottleneck = DETECT_BOTTLENECK_UPSTREAM;
		say(rep->status, "upstream time is %.0f%% of request time (%.0f of %.0f ms, at least %.0f%%) and its "
				 "connects succeed: the bottleneck is the upstream, not nginx or the kernel", 100 * share,
		    up.sum, req.sum, 100 * d->cfg.upstream_share_max);
	} else {
		rep->bottleneck = DETECT_BOTTLENECK_HERE;
		if (isnan(share))
			say(rep->status, "%.1f requests/s%s; no request times (access log), nginx and the kernel are "
					 "taken as the bottleneck", rep->request_rate, note);
		else if (rep->upstream_nginx_side)
			say(rep->status, "%.1f requests/s%s, upstream time %.0f%% of request time; %s", rep->request_rate,
			    note, 100 * share, side);
		else
			say(rep->status, "%.1f requests/s%s, upstream time %.0f%% of request time: nginx and the kernel "
					 "are in the path", rep->request_rate, note, 100 * share);
	}
	rep->actionable = rep->bottleneck == DETECT_BOTTLENECK_HERE || rep->bottleneck == DETECT_BOTTLENECK_BLIND;
	rep->gross_here = rep->actionable || (rep->bottleneck == DETECT_BOTTLENECK_UNKNOWN && gross_here(d));
}

void detect_evaluate(struct detect *d, const struct detect_env *env, struct detect_report *out)
{
	memset(out, 0, sizeof(*out));
	out->ticks = d->count;
	for (size_t i = 0; i < d->count; i++)
		out->window_s += d->dt[slot(d, i)];
	out->ts_ms = d->count ? d->ts[slot(d, d->count - 1)] : 0;
	for (size_t i = 0; i < DETECT_COUNT; i++) {
		out->r[i].id = (enum detect_id)i;
		out->r[i].name = detector_names[i];
		out->r[i].threshold = d->cfg.threshold[i];
		out->r[i].value = NAN;
	}
	for (size_t i = 0; i < DETECT_ADV_COUNT; i++) {
		out->adv[i].id = (enum detect_advisory_id)i;
		out->adv[i].name = advisory_names[i];
		out->adv[i].value = NAN;
	}
	rate_reading(d, &out->r[DETECT_FILE_LIMIT], S_ERR_NOFILE);
	out->r[DETECT_FILE_LIMIT].recent = recent_event(d, S_ERR_NOFILE);
	read_listen(d, &out->r[DETECT_LISTEN_OVERFLOWS]);
	read_syn(d, &out->r[DETECT_SYN_QUEUE_OVERFLOW]);
	read_worker_connections(d, &out->r[DETECT_WORKER_CONNECTIONS_EXHAUSTED]);
	rate_reading(d, &out->r[DETECT_PORT_EXHAUSTION], S_ERR_ADDR);
	read_softnet_drops(d, &out->r[DETECT_SOFTNET_DROPS]);
	rate_reading(d, &out->r[DETECT_SOFTNET_SQUEEZE], S_SQUEEZE);
	read_softirq(d, &out->r[DETECT_SOFTIRQ_IMBALANCE], &out->cpus);
	read_workers(d, &out->r[DETECT_WORKER_SATURATION], &out->r[DETECT_WORKER_RUN_DELAY]);
	read_imbalance(d, &out->r[DETECT_WORKER_IMBALANCE]);
	read_retrans(d, &out->r[DETECT_RETRANSMISSIONS]);
	read_keepalive(d, env, &out->r[DETECT_KEEPALIVE_SHORT]);
	read_timewait(d, env, &out->r[DETECT_TIMEWAIT_PILEUP]);
	read_finwait(d, &out->r[DETECT_FINWAIT_PILEUP]);
	read_silent(d, &out->r[DETECT_SILENT_CONNECTIONS]);
	read_advisories(d, out);
	where_time_goes(d, env, out);
	for (size_t i = 0; i < DETECT_COUNT; i++) {
		struct detect_reading *r = &out->r[i];

		r->needs_requests = !counts_itself[i];
		if (out->bottleneck == DETECT_BOTTLENECK_BLIND && r->needs_requests)
			r->sustained = r->active = r->gross = false;
	}
}

const char *detect_name(enum detect_id id)
{
	return (unsigned)id < DETECT_COUNT ? detector_names[id] : "?";
}

const char *detect_counted_metric(enum detect_id id)
{
	switch (id) {
	case DETECT_FILE_LIMIT:
		return series_names[S_ERR_NOFILE];
	case DETECT_LISTEN_OVERFLOWS:
		return series_names[S_LISTEN_OVERFLOWS];
	case DETECT_SOFTNET_DROPS:
		return series_names[S_SN_DROPPED];
	case DETECT_SOFTNET_SQUEEZE:
		return series_names[S_SQUEEZE];
	default:
		return NULL;
	}
}

int detect_lookup(const char *name, enum detect_id *id)
{
	for (size_t i = 0; i < DETECT_COUNT; i++) {
		if (strcmp(name, detector_names[i]) == 0) {
			*id = (enum detect_id)i;
			return 0;
		}
	}
	return -ENOENT;
}

const char *detect_bottleneck_name(enum detect_bottleneck b)
{
	switch (b) {
	case DETECT_BOTTLENECK_UNKNOWN:
		return "unknown";
	case DETECT_BOTTLENECK_HERE:
		return "here";
	case DETECT_BOTTLENECK_UPSTREAM:
		return "upstream";
	case DETECT_BOTTLENECK_IDLE:
		return "idle";
	case DETECT_BOTTLENECK_BLIND:
		return "blind";
	}
	return "unknown";
}
