#!/bin/bash
# The doctor's live checks against a fake /proc and /sys tree (--root), with a stand-in nginx binary that prints a
# captured `nginx -T` dump (tests/fixtures/doctor): the running agent's findings through GET /v1/advisories and
# ngxctl doctor (exit codes, the human report), the counts in /v1/status, a critical finding in the audit trail
# and the log with its structured fields, a new run when the master pid changes (first_seen kept, resolved
# findings gone), an nginx -T that hangs (killed at [nginx] timeout) or prints garbage (a clear finding, no
# crash), and the one-shot ngx-autotune --doctor that ngxctl doctor falls back to when no agent answers.
TEST_NAME=doctor-fakeroot
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_cmd jq curl

R=$TMP/root
NPID=4242
FX=$srcdir/tests/fixtures/doctor
make_fake_root "$R" $NPID sysfs
echo $NPID >"$TMP/nginx.pid"
: >"$TMP/error.log"

# The host the checks see: tw_recycle on (critical), somaxconn 128, 1024 open files for nginx, THP always,
# powersave governors, eth0 a device with one queue and no RPS.
mkdir -p "$R/proc/sys/net/core" "$R/proc/sys/net/ipv4" "$R/sys/kernel/mm/transparent_hugepage" \
	"$R/sys/class/net/eth0/queues/rx-0" "$R/sys/devices/system/cpu/cpu0/cpufreq" \
	"$R/sys/devices/system/cpu/cpu1/cpufreq"
echo 128 >"$R/proc/sys/net/core/somaxconn"
echo 1 >"$R/proc/sys/net/ipv4/tcp_tw_recycle"
printf '32768\t60999\n' >"$R/proc/sys/net/ipv4/ip_local_port_range"
printf 'Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 524288               files     \n' \
	>"$R/proc/$NPID/limits"
cp "$R/proc/$NPID/limits" "$R/proc/$((NPID + 1))/limits"
printf 'MemTotal:        8000000 kB\nMemFree:         4000000 kB\n' >"$R/proc/meminfo"
echo '[always] madvise never' >"$R/sys/kernel/mm/transparent_hugepage/enabled"
echo powersave >"$R/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
echo powersave >"$R/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"
echo 0 >"$R/sys/class/net/eth0/queues/rx-0/rps_cpus"

# Requests that spend 95% of their time upstream, most of it at 10.0.0.5.
for i in $(seq 1 150); do
	echo '{"status":200,"request_time":0.200,"upstream_response_time":"0.190","upstream_addr":"10.0.0.5:8080"}'
	echo '{"status":200,"request_time":0.020,"upstream_response_time":"0.019","upstream_addr":"10.0.0.6:8080"}'
done >"$TMP/access.log"

# nginx, as far as the doctor asks it: `nginx -q -T -c CONF` prints the dump named in $TMP/dump (or hangs).
cat >"$TMP/nginx" <<EOT
#!/bin/sh
case "\$(cat $TMP/dump)" in
hang) exec sleep 59.$$ ;;
*) exec cat "\$(cat $TMP/dump)" ;;
esac
EOT
chmod +x "$TMP/nginx"
echo "$FX/workers.txt" >"$TMP/dump"

fake_root_conf "$TMP/agent.conf" "$R" "$TMP/access.log"
cat >>"$TMP/agent.conf" <<EOT
[nginx]
binary = $TMP/nginx
conf = /tmp/ngxat-doctor/workers/nginx.conf
include_dir = /tmp/ngxat-doctor/workers/ngx-autotune
error_log = $TMP/error.log
timeout = 1s
[doctor]
interval = 30s
backend_keepalive_timeout = 5s
EOT
sed -i 's|^error_log =$||' "$TMP/agent.conf"
"$AGENT" -n -c "$TMP/agent.conf" | grep -qx "configuration OK" || fail "the [doctor] section is not accepted"
ok "ngx-autotune -n accepts [doctor] interval and backend_keepalive_timeout"

"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 10 test -S "$TMP/api.sock" || fail "the agent did not start"
wait_for 10 sh -c "curl -s --unix-socket '$TMP/api.sock' http://localhost/v1/advisories | jq -e '.checked_ms > 0'" ||
	fail "no advisories 10 s after start: $(api /v1/advisories)"
adv=$(api /v1/advisories)
echo "$adv" >"$TMP/advisories-1.json"
ok "the first check ran at start"

