/*
 * evidence: the judge's evidence as ngxctl prints it. See evidence.h.
 */
#include "evidence.h"

#include <stdio.h>
#include <string.h>

#include "proto.h"

static const char *s(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : "";
}

static long long i(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

bool ctl_evidence_split(const char *detail, char *reason, size_t len, json_t **ev)
{
	const char *json = strchr(detail, '{');
	size_t n;

	*ev = NULL;
	if (!json) {
		snprintf(reason, len, "%s", detail);
		return false;
	}
	/* "reason; {...}": the reason ends before the "; " that the journal puts in front of the evidence. */
	n = (size_t)(json - detail);
	if (n >= 2 && strncmp(json - 2, "; ", 2) == 0)
		n -= 2;
	snprintf(reason, len, "%.*s", (int)n, detail);
	*ev = json_loads(json, 0, NULL);
	return true;
}

bool ctl_evidence_readable(json_t *ev)
{
	return json_is_string(json_object_get(ev, API_K_SUMMARY));
}

void ctl_evidence_print(json_t *ev, const char *indent)
{
	json_t *sign = json_object_get(ev, API_K_SIGN);

	printf("%sobjective: %s (%s, %s is better)\n", indent, s(ev, API_K_LABEL), s(ev, API_K_OBJECTIVE),
	       s(ev, API_K_BETTER));
	if (s(ev, API_K_ARM_A)[0])
		printf("%sarms:      A %s, B %s (mean block values)\n", indent, s(ev, API_K_ARM_A), s(ev, API_K_ARM_B));
	else
		printf("%sarms:      no valid pair yet\n", indent);
	if (s(ev, API_K_CHANGE_TEXT)[0])
		printf("%schange:    B %s\n", indent, s(ev, API_K_CHANGE_TEXT));
	printf("%spairs:     %lld valid of %lld planned, %lld void; %lld better, %lld worse\n", indent,
	       i(ev, API_K_VALID), i(ev, API_K_PLANNED), i(ev, API_K_VOID), i(sign, API_K_BETTER),
	       i(sign, API_K_WORSE));
	if (json_is_true(json_object_get(ev, API_K_EARLY)))
		printf("%sdecided:   early, by the sequential rule (Bayes factor %.3g)\n", indent,
		       json_number_value(json_object_get(ev, API_K_BAYES_FACTOR)));
	/* What judging cost: the old value's events while it was measured (a counted objective only). */
	if (json_is_number(json_object_get(ev, API_K_A_EVENTS)) &&
	    json_number_value(json_object_get(ev, API_K_A_SECONDS)) > 0)
		printf("%sexposure:  %.0f %s in arm A's %.0f s measured\n", indent,
		       json_number_value(json_object_get(ev, API_K_A_EVENTS)), s(ev, API_K_LABEL),
		       json_number_value(json_object_get(ev, API_K_A_SECONDS)));
}

void ctl_evidence_print_guardrails(json_t *ev, const char *indent)
{
	json_t *g;
	size_t k;

	json_array_foreach(json_object_get(ev, API_K_GUARDRAILS), k, g)
	{
		char figures[512] = "", state[64];

		if (!json_is_true(json_object_get(g, API_K_AVAILABLE)))
			snprintf(figures, sizeof(figures), "no data on this host");
		else if (s(g, API_K_ARM_A)[0] && s(g, API_K_CHANGE_TEXT)[0])
			snprintf(figures, sizeof(figures), "%s -> %s, %s", s(g, API_K_ARM_A), s(g, API_K_ARM_B),
				 s(g, API_K_CHANGE_TEXT));
		else if (s(g, API_K_ARM_A)[0])
			snprintf(figures, sizeof(figures), "%s -> %s", s(g, API_K_ARM_A), s(g, API_K_ARM_B));
		else if (s(g, API_K_CHANGE_TEXT)[0])
			snprintf(figures, sizeof(figures), "%s", s(g, API_K_CHANGE_TEXT));
		else
			snprintf(figures, sizeof(figures), "no figures yet");
		if (json_is_true(json_object_get(g, API_K_FAILED)))
			snprintf(state, sizeof(state), "FAILED at pair %lld", i(g, API_K_FAILED_PAIR));
		else if (strcmp(s(ev, API_K_VERDICT), "running") == 0)
			snprintf(state, sizeof(state), "holding so far");
		else
			snprintf(state, sizeof(state), "held");
		printf("%sguardrail: %s (%s): %s; %s\n", indent, s(g, API_K_LABEL), s(g, API_K_METRIC), figures, state);
	}
}
