#!/bin/bash
# Load generator mode (measure = loadgen) with a real nginx in its own namespace: the agent runs wrk itself, back
# to back, and aligned to the blocks of a trial (a warm-up over the settle time, then one measured run that ends
# inside the block); the listen queue's objective (a loss: overflows) stays, guarded by the generator's p99, and the
# verdict's evidence holds the generator's figures.
TEST_EXCLUSIVE=1
TEST_NAME=loadgen
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
NS=ngxat-lg-$$
PORT=8087
start_nginx_ns "$NS" $PORT || fail "could not start nginx in namespace $NS"
[ "$(ip netns exec "$NS" cat /proc/sys/net/core/somaxconn)" = 4096 ] || skip "the namespace's somaxconn is not 4096"
agent_conf "$TMP/agent.conf" $PORT
sed -i "s/^\[agent\]/[agent]\nlog_level = debug/" "$TMP/agent.conf"
mkdir -p "$TMP/policies.d"
sed 's/^settle = .*/settle = 2s/' "$srcdir/policies/listen.policy" >"$TMP/policies.d/listen.policy"
cat >>"$TMP/agent.conf" <<EOT
[tuning]
mode = propose
measure = loadgen
pairs = 4
block = 6s
calibrate_pairs = 0
[loadgen]
command = ip netns exec $NS wrk -t1 -c16 -d{seconds}s --latency http://127.0.0.1:$PORT/
run = 3s
EOT
"$AGENT" -n -c "$TMP/agent.conf" | grep -q "configuration OK" || fail "configuration refused"
"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 10 test -S "$TMP/api.sock" || fail "agent did not start"
ctl() { "$NGXCTL" -s "$TMP/api.sock" "$@"; }

# Outside trials the generator runs back to back: its figures reach the frames.
t0=$(date +%s%3N)
wait_for 20 sh -c "curl -s --unix-socket $TMP/api.sock 'http://localhost/v1/frames?since=$t0&metrics=loadgen.*' | jq -e '[.frames[].values[\"loadgen.rps\"] | select(. != null)] | length >= 2'" ||
	fail "no loadgen figures in the frames: $(api "/v1/frames?since=$t0&metrics=loadgen.*" | jq -c '.frames[-3:]')"
api "/v1/frames?since=$t0&metrics=loadgen.*" | jq -e '[.frames[].values | select(.["loadgen.rps"] != null)][0]
	| .["loadgen.rps"] > 100 and .["loadgen.p99_ms"] > 0 and .["loadgen.requests"] > 100' >/dev/null ||
	fail "implausible loadgen figures: $(api "/v1/frames?since=$t0&metrics=loadgen.*" | jq -c '[.frames[].values | select(.["loadgen.rps"] != null)][0]')"
ok "wrk runs back to back; requests/s, p99 and counts reach the frames"

out=$(ctl propose net.core.somaxconn=8192 --why "loadgen test" 2>&1) || fail "propose: $out"
id=$(sed -n 's/^change \([0-9]*\):.*/\1/p' <<<"$out")
[ -n "$id" ] || fail "no change id: $out"
for _ in $(seq 1 1200); do # bounded: 120 s
	st=$(api "/v1/changes/$id" | jq -r .state)
	case $st in kept | reverted | aborted | failed) break ;; esac
	sleep 0.1
done
detail=$(api "/v1/changes/$id" | jq -r .detail)
ev=${detail#"${detail%%\{*}"} # from the first "{": the reason may hold "; " itself
# Kept, reverted, or aborted by a guardrail (wrk's p99 on a busy machine moves 4x from one run to the next): a
# judged end. Failed (a write or the measurement) is not.
case $st in kept | reverted | aborted) ;; *) fail "the trial ended $st: $detail" ;; esac
jq -e '.objective == "tcp.listen_overflows" and .guardrails[0].metric == "loadgen.p99_ms"' <<<"$ev" >/dev/null ||
	fail "not judged on overflows with the generator's p99 as a guardrail: $ev"
jq -e '.valid >= 1 and .guardrails[0].available' <<<"$ev" >/dev/null ||
	fail "the pairs lack the generator's figures: $ev"
ok "an operator's proposal of a loss knob is judged on overflows with wrk's p99 guarding it ($st: $(jq -r .reason <<<"$ev"))"
[ "$(ip netns exec "$NS" cat /proc/sys/net/core/somaxconn)" = "$([ "$st" = kept ] && echo 8192 || echo 4096)" ] ||
	fail "somaxconn in the namespace does not match the verdict $st"
ok "the namespace's somaxconn matches the verdict"
grep -q "loadgen: run .* gave no figures" "$TMP/agent.log" && fail "a run failed: $(grep loadgen "$TMP/agent.log")"

kill -TERM $AGENT_PID
wait $AGENT_PID
[ $? = 0 ] || fail "agent did not exit 0"
# SIGKILL is sent as the agent stops; on a busy machine the killed wrk may take a moment to be gone.
wait_for 5 sh -c "! pgrep -f 'wrk -t1 -c16 -d[0-9]*s --latency http://127.0.0.1:$PORT/'" ||
	fail "a wrk run outlived the agent: $(pgrep -af "http://127.0.0.1:$PORT/")"
ok "SIGTERM stops the generator with the agent"
echo "# $checks checks passed"
