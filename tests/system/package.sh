#!/bin/bash
# The Debian package and the RPM spec: dpkg-buildpackage builds ngx-autotune_*.deb from this tree, lintian
# --pedantic finds no error and no warning, the files land where bookworm's systemd and debhelper look (the unit
# in pkg-config's systemdsystemunitdir, so the maintainer scripts enable, start and stop it), sysusers runs at
# install, purge removes the state and the group, agent.conf is a conffile; the RPM spec parses (rpmspec -P),
# names this version, and its %files cover everything make install installs.
TEST_NAME=package
TEST_TIMEOUT=1200 # the .deb built (pkg-lib.sh allows it 900 s), then installed and checked
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pkg-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "packaging is checked in the main build (the tarball has no debian/)"
need_cmd dpkg-buildpackage dpkg-deb lintian rpmspec pkg-config git

deb=$(build_deb) || fail "dpkg-buildpackage failed (see $builddir/packages/build.log)"
# Automake refuses an out-of-tree configure of a source tree configured in place ("source directory already
# configured"): tests/demo.sh's build/ failed after an in-tree dpkg-buildpackage (issue 23).
[ ! -e "$builddir/packages/src/config.status" ] ||
	fail "dpkg-buildpackage configured the source tree in place: an out-of-tree configure of it then fails"
ok "built $(basename "$deb"), out of tree (the source tree is left unconfigured)"

lintian --pedantic --display-info "$deb" >"$TMP/lintian.out" 2>&1
grep -E '^(E|W): ' "$TMP/lintian.out" && fail "lintian: errors or warnings (above)"
grep -E '^[IPX]: ' "$TMP/lintian.out" | sed 's/^/  lintian /'
ok "lintian --pedantic: 0 errors, 0 warnings"

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$TMP/files"
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd)
for f in "$unitdir/ngx-autotune.service" "$unitdir/ngx-autotune-writer.service" "$unitdir/ngx-autotune-writer.socket" \
	/usr/sbin/ngx-autotune /usr/bin/ngxctl \
	/usr/lib/sysusers.d/ngx-autotune.conf /usr/lib/tmpfiles.d/ngx-autotune.conf /etc/ngx-autotune/agent.conf \
	/etc/ngx-autotune/policies.d/ /usr/share/ngx-autotune/policies/listen.policy \
	/usr/share/man/man8/ngx-autotune.8.gz /usr/share/man/man8/ngxctl.8.gz /usr/share/doc/ngx-autotune/copyright; do
	grep -qx "$f" "$TMP/files" || fail "the package lacks $f"
done
ok "files where bookworm looks (unit in $unitdir)"

mkdir "$TMP/ctl" && dpkg-deb -e "$deb" "$TMP/ctl" || fail "dpkg-deb -e"
grep -qx /etc/ngx-autotune/agent.conf "$TMP/ctl/conffiles" || fail "agent.conf is not a conffile"
grep -q 'systemd-sysusers.*ngx-autotune.conf' "$TMP/ctl/postinst" || fail "postinst does not run systemd-sysusers"
grep -q "deb-systemd-helper enable 'ngx-autotune.service'" "$TMP/ctl/postinst" || fail "postinst does not enable the unit"
# The engine's unit with the writer's and its socket, in one call (one transaction: the writer stops after the
# engine, PartOf=, After=).
grep -q "deb-systemd-invoke \$_dh_action 'ngx-autotune-writer.service' 'ngx-autotune-writer.socket' 'ngx-autotune.service'" \
	"$TMP/ctl/postinst" || fail "postinst does not start (or, on upgrade, restart) the units: $(grep deb-systemd-invoke "$TMP/ctl/postinst")"
grep -q "deb-systemd-invoke stop 'ngx-autotune-writer.service' 'ngx-autotune-writer.socket' 'ngx-autotune.service'" \
	"$TMP/ctl/prerm" || fail "prerm does not stop the units: $(grep deb-systemd-invoke "$TMP/ctl/prerm")"
grep -q 'rm -rf /var/lib/ngx-autotune' "$TMP/ctl/postrm" && grep -q 'groupdel ngx-autotune' "$TMP/ctl/postrm" ||
	fail "postrm purge does not remove the state directory and the group"
dpkg-deb -f "$deb" Depends | grep -qw procps || fail "Depends lacks procps (the unit's kill)"
dpkg-deb -f "$deb" Recommends | grep -qw nginx || fail "Recommends lacks nginx"
ok "maintainer scripts: sysusers, enable, start/restart, stop, purge; Depends procps, Recommends nginx"

# The RPM spec, with the systemd macros Fedora's systemd-rpm-macros define (Debian's rpm has none).
spec=$srcdir/packaging/rpm/ngx-autotune.spec
rpmspec -P "$spec" --define '_unitdir /usr/lib/systemd/system' --define '_tmpfilesdir /usr/lib/tmpfiles.d' \
	--define '_sysusersdir /usr/lib/sysusers.d' --define 'sysusers_create_compat() true' \
	--define 'systemd_post() true' --define 'systemd_preun() true' --define 'systemd_postun_with_restart() true' \
	>"$TMP/spec.out" 2>"$TMP/spec.err" || { cat "$TMP/spec.err"; fail "rpmspec -P failed"; }
[ ! -s "$TMP/spec.err" ] || { cat "$TMP/spec.err"; fail "rpmspec -P warned"; }
grep -n '%{_' "$TMP/spec.out" && fail "rpmspec -P left macros unexpanded (above)"
version=$(sed -n 's/^AC_INIT(\[ngx-autotune\], \[\([^]]*\)\].*/\1/p' "$srcdir/configure.ac")
grep -qx "Version: *$version" "$TMP/spec.out" || fail "the spec's Version is not configure.ac's $version"
# Every file make install puts under /usr and /etc is listed by %files (a path or a directory above it).
make -C "$builddir" install DESTDIR="$TMP/root" prefix=/usr sysconfdir=/etc \
	systemdsystemunitdir=/usr/lib/systemd/system >"$TMP/install.out" 2>&1 || { tail "$TMP/install.out"; fail "make install"; }
sed -n '/^%files/,/^%changelog/p' "$TMP/spec.out" | awk '/^\//{print $NF} /^%(config|dir|doc|license)/{print $NF}' |
	sed 's/\*$//' >"$TMP/spec.files"
(cd "$TMP/root" && find . -type f | sed 's|^\.||') | while IFS= read -r f; do
	case $f in /usr/share/doc/*) continue ;; esac
	covered=
	while IFS= read -r p; do
		case $f in "$p" | "$p"* ) covered=1; break ;; esac
	done <"$TMP/spec.files"
	[ -n "$covered" ] || echo "$f"
done >"$TMP/uncovered"
[ ! -s "$TMP/uncovered" ] || { cat "$TMP/uncovered"; fail "the spec's %files miss what make install installs (above)"; }
ok "rpmspec -P parses the spec, Version $version, %files cover make install"
echo "$checks checks passed"
