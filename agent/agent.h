/*
 * agent: the one object of the running agent (agent.c owns it), handed down to every module that needs it.
 *
 * The loop mutates it once per tick and publishes the report (struct report, report.h) that the API renders; the
 * API reads it and acts through the engine and the tuning loop, on the same thread. Nothing here is touched from
 * another thread except the stub_status result and the synthetic client's, which a pool thread fills while
 * stub_busy (client_busy) is set and the loop reads after it.
 */
#ifndef NGXAT_AGENT_H
#define NGXAT_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "core/metrics.h"
#include "core/prom.h"
#include "act/knob.h"
#include "observe/sampler.h"
#include "report.h"
#include "store/store.h"

#define AGENT_CPU_RING 128

struct api;
struct doctor;
struct engine;
struct tuning;

struct agent {
	struct config cfg;
	char config_path[CONFIG_PATH_MAX];
	bool config_must_exist;
	char root_override[CONFIG_PATH_MAX]; /* --root, kept across reloads */

	uv_loop_t *loop;
	uv_timer_t timer;
	uv_timer_t between;       /* the samples between ticks (loop.c: listen.wait_ms) */
	uint64_t between_start;   /* the loop's time of the tick they follow */
	unsigned between_i;       /* the next one's slot */
	uv_timer_t client_timer;  /* starts the synthetic client's run at a random moment (loop.c) */
	uv_signal_t sig_term, sig_int, sig_hup;
	uv_work_t stub_work;
	uv_work_t client_work;

	struct metric_registry *reg;
	struct sampler *sampler;
	struct store *store;
	struct api *api;
	struct engine *engine;    /* the knobs; NULL only before policies load */
	struct tuning *tuning;    /* the tuning loop over the engine */
	struct fleet *fleet;      /* [fleet]: this host in a pool (fleet/fleet.h), else NULL */
	struct fleet_loop *fleet_loop; /* the loop's side of it (loop.c) */
	struct loadgen *loadgen;  /* measure = loadgen: the load generator's runs; else NULL */
	struct doctor *doctor;    /* the advisories; NULL in the one-shot modes */
	struct knob_env env;      /* what the knob drivers see */
	pid_t nginx_seen_pid;     /* the master whose command line gave nginx_conf/nginx_prefix */
	char nginx_conf[CONFIG_PATH_MAX];   /* nginx's -c: [nginx] conf, else the running master's */
	char nginx_prefix[CONFIG_PATH_MAX]; /* nginx's -p, from the running master */
	int lock_fd;              /* flock on the store's lock file: one agent (or offline revert) at a time */
	pid_t writer_pid;         /* [agent] writer: the privileged writer process (priv/writer_main.h), else 0 */
	int writer_fd;            /* the engine's end of its socket, until the client owns it */
	int writer_rfd;           /* the engine's end of its read channel, until the client owns it */
	bool writer_hello;        /* its start was awaited already (before the engine's drop: [agent] user) */
	bool writer_remote;       /* the writer is a unit of its own, met at [agent] writer_socket (writer_pid 0) */
	struct wclient *wclient;  /* the client of the writer the knobs write through (priv/wclient.h) */
	struct rclient *rclient;  /* the client of its read channel the knobs read and probe through */
	struct wdump *wdump;      /* the nginx -T it makes for the engine (priv/wdump.h) */
	struct nssock *nssock;    /* the netlink sockets of nginx's namespace it makes for the sampler (priv/nssock.h) */
	bool writer_lost;         /* the writer died: the agent stopped without a revert, exit status 1 */
	uv_timer_t stop_timer;    /* bounds the wait for an asynchronous revert at stop */

