/*
 * What a round reads back of the pool's keys (etcd_range_answer into fleet_take_key): the network's, so each answer
 * is taken field by field. A range answer as etcd 3.4's JSON gateway writes it (keys and values in base64, int64s
 * as strings); then hostile ones: bytes a terminal would obey, values longer than their fields, a NUL in a value,
 * slots out of range, keys of another pool, more members than the view holds, answers that are not etcd's.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nettle/base64.h>

#include "core/judge.h"
#include "fleet/etcd.h"
#include "fleet/fleet.h"

#define PREFIX "/ngx-autotune/pools/web/"

/* One kv of a range answer: KEY and VALUE (NULL: left out, as etcd leaves out an empty value) in base64. */
static void kv(char *out, size_t len, const char *key, const char *value, size_t vlen, const char *lease)
{
	char k[1024], v[8192];
	size_t n = strlen(out);

	base64_encode_raw(k, strlen(key), (const uint8_t *)key);
	k[BASE64_ENCODE_RAW_LENGTH(strlen(key))] = '\0';
	if (value) {
		base64_encode_raw(v, vlen, (const uint8_t *)value);
		v[BASE64_ENCODE_RAW_LENGTH(vlen)] = '\0';
	}
	snprintf(out + n, len - n, "%s{\"key\":\"%s\",\"create_revision\":\"5\",\"mod_revision\":\"9\",\"version\":\"2\"%s%s%s%s%s}",
		 strchr(out, '{') && out[n - 1] != '[' ? "," : "", k, value ? ",\"value\":\"" : "", value ? v : "",
		 value ? "\"" : "", lease ? ",\"lease\":" : "", lease ? lease : "");
}

static int take(const char *body, struct fleet_view *view, struct fleet_round *rd)
{
	memset(view, 0, sizeof(*view));
	memset(rd, 0, sizeof(*rd));
	rd->prefix = PREFIX;
	rd->host = "web-1";
	rd->slot = 0;
	rd->lease = 7587885337434624001LL;
	rd->next = view;
	return etcd_range_answer(body, strlen(body), PREFIX, fleet_take_key, rd);
}

static void assert_clean(const char *s)
{
	for (; *s; s++)
		assert_true(*s >= 0x20 && *s <= 0x7e);
}

static void test_real_answer(void **state)
{
	static char body[65536];
	struct fleet_view view;
	struct fleet_round rd;
	const char *m1 = "{\"agent\":\"0.1.0\",\"cpus\":2,\"kernel\":\"6.1.0-28-amd64\",\"knob\":\"net.core.somaxconn\","
			 "\"state\":\"trial\"}";
	const char *ver = "{\"at_ms\":1796050742082,\"cpus\":2,\"effect\":7.25,\"from\":\"4096\",\"kept\":true,"
			  "\"kernel\":\"6.1.0-28-amd64\",\"pairs\":3,"
			  "\"knob\":\"net.core.somaxconn\",\"summary\":\"overflows 486/s -> 0/s\",\"symptom\":\"listen_overflows\","
			  "\"to\":\"8192\"}";

	(void)state;
	strcpy(body, "{\"header\":{\"cluster_id\":\"14841639068965178418\",\"member_id\":\"10276657743932975437\","
		     "\"revision\":\"12\",\"raft_term\":\"2\"},\"kvs\":[");
	kv(body, sizeof(body), PREFIX "known/web-1", "{\"joined_ms\":1796050000000}", 27, NULL);
	kv(body, sizeof(body), PREFIX "known/web-2", "{}", 2, NULL);
	kv(body, sizeof(body), PREFIX "members/web-1", m1, strlen(m1), "\"7587885337434624001\"");
	kv(body, sizeof(body), PREFIX "slots/0", "web-1", 5, "\"7587885337434624001\"");
	kv(body, sizeof(body), PREFIX "slots/1", "web-2", 5, NULL); /* leaseless: stale */
	kv(body, sizeof(body), PREFIX "verdicts/net.core.somaxconn/web-2", ver, strlen(ver), NULL);
	strcat(body, "],\"count\":\"6\"}");

	assert_int_equal(take(body, &view, &rd), 0);
	assert_int_equal(view.n, 2);
	assert_string_equal(view.m[0].host, "web-1");
	assert_true(view.m[0].alive);
	assert_string_equal(view.m[0].state, "trial");
	assert_string_equal(view.m[0].knob, "net.core.somaxconn");
	assert_string_equal(view.m[0].kernel, "6.1.0-28-amd64");
	assert_int_equal(view.m[0].cpus, 2);
	assert_int_equal(view.m[0].slot, 0);
	assert_false(view.m[1].alive);
	assert_int_equal(view.m[1].slot, 1);
	assert_true(rd.own_slot_seen);
	assert_string_equal(rd.stale[1], "web-2");
	assert_string_equal(rd.stale[0], "");
	assert_int_equal(view.nverdicts, 1);
	assert_string_equal(view.verdicts[0].host, "web-2");
	assert_string_equal(view.verdicts[0].knob, "net.core.somaxconn");
	assert_string_equal(view.verdicts[0].from, "4096");
	assert_string_equal(view.verdicts[0].to, "8192");
	assert_true(view.verdicts[0].kept);
	assert_string_equal(view.verdicts[0].symptom, "listen_overflows");
	assert_int_equal(view.verdicts[0].at_ms, 1796050742082LL);
	assert_true(view.verdicts[0].effect == 7.25);
	assert_int_equal(view.verdicts[0].pairs, 3);
}

