/*
 * A peer's figure for a trial host's pair (fleet/control.h): the objective reduced from this host's own stored
 * frames over the two windows as the host's own judge would reduce a block, and no figure where this host cannot
 * tell (no frames in a window, too little traffic of its own, an objective it does not measure, no store).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/metrics.h"
#include "fleet/control.h"
#include "store/store.h"

#define T0 1764000000000LL

/* 60 one-second frames from T0: REQ requests a tick, 10% of them 5xx in the first 30 s, 5% after. */
static struct store *frames(struct metric_registry **reg, double req)
{
	struct store *st;
	struct frame fr;
	char err[256];

	assert_int_equal(metric_registry_new(reg), 0);
	assert_int_equal(store_open_memory(&st, err, sizeof(err)), 0);
	frame_init(&fr);
	for (int i = 0; i < 60; i++) {
		frame_clear(&fr);
		fr.ts_ms = T0 + i * 1000;
		fr.dt_s = 1;
		assert_int_equal(frame_set(&fr, *reg, "http.requests", req), 0);
		assert_int_equal(frame_set(&fr, *reg, "http.5xx", req * (i < 30 ? 0.10 : 0.05)), 0);
		assert_int_equal(store_append_frame(st, *reg, &fr), 0);
	}
	frame_free(&fr);
	return st;
}

static void test_figure(void **state)
{
	struct fleet_ask q = {.change = 4, .pair = 1, .metric = "http.5xx_rate", .dir = POLICY_LOWER_IS_BETTER,
			      .a_ms = {T0 + 2000, T0 + 22000}, .b_ms = {T0 + 32000, T0 + 52000}};
	struct metric_registry *reg;
	struct store *st = frames(&reg, 100);
	double d;

	(void)state;
	/* 5xx halved from the A window to the B window: better in B by ln 2. */
	assert_int_equal(fleet_figure(st, reg, 1000, &q, &d), 0);
	assert_true(fabs(d - log(2.0)) < 0.01); /* the judge's counts carry half an event of continuity correction */
	/* B measured first: the same figure, by window, not by order. */
	q.b_ms[0] = T0 + 2000, q.b_ms[1] = T0 + 22000, q.a_ms[0] = T0 + 32000, q.a_ms[1] = T0 + 52000;
	assert_int_equal(fleet_figure(st, reg, 1000, &q, &d), 0);
	assert_true(fabs(d + log(2.0)) < 0.01);
	/* Windows this host holds no frames of. */
	q.a_ms[0] = T0 + 100000, q.a_ms[1] = T0 + 120000, q.b_ms[0] = T0 + 130000, q.b_ms[1] = T0 + 150000;
	assert_int_equal(fleet_figure(st, reg, 1000, &q, &d), -ENODATA);
	assert_true(isnan(d));
	/* An objective this host has no figure of; a name no block takes. */
	q.a_ms[0] = T0 + 2000, q.a_ms[1] = T0 + 22000, q.b_ms[0] = T0 + 32000, q.b_ms[1] = T0 + 52000;
	snprintf(q.metric, sizeof(q.metric), "no.such_metric");
	assert_int_equal(fleet_figure(st, reg, 1000, &q, &d), -ENODATA);
	q.metric[0] = '\0';
	assert_int_equal(fleet_figure(st, reg, 1000, &q, &d), -EINVAL);
	/* No store (degraded to none). */
	snprintf(q.metric, sizeof(q.metric), "http.5xx_rate");
	assert_int_equal(fleet_figure(NULL, reg, 1000, &q, &d), -ENODATA);
	store_close(st);
	metric_registry_free(reg);

	/* Two requests a second: 40 a window, too few to be a control of the pool's traffic. */
	st = frames(&reg, 2);
	assert_int_equal(fleet_figure(st, reg, 1000, &q, &d), -ERANGE);
	assert_true(isnan(d));
	store_close(st);
	metric_registry_free(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_figure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
