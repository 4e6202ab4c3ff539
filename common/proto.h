/*
 * proto: the wire between the agent's API and its clients (ngxctl, the console, scripts).
 *
 * The one place that names API paths, query parameters and JSON keys. Both sides include it; nothing else
 * spells these strings. Bump NGXAT_API_VERSION if you change the wire (a renamed key, a changed meaning).
 */
#ifndef NGXAT_PROTO_H
#define NGXAT_PROTO_H

#define NGXAT_API_VERSION 1

#define NGXAT_DEFAULT_SOCKET "/run/ngx-autotune/api.sock"
#define NGXAT_DEFAULT_CONFIG "/etc/ngx-autotune/agent.conf"

/* Paths */
#define API_PATH_STATUS "/v1/status"
#define API_PATH_FRAMES "/v1/frames"
#define API_PATH_METRICS "/v1/metrics"
#define API_PATH_KNOBS "/v1/knobs"          /* GET; POST .../NAME/clear-conflict */
#define API_PATH_CHANGES "/v1/changes"      /* GET, GET .../ID; POST .../ID/revert */
#define API_PATH_PROPOSALS "/v1/proposals"  /* GET; POST {"knob", "value", "why", "now"} */
#define API_PATH_REVERT "/v1/revert"        /* POST {}: every change back to its original */
#define API_PATH_AUDIT "/v1/audit"          /* GET */
#define API_PATH_TRIAL "/v1/trials/current" /* GET: the tuning loop's state, the trial's arm and estimate */
#define API_PATH_PAUSE "/v1/pause"          /* POST {} */
#define API_PATH_RESUME "/v1/resume"        /* POST {} */
#define API_PATH_ADVISORIES "/v1/advisories" /* GET: the doctor's findings */
#define API_PATH_PROMETHEUS "/metrics"      /* GET: Prometheus text format 0.0.4 (where scrapers look) */
#define API_PATH_EVENTS "/v1/events"        /* GET: server-sent events (text/event-stream) */
#define API_PATH_CONSOLE "/console"         /* GET: the console page (also at "/") */
#define API_PATH_FLEET "/v1/fleet"          /* GET: the pool ([fleet]) as this agent last saw it in etcd */
#define API_ACTION_APPROVE "approve"        /* POST /v1/proposals/ID/approve {"comment"} */
#define API_ACTION_REJECT "reject"          /* POST /v1/proposals/ID/reject {"comment"} */
#define API_ACTION_REVERT "revert"
#define API_ACTION_CLEAR_CONFLICT "clear-conflict"

/* Query parameters of /v1/frames */
#define API_Q_SINCE "since"     /* ms since the epoch, or negative seconds relative to now ("-60") */
#define API_Q_UNTIL "until"     /* same form; default now */
#define API_Q_METRICS "metrics" /* comma-separated names; a trailing '*' matches a prefix */
#define API_Q_LIMIT "limit"     /* most frames returned (default and maximum 3600) */
#define API_Q_ROLLUP "rollup"   /* "1": per-minute roll-ups instead of per-second frames */

