#!/bin/bash
# The first layer of the container test's base (tests/system/container.sh): a bookworm debootstrap (minbase, with
# systemd) from the machine's own Debian mirror, with nginx and the tools of the checks installed, built once into
# DIR/bookworm-tools and kept. The package's own dependencies come in the second layer, from the built .deb.
#
#   tests/system/container-base.sh DIR    build it, or wait for whoever does (DIR/tools.lock): 0 once it is there
#
# tests/run-all.sh starts it in the background before the build, so that the download and the unpacking (about
# 60 s of debootstrap and 25 s of apt, mostly waiting on the mirror) overlap the compiles and the unit tests
# instead of adding to the system tests. Its output goes to DIR/base-tools.log.
set -u
dir=${1:?usage: container-base.sh DIR}
base=$dir/bookworm-tools
mkdir -p "$dir" || exit 1

# The Debian mirror this machine installs from (deb822 sources, else sources.list).
mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk 'BEGIN { RS = ""; FS = "\n" }
			/Suites:[^\n]*bookworm( |$|\n)/ && !/debian-security/ {
				for (i = 1; i <= NF; i++) if ($i ~ /^URIs:/) { split($i, u, " "); print u[2]; exit } }' "$f"
	done
	sed -n 's/^deb  *\(\[[^]]*\] *\)\{0,1\}\(http[^ ]*\) bookworm .*/\2/p' /etc/apt/sources.list 2>/dev/null
}

(
	flock -w 900 9 || { echo "container-base: $dir/tools.lock held for 900 s"; exit 1; }
	[ -f "$base/.ngxat-tools" ] && exit 0
	MIRROR=$(mirror | head -1)
	[ -n "$MIRROR" ] || { echo "container-base: no bookworm mirror in /etc/apt/sources.list or sources.list.d"; exit 1; }
	rm -rf "$base" "$base.new"
	{
		echo "debootstrap from $MIRROR"
		timeout 900 debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm "$base.new" \
			"$MIRROR" || exit 1
		# Not booted: the host's network, for apt (the booted container has none).
		timeout 900 systemd-nspawn -q -D "$base.new" --register=no --keep-unit /bin/sh -c '
			export DEBIAN_FRONTEND=noninteractive
			apt-get update -q && apt-get install -y -q --no-install-recommends nginx wrk curl jq procps &&
			apt-get clean' || exit 1
	} >"$dir/base-tools.log" 2>&1 || { tail -20 "$dir/base-tools.log"; exit 1; }
	touch "$base.new/.ngxat-tools" && mv "$base.new" "$base"
) 9>"$dir/tools.lock"
