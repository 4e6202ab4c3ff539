#!/bin/bash
# Clients that connect and pause before they speak, on a real nginx under real load: 300 of them, each opening a
# connection 0.5 s before its request (a pool that connects ahead of its requests, a slow client), beside wrk.
# Each sits in nginx silent, accepted, holding a worker connection (stub_status counts it as Waiting, not
# Reading): about 290 at any time. The agent proposes deferred on the operator's listen line (silent_connections,
# from tcp_info through inet_diag); the trial must show fewer connections in nginx (nginx.active). Kept: the live
# socket must then hold idle connections in SYN-RECV (the kernel has not handed them to accept()), stub_status
# must show them gone from nginx, and ngxctl revert must bring the operator's nginx.conf back byte for byte, with
# idle connections accepted at once again. Reverted by a guardrail (the synthetic client's latency not shown
# within 10% on a host this busy): the rollback must be as whole. (nginx's TCP_DEFER_ACCEPT is 1 s on Linux:
# clients pausing longer are accepted anyway after a second; this load stays within it.)
TEST_EXCLUSIVE=1
TEST_NAME=scn-df
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip ss python3
NS=ngxat-real-df-$$
PORT=18490
IDLE=300

# idle_clients SECONDS: IDLE clients, each connecting, waiting 0.5 s, asking once and closing, again and again
idle_clients() {
	ip netns exec "$NS" timeout $(($1 + 10)) python3 -c '
import asyncio, random, sys, time
port, n, end = int(sys.argv[1]), int(sys.argv[2]), time.time() + float(sys.argv[3])
async def one():
    await asyncio.sleep(random.random() * 0.5)
    while time.time() < end:
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port)
            await asyncio.sleep(0.5)
            w.write(b"GET / HTTP/1.1\r\nHost: idle\r\nConnection: close\r\n\r\n")
            await w.drain()
            await r.read()
            w.close()
        except OSError:
            await asyncio.sleep(0.1)
async def main():
    await asyncio.gather(*(one() for _ in range(n)))
asyncio.run(main())' "$PORT" "$IDLE" "$1" >"$TMP/idle.out" 2>&1 &
	IDLE_PID=$!
	CLEANUP+=("kill $IDLE_PID")
}
# active: stub_status's Active connections now
active() {
	ip netns exec "$NS" curl -s --max-time 3 "http://127.0.0.1:$PORT/nginx_status" |
		awk '/^Active connections:/ { print $3 }'
}

scn_netns "$NS" || fail "cannot create namespace $NS"
scn_nginx "$NS" $PORT || fail "nginx did not start"
idle=$(idle_state "$NS" $PORT)
[ "$idle" = ESTAB ] || fail "an idle connection is $idle before, not ESTAB"
# The listen policies alone, without reuseport (two workers may share unevenly under this load: another symptom,
# another test), as an operator who manages only these knobs would.
SCN_POLICIES=listen SCN_ONLY=1
scn_agent_conf "$TMP/agent.conf" $PORT
awk '/^\[knob / { skip = ($0 == "[knob listen_reuseport]") } !skip' "$srcdir/policies/listen.policy" |
	sed 's/^settle = .*/settle = 2s/' >"$TMP/policies.d/listen.policy"
grep -q '^\[knob listen_deferred\]' "$TMP/policies.d/listen.policy" &&
	! grep -q '^\[knob listen_reuseport\]' "$TMP/policies.d/listen.policy" || fail "policy override"
KNOB=listen_deferred FROM=off TO=on
scn_start_agent
ok "nginx in $NS, an idle connection is accepted at once (ESTAB); the agent is ready"

scn_load "$NS" 600 -t1 -c50 "http://127.0.0.1:$PORT/"
idle_clients 600
sleep 4
before=$(active)
echo "# stub_status Active before: $before (wrk holds 50)"
[ -n "$before" ] && [ "$before" -ge $((IDLE * 2 / 3)) ] ||
	fail "only ${before:-no} connections in nginx: nothing to find; the clients: $(tail -5 "$TMP/idle.out")"

