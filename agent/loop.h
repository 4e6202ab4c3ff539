/*
 * loop: the agent's one libuv loop, the tick, signals, and the only reader of clocks.
 *
 * Each tick: sample (stub_status on the thread pool, the rest on the loop) -> store -> status/watchdog. A tick
 * that is still waiting for its stub_status fetch when the next one is due makes that next one "late" (skipped,
 * counted), never a second tick in flight. SIGTERM/SIGINT stop cleanly; SIGHUP reloads the configuration and keeps
 * the old one when the new one does not parse.
 */
#ifndef NGXAT_LOOP_H
#define NGXAT_LOOP_H

#include <stdint.h>

struct agent;

/* Set up the loop, the tick timer and the signal handlers for A (store, sampler and API are the caller's). */
int loop_init(struct agent *a);
/* Run until a stop signal; returns 0. */
int loop_run(struct agent *a);
/* Reload the configuration file (what SIGHUP does). 0, or -errno when the new file was refused. */
int loop_reload(struct agent *a);
/* Wall-clock ms since the epoch. */
int64_t loop_wall_ms(const struct agent *a);
/* Seconds since the agent started. */
int64_t loop_uptime_s(const struct agent *a);
/* The effective stub_status timeout: the configured one, capped below the tick so a fetch never spans two. */
int64_t loop_stub_timeout_ms(int64_t configured, int64_t tick_ms);

#endif
