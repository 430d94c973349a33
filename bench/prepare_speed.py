#!/usr/bin/env python3
"""How fast iofleet's prepare fills its disks, against fio's sequential write of the
same files (issue 23): for each shape (disks x size) on a directory of the root
filesystem, fresh files every run, interleaved A B B A per round:

* iofleet: `iofleet run easy-run-4k70r --target DIR --workers 1 --disks N --disk-size S
  ... --duration 1s`, its `run.prepare_s` (create, fill, sync, marker) over the bytes;
* fio: one job per file, O_DIRECT, io_uring, rw=write, in each of two configurations
  (1 MiB at QD 8, and 128 KiB at QD 32), the bytes over the longest job's runtime; the
  best of the two per round is fio's figure.

Medians over the rounds, and iofleet / best-fio. From the repository root, after
`cargo build --release`:

    python3 bench/prepare_speed.py --dir /var/tmp --rounds 3
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = [(4, 512), (16, 64)]  # disks, MiB each
FIO_CONFIGS = [("1m", 8), ("128k", 32)]


def fresh(d):
    # The last run's files go, and the filesystem is given time to settle (freeing 2 GiB
    # of extents goes on after `sync` returns), so that no run pays for its predecessor.
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    subprocess.run(["sync"], check=True)
    time.sleep(3)


def iofleet(binary, d, disks, mib):
    fresh(d)
    out = subprocess.run([binary, "run", "easy-run-4k70r", "--target", d, "--workers", "1", "--disks", str(disks),
                          "--disk-size", f"{mib}m", "--threads", "1", "--qd", "1", "--duration", "1s",
                          "--warmup", "0s", "--no-save", "--quiet", "--json"],
                         check=True, capture_output=True, text=True).stdout
    s = json.loads(out)["run"]["prepare_s"]
    return disks * mib * 2**20 / s / 1e6


def fio(fio_bin, d, disks, mib, bs, qd):
    fresh(d)
    args = [fio_bin, "--output-format=json", "--ioengine=io_uring", "--direct=1", "--rw=write", f"--bs={bs}",
            f"--iodepth={qd}", f"--size={mib}m"]
    for k in range(disks):
        args += [f"--name=f{k}", f"--filename={d}/fio-{k}"]
    r = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    longest_ms = max(j["write"]["runtime"] for j in r["jobs"])
    return disks * mib * 2**20 / (longest_ms / 1e3) / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/iofleet"))
    ap.add_argument("--fio", default="fio")
    a = ap.parse_args()
    d = os.path.join(a.dir, "iofleet-prepare-bench")
    try:
        for disks, mib in SHAPES:
            ours, theirs = [], []
            for _ in range(a.rounds):
                # A B B A: iofleet, fio configs, fio configs reversed, iofleet.
                ours.append(iofleet(a.binary, d, disks, mib))
                first = {c: fio(a.fio, d, disks, mib, *c) for c in FIO_CONFIGS}
                second = {c: fio(a.fio, d, disks, mib, *c) for c in reversed(FIO_CONFIGS)}
                ours.append(iofleet(a.binary, d, disks, mib))
                theirs.append(max(first.values()))
                theirs.append(max(second.values()))
                print(f"  {disks} x {mib} MiB: iofleet {ours[-2]:.0f} {ours[-1]:.0f} MB/s; fio "
                      + ", ".join(f"{bs} QD{qd} {first[(bs, qd)]:.0f}/{second[(bs, qd)]:.0f}" for bs, qd in FIO_CONFIGS),
                      flush=True)
            o, t = statistics.median(ours), statistics.median(theirs)
            print(f"{disks} x {mib} MiB: iofleet {o:.0f} MB/s, best fio {t:.0f} MB/s, ratio {o / t:.3f}", flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
