/*
 * block: frames of one block -> one value per metric. See block.h.
 */
#include "block.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define BUCKET_SLOT 0x8000u
#define CBUCKET_SLOT 0xa000u
#define VALUE_MAX 1e18 /* a per-tick value beyond this is garbage, not a measurement */

/* Derived metrics (policy.c's table says what they mean): numerator inputs ('-' subtracts) over a denominator. */
static const struct derived_def {
	const char *name;
	bool count, cpu;
	const char *num[4];
	const char *den;   /* NULL: per second of the ticks that had the numerator */
	double den_scale;
} derived[] = {
	/* Good responses per second: what clients got. Not a count for the binomial test: a rate set by the load,
	 * compared by its log ratio like a latency. */
	{"http.good_rate", false, false, {"http.2xx", "http.3xx"}, NULL, 1.0},
	{"cpu.busy_per_kreq", false, true, {"cpu.all.user", "cpu.all.system", "cpu.all.irq", "cpu.all.softirq"},
	 "http.requests", 1e-3},
	{"cpu.softirq_per_kreq", false, true, {"cpu.all.softirq"}, "http.requests", 1e-3},
	{"http.4xx_rate", true, false, {"http.4xx"}, "http.requests", 1.0},
	{"http.5xx_rate", true, false, {"http.5xx"}, "http.requests", 1.0},
	{"http.mean_ms", false, false, {"http.request_ms_sum"}, "http.requests", 1.0},
	{"http.timeouts", true, false, {"nginx.err.upstream_timeout"}, "http.requests", 1e-3},
	{"http.upstream_share", false, false, {"http.upstream_ms_sum"}, "http.request_ms_sum", 1.0},
	{"client.failure_rate", true, false, {"client.failures", "client.timeouts"}, "client.requests", 1.0},
	{"nginx.unhandled", true, false, {"nginx.accepts", "-nginx.handled"}, "nginx.accepts", 1e-3},
	{"nginx.worker_wait_ratio", false, false, {"nginx.worker_wait_ms"}, "nginx.worker_run_ms", 1.0},
	{"nginx.worker_imbalance", false, false, {"nginx.worker_run_max_ms"}, "nginx.worker_run_mean_ms", 1.0},
	{"softnet.drop_rate", true, false, {"softnet.dropped"}, "softnet.processed", 1.0},
	{"tcp.retrans_rate", true, false, {"tcp.retrans_segs"}, "tcp.out_segs", 1.0},
	/* Clients' ms spent waiting in accept queues per 1000 requests: time no request's latency counts. */
	{"tcp.accept_wait", false, false, {"listen.wait_ms"}, "http.requests", 1e-3},
};

static const struct {
	const char *name;
	double q;
	bool client;
} quantiles[] = {{"http.p50_ms", 0.50, false}, {"http.p90_ms", 0.90, false}, {"http.p99_ms", 0.99, false},
		 {"client.p50_ms", 0.50, true}, {"client.p99_ms", 0.99, true}};

/* Sampled metrics that are sums over a tick (kernel counters' deltas, log lines of the tick): prefix match. */
static const char *const summed_prefixes[] = {
	"softnet.", "softirq.", "nginx.err.", "link.",
};
static const char *const summed_counts[] = {
	"tcp.active_opens", "tcp.attempt_fails", "tcp.estab_resets", "tcp.in_errs", "tcp.in_segs", "tcp.out_segs",
	"tcp.passive_opens", "tcp.retrans_segs", "tcp.listen_drops", "tcp.listen_overflows", "tcp.syncookies_sent",
	"tcp.abort_on_memory", "tcp.backlog_drop", "tcp.reqq_full_drop", "tcp.timewait_overflow", "sys.ctxt",
	"nginx.accepts", "nginx.handled", "nginx.requests", "nginx.worker_vcsw", "nginx.worker_ivcsw",
	"http.requests", "http.1xx", "http.2xx", "http.3xx", "http.4xx", "http.5xx", "http.unparsed",
	"http.timed", "client.requests", "client.failures", "client.timeouts",
};
static const char *const summed_amounts[] = {
	"nginx.worker_run_ms", "nginx.worker_run_max_ms", "nginx.worker_run_mean_ms", "nginx.worker_wait_ms",
	"http.request_ms_sum", "http.upstream_ms_sum", "listen.wait_ms",
};

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

