#!/bin/bash
# What a pool buys (issue 24): N hosts with the same fault, fixed by N agents coordinated through etcd against N
# independent agents (no [fleet]: all try at once). Two pools: "pool" ([fleet] max_in_trial 1: one trial at a time,
# what one host kept proposed first on the others) and "waves" (max_in_trial N, rollout = yes: one canary, then the
# confirmations of its value side by side). The fault: somaxconn 16 in each host's network namespace (nginx's default
# backlog: a live accept queue of 16) under closing clients, which overflow it by hundreds a second; each agent in
# mode auto with the listen queue alone to tune (listen.policy, approval auto, 2 s blocks, 250 ms ticks, 4 pairs).
# Figures, not pass/fail, printed for each mode:
#   - when each host was fixed (its listen_queue change kept), from the moment the load started on all of them;
#     the pool's time is the last host's, one host's the first's;
#   - the exposure: listen overflows the hosts' clients met until each was fixed (connections refused or their
#     SYNs dropped), summed over the hosts, and the host-seconds spent at the old value (16) inside trials, in arm
#     A, and outside them, waiting.
# The goal (issue 24): the pool fixed in at most 1.5x one host's time, with at most half the independent agents'
# exposure.
#
#   sudo bench/fleet.sh [BUILDDIR]        (default /work/main/build, or $builddir)
#
# Environment: BENCH_HOSTS (4), BENCH_CONNS (closing clients a host, 200), BENCH_MODES ("pool waves independent"),
# BENCH_DEADLINE (s a mode may take, 600), BENCH_PORT (first nginx port, 18901; etcd on BENCH_PORT + 50).
# shellcheck disable=SC2034 # read by lib.sh
NGXAT_TEST_LOCKED=1 # a bench, not run beside the tests: no lock
TEST_TIMEOUT=0 # bounded by its own arguments: no watchdog (tests/system/lib.sh)
TEST_NAME=bench-fleet
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-${builddir:-/work/main/build}}
builddir=$(cd "$builddir" && pwd) || { echo "no build dir $builddir"; exit 1; }
. "$srcdir/tests/system/lib.sh"
need_root
need_cmd nginx wrk jq curl ip ss etcd etcdctl
[ -x "$AGENT" ] || skip "no agent binary at $AGENT (build it: make ngx-autotune)"

HOSTS=${BENCH_HOSTS:-4}
CONNS=${BENCH_CONNS:-200}
MODES=${BENCH_MODES:-pool waves independent}
DEADLINE=${BENCH_DEADLINE:-600}
PORT=${BENCH_PORT:-18901}
EPORT=$((PORT + 50))
ENS=ngxat-bfe-$$

ip netns add "$ENS" || fail "cannot make namespace $ENS"
CLEANUP+=("ip netns del $ENS")
ip -n "$ENS" link set lo up
ip netns exec "$ENS" etcd --name bench --data-dir "$TMP/etcd" --listen-client-urls "http://127.0.0.1:$EPORT" \
	--advertise-client-urls "http://127.0.0.1:$EPORT" --listen-peer-urls "http://127.0.0.1:$((EPORT + 1))" \
	--initial-advertise-peer-urls "http://127.0.0.1:$((EPORT + 1))" \
	--initial-cluster "bench=http://127.0.0.1:$((EPORT + 1))" >"$TMP/etcd.log" 2>&1 &
CLEANUP+=("kill -9 $!")
wait_for 20 ip netns exec "$ENS" env ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$EPORT" endpoint health ||
	fail "etcd did not start: $(tail -5 "$TMP/etcd.log")"

overflows() { # NS: ListenOverflows of the namespace
	ip netns exec "$1" cat /proc/net/netstat | awk '$1 == "TcpExt:" && !h { for (i = 2; i <= NF; i++) c[$i] = i; h = 1; next }
		$1 == "TcpExt:" && h { print $c["ListenOverflows"]; exit }'
}

