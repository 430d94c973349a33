#!/usr/bin/env python3
"""Fuzz iofleet's parsers: each fuzz target of fuzz/ for --seconds (default 600), at most
--jobs at a time, then one Markdown row per target for bench/README.md.

A target reads its committed seeds (fuzz/corpus/TARGET/, only read) and grows its own
corpus in fuzz/work/TARGET/ (not committed), so a second run goes on from the first.
The build has debug assertions and overflow checks on (`--debug-assertions`): an
arithmetic overflow is a crash, as it is in the debug-built test suite. Each run is
`cargo +nightly fuzz run TARGET -- -max_total_time=N -timeout=10 -rss_limit_mb=2048`
under `nice -n 10`: an input that takes 10 s or 2 GiB is a hang or a memory blow-up,
reported as a crash. The targets are the ones `cargo fuzz list` names, so a new target
needs no line here. A crash leaves its input in fuzz/artifacts/TARGET/; replay it with
`cargo +nightly fuzz run --debug-assertions TARGET fuzz/artifacts/TARGET/crash-...`.

Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Usage:

    python3 bench/fuzz.py [--seconds 600] [--jobs 2] [TARGET ...]
"""

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

FUZZ = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz")
CARGO = ["cargo", "+nightly", "fuzz"]
FLAGS = ["--debug-assertions"]


def cargo_env():
    """The fuzz workspace builds into fuzz/target, whatever the caller's target dir."""
    env = dict(os.environ)
    env.pop("CARGO_TARGET_DIR", None)
    return env


def targets():
    out = subprocess.run(CARGO + ["list"], cwd=FUZZ, env=cargo_env(), check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.split()


def dir_size(path):
    files = [os.path.join(path, f) for f in os.listdir(path)]
    return len(files), sum(os.path.getsize(f) for f in files)


def run(target, seconds):
    """One target's run: its final libFuzzer figures and whether it ended clean."""
    work = os.path.join(FUZZ, "work", target)
    seeds = os.path.join(FUZZ, "corpus", target)
    os.makedirs(work, exist_ok=True)
    corpora = [work] + ([seeds] if os.path.isdir(seeds) else [])
    log_path = os.path.join(FUZZ, "work", f"{target}.log")
    cmd = ["nice", "-n", "10"] + CARGO + ["run"] + FLAGS + [target] + corpora + [
        "--", f"-max_total_time={seconds}", "-timeout=10", "-rss_limit_mb=2048",
        "-print_final_stats=1"]
    start = time.monotonic()
    with open(log_path, "w") as log:
        code = subprocess.run(cmd, cwd=FUZZ, env=cargo_env(), stdout=log,
                              stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - start
    text = open(log_path, errors="replace").read()
    stat = dict(re.findall(r"^stat::(\w+):\s+(\d+)", text, re.M))
    cov = re.findall(r" cov: (\d+) ft: (\d+)", text)
    files, size = dir_size(work)
    artifacts = re.findall(r"Test unit written to (\S+)", text)
    return {
        "target": target,
        "code": code,
        "wall": wall,
        "execs": int(stat.get("number_of_executed_units", 0)),
        "exec_s": int(stat.get("average_exec_per_sec", 0)),
        "peak_mb": int(stat.get("peak_rss_mb", 0)),
        "cov": cov[-1] if cov else ("?", "?"),
        "files": files,
        "kib": size / 1024,
        "artifacts": artifacts,
        "log": log_path,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=int, default=600)
    p.add_argument("--jobs", type=int, default=2, help="targets run at once")
    p.add_argument("target", nargs="*", help="default: every target of fuzz/")
    a = p.parse_args()
    names = a.target or targets()
    subprocess.run(["nice", "-n", "10"] + CARGO + ["build"] + FLAGS, cwd=FUZZ,
                   env=cargo_env(), check=True)
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        results = list(pool.map(lambda t: run(t, a.seconds), names))
    print(f"\n{a.seconds} s per target, {a.jobs} at a time, nice 10:\n")
    print("| target | executions | exec/s | corpus (files / KiB) | coverage (cov / ft) "
          "| peak RSS | result |")
    print("|---|---:|---:|---:|---:|---:|---|")
    failed = False
    for r in results:
        ok = r["code"] == 0 and not r["artifacts"]
        failed |= not ok
        result = "no crash, no hang" if ok else f"exit {r['code']}: {', '.join(r['artifacts']) or r['log']}"
        print(f"| {r['target']} | {r['execs']:,} | {r['exec_s']:,} | {r['files']} / {r['kib']:.0f} "
              f"| {r['cov'][0]} / {r['cov'][1]} | {r['peak_mb']} MB | {result} |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
