#!/bin/bash
# The nginx knob drivers against a real nginx (Debian package) in its own network namespace, driven through
# tests/system/knob-harness. A directive is written, tested, reloaded and verified (new workers; nginx -T shows
# it). Values nginx -t refuses leave no trace (same workers, our file back byte for byte, nginx's own message
# returned); an nginx -t that hangs is killed; a reload that never happens is undone, quotes nginx's error log and
# stops later changes; no reload goes on top of a worker still shutting down (a slow download); a missing include
# is reported by probe. A directive the operator sets in nginx.conf is edited where it stands (its argument alone), backed up
# first, and a write of its first value puts nginx.conf back byte for byte. The listen queue: with somaxconn 16 in the
# namespace, raising somaxconn alone leaves the live backlog at 16; the driver's write of 4096 makes it 4096 (ss
# and inet_diag), and writing the original back restores the operator's files byte for byte and somaxconn; 511,
# nginx's default backlog, takes two reloads each way. gzip_comp_level set in http and a location: the knob edits
# them in place and comes back byte for byte; worker_connections 768 -> 4096 under a master whose soft file limit is
# 1024 raises worker_rlimit_nofile to 8192 in the same change (the new workers have it), and back.
TEST_NAME=nginx-knobs
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx ip ss cmp ps
HARNESS=${KNOB_HARNESS:-$builddir/tests/system/knob-harness}
[ -x "$HARNESS" ] || skip "$HARNESS not built"
NS=ngxat-knobs-$$
PORT=8093
PORT2=8094
N=$TMP/nginx
INC=$N/ngx-autotune
BIG=/tmp/ngxat-knobs-big.$$ # outside TMP (mode 700), which the workers cannot read

