#!/bin/bash
# A pool of hosts (issue 24, [fleet]): a real etcd (Debian's etcd-server, on loopback in a network namespace of its
# own, started and stopped here, with its authentication on: the agents as a user of the prefix) and three hosts, each its own network namespace with its own nginx and agent, the
# agents in etcd's namespace. Checked:
#   1. every agent joins: ngxctl fleet lists the three, alive; a key written by hand that is not clean text is
#      listed cleaned (the answers stay JSON);
#   2. at most max_in_trial (1) host in trial, sampled all along (the slots in etcd, and each agent's own state): h1
#      in a long trial holds the slot, h2 and h3 wait, their reason naming h1; h3, set to 2, holds to the pool's 1
#      (the smallest its hosts set) and says who set it;
#   3. kill -9 of h1 in trial frees its slot within its lease (3 s): one of the others takes it and tries its change
#      to a verdict while the last waits naming it; h1 is listed gone, and at its restart its host is put back
#      (somaxconn as before) and it joins again;
#   4. etcd stopped: no trial starts, every agent stays up and says why (status and ngxctl fleet); etcd back, the
#      waiting trial starts by itself;
#   5. verdicts put into etcd by hand, outside the local policy or naming a path, are refused and audited; a slot
#      key without a lease is freed;
#   6. the same fault on three more hosts of a pool of their own, max_in_trial 2 (somaxconn 16, 400 clients that
#      close each connection): h4 and h5 at once, both approved: h4's trial is the pool's canary and h5's waits for
#      it; h4 keeps a longer listen queue and publishes its verdict, h5 then confirms it; h6, loaded after it,
#      proposes h4's value first, citing h4, starts it without an operator ([fleet] rollout = yes: the approval
#      journaled as the pool's) and keeps it after its own trial; the canary key held by h4 alone, never more
#      than 2 in trial;
#   7. the peers as the control group: a trial on h4 under the same load as h5 and h6 has its pairs judged against
#      their figures over its two blocks.
# Exclusive: it drives load (steps 6 and 7), and its trials judge what clients get.
TEST_NAME=fleet
TEST_EXCLUSIVE=1
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx jq curl ip etcd etcdctl wrk ss
PORT=18671 # nginx of host I on PORT + I
EPORT=18681
ENS=ngxat-fe-$$
export ETCDCTL_API=3

ip netns add "$ENS" || fail "cannot make namespace $ENS"
CLEANUP+=("ip netns del $ENS")
ip -n "$ENS" link set lo up
start_etcd() {
	ip netns exec "$ENS" etcd --name fleet-test --data-dir "$TMP/etcd" --listen-client-urls "http://127.0.0.1:$EPORT" \
		--advertise-client-urls "http://127.0.0.1:$EPORT" --listen-peer-urls "http://127.0.0.1:$((EPORT + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((EPORT + 1))" \
		--initial-cluster "fleet-test=http://127.0.0.1:$((EPORT + 1))" >>"$TMP/etcd.log" 2>&1 &
	ETCD=$!
	CLEANUP+=("kill -9 $ETCD")
	wait_for 20 ip netns exec "$ENS" etcdctl --endpoints "127.0.0.1:$EPORT" --user root:rootpw endpoint health ||
		fail "etcd did not start: $(tail -5 "$TMP/etcd.log")"
}
ectl() { ip netns exec "$ENS" etcdctl --endpoints "127.0.0.1:$EPORT" --user root:rootpw "$@"; }
start_etcd
# etcd's authentication, as a pool's operator would set it: the agents as user ngx, with read and write on the
# agents' prefix only, its password in a file.
ip netns exec "$ENS" etcdctl --endpoints "127.0.0.1:$EPORT" user add root:rootpw >/dev/null &&
	ectl user add ngx:ngxpw >/dev/null && ectl role add ngx-autotune >/dev/null &&
	ectl role grant-permission ngx-autotune readwrite /ngx-autotune/ --prefix=true >/dev/null &&
	ectl user grant-role ngx ngx-autotune >/dev/null && ectl auth enable >/dev/null ||
	fail "could not set up etcd's authentication"
printf 'ngxpw\n' >"$TMP/etcd.password"

