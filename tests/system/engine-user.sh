#!/bin/bash
# The engine without root (issue 22, [agent] user): the real agent against a real nginx in its own network namespace,
# the engine dropped to a user the test makes, the writer root. Checked:
#   1. the engine's credentials as the kernel has them: the user's uid and gid in every slot, its own group only (no
#      adm: nginx's logs come opened from the writer), no capability in any set, no_new_privs; the writer uid 0;
#   2. it still sees everything: every probe ok (stub_status and the synthetic client on the writer's TCP sockets,
#      inet_diag on its netlink sockets), the knobs readable (through the read channel), the doctor's nginx -T and
#      its sysctls of nginx's namespace;
#   3. it still tunes: a change of net.core.somaxconn in nginx's namespace proposed to the engine and made by the
#      writer, then reverted;
#   4. with the engine's exact credentials, a process can neither write that sysctl nor gain root from a
#      set-user-ID root program (the same program without no_new_privs does: the check can fail);
#   5. the store's files are the user's, the writer's directory root's and outside the store's; a store file an
#      offline revert left as root's is given back at the next start; a writer_dir inside the store's directory
#      is refused with why;
#   6. SIGTERM: the engine exits 0 and the writer with it;
#   7. the offline revert drops the same way and puts back the writer's journal's originals;
#   8. the package's split (the engine started as the user by its unit, the writer by its socket): refusals,
#      the store's files given to the user by the writer, a change made and reverted, both ending at the stop;
#   9. the writer opens no log for the engine through a directory the user may change.
TEST_NAME=engine-user
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx jq curl ip setpriv useradd userdel
NS=ngxat-eu-$$
PORT=18631
U=ngxat-eu$$

useradd --system --no-create-home --user-group --shell /usr/sbin/nologin "$U" || fail "cannot make user $U"
CLEANUP+=("userdel $U")
UID_=$(id -u "$U")
GID_=$(id -g "$U")
ADM=$(getent group adm | cut -d: -f3)
[ -n "$ADM" ] || fail "this host has no group adm (Debian has it)"
chmod 711 "$TMP" # the engine goes through it to its own directories, as through /var/lib and /run
start_nginx_ns "$NS" $PORT || fail "could not start nginx in namespace $NS"
# nginx's logs closed to the engine's user (root's, 0600: stricter than Debian's www-data:adm 0640): the engine reads
# them through descriptors the writer opens, not by a group of its own.
chmod 600 "$TMP/nginx/logs/access.log" "$TMP/nginx/logs/error.log"
install -d -o "$U" -g "$U" -m 750 "$TMP/engine" "$TMP/run"
cp -r "$srcdir/policies" "$TMP/policies" # the source tree may be in a directory the user cannot enter
agent_conf "$TMP/agent.conf" $PORT 500ms
sed -i -e "s|^socket = .*|socket = $TMP/run/api.sock|" -e "s|^path = .*|path = $TMP/engine/ngx-autotune.db|" \
	-e "s|^dir = .*|dir = $TMP/policies|" -e "s|^\[agent\]|[agent]\nuser = $U\nwriter_dir = $TMP/writer|" \
	"$TMP/agent.conf"
# The TCP listener's tokens in a file of root's, mode 0600, as the README says to make it: read as root at start.
SECRET=eu-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf 'ops:%s\n' "$SECRET" >"$TMP/api.tokens"
chmod 600 "$TMP/api.tokens"
printf '[api]\nlisten = 127.0.0.1:%s\ntoken_file = %s\n' $((PORT + 1)) "$TMP/api.tokens" >>"$TMP/agent.conf"
api() { curl -sS --max-time 5 --unix-socket "$TMP/run/api.sock" "http://localhost$1"; }
ctl() { "$NGXCTL" -s "$TMP/run/api.sock" "$@"; }

