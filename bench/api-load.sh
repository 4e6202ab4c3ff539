#!/bin/bash
# The API's latency at 200 requests/s over its Unix socket while the loop ticks (budget: p99 <= 5 ms), and the
# ticks that costs. Figures, not pass/fail. The agent watches a real nginx in its own network namespace under a
# bounded, paced wrk load (so stub_status, the access log and netlink all have work each tick); bench/api-load
# sends the mix of GET /v1/status, /v1/knobs, /v1/frames?since=-60 and /metrics for each run.
#
#   sudo bench/api-load.sh [BUILDDIR]          (default /work/main/build, or $builddir)
#
# Environment (all optional): BENCH_DURATION (s per run, 20), BENCH_REPEAT (3), BENCH_API_RATE (requests/s, 200),
# BENCH_RPS (nginx load, requests/s, 1000), BENCH_CONNS (wrk connections, 8), BENCH_WARMUP (s, 3),
# BENCH_PORT (18310), BENCH_TICK (agent tick interval, 1s), BENCH_NICE (nice value for the agent and the client,
# e.g. -10 on a machine busy with other work; default: unchanged).
# shellcheck disable=SC2034 # read by lib.sh
NGXAT_TEST_LOCKED=1 # a bench or the demo, not run beside the tests: no lock
TEST_TIMEOUT=0 # bounded by its own arguments: no watchdog (tests/system/lib.sh)
TEST_NAME=api-load-bench
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-${builddir:-/work/main/build}}
builddir=$(cd "$builddir" && pwd) || { echo "no build dir $builddir"; exit 1; }
. "$srcdir/tests/system/lib.sh"
need_root
need_cmd nginx wrk curl ip awk
[ -x "$AGENT" ] || skip "no agent binary at $AGENT (build it: make ngx-autotune)"
LOAD=$builddir/bench/api-load
[ -x "$LOAD" ] || skip "no $LOAD (build it: make bench/api-load)"

DURATION=${BENCH_DURATION:-20}
REPEAT=${BENCH_REPEAT:-3}
RATE=${BENCH_API_RATE:-200}
RPS=${BENCH_RPS:-1000}
CONNS=${BENCH_CONNS:-8}
WARMUP=${BENCH_WARMUP:-3}
PORT=${BENCH_PORT:-18310}
TICK=${BENCH_TICK:-1s}
NICE=${BENCH_NICE:-}
RUN=()
[ -z "$NICE" ] || RUN=(nice -n "$NICE")
NS=ngxat-bench-api-$$

start_nginx_ns "$NS" "$PORT" || fail "could not start nginx in namespace $NS"
total=$((REPEAT * (DURATION + 10) + WARMUP + 10))
echo "function delay() return $((CONNS * 1000 / RPS)) end" >"$TMP/pace.lua"
ip netns exec "$NS" timeout "$total" wrk -t1 -c"$CONNS" -d"${total}s" -s "$TMP/pace.lua" \
	"http://127.0.0.1:$PORT/" >"$TMP/wrk.out" 2>&1 &
WRK_PID=$!
CLEANUP+=("kill $WRK_PID")

agent_conf "$TMP/agent.conf" "$PORT" "$TICK"
"${RUN[@]}" "$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 10 sh -c "curl -sf --unix-socket $TMP/api.sock http://localhost/v1/status | grep -q '\"count\":[1-9]'" ||
	fail "the agent did not start ticking"
sleep "$WARMUP"
kill -0 $WRK_PID 2>/dev/null || fail "wrk did not run: $(cat "$TMP/wrk.out")"

echo "# $(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r)"
echo "# agent tick $TICK, nginx in $NS under wrk -t1 -c$CONNS paced to ~$RPS req/s; API: $RATE req/s for ${DURATION}s, $REPEAT runs${NICE:+; agent and client at nice $NICE}"
# sched_ns PID: run time of all of PID's threads, ns.
sched_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'
}

for ((run = 1; run <= REPEAT; run++)); do
	echo
	echo "# run $run, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	c0=$(sched_ns $AGENT_PID)
	"${RUN[@]}" "$LOAD" -s "$TMP/api.sock" -r "$RATE" -d "$DURATION" | tee "$TMP/run.$run"
	[ "${PIPESTATUS[0]}" = 0 ] || fail "api-load failed"
	c1=$(sched_ns $AGENT_PID)
	n=$(awk '$1 == "all" {print $2 + $6}' "$TMP/run.$run")
	cpu=$(awk -v d=$((c1 - c0)) -v n="$n" -v t="$DURATION" 'BEGIN {printf "%.3f ms per request, %.0f%% of a CPU", d / 1e6 / n, d / 1e7 / t}')
	echo "agent CPU over the run (its ticks included): $cpu"
	echo "$cpu" >"$TMP/cpu.$run"
done

# One line per run and the medians: p50, p99 and max of all requests, the ratio to the budget, ticks missed/late.
echo
printf '%-6s | %-9s | %-9s | %-9s | %-13s | %-8s | %-14s | %s\n' run "p50 ms" "p99 ms" "max ms" "p99 / 5 ms" errors \
	"ticks missed" "agent CPU ms/request"
printf -- '-------+-----------+-----------+-----------+---------------+----------+----------------+---------------------\n'
for ((run = 1; run <= REPEAT; run++)); do
	awk -v run="$run" -v cpu="$(cut -d' ' -f1 "$TMP/cpu.$run")" '$1 == "all" {p50 = $3; p99 = $4; max = $5; err = $6}
		/^ticks:/ {late = $(NF - 3); missed = $(NF - 1)}
		END {printf "%-6s | %-9s | %-9s | %-9s | %-13.2f | %-8s | %-14s | %s\n", run, p50, p99, max, p99 / 5,
			err, missed " (late " late ")", cpu}' "$TMP/run.$run"
done | tee "$TMP/table"
col() { # col N: the median of column N of the table
	awk -F'|' -v c="$1" '{print $c + 0}' "$TMP/table" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
p99=$(col 3)
printf '%-6s | %-9s | %-9s | %-9s | %-13.2f | %-8s | %-14s | %s\n' median "$(col 2)" "$p99" "$(col 4)" \
	"$(awk -v p="$p99" 'BEGIN {print p / 5}')" "" "" "$(col 8)"