# Three hosts, trying operators' proposals A/B as the agent's own (never --now, an operator's immediate change,
# which is the operator's and takes no slot): 4 pairs of 1 s blocks after a 1 s settle (an override of
# listen.policy's), so that a trial of h2 or h3 ends within about 20 s; h1's blocks are 120 s (its trial holds the
# pool's slot until it is killed).
hctl() { local h=$1; shift; "$NGXCTL" -s "$TMP/h$h/api.sock" "$@"; }
hapi() { curl -s --max-time 5 --unix-socket "$TMP/h$1/api.sock" "http://localhost$2"; }
start_host_agent() {
	local h=$1
	ip netns exec "$ENS" "$AGENT" --foreground -c "$TMP/h$h/agent.conf" >>"$TMP/h$h/agent.log" 2>&1 &
	eval "AGENT$h=$!"
	CLEANUP+=("kill -9 $!")
}
setup_host() { # HOST BLOCK TICK [only]: its namespace, nginx, policies (only: listen.policy alone) and agent.conf
	local h=$1 block=$2 tick=$3 p
	mkdir -p "$TMP/h$h/policies.d"
	if [ "${4:-}" = only ]; then # as an operator who tunes only the listen queue: the others' files empty
		for p in "$srcdir"/policies/*.policy; do
			: >"$TMP/h$h/policies.d/$(basename "$p")"
		done
	fi
	start_nginx_ns "ngxat-f$h-$$" $((PORT + h)) "$TMP/h$h/nginx" || fail "could not start nginx $h"
	sed -e "s/^settle = .*/settle = 1s/" -e "s/^settle_min = .*/settle_min = 1s/" "$srcdir/policies/listen.policy" \
		>"$TMP/h$h/policies.d/listen.policy"
	# Pool web2's: a knob only an operator proposes, judged on what clients get (step 7).
	[ "${POOL:-}" != web2 ] || printf '%s\n' "[knob net.ipv4.tcp_fin_timeout]" "kind = sysctl" \
		"target = net.ipv4.tcp_fin_timeout" "type = int" "min = 15" "max = 60" "step = +15" "max_step = +15" \
		"objective = http.good_rate higher" "guardrails = client.failure_rate lower" "settle = 1s" \
		"settle_min = 1s" "approval = required" >"$TMP/h$h/policies.d/tcp.policy"
	agent_conf "$TMP/h$h/agent.conf" $((PORT + h)) $tick
	# include_dir: where the listen queue's driver keeps its backups of nginx.conf (as ngxctl setup makes it)
	mkdir -p "$TMP/h$h/inc"
	sed -i -e "s|^socket = .*|socket = $TMP/h$h/api.sock|" -e "s|^path = .*|path = $TMP/h$h/store/ngx-autotune.db|" \
		-e "s|^override_dir = .*|override_dir = $TMP/h$h/policies.d|" \
		-e "s|^error_log = .*|&\ninclude_dir = $TMP/h$h/inc|" "$TMP/h$h/agent.conf"
	printf '[tuning]\nblock = %s\npairs = 4\ncalibrate_pairs = 0\ncooldown = 0s\nchanges_per_hour = 60\n' $block \
		>>"$TMP/h$h/agent.conf"
	# h3 would let two hosts in trial: the pool holds to the smallest its hosts set.
	printf '[fleet]\nendpoints = http://127.0.0.1:%s\npool = %s\nhost = h%s\nmax_in_trial = %s\nlease_ttl = 3s\n' \
		$EPORT "${POOL:-web}" $h "${MAX_IN_TRIAL:-$([ $h = 3 ] && echo 2 || echo 1)}" >>"$TMP/h$h/agent.conf"
	printf 'user = ngx\npassword_file = %s\n' "$TMP/etcd.password" >>"$TMP/h$h/agent.conf"
	[ -z "${ROLLOUT:-}" ] || printf 'rollout = yes\n' >>"$TMP/h$h/agent.conf"
	start_host_agent $h
}
for h in 1 2 3; do
	block=1s
	[ $h = 1 ] && block=120s
	setup_host $h $block 500ms
done
ns_somaxconn() { ip netns exec "ngxat-f$1-$$" cat /proc/sys/net/core/somaxconn; }
before=$(ns_somaxconn 1)
joined() { [ "$(hapi 1 /v1/fleet | jq '[.members[] | select(.alive)] | length')" = 3 ]; }
wait_for 30 joined || fail "not every agent joined: $(hapi 1 /v1/fleet): $(tail -3 "$TMP/h1/agent.log")"
hctl 1 fleet >"$TMP/fleet1.txt" || fail "ngxctl fleet failed"
grep -q "^pool web, this host h1: etcd answers" "$TMP/fleet1.txt" && [ "$(grep -c '^h[123] .* yes ' "$TMP/fleet1.txt")" = 3 ] ||
	fail "ngxctl fleet: $(cat "$TMP/fleet1.txt")"
# What etcd holds is anyone's who may write there: a key with a byte that is not UTF-8 and a terminal escape is
# listed cleaned, and the answers stay JSON.
ectl put "/ngx-autotune/pools/web/known/$(printf 'evil\xff\x1b[31m')" x >/dev/null || fail "etcdctl put failed"
wait_for 10 sh -c "curl -s --unix-socket $TMP/h1/api.sock http://localhost/v1/fleet | jq -e '.members[] | select(.host == \"evil??[31m\") | .alive == false'" ||
	fail "a member of a name that is not clean text: $(hapi 1 /v1/fleet | head -c 600)"
