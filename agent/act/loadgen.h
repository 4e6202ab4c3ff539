/*
 * loadgen: the tuning loop's load generator mode (measure = loadgen), for staging hosts without real traffic.
 *
 * Owns the runs of the configured load command ([loadgen] command, e.g. wrk -t2 -c200 -d{seconds}s --latency URL):
 * one at a time, back to back while the agent runs, each bounded (killed past its length plus a grace), read off
 * the loop. When a trial block starts, the run under way is killed (it would mix both arms), a warm-up run covers
 * the block's settle time, and one measured run fills the rest of the block and ends before it, so that its figures
 * fall inside the block. Each finished run's figures (parse_loadgen) go into the next frame as loadgen.rps,
 * loadgen.p50_ms, loadgen.p90_ms, loadgen.p99_ms, loadgen.requests, loadgen.errors, loadgen.read_errors and
 * loadgen.timeouts; a warm-up run's and a killed run's are dropped. It must not judge or decide anything: the
 * controller judges trials on these figures (plan_loadgen_trial) like on any other metric.
 */
#ifndef NGXAT_LOADGEN_H
#define NGXAT_LOADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "core/metrics.h"

#define LOADGEN_ARGS_MAX 64        /* words of the command */
#define LOADGEN_MARGIN_MS 2000     /* a measured run ends this long before its block does */
#define LOADGEN_GRACE_MS 15000     /* past its length, a run is killed */
#define LOADGEN_OUT_MAX 65536      /* bytes of output kept */

/* The trial block the controller measures now (active false outside calibrations and trials). */
struct loadgen_block {
	bool active;
	int64_t start_ms, end_ms, settle_ms;
};

struct loadgen_status {
	bool running;
	const char *phase;         /* "idle", "background", "warm-up", "measured" */
	uint64_t runs, failures;   /* finished runs, and those that gave no figures */
	char last_error[640];      /* why the last failed run failed */
	double last_rps, last_p99_ms;
};

struct loadgen;

/* Split the command of CFG into words (no shell; {seconds} kept for each run). 0 or -EINVAL with ERR. */
int loadgen_new(uv_loop_t *loop, const struct config *cfg, struct loadgen **out, char *err, size_t errlen);
/* Kill the run under way and free LG once its child is gone; NULL is fine. */
void loadgen_free(struct loadgen *lg);
/* Once per tick after the tuning loop: start, stop or align runs to BLK at NOW_MS. */
void loadgen_tick(struct loadgen *lg, int64_t now_ms, const struct loadgen_block *blk);
/* Put the figures of a run that finished since the last call into FR (REG names them). */
void loadgen_collect(struct loadgen *lg, struct metric_registry *reg, struct frame *fr);
/* For status. */
void loadgen_status(const struct loadgen *lg, struct loadgen_status *out);

#endif
