#!/bin/sh
# Install what ngx-autotune needs to build, test and run its demo on Debian 12. Idempotent; needs root.
set -eu
BUILD="build-essential autoconf automake pkg-config libuv1-dev libmicrohttpd-dev libsqlite3-dev libnl-3-dev
libnl-route-3-dev libnl-genl-3-dev libnl-idiag-3-dev libsystemd-dev libjansson-dev libcurl4-openssl-dev
libinih-dev libcmocka-dev"
TEST="nginx-light libnginx-mod-http-echo wrk apache2-utils jq sqlite3 iproute2 procps systemd curl"
if [ "$(id -u)" != 0 ]; then
	echo "debian-deps.sh: run as root (it calls apt-get)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $BUILD $TEST >/dev/null
echo "debian-deps.sh: build and test packages installed"
