#!/bin/bash
# The tuning loop end to end with the real agent on a fake /proc (--root via the config): a host whose NET_RX
# rounds are cut short (softnet time_squeeze rising) while net.core.netdev_budget is at its default. A small plant
# in this script makes the squeeze depend on the budget the agent writes, and keeps requests, latencies and the
# workers' scheduler figures moving. The agent must detect it, propose raising netdev_budget, wait for
# `ngxctl approve`, run A/B blocks (the knob flips between 300 and 600), keep the change with the judge's
# evidence in the journal, and leave 600 in force.
TEST_EXCLUSIVE=1
TEST_NAME=tuning
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_cmd jq curl
[ "$(id -u)" = 0 ] || skip "policy files must be owned by root: run as root"

R=$TMP/root
make_fake_root "$R" 4242
echo 4242 >"$TMP/nginx.pid"
mkdir -p "$R/proc/sys/net/core"
BUDGET=$R/proc/sys/net/core/netdev_budget
echo 300 >"$BUDGET"
: >"$TMP/access.log"
mkdir -p "$TMP/policies.d"
sed 's/^settle = .*/settle = 1s/' "$srcdir/policies/softnet.policy" >"$TMP/policies.d/softnet.policy"
fake_root_conf "$TMP/agent.conf" "$R" "$TMP/access.log"
cat >>"$TMP/agent.conf" <<EOT
[tuning]
mode = propose
pairs = 4
block = 2s
calibrate_pairs = 3
EOT

# The plant: every 100 ms, 20 requests of 5 ms; time_squeeze grows by 10 at budget 300, by 1 at 600 or more.
plant() {
	local sq=3 run=1000000 wait=2000000 b i line
	line='{"time":"2026-01-01T00:00:00+00:00","status":200,"request_time":0.005,"upstream_response_time":"","upstream_addr":"","bytes":12}'
	for ((i = 0; i < 2400; i++)); do # bounded: 240 s at most
		b=$(cat "$BUDGET" 2>/dev/null || echo 300)
		if [ "$b" -ge 600 ]; then sq=$((sq + 1)); else sq=$((sq + 10)); fi
		printf '%08x 00000000 %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n%08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001\n' \
			$((i * 100)) "$sq" $((i * 50)) >"$R/proc/4242/net/softnet_stat.tmp"
		mv "$R/proc/4242/net/softnet_stat.tmp" "$R/proc/4242/net/softnet_stat"
		run=$((run + 50000000)) wait=$((wait + 1000000))
		for w in 4243 4244; do echo "$run $wait $i" >"$R/proc/$w/schedstat"; done
		for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo "$line"; done >>"$TMP/access.log"
		sleep 0.1
	done
}
plant &
CLEANUP+=("kill $!")

"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 10 test -S "$TMP/api.sock" || fail "agent did not start"
ctl() { "$NGXCTL" -s "$TMP/api.sock" "$@"; }

wait_for 30 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/proposals | jq -e '.proposals[0].knob == \"net.core.netdev_budget\"'" ||
	fail "no proposal for netdev_budget: $(ctl trial)"
prop=$(api /v1/proposals | jq '.proposals[0]')
id=$(jq .id <<<"$prop")
[ "$(jq -r .from <<<"$prop")" = 300 ] && [ "$(jq -r .to <<<"$prop")" = 600 ] || fail "proposal: $prop"
jq -e '.why | test("squeeze")' <<<"$prop" >/dev/null || fail "proposal without its evidence: $prop"
wait_ticks 5 || fail "the agent stopped ticking" # ticks in which it could write without an approval
[ "$(cat "$BUDGET")" = 300 ] || fail "written before approval"
ctl proposals | grep -q "net.core.netdev_budget: 300 -> 600" || fail "ngxctl proposals: $(ctl proposals)"
api /v1/trials/current | jq -e --arg id "$id" '.reason | test("proposal " + $id + " ")' >/dev/null ||
	fail "the loop's status names another id than the journal's $id: $(api /v1/trials/current | jq -r .reason)"
ok "softnet squeeze detected: proposal $id raises netdev_budget 300 -> 600 with its evidence, nothing written yet"

