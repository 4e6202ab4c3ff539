#!/bin/bash
# Faults of the store (issue 15, items 3, 5, 6, 7), with the real agent and real drivers on a fake /proc/sys
# (--root in the config), the store on a small tmpfs this test mounts (and unmounts at exit):
#   - a trial in place, kill -9, the file system full at restart: the original is back before READY=1, the log and
#     status say degraded, and the rows are journaled once space returns; SIGTERM then leaves the host right;
#   - full while running: the log says degraded once and writable once, never the opposite of the truth; acts made
#     while degraded (a refused proposal, pause, resume) reach the audit trail after recovery;
#   - the store emptied (0 bytes), truncated, or gone mid-trial: the agent refuses to start, naming the file and
#     the ways out, never starts afresh; --revert all puts the knobs back from the originals file;
#   - the originals file with a malformed line, or gone with the store (issue 22, R9): --revert all puts back what the
#     good lines hold and exits 1 naming the damaged line; with no record at all it exits 1 naming the knobs as they
#     read now, and makes no store; the originals file immutable: a proposal is answered 500, not 400. About 5 s.
# The host's own sysctls are never touched: every knob is a file of the fake tree.
TEST_EXCLUSIVE=1
TEST_NAME=faults-store
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd jq curl sqlite3 mount umount chattr

R=$TMP/root
make_fake_root "$R" 4242
echo 4242 >"$TMP/nginx.pid"
mkdir -p "$R/proc/sys/net/core" "$TMP/store" "$TMP/policies.d"
SOMAX=$R/proc/sys/net/core/somaxconn
BACKLOG=$R/proc/sys/net/core/netdev_max_backlog
echo 128 >"$SOMAX"
echo 1000 >"$BACKLOG"
# A proposal of softnet stays in trial (settle 1 h); one of listen is kept after 1 s.
sed 's/^settle = .*/settle = 1s/' "$srcdir/policies/listen.policy" >"$TMP/policies.d/listen.policy"
sed 's/^settle = .*/settle = 1h/' "$srcdir/policies/softnet.policy" >"$TMP/policies.d/softnet.policy"
fake_root_conf "$TMP/agent.conf" "$R" ""
DB=$TMP/store/ngx-autotune.db
mount -t tmpfs -o size=8m,mode=0750 ngxat-faults "$TMP/store" || skip_allowed "cannot mount a tmpfs here"
CLEANUP+=("umount -l $TMP/store")

ctl() { "$NGXCTL" -s "$TMP/api.sock" "$@"; }
AGENT_PID=
# start_agent: the agent in the background with a notify socket of its own; does not wait.
start_agent() {
	rm -f "$TMP/notify.log" "$TMP/notify.sock"
	"$NOTIFY_LISTEN" "$TMP/notify.sock" 120 >"$TMP/notify.log" &
	CLEANUP+=("kill $!")
	wait_for 5 test -S "$TMP/notify.sock" || fail "notify-listen did not start"
	: >"$TMP/agent.log"
	NOTIFY_SOCKET="$TMP/notify.sock" "$AGENT" --foreground -c "$TMP/agent.conf" >>"$TMP/agent.log" 2>&1 &
	AGENT_PID=$!
	CLEANUP+=("kill -9 $AGENT_PID")
}
change_state() { api "/v1/changes/$1" | jq -r .state; }
# fill: the store's file system full (the agent's files keep what they have).
fill() {
	dd if=/dev/zero of="$TMP/store/fill" bs=64k 2>/dev/null
	dd if=/dev/zero of="$TMP/store/fill2" bs=512 2>/dev/null
	[ "$(df --output=avail "$TMP/store" | tail -1)" -lt 8 ] || fail "the tmpfs is not full"
}
unfill() { rm -f "$TMP/store/fill" "$TMP/store/fill2"; }
count() { grep -c "$1" "$TMP/agent.log"; }

