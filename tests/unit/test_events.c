/* Unit tests for agent/events.c: ids, the wire form, the ring's bounds (count and bytes), replay by id, cut events,
 * the listener, the request's peer, and the publishing helpers. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/controller.h"
#include "core/judge.h"
#include "api/events.h"
#include "api/verdict_json.h"
#include "proto.h"

static int notified;

static void on_publish(void *ctx)
{
	(*(int *)ctx)++;
}

static int teardown(void **state)
{
	(void)state;
	events_set_listener(NULL, NULL);
	events_reset();
	return 0;
}

/* The data of event ID, parsed. */
static json_t *data_of(uint64_t id, const char **type)
{
	struct events_view v;
	const char *d;

	assert_int_equal(events_get(id, &v), 0);
	*type = v.type;
	d = strstr(v.wire, "\ndata: ");
	assert_non_null(d);
	return json_loadb(d + 7, v.len - (size_t)(d + 7 - v.wire) - 2, 0, NULL);
}

static void test_publish_and_read(void **state)
{
	struct events_view v;
	const char *type;
	json_t *o;

	(void)state;
	assert_int_equal(events_publish("x", json_object()), -ENODEV);
	events_init(5000);
	assert_int_equal(events_last_id(), 4999);
	assert_int_equal(events_oldest_id(), 5000);
	assert_int_equal(events_get(5000, &v), -ENOENT);
	notified = 0;
	events_set_listener(on_publish, &notified);
	assert_int_equal(events_publish(API_EV_CHANGE, json_pack("{s:i, s:s}", "id", 7, "detail", "line\nbreak")), 0);
	assert_int_equal(notified, 1);
	assert_int_equal(events_last_id(), 5000);
	assert_int_equal(events_get(5000, &v), 0);
	assert_int_equal(v.id, 5000);
	assert_string_equal(v.type, "change");
	/* One data line: the newline inside a string is escaped. */
	assert_string_equal(v.wire, "id: 5000\nevent: change\ndata: {\"id\":7,\"detail\":\"line\\nbreak\"}\n\n");
	assert_int_equal(v.len, strlen(v.wire));
	/* Not an object, no type: refused, nothing published. */
	assert_int_equal(events_publish(API_EV_CHANGE, json_integer(3)), -EINVAL);
	assert_int_equal(events_publish(NULL, json_object()), -EINVAL);
	assert_int_equal(events_publish(API_EV_CHANGE, NULL), -EINVAL);
	assert_int_equal(notified, 1);
	assert_int_equal(events_last_id(), 5000);
	/* Too large: the id and knob are kept, the rest is cut. */
	{
		char *big = malloc(EVENTS_DATA_MAX + 10);

		memset(big, 'x', EVENTS_DATA_MAX + 9);
		big[EVENTS_DATA_MAX + 9] = '\0';
		assert_int_equal(events_publish(API_EV_VERDICT, json_pack("{s:i, s:s, s:s}", "id", 9, "knob", "k", "evidence",
									   big)),
				 0);
		free(big);
	}
	o = data_of(5001, &type);
	assert_string_equal(type, "verdict");
	assert_true(json_is_true(json_object_get(o, "truncated")));
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 9);
	assert_string_equal(json_string_value(json_object_get(o, "knob")), "k");
	assert_null(json_object_get(o, "evidence"));
	json_decref(o);
	/* Another run: ids start again where told, the old ring is gone. */
	events_init(9000);
	assert_int_equal(events_get(5000, &v), -ENOENT);
	assert_int_equal(events_publish("x", json_object()), 0);
	assert_int_equal(events_last_id(), 9000);
}

static void test_ring_bounds(void **state)
{
	struct events_view v;
	char *pad = malloc(4001);

	(void)state;
	events_init(1);
	for (int i = 0; i < EVENTS_RING + 10; i++)
		assert_int_equal(events_publish("x", json_pack("{s:i}", "i", i)), 0);
	assert_int_equal(events_last_id(), EVENTS_RING + 10);
	assert_int_equal(events_oldest_id(), 11);
	assert_int_equal(events_get(10, &v), -ENOENT);
	assert_int_equal(events_get(11, &v), 0);
	assert_non_null(strstr(v.wire, "{\"i\":10}"));
	assert_int_equal(events_get(EVENTS_RING + 10, &v), 0);
	assert_int_equal(events_get(EVENTS_RING + 11, &v), -ENOENT);
	/* The byte bound: events of ~4 KB, so fewer than EVENTS_RING fit. */
	memset(pad, 'p', 4000);
	pad[4000] = '\0';
	events_init(1);
	for (int i = 0; i < 300; i++)
		assert_int_equal(events_publish("x", json_pack("{s:i, s:s}", "i", i, "pad", pad)), 0);
	{
		size_t bytes = 0, n = 0;

		for (uint64_t id = events_oldest_id(); id <= events_last_id(); id++) {
			assert_int_equal(events_get(id, &v), 0);
			bytes += v.len;
			n++;
		}
		assert_true(bytes <= EVENTS_RING_BYTES);
		assert_true(n < 300);
		assert_true(bytes + 4100 > EVENTS_RING_BYTES); /* it is full, not emptied */
		assert_int_equal(events_last_id(), 300);
	}
	free(pad);
}