hapi 1 /v1/status | jq -e .fleet.pool >/dev/null || fail "/v1/status is no longer JSON"
ectl del --prefix "/ngx-autotune/pools/web/known/evil" >/dev/null
hapi 1 /metrics >"$TMP/metrics1"
grep -qx 'ngxat_fleet_info{host="h1",pool="web"} 1' "$TMP/metrics1" &&
	grep -qx 'ngxat_fleet_reachable{host="h1",pool="web"} 1' "$TMP/metrics1" &&
	grep -qx 'ngxat_fleet_members_alive{host="h1",pool="web"} 3' "$TMP/metrics1" ||
	fail "/metrics lacks the pool's families: $(grep ngxat_fleet "$TMP/metrics1")"
ok "1. three agents joined pool web: ngxctl fleet lists h1, h2, h3 alive, /metrics says it (pool and host labels); a key that is not clean text is listed cleaned"

# Each agent watches the pool's keys: a key put by hand wakes every host's round (a change it reads), and the
# agents' own puts wake no one back and forth (a round a second and a third of one for a wake at most, idle).
watching() { for h in 1 2 3; do hapi $h /v1/fleet | jq -e .watching >/dev/null || return 1; done; }
wait_for 10 watching || fail "not every agent watches the pool: $(for h in 1 2 3; do hapi $h /v1/fleet | jq -c '{host, watching}'; done)"
for h in 1 2 3; do
	grep -q "fleet: watching pool web through http://127.0.0.1:$EPORT: a change wakes this host's round" "$TMP/h$h/agent.log" ||
		fail "h$h does not say it watches: $(grep 'fleet:' "$TMP/h$h/agent.log" | tail -3)"
done
fleet_sum() { for h in 1 2 3; do hapi $h /v1/fleet | jq ".$1"; done | awk '{ s += $1 } END { print s }'; }
r0=$(fleet_sum rounds) w0=$(fleet_sum wakes) t0=$SECONDS
sleep 5
r1=$(fleet_sum rounds) w1=$(fleet_sum wakes) t1=$SECONDS
[ $((r1 - r0)) -le $((3 * (t1 - t0 + 1) * 2)) ] ||
	fail "the pool's rounds run away: $((r1 - r0)) rounds of 3 hosts in $((t1 - t0)) s ($((w1 - w0)) woken)"
for h in 1 2 3; do eval "wk$h=$(hapi $h /v1/fleet | jq .wakes)"; done
ectl put /ngx-autotune/pools/web/known/by-hand x >/dev/null || fail "etcdctl put failed"
woken() { for h in 1 2 3; do [ "$(hapi $h /v1/fleet | jq .wakes)" -gt "$(eval echo "\$wk$h")" ] || return 1; done; }
wait_for 3 woken || fail "a key put by hand did not wake every host's round: $(for h in 1 2 3; do echo "h$h $(eval echo "\$wk$h") -> $(hapi $h /v1/fleet | jq .wakes)"; done)"
ectl del /ngx-autotune/pools/web/known/by-hand >/dev/null
ok "1b. every agent watches the pool's keys: a key put by hand woke each host's round; idle, $((r1 - r0)) rounds of 3 hosts in $((t1 - t0)) s ($((w1 - w0)) woken): their own puts wake no one back and forth"

# The sampler of the whole run: the slots etcd holds and the agents in trial, each 0.2 s; the most of each kept.
sample() {
	local most_slots=0 most_trials=0 s t h st
	while [ ! -e "$TMP/stop-sampling" ]; do
		s=$(ectl get --prefix /ngx-autotune/pools/web/slots/ --keys-only 2>/dev/null | grep -c .)
		t=0
		for h in 1 2 3; do
			st=$(hapi $h /v1/trials/current 2>/dev/null | jq -r .state 2>/dev/null)
			case $st in trial | calibrating) t=$((t + 1)) ;; esac
		done
		((s > most_slots)) && most_slots=$s
		((t > most_trials)) && most_trials=$t
		# Written beside and renamed: a reader never sees the file truncated and not yet written.
		echo "$most_slots $most_trials" >"$TMP/most.new" && mv -f "$TMP/most.new" "$TMP/most"
		sleep 0.2
	done
}
sample &
SAMPLER=$!
CLEANUP+=("kill $SAMPLER")

propose() { # HOST VALUE: an operator's proposal of somaxconn on HOST, tried A/B when the pool lets it
	hctl "$1" propose "net.core.somaxconn=$2" --why "fleet test" >"$TMP/propose$1.out" 2>&1 ||
		fail "propose on h$1 failed: $(cat "$TMP/propose$1.out")"
}
state() { hapi "$1" /v1/trials/current | jq -r .state; }
propose 1 $((before * 2))
wait_for 10 sh -c "[ \"\$(curl -s --unix-socket $TMP/h1/api.sock http://localhost/v1/trials/current | jq -r .state)\" = trial ]" ||
	fail "h1's trial did not start: $(hapi 1 /v1/trials/current | jq -c '{state, reason}')"
