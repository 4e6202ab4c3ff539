#include "config.h"

#include <errno.h>
#include <ini.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proto.h"
#include "strutil.h"
#include "trust.h"

enum key_type {
	K_PATH, K_PATH_OPT, K_URL, K_DURATION, K_MODE, K_NAME, K_LEVEL, K_BOOL, K_INT, K_TUNING, K_MEASURE, K_COMMAND,
	K_LISTEN, K_HTTP_URL, K_SIZE, K_URL_LIST
};

struct key {
	const char *section, *name;
	enum key_type type;
	size_t off;
	int64_t lo, hi; /* durations, in ms; sizes, in bytes */
};

#define F(field) offsetof(struct config, field)

static const struct key keys[] = {
	{"agent", "tick_interval", K_DURATION, F(tick_ms), 100, 10000}, /* WatchdogSec=30s: 3 ticks */
	{"agent", "root", K_PATH, F(root), 0, 0},
	{"agent", "socket", K_PATH, F(socket_path), 0, 0},
	{"agent", "socket_mode", K_MODE, F(socket_mode), 0, 0},
	{"agent", "socket_group", K_NAME, F(socket_group), 0, 0},
	{"agent", "log_level", K_LEVEL, F(log_level), 0, 0},
	{"agent", "dry_run", K_BOOL, F(dry_run), 0, 0},
	{"agent", "revert_on_stop", K_BOOL, F(revert_on_stop), 0, 0},
	{"agent", "writer", K_BOOL, F(writer), 0, 0},
	{"agent", "user", K_NAME, F(engine_user), 0, 0},
	{"agent", "writer_dir", K_PATH_OPT, F(writer_dir), 0, 0},
	{"agent", "writer_socket", K_PATH_OPT, F(writer_socket), 0, 0},
	{"policies", "dir", K_PATH, F(policy_dir), 0, 0},
	{"policies", "override_dir", K_PATH_OPT, F(policy_override_dir), 0, 0},
	{"store", "path", K_PATH, F(store_path), 0, 0},
	{"store", "frames_retention", K_DURATION, F(frames_retention_ms), 60000, 366LL * 86400000},
	{"store", "rollups_retention", K_DURATION, F(rollups_retention_ms), 3600000, 3660LL * 86400000},
	{"store", "audit_retention", K_DURATION, F(audit_retention_ms), 86400000, 3660LL * 86400000},
	{"store", "denied_retention", K_DURATION, F(denied_retention_ms), 3600000, 3660LL * 86400000},
	{"nginx", "pid_file", K_PATH_OPT, F(pid_file), 0, 0},
	{"nginx", "stub_status_url", K_URL, F(stub_status_url), 0, 0},
	{"nginx", "stub_status_timeout", K_DURATION, F(stub_status_timeout_ms), 10, 10000},
	{"nginx", "access_log", K_PATH_OPT, F(access_log), 0, 0},
	{"nginx", "error_log", K_PATH_OPT, F(error_log), 0, 0},
	{"nginx", "binary", K_PATH, F(nginx_bin), 0, 0},
	{"nginx", "conf", K_PATH_OPT, F(nginx_conf), 0, 0},
	{"nginx", "include_dir", K_PATH, F(include_dir), 0, 0},
	{"nginx", "timeout", K_DURATION, F(nginx_timeout_ms), 100, 120000},
	/* Up to NGINX_CONF_DUMP_MAX (agent/act/nginx_conf.h), the most the parser takes. */
	{"nginx", "dump_max", K_SIZE, F(nginx_dump_max), 64 << 10, 64 << 20},
	{"nginx", "memory_max", K_SIZE, F(nginx_memory_max), 8 << 20, 16LL << 30},
	{"tuning", "mode", K_TUNING, F(mode), 0, 0},
	{"tuning", "changes_per_hour", K_INT, F(changes_per_hour), 1, 60},
	{"tuning", "cooldown", K_DURATION, F(cooldown_ms), 0, 86400000},
	{"tuning", "window", K_DURATION, F(window_ms), 1000, 86400000},
	{"tuning", "pairs", K_INT, F(pairs), 4, 16},
	{"tuning", "block", K_DURATION, F(block_ms), 1000, 3600000},
	{"tuning", "calibrate_pairs", K_INT, F(calibrate_pairs), 0, 16},
	{"tuning", "measure", K_MEASURE, F(measure), 0, 0},
	{"loadgen", "command", K_COMMAND, F(loadgen_command), 0, 0},
	{"loadgen", "run", K_DURATION, F(loadgen_run_ms), 2000, 3600000},
	{"doctor", "interval", K_DURATION, F(doctor_interval_ms), 30000, 86400000},
	{"doctor", "backend_keepalive_timeout", K_DURATION, F(backend_keepalive_ms), 0, 3600000},
	{"fleet", "endpoints", K_URL_LIST, F(fleet_endpoints), 0, 0},
	{"fleet", "pool", K_NAME, F(fleet_pool), 0, 0},
	{"fleet", "host", K_NAME, F(fleet_host), 0, 0},
	{"fleet", "max_in_trial", K_INT, F(fleet_max_in_trial), 1, 64},
	{"fleet", "rollout", K_BOOL, F(fleet_rollout), 0, 0},
	{"fleet", "lease_ttl", K_DURATION, F(fleet_lease_ttl_ms), 2000, 60000},
	{"fleet", "ca", K_PATH_OPT, F(fleet_ca), 0, 0},
	{"fleet", "cert", K_PATH_OPT, F(fleet_cert), 0, 0},
	{"fleet", "key", K_PATH_OPT, F(fleet_key), 0, 0},
	{"fleet", "user", K_NAME, F(fleet_user), 0, 0},
	{"fleet", "password_file", K_PATH_OPT, F(fleet_password_file), 0, 0},
	{"api", "listen", K_LISTEN, F(api_listen), 0, 0},
	{"api", "listen_any", K_BOOL, F(api_listen_any), 0, 0},
	{"api", "token_file", K_PATH_OPT, F(api_token_file), 0, 0},
	{"probes", "netlink", K_BOOL, F(probe_netlink), 0, 0},
	{"probes", "interrupts", K_BOOL, F(probe_interrupts), 0, 0},
	{"probes", "workers", K_BOOL, F(probe_workers), 0, 0},
	{"client", "enabled", K_BOOL, F(client_enabled), 0, 0},
	{"client", "url", K_HTTP_URL, F(client_url), 0, 0},
	{"client", "requests_per_tick", K_INT, F(client_requests), 1, CONFIG_CLIENT_REQUESTS_MAX},
	/* Client timings are kept in a microsecond histogram that ends at about 4.2 s. */
	{"client", "timeout", K_DURATION, F(client_timeout_ms), 10, 4000},
};

