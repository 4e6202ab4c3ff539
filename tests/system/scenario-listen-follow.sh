#!/bin/bash
# Follow-through on the listen queue, on a real nginx under real load. somaxconn 4096 in nginx's namespace and
# nginx's default backlog (511), 2000 concurrent short connections, and workers that stop for 300 ms of every
# second (as on slow disk reads; scn_stall): the accept queue overflows, 1217/s at 511, 403/s at 1022, none at
# 2044 (without the stalls the overflows came and went from run to run, 0 to 479/s). The agent raises the listen
# queue and keeps it; while overflows are still sustained under the same load, its next proposal must be the same
# knob again, from the value it kept (before: 511 -> 1022 kept, 14-19 overflows/s left, and the next proposal was
# tcp_fin_timeout), until no overflow is sustained. Before the judge knew the overflows before the trial, one such
# run aborted 511 -> 1022 on "435 new overflows in B, none in A".
TEST_EXCLUSIVE=1
TEST_NAME=scn-follow
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip ss
NS=ngxat-real-ft-$$
PORT=18470

scn_netns "$NS" net.core.somaxconn=4096 || fail "cannot create namespace $NS"
scn_nginx "$NS" $PORT || fail "nginx did not start"
[ "$(live_backlog "$NS" $PORT)" = 511 ] || fail "live backlog $(live_backlog "$NS" $PORT), not 511"
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
ok "nginx in $NS with somaxconn 4096 and its default backlog 511; the agent is ready"

scn_load "$NS" 600 -t2 -c2000 -H "Connection: close" "http://127.0.0.1:$PORT/"
scn_stall 600 300
sleep 3
before=$(overflow_rate "$NS" 5)
echo "# listen overflows before: $before/s"
[ "$before" -ge 100 ] || fail "the load makes only $before overflows/s: nothing to find"

n=0 last=511
while [ $n -lt 4 ]; do
	prop=$(wait_proposal 120 listen_queue) || break
	id=$(jq .id <<<"$prop")
	from=$(jq -r .from <<<"$prop")
	to=$(jq -r .to <<<"$prop")
	[ "$from" = "$last" ] || fail "proposal $id starts from $from, not the kept $last: $prop"
	ctl approve "$id" >/dev/null || fail "ngxctl approve"
	st=$(wait_end 400 "$id") || fail "change $id still $st"
	n=$((n + 1))
	left=$(overflow_rate "$NS" 3)
	echo "# change $id: listen_queue $from -> $to $st; live $(live_backlog "$NS" $PORT); overflows now $left/s"
	echo "#   $(api "/v1/changes/$id" | jq -r '.detail | sub("^[^{]*"; "") | fromjson? // {} | .reason // empty')"
	[ "$st" = kept ] || break
	last=$to
	[ "$left" -gt 0 ] || break
	other=$(api /v1/proposals | jq -r '[.proposals[] | select(.knob != "listen_queue") | .knob] | join(" ")')
	[ -z "$other" ] || fail "after keeping $to, with $left overflows/s left, the agent proposed $other"
done
kill -0 "$LOAD_PID" 2>/dev/null || fail "the load ended before the after-state was measured"
[ "$last" -gt 1022 ] || fail "the listen queue did not follow through past 1022 (at $last)"
after=$(overflow_rate "$NS" 5)
echo "# listen overflows after: $after/s (before: $before/s), listen queue $last"
[ "$after" -le $((before / 100 + 1)) ] || fail "overflows left: $after/s (before: $before/s) at listen queue $last"
ok "the listen queue followed through to $last over $n trials; overflows $after/s (from $before/s)"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
