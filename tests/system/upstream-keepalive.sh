#!/bin/bash
# Upstream keepalive on a real nginx, issue 21's reverse proxy: nginx in a namespace proxies to a second nginx at
# 10.77.0.2 (an address on the namespace's lo, which tcp_tw_reuse's default of 2 does not count as loopback) over
# HTTP/1.1 without upstream keepalive, with 1000 local ports (ip_local_port_range 40000 40999 in the namespace).
# wrk -c200 for 10 s: most responses are 502 and the error log says "connect() failed (99: Cannot assign requested
# address)". The knob's write (through tests/system/knob-harness) makes an upstream block for the address, points
# both proxy_passes at it, and gives the location that inherited the server's headers a copy of them with Connection
# "" and HTTP/1.1; nginx -t passes, the backend receives the same headers as before (but for Connection: close and
# HTTP/1.0 on the location that had them) and keeps its connections: wrk again, on 1000 fresh ports (the first run's
# TIME_WAITs hold the others for 60 s), gets no 502, no connect error, and the backend accepts far fewer connections
# than requests. 0 gives every file back byte for byte, with no backup left.
# Cost: about 30 s (two 10 s runs of wrk); it runs alone (it drives load).
TEST_NAME=upstream-keepalive
TEST_EXCLUSIVE=1
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx ip wrk curl cmp
HARNESS=${KNOB_HARNESS:-$builddir/tests/system/knob-harness}
[ -x "$HARNESS" ] || skip "$HARNESS not built"
NS=ngxat-upka-$$
BACK=10.77.0.2
P=$TMP/proxy
B=$TMP/backend
INC=$P/ngx-autotune
mkdir -p "$P" "$B" "$INC"

