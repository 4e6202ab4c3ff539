/*
 * config: the agent's configuration file (INI, /etc/ngx-autotune/agent.conf by default).
 *
 * Every key is optional and has a default; unknown sections or keys, and values out of range, are errors
 * reported as "FILE:LINE: message". Loading fills a fresh struct and leaves the caller's current one untouched
 * on failure, so a reload can keep the old configuration. Also read by ngxctl for the socket path.
 */
#ifndef NGXAT_CONFIG_H
#define NGXAT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CONFIG_PATH_MAX 512
#define CONFIG_CLIENT_REQUESTS_MAX 32 /* [client] requests_per_tick */
#define CONFIG_CLIENT_URLS_MAX 4      /* URLs in [client] url */
#define CONFIG_WINDOW_TICKS_MIN 10    /* [tuning] window, in ticks */
#define CONFIG_WINDOW_TICKS_MAX 3600  /* DETECT_WINDOW_MAX (agent/core/detect.h) */
/*
 * [nginx] dump_max and memory_max by default: the agent with the largest dump it keeps and one nginx -T or -t it
 * runs (in the unit's cgroup, whose MemoryMax=64M counts both) stay below 64 MiB with room to spare (measured:
 * bench/big-conf.sh; the figures in ngx-autotune.conf(5)).
 */
#define CONFIG_NGINX_DUMP_MAX (4 << 20)
#define CONFIG_NGINX_MEMORY_MAX (32 << 20)

struct config {
	/* [agent] */
	int64_t tick_ms;                    /* tick interval */
	char root[CONFIG_PATH_MAX];         /* prefix of every /proc and /sys path */
	char socket_path[CONFIG_PATH_MAX];  /* API Unix socket */
	unsigned socket_mode;               /* its mode */
	char socket_group[64];              /* its group ("" = the agent's) */
	int log_level;                      /* syslog priority */
	bool dry_run;                       /* knob writes are remembered, never made */
	bool revert_on_stop;                /* SIGTERM puts every knob back (default: only the change in trial) */
	bool writer;                        /* knob writes go through a privileged writer process (priv/writer.h) */
	char engine_user[64];               /* with the writer: the engine drops to this user ("" = stays root) */
	char writer_dir[CONFIG_PATH_MAX];   /* the writer's journals ("" = writer/ beside the store) */
	char writer_socket[CONFIG_PATH_MAX]; /* an engine started as [agent] user meets its writer here ("" = none) */
	/* [policies] */
	char policy_dir[CONFIG_PATH_MAX];   /* shipped policies */
	char policy_override_dir[CONFIG_PATH_MAX]; /* local overrides, same file name replaces */
	/* [store] */
	char store_path[CONFIG_PATH_MAX];
	int64_t frames_retention_ms;
	int64_t rollups_retention_ms;
	int64_t audit_retention_ms;         /* audit rows, after their last event */
	int64_t denied_retention_ms;        /* the audit rows of refused requests (action denied) */
	/* [nginx] */
	char pid_file[CONFIG_PATH_MAX];
	char stub_status_url[CONFIG_PATH_MAX]; /* "" disables the stub_status probe */
	int64_t stub_status_timeout_ms;
	char access_log[CONFIG_PATH_MAX];      /* "" disables the access-log probe */
	char error_log[CONFIG_PATH_MAX];       /* "" disables the error-log probe */
	char nginx_bin[CONFIG_PATH_MAX];       /* the nginx binary, for nginx -t / -T */
	char nginx_conf[CONFIG_PATH_MAX];      /* its main configuration ("" = nginx's built-in default) */
	char include_dir[CONFIG_PATH_MAX];     /* the agent's nginx include files */
	int64_t nginx_timeout_ms;              /* bound on nginx -t and on a reload's new workers */
	int64_t nginx_dump_max;                /* bytes of one nginx -T the agent keeps and parses */
	int64_t nginx_memory_max;              /* data limit (RLIMIT_DATA) of the nginx -t and -T it runs */
	/* [tuning] */
	char mode[16];            /* observe | propose | auto */
	int64_t changes_per_hour; /* trials that may start in an hour */
	int64_t cooldown_ms;      /* after a verdict, before the next proposal */
	int64_t window_ms;        /* the detectors' window; 0: 60 ticks */
	int64_t pairs;            /* K: A/B pairs of a trial */
	int64_t block_ms;         /* measured part of a block, after the policy's settle time */
	int64_t calibrate_pairs;  /* A/A pairs before an objective's first trial; 0: none */
	char measure[16];         /* passive | loadgen */
	/* [loadgen] */
	char loadgen_command[CONFIG_PATH_MAX]; /* the load command; {seconds} is replaced by the run's length */
	int64_t loadgen_run_ms;   /* length of a run outside trial blocks */
	/* [doctor] */
	int64_t doctor_interval_ms;       /* how often the checks run besides at start and on an nginx reload */
	int64_t backend_keepalive_ms;     /* how long the backends keep idle connections; 0 unknown */
	/* [api] */
	char api_listen[64];                   /* TCP listener "ADDR:PORT" ("" = none) */
	bool api_listen_any;                   /* a listen address that is not loopback is allowed */
	char api_token_file[CONFIG_PATH_MAX];  /* NAME:SECRET lines: who may act over TCP ("" = nobody) */
	/* [probes] */
	bool probe_netlink;     /* inet_diag listen queues, TCP states, link counters */
	bool probe_interrupts;  /* /proc/interrupts */
	bool probe_workers;     /* nginx workers' schedstat */
	/* [client] */
	bool client_enabled;            /* the synthetic client: what a client of nginx sees */
	char client_url[CONFIG_PATH_MAX]; /* what it asks for, URLs separated by blanks; "" = what nginx serves */
	int64_t client_requests;        /* requests per tick: one on a kept-alive connection, the rest fresh */
	int64_t client_timeout_ms;      /* bound on one request, connect included */
	/* [fleet]: a pool of hosts coordinated through etcd (agent/fleet); endpoints "" = alone, as without it */
	char fleet_endpoints[CONFIG_PATH_MAX]; /* etcd's client URLs, blank-separated, tried in turn */
	char fleet_pool[64];                   /* the pool's name: its keys' prefix in etcd */
	char fleet_host[64];                   /* this host's name in the pool ("" = the hostname) */
	int64_t fleet_max_in_trial;            /* hosts of the pool in trial at once */
	bool fleet_rollout;                    /* a value the pool proved needs no approval here to be confirmed */
	int64_t fleet_lease_ttl_ms;            /* the membership's and the trial slot's lease */
	char fleet_ca[CONFIG_PATH_MAX];        /* TLS: the CA that signed etcd's certificate ("" = the system's) */
	char fleet_cert[CONFIG_PATH_MAX];      /* TLS client certificate and key ("" = none) */
	char fleet_key[CONFIG_PATH_MAX];
	char fleet_user[64];                   /* etcd's user and a file with its password ("" = no auth) */
	char fleet_password_file[CONFIG_PATH_MAX];
};

