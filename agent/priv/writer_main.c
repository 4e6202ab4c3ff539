/*
 * writer_main: the writer (writer.h) as a process of its own. See writer_main.h.
 */
#include "build-config.h"

#include "priv/writer_main.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pwd.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "act/knob.h"
#include "act/nginx_ctl.h"
#include "act/policy_load.h"
#include "core/policy.h"
#include "log.h"
#include "netns.h"
#include "priv/wmsg.h"
#include "priv/wfiles.h"
#include "priv/writer.h"
#include "store/store.h"
#include "strutil.h"
#include "trust.h"

#define WRITER_KNOBS_MAX 256 /* as many as the engine holds */
#define WRITER_RETRY_MS 5000 /* the knobs built again for a name not found at most this often */

struct wmain {
	struct config cfg;              /* the agent's configuration: read again from CONFIG_PATH after a SIGHUP */
	const char *config_path;
	bool config_must_exist;
	const char *root_override;      /* --root, kept across reloads */
	uv_loop_t loop;
	struct policy_set *set;
	struct knob_env env;
	struct knob *knobs;
	size_t n;
	struct writer w;
	pid_t seen;                     /* the master whose -c and -p the environment has */
	char conf[CONFIG_PATH_MAX];     /* nginx's -c: [nginx] conf, else the master's */
	char prefix[CONFIG_PATH_MAX];   /* its -p */
	int dirfd;                      /* the writer's directory (writer_dir_open), held for its journals */
	char dir[CONFIG_PATH_MAX + 32]; /* its path, for messages */
	char journal[64];               /* the journal of originals through DIRFD: /proc/self/fd/N/originals */
	char shown[CONFIG_PATH_MAX + 48]; /* its path in DIR, for messages */
	char fallback[CONFIG_PATH_MAX + 32]; /* the agent's originals file */
	int64_t retry_ms;               /* when a knob not found last built the knobs again */
	bool built;                     /* the last build of the knobs succeeded (else none are served) */
	uid_t engine_uid;               /* [agent] user's uid, the owner of the TCP sockets made for it; -1: none */
	int64_t log_refused_ms;         /* when an OPEN_LOG refusal was last logged */
	int64_t log_unsaid;             /* refusals since, not logged */
	int self_ns;                    /* the writer's own network namespace, held: where a socket's visit ends */
	pid_t ns_pid;                   /* the master whose namespace NS_FD holds (0: none), while NS_PIDFD says it */
	int ns_fd, ns_pidfd;            /* lives (-1: NS_FD is the writer's own namespace; no pidfd: not kept) */
};

static volatile sig_atomic_t reload_asked; /* SIGHUP: the agent reloaded; the policies are read again */

static void on_hup(int sig)
{
	(void)sig;
	reload_asked = 1;
}

int writer_dir_path(const struct config *cfg, char *out, size_t outlen)
{
	char dir[CONFIG_PATH_MAX];

	if (cfg->writer_dir[0])
		return (size_t)snprintf(out, outlen, "%s", cfg->writer_dir) < outlen ? 0 : -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%s", cfg->store_path);
	return (size_t)snprintf(out, outlen, "%s/%s", dirname(dir), WRITER_DIR_NAME) < outlen ? 0 : -ENAMETOOLONG;
}

