#!/bin/bash
# The writer in a process of its own ([agent] writer = yes, issue 22), the real agent on a fake /proc/sys (--root):
# the agent forks one writer; a change is written by it, its original and the write journaled in its own files
# (0600, in its own 0700 directory, which it refuses open to others or behind a link) before the write; the writer
# holds every value to the policies it loaded itself (reloaded when the agent reloads and tells it, or on its own
# SIGHUP, and only then); a revert puts back an original below the policy's min (RESTORE); SIGTERM to both (as
# systemd stops the unit's processes) reverts the change in trial through the writer, then ends both; the writer
# killed ends the agent with status 1 and no revert, and the restart's recovery puts the trial's knob back.
TEST_NAME=writer
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_cmd jq curl sqlite3 pgrep
[ "$(id -u)" = 0 ] || skip "policy files must be owned by root: run as root"

NGXAT_TEST_WRITER=yes sysctl_fake_host
grep -qx "writer = yes" "$TMP/agent.conf" || fail "the configuration has no writer = yes"
WDIR=$TMP/store/writer
JOURNAL=$WDIR/originals
start_agent() { # the agent, and its one writer ($WRITER_PID)
	start_fake_agent
	WRITER_PID=$(pgrep -P "$AGENT_PID" -x ngx-autotune)
	[ -n "$WRITER_PID" ] && [ "$(wc -w <<<"$WRITER_PID")" = 1 ] || fail "not one writer under the agent: '$WRITER_PID'"
	CLEANUP+=("kill -9 $WRITER_PID")
}
change_state() { api "/v1/changes/$1" | jq -r .state; }

start_agent
grep -q "the writer runs as pid $WRITER_PID" "$TMP/agent.log" || fail "the agent does not say its writer's pid"
ok "the agent forks one writer ($WRITER_PID)"

# A change: written by the writer, after its original and the write were journaled in its own files, 0600, in its
# own directory (0700, beside the store, which the engine will own).
ctl propose --now net.core.somaxconn=4096 >/dev/null || fail "propose somaxconn 4096"
wait_for 5 sh -c "[ \$(cat $SOMAX) = 4096 ]" || fail "somaxconn is $(cat "$SOMAX"), want 4096"
[ "$(cat "$JOURNAL")" = "net.core.somaxconn 128" ] || fail "the writer's originals: $(cat "$JOURNAL" 2>&1)"
[ "$(cat "$JOURNAL.written")" = "net.core.somaxconn 4096" ] || fail "the writer's writes: $(cat "$JOURNAL.written" 2>&1)"
[ "$(stat -c %a "$JOURNAL")" = 600 ] && [ "$(stat -c %a "$JOURNAL.written")" = 600 ] ||
	fail "the writer's journals are not 0600"
[ "$(stat -c %a "$WDIR")" = 700 ] || fail "the writer's directory is $(stat -c %a "$WDIR"), not 0700"
wait_for 5 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/1 | jq -e '.state == \"kept\"'" ||
	fail "change 1 not kept: $(change_state 1)"
ok "a change goes through the writer: its original (128) and the write journaled by it, 0600 in a 0700 directory, then kept"

# The writer's own policies: a lowered one in a directory of its own, which agent.conf names and only the writer reads
# again (the SIGHUP is the writer's alone): the engine still allows 16384, the writer refuses it, and the change
# fails with the writer's why, the value untouched.
mkdir -p "$TMP/policies.low"
sed 's/^max = 65535$/max = 8192/' "$TMP/policies.d/listen.policy" >"$TMP/policies.low/listen.policy"
cp "$TMP/policies.d/softnet.policy" "$TMP/policies.low/"
grep -q "^max = 8192" "$TMP/policies.low/listen.policy" || fail "the policy override was not lowered"
cp "$TMP/agent.conf" "$TMP/agent.conf.full"
sed -i "s|^override_dir = .*|override_dir = $TMP/policies.low|" "$TMP/agent.conf"
kill -HUP "$WRITER_PID"
ctl propose --now net.core.somaxconn=16384 >/dev/null 2>&1
id=$(api "/v1/changes?knob=net.core.somaxconn" | jq '.changes[0].id')
wait_for 5 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/$id | jq -e '.state == \"failed\"'" ||
	fail "a value past the writer's policy: change $id is $(change_state "$id"), want failed"
api "/v1/changes/$id" | jq -r .detail | grep -q "above the maximum 8192" ||
	fail "the writer's refusal is not said: $(api "/v1/changes/$id" | jq -r .detail)"
