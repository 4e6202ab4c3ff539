#!/bin/bash
# Crash in the middle of a trial, on a real nginx under real load. The listen-queue scenario's trial (somaxconn 16,
# listen_queue 16 -> 511) is cut by kill -9 while arm B is in force: nginx runs with backlog=511 and somaxconn 511
# in its namespace. Restarted, the agent must put the original back before it tells systemd READY=1 (live queue
# 16, somaxconn 16, nginx.conf byte for byte, no listen-queue state left), and the journal must say the change was
# rolled back after restart.
TEST_EXCLUSIVE=1
TEST_NAME=scn-crash
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip ss
NS=ngxat-real-crash-$$
PORT=18420
somaxconn() { ip netns exec "$NS" cat /proc/sys/net/core/somaxconn; }

scn_netns "$NS" net.core.somaxconn=16 || fail "cannot create namespace $NS"
scn_nginx "$NS" $PORT || fail "nginx did not start"
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
scn_load "$NS" 240 -t2 -c1000 -H "Connection: close" "http://127.0.0.1:$PORT/"
prop=$(wait_proposal 90 listen_queue) || fail "no listen_queue proposal: $(ctl trial)"
id=$(jq .id <<<"$prop")
to=$(jq -r .to <<<"$prop")
ctl approve "$id" | grep -q approved || fail "ngxctl approve"
wait_for 60 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/trials/current | jq -e '.arm == \"B\"' &&
	[ \"\$(ip netns exec $NS ss -Hltn 'sport = :$PORT' | awk '{print \$3}')\" = $to ]" ||
	fail "arm B never in force: $(ctl trial)"
[ "$(change_state "$id")" = trial ] || fail "change $id is $(change_state "$id"), not in trial"
ok "trial of listen_queue 16 -> $to under load, arm B in force (live $to, somaxconn $(somaxconn))"

kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
[ "$(live_backlog "$NS" $PORT)" = "$to" ] || fail "the value changed without the agent: $(live_backlog "$NS" $PORT)"
[ -e "$INC/listen-queue.state" ] || fail "no listen-queue.state left by the crash"
ok "kill -9 mid-trial: nginx still runs with $to, the state file records the original"

scn_start_agent
# READY=1 has been sent: the recovery must be complete already.
live=$(live_backlog "$NS" $PORT) so=$(somaxconn)
[ "$live" = 16 ] && [ "$so" = 16 ] || fail "at READY=1: live queue $live, somaxconn $so (want 16 and 16)"
cmp -s "$TMP/nginx.conf.orig" "$NGINX_CONF" || fail "at READY=1 nginx.conf is not the original: $(grep listen "$NGINX_CONF")"
[ ! -e "$INC/listen-queue.state" ] && [ ! -e "$INC/listen-backup" ] || fail "state or backups left after recovery"
ok "restarted: before READY=1 the live queue is 16 again, somaxconn 16, nginx.conf byte for byte, no state"

[ "$(change_state "$id")" = reverted ] || fail "change $id is $(change_state "$id") after restart"
api /v1/changes | jq -e --argjson id "$id" '[.changes[] | select(.kind == "revert" and .reverts == $id
	and (.why | test("rolled back after restart")) and .state == "kept")] | length == 1' >/dev/null ||
	fail "no revert row 'rolled back after restart': $(api /v1/changes | jq -c '.changes[] | {id,kind,reverts,state,why}')"
ctl history | grep -q "rolled back after restart" || fail "ngxctl history: $(ctl history)"
grep -q "recovery: 1 knob write" "$TMP/agent.log" || fail "the log does not announce the recovery"
ok "the journal says: change $id reverted, rolled back after restart"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