void config_default(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->tick_ms = 1000;
	strcpy(cfg->root, "/");
	strcpy(cfg->socket_path, NGXAT_DEFAULT_SOCKET);
	cfg->socket_mode = 0660;
	strcpy(cfg->socket_group, "ngx-autotune");
	cfg->log_level = LOG_INFO;
	strcpy(cfg->store_path, "/var/lib/ngx-autotune/ngx-autotune.db");
	cfg->frames_retention_ms = 48LL * 3600 * 1000;
	cfg->rollups_retention_ms = 90LL * 86400 * 1000;
	cfg->audit_retention_ms = 365LL * 86400 * 1000;
	cfg->denied_retention_ms = 7LL * 86400 * 1000;
	strcpy(cfg->pid_file, "/run/nginx.pid");
	strcpy(cfg->stub_status_url, "http://127.0.0.1/nginx_status");
	cfg->stub_status_timeout_ms = 400;
	strcpy(cfg->access_log, "/var/log/nginx/access.log");
	strcpy(cfg->error_log, "/var/log/nginx/error.log");
	strcpy(cfg->nginx_bin, "/usr/sbin/nginx");
	strcpy(cfg->include_dir, "/etc/nginx/ngx-autotune");
	cfg->nginx_timeout_ms = 10000;
	cfg->nginx_dump_max = CONFIG_NGINX_DUMP_MAX;
	cfg->nginx_memory_max = CONFIG_NGINX_MEMORY_MAX;
	snprintf(cfg->policy_dir, sizeof(cfg->policy_dir), "%s", NGXAT_POLICY_DIR);
	strcpy(cfg->policy_override_dir, "/etc/ngx-autotune/policies.d");
	strcpy(cfg->mode, "propose");
	cfg->changes_per_hour = 2;
	cfg->cooldown_ms = 60000;
	cfg->pairs = 8;
	cfg->block_ms = 90000;
	cfg->calibrate_pairs = 4;
	strcpy(cfg->measure, "passive");
	cfg->loadgen_run_ms = 10000;
	cfg->doctor_interval_ms = 300000;
	cfg->backend_keepalive_ms = 0;
	strcpy(cfg->api_token_file, "/etc/ngx-autotune/api.tokens");
	cfg->writer = true;
	cfg->probe_netlink = true;
	cfg->probe_interrupts = true;
	cfg->probe_workers = true;
	cfg->client_enabled = true;
	cfg->client_requests = 4;
	cfg->client_timeout_ms = 500;
	cfg->fleet_max_in_trial = 1;
	cfg->fleet_lease_ttl_ms = 10000;
}

