/*
 * Tests for stubhttp against a scripted HTTP server on a thread (127.0.0.1, an ephemeral port): a response read in
 * one piece or a byte at a time, keep-alive reuse, chunked bodies, Connection: close, a kept connection that the
 * server closes, HTTP/1.0 bodies ended by the close, a server that never answers (the deadline holds), bodies
 * too large, responses that are not HTTP or end early, a refused connection, a namespace change, and URL parsing
 * (including [IPv6] and a name resolved through the resolver).
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "observe/stubhttp.h"
#include "testskip.h"

#define MAX_SCRIPTS 16
#define BODY "Active connections: 1 \nserver accepts handled requests\n 7 7 9 \nReading: 0 Writing: 1 Waiting: 0 \n"

/* What the server does with one request. */
struct script {
	const char *pieces[160]; /* sent in turn, with DELAY_US between them */
	int delay_us;
	bool close_after;      /* close the connection after answering */
	bool silent;           /* read the request, answer nothing, hold the connection until the test ends */
};

struct server {
	int lfd;
	int family;
	uint16_t port;
	pthread_t thread;
	pthread_mutex_t mu;
	struct script scripts[MAX_SCRIPTS];
	size_t nscripts, next;
	int accepts, requests, closes;
	pthread_cond_t closed; /* signalled when closes grows */
	char last_request[1024];
	volatile bool stop;
};

static void send_str(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n > 0) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* Read one request (up to the blank line); false when the client closed. */
static bool read_request(struct server *sv, int fd)
{
	char buf[1024];
	size_t n = 0;

	while (n < sizeof(buf) - 1) {
		ssize_t r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);

		if (r <= 0)
			return false;
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n")) {
			pthread_mutex_lock(&sv->mu);
			sv->requests++;
			memcpy(sv->last_request, buf, n + 1);
			pthread_mutex_unlock(&sv->mu);
			return true;
		}
	}
	return false;
}

static void *serve(void *arg)
{
	struct server *sv = arg;

	while (!sv->stop) {
		struct timeval tv = {.tv_sec = 0, .tv_usec = 50000};
		int fd;

		setsockopt(sv->lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		fd = accept(sv->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		pthread_mutex_lock(&sv->mu);
		sv->accepts++;
		pthread_mutex_unlock(&sv->mu);
		while (!sv->stop && read_request(sv, fd)) {
			struct script sc = {.close_after = true, .pieces = {"HTTP/1.1 500 No Script\r\nContent-Length: 0\r\n\r\n"}};

			pthread_mutex_lock(&sv->mu);
			if (sv->next < sv->nscripts)
				sc = sv->scripts[sv->next++];
			pthread_mutex_unlock(&sv->mu);
			if (sc.silent) {
				while (!sv->stop)
					usleep(10000);
				break;
			}
			for (int i = 0; i < 160 && sc.pieces[i]; i++) {
				if (i && sc.delay_us)
					usleep((useconds_t)sc.delay_us);
				send_str(fd, sc.pieces[i]);
			}
			if (sc.close_after)
				break;
		}
		close(fd);
		pthread_mutex_lock(&sv->mu);
		sv->closes++;
		pthread_cond_broadcast(&sv->closed);
		pthread_mutex_unlock(&sv->mu);
	}
	return NULL;
}

/* Wait (bounded: 5 s) until the server has closed N connections. */
static void wait_closes(struct server *sv, int n)
{
	struct timespec until;
	int got;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&sv->mu);
	while (sv->closes < n && pthread_cond_timedwait(&sv->closed, &sv->mu, &until) == 0)
		;
	got = sv->closes;
	pthread_mutex_unlock(&sv->mu);
	assert_int_equal(got, n);
}

static int start_server(struct server *sv, int family)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int one = 1;

	memset(sv, 0, sizeof(*sv));
	pthread_mutex_init(&sv->mu, NULL);
	pthread_cond_init(&sv->closed, NULL);
	sv->family = family;
	sv->lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sv->lfd < 0)
		return -1;
	setsockopt(sv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	if (bind(sv->lfd, (struct sockaddr *)&ss, len) < 0 || listen(sv->lfd, 8) < 0 ||
	    getsockname(sv->lfd, (struct sockaddr *)&ss, &len) < 0) {
		close(sv->lfd);
		return -1;
	}
	sv->port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					   : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return pthread_create(&sv->thread, NULL, serve, sv) == 0 ? 0 : -1;
}

static void stop_server(struct server *sv)
{
	sv->stop = true;
	pthread_join(sv->thread, NULL);
	close(sv->lfd);
	pthread_cond_destroy(&sv->closed);
	pthread_mutex_destroy(&sv->mu);
}

