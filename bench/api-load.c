/*
 * api-load: the agent's API under a steady request rate, over its Unix socket.
 *
 * Sends RATE requests/s (default 200) for DURATION seconds (default 20) to a round-robin mix of GET /v1/status,
 * /v1/knobs, /v1/frames?since=-60 and /metrics, open loop: request k is due at start + k/RATE whatever happened
 * to the ones before, and its latency runs from that due time to the last byte of the answer, so a slow answer
 * that holds up the next ones is counted in theirs too (no coordinated omission). Up to CONNS requests are in
 * flight at once, each on its own connection unless the server keeps connections alive. Prints p50/p99/max per
 * path and overall, how much of it was the client's own lateness in sending (a busy machine), the p99 as a ratio
 * to the 5 ms budget, and the agent's ticks over the run from GET /v1/status
 * before and after: done, expected from the wall time and the tick interval, skipped as late.
 *
 *   api-load [-s SOCKET] [-r RATE] [-d SECONDS] [-c CONNS] [-t MS] [-p PATH]... [--check]
 *
 * --check: exit 1 when a request failed (connection, no answer within MS of its due time, status other than 200,
 * a body not of the expected kind) or a tick was missed; not on latency otherwise (a test that must not depend on
 * the machine's speed gives a large -t). Exit 2 for bad usage or when
 * the agent cannot be asked for its status.
 */
#include "build-config.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

#define BUDGET_MS 5.0
#define CONNS_MAX 64
#define BODY_MAX (8u << 20)

#define PATHS_MAX 16

struct path {
	const char *url;
	char kind; /* first byte of a good body: '{' JSON, '#' the exposition format, 0 any */
};

static const struct path mix[] = {
	{API_PATH_STATUS, '{'},
	{API_PATH_KNOBS, '{'},
	{API_PATH_FRAMES "?" API_Q_SINCE "=-60", '{'},
	{API_PATH_PROMETHEUS, '#'},
};
static struct path paths[PATHS_MAX];
static size_t npaths;

struct conn {
	int fd;          /* -1: none */
	bool busy;       /* a request is in flight */
	long req;        /* its index */
	double sent;     /* when its first byte was written */
	char out[256];
	size_t outlen, outoff;
	char *in;
	size_t inlen, incap;
};

struct stats {
	double *lat;     /* ms, per request done */
	size_t n, cap;
	unsigned long errors;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int connect_unix(const char *path, bool nonblock)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* Parsed head of a response in BUF[0..LEN): 0 and its fields when complete, -EAGAIN when more is needed. */
static int parse_head(const char *buf, size_t len, int *status, size_t *head, long *clen, bool *close_after)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4);
	const char *p;

	if (!end)
		return len > 65536 ? -EBADMSG : -EAGAIN;
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0)
		return -EBADMSG;
	*status = atoi(buf + 9);
	*head = (size_t)(end - buf) + 4;
	*clen = -1;
	*close_after = strncmp(buf, "HTTP/1.0", 8) == 0;
	for (p = memchr(buf, '\n', (size_t)(end - buf)); p && p < end; p = memchr(p, '\n', (size_t)(end - p))) {
		p++;
		if (strncasecmp(p, "Content-Length:", 15) == 0)
			*clen = atol(p + 15);
		else if (strncasecmp(p, "Connection:", 11) == 0)
			*close_after = strncasecmp(p + 11 + strspn(p + 11, " "), "close", 5) == 0;
	}
	return 0;
}

/* A blocking GET of URL: the body of a 200 into *BODY (malloc'd). 0 or -errno. */
static int get_sync(const char *sock, const char *url, char **body)
{
	char req[256], *buf = NULL;
	size_t len = 0, cap = 0, head;
	int fd = connect_unix(sock, false), status;
	long clen;
	bool close_after;
	ssize_t n;

	*body = NULL;
	if (fd < 0)
		return fd;
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", url);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return -EIO;
	}
	for (;;) {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 65536);

			if (!nb)
				break;
			buf = nb;
			cap += 65536;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf || parse_head(buf, len, &status, &head, &clen, &close_after) < 0 || status != 200) {
		free(buf);
		return -EPROTO;
	}
	buf[len] = '\0';
	memmove(buf, buf + head, len - head + 1);
	*body = buf;
	return 0;
}

