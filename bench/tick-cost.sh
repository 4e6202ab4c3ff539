#!/bin/bash
# What one tick costs: the agent's CPU per tick and RSS with every probe on, at 1 Hz and 10 Hz, beside a minimal C
# reader of the same files plus one stub_status fetch (bench/floor-reader.c) as the floor, both run in the same
# window against a real nginx (in its own network namespace) under a bounded, paced wrk load. Figures, not
# pass/fail: it ends with a line saying whether the budget (median <= 1 ms CPU per tick, RSS <= 16 MiB) holds.
#
#   sudo bench/tick-cost.sh [BUILDDIR]        (default /work/main/build, or $builddir)
#
# Environment (all optional): BENCH_WINDOW_1HZ (s, default 30), BENCH_WINDOW_10HZ (s, 20), BENCH_REPEAT (3),
# BENCH_RPS (paced load, requests/s, 2000), BENCH_CONNS (8), BENCH_WARMUP (s the agent runs before a window, 3),
# BENCH_PORT (8089), BENCH_RATES ("1 10"), BENCH_NS (the network namespace's name, ngxat-bench-PID), BENCH_CONF
# (lines appended to the agent's agent.conf, e.g. "[client]\nrequests_per_tick = 2": what a setting costs).
# CPU is each process's run time summed over its threads, and the agent's over its writer's too (a process of its own
# since the split), from /proc/PID/task/*/schedstat (ns); /proc/PID/stat
# utime+stime (10 ms clock ticks, but it keeps the time of threads that exited) is printed beside it as a check.
# shellcheck disable=SC2034 # read by lib.sh
NGXAT_TEST_LOCKED=1 # a bench or the demo, not run beside the tests: no lock
TEST_TIMEOUT=0 # bounded by its own arguments: no watchdog (tests/system/lib.sh)
TEST_NAME=tick-cost
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-${builddir:-/work/main/build}}
builddir=$(cd "$builddir" && pwd) || { echo "no build dir $builddir"; exit 1; }
. "$srcdir/tests/system/lib.sh"
need_root
need_cmd nginx wrk jq curl ip awk pkg-config
[ -x "$AGENT" ] || skip "no agent binary at $AGENT (build it: make ngx-autotune)"

W1=${BENCH_WINDOW_1HZ:-30}
W10=${BENCH_WINDOW_10HZ:-20}
REPEAT=${BENCH_REPEAT:-3}
RPS=${BENCH_RPS:-2000}
CONNS=${BENCH_CONNS:-8}
WARMUP=${BENCH_WARMUP:-3}
PORT=${BENCH_PORT:-8089}
RATES=${BENCH_RATES:-1 10}
NS=${BENCH_NS:-ngxat-bench-$$}
HZ=$(getconf CLK_TCK)
# The synthetic client's requests a tick ([client] requests_per_tick, 4 by default; none when BENCH_CONF turns it
# off): the floor reader makes the same (the first on a kept connection, the others fresh) and times them apart.
CLIENT_N=$(printf '%b\n' "${BENCH_CONF:-}" | sed -n 's/^requests_per_tick *= *\([0-9]*\).*/\1/p' | tail -1)
CLIENT_N=${CLIENT_N:-4}
! printf '%b\n' "${BENCH_CONF:-}" | grep -Eq '^enabled *= *(no|false|off|0)' || CLIENT_N=0