/* irq.ID.N and irq.ID.total are counters; irq.net_irqs is a gauge. */
static bool is_irq_counter(const char *name)
{
	return strncmp(name, "irq.", 4) == 0 && name[4] >= '0' && name[4] <= '9';
}

static bool summed(const char *name, bool *count)
{
	*count = true;
	if (in_list(name, summed_counts, COUNT(summed_counts)) || is_irq_counter(name))
		return true;
	for (size_t i = 0; i < COUNT(summed_prefixes); i++)
		if (strncmp(name, summed_prefixes[i], strlen(summed_prefixes[i])) == 0)
			return true;
	*count = false;
	return in_list(name, summed_amounts, COUNT(summed_amounts));
}

static int check_name(const char *name)
{
	size_t len = name ? strnlen(name, POLICY_METRIC_MAX) : 0;

	if (len == 0 || len >= POLICY_METRIC_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x21 || (unsigned char)name[i] > 0x7e)
			return -EINVAL;
	if (strchr(name, '*'))
		return -EOPNOTSUPP;
	return 0;
}

bool block_metric_client_timed(const char *name)
{
	for (size_t i = 0; i < COUNT(quantiles); i++)
		if (strcmp(name, quantiles[i].name) == 0)
			return quantiles[i].client;
	return false;
}

int block_metric_kind(const char *name, enum block_kind *kind, bool *count)
{
	int rc = check_name(name);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < COUNT(quantiles); i++)
		if (strcmp(name, quantiles[i].name) == 0) {
			*kind = BLOCK_QUANTILE;
			*count = false;
			return 0;
		}
	for (size_t i = 0; i < COUNT(derived); i++)
		if (strcmp(name, derived[i].name) == 0) {
			*kind = BLOCK_RATIO;
			*count = derived[i].count;
			return 0;
		}
	if (strncmp(name, "loadgen.", 8) == 0 && name[8]) {
		*kind = BLOCK_RUN;
		*count = false;
		return 0;
	}
	if (summed(name, count)) {
		*kind = BLOCK_PER_KREQ;
		return 0;
	}
	*kind = BLOCK_MEAN;
	*count = false;
	return 0;
}

/* What clients get, by name or prefix (nginx.err.*: requests or connections nginx logged as failed): every other
 * metric is internal to the host. */
static const char *const outcome_names[] = {
	"http.good_rate", "http.2xx", "http.3xx", "http.5xx", "http.5xx_rate", "http.502", "http.504", "http.p50_ms",
	"http.p90_ms", "http.p99_ms", "http.mean_ms", "http.timeouts", "tcp.listen_overflows", "tcp.listen_drops",
	"tcp.reqq_full_drop", "softnet.dropped", "softnet.drop_rate", "nginx.unhandled", "tcp.accept_wait",
};
static const char *const outcome_prefixes[] = { "client.", "loadgen.", "nginx.err." };

bool block_metric_outcome(const char *name)
{
	/* A response buffered to disk is served all the same. */
	if (!name || strcmp(name, "nginx.err.buffered_temp") == 0)
		return false;
	for (size_t i = 0; i < COUNT(outcome_names); i++)
		if (strcmp(name, outcome_names[i]) == 0)
			return true;
	for (size_t i = 0; i < COUNT(outcome_prefixes); i++)
		if (strncmp(name, outcome_prefixes[i], strlen(outcome_prefixes[i])) == 0)
			return true;
	return false;
}

int block_spec_init(struct block_spec *spec, const char *const *names, size_t n, int64_t tick_ms)
{
	memset(spec, 0, sizeof(*spec));
	if (!names || n == 0 || n > BLOCK_METRICS_MAX || tick_ms <= 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int rc = check_name(names[i]);

		if (rc < 0)
			return rc;
		memcpy(spec->names[i], names[i], strlen(names[i]) + 1);
	}
	spec->n = n;
	spec->tick_ms = tick_ms;
	spec->max_missing = BLOCK_MAX_MISSING_DEFAULT;
	return 0;
}

