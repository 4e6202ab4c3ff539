#!/bin/bash
# A large nginx configuration under the unit's memory limit (issue 22, R5). Found: the agent, in a 64 MiB memory
# cgroup as the unit's MemoryMax=64M puts it, was OOM-killed at start with 20 MB of configuration (the unit would
# restart it in a loop), and its nginx -T child 31 times in 12 s with 20 MB of maps, holding the start 4 s. Here
# the real agent runs in such a cgroup (v2, or v1) beside a real nginx in a network namespace whose configuration
# the test grows and shrinks on disk, reloading the agent (SIGHUP) between:
#   1. 20 MiB, mostly comments (nginx reads it within [nginx] memory_max): the agent starts, answers, and the nginx
#      knobs are off because nginx -T printed more than [nginx] dump_max (4 MiB), said in /v1/knobs, in the
#      doctor's finding and in the log; the kernel knobs are not;
#   2. 3 MiB of the same: under the bound, the nginx knobs work again;
#   3. 20 MiB of maps (nginx itself needs 237 MiB to read them): off, because nginx -T ran out of [nginx]
#      memory_max (32 MiB), not a configuration nginx refuses;
# through all of it the agent stays up, the OOM killer ends nothing in the cgroup, and the API answers. The peak of
# the cgroup and the time to the first answer are printed (figures: bench/big-conf.sh). Costs about 25 s.
TEST_NAME=big-conf
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx jq curl ip awk
NS=ngxat-bigconf-$$
PORT=18620
LIMIT=$((64 << 20))

