#!/usr/bin/env python3
"""iofleet on the machine's real disk: agreement with fio, and the fleet shape.

Files on a directory of the root filesystem (never a raw disk device), O_DIRECT,
io_uring. Two parts:

* ``fio``: one 1 GiB file, 4K random read and 4K 70/30 random at QD 1, 4, 16 and 32 on
  one thread; fio and iofleet interleaved A B B A (``--rounds`` times), medians of IOPS,
  p50, p99 and CPU per I/O (the child's rusage, every thread, divided by its I/Os).
  With ``--all-fio``, fio runs in each of ``FIO_CONFIGS`` per slot (as users run it;
  with registered buffers and file, the kernel interface iofleet uses; and with
  submissions batched too), order fio configs, iofleet, iofleet, configs reversed, and
  iofleet is also compared with the best of them per case. Every run also reads
  ``/proc/diskstats`` of the disk under ``--dir`` before and after: the device's own
  IOPS, mean latency and mean queue (I/Os it held on average) over the whole process
  (start-up included), which show whether a tool kept the device as busy as its queue
  depth says.
* ``shape``: the same 16 disk files (2 workers x 8 disks x 64 MiB), 4K 70/30 random,
  64 I/Os outstanding either as ``--threads 4 --qd 1`` (HCIBench easy-run's shape) or as
  ``--threads 1 --qd 4``; interleaved A B B A, medians.

Usage (from the repository root, after ``cargo build --release``):

    python3 bench/real_disk.py fio   --dir /var/tmp --seconds 8 --rounds 2 [--fio PATH] [--all-fio]
    python3 bench/real_disk.py shape --dir /var/tmp --seconds 8 --rounds 3
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fio import run as run_child  # noqa: E402  (the loop-device bench's CPU accounting)

# fio's configurations for --all-fio; {qd} is the case's queue depth.
FIO_CONFIGS = {
    "fio": [],
    "fio reg": ["--fixedbufs", "--registerfiles"],
    "fio batch": ["--fixedbufs", "--registerfiles", "--iodepth_batch_submit=4",
                  "--iodepth_batch_complete_max={qd}"],
}

DEVICE = None  # the /proc/diskstats name of the disk under --dir (set in main)
LAST_DEVICE = {}  # the device's figures over the last run()


def device_of(path):
    """The whole disk holding `path`, as /proc/diskstats names it (a partition's parent)."""
    st = os.stat(path)
    sys_dev = os.path.realpath(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if os.path.exists(os.path.join(sys_dev, "partition")):
        sys_dev = os.path.dirname(sys_dev)
    return os.path.basename(sys_dev)


def diskstats(dev):
    for line in open("/proc/diskstats"):
        f = line.split()
        if f[2] == dev:
            return [int(x) for x in f[3:]]
    return None


def run(cmd):
    """compare_fio's run(), plus the device's IOPS, mean latency and queue over it."""
    a, t0 = (diskstats(DEVICE) if DEVICE else None), time.monotonic()
    out = run_child(cmd)
    b, secs = (diskstats(DEVICE) if DEVICE else None), time.monotonic() - t0
    LAST_DEVICE.clear()
    if a and b:
        d = [y - x for x, y in zip(a, b)]
        ios = d[0] + d[4]
        LAST_DEVICE.update({
            "dev_iops": ios / secs,
            # milliseconds spent on reads and writes, and time-weighted I/Os held
            "dev_lat_us": (d[3] + d[7]) * 1e3 / ios if ios else 0.0,
            "dev_queue": d[10] / 1e3 / secs,
        })
    return out


def iofleet(binary, target, extra, secs):
    cmd = [binary, "run", "easy-run-4k70r", "--target", target, "--engine", "io_uring",
           "--prepare", "none", "--warmup", "0s", f"--duration={secs}s", "--json", "--quiet",
           "--no-save"] + extra
    out, cpu, host = run(cmd)
    r = json.loads(out)
    s = r["summary"]
    ios = s["all"]["ios"]
    g = s.get("generator") or {}
    return {"iops": s["all"]["iops"], "p50_us": s["all"]["latency_us"]["p50"],
            "p99_us": s["all"]["latency_us"]["p99"], "cpu_us_per_io": cpu * 1e6 / ios,
            "host_us_per_io": host * 1e6 / ios, "gen_busy_pct": g.get("max_busy_pct"),
            "warnings": g.get("warnings", []), **LAST_DEVICE}


FIO = "fio"


def fio(path, rw, qd, secs, extra=()):
    cmd = [FIO, "--name=bench", "--output-format=json", "--lat_percentiles=1",
           "--time_based", f"--runtime={secs}", "--bs=4k", f"--iodepth={qd}", "--numjobs=1",
           "--randrepeat=0", "--norandommap", "--ioengine=io_uring", "--direct=1",
           f"--filename={path}", "--size=1g"]
    cmd += ["--rw=randread"] if rw == "randread" else ["--rw=randrw", "--rwmixread=70"]
    cmd += list(extra)
    out, cpu, host = run(cmd)
    job = json.loads(out)["jobs"][0]
    ios = job["read"]["total_ios"] + job["write"]["total_ios"]
    # fio keeps read and write percentiles apart; for the 70/30 mix take the reads' (the
    # larger share) as its p50/p99, which is what a user reading fio's output would quote.
    pct = job["read"]["lat_ns"]["percentile"]
    return {"iops": job["read"]["iops"] + job["write"]["iops"],
            "p50_us": pct.get("50.000000", 0) / 1e3, "p99_us": pct.get("99.000000", 0) / 1e3,
            "cpu_us_per_io": cpu * 1e6 / ios, "host_us_per_io": host * 1e6 / ios, **LAST_DEVICE}


def medians(runs, keys):
    return {k: statistics.median(r[k] for r in runs) for k in keys}


KEYS = ["iops", "p50_us", "p99_us", "cpu_us_per_io", "host_us_per_io"]
DEV_KEYS = ["dev_iops", "dev_lat_us", "dev_queue"]


def part_fio(args, binary, work):
    # iofleet lays out and fills its disk file; fio then runs on that same file.
    target = os.path.join(work, "t")
    run([binary, "run", "easy-run-4k70r", "--target", target, "--workers", "1", "--disks", "1",
         "--threads", "1", "--disk-size", "1g", "--prepare", "random", "--duration", "1s",
         "--warmup", "0s", "--quiet", "--no-save", "--json"])
    path = os.path.join(target, "w000-d000.iofleet")
    assert os.path.exists(path), path
    rows = []
    for rw in args.rw.split(","):
        for qd in [int(q) for q in args.qd.split(",")]:
            extra = ["--workers", "1", "--disks", "1", "--threads", "1", f"--qd={qd}",
                     "--disk-size", "1g", "--read-pct", "100" if rw == "randread" else "70"]
            configs = FIO_CONFIGS if args.all_fio else {"fio": []}
            tools = list(configs) + ["iofleet"]
            runs = {t: [] for t in tools}
            for _ in range(args.rounds):
                for t in tools + tools[::-1]:
                    if t == "iofleet":
                        runs[t].append(iofleet(binary, target, extra, args.seconds))
                    else:
                        opts = [o.format(qd=qd) for o in configs[t]] + args.fio_opt
                        runs[t].append(fio(path, rw, qd, args.seconds, opts))
            keys = KEYS + (DEV_KEYS if DEVICE else [])
            med = {t: medians(runs[t], keys) for t in tools}
            name = f"{'4K random read' if rw == 'randread' else '4K 70/30'} QD{qd}"
            i = med["iofleet"]
            row = {"case": name, **med, "runs": runs}
            for t in tools[:-1]:
                f = med[t]
                row[f"ratio to {t}"] = {k: i[k] / f[k] if f[k] else float("nan") for k in keys}
            best = max(tools[:-1], key=lambda t: med[t]["iops"])
            row["best fio"] = best
            row["ratio to best fio"] = i["iops"] / med[best]["iops"]
            rows.append(row)
            for t in tools:
                m = med[t]
                dev = (f" | device {m['dev_iops']:.0f} IOPS, {m['dev_lat_us']:.0f} µs, "
                       f"queue {m['dev_queue']:.1f}") if DEVICE else ""
                ratio = (f" ratio {i['iops'] / m['iops']:.3f}" if t != "iofleet" else " " * 12)
                print(f"{name:<22} {t:<9} IOPS {m['iops']:>9.0f}{ratio} | p50 {m['p50_us']:.0f} "
                      f"p99 {m['p99_us']:.0f} µs | CPU µs/IO {m['cpu_us_per_io']:.2f}{dev}",
                      flush=True)
            if len(tools) > 2:
                print(f"{name:<22} iofleet / best fio ({best}): {row['ratio to best fio']:.3f}",
                      flush=True)
    return rows


def part_shape(args, binary, work):
    target = os.path.join(work, "t")
    base = ["--workers", "2", "--disks", "8", "--disk-size", "64MiB"]
    run([binary, "run", "easy-run-4k70r", "--target", target, *base, "--prepare", "random",
         "--duration", "1s", "--warmup", "0s", "--quiet", "--no-save", "--json"])
    shapes = {"4 threads x QD1": ["--threads", "4", "--qd", "1"],
              "1 thread x QD4": ["--threads", "1", "--qd", "4"]}
    a, b = list(shapes)
    runs = {a: [], b: []}
    for _ in range(args.rounds):
        for name in [a, b, b, a]:
            runs[name].append(iofleet(binary, target, base + shapes[name], args.seconds))
    rows = []
    for name in shapes:
        m = medians(runs[name], KEYS)
        rows.append({"shape": name, "median": m, "runs": runs[name]})
        print(f"{name:<16} IOPS {m['iops']:>9.0f} p50 {m['p50_us']:.0f} µs p99 {m['p99_us']:.0f} µs "
              f"CPU µs/IO {m['cpu_us_per_io']:.2f} (host {m['host_us_per_io']:.2f}); runs: "
              + ", ".join(f"{r['iops']:.0f}" for r in runs[name]), flush=True)
    ma, mb = rows[0]["median"], rows[1]["median"]
    print(f"ratio {a} / {b}: IOPS {ma['iops'] / mb['iops']:.3f}, p99 {ma['p99_us'] / mb['p99_us']:.3f}, "
          f"CPU per I/O {ma['cpu_us_per_io'] / mb['cpu_us_per_io']:.3f}")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=["fio", "shape"])
    ap.add_argument("--iofleet", default="target/release/iofleet")
    ap.add_argument("--dir", default="/var/tmp", help="a directory on the filesystem to test")
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2, help="A B B A blocks per case")
    ap.add_argument("--out", default="")
    ap.add_argument("--fio-opt", action="append", default=[],
                    help="extra fio option, e.g. --fio-opt=--fixedbufs (repeatable)")
    ap.add_argument("--fio", default="fio", help="the fio binary to compare with")
    ap.add_argument("--rw", default="randread,randrw", help="fio part: randread and/or randrw")
    ap.add_argument("--qd", default="1,4,16,32", help="fio part: queue depths")
    ap.add_argument("--all-fio", action="store_true",
                    help="fio part: run fio in each of FIO_CONFIGS, not only as users run it")
    args = ap.parse_args()
    global FIO, DEVICE
    FIO = args.fio
    DEVICE = device_of(args.dir)
    if diskstats(DEVICE) is None:
        DEVICE = None
    if args.part == "fio":
        if shutil.which(FIO) is None:
            sys.exit(f"{FIO} is not installed (apt-get install fio)")
        print(subprocess.check_output([FIO, "--version"]).decode().strip(), flush=True)
    binary = os.path.abspath(args.iofleet)
    work = tempfile.mkdtemp(dir=args.dir, prefix="iofleet-bench-")
    try:
        rows = part_fio(args, binary, work) if args.part == "fio" else part_shape(args, binary, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = args.out or os.path.join(tempfile.gettempdir(), f"iofleet-real-disk-{args.part}.json")
    json.dump(rows, open(out, "w"), indent=2)
    print(f"runs written to {out}")


if __name__ == "__main__":
    main()
