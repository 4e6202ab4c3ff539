# Shared by the system tests: paths, assertions, and cleanup. Source it; set TEST_NAME first (and TEST_EXCLUSIVE=1
# for a test that must not share the machine, below).
set -u
# make check runs tests side by side (-j). A test that drives load, changes host-wide state (netdev_max_backlog
# is the host's on Linux 6.x), mounts, boots a container or holds thousands of descriptors sets TEST_EXCLUSIVE=1:
# it holds the system tests' lock alone; every other one shares it. (Found in CI: scenario-worker-connections,
# beside scenario-backlog's netdev_max_backlog 10, met softnet drops and the agent rightly proposed those first.)
# The script runs again under flock(1) with -o: the lock's descriptor is closed in the script, so an nginx or agent
# that outlives the test cannot keep the lock (without -o one did: an old nginx worker that never exited held it,
# and every later test waited). Scripts a test runs inherit NGXAT_TEST_LOCKED and do not take it again.
if [ -z "${NGXAT_TEST_LOCKED:-}" ] && command -v flock >/dev/null; then
	export NGXAT_TEST_LOCKED=1
	exec flock -o "$([ -n "${TEST_EXCLUSIVE:-}" ] && echo -x || echo -s)" /tmp/ngxat-system-tests.lock "$BASH" "$0" "$@"
fi
: "${srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${builddir:=$(pwd)}"
AGENT=$builddir/ngx-autotune
NGXCTL=$builddir/ngxctl
NOTIFY_LISTEN=$builddir/tests/system/notify-listen
TMP=$(mktemp -d "/tmp/ngxat-${TEST_NAME:-test}.XXXXXX")
CLEANUP=()
checks=0

