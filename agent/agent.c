/*
 * agent: the one object of the running agent and what every mode does with it.
 *
 * Owns struct agent (agent.h): the configuration, the followed nginx (its master, -c and -p), the knob
 * environment, the loaded policies and the store lock, and the frame sequence (agent_collect_frame) that the tick,
 * --once and the doctor all use. It reads no clock: loop.c installs the one clock (a->clock_ms) that everyone
 * asks through agent_now_ms. It must not call up into loop.c, the API or the doctor.
 */
#include "build-config.h"

#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "act/engine.h"
#include "act/loadgen.h"
#include "act/nginx_ctl.h"
#include "act/nginx_urls.h"
#include "act/policy_load.h"
#include "act/tuning.h"
#include "core/policy.h"
#include "log.h"
#include "priv/knob_remote.h"
#include "priv/nssock.h"
#include "priv/wdump.h"
#include "priv/wclient.h"

int64_t agent_now_ms(const struct agent *a)
{
	return a->clock_ms ? a->clock_ms() : 0;
}

/* How often the client's URLs are read again from nginx's configuration: a dump asked for more often is refreshed
 * in the background every 30 s (nginx_ctl.h), an nginx -T the agent needs for nothing else. */
#define CLIENT_URLS_EVERY_MS 300000
#define CLIENT_URLS_RETRY_MS 10000 /* and again this soon after a dump that had not changed */

/* The synthetic client's URLs when [client] url is not set: what nginx serves and proxies (nginx_urls.h), from the
 * dump the nginx drivers share. */
static void client_urls(struct agent *a)
{
	const struct nginx_conf *c;
	char urls[CONFIG_PATH_MAX], err[160];
	int64_t now = agent_now_ms(a);

	if (a->cfg.client_url[0] || !a->env.nginx)
		return;
	if (a->client_conf && now - a->client_conf_ms >= 0 && now - a->client_conf_ms < CLIENT_URLS_EVERY_MS)
		return;
	a->client_conf_ms = now;
	a->env.now_ms = now;
	c = nginx_ctl_conf_peek(a->env.nginx, &a->env);
	if (c && c->buf == a->client_conf) {
		/* the same dump: a fresh one may be on its way (an old dump is refreshed when asked for); once */
		if (!a->client_conf_retry)
			a->client_conf_ms = now - CLIENT_URLS_EVERY_MS + CLIENT_URLS_RETRY_MS;
		a->client_conf_retry = !a->client_conf_retry;
		return;
	}
	if (!c)
		return;
	a->client_conf = c->buf;
	a->client_conf_retry = false;
	if (nginx_urls_client(c, a->cfg.stub_status_url, urls, sizeof(urls), err, sizeof(err)) < 0)
		urls[0] = '\0';
	sampler_client_default_urls(a->sampler, urls);
	if (urls[0])
		log_info("the synthetic client asks %s (from nginx's configuration; [client] url sets others)", urls);
}

/* The synthetic client: the result of the run started last tick goes into this frame, then the next run starts.
 * In line (no START) a run's result goes into the frame that started it. */
static void collect_client(struct agent *a, agent_pool_start_fn start, void *ctx)
{
	void *h;

	a->client_cpu_ms = 0;
	if (a->client_done) {
		a->client_done = false;
		sampler_client_apply(a->sampler, &a->fr, &a->client_res);
		a->client_cpu_ms = a->client_res.cpu_ms;
	} else if (start && a->client_busy) {
		sampler_client_skip(a->sampler, &a->fr, "previous run of the client still going");
	}
	if (a->client_busy || !(h = sampler_client_prepare(a->sampler)))
		return;
	if (!start || start(ctx, AGENT_POOL_CLIENT, h) < 0) {
		sampler_client_run(h, &a->client_res);
		sampler_client_apply(a->sampler, &a->fr, &a->client_res);
	}
}

void agent_collect_frame(struct agent *a, int64_t now_ms, double dt_s, agent_pool_start_fn start, void *ctx)
{
	frame_clear(&a->fr);
	a->fr.ts_ms = now_ms;
	a->fr.dt_s = dt_s;
	a->fr.probes_ok = a->fr.probes_bad = 0;
	sampler_begin(a->sampler, &a->fr);
	if (sampler_stub_enabled(a->sampler)) {
		void *h;

		if (start && a->stub_busy) {
			sampler_stub_skip(a->sampler, &a->fr, "previous stub_status fetch still running");
		} else if ((h = sampler_stub_prepare(a->sampler))) {
			/* On the pool when the caller can wait for it (the tick), so that the fetch overlaps the other
			 * probes; in line otherwise (--once, the doctor's one-shot). */
			if (!start || start(ctx, AGENT_POOL_STUB, h) < 0) {
				sampler_stub_fetch(h, &a->stub_res);
				sampler_stub_apply(a->sampler, &a->fr, &a->stub_res);
			}
		}
	}
	if (sampler_client_enabled(a->sampler)) {
		client_urls(a);
		collect_client(a, start, ctx);
	}
	sampler_collect(a->sampler, &a->fr);
	loadgen_collect(a->loadgen, a->reg, &a->fr);
}