# The floor reader: the build's if `make bench/floor-reader` made an up-to-date one, else compiled here.
FLOOR=$builddir/bench/floor-reader
if [ ! -x "$FLOOR" ] || [ "$srcdir/bench/floor-reader.c" -nt "$FLOOR" ]; then
	FLOOR=$TMP/floor-reader
	# shellcheck disable=SC2046 # pkg-config prints several words
	${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -o "$FLOOR" "$srcdir/bench/floor-reader.c" \
		$(pkg-config --cflags --libs libcurl) || fail "could not compile bench/floor-reader.c"
fi

# sched_ns PID: run time of all the live threads of PID and of its child processes (the agent's writer, which makes
# the engine's knob reads and sockets since the split: its cost is the tick's too), ns.
sched_ns() {
	local p
	for p in "$1" $(pgrep -P "$1"); do cat /proc/"$p"/task/*/schedstat; done 2>/dev/null |
		awk '{s += $1} END {printf "%.0f\n", s}'
}

# writer_ns PID: the same of PID's child processes alone (the writer's share of the agent's), ns.
writer_ns() {
	local p
	for p in $(pgrep -P "$1"); do cat /proc/"$p"/task/*/schedstat; done 2>/dev/null |
		awk '{s += $1} END {printf "%.0f\n", s}'
}

# stat_ms PID: utime+stime of PID and of its child processes (threads that exited included), ms.
stat_ms() {
	local p
	for p in "$1" $(pgrep -P "$1"); do cat /proc/"$p"/stat; done 2>/dev/null |
		awk -v hz="$HZ" '{sub(/^.*\) /, ""); s += $12 + $13} END {printf "%.0f\n", s * 1000 / hz}'
}

# status_kb PID FIELD: a kB figure from /proc/PID/status.
status_kb() {
	awk -v f="$2:" '$1 == f {print $2}' /proc/"$1"/status
}

# wait_line FILE REGEX SECONDS: poll FILE until a line matches (20 ms steps, bounded).
wait_line() {
	local i n=$(($3 * 50))
	for ((i = 0; i < n; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.02
	done
	return 1
}

# stop_pid PID: SIGTERM, then SIGKILL after 10 s; reaps it.
stop_pid() {
	kill "$1" 2>/dev/null
	wait_for 10 sh -c "! kill -0 $1" || kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# median: the median of the numbers on stdin (mean of the middle two for an even count).
median() {
	sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
		else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# lateness STEP_MS: frame timestamps (ms) on stdin -> "p50 p99" of how late each tick is against the schedule.
# The agent aligns ticks to multiples of the interval since its start; that phase is unknown here, so it is taken
# as the most punctual tick's, and each tick's lateness is its offset from the grid minus that one's.
lateness() {
	awk -v step="$1" 'NR == 1 {t0 = $1} {d = $1 - t0; k = int(d / step + 0.5); e[NR] = d - k * step;
		if (NR == 1 || e[NR] < m) m = e[NR]} END {for (i = 1; i <= NR; i++) print e[i] - m}' |
		sort -g | awk '{v[NR] = $1} END {if (NR == 0) {print "nan nan"; exit}
		i = int(NR * 0.99 + 0.999); if (i < 1) i = 1; print v[int((NR + 1) / 2)], v[i]}'
}

start_nginx_ns "$NS" "$PORT" || fail "could not start nginx in namespace $NS"
NGINX_PID=$(cat "$NGINX_DIR/nginx.pid")
URL=http://127.0.0.1:$PORT/nginx_status

# A paced load: each of CONNS connections waits CONNS/RPS s between requests, so the rate stays near RPS and
# the access log grows steadily. Long enough for every run, and killed at the end anyway.
total=10
for r in $RATES; do
	w=$W1
	[ "$r" = 1 ] || w=$W10
	total=$((total + REPEAT * (w + WARMUP + 15)))
done
echo "function delay() return $((CONNS * 1000 / RPS)) end" >"$TMP/pace.lua"
ip netns exec "$NS" timeout "$total" wrk -t1 -c"$CONNS" -d"${total}s" -s "$TMP/pace.lua" \
	"http://127.0.0.1:$PORT/" >"$TMP/wrk.out" 2>&1 &
WRK_PID=$!
CLEANUP+=("kill $WRK_PID")
sleep 2
kill -0 $WRK_PID 2>/dev/null || fail "wrk did not run: $(cat "$TMP/wrk.out")"

echo "# $(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r)"
echo "# nginx $NGINX_PID in namespace $NS, load: wrk -t1 -c$CONNS paced to ~$RPS req/s"
echo "# windows: ${W1}s at 1 Hz, ${W10}s at 10 Hz, $REPEAT runs each; figures are medians over the runs"

# run_one RATE_HZ WINDOW_S RUN: one agent and one floor reader side by side; appends a line to $TMP/res.RATE.
run_one() {
	local hz=$1 win=$2 run=$3 step=$((1000 / $1)) ticks apid fpid c0 l0 a0 as0 f0 fs0 t0 c1 l1 a1 as1 f1 fs1 t1 w0 w1
	local st med cmed omed fcl rss hwm na nf ext self flr fself fhwm lat nmet nnull lines

	ticks=$((win * hz))
	rm -rf "$TMP/store" "$TMP/api.sock"
	agent_conf "$TMP/agent.conf" "$PORT" "${step}ms"
	[ -z "${BENCH_CONF:-}" ] || printf '%b\n' "$BENCH_CONF" >>"$TMP/agent.conf"
	"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.$hz.$run.log" 2>&1 &
	apid=$!
	CLEANUP+=("kill -9 $apid")
	wait_for 10 test -S "$TMP/api.sock" || fail "agent did not start"
	wait_for 10 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/status |
		jq -e '[.probes[] | select(.enabled and (.ok | not))] | length == 0'" ||
		fail "not every probe is ok: $(api /v1/status | jq -c '[.probes[] | select(.enabled and (.ok | not))]')"
	sleep "$WARMUP"

	ip netns exec "$NS" "$FLOOR" -p "$NGINX_DIR/nginx.pid" -l "$NGINX_DIR/logs/access.log" -u "$URL" \
		-i "$step" -n "$ticks" -w ${CLIENT_N:+-c "$CLIENT_N" -C "http://127.0.0.1:$PORT/"} >"$TMP/floor.out" 2>&1 &
	fpid=$!
	CLEANUP+=("kill -9 $fpid")
	wait_line "$TMP/floor.out" '^started' 10 || fail "floor reader did not start: $(cat "$TMP/floor.out")"

	# Window start: the status query first, so that its own cost falls outside the window.
	st=$(api /v1/status) || fail "status failed"
	c0=$(jq '.tick.count' <<<"$st")
	l0=$(jq '.tick.late' <<<"$st")
	w0=$(writer_ns $apid) a0=$(sched_ns $apid) as0=$(stat_ms $apid) f0=$(sched_ns $fpid) fs0=$(stat_ms $fpid) t0=$(date +%s%3N)

	wait_line "$TMP/floor.out" '^done' $((win + 20)) || fail "floor reader did not finish: $(cat "$TMP/floor.out")"

	w1=$(writer_ns $apid) a1=$(sched_ns $apid) as1=$(stat_ms $apid) f1=$(sched_ns $fpid) fs1=$(stat_ms $fpid) t1=$(date +%s%3N)
	rss=$(status_kb $apid VmRSS) hwm=$(status_kb $apid VmHWM) fhwm=$(status_kb $fpid VmHWM)
	st=$(api /v1/status) || fail "status failed"
	c1=$(jq '.tick.count' <<<"$st")
	l1=$(jq '.tick.late' <<<"$st")
	med=$(jq '.tick.cpu_ms_median // "nan"' <<<"$st")
	cmed=$(jq '.tick.client_cpu_ms_median // "nan"' <<<"$st")
	omed=$(jq '.tick.own_cpu_ms_median // "nan"' <<<"$st")
	api "/v1/frames?since=$t0&until=$t1&metrics=nginx.requests" >"$TMP/frames.json" || fail "frames failed"
	api "/v1/frames?since=-2" >"$TMP/last.json" || fail "frames failed"
	stop_pid $fpid
	stop_pid $apid

	na=$((c1 - c0))
	[ "$na" -gt 0 ] || fail "the agent did no tick in the window"
	nf=$(sed -n 's/^done ticks=\([0-9]*\).*/\1/p' "$TMP/floor.out")
	fself=$(sed -n 's/^done.* cpu_ms_per_tick=\([0-9.]*\).*/\1/p' "$TMP/floor.out")
	lines=$(sed -n 's/^done.* log_lines=\([0-9]*\).*/\1/p' "$TMP/floor.out")
	fcl=$(sed -n 's/^done.* client_cpu_ms_median=\([0-9.]*\).*/\1/p' "$TMP/floor.out")
	grep -q 'stub_fail=0 ' "$TMP/floor.out" || echo "# warning: floor reader stub_status failures: $(cat "$TMP/floor.out")"
	ext=$(awk -v d=$((a1 - a0)) -v n="$na" 'BEGIN {printf "%.4f", d / 1e6 / n}')
	flr=$(awk -v d=$((f1 - f0)) -v n="$nf" 'BEGIN {printf "%.4f", d / 1e6 / n}')
	lat=$(jq '.frames[].ts' "$TMP/frames.json" | lateness "$step")
	nmet=$(jq '.frames[-1].values | length' "$TMP/last.json")
	nnull=$(jq '[.frames[-1].values[] | select(. == null)] | length' "$TMP/last.json")
	printf '# %2d Hz run %d: agent %d ticks (%d late), %.1f ms CPU (its writer %.1f; stat: %d ms), self-reported median %.3f ms;' \
		"$hz" "$run" "$na" $((l1 - l0)) "$(awk -v d=$((a1 - a0)) 'BEGIN {print d / 1e6}')" \
		"$(awk -v d=$((w1 - w0)) 'BEGIN {print d / 1e6}')" $((as1 - as0)) "$med"
	printf ' floor %d ticks, %.1f ms CPU (stat: %d ms, self %s ms/tick); load %d req/s\n' "$nf" \
		"$(awk -v d=$((f1 - f0)) 'BEGIN {print d / 1e6}')" $((fs1 - fs0)) "$fself" \
		$((lines * 1000 / (nf * step)))
	printf '#        own work median %.3f ms, the synthetic client %.3f ms (the floor reader'"'"'s same %d requests: %.3f ms)\n' \
		"$omed" "$cmed" "$CLIENT_N" "${fcl:-0}"
	echo "$ext $med $flr $((rss)) $((hwm)) $lat $nmet $nnull $fhwm $omed $cmed ${fcl:-0}" >>"$TMP/res.$hz"
}

for hz in $RATES; do
	win=$W1
	[ "$hz" = 1 ] || win=$W10
	for ((run = 1; run <= REPEAT; run++)); do
		run_one "$hz" "$win" "$run"
	done
done

echo
printf '%-6s | %-22s | %-12s | %-11s | %-16s | %-16s | %-15s\n' rate "agent CPU ms/tick" "floor CPU" \
	"agent/floor" "agent RSS MiB" "jitter ms" "metrics/frame"
printf '%-6s | %-22s | %-12s | %-11s | %-16s | %-16s | %-15s\n' "" "external (self med)" "ms/tick" "" \
	"VmRSS (VmHWM)" "p50 / p99" "(null)"
printf -- '-------+------------------------+--------------+-------------+------------------+------------------+'
printf -- '----------------\n'
verdict=holds
why=
for hz in $RATES; do
	col() { awk -v c="$1" '{print $c}' "$TMP/res.$hz" | median; }
	ext=$(col 1) self=$(col 2) flr=$(col 3) rss=$(col 4) hwm=$(col 5) p50=$(col 6) p99=$(col 7)
	nmet=$(col 8) nnull=$(col 9) fhwm=$(col 10) own=$(col 11) cli=$(col 12) fcli=$(col 13)
	printf '%-6s | %-22s | %-12s | %-11s | %-16s | %-16s | %-15s\n' "$hz Hz" \
		"$(printf '%.3f (%.3f)' "$ext" "$self")" "$(printf '%.3f' "$flr")" \
		"$(awk -v a="$ext" -v b="$flr" 'BEGIN {printf "%.1fx", a / b}')" \
		"$(awk -v a="$rss" -v b="$hwm" 'BEGIN {printf "%.1f (%.1f)", a / 1024, b / 1024}')" \
		"$(printf '%.0f / %.0f' "$p50" "$p99")" "$(printf '%.0f (%.0f)' "$nmet" "$nnull")"
	# The budget is on the median tick of the agent's own work (its own figure, less its synthetic client's
	# requests: a fresh connection on loopback costs its maker both ends' handshake, whoever makes it); the
	# client's share is held to 1.5 times what the floor reader's same requests cost. The external mean also
	# carries the tick in ten seconds that counts TCP states, and the writer.
	client_line="${client_line:-}$hz Hz: $(printf '%.3f' "$cli") ms beside the floor reader's $(printf '%.3f' "$fcli"); "
	awk -v a="$own" 'BEGIN {exit !(a <= 1.0)}' ||
		{ verdict=exceeded; why="$why median CPU of its own work ${own} ms/tick at $hz Hz;"; }
	[ "$CLIENT_N" = 0 ] || awk -v a="$cli" -v b="$fcli" 'BEGIN {exit !(a <= 1.5 * b + 0.02)}' ||
		{ verdict=exceeded; why="$why the synthetic client ${cli} ms/tick, its floor ${fcli} at $hz Hz;"; }
	awk -v a="$hwm" 'BEGIN {exit !(a <= 16384)}' ||
		{ verdict=exceeded; why="$why VmHWM $((${hwm%.*} / 1024)) MiB at $hz Hz;"; }
	floor_hwm="${floor_hwm:-}$hz Hz $(awk -v a="$fhwm" 'BEGIN {printf "%.1f", a / 1024}') MiB; "
done
echo
echo "# floor reader peak RSS (VmHWM, mostly libcurl and its TLS libraries): ${floor_hwm%; }"
echo "# jitter: how late ticks are against the agent's schedule (frame timestamps, ms resolution)"
[ "$CLIENT_N" = 0 ] || echo "# the synthetic client's $CLIENT_N requests a tick ($((CLIENT_N - 1)) on fresh connections), median CPU a tick: ${client_line%; }"
if [ $verdict = holds ]; then
	echo "budget (median CPU of the agent's own work <= 1 ms per tick, its client <= 1.5x the floor's, RSS <= 16 MiB): holds"
else
	echo "budget (median CPU of the agent's own work <= 1 ms per tick, its client <= 1.5x the floor's, RSS <= 16 MiB): EXCEEDED:$why"
fi
