/*
 * setup: prepare a stock nginx for the agent, reversibly. See setup.h.
 */
#include "build-config.h"

#include "act/setup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "act/nginx_conf.h"
#include "act/nginx_ctl.h"
#include "act/setup_plan.h"
#include "netns.h"
#include "observe/stubhttp.h"
#include "strutil.h"

#define PORT_FIRST 8190          /* the stub_status server's port: the first of these nginx does not use */
#define PORT_LAST 8199
#define STATUS_TRIES 50          /* fetches of the new stub_status, 100 ms apart */

/* ---- the nginx the setup works on ------------------------------------------------------------------------- */

/*
 * The running master the agent follows (the pid of [nginx] pid_file, when that process is an nginx master), the
 * file it was started with, and the environment every nginx -t, -T and -V runs in (nginx_ctl_run: that file and
 * prefix, in the master's network namespace). Without a master, [nginx] conf (or nginx's default) in the agent's
 * own namespace, as before.
 */
struct target {
	struct knob_env env;
	pid_t pid;                  /* the master; 0: none runs */
	int netns;                  /* its network namespace, for the setup's own checks (-1: the setup's) */
	struct setup_running run;   /* the file it works on ("" = nginx's default, only without a master) and -p */
};

/* What nginx printed when FLAG failed, as the error: "nginx -t failed: [emerg] ...". */
static int nginx_run(const struct target *t, const char *flag, char **out, size_t *len, char *err, size_t errlen)
{
	char msg[KNOB_WHY_MAX] = "";
	int r = nginx_ctl_run(&t->env, flag, out, len, msg, sizeof(msg));

	if (r < 0)
		str_err(err, errlen, "nginx %s failed: %s", flag, msg[0] ? msg : strerror(-r));
	return r;
}

/* The pid in [nginx] pid_file (not under --root: the pid file is nginx's, as the agent reads it), 0 if none. */
static pid_t pid_file_pid(const struct config *cfg)
{
	char *text = NULL;
	size_t len;
	int64_t pid = 0;

	if (nginx_ctl_read_file(cfg->pid_file, 4096, &text, &len) < 0)
		return 0;
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
		text[--len] = '\0';
	if (str_to_i64(text, 2, INT32_MAX, &pid) < 0)
		pid = 0;
	free(text);
	return (pid_t)pid;
}

/* /proc/PID/cmdline (up to its first NUL: a master's title) and the target of /proc/PID/cwd, under ROOT. */
static int read_master(const struct config *cfg, pid_t pid, char *title, size_t tlen, char *cwd, size_t cwdlen)
{
	char path[CONFIG_PATH_MAX + 64];
	char *text = NULL;
	size_t len;
	ssize_t n;
	int r;

	r = str_rooted(path, sizeof(path), cfg->root, "/proc/%d/cmdline", (int)pid);
	if (r == 0)
		r = nginx_ctl_read_file(path, 1 << 16, &text, &len);
	if (r < 0)
		return r;
	snprintf(title, tlen, "%s", text);
	free(text);
	cwd[0] = '\0';
	if (str_rooted(path, sizeof(path), cfg->root, "/proc/%d/cwd", (int)pid) == 0 &&
	    (n = readlink(path, cwd, cwdlen - 1)) > 0)
		cwd[n] = '\0';
	return 0;
}

/* Whether A and B name one file: the same inode when both exist, else the same path. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	return strcmp(a, b) == 0;
}

/*
 * Find what the setup works on into T, and say on OUT which file it is and why, then DOING with it. With
 * CHECK_CONF, [nginx] conf naming another file than the running master's is refused (-EINVAL with both paths in
 * ERR): the setup would edit a file that nginx does not run.
 */
