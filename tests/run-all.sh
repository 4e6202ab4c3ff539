#!/bin/bash
# The full test suite, as CI runs it: install packages (as root), build with -Werror, run every test
# (unit, simulation, system), run the unit tests again under ASan+UBSan, run every fuzz target briefly (clang,
# libFuzzer), check the distribution tarball, and end with one line "N passed, N failed, N skipped", every skip
# listed above it with its reason. Exits non-zero on any failure.
#
#   tests/run-all.sh                 everything (as root)
#   NGXAT_SKIP_DEPS=1 tests/run-all.sh   do not call apt-get
#
# What counts as one result:
#   - each build step (autoreconf, configure, make, make install, make fuzz-smoke, make distcheck): one pass or one
#     failure;
#   - each test of a make check (a unit test program, a system test script): one pass, one failure or one skip, as
#     automake decides (exit 77 is a skip);
#   - inside a test program that ran, each cmocka test that skipped ("[  SKIPPED ] name" in its log) adds one skip;
#     a program whose every test skipped checked nothing and is not counted as a pass.
# A skip says why in one line of its log, "SKIP: <reason>" (tests/system/lib.sh skip, tests/unit/testskip.h); the
# line before the final count lists each as "skipped: DIR: TEST[: CASE]: REASON".
#
# Where every check must run (CI=true as root, or NGXAT_REQUIRE_ALL=1; exported to every test), a test skips only
# what even the CI machine may lack (skip_allowed, testskip_allowed: the reason says why) and fails where it would
# have skipped anything else. A skip that gives no reason has not been judged by its test, so there it is counted
# as a failure too.
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)
passed=0 failed=0 skipped=0
timings=()
failures=()
reasons=()
skips=()
if [ "${NGXAT_REQUIRE_ALL:-}" = 1 ] || { [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ]; }; then
	export NGXAT_REQUIRE_ALL=1
	echo "every check must run here (CI as root, or NGXAT_REQUIRE_ALL=1): a skip without an allowed reason fails"
fi

# The run's own deadline (NGXAT_RUN_BUDGET seconds, 4800: CI ends a run at 5400 s and then shows no summary): each
# long step is bounded by what is left of it, and one that meets it fails, saying what was still running.
deadline=$((SECONDS + ${NGXAT_RUN_BUDGET:-4800}))
left() { echo $((deadline - SECONDS > 1 ? deadline - SECONDS : 1)); }
past_deadline() { [ $SECONDS -ge $deadline ]; }

timed() { # timed NAME COMMAND...: COMMAND's status; its seconds go to the summary's "where the time went"
	local name=$1 t0=$SECONDS rc
	shift
	"$@"
	rc=$?
	timings+=("$((SECONDS - t0)) s $name")
	return $rc
}

step() { # step NAME COMMAND...: a build step counts as one test
	local name=$1
	shift
	echo "=== $name"
	if past_deadline; then
		counted "$name: not run, the run's deadline (NGXAT_RUN_BUDGET) had passed" 1
		return 1
	fi
	timed "$name" "$@"
	counted "$name" $?
}

