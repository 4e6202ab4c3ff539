/*
 * probe_stub: nginx's stub_status page, the one probe that can block: the caller (agent.c, loop.c) prepares a
 * fetch on the loop, runs it on a pool thread, and applies its result on the loop again (sampler_stub_* in
 * sampler.h, which sampler.c hands on to here). Plain http:// goes through stubhttp on a kept-alive socket,
 * anything else through libcurl; both connect from inside nginx's network namespace. A fetch without a complete
 * answer in time is nginx.stub_late, and saturation when nginx's workers were busy (core's stub_late_saturated). A
 * row of the sampler's probe table (fetched by the caller); see sampler_kit.h for the rules.
 */
#include "build-config.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/parse.h"
#include "observe/sampler_kit.h"
#include "observe/stubhttp.h"
#include "netns.h"

struct stub_handle {
	struct stubhttp *http;   /* plain http:// URLs: a kept-alive connection, no libcurl */
	CURL *curl;              /* anything else (https://) */
	int netns_fd;            /* a dup of sampler.netns_fd for one fetch, closed by the fetch */
	uint64_t netns_gen;      /* sampler.netns_gen at prepare */
	struct ns_maker ns;      /* the writer's sockets of nginx's namespace, when it makes them */
	char url[CONFIG_PATH_MAX];
	long timeout_ms;
	struct stub_result *res; /* valid during a fetch */
};

/* curl's socket, created in nginx's namespace; setns() changes only this (pool) thread, and back at once. */
static curl_socket_t stub_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct stub_handle *h = arg;
	curl_socket_t fd;
	int self;

	(void)purpose;
	if (h->ns.fn) {
		fd = sampler_ns_make(&h->ns, addr->family);
		return fd < 0 ? CURL_SOCKET_BAD : fd;
	}
	if (h->netns_fd < 0)
		return socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
	if (netns_enter(h->netns_fd, &self) < 0)
		return CURL_SOCKET_BAD;
	fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
	if (netns_leave(self) < 0) {
		/* Cannot happen short of a kernel bug; a pool thread left in nginx's namespace would be wrong. */
		abort();
	}
	return fd;
}

static size_t stub_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct stub_handle *h = arg;
	struct stub_result *res = h->res;
	size_t n = size * nmemb;

	if (res->len + n >= sizeof(res->body))
		return 0; /* a stub_status page is ~100 bytes: anything this big is not one */
	memcpy(res->body + res->len, data, n);
	res->len += n;
	return n;
}

/* A plain http:// URL goes through stubhttp; curl is set up for anything else, or when stubhttp refuses the URL
 * (curl then says what is wrong with it). */
static bool use_stubhttp(struct stub_handle *h)
{
	char err[128];

	if (!h->http && stubhttp_handles(h->url))
		stubhttp_new(h->url, &h->http, err, sizeof(err));
	return h->http != NULL;
}

void probe_stub_free(struct stub_handle *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	stubhttp_free(h->http);
	free(h);
}

void *probe_stub_prepare(struct sampler *s)
{
	struct stub_handle *h = s->stub;

	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return NULL;
		h->netns_fd = -1;
		s->stub = h;
	}
	if (strcmp(h->url, s->cfg.stub_status_url) != 0) {
		stubhttp_free(h->http);
		h->http = NULL;
		snprintf(h->url, sizeof(h->url), "%s", s->cfg.stub_status_url);
	}
	h->timeout_ms = (long)s->cfg.stub_status_timeout_ms;
	if (!use_stubhttp(h)) {
		if (!h->curl) {
			h->curl = curl_easy_init();
			if (!h->curl)
				return NULL;
		}
		curl_easy_setopt(h->curl, CURLOPT_URL, h->url);
		curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, h->timeout_ms);
		curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, h->timeout_ms);
		curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h->curl, CURLOPT_NOPROXY, "*");
		curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
		curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "ngx-autotune/" PACKAGE_VERSION);
		curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, stub_write);
		curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
		curl_easy_setopt(h->curl, CURLOPT_OPENSOCKETFUNCTION, stub_socket);
		curl_easy_setopt(h->curl, CURLOPT_OPENSOCKETDATA, h);
	}
	/* The fetch owns a duplicate: the loop may switch namespaces (nginx restarted) while it runs. */
	h->netns_fd = s->netns_fd >= 0 ? fcntl(s->netns_fd, F_DUPFD_CLOEXEC, 0) : -1;
	h->netns_gen = s->netns_gen;
	sampler_ns_maker(s, &h->ns);
	if (h->http)
		stubhttp_set_socket(h->http, h->ns.fn ? sampler_ns_make : NULL, &h->ns);
	return h;
}