# The backend answers with what it received.
cat >"$B/nginx.conf" <<EOT
worker_processes 1;
pid $B/nginx.pid;
error_log $B/error.log;
events { worker_connections 4096; }
http {
	access_log off;
	server {
		listen $BACK:18081 backlog=4096;
		location / {
			return 200 "host=\$http_host xff=\$http_x_forwarded_for xtest=\$http_x_test conn=\$http_connection proto=\$server_protocol\n";
		}
		location = /redir { return 302 http://$BACK:18081/x; }
		location = /status { stub_status; }
	}
}
EOT
# The proxy: the server sends three headers; / has its own (HTTP/1.1 and Connection "", the half of keepalive that
# runs out of ports), /b inherits the server's and speaks nginx's default HTTP/1.0.
cat >"$P/nginx.conf" <<EOT
worker_processes 2;
pid $P/nginx.pid;
error_log $P/error.log;
events { worker_connections 4096; }
http {
	include $INC/http.conf;
	access_log off;
	server {
		listen 127.0.0.1:18080 backlog=4096;
		proxy_set_header Host \$host;
		proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
		proxy_set_header X-Test operator;
		location / {
			proxy_pass http://$BACK:18081;
			proxy_http_version 1.1;
			proxy_set_header Host \$host;
			proxy_set_header Connection "";
		}
		location /b {
			proxy_pass http://$BACK:18081;
		}
	}
}
EOT
printf '# Managed by ngx-autotune.\n' >"$INC/http.conf"
cp -a "$P" "$TMP/orig"

ip netns add "$NS" || fail "cannot create namespace $NS"
CLEANUP+=("ip netns del $NS")
ip -n "$NS" link set lo up
ip -n "$NS" addr add "$BACK/32" dev lo
ip netns exec "$NS" sysctl -qw net.ipv4.ip_local_port_range="40000 40999" || fail "cannot narrow the port range"
ip netns exec "$NS" sysctl -qw net.core.somaxconn=4096
ip netns exec "$NS" nginx -c "$B/nginx.conf" || fail "the backend did not start"
CLEANUP+=("kill -QUIT \$(cat $B/nginx.pid)")
ip netns exec "$NS" nginx -c "$P/nginx.conf" || fail "the proxy did not start"
CLEANUP+=("kill -QUIT \$(cat $P/nginx.pid)")
wait_for 5 test -s "$P/nginx.pid" || fail "no pid file"
wait_for 5 test -s "$B/nginx.pid" || fail "no backend pid file"

h() {
	"$HARNESS" --nginx-conf "$P/nginx.conf" --include-dir "$INC" --pid-file "$P/nginx.pid" --timeout-ms 5000 \
		upstream_keepalive '*' main int "$@"
}
c() { ip netns exec "$NS" curl -sS --max-time 5 "$@"; }
accepts() { c "http://$BACK:18081/status" | awk 'NR == 3 { print $1 }'; }
# wrk through the proxy for 10 s: "REQUESTS NON2XX" (NON2XX 0 when wrk prints no such line).
load() {
	ip netns exec "$NS" wrk -t2 -c200 -d10s "http://127.0.0.1:18080/" >"$TMP/wrk.out" 2>&1 || fail "wrk: $(cat "$TMP/wrk.out")"
	awk '/requests in/ { r = $1 } /Non-2xx or 3xx responses:/ { n = $NF } END { print r + 0, n + 0 }' "$TMP/wrk.out"
}
cannot_assign() { grep -c "connect() to $BACK:18081 failed (99: Cannot assign requested address)" "$P/error.log"; }

before_root=$(c "http://127.0.0.1:18080/")
before_b=$(c "http://127.0.0.1:18080/b")
before_redir=$(c -o /dev/null -w '%{redirect_url}' "http://127.0.0.1:18080/redir")
[ "$before_b" = "host=127.0.0.1 xff=127.0.0.1 xtest=operator conn=close proto=HTTP/1.0" ] ||
	fail "the backend's view of /b: $before_b"

# ---- the fault: ports run out --------------------------------------------------------------------------------
: >"$P/error.log"
read -r total bad < <(load)
errs=$(cannot_assign)
[ "$total" -gt 0 ] && [ $((bad * 100 / total)) -ge 50 ] || fail "without keepalive: $bad of $total responses not 2xx"
[ "$errs" -ge 1000 ] || fail "without keepalive: $errs connect() errors (99) in the error log"
ok "no upstream keepalive, 1000 ports: $bad of $total responses are 502 ($((bad * 100 / total))%), $errs connect() (99: Cannot assign requested address)"

# ---- the knob --------------------------------------------------------------------------------------------------
# 256: two workers with wrk's 200 connections have up to 200 upstream requests in flight each, and nginx closes every
# connection beyond the idle cache (at 64 a quarter of the responses were still 502 here).
out=$(h probe read write 256 read) || fail "keepalive 256: $out"
echo "$out" | grep -qx "probe rc=0 why=2 proxy_passes: 0 to upstream blocks, 2 to addresses (an upstream each)" ||
	fail "probe: $out"
echo "$out" | grep -qx "read rc=0 value=0" && echo "$out" | grep -qx "read rc=0 value=256" || fail "reads: $out"
echo "$out" | grep -qx "write rc=0 msg=keepalive 256 for 2 locations" || fail "write: $out"
N="# ngx-autotune upstream_keepalive"
cat >"$TMP/want.conf" <<EOT
worker_processes 2;
pid $P/nginx.pid;
error_log $P/error.log;
events { worker_connections 4096; }
http {
	include $INC/http.conf;
	access_log off;
	server {
		listen 127.0.0.1:18080 backlog=4096;
		proxy_set_header Host \$host;
		proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
		proxy_set_header X-Test operator;
		location / {
			proxy_pass http://ngxat_up_10_77_0_2_18081; $N: proxy_pass was http://$BACK:18081
			proxy_http_version 1.1;
			proxy_set_header Host \$host;
			proxy_set_header Connection "";
			proxy_redirect http://$BACK:18081/ /; $N
		}
		location /b {
			proxy_pass http://ngxat_up_10_77_0_2_18081; $N: proxy_pass was http://$BACK:18081
			proxy_set_header Host \$host; $N
			proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for; $N
			proxy_set_header X-Test operator; $N
			proxy_set_header Connection ""; $N
			proxy_http_version 1.1; $N
			proxy_redirect http://$BACK:18081/ /; $N
		}
	}
}
EOT
cmp -s "$TMP/want.conf" "$P/nginx.conf" || fail "nginx.conf after the write: $(diff "$TMP/want.conf" "$P/nginx.conf")"
printf '# Managed by ngx-autotune.\nupstream ngxat_up_10_77_0_2_18081 { %s\n\tserver %s:18081; %s\n\tkeepalive 256; %s\n} %s\n' \
	"$N" "$BACK" "$N" "$N" "$N" | cmp -s - "$INC/http.conf" || fail "http.conf: $(cat "$INC/http.conf")"
nginx -q -t -c "$P/nginx.conf" 2>"$TMP/t.err" || fail "nginx -t: $(cat "$TMP/t.err")"
ok "the write: an upstream block with keepalive 256 for the address, both proxy_passes pointed at it, /b given a copy of its inherited headers with Connection \"\" and HTTP/1.1"

# The first run's TIME_WAITs hold ports 40000-40999 for 60 s: 1000 fresh ones from here on.
ip netns exec "$NS" sysctl -qw net.ipv4.ip_local_port_range="41000 41999" || fail "cannot move the port range"
after_root=$(c "http://127.0.0.1:18080/")
after_b=$(c "http://127.0.0.1:18080/b")
after_redir=$(c -o /dev/null -w '%{redirect_url}' "http://127.0.0.1:18080/redir")
[ "$after_root" = "$before_root" ] || fail "the backend's view of /: $before_root -> $after_root"
[ "$after_b" = "host=127.0.0.1 xff=127.0.0.1 xtest=operator conn= proto=HTTP/1.1" ] ||
	fail "the backend's view of /b: $before_b -> $after_b"
[ "$after_redir" = "$before_redir" ] || fail "the redirect a client sees: $before_redir -> $after_redir"
ok "the backend receives the same Host, X-Forwarded-For and X-Test (/b: no Connection: close, HTTP/1.1); redirects read $after_redir as before"

: >"$P/error.log"
a0=$(accepts)
read -r total bad < <(load)
a1=$(accepts)
errs=$(cannot_assign)
[ "$bad" = 0 ] && [ "$errs" = 0 ] || fail "with keepalive 256: $bad of $total responses not 2xx, $errs connect() errors"
[ $((a1 - a0)) -lt 1000 ] && [ "$total" -gt $((10 * (a1 - a0))) ] ||
	fail "the backend accepted $((a1 - a0)) connections for $total requests"
ok "keepalive 256, 1000 fresh ports: $total responses, none 502, no connect() error; the backend accepted $((a1 - a0)) connections"

# ---- the way back ----------------------------------------------------------------------------------------------
out=$(h probe write 0 read) || fail "keepalive 0: $out"
echo "$out" | grep -qx "read rc=0 value=0" || fail "does not read 0 again: $out"
echo "$out" | grep -qx "write rc=0 msg=the knob's edits taken back from 2 files" || fail "the way back: $out"
cmp -s "$TMP/orig/nginx.conf" "$P/nginx.conf" && cmp -s "$TMP/orig/ngx-autotune/http.conf" "$INC/http.conf" ||
	fail "not back byte for byte: $(diff -r "$TMP/orig" "$P")"
[ ! -e "$INC/upstream-backup" ] || fail "backups left: $(ls "$INC/upstream-backup")"
[ "$(c "http://127.0.0.1:18080/b")" = "$before_b" ] || fail "the backend's view of /b after the way back"
ok "0: nginx.conf and http.conf byte for byte, no backup left, /b as before"
echo "# $checks checks passed"
