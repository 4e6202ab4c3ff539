#!/bin/bash
# The command lines and the API's answers to bad input: usage errors, -n on broken files, --once, problem objects
# with the right status (400, 404, 405, 413), metric filters, and ngxctl when the agent is down.
TEST_NAME=cli-api
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_cmd jq curl

"$AGENT" --help | grep -q -- "--once" || fail "--help does not list --once"
"$AGENT" --bogus >/dev/null 2>&1
[ $? = 2 ] || fail "an unknown option does not exit 2"
"$AGENT" -V | grep -q "^ngx-autotune " || fail "-V"
ok "ngx-autotune --help, -V, unknown option"

printf '[agent]\ntick_interval = 1s\n[nginx]\nstub_status_url = gopher://x\n' >"$TMP/bad.conf"
out=$("$AGENT" -n -c "$TMP/bad.conf" 2>&1)
[ $? = 1 ] || fail "-n on a broken file does not exit 1"
grep -q "bad.conf:4: stub_status_url: must be an http:// or https:// URL" <<<"$out" || fail "-n said: $out"
out=$("$AGENT" -n -c "$TMP/missing.conf" 2>&1)
[ $? = 1 ] && grep -q "missing.conf: No such file" <<<"$out" || fail "-n on a missing -c file: $out"
ok "-n names FILE:LINE and the problem; a missing -c file is an error"

R=$TMP/root
make_fake_root "$R" 77
echo 77 >"$TMP/nginx.pid"
cat >"$TMP/agent.conf" <<EOT
[agent]
tick_interval = 200ms
socket = $TMP/api.sock
socket_group =
[store]
path = $TMP/store.db
[policies]
dir = $srcdir/policies
override_dir = $TMP/policies.d
[nginx]
pid_file = $TMP/nginx.pid
stub_status_url =
access_log =
error_log =
[probes]
netlink = no
EOT
"$AGENT" --once -c "$TMP/agent.conf" --root "$R" >"$TMP/once.json" 2>"$TMP/once.err" || fail "--once failed"
jq -e '.values["tcp.listen_overflows"] == 0 and .values["nginx.workers"] == 2 and .dt > 0
	and .values["irq.25.1"] == 0 and .values["irq.26.total"] == 0 and .values["tcp.sockstat.time_wait"] == 100' \
	"$TMP/once.json" >/dev/null || fail "--once frame: $(head -c 600 "$TMP/once.json")"
ok "--once prints one frame as JSON (deltas over one interval; NIC IRQs found by name in /proc/interrupts)"

"$NGXCTL" -s "$TMP/api.sock" status >"$TMP/down.out" 2>&1
[ $? = 3 ] || fail "ngxctl status with the agent down does not exit 3"
grep -q "is ngx-autotune running" "$TMP/down.out" || fail "ngxctl down message: $(cat "$TMP/down.out")"
"$NGXCTL" -s "$TMP/api.sock" frobnicate >/dev/null 2>&1
[ $? = 2 ] || fail "unknown verb does not exit 2"
ok "ngxctl: agent down -> exit 3 with a hint; unknown verb -> exit 2"

# Every verb answers --help (and -h) with its usage, and refuses an argument that starts with '-' before it sends
# anything: the agent is down here, so a request would exit 3, not 2. The verbs are those ngxctl --help lists.
verbs=$("$NGXCTL" --help | awk '/^Verbs:/ { f = 1; next } /^$/ { f = 0 } f && /^  [a-z]/ { print $1 }')
[ "$(wc -l <<<"$verbs")" = 19 ] || fail "ngxctl --help lists $(wc -l <<<"$verbs") verbs, want 19: $verbs"
for v in $verbs; do
	for h in --help -h; do
		out=$("$NGXCTL" -s "$TMP/api.sock" $v $h 2>&1) || fail "ngxctl $v $h exits $?: $out"
		head -1 <<<"$out" | grep -q "^usage: ngxctl \[OPTIONS\] $v\( \|\$\)" && grep -q "^Exit codes: 0 ok" <<<"$out" &&
			grep -q "^  ngxctl .*$v" <<<"$out" || fail "ngxctl $v $h: no usage, example or exit codes: $out"
	done
	for arg in -zz=1 "-- -zz=1"; do
		out=$("$NGXCTL" -s "$TMP/api.sock" $v $arg 2>&1)
		[ $? = 2 ] || fail "ngxctl $v $arg: exit $? (2 wanted: refused before any request): $out"
	done
done
ok "ngxctl VERB --help and -h for each of the 19 verbs: usage, examples, exit codes, exit 0; an argument starting with '-' is refused before any request (exit 2)"

