#!/bin/sh
# Install what ngx-autotune needs to build, test and run its demo on Debian 12. Idempotent; needs root.
set -eu
BUILD="build-essential autoconf automake pkg-config libuv1-dev libmicrohttpd-dev libsqlite3-dev libnl-3-dev
libnl-route-3-dev libnl-genl-3-dev libnl-idiag-3-dev libsystemd-dev libjansson-dev libcurl4-openssl-dev
libinih-dev libcmocka-dev nettle-dev"
# clang and its compiler-rt (libFuzzer, the sanitizers' runtimes): the fuzz targets (make fuzz-smoke, tests/fuzz).
FUZZ="clang libclang-rt-14-dev"
# chromium and python3-websocket: the console's end-to-end test (tests/system/console.sh, cdp.py); passwd and
# util-linux: the test users of tests/system/api-auth.sh (useradd, runuser, setpriv); etcd-server and etcd-client:
# the pool's etcd of tests/system/fleet.sh (started by the test, in a namespace of its own); gdb: the threads of an
# agent that a test's watchdog finds hung (tests/system/lib.sh).
TEST="nginx-light libnginx-mod-http-echo wrk apache2-utils jq sqlite3 iproute2 procps systemd curl python3 chromium
python3-websocket passwd util-linux etcd-server etcd-client gdb"
# The package and its checks (tests/system/package.sh): debhelper and dpkg-dev build the .deb, lintian checks it,
# rpm's rpmspec parses the RPM spec; debootstrap and systemd-container boot a real systemd for container.sh.
PACKAGE="debhelper dpkg-dev fakeroot lintian rpm debootstrap systemd-container"
# promtool (tests/system/prometheus.sh) comes from Debian's prometheus package, fetched with apt-get download
# and unpacked under the build directory by the test: the package itself (a service) is not installed.
if [ "$(id -u)" != 0 ]; then
	echo "debian-deps.sh: run as root (it calls apt-get)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $BUILD $FUZZ $TEST $PACKAGE >/dev/null
echo "debian-deps.sh: build and test packages installed"
