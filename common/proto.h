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
#define API_K_TICK_LATE "late"
#define API_K_PROBES "probes"
#define API_K_PROBE_NAME "name"
#define API_K_PROBE_OK "ok"
#define API_K_PROBE_ERROR "error"
#define API_K_PROBE_FAILURES "failures"
#define API_K_PROBE_ENABLED "enabled"
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

/* Keys of /v1/metrics */
#define API_K_METRICS "metrics"

/* Problem objects (RFC 9457 shape) */
#define API_K_ERR_TYPE "type"
#define API_K_ERR_TITLE "title"
#define API_K_ERR_STATUS "status"
#define API_K_ERR_DETAIL "detail"

#endif
