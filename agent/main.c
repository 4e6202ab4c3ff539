/*
 * ngx-autotune: the agent's entry point. Parses the command line and the configuration, opens the store and
 * the API (the only fatal failures), then hands over to the loop; or runs one of the one-shot modes (--check,
 * --once, --doctor, --revert) on the same agent object (agent.c).
 */
#include "build-config.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <systemd/sd-daemon.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "api/api.h"
#include "core/policy.h"
#include "diagnose/doctor.h"
#include "fleet/fleet.h"
#include "api/doctor_json.h"
#include "act/engine.h"
#include "act/loadgen.h"
#include "act/nginx_ctl.h"
#include "act/setup.h"
#include "act/tuning.h"
#include "api/frame_json.h"
#include "log.h"
#include "loop.h"
#include "notify.h"
#include "priv/drop.h"
#include "priv/nssock.h"
#include "priv/wclient.h"
#include "priv/wdump.h"
#include "priv/writer_main.h"
#include "priv/wsocket.h"
#include "proto.h"
#include "store/store.h"
#include "strutil.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ngx-autotune [OPTION]...\n"
		"Observe nginx and the kernel under it, and tune them one guarded change at a time.\n"
		"\n"
		"  -c, --config FILE   configuration file (default " NGXAT_DEFAULT_CONFIG ")\n"
		"  -n, --check         validate the configuration, print 'configuration OK' and exit\n"
		"  -r, --root DIR      read every /proc and /sys path under DIR (tests, simulation)\n"
		"  -f, --foreground    stay in the foreground (implied under systemd)\n"
		"  -1, --once          sample two ticks one interval apart, print the frame as JSON and exit\n"
		"  -D, --doctor        run the doctor's checks once, print the advisories as JSON and exit 0 (none\n"
		"                      above info), 1 (warnings), 2 (critical) or 3 (could not run); ngxctl doctor\n"
		"                      runs this when the agent is not running\n"
		"      --revert ID|all put change ID (or every change) back, with the agent stopped, and exit;\n"
		"                      journaled like the agent's own reverts (ngxctl revert --offline runs this)\n"
		"      --setup         print the changes that prepare nginx for the agent (include files and\n"
		"                      lines, a loopback stub_status server, an access log with request times,\n"
		"                      agent.conf pointed at them) as a diff, and exit; with --apply, back each\n"
		"                      file up, write them, run nginx -t (a failure puts everything back) and\n"
		"                      reload nginx (ngxctl setup runs this). It edits the file the running\n"
		"                      master was started with (its -c, else nginx's default), checks in nginx's\n"
		"                      network namespace, and refuses when [nginx] conf names another file\n"
		"      --apply         with --setup: write the changes\n"
		"      --revert-setup  put back every file --setup wrote, byte for byte, and reload nginx; a file\n"
		"                      changed since is refused unless --force (ngxctl revert --setup)\n"
		"      --writer        be the writer of an engine started as [agent] user, on the socket systemd\n"
		"                      passes (ngx-autotune-writer.service, started by its .socket): serve the\n"
		"                      engine that connects, as root, until it closes its channels\n"
		"  -h, --help          show this help\n"
		"  -V, --version       show the version\n"
		"\n"
		"Signals: SIGTERM/SIGINT stop cleanly, SIGHUP reloads the configuration (a broken file is refused and\n"
		"the running configuration kept). See ngx-autotune(8) and ngx-autotune.conf(5).\n");
}

static int newest_cb(void *ctx, const struct change_row *row)
{
	*(int64_t *)ctx = row->id;
	return 1;
}

struct failed_ctx {
	int64_t after;
	int n;
	char knob[STORE_KNOB_MAX];
	char detail[256];
};

static int failed_cb(void *ctx, const struct change_row *row)
{
	struct failed_ctx *f = ctx;

	if (row->id <= f->after)
		return 1; /* newest first: everything from here on is older than this run */
	if (f->n++ == 0) {
		snprintf(f->knob, sizeof(f->knob), "%s", row->knob);
		snprintf(f->detail, sizeof(f->detail), "%.200s", row->detail);
	}
	return 0;
}