/* Each hostile answer, with what must (not) come of it. */
static void test_hostile(void **state)
{
	static char body[65536], big[4096];
	struct fleet_view view;
	struct fleet_round rd;

	(void)state;
	/* Escapes and bytes outside ASCII: cleaned to '?'; a value longer than its field: cut. */
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	strcpy(body, "{\"kvs\":[");
	{
		const char *m = "{\"state\":\"\\u001b[2Jtrial\",\"knob\":\"k\"}";

		kv(body, sizeof(body), PREFIX "members/evil\x1b]0;x\x07\xc3\xa9", m, strlen(m), "\"1\"");
	}
	{
		char v[4200];

		snprintf(v, sizeof(v), "{\"to\":\"%s\",\"from\":1,\"kept\":\"yes\"}", big);
		kv(body, sizeof(body), PREFIX "verdicts/net.core.somaxconn/h\xff", v, strlen(v), NULL);
	}
	strcat(body, "]}");
	assert_int_equal(take(body, &view, &rd), 0);
	assert_int_equal(view.n, 1);
	assert_clean(view.m[0].host);
	assert_clean(view.m[0].state);
	assert_int_equal(strncmp(view.m[0].host, "evil?]0;x??", 11), 0);
	assert_int_equal(view.nverdicts, 1);
	assert_clean(view.verdicts[0].host);
	assert_int_equal(strlen(view.verdicts[0].to), sizeof(view.verdicts[0].to) - 1);
	assert_string_equal(view.verdicts[0].from, ""); /* a number where a string belongs: nothing */
	assert_false(view.verdicts[0].kept);            /* "yes" is not true */

	/* A trial's effect out of the judge's bounds: bounded; pairs too few or too many, or none: no effect at all. */
#define E1 "{\"effect\":1e300,\"pairs\":3}"
#define E2 "{\"effect\":5,\"pairs\":1000}"
#define E3 "{\"effect\":\"5\",\"pairs\":3}"
#define E4 "{\"effect\":-20,\"pairs\":2}"
	strcpy(body, "{\"kvs\":[");
	kv(body, sizeof(body), PREFIX "verdicts/k/a", E1, strlen(E1), NULL);
	kv(body, sizeof(body), PREFIX "verdicts/k/b", E2, strlen(E2), NULL);
	kv(body, sizeof(body), PREFIX "verdicts/k/c", E3, strlen(E3), NULL);
	kv(body, sizeof(body), PREFIX "verdicts/k/d", E4, strlen(E4), NULL);
	strcat(body, "]}");
	assert_int_equal(take(body, &view, &rd), 0);
	assert_int_equal(view.nverdicts, 4);
	assert_true(view.verdicts[0].effect == JUDGE_PRIOR_EFFECT_MAX && view.verdicts[0].pairs == 3);
	assert_true(isnan(view.verdicts[1].effect) && view.verdicts[1].pairs == 0);
	assert_true(isnan(view.verdicts[2].effect) && view.verdicts[2].pairs == 0);
	assert_true(view.verdicts[3].effect == -JUDGE_PRIOR_EFFECT_MAX && view.verdicts[3].pairs == 2);

	/* A NUL inside a value, slots out of range or not numbers, another pool's keys, values that are not JSON. */
	strcpy(body, "{\"kvs\":[");
	kv(body, sizeof(body), PREFIX "slots/0", "web-1\0web-9", 11, "\"7587885337434624001\"");
	kv(body, sizeof(body), PREFIX "slots/1000", "x", 1, NULL);
	kv(body, sizeof(body), PREFIX "slots/-1", "x", 1, NULL);
	kv(body, sizeof(body), PREFIX "slots/2a", "x", 1, NULL);
	kv(body, sizeof(body), "/ngx-autotune/pools/other/members/intruder", "{}", 2, NULL);
	kv(body, sizeof(body), PREFIX "members/bad", "not json", 8, "\"x\"");
	kv(body, sizeof(body), PREFIX "verdicts/noslash", "{}", 2, NULL);
	kv(body, sizeof(body), PREFIX "verdicts/k/", "{}", 2, NULL);
	kv(body, sizeof(body), PREFIX "verdicts/k/h", "[1,2]", 5, NULL);
	strcat(body, "]}");
	assert_int_equal(take(body, &view, &rd), 0);
	assert_false(rd.own_slot_seen);
	assert_int_equal(view.n, 1); /* "bad": alive, its fields empty */
	assert_string_equal(view.m[0].host, "bad");
	assert_string_equal(view.m[0].state, "");
	assert_int_equal(view.nverdicts, 0);

	/* More members than the view holds: the rest dropped, nothing past the array. */
	strcpy(body, "{\"kvs\":[");
	for (int i = 0; i < FLEET_MEMBERS_MAX + 20; i++) {
		char key[128];

		snprintf(key, sizeof(key), PREFIX "known/h%03d", i);
		kv(body, sizeof(body), key, NULL, 0, NULL);
	}
	strcat(body, "]}");
	assert_int_equal(take(body, &view, &rd), 0);
	assert_int_equal(view.n, FLEET_MEMBERS_MAX);

	/* Not etcd's answers. */
	assert_int_equal(take("<html>502 Bad Gateway</html>", &view, &rd), -EPROTO);
	assert_int_equal(take("[]", &view, &rd), -EPROTO);
	assert_int_equal(take("{\"kvs\":{\"key\":1}}", &view, &rd), 0);
	assert_int_equal(take("{\"kvs\":[{\"key\":\"!!!\",\"value\":7},{\"value\":\"eA==\"},1,null]}", &view, &rd), 0);
	assert_int_equal(view.n, 0);
}

