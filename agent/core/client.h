/*
 * client: the synthetic client's arithmetic, pure: how one request's outcome is classed, what a tick's requests
 * add up to (counts, and histograms of connect time, time to first byte and total time in microseconds), their
 * percentiles in milliseconds, and how a tick's budget bounds its requests.
 *
 * The requests themselves are made by observe/probe_client.c (through observe/stubhttp.c) on a pool thread. This
 * module must not do I/O, read a clock or log. Times are microseconds in core/hist's buckets (exact up to 15 us,
 * then within 6.25%), so a loopback answer of 80 us is not rounded to 0 ms; the histogram ends at HIST_MAX_MS
 * units, about 4.2 s, which bounds [client] timeout.
 */
#ifndef NGXAT_CLIENT_H
#define NGXAT_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "hist.h"

enum client_outcome {
	CLIENT_OK,      /* a complete answer with a status of 200-399 */
	CLIENT_FAILED,  /* refused, reset, closed early, not HTTP, a bad status, too large */
	CLIENT_TIMEOUT, /* no complete answer within the timeout */
};

/* One request as the prober saw it. */
struct client_request {
	int err;             /* 0 or the -errno of the request */
	int status;          /* HTTP status when err is 0 */
	bool connected;      /* a connection was made for it (connect_us is valid) */
	uint64_t connect_us; /* from the start to the connection */
	uint64_t ttfb_us;    /* from the start to the first byte of the answer */
	uint64_t total_us;   /* from the start to the end of the answer, or to the timeout */
};

/* A tick's requests. Histograms are in microseconds (core/hist's unit read as us). */
struct client_tick {
	uint32_t requests, failures, timeouts; /* failures does not include timeouts */
	struct hist connect;  /* every connection made, whatever became of its request */
	struct hist ttfb;     /* answered requests (CLIENT_OK) only */
	struct hist total;    /* answered requests, and timed-out ones at the time they were given */
};

/* Zero T. */
void client_tick_reset(struct client_tick *t);
/* What ERR (0 or -errno) and STATUS make of a request. */
enum client_outcome client_classify(int err, int status);
/* Add request RQ to T; returns its outcome. */
enum client_outcome client_tick_add(struct client_tick *t, const struct client_request *rq);
/* Quantile Q of microsecond histogram H, in milliseconds; NAN when H is empty. */
double client_quantile_ms(const struct hist *h, double q);
/* The time a tick's requests may take together: 80% of TICK_MS, so that a run ends before the next tick. */
int64_t client_budget_ms(int64_t tick_ms);
/* What one request may take: TIMEOUT_MS, or the whole BUDGET_MS when that is less (a [client] timeout longer
 * than 80% of the tick). 0 when either is not positive. */
int64_t client_timeout_ms(int64_t timeout_ms, int64_t budget_ms);
/* The timeout of the next request after SPENT_US of the tick's BUDGET_MS: client_timeout_ms, or what is left of
 * the budget when that is less; 0 when under 1 ms is left (no more requests this tick). The first request of a
 * tick always gets the whole client_timeout_ms. */
int64_t client_request_timeout_ms(int64_t timeout_ms, int64_t budget_ms, uint64_t spent_us);
/* How long after the tick a run of the tick's requests starts: U (a uniform fraction in [0, 1)) of the slack the
 * budget leaves beside one whole timeout (client_timeout_ms), so that the first request still gets all of it; 0 when
 * there is none. The run's budget is BUDGET_MS less that. A run at the tick's own moment sees whatever recurs in
 * phase with the tick every time, or never. */
int64_t client_start_delay_ms(int64_t timeout_ms, int64_t budget_ms, double u);
/*
 * Whether a request given GIVEN_MS that ended in ERR is left out of the tick: one the budget cut short (given less
 * than client_timeout_ms of TIMEOUT_MS and BUDGET_MS) that timed out says nothing about the timeout. Every request
 * given the whole of it that goes unanswered is a timeout, counted; the first of a tick always is (measured against
 * [client] timeout rather than the budget's bound, a saturated nginx with 500 ms ticks had every request of every
 * tick left out, and the client's figures empty).
 */
bool client_cut_short(int err, int64_t given_ms, int64_t timeout_ms, int64_t budget_ms);

#endif
