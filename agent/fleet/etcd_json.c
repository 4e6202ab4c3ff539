/*
 * etcd_json: see etcd.h. What etcd's JSON gateway answers, read without trusting it: whatever answers at an
 * endpoint (etcd, a proxy, anyone who can write the pool's keys) is the network's (tests/fuzz/fuzz_fleet.c).
 */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <nettle/base64.h>
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