/* Keys of /v1/status */
#define API_K_API_VERSION "api_version"
#define API_K_VERSION "version"
#define API_K_STATE "state"
#define API_K_SUMMARY "summary"
#define API_K_UPTIME "uptime_s"
#define API_K_TICK "tick"
#define API_K_TICK_INTERVAL "interval_ms"
#define API_K_TICK_COUNT "count"
#define API_K_TICK_LAST_MS "last_ms"
#define API_K_TICK_CPU_MED "cpu_ms_median"
#define API_K_TICK_CLIENT_CPU_MED "client_cpu_ms_median"
#define API_K_TICK_OWN_CPU_MED "own_cpu_ms_median"
#define API_K_TICK_LATE "late"
#define API_K_PROBES "probes"
#define API_K_CONNS "api"               /* the API's own connections */
#define API_K_CONNS_OPEN "open"
#define API_K_CONNS_REFUSED "refused"
#define API_K_CONNS_EVICTED "evicted"
#define API_K_CONNS_EXPIRED "expired"
#define API_K_CONNS_DENIED "denied"     /* requests refused for who sent them (401, 403) */
#define API_K_CONNS_OUT_BYTES "answer_bytes"     /* bytes of answers queued and not yet written */
#define API_K_CONNS_OUT_REFUSED "answers_refused" /* answers refused 503: they would have passed the limit */
#define API_K_PROBE_NAME "name"
#define API_K_PROBE_OK "ok"
#define API_K_PROBE_ERROR "error"
#define API_K_PROBE_FAILURES "failures"
#define API_K_PROBE_ENABLED "enabled"
#define API_K_PROBE_SATURATED "saturated"
#define API_K_STORE "store"
#define API_K_STORE_PATH "path"
#define API_K_STORE_DEGRADED "degraded"
#define API_K_STORE_REASON "reason"
#define API_K_STORE_FRAMES "frames"
#define API_K_STORE_ROLLUPS "rollups"
#define API_K_STORE_BYTES "bytes"
#define API_K_STORE_ERRORS "write_errors"
#define API_K_NGINX "nginx"
#define API_K_NGINX_PID "master_pid"
#define API_K_NGINX_WORKERS "workers"

/* Keys of /v1/frames */
#define API_K_FRAMES "frames"
#define API_K_TS "ts"
#define API_K_DT "dt"
#define API_K_VALUES "values"
#define API_K_TICKS "ticks"         /* roll-ups: how many ticks the minute's means are over */
#define API_K_TRUNCATED "truncated" /* true when LIMIT frames were returned and more may exist */

/* Query parameters of /v1/changes and /v1/audit */
#define API_Q_KNOB "knob"
#define API_Q_STATE "state"
#define API_Q_BEFORE "before" /* ids below this (paging backwards) */
#define API_Q_ACTOR "actor"

/* Keys of /v1/knobs */
#define API_K_KNOBS "knobs"
#define API_K_NAME "name"
#define API_K_KIND "kind"
#define API_K_KNOB_STATE "state"
#define API_K_WHY "why"
#define API_K_VALUE "value"
#define API_K_ORIGINAL "original"
#define API_K_LAST_WRITTEN "last_written"
#define API_K_CHANGE "change"
#define API_K_POLICY "policy"
#define API_K_TYPE "type"
#define API_K_BOUNDS "bounds"
#define API_K_MIN "min"
#define API_K_MAX "max"
#define API_K_ALLOWED "values"
#define API_K_STEP "step"
#define API_K_MAX_STEP "max_step"
#define API_K_APPROVAL "approval"
#define API_K_ENABLED "enabled"
#define API_K_SETTLE_MS "settle_ms"
#define API_K_OBJECTIVE "objective"
#define API_K_GUARDRAILS "guardrails"
#define API_K_TARGET "target"
#define API_K_OBSERVE_ONLY "observe_only"

/* Keys of /v1/changes and /v1/proposals */
#define API_K_CHANGES "changes"
#define API_K_ID "id"
#define API_K_KNOB "knob"
#define API_K_CHANGE_KIND "kind"
#define API_K_REVERTS "reverts"
#define API_K_FROM "from"
#define API_K_TO "to"
#define API_K_ACTOR "actor"
#define API_K_DETAIL "detail"
#define API_K_CREATED "created_ms"
#define API_K_UPDATED "updated_ms"
#define API_K_STARTED "started" /* POST /v1/revert, /v1/changes/ID/revert: revert writes queued */
#define API_K_PENDING "pending" /* ... of which still queued or under way at the answer */
#define API_K_MORE "more"       /* ... knobs beyond those listed in "knobs" */
#define API_K_COMMENT "comment"
#define API_K_NOW "now" /* POST /v1/proposals: true applies at once, without a trial */
#define API_K_PROPOSALS "proposals"
#define API_K_MODE "mode"
#define API_K_PAUSED "paused"
#define API_K_ARM "arm"
#define API_K_PAIR "pair"
#define API_K_PAIRS "pairs"
#define API_K_CALIB_PAIR "calibration_pair"   /* the A/A pair being measured (1-based), 0 when not calibrating */
#define API_K_CALIB_PAIRS "calibration_pairs" /* of how many */
#define API_K_EFFECT "effect"
#define API_K_EFFECT_LO "effect_lo"
#define API_K_EFFECT_HI "effect_hi"
#define API_K_VERDICT "verdict"
#define API_K_REASON "reason"
#define API_K_UNTIL "until_ms"
#define API_K_EVIDENCE "evidence"