	struct frame fr;          /* the frame being built */
	struct prom_totals prom;  /* every frame folded in, for GET /metrics */
	bool tick_busy;           /* a tick is waiting for its stub_status fetch */
	bool stub_busy;           /* a fetch is on the pool */
	void *stub_handle;
	struct stub_result stub_res;
	bool client_busy;         /* a run of the synthetic client is on the pool */
	bool client_done;         /* its result waits for the next frame */
	void *client_handle;
	struct client_result client_res;
	double client_cpu_ms;     /* pool CPU of the client's run the last frame took in */
	const char *client_conf;  /* the nginx -T dump (its buffer) the client's URLs were last read from */
	int64_t client_conf_ms;   /* when the dump was last asked for them */
	bool client_conf_retry;   /* asked again soon after, once: the dump it had was old */

	int64_t start_ms;         /* wall clock at start */
	uint64_t start_mono_ms;
	uint64_t slot_mono_ms;    /* when the tick scheduled last was due (loop time), 0 before the first */
	int64_t stall_logged_ms;  /* wall clock of the last "loop held" warning */
	int64_t last_tick_ms;     /* wall clock of the last tick */
	uint64_t ticks, late, stored;
	double tick_cpu_ms;       /* CPU of the tick being built (loop thread part) */
	double cpu_ring[AGENT_CPU_RING]; /* CPU ms of recent ticks, loop thread and stub fetch together */
	double client_ring[AGENT_CPU_RING]; /* ... of which the synthetic client's run (its requests' CPU) */
	size_t cpu_n;

	bool ready;               /* READY=1 sent */
	bool store_degraded;      /* the store's health as the last tick logged it */
	bool stopping;
	char summary[512];        /* one line for STATUS= and /v1/status */

	int64_t (*clock_ms)(void); /* wall-clock ms since the epoch: installed by loop.c, the only clock reader */
	struct report report;     /* what the loop published after the last tick: the API renders only this */
};

/* Wall-clock ms since the epoch, from the loop's clock (0 before loop_init installs it). */
int64_t agent_now_ms(const struct agent *a);
struct policy_set;
/* Load and validate the policy files the configuration names. 0 or -errno with ERR. */
int agent_load_policies(struct agent *a, struct policy_set **out, char *err, size_t errlen);
/* Fill a->env from the configuration. */
void agent_knob_env(struct agent *a);
/* nginx's master is PID now (0: none found): a->env follows it, and a new master's -c and -p (its command line)
 * are what nginx -t and -T run with, unless [nginx] conf names the file. */
void agent_nginx_follow(struct agent *a, pid_t pid);
/* Take the store's lock: one agent, or one offline revert, per store (both write knobs). 0 or -errno with ERR. */
int agent_lock(struct agent *a, char *err, size_t errlen);
/* With a writer (a->writer_pid): its client on a->loop, and every knob made from now on writes through it. 0, or
 * -errno with ERR. */
int agent_writer_client(struct agent *a, char *err, size_t errlen);
/* Policies, knobs, the tuning loop, and recovery of whatever a previous run left in flight (invariant 3). */
int agent_start_engine(struct agent *a, char *err, size_t errlen);
/* What a frame hands to the thread pool. */
enum agent_pool_job {
	AGENT_POOL_STUB,   /* the stub_status fetch: the tick waits for it */
	AGENT_POOL_CLIENT, /* the synthetic client's run: its result goes into the next frame */
};
/* Start JOB on HANDLE elsewhere (the pool); 0, or <0 to have it done in line. */
typedef int (*agent_pool_start_fn)(void *ctx, enum agent_pool_job job, void *handle);
/* The frame sequence, the same for the tick, --once and the doctor: a->fr is cleared and stamped NOW_MS / DT_S,
 * then every probe samples into it. stub_status and the synthetic client run in line when START is NULL; else
 * START gets their handles: the caller applies the stub_status result (sampler_stub_apply) when the fetch is
 * done, and the client's result, once done (client_done), goes into the next frame. */
void agent_collect_frame(struct agent *a, int64_t now_ms, double dt_s, agent_pool_start_fn start, void *ctx);

#endif
