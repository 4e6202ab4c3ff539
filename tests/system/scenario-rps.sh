#!/bin/bash
# Softirq imbalance on a veth pair, found and judged by the agent, and the verdict checked against wrk. nginx in
# one namespace, wrk in another, a veth pair between them (10.78.0.1 and .2, inside the test's namespaces). The
# operator's RPS on nginx's side of the pair steers every received packet's protocol work to CPU 0 (rps_cpus 1),
# as copied from a guide written for a NIC: measured on 2 CPUs, CPU 0 spent 54% in softirq and CPU 1 23%, and wrk
# got 90k requests/s against 154k without RPS (on a veth the work stays on the CPU of the sender without it).
# The operator names the veth in the rps policy (the shipped one matches NICs only) and its trigger is lowered to
# what 2 CPUs shared with wrk can show. The agent must propose taking CPU 0 out of the set (RPS off, 0:0 -> 0:),
# judge it, and its verdict must not contradict what wrk measures with each value in turn after the trial (kept:
# RPS off serves more; reverted: RPS off not better in every run); ngxctl revert puts the operator's rps_cpus back.
TEST_EXCLUSIVE=1
TEST_NAME=scn-rps
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
[ "$(nproc)" -ge 2 ] || skip "RPS needs two CPUs"
NS=ngxat-rps-$$
NSC=ngxat-rpc-$$
DEV=ngxat-rpa
PORT=18490
RPS=/sys/class/net/$DEV/queues/rx-0/rps_cpus
ns_rps() { ip netns exec "$NS" cat $RPS; }
set_rps() { ip netns exec "$NS" sh -c "echo $1 > $RPS"; }
# wrk_rps SECONDS: requests/s of wrk from the client namespace over the veth
wrk_rps() {
	ip netns exec "$NSC" timeout $(($1 + 10)) wrk -t2 -c100 -d"$1s" "http://10.78.0.1:$PORT/" |
		awk '/^Requests\/sec:/ { printf "%d\n", $2 }'
}

scn_netns "$NS" || fail "cannot create namespace $NS"
scn_netns "$NSC" || fail "cannot create namespace $NSC"
ip link add $DEV netns "$NS" type veth peer name ngxat-rpb netns "$NSC" || fail "cannot create the veth pair"
ip -n "$NS" addr add 10.78.0.1/24 dev $DEV && ip -n "$NSC" addr add 10.78.0.2/24 dev ngxat-rpb &&
	ip -n "$NS" link set $DEV up && ip -n "$NSC" link set ngxat-rpb up || fail "cannot set up the veth pair"
[ -e "/proc/self/ns/net" ] && ip netns exec "$NS" test -w $RPS || skip "no rps_cpus on a veth (CONFIG_RPS)"
set_rps 1
[ "$(ns_rps)" = 1 ] || fail "rps_cpus reads $(ns_rps) after writing 1"
SCN_SERVER="listen 10.78.0.1:$PORT backlog=4096;" scn_nginx "$NS" $PORT || fail "nginx did not start"
SCN_POLICIES="rps" SCN_ONLY=1
scn_agent_conf "$TMP/agent.conf" $PORT
sed "/^\[knob rps\]/,/^\[/ { s/^target = .*/target = $DEV/; s/^trigger = .*/trigger = softirq_imbalance > 15/ }; \
	s/^settle = .*/settle = 2s/" "$srcdir/policies/rps.policy" >"$TMP/policies.d/rps.policy"
scn_start_agent
ctl knobs | grep -E "^rps.$DEV +ok +0:0 " >/dev/null || fail "no rps.$DEV knob at 0:0: $(ctl knobs | grep rps)"
ok "nginx in $NS, wrk in $NSC over a veth pair; the operator's rps_cpus 1 on $DEV; the agent is ready"
# nginx -t and -T bind every listen address: 10.78.0.1 exists only in nginx's namespace, where they must run.
wait_for 10 sh -c "'$NGXCTL' -s '$TMP/api.sock' doctor 2>&1 | grep -q 'nginx.worker_processes'" ||
	fail "the doctor read no nginx configuration: $(ctl doctor 2>&1 | head -5)"
! grep -q "Cannot assign requested address" "$TMP/agent.log" ||
	fail "nginx -t or -T ran outside nginx's namespace: $(grep -m1 "Cannot assign" "$TMP/agent.log")"
ok "nginx -T ran in nginx's namespace: the doctor read its configuration (listen 10.78.0.1 binds there only)"

scn_load "$NSC" 600 -t2 -c100 "http://10.78.0.1:$PORT/"
prop=$(wait_proposal 150 "rps.$DEV") || fail "no rps.$DEV proposal: $(ctl trial) $(ctl proposals); softirq: $(api \
	'/v1/frames?since=-3&metrics=cpu.*' | jq -c '[.frames[].values | with_entries(select(.key | endswith(".softirq")))]')"