static void offline_tick(uv_timer_t *t)
{
	struct agent *a = t->data;

	engine_tick(a->engine, agent_now_ms(a));
	if (!engine_busy(a->engine) || agent_now_ms(a) > a->start_ms + a->cfg.nginx_timeout_ms * 3)
		uv_stop(a->loop);
}

/* What --revert all had to go on when the store could not be read: the originals file, damaged or missing. */
struct originals_used {
	bool missing;      /* no originals file either: nothing is known of what the agent changed */
	char damage[1024]; /* the originals file's damaged lines (their knobs could not be put back), "" if none */
};

/* No record of what the agent changed: an error naming the managed knobs as they read now, never "nothing to put
 * back" (issue 22, R9: a changed sysctl stayed changed and the revert said it had put back all there was). */
static int revert_without_record(struct agent *a)
{
	struct engine_knob_report *k = malloc(sizeof(*k));
	char list[2048];
	size_t off = 0, shown = 0, n = engine_knob_count(a->engine);

	list[0] = '\0';
	for (size_t i = 0; k && i < n; i++) {
		engine_knob_report(a->engine, i, k);
		if (!k->live_ok)
			continue;
		if (off + strlen(k->name) + strlen(k->live) + 8 < sizeof(list) - 32) {
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s=%s", shown ? ", " : "", k->name, k->live);
			shown++;
		} else {
			snprintf(list + off, sizeof(list) - off, "%s...", shown ? ", " : "");
			break;
		}
	}
	free(k);
	fprintf(stderr, "ngx-autotune: revert: nothing could be put back: there is no store %s and no originals file "
		"%s%s, so nothing is known of what the agent changed (if it ever ran here, both were lost: restore them "
		"from a backup). The knobs its policies manage read now: %s\n", a->cfg.store_path, a->cfg.store_path,
		STORE_ORIGINALS_SUFFIX, shown ? list : "(none readable)");
	return 4; /* apart from 1: a package's removal goes on where the agent never ran (debian/prerm) */
}

/* --revert: the same engine, journal and drivers as the running agent, then exit. */
static int run_offline_revert(struct agent *a, const char *arg, const struct originals_used *orig)
{
	struct engine_revert_report *rep;
	struct failed_ctx failed = {0};
	char err[512];
	int64_t id = 0, first = 0;
	int r;

	if (orig->missing)
		return revert_without_record(a);
	if (strcmp(arg, "all") != 0)
		str_to_i64(arg, 1, INT64_MAX, &id); /* checked in parse_args */
	/* The rows this run journals come after the newest one now. */
	store_changes_query(a->store, "", 0, 0, 1, newest_cb, &first);
	rep = malloc(sizeof(*rep));
	if (!rep) {
		fprintf(stderr, "ngx-autotune: revert: out of memory\n");
		return 1;
	}
	r = engine_revert(a->engine, id, getenv("SUDO_USER") ? getenv("SUDO_USER") : "offline", agent_now_ms(a),
			  rep, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "ngx-autotune: revert: %s\n", err);
		free(rep);
		return 1;
	}
	/* Knob by knob; a write still under way here (nginx) is waited for below. */
	for (size_t i = 0; i < rep->n; i++)
		if (rep->items[i].outcome == ENGINE_REVERT_SKIPPED || rep->items[i].outcome == ENGINE_REVERT_ALREADY)
			printf("%s: %s\n", rep->items[i].knob, rep->items[i].why);
	free(rep);
	if (engine_busy(a->engine)) {
		a->timer.data = a;
		uv_timer_start(&a->timer, offline_tick, 100, 100);
		uv_run(a->loop, UV_RUN_DEFAULT);
		uv_timer_stop(&a->timer);
	}
	if (engine_busy(a->engine)) {
		fprintf(stderr, "ngx-autotune: revert: a write did not complete in time\n");
		return 1;
	}
	failed.after = first;
	store_changes_query(a->store, "", 1u << CHANGE_FAILED, 0, 0, failed_cb, &failed);
	if (failed.n) {
		fprintf(stderr, "ngx-autotune: revert: %d write(s) failed, e.g. %s: %s (see ngxctl history)\n", failed.n,
			failed.knob, failed.detail);
		return 1;
	}
	if (orig->damage[0]) {
		printf("reverted: %d knob write(s), from the originals file's good lines\n", r);
		fprintf(stderr, "ngx-autotune: revert: the originals file is damaged, the knobs of these lines could not be "
			"put back: %s\n", orig->damage);
		return 1;
	}
	printf("reverted: %d knob write(s)%s\n", r, r ? "" : " (nothing to put back)");
	return 0;
}

