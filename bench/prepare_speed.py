#!/usr/bin/env python3
"""How fast iofleet's prepare fills its disks, against fio's sequential write of the
same files (issue 23): for each shape (disks x size: 4 x 512 MiB and 16 x 64 MiB, or
`--shapes 8x128,...`) on a directory of the root filesystem, fresh files every run,
interleaved A B B A per round, the ends swapped every other round (B A A B):

* iofleet: `iofleet run easy-run-4k70r --target DIR --workers 1 --disks N --disk-size S
  ... --duration 1s`, its `run.prepare_s` (create, fill, sync, marker) over the bytes;
* fio: one job per file, O_DIRECT, io_uring, rw=write, in each of two configurations
  (1 MiB at QD 8, and 128 KiB at QD 32), the bytes over the longest job's runtime; the
  best of the two per round is fio's figure.

With `--baseline OTHER_BINARY` an earlier build runs in the same rounds too (between
iofleet and fio, mirrored), for a before/after in one set.

Medians over the rounds, and iofleet / best-fio. Beside each tool's own figure, one
neutral clock for both: the device under --dir is sampled in /proc/diskstats every 2 ms,
and its figure is the bytes over the window from the first to the last MiB of the fill
reaching the device (a tool's set-up and syncs fall outside it). From the repository
root, after `cargo build --release`:

    python3 bench/prepare_speed.py --dir /var/tmp --rounds 3
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import threading
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


def device_of(path):
    """The /proc/diskstats name of the block device holding `path`."""
    st = os.stat(path)
    link = os.readlink(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    return os.path.basename(link)


def sectors_written(dev):
    with open("/proc/diskstats") as f:
        for line in f:
            fields = line.split()
            if fields[2] == dev:
                return int(fields[9])
    raise SystemExit(f"{dev} is not in /proc/diskstats")


class Window:
    """Samples the device's written sectors while a tool runs; `mb_s(total)` is the
    total over the time from the first MiB written to the last MiB of `total`."""

    def __init__(self, dev):
        self.dev, self.samples, self.done = dev, [], False
        self.thread = threading.Thread(target=self.sample)

    def sample(self):
        while not self.done:
            self.samples.append((time.monotonic(), sectors_written(self.dev) * 512))
            time.sleep(0.002)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_):
        time.sleep(0.05)
        self.done = True
        self.thread.join()

    def mb_s(self, total):
        base = self.samples[0][1]
        t0 = next(t for t, b in self.samples if b - base > 2**20)
        t1 = next(t for t, b in self.samples if b - base >= total - 2**20)
        return (total - 2**21) / (t1 - t0) / 1e6


def iofleet(binary, d, disks, mib):
    fresh(d)
    with Window(DEV) as w:
        out = subprocess.run([binary, "run", "easy-run-4k70r", "--target", d, "--workers", "1", "--disks", str(disks),
                          "--disk-size", f"{mib}m", "--threads", "1", "--qd", "1", "--duration", "1s",
                              "--warmup", "0s", "--no-save", "--quiet", "--json"],
                             check=True, capture_output=True, text=True).stdout
    s = json.loads(out)["run"]["prepare_s"]
    total = disks * mib * 2**20
    return total / s / 1e6, w.mb_s(total)


def fio(fio_bin, d, disks, mib, bs, qd):
    fresh(d)
    args = [fio_bin, "--output-format=json", "--ioengine=io_uring", "--direct=1", "--rw=write", f"--bs={bs}",
            f"--iodepth={qd}", f"--size={mib}m"]
    for k in range(disks):
        args += [f"--name=f{k}", f"--filename={d}/fio-{k}"]
    with Window(DEV) as w:
        r = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    longest_ms = max(j["write"]["runtime"] for j in r["jobs"])
    total = disks * mib * 2**20
    return total / (longest_ms / 1e3) / 1e6, w.mb_s(total)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/iofleet"))
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--baseline", help="an earlier iofleet build to run in the same rounds")
    ap.add_argument("--shapes", default=",".join(f"{n}x{m}" for n, m in SHAPES),
                    help="disks x MiB each, comma-separated (default: %(default)s)")
    a = ap.parse_args()
    try:
        shapes = [tuple(int(v) for v in x.split("x")) for x in a.shapes.split(",")]
        assert all(len(x) == 2 and min(x) > 0 for x in shapes)
    except (ValueError, AssertionError):
        raise SystemExit(f"--shapes {a.shapes!r}: give DISKSxMIB[,DISKSxMIB...], e.g. 16x64")
    d = os.path.join(a.dir, "iofleet-prepare-bench")
    global DEV
    DEV = device_of(a.dir)
    try:
        for disks, mib in shapes:
            ours, theirs, theirs_dev, base = [], [], [], []
            for r in range(a.rounds):
                # A B B A, the ends swapped every other round (B A A B) so that no tool
                # always holds a round's first and last places: on this disk a round's
                # first runs were slower than its last in most rounds, whoever ran them.
                # fio's two configurations run in one place, reversed in the mirror.
                # Each run gives (its own figure, the device's).
                half = ["ours", "base", "fio"] if r % 2 == 0 else ["fio", "base", "ours"]
                got = {"ours": [], "base": [], "fio": []}
                for k, tool in enumerate(half + half[::-1]):
                    if tool == "ours":
                        got[tool].append(iofleet(a.binary, d, disks, mib))
                    elif tool == "base" and a.baseline:
                        got[tool].append(iofleet(a.baseline, d, disks, mib))
                    elif tool == "fio":
                        order = FIO_CONFIGS if k < len(half) else FIO_CONFIGS[::-1]
                        got[tool].append({c: fio(a.fio, d, disks, mib, *c) for c in order})
                ours += got["ours"]
                base += got["base"]
                # fio's better configuration, by each clock.
                for slot in got["fio"]:
                    theirs.append(max(v[0] for v in slot.values()))
                    theirs_dev.append(max(v[1] for v in slot.values()))
                first, second = got["fio"]
                print(f"  {disks} x {mib} MiB, round {r + 1} ({'iofleet' if r % 2 == 0 else 'fio'} first): "
                      + (f"baseline {base[-2][0]:.0f} {base[-1][0]:.0f} MB/s "
                         f"(device {base[-2][1]:.0f} {base[-1][1]:.0f}); " if a.baseline else "")
                      + f"iofleet {ours[-2][0]:.0f} {ours[-1][0]:.0f} MB/s "
                      f"(device {ours[-2][1]:.0f} {ours[-1][1]:.0f}); fio "
                      + ", ".join(f"{bs} QD{qd} {first[(bs, qd)][0]:.0f}/{second[(bs, qd)][0]:.0f} "
                                  f"(device {first[(bs, qd)][1]:.0f}/{second[(bs, qd)][1]:.0f})"
                                  for bs, qd in FIO_CONFIGS),
                      flush=True)
            o, t = statistics.median(x[0] for x in ours), statistics.median(theirs)
            od, td = statistics.median(x[1] for x in ours), statistics.median(theirs_dev)
            print(f"{disks} x {mib} MiB: iofleet {o:.0f} MB/s, best fio {t:.0f} MB/s, ratio {o / t:.3f}; "
                  f"at the device: iofleet {od:.0f}, fio {td:.0f}, ratio {od / td:.3f}", flush=True)
            if base:
                b, bd = statistics.median(x[0] for x in base), statistics.median(x[1] for x in base)
                print(f"{disks} x {mib} MiB: baseline {b:.0f} MB/s, ratio to best fio {b / t:.3f}; "
                      f"at the device {bd:.0f}, ratio {bd / td:.3f}", flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
