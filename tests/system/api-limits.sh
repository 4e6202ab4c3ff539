#!/bin/bash
# The API cannot be wedged (issue 15): the real agent (fake host of squeeze_setup) with its Unix socket and a TCP
# listener on 127.0.0.1:18511, attacked from this machine's loopback only.
# - 64 idle connections held past the request deadline (the wedge of libmicrohttpd's accept at its limit): each is
#   answered 408 and closed at 10 s, and the API answers at once afterwards; 32 from 127.0.0.1 and 32 from
#   127.0.0.2 fill the tokenless share, and a third address still gets in (one of theirs gives way).
# - A flood of 2000 connections from another user on the socket and 2000 over TCP, with a slowloris of 200 over TCP
#   (a byte a second): every `ngxctl status` run meanwhile answers, each within 2 s (a wedged API never does).
# - 64 addresses with one connection each fill the tokenless share: a 65th address's request without a token gets
#   503 problem+json at once, while a token holder's from a 66th is answered (issue 22: it was refused, counted
#   tokenless at accept); 64 more that send nothing wait pending for their heads, and one more gets 503 at once.
# - Framing: two Content-Lengths, Content-Length with Transfer-Encoding (and a request smuggled behind it), no
#   Host, two Hosts, two Origins, a request line of garbage, a malformed header: each is 400 problem+json, answered
#   once, the connection closed. A second request on a connection (a space before the colon, a folded header, a bare
#   CR: libmicrohttpd took them as they came and a body ran as a request of its own, issue 22 R8) is never read:
#   every answer closes its connection.
# - 10 half-sent requests ("G", half a request line, half a header) held 3 s, over both listeners: the agent's CPU
#   (utime + stime of /proc/PID/stat) stays under 20% of a core (issue 22, R1: it spun at 100%); 5 whose client
#   closed are dropped at once; the 10, completed, are answered. Costs about 4 s.
# - why and comment with control characters are refused 400; a row stored with ESC, CR and LF is shown escaped by
#   ngxctl history.
# - 300 POSTs of another user on the socket and 300 tokenless over TCP, each to another path, all refused 403 (issue
#   22, R4: each was a synced audit row and a log line): counted in /v1/status and /metrics, 17 audit rows and 17 log
#   lines (16 kinds, then one shared row); at stop the rows count the 600. About 3 s.
# - A body with a byte that is not UTF-8 (and one cut at 1000 bytes inside a character) is stored escaped in the
#   audit trail, and a raw row planted in the store is answered escaped: GET /v1/audit and ngxctl audit answer
#   (issue 22, R7: 503 "Cannot allocate memory" for good). About 1 s.
TEST_EXCLUSIVE=1
TEST_NAME=apilimits
. "$(dirname "$0")/lib.sh"
[ -z "${NGXAT_DISTCHECK:-}" ] || skip_allowed "system test skipped in distcheck: make check in the build tree runs it"
need_root
need_cmd jq curl useradd userdel setpriv
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
need_cmd "$PY"
PORT=18511
ATT=ngxatlim-att
ulimit -n 16384 || fail "cannot raise the test's file limit"

squeeze_setup
chmod 755 "$TMP"
userdel "$ATT" >/dev/null 2>&1
useradd -M -U -s /usr/sbin/nologin "$ATT" || fail "useradd $ATT"
CLEANUP+=("userdel $ATT; groupdel $ATT")
# The token file is written before the last case (a reload reads it): until then the TCP listener is read-only.
TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >>"$TMP/agent.conf" <<EOT
[agent]
socket_mode = 0666
[api]
listen = 127.0.0.1:$PORT
token_file = $TMP/api.tokens
EOT
"$AGENT" --foreground -c "$TMP/agent.conf" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP+=("kill $AGENT_PID")
wait_for 10 curl -sf --unix-socket "$TMP/api.sock" http://localhost/v1/status || fail "the agent did not answer"
grep -q "API limits: 512 connections, 64 per user on the socket, 32 per TCP address, 64 over TCP without a token; a whole request within 10000 ms" "$TMP/agent.log" ||
	fail "the limits at start: $(grep 'API limits' "$TMP/agent.log")"

cat >"$TMP/attack.py" <<'PYEOF'
import json, os, re, socket, subprocess, sys, threading, time

