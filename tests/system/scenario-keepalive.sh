#!/bin/bash
# keepalive_requests 1 in nginx.conf's http block, as an operator left it: every request closes its connection,
# kept-alive clients reconnect for each one, and the host spends its CPU on handshakes. Before, the knob was
# `unsupported` there ("remove it there"), there was no advisory, and the agent proposed tcp_fin_timeout. Now the
# keepalive rule reads the live value from the operator's line, the agent proposes keepalive_requests there,
# keeps it, the kept value stands on the operator's line with the rest of nginx.conf byte for byte, and ngxctl
# revert puts nginx.conf back byte for byte.
TEST_EXCLUSIVE=1
TEST_NAME=scn-ka
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
NS=ngxat-real-ka-$$
PORT=18460

scn_netns "$NS" || fail "cannot create namespace $NS"
SCN_HTTP="keepalive_requests 1;" scn_nginx "$NS" $PORT || fail "nginx did not start"
line=$(grep -n '^	keepalive_requests 1;$' "$NGINX_CONF" | cut -d: -f1)
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
where=$(api /v1/knobs | jq -r '.knobs[] | select(.name == "nginx.keepalive_requests") | "\(.state) \(.value) \(.why)"')
[ "$where" = "ok 1 set in $NGINX_CONF:$line (edited there)" ] || fail "nginx.keepalive_requests: $where"
ok "nginx in $NS with keepalive_requests 1 in nginx.conf:$line; the agent reads it there"

scn_load "$NS" 300 -t2 -c50 "http://127.0.0.1:$PORT/"
prop=$(wait_proposal 120 nginx.keepalive_requests) ||
	fail "no keepalive_requests proposal: $(ctl trial) $(ctl proposals)"
id=$(jq .id <<<"$prop")
to=$(jq -r .to <<<"$prop")
[ "$(jq -r .from <<<"$prop")" = 1 ] && [ "$to" -ge 100 ] || fail "proposal: $prop"
jq -e '.why | test("requests per connection.*keepalive_requests 1")' <<<"$prop" >/dev/null || fail "proposal without its evidence: $prop"
ok "connections closed after each request: proposal $id raises keepalive_requests 1 -> $to with its evidence"
others=$(api /v1/proposals | jq -r '[.proposals[] | select(.knob != "nginx.keepalive_requests") | .knob] | join(" ")')
[ -z "$others" ] || fail "symptoms proposed beside the cause: $others"

ctl approve "$id" | grep -q approved || fail "ngxctl approve"
st=$(wait_end 300 "$id") || fail "change $id still $st: $(ctl trial)"
detail=$(api "/v1/changes/$id" | jq -r .detail)
[ "$st" = kept ] || fail "change $id ended $st: $detail"
ev=$(api "/v1/changes/$id" | jq -r '.detail | sub("^[^{]*"; "") | fromjson? // empty')
[ "$(jq -r .objective <<<"$ev")" = cpu.busy_per_kreq ] || fail "objective: $ev"
ok "kept on the CPU a request costs: $(jq -r .reason <<<"$ev")"

sed "s/^	keepalive_requests 1;$/	keepalive_requests $to;/" "$TMP/nginx.conf.orig" | cmp -s - "$NGINX_CONF" ||
	fail "nginx.conf is not the operator's with one argument changed: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF")"
[ "$(cat "$INC/http.conf")" = "" ] || fail "http.conf got a line: $(cat "$INC/http.conf")"
ok "after: keepalive_requests $to on the operator's line, http.conf untouched"

kill "$LOAD_PID" 2>/dev/null
ctl revert "$id" >/dev/null || fail "ngxctl revert $id"
wait_for 30 cmp -s "$TMP/nginx.conf.orig" "$NGINX_CONF" ||
	fail "nginx.conf not back byte for byte: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF")"
ok "ngxctl revert: nginx.conf is the operator's again, byte for byte"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
