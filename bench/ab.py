#!/usr/bin/env python3
"""Two iofleet builds on one target, interleaved (A B B A per round, BRIEF §7), medians.

Per run: IOPS, p50 and p99 of all I/Os (µs), and whole-process CPU per I/O: the run's user +
system time (from wait4, so every thread of the process counts: I/O threads, the
collector, the live view, start-up) over the I/Os of warm-up and measured phase
(IOPS × their length). Disk files in the target are filled once and reused.

  python3 bench/ab.py --old /work/target-old/release/iofleet --new target/release/iofleet \
      /var/tmp/iofab easy-run-4k70r --workers 2 --disks 8 --threads 4 --qd 1 --disk-size 64m
"""
import argparse
import json
import os
import statistics
import subprocess


def one(binary, target, args, warmup, seconds):
    cmd = [binary, "run", *args, "--target", target, "--warmup", warmup,
           "--duration", seconds, "--no-save", "--quiet", "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {status}")
    r = json.loads(out)
    s = r["summary"]
    span = r["run"]["warmup_s"] + r["run"]["duration_s"]
    ios = s["all"]["iops"] * span
    cpu = usage.ru_utime + usage.ru_stime
    lat = s["all"]["latency_us"]
    return s["all"]["iops"], lat["p50"], lat["p99"], cpu / ios * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", required=True)
    p.add_argument("--new", required=True)
    p.add_argument("--rounds", type=int, default=2, help="A B B A blocks")
    p.add_argument("--warmup", default="2s")
    p.add_argument("--seconds", default="8s")
    p.add_argument("target")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    runs = {"old": [], "new": []}
    for _ in range(a.rounds):
        for which in ("old", "new", "new", "old"):
            got = one(getattr(a, which), a.target, a.args, a.warmup, a.seconds)
            runs[which].append(got)
            print(which, *(round(x, 2) for x in got), flush=True)
    for which, rs in runs.items():
        iops = [r[0] for r in rs]
        print(f"{which}: IOPS median {statistics.median(iops):.0f} "
              f"({min(iops):.0f}-{max(iops):.0f}), "
              f"p50 median {statistics.median(r[1] for r in rs):.1f} us, "
              f"p99 median {statistics.median(r[2] for r in rs):.1f} us, "
              f"CPU median {statistics.median(r[3] for r in rs):.2f} us/IO")
    o, n = runs["old"], runs["new"]
    med = lambda rs, k: statistics.median(r[k] for r in rs)
    print(f"NEW/OLD: IOPS {med(n, 0) / med(o, 0):.3f}, p50 {med(n, 1) / med(o, 1):.3f}, "
          f"p99 {med(n, 2) / med(o, 2):.3f}, CPU per I/O {med(n, 3) / med(o, 3):.3f}")


if __name__ == "__main__":
    main()
