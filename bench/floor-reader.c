/*
 * floor-reader: the cost floor of one agent tick. Every interval it reads the same kernel files the agent reads
 * (nginx's /proc/PID/net/{netstat,snmp,softnet_stat}, /proc/softirqs, /proc/stat, /proc/interrupts, each worker's
 * /proc/PID/schedstat), the new bytes of the access log (counting newlines only) and does one stub_status GET on
 * a reused libcurl handle; with -c N, the synthetic client's requests too (-C URL, N a tick: the first on a kept
 * connection, the others each on a fresh one, as the agent's [client] requests_per_tick), timed apart. It parses nothing, stores nothing and builds no frame: whatever the agent spends above
 * this is the price of parsing, storing and serving. It runs a warm-up tick, prints "started", runs TICKS ticks on
 * an absolute schedule, prints its own CPU per tick and peak RSS on a "done" line, and with -w then waits (at most
 * a minute) for a signal so that the caller can read its /proc figures after the last tick.
 *
 * Run it in nginx's network namespace (ip netns exec NS floor-reader ...) so that 127.0.0.1 is nginx's.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define FLOOR_MAX_WORKERS 64
#define FLOOR_MAX_TICKS 1000000
#define FLOOR_WAIT_S 60

struct floor_state {
	pid_t master;
	pid_t workers[FLOOR_MAX_WORKERS];
	unsigned nworkers;
	int log_fd;
	CURL *curl;
	char *buf;
	size_t bufcap;
	uint64_t bytes;      /* bytes read from /proc this run, so the reads cannot be elided */
	uint64_t log_lines;  /* newlines seen in the access log */
	uint64_t stub_bytes; /* bytes of stub_status bodies */
	unsigned stub_fail;
	CURL *kept, *fresh;  /* the client's two handles (-c) */
	long client_n;       /* its requests a tick */
	unsigned client_fail;
	double *client_ms;   /* each counted tick's client CPU, ms */
	long nclient;
};

static volatile sig_atomic_t floor_stop;

static void floor_on_signal(int sig)
{
	(void)sig;
	floor_stop = 1;
}

static int64_t floor_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double floor_thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static double floor_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Read PATH whole, as the agent does (open, read to EOF, close). */
static int floor_read_whole(struct floor_state *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	for (;;) {
		r = read(fd, s->buf, s->bufcap);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		s->bytes += (uint64_t)r;
	}
	close(fd);
	return r < 0 ? -errno : 0;
}

/* The new bytes of the access log since the last tick; only newlines are counted. */
static void floor_read_log(struct floor_state *s)
{
	ssize_t r;

	if (s->log_fd < 0)
		return;
	for (;;) {
		r = read(s->log_fd, s->buf, s->bufcap);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (const char *p = s->buf, *end = s->buf + r; (p = memchr(p, '\n', (size_t)(end - p))); p++)
			s->log_lines++;
	}
}

static size_t floor_on_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct floor_state *s = arg;

	(void)ptr;
	s->stub_bytes += size * nmemb;
	return size * nmemb;
}

/* The master's children, once: the floor does not follow worker restarts. */
static void floor_find_workers(struct floor_state *s)
{
	char path[64], line[4096];
	char *p, *end;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)s->master, (int)s->master);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		for (p = line; s->nworkers < FLOOR_MAX_WORKERS; p = end) {
			long v = strtol(p, &end, 10);

			if (end == p || v <= 0)
				break;
			s->workers[s->nworkers++] = (pid_t)v;
		}
	}
	fclose(f);
}

static void floor_tick(struct floor_state *s)
{
	static const char *const global[] = {"/proc/softirqs", "/proc/stat", "/proc/interrupts"};
	static const char *const net[] = {"netstat", "snmp", "softnet_stat"};
	char path[96];

	for (size_t i = 0; i < sizeof(net) / sizeof(net[0]); i++) {
		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)s->master, net[i]);
		floor_read_whole(s, path);
	}
	for (size_t i = 0; i < sizeof(global) / sizeof(global[0]); i++)
		floor_read_whole(s, global[i]);
	for (unsigned i = 0; i < s->nworkers; i++) {
		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)s->workers[i]);
		floor_read_whole(s, path);
	}
	floor_read_log(s);
	if (curl_easy_perform(s->curl) != CURLE_OK)
		s->stub_fail++;
	if (s->client_n > 0) {
		double c0 = floor_thread_cpu_ms();

		for (long i = 0; i < s->client_n; i++)
			if (curl_easy_perform(i ? s->fresh : s->kept) != CURLE_OK)
				s->client_fail++;
		if (s->client_ms)
			s->client_ms[s->nclient++] = floor_thread_cpu_ms() - c0;
	}
}

static int floor_cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static int floor_cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

static void floor_usage(void)
{
	fprintf(stderr, "usage: floor-reader -p NGINX_PIDFILE -l ACCESS_LOG -u STUB_URL [-i INTERVAL_MS] [-n TICKS] "
			"[-w] [-c N -C CLIENT_URL]\n");
}

static pid_t floor_read_pidfile(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &v) != 1 || v <= 0 || v > INT32_MAX)
		v = 0;
	fclose(f);
	return (pid_t)v;
}