# ---- 1. a trial in place, kill -9, the store full at restart (item 3) ------------------------------------------
start_agent
wait_for 10 grep -q READY=1 "$TMP/notify.log" || fail "no READY=1"
id=$(ctl propose --now net.core.netdev_max_backlog=2000 | sed -n 's/^change \([0-9]*\):.*/\1/p')
wait_for 5 sh -c "[ \"\$(cat '$BACKLOG')\" = 2000 ]" # written by the writer after the answer
[ -n "$id" ] && [ "$(cat "$BACKLOG")" = 2000 ] && [ "$(change_state "$id")" = trial ] || fail "no trial in place"
grep -qx "net.core.netdev_max_backlog 1000" "$DB.originals" ||
	fail "the original was not copied to the originals file before the write: $(cat "$DB.originals" 2>&1)"
kill -9 $AGENT_PID
wait $AGENT_PID 2>/dev/null
fill
start_agent
wait_for 15 grep -q READY=1 "$TMP/notify.log" || fail "no READY=1 with the store full"
# READY=1 is honest only if the trial value is gone by then: nothing writes the knob after READY but the agent.
[ "$(cat "$BACKLOG")" = 1000 ] || fail "READY=1 with the trial value $(cat "$BACKLOG") still live (want 1000)"
kill -0 $AGENT_PID || fail "the agent died"
wait_for 10 grep -q "agent degraded" "$TMP/agent.log" || fail "the log does not say degraded"
api /v1/status | jq -e '.store.degraded == true and .state == "degraded"' >/dev/null ||
	fail "status does not say degraded: $(api /v1/status | jq -c '{state, store}')"
grep -q "STATUS=degraded" "$TMP/notify.log" || fail "sd_notify STATUS= does not say degraded: $(tail -3 "$TMP/notify.log")"
out=$(ctl propose --now net.core.netdev_max_backlog=3000 2>&1) && fail "a change was made with the store full"
[ "$(cat "$BACKLOG")" = 1000 ] || fail "written with the store full"
[ "$(count "writable again")" = 0 ] || fail "the log says writable while the store is full"
ok "store full at restart with a trial in place: the original is back before READY=1, degraded in log, status and STATUS=, no change made"

unfill
wait_for 30 sh -c "[ \"\$(curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/$id | jq -r .state)\" = reverted ]" ||
	fail "space returned, but change $id is $(change_state "$id"), want reverted"
api "/v1/audit?knob=net.core.netdev_max_backlog" | jq -e '.audit[] | select(.action == "recover")' >/dev/null ||
	fail "the recovery made while the store was full is not in the audit trail"
wait_for 10 grep -q "writable again" "$TMP/agent.log" || fail "the log does not say writable again"
[ "$(count "agent degraded")" = 1 ] && [ "$(count "writable again")" = 1 ] ||
	fail "degraded logged $(count "agent degraded") times, writable $(count "writable again") times (want 1 and 1)"
kill -TERM $AGENT_PID
wait $AGENT_PID || fail "the agent did not exit 0 on SIGTERM"
[ "$(cat "$BACKLOG")" = 1000 ] || fail "after SIGTERM the backlog is $(cat "$BACKLOG")"
ok "space back: the rollback journaled (change reverted, recover audited), writable logged once; SIGTERM leaves the host right"

# ---- 2. full while running: the log tells the truth, acts while degraded are audited (items 5, 6) --------------
start_agent
wait_for 10 grep -q READY=1 "$TMP/notify.log" || fail "no READY=1"
fill
# Writes may still fit in pages the files hold; the next that needs a new one fails.
for i in $(seq 1 50); do
	grep -q "agent degraded" "$TMP/agent.log" && break
	ctl propose net.core.somaxconn=$((256 + i)) >/dev/null 2>&1
	sleep 0.2
done
wait_for 10 grep -q "agent degraded" "$TMP/agent.log" || fail "the store is full but the log does not say degraded"
out=$(ctl propose --now net.core.somaxconn=4096 2>&1) && fail "a change was made while degraded"
ctl pause >/dev/null 2>&1 || true # refused or not, the act is audited
ctl resume >/dev/null 2>&1 || true
[ "$(cat "$SOMAX")" = 128 ] || fail "somaxconn written while degraded"
wait_ticks 3 || fail "the agent stopped ticking"
[ "$(count "writable again")" = 0 ] ||
	fail "the log says 'writable again' while the store is full ($(count "writable again") times)"