[ "$(cat "$SOMAX")" = 4096 ] || fail "a value the writer refused was written: $(cat "$SOMAX")"
grep -q "writer: policies reloaded" "$TMP/agent.log" || fail "the writer did not say it reloaded its policies"
# The agent's reload tells the writer (a RELOAD on its socket, no signal): back to the shipped maximum, both allow
# 16384 again.
cp "$TMP/agent.conf.full" "$TMP/agent.conf"
n=$(grep -c "writer: policies reloaded" "$TMP/agent.log")
kill -HUP "$AGENT_PID"
wait_for 5 grep -q "configuration reloaded" "$TMP/agent.log" || fail "the agent did not reload"
ctl propose --now net.core.somaxconn=16384 >/dev/null || fail "propose 16384 after the reload"
wait_for 5 sh -c "[ \$(cat $SOMAX) = 16384 ]" || fail "somaxconn is $(cat "$SOMAX") after the reload, want 16384"
[ "$(grep -c "writer: policies reloaded (the agent's RELOAD)" "$TMP/agent.log")" -gt 0 ] &&
	[ "$(grep -c "writer: policies reloaded" "$TMP/agent.log")" -gt "$n" ] ||
	fail "the agent's reload did not reach the writer as a RELOAD: $(grep "writer: policies reloaded" "$TMP/agent.log")"
ok "the writer holds values to the policies it loaded itself, from the configuration it read again (a refusal said, nothing written); the agent's reload reaches it as a message"

# The revert to 128, below the policy's min of 4096: only the writer's RESTORE can put it there.
wait_for 5 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes?knob=net.core.somaxconn | jq -e '.changes[0].state == \"kept\"'" ||
	fail "the change to 16384 was not kept"
ctl revert --all >/dev/null || fail "ngxctl revert --all"
wait_for 5 sh -c "[ \$(cat $SOMAX) = 128 ]" || fail "somaxconn is $(cat "$SOMAX") after revert --all, want 128"
ok "revert --all puts back 128, below the policy's min, through the writer's RESTORE"

# SIGTERM to both, as systemd sends it to the unit's processes: the change in trial goes back through the writer,
# then both end, the agent with 0.
ctl propose --now net.core.netdev_max_backlog=2000 >/dev/null || fail "propose backlog"
wait_for 5 sh -c "[ \$(cat $BACKLOG) = 2000 ]" || fail "backlog not written"
kill -TERM "$AGENT_PID" "$WRITER_PID"
wait "$AGENT_PID"
rc=$?
[ $rc = 0 ] || fail "the agent exited $rc on SIGTERM"
[ "$(cat "$BACKLOG")" = 1000 ] || fail "SIGTERM did not revert the change in trial through the writer: $(cat "$BACKLOG")"
wait_for 5 sh -c "! kill -0 $WRITER_PID 2>/dev/null" || fail "the writer outlived the agent"
ok "SIGTERM to both: the change in trial reverted through the writer, then both ended (agent status 0)"

# The writer killed during a trial: the agent stops at once with status 1, says why, reverts nothing (it cannot);
# the restart's recovery puts the knob back.
start_agent
ctl propose --now net.core.netdev_max_backlog=2000 >/dev/null || fail "propose backlog again"
wait_for 5 sh -c "[ \$(cat $BACKLOG) = 2000 ]" || fail "backlog not written the second time"
kill -9 "$WRITER_PID"
wait_for 5 sh -c "! kill -0 $AGENT_PID 2>/dev/null" || fail "the agent runs on without its writer"
wait "$AGENT_PID"
rc=$?
[ $rc = 1 ] || fail "the agent exited $rc when its writer died, want 1"
grep -q "the writer (pid $WRITER_PID) is gone" "$TMP/agent.log" || fail "the agent does not say its writer is gone"
[ "$(cat "$BACKLOG")" = 2000 ] || fail "the backlog changed with no writer: $(cat "$BACKLOG")"
start_agent
[ "$(cat "$BACKLOG")" = 1000 ] || fail "after the restart the backlog is $(cat "$BACKLOG"), want 1000"
ok "the writer killed: the agent stops with status 1 and says why; the restart's recovery puts the trial's knob back"

# The writer's directory is the writer's alone: open to its group, or a link to another directory, the writer will
# not start and says why, and the agent's start fails with it (status 1, never ready), nothing written.
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
refused() { # refused WHY: the agent does not start, and its log says WHY
	local n
	n=$(wc -l <"$TMP/agent.log")
	timeout 10 "$AGENT" --foreground -c "$TMP/agent.conf" >>"$TMP/agent.log" 2>&1
	rc=$?
	[ $rc = 1 ] || fail "the agent exited $rc with $1, want 1"
	tail -n +$((n + 1)) "$TMP/agent.log" >"$TMP/refused.log"
	grep -q "writer: .*$1" "$TMP/refused.log" || fail "the writer did not say '$1': $(cat "$TMP/refused.log")"
	# the agent's start fails with it: never started, never ready
	grep -q "the writer ended before it started" "$TMP/refused.log" && ! grep -q " started: tick" "$TMP/refused.log" ||
		fail "the agent started without its writer: $(cat "$TMP/refused.log")"
}
chmod 770 "$WDIR"
refused "must be uid 0's and closed to group and others (it is uid 0's, mode 0770)"
chmod 700 "$WDIR"
mv "$WDIR" "$WDIR.real" && ln -s "$WDIR.real" "$WDIR"
refused "it must be a directory, not a link"
rm "$WDIR" && mv "$WDIR.real" "$WDIR"
[ "$(cat "$BACKLOG")" = 1000 ] && [ "$(cat "$SOMAX")" = 128 ] || fail "written while the writer was refused"
ok "the writer's directory open to its group, or a link: the writer refuses to start and says why, the agent's start fails (status 1)"
