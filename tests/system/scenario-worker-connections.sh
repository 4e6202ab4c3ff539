#!/bin/bash
# Worker connections run out, on a real nginx under real load. worker_connections 128 (in the agent's events.conf)
# with 2 workers and 1000 kept-alive wrk connections: nginx holds 256 connections, the others wait in the accept
# queue or are refused, and nginx logs "worker_connections are not enough" while it serves a trickle. nginx 1.22
# keeps accepts == handled, so nginx.unhandled sees nothing: the agent must propose a larger worker_connections on
# the error log's evidence, and its trial must keep it, where an arm that serves (almost) nothing is an outage,
# the worst block, and not missing data (before, the trial failed: "3 consecutive blocks without data").
# WC_IN=nginx.conf (scenario-wc-nginx-conf.sh) sets worker_connections 128 in nginx.conf's events block instead, as
# operators do: the knob is then tuned where it stands (before, it was unsupported there and the agent proposed
# tcp_fin_timeout and listen_queue instead), the kept value is on the operator's line with the rest of nginx.conf
# byte for byte, and ngxctl revert puts nginx.conf back byte for byte.
WC_IN=${WC_IN:-events.conf}
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
case $WC_IN in
nginx.conf) SCN_WORKER_CONNECTIONS="worker_connections 128;" SCN_EVENTS_INC="" scn_nginx "$NS" $PORT ;;
*) SCN_WORKER_CONNECTIONS="" SCN_EVENTS_INC="worker_connections 128;" scn_nginx "$NS" $PORT ;;
esac || fail "nginx did not start"
SCN_POLICIES="nginx"
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
if [ "$WC_IN" = nginx.conf ]; then
	where=$(api /v1/knobs | jq -r '.knobs[] | select(.name == "nginx.worker_connections") | "\(.state) \(.why)"')
	[ "$where" = "ok set in $NGINX_CONF:8 (edited there)" ] || fail "nginx.worker_connections: $where"
fi
ok "nginx in $NS with worker_connections 128 in $WC_IN; the agent is ready"

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
# The doctor's cause: the error logged, or the connections held or waiting near the limit.
jq -e '.why | test("worker_connections are not enough|up to [0-9]+ (active client connections|connections established)")' \
	<<<"$prop" >/dev/null || fail "proposal without its evidence: $prop"
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

if [ "$WC_IN" = nginx.conf ]; then
	sed "s/^	worker_connections 128;$/	worker_connections $to;/" "$TMP/nginx.conf.orig" | cmp -s - "$NGINX_CONF" ||
		fail "nginx.conf is not the operator's with one argument changed: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF")"
	[ "$(cat "$INC/events.conf")" = "" ] || fail "events.conf got a line: $(cat "$INC/events.conf")"
else
	grep -q "worker_connections $to;" "$INC/events.conf" || fail "events.conf: $(cat "$INC/events.conf")"
fi
e0=$(err_wc)
sleep 5
after=$((($(err_wc) - e0) / 5))
echo "# \"worker_connections are not enough\" after: $after/s (before: $before/s)"
[ $((after * 20)) -le "$before" ] || fail "still $after/s after the change (before: $before/s)"
ok "after: worker_connections $to in $WC_IN, \"not enough\" $after/s (from $before/s)"
if [ "$WC_IN" = nginx.conf ]; then
	kill "$LOAD_PID" 2>/dev/null
	ctl revert "$id" >/dev/null || fail "ngxctl revert $id"
	wait_for 30 cmp -s "$TMP/nginx.conf.orig" "$NGINX_CONF" ||
		fail "nginx.conf not back byte for byte: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF")"
	ok "ngxctl revert: nginx.conf is the operator's again, byte for byte"
fi
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
