/*
 * doctor_json: the advisories as JSON, for GET /v1/advisories, the status summary and `ngx-autotune --doctor`.
 * The only place that knows their shape (keys from common/proto.h); see docs/api.md.
 */
#ifndef NGXAT_DOCTOR_JSON_H
#define NGXAT_DOCTOR_JSON_H

#include <jansson.h>
#include <stdbool.h>

#include "core/doctor.h"

/* {"checked_ms", "running", "counts", "advisories": [...]} for ST (NULL on OOM). */
json_t *doctor_json(const struct doctor_state *st, bool running);
/* {"critical": n, "warning": n, "info": n, "checked_ms": ms}: the status summary's part (NULL on OOM). */
json_t *doctor_counts_json(const struct doctor_state *st);
/* The exit code of a report: 2 with a critical finding, 1 with a warning, else 0. */
int doctor_exit_code(const struct doctor_state *st);

#endif
