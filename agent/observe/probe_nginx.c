/*
 * probe_nginx: the nginx master (its pid from the pid file, whether it runs, its network namespace, which the
 * other probes follow) and its workers' scheduling (schedstat, context switches). Rows of the sampler's probe
 * table; see sampler_kit.h for the rules.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/parse.h"
#include "log.h"
#include "observe/sampler_kit.h"
#include "strutil.h"

/*
 * stub_status is fetched from inside nginx's network namespace: where nginx runs in a namespace or container,
 * 127.0.0.1 in the agent's namespace is another host. Only with the real root (under --root the pid is fake).
 */
static void follow_netns(struct sampler *s)
{
	char path[64];
	struct stat mine, theirs;
	int fd;

	if (s->netns_fd >= 0)
		close(s->netns_fd);
	s->netns_fd = -1;
	s->netns_gen++;
	/* With the writer's sockets (sampler_set_ns_tcp), the namespace is its to enter. */
	if (!s->nginx_pid || strcmp(s->cfg.root, "/") != 0 || s->ns_tcp)
		return;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)s->nginx_pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		log_warn("cannot open %s (%s): stub_status is fetched from the agent's network namespace", path,
			 strerror(errno));
		return;
	}
	if (fstat(fd, &theirs) < 0 || stat("/proc/self/ns/net", &mine) < 0 ||
	    (mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev)) {
		close(fd);
		return;
	}
	s->netns_fd = fd;
}

static void set_nginx_pid(struct sampler *s, pid_t pid)
{
	if (pid == s->nginx_pid)
		return;
	if (s->nginx_pid && pid)
		log_notice("nginx master pid changed from %d to %d", (int)s->nginx_pid, (int)pid);
	s->nginx_pid = pid;
	s->nworkers = 0;
	if (s->nginx_pidfd >= 0)
		close(s->nginx_pidfd);
	/* Under --root the pid is fake: its liveness is the fake /proc's. */
	s->nginx_pidfd = pid && strcmp(s->cfg.root, "/") == 0 ? pidfd_open(pid, 0) : -1;
	/* Another master may live in another namespace, and its stub_status counters start again: every counter
	 * takes a new base (one tick of missing values) rather than a delta across two sources. */
	counters_free(&s->ctr);
	counters_init(&s->ctr);
	/* The old master's files: its namespace's (which a kept descriptor would hold alive) and its workers'. */
	for (enum pf_slot i = PF_NETSTAT; i <= PF_SOFTNET; i++)
		procfile_close(&s->pf[i]);
	procfile_close(&s->pf[PF_CHILDREN]);
	sampler_close_files(s->pf_sched, KEEP_MAX);
	sampler_close_files(s->pf_status, KEEP_MAX);
	follow_netns(s);
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The pid in the pid file: read again only when a stat says the file changed (nginx writes it once at start). */
static int read_pid_file(struct sampler *s, pid_t *out)
{
	struct stat st;
	int pid;
	int r;

	/* Like the read below, not under --root: the pid file is nginx's, wherever the tree is. */
	if (stat(s->cfg.pid_file, &st) < 0) {
		s->pidfile_pid = 0;
		return -errno;
	}
	if (s->pidfile_pid && same_file_state(&st, &s->pidfile_st)) {
		*out = s->pidfile_pid;
		return 0;
	}
	s->pidfile_pid = 0;
	r = procfile_read(&s->pf[PF_PIDFILE], s->cfg.pid_file, false, &s->pb, MAX_READ);
	if (r < 0)
		return r;
	if (str_to_pid(s->pb.data, s->pb.len, &pid) < 0)
		return -EBADMSG;
	/* Half-written (nginx truncates, then writes) reads as empty, which is not cached: it fails above. */
	s->pidfile_st = st;
	s->pidfile_pid = (pid_t)pid;
	*out = (pid_t)pid;
	return 0;
}

/* Whether PID (the one the pid file names) is running: its pidfd when it is the master we follow (no path
 * lookup, and not fooled by a reused pid), else a stat of its /proc directory. */
static int nginx_alive(struct sampler *s, pid_t pid)
{
	char full[CONFIG_PATH_MAX + 64];
	struct stat st;

	/* Signal 0 checks without sending; EPERM (an agent without the right to signal nginx) is alive too. */
	if (pid == s->nginx_pid && s->nginx_pidfd >= 0)
		return pidfd_send_signal(s->nginx_pidfd, 0, NULL, 0) < 0 && errno != EPERM ? -errno : 0;
	sampler_rooted(s, full, sizeof(full), "/proc/%d/stat", (int)pid);
	return stat(full, &st) < 0 ? -errno : 0;
}

void probe_nginx_master(struct sampler *s, struct frame *fr)
{
	pid_t pid = 0;
	int r;

	r = read_pid_file(s, &pid);
	if (r == -EBADMSG) {
		set_nginx_pid(s, 0);
		sampler_probe_fail(s, fr, PROBE_NGINX, r, "%s: not a pid", s->cfg.pid_file);
		return;
	}
	if (r < 0) {
		set_nginx_pid(s, 0);
		sampler_probe_fail(s, fr, PROBE_NGINX, r, "%s: %s (is nginx running?)", s->cfg.pid_file, strerror(-r));
		return;
	}
	r = nginx_alive(s, pid);
	if (r < 0) {
		set_nginx_pid(s, 0);
		sampler_probe_fail(s, fr, PROBE_NGINX, r, "pid %d from %s is not running (stale pid file)", (int)pid,
			   s->cfg.pid_file);
		return;
	}
	set_nginx_pid(s, pid);
	sampler_probe_ok(s, fr, PROBE_NGINX);
}

/* Workers are the master's children: /proc/PID/task/PID/children (CONFIG_PROC_CHILDREN, on in distro kernels). */
static int list_workers(struct sampler *s, pid_t *out, size_t max, size_t *n)
{
	char path[96];
	const char *p;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)s->nginx_pid, (int)s->nginx_pid);
	r = sampler_read(s, &s->pf[PF_CHILDREN], path);
	if (r < 0)
		return r;
	*n = 0;
	for (p = s->pb.data; *p && *n < max;) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v > 0)
			out[(*n)++] = (pid_t)v;
		p = end;
	}
	return 0;
}

