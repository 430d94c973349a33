//! The guest iofleet builds for a worker VM (issue 40), booted for real: Debian's kernel
//! under QEMU's software emulation, the initramfs made of this build's iofleet, its
//! libraries and the virtio modules. The guest must find its two data disks by the
//! serials iofleet gives them (attached in the other order), find its join channel among
//! the virtio-serial ports by name, say so on its console, open TLS to the controller's
//! end of the channel (a Unix socket this test listens on) and, when nobody answers,
//! power off by itself.

mod common;

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
    // The debug build is large: its symbols are not needed in a guest.
    let agent = d.path().join("iofleet");
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
    let mods = Path::new("/lib/modules").join(&version);
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
        rank: 3,
        disks: 2,
        join_timeout_s: 3,
    })
    .unwrap();
    let initrd = d.path().join("initrd");
    std::fs::write(
        &initrd,
        initramfs::archive(&Contents {
            iofleet: &std::fs::read(&agent).unwrap(),
            libs,
            modules,
            join: &join,
        }),
    )
    .unwrap();
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