static void add_script(struct server *sv, struct script sc)
{
	pthread_mutex_lock(&sv->mu);
	assert_true(sv->nscripts < MAX_SCRIPTS);
	sv->scripts[sv->nscripts++] = sc;
	pthread_mutex_unlock(&sv->mu);
}

static int counter(struct server *sv, const int *field)
{
	int v;

	pthread_mutex_lock(&sv->mu);
	v = *field;
	pthread_mutex_unlock(&sv->mu);
	return v;
}

struct fixture {
	struct server sv;
	struct stubhttp *c;
	char url[128];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[128];

	if (!f || start_server(&f->sv, AF_INET) < 0)
		return -1;
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%u/nginx_status", f->sv.port);
	if (stubhttp_new(f->url, &f->c, err, sizeof(err)) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	stubhttp_free(f->c);
	stop_server(&f->sv);
	free(f);
	return 0;
}

struct got {
	int r, status;
	size_t len;
	char body[2048];
	char err[256];
};

static struct got get(struct stubhttp *c, uint64_t gen, int timeout_ms)
{
	struct got g;

	memset(&g, 0, sizeof(g));
	g.r = stubhttp_get(c, -1, gen, timeout_ms, g.body, sizeof(g.body), &g.len, &g.status, g.err, sizeof(g.err));
	return g;
}

static const char *const ok_response = "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/plain\r\n"
				       "Content-Length: 97\r\nConnection: keep-alive\r\n\r\n" BODY;

static void test_keepalive_reuse(void **state)
{
	struct fixture *f = *state;
	struct got g;

	assert_int_equal(strlen(BODY), 97);
	add_script(&f->sv, (struct script){.pieces = {ok_response}});
	add_script(&f->sv, (struct script){.pieces = {ok_response}});
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, 0);
	assert_int_equal(g.status, 200);
	assert_int_equal(g.len, 97);
	assert_string_equal(g.body, BODY);
	assert_true(stubhttp_connected(f->c));
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, 0);
	assert_string_equal(g.body, BODY);
	assert_int_equal(counter(&f->sv, &f->sv.accepts), 1);
	assert_int_equal(counter(&f->sv, &f->sv.requests), 2);
	/* What was sent. */
	pthread_mutex_lock(&f->sv.mu);
	assert_true(strncmp(f->sv.last_request, "GET /nginx_status HTTP/1.1\r\n", 28) == 0);
	assert_non_null(strstr(f->sv.last_request, "\r\nHost: 127.0.0.1:"));
	assert_non_null(strstr(f->sv.last_request, "\r\nUser-Agent: ngx-autotune/"));
	pthread_mutex_unlock(&f->sv.mu);
}

/* A socket maker (the writer's sockets of nginx's namespace): each new connection's socket is its, blocking as made
 * and non-blocking in use; its refusal is the fetch's error. */
struct maker {
	int calls, family, refuse;
};

static int make_socket(void *ctx, int family)
{
	struct maker *m = ctx;

	m->calls++;
	m->family = family;
	if (m->refuse)
		return -m->refuse;
	return socket(family, SOCK_STREAM, 0);
}

static void test_socket_maker(void **state)
{
	struct fixture *f = *state;
	struct maker m = {0};
	struct got g;

	add_script(&f->sv, (struct script){.pieces = {ok_response}});
	add_script(&f->sv, (struct script){.pieces = {"HTTP/1.1 200 OK\r\nContent-Length: 97\r\nConnection: close\r\n\r\n"
						      BODY}});
	stubhttp_set_socket(f->c, make_socket, &m);
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, 0);
	assert_string_equal(g.body, BODY);
	assert_int_equal(m.calls, 1);
	assert_int_equal(m.family, AF_INET);
	g = get(f->c, 0, 1000); /* the kept connection: no new socket */
	assert_int_equal(g.r, 0);
	assert_int_equal(m.calls, 1);
	m.refuse = ESTALE; /* the server closed: a new connection, refused */
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, -ESTALE);
	assert_int_equal(m.calls, 2);
	assert_non_null(strstr(g.err, "connect to 127.0.0.1 port "));
	stubhttp_set_socket(f->c, NULL, NULL);
}

