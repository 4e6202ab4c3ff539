#!/bin/bash
# nginx's side of the upstream connection (issue 21): a reverse proxy without upstream keepalive (HTTP/1.1,
# Connection "", a proxy_pass to an address: nginx closes each upstream connection itself, its side in TIME_WAIT)
# runs out of local ports: 300 of them, each reusable a second after its close (tcp_tw_reuse's loopback default),
# for the thousands of connects a second 100 clients ask of a backend that takes 20 ms. Most connects fail at once
# ("Cannot assign requested address", 502) while the rest take the backend's time, so upstream time is nearly all of
# request time: the landed agent called the upstream the bottleneck and proposed nothing (found on a real nginx, 85%
# of responses 502). It must see the failing connects as nginx's side, propose the cause first (upstream keepalive,
# which removes the connections, before the port range, which only widens the limit they meet), keep it on the
# 502s it ends, agree with wrk, and put every file back byte for byte on revert.
# Costs about 40 s: the connects fail from the first seconds (a gross finding) and the trial is decided in a few
# pairs.
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
URL=http://127.0.0.1:$PORT/app

scn_netns "$NS" "net.ipv4.ip_local_port_range=40000 40299" || fail "cannot create namespace $NS"
scn_backend "$NS" $BACKEND 0.02
case $? in 0) ;; 77) skip "no echo module (libnginx-mod-http-echo)" ;; *) fail "the backend did not start" ;; esac
# keepalive_requests: wrk's 100 connections stay up (a reconnect would find no port either)
SCN_HTTP="keepalive_requests 1000000;"
SCN_SERVER="location /app { proxy_pass http://127.0.0.1:$BACKEND; proxy_http_version 1.1; proxy_set_header Connection \"\"; }"
SCN_POLICIES="tcp nginx" SCN_ONLY=1 scn_nginx "$NS" $PORT || fail "nginx did not start"
cp "$INC/http.conf" "$TMP/http.conf.orig"
SCN_POLICIES="tcp nginx" SCN_ONLY=1 scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
ok "nginx in $NS proxies /app without upstream keepalive to a backend that takes 20 ms; 300 local ports"

t0=$(date +%s%3N)
scn_load "$NS" 120 -t2 -c100 "$URL"
M="http.requests,http.502,http.request_ms_sum,http.upstream_ms_sum,nginx.err.addr_not_avail"
# The doctor's cause: nginx proxies to an address without keepalive; twice the 100 clients' connections per worker.
scn_proposal 40 nginx.upstream_keepalive 0 128 "^nginx.upstream_keepalive: proxy_pass http://127.0.0.1:$BACKEND at" "$M"
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
grep -q "connect() to 127.0.0.1:$BACKEND failed (99: Cannot assign requested address)" "$NGINX_DIR/logs/error.log" ||
	fail "nginx logged no failed connect"
reason=$(api /v1/trials/current | jq -r .reason)
grep -q "bottleneck is the upstream" <<<"$reason" && fail "the loop's reason: $reason"
ok "$g502 of $req responses 502, upstream time $up_ms of $req_ms ms: the cause proposed, upstream keepalive 0 -> 128"

scn_trial_end 120 "$PROP_ID"
[ "$ST" = kept ] || fail "change $PROP_ID ended $ST: $DETAIL"
ok "kept: $(jq -r .reason <<<"$EV")"
grep -q "keepalive 128;" "$INC/http.conf" || fail "no keepalive in the agent's http.conf: $(cat "$INC/http.conf")"
kill "$LOAD_PID" 2>/dev/null
wait "$LOAD_PID" 2>/dev/null
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
# A second of quiet frees the ports' TIME_WAIT for reuse (tcp_tw_reuse 2 on loopback), then wrk with the change.
sleep 2
out=$(ip netns exec "$NS" timeout 30 wrk -d5s -t2 -c100 "$URL" 2>&1)
n502=$(awk '/Non-2xx/ { print $NF }' <<<"$out")
reqs=$(awk '/ requests in / { print $1 }' <<<"$out")
echo "# wrk with upstream keepalive 128: $reqs requests, ${n502:-0} not 2xx/3xx"
[ "${reqs:-0}" -gt 0 ] && [ $((${n502:-0} * 100)) -le "$reqs" ] ||
	fail "wrk disagrees: ${n502:-0} of ${reqs:-0} responses failed with the change"
ok "wrk agrees: ${n502:-0} of $reqs responses failed with the change (before: $g502 of $req)"

"$AGENT" --revert all -c "$TMP/agent.conf" >"$TMP/revert.out" 2>&1 || fail "revert: $(cat "$TMP/revert.out")"
cmp -s "$TMP/nginx.conf.orig" "$NGINX_CONF" && cmp -s "$TMP/http.conf.orig" "$INC/http.conf" ||
	fail "not back byte for byte: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF"; diff "$TMP/http.conf.orig" "$INC/http.conf")"
ok "revert with the agent stopped: nginx.conf and the agent's http.conf byte for byte"
echo "# $checks checks passed"
