"""Drive `iofleet serve` in headless Chromium through Selenium (crates/cli/tests/ui.rs
starts the server on a store of short null-engine runs and runs this script).

Loads the runs list, filters it with its form, opens a run, ticks two runs and compares
them, and with --also opens the run again through another name of the server; on every
page: no console message, every chart rendered (the report's own
self-check), and, at 1400 and 800 px wide, no sideways scrolling (a screenshot of each is
written to --out). Every request the browser made (Chrome's performance log) must have
gone to the server itself. Prints one JSON line of what it saw; exits 1 with the reason
on the first failed check.
"""

import argparse
import json
import sys
import time
from urllib.parse import urlparse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

WIDTHS = (1400, 800)


class Failed(Exception):
    pass


def check(ok, what):
    if not ok:
        raise Failed(what)


def browser(chromium, chromedriver):
    o = webdriver.ChromeOptions()
    o.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--disable-quic", "--hide-scrollbars",
              "--window-size=1400,1000"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(chromedriver), options=o)


class Session:
    def __init__(self, driver, base, out):
        self.d = driver
        self.base = base.rstrip("/")
        self.host = urlparse(base).netloc
        self.out = out
        self.requests = []
        self.pages = []

    def drain(self, where):
        """Console messages (none allowed) and requests made since the last call."""
        console = self.d.get_log("browser")
        check(not console, f"{where}: console messages: {console}")
        for entry in self.d.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            if msg.get("method") == "Network.requestWillBeSent":
                url = msg["params"]["request"]["url"]
                self.requests.append(url)
                u = urlparse(url)
                local = u.scheme in ("data", "about") or (u.scheme == "http" and u.netloc == self.host)
                check(local, f"{where}: a request left the server: {url}")

    def wait(self, script, what, timeout=60):
        t0 = time.time()
        while time.time() - t0 < timeout:
            v = self.d.execute_script(script)
            if v:
                return v
            time.sleep(0.1)
        raise Failed(f"timed out waiting for {what}")

    def loaded(self):
        self.wait("return document.readyState === 'complete'", "the page to load")

    def charts_rendered(self, where):
        """The report's self-check: every figure rendered with marks."""
        self.wait("return document.getElementById('chart-check') &&"
                  " document.getElementById('chart-check').hasAttribute('data-rendered')",
                  f"{where}'s chart check")
        got = self.d.execute_script(
            "var c = document.getElementById('chart-check');"
            "return [c.getAttribute('data-rendered'), c.getAttribute('data-expected')];")
        check(got[0] == got[1] and int(got[1]) > 0, f"{where}: charts rendered {got[0]} of {got[1]}")
        return int(got[1])

    def widths(self, name):
        """Screenshots at each width; the page must not scroll sideways."""
        for w in WIDTHS:
            self.d.set_window_size(w, 1000)
            self.wait(f"return Math.abs(window.outerWidth - {w}) <= 2", f"window width {w}")
            time.sleep(0.2)
            sw, iw = self.d.execute_script(
                "return [document.documentElement.scrollWidth, window.innerWidth];")
            check(sw <= iw, f"{name} at {w} px: page is {sw} px wide in a {iw} px window")
            path = f"{self.out}/{name}-{w}.png"
            check(self.d.save_screenshot(path), f"{name}: screenshot {path}")
            self.pages.append({"page": name, "width": w, "inner": iw, "scroll": sw, "png": path})
        self.d.set_window_size(WIDTHS[0], 1000)
        self.drain(name)


def run(s, a):
    d = s.d
    # The runs list.
    d.get(s.base + "/")
    s.loaded()
    check(d.title == "iofleet runs", f"runs list title: {d.title!r}")
    listed = [r.get_attribute("data-run") for r in d.find_elements(By.CSS_SELECTOR, "tr[data-run]")]
    check(a.run_a in listed and a.run_b in listed, f"runs {a.run_a}, {a.run_b} listed: {listed}")
    curves = [e.get_attribute("href") for e in d.find_elements(By.CSS_SELECTOR, "#curves a")]
    s.drain("runs list")
    s.widths("runs")

    # Its filter form: a name filter leaves that run alone.
    box = d.find_element(By.NAME, "name")
    box.clear()
    box.send_keys(a.name_a)
    d.find_element(By.ID, "apply").click()
    s.wait("return location.search.indexOf('name=') >= 0", "the filtered list")
    s.loaded()
    shown = [r.get_attribute("data-run") for r in d.find_elements(By.CSS_SELECTOR, "tr[data-run]")]
    check(shown == [a.run_a], f"filtered by name {a.name_a!r}: {shown}")
    s.drain("filtered list")

    # A run's page, by its link.
    d.find_element(By.CSS_SELECTOR, f"a[href='/run/{a.run_a}']").click()
    s.wait(f"return location.pathname === '/run/{a.run_a}'", "the run page")
    s.loaded()
    check(a.run_a in d.title, f"run page title {d.title!r}")
    run_charts = s.charts_rendered("run page")
    s.drain("run page")
    s.widths("run")

    # Tick two runs on the list and compare them.
    d.get(s.base + "/")
    s.loaded()
    for rid in (a.run_a, a.run_b):
        d.find_element(By.CSS_SELECTOR, f"input[type=checkbox][value='{rid}']").click()
    d.find_element(By.ID, "compare-button").click()
    s.wait("return location.pathname === '/compare'", "the comparison")
    s.loaded()
    query = sorted(urlparse(d.current_url).query.split("&"))
    check(query == sorted([f"run={a.run_a}", f"run={a.run_b}"]), f"comparison URL {d.current_url}")
    header = d.find_element(By.CSS_SELECTOR, "header p").text
    check(f"2 runs · baseline {a.run_a}" in header, f"the older run is the baseline: {header!r}")
    check(d.find_elements(By.ID, "compare-bars"), "the comparison has its bar chart")
    compare_charts = s.charts_rendered("comparison")
    s.drain("comparison")
    s.widths("compare")

    # The sweep's curve, when the store has one.
    curve_charts = 0
    if curves:
        d.get(curves[0])
        s.loaded()
        check(d.find_elements(By.ID, "load-curve"), "the curve page has the load curve")
        curve_charts = s.charts_rendered("curve")
        s.drain("curve")
        s.widths("curve")

    # The same server by another name (localhost rather than 127.0.0.1): the pages
    # load and their script runs there too.
    also_charts = 0
    if a.also:
        s.host = urlparse(a.also).netloc
        d.get(a.also.rstrip("/") + f"/run/{a.run_a}")
        s.loaded()
        also_charts = s.charts_rendered(f"run page at {a.also}")
        s.drain(f"run page at {a.also}")

    return {
        "listed": listed,
        "curves": curves,
        "charts": {"run": run_charts, "compare": compare_charts, "curve": curve_charts,
                   "also": also_charts},
        "requests": len(s.requests),
        "hosts": sorted({urlparse(u).netloc for u in s.requests}),
        "pages": s.pages,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--base", required=True, help="the server, http://HOST:PORT")
    p.add_argument("--out", required=True, help="directory for the screenshots")
    p.add_argument("--run-a", required=True)
    p.add_argument("--name-a", required=True)
    p.add_argument("--run-b", required=True)
    p.add_argument("--also", help="the same server by another name, http://HOST:PORT")
    p.add_argument("--chromium", default="/usr/bin/chromium")
    p.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    a = p.parse_args()
    d = browser(a.chromium, a.chromedriver)
    try:
        s = Session(d, a.base, a.out)
        print(json.dumps(run(s, a)))
    except Failed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        d.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