propose 2 $((before * 2))
propose 3 $((before * 4))
waits() { hapi "$1" /v1/trials/current | jq -r .reason | grep -q "waits for a trial slot of the pool (all 1 trial slots of pool web are taken: h1 (net.core.somaxconn))"; }
wait_for 10 waits 2 && wait_for 10 waits 3 ||
	fail "h2 and h3 do not wait for h1's slot: $(hapi 2 /v1/trials/current | jq -c '{state, reason}')"
[ "$(ns_somaxconn 2)" = "$before" ] && [ "$(ns_somaxconn 3)" = "$before" ] || fail "a waiting host changed somaxconn"
hctl 3 fleet | grep -q "^the pool's max_in_trial is 1, set by h[12] (this host's is 2)" &&
	hapi 3 /v1/fleet | jq -e '.max_in_trial == 1 and .max_in_trial_set == 2 and ([.members[] | select(.host == "h3")][0].max_in_trial == 2)' >/dev/null ||
	fail "h3 does not hold to the pool's max_in_trial: $(hctl 3 fleet | head -3)"
# The pool's dashboard reads who is in trial from any member's /metrics.
trying() { hapi 2 /metrics | grep -q '^ngxat_fleet_member_trying{host="h2",knob="net.core.somaxconn",member="h1",pool="web"} 1$'; }
wait_for 5 trying || fail "h2's /metrics does not say h1 is trying: $(hapi 2 /metrics | grep ngxat_fleet_member)"
ok "2. h1 in trial holds the pool's one slot; h2 and h3 wait, naming it: $(hapi 2 /v1/trials/current | jq -r .reason | cut -c1-150)"

# 3. h1 dies in its trial: its lease ends within 3 s, and its slot with it.
kill -9 "$AGENT1"
t0=$(date +%s)
others_started() { [ "$(state 2)" = trial ] || [ "$(state 3)" = trial ]; }
wait_for 15 others_started || fail "no host took h1's slot after its death: $(hapi 2 /v1/fleet | jq -c .)"
took=$(($(date +%s) - t0))
gone() { hapi 2 /v1/fleet | jq -e '.members[] | select(.host == "h1") | .alive | not' >/dev/null; }
wait_for 10 gone || fail "h1 is not listed gone: $(hapi 2 /v1/fleet | jq -c .members)"
hctl 2 fleet | grep -q '^h1 .* gone ' || fail "ngxctl fleet does not show h1 gone: $(hctl 2 fleet)"
# The one that took it: its trial to its end (kept, reverted, or failed for want of requests: without load, the judge
# decides as it may),
# while the other waits naming it (its proposal then rejected: a second trial would only repeat this one).
if [ "$(state 2)" = trial ]; then first=2 second=3; else first=3 second=2; fi
waits_for() { hapi "$1" /v1/trials/current | jq -r .reason | grep -q "taken: h$2 (net.core.somaxconn)"; }
wait_for 5 waits_for $second $first ||
	fail "h$second does not wait for h$first: $(hapi $second /v1/trials/current | jq -r .reason)"
judged() { hctl "$1" --json history | jq -e '[.changes[] | select(.state | IN("kept", "reverted", "failed", "aborted"))] | length >= 1' >/dev/null; }
wait_for 40 judged $first ||
	fail "h$first did not try its change to a verdict: $(hctl $first --json history | jq -c '[.changes[] | {knob, state}]')"
hctl $second reject "$(hctl $second --json proposals | jq -r '.proposals[0].id')" --comment "fleet test: seen waiting" \
	>/dev/null || fail "could not reject h$second's waiting proposal"
start_host_agent 1
wait_for 30 sh -c "[ \$(ip netns exec ngxat-f1-$$ cat /proc/sys/net/core/somaxconn) = $before ]" ||
	fail "h1's restart did not put its host back: somaxconn $(ns_somaxconn 1), was $before"
wait_for 20 joined || fail "h1 did not join again: $(hapi 2 /v1/fleet | jq -c .members)"
read -r most_slots most_trials <"$TMP/most"
[ "$most_slots" -le 1 ] && [ "$most_trials" -le 1 ] || fail "more than one host in trial: $most_slots slots, $most_trials trials at once"
ok "3. h1 killed in trial: its slot taken ${took} s later by h$first, tried to its verdict while h$second waited naming it (never more than $most_trials in trial, $most_slots slot held); h1 listed gone, put back at its restart, joined again"