# run MODE: N hosts, the load on all at once, until each is fixed or the deadline; one line per host, then the sums.
run() {
	local mode=$1 h d ns pids=() t0 now prev step fixed_n=0 api st in_trial most=0
	local -A fixed ovf0 ovf_at at_a at_wait
	d=$TMP/$mode
	for ((h = 1; h <= HOSTS; h++)); do
		mkdir -p "$d/h$h/policies.d" "$d/h$h/inc"
		for p in "$srcdir"/policies/*.policy; do : >"$d/h$h/policies.d/$(basename "$p")"; done
		sed -e "s/^settle = .*/settle = 1s/" -e "s/^settle_min = .*/settle_min = 1s/" \
			-e "s/^approval = required/approval = auto/" "$srcdir/policies/listen.policy" \
			>"$d/h$h/policies.d/listen.policy"
		NGINX_NS_SYSCTLS="net.core.somaxconn=16" start_nginx_ns "ngxat-bf$h-$$" $((PORT + h)) "$d/h$h/nginx" ||
			fail "could not start nginx $h"
		agent_conf "$d/h$h/agent.conf" $((PORT + h)) 250ms
		sed -i -e "s|^socket = .*|socket = $d/h$h/api.sock|" -e "s|^path = .*|path = $d/h$h/store/ngx-autotune.db|" \
			-e "s|^override_dir = .*|override_dir = $d/h$h/policies.d|" \
			-e "s|^error_log = .*|&\ninclude_dir = $d/h$h/inc|" "$d/h$h/agent.conf"
		printf '[tuning]\nmode = auto\nblock = 2s\npairs = 4\ncalibrate_pairs = 0\ncooldown = 0s\nchanges_per_hour = 60\n' \
			>>"$d/h$h/agent.conf"
		[ "$mode" = pool ] && printf '[fleet]\nendpoints = http://127.0.0.1:%s\npool = bench-%s\nhost = h%s\nmax_in_trial = 1\nlease_ttl = 3s\n' \
			$EPORT $$ $h >>"$d/h$h/agent.conf"
		[ "$mode" = waves ] && printf '[fleet]\nendpoints = http://127.0.0.1:%s\npool = bench-w%s\nhost = h%s\nmax_in_trial = %s\nrollout = yes\nlease_ttl = 3s\n' \
			$EPORT $$ $h "$HOSTS" >>"$d/h$h/agent.conf"
		ip netns exec "$ENS" "$AGENT" --foreground -c "$d/h$h/agent.conf" >"$d/h$h/agent.log" 2>&1 &
		pids+=($!)
		CLEANUP+=("kill -9 $!")
	done
	for ((h = 1; h <= HOSTS; h++)); do
		wait_for 30 test -S "$d/h$h/api.sock" || fail "agent h$h did not start: $(tail -3 "$d/h$h/agent.log")"
	done
	sleep 5 # the detectors' window fills with the quiet host first
	t0=$(date +%s%N)
	for ((h = 1; h <= HOSTS; h++)); do
		ns=ngxat-bf$h-$$
		ovf0[$h]=$(overflows "$ns")
		at_a[$h]=0 at_wait[$h]=0
		ip netns exec "$ns" timeout "$DEADLINE" wrk -t1 -c"$CONNS" -d"${DEADLINE}s" -H "Connection: close" \
			"http://127.0.0.1:$((PORT + h))/" >"$d/h$h/wrk.out" 2>&1 &
		CLEANUP+=("kill $!")
		eval "LOAD$h=$!"
	done
	# About every half second: which hosts are still at 16, and whether inside a trial's arm A or not (each poll
	# counts the time since the one before).
	prev=$t0
	while ((fixed_n < HOSTS)); do
		now=$(date +%s%N)
		step=$(((now - prev) / 1000000))
		prev=$now
		(((now - t0) / 1000000000 >= DEADLINE)) && break
		in_trial=0
		for ((h = 1; h <= HOSTS; h++)); do
			[ -n "${fixed[$h]:-}" ] && continue
			api="curl -s --max-time 2 --unix-socket $d/h$h/api.sock http://localhost"
			if $api/v1/changes | jq -e '[.changes[] | select(.knob == "listen_queue" and .state == "kept")] | length > 0' \
				>/dev/null 2>&1; then
				fixed[$h]=$(((now - t0) / 1000000))
				ovf_at[$h]=$(($(overflows "ngxat-bf$h-$$") - ovf0[$h]))
				fixed_n=$((fixed_n + 1))
				eval "kill \$LOAD$h" 2>/dev/null
				continue
			fi
			st=$($api/v1/trials/current | jq -r '.state + " " + .arm' 2>/dev/null)
			case $st in
			"trial A" | "calibrating A") at_a[$h]=$((at_a[$h] + step)) ;;
			"trial B" | "calibrating B") ;;
			*) at_wait[$h]=$((at_wait[$h] + step)) ;;
			esac
			case $st in trial* | calibrating*) in_trial=$((in_trial + 1)) ;; esac
		done
		((in_trial > most)) && most=$in_trial
		sleep 0.5
	done
	local first=999999999 last=0 sum_ovf=0 sum_a=0 sum_wait=0
	for ((h = 1; h <= HOSTS; h++)); do
		if [ -z "${fixed[$h]:-}" ]; then
			echo "# $mode h$h: not fixed within ${DEADLINE} s"
			fixed[$h]=$((DEADLINE * 1000)) ovf_at[$h]=$(($(overflows "ngxat-bf$h-$$") - ovf0[$h]))
		fi
		printf '# %-11s h%d: fixed at %6.1f s, %7d overflows before, at 16 in arm A %5.1f s, waiting %5.1f s\n' "$mode" \
			"$h" "$(awk -v v="${fixed[$h]}" 'BEGIN {print v / 1000}')" "${ovf_at[$h]}" \
			"$(awk -v v="${at_a[$h]}" 'BEGIN {print v / 1000}')" "$(awk -v v="${at_wait[$h]}" 'BEGIN {print v / 1000}')"
		((fixed[$h] < first)) && first=${fixed[$h]}
		((fixed[$h] > last)) && last=${fixed[$h]}
		sum_ovf=$((sum_ovf + ovf_at[$h])) sum_a=$((sum_a + at_a[$h])) sum_wait=$((sum_wait + at_wait[$h]))
	done
	# The canary's slot (the waves' pool): each host's log says whether its slot came with the canary key.
	echo "# $mode: at most $most hosts in trial at once; $(cat "$d"/h*/agent.log | grep -c "(the pool's canary)") slots taken as the pool's canary"
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
	for ((h = 1; h <= HOSTS; h++)); do nginx_stop_dir "$d/h$h/nginx"; ip netns del "ngxat-bf$h-$$" 2>/dev/null; done
	echo "$mode $first $last $sum_ovf $sum_a $sum_wait" >>"$TMP/res"
}

