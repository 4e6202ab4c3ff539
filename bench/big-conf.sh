#!/bin/bash
# The agent at start with a large nginx configuration, under the unit's memory limit (issue 22, R5): for each size,
# a real nginx in a network namespace whose http block includes that much configuration, and the real agent started
# in a memory cgroup of BENCH_LIMIT (64 MiB, the unit's MemoryMax), asked GET /v1/status every 100 ms for
# BENCH_SECONDS. Figures, not pass/fail: whether the agent is up at the end, when the API first answered and its
# slowest answer, the agent's peak RSS (VmHWM, with its libraries) and anonymous memory at the end, the peak of the
# cgroup's anonymous memory (agent and nginx -T; sampled every 100 ms), the OOM kills in the cgroup, and what the
# nginx knobs say. Run it with an older build to compare.
#
#   sudo bench/big-conf.sh [BUILDDIR]        (default /work/main/build, or $builddir)
#
# Environment (all optional): BENCH_SIZES (default "3:comments 4:comments 8:comments 20:comments 50:comments 2:maps
# 20:maps": MiB and kind: "comments" is a map of 100 redirects a file and the rest comments, which nginx reads
# cheaply, "maps" is all map entries, which nginx takes 12 times their size to read), BENCH_SECONDS (15),
# BENCH_LIMIT (MiB, 64), BENCH_PORT (18621). Costs BENCH_SECONDS and a few more per size.
# shellcheck disable=SC2034 # read by lib.sh
NGXAT_TEST_LOCKED=1 # a bench, not run beside the tests: no lock
TEST_TIMEOUT=0 # bounded by its own arguments: no watchdog (tests/system/lib.sh)
TEST_NAME=big-conf-bench
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-${builddir:-/work/main/build}}
builddir=$(cd "$builddir" && pwd) || { echo "no build dir $builddir"; exit 1; }
. "$srcdir/tests/system/lib.sh"
. "$srcdir/tests/system/scenario-lib.sh"
need_root
need_cmd nginx jq curl ip awk
[ -x "$AGENT" ] || skip "no agent binary at $AGENT (build it: make ngx-autotune)"
[ -x "$NOTIFY_LISTEN" ] || skip "no $NOTIFY_LISTEN (make tests/system/notify-listen)"
SIZES=${BENCH_SIZES:-"3:comments 4:comments 8:comments 20:comments 50:comments 2:maps 20:maps"}
SECS=${BENCH_SECONDS:-15}
LIMIT=${BENCH_LIMIT:-64}
PORT=${BENCH_PORT:-18621}
NS=ngxat-bigbench-$$

# big_conf KIND MIB: as tests/system/big-conf.sh, in files of 1 MiB.
big_conf() {
	local i
	rm -f "$BIG"/*.conf
	for ((i = 0; i < $2; i++)); do
		awk -v i="$i" -v kind="$1" 'BEGIN {
			printf "map $uri $big_%d {\n", i; s = 20
			for (n = 0; s < 1048576 - 100; n++) {
				if (kind == "maps" || n < 100)
					l = sprintf("\t/old/%d/%d/page-%d.html /new/%d/%d;", i, n, n * 7, i, n)
				else
					l = sprintf("\t# /old/%d/%d/page-%d.html was moved with the rest of section %d", i, n, n * 7, i)
				print l; s += length(l) + 1
			}
			print "}" }' >"$BIG/part-$i.conf"
	done
}

# anon_now: the cgroup's anonymous memory now, MiB (v2: memory.stat anon; v1: total_rss).
anon_now() {
	awk '$1 == "anon" || $1 == "total_rss" { print int($2 / 1048576); exit }' "$MEMCG/memory.stat"
}

scn_netns "$NS" || fail "cannot create namespace $NS"
BIG=$TMP/big
mkdir -p "$BIG"
SCN_HTTP="map_hash_max_size 1048576; map_hash_bucket_size 256; include $BIG/*.conf;" scn_nginx "$NS" "$PORT" ||
	fail "nginx did not start"
scn_agent_conf "$TMP/agent.conf" "$PORT"
echo "# $AGENT, in a $LIMIT MiB memory cgroup, $SECS s each"
printf '%-12s %-5s %9s %9s %9s %9s %9s %4s  %s\n' size agent "1st_ms" "slow_ms" "hwm_MiB" "anon_MiB" "cg_anon" oom \
	"nginx knobs"
for sz in $SIZES; do
	mib=${sz%%:*} kind=${sz#*:}
	big_conf "$kind" "$mib"
	memcg_new $((LIMIT << 20)) || skip "cannot make a memory cgroup here"
	rm -rf "$TMP/store" "$TMP/notify.log" "$TMP/api.sock"
	"$NOTIFY_LISTEN" "$TMP/notify.sock" 600 >"$TMP/notify.log" &
	nl=$!
	wait_for 5 test -S "$TMP/notify.sock"
	start=$(date +%s%N)
	NOTIFY_SOCKET="$TMP/notify.sock" memcg_run "$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
	pid=$!
	first="" slow=0 cga=0
	while [ $((($(date +%s%N) - start) / 1000000000)) -lt "$SECS" ] && kill -0 "$pid" 2>/dev/null; do
		if [ -S "$TMP/api.sock" ]; then
			t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 30 --unix-socket "$TMP/api.sock" \
				http://localhost/v1/status)
			if [ "${t%% *}" = 200 ]; then
				ms=$(awk -v t="${t#* }" 'BEGIN { printf "%d", t * 1000 }')
				[ -n "$first" ] || first=$((($(date +%s%N) - start) / 1000000))
				[ "$ms" -le "$slow" ] || slow=$ms
			fi
		fi
		a=$(anon_now)
		[ "${a:-0}" -le "$cga" ] || cga=$a
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		up=up
		hwm=$(awk '/^VmHWM/ { print int($2 / 1024) }' "/proc/$pid/status")
		anon=$(awk '/^RssAnon/ { print int($2 / 1024) }' "/proc/$pid/status")
		why=$(api /v1/knobs | jq -r '[.knobs[] | select(.kind == "nginx_directive") | "\(.state): \(.why // "")"] |
			unique | join(" | ")' | cut -c1-110)
	else
		up=DEAD hwm=- anon=- why="-"
	fi
	printf '%-12s %-5s %9s %9s %9s %9s %9s %4s  %s\n' "${mib}M:$kind" "$up" "${first:--}" "$slow" "$hwm" "$anon" "$cga" \
		"$(memcg_oom_kills)" "$why"
	kill "$pid" "$nl" 2>/dev/null
	wait "$pid" "$nl" 2>/dev/null
	memcg_remove "$MEMCG"
done
