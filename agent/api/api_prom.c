/*
 * api_prom: GET /metrics. See api_prom.h and docs/api.md.
 */
#include "build-config.h"

#include "api/api_prom.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "fleet/fleet.h"
#include "api/api_internal.h"
#include "api/http.h"
#include "core/controller.h"
#include "core/judge.h"
#include "core/prom.h"
#include "act/engine.h"
#include "proto.h"
#include "act/tuning.h"

#define STALE_MIN_MS 30000 /* a series unseen this long drops out: TCP states are counted every 10 s */

/* CPU ms to seconds, to the microsecond: the clock's last digits are noise, and 0.000429 reads better. */
static double ms_to_s(double ms)
{
	return round(ms * 1000.0) / 1e6;
}

/* A family of one sample without labels. */
static void one(struct prom_writer *w, const char *name, enum prom_type type, const char *help, double v)
{
	prom_family(w, name, type, help);
	prom_sample(w, "", NULL, 0, v);
}

/* A sample with one label. */
static void labelled(struct prom_writer *w, const char *label, const char *value, double v)
{
	struct prom_label l = {label, value};

	prom_sample(w, "", &l, 1, v);
}

static void write_agent(struct prom_writer *w, struct agent *a)
{
	const struct report *rp = &a->report;
	char api_version[16];
	struct prom_label build[] = {{"version", PACKAGE_VERSION}, {"api_version", api_version}};

	snprintf(api_version, sizeof(api_version), "%d", NGXAT_API_VERSION);
	prom_family(w, "ngxat_build_info", PROM_GAUGE, "The agent's version and API version (always 1).");
	prom_sample(w, "", build, 2, 1);
	one(w, "ngxat_start_time_seconds", PROM_GAUGE, "When the agent started, seconds since the epoch.",
	    (double)rp->start_ms / 1000.0);
	one(w, "ngxat_tick_interval_seconds", PROM_GAUGE, "The configured tick interval.", (double)rp->tick_ms / 1000.0);
	one(w, "ngxat_ticks_total", PROM_COUNTER, "Ticks completed.", (double)rp->ticks);
	one(w, "ngxat_ticks_late_total", PROM_COUNTER,
	    "Ticks skipped: the previous one still waited for its stub_status fetch, or the loop was held past their time.", (double)rp->late);
	one(w, "ngxat_last_tick_timestamp_seconds", PROM_GAUGE,
	    "When the last tick was taken, seconds since the epoch (0 before the first).",
	    (double)rp->last_tick_ms / 1000.0);
	one(w, "ngxat_tick_cpu_median_seconds", PROM_GAUGE,
	    "Median CPU time of the recent ticks (up to 128), loop thread and stub_status fetch (NaN before the first).",
	    ms_to_s(rp->tick_cpu_median_ms));
	one(w, "ngxat_tick_client_cpu_median_seconds", PROM_GAUGE,
	    "Median of the synthetic client's share of the recent ticks' CPU: its requests (NaN before the first).",
	    ms_to_s(rp->tick_client_cpu_median_ms));
	one(w, "ngxat_tick_own_cpu_median_seconds", PROM_GAUGE,
	    "Median of the recent ticks' CPU less the synthetic client's share: the agent's own work (NaN before the first).",
	    ms_to_s(rp->tick_own_cpu_median_ms));
	one(w, "ngxat_tick_cpu_last_seconds", PROM_GAUGE, "CPU time of the last tick (NaN before the first).",
	    ms_to_s(rp->tick_cpu_last_ms));
	one(w, "ngxat_frames_stored_total", PROM_COUNTER, "Frames written to the store.", (double)rp->stored);
	one(w, "ngxat_unmapped_frame_metrics", PROM_GAUGE,
	    "Frame metrics /metrics has no family for (0 unless the sampler has a metric the map lacks).",
	    (double)rp->prom_unmapped);

	prom_family(w, "ngxat_probe_up", PROM_GAUGE, "Whether each enabled probe succeeded in the last tick.");
	for (int i = 0; i < PROBE_COUNT; i++) {
		const struct report_probe *p = &rp->probes[i];

		if (p->health.enabled)
			labelled(w, "probe", p->name, p->health.ok ? 1 : 0);
	}
	prom_family(w, "ngxat_probe_failures_total", PROM_COUNTER, "Ticks in which each enabled probe failed.");
	for (int i = 0; i < PROBE_COUNT; i++) {
		const struct report_probe *p = &rp->probes[i];

		if (p->health.enabled)
			labelled(w, "probe", p->name, (double)p->health.failures);
	}
	one(w, "ngxat_nginx_up", PROM_GAUGE, "Whether the nginx master was found (from its pid file).",
	    rp->nginx_pid ? 1 : 0);

	one(w, "ngxat_store_size_bytes", PROM_GAUGE, "Size of the SQLite store.", (double)rp->store.bytes);
	one(w, "ngxat_store_frames", PROM_GAUGE, "Per-tick frames held by the store.", (double)rp->store.frames);
	one(w, "ngxat_store_rollups", PROM_GAUGE, "Per-minute roll-ups held by the store.", (double)rp->store.rollups);
	one(w, "ngxat_store_write_errors_total", PROM_COUNTER, "Tick transactions the store failed to write.",
	    (double)rp->store.write_errors);
	one(w, "ngxat_store_degraded", PROM_GAUGE, "1 when the store cannot be written (the agent only observes).",
	    rp->store.degraded ? 1 : 0);
	one(w, "ngxat_observe_only", PROM_GAUGE,
	    "1 when the agent writes no knob (store degraded, or a driver refused with EPERM/EROFS).",
	    rp->store.degraded || rp->observe_only ? 1 : 0);
}