/* The judge's evidence (`evidence` above, the verdict event, a kept or reverted change's detail) and its A/A
 * calibration (an audit row "calibrate"); VERDICT, REASON, OBJECTIVE, PAIRS, VALID, EFFECT*, GUARDRAILS, ORDER,
 * A, B and D as above. */
#define API_K_BETTER "better"           /* the objective's direction: API_BETTER_* ; in "sign": pairs better */
#define API_K_DELTA "delta"
#define API_K_ALPHA "alpha"
#define API_K_PLANNED "planned"
#define API_K_VOID "void"
#define API_K_MEAN "mean"
#define API_K_SD "sd"
#define API_K_T "t"
#define API_K_LOWER "lower"
#define API_K_UPPER "upper"
#define API_K_SIGN "sign"
#define API_K_WORSE "worse"
#define API_K_P "p"
#define API_K_HALVES "halves"
#define API_K_TRIPS "trips"
#define API_K_TRIP_OVERFLOW "overflow"
#define API_K_TRIP_UNHANDLED "unhandled"
#define API_K_TRIP_ERRORS "errors"
#define API_K_METRIC "metric"
#define API_K_TEST "test"               /* API_TEST_* */
#define API_K_AVAILABLE "available"
#define API_K_FAILED "failed"
#define API_K_FAILED_PAIR "failed_pair"
#define API_K_EVENTS_A "events_a"
#define API_K_EVENTS_B "events_b"
#define API_K_SHOWN "shown"
#define API_K_IMPLIED "implied"         /* a guardrail of what clients get, watched in every trial */
#define API_K_LEDGER "ledger"           /* implied for the clients' time ledger alone: it ends no trial */
#define API_K_INTERNAL "internal"       /* a figure internal to the host, not what clients get */
#define API_K_OUTWEIGHED "outweighed"   /* its harm was outweighed by more good responses */
#define API_K_SAVED_MS "saved_ms"       /* a latency's ledger: clients' ms saved per 1000 requests by fewer drops and
					 * failures */
#define API_K_COST_MS "cost_ms"         /* ... and the ms its rise cost them */
#define API_K_PAIRS_DETAIL "pairs_detail"
#define API_K_P95 "p95"
#define API_K_REQ_A "req_a"
#define API_K_REQ_B "req_b"
#define API_K_G "g"
#define API_K_REFUSE "refuse"
#define API_K_AA_PAIRS "aa_pairs"
#define API_K_FLOOR "floor"
#define API_K_NEEDED "needed"
#define API_K_AT_MS "at_ms"
#define API_K_CALIBRATION "calibration"
#define API_BETTER_HIGHER "higher"
#define API_BETTER_LOWER "lower"
#define API_TEST_BINOMIAL "binomial"
#define API_TEST_NONINF "noninferiority"
#define API_ORDER_AB "AB"
#define API_ORDER_BA "BA"
/* The same evidence as text people read (core/evfmt.h), beside the figures: in the evidence and in each guardrail.
 * Added keys: older rows in the journal do not have them. */