int agent_load_policies(struct agent *a, struct policy_set **out, char *err, size_t errlen)
{
	return policy_load_new(a->cfg.policy_dir, a->cfg.policy_override_dir, 0, out, err, errlen);
}

void agent_knob_env(struct agent *a)
{
	a->env.root = a->cfg.root;
	a->env.loop = a->loop;
	a->env.dry_run = a->cfg.dry_run;
	a->env.nginx_bin = a->cfg.nginx_bin;
	/* The client's URLs come from nginx's configuration, which an operator who reloads the agent may have changed:
	 * read them again from the next dump (the one held now is taken as stale, loop.c). */
	a->client_conf_ms = 0;
	a->client_conf_retry = false;
	/* [nginx] conf may have changed: look at the master again. */
	snprintf(a->nginx_conf, sizeof(a->nginx_conf), "%s", a->cfg.nginx_conf);
	a->nginx_prefix[0] = '\0';
	a->nginx_seen_pid = 0;
	agent_nginx_follow(a, a->env.nginx_pid);
	a->env.include_dir = a->cfg.include_dir;
	a->env.nginx_timeout_ms = a->cfg.nginx_timeout_ms;
	a->env.nginx_dump_max = (size_t)a->cfg.nginx_dump_max;
	a->env.nginx_memory_max = (size_t)a->cfg.nginx_memory_max;
}

void agent_nginx_follow(struct agent *a, pid_t pid)
{
	char conf[CONFIG_PATH_MAX], prefix[CONFIG_PATH_MAX];

	a->env.nginx_pid = pid;
	a->env.nginx_conf = a->nginx_conf;
	a->env.nginx_prefix = a->nginx_prefix;
	if (pid <= 0 || pid == a->nginx_seen_pid)
		return;
	a->nginx_seen_pid = pid;
	snprintf(a->nginx_conf, sizeof(a->nginx_conf), "%s", a->cfg.nginx_conf);
	a->nginx_prefix[0] = '\0';
	if (nginx_ctl_master_args(a->cfg.root, pid, conf, sizeof(conf), prefix, sizeof(prefix)) < 0)
		return;
	/* An nginx started with -c FILE (or -p DIR) is tested and dumped with the same, or nginx -t and -T would
	 * read another configuration than the one it runs. */
	snprintf(a->nginx_prefix, sizeof(a->nginx_prefix), "%s", prefix);
	if (!a->cfg.nginx_conf[0])
		snprintf(a->nginx_conf, sizeof(a->nginx_conf), "%s", conf);
	if (conf[0] || prefix[0])
		log_info("nginx master %d runs with%s%s%s%s: nginx -t and -T use %s%s%s%s", (int)pid, conf[0] ? " -c " : "",
			 conf, prefix[0] ? " -p " : "", prefix, a->nginx_conf[0] ? "-c " : "its default configuration",
			 a->nginx_conf, prefix[0] ? " -p " : "", prefix);
}

