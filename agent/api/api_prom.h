/*
 * api_prom: GET /metrics, the agent in the Prometheus text exposition format (0.0.4).
 *
 * Owns the agent's own families (ticks, probes, the store, the journal's changes and verdicts, conflicts, knob
 * values and states, the tuning loop) and the HTTP side. The format and the frame families are core/prom's; the
 * running totals are fed by the loop each tick (agent.h). It reads the agent's state on the loop thread and must
 * not write anything, nor block: its store queries are counts over small tables.
 */
#ifndef NGXAT_API_PROM_H
#define NGXAT_API_PROM_H

#include <microhttpd.h>

struct api;

/* Answer GET (or HEAD) /metrics on C. */
enum MHD_Result api_prom_get(struct api *api, struct MHD_Connection *c);

#endif
