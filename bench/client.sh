#!/bin/bash
# What clients see: the agent's synthetic client beside wrk, measured side by side in the same run against a real
# nginx in its own network namespace, and beside nginx's own $request_time (the access log's histogram, "server").
# Settings: an easy load on kept-alive connections; short connections (Connection: close, -c400) with a listen
# queue too small (somaxconn = backlog = 16), where the accept queue adds latency $request_time does not see; and
# the same short connections with a queue of 4096. Figures, not pass/fail.
#
#   sudo bench/client.sh [BUILDDIR]        (default /work/main/build, or $builddir)
#
# Environment (all optional): BENCH_SECS (s per setting, default 20), BENCH_PORT (8091), BENCH_SETTINGS ("easy
# small big"), BENCH_NS (the namespace's name, ngxat-client-PID). The agent ticks every 500 ms with 6 requests a
# tick (one kept alive, five fresh), a 400 ms timeout; its percentiles below are over every answered request of
# the window, from the histograms in its frames (microsecond buckets, within 6.25%).
# shellcheck disable=SC2034 # read by lib.sh
NGXAT_TEST_LOCKED=1 # a bench or the demo, not run beside the tests: no lock
TEST_TIMEOUT=0 # bounded by its own arguments: no watchdog (tests/system/lib.sh)
TEST_NAME=bench-client
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-${builddir:-/work/main/build}}
builddir=$(cd "$builddir" && pwd) || { echo "no build dir $builddir"; exit 1; }
. "$srcdir/tests/system/lib.sh"
. "$srcdir/tests/system/scenario-lib.sh"
need_root
need_cmd nginx wrk jq curl ip awk
[ -x "$AGENT" ] || skip "no agent binary at $AGENT (build it: make ngx-autotune)"

SECS=${BENCH_SECS:-20}
PORT=${BENCH_PORT:-8091}
SETTINGS=${BENCH_SETTINGS:-easy small big}
NS=${BENCH_NS:-ngxat-client-$$}

# hist_pct PREFIX UNIT_MS Q...: percentiles Q (0..1) in ms of the histogram PREFIX.bN summed over the frames of
# $TMP/frames.json, UNIT_MS the bucket unit in ms (0.001 for the client's microseconds); each observation read as
# its bucket's midpoint (core/hist's layout), R type 7 between ranks. "-" when empty.
hist_pct() {
	local prefix=$1 unit=$2
	shift 2
	jq -r --arg p "$prefix." '[.frames[].values | to_entries[] | select(.key | startswith($p + "b"))
		| {b: (.key | ltrimstr($p + "b") | tonumber), n: .value}] | group_by(.b)[]
		| "\(.[0].b) \(map(.n) | add)"' "$TMP/frames.json" |
		awk -v unit="$unit" -v qs="$*" '
		function lo(i,  e, s) { if (i < 16) return i; e = 4 + int((i - 16) / 8); s = (i - 16) % 8
			return 2 ^ e + s * 2 ^ (e - 3) }
		{ b[$1] = $2; if ($1 + 0 > max) max = $1 + 0 }
		END {
			n = 0
			for (i = 0; i <= max; i++) for (k = 0; k < b[i]; k++) v[n++] = (lo(i) + lo(i + 1) - 1) / 2 * unit
			split(qs, q, " ")
			for (j = 1; j in q; j++) {
				if (n == 0) { printf "%s-", (j > 1 ? " " : ""); continue }
				pos = q[j] * (n - 1); k = int(pos); f = pos - k
				x = k + 1 < n ? v[k] + (v[k + 1] - v[k]) * f : v[k]
				printf "%s%.2f", (j > 1 ? " " : ""), x
			}
			printf "\n"
		}'
}

# sum NAME: the sum of frame metric NAME over $TMP/frames.json.
sum() {
	jq --arg m "$1" '[.frames[].values[$m] | select(. != null)] | add // 0' "$TMP/frames.json"
}

# wrk_pct PCT: wrk's latency percentile PCT (50, 75, 90, 99) in ms from $TMP/load.out.
wrk_pct() {
	awk -v p="$1%" '$1 == p {v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		printf "%.2f\n", u == "us" ? v / 1000 : u == "s" ? v * 1000 : v}' "$TMP/load.out"
}

