#!/bin/bash
# The main job on a fresh machine: install what is needed, build, start a real nginx in its own network namespace
# under a bounded, changing load, run the agent in the foreground against it, and show a live view of what it
# samples (ngxctl top). Everything it starts is stopped and removed at the end (or on Ctrl-C).
#
#   sudo tests/demo.sh [SECONDS]      default 60
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
secs=${1:-60}
case $secs in '' | *[!0-9]*) echo "usage: sudo tests/demo.sh [SECONDS]" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "tests/demo.sh: run as root (it installs packages and creates a network namespace)" >&2; exit 1; }

[ -n "${NGXAT_SKIP_DEPS:-}" ] || packaging/debian-deps.sh || exit 1
if [ ! -x build/ngx-autotune ]; then
	autoreconf -fi && mkdir -p build && (cd build && ../configure >configure.out) || exit 1
fi
make -s -C build -j"$(nproc)" ngx-autotune ngxctl || exit 1

builddir=$top/build
srcdir=$top
TEST_NAME=demo
. tests/system/lib.sh
PORT=8080
NS=ngxat-demo
ip netns del $NS 2>/dev/null
start_nginx_ns $NS $PORT || fail "could not start nginx"
agent_conf "$TMP/agent.conf" $PORT 1s
"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
CLEANUP+=("kill $!")
wait_for 10 test -S "$TMP/api.sock" || fail "agent did not start"
echo "nginx in namespace $NS on 127.0.0.1:$PORT, agent log $TMP/agent.log, API socket $TMP/api.sock"

# The load, bounded: keep-alive at low then high concurrency, then connection churn (Connection: close).
third=$(( secs / 3 > 1 ? secs / 3 : 1 ))
(
	ip netns exec $NS timeout $((third + 5)) wrk -t1 -c4 -d${third}s "http://127.0.0.1:$PORT/" >/dev/null 2>&1
	ip netns exec $NS timeout $((third + 5)) wrk -t2 -c128 -d${third}s "http://127.0.0.1:$PORT/" >/dev/null 2>&1
	ip netns exec $NS timeout $((third + 5)) ab -q -c 64 -t $third -n 10000000 "http://127.0.0.1:$PORT/" \
		>/dev/null 2>&1
) &
CLEANUP+=("kill $!")

"$NGXCTL" -s "$TMP/api.sock" top -n "$secs"
echo
"$NGXCTL" -s "$TMP/api.sock" status
echo
# What the tuning loop made of it (propose mode: nothing is written without `ngxctl approve`).
"$NGXCTL" -s "$TMP/api.sock" trial
"$NGXCTL" -s "$TMP/api.sock" proposals
