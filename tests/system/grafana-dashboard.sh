#!/bin/bash
# packaging/grafana-dashboard.json and grafana-fleet-dashboard.json against the real thing: a real Prometheus
# (Debian's binary, unpacked under the build dir, never installed) scrapes the agent's /metrics every second while
# the agent watches a real nginx in its own network namespace under a little traffic, a member of a pool of one
# ([fleet], Debian's etcd on loopback, a verdict of another host put in by hand); then every query of both
# dashboards, with their variables filled in, must parse and return data. Grafana itself is not in Debian: its side
# is checked as structure (importable, a Prometheus datasource variable every query uses, panels inside the grid).
TEST_NAME=grafana
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd nginx ip curl python3 etcd etcdctl
DASH=$srcdir/packaging/grafana-dashboard.json
FLEETDASH=$srcdir/packaging/grafana-fleet-dashboard.json
DASHCHECK="python3 $srcdir/tests/system/dashcheck.py"
NS=ngxat-prom-dash-$$
PORT=18312 PROXY=18313 PROMPORT=18314 EPORT=18315

$DASHCHECK "$DASH" >"$TMP/structure.out" || fail "dashboard structure: $(cat "$TMP/structure.out")"
$DASHCHECK "$FLEETDASH" >>"$TMP/structure.out" || fail "fleet dashboard structure: $(cat "$TMP/structure.out")"
ok "the dashboards' structure: $(grep -c '^dashcheck: .* panels' "$TMP/structure.out") dashboards, $(grep -o '[0-9]* queries' "$TMP/structure.out" | tr '\n' ' ')"
# The check can fail: a panel off the datasource variable.
sed 's/"uid": "\${datasource}"/"uid": "prom-1"/' "$DASH" >"$TMP/bad.json"
$DASHCHECK "$TMP/bad.json" | grep -q "not on the datasource variable" || fail "dashcheck accepted a fixed datasource"

PROMETHEUS=$(find_prometheus_tool prometheus)
[ -n "$PROMETHEUS" ] || skip "no prometheus binary (nor apt-get download of Debian's prometheus package)"

start_nginx_ns "$NS" "$PORT" || fail "could not start nginx in namespace $NS"
# A pool of one: etcd on loopback, the agent a member, and another host's verdict put in by hand (refused here,
# its facts are not this host's, and listed: the pool's dashboard shows it).
etcd_loopback dash "$EPORT"
ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$EPORT" put /ngx-autotune/pools/dash/verdicts/net.core.somaxconn/web-2 \
	'{"from":"4096","to":"8192","kept":true,"symptom":"listen_overflows","summary":"by hand","kernel":"0.0","cpus":1,"at_ms":1796050742082}' \
	>/dev/null || fail "etcdctl put failed"
agent_conf "$TMP/agent.conf" "$PORT" 1s
printf '[fleet]\nendpoints = http://127.0.0.1:%s\npool = dash\nhost = dash-1\n' "$EPORT" >>"$TMP/agent.conf"
"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
CLEANUP+=("kill $!")
wait_for 10 test -S "$TMP/api.sock" || fail "the agent did not start"
ip netns exec "$NS" timeout 40 sh -c "while :; do curl -s -o /dev/null http://127.0.0.1:$PORT/; sleep 0.01; done" &
CLEANUP+=("kill $!")

# Prometheus scrapes HTTP over TCP; the agent answers on its Unix socket: a small bounded bridge.
timeout 60 python3 - "$PROXY" "$TMP/api.sock" <<'EOT' &
import socket, sys, threading
port, path = int(sys.argv[1]), sys.argv[2]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(16)
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
while True:
    c, _ = srv.accept()
    u = socket.socket(socket.AF_UNIX)
    u.connect(path)
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
EOT
CLEANUP+=("kill $!")
cat >"$TMP/prometheus.yml" <<EOT
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ngx-autotune
    static_configs:
      - targets: ['127.0.0.1:$PROXY']
EOT
timeout 60 "$PROMETHEUS" --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prom" \
	--web.listen-address="127.0.0.1:$PROMPORT" --log.level=warn >"$TMP/prometheus.log" 2>&1 &
CLEANUP+=("kill $!")
wait_for 20 curl -sf "http://127.0.0.1:$PROMPORT/-/ready" || fail "prometheus not ready: $(tail -n 5 "$TMP/prometheus.log")"
wait_for 20 sh -c "curl -s 'http://127.0.0.1:$PROMPORT/api/v1/query?query=ngxat_ticks_total' | grep -q '\"value\"'" ||
	fail "prometheus does not get ngxat_ticks_total: $(curl -s "http://127.0.0.1:$PROMPORT/api/v1/targets")"
curl -s "http://127.0.0.1:$PROMPORT/api/v1/targets" | grep -q '"health":"up"' || fail "the scrape target is not up"
ok "prometheus $("$PROMETHEUS" --version 2>&1 | head -n1 | awk '{print $3}') scrapes the agent's /metrics"
sleep 12 # rate() over 10 s windows wants a dozen scrapes

# A knob's original value exists only once the agent has written it; this run writes nothing.
$DASHCHECK "$DASH" --prometheus "http://127.0.0.1:$PROMPORT" --may-be-empty ngxat_knob_original_value \
	>"$TMP/queries.out" 2>&1 || fail "dashboard queries: $(grep dashcheck: "$TMP/queries.out")"
cat "$TMP/queries.out"
ok "every query of the dashboard parses and returns data ($(grep -c '^ok ' "$TMP/queries.out") of them)"
$DASHCHECK "$FLEETDASH" --prometheus "http://127.0.0.1:$PROMPORT" >"$TMP/fleet-queries.out" 2>&1 ||
	fail "fleet dashboard queries: $(grep dashcheck: "$TMP/fleet-queries.out")"
cat "$TMP/fleet-queries.out"
ok "every query of the pool's dashboard parses and returns data ($(grep -c '^ok ' "$TMP/fleet-queries.out") of them)"
