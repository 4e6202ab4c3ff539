#!/bin/bash
# The end-to-end benchmark: what the agent's tuning is worth on a real nginx under real load, beside the baseline,
# the field's hand-tuned checklist and a well-known static profile. Prints tables, not pass/fail.
#
#   sudo bench/e2e.sh [BUILDDIR]        default ./build; bench/README.md explains the figures
#   sudo bench/e2e.sh --shipped [BUILDDIR]
#                                       time to a fix at the shipped defaults (below)
#
# For each scenario (listen: somaxconn 16 in nginx's namespace; backlog: netdev_max_backlog 10, host-wide), under
# ~1000 concurrent Connection: close clients (wrk), four configurations:
#   1 baseline   the misconfigured host as the scenario sets it up
#   2 agent      what the agent leaves after it converges from the baseline: it runs in propose mode under the
#                load, every proposal is approved (ngxctl approve), until none comes for a full detection window
#   3 checklist  the field's hand-tuned checklist: somaxconn 65535, tcp_max_syn_backlog 65535,
#                netdev_max_backlog 65535, listen backlog=65535 reuseport, worker_processes auto, multi_accept on
#   4 tuned-tp   the baseline plus the static sysctls of tuned's throughput-performance profile
#   5 agent-lg   as 2, with the agent in loadgen mode ([tuning] measure = loadgen): no outside load, the agent
#                runs the same wrk itself for every block and judges on its figures
# are measured side by side, BENCH_REPS rounds (configurations interleaved in each round), and the median of each
# figure printed. Host-wide sysctls it touches are saved first and put back at exit.
#
# --shipped: how long a gross fault lasts when the agent runs as shipped (1 s ticks, the detection window, K pairs,
# [tuning] block and calibration as in ngx-autotune.conf(5), the policies as installed: their settle and
# settle_min). For each scenario, BENCH_SHIPPED_RUNS times: the misconfigured nginx, the agent started, then the
# load (the fault starts with it); every proposal is approved at once; the time from the fault's start to the
# proposal and to the kept change, the trial's blocks, and what clients lost in between (wrk's errors and
# timeouts, listen overflows, softnet drops), then the median of the runs.
set -u
SHIPPED=
if [ "${1:-}" = --shipped ]; then
	SHIPPED=1
	shift
fi
BUILD=${1:-${builddir:-$(pwd)/build}}
builddir=$(cd "$BUILD" && pwd) || exit 1
srcdir=$(cd "$(dirname "$0")/.." && pwd)
NGXAT_TEST_LOCKED=1 # a bench or the demo, not run beside the tests: no lock
TEST_NAME=bench-e2e
. "$srcdir/tests/system/lib.sh"
. "$srcdir/tests/system/scenario-lib.sh"
need_root
need_cmd nginx wrk jq curl ip ss
[ -x "$AGENT" ] && [ -x "$NGXCTL" ] || skip "build the agent first ($AGENT)"

REPS=${BENCH_REPS:-3}
SECS=${BENCH_SECS:-10}           # one measurement
CONNS=${BENCH_CONNS:-1000}
PAIRS=${BENCH_PAIRS:-4}          # the agent's trials
BLOCK=${BENCH_BLOCK:-10s}
SETTLE=${BENCH_SETTLE:-5s}       # "policy": each policy's own settle time (30 s, 60 s for the listen queue)
MAX_TRIALS=${BENCH_MAX_TRIALS:-5}
LG_BLOCK=${BENCH_LG_BLOCK:-14s}   # loadgen mode: a measured run is the block less 2 s
LOADGEN=loadgen                  # BENCH_LOADGEN=no: leave out the agent in loadgen mode
[ "${BENCH_LOADGEN:-yes}" = no ] && LOADGEN=
SCENARIOS=${BENCH_SCENARIOS:-"listen backlog"}
PORT=${BENCH_PORT:-18470}
NS=ngxat-e2e-$$
HOST_KEYS="net.core.netdev_max_backlog vm.dirty_ratio vm.dirty_background_ratio vm.swappiness"
NS_KEYS="net.core.somaxconn net.ipv4.tcp_max_syn_backlog"

declare -A HOST_SAVED
for k in $HOST_KEYS; do
	HOST_SAVED[$k]=$(sysctl -n "$k")
	CLEANUP+=("sysctl -qw $k=${HOST_SAVED[$k]}")
