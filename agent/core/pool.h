/*
 * pool: what the verdicts of a pool's other hosts ([fleet], agent/fleet) mean on this one (pure).
 *
 * A host that kept a change publishes it with its facts; a host that reverted one for harm publishes it as
 * refuted. Here, a change another host kept becomes one of the planner's causes (plan.h), tried before any
 * symptom's own knob, its evidence citing the canary ("kept on web-3 12 min ago (4096 -> 8192): ..."), when:
 *   - the facts match: the same CPU count and the same kernel (major.minor), so that what it proved there holds
 *     here;
 *   - the symptom it was proven on fires here now (the detector's reading is active); one proven without a
 *     symptom (an operator's proposal, a cause) is listed but never proposed: whoever may write to etcd could
 *     otherwise have every host try any value its policy allows;
 *   - no host with matching facts refuted the same value;
 *   - the local policy takes the value: the knob is one of this host's policies, enabled, and the value passes its
 *     type, bounds and constraints (policy_check). A value that does not (or a knob that is not one: a path, a
 *     name of another host's policy) is REFUSED, with why, for the caller to audit: what comes from the pool is a
 *     suggestion, never a write.
 * The local trial still judges it as any other proposal.
 */
#ifndef NGXAT_POOL_H
#define NGXAT_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "detect.h"
#include "knobval.h"
#include "plan.h"
#include "policy.h"

#define POOL_NAME_MAX 64
#define POOL_TEXT_MAX 256
#define POOL_VERDICTS_MAX 64
#define POOL_CAUSES_MAX 8 /* of the planner's PLAN_CAUSES_MAX: the doctor's findings keep their room */

struct pool_verdict {
	char host[POOL_NAME_MAX];
	char knob[POLICY_NAME_MAX];
	char from[KNOBVAL_TEXT_MAX], to[KNOBVAL_TEXT_MAX];
	bool kept;                  /* kept; false: refuted (the objective worse, a guardrail's harm) */
	char symptom[POOL_NAME_MAX]; /* the detector it was proposed for, "" for none */
	char summary[POOL_TEXT_MAX]; /* the verdict's reason, one sentence */
	char kernel[POOL_NAME_MAX];
	int64_t cpus;
	int64_t at_ms;              /* when it was judged (the publisher's clock) */
	double effect;              /* the sequential rule's standardized effect there (judge_evidence.seq_effect), */
	int64_t pairs;              /* ... over that many valid pairs: the confirming trials' prior (NAN, 0: none) */
};

struct pool_facts {
	const char *host;           /* this host's name in the pool: its own verdicts are not suggestions */
	const char *kernel;         /* uname release */
	int64_t cpus;
};

/* Whether what V was proven under holds on SELF. */
bool pool_facts_match(const struct pool_facts *self, const struct pool_verdict *v);
/* Whether K (one of V[0..N)) proves its value for SELF as pool_causes takes it for a confirming trial: kept by
 * another host under SELF's facts, with its trial's effect over 2 pairs or more, and refuted by none of V under
 * SELF's facts. The local policy's check is pool_causes'. */
bool pool_proves(const struct pool_facts *self, const struct pool_verdict *v, size_t n, const struct pool_verdict *k);

/* Each of V[0..N): the kept ones usable here into CAUSES (at most MAX: their count returned), each a cause only
 * while its symptom fires (plan_cause.while_fires: the planner weighs it in the tick the symptom starts, before the
 * symptom's own knob), the refused ones marked in REFUSED[i] with WHY[i] (one sentence); the others (this host's,
 * facts that differ, no symptom or one unknown here, refuted, reverted) neither. NOW_MS for the evidence's age. */
size_t pool_causes(const struct policy_set *set, const struct pool_facts *self,
		   const struct pool_verdict *v, size_t n, int64_t now_ms, struct plan_cause *causes, size_t max,
		   bool *refused, char (*why)[POOL_TEXT_MAX]);

#endif