[ "$(count "agent degraded")" = 1 ] || fail "degraded logged $(count "agent degraded") times, want 1"
ok "full while running: degraded logged once, never 'writable again' while writes fail; nothing written"
unfill
wait_for 30 grep -q "writable again" "$TMP/agent.log" || fail "space back, but the log does not say so"
for act in pause resume; do
	api "/v1/audit?limit=200" | jq -e --arg a "$act" '.audit[] | select(.action == $a or (.detail | test("/v1/" + $a)))' \
		>/dev/null || fail "the $act made while degraded is not in the audit trail: $(api '/v1/audit?limit=10' | jq -c '[.audit[] | {action, outcome, detail}]')"
done
api "/v1/audit?limit=200" | jq -e '.audit[] | select((.detail | test("somaxconn.*4096")) and .outcome != "200")' >/dev/null ||
	fail "the refused proposal is not in the audit trail"
ok "acts made while degraded (a refused proposal, pause, resume) reach the audit trail after recovery"

# ---- 3. a lost store: emptied, truncated, gone mid-trial (item 7) ---------------------------------------------
ctl propose --now net.core.somaxconn=4096 >/dev/null || fail "propose somaxconn"
sid=$(api "/v1/changes?knob=net.core.somaxconn" | jq '[.changes[] | select(.kind == "change")][0].id')
wait_for 10 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/$sid | jq -e '.state == \"kept\"'" ||
	fail "change $sid not kept"
kill -TERM $AGENT_PID
wait $AGENT_PID
cp "$DB" "$TMP/good.db"
[ "$(cat "$SOMAX")" = 4096 ] || fail "the kept value did not survive SIGTERM"

: >"$DB"
out=$("$AGENT" --foreground -c "$TMP/agent.conf" 2>&1) && fail "the agent started on an empty store"
grep -q "$DB: the store is empty" <<<"$out" && grep -q -- "--revert all" <<<"$out" ||
	fail "no clear error for an empty store: $out"
[ "$(stat -c %s "$DB")" = 0 ] || fail "the empty store was written over"
cp "$TMP/good.db" "$DB"
truncate -s 8192 "$DB"
out=$("$AGENT" --foreground -c "$TMP/agent.conf" 2>&1) && fail "the agent started on a truncated store"
grep -q "$DB" <<<"$out" && grep -q -- "--revert all" <<<"$out" || fail "no clear error for a truncated store: $out"
: >"$DB"
"$AGENT" -c "$TMP/agent.conf" --revert all >"$TMP/revert.out" 2>&1 || fail "revert --all of a lost store: $(cat "$TMP/revert.out")"
[ "$(cat "$SOMAX")" = 128 ] || fail "revert --all of a lost store left somaxconn at $(cat "$SOMAX"), want 128"
ok "an emptied or truncated store: refused with the file named and the ways out; --revert all puts back 128 from the originals"

# Gone mid-trial: the database deleted under a running agent, then kill -9.
rm -f "$DB" "$DB-wal" "$DB-shm" "$DB.originals"
start_agent
wait_for 10 grep -q READY=1 "$TMP/notify.log" || fail "no READY=1 on a new store"
ctl propose --now net.core.netdev_max_backlog=2000 >/dev/null || fail "propose backlog"
[ "$(cat "$BACKLOG")" = 2000 ] || fail "backlog not written"
rm -f "$DB" "$DB-wal" "$DB-shm"
kill -9 $AGENT_PID
wait $AGENT_PID 2>/dev/null
start_agent
wait $AGENT_PID && fail "the agent started afresh on a store that is gone"
grep -q "the store is gone" "$TMP/agent.log" || fail "no clear error for a store gone: $(tail -3 "$TMP/agent.log")"
grep -q READY=1 "$TMP/notify.log" && fail "READY=1 from an agent that could not recover"
"$AGENT" -c "$TMP/agent.conf" --revert all >"$TMP/revert.out" 2>&1 || fail "revert --all: $(cat "$TMP/revert.out")"
[ "$(cat "$BACKLOG")" = 1000 ] || fail "revert --all left the backlog at $(cat "$BACKLOG"), want 1000"
ok "the store gone mid-trial: no fresh start, no READY=1; --revert all puts the original back from the originals file"