# 4. etcd stopped: nothing starts, everyone says why; back, the waiting trial starts by itself.
kill -9 "$ETCD"
wait "$ETCD" 2>/dev/null
unreachable() { hapi 2 /v1/status | jq -e '.fleet.reachable == false and (.fleet.why | test("etcd unreachable"))' >/dev/null; }
wait_for 15 unreachable || fail "h2 does not say etcd is unreachable: $(hapi 2 /v1/status | jq -c .fleet)"
h2_now=$(ns_somaxconn 2)
propose 2 $((h2_now * 2))
sleep 3
[ "$(state 2)" != trial ] && [ "$(ns_somaxconn 2)" = "$h2_now" ] ||
	fail "a trial started without etcd: $(state 2), somaxconn $(ns_somaxconn 2)"
hapi 2 /v1/trials/current | jq -r .reason | grep -q "waits for a trial slot of the pool (etcd unreachable" ||
	fail "h2's reason does not say why: $(hapi 2 /v1/trials/current | jq -r .reason)"
for h in 1 2 3; do
	kill -0 "$(eval echo "\$AGENT$h")" && hapi $h /v1/status | jq -e .fleet >/dev/null || fail "agent h$h is not up without etcd"
done
grep -q "fleet: etcd unreachable: .* no trial starts until it answers" "$TMP/h2/agent.log" || fail "h2 did not log why"
hapi 2 /v1/fleet | jq -e '.watching == false' >/dev/null || fail "h2 says it watches a pool whose etcd is gone"
start_etcd
wait_for 30 sh -c "[ \"\$(curl -s --unix-socket $TMP/h2/api.sock http://localhost/v1/trials/current | jq -r .state)\" = trial ]" ||
	fail "h2's trial did not start when etcd came back: $(hapi 2 /v1/trials/current | jq -c '{state, reason}')"
wait_for 10 watching || fail "the agents did not watch the pool again: $(for h in 1 2 3; do hapi $h /v1/fleet | jq -c '{host, watching}'; done)"
grep -q "fleet: the watch of pool web ended: " "$TMP/h2/agent.log" || fail "h2 did not say its watch ended"
touch "$TMP/stop-sampling"
wait "$SAMPLER" 2>/dev/null
read -r most_slots most_trials <"$TMP/most"
[ "$most_slots" -le 1 ] && [ "$most_trials" -le 1 ] || fail "more than one host in trial: $most_slots slots, $most_trials trials at once"
ok "4. etcd stopped: no trial started, every agent up and saying 'etcd unreachable'; etcd back: h2's trial started by itself (at most $most_trials in trial all along)"

# 5. What the pool says is a suggestion, never a write: verdicts put into etcd by hand, one with a value outside the
# local policy and one naming a path, under h1's own facts, are refused by h1 and audited; nothing is written.
facts=$(printf '"kernel":"%s","cpus":%s' "$(uname -r)" "$(getconf _NPROCESSORS_ONLN)")
h1_now=$(ns_somaxconn 1)
ectl put /ngx-autotune/pools/web/verdicts/net.core.somaxconn/web-x \
	"{\"from\":\"4096\",\"to\":\"99999999\",\"kept\":true,\"symptom\":\"\",\"summary\":\"by hand\",$facts,\"at_ms\":1}" >/dev/null &&
	ectl put /ngx-autotune/pools/web/verdicts/../../etc/passwd/web-y \
		"{\"from\":\"a\",\"to\":\"b\",\"kept\":true,\"symptom\":\"\",\"summary\":\"by hand\",$facts,\"at_ms\":1}" >/dev/null ||
	fail "etcdctl put failed"
refused_here() {
	hctl 1 --json audit | jq -e '[.audit[] | select(.action == "pool-proposal" and .outcome == "refused")] |
		(any(.actor == "pool:web-x" and (.detail | test("99999999"))) and any(.actor == "pool:web-y" and (.detail | test("not a knob"))))' >/dev/null
}
wait_for 15 refused_here || fail "h1 did not refuse and audit the pool's values: $(hctl 1 --json audit | jq -c '[.audit[] | select(.action == "pool-proposal")]')"
hctl 1 fleet | grep -q "kept    net.core.somaxconn 4096 -> 99999999 on web-x" || fail "ngxctl fleet does not list the verdicts: $(hctl 1 fleet)"
[ "$(ns_somaxconn 1)" = "$h1_now" ] || fail "somaxconn changed on h1: $(ns_somaxconn 1)"
# A slot key without a lease (by hand: no agent makes one) would keep the pool's one slot taken for ever: deleted.
ectl put /ngx-autotune/pools/web/slots/0 ghost >/dev/null || fail "etcdctl put failed"
wait_for 10 sh -c "! ip netns exec $ENS etcdctl --endpoints 127.0.0.1:$EPORT --user root:rootpw get /ngx-autotune/pools/web/slots/0 | grep -q ghost" ||
	fail "a slot held without a lease was not freed"
