/*
 * probe_client: the synthetic client, what a client of nginx sees: a few GETs per tick ([client] requests_per_tick)
 * to the URLs of [client] url, by default those the agent found in nginx's configuration (the first address it
 * serves plain HTTP on, path "/", and one location it proxies: sampler_client_default_urls), else the host and port
 * stub_status answers on with path "/". The URLs take turns; each one's first request of a tick goes on a
 * connection kept alive between ticks (the server's answer without a handshake), the others each on a fresh
 * connection (the handshake and the accept queue, which $request_time never sees). On the pool a run is started at a
 * random moment of the slack the budget leaves beside one timeout (client_start_delay_ms, the caller's timer), so
 * that what recurs in phase with the tick is not seen always or never. Every socket is made inside
 * nginx's network namespace, as the stub_status fetch's are, through stubhttp, which also times each phase.
 *
 * Like stub_status it can block, so the caller runs it: prepared on the loop, run on a pool thread (which touches
 * nothing but the handle and the result), applied on the loop (sampler_client_* in sampler.h). The run is bounded
 * by 80% of a tick (core/client.c's budget) and each request by [client] timeout, at most the budget: the first of
 * a tick gets all of that, and a request unanswered within it is a timeout, counted; a later one the budget cut
 * short that timed out is left out, so that a timeout always means the whole timeout. A row of the sampler's probe
 * table (run by the caller); see sampler_kit.h for the rules.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/client.h"
#include "observe/sampler_kit.h"
#include "observe/stubhttp.h"

#define CLIENT_BODY_MAX (64u << 10) /* an answer's body is read whole and dropped: point url at a small page */

/* One URL the client asks, with its two clients. */
struct client_target {
	struct stubhttp *kept;   /* the kept-alive connection's client */
	struct stubhttp *fresh;  /* a new connection per request */
	char url[CONFIG_PATH_MAX];
};

struct client_handle {
	struct client_target t[CONFIG_CLIENT_URLS_MAX];
	size_t nt;
	unsigned turn;           /* which URL a run starts with: they take turns when there are more than requests */
	char urls[CONFIG_PATH_MAX]; /* the list in force, to see a change */
	int err;                 /* the URLs cannot be asked (-EINVAL, -ENOENT), with msg */
	char msg[192];
	int netns_fd;            /* a dup of sampler.netns_fd for one run, closed by the run */
	uint64_t netns_gen;
	struct ns_maker ns;      /* the writer's sockets of nginx's namespace, when it makes them */
	int64_t timeout_ms, budget_ms;
	int64_t delay_ms;        /* the run starts this long after the tick (the caller's timer), its budget less */
	uint32_t requests;
	char *body;              /* CLIENT_BODY_MAX bytes */
};

/* The phases, in the order of K_CLIENT_LAT's a. */
enum { PH_CONNECT, PH_TTFB, PH_TOTAL };

static void drop_targets(struct client_handle *h)
{
	for (size_t i = 0; i < h->nt; i++) {
		stubhttp_free(h->t[i].kept);
		stubhttp_free(h->t[i].fresh);
	}
	memset(h->t, 0, sizeof(h->t));
	h->nt = 0;
}

void probe_client_free(struct client_handle *h)
{
	if (!h)
		return;
	drop_targets(h);
	if (h->netns_fd >= 0)
		close(h->netns_fd);
	free(h->body);
	free(h);
}

/* The URLs in force: [client] url, else those found in nginx's configuration, else stub_status's host and port. */
static void urls_of(const struct sampler *s, struct config *c)
{
	*c = s->cfg;
	if (!c->client_url[0] && s->client_default_urls[0])
		snprintf(c->client_url, sizeof(c->client_url), "%s", s->client_default_urls);
}

