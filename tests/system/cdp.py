#!/usr/bin/python3
"""A small Chrome DevTools protocol client, and the console's end-to-end scenario driven through it.

    cdp.py console --chromium PATH --url URL --token NAME:SECRET --proposal ID --knob-file PATH --out DIR

starts headless Chromium, loads the console at URL, and acts as an operator would: sees proposal ID and the knobs
table, tries to approve it with a wrong token (refused), enters the right token, approves it with a mouse click,
sees the A/A calibration ("calibration pair N of 3") and the trial's A/B blocks arrive over /v1/events, waits for
the verdict (in the agent's words, on the trial card and in the history), checks that the charts span the data
there is and that the latency chart says nginx's time is blind; then pauses, cancels a revert all, reverts the
change, clears a conflict it makes (an operator's change, then another value written into KNOB-FILE), resumes and
reverts all, each confirmed in the page's dialog, and checks each on the host: the API's answers and KNOB-FILE (the
fake host's net.core.netdev_budget). Screenshots go to DIR. Exits 0 when every step held, 1 with a message when
one did not. Needs python3-websocket (Debian).

The browser is always the one this run started, with a fresh profile: Chromium picks a free DevTools port and
writes it to DevToolsActivePort in the profile. (With a fixed port, a browser left running by a run that was killed
kept the port; the next run's Chromium started without DevTools, and this script drove the old browser, whose log
still held what its page saw after its agent stopped: a cut event stream, then refused requests.) The browser dies
with this script, even when the script is killed.
"""
import argparse
import base64
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket


class CDPError(Exception):
    pass


class CDP:
    """One page target over the DevTools websocket: commands and the events seen so far."""

    def __init__(self, ws_url, timeout=30):
        self.ws = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True)
        self.next_id = 0
        self.events = []

    def close(self):
        self.ws.close()

    def _recv(self, deadline):
        self.ws.settimeout(max(0.05, deadline - time.time()))
        try:
            return json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            return None

    def send(self, method, params=None, timeout=30):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params or {}}))
        deadline = time.time() + timeout
        while time.time() < deadline:
            msg = self._recv(deadline)
            if msg is None:
                continue
            if msg.get("id") == mid:
                if "error" in msg:
                    raise CDPError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)
        raise CDPError("%s: no answer in %ss" % (method, timeout))

    def pump(self, seconds):
        """Collect events for SECONDS."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            msg = self._recv(deadline)
            if msg and "method" in msg:
                self.events.append(msg)

    def eval(self, expr, await_promise=False):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": await_promise})
        if "exceptionDetails" in r:
            raise CDPError("evaluate %r: %s" % (expr, r["exceptionDetails"].get("text")))
        return r.get("result", {}).get("value")

    def wait_for(self, expr, timeout, what):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = self.eval(expr)
            if v:
                return v
            self.pump(0.2)
        raise CDPError("timed out after %ss waiting for %s (%s)" % (timeout, what, expr))

    def navigate(self, url, timeout=30):
        self.send("Page.navigate", {"url": url})
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(e["method"] == "Page.loadEventFired" for e in self.events):
                return
            self.pump(0.2)
        raise CDPError("page %s did not load" % url)

    def screenshot(self, path, whole=True):
        """The whole page, or (WHOLE false) what the viewport shows: a modal dialog and its backdrop as seen."""
        r = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": whole})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def click(self, selector):
        """A real mouse click (pressed and released) at the middle of the element SELECTOR."""
        box = self.eval(
            "(() => { const e = document.querySelector(%s); if (!e) return null; e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
            % json.dumps(selector))
        if not box:
            raise CDPError("nothing to click at %s" % selector)
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent",
                      {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1})

    def type_into(self, selector, text):
        """Focus SELECTOR and type TEXT as keyboard input."""
        self.eval("document.querySelector(%s).focus()" % json.dumps(selector))
        self.send("Input.insertText", {"text": text})

    def requests(self, path):
        """The page's requests for PATH (Network domain): [{id, t, status, failed, canceled, finished}], in order."""
        reqs = {}
        for e in self.events:
            p = e.get("params", {})
            rid = p.get("requestId")
            if e["method"] == "Network.requestWillBeSent" and p.get("request", {}).get("url", "").endswith(path):
                reqs[rid] = {"id": rid, "t": p.get("timestamp"), "status": None, "failed": None, "canceled": False,
                             "finished": False}
            elif rid in reqs:
                if e["method"] == "Network.responseReceived":
                    reqs[rid]["status"] = p.get("response", {}).get("status")
                elif e["method"] == "Network.loadingFailed":
                    reqs[rid]["failed"] = p.get("errorText")
                    reqs[rid]["canceled"] = bool(p.get("canceled"))
                    reqs[rid]["t_end"] = p.get("timestamp")
                elif e["method"] == "Network.loadingFinished":
                    reqs[rid]["finished"] = True
                    reqs[rid]["t_end"] = p.get("timestamp")
        return list(reqs.values())

    def problems(self):
        """Console errors, exceptions and CSP violations seen so far."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append("exception: %s" % p.get("exceptionDetails", {}).get("text"))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                text, url = p["entry"].get("text", ""), p["entry"].get("url", "")
                # Answers the page expects: the wrong token's 401, and the 404 of an agent without advisories.
                if "status of 401" in text or ("status of 404" in text and url.endswith("/v1/advisories")):
                    continue
                out.append("log: %s (%s)" % (text, url))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append("console: %s" % p.get("args"))
        return out


PR_SET_PDEATHSIG = 1


def die_with_parent():
    """In the child before exec: SIGKILL when this script dies, however it dies (SIGKILL included)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def start_chromium(binary, profile):
    """Chromium on a DevTools port of its own choosing: (process, websocket URL of its one page)."""
    proc = subprocess.Popen(
        [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0", "--user-data-dir=%s" % profile, "--window-size=1400,1100",
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(profile, "chromium.log"), "w"),
        start_new_session=True, preexec_fn=die_with_parent)
    try:
        return proc, devtools_page(proc, profile)
    except BaseException:
        stop_chromium(proc)
        raise