int block_spec_from_policy(struct block_spec *spec, const struct knob_policy *p, int64_t tick_ms)
{
	const char *names[BLOCK_METRICS_MAX];
	size_t n = 0;

	if (!p || p->nguardrails > POLICY_GUARDRAILS_MAX)
		return -EINVAL;
	names[n++] = p->objective.metric;
	for (size_t i = 0; i < p->nguardrails; i++)
		names[n++] = p->guardrails[i].metric;
	return block_spec_init(spec, names, n, tick_ms);
}

/* Index of input NAME, added when new; -ENOSPC past the table (cannot happen with checked specs). */
static int input_index(struct block_acc *acc, const char *name)
{
	for (size_t i = 0; i < acc->nin; i++)
		if (strcmp(acc->in[i].name, name) == 0)
			return (int)i;
	if (acc->nin >= COUNT(acc->in) || strlen(name) >= POLICY_METRIC_MAX)
		return -ENOSPC;
	memcpy(acc->in[acc->nin].name, name, strlen(name) + 1);
	acc->in[acc->nin].id = 0;
	acc->in[acc->nin].v = NAN;
	return (int)acc->nin++;
}

static int define(struct block_acc *acc, const char *name, struct block_def *d)
{
	int rc = block_metric_kind(name, &d->kind, &d->count);

	if (rc < 0)
		return rc;
	d->cpu = false;
	d->q = 0;
	d->nnum = 0;
	d->den = -1;
	d->den_scale = 1.0;
	switch (d->kind) {
	case BLOCK_QUANTILE:
		for (size_t i = 0; i < COUNT(quantiles); i++)
			if (strcmp(name, quantiles[i].name) == 0)
				d->q = quantiles[i].q, d->client = quantiles[i].client;
		return 0;
	case BLOCK_RATIO:
		for (size_t i = 0; i < COUNT(derived); i++) {
			const struct derived_def *dd = &derived[i];

			if (strcmp(name, dd->name) != 0)
				continue;
			d->cpu = dd->cpu;
			for (size_t j = 0; j < COUNT(dd->num) && dd->num[j]; j++) {
				bool neg = dd->num[j][0] == '-';
				int k = input_index(acc, dd->num[j] + neg);

				if (k < 0)
					return k;
				d->num[d->nnum] = k;
				d->num_sign[d->nnum++] = neg ? -1 : 1;
			}
			if (!dd->den) {
				d->den = BLOCK_DEN_SECONDS;
				return 0;
			}
			d->den = input_index(acc, dd->den);
			d->den_scale = dd->den_scale;
			return d->den < 0 ? d->den : 0;
		}
		return -EINVAL;
	case BLOCK_PER_KREQ:
		d->num[0] = input_index(acc, name);
		d->num_sign[0] = 1;
		d->nnum = 1;
		d->den = acc->i_req;
		d->den_scale = 1e-3;
		return d->num[0] < 0 ? d->num[0] : 0;
	case BLOCK_MEAN:
	case BLOCK_RUN:
		d->num[0] = input_index(acc, name);
		d->num_sign[0] = 1;
		d->nnum = 1;
		return d->num[0] < 0 ? d->num[0] : 0;
	}
	return -EINVAL;
}

int block_acc_start(struct block_acc *acc, const struct block_spec *spec, int64_t start_ms, int64_t end_ms,
		    int64_t settle_ms)
{
	int rc;

	if (!acc || !spec || spec->n == 0 || spec->n > BLOCK_METRICS_MAX || spec->tick_ms <= 0 || settle_ms < 0 ||
	    !(spec->max_missing >= 0.0 && spec->max_missing <= 1.0))
		return -EINVAL;
	if (start_ms > INT64_MAX - settle_ms || start_ms + settle_ms >= end_ms)
		return -EINVAL;
	if ((end_ms - start_ms - settle_ms) / spec->tick_ms > INT32_MAX)
		return -EINVAL;
	memset(acc, 0, sizeof(*acc));
	acc->spec = *spec;
	acc->from_ms = start_ms + settle_ms;
	acc->to_ms = end_ms;
	acc->i_req = input_index(acc, "http.requests");
	acc->i_5xx = input_index(acc, "http.5xx");
	acc->i_ovf = input_index(acc, "tcp.listen_overflows");
	acc->i_acc = input_index(acc, "nginx.accepts");
	acc->i_hnd = input_index(acc, "nginx.handled");
	acc->i_cpus = input_index(acc, "sys.cpus");
	acc->i_wrk = input_index(acc, "nginx.workers");
	acc->i_creq = input_index(acc, "client.requests");
	for (size_t i = 0; i < spec->n; i++) {
		if (strnlen(spec->names[i], POLICY_METRIC_MAX) >= POLICY_METRIC_MAX)
			return -EINVAL;
		rc = define(acc, spec->names[i], &acc->def[i]);
		if (rc < 0)
			return rc == -ENOSPC ? -EINVAL : rc;
	}
	acc->reg_max = UINT32_MAX; /* resolve on the first frame */
	hist_reset(&acc->lat);
	hist_reset(&acc->clat);
	return 0;
}

