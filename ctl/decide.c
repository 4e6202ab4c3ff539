#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "proto.h"
#include "strutil.h"

/* approve and reject: the same request with another action. */
static int decide(struct ctl *ctl, int argc, char **argv, const char *action)
{
	static const struct option opts[] = {{"comment", required_argument, NULL, 'm'}, {NULL, 0, NULL, 0}};
	const char *comment = "";
	char path[128], err[512];
	int64_t id;
	json_t *body, *r;
	int opt, rc;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "m:", opts, NULL)) != -1) {
		if (opt != 'm')
			return 2;
		comment = optarg;
	}
	if (optind + 1 != argc || str_to_i64(argv[optind], 1, INT64_MAX, &id) < 0) {
		fprintf(stderr, "usage: ngxctl %s ID [--comment TEXT]   (ngxctl proposals lists them)\n", action);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/%lld/%s", API_PATH_PROPOSALS, (long long)id, action);
	body = json_pack("{s:s}", API_K_COMMENT, comment);
	rc = ctl_post(ctl, path, body, &r, err, sizeof(err));
	json_decref(body);
	if (rc < 0)
		return ctl_fail(err, rc);
	if (ctl->json)
		ctl_print_json(r);
	else
		printf("proposal %lld %s%s\n", (long long)id, json_string_value(json_object_get(r, API_K_STATE)),
		       strcmp(action, API_ACTION_APPROVE) == 0 ? ": the trial starts (ngxctl trial shows it)" : "");
	json_decref(r);
	return 0;
}

static int approve_exec(struct ctl *ctl, int argc, char **argv)
{
	return decide(ctl, argc, argv, API_ACTION_APPROVE);
}

static int reject_exec(struct ctl *ctl, int argc, char **argv)
{
	return decide(ctl, argc, argv, API_ACTION_REJECT);
}

const struct ctl_verb verb_approve = {
	.name = "approve",
	.usage = "ID [--comment TEXT]",
	.summary = "let the agent try proposal ID (a measured trial; kept only if it helps)",
	.help = "Lets the agent try proposal ID (ngxctl proposals) in an A/B trial; the judge keeps it only if it helps.\n"
		"\n  ID                 the proposal's change id\n"
		"  -m, --comment TEXT a comment, for the journal and the audit trail\n"
		"\nExamples:\n"
		"  ngxctl approve 12\n"
		"  ngxctl approve 12 --comment 'change window 14:00'\n",
	.exec = approve_exec,
};

const struct ctl_verb verb_reject = {
	.name = "reject",
	.usage = "ID [--comment TEXT]",
	.summary = "refuse proposal ID; the agent remembers and does not ask again soon",
	.help = "Refuses proposal ID (ngxctl proposals); the agent remembers and does not propose it again soon.\n"
		"\n  ID                 the proposal's change id\n"
		"  -m, --comment TEXT a comment, for the journal and the audit trail\n"
		"\nExample:\n"
		"  ngxctl reject 12 --comment 'not during the sale'\n",
	.exec = reject_exec,
};