/* The control group's keys: asks made and read back, bad asks refused, asks taken from members in trial only,
 * answers counted only for the pair asked and from members expected to answer (alive, not in trial). */
static void test_control(void **state)
{
	static const char *const bad[] = {
		"", "[]", "{}", "not json",
		/* a window reversed, empty, longer than an hour, before 2001, the two overlapping */
		"{\"change\":3,\"pair\":1,\"metric\":\"http.good_rate\",\"better\":\"higher\",\"a\":[1764000020000,1764000010000],\"b\":[1764000030000,1764000040000]}",
		"{\"change\":3,\"pair\":1,\"metric\":\"http.good_rate\",\"better\":\"higher\",\"a\":[1764000010000,1764000010000],\"b\":[1764000030000,1764000040000]}",
		"{\"change\":3,\"pair\":1,\"metric\":\"http.good_rate\",\"better\":\"higher\",\"a\":[1764000010000,1764009999999],\"b\":[1764010000000,1764010001000]}",
		"{\"change\":3,\"pair\":1,\"metric\":\"http.good_rate\",\"better\":\"higher\",\"a\":[10000,20000],\"b\":[30000,40000]}",
		"{\"change\":3,\"pair\":1,\"metric\":\"http.good_rate\",\"better\":\"higher\",\"a\":[1764000010000,1764000030000],\"b\":[1764000020000,1764000040000]}",
		/* a pair outside 1..32, no change, a metric naming a path or escapes, a direction unknown, a string */
		"{\"change\":3,\"pair\":33,\"metric\":\"http.good_rate\",\"better\":\"higher\",\"a\":[1764000010000,1764000020000],\"b\":[1764000030000,1764000040000]}",
		"{\"pair\":1,\"metric\":\"http.good_rate\",\"better\":\"higher\",\"a\":[1764000010000,1764000020000],\"b\":[1764000030000,1764000040000]}",
		"{\"change\":3,\"pair\":1,\"metric\":\"../../etc/passwd\",\"better\":\"higher\",\"a\":[1764000010000,1764000020000],\"b\":[1764000030000,1764000040000]}",
		"{\"change\":3,\"pair\":1,\"metric\":\"http.good_rate\\u001b[2J\",\"better\":\"higher\",\"a\":[1764000010000,1764000020000],\"b\":[1764000030000,1764000040000]}",
		"{\"change\":3,\"pair\":1,\"metric\":\"http.good_rate\",\"better\":\"up\",\"a\":[1764000010000,1764000020000],\"b\":[1764000030000,1764000040000]}",
		"{\"change\":3,\"pair\":1,\"metric\":\"http.good_rate\",\"better\":\"higher\",\"a\":\"1764000010000\",\"b\":[1764000030000,1764000040000]}",
	};
	struct fleet_ask q = {.change = 12, .pair = 3, .metric = "client.p50_ms", .dir = POLICY_LOWER_IS_BETTER,
			      .a_ms = {1764000010000LL, 1764000020000LL}, .b_ms = {1764000022000LL, 1764000032000LL}};
	struct fleet_ask back;
	struct fleet_control c;
	struct fleet_view view;
	struct fleet_round rd;
	char *v;

	(void)state;
	v = fleet_ask_json(&q);
	assert_non_null(v);
	assert_int_equal(fleet_ask_parse(v, &back), 0);
	assert_memory_equal(&q, &back, sizeof(q));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (fleet_ask_parse(bad[i], &back) != -EINVAL)
			fail_msg("taken: %s", bad[i]);

	memset(&view, 0, sizeof(view));
	memset(&rd, 0, sizeof(rd));
	memset(&c, 0, sizeof(c));
	rd.prefix = PREFIX;
	rd.host = "web-1";
	rd.next = &view;
	rd.control = &c;
	c.change = 7;
	c.pair = 2;
	/* The members as the round read them first: web-2 and web-10 in trial, web-3..web-7 not, web-9 gone. */
	for (int i = 1; i <= 10; i++) {
		char key[128], val[128];

		snprintf(key, sizeof(key), PREFIX "%s/web-%d", i == 9 ? "known" : "members", i);
		snprintf(val, sizeof(val), "{\"state\":\"%s\"}", i == 2 || i == 10 ? "trial" : "observe");
		fleet_take_key(&rd, key, val, 1);
	}
	/* Peers' asks; this host's own, a key with a slash in its host, a member's not in trial, a name no member has,
	 * and a bad one are not. */
	fleet_take_key(&rd, PREFIX "control/web-2", v, 1);
	fleet_take_key(&rd, PREFIX "control/web-1", v, 1);
	fleet_take_key(&rd, PREFIX "control/a/b", v, 1);
	fleet_take_key(&rd, PREFIX "control/web-4", v, 1);
	fleet_take_key(&rd, PREFIX "control/nobody", v, 1);
	fleet_take_key(&rd, PREFIX "control/web-10", bad[4], 1);
	assert_int_equal(c.nasks, 1);
	assert_string_equal(c.asks[0].host, "web-2");
	assert_int_equal(c.asks[0].pair, 3);
	free(v);
	/* Answers to this host's ask: change 7, pair 2. */
	fleet_take_key(&rd, PREFIX "answers/web-1/web-8", "{\"change\":7,\"pair\":2,\"d\":0.25}", 1);
	fleet_take_key(&rd, PREFIX "answers/web-1/web-3", "{\"change\":7,\"pair\":2,\"d\":-0.05}", 1);
	fleet_take_key(&rd, PREFIX "answers/web-1/web-4", "{\"change\":7,\"pair\":2,\"d\":null}", 1);
	fleet_take_key(&rd, PREFIX "answers/web-1/web-5", "{\"change\":7,\"pair\":2,\"d\":9.0}", 1); /* 8000x */
	fleet_take_key(&rd, PREFIX "answers/web-1/web-6", "{\"change\":7,\"pair\":1,\"d\":0.1}", 1); /* the last pair */
	fleet_take_key(&rd, PREFIX "answers/web-1/web-7", "{\"change\":6,\"pair\":2,\"d\":0.1}", 1); /* another trial */
	fleet_take_key(&rd, PREFIX "answers/web-10/web-8", "{\"change\":7,\"pair\":2,\"d\":0.1}", 1); /* another host */
	fleet_take_key(&rd, PREFIX "answers/web-1/web-1", "{\"change\":7,\"pair\":2,\"d\":0.1}", 1); /* itself */
	fleet_take_key(&rd, PREFIX "answers/web-1/web-9", "{\"change\":7,\"pair\":2,\"d\":0.1}", 1); /* gone */
	fleet_take_key(&rd, PREFIX "answers/web-1/web-10", "{\"change\":7,\"pair\":2,\"d\":null}", 1); /* in trial */
	fleet_take_key(&rd, PREFIX "answers/web-1/x1", "{\"change\":7,\"pair\":2,\"d\":0.3}", 1); /* no member */
	fleet_take_key(&rd, PREFIX "answers/web-1/web-3", "[1]", 1);
	assert_int_equal(c.answered, 4);
	assert_int_equal(c.peers, 2);
	assert_true(fabs(c.d_sum - 0.20) < 1e-12);
}

