"""Follow a running `iofleet run --metrics-listen ADDR --ui` in headless Chromium through
Selenium (crates/cli/tests/ui.rs starts the run and this script once the run is under
way).

Opens the live page, sees the IOPS figure and the interval count change as intervals
arrive, a strip per host, and the phase reach `done`; with --objectives and --groups,
the baseline's dashed curves on the IOPS and latency charts, that many objective lines
on the latency chart, and a strip per named group; with --steps (a command of rounds or
steps), the step line under the phase as it changes and the boundaries drawn on the
IOPS chart; then, at 1400 and 800 px wide, no
sideways scrolling (a screenshot of each is written to --out). No console message and
no request to any host but the run's listener. Prints one JSON line of what it saw;
exits 1 with the reason on the first failed check.
"""

import argparse
import os
import json
import sys
import time

from selenium.webdriver.common.by import By

from serve_browser import Failed, Session, browser, check


def follow(s, objectives, groups, steps=False, ready=None):
    d = s.d
    d.get(s.base + "/")
    s.loaded()
    check(d.title == "iofleet live", f"live page title {d.title!r}")
    first = int(s.wait("var v = document.getElementById('intervals').getAttribute('data-value');"
                       " return Number(v) > 0 ? v : null;", "the first intervals"))
    if ready:
        # The test ends the run only once the page is open and has its first intervals:
        # no race between starting Chromium and the run's clock.
        with open(ready + ".tmp", "w") as f:
            f.write(str(first))
        os.rename(ready + ".tmp", ready)
    seen_iops = set()
    counts = set()
    phases = []
    step_texts = []
    t0 = time.time()
    while time.time() - t0 < 120:
        phase, iops, count, step = d.execute_script(
            "return [document.body.getAttribute('data-phase'),"
            " document.getElementById('iops').getAttribute('data-value'),"
            " Number(document.getElementById('intervals').getAttribute('data-value')),"
            " document.getElementById('step').textContent];")
        if not phases or phases[-1] != phase:
            phases.append(phase)
        if step and (not step_texts or step_texts[-1] != step):
            step_texts.append(step)
        if iops:
            seen_iops.add(iops)
        counts.add(count)
        if phase == "done":
            break
        time.sleep(0.1)
    check(phases[-1] == "done", f"the phase reached done: {phases}")
    check(len(counts) >= 3, f"the interval count moved while the page was open: {sorted(counts)}")
    check(len(seen_iops) >= 2, f"the IOPS figure updated: {sorted(seen_iops)}")
    hosts = [h.get_attribute("data-host") for h in d.find_elements(By.CSS_SELECTOR, "#hosts .host")]
    check(hosts, "a strip per host")
    host_iops = [float(h.get_attribute("data-iops")) for h in d.find_elements(By.CSS_SELECTOR, "#hosts .host")]
    check(all(x > 0 for x in host_iops), f"every host did I/O: {host_iops}")
    polylines = d.execute_script(
        "return ['chart-iops', 'chart-mbps', 'chart-lat'].map(function (id) {"
        " return document.getElementById(id).querySelectorAll('polyline').length; });")
    check(all(n > 0 for n in polylines), f"every chart has lines: {polylines}")
    baseline_lines = d.execute_script(
        "return ['chart-iops', 'chart-lat'].map(function (id) {"
        " return document.getElementById(id).querySelectorAll('polyline.baseline').length; });")
    objective_lines = d.execute_script(
        "return document.querySelectorAll('#chart-lat line.objective').length;")
    group_names = [g.get_attribute("data-group") for g in d.find_elements(By.CSS_SELECTOR, "#groups .host")]
    step_marks = d.execute_script(
        "return document.querySelectorAll('#chart-iops line.step-mark').length;")
    if steps:
        check(len(step_texts) >= 2, f"the step line changed while the page was open: {step_texts}")
        check(d.find_element(By.ID, "step").is_displayed(), "the step line shows")
    else:
        check(not step_texts and step_marks == 0, f"no step line or boundary in a run of one: {step_texts}")
    if objectives is not None:
        check(objective_lines == objectives, f"{objectives} objective line(s): {objective_lines}")
        check(baseline_lines == [1, 1], f"the baseline's IOPS and p99 curves: {baseline_lines}")
        check(d.find_element(By.ID, "baseline-note").is_displayed(), "the baseline is named")
        check(d.find_element(By.ID, "objectives-note").is_displayed(), "the objectives are named")
    if groups:
        check(group_names == groups, f"a strip per group {groups}: {group_names}")
        check(d.find_element(By.ID, "groups").is_displayed(), "the group strips show")
    final = d.execute_script(
        "return [Number(document.getElementById('intervals').getAttribute('data-value')),"
        " document.getElementById('clock').textContent, document.getElementById('conn').textContent];")
    s.drain("live page")
    s.widths("live")
    return {
        "first_count": int(first),
        "intervals": final[0],
        "clock": final[1],
        "connection": final[2],
        "phases": phases,
        "iops_values": len(seen_iops),
        "hosts": hosts,
        "groups": group_names,
        "baseline_lines": baseline_lines,
        "objective_lines": objective_lines,
        "steps": step_texts,
        "step_marks": step_marks,
        "requests": len(s.requests),
        "pages": s.pages,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--base", required=True, help="the run's listener, http://HOST:PORT")
    p.add_argument("--out", required=True, help="directory for the screenshots")
    p.add_argument("--objectives", type=int, help="objective lines the latency chart must draw"
                   " (the run has --baseline too)")
    p.add_argument("--groups", help="the worker groups that must have strips, comma-separated")
    p.add_argument("--steps", action="store_true", help="the run has rounds or steps")
    p.add_argument("--ready", help="a file to write once the page shows its first intervals")
    p.add_argument("--go", help="open the page only once this file exists (the browser is"
                   " started first, so its start-up is not part of the wait)")
    p.add_argument("--chromium", default="/usr/bin/chromium")
    p.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    a = p.parse_args()
    d = browser(a.chromium, a.chromedriver)
    try:
        if a.go:
            t0 = time.time()
            while not os.path.exists(a.go):
                check(time.time() - t0 < 120, f"the go file {a.go} appeared within 120 s")
                time.sleep(0.05)
        groups = a.groups.split(",") if a.groups else []
        print(json.dumps(follow(Session(d, a.base, a.out), a.objectives, groups, a.steps, a.ready)))
    except Failed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        d.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