static int seed_original(void *ctx, const char *knob, const char *original)
{
	struct knob_row row;

	memset(&row, 0, sizeof(row));
	snprintf(row.name, sizeof(row.name), "%s", knob);
	row.has_original = true;
	snprintf(row.original, sizeof(row.original), "%s", original);
	snprintf(row.state, sizeof(row.state), "%s", STORE_KNOB_LOST); /* the engine takes what is live as its own */
	return store_knob_put(ctx, &row);
}

/* --revert all when the store is lost (empty, gone, damaged, never made): a scratch store in memory holds the
 * originals the originals file kept, and the same engine puts every knob back to them. Its journal dies with the
 * process: the log has each write. A damaged line is skipped (the others are still put back) and a missing file
 * leaves nothing to go on: both are noted in USED, and the revert ends in an error that names them. */
static int open_from_originals(struct agent *a, struct originals_used *used, char *err, size_t errlen)
{
	int r = store_open_memory(&a->store, err, errlen);

	if (r < 0)
		return r;
	r = store_originals_read(a->cfg.store_path, seed_original, a->store, used->damage, sizeof(used->damage));
	if (r == -ENOENT) {
		used->damage[0] = '\0';
		used->missing = true;
		return 0;
	}
	if (r < 0 && r != -EBADMSG) {
		snprintf(err, errlen, "%.400s", used->damage);
		return r;
	}
	if (r < 0)
		log_err("the originals file is damaged: %s", used->damage);
	log_warn("the store is lost: putting every knob back to the originals kept in %s%s", a->cfg.store_path,
		 STORE_ORIGINALS_SUFFIX);
	return 0;
}

/* --once: two collections one interval apart, so counters have deltas; no store, no API. */
static int run_once(struct agent *a)
{
	json_t *o;

	for (int i = 0; i < 2; i++) {
		agent_collect_frame(a, agent_now_ms(a), i ? (double)a->cfg.tick_ms / 1000.0 : 0, NULL, NULL);
		if (i == 0)
			usleep((useconds_t)a->cfg.tick_ms * 1000);
	}
	o = frame_to_json(&a->fr, a->reg, NULL);
	if (!o)
		return 1;
	json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
	putchar('\n');
	json_decref(o);
	return 0;
}

/* --doctor: the same checks as the running agent's, once, with counters since boot instead of a window. */
static int run_doctor(struct agent *a)
{
	struct doctor_state st = {0};
	char err[256];
	json_t *o;
	int rc;

	a->loop = uv_default_loop();
	agent_knob_env(a);
	if (doctor_run_once(a, agent_now_ms(a), &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "ngx-autotune: doctor: %s\n", err);
		doctor_state_free(&st);
		return 3;
	}
	o = doctor_json(&st, false);
	rc = o ? doctor_exit_code(&st) : 3;
	if (o) {
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
	}
	json_decref(o);
	doctor_state_free(&st);
	uv_run(a->loop, UV_RUN_DEFAULT);
	uv_loop_close(a->loop);
	return rc;
}

/* What the command line asks for besides running the agent. */
struct modes {
	bool check, once, foreground, doctor;
	const char *revert;
	bool setup, apply, revert_setup, force, writer;
};

/* The connections waiting on the writer's socket closed: an engine waiting for a writer that cannot start sees it
 * at once (the reason is in the writer's log), instead of at the end of its wait. */