/* [fleet]: this host in its pool (fleet/fleet.h), labelled with both names so that a pool's dashboard can group the
 * agents without a scrape configuration of its own. Nothing without [fleet]. */
static void write_fleet(struct prom_writer *w, struct agent *a)
{
	struct fleet_view *v;
	size_t alive = 0;

	if (!a->fleet || !(v = malloc(sizeof(*v))))
		return;
	fleet_view(a->fleet, v);
	for (size_t i = 0; i < v->n; i++)
		alive += v->m[i].alive;
	{
		struct prom_label l[] = {{"pool", v->pool}, {"host", v->host}};

		prom_family(w, "ngxat_fleet_info", PROM_GAUGE, "This agent's pool and its host's name in it ([fleet]).");
		prom_sample(w, "", l, 2, 1);
		prom_family(w, "ngxat_fleet_reachable", PROM_GAUGE,
			    "1 when the last round with etcd succeeded (else no trial starts).");
		prom_sample(w, "", l, 2, v->reachable ? 1 : 0);
		prom_family(w, "ngxat_fleet_slot_held", PROM_GAUGE, "1 while this host holds one of the pool's trial slots.");
		prom_sample(w, "", l, 2, v->held ? 1 : 0);
		prom_family(w, "ngxat_fleet_members_alive", PROM_GAUGE, "The pool's members whose lease lives, as last seen.");
		prom_sample(w, "", l, 2, (double)alive);
		prom_family(w, "ngxat_fleet_rounds_total", PROM_COUNTER, "Rounds with etcd since the start.");
		prom_sample(w, "", l, 2, (double)v->rounds);
		prom_family(w, "ngxat_fleet_round_failures_total", PROM_COUNTER, "Rounds with etcd that failed.");
		prom_sample(w, "", l, 2, (double)v->failures);
		prom_family(w, "ngxat_fleet_watching", PROM_GAUGE,
			    "1 while etcd streams the pool's changes to this host (else its rounds poll).");
		prom_sample(w, "", l, 2, v->watching ? 1 : 0);
		prom_family(w, "ngxat_fleet_round_wakes_total", PROM_COUNTER, "Changes of the pool that woke this host's round.");
		prom_sample(w, "", l, 2, (double)v->wakes);
	}
	/* The pool as this host saw it last: each member (alive or gone; trying: in a calibration or trial, on which
	 * knob) and each host's last verdict on each knob (the time it was judged). Every member says the same: a
	 * pool's dashboard takes the max by member, or by verdict. Names and values are etcd's, cleaned. */
	prom_family(w, "ngxat_fleet_member_up", PROM_GAUGE,
		    "1 for a member of the pool whose lease lives, 0 for one gone.");
	for (size_t i = 0; i < v->n; i++) {
		struct prom_label l[] = {{"pool", v->pool}, {"host", v->host}, {"member", v->m[i].host}};

		prom_sample(w, "", l, 3, v->m[i].alive ? 1 : 0);
	}
	prom_family(w, "ngxat_fleet_member_trying", PROM_GAUGE,
		    "1 for a member of the pool in a calibration or trial, with its knob; 0 for the others.");
	for (size_t i = 0; i < v->n; i++) {
		const struct fleet_member *m = &v->m[i];
		bool trying = m->alive && (strcmp(m->state, "trial") == 0 || strcmp(m->state, "calibrating") == 0);
		struct prom_label l[] = {{"pool", v->pool},
					 {"host", v->host},
					 {"member", m->host},
					 {"knob", trying ? m->knob : ""}};

		prom_sample(w, "", l, 4, trying ? 1 : 0);
	}
	prom_family(w, "ngxat_fleet_verdict_timestamp_seconds", PROM_GAUGE,
		    "Each host's last verdict on each knob published to the pool: when it was judged, by whom, the value, "
		    "kept or refuted.");
	for (size_t i = 0; i < v->nverdicts; i++) {
		const struct pool_verdict *pv = &v->verdicts[i];
		struct prom_label l[] = {{"pool", v->pool}, {"host", v->host}, {"by", pv->host}, {"knob", pv->knob},
					 {"value", pv->to}, {"verdict", pv->kept ? "kept" : "refuted"}};

		prom_sample(w, "", l, 6, (double)pv->at_ms / 1000.0);
	}
	free(v);
}

