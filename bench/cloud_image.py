#!/usr/bin/env python3
"""A cloud image as a worker VM's guest (issue 40): boot to joined, measured.

`build` makes a minimal Debian 12 cloud image offline (only Debian's package mirror is
needed, the one apt already uses here): debootstrap's minimal base plus systemd, udev,
cloud-init and Debian's cloud kernel, written into an ext4 file system with
`mkfs.ext4 -d` (no loop device, no mount) and converted to qcow2. The image boots the
way QEMU boots a kernel directly: its own kernel and initrd, copied out of the image
beside it, with `root=LABEL=iofleet-root`. Everything is cached in
/var/tmp/iofleet-cloud-image (about 400 MB); `build --force` makes it again.

`measure` boots that image under QEMU's software emulation (TCG) with the NoCloud seed
iofleet makes for VM 0 (`crates/fleet/examples/nocloud_seed.rs`: the seed, a vfat disk
labelled `cidata`, carries this build's iofleet and its join file), two data disks
with iofleet's serials, no network, and the join channel as a virtio-serial port whose
host end is a Unix socket this script listens on, as crates/cli/tests/vms_guest.rs does
for the guest iofleet builds. Boot to joined is the time from QEMU's start to the
agent's first bytes on the channel (its TLS ClientHello: the join arriving). Nobody
answers, so the agent gives up after its join timeout and the guest powers off; the
time to QEMU's exit is reported too. The image is never written (`snapshot=on`).

`fleet` is the real thing, through iofleet's launcher and real libvirt: one
`iofleet run easy-run-4k70r --hosts vms.toml` per fleet size on a `[vms]` fleet whose
`[vms.guest]` is that image (booted directly: its kernel, initrd and command line), 1
and then 2 VMs under software emulation (`domain_type = "qemu"`), one 16 MiB data disk
each, a 2 s workload. iofleet copies the image into each VM's boot volume and writes
its seed volume (vol-create, vol-upload), defines and starts the domains, and waits
until every agent joined over its channel; from the result's timeline (`run.vms`),
per VM, boot to joined = joined_s - running_s (the domain started to its agent joined)
and the copy (the first volume created to the domain defined). libvirtd and virtlogd
are started when none runs and stopped after; the pool lives in a temp dir.

    python3 bench/cloud_image.py build
    cargo build -p iofleet --bin iofleet && cargo build -p iofleet-fleet --example nocloud_seed
    python3 bench/cloud_image.py measure --iofleet target/debug/iofleet --rounds 3
    cargo build --release -p iofleet
    python3 bench/cloud_image.py fleet --iofleet target/release/iofleet --vms 1,2

Run as root (debootstrap). Timing claims go to bench/README.md ("Worker VMs: boot to
joined").
"""

import argparse
import glob
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

CACHE = "/var/tmp/iofleet-cloud-image"
IMAGE = os.path.join(CACHE, "debian-12-iofleet.qcow2")
KERNEL = os.path.join(CACHE, "vmlinuz")
INITRD = os.path.join(CACHE, "initrd.img")
STAMP = os.path.join(CACHE, "built")
CHANNEL = "org.iofleet.join"
PACKAGES = [
    "systemd-sysv",
    "udev",
    "linux-image-cloud-amd64",
    "cloud-init",
    # python3-cryptography needs a virtual package this provides, which debootstrap's
    # resolver does not find by itself.
    "python3-cffi-backend",
    "e2fsprogs",
]


def apt_mirror():
    """The URI apt uses for bookworm here (deb822 sources, then sources.list)."""
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        uri, suites = None, []
        for line in open(path).read().splitlines() + [""]:
            if not line.strip():
                if uri and "bookworm" in suites:
                    return uri
                uri, suites = None, []
            elif line.startswith("URIs:"):
                uri = line.split()[1]
            elif line.startswith("Suites:"):
                suites = line.split()[1:]
    if os.path.exists("/etc/apt/sources.list"):
        for line in open("/etc/apt/sources.list"):
            f = line.split()
            if len(f) >= 3 and f[0] == "deb" and f[2] == "bookworm":
                return f[1]
    sys.exit("no bookworm source in /etc/apt: give --mirror URI")


