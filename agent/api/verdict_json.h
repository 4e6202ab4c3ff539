/*
 * verdict_json: the judge's evidence and A/A calibration (core/judge.h) on the wire.
 *
 * Owns the one rendering of struct judge_evidence and struct judge_calibration, with the keys of proto.h, used by
 * GET /v1/trials/current, the verdict event and the journal (a verdict's evidence in a change's detail, a
 * calibration in an audit row, read back at start). Numbers are the figures to 6 significant digits (what the
 * journal has always held; an integral figure is a JSON integer), a figure that is not finite is null. Beside the
 * figures, the same evidence as text people read, in the metric's unit (core/evfmt.h): label, arm_a and arm_b (the
 * mean block value of each arm over the valid pairs), change_text and summary, for the objective and each
 * guardrail. It decides nothing and reaches into no module: it renders what it is given.
 */
#ifndef NGXAT_VERDICT_JSON_H
#define NGXAT_VERDICT_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/judge.h"

/* EV as a new JSON object (NULL on OOM). */
json_t *verdict_json_evidence(const struct judge_evidence *ev);
/* CAL as a new JSON object (NULL on OOM). */
json_t *verdict_json_calibration(const struct judge_calibration *cal);
/* O (one of the above, or an object holding them) as one line of text into BUF, as the journal keeps it. 0;
 * -ENOSPC (BUF holds "") or -ENOMEM. */
int verdict_json_text(const json_t *o, char *buf, size_t len);
/* The detail of a calibration's audit row: {"metric", "at_ms", "calibration": CAL} into BUF. As verdict_json_text. */
int verdict_json_calibration_row(const char *metric, int64_t at_ms, const struct judge_calibration *cal, char *buf,
				 size_t len);
/* Read a calibration row's DETAIL back (a restart knows the noise without measuring it again): 0 with METRIC,
 * *AT_MS and CAL; -EINVAL when it is not one. */
int verdict_json_calibration_read(const char *detail, char *metric, size_t metriclen, int64_t *at_ms,
				  struct judge_calibration *cal);

#endif
