#!/bin/bash
# ngx-autotune --setup, run from the host as ngxctl setup runs it, on a real nginx in its own network namespace
# whose configuration is laid out as operators have it: nginx's combined access log, no stub_status, no include
# files, a site in its own file with an access_log of its own. The diff is printed and nothing written without
# --apply; --apply writes, nginx -t passes, nginx is reloaded and serves stub_status on the loopback port the setup
# chose; the agent, reloaded at once (within the 2 s its nginx -T dump is shared by a probe pass), sees its nginx
# knobs supported and reads request times from its log; a second run changes nothing; a failing nginx -t puts every
# file back byte for byte; and --revert-setup puts back the originals exactly.
# Then issue 21's reproduction: Debian's /etc/nginx copied and run as `nginx -c COPY` in a namespace of its own
# (with a site on an address only that namespace has). `ngxctl setup --apply` edits COPY, not /etc/nginx, runs
# nginx -t and its stub_status check in nginx's namespace and exits 0; with [nginx] conf naming /etc/nginx/nginx.conf
# it refuses, naming both paths, and changes nothing; `ngxctl revert --setup` brings COPY back byte for byte. The
# host's /etc/nginx is compared with a copy taken at the start after every step (and put back by the cleanup should
# the test ever change it). About 5 s in all, under 1 s of them for the Debian copy.
TEST_EXCLUSIVE=1
TEST_NAME=setup
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx ip curl jq wrk cmp
[ -f /etc/nginx/nginx.conf ] || skip "needs Debian's /etc/nginx (the nginx package) for the copy run with -c"
NS=ngxat-setup-$$
PORT=8096
N=$TMP/nginx
mkdir -p "$N/logs" "$N/sites" "$TMP/store"
ip netns add "$NS" || fail "cannot create namespace $NS"
CLEANUP+=("ip netns del $NS")
ip -n "$NS" link set lo up
cat >"$N/nginx.conf" <<EOT
worker_processes 2;
pid $N/nginx.pid;
error_log $N/logs/error.log;

events {
	worker_connections 1024;
}