"$AGENT" --foreground -c "$TMP/agent.conf" --root "$R" >"$TMP/agent.log" 2>&1 &
CLEANUP+=("kill $!")
wait_for 10 test -S "$TMP/api.sock" || fail "agent did not start"
[ "$(stat -c %a "$TMP/api.sock")" = 660 ] || fail "socket mode is $(stat -c %a "$TMP/api.sock"), want 660"
ok "API socket mode 0660"
sleep 1

code() { curl -s -o "$TMP/body" -w '%{http_code}' --unix-socket "$TMP/api.sock" "$@"; }
is_problem() { jq -e --argjson s "$1" '.status == $s and (.title | length > 0) and (.detail | length > 0)' "$TMP/body" >/dev/null; }
[ "$(code http://localhost/v1/nope)" = 404 ] && is_problem 404 || fail "unknown path: $(cat "$TMP/body")"
[ "$(code -X POST http://localhost/v1/status)" = 405 ] && is_problem 405 || fail "POST: $(cat "$TMP/body")"
[ "$(code 'http://localhost/v1/frames?since=yesterday')" = 400 ] && is_problem 400 || fail "bad since"
[ "$(code 'http://localhost/v1/frames?limit=0')" = 400 ] && is_problem 400 || fail "bad limit"
[ "$(code 'http://localhost/v1/frames?metrics=a*b')" = 400 ] && is_problem 400 || fail "bad metric pattern"
[ "$(code -X GET --data-binary 'hello' http://localhost/v1/status)" = 413 ] && is_problem 413 ||
	fail "GET with a body: $(cat "$TMP/body")"
ok "problem objects: 404 unknown path, 405 method, 400 bad query, 413 body on GET"
# One request per connection (issue 22, R8: libmicrohttpd parsed a kept-alive connection's next requests without the
# checks of the first): curl, asked for three GETs on one connection, connects three times (num_connects 1 for each),
# and each answer says Connection: close.
conns=$(curl -s -o /dev/null -o /dev/null -o /dev/null -w '%{num_connects} ' --unix-socket "$TMP/api.sock" \
	http://localhost/v1/status http://localhost/v1/knobs 'http://localhost/v1/frames?since=-2')
[ "$conns" = "1 1 1 " ] || fail "a connection carried more than one request (connects per transfer: $conns)"
for p in /v1/status /metrics /; do
	curl -s -D - -o /dev/null --unix-socket "$TMP/api.sock" "http://localhost$p" | grep -qi '^Connection: close' ||
		fail "GET $p does not say Connection: close"
done
curl -s -D - -o /dev/null --unix-socket "$TMP/api.sock" -d '{}' http://localhost/v1/resume | grep -qi '^Connection: close' ||
	fail "a POST whose body was read does not say Connection: close"
ok "every answer closes its connection (GET, /metrics, the console, a POST): one request per connection"
[ "$(code 'http://localhost/v1/frames?since=-10&metrics=tcp.*,nginx.workers,no.such&limit=2')" = 200 ] ||
	fail "frames query: $(cat "$TMP/body")"
jq -e '(.frames | length) == 2 and (.frames[-1].values | has("no.such") and .["no.such"] == null
	and has("tcp.listen_overflows") and has("nginx.workers") and (has("cpu.0.user") | not))' "$TMP/body" >/dev/null ||
	fail "metric filter/limit: $(head -c 600 "$TMP/body")"
jq -e '.truncated == true and (.frames | all(has("ts") and has("dt") and has("values")))' "$TMP/body" >/dev/null ||
	fail "frames cut by the limit are not marked truncated: $(head -c 300 "$TMP/body")"
[ "$(code 'http://localhost/v1/frames?since=-10')" = 200 ] && jq -e '.truncated == false and (.frames | length) >= 2
	and ([.frames[].ts] | . == sort) and (.frames[-1].values | length) > 20' "$TMP/body" >/dev/null ||
	fail "frames without a limit: $(head -c 300 "$TMP/body")"
[ "$(code 'http://localhost/v1/frames?since=-3600&rollup=1')" = 200 ] &&
	jq -e '.truncated == false and (.frames | type) == "array"' "$TMP/body" >/dev/null ||
	fail "roll-ups: $(head -c 300 "$TMP/body")"
ok "frames: prefix filter, exact names (null when absent), limit and truncated, roll-ups"
[ "$(code http://localhost/v1/metrics)" = 200 ] || fail "metrics list"
jq -e '.metrics | index("tcp.listen_overflows") != null' "$TMP/body" >/dev/null || fail "metric list lacks a name"
ok "/v1/metrics lists metric names"
"$NGXCTL" -s "$TMP/api.sock" --json status | jq -e '.api_version == 1' >/dev/null || fail "ngxctl --json status"
NGXCTL_SOCKET=$TMP/api.sock "$NGXCTL" status | grep -q "^probes:" || fail "ngxctl via \$NGXCTL_SOCKET"
ok "ngxctl --json and \$NGXCTL_SOCKET"

