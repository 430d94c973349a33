#!/usr/bin/env python3
"""A fleet of real sshd hosts on loopback addresses: what starting N hosts costs.

Starts N OpenSSH servers on this machine, host k on 127.0.x.y (loopback only, never
another address), each with its own data directory, and an ssh_config naming them
h1..hN. Then runs `iofleet run --hosts` with one null-engine worker per host at
`--rate` IOPS, once or several times in a row, and reports per run:

- the controller's peak RSS (VmHWM of its process, ssh clients not included) and the
  peak summed RSS of its ssh clients (its child processes named ssh);
- the time from launch to the first merged interval (the controller's /metrics page,
  `iofleet_interval_index`), and the wall time;
- the start skew the result reports, and whether every host's result arrived (every
  host present in `hosts`, none lost, exit 0).

The first run is cold (no copy of iofleet on the hosts: the copies in ~/.cache/iofleet
are removed first, as all hosts are this machine's root; nothing else there is
touched); later runs are warm. The copies are removed again at the end.

Every host is this machine's root. `--host-shell quiet` (the default) gives each host
its own home (the sshd sets HOME to a directory of the host's in the scratch directory,
and SHLVL=1 so that bash skips ~/.bashrc, as a stock non-interactive start-up does):
every host keeps its own copy, so a cold run sends all N of them. `--host-shell as-is`
keeps root's home and start-up, which here runs `pyenv init` (about 100 ms of CPU per
session, and a lock that hundreds of sessions at once queue on); all hosts then share
~/.cache/iofleet, so a cold run sends the copy only to the hosts that ask before the
first one lands. `--ssh-option` adds options to the inventory's ssh command line (e.g.
`--ssh-option=-oKexAlgorithms=curve25519-sha256`).

    python3 bench/fleet_hosts.py --iofleet target/release/iofleet --hosts 32 --runs 2
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from fleet_scale import free_port, interval_index

PORT = 2222


def addr(i):
    """Loopback address of host i (0-based): 127.0.0.2 … 127.0.0.254, then 127.0.1.1 …"""
    if i < 253:
        return f"127.0.0.{i + 2}"
    j = i - 253
    return f"127.0.{1 + j // 254}.{1 + j % 254}"


def keygen(path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path], check=True)


def sshd_config(tmp, a, host_key, keys, penalties, quiet_shell=True):
    text = (
        f"ListenAddress {a}:{PORT}\nHostKey {host_key}\nAuthorizedKeysFile {keys}\n"
        f"PidFile {tmp}/sshd-{a}.pid\n"
        "PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\nUseDNS no\n"
        "PrintMotd no\nPrintLastLog no\nX11Forwarding no\nAllowAgentForwarding no\n"
        "AllowTcpForwarding no\nPermitTunnel no\nMaxStartups 200\nMaxSessions 200\n"
        "LoginGraceTime 60\n"
    )
    if penalties:
        text += "PerSourcePenalties no\n"
    if quiet_shell:
        text += f"SetEnv HOME={home_of(tmp, a)} SHLVL=1\n"
    return text


def home_of(tmp, a):
    """The host's own home with --host-shell quiet."""
    return f"{tmp}/home-{a}"


