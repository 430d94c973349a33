"""Watch a fleet run's live page (`iofleet run --hosts … --metrics-listen ADDR --ui`) in
headless Chromium through Selenium until a host shows as lost (crates/cli/tests/
fleet_ssh.rs freezes that host's agent, then starts this script).

Opens the page, waits until the strip of --host carries the lost mark, checks that no
other host is marked lost, then takes screenshots at 1400 and 800 px (no sideways
scrolling) into --out. No console message and no request to any host but the run's
listener. Prints one JSON line of what it saw; exits 1 with the reason on the first
failed check.
"""

import argparse
import json
import os
import sys
import time

from selenium.webdriver.common.by import By

from serve_browser import Failed, Session, browser, check


def watch(s, host, timeout, ready=None):
    d = s.d
    d.get(s.base + "/")
    s.loaded()
    check(d.title == "iofleet live", f"live page title {d.title!r}")
    if ready:
        # The test freezes the host only once the page is open: Chromium's start-up on
        # a loaded machine does not eat the run's time.
        with open(ready + ".tmp", "w") as f:
            f.write("open")
        os.rename(ready + ".tmp", ready)
    opened = time.time()
    s.wait("return Array.prototype.some.call(document.querySelectorAll('#hosts .host'),"
           f" function (h) {{ return h.getAttribute('data-host') === {json.dumps(host)}"
           " && h.getAttribute('data-state') === 'lost'; });",
           f"{host} marked lost", timeout=timeout)
    waited = time.time() - opened
    # Read in one script: the strips are redrawn at every interval, so elements found
    # one call earlier may be gone by the next.
    strips, count = d.execute_script(
        "return [Array.prototype.map.call(document.querySelectorAll('#hosts .host'),"
        " function (h) { return {host: h.getAttribute('data-host'),"
        " state: h.getAttribute('data-state'), text: h.innerText}; }),"
        " document.getElementById('host-count').textContent];")
    lost = [x["host"] for x in strips if x["state"] == "lost"]
    check(lost == [host], f"only {host} is lost: {strips}")
    mark = [x["text"] for x in strips if x["host"] == host][0]
    check("lost at" in mark, f"the strip says when {host} was lost: {mark!r}")
    check("1 lost" in count, f"the heading counts the lost host: {count!r}")
    lost_figure = d.find_element(By.ID, "lost").text
    s.drain("live page")
    s.widths("live-lost")
    return {"lost": lost, "strips": strips, "count": count, "lost_figure": lost_figure,
            "waited_s": waited, "requests": len(s.requests), "pages": s.pages}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--base", required=True, help="the run's listener, http://HOST:PORT")
    p.add_argument("--out", required=True, help="directory for the screenshots")
    p.add_argument("--host", required=True, help="the host that must show as lost")
    p.add_argument("--timeout", type=float, default=40.0, help="seconds to wait for the mark")
    p.add_argument("--ready", help="a file to write once the page is open")
    p.add_argument("--chromium", default="/usr/bin/chromium")
    p.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    a = p.parse_args()
    d = browser(a.chromium, a.chromedriver)
    try:
        print(json.dumps(watch(Session(d, a.base, a.out), a.host, a.timeout, a.ready)))
    except Failed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        d.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
