#!/bin/bash
# An hour of frames of a host of 64 CPUs, asked for by 127 clients that do not read, under the unit's memory limit
# (issue 22, R2). Found: one GET /v1/frames?since=-3600&limit=3600 built a 39 MB answer and MemoryMax=64M
# OOM-killed the agent; 128 clients that asked and did not read took it to 765 MiB. Here the real agent runs in a
# 64 MiB memory cgroup (v2, or v1) on a fake host of 64 CPUs (/proc/stat, softirqs, interrupts with 16 receive
# queues, softnet_stat: about 1,400 metrics a frame, as the report's host had 1,411), its store holding an hour of
# its own frames (the last one copied back over the hour with sqlite3 while the agent is stopped):
#   1. one reader pages through the hour: every answer at most 1 MiB of JSON, truncated until the last, 3600 frames
#      or more in all;
#   2. 63 clients on the socket and 64 over TCP (one address each) ask for the hour and read nothing, their receive
#      buffers small, for 12 s: the API still answers /v1/status within 2 s each second, the agent stays up, the
#      OOM killer ends nothing in the cgroup, and the answers nobody reads are dropped at the write deadline (10 s);
#      the answers held stayed within their 16 MiB (some were refused 503) and none is held after.
# The cgroup's peak and the agent's VmHWM are printed. Costs about 40 s.
TEST_EXCLUSIVE=1
TEST_NAME=frames64
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd jq curl sqlite3
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
need_cmd "$PY"
PORT=18622
LIMIT=$((64 << 20))
NCPU=64

R=$TMP/root
make_fake_root "$R" 4242
echo 4242 >"$TMP/nginx.pid"
: >"$TMP/access.log"
mkdir -p "$TMP/policies.d"
# 64 CPUs in every per-CPU file the sampler reads.
{
	echo "cpu  6400 0 3200 64000 320 192 448 0 0 0"
	for ((c = 0; c < NCPU; c++)); do echo "cpu$c 100 0 50 1000 5 3 7 0 0 0"; done
	printf 'intr 0\nctxt 12345\nbtime 1700000000\nprocesses 100\nprocs_running 2\nprocs_blocked 0\n'
	echo "softirq 0 0 0 0 0 0 0 0 0 0 0"
} >"$R/proc/stat"
row() { # row LABEL VALUE: LABEL and NCPU columns of VALUE
	printf '%12s' "$1"
	for ((c = 0; c < NCPU; c++)); do printf ' %10d' "$2"; done
	echo
}
{
	printf '%12s' ""
	for ((c = 0; c < NCPU; c++)); do printf ' %10s' "CPU$c"; done
	echo
	row HI: 0
	row TIMER: 2385
	row NET_TX: 10
	row NET_RX: 300
	row BLOCK: 0
} >"$R/proc/softirqs"
{
	printf '%4s' ""
	for ((c = 0; c < NCPU; c++)); do printf ' %10s' "CPU$c"; done
	echo
	for ((q = 0; q < 16; q++)); do
		printf '%4s' "$((25 + q)):"
		for ((c = 0; c < NCPU; c++)); do printf ' %10d' $((100 + c)); done
		echo "   PCI-MSI $((524288 + q))-edge      eth0-rx-$q"
	done
	printf '%4s' "LOC:"
	for ((c = 0; c < NCPU; c++)); do printf ' %10d' 1000; done
	echo "   Local timer interrupts"
} >"$R/proc/interrupts"
for ((c = 0; c < NCPU; c++)); do
	printf '%08x 00000000 00000003 %s%08x\n' $((c * 100)) "$(printf '00000000 %.0s' {1..9})" "$c"
done >"$R/proc/4242/net/softnet_stat"
fake_root_conf "$TMP/agent.conf" "$R" "$TMP/access.log"
cat >>"$TMP/agent.conf" <<EOT
[agent]
socket_mode = 0666
[api]
listen = 127.0.0.1:$PORT
EOT

memcg_new "$LIMIT" || fail "no memory cgroup for the agent (cgroup v2 with the memory controller, or v1)"
start_agent() {
	memcg_run "$AGENT" --foreground -c "$TMP/agent.conf" >>"$TMP/agent.log" 2>&1 &
	AGENT_PID=$!
	CLEANUP+=("kill $AGENT_PID")
	wait_for 10 curl -sf --unix-socket "$TMP/api.sock" http://localhost/v1/status >/dev/null ||
		fail "the agent did not answer: $(tail -5 "$TMP/agent.log")"
}
start_agent
frame_metrics() {
	curl -sf --unix-socket "$TMP/api.sock" 'http://localhost/v1/frames?since=-5&limit=1' |
		jq '.frames[0].values | length'
}
wait_for 10 sh -c '[ "$(curl -sf --unix-socket "$1" http://localhost/v1/status | jq .store.frames)" -ge 5 ]' sh \
	"$TMP/api.sock" || fail "no frames stored"
n=$(frame_metrics)
[ "${n:-0}" -ge 1000 ] || fail "a frame of 64 CPUs holds $n metrics, not 1000 or more"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"