static const struct worker_prev *find_prev(const struct worker_prev *prev, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (prev[i].pid == pid)
			return &prev[i];
	return NULL;
}

void probe_nginx_workers(struct sampler *s, struct frame *fr)
{
	pid_t pids[MAX_WORKERS];
	struct worker_prev now[MAX_WORKERS];
	size_t n = 0, m = 0;
	double run = 0, run_max = 0, run_serving = 0, wait = 0, wait_max = 0, vcsw = 0, ivcsw = 0;
	size_t counted = 0, old = 0;
	char path[96];
	int r;

	if (!s->nginx_pid) {
		sampler_probe_fail(s, fr, PROBE_WORKERS, -ESRCH, "no nginx master");
		return;
	}
	r = list_workers(s, pids, MAX_WORKERS, &n);
	if (r < 0) {
		sampler_probe_fail(s, fr, PROBE_WORKERS, r, "children of %d: %s", (int)s->nginx_pid, strerror(-r));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct worker_prev w = {.pid = pids[i]};
		const struct worker_prev *p;
		uint64_t slices;
		bool serving = true;

		/* The busiest and the mean worker count workers that serve: not the cache manager or loader, nor an old
		 * worker shutting down after a reload (each near 0 ms would make two evenly busy workers look 1.5x
		 * apart). A cmdline that cannot be read counts as serving. */
		struct procfile *sched = i < KEEP_MAX ? &s->pf_sched[i] : &s->pf[PF_SCRATCH];
		struct procfile *status = i < KEEP_MAX ? &s->pf_status[i] : &s->pf[PF_SCRATCH];
		struct procfile *cmdline = i < KEEP_MAX ? &s->pf_cmdline[i] : &s->pf[PF_SCRATCH];

		/* Kept open as the others (read again each tick: it changes when the worker starts shutting down). */
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)w.pid);
		if (sampler_read(s, cmdline, path) == 0 && s->pb.len > 0) {
			serving = strcmp(s->pb.data, "nginx: worker process") == 0;
			old += strcmp(s->pb.data, "nginx: worker process is shutting down") == 0;
		}

		/* A read or parse failing is a worker exiting between the listing and the read: it is left out. */
		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)w.pid);
		if (sampler_read(s, sched, path) < 0 ||
		    parse_schedstat(s->pb.data, s->pb.len, &w.run_ns, &w.wait_ns, &slices) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/status", (int)w.pid);
		if (sampler_read(s, status, path) < 0 ||
		    parse_ctxt_switches(s->pb.data, s->pb.len, &w.vcsw, &w.ivcsw) < 0)
			continue;
		now[m++] = w;
		/* Per-worker deltas: a worker that is new this tick contributes nothing, so a reload is no spike. */
		p = find_prev(s->workers, s->nworkers, w.pid);
		if (!p || w.run_ns < p->run_ns || w.wait_ns < p->wait_ns || w.vcsw < p->vcsw || w.ivcsw < p->ivcsw)
			continue;
		run += (double)(w.run_ns - p->run_ns) / 1e6;
		if (serving) {
			double ms = (double)(w.run_ns - p->run_ns) / 1e6;

			run_max = ms > run_max ? ms : run_max;
			run_serving += ms;
			counted++;
		}
		wait += (double)(w.wait_ns - p->wait_ns) / 1e6;
		if ((double)(w.wait_ns - p->wait_ns) / 1e6 > wait_max)
			wait_max = (double)(w.wait_ns - p->wait_ns) / 1e6;
		vcsw += (double)(w.vcsw - p->vcsw);
		ivcsw += (double)(w.ivcsw - p->ivcsw);
	}
	/* Fewer workers than last tick (a reload with a smaller worker_processes): the rest are dead. */
	for (size_t i = n; i < KEEP_MAX; i++) {
		procfile_close(&s->pf_sched[i]);
		procfile_close(&s->pf_status[i]);
		procfile_close(&s->pf_cmdline[i]);
	}
	memcpy(s->workers, now, m * sizeof(now[0]));
	s->nworkers = m;
	sampler_put_gauge(s, fr, "nginx.workers", (double)m);
	/* A reload's previous generation still finishing its connections: a trial's block measures one generation. */
	sampler_put_gauge(s, fr, "nginx.workers_old", (double)old);
	sampler_put_gauge(s, fr, "nginx.worker_run_ms", run);
	/* The busiest worker beside the mean of those measured this tick: how evenly the workers share the load. */
	sampler_put_gauge(s, fr, "nginx.worker_run_max_ms", run_max);
	sampler_put_gauge(s, fr, "nginx.worker_run_mean_ms", counted ? run_serving / (double)counted : 0.0);
	sampler_put_gauge(s, fr, "nginx.worker_wait_ms", wait);
	sampler_put_gauge(s, fr, "nginx.worker_wait_max_ms", wait_max);
	sampler_put_gauge(s, fr, "nginx.worker_vcsw", vcsw);
	sampler_put_gauge(s, fr, "nginx.worker_ivcsw", ivcsw);
	sampler_probe_ok(s, fr, PROBE_WORKERS);
}
