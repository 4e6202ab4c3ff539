#!/bin/bash
# make fuzz-smoke: run each libFuzzer target for FUZZ_SECONDS (default 10) on its seeds, and fail when any target
# finds a crash, a leak, undefined behaviour, a broken promise (FUZZ_CHECK) or a hang (an input over 10 s).
#
#   smoke.sh SRCDIR BUILDDIR fuzz_NAME...
#
# A target's seeds are the real fixtures it parses (listed below: the unit tests' own files, not copies kept in the
# tree) and the small hand-written ones of tests/fuzz/seeds/NAME/; the API targets also get the words of api.dict.
# Each run starts from a fresh working corpus under BUILDDIR/tests/fuzz/work/NAME/ (what it grows stays there, with
# the crash artefacts and the log). One line per target: runs, runs per second, coverage (libFuzzer's cov and ft)
# and corpus size.
set -u
src=$1 build=$2
shift 2
secs=${FUZZ_SECONDS:-10}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

fixtures_of() { # the fixtures under SRCDIR that are seeds of target $1
	local p=tests/fixtures/proc
	case $1 in
	fuzz_netstat) echo $p/host-6.18/netstat $p/host-6.18/snmp ;;
	fuzz_sockstat) echo $p/host-6.18/sockstat ;;
	fuzz_softnet) echo $p/host-6.18/softnet_stat $p/history/softnet_stat-* ;;
	fuzz_softirqs) echo $p/host-6.18/softirqs ;;
	fuzz_stat) echo $p/host-6.18/stat $p/history/stat-* ;;
	fuzz_interrupts) echo $p/host-6.18/interrupts $p/history/interrupts-* ;;
	fuzz_schedstat) echo $p/host-6.18/self_schedstat $p/host-6.18/self_status ;;
	fuzz_host) echo $p/host-6.18/self_status ;;
	fuzz_stub) echo tests/fixtures/nginx/stub_status_* ;;
	fuzz_accesslog) echo tests/fixtures/nginx/access_* ;;
	fuzz_errorlog) echo tests/fixtures/nginx/error.log ;;
	fuzz_loadgen) echo tests/fixtures/loadgen/* ;;
	fuzz_policy) echo policies/*.policy tests/fixtures/policies/*/*.policy ;;
	fuzz_config) echo packaging/agent.conf ;;
	fuzz_nginx_conf) echo tests/fixtures/nginx-T/*.txt tests/fixtures/doctor/tuned.txt \
		tests/fixtures/doctor/proxy.txt tests/fixtures/doctor/workers.txt ;;
	esac
}

# run_one TARGET: one target's run; its line (ok or FAIL, with the log's tail on a failure) in its work directory's
# "result", and its status.
run_one() {
	local t=$1 name work i f dict rc execs eps cov note
	name=${t#fuzz_}
	work=$build/tests/fuzz/work/$name
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts" || return 1
	i=0
	for f in $(cd "$src" && fixtures_of "$t"); do
		i=$((i + 1))
		cp "$src/$f" "$work/corpus/fixture-$i-${f##*/}" || return 1
	done
	if [ -d "$src/tests/fuzz/seeds/$name" ]; then
		cp "$src/tests/fuzz/seeds/$name"/* "$work/corpus/" || return 1
	fi
	if [ -z "$(ls -A "$work/corpus")" ]; then
		echo "FAIL $t: no seeds (a fixture moved?)" >"$work/result"
		return 1
	fi
	dict=()
	case $name in api_*) dict=(-dict="$src/tests/fuzz/api.dict") ;; esac
	nice -n 10 "$build/tests/fuzz/$t" "${dict[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log")
	cov=$(grep -E '^#[0-9]+' "$work/log" | tail -1 | sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/cov \1, ft \2/p')
	if [ $rc -ne 0 ] || ls "$work/artifacts"/* >/dev/null 2>&1; then
		{ tail -n 60 "$work/log"
		  echo "FAIL $t: exit $rc; input saved as $(ls "$work/artifacts" 2>/dev/null | head -1); log $work/log"; } \
			>"$work/result"
		return 1
	fi
	note=
	grep -q '^fuzz_api: without the engine' "$work/log" && note=" (without the engine: the policies are not root's)"
	echo "ok $t: ${execs:-?} runs in ${secs}s (${eps:-?}/s), ${cov:-cov ?}, corpus $(ls "$work/corpus" | wc -l)$note" \
		>"$work/result"
}

# FUZZ_JOBS targets at a time (default: one per CPU; each is one process), their lines in the order given.
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in '' | *[!0-9]* | 0) jobs=1 ;; esac
failed=0
for t in "$@"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	run_one "$t" &
done
wait
for t in "$@"; do
	r=$build/tests/fuzz/work/${t#fuzz_}/result
	if [ -f "$r" ]; then cat "$r"; else echo "FAIL $t: no result"; fi
	# the line itself, the last: a failure's log tail comes before it
	tail -n 1 "$r" 2>/dev/null | grep -q '^ok ' || failed=$((failed + 1))
done
[ $failed -eq 0 ] || echo "fuzz-smoke: $failed of $# targets failed"
[ $failed -eq 0 ]