struct ticks {
	long long count, late, interval_ms;
	double at_ms;
};

static int read_ticks(const char *sock, struct ticks *t)
{
	char *body;
	json_t *o, *tick;
	int r = get_sync(sock, API_PATH_STATUS, &body);

	t->at_ms = now_ms();
	if (r < 0)
		return r;
	o = json_loads(body, 0, NULL);
	free(body);
	tick = o ? json_object_get(o, API_K_TICK) : NULL;
	if (!tick) {
		json_decref(o);
		return -EPROTO;
	}
	t->count = json_integer_value(json_object_get(tick, API_K_TICK_COUNT));
	t->late = json_integer_value(json_object_get(tick, API_K_TICK_LATE));
	t->interval_ms = json_integer_value(json_object_get(tick, API_K_TICK_INTERVAL));
	json_decref(o);
	return t->interval_ms > 0 ? 0 : -EPROTO;
}

static void record(struct stats *s, double ms)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 1024;
		double *nl = realloc(s->lat, ncap * sizeof(*nl));

		if (!nl) {
			s->errors++;
			return;
		}
		s->lat = nl;
		s->cap = ncap;
	}
	s->lat[s->n++] = ms;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->busy = false;
	c->inlen = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank quantile of the sorted V[0..N). */
static double quantile(const double *v, size_t n, double q)
{
	size_t k;

	if (n == 0)
		return 0;
	k = (size_t)(q * (double)n + 0.999999);
	return v[k ? (k > n ? n - 1 : k - 1) : 0];
}

