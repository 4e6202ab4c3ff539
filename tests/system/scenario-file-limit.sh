#!/bin/bash
# nginx out of files, on a real nginx under real load: worker_rlimit_nofile 256 in nginx.conf (the operator's line)
# with worker_connections 4096, 2 workers and 1000 kept-alive wrk connections: each worker can hold about 250
# connections, accept4() fails with "Too many open files", nginx stops accepting for a while and the accept queue
# fills behind it. Before, the agent proposed listen_queue and keepalive_requests (symptoms) and reloaded an nginx
# that could not open files. It must propose the cause, the doctor's nginx.nofile_limit: worker_rlimit_nofile
# 256 -> 4096 (twice worker_connections, 8192, as far as the policy's largest step, x4 from its minimum 1024,
# allows), edited on the operator's line, and nothing else first; its trial must keep it on the error log's rate,
# and the errors must stop.
TEST_EXCLUSIVE=1
TEST_NAME=scn-nofile
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scenario-lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx wrk jq curl ip
NS=ngxat-real-nf-$$
PORT=18460

scn_netns "$NS" || fail "cannot create namespace $NS"
SCN_MAIN="worker_rlimit_nofile 256;" scn_nginx "$NS" $PORT || fail "nginx did not start"
SCN_POLICIES="listen nginx"
scn_agent_conf "$TMP/agent.conf" $PORT
scn_start_agent
where=$(api /v1/knobs | jq -r '.knobs[] | select(.name == "nginx.worker_rlimit_nofile") | "\(.state) \(.value) \(.why)"')
[ "$where" = "ok 256 set in $NGINX_CONF:5 (edited there)" ] || fail "nginx.worker_rlimit_nofile: $where"
ok "nginx in $NS with worker_rlimit_nofile 256 in nginx.conf:5; the agent is ready"

err_nofile() { grep -c "Too many open files" "$NGINX_DIR/logs/error.log"; }
scn_load "$NS" 300 -t2 -c1000 "http://127.0.0.1:$PORT/"
sleep 3
e0=$(err_nofile)
sleep 5
before=$((($(err_nofile) - e0) / 5))
echo "# \"Too many open files\" before: $before/s"
[ "$before" -ge 1 ] || fail "no \"Too many open files\" under the load: nothing to find"

deadline=$((SECONDS + 120))
while [ $SECONDS -lt $deadline ]; do
	props=$(api /v1/proposals | jq -c '[.proposals[] | {id, knob, from, to, why}]')
	[ "$props" != "[]" ] && break
	sleep 0.5
done
[ "$(jq length <<<"$props")" = 1 ] || fail "not one proposal: $props $(ctl trial)"
prop=$(jq -c '.[0]' <<<"$props")
[ "$(jq -r .knob <<<"$prop")" = nginx.worker_rlimit_nofile ] || fail "the first proposal is not the file limit's: $prop"
id=$(jq .id <<<"$prop")
to=$(jq -r .to <<<"$prop")
[ "$(jq -r .from <<<"$prop")" = 256 ] && [ "$to" = 4096 ] || fail "proposal: $prop"
jq -e '.why | test("too_many_files|Too many open files")' <<<"$prop" >/dev/null || fail "proposal without its evidence: $prop"
ok "out of files: proposal $id raises worker_rlimit_nofile 256 -> 4096, the first and only proposal"

ctl approve "$id" | grep -q approved || fail "ngxctl approve"
st=$(wait_end 300 "$id") || fail "change $id still $st: $(ctl trial)"
detail=$(api "/v1/changes/$id" | jq -r .detail)
[ "$st" = kept ] || fail "change $id ended $st: $detail"
ev=$(api "/v1/changes/$id" | jq -r '.detail | sub("^[^{]*"; "") | fromjson? // empty')
[ "$(jq -r .objective <<<"$ev")" = nginx.err.too_many_files ] || fail "objective: $ev"
ok "kept on the error log's rate: $(jq -r .reason <<<"$ev")"

sed 's/^worker_rlimit_nofile 256;$/worker_rlimit_nofile 4096;/' "$TMP/nginx.conf.orig" | cmp -s - "$NGINX_CONF" ||
	fail "nginx.conf is not the operator's with one argument changed: $(diff "$TMP/nginx.conf.orig" "$NGINX_CONF")"
e0=$(err_nofile)
sleep 5
after=$((($(err_nofile) - e0) / 5))
echo "# \"Too many open files\" after: $after/s (before: $before/s)"
[ "$after" = 0 ] || fail "still $after/s after the change (before: $before/s)"
ok "after: worker_rlimit_nofile 4096 on the operator's line, \"Too many open files\" 0/s (from $before/s)"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
