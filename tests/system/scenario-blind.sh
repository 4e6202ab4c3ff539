#!/bin/bash
# Blind is not idle: Debian's stock nginx.conf (no stub_status, the combined log, worker_connections 768) run from
# a copy under 2000 clients, the agent left with its defaults for stub_status (nothing answers there) and an access
# log nginx does not write. Found on a real nginx: "nginx is idle (0.00 requests/s)" for 220 s beside 170 listen
# overflows/s, and nothing tried. The agent must say it is blind (which probe, why, the fix), never idle, and still
# act on what the kernel counts itself: worker_connections, the cause of the overflows, not the listen queue. The
# tuning loop is paused until the detectors have spoken, so that its reason shows what they say. Costs about 35 s.
TEST_EXCLUSIVE=1
TEST_NAME=scn-blind
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
[ -f /etc/nginx/nginx.conf ] || skip "no /etc/nginx/nginx.conf (Debian's nginx package)"
NS=ngxat-real-blind-$$
PORT=18460

scn_netns "$NS" || fail "cannot create namespace $NS"
NGINX_DIR=$TMP/nginx
NGINX_CONF=$NGINX_DIR/nginx.conf
mkdir -p "$NGINX_DIR/logs" "$TMP/www"
echo "stock" >"$TMP/www/index.html"
chmod a+rx "$TMP" "$TMP/www"
chmod a+r "$TMP/www/index.html"
# Debian's own file: its pid and logs moved here, no user switch or dynamic modules, and its default site's server
# on this namespace's loopback; the combined log and worker_connections 768 stay.
sed -e "s|^pid .*|pid $NGINX_DIR/nginx.pid;|" -e "s|/var/log/nginx|$NGINX_DIR/logs|" -e "/^user /d" \
	-e "/modules-enabled/d" \
	-e "s|include /etc/nginx/sites-enabled/\*;|server { listen 127.0.0.1:$PORT default_server; root $TMP/www; \
		location / { try_files \$uri \$uri/ =404; } }|" /etc/nginx/nginx.conf >"$NGINX_CONF"
grep -q "worker_connections 768;" "$NGINX_CONF" || fail "not Debian's stock nginx.conf: $(grep worker_connections "$NGINX_CONF")"
grep -q "stub_status" "$NGINX_CONF" && fail "Debian's stock nginx.conf has a stub_status"
cp "$NGINX_CONF" "$TMP/nginx.conf.orig"
ip netns exec "$NS" nginx -p "$NGINX_DIR" -c "$NGINX_CONF" -e "$NGINX_DIR/logs/error.log" || fail "nginx did not start"
CLEANUP+=("nginx_stop $NGINX_DIR/nginx.pid")
wait_for 5 test -s "$NGINX_DIR/nginx.pid" || fail "no pid file"
: >"$TMP/elsewhere.log"
INC=$TMP/inc
mkdir -p "$INC" # the agent's directory, as the package makes it (nginx includes nothing of it here)
# CI-length trials (scn_agent_conf), with the defaults for stub_status (nothing answers there) and an access log
# nginx does not write.
scn_agent_conf "$TMP/agent.conf" $PORT
sed -i -e '/^stub_status_url = /d' -e "s|^access_log = .*|access_log = $TMP/elsewhere.log|" "$TMP/agent.conf"
scn_start_agent
ctl pause >/dev/null || fail "ngxctl pause"
ok "Debian's stock nginx.conf in $NS; the agent's stub_status_url answers nothing, its access log is not nginx's"

scn_load "$NS" 60 -t2 -c2000 "http://127.0.0.1:$PORT/"
blind='paused by an operator; blind: no stub_status, the access log counts 0.00 requests/s beside '
wait_for 40 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/trials/current |
	jq -e --arg b '$blind' '.reason | startswith(\$b)'" ||
	fail "not blind: $(api /v1/trials/current | jq -r .reason)"
reason=$(api /v1/trials/current | jq -r .reason)
echo "# $reason"
grep -q "run \`ngx-autotune --setup\` or set \[nginx\] stub_status_url and access_log" <<<"$reason" ||
	fail "the fix is not named: $reason"
grep -q "idle" <<<"$reason" && fail "idle: $reason"
ok "blind, with the probes missing and the fix, not idle"
grep -q "the synthetic client asks http://127.0.0.1:$PORT/ (from nginx's configuration" "$TMP/agent.log" ||
	fail "the client does not ask nginx's address: $(grep -i 'client' "$TMP/agent.log")"
ok "the synthetic client asks the address nginx serves, not stub_status_url's port"

# Blind, what the kernel counts itself is still acted on: the cause first, worker_connections 768 x 2 workers under
# the 2000 connections established to nginx's ports (the accept queue's included), not the listen queue they fill.
ctl resume >/dev/null || fail "ngxctl resume"
wait_for 40 sh -c "curl -s --unix-socket $TMP/api.sock http://localhost/v1/proposals | jq -e '.proposals | length > 0'" ||
	fail "no proposal while blind: $(api /v1/trials/current | jq -r .reason)"
PROP=$(api /v1/proposals | jq -c '.proposals[0]')
echo "# $(jq -c '{knob, from, to, why}' <<<"$PROP")"
# Four times 768 where the connections seen reach 7/8 of 1536 (nginx stops accepting there: the demand seen is only a
# floor) or nginx logged "not enough", twice below that.
seen=$(jq -r '.why | capture("up to (?<n>[0-9]+) connections established").n // 0' <<<"$PROP")
want=1536
[ "$seen" -lt 1344 ] && ! jq -e '.why | test("not enough")' <<<"$PROP" >/dev/null || want=3072
[ "$(jq -r '"\(.knob) \(.from) \(.to)"' <<<"$PROP")" = "nginx.worker_connections 768 $want" ] ||
	fail "not the cause, or not sized by its evidence ($seen connections seen, want $want): $PROP"
jq -e '.why | test("^nginx.worker_connections: worker_connections 768 at .* x 2 workers = 1536 connections; up to [0-9]+ connections established to nginx.s ports")' \
	<<<"$PROP" >/dev/null || fail "the cause without its evidence: $PROP"
ok "proposed while blind, the cause: $(jq -r '"\(.knob) \(.from) -> \(.to): \(.why)"' <<<"$PROP")"

kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
