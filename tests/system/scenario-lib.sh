# The real-nginx scenarios (tests/system/scenario-*.sh), bench/e2e and the demo share this: a network namespace
# with a real nginx that includes the agent's files, the agent configured for it with CI-length trials, bounded
# load from inside the namespace, and the kernel's own counters read there. Source after lib.sh.

SCN_POLICIES="listen softnet rps tcp nginx"

# scn_nginx NS PORT: namespace NS (loopback up; sysctls may be set in it before) must exist; starts nginx in it on
# 127.0.0.1:PORT with stub_status at /nginx_status, the JSON access log the agent reads, and the agent's include
# files main.conf, events.conf and http.conf (empty) in $NGINX_DIR/inc. Optional, from the environment:
# SCN_LISTEN follows the address on the listen line (e.g. "backlog=4096 reuseport"), SCN_MAIN goes at the top
# level, SCN_EVENTS in events, SCN_HTTP in http, SCN_SERVER in the server; SCN_WORKER_CONNECTIONS is nginx.conf's
# worker_connections (4096; empty: none), SCN_EVENTS_INC the agent's events.conf (empty), SCN_WORKERS its
# worker_processes (2). Sets NGINX_DIR, NGINX_CONF, INC.
scn_nginx() {
	local ns=$1 port=$2
	NGINX_DIR=$TMP/nginx
	NGINX_CONF=$NGINX_DIR/nginx.conf
	INC=$NGINX_DIR/inc
	mkdir -p "$NGINX_DIR/logs" "$INC"
	: >"$INC/main.conf"
	printf '%s\n' "${SCN_EVENTS_INC:-}" >"$INC/events.conf"
	: >"$INC/http.conf"
	cat >"$NGINX_CONF" <<EOT
include $INC/main.conf;
worker_processes ${SCN_WORKERS:-2};
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/logs/error.log warn;
${SCN_MAIN:-}
events {
	include $INC/events.conf;
	${SCN_WORKER_CONNECTIONS-worker_connections 4096;}
	${SCN_EVENTS:-}
}
http {
	include $INC/http.conf;
	log_format ngxat_json escape=json '{"time":"\$time_iso8601","status":\$status,"request_time":\$request_time,'
		'"upstream_response_time":"\$upstream_response_time","upstream_connect_time":"\$upstream_connect_time",'
		'"upstream_addr":"\$upstream_addr","bytes":\$body_bytes_sent}';
	access_log $NGINX_DIR/logs/access.log ngxat_json;
	client_body_temp_path $NGINX_DIR/tmp_body;
	proxy_temp_path $NGINX_DIR/tmp_proxy;
	fastcgi_temp_path $NGINX_DIR/tmp_fastcgi;
	uwsgi_temp_path $NGINX_DIR/tmp_uwsgi;
	scgi_temp_path $NGINX_DIR/tmp_scgi;
	${SCN_HTTP:-}
	server {
		listen 127.0.0.1:$port ${SCN_LISTEN:-};
		location = /nginx_status { stub_status; access_log off; }
		${SCN_SERVER:-}
		location / { return 200 "hello from nginx\n"; }
	}
}
EOT
	cp "$NGINX_CONF" "$TMP/nginx.conf.orig"
	ip netns exec "$ns" nginx -p "$NGINX_DIR" -c "$NGINX_CONF" -e "$NGINX_DIR/logs/error.log" || return 1
	CLEANUP+=("nginx_stop $NGINX_DIR/nginx.pid")
	wait_for 5 test -s "$NGINX_DIR/nginx.pid"
}

# nginx_stop PIDFILE: a graceful stop, and SIGKILL to the master and its workers after 5 s (a worker that never
# got the master's quit, such as one at its file limit, would otherwise outlive the test).
nginx_stop() {
	local m i
	m=$(cat "$1" 2>/dev/null) || return 0
	kill -QUIT "$m" 2>/dev/null || return 0
	for i in $(seq 50); do
		kill -0 "$m" 2>/dev/null || return 0
		sleep 0.1
	done
	pkill -KILL -P "$m"
	kill -KILL "$m" 2>/dev/null
}

