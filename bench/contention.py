#!/usr/bin/env python3
"""The generator self-check against another load on the host (issue 24).

Runs iofleet on files of the root filesystem (the one real disk) in two shapes — the
many-thread shape (2 workers x 8 disks x 4 threads, QD1 each: 64 lanes) and one thread at
QD16 — each quiet and beside busy loops (`sh -c 'while :; do :; done'`): one per CPU and
half as many. Rounds go quiet, half, full, then full, half, quiet (A B C C B A), and the
figures are medians per case. For each run it prints IOPS, p99, what the self-check
measured (share of time the I/O threads waited for a CPU, the latency the I/Os in flight
absorbed, the wait per wake-up, the other processes' CPU) and its warnings; at the end, for
each disturbed case, how far IOPS and p99 moved against the quiet twin and whether every
run of it was warned, and whether any quiet run was.

Usage (the disks are created under --dir once and reused; delete them afterwards):

    python3 bench/contention.py --iofleet target/release/iofleet [--dir /var/tmp/iofcal] \
        [--seconds 8] [--rounds 2]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SHAPES = {
    "many-thread": ["--workers", "2", "--disks", "8", "--disk-size", "64MiB",
                    "--threads", "4", "--qd", "1"],
    "one-thread-qd16": ["--workers", "1", "--disks", "1", "--disk-size", "512MiB",
                        "--threads", "1", "--qd", "16"],
}


def run(args, shape, hogs):
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(hogs)]
    try:
        time.sleep(0.3)
        cmd = [args.iofleet, "run", "easy-run-4k70r", *SHAPES[shape],
               "--target", os.path.join(args.dir, shape),
               "--duration", f"{args.seconds}s", "--warmup", "1s", "--no-save", "--json"]
        o = subprocess.run(cmd, capture_output=True, text=True, check=True)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    s = json.loads(o.stdout)["summary"]
    g = s.get("generator") or {}
    return {
        "iops": s["all"]["iops"],
        "p99": s["all"]["latency_us"]["p99"],
        "runq_pct": g.get("runq_pct"),
        "absorbed_pct": g.get("runq_absorbed_pct"),
        "wait_us": g.get("runq_wait_us"),
        "other_cpus": g.get("other_load_cpus"),
        "warnings": g.get("warnings", []),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iofleet", required=True)
    ap.add_argument("--dir", default="/var/tmp/iofcal")
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    cpus = os.cpu_count() or 2
    loads = [0, max(1, cpus // 2), cpus]
    for shape in SHAPES:  # fill the disks once, outside the measured runs
        run(args, shape, 0)
    res = {}
    for r in range(args.rounds):
        order = loads if r % 2 == 0 else loads[::-1]
        for shape in SHAPES:
            for hogs in order:
                x = run(args, shape, hogs)
                res.setdefault((shape, hogs), []).append(x)
                print(f"{shape:16} busy loops {hogs}: {x['iops']:9.0f} IOPS  p99 {x['p99']:7.0f} µs"
                      f"  waiting {x['runq_pct']:5.1f}%  absorbed {x['absorbed_pct']:5.1f}%"
                      f"  {x['wait_us']:5.0f} µs/wake-up  other {x['other_cpus']:.2f} CPUs"
                      f"  warnings {len(x['warnings'])}", flush=True)
    print()
    print("| shape | busy loops | IOPS | p99 µs | waiting for a CPU | absorbed | µs per wake-up"
          " | other CPUs | IOPS moved | p99 moved | warned |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    ok = True
    for shape in SHAPES:
        quiet = None
        for hogs in loads:
            xs = res[(shape, hogs)]
            med = {k: statistics.median(x[k] for x in xs)
                   for k in ("iops", "p99", "runq_pct", "absorbed_pct", "wait_us", "other_cpus")}
            warned = sum(1 for x in xs if x["warnings"])
            if hogs == 0:
                quiet = med
                moved_iops = moved_p99 = 0.0
                ok &= warned == 0
            else:
                moved_iops = med["iops"] / quiet["iops"] - 1
                moved_p99 = med["p99"] / quiet["p99"] - 1
                if abs(moved_iops) > 0.15 or abs(moved_p99) > 0.15:
                    ok &= warned == len(xs)
            print(f"| {shape} | {hogs} | {med['iops']:,.0f} | {med['p99']:,.0f} | {med['runq_pct']:.1f}%"
                  f" | {med['absorbed_pct']:.1f}% | {med['wait_us']:.0f} | {med['other_cpus']:.2f}"
                  f" | {moved_iops:+.0%} | {moved_p99:+.0%} | {warned} of {len(xs)} |")
    print()
    print("every disturbed case that moved over 15% warned, no quiet case warned:",
          "yes" if ok else "NO")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