has() { # has JSON ID SUBJECT SEVERITY
	jq -e --arg id "$2" --arg sub "$3" --arg sev "$4" \
		'.advisories[] | select(.id == $id and (.subject // "") == $sub and .severity == $sev)' <<<"$1" >/dev/null
}
for want in "kernel.tcp_tw_recycle||critical" "nginx.worker_processes||warning" \
	"nginx.worker_rlimit_nofile||warning" "nginx.listen_backlog|127.0.0.1:8081|warning" \
	"nginx.listen_backlog|127.0.0.1:8082|warning" "nginx.accept_mutex||warning" "kernel.thp||info" \
	"cpu.governor||info" "net.nic_queues|eth0|info" "http.upstream_time||warning" \
	"agent.include|main|warning"; do
	IFS='|' read -r id sub sev <<<"$want"
	has "$adv" "$id" "$sub" "$sev" || fail "no $sev $id[$sub] in $(jq -c '[.advisories[] | [.id, .subject]]' <<<"$adv")"
done
ok "live findings from the fake tree and configuration findings from the dump"
jq -e '.advisories[0].id == "http.upstream_time"' <<<"$adv" >/dev/null || fail "where the time goes is not first"
jq -e '.advisories[0].evidence | test("95% of request time over the last 300 requests.*10.0.0.5:8080 \\(150 requests, mean 190 ms\\)")' \
	<<<"$adv" >/dev/null || fail "the upstream share or the slow upstream is wrong: $(jq '.advisories[0]' <<<"$adv")"
ok "the first advisory says the upstreams take 95% of the time and names 10.0.0.5:8080"
jq -e '.advisories[] | select(.id == "nginx.listen_backlog" and .subject == "127.0.0.1:8081") |
	(.evidence | test("backlog=65535 at /tmp/ngxat-doctor/workers/nginx.conf:12.*somaxconn is 128")) and
	.where == "/tmp/ngxat-doctor/workers/nginx.conf:12"' <<<"$adv" >/dev/null || fail "backlog evidence"
jq -e '.advisories[] | select(.id == "nginx.worker_processes") | .evidence | test("worker_processes 1 .* 2 CPUs online")' \
	<<<"$adv" >/dev/null || fail "worker_processes evidence (2 CPUs from the fake /proc/stat)"
ok "evidence with the values seen and file:line"
jq -e '.counts.critical == ([.advisories[] | select(.severity == "critical")] | length) and
	.counts.warning == ([.advisories[] | select(.severity == "warning")] | length)' <<<"$adv" >/dev/null ||
	fail "counts do not match the list"
api /v1/status | jq -e --argjson c "$(jq .counts <<<"$adv")" \
	'.advisories.critical == $c.critical and .advisories.warning == $c.warning and .advisories.info == $c.info and
	 .advisories.checked_ms > 0' >/dev/null || fail "status does not count the advisories: $(api /v1/status | jq .advisories)"
"$NGXCTL" -s "$TMP/api.sock" status | grep -q "^advice: 1 critical, [0-9]* warning(s), [0-9]* info (ngxctl doctor)" ||
	fail "ngxctl status does not show the advisories: $("$NGXCTL" -s "$TMP/api.sock" status)"
ok "the status summary counts advisories by severity (API and ngxctl status)"

"$NGXCTL" -s "$TMP/api.sock" doctor >"$TMP/doctor.txt"
rc=$?
[ $rc = 2 ] || fail "ngxctl doctor exited $rc with a critical finding, want 2"
grep -q "^CRITICAL  kernel.tcp_tw_recycle: tcp_tw_recycle is on" "$TMP/doctor.txt" || fail "human report: $(cat "$TMP/doctor.txt")"
grep -q "checked .* by the running agent" "$TMP/doctor.txt" || fail "the report does not say it came from the agent"
"$NGXCTL" -s "$TMP/api.sock" doctor --json | jq -e '.advisories | length > 5' >/dev/null || fail "ngxctl doctor --json"
ok "ngxctl doctor: human report and --json from the agent, exit 2 (critical)"

audit=$(api "/v1/audit?limit=100")
jq -e '.audit[] | select(.action == "advisory" and .outcome == "critical" and (.detail | test("^kernel.tcp_tw_recycle: ")))' \
	<<<"$audit" >/dev/null || fail "the critical finding is not in the audit trail: $audit"
[ "$(jq '[.audit[] | select(.action == "advisory")] | length' <<<"$audit")" = 1 ] ||
	fail "findings that are not critical went to the audit trail"
grep -q "advisory (critical) kernel.tcp_tw_recycle" "$TMP/agent.log" || fail "the critical finding is not logged"
# ... and an audit event on /v1/events, as every audit row is (replayed from the first event of this run).
curl -sN --max-time 2 -H "Last-Event-ID: 0" --unix-socket "$TMP/api.sock" http://localhost/v1/events >"$TMP/events.out"
grep -A1 '^event: audit$' "$TMP/events.out" | grep '^data: ' | cut -c7- |
	jq -se 'map(select(.action == "advisory" and .outcome == "critical")) | length == 1' >/dev/null ||
	fail "no audit event for the critical finding: $(grep -c . "$TMP/events.out") lines of events"
