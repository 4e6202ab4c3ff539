#!/bin/bash
# A conflict on a real nginx's namespace: an operator's proposal (net.core.somaxconn 4096 -> 8192 in nginx's
# namespace) is under its A/B trial when someone runs `sysctl -w net.core.somaxconn=2048` there by hand. The agent
# must freeze the knob as a conflict, end the trial (aborted), never write the knob again (not when the next arm
# is due, not on revert, not on a new proposal, not after a restart), and show it in ngxctl knobs and
# ngxctl status until an operator clears it.
TEST_EXCLUSIVE=1
TEST_NAME=scn-conflict
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
NS=ngxat-real-cf-$$
PORT=18450
somaxconn() { ip netns exec "$NS" cat /proc/sys/net/core/somaxconn; }

scn_netns "$NS" net.core.somaxconn=4096 || fail "cannot create namespace $NS"
scn_nginx "$NS" $PORT || fail "nginx did not start"
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
host_before=$(cat /proc/sys/net/core/somaxconn)
scn_load "$NS" 120 -t2 -c50 "http://127.0.0.1:$PORT/"

out=$(ctl propose net.core.somaxconn=8192 --why "conflict scenario") || fail "ngxctl propose: $out"
id=$(api /v1/changes | jq '[.changes[] | select(.knob == "net.core.somaxconn")][0].id')
wait_for 30 sh -c "[ \$(ip netns exec $NS cat /proc/sys/net/core/somaxconn) = 8192 ]" ||
	fail "8192 never in force: $(ctl trial)"
st=$(change_state "$id")
[ "$st" = trial ] || fail "change $id is $st, not in trial"
[ "$(cat /proc/sys/net/core/somaxconn)" = "$host_before" ] || fail "the host's somaxconn was written"
ok "operator proposal $id somaxconn 4096 -> 8192 in trial, written in nginx's namespace (the host's untouched)"

ip netns exec "$NS" sysctl -qw net.core.somaxconn=2048
wait_for 10 sh -c "[ \"\$(curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/$id | jq -r .state)\" = aborted ]" ||
	fail "the trial did not end: change $id is $(change_state "$id")"
api "/v1/changes/$id" | jq -e '.detail | test("conflict")' >/dev/null ||
	fail "the change does not say why: $(api "/v1/changes/$id" | jq -r .detail)"
ctl knobs | grep -E "^net.core.somaxconn +conflict +2048" >/dev/null || fail "ngxctl knobs: $(ctl knobs | grep somaxconn)"
ctl status | grep -q "; conflict: net.core.somaxconn (reads 2048; the agent last wrote 8192)" || fail "ngxctl status does not show it: $(ctl status)"
api /v1/audit | jq -e '[.audit[] | select(.action == "conflict" and .knob == "net.core.somaxconn")] | length >= 1' \
	>/dev/null || fail "no audit row"
ok "sysctl -w 2048 by hand mid-trial: trial aborted, knob frozen, in ngxctl knobs, ngxctl status and the audit"

# Four blocks of the trial would have come and gone: the value stays the operator's.
for _ in $(seq 1 24); do
	[ "$(somaxconn)" = 2048 ] || fail "somaxconn overwritten: $(somaxconn)"
	sleep 1
done
out=$(ctl revert "$id" 2>&1)
sleep 1
[ "$(somaxconn)" = 2048 ] || fail "revert overwrote the conflict: $(somaxconn) ($out)"
out=$(ctl propose net.core.somaxconn=16384 --now 2>&1) && fail "a proposal on a frozen knob was accepted: $out"
grep -q "conflict" <<<"$out" || fail "refusal does not say conflict: $out"
[ "$(somaxconn)" = 2048 ] || fail "somaxconn overwritten: $(somaxconn)"
ok "24 s later, after ngxctl revert and a refused proposal ($out): still 2048"

kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
[ "$(somaxconn)" = 2048 ] || fail "SIGTERM overwrote the conflict: $(somaxconn)"
scn_start_agent
[ "$(somaxconn)" = 2048 ] || fail "the restart overwrote the conflict: $(somaxconn)"
ctl knobs | grep -E "^net.core.somaxconn +conflict" >/dev/null || fail "conflict lost at restart: $(ctl knobs | grep somaxconn)"
ok "SIGTERM and a restart leave 2048; still a conflict after the restart"

ctl clear-conflict net.core.somaxconn >/dev/null || fail "ngxctl clear-conflict"
ctl knobs | grep -E "^net.core.somaxconn +ok +2048 +2048" >/dev/null || fail "after clear: $(ctl knobs | grep somaxconn)"
ctl status | grep -q "; conflict:" && fail "ngxctl status still shows a conflict: $(ctl status)"
ok "ngxctl clear-conflict: ok, 2048 is the original now"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