scn_proposal 120 "$KNOB" "$FROM" "$TO" "silent since their handshake" "tcp.served.*"
id=$PROP_ID
ok "connections wait in nginx without a request: proposal $id $KNOB $FROM -> $TO with its evidence"

scn_trial_end 300 "$id"
st=$ST detail=$DETAIL ev=$EV
echo "# pairs (A/B active): $(jq -r '[.pairs_detail[] | "\(.a | floor)/\(.b | floor)"] | join(" ")' <<<"$ev")"
[ "$(jq -r .objective <<<"$ev")" = nginx.active ] || fail "change $id ended $st; objective: $detail"
# Whatever the verdict, the connections in nginx must have fallen: the objective shown better.
jq -e '.lower > 0' <<<"$ev" >/dev/null || fail "change $id ended $st, fewer connections in nginx not shown: $detail"
# restored: the operator's nginx.conf byte for byte, no backup left, idle connections accepted at once
no_backups() { [ -z "$(ls -A "$INC"/listen-deferred-backup 2>/dev/null)" ]; }
accepted() { [ "$(idle_state "$NS" $PORT)" = ESTAB ]; }
restored() {
	wait_for 30 cmp -s "$TMP/nginx.conf.orig" "$NGINX_CONF" ||
		fail "nginx.conf not back byte for byte: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF")"
	wait_for 10 no_backups || fail "backups left: $(ls -R "$INC")"
	wait_for 15 accepted || fail "an idle connection is $(idle_state "$NS" $PORT) after the rollback, not ESTAB"
}
case $st in
kept)
	ok "kept on nginx.active: $(jq -r .reason <<<"$ev")"
	kill -0 "$LOAD_PID" 2>/dev/null && kill -0 "$IDLE_PID" 2>/dev/null || fail "the load ended before the after-state"
	sleep 3
	after=$(active)
	echo "# stub_status Active after: $after (before: $before)"
	[ -n "$after" ] && [ "$after" -lt $((before / 3)) ] || fail "still ${after:-?} connections in nginx"
	idle=$(idle_state "$NS" $PORT)
	[ "$idle" = SYN-RECV ] || fail "an idle connection is $idle with deferred kept, not SYN-RECV"
	sed "s/^		listen 127.0.0.1:$PORT ;$/		listen 127.0.0.1:$PORT deferred ;/" "$TMP/nginx.conf.orig" |
		cmp -s - "$NGINX_CONF" ||
		fail "nginx.conf is not the operator's with deferred added: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF")"
	ok "after: deferred on the operator's listen line, idle connections wait in SYN-RECV, $after in nginx"
	kill "$LOAD_PID" "$IDLE_PID" 2>/dev/null
	ctl revert "$id" >/dev/null || fail "ngxctl revert $id"
	restored
	ok "ngxctl revert: nginx.conf is the operator's again, byte for byte; idle connections are accepted at once"
	;;
reverted | aborted)
	# The synthetic client shares 2 CPUs with wrk and 300 clients here: its latency may not be shown within the
	# guardrail's 10% (a CI run: connections in nginx 342 -> 52 in 8 of 8 pairs, client p50 rose 10% [-8.9%,
	# +33%], inconclusive). A guardrail's caution is a right verdict; the rollback must then be whole.
	jq -e '.reason | startswith("guardrail ")' <<<"$ev" >/dev/null ||
		fail "change $id $st, not by a guardrail: $detail"
	kill "$LOAD_PID" "$IDLE_PID" 2>/dev/null
	restored
	ok "$st ($(jq -r .reason <<<"$ev")): nginx.conf is the operator's again, byte for byte; idle connections ESTAB"
	;;
*) fail "change $id ended $st: $detail" ;;
esac
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
