#include <getopt.h>
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

static int history_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {{"knob", required_argument, NULL, 'k'},
					     {"count", required_argument, NULL, 'n'},
					     {NULL, 0, NULL, 0}};
	const char *knob = NULL;
	int64_t count = 20;
	char path[512], err[512], reason[1024];
	json_t *r, *c, *ev;
	size_t i;
	int opt;
	int rc;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "k:n:", opts, NULL)) != -1) {
		switch (opt) {
		case 'k': knob = optarg; break;
		case 'n':
			if (str_to_i64(optarg, 1, 1000, &count) < 0) {
				fprintf(stderr, "ngxctl history: -n takes 1..1000\n");
				return 2;
			}
			break;
		default: return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ngxctl history: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (knob && !ctl_name_ok("history", "knob", knob))
		return 2;
	snprintf(path, sizeof(path), "%s?%s=%lld%s%s", API_PATH_CHANGES, API_Q_LIMIT, (long long)count,
		 knob ? "&" API_Q_KNOB "=" : "", knob ? knob : "");
	if ((rc = ctl_get(ctl, path, &r, err, sizeof(err))) < 0)
		return ctl_fail(err, rc);
	if (ctl->json) {
		ctl_print_json(r);
		json_decref(r);
		return 0;
	}
	printf("%-5s %-19s %-30s %-25s %-9s %-10s %s\n", "ID", "WHEN", "KNOB", "FROM -> TO", "STATE", "ACTOR", "WHY");
	json_array_foreach(json_object_get(r, API_K_CHANGES), i, c)
	{
		time_t t = (time_t)(json_integer_value(json_object_get(c, API_K_CREATED)) / 1000);
		char when[24], fromto[80];

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
		snprintf(fromto, sizeof(fromto), "%s -> %s", s(c, API_K_FROM), s(c, API_K_TO));
		printf("%-5lld %-19s %-30s %-25.25s %-9s %-10.10s %s%s\n", (long long)json_integer_value(json_object_get(c, API_K_ID)),
		       when, s(c, API_K_KNOB), fromto, s(c, API_K_STATE), s(c, API_K_ACTOR), s(c, API_K_WHY),
		       strcmp(s(c, API_K_CHANGE_KIND), "revert") == 0 ? " [revert]" : "");
		if (ctl_evidence_split(s(c, API_K_DETAIL), reason, sizeof(reason), &ev)) {
			/* A verdict: its sentence and its one line; the whole evidence is ngxctl show's. */
			printf("%-5s %s\n", "", reason);
			if (s(ev, API_K_SUMMARY)[0])
				printf("%-5s %s\n", "", s(ev, API_K_SUMMARY));
			json_decref(ev);
		} else if (reason[0]) {
			printf("%-5s %s\n", "", reason);
		}
	}
	json_decref(r);
	return 0;
}

const struct ctl_verb verb_history = {
	.name = "history",
	.usage = "[--knob KNOB] [-n COUNT]",
	.summary = "the change journal, newest first, with each change's state and why",
	.help = "The change journal, newest first (GET /v1/changes): each change's knob, from -> to, state, actor and why,\n"
		"and a second line with its latest detail; revert rows end in [revert].\n"
		"\n  -k, --knob KNOB    only the changes of KNOB\n"
		"  -n, --count COUNT  at most COUNT changes, 1..1000 (default 20)\n"
		"\nExamples:\n"
		"  ngxctl history\n"
		"  ngxctl history --knob net.core.somaxconn -n 5\n",
	.exec = history_exec,
};