def build(args):
    if os.path.exists(STAMP) and not args.force:
        print(f"cached: {IMAGE} (build --force to make it again)")
        return
    os.makedirs(CACHE, exist_ok=True)
    root = os.path.join(CACHE, "root")
    shutil.rmtree(root, ignore_errors=True)
    mirror = args.mirror or apt_mirror()
    debs = os.path.join(CACHE, "debs")
    os.makedirs(debs, exist_ok=True)
    began = time.monotonic()
    subprocess.run(
        ["debootstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES),
         "--cache-dir=" + debs,
         "bookworm", root, mirror],
        check=True,
    )
    with open(os.path.join(root, "etc/fstab"), "w") as f:
        f.write("LABEL=iofleet-root / ext4 defaults 0 1\n")
    with open(os.path.join(root, "etc/hostname"), "w") as f:
        f.write("localhost\n")
    # What debootstrap leaves of the build host in the image.
    for p in ["etc/resolv.conf", "etc/machine-id"]:
        q = os.path.join(root, p)
        if os.path.exists(q):
            os.remove(q)
    open(os.path.join(root, "etc/machine-id"), "w").close()
    shutil.rmtree(os.path.join(root, "var/cache/apt/archives"), ignore_errors=True)
    os.makedirs(os.path.join(root, "var/cache/apt/archives/partial"), exist_ok=True)
    kernels = sorted(glob.glob(os.path.join(root, "boot/vmlinuz-*")))
    initrds = sorted(glob.glob(os.path.join(root, "boot/initrd.img-*")))
    if not kernels or not initrds:
        sys.exit("the image has no kernel or initrd in /boot")
    shutil.copyfile(kernels[-1], KERNEL)
    shutil.copyfile(initrds[-1], INITRD)
    raw = os.path.join(CACHE, "root.raw")
    subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-L", "iofleet-root", "-d", root, raw, "2G"], check=True
    )
    subprocess.run(["qemu-img", "convert", "-O", "qcow2", raw, IMAGE], check=True)
    os.remove(raw)
    shutil.rmtree(root)
    with open(STAMP, "w") as f:
        f.write(json.dumps({"kernel": os.path.basename(kernels[-1]),
                            "seconds": round(time.monotonic() - began)}) + "\n")
    print(f"built {IMAGE} with {os.path.basename(kernels[-1])} "
          f"in {time.monotonic() - began:.0f} s")


def make_seed(args, scratch):
    """The seed iofleet makes for VM 0 of a fleet named `bench`, with 2 data disks."""
    agent = os.path.join(scratch, "iofleet")
    subprocess.run(["objcopy", "--strip-debug", args.iofleet, agent], check=True)
    seed = os.path.join(scratch, "seed.img")
    subprocess.run(
        [args.seed_tool, "--out", seed, "--iofleet", agent, "--domain", "iofleet-bench-0",
         "--rank", "0", "--disks", "2", "--join-timeout", str(args.join_timeout)],
        check=True,
    )
    return seed


