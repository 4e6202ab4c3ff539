#!/bin/bash
# The doctor against a real nginx (Debian's package) in its own network namespace, with known mistakes:
# worker_processes 1 on a host with more CPUs, listen backlog=8192 where the namespace's net.core.somaxconn is
# 1024 (the host's is left alone), and an access_log without buffer=. The running agent finds exactly those
# through `ngxctl doctor --json` (and reads somaxconn in nginx's namespace, not its own), ngxctl doctor's exit
# code follows the severities, and after the operator fixes the configuration and reloads nginx the agent checks
# again at once (a new generation of workers) and the findings are gone.
TEST_NAME=doctor
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx ip jq curl nproc
NS=ngxat-doc-$$
PORT=18101
N=$TMP/nginx
INC=$N/ngx-autotune
CPUS=$(nproc)
WP=1
[ "$CPUS" -gt 1 ] || WP=2

mkdir -p "$N/logs" "$INC"
: >"$INC/main.conf"
: >"$INC/events.conf"
: >"$INC/http.conf"
# write_conf WORKERS BACKLOG LOGOPTS
write_conf() {
	cat >"$N/nginx.conf" <<EOT
include $INC/main.conf;
worker_processes $1;
pid $N/nginx.pid;
error_log $N/logs/error.log warn;
events {
	include $INC/events.conf;
	worker_connections 1024;
}
http {
	include $INC/http.conf;
	log_format ngxat_json escape=json '{"time":"\$time_iso8601","status":\$status,"request_time":\$request_time,'
		'"upstream_response_time":"\$upstream_response_time","upstream_addr":"\$upstream_addr",'
		'"bytes":\$body_bytes_sent}';
	access_log $N/logs/access.log ngxat_json$3;
	client_body_temp_path $N/tmp_body;
	proxy_temp_path $N/tmp_proxy;
	fastcgi_temp_path $N/tmp_fastcgi;
	uwsgi_temp_path $N/tmp_uwsgi;
	scgi_temp_path $N/tmp_scgi;
	server {
		listen 127.0.0.1:$PORT backlog=$2;
		location = /nginx_status { stub_status; access_log off; }
		location / { return 200 "hello from nginx\n"; }
	}
}
EOT
}
write_conf "$WP" 8192 ""

ip netns add "$NS" || fail "cannot create namespace $NS"
CLEANUP+=("ip netns del $NS")
ip -n "$NS" link set lo up
ip netns exec "$NS" sysctl -qw net.core.somaxconn=1024 || fail "cannot set somaxconn in $NS"
ip netns exec "$NS" nginx -c "$N/nginx.conf" -e "$N/logs/error.log" || fail "nginx did not start"
CLEANUP+=("kill -QUIT \$(cat $N/nginx.pid)")
wait_for 5 test -s "$N/nginx.pid" || fail "no pid file"
ok "nginx $(cat "$N/nginx.pid") in $NS: worker_processes $WP on $CPUS CPUs, backlog=8192, somaxconn 1024 there"

NGINX_DIR=$N
agent_conf "$TMP/agent.conf" $PORT
cat >>"$TMP/agent.conf" <<EOT
binary = $(command -v nginx)
conf = $N/nginx.conf
include_dir = $INC
timeout = 5s
[doctor]
interval = 30s
EOT
"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 10 test -S "$TMP/api.sock" || fail "the agent did not start"
wait_for 15 sh -c "curl -s --unix-socket '$TMP/api.sock' http://localhost/v1/advisories | jq -e '.checked_ms > 0'" ||
	fail "no check 15 s after start"
ok "the agent checked nginx at start"

