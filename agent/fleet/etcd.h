/*
 * etcd: a client of etcd v3's JSON gateway (POST /v3/..., keys and values base64 in JSON) over libcurl, as much of
 * it as a pool of agents needs: leases (grant, keepalive, revoke), put, a create that succeeds only for a key that
 * does not exist (a transaction on its create revision), a delete only of a key that holds a given value, the
 * range of a prefix, and a watch of a prefix (POST /v3/watch: a stream of JSON lines).
 *
 * Blocking, one call at a time: the fleet's thread (fleet.h) owns it, never the loop. Each call tries the endpoints
 * in turn from the last one that answered, bounded by a timeout each; with a user, it authenticates first
 * (/v3/auth/authenticate) and again when etcd says the token is no longer valid. What etcd answers is data from the
 * network: its size is bounded (ETCD_ANSWER_MAX), and keys and values are checked before use by the caller.
 */
#ifndef NGXAT_ETCD_H
#define NGXAT_ETCD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETCD_ANSWER_MAX (4 << 20) /* bytes of one answer kept; a longer one is an error */

struct etcd;

struct etcd_opts {
	const char *endpoints; /* URLs separated by blanks ([fleet] endpoints) */
	const char *ca, *cert, *key; /* TLS: files, or NULL/"" */
	const char *user, *password; /* auth, or NULL/"" */
	long timeout_ms;       /* of one request to one endpoint */
};

/* A client for O (its strings copied). 0, -EINVAL (no endpoint), -ENOMEM. */
int etcd_new(const struct etcd_opts *o, struct etcd **out);
void etcd_free(struct etcd *e);
/* The endpoint that answered last (for messages). */
const char *etcd_endpoint(const struct etcd *e);

/* Each returns 0, or -errno with ERR: -EHOSTUNREACH (no endpoint answered: why of the last), -EACCES (auth refused),
 * -EPROTO (an answer that is not etcd's), or -EIO with etcd's own message. */
int etcd_grant(struct etcd *e, int64_t ttl_s, int64_t *lease, char *err, size_t errlen);
/* LEASE kept alive: its TTL left into *TTL_S; -ENOENT when it expired (or never was). */
int etcd_keepalive(struct etcd *e, int64_t lease, int64_t *ttl_s, char *err, size_t errlen);
int etcd_revoke(struct etcd *e, int64_t lease, char *err, size_t errlen);
/* KEY = VALUE, bound to LEASE (0: none). */
int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease, char *err, size_t errlen);
/* KEY = VALUE bound to LEASE only if KEY does not exist: *CREATED says whether it was made. */
int etcd_create(struct etcd *e, const char *key, const char *value, int64_t lease, bool *created, char *err,
		size_t errlen);
/* KEY deleted only if it holds VALUE: *DELETED says whether it was. */
int etcd_delete_if(struct etcd *e, const char *key, const char *value, bool *deleted, char *err, size_t errlen);
/* Every key under PREFIX, in key order: FN(CTX, KEY, VALUE, LEASE) for each (VALUE NUL-terminated; a value with a NUL
 * byte is skipped); FN's non-zero return stops the walk. */
typedef int (*etcd_kv_fn)(void *ctx, const char *key, const char *value, int64_t lease);
int etcd_range_prefix(struct etcd *e, const char *prefix, etcd_kv_fn fn, void *ctx, char *err, size_t errlen);

/* An event of a watch: KEY put (bound to LEASE, 0: none) or deleted (a lease's end deletes its keys too); KEY NULL
 * once when etcd confirmed the watch. A negative return ends the watch with it. */
typedef int (*etcd_event_fn)(void *ctx, const char *key, int64_t lease, bool deleted);
/* Every change under PREFIX from now on, through FN, until STOP(CTX) says so (asked at least each second) or MAX_MS
 * passed once etcd confirmed the watch (0 either way), or the stream ends or fails (a timeout before etcd confirmed
 * it among them): -EHOSTUNREACH (the endpoint did not answer or went away: the
 * next call tries the next), -EACCES, -ECANCELED (etcd ended the watch), -EPROTO, -EIO, FN's own, with ERR. On a
 * handle of its own: it blocks for as long as it watches. */
int etcd_watch(struct etcd *e, const char *prefix, long max_ms, etcd_event_fn fn, bool (*stop)(void *ctx), void *ctx,
	       char *err, size_t errlen);

/* ---- etcd_json.c: its answers read, pure (no network), fuzzed ---- */
/* A watch's stream: one JSON object a line, fed as it comes. */
struct etcd_watch_buf {
	char *p;      /* the partial line kept */
	size_t len;
	bool created; /* etcd said it watches */
	char why[160]; /* why the last feed failed: etcd's message, cleaned */
};
/* DATA (LEN bytes) of a watch's stream: each whole line read, its events under PREFIX through FN (etcd_watch). 0, or
 * -EIO (etcd's error), -ECANCELED (etcd canceled the watch), -EPROTO (a line that is not etcd's, or longer than
 * ETCD_ANSWER_MAX), -ENOMEM, FN's negative return; W->why says which. */
int etcd_watch_feed(struct etcd_watch_buf *w, const char *data, size_t len, const char *prefix, etcd_event_fn fn,
		    void *ctx);
void etcd_watch_buf_free(struct etcd_watch_buf *w);

/* An int64 of etcd's JSON (a string, as protobuf's JSON writes them, or a number): 0 or -EPROTO. */
int etcd_int64_of(json_t *v, int64_t *out);
/* V (base64) decoded into a NUL-terminated string (malloc'd): NULL when it is not base64 or holds a NUL. */
char *etcd_unb64(json_t *v);
/* The kvs of a range answer RESP: FN for each key under PREFIX, as etcd_range_prefix. 0, FN's negative return. */
int etcd_range_kvs(json_t *resp, const char *prefix, etcd_kv_fn fn, void *ctx);
/* The same of the answer's text BODY (LEN bytes): -EPROTO when it is not a JSON object. */
int etcd_range_answer(const char *body, size_t len, const char *prefix, etcd_kv_fn fn, void *ctx);

#endif