# The package's removal before its unit ever ran (the store's directory not there): the offline revert says there is
# nothing recorded (exit 4, which the prerm takes) and makes nothing: no directory, no lock, no drop.
sed "s|^path = .*|path = $TMP/never/ngx-autotune.db|" "$TMP/agent.conf" >"$TMP/never.conf"
rc=0
"$AGENT" --revert all -c "$TMP/never.conf" >"$TMP/never.log" 2>&1 || rc=$?
[ $rc = 4 ] && [ ! -e "$TMP/never" ] && grep -q "nothing could be put back" "$TMP/never.log" ||
	fail "an offline revert without a store's directory: exit $rc, $(ls -d "$TMP/never" 2>&1): $(tail -3 "$TMP/never.log")"
ok "an offline revert where no agent ran (no store's directory): exit 4, nothing made"

# 5 first, on a store an agent that ran as root made (an older version's, or one without [agent] user), with the
# originals file an offline revert leaves.
grep -v "^user = " "$TMP/agent.conf" >"$TMP/root.conf"
"$AGENT" --foreground -c "$TMP/root.conf" >"$TMP/root.log" 2>&1 &
rootpid=$!
wait_for 20 test -S "$TMP/run/api.sock" || fail "the agent as root did not start: $(tail -3 "$TMP/root.log")"
kill -TERM $rootpid
wait $rootpid || fail "the agent as root did not stop cleanly"
install -m 600 /dev/null "$TMP/engine/ngx-autotune.db.originals"
[ "$(stat -c %u "$TMP/engine/ngx-autotune.db")" = 0 ] || fail "the root agent's store is not root's"
# A store file that is a hard link to a file of root's elsewhere (the user could make one where the kernel allows it):
# never given to the user.
install -m 600 /dev/null "$TMP/root-secret"
ln "$TMP/root-secret" "$TMP/engine/ngx-autotune.db.originals.compact"
# listen.policy's settle time cut to 1 s (an operator's override), so that a change is kept within seconds.
mkdir -p "$TMP/policies.d"
sed -e 's/^settle = .*/settle = 1s/' -e 's/^settle_min = .*/settle_min = 1s/' "$TMP/policies/listen.policy" >"$TMP/policies.d/listen.policy"
# A writer_dir in the store's directory: refused, before anything is opened.
sed "s|^writer_dir = .*|writer_dir = $TMP/engine/writer|" "$TMP/agent.conf" >"$TMP/bad.conf"
"$AGENT" --foreground -c "$TMP/bad.conf" >"$TMP/bad.log" 2>&1 && fail "a writer_dir in the store's directory was taken"
grep -q "the writer's directory $TMP/engine/writer is in the store's directory $TMP/engine, where $U may rename it" \
	"$TMP/bad.log" || fail "the refusal does not say why: $(cat "$TMP/bad.log")"
ok "a writer_dir inside the store's directory is refused: $(grep -o 'set \[agent\] writer_dir.*' "$TMP/bad.log")"

"$NOTIFY_LISTEN" "$TMP/run/notify.sock" 600 >"$TMP/notify.log" &
CLEANUP+=("kill $!")
wait_for 5 test -S "$TMP/run/notify.sock" || fail "notify-listen did not start"
chmod 666 "$TMP/run/notify.sock" # systemd's is writable by the unit's processes
NOTIFY_SOCKET="$TMP/run/notify.sock" "$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 30 grep -q READY=1 "$TMP/notify.log" || fail "no READY=1: $(tail -5 "$TMP/agent.log")"
WRITER=$(pgrep -P "$AGENT_PID" | head -1)
[ -n "$WRITER" ] || fail "no writer under the agent"
grep -q "the engine runs as $U (uid $UID_), without capabilities; the writer (pid $WRITER) stays root" "$TMP/agent.log" ||
	fail "the log does not say the engine dropped: $(grep -i 'engine\|writer' "$TMP/agent.log")"

status() { awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "/proc/$1/status"; }
[ "$(status "$AGENT_PID" Uid)" = "$UID_ $UID_ $UID_ $UID_" ] || fail "the engine's uids: $(status "$AGENT_PID" Uid)"
[ "$(status "$AGENT_PID" Gid)" = "$GID_ $GID_ $GID_ $GID_" ] || fail "the engine's gids: $(status "$AGENT_PID" Gid)"
groups=$(status "$AGENT_PID" Groups)
[ "$(echo $groups)" = "$GID_" ] || fail "the engine's groups: $groups (its own only, not adm $ADM)"
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
	[ "$(status "$AGENT_PID" $c)" = 0000000000000000 ] || fail "the engine's $c: $(status "$AGENT_PID" $c)"
done
[ "$(status "$AGENT_PID" NoNewPrivs)" = 1 ] || fail "the engine has no no_new_privs"
[ "$(status "$WRITER" Uid)" = "0 0 0 0" ] && [ "$(status "$WRITER" CapEff)" != 0000000000000000 ] ||
	fail "the writer is not root with its capabilities: $(status "$WRITER" Uid) $(status "$WRITER" CapEff)"
# The writer keeps its capabilities but those of the engine's drop (CAP_SETGID 6, CAP_SETPCAP 8; CAP_SETUID makes
# the engine's TCP sockets as the engine's user).
for c in CapEff CapPrm CapBnd; do
	(( (0x$(status "$WRITER" $c) & 0x140) == 0 )) || fail "the writer's $c has CAP_SETGID or CAP_SETPCAP: $(status "$WRITER" $c)"
done
ok "1. the engine runs as $U ($UID_:$GID_, groups $groups), no capability in any set, no_new_privs; the writer root, without the drop's capabilities"

wait_for 15 sh -c "curl -s --unix-socket $TMP/run/api.sock http://localhost/v1/status |
	jq -e '[.probes[] | select(.enabled and (.ok | not))] | length == 0'" ||
	fail "not every probe is ok: $(api /v1/status | jq -c '[.probes[] | select(.enabled and (.ok | not))]')"
api /v1/frames?since=-10 | jq -e '[.frames[].values["nginx.active"] | select(. != null)] | length > 0' >/dev/null ||
	fail "no stub_status figures"
api /v1/frames?since=-10 | jq -e "[.frames[].values[\"listen.$PORT.backlog\"] | select(. == 511)] | length > 0" \
	>/dev/null || fail "no listen queue of :$PORT from inet_diag in nginx's namespace"
[ "$(api /v1/knobs | jq -r '.knobs[] | select(.name == "net.core.somaxconn") | .state')" = ok ] ||
	fail "net.core.somaxconn is not readable: $(api /v1/knobs | jq -c '.knobs[] | select(.name == "net.core.somaxconn")')"
api /v1/knobs | jq -e '[.knobs[] | select(.kind == "nginx_directive" and .state == "ok")] | length > 0' >/dev/null ||
	fail "no nginx knob readable: $(api /v1/knobs | jq -c '[.knobs[] | select(.kind == "nginx_directive")][:3]')"
wait_for 15 sh -c "curl -s --unix-socket $TMP/run/api.sock http://localhost/v1/advisories | jq -e '.checked_ms > 0'" ||
	fail "the doctor did not run"
ctl doctor --json >"$TMP/doctor.json" || true
jq -e '[.advisories[] | select(.id == "doctor.nginx_config")] | length == 0' "$TMP/doctor.json" >/dev/null ||
	fail "the doctor could not read nginx's configuration: $(jq -c '.advisories' "$TMP/doctor.json")"
jq -e '[.advisories[].id] | any(. == "nginx.listen_backlog_default")' "$TMP/doctor.json" >/dev/null ||
	fail "the doctor did not check the configuration: $(jq -c '[.advisories[].id]' "$TMP/doctor.json")"