/* A name that is one component of an etcd key: [A-Za-z0-9._-], not "." or "..". */
static bool key_name(const char *s)
{
	return s[0] && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(s) &&
	       strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

struct load_ctx {
	struct config *cfg;
	FILE *f;
	char *buf;    /* getline's buffer */
	size_t cap;
	int line;     /* line the reader handed to inih last */
	int err_line; /* line of our first error */
	int listen_line; /* line of [api] listen, for the check that needs listen_any too */
	char msg[200];
};

static void record_error(struct load_ctx *ctx, const char *msg)
{
	if (ctx->err_line)
		return;
	ctx->err_line = ctx->line;
	snprintf(ctx->msg, sizeof(ctx->msg), "%s", msg);
}

/*
 * inih calls the reader for each line with a buffer of its own fixed size. Reading whole lines here keeps the line
 * count right (the handler reports FILE:LINE from it) and turns a line too long for inih into an error of its own
 * instead of a split line.
 */
static char *reader(char *str, int num, void *stream)
{
	struct load_ctx *ctx = stream;
	ssize_t len = getline(&ctx->buf, &ctx->cap, ctx->f);
	char msg[64];

	if (len < 0)
		return NULL;
	ctx->line++;
	/* inih would end the value at the NUL and take the rest of the line for nothing. */
	if (memchr(ctx->buf, '\0', (size_t)len)) {
		record_error(ctx, "a NUL byte in the line");
		snprintf(str, (size_t)num, "\n");
		return str;
	}
	if (len >= num) {
		snprintf(msg, sizeof(msg), "line longer than %d characters", num - 2);
		record_error(ctx, msg);
		snprintf(str, (size_t)num, "\n");
		return str;
	}
	memcpy(str, ctx->buf, (size_t)len + 1);
	return str;
}

static int set_key(struct config *cfg, const struct key *k, const char *value, char *msg, size_t msglen)
{
	char *field = (char *)cfg + k->off;
	int r = 0;

	switch (k->type) {
	case K_PATH:
		if (!value[0])
			return snprintf(msg, msglen, "%s: must not be empty", k->name), -EINVAL;
		/* fall through */
	case K_PATH_OPT:
		if (value[0] && value[0] != '/')
			return snprintf(msg, msglen, "%s: must be an absolute path", k->name), -EINVAL;
		/* fall through */
	case K_HTTP_URL:
		/* The synthetic client speaks plain HTTP itself (no libcurl): it times connect and first byte. A list of
		 * URLs separated by blanks (which a URL cannot hold). */
		if (k->type == K_HTTP_URL) {
			size_t n = 0;

			for (const char *p = value + strspn(value, " \t"); *p; p += strspn(p, " \t"), n++) {
				if (strncmp(p, "http://", 7) != 0)
					return snprintf(msg, msglen, "%s: '%.*s' is not an http:// URL (or leave it empty: "
							"the locations nginx serves)", k->name, (int)strcspn(p, " \t"), p),
					       -EINVAL;
				p += strcspn(p, " \t");
			}
			if (n > CONFIG_CLIENT_URLS_MAX)
				return snprintf(msg, msglen, "%s: %zu URLs, at most %d", k->name, n, CONFIG_CLIENT_URLS_MAX),
				       -EINVAL;
		}
		/* fall through */
	case K_URL_LIST:
		/* etcd's endpoints: http:// or https:// URLs separated by blanks. */
		if (k->type == K_URL_LIST) {
			size_t n = 0;

			for (const char *p = value + strspn(value, " \t"); *p; p += strspn(p, " \t"), n++) {
				if (strncmp(p, "http://", 7) != 0 && strncmp(p, "https://", 8) != 0)
					return snprintf(msg, msglen, "%s: '%.*s' is not an http:// or https:// URL", k->name,
							(int)strcspn(p, " \t"), p), -EINVAL;
				p += strcspn(p, " \t");
			}
			if (n > CONFIG_FLEET_ENDPOINTS_MAX)
				return snprintf(msg, msglen, "%s: %zu URLs, at most %d", k->name, n,
						CONFIG_FLEET_ENDPOINTS_MAX), -EINVAL;
		}
		/* fall through */
	case K_URL:
	case K_NAME:
		if (k->type == K_URL && value[0] && strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0)
			return snprintf(msg, msglen, "%s: must be an http:// or https:// URL (or empty)", k->name), -EINVAL;
		if (str_copy(field, k->type == K_NAME ? sizeof(cfg->socket_group) : CONFIG_PATH_MAX, value) < 0)
			return snprintf(msg, msglen, "%s: value too long", k->name), -EINVAL;
		return 0;
	case K_DURATION:
		r = str_to_duration_ms(value, k->lo, k->hi, (int64_t *)(void *)field);
		if (r < 0)
			snprintf(msg, msglen, "%s: '%s' is not a duration between %lldms and %lldms (e.g. 500ms, 2s, 48h, 90d)",
				 k->name, value, (long long)k->lo, (long long)k->hi);
		return r;
	case K_SIZE:
		r = str_to_size(value, k->lo, k->hi, (int64_t *)(void *)field);
		if (r < 0)
			snprintf(msg, msglen, "%s: '%s' is not a size from %lldK to %lldM (e.g. 65536, 512K, 8M)", k->name,
				 value, (long long)(k->lo >> 10), (long long)(k->hi >> 20));
		return r;
	case K_MODE:
		r = str_to_mode(value, (unsigned *)(void *)field);
		if (r < 0)
			snprintf(msg, msglen, "%s: '%s' is not an octal mode (e.g. 0660)", k->name, value);
		return r;
	case K_LEVEL:
		r = log_level_parse(value, (int *)(void *)field);
		if (r < 0)
			snprintf(msg, msglen, "%s: '%s' is not one of error, warning, notice, info, debug", k->name, value);
		return r;
	case K_INT:
		r = str_to_i64(value, k->lo, k->hi, (int64_t *)(void *)field);
		/* An A/A calibration needs at least 3 pairs to say anything; 0 turns it off. */
		if (r == 0 && strcmp(k->name, "calibrate_pairs") == 0 && *(int64_t *)(void *)field > 0 &&
		    *(int64_t *)(void *)field < 3)
			return snprintf(msg, msglen, "%s: 0 (none) or 3 to 16", k->name), -EINVAL;
		if (r < 0)
			snprintf(msg, msglen, "%s: '%s' is not a whole number from %lld to %lld", k->name, value,
				 (long long)k->lo, (long long)k->hi);
		return r;
	case K_TUNING:
		if (strcmp(value, "observe") != 0 && strcmp(value, "propose") != 0 && strcmp(value, "auto") != 0)
			return snprintf(msg, msglen, "%s: '%s' is not observe, propose or auto", k->name, value), -EINVAL;
		snprintf(field, 16, "%s", value);
		return 0;
	case K_MEASURE:
		if (strcmp(value, "passive") != 0 && strcmp(value, "loadgen") != 0)
			return snprintf(msg, msglen, "%s: '%s' is not passive or loadgen", k->name, value), -EINVAL;
		snprintf(field, 16, "%s", value);
		return 0;
	case K_COMMAND:
		/* Run without a shell: its words are split on blanks, and the run's length goes where {seconds} is. */
		if (!strstr(value, "{seconds}"))
			return snprintf(msg, msglen, "%s: must contain {seconds} (the run's length, e.g. wrk -d{seconds}s)",
					k->name), -EINVAL;
		if (str_copy(field, CONFIG_PATH_MAX, value) < 0)
			return snprintf(msg, msglen, "%s: value too long", k->name), -EINVAL;
		return 0;
	case K_BOOL:
		r = str_to_bool(value, (bool *)(void *)field);
		if (r < 0)
			snprintf(msg, msglen, "%s: '%s' is not yes or no", k->name, value);
		return r;
	case K_LISTEN: {
		struct sockaddr_storage sa;
		unsigned salen;
		bool loopback;

		if (value[0] && str_to_listen(value, &sa, &salen, &loopback) < 0)
			return snprintf(msg, msglen, "%s: '%s' is not ADDRESS:PORT (e.g. 127.0.0.1:9180, [::1]:9180)",
					k->name, value), -EINVAL;
		if (str_copy(field, sizeof(cfg->api_listen), value) < 0)
			return snprintf(msg, msglen, "%s: value too long", k->name), -EINVAL;
		return 0;
	}
	}
	return -EINVAL;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *ctx = user;
	bool section_known = false;
	char msg[sizeof(ctx->msg)];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strcmp(section, keys[i].section) != 0)
			continue;
		section_known = true;
		if (strcmp(name, keys[i].name) == 0) {
			if (keys[i].type == K_LISTEN)
				ctx->listen_line = ctx->line;
			if (set_key(ctx->cfg, &keys[i], value, msg, sizeof(msg)) == 0)
				return 1;
			goto fail;
		}
	}
	if (!section_known)
		snprintf(msg, sizeof(msg), "unknown section [%s] (key %s)", section, name);
	else
		snprintf(msg, sizeof(msg), "unknown key '%s' in section [%s]", name, section);