static void test_partial_reads(void **state)
{
	struct fixture *f = *state;
	static struct script sc;
	static char head[9], singles[150][2], tail[512];
	const char *r = ok_response;
	struct got g;

	/* The first 8 bytes, then 150 a byte at a time (the headers, the blank line, the body's start), then the
	 * rest: every boundary falls between two reads somewhere. */
	assert_true(strlen(r) > 158 + 10);
	memset(&sc, 0, sizeof(sc));
	sc.delay_us = 200;
	memcpy(head, r, 8);
	sc.pieces[0] = head;
	for (int i = 0; i < 150; i++) {
		singles[i][0] = r[8 + i];
		sc.pieces[1 + i] = singles[i];
	}
	snprintf(tail, sizeof(tail), "%s", r + 158);
	sc.pieces[151] = tail;
	add_script(&f->sv, sc);
	g = get(f->c, 0, 2000);
	assert_int_equal(g.r, 0);
	assert_string_equal(g.body, BODY);

	/* Headers and body split at the blank line, in two writes far apart. */
	add_script(&f->sv, (struct script){.pieces = {"HTTP/1.1 200 OK\r\nContent-Length: 97\r\n\r", "\n" BODY},
					   .delay_us = 20000});
	g = get(f->c, 0, 2000);
	assert_int_equal(g.r, 0);
	assert_string_equal(g.body, BODY);
	assert_int_equal(counter(&f->sv, &f->sv.accepts), 1);
}

static void test_chunked(void **state)
{
	struct fixture *f = *state;
	struct got g;

	add_script(&f->sv, (struct script){.pieces = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
						      "5\r\nActiv\r\n", "a;ext=1\r\ne connecti\r\n",
						      "0\r\nX-Trailer: 1\r\n\r\n"},
					   .delay_us = 1000});
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, 0);
	assert_int_equal(g.status, 200);
	assert_string_equal(g.body, "Active connecti");
	assert_false(stubhttp_connected(f->c)); /* not reused after chunked framing */

	/* A bad chunk size, and a chunked body too large. */
	add_script(&f->sv, (struct script){.pieces = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}});
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, -EPROTO);
	assert_non_null(strstr(g.err, "chunked"));
	add_script(&f->sv, (struct script){.pieces = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n"}});
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, -EMSGSIZE);
	/* Another transfer coding. */
	add_script(&f->sv, (struct script){.pieces = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"}});
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, -EPROTO);
	assert_non_null(strstr(g.err, "gzip"));
}

static void test_close_and_reconnect(void **state)
{
	struct fixture *f = *state;
	struct got g;

	/* Connection: close from the server: the next fetch connects again. */
	add_script(&f->sv, (struct script){.pieces = {"HTTP/1.1 200 OK\r\nContent-Length: 97\r\nConnection: close\r\n\r\n"
						      BODY},
					   .close_after = true});
	add_script(&f->sv, (struct script){.pieces = {ok_response}, .close_after = true}); /* closes unannounced */
	add_script(&f->sv, (struct script){.pieces = {ok_response}});
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, 0);
	assert_false(stubhttp_connected(f->c));
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, 0);
	assert_true(stubhttp_connected(f->c));
	assert_int_equal(counter(&f->sv, &f->sv.accepts), 2);
	/* The server has closed the kept connection (keepalive_timeout): the fetch finds out and retries once. */
	wait_closes(&f->sv, 2);
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, 0);
	assert_string_equal(g.body, BODY);
	assert_int_equal(counter(&f->sv, &f->sv.accepts), 3);
	assert_int_equal(counter(&f->sv, &f->sv.requests), 3);

	/* Another namespace generation: the kept connection is not used. */
	add_script(&f->sv, (struct script){.pieces = {ok_response}});
	g = get(f->c, 7, 1000);
	assert_int_equal(g.r, 0);
	assert_int_equal(counter(&f->sv, &f->sv.accepts), 4);
}

static void test_http10_until_close(void **state)
{
	struct fixture *f = *state;
	struct got g;

	add_script(&f->sv, (struct script){.pieces = {"HTTP/1.0 200 OK\r\n\r\n", "Active", " connections: 1\n"},
					   .delay_us = 5000,
					   .close_after = true});
	g = get(f->c, 0, 1000);
	assert_int_equal(g.r, 0);
	assert_string_equal(g.body, "Active connections: 1\n");
	assert_false(stubhttp_connected(f->c));
}

static double wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void test_timeout(void **state)
{
	struct fixture *f = *state;
	struct got g;
	double t0;

	add_script(&f->sv, (struct script){.silent = true});
	t0 = wall_ms();
	g = get(f->c, 0, 200);
	assert_int_equal(g.r, -ETIMEDOUT);
	assert_true(wall_ms() - t0 >= 150);
	assert_true(wall_ms() - t0 < 2000);
	assert_non_null(strstr(g.err, "in time"));
	assert_false(stubhttp_connected(f->c));
}

/* A timed get: its phases read off the deadline's timerfd, in order, and within what the test's clock saw; a fresh
 * get makes and closes its own connection, a kept one is reused without a connect. */
