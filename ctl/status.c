#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "proto.h"

static const char *human_bytes(double b, char *buf, size_t n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	size_t u = 0;

	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, units[u]);
	return buf;
}

static const char *human_duration(long long s, char *buf, size_t n)
{
	if (s >= 86400)
		snprintf(buf, n, "%lldd %lldh", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(buf, n, "%lldh %lldm", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		snprintf(buf, n, "%lldm %llds", s / 60, s % 60);
	else
		snprintf(buf, n, "%llds", s);
	return buf;
}

static long long jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static int status_exec(struct ctl *ctl, int argc, char **argv)
{
	json_t *st, *tick, *store, *nginx, *probes, *p, *med;
	char err[512], b1[32], b2[32];
	size_t i;
	int rc;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "ngxctl status: takes no arguments\n");
		return 2;
	}
	if ((rc = ctl_get(ctl, API_PATH_STATUS, &st, err, sizeof(err))) < 0)
		return ctl_fail(err, rc);
	if (ctl->json) {
		ctl_print_json(st);
		json_decref(st);
		return 0;
	}
	tick = json_object_get(st, API_K_TICK);
	store = json_object_get(st, API_K_STORE);
	nginx = json_object_get(st, API_K_NGINX);
	probes = json_object_get(st, API_K_PROBES);
	printf("ngx-autotune %s (API %lld), up %s, %s\n", json_string_value(json_object_get(st, API_K_VERSION)),
	       jint(st, API_K_API_VERSION), human_duration(jint(st, API_K_UPTIME), b1, sizeof(b1)),
	       json_string_value(json_object_get(st, API_K_STATE)));
	printf("  %s\n", json_string_value(json_object_get(st, API_K_SUMMARY)));
	med = json_object_get(tick, API_K_TICK_CPU_MED);
	printf("tick:   every %lld ms, %lld ticks, %lld late, median CPU %s ms\n", jint(tick, API_K_TICK_INTERVAL),
	       jint(tick, API_K_TICK_COUNT), jint(tick, API_K_TICK_LATE),
	       json_is_number(med) ? (snprintf(b2, sizeof(b2), "%.3f", json_number_value(med)), b2) : "-");
	if (jint(nginx, API_K_NGINX_PID))
		printf("nginx:  master %lld, %lld workers\n", jint(nginx, API_K_NGINX_PID), jint(nginx, API_K_NGINX_WORKERS));
	else
		printf("nginx:  not found\n");
	printf("store:  %s, %s, %lld frames, %lld roll-ups, %lld write errors, %s%s\n",
	       json_string_value(json_object_get(store, API_K_STORE_PATH)),
	       human_bytes((double)jint(store, API_K_STORE_BYTES), b1, sizeof(b1)), jint(store, API_K_STORE_FRAMES),
	       jint(store, API_K_STORE_ROLLUPS), jint(store, API_K_STORE_ERRORS),
	       json_is_true(json_object_get(store, API_K_STORE_DEGRADED)) ? "DEGRADED: " : "ok",
	       json_is_true(json_object_get(store, API_K_STORE_DEGRADED))
		       ? json_string_value(json_object_get(store, API_K_STORE_REASON))
		       : "");
	if (json_is_object(json_object_get(st, API_K_ADVISORIES))) {
		json_t *adv = json_object_get(st, API_K_ADVISORIES);

		if (jint(adv, API_K_CHECKED) == 0)
			printf("advice: not checked yet\n");
		else
			printf("advice: %lld critical, %lld warning(s), %lld info (ngxctl doctor)\n",
			       jint(adv, API_K_SEV_CRITICAL), jint(adv, API_K_SEV_WARNING), jint(adv, API_K_SEV_INFO));
	}
	printf("probes:\n");
	json_array_foreach(probes, i, p)
	{
		const char *name = json_string_value(json_object_get(p, API_K_PROBE_NAME));

		if (!json_is_true(json_object_get(p, API_K_PROBE_ENABLED)))
			printf("  %-12s off\n", name);
		else if (json_is_true(json_object_get(p, API_K_PROBE_OK)))
			printf("  %-12s ok\n", name);
		else if (json_is_true(json_object_get(p, API_K_PROBE_SATURATED)))
			printf("  %-12s SATURATED: %s\n", name,
			       json_string_value(json_object_get(p, API_K_PROBE_ERROR)) ?: "");
		else {
			const char *e = json_string_value(json_object_get(p, API_K_PROBE_ERROR));

			printf("  %-12s FAILING (%lld failed ticks since start): %s\n", name, jint(p, API_K_PROBE_FAILURES), e ? e : "not yet run");
		}
	}
	json_decref(st);
	return 0;
}

const struct ctl_verb verb_status = {
	.name = "status",
	.usage = "",
	.summary = "the agent's state, tick, store and probe health",
	.help = "Shows the agent's state, its status line, tick, nginx master and workers, store, advice and the health of\n"
		"each probe (GET /v1/status). Takes no arguments; -j before the verb prints the API's JSON.\n"
		"\nExamples:\n"
		"  ngxctl status\n"
		"  ngxctl -j status | jq .probes\n",
	.exec = status_exec,
};