cleanup() {
	local i
	# how long the test ran, once it held its lock (tests/run-all.sh lists the slowest)
	echo "# time: $SECONDS s"
	# The watchdog first: a bound met during cleanup would end it half done (and fail a test that passed).
	[ -z "${WATCHDOG:-}" ] || kill "$WATCHDOG" 2>/dev/null
	for ((i = ${#CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${CLEANUP[$i]}" >/dev/null 2>&1 || true
	done
	# NGXAT_KEEP_TMP=1 keeps the test's files (store, logs, configs) for a post-mortem
	if [ "${NGXAT_KEEP_TMP:-}" = 1 ]; then echo "# kept: $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# A test that hangs fails, and says where, instead of holding the run until CI's own limit kills it with no
# summary (stop 31: CI ended past its 5400 s with nothing to show which test hung). The slowest test takes about
# 230 s in CI; TEST_TIMEOUT (seconds, set before sourcing this file) bounds one that needs longer, and 0 means no
# watchdog (the benchmarks and the demo, bounded by their own arguments). At the bound the watchdog prints the
# processes the test started and the threads of each agent among them, asks the script to fail (USR1, run once the
# command it waits on ends) and ends those processes; cleanup then runs as at any failure. Scripts run by a test
# (NGXAT_TEST_WATCHED) are bounded by their caller's watchdog, not one of their own.
watchdog_fire() {
	echo "FAIL: the test ran past its bound of ${TEST_TIMEOUT:-600} s (at ${SECONDS}s); after check $checks it hung"
	if [ -f "$TMP/agent.log" ]; then
		echo "--- agent log (last 40 lines)"
		tail -n 40 "$TMP/agent.log"
	fi
	exit 1
}
WATCHDOG=
if [ -z "${NGXAT_TEST_WATCHED:-}" ] && [ "${TEST_TIMEOUT:-600}" != 0 ]; then
	export NGXAT_TEST_WATCHED=1
	trap watchdog_fire USR1
	(
		sp=
		trap '[ -z "$sp" ] || kill "$sp" 2>/dev/null; exit 0' TERM
		trap - USR1
		sleep "${TEST_TIMEOUT:-600}" >/dev/null 2>&1 &
		sp=$!
		wait $sp || exit 0
		me=$BASHPID
		# The script may be gone (killed outright): its pid is then no one's to signal.
		[ "$(ps -o ppid= -p "$me" | tr -d ' ')" = $$ ] || exit 0
		# Every process the script started, but this watchdog and its own.
		tree=$(ps -eo pid=,ppid=,etimes=,stat=,args= | awk -v top=$$ -v me="$me" '
			{ line[$1] = $0; parent[$1] = $2 }
			END { for (p in line) { for (q = parent[p]; q in parent && q != top && q != me && q > 1; q = parent[q]) {}
				if (q == top && p != me) print line[p] } }' | sort -n)
		echo "--- the test's processes at its bound (pid, parent, seconds, state, command)"
		head -n 60 <<<"$tree"
		# Where each agent waits: its threads' stacks (an agent that did not end on SIGTERM is a finding). Into a
		# file first: gdb cut off by a closed pipe could leave the agent stopped.
		if command -v gdb >/dev/null; then
			awk '$5 ~ /ngx-autotune$/ { print $1 }' <<<"$tree" | head -n 4 | while read -r pid; do
				echo "--- the threads of agent $pid"
				timeout 30 gdb -q -batch -p "$pid" -ex "thread apply all bt 12" >"$TMP/gdb-$pid.out" 2>&1
				kill -CONT "$pid" 2>/dev/null
				grep -E '^(Thread|#)' "$TMP/gdb-$pid.out" | head -n 80
			done
		fi
		kill -USR1 $$
		# The command the script waits on, and whatever it started: cleanup then runs as at any failure.
		kill -TERM $(awk '{ print $1 }' <<<"$tree") 2>/dev/null
		sleep 20
		kill -KILL $(awk '{ print $1 }' <<<"$tree") 2>/dev/null
	) &
	WATCHDOG=$!
fi

# Whether every check must run here: NGXAT_REQUIRE_ALL=1, or CI=true as root (the CI machine: Debian 12, root, the
# packages of packaging/debian-deps.sh). Then skip is a failure; see tests/run-all.sh for how skips are counted.
require_all() {
	[ "${NGXAT_REQUIRE_ALL:-}" = 1 ] || { [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ]; }
}

# skip REASON: this machine cannot run the test: one line "SKIP: REASON" in its log and exit 77 (automake's SKIP).
# The CI machine can run it, so where every check must run (require_all) it fails instead.
skip() {
	if require_all; then
		echo "FAIL: skipped where every check must run (CI as root): $*"
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}

# skip_allowed REASON: a skip that is right even on the CI machine; REASON says why. Never a failure.
skip_allowed() {
	echo "SKIP: $*"
	exit 77
}

fail() {
	echo "FAIL: $* (at ${SECONDS}s)"
	if [ -f "$TMP/agent.log" ]; then
		echo "--- agent log (last 40 lines)"
		tail -n 40 "$TMP/agent.log"
	fi
	exit 1
}

# ok TEXT: one check passed; the seconds since the test started follow it, where the CI time goes.
ok() {
	checks=$((checks + 1))
	echo "ok $checks - $* (at ${SECONDS}s)"
}

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root"
}

need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "needs $c"
	done
}

# api PATH: GET from the agent's socket, print the body.
api() {
	curl -sS --max-time 5 --unix-socket "$TMP/api.sock" "http://localhost$1"
}

# wait_for SECONDS COMMAND...: poll until COMMAND succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
}

# etcd_loopback NAME PORT: Debian's etcd, a cluster of one on 127.0.0.1:PORT (its peers on PORT + 1), its data under
# $TMP, killed at exit; fails the test when it does not answer within 20 s. A pool ([fleet]) for the tests that
# need one member (fleet.sh makes its own, in a namespace of its own).
etcd_loopback() {
	# An etcd left by a run killed before its cleanup would answer the health check with its own data.
	[ -z "$(ss -ltnH "sport = :$2")" ] || fail "port $2 is taken (an etcd left by an earlier run?): $(ss -ltnpH "sport = :$2")"
	etcd --name "$1" --data-dir "$TMP/etcd-$1" --listen-client-urls "http://127.0.0.1:$2" \
		--advertise-client-urls "http://127.0.0.1:$2" --listen-peer-urls "http://127.0.0.1:$(($2 + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$(($2 + 1))" \
		--initial-cluster "$1=http://127.0.0.1:$(($2 + 1))" >"$TMP/etcd-$1.log" 2>&1 &
	CLEANUP+=("kill -9 $!")
	wait_for 20 env ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$2" endpoint health ||
		fail "etcd did not start: $(tail -5 "$TMP/etcd-$1.log")"
}

# memcg_new BYTES: a memory cgroup limited to BYTES, as a unit's MemoryMax= makes one, for the processes a test
# starts in it with memcg_run (their children stay in it, as a unit's do); its directory in MEMCG. cgroup v2: under
# the unified hierarchy's root (its memory controller on); v1: under this shell's own memory cgroup. Removed at
# exit. Returns 1 when neither can be made here.
memcg_new() {
	local name=ngxat-${TEST_NAME:-test}-$$ own
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || return 1
		MEMCG=/sys/fs/cgroup/$name
		mkdir "$MEMCG" 2>/dev/null || return 1
		CLEANUP+=("memcg_remove $MEMCG")
		echo "$1" >"$MEMCG/memory.max" || return 1
		[ ! -f "$MEMCG/memory.swap.max" ] || echo 0 >"$MEMCG/memory.swap.max"
	else
		own=$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
		[ -n "$own" ] && [ -d "/sys/fs/cgroup/memory$own" ] || return 1
		MEMCG=/sys/fs/cgroup/memory${own%/}/$name
		mkdir "$MEMCG" 2>/dev/null || return 1
		CLEANUP+=("memcg_remove $MEMCG")
		echo "$1" >"$MEMCG/memory.limit_in_bytes" || return 1
	fi
}

# memcg_run COMMAND... &: COMMAND in MEMCG, in the background only: the subshell becomes it (exec), so that $! is
# COMMAND's pid.
memcg_run() {
	exec sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$MEMCG" "$@"
}

# memcg_oom_kills: how many processes the OOM killer ended in MEMCG.
memcg_oom_kills() {
	if [ -f "$MEMCG/memory.events" ]; then
		awk '$1 == "oom_kill" { print $2 }' "$MEMCG/memory.events"
	else
		awk '$1 == "oom_kill" { print $2 }' "$MEMCG/memory.oom_control"
	fi
}

# memcg_peak: the most memory MEMCG held (MiB; v1 and kernels before 5.19 count the page cache its processes read
# too, and v2 before 5.19 has no peak: then the current figure).
memcg_peak() {
	local f
	for f in memory.peak memory.max_usage_in_bytes memory.current; do
		[ -f "$MEMCG/$f" ] && { echo $(($(cat "$MEMCG/$f") >> 20)); return; }
	done
}

# memcg_remove DIR: DIR once its processes are gone (killed by the cleanup before this).
memcg_remove() {
	[ ! -d "$1" ] || wait_for 5 rmdir "$1"
}

# idle_state NS PORT: nginx's side of a connection to 127.0.0.1:PORT that says nothing, after 0.3 s: ESTAB
# (accepted) or SYN-RECV (the listen's deferred keeps it until the first bytes come, or for nginx's 1 s
# TCP_DEFER_ACCEPT: then the client's answer to the SYN-ACK sent again establishes it; measured, 20 of 20 at 1.5 s).
idle_state() {
	ip netns exec "$1" python3 -c '
import socket, subprocess, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(0.3)
f = "( sport = :%s and dport = :%d )" % (sys.argv[1], c.getsockname()[1])
out = subprocess.run(["ss", "-Htna", f], capture_output=True, text=True).stdout.split()
print(out[0] if out else "none")' "$2"
}

# wait_ticks N: until the agent has sampled N more ticks, all started after this call; so what was written before
# it has been seen (or, for a check that the agent did not act, the agent had N ticks to act). The API answers on
# the loop that ticks, so the count it gives is of finished ticks; the one after it may already have read its files
# (while stub_status is fetched), hence one more than asked for.
wait_ticks() {
	local c0
	c0=$(api /v1/status | jq -e '.tick.count') || return 1
	wait_for 30 sh -c "[ \"\$(curl -sS --max-time 5 --unix-socket '$TMP/api.sock' http://localhost/v1/status |
		jq '.tick.count')\" -gt $((c0 + $1)) ]"
}

# start_nginx_ns NS PORT: a network namespace NS (loopback up) and a real nginx in it on 127.0.0.1:PORT with
# stub_status at /nginx_status, the JSON access log the agent understands, and its error log; all files under
# $TMP/nginx. Sets NGINX_DIR. Both are removed by cleanup.
# NGINX_NS_SYSCTLS: sysctls (NAME=VALUE ...) set in the namespace before nginx starts (its listen queue is fixed then).
start_nginx_ns() { # NS PORT [DIR]: nginx in a new network namespace NS, its files in DIR (default $TMP/nginx)
	local ns=$1 port=$2 kv
	NGINX_DIR=${3:-$TMP/nginx}
	mkdir -p "$NGINX_DIR/logs"
	ip netns add "$ns" || return 1
	CLEANUP+=("ip netns del $ns")
	ip -n "$ns" link set lo up
	for kv in ${NGINX_NS_SYSCTLS:-}; do
		ip netns exec "$ns" sysctl -qw "$kv" || return 1
	done
	cat >"$NGINX_DIR/nginx.conf" <<EOT
worker_processes 2;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/logs/error.log warn;
events { worker_connections 4096; }
http {
	log_format ngxat_json escape=json '{"time":"\$time_iso8601","status":\$status,"request_time":\$request_time,'
		'"upstream_response_time":"\$upstream_response_time","upstream_connect_time":"\$upstream_connect_time",'
		'"upstream_addr":"\$upstream_addr","bytes":\$body_bytes_sent}';
	access_log $NGINX_DIR/logs/access.log ngxat_json;
	client_body_temp_path $NGINX_DIR/tmp_body;
	proxy_temp_path $NGINX_DIR/tmp_proxy;
	fastcgi_temp_path $NGINX_DIR/tmp_fastcgi;
	uwsgi_temp_path $NGINX_DIR/tmp_uwsgi;
	scgi_temp_path $NGINX_DIR/tmp_scgi;
	keepalive_requests 10000;
	server {
		listen 127.0.0.1:$port;
		location = /nginx_status { stub_status; access_log off; }
		location / { return 200 "hello from nginx\n"; }
	}
}
EOT
	ip netns exec "$ns" nginx -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" -e "$NGINX_DIR/logs/error.log" || return 1
	CLEANUP+=("kill -QUIT \$(cat $NGINX_DIR/nginx.pid)")
	wait_for 5 test -s "$NGINX_DIR/nginx.pid"
}

# live_backlog NS PORT: the accept-queue limit of the listening socket(s) on PORT (ss), space-separated.
live_backlog() {
	ip netns exec "$1" ss -Hltn "sport = :$2" | awk '{ print $3 }' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# agent_conf FILE PORT [TICK]: an agent configuration for the nginx of start_nginx_ns.
agent_conf() {
	cat >"$1" <<EOT
[agent]
writer = ${NGXAT_TEST_WRITER:-yes}
tick_interval = ${3:-1s}
socket = $TMP/api.sock
socket_group =
[store]
path = $TMP/store/ngx-autotune.db
[policies]
dir = $srcdir/policies
override_dir = $TMP/policies.d
[nginx]
pid_file = $NGINX_DIR/nginx.pid
stub_status_url = http://127.0.0.1:$2/nginx_status
access_log = $NGINX_DIR/logs/access.log
error_log = $NGINX_DIR/logs/error.log
EOT
}

# write_netns DIR OVF: the netstat, snmp and softnet_stat of a fake namespace, with ListenOverflows = OVF and
# PassiveOpens = 3 * OVF. Written by rename, so a tick never reads half a file.
write_netns() {
	cat >"$1/netstat.tmp" <<EOT
TcpExt: SyncookiesSent SyncookiesRecv ListenOverflows ListenDrops TCPBacklogDrop TCPTimeWaitOverflow
TcpExt: 0 0 $2 $2 3 0
IpExt: InNoRoutes InTruncatedPkts
IpExt: 0 0
EOT
	mv "$1/netstat.tmp" "$1/netstat"
	cat >"$1/snmp.tmp" <<EOT
Ip: Forwarding DefaultTTL
Ip: 1 64
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 10 $(($2 * 3)) 0 0 5 1000 2000 7 0 0 0
EOT
	mv "$1/snmp.tmp" "$1/snmp"
	cat >"$1/softnet_stat.tmp" <<EOT
00000100 00000002 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
00000200 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001
EOT
	mv "$1/softnet_stat.tmp" "$1/softnet_stat"
	printf 'sockets: used 40\nTCP: inuse 5 orphan 0 tw %d alloc 7 mem 1\nUDP: inuse 2 mem 2\n' "$2" >"$1/sockstat.tmp"
	mv "$1/sockstat.tmp" "$1/sockstat"
}

# make_fake_root DIR NPID [sysfs]: a fake /proc and /sys tree for --root: an nginx master NPID with workers NPID+1
# and NPID+2, whose network namespace has its own counters (ListenOverflows 100) while the host's show 999999.
# eth0's IRQs are 25 and 26; with "sysfs" the tree also has their msi_irqs and /sys/kernel/irq/N/per_cpu_count
# (write_irq_counts), else the agent finds them by name in /proc/interrupts.
make_fake_root() {
	local R=$1 NPID=$2 w
	mkdir -p "$R/proc/net" "$R/proc/$NPID/net" "$R/proc/$NPID/task/$NPID" "$R/sys/class/net/eth0"
	write_netns "$R/proc/net" 999999
	write_netns "$R/proc/$NPID/net" 100
	cat >"$R/proc/softirqs" <<'EOT'
                    CPU0       CPU1
          HI:          0          0
       TIMER:       2385       2608
      NET_TX:         10         20
      NET_RX:        300        400
       BLOCK:          0          0
EOT
	cat >"$R/proc/stat" <<'EOT'
cpu  100 0 50 1000 5 3 7 0 0 0
cpu0 50 0 25 500 2 1 3 0 0 0
cpu1 50 0 25 500 3 2 4 0 0 0
intr 0
ctxt 12345
btime 1700000000
processes 100
procs_running 2
procs_blocked 0
softirq 0 0 0 0 0 0 0 0 0 0 0
EOT
	cat >"$R/proc/interrupts" <<'EOT'
           CPU0       CPU1
  0:         10          0   IO-APIC   2-edge      timer
 25:        100        200   PCI-MSI 524288-edge      eth0-rx-0
 26:         50         60   PCI-MSI 524289-edge      eth0-tx-0
NMI:          0          0   Non-maskable interrupts
LOC:       1000       1100   Local timer interrupts
ERR:          0
EOT
	echo "$NPID (nginx) S 1 $NPID" >"$R/proc/$NPID/stat"
	echo "$((NPID + 1)) $((NPID + 2)) " >"$R/proc/$NPID/task/$NPID/children"
	for w in $((NPID + 1)) $((NPID + 2)); do
		mkdir -p "$R/proc/$w"
		echo "1000000 2000000 30" >"$R/proc/$w/schedstat"
		printf 'Name:\tnginx\nvoluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t2\n' >"$R/proc/$w/status"
	done
	if [ "${3:-}" = sysfs ]; then
		mkdir -p "$R/sys/class/net/eth0/device/msi_irqs" "$R/sys/kernel/irq/25" "$R/sys/kernel/irq/26"
		touch "$R/sys/class/net/eth0/device/msi_irqs/25" "$R/sys/class/net/eth0/device/msi_irqs/26"
		write_irq_counts "$R" 100 200
		echo "50,60" >"$R/sys/kernel/irq/26/per_cpu_count"
	fi
}

# write_irq_counts DIR CPU0 CPU1: the per-CPU count of IRQ 25 in a fake tree made with "sysfs".
write_irq_counts() {
	echo "$2,$3" >"$1/sys/kernel/irq/25/per_cpu_count.tmp"
	mv "$1/sys/kernel/irq/25/per_cpu_count.tmp" "$1/sys/kernel/irq/25/per_cpu_count"
}

# fake_root_conf FILE ROOT ACCESS_LOG: an agent configuration for a fake tree made by make_fake_root (nginx pid file
# $TMP/nginx.pid, no stub_status, no netlink, 200 ms ticks, policy overrides in $TMP/policies.d). The root is in
# the file, not on the command line, so that anything run with only -c (ngxctl revert --offline) writes to the fake
# tree too, never to the host. Append further sections to FILE as needed. NGXAT_TEST_WRITER=no runs the agent without
# its writer process ([agent] writer, on by default), in one process, for a run of a test that way.
fake_root_conf() {
	cat >"$1" <<EOT
[agent]
root = $2
writer = ${NGXAT_TEST_WRITER:-yes}
tick_interval = 200ms
socket = $TMP/api.sock
socket_group =
[store]
path = $TMP/store/ngx-autotune.db
[policies]
dir = $srcdir/policies
override_dir = $TMP/policies.d
[nginx]
pid_file = $TMP/nginx.pid
stub_status_url =
access_log = $3
error_log =
[probes]
netlink = no
EOT
}

# sysctl_fake_host: the fake host of knobs-journal.sh and writer.sh: a fake root in $R=$TMP/root (nginx 4242) with
# net.core.somaxconn 128 ($SOMAX) and net.core.netdev_max_backlog 1000 ($BACKLOG), the listen policy's settle time
# cut to 1 s and softnet's raised to 1 h (overrides of the same name replace the shipped files), $TMP/agent.conf for
# it, and ctl (ngxctl on its socket). start_fake_agent [ENV=VALUE...] starts the agent on it in the background
# ($AGENT_PID) and waits for READY=1.
sysctl_fake_host() {
	R=$TMP/root
	make_fake_root "$R" 4242 sysfs
	echo 4242 >"$TMP/nginx.pid"
	mkdir -p "$R/proc/sys/net/core"
	SOMAX=$R/proc/sys/net/core/somaxconn
	BACKLOG=$R/proc/sys/net/core/netdev_max_backlog
	echo 128 >"$SOMAX"
	echo 1000 >"$BACKLOG"
	mkdir -p "$TMP/policies.d"
	sed 's/^settle = .*/settle = 1s/' "$srcdir/policies/listen.policy" >"$TMP/policies.d/listen.policy"
	sed 's/^settle = .*/settle = 1h/' "$srcdir/policies/softnet.policy" >"$TMP/policies.d/softnet.policy"
	fake_root_conf "$TMP/agent.conf" "$R" ""
	AGENT_PID=
}
ctl() { "$NGXCTL" -s "$TMP/api.sock" "$@"; }
start_fake_agent() {
	rm -f "$TMP/notify.log"
	"$NOTIFY_LISTEN" "$TMP/notify.sock" 60 >"$TMP/notify.log" &
	CLEANUP+=("kill $!")
	wait_for 5 test -S "$TMP/notify.sock" || fail "notify-listen did not start"
	env "$@" NOTIFY_SOCKET="$TMP/notify.sock" "$AGENT" --foreground -c "$TMP/agent.conf" \
		>>"$TMP/agent.log" 2>&1 &
	AGENT_PID=$!
	CLEANUP+=("kill $AGENT_PID")
	wait_for 10 grep -q READY=1 "$TMP/notify.log" || fail "no READY=1"
}

# squeeze_setup: the fake host of tests/system/tuning-loop.sh, for tests that need the real agent to propose: a
# fake root in $TMP/root (nginx 4242) whose softnet time_squeeze rises while net.core.netdev_budget ($BUDGET) is
# 300, softnet's settle time cut to 1 s, and $TMP/agent.conf with [tuning] mode propose, 4 pairs of 2 s blocks and no
# calibration. Run squeeze_plant in the background to make the counters move. Append sections to the conf as needed.
squeeze_setup() {
	R=$TMP/root
	make_fake_root "$R" 4242
	echo 4242 >"$TMP/nginx.pid"
	mkdir -p "$R/proc/sys/net/core"
	BUDGET=$R/proc/sys/net/core/netdev_budget
	echo 300 >"$BUDGET"
	echo 128 >"$R/proc/sys/net/core/somaxconn"
	: >"$TMP/access.log"
	mkdir -p "$TMP/policies.d"
	sed 's/^settle = .*/settle = 1s/' "$srcdir/policies/softnet.policy" >"$TMP/policies.d/softnet.policy"
	fake_root_conf "$TMP/agent.conf" "$R" "$TMP/access.log"
	cat >>"$TMP/agent.conf" <<EOT
[tuning]
mode = propose
pairs = 4
block = 2s
calibrate_pairs = 0
EOT
}

# squeeze_plant [SECONDS [REQUEST_TIME [SQUEEZES]]]: every 100 ms, 20 requests of REQUEST_TIME (default 0.005 s:
# 5 ms); time_squeeze grows by SQUEEZES (default 10) at budget 300, by a tenth of that (rounded down) at 600 or
# more; the workers' scheduler figures move. Bounded: SECONDS (default 150). 10 per 100 ms is a gross symptom
# (detect.h: proposed before the window is full, and tried without an A/A calibration); 2 is not.
squeeze_plant() {
	local sq=3 run=1000000 wait=2000000 b i w line n=$((${1:-150} * 10)) hi=${3:-10} lo=$((${3:-10} / 10))
	line='{"time":"2026-01-01T00:00:00+00:00","status":200,"request_time":'"${2:-0.005}"',"upstream_response_time":"","upstream_addr":"","bytes":12}'
	for ((i = 0; i < n; i++)); do
		b=$(cat "$BUDGET" 2>/dev/null || echo 300)
		if [ "$b" -ge 600 ]; then sq=$((sq + lo)); else sq=$((sq + hi)); fi
		printf '%08x 00000000 %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n%08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001\n' \
			$((i * 100)) "$sq" $((i * 50)) >"$R/proc/4242/net/softnet_stat.tmp"
		mv "$R/proc/4242/net/softnet_stat.tmp" "$R/proc/4242/net/softnet_stat"
		printf '                    CPU0       CPU1\n          HI:          0          0\n       TIMER:       2385       2608\n      NET_TX:         10         20\n      NET_RX: %10d %10d\n       BLOCK:          0          0\n' \
			$((300 + i * 7)) $((400 + i * 3)) >"$R/proc/softirqs.tmp"
		mv "$R/proc/softirqs.tmp" "$R/proc/softirqs"
		run=$((run + 50000000)) wait=$((wait + 1000000))
		for w in 4243 4244; do echo "$run $wait $i" >"$R/proc/$w/schedstat"; done
		for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo "$line"; done >>"$TMP/access.log"
		sleep 0.1
	done
}

# find_prometheus_tool NAME: the path of promtool or prometheus: $PROMTOOL / $PROMETHEUS, one on the PATH, or
# Debian's prometheus package unpacked (never installed) under the build dir, fetched with apt-get download on
# first use. Tests run in parallel: the fetch holds a lock, and the unpacked tree appears by one rename, so that no
# test runs a binary another is still writing ("Text file busy"). Prints nothing when none can be had.
find_prometheus_tool() {
	local name=$1 dir=$builddir/tests/promtool override
	override=$(echo "$name" | tr a-z A-Z)
	if [ -n "${!override:-}" ]; then
		echo "${!override}"
	elif command -v "$name" >/dev/null 2>&1; then
		command -v "$name"
	else
		mkdir -p "$(dirname "$dir")" || return 0
		(
			flock -w 330 9 || exit 0
			[ -x "$dir/usr/bin/$name" ] && exit 0
			command -v apt-get >/dev/null 2>&1 || exit 0
			tmp=$(mktemp -d "$dir.XXXXXX") || exit 0
			if (cd "$tmp" && timeout 300 apt-get download -q prometheus >/dev/null 2>&1) &&
				dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root"; then
				rm -rf "$dir" && mv "$tmp/root" "$dir"
			fi
			rm -rf "$tmp"
		) 9>"$dir.lock"
		[ -x "$dir/usr/bin/$name" ] && echo "$dir/usr/bin/$name"
	fi
	return 0
}
