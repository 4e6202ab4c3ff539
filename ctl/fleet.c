/*
 * ngxctl fleet: the pool this agent is a member of ([fleet] in agent.conf), as it last saw it in etcd: its members,
 * alive or gone, who is in trial and on what, and whether this host may start a trial now (GET /v1/fleet).
 */
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "proto.h"

static const char *s(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : "";
}

static long long n(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

static int fleet_exec(struct ctl *ctl, int argc, char **argv)
{
	char err[512];
	json_t *r, *m;
	size_t i;
	int rc;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "ngxctl fleet: takes no arguments\n");
		return 2;
	}
	if ((rc = ctl_get(ctl, API_PATH_FLEET, &r, err, sizeof(err))) < 0)
		return ctl_fail(err, rc);
	if (ctl->json) {
		ctl_print_json(r);
		json_decref(r);
		return 0;
	}
	if (!json_is_true(json_object_get(r, API_K_FLEET_CONFIGURED))) {
		printf("no pool: this agent runs alone (set [fleet] endpoints and pool in agent.conf to join one)\n");
		json_decref(r);
		return 0;
	}
	printf("pool %s, this host %s: %s through %s (%lld rounds, %lld failed; %s)\n", s(r, API_K_FLEET_POOL),
	       s(r, API_K_FLEET_HOST), json_is_true(json_object_get(r, API_K_FLEET_REACHABLE)) ? "etcd answers" :
	       "etcd does not answer", s(r, API_K_FLEET_ENDPOINT), n(r, API_K_FLEET_ROUNDS), n(r, API_K_FLEET_FAILURES),
	       json_is_true(json_object_get(r, API_K_FLEET_WATCHING)) ? "watching the pool's changes" :
	       "not watching: polling");
	if (s(r, API_K_FLEET_MAX_BY)[0])
		printf("the pool's max_in_trial is %lld, set by %s (this host's is %lld): the smallest of its hosts' holds\n",
		       n(r, API_K_FLEET_MAX), s(r, API_K_FLEET_MAX_BY), n(r, API_K_FLEET_MAX_SET));
	if (s(r, API_K_FLEET_CANARY)[0])
		printf("the pool's canary (a change no host has proven yet, one host at a time): %s\n",
		       s(r, API_K_FLEET_CANARY));
	if (json_is_true(json_object_get(r, API_K_FLEET_HELD)))
		printf("trial slot %lld of %lld held: a trial may start or is under way\n", n(r, API_K_FLEET_SLOT),
		       n(r, API_K_FLEET_MAX));
	else
		printf("at most %lld host(s) in trial; %s%s\n", n(r, API_K_FLEET_MAX),
		       json_is_true(json_object_get(r, API_K_FLEET_WANT)) ? "waiting for a trial slot: " : "no slot wanted",
		       json_is_true(json_object_get(r, API_K_FLEET_WANT)) ? s(r, API_K_FLEET_WHY) : "");
	printf("\n%-24s %-6s %-12s %-32s %-6s %s\n", "HOST", "ALIVE", "STATE", "KNOB", "SLOT", "AGENT / KERNEL / CPUS");
	json_array_foreach(json_object_get(r, API_K_FLEET_MEMBERS), i, m) {
		char slot[16] = "-";

		if (n(m, API_K_FLEET_SLOT) >= 0)
			snprintf(slot, sizeof(slot), "%lld", n(m, API_K_FLEET_SLOT));
		/* Strings come escaped for the terminal (ctl_get): what etcd holds is anyone's who may write it. */
		printf("%-24s %-6s %-12s %-32s %-6s", s(m, API_K_FLEET_HOST),
		       json_is_true(json_object_get(m, API_K_FLEET_ALIVE)) ? "yes" : "gone", s(m, API_K_FLEET_STATE),
		       s(m, API_K_FLEET_KNOB)[0] ? s(m, API_K_FLEET_KNOB) : "-", slot);
		if (json_is_true(json_object_get(m, API_K_FLEET_ALIVE)))
			printf(" %s / %s / %lld", s(m, API_K_FLEET_AGENT), s(m, API_K_FLEET_KERNEL), n(m, API_K_FLEET_CPUS));
		putchar('\n');
	}
	if (json_array_size(json_object_get(r, API_K_FLEET_VERDICTS)))
		printf("\nwhat the pool judged (each host's last verdict on a knob; a kept one is proposed first where the "
		       "same symptom fires under the same facts):\n");
	json_array_foreach(json_object_get(r, API_K_FLEET_VERDICTS), i, m) {
		char pairs[48] = "";

		/* What its trial measured: a confirming trial's prior here. */
		if (n(m, API_K_FLEET_PAIRS) >= 2)
			snprintf(pairs, sizeof(pairs), " (%lld pairs, effect %.3g)", n(m, API_K_FLEET_PAIRS),
				 json_number_value(json_object_get(m, API_K_FLEET_EFFECT)));
		printf("  %s %s %s -> %s on %s%s%s: %s%s\n", json_is_true(json_object_get(m, API_K_FLEET_KEPT)) ? "kept   "
		       : "refuted", s(m, API_K_FLEET_KNOB), s(m, API_K_FLEET_FROM), s(m, API_K_FLEET_TO),
		       s(m, API_K_FLEET_HOST), s(m, API_K_FLEET_SYMPTOM)[0] ? ", for " : "", s(m, API_K_FLEET_SYMPTOM),
		       s(m, API_K_FLEET_SUMMARY), pairs);
	}
	json_decref(r);
	return 0;
}

const struct ctl_verb verb_fleet = {
	.name = "fleet",
	.usage = "",
	.summary = "the pool of hosts ([fleet]): members alive or gone, who is in trial and on what",
	.help = "The pool this agent is a member of (GET /v1/fleet), as it last saw it in etcd: whether etcd answers,\n"
		"whether this host holds a trial slot (at most [fleet] max_in_trial hosts of the pool are in trial at\n"
		"once) or why it waits, with max_in_trial above 1 the pool's canary (the host trying a change no host\n"
		"has proven yet: one at a time), and each member: alive (its lease kept) or gone, its tuning state,\n"
		"the knob of its proposal or trial, the slot it holds, its agent's version, kernel and CPUs; then each\n"
		"host's last verdict on each knob it tried (kept, or refuted: it showed harm), with its trial's pairs\n"
		"and effect (a confirming trial's prior here). Takes no arguments.\n"
		"\nExample:\n"
		"  ngxctl fleet\n",
	.exec = fleet_exec,
};
