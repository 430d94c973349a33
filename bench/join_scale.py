#!/usr/bin/env python3
"""Agents that join, at scale: N `iofleet agent --join-file` processes on this machine
join one `iofleet run --listen 127.0.0.1:0 --expect N` (one null-engine worker per
agent at `--rate` IOPS, 1 s intervals), as a launcher would start them. Reports:

- the time from the first agent's start to "N agent(s) joined" on the controller's
  stderr, and to the first merged interval (the controller's /metrics page,
  `iofleet_interval_index`, polled every 0.2 s);
- each measured interval's lag behind the most timely one (as bench/fleet_scale.py);
- the controller's own peak RSS (VmHWM) and CPU (its own rusage, from wait4), and the
  agents' summed peak RSS (which counts the binary's shared pages once per process) and
  summed PSS (shared pages split among them: what they really hold);
- from the result: hosts, hosts lost, stragglers, start skew, exact I/O count.

    python3 bench/join_scale.py --iofleet target/release/iofleet --agents 1000 --seconds 20
    python3 bench/join_scale.py --agents 10000 --per-process 500 --interval 5s --rate 1

`--per-process K` runs K agents in each process (`iofleet agent --agents K`), each with
its own connection and rank.

`--relay-fanout K` puts the agents in a tree (`run --relay-fanout K --relay-dedicated`):
every (K+1)-th rank relays for the K after it and runs no worker, so the fleet has one
worker per agent below a relay. `--replay` makes the agents send fixed, pre-encoded intervals instead of
running I/O (`iofleet agent --replay`): the machine's two cores then measure the
controller and the relays, not fifty thousand I/O threads, and the merged result is
known exactly — every count is checked against it, and the latency figures against a
one-agent run of the same replay (the oracle: every worker replays the same sample).

    python3 bench/join_scale.py --agents 10000 --per-process 500 --interval 5s --rate 1 \
        --seconds 30 --relay-fanout 100 --replay
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from fleet_scale import free_port, interval_index


def vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kib(pid):
    """Proportional set size: shared pages (the binary's text) split among the processes
    that map them, so a sum over processes is what they really hold."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iofleet", default="target/release/iofleet")
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--rate", type=int, default=10, help="IOPS per agent (one worker each)")
    ap.add_argument("--interval", default="1s")
    ap.add_argument("--per-process", type=int, default=1,
                    help="agents per process (`iofleet agent --agents K`), each with its own "
                         "connection and rank")
    ap.add_argument("--relay-fanout", type=int, default=0,
                    help="agents below each relay (`run --relay-fanout K`); 0: no relays")
    ap.add_argument("--ramp", type=float, default=0.0,
                    help="spread the agent processes' starts over this many seconds (a "
                         "fleet of machines starts its agents on their own cores; on two "
                         "cores, tens of thousands of TLS handshakes at one instant starve "
                         "each other)")
    ap.add_argument("--virtual-leaves", action="store_true",
                    help="with --relay-fanout: start only the relays, each sending what its "
                         "agents below would send if they replayed (`agent --replay-below`): "
                         "the controller gets the frames of the whole fleet from a machine "
                         "that could not start it")
    ap.add_argument("--replay", action="store_true",
                    help="agents send fixed intervals instead of running I/O (`agent --replay`)")
    args = ap.parse_args()
    relays = (-(-args.agents // (args.relay_fanout + 1))) if args.relay_fanout else 0
    workers = args.agents - relays
    if args.virtual_leaves and not args.relay_fanout:
        sys.exit("--virtual-leaves needs --relay-fanout")
    if args.virtual_leaves:
        args.replay = True
    if args.agents % args.per_process:
        sys.exit("--agents must be a multiple of --per-process")
    procs = args.agents // args.per_process
    # Each agent has a handful of threads: 10,000 need more process ids than Linux's
    # default 32,768.
    threads = args.agents * 6 + 1000
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    if threads > pid_max:
        try:
            with open("/proc/sys/kernel/pid_max", "w") as f:
                f.write(str(min(4194304, max(threads * 2, pid_max))))
            print(f"raised kernel.pid_max from {pid_max} for about {threads} threads")
        except OSError as e:
            sys.exit(f"about {threads} threads need kernel.pid_max above {pid_max}: {e}")
    binary = os.path.abspath(args.iofleet)
    tmp = tempfile.mkdtemp()
    join_file = os.path.join(tmp, "join.json")
    port = free_port()
    interval_s = float(args.interval.rstrip("s"))
    # Room for 1,000 processes' descriptors and threads.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # Evenly spaced arrivals: every agent's count is exact (rate × seconds), and none
    # is a straggler by the luck of a Poisson draw.
    profile = os.path.join(tmp, "fixed-rate.toml")
    with open(profile, "w") as f:
        f.write('name = "fixed-rate"\ndescription = "null engine at a fixed rate"\n'
                '[fleet]\nworkers = 1\ndisks_per_worker = 1\ndisk_size = "1m"\n'
                'threads_per_disk = 1\nqd = 1\n'
                f'[timing]\nprepare = "none"\nrate_iops = {float(args.rate)}\n'
                'arrival = "uniform"\n'
                '[[stream]]\nname = "read"\nbs = "4k"\nread_pct = 100\nrandom_pct = 100\n')
    cmd = [
        binary, "run", profile, "--engine", "null", "--workers", str(workers), "--disks", "1",
        "--threads", "1", "--qd", "1", "--rate", str(args.rate), "--warmup", "0s",
        f"--duration={args.seconds}s", "--interval", args.interval, "--json", "--no-save",
        "--metrics-listen", f"127.0.0.1:{port}", "--listen", "127.0.0.1:0",
        "--expect", str(args.agents), "--join-file", join_file, "--target", tmp,
        "--host-timeout", "60s",
    ] + (["--relay-fanout", str(args.relay_fanout), "--relay-dedicated"]
         if args.relay_fanout else [])
    oracle = None
    if args.replay:
        # The oracle: one agent replaying the same sample, flat; every worker of the
        # fleet replays it, so the fleet's latency figures are its own.
        oracle = one_agent_replay(binary, profile, args, tmp)
    out_f = tempfile.TemporaryFile()
    err_path = os.path.join(tmp, "controller.err")
    err_f = open(err_path, "wb")
    t0 = time.time()
    ctrl = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
    while not os.path.exists(join_file):
        if ctrl.poll() is not None:
            sys.exit(open(err_path).read())
        time.sleep(0.05)
    t_launch = time.time()
    agents = []
    if args.virtual_leaves:
        starts = [["--agents", "1", "--rank", str(r), "--replay-below"]
                  for r in range(0, args.agents, args.relay_fanout + 1)]
    else:
        starts = [["--agents", str(args.per_process), "--rank", str(p)]
                  + (["--replay"] if args.replay else []) for p in range(procs)]
    procs = len(starts)
    for i, extra in enumerate(starts):
        if args.ramp and i:
            time.sleep(args.ramp / procs)
        agents.append(subprocess.Popen(
            [binary, "agent", "--join-file", join_file] + extra,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    t_spawned = time.time()
    joined_at = None
    seen = {}
    hwm = 0
    agents_hwm = 0
    agents_pss = 0
    sampled = set()
    status = None
    rusage = None
    while status is None:
        hwm = max(hwm, vm_hwm_kib(ctrl.pid))
        if joined_at is None:
            with open(err_path) as f:
                text = f.read()
                if f"{args.agents} agent(s) joined from" in text or "relay(s) joined" in text:
                    joined_at = time.time()
        k = interval_index(port)
        if k is not None:
            for j in range(max(seen, default=-1) + 1, k + 1):
                seen[j] = time.time()
        # The agents' memory, every fifth interval (reading 1,000 processes' smaps
        # costs CPU the agents would miss).
        if len(seen) % 5 == 1 and len(seen) not in sampled:
            sampled.add(len(seen))
            agents_hwm = max(agents_hwm, sum(vm_hwm_kib(a.pid) for a in agents))
            agents_pss = max(agents_pss, sum(pss_kib(a.pid) for a in agents))
        pid, st, ru = os.wait4(ctrl.pid, os.WNOHANG)
        if pid:
            status, rusage = st, ru
        time.sleep(0.2)
    wall = time.time() - t0
    codes = [a.wait(timeout=120) for a in agents]
    out_f.seek(0)
    r = json.loads(out_f.read() or b"{}")
    err = open(err_path).read()
    if os.waitstatus_to_exitcode(status) != 0 or not r:
        sys.exit(f"run failed ({os.waitstatus_to_exitcode(status)}): {err[-3000:]}")
    with open(os.path.join(tmp, "result.json"), "w") as f:
        json.dump(r, f)
    hosts = r["hosts"]
    late = sorted(h["start_late_ms"] for h in hosts if h["start_late_ms"] is not None)
    lost = sum(1 for h in hosts if h["lost_at_s"] is not None)
    stragglers = sum(1 for h in hosts if h["straggler"])
    cpu_s = rusage.ru_utime + rusage.ru_stime
    first = min(seen.values()) if seen else float("nan")
    print(f"{args.agents} agents in {procs} processes joined in {joined_at - t_launch:.1f} s after the first started "
          f"(spawning them all took {t_spawned - t_launch:.1f} s); first interval merged "
          f"{first - t_launch:.1f} s after the first agent started")
    print(f"hosts {len(hosts)}, lost {lost}, stragglers {stragglers}, start skew "
          f"{r['run']['start_skew_ms']:.1f} ms; ios {r['summary']['all']['ios']} "
          f"(planned {workers * args.rate * args.seconds}), fleet {r['summary']['all']['iops']:.0f} IOPS")
    if args.relay_fanout:
        print(f"{relays} relays of {args.relay_fanout} agents each; {workers} workers below them")
    if oracle is not None:
        planned = workers * args.rate * args.seconds
        exact = r["summary"]["all"]["ios"] == planned and all(
            row["ios"] == workers * args.rate * interval_s for row in r["intervals"])
        same = r["summary"]["all"]["latency_us"] == oracle["summary"]["all"]["latency_us"]
        print(f"exact against the replay: counts {'identical' if exact else 'DIFFERENT'} "
              f"(every interval {workers * args.rate * interval_s:.0f} I/Os), latency figures "
              f"{'identical' if same else 'DIFFERENT'} to the one-agent oracle "
              f"(p50 {oracle['summary']['all']['latency_us']['p50']} µs, "
              f"p99 {oracle['summary']['all']['latency_us']['p99']} µs)")
    print(f"controller: peak RSS {hwm / 1024:.1f} MiB (rusage {rusage.ru_maxrss / 1024:.1f} MiB), "
          f"CPU {cpu_s:.1f} s over {wall:.1f} s wall ({100 * cpu_s / wall:.1f}% of one core); "
          f"agents' summed peak RSS {agents_hwm / 1024:.0f} MiB (shared pages once per process), "
          f"summed PSS {agents_pss / 1024:.0f} MiB; agent exit codes "
          f"{sorted(set(codes))}")
    if late:
        q = lambda p: late[min(len(late) - 1, int(p * len(late)))]
        print(f"hosts' start lateness (ms): min {late[0]:.1f}, p50 {q(0.5):.1f}, p90 {q(0.9):.1f}, "
              f"p99 {q(0.99):.1f}, max {late[-1]:.1f}; result in {tmp}/result.json")
    if seen:
        base = min(t - k * interval_s for k, t in seen.items())
        lags = sorted(seen[k] - k * interval_s - base for k in seen)
        print(f"intervals merged while the run went on: {len(seen)} of {len(r['intervals'])}; "
              f"lag behind the most timely one: median {lags[len(lags) // 2]:.2f} s, "
              f"max {lags[-1]:.2f} s")
    notices = [n for n in r.get("notices", []) if "refused" in n]
    if notices:
        print("refusals:", notices)


def one_agent_replay(binary, profile, args, tmp):
    """The same run on one agent replaying flat: its result (JSON)."""
    join_file = os.path.join(tmp, "oracle.json")
    ctrl = subprocess.Popen(
        [binary, "run", profile, "--engine", "null", "--workers", "1", "--disks", "1",
         "--rate", str(args.rate), "--warmup", "0s", f"--duration={args.seconds}s",
         "--interval", args.interval, "--json", "--no-save", "--listen", "127.0.0.1:0",
         "--expect", "1", "--join-file", join_file, "--target", tmp],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    while not os.path.exists(join_file):
        time.sleep(0.05)
    agent = subprocess.Popen([binary, "agent", "--join-file", join_file, "--replay"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out, _ = ctrl.communicate()
    agent.wait(timeout=60)
    return json.loads(out)


if __name__ == "__main__":
    main()
