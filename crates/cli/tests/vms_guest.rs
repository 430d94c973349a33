//! The guest iofleet builds for a worker VM (issue 40), booted for real: Debian's kernel
//! under QEMU's software emulation, the initramfs made of this build's iofleet, its
//! libraries and the virtio modules. The guest must find its two data disks by the
//! serials iofleet gives them (attached in the other order), find its join channel among
//! the virtio-serial ports by name, say so on its console, open TLS to the controller's
//! end of the channel (a Unix socket this test listens on) and, when nobody answers,
//! power off by itself.

mod common;
#[path = "support/libvirt.rs"]
mod libvirt;

use std::io::Read;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::need;
use iofleet_fleet::vms::guest::GuestJoin;
use iofleet_fleet::vms::initramfs::{self, Contents, GUEST_DRIVERS};

/// The newest Debian kernel in /boot with its modules: (image, version).
fn guest_kernel() -> Option<(PathBuf, String)> {
    let mut found: Vec<(PathBuf, String)> = std::fs::read_dir("/boot")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix("vmlinuz-")?.to_string();
            Path::new("/lib/modules")
                .join(&version)
                .join("modules.dep")
                .is_file()
                .then(|| (e.path(), version))
        })
        .collect();
    found.sort();
    found.pop()
}

/// An initramfs of this build's iofleet (debug symbols stripped), its libraries, the
/// kernel `version`'s virtio modules and a join file for rank `rank` with `disks` disks
/// (a certificate and token no controller has: these tests read the guest's first TLS
/// bytes, no join completes).
fn build_initramfs(version: &str, scratch: &Path, rank: u32, disks: u32, out: &Path) {
    let agent = scratch.join("iofleet");
    let o = std::process::Command::new("objcopy")
        .args(["--strip-debug", env!("CARGO_BIN_EXE_iofleet")])
        .arg(&agent)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let libs = initramfs::linked_libraries(&agent)
        .unwrap()
        .into_iter()
        .map(|(g, h)| (g, std::fs::read(h).unwrap()))
        .collect();
    let mods = Path::new("/lib/modules").join(version);
    let dep = std::fs::read_to_string(mods.join("modules.dep")).unwrap();
    let builtin = std::fs::read_to_string(mods.join("modules.builtin")).unwrap_or_default();
    let modules = initramfs::module_order(&dep, &builtin, &GUEST_DRIVERS)
        .unwrap()
        .into_iter()
        .map(|rel| {
            let name = rel.rsplit('/').next().unwrap().to_string();
            (name, std::fs::read(mods.join(&rel)).unwrap())
        })
        .collect();
    let join = serde_json::to_vec(&GuestJoin {
        fingerprint: "00".repeat(32),
        token: "t".repeat(64),
        rank,
        disks,
        join_timeout_s: 3,
    })
    .unwrap();
    std::fs::write(
        out,
        initramfs::archive(&Contents {
            iofleet: &std::fs::read(&agent).unwrap(),
            libs,
            modules,
            join: &join,
        }),
    )
    .unwrap();
}

