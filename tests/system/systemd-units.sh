#!/bin/bash
# The systemd files: the unit passes systemd-analyze verify (with the built binary as ExecStart), sysusers.d
# creates the API group, tmpfiles.d creates the state and runtime directories; the unit keeps the properties the
# agent relies on (Type=notify, a watchdog, reload by SIGHUP, a sandbox that still lets it write its knobs).
TEST_NAME=units
. "$(dirname "$0")/lib.sh"
need_cmd systemd-analyze systemd-sysusers systemd-tmpfiles
for u in ngx-autotune.service ngx-autotune-writer.service; do
	sed -e "s|@sbindir@|$builddir|g" -e "s|@sysconfdir@|/etc|g" "$srcdir/systemd/$u.in" >"$TMP/$u"
done
cp "$srcdir/systemd/ngx-autotune-writer.socket" "$TMP/"
systemd-analyze verify --man=no "$TMP/ngx-autotune.service" "$TMP/ngx-autotune-writer.service" \
	"$TMP/ngx-autotune-writer.socket" >"$TMP/verify.out" 2>&1 || fail "systemd-analyze verify: $(cat "$TMP/verify.out")"
[ -s "$TMP/verify.out" ] && fail "systemd-analyze verify warns: $(cat "$TMP/verify.out")"
ok "systemd-analyze verify passes without warnings (the engine's unit, the writer's and its socket)"
# The engine's unit starts it as its user, with nothing of root's; the writer's is root's, started by its socket
# (mode 0600, the engine's user's), and stopped and restarted with the engine.
for want in "User=ngx-autotune" "CapabilityBoundingSet=" "NoNewPrivileges=yes" "Wants=ngx-autotune-writer.socket"; do
	grep -qxF "$want" "$TMP/ngx-autotune.service" || fail "the engine's unit lacks $want"
done
for want in "Requires=ngx-autotune-writer.socket" "PartOf=ngx-autotune.service" \
	"ExecStart=$builddir/ngx-autotune --writer -c /etc/ngx-autotune/agent.conf"; do
	grep -qxF "$want" "$TMP/ngx-autotune-writer.service" || fail "the writer's unit lacks $want"
done
for want in "ListenSequentialPacket=/run/ngx-autotune-writer.sock" "SocketUser=ngx-autotune" "SocketMode=0600"; do
	grep -qxF "$want" "$TMP/ngx-autotune-writer.socket" || fail "the writer's socket lacks $want"
done
grep -qx "writer_socket = /run/ngx-autotune-writer.sock" "$srcdir/packaging/agent.conf" ||
	fail "the package's agent.conf does not name the writer's socket"
ok "the engine's unit: its user, no capability; the writer's: root's, started by its socket (0600, the user's), part of the engine's"
# systemd's rating of each unit file (the booted container rates the loaded units the same way).
exposure() { systemd-analyze security --offline=true "$TMP/$1" 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'; }
e=$(exposure ngx-autotune.service)
w=$(exposure ngx-autotune-writer.service)
[ -n "$e" ] && awk -v e="$e" 'BEGIN { exit !(e <= 2.0) }' || fail "the engine's unit's exposure is '$e', above 2.0"
ok "systemd-analyze security: the engine's unit $e (at most 2.0), the writer's $w"
for want in "Type=notify" "WatchdogSec=" "ExecReload=/bin/kill -HUP \$MAINPID" "ProtectSystem=strict" \
	"StateDirectory=ngx-autotune/engine" "RuntimeDirectory=ngx-autotune" "ExecStartPre=$builddir/ngx-autotune -n"; do
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
