#!/bin/bash
# The synthetic client against a real nginx in its own network namespace, the agent outside it: under load its
# figures are in the frames (/v1/frames), the status (/v1/status) and GET /metrics; it asks what nginx's
# configuration serves, a proxied location too, and counts each request that gets no answer in time as a timeout;
# once nginx stops, its requests are counted as failures (the port refuses) and the agent goes on ticking. Counts
# and presence, not timings.
TEST_EXCLUSIVE=1
TEST_NAME=client-view
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
NS=ngxat-cv-$$
PORT=8083
start_nginx_ns "$NS" $PORT || fail "could not start nginx in namespace $NS"
agent_conf "$TMP/agent.conf" $PORT 500ms
cat >>"$TMP/agent.conf" <<EOT
[client]
requests_per_tick = 3
timeout = 200ms
EOT
scn_start_agent
wait_for 10 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/status |
	jq -e '.probes[] | select(.name == \"client\") | .enabled and .ok'" ||
	fail "the client probe is not ok: $(api /v1/status | jq -c '.probes[] | select(.name == "client")')"
ok "client probe enabled and ok against the namespaced nginx"

t0=$(date +%s%3N)
ip netns exec "$NS" timeout 20 wrk -t1 -c16 -d3s "http://127.0.0.1:$PORT/" >"$TMP/wrk.out" 2>&1 ||
	fail "wrk failed: $(cat "$TMP/wrk.out")"
wait_ticks 2 || fail "the agent stopped ticking"
M="client.requests,client.failures,client.timeouts,client.connect_p50_ms,client.connect_p99_ms,client.ttfb_p99_ms"
M="$M,client.total_p50_ms,client.total_p99_ms,client.total.timed,client.connect.timed,http.requests"
api "/v1/frames?since=$t0&metrics=$M" >"$TMP/frames.json"
n=$(jq '[.frames[] | select(.values["client.requests"] != null)] | length' "$TMP/frames.json")
[ "$n" -ge 4 ] || fail "client figures in only $n frames: $(jq -c '.frames[-3:]' "$TMP/frames.json")"
# 3 requests a tick (200 ms each at most, 400 ms budget): with nginx up every one answers, two on fresh
# connections, one on the kept one.
jq -e '[.frames[] | select(.values["client.requests"] != null) | .values] | all(
	.["client.requests"] == 3 and .["client.failures"] == 0 and .["client.timeouts"] == 0 and
	.["client.total.timed"] == 3 and .["client.connect.timed"] >= 2)' "$TMP/frames.json" >/dev/null ||
	fail "client counts under load: $(jq -c '[.frames[].values]' "$TMP/frames.json")"
ok "client counts in $n frames under load: 3 requests, 3 answers, 0 failures a tick"
jq -e '[.frames[] | select(.values["client.requests"] != null) | .values] | all(
	.["client.total_p50_ms"] > 0 and .["client.total_p99_ms"] >= .["client.total_p50_ms"] and
	.["client.connect_p50_ms"] > 0 and .["client.connect_p99_ms"] >= .["client.connect_p50_ms"] and
	.["client.ttfb_p99_ms"] > 0 and .["client.ttfb_p99_ms"] <= .["client.total_p99_ms"])' "$TMP/frames.json" \
	>/dev/null || fail "client percentiles: $(jq -c '[.frames[].values]' "$TMP/frames.json")"
