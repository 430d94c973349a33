#!/usr/bin/env python3
"""A fio job file run by fio and by `iofleet run JOB` on the same file: agreement.

Each job file of bench/jobs/ (or those given) is run on one file of a directory of the
root filesystem (``--dir``, never a device), interleaved A B B A (fio, iofleet, iofleet,
fio; ``--rounds`` times), and the medians of IOPS (read + write), p50 and p99 of the
reads' total latency (fio's ``lat_ns``, which is what iofleet times) are printed with
the ratio iofleet / fio. The issue's bar: IOPS within 5%, p50 within 15%.

Both tools read the job file as written. The file they run on is iofleet's own disk file:
iofleet lays it out and fills it first (one short run with ``--prepare random``), then
every measured iofleet run uses it with ``--prepare none``, and fio gets its path through
``${BENCH_FILE}`` in the job file's ``filename=`` (iofleet makes its disks under
``--target`` and ignores ``filename``, with a notice). ``BENCH_SIZE`` and
``BENCH_SECONDS`` set ``size`` and ``runtime``. iofleet runs with ``--fio-ignore
lat_percentiles`` (a fio output option). The child's CPU per I/O (rusage over wait4,
every thread) is printed too. Usage, from the repository root after ``cargo build
--release``:

    python3 bench/fio_jobs.py --dir /var/tmp --seconds 10 --rounds 3 [--size 1g] [JOB.fio ...]
"""

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fio import run as run_child  # noqa: E402  (the loop-device bench's CPU accounting)

HERE = os.path.dirname(os.path.abspath(__file__))


def env_for(args, path):
    e = dict(os.environ)
    e.update(BENCH_FILE=path, BENCH_SIZE=args.size, BENCH_SECONDS=str(args.seconds))
    return e


def fio(args, job, env):
    # One figure for the whole file: with numjobs > 1 fio reports each job apart unless
    # its jobs are grouped (the first job alone would be a fraction of the load).
    cmd = [args.fio, "--output-format=json", "--group_reporting", job]
    out, cpu, _ = run_child(cmd, env)
    jobs = json.loads(out)["jobs"]
    if len(jobs) != 1:
        raise SystemExit(f"{job}: fio reported {len(jobs)} groups; give the file one group")
    j = jobs[0]
    ios = j["read"]["total_ios"] + j["write"]["total_ios"]
    pct = j["read"]["lat_ns"]["percentile"]
    return {"iops": j["read"]["iops"] + j["write"]["iops"],
            "p50_us": pct["50.000000"] / 1e3, "p99_us": pct["99.000000"] / 1e3,
            "cpu_us_per_io": cpu * 1e6 / ios}


def iofleet(args, job, target, env, prepare="none"):
    cmd = [args.iofleet, "run", job, "--target", target, "--fio-ignore", "lat_percentiles",
           "--prepare", prepare, "--json", "--quiet", "--no-save"]
    out, cpu, _ = run_child(cmd, env)
    s = json.loads(out)["summary"]
    ios = s["all"]["ios"]
    lat = s["read"]["latency_us"]
    return {"iops": s["all"]["iops"], "p50_us": lat["p50"], "p99_us": lat["p99"],
            "cpu_us_per_io": cpu * 1e6 / ios}


KEYS = ["iops", "p50_us", "p99_us", "cpu_us_per_io"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jobs", nargs="*", help="job files (default: bench/jobs/*.fio)")
    ap.add_argument("--iofleet", default="target/release/iofleet")
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--dir", default="/var/tmp", help="a directory of the filesystem to test")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1, help="A B B A blocks per job file")
    ap.add_argument("--size", default="1g", help="the file's size (BENCH_SIZE)")
    ap.add_argument("--out", default=None, help="JSON of every run (default: in the temp dir)")
    args = ap.parse_args()
    if shutil.which(args.fio) is None:
        sys.exit(f"{args.fio} is not installed (apt-get install fio)")
    args.iofleet = os.path.abspath(args.iofleet)
    jobs = args.jobs or sorted(glob.glob(os.path.join(HERE, "jobs", "*.fio")))
    print(subprocess.check_output([args.fio, "--version"]).decode().strip(), flush=True)

    work = tempfile.mkdtemp(prefix="iofleet-fio-jobs-", dir=args.dir)
    target = os.path.join(work, "t")
    path = os.path.join(target, "w000-d000.iofleet")
    rows = []
    try:
        for job in jobs:
            env = env_for(args, path)
            # Lay out and fill the file once (iofleet's own disk file, the job's size).
            lay = argparse.Namespace(**{**vars(args), "seconds": 1})
            iofleet(lay, job, target, env_for(lay, path), prepare="random")
            assert os.path.exists(path), path
            runs = {"fio": [], "iofleet": []}
            for _ in range(args.rounds):
                for tool in ["fio", "iofleet", "iofleet", "fio"]:
                    runs[tool].append(fio(args, job, env) if tool == "fio"
                                      else iofleet(args, job, target, env))
            med = {t: {k: statistics.median(r[k] for r in runs[t]) for k in KEYS} for t in runs}
            ratio = {k: med["iofleet"][k] / med["fio"][k] if med["fio"][k] else float("nan")
                     for k in KEYS}
            name = os.path.basename(job)
            rows.append({"job": name, **med, "ratio": ratio, "runs": runs})
            f, i = med["fio"], med["iofleet"]
            print(f"{name:<24} IOPS fio {f['iops']:>9.0f} iofleet {i['iops']:>9.0f} "
                  f"ratio {ratio['iops']:.3f} | read p50 µs {f['p50_us']:.1f} / {i['p50_us']:.1f} "
                  f"ratio {ratio['p50_us']:.3f} | p99 µs {f['p99_us']:.1f} / {i['p99_us']:.1f} | "
                  f"CPU µs/IO {f['cpu_us_per_io']:.2f} / {i['cpu_us_per_io']:.2f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = args.out or os.path.join(tempfile.gettempdir(), "iofleet-fio-jobs.json")
    with open(out, "w") as f:
        json.dump(rows, f, indent=2)
    print(f"runs: {out}")


if __name__ == "__main__":
    main()