done
echo "# host: $(nproc) CPUs, $(uname -r); saved $(for k in $HOST_KEYS; do printf '%s=%s ' "$k" "${HOST_SAVED[$k]}"; done)"
if [ -z "$SHIPPED" ]; then
	echo "# load: wrk -t2 -c$CONNS -d${SECS}s -H 'Connection: close' inside the namespace; $REPS rounds, medians"
	echo "# agent: tick 500 ms, trials of $PAIRS pairs, blocks of $SETTLE settle + $BLOCK, no A/A calibration"
fi

# ---- configurations -----------------------------------------------------------------------------------------
# A configuration is a directory: nginx.conf, inc/, ns.sysctl and host.sysctl (KEY=VALUE lines).
cfgdir() { echo "$TMP/cfg/$1"; }

make_nginx_conf() { # make_nginx_conf DIR LISTEN_PARAMS MAIN WORKERS EVENTS
	local d=$1 inc=$1/inc
	mkdir -p "$inc"
	touch "$inc/main.conf" "$inc/events.conf" "$inc/http.conf"
	cat >"$d/nginx.conf" <<EOT
include $inc/main.conf;
worker_processes $4;
pid $TMP/run/nginx.pid;
error_log $TMP/run/logs/error.log warn;
$3
events {
	include $inc/events.conf;
	worker_connections 8192;
	$5
}
http {
	include $inc/http.conf;
	log_format ngxat_json escape=json '{"time":"\$time_iso8601","status":\$status,"request_time":\$request_time,'
		'"upstream_response_time":"\$upstream_response_time","upstream_addr":"\$upstream_addr",'
		'"bytes":\$body_bytes_sent}';
	access_log $TMP/run/logs/access.log ngxat_json;
	client_body_temp_path $TMP/run/tmp_body;
	proxy_temp_path $TMP/run/tmp_proxy;
	fastcgi_temp_path $TMP/run/tmp_fastcgi;
	uwsgi_temp_path $TMP/run/tmp_uwsgi;
	scgi_temp_path $TMP/run/tmp_scgi;
	server {
		listen 127.0.0.1:$PORT $2;
		location = /nginx_status { stub_status; access_log off; }
		location / { return 200 "hello from nginx\n"; }
	}
}
EOT
}

# The four configurations of scenario $1 (the agent's is made later, from what it leaves).
make_configs() {
	local s=$1 d base_listen=""
	rm -rf "$TMP/cfg"
	[ "$s" = backlog ] && base_listen="backlog=4096"
	d=$(cfgdir baseline)
	make_nginx_conf "$d" "$base_listen" "" 2 ""
	if [ "$s" = listen ]; then
		printf 'net.core.somaxconn=16\nnet.ipv4.tcp_max_syn_backlog=%s\n' "$(cat /proc/sys/net/ipv4/tcp_max_syn_backlog)" >"$d/ns.sysctl"
		printf 'net.core.netdev_max_backlog=%s\n' "${HOST_SAVED[net.core.netdev_max_backlog]}" >"$d/host.sysctl"
	else
		printf 'net.core.somaxconn=4096\nnet.ipv4.tcp_max_syn_backlog=%s\n' "$(cat /proc/sys/net/ipv4/tcp_max_syn_backlog)" >"$d/ns.sysctl"
		printf 'net.core.netdev_max_backlog=10\n' >"$d/host.sysctl"
	fi
	printf 'vm.dirty_ratio=%s\nvm.dirty_background_ratio=%s\nvm.swappiness=%s\n' "${HOST_SAVED[vm.dirty_ratio]}" \
		"${HOST_SAVED[vm.dirty_background_ratio]}" "${HOST_SAVED[vm.swappiness]}" >>"$d/host.sysctl"
	d=$(cfgdir checklist)
	make_nginx_conf "$d" "backlog=65535 reuseport" "" auto "multi_accept on;"
	printf 'net.core.somaxconn=65535\nnet.ipv4.tcp_max_syn_backlog=65535\n' >"$d/ns.sysctl"
	grep -v netdev_max_backlog "$(cfgdir baseline)/host.sysctl" >"$d/host.sysctl"
	echo net.core.netdev_max_backlog=65535 >>"$d/host.sysctl"
	# tuned's throughput-performance [sysctl]: vm.dirty_ratio 40, vm.dirty_background_ratio 10, vm.swappiness 10;
	# kernel.sched_min_granularity_ns and sched_wakeup_granularity_ns do not exist on EEVDF kernels (6.6+).
	d=$(cfgdir tuned-tp)
	mkdir -p "$d"
	cp -r "$(cfgdir baseline)/nginx.conf" "$(cfgdir baseline)/inc" "$(cfgdir baseline)/ns.sysctl" "$d/"
	sed -i "s|$(cfgdir baseline)/inc|$d/inc|" "$d/nginx.conf"
	grep -v '^vm\.' "$(cfgdir baseline)/host.sysctl" >"$d/host.sysctl"
	printf 'vm.dirty_ratio=40\nvm.dirty_background_ratio=10\nvm.swappiness=10\n' >>"$d/host.sysctl"
}

