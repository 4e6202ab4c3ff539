#!/bin/bash
# Crash recovery of nginx's files, byte for byte (issue 22, R6), on a real nginx under light load. An operator's
# keepalive_requests 1000 -> 300 (set nowhere: the agent writes it in its own http.conf) is tried A/B and the agent
# is killed with SIGKILL while arm A is in force, then while arm B is; the same with worker_connections, which
# nginx.conf sets (the agent edits the operator's line), and the listen queue (backlog= on the operator's listen,
# with its state file); then each killed between its backups and its files (NGXAT_TEST_CRASH=backed-up). Restarted, the agent must put back what the journal says
# before READY=1 with every file byte for byte: nginx.conf, its http.conf and events.conf as they were, no backup
# left; and `ngxctl revert --all` afterwards changes nothing. Before, a kill in arm A left `keepalive_requests 1000;`
# in http.conf (recovery wrote the old value explicitly), and a later keepalive_requests in the operator's http {}
# then failed nginx -t as a duplicate.
TEST_EXCLUSIVE=1
TEST_NAME=crash-nginx
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
NS=ngxat-crash-ng-$$
PORT=18480

scn_netns "$NS" || fail "cannot create namespace $NS"
scn_nginx "$NS" $PORT || fail "nginx did not start"
cp "$INC/http.conf" "$TMP/http.conf.orig"
cp "$INC/events.conf" "$TMP/events.conf.orig"
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
scn_load "$NS" 600 -t1 -c8 "http://127.0.0.1:$PORT/"
ok "nginx in $NS under light load; the agent is ready"

# files_as_before WHEN: every file of nginx's byte for byte, no backup of the agent's left.
files_as_before() {
	cmp -s "$TMP/nginx.conf.orig" "$NGINX_CONF" || fail "$1: nginx.conf differs: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF")"
	cmp -s "$TMP/http.conf.orig" "$INC/http.conf" || fail "$1: http.conf differs: $(cat "$INC/http.conf")"
	cmp -s "$TMP/events.conf.orig" "$INC/events.conf" || fail "$1: events.conf differs: $(cat "$INC/events.conf")"
	[ -z "$(ls -A "$INC/directive-backup" 2>/dev/null)" ] || fail "$1: backups left: $(ls "$INC/directive-backup")"
}

# recovered ID WHAT: the agent started again after WHAT; at READY=1 the recovery must be complete: every file byte for
# byte, change ID reverted. Then waits for the end of the agent's cooldown (no trial before the next kill).
recovered() {
	local st
	scn_start_agent
	files_as_before "restarted after $2"
	st=$(change_state "$1")
	[ "$st" = reverted ] || fail "change $1 is $st after the restart ($2)"
	ok "$2: at READY=1 every file byte for byte, change $1 reverted"
	wait_for 30 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/trials/current | jq -e '.arm == \"none\"' >/dev/null" ||
		fail "still in a trial after the recovery: $(ctl trial)"
}

# try_change KNOB VALUE: an operator's KNOB=VALUE proposed and approved; prints its id.
try_change() {
	local id st
	id=$(ctl --json propose "$1=$2" --why "crash test" | jq -r '.id // empty')
	[ -n "$id" ] || fail "ngxctl propose $1=$2: $(ctl propose "$1=$2" 2>&1)"
	st=$(change_state "$id")
	[ "$st" = approved ] || [ "$st" = applying ] || [ "$st" = trial ] || ctl approve "$id" >/dev/null ||
		fail "approve $id ($st)"
	echo "$id"
}

# in_arm ID ARM CHECK: waits until change ID is in trial with ARM in force (CHECK, a shell condition on the files,
# says it is).
in_arm() {
	wait_for 120 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/trials/current |
		jq -e '.arm == \"$2\" and .change == $1' >/dev/null && $3" ||
		fail "arm $2 of change $1 never in force: $(ctl trial)"
}

# crash KNOB VALUE ARM CHECK_A CHECK_B: an operator's KNOB=VALUE tried A/B; SIGKILL while ARM is in force, after arm
# B has been (an arm A that puts back what B wrote); the agent started again.
crash() {
	local knob=$1 value=$2 arm=$3 id st
	id=$(try_change "$knob" "$value") || fail "$id"
	in_arm "$id" B "$5"
	[ "$arm" = B ] || in_arm "$id" A "$4"
	sleep 1
	kill -9 "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null
	recovered "$id" "$knob=$value killed in arm $arm"
}

# crash_window KNOB VALUE: the agent killed where an nginx change has written its backups and state but not its files
# yet (NGXAT_TEST_CRASH=backed-up: the moment R6 held with strace), at arm B of an operator's KNOB=VALUE; then started
# again.
crash_window() {
	local knob=$1 value=$2 id st
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null
	NGXAT_TEST_CRASH=backed-up scn_start_agent
	id=$(try_change "$knob" "$value") || fail "$id"
	wait_for 60 sh -c "! kill -0 $AGENT_PID 2>/dev/null" || fail "the agent did not reach the crash point"
	wait "$AGENT_PID" 2>/dev/null
	recovered "$id" "$knob=$value killed between its backups and its files"
}

KA="grep -q 'keepalive_requests 300;' $INC/http.conf"
NOKA="! grep -q keepalive_requests $INC/http.conf"
crash nginx.keepalive_requests 300 A "$NOKA" "$KA"
crash nginx.keepalive_requests 300 B "$NOKA" "$KA"
WC="grep -q 'worker_connections 2048;' $NGINX_CONF"
NOWC="grep -q 'worker_connections 4096;' $NGINX_CONF"
crash nginx.worker_connections 2048 A "$NOWC" "$WC"
crash nginx.worker_connections 2048 B "$NOWC" "$WC"
LQ="grep -q 'backlog=1022' $NGINX_CONF"
NOLQ="! grep -q 'backlog=' $NGINX_CONF"
crash listen_queue 1022 A "$NOLQ" "$LQ"
[ ! -e "$INC/listen-queue.state" ] && [ -z "$(ls -A "$INC/listen-backup" 2>/dev/null)" ] ||
	fail "listen-queue.state or listen backups left: $(cat "$INC/listen-queue.state" 2>&1)"
crash listen_queue 1022 B "$NOLQ" "$LQ"
[ ! -e "$INC/listen-queue.state" ] || fail "listen-queue.state left: $(cat "$INC/listen-queue.state")"
crash_window nginx.keepalive_requests 300
crash_window nginx.worker_connections 2048
crash_window listen_queue 1022
[ ! -e "$INC/listen-queue.state" ] || fail "listen-queue.state left: $(cat "$INC/listen-queue.state")"

ctl revert --all >/dev/null || fail "ngxctl revert --all"
# every write it started has ended: none applying
wait_for 30 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes |
	jq -e '[.changes[] | select(.state == \"applying\")] | length == 0' >/dev/null" ||
	fail "revert --all still applying: $(api /v1/changes | jq -c '[.changes[] | select(.state == "applying")]')"
files_as_before "after ngxctl revert --all"
ok "ngxctl revert --all afterwards: every file byte for byte"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
