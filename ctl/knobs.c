#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "proto.h"

static const char *str(json_t *o, const char *k, const char *dflt)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : dflt;
}

/* "128..65535" from the policy's per-element bounds. */
static void bounds(json_t *pol, char *buf, size_t len)
{
	json_t *mins = json_object_get(pol, API_K_MIN), *maxs = json_object_get(pol, API_K_MAX), *vals;
	size_t i, off = 0;

	buf[0] = '\0';
	if (json_is_string(json_object_get(pol, API_K_BOUNDS))) {
		snprintf(buf, len, "%s", json_string_value(json_object_get(pol, API_K_BOUNDS)));
		return;
	}
	vals = json_object_get(pol, API_K_ALLOWED);
	if (json_array_size(vals)) {
		for (i = 0; i < json_array_size(vals) && off < len; i++)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "|" : "",
						json_string_value(json_array_get(vals, i)));
		return;
	}
	for (i = 0; i < json_array_size(mins) && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%lld..%lld", i ? " " : "",
					(long long)json_integer_value(json_array_get(mins, i)),
					(long long)json_integer_value(json_array_get(maxs, i)));
}

static int knobs_exec(struct ctl *ctl, int argc, char **argv)
{
	json_t *r, *knobs, *k;
	char err[512], b[96];
	size_t i;
	int rc;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "ngxctl knobs: takes no arguments\n");
		return 2;
	}
	if ((rc = ctl_get(ctl, API_PATH_KNOBS, &r, err, sizeof(err))) < 0)
		return ctl_fail(err, rc);
	if (ctl->json) {
		ctl_print_json(r);
		json_decref(r);
		return 0;
	}
	if (json_is_string(json_object_get(r, API_K_OBSERVE_ONLY)))
		printf("observe-only: %s\n\n", str(r, API_K_OBSERVE_ONLY, ""));
	knobs = json_object_get(r, API_K_KNOBS);
	printf("%-36s %-11s %-18s %-18s %-22s %s\n", "KNOB", "STATE", "VALUE", "ORIGINAL", "BOUNDS", "APPROVAL");
	json_array_foreach(knobs, i, k)
	{
		json_t *pol = json_object_get(k, API_K_POLICY);
		long long change = (long long)json_integer_value(json_object_get(k, API_K_CHANGE));

		bounds(pol, b, sizeof(b));
		printf("%-36s %-11s %-18.18s %-18.18s %-22.22s %s", str(k, API_K_NAME, "?"), str(k, API_K_KNOB_STATE, "?"),
		       str(k, API_K_VALUE, "-"), str(k, API_K_ORIGINAL, "-"), b, str(pol, API_K_APPROVAL, "?"));
		if (change)
			printf("  (change %lld in flight)", change);
		if (str(k, API_K_WHY, NULL))
			printf("\n%36s %s", "", str(k, API_K_WHY, ""));
		putchar('\n');
	}
	json_decref(r);
	return 0;
}

const struct ctl_verb verb_knobs = {
	.name = "knobs",
	.usage = "",
	.summary = "every guarded knob: live value, original, bounds, state",
	.help = "Every knob the policies define (GET /v1/knobs): state (ok, conflict, unsupported, disabled), live value,\n"
		"original value, bounds and whether a change needs approval; a second line says why a knob is not ok.\n"
		"Takes no arguments.\n"
		"\nExamples:\n"
		"  ngxctl knobs\n"
		"  ngxctl -j knobs | jq '.knobs[] | select(.state == \"conflict\")'\n",
	.exec = knobs_exec,
};