static void drain(int listen_fd)
{
	int fd;

	if (fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK) < 0)
		return;
	while ((fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
}

/* --writer: ngx-autotune-writer.service, the root part of an engine that its own unit starts as [agent] user. Before
 * the engine's channels are served: the store's files are made the user's (those of an earlier version moved into
 * its directory), as the fork's drop does; the engine opens its store after this writer's hello. */
static int run_writer_unit(struct agent *a)
{
	struct drop_plan p;
	char err[512];
	int n, fd, rfd, r;

	log_set_level(a->cfg.log_level);
	if (notify_stderr_is_journal())
		notify_use_journal();
	n = sd_listen_fds(1);
	if (n != 1 || sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, 1, NULL, 0) <= 0) {
		log_err("--writer serves the engine on the one SOCK_SEQPACKET socket systemd passes "
			"(ngx-autotune-writer.socket's ListenSequentialPacket=): %d given%s%s", n < 0 ? 0 : n,
			n < 0 ? ": " : "", n < 0 ? strerror(-n) : "");
		return 1;
	}
	if (!a->cfg.engine_user[0]) {
		log_err("--writer serves an engine started as [agent] user, and %s sets none", a->config_path);
		drain(SD_LISTEN_FDS_START);
		return 1;
	}
	if (drop_plan(&a->cfg, false, &p, err, sizeof(err)) < 0 || drop_store_files(&a->cfg, &p, err, sizeof(err)) < 0) {
		log_err("%s", err);
		drain(SD_LISTEN_FDS_START);
		return 1;
	}
	r = wsocket_accept(SD_LISTEN_FDS_START, p.uid, 10000, &fd, &rfd, err, sizeof(err));
	close(SD_LISTEN_FDS_START); /* systemd holds it: the next engine's connection starts the next writer */
	if (r == -ETIMEDOUT) {
		/* Started without an engine (by hand, or a package's restart of every unit): nothing to serve. */
		log_notice("writer: %s: ending; the engine's connection starts the writer", err);
		return 0;
	}
	if (r < 0) {
		log_err("writer: %s", err);
		return 1;
	}
	/* As the forked writer: it ends when the engine closes its channels, after the reverts of the engine's stop. */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if ((r = drop_writer_caps()) < 0)
		log_warn("writer: cannot drop CAP_SETGID, CAP_SETPCAP: %s", strerror(-r));
	return writer_main(&a->cfg, a->config_path, a->config_must_exist, a->root_override, fd, rfd);
}

/* --setup / --revert-setup: nginx's files and agent.conf, journaled beside the writer's directory (root's: its
 * backups are what root puts back into nginx's files, so never in the directory of an engine that gave up root; by
 * default the store's); no store, no lock. */
static int run_setup(struct agent *a, const struct modes *m)
{
	char state[CONFIG_PATH_MAX + 32], err[1024], *slash;
	struct setup_opts o = {.cfg = &a->cfg, .config_path = a->config_path, .state_dir = state, .apply = m->apply,
			       .force = m->force, .out = stdout};
	int r;

	if (writer_dir_path(&a->cfg, state, sizeof(state)) < 0) {
		fprintf(stderr, "ngx-autotune: setup: the writer's directory of %s is too long\n", a->cfg.store_path);
		return 1;
	}
	slash = strrchr(state, '/');
	if (slash && slash != state)
		*slash = '\0';
	else
		snprintf(state, sizeof(state), ".");
	r = m->setup ? setup_run(&o, err, sizeof(err)) : setup_revert(&o, err, sizeof(err));
	if (r < 0) {
		fflush(stdout);
		fprintf(stderr, "ngx-autotune: %s: %s\n", m->setup ? "setup" : "revert-setup", err);
		return 1;
	}
	return 0;
}

/* [agent] writer: the privileged writer forked now, before the store, the API or a thread exists; it keeps one end
 * of a socket pair and the agent the other. It ignores the signals systemd sends the unit's processes to stop
 * them: it ends when the agent closes its socket, after the agent's reverts at stop went through it, and is killed
 * when the agent dies. */
