#!/bin/bash
# The console end to end in headless Chromium, driven over the DevTools protocol (tests/system/cdp.py): the real
# agent on the fake host of squeeze_setup proposes raising net.core.netdev_budget; the page served on the TCP
# listener shows the proposal with its evidence; a wrong token is refused; the right one, entered once and kept in
# page memory only, approves it with a click; the trial's A/B blocks are drawn as they arrive over /v1/events; the
# change appears in the history with its verdict. No console error, no network error, no Content-Security-Policy
# violation, and the page's one event stream stays open throughout (never cut, never reconnected).
# Screenshots and the agent's log go to $builddir/artefacts/console/. Chromium and python3-websocket are required
# (debian-deps.sh). CONSOLE_PORT sets the agent's TCP port (default 18212); the browser picks its own DevTools port.
TEST_NAME=console
. "$(dirname "$0")/lib.sh"
need_root
need_cmd jq curl ss
PY=/usr/bin/python3 # Debian's, which has python3-websocket (a python3 earlier in PATH may not)
command -v chromium >/dev/null || fail "chromium is not installed: run packaging/debian-deps.sh"
"$PY" -c 'import websocket' 2>/dev/null || fail "python3-websocket is not installed: run packaging/debian-deps.sh"
PORT=${CONSOLE_PORT:-18212}
ART=$builddir/artefacts/console
rm -rf "$ART"
mkdir -p "$ART"

squeeze_setup
SECRET=console-secret-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '# the console test\nops:%s\n' "$SECRET" >"$TMP/api.tokens"
chmod 600 "$TMP/api.tokens"
cat >>"$TMP/agent.conf" <<EOT
[api]
listen = 127.0.0.1:$PORT
token_file = $TMP/api.tokens
EOT
squeeze_plant 200 &
CLEANUP+=("kill $!")
"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
CLEANUP+=("cp $TMP/agent.log $ART/agent.log")
wait_for 10 curl -sf "http://127.0.0.1:$PORT/v1/status" || fail "the agent's TCP listener did not answer"
# Another run's agent on the same port would answer the checks below in place of this one.
ss -ltnpH "sport = :$PORT" | grep -q "pid=$AGENT_PID," || fail "port $PORT is not this agent's: $(ss -ltnpH "sport = :$PORT")"

# The page itself: one file, its policy, no external reference.
curl -s -D "$TMP/h" -o "$TMP/page.html" "http://127.0.0.1:$PORT/"
grep -qi '^content-type: text/html' "$TMP/h" || fail "console content type: $(cat "$TMP/h")"
grep -qi "^content-security-policy: default-src 'none'; script-src 'sha256-" "$TMP/h" || fail "no strict CSP: $(cat "$TMP/h")"
grep -qi '^x-content-type-options: nosniff' "$TMP/h" && grep -qi '^x-frame-options: deny' "$TMP/h" ||
	fail "console headers: $(cat "$TMP/h")"
grep -qi '^access-control-' "$TMP/h" && fail "CORS headers on the console"
grep -qi '^set-cookie' "$TMP/h" && fail "a cookie"
grep -Eq '(src|href)="(https?:)?//' "$TMP/page.html" && fail "the page references another site"
cmp -s "$TMP/page.html" "$srcdir/agent/api/console.html" || fail "the page served is not agent/api/console.html"
curl -s "http://127.0.0.1:$PORT/console" | cmp -s - "$srcdir/agent/api/console.html" || fail "/console"
ok "GET / and /console: the embedded page, a hash-based CSP, nosniff, DENY framing, no CORS, no cookie"

wait_for 40 sh -c "curl -s http://127.0.0.1:$PORT/v1/proposals | jq -e '.proposals[0].knob == \"net.core.netdev_budget\"'" ||
	fail "the agent made no proposal: $(curl -s http://127.0.0.1:$PORT/v1/trials/current)"
ID=$(curl -s "http://127.0.0.1:$PORT/v1/proposals" | jq '.proposals[0].id')
ok "the agent proposes change $ID (netdev_budget 300 -> 600)"

"$PY" "$srcdir/tests/system/cdp.py" console --url "http://127.0.0.1:$PORT/" \
	--token "ops:$SECRET" --proposal "$ID" --out "$ART" | tee "$TMP/cdp.out"
[ "${PIPESTATUS[0]}" = 0 ] || fail "the console scenario failed (screenshots in $ART)"
for f in 1-proposal.png 2-trial.png 3-history.png; do
	[ -s "$ART/$f" ] && [ "$(head -c 4 "$ART/$f" | od -An -c | tr -d ' ')" = '211PNG' ] || fail "screenshot $f"
done
ok "Chromium: proposal seen, wrong token refused, approved by click, blocks drawn live, verdict in history ($ART)"

curl -s --unix-socket "$TMP/api.sock" "http://localhost/v1/audit?limit=200" >"$TMP/audit.json"
jq -e --arg id "$ID" '.audit[] | select(.action == "approve" and .actor == "token:ops" and (.change_id | tostring) == $id
	and (.peer | test("^127\\.0\\.0\\.1:[0-9]+$")))' "$TMP/audit.json" >/dev/null ||
	fail "no approve row by token:ops from 127.0.0.1:PORT: $(jq -c '.audit[:8]' "$TMP/audit.json")"
jq -e '.audit[] | select(.action == "denied" and .outcome == "401" and .peer == "127.0.0.1" and (.detail | test("unknown token")))' \
	"$TMP/audit.json" >/dev/null || fail "the wrong token's refusal is not in the audit trail"
jq -e --arg id "$ID" '.audit[] | select(.action == "approve" and (.detail | test("approved by token:ops: approved from the console")))' \
	"$TMP/audit.json" >/dev/null || fail "the approval's comment is not in the audit trail"
ok "the audit trail has the approval by token:ops with its peer and comment, and the refused wrong token"
kill -TERM $AGENT_PID
wait $AGENT_PID
[ $? = 0 ] || fail "agent did not exit 0"
grep -qi "Sanitizer\|runtime error" "$TMP/agent.log" && fail "the agent's log: $(grep -i -m3 "Sanitizer\|runtime error" "$TMP/agent.log")"
echo "# $checks checks passed"