ok "the new critical finding is in the audit trail, on /v1/events and in the log"

# nginx restarted with another master (and a tuned configuration, tw_recycle off): a new run at once.
first=$(jq '.advisories[] | select(.id == "kernel.thp") | .first_seen_ms' <<<"$adv")
checked=$(jq .checked_ms <<<"$adv")
NPID2=5252
mkdir -p "$R/proc/$NPID2/net" "$R/proc/$NPID2/task/$NPID2"
cp -r "$R/proc/$NPID/net/." "$R/proc/$NPID2/net/"
echo "$NPID2 (nginx) S 1 $NPID2" >"$R/proc/$NPID2/stat"
echo "" >"$R/proc/$NPID2/task/$NPID2/children"
echo 0 >"$R/proc/sys/net/ipv4/tcp_tw_recycle"
echo "$FX/tuned.txt" >"$TMP/dump"
echo $NPID2 >"$TMP/nginx.pid"
wait_for 10 sh -c "curl -s --unix-socket '$TMP/api.sock' http://localhost/v1/advisories | jq -e '.checked_ms > $checked'" ||
	fail "no new check after the master pid changed"
adv=$(api /v1/advisories)
echo "$adv" >"$TMP/advisories-2.json"
grep -q "nginx master pid changed from $NPID to $NPID2" "$TMP/agent.log" || fail "the pid change was not seen"
for gone in kernel.tcp_tw_recycle nginx.worker_processes nginx.accept_mutex; do
	jq -e --arg id $gone '[.advisories[] | select(.id == $id)] | length == 0' <<<"$adv" >/dev/null ||
		fail "$gone still reported after nginx came back tuned"
done
jq -e --argjson f "$first" --argjson c "$checked" \
	'.advisories[] | select(.id == "kernel.thp") | .first_seen_ms == $f and .last_seen_ms > $c' <<<"$adv" \
	>/dev/null || fail "kernel.thp lost its first sighting: $(jq -c '.advisories[] | select(.id == "kernel.thp")' <<<"$adv")"
grep -q "advisory resolved: kernel.tcp_tw_recycle" "$TMP/agent.log" || fail "the resolution is not logged"
ok "a new master: checked again, fixed findings gone, the rest keep first_seen_ms"

# SIGHUP (the agent's own configuration reloaded) checks again too: [nginx] paths may have changed.
checked=$(jq .checked_ms <<<"$adv")
kill -HUP $AGENT_PID
wait_for 10 sh -c "curl -s --unix-socket '$TMP/api.sock' http://localhost/v1/advisories | jq -e '.checked_ms > $checked'" ||
	fail "no check after SIGHUP"
adv=$(api /v1/advisories)
ok "SIGHUP: checked again"

# An nginx -T that hangs is killed at [nginx] timeout; one that prints garbage is a finding, not a crash.
echo hang >"$TMP/dump"
echo 6363 >"$TMP/nginx.pid"
mkdir -p "$R/proc/6363"
echo "6363 (nginx) S 1 6363" >"$R/proc/6363/stat"
checked=$(jq .checked_ms <<<"$adv")
t0=$(date +%s%3N)
wait_for 10 sh -c "curl -s --unix-socket '$TMP/api.sock' http://localhost/v1/advisories | jq -e '.checked_ms > $checked'" ||
	fail "no check completed with a hanging nginx -T"
t1=$(date +%s%3N)
adv=$(api /v1/advisories)
jq -e '.advisories[] | select(.id == "doctor.nginx_config") | .evidence | test("nginx -T did not finish within 1000 ms")' \
	<<<"$adv" >/dev/null || fail "hung nginx -T: $(jq -c '.advisories[] | select(.id == "doctor.nginx_config")' <<<"$adv")"
has "$adv" kernel.thp "" info || fail "the live checks did not run without a configuration"
wait_for 3 sh -c "! pgrep -f '^sleep 59.$$\$'" || fail "the hung nginx -T is still running"
api /v1/status | jq -e '.tick.count > 0' >/dev/null || fail "the API stopped answering"
ok "a hung nginx -T is killed after 1 s ($((t1 - t0)) ms to the next report); the live checks still ran"
printf '# configuration file /x/nginx.conf:\nhttp { server {\n\n' >"$TMP/garbage.txt"
echo "$TMP/garbage.txt" >"$TMP/dump"
echo 7474 >"$TMP/nginx.pid"
mkdir -p "$R/proc/7474"
echo "7474 (nginx) S 1 7474" >"$R/proc/7474/stat"
checked=$(jq .checked_ms <<<"$adv")
wait_for 10 sh -c "curl -s --unix-socket '$TMP/api.sock' http://localhost/v1/advisories | jq -e '.checked_ms > $checked'" ||
	fail "no check completed with a garbled dump"
