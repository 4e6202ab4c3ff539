#!/bin/bash
# The main job on a fresh machine: install what is needed, build, and show the agent at work on a real nginx with a
# deliberate misconfiguration. nginx runs in its own network namespace where net.core.somaxconn is 16, so under
# ~400 concurrent short connections its accept queue overflows hundreds of times a second (and, once the agent's
# fix is in, not at all: 400 is below the queue it sets). The agent runs
# beside it in propose mode: within about 10 s it proposes raising the listen queue and waits for an operator.
# It prints the ngxctl commands to run in another terminal (proposals, approve, trial, show, top) and, every 10 s,
# what the agent sees and does; unattended (stdin not a terminal), it approves the proposal itself as an operator
# would. Ctrl-C, or the end of the run, stops everything: the agent puts back every change it made
# (revert_on_stop), then nginx, the load and the namespace go; host-wide sysctls are checked against the values
# saved at the start.
#
#   tests/demo.sh [SECONDS]           default 150 (as root)
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
secs=${1:-150}
case $secs in '' | *[!0-9]*) echo "usage: tests/demo.sh [SECONDS] (as root)" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "tests/demo.sh: run as root (it installs packages and creates a network namespace)" >&2; exit 1; }

[ -n "${NGXAT_SKIP_DEPS:-}" ] || packaging/debian-deps.sh || exit 1
if [ ! -x build/ngx-autotune ]; then
	if [ -e config.status ]; then
		# An in-place ./configure (or an in-tree dpkg-buildpackage before debian/rules built out of tree).
		echo "tests/demo.sh: this source tree is configured in place (./config.status), so build/ cannot be" \
			"configured: run 'make distclean' here first" >&2
		exit 1
	fi
	autoreconf -fi && mkdir -p build && (cd build && ../configure >configure.out) || exit 1
fi
make -s -C build -j"$(nproc)" ngx-autotune ngxctl tests/system/notify-listen || exit 1

builddir=$top/build
srcdir=$top
NGXAT_TEST_LOCKED=1 # a bench or the demo, not run beside the tests: no lock
TEST_TIMEOUT=0 # bounded by its own arguments: no watchdog (tests/system/lib.sh)
TEST_NAME=demo
. tests/system/lib.sh
. tests/system/scenario-lib.sh
trap 'exit 130' INT TERM
PORT=8080
NS=ngxat-demo

# Host-wide sysctls a policy may write (the agent puts back what it changes; this is the check that it did).
HOST_KEYS="net.core.netdev_budget net.core.netdev_budget_usecs net.core.netdev_max_backlog net.core.rmem_max
net.core.wmem_max net.core.busy_poll net.core.busy_read net.core.rps_sock_flow_entries"
declare -A saved
for k in $HOST_KEYS; do saved[$k]=$(sysctl -n "$k" 2>/dev/null); done
host_check() {
	local k now
	for k in $HOST_KEYS; do
		now=$(sysctl -n "$k" 2>/dev/null)
		if [ -n "${saved[$k]}" ] && [ "$now" != "${saved[$k]}" ]; then
			echo "demo: $k is $now, was ${saved[$k]}: putting it back"
			sysctl -qw "$k=${saved[$k]}"
		fi
	done
}
CLEANUP+=("host_check")

scn_netns $NS net.core.somaxconn=16 || fail "could not create namespace $NS"
scn_nginx $NS $PORT || fail "could not start nginx"
scn_agent_conf "$TMP/agent.conf" $PORT propose
sed -i 's/^\[agent\]$/[agent]\nrevert_on_stop = yes/' "$TMP/agent.conf"
scn_start_agent
# Stop the agent first and wait for it: at SIGTERM it puts back what it changed, which needs nginx still running.
CLEANUP+=("kill -TERM $AGENT_PID; wait $AGENT_PID")
ctl() { "$NGXCTL" -s "$TMP/api.sock" "$@"; }

scn_load $NS "$secs" -t2 -c400 -H "Connection: close" "http://127.0.0.1:$PORT/"
cat <<EOT

nginx runs in namespace $NS on 127.0.0.1:$PORT with net.core.somaxconn = 16 (its accept queue: 16 connections),
under ~400 concurrent short connections for $secs s. The agent is in propose mode (agent log: $TMP/agent.log).
Within about 10 s it proposes a change and waits for you. In another terminal:

  $NGXCTL -s $TMP/api.sock proposals       # what it proposes, and the evidence
  $NGXCTL -s $TMP/api.sock approve ID      # let it try: an A/B trial, kept only if the judge says it helps
  $NGXCTL -s $TMP/api.sock trial           # the trial: arm in force, pair k of K, running estimate
  $NGXCTL -s $TMP/api.sock show ID         # the verdict and its evidence
  $NGXCTL -s $TMP/api.sock top             # requests/s, server and client p99, client failures, overflows, every second

Ctrl-C stops everything and puts back whatever the agent changed.

EOT

# Every 10 s, one line: what the agent sees (requests/s, the server's p99 from the access log, the synthetic
# client's p50/p99 with its failures and timeouts) and what its tuning loop does. Unattended (stdin not a
# terminal), the demo approves the first proposal itself, as an operator would; interactive, it says which command
# does it.
[ -t 0 ] && unattended= || unattended=1
announced=
end=$((SECONDS + secs))
while [ $SECONDS -lt $end ]; do
	sleep 5
	id=$(api /v1/proposals | jq '.proposals[0].id // empty')
	if [ -n "$id" ] && [ "$id" != "$announced" ]; then
		announced=$id
		echo
		ctl proposals
		if [ -n "$unattended" ]; then
			ctl approve "$id" --comment "tests/demo.sh, unattended"
		else
			echo ">>> in another terminal: $NGXCTL -s $TMP/api.sock approve $id   (or: reject $id)"
		fi
		echo
	fi
	[ $((SECONDS % 10)) -lt 5 ] &&
		# The status line carries the loop's state too (what ngxctl trial says on its second line).
		echo "[$((secs - end + SECONDS)) s] $(ctl status | sed -n '2s/^ *observing: //p')"
done
echo
ctl status | sed -n 1,2p
echo
# What the tuning loop made of it.
ctl trial
ctl history
