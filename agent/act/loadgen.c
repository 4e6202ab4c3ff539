/*
 * loadgen: the load generator's runs, aligned to the trial's blocks. See loadgen.h.
 */
#include "act/loadgen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parse.h"
#include "log.h"
#include "act/spawn.h"

enum phase { PHASE_IDLE, PHASE_BACKGROUND, PHASE_WARMUP, PHASE_MEASURED };

static const char *const phase_names[] = {"idle", "background", "warm-up", "measured"};

struct loadgen {
	uv_loop_t *loop;
	char *words;                     /* the command, its words separated by NULs */
	char *argv_tpl[LOADGEN_ARGS_MAX + 1];
	size_t nargs;
	int64_t run_ms;
	struct spawn *cur;               /* the run under way, NULL when none */
	enum phase phase;
	bool discard;                    /* the run under way was killed: its figures mean nothing */
	bool freeing;                    /* loadgen_free was called while a run was under way */
	int64_t block_end_ms;            /* the block the runs are aligned to (0: none) */
	bool measured;                   /* that block's measured run was started */
	bool have_result;
	struct loadgen_result res;
	uint64_t runs, failures;
	char last_error[640];
	double last_rps, last_p99;
	uint32_t ids[8];                 /* the frame metrics, interned at the first result */
	bool interned;
};

static const char *const metric_names[8] = {
	"loadgen.rps", "loadgen.p50_ms", "loadgen.p90_ms", "loadgen.p99_ms",
	"loadgen.requests", "loadgen.errors", "loadgen.read_errors", "loadgen.timeouts",
};