#define API_K_LABEL "label"             /* the metric's name for people: "listen overflows" */
#define API_K_ARM_A "arm_a"             /* arm A's figure in the metric's unit: "486/1k req" */
#define API_K_ARM_B "arm_b"
#define API_K_CHANGE_TEXT "change_text" /* B against A with its interval: "fell 78% [71%, 83%] (better)" */
/* API_K_SUMMARY ("summary"): one line, the arms and the change: "listen overflows 486/1k req -> 0/1k req (better)" */
/* The sequential rule and the harm while judging (added keys). */
#define API_K_EARLY "early"             /* kept by the sequential rule before K pairs */
#define API_K_OUTCOME_KEEP "outcome_keep" /* kept on good responses, its internal objective not deciding */
#define API_K_PER_SECOND "per_second"   /* the objective (a count per 1k requests) compared per second: no request
					 * was counted */
#define API_K_BAYES_FACTOR "bayes_factor" /* its Bayes factor over the valid pairs (null before one) */
#define API_K_NOISE_SD "noise_sd"       /* the calibration's sd of d it counted (null: none) */
#define API_K_NOISE_PAIRS "noise_pairs"
#define API_K_SEQ_EFFECT "seq_effect"   /* its standardized effect, clipped to 8 (null before 2 valid pairs) */
#define API_K_PRIOR_EFFECT "prior_effect" /* the canary's standardized effect its prior was centred on (null: none) */
#define API_K_PRIOR_PAIRS "prior_pairs" /* ... over that many pairs (0: none) */
#define API_K_CONTROLLED "controlled"   /* valid pairs judged against the pool's peers */
#define API_K_CONTROL "control"         /* in a pair: the peers' d over its windows, taken from its d */
#define API_K_CONTROL_PEERS "control_peers"
#define API_K_A_EVENTS "a_events"       /* the objective's events in the A blocks (null: not a count) */
#define API_K_A_SECONDS "a_seconds"     /* the seconds arm A was measured */
#define API_K_OUTAGE "outage"           /* in a pair: "a" or "b", the block that served nothing */

/* Keys of /v1/audit */
#define API_K_AUDIT "audit"
#define API_K_LAST_TS "last_ts"
#define API_K_PEER "peer"
#define API_K_ACTION "action"
#define API_K_OUTCOME "outcome"
#define API_K_COUNT "count"
#define API_K_CHANGE_ID "change_id"

/* Keys of /v1/advisories (and "advisories" in /v1/status: the counts and checked_ms) */
#define API_K_ADVISORIES "advisories"
#define API_K_CHECKED "checked_ms"        /* when the checks last completed; 0: not yet */
#define API_K_RUNNING "running"           /* a run is under way */
#define API_K_COUNTS "counts"
#define API_K_SEV_CRITICAL "critical"
#define API_K_SEV_WARNING "warning"
#define API_K_SEV_INFO "info"
#define API_K_SUBJECT "subject"           /* which instance (an upstream, a listen address); null when one */
#define API_K_SEVERITY "severity"         /* "info", "warning", "critical" */
#define API_K_TITLE "title"
#define API_K_FIX "fix"
#define API_K_REF "ref"                   /* the directive or sysctl to read about */
#define API_K_REMEDY "remedy"             /* the agent's own fix: {knob, value, limit} */
#define API_K_LIMIT "limit"               /* the fix raises a limit (else it removes work) */
#define API_K_WHERE "where"               /* "file:line" of the configuration; null for live findings */
#define API_K_FIRST_SEEN "first_seen_ms"
#define API_K_LAST_SEEN "last_seen_ms"

/* Server-sent events of /v1/events: "id: N", "event: TYPE", "data: {JSON}". Types: */
#define API_EV_PROPOSAL "proposal" /* made, approved, rejected, withdrawn: {id, knob, from, to, state, actor, ts, and
				      why (made, withdrawn) or comment (approved, rejected)} */
#define API_EV_TRIAL "trial"       /* phase "arm" {id, knob, arm, value, pair, pairs, state, ts}; phase "pair"
				      {id, knob, pair, pairs, valid, order, void, a, b, d, effect, effect_lo, effect_hi,
				      ts} */
