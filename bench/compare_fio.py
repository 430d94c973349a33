#!/usr/bin/env python3
"""Compare iofleet with fio on the same target in the same session.

Cases: 4K random read at QD1 and QD32, 4K 70/30 random at QD32 on a loop device over a
memory-backed file (io_uring, O_DIRECT, both tools), and the null engines at QD1 and
QD32. Runs are interleaved A B B A (fio, iofleet, iofleet, fio; repeated --rounds
times) and medians are reported, because fio against itself varies 5-20% between runs.

CPU per I/O is measured the same way for both tools: the child's rusage (user + system,
all its threads, including io_uring workers) from wait4, divided by the I/Os it
completed; and whole-host busy CPU from /proc/stat over the run (includes the loop
device's kernel thread). Needs root (losetup) and fio. Usage:

    sudo python3 bench/compare_fio.py --iofleet target/release/iofleet [--seconds 10] [--rounds 1]
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


def host_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    idle = v[3] + v[4]
    return sum(v) - idle


def run(cmd, env=None):
    """Run cmd (in `env`, else this environment), return (stdout, cpu seconds of the
    child, host busy seconds)."""
    hz = os.sysconf("SC_CLK_TCK")
    h0 = host_busy()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    h1 = host_busy()
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{err.decode()}")
    return out, ru.ru_utime + ru.ru_stime, (h1 - h0) / hz


FIO = "fio"


def fio_case(case, target, secs):
    cmd = [
        FIO, "--name=bench", "--output-format=json", "--lat_percentiles=1",
        "--time_based", f"--runtime={secs}", "--bs=4k", f"--iodepth={case['qd']}",
        "--numjobs=1", "--randrepeat=0", "--norandommap",
    ]
    if case["rw"] == "randread":
        cmd.append("--rw=randread")
    else:
        cmd += ["--rw=randrw", "--rwmixread=70"]
    if case["engine"] == "null":
        cmd += ["--ioengine=null", "--size=1g"]
    else:
        cmd += ["--ioengine=io_uring", "--direct=1", f"--filename={target}"]
    out, cpu, host = run(cmd)
    job = json.loads(out)["jobs"][0]
    ios = job["read"]["total_ios"] + job["write"]["total_ios"]
    iops = job["read"]["iops"] + job["write"]["iops"]
    p99 = job["read"]["lat_ns"]["percentile"].get("99.000000", 0) / 1000.0
    return {"iops": iops, "p99_us": p99, "cpu_us_per_io": cpu * 1e6 / ios, "host_us_per_io": host * 1e6 / ios}


def iofleet_case(binary, case, target, secs):
    cmd = [
        binary, "run", "diskspd-4k-read", "--workers", "1", "--disks", "1", "--threads", "1",
        f"--qd={case['qd']}", "--bs", "4k", "--random-pct", "100",
        "--read-pct", "100" if case["rw"] == "randread" else "70",
        "--prepare", "none", "--warmup", "0s", f"--duration={secs}s", "--json", "--quiet",
    ]
    if case["engine"] == "null":
        cmd += ["--engine", "null"]
    else:
        cmd += ["--engine", "io_uring", "--target", target]
    out, cpu, host = run(cmd)
    r = json.loads(out)
    s = r["summary"]
    ios = s["all"]["ios"]
    return {"iops": s["all"]["iops"], "p99_us": s["read"]["latency_us"]["p99"],
            "cpu_us_per_io": cpu * 1e6 / ios, "host_us_per_io": host * 1e6 / ios}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iofleet", default="target/release/iofleet")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1, help="A B B A blocks per case")
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--fio", default="fio", help="the fio binary to compare with")
    args = ap.parse_args()
    global FIO
    FIO = args.fio
    if shutil.which(FIO) is None:
        sys.exit(f"{FIO} is not installed (apt-get install fio)")
    print(subprocess.check_output([FIO, "--version"]).decode().strip(), flush=True)
    binary = os.path.abspath(args.iofleet)

    tmp = tempfile.mkdtemp(dir="/dev/shm")
    img = os.path.join(tmp, "bench.img")
    # Random content, so reads hit real pages of the backing file.
    with open(img, "wb") as f:
        for _ in range(args.size_mib):
            f.write(os.urandom(1 << 20))
    loop = subprocess.check_output(["losetup", "--find", "--show", img]).decode().strip()
    cases = [
        {"name": "loop randread qd1", "engine": "io_uring", "rw": "randread", "qd": 1},
        {"name": "loop randread qd32", "engine": "io_uring", "rw": "randread", "qd": 32},
        {"name": "loop 70/30 qd32", "engine": "io_uring", "rw": "randrw", "qd": 32},
        {"name": "null randread qd1", "engine": "null", "rw": "randread", "qd": 1},
        {"name": "null randread qd32", "engine": "null", "rw": "randread", "qd": 32},
    ]
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in cases if c["name"] in keep]
    rows = []
    try:
        for case in cases:
            fio_runs, iof_runs = [], []
            for _ in range(args.rounds):
                fio_runs.append(fio_case(case, loop, args.seconds))
                iof_runs.append(iofleet_case(binary, case, loop, args.seconds))
                iof_runs.append(iofleet_case(binary, case, loop, args.seconds))
                fio_runs.append(fio_case(case, loop, args.seconds))
            med = lambda runs, k: statistics.median(r[k] for r in runs)
            row = {"case": case["name"]}
            for k in ["iops", "p99_us", "cpu_us_per_io", "host_us_per_io"]:
                row["fio_" + k] = med(fio_runs, k)
                row["iofleet_" + k] = med(iof_runs, k)
                row["ratio_" + k] = row["iofleet_" + k] / row["fio_" + k] if row["fio_" + k] else float("nan")
            row["runs"] = {"fio": fio_runs, "iofleet": iof_runs}
            rows.append(row)
            print(
                f"{case['name']:<20} IOPS fio {row['fio_iops']:>10.0f} iofleet {row['iofleet_iops']:>10.0f} "
                f"ratio {row['ratio_iops']:.3f} | p99 µs {row['fio_p99_us']:.1f} / {row['iofleet_p99_us']:.1f} | "
                f"CPU µs/IO {row['fio_cpu_us_per_io']:.3f} / {row['iofleet_cpu_us_per_io']:.3f} "
                f"(ratio {row['ratio_cpu_us_per_io']:.2f}) | host µs/IO {row['fio_host_us_per_io']:.3f} / "
                f"{row['iofleet_host_us_per_io']:.3f}",
                flush=True,
            )
    finally:
        subprocess.call(["losetup", "-d", loop])
        shutil.rmtree(tmp, ignore_errors=True)
    json.dump(rows, open("bench-results.json", "w"), indent=2)


if __name__ == "__main__":
    main()
