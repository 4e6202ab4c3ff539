#!/bin/bash
# One worker does most of the work, on a real nginx under real load: accept_mutex on and multi_accept on in
# nginx.conf's events block (nginx's default until 1.11.3, and both still in many tuning guides; with
# multi_accept the worker holding the mutex takes every waiting connection at once, so each reload's burst of
# reconnects lands on one worker: with accept_mutex alone a CI run's A blocks came out even in 3 of 8 pairs and
# the trial was inconclusive), 2 workers, 400 clients on long-lived connections
# (keepalive_requests 100000, as behind a load balancer that keeps its connections): the worker holding the mutex
# takes most of them when they arrive together and keeps them (measured: 3913 against 1437 ms of CPU in 6 s; with
# nginx's keepalive_requests 1000 the clients reconnect every few seconds and the share evens out in a minute).
# The agent proposes reuseport on the listen line (accept_mutex off alone evened the workers less: 1.11 against
# 1.36, inconclusive); the trial must show the workers' share evener. Kept: the live sockets show one per worker,
# and ngxctl revert brings one socket and the operator's nginx.conf back byte for byte. On 2 CPUs shared with wrk
# an even share may cost CPU per request (a guardrail reverts it) or the gain may not be shown: then the rollback
# must be as whole, and wrk, measuring both with the agent stopped, must not serve 10% more with reuseport.
TEST_EXCLUSIVE=1
TEST_NAME=scn-rp
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip ss
NS=ngxat-real-rp-$$
PORT=18480

sockets() { ip netns exec "$NS" ss -Hltn "sport = :$PORT" | wc -l; }
one_socket() { [ "$(sockets)" = 1 ]; }
# worker_share SECONDS: the busiest worker's CPU over the mean worker's, in hundredths, over SECONDS
worker_share() {
	local m ws w a b max=0 sum=0 n=0
	m=$(cat "$NGINX_DIR/nginx.pid")
	ws=$(cat "/proc/$m/task/$m/children")
	declare -A a0
	for w in $ws; do a0[$w]=$(awk '{ print $1 }' "/proc/$w/schedstat"); done
	sleep "$1"
	for w in $ws; do
		b=$(awk '{ print $1 }' "/proc/$w/schedstat" 2>/dev/null) || continue
		a=$(((b - ${a0[$w]}) / 1000000))
		[ $a -gt $max ] && max=$a
		sum=$((sum + a)) n=$((n + 1))
	done
	# idle workers say nothing about their share
	[ $sum -ge $((200 * $1)) ] || { echo 0; return; }
	echo $((max * n * 100 / sum))
}

scn_netns "$NS" || fail "cannot create namespace $NS"
SCN_EVENTS="accept_mutex on; multi_accept on;" SCN_HTTP="keepalive_requests 100000;" scn_nginx "$NS" $PORT || fail "nginx did not start"
[ "$(sockets)" = 1 ] || fail "$(sockets) listening sockets before, not 1"
SCN_POLICIES="listen nginx" SCN_ONLY=1
scn_agent_conf "$TMP/agent.conf" $PORT
KNOB=listen_reuseport FROM=off TO=on
scn_start_agent
ok "nginx in $NS with accept_mutex and multi_accept on in nginx.conf, one listening socket; the agent is ready"

scn_load "$NS" 600 -t2 -c400 "http://127.0.0.1:$PORT/"
sleep 2
before=$(worker_share 4)
echo "# busiest worker / mean before: $before/100"
[ "$before" -ge 125 ] || fail "the workers share the load alike ($before/100): nothing to find"

scn_proposal 120 "$KNOB" "$FROM" "$TO" "busiest of 2 workers" "nginx.worker*"
id=$PROP_ID
ok "one worker does most of the work: proposal $id $KNOB $FROM -> $TO with its evidence"

scn_trial_end 300 "$id"
st=$ST detail=$DETAIL ev=$EV
[ "$(jq -r .objective <<<"$ev")" = nginx.worker_imbalance ] || fail "change $id ended $st; objective: $detail"
echo "# pairs (A/B busiest over mean): $(jq -r '[(.pairs_detail // [])[] | "\(.a * 100 | floor)/\(.b * 100 | floor)"] | join(" ")' <<<"$ev")"
# Whatever the verdict, reuseport must not have made the share less even: the objective's mean lies on the
# better side (kept needs more: the judge shows the gain). A CI run's A blocks came out even after 2 of 8 pairs
# (199 199 107 109 106 102 101 129 against 101-103): fell 19% [2.3%, 34%], a gain of 5% not shown, reverted.
jq -e '.mean > 0' <<<"$ev" >/dev/null || fail "change $id ended $st, the workers' share not evener: $detail"
no_backups() { [ -z "$(ls -A "$INC"/listen-param-backup "$INC"/directive-backup 2>/dev/null)" ]; }
restored() { # the operator's nginx.conf byte for byte, one listening socket, no backup left
	wait_for 30 cmp -s "$TMP/nginx.conf.orig" "$NGINX_CONF" ||
		fail "nginx.conf not back byte for byte: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF")"
	wait_for 15 one_socket || fail "$(sockets) listening sockets after the revert, not 1"
	# the backup goes once the new generation runs the restored file (the agent's next poll of the reload)
	wait_for 10 no_backups || fail "backups left: $(ls -R "$INC")"
}
case $st in
kept)
	ok "kept on the workers' share: $(jq -r .reason <<<"$ev")"
	kill -0 "$LOAD_PID" 2>/dev/null || fail "the load ended before the after-state was measured"
	after=$(worker_share 4)
	echo "# busiest worker / mean after: $after/100 (before: $before/100); listening sockets: $(sockets)"
	[ "$after" -gt 0 ] && [ "$after" -lt 115 ] || fail "the workers still share unevenly: $after/100"
	sed "s/^		listen 127.0.0.1:$PORT ;$/		listen 127.0.0.1:$PORT reuseport ;/" "$TMP/nginx.conf.orig" |
		cmp -s - "$NGINX_CONF" ||
		fail "nginx.conf is not the operator's with reuseport added: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF")"
	[ "$(sockets)" = 2 ] || fail "$(sockets) listening sockets with reuseport, not one per worker"
	ok "after: reuseport on the operator's listen line, 2 listening sockets, workers at $after/100"
	kill "$LOAD_PID" 2>/dev/null
	ctl revert "$id" >/dev/null || fail "ngxctl revert $id"
	restored
	ok "ngxctl revert: nginx.conf is the operator's again, byte for byte, with one listening socket"
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID" || fail "the agent did not exit 0"
	;;
