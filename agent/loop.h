/*
 * loop: the agent's one libuv loop, the tick, signals, and the only reader of clocks (it installs a->clock_ms;
 * everything else is handed "now" or asks agent_now_ms).
 *
 * Each tick: sample (agent_collect_frame; stub_status on the thread pool, the rest on the loop) -> store -> engine
 * and tuning loop -> doctor -> publish the report (report.h) -> status/watchdog. A tick
 * that is still waiting for its stub_status fetch when the next one is due makes that next one "late" (skipped,
 * counted), never a second tick in flight. SIGTERM/SIGINT stop cleanly; SIGHUP reloads the configuration and keeps
 * the old one when the new one does not parse.
 */
#ifndef NGXAT_LOOP_H
#define NGXAT_LOOP_H

#include <stdint.h>

struct agent;

/* Install the one clock in A (loop_init does it too): for the one-shot modes, which run no tick. */
void loop_clock_init(struct agent *a);
/* Set up the loop, the tick timer and the signal handlers for A (store, sampler and API are the caller's). */
int loop_init(struct agent *a);
/* Run until a stop signal; returns 0. */
int loop_run(struct agent *a);
/* Reload the configuration file (what SIGHUP does). 0, or -errno when the new file was refused. */
int loop_reload(struct agent *a);
/* The effective stub_status timeout: the configured one, capped below the tick so a fetch never spans two. */
int64_t loop_stub_timeout_ms(int64_t configured, int64_t tick_ms);

#endif