grep -q "fleet: trial slot 0 of pool web was held by 'ghost' without a lease: deleted" "$TMP"/h*/agent.log ||
	fail "no agent said it freed the slot"
ok "5. verdicts put into etcd by hand (somaxconn = 99999999, a knob named ../../etc/passwd) are listed, refused by h1 and audited; nothing written; a slot key without a lease is freed"

# 6. The same fault on three more hosts, a pool of their own (web2, max_in_trial 2): somaxconn 16 in their
# namespaces (nginx's default backlog: a live accept queue of 16) and 400 clients that close each connection, which
# overflow it by hundreds a second. h4 and h5 under load at once, each proposing the same longer queue, both
# approved: h4's is the pool's canary, and h5's, a second canary of a change no host has proven, waits for it
# although a slot is free. h4 keeps it (2 s blocks, 250 ms ticks) and publishes its verdict; h5's waiting proposal
# then confirms it, h4's effect its prior. h6 ([fleet] rollout = yes) under load after h4's verdict: the pool's
# proven value is proposed first, citing h4, starts without an operator (the approval journaled as the pool's), and
# is kept after h6's own short trial, beside h5's (the wave). All tune the listen queue alone (the other policies'
# files empty): 400 closing clients also pile up FIN_WAIT sockets, and another symptom's proposal could come first.
for h in 4 5 6; do
	NGINX_NS_SYSCTLS="net.core.somaxconn=16" POOL=web2 MAX_IN_TRIAL=2 ROLLOUT=$([ $h = 6 ] && echo 1) \
		setup_host $h 2s 250ms only
done
all_joined() { [ "$(hapi 4 /v1/fleet | jq '[.members[] | select(.alive)] | length')" = 3 ]; }
wait_for 30 all_joined || fail "h4, h5 and h6 did not join web2: $(hapi 4 /v1/fleet | jq -c '[.members[] | {host, alive}]')"
for h in 4 5 6; do
	[ "$(live_backlog ngxat-f$h-$$ $((PORT + h)))" = 16 ] ||
		fail "h$h's live accept queue is not 16: $(live_backlog ngxat-f$h-$$ $((PORT + h)))"
done
# web2 sampled all along: the hosts in trial at once, and every holder of its canary key.
sample2() {
	local most=0 t h st c
	while [ ! -e "$TMP/stop-sampling2" ]; do
		t=0
		for h in 4 5 6; do
			st=$(hapi $h /v1/trials/current 2>/dev/null | jq -r .state 2>/dev/null)
			case $st in trial | calibrating) t=$((t + 1)) ;; esac
		done
		((t > most)) && most=$t
		c=$(ectl get /ngx-autotune/pools/web2/canary --print-value-only 2>/dev/null)
		[ -z "$c" ] || grep -qx "$c" "$TMP/canaries" 2>/dev/null || echo "$c" >>"$TMP/canaries"
		echo "$most" >"$TMP/most2.new" && mv -f "$TMP/most2.new" "$TMP/most2"
		sleep 0.2
	done
}
sample2 &
CLEANUP+=("kill $!")
load() { # HOST SECONDS: 400 closing clients against HOST's nginx
	ip netns exec "ngxat-f$1-$$" timeout $(($2 + 10)) wrk -t2 -c400 -d"$2s" -H "Connection: close" \
		"http://127.0.0.1:$((PORT + $1))/" >"$TMP/load$1.out" 2>&1 &
	eval "LOAD$1=$!"
	CLEANUP+=("kill $!")
}
proposal() { # HOST: the id of its waiting listen_queue proposal
	hapi "$1" /v1/proposals | jq -e -r '[.proposals[] | select(.knob == "listen_queue" and .state == "proposed")][0].id // empty'
}
kept() { [ "$(hapi "$1" "/v1/changes/$2" | jq -r .state)" = kept ]; }
load 4 300 # killed once kept: a trial that outlasts its load would measure nothing
load 5 300
wait_for 60 proposal 4 >/dev/null || fail "h4 did not propose a longer listen queue: $(hapi 4 /v1/trials/current | jq -c '{state, reason}')"
id4=$(proposal 4)
prop4=$(hapi 4 /v1/proposals | jq -c ".proposals[] | select(.id == $id4)")
jq -e '.why | test("listen_overflows")' <<<"$prop4" >/dev/null || fail "h4's proposal is not its own detector's: $prop4"
to=$(jq -r .to <<<"$prop4")
hctl 4 approve "$id4" --comment "fleet test" >/dev/null || fail "could not approve h4's proposal"
wait_for 10 sh -c "[ \"\$(curl -s --unix-socket $TMP/h4/api.sock http://localhost/v1/trials/current | jq -r .state)\" = trial ]" ||
	fail "h4's trial did not start: $(hapi 4 /v1/trials/current | jq -c '{state, reason}')"