stop_nginx() {
	local pid
	[ -s "$TMP/run/nginx.pid" ] || return 0
	pid=$(cat "$TMP/run/nginx.pid")
	kill -QUIT "$pid" 2>/dev/null
	wait_for 10 sh -c "! kill -0 $pid 2>/dev/null"
	rm -f "$TMP/run/nginx.pid"
}

# apply CONFIG: a fresh namespace with the configuration's sysctls, the host's, and nginx started with its files.
apply() {
	local d kv
	d=$(cfgdir "$1")
	stop_nginx
	ip netns del "$NS" 2>/dev/null
	ip netns add "$NS" && ip -n "$NS" link set lo up || return 1
	while read -r kv; do [ -n "$kv" ] && ip netns exec "$NS" sysctl -qw "$kv"; done <"$d/ns.sysctl"
	while read -r kv; do [ -n "$kv" ] && sysctl -qw "$kv"; done <"$d/host.sysctl"
	mkdir -p "$TMP/run/logs"
	: >"$TMP/run/logs/access.log"
	ip netns exec "$NS" nginx -p "$TMP/run" -c "$d/nginx.conf" -e "$TMP/run/logs/error.log" || return 1
	wait_for 5 test -s "$TMP/run/nginx.pid"
}
CLEANUP+=("stop_nginx" "ip netns del $NS")

# measure: one wrk run; prints "rps p50_ms p99_ms errors overflows drops".
measure() {
	local o0 d0 out
	o0=$(ns_netstat "$NS" ListenOverflows)
	d0=$(softnet_drops)
	out=$(ip netns exec "$NS" timeout $((SECS + 15)) wrk -t2 -c"$CONNS" -d"${SECS}s" --latency \
		-H "Connection: close" "http://127.0.0.1:$PORT/" 2>&1)
	echo "$out" | awk -v ovf=$(($(ns_netstat "$NS" ListenOverflows) - o0)) -v drops=$(($(softnet_drops) - d0)) '
		function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
		/^Requests\/sec/ { rps = $2 }
		$1 == "50%" { p50 = ms($2) } $1 == "99%" { p99 = ms($2) }
		/Socket errors/ { gsub(",", ""); err += $4 + $6 + $8 + $10 }
		/Non-2xx/ { err += $NF }
		END { printf "%.0f %.1f %.1f %d %d %d\n", rps, p50, p99, err, ovf, drops }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ---- the agent's run ----------------------------------------------------------------------------------------
# converge NAME [loadgen]: from the baseline, the agent approves every proposal until none comes for 45 s; its
# result becomes configuration NAME. Passive (the default): the bench drives the load and the agent judges on its
# policies' objectives. loadgen: nobody else drives load; the agent runs the same wrk itself ([tuning] measure =
# loadgen) and judges on its figures. Sets AGENT_SECS, AGENT_TRIALS, AGENT_KEPT, AGENT_VERDICTS.
converge() {
	local name=$1 mode=${2:-passive} d t0 deadline id st prop verdicts="" kept=0 trials=0 last=0 k v load=
	d=$(cfgdir "$name")
	mkdir -p "$d"
	cp -r "$(cfgdir baseline)/inc" "$d/"
	sed "s|$(cfgdir baseline)/inc|$d/inc|" "$(cfgdir baseline)/nginx.conf" >"$d/nginx.conf"
	cp "$(cfgdir baseline)/ns.sysctl" "$(cfgdir baseline)/host.sysctl" "$d/"
	apply "$name" || fail "nginx did not start for the agent"
	NGINX_DIR=$TMP/run
	NGINX_CONF=$d/nginx.conf
	INC=$d/inc
	rm -rf "$TMP/store" "$TMP/policies.d"
	scn_agent_conf "$TMP/agent.conf" "$PORT"
	sed -i "s/^pairs = .*/pairs = $PAIRS/; s/^block = .*/block = $BLOCK/" "$TMP/agent.conf"
	if [ "$mode" = loadgen ]; then
		# A measured run lasts the block less 2 s and needs 10 s or more; no quoting in the command: Connection:close.
		sed -i "s/^block = .*/block = $LG_BLOCK/; s/^\[tuning\]$/[tuning]\nmeasure = loadgen/" "$TMP/agent.conf"
		printf '[loadgen]\ncommand = ip netns exec %s wrk -t2 -c%s -d{seconds}s --latency -H Connection:close http://127.0.0.1:%s/\nrun = 10s\n' \
			"$NS" "$CONNS" "$PORT" >>"$TMP/agent.conf"
	fi
	for p in $SCN_POLICIES; do
		if [ "$SETTLE" = policy ]; then
			rm -f "$TMP/policies.d/$p.policy"
		else
			sed "s/^settle = .*/settle = $SETTLE/" "$srcdir/policies/$p.policy" >"$TMP/policies.d/$p.policy"
		fi
	done
	scn_start_agent
	t0=$SECONDS
	if [ "$mode" = passive ]; then
		ip netns exec "$NS" timeout 1200 wrk -t2 -c"$CONNS" -d1180s -H "Connection: close" \
			"http://127.0.0.1:$PORT/" >/dev/null 2>&1 &
		load=$!
	fi
	while [ $trials -lt "$MAX_TRIALS" ]; do
		# A proposal needs a full detection window (30 s) after the last change; 45 s without one: converged.
		prop=$(api /v1/proposals | jq -c '.proposals[0] // empty')
		deadline=$((SECONDS + 45))
		while [ -z "$prop" ] && [ $SECONDS -lt $deadline ]; do
			sleep 1
			prop=$(api /v1/proposals | jq -c '.proposals[0] // empty')
		done
		[ -n "$prop" ] || break
		id=$(jq .id <<<"$prop")
		ctl approve "$id" >/dev/null || break
		trials=$((trials + 1))
		st=$(wait_end 900 "$id")
		verdicts="$verdicts$(jq -r '"\(.knob) \(.from)->\(.to)"' <<<"$prop"): $st; "
		if [ "$st" = kept ]; then
			kept=$((kept + 1))
			last=$((SECONDS - t0))
		fi
	done
	AGENT_SECS=$last AGENT_TRIALS=$trials AGENT_KEPT=$kept AGENT_VERDICTS=$verdicts
	if [ -n "$load" ]; then
		kill "$load" 2>/dev/null
		wait "$load" 2>/dev/null
	fi
	# What it left: nginx's files as they are (its edits), and the sysctls it changed, as they read now.
	for k in $NS_KEYS; do
		echo "$k=$(ip netns exec "$NS" sysctl -n "$k")"
	done >"$d/ns.sysctl"
	for k in $HOST_KEYS; do
		v=$(sysctl -n "$k")
		echo "$k=$v"
	done >"$d/host.sysctl"
	for k in $(api /v1/changes | jq -r '.changes[] | select(.state == "kept" and .kind == "change") | .knob' | sort -u); do
		case $k in net.core.netdev_budget | net.core.netdev_budget_usecs) echo "$k=$(sysctl -n "$k")" >>"$d/host.sysctl" ;; esac
	done
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID"
}

