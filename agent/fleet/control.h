/*
 * control: this host's figure for a peer's trial pair, the pool's peers as the control group (fleet.h, issue 24).
 *
 * A host in trial asks the pool, at each pair's end, for the figures of the hosts not in trial over the same two
 * windows as its A and B blocks; each peer answers with its own objective's signed log ratio between them, reduced
 * from its own stored frames as its own judge would reduce a block (block.h, judge_pair_effect): a swing of the
 * whole pool's traffic moves the peers' figures as it moves the trial host's, and the judge takes their mean from
 * the pair's (judge_set_control).
 */
#ifndef NGXAT_FLEET_CONTROL_H
#define NGXAT_FLEET_CONTROL_H

#include <stdint.h>

#include "core/metrics.h"
#include "fleet/fleet.h"
#include "store/store.h"

/* Q's objective in this host's frames (ST, named by REG, TICK_MS apart): D, the signed log ratio between the B and
 * the A window (positive: better in B's). 0; -ENODATA (a window without data, no store); -ERANGE (this host served
 * fewer than JUDGE_OUTAGE_MIN_REQUESTS requests in a window: no traffic of the pool's to be a control of); -EINVAL
 * (a name no block takes; an objective this host has no figure of is -ENODATA); -ENOMEM; the store's -errno. */
int fleet_figure(struct store *st, const struct metric_registry *reg, int64_t tick_ms, const struct fleet_ask *q,
		 double *d);

#endif