int writer_dir_open(const struct config *cfg, char *shown, size_t shownlen, char *err, size_t errlen)
{
	char path[CONFIG_PATH_MAX + 32];
	struct stat st;
	int fd, r;

	if (writer_dir_path(cfg, path, sizeof(path)) < 0) {
		snprintf(err, errlen, "the store's path %s is too long for the writer's directory beside it",
			 cfg->store_path);
		return -ENAMETOOLONG;
	}
	/* The store's directory as the store makes it, then this one, closed (no umask can open it). */
	r = store_make_parents(path);
	if (r == 0 && mkdir(path, 0700) < 0 && errno != EEXIST)
		r = -errno;
	if (r < 0) {
		snprintf(err, errlen, "cannot make the writer's directory %s: %s", path, strerror(-r));
		return r;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open the writer's directory %s: %s%s", path, strerror(-r),
			 r == -ELOOP || r == -ENOTDIR ? " (it must be a directory, not a link)" : "");
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot stat the writer's directory %s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(err, errlen, "the writer's directory %s must be uid %d's and closed to group and others "
			 "(it is uid %d's, mode %04o): chown %d %s; chmod 700 %s", path, (int)geteuid(), (int)st.st_uid,
			 (unsigned)(st.st_mode & 07777), (int)geteuid(), path, path);
		close(fd);
		return -EPERM;
	}
	snprintf(shown, shownlen, "%s", path);
	return fd;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* nginx's master now, from [nginx] pid_file (under no root: the file is nginx's): 0 when none runs. */
static pid_t master(const struct config *cfg)
{
	char buf[32], path[CONFIG_PATH_MAX + 32];
	int pid;
	ssize_t n;
	int fd = open(cfg->pid_file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || str_to_pid(buf, (size_t)n, &pid) < 0)
		return 0;
	snprintf(path, sizeof(path), "%s/proc/%d/stat", strcmp(cfg->root, "/") == 0 ? "" : cfg->root, (int)pid);
	return stat(path, &st) == 0 ? (pid_t)pid : 0;
}

/* The environment follows nginx's master PID: its -c and -p, as the engine's does (agent_nginx_follow). */
static void follow(struct wmain *m, pid_t pid)
{
	m->env.nginx_pid = pid;
	if (pid <= 0 || pid == m->seen)
		return;
	m->seen = pid;
	snprintf(m->conf, sizeof(m->conf), "%s", m->cfg.nginx_conf);
	m->prefix[0] = '\0';
	{
		char conf[CONFIG_PATH_MAX], prefix[CONFIG_PATH_MAX];

		if (nginx_ctl_master_args(m->cfg.root, pid, conf, sizeof(conf), prefix, sizeof(prefix)) == 0) {
			snprintf(m->prefix, sizeof(m->prefix), "%s", prefix);
			if (!m->cfg.nginx_conf[0])
				snprintf(m->conf, sizeof(m->conf), "%s", conf);
		}
	}
	nginx_ctl_forget(m->env.nginx);
}

/* The environment from the configuration, nginx's master looked at again. */
static void set_env(struct wmain *m)
{
	m->env.root = m->cfg.root;
	m->env.nginx_bin = m->cfg.nginx_bin;
	m->env.include_dir = m->cfg.include_dir;
	m->env.nginx_timeout_ms = m->cfg.nginx_timeout_ms;
	m->env.nginx_dump_max = (size_t)m->cfg.nginx_dump_max;
	m->env.nginx_memory_max = (size_t)m->cfg.nginx_memory_max;
	snprintf(m->conf, sizeof(m->conf), "%s", m->cfg.nginx_conf);
	m->seen = 0;
	follow(m, master(&m->cfg));
}

/* After the agent's SIGHUP: its configuration again, as the agent reads it (trusted the same way); the journals stay
 * where they were (a new store path takes effect at the next start, as the agent's does). */
static void reload_config(struct wmain *m)
{
	struct config cfg;
	char err[512];

	if (config_load(m->config_path, m->config_must_exist, &cfg, err, sizeof(err)) < 0 ||
	    config_check_trust(&cfg, m->config_path, err, sizeof(err)) < 0) {
		log_err("writer: configuration not reloaded, keeping the running one: %s", err);
		return;
	}
	if (m->root_override && m->root_override[0])
		snprintf(cfg.root, sizeof(cfg.root), "%s", m->root_override);
	snprintf(cfg.store_path, sizeof(cfg.store_path), "%s", m->cfg.store_path);
	m->cfg = cfg;
	nginx_ctl_forget(m->env.nginx);
	set_env(m);
}

