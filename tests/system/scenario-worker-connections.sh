#!/bin/bash
# Worker connections run out, on a real nginx under real load. worker_connections 128 (in the agent's events.conf)
# with 2 workers and 1000 kept-alive wrk connections: nginx holds 256 connections, the others wait in the accept
# queue or are refused, and nginx logs "worker_connections are not enough" while it serves a trickle. nginx 1.22
# keeps accepts == handled, so nginx.unhandled sees nothing: the agent must propose a larger worker_connections on
# the error log's evidence, and its trial must keep it, where an arm that serves (almost) nothing is an outage,
# the worst block, and not missing data (before, the trial failed: "3 consecutive blocks without data").
TEST_EXCLUSIVE=1
TEST_NAME=scn-wc
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
NS=ngxat-real-wc-$$
PORT=18450

scn_netns "$NS" || fail "cannot create namespace $NS"
SCN_WORKER_CONNECTIONS="" SCN_EVENTS_INC="worker_connections 128;" scn_nginx "$NS" $PORT || fail "nginx did not start"
SCN_POLICIES="nginx"
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
ok "nginx in $NS with worker_connections 128 in the agent's events.conf; the agent is ready"

err_wc() { grep -c "worker_connections are not enough" "$NGINX_DIR/logs/error.log"; }
scn_load "$NS" 300 -t2 -c1000 "http://127.0.0.1:$PORT/"
sleep 3
e0=$(err_wc)
sleep 5
before=$((($(err_wc) - e0) / 5))
echo "# \"worker_connections are not enough\" before: $before/s"
[ "$before" -ge 1 ] || fail "no \"worker_connections are not enough\" under the load: nothing to find"

prop=$(wait_proposal 120 nginx.worker_connections) ||
	fail "no worker_connections proposal: $(ctl trial) $(ctl proposals)"
id=$(jq .id <<<"$prop")
to=$(jq -r .to <<<"$prop")
[ "$(jq -r .from <<<"$prop")" = 128 ] && [ "$to" -ge 1024 ] || fail "proposal: $prop"
jq -e '.why | test("worker_connections are not enough")' <<<"$prop" >/dev/null || fail "proposal without its evidence: $prop"
ok "connections run out: proposal $id raises worker_connections 128 -> $to with its evidence"

ctl approve "$id" | grep -q approved || fail "ngxctl approve"
st=$(wait_end 300 "$id") || fail "change $id still $st: $(ctl trial)"
detail=$(api "/v1/changes/$id" | jq -r .detail)
[ "$st" = kept ] || fail "change $id ended $st: $detail"
ev=$(api "/v1/changes/$id" | jq -r '.detail | sub("^[^{]*"; "") | fromjson? // empty')
[ -n "$ev" ] || fail "no evidence in the change's detail: $detail"
[ "$(jq -r .objective <<<"$ev")" = nginx.err.worker_connections ] || fail "objective: $ev"
jq -e '[.guardrails[].metric] | index("client.failure_rate") != null' <<<"$ev" >/dev/null || fail "no client guardrail: $ev"
ok "kept on the error log's rate, the client's failures among its guardrails: $(jq -r .reason <<<"$ev")"

grep -q "worker_connections $to;" "$INC/events.conf" || fail "events.conf: $(cat "$INC/events.conf")"
e0=$(err_wc)
sleep 5
after=$((($(err_wc) - e0) / 5))
echo "# \"worker_connections are not enough\" after: $after/s (before: $before/s)"
[ $((after * 20)) -le "$before" ] || fail "still $after/s after the change (before: $before/s)"
ok "after: worker_connections $to, \"not enough\" $after/s (from $before/s)"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
