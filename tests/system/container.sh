#!/bin/bash
# The package on the host its users have: a real systemd booted in a bookworm container (debootstrap, then
# systemd-nspawn -b), Debian's nginx running under its own unit with its stock configuration, the built .deb
# installed with apt, nginx set up with ngxctl setup --apply, and the agent used through systemctl and ngxctl
# until apt purge (tests/system/container-checks.sh runs inside, as a unit, and powers off). The container's
# base (debootstrap from the machine's own Debian mirror, with nginx, wrk and the package's dependencies) is
# built once and cached (in NGXAT_CONTAINER_CACHE, else the build directory); each run boots a fresh copy of it
# with a private network, so its nginx and any load stay on its own loopback. Bounded: 7 minutes for the boot and
# the checks (one change waits out its 60 s settle time).
TEST_EXCLUSIVE=1
TEST_NAME=container
TEST_TIMEOUT=1500 # the .deb (up to 900 s), and the base built here when the background build failed: its layers
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pkg-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "the container test runs in the main build (the tarball has no debian/)"
need_root
need_cmd debootstrap systemd-nspawn dpkg-buildpackage dpkg-deb flock

deb=$(build_deb) || fail "dpkg-buildpackage failed (see $builddir/packages/build.log)"
ok "built $(basename "$deb")"

# The cached base, in two layers: a debootstrap with nginx and the checks' tools (container-base.sh, which
# tests/run-all.sh starts in the background before the build), then the package's dependencies from the .deb
# (installed with it, then the package purged: the booted container has no network), made again when they change.
CACHE=${NGXAT_CONTAINER_CACHE:-$builddir/container}
bash "$srcdir/tests/system/container-base.sh" "$CACHE" ||
	fail "the container's base could not be built (see $CACHE/base-tools.log)"
BASE=$CACHE/bookworm
depends=$(dpkg-deb -f "$deb" Depends)
(
	flock -w 900 9 || exit 1
	if [ -f "$BASE/.ngxat-ready" ] && [ "$(cat "$BASE/.ngxat-ready")" = "$depends" ]; then
		exit 0
	fi
	rm -rf "$BASE" "$BASE.new"
	cp -a "$CACHE/bookworm-tools" "$BASE.new" && mkdir -p "$BASE.new/root/pkgs" && cp "$deb" "$BASE.new/root/pkgs/" ||
		exit 1
	# Not booted: the host's network, for apt; the lists of the first layer, fetched again if they went stale.
	timeout 900 systemd-nspawn -q -D "$BASE.new" --register=no --keep-unit /bin/sh -c '
		export DEBIAN_FRONTEND=noninteractive
		deb=/root/pkgs/'"$(basename "$deb")"'
		{ apt-get install -y -q --no-install-recommends "$deb" ||
			{ apt-get update -q && apt-get install -y -q --no-install-recommends "$deb"; }; } &&
		dpkg --purge ngx-autotune && apt-get clean' \
		>"$CACHE/base.log" 2>&1 || { tail -20 "$CACHE/base.log"; exit 1; }
	rm -rf "$BASE.new/root/pkgs"
	printf '%s' "$depends" >"$BASE.new/.ngxat-ready" && mv "$BASE.new" "$BASE"
) 9>"$CACHE/bookworm.lock" || fail "the container's base could not be made from the first layer (see $CACHE/base.log)"
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
