/* Unit tests for the counts /metrics reads from the change journal and the audit trail (agent/store_counts.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store.h"

struct fx {
	char dir[64];
	char path[128];
	struct metric_registry *reg;
	struct store *st;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	strcpy(f->dir, "/tmp/test_store_counts.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/c.db", f->dir);
	assert_int_equal(metric_registry_new(&f->reg), 0);
	assert_int_equal(store_open(f->path, NULL, f->reg, &f->st, err, sizeof(err)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	store_close(f->st);
	metric_registry_free(f->reg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static int64_t add(struct fx *f, enum change_kind kind, enum change_state st, const char *detail)
{
	struct change_row r;

	memset(&r, 0, sizeof(r));
	snprintf(r.knob, sizeof(r.knob), "net.core.somaxconn");
	snprintf(r.old_value, sizeof(r.old_value), "128");
	snprintf(r.new_value, sizeof(r.new_value), "4096");
	r.kind = kind;
	r.state = st;
	snprintf(r.actor, sizeof(r.actor), "agent");
	snprintf(r.detail, sizeof(r.detail), "%s", detail);
	r.created_ms = 1000;
	assert_int_equal(store_change_insert(f->st, &r), 0);
	return r.id;
}

struct seen {
	char names[8][40];
	int64_t n[8];
	size_t count;
};

static int on_verdict(void *ctx, const char *name, int64_t n)
{
	struct seen *s = ctx;

	assert_true(s->count < 8);
	snprintf(s->names[s->count], sizeof(s->names[0]), "%s", name);
	s->n[s->count++] = n;
	return 0;
}

static int stop_at_first(void *ctx, const char *name, int64_t n)
{
	(void)ctx;
	(void)name;
	(void)n;
	return -ECANCELED;
}

static void test_empty(void **state)
{
	struct fx *f = *state;
	int64_t counts[2][CHANGE_STATE_COUNT], n = -1;
	struct seen s = {.count = 0};

	assert_int_equal(store_change_counts(f->st, counts), 0);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < CHANGE_STATE_COUNT; i++)
			assert_int_equal(counts[k][i], 0);
	assert_int_equal(store_verdict_counts(f->st, on_verdict, &s), 0);
	assert_int_equal(s.count, 0);
	assert_int_equal(store_audit_count(f->st, "conflict", &n), 0);
	assert_int_equal(n, 0);
}

static void test_counts(void **state)
{
	struct fx *f = *state;
	int64_t counts[2][CHANGE_STATE_COUNT], id;
	struct seen s = {.count = 0};

	add(f, CHANGE_KIND_CHANGE, CHANGE_PROPOSED, "");
	add(f, CHANGE_KIND_CHANGE, CHANGE_KEPT, "keep: p 0.01; {\"verdict\":\"keep\",\"reason\":\"x\",\"pairs\":8}");
	add(f, CHANGE_KIND_CHANGE, CHANGE_KEPT, "keep; {\"verdict\":\"keep\",\"pairs\":8}");
	add(f, CHANGE_KIND_CHANGE, CHANGE_REVERTED, "no effect; {\"verdict\":\"inconclusive\",\"pairs\":8}");
	add(f, CHANGE_KIND_CHANGE, CHANGE_ABORTED, "guard; {\"verdict\":\"aborted\",\"reason\":\"overflows\"}");
	/* Not verdicts: an operator's revert, a detail without evidence, a damaged one, a name too long. */
	add(f, CHANGE_KIND_CHANGE, CHANGE_REVERTED, "reverted by alice");
	add(f, CHANGE_KIND_CHANGE, CHANGE_FAILED, "write failed; {\"verdict\":\"");
	add(f, CHANGE_KIND_CHANGE, CHANGE_FAILED, "{\"verdict\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}");
	add(f, CHANGE_KIND_CHANGE, CHANGE_FAILED, "{\"verdict\":\"\"}");
	/* A revert row quoting a verdict is not a trial. */
	add(f, CHANGE_KIND_REVERT, CHANGE_KEPT, "{\"verdict\":\"keep\"}");
	id = add(f, CHANGE_KIND_CHANGE, CHANGE_TRIAL, "");
	assert_int_equal(store_change_update(f->st, id, CHANGE_KEPT, "ok; {\"verdict\":\"keep\"}", 2000), 0);

	assert_int_equal(store_change_counts(f->st, counts), 0);
	assert_int_equal(counts[CHANGE_KIND_CHANGE][CHANGE_PROPOSED], 1);
	assert_int_equal(counts[CHANGE_KIND_CHANGE][CHANGE_KEPT], 3);
	assert_int_equal(counts[CHANGE_KIND_CHANGE][CHANGE_REVERTED], 2);
	assert_int_equal(counts[CHANGE_KIND_CHANGE][CHANGE_ABORTED], 1);
	assert_int_equal(counts[CHANGE_KIND_CHANGE][CHANGE_FAILED], 3);
	assert_int_equal(counts[CHANGE_KIND_CHANGE][CHANGE_TRIAL], 0);
	assert_int_equal(counts[CHANGE_KIND_REVERT][CHANGE_KEPT], 1);
	assert_int_equal(counts[CHANGE_KIND_REVERT][CHANGE_PROPOSED], 0);

	assert_int_equal(store_verdict_counts(f->st, on_verdict, &s), 0);
	assert_int_equal(s.count, 3);
	assert_string_equal(s.names[0], "aborted");
	assert_int_equal(s.n[0], 1);
	assert_string_equal(s.names[1], "inconclusive");
	assert_int_equal(s.n[1], 1);
	assert_string_equal(s.names[2], "keep");
	assert_int_equal(s.n[2], 3);
	assert_int_equal(store_verdict_counts(f->st, stop_at_first, NULL), -ECANCELED);
}

static void test_audit_count(void **state)
{
	struct fx *f = *state;
	struct audit_row a;
	int64_t n;

	memset(&a, 0, sizeof(a));
	snprintf(a.actor, sizeof(a.actor), "agent");
	snprintf(a.action, sizeof(a.action), "conflict");
	snprintf(a.knob, sizeof(a.knob), "net.core.somaxconn");
	snprintf(a.outcome, sizeof(a.outcome), "frozen");
	snprintf(a.detail, sizeof(a.detail), "reads 1024");
	a.ts = 1000;
	assert_int_equal(store_audit_append(f->st, &a), 0);
	a.ts = 2000;
	assert_int_equal(store_audit_append(f->st, &a), 0); /* collapsed into the first row, count 2 */
	snprintf(a.detail, sizeof(a.detail), "reads 2048");
	assert_int_equal(store_audit_append(f->st, &a), 0);
	snprintf(a.action, sizeof(a.action), "revert");
	assert_int_equal(store_audit_append(f->st, &a), 0);
	assert_int_equal(store_audit_count(f->st, "conflict", &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(store_audit_count(f->st, "revert", &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_audit_count(f->st, "nothing", &n), 0);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_count, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