/* One agent, or one offline revert, per store: both write knobs. */
int agent_lock(struct agent *a, char *err, size_t errlen)
{
	char path[CONFIG_PATH_MAX + 8];

	snprintf(path, sizeof(path), "%s.lock", a->cfg.store_path);
	a->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	/* Root's (an offline revert made it; the writer gives it to the engine's user at its start): flock needs only
	 * a descriptor. */
	if (a->lock_fd < 0 && errno == EACCES)
		a->lock_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (a->lock_fd < 0) {
		snprintf(err, errlen, "lock %.300s: %s", path, strerror(errno));
		return -errno;
	}
	if (flock(a->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		snprintf(err, errlen, "another ngx-autotune holds %.300s (the agent is running: use ngxctl revert without "
			 "--offline; or an offline revert is under way)", path);
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	return 0;
}

static int wrap_remote(struct knob *k, void *ctx)
{
	struct agent *a = ctx;

	return knob_remote_wrap(k, a->wclient, a->rclient);
}

static int ns_netlink(void *ctx, pid_t pid, int *diag, int *route, char *why, size_t whylen)
{
	return nssock_netlink(ctx, pid, diag, route, why, whylen);
}

static int ns_tcp(void *ctx, pid_t pid, int family)
{
	struct agent *a = ctx;
	char why[WMSG_TEXT_MAX];

	return nssock_tcp(a->rclient, pid, family, why, sizeof(why));
}

/* The writer logs why it refused (its journal): the probe says the errno. */
static int open_log(void *ctx, const char *path)
{
	struct agent *a = ctx;
	char why[WMSG_TEXT_MAX];

	return nssock_open_log(a->rclient, path, why, sizeof(why));
}

static int ns_nics(void *ctx, const char *glob, char (*names)[16], size_t max, size_t *n)
{
	struct agent *a = ctx;

	return nssock_nics(a->rclient, glob, names, max, n);
}

static int ns_sysctl(void *ctx, const char *name, char *out, size_t outlen)
{
	struct agent *a = ctx;

	return nssock_sysctl(a->rclient, name, out, outlen);
}

int agent_writer_client(struct agent *a, char *err, size_t errlen)
{
	/* An nginx change is nginx -t, a reload and the wait for its new workers, each bounded by the timeout. */
	int64_t timeout = 3 * a->cfg.nginx_timeout_ms + 1000;
	int r;

	if (a->writer_pid <= 0 && !a->writer_remote)
		return 0;
	/* Its start first: a writer that cannot start (its policies, its directory) fails the agent's, before READY. */
	r = a->writer_hello ? 0 : wclient_await_hello(a->writer_fd, (int)timeout, err, errlen);
	if (r < 0)
		return r;
	r = wclient_new(a->loop, a->writer_fd, (int)timeout, &a->wclient);
	if (r < 0) {
		snprintf(err, errlen, "the writer's client: %s", strerror(-r));
		return r;
	}
	a->writer_fd = -1; /* the client's now */
	/* Reads wait on it: a driver's read is quick, but the writer's loop may be building its knobs (nginx -T,
	 * bounded by the timeout, for the build and for the read). */
	r = rclient_new(a->writer_rfd, 2 * (int)a->cfg.nginx_timeout_ms + 1000, &a->rclient);
	if (r < 0) {
		snprintf(err, errlen, "the writer's read client: %s", strerror(-r));
		return r;
	}
	a->writer_rfd = -1;
	a->env.wrap = wrap_remote;
	a->env.wrap_ctx = a;
	/* The sampler's netlink sockets of nginx's namespace are the writer's too. */
	if (nssock_new(a->wclient, &a->nssock) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	sampler_set_ns_netlink(a->sampler, ns_netlink, a->nssock);
	sampler_set_ns_tcp(a->sampler, ns_tcp, a);
	/* An engine that is not root reads nginx's logs (www-data:adm, 0640 on Debian) through descriptors the writer
	 * opens, instead of a group that reads every log of the host. */
	if (geteuid() != 0) {
		a->env.open_log = open_log;
		a->env.open_log_ctx = a;
		sampler_set_open_log(a->sampler, open_log, a);
	}
	/* nginx -T too, for the doctor and the synthetic client's URLs (nginx_ctl_dump, the dump's refresh). */
	if (wdump_new(a->wclient, (size_t)a->cfg.nginx_dump_max, &a->wdump) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	a->env.dump = wdump_run;
	a->env.dump_ctx = a->wdump;
	/* and the interfaces of nginx's namespace RPS's knobs are named after */
	a->env.ns_nics = ns_nics;
	a->env.ns_nics_ctx = a;
	/* and the doctor's sysctls of nginx's namespace */
	a->env.sysctl = ns_sysctl;
	a->env.sysctl_ctx = a;
	return 0;
}

/* Policies, knobs, and recovery of whatever a previous run left in flight (invariant 3). */
int agent_start_engine(struct agent *a, char *err, size_t errlen)
{
	struct policy_set *set;
	struct frame scratch;
	unsigned workers;
	pid_t pid;
	int r;

	if (!a->env.nginx) {
		if (nginx_ctl_new(&a->env.nginx) < 0) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		/* The synthetic client reads its URLs from the dump too (client_urls): it is kept without a knob. */
		nginx_ctl_hold(a->env.nginx);
	}
	r = agent_load_policies(a, &set, err, errlen);
	if (r < 0)
		return r;
	agent_knob_env(a);
	a->env.now_ms = agent_now_ms(a);
	/* The drivers act in nginx's namespace: find nginx first. */
	frame_init(&scratch);
	sampler_begin(a->sampler, &scratch);
	frame_free(&scratch);
	sampler_prepare_netlink(a->sampler); /* the writer's sockets of nginx's namespace, there by the first tick */
	sampler_nginx(a->sampler, &pid, &workers);
	agent_nginx_follow(a, pid);
	r = engine_new(a->store, &a->env, set, &a->engine, err, errlen);
	if (r < 0)
		return r;
	r = engine_recover(a->engine, agent_now_ms(a));
	if (r < 0) {
		snprintf(err, errlen, "cannot read the change journal: %s", strerror(-r));
		return r;
	}
	if (r > 0)
		log_notice("recovery: %d knob write(s) to put the host back as the journal says", r);
	return tuning_new(&a->cfg, a->engine, a->store, agent_now_ms(a), &a->tuning, err, errlen);
}