wait_for 30 proposal 5 >/dev/null || fail "h5 did not propose: $(hapi 5 /v1/trials/current | jq -c '{state, reason}')"
id5=$(proposal 5)
prop5=$(hapi 5 /v1/proposals | jq -c ".proposals[] | select(.id == $id5)")
jq -e ".to == \"$to\"" <<<"$prop5" >/dev/null || fail "h5 proposed another value than h4: $prop5 (h4: $to)"
hctl 5 approve "$id5" --comment "fleet test" >/dev/null || fail "could not approve h5's proposal"
canary_wait() { hapi 5 /v1/trials/current | jq -r .reason | grep -q "the canary of pool web2 is h4's"; }
wait_for 10 canary_wait || fail "h5 does not wait for h4's canary: $(hapi 5 /v1/trials/current | jq -r .reason)"
[ "$(state 5)" != trial ] || fail "h5 started a second canary beside h4's"
hctl 6 fleet | grep -qx "the pool's canary (a change no host has proven yet, one host at a time): h4" ||
	fail "ngxctl fleet does not name h4 the pool's canary: $(hctl 6 fleet | head -4)"
wait_for 90 kept 4 "$id4" || fail "h4's change did not end kept: $(hapi 4 "/v1/changes/$id4" | jq -c '{state, detail}')"
published() { ectl get /ngx-autotune/pools/web2/verdicts/listen_queue/h4 --print-value-only | jq -e ".kept and .to == \"$to\"" >/dev/null; }
wait_for 10 published || fail "h4's kept verdict is not in etcd: $(ectl get --prefix /ngx-autotune/pools/web2/verdicts/)"
kill "$LOAD4" 2>/dev/null
# h6 knows of it before its own fault starts (its next round with etcd, within a third of the lease).
knows() { hapi 6 /v1/fleet | jq -e '.verdicts[] | select(.host == "h4" and .knob == "listen_queue" and .kept)' >/dev/null; }
wait_for 10 knows || fail "h6 does not list h4's verdict: $(hapi 6 /v1/fleet | jq -c .verdicts)"
load 6 300
# h6 has [fleet] rollout = yes: its proposal of the proven value starts without an operator, approved by the pool.
change6() { hctl 6 --json history | jq -c -e '[.changes[] | select(.knob == "listen_queue")][0] // empty'; }
wait_for 60 change6 >/dev/null || fail "h6 did not propose: $(hapi 6 /v1/trials/current | jq -c '{state, reason}')"
prop6=$(change6)
id6=$(jq .id <<<"$prop6")
jq -e ".to == \"$to\" and (.why | test(\"kept on h4 \"))" <<<"$prop6" >/dev/null ||
	fail "h6's first proposal is not h4's proven value citing it: $prop6"
