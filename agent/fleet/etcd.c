/*
 * etcd: see etcd.h.
 */
#include "build-config.h"

#include "fleet/etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

struct etcd {
	char *endpoint[CONFIG_FLEET_ENDPOINTS_MAX];
	size_t n, cur;          /* the endpoints, and the one that answered last */
	char *ca, *cert, *key, *user, *password;
	long timeout_ms;
	char token[512];        /* /v3/auth/authenticate's, or "" */
	CURL *curl;
};

struct buf {
	char *p;
	size_t len;
	bool over;
};

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
	struct buf *b = ctx;
	size_t add = size * n;
	char *p;

	if (b->len + add > ETCD_ANSWER_MAX) {
		b->over = true;
		return 0;
	}
	p = realloc(b->p, b->len + add + 1);
	if (!p)
		return 0;
	memcpy(p + b->len, data, add);
	b->p = p;
	b->len += add;
	b->p[b->len] = '\0';
	return add;
}

static char *dup_opt(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

int etcd_new(const struct etcd_opts *o, struct etcd **out)
{
	struct etcd *e = calloc(1, sizeof(*e));
	const char *p = o->endpoints;

	if (!e)
		return -ENOMEM;
	while (p && *(p += strspn(p, " \t")) && e->n < CONFIG_FLEET_ENDPOINTS_MAX) {
		size_t len = strcspn(p, " \t");

		/* Without a trailing slash: paths are appended ("http://h:2379" + "/v3/kv/range"). */
		e->endpoint[e->n] = strndup(p, len > 1 && p[len - 1] == '/' ? len - 1 : len);
		if (!e->endpoint[e->n++])
			goto nomem;
		p += len;
	}
	if (e->n == 0) {
		free(e);
		return -EINVAL;
	}
	e->ca = dup_opt(o->ca);
	e->cert = dup_opt(o->cert);
	e->key = dup_opt(o->key);
	e->user = dup_opt(o->user);
	e->password = dup_opt(o->password);
	e->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 2000;
	e->curl = curl_easy_init();
	if (!e->curl)
		goto nomem;
	*out = e;
	return 0;
nomem:
	etcd_free(e);
	return -ENOMEM;
}

void etcd_free(struct etcd *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->endpoint[i]);
	free(e->ca);
	free(e->cert);
	free(e->key);
	free(e->user);
	if (e->password)
		memset(e->password, 0, strlen(e->password));
	free(e->password);
	if (e->curl)
		curl_easy_cleanup(e->curl);
	free(e);
}

const char *etcd_endpoint(const struct etcd *e)
{
	return e->endpoint[e->cur];
}

/* What every request sets: no signals (a thread's), no proxy, no redirect, http(s) only, and the TLS files. */
static void tls_and_limits(struct etcd *e)
{
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e->curl, CURLOPT_FOLLOWLOCATION, 0L);
	if (e->ca)
		curl_easy_setopt(e->curl, CURLOPT_CAINFO, e->ca);
	if (e->cert) {
		curl_easy_setopt(e->curl, CURLOPT_SSLCERT, e->cert);
		curl_easy_setopt(e->curl, CURLOPT_SSLKEY, e->key);
	}
}

/* One POST of BODY to PATH at endpoint I: the HTTP status, with the answer in *B; -1 with ERR when none came. */
static long post(struct etcd *e, size_t i, const char *path, const char *body, struct buf *b, char *err,
		 size_t errlen)
{
	char url[CONFIG_PATH_MAX + 64], auth[sizeof(e->token) + 32];
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	long code = -1;
	CURLcode rc;

	snprintf(url, sizeof(url), "%s%s", e->endpoint[i], path);
	if (e->token[0] && strcmp(path, "/v3/auth/authenticate") != 0) {
		snprintf(auth, sizeof(auth), "Authorization: %s", e->token);
		h = curl_slist_append(h, auth);
	}
	curl_easy_reset(e->curl);
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, e->timeout_ms);
	tls_and_limits(e);
	rc = curl_easy_perform(e->curl);
	if (rc == CURLE_OK)
		curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
	else
		snprintf(err, errlen, "%s: %s", e->endpoint[i],
			 b->over ? "the answer is larger than it may be" : curl_easy_strerror(rc));
	curl_slist_free_all(h);
	return code;
}

static int authenticate(struct etcd *e, size_t i, char *err, size_t errlen);

/* REQ (stolen) POSTed to PATH, endpoint by endpoint from the last good one: 0 with the answer's JSON in *RESP, or
 * -errno with ERR. */