# ---- 4. the originals file damaged or missing (issue 22, R9) --------------------------------------------------
# One malformed line made --revert all of a lost store put nothing back; with the store and the originals both
# gone it said "nothing to put back" and exited 0 while a changed sysctl stayed changed. Now the good lines are
# used and the damaged ones are an error naming them; no record at all is an error naming the knobs as they read.
rm -f "$DB" "$DB-wal" "$DB-shm" "$DB.originals"
start_agent
wait_for 10 grep -q READY=1 "$TMP/notify.log" || fail "no READY=1 on a new store"
# The originals file immutable (chattr +i): its EPERM is the server's failure, 500, not a refused request's 400.
: >"$DB.originals"
chattr +i "$DB.originals" || fail "chattr +i"
CLEANUP+=("chattr -i $DB.originals")
code=$(curl -s -o "$TMP/body" -w '%{http_code}' --unix-socket "$TMP/api.sock" \
	-d '{"knob":"net.core.somaxconn","value":"4096","now":true}' http://localhost/v1/proposals)
chattr -i "$DB.originals"
[ "$code" = 500 ] && grep -q "cannot keep a copy of net.core.somaxconn's original value: Operation not permitted" "$TMP/body" ||
	fail "a proposal with the originals file immutable: $code $(cat "$TMP/body")"
[ "$(cat "$SOMAX")" = 128 ] || fail "somaxconn written without a copy of its original"
ok "the originals file cannot be written (immutable): the proposal is answered 500 (not 400), nothing written"
ctl propose --now net.core.somaxconn=4096 >/dev/null || fail "propose somaxconn"
sid=$(api "/v1/changes?knob=net.core.somaxconn" | jq '[.changes[] | select(.kind == "change")][0].id')
wait_for 10 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/$sid | jq -e '.state == \"kept\"'" ||
	fail "change $sid not kept"
ctl propose --now net.core.netdev_max_backlog=2000 >/dev/null || fail "propose backlog"
wait_for 5 sh -c "[ \"\$(cat '$BACKLOG')\" = 2000 ]" # written by the writer after the answer
[ "$(cat "$SOMAX")" = 4096 ] && [ "$(cat "$BACKLOG")" = 2000 ] || fail "somaxconn $(cat "$SOMAX"), backlog $(cat "$BACKLOG")"
kill -9 $AGENT_PID
wait $AGENT_PID 2>/dev/null
[ "$(wc -l <"$DB.originals")" = 2 ] || fail "originals: $(cat "$DB.originals")"
sed -i '1a net.core.rmem_max' "$DB.originals" # a line without its value, between the two good ones
: >"$DB"
"$AGENT" -c "$TMP/agent.conf" --revert all >"$TMP/revert.out" 2>&1 &&
	fail "--revert all with a damaged originals file exited 0: $(cat "$TMP/revert.out")"
[ "$(cat "$SOMAX")" = 128 ] && [ "$(cat "$BACKLOG")" = 1000 ] ||
	fail "--revert all with a damaged originals file left somaxconn $(cat "$SOMAX"), backlog $(cat "$BACKLOG"): $(cat "$TMP/revert.out")"
grep -q "$DB.originals:2: .*net.core.rmem_max" "$TMP/revert.out" ||
	fail "--revert all does not name the damaged line: $(cat "$TMP/revert.out")"
echo 4096 >"$SOMAX" # as the agent left it, and then its store and originals were deleted
rm -f "$DB" "$DB-wal" "$DB-shm" "$DB.originals"
rc=0
"$AGENT" -c "$TMP/agent.conf" --revert all >"$TMP/revert.out" 2>&1 || rc=$?
[ "$rc" = 4 ] || fail "--revert all with no store and no originals exited $rc, not 4: $(cat "$TMP/revert.out")"
grep -q "nothing to put back" "$TMP/revert.out" && fail "--revert all claims nothing to put back: $(cat "$TMP/revert.out")"
grep -q "net.core.somaxconn=4096" "$TMP/revert.out" ||
	fail "--revert all with no record does not name the knobs as they read: $(cat "$TMP/revert.out")"
[ -e "$DB" ] && fail "--revert all made a new, empty store (a second run would find nothing to put back)"
ok "originals damaged: the good lines put back, the damaged one named, exit 1; no store and no originals: exit 4 naming the knobs as they read (somaxconn=4096), no store made"
echo "# $checks checks passed"