#[test]
fn the_builtin_guest_finds_its_disks_and_channel_and_opens_tls_over_it() {
    let test = "the_builtin_guest_finds_its_disks_and_channel_and_opens_tls_over_it";
    if !need::need(test, &["qemu-system-x86_64", "objcopy"]) {
        return;
    }
    let Some((kernel, version)) = guest_kernel() else {
        need::skip(
            "a kernel in /boot with its modules (linux-image-cloud-amd64)",
            test,
        );
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let initrd = d.path().join("initrd");
    build_initramfs(&version, d.path(), 3, 2, &initrd);
    // Two data disks, attached so that the first the guest sees is disk 1.
    let disks: Vec<PathBuf> = (0..2).map(|k| d.path().join(format!("d{k}.raw"))).collect();
    for p in &disks {
        std::fs::File::create(p).unwrap().set_len(16 << 20).unwrap();
    }
    let sock = d.path().join("channel.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let console = d.path().join("console.log");
    let began = Instant::now();
    let mut qemu = std::process::Command::new("qemu-system-x86_64")
        .args(["-machine", "q35,accel=tcg", "-m", "512", "-display", "none"])
        .args(["-no-reboot", "-nic", "none"])
        .arg("-kernel")
        .arg(&kernel)
        .arg("-initrd")
        .arg(&initrd)
        .args(["-append", "console=ttyS0 quiet panic=-1"])
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .arg("-drive")
        .arg(format!(
            "file={},format=raw,if=none,id=a",
            disks[1].display()
        ))
        .args(["-device", "virtio-blk-pci,drive=a,serial=iofleet-d1"])
        .arg("-drive")
        .arg(format!(
            "file={},format=raw,if=none,id=b",
            disks[0].display()
        ))
        .args(["-device", "virtio-blk-pci,drive=b,serial=iofleet-d0"])
        .args(["-device", "virtio-serial-pci"])
        .arg("-chardev")
        .arg(format!("socket,id=ch,path={}", sock.display()))
        .args([
            "-device",
            &format!(
                "virtserialport,chardev=ch,name={}",
                iofleet_fleet::vms::CHANNEL_NAME
            ),
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // QEMU connects to the channel's socket at start; the guest's first bytes are its
    // TLS ClientHello.
    let (mut ch, _) = listener.accept().unwrap();
    ch.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut first = [0u8; 3];
    ch.read_exact(&mut first).unwrap();
    let joined_after = began.elapsed();
    assert_eq!(first[0], 0x16, "a TLS handshake record: {first:?}");
    assert_eq!(first[1], 0x03, "TLS: {first:?}");
    // Nobody answers: the guest gives up after its join timeout and powers off.
    drop(ch);
    let status = loop {
        if let Some(s) = qemu.try_wait().unwrap() {
            break s;
        }
        if began.elapsed() > Duration::from_secs(180) {
            let _ = qemu.kill();
            panic!(
                "the guest did not power off: {}",
                std::fs::read_to_string(&console).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let log = std::fs::read_to_string(&console).unwrap();
    let mut err = String::new();
    qemu.stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "qemu: {status}: {err}\n{log}");
    // The port's number follows the virtio devices before it; its name finds it.
    let line = log
        .lines()
        .find(|l| l.starts_with("iofleet guest: rank 3, channel /dev/vport"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(line.ends_with(", disks /dev/vdb /dev/vda"), "{log}");
    assert!(log.contains("powering off"), "{log}");
    eprintln!(
        "the guest's first TLS bytes {:.1} s after QEMU started; off after {:.1} s",
        joined_after.as_secs_f64(),
        began.elapsed().as_secs_f64()
    );
}

/// Through real libvirt (daemons started here, a directory pool in a temp dir): two data
/// disks created as volumes, the domain iofleet writes defined and started under
/// software emulation, its join channel found in the live domain and carrying the
/// guest's TLS, the hypervisor's own request counts readable per disk; then destroyed,
/// undefined and its volumes deleted, leaving no domain, volume or QEMU process.
#[test]
fn a_guest_defined_through_libvirt_reaches_its_channel_and_leaves_nothing() {
    let test = "a_guest_defined_through_libvirt_reaches_its_channel_and_leaves_nothing";
    if !need::need(
        test,
        &[
            "root",
            "qemu-system-x86_64",
            "virsh",
            "libvirtd",
            "virtlogd",
            "objcopy",
        ],
    ) {
        return;
    }
    let Some((kernel, version)) = guest_kernel() else {
        need::skip(
            "a kernel in /boot with its modules (linux-image-cloud-amd64)",
            test,
        );
        return;
    };
    use iofleet_fleet::vms::hypervisor::{Hypervisor, Virsh};
    use iofleet_fleet::vms::xml::{domain_xml, volume_xml, Boot};
    let lv = libvirt::Libvirt::start("iofleet-test-vms");
    let d = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let initrd = d.path().join("initrd");
    build_initramfs(&version, d.path(), 0, 2, &initrd);
    let fleet = iofleet_fleet::vms::parse(&format!(
        "[vms]\nname = \"lvtest\"\nvms = 1\nmemory = \"512m\"\npool = \"{}\"\ndomain_type = \"qemu\"\n",
        lv.pool
    ))
    .unwrap();
    let slot = &fleet.layout(2)[0];
    let hv = Virsh::new(libvirt::URI).unwrap();
    // Whatever happens below, nothing of the guest stays.
    struct Cleanup<'a>(&'a Virsh, &'a iofleet_fleet::vms::VmSlot, &'a str);
    impl Drop for Cleanup<'_> {
        fn drop(&mut self) {
            let _ = self.0.destroy(&self.1.domain);
            let _ = self.0.undefine(&self.1.domain);
            for v in &self.1.volumes {
                let _ = self.0.delete_volume(self.2, v);
            }
            // libvirt keeps each domain's QEMU log after it is gone.
            let _ = std::fs::remove_file(format!("/var/log/libvirt/qemu/{}.log", self.1.domain));
        }
    }
    let cleanup = Cleanup(&hv, slot, &lv.pool);
    for v in &slot.volumes {
        let path = hv
            .create_volume(&lv.pool, &volume_xml(v, 16 << 20))
            .unwrap();
        assert!(path.ends_with(v.as_str()), "{path}");
    }
    let cmdline = "console=ttyS0 quiet panic=-1";
    let xml = domain_xml(
        &fleet,
        slot,
        "qemu",
        &Boot::Kernel {
            kernel: kernel.to_str().unwrap(),
            initrd: initrd.to_str().unwrap(),
            cmdline,
        },
    );
    let began = Instant::now();
    hv.define(&xml).unwrap();
    hv.start(&slot.domain).unwrap();
    let channel = hv.channel(&slot.domain).unwrap();
    assert!(
        channel.ends_with(iofleet_fleet::vms::CHANNEL_NAME),
        "{}",
        channel.display()
    );
    let mut ch = std::os::unix::net::UnixStream::connect(&channel).unwrap();
    ch.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut first = [0u8; 3];
    ch.read_exact(&mut first).unwrap();
    assert_eq!((first[0], first[1]), (0x16, 0x03), "TLS: {first:?}");
    eprintln!(
        "through libvirt: the guest's first TLS bytes {:.1} s after define",
        began.elapsed().as_secs_f64()
    );
    // The guest read its disks' partition tables at boot: the hypervisor counted it.
    let (reads, _writes) = hv.disk_requests(&slot.domain, "vda").unwrap();
    assert!(reads > 0, "{reads}");
    drop(ch);
    drop(cleanup);
    assert_eq!(lv.domains("iofleet-lvtest-"), Vec::<String>::new());
    assert_eq!(lv.volumes(), Vec::<String>::new());
    let began = Instant::now();
    while libvirt::Libvirt::qemu_processes("iofleet-lvtest-") > 0 {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "a QEMU process stays"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