# run SETTING: one namespace, one nginx, one agent, one wrk run; a row of figures.
run() {
	local setting=$1 somaxconn=4096 args t0 wrk_req wrk_to wrk_err c_req c_fail c_to conn
	case $setting in
	easy) args=(-t1 -c8) ;;
	small) somaxconn=16; args=(-t2 -c400 -H "Connection: close") ;;
	big) args=(-t2 -c400 -H "Connection: close") ;;
	*) fail "unknown setting $setting (easy, small, big)" ;;
	esac
	scn_netns "$NS" net.core.somaxconn=$somaxconn || fail "namespace $NS"
	SCN_LISTEN="backlog=$somaxconn" scn_nginx "$NS" "$PORT" || fail "nginx in $NS"
	agent_conf "$TMP/agent.conf" "$PORT" 500ms
	cat >>"$TMP/agent.conf" <<EOT
[tuning]
mode = observe
[client]
requests_per_tick = 6
timeout = 400ms
EOT
	scn_start_agent
	t0=$(date +%s%3N)
	ip netns exec "$NS" timeout $((SECS + 10)) wrk -d"${SECS}s" --latency "${args[@]}" "http://127.0.0.1:$PORT/" \
		>"$TMP/load.out" 2>&1 || fail "wrk: $(cat "$TMP/load.out")"
	api "/v1/frames?since=$((t0 + 1000))&until=$(date +%s%3N)" >"$TMP/frames.json"
	stop_all
	wrk_req=$(awk '/requests in/ {print $1}' "$TMP/load.out")
	wrk_to=$(awk '/Socket errors/ {for (i = 1; i <= NF; i++) if ($i == "timeout") print $(i + 1) + 0}' "$TMP/load.out")
	wrk_err=$(awk '/Socket errors/ {gsub(/,/, ""); print $4 + $6 + $8}' "$TMP/load.out")
	c_req=$(sum client.requests)
	c_fail=$(sum client.failures)
	c_to=$(sum client.timeouts)
	read -r c50 c99 <<<"$(hist_pct client.total.lat 0.001 0.5 0.99)"
	read -r k50 k99 <<<"$(hist_pct client.connect.lat 0.001 0.5 0.99)"
	read -r s50 s99 <<<"$(hist_pct http.lat 1 0.5 0.99)"
	# nginx logs whole milliseconds: a static answer logs 0, which is "<1", not 0 ms.
	s50=$(awk -v v="$s50" 'BEGIN {print v == "-" ? v : v < 1 ? "<1" : v}')
	s99=$(awk -v v="$s99" 'BEGIN {print v == "-" ? v : v < 1 ? "<1" : v}')
	printf "%-6s | %-9s %-9s %-9s %-9s | %-8s %-6s | %-9s %-9s | %-9s %-9s | %-5s %-4s %-4s | %-9s %-9s\n" \
		"$setting" "$(wrk_pct 50)" "$(wrk_pct 75)" "$(wrk_pct 90)" "$(wrk_pct 99)" "${wrk_req:-?}" \
		"${wrk_to:-0}/${wrk_err:-0}" "$c50" "$c99" "$k50" "$k99" "$c_req" "$c_fail" "$c_to" "$s50" "$s99"
}

# stop_all: the agent, nginx and the namespace of one setting.
stop_all() {
	local npid
	npid=$(cat "$NGINX_DIR/nginx.pid")
	kill "$AGENT_PID" 2>/dev/null
	wait_for 10 sh -c "! kill -0 $AGENT_PID"
	kill -QUIT "$npid" 2>/dev/null
	wait_for 10 sh -c "! kill -0 $npid 2>/dev/null"
	ip netns del "$NS"
	rm -rf "$NGINX_DIR" "$TMP/store"
}

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, nginx $(nginx -v 2>&1 | sed 's/.*\///'), ${SECS} s a setting"
echo "# easy: wrk -t1 -c8 (kept alive); small: -t2 -c400 Connection: close, somaxconn = backlog = 16;"
echo "# big: the same load, somaxconn = backlog = 4096. All times in ms."
printf "%-6s | %-39s | %-15s | %-19s | %-19s | %-15s | %-19s\n" "" "wrk latency" "wrk" "client total" \
	"client connect" "client" "server (\$request_time)"
printf "%-6s | %-9s %-9s %-9s %-9s | %-8s %-6s | %-9s %-9s | %-9s %-9s | %-5s %-4s %-4s | %-9s %-9s\n" \
	setting p50 p75 p90 p99 requests to/err p50 p99 p50 p99 req fail tmo p50 p99
for s in $SETTINGS; do
	run "$s"
done
