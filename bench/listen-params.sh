#!/bin/bash
# bench/listen-params.sh: the listen parameters and queue side by side on a real nginx, in one run (ratios, not
# timed assertions). Two cases, each measured with and without the change in alternation:
#   reuseport: 2 workers, accept_mutex on (BENCH_EVENTS), BENCH_CONNS kept-alive wrk clients; requests/s, p99 and
#              the CPU each worker ran (from /proc/PID/schedstat), without and with `reuseport`;
#   stall:     the accept queue at 2000 closing clients with workers stopped 300 ms of every second (SIGSTOP, as
#              scn_stall does), ListenOverflows/s at backlog 511, 1022 and 2044.
# Root; nginx, wrk, ip, nstat. Everything it starts is stopped on exit; every run is bounded (BENCH_SECONDS, 8).
set -u
[ "$(id -u)" = 0 ] || { echo "bench/listen-params.sh: needs root" >&2; exit 77; }
for c in nginx wrk ip nstat; do command -v $c >/dev/null || { echo "missing $c" >&2; exit 77; }; done
SECS=${BENCH_SECONDS:-8} CONNS=${BENCH_CONNS:-400} EVENTS=${BENCH_EVENTS:-accept_mutex on;}
NS=ngxat-bench-lp-$$ D=$(mktemp -d /tmp/ngxat-bench-lp.XXXXXX) PORT=18997
stop_nginx() {
	local m
	m=$(cat "$D/nginx.pid" 2>/dev/null) || return 0
	kill -QUIT "$m" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$m" 2>/dev/null || return 0; sleep 0.1; done
	pkill -KILL -P "$m"; kill -KILL "$m" 2>/dev/null
}
trap 'pkill -CONT -P "$(cat "$D/nginx.pid" 2>/dev/null)" 2>/dev/null; stop_nginx; ip netns del $NS 2>/dev/null; rm -rf "$D"' EXIT
ip netns add $NS && ip -n $NS link set lo up && ip netns exec $NS sysctl -qw net.core.somaxconn=65535 || exit 1
mkdir -p "$D/logs"
start_nginx() { # EVENTS LISTEN-PARAMS HTTP
	cat >"$D/nginx.conf" <<EOT
worker_processes 2; pid $D/nginx.pid; error_log $D/logs/error.log warn; worker_rlimit_nofile 65536;
events { worker_connections 8192; $1 }
http { access_log off; $3 server { listen 127.0.0.1:$PORT $2; location / { return 200 "hello from nginx\n"; } } }
EOT
	ip netns exec $NS nginx -p "$D" -c "$D/nginx.conf" -e "$D/logs/error.log" && sleep 0.5
}
run_reuseport() { # PARAM
	local m ws w out runs=""
	start_nginx "$EVENTS" "backlog=4096 $1" "keepalive_requests 100000;" || return 1
	m=$(cat "$D/nginx.pid"); ws=$(cat "/proc/$m/task/$m/children")
	declare -A r0
	for w in $ws; do r0[$w]=$(awk '{ print $1 }' "/proc/$w/schedstat"); done
	out=$(ip netns exec $NS timeout $((SECS + 10)) wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "http://127.0.0.1:$PORT/" 2>&1)
	for w in $ws; do runs="$runs $(( ($(awk '{ print $1 }' "/proc/$w/schedstat") - ${r0[$w]}) / 1000000 ))"; done
	printf '%-10s %10s %8s  worker CPU ms:%s\n' "${1:-(none)}" "$(awk '/Requests\/sec/ { print $2 }' <<<"$out")" \
		"$(awk '$1 == "99%" { print $2 }' <<<"$out")" "$runs"
	stop_nginx
}
run_stall() { # BACKLOG
	local m a b
	start_nginx "" "backlog=$1" "" || return 1
	m=$(cat "$D/nginx.pid")
	( end=$((SECONDS + SECS)); while [ $SECONDS -lt $end ]; do ws=$(cat "/proc/$m/task/$m/children"); kill -STOP $ws; sleep 0.3; kill -CONT $ws; sleep 0.7; done ) &
	a=$(ip netns exec $NS nstat -az TcpExtListenOverflows | awk '/ListenOverflows/ { print $2 }')
	ip netns exec $NS timeout $((SECS + 10)) wrk -t2 -c2000 -d"${SECS}s" -H "Connection: close" "http://127.0.0.1:$PORT/" >/dev/null 2>&1
	b=$(ip netns exec $NS nstat -az TcpExtListenOverflows | awk '/ListenOverflows/ { print $2 }')
	wait
	printf 'backlog %-6s %8s overflows/s\n' "$1" $(((b - a) / SECS))
	stop_nginx
}
echo "# reuseport: 2 workers, events { $EVENTS }, $CONNS kept-alive clients, ${SECS} s each"
printf '%-10s %10s %8s\n' param "req/s" p99
for i in 1 2; do run_reuseport ""; run_reuseport reuseport; done
echo "# the accept queue at 2000 closing clients, workers stopped 300 ms a second"
for bl in 511 1022 2044; do run_stall $bl; done
