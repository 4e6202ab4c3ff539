#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "proto.h"

static int propose_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{"why", required_argument, NULL, 'w'}, {"now", no_argument, NULL, 'n'}, {NULL, 0, NULL, 0}};
	const char *why = NULL;
	bool now = false;
	char knob[128], err[512], *eq;
	json_t *body, *r;
	int opt, rc;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "w:n", opts, NULL)) != -1) {
		if (opt == 'w')
			why = optarg;
		else if (opt == 'n')
			now = true;
		else
			return 2;
	}
	if (optind + 1 != argc || !(eq = strchr(argv[optind], '=')) || eq == argv[optind] ||
	    (size_t)(eq - argv[optind]) >= sizeof(knob)) {
		fprintf(stderr, "usage: ngxctl propose KNOB=VALUE [--why TEXT] [--now]   (ngxctl knobs lists the knobs)\n");
		return 2;
	}
	memcpy(knob, argv[optind], (size_t)(eq - argv[optind]));
	knob[eq - argv[optind]] = '\0';
	if (!ctl_name_ok("propose", "knob", knob))
		return 2;
	body = json_pack("{s:s, s:s, s:s, s:b}", API_K_KNOB, knob, API_K_VALUE, eq + 1, API_K_WHY, why ? why : "",
			 API_K_NOW, now);
	rc = ctl_post(ctl, API_PATH_PROPOSALS, body, &r, err, sizeof(err));
	json_decref(body);
	if (rc < 0)
		return ctl_fail(err, rc);
	if (ctl->json)
		ctl_print_json(r);
	else if (!now)
		printf("change %lld: %s -> %s approved; an A/B trial starts at the next tick and the judge keeps or "
		       "reverts it (ngxctl trial, ngxctl show %lld)\n",
		       (long long)json_integer_value(json_object_get(r, API_K_ID)), knob, eq + 1,
		       (long long)json_integer_value(json_object_get(r, API_K_ID)));
	else if (strcmp(json_string_value(json_object_get(r, API_K_STATE)) ?: "", "applying") == 0)
		printf("change %lld: %s -> %s being applied (nginx -t and a reload); ngxctl history shows how it ends\n",
		       (long long)json_integer_value(json_object_get(r, API_K_ID)), knob, eq + 1);
	else
		printf("change %lld: %s -> %s applied at once (ngxctl history shows how it ends)\n",
		       (long long)json_integer_value(json_object_get(r, API_K_ID)), knob, eq + 1);
	json_decref(r);
	return 0;
}

const struct ctl_verb verb_propose = {
	.name = "propose",
	.usage = "KNOB=VALUE [--why TEXT] [--now]",
	.summary = "an operator's change, validated by its policy and tried A/B (--now: applied at once)",
	.help = "An operator's change of one knob, checked by its policy (bounds, step, constraints) and journaled. By default\n"
		"it is tried A/B and the judge keeps or reverts it; with --now it is applied at once and kept after the\n"
		"policy's settle time.\n"
		"\n  KNOB=VALUE     a knob of ngxctl knobs and its new value\n"
		"  -w, --why TEXT why, for the journal\n"
		"  -n, --now      apply at once, without a trial\n"
		"\nExamples:\n"
		"  ngxctl propose net.core.somaxconn=4096 --why 'listen overflows on :443'\n"
		"  ngxctl propose --now nginx.keepalive_requests=2000\n",
	.exec = propose_exec,
};