static int start_writer(struct agent *a, char *err, size_t errlen)
{
	pid_t pid, parent = getpid();
	int sv[2], rv[2], r;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, errlen, "the writer's socket: %s", strerror(errno));
		return -errno;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rv) < 0) {
		snprintf(err, errlen, "the writer's read channel: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot start the writer: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		close(rv[0]);
		close(rv[1]);
		return -errno;
	}
	if (pid == 0) {
		/* Killed with the agent, as one process would be: a writer that finished a change its dead engine asked
		 * for would race the restarted agent's recovery (two nginx reloads at once). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(1);
		close(sv[0]);
		close(rv[0]);
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		/* Only the engine's drop needs them; a writer where they cannot be dropped goes on, and says so. */
		if ((r = drop_writer_caps()) < 0)
			log_warn("writer: cannot drop CAP_SETGID, CAP_SETPCAP: %s", strerror(-r));
		_exit(writer_main(&a->cfg, a->config_path, a->config_must_exist, a->root_override, sv[1], rv[1]));
	}
	close(sv[1]);
	close(rv[1]);
	a->writer_pid = pid;
	a->writer_fd = sv[0];
	a->writer_rfd = rv[0];
	log_info("the writer runs as pid %d: knob writes go through it", (int)pid);
	return 0;
}

/* [agent] writer_socket, an engine started as [agent] user: the writer is ngx-autotune-writer.service, met on its
 * socket (priv/wsocket.h); systemd starts it at this connection. */
static int connect_writer(struct agent *a, char *err, size_t errlen)
{
	int r = wsocket_connect(a->cfg.writer_socket, &a->writer_fd, &a->writer_rfd, err, errlen);

	if (r < 0)
		return r;
	a->writer_remote = true;
	log_info("the writer is met at %s: knob writes go through it", a->cfg.writer_socket);
	return 0;
}

/* [agent] user: the engine gives up root (priv/drop.h) once the writer has said it started (so that a writer that
 * could not is still killed), before the store, the API or any thread exists; P was checked before the writer was
 * forked. */
static int become_user(struct agent *a, const struct drop_plan *p, char *err, size_t errlen)
{
	int r = 0;

	if (a->writer_pid > 0 || a->writer_remote) {
		r = wclient_await_hello(a->writer_fd, (int)(3 * a->cfg.nginx_timeout_ms + 1000), err, errlen);
		a->writer_hello = r == 0;
	}
	if (r == 0)
		r = api_tokens_preload(&a->cfg, p->uid, err, errlen);
	/* Started as the user, the engine cannot give root's files away: its writer did, before its hello. */
	if (r == 0 && geteuid() == 0)
		r = drop_store_files(&a->cfg, p, err, errlen);
	if (r == 0)
		r = drop_now(p, err, errlen);
	if (r == 0) {
		/* What decides what the agent runs or writes stays root's to decide, as the writer holds it. */
		config_trust_owner(0);
		if (a->writer_remote)
			log_info("the engine runs as %s (uid %d), without capabilities; the writer is a unit of its own",
				 p->user, (int)p->uid);
		else
			log_info("the engine runs as %s (uid %d), without capabilities; the writer (pid %d) stays root",
				 p->user, (int)p->uid, (int)a->writer_pid);
	}
	return r;
}

