#!/bin/bash
# Issue 22, R3, reproduced on a real nginx: `[nginx] binary` names a link in a directory a user owns, the link to
# the real nginx. Before, the check passed (it looked at where the link led), the user swapped the link, and the
# agent's next `nginx -T` ran the user's program as root. Now (1) the agent refuses to start, naming the directory
# and its owner, and (2) a directory given away after the start is found at the next run: the agent walks the path
# from / every time it runs nginx and runs the file it checked (by its descriptor), so the user's program never
# runs; the agent says why it could not run nginx. The user's program, if it ever ran, would leave a file behind.
TEST_NAME=trust-race
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx jq curl ip setpriv
NS=ngxat-trust-$$
PORT=18530
REAL=$(command -v nginx)

scn_netns "$NS" || fail "cannot create namespace $NS"
scn_nginx "$NS" $PORT || fail "nginx did not start"
chmod 0711 "$TMP" # nobody may pass through, as through any directory on a real host
# The user's program: it would leave a mark, then run nginx so that nothing else looks wrong.
mkdir "$TMP/user"
cat >"$TMP/user/evil" <<EOT
#!/bin/sh
touch $TMP/user/ran-as-\$(id -u)
exec $REAL "\$@"
EOT
chmod 0755 "$TMP/user/evil"
chown -R 65534:65534 "$TMP/user"

# (1) At start: the link sits in the user's directory.
ln -s "$REAL" "$TMP/user/nginx"
chown -h 65534:65534 "$TMP/user/nginx"
scn_agent_conf "$TMP/agent.conf" $PORT
sed -i "s|^\[nginx\]$|[nginx]\nbinary = $TMP/user/nginx|" "$TMP/agent.conf"
rc=0
timeout 20 "$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/refused.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "the agent with a binary in a user's directory exited $rc: $(tail -5 "$TMP/refused.out")"
grep -q "$TMP/user is owned by uid 65534, not root" "$TMP/refused.out" ||
	fail "the refusal does not name the user's directory: $(tail -5 "$TMP/refused.out")"
ok "binary in a directory owned by uid 65534: the agent refuses to start, naming it"

# (2) After the start: root's directory with root's link, then given to the user, who swaps the link.
mkdir "$TMP/bin"
ln -s "$REAL" "$TMP/bin/nginx"
sed -i "s|^binary = .*|binary = $TMP/bin/nginx|" "$TMP/agent.conf"
scn_start_agent
wait_for 15 sh -c "curl -sf --unix-socket '$TMP/api.sock' http://x/v1/knobs | jq -e '[.knobs[] | select(.name == \"nginx.worker_processes\" and .state == \"ok\")] | length == 1' >/dev/null" ||
	fail "the agent does not read nginx's configuration with the trusted binary: $(api /v1/knobs | jq -c '.knobs[] | select(.name == "nginx.worker_processes")')"
chown 65534:65534 "$TMP/bin"
setpriv --reuid=65534 --regid=65534 --clear-groups ln -sfn "$TMP/user/evil" "$TMP/bin/nginx" ||
	fail "the user could not swap the link"
[ "$(readlink "$TMP/bin/nginx")" = "$TMP/user/evil" ] || fail "the link was not swapped"
# A reload makes the agent read nginx's configuration again (nginx -T).
kill -HUP "$(cat "$NGINX_DIR/nginx.pid")"
wait_for 45 grep -q "cannot run nginx.*$TMP/bin is owned by uid 65534, not root" "$TMP/agent.log" ||
	fail "no refusal to run nginx from the user's directory: $(tail -5 "$TMP/agent.log")"
ls "$TMP/user"/ran-as-* >/dev/null 2>&1 && fail "the user's program ran: $(ls "$TMP/user")"
ok "the directory given away after the start: nginx -T refused at the next run, naming it; the user's program never ran"

kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
ls "$TMP/user"/ran-as-* >/dev/null 2>&1 && fail "the user's program ran: $(ls "$TMP/user")"
echo "# $checks checks passed"