static int target_find(const struct setup_opts *o, bool check_conf, const char *doing, struct target *t, char *err,
		       size_t errlen)
{
	const struct config *cfg = o->cfg;
	char title[4096], cwd[PATH_MAX], why[512], *version = NULL;
	size_t vlen;
	int r;

	memset(t, 0, sizeof(*t));
	t->netns = -1;
	t->env.root = cfg->root;
	t->env.nginx_bin = cfg->nginx_bin;
	t->env.include_dir = cfg->include_dir;
	t->env.nginx_timeout_ms = cfg->nginx_timeout_ms;
	/* From the command line, outside the unit's MemoryMax: any configuration the parser takes, nginx unbounded
	 * ([nginx] dump_max and memory_max bound the agent). */
	t->env.nginx_dump_max = NGINX_CONF_DUMP_MAX;
	t->env.nginx_memory_max = SIZE_MAX;
	t->env.nginx_conf = t->run.conf;
	t->env.nginx_prefix = t->run.prefix;
	t->pid = pid_file_pid(cfg);
	/* Under --root the pid is the fake tree's: its /proc says whether it runs, and it is never signalled. */
	if (t->pid > 0 && nginx_ctl_real_root(&t->env) && kill(t->pid, 0) < 0 && errno != EPERM)
		t->pid = 0;
	if (t->pid > 0 && read_master(cfg, t->pid, title, sizeof(title), cwd, sizeof(cwd)) < 0)
		t->pid = 0;
	if (t->pid > 0 && strncmp(title, "nginx: master process ", 22) != 0) {
		fprintf(o->out, "pid %d in %s is not an nginx master (\"%.80s\"): taken as no nginx running\n",
			(int)t->pid, cfg->pid_file, title);
		t->pid = 0;
	}
	if (t->pid <= 0) {
		/* Without a master there is no running file to follow: [nginx] conf, else nginx's default. */
		t->pid = 0;
		snprintf(t->run.conf, sizeof(t->run.conf), "%s", cfg->nginx_conf);
		fprintf(o->out, "no nginx master runs (%s): %s (%s): %s\n", cfg->pid_file,
			t->run.conf[0] ? t->run.conf : "nginx's default configuration",
			t->run.conf[0] ? "from [nginx] conf" : "as [nginx] conf names none", doing);
		return 0;
	}
	t->env.nginx_pid = t->pid;
	/* nginx -V only for the compiled-in paths (no -c, or a relative one without -p); its failure is said then. */
	if (nginx_ctl_run(&t->env, "-V", &version, &vlen, why, sizeof(why)) < 0)
		version = NULL;
	r = setup_running_conf(title, cwd[0] ? cwd : NULL, version, &t->run, why, sizeof(why));
	free(version);
	if (r < 0) {
		str_err(err, errlen, "nginx master %d: %s", (int)t->pid, why);
		return r;
	}
	/* A -c with blanks shows as several words in the title, and only the first was read: [nginx] conf, when the
	 * title has it whole as -c's value, is the file. */
	if (cfg->nginx_conf[0] && !t->run.builtin && !same_file(cfg->nginx_conf, t->run.conf) &&
	    setup_title_names(title, cfg->nginx_conf))
		snprintf(t->run.conf, sizeof(t->run.conf), "%s", cfg->nginx_conf);
	if (check_conf && cfg->nginx_conf[0] && !same_file(cfg->nginx_conf, t->run.conf)) {
		str_err(err, errlen, "[nginx] conf in %s names %s, but the running nginx (master %d) was started with "
			"%s (set conf = %s there, or remove the line: the agent follows the running master)",
			o->config_path, cfg->nginx_conf, (int)t->pid, t->run.conf, t->run.conf);
		return -EINVAL;
	}
	fprintf(o->out, "nginx master %d runs %s (%s): %s\n", (int)t->pid, t->run.conf,
		t->run.builtin ? "nginx's compiled-in default, from nginx -V" : "its -c", doing);
	if (nginx_ctl_real_root(&t->env))
		t->netns = netns_open_pid(t->pid);
	return 0;
}

static void target_free(struct target *t)
{
	if (t->netns >= 0)
		close(t->netns);
	t->netns = -1;
}

/* ---- files ----------------------------------------------------------------------------------------------- */