/* The URLs of S, each with its two clients; a URL they refuse is kept in h->err, said every tick. */
static void set_urls(struct client_handle *h, const struct sampler *s)
{
	struct config c;
	char url[CONFIG_PATH_MAX], err[128] = "", all[CONFIG_PATH_MAX] = "";
	size_t off = 0;
	int r = 0;

	urls_of(s, &c);
	for (size_t i = 0; i < CONFIG_CLIENT_URLS_MAX && config_client_url(&c, i, url, sizeof(url)) == 0; i++)
		off += (size_t)snprintf(all + off, off < sizeof(all) ? sizeof(all) - off : 0, "%s%s", i ? " " : "", url);
	if (strcmp(all, h->urls) == 0 && (h->nt || h->err))
		return;
	drop_targets(h);
	h->err = 0;
	h->msg[0] = '\0';
	snprintf(h->urls, sizeof(h->urls), "%s", all);
	if (!all[0]) {
		h->err = -ENOENT;
		snprintf(h->msg, sizeof(h->msg), "no URL: set [client] url (or [nginx] stub_status_url)");
		return;
	}
	for (size_t i = 0; r == 0 && i < CONFIG_CLIENT_URLS_MAX && config_client_url(&c, i, url, sizeof(url)) == 0;
	     i++) {
		struct client_target *t = &h->t[h->nt++];

		snprintf(t->url, sizeof(t->url), "%s", url);
		r = stubhttp_new(url, &t->kept, err, sizeof(err));
		if (r == 0)
			r = stubhttp_new(url, &t->fresh, err, sizeof(err));
	}
	if (r < 0) {
		h->err = r;
		snprintf(h->msg, sizeof(h->msg), "%.90s: %.60s (plain http:// only: set [client] url)",
			 h->t[h->nt - 1].url, err[0] ? err : strerror(-r));
		drop_targets(h);
	}
}

void *probe_client_prepare(struct sampler *s)
{
	struct client_handle *h = s->client;

	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return NULL;
		h->netns_fd = -1;
		h->body = malloc(CLIENT_BODY_MAX);
		if (!h->body) {
			free(h);
			return NULL;
		}
		s->client = h;
	}
	set_urls(h, s);
	h->budget_ms = client_budget_ms(s->cfg.tick_ms);
	h->timeout_ms = s->cfg.client_timeout_ms;
	h->delay_ms = 0;
	h->requests = (uint32_t)s->cfg.client_requests;
	/* The run owns a duplicate: the loop may switch namespaces (nginx restarted) while it runs. */
	h->netns_fd = s->netns_fd >= 0 ? fcntl(s->netns_fd, F_DUPFD_CLOEXEC, 0) : -1;
	h->netns_gen = s->netns_gen;
	sampler_ns_maker(s, &h->ns);
	for (size_t i = 0; i < h->nt; i++) {
		stubhttp_set_socket(h->t[i].kept, h->ns.fn ? sampler_ns_make : NULL, &h->ns);
		stubhttp_set_socket(h->t[i].fresh, h->ns.fn ? sampler_ns_make : NULL, &h->ns);
	}
	return h;
}

int64_t probe_client_delay(void *handle, double u)
{
	struct client_handle *h = handle;

	h->delay_ms = client_start_delay_ms(h->timeout_ms, h->budget_ms, u);
	return h->delay_ms;
}

void probe_client_run(void *handle, struct client_result *res)
{
	struct client_handle *h = handle;
	int64_t budget_ms = h->budget_ms - h->delay_ms;
	uint64_t spent_us = 0;

	memset(res, 0, sizeof(*res));
	client_tick_reset(&res->tick);
	res->err = h->err;
	snprintf(res->msg, sizeof(res->msg), "%s", h->msg);
	for (uint32_t i = 0; !h->err && h->nt && i < h->requests; i++) {
		struct client_target *tg = &h->t[(h->turn + i) % h->nt];
		struct stubhttp_timing t;
		struct client_request rq;
		char err[160];
		int64_t tmo = client_request_timeout_ms(h->timeout_ms, budget_ms, spent_us);
		size_t len;
		int status;
		bool fresh = i >= h->nt;

		if (tmo <= 0)
			break;
		rq.err = stubhttp_get_timed(fresh ? tg->fresh : tg->kept, h->netns_fd, h->netns_gen, (int)tmo, fresh,
					    h->body, CLIENT_BODY_MAX, &len, &status, &t, err, sizeof(err));
		rq.status = status;
		rq.connected = t.connected;
		rq.connect_us = t.connect_us;
		rq.ttfb_us = t.ttfb_us;
		rq.total_us = t.total_us;
		spent_us += t.total_us;
		if (client_cut_short(rq.err, tmo, h->timeout_ms, budget_ms))
			break;
		if (client_tick_add(&res->tick, &rq) != CLIENT_OK && !res->msg[0]) {
			if (rq.err < 0)
				snprintf(res->msg, sizeof(res->msg), "%.80s: %.100s", tg->url, err);
			else
				snprintf(res->msg, sizeof(res->msg), "%.100s: HTTP %d", tg->url, status);
		}
	}
	h->turn = h->nt ? (h->turn + 1) % (unsigned)h->nt : 0;
	if (h->netns_fd >= 0)
		close(h->netns_fd);
	h->netns_fd = -1;
}