def start_hosts(tmp, n, quiet_shell=True, ssh_options=()):
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    host_key, client_key = f"{tmp}/host_key", f"{tmp}/client_key"
    keygen(host_key)
    keygen(client_key)
    keys = f"{tmp}/authorized_keys"
    shutil.copy(client_key + ".pub", keys)
    # OpenSSH >= 9.8 locks out a source after sessions it sees killed, unless told not to.
    probe = f"{tmp}/probe.conf"
    with open(probe, "w") as f:
        f.write(sshd_config(tmp, "127.0.0.2", host_key, keys, True))
    penalties = subprocess.run([sshd, "-t", "-f", probe], capture_output=True).returncode == 0
    procs, lines = [], []
    for i in range(n):
        a = addr(i)
        conf = f"{tmp}/sshd-{a}.conf"
        with open(conf, "w") as f:
            f.write(sshd_config(tmp, a, host_key, keys, penalties, quiet_shell))
        os.makedirs(f"{tmp}/data-h{i + 1}", exist_ok=True)
        if quiet_shell:
            os.makedirs(home_of(tmp, a), exist_ok=True)
        log = open(f"{tmp}/sshd-{a}.log", "w")
        procs.append(subprocess.Popen([sshd, "-D", "-e", "-f", conf], stderr=log))
        lines.append(
            f"Host h{i + 1}\n  HostName {a}\n  Port {PORT}\n  User root\n"
            f"  IdentityFile {client_key}\n  IdentitiesOnly yes\n  IdentityAgent none\n"
            "  BatchMode yes\n  StrictHostKeyChecking no\n  CheckHostIP no\n"
            "  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /dev/null\n"
            "  LogLevel ERROR\n  ConnectTimeout 20\n  ControlMaster no\n  ControlPath none\n"
        )
    with open(f"{tmp}/ssh_config", "w") as f:
        f.write("".join(lines))
    deadline = time.time() + 30
    for i in range(n):
        while True:
            try:
                socket.create_connection((addr(i), PORT), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise SystemExit(f"sshd on {addr(i)} is not listening")
                time.sleep(0.05)
    with open(f"{tmp}/hosts.toml", "w") as f:
        options = ", ".join(json.dumps(o) for o in ["-F", f"{tmp}/ssh_config", *ssh_options])
        f.write(f"[ssh]\noptions = [{options}]\n")
        for i in range(n):
            f.write(f'[[host]]\ndestination = "h{i + 1}"\ntarget = "{tmp}/data-h{i + 1}"\n')
    return procs


def remove_copies():
    """Remove the iofleet copies and uploads in ~/.cache/iofleet (every host here is this
    machine's root), and nothing else: verify journals of other runs live there too."""
    d = os.path.expanduser("~/.cache/iofleet")
    for name in os.listdir(d) if os.path.isdir(d) else []:
        if name.startswith("iofleet-") or name.startswith(".upload."):
            os.remove(os.path.join(d, name))


def status_kib(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def ssh_children_rss_kib(pid):
    total = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{p}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if int(fields[1]) == pid and comm == "ssh":
            total += status_kib(p, "VmRSS") or 0
    return total


def one_run(binary, tmp, n, duration, rate, extra):
    port = free_port()
    cmd = [binary, "run", "--hosts", f"{tmp}/hosts.toml", "--engine", "null",
           "--workers", str(n), "--rate", str(rate), "--warmup", "0s",
           "--duration", duration, "--interval", "1s", "--no-save", "--quiet", "--json",
           "--metrics-listen", f"127.0.0.1:{port}", *extra]
    t0 = time.time()
    # Files, not pipes: the result of a large fleet outgrows a pipe's buffer.
    out_f, err_f = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
    hwm, ssh_peak, first = 0, 0, None
    while proc.poll() is None:
        hwm = max(hwm, status_kib(proc.pid, "VmHWM") or 0)
        ssh_peak = max(ssh_peak, ssh_children_rss_kib(proc.pid))
        if first is None and (interval_index(port) or -1) >= 0:
            first = time.time() - t0
        time.sleep(0.2)
    wall = time.time() - t0
    out_f.seek(0)
    err_f.seek(0)
    out, err = out_f.read(), err_f.read()
    try:
        r = json.loads(out)
    except ValueError:
        r = {}
    hosts = r.get("hosts", [])
    arrived = len(hosts) == n and all(h.get("lost_at_s") is None for h in hosts)
    return {
        "exit": proc.returncode,
        "controller_peak_mib": hwm / 1024,
        "ssh_clients_peak_mib": ssh_peak / 1024,
        "first_interval_s": first,
        "wall_s": wall,
        "skew_ms": (r.get("run") or {}).get("start_skew_ms"),
        "all_arrived": arrived and proc.returncode == 0,
        "stderr": err.decode(errors="replace").strip().splitlines()[-3:],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iofleet", default="target/release/iofleet")
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--runs", type=int, default=2, help="the first cold, the rest warm")
    ap.add_argument("--duration", default="5s")
    ap.add_argument("--rate", type=int, default=200, help="IOPS per worker")
    ap.add_argument("--host-shell", choices=["quiet", "as-is"], default="quiet",
                    help="skip root's ~/.bashrc in the hosts' sessions (quiet) or not")
    ap.add_argument("--ssh-option", action="append", default=[],
                    help="an option for the inventory's ssh command line (repeatable)")
    ap.add_argument("extra", nargs=argparse.REMAINDER, help="more flags for iofleet run")
    a = ap.parse_args()
    binary = os.path.abspath(a.iofleet)
    tmp = tempfile.mkdtemp(prefix="fleet-hosts-")
    procs = start_hosts(tmp, a.hosts, a.host_shell == "quiet", a.ssh_option)
    try:
        remove_copies()
        for k in range(a.runs):
            r = one_run(binary, tmp, a.hosts, a.duration, a.rate, a.extra)
            label = ("cold" if k == 0 else "warm") + f", host shell {a.host_shell}" + (
                f", ssh {' '.join(a.ssh_option)}" if a.ssh_option else "")
            first = "none" if r["first_interval_s"] is None else f"{r['first_interval_s']:.1f} s"
            print(f"{a.hosts} hosts, {label}: exit {r['exit']}, every result arrived: "
                  f"{r['all_arrived']}; controller peak RSS {r['controller_peak_mib']:.0f} MiB, "
                  f"ssh clients {r['ssh_clients_peak_mib']:.0f} MiB; first interval {first}, "
                  f"wall {r['wall_s']:.1f} s; start skew {r['skew_ms']} ms", flush=True)
            if r["exit"] != 0:
                print("  stderr:", *r["stderr"], sep="\n    ")
    finally:
        remove_copies()
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