static void test_timed(void **state)
{
	static const char *const head = "HTTP/1.1 200 OK\r\nContent-Length: 97\r\n\r\n";
	struct fixture *f = *state;
	struct stubhttp_timing t;
	struct got g;
	double t0, wall_us;

	add_script(&f->sv, (struct script){.pieces = {head, BODY}, .delay_us = 30000});
	add_script(&f->sv, (struct script){.pieces = {ok_response}});
	add_script(&f->sv, (struct script){.pieces = {ok_response}});
	add_script(&f->sv, (struct script){.silent = true});
	t0 = wall_ms();
	g.r = stubhttp_get_timed(f->c, -1, 0, 1000, false, g.body, sizeof(g.body), &g.len, &g.status, &t, g.err,
				 sizeof(g.err));
	wall_us = (wall_ms() - t0) * 1000;
	assert_int_equal(g.r, 0);
	assert_string_equal(g.body, BODY);
	assert_true(t.connected && t.first_byte);
	assert_true(t.connect_us <= t.ttfb_us);
	assert_true(t.ttfb_us < t.total_us);
	assert_true(t.total_us >= 30000);           /* the body came 30 ms after the head */
	assert_true(t.total_us - t.ttfb_us >= 25000);
	assert_true((double)t.total_us <= wall_us + 1000);
	assert_true(stubhttp_connected(f->c));
	/* Kept: the same connection, no connect. */
	g.r = stubhttp_get_timed(f->c, -1, 0, 1000, false, g.body, sizeof(g.body), &g.len, &g.status, &t, g.err,
				 sizeof(g.err));
	assert_int_equal(g.r, 0);
	assert_false(t.connected);
	assert_true(t.first_byte && t.ttfb_us <= t.total_us);
	assert_int_equal(counter(&f->sv, &f->sv.accepts), 1);
	/* Fresh: a new connection, closed after the answer. */
	g.r = stubhttp_get_timed(f->c, -1, 0, 1000, true, g.body, sizeof(g.body), &g.len, &g.status, &t, g.err,
				 sizeof(g.err));
	assert_int_equal(g.r, 0);
	assert_true(t.connected);
	assert_false(stubhttp_connected(f->c));
	wait_closes(&f->sv, 2);
	assert_int_equal(counter(&f->sv, &f->sv.accepts), 2);
	/* A timeout takes the whole of it. */
	g.r = stubhttp_get_timed(f->c, -1, 0, 150, true, g.body, sizeof(g.body), &g.len, &g.status, &t, g.err,
				 sizeof(g.err));
	assert_int_equal(g.r, -ETIMEDOUT);
	assert_true(t.connected);
	assert_false(t.first_byte);
	assert_int_equal(t.total_us, 150000);
}