ctl approve "$id" --comment "test" | grep -q "approved" || fail "ngxctl approve"
# How long a trial may take: 3 A/A pairs of calibration and 4 pairs of 3 s blocks (2 s and the 1 s settle), and
# on a loaded machine up to 4 void pairs more (late ticks leave a block too few): (3 + 4 + 4) x 6 s = 66 s of
# blocks, before the arm writes and the ticks' own delays. The old bound (600 polls, about 60 s) was below that.
TRIAL_MAX_S=180
seen300=0 seen600=0
t0=$SECONDS deadline=$((SECONDS + TRIAL_MAX_S))
while [ $SECONDS -lt $deadline ]; do
	v=$(cat "$BUDGET")
	[ "$v" = 300 ] && seen300=1
	[ "$v" = 600 ] && seen600=1
	st=$(api "/v1/changes/$id" | jq -r .state)
	case $st in kept | reverted | aborted | failed) break ;; esac
	sleep 0.1
done
echo "# change $id: $st after $((SECONDS - t0)) s"
[ "$seen600" = 1 ] && [ "$seen300" = 1 ] || fail "the arms did not alternate (300 seen $seen300, 600 seen $seen600)"
ok "approved: the trial alternates the arms (300 and 600 both in force)"
[ "$st" = kept ] || fail "change $id ended $st after $TRIAL_MAX_S s: $(api "/v1/changes/$id" | jq -r .detail)"
[ "$(cat "$BUDGET")" = 600 ] || fail "kept, but netdev_budget is $(cat "$BUDGET")"
api "/v1/changes/$id" | jq -e '.detail | test("\"verdict\"") and test("pairs")' >/dev/null ||
	fail "no evidence in the journal: $(api "/v1/changes/$id" | jq -r .detail)"
ok "the judge keeps it (time_squeeze per 1k requests down 10x); 600 stays; the evidence is in the journal"
ctl trial >"$TMP/trial.out"
grep -q "^tuning:" "$TMP/trial.out" || fail "ngxctl trial: $(cat "$TMP/trial.out")"
# The last trial's estimate stays until the next one: in the objective's unit, per 1k requests as block.c has it.
grep -Eq '^estimate: softnet time squeezes [0-9.]+/1k req -> [0-9.]+/1k req, fell ' "$TMP/trial.out" ||
	fail "ngxctl trial has no readable estimate: $(cat "$TMP/trial.out")"

# An operator's proposal is tried against the judge too: going back to 300 brings the squeeze back, so it is
# reverted and 600 stays. While it waits or runs, a second proposal is refused (one trial at a time).
out=$(ctl propose net.core.netdev_budget=300 --why "test: a harmful change") || fail "operator proposal: $out"
oid=$(sed -n 's/^change \([0-9]*\):.*/\1/p' <<<"$out")
[ -n "$oid" ] && grep -q "A/B trial" <<<"$out" || fail "operator proposal output: $out"
out=$(ctl propose net.core.netdev_budget=900 2>&1) && fail "a second proposal during a trial was accepted: $out"
grep -q "one trial on the host at a time" <<<"$out" || fail "second proposal refused for another reason: $out"
deadline=$((SECONDS + TRIAL_MAX_S))
while [ $SECONDS -lt $deadline ]; do
	st=$(api "/v1/changes/$oid" | jq -r .state)
	case $st in kept | reverted | aborted | failed) break ;; esac
	sleep 0.1
done
[ "$st" = reverted ] || fail "the harmful operator proposal $oid ended $st: $(api "/v1/changes/$oid" | jq -r .detail)"
[ "$(cat "$BUDGET")" = 600 ] || fail "reverted, but netdev_budget is $(cat "$BUDGET")"
api "/v1/changes/$oid" | jq -e '.actor != "agent" and (.detail | test("\"verdict\": ?\"revert\""))' >/dev/null ||
	fail "operator change $oid: $(api "/v1/changes/$oid")"
api "/v1/audit?knob=net.core.netdev_budget" | jq -e --argjson id "$oid" \
	'[.audit[] | select(.change_id == $id and .action == "propose" and .actor != "agent")] | length == 1' >/dev/null ||
	fail "no audit row of the operator's proposal: $(api "/v1/audit?knob=net.core.netdev_budget")"
ok "an operator's harmful proposal (600 -> 300) is tried A/B and reverted by the judge; 600 stays; audited"

# An operator's revert during a trial ends it: no further arm is written, the loop says why.
out=$(ctl propose net.core.netdev_budget=1200 2>&1) || fail "operator proposal 1200: $out"
rid=$(sed -n 's/^change \([0-9]*\):.*/\1/p' <<<"$out")
wait_for 20 sh -c "[ \"\$(cat $BUDGET)\" = 1200 ]" || fail "arm B (1200) never in force: $(ctl trial)"
ctl revert "$rid" >/dev/null || fail "ngxctl revert $rid"
wait_for 10 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/trials/current | jq -e '.state == \"cooldown\" or .state == \"observe\"'" ||
	fail "the trial did not end on the operator's revert: $(api /v1/trials/current)"
