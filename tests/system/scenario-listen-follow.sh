#!/bin/bash
# Follow-through on the listen queue, on a real nginx under real load. somaxconn 4096 in nginx's namespace and
# nginx's default backlog (511), 2000 concurrent short connections: the accept queue overflows. The agent raises
# the listen queue and keeps it; while overflows are still sustained under the same load, its next proposal must
# be the same knob again, from the value it kept (before: 511 -> 1022 kept, 14-19 overflows/s left, and the next
# proposal was tcp_fin_timeout), until no overflow is sustained.
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
sleep 3
before=$(overflow_rate "$NS" 5)
echo "# listen overflows before: $before/s"
[ "$before" -ge 10 ] || fail "the load makes only $before overflows/s: nothing to find"

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
	echo "# change $id: listen_queue $from -> $to $st; live $(live_backlog "$NS" $PORT); overflows now $(overflow_rate "$NS" 3)/s"
	echo "#   $(api "/v1/changes/$id" | jq -r '.detail | sub("^[^{]*"; "") | fromjson? // {} | .reason // empty')"
	[ "$st" = kept ] || break
	last=$to
	other=$(api /v1/proposals | jq -r '[.proposals[] | select(.knob != "listen_queue") | .knob] | join(" ")')
	[ -z "$other" ] || fail "after keeping $to, with overflows left, the agent proposed $other"
done
[ "$last" -gt 511 ] || fail "no listen_queue change kept"
after=$(overflow_rate "$NS" 5)
echo "# listen overflows after: $after/s (before: $before/s), listen queue $last"
[ "$after" -le $((before / 20 + 1)) ] || fail "overflows left: $after/s (before: $before/s) at listen queue $last"
ok "the listen queue followed through to $last over $n trials; overflows $after/s (from $before/s)"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
