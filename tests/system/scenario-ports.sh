#!/bin/bash
# nginx's side of the upstream connection: a reverse proxy without upstream keepalive (HTTP/1.1, Connection "",
# no keepalive in an upstream block: nginx closes each upstream connection itself, its side in TIME_WAIT) runs out
# of local ports: 300 of them, each reusable a second after its close (tcp_tw_reuse's loopback default), for the
# thousands of connects a second 100 clients ask of a backend that takes 20 ms. Most connects fail at once
# ("Cannot assign requested address", 502) while the rest take the backend's time, so upstream time is nearly all
# of request time: the agent used to call the upstream the bottleneck and propose nothing (found on a real nginx,
# 85% of responses 502). It must see the failing connects as nginx's side and propose the port range.
# Costs about 10 s: the connects fail from the first seconds, a gross finding.
TEST_EXCLUSIVE=1
TEST_NAME=scn-ports
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
NS=ngxat-real-ports-$$
PORT=18440
BACKEND=18441

scn_netns "$NS" "net.ipv4.ip_local_port_range=40000 40299" || fail "cannot create namespace $NS"
scn_backend "$NS" $BACKEND 0.02
case $? in 0) ;; 77) skip "no echo module (libnginx-mod-http-echo)" ;; *) fail "the backend did not start" ;; esac
# keepalive_requests: wrk's 100 connections stay up (a reconnect would find no port either)
SCN_HTTP="keepalive_requests 1000000;"
SCN_SERVER="location /app { proxy_pass http://127.0.0.1:$BACKEND; proxy_http_version 1.1; proxy_set_header Connection \"\"; }"
SCN_POLICIES="tcp" SCN_ONLY=1 scn_nginx "$NS" $PORT || fail "nginx did not start"
SCN_POLICIES="tcp" SCN_ONLY=1 scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
ok "nginx in $NS proxies /app without upstream keepalive to a backend that takes 20 ms; 300 local ports"

t0=$(date +%s%3N)
scn_load "$NS" 40 -t2 -c100 "http://127.0.0.1:$PORT/app"
M="http.requests,http.502,http.request_ms_sum,http.upstream_ms_sum,nginx.err.addr_not_avail"
# The doctor's cause (local ports running out, the failed connects counted) or the detector's reading.
scn_proposal 40 net.ipv4.ip_local_port_range "40000 40299" "32768 60999" \
	"addr_not_avail|Cannot assign requested address\" [0-9]+ times" "$M"
echo "# $(jq -c . <<<"$PROP")"
api "/v1/frames?since=$t0&metrics=$M" >"$TMP/frames.json"
read -r req g502 req_ms up_ms fails < <(jq -r '[.frames[].values] | [
	([.[]["http.requests"] // 0] | add), ([.[]["http.502"] // 0] | add), ([.[]["http.request_ms_sum"] // 0] | add),
	([.[]["http.upstream_ms_sum"] // 0] | add), ([.[]["nginx.err.addr_not_avail"] // 0] | add)] | @tsv' "$TMP/frames.json")
echo "# before the proposal: $req requests, $g502 of them 502, $fails connects failed; upstream $up_ms of $req_ms ms"
# The fault as the agent saw it: most responses 502 from connects that failed at once, and upstream time still
# 90% or more of request time, which the upstream rule alone took for the upstream's.
awk -v g="$g502" -v r="$req" -v f="$fails" 'BEGIN { exit !(r > 0 && g / r >= 0.5 && f >= g / 4) }' ||
	fail "the ports did not run out: $req requests, $g502 502s, $fails failed connects"
awk -v u="$up_ms" -v q="$req_ms" 'BEGIN { exit !(q > 0 && u / q >= 0.9) }' ||
	fail "upstream time $up_ms of $req_ms ms: not the case where the upstream looked like the bottleneck"
ok "$g502 of $req responses 502, upstream time $up_ms of $req_ms ms: proposed the port range all the same"
grep -q "connect() to 127.0.0.1:$BACKEND failed (99: Cannot assign requested address)" "$NGINX_DIR/logs/error.log" ||
	fail "nginx logged no failed connect"
reason=$(api /v1/trials/current | jq -r .reason)
grep -q "bottleneck is the upstream" <<<"$reason" && fail "the loop's reason: $reason"
ok "not 'the bottleneck is the upstream': $reason"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
