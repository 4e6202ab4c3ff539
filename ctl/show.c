#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "evidence.h"
#include "proto.h"
#include "strutil.h"

static const char *s(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : "";
}

static void when(json_t *o, const char *k, char *buf, size_t len)
{
	time_t t = (time_t)(json_integer_value(json_object_get(o, k)) / 1000);

	strftime(buf, len, "%Y-%m-%d %H:%M:%S", localtime(&t));
}

/* One change with everything the journal holds: the verdict's evidence is in its detail. */
static int show_exec(struct ctl *ctl, int argc, char **argv)
{
	char path[128], err[512], created[24], updated[24], reason[1024];
	const char *detail;
	int64_t id;
	json_t *r, *ev;
	int rc;

	if (argc != 2 || str_to_i64(argv[1], 1, INT64_MAX, &id) < 0) {
		fprintf(stderr, "usage: ngxctl show ID   (ngxctl history lists the ids)\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/%lld", API_PATH_CHANGES, (long long)id);
	if ((rc = ctl_get(ctl, path, &r, err, sizeof(err))) < 0)
		return ctl_fail(err, rc);
	if (ctl->json) {
		ctl_print_json(r);
		json_decref(r);
		return 0;
	}
	when(r, API_K_CREATED, created, sizeof(created));
	when(r, API_K_UPDATED, updated, sizeof(updated));
	printf("change %lld (%s%s)\n  knob:    %s\n  value:   %s -> %s\n  state:   %s (since %s)\n  by:      %s at %s\n"
	       "  why:     %s\n",
	       (long long)id, s(r, API_K_CHANGE_KIND), json_integer_value(json_object_get(r, API_K_REVERTS)) ? ", a revert" : "",
	       s(r, API_K_KNOB), s(r, API_K_FROM), s(r, API_K_TO), s(r, API_K_STATE), updated, s(r, API_K_ACTOR), created,
	       s(r, API_K_WHY));
	detail = s(r, API_K_DETAIL);
	if (ctl_evidence_split(detail, reason, sizeof(reason), &ev)) {
		printf("  verdict: %s\n", reason);
		if (ctl_evidence_readable(ev)) {
			ctl_evidence_print(ev, "  ");
			ctl_evidence_print_guardrails(ev, "  ");
			printf("  (every figure of the evidence: ngxctl --json show %lld)\n", (long long)id);
		} else if (ev) {
			/* An older agent's evidence has no readable keys: its figures as they are. */
			printf("  evidence:\n");
			json_dumpf(ev, stdout, JSON_INDENT(4));
			putchar('\n');
		} else {
			printf("  evidence (cut): %s\n", strchr(detail, '{'));
		}
		json_decref(ev);
	} else if (detail[0]) {
		printf("  detail:  %s\n", detail);
	}
	json_decref(r);
	return 0;
}

const struct ctl_verb verb_show = {
	.name = "show",
	.usage = "ID",
	.summary = "one change: who, why, its state, and the judge's evidence",
	.help = "One change of the journal (GET /v1/changes/ID): who asked and why, its state, and for a verdict the judge's\n"
		"evidence in the objective's unit (arms, change with its interval, pairs, guardrails).\n"
		"\n  ID  a change id, from ngxctl history\n"
		"\nExamples:\n"
		"  ngxctl show 12\n"
		"  ngxctl -j show 12\n",
	.exec = show_exec,
};