/* The writer's socket closed (it then ends; killed if it never started serving) and the writer waited for. */
static void end_writer(struct agent *a)
{
	int status;

	if (a->writer_pid <= 0 && !a->writer_remote)
		return;
	if (a->nssock) {
		sampler_set_ns_netlink(a->sampler, NULL, NULL);
		sampler_set_ns_tcp(a->sampler, NULL, NULL); /* its sockets come through the read client, freed below */
		nssock_free(a->nssock); /* before the client, whose requests it cancels */
		a->nssock = NULL;
	}
	a->env.dump = NULL;
	a->env.ns_nics = NULL;
	a->env.open_log = NULL;
	sampler_set_open_log(a->sampler, NULL, NULL);
	a->env.sysctl = NULL;
	wdump_free(a->wdump); /* before the client, whose requests it cancels */
	a->wdump = NULL;
	if (a->wclient) {
		wclient_free(a->wclient);
	} else if (a->writer_fd >= 0) {
		/* No client was made: the writer was sent nothing, so it has written nothing, and it may still be in its
		 * start (it did not say it started within the timeout), where it would not see its socket close. */
		close(a->writer_fd);
		if (a->writer_pid > 0)
			kill(a->writer_pid, SIGKILL);
	}
	a->wclient = NULL;
	a->writer_fd = -1;
	if (a->rclient)
		rclient_free(a->rclient);
	else if (a->writer_rfd >= 0)
		close(a->writer_rfd);
	a->rclient = NULL;
	a->writer_rfd = -1;
	a->writer_remote = false; /* its unit's: it ends as its channels close */
	if (a->writer_pid <= 0)
		return;
	if (waitpid(a->writer_pid, &status, 0) == a->writer_pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		log_warn("the writer (pid %d) ended %s %d", (int)a->writer_pid, WIFEXITED(status) ? "with status" :
			 "by signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	a->writer_pid = 0;
}

/* Returns -1 to go on, or the exit code (0 after --help/--version, 2 on a usage error). */
static int parse_args(struct agent *a, int argc, char **argv, struct modes *m)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'}, {"check", no_argument, NULL, 'n'},
		{"root", required_argument, NULL, 'r'},   {"foreground", no_argument, NULL, 'f'},
		{"once", no_argument, NULL, '1'},         {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},      {"revert", required_argument, NULL, 'R'},
		{"doctor", no_argument, NULL, 'D'},       {"setup", no_argument, NULL, 'S'},
		{"apply", no_argument, NULL, 'A'},        {"revert-setup", no_argument, NULL, 'U'},
		{"force", no_argument, NULL, 'F'},        {"writer", no_argument, NULL, 'W'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:nr:f1DhV", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			snprintf(a->config_path, sizeof(a->config_path), "%s", optarg);
			a->config_must_exist = true;
			break;
		case 'n': m->check = true; break;
		case 'r':
			if (optarg[0] != '/' || strlen(optarg) >= sizeof(a->root_override)) {
				fprintf(stderr, "ngx-autotune: --root needs an absolute path\n");
				return 2;
			}
			snprintf(a->root_override, sizeof(a->root_override), "%s", optarg);
			break;
		case 'f': m->foreground = true; break;
		case '1': m->once = true; break;
		case 'D': m->doctor = true; break;
		case 'S': m->setup = true; break;
		case 'A': m->apply = true; break;
		case 'U': m->revert_setup = true; break;
		case 'F': m->force = true; break;
		case 'W': m->writer = true; break;
		case 'R': {
			int64_t id;

			if (strcmp(optarg, "all") != 0 && str_to_i64(optarg, 1, INT64_MAX, &id) < 0) {
				fprintf(stderr, "ngx-autotune: --revert takes a change id or 'all'\n");
				return 2;
			}
			m->revert = optarg;
			break;
		}
		case 'h': usage(stdout); return 0;
		case 'V': printf("ngx-autotune %s (API %d)\n", PACKAGE_VERSION, NGXAT_API_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ngx-autotune: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (m->writer && (m->check || m->once || m->doctor || m->revert || m->setup || m->revert_setup)) {
		fprintf(stderr, "ngx-autotune: --writer goes with no other mode\n");
		return 2;
	}
	if ((m->apply && !m->setup) || (m->force && !m->revert_setup) || (m->setup && m->revert_setup)) {
		fprintf(stderr, "ngx-autotune: --apply goes with --setup, --force with --revert-setup\n");
		return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct agent *a = calloc(1, sizeof(*a));
	struct modes m = {0};
	struct originals_used orig = {0};
	struct store_options so;
	struct stat sb;
	struct drop_plan drop;
	bool no_store_dir, drop_user;
	char err[512];
	int r, rc = 1;

	if (!a)
		return 1;
	/*
	 * Buffers of 128 KiB or more (an nginx -T dump, a page of frames) are mapped alone and go back to the kernel
	 * when freed. glibc's own threshold rises to the largest block freed so far (up to 32 MiB), after which a
	 * dump of a few MiB went to the heap, and the heap kept what it freed: 7 MiB more RSS after a few 8 MiB dumps
	 * (issue 22, R5). A fixed threshold also makes realloc of those buffers a remap, never a copy.
	 */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	snprintf(a->config_path, sizeof(a->config_path), "%s", NGXAT_DEFAULT_CONFIG);
	loop_clock_init(a);
	rc = parse_args(a, argc, argv, &m);
	if (rc >= 0)
		goto out_args;
	rc = m.doctor ? 3 : 1; /* --doctor's 1 and 2 mean warnings and critical findings */
	/* Absolute, so that a reload after daemon() (which changes to /) reads the same file. */
	if (a->config_path[0] != '/') {
		char *rp = realpath(a->config_path, NULL);

		if (rp && strlen(rp) < sizeof(a->config_path))
			strcpy(a->config_path, rp);
		free(rp);
	}
	/* Every mode runs or writes something as root that the configuration names: -n too. */
	if (config_load(a->config_path, a->config_must_exist, &a->cfg, err, sizeof(err)) < 0 ||
	    config_check_trust(&a->cfg, a->config_path, err, sizeof(err)) < 0) {
		fprintf(stderr, "ngx-autotune: %s\n", err);
		goto out_args;
	}
	if (a->root_override[0])
		snprintf(a->cfg.root, sizeof(a->cfg.root), "%s", a->root_override);
	if (m.setup || m.revert_setup) {
		rc = run_setup(a, &m);
		goto out_args;
	}
	if (m.writer) {
		rc = run_writer_unit(a);
		goto out_args;
	}
	if (m.check) {
		struct policy_set *set = NULL;

		/* -n checks the policies too: they decide what gets written as root. */
		if (agent_load_policies(a, &set, err, sizeof(err)) < 0) {
			fprintf(stderr, "ngx-autotune: %s\n", err);
			goto out_args;
		}
		policy_set_free(set);
		free(set);
		if (api_check_config(&a->cfg, err, sizeof(err)) < 0) {
			fprintf(stderr, "ngx-autotune: %s\n", err);
			goto out_args;
		}
		printf("configuration OK\n");
		rc = 0;
		goto out_args;
	}
	log_set_level(a->cfg.log_level);
	a->cfg.stub_status_timeout_ms = loop_stub_timeout_ms(a->cfg.stub_status_timeout_ms, a->cfg.tick_ms);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	frame_init(&a->fr);
	if (metric_registry_new(&a->reg) < 0 || sampler_new(&a->cfg, a->reg, &a->sampler) < 0) {
		fprintf(stderr, "ngx-autotune: out of memory\n");
		goto out;
	}
	if (m.once) {
		rc = run_once(a);
		goto out;
	}
	if (m.doctor) {
		rc = run_doctor(a);
		goto out;
	}
	if (notify_stderr_is_journal()) {
		notify_use_journal();
	} else if (!m.foreground && !m.revert && !getenv("NOTIFY_SOCKET")) {
		if (daemon(0, 0) < 0) {
			fprintf(stderr, "ngx-autotune: daemon: %s\n", strerror(errno));
			goto out;
		}
		notify_use_syslog();
	}
	/* An offline revert where the store's directory does not exist: no agent ever ran with this store (a package
	 * installed and removed before its unit started), nothing was written that it could put back, and nothing is
	 * made to find that out (no writer, no drop, no lock file). */
	{
		char dir[CONFIG_PATH_MAX], *slash;

		snprintf(dir, sizeof(dir), "%s", a->cfg.store_path);
		slash = strrchr(dir, '/');
		if (slash && slash != dir)
			*slash = '\0';
		no_store_dir = m.revert && slash && slash != dir && stat(dir, &sb) < 0 && errno == ENOENT;
	}
	/* [agent] user: checked before anything is made (a writer's directory among others); an offline revert too:
	 * the store is the engine's user's to write, and what root puts back comes from the writer's own journal, never
	 * from rows that user could have written. */
	drop_user = a->cfg.engine_user[0] && !no_store_dir;
	if (drop_user && drop_plan(&a->cfg, !m.revert, &drop, err, sizeof(err)) < 0) {
		log_err("%s", err);
		goto out;
	}
	/* The store's lock before the writer's journal (hold_dir), in every mode, so that the two are always taken in
	 * one order: an offline revert while an agent runs is refused at once, and an agent starting during an
	 * offline revert waits for no writer of its own only to be refused after. */
	if (!no_store_dir && !drop_user && (r = store_make_parents(a->cfg.store_path)) < 0) {
		log_err("cannot make the store's directory for %s: %s", a->cfg.store_path, strerror(-r));
		goto out;
	}
	if (!no_store_dir && agent_lock(a, err, sizeof(err)) < 0) {
		log_err("%s", err);
		goto out;
	}
	if (a->cfg.writer && !a->cfg.dry_run && (!m.revert || drop_user) &&
	    (a->cfg.writer_socket[0] && geteuid() != 0 ? connect_writer(a, err, sizeof(err))
						      : start_writer(a, err, sizeof(err))) < 0) {
		log_err("%s", err);
		goto out;
	}
	if (drop_user && become_user(a, &drop, err, sizeof(err)) < 0) {
		log_err("%s", err);
		goto out;
	}
	store_options_default(&so);
	so.frames_retention_s = a->cfg.frames_retention_ms / 1000;
	so.rollups_retention_s = a->cfg.rollups_retention_ms / 1000;
	so.audit_retention_s = a->cfg.audit_retention_ms / 1000;
	so.denied_retention_s = a->cfg.denied_retention_ms / 1000;
	if (m.revert && strcmp(m.revert, "all") == 0 && stat(a->cfg.store_path, &sb) < 0 && errno == ENOENT) {
		/* No store to open: one made now would be empty, and a second revert would find nothing to do in it. */
		log_warn("there is no store %s", a->cfg.store_path);
		r = open_from_originals(a, &orig, err, sizeof(err));
	} else {
		r = store_open(a->cfg.store_path, &so, a->reg, &a->store, err, sizeof(err));
		if ((r == -ENODATA || r == -EIO) && m.revert && strcmp(m.revert, "all") == 0) {
			log_err("cannot open the store: %s", err);
			r = open_from_originals(a, &orig, err, sizeof(err));
		}
	}
	if (r < 0) {
		log_err("cannot open the store: %s", err);
		goto out;
	}
	if (!no_store_dir && a->lock_fd <= 0 && agent_lock(a, err, sizeof(err)) < 0) {
		log_err("%s", err);
		goto out;
	}
	loop_init(a);
	if (agent_writer_client(a, err, sizeof(err)) < 0 || agent_start_engine(a, err, sizeof(err)) < 0) {
		log_err("%s", err);
		goto out;
	}
	if (m.revert) {
		rc = run_offline_revert(a, m.revert, &orig);
		goto out;
	}
	/* [fleet]: the pool's gate closed until this host holds a trial slot (fail closed: no etcd, no trial). */
	if (a->cfg.fleet_endpoints[strspn(a->cfg.fleet_endpoints, " \t")]) {
		r = fleet_new(&a->cfg, &a->fleet, err, sizeof(err));
		if (r < 0) {
			log_err("%s", err);
			goto out;
		}
		if (a->tuning)
			tuning_gate(a->tuning, false, "etcd not asked yet");
	}
	if (strcmp(a->cfg.measure, "loadgen") == 0) {
		r = loadgen_new(a->loop, &a->cfg, &a->loadgen, err, sizeof(err));
		if (r < 0) {
			log_err("%s", err);
			goto out;
		}
	}
	if (doctor_new(a, &a->doctor) < 0) {
		log_err("out of memory");
		goto out;
	}
	r = api_start(a, &a->api, err, sizeof(err));
	if (r < 0) {
		log_err("cannot start the API: %s", err);
		goto out;
	}
	log_info("ngx-autotune %s started: tick %lldms, store %s, API %s", PACKAGE_VERSION,
		 (long long)a->cfg.tick_ms, a->cfg.store_path, a->cfg.socket_path);
	rc = loop_run(a);
out:
	fleet_free(a->fleet); /* its lease revoked: the member key and a slot go at once */
	free(a->fleet_loop);
	loadgen_free(a->loadgen);
	doctor_free(a->doctor);
	tuning_free(a->tuning);
	engine_free(a->engine);
	nginx_ctl_free(a->env.nginx);
	end_writer(a); /* after the knobs, which forget their requests in flight on its client */
	if (a->lock_fd > 0)
		close(a->lock_fd);
	store_close(a->store);
	sampler_free(a->sampler);
	metric_registry_free(a->reg);
	frame_free(&a->fr);
	prom_totals_free(&a->prom);
	curl_global_cleanup();
out_args:
	free(a);
	return rc;
}
