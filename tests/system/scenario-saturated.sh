#!/bin/bash
# Eyes that hold under saturation: one nginx worker gzipping a 1 MB text for 100 clients is busy for whole
# event-loop turns, so stub_status (answered from that loop) has no answer within its 400 ms in half the ticks or
# more, and the synthetic client's requests time out. Found on a real nginx: the probe said "FAILING", the client's figures
# were empty, and the count of requests was taken as missing. It must be a saturation finding with its evidence,
# the client's requests counted as timeouts, and the requests counted from the access log. The tuning loop is
# paused so that its reason shows what the detectors say. Costs about 25 s.
TEST_EXCLUSIVE=1
TEST_NAME=scn-saturated
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip python3
NS=ngxat-real-sat-$$
PORT=18450

scn_netns "$NS" || fail "cannot create namespace $NS"
# nginx's workers (nobody) read the file: the test's directory is private otherwise
mkdir -p "$TMP/www"
chmod a+rx "$TMP" "$TMP/www"
python3 -c '
import random, sys
random.seed(1)
words = ["alpha", "beta", "gamma", "delta", "nginx", "tune", "kernel", "queue", "socket", "worker"]
open(sys.argv[1], "w").write(" ".join(random.choice(words) for _ in range(180000)))' "$TMP/www/big.txt"
chmod a+r "$TMP/www/big.txt"
SCN_HTTP="gzip on; gzip_types text/plain; gzip_comp_level 1;"
SCN_SERVER="location = /big.txt { root $TMP/www; }"
scn_nginx "$NS" $PORT || fail "nginx did not start"
sed -i 's/^worker_processes 2;/worker_processes 1;/' "$NGINX_CONF"
ip netns exec "$NS" nginx -p "$NGINX_DIR" -c "$NGINX_CONF" -s reload || fail "nginx reload"
wait_for 10 sh -c "[ \$(cat /proc/$(cat "$NGINX_DIR/nginx.pid")/task/*/children | wc -w) = 1 ]" || fail "not one worker"
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
ctl pause >/dev/null || fail "ngxctl pause"
ok "one nginx worker gzips a 1 MB text; the tuning loop is paused"

t0=$(date +%s%3N)
scn_load "$NS" 30 -t2 -c100 -H "Accept-Encoding: gzip" "http://127.0.0.1:$PORT/big.txt"
# The window's 30 ticks of 500 ms with a count of requests, then the detectors' word on them.
wait_for 40 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/trials/current |
	jq -e '.reason | test(\"stub_status late in [0-9]+ of [0-9]+ ticks, (the workers runnable [0-9]+% of the time|[0-9]+ of the synthetic client.s requests timed out too): saturated; counts from the access log\")'" ||
	fail "the detectors did not say saturated: $(api /v1/trials/current | jq -r .reason)"
reason=$(api /v1/trials/current | jq -r .reason)
echo "# $reason"
grep -qE "paused by an operator; [0-9.]+ requests/s \(stub_status late" <<<"$reason" || fail "no request rate: $reason"
ok "requests counted from the access log, stub_status late: saturated"
# stub_status answers in some ticks between the late ones: the probe's state is that of the last tick.
sat='.probes[] | select(.name == "stub_status") | .saturated and (.ok | not) and
	(.error | test("^no answer in [0-9]+ ms while the worker was runnable [0-9]+% of the tick"))'
wait_for 10 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/status >$TMP/status.json &&
	jq -e '($sat) and (.summary | test(\"stub_status saturated: no answer in\"))' $TMP/status.json" ||
	fail "the stub_status probe: $(jq -c '.summary, (.probes[] | select(.name == "stub_status"))' "$TMP/status.json")"
ok "the stub_status probe is saturated, with its evidence: $(jq -r '.probes[] | select(.name == "stub_status") |
	.error' "$TMP/status.json")"
ok "the status line says saturated, not failing"

M="nginx.stub_late,nginx.requests,http.requests,client.requests,client.timeouts,client.failures,client.total.timed"
api "/v1/frames?since=$((t0 + 2000))&metrics=$M" >"$TMP/frames.json"
read -r n late logged creq cto < <(jq -r '[.frames[].values | select(.["nginx.stub_late"] != null)] | [length,
	([.[]["nginx.stub_late"]] | add), ([.[]["http.requests"] // 0] | add), ([.[]["client.requests"] // 0] | add),
	([.[]["client.timeouts"] // 0] | add)] | @tsv' "$TMP/frames.json")
echo "# $n frames with a stub_status fetch: $late late; $logged requests logged; the client: $cto of $creq timed out"
awk -v n="$n" -v l="$late" 'BEGIN { exit !(n >= 10 && l >= n / 3) }' || fail "stub_status late in $late of $n frames"
[ "${logged%.*}" -ge 100 ] || fail "only $logged requests in the access log"
ok "nginx.stub_late in $late of $n frames; $logged requests in the access log"
# Every client request of those ticks is counted: unanswered ones as timeouts, none left out (the client's figures
# were empty).
awk -v r="$creq" -v t="$cto" 'BEGIN { exit !(r >= 10 && t >= r / 4) }' ||
	fail "the client: $cto timeouts of $creq requests: $(jq -c '[.frames[].values]' "$TMP/frames.json" | head -c 600)"
# (client.total.timed counts the answered and the timed-out requests, each at its time.)
jq -e '[.frames[].values | select(.["client.requests"] != null)] | all(.["client.requests"] ==
	.["client.failures"] + (.["client.total.timed"] // 0))' "$TMP/frames.json" >/dev/null ||
	fail "client requests neither answered nor counted: $(jq -c '[.frames[].values]' "$TMP/frames.json" | head -c 600)"
ok "the client's unanswered requests are counted: $cto timeouts of $creq requests"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