SOCK, PORT = sys.argv[1], int(sys.argv[2])
TOKEN = os.environ.get("NGXAT_TOKEN", "")

def unix():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(SOCK)
    return s

def tcp(src="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.connect(("127.0.0.1", PORT))
    return s

def read_all(s, timeout):
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return data, True
            data += b
    except (socket.timeout, BlockingIOError):
        return data, False
    except ConnectionResetError:
        return data, True

def status_of(data):
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.") else 0

def problem(data):
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"application/problem+json" in head.lower() or b"application/problem+json" in head, head
    return json.loads(body)

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def hold(mk, n, secs):
    """N idle connections made by MK, held SECS: the answers and when each was closed."""
    conns = [mk() for _ in range(n)]
    t0 = time.time()
    closed = {}
    datas = {i: b"" for i in range(n)}
    for c in conns:
        c.setblocking(False)
    while time.time() - t0 < secs and len(closed) < n:
        for i, c in enumerate(conns):
            if i in closed:
                continue
            try:
                b = c.recv(4096)
                if not b:
                    closed[i] = time.time() - t0
                datas[i] += b
            except BlockingIOError:
                pass
            except ConnectionResetError:
                closed[i] = time.time() - t0
        time.sleep(0.05)
    for c in conns:
        c.close()
    return datas, closed

def get(mk, path="/v1/status", timeout=2.0):
    s = mk()
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % (path, PORT)).encode())
    d, _ = read_all(s, timeout)
    s.close()
    return status_of(d)

def wedge():
    for name, mk, n in (("unix", unix, 64),):
        datas, closed = hold(mk, n, 14)
        late = [t for t in closed.values() if not 9.5 <= t <= 12.5]
        if len(closed) != n or late:
            fail("%s: %d of %d idle connections closed at 10 s (times %s)" % (name, len(closed), n, sorted(closed.values())[:5]))
        if any(status_of(d) != 408 for d in datas.values()):
            fail("%s: an idle connection was not answered 408: %r" % (name, list(datas.values())[0][:200]))
        t0 = time.time()
        if get(unix) != 200 or get(tcp) != 200 or time.time() - t0 > 1:
            fail("%s: the API does not answer after %d idle connections timed out" % (name, n))
    print("ok: 64 idle connections on the socket answered 408 and closed at 10 s; the API answers at once after")
    # 32 from 127.0.0.1 and 32 from 127.0.0.2 (the report's case) fill the tokenless share; a third address takes
    # the place of one of theirs.
    conns = [tcp("127.0.0.%d" % a) for a in (1, 2) for _ in range(32)]
    time.sleep(0.3)
    t0 = time.time()
    if get(lambda: tcp("127.0.0.5")) != 200 or time.time() - t0 > 1:
        fail("a third address does not get in beside 64 tokenless connections")
    gone = [c for c in conns if read_all(c, 0.05)[1]]
    if len(gone) != 1:
        fail("%d connections gave way to the third address, not 1" % len(gone))
    for c in conns:
        c.close()
    for c in conns:
        c.close()
    print("ok: 32 + 32 tokenless TCP connections: a third address is answered, one idle connection gave way")

def refused_at_once():
    # One connection from each of 64 addresses fills the tokenless share, and none holds more than a newcomer would:
    # no place can be taken. A newcomer is admitted pending: its head decides. Without a token, 503 at once.
    conns = [tcp("127.0.2.%d" % a) for a in range(1, 65)]
    time.sleep(0.3)
    t0 = time.time()
    s = tcp("127.0.2.65")
    s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % PORT)
    d, closed = read_all(s, 2.0)
    took = time.time() - t0
    if status_of(d) != 503 or not closed or took > 2.0:  # at once, not at the 10 s request deadline
        fail("a request without a token over the tokenless share: %r closed=%s in %.3f s" % (d[:300], closed, took))
    p = problem(d)
    if p["status"] != 503 or "the share of connections without a token is taken" not in p["detail"]:
        fail("503 problem: %r" % p)
    # A token holder's connection is not refused because others hold the tokenless share.
    s = tcp("127.0.2.66")
    s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n\r\n"
              % (PORT, TOKEN.encode()))
    d, closed = read_all(s, 5.0)
    if status_of(d) != 200:
        fail("a token holder's request beside a full tokenless share: %r" % d[:300])
    # As many again wait pending for their heads; one more is refused at once, its head not waited for.
    pend = [tcp("127.0.3.%d" % a) for a in range(1, 65)]
    time.sleep(0.3)
    t0 = time.time()
    d, closed = read_all(tcp("127.0.3.65"), 2.0)
    took2 = time.time() - t0
    if status_of(d) != 503 or not closed or took2 > 2.0:
        fail("one connection over the pending share: %r closed=%s in %.3f s" % (d[:300], closed, took2))
    if any(read_all(c, 0.01)[1] for c in conns + pend):
        fail("a connection of the full share was closed")
    for c in conns + pend:
        c.close()
    print("ok: 64 tokenless addresses with one connection each; a 65th's request without a token is answered 503 "
          "problem+json at once (%.0f ms), a token holder's is answered; 64 pending, one more 503 at once (%.0f ms)"
          % (took * 1000, took2 * 1000))