int main(int argc, char **argv)
{
	struct floor_state s = {.log_fd = -1};
	const char *pidfile = NULL, *logpath = NULL, *url = NULL, *client_url = NULL;
	long interval_ms = 1000, ticks = 30;
	bool wait_signal = false;
	int64_t *late, next, step;
	double cpu0, cpu1;
	struct rusage ru;
	long nlate = 0;
	int c;

	while ((c = getopt(argc, argv, "p:l:u:i:n:wc:C:")) != -1) {
		switch (c) {
		case 'p': pidfile = optarg; break;
		case 'l': logpath = optarg; break;
		case 'u': url = optarg; break;
		case 'i': interval_ms = strtol(optarg, NULL, 10); break;
		case 'n': ticks = strtol(optarg, NULL, 10); break;
		case 'w': wait_signal = true; break;
		case 'c': s.client_n = strtol(optarg, NULL, 10); break;
		case 'C': client_url = optarg; break;
		default: floor_usage(); return 2;
		}
	}
	if (!pidfile || !logpath || !url || interval_ms < 10 || interval_ms > 60000 || ticks < 1 ||
	    ticks > FLOOR_MAX_TICKS || s.client_n < 0 || s.client_n > 64 || (s.client_n && !client_url)) {
		floor_usage();
		return 2;
	}
	s.master = floor_read_pidfile(pidfile);
	if (!s.master) {
		fprintf(stderr, "floor-reader: no pid in %s\n", pidfile);
		return 1;
	}
	floor_find_workers(&s);
	s.log_fd = open(logpath, O_RDONLY | O_CLOEXEC);
	if (s.log_fd >= 0)
		lseek(s.log_fd, 0, SEEK_END);
	s.bufcap = 65536;
	s.buf = malloc(s.bufcap);
	late = calloc((size_t)ticks, sizeof(*late));
	if (!s.buf || !late || curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(s.curl = curl_easy_init())) {
		fprintf(stderr, "floor-reader: out of memory or libcurl failed\n");
		return 1;
	}
	curl_easy_setopt(s.curl, CURLOPT_URL, url);
	curl_easy_setopt(s.curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s.curl, CURLOPT_TIMEOUT_MS, interval_ms * 8 / 10);
	curl_easy_setopt(s.curl, CURLOPT_WRITEFUNCTION, floor_on_body);
	curl_easy_setopt(s.curl, CURLOPT_WRITEDATA, &s);
	if (s.client_n) {
		s.kept = curl_easy_init();
		s.fresh = curl_easy_init();
		s.client_ms = calloc((size_t)ticks, sizeof(*s.client_ms));
		if (!s.kept || !s.fresh || !s.client_ms) {
			fprintf(stderr, "floor-reader: out of memory or libcurl failed\n");
			return 1;
		}
		for (int i = 0; i < 2; i++) {
			CURL *h = i ? s.fresh : s.kept;

			curl_easy_setopt(h, CURLOPT_URL, client_url);
			curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
			curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, interval_ms * 8 / 10);
			curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, floor_on_body);
			curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
		}
		curl_easy_setopt(s.fresh, CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(s.fresh, CURLOPT_FORBID_REUSE, 1L);
	}
	signal(SIGTERM, floor_on_signal);
	signal(SIGINT, floor_on_signal);

	/* The warm-up tick pays for the first connection and the lazy loading of libcurl; it is not counted. */
	step = (int64_t)interval_ms * 1000000;
	next = floor_mono_ns();
	floor_tick(&s);
	printf("started pid=%d workers=%u\n", (int)getpid(), s.nworkers);
	fflush(stdout);
	s.nclient = 0;
	cpu0 = floor_cpu_ms();
	for (long i = 0; i < ticks && !floor_stop; i++) {
		struct timespec ts;

		next += step;
		ts.tv_sec = (time_t)(next / 1000000000);
		ts.tv_nsec = (long)(next % 1000000000);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !floor_stop)
			;
		late[nlate++] = floor_mono_ns() - next;
		floor_tick(&s);
	}
	cpu1 = floor_cpu_ms();
	getrusage(RUSAGE_SELF, &ru);
	qsort(late, (size_t)nlate, sizeof(*late), floor_cmp_i64);
	if (s.nclient)
		qsort(s.client_ms, (size_t)s.nclient, sizeof(*s.client_ms), floor_cmp_double);
	printf("done ticks=%ld cpu_ms_per_tick=%.4f maxrss_kib=%ld late_p50_ms=%.3f late_p99_ms=%.3f "
	       "proc_bytes=%llu log_lines=%llu stub_bytes=%llu stub_fail=%u workers=%u client_cpu_ms_median=%.4f "
	       "client_fail=%u\n",
	       nlate, nlate ? (cpu1 - cpu0) / (double)nlate : 0.0, ru.ru_maxrss,
	       nlate ? (double)late[nlate / 2] / 1e6 : 0.0,
	       nlate ? (double)late[(nlate * 99 - 1) / 100] / 1e6 : 0.0, (unsigned long long)s.bytes,
	       (unsigned long long)s.log_lines, (unsigned long long)s.stub_bytes, s.stub_fail, s.nworkers,
	       s.nclient ? s.client_ms[s.nclient / 2] : 0.0, s.client_fail);
	fflush(stdout);
	if (wait_signal) {
		/* Sleep, not poll: the caller reads this process's CPU after "done". The alarm bounds the wait. */
		signal(SIGALRM, floor_on_signal);
		alarm(FLOOR_WAIT_S);
		while (!floor_stop)
			pause();
	}
	curl_easy_cleanup(s.curl);
	if (s.kept)
		curl_easy_cleanup(s.kept);
	if (s.fresh)
		curl_easy_cleanup(s.fresh);
	free(s.client_ms);
	curl_global_cleanup();
	if (s.log_fd >= 0)
		close(s.log_fd);
	free(late);
	free(s.buf);
	return 0;
}