def devtools_page(proc, profile):
    """The websocket URL of the one page of the browser PROC, once it has written its DevTools port to PROFILE."""
    active = os.path.join(profile, "DevToolsActivePort")
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise CDPError("chromium exited with %s (see %s/chromium.log)" % (proc.returncode, profile))
        try:
            with open(active) as f:
                lines = f.read().split("\n")
            port, browser_path = int(lines[0]), lines[1]
            with urllib.request.urlopen("http://127.0.0.1:%d/json/version" % port, timeout=2) as r:
                version = json.load(r)
            # The port was read from this profile, so this is our browser; said again, in case a port was reused.
            if not version.get("webSocketDebuggerUrl", "").endswith(browser_path):
                raise CDPError("DevTools port %d answers for another browser (%s)" % (port, version))
            with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=2) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            if len(pages) == 1 and pages[0].get("url") == "about:blank":
                return pages[0]["webSocketDebuggerUrl"]
            if len(pages) > 1:
                raise CDPError("a fresh browser has %d pages: %s" % (len(pages), [t.get("url") for t in pages]))
        except (OSError, ValueError, IndexError):
            pass  # not written yet, or not listening yet
        time.sleep(0.2)
    raise CDPError("chromium did not write %s" % active)


def stop_chromium(proc):
    """The browser and every process it started (its own session)."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def step(msg):
    print("cdp: %s" % msg, flush=True)


class Agent:
    """The agent's API on the console's own listener, beside the page: to check what the page did on the host."""

    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return json.load(r)

    def post(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": "Bearer " + self.token,
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def knob(self, name):
        return next(k for k in self.get("/v1/knobs")["knobs"] if k["name"] == name)

    def wait(self, what, pred, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(0.2)
        raise CDPError("timed out after %ss waiting for the agent: %s" % (timeout, what))


def text(cdp, selector):
    return cdp.eval("(() => { const e = document.querySelector(%s); return e ? e.textContent : null; })()"
                    % json.dumps(selector))


def read_file(path):
    with open(path) as f:
        return f.read().strip()


def confirm(cdp, button, title, says, shot=None):
    """Click BUTTON, see the confirmation dialog with TITLE that says SAYS (each a substring), and confirm it."""
    cdp.click(button)
    cdp.wait_for("document.getElementById('confirm').open", 5, "the confirmation of %s" % button)
    got_title, got = text(cdp, "#confirm-title"), text(cdp, "#confirm")
    if got_title != title or not all(x in got for x in says):
        raise CDPError("the confirmation of %s says %r: %r, want %r with %s" % (button, got_title, got, title, says))
    if shot:
        cdp.screenshot(shot, whole=False)
    cdp.click("#confirm-ok")
    cdp.wait_for("!document.getElementById('confirm').open", 5, "the confirmation closed")
    return got


def toast_after(cdp, what, timeout=10):
    return cdp.wait_for("(() => { const t = document.getElementById('toast'); return t.className.includes('show') &&"
                        " t.textContent.includes(%s) ? t.textContent : null; })()" % json.dumps(what), timeout,
                        "the answer %r" % what)


def console_scenario(args):
    os.makedirs(args.out, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="ngxat-chromium.")
    proc = None
    cdp = None
    pid = args.proposal
    secret = args.token.split(":", 1)[1]
    agent = Agent(args.url, secret)
    knob = "net.core.netdev_budget"
    try:
        proc, ws_url = start_chromium(args.chromium, profile)
        cdp = CDP(ws_url)
        for domain in ("Page", "Runtime", "Log", "Network"):
            cdp.send(domain + ".enable")
        cdp.send("Emulation.setDeviceMetricsOverride",
                 {"width": 1400, "height": 1100, "deviceScaleFactor": 1, "mobile": False})
        cdp.navigate(args.url)
        cdp.wait_for("document.querySelector('.proposal[data-id=\"%d\"]') !== null" % pid, 20, "proposal %d" % pid)
        cdp.wait_for("document.getElementById('conn').textContent === 'live'", 10, "the event stream")
        cdp.wait_for("document.querySelectorAll('#charts svg polyline').length > 0", 20, "the charts")
        cdp.wait_for("document.querySelector('#knobs tr[data-knob=\"%s\"]') !== null" % knob, 10, "the knobs table")
        cdp.screenshot(os.path.join(args.out, "1-proposal.png"))
        for b in ("button.approve[data-id=\"%d\"]" % pid, "#pause", "#revert-all"):
            if not cdp.eval("document.querySelector(%s).disabled" % json.dumps(b)):
                raise CDPError("%s is enabled before a token was given" % b)
        why = cdp.eval("document.querySelector('.proposal[data-id=\"%d\"] .why').textContent" % pid)
        if not why:
            raise CDPError("the proposal shows no evidence")
        step("proposal %d shown with its evidence (%s...); Approve, Pause and Revert all disabled without a token"
             % (pid, why[:60]))
        row = cdp.eval("Array.from(document.querySelectorAll('#knobs tr[data-knob=\"%s\"] td')).map(t => t.textContent)"
                       % knob)
        if row[:3] != [knob, "ok", "300"] or not row[4]:
            raise CDPError("the knobs table's %s: %s" % (knob, row))
        step("knobs table: %s" % " | ".join(row[:7]))
        if args.pool:
            # The pool card: this host alive in its pool, and the peer's verdict put into etcd by the test.
            pool, host, peer = args.pool.split(":")
            cdp.wait_for("!document.getElementById('pool-card').hidden && document.querySelector("
                         "'#pool-members tr[data-host=\"%s\"][data-alive=\"1\"]') !== null" % host, 15, "the pool card")
            cdp.wait_for("document.querySelector('#pool-verdicts tr[data-host=\"%s\"][data-kept=\"1\"]') !== null" % peer,
                         15, "the pool's verdicts")
            head = text(cdp, "#pool-head")
            if not head.startswith("pool %s, this host %s: etcd answers" % (pool, host)):
                raise CDPError("the pool card's head: %r" % head)
            cells = cdp.eval("Array.from(document.querySelectorAll('#pool-verdicts tr[data-host=\"%s\"] td'))"
                             ".map(t => t.textContent)" % peer)
            step("pool card: %s; %s" % (head[:90], " | ".join(cells[:5])))

        # A wrong token: the agent refuses it and the page says so; nothing is approved.
        cdp.type_into("#token", "wrong-secret-0000000000")
        cdp.click("#token-set")
        cdp.click("button.approve[data-id=\"%d\"]" % pid)
        cdp.wait_for("document.getElementById('toast').textContent.includes('unknown token')", 10,
                     "the refusal of a wrong token")
        step("a wrong token is refused: %s" % cdp.eval("document.getElementById('toast').textContent"))

        cdp.type_into("#token", secret)
        cdp.click("#token-set")
        stored = cdp.eval("[localStorage.length, sessionStorage.length, document.cookie,"
                          " document.documentElement.outerHTML.includes(%s), location.href.includes(%s)]"
                          % (json.dumps(secret), json.dumps(secret)))
        if stored != [0, 0, "", False, False]:
            raise CDPError("the token left page memory: storage/cookie/DOM/URL = %s" % stored)
        step("token entered; it is in no storage, cookie, DOM or URL")
        cdp.wait_for("!document.querySelector('button.approve[data-id=\"%d\"]').disabled" % pid, 5, "Approve enabled")
        comment = ".proposal[data-id=\"%d\"] input.comment" % pid
        cdp.type_into(comment, "approved from the console")
        # The list is drawn anew every 2 s (with the trial): what was typed must outlive it, with the focus (a CI run
        # approved without the comment: the field was drawn again, empty, between the typing and the click).
        cdp.eval("document.querySelector(%s).oldNode = true" % json.dumps(comment))
        cdp.wait_for("!document.querySelector(%s).oldNode" % json.dumps(comment), 10, "the proposals drawn again")
        kept = cdp.eval("[document.querySelector(%s).value, document.activeElement === document.querySelector(%s)]"
                        % (json.dumps(comment), json.dumps(comment)))
        if kept != ["approved from the console", True]:
            raise CDPError("what was typed did not outlive the list drawn again: [value, focused] = %s" % kept)
        step("the comment typed outlives the list drawn again, focused")
        cdp.click("button.approve[data-id=\"%d\"]" % pid)
        cdp.wait_for("document.getElementById('toast').textContent.includes('approved')", 10, "the approval")
        step("approved with a click")

        # The A/A calibration first (calibrate_pairs = 3): the card says which pair of how many.
        cal = cdp.wait_for("(() => { const h = document.getElementById('trial-head'); return h.dataset.state ==="
                           " 'calibrating' && /calibration pair [1-3] of 3/.test(h.textContent) ? h.textContent : null;"
                           " })()", 30, "the calibration's pair on the trial card")
        cdp.screenshot(os.path.join(args.out, "2-calibration.png"))
        step("calibration shown: %s" % cal)

        cdp.wait_for("document.querySelectorAll('#blocks rect[data-arm=\"B\"]').length >= 1 &&"
                     " document.querySelectorAll('#pairs rect').length >= 1", 60, "A/B blocks and a pair from /v1/events")
        head = text(cdp, "#trial-head")
        if not re.search(r"pair [1-9][0-9]* of ([4-9]|[1-9][0-9]+)\b", head):
            raise CDPError("the trial card during the trial: %r" % head)
        labels = cdp.eval("Array.from(document.querySelectorAll('#pairs text')).map(t => t.textContent).join(' | ')")
        if not re.search(r"pair 1: fell (\d+(\.\d)?%|to 1/\d+)", labels):
            raise CDPError("the pairs are not labelled as changes: %r" % labels)
        cdp.screenshot(os.path.join(args.out, "3-trial.png"))
        step("the trial: %s; pairs: %s" % (head, labels))
        state = cdp.wait_for(
            "(() => { const r = document.querySelector('#history tr[data-id=\"%d\"]'); const s = r && r.dataset.state;"
            " return ['kept', 'reverted', 'aborted', 'failed'].includes(s) ? s : null; })()" % pid, 90,
            "the change's verdict in the history")
        if state != "kept":
            raise CDPError("change %d ended %s; the fake host's squeeze falls tenfold at 600: want kept" % (pid, state))
        cdp.wait_for("document.getElementById('trial-head').dataset.state === 'verdict'", 10, "the verdict shown")
        # The effect as ngxctl says it: the agent's own readable evidence, never a percentage above 1000%.
        ev = agent.get("/v1/changes/%d" % pid)["detail"]
        summary = json.loads(ev[ev.index("{"):])["summary"]
        cdp.wait_for("document.querySelector('#estimate .summary-line') &&"
                     " document.querySelector('#estimate .summary-line').textContent === %s" % json.dumps(summary), 10,
                     "the verdict's summary as the agent wrote it (%s)" % summary)
        card = text(cdp, "#trial-card")
        if re.search(r"\d{4,}(\.\d+)?%", card):
            raise CDPError("a percentage above 1000%% on the trial card: %r" % card)
        step("verdict on the trial card: %s" % summary)

        # The charts span the data there is: the axis starts where the agent's frames start, not an hour ago.
        # (At least 30 s: a new agent's first seconds are not stretched over the width.)
        uptime = agent.get("/v1/status")["uptime_s"]
        title = text(cdp, "#charts-title")
        axis = cdp.eval("document.querySelector('#chart-req svg text:nth-of-type(4)').textContent")
        x0 = cdp.eval("parseFloat(document.querySelector('#chart-req polyline').getAttribute('points'))")
        m = re.match(r"-(\d+) (s|min)$", axis)
        width = int(m.group(1)) * (60 if m.group(2) == "min" else 1) if m else 0
        if not re.match(r"Last \d+ (s|min) \(all the agent has stored\)$", title) or not m or \
                width > max(30, uptime + 60 if m.group(2) == "min" else uptime + 10) or \
                x0 > 400 * (1 - min(1, (uptime - 5) / width)) + 10:
            raise CDPError("the charts do not zoom to the data: title %r, axis from %r, first point at x=%s of 400, "
                           "the agent up %s s" % (title, axis, x0, uptime))
        blind = text(cdp, "#chart-p99 .blind")
        if "cannot see" not in blind:
            raise CDPError("the latency chart does not say that nginx's time is blind here: %r (%s)"
                           % (blind, text(cdp, "#chart-p99")))
        cdp.screenshot(os.path.join(args.out, "4-verdict.png"))
        step("charts: %s, axis from %s, first point at x=%.0f of 400 (the agent up %s s); latency: %s"
             % (title, axis, x0, uptime, blind))

        row = cdp.eval("Array.from(document.querySelectorAll('#knobs tr[data-knob=\"%s\"] td')).map(t => t.textContent)"
                       % knob)
        if row[1:4] != ["ok", "600", "300"]:
            raise CDPError("the knobs table after the verdict: %s" % row)
        step("knobs table after the verdict: %s" % " | ".join(row[:7]))

        # Pause: the confirmation names what happens; the host is paused.
        confirm(cdp, "#pause", "Pause tuning?", ["stops proposing and trying", "Kept changes stay", "ngxctl pause"],
                os.path.join(args.out, "5-confirm-pause.png"))
        toast_after(cdp, "tuning paused")
        agent.wait("paused", lambda: agent.get("/v1/trials/current")["paused"], 5)
        cdp.wait_for("document.getElementById('tuning-state').textContent === 'paused' &&"
                     " !document.getElementById('resume').disabled", 10, "the page paused")
        step("paused by click: the agent says paused")

        # Revert all, cancelled: nothing is sent, nothing changes.
        cdp.click("#revert-all")
        cdp.wait_for("document.getElementById('confirm').open", 5, "the confirmation of revert all")
        lines = text(cdp, "#confirm-text")
        if "%s goes back to 300, its original (it reads 600)" % knob not in lines:
            raise CDPError("revert all does not say what it puts back: %r" % lines)
        cdp.click("#confirm-cancel")
        cdp.wait_for("!document.getElementById('confirm').open", 5, "the confirmation cancelled")
        cdp.pump(1)
        if cdp.requests("/v1/revert") or read_file(args.knob_file) != "600":
            raise CDPError("a cancelled revert all acted: %s, %s reads %s"
                           % (cdp.requests("/v1/revert"), knob, read_file(args.knob_file)))
        step("revert all, cancelled: it listed %s -> 300, sent nothing; %s still reads 600" % (knob, args.knob_file))

        # Revert of the change: the host gets 300 back, the change is reverted, its verdict stays visible.
        confirm(cdp, "button.revert[data-id=\"%d\"]" % pid, "Revert change #%d?" % pid,
                ["%s goes back to 300, the value it had before change #%d" % (knob, pid), "it reads 600 now",
                 "ngxctl revert %d" % pid], os.path.join(args.out, "6-confirm-revert.png"))
        said = toast_after(cdp, "back to 300")
        # "done" when the write was made at once; "pending" when it goes through the writer process (the default),
        # whose answer comes in a later turn of the agent's loop: the state below says it ended.
        if not said.startswith("revert: 1 knob write(s)") or not (said.endswith(": done") or
                                                                said.endswith(": pending: its write is under way")):
            raise CDPError("the revert's answer: %r" % said)
        agent.wait("change %d reverted" % pid, lambda: agent.get("/v1/changes/%d" % pid)["state"] == "reverted", 10)
        if read_file(args.knob_file) != "300":
            raise CDPError("reverted, but %s reads %s" % (args.knob_file, read_file(args.knob_file)))
        cdp.wait_for("document.querySelector('#history tr[data-id=\"%d\"]').dataset.state === 'reverted'" % pid, 10,
                     "the history shows the revert")
        hist = text(cdp, "#history tr[data-id=\"%d\"] td.detail" % pid)
        if not hist.startswith("reverted by change") or summary not in hist:
            raise CDPError("the verdict is gone from the history after the revert: %r" % hist)
        cdp.wait_for("document.getElementById('trial-note').textContent.includes('is reverted (reverted by change')", 10,
                     "the trial card says the change was reverted since")
        if text(cdp, "#estimate .summary-line") != summary or cdp.eval("document.getElementById('trial-head').dataset.state") != "verdict":
            raise CDPError("the verdict left the trial card after the revert: %r" % text(cdp, "#trial-card"))
        cdp.screenshot(os.path.join(args.out, "7-reverted.png"))
        step("reverted by click: %s; %s reads 300; the verdict stays: %s" % (said, args.knob_file, hist[:90]))

        # A conflict: an operator's change (now) is kept, then someone else writes the knob.
        op = agent.post("/v1/proposals", {"knob": knob, "value": "600", "why": "the console test", "now": True})
        agent.wait("change %d kept" % op["id"], lambda: agent.get("/v1/changes/%d" % op["id"])["state"] == "kept", 20)
        with open(args.knob_file, "w") as f:
            f.write("700\n")
        agent.wait("a conflict", lambda: agent.knob(knob)["state"] == "conflict", 10)
        cdp.wait_for("document.querySelector('#knobs tr[data-knob=\"%s\"]').dataset.state === 'conflict'" % knob, 10,
                     "the conflict in the knobs table")
        cause = text(cdp, "#knobs tr[data-knob=\"%s\"] td.why" % knob)
        if cause != "conflict: reads 700; the agent last wrote 600":
            raise CDPError("the conflict's cause: %r" % cause)
        cdp.screenshot(os.path.join(args.out, "8-conflict.png"))
        confirm(cdp, "button.clear-conflict[data-knob=\"%s\"]" % knob, "Clear the conflict on %s?" % knob,
                ["reads 700; the agent last wrote 600", "700 becomes its original: nothing is written",
                 "ngxctl clear-conflict %s" % knob])
        toast_after(cdp, "%s: conflict cleared" % knob)
        k = agent.wait("the conflict cleared", lambda: (lambda k: k if k["state"] == "ok" else None)(agent.knob(knob)), 10)
        if k["original"] != "700" or read_file(args.knob_file) != "700":
            raise CDPError("after clear-conflict: %s, %s reads %s" % (k, args.knob_file, read_file(args.knob_file)))
        cdp.wait_for("document.querySelector('#knobs tr[data-knob=\"%s\"]').dataset.state === 'ok'" % knob, 10,
                     "the knobs table without the conflict")
        step("conflict shown with its cause (%s), cleared by click: original 700, nothing written" % cause)

        # Resume; then revert all has nothing left to put back.
        confirm(cdp, "#resume", "Resume tuning?", ["propose and try changes again", "ngxctl resume"])
        toast_after(cdp, "tuning resumed")
        agent.wait("resumed", lambda: not agent.get("/v1/trials/current")["paused"], 5)
        step("resumed by click: the agent says not paused")
        confirm(cdp, "#revert-all", "Revert every change?", ["there is nothing to put back", "ngxctl revert --all"])
        toast_after(cdp, "revert: nothing to put back")
        if read_file(args.knob_file) != "700":
            raise CDPError("revert all wrote over the operator's value: %s" % read_file(args.knob_file))
        cdp.screenshot(os.path.join(args.out, "9-after.png"))
        step("revert all by click: nothing to put back; %s still reads 700" % args.knob_file)

        # The agent runs throughout, so the page's one event stream is never cut and never reconnects: a second
        # GET /v1/events (a reconnect), a failed one (ERR_INCOMPLETE_CHUNKED_ENCODING: cut mid-stream) or one that
        # ended fails the test. No network error of any request is expected either ("Failed to load resource:
        # net::ERR_..." fails through problems()).
        streams = cdp.requests("/v1/events")
        if len(streams) != 1 or streams[0]["status"] != 200 or streams[0]["failed"] or streams[0]["finished"]:
            raise CDPError("the page's event stream did not stay open: %s" % json.dumps(streams))
        step("one event stream, open from the page's load to the end")
        problems = cdp.problems()
        if problems:
            raise CDPError("the page reported errors: %s" % problems)
        step("no exception, network error, Content-Security-Policy violation or other console error")

        # Opened afresh after all that: the token is forgotten, and the last trial's verdict is still on the card.
        cdp.events = []
        cdp.navigate(args.url)
        cdp.wait_for("document.getElementById('trial-head').dataset.state === 'verdict' &&"
                     " document.querySelector('#estimate .summary-line') !== null", 15, "the last verdict after a reload")
        head, line = text(cdp, "#trial-head"), text(cdp, "#estimate .summary-line")
        if not head.startswith("the last trial keep") or line != summary:
            raise CDPError("the trial card of a page opened after the trial: %r, %r" % (head, line))
        if not cdp.eval("document.getElementById('pause').disabled && document.getElementById('revert-all').disabled"):
            raise CDPError("a reloaded page can act: the token outlived the page")
        if cdp.problems():
            raise CDPError("the reloaded page reported errors: %s" % cdp.problems())
        cdp.screenshot(os.path.join(args.out, "10-reloaded.png"))
        step("reloaded: the token is gone (buttons disabled); the trial card shows the last verdict: %s" % head)
        print(json.dumps({"state": state, "operator_change": op["id"]}))
        return 0
    except (CDPError, OSError, ValueError, KeyError, StopIteration, websocket.WebSocketException) as e:
        print("cdp: FAILED: %s" % e, flush=True)
        if cdp:
            try:
                cdp.screenshot(os.path.join(args.out, "failure.png"))
                print("cdp: page problems: %s" % cdp.problems())
                print("cdp: the page's event streams: %s" % json.dumps(cdp.requests("/v1/events")))
            except Exception:  # the browser may be gone; the first error is the one that matters
                pass
        return 1
    finally:
        if cdp:
            cdp.close()
        if proc:
            stop_chromium(proc)
        shutil.rmtree(profile, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("console")
    c.add_argument("--chromium", default="chromium")
    c.add_argument("--url", required=True)
    c.add_argument("--token", required=True, help="NAME:SECRET")
    c.add_argument("--proposal", type=int, required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--knob-file", required=True, help="net.core.netdev_budget of the fake host")
    c.add_argument("--pool", help="POOL:HOST:PEER: the agent is HOST in POOL, where PEER published a kept change")
    args = ap.parse_args()
    # SIGTERM and SIGHUP end the run through the cleanup (the browser stopped, the profile removed).
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
    return console_scenario(args)


if __name__ == "__main__":
    sys.exit(main())
