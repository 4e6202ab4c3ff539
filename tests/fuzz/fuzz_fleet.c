/* An answer of etcd's JSON gateway to the fleet's range of its pool's keys (etcd_range_answer into fleet_take_key):
 * whatever answers at an endpoint, or writes the pool's keys, is the network's. Every text the view keeps is
 * printable ASCII within its field; the counts stay within their arrays; a slot this host holds is seen only as
 * its own (its host, its lease); a peer's ask taken has two windows that do not overlap and a metric of the
 * registry's characters; the answers to this host's ask count no more figures than answers, each within the judge's
 * bound of a control. The same bytes as a watch's stream (etcd_watch_feed, in two pieces cut where the first byte
 * says): every event's key is under the pool's prefix, every error said in printable ASCII. */
#include "fuzz.h"

#include <errno.h>
#include <math.h>

#include "core/judge.h"

#include "fleet/etcd.h"
#include "fleet/fleet.h"

#define PREFIX "/ngx-autotune/pools/web/"

static void clean(const char *s, size_t len)
{
	size_t n = strnlen(s, len);

	FUZZ_CHECK(n < len);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(s[i] >= 0x20 && s[i] <= 0x7e);
}

static int on_event(void *ctx, const char *key, int64_t lease, bool deleted)
{
	(void)ctx, (void)lease, (void)deleted;
	FUZZ_CHECK(!key || strncmp(key, PREFIX, strlen(PREFIX)) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct etcd_watch_buf w = {0};
	size_t cut = size ? data[0] % (size + 1) : 0;
	static struct fleet_view view;
	static struct fleet_round rd;
	static struct fleet_control c;
	int r;

	memset(&view, 0, sizeof(view));
	memset(&rd, 0, sizeof(rd));
	memset(&c, 0, sizeof(c));
	c.change = 7;
	c.pair = 2;
	rd.control = &c;
	rd.prefix = PREFIX;
	rd.host = "web-1";
	rd.slot = 0;
	rd.lease = 7;
	rd.next = &view;
	r = etcd_range_answer((const char *)data, size, PREFIX, fleet_take_key, &rd);
	FUZZ_CHECK(r == 0 || r == -EPROTO);
	FUZZ_CHECK(view.n <= FLEET_MEMBERS_MAX);
	FUZZ_CHECK(view.nverdicts <= POOL_VERDICTS_MAX);
	for (size_t i = 0; i < view.n; i++) {
		const struct fleet_member *m = &view.m[i];

		clean(m->host, sizeof(m->host));
		clean(m->state, sizeof(m->state));
		clean(m->knob, sizeof(m->knob));
		clean(m->agent, sizeof(m->agent));
		clean(m->kernel, sizeof(m->kernel));
		FUZZ_CHECK(m->slot >= -1 && m->slot < 1000);
	}
	for (size_t i = 0; i < view.nverdicts; i++) {
		const struct pool_verdict *v = &view.verdicts[i];

		clean(v->host, sizeof(v->host));
		clean(v->knob, sizeof(v->knob));
		clean(v->from, sizeof(v->from));
		clean(v->to, sizeof(v->to));
		clean(v->symptom, sizeof(v->symptom));
		clean(v->summary, sizeof(v->summary));
		clean(v->kernel, sizeof(v->kernel));
	}
	FUZZ_CHECK(c.nasks <= FLEET_ASKS_MAX);
	for (size_t i = 0; i < c.nasks; i++) {
		const struct fleet_ask *q = &c.asks[i];

		clean(q->host, sizeof(q->host));
		clean(q->metric, sizeof(q->metric));
		FUZZ_CHECK(q->metric[0] && strspn(q->metric, "abcdefghijklmnopqrstuvwxyz0123456789._") == strlen(q->metric));
		FUZZ_CHECK(q->a_ms[0] < q->a_ms[1] && q->b_ms[0] < q->b_ms[1]);
		FUZZ_CHECK(q->a_ms[1] <= q->b_ms[0] || q->b_ms[1] <= q->a_ms[0]);
		FUZZ_CHECK(q->pair >= 1 && q->pair <= JUDGE_PAIRS_MAX && q->change >= 1);
		FUZZ_CHECK(strcmp(q->host, "web-1") != 0);
	}
	FUZZ_CHECK(c.peers <= c.answered);
	FUZZ_CHECK(fabs(c.d_sum) <= c.peers * log(JUDGE_CONTROL_MAX) + 1e-9);
	for (size_t i = 0; i < 16; i++)
		FUZZ_CHECK(strnlen(rd.stale[i], sizeof(rd.stale[i])) < sizeof(rd.stale[i]));
	r = etcd_watch_feed(&w, (const char *)data, cut, PREFIX, on_event, NULL);
	if (r == 0)
		r = etcd_watch_feed(&w, (const char *)data + cut, size - cut, PREFIX, on_event, NULL);
	FUZZ_CHECK(r == 0 || r == -EIO || r == -ECANCELED || r == -EPROTO || r == -ENOMEM);
	clean(w.why, sizeof(w.why));
	etcd_watch_buf_free(&w);
	return 0;
}
