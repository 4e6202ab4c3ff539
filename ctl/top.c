#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "proto.h"
#include "strutil.h"

#define TOP_METRICS "nginx.requests,http.requests,http.p99_ms,tcp.listen_overflows,softnet.time_squeeze," \
		    "softnet.dropped,nginx.active,cpu.*,client.total_p50_ms,client.total_p99_ms,client.requests," \
		    "client.failures,client.timeouts"

static volatile sig_atomic_t quit;

static void on_sigint(int sig)
{
	(void)sig;
	quit = 1;
}

/* A value of the frame, NAN when absent or null. */
static double val(json_t *values, const char *name)
{
	json_t *v = json_object_get(values, name);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void fmt(char *buf, size_t n, double v, const char *f)
{
	if (isfinite(v))
		snprintf(buf, n, f, v);
	else
		snprintf(buf, n, "-");
}

/* The synthetic client's failed and timed-out requests of the tick, as "F/T of N" ("-" without requests). */
static void fmt_client_errors(char *buf, size_t n, json_t *values)
{
	double req = val(values, "client.requests");

	if (isfinite(req) && req > 0)
		snprintf(buf, n, "%.0f/%.0f of %.0f", val(values, "client.failures"), val(values, "client.timeouts"), req);
	else
		snprintf(buf, n, "-");
}

static void show(json_t *frame, bool tty)
{
	json_t *values = json_object_get(frame, API_K_VALUES), *v;
	double dt = json_number_value(json_object_get(frame, API_K_DT));
	double req = val(values, "nginx.requests");
	char a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32], k[48], when[16];
	time_t ts = (time_t)(json_integer_value(json_object_get(frame, API_K_TS)) / 1000);
	struct sbuf cores;

	if (!isfinite(req))
		req = val(values, "http.requests");
	if (!(dt > 0))
		dt = NAN;
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&ts));
	fmt(a, sizeof(a), req / dt, "%.0f");
	/* The access log's time is the server's, after accept, at 1 ms: "<1", never 0. The client's is what a
	 * client of nginx waits, the accept queue included, at microsecond resolution. */
	str_fmt_ms(b, sizeof(b), val(values, "http.p99_ms"), false);
	str_fmt_ms(g, sizeof(g), val(values, "client.total_p50_ms"), true);
	str_fmt_ms(h, sizeof(h), val(values, "client.total_p99_ms"), true);
	fmt_client_errors(k, sizeof(k), values);
	fmt(c, sizeof(c), val(values, "tcp.listen_overflows") / dt, "%.0f");
	fmt(d, sizeof(d), val(values, "softnet.time_squeeze") / dt, "%.0f");
	fmt(e, sizeof(e), val(values, "softnet.dropped") / dt, "%.0f");
	fmt(f, sizeof(f), val(values, "nginx.active"), "%.0f");
	sbuf_init(&cores);
	for (int cpu = 0; cpu < 1024; cpu++) {
		char name[32];

		snprintf(name, sizeof(name), "cpu.%d.softirq", cpu);
		if (!(v = json_object_get(values, name)))
			break;
		sbuf_printf(&cores, "%scpu%d %s", cpu ? "  " : "", cpu,
			    json_is_number(v) ? (snprintf(name, sizeof(name), "%.1f%%", json_number_value(v)), name) : "-");
	}
	if (tty) {
		printf("\033[H\033[2J");
		printf("ngxctl top  %s  (Ctrl-C quits)\n\n", when);
		printf("%12s %14s %14s %14s %12s %10s\n", "requests/s", "server p99 ms", "overflows/s", "squeeze/s",
		       "drops/s", "active");
		printf("%12s %14s %14s %14s %12s %10s\n\n", a, b, c, d, e, f);
		printf("%12s %14s %30s\n", "client", "p50/p99 ms", "failed/timed out of requests");
		printf("%12s %7s/%-6s %30s\n\n", "", g, h, k);
		printf("softirq share per core: %s\n", sbuf_str(&cores));
	} else {
		printf("%s req/s=%s server_p99_ms=%s client_p50_ms=%s client_p99_ms=%s client_failed/timed_out=%s "
		       "listen_overflows/s=%s time_squeeze/s=%s softnet_drops/s=%s active=%s softirq=[%s]\n", when, a, b,
		       g, h, k, c, d, e, f, sbuf_str(&cores));
	}
	fflush(stdout);
	sbuf_free(&cores);
}

static int top_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{"count", required_argument, NULL, 'n'}, {"interval", required_argument, NULL, 'i'}, {NULL, 0, NULL, 0}};
	int64_t count = 0, interval_ms = 1000, shown_ts = 0, done = 0;
	bool tty = isatty(1);
	char err[512];
	int c;

	optind = 0; /* glibc: start afresh for the verb's own options */
	while ((c = getopt_long(argc, argv, "+n:i:", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (str_to_i64(optarg, 1, 1000000, &count) < 0) {
				fprintf(stderr, "ngxctl top: -n takes a count from 1\n");
				return 2;
			}
			break;
		case 'i':
			if (str_to_duration_ms(optarg, 100, 3600000, &interval_ms) < 0) {
				fprintf(stderr, "ngxctl top: -i takes a duration such as 1s or 500ms\n");
				return 2;
			}
			break;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ngxctl top: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	signal(SIGINT, on_sigint);
	while (!quit && (!count || done < count)) {
		json_t *r, *frames, *last;
		int rc;
		char path[512];

		snprintf(path, sizeof(path), "%s?%s=-5&%s=%s", API_PATH_FRAMES, API_Q_SINCE, API_Q_METRICS, TOP_METRICS);
		if ((rc = ctl_get(ctl, path, &r, err, sizeof(err))) < 0)
			return ctl_fail(err, rc);
		frames = json_object_get(r, API_K_FRAMES);
		last = json_array_get(frames, json_array_size(frames) - 1);
		if (last && json_integer_value(json_object_get(last, API_K_TS)) != shown_ts) {
			shown_ts = json_integer_value(json_object_get(last, API_K_TS));
			if (ctl->json) {
				json_dumpf(last, stdout, JSON_COMPACT);
				putchar('\n');
				fflush(stdout);
			} else {
				show(last, tty);
			}
			done++;
		}
		json_decref(r);
		if (!count || done < count)
			usleep((useconds_t)interval_ms * 1000);
	}
	return 0;
}

const struct ctl_verb verb_top = {
	.name = "top",
	.usage = "[-n COUNT] [-i INTERVAL]",
	.summary = "live per-second view: requests/s, server and client p99, client failures, listen overflows, time_squeeze, drops, softirq per core",
	.help = "A live view of the newest frame, redrawn each interval on a terminal, one line per frame otherwise.\n"
		"\n  -n, --count COUNT        stop after COUNT frames (1..1000000); default: until Ctrl-C\n"
		"  -i, --interval INTERVAL  time between two requests, 100ms..1h (default 1s)\n"
		"\nExamples:\n"
		"  ngxctl top\n"
		"  ngxctl top -n 10 -i 500ms > frames.txt\n",
	.exec = top_exec,
};
