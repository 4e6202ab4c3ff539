/*
 * prom: the exposition format writer, the frame-name map and the running totals. See prom.h.
 */
#include "prom.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the writer ------------------------------------------------------------------------------------------- */

void prom_writer_init(struct prom_writer *w)
{
	memset(w, 0, sizeof(*w));
}

void prom_writer_free(struct prom_writer *w)
{
	free(w->buf);
	for (size_t i = 0; i < w->nnames; i++)
		free(w->names[i]);
	free(w->names);
	prom_writer_init(w);
}

static int fail(struct prom_writer *w, int err)
{
	if (!w->err)
		w->err = err;
	return w->err;
}

static int put(struct prom_writer *w, const char *s, size_t n)
{
	if (w->err)
		return w->err;
	if (n >= w->cap - w->len || !w->buf) {
		size_t ncap = w->cap ? w->cap : 4096;
		char *nb;

		while (ncap - w->len <= n) {
			if (ncap > SIZE_MAX / 2)
				return fail(w, -ENOMEM);
			ncap *= 2;
		}
		nb = realloc(w->buf, ncap);
		if (!nb)
			return fail(w, -ENOMEM);
		w->buf = nb;
		w->cap = ncap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
	return 0;
}

static int puts_(struct prom_writer *w, const char *s)
{
	return put(w, s, strlen(s));
}

/* S with backslash and newline escaped, and double quotes too when QUOTE (label values; help text keeps them). */
static int put_escaped(struct prom_writer *w, const char *s, bool quote)
{
	const char *run = s;

	for (; *s; s++) {
		const char *esc = *s == '\\' ? "\\\\" : *s == '\n' ? "\\n" : quote && *s == '"' ? "\\\"" : NULL;

		if (!esc)
			continue;
		put(w, run, (size_t)(s - run));
		puts_(w, esc);
		run = s + 1;
	}
	return put(w, run, (size_t)(s - run));
}

static bool name_char(char c, bool first, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
	       (!first && c >= '0' && c <= '9');
}

bool prom_valid_name(const char *name)
{
	size_t i;

	if (!name || !name[0])
		return false;
	for (i = 0; name[i]; i++)
		if (i >= PROM_NAME_MAX - 1 || !name_char(name[i], i == 0, true))
			return false;
	return true;
}

bool prom_valid_label(const char *name)
{
	if (!name || !name[0] || strncmp(name, "__", 2) == 0)
		return false;
	for (size_t i = 0; name[i]; i++)
		if (!name_char(name[i], i == 0, false))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const char *type_name(enum prom_type t)
{
	return t == PROM_COUNTER ? "counter" : t == PROM_GAUGE ? "gauge" : "histogram";
}

int prom_family(struct prom_writer *w, const char *name, enum prom_type type, const char *help)
{
	char *copy;

	if (w->err)
		return w->err;
	if (!prom_valid_name(name) || (unsigned)type > PROM_HISTOGRAM)
		return fail(w, -EINVAL);
	/* The 0.0.4 convention promtool checks: counters, and only counters, end in _total. */
	if ((type == PROM_COUNTER) != ends_with(name, "_total"))
		return fail(w, -EINVAL);
	for (size_t i = 0; i < w->nnames; i++)
		if (strcmp(w->names[i], name) == 0)
			return fail(w, -EEXIST);
	if (w->nnames == w->names_cap) {
		size_t ncap = w->names_cap ? w->names_cap * 2 : 64;
		char **nn = realloc(w->names, ncap * sizeof(*nn));

		if (!nn)
			return fail(w, -ENOMEM);
		w->names = nn;
		w->names_cap = ncap;
	}
	copy = strdup(name);
	if (!copy)
		return fail(w, -ENOMEM);
	w->names[w->nnames++] = copy;
	snprintf(w->fam, sizeof(w->fam), "%s", name);
	w->type = type;
	puts_(w, "# HELP ");
	puts_(w, name);
	puts_(w, " ");
	put_escaped(w, help ? help : "", false);
	puts_(w, "\n# TYPE ");
	puts_(w, name);
	puts_(w, " ");
	puts_(w, type_name(type));
	return puts_(w, "\n");
}

int prom_sample(struct prom_writer *w, const char *suffix, const struct prom_label *labels, size_t n, double v)
{
	const struct prom_label *sorted[PROM_LABELS_MAX];
	bool bucket = false, has_le = false, counts = w->type == PROM_COUNTER;
	char val[PROM_VALUE_MAX];

	if (w->err)
		return w->err;
	if (!w->fam[0] || n > PROM_LABELS_MAX || (n && !labels))
		return fail(w, -EINVAL);
	suffix = suffix ? suffix : "";
	if (w->type == PROM_HISTOGRAM) {
		bucket = strcmp(suffix, "_bucket") == 0;
		counts = bucket || strcmp(suffix, "_count") == 0;
		if (!counts && strcmp(suffix, "_sum") != 0)
			return fail(w, -EINVAL);
	} else if (suffix[0]) {
		return fail(w, -EINVAL);
	}
	/* Insertion sort by name: a handful of labels, and the order of the output does not depend on the caller's. */
	for (size_t i = 0; i < n; i++) {
		size_t j = i;

		if (!prom_valid_label(labels[i].name) || !labels[i].value || strcmp(labels[i].name, "quantile") == 0)
			return fail(w, -EINVAL);
		if (strcmp(labels[i].name, "le") == 0) {
			if (!bucket)
				return fail(w, -EINVAL);
			has_le = true;
		}
		while (j > 0 && strcmp(sorted[j - 1]->name, labels[i].name) > 0) {
			sorted[j] = sorted[j - 1];
			j--;
		}
		if (j > 0 && strcmp(sorted[j - 1]->name, labels[i].name) == 0)
			return fail(w, -EINVAL);
		sorted[j] = &labels[i];
	}
	if (bucket && !has_le)
		return fail(w, -EINVAL);
	if (counts && !(v >= 0))
		return fail(w, -EDOM);
	puts_(w, w->fam);
	puts_(w, suffix);
	for (size_t i = 0; i < n; i++) {
		puts_(w, i ? "," : "{");
		puts_(w, sorted[i]->name);
		puts_(w, "=\"");
		put_escaped(w, sorted[i]->value, true);
		puts_(w, "\"");
	}
	if (n)
		puts_(w, "}");
	prom_format_value(v, val, sizeof(val));
	puts_(w, " ");
	puts_(w, val);
	return puts_(w, "\n");
}

int prom_writer_take(struct prom_writer *w, char **text, size_t *len)
{
	int err = w->err ? w->err : put(w, "", 0);

	*text = NULL;
	*len = 0;
	if (err) {
		prom_writer_free(w);
		return err;
	}
	*text = w->buf;
	*len = w->len;
	w->buf = NULL;
	prom_writer_free(w);
	return 0;
}

void prom_format_value(double v, char *out, size_t outlen)
{
	if (isnan(v)) {
		snprintf(out, outlen, "NaN");
	} else if (isinf(v)) {
		snprintf(out, outlen, v > 0 ? "+Inf" : "-Inf");
	} else if (v == 0) {
		snprintf(out, outlen, "0"); /* not "-0" */
	} else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		snprintf(out, outlen, "%.0f", v);
	} else {
		/* %.17g always reads back; shorter forms usually do and are what a person expects ("0.1"). */
		for (int p = 15; p <= 17; p++) {
			snprintf(out, outlen, "%.*g", p, v);
			if (strtod(out, NULL) == v)
				break;
		}
	}
}

int prom_escape_label(const char *s, char *out, size_t outlen)
{
	size_t o = 0;

	for (; *s; s++) {
		const char *esc = *s == '\\' ? "\\\\" : *s == '\n' ? "\\n" : *s == '"' ? "\\\"" : NULL;
		size_t n = esc ? 2 : 1;

		if (outlen - o <= n || o >= outlen)
			return -ENOSPC;
		if (esc)
			memcpy(out + o, esc, 2);
		else
			out[o] = *s;
		o += n;
	}
	if (o >= outlen)
		return -ENOSPC;
	out[o] = '\0';
	return 0;
}

/* ---- the map ---------------------------------------------------------------------------------------------- */

enum fam {
	F_NGINX_ACTIVE,
	F_NGINX_CONNS,
	F_NGINX_ACCEPTED,
	F_NGINX_HANDLED,
	F_NGINX_REQUESTS,
	F_NGINX_WORKERS,
	F_NGINX_WORKERS_OLD,
	F_NGINX_WORKER_CPU,
	F_NGINX_WORKER_WAIT,
	F_NGINX_WORKER_WAIT_MAX,
	F_NGINX_WORKER_CSW,
	F_NGINX_ERRLOG,
	F_HTTP_DURATION,
	F_HTTP_REQUESTS,
	F_HTTP_TICK_PCT,
	F_HTTP_RESPONSES,
	F_HTTP_UPSTREAM,
	F_HTTP_UPSTREAM_SHARE,
	F_HTTP_GATEWAY,
	F_HTTP_UPSTREAM_CONNECT,
	F_NGINX_STUB_LATE,
	F_TCP_OUTGOING,
	F_ACCESS_UNPARSED,
	F_ACCESS_BEHIND,
	F_CLIENT_REQUESTS,
	F_CLIENT_FAILURES,
	F_CLIENT_TIMEOUTS,
	F_CLIENT_CONNECT,
	F_CLIENT_TTFB,
	F_CLIENT_DURATION,
	F_CLIENT_CONNECT_PCT,
	F_CLIENT_TTFB_PCT,
	F_CLIENT_DURATION_PCT,
	F_TCP_LISTEN_OVERFLOWS,
	F_TCP_LISTEN_DROPS,
	F_TCP_RETRANS,
	F_TCP_ACTIVE_OPENS,
	F_TCP_PASSIVE_OPENS,
	F_TCP_ATTEMPT_FAILS,
	F_TCP_ESTAB_RESETS,
	F_TCP_IN_ERRS,
	F_TCP_IN_SEGS,
	F_TCP_OUT_SEGS,
	F_TCP_SYNCOOKIES,
	F_TCP_ABORT_MEM,
	F_TCP_BACKLOG_DROP,
	F_TCP_REQQ_DROP,
	F_TCP_TW_OVERFLOW,
	F_TCP_CURR_ESTAB,
	F_TCP_CONNS,
	F_TCP_SERVED,
	F_TCP_MAX_ORPHANS,
	F_TCP_INUSE,
	F_TCP_ORPHAN,
	F_TCP_TIME_WAIT,
	F_TCP_MEM,
	F_LISTEN_DEPTH,
	F_LISTEN_BACKLOG,
	F_LISTEN_FILL,
	F_SOFTNET_PROCESSED,
	F_SOFTNET_DROPPED,
	F_SOFTNET_SQUEEZE,
	F_SOFTIRQ_RX,
	F_SOFTIRQ_TX,
	F_CPU_SECONDS,
	F_CTXT,
	F_PROCS_RUNNING,
	F_CPUS,
	F_NIC_IRQS,
	F_NIC_INTERRUPTS,
	F_LINK_RX_PACKETS,
	F_LINK_TX_PACKETS,
	F_LINK_RX_BYTES,
	F_LINK_TX_BYTES,
	F_LINK_RX_DROPS,
	F_LINK_RX_MISSED,
	F_LINK_TX_DROPS,
	F_LINK_RX_ERRORS,
	F_LINK_TX_ERRORS,
	F_COUNT,
	F_NONE = F_COUNT /* left out on purpose */
};

static const struct family {
	const char *name;
	enum prom_type type;
	const char *help;
} fams[F_COUNT] = {
	[F_NGINX_ACTIVE] = {"ngxat_nginx_connections_active", PROM_GAUGE,
			    "Client connections open in nginx, idle ones included (stub_status Active)."},
	[F_NGINX_CONNS] = {"ngxat_nginx_connections", PROM_GAUGE,
			   "nginx client connections by state (stub_status Reading, Writing, Waiting)."},
	[F_NGINX_ACCEPTED] = {"ngxat_nginx_connections_accepted_total", PROM_COUNTER,
			      "Client connections nginx accepted, counted by the agent since it started."},
	[F_NGINX_HANDLED] = {"ngxat_nginx_connections_handled_total", PROM_COUNTER,
			     "Client connections nginx handled; below accepted when it ran out of worker_connections."},
	[F_NGINX_REQUESTS] = {"ngxat_nginx_http_requests_total", PROM_COUNTER,
			      "HTTP requests nginx served (stub_status), counted since the agent started."},
	[F_NGINX_WORKERS] = {"ngxat_nginx_workers", PROM_GAUGE, "nginx worker processes found."},
	[F_NGINX_WORKERS_OLD] = {"ngxat_nginx_workers_shutting_down", PROM_GAUGE,
				 "nginx workers of an earlier generation still finishing their connections after a reload."},
	[F_NGINX_WORKER_CPU] = {"ngxat_nginx_worker_cpu_seconds_total", PROM_COUNTER,
				"CPU time nginx workers ran (schedstat), summed over workers."},
	[F_NGINX_WORKER_WAIT] = {"ngxat_nginx_worker_runqueue_wait_seconds_total", PROM_COUNTER,
				 "Time nginx workers were runnable but waited for a CPU (schedstat), summed over workers."},
	[F_NGINX_WORKER_WAIT_MAX] = {"ngxat_nginx_worker_runqueue_wait_max_seconds", PROM_GAUGE,
				     "The longest run-queue wait of one worker in the last tick."},
	[F_NGINX_WORKER_CSW] = {"ngxat_nginx_worker_context_switches_total", PROM_COUNTER,
				"Context switches of nginx workers, voluntary and involuntary."},
	[F_NGINX_ERRLOG] = {"ngxat_nginx_error_log_lines_total", PROM_COUNTER,
			    "nginx error log lines the agent recognised, by kind."},
	[F_HTTP_DURATION] = {"ngxat_http_request_duration_seconds", PROM_HISTOGRAM,
			     "Request time from the access log ($request_time, 1 ms resolution). Bounds sit on the "
			     "agent's histogram edges, so bucket counts are exact."},
	[F_HTTP_REQUESTS] = {"ngxat_http_requests_total", PROM_COUNTER,
			     "Requests in the access log, with request times or without (nginx's combined format): the "
			     "request-time histogram counts only those with."},
	[F_HTTP_TICK_PCT] = {"ngxat_http_request_duration_last_tick_seconds", PROM_GAUGE,
			     "Request time percentiles of the last tick's access log lines (NaN when it had none)."},
	[F_HTTP_RESPONSES] = {"ngxat_http_responses_total", PROM_COUNTER,
			      "Access log lines by status class."},
	[F_HTTP_UPSTREAM] = {"ngxat_http_upstream_time_seconds_total", PROM_COUNTER,
			     "Time spent waiting for upstreams ($upstream_response_time), summed over requests."},
	[F_HTTP_UPSTREAM_SHARE] = {"ngxat_http_upstream_share_ratio", PROM_GAUGE,
				   "Share of the last tick's request time spent on upstreams (NaN without requests)."},
	[F_HTTP_GATEWAY] = {"ngxat_http_gateway_errors_total", PROM_COUNTER,
			    "Access log lines with status 502 (the upstream connection failed or broke) or 504 (it timed "
			    "out), also counted in ngxat_http_responses_total{code=\"5xx\"}."},
	[F_HTTP_UPSTREAM_CONNECT] = {"ngxat_http_upstream_connect_time_seconds_total", PROM_COUNTER,
				     "Time spent connecting to upstreams ($upstream_connect_time), summed over requests; "
				     "only from an access log that has it."},
	[F_NGINX_STUB_LATE] = {"ngxat_nginx_stub_status_late_total", PROM_COUNTER,
			       "Ticks whose stub_status fetch had no complete answer in time (saturated workers, or "
			       "nginx not answering)."},
	[F_TCP_OUTGOING] = {"ngxat_tcp_outgoing_connections", PROM_GAUGE,
			    "TCP sockets in nginx's namespace on a local port no socket listens on (connections it made, "
			    "to upstreams), by state; counted every 10 s."},
	[F_ACCESS_UNPARSED] = {"ngxat_access_log_unparsed_lines_total", PROM_COUNTER,
			       "Access log lines the agent could not parse."},
	[F_ACCESS_BEHIND] = {"ngxat_access_log_behind", PROM_GAUGE,
			     "1 when the last tick left access log lines for the next (the per-tick read cap)."},
	[F_CLIENT_REQUESTS] = {"ngxat_client_requests_total", PROM_COUNTER,
			       "Requests the agent's synthetic client made to nginx, from nginx's network namespace."},
	[F_CLIENT_FAILURES] = {"ngxat_client_failures_total", PROM_COUNTER,
			       "Synthetic client requests that failed: refused, reset, cut short, a bad status (timeouts "
			       "apart)."},
	[F_CLIENT_TIMEOUTS] = {"ngxat_client_timeouts_total", PROM_COUNTER,
			       "Synthetic client requests with no complete answer within [client] timeout."},
	[F_CLIENT_CONNECT] = {"ngxat_client_connect_duration_seconds", PROM_HISTOGRAM,
			      "Synthetic client: time to establish a connection, the accept queue's wait included "
			      "(microsecond resolution)."},
	[F_CLIENT_TTFB] = {"ngxat_client_ttfb_seconds", PROM_HISTOGRAM,
			   "Synthetic client: time from the start of a request to the first byte of its answer, "
			   "connect included (answered requests)."},
	[F_CLIENT_DURATION] = {"ngxat_client_request_duration_seconds", PROM_HISTOGRAM,
			       "Synthetic client: time from the start of a request to the end of its answer, connect "
			       "included (answered requests): what a client sees, unlike $request_time."},
	[F_CLIENT_CONNECT_PCT] = {"ngxat_client_connect_duration_last_tick_seconds", PROM_GAUGE,
				  "Connect time percentiles of the last tick's client requests (NaN when none)."},
	[F_CLIENT_TTFB_PCT] = {"ngxat_client_ttfb_last_tick_seconds", PROM_GAUGE,
			       "Time to first byte percentiles of the last tick's client requests (NaN when none)."},
	[F_CLIENT_DURATION_PCT] = {"ngxat_client_request_duration_last_tick_seconds", PROM_GAUGE,
				   "Total time percentiles of the last tick's client requests (NaN when none)."},
	[F_TCP_LISTEN_OVERFLOWS] = {"ngxat_tcp_listen_overflows_total", PROM_COUNTER,
				    "Connections dropped because a listen queue was full (TcpExt ListenOverflows)."},
	[F_TCP_LISTEN_DROPS] = {"ngxat_tcp_listen_drops_total", PROM_COUNTER,
				"SYNs dropped on listen sockets for any reason (TcpExt ListenDrops)."},
	[F_TCP_RETRANS] = {"ngxat_tcp_retransmitted_segments_total", PROM_COUNTER,
			   "TCP segments retransmitted (Tcp RetransSegs)."},
	[F_TCP_ACTIVE_OPENS] = {"ngxat_tcp_active_opens_total", PROM_COUNTER,
				"Outgoing TCP connections opened (Tcp ActiveOpens)."},
	[F_TCP_PASSIVE_OPENS] = {"ngxat_tcp_passive_opens_total", PROM_COUNTER,
				 "Incoming TCP connections opened (Tcp PassiveOpens)."},
	[F_TCP_ATTEMPT_FAILS] = {"ngxat_tcp_attempt_fails_total", PROM_COUNTER,
				 "TCP connection attempts that failed (Tcp AttemptFails)."},
	[F_TCP_ESTAB_RESETS] = {"ngxat_tcp_estab_resets_total", PROM_COUNTER,
				"Established TCP connections reset (Tcp EstabResets)."},
	[F_TCP_IN_ERRS] = {"ngxat_tcp_in_errors_total", PROM_COUNTER, "TCP segments received in error (Tcp InErrs)."},
	[F_TCP_IN_SEGS] = {"ngxat_tcp_in_segments_total", PROM_COUNTER, "TCP segments received (Tcp InSegs)."},
	[F_TCP_OUT_SEGS] = {"ngxat_tcp_out_segments_total", PROM_COUNTER, "TCP segments sent (Tcp OutSegs)."},
	[F_TCP_SYNCOOKIES] = {"ngxat_tcp_syncookies_sent_total", PROM_COUNTER,
			      "SYN cookies sent (TcpExt SyncookiesSent): a SYN queue overflowed."},
	[F_TCP_ABORT_MEM] = {"ngxat_tcp_abort_on_memory_total", PROM_COUNTER,
			     "TCP connections aborted for lack of memory (TcpExt TCPAbortOnMemory)."},
	[F_TCP_BACKLOG_DROP] = {"ngxat_tcp_backlog_drops_total", PROM_COUNTER,
				"Segments dropped because a socket's backlog was full (TcpExt TCPBacklogDrop)."},
	[F_TCP_REQQ_DROP] = {"ngxat_tcp_request_queue_full_drops_total", PROM_COUNTER,
			     "SYNs dropped because the request queue was full (TcpExt TCPReqQFullDrop)."},
	[F_TCP_TW_OVERFLOW] = {"ngxat_tcp_timewait_overflows_total", PROM_COUNTER,
			       "TIME_WAIT sockets not created: tcp_max_tw_buckets reached (TcpExt TCPTimeWaitOverflow)."},
	[F_TCP_CURR_ESTAB] = {"ngxat_tcp_curr_estab", PROM_GAUGE,
			      "TCP connections in ESTABLISHED or CLOSE_WAIT (Tcp CurrEstab)."},
	[F_TCP_CONNS] = {"ngxat_tcp_connections", PROM_GAUGE,
			 "TCP sockets in nginx's network namespace by state (inet_diag, counted every 10 s)."},
	[F_TCP_SERVED] = {"ngxat_tcp_served_connections", PROM_GAUGE,
			  "TCP sockets on a listening port (nginx's side of its connections) by state (inet_diag, every "
			  "10 s): established, close_wait, closed (FIN_WAIT1/2, CLOSING, LAST_ACK)."},
	[F_TCP_MAX_ORPHANS] = {"ngxat_tcp_max_orphans", PROM_GAUGE, "net.ipv4.tcp_max_orphans."},
	[F_TCP_INUSE] = {"ngxat_tcp_sockets_inuse", PROM_GAUGE, "TCP sockets in use (sockstat inuse)."},
	[F_TCP_ORPHAN] = {"ngxat_tcp_sockets_orphan", PROM_GAUGE, "Orphaned TCP sockets (sockstat orphan)."},
	[F_TCP_TIME_WAIT] = {"ngxat_tcp_sockets_time_wait", PROM_GAUGE, "TCP sockets in TIME_WAIT (sockstat tw)."},
	[F_TCP_MEM] = {"ngxat_tcp_memory_pages", PROM_GAUGE, "Pages of memory TCP uses (sockstat mem)."},
	[F_LISTEN_DEPTH] = {"ngxat_listen_queue_depth", PROM_GAUGE,
			    "Connections waiting in the accept queues of a port, summed over its sockets."},
	[F_LISTEN_BACKLOG] = {"ngxat_listen_backlog", PROM_GAUGE,
			      "Accept queue capacity of a port (listen backlog), summed over its sockets."},
	[F_LISTEN_FILL] = {"ngxat_listen_queue_fill_ratio", PROM_GAUGE,
			   "Fill of the fullest accept queue of a port, 0 to 1."},
	[F_SOFTNET_PROCESSED] = {"ngxat_softnet_processed_total", PROM_COUNTER,
				 "Packets processed by the network softirq, per CPU (softnet_stat)."},
	[F_SOFTNET_DROPPED] = {"ngxat_softnet_dropped_total", PROM_COUNTER,
			       "Packets dropped because the backlog was full (netdev_max_backlog), per CPU."},
	[F_SOFTNET_SQUEEZE] = {"ngxat_softnet_time_squeeze_total", PROM_COUNTER,
			       "Times the network softirq ran out of budget with work left (netdev_budget), per CPU."},
	[F_SOFTIRQ_RX] = {"ngxat_softirq_net_rx_total", PROM_COUNTER, "NET_RX softirqs, per CPU (/proc/softirqs)."},
	[F_SOFTIRQ_TX] = {"ngxat_softirq_net_tx_total", PROM_COUNTER, "NET_TX softirqs, per CPU (/proc/softirqs)."},
	[F_CPU_SECONDS] = {"ngxat_cpu_seconds_total", PROM_COUNTER,
			   "CPU time by mode, per CPU (/proc/stat shares of each tick times its length)."},
	[F_CTXT] = {"ngxat_context_switches_total", PROM_COUNTER, "Context switches on the host (/proc/stat ctxt)."},
	[F_PROCS_RUNNING] = {"ngxat_procs_running", PROM_GAUGE, "Runnable tasks on the host (/proc/stat)."},
	[F_CPUS] = {"ngxat_cpus", PROM_GAUGE, "CPUs in /proc/stat."},
	[F_NIC_IRQS] = {"ngxat_nic_irqs", PROM_GAUGE, "Interrupt lines of the host's NICs."},
	[F_NIC_INTERRUPTS] = {"ngxat_nic_interrupts_total", PROM_COUNTER, "Interrupts of each NIC interrupt line."},
	[F_LINK_RX_PACKETS] = {"ngxat_link_receive_packets_total", PROM_COUNTER, "Packets received, per interface."},
	[F_LINK_TX_PACKETS] = {"ngxat_link_transmit_packets_total", PROM_COUNTER, "Packets sent, per interface."},
	[F_LINK_RX_BYTES] = {"ngxat_link_receive_bytes_total", PROM_COUNTER, "Bytes received, per interface."},
	[F_LINK_TX_BYTES] = {"ngxat_link_transmit_bytes_total", PROM_COUNTER, "Bytes sent, per interface."},
	[F_LINK_RX_DROPS] = {"ngxat_link_receive_drops_total", PROM_COUNTER, "Received packets dropped, per interface."},
	[F_LINK_RX_MISSED] = {"ngxat_link_receive_missed_total", PROM_COUNTER,
			      "Packets the NIC missed (no room in its ring), per interface."},
	[F_LINK_TX_DROPS] = {"ngxat_link_transmit_drops_total", PROM_COUNTER, "Sent packets dropped, per interface."},
	[F_LINK_RX_ERRORS] = {"ngxat_link_receive_errors_total", PROM_COUNTER, "Receive errors, per interface."},
	[F_LINK_TX_ERRORS] = {"ngxat_link_transmit_errors_total", PROM_COUNTER, "Transmit errors, per interface."},
};

/* What a frame value is, which says how it adds up between scrapes. */
enum src {
	SRC_KIND,   /* as the family's type says: a counter adds up counts per tick (a kernel counter's delta, log
		     * lines), a gauge keeps the last value (a level) */
	SRC_SHARE,  /* a share of the tick: the total is the share times the tick's length */
	SRC_BUCKET, /* a request-time histogram bucket's count per tick; the '*' is its index */
	SRC_COUNT,  /* the histogram's count per tick */
	SRC_HSUM,   /* the histogram's sum per tick */
};

/*
 * First match wins. A '*' matches a non-empty run (the shortest that lets the rest match) and becomes the label
 * named in cap[]. Names come from agent/sampler.c: a name it adds without a rule here is counted in
 * ngxat_unmapped_frame_metrics and left out.
 */
static const struct rule {
	const char *pattern;
	enum fam fam;
	enum src src;
	double div; /* frame unit to base unit: ms -> s 1000, percent -> ratio 100 (a division rounds right) */
	const char *cap[2];
	const char *fix_name, *fix_value;
} rules[] = {
	{"nginx.active", F_NGINX_ACTIVE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"nginx.reading", F_NGINX_CONNS, SRC_KIND, 1, {NULL}, "state", "reading"},
	{"nginx.writing", F_NGINX_CONNS, SRC_KIND, 1, {NULL}, "state", "writing"},
	{"nginx.waiting", F_NGINX_CONNS, SRC_KIND, 1, {NULL}, "state", "waiting"},
	{"nginx.accepts", F_NGINX_ACCEPTED, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"nginx.handled", F_NGINX_HANDLED, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"nginx.requests", F_NGINX_REQUESTS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"nginx.workers", F_NGINX_WORKERS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"nginx.workers_old", F_NGINX_WORKERS_OLD, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"nginx.worker_run_ms", F_NGINX_WORKER_CPU, SRC_KIND, 1000, {NULL}, NULL, NULL},
	{"nginx.worker_wait_ms", F_NGINX_WORKER_WAIT, SRC_KIND, 1000, {NULL}, NULL, NULL},
	{"nginx.worker_wait_max_ms", F_NGINX_WORKER_WAIT_MAX, SRC_KIND, 1000, {NULL}, NULL, NULL},
	/* The busiest and the mean worker's CPU of one tick: the judge's worker_imbalance; a scrape between ticks
	 * would sample them, not add them up, and ngxat_nginx_worker_cpu_seconds_total already counts the workers' CPU. */
	{"nginx.worker_run_max_ms", F_NONE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"nginx.worker_run_mean_ms", F_NONE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"nginx.worker_vcsw", F_NGINX_WORKER_CSW, SRC_KIND, 1, {NULL}, "kind", "voluntary"},
	{"nginx.worker_ivcsw", F_NGINX_WORKER_CSW, SRC_KIND, 1, {NULL}, "kind", "involuntary"},
	{"nginx.err.*", F_NGINX_ERRLOG, SRC_KIND, 1, {"kind"}, NULL, NULL},

	{"http.lat.b*", F_HTTP_DURATION, SRC_BUCKET, 1, {NULL}, NULL, NULL},
	{"http.timed", F_HTTP_DURATION, SRC_COUNT, 1, {NULL}, NULL, NULL},
	{"http.requests", F_HTTP_REQUESTS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"http.request_ms_sum", F_HTTP_DURATION, SRC_HSUM, 1000, {NULL}, NULL, NULL},
	{"http.p50_ms", F_HTTP_TICK_PCT, SRC_KIND, 1000, {NULL}, "percentile", "50"},
	{"http.p90_ms", F_HTTP_TICK_PCT, SRC_KIND, 1000, {NULL}, "percentile", "90"},
	{"http.p99_ms", F_HTTP_TICK_PCT, SRC_KIND, 1000, {NULL}, "percentile", "99"},
	{"http.1xx", F_HTTP_RESPONSES, SRC_KIND, 1, {NULL}, "code", "1xx"},
	{"http.2xx", F_HTTP_RESPONSES, SRC_KIND, 1, {NULL}, "code", "2xx"},
	{"http.3xx", F_HTTP_RESPONSES, SRC_KIND, 1, {NULL}, "code", "3xx"},
	{"http.4xx", F_HTTP_RESPONSES, SRC_KIND, 1, {NULL}, "code", "4xx"},
	{"http.5xx", F_HTTP_RESPONSES, SRC_KIND, 1, {NULL}, "code", "5xx"},
	{"http.upstream_ms_sum", F_HTTP_UPSTREAM, SRC_KIND, 1000, {NULL}, NULL, NULL},
	{"http.upstream_share", F_HTTP_UPSTREAM_SHARE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"http.502", F_HTTP_GATEWAY, SRC_KIND, 1, {NULL}, "code", "502"},
	{"http.504", F_HTTP_GATEWAY, SRC_KIND, 1, {NULL}, "code", "504"},
	{"http.upstream_connect_ms_sum", F_HTTP_UPSTREAM_CONNECT, SRC_KIND, 1000, {NULL}, NULL, NULL},
	{"nginx.stub_late", F_NGINX_STUB_LATE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.outgoing.*", F_TCP_OUTGOING, SRC_KIND, 1, {"state"}, NULL, NULL},
	{"http.unparsed", F_ACCESS_UNPARSED, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"http.backlog", F_ACCESS_BEHIND, SRC_KIND, 1, {NULL}, NULL, NULL},

	/* The synthetic client's histograms are in microseconds. */
	{"client.requests", F_CLIENT_REQUESTS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"client.failures", F_CLIENT_FAILURES, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"client.timeouts", F_CLIENT_TIMEOUTS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"client.connect.lat.b*", F_CLIENT_CONNECT, SRC_BUCKET, 1, {NULL}, NULL, NULL},
	{"client.connect.timed", F_CLIENT_CONNECT, SRC_COUNT, 1, {NULL}, NULL, NULL},
	{"client.connect.us_sum", F_CLIENT_CONNECT, SRC_HSUM, 1e6, {NULL}, NULL, NULL},
	{"client.ttfb.lat.b*", F_CLIENT_TTFB, SRC_BUCKET, 1, {NULL}, NULL, NULL},
	{"client.ttfb.timed", F_CLIENT_TTFB, SRC_COUNT, 1, {NULL}, NULL, NULL},
	{"client.ttfb.us_sum", F_CLIENT_TTFB, SRC_HSUM, 1e6, {NULL}, NULL, NULL},
	{"client.total.lat.b*", F_CLIENT_DURATION, SRC_BUCKET, 1, {NULL}, NULL, NULL},
	{"client.total.timed", F_CLIENT_DURATION, SRC_COUNT, 1, {NULL}, NULL, NULL},
	{"client.total.us_sum", F_CLIENT_DURATION, SRC_HSUM, 1e6, {NULL}, NULL, NULL},
	{"client.connect_p50_ms", F_CLIENT_CONNECT_PCT, SRC_KIND, 1000, {NULL}, "percentile", "50"},
	{"client.connect_p99_ms", F_CLIENT_CONNECT_PCT, SRC_KIND, 1000, {NULL}, "percentile", "99"},
	{"client.ttfb_p99_ms", F_CLIENT_TTFB_PCT, SRC_KIND, 1000, {NULL}, "percentile", "99"},
	{"client.total_p50_ms", F_CLIENT_DURATION_PCT, SRC_KIND, 1000, {NULL}, "percentile", "50"},
	{"client.total_p99_ms", F_CLIENT_DURATION_PCT, SRC_KIND, 1000, {NULL}, "percentile", "99"},

	{"tcp.listen_overflows", F_TCP_LISTEN_OVERFLOWS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.listen_drops", F_TCP_LISTEN_DROPS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.retrans_segs", F_TCP_RETRANS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.active_opens", F_TCP_ACTIVE_OPENS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.passive_opens", F_TCP_PASSIVE_OPENS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.attempt_fails", F_TCP_ATTEMPT_FAILS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.estab_resets", F_TCP_ESTAB_RESETS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.in_errs", F_TCP_IN_ERRS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.in_segs", F_TCP_IN_SEGS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.out_segs", F_TCP_OUT_SEGS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.syncookies_sent", F_TCP_SYNCOOKIES, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.abort_on_memory", F_TCP_ABORT_MEM, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.backlog_drop", F_TCP_BACKLOG_DROP, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.reqq_full_drop", F_TCP_REQQ_DROP, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.timewait_overflow", F_TCP_TW_OVERFLOW, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.curr_estab", F_TCP_CURR_ESTAB, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.state.*", F_TCP_CONNS, SRC_KIND, 1, {"state"}, NULL, NULL},
	{"tcp.served.*", F_TCP_SERVED, SRC_KIND, 1, {"state"}, NULL, NULL},
	{"tcp.max_orphans", F_TCP_MAX_ORPHANS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.sockstat.inuse", F_TCP_INUSE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.sockstat.orphan", F_TCP_ORPHAN, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.sockstat.time_wait", F_TCP_TIME_WAIT, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"tcp.sockstat.mem_pages", F_TCP_MEM, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"listen.*.queued", F_LISTEN_DEPTH, SRC_KIND, 1, {"port"}, NULL, NULL},
	{"listen.*.backlog", F_LISTEN_BACKLOG, SRC_KIND, 1, {"port"}, NULL, NULL},
	{"listen.*.fill_pct", F_LISTEN_FILL, SRC_KIND, 100, {"port"}, NULL, NULL},

	/* Host-wide sums of per-CPU series: sum() in PromQL gives them, and one family must not hold both. */
	{"softnet.processed", F_NONE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"softnet.dropped", F_NONE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"softnet.time_squeeze", F_NONE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"softirq.net_rx", F_NONE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"softirq.net_tx", F_NONE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"cpu.all.*", F_NONE, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"softnet.*.processed", F_SOFTNET_PROCESSED, SRC_KIND, 1, {"cpu"}, NULL, NULL},
	{"softnet.*.dropped", F_SOFTNET_DROPPED, SRC_KIND, 1, {"cpu"}, NULL, NULL},
	{"softnet.*.time_squeeze", F_SOFTNET_SQUEEZE, SRC_KIND, 1, {"cpu"}, NULL, NULL},
	{"softirq.*.net_rx", F_SOFTIRQ_RX, SRC_KIND, 1, {"cpu"}, NULL, NULL},
	{"softirq.*.net_tx", F_SOFTIRQ_TX, SRC_KIND, 1, {"cpu"}, NULL, NULL},
	{"cpu.*.*", F_CPU_SECONDS, SRC_SHARE, 100, {"cpu", "mode"}, NULL, NULL},
	{"sys.ctxt", F_CTXT, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"sys.procs_running", F_PROCS_RUNNING, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"sys.cpus", F_CPUS, SRC_KIND, 1, {NULL}, NULL, NULL},

	{"irq.net_irqs", F_NIC_IRQS, SRC_KIND, 1, {NULL}, NULL, NULL},
	{"irq.*.total", F_NIC_INTERRUPTS, SRC_KIND, 1, {"irq"}, NULL, NULL},
	/* Per CPU and line: lines times CPUs series; the per-CPU softirq and softnet families show the spread. */
	{"irq.*.*", F_NONE, SRC_KIND, 1, {NULL}, NULL, NULL},

	{"link.*.rx_packets", F_LINK_RX_PACKETS, SRC_KIND, 1, {"device"}, NULL, NULL},
	{"link.*.tx_packets", F_LINK_TX_PACKETS, SRC_KIND, 1, {"device"}, NULL, NULL},
	{"link.*.rx_bytes", F_LINK_RX_BYTES, SRC_KIND, 1, {"device"}, NULL, NULL},
	{"link.*.tx_bytes", F_LINK_TX_BYTES, SRC_KIND, 1, {"device"}, NULL, NULL},
	{"link.*.rx_dropped", F_LINK_RX_DROPS, SRC_KIND, 1, {"device"}, NULL, NULL},
	{"link.*.rx_missed", F_LINK_RX_MISSED, SRC_KIND, 1, {"device"}, NULL, NULL},
	{"link.*.tx_dropped", F_LINK_TX_DROPS, SRC_KIND, 1, {"device"}, NULL, NULL},
	{"link.*.rx_errors", F_LINK_RX_ERRORS, SRC_KIND, 1, {"device"}, NULL, NULL},
	{"link.*.tx_errors", F_LINK_TX_ERRORS, SRC_KIND, 1, {"device"}, NULL, NULL},
};

#define NRULES (sizeof(rules) / sizeof(rules[0]))

/* Match S against pattern P from capture K on: CAP/CAPLEN get each '*''s run. */
static bool match(const char *p, const char *s, const char *cap[2], size_t caplen[2], unsigned k)
{
	for (;;) {
		if (*p == '*') {
			if (k >= 2)
				return false;
			for (size_t n = 1; s[n - 1]; n++) {
				cap[k] = s;
				caplen[k] = n;
				if (match(p + 1, s + n, cap, caplen, k + 1))
					return true;
			}
			return false;
		}
		if (*p != *s)
			return false;
		if (!*p)
			return true;
		p++;
		s++;
	}
}

/* The rule for NAME (its captures into CAP/CAPLEN), or -1. */
static int find_rule(const char *name, const char *cap[2], size_t caplen[2])
{
	for (size_t i = 0; i < NRULES; i++)
		if (match(rules[i].pattern, name, cap, caplen, 0))
			return (int)i;
	return -1;
}

/* Fill OUT from rule R's match of NAME. */
static void mapped_from(int r, const char *name, struct prom_mapped *out)
{
	const struct rule *ru = &rules[r];
	const char *cap[2] = {NULL, NULL};
	size_t caplen[2] = {0, 0};

	memset(out, 0, sizeof(*out));
	match(ru->pattern, name, cap, caplen, 0);
	out->ignored = ru->fam == F_NONE;
	out->family = ru->fam;
	for (unsigned k = 0; k < 2 && ru->cap[k]; k++) {
		snprintf(out->values[out->nlabels], sizeof(out->values[0]), "%.*s", (int)caplen[k], cap[k]);
		out->labels[out->nlabels].name = ru->cap[k];
		out->labels[out->nlabels].value = out->values[out->nlabels];
		out->nlabels++;
	}
	if (ru->fix_name && out->nlabels < 2) {
		out->labels[out->nlabels].name = ru->fix_name;
		out->labels[out->nlabels].value = ru->fix_value;
		out->nlabels++;
	}
}

int prom_map(const char *name, struct prom_mapped *out)
{
	const char *cap[2];
	size_t caplen[2];
	int r = name ? find_rule(name, cap, caplen) : -1;

	if (r < 0)
		return -ENOENT;
	mapped_from(r, name, out);
	return 0;
}

const char *prom_family_name(unsigned i)
{
	return i < F_COUNT ? fams[i].name : NULL;
}

uint32_t prom_lat_bound_ms(unsigned i)
{
	/* Round numbers, each moved down to the last whole millisecond below one of the histogram's edges. */
	static const uint32_t wanted[PROM_LAT_BOUNDS] = {1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000};

	if (i >= PROM_LAT_BOUNDS)
		return UINT32_MAX;
	return hist_bucket_lo(hist_bucket(wanted[i] + 1)) - 1;
}

uint32_t prom_lat_bound_us(unsigned i)
{
	/* From 50 us (a loopback answer) to 2.5 s; the client's timeout is at most 4 s. */
	static const uint32_t wanted[PROM_LAT_BOUNDS] = {50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000,
							 100000, 500000, 2500000};

	if (i >= PROM_LAT_BOUNDS)
		return UINT32_MAX;
	return hist_bucket_lo(hist_bucket(wanted[i] + 1)) - 1;
}

/* ---- the totals ------------------------------------------------------------------------------------------- */

void prom_totals_init(struct prom_totals *t)
{
	memset(t, 0, sizeof(*t));
}

void prom_totals_free(struct prom_totals *t)
{
	free(t->cells);
	prom_totals_init(t);
}

static int reserve(struct prom_totals *t, uint32_t id)
{
	size_t ncap = t->cap ? t->cap : 256;
	struct prom_cell *nc;

	if (id < t->cap)
		return 0;
	while (ncap <= id)
		ncap *= 2; /* ids are at most METRIC_ID_MAX */
	nc = realloc(t->cells, ncap * sizeof(*nc));
	if (!nc)
		return -ENOMEM;
	for (size_t i = t->cap; i < ncap; i++)
		nc[i] = (struct prom_cell){.v = 0, .ts = 0, .rule = -2};
	t->cells = nc;
	t->cap = ncap;
	return 0;
}

int prom_totals_observe(struct prom_totals *t, const struct metric_registry *reg, const struct frame *fr)
{
	uint32_t max = 0;
	int rc;

	/* Not the last value's id: a frame written by hand may be unsorted, and the cells must cover every id. */
	for (size_t i = 0; i < fr->n; i++)
		max = fr->vals[i].id > max ? fr->vals[i].id : max;
	if (max > METRIC_ID_MAX)
		return -EINVAL;
	rc = reserve(t, max);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < fr->n; i++) {
		struct prom_cell *c = &t->cells[fr->vals[i].id];
		double v = fr->vals[i].v;

		if (fr->vals[i].id == 0)
			continue;
		if (c->rule == -2) {
			const char *name = metric_name(reg, fr->vals[i].id);
			const char *cap[2];
			size_t caplen[2];

			c->rule = name ? find_rule(name, cap, caplen) : -1;
			if (c->rule < 0)
				t->unmapped++;
		}
		if (c->rule < 0 || rules[c->rule].fam == F_NONE)
			continue;
		if (rules[c->rule].src == SRC_KIND && fams[rules[c->rule].fam].type == PROM_GAUGE)
			c->v = v;
		else if (rules[c->rule].src == SRC_SHARE)
			c->v += isfinite(v) && v >= 0 && fr->dt_s > 0 ? v * fr->dt_s : 0;
		else if (isfinite(v) && v >= 0)
			c->v += v; /* NaN: the counter could not be read or went backwards; nothing to add */
		c->ts = fr->ts_ms;
	}
	if (fr->ts_ms > t->last_ts)
		t->last_ts = fr->ts_ms;
	t->frames++;
	return 0;
}

struct entry {
	unsigned fam;
	uint32_t id;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->fam != y->fam)
		return x->fam < y->fam ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* The histogram families: where their buckets' names put the index, and their unit. */
static const struct histo {
	enum fam fam;
	const char *bucket_prefix;
	bool us; /* buckets of microseconds (the synthetic client), else of milliseconds */
} histos[] = {
	{F_HTTP_DURATION, "http.lat.b", false},
	{F_CLIENT_CONNECT, "client.connect.lat.b", true},
	{F_CLIENT_TTFB, "client.ttfb.lat.b", true},
	{F_CLIENT_DURATION, "client.total.lat.b", true},
};

static const struct histo *histo_of(unsigned fam)
{
	for (size_t i = 0; i < sizeof(histos) / sizeof(histos[0]); i++)
		if ((unsigned)histos[i].fam == fam)
			return &histos[i];
	return NULL;
}

/* Histogram family HI from entries E[0..N) of it. */
static int write_histogram(const struct prom_totals *t, const struct metric_registry *reg, const struct histo *hi,
			   const struct entry *e, size_t n, struct prom_writer *w)
{
	const struct family *f = &fams[hi->fam];
	double b[HIST_NBUCKETS] = {0}, count = NAN, sum = 0, cum = 0;
	size_t plen = strlen(hi->bucket_prefix);
	char le[PROM_VALUE_MAX];
	struct prom_label l = {"le", le};
	unsigned next = 0;

	for (size_t i = 0; i < n; i++) {
		const struct prom_cell *c = &t->cells[e[i].id];
		const struct rule *ru = &rules[c->rule];
		const char *name = metric_name(reg, e[i].id);
		unsigned long idx;
		char *end;

		if (ru->src == SRC_COUNT) {
			count = c->v;
		} else if (ru->src == SRC_HSUM) {
			sum = c->v / ru->div;
		} else if (name && strncmp(name, hi->bucket_prefix, plen) == 0) {
			idx = strtoul(name + plen, &end, 10);
			if (!*end && idx < HIST_NBUCKETS)
				b[idx] += c->v;
		}
	}
	/* Buckets are stored sparse and age apart from the count: the count says whether the histogram is live. */
	if (isnan(count))
		return 0;
	prom_family(w, f->name, PROM_HISTOGRAM, f->help);
	for (unsigned k = 0; k < PROM_LAT_BOUNDS; k++) {
		uint32_t bound = hi->us ? prom_lat_bound_us(k) : prom_lat_bound_ms(k);

		for (; next < HIST_NBUCKETS && hist_bucket_lo(next) <= bound; next++)
			cum += b[next];
		prom_format_value(bound / (hi->us ? 1e6 : 1e3), le, sizeof(le));
		prom_sample(w, "_bucket", &l, 1, cum);
	}
	for (; next < HIST_NBUCKETS; next++)
		cum += b[next];
	snprintf(le, sizeof(le), "+Inf");
	prom_sample(w, "_bucket", &l, 1, fmax(cum, count));
	prom_sample(w, "_sum", NULL, 0, sum);
	return prom_sample(w, "_count", NULL, 0, fmax(cum, count));
}

int prom_totals_write(const struct prom_totals *t, const struct metric_registry *reg, int64_t max_age_ms,
		      struct prom_writer *w)
{
	struct entry *e;
	size_t n = 0;

	if (w->err)
		return w->err;
	e = malloc((t->cap ? t->cap : 1) * sizeof(*e));
	if (!e)
		return fail(w, -ENOMEM);
	for (uint32_t id = 1; id < t->cap; id++) {
		const struct prom_cell *c = &t->cells[id];

		if (c->rule < 0 || rules[c->rule].fam == F_NONE || !c->ts)
			continue;
		if (rules[c->rule].src != SRC_BUCKET && t->last_ts - c->ts > max_age_ms)
			continue;
		e[n++] = (struct entry){rules[c->rule].fam, id};
	}
	qsort(e, n, sizeof(*e), cmp_entry);
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j < n && e[j].fam == e[i].fam)
			j++;
		if (histo_of(e[i].fam)) {
			write_histogram(t, reg, histo_of(e[i].fam), e + i, j - i, w);
		} else {
			prom_family(w, fams[e[i].fam].name, fams[e[i].fam].type, fams[e[i].fam].help);
			for (size_t k = i; k < j; k++) {
				const struct prom_cell *c = &t->cells[e[k].id];
				const char *name = metric_name(reg, e[k].id);
				struct prom_mapped m;

				if (!name)
					continue;
				mapped_from(c->rule, name, &m);
				prom_sample(w, "", m.labels, m.nlabels, c->v / rules[c->rule].div);
			}
		}
		i = j;
	}
	free(e);
	return w->err;
}