static int call(struct etcd *e, const char *path, json_t *req, json_t **resp, char *err, size_t errlen)
{
	char *body = json_dumps(req, JSON_COMPACT);
	int r = -EHOSTUNREACH;

	json_decref(req);
	*resp = NULL;
	if (!body) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(err, errlen, "no endpoint");
	for (size_t k = 0; k < e->n; k++) {
		size_t i = (e->cur + k) % e->n;
		bool again = true;
		struct buf b = {0};
		long code;
		json_error_t je;
		json_t *j;

		if (e->user && !e->token[0] && (r = authenticate(e, i, err, errlen)) < 0) {
			if (r == -EHOSTUNREACH)
				continue;
			break;
		}
retry:
		code = post(e, i, path, body, &b, err, errlen);
		if (code < 0) {
			free(b.p);
			r = -EHOSTUNREACH;
			continue;
		}
		j = b.p ? json_loadb(b.p, b.len, 0, &je) : NULL;
		free(b.p);
		b = (struct buf){0};
		/* A member without a leader (503), a proxy's error page: the next endpoint may answer. */
		if (code >= 500 || !json_is_object(j)) {
			snprintf(err, errlen, "%s%s: HTTP %ld%s%s", e->endpoint[i], path, code,
				 json_is_object(j) ? ": " : ", not etcd's JSON",
				 json_is_object(j) && json_string_value(json_object_get(j, "message"))
					 ? json_string_value(json_object_get(j, "message")) : "");
			json_decref(j);
			r = code >= 500 ? -EHOSTUNREACH : -EPROTO;
			if (code >= 500)
				continue;
			break;
		}
		e->cur = i;
		if (code != 200) {
			const char *m = json_string_value(json_object_get(j, "message"));
			json_int_t grpc = json_integer_value(json_object_get(j, "code"));

			/* 16: unauthenticated (a token etcd no longer knows, after its restart): once more, anew. */
			if (grpc == 16 && e->user && again) {
				json_decref(j);
				again = false;
				e->token[0] = '\0';
				if ((r = authenticate(e, i, err, errlen)) < 0)
					break;
				goto retry;
			}
			snprintf(err, errlen, "%s%s: %s (HTTP %ld)", e->endpoint[i], path, m ? m : "an error", code);
			json_decref(j);
			r = grpc == 16 || grpc == 7 ? -EACCES : -EIO;
			break;
		}
		*resp = j;
		r = 0;
		break;
	}
	free(body);
	return r;
}

static int authenticate(struct etcd *e, size_t i, char *err, size_t errlen)
{
	json_t *req = json_pack("{s:s, s:s}", "name", e->user, "password", e->password), *resp;
	char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	struct buf b = {0};
	const char *t;
	long code;
	int r = 0;

	json_decref(req);
	if (!body) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* This endpoint only: the caller goes on to the next when it does not answer. */
	code = post(e, i, "/v3/auth/authenticate", body, &b, err, errlen);
	memset(body, 0, strlen(body));
	free(body);
	if (code < 0) {
		free(b.p);
		return -EHOSTUNREACH;
	}
	resp = b.p ? json_loadb(b.p, b.len, 0, NULL) : NULL;
	free(b.p);
	if (code != 200) {
		snprintf(err, errlen, "%s: authentication as %s refused: %s (HTTP %ld)", e->endpoint[i], e->user,
			 json_string_value(json_object_get(resp, "message")) ? json_string_value(json_object_get(resp, "message"))
									     : "no reason", code);
		json_decref(resp);
		return code >= 500 ? -EHOSTUNREACH : -EACCES;
	}
	t = json_string_value(json_object_get(resp, "token"));
	/* It goes into a header: printable, without a line break. */
	if (!t || strlen(t) >= sizeof(e->token) || !t[0] ||
	    strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_~+/=") != strlen(t)) {
		snprintf(err, errlen, "%s: authenticated, but no usable token came", e->endpoint[i]);
		r = -EPROTO;
	} else {
		strcpy(e->token, t);
	}
	json_decref(resp);
	return r;
}

static json_t *b64(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(BASE64_ENCODE_RAW_LENGTH(n) + 1);
	json_t *j;

	if (!out)
		return NULL;
	base64_encode_raw(out, n, (const uint8_t *)s);
	out[BASE64_ENCODE_RAW_LENGTH(n)] = '\0';
	j = json_string(out);
	free(out);
	return j;
}

