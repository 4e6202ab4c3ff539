#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "proto.h"

static const char *s(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : "";
}

static int trial_exec(struct ctl *ctl, int argc, char **argv)
{
	char err[512];
	json_t *r, *e;
	int rc;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "ngxctl trial: takes no arguments\n");
		return 2;
	}
	if ((rc = ctl_get(ctl, API_PATH_TRIAL, &r, err, sizeof(err))) < 0)
		return ctl_fail(err, rc);
	if (ctl->json) {
		ctl_print_json(r);
		json_decref(r);
		return 0;
	}
	printf("tuning: %s, mode %s%s\n  %s\n", s(r, API_K_STATE), s(r, API_K_MODE),
	       json_is_true(json_object_get(r, API_K_PAUSED)) ? " (paused)" : "", s(r, API_K_REASON));
	if (s(r, API_K_KNOB)[0]) {
		printf("change %lld: %s %s -> %s", (long long)json_integer_value(json_object_get(r, API_K_CHANGE)),
		       s(r, API_K_KNOB), s(r, API_K_FROM), s(r, API_K_TO));
		if (json_integer_value(json_object_get(r, API_K_PAIRS)))
			printf(", arm %s, pair %lld of %lld", s(r, API_K_ARM),
			       (long long)json_integer_value(json_object_get(r, API_K_PAIR)),
			       (long long)json_integer_value(json_object_get(r, API_K_PAIRS)));
		putchar('\n');
	}
	/* The estimate is a relative change already (0.1 = 10% better); its bounds come after two valid pairs. */
	e = json_object_get(r, API_K_EFFECT);
	if (json_is_number(e)) {
		json_t *lo = json_object_get(r, API_K_EFFECT_LO), *hi = json_object_get(r, API_K_EFFECT_HI);

		printf("estimate: %+.1f%%", 100 * json_number_value(e));
		if (json_is_number(lo) && json_is_number(hi))
			printf(" [%+.1f%%, %+.1f%%]", 100 * json_number_value(lo), 100 * json_number_value(hi));
		printf(" (positive is better)\n");
	}
	json_decref(r);
	return 0;
}

const struct ctl_verb verb_trial = {
	.name = "trial",
	.usage = "",
	.summary = "the tuning loop: its state, the trial's arm, pair and running estimate",
	.exec = trial_exec,
};