# An hour of frames: the last one, copied back over the hour at 1 s.
sqlite3 "$TMP/store/ngx-autotune.db" "
	WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 3600)
	INSERT OR IGNORE INTO frames SELECT f.ts - k.i * 1000, f.dt, f.probes_ok, f.probes_bad, f.data
	FROM k, (SELECT * FROM frames ORDER BY ts DESC LIMIT 1) AS f;" || fail "sqlite3: the hour of frames"
total=$(sqlite3 "$TMP/store/ngx-autotune.db" "SELECT count(*) FROM frames")
[ "$total" -ge 3600 ] || fail "the store holds $total frames"
start_agent
ok "an hour of frames of 64 CPUs ($total, $n metrics each) in the store; the agent runs in a 64 MiB cgroup"

cat >"$TMP/readers.py" <<'PYEOF'
import json, os, socket, subprocess, sys, time

SOCK, PORT, MEMCG, PID = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
REQ = b"GET /v1/frames?since=-3700&limit=3600 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def get(path, timeout=10.0):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(SOCK)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" % path.encode())
    data = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        data += b
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body

def memcg_current():
    for f in ("memory.current", "memory.usage_in_bytes"):
        try:
            return int(open(os.path.join(MEMCG, f)).read())
        except OSError:
            pass
    return 0

def alive():
    try:
        os.kill(PID, 0)
        return True
    except OSError:
        return False

# 1. One reader pages through the hour.
since, frames, pages, biggest = "-3700", 0, 0, 0
t0 = time.time()
while True:
    status, body = get("/v1/frames?since=%s&limit=3600" % since)
    if status != 200:
        fail("page %d: %d %r" % (pages + 1, status, body[:200]))
    biggest = max(biggest, len(body))
    if len(body) > 1 << 20:
        fail("an answer of %d bytes: more than 1 MiB" % len(body))
    page = json.loads(body)
    pages += 1
    frames += len(page["frames"])
    if not page["truncated"]:
        break
    since = str(page["frames"][-1]["ts"] + 1)
    if pages > 200:
        fail("more than 200 pages")
if frames < 3600:
    fail("%d frames in %d pages" % (frames, pages))
print("ok: one reader: %d frames in %d pages of at most %d bytes, %.1f s" % (frames, pages, biggest, time.time() - t0))

# 2. 63 on the socket (the 64th place is ours) and 64 over TCP ask for the hour and do not read.
held = []
for i in range(63):
    s = socket.socket(socket.AF_UNIX)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(SOCK)
    held.append(s)
for i in range(64):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind(("127.0.5.%d" % (i + 1), 0))
    s.connect(("127.0.0.1", PORT))
    held.append(s)
for s in held:
    s.sendall(REQ.replace(b"localhost", b"127.0.0.1:%d" % PORT) if s.family == socket.AF_INET else REQ)
worst, top = 0.0, 0
end = time.time() + 12
while time.time() < end:
    t = time.time()
    status, body = get("/v1/status", 5.0)
    took = time.time() - t
    worst = max(worst, took)
    top = max(top, memcg_current())
    if status != 200 or took > 2.0:
        fail("/v1/status under 127 unread answers: %d in %.2f s" % (status, took))
    if not alive():
        fail("the agent is gone")
    time.sleep(1.0 - min(took, 1.0))
# The write deadline (10 s) has dropped the answers nobody read.
closed = 0
for s in held:
    s.settimeout(0.5)
    try:
        while True:
            b = s.recv(1 << 20)
            if not b:
                closed += 1
                break
    except socket.timeout:
        pass
    except OSError:
        closed += 1
    s.close()
if closed < len(held):
    fail("%d of %d unread answers still open after 12 s (the write deadline is 10 s)" % (len(held) - closed, len(held)))
print("ok: 127 clients that asked for the hour and did not read, 12 s: /v1/status answered each second (the "
      "slowest %.0f ms), the cgroup at most %.1f MiB; every unread answer dropped at the write deadline"
      % (worst * 1000, top / 1048576.0))
PYEOF
"$PY" "$TMP/readers.py" "$TMP/api.sock" "$PORT" "$MEMCG" "$AGENT_PID" || fail "readers"
kill -0 "$AGENT_PID" 2>/dev/null || fail "the agent is gone"
[ "$(memcg_oom_kills)" = 0 ] || fail "the OOM killer ended $(memcg_oom_kills) process(es) in the agent's cgroup"
api_out=$(curl -sf --unix-socket "$TMP/api.sock" http://localhost/v1/status |
	jq -c '.api | {answer_bytes, answers_refused}')
echo "# the API's answers after: $api_out"
jq -e '.answer_bytes < 1048576 and .answers_refused > 0' <<<"$api_out" >/dev/null ||
	fail "answers held or refused: $api_out (16 MiB of answers at most: some of the 127 must have been refused)"
hwm=$(awk '$1 == "VmHWM:" { print int($2 / 1024) }' "/proc/$AGENT_PID/status")
peak=$(cat "$MEMCG/memory.peak" 2>/dev/null || cat "$MEMCG/memory.max_usage_in_bytes" 2>/dev/null || echo 0)
echo "# the agent's VmHWM $hwm MiB; the cgroup's peak $((peak >> 20)) MiB of $((LIMIT >> 20))"
ok "paged frames and 127 unread answers under 64 MiB: no OOM kill, the agent up, the API answering"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not exit 0"
echo "# $checks checks passed"