/* The API's own refusals (api.c counts them; the audit trail holds a sample). */
static void write_api(struct prom_writer *w, const struct api *api)
{
	prom_family(w, "ngxat_api_requests_denied_total", PROM_COUNTER,
		    "Requests refused for who sent them (401: no valid token; 403: may not act), since the start.");
	labelled(w, "status", "401", (double)api->denied_401);
	labelled(w, "status", "403", (double)api->denied_403);
	one(w, "ngxat_api_answer_bytes", PROM_GAUGE, "Bytes of answers queued and not yet written to their clients.",
	    (double)api->out_held);
	one(w, "ngxat_api_answers_refused_total", PROM_COUNTER,
	    "Answers refused 503 because the answers not yet written would have passed their limit.",
	    (double)api->out_refused);
}

static const char *const verdicts[] = {"keep", "revert", "inconclusive", "aborted", "error"};

struct verdict_counts {
	int64_t known[sizeof(verdicts) / sizeof(verdicts[0])];
	struct prom_writer *w;
	bool written;
};

static int on_verdict(void *ctx, const char *name, int64_t n)
{
	struct verdict_counts *vc = ctx;

	for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++) {
		if (strcmp(name, verdicts[i]) == 0) {
			vc->known[i] += n;
			return 0;
		}
	}
	/* A verdict this build does not name (a newer judge wrote the journal): shown as it is. */
	labelled(vc->w, "verdict", name, (double)n);
	return 0;
}

/* The journal: changes by kind and state, verdicts, conflicts. A query that fails leaves its family out. */
static void write_journal(struct prom_writer *w, struct agent *a)
{
	int64_t counts[2][CHANGE_STATE_COUNT], conflicts;
	struct verdict_counts vc = {.w = w};

	if (store_change_counts(a->store, counts) == 0) {
		prom_family(w, "ngxat_changes", PROM_GAUGE,
			    "Journal rows by kind (change: proposals and trials; revert: put-backs) and state.");
		for (int k = 0; k < 2; k++) {
			for (int s = 0; s < CHANGE_STATE_COUNT; s++) {
				struct prom_label l[] = {{"kind", k == CHANGE_KIND_CHANGE ? "change" : "revert"},
							 {"state", change_state_name((enum change_state)s)}};

				prom_sample(w, "", l, 2, (double)counts[k][s]);
			}
		}
	}
	prom_family(w, "ngxat_trial_verdicts_total", PROM_COUNTER, "Trials ended, by the judge's verdict.");
	if (store_verdict_counts(a->store, on_verdict, &vc) == 0)
		for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++)
			labelled(w, "verdict", verdicts[i], (double)vc.known[i]);
	if (store_audit_count(a->store, "conflict", &conflicts) == 0)
		one(w, "ngxat_conflicts_total", PROM_COUNTER,
		    "Conflicts found: a managed knob's live value differed from what the agent wrote.", (double)conflicts);
}

