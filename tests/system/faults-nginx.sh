#!/bin/bash
# Faults around nginx, with the real agent and a real nginx in a network namespace this test creates (nothing of
# the host's is changed): an nginx -t that crashes and one that hangs (a wrapper script is the configured nginx
# binary), an operator's revert (--all, and of the change) while the change's nginx -t is held on a fifo (issue 23:
# "revert started: 0 knob write(s)" and the change then kept; about 2 s), kill -9 of the agent at random points of a change of nginx.keepalive_requests (journaled, tested,
# reloaded, in trial), and a stub_status that answers garbage or too slowly. Each time: nginx's configuration ends
# as the operator wrote it (byte for byte) unless a change is rightly in force, READY=1 comes only when that holds,
# the journal has no change left in applying, and status and the log say what failed. Set FAULTS_SEED to replay
# the kill points.
TEST_EXCLUSIVE=1
TEST_NAME=faults-nginx
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx jq curl ip python3
NS=ngxat-faults-$$
PORT=18470
SLOW_PORT=18471
SEED=${FAULTS_SEED:-$$}
RANDOM=$SEED
echo "# seed $SEED (FAULTS_SEED=$SEED replays the kill points)"

scn_netns "$NS" || fail "cannot create namespace $NS"
SCN_SERVER='location = /garbage { return 200 "Active connections: lots\nno numbers here\n"; }' scn_nginx "$NS" $PORT ||
	fail "nginx did not start"
scn_agent_conf "$TMP/agent.conf" $PORT
# The wrapper is nginx unless $TMP/mode says to crash or hang on -t; the agent's [nginx] timeout bounds the hang.
cat >"$TMP/nginx-wrap" <<EOT
#!/bin/sh
mode=\$(cat $TMP/mode 2>/dev/null)
for a; do
	if [ "\$a" = -t ]; then
		[ "\$mode" = crash ] && kill -SEGV \$\$
		[ "\$mode" = hang ] && exec sleep 57.$$
		[ "\$mode" = gate ] && read -r go <$TMP/gate
	fi
done
exec nginx "\$@"
EOT
chmod 755 "$TMP/nginx-wrap"
sed -i "s|^timeout = .*|timeout = 2s\nbinary = $TMP/nginx-wrap|" "$TMP/agent.conf"
sed 's/^settle = .*/settle = 1h/' "$srcdir/policies/nginx.policy" >"$TMP/policies.d/nginx.policy"
: >"$TMP/agent.log"
workers() { pgrep -P "$(cat "$NGINX_DIR/nginx.pid")" | sort | tr '\n' ' '; }
cp -a "$INC" "$TMP/inc.orig"
# nginx's files as the operator (and scn_nginx) wrote them: nginx.conf and the agent's include files.
same_conf() { cmp -s "$TMP/nginx.conf.orig" "$NGINX_CONF" && diff -r "$TMP/inc.orig" "$INC" >/dev/null; }
stuck_rows() { api "/v1/changes?limit=100" | jq '[.changes[] | select(.state == "applying")] | length'; }
knob_live() { api /v1/knobs | jq -r '.knobs[] | select(.name == "nginx.keepalive_requests") | .value'; }
scn_start_agent
[ "$(knob_live)" = 1000 ] || fail "nginx.keepalive_requests reads $(knob_live), want 1000"

# ---- nginx -t crashes, then hangs: the change fails, nginx.conf back, no reload ---------------------------------
for mode in crash hang; do
	what=$([ $mode = crash ] && echo crashes || echo hangs)
	echo "$mode" >"$TMP/mode"
	before=$(workers)
	t0=$SECONDS
	out=$(ctl propose --now nginx.keepalive_requests=2000 2>&1)
	id=$(api "/v1/changes?knob=nginx.keepalive_requests" | jq '[.changes[] | select(.kind == "change")][0].id')
	wait_for 15 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/$id | jq -e '.state == \"failed\"'" ||
		fail "$mode nginx -t: change $id is $(change_state "$id"), want failed ($out)"
	[ $((SECONDS - t0)) -lt 12 ] || fail "$mode nginx -t took $((SECONDS - t0)) s to give up"
	same_conf || fail "$mode nginx -t: nginx's files are not the operator's: $(diff -r "$TMP/inc.orig" "$INC")"
	[ "$(workers)" = "$before" ] || fail "$mode nginx -t: nginx was reloaded"
	api "/v1/changes/$id" | jq -e '.detail | length > 0' >/dev/null || fail "$mode: the journal does not say why"
	api "/v1/audit?knob=nginx.keepalive_requests" | jq -e --argjson id "$id" \
		'.audit[] | select(.change_id == $id and .outcome == "failed")' >/dev/null || fail "$mode: not audited as failed"
	kill -0 "$AGENT_PID" || fail "the agent died on a $mode nginx -t"
	[ "$(stuck_rows)" = 0 ] || fail "$mode: rows left in applying"
	ok "an nginx -t that $what: change $id failed and audited, nginx.conf byte for byte, no reload, the agent on"
done
wait_for 5 sh -c "! pgrep -f '^sleep 57.$$\$'" || fail "the hung nginx -t is still running"
rm -f "$TMP/mode"