id=$(jq .id <<<"$prop")
[ "$(jq -r .from <<<"$prop")" = 0:0 ] && [ "$(jq -r .to <<<"$prop")" = 0: ] || fail "proposal: $prop"
jq -e '.why | test("CPU 0 spends")' <<<"$prop" >/dev/null || fail "proposal without its evidence: $prop"
ok "softirq imbalance: proposal $id rps.$DEV 0:0 -> 0: ($(jq -r .why <<<"$prop"))"

ctl approve "$id" | grep -q approved || fail "ngxctl approve"
st=$(wait_end 400 "$id") || fail "change $id still $st: $(ctl trial)"
ev=$(api "/v1/changes/$id" | jq -r '.detail | sub("^[^{]*"; "") | fromjson? // empty')
echo "# change $id: $st: $(jq -r .reason <<<"$ev")"
echo "# pairs (A/B $(jq -r .objective <<<"$ev")): $(jq -r '[(.pairs_detail // [])[] | "\(.a)/\(.b)"] | join(" ")' <<<"$ev")"
live=$(ns_rps)
kill "$LOAD_PID" 2>/dev/null
wait "$LOAD_PID" 2>/dev/null
# The agent stops before the test writes rps_cpus itself (it would see a conflict and freeze the knob).
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"

# What wrk measures with each value, alternated three times (5 s each), the agent's verdict aside.
declare -a on off
for i in 1 2 3; do
	set_rps 1 && on+=("$(wrk_rps 5)")
	set_rps 0 && off+=("$(wrk_rps 5)")
done
med() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
m_on=$(med "${on[@]}") m_off=$(med "${off[@]}")
echo "# wrk: rps_cpus 1: ${on[*]} (median $m_on); off: ${off[*]} (median $m_off)"
[ -n "$m_on" ] && [ -n "$m_off" ] && [ "$m_on" -gt 0 ] || fail "wrk measured nothing: ${on[*]} / ${off[*]}"
case $st in
kept)
	[ "$m_off" -gt "$m_on" ] || fail "kept RPS off, but wrk serves more with rps_cpus 1: $m_on against $m_off"
	[ "$live" = 0 ] || fail "kept, but rps_cpus reads $live"
	;;
reverted | aborted)
	# Not shown is no claim that nothing changed: the rollback is wrong only where wrk shows RPS off clearly
	# better, every run above every run with rps_cpus 1 (3 against 3: 1 chance in 20 if they do not differ) and
	# its median 10% higher. (A CI run: fell 6.5% [-14%, +1.7%], reverted; wrk 53279 60911 60131 off against
	# 46577 57354 52065: medians 15% apart, the runs overlapping.)
	# Nor is a gain the judge measured but could not show above the 5% worth keeping: a run here, cpu.busy_per_kreq
	# fell 10% [4.8%, 15%] (the lower bound under 5%: reverted) and wrk served 13% more with RPS off in every run.
	# The rollback is then the judge's rule, not a wrong measure, as long as wrk's gain (on CPUs that wrk and nginx
	# keep busy, the fall of CPU per request is the rise of requests) lies within the judge's interval, give or take
	# 5 points of wrk's own spread (its 3 runs of one value: 52859 to 55260 in that run).
	min_off=$(printf '%s\n' "${off[@]}" | sort -n | head -1) max_on=$(printf '%s\n' "${on[@]}" | sort -n | tail -1)
	gain=$(awk -v a="$m_off" -v b="$m_on" 'BEGIN { printf "%.3f", a / b - 1 }')
	hi=$(jq -r '.effect_hi // empty' <<<"$ev")
	if [ -n "$hi" ] && jq -e '.reason | test("a gain of [0-9.]+% not shown")' <<<"$ev" >/dev/null &&
		awk -v g="$gain" -v h="$hi" 'BEGIN { exit !(h > 0 && g <= h + 0.05) }'; then
		echo "# wrk's gain with RPS off, $gain, is within the judge's upper bound $hi (+0.05): shown too small to keep"
	else
		[ "$min_off" -le "$max_on" ] || [ "$m_off" -lt $((m_on * 11 / 10)) ] ||
			fail "$st, but wrk serves more with RPS off in every run: ${off[*]} against ${on[*]} (the judge: up to $hi)"
	fi
	[ "$live" = 1 ] || fail "$st, but rps_cpus reads $live"
	;;
*) fail "change $id ended $st: $(api "/v1/changes/$id" | jq -r .detail)" ;;
esac
ok "the verdict ($st) matches wrk: $m_off requests/s with RPS off against $m_on with rps_cpus 1; rps_cpus $live"

set_rps "$live"
if [ "$st" = kept ]; then
	# ngxctl revert works with the agent down: the veth is found in nginx's namespace through nginx's pid.
	NGXAT_AGENT_BIN=$AGENT "$NGXCTL" -c "$TMP/agent.conf" revert --offline "$id" >"$TMP/offline.out" 2>&1 ||
		fail "ngxctl revert --offline $id: $(cat "$TMP/offline.out")"
	[ "$(ns_rps)" = 1 ] || fail "rps_cpus $(ns_rps) after the revert, not the operator's 1"
	ok "ngxctl revert --offline (the agent down): the operator's rps_cpus 1 is back"
fi
echo "# $checks checks passed"