wait_for 90 kept 5 "$id5" || fail "h5's change did not end kept: $(hapi 5 "/v1/changes/$id5" | jq -c '{state, detail}')"
wait_for 90 kept 6 "$id6" || fail "h6's change did not end kept: $(hapi 6 "/v1/changes/$id6" | jq -c '{state, detail}')"
touch "$TMP/stop-sampling2"
kill "$LOAD5" "$LOAD6" 2>/dev/null
pool_approved='[.audit[] | select(.change_id == $id and .action == "approve" and .actor == "pool" and
	(.detail | startswith("approved by the pool'"'"'s rollout ([fleet] rollout = yes): kept on h4 ")))] | length == 1'
hctl 6 --json audit | jq -e --argjson id "$id6" "$pool_approved" >/dev/null ||
	fail "h6's approval is not journaled as the pool's: $(hctl 6 --json audit | jq -c "[.audit[] | select(.change_id == $id6)]")"
grep -q "proposal $id6 (listen_queue 16 -> $to) starts without an approval here: \[fleet\] rollout = yes" "$TMP/h6/agent.log" ||
	fail "h6's log does not say why its trial started without an approval"
for h in 5 6; do
	[ "$(live_backlog ngxat-f$h-$$ $((PORT + h)))" = "$to" ] ||
		fail "h$h's live accept queue is $(live_backlog ngxat-f$h-$$ $((PORT + h))), not $to"
done
[ "$(cat "$TMP/canaries")" = h4 ] || fail "web2's canary key was held by: $(tr '\n' ' ' <"$TMP/canaries"), not h4 alone"
grep -q "took trial slot . of pool web2 (the pool's canary)" "$TMP/h5/agent.log" && fail "h5 took a slot as a canary"
most2=$(cat "$TMP/most2")
[ "$most2" -le 2 ] || fail "$most2 hosts of web2 in trial at once (max_in_trial 2)"
# h4's verdict carries what its trial measured (the sequential rule's standardized effect over its valid pairs), and
# the confirmations took it as their prior: h5's adopted by its waiting proposal, h6's from its proposal.
pub=$(ectl get /ngx-autotune/pools/web2/verdicts/listen_queue/h4 --print-value-only)
jq -e '(.effect | type) == "number" and .pairs >= 2' <<<"$pub" >/dev/null || fail "h4's verdict in etcd has no effect: $pub"
pairs4=$(hapi 4 "/v1/changes/$id4" | jq -r .detail | grep -o '"valid":[0-9]*' | head -1 | cut -d: -f2)
for h in 5 6; do
	id=$(eval echo "\$id$h")
	detail=$(hapi $h "/v1/changes/$id" | jq -r .detail)
	grep -Eq "\"prior_pairs\":$(jq .pairs <<<"$pub")[,}]" <<<"$detail" || fail "h$h's trial did not take h4's effect as its prior: $detail"
	eval "pairs$h=$(grep -o '"valid":[0-9]*' <<<"$detail" | head -1 | cut -d: -f2)"
done
hctl 6 fleet | grep -q "^  kept    listen_queue 16 -> $to on h4, for listen_overflows: .* ($(jq .pairs <<<"$pub") pairs, effect " ||
	fail "ngxctl fleet does not show h4's trial's pairs and effect: $(hctl 6 fleet | grep listen_queue)"
ok "6. the same fault on h4, h5, h6 (pool web2, max_in_trial 2): h4's canary kept listen_queue 16 -> $to ($pairs4 pairs) and published it (effect $(jq .effect <<<"$pub")) while h5's approved second canary waited for it; h5 then confirmed it ($pairs5 pairs) and h6 (rollout = yes) proposed it first ($(jq -r .why <<<"$prop6" | cut -c1-90)), started it approved by the pool and kept it ($pairs6 pairs), h4's effect their prior; $most2 in trial at once"

# 7. The peers as the control group: h4, h5 and h6 under the same steady load; an operator's change on h4
# (tcp_fin_timeout, judged on good responses a second) waits at each pair's end for h5's and h6's figures over its
# two blocks, and each pair is judged against their mean: what moves the whole pool cancels.
for h in 4 5 6; do
	ip netns exec "ngxat-f$h-$$" timeout 150 wrk -t1 -c20 -d140s "http://127.0.0.1:$((PORT + h))/" \
		>"$TMP/steady$h.out" 2>&1 &
	CLEANUP+=("kill $!")
done
sleep 3
hctl 4 propose net.ipv4.tcp_fin_timeout=45 --why "fleet test: the control group" >"$TMP/propose7.out" 2>&1 ||
	fail "propose on h4 failed: $(cat "$TMP/propose7.out")"
id7=$(grep -o 'change [0-9]*' "$TMP/propose7.out" | head -1 | cut -d' ' -f2)
ended7() { hapi 4 "/v1/changes/$id7" | jq -e '.state | IN("kept", "reverted", "failed", "aborted")' >/dev/null; }
wait_for 120 ended7 || fail "h4's change $id7 did not end: $(hapi 4 /v1/trials/current | jq -c '{state, reason}')"
ev7=$(hapi 4 "/v1/changes/$id7" | jq -r .detail)
controlled=$(grep -o '"controlled":[0-9]*' <<<"$ev7" | head -1 | cut -d: -f2)
valid7=$(grep -o '"valid":[0-9]*' <<<"$ev7" | head -1 | cut -d: -f2)
[ "${controlled:-0}" -ge 1 ] || fail "no pair of h4's trial was judged against its peers: $ev7 $(grep fleet: "$TMP/h5/agent.log" | tail -3)"
grep -q '"control_peers":2' <<<"$ev7" || fail "h4's controlled pairs do not name 2 peers: $ev7"
grep -q "tuning: change $id7 (net.ipv4.tcp_fin_timeout): $controlled of $valid7 valid pairs judged against the pool's peers" \
	"$TMP/h4/agent.log" || fail "h4's log does not say which pairs had the control: $(grep "valid pairs judged" "$TMP/h4/agent.log")"
for h in 5 6; do
	grep -q "fleet: h4's pair [0-9]* of change $id7 (http.good_rate): this host's figure sent" "$TMP/h$h/agent.log" ||
		fail "h$h sent no figure for h4's pairs: $(grep "fleet: h4's pair" "$TMP/h$h/agent.log" | tail -3)"
done
ok "7. the peers as the control group: h4's trial of tcp_fin_timeout 60 -> 45 under the same load as h5 and h6 had $controlled of $valid7 valid pairs judged against their figures over the same two blocks ($(hapi 4 "/v1/changes/$id7" | jq -r .state))"
echo "1..$checks"
