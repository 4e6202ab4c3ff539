#!/bin/bash
# The package on the host its users have: a real systemd booted in a bookworm container (debootstrap, then
# systemd-nspawn -b), Debian's nginx running under its own unit with its stock configuration, the built .deb
# installed with apt, nginx set up with ngxctl setup --apply, and the agent used through systemctl and ngxctl
# until apt purge (tests/system/container-checks.sh runs inside, as a unit, and powers off). The container's
# base (debootstrap from the machine's own Debian mirror, with nginx, wrk and the package's dependencies) is
# built once and cached under the build directory; each run boots a fresh copy of it with a private network,
# so its nginx and any load stay on its own loopback. Bounded: 7 minutes for the boot and the checks (one
# change waits out its 60 s settle time).
TEST_EXCLUSIVE=1
TEST_NAME=container
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pkg-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "the container test runs in the main build (the tarball has no debian/)"
need_root
need_cmd debootstrap systemd-nspawn dpkg-buildpackage dpkg-deb flock

deb=$(build_deb) || fail "dpkg-buildpackage failed (see $builddir/packages/build.log)"
ok "built $(basename "$deb")"

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
MIRROR=$(mirror | head -1)
[ -n "$MIRROR" ] || fail "no bookworm mirror in /etc/apt/sources.list or sources.list.d"

# The cached base: rebuilt when missing or when the package's dependencies changed.
BASE=$builddir/container/bookworm
depends=$(dpkg-deb -f "$deb" Depends)
(
	flock -w 900 9 || exit 1
	if [ -f "$BASE/.ngxat-ready" ] && [ "$(cat "$BASE/.ngxat-ready")" = "$depends" ]; then
		exit 0
	fi
	rm -rf "$BASE" "$BASE.new"
	mkdir -p "$(dirname "$BASE")"
	timeout 900 debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm "$BASE.new" "$MIRROR" \
		>"$builddir/container/debootstrap.log" 2>&1 || { tail -20 "$builddir/container/debootstrap.log"; exit 1; }
	mkdir -p "$BASE.new/root/pkgs" && cp "$deb" "$BASE.new/root/pkgs/" || exit 1
	# nginx, the tools of the checks, and the package's dependencies (installed with it, then the package
	# purged): the booted container has no network. Not booted: the host's network, for apt.
	timeout 900 systemd-nspawn -q -D "$BASE.new" --register=no --keep-unit /bin/sh -c '
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q && apt-get install -y -q --no-install-recommends nginx wrk curl jq procps \
			/root/pkgs/'"$(basename "$deb")"' && dpkg --purge ngx-autotune && apt-get clean' \
		>"$builddir/container/base.log" 2>&1 || { tail -20 "$builddir/container/base.log"; exit 1; }
	rm -rf "$BASE.new/root/pkgs"
	printf '%s' "$depends" >"$BASE.new/.ngxat-ready" && mv "$BASE.new" "$BASE"
) 9>"$builddir/container.lock" || fail "the container's base could not be built (debootstrap from $MIRROR)"
ok "bookworm base with Debian's nginx ($(chroot "$BASE" dpkg-query -W -f '${Version}' nginx))"

ROOT=$TMP/root
cp -a "$BASE" "$ROOT" || fail "copy of the base"
mkdir -p "$ROOT/root/pkgs" "$TMP/out"
cp "$deb" "$ROOT/root/pkgs/" && cp "$srcdir/tests/system/container-checks.sh" "$ROOT/root/checks.sh" ||
	fail "copy into the container"
cat >"$ROOT/etc/systemd/system/ngxat-checks.service" <<'UNIT'
[Unit]
Description=ngx-autotune container checks
After=multi-user.target nginx.service
[Service]
Type=oneshot
ExecStart=/bin/bash /root/checks.sh
UNIT
ln -s /etc/systemd/system/ngxat-checks.service "$ROOT/etc/systemd/system/multi-user.target.wants/ngxat-checks.service"

# -b boots its systemd; --register=no --keep-unit: no machined here; --private-network: its own loopback only.
# --system-call-filter=pidfd_getfd: nspawn's own filter answers EPERM to it (measured: a root shell in the
# container could not copy nginx's sockets), where a host has no such filter; the unit's own SystemCallFilter
# is then what the checks meet, as on a host (listen_deferred reads TCP_DEFER_ACCEPT through it).
timeout -k 10 420 systemd-nspawn -q -b -D "$ROOT" --register=no --keep-unit --private-network --console=pipe \
	--system-call-filter=pidfd_getfd --bind="$TMP/out:/root/out" >"$TMP/boot.log" 2>&1
rc=$?
[ -f "$TMP/out/result" ] || { tail -40 "$TMP/boot.log"; cat "$TMP/out/result.part" 2>/dev/null;
	fail "the container's checks did not finish (nspawn exit $rc)"; }
sed 's/^/  /' "$TMP/out/result"
grep -q '^RESULT: pass$' "$TMP/out/result" || fail "checks inside the container failed (above)"
[ $rc -eq 0 ] || fail "systemd-nspawn exited $rc (the container did not power off cleanly)"
ok "inside a booted systemd: $(grep -c '^ok ' "$TMP/out/result") checks passed"
echo "$checks checks passed"