/* The pool's max_in_trial: the smallest of this host's and of what its alive members say (a value outside 1..64, or
 * not a number, says nothing). */
static void test_pool_max(void **state)
{
	static char body[8192];
	struct fleet_view view;
	struct fleet_round rd;
	char by[FLEET_NAME_MAX];
	static const struct {
		const char *host, *value;
		bool alive;
	} m[] = {
		{"h2", "{\"max_in_trial\":2}", true},  {"h3", "{\"max_in_trial\":1}", false}, /* h3: known, gone */
		{"h4", "{\"max_in_trial\":65}", true}, {"h5", "{\"max_in_trial\":\"1\"}", true},
		{"h6", "{\"max_in_trial\":-1}", true}, {"h7", "{}", true},
	};

	(void)state;
	strcpy(body, "{\"kvs\":[");
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		char key[128];

		snprintf(key, sizeof(key), PREFIX "%s/%s", m[i].alive ? "members" : "known", m[i].host);
		kv(body, sizeof(body), key, m[i].value, strlen(m[i].value), NULL);
	}
	strcat(body, "]}");
	assert_int_equal(take(body, &view, &rd), 0);
	assert_int_equal(view.n, 6);
	assert_int_equal(view.m[0].max_in_trial, 2);
	for (size_t i = 2; i < 6; i++)
		assert_int_equal(view.m[i].max_in_trial, 0);
	assert_int_equal(fleet_pool_max(&view, 4, by, sizeof(by)), 2);
	assert_string_equal(by, "h2");
	assert_int_equal(fleet_pool_max(&view, 2, by, sizeof(by)), 2);
	assert_string_equal(by, "");
	assert_int_equal(fleet_pool_max(&view, 1, by, sizeof(by)), 1);
	assert_string_equal(by, "");
	view.m[1].alive = true; /* h3's lease back, and its 1 with it (known/ held no value: as said by members/) */
	view.m[1].max_in_trial = 1;
	assert_int_equal(fleet_pool_max(&view, 4, by, sizeof(by)), 1);
	assert_string_equal(by, "h3");
}