def boot_once(args, scratch, seed, round_no):
    disks = []
    for k in range(2):
        p = os.path.join(scratch, f"d{k}.raw")
        with open(p, "wb") as f:
            f.truncate(16 << 20)
        disks.append(p)
    sock = os.path.join(scratch, f"channel-{round_no}.sock")
    console = os.path.join(scratch, f"console-{round_no}.log")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock)
    listener.listen(1)
    cmd = [
        "qemu-system-x86_64", "-machine", "q35,accel=tcg", "-m", str(args.memory),
        "-smp", str(args.vcpus), "-display", "none", "-no-reboot", "-nic", "none",
        "-kernel", KERNEL, "-initrd", INITRD,
        "-append", "root=LABEL=iofleet-root rw console=ttyS0 panic=-1",
        "-serial", f"file:{console}",
        "-drive", f"file={IMAGE},format=qcow2,if=virtio,snapshot=on",
        "-drive", f"file={seed},format=raw,if=virtio,readonly=on",
    ]
    for k in (1, 0):  # attached in the other order: the serials find them
        cmd += ["-drive", f"file={disks[k]},format=raw,if=none,id=d{k}",
                "-device", f"virtio-blk-pci,drive=d{k},serial=iofleet-d{k}"]
    cmd += ["-device", "virtio-serial-pci",
            "-chardev", f"socket,id=ch,path={sock}",
            "-device", f"virtserialport,chardev=ch,name={CHANNEL}"]
    began = time.monotonic()
    qemu = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        listener.settimeout(30)
        ch, _ = listener.accept()
        ch.settimeout(args.timeout)
        first = b""
        while len(first) < 3:
            b = ch.recv(3 - len(first))
            if not b:
                raise RuntimeError("the channel closed before the agent spoke")
            first += b
        joined = time.monotonic() - began
        if first[0] != 0x16 or first[1] != 0x03:
            raise RuntimeError(f"not a TLS record: {first!r}")
        ch.close()
        qemu.wait(timeout=args.timeout)
        off = time.monotonic() - began
        for line in open(console, errors="replace"):
            if "iofleet guest:" in line or "running 'modules:final'" in line:
                print("  console: " + line.strip())
        return joined, off, qemu.returncode
    except Exception:
        keep = os.path.join(CACHE, "last-console.log")
        shutil.copyfile(console, keep)
        print(open(console, errors="replace").read()[-4000:], file=sys.stderr)
        print(f"the whole console: {keep}", file=sys.stderr)
        raise
    finally:
        if qemu.poll() is None:
            qemu.kill()
            qemu.wait()
        listener.close()


def measure(args):
    if not os.path.exists(STAMP):
        sys.exit(f"no image in {CACHE}: run `{sys.argv[0]} build` first")
    scratch = tempfile.mkdtemp(prefix="iofleet-cloud-")
    try:
        seed = make_seed(args, scratch)
        print(f"seed: {os.path.getsize(seed) >> 20} MiB; image "
              f"{json.load(open(STAMP))['kernel']}; TCG, {args.vcpus} vCPU, "
              f"{args.memory} MiB")
        joined, off = [], []
        for r in range(args.rounds):
            j, o, rc = boot_once(args, scratch, seed, r)
            print(f"round {r + 1}: joined {j:.1f} s after QEMU started, "
                  f"off at {o:.1f} s (qemu exit {rc})")
            joined.append(j)
            off.append(o)
        print(f"median of {args.rounds}: boot to joined {statistics.median(joined):.1f} s "
              f"(min {min(joined):.1f}, max {max(joined):.1f}); "
              f"to powered off {statistics.median(off):.1f} s")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


URI = "qemu:///system"
CMDLINE = "root=LABEL=iofleet-root rw console=ttyS0 panic=-1"


def virsh(*args, check=True):
    return subprocess.run(["virsh", "-q", "-c", URI, *args], check=check,
                          capture_output=True, text=True).stdout


