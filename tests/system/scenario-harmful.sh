#!/bin/bash
# A harmful change is rolled back. An operator proposes RPS on the loopback of nginx's namespace (rps_cpus 0 -> 3:
# every packet nginx and its clients exchange is handed to a CPU chosen by flow hash, costing inter-processor
# interrupts on a host where both ends already run on every CPU). `ngxctl propose` makes it an A/B trial judged
# like the agent's own (the rps policy's objective, CPU per request, and its guardrails, drops and failures); the judge
# must not keep it: the old value is back, the change ends reverted (or aborted by a guardrail), and the journal,
# the audit trail and `ngxctl show` say why in one sentence with the evidence. The RPS knob reaches the
# namespace's loopback through nginx's own mount namespace (the interfaces of nginx's network namespace).
TEST_EXCLUSIVE=1
TEST_NAME=scn-harm
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
NS=ngxat-real-harm-$$
PORT=18460
RPS=/sys/class/net/lo/queues/rx-0/rps_cpus
ns_rps() { ip netns exec "$NS" cat $RPS; }
[ "$(nproc)" -ge 2 ] || skip "RPS needs two CPUs"

scn_netns "$NS" || fail "cannot create namespace $NS"
[ "$(ns_rps)" = 0 ] || skip "rps_cpus of a new namespace's lo is $(ns_rps), not 0"
SCN_LISTEN="backlog=4096"
scn_nginx "$NS" $PORT || fail "nginx did not start"
scn_agent_conf "$TMP/agent.conf" $PORT
# The shipped rps policy matches NICs; the operator names the loopback.
sed '/^\[knob rps\]/,/^\[/ s/^target = .*/target = lo/; s/^settle = .*/settle = 2s/' "$srcdir/policies/rps.policy" \
	>"$TMP/policies.d/rps.policy"
host_rps=$(cat $RPS)
scn_start_agent
ctl knobs | grep -E "^rps.lo +ok +0:" >/dev/null || fail "no rps.lo knob: $(ctl knobs | grep rps)"
ok "rps.lo is the loopback of nginx's namespace: rps_cpus 0 there (the host's lo: $host_rps)"

# Keep-alive load with connection churn beside it, for the whole trial.
scn_load "$NS" 150 -t1 -c64 "http://127.0.0.1:$PORT/"
ip netns exec "$NS" timeout 160 wrk -t1 -c200 -d150s -H "Connection: close" "http://127.0.0.1:$PORT/" >/dev/null 2>&1 &
CLEANUP+=("kill $!")
sleep 3
out=$(ctl propose rps.lo=0:0-1 --why "operator: try RPS on loopback") || fail "ngxctl propose: $out"
id=$(api /v1/changes | jq '[.changes[] | select(.knob == "rps.lo")][0].id')
seen_b=0
deadline=$((SECONDS + 150))
while [ $SECONDS -lt $deadline ]; do
	[ "$(ns_rps)" = 3 ] && seen_b=1
	st=$(change_state "$id")
	case $st in kept | reverted | aborted | failed) break ;; esac
	sleep 0.3
done
[ "$seen_b" = 1 ] || fail "rps_cpus 3 was never in force in the namespace (state $st)"
[ "$(cat $RPS)" = "$host_rps" ] || fail "the host's lo was written: $(cat $RPS)"
echo "# change $id: $st: $(api "/v1/changes/$id" | jq -r '.detail | split(";")[0]')"
api "/v1/changes/$id" | jq -r '.detail | sub("^[^{]*"; "") | fromjson? | "# guardrails: \([.guardrails[] | "\(.metric) failed=\(.failed) p=\(.p // .lower)"] | join(", ")); pairs: \([.pairs_detail[] | "\(.order) a=\(.a) b=\(.b)"] | join("; "))"' 
ok "proposal $id tried A/B in the namespace (rps_cpus 3 in force in B blocks); the host's lo untouched"

case $st in reverted | aborted) ;; *) fail "change $id ended $st: $(api "/v1/changes/$id" | jq -r .detail)" ;; esac
[ "$(ns_rps)" = 0 ] || fail "not rolled back: rps_cpus $(ns_rps)"
ctl show "$id" >"$TMP/show.out"
grep -Eq '^  state: +(reverted|aborted) ' "$TMP/show.out" && grep -q '^  verdict: [^ ]' "$TMP/show.out" &&
	grep -qx '  objective: busy CPU (cpu.busy_per_kreq, lower is better)' "$TMP/show.out" &&
	grep -Eq '^  arms: +(A [0-9.<]+ .*, B [0-9.<]+ |no valid pair yet)' "$TMP/show.out" || fail "ngxctl show: $(cat "$TMP/show.out")"
reason=$(sed -n 's/^  verdict: //p' "$TMP/show.out" | head -1)
api /v1/audit | jq -e --argjson id "$id" '[.audit[] | select(.change_id == $id and .action == "verdict")] | length == 1' \
	>/dev/null || fail "no verdict in the audit trail: $(api /v1/audit | jq -c '.audit[:5]')"
ok "rolled back ($st), rps_cpus 0 again; ngxctl show and the audit trail say why: $reason"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