http {
	access_log $N/logs/access.log;
	client_body_temp_path $N/tmp_body;
	proxy_temp_path $N/tmp_proxy;
	fastcgi_temp_path $N/tmp_fastcgi;
	uwsgi_temp_path $N/tmp_uwsgi;
	scgi_temp_path $N/tmp_scgi;
	include $N/sites/*;
}
EOT
cat >"$N/sites/default" <<EOT
server {
	listen 127.0.0.1:$PORT;
	access_log $N/logs/site.log combined;
	location / { return 200 "hello\n"; }
}
EOT
cp -a "$N" "$TMP/nginx.orig"
ip netns exec "$NS" nginx -c "$N/nginx.conf" -e "$N/logs/error.log" || fail "nginx did not start"
CLEANUP+=("kill -QUIT \$(cat $N/nginx.pid)")
wait_for 5 test -s "$N/nginx.pid" || fail "no nginx pid file"
cat >"$TMP/agent.conf" <<EOT
[agent]
tick_interval = 500ms
socket = $TMP/api.sock
socket_group =
[store]
path = $TMP/store/ngx-autotune.db
[policies]
dir = $srcdir/policies
override_dir =
[nginx]
pid_file = $N/nginx.pid
conf = $N/nginx.conf
include_dir = $N/ngx-autotune
access_log = $N/logs/access.log
error_log = $N/logs/error.log
EOT
cp "$TMP/agent.conf" "$TMP/agent.conf.orig"
setup() { "$AGENT" -c "$TMP/agent.conf" "$@"; }

setup --setup >"$TMP/diff.txt" 2>&1 || { cat "$TMP/diff.txt"; fail "--setup failed"; }
grep -q "^+include $N/ngx-autotune/main.conf;" "$TMP/diff.txt" && grep -q "^+	listen 127.0.0.1:8190;" "$TMP/diff.txt" &&
	grep -q "^+	access_log $N/logs/ngx-autotune.log ngxat_json buffer=64k flush=1s;" "$TMP/diff.txt" &&
	grep -q '^+stub_status_url = http://127.0.0.1:8190/nginx_status' "$TMP/diff.txt" ||
	{ cat "$TMP/diff.txt"; fail "the diff lacks the include, the status server, the site's log or agent.conf's URL"; }
diff -r "$TMP/nginx.orig" "$N" -x '*.pid' -x logs -x 'tmp_*' >/dev/null && cmp -s "$TMP/agent.conf" "$TMP/agent.conf.orig" ||
	fail "--setup without --apply wrote something"
ok "--setup prints the diff (include lines, status server, the site's own log, agent.conf) and writes nothing"

# A failing nginx -t puts every file back: an nginx binary that dumps but fails its test.
cat >"$TMP/nginx-bad" <<'EOT'
#!/bin/sh
for a in "$@"; do [ "$a" = -t ] && { echo "nginx: [emerg] the test nginx refuses this configuration" >&2; exit 1; }; done
exec nginx "$@"
EOT
chmod 755 "$TMP/nginx-bad"
sed "s|^\[nginx\]|[nginx]\nbinary = $TMP/nginx-bad|" "$TMP/agent.conf" >"$TMP/agent-bad.conf"
if "$AGENT" -c "$TMP/agent-bad.conf" --setup --apply >"$TMP/bad.out" 2>&1; then
	fail "--setup --apply passed with a failing nginx -t"
fi
grep -q 'nginx -t failed: \[emerg\] the test nginx refuses this configuration (every file put back)' "$TMP/bad.out" ||
	{ cat "$TMP/bad.out"; fail "nginx's error is not the message"; }
diff -r "$TMP/nginx.orig" "$N" -x '*.pid' -x logs -x 'tmp_*' && [ ! -e "$N/ngx-autotune" ] &&
	cmp -s "$TMP/agent-bad.conf" <(sed "s|^\[nginx\]|[nginx]\nbinary = $TMP/nginx-bad|" "$TMP/agent.conf.orig") ||
	fail "a failing nginx -t left files changed"
[ -z "$(ls "$TMP/store/setup" 2>/dev/null)" ] || fail "a failed setup left a journal to revert"
ok "a failing nginx -t puts every file back byte for byte and prints nginx's error"

# The agent, then the setup, then the agent's reload at once.
"$AGENT" -f -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
APID=$!
CLEANUP+=("kill $APID; wait $APID")
wait_for 10 test -S "$TMP/api.sock" || fail "the agent's socket did not appear"
setup --setup --apply >"$TMP/apply.out" 2>&1 || { cat "$TMP/apply.out"; fail "--setup --apply failed"; }
grep -q 'stub_status answers at http://127.0.0.1:8190/nginx_status' "$TMP/apply.out" ||
	{ cat "$TMP/apply.out"; fail "the new stub_status was not fetched"; }
kill -HUP $APID
knob_ok() {
	"$NGXCTL" -s "$TMP/api.sock" --json knobs |
		jq -e '.knobs[] | select(.name == "nginx.keepalive_requests") | .state == "ok"' >/dev/null
}
wait_for 10 knob_ok || { "$NGXCTL" -s "$TMP/api.sock" knobs | grep -A1 nginx; fail "nginx knobs still unsupported after the reload"; }
ok "--setup --apply, nginx reloaded, stub_status served; the agent's reload sees the nginx knobs supported"
ip netns exec "$NS" wrk -t1 -c4 -d3s "http://127.0.0.1:$PORT/" >"$TMP/wrk.txt" 2>&1
timed() {
	curl -s --unix-socket "$TMP/api.sock" 'http://localhost/v1/frames?since=-4&metrics=http.requests,http.p99_ms,nginx.requests' |
		jq -e '[.frames[] | select(.values["http.requests"] > 0 and .values["http.p99_ms"] != null and
			.values["nginx.requests"] > 0)] | length > 0' >/dev/null
}
wait_for 10 timed || fail "no frame with requests from stub_status and the log and a latency"
grep -q '"request_time":' "$N/logs/ngx-autotune.log" || fail "the agent's log has no request times"
grep -q 'ngxat_json' "$N/logs/site.log" && fail "the site's own log changed format"
ok "stub_status and the agent's log give requests and latency; the operator's logs keep their format"

setup --setup >"$TMP/again.out" 2>&1 && grep -q 'nothing to change' "$TMP/again.out" ||
	{ cat "$TMP/again.out"; fail "a second --setup would change something"; }
ok "a second --setup changes nothing"

setup --revert-setup >"$TMP/revert.out" 2>&1 || { cat "$TMP/revert.out"; fail "--revert-setup failed"; }
diff -r "$TMP/nginx.orig" "$N" -x '*.pid' -x logs -x 'tmp_*' && [ ! -e "$N/ngx-autotune" ] &&
	cmp -s "$TMP/agent.conf" "$TMP/agent.conf.orig" || fail "--revert-setup did not put every file back exactly"
ip netns exec "$NS" nginx -t -c "$N/nginx.conf" >/dev/null 2>&1 || fail "nginx -t fails after the revert"
ok "--revert-setup puts nginx's files and agent.conf back byte for byte"

# ---- Debian's /etc/nginx, copied and run with nginx -c COPY in a namespace of its own; the setup from the host.
cp -a /etc/nginx "$TMP/etc-nginx.orig" && diff -r /etc/nginx "$TMP/etc-nginx.orig" >/dev/null ||
	fail "cannot copy /etc/nginx aside"
CLEANUP+=("diff -r $TMP/etc-nginx.orig /etc/nginx || { rm -rf /etc/nginx && cp -a $TMP/etc-nginx.orig /etc/nginx; }")
etc_same() { diff -r "$TMP/etc-nginx.orig" /etc/nginx; }
NS2=ngxat-setup2-$$
D=$TMP/debian
ip netns add "$NS2" || fail "cannot create namespace $NS2"
CLEANUP+=("ip netns del $NS2")
ip -n "$NS2" link set lo up
ip -n "$NS2" addr add 10.78.21.1/32 dev lo
# The copy stands alone: its paths and symbolic links into /etc/nginx lead into the copy; pid and logs in $TMP.
cp -a /etc/nginx "$D"
grep -rlI /etc/nginx "$D" | xargs -r sed -i "s|/etc/nginx|$D|g"
while read -r l; do
	t=$(readlink "$l")
	case $t in /etc/nginx/*) ln -sfn "$D/${t#/etc/nginx/}" "$l" ;; esac
done < <(find "$D" -type l)
sed -i "s|^pid .*|pid $TMP/debian.pid;|; s|/var/log/nginx|$TMP/dlogs|g" "$D/nginx.conf"
mkdir -p "$TMP/dlogs" "$TMP/store2"
printf 'server {\n\tlisten 10.78.21.1:8098;\n\treturn 204;\n}\n' >"$D/conf.d/ns-only.conf"
cp -a "$D" "$TMP/debian.orig"
grep -q "^include $D/modules-enabled/\*.conf;" "$D/nginx.conf" && grep -q "worker_connections 768;" "$D/nginx.conf" ||
	fail "the copy is not Debian's stock nginx.conf"
ip netns exec "$NS2" nginx -c "$D/nginx.conf" || fail "nginx -c COPY did not start"
CLEANUP+=("kill -QUIT \$(cat $TMP/debian.pid)")
wait_for 5 test -s "$TMP/debian.pid" || fail "no pid file for nginx -c COPY"
nginx -t -q -c "$D/nginx.conf" 2>/dev/null && fail "nginx -t of the copy passes outside its namespace: it cannot tell"
cat >"$TMP/agent2.conf" <<EOT
[agent]
socket = $TMP/api2.sock
socket_group =
[store]
path = $TMP/store2/ngx-autotune.db
[policies]
dir = $srcdir/policies
override_dir =
[nginx]
pid_file = $TMP/debian.pid
include_dir = $TMP/debian-inc
access_log = $TMP/dlogs/access.log
error_log = $TMP/dlogs/error.log
EOT
cp "$TMP/agent2.conf" "$TMP/agent2.conf.orig"
sed 's|^\[nginx\]|[nginx]\nconf = /etc/nginx/nginx.conf|' "$TMP/agent2.conf" >"$TMP/agent2-etc.conf"
cp "$TMP/agent2-etc.conf" "$TMP/agent2-etc.conf.orig"
copy_same() { diff -r "$TMP/debian.orig" "$D"; }
ngxctl2() { NGXAT_AGENT_BIN=$AGENT "$NGXCTL" -c "$1" "${@:2}"; }

if ngxctl2 "$TMP/agent2-etc.conf" setup --apply >"$TMP/other.out" 2>&1; then
	cat "$TMP/other.out"
	fail "setup --apply went on with [nginx] conf naming another file than the running master's"
fi
refusal="[nginx] conf in $TMP/agent2-etc.conf names /etc/nginx/nginx.conf, but the running nginx"
refusal+=" (master $(cat "$TMP/debian.pid")) was started with $D/nginx.conf"
grep -qF "$refusal" "$TMP/other.out" && grep -q 'nothing changed' "$TMP/other.out" ||
	{ cat "$TMP/other.out"; fail "the refusal does not name both paths"; }
copy_same && etc_same && cmp -s "$TMP/agent2-etc.conf" "$TMP/agent2-etc.conf.orig" && [ ! -e "$TMP/debian-inc" ] &&
	[ -z "$(ls "$TMP/store2/setup" 2>/dev/null)" ] || fail "the refused setup changed something"
ok "[nginx] conf naming another file than the running master's: refused with both paths, nothing changed"

ngxctl2 "$TMP/agent2.conf" setup --apply >"$TMP/copy.out" 2>&1 ||
	{ cat "$TMP/copy.out"; fail "setup --apply of the copy failed"; }
grep -qF "nginx master $(cat "$TMP/debian.pid") runs $D/nginx.conf (its -c)" "$TMP/copy.out" &&
	grep -q 'stub_status answers at http://127.0.0.1:8190/nginx_status' "$TMP/copy.out" ||
	{ cat "$TMP/copy.out"; fail "the setup did not say it works on the copy, or did not see its stub_status"; }
grep -q "^include $TMP/debian-inc/main.conf;" "$D/nginx.conf" &&
	grep -q "include $TMP/debian-inc/setup.conf;" "$D/nginx.conf" || fail "the copy has no include lines"
etc_same || fail "the setup of the copy changed /etc/nginx"
ip netns exec "$NS2" curl -sf http://127.0.0.1:8190/nginx_status | grep -q '^Active connections:' ||
	fail "the copy's nginx does not serve the stub_status the setup added"
ok "ngxctl setup --apply edits the running nginx -c COPY, checks it in nginx's namespace, exits 0; /etc/nginx untouched"

ngxctl2 "$TMP/agent2.conf" revert --setup >"$TMP/copy-revert.out" 2>&1 ||
	{ cat "$TMP/copy-revert.out"; fail "revert --setup of the copy failed"; }
copy_same && [ ! -e "$TMP/debian-inc" ] && cmp -s "$TMP/agent2.conf" "$TMP/agent2.conf.orig" ||
	fail "revert --setup did not put the copy back byte for byte"
etc_same || fail "revert --setup changed /etc/nginx"
ok "ngxctl revert --setup puts COPY and agent.conf back byte for byte; /etc/nginx untouched"
echo "$checks checks passed"
