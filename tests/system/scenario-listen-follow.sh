#!/bin/bash
# Follow-through on the listen queue, on a real nginx under real load. somaxconn 4096 in nginx's namespace and
# nginx's default backlog (511), 2500 concurrent short connections, and workers that stop for 300 ms of every
# second (as on slow disk reads; scn_stall): the accept queue overflows, 1301/s at 511, 576-776/s at 1022, 0-1/s at
# 2044 (without the stalls the overflows came and went from run to run, 0 to 479/s; at 2000 connections 1022 left
# 132-399/s, and 0 in one run's 3 s after its verdict: nothing left to follow through on). The agent raises the listen
# queue and keeps it; while overflows are still sustained under the same load, its next proposal must be the same
# knob again, from the value it kept (before: 511 -> 1022 kept, 14-19 overflows/s left, and the next proposal was
# tcp_fin_timeout), until no overflow is sustained. Before the judge knew the overflows before the trial, one such
# run aborted 511 -> 1022 on "435 new overflows in B, none in A".
TEST_EXCLUSIVE=1
TEST_NAME=scn-follow
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip ss
NS=ngxat-real-ft-$$
PORT=18470

scn_netns "$NS" net.core.somaxconn=4096 || fail "cannot create namespace $NS"
scn_nginx "$NS" $PORT || fail "nginx did not start"
[ "$(live_backlog "$NS" $PORT)" = 511 ] || fail "live backlog $(live_backlog "$NS" $PORT), not 511"
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
ok "nginx in $NS with somaxconn 4096 and its default backlog 511; the agent is ready"

scn_load "$NS" 600 -t2 -c2500 -H "Connection: close" "http://127.0.0.1:$PORT/"
scn_stall 600 300
sleep 3
before=$(overflow_rate "$NS" 5)
echo "# listen overflows before: $before/s"
[ "$before" -ge 100 ] || fail "the load makes only $before overflows/s: nothing to find"