/* The whole file at PATH (the files the setup reads are configuration and its journal: small). */
static int read_file(const char *path, char **out, size_t *len)
{
	return nginx_ctl_read_file(path, NGINX_CONF_DUMP_MAX, out, len);
}

/*
 * Replace PATH by TEXT whole (nginx_ctl_write_file: a temporary file renamed over it, the old mode and owner kept,
 * so that nginx never reads half a file). A symbolic link (sites-enabled) keeps pointing at its target, which is
 * what gets written. A new file is 0644, in a directory created 0755 if needed.
 */
static int replace_file(const char *path, const char *text, size_t len)
{
	char real[PATH_MAX];

	if (!realpath(path, real)) {
		char dir[PATH_MAX], *slash;

		snprintf(real, sizeof(real), "%s", path);
		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			if (mkdir(dir, 0755) < 0 && errno != EEXIST)
				return -errno;
		}
	}
	return nginx_ctl_write_file(real, text, len, 0644);
}

/* ---- the journal: STATE_DIR/setup/N/{manifest, I.orig, I.new} ------------------------------------------- */

static int journal_dirs(const char *base, long *ids, size_t max, size_t *n)
{
	DIR *d = opendir(base);
	struct dirent *de;

	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		int64_t id;

		if (str_to_i64(de->d_name, 1, 1000000, &id) == 0 && *n < max)
			ids[(*n)++] = (long)id;
	}
	closedir(d);
	/* Newest first. */
	for (size_t i = 1; i < *n; i++)
		for (size_t k = i; k > 0 && ids[k - 1] < ids[k]; k--) {
			long t = ids[k];

			ids[k] = ids[k - 1];
			ids[k - 1] = t;
		}
	return 0;
}

/* Copy every file of PLAN, before and after, into a new journal directory, the manifest last and fsync'd. */
static int journal_write(const char *state_dir, const struct setup_plan *plan, char *dir, size_t dirlen, char *err,
			 size_t errlen)
{
	char base[PATH_MAX - 32], path[PATH_MAX + 64];
	long ids[64];
	size_t n;
	struct sbuf m;
	int r;

	snprintf(base, sizeof(base), "%s/setup", state_dir);
	if (mkdir(state_dir, 0750) < 0 && errno != EEXIST)
		goto fail_errno;
	if (mkdir(base, 0700) < 0 && errno != EEXIST)
		goto fail_errno;
	r = journal_dirs(base, ids, 64, &n);
	if (r < 0) {
		str_err(err, errlen, "%s: %s", base, strerror(-r));
		return r;
	}
	snprintf(dir, dirlen, "%s/%ld", base, n ? ids[0] + 1 : 1);
	if (mkdir(dir, 0700) < 0)
		goto fail_errno;
	sbuf_init(&m);
	for (size_t i = 0; i < plan->n; i++) {
		const struct setup_edit *e = &plan->edits[i];

		sbuf_printf(&m, "%zu\t%d\t%s\n", i, e->text_old ? 1 : 0, e->path);
		snprintf(path, sizeof(path), "%s/%zu.new", dir, i);
		r = nginx_ctl_write_file(path, e->text_new, e->len_new, 0600);
		if (r == 0 && e->text_old) {
			snprintf(path, sizeof(path), "%s/%zu.orig", dir, i);
			r = nginx_ctl_write_file(path, e->text_old, e->len_old, 0600);
		}
		if (r < 0) {
			sbuf_free(&m);
			str_err(err, errlen, "journal %s: %s", path, strerror(-r));
			return r;
		}
	}
	snprintf(path, sizeof(path), "%s/manifest", dir);
	r = m.oom ? -ENOMEM : nginx_ctl_write_file(path, sbuf_str(&m), m.len, 0600);
	sbuf_free(&m);
	if (r < 0) {
		str_err(err, errlen, "journal %s: %s", path, strerror(-r));
		return r;
	}
	return 0;
fail_errno:
	r = -errno;
	str_err(err, errlen, "journal under %s: %s", base, strerror(errno));
	return r;
}

