#!/usr/bin/env python3
"""The cost of iofleet's write-through against fio's, on the same file of the root filesystem.

iofleet's `--write-through` (profile key `data.write_through`; what DISKSPD's `-Sh`/`-Sw`
map to, docs/diskspd.md) opens its disks with O_DSYNC, as fio's `--sync=dsync` does.
Both tools write 4 KiB at random offsets with O_DIRECT into one file (iofleet creates and
fills it; fio is pointed at its disk region, the first --size-mib MiB), with and without write-through, at queue depth 1 and 16,
on psync and io_uring:

- io_uring at qd N: one thread with N I/Os in flight (fio --iodepth=N; iofleet --qd N);
- psync at qd N: N threads of one synchronous write each (fio --numjobs=N --iodepth=1;
  iofleet --threads N --qd 1), the only way a synchronous engine keeps N in flight.

Runs are interleaved A B B A (fio, iofleet, iofleet, fio; --rounds times) and medians are
reported, because a filesystem's write latency drifts between runs. The table gives each
tool's IOPS and write p99 and iofleet/fio for each, then the cost of write-through for
each tool: with / without, IOPS and p99.

The file lives in a fresh directory under /var/tmp (--dir to choose another), which must
not be tmpfs: a memory filesystem has no cache to write through. No root needed; needs
fio. Run it on a quiet machine:

    python3 bench/writethrough.py --iofleet target/release/iofleet [--seconds 10] [--rounds 3]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no bench/__pycache__ from the import below
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fio import run  # noqa: E402  (stdout, child CPU, host busy) of a command

ENGINES = ["psync", "io_uring"]
DEPTHS = [1, 16]


def fs_type(path):
    """The filesystem type of the mount holding `path`, from /proc/mounts."""
    path = os.path.realpath(path)
    best, kind = "", "?"
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            mnt = fields[1].replace("\\040", " ")
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, kind = mnt, fields[2]
    return kind


def duration_arg(seconds):
    """Seconds as a duration both tools read: whole seconds, else milliseconds."""
    return f"{int(seconds)}s" if seconds == int(seconds) else f"{int(round(seconds * 1000))}ms"


def fio_case(fio, case, path, size_mib, seconds):
    jobs, depth = (case["qd"], 1) if case["engine"] == "psync" else (1, case["qd"])
    cmd = [
        fio, "--name=wt", "--output-format=json", "--lat_percentiles=1", "--group_reporting",
        "--time_based", f"--runtime={duration_arg(seconds)}", "--rw=randwrite", "--bs=4k",
        "--direct=1", f"--ioengine={case['engine']}", f"--iodepth={depth}", f"--numjobs={jobs}",
        f"--filename={path}", f"--size={size_mib}m", "--randrepeat=0", "--norandommap",
    ]
    if case["wt"]:
        cmd.append("--sync=dsync")
    out, _, _ = run(cmd)
    w = json.loads(out)["jobs"][0]["write"]
    return {"iops": w["iops"], "p99_us": w["lat_ns"]["percentile"].get("99.000000", 0) / 1000.0}


def iofleet_cmd(binary, case, target, size_mib, seconds):
    threads, qd = (case["qd"], 1) if case["engine"] == "psync" else (1, case["qd"])
    dur = duration_arg(seconds)
    cmd = [
        binary, "run", "--workers", "1", "--disks", "1", f"--disk-size={size_mib}m",
        f"--threads={threads}", f"--qd={qd}", "--bs", "4k", "--read-pct", "0",
        "--random-pct", "100", "--engine", case["engine"], "--target", target,
        "--prepare", "none", "--warmup", "0s", f"--duration={dur}",
        f"--interval={dur if seconds < 1 else '1s'}", "--no-save", "--json", "--quiet",
    ]
    if case["wt"]:
        cmd.append("--write-through")
    return cmd


def iofleet_case(binary, case, target, size_mib, seconds):
    out, _, _ = run(iofleet_cmd(binary, case, target, size_mib, seconds))
    w = json.loads(out)["summary"]["write"]
    return {"iops": w["iops"], "p99_us": w["latency_us"]["p99"]}


def the_file(binary, target, size_mib):
    """Have iofleet create and fill its one disk file under `target`; return its path."""
    fill = {"engine": "psync", "qd": 1, "wt": False}
    cmd = iofleet_cmd(binary, fill, target, size_mib, 0.1)
    cmd[cmd.index("none")] = "random"
    run(cmd)
    # The disk is the file's first size_mib MiB (iofleet keeps its fill marker after
    # them), which is all fio is given (--size).
    files = [os.path.join(d, f) for d, _, fs in os.walk(target) for f in fs]
    files = [f for f in files if os.path.getsize(f) >= size_mib << 20]
    if len(files) != 1:
        sys.exit(f"expected one disk file of {size_mib} MiB under {target}, found {files}")
    return files[0]


def ratio(a, b):
    return a / b if b else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iofleet", default="target/release/iofleet")
    ap.add_argument("--fio", default="fio", help="the fio binary to compare with")
    ap.add_argument("--seconds", type=float, default=10, help="per run (0.25 for a smoke check)")
    ap.add_argument("--rounds", type=int, default=1, help="A B B A blocks per case")
    ap.add_argument("--size-mib", type=int, default=1024, help="size of the file")
    ap.add_argument("--dir", default=None, help="parent of the scratch directory (default /var/tmp)")
    ap.add_argument("--only", default="", help="comma-separated cases, e.g. 'io_uring qd1'")
    ap.add_argument("--json", default="writethrough-results.json", help="where to write every run")
    args = ap.parse_args()
    if shutil.which(args.fio) is None:
        sys.exit(f"{args.fio} is not installed (apt-get install fio)")
    binary = os.path.abspath(args.iofleet)
    parent = args.dir or "/var/tmp"
    kind = fs_type(parent)
    if kind == "tmpfs":
        sys.exit(f"{parent} is tmpfs: there is no device cache to write through; give --dir")
    if fs_type("/tmp") == "tmpfs" and os.path.realpath(parent).startswith("/tmp"):
        sys.exit("/tmp is tmpfs here; use /var/tmp")
    same_fs = os.stat(parent).st_dev == os.stat("/").st_dev
    print(subprocess.check_output([args.fio, "--version"]).decode().strip(), flush=True)
    print(f"directory under {parent} ({kind}{', the root filesystem' if same_fs else ''})")

    cases = [
        {"name": f"{e} qd{q}", "engine": e, "qd": q} for e in ENGINES for q in DEPTHS
    ]
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in cases if c["name"] in keep]
        if not cases:
            sys.exit(f"--only {args.only}: no such case")
    tmp = tempfile.mkdtemp(prefix="iofleet-wt-", dir=parent)
    rows = []
    try:
        path = the_file(binary, tmp, args.size_mib)
        for case in cases:
            row = {"case": case["name"]}
            for wt in (False, True):
                c = dict(case, wt=wt)
                fio_runs, iof_runs = [], []
                for _ in range(args.rounds):
                    fio_runs.append(fio_case(args.fio, c, path, args.size_mib, args.seconds))
                    iof_runs.append(iofleet_case(binary, c, tmp, args.size_mib, args.seconds))
                    iof_runs.append(iofleet_case(binary, c, tmp, args.size_mib, args.seconds))
                    fio_runs.append(fio_case(args.fio, c, path, args.size_mib, args.seconds))
                mode = "wt" if wt else "base"
                for tool, runs in (("fio", fio_runs), ("iofleet", iof_runs)):
                    for k in ("iops", "p99_us"):
                        row[f"{tool}_{mode}_{k}"] = statistics.median(r[k] for r in runs)
                    row[f"{tool}_{mode}_runs"] = runs
            rows.append(row)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\n4 KiB random writes, O_DIRECT, {args.seconds} s per run, medians of "
          f"{2 * args.rounds} runs per tool (A B B A)")
    head = f"{'case':<13} {'mode':<13} {'fio IOPS':>10} {'iofleet':>10} {'ratio':>6}" \
           f" {'fio p99 µs':>11} {'iofleet':>9} {'ratio':>6}"
    print(head)
    for row in rows:
        for mode, label in (("base", "direct"), ("wt", "write-through")):
            f, i = (lambda k: row[f"fio_{mode}_{k}"]), (lambda k: row[f"iofleet_{mode}_{k}"])
            print(f"{row['case']:<13} {label:<13} {f('iops'):>10.0f} {i('iops'):>10.0f}"
                  f" {ratio(i('iops'), f('iops')):>6.2f} {f('p99_us'):>11.1f} {i('p99_us'):>9.1f}"
                  f" {ratio(i('p99_us'), f('p99_us')):>6.2f}")
    print("\ncost of write-through (with / without): IOPS and p99, each tool against itself")
    print(f"{'case':<13} {'fio IOPS':>9} {'iofleet':>8} {'fio p99':>8} {'iofleet':>8}")
    for row in rows:
        c = lambda tool, k: ratio(row[f"{tool}_wt_{k}"], row[f"{tool}_base_{k}"])
        print(f"{row['case']:<13} {c('fio', 'iops'):>9.2f} {c('iofleet', 'iops'):>8.2f}"
              f" {c('fio', 'p99_us'):>8.2f} {c('iofleet', 'p99_us'):>8.2f}")
    with open(args.json, "w") as f:
        json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
