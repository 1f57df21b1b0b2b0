#!/usr/bin/env python3
"""dashboard_cdp.py: drives headless Chromium through the DevTools protocol for
test_dashboard.sh (docs/observability.md, "Dashboard").

  dashboard_cdp.py --url URL --node NODE --nodes N --resource FULLNAME
                   --screenshot PNG [--screenshot PNG...] --profile DIR
                   --set VALUE CMD... [--set VALUE CMD...]

Starts `chromium --headless` with a throwaway profile and DevTools on 127.0.0.1 (a
port it picks, read back from the profile's DevToolsActivePort), opens URL (the
dashboard with ?token=...), waits until the overview lists N alive nodes including
NODE, then for each --set runs CMD (the escher CLI) and measures, from the moment CMD
returned, how long the page takes to show VALUE as FULLNAME's capacity on NODE, both in
the node view and in the ephemeral-resource view: more than one second fails. At the
end it checks the row's history plot and the event list, saves screenshots, and kills
Chromium whatever happened. Exit 0 when every check passed; one line per failure.
"""
import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import websocket  # Debian: python3-websocket

DEADLINE_S = 1.0   # the page must show a change this soon after the CLI returned


def fail(msg):
    print("dashboard_cdp: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


class Browser:
    def __init__(self, profile):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            fail("no chromium (deploy/install-deps.sh installs Debian's)")
        os.makedirs(profile, exist_ok=True)
        args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-dev-shm-usage",
                "--user-data-dir=" + profile, "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0", "--window-size=1280,1600", "about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(profile, "chromium.log"), "w"),
                                     start_new_session=True)
        # The test's trap kills this process group if we cannot (SIGKILL, a timeout).
        with open(os.path.join(profile, "chromium.pid"), "w") as f:
            f.write(f"{self.proc.pid}\n")
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if self.proc.poll() is not None:
                fail("chromium exited: see " + os.path.join(profile, "chromium.log"))
            if time.monotonic() > deadline:
                fail("chromium did not open DevTools in 30 s")
            time.sleep(0.05)
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30,
                                              suppress_origin=True)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    fail(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            return None
        return r.get("result", {}).get("value")

    def wait(self, expr, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            v = self.eval(expr)
            if v:
                return v
            if time.monotonic() > deadline:
                fail(f"{what}: not true after {timeout} s: {expr}")
            time.sleep(0.02)

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--resource", required=True)
    ap.add_argument("--screenshot", action="append", default=[])
    ap.add_argument("--profile", required=True)
    # A job whose view (#job/ID) must list a task of that name.
    ap.add_argument("--job")
    ap.add_argument("--task-name")
    # ... and whose task TASK on NODE shows an output line containing LOG.
    ap.add_argument("--task")
    ap.add_argument("--task-node")
    ap.add_argument("--log")
    argv = sys.argv[1:]
    cut = argv.index("--set") if "--set" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    # The --set VALUE CMD... groups, in order (commands may have options of their own).
    sets, cur = [], None
    for w in argv[cut:]:
        if w == "--set":
            cur = []
            sets.append(cur)
        elif cur is None:
            fail(f"unexpected argument {w}")
        else:
            cur.append(w)
    if not sets or any(len(s) < 2 for s in sets):
        fail("give at least one --set VALUE CMD...")
    a.sets = sets
    return a


def shows(key_attr, key, value):
    """JS: true when the row data-<key_attr>=key shows value in its .total cell."""
    sel = json.dumps(f'[data-{key_attr}="{key}"] .total')
    return f"(() => {{ const c = document.querySelector({sel}); " \
           f"return !!c && c.textContent === {json.dumps(value)}; }})()"


def main():
    # SIGTERM (ctest's timeout, the shell's trap) ends us through the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    a = parse()
    b = Browser(a.profile)
    try:
        b.call("Page.enable")
        b.call("Runtime.enable")
        b.call("Page.navigate", url=a.url)
        b.wait("document.querySelector('#live') && "
               "document.querySelector('#live').textContent === 'live'", 15, "stream live")
        b.wait(f"document.querySelector('#n-alive').textContent === '{a.nodes}' && "
               f"!!document.querySelector('[data-node=\"{a.node}\"]')", 15, "overview nodes")
        if b.eval("location.search") != "":
            fail("the token stayed in the address bar: " + str(b.eval("location.href")))
        print(f"overview: {a.nodes} node(s), {a.node} listed")
        key = f"{a.node}|{a.resource}"
        for s in a.sets:
            value, cmd = s[0], s[1:]
            r = subprocess.run(cmd, capture_output=True, text=True)
            t0 = time.monotonic()
            if r.returncode != 0:
                fail(f"{' '.join(cmd)}: {r.stderr.strip()}")
            b.wait(shows("eph", key, value) + " && " + shows("res", key, value), DEADLINE_S,
                   f"{a.resource} = {value} within {DEADLINE_S} s of the CLI")
            dt = time.monotonic() - t0
            print(f"{a.resource} = {value}: shown {dt * 1000:.0f} ms after the CLI returned")
        pts = b.eval(f"document.querySelector('[data-eph=\"{key}\"] svg.spark polyline')"
                     ".getAttribute('points').split(' ').length")
        if not pts or pts < 2 * len(a.sets):
            fail(f"history plot has {pts} points for {len(a.sets)} changes")
        n_ev = b.eval("[...document.querySelectorAll('#event-list li')]"
                      f".filter(li => li.textContent.includes('{a.resource}')).length")
        if not n_ev or n_ev < len(a.sets):
            fail(f"event list shows {n_ev} changes of {a.resource}")
        print(f"history plot: {pts} points; events listed: {n_ev}")
        if a.job:
            b.eval(f"location.hash = '#job/{a.job}'")
            b.wait("[...document.querySelectorAll('#job-tasks tbody tr')].some(tr => "
                   f"tr.cells[1].textContent === {json.dumps(a.task_name)}) && "
                   "!document.querySelector('#job-view').classList.contains('hidden')",
                   15, f"job {a.job}'s view lists its task {a.task_name}")
            print(f"job view: {a.job} lists {a.task_name}")
            b.eval(f"location.hash = '#job/{a.job}/logs/{a.task}/{a.task_node}'")
            b.wait(f"document.querySelector('#task-log').textContent.includes({json.dumps(a.log)})"
                   " && !document.querySelector('#task-log-box').classList.contains('hidden')",
                   15, f"task {a.task}'s output shows {a.log}")
            print(f"task output: shows {a.log}")
        for p in a.screenshot:
            b.screenshot(p)
            print("screenshot: " + p)
    finally:
        b.close()


if __name__ == "__main__":
    main()