# ---- --shipped ------------------------------------------------------------------------------------------------
# shipped_run SCENARIO: one run; prints "proposed_s kept_s state pairs block errors timeouts overflows drops".
shipped_run() {
	local s=$1 t0 prop="" id st tp tk wrk d0 o0 errs tmo pairs block
	apply baseline || fail "nginx did not start"
	NGINX_DIR=$TMP/run
	NGINX_CONF=$(cfgdir baseline)/nginx.conf
	INC=$(cfgdir baseline)/inc
	: >"$INC/main.conf"
	: >"$INC/events.conf"
	: >"$INC/http.conf"
	rm -rf "$TMP/store" "$TMP/policies.d"
	mkdir -p "$TMP/policies.d"
	agent_conf "$TMP/agent.conf" "$PORT" 1s
	printf 'conf = %s
include_dir = %s
timeout = 20s
[tuning]
mode = propose
' "$NGINX_CONF" "$INC" \
		>>"$TMP/agent.conf"
	scn_start_agent
	o0=$(ns_netstat "$NS" ListenOverflows)
	d0=$(softnet_drops)
	t0=$SECONDS
	ip netns exec "$NS" timeout 900 wrk -t2 -c"$CONNS" -d880s -H "Connection: close" \
		"http://127.0.0.1:$PORT/" >"$TMP/shipped.wrk" 2>&1 &
	wrk=$!
	while [ $((SECONDS - t0)) -lt 600 ]; do
		prop=$(api /v1/proposals | jq -c '.proposals[0] // empty')
		[ -n "$prop" ] && break
		sleep 0.2
	done
	tp=$((SECONDS - t0))
	st=none tk=-
	if [ -n "$prop" ]; then
		id=$(jq .id <<<"$prop")
		ctl approve "$id" >/dev/null
		st=$(wait_end 900 "$id")
		tk=$((SECONDS - t0))
	fi
	kill -INT "$wrk" 2>/dev/null
	wait "$wrk" 2>/dev/null
	errs=$(awk '/Socket errors/ { gsub(",", ""); print $4 + $6 + $8 }' "$TMP/shipped.wrk")
	tmo=$(awk '/Socket errors/ { gsub(",", ""); print $10 }' "$TMP/shipped.wrk")
	pairs=$(api "/v1/changes/${id:-0}" | jq -r '.detail | sub("^[^{]*"; "") | fromjson? | .pairs // "-"' 2>/dev/null)
	block=$(grep -o 'pairs of [0-9.]* s blocks[^;]*' "$TMP/agent.log" | tail -1 | awk '{ print $3 }')
	echo "$tp $tk $st ${pairs:--} ${block:--} ${errs:-0} ${tmo:-0} $(($(ns_netstat "$NS" ListenOverflows) - o0)) $(($(softnet_drops) - d0))"
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID"
	rm -f "$TMP/agent.log"
}

