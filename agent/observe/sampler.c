/* sampler: the probe table, the sampler's lifecycle and the tick; see sampler.h, and sampler_kit.h for the floors. */
#include "build-config.h"

#include "observe/sampler.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "observe/logtail.h"
#include "observe/probe_netlink.h"
#include "observe/procfile.h"
#include "observe/sampler_kit.h"

/* When in the tick a probe runs. */
enum probe_stage {
	STAGE_BEGIN,   /* sampler_begin: nginx's pid and namespace, which the stub_status fetch needs */
	STAGE_COLLECT, /* sampler_collect */
	STAGE_CALLER,  /* run off the loop by the caller, through sampler_stub_* and sampler_client_* (they can block) */
};

/* One probe. Its id is its bit in frames (stored: never renumbered); its place in the table is its turn. */
struct probe_row {
	enum probe_id id;
	const char *name;                                    /* in status, logs and NGXAT_PROBE= */
	enum probe_stage stage;
	bool (*enabled)(const struct config *c);             /* by configuration; NULL: always on */
	void (*sample)(struct sampler *s, struct frame *fr); /* NULL for STAGE_CALLER */
};

static bool interrupts_on(const struct config *c)
{
	return c->probe_interrupts;
}

static bool nginx_on(const struct config *c)
{
	return c->pid_file[0] != '\0';
}

static bool stub_on(const struct config *c)
{
	return c->stub_status_url[0] != '\0';
}

static bool workers_on(const struct config *c)
{
	return c->probe_workers && c->pid_file[0];
}

static bool access_on(const struct config *c)
{
	return c->access_log[0] != '\0';
}

static bool errorlog_on(const struct config *c)
{
	return c->error_log[0] != '\0';
}

static bool netlink_on(const struct config *c)
{
	return c->probe_netlink;
}

static bool client_on(const struct config *c)
{
	return c->client_enabled && (c->client_url[0] || c->stub_status_url[0]);
}

/*
 * Every probe, in the order a tick runs them within its stage. Adding a probe: an id at the end of probe.h's enum, a
 * row here, and its sample function in a probe_*.c file of its own (declared in sampler_kit.h, listed with the
 * agent's sources in Makefile.am).
 */
static const struct probe_row probes[] = {
	{PROBE_NETSTAT, "netstat", STAGE_COLLECT, NULL, probe_proc_netstat},
	{PROBE_SOFTNET, "softnet", STAGE_COLLECT, NULL, probe_proc_softnet},
	{PROBE_SOFTIRQS, "softirqs", STAGE_COLLECT, NULL, probe_proc_softirqs},
	{PROBE_STAT, "stat", STAGE_COLLECT, NULL, probe_proc_stat},
	{PROBE_INTERRUPTS, "interrupts", STAGE_COLLECT, interrupts_on, probe_proc_interrupts},
	{PROBE_NGINX, "nginx", STAGE_BEGIN, nginx_on, probe_nginx_master},
	{PROBE_STUB, "stub_status", STAGE_CALLER, stub_on, NULL},
	{PROBE_WORKERS, "workers", STAGE_COLLECT, workers_on, probe_nginx_workers},
	{PROBE_ACCESSLOG, "access_log", STAGE_COLLECT, access_on, probe_logs_access},
	{PROBE_ERRORLOG, "error_log", STAGE_COLLECT, errorlog_on, probe_logs_error},
	{PROBE_NETLINK, "netlink", STAGE_COLLECT, netlink_on, probe_sockets_sample},
	{PROBE_CLIENT, "client", STAGE_CALLER, client_on, NULL},
};

#define NPROBES (sizeof(probes) / sizeof(probes[0]))
_Static_assert(NPROBES == PROBE_COUNT, "a row per probe id");

const char *sampler_probe_name(enum probe_id id)
{
	for (size_t i = 0; i < NPROBES; i++)
		if (probes[i].id == id)
			return probes[i].name;
	return "?";
}

const struct probe_health *sampler_health(const struct sampler *s, enum probe_id id)
{
	return &s->health[id];
}

void sampler_nginx(const struct sampler *s, pid_t *master, unsigned *workers)
{
	*master = s->nginx_pid;
	*workers = (unsigned)s->nworkers;
}

size_t sampler_worker_pids(const struct sampler *s, pid_t *out, size_t max)
{
	size_t n = s->nworkers < max ? s->nworkers : max;

	for (size_t i = 0; i < n; i++)
		out[i] = s->workers[i].pid;
	return n;
}

static void set_enabled(struct sampler *s)
{
	for (size_t i = 0; i < NPROBES; i++)
		s->health[probes[i].id].enabled = !probes[i].enabled || probes[i].enabled(&s->cfg);
}

int sampler_new(const struct config *cfg, struct metric_registry *reg, struct sampler **out)
{
	struct sampler *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < NPROBES; i++) {
		for (size_t j = 0; j < i; j++)
			assert(probes[i].id != probes[j].id);
		s->probe_names[probes[i].id] = probes[i].name;
	}
	s->cfg = *cfg;
	s->reg = reg;
	counters_init(&s->ctr);
	hist_reset(&s->tick_hist);
	s->netns_fd = -1;
	s->nginx_pidfd = -1;
	for (size_t i = 0; i < PF_COUNT; i++)
		procfile_init(&s->pf[i]);
	for (size_t i = 0; i < KEEP_MAX; i++) {
		procfile_init(&s->pf_sched[i]);
		procfile_init(&s->pf_status[i]);
		procfile_init(&s->pf_cmdline[i]);
		procfile_init(&s->pf_irq[i]);
	}
	set_enabled(s);
	*out = s;
	return 0;
}