static void release_knobs(struct wmain *m)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->knobs[i].ops && m->knobs[i].ops->release)
			m->knobs[i].ops->release(&m->knobs[i]);
	m->n = 0;
}

/* The knobs of the policies in force, probed as the engine probes them (a driver finds its parameter so). */
static int build_knobs(struct wmain *m, char *err, size_t errlen)
{
	struct knob tmp[64];
	int r;

	release_knobs(m);
	writer_free(&m->w);
	/* No knobs until all are built and their journals loaded: a failure here leaves none to find, never released
	 * ones, and the next request builds them again (refused -EAGAIN while that fails: built). */
	m->w.n = 0;
	m->env.policies = m->set;
	m->env.now_ms = wall_ms();
	for (size_t i = 0; i < m->set->n; i++) {
		size_t got = 0;

		r = knob_instantiate(&m->set->knobs[i], &m->env, tmp, 64, &got);
		for (size_t j = 0; j < got; j++) {
			char why[KNOB_WHY_MAX];

			if (r < 0 || m->n == WRITER_KNOBS_MAX) {
				tmp[j].ops->release(&tmp[j]);
				continue;
			}
			m->knobs[m->n] = tmp[j];
			if (m->knobs[m->n].pol->enabled && m->knobs[m->n].ops->probe)
				m->knobs[m->n].ops->probe(&m->knobs[m->n], why, sizeof(why));
			m->n++;
		}
		if (r < 0 && r != -ENOSPC) {
			snprintf(err, errlen, "knob %s: %s", m->set->knobs[i].name, strerror(-r));
			m->built = false;
			return r;
		}
	}
	m->w.set = m->set;
	m->w.knobs = m->knobs;
	m->w.n = m->n;
	m->w.originals = m->journal;
	m->w.shown = m->shown;
	m->w.env = &m->env;
	m->w.fallback = m->fallback;
	r = writer_init(&m->w, err, errlen);
	if (r == -EBADMSG) {
		/* The good lines are loaded; a knob whose line is damaged is journaled again at its next write. */
		log_err("writer: %s", err);
		r = 0;
	}
	if (r < 0) {
		writer_free(&m->w);
		m->w.n = 0;
	}
	m->built = r == 0;
	return r;
}

static int load_policies(struct wmain *m, char *err, size_t errlen)
{
	struct policy_set *set;
	int r = policy_load_new(m->cfg.policy_dir, m->cfg.policy_override_dir, 0, &set, err, errlen);

	if (r < 0)
		return r;
	release_knobs(m);
	if (m->set) {
		policy_set_free(m->set);
		free(m->set);
	}
	m->set = set;
	return 0;
}

/* Before each request: the policies again after a SIGHUP, the knobs again for a new master (or when a knob was not
 * found: the interfaces of nginx's namespace may be others now), and the clock the drivers are handed. */
static int before(struct writer *w, bool retry, char *why, size_t whylen)
{
	struct wmain *m = w->before_ctx;
	pid_t pid = master(&m->cfg);
	bool rebuild = pid != m->env.nginx_pid || !m->built; /* a failed build serves nothing: again, every request */
	int r;

	m->env.now_ms = wall_ms();
	/* A knob not found: the knobs again, at most every few seconds (each build probes nginx's knobs with an
	 * nginx -T: names no policy has must not make the writer run it on every request). */
	if (retry && (m->retry_ms == 0 || m->env.now_ms - m->retry_ms >= WRITER_RETRY_MS || m->env.now_ms < m->retry_ms)) {
		m->retry_ms = m->env.now_ms;
		rebuild = true;
	}
	if (reload_asked || w->reload) {
		const char *cause = w->reload ? "the agent's RELOAD" : "SIGHUP";

		reload_asked = 0;
		w->reload = false;
		reload_config(m);
		pid = m->env.nginx_pid;
		r = load_policies(m, why, whylen);
		if (r < 0)
			log_err("writer: policies not reloaded, keeping the running ones: %s", why);
		else
			log_info("writer: policies reloaded (%s)", cause);
		rebuild = true;
	}
	follow(m, pid);
	if (!rebuild)
		return 0;
	r = build_knobs(m, why, whylen);
	if (r < 0)
		log_err("writer: %s", why);
	return r;
}