# big_conf KIND KIB: the files the http block includes, KIB KiB of them in files of 256 KiB: "comments" (a map of
# 100 redirects each, the rest comments, as generated files with their documentation are) or "maps" (all entries).
big_conf() {
	local i
	rm -f "$BIG"/*.conf
	for ((i = 0; i < $2 / 256; i++)); do
		awk -v i="$i" -v kind="$1" 'BEGIN {
			printf "map $uri $big_%d {\n", i; s = 20
			for (n = 0; s < 262144 - 100; n++) {
				if (kind == "maps" || n < 100)
					l = sprintf("\t/old/%d/%d/page-%d.html /new/%d/%d;", i, n, n * 7, i, n)
				else
					l = sprintf("\t# /old/%d/%d/page-%d.html was moved with the rest of section %d", i, n, n * 7, i)
				print l; s += length(l) + 1
			}
			print "}" }' >"$BIG/part-$i.conf" || return 1
	done
}

# knobs_why KIND: the distinct reasons of the nginx knobs (directives, listen parameters, the listen queue), one a
# line, with their state.
knobs_why() {
	api /v1/knobs | jq -r '[.knobs[] | select(.kind | test("^(nginx_directive|listen_param|listen_queue)$")) |
		"\(.state): \(.why // "")"] | unique[]'
}

# nginx_off RE: whether every nginx knob is unsupported with a reason matching the regex RE.
nginx_off() {
	api /v1/knobs | jq -e --arg re "$1" '[.knobs[] |
		select(.kind | test("^(nginx_directive|listen_param|listen_queue)$"))] |
		length > 0 and all(.state == "unsupported" and (.why // "" | test($re)))' >/dev/null
}

nginx_on() {
	api /v1/knobs | jq -e '[.knobs[] | select(.kind == "nginx_directive")] | length > 0 and all(.state == "ok")' \
		>/dev/null
}

kernel_on() {
	[ "$(api /v1/knobs | jq -r '.knobs[] | select(.name == "net.core.somaxconn") | .state')" = ok ]
}

alive() {
	kill -0 "$AGENT_PID" 2>/dev/null || fail "the agent is gone: $(tail -n 5 "$TMP/agent.log")"
	[ "$(memcg_oom_kills)" = 0 ] || fail "the OOM killer ended $(memcg_oom_kills) process(es) in the cgroup"
}

memcg_new $LIMIT || skip "cannot make a memory cgroup here (cgroup v2 with the memory controller, or v1)"
scn_netns "$NS" || fail "cannot create namespace $NS"
BIG=$TMP/big
mkdir -p "$BIG"
SCN_HTTP="map_hash_max_size 1048576; map_hash_bucket_size 256; include $BIG/*.conf;" scn_nginx "$NS" $PORT ||
	fail "nginx did not start"
scn_agent_conf "$TMP/agent.conf" $PORT
# The files grow after nginx started: the agent's nginx -T reads them from disk, nginx need not load them.
big_conf comments $((20 << 10)) || fail "cannot write the configuration"
ok "nginx in $NS; 20 MiB of configuration on disk, mostly comments; a $((LIMIT >> 20)) MiB memory cgroup ($MEMCG)"

rm -f "$TMP/notify.log"
"$NOTIFY_LISTEN" "$TMP/notify.sock" 600 >"$TMP/notify.log" &
CLEANUP+=("kill $!")
wait_for 5 test -S "$TMP/notify.sock" || fail "notify-listen did not start"
start=$(date +%s%N)
NOTIFY_SOCKET="$TMP/notify.sock" memcg_run "$AGENT" --foreground -c "$TMP/agent.conf" >>"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 30 api /v1/status || fail "the API does not answer"
echo "# the API answered $((($(date +%s%N) - start) / 1000000)) ms after the start (polled every 100 ms)"
wait_for 30 grep -q READY=1 "$TMP/notify.log" || fail "no READY=1"
alive
wait_ticks 3 || fail "the agent does not tick"
alive
nginx_off '^nginx -T printed 20\.[0-9] MiB, more than the 4 MiB the agent reads \(\[nginx\] dump_max\)$' ||
	fail "the nginx knobs do not say why they are off: $(knobs_why)"
kernel_on || fail "the kernel knobs went off too: $(api /v1/knobs | jq -c '.knobs[] | select(.kind == "sysctl")')"
echo "# $(knobs_why)"
ok "20 MiB: up, answering, the nginx knobs off for [nginx] dump_max, the kernel knobs on"

# doctor_names KEY: whether the doctor's finding doctor.nginx_config says to raise [nginx] KEY.
doctor_names() {
	api /v1/advisories | jq -e --arg k "raise [nginx] $1 " '.advisories[] | select(.id == "doctor.nginx_config") |
		select(.fix | contains($k))' >/dev/null
}
wait_for 20 doctor_names dump_max ||
	fail "no doctor finding naming dump_max: $(api /v1/advisories | jq -c '[.advisories[] | {id, evidence, fix}]')"
grep -q "doctor: nginx -T printed 20\.[0-9] MiB, more than the 4 MiB the agent reads (\[nginx\] dump_max)" \
	"$TMP/agent.log" || fail "no log line with the size and the setting"
alive
ok "the doctor's finding names dump_max; the log says the size and the setting"

big_conf comments $((3 << 10)) || fail "cannot write the configuration"
kill -HUP "$AGENT_PID"
wait_for 30 nginx_on || fail "3 MiB: the nginx knobs stay off: $(knobs_why)"
alive
ok "3 MiB (under the bound): the nginx knobs work again after a reload"

big_conf maps $((20 << 10)) || fail "cannot write the configuration"
kill -HUP "$AGENT_PID"
oom_re='^nginx -T ran out of memory within the 32 MiB the agent lets it use \(\[nginx\] memory_max\): '
oom_re+='\[emerg\] .*\(12: Cannot allocate memory\)'
wait_for 30 nginx_off "$oom_re" || fail "20 MiB of maps: $(knobs_why)"
kernel_on || fail "the kernel knobs went off"
wait_ticks 3 || fail "the agent does not tick"
alive
echo "# $(knobs_why)"
echo "# peak of the cgroup: $(memcg_peak) MiB of $((LIMIT >> 20)) (with v1, the page cache the agent and nginx -T read)"
ok "20 MiB of maps: the nginx knobs off for [nginx] memory_max; the agent up, nothing OOM-killed"
echo "1..$checks"