# The engine's connections to nginx (stub_status's kept one) are its user's, though the writer made their sockets.
owned_conn() {
	ip netns exec "$NS" ss -tnpe state established "( dport = :$PORT )" | grep "pid=$AGENT_PID," | grep -q "uid:$UID_\b"
}
wait_for 5 owned_conn || fail "the engine's connection to nginx is not $U's: $(ip netns exec "$NS" ss -tanpe)"
tcp() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }
[ "$(tcp -X POST -H "Authorization: Bearer $SECRET" -d '{}' "http://127.0.0.1:$((PORT + 1))/v1/pause")" = 200 ] &&
	[ "$(tcp -X POST -H "Authorization: Bearer $SECRET" -d '{}' "http://127.0.0.1:$((PORT + 1))/v1/resume")" = 200 ] ||
	fail "the TCP listener did not take the token of root's token file"
[ "$(tcp -X POST -H "Authorization: Bearer ${SECRET}x" -d '{}' "http://127.0.0.1:$((PORT + 1))/v1/pause")" = 401 ] ||
	fail "a wrong token was taken"
# The access log: read by the engine though its user cannot open it.
setpriv --reuid="$UID_" --regid="$GID_" --clear-groups cat "$TMP/nginx/logs/access.log" >/dev/null 2>&1 &&
	fail "the engine's user can read the access log itself: the check proves nothing"
api /v1/status | jq -e '[.probes[] | select((.name == "access_log" or .name == "error_log") and .ok)] | length == 2' \
	>/dev/null || fail "the logs are not read: $(api /v1/status | jq -c '[.probes[] | select(.name | test("log"))]')"
ok "2. every probe ok (stub_status, inet_diag of nginx's namespace, nginx's logs of root's 0600 through the writer), knobs read, the doctor's nginx -T read, its connections its user's; root's token file (0600) read at start"

ns_somaxconn() { ip netns exec "$NS" cat /proc/sys/net/core/somaxconn; }
before=$(ns_somaxconn)
want=$((before * 2))
# somaxconn to $want in nginx's namespace through the engine and the writer, and back (TAG names the files).
somaxconn_there_and_back() {
	local tag=$1 id
	ctl propose --now "net.core.somaxconn=$want" --why "engine-user test $tag" >"$TMP/propose$tag.out" 2>&1 ||
		fail "propose failed: $(cat "$TMP/propose$tag.out")"
	wait_for 10 sh -c "[ \$(ip netns exec $NS cat /proc/sys/net/core/somaxconn) = $want ]" ||
		fail "somaxconn in nginx's namespace is $(ns_somaxconn), not $want"
	id=$(grep -o 'change [0-9]*' "$TMP/propose$tag.out" | head -1 | cut -d' ' -f2)
	ctl revert "$id" >"$TMP/revert$tag.out" 2>&1 || fail "revert of change $id failed: $(cat "$TMP/revert$tag.out")"
	wait_for 10 sh -c "[ \$(ip netns exec $NS cat /proc/sys/net/core/somaxconn) = $before ]" ||
		fail "somaxconn not put back: $(ns_somaxconn), was $before"
}
somaxconn_there_and_back ""
ok "3. somaxconn $before -> $want in nginx's namespace and back, made by the writer for the engine"

# The engine's exact credentials, from the kernel.
as_engine() {
	setpriv --reuid="$UID_" --regid="$GID_" --groups="$(tr ' \t' ',,' <<<"$groups" | sed 's/,*$//')" \
		--inh-caps=-all --bounding-set=-all "$@"
}
if ip netns exec "$NS" setpriv --reuid="$UID_" --regid="$GID_" --groups="$(tr ' \t' ',,' <<<"$groups" | sed 's/,*$//')" \
	--inh-caps=-all --bounding-set=-all --no-new-privs sh -c 'echo 1234 >/proc/sys/net/core/somaxconn' 2>"$TMP/w.err"; then
	fail "a process with the engine's credentials wrote somaxconn"
fi
[ "$(ns_somaxconn)" = "$before" ] || fail "somaxconn changed to $(ns_somaxconn)"
install -m 4755 -o root "$(command -v id)" "$TMP/suid-id"
with=$(as_engine --no-new-privs "$TMP/suid-id" -u)
without=$(as_engine "$TMP/suid-id" -u)
[ "$with" = "$UID_" ] || fail "a set-user-ID root program ran as uid $with with no_new_privs"
[ "$without" = 0 ] || fail "the control without no_new_privs did not gain root (euid $without): the check proves nothing"
ok "4. with the engine's credentials: somaxconn not written ($(head -c 80 "$TMP/w.err")), a set-user-ID root program runs as $with (without no_new_privs: $without)"

for f in ngx-autotune.db ngx-autotune.db.lock ngx-autotune.db.originals; do
	[ "$(stat -c %U "$TMP/engine/$f")" = "$U" ] || fail "$f is $(stat -c %U "$TMP/engine/$f")'s, not $U's"
done
[ "$(stat -c %U "$TMP/root-secret")" = root ] || fail "a hard link in the store's directory gave a file of root's away"
rm -f "$TMP/engine/ngx-autotune.db.originals.compact"
[ "$(stat -c '%U %a' "$TMP/writer")" = "root 700" ] || fail "the writer's directory is $(stat -c '%U %a' "$TMP/writer")"
[ -s "$TMP/writer/originals" ] || fail "the writer journaled no original"
ok "5. the store's files (a root agent's database, an offline revert's originals) are $U's; the writer's journal root's, 0700, outside"

# An offline revert while the engine runs: refused at once (the store's lock, taken before a writer of its own would
# wait on the running writer's journal).
t0=$(date +%s)
"$AGENT" --revert all -c "$TMP/agent.conf" >"$TMP/busy.log" 2>&1 && fail "an offline revert ran beside the agent"
grep -q "the agent is running: use ngxctl revert without --offline" "$TMP/busy.log" && [ $(($(date +%s) - t0)) -le 2 ] ||
	fail "the offline revert beside the agent: $(($(date +%s) - t0)) s, $(cat "$TMP/busy.log")"
[ "$(pgrep -c -f -- "-c $TMP/agent.conf")" = 2 ] || fail "processes left by the refused revert: $(pgrep -a ngx-autotune)"
ok "5b. an offline revert while the engine runs is refused at once, and starts no writer"

kill -TERM "$AGENT_PID"
wait "$AGENT_PID"
rc=$?
[ $rc = 0 ] || fail "the engine exited $rc after SIGTERM: $(tail -5 "$TMP/agent.log")"
wait_for 5 sh -c "! kill -0 $WRITER 2>/dev/null" || fail "the writer $WRITER outlived the engine"
ok "6. SIGTERM: the engine exits 0, the writer ends with it"

# The offline revert (ngxctl revert --offline, the package's prerm) with [agent] user: the writer puts back its own
# journal's original, the engine dropped as at a start, and nothing of root's left in the store's directory.
"$NOTIFY_LISTEN" "$TMP/run/notify2.sock" 600 >"$TMP/notify2.log" &
CLEANUP+=("kill $!")
wait_for 5 test -S "$TMP/run/notify2.sock" || fail "notify-listen did not start"
chmod 666 "$TMP/run/notify2.sock"
NOTIFY_SOCKET="$TMP/run/notify2.sock" "$AGENT" --foreground -c "$TMP/agent.conf" >>"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 30 grep -q READY=1 "$TMP/notify2.log" || fail "no READY=1 at the second start"
ctl propose --now "net.core.somaxconn=$want" --why "engine-user test, kept" >"$TMP/propose2.out" 2>&1 ||
	fail "propose failed: $(cat "$TMP/propose2.out")"
id=$(grep -o 'change [0-9]*' "$TMP/propose2.out" | head -1 | cut -d' ' -f2)
wait_for 15 sh -c "curl -s --unix-socket $TMP/run/api.sock http://localhost/v1/changes/$id | jq -e '.state == \"kept\"'" ||
	fail "change $id not kept: $(api /v1/changes/$id)"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the engine exited $? at the stop before the offline revert"
[ "$(ns_somaxconn)" = "$want" ] || fail "the kept change is not there before the offline revert: $(ns_somaxconn)"
rm -r "$TMP/run" # as systemd removes the unit's RuntimeDirectory at its stop: the revert serves no API
"$AGENT" --revert all -c "$TMP/agent.conf" >"$TMP/offline.out" 2>"$TMP/offline.err" ||
	fail "the offline revert failed: $(cat "$TMP/offline.out" "$TMP/offline.err")"
[ "$(ns_somaxconn)" = "$before" ] || fail "the offline revert left somaxconn at $(ns_somaxconn), want $before"
grep -q "the engine runs as $U" "$TMP/offline.err" || fail "the offline revert did not drop: $(cat "$TMP/offline.err")"
left=$(find "$TMP/engine" -user root)
[ -z "$left" ] || fail "the offline revert left files of root's in the store's directory: $left"
ok "7. the offline revert: the engine dropped, the writer put somaxconn back to $before, nothing of root's left"

# 8. The split of the package's units (ngx-autotune.service as the user, ngx-autotune-writer.service started by its
# socket): the writer started on its socket's first connection (systemd-socket-activate, as its .socket would), the
# engine started as the user with the unit's credentials (no capability in any set, no_new_privs).
sed -e "s|^\[agent\]|[agent]\nwriter_socket = $TMP/writer.sock|" "$TMP/agent.conf" >"$TMP/split.conf"
mkdir -p "$TMP/run" && chown "$U:$U" "$TMP/run"
chown root "$TMP/engine/ngx-autotune.db.originals" # root's, as an offline revert by an older version left it
systemd-socket-activate --seqpacket -l "$TMP/writer.sock" "$AGENT" --writer -c "$TMP/split.conf" \
	>"$TMP/writer.log" 2>&1 &
WRITER=$!
CLEANUP+=("kill -9 $WRITER") # it ignores SIGTERM, as under its unit
wait_for 5 test -S "$TMP/writer.sock" || fail "the writer's socket was not made"
chown "$U" "$TMP/writer.sock" && chmod 600 "$TMP/writer.sock" # SocketUser=, SocketMode= of the package's .socket
# Root's connection (the socket's mode keeps every other user out) starts the writer, and is refused by it.
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(sys.argv[1]); s.recv(64)' \
	"$TMP/writer.sock" 2>/dev/null
grep -q "writer: refused a connection of uid 0" "$TMP/writer.log" ||
	fail "the writer did not refuse root's connection: $(cat "$TMP/writer.log")"
"$NOTIFY_LISTEN" "$TMP/run/notify3.sock" 600 >"$TMP/notify3.log" &
CLEANUP+=("kill $!")
wait_for 5 test -S "$TMP/run/notify3.sock" || fail "notify-listen did not start"
chmod 666 "$TMP/run/notify3.sock"
# setpriv execs the engine itself (a function in the background would be a subshell's pid).
NOTIFY_SOCKET="$TMP/run/notify3.sock" setpriv --reuid="$UID_" --regid="$GID_" \
	--groups="$(tr ' \t' ',,' <<<"$groups" | sed 's/,*$//')" --inh-caps=-all --bounding-set=-all --no-new-privs \
	"$AGENT" --foreground -c "$TMP/split.conf" >"$TMP/split.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 30 grep -q READY=1 "$TMP/notify3.log" || fail "the engine as $U: no READY=1: $(tail -5 "$TMP/split.log")"
grep -q "the engine runs as $U (uid $UID_), without capabilities; the writer is a unit of its own" "$TMP/split.log" ||
	fail "the engine does not say it met its writer: $(grep -i 'writer\|engine' "$TMP/split.log")"
[ "$(status "$WRITER" Uid)" = "0 0 0 0" ] && grep -q "writer $WRITER: .* knobs" "$TMP/writer.log" ||
	fail "the writer $WRITER is not serving as root: $(status "$WRITER" Uid): $(cat "$TMP/writer.log")"
[ "$(stat -c %U "$TMP/engine/ngx-autotune.db.originals")" = "$U" ] ||
	fail "the writer did not give root's originals file to $U before the engine opened the store"
wait_for 15 sh -c "curl -s --unix-socket $TMP/run/api.sock http://localhost/v1/status |
	jq -e '[.probes[] | select(.enabled and (.ok | not))] | length == 0'" ||
	fail "not every probe is ok: $(api /v1/status | jq -c '[.probes[] | select(.enabled and (.ok | not))]')"
somaxconn_there_and_back 3
# root's token file (0600), which the engine started as its user never could read: opened by its writer.
[ "$(tcp -X POST -H "Authorization: Bearer $SECRET" -d '{}' "http://127.0.0.1:$((PORT + 1))/v1/pause")" = 200 ] &&
	[ "$(tcp -X POST -H "Authorization: Bearer $SECRET" -d '{}' "http://127.0.0.1:$((PORT + 1))/v1/resume")" = 200 ] ||
	fail "the TCP listener of the engine started as $U did not take the token of root's token file: $(grep -i token "$TMP/split.log")"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the engine exited $? after SIGTERM"
wait "$WRITER" || fail "the writer exited $? after its engine: $(tail -3 "$TMP/writer.log")"
ok "8. the units' split: the writer started on its socket refuses root's connection, gives root's store file to $U, serves the engine started as $U (somaxconn $before -> $want -> $before, root's token file opened for it); both exit 0 at the engine's stop"
# 9. The writer opens only the logs agent.conf names, through directories only root may change: an access_log in a
# directory of the user's, there a link to a file of root's, is refused (the engine's probe fails, the writer says
# why), never opened for the engine.
install -d -o "$U" -m 755 "$TMP/ulogs"
ln -s "$TMP/nginx/logs/error.log" "$TMP/ulogs/access.log"
chown -h "$U" "$TMP/ulogs/access.log"
sed "s|^access_log = .*|access_log = $TMP/ulogs/access.log|" "$TMP/split.conf" >"$TMP/ulog.conf"
systemd-socket-activate --seqpacket -l "$TMP/writer2.sock" "$AGENT" --writer -c "$TMP/ulog.conf" >"$TMP/writer2.log" 2>&1 &
WRITER=$!
CLEANUP+=("kill -9 $WRITER") # it ignores SIGTERM, as under its unit
wait_for 5 test -S "$TMP/writer2.sock" || fail "the writer's socket was not made"
chown "$U" "$TMP/writer2.sock"
sed -i "s|^writer_socket = .*|writer_socket = $TMP/writer2.sock|" "$TMP/ulog.conf"
NOTIFY_SOCKET="$TMP/run/notify3.sock" setpriv --reuid="$UID_" --regid="$GID_" --clear-groups --inh-caps=-all \
	--bounding-set=-all --no-new-privs "$AGENT" --foreground -c "$TMP/ulog.conf" >"$TMP/ulog.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
refused() {
	api /v1/status | jq -e '.probes[] | select(.name == "access_log") | (.ok | not) and (.error | test("Operation not permitted"))' &&
		grep -q "writer: the engine's log not opened: $TMP/ulogs: .*refused" "$TMP/writer2.log"
}
wait_for 20 refused || fail "a log through a directory of the user's was not refused: $(api /v1/status | jq -c '.probes[] | select(.name == "access_log")'): $(tail -3 "$TMP/writer2.log")"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the engine exited $? after SIGTERM"
wait "$WRITER" || fail "the writer exited $?: $(tail -5 "$TMP/writer2.log")"
ok "9. an access_log in a directory of $U's (a link there to a file of root's) is refused by the writer: $(grep -o "not opened: .*" "$TMP/writer2.log" | head -1 | cut -c1-150)"
echo "1..$checks"
