#!/usr/bin/env python3
"""What live-view viewers cost a run: 1,000 null-engine workers with five viewers of
`--ui`'s event stream connected and with none, interleaved.

Both arms run the same command, `iofleet run … --metrics-listen 127.0.0.1:PORT --ui`, in
one process (in-process workers, so the result's `summary.cpu` is the controller's own
process: its I/O threads, collector, observers and the live view's server). They differ
only in whether --viewers plain HTTP clients (threads of this script, a separate
process) hold `GET /events` open from before the first interval to the run's end,
reading every event as it comes. Runs go A B B A (none, viewers, viewers, none) per
round, --rounds times.

Per run: the fleet's IOPS and the process's CPU (`summary.cpu` usr + sys, percent of
one core, and µs per I/O). Per arm: the median, and the run-to-run spread (max - min of
the arm's runs, as a share of its median). The claim checked is the issue's: the two
arms' medians differ by less than the larger of the two arms' spreads, for IOPS and for
CPU. Each viewer must receive the run's `done` and every interval, or the run does not
count as watched and the script stops.

Workers are rate-limited (--rate IOPS each, 20 by default: 20,000 IOPS for the fleet)
so that CPU, not only IOPS, shows a cost: a closed-loop null run (--rate 0) uses every
core whatever happens and then only its IOPS can move.

    python3 bench/ui_viewers.py --iofleet target/release/iofleet [--workers 1000] \
        [--viewers 5] [--seconds 20] [--warmup 2] [--rounds 3] [--rate 20]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Viewer(threading.Thread):
    """One plain HTTP client of /events: connects as soon as the listener answers and
    reads the stream until the run closes it, counting events."""

    def __init__(self, port, deadline):
        super().__init__(daemon=True)
        self.port = port
        self.deadline = deadline
        self.events = 0
        self.intervals = 0
        self.done = False
        self.bytes = 0
        self.error = None

    def connect(self):
        while time.time() < self.deadline:
            try:
                return socket.create_connection(("127.0.0.1", self.port), timeout=60)
            except OSError:
                time.sleep(0.02)
        raise TimeoutError("the live view never answered")

    def run(self):
        try:
            s = self.connect()
            s.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n\r\n".encode())
            buf = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                self.bytes += len(chunk)
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if not line.startswith(b"data: "):
                        continue
                    ev = json.loads(line[6:])
                    self.events += 1
                    if ev["type"] == "interval":
                        self.intervals += 1
                    elif ev["type"] == "phase" and ev["phase"] == "done":
                        self.done = True
            s.close()
        except Exception as e:  # reported by the caller
            self.error = repr(e)


def one(binary, a, viewers):
    port = free_port()
    cmd = [
        binary, "run", "vsan-7030", "--engine", "null", "--workers", str(a.workers),
        "--disks", "1", "--threads", "1", "--qd", "1",
        "--warmup", f"{a.warmup}s", f"--duration={a.seconds}s", "--interval", "1s",
        "--metrics-listen", f"127.0.0.1:{port}", "--ui",
        "--no-save", "--quiet", "--json",
    ]
    if a.rate > 0:
        cmd += ["--rate", str(a.rate)]
    deadline = time.time() + a.warmup + a.seconds + 120
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
    watchers = [Viewer(port, deadline) for _ in range(viewers)]
    for w in watchers:
        w.start()
    proc.wait()
    for w in watchers:
        w.join(timeout=10)
    out_f.seek(0)
    err_f.seek(0)
    if proc.returncode != 0:
        sys.exit(f"run failed ({proc.returncode}): {' '.join(cmd)}\n{err_f.read().decode()}")
    r = json.loads(out_f.read())
    n = len(r["intervals"])
    for w in watchers:
        if w.error or not w.done or w.intervals != n:
            sys.exit(f"a viewer did not watch the whole run: error {w.error}, done {w.done}, "
                     f"{w.intervals} of {n} intervals")
    s = r["summary"]
    cpu = s.get("cpu") or {}
    return {
        "viewers": viewers,
        "iops": s["all"]["iops"],
        "cpu_pct": cpu.get("usr_pct", 0.0) + cpu.get("sys_pct", 0.0),
        "cpu_us_per_io": cpu.get("us_per_io"),
        "intervals": n,
        "events_per_viewer": watchers[0].events if watchers else 0,
        "bytes_per_viewer": watchers[0].bytes if watchers else 0,
    }


def describe(runs, key):
    xs = [r[key] for r in runs]
    med = statistics.median(xs)
    spread = (max(xs) - min(xs)) / med if med else 0.0
    return med, spread, xs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iofleet", default="target/release/iofleet")
    ap.add_argument("--workers", type=int, default=1000)
    ap.add_argument("--viewers", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=20, help="measured seconds per run")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up seconds per run")
    ap.add_argument("--rounds", type=int, default=3, help="A B B A blocks")
    ap.add_argument("--rate", type=int, default=20, help="IOPS per worker; 0: closed loop")
    ap.add_argument("--out", help="write every run and the summary here as JSON")
    a = ap.parse_args()
    binary = os.path.abspath(a.iofleet)
    arms = {"none": 0, "viewers": a.viewers}
    runs = {"none": [], "viewers": []}
    for _ in range(a.rounds):
        for arm in ("none", "viewers", "viewers", "none"):
            got = one(binary, a, arms[arm])
            runs[arm].append(got)
            print(f"{arm:8} IOPS {got['iops']:12.0f}  CPU {got['cpu_pct']:6.1f}% of a core  "
                  f"{got['cpu_us_per_io'] or 0:8.2f} us/IO  {got['intervals']} intervals  "
                  f"{got['events_per_viewer']} events per viewer", flush=True)
    summary = {}
    verdicts = []
    for key, label in (("iops", "IOPS"), ("cpu_pct", "CPU % of a core")):
        (m0, s0, _), (m1, s1, _) = describe(runs["none"], key), describe(runs["viewers"], key)
        diff = abs(m1 - m0) / m0 if m0 else 0.0
        spread = max(s0, s1)
        ok = diff < spread or (diff == 0.0 and spread == 0.0)
        verdicts.append(ok)
        summary[key] = {"none_median": m0, "viewers_median": m1, "difference": diff,
                        "spread_none": s0, "spread_viewers": s1}
        print(f"{label}: no viewer {m0:.1f} (spread {s0:.1%}), {a.viewers} viewers {m1:.1f} "
              f"(spread {s1:.1%}); difference {diff:.1%} "
              f"{'<' if ok else '>='} the larger spread {spread:.1%}")
    print("PASS: the viewers' cost is within the run-to-run spread" if all(verdicts)
          else "FAIL: a difference beyond the run-to-run spread")
    if a.rounds < 2:
        print("(one round: each arm's spread is of two runs only; use --rounds 3 or more)")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"args": vars(a), "runs": runs, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