counted() { # counted NAME STATUS: a step's result, counted (STATUS returned)
	if [ "$2" -eq 0 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures+=("$1")
		echo "=== FAILED: $1"
	fi
	return "$2"
}

count_log() { # add the counts of an automake test-suite.log
	local log=$1 p f s
	[ -f "$log" ] || return 0
	p=$(sed -n 's/^# PASS: *//p' "$log" | head -1)
	f=$(($(sed -n 's/^# FAIL: *//p' "$log" | head -1) + $(sed -n 's/^# ERROR: *//p' "$log" | head -1) + \
		$(sed -n 's/^# XPASS: *//p' "$log" | head -1)))
	s=$(sed -n 's/^# SKIP: *//p' "$log" | head -1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + f))
	skipped=$((skipped + ${s:-0}))
	if [ "$f" -gt 0 ]; then
		failures+=("tests in $log")
		# Each failed test's first reason, for the summary: a CI page that shows only the end still says why.
		while IFS= read -r line; do
			reasons+=("$line")
		done < <(awk '/^(FAIL|ERROR): tests\/[^ ]*$/ { t = $2; seen = 0; next }
			t != "" && !seen && /^(FAIL: |not ok |Error: |[^ ]*: error: |[^ ]*: runtime error: |==[0-9]+==ERROR: |\[  ERROR   \] )/ { print t ": " substr($0, 1, 300); seen = 1 }' "$log")
		# Show what failed: the log holds each failing test's output.
		awk '/^(FAIL|ERROR): /{p=1} p{print} /^(PASS|SKIP): /{p=0}' "$log" | tail -n 200
	fi
}

# skip_reason TEST NAME REASON: one skip, listed above the final line; one with no reason fails where every
# check must run (its test has not said that the CI machine may skip it).
skip_reason() {
	if [ -z "$3" ] && [ -n "${NGXAT_REQUIRE_ALL:-}" ]; then
		failed=$((failed + 1))
		failures+=("$1: $2: skipped, with no reason, where every check must run")
		return 1
	fi
	skipped=$((skipped + 1))
	skips+=("$1: $2: ${3:-(no reason given)}")
}

count_skips() { # count_skips BUILDDIR: the skips of the tests in BUILDDIR/check.out, from each test's log
	local dir=$1 res t log line name reason ran nskip
	while read -r res t; do
		res=${res%:}
		log=$dir/$t.log
		[ -f "$log" ] || log=$dir/${t%.sh}.log
		[ -f "$log" ] || continue
		if [ "$res" = SKIP ]; then
			# Counted as a skip by automake (exit 77): its reason, or no reason (a failure where all must run).
			reason=$(sed -n 's/^SKIP: //p' "$log" | head -1)
			skipped=$((skipped - 1))
			skip_reason "$dir" "$t" "$reason"
			continue
		fi
		# cmocka's skipped tests: "[  SKIPPED ] name" once as it runs and once in its group's summary; the reason
		# is the "SKIP: " line printed since that test's "[ RUN      ] name".
		ran=0 nskip=0
		while IFS= read -r line; do
			case $line in
			"#ran "*) ran=$((ran + ${line#\#ran })) ;;
			*)
				name=${line%%	*} reason=${line#*	}
				nskip=$((nskip + 1))
				skip_reason "$dir" "$t: $name" "$reason"
				;;
			esac
		done < <(awk '
			/^\[==========\] Running / { delete seen }
			/^\[ RUN      \] / { cur = substr($0, 14); why = "" }
			/^SKIP: / { why = substr($0, 7) }
			/^\[  SKIPPED \] / && !/ test\(s\)/ {
				n = substr($0, 14)
				if (!(n in seen)) { seen[n] = 1; print n "\t" (n == cur ? why : "") }
			}
			/^\[==========\] [0-9]+ test\(s\) run\./ { ran += $2 }
			END { print "#ran " ran + 0 }' "$log")
		# A program whose every test skipped checked nothing: not a pass.
		if [ "$res" = PASS ] && [ "$ran" -gt 0 ] && [ "$nskip" -ge "$ran" ]; then
			passed=$((passed - 1))
		fi
	done < <(grep -E '^(PASS|FAIL|SKIP|ERROR|XPASS|XFAIL): ' "$dir/check.out")
}

summary() { # the final lines: where the time went, what failed, what skipped and why, and the counts
	echo
	if [ ${#timings[@]} -gt 0 ]; then
		echo "=== where the time went (of $SECONDS s)"
		printf '%s\n' "${timings[@]}"
	fi
	if [ ${#failures[@]} -gt 0 ]; then
		printf 'failed: %s\n' "${failures[@]}"
	fi
	if [ ${#reasons[@]} -gt 0 ]; then
		printf 'why: %s\n' "${reasons[@]}"
	fi
	if [ ${#skips[@]} -gt 0 ]; then
		printf 'skipped: %s\n' "${skips[@]}"
	fi
	echo "$passed passed, $failed failed, $skipped skipped"
}

running_logs() { # running_logs BUILDDIR: the end of the log of each test there that has no result yet
	local log
	for log in $(find "$1/tests" -name '*.log' 2>/dev/null); do
		[ -f "${log%.log}.trs" ] && continue
		echo "--- ${log#"$1"/} still running at the run's deadline"
		tail -n 30 "$log"
	done
}

run_check() { # run_check BUILDDIR [TESTS]: make check there and count its results
	local dir=$1 rc
	local snap trs
	rm -f "$dir/test-suite.log" "$dir/deadline.out"
	if past_deadline; then
		failed=$((failed + 1))
		failures+=("make check in $dir: not run, the run's deadline (NGXAT_RUN_BUDGET) had passed")
		return 1
	fi
	# 15 s before the deadline, what each test still running has logged (timeout's TERM then reaches the test
	# drivers, which delete a running test's log).
	(
		sp=
		trap '[ -z "$sp" ] || kill "$sp"; exit 0' TERM
		sleep $(($(left) > 20 ? $(left) - 15 : 1)) &
		sp=$!
		wait $sp && running_logs "$dir" >"$dir/deadline.out"
	) >/dev/null 2>&1 &
	snap=$!
	if [ $# -gt 1 ]; then
		timeout -k 30 "$(left)" make -C "$dir" -j"$jobs" check TESTS="$2" >"$dir/check.out" 2>&1
	else
		timeout -k 30 "$(left)" make -C "$dir" -j"$jobs" check >"$dir/check.out" 2>&1
	fi
	rc=$?
	kill "$snap" 2>/dev/null
	grep -E '^(PASS|FAIL|SKIP|ERROR|XPASS|XFAIL):' "$dir/check.out" | sed "s|^|$dir: |"
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		# The run's deadline: no test-suite.log; each test that ended counted from its .trs, and those still
		# running named, with the end of each one's log.
		for trs in $(find "$dir/tests" -name '*.trs' 2>/dev/null); do
			case $(sed -n 's/^:test-result: //p' "$trs" | head -1) in
			PASS | XFAIL) passed=$((passed + 1)) ;;
			SKIP) skipped=$((skipped + 1)) skips+=("$dir: ${trs#"$dir"/}: (its reason: see its log)") ;;
			*) failed=$((failed + 1)) failures+=("$dir: ${trs#"$dir"/}") ;;
			esac
		done
		cat "$dir/deadline.out" 2>/dev/null
		failed=$((failed + 1))
		failures+=("make check in $dir: stopped at the run's deadline (NGXAT_RUN_BUDGET); running:$(sed -n 's/^--- \([^ ]*\) .*/ \1/p' "$dir/deadline.out" 2>/dev/null | tr -d '\n')")
		return 1
	fi
	if [ ! -f "$dir/test-suite.log" ]; then
		# The tests did not even build: that is a failure, not zero tests.
		tail -n 30 "$dir/check.out"
		failed=$((failed + 1))
		failures+=("make check in $dir (no test ran)")
		return 1
	fi
	count_log "$dir/test-suite.log"
	count_skips "$dir"
	[ $rc -eq 0 ]
}

if [ -z "${NGXAT_SKIP_DEPS:-}" ]; then
	if [ "$(id -u)" = 0 ]; then
		step "install packages" packaging/debian-deps.sh || { summary; exit 1; }
	else
		echo "not root: not installing packages (the system tests will skip)"
	fi
fi

# The container test's first layer (a debootstrap with nginx: about 85 s, mostly waiting on the mirror), built in
# the background while the build and the unit tests run; the container test waits for it, or builds it itself.
export NGXAT_CONTAINER_CACHE=$top/build-container
base_pid=
if [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null && command -v systemd-nspawn >/dev/null; then
	bash tests/system/container-base.sh "$NGXAT_CONTAINER_CACHE" >/dev/null 2>&1 &
	base_pid=$!
fi

step "autoreconf" autoreconf -fi || { summary; exit 1; }

# 1. The normal build, -Werror, and every test.
rm -rf build && mkdir build
step "configure (-Werror)" sh -c 'cd build && ../configure --enable-werror >configure.out 2>&1 || { tail -30 configure.out; exit 1; }' &&
	step "make (-Werror)" make -C build -j"$jobs" &&
	unit=$(make -s -C build print-unit-tests) && system=$(make -s -C build print-system-tests) && {
	timed "unit and simulation tests" run_check build "$unit"
	timed "system tests" run_check build "$system"
	# where the time went: the slowest system tests, from the line each one's cleanup prints
	echo "=== slowest system tests (seconds, once each held its lock)"
	for log in build/tests/system/*.log; do
		sed -n "s|^# time: \([0-9]*\) s$|\1 ${log#build/}|p" "$log" | tail -1
	done | sort -rn | head -12
}

# Installation into a staging root puts every file where the unit and the documentation say.
install_check() {
	local d
	d=$(mktemp -d) || return 1
	make -C build install DESTDIR="$d" >build/install.out 2>&1 || { tail -20 build/install.out; rm -rf "$d"; return 1; }
	for f in usr/local/sbin/ngx-autotune usr/local/bin/ngxctl usr/local/lib/systemd/system/ngx-autotune.service \
		usr/local/etc/ngx-autotune/agent.conf usr/local/lib/tmpfiles.d/ngx-autotune.conf \
		usr/local/lib/sysusers.d/ngx-autotune.conf usr/local/share/man/man8/ngx-autotune.8 \
		usr/local/share/man/man8/ngxctl.8 usr/local/share/man/man5/ngx-autotune.conf.5; do
		[ -e "$d/$f" ] || { echo "make install did not install $f"; rm -rf "$d"; return 1; }
	done
	# A control byte in a man page (a form feed where \f was meant, from a script that wrote it) renders as text.
	if grep -lP '[\x00-\x08\x0b-\x1f\x7f]' "$d"/usr/local/share/man/man*/*; then
		echo "control bytes in the man pages above"; rm -rf "$d"; return 1
	fi
	grep -q "ExecStart=/usr/local/sbin/ngx-autotune" "$d/usr/local/lib/systemd/system/ngx-autotune.service" ||
		{ echo "unit ExecStart does not point at the installed binary"; rm -rf "$d"; return 1; }
	[ -f "$d/usr/local/share/ngx-autotune/policies/listen.policy" ] &&
		[ -f "$d/usr/local/share/man/man5/ngx-autotune.policy.5" ] ||
		{ echo "make install did not install the policies or their man page"; rm -rf "$d"; return 1; }
	# The installed configuration and policies validate (the policy directory is where DESTDIR put it).
	{ cat "$d/usr/local/etc/ngx-autotune/agent.conf"
	  printf '[policies]\ndir = %s\n' "$d/usr/local/share/ngx-autotune/policies"; } >"$d/check.conf"
	"$d/usr/local/sbin/ngx-autotune" -n -c "$d/check.conf" | grep -qx "configuration OK" ||
		{ echo "the installed agent.conf and policies do not validate"; rm -rf "$d"; return 1; }
	rm -rf "$d"
}
[ -x build/ngx-autotune ] && step "make install DESTDIR=..." install_check

# 2. The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer, and the system tests that run
#    the agent to a clean exit (LeakSanitizer then checks it too). The system tests that share the machine first,
#    beside the unit tests (api-auth waits 16 s on a client that does not read), the ones that hold it alone last.
rm -rf build-asan && mkdir build-asan
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
step "configure (ASan+UBSan)" sh -c "cd build-asan && ../configure --enable-werror CFLAGS='$san' LDFLAGS='$san' >configure.out 2>&1 || { tail -30 configure.out; exit 1; }" &&
	step "make (ASan+UBSan)" make -C build-asan -j"$jobs" &&
	ASAN_OPTIONS=detect_leaks=1 timed "tests under ASan+UBSan" run_check build-asan \
		"tests/system/api-auth.sh tests/system/cli-api.sh $(make -s -C build-asan print-unit-tests) tests/system/daemon-fakeroot.sh tests/system/knobs-journal.sh tests/system/nginx-live.sh tests/system/tuning-loop.sh"

# 3. Every parser's libFuzzer target (tests/fuzz/README.md), built with clang, ASan and UBSan in a build of its own,
#    each run for a few seconds on its seeds: one result, failed by any crash, leak, undefined behaviour or hang.
fuzz_smoke() {
	rm -rf build-fuzz && mkdir build-fuzz &&
		(cd build-fuzz && ../configure --enable-werror --enable-fuzz --disable-tests CC=clang >configure.out 2>&1) ||
		{ tail -30 build-fuzz/configure.out; return 1; }
	# 3 s a target here, one per CPU at a time (21 targets: about 35 s, and 80 s of build); tests/fuzz/README.md has
	# the longer runs.
	timeout -k 30 "$(left)" make -C build-fuzz -j"$jobs" fuzz-smoke FUZZ_SECONDS=3 >build-fuzz/fuzz-smoke.out 2>&1
	local rc=$?
	grep -E '^(ok|FAIL) fuzz_' build-fuzz/fuzz-smoke.out
	[ $rc -eq 0 ] || tail -n 80 build-fuzz/fuzz-smoke.out
	return $rc
}

# 4. The release tarball builds and passes its unit tests on its own, and its agent runs on a fake host
#    (daemon-fakeroot, systemd-units); every other system test skips there (NGXAT_DISTCHECK): the build tree ran
#    them, and running nine of them again cost about 200 s of a 339 s distcheck.
# 3 and 4 side by side: neither measures anything timed, and their serial parts (configure, the tarball, the
# fuzzers' own runs) leave a CPU free for the other (about 100 s each one after the other in CI).
fuzz_t0=$SECONDS
fuzz_smoke >build/fuzz-smoke.out 2>&1 &
fuzz_pid=$!
step "make distcheck" sh -c 'timeout -k 30 '"$(left)"' make -C build -j'"$jobs"' distcheck NGXAT_DISTCHECK=1 >build/distcheck.out 2>&1 || { tail -40 build/distcheck.out; exit 1; }'
wait "$fuzz_pid"
fuzz_rc=$?
echo "=== make fuzz-smoke (clang, libFuzzer)"
cat build/fuzz-smoke.out
timings+=("$((SECONDS - fuzz_t0)) s make fuzz-smoke (clang, libFuzzer), beside distcheck")
counted "make fuzz-smoke (clang, libFuzzer)" "$fuzz_rc"

# Bounded (container-base.sh's timeouts); it ended long ago unless no system test ran.
[ -z "$base_pid" ] || { kill -0 "$base_pid" 2>/dev/null && timeout "$(left)" tail --pid="$base_pid" -f /dev/null; }
summary
[ "$failed" -eq 0 ]
