#!/usr/bin/python3
"""A small Chrome DevTools protocol client, and the console's end-to-end scenario driven through it.

    cdp.py console --chromium PATH --url URL --token NAME:SECRET --proposal ID --out DIR

starts headless Chromium, loads the console at URL, and acts as an operator would: sees proposal ID, tries to
approve it with a wrong token (refused), enters the right token, approves it with a mouse click, watches the trial's
A/B blocks arrive over /v1/events, and waits for the change to appear in the history with its verdict. Screenshots
go to DIR. Exits 0 when every step held, 1 with a message when one did not. Needs python3-websocket (Debian).

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

    def screenshot(self, path):
        r = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
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


def console_scenario(args):
    os.makedirs(args.out, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="ngxat-chromium.")
    proc = None
    cdp = None
    pid = args.proposal
    secret = args.token.split(":", 1)[1]
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
        cdp.screenshot(os.path.join(args.out, "1-proposal.png"))
        if not cdp.eval("document.querySelector('button.approve[data-id=\"%d\"]').disabled" % pid):
            raise CDPError("Approve is enabled before a token was given")
        why = cdp.eval("document.querySelector('.proposal[data-id=\"%d\"] .why').textContent" % pid)
        if not why:
            raise CDPError("the proposal shows no evidence")
        step("proposal %d shown with its evidence (%s...), Approve disabled without a token" % (pid, why[:60]))

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
        cdp.type_into(".proposal[data-id=\"%d\"] input.comment" % pid, "approved from the console")
        cdp.click("button.approve[data-id=\"%d\"]" % pid)
        cdp.wait_for("document.getElementById('toast').textContent.includes('approved')", 10, "the approval")
        step("approved with a click")

        cdp.wait_for("document.querySelectorAll('#blocks rect').length >= 2", 40, "A/B blocks drawn from /v1/events")
        cdp.screenshot(os.path.join(args.out, "2-trial.png"))
        step("the trial's blocks arrive: %s" % cdp.eval(
            "Array.from(document.querySelectorAll('#blocks rect')).map(r => r.dataset.arm).join('')"))
        cdp.wait_for("document.querySelectorAll('#pairs rect').length >= 1", 40, "a completed pair")
        state = cdp.wait_for(
            "(() => { const r = document.querySelector('#history tr[data-id=\"%d\"]'); const s = r && r.dataset.state;"
            " return ['kept', 'reverted', 'aborted', 'failed'].includes(s) ? s : null; })()" % pid, 90,
            "the change's verdict in the history")
        cdp.wait_for("document.getElementById('trial-head').dataset.state === 'verdict'", 10, "the verdict shown")
        cdp.screenshot(os.path.join(args.out, "3-history.png"))
        step("change %d is in the history: %s; estimate: %s" % (pid, state, cdp.eval(
            "document.getElementById('estimate').textContent")))
        # The agent runs throughout, so the page's one event stream is never cut and never reconnects: a second
        # GET /v1/events (a reconnect), a failed one (ERR_INCOMPLETE_CHUNKED_ENCODING: cut mid-stream) or one that
        # ended fails the test. No network error of any request is expected either ("Failed to load resource:
        # net::ERR_..." fails through problems()).
        streams = cdp.requests("/v1/events")
        if len(streams) != 1 or streams[0]["status"] != 200 or streams[0]["failed"] or streams[0]["finished"]:
            raise CDPError("the page's event stream did not stay open: %s" % json.dumps(streams))
        step("one event stream, open from the page's load to the verdict")
        problems = cdp.problems()
        if problems:
            raise CDPError("the page reported errors: %s" % problems)
        step("no exception, network error, Content-Security-Policy violation or other console error")
        print(json.dumps({"state": state}))
        return 0
    except (CDPError, OSError, websocket.WebSocketException) as e:
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
    args = ap.parse_args()
    # SIGTERM and SIGHUP end the run through the cleanup (the browser stopped, the profile removed).
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
    return console_scenario(args)


if __name__ == "__main__":
    sys.exit(main())