int loadgen_new(uv_loop_t *loop, const struct config *cfg, struct loadgen **out, char *err, size_t errlen)
{
	struct loadgen *lg;
	char *p, *save = NULL;

	*out = NULL;
	if (!cfg->loadgen_command[0] || !strstr(cfg->loadgen_command, "{seconds}")) {
		snprintf(err, errlen, "[loadgen] command: a command with {seconds} is needed for measure = loadgen");
		return -EINVAL;
	}
	lg = calloc(1, sizeof(*lg));
	if (!lg || !(lg->words = strdup(cfg->loadgen_command))) {
		free(lg);
		return -ENOMEM;
	}
	lg->loop = loop;
	lg->run_ms = cfg->loadgen_run_ms;
	for (p = strtok_r(lg->words, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
		if (lg->nargs == LOADGEN_ARGS_MAX) {
			snprintf(err, errlen, "[loadgen] command: more than %d words", LOADGEN_ARGS_MAX);
			free(lg->words);
			free(lg);
			return -EINVAL;
		}
		lg->argv_tpl[lg->nargs++] = p;
	}
	if (!lg->nargs) {
		snprintf(err, errlen, "[loadgen] command: empty");
		free(lg->words);
		free(lg);
		return -EINVAL;
	}
	*out = lg;
	return 0;
}

static void destroy(struct loadgen *lg)
{
	free(lg->words);
	free(lg);
}

void loadgen_free(struct loadgen *lg)
{
	if (!lg)
		return;
	if (lg->cur) {
		/* The child's handles close later, on the loop: free when its callback has run. */
		lg->freeing = true;
		lg->discard = true;
		spawn_kill(lg->cur);
		return;
	}
	destroy(lg);
}

static void run_done(struct spawn *sp)
{
	struct loadgen *lg = sp->ctx;
	enum phase ph = lg->phase;
	char err[200];

	lg->cur = NULL;
	lg->phase = PHASE_IDLE;
	log_debug("loadgen: %s run ended%s (exit %lld)", phase_names[ph], lg->discard ? ", dropped" : "",
		  (long long)sp->status);
	if (lg->freeing) {
		destroy(lg);
		return;
	}
	if (lg->discard || ph == PHASE_WARMUP) {
		lg->discard = false;
		return;
	}
	lg->runs++;
	if (sp->spawn_rc < 0) {
		snprintf(lg->last_error, sizeof(lg->last_error), "%s: cannot start: %s", lg->argv_tpl[0],
			 sp->refused[0] ? sp->refused : uv_strerror(sp->spawn_rc));
	} else if (sp->timed_out) {
		snprintf(lg->last_error, sizeof(lg->last_error), "%s: killed past its length and %d s of grace",
			 lg->argv_tpl[0], LOADGEN_GRACE_MS / 1000);
	} else if (parse_loadgen(sp->obuf.p, sp->obuf.len, &lg->res, err, sizeof(err)) < 0) {
		snprintf(lg->last_error, sizeof(lg->last_error), "%s (exit %lld): %s", lg->argv_tpl[0],
			 (long long)sp->status, err);
	} else {
		lg->have_result = true;
		lg->last_rps = lg->res.rps;
		lg->last_p99 = lg->res.p99_ms;
		return;
	}
	lg->failures++;
	/* Once per kind of failure: a command that fails every run must not fill the journal. */
	if (lg->failures == 1 || lg->failures % 100 == 0)
		log_warn("loadgen: run %llu gave no figures: %s", (unsigned long long)lg->runs, lg->last_error);
}

/* Start a run of SECS seconds in PHASE. */
static void start_run(struct loadgen *lg, enum phase ph, int64_t secs)
{
	char *argv[LOADGEN_ARGS_MAX + 1];
	char bufs[LOADGEN_ARGS_MAX][256];
	char num[24];
	int r;

	snprintf(num, sizeof(num), "%lld", (long long)secs);
	for (size_t i = 0; i < lg->nargs; i++) {
		const char *w = lg->argv_tpl[i], *at = strstr(w, "{seconds}");

		if (!at) {
			argv[i] = (char *)w;
			continue;
		}
		snprintf(bufs[i], sizeof(bufs[i]), "%.*s%s%s", (int)(at - w), w, num, at + strlen("{seconds}"));
		argv[i] = bufs[i];
	}
	argv[lg->nargs] = NULL;
	r = spawn_start_trusted(lg->loop, argv, "the load generator the agent runs as root", LOADGEN_OUT_MAX, 4096,
				secs * 1000 + LOADGEN_GRACE_MS, run_done, lg, &lg->cur);
	if (r < 0) {
		lg->cur = NULL;
		lg->failures++;
		snprintf(lg->last_error, sizeof(lg->last_error), "cannot start a run: %s", strerror(-r));
		return;
	}
	lg->phase = ph;
	lg->discard = false;
	log_debug("loadgen: %s run of %lld s started", phase_names[ph], (long long)secs);
}

void loadgen_tick(struct loadgen *lg, int64_t now_ms, const struct loadgen_block *blk)
{
	if (!lg)
		return;
	if (blk && blk->active && blk->end_ms != lg->block_end_ms) {
		/* A new block: whatever runs now spans the switch of arms. */
		lg->block_end_ms = blk->end_ms;
		lg->measured = false;
		if (lg->cur) {
			lg->discard = true;
			spawn_kill(lg->cur);
		}
	} else if (!(blk && blk->active) && lg->block_end_ms) {
		lg->block_end_ms = 0;
		if (lg->cur && lg->phase != PHASE_BACKGROUND) {
			lg->discard = true;
			spawn_kill(lg->cur);
		}
	}
	if (lg->cur)
		return;
	if (!(blk && blk->active)) {
		start_run(lg, PHASE_BACKGROUND, lg->run_ms / 1000);
		return;
	}
	{
		int64_t measure_from = blk->start_ms + blk->settle_ms;
		int64_t measure_to = blk->end_ms - LOADGEN_MARGIN_MS;

		if (now_ms + 1000 <= measure_from) {
			start_run(lg, PHASE_WARMUP, (measure_from - now_ms) / 1000);
		} else if (!lg->measured && measure_to - now_ms >= 1000) {
			/* The measured run starts no earlier than the block's measured part, so its figures are
			 * of the arm in force and land in a frame inside the block. */
			lg->measured = true;
			start_run(lg, PHASE_MEASURED, (measure_to - now_ms) / 1000);
		}
	}
}

void loadgen_collect(struct loadgen *lg, struct metric_registry *reg, struct frame *fr)
{
	double v[8];

	if (!lg || !lg->have_result)
		return;
	lg->have_result = false;
	if (!lg->interned) {
		for (size_t i = 0; i < 8; i++)
			if (metric_intern(reg, metric_names[i], &lg->ids[i]) < 0)
				return;
		lg->interned = true;
	}
	v[0] = lg->res.rps;
	v[1] = lg->res.p50_ms;
	v[2] = lg->res.p90_ms;
	v[3] = lg->res.p99_ms;
	v[4] = lg->res.requests;
	v[5] = lg->res.errors;
	v[6] = lg->res.read_errors;
	v[7] = lg->res.timeouts;
	for (size_t i = 0; i < 8; i++)
		if (isfinite(v[i]))
			frame_put(fr, lg->ids[i], v[i]);
}

void loadgen_status(const struct loadgen *lg, struct loadgen_status *out)
{
	memset(out, 0, sizeof(*out));
	out->phase = phase_names[lg->phase];
	out->running = lg->cur != NULL;
	out->runs = lg->runs;
	out->failures = lg->failures;
	snprintf(out->last_error, sizeof(out->last_error), "%s", lg->last_error);
	out->last_rps = lg->runs ? lg->last_rps : NAN;
	out->last_p99_ms = lg->runs ? lg->last_p99 : NAN;
}
