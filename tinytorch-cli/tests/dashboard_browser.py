#!/usr/bin/env python3
"""Browser test of `tinytorch dashboard` in Debian's headless Chromium, driven through
ChromeDriver's W3C WebDriver protocol (standard library only).

It starts a short training run (Fashion-MNIST, a slice of it, slow enough that epochs arrive
while the page is open) and the dashboard over its log directory, loads the page, checks
that the loss chart holds every logged point (the series the page reports and the polylines
in its SVG against the run's steps.jsonl and metrics.jsonl), waits for a new epoch to appear
without a reload, checks the model, histogram and evaluation tabs (feature maps included),
and saves screenshots.

Usage: dashboard_browser.py TINYTORCH_BINARY OUT_DIR
Exits 0 on success; skips (exit 0, saying so) when chromium or chromedriver is missing
unless TINYTORCH_REQUIRE_BROWSER=1, as CI sets.
"""
import base64
import gzip
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

BIN, OUT = sys.argv[1], sys.argv[2]
FASHION = "/usr/share/datasets/fashion-mnist"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, timeout, every=0.25):
    deadline = time.time() + timeout
    while True:
        try:
            value = check()
            if value:
                return value
        except Exception as e:  # not ready yet
            last = e
        else:
            last = None
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}" + (f": {last}" if last else ""))
        time.sleep(every)


def slice_data(dst, train_images):
    """The first `train_images` training images and all test images, as IDX files."""
    os.makedirs(dst, exist_ok=True)
    for kind, item in (("images-idx3", 28 * 28), ("labels-idx1", 1)):
        raw = gzip.open(f"{FASHION}/train-{kind}-ubyte.gz").read()
        header = 16 if kind.startswith("images") else 8
        head = bytearray(raw[:header])
        struct.pack_into(">I", head, 4, train_images)
        with gzip.open(f"{dst}/train-{kind}-ubyte.gz", "wb") as f:
            f.write(bytes(head) + raw[header:header + train_images * item])
        shutil.copy(f"{FASHION}/t10k-{kind}-ubyte.gz", dst)