"$NGXCTL" -s "$TMP/api.sock" doctor --json >"$TMP/doctor.json"
rc=$?
ids=$(jq -c '[.advisories[] | [.severity, .id, (.subject // "")]]' "$TMP/doctor.json")
want_rc=$(jq 'if .counts.critical > 0 then 2 elif .counts.warning > 0 then 1 else 0 end' "$TMP/doctor.json")
[ "$rc" = "$want_rc" ] && [ "$rc" -ge 1 ] || fail "ngxctl doctor --json exited $rc, want $want_rc (>= 1): $ids"
has() { # has SEVERITY ID SUBJECT
	jq -e --arg sev "$1" --arg id "$2" --arg sub "$3" \
		'.advisories[] | select(.severity == $sev and .id == $id and (.subject // "") == $sub)' "$TMP/doctor.json" >/dev/null
}
has warning nginx.worker_processes "" || fail "no worker_processes finding: $ids"
has warning nginx.listen_backlog "127.0.0.1:$PORT" || fail "no backlog finding: $ids"
has info nginx.access_log_buffer "" || fail "no access_log buffer finding: $ids"
ok "ngxctl doctor --json: worker_processes, backlog above somaxconn and unbuffered access_log (exit $rc)"
jq -e --arg p $PORT '.advisories[] | select(.id == "nginx.listen_backlog") | .evidence |
	test("backlog=8192 at .*nginx.conf:21, but net.core.somaxconn is 1024 in nginx.s network namespace")' \
	"$TMP/doctor.json" >/dev/null || fail "somaxconn not read in nginx's namespace: $(jq '.advisories[] |
	select(.id == "nginx.listen_backlog")' "$TMP/doctor.json")"
jq -e --arg c "$CPUS" --arg w "$WP" '.advisories[] | select(.id == "nginx.worker_processes") | .evidence |
	test("worker_processes \($w) at .*nginx.conf:2; \($c) CPUs online")' "$TMP/doctor.json" >/dev/null ||
	fail "worker_processes evidence: $(jq '.advisories[] | select(.id == "nginx.worker_processes")' "$TMP/doctor.json")"
ok "evidence: somaxconn 1024 read in nginx's namespace (the host has $(cat /proc/sys/net/core/somaxconn)), file:line"
for absent in nginx.stub_status nginx.log_format_timing agent.include agent.access_log doctor.nginx_config; do
	jq -e --arg id $absent '[.advisories[] | select(.id == $id)] | length == 0' "$TMP/doctor.json" >/dev/null ||
		fail "$absent reported for a configuration that has it right: $ids"
done
ok "nothing reported that the configuration has right (stub_status, log format, includes, the agent's log)"
"$NGXCTL" -s "$TMP/api.sock" doctor >"$TMP/doctor.txt"
[ $? = "$rc" ] || fail "the human report's exit code differs from --json's"
grep -q "^WARNING   nginx.listen_backlog \[127.0.0.1:$PORT\]" "$TMP/doctor.txt" || fail "human report: $(cat "$TMP/doctor.txt")"
ok "ngxctl doctor: the human report, same exit code"

# The operator fixes all three and reloads nginx: a check follows at once, long before the 30 s interval.
checked=$(jq .checked_ms "$TMP/doctor.json")
first_seen=$(jq '[.advisories[] | .first_seen_ms] | min' "$TMP/doctor.json")
write_conf auto 1024 " buffer=32k flush=1s"
ip netns exec "$NS" nginx -t -q -c "$N/nginx.conf" -e "$N/logs/error.log" || fail "the fixed configuration is refused"
t0=$(date +%s%3N)
kill -HUP "$(cat "$N/nginx.pid")"
wait_for 15 sh -c "curl -s --unix-socket '$TMP/api.sock' http://localhost/v1/advisories | jq -e '.checked_ms > $checked'" ||
	fail "no check after nginx reloaded"
t1=$(date +%s%3N)
"$NGXCTL" -s "$TMP/api.sock" doctor --json >"$TMP/fixed.json"
rc=$?
want_rc=$(jq 'if .counts.critical > 0 then 2 elif .counts.warning > 0 then 1 else 0 end' "$TMP/fixed.json")
[ "$rc" = "$want_rc" ] || fail "exit $rc, want $want_rc"
for gone in nginx.worker_processes nginx.listen_backlog nginx.access_log_buffer; do
	jq -e --arg id $gone '[.advisories[] | select(.id == $id)] | length == 0' "$TMP/fixed.json" >/dev/null ||
		fail "$gone still reported after the fix: $(jq -c '[.advisories[] | .id]' "$TMP/fixed.json")"
done
jq -e --argjson f "$first_seen" '[.advisories[] | select(.first_seen_ms < $f)] | length == 0' "$TMP/fixed.json" \
	>/dev/null || fail "a first_seen_ms older than the first check"
ok "fixed and reloaded: checked again after $((t1 - t0)) ms (new workers), the three findings gone, exit $rc"
grep -q "advisory resolved: nginx.worker_processes" "$TMP/agent.log" || fail "the resolution is not logged"
ok "the resolution is logged"

kill -TERM $AGENT_PID
wait $AGENT_PID
[ $? = 0 ] || fail "the agent did not exit cleanly"
ok "SIGTERM: clean exit"
echo "PASS: $checks checks"
