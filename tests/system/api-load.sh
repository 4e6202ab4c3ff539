#!/bin/bash
# The API under load while the loop ticks, briefly: bench/api-load sends 200 requests/s for 4 s over the Unix socket
# (GET /v1/status, /v1/knobs, /v1/frames?since=-60, /metrics in turn) to the agent watching a real nginx in its
# own network namespace (stub_status on the thread pool, the access log, netlink), and --check fails on any failed
# request (none answered within a minute, or not 200, or not the right kind of body) and on any missed or late
# tick. Latency is printed, never asserted: bench/README.md has the figures.
TEST_EXCLUSIVE=1
TEST_NAME=api-load
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx ip curl
LOAD=$builddir/bench/api-load
[ -x "$LOAD" ] || fail "no $LOAD (make check builds it; else: make bench/api-load)"
NS=ngxat-prom-load-$$
PORT=18311

start_nginx_ns "$NS" "$PORT" || fail "could not start nginx in namespace $NS"
agent_conf "$TMP/agent.conf" "$PORT" 1s
"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 10 sh -c "curl -sf --unix-socket $TMP/api.sock http://localhost/v1/status | grep -q '\"count\":[1-9]'" ||
	fail "the agent did not start ticking"
ok "the agent ticks against nginx in $NS"

# Some traffic, so that the access log and stub_status move while the API is loaded.
for i in $(seq 20); do ip netns exec "$NS" curl -s -o /dev/null "http://127.0.0.1:$PORT/"; done

# -t: a request counts as failed only when it has no answer a minute after it was due, so that a slow machine
# (a sanitizer build, other load) makes the run longer, never failed.
"$LOAD" -s "$TMP/api.sock" -r 200 -d 4 -t 60000 --check >"$TMP/load.out" 2>&1
rc=$?
cat "$TMP/load.out"
[ $rc = 0 ] || fail "api-load --check: exit $rc"
grep -q '^all  *800 ' "$TMP/load.out" || fail "not 800 requests answered"
grep -q 'late, 0 missed' "$TMP/load.out" && grep -q ', 0 late' "$TMP/load.out" || fail "ticks missed or late"
ok "800 requests at 200/s: every one answered 200 with the right kind of body, no tick missed or late"

# The check can fail: answers other than 200 are failed requests; a socket nobody listens on is exit 2.
"$LOAD" -s "$TMP/api.sock" -r 50 -d 1 -p /v1/status -p /v1/nosuch --check >"$TMP/bad.out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q '^/v1/nosuch  *0  .* 25$' "$TMP/bad.out" && grep -q '25 status' "$TMP/bad.out" ||
	fail "api-load --check did not fail on 404s (exit $rc): $(cat "$TMP/bad.out")"
"$LOAD" -s "$TMP/nobody.sock" -d 1 --check >/dev/null 2>&1
[ $? = 2 ] || fail "api-load did not fail on a dead socket"
ok "api-load --check fails on answers other than 200, and when the agent cannot be reached"
kill "$AGENT_PID"
wait_for 10 sh -c "! kill -0 $AGENT_PID" || fail "the agent did not stop"
