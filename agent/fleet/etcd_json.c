/*
 * etcd_json: see etcd.h. What etcd's JSON gateway answers, read without trusting it: whatever answers at an
 * endpoint (etcd, a proxy, anyone who can write the pool's keys) is the network's (tests/fuzz/fuzz_fleet.c).
 */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/etcd.h"

/* An int64 of etcd's JSON (a string, as protobuf's JSON writes them, or a number): 0 or -EPROTO. */
int etcd_int64_of(json_t *v, int64_t *out)
{
	char *end;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return -EPROTO;
	errno = 0;
	*out = strtoll(json_string_value(v), &end, 10);
	return errno || *end || end == json_string_value(v) ? -EPROTO : 0;
}

/* V (base64) decoded into a NUL-terminated string: NULL when it is not base64 or holds a NUL. */
char *etcd_unb64(json_t *v)
{
	const char *s = json_string_value(v);
	struct base64_decode_ctx ctx;
	size_t n, len;
	char *out;

	if (!s)
		return NULL;
	n = strlen(s);
	out = malloc(BASE64_DECODE_LENGTH(n) + 1);
	if (!out)
		return NULL;
	base64_decode_init(&ctx);
	len = BASE64_DECODE_LENGTH(n);
	if (!base64_decode_update(&ctx, &len, (uint8_t *)out, n, s) || !base64_decode_final(&ctx) ||
	    memchr(out, '\0', len)) {
		free(out);
		return NULL;
	}
	out[len] = '\0';
	return out;
}

int etcd_range_kvs(json_t *resp, const char *prefix, etcd_kv_fn fn, void *ctx)
{
	size_t n = strlen(prefix), i;
	json_t *kvs, *kv;
	int r = 0;

	kvs = json_object_get(resp, "kvs");
	json_array_foreach(kvs, i, kv) {
		/* An empty value is left out of the answer. */
		char *k = etcd_unb64(json_object_get(kv, "key")),
		     *v = json_object_get(kv, "value") ? etcd_unb64(json_object_get(kv, "value")) : strdup("");
		int64_t lease = 0;

		if (json_object_get(kv, "lease"))
			etcd_int64_of(json_object_get(kv, "lease"), &lease);
		if (k && v && strncmp(k, prefix, n) == 0)
			r = fn(ctx, k, v, lease);
		free(k);
		free(v);
		if (r != 0)
			break;
	}
	return r < 0 ? r : 0;
}

int etcd_range_answer(const char *body, size_t len, const char *prefix, etcd_kv_fn fn, void *ctx)
{
	json_t *resp = json_loadb(body, len, 0, NULL);
	int r;

	if (!json_is_object(resp)) {
		json_decref(resp);
		return -EPROTO;
	}
	r = etcd_range_kvs(resp, prefix, fn, ctx);
	json_decref(resp);
	return r;
}

/* W's why: WHAT, then ": " and DETAIL when there is one, etcd's words cleaned to printable ASCII. */
static void why(struct etcd_watch_buf *w, const char *what, const char *detail)
{
	snprintf(w->why, sizeof(w->why), "%s%s%s", what, detail[0] ? ": " : "", detail);
	for (char *p = w->why; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
}

/* One line of a watch stream: the events under PREFIX through FN. */
static int watch_line(struct etcd_watch_buf *w, const char *line, size_t len, const char *prefix, etcd_event_fn fn,
		      void *ctx)
{
	json_t *j = json_loadb(line, len, 0, NULL), *res, *evs, *ev;
	size_t n = strlen(prefix), i;
	int r = 0;

	res = json_object_get(j, "result");
	if (!json_is_object(res)) {
		/* The gateway's error, {"error": "...", "message": "...", "code": 2} (3.4), or {"error": {"grpc_code":
		 * .., "message": ..}} (3.5); anything else is not etcd's. */
		json_t *e = json_object_get(j, "error");
		const char *m = json_string_value(json_object_get(j, "message"));

		if (!m)
			m = json_is_object(e) ? json_string_value(json_object_get(e, "message")) : json_string_value(e);
		why(w, m ? m : "a line that is not etcd's", "");
		json_decref(j);
		return m ? -EIO : -EPROTO;
	}
	if (json_is_true(json_object_get(res, "canceled"))) {
		const char *m = json_string_value(json_object_get(res, "cancel_reason"));

		why(w, "etcd canceled the watch", m ? m : "");
		json_decref(j);
		return -ECANCELED;
	}
	if (json_is_true(json_object_get(res, "created")) && !w->created) {
		w->created = true;
		r = fn(ctx, NULL, 0, false);
	}
	evs = json_object_get(res, "events");
	json_array_foreach(evs, i, ev) {
		json_t *kv = json_object_get(ev, "kv");
		char *k;
		int64_t lease = 0;

		if (r < 0)
			break;
		k = etcd_unb64(json_object_get(kv, "key"));
		if (json_object_get(kv, "lease"))
			etcd_int64_of(json_object_get(kv, "lease"), &lease);
		/* PUT is protobuf's default: left out of the JSON. */
		if (k && strncmp(k, prefix, n) == 0)
			r = fn(ctx, k, lease, json_is_string(json_object_get(ev, "type")) &&
						     strcmp(json_string_value(json_object_get(ev, "type")), "DELETE") == 0);
		free(k);
	}
	json_decref(j);
	return r < 0 ? r : 0;
}

int etcd_watch_feed(struct etcd_watch_buf *w, const char *data, size_t len, const char *prefix, etcd_event_fn fn,
		    void *ctx)
{
	size_t start = 0, i0 = w->len;
	char *p;
	int r = 0;

	if (w->len + len > ETCD_ANSWER_MAX) {
		why(w, "a line longer than an answer may be", "");
		return -EPROTO;
	}
	p = realloc(w->p, w->len + len + 1);
	if (!p) {
		why(w, "out of memory", "");
		return -ENOMEM;
	}
	w->p = p;
	memcpy(w->p + w->len, data, len);
	w->len += len;
	/* Each whole line (one JSON object) read; a partial one kept for the next (it holds no newline: the search
	 * starts where the new bytes do). */
	for (size_t i = i0; i < w->len && r == 0; i++) {
		if (w->p[i] != '\n')
			continue;
		if (i > start)
			r = watch_line(w, w->p + start, i - start, prefix, fn, ctx);
		start = i + 1;
	}
	memmove(w->p, w->p + start, w->len - start);
	w->len -= start;
	return r;
}

void etcd_watch_buf_free(struct etcd_watch_buf *w)
{
	free(w->p);
	memset(w, 0, sizeof(*w));
}
