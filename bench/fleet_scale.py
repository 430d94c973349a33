#!/usr/bin/env python3
"""Controller scale: thousands of simulated workers streaming 1 s intervals to one controller.

Several agents run on this machine (inventory transport "local": the same agent
processes the SSH path starts, without sshd), each serving its share of the workers with
the null engine, rate-limited so the agents themselves stay light. The controller's own
CPU (usr+sys of its process only, from /proc/PID/stat: agents are separate processes) is
sampled while it runs and taken over the measured phase; its peak RSS is VmHWM from
/proc/PID/status just before it ends. (The result's summary.cpu is the agents' CPU.)
It also checks the controller kept up in real time: it polls the controller's
`--metrics-listen` page for `iofleet_interval_index` and records when each interval was
first merged, so an interval held back by a late agent shows as lag, not only as a row
present in the final result.

    python3 bench/fleet_scale.py --iofleet target/release/iofleet [--workers 10000] [--agents 10] [--seconds 30]
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def interval_index(port):
    """The controller's latest merged interval, from its metrics page (None: none yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=0.5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("iofleet_interval_index"):
                    return int(float(line.split()[-1]))
    except (OSError, ValueError):
        return None
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iofleet", default="target/release/iofleet")
    ap.add_argument("--workers", type=int, default=1000)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--rate", type=int, default=20, help="IOPS per worker")
    args = ap.parse_args()
    binary = os.path.abspath(args.iofleet)
    tmp = tempfile.mkdtemp()
    inv = os.path.join(tmp, "agents.toml")
    with open(inv, "w") as f:
        for i in range(args.agents):
            f.write(f'[[host]]\ndestination = "agent{i}"\ntransport = "local"\ntarget = "{tmp}/a{i}"\n')
    cmd = [
        binary, "run", "vsan-7030", "--hosts", inv, "--workers", str(args.workers),
        "--disks", "1", "--threads", "1", "--qd", "1", "--engine", "null",
        "--rate", str(args.rate), "--warmup", "2s", f"--duration={args.seconds}s",
        "--interval", "1s", "--json", "--quiet", "--no-save",
    ]
    port = free_port()
    cmd += ["--metrics-listen", f"127.0.0.1:{port}"]
    seen = {}  # interval index -> wall time it was first served
    tick = os.sysconf("SC_CLK_TCK")
    t0 = time.time()
    # Output to files: a pipe nobody reads while polling would stall the controller.
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
    samples = []  # (wall, cpu seconds of the controller process itself)
    rss = []  # (wall, VmRSS kiB)
    hwm_kib = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm_kib = max(hwm_kib, int(line.split()[1]))
                    if line.startswith("VmRSS:"):
                        rss.append((time.time() - t0, int(line.split()[1])))
            samples.append((time.time() - t0, (int(fields[11]) + int(fields[12])) / tick))
        except (OSError, IndexError, ValueError):
            pass
        k = interval_index(port)
        if k is not None:
            for j in range(max(seen, default=-1) + 1, k + 1):
                seen[j] = time.time() - t0
        time.sleep(0.2)
    proc.wait()
    out_f.seek(0)
    err_f.seek(0)
    stdout, stderr = out_f.read(), err_f.read()
    wall = time.time() - t0
    if proc.returncode != 0:
        sys.exit(f"run failed ({proc.returncode}): {stderr.decode()}")
    r = json.loads(stdout)
    s = r["summary"]
    measured = [i for i in r["intervals"] if not i["warmup"]]
    # The measured phase: from the first sample after start-up plus the warm-up to the
    # last sample before the run's end.
    start = wall - (args.seconds + 2) - 1.0
    window = [x for x in samples if start + 2.0 <= x[0] <= start + 2.0 + args.seconds]
    if len(window) < 2:
        window = samples
    cpu_pct = (window[-1][1] - window[0][1]) / max(window[-1][0] - window[0][0], 1e-9) * 100.0
    per_interval_ms = cpu_pct / 100.0 * r["run"]["interval_s"] * 1000.0
    print(f"workers {len(r['workers'])} over {len(r['hosts'])} agents, {len(measured)} measured 1 s intervals "
          f"(planned {args.seconds}), fleet {s['all']['iops']:.0f} IOPS")
    print(f"controller CPU {cpu_pct:.1f}% of one core = {per_interval_ms:.1f} ms CPU per 1 s interval; "
          f"peak RSS {hwm_kib / 1024:.1f} MiB; wall {wall:.1f} s for {args.seconds + 2} s planned")
    # Resident memory through the measured phase: it should level off, not grow.
    marks = []
    for frac in (0.25, 0.5, 0.75, 1.0):
        t = start + 2.0 + frac * args.seconds
        near = [r for r in rss if r[0] <= t]
        if near:
            marks.append(f"{near[-1][1] / 1024:.0f}")
    print(f"controller RSS at 25/50/75/100% of the measured phase: {' / '.join(marks)} MiB")
    if os.environ.get("RSS_SERIES"):
        print("RSS series (s, MiB):", [(round(t), round(k / 1024)) for t, k in rss[::4]])
    # Real time: interval k ends one interval after interval k-1. Taking the most timely
    # interval as on time (lag 0), each interval's lag is how much later than that it was
    # first served; the poll itself is 0.2 s coarse.
    planned = len(r["intervals"])
    if seen:
        base = min(t - k for k, t in seen.items())
        lags = [seen[k] - k - base for k in sorted(seen)]
        print(f"intervals merged while the run went on: {len(seen)} of {planned}; lag behind the "
              f"most timely one: median {sorted(lags)[len(lags) // 2]:.2f} s, max {max(lags):.2f} s")
    else:
        lags = [float("inf")]
        print(f"no interval was merged while the run went on (0 of {planned})")
    realtime = len(seen) >= planned - 1 and max(lags) <= 1.5
    ok = (len(measured) == args.seconds and realtime and cpu_pct < 25.0
          and hwm_kib < 1024 * 1024)
    print("PASS: keeps up in real time under 25% of one core and 1 GiB" if ok else "FAIL")


if __name__ == "__main__":
    main()