static void test_peer(void **state)
{
	(void)state;
	assert_string_equal(events_peer(), "");
	events_set_peer("unix:pid=1,uid=0");
	assert_string_equal(events_peer(), "unix:pid=1,uid=0");
	events_set_peer(NULL);
	assert_string_equal(events_peer(), "");
}

static void test_helpers(void **state)
{
	struct judge_evidence *ev = calloc(1, sizeof(*ev));
	struct controller_report rep;
	struct audit_row row;
	const char *type;
	json_t *o;
	uint64_t id;

	(void)state;
	events_init(100);
	events_proposal(3, "net.core.netdev_budget", "300", "600", API_PROPOSAL_MADE, "agent", "squeeze", 1000);
	o = data_of(100, &type);
	assert_string_equal(type, API_EV_PROPOSAL);
	assert_int_equal(json_integer_value(json_object_get(o, API_K_ID)), 3);
	assert_string_equal(json_string_value(json_object_get(o, API_K_STATE)), "proposed");
	assert_string_equal(json_string_value(json_object_get(o, API_K_TO)), "600");
	assert_int_equal(json_integer_value(json_object_get(o, API_K_TS)), 1000);
	json_decref(o);
	events_proposal(3, "net.core.netdev_budget", NULL, NULL, API_PROPOSAL_APPROVED, "alice", NULL, 1001);
	o = data_of(101, &type);
	assert_true(json_is_null(json_object_get(o, API_K_FROM)));
	assert_string_equal(json_string_value(json_object_get(o, API_K_ACTOR)), "alice");
	assert_true(json_is_null(json_object_get(o, API_K_COMMENT)));
	assert_null(json_object_get(o, API_K_WHY));
	json_decref(o);

	memset(&rep, 0, sizeof(rep));
	rep.state = CONTROLLER_TRIAL;
	rep.pair = 2;
	rep.pairs = 4;
	events_trial_arm(3, "net.core.netdev_budget", "B", "600", &rep, 1002);
	o = data_of(102, &type);
	assert_string_equal(type, API_EV_TRIAL);
	assert_string_equal(json_string_value(json_object_get(o, API_K_PHASE)), "arm");
	assert_string_equal(json_string_value(json_object_get(o, API_K_ARM)), "B");
	assert_int_equal(json_integer_value(json_object_get(o, API_K_PAIR)), 2);
	assert_int_equal(json_integer_value(json_object_get(o, API_K_PAIRS)), 4);
	json_decref(o);

	/* Progress: once per completed pair; NaN is null. */
	ev->planned = 4;
	events_trial_progress(3, "k", ev, 1003); /* no pair yet */
	assert_int_equal(events_last_id(), 102);
	ev->npairs = 1;
	ev->nvalid = 1;
	ev->pair[0].b_first = true;
	ev->pair[0].a = 10;
	ev->pair[0].b = 5;
	ev->pair[0].d = 0.69;
	ev->effect = ev->effect_lo = ev->effect_hi = __builtin_nan("");
	events_trial_progress(3, "k", ev, 1003);
	events_trial_progress(3, "k", ev, 1004);
	assert_int_equal(events_last_id(), 103);
	o = data_of(103, &type);
	assert_string_equal(json_string_value(json_object_get(o, API_K_PHASE)), "pair");
	assert_string_equal(json_string_value(json_object_get(o, API_K_ORDER)), "BA");
	assert_int_equal(json_integer_value(json_object_get(o, API_K_PAIR)), 1);
	assert_true(json_is_null(json_object_get(o, API_K_EFFECT)));
	assert_true(json_real_value(json_object_get(o, API_K_D)) > 0.68);
	json_decref(o);
	ev->npairs = 2;
	events_trial_progress(3, "k", ev, 1005);
	assert_int_equal(events_last_id(), 104);

	ev->verdict = VERDICT_KEEP;
	events_verdict(3, "k", "keep", "kept", "better", ev, 1006);
	o = data_of(105, &type);
	assert_string_equal(type, API_EV_VERDICT);
	assert_string_equal(json_string_value(json_object_get(o, API_K_STATE)), "kept");
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, API_K_EVIDENCE), "verdict")), "keep");
	{
		/* The whole evidence, as the API renders it: built from the struct, not printed and parsed back. */
		json_t *want = verdict_json_evidence(ev);

		assert_true(json_equal(json_object_get(o, API_K_EVIDENCE), want));
		assert_int_equal(json_array_size(json_object_get(json_object_get(o, API_K_EVIDENCE), API_K_PAIRS_DETAIL)),
				 2);
		json_decref(want);
	}
	json_decref(o);
	/* After a verdict, a new trial's first pair is published again even with the same numbers. */
	ev->npairs = 2;
	events_trial_progress(3, "k", ev, 1007);
	assert_int_equal(events_last_id(), 106);

	events_change(3, CHANGE_KEPT, "settled", 1008);
	o = data_of(107, &type);
	assert_string_equal(type, API_EV_CHANGE);
	assert_string_equal(json_string_value(json_object_get(o, API_K_STATE)), "kept");
	json_decref(o);

	memset(&row, 0, sizeof(row));
	row.id = 12;
	row.ts = 1009;
	strcpy(row.actor, "agent");
	strcpy(row.action, "conflict");
	strcpy(row.knob, "net.core.somaxconn");
	strcpy(row.outcome, "frozen");
	strcpy(row.detail, "reads 1024");
	id = events_last_id();
	events_audit(&row);
	assert_int_equal(events_last_id(), id + 2);
	o = data_of(id + 1, &type);
	assert_string_equal(type, API_EV_AUDIT);
	assert_int_equal(json_integer_value(json_object_get(o, API_K_ID)), 12);
	json_decref(o);
	o = data_of(id + 2, &type);
	assert_string_equal(type, API_EV_CONFLICT);
	assert_string_equal(json_string_value(json_object_get(o, API_K_KNOB)), "net.core.somaxconn");
	json_decref(o);
	strcpy(row.action, "apply");
	events_audit(&row);
	assert_int_equal(events_last_id(), id + 3);
	free(ev);
}

