#!/bin/bash
# GET /metrics from the real agent against a fake /proc tree (--root): the Prometheus text format checked by
# promtool (Debian's, extracted from the prometheus package under the build dir, never installed) and by a strict
# parser of our own (promparse.py), with the values the test drove: listen overflows, per-CPU time_squeeze and
# NET_RX, CPU time, the request-time histogram, 5xx, a kept change, a conflict, knob values. Both checkers are
# shown to refuse broken text. Counters never go down between scrapes; HEAD works, POST does not.
TEST_EXCLUSIVE=1
TEST_NAME=prometheus
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_cmd curl python3
[ "$(id -u)" = 0 ] || skip "policy files must be owned by root: run as root"
PROMPARSE="python3 $srcdir/tests/system/promparse.py"

R=$TMP/root
NPID=4242
make_fake_root "$R" $NPID sysfs
echo $NPID >"$TMP/nginx.pid"
mkdir -p "$R/proc/sys/net/core"
SOMAX=$R/proc/sys/net/core/somaxconn
echo 128 >"$SOMAX"
echo 1000 >"$R/proc/sys/net/core/netdev_max_backlog"
mkdir -p "$TMP/policies.d"
sed 's/^settle = .*/settle = 1s/' "$srcdir/policies/listen.policy" >"$TMP/policies.d/listen.policy"
: >"$TMP/access.log"
fake_root_conf "$TMP/agent.conf" "$R" "$TMP/access.log"

# step I: the fake host moves on: +7 listen overflows, +1 time_squeeze on CPU 1, +5 NET_RX on CPU 0, 10 jiffies of
# which 2 softirq on each CPU, two requests (12 ms, and 100 ms with a 503).
step() {
	local i=$1 n
	# netstat, snmp and sockstat from lib.sh; its fixed softnet_stat would race with ours.
	mkdir -p "$TMP/netns"
	write_netns "$TMP/netns" $((100 + 7 * i))
	mv "$TMP/netns/netstat" "$TMP/netns/snmp" "$TMP/netns/sockstat" "$R/proc/$NPID/net/"
	printf '%08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n%08x 00000000 %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001\n' \
		$((256 + i)) $((512 + i)) "$i" >"$R/proc/$NPID/net/softnet_stat.tmp"
	mv "$R/proc/$NPID/net/softnet_stat.tmp" "$R/proc/$NPID/net/softnet_stat"
	printf '                    CPU0       CPU1\n          HI:          0          0\n       TIMER:       2385       2608\n      NET_TX:         10         20\n      NET_RX: %10d        400\n' \
		$((300 + 5 * i)) >"$R/proc/softirqs.tmp"
	mv "$R/proc/softirqs.tmp" "$R/proc/softirqs"
	n=$((10 * i))
	cat >"$R/proc/stat.tmp" <<EOT
cpu  $((100 + 4 * n / 10)) 0 50 $((1000 + 12 * n / 10)) 5 3 $((7 + 4 * n / 10)) 0 0 0
cpu0 $((50 + 2 * n / 10)) 0 25 $((500 + 6 * n / 10)) 2 1 $((3 + 2 * n / 10)) 0 0 0
cpu1 $((50 + 2 * n / 10)) 0 25 $((500 + 6 * n / 10)) 3 2 $((4 + 2 * n / 10)) 0 0 0
intr 0
ctxt $((12345 + 100 * i))
btime 1700000000
processes 100
procs_running 2
procs_blocked 0
EOT
	mv "$R/proc/stat.tmp" "$R/proc/stat"
	echo '{"time":"2026-01-01T00:00:00+00:00","status":200,"request_time":0.012,"upstream_response_time":"0.010","upstream_addr":"127.0.0.1:9000","bytes":12}' >>"$TMP/access.log"
	echo '{"time":"2026-01-01T00:00:00+00:00","status":503,"request_time":0.100,"upstream_response_time":"-","upstream_addr":"-","bytes":0}' >>"$TMP/access.log"
}
step 0

"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 10 sh -c "curl -sf --unix-socket $TMP/api.sock http://localhost/v1/status | grep -q '\"count\":[1-9]'" ||
	fail "the agent did not start ticking"
# The first request pair was logged before the agent opened the log (it starts at the end): not counted.
for i in $(seq 1 10); do
	step "$i"
	sleep 0.25
done
sleep 0.6

# A kept change (settle 1 s), then someone else writes the knob: a conflict.
"$NGXCTL" -s "$TMP/api.sock" propose --now net.core.somaxconn=4096 --why "listen overflows" >/dev/null || fail "propose"
wait_for 5 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/1 | grep -q '\"state\":\"kept\"'" ||
	fail "change 1 was not kept"
echo 1024 >"$SOMAX"
wait_for 5 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/knobs | python3 -c 'import json,sys; sys.exit(not any(k[\"name\"] == \"net.core.somaxconn\" and k[\"state\"] == \"conflict\" for k in json.load(sys.stdin)[\"knobs\"]))'" ||
	fail "no conflict after a write behind the agent's back"

