#include "act/engine.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy.h"
#include "api/events.h"
#include "act/crash.h"
#include "log.h"

#define MAX_KNOBS 256
#define MAX_JOBS 256
#define MAX_RETRIES 5 /* EBUSY/EAGAIN ticks before a write is given up */
#define MAX_ORPHANS 32 /* knobs changed under a policy that is gone, kept reachable for reverts */
#define MAX_RECOVER_TRIES 10 /* passes of recovery (one a tick) before a knob that will not go back is given up */

enum job_purpose {
	JOB_APPLY,   /* a change: success puts it in trial */
	JOB_REVERT,  /* a revert row: success puts the knob back to its original (or the change's old value) */
	JOB_REAPPLY, /* after a restart, a kept value the host lost (reboot): success keeps it */
	JOB_ARM,     /* a trial's arm (the controller): success puts the row in trial with that value in force */
	JOB_FINAL    /* a trial's verdict: success gives the row its final state */
};

struct job {
	enum job_purpose purpose;
	int64_t change_id; /* the journal row of this write */
	int64_t reverts;   /* JOB_REVERT: the change it undoes (0: all of the knob's changes) */
	size_t knob;
	char value[KNOB_VALUE_MAX];
	int retries;
	enum change_state final; /* JOB_FINAL */
	char detail[8];          /* JOB_ARM: the arm's name */
	bool checked;            /* a change's new value: asserted within its policy just before the write */
	bool recovery;           /* puts back what a previous run or a stopped trial left: READY waits for it */
	bool unjournaled;        /* no row of its own (change_id 0): the store could not take one (see restore) */
	bool behind;             /* a revert queued behind another write of its knob: at its turn, nothing is
				  * written when the knob already reads its value */
	char peer[64];           /* where the request that queued it came from (events_peer): its audit rows carry it
				  * when the write completes in a later turn of the loop */
};

struct eknob {
	struct knob k;
	enum engine_knob_state state;
	char why[KNOB_WHY_MAX];
	struct knob_row rec; /* what the store knows */
	/* The live value as engine_knob_report last read it, at engine time report_ms (0: none): reports (the API's
	 * knob list, /metrics, several requests a second) read a knob at most once per tick, since a sysctl read
	 * enters nginx's namespace. The engine's own decisions always read live; any write forgets it. */
	char report_live[KNOB_VALUE_MAX];
	bool report_ok;
	int64_t report_ms;
};

struct engine {
	struct store *st;
	struct knob_env *env;
	struct policy_set *set;
	struct policy_set *pending_set; /* a reload that waits for the change in flight to end */
	struct knob_policy *orphans[MAX_ORPHANS]; /* stand-in policies of adopted orphans (see adopt_orphan) */
	size_t norphans;
	struct eknob *knobs;
	size_t n;

	struct job jobs[MAX_JOBS]; /* writes to do, in order; one at a time */
	size_t njobs;
	bool waiting;              /* the first job's asynchronous write is under way */

	int64_t trial_id;          /* the change in trial (invariant 1: at most one), 0 if none */
	bool trial_external;       /* the controller ends it (with the judge), not the settle time */
	engine_write_cb arm_cb;    /* told when a JOB_ARM completes */
	char final_detail[4096];   /* the evidence of the JOB_FINAL queued (one trial at a time) */
	void *arm_ctx;
	size_t trial_knob;
	int64_t settle_until_ms;

	bool observe_only;
	char observe_why[KNOB_WHY_MAX];
	int64_t now_ms;

	bool recover_failed;      /* a recovery write failed: the host is not back; the next tick tries again */
	bool recover_unjournaled; /* a value was put back without its journal row: journaled when the store can be */
	int recover_tries;
};

static const char *const state_names[] = {"ok", "conflict", "unsupported", "disabled"};

const char *engine_knob_state_name(enum engine_knob_state s)
{
	return state_names[s];
}

/* ---- journal helpers ------------------------------------------------------------------------------------- */

