/* A policy file from a buffer (policy_load.c's policy_parse_buffer through inih, then core/policy.c), validated as
 * the loader does; for every knob of a valid set, its bounds, its steps from its lowest value and the check of that
 * step (policy_check), as the planner asks them. */
#include "fuzz.h"
#include "act/policy_load.h"
#include "core/policy.h"

#include <errno.h>
#include <inttypes.h>

static int not_here(const char *knob, char *out, size_t outlen, void *ctx)
{
	(void)knob, (void)out, (void)outlen, (void)ctx;
	return -ENOENT;
}

/* The lowest value of P as text (what a host at its lower bound reads back). */
static void lowest(const struct knob_policy *p, char *out, size_t len)
{
	size_t off = 0;

	switch (p->type) {
	case KNOB_T_INT:
	case KNOB_T_INTVEC:
		out[0] = '\0';
		for (size_t i = 0; i < p->nelem && i < KNOBVAL_VEC_MAX && off < len; i++)
			off += (size_t)snprintf(out + off, len - off, "%s%" PRId64, i ? " " : "", p->min[i]);
		break;
	case KNOB_T_ENUM: snprintf(out, len, "%s", p->nvalues ? p->values[0] : "x"); break;
	case KNOB_T_ONOFF: snprintf(out, len, "off"); break;
	case KNOB_T_CPULIST: snprintf(out, len, "%" PRId64, p->min[0]); break;
	case KNOB_T_CPUMAP: snprintf(out, len, "0:%" PRId64, p->min[0]); break;
	}
}

static void exercise(const struct policy_set *set, const struct knob_policy *p)
{
	char cur[KNOBVAL_TEXT_MAX], next[KNOBVAL_TEXT_MAX], bounds[512], err[256];
	int r;

	FUZZ_CHECK(policy_find(set, p->name) == p);
	r = policy_bounds_text(p, bounds, sizeof(bounds));
	FUZZ_CHECK(r == 0 || r == -ENOSPC);
	lowest(p, cur, sizeof(cur));
	for (int up = 0; up < 2; up++) {
		r = policy_step_value(p, cur, up, next, sizeof(next));
		FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOSPC || r == -ERANGE);
		if (r == 0) {
			r = policy_check(set, p, cur, next, not_here, NULL, err, sizeof(err));
			FUZZ_CHECK(r == 0 || r == -EPERM || r == -EINVAL || r == -ERANGE);
		}
	}
	r = policy_check(set, p, NULL, cur, not_here, NULL, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EPERM || r == -EINVAL || r == -ERANGE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_set set;
	char err[512];
	int r;

	if (size > POLICY_FILE_SIZE_MAX)
		return 0;
	policy_set_init(&set);
	r = policy_parse_buffer(&set, "fuzz.policy", (const char *)data, size, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r == 0) {
		r = policy_set_validate(&set, policy_metric_known, NULL, err, sizeof(err));
		FUZZ_CHECK(r == 0 || r == -EINVAL);
		if (r == 0)
			for (size_t i = 0; i < set.n; i++)
				exercise(&set, &set.knobs[i]);
	}
	policy_set_free(&set);
	return 0;
}
