#!/usr/bin/env python3
"""Whole-process CPU per I/O: iofleet against fio's ``t/io_uring`` (and fio), one accounting.

Every tool is a child process; its CPU is its rusage when it exits (user + system, every
thread it had, io_uring's kernel workers included), and its I/Os are the ones the device
completed while it ran (``/proc/diskstats`` of the loop device, or of the partition under
``--dir``, before and after). One accounting for all three tools, so no tool's own count
is trusted over another's. iofleet's own I/O count and its I/O thread's figure
(``summary.cpu.us_per_io``) are printed beside it.

Cases (4 KiB random reads, O_DIRECT, io_uring, one thread, no polling, registered
buffers and file):

* ``loop-qd32``: a 1 GiB loop device over /dev/shm, QD32; ``t/io_uring -d32 -s8 -c8``.
* ``loop-qd1``: the same device, QD1; ``t/io_uring -d1 -s1 -c1``.
* ``rootfs-qd16``: a 1 GiB file under ``--dir`` (the root filesystem's disk), QD16;
  ``t/io_uring -d16 -s4 -c4``.

``t/io_uring`` stays outside this repository: build it from fio's sources yourself and
pass its path. Runs are interleaved A B B A (with more tools, A B C C B A and so on)
``--rounds`` times per case; the figures are medians, and each block's ratio is the
ratio of that block's two medians.

Usage (root, from the repository root, after ``cargo build --release``):

    python3 bench/cpu_per_io.py --t-io-uring /path/to/fio/t/io_uring --dir /var/tmp \
        --seconds 5 --rounds 3 [--fio fio] [--reap-one] [--cases loop-qd32,loop-qd1,rootfs-qd16]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fio import run as run_child  # noqa: E402  (rusage of the child, every thread)
from real_disk import device_of, diskstats  # noqa: E402

CASES = {
    "loop-qd32": {"target": "loop", "qd": 32, "batch": 8},
    "loop-qd1": {"target": "loop", "qd": 1, "batch": 1},
    "rootfs-qd16": {"target": "file", "qd": 16, "batch": 4},
}


def measured(cmd, dev):
    """Run `cmd`; its stdout, whole-process CPU seconds, wall seconds and device I/Os."""
    a, t0 = diskstats(dev), time.monotonic()
    out, cpu, _host = run_child(cmd)
    b, wall = diskstats(dev), time.monotonic() - t0
    ios = (b[0] - a[0]) + (b[4] - a[4])  # reads and writes completed
    return out, cpu, wall, ios


def t_io_uring(binary, path, case, secs, dev, reap=None):
    d, s = case["qd"], case["batch"]
    cmd = [binary, f"-d{d}", f"-s{s}", f"-c{reap or s}", "-p0", "-B1", "-F1", "-n1", "-O1",
           f"-r{secs}", path]
    out, cpu, wall, ios = measured(cmd, dev)
    per_s = [float(m.group(1)) * (1000 if m.group(2) == "K" else 1)
             for m in re.finditer(r"^IOPS=([\d.]+)(K?),", out.decode(), re.M)]
    return {"cpu_us_per_io": cpu * 1e6 / ios, "ios": ios, "iops": ios / secs,
            "own_iops": statistics.median(per_s) if per_s else 0.0, "wall_s": wall}


def iofleet(binary, target, case, secs, dev):
    cmd = [binary, "run", "easy-run-4k100r", "--target", target, "--engine", "io_uring",
           "--prepare", "none", "--workers", "1", "--disks", "1", "--threads", "1",
           f"--qd={case['qd']}", "--warmup", "0s", f"--duration={secs}s", "--no-save",
           "--json", "--quiet"]
    if case["target"] == "loop":
        cmd.append("--destroy-data")
    else:
        cmd += ["--disk-size", "1g"]
    out, cpu, wall, ios = measured(cmd, dev)
    s = json.loads(out)["summary"]
    return {"cpu_us_per_io": cpu * 1e6 / ios, "ios": ios, "iops": s["all"]["iops"],
            "own_ios": s["all"]["ios"], "thread_us_per_io": (s.get("cpu") or {}).get("us_per_io"),
            "p50_us": s["all"]["latency_us"]["p50"], "p99_us": s["all"]["latency_us"]["p99"],
            "wall_s": wall}


def fio(binary, path, case, secs, dev):
    d, s = case["qd"], case["batch"]
    cmd = [binary, "--name=bench", "--output-format=json", "--time_based",
           f"--runtime={secs}", "--bs=4k", f"--iodepth={d}", "--numjobs=1", "--rw=randread",
           "--randrepeat=0", "--norandommap", "--ioengine=io_uring", "--direct=1",
           "--fixedbufs", "--registerfiles", f"--iodepth_batch_submit={s}",
           f"--iodepth_batch_complete_min={s}", f"--filename={path}", "--size=1g"]
    out, cpu, wall, ios = measured(cmd, dev)
    job = json.loads(out)["jobs"][0]
    return {"cpu_us_per_io": cpu * 1e6 / ios, "ios": ios, "iops": job["read"]["iops"],
            "wall_s": wall}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iofleet", default="target/release/iofleet")
    ap.add_argument("--t-io-uring", required=True, help="t/io_uring built from fio's sources")
    ap.add_argument("--fio", default="", help="also run this fio binary in each block")
    ap.add_argument("--reap-one", action="store_true",
                    help="also run t/io_uring waiting for one completion per call (-c1), "
                         "the choice iofleet makes so that no completion is stamped late")
    ap.add_argument("--dir", default="/var/tmp", help="a directory on the root filesystem")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved blocks per case")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--json", default="", help="write every run's figures here")
    args = ap.parse_args()
    binary = os.path.abspath(args.iofleet)
    tio = os.path.abspath(args.t_io_uring)
    cases = args.cases.split(",")
    for c in cases:
        if c not in CASES:
            sys.exit(f"--cases: unknown case {c!r} (known: {', '.join(CASES)})")

    shm = tempfile.mkdtemp(dir="/dev/shm")
    work = tempfile.mkdtemp(dir=args.dir, prefix="iofleet-cpu-")
    loop = None
    rows = {}
    try:
        if any(CASES[c]["target"] == "loop" for c in cases):
            img = os.path.join(shm, "loop.img")
            with open(img, "wb") as f:
                for _ in range(1024):
                    f.write(os.urandom(1 << 20))
            loop = subprocess.check_output(["losetup", "--find", "--show", img]).decode().strip()
        if any(CASES[c]["target"] == "file" for c in cases):
            # iofleet lays out and fills its disk file; the other tools read the same file.
            target = os.path.join(work, "t")
            run_child([binary, "run", "easy-run-4k100r", "--target", target, "--workers", "1",
                       "--disks", "1", "--threads", "1", "--disk-size", "1g", "--prepare",
                       "random", "--duration", "1s", "--warmup", "0s", "--quiet", "--no-save",
                       "--json"])
            file_path = os.path.join(target, "w000-d000.iofleet")
            assert os.path.exists(file_path), file_path
        for name in cases:
            case = CASES[name]
            if case["target"] == "loop":
                path, target, dev = loop, loop, os.path.basename(loop)
            else:
                path, target, dev = file_path, os.path.join(work, "t"), device_of(file_path)
            tools = (["t/io_uring", "iofleet"] + (["t/io_uring -c1"] if args.reap_one else [])
                     + (["fio"] if args.fio else []))
            runs = {t: [] for t in tools}
            for block in range(args.rounds):
                for t in tools + tools[::-1]:
                    if t == "t/io_uring":
                        r = t_io_uring(tio, path, case, args.seconds, dev)
                    elif t == "t/io_uring -c1":
                        r = t_io_uring(tio, path, case, args.seconds, dev, reap=1)
                    elif t == "iofleet":
                        r = iofleet(binary, target, case, args.seconds, dev)
                    else:
                        r = fio(args.fio, path, case, args.seconds, dev)
                    r["block"] = block
                    runs[t].append(r)
            med = {t: {k: statistics.median(r[k] for r in runs[t])
                       for k in ("cpu_us_per_io", "iops")} for t in tools}
            base = med["t/io_uring"]["cpu_us_per_io"]
            for t in tools:
                each = ", ".join(f"{r['cpu_us_per_io']:.2f}" for r in runs[t])
                print(f"{name:<12} {t:<14} {med[t]['cpu_us_per_io']:.3f} µs/IO "
                      f"({med[t]['cpu_us_per_io'] / base:.3f}x) IOPS {med[t]['iops']:>8.0f} | "
                      f"runs {each}", flush=True)
            blocks = []
            for b in range(args.rounds):
                per = {t: statistics.median(r["cpu_us_per_io"] for r in runs[t] if r["block"] == b)
                       for t in tools}
                blocks.append(per["iofleet"] / per["t/io_uring"])
            thread = [r["thread_us_per_io"] for r in runs["iofleet"] if r.get("thread_us_per_io")]
            print(f"{name:<12} iofleet / t/io_uring per block: "
                  + ", ".join(f"{x:.3f}" for x in blocks)
                  + f"; median {statistics.median(blocks):.3f}"
                  + (f"; iofleet's I/O thread alone {statistics.median(thread):.3f} µs/IO"
                     if thread else ""), flush=True)
            rows[name] = {"median": med, "block_ratios": blocks, "runs": runs}
    finally:
        if loop:
            subprocess.run(["losetup", "-d", loop], check=False)
        subprocess.run(["rm", "-rf", shm, work], check=False)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