/* Whether S is a whole number in LO..HI, into *OUT. */
static bool num_arg(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: api-load [-s SOCKET] [-r RATE] [-d SECONDS] [-c CONNS] [-t MS] [-p PATH]... [--check]\n"
		   "  -s SOCKET   the agent's API socket (default " NGXAT_DEFAULT_SOCKET ")\n"
		   "  -r RATE     requests per second, 1..5000 (default 200)\n"
		   "  -d SECONDS  how long, 1..3600 (default 20)\n"
		   "  -c CONNS    requests in flight at most, 1..%d (default 8)\n"
		   "  -t MS       a request not answered MS after it was due has failed (default 2000)\n"
		   "  -p PATH     request PATH (repeat for several, in turn) instead of the default mix:\n"
		   "              " API_PATH_STATUS ", " API_PATH_KNOBS ", " API_PATH_FRAMES "?" API_Q_SINCE "=-60, "
		   API_PATH_PROMETHEUS "\n"
		   "  --check     exit 1 on a failed request or a missed tick (never on timing)\n",
		CONNS_MAX);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"check", no_argument, NULL, 'k'}, {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	const char *sock = NGXAT_DEFAULT_SOCKET;
	long rate = 200, duration = 20, nconns = 8, total, next = 0, done = 0;
	bool check = false, bad = false;
	struct conn conns[CONNS_MAX];
	struct stats per[PATHS_MAX], all = {0}, lag = {0}, service = {0};
	struct ticks t0, t1;
	unsigned long connect_errors = 0, timeouts = 0, bad_status = 0, bad_body = 0;
	double start, period, deadline, timeout_ms = 2000, *due;
	long timeout_arg = 2000;
	int opt;

	/* A connection the agent closed is a failed request to count, not a silent death by SIGPIPE (exit 141). */
	signal(SIGPIPE, SIG_IGN);

	while ((opt = getopt_long(argc, argv, "s:r:d:c:p:t:h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sock = optarg;
			break;
		case 'r':
			bad |= !num_arg(optarg, 1, 5000, &rate);
			break;
		case 'd':
			bad |= !num_arg(optarg, 1, 3600, &duration);
			break;
		case 'c':
			bad |= !num_arg(optarg, 1, CONNS_MAX, &nconns);
			break;
		case 't':
			bad |= !num_arg(optarg, 1, 600000, &timeout_arg);
			timeout_ms = (double)timeout_arg;
			break;
		case 'p':
			bad |= npaths == PATHS_MAX || optarg[0] != '/' || strlen(optarg) > 200;
			if (!bad)
				paths[npaths++] = (struct path){optarg, 0};
			break;
		case 'k':
			check = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			bad = true;
		}
	}
	if (bad) {
		usage(stderr);
		return 2;
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!npaths) {
		memcpy(paths, mix, sizeof(mix));
		npaths = sizeof(mix) / sizeof(mix[0]);
	}
	if (read_ticks(sock, &t0) < 0) {
		fprintf(stderr, "api-load: GET %s on %s failed: is the agent running?\n", API_PATH_STATUS, sock);
		return 2;
	}
	total = rate * duration;
	period = 1000.0 / (double)rate;
	due = malloc((size_t)total * sizeof(*due));
	if (!due)
		return 2;
	memset(per, 0, sizeof(per));
	for (long i = 0; i < nconns; i++)
		conns[i] = (struct conn){.fd = -1};
	start = now_ms() + 10;
	for (long k = 0; k < total; k++)
		due[k] = start + (double)k * period;
	deadline = due[total - 1] + timeout_ms + 1000;

	while (done < total && now_ms() < deadline) {
		struct pollfd pfd[CONNS_MAX];
		int map[CONNS_MAX], np = 0, timeout;
		double now = now_ms();

		/* Start every request that is due, while a connection is free. */
		for (long i = 0; i < nconns && next < total && due[next] <= now; i++) {
			struct conn *c = &conns[i];

			if (c->busy)
				continue;
			if (c->fd < 0) {
				c->fd = connect_unix(sock, true);
				if (c->fd < 0) {
					/* Failed at once: counted, and its latency is not (there is none). */
					c->fd = -1;
					connect_errors++;
					per[next % npaths].errors++;
					next++;
					done++;
					i--;
					continue;
				}
			}
			c->busy = true;
			c->req = next;
			c->outlen = (size_t)snprintf(c->out, sizeof(c->out),
						     "GET %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: api-load\r\n\r\n",
						     paths[next % npaths].url);
			c->outoff = 0;
			c->inlen = 0;
			next++;
		}
		for (long i = 0; i < nconns; i++) {
			if (!conns[i].busy)
				continue;
			pfd[np].fd = conns[i].fd;
			pfd[np].events = conns[i].outoff < conns[i].outlen ? POLLOUT : POLLIN;
			map[np++] = (int)i;
		}
		timeout = 50;
		if (next < total) {
			double wait = due[next] - now_ms();

			timeout = wait <= 0 ? 0 : wait < 50 ? (int)wait + 1 : 50;
			for (long i = 0; i < nconns; i++)
				if (!conns[i].busy && wait <= 0)
					timeout = 0;
		}
		if (poll(pfd, (nfds_t)np, timeout) < 0 && errno != EINTR)
			break;
		now = now_ms();
		for (int j = 0; j < np; j++) {
			struct conn *c = &conns[map[j]];
			const struct path *p = &paths[c->req % npaths];
			bool fail = false, complete = false, close_after = true;

			if (pfd[j].revents & POLLOUT) {
				ssize_t n = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);

				if (n > 0 && c->outoff == 0)
					c->sent = now;
				if (n > 0)
					c->outoff += (size_t)n;
				else if (n < 0 && errno != EAGAIN)
					fail = true;
			} else if (pfd[j].revents & (POLLIN | POLLHUP | POLLERR)) {
				ssize_t n;
				int status;
				size_t head;
				long clen;

				if (c->incap - c->inlen < 16384) {
					char *nb = realloc(c->in, c->incap + 65536);

					if (!nb) {
						fail = true;
						goto settle;
					}
					c->in = nb;
					c->incap += 65536;
				}
				n = read(c->fd, c->in + c->inlen, c->incap - c->inlen);
				if (n > 0)
					c->inlen += (size_t)n;
				else if (n < 0 && errno == EAGAIN)
					goto settle;
				if (c->inlen > BODY_MAX) {
					fail = true;
				} else if (parse_head(c->in, c->inlen, &status, &head, &clen, &close_after) == 0) {
					if (clen >= 0 && c->inlen >= head + (size_t)clen) {
						complete = true;
						if (status != 200) {
							bad_status++;
							fail = true;
						} else if (p->kind && (clen == 0 || c->in[head] != p->kind)) {
							bad_body++;
							fail = true;
						}
					} else if (n == 0) {
						fail = true; /* closed before the whole body */
					}
				} else if (n <= 0) {
					fail = true;
				}
			}
settle:
			if (!fail && !complete && now - due[c->req] > timeout_ms) {
				timeouts++;
				fail = true;
			}
			if (fail) {
				per[c->req % npaths].errors++;
				all.errors++;
				done++;
				conn_close(c);
			} else if (complete) {
				record(&per[c->req % npaths], now - due[c->req]);
				record(&all, now - due[c->req]);
				record(&lag, c->sent - due[c->req]);
				record(&service, now - c->sent);
				done++;
				if (close_after)
					conn_close(c);
				else
					c->busy = false; /* kept alive: the next request reuses it */
			}
		}
	}
	for (long i = 0; i < nconns; i++)
		if (conns[i].busy) {
			timeouts++;
			all.errors++;
			per[conns[i].req % npaths].errors++;
		}
	all.errors += connect_errors;
	if (read_ticks(sock, &t1) < 0) {
		fprintf(stderr, "api-load: GET %s failed after the run: did the agent stop?\n", API_PATH_STATUS);
		return 2;
	}

	double elapsed_s = (t1.at_ms - t0.at_ms) / 1000.0;
	long long expected = (long long)((t1.at_ms - t0.at_ms) / (double)t0.interval_ms);
	long long ticks = t1.count - t0.count, late = t1.late - t0.late;
	/* One tick of slack: the two status reads fall at arbitrary points of the schedule. */
	long long missed = expected - ticks > 1 ? expected - ticks - 1 : 0;

	printf("api-load: %ld requests at %ld/s for %ld s over %s, up to %ld in flight\n", total, rate, duration, sock,
	       nconns);
	printf("%-24s %7s %9s %9s %9s %7s\n", "path", "n", "p50 ms", "p99 ms", "max ms", "errors");
	for (size_t i = 0; i <= npaths; i++) {
		struct stats *s = i < npaths ? &per[i] : &all;

		if (s->n) /* lat is NULL when every request of the path failed */
			qsort(s->lat, s->n, sizeof(double), cmp_double);
		printf("%-24s %7zu %9.3f %9.3f %9.3f %7lu\n", i < npaths ? paths[i].url : "all", s->n,
		       quantile(s->lat, s->n, 0.50), quantile(s->lat, s->n, 0.99), s->n ? s->lat[s->n - 1] : 0.0,
		       s->errors);
	}
	if (lag.n) {
		qsort(lag.lat, lag.n, sizeof(double), cmp_double);
		qsort(service.lat, service.n, sizeof(double), cmp_double);
	}
	printf("of which: the client sent late by p50 %.3f / p99 %.3f ms; from send to answer p50 %.3f / p99 %.3f ms\n",
	       quantile(lag.lat, lag.n, 0.5), quantile(lag.lat, lag.n, 0.99), quantile(service.lat, service.n, 0.5),
	       quantile(service.lat, service.n, 0.99));
	printf("errors: %lu connect, %lu timeout (> %.0f ms), %lu status, %lu body\n", connect_errors, timeouts,
	       timeout_ms, bad_status, bad_body);
	printf("ticks: %lld done in %.1f s at %lld ms (%lld expected), %lld late, %lld missed\n", ticks, elapsed_s,
	       t0.interval_ms, expected, late, missed);
	printf("budget: p99 %.3f ms / %.0f ms = %.2f\n", quantile(all.lat, all.n, 0.99), BUDGET_MS,
	       quantile(all.lat, all.n, 0.99) / BUDGET_MS);
	for (size_t i = 0; i < npaths; i++)
		free(per[i].lat);
	free(all.lat);
	free(lag.lat);
	free(service.lat);
	free(due);
	for (long i = 0; i < nconns; i++) {
		conn_close(&conns[i]);
		free(conns[i].in);
	}
	if (check && (all.errors || late || missed)) {
		printf("api-load: FAILED: %lu failed requests, %lld late ticks, %lld missed ticks\n", all.errors, late,
		       missed);
		return 1;
	}
	return 0;
}
