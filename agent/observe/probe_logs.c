/*
 * probe_logs: what nginx's access log (requests, status classes, request and upstream time, a latency histogram)
 * and error log (errors by kind) gained since the last tick, through logtail. Rows of the sampler's probe table;
 * see sampler_kit.h for the rules.
 */
#include "build-config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/hist.h"
#include "core/parse.h"
#include "observe/logtail.h"
#include "observe/sampler_kit.h"

#define ACCESS_BYTES_PER_TICK (16u << 20)
/* A failed upstream connect is a line of about 280 bytes: nginx whose local ports ran out wrote 14000 a second in
 * tests/system/scenario-ports.sh, and 1 MiB a 500 ms tick fell behind by half. */
#define ERROR_BYTES_PER_TICK (4u << 20)
#define ACCESS_BAD_MIN 3 /* lines of a tick not understood before the share of them counts */

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
	/* A gateway's two errors apart from the other 5xx: 502 (the upstream connection failed or broke) and 504
	 * (it timed out). */
	s->acc_502 += rec.status == 502;
	s->acc_504 += rec.status == 504;
	/* combined and its variants count with their status, and have no time: none is taken as 0 ms. */
	if (!rec.has_time)
		return;
	s->acc_timed++;
	s->acc_req_ms += rec.request_ms;
	s->acc_up_ms += rec.upstream_ms;
	s->acc_conn_ms += rec.upstream_connect_ms;
	s->acc_conn_n += rec.has_connect;
	hist_add(&s->tick_hist, rec.request_ms);
}

static void on_error_line(void *ctx, const char *line, size_t len)
{
	struct sampler *s = ctx;

	s->err_kind[parse_errorlog_line(line, len)]++;
}

static int ensure_tail(struct sampler *s, struct logtail **t, char *saved, const char *path)
{
	int r;

	if (*t)
		return 0;
	r = logtail_open_with(path, s->open_log, s->open_log_ctx, t);
	if (r == 0)
		snprintf(saved, CONFIG_PATH_MAX, "%s", path);
	return r;
}

void probe_logs_access(struct sampler *s, struct frame *fr)
{
	bool more = false;
	int r;

	s->acc_n = s->acc_timed = s->acc_req_ms = s->acc_up_ms = s->acc_bad = 0;
	s->acc_502 = s->acc_504 = s->acc_conn_ms = s->acc_conn_n = 0;
	memset(s->acc_class, 0, sizeof(s->acc_class));
	hist_reset(&s->tick_hist);
	r = ensure_tail(s, &s->access, s->access_path, s->cfg.access_log);
	if (r == 0)
		r = logtail_poll(s->access, ACCESS_BYTES_PER_TICK, on_access_line, s, &more);
	if (r < 0) {
		sampler_probe_fail(s, fr, PROBE_ACCESSLOG, r, "%s: %s", s->cfg.access_log, strerror(-r));
		return;
	}
	sampler_put_gauge(s, fr, "http.requests", (double)s->acc_n);
	for (int c = 1; c <= 5; c++)
		sampler_putk_gauge(s, fr, SAMPLER_KEY(K_HTTP_CLASS, c, 0), (double)s->acc_class[c], "http.%dxx", c);
	sampler_put_gauge(s, fr, "http.502", (double)s->acc_502);
	sampler_put_gauge(s, fr, "http.504", (double)s->acc_504);
	sampler_put_gauge(s, fr, "http.unparsed", (double)s->acc_bad);
	/* Times only from lines that have them: requests logged without (combined) leave latency unavailable
	 * (absent), never 0 ms. A tick without requests keeps its zero sums, as before. */
	if (s->acc_timed > 0 || s->acc_n == 0) {
		sampler_put_gauge(s, fr, "http.request_ms_sum", (double)s->acc_req_ms);
		sampler_put_gauge(s, fr, "http.upstream_ms_sum", (double)s->acc_up_ms);
		/* Only from a log that has $upstream_connect_time (the agent's own format does): absent otherwise,
		 * never 0 ms for connects it cannot see. */
		if (s->acc_conn_n > 0 || (s->acc_n == 0 && s->conn_seen))
			sampler_put_gauge(s, fr, "http.upstream_connect_ms_sum", (double)s->acc_conn_ms);
		s->conn_seen = s->conn_seen || s->acc_conn_n > 0;
		/* nginx rounds request and upstream times separately, so sub-millisecond requests can sum above 1. */
		sampler_put_gauge(s, fr, "http.upstream_share",
				  s->acc_req_ms ? fmin(1.0, (double)s->acc_up_ms / (double)s->acc_req_ms) : NAN);
		sampler_put_gauge(s, fr, "http.p50_ms", hist_quantile(&s->tick_hist, 0.50));
		sampler_put_gauge(s, fr, "http.p90_ms", hist_quantile(&s->tick_hist, 0.90));
		sampler_put_gauge(s, fr, "http.p99_ms", hist_quantile(&s->tick_hist, 0.99));
	}
	sampler_put_gauge(s, fr, "http.timed", (double)s->acc_timed);
	sampler_put_gauge(s, fr, "http.backlog", more ? 1 : 0);
	/* The histogram is stored sparse: a bucket absent from a frame that has http.requests is zero. */
	for (unsigned i = 0; i < HIST_NBUCKETS; i++)
		if (s->tick_hist.b[i])
			sampler_putk_gauge(s, fr, SAMPLER_KEY(K_HTTP_LAT, i, 0), (double)s->tick_hist.b[i],
					   "http.lat.b%u", i);
	/* Under 90% of a tick's lines understood (at least ACCESS_BAD_MIN of them not, so that one line cut at a
	 * rotation does not flap it): the probe is not ok, and says how to fix it. */
	if (s->acc_bad >= ACCESS_BAD_MIN && s->acc_bad * 10 > s->acc_n + s->acc_bad) {
		sampler_probe_fail(s, fr, PROBE_ACCESSLOG, -EBADMSG,
				   "%s: %llu of %llu lines in the last tick not understood: log in the format ngxat_json "
				   "(ngxctl setup --apply adds such a log; ngx-autotune.conf(5))",
				   s->cfg.access_log, (unsigned long long)s->acc_bad,
				   (unsigned long long)(s->acc_n + s->acc_bad));
		return;
	}
	sampler_probe_ok(s, fr, PROBE_ACCESSLOG);
}

void probe_logs_error(struct sampler *s, struct frame *fr)
{
	bool more = false;
	int r;

	memset(s->err_kind, 0, sizeof(s->err_kind));
	r = ensure_tail(s, &s->errlog, s->errlog_path, s->cfg.error_log);
	if (r == 0)
		r = logtail_poll(s->errlog, ERROR_BYTES_PER_TICK, on_error_line, s, &more);
	if (r < 0) {
		sampler_probe_fail(s, fr, PROBE_ERRORLOG, r, "%s: %s", s->cfg.error_log, strerror(-r));
		return;
	}
	/* nginx.err.upstream_timeout counts every "upstream timed out", as it did before the connects were told
	 * apart; nginx.err.connect_timeout is the part of them that timed out connecting. */
	for (int k = 1; k < ERRLOG_KIND_COUNT; k++) {
		uint64_t n = s->err_kind[k] + (k == ERRLOG_UPSTREAM_TIMEOUT ? s->err_kind[ERRLOG_CONNECT_TIMEOUT] : 0);

		sampler_putk_gauge(s, fr, SAMPLER_KEY(K_ERRLOG, k, 0), (double)n, "nginx.err.%s",
				   errlog_kind_name((enum errlog_kind)k));
	}
	sampler_probe_ok(s, fr, PROBE_ERRORLOG);
}
