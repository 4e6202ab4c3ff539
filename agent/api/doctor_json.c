/* doctor_json: see doctor_json.h. */
#include "api/doctor_json.h"

#include "proto.h"

static json_t *counts(const struct doctor_state *st)
{
	size_t c[3];

	doctor_state_counts(st, c);
	return json_pack("{s:I, s:I, s:I}", API_K_SEV_CRITICAL, (json_int_t)c[DOCTOR_CRITICAL], API_K_SEV_WARNING,
			 (json_int_t)c[DOCTOR_WARNING], API_K_SEV_INFO, (json_int_t)c[DOCTOR_INFO]);
}

json_t *doctor_counts_json(const struct doctor_state *st)
{
	json_t *o = counts(st);

	if (o)
		json_object_set_new(o, API_K_CHECKED, json_integer((json_int_t)st->checked_ms));
	return o;
}

json_t *doctor_json(const struct doctor_state *st, bool running)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < st->n; i++) {
		const struct doctor_tracked *t = &st->v[i];
		const struct doctor_finding *f = &t->f;

		json_t *o = json_pack("{s:s, s:s?, s:s, s:s, s:s, s:s, s:s, s:s?, s:I, s:I}", API_K_ID, f->id,
				      API_K_SUBJECT, f->subject[0] ? f->subject : NULL, API_K_SEVERITY,
				      doctor_severity_name(f->severity), API_K_TITLE, f->title, API_K_EVIDENCE,
				      f->evidence, API_K_FIX, f->fix, API_K_REF, f->ref, API_K_WHERE,
				      f->where[0] ? f->where : NULL, API_K_FIRST_SEEN, (json_int_t)t->first_seen_ms,
				      API_K_LAST_SEEN, (json_int_t)t->last_seen_ms);

		/* The agent's own fix: the tuning loop proposes it as a cause. */
		if (o && f->remedy.knob[0])
			json_object_set_new(o, API_K_REMEDY, json_pack("{s:s, s:s, s:b}", API_K_KNOB, f->remedy.knob,
								       API_K_VALUE, f->remedy.value, API_K_LIMIT,
								       f->remedy.limit));
		json_array_append_new(arr, o);
	}
	return json_pack("{s:I, s:b, s:o, s:o}", API_K_CHECKED, (json_int_t)st->checked_ms, API_K_RUNNING, running,
			 API_K_COUNTS, counts(st), API_K_ADVISORIES, arr);
}

int doctor_exit_code(const struct doctor_state *st)
{
	size_t c[3];

	doctor_state_counts(st, c);
	return c[DOCTOR_CRITICAL] ? 2 : c[DOCTOR_WARNING] ? 1 : 0;
}