static void fetch_http(struct stub_handle *h, struct stub_result *res)
{
	char err[160];
	int status = 0, r;

	r = stubhttp_get(h->http, h->netns_fd, h->netns_gen, (int)h->timeout_ms, res->body, sizeof(res->body),
			 &res->len, &status, err, sizeof(err));
	if (r < 0) {
		res->err = r;
		snprintf(res->msg, sizeof(res->msg), "%.80s: %.100s", h->url, err);
	} else if (status != 200) {
		res->err = -EPROTO;
		snprintf(res->msg, sizeof(res->msg), "%.100s: HTTP %d (is stub_status on at that location?)", h->url,
			 status);
	}
}

void probe_stub_fetch(void *handle, struct stub_result *res)
{
	struct stub_handle *h = handle;
	char errbuf[CURL_ERROR_SIZE] = "";
	long code = 0;
	CURLcode rc;

	memset(res, 0, sizeof(*res));
	if (h->http) {
		fetch_http(h, res);
		goto out;
	}
	h->res = res;
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, errbuf);
	rc = curl_easy_perform(h->curl);
	if (rc != CURLE_OK) {
		res->err = rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
		snprintf(res->msg, sizeof(res->msg), "%.80s: %.100s", h->url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
	} else {
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
		if (code != 200) {
			res->err = -EPROTO;
			snprintf(res->msg, sizeof(res->msg), "%.100s: HTTP %ld (is stub_status on at that location?)",
				 h->url, code);
		}
	}
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, NULL);
	h->res = NULL;
out:
	if (h->netns_fd >= 0)
		close(h->netns_fd);
	h->netns_fd = -1;
}

/* FR's value of NAME, NAN when absent. */
static double value(const struct sampler *s, const struct frame *fr, const char *name)
{
	double v;

	return sampler_frame_value(s, fr, name, &v) ? v : NAN;
}

/*
 * A fetch with no complete answer in time: nginx.stub_late 1, and, when the workers were busy all the tick or the
 * synthetic client timed out too, saturation (core's stub_late_saturated): a finding with its evidence, not a
 * missing value. The tick's other probes have run by now (the fetch overlaps them), so their figures are in FR.
 */
static void late(struct sampler *s, struct frame *fr, const struct stub_result *res)
{
	struct stub_late l = {
		.run_ms = value(s, fr, "nginx.worker_run_ms"),
		.wait_ms = value(s, fr, "nginx.worker_wait_ms"),
		.workers = value(s, fr, "nginx.workers"),
		.dt_s = fr->dt_s,
		.client_timeouts = value(s, fr, "client.timeouts"),
	};
	char why[96];

	sampler_put_gauge(s, fr, "nginx.stub_late", 1);
	if (stub_late_saturated(&l, why, sizeof(why)))
		sampler_probe_saturated(s, fr, PROBE_STUB, -ETIMEDOUT, "no answer in %lld ms while %s: request counts "
					"come from the access log", (long long)s->cfg.stub_status_timeout_ms, why);
	else
		sampler_probe_fail(s, fr, PROBE_STUB, res->err, "%s", res->msg);
}

void probe_stub_apply(struct sampler *s, struct frame *fr, const struct stub_result *res)
{
	struct stub_status st;
	int r = res->err;

	if (r == -ETIMEDOUT) {
		late(s, fr, res);
		return;
	}
	if (r < 0) {
		sampler_probe_fail(s, fr, PROBE_STUB, r, "%s", res->msg);
		return;
	}
	r = parse_stub_status(res->body, res->len, &st);
	if (r < 0) {
		sampler_probe_fail(s, fr, PROBE_STUB, r, "%s: not a stub_status page", s->cfg.stub_status_url);
		return;
	}
	sampler_put_gauge(s, fr, "nginx.active", (double)st.active);
	sampler_put_gauge(s, fr, "nginx.reading", (double)st.reading);
	sampler_put_gauge(s, fr, "nginx.writing", (double)st.writing);
	sampler_put_gauge(s, fr, "nginx.waiting", (double)st.waiting);
	sampler_put_counter(s, fr, "nginx.accepts", st.accepts);
	sampler_put_counter(s, fr, "nginx.handled", st.handled);
	sampler_put_counter(s, fr, "nginx.requests", st.requests);
	sampler_put_gauge(s, fr, "nginx.stub_late", 0);
	sampler_probe_ok(s, fr, PROBE_STUB);
}

void probe_stub_skip(struct sampler *s, struct frame *fr, const char *why)
{
	sampler_probe_fail(s, fr, PROBE_STUB, -EBUSY, "%s", why);
}
