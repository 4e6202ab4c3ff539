#!/bin/bash
# Guarded knobs end to end with the real agent and real drivers on a fake /proc/sys (--root): operator proposals
# validated by policy, the write-ahead journal, trial -> kept, revert, conflicts never overwritten, kill -9 between
# journal and write and during a trial (the original is back before READY=1, the journal says why), SIGTERM reverts
# only the change in trial, ngxctl revert --offline with the agent down (and refused while it runs), and policy
# files with a bad mode refused.
TEST_NAME=knobs
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_cmd jq curl sqlite3
[ "$(id -u)" = 0 ] || skip "policy files must be owned by root: run as root"

sysctl_fake_host
start_agent() { start_fake_agent "$@"; }
change_state() { api "/v1/changes/$1" | jq -r .state; }

start_agent
ctl knobs | grep -q "^net.core.somaxconn *ok *128" || fail "knobs: $(ctl knobs)"
ok "ngxctl knobs: somaxconn ok at 128; knobs this tree lacks are unsupported with a reason"
ctl knobs | grep -q "rmem_max: not on this kernel" || fail "no reason for an unsupported knob"

# Invariant 4: out of bounds, a step too large, a malformed value: refused, nothing written or journaled.
out=$(ctl propose --now net.core.somaxconn=99999999 2>&1) && fail "an out-of-bounds value was accepted"
grep -q "above the maximum 65535" <<<"$out" || fail "bounds message: $out"
out=$(ctl propose --now net.core.somaxconn=12x 2>&1) && fail "a malformed value was accepted"
[ "$(cat "$SOMAX")" = 128 ] || fail "a refused value was written"
[ "$(api /v1/changes | jq '.changes | length')" = 0 ] || fail "a refused proposal was journaled"
code=$(curl -s -o "$TMP/body" -w '%{http_code}' --unix-socket "$TMP/api.sock" -d '{"knob":"net.core.somaxconn","value":"4096","evil":1}' http://localhost/v1/proposals)
[ "$code" = 400 ] && grep -q "unknown field 'evil'" "$TMP/body" || fail "unknown field: $code $(cat "$TMP/body")"
ok "values outside bounds, malformed values and unknown fields refused; nothing written or journaled"

# A proposal: journaled, written, verified, in trial, then kept after the settle time.
ctl knobs | grep -q "^net.core.somaxconn *ok *128" || fail "knobs before: $(ctl knobs | grep somaxconn)"
ctl propose --now net.core.somaxconn=4096 --why "listen overflows" | grep -q "change 1:" || fail "propose failed"
# The answer comes once the change is journaled and its write queued (the writer, a process of its own, writes it):
# it lands within a tick or two.
wait_for 5 sh -c "[ \"\$(cat '$SOMAX')\" = 4096 ]" || fail "somaxconn not written: $(cat "$SOMAX")"
# Reports read a knob once per tick; the agent's own write must not leave the old value showing in that tick.
ctl knobs | grep -q "^net.core.somaxconn *ok *4096 " ||
	fail "knobs right after the write: $(ctl knobs | grep somaxconn)"
[ "$(change_state 1)" = trial ] || fail "change 1 is $(change_state 1), want trial"
out=$(ctl propose --now net.core.netdev_max_backlog=2000 2>&1) && fail "a second change while one is in trial"
grep -q "one change on the host at a time" <<<"$out" || fail "invariant 1 message: $out"
wait_for 5 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/1 | jq -e '.state == \"kept\"'" ||
	fail "change 1 not kept after its settle time: $(change_state 1)"
ok "propose: journaled, written, read back, one trial at a time, kept after settling"

# A conflict: someone else writes the knob; it is frozen, reported, never written back.
echo 1024 >"$SOMAX"
wait_for 5 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/knobs | jq -e '.knobs[] | select(.name == \"net.core.somaxconn\") | .state == \"conflict\"'" ||
	fail "no conflict after a write behind the agent's back"
wait_ticks 3 || fail "the agent stopped ticking" # ticks in which it could write its value back
[ "$(cat "$SOMAX")" = 1024 ] || fail "the agent overwrote the operator's value"
out=$(ctl propose --now net.core.somaxconn=8192 2>&1) && fail "a conflicting knob was changed"
api "/v1/audit?knob=net.core.somaxconn" | jq -e '.audit[] | select(.action == "conflict" and (.detail | test("reads 1024")))' \
	>/dev/null || fail "no conflict in the audit trail"
# A revert never writes over someone else's value either.
curl -s -X POST --unix-socket "$TMP/api.sock" -d '{}' http://localhost/v1/revert >/dev/null
wait_ticks 3 || fail "the agent stopped ticking" # ticks in which the revert could run
[ "$(cat "$SOMAX")" = 1024 ] || fail "revert-all wrote over a knob in conflict"
out=$(ctl revert 1 2>&1) && fail "revert of a change on a conflicting knob was accepted"
grep -q "clear the conflict first" <<<"$out" || fail "revert refusal: $out"
ctl clear-conflict net.core.somaxconn | grep -q "conflict cleared" || fail "ngxctl clear-conflict"
out=$(ctl clear-conflict net.core.somaxconn 2>&1) && fail "clearing a knob not in conflict succeeded"
grep -q "not in conflict" <<<"$out" || fail "second clear: $out"
ctl knobs | grep -q "^net.core.somaxconn *ok *1024 *1024" || fail "after clearing: $(ctl knobs | grep somaxconn)"
[ "$(change_state 1)" = reverted ] || fail "after clear-conflict change 1 is $(change_state 1), want reverted (superseded)"
out=$(ctl revert 1 2>&1) && fail "a superseded change was reverted over the operator's value"
[ "$(cat "$SOMAX")" = 1024 ] || fail "the operator's value was overwritten"
ok "a value changed behind the agent's back: conflict, frozen, audited, never overwritten; reverts skip it; cleared by an operator, whose value becomes the original"

# kill -9 during a trial: the original is back before READY=1, and the journal says why.
ctl propose --now net.core.netdev_max_backlog=2000 >/dev/null || fail "propose backlog"
[ "$(cat "$BACKLOG")" = 2000 ] || fail "backlog not written"
id=$(api "/v1/changes?knob=net.core.netdev_max_backlog" | jq '.changes[0].id')
kill -9 $AGENT_PID
wait $AGENT_PID 2>/dev/null
start_agent
[ "$(cat "$BACKLOG")" = 1000 ] || fail "after kill -9 in trial the backlog is $(cat "$BACKLOG"), want 1000"
[ "$(change_state "$id")" = reverted ] || fail "change $id is $(change_state "$id") after restart"
api /v1/changes | jq -e '.changes[] | select(.why == "rolled back after restart")' >/dev/null ||
	fail "the journal does not say 'rolled back after restart'"
ok "kill -9 during a trial: original back before READY=1, journal says 'rolled back after restart'"

# kill -9 between the journal row and the write.
kill $AGENT_PID
wait $AGENT_PID 2>/dev/null
start_agent NGXAT_TEST_CRASH=journaled
ctl propose --now net.core.netdev_max_backlog=4000 >/dev/null 2>&1
wait_for 5 sh -c "! kill -0 $AGENT_PID 2>/dev/null" || fail "the crash hook did not fire"
[ "$(cat "$BACKLOG")" = 1000 ] || fail "written although the agent died before the write"
start_agent
[ "$(cat "$BACKLOG")" = 1000 ] || fail "after restart the backlog is $(cat "$BACKLOG")"
id=$(api "/v1/changes?knob=net.core.netdev_max_backlog" | jq '[.changes[] | select(.kind == "change")][0].id')
[ "$(change_state "$id")" = reverted ] || fail "the journaled change is $(change_state "$id"), want reverted"
ok "kill -9 between journal and write: nothing left written, the row closed as reverted"

# SIGTERM (invariant 6): the change in trial goes back; the kept one stays.
ctl propose --now net.core.netdev_max_backlog=2000 >/dev/null || fail "propose backlog again"
kill -TERM $AGENT_PID
wait $AGENT_PID
[ $? = 0 ] || fail "agent did not exit 0 on SIGTERM"
[ "$(cat "$BACKLOG")" = 1000 ] || fail "SIGTERM did not revert the change in trial"
[ "$(cat "$SOMAX")" = 1024 ] || fail "SIGTERM touched a knob that was not in trial"
ok "SIGTERM reverts only the change in trial"

# Offline revert (invariant 7), with the agent stopped; refused while it runs.
start_agent
ctl propose --now net.core.somaxconn=4096 >/dev/null || fail "propose somaxconn"
sid=$(api "/v1/changes?knob=net.core.somaxconn" | jq '.changes[0].id')
wait_for 5 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/$sid | jq -e '.state == \"kept\"'" ||
	fail "change $sid not kept"
out=$(NGXAT_AGENT_BIN=$AGENT "$NGXCTL" -c "$TMP/agent.conf" revert --offline "$sid" 2>&1) &&
	fail "offline revert ran while the agent runs"
grep -q "agent is running" <<<"$out" || fail "offline refusal: $out"
kill -TERM $AGENT_PID
wait $AGENT_PID 2>/dev/null
[ "$(cat "$SOMAX")" = 4096 ] || fail "a kept change did not survive SIGTERM"
NGXAT_AGENT_BIN=$AGENT "$NGXCTL" -c "$TMP/agent.conf" revert --offline --all >"$TMP/offline.out" 2>&1 ||
	fail "offline revert failed: $(cat "$TMP/offline.out")"
[ "$(cat "$SOMAX")" = 1024 ] || fail "offline revert left somaxconn at $(cat "$SOMAX"), want the original 1024"
sqlite3 "$TMP/store/ngx-autotune.db" "SELECT state FROM changes WHERE id = $sid" | grep -qx reverted ||
	fail "change $sid not marked reverted by the offline revert"
sqlite3 "$TMP/store/ngx-autotune.db" "SELECT kind, why, state FROM changes ORDER BY id DESC LIMIT 1" |
	grep -qx "revert|operator revert of every change|kept" || fail "offline revert not journaled"
ok "ngxctl revert --offline: refused while the agent runs; with it stopped, journaled and done"

# Invariant 7 after a policy is removed: a kept sysctl change can still be reverted.
start_agent
ctl propose --now net.core.somaxconn=8192 >/dev/null || fail "propose somaxconn 8192"
oid=$(api "/v1/changes?knob=net.core.somaxconn" | jq '.changes[0].id')
wait_for 5 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/$oid | jq -e '.state == \"kept\"'" ||
	fail "change $oid not kept"
kill -TERM $AGENT_PID
wait $AGENT_PID 2>/dev/null
cp "$TMP/policies.d/listen.policy" "$TMP/listen.policy.full"
# The override keeps only the listen_queue knob: net.core.somaxconn has no policy any more.
awk '/^\[knob /{keep = ($0 == "[knob listen_queue]")} keep' "$TMP/listen.policy.full" >"$TMP/policies.d/listen.policy"
start_agent
ctl knobs | grep -q "^net.core.somaxconn" && fail "somaxconn still has a policy"
ctl revert --all >/dev/null || fail "revert --all after the policy was removed"
wait_for 5 sh -c "[ \$(cat $SOMAX) = 1024 ]" || fail "somaxconn is $(cat "$SOMAX") after revert --all, want 1024"
[ "$(change_state "$oid")" = reverted ] || fail "change $oid is $(change_state "$oid")"
kill -TERM $AGENT_PID
wait $AGENT_PID 2>/dev/null
cp "$TMP/listen.policy.full" "$TMP/policies.d/listen.policy"
ok "a kept sysctl change is still reverted after its policy was removed (invariant 7)"

# Dry run: journaled as such, never written, and not re-applied by a later real start.
sed -i 's/^tick_interval = 200ms/tick_interval = 200ms\ndry_run = yes/' "$TMP/agent.conf"
start_agent
ctl propose --now net.core.netdev_max_backlog=2000 >/dev/null || fail "dry-run propose"
[ "$(cat "$BACKLOG")" = 1000 ] || fail "dry run wrote the knob"
ctl knobs | grep -q "^net.core.netdev_max_backlog *ok *2000" || fail "dry run does not show its value"
api "/v1/changes?knob=net.core.netdev_max_backlog" | jq -e '.changes[0].why | startswith("[dry run]")' >/dev/null ||
	fail "dry-run change not marked in the journal"
kill -TERM $AGENT_PID
wait $AGENT_PID 2>/dev/null
sed -i '/^dry_run = yes$/d' "$TMP/agent.conf"
start_agent
wait_ticks 2 || fail "the agent stopped ticking" # kept values are re-applied before READY=1; and ticks after it
[ "$(cat "$BACKLOG")" = 1000 ] || fail "a real start applied a dry-run value"
kill -TERM $AGENT_PID
wait $AGENT_PID 2>/dev/null
ok "dry run: journaled as such, never written, never re-applied by a real start"

# Policy files decide what is written as root: a group-writable one is refused.
chmod g+w "$TMP/policies.d/listen.policy"
out=$("$AGENT" -n -c "$TMP/agent.conf" 2>&1) && fail "-n accepted a group-writable policy file"
grep -q "listen.policy" <<<"$out" || fail "-n message: $out"
chmod g-w "$TMP/policies.d/listen.policy"
"$AGENT" -n -c "$TMP/agent.conf" | grep -qx "configuration OK" || fail "-n after fixing the mode"
ok "a group-writable policy file is refused by -n and at start"
echo "# $checks checks passed"
