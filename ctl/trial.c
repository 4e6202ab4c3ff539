#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "evidence.h"
#include "proto.h"

static const char *s(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : "";
}

static int trial_exec(struct ctl *ctl, int argc, char **argv)
{
	char err[512];
	json_t *r, *ev;
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
		else if (json_integer_value(json_object_get(r, API_K_CALIB_PAIRS)))
			printf(", calibration pair %lld of %lld (A/A: the old value in both blocks)",
			       (long long)json_integer_value(json_object_get(r, API_K_CALIB_PAIR)),
			       (long long)json_integer_value(json_object_get(r, API_K_CALIB_PAIRS)));
		putchar('\n');
	}
	/* The running estimate in the objective's unit, from the agent's readable evidence (after the first valid pair). */
	ev = json_object_get(r, API_K_EVIDENCE);
	if (s(ev, API_K_SUMMARY)[0]) {
		printf("estimate: %s\n", s(ev, API_K_SUMMARY));
		ctl_evidence_print_guardrails(ev, "  ");
	}
	json_decref(r);
	return 0;
}

const struct ctl_verb verb_trial = {
	.name = "trial",
	.usage = "",
	.summary = "the tuning loop: its state, the trial's arm, pair and running estimate in the objective's unit",
	.help = "The tuning loop (GET /v1/trials/current): its state and mode, the trial's change, arm and pair, and the\n"
		"running estimate in the objective's unit. Takes no arguments.\n"
		"\nExample:\n"
		"  ngxctl trial\n",
	.exec = trial_exec,
};