/* A watch's stream as etcd 3.4's JSON gateway wrote it (POST /v3/watch on the pool's prefix, captured): the watch
 * made, a member put under its lease, the same member deleted as its lease was revoked. */
static const char watch_real[] =
	"{\"result\":{\"header\":{\"cluster_id\":\"14841639068965178418\",\"member_id\":\"10276657743932975437\","
	"\"revision\":\"4\",\"raft_term\":\"2\"},\"created\":true}}\n"
	"{\"result\":{\"header\":{\"cluster_id\":\"14841639068965178418\",\"member_id\":\"10276657743932975437\","
	"\"revision\":\"5\",\"raft_term\":\"2\"},\"events\":[{\"kv\":{\"key\":"
	"\"L25neC1hdXRvdHVuZS9wb29scy93ZWIvbWVtYmVycy93ZWItMg==\",\"create_revision\":\"5\",\"mod_revision\":\"5\","
	"\"version\":\"1\",\"value\":\"eyJob3N0Ijoid2ViLTIifQ==\",\"lease\":\"7587899374382863112\"}}]}}\n"
	"{\"result\":{\"header\":{\"cluster_id\":\"14841639068965178418\",\"member_id\":\"10276657743932975437\","
	"\"revision\":\"6\",\"raft_term\":\"2\"},\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":"
	"\"L25neC1hdXRvdHVuZS9wb29scy93ZWIvbWVtYmVycy93ZWItMg==\",\"mod_revision\":\"6\"}}]}}\n";