api /v1/advisories | jq -e '.advisories[] | select(.id == "doctor.nginx_config") |
	.evidence | test("the output of nginx -T: /x/nginx.conf:2: unexpected end of file")' >/dev/null ||
	fail "garbled dump: $(api /v1/advisories | jq -c '.advisories[] | select(.id == "doctor.nginx_config")')"
kill -0 $AGENT_PID || fail "the agent died on a garbled dump"
ok "a garbled nginx -T: a clear finding with the parser's reason, the agent keeps running"

kill -TERM $AGENT_PID
wait $AGENT_PID
rc=$?
[ $rc = 0 ] || fail "agent exited with $rc"
ok "SIGTERM: clean exit"

# No agent: ngx-autotune --doctor, and ngxctl doctor falling back to it.
echo "$FX/workers.txt" >"$TMP/dump"
echo 1 >"$R/proc/sys/net/ipv4/tcp_tw_recycle"
echo $NPID >"$TMP/nginx.pid"
"$AGENT" --doctor -c "$TMP/agent.conf" >"$TMP/once.json" 2>"$TMP/once.err"
rc=$?
[ $rc = 2 ] || fail "ngx-autotune --doctor exited $rc, want 2: $(cat "$TMP/once.err")"
has "$(cat "$TMP/once.json")" kernel.tcp_tw_recycle "" critical || fail "--doctor: $(cat "$TMP/once.json")"
has "$(cat "$TMP/once.json")" nginx.worker_processes "" warning || fail "--doctor misses the configuration"
ok "ngx-autotune --doctor: the same checks once, JSON, exit 2"
NGXAT_AGENT_BIN=$AGENT "$NGXCTL" -c "$TMP/agent.conf" doctor >"$TMP/local.txt" 2>"$TMP/local.err"
rc=$?
[ $rc = 2 ] || fail "ngxctl doctor without an agent exited $rc, want 2: $(cat "$TMP/local.err")"
grep -q "checking locally" "$TMP/local.err" || fail "ngxctl doctor does not say it ran locally"
grep -q "^CRITICAL  kernel.tcp_tw_recycle" "$TMP/local.txt" || fail "local report: $(cat "$TMP/local.txt")"
ok "ngxctl doctor with no agent runs ngx-autotune --doctor and shows the same report"
echo 0 >"$R/proc/sys/net/ipv4/tcp_tw_recycle"
NGXAT_AGENT_BIN=$AGENT "$NGXCTL" -c "$TMP/agent.conf" doctor --json >"$TMP/local.json" 2>/dev/null
rc=$?
[ $rc = 1 ] || fail "warnings only: exit $rc, want 1"
jq -e '.counts.critical == 0 and .counts.warning > 0' "$TMP/local.json" >/dev/null || fail "local --json counts"
# The tuned configuration on a host with nothing above info left: its own paths for the agent's files.
echo "$FX/tuned.txt" >"$TMP/dump"
sed -e 's|^access_log = .*|access_log = /tmp/ngxat-doctor/tuned/logs/access.log|' \
	-e 's|^include_dir = .*|include_dir = /tmp/ngxat-doctor/tuned/ngx-autotune|' "$TMP/agent.conf" >"$TMP/clean.conf"
echo performance >"$R/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
echo performance >"$R/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"
echo 'always madvise [never]' >"$R/sys/kernel/mm/transparent_hugepage/enabled"
echo 4096 >"$R/proc/sys/net/core/somaxconn"
sed -i 's/1024                 524288/65536                524288/' "$R/proc/$((NPID + 1))/limits"
NGXAT_AGENT_BIN=$AGENT "$NGXCTL" -c "$TMP/clean.conf" doctor --json >"$TMP/clean.json" 2>/dev/null
rc=$?
[ $rc = 0 ] || fail "info only: exit $rc, want 0: $(jq -c '[.advisories[] | [.severity, .id, .subject]]' "$TMP/clean.json")"
ok "exit 1 with warnings only, 0 with nothing above info"
printf '[agent]\nbogus = 1\n' >"$TMP/bad.conf"
NGXAT_AGENT_BIN=$AGENT "$NGXCTL" -s "$TMP/none.sock" -c "$TMP/bad.conf" doctor >/dev/null 2>"$TMP/bad.err"
rc=$?
[ $rc = 3 ] || fail "a broken configuration: exit $rc, want 3"
"$AGENT" --doctor -c "$TMP/bad.conf" >/dev/null 2>&1
rc=$?
[ $rc = 3 ] || fail "ngx-autotune --doctor with a broken configuration exited $rc, want 3"
ok "no report (a broken configuration): exit 3, never a clean 0"
echo "PASS: $checks checks"