static void audit(struct engine *e, const char *actor, const char *action, const char *knob, int64_t change_id,
		  const char *outcome, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static void audit(struct engine *e, const char *actor, const char *action, const char *knob, int64_t change_id,
		  const char *outcome, const char *fmt, ...)
{
	struct audit_row row;
	char field_knob[96], field_change[48];
	const char *fields[] = {field_knob, field_change, NULL};
	va_list ap;

	memset(&row, 0, sizeof(row));
	row.ts = e->now_ms;
	snprintf(row.actor, sizeof(row.actor), "%s", actor);
	snprintf(row.peer, sizeof(row.peer), "%s", events_peer());
	snprintf(row.action, sizeof(row.action), "%s", action);
	snprintf(row.knob, sizeof(row.knob), "%s", knob ? knob : "");
	row.change_id = change_id;
	snprintf(row.outcome, sizeof(row.outcome), "%s", outcome);
	va_start(ap, fmt);
	vsnprintf(row.detail, sizeof(row.detail), fmt, ap);
	va_end(ap);
	if (store_audit_append(e->st, &row) == 0)
		events_audit(&row);
	snprintf(field_knob, sizeof(field_knob), "NGXAT_KNOB=%s", row.knob);
	snprintf(field_change, sizeof(field_change), "NGXAT_CHANGE_ID=%lld", (long long)change_id);
	log_fields(strcmp(outcome, "ok") == 0 ? LOG_INFO : LOG_WARNING, fields, "%s %s%s%s: %s (%s)", actor, action,
		   row.knob[0] ? " " : "", row.knob, outcome, row.detail);
}

static void set_state(struct engine *e, int64_t id, enum change_state s, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_state(struct engine *e, int64_t id, enum change_state s, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (store_change_update(e->st, id, s, detail, e->now_ms) == 0)
		events_change(id, s, detail, e->now_ms);
}

/*
 * Change ID is undone (WHAT says how: "reverted by change 7"). A change the judge ended keeps its verdict: the
 * sentence and evidence that tuning.c wrote ("reason; {evidence}") stay in its detail after WHAT, so that ngxctl
 * show, the console and the verdict counts of /metrics still have them once it is reverted. When both do not fit,
 * the verdict stays as it was (the state says reverted; the revert row names the change it undoes).
 */
static void set_undone(struct engine *e, int64_t id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void set_undone(struct engine *e, int64_t id, const char *fmt, ...)
{
	struct change_row *row = malloc(sizeof(*row));
	char what[512], *detail = NULL;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (row && store_change_get(e->st, id, row) == 0 && strstr(row->detail, "; {\"") &&
	    (detail = malloc(sizeof(row->detail)))) {
		size_t a = strlen(what), b = strlen(row->detail);

		if (a + 2 + b < sizeof(row->detail)) {
			memcpy(detail, what, a);
			memcpy(detail + a, "; ", 2);
			memcpy(detail + a + 2, row->detail, b + 1);
		} else {
			memcpy(detail, row->detail, b + 1);
		}
	}
	if (store_change_update(e->st, id, CHANGE_REVERTED, detail ? detail : what, e->now_ms) == 0)
		events_change(id, CHANGE_REVERTED, detail ? detail : what, e->now_ms);
	free(detail);
	free(row);
}

static void save_rec(struct engine *e, struct eknob *ek)
{
	snprintf(ek->rec.name, sizeof(ek->rec.name), "%s", ek->k.name);
	snprintf(ek->rec.state, sizeof(ek->rec.state), "%s", state_names[ek->state]);
	snprintf(ek->rec.why, sizeof(ek->rec.why), "%s", ek->why);
	ek->rec.updated_ms = e->now_ms;
	/* A dry run's values exist only in this process: persisted, the next real start would re-apply them. */
	if (!e->env->dry_run)
		store_knob_put(e->st, &ek->rec);
}

/* R from the originals file as the engine returns it: a file's EPERM (an immutable file) is the host's failure, not
 * a refusal by policy (policy_check's -EPERM), which callers answer differently (the API: 500, not 400). The
 * database's own errors never carry EPERM (store_sqlite_errno). */
static int store_errno(int r)
{
	return r == -EPERM ? -EACCES : r;
}

/* LIVE becomes EK's original: a copy goes to the store's originals file first, so that the host can be put back
 * even if the database is lost (store.h). A dry run writes nothing, so it records nothing either. */
static int set_original(struct engine *e, struct eknob *ek, const char *live, char *err, size_t errlen)
{
	int r = e->env->dry_run ? 0 : store_original_note(e->st, ek->k.name, live);

	if (r < 0) {
		snprintf(err, errlen, "cannot keep a copy of %s's original value: %s", ek->k.name, strerror(-r));
		return store_errno(r);
	}
	ek->rec.has_original = true;
	snprintf(ek->rec.original, sizeof(ek->rec.original), "%s", live);
	save_rec(e, ek);
	return 0;
}

static void set_knob_state(struct engine *e, struct eknob *ek, enum engine_knob_state s, const char *why)
{
	ek->state = s;
	snprintf(ek->why, sizeof(ek->why), "%s", why);
	save_rec(e, ek);
}

/* ---- knobs ----------------------------------------------------------------------------------------------- */

static struct eknob *find(struct engine *e, const char *name)
{
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->knobs[i].k.name, name) == 0)
			return &e->knobs[i];
	return NULL;
}

/*
 * Invariant 7 must hold after a policy is removed too: a sysctl the agent changed under a policy that no longer
 * exists is adopted for reverts only, with a stand-in policy of the same kind. Only sysctls qualify: their knob
 * name is the sysctl's name, and the driver needs nothing else (other kinds need their policy's target).
 */
static struct eknob *adopt_orphan(struct engine *e, const char *name)
{
	struct knob_row rec;
	struct knob_policy *p;
	struct eknob *ek;
	char probe[KNOB_VALUE_MAX];
	size_t got;

	if (e->n >= MAX_KNOBS || e->norphans >= MAX_ORPHANS || store_knob_get(e->st, name, &rec) < 0 ||
	    !rec.has_original)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (knob_orphan_policy(name, rec.original, p) < 0) {
		free(p);
		return NULL;
	}
	ek = &e->knobs[e->n];
	memset(ek, 0, sizeof(*ek));
	/* Through the driver table like every knob, so that a dry run keeps its hands off orphans too. */
	if (knob_instantiate(p, e->env, &ek->k, 1, &got) < 0) {
		free(p);
		return NULL;
	}
	if (knob_read(&ek->k, probe, sizeof(probe)) < 0) {
		ek->k.ops->release(&ek->k);
		free(p);
		return NULL;
	}
	ek->state = ENGINE_KNOB_DISABLED;
	snprintf(ek->why, sizeof(ek->why), "its policy was removed; kept reachable for reverts");
	ek->rec = rec;
	e->orphans[e->norphans++] = p;
	e->n++;
	return ek;
}

static int orphan_cb(void *ctx, const struct change_row *row)
{
	struct engine *e = ctx;

	if (row->kind == CHANGE_KIND_CHANGE && !find(e, row->knob))
		adopt_orphan(e, row->knob);
	return 0;
}

/* For the policy's constraints: the live value of another knob, by knob or policy name. */
static int value_of(const char *name, char *out, size_t outlen, void *ctx)
{
	struct engine *e = ctx;

	for (size_t i = 0; i < e->n; i++) {
		struct eknob *ek = &e->knobs[i];

		if (strcmp(ek->k.name, name) != 0 && strcmp(ek->k.pol->name, name) != 0)
			continue;
		if (ek->state == ENGINE_KNOB_DISABLED || ek->state == ENGINE_KNOB_UNSUPPORTED)
			return -ENOENT;
		return knob_read(&ek->k, out, outlen);
	}
	return -ENOENT;
}

static void release_knobs(struct eknob *knobs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (knobs[i].k.ops && knobs[i].k.ops->release)
			knobs[i].k.ops->release(&knobs[i].k);
	free(knobs);
}

static int instantiate(struct engine *e, struct policy_set *set, struct eknob **out, size_t *nout, char *err,
		       size_t errlen)
{
	struct eknob *knobs = calloc(MAX_KNOBS, sizeof(*knobs));
	struct knob tmp[64];
	size_t n = 0;

	if (!knobs)
		return -ENOMEM;
	for (size_t i = 0; i < set->n; i++) {
		size_t got = 0;
		int r = knob_instantiate(&set->knobs[i], e->env, tmp, 64, &got);

		if (r < 0) {
			snprintf(err, errlen, "knob %s: %s", set->knobs[i].name, strerror(-r));
			for (size_t j = 0; j < got; j++)
				tmp[j].ops->release(&tmp[j]);
			release_knobs(knobs, n);
			return r;
		}
		for (size_t j = 0; j < got && n < MAX_KNOBS; j++) {
			struct eknob *ek = &knobs[n++];
			char why[KNOB_WHY_MAX] = "";

			ek->k = tmp[j];
			ek->state = ENGINE_KNOB_OK;
			if (!ek->k.pol->enabled) {
				ek->state = ENGINE_KNOB_DISABLED;
				snprintf(ek->why, sizeof(ek->why), "enabled = no in %s", ek->k.pol->file);
			} else if (ek->k.ops->probe && (r = ek->k.ops->probe(&ek->k, why, sizeof(why))) < 0) {
				/* A knob another daemon manages (irqbalance) is a conflict, not something to fight. */
				ek->state = r == -EBUSY ? ENGINE_KNOB_CONFLICT : ENGINE_KNOB_UNSUPPORTED;
				snprintf(ek->why, sizeof(ek->why), "%s", why[0] ? why : strerror(-r));
			} else if (ek->k.ops->probe) {
				/* A driver may say where a supported knob is set ("set in /etc/nginx/nginx.conf:12"). */
				snprintf(ek->why, sizeof(ek->why), "%s", why);
			}
			if (store_knob_get(e->st, ek->k.name, &ek->rec) == 0) {
				char live[KNOB_VALUE_MAX];

				/* Seeded from the originals file of a lost store (the offline revert): what the agent
				 * wrote last is not known, so what is live is taken as its own, to be put back. */
				if (strcmp(ek->rec.state, STORE_KNOB_LOST) == 0 && ek->rec.has_original &&
				    knob_read(&ek->k, live, sizeof(live)) == 0) {
					ek->rec.has_written = strcmp(live, ek->rec.original) != 0;
					snprintf(ek->rec.last_written, sizeof(ek->rec.last_written), "%s", live);
					snprintf(ek->rec.state, sizeof(ek->rec.state), "ok");
				}
				/* A conflict an operator has not cleared survives restarts. */
				if (strcmp(ek->rec.state, "conflict") == 0 && ek->state == ENGINE_KNOB_OK) {
					ek->state = ENGINE_KNOB_CONFLICT;
					snprintf(ek->why, sizeof(ek->why), "%s", ek->rec.why);
				}
			} else {
				memset(&ek->rec, 0, sizeof(ek->rec));
				snprintf(ek->rec.name, sizeof(ek->rec.name), "%s", ek->k.name);
			}
		}
	}
	*out = knobs;
	*nout = n;
	return 0;
}

int engine_new(struct store *st, struct knob_env *env, struct policy_set *set, struct engine **out, char *err,
	       size_t errlen)
{
	struct engine *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return -ENOMEM;
	e->st = st;
	e->env = env;
	r = instantiate(e, set, &e->knobs, &e->n, err, errlen);
	if (r < 0) {
		free(e);
		return r;
	}
	e->set = set;
	env->policies = set;
	*out = e;
	return 0;
}

void engine_free(struct engine *e)
{
	if (!e)
		return;
	release_knobs(e->knobs, e->n);
	if (e->env->policies == e->set)
		e->env->policies = NULL;
	if (e->set) {
		policy_set_free(e->set);
		free(e->set);
	}
	if (e->pending_set) {
		policy_set_free(e->pending_set);
		free(e->pending_set);
	}
	for (size_t i = 0; i < e->norphans; i++)
		free(e->orphans[i]);
	free(e);
}

int engine_set_policies(struct engine *e, struct policy_set *set, char *err, size_t errlen)
{
	struct eknob *knobs;
	size_t n;
	int r;

	/* Knob indices in jobs and the trial would dangle: reload between changes only. The set was validated
	 * whole already; it is swapped in by engine_tick when the change ends. */
	if (e->njobs || e->trial_id) {
		if (e->pending_set) {
			policy_set_free(e->pending_set);
			free(e->pending_set);
		}
		e->pending_set = set;
		snprintf(err, errlen, "a change is in flight; the new policies apply when it ends");
		return 0;
	}
	r = instantiate(e, set, &knobs, &n, err, errlen);
	if (r < 0)
		return r;
	release_knobs(e->knobs, e->n);
	policy_set_free(e->set);
	free(e->set);
	e->knobs = knobs;
	e->n = n;
	e->set = set;
	e->env->policies = set;
	return 0;
}

/* ---- writes ---------------------------------------------------------------------------------------------- */

static void run_jobs(struct engine *e);

static bool can_write(struct engine *e, char *err, size_t errlen)
{
	struct store_health h;

	if (e->observe_only) {
		snprintf(err, errlen, "observe-only: %s", e->observe_why);
		return false;
	}
	if (e->recover_failed || e->recover_unjournaled) {
		snprintf(err, errlen, "observe-only: %s", e->recover_failed ? "a knob could not be put back yet"
										: "a rollback is not journaled yet");
		return false;
	}
	store_get_health(e->st, &h);
	if (h.degraded) {
		snprintf(err, errlen, "observe-only: the store cannot be written (%s)", h.reason);
		return false;
	}
	return true;
}

static bool actor_is_agent(const char *actor)
{
	return strcmp(actor, "agent") == 0;
}

static int queue(struct engine *e, enum job_purpose purpose, int64_t change_id, int64_t reverts, size_t knob,
		 const char *value)
{
	struct job *j;

	if (e->njobs == MAX_JOBS)
		return -ENOSPC;
	j = &e->jobs[e->njobs++];
	memset(j, 0, sizeof(*j));
	j->purpose = purpose;
	j->change_id = change_id;
	j->reverts = reverts;
	j->knob = knob;
	snprintf(j->value, sizeof(j->value), "%s", value);
	snprintf(j->peer, sizeof(j->peer), "%s", events_peer());
	return 0;
}

/* The last write of knob I queued or under way, or NULL. */
static struct job *queued_on(struct engine *e, size_t i)
{
	for (size_t j = e->njobs; j-- > 0;)
		if (e->jobs[j].knob == i)
			return &e->jobs[j];
	return NULL;
}

/* Whether a revert of knob I is queued or under way. */
static bool revert_queued(const struct engine *e, size_t i)
{
	for (size_t j = 0; j < e->njobs; j++)
		if (e->jobs[j].knob == i && e->jobs[j].purpose == JOB_REVERT)
			return true;
	return false;
}

/* Journal a row (invariant 2: before the write) and queue the write. */
static int journal_and_queue(struct engine *e, enum job_purpose purpose, enum change_kind kind, size_t knob,
			     const char *from, const char *to, int64_t reverts, const char *actor, const char *why,
			     int64_t *id)
{
	struct change_row row;
	int r;

	memset(&row, 0, sizeof(row));
	snprintf(row.knob, sizeof(row.knob), "%s", e->knobs[knob].k.name);
	row.kind = kind;
	row.reverts = reverts;
	snprintf(row.old_value, sizeof(row.old_value), "%s", from);
	snprintf(row.new_value, sizeof(row.new_value), "%s", to);
	row.state = CHANGE_APPLYING;
	snprintf(row.actor, sizeof(row.actor), "%s", actor);
	snprintf(row.why, sizeof(row.why), "%s%s", e->env->dry_run ? "[dry run] " : "", why);
	row.created_ms = e->now_ms;
	r = store_change_insert(e->st, &row);
	if (r < 0)
		return r; /* not journaled: not written */
	if (kind == CHANGE_KIND_CHANGE)
		crash_point("journaled");
	if (id)
		*id = row.id;
	return queue(e, purpose, row.id, reverts, knob, to);
}

/*
 * Put KNOB back to TARGET, the journaled old value of change REVERTS, when the journal cannot take a row of its own
 * (the store is full, read-only or gone): the one write without a row first, because what it writes is already in
 * the journal, and leaving the host with a value nobody measures is worse (invariant 3 at start, 6 at stop). The
 * row that says so is written when the store can be written again (engine_tick runs recovery once more).
 */
static int restore_unjournaled(struct engine *e, size_t knob, const char *target, int64_t reverts)
{
	int r = queue(e, JOB_REVERT, 0, reverts, knob, target);

	if (r < 0)
		return r;
	e->jobs[e->njobs - 1].unjournaled = true;
	e->jobs[e->njobs - 1].recovery = true;
	e->recover_unjournaled = true;
	if (e->trial_id == reverts)
		e->trial_id = 0;
	return 0;
}

/* Journal and queue a recovery write of KNOB to TARGET, undoing change REVERTS; without a row when the journal
 * cannot take one. */
static int queue_recovery(struct engine *e, size_t knob, const char *from, const char *target, int64_t reverts,
			  const char *why)
{
	int r = journal_and_queue(e, JOB_REVERT, CHANGE_KIND_REVERT, knob, from, target, reverts, "agent", why, NULL);

	if (r == 0) {
		e->jobs[e->njobs - 1].recovery = true;
		return 0;
	}
	return restore_unjournaled(e, knob, target, reverts);
}

/* Mark every change of KNOB that is kept or in trial as reverted (when its original is back). */
static int mark_reverted_cb(void *ctx, const struct change_row *row)
{
	struct engine *e = ctx;

	if (row->kind == CHANGE_KIND_CHANGE)
		set_undone(e, row->id, "reverted");
	return 0;
}

/*
 * The listen queue knob raises (and on revert restores) net.core.somaxconn itself. If the agent also manages that
 * sysctl as a knob, what it last wrote there is now the listen driver's value: take it, or the next tick would see
 * a conflict with ourselves.
 */
static void adopt_somaxconn(struct engine *e)
{
	for (size_t i = 0; i < e->n; i++) {
		struct eknob *ek = &e->knobs[i];
		char live[KNOB_VALUE_MAX];

		if (ek->k.pol->kind != POLICY_SYSCTL || strcmp(ek->k.pol->target, "net.core.somaxconn") != 0 ||
		    !ek->rec.has_written || knob_read(&ek->k, live, sizeof(live)) < 0)
			continue;
		snprintf(ek->rec.last_written, sizeof(ek->rec.last_written), "%s", live);
		save_rec(e, ek);
	}
}

/* A trial's end: the row's final state, and what the agent now manages. VALUE is what is in force. */
static void finish_trial(struct engine *e, int64_t id, size_t knob, enum change_state final, const char *value,
			 const char *detail)
{
	struct eknob *ek = &e->knobs[knob];

	if (ek->rec.has_original && strcmp(value, ek->rec.original) == 0) {
		ek->rec.has_written = false; /* back to the host's own value: not managed */
		ek->rec.last_written[0] = '\0';
	} else {
		ek->rec.has_written = true;
		snprintf(ek->rec.last_written, sizeof(ek->rec.last_written), "%s", value);
	}
	save_rec(e, ek);
	store_change_update(e->st, id, final, detail, e->now_ms);
	audit(e, "agent", "verdict", ek->k.name, id, "ok", "%s: %s in force", change_state_name(final), value);
	if (e->trial_id == id)
		e->trial_id = 0;
	e->trial_external = false;
}

/* J's write is done and verified; NOTE: what its driver said beside it ("" or, e.g., another parameter it moved
 * with the knob), which joins the change's row and the audit. */
static void finish_ok(struct engine *e, struct job *j, const char *note)
{
	struct eknob *ek = &e->knobs[j->knob];
	const char *sep = note[0] ? "; " : "";

	if (ek->k.pol->kind == POLICY_LISTEN_QUEUE)
		adopt_somaxconn(e);

	switch (j->purpose) {
	case JOB_APPLY:
		ek->rec.has_written = true;
		snprintf(ek->rec.last_written, sizeof(ek->rec.last_written), "%s", j->value);
		save_rec(e, ek);
		set_state(e, j->change_id, CHANGE_TRIAL, "written and verified: reads back %s%s%s", j->value, sep, note);
		e->trial_id = j->change_id;
		e->trial_knob = j->knob;
		e->settle_until_ms = e->now_ms + ek->k.pol->settle_ms;
		audit(e, "agent", "apply", ek->k.name, j->change_id, "ok", "now %s, in trial%s%s", j->value, sep, note);
		break;
	case JOB_ARM:
		ek->rec.has_written = true;
		snprintf(ek->rec.last_written, sizeof(ek->rec.last_written), "%s", j->value);
		save_rec(e, ek);
		set_state(e, j->change_id, CHANGE_TRIAL, "arm %s in force: %s%s%s", j->detail, j->value, sep, note);
		e->trial_id = j->change_id;
		e->trial_knob = j->knob;
		e->trial_external = true;
		audit(e, "agent", "arm", ek->k.name, j->change_id, "ok", "arm %s: %s%s%s", j->detail, j->value, sep, note);
		if (e->arm_cb)
			e->arm_cb(e->arm_ctx, true);
		break;
	case JOB_FINAL:
		finish_trial(e, j->change_id, j->knob, j->final, j->value, e->final_detail);
		if (note[0])
			audit(e, "agent", "verdict", ek->k.name, j->change_id, "ok", "%s", note);
		break;
	case JOB_REAPPLY:
		ek->rec.has_written = true;
		snprintf(ek->rec.last_written, sizeof(ek->rec.last_written), "%s", j->value);
		save_rec(e, ek);
		set_state(e, j->change_id, CHANGE_KEPT, "re-applied after restart: reads back %s", j->value);
		audit(e, "agent", "reapply", ek->k.name, j->change_id, "ok", "kept value %s re-applied", j->value);
		break;
	case JOB_REVERT:
		/* The change undone first: marked once, by this revert, before the others of the knob below. */
		if (j->reverts) {
			struct change_row undone;

			if (store_change_get(e->st, j->reverts, &undone) == 0 && undone.state != CHANGE_FAILED) {
				if (j->change_id)
					set_undone(e, j->reverts, "reverted by change %lld", (long long)j->change_id);
				else
					set_undone(e, j->reverts, "put back while the store could not take a row");
			}
		}
		/* The knob is the host's own again: not managed until the agent writes it next. */
		if (ek->rec.has_original && strcmp(j->value, ek->rec.original) == 0) {
			ek->rec.has_written = false;
			ek->rec.last_written[0] = '\0';
			store_changes_query(e->st, ek->k.name, (1u << CHANGE_KEPT) | (1u << CHANGE_TRIAL), 0, 0,
					    mark_reverted_cb, e);
		} else {
			ek->rec.has_written = true;
			snprintf(ek->rec.last_written, sizeof(ek->rec.last_written), "%s", j->value);
		}
		save_rec(e, ek);
		if (j->change_id)
			set_state(e, j->change_id, CHANGE_KEPT, "put back: reads back %s%s%s", j->value, sep, note);
		audit(e, "agent", "revert", ek->k.name, j->change_id ? j->change_id : j->reverts, "ok", "back to %s%s%s%s",
		      j->value, j->unjournaled ? " (the store could not take the row: journaled when it can)" : "", sep,
		      note);
		if (e->trial_id && e->trial_knob == j->knob)
			e->trial_id = 0;
		break;
	}
}

static void finish_failed(struct engine *e, struct job *j, int r, const char *why)
{
	struct eknob *ek = &e->knobs[j->knob];
	struct change_row row;
	enum knob_errclass c = knob_errclass(r);

	/* For nginx, EINVAL is nginx -t refusing this value (its text is in WHY), not the knob being unsupported. */
	if (r == -EINVAL &&
	    (ek->k.pol->kind == POLICY_NGINX_DIRECTIVE || ek->k.pol->kind == POLICY_LISTEN_QUEUE ||
	     ek->k.pol->kind == POLICY_LISTEN_PARAM || ek->k.pol->kind == POLICY_UPSTREAM_KEEPALIVE))
		c = KNOB_ERR_OTHER;

	if (j->change_id)
		set_state(e, j->change_id, CHANGE_FAILED, "%s: %s", strerror(-r), why[0] ? why : "write failed");
	if (j->recovery)
		e->recover_failed = true;
	audit(e, "agent", j->purpose == JOB_REVERT ? "revert" : "apply", ek->k.name, j->change_id, "failed", "%s: %s",
	      strerror(-r), why[0] ? why : "write failed");
	if (c == KNOB_ERR_UNSUPPORTED)
		set_knob_state(e, ek, ENGINE_KNOB_UNSUPPORTED, why[0] ? why : strerror(-r));
	if (c == KNOB_ERR_READONLY) {
		e->observe_only = true;
		/* What refused, in the driver's words (knob_refusal: "refused: ..."), else the errno. */
		snprintf(e->observe_why, sizeof(e->observe_why), "%s refused a write: %s", ek->k.name,
			 strstr(why, "refused: ") ? strstr(why, "refused: ") + strlen("refused: ") : strerror(-r));
	}
	if (j->purpose == JOB_ARM || j->purpose == JOB_FINAL) {
		if (e->trial_id == j->change_id)
			e->trial_id = 0;
		e->trial_external = false;
		if (j->purpose == JOB_ARM && e->arm_cb)
			e->arm_cb(e->arm_ctx, false);
	}
	/* A failed apply may have left part of the value (a vector, an IRQ map): put the old value back, journaled
	 * as a revert of this change. Nothing more when the host refuses writes altogether, or when an operator's
	 * revert of the knob is queued behind this write already (it puts the value back). */
	if ((j->purpose == JOB_APPLY || j->purpose == JOB_ARM || j->purpose == JOB_FINAL) && c != KNOB_ERR_READONLY &&
	    !revert_queued(e, j->knob) && store_change_get(e->st, j->change_id, &row) == 0) {
		char live[KNOB_VALUE_MAX];

		if (knob_read(&ek->k, live, sizeof(live)) == 0 && strcmp(live, row.old_value) != 0)
			journal_and_queue(e, JOB_REVERT, CHANGE_KIND_REVERT, j->knob, live, row.old_value, j->change_id,
					  "agent", "restore after a failed write", NULL);
	}
}

static void pop_job(struct engine *e)
{
	memmove(&e->jobs[0], &e->jobs[1], (e->njobs - 1) * sizeof(e->jobs[0]));
	e->njobs--;
}

static void complete(struct engine *e, struct job *j, int r, const char *why)
{
	if (r == 0) {
		char live[KNOB_VALUE_MAX];
		struct eknob *ek = &e->knobs[j->knob];

		/* Asynchronous drivers verified their own way; every write is read back here once more. */
		r = knob_read(&ek->k, live, sizeof(live));
		if (r == 0 && strcmp(live, j->value) != 0) {
			char msg[KNOB_WHY_MAX + KNOB_VALUE_MAX];

			snprintf(msg, sizeof(msg), "wrote %.200s, reads back %.200s", j->value, live);
			finish_failed(e, j, -EIO, msg);
			return;
		}
		if (r == 0) {
			finish_ok(e, j, why);
			return;
		}
	}
	if (knob_errclass(r) == KNOB_ERR_RETRY && ++j->retries < MAX_RETRIES)
		return; /* left at the head of the queue: next tick */
	finish_failed(e, j, r, why);
}

static void on_done(struct knob *k, int result, const char *msg, void *ctx)
{
	struct engine *e = ctx;
	struct job j;

	(void)k;
	if (!e->waiting || e->njobs == 0)
		return;
	e->waiting = false;
	j = e->jobs[0];
	pop_job(e);
	e->knobs[j.knob].report_ms = 0;
	/* Called from the loop, after the request that asked for the write was answered: its rows name its peer. */
	events_set_peer(j.peer);
	complete(e, &j, result, msg ? msg : "");
	events_set_peer(NULL);
	run_jobs(e);
}

/* Invariant 4 at the last moment: a change's new value (J->checked) is within its knob's policy: enabled, not
 * forbidden, parses, in bounds, and the cross-knob constraints hold against the other knobs' live values now (an
 * operator may have lowered somaxconn while a backlog proposal waited for its approval). The value was validated
 * in full where it entered (engine_check, or the planner for the agent's own), step included; the step is not
 * evaluated again (from the value itself). Reverts and re-applies put back a value the host had, which is not a
 * change (policy.h). -EDOM (a class of its own: the knob stays usable and the engine writable) with WHY, or 0. */
static int guard(struct engine *e, const struct job *j, char *why, size_t whylen)
{
	char msg[KNOB_WHY_MAX];

	if (!j->checked ||
	    policy_check(e->set, e->knobs[j->knob].k.pol, j->value, j->value, value_of, e, msg, sizeof(msg)) == 0)
		return 0;
	snprintf(why, whylen, "refused before the write: %.200s", msg);
	return -EDOM;
}

/* Whether J puts EK back to its original: a restore (the writer's backend puts back the original it journaled; the
 * others write the value). */
static bool puts_back_original(const struct eknob *ek, const struct job *j)
{
	return j->purpose == JOB_REVERT && ek->rec.has_original && strcmp(j->value, ek->rec.original) == 0;
}

static void run_jobs(struct engine *e)
{
	while (e->njobs && !e->waiting) {
		struct job *j = &e->jobs[0];
		struct eknob *ek = &e->knobs[j->knob];
		char why[KNOB_WHY_MAX] = "";
		int r, retries = j->retries;

		ek->report_ms = 0;
		r = guard(e, j, why, sizeof(why));
		if (r == 0 && j->behind) {
			char live[KNOB_VALUE_MAX];

			/* The write it waited for may have left the value it puts back (a failed apply undone). */
			if (knob_read(&ek->k, live, sizeof(live)) == 0 && strcmp(live, j->value) == 0) {
				struct job done = *j;

				pop_job(e);
				snprintf(why, sizeof(why), "nothing to write: it read %.180s once the write before it ended",
					 live);
				complete(e, &done, 0, why);
				continue;
			}
		}
		if (r == 0 && puts_back_original(ek, j))
			r = knob_restore(&ek->k, j->value, why, sizeof(why), on_done, e);
		else if (r == 0)
			r = knob_write(&ek->k, j->value, why, sizeof(why), on_done, e);
		if (r == -EINPROGRESS) {
			e->waiting = true;
			return;
		}
		if (knob_errclass(r) == KNOB_ERR_RETRY && retries + 1 < MAX_RETRIES) {
			j->retries++;
			return; /* next tick */
		}
		{
			struct job done = *j;

			pop_job(e);
			complete(e, &done, r, why);
		}
	}
}

/* ---- operator and agent actions -------------------------------------------------------------------------- */

int engine_check(struct engine *e, const char *knob, const char *value, struct engine_checked *out, char *err,
		 size_t errlen)
{
	struct eknob *ek = find(e, knob);
	char *live = out->from, *canon = out->to;
	struct knobval parsed;
	int r;

	memset(out, 0, sizeof(*out));
	if (!ek) {
		snprintf(err, errlen, "no knob named '%s' (see GET /v1/knobs)", knob);
		return -ENOENT;
	}
	if (ek->state != ENGINE_KNOB_OK) {
		snprintf(err, errlen, "%s is %s: %s", knob,
			 ek->state == ENGINE_KNOB_CONFLICT ? "in conflict" : state_names[ek->state], ek->why);
		return ek->state == ENGINE_KNOB_CONFLICT ? -EBUSY : -ENOTSUP;
	}
	if (!can_write(e, err, errlen))
		return -EROFS;
	if (e->trial_id || e->njobs) {
		snprintf(err, errlen, "change %lld is in flight: one change on the host at a time",
			 (long long)(e->trial_id ? e->trial_id : e->jobs[0].change_id));
		return -EBUSY;
	}
	r = knobval_parse(ek->k.pol->type, value, &parsed, err, errlen);
	if (r < 0)
		return -ERANGE;
	knobval_format(&parsed, canon, KNOB_VALUE_MAX);
	r = knob_read(&ek->k, live, KNOB_VALUE_MAX);
	if (r < 0) {
		snprintf(err, errlen, "cannot read %s: %s", knob, strerror(-r));
		return r;
	}
	if (strcmp(live, canon) == 0) {
		snprintf(err, errlen, "%s is already %s", knob, canon);
		return -EALREADY;
	}
	r = policy_check(e->set, ek->k.pol, live, canon, value_of, e, err, errlen);
	if (r < 0)
		return r;
	snprintf(out->knob, sizeof(out->knob), "%s", ek->k.name);
	return 0;
}

int engine_apply_now(struct engine *e, const char *knob, const char *value, const char *actor, const char *why,
		     int64_t now_ms, int64_t *change_id, char *err, size_t errlen)
{
	struct engine_checked c;
	struct eknob *ek;
	int r;

	e->now_ms = e->env->now_ms = now_ms; /* the drivers read no clock */
	r = engine_check(e, knob, value, &c, err, errlen);
	if (r < 0)
		return r;
	ek = find(e, c.knob);
	if (!ek->rec.has_original && (r = set_original(e, ek, c.from, err, errlen)) < 0)
		return r;
	r = journal_and_queue(e, JOB_APPLY, CHANGE_KIND_CHANGE, (size_t)(ek - e->knobs), c.from, c.to, 0, actor,
			      why && why[0] ? why : "operator proposal", change_id);
	if (r < 0) {
		snprintf(err, errlen, "cannot journal the change: %s", strerror(-r));
		return r;
	}
	e->jobs[e->njobs - 1].checked = true;
	audit(e, actor, "propose", knob, *change_id, "ok", "%s -> %s (applied at once)", c.from, c.to);
	run_jobs(e);
	{
		/* Synchronous drivers are done already: a write that failed is the caller's answer. */
		struct change_row row;

		if (store_change_get(e->st, *change_id, &row) == 0 && row.state == CHANGE_FAILED) {
			snprintf(err, errlen, "the write failed and was undone: %s", row.detail);
			return -EIO;
		}
	}
	return 0;
}

static const char *const revert_outcome_names[] = {"done", "pending", "already", "skipped", "failed"};

const char *engine_revert_outcome_name(enum engine_revert_outcome o)
{
	return revert_outcome_names[o];
}

/* A new line of REP for knob EK (NULL when REP is NULL or full: then it is counted). */
static struct engine_revert_item *report_item(struct engine_revert_report *rep, const struct eknob *ek)
{
	struct engine_revert_item *it;

	if (!rep)
		return NULL;
	if (rep->n == ENGINE_REVERT_KNOBS) {
		rep->more++;
		return NULL;
	}
	it = &rep->items[rep->n++];
	memset(it, 0, sizeof(*it));
	snprintf(it->knob, sizeof(it->knob), "%s", ek->k.name);
	return it;
}

static int changes_cb(void *ctx, const struct change_row *row)
{
	struct engine_revert_item *it = ctx;

	if (row->kind == CHANGE_KIND_CHANGE && it->nchanges < ENGINE_REVERT_CHANGES)
		it->changes[it->nchanges++] = row->id;
	return 0;
}

/* Revert one knob to TARGET (its original, or the old value of change REVERTS); IT (NULL: not wanted) says what
 * was done. A write of the knob queued or under way (an nginx -t and reload take a while, and a reload is not
 * recalled halfway) is let finish: the revert is queued behind it. 1 when a revert row was journaled and its write
 * queued, 0 when there is nothing to write, or -errno. */
static int revert_knob(struct engine *e, size_t i, const char *target, int64_t reverts, const char *actor,
		       const char *why, struct engine_revert_item *it)
{
	struct eknob *ek = &e->knobs[i];
	struct job *last = queued_on(e, i);
	char live[KNOB_VALUE_MAX];
	int64_t row = 0;
	int r;

	if (it)
		snprintf(it->to, sizeof(it->to), "%s", target);
	if (last) {
		int64_t before = last->change_id;

		if (last->purpose == JOB_REVERT && strcmp(last->value, target) == 0) {
			if (it) {
				it->row = last->change_id;
				it->outcome = ENGINE_REVERT_PENDING;
				snprintf(it->why, sizeof(it->why), "a revert to %.100s is queued already", target);
			}
			return 0;
		}
		r = journal_and_queue(e, JOB_REVERT, CHANGE_KIND_REVERT, i, last->value, target, reverts, actor, why,
				      &row);
		if (r < 0)
			return r;
		e->jobs[e->njobs - 1].behind = true;
		if (it) {
			it->row = row;
			it->outcome = ENGINE_REVERT_PENDING;
			snprintf(it->why, sizeof(it->why), "behind the write of change %lld, under way: put back once it ends",
				 (long long)before);
		}
		return 1;
	}
	r = knob_read(&ek->k, live, sizeof(live));
	if (r < 0)
		return r;
	if (strcmp(live, target) == 0) {
		/* Nothing to write; the journal still says the change is undone (a trial's arm A in force reads the
		 * original: the trial ends here, and the tuning loop sees it end). */
		if (reverts) {
			set_undone(e, reverts, "%s already reads %s", ek->k.name, target);
		} else if (ek->rec.has_original && strcmp(target, ek->rec.original) == 0) {
			ek->rec.has_written = false;
			ek->rec.last_written[0] = '\0';
			save_rec(e, ek);
			store_changes_query(e->st, ek->k.name, (1u << CHANGE_KEPT) | (1u << CHANGE_TRIAL), 0, 0,
					    mark_reverted_cb, e);
		}
		if (e->trial_id && e->trial_knob == i)
			e->trial_id = 0;
		if (it) {
			it->outcome = ENGINE_REVERT_ALREADY;
			snprintf(it->why, sizeof(it->why), "already reads %.200s", target);
		}
		return 0;
	}
	/* A revert puts back the host's own value, which may be outside today's bounds: it is not checked
	 * against the policy (it is not a new value), only journaled like any write. */
	r = journal_and_queue(e, JOB_REVERT, CHANGE_KIND_REVERT, i, live, target, reverts, actor, why, &row);
	if (r < 0)
		return r;
	if (it) {
		it->row = row;
		it->outcome = ENGINE_REVERT_PENDING; /* settled by revert_settle once the queue has run */
	}
	return 1;
}

/* After the queue ran: which of REP's writes are done, failed, or still queued or under way. */
static void revert_settle(struct engine *e, struct engine_revert_report *rep)
{
	rep->pending = 0;
	for (size_t i = 0; i < rep->n; i++) {
		struct engine_revert_item *it = &rep->items[i];
		struct change_row *row;
		bool queued = false;

		if (it->outcome != ENGINE_REVERT_PENDING)
			continue;
		for (size_t j = 0; j < e->njobs && it->row; j++)
			queued |= e->jobs[j].change_id == it->row;
		if (queued || !it->row || !(row = malloc(sizeof(*row)))) {
			if (!it->why[0])
				snprintf(it->why, sizeof(it->why), "its write is under way");
			rep->pending++;
			continue;
		}
		if (store_change_get(e->st, it->row, row) == 0 && row->state == CHANGE_FAILED) {
			it->outcome = ENGINE_REVERT_FAILED;
			snprintf(it->why, sizeof(it->why), "%.250s", row->detail);
		} else {
			it->outcome = ENGINE_REVERT_DONE;
			it->why[0] = '\0';
		}
		free(row);
	}
}

int engine_revert(struct engine *e, int64_t change_id, const char *actor, int64_t now_ms,
		  struct engine_revert_report *rep, char *err, size_t errlen)
{
	int started = 0, r;

	e->now_ms = e->env->now_ms = now_ms; /* the drivers read no clock */
	if (rep)
		memset(rep, 0, offsetof(struct engine_revert_report, items));
	if (!can_write(e, err, errlen))
		return -EROFS;
	if (change_id) {
		struct change_row row;
		struct engine_revert_item *it;
		struct eknob *ek;

		r = store_change_get(e->st, change_id, &row);
		if (r < 0) {
			snprintf(err, errlen, "no change %lld", (long long)change_id);
			return r;
		}
		if (row.kind != CHANGE_KIND_CHANGE || (row.state != CHANGE_KEPT && row.state != CHANGE_TRIAL &&
						       row.state != CHANGE_APPLYING)) {
			snprintf(err, errlen, "change %lld is %s%s: nothing to revert", (long long)change_id,
				 row.kind == CHANGE_KIND_REVERT ? "a revert, " : "", change_state_name(row.state));
			return -EALREADY;
		}
		ek = find(e, row.knob);
		if (!ek)
			ek = adopt_orphan(e, row.knob);
		if (!ek) {
			snprintf(err, errlen, "knob %s of change %lld is not managed now (policy removed?)", row.knob,
				 (long long)change_id);
			return -ENOENT;
		}
		if (ek->state == ENGINE_KNOB_CONFLICT) {
			snprintf(err, errlen, "%s is in conflict (%s): clear the conflict first", row.knob, ek->why);
			return -EBUSY;
		}
		audit(e, actor, "revert", row.knob, change_id, "ok", "requested");
		it = report_item(rep, ek);
		if (it) {
			it->changes[0] = change_id;
			it->nchanges = 1;
		}
		r = revert_knob(e, (size_t)(ek - e->knobs), row.old_value, change_id, actor, "operator revert", it);
		if (r < 0) {
			snprintf(err, errlen, "%s: %s", row.knob, strerror(-r));
			return r;
		}
		run_jobs(e);
		if (rep) {
			rep->writes = r;
			revert_settle(e, rep);
		}
		return r;
	}
	audit(e, actor, "revert-all", NULL, 0, "ok", "requested");
	store_changes_query(e->st, "", 1u << CHANGE_KEPT, 0, 0, orphan_cb, e);
	for (size_t i = 0; i < e->n; i++) {
		struct eknob *ek = &e->knobs[i];
		struct engine_revert_item *it;

		/* Every knob the agent has written, and every knob it is writing now (an apply under way has not
		 * marked the knob written yet). */
		if (!ek->rec.has_original || (!ek->rec.has_written && !queued_on(e, i)))
			continue;
		it = report_item(rep, ek);
		if (it) {
			snprintf(it->to, sizeof(it->to), "%s", ek->rec.original);
			store_changes_query(e->st, ek->k.name,
					    (1u << CHANGE_KEPT) | (1u << CHANGE_TRIAL) | (1u << CHANGE_APPLYING), 0,
					    ENGINE_REVERT_CHANGES, changes_cb, it);
		}
		if (ek->state == ENGINE_KNOB_CONFLICT) {
			/* Invariant 5 holds for reverts too: someone else's value is not overwritten. */
			audit(e, actor, "revert", ek->k.name, 0, "skipped", "in conflict: %s", ek->why);
			if (it) {
				it->outcome = ENGINE_REVERT_SKIPPED;
				snprintf(it->why, sizeof(it->why), "in conflict: %.200s", ek->why);
			}
			continue;
		}
		r = revert_knob(e, i, ek->rec.original, 0, actor, actor_is_agent(actor) ? "revert of every change at stop"
										       : "operator revert of every change", it);
		if (r > 0)
			started++;
		else if (r < 0 && it) {
			it->outcome = ENGINE_REVERT_FAILED;
			snprintf(it->why, sizeof(it->why), "%s", strerror(-r));
		}
	}
	run_jobs(e);
	if (rep) {
		rep->writes = started;
		revert_settle(e, rep);
	}
	return started;
}

static int supersede_cb(void *ctx, const struct change_row *row)
{
	if (row->kind == CHANGE_KIND_CHANGE)
		set_undone(ctx, row->id, "superseded: an operator's value became the original");
	return 0;
}

int engine_clear_conflict(struct engine *e, const char *knob, const char *actor, int64_t now_ms, char *err,
			  size_t errlen)
{
	struct eknob *ek = find(e, knob);
	char live[KNOB_VALUE_MAX];

	e->now_ms = e->env->now_ms = now_ms; /* the drivers read no clock */
	if (!ek) {
		snprintf(err, errlen, "no knob named '%s'", knob);
		return -ENOENT;
	}
	if (ek->state != ENGINE_KNOB_CONFLICT) {
		snprintf(err, errlen, "%s is not in conflict", knob);
		return -EALREADY;
	}
	/* Whatever is live now is the operator's: it becomes the value to return to. */
	if (knob_read(&ek->k, live, sizeof(live)) == 0 && set_original(e, ek, live, err, errlen) < 0)
		return -EIO;
	ek->rec.has_written = false;
	set_knob_state(e, ek, ENGINE_KNOB_OK, "");
	/* The operator's value is the new baseline: the agent's earlier changes of this knob are history now, and
	 * reverting one would write over the operator again. */
	store_changes_query(e->st, ek->k.name, (1u << CHANGE_KEPT) | (1u << CHANGE_TRIAL), 0, 0, supersede_cb, e);
	audit(e, actor, "clear-conflict", knob, 0, "ok", "original is now %s", ek->rec.original);
	return 0;
}

/* ---- restart, ticks, stop -------------------------------------------------------------------------------- */

/* Whether knob I reads other than what the agent last wrote there (LIVE gets what it reads): the test of a
 * conflict (invariant 5), at start and every tick. Only a usable knob the agent has written counts, and not while
 * a write of its own to it is queued or under way. */
static bool drifted(struct engine *e, size_t i, char *live, size_t livelen)
{
	struct eknob *ek = &e->knobs[i];

	if (!ek->rec.has_written || ek->state != ENGINE_KNOB_OK)
		return false;
	for (size_t j = 0; j < e->njobs; j++)
		if (e->jobs[j].knob == i)
			return false;
	return knob_read(&ek->k, live, livelen) == 0 && strcmp(live, ek->rec.last_written) != 0;
}

/* Someone else changed knob EK to LIVE (SEEN says when: "reads", "at start it reads"): freeze it and report it;
 * the agent never writes it back. */
static void freeze(struct engine *e, struct eknob *ek, const char *seen, const char *live)
{
	char why[KNOB_WHY_MAX];

	snprintf(why, sizeof(why), "%s %.100s; the agent last wrote %.100s", seen, live, ek->rec.last_written);
	set_knob_state(e, ek, ENGINE_KNOB_CONFLICT, why);
	audit(e, "agent", "conflict", ek->k.name, 0, "frozen", "%s", why);
}

struct recover_ctx {
	struct engine *e;
	int started;
};

static int recover_cb(void *ctx, const struct change_row *row)
{
	struct recover_ctx *c = ctx;
	struct engine *e = c->e;
	struct eknob *ek = find(e, row->knob);
	int r;

	if (!ek)
		ek = adopt_orphan(e, row->knob);
	if (!ek) {
		set_state(e, row->id, CHANGE_FAILED, "left %s at restart, but knob %s is no longer managed",
			  change_state_name(row->state), row->knob);
		return 0;
	}
	if (row->kind == CHANGE_KIND_REVERT) {
		/* A revert interrupted: finish it. */
		r = queue_recovery(e, (size_t)(ek - e->knobs), row->old_value, row->new_value, row->reverts,
				   "revert finished after restart");
		set_state(e, row->id, CHANGE_FAILED, "interrupted by a restart; finished by a new revert");
	} else {
		r = queue_recovery(e, (size_t)(ek - e->knobs), row->new_value, row->old_value, row->id,
				   "rolled back after restart");
	}
	if (r == 0)
		c->started++;
	audit(e, "agent", "recover", row->knob, row->id, r == 0 ? "ok" : "failed", "%s change left %s: %s",
	      row->kind == CHANGE_KIND_REVERT ? "revert" : "a", change_state_name(row->state),
	      row->kind == CHANGE_KIND_REVERT ? "finishing it" : "rolled back after restart");
	return 0;
}

static int withdraw_cb(void *ctx, const struct change_row *row)
{
	set_state(ctx, row->id, CHANGE_REJECTED, "withdrawn at restart: %s was still %s", row->knob,
		  change_state_name(row->state));
	return 0;
}

/* Put back every change the journal has in applying or trial: what recovery at start does, and again later when
 * a write of it failed or its rows could not be journaled. The writes started, or -errno. */
static int recover_rows(struct engine *e)
{
	struct recover_ctx c = {.e = e};
	int r;

	e->recover_failed = false;
	e->recover_unjournaled = false;
	r = store_changes_query(e->st, "", (1u << CHANGE_APPLYING) | (1u << CHANGE_TRIAL), 0, 0, recover_cb, &c);
	return r < 0 ? r : c.started;
}

int engine_recover(struct engine *e, int64_t now_ms)
{
	struct recover_ctx c = {.e = e};
	int r;

	e->now_ms = e->env->now_ms = now_ms; /* the drivers read no clock */
	/* The controller does not outlive a restart: its proposals are closed, and it proposes again if need be. */
	store_changes_query(e->st, "", (1u << CHANGE_PROPOSED) | (1u << CHANGE_APPROVED), 0, 0, withdraw_cb, e);
	r = recover_rows(e);
	if (r < 0)
		return r;
	c.started = r;
	/* Kept values the host lost (a reboot resets sysctls): re-apply where the host still has the original. */
	for (size_t i = 0; i < e->n; i++) {
		struct eknob *ek = &e->knobs[i];
		char live[KNOB_VALUE_MAX];

		if (!drifted(e, i, live, sizeof(live)))
			continue;
		if (ek->rec.has_original && strcmp(live, ek->rec.original) == 0) {
			if (journal_and_queue(e, JOB_REAPPLY, CHANGE_KIND_CHANGE, i, live, ek->rec.last_written, 0,
					      "agent", "kept value re-applied after restart", NULL) == 0)
				c.started++;
		} else {
			freeze(e, ek, "at start it reads", live);
		}
	}
	run_jobs(e);
	return c.started;
}

static void check_conflicts(struct engine *e)
{
	for (size_t i = 0; i < e->n; i++) {
		struct eknob *ek = &e->knobs[i];
		char live[KNOB_VALUE_MAX];

		if (!drifted(e, i, live, sizeof(live)))
			continue;
		freeze(e, ek, "reads", live);
		if (e->trial_id && e->trial_knob == i) {
			set_state(e, e->trial_id, CHANGE_ABORTED, "conflict during the trial: %s", ek->why);
			e->trial_id = 0;
		}
	}
}

/* The store cannot be written and a trial is in flight: nothing measures it, and its verdict could not be
 * journaled; its old value goes back now (unjournaled: see restore_unjournaled). */
static void stop_trial_unwritable(struct engine *e)
{
	struct store_health h;
	struct change_row row;
	char live[KNOB_VALUE_MAX];

	if (!e->trial_id || e->njobs || e->env->dry_run)
		return;
	store_get_health(e->st, &h);
	if (!h.degraded || store_change_get(e->st, e->trial_id, &row) < 0)
		return;
	if (knob_read(&e->knobs[e->trial_knob].k, live, sizeof(live)) == 0 && strcmp(live, row.old_value) == 0) {
		e->recover_unjournaled = true; /* the arm in force is the old value: only the journal is behind */
		e->trial_id = 0;
		return;
	}
	audit(e, "agent", "abort", row.knob, row.id, "failed", "the store cannot be written (%s): back to %s", h.reason,
	      row.old_value);
	restore_unjournaled(e, e->trial_knob, row.old_value, row.id);
}

void engine_tick(struct engine *e, int64_t now_ms)
{
	e->now_ms = e->env->now_ms = now_ms; /* the drivers read no clock */
	if (!e->trial_id && !e->njobs)
		e->trial_external = false; /* ended by a conflict or an operator revert */
	stop_trial_unwritable(e);
	if (!e->waiting && !e->njobs && e->recover_tries < MAX_RECOVER_TRIES) {
		struct store_health h;

		store_get_health(e->st, &h);
		/* A knob that did not go back is tried again at once; rows not journaled once the store takes them. */
		if (e->recover_failed || (e->recover_unjournaled && !h.degraded)) {
			e->recover_tries++;
			if (recover_rows(e) == 0 && !e->recover_failed && !e->recover_unjournaled)
				e->recover_tries = 0;
		}
	}
	if (!e->waiting)
		run_jobs(e); /* retries */
	check_conflicts(e);
	if (e->trial_id && !e->trial_external && !e->njobs && now_ms >= e->settle_until_ms) {
		set_state(e, e->trial_id, CHANGE_KEPT, "settled for %lld ms",
			  (long long)e->knobs[e->trial_knob].k.pol->settle_ms);
		audit(e, "agent", "keep", e->knobs[e->trial_knob].k.name, e->trial_id, "ok", "settled");
		e->trial_id = 0;
	}
	if (e->pending_set && !e->njobs && !e->trial_id) {
		struct policy_set *set = e->pending_set;
		char err[KNOB_WHY_MAX];

		e->pending_set = NULL;
		if (engine_set_policies(e, set, err, sizeof(err)) < 0) {
			log_err("policies not reloaded: %s", err);
			policy_set_free(set);
			free(set);
		} else {
			log_info("policies reloaded now that the change in flight has ended");
		}
	}
}

void engine_stop(struct engine *e, bool revert_all, int64_t now_ms)
{
	char err[KNOB_WHY_MAX];
	int64_t id = 0;
	size_t knob = 0;

	e->now_ms = e->env->now_ms = now_ms; /* the drivers read no clock */
	if (revert_all) {
		engine_revert(e, 0, "agent", now_ms, NULL, err, sizeof(err));
		return;
	}
	/* Invariant 6: stop is not revert; only the change being measured goes back, also when its first write is
	 * still under way (it goes back once that write ends). */
	if (!e->trial_id)
		for (size_t j = 0; j < e->njobs; j++)
			if (e->jobs[j].purpose == JOB_APPLY || e->jobs[j].purpose == JOB_ARM) {
				id = e->jobs[j].change_id;
				knob = e->jobs[j].knob;
			}
	if (e->trial_id) {
		id = e->trial_id;
		knob = e->trial_knob;
	}
	if (id) {
		struct change_row row;

		if (store_change_get(e->st, id, &row) == 0 &&
		    revert_knob(e, knob, row.old_value, row.id, "agent", "stopped during its trial", NULL) < 0)
			restore_unjournaled(e, knob, row.old_value, row.id); /* the store is full or gone */
		run_jobs(e);
	}
}

bool engine_recovered(const struct engine *e)
{
	if (e->recover_failed)
		return false;
	for (size_t i = 0; i < e->njobs; i++)
		if (e->jobs[i].recovery)
			return false;
	return true;
}

bool engine_busy(const struct engine *e)
{
	return e->njobs > 0;
}

/* ---- trials run by the controller ---------------------------------------------------------------------- */

int engine_value(struct engine *e, const char *knob, char *out, size_t outlen)
{
	struct eknob *ek = find(e, knob);

	if (!ek) {
		/* plan asks by policy name; per-interface knobs are not proposed */
		return -ENOENT;
	}
	if (ek->state == ENGINE_KNOB_CONFLICT)
		return -EBUSY;
	if (ek->state != ENGINE_KNOB_OK)
		return -ENOENT;
	return knob_read(&ek->k, out, outlen);
}

bool engine_knob_in_conflict(struct engine *e, const char *knob)
{
	struct eknob *ek = find(e, knob);

	return ek && ek->state == ENGINE_KNOB_CONFLICT;
}

int engine_journal_proposal(struct engine *e, const struct engine_checked *c, const char *actor, const char *why,
			    const char *approved, int64_t now_ms, int64_t *id, char *err, size_t errlen)
{
	struct eknob *ek = find(e, c->knob);
	struct change_row row;
	int r;

	e->now_ms = e->env->now_ms = now_ms; /* the drivers read no clock */
	if (!ek || ek->state != ENGINE_KNOB_OK) {
		snprintf(err, errlen, "%s is not a usable knob here", c->knob);
		return -ENOENT;
	}
	if (!can_write(e, err, errlen))
		return -EROFS;
	memset(&row, 0, sizeof(row));
	snprintf(row.knob, sizeof(row.knob), "%s", c->knob);
	row.kind = CHANGE_KIND_CHANGE;
	snprintf(row.old_value, sizeof(row.old_value), "%s", c->from);
	snprintf(row.new_value, sizeof(row.new_value), "%s", c->to);
	row.state = CHANGE_PROPOSED;
	snprintf(row.actor, sizeof(row.actor), "%s", actor);
	snprintf(row.why, sizeof(row.why), "%s%s", e->env->dry_run ? "[dry run] " : "", why);
	row.created_ms = now_ms;
	r = store_change_insert(e->st, &row);
	if (r < 0) {
		snprintf(err, errlen, "cannot journal the proposal: %s", strerror(-r));
		return r;
	}
	*id = row.id;
	audit(e, actor, "propose", c->knob, row.id, "ok", "%s -> %s: %s", c->from, c->to, why);
	if (approved)
		engine_close_proposal(e, row.id, CHANGE_APPROVED, actor, approved, now_ms);
	return 0;
}

int engine_change_state(struct engine *e, int64_t id, enum change_state *st)
{
	struct change_row *row = malloc(sizeof(*row));
	int r;

	if (!row)
		return -ENOMEM;
	r = store_change_get(e->st, id, row);
	if (r == 0)
		*st = row->state;
	free(row);
	return r;
}

int engine_close_proposal(struct engine *e, int64_t id, enum change_state st, const char *actor, const char *detail,
			  int64_t now_ms)
{
	struct change_row row;
	int r;

	e->now_ms = e->env->now_ms = now_ms; /* the drivers read no clock */
	r = store_change_get(e->st, id, &row);
	if (r < 0)
		return r;
	if (row.state != CHANGE_PROPOSED && row.state != CHANGE_APPROVED)
		return -EALREADY;
	set_state(e, id, st, "%s", detail);
	audit(e, actor, st == CHANGE_APPROVED ? "approve" : "reject", row.knob, id, "ok", "%s", detail);
	return 0;
}

int engine_set_arm(struct engine *e, int64_t id, const char *value, const char *arm, int64_t now_ms,
		   engine_write_cb cb, void *ctx, char *err, size_t errlen)
{
	struct change_row row;
	struct eknob *ek;
	int r;

	e->now_ms = e->env->now_ms = now_ms; /* the drivers read no clock */
	r = store_change_get(e->st, id, &row);
	if (r < 0) {
		snprintf(err, errlen, "no change %lld", (long long)id);
		return r;
	}
	ek = find(e, row.knob);
	if (!ek || ek->state != ENGINE_KNOB_OK) {
		snprintf(err, errlen, "%s is not usable: %s", row.knob, ek ? ek->why : "no such knob");
		return -ENOENT;
	}
	if (strcmp(value, row.old_value) != 0 && strcmp(value, row.new_value) != 0) {
		snprintf(err, errlen, "an arm is the change's old or new value");
		return -EINVAL;
	}
	if (revert_queued(e, (size_t)(ek - e->knobs))) {
		/* An operator's revert waits behind the write under way: it ends the trial, and no arm goes after it. */
		snprintf(err, errlen, "a revert of %s is under way", row.knob);
		return -ECANCELED;
	}
	if (!can_write(e, err, errlen))
		return -EROFS;
	if (row.state == CHANGE_PROPOSED || row.state == CHANGE_APPROVED) {
		char live[KNOB_VALUE_MAX];

		if (e->trial_id || e->njobs) {
			snprintf(err, errlen, "another change is in flight");
			return -EBUSY;
		}
		r = knob_read(&ek->k, live, sizeof(live));
		if (r < 0) {
			snprintf(err, errlen, "cannot read %s: %s", row.knob, strerror(-r));
			return r;
		}
		if (!ek->rec.has_original && (r = set_original(e, ek, live, err, errlen)) < 0)
			return r;
	} else if (row.state != CHANGE_TRIAL || e->trial_id != id) {
		snprintf(err, errlen, "change %lld is %s, not in trial", (long long)id, change_state_name(row.state));
		return -EALREADY;
	}
	/* The row says which arm is being written before the write (invariant 2); recovery puts the old value back
	 * whatever the arm. */
	set_state(e, id, row.state == CHANGE_TRIAL ? CHANGE_TRIAL : CHANGE_APPLYING, "writing arm %s: %s", arm, value);
	e->arm_cb = cb;
	e->arm_ctx = ctx;
	r = queue(e, JOB_ARM, id, 0, (size_t)(ek - e->knobs), value);
	if (r < 0)
		return r;
	snprintf(e->jobs[e->njobs - 1].detail, sizeof(e->jobs[0].detail), "%s", arm);
	e->jobs[e->njobs - 1].checked = strcmp(value, row.new_value) == 0;
	e->trial_external = true;
	run_jobs(e);
	return 0;
}

int engine_end_trial(struct engine *e, int64_t id, enum change_state final, const char *value, const char *detail,
		     int64_t now_ms)
{
	struct change_row row;
	struct eknob *ek;
	char live[KNOB_VALUE_MAX];
	int r;

	e->now_ms = e->env->now_ms = now_ms; /* the drivers read no clock */
	r = store_change_get(e->st, id, &row);
	if (r < 0)
		return r;
	if (row.state == CHANGE_PROPOSED || row.state == CHANGE_APPROVED) {
		/* Ended before its first write (a pause right after the approval): nothing was written. */
		set_state(e, id, CHANGE_REJECTED, "ended before the trial started: %.300s", detail);
		return 0;
	}
	if (row.state != CHANGE_TRIAL && row.state != CHANGE_APPLYING)
		return -EALREADY; /* failed, or ended by a conflict or an operator: nothing to do */
	ek = find(e, row.knob);
	if (!ek)
		return -ENOENT;
	if (revert_queued(e, (size_t)(ek - e->knobs)))
		return -EALREADY; /* an operator's revert is under way: it ends the trial (and the row) itself */
	if (!value || (knob_read(&ek->k, live, sizeof(live)) == 0 && strcmp(live, value) == 0)) {
		/* Nothing to write (or the agent must not write: a conflict, an operator revert). */
		if (knob_read(&ek->k, live, sizeof(live)) < 0)
			snprintf(live, sizeof(live), "%s", value ? value : row.old_value);
		finish_trial(e, id, (size_t)(ek - e->knobs), final, value ? value : live, detail);
		return 0;
	}
	if (!can_write(e, live, sizeof(live)))
		return -EROFS;
	r = queue(e, JOB_FINAL, id, 0, (size_t)(ek - e->knobs), value);
	if (r < 0)
		return r;
	e->jobs[e->njobs - 1].final = final;
	e->jobs[e->njobs - 1].checked = strcmp(value, row.new_value) == 0;
	snprintf(e->final_detail, sizeof(e->final_detail), "%s", detail);
	run_jobs(e);
	return 0;
}

const struct policy_set *engine_policies(const struct engine *e)
{
	return e->set;
}

/* ---- reports --------------------------------------------------------------------------------------------- */

size_t engine_knob_count(const struct engine *e)
{
	return e->n;
}

void engine_knob_report(struct engine *e, size_t i, struct engine_knob_report *out)
{
	struct eknob *ek = &e->knobs[i];

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", ek->k.name);
	out->kind = ek->k.ops->kind;
	out->pol = ek->k.pol;
	out->state = ek->state;
	snprintf(out->why, sizeof(out->why), "%s", ek->why);
	if (ek->state == ENGINE_KNOB_UNSUPPORTED) {
		out->live_ok = false;
	} else {
		if (!e->now_ms || ek->report_ms != e->now_ms) {
			ek->report_ok = knob_read(&ek->k, ek->report_live, sizeof(ek->report_live)) == 0;
			ek->report_ms = e->now_ms;
		}
		out->live_ok = ek->report_ok;
		if (out->live_ok)
			snprintf(out->live, sizeof(out->live), "%s", ek->report_live);
	}
	out->has_original = ek->rec.has_original;
	out->has_written = ek->rec.has_written;
	snprintf(out->original, sizeof(out->original), "%s", ek->rec.original);
	snprintf(out->last_written, sizeof(out->last_written), "%s", ek->rec.last_written);
	if (e->trial_id && e->trial_knob == i)
		out->change_id = e->trial_id;
	for (size_t j = 0; j < e->njobs; j++)
		if (e->jobs[j].knob == i)
			out->change_id = e->jobs[j].change_id;
}

bool engine_knob_conflict(const struct engine *e, size_t i, const char **name, const char **why)
{
	const struct eknob *ek = &e->knobs[i];

	if (ek->state != ENGINE_KNOB_CONFLICT)
		return false;
	*name = ek->k.name;
	*why = ek->why;
	return true;
}

bool engine_observe_only(const struct engine *e, char *why, size_t whylen)
{
	if (e->observe_only)
		snprintf(why, whylen, "%s", e->observe_why);
	else if (e->recover_failed)
		snprintf(why, whylen, "recovery has not put every knob back yet");
	else if (e->recover_unjournaled)
		snprintf(why, whylen, "a knob was put back without its journal row; journaled once the store can be written");
	return e->observe_only || e->recover_failed || e->recover_unjournaled;
}
