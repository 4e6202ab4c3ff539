#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "proto.h"
#include "strutil.h"

static const char *str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : "";
}

/* A time for the API's since/until: ms since the epoch as given, or a duration ago ("1h" -> "-3600"). */
static int time_arg(const char *in, char *out, size_t outlen)
{
	int64_t v;

	if (str_to_i64(in, 0, INT64_MAX, &v) == 0 && v > 1000000000000LL) {
		snprintf(out, outlen, "%lld", (long long)v);
		return 0;
	}
	if (str_to_duration_ms(in, 1000, 3660LL * 86400000, &v) < 0)
		return -1;
	snprintf(out, outlen, "-%lld", (long long)(v / 1000));
	return 0;
}

static int audit_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {{"knob", required_argument, NULL, 'k'},
					     {"actor", required_argument, NULL, 'a'},
					     {"since", required_argument, NULL, 's'},
					     {"until", required_argument, NULL, 'u'},
					     {"before", required_argument, NULL, 'b'},
					     {"count", required_argument, NULL, 'n'},
					     {NULL, 0, NULL, 0}};
	char path[1024], err[512], since[32] = "", until[32] = "";
	const char *knob = NULL, *actor = NULL;
	int64_t count = 50, before = 0;
	struct sbuf q;
	json_t *r, *e;
	size_t i;
	int opt, rc;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "k:a:s:u:b:n:", opts, NULL)) != -1) {
		switch (opt) {
		case 'k': knob = optarg; break;
		case 'a': actor = optarg; break;
		case 's':
		case 'u':
			if (time_arg(optarg, opt == 's' ? since : until, sizeof(since)) < 0) {
				fprintf(stderr, "ngxctl audit: --%s takes a duration ago (90s, 2h, 7d) or ms since the "
						"epoch, not '%s'\n", opt == 's' ? "since" : "until", optarg);
				return CTL_EXIT_USAGE;
			}
			break;
		case 'b':
			if (str_to_i64(optarg, 1, INT64_MAX, &before) < 0) {
				fprintf(stderr, "ngxctl audit: --before takes an event id\n");
				return CTL_EXIT_USAGE;
			}
			break;
		case 'n':
			if (str_to_i64(optarg, 1, 1000, &count) < 0) {
				fprintf(stderr, "ngxctl audit: -n takes 1..1000\n");
				return CTL_EXIT_USAGE;
			}
			break;
		default: return CTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ngxctl audit: unexpected argument '%s'\n", argv[optind]);
		return CTL_EXIT_USAGE;
	}
	if ((knob && !ctl_name_ok("audit", "knob", knob)) || (actor && !ctl_name_ok("audit", "actor", actor)))
		return CTL_EXIT_USAGE;
	sbuf_init(&q);
	sbuf_printf(&q, "%s?%s=%lld", API_PATH_AUDIT, API_Q_LIMIT, (long long)count);
	if (knob)
		sbuf_printf(&q, "&%s=%s", API_Q_KNOB, knob);
	if (actor)
		sbuf_printf(&q, "&%s=%s", API_Q_ACTOR, actor);
	if (since[0])
		sbuf_printf(&q, "&%s=%s", API_Q_SINCE, since);
	if (until[0])
		sbuf_printf(&q, "&%s=%s", API_Q_UNTIL, until);
	if (before)
		sbuf_printf(&q, "&%s=%lld", API_Q_BEFORE, (long long)before);
	snprintf(path, sizeof(path), "%s", sbuf_str(&q));
	sbuf_free(&q);
	if ((rc = ctl_get(ctl, path, &r, err, sizeof(err))) < 0)
		return ctl_fail(err, rc);
	if (ctl->json) {
		ctl_print_json(r);
		json_decref(r);
		return CTL_EXIT_OK;
	}
	printf("%-6s %-19s %-12s %-14s %-28s %-6s %-8s %s\n", "ID", "WHEN", "ACTOR", "ACTION", "KNOB", "CHANGE", "OUTCOME",
	       "DETAIL");
	json_array_foreach(json_object_get(r, API_K_AUDIT), i, e)
	{
		time_t t = (time_t)(json_integer_value(json_object_get(e, API_K_TS)) / 1000);
		json_int_t n = json_integer_value(json_object_get(e, API_K_COUNT));
		json_int_t change = json_integer_value(json_object_get(e, API_K_CHANGE_ID));
		char when[24], ch[24] = "-";

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
		if (change)
			snprintf(ch, sizeof(ch), "%lld", (long long)change);
		printf("%-6lld %-19s %-12.12s %-14.14s %-28.28s %-6s %-8.8s %s", (long long)json_integer_value(
			       json_object_get(e, API_K_ID)), when, str(e, API_K_ACTOR), str(e, API_K_ACTION),
		       str(e, API_K_KNOB)[0] ? str(e, API_K_KNOB) : "-", ch, str(e, API_K_OUTCOME), str(e, API_K_DETAIL));
		if (n > 1)
			printf(" (x%lld)", (long long)n);
		if (str(e, API_K_PEER)[0])
			printf(" [%s]", str(e, API_K_PEER));
		putchar('\n');
	}
	if (json_array_size(json_object_get(r, API_K_AUDIT)) == (size_t)count)
		printf("(more: ngxctl audit --before %lld)\n",
		       (long long)json_integer_value(json_object_get(json_array_get(json_object_get(r, API_K_AUDIT),
										  (size_t)count - 1), API_K_ID)));
	json_decref(r);
	return CTL_EXIT_OK;
}

const struct ctl_verb verb_audit = {
	.name = "audit",
	.usage = "[--since AGO] [--until AGO] [--knob K] [--actor A] [--before ID] [-n N]",
	.summary = "the audit trail, newest first: who asked for what, what the agent did",
	.help = "The audit trail, newest first (GET /v1/audit): who asked for what and what the agent did; an event\n"
		"repeated with nothing in between is shown once with its count (x2).\n"
		"\n  -s, --since AGO           from AGO: a duration ago (90s, 2h, 7d) or ms since the epoch\n"
		"  -u, --until AGO           up to AGO (the same forms)\n"
		"  -k, --knob KNOB           only the events of KNOB\n"
		"  -a, --actor NAME          only the events of NAME (a user, token:NAME, agent)\n"
		"  -b, --before ID           the events before event ID (the last line says which to page on)\n"
		"  -n, --count COUNT         at most COUNT events, 1..1000 (default 50)\n"
		"\nExamples:\n"
		"  ngxctl audit --since 1h\n"
		"  ngxctl audit --actor root --knob nginx.keepalive_requests\n",
	.exec = audit_exec,
};
