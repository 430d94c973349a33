#!/usr/bin/env python3
"""How long a fleet of worker VMs takes to start on this machine's libvirt (issue 40):
for each fleet size, one `iofleet run` on a `[vms]` fleet (256 MiB per VM, one 16 MiB data
disk each, a 2 s run), and from its result (`run.vms`) each VM's boot-to-joined time
(domain started to its agent joined over its channel) and the whole fleet's time from
the first volume created to every VM joined. Needs root, QEMU and libvirt (Debian's
packages); starts `virtlogd -d` and `libvirtd -d` when none runs and stops them after;
the directory pool lives in a temp dir and goes with it.

With `--remote`, each round runs the fleet twice, interleaved: on `qemu:///system`, and
on the same libvirt as a remote hypervisor, `qemu+ssh://root@127.0.0.2:PORT/system`,
through a throwaway loopback sshd this script starts (its own host and client keys,
local forwarding allowed, stopped after): the cost of the ssh path (libvirt's transport,
the boot files copied over ssh, the channel forwarded).

    sudo python3 bench/vm_fleet.py [--vms 1,8] [--binary target/release/iofleet]
                                   [--domain-type qemu] [--rounds 1] [--remote]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
URI = "qemu:///system"


def virsh(*args, check=True):
    return subprocess.run(["virsh", "-q", "-c", URI, *args], check=check,
                          capture_output=True, text=True).stdout


def running(pidfile):
    try:
        pid = int(open(pidfile).read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def loopback_sshd(d):
    """A sshd on 127.0.0.2 for root with a fresh key: (its process, the hypervisor URI)."""
    import socket
    for k in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{d}/{k}"], check=True)
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        port = s.getsockname()[1]
    with open(f"{d}/sshd_config", "w") as f:
        f.write(f"ListenAddress 127.0.0.2:{port}\nHostKey {d}/host\nAuthorizedKeysFile {d}/client.pub\n"
                f"PidFile {d}/sshd.pid\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "UsePAM no\nStrictModes no\nUseDNS no\nAllowTcpForwarding local\n")
    # libvirt and iofleet run this ssh (`command=`): the throwaway host key stays out of
    # root's known_hosts.
    with open(f"{d}/ssh", "w") as f:
        f.write("#!/bin/sh\nexec ssh -o UserKnownHostsFile=/dev/null -o GlobalKnownHostsFile=/dev/null "
                "-o LogLevel=ERROR \"$@\"\n")
    os.chmod(f"{d}/ssh", 0o755)
    os.makedirs("/run/sshd", exist_ok=True)
    p = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", f"{d}/sshd_config"],
                         stderr=open(f"{d}/sshd.log", "w"))
    uri = f"qemu+ssh://root@127.0.0.2:{port}/system?keyfile={d}/client&no_verify=1&command={d}/ssh"
    for _ in range(100):
        if subprocess.run(["virsh", "-c", uri, "version"], capture_output=True).returncode == 0:
            return p, uri
        time.sleep(0.1)
    p.terminate()
    raise SystemExit(f"the loopback sshd does not answer: {open(f'{d}/sshd.log').read()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vms", default="1,8")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/iofleet"))
    ap.add_argument("--domain-type", default="qemu", help="qemu (software emulation; this machine's KVM hangs a guest) or kvm")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--remote", action="store_true",
                    help="also as a remote hypervisor through a loopback sshd, interleaved")
    a = ap.parse_args()
    started = []
    for daemon, pidfile in [("virtlogd", "/run/virtlogd.pid"), ("libvirtd", "/run/libvirtd.pid")]:
        if not running(pidfile):
            subprocess.run([daemon, "-d"], check=True)
            started.append(pidfile)
    for _ in range(300):
        if subprocess.run(["virsh", "-c", URI, "version"], capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    pool = "iofleet-bench-vms"
    try:
        with tempfile.TemporaryDirectory(prefix="iofleet-vm-bench-") as d:
            os.chmod(d, 0o755)
            virsh("pool-destroy", pool, check=False)
            virsh("pool-undefine", pool, check=False)
            virsh("pool-define-as", pool, "dir", "--target", d)
            virsh("pool-start", pool)
            sshd = None
            try:
                hypervisors = [URI]
                if a.remote:
                    sshd, remote = loopback_sshd(d)
                    hypervisors.append(remote)
                print("hypervisor  VMs  round  fleet joined s  boot-to-joined s: median  min  max  run wall s")
                for n, r, hv in [(int(x), r, hv) for x in a.vms.split(",")
                                 for r in range(a.rounds) for hv in hypervisors]:
                    hosts = os.path.join(d, "fleet.toml")
                    with open(hosts, "w") as f:
                        f.write(f'[vms]\nname = "bench"\nvms = {n}\nmemory = "256m"\npool = "{pool}"\n'
                                f'domain_type = "{a.domain_type}"\nboot_timeout = "10m"\n'
                                f'hypervisors = ["{hv}"]\n')
                    t0 = time.monotonic()
                    o = subprocess.run([a.binary, "run", "easy-run-4k70r", "--hosts", hosts, "--disks", "1",
                                        "--disk-size", "16m", "--duration", "2s", "--warmup", "0s",
                                        "--output-format", "json", "--no-save", "--quiet"],
                                       capture_output=True, text=True)
                    wall = time.monotonic() - t0
                    if o.returncode != 0:
                        raise SystemExit(f"iofleet exit {o.returncode}: {o.stderr}")
                    v = json.loads(o.stdout)["run"]["vms"]
                    boot = [vm["timeline"]["joined_s"] - vm["timeline"]["running_s"] for vm in v["vms"]]
                    print(f"{'remote' if hv != URI else 'local':>10}  {n:3d}  {r + 1:5d}  {v['joined_after_s']:14.1f}  "
                          f"{statistics.median(boot):23.1f}  {min(boot):4.1f}  {max(boot):4.1f}  {wall:10.1f}",
                          flush=True)
            finally:
                if sshd:
                    sshd.terminate()
                    sshd.wait()
                virsh("pool-destroy", pool, check=False)
                virsh("pool-undefine", pool, check=False)
    finally:
        for pidfile in reversed(started):
            pid = running(pidfile)
            if pid:
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    if not running(pidfile):
                        break
                    time.sleep(0.1)


if __name__ == "__main__":
    main()