static void close_tailers(struct sampler *s)
{
	logtail_close(s->access);
	logtail_close(s->errlog);
	s->access = s->errlog = NULL;
}

void sampler_free(struct sampler *s)
{
	if (!s)
		return;
	close_tailers(s);
	probe_netlink_close(s->nl);
	free(s->lq_last);
	probe_stub_free(s->stub);
	probe_client_free(s->client);
	if (s->netns_fd >= 0)
		close(s->netns_fd);
	if (s->nginx_pidfd >= 0)
		close(s->nginx_pidfd);
	counters_free(&s->ctr);
	free(s->seen_tick);
	free(s->ids);
	sampler_close_files(s->pf, PF_COUNT);
	sampler_close_files(s->pf_sched, KEEP_MAX);
	sampler_close_files(s->pf_status, KEEP_MAX);
	sampler_close_files(s->pf_cmdline, KEEP_MAX);
	sampler_close_files(s->pf_irq, KEEP_MAX);
	procbuf_free(&s->pb);
	free(s);
}

void sampler_set_ns_netlink(struct sampler *s, sampler_ns_netlink_fn fn, void *ctx)
{
	s->ns_netlink = fn;
	s->ns_ctx = ctx;
}

void sampler_set_open_log(struct sampler *s, int (*fn)(void *ctx, const char *path), void *ctx)
{
	s->open_log = fn;
	s->open_log_ctx = ctx;
}

void sampler_set_ns_tcp(struct sampler *s, sampler_ns_tcp_fn fn, void *ctx)
{
	s->ns_tcp = fn;
	s->ns_tcp_ctx = ctx;
	/* The namespace the sampler may have entered itself is not used from now on. */
	if (fn && s->netns_fd >= 0) {
		close(s->netns_fd);
		s->netns_fd = -1;
		s->netns_gen++;
	}
}

void sampler_ns_maker(const struct sampler *s, struct ns_maker *m)
{
	bool on = s->ns_tcp && s->nginx_pid > 0 && strcmp(s->cfg.root, "/") == 0;

	m->fn = on ? s->ns_tcp : NULL;
	m->ctx = s->ns_tcp_ctx;
	m->pid = s->nginx_pid;
}

int sampler_ns_make(void *m, int family)
{
	const struct ns_maker *mk = m;

	return mk->fn(mk->ctx, mk->pid, family);
}

void sampler_reconfigure(struct sampler *s, const struct config *cfg)
{
	bool root_changed = strcmp(s->cfg.root, cfg->root) != 0;

	s->cfg = *cfg;
	set_enabled(s);
	if (strcmp(s->access_path, cfg->access_log) != 0) {
		logtail_close(s->access);
		s->access = NULL;
	}
	if (strcmp(s->errlog_path, cfg->error_log) != 0) {
		logtail_close(s->errlog);
		s->errlog = NULL;
	}
	if (root_changed || !cfg->probe_netlink) {
		probe_netlink_close(s->nl);
		s->nl = NULL;
		s->nlq_last = 0, s->queued_sum = 0, s->queued_n = 0;
	}
}

/* ---- stub_status, fetched by the caller (probe_stub.c) ---------------------------------------------------- */

bool sampler_stub_enabled(const struct sampler *s)
{
	return s->health[PROBE_STUB].enabled;
}

void *sampler_stub_prepare(struct sampler *s)
{
	return probe_stub_prepare(s);
}

void sampler_stub_fetch(void *handle, struct stub_result *res)
{
	probe_stub_fetch(handle, res);
}

void sampler_stub_apply(struct sampler *s, struct frame *fr, const struct stub_result *res)
{
	probe_stub_apply(s, fr, res);
}

void sampler_stub_skip(struct sampler *s, struct frame *fr, const char *why)
{
	probe_stub_skip(s, fr, why);
}

/* ---- the synthetic client, run by the caller (probe_client.c) ------------------------------------------- */

bool sampler_client_enabled(const struct sampler *s)
{
	return s->health[PROBE_CLIENT].enabled;
}

void *sampler_client_prepare(struct sampler *s)
{
	return probe_client_prepare(s);
}

int64_t sampler_client_delay(void *handle, double u)
{
	return probe_client_delay(handle, u);
}

void sampler_client_run(void *handle, struct client_result *res)
{
	probe_client_run(handle, res);
}

void sampler_client_apply(struct sampler *s, struct frame *fr, const struct client_result *res)
{
	probe_client_apply(s, fr, res);
}

void sampler_client_skip(struct sampler *s, struct frame *fr, const char *why)
{
	probe_client_skip(s, fr, why);
}

void sampler_client_default_urls(struct sampler *s, const char *urls)
{
	snprintf(s->client_default_urls, sizeof(s->client_default_urls), "%s", urls ? urls : "");
}

/* ---- the tick -------------------------------------------------------------------------------------------- */

static void run_stage(struct sampler *s, struct frame *fr, enum probe_stage stage)
{
	for (size_t i = 0; i < NPROBES; i++)
		if (probes[i].stage == stage && s->health[probes[i].id].enabled)
			probes[i].sample(s, fr);
}

void sampler_listen_sample(struct sampler *s)
{
	if (s && netlink_on(&s->cfg))
		probe_sockets_between(s);
}

void sampler_begin(struct sampler *s, struct frame *fr)
{
	s->tick++;
	run_stage(s, fr, STAGE_BEGIN);
}

void sampler_collect(struct sampler *s, struct frame *fr)
{
	run_stage(s, fr, STAGE_COLLECT);
}