static void journal_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[PATH_MAX + 300];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* ---- nginx after the files changed ------------------------------------------------------------------------ */

/* SIGHUP to the running master; 1 when none runs (the files take effect when it starts). */
static int reload_nginx(const struct target *t, const struct config *cfg, FILE *out)
{
	if (t->pid <= 0) {
		fprintf(out, "nginx is not running (no live master in %s): the new configuration takes effect when it "
			     "starts\n", cfg->pid_file);
		return 1;
	}
	if (!nginx_ctl_real_root(&t->env)) {
		fprintf(out, "nginx master %d is under --root %s: not signalled\n", (int)t->pid, cfg->root);
		return 1;
	}
	if (kill(t->pid, SIGHUP) < 0)
		return -errno;
	fprintf(out, "nginx reloaded (SIGHUP to master %d)\n", (int)t->pid);
	return 0;
}

/* Fetch URL, from nginx's network namespace, until it answers 200: the reload took and stub_status is served. */
static int wait_status(const struct target *t, const char *url, char *err, size_t errlen)
{
	struct stubhttp *h;
	char body[2048], why[256] = "";
	struct timespec pause = {.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000};
	int status = 0, r;
	size_t len;

	r = stubhttp_new(url, &h, err, errlen);
	if (r < 0)
		return r;
	for (int i = 0; i < STATUS_TRIES; i++) {
		r = stubhttp_get(h, t->netns, 0, 500, body, sizeof(body), &len, &status, why, sizeof(why));
		if (r == 0 && status == 200)
			break;
		nanosleep(&pause, NULL);
	}
	stubhttp_free(h);
	if (r == 0 && status == 200)
		return 0;
	str_err(err, errlen, "%s does not answer after the reload (%s%s)", url,
		r < 0 ? why : status ? "not HTTP 200" : "no answer",
		t->netns >= 0 ? ", asked in nginx's namespace" : "");
	return r < 0 ? r : -EPROTO;
}

/* ---- the plan's inputs ----------------------------------------------------------------------------------- */

/* Whether 127.0.0.1:PORT can be bound in nginx's network namespace (T's; the setup's own without a master). */
static bool port_free(const struct target *t, uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd, saved = -1;
	bool ok = false;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (t->netns >= 0 && netns_enter(t->netns, &saved) < 0)
		return false;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (netns_leave(saved) < 0)
		abort(); /* the setup left in nginx's namespace would check and write the wrong things from here on */
	if (fd >= 0) {
		ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
	}
	return ok;
}

/* The stub_status port: the one agent.conf already names on 127.0.0.1 (a second run), else a free one. */
static uint16_t status_port(const struct target *t, const struct config *cfg, const struct nginx_conf *c)
{
	struct nginx_listen *ls = NULL;
	size_t n = 0;
	unsigned port;
	char path[64];
	char err[256];

	if (sscanf(cfg->stub_status_url, "http://127.0.0.1:%u%63s", &port, path) == 2 && port > 0 && port < 65536 &&
	    strcmp(path, SETUP_STATUS_PATH) == 0)
		return (uint16_t)port;
	nginx_conf_listens(c, &ls, &n, err, sizeof(err));
	for (port = PORT_FIRST; port <= PORT_LAST; port++) {
		bool used = false;

		for (size_t i = 0; i < n && !used; i++)
			used = ls[i].port == port;
		/* Something other than nginx may hold it: try. */
		if (!used && port_free(t, (uint16_t)port))
			break;
	}
	free(ls);
	return port <= PORT_LAST ? (uint16_t)port : 0;
}

/* The access log the agent reads once set up: its own file beside the one agent.conf names. */
static void agent_log(const struct config *cfg, char *out, size_t outlen)
{
	const char *slash = strrchr(cfg->access_log, '/');

	if (slash && strcmp(slash + 1, "ngx-autotune.log") == 0)
		snprintf(out, outlen, "%s", cfg->access_log);
	else if (slash)
		snprintf(out, outlen, "%.*s/ngx-autotune.log", (int)(slash - cfg->access_log), cfg->access_log);
	else
		snprintf(out, outlen, "/var/log/nginx/ngx-autotune.log");
}