static int cmp_map(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Look up ids not known yet (the sampler interns a name when it first sees it) and rebuild the sorted map. */
static void resolve(struct block_acc *acc, const struct metric_registry *reg)
{
	char name[32];

	for (size_t i = 0; i < acc->nin; i++)
		if (acc->in[i].id == 0 && metric_lookup(reg, acc->in[i].name, &acc->in[i].id) < 0)
			acc->in[i].id = 0;
	for (unsigned b = 0; b < HIST_NBUCKETS; b++) {
		if (!acc->bucket_id[b]) {
			snprintf(name, sizeof(name), "http.lat.b%u", b);
			if (metric_lookup(reg, name, &acc->bucket_id[b]) < 0)
				acc->bucket_id[b] = 0;
		}
		if (!acc->cbucket_id[b]) {
			snprintf(name, sizeof(name), "client.total.lat.b%u", b);
			if (metric_lookup(reg, name, &acc->cbucket_id[b]) < 0)
				acc->cbucket_id[b] = 0;
		}
	}
	acc->nmap = 0;
	for (size_t i = 0; i < acc->nin; i++)
		if (acc->in[i].id) {
			acc->map[acc->nmap].id = acc->in[i].id;
			acc->map[acc->nmap++].slot = (uint16_t)i;
		}
	for (unsigned b = 0; b < HIST_NBUCKETS; b++) {
		if (acc->bucket_id[b]) {
			acc->map[acc->nmap].id = acc->bucket_id[b];
			acc->map[acc->nmap++].slot = (uint16_t)(BUCKET_SLOT + b);
		}
		if (acc->cbucket_id[b]) {
			acc->map[acc->nmap].id = acc->cbucket_id[b];
			acc->map[acc->nmap++].slot = (uint16_t)(CBUCKET_SLOT + b);
		}
	}
	qsort(acc->map, acc->nmap, sizeof(acc->map[0]), cmp_map);
	acc->reg_max = metric_max_id(reg);
}

static bool good(double v)
{
	return isfinite(v) && v >= 0.0 && v <= VALUE_MAX;
}

static void add_count(struct block_count *c, double events, double exposure)
{
	if (!good(events) || !good(exposure))
		return;
	c->events += events;
	c->exposure += exposure;
	c->ticks++;
	if (events > 0)
		c->event_ticks++, c->run++;
	else
		c->run = 0;
}

static void add_buckets(struct hist *h, const double *bucket)
{
	for (unsigned b = 0; b < HIST_NBUCKETS; b++)
		if (bucket[b] > 0)
			hist_add_bucket(h, b, bucket[b] >= UINT32_MAX ? UINT32_MAX : (uint32_t)llround(bucket[b]));
}

int block_acc_add(struct block_acc *acc, const struct metric_registry *reg, const struct frame *fr)
{
	double bucket[HIST_NBUCKETS] = {0}, cbucket[HIST_NBUCKETS] = {0}, dt_ms;
	bool buckets_ok = true, cbuckets_ok = true;
	size_t i, j;

	if (!acc || !reg || !fr || (fr->n && !fr->vals))
		return -EINVAL;
	if (fr->ts_ms < acc->from_ms || fr->ts_ms >= acc->to_ms || (acc->any_frame && fr->ts_ms <= acc->last_ts))
		return 0;
	acc->any_frame = true;
	acc->last_ts = fr->ts_ms;
	acc->frames++;
	if (metric_max_id(reg) != acc->reg_max)
		resolve(acc, reg);
	for (i = 0; i < acc->nin; i++)
		acc->in[i].v = NAN;
	/* Both are sorted by id: one merge walk. An unsorted (hostile) frame loses values, nothing worse. */
	for (i = 0, j = 0; i < fr->n && j < acc->nmap;) {
		if (fr->vals[i].id < acc->map[j].id) {
			i++;
		} else if (fr->vals[i].id > acc->map[j].id) {
			j++;
		} else {
			unsigned slot = acc->map[j].slot;
			double v = fr->vals[i].v;

			if (slot >= CBUCKET_SLOT) {
				if (good(v))
					cbucket[slot - CBUCKET_SLOT] = v;
				else
					cbuckets_ok = false;
			} else if (slot >= BUCKET_SLOT) {
				if (good(v))
					bucket[slot - BUCKET_SLOT] = v;
				else
					buckets_ok = false;
			} else {
				acc->in[slot].v = v;
			}
			i++;
			j++;
		}
	}
	dt_ms = isfinite(fr->dt_s) && fr->dt_s > 0.0 && fr->dt_s * 1000.0 <= 10.0 * (double)acc->spec.tick_ms
			? fr->dt_s * 1000.0
			: (double)acc->spec.tick_ms;

	{
		double req = acc->in[acc->i_req].v;

		if (good(req)) {
			acc->requests += req;
			acc->requests_ticks++;
		}
		add_count(&acc->overflows, acc->in[acc->i_ovf].v, req);
		add_count(&acc->errors, acc->in[acc->i_5xx].v, req);
		if (good(acc->in[acc->i_wrk].v) && acc->in[acc->i_wrk].v > acc->workers)
			acc->workers = acc->in[acc->i_wrk].v;
		if (good(acc->in[acc->i_acc].v) && good(acc->in[acc->i_hnd].v)) {
			acc->unhandled.events += acc->in[acc->i_acc].v - acc->in[acc->i_hnd].v;
			acc->unhandled.exposure += acc->in[acc->i_acc].v;
			acc->unhandled.ticks++;
		}
		if (good(req) && buckets_ok) {
			add_buckets(&acc->lat, bucket);
			acc->lat_ticks++;
		}
		/* The client's buckets are sparse too: a tick in which it ran (client.requests) and answered none
		 * adds nothing, and still counts as a tick with data (its failures are client.failure_rate's). */
		if (good(acc->in[acc->i_creq].v) && cbuckets_ok) {
			add_buckets(&acc->clat, cbucket);
			acc->clat_ticks++;
		}
	}

	for (size_t m = 0; m < acc->spec.n; m++) {
		const struct block_def *d = &acc->def[m];
		double num = 0.0, den, scale = 1.0;
		bool ok = true;

		if (d->kind == BLOCK_QUANTILE)
			continue;
		if (d->cpu) {
			double cpus = acc->in[acc->i_cpus].v;

			if (!good(cpus) || cpus < 1.0)
				continue;
			scale = cpus * dt_ms / 100.0; /* percent of all CPUs over the tick -> CPU ms */
		}
		for (size_t k = 0; k < d->nnum; k++) {
			double v = acc->in[d->num[k]].v;

			if (d->kind == BLOCK_MEAN || d->kind == BLOCK_RUN ? !(isfinite(v) && fabs(v) <= VALUE_MAX) : !good(v)) {
				ok = false;
				break;
			}
			num += d->num_sign[k] * v * scale;
		}
		if (!ok)
			continue;
		if (d->kind == BLOCK_PER_KREQ) {
			acc->num_s[m] += num;
			acc->den_s[m] += dt_ms / 1000.0;
			acc->ticks_s[m]++;
		}
		if (d->den >= 0) {
			den = acc->in[d->den].v;
			if (!good(den))
				continue;
			den *= d->den_scale;
		} else if (d->den == BLOCK_DEN_SECONDS) {
			den = dt_ms / 1000.0;
		} else {
			den = 1.0;
		}
		acc->num[m] += num;
		acc->den[m] += den;
		acc->ticks[m]++;
	}
	return 0;
}

static void finish_count(const struct block_count *in, struct block_count *out)
{
	*out = *in;
	if (in->ticks == 0) {
		out->events = NAN;
		out->exposure = NAN;
	} else if (out->events < 0) {
		out->events = 0;
	}
}

void block_acc_finish(const struct block_acc *acc, struct block_summary *out)
{
	int64_t span = acc->to_ms - acc->from_ms;
	double need;

	memset(out, 0, sizeof(*out));
	out->from_ms = acc->from_ms;
	out->to_ms = acc->to_ms;
	out->expected = (uint32_t)(span / acc->spec.tick_ms);
	if (out->expected == 0)
		out->expected = 1;
	out->frames = acc->frames;
	out->requests = acc->requests;
	out->requests_ticks = acc->requests_ticks;
	finish_count(&acc->overflows, &out->overflows);
	finish_count(&acc->unhandled, &out->unhandled);
	/*
	 * nginx counts a connection in accepts, then does some work (a pool, the peer address) before it counts it
	 * in handled, so a stub_status read can land in between, once per worker at most. The per-tick deltas sum
	 * to the difference at the block's last read less the one at its start, so a block (or the part of one the
	 * controller checks) can show up to one "unhandled" connection per worker that nginx handled a moment later
	 * (found on a real nginx: a clearly good trial aborted on "1 connections dropped"). Those are not drops.
	 */
	if (isfinite(out->unhandled.events))
		out->unhandled.events = fmax(0.0, out->unhandled.events - (acc->workers >= 1.0 ? acc->workers : 1.0));
	finish_count(&acc->errors, &out->errors);
	need = (1.0 - acc->spec.max_missing) * out->expected;
	out->requests_seen = (double)out->requests_ticks >= need;
	out->n = acc->spec.n;
	for (size_t m = 0; m < acc->spec.n; m++) {
		const struct block_def *d = &acc->def[m];
		struct block_value *v = &out->v[m];

		memcpy(v->name, acc->spec.names[m], sizeof(v->name));
		v->name[sizeof(v->name) - 1] = '\0';
		v->kind = d->kind;
		v->count = d->count;
		v->value = v->value_p95 = NAN;
		if (d->kind == BLOCK_QUANTILE) {
			const struct hist *h = d->client ? &acc->clat : &acc->lat;
			double unit = d->client ? 1e-3 : 1.0; /* the client's histogram is in microseconds */

			v->ticks = d->client ? acc->clat_ticks : acc->lat_ticks;
			v->nobs = (double)h->count;
			if (h->count > 0) {
				v->value = hist_quantile(h, d->q) * unit;
				v->value_p95 = d->q > 0.95 ? hist_quantile(h, 0.95) * unit : v->value;
			}
			v->num = v->value;
			v->den = 1.0;
		} else if (d->kind == BLOCK_PER_KREQ && !(acc->den[m] > 0) && (double)acc->ticks_s[m] >= need) {
			/* No request counted (a host blind to them: an access log nginx does not write counts 0 every
			 * tick): the count per second of the block. */
			v->per_second = true;
			v->ticks = acc->ticks_s[m];
			v->num = acc->num_s[m];
			v->den = acc->den_s[m];
			if (v->den > 0 && isfinite(v->num))
				v->value = v->value_p95 = v->num / v->den;
		} else {
			v->ticks = acc->ticks[m];
			v->num = acc->num[m];
			v->den = acc->den[m];
			if (d->count && v->num < 0)
				v->num = 0; /* accepts - handled summed over ticks sampled a moment apart */
			if (v->den > 0 && isfinite(v->num) && isfinite(v->den))
				v->value = v->value_p95 = v->num / v->den;
		}
		/* A run's figures arrive in one frame per run: one run in the window is a measurement. */
		v->is_void = (d->kind == BLOCK_RUN ? v->ticks == 0 : (double)v->ticks < need) || !isfinite(v->value);
		/* Good responses where no request at all was counted are not measured (an access log nginx does not
		 * write counts 0 every tick), not zero. */
		if (d->den == BLOCK_DEN_SECONDS && !(out->requests > 0))
			v->is_void = true;
	}
	out->is_void = out->v[0].is_void;
}

int block_reduce(struct block_acc *acc, const struct block_spec *spec, const struct metric_registry *reg,
		 const struct frame *frames, size_t n, int64_t start_ms, int64_t end_ms, int64_t settle_ms,
		 struct block_summary *out)
{
	int rc = block_acc_start(acc, spec, start_ms, end_ms, settle_ms);

	if (rc < 0)
		return rc;
	if (n && !frames)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		rc = block_acc_add(acc, reg, &frames[i]);
		if (rc < 0)
			return rc;
	}
	block_acc_finish(acc, out);
	return 0;
}