# scn_netns NS [SYSCTL=VALUE...]: a new namespace with loopback up and these sysctls set in it; removed at exit.
scn_netns() {
	local ns=$1 kv
	shift
	ip netns del "$ns" 2>/dev/null
	ip netns add "$ns" || return 1
	CLEANUP+=("ip netns del $ns")
	ip -n "$ns" link set lo up || return 1
	for kv in "$@"; do
		ip netns exec "$ns" sysctl -qw "$kv" || return 1
	done
}

# scn_agent_conf FILE PORT [MODE]: the agent for scn_nginx's nginx: 500 ms ticks, the detectors' window 15 s (30 of
# them), trials of 8 pairs of 2 s settle + 4 s blocks, no A/A calibration, a 5 s cooldown, and the shipped
# policies with a 2 s settle time (overrides in $TMP/policies.d); SCN_ONLY=1 leaves the other policy files out.
scn_agent_conf() {
	local f=$1 port=$2 mode=${3:-propose} p
	agent_conf "$f" "$port" 500ms
	cat >>"$f" <<EOT
conf = $NGINX_CONF
include_dir = $INC
timeout = 20s
[tuning]
mode = $mode
pairs = 8
block = 4s
calibrate_pairs = 0
changes_per_hour = 60
# the detectors refill their window after a verdict anyway; the default 60 s only made the tests wait
cooldown = 5s
# 30 ticks: each fault here is steady under its load, and every full window waited (a first proposal, each one
# after a verdict) cost 15 s more at the default 60 (CI's run: about 3 minutes)
window = 15s
EOT
	mkdir -p "$TMP/policies.d"
	for p in $SCN_POLICIES; do
		sed 's/^settle = .*/settle = 2s/' "$srcdir/policies/$p.policy" >"$TMP/policies.d/$p.policy"
	done
	# SCN_ONLY=1: the other shipped policy files are replaced by empty ones (their knobs are not managed), as an
	# operator who tunes only these would.
	if [ -n "${SCN_ONLY:-}" ]; then
		for p in "$srcdir"/policies/*.policy; do
			p=$(basename "$p" .policy)
			case " $SCN_POLICIES " in *" $p "*) ;; *) : >"$TMP/policies.d/$p.policy" ;; esac
		done
	fi
}

# scn_start_agent: the agent in the background with a test-owned NOTIFY_SOCKET; waits for READY=1. AGENT_PID.
scn_start_agent() {
	rm -f "$TMP/notify.log"
	"$NOTIFY_LISTEN" "$TMP/notify.sock" 600 >"$TMP/notify.log" &
	CLEANUP+=("kill $!")
	wait_for 5 test -S "$TMP/notify.sock" || fail "notify-listen did not start"
	NOTIFY_SOCKET="$TMP/notify.sock" "$AGENT" --foreground -c "$TMP/agent.conf" >>"$TMP/agent.log" 2>&1 &
	AGENT_PID=$!
	CLEANUP+=("kill $AGENT_PID")
	wait_for 30 grep -q READY=1 "$TMP/notify.log" || fail "no READY=1"
}

# scn_load NS SECONDS WRK_ARGS...: wrk inside NS for at most SECONDS, in the background (LOAD_PID); output in
# $TMP/load.out. Killed at exit if still running.
scn_load() {
	local ns=$1 secs=$2
	shift 2
	ip netns exec "$ns" timeout $((secs + 10)) wrk -d"${secs}s" "$@" >"$TMP/load.out" 2>&1 &
	LOAD_PID=$!
	CLEANUP+=("kill $LOAD_PID")
}

# scn_stall SECONDS STOP_MS: for SECONDS, nginx's workers stop for STOP_MS of every second (SIGSTOP, SIGCONT), as
# workers blocked on slow disk reads do; the workers are listed again each time (a reload brings new ones). While
# they stop, clients that connect wait in the accept queue, so its length decides the listen overflows whatever
# the CPUs do: at 2000 closing clients, measured 1217/s at backlog 511, 403/s at 1022, 0 at 2044 (without
# stalls, 0 to 479/s from run to run). In the background (STALL_PID); stopped at exit.
scn_stall() {
	local secs=$1 ms=$2
	(
		end=$((SECONDS + secs))
		while [ $SECONDS -lt $end ]; do
			m=$(cat "$NGINX_DIR/nginx.pid" 2>/dev/null) || break
			ws=$(cat "/proc/$m/task/$m/children" 2>/dev/null)
			[ -n "$ws" ] && kill -STOP $ws 2>/dev/null
			sleep "$(printf '0.%03d' "$ms")"
			[ -n "$ws" ] && kill -CONT $ws 2>/dev/null
			sleep "$(printf '0.%03d' $((1000 - ms)))"
		done
	) &
	STALL_PID=$!
	CLEANUP+=("scn_stall_stop")
}
scn_stall_stop() {
	local m
	kill "$STALL_PID" 2>/dev/null
	wait "$STALL_PID" 2>/dev/null
	m=$(cat "$NGINX_DIR/nginx.pid" 2>/dev/null) && pkill -CONT -P "$m"
	return 0
}

# scn_bursts NS PORT COPIES: every request segment to 127.0.0.1:PORT in NS (TCP with PSH, to that port) arrives
# with COPIES companions, as a NIC's interrupt coalescing delivers packets in a burst: a tc filter on lo's ingress
# mirrors it COPIES times to a veth pair (scn-burst0/1, up, no address, so the copies are dropped once they are
# taken off the backlog). The original has left the per-CPU backlog by then; its copies enter it inside the same
# NET_RX softirq, so each request overflows a backlog shorter than COPIES whatever the CPUs are doing (loopback
# alone makes bursts only when the CPUs are busy: 0 to 3000 drops a second, 0 on a quiet machine). Needs tc's
# clsact, u32 and mirred (CONFIG_NET_SCH_INGRESS, CONFIG_NET_CLS_U32, CONFIG_NET_ACT_MIRRED).
scn_bursts() {
	local ns=$1 port=$2 copies=$3 acts=() i
	ip -n "$ns" link add scn-burst0 type veth peer name scn-burst1 || return 1
	ip -n "$ns" link set scn-burst0 up && ip -n "$ns" link set scn-burst1 up || return 1
	for ((i = 0; i < copies; i++)); do acts+=(action mirred egress mirror dev scn-burst0); done
	ip netns exec "$ns" tc qdisc add dev lo clsact || return 1
	# IPv4 without options (loopback's): destination port at byte 22, the TCP flags at 33 (PSH: 0x08).
	ip netns exec "$ns" tc filter add dev lo ingress protocol ip prio 1 u32 \
		match ip protocol 6 0xff match ip dport "$port" 0xffff match u8 0x08 0x08 at 33 "${acts[@]}"
}

# ns_netstat NS FIELD: a TcpExt counter of /proc/net/netstat in NS (ListenOverflows, ...).
ns_netstat() {
	ip netns exec "$1" cat /proc/net/netstat | awk -v f="$2" '
		$1 == "TcpExt:" && !h { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
		$1 == "TcpExt:" && h { print $col[f]; exit }'
}

# ns_snmp NS FIELD: a Tcp counter of /proc/net/snmp in NS (PassiveOpens, ...).
ns_snmp() {
	ip netns exec "$1" cat /proc/net/snmp | awk -v f="$2" '
		$1 == "Tcp:" && !h { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
		$1 == "Tcp:" && h { print $col[f]; exit }'
}

# softnet_drops: dropped packets (column 2 of /proc/net/softnet_stat) summed over CPUs; the table is host-wide.
softnet_drops() {
	local d=0 a b rest
	while read -r a b rest; do d=$((d + 16#$b)); done </proc/net/softnet_stat
	echo $d
}

# overflow_rate NS SECONDS: ListenOverflows per second over SECONDS (integer).
overflow_rate() {
	local a b
	a=$(ns_netstat "$1" ListenOverflows)
	sleep "$2"
	b=$(ns_netstat "$1" ListenOverflows)
	echo $(((b - a) / $2))
}

ctl() { "$NGXCTL" -s "$TMP/api.sock" "$@"; }

# change_state ID: the journal state of change ID.
change_state() { api "/v1/changes/$1" | jq -r .state; }

# wait_proposal SECONDS KNOB: waits for the loop's proposal of KNOB, prints its JSON.
wait_proposal() {
	local deadline=$((SECONDS + $1)) p
	while [ $SECONDS -lt $deadline ]; do
		p=$(api /v1/proposals | jq -c --arg k "$2" '[.proposals[] | select(.knob == $k)][0] // empty')
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.5
	done
	return 1
}

# wait_end SECONDS ID: waits until change ID leaves trial/approved/applying; prints its state.
wait_end() {
	local deadline=$((SECONDS + $1)) st
	while [ $SECONDS -lt $deadline ]; do
		st=$(change_state "$2")
		case $st in kept | reverted | aborted | failed | rejected) echo "$st"; return 0 ;; esac
		sleep 0.5
	done
	echo "${st:-unknown}"
	return 1
}

# scn_proposal SECONDS KNOB FROM TO WHY METRICS: waits for the loop's proposal of KNOB from FROM to TO whose why
# matches the jq regex WHY, with no other knob proposed beside it: its JSON in PROP, its id in PROP_ID. Fails the
# test otherwise, showing the last frames of METRICS (an API metrics= list).
scn_proposal() {
	local others
	PROP=$(wait_proposal "$1" "$2") || fail "no $2 proposal: $(ctl trial) $(ctl proposals); last frames: $(api \
		"/v1/frames?since=-3&metrics=$6" | jq -c '[.frames[] | del(.ts)]')"
	PROP_ID=$(jq .id <<<"$PROP")
	[ "$(jq -r .from <<<"$PROP")" = "$3" ] && [ "$(jq -r .to <<<"$PROP")" = "$4" ] || fail "proposal: $PROP"
	jq -e --arg re "$5" '.why | test($re)' <<<"$PROP" >/dev/null || fail "proposal without its evidence: $PROP"
	others=$(api /v1/proposals | jq -r --arg k "$2" '[.proposals[] | select(.knob != $k) | .knob] | join(" ")')
	[ -z "$others" ] || fail "proposed beside $2: $others"
}

# scn_trial_end SECONDS ID: approves change ID and waits for its trial's end: its state in ST, the journal's detail
# in DETAIL, the verdict's evidence (JSON) in EV.
scn_trial_end() {
	ctl approve "$2" | grep -q approved || fail "ngxctl approve $2"
	ST=$(wait_end "$1" "$2") || fail "change $2 still $ST: $(ctl trial)"
	DETAIL=$(api "/v1/changes/$2" | jq -r .detail)
	EV=$(api "/v1/changes/$2" | jq -r '.detail | sub("^[^{]*"; "") | fromjson? // empty')
}

# scn_backend NS PORT DELAY: a second nginx in NS on 127.0.0.1:PORT that answers every request after DELAY seconds
# (echo_sleep of libnginx-mod-http-echo: the worker is not blocked), or at once with "backend ok" when DELAY is empty,
# without logs, keeping its clients' connections (keepalive_requests 100000). Its files are in $TMP/backend.
scn_backend() {
	local ns=$1 port=$2 delay=$3 d=$TMP/backend mod=/usr/lib/nginx/modules/ngx_http_echo_module.so load="" loc
	loc='location / { return 200 "backend ok\n"; }'
	if [ -n "$delay" ]; then
		[ -f $mod ] || return 77
		load="load_module $mod;"
		loc="location / { echo_sleep $delay; echo \"slow answer\"; }"
	fi
	mkdir -p "$d/logs"
	cat >"$d/nginx.conf" <<EOT
$load
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections 8192; }
http {
	access_log off;
	client_body_temp_path $d/tmp_body;
	proxy_temp_path $d/tmp_proxy;
	fastcgi_temp_path $d/tmp_fastcgi;
	uwsgi_temp_path $d/tmp_uwsgi;
	scgi_temp_path $d/tmp_scgi;
	keepalive_requests 100000;
	server {
		listen 127.0.0.1:$port backlog=4096;
		$loc
	}
}
EOT
	ip netns exec "$ns" nginx -p "$d" -c "$d/nginx.conf" -e "$d/logs/error.log" || return 1
	CLEANUP+=("kill -QUIT \$(cat $d/nginx.pid)")
	wait_for 5 test -s "$d/nginx.pid"
}

# scn_bigtext DIR: DIR/big.txt, 1 MB of text made of varied words (it compresses as text does: gzip 9 to about a
# third), DIR and the file readable by nginx's workers (nobody).
scn_bigtext() {
	mkdir -p "$1" && chmod a+rx "$1" "$(dirname "$1")" || return 1
	awk 'BEGIN { srand(21); n = split("request response worker upstream kernel queue socket accept latency buffer " \
		"connection timeout header status server client proxy cache gzip level nginx agent trial block judge", w, " ")
		while (size < 1048576) { line = ""; for (i = 0; i < 12; i++) line = line w[int(rand() * n) + 1] int(rand() * 1000) " "
			print line; size += length(line) + 1 } }' >"$1/big.txt" && chmod a+r "$1/big.txt"
}

# good_rate NS SECONDS WRK_ARGS... URL: wrk in NS for SECONDS; prints its good responses (2xx and 3xx) per second,
# an integer.
good_rate() {
	local ns=$1 secs=$2
	shift 2
	ip netns exec "$ns" timeout $((secs + 20)) wrk -d"${secs}s" "$@" 2>&1 | awk '
		/ requests in / { n = $1; t = $4; sub(/s,?$/, "", t) }
		/Non-2xx/ { bad = $NF }
		END { printf "%d\n", (t > 0 ? (n - bad) / t : 0) }'
}

# client_times NS URL SECONDS: what a new client sees, as the agent's synthetic client does: requests to URL from
# inside NS one after another, each on a connection of its own, for SECONDS; prints "MEDIAN MEAN", the median time
# to the whole answer and the mean of those answered within a second, in microseconds (a request that fails counts
# its time too; all of them when none was within a second), or "-1 -1" when none was made. A request of a second or more met a listen overflow (the kernel
# sends its SYN-ACK again after 1 s), which the kernel's counter counts: the mean is the time of the others,
# waits in the accept queue and a long tail included, which a median does not see.
client_times() {
	ip netns exec "$1" timeout $(($3 + 10)) bash -c 'end=$((SECONDS + $2))
		while [ $SECONDS -lt $end ]; do curl -s -o /dev/null -m 5 -w "%{time_total}\n" "$1"; done' _ "$2" "$3" |
		awk '{ printf "%d\n", $1 * 1000000 }' | sort -n | awk '{ v[NR] = $1; all += $1; if ($1 < 1000000) { s += $1; k++ } }
			END { if (NR) printf "%d %d\n", v[int((NR + 1) / 2)], k ? s / k : all / NR; else print "-1 -1" }'
}

# client_median NS URL SECONDS: the median of client_times, or -1 when no request was made.
client_median() {
	client_times "$@" | awk '{ print $1 }'
}