static json_t *id_json(int64_t id)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, id);
	return json_string(s);
}

int etcd_grant(struct etcd *e, int64_t ttl_s, int64_t *lease, char *err, size_t errlen)
{
	json_t *resp;
	int r = call(e, "/v3/lease/grant", json_pack("{s:I}", "TTL", (json_int_t)ttl_s), &resp, err, errlen);

	if (r < 0)
		return r;
	if (etcd_int64_of(json_object_get(resp, "ID"), lease) < 0 || *lease == 0) {
		snprintf(err, errlen, "%s: a lease without an ID", etcd_endpoint(e));
		r = -EPROTO;
	}
	json_decref(resp);
	return r;
}

int etcd_keepalive(struct etcd *e, int64_t lease, int64_t *ttl_s, char *err, size_t errlen)
{
	json_t *resp, *res;
	int r = call(e, "/v3/lease/keepalive", json_pack("{s:o}", "ID", id_json(lease)), &resp, err, errlen);

	if (r < 0)
		return r;
	/* One answer of the stream: {"result": {...}}; a TTL of 0 (or none: omitted when 0) is a lease gone. */
	res = json_object_get(resp, "result");
	*ttl_s = 0;
	if (!json_is_object(res)) {
		snprintf(err, errlen, "%s: keepalive: %s", etcd_endpoint(e),
			 json_string_value(json_object_get(json_object_get(resp, "error"), "message"))
				 ? json_string_value(json_object_get(json_object_get(resp, "error"), "message"))
				 : "no result");
		r = -EPROTO;
	} else if (json_object_get(res, "TTL") && etcd_int64_of(json_object_get(res, "TTL"), ttl_s) < 0) {
		r = -EPROTO;
	}
	if (r == 0 && *ttl_s <= 0) {
		snprintf(err, errlen, "lease %" PRId64 " expired", lease);
		r = -ENOENT;
	}
	json_decref(resp);
	return r;
}

int etcd_revoke(struct etcd *e, int64_t lease, char *err, size_t errlen)
{
	json_t *resp;
	int r = call(e, "/v3/lease/revoke", json_pack("{s:o}", "ID", id_json(lease)), &resp, err, errlen);

	json_decref(resp);
	return r;
}

static json_t *put_op(const char *key, const char *value, int64_t lease)
{
	json_t *op = json_pack("{s:o, s:o}", "key", b64(key), "value", b64(value));

	if (op && lease)
		json_object_set_new(op, "lease", id_json(lease));
	return op;
}

int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease, char *err, size_t errlen)
{
	json_t *resp;
	int r = call(e, "/v3/kv/put", put_op(key, value, lease), &resp, err, errlen);

	json_decref(resp);
	return r;
}

/* A transaction: COMPARE (one comparison), then SUCCESS (one operation): whether it succeeded into *OK. */
static int txn(struct etcd *e, json_t *compare, json_t *success, bool *ok, char *err, size_t errlen)
{
	json_t *resp;
	int r = call(e, "/v3/kv/txn", json_pack("{s:[o], s:[o]}", "compare", compare, "success", success), &resp, err,
		     errlen);

	if (r < 0)
		return r;
	/* "succeeded" is left out when false (protobuf's JSON omits defaults). */
	*ok = json_is_true(json_object_get(resp, "succeeded"));
	json_decref(resp);
	return 0;
}

int etcd_create(struct etcd *e, const char *key, const char *value, int64_t lease, bool *created, char *err,
		size_t errlen)
{
	return txn(e, json_pack("{s:o, s:s, s:s, s:s}", "key", b64(key), "target", "CREATE", "result", "EQUAL",
				"create_revision", "0"),
		   json_pack("{s:o}", "request_put", put_op(key, value, lease)), created, err, errlen);
}

int etcd_delete_if(struct etcd *e, const char *key, const char *value, bool *deleted, char *err, size_t errlen)
{
	return txn(e, json_pack("{s:o, s:s, s:s, s:o}", "key", b64(key), "target", "VALUE", "result", "EQUAL", "value",
				b64(value)),
		   json_pack("{s:{s:o}}", "request_delete_range", "key", b64(key)), deleted, err, errlen);
}