class Browser:
    """The few WebDriver commands this test needs."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": shutil.which("chromium"),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-zygote", "--window-size=1400,1700", "--hide-scrollbars"]}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.load(r)["value"]

    def s(self, method, path, body=None):
        return self.call(method, f"/session/{self.session}{path}", body)

    def go(self, url):
        self.s("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.s("GET", "/screenshot")))

    def quit(self):
        try:
            self.call("DELETE", f"/session/{self.session}")
        except Exception:
            pass


def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.endswith("\n") and l.strip()]


def series_of(browser, metric):
    raw = browser.js(f"return document.querySelector('.chart[data-metric={metric}]').dataset.series || null")
    return json.loads(raw) if raw else None


def polyline_sizes(browser, metric):
    return browser.js(
        f"return [...document.querySelectorAll('.chart[data-metric={metric}] svg polyline')]"
        ".map(p => p.getAttribute('points').trim().split(/\\s+/).length)")


def main():
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        if os.environ.get("TINYTORCH_REQUIRE_BROWSER") == "1":
            sys.exit("chromium and chromedriver are required (apt-get install chromium chromium-driver)")
        print("skipped: chromium or chromedriver not installed")
        return
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp(prefix="tt_dash_")
    procs = []
    browser = None
    try:
        data = os.path.join(work, "data")
        slice_data(data, 1600)
        logdir = os.path.join(work, "runs")
        run_dir = os.path.join(logdir, "cnn")
        # 25 steps an epoch, 3 epochs: epochs arrive every few seconds on two cores.
        train = subprocess.Popen(
            [BIN, "train", "--data", data, "--model", "seed-cnn", "--epochs", "3", "--lr", "0.1",
             "--out", run_dir, "--log-every", "5", "--log-histograms", "5", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(train)
        # The dashboard starts once the run directory exists (it lists runs at every request).
        wait_for("the run's first step line", lambda: os.path.exists(os.path.join(run_dir, "steps.jsonl")), 120)
        port = free_port()
        dash = subprocess.Popen([BIN, "dashboard", "--logdir", logdir, "--port", str(port)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(dash)
        url = f"http://127.0.0.1:{port}/"
        wait_for("the dashboard", lambda: urllib.request.urlopen(url + "api/runs", timeout=2).status == 200, 30)

        dport = free_port()
        procs.append(subprocess.Popen([driver, f"--port={dport}"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        wait_for("chromedriver", lambda: urllib.request.urlopen(f"http://127.0.0.1:{dport}/status", timeout=2), 30)
        browser = Browser(dport)
        browser.go(url)
        wait_for("the page", lambda: browser.js("return document.body.dataset.ready === '1'"), 60)

        # Every logged point is in the loss chart: the page's series against the files, and
        # a polyline of that many points in the SVG.
        def loss_matches_files():
            series = series_of(browser, "loss")
            steps = lines(os.path.join(run_dir, "steps.jsonl"))
            train_pts = next(s["points"] for s in series if s["label"] == "train")
            return train_pts == len(steps) and train_pts in polyline_sizes(browser, "loss") and train_pts
        wait_for("the loss chart to show steps.jsonl", loss_matches_files, 60)
        browser.screenshot(os.path.join(OUT, "dashboard_first.png"))

        # A new epoch appears without a reload: the test-loss series grows while the page stays.
        browser.js("window.__loaded_once = performance.timeOrigin; return 1")
        epochs_now = lambda: next((s["points"] for s in series_of(browser, "loss") if s["label"] == "test"), 0)
        seen = epochs_now()
        grown = wait_for("a new epoch on the page", lambda: epochs_now() > seen and epochs_now(), 180)
        assert browser.js("return window.__loaded_once === performance.timeOrigin"), "the page reloaded"
        epochs_logged = len(lines(os.path.join(run_dir, "metrics.jsonl")))
        assert grown <= epochs_logged, (grown, epochs_logged)
        assert grown in polyline_sizes(browser, "loss"), (grown, polyline_sizes(browser, "loss"))
        print(f"epochs on the page went from {seen} to {grown} without a reload")

        out, _ = train.communicate(timeout=300)
        assert train.returncode == 0, out
        final = json.loads(out.strip().splitlines()[-1])
        # Once the run is done, the page catches up with every epoch.
        wait_for("all 3 epochs on the page", lambda: epochs_now() == 3, 60)
        browser.screenshot(os.path.join(OUT, "dashboard_done.png"))

        # The other tabs: model table, histograms, evaluation with feature maps.
        browser.js("document.querySelector('#tabs button[data-tab=model]').click(); return 1")
        wait_for("the model table", lambda: browser.js("return document.querySelectorAll('#tab-model tbody tr').length") > 3, 30)
        params = browser.js("return document.querySelector('#tab-model p').textContent")
        assert "parameters" in params and "FLOPs" in params, params
        browser.js("document.querySelector('#tabs button[data-tab=histograms]').click(); return 1")
        wait_for("histograms", lambda: browser.js("return document.querySelectorAll('#tab-histograms svg rect').length") > 20, 30)
        browser.screenshot(os.path.join(OUT, "dashboard_histograms.png"))
        browser.js("document.querySelector('#tabs button[data-tab=eval]').click(); return 1")
        wait_for("feature maps", lambda: browser.js(
            "return [...document.querySelectorAll('#maps img')].filter(i => i.complete && i.naturalWidth > 0).length") >= 2, 60)
        mistakes = browser.js("return document.querySelectorAll('#tab-eval .thumbs .thumb img').length")
        assert mistakes > 16, mistakes
        browser.js("document.querySelector('#tabs').scrollIntoView(); return 1")
        browser.screenshot(os.path.join(OUT, "dashboard_eval.png"))
        browser.js("document.querySelector('#gallery').scrollIntoView(); return 1")
        browser.screenshot(os.path.join(OUT, "dashboard_feature_maps.png"))
        print(f"dashboard browser test passed: test accuracy {final['test_acc']:.3f}, screenshots in {OUT}")
    finally:
        if browser:
            browser.quit()
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