struct seen {
	unsigned created, puts, deletes;
	char key[256];
	int64_t lease;
	int ret; /* what the callback answers */
};

static int on_event(void *ctx, const char *key, int64_t lease, bool deleted)
{
	struct seen *s = ctx;

	if (!key) {
		s->created++;
		return s->ret;
	}
	snprintf(s->key, sizeof(s->key), "%s", key);
	s->lease = lease;
	if (deleted)
		s->deletes++;
	else
		s->puts++;
	return s->ret;
}

static void test_watch_stream(void **state)
{
	static const struct {
		const char *line; /* one line, newline added */
		int want;
		const char *why; /* in W.why, or NULL */
	} bad[] = {
		/* etcd 3.4's own, captured: a watch of a compacted revision, a key that is not base64 */
		{"{\"result\":{\"header\":{\"cluster_id\":\"14841639068965178418\",\"raft_term\":\"2\"},\"canceled\":true,"
		 "\"compact_revision\":\"6\"}}", -ECANCELED, "etcd canceled the watch"},
		{"{\"error\":\"illegal base64 data at input byte 0\",\"message\":\"illegal base64 data at input byte 0\","
		 "\"code\":2}", -EIO, "illegal base64 data at input byte 0"},
		/* etcd 3.5's shape of an error, with a byte a terminal would obey */
		{"{\"error\":{\"grpc_code\":16,\"message\":\"invalid auth token\\u001b[2J\"}}", -EIO,
		 "invalid auth token?[2J"},
		{"<html>502 Bad Gateway</html>", -EPROTO, "a line that is not etcd's"},
		{"[1,2]", -EPROTO, NULL},
		{"{\"result\":17}", -EPROTO, NULL},
	};
	struct etcd_watch_buf w = {0};
	struct seen s = {0};

	(void)state;
	/* Fed a byte at a time, then whole: the same events. */
	for (size_t i = 0; i < sizeof(watch_real) - 1; i++)
		assert_int_equal(etcd_watch_feed(&w, watch_real + i, 1, PREFIX, on_event, &s), 0);
	assert_true(w.created);
	assert_int_equal(s.created, 1);
	assert_int_equal(s.puts, 1);
	assert_int_equal(s.deletes, 1);
	assert_string_equal(s.key, PREFIX "members/web-2");
	assert_int_equal(s.lease, 0); /* the delete's: a lease's end says no lease */
	assert_int_equal(w.len, 0);
	etcd_watch_buf_free(&w);
	memset(&s, 0, sizeof(s));
	assert_int_equal(etcd_watch_feed(&w, watch_real, sizeof(watch_real) - 1, PREFIX, on_event, &s), 0);
	assert_int_equal(s.created + s.puts + s.deletes, 3);
	/* The put's lease, as the watcher tells this host's own puts by it. */
	memset(&s, 0, sizeof(s));
	etcd_watch_buf_free(&w);
	assert_int_equal(etcd_watch_feed(&w, watch_real, strchr(strchr(watch_real, '\n') + 1, '\n') + 1 - watch_real,
					 PREFIX, on_event, &s), 0);
	assert_int_equal(s.puts, 1);
	assert_true(s.lease == 7587899374382863112LL);
	/* A line cut short waits for the rest; another pool's keys are not this one's. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(etcd_watch_feed(&w, watch_real + 140, 60, PREFIX, on_event, &s), 0);
	assert_int_equal(s.puts + s.deletes, 0);
	etcd_watch_buf_free(&w);
	assert_int_equal(etcd_watch_feed(&w, watch_real, sizeof(watch_real) - 1, "/ngx-autotune/pools/api/", on_event,
					 &s), 0);
	assert_int_equal(s.puts + s.deletes, 0);
	etcd_watch_buf_free(&w);
	/* The callback's error ends the feed with it. */
	s.ret = -ENOSPC;
	assert_int_equal(etcd_watch_feed(&w, watch_real, sizeof(watch_real) - 1, PREFIX, on_event, &s), -ENOSPC);
	etcd_watch_buf_free(&w);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[512];

		snprintf(line, sizeof(line), "%s\n", bad[i].line);
		memset(&s, 0, sizeof(s));
		assert_int_equal(etcd_watch_feed(&w, line, strlen(line), PREFIX, on_event, &s), bad[i].want);
		if (bad[i].why)
			assert_non_null(strstr(w.why, bad[i].why));
		assert_clean(w.why);
		etcd_watch_buf_free(&w);
	}
	/* A line longer than an answer may be. */
	{
		size_t n = ETCD_ANSWER_MAX / 2 + 1;
		char *big = malloc(n);

		assert_non_null(big);
		memset(big, ' ', n);
		assert_int_equal(etcd_watch_feed(&w, big, n, PREFIX, on_event, &s), 0);
		assert_int_equal(etcd_watch_feed(&w, big, n, PREFIX, on_event, &s), -EPROTO);
		free(big);
		etcd_watch_buf_free(&w);
	}
}