wait_ticks 15 || fail "the agent stopped ticking" # longer than a block: an arm would have been written
[ "$(cat "$BUDGET")" = 600 ] || fail "after the operator's revert netdev_budget is $(cat "$BUDGET")"
api /v1/trials/current | jq -e '.reason | test("reverted by an operator")' >/dev/null ||
	fail "the loop does not say why the trial ended: $(api /v1/trials/current | jq -r .reason)"
ok "an operator's revert during a trial ends it: 600 back, no arm written after, the loop says why"
ctl show "$id" >"$TMP/show.out"
# The evidence as people read it: each arm in the objective's unit, B's change with its interval, the guardrails.
grep -q '^  verdict: ' "$TMP/show.out" &&
	grep -qx '  objective: softnet time squeezes (softnet.time_squeeze, lower is better)' "$TMP/show.out" &&
	grep -Eqx '  arms: +A [0-9.]+/1k req, B [0-9.]+/1k req \(mean block values\)' "$TMP/show.out" &&
	grep -Eqx '  change: +B fell ([0-9.]+%|to 1/[0-9.e]+) \[.*\] \(better\)' "$TMP/show.out" &&
	grep -Eqx '  pairs: +([0-9]+) valid of [0-9]+ planned, [0-9]+ void; \1 better, 0 worse' "$TMP/show.out" &&
	grep -Eq '^  guardrail: p99 latency \(http.p99_ms\): .*; held$' "$TMP/show.out" ||
	fail "ngxctl show: $(cat "$TMP/show.out")"
# No percentage above 1000% in what ngxctl wrote (the verdict's sentence is the judge's own).
grep -v '^  verdict: ' "$TMP/show.out" "$TMP/trial.out" | grep -Eo '[0-9.]+%' | tr -d % |
	awk '$1 > 1000 { bad = 1 } END { exit bad }' || fail "a percentage above 1000%: $(cat "$TMP/show.out" "$TMP/trial.out")"
ctl --json show "$id" | jq -e '.detail | sub("^[^{]*"; "") | fromjson | .summary | test("^softnet time squeezes ")' \
	>/dev/null || fail "ngxctl --json show: no summary in the evidence"
ctl history >"$TMP/history.out"; [ -n "${NGXAT_VERBOSE:-}" ] && cat "$TMP/show.out" "$TMP/history.out" "$TMP/agent.log"
grep -Eq '^ +softnet time squeezes [0-9.]+/1k req -> [0-9.]+/1k req, fell ' "$TMP/history.out" &&
	! grep -q '"pairs_detail"' "$TMP/history.out" || fail "ngxctl history: $(cat "$TMP/history.out")"
kill -TERM $AGENT_PID
wait $AGENT_PID
[ $? = 0 ] || fail "agent did not exit 0"
[ "$(cat "$BUDGET")" = 600 ] || fail "a kept change did not survive SIGTERM"
ok "ngxctl trial, show and history give the evidence in the objective's unit; SIGTERM leaves the kept change"

# A restart does not make the planner forget: the kept 600 and the reverted 300 come back from the journal (the
# operator's revert of 1200 says nothing about the value and is not remembered).
"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent2.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 10 grep -q "ready" "$TMP/agent2.log" || fail "the agent did not restart: $(cat "$TMP/agent2.log")"
grep -q "the planner remembers 2 trials" "$TMP/agent2.log" || fail "planner memory after restart: $(cat "$TMP/agent2.log")"
grep -q "the noise of softnet.time_squeeze is known from a calibration of 0 h ago" "$TMP/agent2.log" ||
	fail "the A/A calibration was not read back: $(cat "$TMP/agent2.log")"
api "/v1/audit?actor=agent" | jq -e '[.audit[] | select(.action == "calibrate" and .outcome == "ok")] | length == 1' \
	>/dev/null || fail "no calibrate row in the audit trail: $(api "/v1/audit?actor=agent" | jq -c '.audit[:5]')"
kill -TERM $AGENT_PID
wait $AGENT_PID
ok "after a restart the planner remembers the trials of the journal and the A/A calibration (audited)"
echo "# $checks checks passed"
