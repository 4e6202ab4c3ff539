/*
 * sampler: one frame per tick from every probe.
 *
 * Owns the probes (file reads under the configured root, kept open between ticks where the kernel regenerates
 * them, the nginx pid and workers, the log tailers, the netlink probe, the stub_status client), their health, and
 * the conversion of raw counters into per-tick deltas. A table in sampler.c names every probe and its turn; each
 * probe or tight family of probes is one probe_*.c file, and what they share is sampler_kit.c (see sampler_kit.h).
 * Parsing is done by the pure parsers in core/.
 * The stub_status fetch and the synthetic client's requests are split out (sampler_stub_*, sampler_client_*) so that
 * the loop can run them on the thread pool: they are the probes that can block. The sampler never writes to the host and never logs a probe failure more than once per
 * change of its error.
 */
#ifndef NGXAT_SAMPLER_H
#define NGXAT_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "core/metrics.h"
#include "observe/probe.h"

struct sampler;

/* Create a sampler for CFG that interns metric names into REG. 0 or -ENOMEM. */
int sampler_new(const struct config *cfg, struct metric_registry *reg, struct sampler **out);
/* Free; NULL is fine. */
void sampler_free(struct sampler *s);
/* Where the netlink probe gets the sockets of nginx's network namespace: FN(CTX, PID, ...), as nssock_netlink
 * (priv/nssock.h): 0 with both (the sampler's then), -EINPROGRESS while they are on their way, or -errno with WHY.
 * Unset (FN NULL): the sampler enters the namespace itself (setns, a capability the engine will not have). */
typedef int (*sampler_ns_netlink_fn)(void *ctx, pid_t pid, int *diag, int *route, char *why, size_t whylen);
void sampler_set_ns_netlink(struct sampler *s, sampler_ns_netlink_fn fn, void *ctx);
/* Where stub_status and the synthetic client get the TCP sockets of nginx's namespace: FN(CTX, PID, FAMILY), as
 * nssock_tcp, called from the pool threads that fetch: a socket (theirs), or -errno. Unset: the sampler enters the
 * namespace itself. */
typedef int (*sampler_ns_tcp_fn)(void *ctx, pid_t pid, int family);
void sampler_set_ns_tcp(struct sampler *s, sampler_ns_tcp_fn fn, void *ctx);
/* How the access and error logs are opened: FN(CTX, PATH), as logtail_open_with's opener (an engine that may not
 * read them asks its writer, nssock_open_log), from the next (re)open on. Unset: open(2). */
void sampler_set_open_log(struct sampler *s, int (*fn)(void *ctx, const char *path), void *ctx);
/* With FN set and nginx found (sampler_begin): its sockets asked for now, or taken if they came, so that a tick does
 * not have to wait for them (the agent's start). Nothing is reported: the tick does that. */
void sampler_prepare_netlink(struct sampler *s);
/* Take a new configuration (after a reload); tailers and sockets whose path changed are reopened lazily. */
void sampler_reconfigure(struct sampler *s, const struct config *cfg);
/* Name of a probe ("netstat", ...). */
const char *sampler_probe_name(enum probe_id id);
/* Health of probe ID. */
const struct probe_health *sampler_health(const struct sampler *s, enum probe_id id);
/* nginx master pid (0 when unknown) and number of workers found last tick. */
void sampler_nginx(const struct sampler *s, pid_t *master, unsigned *workers);
/* The workers' pids found last tick (at most MAX into OUT); how many. A reload replaces all of them. */
size_t sampler_worker_pids(const struct sampler *s, pid_t *out, size_t max);

/* Start a tick: find nginx (its pid and namespace) so that the stub_status fetch goes to the right place. */
void sampler_begin(struct sampler *s, struct frame *fr);
/* Run every other probe except stub_status into FR (ts_ms and dt_s already set by the caller). */
void sampler_collect(struct sampler *s, struct frame *fr);
/* Between ticks (on the loop thread): one more sample of the connections waiting to be accepted, for listen.wait_ms
 * (a tick's instant alone is in phase with whatever recurs at the tick's period: workers stalled each second). A
 * listen-only dump on the netlink client the ticks opened, nothing when it is not open; no frame. */
void sampler_listen_sample(struct sampler *s);
/* Whether stub_status is configured. */
bool sampler_stub_enabled(const struct sampler *s);
/* Prepare a fetch handle for the thread pool (allocates on first use). Returns an opaque pointer or NULL. */
void *sampler_stub_prepare(struct sampler *s);
/* Blocking fetch; runs on a pool thread and touches nothing but HANDLE and RES. */
void sampler_stub_fetch(void *handle, struct stub_result *res);
/* Parse RES into FR and account the probe's health (on the loop thread). */
void sampler_stub_apply(struct sampler *s, struct frame *fr, const struct stub_result *res);
/* Mark stub_status missing for this tick (the previous fetch was still running). */
void sampler_stub_skip(struct sampler *s, struct frame *fr, const char *why);
/* Whether the synthetic client is configured. */
bool sampler_client_enabled(const struct sampler *s);
/* Prepare a run of the client's requests for the thread pool. Returns an opaque pointer or NULL (no memory). */
void *sampler_client_prepare(struct sampler *s);
/* A run on the pool is to start U (uniform in [0, 1)) into the slack its budget leaves beside one timeout, not in
 * phase with the tick: its budget less that; the delay in ms, for the caller to wait before it queues the run. */
int64_t sampler_client_delay(void *handle, double u);
/* The blocking run, bounded by 80% of a tick; on a pool thread, it touches nothing but HANDLE and RES. */
void sampler_client_run(void *handle, struct client_result *res);
/* Put RES into FR and account the client's health (on the loop thread). */
void sampler_client_apply(struct sampler *s, struct frame *fr, const struct client_result *res);
/* Mark the client missing for this tick (the previous run was still going). */
void sampler_client_skip(struct sampler *s, struct frame *fr, const char *why);
/* The URLs the client asks while [client] url is empty (blank-separated, at most CONFIG_CLIENT_URLS_MAX): what
 * the caller found in nginx's configuration; NULL or "" for stub_status_url's host and port, path "/". */
void sampler_client_default_urls(struct sampler *s, const char *urls);

#endif
