/*
 * control: this host's figure for a peer's trial pair (fleet.h's control group), from its own stored frames.
 */
#include "build-config.h"

#include "fleet/control.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/block.h"
#include "core/judge.h"

struct figure {
	const struct metric_registry *reg;
	struct block_acc acc[2]; /* [0] the A window, [1] the B window */
	struct block_summary sum[2];
	struct judge judge;
};

static int add_frame(void *ctx, const struct frame *fr)
{
	struct figure *x = ctx;

	/* Each accumulator takes the frames of its own window and ignores the rest. */
	(void)block_acc_add(&x->acc[0], x->reg, fr);
	(void)block_acc_add(&x->acc[1], x->reg, fr);
	return 0;
}

int fleet_figure(struct store *st, const struct metric_registry *reg, int64_t tick_ms, const struct fleet_ask *q,
		 double *d)
{
	const char *names[1] = {q->metric};
	struct policy_metric objective = {.dir = q->dir};
	struct judge_config jc;
	struct block_spec spec;
	struct figure *x;
	int r;

	*d = NAN;
	if (!st)
		return -ENODATA;
	if (block_spec_init(&spec, names, 1, tick_ms) < 0)
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->reg = reg;
	snprintf(objective.metric, sizeof(objective.metric), "%s", q->metric);
	judge_config_default(&jc);
	if (block_acc_start(&x->acc[0], &spec, q->a_ms[0], q->a_ms[1], 0) < 0 ||
	    block_acc_start(&x->acc[1], &spec, q->b_ms[0], q->b_ms[1], 0) < 0 ||
	    judge_start(&x->judge, &jc, &objective, NULL, 0) < 0) {
		free(x);
		return -EINVAL;
	}
	/* One query per window: what lies between them is read for nothing. */
	r = store_query_frames(st, q->a_ms[0], q->a_ms[1], 0, add_frame, x);
	if (r == 0)
		r = store_query_frames(st, q->b_ms[0], q->b_ms[1], 0, add_frame, x);
	if (r == 0) {
		block_acc_finish(&x->acc[0], &x->sum[0]);
		block_acc_finish(&x->acc[1], &x->sum[1]);
		/* A host the balancer sends (almost) nothing is no control of the pool's traffic: its figure would say
		 * "nothing moved" of what it cannot see. */
		r = judge_pair_effect(&x->judge, &x->sum[0], &x->sum[1], d);
		if (r == 0 &&
		    !(x->sum[0].requests >= JUDGE_OUTAGE_MIN_REQUESTS && x->sum[1].requests >= JUDGE_OUTAGE_MIN_REQUESTS)) {
			*d = NAN;
			r = -ERANGE;
		}
	}
	free(x);
	return r;
}
