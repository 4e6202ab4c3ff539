/*
 * evidence: the judge's evidence as ngxctl prints it, for show, trial and history.
 *
 * Owns the lines people read from the readable keys the agent renders (proto.h: label, arm_a, arm_b, change_text,
 * summary; the agent writes them with core/evfmt, which ngxctl does not link), and the split of a change's detail
 * "reason; {evidence}". It computes no figure of its own: evidence from an agent that did not render the readable
 * keys has no lines here, and the caller shows it as it is.
 */
#ifndef NGXAT_CTL_EVIDENCE_H
#define NGXAT_CTL_EVIDENCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Split DETAIL, "reason; {evidence}", into the reason (into REASON) and the evidence (*EV, a new reference, NULL
 * when it does not parse). False when DETAIL holds no evidence (REASON is DETAIL then). */
bool ctl_evidence_split(const char *detail, char *reason, size_t len, json_t **ev);
/* True when EV has the readable keys (an agent that renders them). */
bool ctl_evidence_readable(json_t *ev);
/* The objective, each arm's figure, the change and the pairs, each line starting with INDENT. */
void ctl_evidence_print(json_t *ev, const char *indent);
/* One line per guardrail: its figures in their unit and whether it held, each line starting with INDENT. */
void ctl_evidence_print_guardrails(json_t *ev, const char *indent);

#endif