def pid_of(pidfile):
    try:
        pid = int(open(pidfile).read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def fleet(args):
    """Fleets of 1, then 2, VMs booted from the image through iofleet and libvirt."""
    if not os.path.exists(STAMP):
        sys.exit(f"no image in {CACHE}: run `{sys.argv[0]} build` first")
    started = []
    for daemon, pidfile in [("virtlogd", "/run/virtlogd.pid"),
                            ("libvirtd", "/run/libvirtd.pid")]:
        if not pid_of(pidfile):
            subprocess.run([daemon, "-d"], check=True)
            started.append(pidfile)
    for _ in range(300):
        if subprocess.run(["virsh", "-c", URI, "version"],
                          capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    pool = "iofleet-bench-cloud"
    image_mib = os.path.getsize(IMAGE) >> 20
    print(f"image {IMAGE} ({image_mib} MiB file, {json.load(open(STAMP))['kernel']}); "
          f"iofleet {args.iofleet}; TCG, {args.vcpus} vCPU, {args.memory} per VM")
    print("VMs  round  fleet joined s  copy s (per VM)  boot to joined s (per VM)  "
          "run wall s")
    try:
        with tempfile.TemporaryDirectory(prefix="iofleet-cloud-fleet-") as d:
            os.chmod(d, 0o755)
            virsh("pool-destroy", pool, check=False)
            virsh("pool-undefine", pool, check=False)
            virsh("pool-define-as", pool, "dir", "--target", d)
            virsh("pool-start", pool)
            try:
                for n in [int(x) for x in args.vms.split(",")]:
                    for r in range(args.rounds):
                        fleet_once(args, d, pool, n, r)
            finally:
                virsh("pool-destroy", pool, check=False)
                virsh("pool-undefine", pool, check=False)
    finally:
        for pidfile in reversed(started):
            pid = pid_of(pidfile)
            if pid:
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    if not pid_of(pidfile):
                        break
                    time.sleep(0.1)


def fleet_once(args, d, pool, n, r):
    hosts = os.path.join(d, "vms.toml")
    with open(hosts, "w") as f:
        f.write(f'[vms]\nname = "cloud"\nvms = {n}\nvcpus = {args.vcpus}\n'
                f'memory = "{args.memory}"\npool = "{pool}"\ndomain_type = "qemu"\n'
                f'boot_timeout = "{args.timeout}s"\n'
                f'[vms.guest]\nimage = "{IMAGE}"\nkernel = "{KERNEL}"\n'
                f'initrd = "{INITRD}"\ncmdline = "{CMDLINE}"\n')
    t0 = time.monotonic()
    o = subprocess.run([args.iofleet, "run", "easy-run-4k70r", "--hosts", hosts,
                        "--disks", "1", "--disk-size", "16m", "--duration", "2s",
                        "--warmup", "0s", "--output-format", "json", "--no-save",
                        "--quiet"], capture_output=True, text=True)
    wall = time.monotonic() - t0
    if o.returncode != 0:
        sys.exit(f"iofleet exit {o.returncode}: {o.stderr}")
    v = json.loads(o.stdout)["run"]["vms"]
    copy = [vm["timeline"]["defined_s"] for vm in v["vms"]]
    boot = [vm["timeline"]["joined_s"] - vm["timeline"]["running_s"] for vm in v["vms"]]
    print(f"{n:3d}  {r + 1:5d}  {v['joined_after_s']:14.1f}  "
          f"{', '.join(f'{c:.1f}' for c in copy):>15}  "
          f"{', '.join(f'{b:.1f}' for b in boot):>25}  {wall:10.1f}", flush=True)
    print(f"     guest: {v['guest']}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--force", action="store_true")
    b.add_argument("--mirror", help="Debian mirror URI (default: apt's bookworm source)")
    m = sub.add_parser("measure")
    m.add_argument("--iofleet", default="target/debug/iofleet")
    m.add_argument("--seed-tool", default="target/debug/examples/nocloud_seed")
    m.add_argument("--rounds", type=int, default=3)
    m.add_argument("--vcpus", type=int, default=1)
    m.add_argument("--memory", type=int, default=1024, help="MiB")
    m.add_argument("--join-timeout", type=int, default=3, help="the agent's, seconds")
    m.add_argument("--timeout", type=float, default=600, help="per boot, seconds")
    f = sub.add_parser("fleet")
    f.add_argument("--iofleet", default="target/release/iofleet")
    f.add_argument("--vms", default="1,2")
    f.add_argument("--rounds", type=int, default=1)
    f.add_argument("--vcpus", type=int, default=1)
    f.add_argument("--memory", default="1g")
    f.add_argument("--timeout", type=int, default=600, help="boot_timeout, seconds")
    a = p.parse_args()
    {"build": build, "measure": measure, "fleet": fleet}[a.cmd](a)


if __name__ == "__main__":
    main()