nginx_stop_dir() { [ -s "$1/nginx.pid" ] && kill -QUIT "$(cat "$1/nginx.pid")" 2>/dev/null; sleep 0.5; }

echo "# $(nproc) CPUs, kernel $(uname -r); $HOSTS hosts, $CONNS closing clients each, somaxconn 16"
for mode in $MODES; do
	run "$mode"
done
echo
printf '%-12s | %-14s | %-14s | %-10s | %-13s | %-18s | %s\n' mode "one host (s)" "whole pool (s)" "pool/one" \
	"overflows" "host-s in arm A" "host-s waiting"
printf -- '-------------+----------------+----------------+------------+---------------+--------------------+----------------\n'
while read -r mode first last ovf a wait; do
	printf '%-12s | %-14.1f | %-14.1f | %-10s | %-13d | %-18.1f | %.1f\n' "$mode" "$(awk -v v="$first" 'BEGIN {print v / 1000}')" \
		"$(awk -v v="$last" 'BEGIN {print v / 1000}')" "$(awk -v a="$last" -v b="$first" 'BEGIN {printf "%.2fx", a / b}')" \
		"$ovf" "$(awk -v v="$a" 'BEGIN {print v / 1000}')" "$(awk -v v="$wait" 'BEGIN {print v / 1000}')"
done <"$TMP/res"
if grep -q '^independent ' "$TMP/res"; then
	read -r _ _ _ io _ _ < <(grep '^independent ' "$TMP/res")
	echo
	for m in pool waves; do
		grep -q "^$m " "$TMP/res" || continue
		read -r _ pf pl po _ _ < <(grep "^$m " "$TMP/res")
		echo "goal ($m: fixed in <= 1.5x one host's time, <= half the independent agents' overflows):" \
			"$(awk -v a="$pl" -v b="$pf" 'BEGIN {printf "%.2fx", a / b}') one host's time, overflows" \
			"$(awk -v a="$po" -v b="$io" 'BEGIN {printf "%.2fx", (b > 0 ? a / b : 0)}') the independent agents'"
	done
fi