n=0 last=511
while [ $n -lt 4 ]; do
	prop=$(wait_proposal 120 listen_queue) || break
	id=$(jq .id <<<"$prop")
	from=$(jq -r .from <<<"$prop")
	to=$(jq -r .to <<<"$prop")
	[ "$from" = "$last" ] || fail "proposal $id starts from $from, not the kept $last: $prop"
	ctl approve "$id" >/dev/null || fail "ngxctl approve"
	st=$(wait_end 400 "$id") || fail "change $id still $st"
	n=$((n + 1))
	left=$(overflow_rate "$NS" 3)
	echo "# change $id: listen_queue $from -> $to $st; live $(live_backlog "$NS" $PORT); overflows now $left/s"
	echo "#   $(api "/v1/changes/$id" | jq -r '.detail | sub("^[^{]*"; "") | fromjson? // {} | .reason // empty')"
	[ "$st" = kept ] || break
	last=$to
	[ "$left" -gt 0 ] || break
	# Followed through past 1022 with the overflows down to a tenth: what the test asks. A further trial (a few
	# overflows a second left at 2044, tried at 4088 and reverted: 130 s more in one CI run) is the agent's own.
	[ "$to" -le 1022 ] || [ "$left" -gt $((before / 10 + 1)) ] || break
	other=$(api /v1/proposals | jq -r '[.proposals[] | select(.knob != "listen_queue") | .knob] | join(" ")')
	[ -z "$other" ] || fail "after keeping $to, with $left overflows/s left, the agent proposed $other"
done
kill -0 "$LOAD_PID" 2>/dev/null || fail "the load ended before the after-state was measured"
if { [ "${st:-}" = aborted ] || [ "${st:-}" = reverted ]; } && [ "$last" -le 1022 ]; then
	# Where the load keeps the workers busy between the stalls too (a CI machine: 1763 overflows/s at 511, the
	# same at 1022, the median of those let in up 117%), a queue twice as long holds every client twice as long
	# and refuses almost as many: the judge's ledger then weighs the rise over the few drops saved, and stops.
	# The verdict must match what the test measures itself, the agent stopped: per 1000 connections, the
	# overflows saved (1000 ms each) against the rise of a new client's mean time (its answers within a second: the
	# others met an overflow, which the kernel counts), both queues in turn, twice. The mean, not the median: a
	# longer queue holds a tail of clients longer, and the agent's ledger counts their waits (tcp.accept_wait), as it
	# should; a CI run's median rose 44 -> 91 ms where the agent's ledger weighed a rise twice that.
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID" || fail "the agent did not exit 0"
	backlog_to() {
		sed "s/^		listen 127.0.0.1:$PORT ;$/		listen 127.0.0.1:$PORT backlog=$1;/" "$TMP/nginx.conf.orig" \
			>"$NGINX_CONF"
		kill -HUP "$(cat "$NGINX_DIR/nginx.pid")"
		wait_for 15 sh -c "[ \"\$(ip netns exec '$NS' ss -Hltn 'sport = :$PORT' | awk '{ print \$3 }')\" = $1 ]" ||
			fail "live backlog $(live_backlog "$NS" $PORT) after the reload, not $1"
		sleep 2
	}
	# measure_at ARM BACKLOG: the line "ARM overflows connections median_us mean_us" of 6 s at BACKLOG, into
	# $TMP/queues (not through a command substitution: a fail in it would end only the subshell)
	measure_at() {
		local o0 p0 times
		backlog_to "$2"
		o0=$(ns_netstat "$NS" ListenOverflows) p0=$(ns_snmp "$NS" PassiveOpens)
		times=$(client_times "$NS" "http://127.0.0.1:$PORT/" 6)
		echo "$1 $(($(ns_netstat "$NS" ListenOverflows) - o0)) $(($(ns_snmp "$NS" PassiveOpens) - p0)) $times" \
			>>"$TMP/queues"
	}
	: >"$TMP/queues"
	for r in 1 2; do
		measure_at a "$last"
		measure_at b "$to"
	done
	kill -0 "$LOAD_PID" 2>/dev/null || fail "the load ended while the queues were measured"
	# every line whole: counts, connections made, a median and a mean of requests made (client_times' -1: none)
	awk 'NF != 5 || $2 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ || $3 == 0 || $4 !~ /^[0-9]+$/ || $5 !~ /^[0-9]+$/ { bad = 1 }
		END { exit bad || NR != 4 }' "$TMP/queues" || fail "the queues were not measured: $(cat "$TMP/queues")"
	m=$(cat "$TMP/queues")
	read -r ov_a ov_b med_a med_b mean_a mean_b saved cost <<<"$(awk '
		{ ov[$1] += $2; n[$1] += $3; med[$1] += $4 / 2; mean[$1] += $5 / 2 }
		END { a = n["a"] ? ov["a"] * 1000 / n["a"] : 0; b = n["b"] ? ov["b"] * 1000 / n["b"] : 0
			printf "%.1f %.1f %.1f %.1f %.1f %.1f %d %d\n", a, b, med["a"] / 1000, med["b"] / 1000,
				mean["a"] / 1000, mean["b"] / 1000, (a - b) * 1000, mean["b"] - mean["a"] }' <<<"$m")"
	echo "# measured, agent stopped: overflows per 1000 connections $ov_a at $last, $ov_b at $to; a new client's median $med_a ms, $med_b ms; its mean $mean_a ms, $mean_b ms"
	echo "#   per 1000 connections: $saved ms saved by fewer overflows against $cost ms of a slower mean"
	# Wrong only where the longer queue is clearly worth it to clients: most overflows gone, and the time saved
	# more than twice what the mean's rise cost.
	awk -v a="$ov_a" -v b="$ov_b" -v s="$saved" -v c="$cost" 'BEGIN { exit !(b * 2 < a && s > 0 && s > 2 * (c > 0 ? c : 0)) }' &&
		fail "change $id $st, but $to is clearly worth it: overflows $ov_a -> $ov_b per 1000, the mean $mean_a -> $mean_b ms"
	ok "the listen queue stopped at $last ($st at $to), as measured: $saved ms saved per 1000 connections against $cost ms"
	echo "# $checks checks passed"
	exit 0
fi
[ "$last" -gt 1022 ] || fail "the listen queue did not follow through past 1022 (at $last)"
after=$(overflow_rate "$NS" 5)
echo "# listen overflows after: $after/s (before: $before/s), listen queue $last"
# At 2044 a slow machine still meets a few bursts (CI: 0/s in the 3 s after the verdict, 74/s in the next 5 s,
# against 1288/s before): what this test is for is the follow-through (the same knob again, from the kept value),
# shown by the queue past 1022; the overflows left must be a tenth of those before at most.
[ "$after" -le $((before / 10 + 1)) ] || fail "overflows left: $after/s (before: $before/s) at listen queue $last"
ok "the listen queue followed through to $last over $n trials; overflows $after/s (from $before/s)"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