if [ -n "$SHIPPED" ]; then
	RUNS=${BENCH_SHIPPED_RUNS:-3}
	echo "# --shipped: tick 1 s, the shipped [tuning] and policies, $RUNS runs per scenario; every proposal approved at once"
	echo "# load: wrk -t2 -c$CONNS -H 'Connection: close' inside the namespace from the fault's start to the kept change"
	for s in $SCENARIOS; do
		echo
		echo "== scenario $s (shipped defaults)"
		make_configs "$s"
		printf '%-4s %11s %8s %-10s %6s %8s %9s %9s %10s %9s\n' run "proposed s" "kept s" state pairs "block s" \
			"wrk errs" timeouts overflows "sn drops"
		rm -f "$TMP/shipped"
		for r in $(seq 1 "$RUNS"); do
			shipped_run "$s" >"$TMP/shipped.line"
			line=$(cat "$TMP/shipped.line")
			echo "$line" >>"$TMP/shipped"
			printf '%-4s %11s %8s %-10s %6s %8s %9s %9s %10s %9s\n' "$r" $line
		done
		printf '%-4s %11s %8s\n' median "$(awk '{ print $1 }' "$TMP/shipped" | median)" \
			"$(awk '$2 != "-" { print $2 }' "$TMP/shipped" | median)"
		stop_nginx
	done
	exit 0
fi

# ---- run ------------------------------------------------------------------------------------------------------
for s in $SCENARIOS; do
	echo
	echo "== scenario $s"
	make_configs "$s"
	configs="baseline agent checklist tuned-tp"
	for m in passive $LOADGEN; do
		c=agent
		[ "$m" = loadgen ] && c=agent-lg configs="$configs agent-lg"
		converge $c $m
		echo "# $c ($m): $AGENT_TRIALS trial(s), $AGENT_KEPT kept, last keep $AGENT_SECS s after start: $AGENT_VERDICTS"
		echo "# $c's result: $(grep -o 'listen [^;]*' "$(cfgdir $c)/nginx.conf"); ns: $(tr '\n' ' ' <"$(cfgdir $c)/ns.sysctl")host: $(grep netdev "$(cfgdir $c)/host.sysctl" | tr '\n' ' ')"
	done
	rm -f "$TMP/results"
	for r in $(seq 1 "$REPS"); do
		for c in $configs; do
			apply "$c" || fail "configuration $c did not start"
			sleep 1
			echo "$c $(measure)" >>"$TMP/results"
		done
	done
	stop_nginx
	printf '%-10s %10s %9s %9s %8s %11s %11s\n' config "req/s" "p50 ms" "p99 ms" errors overflows "sn drops"
	for c in $configs; do
		line=$c
		for col in 2 3 4 5 6 7; do
			line="$line $(awk -v c="$c" -v k=$col '$1 == c { print $k }' "$TMP/results" | median)"
		done
		echo "$line" >>"$TMP/medians"
		printf '%-10s %10.0f %9.1f %9.1f %8.0f %11.0f %11.0f\n' $line
	done
	for c in agent agent-lg; do
		awk -v a="$c" '$1 == a { x = $0 } $1 == "checklist" { y = $0 } END {
			if (!x) exit
			split(x, u); split(y, v)
			printf "%s / checklist: req/s %.2f, p50 %.2f, p99 %.2f; errors %d vs %d, overflows %d vs %d, drops %d vs %d\n",
				a, u[2] / v[2], u[3] / v[3], u[4] / v[4], u[5], v[5], u[6], v[6], u[7], v[7] }' "$TMP/medians"
	done
	rm -f "$TMP/medians"
done