/* Histogram H of phase PH, sparse (a bucket absent from a frame that has client.requests is zero), with its count
 * TIMED and sum SUM; FMT formats a bucket's name. */
static void put_hist(struct sampler *s, struct frame *fr, unsigned ph, const struct hist *h, const char *fmt,
		     const char *timed, const char *sum)
{
	sampler_put_gauge(s, fr, timed, (double)h->count);
	sampler_put_gauge(s, fr, sum, (double)h->sum_ms); /* hist's unit, here microseconds */
	for (unsigned i = 0; i < HIST_NBUCKETS; i++)
		if (h->b[i])
			sampler_putk_gauge(s, fr, SAMPLER_KEY(K_CLIENT_LAT, ph, i), (double)h->b[i], fmt, i);
}

void probe_client_apply(struct sampler *s, struct frame *fr, const struct client_result *res)
{
	const struct client_tick *t = &res->tick;

	if (res->err < 0) {
		sampler_probe_fail(s, fr, PROBE_CLIENT, res->err, "%s", res->msg);
		return;
	}
	/* Failures are the client's data, not a failure to observe: counted in the frame either way. */
	sampler_put_gauge(s, fr, "client.requests", (double)t->requests);
	sampler_put_gauge(s, fr, "client.failures", (double)t->failures);
	sampler_put_gauge(s, fr, "client.timeouts", (double)t->timeouts);
	sampler_put_gauge(s, fr, "client.connect_p50_ms", client_quantile_ms(&t->connect, 0.50));
	sampler_put_gauge(s, fr, "client.connect_p99_ms", client_quantile_ms(&t->connect, 0.99));
	sampler_put_gauge(s, fr, "client.ttfb_p99_ms", client_quantile_ms(&t->ttfb, 0.99));
	sampler_put_gauge(s, fr, "client.total_p50_ms", client_quantile_ms(&t->total, 0.50));
	sampler_put_gauge(s, fr, "client.total_p99_ms", client_quantile_ms(&t->total, 0.99));
	put_hist(s, fr, PH_CONNECT, &t->connect, "client.connect.lat.b%u", "client.connect.timed", "client.connect.us_sum");
	put_hist(s, fr, PH_TTFB, &t->ttfb, "client.ttfb.lat.b%u", "client.ttfb.timed", "client.ttfb.us_sum");
	put_hist(s, fr, PH_TOTAL, &t->total, "client.total.lat.b%u", "client.total.timed", "client.total.us_sum");
	/* Not one answer: the status line says why (nginx down, the port refusing, a URL that is not served). The
	 * counts stay out of the message, which is logged whenever it changes. */
	if (t->requests > 0 && t->total.count == 0) {
		sampler_probe_fail(s, fr, PROBE_CLIENT, t->timeouts == t->requests ? -ETIMEDOUT : -EIO,
				   "no answer this tick: %s", res->msg);
		return;
	}
	sampler_probe_ok(s, fr, PROBE_CLIENT);
}

void probe_client_skip(struct sampler *s, struct frame *fr, const char *why)
{
	sampler_probe_fail(s, fr, PROBE_CLIENT, -EBUSY, "%s", why);
}
