#!/usr/bin/env python3
"""The cost of --verify: IOPS with and without end-to-end data verification, same target.

Cases: 4K random read and 4K 70/30 random, both at QD32, on a loop device over a
memory-backed file (io_uring, O_DIRECT). Runs are interleaved A B B A (plain, verified,
verified, plain; repeated --rounds times) and medians are reported, with the cost as
1 - verified / plain IOPS. The design target is a cost of at most 10%. The cost is also
given from the I/O thread's CPU time per I/O (its busy share over the measured phase, from
the self-check, times the duration, over the I/Os), which time stolen by a busy host does
not move: it is what verification costs that thread, and so an upper bound of the IOPS
it costs (equal to it where that thread is busy all the time and alone sets the rate).

Verified runs keep their journals in a scratch $XDG_CACHE_HOME (removed at the end). The
first verified run of a case fills the device with verifiable units; that fill is a
prepare phase, outside the measured time. A plain run that writes (70/30) removes the
device's journal, so the next verified run fills again, also outside the measured time.
Needs root (losetup). Usage:

    sudo python3 bench/verify_overhead.py --iofleet target/release/iofleet [--seconds 10] [--rounds 3]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def run(cmd, env):
    """Run cmd; its parsed JSON result. Exit code 4 (corruption found) is a failure."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.decode()}")
    return json.loads(p.stdout)


def iofleet_case(binary, case, target, secs, verify, env):
    cmd = [
        binary, "run", "--workers", "1", "--disks", "1", "--threads", "1",
        f"--qd={case['qd']}", "--bs", "4k", "--random-pct", "100",
        "--read-pct", case["read_pct"], "--prepare", "none", "--warmup", "0s",
        f"--duration={secs}s", "--engine", "io_uring", "--target", target,
        "--no-save", "--json", "--quiet",
    ]
    if verify:
        cmd.append("--verify")
    s = run(cmd, env)["summary"]
    # The I/O thread's CPU over the measured phase (the self-check's busy share; a
    # verified run's fill is outside it), per I/O.
    busy = s["generator"]["max_busy_pct"]
    row = {"iops": s["all"]["iops"], "p99_us": s["all"]["latency_us"]["p99"],
           "cpu_us_per_io": busy / 100 * secs * 1e6 / s["all"]["ios"], "busy_pct": busy}
    if verify:
        v = s["verify"]
        if v["corruptions"]:
            sys.exit(f"verified run found {v['corruptions']} corruption(s): {v['first'][:3]}")
        row["units_checked"] = v["units_checked"]
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iofleet", default="target/release/iofleet")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="A B B A blocks per case")
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--only", default="", help="comma-separated case names")
    args = ap.parse_args()
    binary = os.path.abspath(args.iofleet)

    tmp = tempfile.mkdtemp(dir="/dev/shm")
    img = os.path.join(tmp, "bench.img")
    with open(img, "wb") as f:
        for _ in range(args.size_mib):
            f.write(os.urandom(1 << 20))
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"),
               XDG_DATA_HOME=os.path.join(tmp, "data"))
    loop = subprocess.check_output(["losetup", "--find", "--show", img]).decode().strip()
    cases = [
        {"name": "loop randread qd32", "read_pct": "100", "qd": 32},
        {"name": "loop 70/30 qd32", "read_pct": "70", "qd": 32},
    ]
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in cases if c["name"] in keep]
    rows = []
    try:
        for case in cases:
            plain, verified = [], []
            for _ in range(args.rounds):
                plain.append(iofleet_case(binary, case, loop, args.seconds, False, env))
                verified.append(iofleet_case(binary, case, loop, args.seconds, True, env))
                verified.append(iofleet_case(binary, case, loop, args.seconds, True, env))
                plain.append(iofleet_case(binary, case, loop, args.seconds, False, env))
            med = lambda runs, k: statistics.median(r[k] for r in runs)
            row = {"case": case["name"]}
            for k in ["iops", "p99_us", "cpu_us_per_io", "busy_pct"]:
                row["plain_" + k] = med(plain, k)
                row["verify_" + k] = med(verified, k)
            row["cost_pct"] = 100.0 * (1.0 - row["verify_iops"] / row["plain_iops"])
            # The cost to the I/O thread's CPU per I/O: an upper bound of the IOPS cost.
            row["cpu_cost_pct"] = 100.0 * (
                1.0 - row["plain_cpu_us_per_io"] / row["verify_cpu_us_per_io"])
            row["runs"] = {"plain": plain, "verify": verified}
            rows.append(row)
            print(
                f"{case['name']:<20} IOPS plain {row['plain_iops']:>10.0f} verify "
                f"{row['verify_iops']:>10.0f} cost {row['cost_pct']:5.1f}% | CPU µs/IO "
                f"{row['plain_cpu_us_per_io']:.2f} / {row['verify_cpu_us_per_io']:.2f} "
                f"cost {row['cpu_cost_pct']:4.1f}% | I/O thread busy "
                f"{row['plain_busy_pct']:.0f}% / {row['verify_busy_pct']:.0f}% | p99 µs "
                f"{row['plain_p99_us']:.1f} / {row['verify_p99_us']:.1f}",
                flush=True,
            )
    finally:
        subprocess.call(["losetup", "-d", loop])
        shutil.rmtree(tmp, ignore_errors=True)
    json.dump(rows, open("verify-overhead.json", "w"), indent=2)


if __name__ == "__main__":
    main()