#define API_EV_VERDICT "verdict"   /* {id, knob, verdict, state, reason, evidence, ts} */
#define API_EV_CONFLICT "conflict" /* {knob, detail, ts} */
#define API_EV_CHANGE "change"     /* a journal row moved: {id, state, detail, ts} */
#define API_EV_AUDIT "audit"       /* an audit row, as in /v1/audit */
#define API_EV_STATUS "status"     /* heartbeat: the /v1/status object */
#define API_EV_RESET "reset"       /* the events after Last-Event-ID are gone: {last_event_id, oldest} */
#define API_K_PHASE "phase"
#define API_K_VALID "valid"
#define API_K_ORDER "order"
#define API_K_A "a"
#define API_K_B "b"
#define API_K_D "d"
#define API_K_LAST_EVENT_ID "last_event_id"
#define API_K_OLDEST "oldest"
#define API_PHASE_ARM "arm"
#define API_PHASE_PAIR "pair"
#define API_PROPOSAL_MADE "proposed"
#define API_PROPOSAL_APPROVED "approved"
#define API_PROPOSAL_REJECTED "rejected"
#define API_PROPOSAL_WITHDRAWN "withdrawn"

/* Keys of /v1/fleet (and of /v1/status's "fleet", its first ones) */
#define API_K_FLEET "fleet"
#define API_K_FLEET_CONFIGURED "configured" /* false: no [fleet], the agent is alone (nothing else follows) */
#define API_K_FLEET_POOL "pool"
#define API_K_FLEET_HOST "host"
#define API_K_FLEET_REACHABLE "reachable"   /* its last round reached etcd and holds a lease */
#define API_K_FLEET_WHY "why"               /* why no trial may start now ("" when one may) */
#define API_K_FLEET_HELD "held"             /* this host holds a trial slot */
#define API_K_FLEET_SLOT "slot"             /* which (-1: none) */
#define API_K_FLEET_WANT "want"             /* the controller wants one */
#define API_K_FLEET_ENDPOINT "endpoint"     /* the etcd endpoint that answered last */
#define API_K_FLEET_MAX "max_in_trial"         /* the pool's: the smallest its alive hosts set */
#define API_K_FLEET_MAX_SET "max_in_trial_set" /* this host's [fleet] max_in_trial */
#define API_K_FLEET_MAX_BY "max_in_trial_by"   /* the host that set the pool's below it, "" */
#define API_K_FLEET_CANARY "canary"            /* the host whose trial is the pool's canary, "" */
#define API_K_FLEET_ROUNDS "rounds"
#define API_K_FLEET_FAILURES "failures"
#define API_K_FLEET_WATCHING "watching"     /* etcd streams the pool's changes to this host */
#define API_K_FLEET_WAKES "wakes"           /* changes of the pool that woke its round */
#define API_K_FLEET_MEMBERS "members"       /* [{host, alive, state, knob, agent, kernel, cpus, slot, max_in_trial}] */
#define API_K_FLEET_ALIVE "alive"
#define API_K_FLEET_STATE "state"
#define API_K_FLEET_KNOB "knob"
#define API_K_FLEET_AGENT "agent"
#define API_K_FLEET_KERNEL "kernel"
#define API_K_FLEET_CPUS "cpus"
#define API_K_FLEET_VERDICTS "verdicts"     /* [{host, knob, from, to, kept, symptom, summary, kernel, cpus, at_ms,
					     * effect, pairs}] */
#define API_K_FLEET_FROM "from"
#define API_K_FLEET_TO "to"
#define API_K_FLEET_KEPT "kept"
#define API_K_FLEET_SYMPTOM "symptom"
#define API_K_FLEET_SUMMARY "summary"
#define API_K_FLEET_AT "at_ms"
#define API_K_FLEET_EFFECT "effect"         /* its trial's standardized effect (judge's seq_effect), when said */
#define API_K_FLEET_PAIRS "pairs"           /* ... over that many valid pairs */

/* Keys of /v1/metrics */
#define API_K_METRICS "metrics"

/* Problem objects (RFC 9457 shape) */
#define API_K_ERR_TYPE "type"
#define API_K_ERR_TITLE "title"
#define API_K_ERR_STATUS "status"
#define API_K_ERR_DETAIL "detail"

#endif