code=$(curl -sS -o "$TMP/metrics.txt" -D "$TMP/headers" -w '%{http_code}' --unix-socket "$TMP/api.sock" \
	http://localhost/metrics) || fail "GET /metrics"
[ "$code" = 200 ] || fail "GET /metrics: HTTP $code"
grep -qi '^Content-Type: text/plain; version=0.0.4; charset=utf-8'$'\r''$' "$TMP/headers" ||
	fail "Content-Type: $(grep -i content-type "$TMP/headers")"
ok "GET /metrics: 200, text/plain; version=0.0.4; charset=utf-8"

$PROMPARSE --selftest >"$TMP/selftest.out" || fail "promparse --selftest: $(cat "$TMP/selftest.out")"
ok "promparse refuses each kind of broken text ($(tail -n1 "$TMP/selftest.out"))"

families=(ngxat_build_info ngxat_ticks_total ngxat_ticks_late_total ngxat_tick_cpu_median_seconds
	ngxat_probe_up ngxat_probe_failures_total ngxat_store_size_bytes ngxat_store_frames ngxat_store_degraded
	ngxat_changes ngxat_trial_verdicts_total ngxat_conflicts_total ngxat_knob_value ngxat_knob_state
	ngxat_tuning_state ngxat_tcp_listen_overflows_total ngxat_tcp_listen_drops_total
	ngxat_tcp_retransmitted_segments_total ngxat_softnet_processed_total ngxat_softnet_dropped_total
	ngxat_softnet_time_squeeze_total ngxat_softirq_net_rx_total ngxat_cpu_seconds_total
	ngxat_http_request_duration_seconds ngxat_http_request_duration_last_tick_seconds ngxat_http_responses_total
	ngxat_http_upstream_time_seconds_total ngxat_nginx_workers ngxat_tcp_sockets_time_wait
	ngxat_nic_interrupts_total)
args=()
for f in "${families[@]}"; do args+=(--expect "$f"); done
values=(
	'ngxat_tcp_listen_overflows_total == 70'
	'ngxat_tcp_passive_opens_total == 210'
	'ngxat_softnet_time_squeeze_total{cpu="1"} == 10'
	'ngxat_softnet_time_squeeze_total{cpu="0"} == 0'
	'ngxat_softnet_processed_total{cpu="0"} == 10'
	'ngxat_softirq_net_rx_total{cpu="0"} == 50'
	'ngxat_softirq_net_rx_total{cpu="1"} == 0'
	'ngxat_cpu_seconds_total{mode="softirq"} > 0'
	'ngxat_cpu_seconds_total{cpu="0",mode="steal"} == 0'
	'ngxat_context_switches_total == 1000'
	'ngxat_http_request_duration_seconds_count == 20'
	'ngxat_http_request_duration_seconds_bucket{le="0.01"} == 0'
	'ngxat_http_request_duration_seconds_bucket{le="0.025"} == 10'
	'ngxat_http_request_duration_seconds_bucket{le="0.095"} == 10'
	'ngxat_http_request_duration_seconds_bucket{le="0.239"} == 20'
	'ngxat_http_request_duration_seconds_sum == 1.12'
	'ngxat_http_responses_total{code="5xx"} == 10'
	'ngxat_http_responses_total{code="2xx"} == 10'
	'ngxat_http_upstream_time_seconds_total == 0.1'
	'ngxat_nginx_workers == 2'
	'ngxat_tcp_sockets_time_wait == 170'
	'ngxat_knob_value{knob="net.core.somaxconn"} == 1024'
	'ngxat_knob_original_value{knob="net.core.somaxconn"} == 128'
	'ngxat_knob_state{knob="net.core.somaxconn",state="conflict"} == 1'
	'ngxat_knob_state{knob="net.core.somaxconn",state="ok"} == 0'
	'ngxat_knob_state{knob="net.core.rmem_max",state="unsupported"} == 1'
	'ngxat_changes{kind="change",state="kept"} == 1'
	'ngxat_changes{kind="revert",state="kept"} == 0'
	'ngxat_conflicts_total == 1'
	'ngxat_trial_verdicts_total >= 0'
	'ngxat_tuning_state{state="observe"} == 1'
	'ngxat_ticks_total >= 10'
	'ngxat_ticks_late_total >= 0' # a loaded machine may hold the loop past a tick
	'ngxat_frames_stored_total >= 10'
	'ngxat_store_degraded == 0'
	'ngxat_unmapped_frame_metrics == 0'
	'ngxat_probe_up{probe="netstat"} == 1'
	'ngxat_probe_failures_total{probe="netstat"} == 0'
	'ngxat_nginx_up == 1'
	'ngxat_build_info{api_version="1"} == 1'
)
for c in "${values[@]}"; do args+=(--check "$c"); done
$PROMPARSE "${args[@]}" "$TMP/metrics.txt" >"$TMP/promparse.out" || fail "promparse: $(cat "$TMP/promparse.out")"
ok "promparse: grammar, HELP/TYPE once, no duplicate series, histogram, ${#families[@]} families and ${#values[@]} values as driven"

# The parser can fail on the real text: a duplicated series, a counter renamed without _total, a missing newline.
grep -m1 '^ngxat_softnet_processed_total' "$TMP/metrics.txt" >"$TMP/dup"
sed "/^ngxat_softnet_processed_total/r $TMP/dup" "$TMP/metrics.txt" >"$TMP/bad1.txt"
$PROMPARSE "$TMP/bad1.txt" | grep -q "duplicate series" || fail "promparse accepted a duplicated series"
sed 's/^\(# [A-Z]* \)\?ngxat_ticks_total/\1ngxat_ticks/' "$TMP/metrics.txt" >"$TMP/bad2.txt"
$PROMPARSE "$TMP/bad2.txt" | grep -q "end in _total" || fail "promparse accepted a counter without _total"
head -c -1 "$TMP/metrics.txt" | $PROMPARSE - | grep -q "newline" || fail "promparse accepted a text without a final newline"
$PROMPARSE --check 'ngxat_tcp_listen_overflows_total == 71' "$TMP/metrics.txt" >/dev/null &&
	fail "promparse accepted a wrong value"
ok "promparse refuses the real text with a duplicated series, a counter without _total, no final newline, a wrong value"

PT=$(find_prometheus_tool promtool)
if [ -n "$PT" ]; then
	"$PT" check metrics <"$TMP/metrics.txt" >"$TMP/promtool.out" 2>&1 || fail "promtool check metrics: $(cat "$TMP/promtool.out")"
	ok "promtool check metrics: no problem ($("$PT" --version 2>&1 | head -n1))"
	"$PT" check metrics <"$TMP/bad2.txt" >"$TMP/promtool.out" 2>&1 && fail "promtool accepted a counter without _total"
	grep -q '_total' "$TMP/promtool.out" || fail "promtool said: $(cat "$TMP/promtool.out")"
	sed 's/^ngxat_cpus /ngxat_cpus{/' "$TMP/metrics.txt" | "$PT" check metrics >/dev/null 2>&1 &&
		fail "promtool accepted a malformed line"
	ok "promtool refuses a counter without _total and a malformed line"
else
	echo "note: promtool unavailable (no promtool, no apt-get download of Debian's prometheus): promparse alone checked"
fi

# Counters only go up between scrapes; a scrape sees complete ticks only.
sleep 0.5
curl -sS -o "$TMP/metrics2.txt" --unix-socket "$TMP/api.sock" http://localhost/metrics || fail "second GET /metrics"
$PROMPARSE --since "$TMP/metrics.txt" --check 'ngxat_ticks_total > 10' "$TMP/metrics2.txt" >"$TMP/promparse.out" ||
	fail "second scrape: $(cat "$TMP/promparse.out")"
t1=$(awk '$1 == "ngxat_ticks_total" {print $2}' "$TMP/metrics.txt")
t2=$(awk '$1 == "ngxat_ticks_total" {print $2}' "$TMP/metrics2.txt")
[ "$t2" -gt "$t1" ] || fail "ngxat_ticks_total did not move: $t1 then $t2"
ok "a second scrape: no counter went down, ticks $t1 -> $t2"

code=$(curl -sS -I -o "$TMP/head" -w '%{http_code}' --unix-socket "$TMP/api.sock" http://localhost/metrics)
[ "$code" = 200 ] && grep -qi '^Content-Type: text/plain; version=0.0.4' "$TMP/head" || fail "HEAD /metrics: $code"
code=$(curl -sS -o "$TMP/body" -w '%{http_code}' -X POST -d '{}' --unix-socket "$TMP/api.sock" http://localhost/metrics)
[ "$code" = 405 ] || fail "POST /metrics: $code $(cat "$TMP/body")"
ok "HEAD /metrics answers like GET; POST /metrics is 405"

# A probe that fails shows as down and counts failures; its series drop out after 30 s (not waited for here).
mv "$R/proc/softirqs" "$R/proc/softirqs.away"
sleep 0.6
curl -sS -o "$TMP/metrics3.txt" --unix-socket "$TMP/api.sock" http://localhost/metrics || fail "third GET /metrics"
$PROMPARSE --check 'ngxat_probe_up{probe="softirqs"} == 0' --check 'ngxat_probe_failures_total{probe="softirqs"} >= 1' \
	--since "$TMP/metrics2.txt" "$TMP/metrics3.txt" >"$TMP/promparse.out" || fail "failing probe: $(cat "$TMP/promparse.out")"
mv "$R/proc/softirqs.away" "$R/proc/softirqs"
ok "a failing probe: ngxat_probe_up 0, failures counted"

kill "$AGENT_PID"
wait_for 10 sh -c "! kill -0 $AGENT_PID" || fail "the agent did not stop"