/* Whether S is a plain decimal number (what a sysctl or a directive's count reads as), into *V. */
static bool numeric(const char *s, double *v)
{
	const char *p = s;
	char *end;

	if (*p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	while ((*p >= '0' && *p <= '9') || *p == '.')
		p++;
	if (*p)
		return false;
	*v = strtod(s, &end);
	return *end == '\0' && isfinite(*v);
}

static void write_knobs(struct prom_writer *w, struct agent *a)
{
	struct engine *e = a->engine;
	size_t n = e ? engine_knob_count(e) : 0;
	struct engine_knob_report *r = n ? malloc(n * sizeof(*r)) : NULL;
	double v;

	if (n && !r) {
		if (!w->err)
			w->err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n; i++)
		engine_knob_report(e, i, &r[i]);
	prom_family(w, "ngxat_knob_state", PROM_GAUGE, "Each knob's state: 1 for the one it is in, 0 for the others.");
	for (size_t i = 0; i < n; i++) {
		for (int s = ENGINE_KNOB_OK; s <= ENGINE_KNOB_DISABLED; s++) {
			struct prom_label l[] = {{"knob", r[i].name},
						 {"state", engine_knob_state_name((enum engine_knob_state)s)}};

			prom_sample(w, "", l, 2, r[i].state == (enum engine_knob_state)s ? 1 : 0);
		}
	}
	prom_family(w, "ngxat_knob_value", PROM_GAUGE, "Live value of each knob that reads as one number.");
	for (size_t i = 0; i < n; i++)
		if (r[i].live_ok && numeric(r[i].live, &v))
			labelled(w, "knob", r[i].name, v);
	prom_family(w, "ngxat_knob_value_info", PROM_GAUGE,
		    "Live value of each knob that is not one number (a CPU list, a vector), as a label (always 1).");
	for (size_t i = 0; i < n; i++) {
		struct prom_label l[] = {{"knob", r[i].name}, {"value", r[i].live}};

		if (r[i].live_ok && !numeric(r[i].live, &v))
			prom_sample(w, "", l, 2, 1);
	}
	prom_family(w, "ngxat_knob_original_value", PROM_GAUGE,
		    "Value each numeric knob had before the agent first wrote it.");
	for (size_t i = 0; i < n; i++)
		if (r[i].has_original && numeric(r[i].original, &v))
			labelled(w, "knob", r[i].name, v);
	free(r);
}

static void write_tuning(struct prom_writer *w, struct agent *a)
{
	struct controller_report rep;
	int64_t change_id;

	if (!a->tuning)
		return;
	tuning_report(a->tuning, &rep, &change_id);
	prom_family(w, "ngxat_tuning_state", PROM_GAUGE, "The tuning loop's state: 1 for the one it is in.");
	for (int s = CONTROLLER_OBSERVE; s <= CONTROLLER_COOLDOWN; s++)
		labelled(w, "state", controller_state_name((enum controller_state)s), rep.state == (enum controller_state)s ? 1 : 0);
	one(w, "ngxat_tuning_paused", PROM_GAUGE, "1 when an operator paused the tuning loop.", rep.paused ? 1 : 0);
	one(w, "ngxat_trial_pair", PROM_GAUGE, "The A/B pair being measured (0 outside a trial).",
	    rep.state == CONTROLLER_TRIAL ? rep.pair : 0);
	one(w, "ngxat_trial_pairs", PROM_GAUGE, "Pairs the running trial plans (0 outside a trial).",
	    rep.state == CONTROLLER_TRIAL ? rep.pairs : 0);
	prom_family(w, "ngxat_trial_effect_ratio", PROM_GAUGE,
		    "The running trial's estimate of the relative change of its objective and its bounds (NaN before "
		    "two valid pairs).");
	labelled(w, "bound", "estimate", rep.effect);
	labelled(w, "bound", "lower", rep.effect_lo);
	labelled(w, "bound", "upper", rep.effect_hi);
}

enum MHD_Result api_prom_get(struct api *api, struct MHD_Connection *c)
{
	struct agent *a = api->a;
	int64_t stale = 3 * a->cfg.tick_ms > STALE_MIN_MS ? 3 * a->cfg.tick_ms : STALE_MIN_MS;
	struct MHD_Response *resp;
	struct prom_writer w;
	enum MHD_Result ret;
	char *text;
	size_t len;
	int r;

	prom_writer_init(&w);
	write_agent(&w, a);
	write_api(&w, api);
	write_journal(&w, a);
	write_knobs(&w, a);
	write_tuning(&w, a);
	write_fleet(&w, a);
	prom_totals_write(&a->prom, a->reg, stale, &w);
	r = prom_writer_take(&w, &text, &len);
	if (r < 0)
		return api_send_problem(c, 500, "metrics not written: %s", strerror(-r));
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, PROM_CONTENT_TYPE);
	api_common_headers(resp);
	ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}