#define CONFIG_FLEET_ENDPOINTS_MAX 8

/* Fill CFG with the defaults. */
void config_default(struct config *cfg);
/*
 * Load PATH over the defaults into CFG. A missing file is an error only when MUST_EXIST; otherwise the defaults
 * stand. On error returns -EINVAL/-errno, writes "PATH:LINE: what" into ERR, and leaves CFG unspecified.
 */
int config_load(const char *path, bool must_exist, struct config *cfg, char *err, size_t errlen);
/* The synthetic client's URL number I (from 0) into OUT: of [client] url, else (I 0 only) stub_status_url's scheme,
 * host and port with path "/". 0; -ENOENT past the last (or when neither is set); -ENAMETOOLONG when OUT is too
 * small. */
int config_client_url(const struct config *cfg, size_t i, char *out, size_t outlen);
/*
 * Whether the agent may trust the files that decide what it runs or writes as root: PATH (the configuration
 * itself) and [nginx] include_dir when it exists, each owned by root (or by the user the agent runs as), not
 * writable by group or others, and not a symbolic link; and the programs it runs ([nginx] binary, the first word
 * of [loadgen] command, found on PATH without a slash), checked where their links lead. [api] token_file has a
 * stricter check of its own where it is read (api/api_auth.c: mode 0600). 0, or -EPERM / -ELOOP / -errno with
 * "FILE: why: refused (...)" in ERR. ngxctl, which runs nothing as root, does not call it.
 */
int config_check_trust(const struct config *cfg, const char *path, char *err, size_t errlen);
/* From now on the files config_check_trust checks may be UID's besides root's (default: the effective user's; the
 * engine that gave up root sets 0, so that it takes no file the writer would refuse). */
void config_trust_owner(uid_t uid);

#endif