ctl() { "$NGXCTL" -s "$TMP/api.sock" "$@"; }
for v in status knobs proposals trial history audit; do
	ctl --json $v | jq -e 'type == "object"' >/dev/null || fail "ngxctl --json $v is not a JSON object"
done
ok "ngxctl --json for every read verb (status, knobs, proposals, trial, history, audit)"
ctl show 999 >/dev/null 2>&1
[ $? = 5 ] || fail "ngxctl show of an unknown change does not exit 5"
ctl approve 999 >/dev/null 2>&1
[ $? = 5 ] || fail "ngxctl approve of an unknown proposal does not exit 5"
out=$(ctl propose net.core.somaxconn=99999999 2>&1)
[ $? = 4 ] && grep -q "HTTP 409" <<<"$out" || fail "a proposal the agent refuses does not exit 4: $out"
ctl audit --knob 'a&b' >/dev/null 2>&1
[ $? = 2 ] || fail "ngxctl audit with a bad knob name does not exit 2"
ok "exit codes: 5 unknown id, 4 refused by the agent, 2 usage"
# Issue 23: clear-conflict --help sent a POST for a knob named "--help", which stayed in the audit trail.
n0=$(api "/v1/audit?limit=1000" | jq '[.audit[].count] | add')
ctl clear-conflict --help | grep -q "^usage: ngxctl \[OPTIONS\] clear-conflict KNOB" || fail "clear-conflict --help"
for args in "clear-conflict -x" "clear-conflict -- --help" "propose -- -x=1" "history --knob -x" "audit --actor -x"; do
	ctl $args >/dev/null 2>&1
	[ $? = 2 ] || fail "ngxctl $args: exit $?, want 2"
done
n1=$(api "/v1/audit?limit=1000" | jq '[.audit[].count] | add')
[ "$n1" = "$n0" ] || fail "a flag reached the agent as a name: $(api '/v1/audit?limit=3')"
ok "with the agent up, --help and names starting with '-' send nothing (audit trail unchanged at $n0 events)"
ctl revert --all >/dev/null || fail "revert --all"
ctl revert --all >/dev/null || fail "revert --all (again)"
ctl audit -n 5 >"$TMP/audit.out" || fail "ngxctl audit"
head -1 "$TMP/audit.out" | grep -q "^ID .*ACTOR .*ACTION" || fail "audit header: $(head -1 "$TMP/audit.out")"
grep -q "revert-all .*(x2)" "$TMP/audit.out" || fail "the repeated revert-all is not collapsed: $(cat "$TMP/audit.out")"
ctl audit --since 1h --actor root -n 1 | grep -q "more: ngxctl audit --before" || fail "audit paging hint"
[ "$(ctl --json audit --actor nobody-at-all | jq '.audit | length')" = 0 ] || fail "audit actor filter"
ok "ngxctl audit: newest first, repeated events collapsed (x2), filters, paging hint"

# Bash completion, against this agent: verbs, options, and knob names from ngxctl knobs.
comp() { # comp WORDS...: what _ngxctl offers for the last word
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_ngxctl
	printf '%s\n' "${COMPREPLY[@]}"
}
compopt() { :; } # only valid inside a completion bash runs itself
ngxctl() { "$NGXCTL" "$@"; }
. "$srcdir/packaging/bash-completion/ngxctl"
[ "$(comp ngxctl au)" = audit ] || fail "completion of a verb: $(comp ngxctl au)"
comp ngxctl -s "$TMP/api.sock" revert -- | grep -qx -- --offline || fail "completion of revert's options"
comp ngxctl -s "$TMP/api.sock" revert -- | grep -qx -- --setup || fail "completion of revert --setup"
[ "$(comp ngxctl set)" = setup ] && [ "$(comp ngxctl setup --a)" = --apply ] || fail "completion of setup: $(comp ngxctl setup --a)"
comp ngxctl -s "$TMP/api.sock" propose net.core.soma | grep -qx "net.core.somaxconn=" ||
	fail "completion of knob names: $(comp ngxctl -s "$TMP/api.sock" propose net.core.soma)"
comp ngxctl -s "$TMP/api.sock" history --k | grep -qx -- --knob || fail "completion of history's options"
unset -f ngxctl
ok "bash completion: verbs, each verb's options, knob names from the running agent"
echo "# $checks checks passed"