fail:
	record_error(ctx, msg);
	return 0;
}

int config_load(const char *path, bool must_exist, struct config *cfg, char *err, size_t errlen)
{
	struct load_ctx ctx = {.cfg = cfg};
	int line;

	config_default(cfg);
	ctx.f = fopen(path, "re");
	if (!ctx.f) {
		int e = errno;
		if (e == ENOENT && !must_exist)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	line = ini_parse_stream(reader, &ctx, handler, &ctx);
	fclose(ctx.f);
	free(ctx.buf);
	if (line < 0) {
		snprintf(err, errlen, "%s: cannot read", path);
		return -EIO;
	}
	if (line == 0 && !ctx.err_line) {
		struct sockaddr_storage sa;
		unsigned salen;
		bool loopback = true;

		if (cfg->fleet_endpoints[strspn(cfg->fleet_endpoints, " \t")] &&
		    (!key_name(cfg->fleet_pool) || (cfg->fleet_host[0] && !key_name(cfg->fleet_host)))) {
			snprintf(err, errlen, "%s: [fleet] %s '%s': a name of letters, digits, '.', '_' and '-' is needed", path,
				 key_name(cfg->fleet_pool) ? "host" : "pool",
				 key_name(cfg->fleet_pool) ? cfg->fleet_host : cfg->fleet_pool);
			return -EINVAL;
		}
		if (!cfg->fleet_user[0] != !cfg->fleet_password_file[0] || !cfg->fleet_cert[0] != !cfg->fleet_key[0]) {
			snprintf(err, errlen, "%s: [fleet] %s", path, !cfg->fleet_user[0] != !cfg->fleet_password_file[0]
				 ? "user and password_file go together" : "cert and key go together");
			return -EINVAL;
		}
		/* The window in ticks: at least 10 (a median of fewer says little), at most what a detector holds. */
		if (cfg->window_ms && (cfg->window_ms / cfg->tick_ms < CONFIG_WINDOW_TICKS_MIN ||
				       cfg->window_ms / cfg->tick_ms > CONFIG_WINDOW_TICKS_MAX)) {
			snprintf(err, errlen, "%s: [tuning] window: %lld ms is %lld ticks of %lld ms; %d to %d ticks are "
				 "needed", path, (long long)cfg->window_ms, (long long)(cfg->window_ms / cfg->tick_ms),
				 (long long)cfg->tick_ms, CONFIG_WINDOW_TICKS_MIN, CONFIG_WINDOW_TICKS_MAX);
			return -EINVAL;
		}
		if (strcmp(cfg->measure, "loadgen") == 0 && !cfg->loadgen_command[0]) {
			snprintf(err, errlen, "%s: [tuning] measure = loadgen needs [loadgen] command", path);
			return -EINVAL;
		}
		/* After the whole file: listen_any may come after listen. */
		if (cfg->api_listen[0] && str_to_listen(cfg->api_listen, &sa, &salen, &loopback) == 0 && !loopback &&
		    !cfg->api_listen_any) {
			snprintf(err, errlen, "%s:%d: listen: %s is not a loopback address; anyone who can reach it may read "
				 "the agent's data: set listen_any = yes to allow it", path, ctx.listen_line, cfg->api_listen);
			return -EINVAL;
		}
		return 0;
	}
	if (ctx.err_line && (line == 0 || ctx.err_line <= line))
		snprintf(err, errlen, "%s:%d: %s", path, ctx.err_line, ctx.msg);
	else
		snprintf(err, errlen, "%s:%d: syntax error (expected 'key = value' or '[section]')", path, line);
	return -EINVAL;
}

int config_client_url(const struct config *cfg, size_t i, char *out, size_t outlen)
{
	const char *u = cfg->client_url + strspn(cfg->client_url, " \t"), *auth;
	size_t n;

	if (*u) {
		for (; i > 0 && *u; i--) {
			u += strcspn(u, " \t");
			u += strspn(u, " \t");
		}
		n = strcspn(u, " \t");
		if (n == 0)
			return -ENOENT;
		if (n >= outlen)
			return -ENAMETOOLONG;
		memcpy(out, u, n);
		out[n] = '\0';
		return 0;
	}
	u = cfg->stub_status_url;
	auth = strstr(u, "://");
	if (i > 0 || !u[0] || !auth)
		return -ENOENT;
	/* The host and port stub_status answers on are nginx's; "/" is what a client of that server asks first. */
	auth += 3;
	n = (size_t)(auth - u) + strcspn(auth, "/?#");
	if (n + 2 > outlen)
		return -ENAMETOOLONG;
	memcpy(out, u, n);
	memcpy(out + n, "/", 2);
	return 0;
}

/* ---- trust of the files the configuration names ------------------------------------------------------------ */

static int trust_owner = -1; /* besides root, who may own them: -1, the effective user */

void config_trust_owner(uid_t uid)
{
	trust_owner = (int)uid;
}

static uid_t owner(void)
{
	return trust_owner >= 0 ? (uid_t)trust_owner : geteuid();
}

/* A program the agent runs as root: the file it resolves to, every link on the way followed only when trusted (the
 * package manager's alternatives are root's links), so what is checked is the file that runs. A missing program is
 * not a trust problem: running it fails, and says so. */
static int check_program(const char *name, const char *because, char *err, size_t errlen)
{
	char found[CONFIG_PATH_MAX];
	int r;

	if (trust_find_program(name, found, sizeof(found)) < 0)
		return 0;
	r = trust_walk(found, owner(), TRUST_FOLLOW | TRUST_MAY_BE_ABSENT, because, NULL, err, errlen);
	return r < 0 ? r : 0;
}

int config_check_trust(const struct config *cfg, const char *path, char *err, size_t errlen)
{
	static const char runs[] = "it decides what the agent runs or writes as root";
	const struct {
		const char *path, *because;
	} files[] = {
		{path, runs},
		{cfg->include_dir, "nginx runs as root what the agent writes there"},
	};
	char word[CONFIG_PATH_MAX];
	int r;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (files[i].path[0] && (r = trust_check_path(files[i].path, owner(), true,
							      files[i].because, err, errlen)) < 0)
			return r;
	if (cfg->nginx_bin[0] && (r = check_program(cfg->nginx_bin, runs, err, errlen)) < 0)
		return r;
	if (cfg->loadgen_command[0]) {
		snprintf(word, sizeof(word), "%.*s", (int)strcspn(cfg->loadgen_command, " \t"), cfg->loadgen_command);
		if ((r = check_program(word, runs, err, errlen)) < 0)
			return r;
	}
	return 0;
}