ok "client percentiles present, above 0 ms (sub-millisecond resolution) and ordered"
# nginx listens on 127.0.0.1:$PORT inside its namespace only: answers there mean the client asked from inside it.
! (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null || fail "something listens on 127.0.0.1:$PORT outside $NS"
ok "the answers came from inside nginx's namespace (127.0.0.1:$PORT refuses in the agent's own)"

api /metrics >"$TMP/metrics.txt"
for fam in ngxat_client_requests_total ngxat_client_failures_total ngxat_client_timeouts_total \
	'ngxat_client_request_duration_seconds_bucket{le="+Inf"}' ngxat_client_request_duration_seconds_count \
	ngxat_client_connect_duration_seconds_count ngxat_client_ttfb_seconds_count \
	'ngxat_client_request_duration_last_tick_seconds{percentile="99"}'; do
	grep -qF "$fam" "$TMP/metrics.txt" || fail "GET /metrics has no $fam: $(grep client "$TMP/metrics.txt")"
done
req=$(awk '$1 == "ngxat_client_requests_total" {print $2}' "$TMP/metrics.txt")
cnt=$(awk '$1 == "ngxat_client_request_duration_seconds_count" {print $2}' "$TMP/metrics.txt")
[ "${req:-0}" -ge 12 ] && [ "$cnt" = "$req" ] || fail "/metrics: $req requests, $cnt in the histogram"
ok "GET /metrics has the client's families ($req requests, all in the histogram)"

api /v1/status | jq -e '.probes[] | select(.name == "client") | .ok' >/dev/null || fail "client probe in /v1/status"
ok "the client probe in /v1/status"
grep -q "the synthetic client asks http://127.0.0.1:$PORT/ (from nginx's configuration" "$TMP/agent.log" ||
	fail "the client's URL is not nginx's: $(grep -i client "$TMP/agent.log")"
ok "the client asks what nginx's configuration serves"

# A location nginx proxies to an upstream that accepts and never answers. Once the agent has read nginx's
# configuration again (its reload), the client asks it beside "/", and every request to it times out: counted as
# a timeout (client.failure_rate's), never left out. The URLs take turns, so both are asked.
BACKEND=$((PORT + 1))
ip netns exec "$NS" python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(512)
held = []
while True:
    held.append(s.accept()[0])' $BACKEND &
CLEANUP+=("kill $!")
sed -i "s|location / {|location /app { proxy_pass http://127.0.0.1:$BACKEND; proxy_read_timeout 30s; }\n\t\tlocation / {|" \
	"$NGINX_DIR/nginx.conf"
ip netns exec "$NS" nginx -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" -s reload || fail "nginx reload"
kill -HUP $AGENT_PID
wait_for 30 grep -q "the synthetic client asks http://127.0.0.1:$PORT/ http://127.0.0.1:$PORT/app " "$TMP/agent.log" ||
	fail "the client does not ask the proxied location: $(grep -i client "$TMP/agent.log")"
ok "the client asks the location nginx proxies beside /"
t2=$(date +%s%3N)
wait_ticks 6 || fail "the agent stopped ticking"
api "/v1/frames?since=$((t2 + 600))&metrics=$M" >"$TMP/proxied.json"
# total.timed counts the answered and the timed-out requests, each at its time (a client waits until it gives up).
jq -e '[.frames[] | select(.values["client.requests"] != null) | .values] | length >= 4 and all(
	.["client.requests"] >= 1 and .["client.failures"] == 0 and
	(.["client.total.timed"] // 0) == .["client.requests"]) and
	([.[]["client.timeouts"]] | add) >= length / 2 and ([.[]["client.total.timed"] // 0] | add) >= 1' \
	"$TMP/proxied.json" >/dev/null || fail "with the proxied location: $(jq -c '[.frames[].values]' "$TMP/proxied.json")"
to=$(jq '[.frames[].values["client.timeouts"] | select(. != null)] | add' "$TMP/proxied.json")
ok "each request to the silent upstream is a timeout, counted ($to), beside answers from /"

# nginx stops: the port refuses; every request is a failure, the probe says why, the agent keeps ticking.
kill -QUIT "$(cat "$NGINX_DIR/nginx.pid")"
wait_for 10 sh -c "! ip netns exec $NS sh -c 'exec 3<>/dev/tcp/127.0.0.1/$PORT' 2>/dev/null" || fail "nginx did not stop"
t1=$(date +%s%3N)
wait_ticks 4 || fail "the agent stopped ticking once nginx stopped"
kill -0 $AGENT_PID || fail "the agent died"
api "/v1/frames?since=$((t1 + 600))&metrics=$M" >"$TMP/down.json"
jq -e '[.frames[] | select(.values["client.requests"] != null) | .values] | length >= 2 and all(
	.["client.requests"] >= 1 and .["client.failures"] + .["client.timeouts"] == .["client.requests"] and
	.["client.failures"] >= 1 and (.["client.total.timed"] // 0) == .["client.timeouts"])' "$TMP/down.json" >/dev/null ||
	fail "with nginx stopped: $(jq -c '[.frames[].values]' "$TMP/down.json")"
fails=$(jq '[.frames[].values["client.failures"] | select(. != null)] | add' "$TMP/down.json")
ok "nginx stopped: every client request failed ($fails refused), none answered"
st=$(api /v1/status | jq -c '.probes[] | select(.name == "client")')
jq -e '(.ok | not) and (.error // "" | test("no answer this tick: http://127.0.0.1:'$PORT'/(app)?: connect to 127.0.0.1 port '$PORT': Connection refused"))' \
	<<<"$st" >/dev/null || fail "client probe status with nginx stopped: $st"
ok "the status says why: $(jq -r .error <<<"$st")"
api /metrics | awk '$1 == "ngxat_client_failures_total" {exit !($2 >= '"$fails"')}' ||
	fail "ngxat_client_failures_total below $fails"
ok "ngxat_client_failures_total counts them"
kill -0 $AGENT_PID || fail "the agent died"
ok "the agent is still up"
echo "# $checks checks"