static void test_bad_responses(void **state)
{
	struct fixture *f = *state;
	static const struct {
		const char *response;
		int r;
		const char *msg;
	} cases[] = {
		{"garbage\r\n\r\n", -EPROTO, "status line"},
		{"HTTP/2 200\r\n\r\n", -EPROTO, "status line"},
		{"HTTP/1.1 2000 OK\r\n\r\n", -EPROTO, "status line"},
		{"HTTP/1.1 100 Continue\r\n\r\n", -EPROTO, "informational"},
		{"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", -EMSGSIZE, "5000 bytes"},
		{"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", -EPROTO, "Content-Length"},
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", -EPROTO, "two different"},
		{"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", -EPROTO, "malformed"},
		{"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", -EPROTO, "middle"},
		{"HTTP/1.1 200 OK\r\nContent-Length: 5", -EPROTO, "middle"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct got g;

		add_script(&f->sv, (struct script){.pieces = {cases[i].response}, .close_after = true});
		g = get(f->c, 0, 1000);
		if (g.r != cases[i].r || !strstr(g.err, cases[i].msg))
			fail_msg("case %zu: %d '%s', want %d '%s'", i, g.r, g.err, cases[i].r, cases[i].msg);
		assert_false(stubhttp_connected(f->c));
	}
	/* Headers without end. */
	{
		static char big[STUBHTTP_HEAD_MAX + 64];
		struct got g;

		memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
		memset(big + 20, 'a', sizeof(big) - 21);
		add_script(&f->sv, (struct script){.pieces = {big}, .close_after = true});
		g = get(f->c, 0, 1000);
		assert_int_equal(g.r, -EMSGSIZE);
	}
	/* A status that is not 200 is returned with its body, and the connection kept. */
	{
		struct got g;

		add_script(&f->sv, (struct script){.pieces = {"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"}});
		g = get(f->c, 0, 1000);
		assert_int_equal(g.r, 0);
		assert_int_equal(g.status, 404);
		assert_string_equal(g.body, "not found");
		assert_true(stubhttp_connected(f->c));
		add_script(&f->sv, (struct script){.pieces = {"HTTP/1.1 204 No Content\r\n\r\n"}});
		g = get(f->c, 0, 1000);
		assert_int_equal(g.r, 0);
		assert_int_equal(g.status, 204);
		assert_int_equal(g.len, 0);
		assert_true(stubhttp_connected(f->c));
		/* Bytes after the response: the body is right, but the connection is not trusted again. */
		add_script(&f->sv, (struct script){.pieces = {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA"}});
		g = get(f->c, 0, 1000);
		assert_int_equal(g.r, 0);
		assert_string_equal(g.body, "hello");
		assert_false(stubhttp_connected(f->c));
	}
}

static void test_refused_and_urls(void **state)
{
	struct fixture *f = *state;
	static const char *const bad[] = {
		"http://",          "http:///x",         "http://:80/",   "http://h:0/",      "http://h:65536/",
		"http://h:/",       "http://h:8x/",      "http://[::1/",  "http://h/a b",     "http://u@h/",
		"https://h/",       "ftp://h/",          "",
	};
	struct stubhttp *c;
	char url[160], err[128];
	struct got g;
	int fd;

	(void)f;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = NULL;
		if (stubhttp_new(bad[i], &c, err, sizeof(err)) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_null(c);
	}
	assert_true(stubhttp_handles("http://127.0.0.1/nginx_status"));
	assert_true(stubhttp_handles("HTTP://localhost"));
	assert_false(stubhttp_handles("https://127.0.0.1/"));
	assert_false(stubhttp_handles("http://user:pw@127.0.0.1/"));

	/* A port nobody listens on: a bound, closed socket's. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	{
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t len = sizeof(a);

		assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
		snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(a.sin_port));
	}
	assert_int_equal(stubhttp_new(url, &c, err, sizeof(err)), 0);
	g = get(c, 0, 1000);
	assert_int_equal(g.r, -ECONNREFUSED);
	assert_non_null(strstr(g.err, "connect to 127.0.0.1 port"));
	stubhttp_free(c);
	close(fd);
	stubhttp_free(NULL);
}

/* A name through the resolver ("localhost" may come first as ::1, where nothing listens: the next is tried), and
 * the request line of a URL with a query, a fragment and no path. */
static void test_name_and_request_line(void **state)
{
	struct fixture *f = *state;
	struct stubhttp *c;
	char url[160], err[128];
	struct got g;

	snprintf(url, sizeof(url), "http://localhost:%u?x=1#frag", f->sv.port);
	assert_int_equal(stubhttp_new(url, &c, err, sizeof(err)), 0);
	add_script(&f->sv, (struct script){.pieces = {ok_response}});
	g = get(c, 0, 1000);
	assert_int_equal(g.r, 0);
	pthread_mutex_lock(&f->sv.mu);
	assert_true(strncmp(f->sv.last_request, "GET /?x=1 HTTP/1.1\r\n", 20) == 0);
	snprintf(url, sizeof(url), "\r\nHost: localhost:%u\r\n", f->sv.port);
	assert_non_null(strstr(f->sv.last_request, url));
	pthread_mutex_unlock(&f->sv.mu);
	stubhttp_free(c);
}

static void test_ipv6(void **state)
{
	struct server sv6;
	struct stubhttp *c;
	char url[160], err[128];
	struct got g;

	(void)state;
	if (start_server(&sv6, AF_INET6) < 0)
		testskip_allowed("no IPv6 loopback (::1): a VM's provider may turn IPv6 off (ipv6.disable=1)");
	snprintf(url, sizeof(url), "http://[::1]:%u/nginx_status", sv6.port);
	assert_int_equal(stubhttp_new(url, &c, err, sizeof(err)), 0);
	add_script(&sv6, (struct script){.pieces = {ok_response}});
	g = get(c, 0, 1000);
	assert_int_equal(g.r, 0);
	assert_string_equal(g.body, BODY);
	pthread_mutex_lock(&sv6.mu);
	snprintf(url, sizeof(url), "\r\nHost: [::1]:%u\r\n", sv6.port);
	assert_non_null(strstr(sv6.last_request, url));
	pthread_mutex_unlock(&sv6.mu);
	stubhttp_free(c);
	stop_server(&sv6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_keepalive_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_maker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_reads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chunked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_and_reconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http10_until_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_responses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_and_urls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_name_and_request_line, setup, teardown),
		cmocka_unit_test(test_ipv6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
