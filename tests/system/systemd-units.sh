#!/bin/bash
# The systemd files: the unit passes systemd-analyze verify (with the built binary as ExecStart), sysusers.d
# creates the API group, tmpfiles.d creates the state and runtime directories; the unit keeps the properties the
# agent relies on (Type=notify, a watchdog, reload by SIGHUP, a sandbox that still lets it write its knobs).
TEST_NAME=units
. "$(dirname "$0")/lib.sh"
need_cmd systemd-analyze systemd-sysusers systemd-tmpfiles
IN=$srcdir/systemd/ngx-autotune.service.in
sed -e "s|@sbindir@|$builddir|g" -e "s|@sysconfdir@|/etc|g" "$IN" >"$TMP/ngx-autotune.service"
systemd-analyze verify --man=no "$TMP/ngx-autotune.service" >"$TMP/verify.out" 2>&1 ||
	fail "systemd-analyze verify: $(cat "$TMP/verify.out")"
[ -s "$TMP/verify.out" ] && fail "systemd-analyze verify warns: $(cat "$TMP/verify.out")"
ok "systemd-analyze verify passes without warnings"
for want in "Type=notify" "WatchdogSec=" "ExecReload=/bin/kill -HUP \$MAINPID" "ProtectSystem=strict" \
	"StateDirectory=ngx-autotune" "RuntimeDirectory=ngx-autotune" "ExecStartPre=$builddir/ngx-autotune -n"; do
	grep -qF "$want" "$TMP/ngx-autotune.service" || fail "unit lacks $want"
done
ok "unit: notify, watchdog, reload, sandbox, state and runtime directories, config check before start"
mkdir -p "$TMP/root/etc"
touch "$TMP/root/etc/passwd" "$TMP/root/etc/group" "$TMP/root/etc/shadow" "$TMP/root/etc/gshadow"
systemd-sysusers --root="$TMP/root" "$srcdir/systemd/sysusers.d/ngx-autotune.conf" >/dev/null 2>&1 ||
	fail "systemd-sysusers refused the file"
grep -q '^ngx-autotune:' "$TMP/root/etc/group" || fail "sysusers did not create the group"
ok "sysusers.d creates group ngx-autotune"
systemd-tmpfiles --root="$TMP/root" --create "$srcdir/systemd/tmpfiles.d/ngx-autotune.conf" >"$TMP/tmpfiles.out" 2>&1 ||
	fail "systemd-tmpfiles: $(cat "$TMP/tmpfiles.out")"
[ -d "$TMP/root/var/lib/ngx-autotune" ] && [ -d "$TMP/root/run/ngx-autotune" ] || fail "directories not created"
ok "tmpfiles.d creates /var/lib/ngx-autotune and /run/ngx-autotune"
echo "# $checks checks passed"