reverted | aborted)
	# On 2 CPUs shared with wrk an even share gains little and may cost CPU per request (a CI run: busy CPU per
	# request rose 9.3% [-0.5%, +20%], not shown within the 10% margin: reverted; one shown worse aborts), and
	# the A blocks may even out by themselves (the gain not shown, or the pairs or halves disagreeing:
	# inconclusive, reverted). Either way the rollback must be whole, and wrk must not serve clearly more with
	# reuseport. An outage, overflows or dropped connections in B are not among the expected reasons.
	jq -e '.reason | startswith("guardrail ") or test("a gain of [0-9.]+% not shown") or
		startswith("sign test disagrees") or startswith("the halves of the trial disagree")' <<<"$ev" >/dev/null ||
		fail "change $id $st, neither by a guardrail nor for a gain not shown: $detail"
	kill "$LOAD_PID" 2>/dev/null
	restored
	ok "$st ($(jq -r .reason <<<"$ev")): nginx.conf is the operator's again, one socket"
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID" || fail "the agent did not exit 0"
	# wrk_rps ARM SOCKETS: the line "ARM requests/s median_us" into $TMP/wrk: 5 s of wrk after nginx reloaded into
	# SOCKETS listening sockets, and a new client's median time (client_median) beside it, as the agent's synthetic
	# client asks during a trial (not through a command substitution: a fail in it would end only the subshell)
	wrk_rps() {
		local cm rps
		kill -HUP "$(cat "$NGINX_DIR/nginx.pid")"
		wait_for 15 sh -c "[ \$(ip netns exec '$NS' ss -Hltn 'sport = :$PORT' | wc -l) = $2 ]" ||
			fail "$(sockets) listening sockets after the reload, not $2"
		sleep 1
		(sleep 1 && client_median "$NS" "http://127.0.0.1:$PORT/" 3 >"$TMP/median") &
		cm=$!
		rps=$(ip netns exec "$NS" timeout 20 wrk -t2 -c400 -d5s "http://127.0.0.1:$PORT/" |
			awk '/^Requests\/sec:/ { printf "%d\n", $2 }')
		wait "$cm"
		echo "$1 ${rps:-none} $(cat "$TMP/median")" >>"$TMP/wrk"
	}
	: >"$TMP/wrk"
	for i in 1 2 3; do
		sed "s/^		listen 127.0.0.1:$PORT ;$/		listen 127.0.0.1:$PORT reuseport ;/" "$TMP/nginx.conf.orig" \
			>"$NGINX_CONF"
		wrk_rps on 2
		cp "$TMP/nginx.conf.orig" "$NGINX_CONF"
		wrk_rps off 1
	done
	# every run whole: requests served, a median of requests made (client_median's -1: none)
	awk 'NF != 3 || $2 !~ /^[0-9]+$/ || $2 == 0 || $3 !~ /^[0-9]+$/ { bad = 1 } END { exit bad || NR != 6 }' \
		"$TMP/wrk" || fail "wrk or the client measured nothing: $(cat "$TMP/wrk")"
	mapfile -t on < <(awk '$1 == "on" { print $2 }' "$TMP/wrk")
	mapfile -t off < <(awk '$1 == "off" { print $2 }' "$TMP/wrk")
	mapfile -t on_ms < <(awk '$1 == "on" { print $3 }' "$TMP/wrk")
	mapfile -t off_ms < <(awk '$1 == "off" { print $3 }' "$TMP/wrk")
	med() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
	m_on=$(med "${on[@]}") m_off=$(med "${off[@]}") c_on=$(med "${on_ms[@]}") c_off=$(med "${off_ms[@]}")
	echo "# wrk: reuseport: ${on[*]} (median $m_on); without: ${off[*]} (median $m_off)"
	echo "# a new client beside it: reuseport: ${on_ms[*]} us (median $c_on); without: ${off_ms[*]} us (median $c_off)"
	if [ "$m_on" -ge $((m_off * 11 / 10)) ]; then
		# More served to wrk's 400 kept connections, and new clients slower (a CI run: wrk 55910 against 47808,
		# the synthetic client's median up 59% [40%, 81%]): the one idle worker of the uneven share accepted the
		# new connections at once. A rollback on that latency stands where the test's new client sees it too.
		jq -e '.reason | startswith("guardrail client.p50_ms")' <<<"$ev" >/dev/null &&
			[ "$c_on" -gt $((c_off * 11 / 10)) ] ||
			fail "$st, but wrk serves $m_on with reuseport against $m_off (a new client: $c_on us against $c_off)"
		ok "wrk serves more with reuseport ($m_on against $m_off), and a new client waits longer, as the guardrail said: $c_on us against $c_off"
	else
		ok "the rollback matches wrk: $m_on requests/s with reuseport against $m_off without"
	fi
	;;
*) fail "change $id ended $st: $detail" ;;
esac
echo "# $checks checks passed"