def flood(ngxctl):
    stop = time.time() + 14
    counts = {"unix": 0, "tcp": 0, "slow": 0, "errors": 0}
    def opener(kind, mk):
        held = []
        while time.time() < stop and counts[kind] < 2000:
            try:
                held.append(mk())
                counts[kind] += 1
            except OSError:
                counts["errors"] += 1
                time.sleep(0.01)
        while time.time() < stop:
            time.sleep(0.1)
        for c in held:
            c.close()
    def slowloris():
        conns = []
        for i in range(200):
            try:
                conns.append(tcp("127.0.1.%d" % (1 + i % 200)))
                counts["slow"] += 1
            except OSError:
                counts["errors"] += 1
        req = b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for k in range(len(req)):
            if time.time() >= stop:
                break
            for c in conns:
                try:
                    c.send(req[k:k + 1])
                except OSError:
                    pass
            time.sleep(1)
        for c in conns:
            c.close()
    att = attacker(ATTACKER, 13)
    ths = [threading.Thread(target=opener, args=("tcp", lambda: tcp("127.0.0.9"))),
           threading.Thread(target=slowloris)]
    for t in ths:
        t.start()
    time.sleep(1)
    worst, runs = 0.0, 0
    while time.time() < stop - 1:
        t0 = time.time()
        r = subprocess.run(ngxctl + ["status"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
        took = time.time() - t0
        runs += 1
        worst = max(worst, took)
        if r.returncode != 0 or b"ngx-autotune" not in r.stdout:
            fail("ngxctl status under the flood: %s %s" % (r.returncode, r.stderr[:300]))
        time.sleep(0.2)
    for t in ths:
        t.join()
    counts["unix"] = int(att.communicate()[0] or 0)
    if counts["unix"] < 2000 or counts["tcp"] < 2000 or counts["slow"] < 200:
        fail("the flood did not open its connections: %r" % counts)
    # Not a timing figure (those live in bench/): a wedged API answers never, or after the 10 s request deadline;
    # 2 s tells that apart on a loaded CI machine (100 ms failed once with a benchmark running beside it).
    if worst > 2.0:
        fail("ngxctl status took %.0f ms under the flood (%d runs)" % (worst * 1000, runs))
    print("ok: 2000 connections on the socket (another user), 2000 over TCP, a slowloris of 200: %d ngxctl status runs, the slowest %.0f ms" % (runs, worst * 1000))

def raw(mk, req, timeout=2.0):
    s = mk()
    s.sendall(req)
    d, closed = read_all(s, timeout)
    s.close()
    return d, closed

def framing():
    H = "Host: localhost\r\n"
    cases = [
        ("two Content-Lengths", unix, "POST /v1/pause HTTP/1.1\r\n" + H + "Content-Length: 2\r\nContent-Length: 30\r\n\r\n{}", "more than one Content-Length"),
        ("Content-Length and chunked", unix, "POST /v1/resume HTTP/1.1\r\n" + H + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v1/status HTTP/1.1\r\n" + H + "\r\n", "both Content-Length and Transfer-Encoding"),
        ("no Host", unix, "GET /v1/status HTTP/1.1\r\n\r\n", "no Host"),
        ("two Hosts", tcp, "GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nHost: evil\r\n\r\n" % PORT, "more than one Host"),
        ("two Origins", tcp, "POST /v1/pause HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nOrigin: http://127.0.0.1:%d\r\nOrigin: http://evil\r\nContent-Length: 0\r\n\r\n" % (PORT, PORT), "more than one Origin"),
        ("garbage", unix, "\x16\x03\x01\x00\xa5\x01\x00", "the request line is not"),
        ("a malformed header", unix, "GET /v1/status HTTP/1.1\r\n" + H + "X-No-Colon\r\n\r\n", "a header line is not NAME: VALUE"),
    ]
    for name, mk, req, want in cases:
        d, closed = raw(mk, req.encode("latin-1"))
        if status_of(d) != 400 or not closed or len(re.findall(rb"HTTP/1\.1 \d\d\d ", d)) != 1:
            fail("%s: %r (closed: %s)" % (name, d[:400], closed))
        p = problem(d)
        if want not in p["detail"]:
            fail("%s: detail %r" % (name, p["detail"]))
    print("ok: each framing case is 400 problem+json, answered once, the connection closed")
    # Issue 22, R8: libmicrohttpd parses the requests after a connection's first (only the first's head is checked
    # raw), and it takes "Content-Length : 38" for no length (the body, a request of its own, was executed), and
    # folded headers and bare CRs as they come. Every connection now carries one request: its first answer says
    # Connection: close, and nothing after it on the connection is read (whether sent at once or after the answer).
    inner = "POST /v1/pause HTTP/1.1\r\n" + H + "\r\n"
    seconds = [
        ("a space before the colon", "POST /v1/resume HTTP/1.1\r\n" + H + "Content-Length : %d\r\n\r\n%s" % (len(inner), inner)),
        ("a folded Content-Length", "POST /v1/resume HTTP/1.1\r\n" + H + "Content-Length: \r\n %d\r\n\r\n%s" % (len(inner), inner)),
        ("a bare CR", "GET /v1/status HTTP/1.1\r\n" + H + "X-A: a\rContent-Length: 0\r\n\r\n" + inner),
        ("framed two ways", "POST /v1/pause HTTP/1.1\r\n" + H + "Content-Length: 2\r\nContent-Length: 9\r\n\r\n{}"),
    ]
    first = "GET /v1/status HTTP/1.1\r\n" + H + "\r\n"
    for name, second in seconds:
        for at_once in (True, False):
            s = unix()
            s.sendall(first.encode() + (second.encode() if at_once else b""))
            d, closed = read_all(s, 0.5)
            if not at_once and not closed:
                try:
                    s.sendall(second.encode())
                except OSError:
                    pass
                more, closed = read_all(s, 2.0)
                d += more
            s.close()
            head = d.partition(b"\r\n\r\n")[0].lower()
            if status_of(d) != 200 or not closed or len(re.findall(rb"HTTP/1\.1 \d\d\d ", d)) != 1 or \
                    b"connection: close" not in head:
                fail("a second request with %s (%s): %r (closed: %s)" % (name, "at once" if at_once else "after the answer", d[:400], closed))
    t = json.loads(raw(unix, ("GET /v1/trials/current HTTP/1.1\r\n" + H + "Connection: close\r\n\r\n").encode())[0].partition(b"\r\n\r\n")[2])
    if t.get("paused") is not False:
        fail("a request hidden in a second request's body was executed: paused %r" % t.get("paused"))
    print("ok: a second request on a connection (a space before the colon, folded, a bare CR, framed two ways; sent at once or after the answer) is never read: one answer, Connection: close; the request hidden in its body was not executed")
    # Issue 22: "100 Continue" was sent for a body over the limit, which was then read and refused. The head alone
    # is answered 413 at once (no 100 Continue), and the connection closed.
    d, closed = raw(unix, ("POST /v1/pause HTTP/1.1\r\n" + H + "Content-Length: 16385\r\nExpect: 100-continue\r\n\r\n").encode())
    if status_of(d) != 413 or b" 100 " in d.split(b"\r\n", 1)[0] or b"100 Continue" in d or not closed:
        fail("a body over the limit with Expect: 100-continue: %r (closed: %s)" % (d[:300], closed))
    if "at most 16384 bytes" not in problem(d)["detail"]:
        fail("413 detail: %r" % problem(d))
    d, closed = raw(unix, ("POST /v1/pause HTTP/1.1\r\n" + H + "Content-Length: 2\r\nExpect: 100-continue\r\n\r\n").encode(), 0.5)
    if not d.startswith(b"HTTP/1.1 100 Continue\r\n"):
        fail("a body within the limit with Expect: 100-continue is not asked for: %r" % d[:200])
    print("ok: Expect: 100-continue with a body over the limit is answered 413 at once, without 100 Continue; within the limit, 100 Continue")

def slow_one():
    s = unix()
    t0 = time.time()
    s.setblocking(False)
    req, k, d = b"GET /v1/status HTTP/1.1\r\nHost: localhost\r\n\r\n", 0, b""
    while time.time() - t0 < 14:
        try:
            s.send(req[k:k + 1])
            k += 1
        except OSError:
            break
        d, closed = read_all(s, 1.0)
        if closed:
            break
    took = time.time() - t0
    if status_of(d) != 408 or not 9.5 <= took <= 12.5:
        fail("a byte a second: %r after %.1f s" % (d[:200], took))
    print("ok: a request at a byte a second is answered 408 and closed after %.1f s" % took)

def api_open(mk=None):
    """How many connections the agent holds open, this request's own included."""
    s = (mk or unix)()
    s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    d, _ = read_all(s, 2.0)
    s.close()
    return json.loads(d.partition(b"\r\n\r\n")[2])["api"]["open"]

def cpu_ticks(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # utime + stime

def half_sent(pid):
    # Issue 22, R1: part of a request line, then nothing. The agent peeked at it and its socket stayed readable, so
    # the loop spun at 100% of a core for as long as the connection stayed (and, for one whose client had gone,
    # until the request deadline). Held 3 s: the agent must stay near idle (a bound for a spin, not a timing figure).
    starts = [b"G", b"GET /v1/sta", b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0"]
    held = [(unix if i % 2 else tcp)() for i in range(10)]
    for i, c in enumerate(held):
        c.sendall(starts[i % 3])
    gone = []
    for i in range(5):
        c = (unix if i % 2 else tcp)()
        c.sendall(starts[i % 3])
        c.close()
        gone.append(c)
    # Wait for the event, not a time: the 10 held are admitted (+1: this request).
    t0 = time.time()
    while api_open() < 11:
        if time.time() - t0 > 5:
            fail("10 half-sent connections held: the agent holds %d open" % (api_open() - 1))
        time.sleep(0.05)
    tck = os.sysconf("SC_CLK_TCK")
    c0, t0 = cpu_ticks(pid), time.time()
    time.sleep(3)
    share = (cpu_ticks(pid) - c0) / tck / (time.time() - t0)
    if share > 0.20:
        fail("10 half-sent requests held 3 s: the agent used %.0f%% of a core" % (share * 100))
    if api_open() != 11:
        fail("5 half-sent connections whose client closed are still held: %d open, not 10 (+1)" % (api_open() - 1))
    # Waiting on the socket still wakes on what comes next: each held request, completed, is answered.
    whole = b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % PORT
    for i, c in enumerate(held):
        c.sendall(whole[len(starts[i % 3]):])
    for i, c in enumerate(held):
        d, closed = read_all(c, 2.0)
        if status_of(d) != 200:
            fail("a half-sent request completed after 3 s: %r" % d[:200])
        c.close()
    print("ok: 10 half-sent requests held 3 s: the agent used %.1f%% of a core; 5 closed half-sent were dropped at once; "
          "each held one, completed, was answered 200" % (share * 100))

def api_json(path):
    d, _ = raw(unix, ("GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" % path).encode())
    return d.partition(b"\r\n\r\n")[2]

def denied_rows():
    return [r for r in json.loads(api_json("/v1/audit?limit=1000"))["audit"] if r["action"] == "denied"]

def denied(user, log):
    # Issue 22, R4: every refused request was an audit row (a synced write) and a log line, and an unprivileged user
    # varying the path wrote 2,032 a second. Now they are counted (/v1/status, /metrics) and sampled: the first of
    # each kind (the same row) in a minute is a row and a log line, the others are counted into it, and beyond 16
    # kinds a minute the rest share one row: 600 refusals to 600 paths make 17 rows (the counts are checked at stop).
    n0 = json.loads(api_json("/v1/status"))["api"].get("denied", 0)
    rows0, lines0 = len(denied_rows()), open(log, "rb").read().count(b" denied from ")
    code = ("import socket,sys\n"
            "bad=0\n"
            "for i in range(300):\n"
            "  s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1])\n"
            "  s.sendall(b'POST /v1/changes/%d/revert HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 0\\r\\nConnection: close\\r\\n\\r\\n' % (i + 1))\n"
            "  d=b''\n"
            "  while True:\n"
            "    b=s.recv(65536)\n"
            "    if not b: break\n"
            "    d+=b\n"
            "  bad+=not d.startswith(b'HTTP/1.1 403 ')\n"
            "  s.close()\n"
            "print(bad)\n")
    out = subprocess.run(["setpriv", "--reuid=" + user, "--regid=" + user, "--clear-groups", sys.executable, "-c",
                          code, SOCK], stdout=subprocess.PIPE, check=True).stdout
    if int(out) != 0:
        fail("%s of 300 POSTs of another user were not answered 403" % out.strip().decode())
    for i in range(300):
        d, _ = raw(tcp, ("POST /v1/changes/%d/revert HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 0\r\n"
                         "Connection: close\r\n\r\n" % (i + 1, PORT)).encode())
        if status_of(d) != 403:
            fail("a tokenless POST over TCP: %r" % d[:200])
    n = json.loads(api_json("/v1/status"))["api"].get("denied", 0) - n0
    if n != 600:
        fail("/v1/status api.denied grew by %d for 600 refused requests" % n)
    prom = api_json("/metrics").decode()
    m = re.search(r'^ngxat_api_requests_denied_total\{status="403"\} (\d+)$', prom, re.M)
    if not m or int(m.group(1)) < 600:
        fail("/metrics: %r" % [l for l in prom.splitlines() if "denied" in l])
    rows = denied_rows()
    new = len(rows) - rows0
    lines = open(log, "rb").read().count(b" denied from ") - lines0
    if new != 17 or lines != 17:
        fail("600 refused requests to 600 paths wrote %d audit rows and %d log lines, not 17 and 17" % (new, lines))
    if not any(r["actor"] == user and r["detail"].startswith("POST /v1/changes/1/revert: ") and r["outcome"] == "403"
               for r in rows):
        fail("no row for the first refused request of %s: %r" % (user, rows[:2]))
    shared = [r for r in rows if r["detail"].startswith("the first of the refusals of more than 16 kinds in a minute, "
                                                         "counted in this row: POST /v1/changes/17/revert: ")]
    if len(shared) != 1:
        fail("no shared row for the refusals beyond 16 kinds: %r" % rows[:3])
    print("ok: 600 refused requests (300 of another user on the socket, 300 tokenless over TCP, each to another "
          "path): counted 600 in /v1/status and /metrics, 17 audit rows and 17 log lines")

def attacker(user, secs):
    """2000 connections to the socket from a process running as another user, held SECS; prints how many opened."""
    code = ("import socket,sys,time\n"
            "h=[];e=0;t=time.time()+%d\n"
            "while len(h)<2000 and time.time()<t:\n"
            "  try:\n"
            "    c=socket.socket(socket.AF_UNIX);c.connect(sys.argv[1]);h.append(c)\n"
            "  except OSError: e+=1;time.sleep(0.01)\n"
            "time.sleep(max(0,t-time.time()));print(len(h))\n" % secs)
    # setpriv, not runuser: no PAM session, so the test's raised file limit holds for it too.
    return subprocess.Popen(["setpriv", "--reuid=" + user, "--regid=" + user, "--clear-groups", sys.executable, "-c",
                             code, SOCK], stdout=subprocess.PIPE)

what = sys.argv[3]
if what == "wedge":
    wedge()
elif what == "refused":
    refused_at_once()
elif what == "framing":
    framing()
elif what == "slow":
    slow_one()
elif what == "denied":
    denied(sys.argv[4], sys.argv[5])
elif what == "half":
    half_sent(int(sys.argv[4]))
elif what == "flood":
    ATTACKER = sys.argv[4]
    flood(sys.argv[5:])
PYEOF

run() { "$PY" "$TMP/attack.py" "$TMP/api.sock" "$PORT" "$@" || fail "$1"; }
run wedge && ok "the 64-idle wedge: closed at the deadline, the API answers after (socket and TCP)"
run half "$AGENT_PID" && ok "half-sent requests: the agent waits on their sockets (near idle), answers them once whole"
run denied "$ATT" "$TMP/agent.log" && ok "refused requests: counted, one audit row and one log line per kind a minute"
run framing && ok "framing: every case refused 400 problem+json, one answer, connection closed"
run slow && ok "slowloris: a byte a second is cut at the request deadline"
printf 'ops:%s\n' "$TOKEN" >"$TMP/api.tokens" && chmod 600 "$TMP/api.tokens" || fail "token file"
kill -HUP "$AGENT_PID"
wait_for 10 grep -q "API tokens: reloaded" "$TMP/agent.log" || fail "the token file was not read at the reload"
NGXAT_TOKEN=$TOKEN run refused && ok "no place may be taken: a request without a token gets 503 problem+json at once, a token holder's is answered"
run flood "$ATT" "$NGXCTL" -s "$TMP/api.sock" && ok "ngxctl status answered (each within 2 s) under 4000 connections and a slowloris of 200"
api /v1/status | jq -e '.tick.count > 0' >/dev/null || fail "the agent stopped answering"
kill -0 "$AGENT_PID" || fail "the agent died"
conns=$(api /v1/status | jq -c .api)
jq -e '.refused >= 1 and .expired >= 1 and (.evicted | type) == "number" and .open >= 1' <<<"$conns" >/dev/null ||
	fail "/v1/status does not count what the API refused and timed out: $conns"
ok "/v1/status counts the API's connections: $conns"

# ---- control characters: refused at the API, escaped by ngxctl for rows stored before ----
out=$(curl -s -w '\n%{http_code}' --unix-socket "$TMP/api.sock" -d '{"knob":"net.core.netdev_budget","value":"600","why":"ok\u001b[2J\r\nforged row"}' \
	http://localhost/v1/proposals)
[ "${out##*$'\n'}" = 400 ] || fail "why with ESC, CR, LF: ${out##*$'\n'} ${out%$'\n'*}"
jq -e '.detail | test("^why: control characters")' <<<"${out%$'\n'*}" >/dev/null || fail "why detail: ${out%$'\n'*}"
out=$(curl -s -w '\n%{http_code}' --unix-socket "$TMP/api.sock" -d '{"comment":"a\nb"}' http://localhost/v1/proposals/1/approve)
[ "${out##*$'\n'}" = 400 ] || fail "comment with LF: $out"
ok "why and comment with control characters are refused 400 with a clear detail"
"$NGXCTL" -s "$TMP/api.sock" propose net.core.netdev_budget=600 --why "plain" >/dev/null || fail "a plain proposal"
"$PY" - "$TMP/store/ngx-autotune.db" <<'PYEOF' || fail "cannot plant a row with control characters"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
db.execute("UPDATE changes SET why = 'x' || char(27) || '[2J' || char(13) || char(10) || 'forged' || char(155) || '31m'")
db.commit()
PYEOF
out=$("$NGXCTL" -s "$TMP/api.sock" history) || fail "ngxctl history"
[ "$(wc -l <<<"$out")" -ge 2 ] || fail "ngxctl history lists nothing: $out; changes: $(api /v1/changes)"
LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' <<<"$out" && fail "ngxctl history printed a control character: $(od -c <<<"$out" | head)"
grep -qF 'x\x1b[2J\r\nforged\xc2\x9b31m' <<<"$out" || fail "ngxctl history did not escape the row: $out"
ok "ngxctl history shows a stored row with ESC, CR, LF and a C1 CSI escaped"

# ---- R7 (issue 22): one byte that is not UTF-8 may not poison the audit trail ----
# A body of {"why":"\xff"} (refused 400) and one cut at 1000 bytes inside a two-byte character were stored raw in
# the audit row, which jansson then refused to render: GET /v1/audit and ngxctl audit answered 503 "store: Cannot
# allocate memory" from then on. What is stored is escaped; a raw row already stored (an older agent) is escaped
# where it is rendered.
printf '{"why":"\xff"}' >"$TMP/bad.json"
code=$(curl -s -o "$TMP/bad.out" -w '%{http_code}' --unix-socket "$TMP/api.sock" --data-binary @"$TMP/bad.json" \
	http://localhost/v1/pause)
[ "$code" = 400 ] || fail "{\"why\":\"\\xff\"} to /v1/pause: $code $(cat "$TMP/bad.out")"
"$PY" -c 'import sys; sys.stdout.write("{\"why\":\"x" + "\u00e9" * 800 + "\"}")' >"$TMP/cut.json"
code=$(curl -s -o "$TMP/bad.out" -w '%{http_code}' --unix-socket "$TMP/api.sock" --data-binary @"$TMP/cut.json" \
	http://localhost/v1/pause)
[ "$code" = 400 ] || fail "a long why to /v1/pause: $code $(cat "$TMP/bad.out")"
"$PY" - "$TMP/store/ngx-autotune.db" <<'PYEOF' || fail "cannot plant an audit row that is not UTF-8"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
db.execute("INSERT INTO audit(ts, last_ts, actor, peer, action, outcome, detail) VALUES"
           " (1, 1, CAST(X'726f6f74ff' AS TEXT), 'unix:uid=0', 'request', '400', CAST(X'6f6c64c3' AS TEXT))")
db.commit()
PYEOF
out=$(curl -s -w '\n%{http_code}' --unix-socket "$TMP/api.sock" 'http://localhost/v1/audit?limit=1000')
[ "${out##*$'\n'}" = 200 ] || fail "GET /v1/audit after a byte that is not UTF-8: ${out##*$'\n'} ${out%$'\n'*}"
body=${out%$'\n'*}
jq -e '[.audit[].detail | select(test("^POST /v1/pause \\{\"why\":\"\\\\xff\"\\}"))] | length == 1' <<<"$body" >/dev/null ||
	fail "the row of {\"why\":\"\\xff\" is not stored escaped: $(jq -c '[.audit[] | select(.detail | test("pause"))]' <<<"$body")"
jq -e '[.audit[] | select(.actor == "root\\xff" and .detail == "old\\xc3")] | length == 1' <<<"$body" >/dev/null ||
	fail "the planted row is not rendered escaped: $(jq -c '.audit[-1]' <<<"$body")"
out=$("$NGXCTL" -s "$TMP/api.sock" audit -n 1000) || fail "ngxctl audit after a byte that is not UTF-8: $out"
grep -qF 'old\xc3' <<<"$out" || fail "ngxctl audit does not show the planted row: $out"
ok "a body with a byte that is not UTF-8 (and one cut inside a character) is stored escaped; a raw row stored before is rendered escaped; GET /v1/audit and ngxctl audit answer"
# Refused bodies reached the log raw (binary and control bytes): escaped as for a terminal, cut at 1000 bytes.
printf '{"why":"\033[2J\001\377"}' >"$TMP/ctl.json"
code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$TMP/api.sock" --data-binary @"$TMP/ctl.json" \
	http://localhost/v1/pause)
[ "$code" = 400 ] || fail "a body with ESC, SOH and 0xff: $code"
"$PY" - "$TMP/agent.log" <<'PYEOF' || fail "the log holds raw bytes of a client"
import re, sys
for n, line in enumerate(open(sys.argv[1], "rb"), 1):
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        sys.exit("line %d is not UTF-8: %r" % (n, line[:200]))
    if re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text.rstrip("\n")):
        sys.exit("line %d has a control character: %r" % (n, line[:200]))
PYEOF
grep -qF 'POST /v1/pause {"why":"\x1b[2J\x01\xff"}' "$TMP/agent.log" || fail "the refused body is not in the log, escaped"
ok "refused bodies reach the log escaped (ESC, SOH, 0xff as \\xNN), never raw"

# ---- R4: the refusals sampled out of the trail are counted into its rows (at the latest when the agent stops) ----
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "the agent did not stop cleanly"
n=$("$PY" - "$TMP/store/ngx-autotune.db" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
print(db.execute("SELECT count(*), sum(count) FROM audit WHERE action = 'denied'").fetchone())
PYEOF
)
[ "$n" = "(17, 600)" ] || fail "the denied rows (rows, refusals counted) are $n, not 17 rows counting 600"
ok "at stop, the refusals sampled out are counted into their rows: 17 rows count the 600"
echo "PASS: $checks checks"