static void print_diff(FILE *out, const struct setup_edit *e)
{
	char a[] = "/tmp/ngxat-setup-a.XXXXXX", b[] = "/tmp/ngxat-setup-b.XXXXXX";
	int fa = mkstemp(a), fb = mkstemp(b);
	char la[4200], lb[4200];

	if (fa >= 0 && fb >= 0 && (!e->text_old || write(fa, e->text_old, e->len_old) == (ssize_t)e->len_old) &&
	    write(fb, e->text_new, e->len_new) == (ssize_t)e->len_new) {
		pid_t pid;

		snprintf(la, sizeof(la), "%s%s", e->text_old ? "a" : "/dev/null", e->text_old ? e->path : "");
		snprintf(lb, sizeof(lb), "b%s", e->path);
		fflush(out);
		pid = fork();
		if (pid == 0) {
			dup2(fileno(out), 1);
			execlp("diff", "diff", "-u", "--label", la, "--label", lb, a, b, (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	unlink(a);
	unlink(b);
}

/* ---- setup ------------------------------------------------------------------------------------------------ */

/* Remove a file the setup created, and its directory once empty (the include directory it made; rmdir fails
 * while anything else is in it). */
static int remove_created(const char *path)
{
	char dir[PATH_MAX], *slash;

	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		rmdir(dir);
	}
	return 0;
}

static void restore(const struct setup_plan *plan, size_t upto)
{
	for (size_t i = upto; i-- > 0;) {
		const struct setup_edit *e = &plan->edits[i];

		if (e->text_old)
			replace_file(e->path, e->text_old, e->len_old);
		else
			remove_created(e->path);
	}
}

int setup_run(const struct setup_opts *o, char *err, size_t errlen)
{
	const struct config *cfg = o->cfg;
	struct setup_plan *plan = calloc(1, sizeof(*plan));
	struct setup_params p = {.include_dir = cfg->include_dir};
	struct nginx_conf c = {0};
	struct target t;
	char log[CONFIG_PATH_MAX], url[128], dir[PATH_MAX], *conf_text = NULL, *text, *dump = NULL, *out;
	size_t conf_len = 0, len, dump_len, written = 0;
	int r;

	if (!plan)
		return -ENOMEM;
	r = target_find(o, true, "the setup works on it and the files it includes", &t, err, errlen);
	if (r < 0) {
		str_err(err + strlen(err), errlen - strlen(err), ": nothing changed");
		goto out_dump;
	}
	r = nginx_run(&t, "-T", &dump, &dump_len, err, errlen);
	if (r < 0)
		goto out_dump;
	r = nginx_conf_parse(dump, dump_len, &c, err, errlen);
	if (r < 0)
		goto out_dump;
	/* The binary of [nginx] binary could read another file than the master's: never edit that one. */
	if (t.pid > 0 && !same_file(c.files[0].path, t.run.conf)) {
		str_err(err, errlen, "nginx -T (%s) read %s, not %s that master %d runs: nothing changed",
			t.env.nginx_bin, c.files[0].path, t.run.conf, (int)t.pid);
		r = -EINVAL;
		goto out_conf;
	}
	agent_log(cfg, log, sizeof(log));
	p.agent_log = log;
	p.status_port = status_port(&t, cfg, &c);
	if (!p.status_port) {
		str_err(err, errlen, "no free loopback port in %d..%d for the stub_status server", PORT_FIRST, PORT_LAST);
		r = -EADDRINUSE;
		goto out_conf;
	}
	r = setup_plan_nginx(&c, &p, plan, err, errlen);
	if (r < 0)
		goto out_conf;
	/* agent.conf follows what nginx gets: where stub_status and the agent's log are. */
	r = read_file(o->config_path, &conf_text, &conf_len);
	if (r == -ENOENT) {
		conf_text = strdup("");
		r = conf_text ? 0 : -ENOMEM;
	}
	if (r < 0) {
		str_err(err, errlen, "%s: %s", o->config_path, strerror(-r));
		goto out_conf;
	}
	text = conf_text;
	len = conf_len;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)p.status_port, SETUP_STATUS_PATH);
	for (int k = 0; k < 2 && r == 0; k++) {
		const char *key = k ? "access_log" : "stub_status_url", *val = k ? log : url;
		bool wanted = k ? plan->adds_log : plan->adds_status;
		char *next;
		size_t nlen;

		if (!wanted || strcmp(k ? cfg->access_log : cfg->stub_status_url, val) == 0)
			continue;
		r = setup_ini_set(text, len, "nginx", key, val, &next, &nlen);
		if (r == 0) {
			if (text != conf_text)
				free(text);
			text = next;
			len = nlen;
		}
	}
	if (r == 0 && text != conf_text)
		r = setup_plan_add(plan, o->config_path, r == 0 && conf_len ? conf_text : NULL, conf_len, text, len);
	if (text != conf_text)
		free(text);
	if (r < 0) {
		str_err(err, errlen, "planning: %s", strerror(-r));
		goto out_conf;
	}

	for (size_t i = 0; i < plan->nnotes; i++)
		fprintf(o->out, "note: %s\n", plan->notes[i]);
	if (plan->n == 0) {
		fprintf(o->out, "nginx is set up for the agent already: nothing to change\n");
		goto out_conf;
	}
	for (size_t i = 0; i < plan->n; i++)
		print_diff(o->out, &plan->edits[i]);
	if (!o->apply) {
		fprintf(o->out, "%zu file(s) would change; run again with --apply to write them (each is backed up "
				"first; ngxctl revert --setup puts them back)\n", plan->n);
		goto out_conf;
	}
	r = journal_write(o->state_dir, plan, dir, sizeof(dir), err, errlen);
	if (r < 0)
		goto out_conf;
	for (; written < plan->n; written++) {
		r = replace_file(plan->edits[written].path, plan->edits[written].text_new, plan->edits[written].len_new);
		if (r < 0) {
			str_err(err, errlen, "write %s: %s (every file put back)", plan->edits[written].path,
				strerror(-r));
			break;
		}
	}
	if (r == 0) {
		r = nginx_run(&t, "-t", &out, &len, err, errlen);
		if (r < 0)
			str_err(err + strlen(err), errlen - strlen(err), " (every file put back)");
		free(out);
	}
	if (r < 0) {
		restore(plan, written < plan->n ? written + 1 : plan->n);
		journal_remove(dir);
		goto out_conf;
	}
	fprintf(o->out, "%zu file(s) written, the originals journaled in %s; nginx -t passed\n", plan->n, dir);
	r = reload_nginx(&t, cfg, o->out);
	if (r < 0) {
		str_err(err, errlen, "reload: %s", strerror(-r));
		goto out_conf;
	}
	if (r == 0 && plan->adds_status) {
		r = wait_status(&t, url, err, errlen);
		if (r < 0)
			goto out_conf;
		fprintf(o->out, "stub_status answers at %s\n", url);
	}
	r = 0;
	for (size_t i = 0; i < plan->n; i++)
		if (strcmp(plan->edits[i].path, o->config_path) == 0)
			fprintf(o->out, "%s changed: reload the agent (systemctl reload ngx-autotune)\n", o->config_path);
out_conf:
	nginx_conf_free(&c);
out_dump:
	free(dump);
	target_free(&t);
	free(conf_text);
	setup_plan_free(plan);
	free(plan);
	return r;
}

/* ---- revert ----------------------------------------------------------------------------------------------- */

struct entry {
	size_t i;
	bool existed;
	char path[PATH_MAX];
};

static int read_manifest(const char *dir, struct entry *e, size_t max, size_t *n)
{
	char path[PATH_MAX + 64], *text, *line, *save = NULL;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%s/manifest", dir);
	r = read_file(path, &text, &len);
	if (r < 0)
		return r;
	*n = 0;
	for (line = strtok_r(text, "\n", &save); line && *n < max; line = strtok_r(NULL, "\n", &save)) {
		unsigned long i;
		int existed, off = 0;

		if (sscanf(line, "%lu\t%d\t%n", &i, &existed, &off) < 2 || off == 0)
			continue;
		e[*n].i = i;
		e[*n].existed = existed == 1;
		snprintf(e[*n].path, sizeof(e[*n].path), "%s", line + off);
		(*n)++;
	}
	free(text);
	return 0;
}

int setup_revert(const struct setup_opts *o, char *err, size_t errlen)
{
	char base[PATH_MAX], dir[PATH_MAX + 32], path[PATH_MAX + 64];
	struct entry e[SETUP_EDITS_MAX];
	long ids[64];
	size_t nids, n, restored = 0, len;
	struct target t;
	char *out = NULL;
	int r;

	snprintf(base, sizeof(base), "%s/setup", o->state_dir);
	r = journal_dirs(base, ids, 64, &nids);
	if (r < 0) {
		str_err(err, errlen, "%s: %s", base, strerror(-r));
		return r;
	}
	if (nids == 0) {
		fprintf(o->out, "no setup journaled in %s: nothing to put back\n", base);
		return 0;
	}
	for (size_t k = 0; k < nids; k++) {
		snprintf(dir, sizeof(dir), "%s/%ld", base, ids[k]);
		r = read_manifest(dir, e, SETUP_EDITS_MAX, &n);
		if (r < 0) {
			str_err(err, errlen, "%s/manifest: %s", dir, strerror(-r));
			return r;
		}
		/* Never undo an operator's later edit silently: every file must still be what the setup wrote. */
		for (size_t i = 0; i < n && !o->force; i++) {
			char *now = NULL, *wrote = NULL;
			size_t nlen = 0, wlen = 0;
			bool same;

			snprintf(path, sizeof(path), "%s/%zu.new", dir, e[i].i);
			if (read_file(path, &wrote, &wlen) < 0) {
				str_err(err, errlen, "%s: missing from the journal", path);
				return -EIO;
			}
			same = read_file(e[i].path, &now, &nlen) == 0 && nlen == wlen && memcmp(now, wrote, wlen) == 0;
			free(now);
			free(wrote);
			if (!same) {
				str_err(err, errlen, "%s changed since the setup wrote it: nothing put back (--force puts the "
					"original back over that change)", e[i].path);
				return -EBUSY;
			}
		}
		for (size_t i = n; i-- > 0;) {
			char *orig = NULL;
			size_t olen = 0;

			if (!e[i].existed) {
				r = remove_created(e[i].path);
				if (r < 0) {
					str_err(err, errlen, "remove %s: %s", e[i].path, strerror(-r));
					return r;
				}
				fprintf(o->out, "removed %s\n", e[i].path);
				restored++;
				continue;
			}
			snprintf(path, sizeof(path), "%s/%zu.orig", dir, e[i].i);
			r = read_file(path, &orig, &olen);
			if (r == 0)
				r = replace_file(e[i].path, orig, olen);
			free(orig);
			if (r < 0) {
				str_err(err, errlen, "put back %s: %s", e[i].path, strerror(-r));
				return r;
			}
			fprintf(o->out, "put back %s\n", e[i].path);
			restored++;
		}
		journal_remove(dir);
	}
	/* Whatever agent.conf says now, nginx -t tests what the running master would reload. */
	r = target_find(o, false, "nginx -t tests it", &t, err, errlen);
	if (r == 0) {
		r = nginx_run(&t, "-t", &out, &len, err, errlen);
		free(out);
	}
	if (r < 0) {
		str_err(err + strlen(err), errlen - strlen(err), " (after %zu file(s) were put back as they were)",
			restored);
		target_free(&t);
		return r;
	}
	fprintf(o->out, "%zu file(s) put back as they were; nginx -t passed\n", restored);
	r = reload_nginx(&t, o->cfg, o->out);
	target_free(&t);
	return r < 0 ? r : 0;
}