# ---- a revert asked while a change of nginx is being applied (its nginx -t held on a fifo) ----------------------
# The operator's revert covers a change whose nginx -t and reload are still under way: it is put back once that
# write is done, and the answer says so. Costs about 2 s (four nginx -t and reloads).
mkfifo "$TMP/gate"
for how in all one; do
	echo gate >"$TMP/mode"
	ctl propose --now nginx.keepalive_requests=2000 >/dev/null || fail "revert $how: propose"
	id=$(api "/v1/changes?knob=nginx.keepalive_requests" | jq '[.changes[] | select(.kind == "change")][0].id')
	[ "$(change_state "$id")" = applying ] || fail "revert $how: change $id is $(change_state "$id"), want applying"
	if [ $how = all ]; then out=$(ctl revert --all 2>&1); else out=$(ctl revert "$id" 2>&1); fi ||
		fail "revert $how during the apply: $out"
	rm -f "$TMP/mode"
	timeout 10 sh -c "echo go >'$TMP/gate'" || fail "revert $how: nginx -t never waited at the gate"
	sed 's/^/# /' <<<"$out"
	grep -q "1 knob write" <<<"$out" && grep -q "change $id" <<<"$out" && grep -q "pending" <<<"$out" ||
		fail "revert $how during the apply does not say what it does: $out"
	wait_for 15 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/changes/$id | jq -e '.state == \"reverted\"'" ||
		fail "revert $how during the apply: change $id is $(change_state "$id"), want reverted ($out)"
	wait_for 5 same_conf || fail "revert $how: nginx's files are not the operator's: $(diff -r "$TMP/inc.orig" "$INC")"
	[ "$(knob_live)" = 1000 ] || fail "revert $how: nginx.keepalive_requests reads $(knob_live), want 1000"
	[ "$(stuck_rows)" = 0 ] || fail "revert $how: rows left in applying"
	ok "ngxctl revert $([ $how = all ] && echo --all || echo ID) while change $id's nginx -t and reload are under way: put back once done, said so ($(head -1 <<<"$out"))"
done

# ---- kill -9 at random points of a change (journal, nginx -t, reload, trial) -----------------------------------
for round in 1 2 3; do
	ms=$((RANDOM % 1500))
	ctl propose --now nginx.keepalive_requests=2000 >/dev/null 2>&1 &
	ctl_pid=$!
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
	kill -9 "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null
	wait "$ctl_pid"
	scn_start_agent
	# READY=1 was sent: recovery must have put nginx back already (an nginx write completes in later ticks).
	# The operator's nginx.conf byte for byte; the agent's include file may now name the original value itself.
	cmp -s "$TMP/nginx.conf.orig" "$NGINX_CONF" || fail "round $round (kill after ${ms} ms): at READY=1 nginx.conf is not the operator's"
	grep -q "keepalive_requests 2000" "$INC/http.conf" && fail "round $round (kill after ${ms} ms): at READY=1 the trial value is in http.conf"
	wait_for 10 sh -c "[ \"\$(curl -s --unix-socket $TMP/api.sock http://localhost/v1/knobs |
		jq -r '.knobs[] | select(.name == \"nginx.keepalive_requests\") | .value')\" = 1000 ]" ||
		fail "round $round: nginx runs with keepalive_requests $(knob_live), want 1000"
	[ "$(stuck_rows)" = 0 ] || fail "round $round: rows left in applying after recovery"
	api "/v1/changes?limit=100" | jq -e '[.changes[] | select(.state == "trial")] | length == 0' >/dev/null ||
		fail "round $round: a change still in trial after recovery"
	ok "kill -9 ${ms} ms into a change of nginx (round $round): at READY=1 nginx.conf is the operator's, live 1000, no row left open"
done

# ---- stub_status answers garbage, then too slowly: said, not believed, the loop goes on -------------------------
set_stub() {
	local n
	n=$(grep -c "configuration reloaded" "$TMP/agent.log")
	sed -i "s|^stub_status_url = .*|stub_status_url = $1|" "$TMP/agent.conf"
	kill -HUP "$AGENT_PID"
	wait_for 10 sh -c "[ \$(grep -c 'configuration reloaded' '$TMP/agent.log') -gt $n ]" || fail "no reload"
}
probe() { api /v1/status | jq -c '.probes[] | select(.name == "stub_status")'; }
set_stub "http://127.0.0.1:$PORT/garbage"
wait_for 10 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/status |
	jq -e '.probes[] | select(.name == \"stub_status\") | .ok == false'" || fail "garbage stub_status taken as ok: $(probe)"
probe | jq -e '.error | test("not a stub_status page")' >/dev/null || fail "no reason for the garbage: $(probe)"
wait_ticks 3 || fail "the agent stopped ticking on a garbage stub_status"
ok "a stub_status that answers garbage: the probe fails with a reason ($(probe | jq -r .error)), ticks go on"

# A server that accepts and answers after 3 s (the agent's stub_status timeout is below a tick).
ip netns exec "$NS" timeout 60 python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $SLOW_PORT)); s.listen(16)
while True:
    c, _ = s.accept(); time.sleep(3)
    try: c.sendall(b'HTTP/1.0 200 OK\r\n\r\nActive connections: 1\n'); c.close()
    except OSError: pass
" &
CLEANUP+=("kill $!")
set_stub "http://127.0.0.1:$SLOW_PORT/nginx_status"
wait_for 15 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/status |
	jq -e '.probes[] | select(.name == \"stub_status\") | .ok == false'" || fail "slow stub_status taken as ok: $(probe)"
c0=$(api /v1/status | jq .tick.count)
sleep 3
c1=$(api /v1/status | jq .tick.count)
msg=$(probe | jq -r .error)
[ $((c1 - c0)) -ge 4 ] || fail "ticks stalled behind a slow stub_status: $c0 -> $c1 in 3 s at 500 ms"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
cmp -s "$TMP/nginx.conf.orig" "$NGINX_CONF" || fail "after SIGTERM nginx.conf is not the operator's"
grep -q "keepalive_requests 2000" "$INC/http.conf" && fail "after SIGTERM the trial value is in http.conf"
ok "a stub_status that answers after 3 s: the probe fails ($msg), ticks go on ($c0 -> $c1 in 3 s)"
echo "# $checks checks passed"