/* Which changes of the pool wake a host's round: not its own puts, nor the answers to another's asks. */
static void test_watch_wakes(void **state)
{
	static const struct {
		const char *key;
		int64_t lease;
		bool deleted, wakes;
	} cases[] = {
		{PREFIX "members/web-2", 9, false, true},          /* a peer's state */
		{PREFIX "members/web-2", 0, true, true},           /* a peer gone (its lease ended) */
		{PREFIX "members/web-1", 7, false, false},         /* this host's own put */
		{PREFIX "members/web-1", 0, true, true},           /* its own key deleted: not by itself */
		{PREFIX "slots/0", 9, false, true},
		{PREFIX "slots/0", 0, true, true},                 /* a slot freed */
		{PREFIX "slots/1", 7, false, false},               /* this host's slot */
		{PREFIX "control/web-2", 9, false, true},          /* a peer asks */
		{PREFIX "answers/web-1/web-2", 9, false, true},    /* an answer to this host's ask */
		{PREFIX "answers/web-2/web-3", 9, false, false},   /* to another's */
		{PREFIX "answers/web-10/web-3", 9, false, false},  /* to another's whose name begins as this one's */
		{PREFIX "answers/web-1", 9, false, false},
		{PREFIX "verdicts/listen_queue/web-2", 0, false, true},
		{PREFIX "verdicts/listen_queue/web-1", 0, false, false}, /* this host's own, unleased */
		{PREFIX "verdicts/listen_queue/xweb-1", 0, false, true},
		{PREFIX "known/web-1", 0, false, false},
		{PREFIX "known/web-10", 0, false, true},
		{PREFIX "known/web-2", 0, false, true},
		{"/ngx-autotune/pools/api/members/web-2", 9, false, false},
		{"/ngx-autotune/pools/webx/members/web-2", 9, false, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(fleet_watch_wakes(PREFIX, "web-1", 7, cases[i].key, cases[i].lease, cases[i].deleted),
				 cases[i].wakes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_answer),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_pool_max),
		cmocka_unit_test(test_control),
		cmocka_unit_test(test_watch_stream),
		cmocka_unit_test(test_watch_wakes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
