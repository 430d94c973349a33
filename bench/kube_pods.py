#!/usr/bin/env python3
"""What one controller spends per pod of a Kubernetes fleet, measured against the
project's stand-in kubectl (crates/cli/tests/support/kubectl; needs root, as its pods
are chroots in private mount namespaces on this machine). For each pod count: the
controller's peak resident memory and threads, and the run's start skew. The stand-in's
own processes (one Python process per exec session) and the agents run on this machine
too and are not counted: they stand for the real kubectl processes and the pods, which a
real cluster puts elsewhere (a real kubectl's own memory is not measured here).

    sudo python3 bench/kube_pods.py [--pods 1,8,16,32] [--rate 1000] [--binary target/release/iofleet]
                                    [--mode job]

`--mode job` runs the fleet as an Indexed Job whose pods' agents join the controller on
127.0.0.1 (docs/kubernetes.md, "Job mode"): no kubectl exec session at all, one socket
per pod; the stand-in runs each pod's `iofleet agent --join` itself.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def peak(pid):
    rss = threads = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
    except FileNotFoundError:
        pass
    return rss, threads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", default="1,8,16,32")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/iofleet"))
    ap.add_argument("--mode", choices=["statefulset", "job"], default="statefulset")
    ap.add_argument("--rate", help="IOPS per worker (--rate), so the agents do not compete for this machine's CPUs")
    a = ap.parse_args()
    print(f"mode {a.mode}")
    print("pods  controller peak RSS MiB  threads  kubectl sessions  ready s  start skew ms")
    for n in [int(x) for x in a.pods.split(",")]:
        with tempfile.TemporaryDirectory(prefix="iofleet-kube-bench-") as d:
            bindir = os.path.join(d, "bin")
            os.mkdir(bindir)
            os.symlink(os.path.join(ROOT, "crates/cli/tests/support/kubectl"), os.path.join(bindir, "kubectl"))
            kube = os.path.join(d, "kube.toml")
            with open(kube, "w") as f:
                f.write(f'[kubernetes]\nname = "bench"\npods = {n}\nspread = "none"\n')
                if a.mode == "job":
                    f.write('mode = "job"\ncontroller = "127.0.0.1:0"\nimage = "iofleet:bench"\n')
            os.makedirs(os.path.join(d, "state"))
            with open(os.path.join(d, "state", "config.json"), "w") as f:
                json.dump({"current-context": "stand-in", "contexts": {"stand-in": {"nodes": n}},
                           "iofleet": {"iofleet:bench": os.path.abspath(a.binary)}}, f)
            env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", FAKE_KUBE_STATE=os.path.join(d, "state"),
                       FAKE_KUBE_NODES=str(n), XDG_DATA_HOME=d)
            out_f = open(os.path.join(d, "out.json"), "w+")
            err_f = open(os.path.join(d, "err.txt"), "w+")
            p = subprocess.Popen([a.binary, "run", "easy-run-4k70r", "--hosts", kube, "--engine", "null", "--disks", "1",
                                  "--duration", "5s", "--warmup", "0s", "--no-save", "--output-format", "json", "--quiet"]
                                 + (["--rate", a.rate] if a.rate else []),
                                 env=env, stdout=out_f, stderr=err_f, text=True)
            top_rss = top_threads = 0
            while p.poll() is None:
                rss, threads = peak(p.pid)
                top_rss, top_threads = max(top_rss, rss), max(top_threads, threads)
                time.sleep(0.05)
            out_f.seek(0)
            err_f.seek(0)
            out, err = out_f.read(), err_f.read()
            if p.returncode != 0:
                raise SystemExit(f"{n} pods: exit {p.returncode}: {err}")
            r = json.loads(out)
            k = r["run"]["kubernetes"]
            sessions = 0 if a.mode == "job" else n
            print(f"{n:4}  {top_rss / 1024:23.1f}  {top_threads:7}  {sessions:16}  {k['ready_after_s']:7.1f}  {r['run']['start_skew_ms']:13.2f}")


if __name__ == "__main__":
    main()
