#!/usr/bin/env python3
"""Controller scale: 1,000 simulated workers streaming 1 s intervals to one controller.

Several agents run on this machine (inventory transport "local": the same agent
processes the SSH path starts, without sshd), each serving its share of the workers with
the null engine, rate-limited so the agents themselves stay light. The controller's own
CPU (usr+sys of its process only: agents are separate processes) and peak RSS come from
its JSON result (summary.cpu, summary.memory), measured over the measured phase.
It also checks the controller kept up: every interval arrived and was merged.

    python3 bench/fleet_scale.py --iofleet target/release/iofleet [--workers 1000] [--agents 4] [--seconds 30]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


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
    t0 = time.time()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.time() - t0
    if out.returncode != 0:
        sys.exit(f"run failed ({out.returncode}): {out.stderr.decode()}")
    r = json.loads(out.stdout)
    s = r["summary"]
    cpu_pct = s["cpu"]["usr_pct"] + s["cpu"]["sys_pct"]
    measured = [i for i in r["intervals"] if not i["warmup"]]
    per_interval_ms = cpu_pct / 100.0 * r["run"]["interval_s"] * 1000.0
    print(f"workers {len(r['workers'])} over {len(r['hosts'])} agents, {len(measured)} measured 1 s intervals "
          f"(planned {args.seconds}), fleet {s['all']['iops']:.0f} IOPS")
    print(f"controller CPU {cpu_pct:.1f}% of one core = {per_interval_ms:.1f} ms CPU per 1 s interval; "
          f"peak RSS {s['memory']['rss_peak_mib']:.1f} MiB; wall {wall:.1f} s for {args.seconds + 2} s planned")
    ok = len(measured) == args.seconds and cpu_pct < 25.0
    print("PASS: keeps up in real time under 25% of one core" if ok else "FAIL")


if __name__ == "__main__":
    main()