# The operator's configuration: our three includes, a directive set by the operator (keepalive_requests), and a
# second site reached, as on Debian, through a symlink in sites-enabled.
mkdir -p "$N/logs" "$INC" "$N/sites-available" "$N/sites-enabled"
cat >"$N/nginx.conf" <<EOT
include $INC/main.conf;
worker_processes 2;
pid $N/nginx.pid;
error_log $N/logs/error.log warn;
events {
	include $INC/events.conf;
}
http {
	include $INC/http.conf;
	access_log off;
	keepalive_requests   10000 ; # set by hand
	include $N/sites-enabled/*;
	server {
		listen 127.0.0.1:$PORT default_server;
		location / { return 200 "hello from nginx\n"; }
		location = /big { alias $BIG; }
	}
}
EOT
cat >"$N/sites-available/default" <<EOT
server {
	listen $PORT2; # the default site
	keepalive_requests 5; # its own, which the http block's does not change
	return 200 "site\n";
}
EOT
ln -s "$N/sites-available/default" "$N/sites-enabled/default"
: >"$INC/main.conf"
printf '# Managed by ngx-autotune.\nworker_connections 1024;\n' >"$INC/events.conf"
: >"$INC/http.conf"
cp -a "$N" "$TMP/orig"

ip netns add "$NS" || fail "cannot create namespace $NS"
CLEANUP+=("ip netns del $NS")
ip -n "$NS" link set lo up
ip netns exec "$NS" sysctl -qw net.core.somaxconn=16 || fail "cannot set somaxconn in $NS"
ip netns exec "$NS" nginx -c "$N/nginx.conf" -e "$N/logs/error.log" || fail "nginx did not start"
CLEANUP+=("kill -QUIT \$(cat $N/nginx.pid)")
wait_for 5 test -s "$N/nginx.pid" || fail "no pid file"
MASTER=$(cat "$N/nginx.pid")

h() {
	"$HARNESS" --nginx-conf "$N/nginx.conf" --include-dir "$INC" --pid-file "$N/nginx.pid" --timeout-ms 5000 "$@"
}
# The master's workers (not those shutting down), sorted.
workers() {
	ps --ppid "$MASTER" -o pid=,args= | awk '$2 == "nginx:" && $3 == "worker" && $4 == "process" && NF == 4 {
		print $1 }' | sort
}
live_backlog() {
	ip netns exec "$NS" ss -Hltn "sport = :$1" | awk '{ print $3 }' | sort -u | tr '\n' ' ' | sed 's/ $//'
}
somaxconn() {
	ip netns exec "$NS" cat /proc/sys/net/core/somaxconn
}
wait_for 5 sh -c "[ \$(ps --ppid $MASTER -o pid= | wc -l) -eq 2 ]" || fail "nginx has no two workers"
ok "nginx $MASTER running in namespace $NS with somaxconn $(somaxconn)"

# ---- a directive: write, test, reload, verify ---------------------------------------------------------------
before=$(workers)
out=$(h nginx_directive worker_connections events int probe read write 2048 read) || fail "worker_connections: $out"
echo "$out" | grep -qx "read rc=0 value=1024" || fail "worker_connections did not read 1024 first: $out"
echo "$out" | grep -qx "read rc=0 value=2048" || fail "worker_connections does not read 2048 back: $out"
after=$(workers)
[ -n "$after" ] && [ -z "$(comm -12 <(echo "$before") <(echo "$after"))" ] ||
	fail "no new generation of workers: before [$before], after [$after]"
ok "worker_connections 1024 -> 2048: new workers ($(echo $before) -> $(echo $after))"
nginx -q -T -c "$N/nginx.conf" 2>/dev/null | sed -n "\|^# configuration file $INC/events.conf:|,/^# configuration/p" |
	grep -qx "worker_connections 2048;" || fail "nginx -T does not show worker_connections 2048 in events.conf"
printf '# Managed by ngx-autotune.\nworker_connections 2048;\n' | cmp -s - "$INC/events.conf" ||
	fail "events.conf is not the old file with one line changed: $(cat "$INC/events.conf")"
ok "nginx -T shows worker_connections 2048 from $INC/events.conf, the rest of the file kept"

# ---- refused values: nothing reloads, our file is back byte for byte, nginx's text is returned -------------------
cp "$INC/events.conf" "$TMP/events.before"
before=$(workers)
out=$(h nginx_directive worker_connections events int write -1)
echo "$out" | grep -q '^write rc=-22 msg=\[emerg\] invalid number "-1" in '"$INC/events.conf:2" ||
	fail "worker_connections -1 not refused with nginx's message: $out"
cmp -s "$TMP/events.before" "$INC/events.conf" || fail "events.conf not restored after a failing nginx -t"
[ "$(workers)" = "$before" ] || fail "workers changed although nginx -t failed"
ok "worker_connections -1: nginx -t fails, same workers, events.conf back byte for byte ($out)"
out=$(h nginx_directive worker_connectionz events int write 5)
echo "$out" | grep -q '^write rc=-22 msg=\[emerg\] unknown directive "worker_connectionz"' ||
	fail "an unknown directive was not refused with nginx's message: $out"
cmp -s "$TMP/events.before" "$INC/events.conf" || fail "events.conf not restored after an unknown directive"
[ "$(workers)" = "$before" ] || fail "workers changed after an unknown directive"
ok "an unknown directive: refused by nginx -t, nothing changed"

# ---- an nginx -t that hangs is killed at the timeout ---------------------------------------------------------
cat >"$TMP/slow-nginx" <<EOT
#!/bin/sh
for a; do [ "\$a" = -t ] && exec sleep 59.$$; done
exec nginx "\$@"
EOT
chmod +x "$TMP/slow-nginx"
t0=$(date +%s%3N)
out=$("$HARNESS" --nginx-bin "$TMP/slow-nginx" --nginx-conf "$N/nginx.conf" --include-dir "$INC" \
	--pid-file "$N/nginx.pid" --timeout-ms 800 nginx_directive worker_connections events int write 3000)
t1=$(date +%s%3N)
echo "$out" | grep -q '^write rc=-110 msg=nginx -t did not finish within 800 ms' || fail "hung nginx -t: $out"
[ $((t1 - t0)) -lt 5000 ] || fail "the hung nginx -t was not killed in time ($((t1 - t0)) ms)"
# A killed child can take a moment to go; the marker duration is this test's own.
wait_for 3 sh -c "! pgrep -f '^sleep 59.$$\$'" || fail "the hung nginx -t is still running"
cmp -s "$TMP/events.before" "$INC/events.conf" || fail "events.conf not restored after a hung nginx -t"
[ "$(workers)" = "$before" ] || fail "workers changed after a hung nginx -t"
ok "a hung nginx -t is killed after 800 ms ($((t1 - t0)) ms in all), events.conf back, no reload"

# ---- a reload that never happens is undone ---------------------------------------------------------------------
kill -STOP "$MASTER"
CLEANUP+=("kill -CONT $MASTER")
echo "a line of nginx's error log before the reload" >>"$N/logs/error.log"
out=$("$HARNESS" --nginx-conf "$N/nginx.conf" --include-dir "$INC" --pid-file "$N/nginx.pid" --timeout-ms 1000 \
	nginx_directive worker_connections events int probe write 3000 write 4000)
kill -CONT "$MASTER"
echo "$out" | grep -q '^write rc=-110 msg=nginx did not start a new generation of workers within 1000 ms' ||
	fail "a stopped master: $out"
echo "$out" | grep -q "error log $N/logs/error.log, newest first: a line of nginx's error log before the" ||
	fail "the failure does not quote nginx's error log: $out"
echo "$out" | grep -q '^write rc=-5 msg=the agent changes nothing in nginx until it is reloaded' ||
	fail "a write after a reload that brought no workers was not refused: $out"
cmp -s "$TMP/events.before" "$INC/events.conf" || fail "events.conf not restored after a reload that never came"
wait_for 5 sh -c "[ \$(ps --ppid $MASTER -o args= | grep -cx 'nginx: worker process') -eq 2 ]" ||
	fail "nginx did not come back with two workers"
out=$(h nginx_directive worker_connections events int probe read)
echo "$out" | grep -qx "read rc=0 value=2048" || fail "after the undone reload: $out"
ok "a master that does not reload (SIGSTOP): -ETIMEDOUT quoting the error log, events.conf back, no later change, 2048 after SIGCONT"

# ---- no reload on top of a generation still shutting down ------------------------------------------------------
truncate -s 256M "$BIG" && chmod 644 "$BIG" || fail "cannot make $BIG"
CLEANUP+=("rm -f $BIG")
ip netns exec "$NS" curl -sS -o /dev/null -w '%{http_code} %{size_download}\n' --limit-rate 100k \
	"http://127.0.0.1:$PORT/big" >"$TMP/curl.out" 2>&1 &
CURL=$!
CLEANUP+=("kill $CURL")
sleep 1
out=$(h nginx_directive worker_connections events int probe write 3000)
echo "$out" | grep -qx "write rc=0 msg=" || fail "worker_connections 3000: $out"
wait_for 5 sh -c "ps --ppid $MASTER -o args= | grep -qx 'nginx: worker process is shutting down'" ||
	fail "no worker left shutting down by the slow download: $(ps --ppid "$MASTER" -o pid=,args=) $(cat "$TMP/curl.out")"
before=$(workers)
out=$("$HARNESS" --nginx-conf "$N/nginx.conf" --include-dir "$INC" --pid-file "$N/nginx.pid" --timeout-ms 1500 \
	nginx_directive worker_connections events int write 2048)
echo "$out" | grep -q '^write rc=-11 msg=1 worker of an earlier generation still shutting down after 1500 ms' ||
	fail "a reload on top of a generation shutting down: $out"
[ "$(workers)" = "$before" ] || fail "nginx reloaded on top of the shutting-down worker"
grep -qx "worker_connections 3000;" "$INC/events.conf" || fail "events.conf not put back: $(cat "$INC/events.conf")"
kill "$CURL"
wait_for 5 sh -c "! ps --ppid $MASTER -o args= | grep -q 'shutting down'" || fail "the old worker did not exit"
out=$(h nginx_directive worker_connections events int probe write 2048 read)
echo "$out" | grep -qx "read rc=0 value=2048" || fail "worker_connections 2048 once the old worker is gone: $out"
ok "no reload on top of a worker still shutting down (-EAGAIN after 1500 ms, events.conf back); 2048 once it is gone"

# ---- our include file back byte for byte ----------------------------------------------------------------------
out=$(h nginx_directive worker_connections events int probe write 1024 read)
echo "$out" | grep -qx "read rc=0 value=1024" || fail "worker_connections back to 1024: $out"
cmp -s "$TMP/orig/ngx-autotune/events.conf" "$INC/events.conf" || fail "events.conf not back byte for byte: $(cat "$INC/events.conf")"
out=$(h nginx_directive multi_accept events onoff probe write on read)
echo "$out" | grep -qx "read rc=0 value=on" || fail "multi_accept on: $out"
grep -qx "multi_accept on;" "$INC/events.conf" || fail "no multi_accept line: $(cat "$INC/events.conf")"
out=$(h nginx_directive multi_accept events onoff probe write off read)
echo "$out" | grep -qx "read rc=0 value=off" || fail "multi_accept off: $out"
cmp -s "$TMP/orig/ngx-autotune/events.conf" "$INC/events.conf" ||
	fail "multi_accept's first value (nginx's default) left a line: $(cat "$INC/events.conf")"
[ ! -e "$INC/directive-backup" ] || fail "backups left: $(ls "$INC/directive-backup")"
ok "first values written back: events.conf byte for byte (no multi_accept off; line for nginx's default), no backup left"

# ---- a directive the operator sets: edited where it stands ------------------------------------------------------
out=$(h nginx_directive keepalive_requests http int probe read)
echo "$out" | grep -qxF "probe rc=0 why=set in $N/nginx.conf:11 (edited there); also set in 1 nested block, which keeps its own value ($N/sites-enabled/default:3 in http/server)" ||
	fail "keepalive_requests set by the operator, and again in a server: $out"
echo "$out" | grep -qx "read rc=0 value=10000" || fail "keepalive_requests does not read the operator's 10000: $out"
ok "a directive the operator sets in nginx.conf: probe says where, read gives its value"
BACKUP=$INC/directive-backup/$(printf %s "$N/nginx.conf" | sed 's/%/%25/g; s|/|%2F|g')
before=$(workers)
out=$(h nginx_directive keepalive_requests http int probe write 20000 read)
echo "$out" | grep -qx "read rc=0 value=20000" || fail "keepalive_requests 20000 in nginx.conf: $out"
sed 's/^\tkeepalive_requests   10000 ;/\tkeepalive_requests   20000 ;/' "$TMP/orig/nginx.conf" | cmp -s - "$N/nginx.conf" ||
	fail "nginx.conf is not the operator's with one argument changed: $(diff "$TMP/orig/nginx.conf" "$N/nginx.conf")"
cmp -s "$TMP/orig/nginx.conf" "$BACKUP" || fail "no byte-exact backup of nginx.conf at $BACKUP"
[ ! -s "$INC/http.conf" ] || fail "the agent's http.conf got a line: $(cat "$INC/http.conf")"
after=$(workers)
[ -n "$after" ] && [ -z "$(comm -12 <(echo "$before") <(echo "$after"))" ] || fail "no new generation after the edit"
nginx -q -T -c "$N/nginx.conf" 2>/dev/null | grep -q "^	keepalive_requests   20000 ; # set by hand$" ||
	fail "nginx -T does not show keepalive_requests 20000 where the operator set it"
ok "keepalive_requests 10000 -> 20000 edited in nginx.conf:11 (the argument alone), backed up first, new workers"
out=$(h nginx_directive keepalive_requests http int probe write 10000 read)
echo "$out" | grep -qx "read rc=0 value=10000" || fail "keepalive_requests back to 10000: $out"
cmp -s "$TMP/orig/nginx.conf" "$N/nginx.conf" || fail "nginx.conf not back byte for byte: $(diff "$TMP/orig/nginx.conf" "$N/nginx.conf")"
[ ! -e "$BACKUP" ] || fail "the backup outlived the restore"
ok "the first value written back: nginx.conf is the operator's again byte for byte, the backup gone"
out=$("$HARNESS" --nginx-conf "$N/nginx.conf" --include-dir "$TMP/elsewhere" --pid-file "$N/nginx.pid" \
	nginx_directive multi_accept events onoff probe)
echo "$out" | grep -qx "probe rc=-2 why=nginx does not include $TMP/elsewhere/events.conf" ||
	fail "an include directory nginx does not include: $out"
ok "an include file nginx does not include: probe -ENOENT with the reason"

# ---- the listen queue ------------------------------------------------------------------------------------------
[ "$(live_backlog $PORT) $(live_backlog $PORT2)" = "16 16" ] ||
	fail "live backlog is not somaxconn's 16: $(live_backlog $PORT) $(live_backlog $PORT2)"
# What the issue measured: somaxconn alone does nothing until nginx calls listen() again with another backlog.
ip netns exec "$NS" sysctl -qw net.core.somaxconn=4096
before=$(workers)
kill -HUP "$MASTER"
# The master re-reads its listen sockets before it starts new workers: once one runs, the reload is done.
new_worker() { [ -n "$(comm -13 <(echo "$before") <(workers))" ]; }
wait_for 10 new_worker || fail "nginx did not reload: no new worker 10 s after SIGHUP"
[ "$(live_backlog $PORT)" = 16 ] || fail "raising somaxconn alone changed the live backlog: $(live_backlog $PORT)"
ip netns exec "$NS" sysctl -qw net.core.somaxconn=16
ok "somaxconn 4096 and a reload leave the live backlog at 16"

out=$(h listen_queue listen_queue main int probe read write 4096 read) || fail "listen queue 4096: $out"
echo "$out" | grep -qx "read rc=0 value=16" || fail "listen queue did not read 16 first: $out"
echo "$out" | grep -qx "read rc=0 value=4096" || fail "listen queue does not read 4096 back: $out"
[ "$(live_backlog $PORT) $(live_backlog $PORT2)" = "4096 4096" ] ||
	fail "ss shows $(live_backlog $PORT) $(live_backlog $PORT2), not 4096"
[ "$(somaxconn)" -ge 4096 ] || fail "somaxconn is $(somaxconn)"
grep -q "listen 127.0.0.1:$PORT default_server backlog=4096;" "$N/nginx.conf" || fail "nginx.conf not edited"
grep -q "listen $PORT2 backlog=4096; # the default site" "$N/sites-available/default" ||
	fail "the symlinked site not edited: $(cat "$N/sites-available/default")"
[ -L "$N/sites-enabled/default" ] && [ "$(ls -A "$N/sites-enabled")" = default ] ||
	fail "sites-enabled changed: $(ls -la "$N/sites-enabled")"
grep -qx "original 16" "$INC/listen-queue.state" || fail "no state: $(cat "$INC/listen-queue.state")"
[ "$(ls "$INC/listen-backup" | wc -l)" = 2 ] || fail "backups: $(ls "$INC/listen-backup")"
ok "listen queue 4096: ss shows 4096 on :$PORT and :$PORT2, somaxconn $(somaxconn), only backlog= edited"

out=$(h listen_queue listen_queue main int probe write 16 read) || fail "listen queue revert: $out"
echo "$out" | grep -qx "read rc=0 value=16" || fail "listen queue does not read 16 after the revert: $out"
[ "$(live_backlog $PORT) $(live_backlog $PORT2)" = "16 16" ] ||
	fail "ss shows $(live_backlog $PORT) $(live_backlog $PORT2) after the revert"
[ "$(somaxconn)" = 16 ] || fail "somaxconn is $(somaxconn) after the revert, not 16"
cmp -s "$TMP/orig/nginx.conf" "$N/nginx.conf" || fail "nginx.conf differs after the revert"
cmp -s "$TMP/orig/sites-available/default" "$N/sites-available/default" || fail "the site differs after the revert"
[ ! -e "$INC/listen-queue.state" ] && [ ! -e "$INC/listen-backup" ] || fail "state or backups left after the revert"
ok "revert to 16: the operator's files byte for byte, somaxconn 16, live backlog 16, no state left"

# An operator edits one of the files between the change and its revert: that file keeps their edit.
out=$(h listen_queue listen_queue main int probe write 1024) || fail "listen queue 1024: $out"
[ "$(live_backlog $PORT) $(live_backlog $PORT2) $(somaxconn)" = "1024 1024 1024" ] ||
	fail "after 1024: $(live_backlog $PORT) $(live_backlog $PORT2) $(somaxconn)"
sed -i 's|^\treturn 200 "site\\n";|\treturn 200 "edited site\\n";|' "$N/sites-available/default"
grep -q "edited site" "$N/sites-available/default" || fail "could not edit the site"
out=$(h listen_queue listen_queue main int probe write 16 read) || fail "listen queue revert after an edit: $out"
echo "$out" | grep -qx "read rc=0 value=16" || fail "listen queue does not read 16 after the revert: $out"
cmp -s "$TMP/orig/nginx.conf" "$N/nginx.conf" || fail "nginx.conf differs after the revert"
sed 's|^\tlisten '$PORT2'; |\tlisten '$PORT2' backlog=16; |; s|"site|"edited site|' "$TMP/orig/sites-available/default" |
	cmp -s - "$N/sites-available/default" || fail "the edited site after the revert: $(cat "$N/sites-available/default")"
[ "$(live_backlog $PORT) $(live_backlog $PORT2) $(somaxconn)" = "16 16 16" ] ||
	fail "after the revert: $(live_backlog $PORT) $(live_backlog $PORT2) $(somaxconn)"
[ ! -e "$INC/listen-queue.state" ] && [ ! -e "$INC/listen-backup" ] || fail "state or backups left after the revert"
ok "revert after an operator's edit: nginx.conf byte for byte, the edited site keeps the edit with backlog=16"

# nginx's own default written out: nginx.conf's listen has no backlog= (511 to nginx), and nginx calls listen()
# again only for a backlog that changed, so backlog=511 alone would leave somaxconn's 16 in force. Both ways.
out=$(h listen_queue listen_queue main int probe write 511 read) || fail "listen queue 511: $out"
echo "$out" | grep -qx "read rc=0 value=511" || fail "listen queue does not read 511 back: $out"
[ "$(live_backlog $PORT) $(live_backlog $PORT2) $(somaxconn)" = "511 511 511" ] ||
	fail "after 511: $(live_backlog $PORT) $(live_backlog $PORT2) $(somaxconn)"
grep -q "listen 127.0.0.1:$PORT default_server backlog=511;" "$N/nginx.conf" || fail "nginx.conf not edited to 511"
out=$(h listen_queue listen_queue main int probe write 16 read) || fail "listen queue revert from 511: $out"
cmp -s "$TMP/orig/nginx.conf" "$N/nginx.conf" || fail "nginx.conf differs after the revert from 511"
[ "$(live_backlog $PORT) $(live_backlog $PORT2) $(somaxconn)" = "16 16 16" ] ||
	fail "after the revert from 511: $(live_backlog $PORT) $(live_backlog $PORT2) $(somaxconn)"
ok "listen queue 16 -> 511 (nginx's default backlog) -> 16: live 511, then 16 again (two reloads each way)"

# ---- another daemon on nginx's port, at another address ---------------------------------------------------------
# Its socket is not nginx's: before, both listen knobs matched sockets by port alone, so the listen queue read its
# backlog of 7 and reuseport "on" never settled (its one socket looked like an address nginx had not spread).
ip netns exec "$NS" python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.2", int(sys.argv[1])))
s.listen(7)
time.sleep(300)' "$PORT" &
CLEANUP+=("kill $!")
foreign() { ip netns exec "$NS" ss -Hltn "src 127.0.0.2:$PORT" | grep -q .; }
wait_for 5 foreign || fail "the other daemon does not listen on 127.0.0.2:$PORT"
# Sockets per address of a port: "ADDR:PORT COUNT" lines, sorted.
sockets() {
	ip netns exec "$NS" ss -Hltn "sport = :$1" | awk '{ print $4 }' | sort | uniq -c | awk '{ print $2, $1 }' |
		tr '\n' ' ' | sed 's/ $//'
}
out=$(h listen_queue listen_queue main int probe read) || fail "listen queue beside another daemon: $out"
echo "$out" | grep -qx "read rc=0 value=16" || fail "the listen queue reads the other daemon's backlog: $out"
ok "listen queue beside another daemon's socket on 127.0.0.2:$PORT (backlog 7): reads nginx's 16"
out=$(h listen_param reuseport main onoff probe read write on read) || fail "reuseport on: $out"
echo "$out" | grep -qx "read rc=0 value=off" || fail "reuseport did not read off first: $out"
echo "$out" | grep -qx "read rc=0 value=on" || fail "reuseport does not read on: $out"
[ "$(sockets $PORT)" = "127.0.0.1:$PORT 2 127.0.0.2:$PORT 1" ] && [ "$(sockets $PORT2)" = "0.0.0.0:$PORT2 2" ] ||
	fail "sockets after reuseport on: $(sockets $PORT); $(sockets $PORT2)"
grep -q "listen 127.0.0.1:$PORT default_server reuseport;" "$N/nginx.conf" || fail "nginx.conf not edited"
out=$(h listen_param reuseport main onoff probe write off read) || fail "reuseport off: $out"
echo "$out" | grep -qx "read rc=0 value=off" || fail "reuseport does not read off again: $out"
[ "$(sockets $PORT)" = "127.0.0.1:$PORT 1 127.0.0.2:$PORT 1" ] && [ "$(sockets $PORT2)" = "0.0.0.0:$PORT2 1" ] ||
	fail "sockets after reuseport off: $(sockets $PORT); $(sockets $PORT2)"
cmp -s "$TMP/orig/nginx.conf" "$N/nginx.conf" || fail "nginx.conf differs after reuseport off"
[ ! -e "$INC/listen-param-backup" ] || fail "backups left: $(ls "$INC/listen-param-backup")"
ok "reuseport on and off beside the other daemon: one socket per worker on nginx's addresses, theirs untouched"
# An operator's edit between on and off: the file keeps it, reuseport goes, and so does the backup, which no
# byte-for-byte way back can use any more (before, it stayed behind for good).
out=$(h listen_param reuseport main onoff probe write on) || fail "reuseport on again: $out"
sed -i 's|return 200 "hello from nginx\\n";|return 200 "hello again\\n";|' "$N/nginx.conf"
grep -q "hello again" "$N/nginx.conf" || fail "could not edit nginx.conf"
out=$(h listen_param reuseport main onoff probe write off read) || fail "reuseport off after an edit: $out"
echo "$out" | grep -qx "read rc=0 value=off" || fail "reuseport does not read off after the edit: $out"
sed 's|"hello from nginx|"hello again|' "$TMP/orig/nginx.conf" | cmp -s - "$N/nginx.conf" ||
	fail "nginx.conf after an edit and reuseport off: $(diff "$TMP/orig/nginx.conf" "$N/nginx.conf")"
[ ! -e "$INC/listen-param-backup" ] || fail "a backup left after the edit: $(ls "$INC/listen-param-backup")"
ok "reuseport off after an operator's edit: their edit kept, reuseport gone, no backup left behind"

# ---- deferred: TCP_DEFER_ACCEPT on nginx's http sockets ---------------------------------------------------------
# Seen from outside the agent: a client that connects and says nothing (idle_state). Without deferred nginx's side
# of it is established (handed to accept()); with it, the kernel keeps it in SYN-RECV until the first bytes come.
cp "$N/nginx.conf" "$TMP/conf.before-deferred"
cp "$N/sites-available/default" "$TMP/site.before-deferred"
idle="$(idle_state "$NS" $PORT) $(idle_state "$NS" $PORT2)"
[ "$idle" = "ESTAB ESTAB" ] || fail "an idle connection before deferred: $idle, not ESTAB ESTAB"
out=$(h listen_param deferred main onoff probe read write on read) || fail "deferred on: $out"
echo "$out" | grep -qx "read rc=0 value=off" || fail "deferred did not read off first: $out"
echo "$out" | grep -qx "read rc=0 value=on" || fail "deferred does not read on: $out"
echo "$out" | grep -q "^probe rc=0 why=on listen .*:[0-9]* and the other address:ports$" || fail "probe: $out"
idle="$(idle_state "$NS" $PORT) $(idle_state "$NS" $PORT2)"
[ "$idle" = "SYN-RECV SYN-RECV" ] || fail "an idle connection with deferred: $idle, not SYN-RECV SYN-RECV"
sed "s|^		listen 127.0.0.1:$PORT default_server;|		listen 127.0.0.1:$PORT default_server deferred;|" \
	"$TMP/conf.before-deferred" | cmp -s - "$N/nginx.conf" ||
	fail "nginx.conf is not the operator's with deferred added: $(diff "$TMP/conf.before-deferred" "$N/nginx.conf")"
sed "s|^\(	listen $PORT2[^;]*\);|\1 deferred;|" "$TMP/site.before-deferred" | cmp -s - "$N/sites-available/default" ||
	fail "the site is not the operator's with deferred added: $(diff "$TMP/site.before-deferred" \
		"$N/sites-available/default")"
[ "$(sockets $PORT)" = "127.0.0.1:$PORT 1 127.0.0.2:$PORT 1" ] || fail "sockets with deferred: $(sockets $PORT)"
ok "deferred on: idle connections wait in SYN-RECV on both ports, deferred on each listen line, nothing else"
# Beside reuseport, each with its own way back: reuseport on, reuseport off, deferred off leaves both files as
# the operator had them, and no backup of either (they once shared a directory: one's restore dropped the other's).
out=$(h listen_param reuseport main onoff probe write on read) || fail "reuseport on beside deferred: $out"
echo "$out" | grep -qx "read rc=0 value=on" || fail "reuseport does not read on beside deferred: $out"
out=$(h listen_param deferred main onoff probe read) || fail "deferred read beside reuseport: $out"
echo "$out" | grep -qx "read rc=0 value=on" || fail "deferred does not read on beside reuseport: $out"
idle=$(idle_state "$NS" $PORT)
[ "$idle" = SYN-RECV ] || fail "an idle connection with deferred and reuseport: $idle"
out=$(h listen_param reuseport main onoff probe write off read) || fail "reuseport off beside deferred: $out"
echo "$out" | grep -qx "read rc=0 value=off" || fail "reuseport does not read off beside deferred: $out"
out=$(h listen_param deferred main onoff probe write off read) || fail "deferred off: $out"
echo "$out" | grep -qx "read rc=0 value=off" || fail "deferred does not read off again: $out"
cmp -s "$TMP/conf.before-deferred" "$N/nginx.conf" && cmp -s "$TMP/site.before-deferred" "$N/sites-available/default" ||
	fail "not back byte for byte: $(diff "$TMP/conf.before-deferred" "$N/nginx.conf"; diff "$TMP/site.before-deferred" \
		"$N/sites-available/default")"
idle="$(idle_state "$NS" $PORT) $(idle_state "$NS" $PORT2)"
[ "$idle" = "ESTAB ESTAB" ] || fail "an idle connection after deferred off: $idle, not ESTAB ESTAB"
[ ! -e "$INC/listen-param-backup" ] && [ ! -e "$INC/listen-deferred-backup" ] ||
	fail "backups left: $(ls -R "$INC")"
ok "deferred and reuseport on, then off: nginx.conf and the site byte for byte, accepted at once again, no backup"
# ---- gzip_comp_level where the operator set it; worker_connections with the workers' file limit -----------------
# A second nginx as Debian ships it (worker_connections 768 in nginx.conf's events block) with gzip_comp_level 9 in
# http and 2 in one location, its master started with a soft file limit of 1024 (prlimit), as systemd leaves it.
N2=$TMP/nginx2
INC2=$N2/ngx-autotune
PORT3=8095
mkdir -p "$N2/logs" "$INC2"
cat >"$N2/nginx.conf" <<EOT
include $INC2/main.conf;
worker_processes 2;
pid $N2/nginx.pid;
error_log $N2/logs/error.log warn;
events {
	worker_connections 768;
	# multi_accept on;
}
http {
	include $INC2/http.conf;
	access_log off;
	gzip on;
	gzip_types text/plain;
	gzip_comp_level 9;
	server {
		listen 127.0.0.1:$PORT3;
		location / { return 200 "two\n"; }
		location /api { gzip_comp_level "2"; return 200 "api\n"; }
	}
}
EOT
: >"$INC2/main.conf"
: >"$INC2/events.conf"
: >"$INC2/http.conf"
cp -a "$N2" "$TMP/orig2"
# The hard limit stays the test's own (at least 8192 here): a test without CAP_SYS_RESOURCE cannot raise it.
HARD=$(ulimit -Hn)
[ "$HARD" = unlimited ] || [ "$HARD" -ge 8192 ] || fail "the test's hard file limit is $HARD, below 8192"
ip netns exec "$NS" prlimit --nofile=1024:"$HARD" nginx -c "$N2/nginx.conf" || fail "the second nginx did not start"
CLEANUP+=("kill -QUIT \$(cat $N2/nginx.pid)")
wait_for 5 test -s "$N2/nginx.pid" || fail "no pid file for the second nginx"
MASTER2=$(cat "$N2/nginx.pid")
h2() {
	"$HARNESS" --nginx-conf "$N2/nginx.conf" --include-dir "$INC2" --pid-file "$N2/nginx.pid" --timeout-ms 5000 "$@"
}
# The soft file limit of each worker of the second nginx, sorted and unique ("8192", or "1024 8192" when mixed).
nofile2() {
	local w
	for w in $(ps --ppid "$MASTER2" -o pid=,args= | awk '$2 == "nginx:" && $3 == "worker" && NF == 4 { print $1 }'); do
		awk '/^Max open files/ { print $4 }' "/proc/$w/limits"
	done | sort -un | tr '\n' ' ' | sed 's/ $//'
}
wait_for 5 sh -c "[ \$(ps --ppid $MASTER2 -o pid= | wc -l) -eq 2 ]" || fail "the second nginx has no two workers"
[ "$(nofile2)" = 1024 ] || fail "the workers' file limit is $(nofile2), not the master's 1024"

out=$(h2 nginx_directive gzip_comp_level http int probe read write 5 read) || fail "gzip_comp_level 5: $out"
echo "$out" | grep -qxF "probe rc=0 why=set in 2 places, the highest (9) at $N2/nginx.conf:14 (http): the knob is the highest; a write sets those at it and lowers any other above the value, in place" ||
	fail "gzip_comp_level's probe: $out"
echo "$out" | grep -qx "read rc=0 value=9" && echo "$out" | grep -qx "read rc=0 value=5" || fail "gzip reads: $out"
sed 's/^\tgzip_comp_level 9;/\tgzip_comp_level 5;/' "$TMP/orig2/nginx.conf" | cmp -s - "$N2/nginx.conf" ||
	fail "nginx.conf is not the operator's with 9 -> 5: $(diff "$TMP/orig2/nginx.conf" "$N2/nginx.conf")"
nginx -q -T -c "$N2/nginx.conf" 2>/dev/null | grep -q 'location /api { gzip_comp_level "2"; return 200' ||
	fail "nginx -T does not show the location's own level 2"
[ "$(ip netns exec "$NS" curl -s -H 'Accept-Encoding: gzip' -o /dev/null -w '%{size_download}' \
	"http://127.0.0.1:$PORT3/")" -gt 0 ] || fail "no gzip answer"
out=$(h2 nginx_directive gzip_comp_level http int probe write 9 read) || fail "gzip_comp_level 9: $out"
echo "$out" | grep -qx "read rc=0 value=9" || fail "gzip does not read 9 again: $out"
cmp -s "$TMP/orig2/nginx.conf" "$N2/nginx.conf" || fail "nginx.conf not back byte for byte after gzip 9"
[ ! -e "$INC2/directive-backup" ] || fail "a gzip backup left: $(ls "$INC2/directive-backup")"
ok "gzip_comp_level 9 (http) and 2 (location): 5 edits the http one alone in place, 9 gives nginx.conf back byte for byte"

out=$(h2 nginx_directive worker_connections events int probe read write 4096 read) || fail "worker_connections 4096: $out"
echo "$out" | grep -qx "probe rc=0 why=set in $N2/nginx.conf:6 (edited there)" || fail "worker_connections' probe: $out"
echo "$out" | grep -qx "read rc=0 value=768" && echo "$out" | grep -qx "read rc=0 value=4096" ||
	fail "worker_connections reads: $out"
echo "$out" | grep -qxF "write rc=0 msg=worker_rlimit_nofile 1024 (the master's) -> 8192 in $INC2/main.conf with it (twice 4096)" ||
	fail "the write does not say it moved the file limit: $out"
[ "$(nofile2)" = 8192 ] || fail "the new workers' file limit is $(nofile2), not 8192"
printf 'worker_rlimit_nofile 8192;\n' | cmp -s - "$INC2/main.conf" || fail "main.conf: $(cat "$INC2/main.conf")"
sed 's/^\tworker_connections 768;/\tworker_connections 4096;/' "$TMP/orig2/nginx.conf" | cmp -s - "$N2/nginx.conf" ||
	fail "nginx.conf is not the operator's with 768 -> 4096: $(diff "$TMP/orig2/nginx.conf" "$N2/nginx.conf")"
grep -qx "before 1024 inherited" "$INC2/worker-nofile.state" || fail "state: $(cat "$INC2/worker-nofile.state")"
out=$(h2 nginx_directive worker_connections events int probe) || fail "worker_connections' probe after: $out"
echo "$out" | grep -qxF "probe rc=0 why=set in $N2/nginx.conf:6 (edited there); worker_rlimit_nofile 8192 set with it in $INC2/main.conf (before: 1024, the master's)" ||
	fail "the knob does not say it moved the file limit: $out"
ok "worker_connections 768 -> 4096 under a soft limit of 1024: worker_rlimit_nofile 8192 in main.conf in the same change, workers at $(nofile2)"
out=$(h2 nginx_directive worker_connections events int probe write 768 read) || fail "worker_connections 768: $out"
echo "$out" | grep -qx "read rc=0 value=768" || fail "worker_connections does not read 768 again: $out"
echo "$out" | grep -qF "msg=worker_rlimit_nofile 8192 -> 1024 (the master's again: the line went)" || fail "revert: $out"
cmp -s "$TMP/orig2/nginx.conf" "$N2/nginx.conf" && cmp -s "$TMP/orig2/ngx-autotune/main.conf" "$INC2/main.conf" ||
	fail "not back byte for byte: $(diff -r "$TMP/orig2" "$N2")"
[ "$(nofile2)" = 1024 ] || fail "the workers' file limit after the revert: $(nofile2)"
[ ! -e "$INC2/worker-nofile.state" ] && [ ! -e "$INC2/nofile-backup" ] && [ ! -e "$INC2/directive-backup" ] ||
	fail "state or backups left: $(ls -R "$INC2")"
ok "worker_connections back to 768: nginx.conf and main.conf byte for byte, workers at 1024, no state left"
# A hard limit of 4096: without CAP_SYS_RESOURCE the workers cannot go past it (nginx's setrlimit fails), with it
# they may go up to fs.nr_open. The driver asks for what nginx can set, and the workers have it.
prlimit --pid "$MASTER2" --nofile=1024:4096 || fail "prlimit on the master"
if [ $((0x$(awk '/^CapEff:/ { print $2 }' "/proc/$MASTER2/status") >> 24 & 1)) = 1 ]; then want=8192; else want=4096; fi
out=$(h2 nginx_directive worker_connections events int probe write 4096) || fail "worker_connections 4096, hard 4096: $out"
[ "$(nofile2)" = "$want" ] || fail "hard limit 4096: workers at $(nofile2), not $want: $out"
out=$(h2 nginx_directive worker_connections events int probe write 768) || fail "worker_connections 768 again: $out"
cmp -s "$TMP/orig2/nginx.conf" "$N2/nginx.conf" && cmp -s "$TMP/orig2/ngx-autotune/main.conf" "$INC2/main.conf" ||
	fail "not back byte for byte after the hard limit: $(diff -r "$TMP/orig2" "$N2")"
ok "master's hard limit 4096: worker_connections 4096 gives workers $want (what nginx can set here), and back"
kill -QUIT "$MASTER2"

echo "# $checks checks passed"