int etcd_range_prefix(struct etcd *e, const char *prefix, etcd_kv_fn fn, void *ctx, char *err, size_t errlen)
{
	size_t n = strlen(prefix);
	char *end = strdup(prefix);
	json_t *resp;
	int r;

	if (!end || n == 0) {
		free(end);
		return -EINVAL;
	}
	/* The end of the range: the prefix with its last byte one more ('/' -> '0'). */
	end[n - 1]++;
	r = call(e, "/v3/kv/range", json_pack("{s:o, s:o}", "key", b64(prefix), "range_end", b64(end)), &resp, err,
		 errlen);
	free(end);
	if (r < 0)
		return r;
	r = etcd_range_kvs(resp, prefix, fn, ctx);
	json_decref(resp);
	return r;
}

struct watch {
	struct etcd_watch_buf w;
	const char *prefix;
	etcd_event_fn fn;
	bool (*stop)(void *ctx);
	void *ctx;
	int r;        /* the feed's error, or 0 */
	bool stopped; /* STOP said so */
};

static size_t on_watch_data(char *data, size_t size, size_t n, void *arg)
{
	struct watch *x = arg;

	x->r = etcd_watch_feed(&x->w, data, size * n, x->prefix, x->fn, x->ctx);
	return x->r < 0 ? 0 : size * n;
}

/* libcurl asks this at least once a second, also while nothing comes. */
static int on_watch_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct watch *x = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	x->stopped = x->stop(x->ctx);
	return x->stopped;
}

int etcd_watch(struct etcd *e, const char *prefix, long max_ms, etcd_event_fn fn, bool (*stop)(void *ctx), void *ctx,
	       char *err, size_t errlen)
{
	struct watch x = {.prefix = prefix, .fn = fn, .stop = stop, .ctx = ctx};
	char url[CONFIG_PATH_MAX + 64], auth[sizeof(e->token) + 32], *body, *end;
	struct curl_slist *h;
	size_t i = e->cur, n = strlen(prefix);
	long code = -1;
	json_t *req;
	CURLcode rc;
	int r;

	if (n == 0) {
		snprintf(err, errlen, "no prefix to watch");
		return -EINVAL;
	}
	/* A token anew for each watch: one made minutes ago may have expired (etcd's simple tokens do, unused). */
	if (e->user)
		e->token[0] = '\0';
	if (e->user && (r = authenticate(e, i, err, errlen)) < 0) {
		if (r == -EHOSTUNREACH)
			e->cur = (i + 1) % e->n;
		return r;
	}
	end = strdup(prefix);
	if (!end) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	end[n - 1]++; /* as etcd_range_prefix */
	req = json_pack("{s:{s:o, s:o}}", "create_request", "key", b64(prefix), "range_end", b64(end));
	free(end);
	body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!body) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	h = curl_slist_append(NULL, "Content-Type: application/json");
	/* etcd's require-leader: a member that lost its leader ends the watch (a silent stream would say "watching"
	 * while nothing comes), and the rounds poll until one with a leader answers. */
	h = curl_slist_append(h, "Grpc-Metadata-hasleader: true");
	if (e->token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: %s", e->token);
		h = curl_slist_append(h, auth);
	}
	snprintf(url, sizeof(url), "%s/v3/watch", e->endpoint[i]);
	curl_easy_reset(e->curl);
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_watch_data);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(e->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFOFUNCTION, on_watch_progress);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFODATA, &x);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, max_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, e->timeout_ms);
	/* A peer gone without a word (a partition) is found by TCP's keepalive, not by a silence: a quiet pool is. */
	curl_easy_setopt(e->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e->curl, CURLOPT_TCP_KEEPIDLE, 10L);
	curl_easy_setopt(e->curl, CURLOPT_TCP_KEEPINTVL, 5L);
	tls_and_limits(e);
	rc = curl_easy_perform(e->curl);
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	free(body);
	if (x.stopped || (rc == CURLE_OPERATION_TIMEDOUT && x.w.created)) {
		r = 0;
	} else if (x.r < 0) {
		r = x.r;
		snprintf(err, errlen, "%s/v3/watch: %s", e->endpoint[i], x.w.why);
	} else if (code >= 400 && code < 500) {
		r = code == 401 || code == 403 ? -EACCES : -EIO;
		snprintf(err, errlen, "%s/v3/watch: HTTP %ld", e->endpoint[i], code);
	} else {
		/* Refused, timed out before etcd confirmed it, or ended by the other side: the next endpoint next. */
		r = -EHOSTUNREACH;
		snprintf(err, errlen, "%s/v3/watch: %s", e->endpoint[i],
			 rc == CURLE_OK ? "the stream ended" : curl_easy_strerror(rc));
		e->cur = (i + 1) % e->n;
	}
	etcd_watch_buf_free(&x.w);
	return r;
}
