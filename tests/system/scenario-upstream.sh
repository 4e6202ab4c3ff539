#!/bin/bash
# Not nginx's fault: nginx proxies to a slow upstream (a second nginx in the namespace that answers after 100 ms),
# so upstream time is nearly all of request time. somaxconn is 16 as in the listen-queue scenario, and the churn
# overflows it, so a listen_queue proposal would follow if the agent did not first ask where time goes. It must
# propose nothing, journal nothing, and say in its status that the bottleneck is the upstream.
TEST_EXCLUSIVE=1
TEST_NAME=scn-upstream
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
NS=ngxat-real-up-$$
PORT=18430
BACKEND=18431

scn_netns "$NS" net.core.somaxconn=16 || fail "cannot create namespace $NS"
scn_backend "$NS" $BACKEND 0.1
case $? in 0) ;; 77) skip "no echo module (libnginx-mod-http-echo)" ;; *) fail "the backend did not start" ;; esac
# keepalive above the 1000 clients: every upstream connection is reused. With keepalive 64 a run on this machine
# opened 3019 upstream connections/s and held 17553 of the 28232 local ports in TIME_WAIT: nginx's side of the
# upstream connection then limits too (ports about to run out), which scenario-ports.sh is about, not this test.
SCN_HTTP="upstream backend { server 127.0.0.1:$BACKEND; keepalive 1024; }"
SCN_SERVER='location /app { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection ""; }'
scn_nginx "$NS" $PORT || fail "nginx did not start"
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
ok "nginx in $NS proxies /app to a backend that takes 100 ms; somaxconn 16"

t0=$(date +%s%3N)
scn_load "$NS" 50 -t2 -c1000 -H "Connection: close" "http://127.0.0.1:$PORT/app"
# A proposal needs a full window (30 ticks of 500 ms, "watching: N of 30" until then); wait for it, then 10 s more.
wait_for 60 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/trials/current |
	jq -e '.reason | test(\"^no proposal: .*bottleneck is the upstream\")'" || fail "status never said upstream: $(ctl trial)"
sleep 10
reason=$(api /v1/trials/current | jq -r .reason)
echo "# $reason"
grep -q "the bottleneck is the upstream" <<<"$reason" || fail "the loop's reason: $reason"
ovf=$(api "/v1/frames?since=$t0&metrics=tcp.listen_overflows" |
	jq '[.frames[].values["tcp.listen_overflows"] | select(. != null)] | add // 0')
echo "# listen overflows the agent saw during the load: $ovf"
[ "${ovf%.*}" -ge 300 ] || fail "only $ovf listen overflows: no symptom to hold back"
ok "with $ovf listen overflows the loop holds back: $reason"

[ "$(api /v1/proposals | jq '.proposals | length')" = 0 ] || fail "proposals: $(ctl proposals)"
[ "$(api /v1/changes | jq '.changes | length')" = 0 ] || fail "journal: $(ctl history)"
grep -q "propose" "$TMP/agent.log" && fail "the log shows a proposal: $(grep propose "$TMP/agent.log")"
ctl status | grep -q "tuning: no proposal: upstream time is .*the bottleneck is the upstream" ||
	fail "ngxctl status does not say upstream: $(ctl status)"
ok "no proposal, nothing journaled; ngxctl status says upstream"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