/* Issue 22, R7: a stored row with bytes that are not UTF-8 (an older agent stored a client's body raw; a cut inside
 * a character) is published, escaped, instead of failing (jansson refuses it); UTF-8 stays as it is. */
static void test_not_utf8(void **state)
{
	struct audit_row row;
	const char *type;
	json_t *o;

	(void)state;
	events_init(1);
	memset(&row, 0, sizeof(row));
	row.id = 7;
	strcpy(row.actor, "root\xff");
	strcpy(row.action, "conflict");
	strcpy(row.knob, "k");
	strcpy(row.outcome, "400");
	strcpy(row.detail, "POST /v1/pause {\"why\":\"\xff\"} caf\xc3\xa9 \xc3");
	events_audit(&row);
	assert_int_equal(events_last_id(), 2);
	o = data_of(1, &type);
	assert_string_equal(type, API_EV_AUDIT);
	assert_string_equal(json_string_value(json_object_get(o, API_K_ACTOR)), "root\\xff");
	assert_string_equal(json_string_value(json_object_get(o, API_K_DETAIL)),
			    "POST /v1/pause {\"why\":\"\\xff\"} caf\xc3\xa9 \\xc3");
	json_decref(o);
	o = data_of(2, &type);
	assert_string_equal(type, API_EV_CONFLICT);
	assert_string_equal(json_string_value(json_object_get(o, API_K_DETAIL)),
			    "POST /v1/pause {\"why\":\"\\xff\"} caf\xc3\xa9 \\xc3");
	json_decref(o);
	events_change(7, CHANGE_FAILED, "nginx -t: \xfe", 2);
	o = data_of(3, &type);
	assert_string_equal(json_string_value(json_object_get(o, API_K_DETAIL)), "nginx -t: \\xfe");
	json_decref(o);
	events_proposal(7, "k", "1", "2", API_PROPOSAL_MADE, "agent", "why \xc3", 3);
	o = data_of(4, &type);
	assert_string_equal(json_string_value(json_object_get(o, API_K_WHY)), "why \\xc3");
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_publish_and_read, teardown),
		cmocka_unit_test_teardown(test_ring_bounds, teardown),
		cmocka_unit_test(test_peer),
		cmocka_unit_test_teardown(test_helpers, teardown),
		cmocka_unit_test_teardown(test_not_utf8, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