static void ns_forget(struct wmain *m)
{
	if (m->ns_fd >= 0)
		close(m->ns_fd);
	if (m->ns_pidfd >= 0)
		close(m->ns_pidfd);
	m->ns_fd = m->ns_pidfd = -1;
	m->ns_pid = 0;
}

/*
 * The network namespace of master PID held for the sockets of the next requests (three or four a second: the
 * synthetic client's fresh connections): m->ns_fd (-1: the writer's own), kept while PID is the master and alive
 * (its pidfd, so a pid used again by another process is not taken for it). 0; -ENOENT: not kept (no pidfd, pid 0,
 * or the writer's own namespace unknown): netns_socket opens what it needs; or -errno.
 */
static int ns_of(struct wmain *m, pid_t pid)
{
	struct pollfd p;
	struct stat a, b;
	int fd;

	if (pid <= 0 || m->self_ns < 0)
		return -ENOENT;
	if (m->ns_pid == pid) {
		p = (struct pollfd){.fd = m->ns_pidfd, .events = POLLIN};
		if (poll(&p, 1, 0) == 0)
			return 0;
	}
	ns_forget(m);
	m->ns_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (m->ns_pidfd < 0)
		return -ENOENT;
	fd = netns_open_pid(pid);
	p = (struct pollfd){.fd = m->ns_pidfd, .events = POLLIN};
	if (fd >= 0 && poll(&p, 1, 0) != 0) { /* it ended in between: the pid may be another's, and FD its namespace */
		close(fd);
		fd = -ESRCH;
	}
	if (fd < 0) {
		ns_forget(m);
		return fd;
	}
	if (fstat(fd, &a) == 0 && fstat(m->self_ns, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		close(fd);
		fd = -1;
	}
	m->ns_fd = fd;
	m->ns_pid = pid;
	return 0;
}

/* SOCKET: a netlink socket of the namespace of nginx's master as its pid file names it now (the writer's own when
 * there is none, or under a fake root, whose pids are not this host's: netns_socket); its pid said, for the engine
 * to see whether it is the master it asked for. */
static int open_socket(struct writer *w, unsigned kind, int *fd, char *why, size_t whylen)
{
	struct wmain *m = w->before_ctx;
	int domain = AF_NETLINK, type = SOCK_RAW, proto;
	const char *what;
	pid_t pid;
	int r;

	switch (kind) {
	case WMSG_SOCKET_DIAG: proto = NETLINK_SOCK_DIAG; break;
	case WMSG_SOCKET_ROUTE: proto = NETLINK_ROUTE; break;
	/* stub_status and the synthetic client: the engine connects it (a bind below 1024, or anything else the
	 * kernel checks a capability for, is checked against the engine's own). */
	case WMSG_SOCKET_TCP: domain = AF_INET, type = SOCK_STREAM, proto = 0; break;
	case WMSG_SOCKET_TCP6: domain = AF_INET6, type = SOCK_STREAM, proto = 0; break;
	default:
		snprintf(why, whylen, "socket %u: not served by this writer", kind);
		return -EOPNOTSUPP;
	}
	/* A reload asked for applies here too (its pid file may be another): the same step a write takes first, never
	 * while one is in flight (a SOCKET comes on the read channel then too: the build would free its knob). */
	if ((reload_asked || w->reload) && !w->busy)
		before(w, false, why, whylen);
	pid = nginx_ctl_real_root(&m->env) ? master(&m->cfg) : 0;
	/* A TCP socket is the engine's user's, not root's: a firewall's owner match or a uid routing rule must not
	 * take the engine's connections for root's. */
	r = ns_of(m, pid);
	if (r == -ENOENT)
		r = netns_socket(pid, domain, type, proto, type == SOCK_STREAM ? m->engine_uid : (uid_t)-1, &what);
	else if (r == 0)
		r = netns_socket_at(m->ns_fd, m->self_ns, domain, type, proto,
				    type == SOCK_STREAM ? m->engine_uid : (uid_t)-1, &what);
	else
		what = "open its /proc/PID/ns/net";
	if (r == -EIO && strcmp(what, "setns back") == 0) {
		/* Left in nginx's namespace, every later write would land there: nothing to do but end (the agent
		 * stops, and systemd starts both again). */
		log_err("writer: setns back from nginx %d's network namespace failed", (int)pid);
		abort();
	}
	if (r < 0) {
		snprintf(why, whylen, "a socket in the network namespace of nginx %d: %s: %s", (int)pid, what,
			 strerror(-r));
		return r;
	}
	*fd = r;
	snprintf(why, whylen, "pid %d", (int)pid);
	return 0;
}

/* The output of nginx -T on a sealed memfd: its descriptor, or -errno. */
static int dump_fd(const char *out, size_t len)
{
	int fd = memfd_create("nginx-T", MFD_CLOEXEC | MFD_ALLOW_SEALING), r;

	if (fd < 0)
		return -errno;
	r = nginx_ctl_write_fd(fd, out, len);
	if (r == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* OPEN_LOG: a file the writer's configuration names, for an engine that may not open it (wfiles.h), after a reload
 * asked for (the configuration may name others now). */
static int open_log(struct writer *w, const char *path, int *fd, char *why, size_t whylen)
{
	struct wmain *m = w->before_ctx;

	if ((reload_asked || w->reload) && !w->busy)
		before(w, false, why, whylen);
	return wfiles_open(&m->cfg, path, fd, why, whylen);
}

/* OPEN_LOG, with a refusal logged (the engine's probe shows only its errno): at most once a minute, whatever the
 * engine asks (a compromised one could vary its requests to fill root's journal), with how many were not said. */
static int open_log_logged(struct writer *w, const char *path, int *fd, char *why, size_t whylen)
{
	struct wmain *m = w->before_ctx;
	int r = open_log(w, path, fd, why, whylen);
	int64_t now = wall_ms();

	if (r < 0 && r != -ENOENT) {
		if (m->log_refused_ms == 0 || now - m->log_refused_ms >= 60000 || now < m->log_refused_ms) {
			log_warn("writer: the engine's log not opened: %s%s", why,
				 m->log_unsaid ? " (and other refusals in the last minute)" : "");
			m->log_refused_ms = now;
			m->log_unsaid = 0;
		} else {
			m->log_unsaid++;
		}
	}
	return r;
}

static void dumped(int rc, const char *msg, char *out, size_t len, void *ctx)
{
	struct wmain *m = ctx;
	char why[KNOB_WHY_MAX];
	int fd = -1;

	if (rc == 0 && (fd = dump_fd(out, len)) < 0) {
		rc = fd;
		snprintf(why, sizeof(why), "nginx -T's output: %s", strerror(-rc));
		msg = why;
	}
	free(out);
	writer_dumped(&m->w, rc, msg, fd);
}

/* NGINX dump: nginx -T of the master its pid file names now (its -c and -p), in its turn with the writer's other
 * nginx children, bounded by [nginx] dump_max and memory_max as the writer's own. */
static int dump(struct writer *w, char *why, size_t whylen)
{
	struct wmain *m = w->before_ctx;
	int r;

	/* The master now, a reload asked for: the step a write takes first (it follows a new master's knobs too; the
	 * write channel's request in hand is this one, so none is in flight). A failed build still dumps. */
	if (w->busy)
		follow(m, master(&m->cfg));
	else
		before(w, false, why, whylen);
	why[0] = '\0';
	r = nginx_ctl_dump(&m->env, dumped, m);
	if (r < 0) {
		snprintf(why, whylen, "nginx -T: %s", strerror(-r));
		return r;
	}
	return -EINPROGRESS;
}

/* One writer at a time on a journal: DIRFD locked, waiting up to WAIT_MS for another writer of it (an offline
 * revert's, or a unit's writer still finishing what its engine asked while the next engine starts). */
static int hold_dir(int dirfd, const char *dir, int64_t wait_ms)
{
	bool said = false;

	for (int64_t waited = 0;; waited += 100) {
		if (flock(dirfd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			int e = errno;

			log_err("writer: cannot lock %s: %s", dir, strerror(e));
			return -e;
		}
		if (waited >= wait_ms) {
			log_err("writer: another writer still holds %s after %lld ms: not started", dir, (long long)wait_ms);
			return -EBUSY;
		}
		if (!said)
			log_notice("writer: another writer holds %s (an offline revert, or the previous engine's): waiting",
				   dir);
		said = true;
		usleep(100 * 1000);
	}
}

int writer_main(const struct config *cfg, const char *config_path, bool must_exist, const char *root_override, int fd,
		int rfd)
{
	struct wmain *m = calloc(1, sizeof(*m));
	struct sigaction sa = {.sa_handler = on_hup};
	char err[512];
	int r;

	if (!m)
		return 1;
	m->cfg = *cfg;
	m->config_path = config_path;
	m->engine_uid = (uid_t)-1;
	m->ns_fd = m->ns_pidfd = -1;
	m->self_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (cfg->engine_user[0]) {
		struct passwd *pw = getpwnam(cfg->engine_user);

		if (pw)
			m->engine_uid = pw->pw_uid;
	}
	m->config_must_exist = must_exist;
	m->root_override = root_override;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	m->knobs = calloc(WRITER_KNOBS_MAX, sizeof(*m->knobs));
	if (!m->knobs || uv_loop_init(&m->loop) < 0 || nginx_ctl_new(&m->env.nginx) < 0) {
		log_err("writer: out of memory");
		return 1;
	}
	m->dirfd = writer_dir_open(cfg, m->dir, sizeof(m->dir), err, sizeof(err));
	if (m->dirfd < 0) {
		log_err("writer: %s", err);
		return 1;
	}
	if (hold_dir(m->dirfd, m->dir, 2 * cfg->nginx_timeout_ms) < 0)
		return 1;
	snprintf(m->journal, sizeof(m->journal), "/proc/self/fd/%d/%s", m->dirfd, WRITER_JOURNAL_NAME);
	snprintf(m->shown, sizeof(m->shown), "%s/%s", m->dir, WRITER_JOURNAL_NAME);
	snprintf(m->fallback, sizeof(m->fallback), "%s%s", cfg->store_path, STORE_ORIGINALS_SUFFIX);
	m->env.loop = &m->loop;
	m->env.nginx_conf = m->conf;
	m->env.nginx_prefix = m->prefix;
	set_env(m);
	r = load_policies(m, err, sizeof(err));
	if (r == 0)
		r = build_knobs(m, err, sizeof(err));
	if (r < 0) {
		log_err("writer: %s", err);
		return 1;
	}
	m->w.before = before;
	m->w.before_ctx = m;
	m->w.socket = open_socket;
	m->w.dump = dump;
	m->w.open_log = open_log_logged;
	log_info("writer %d: %zu knobs of %zu policies, originals in %s/%s", (int)getpid(), m->n, m->set->n, m->dir,
		 WRITER_JOURNAL_NAME);
	r = writer_hello(fd);
	if (r == 0)
		r = writer_serve(&m->w, &m->loop, fd, rfd);
	if (r < 0)
		log_err("writer: serving the engine ended: %s", strerror(-r));
	release_knobs(m);
	writer_free(&m->w);
	nginx_ctl_free(m->env.nginx);
	uv_run(&m->loop, UV_RUN_NOWAIT);
	close(m->dirfd);
	ns_forget(m);
	if (m->self_ns >= 0)
		close(m->self_ns);
	return r < 0 ? 1 : 0;
}
