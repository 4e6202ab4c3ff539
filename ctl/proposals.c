#include <stdio.h>
#include <time.h>

#include "ctl.h"
#include "proto.h"

static const char *s(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : "";
}

static int proposals_exec(struct ctl *ctl, int argc, char **argv)
{
	char err[512];
	json_t *r, *p;
	size_t i;
	int rc;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "ngxctl proposals: takes no arguments\n");
		return 2;
	}
	if ((rc = ctl_get(ctl, API_PATH_PROPOSALS, &r, err, sizeof(err))) < 0)
		return ctl_fail(err, rc);
	if (ctl->json) {
		ctl_print_json(r);
		json_decref(r);
		return 0;
	}
	if (json_array_size(json_object_get(r, API_K_PROPOSALS)) == 0)
		printf("no proposal waiting\n");
	json_array_foreach(json_object_get(r, API_K_PROPOSALS), i, p)
	{
		time_t t = (time_t)(json_integer_value(json_object_get(p, API_K_CREATED)) / 1000);
		char when[24];

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("%lld  %s  %s: %s -> %s  [%s]\n    %s\n", (long long)json_integer_value(json_object_get(p, API_K_ID)),
		       when, s(p, API_K_KNOB), s(p, API_K_FROM), s(p, API_K_TO), s(p, API_K_STATE), s(p, API_K_WHY));
	}
	json_decref(r);
	return 0;
}

const struct ctl_verb verb_proposals = {
	.name = "proposals",
	.usage = "",
	.summary = "the agent's proposals waiting for a decision, with their evidence",
	.help = "The agent's own proposals waiting for a decision, or approved and not started yet (GET /v1/proposals),\n"
		"with the evidence behind each. Takes no arguments.\n"
		"\nExamples:\n"
		"  ngxctl proposals\n"
		"  ngxctl approve 12\n",
	.exec = proposals_exec,
};
