//! The guest side of the initramfs iofleet builds (`initramfs`): the iofleet binary as
//! the guest's `/init`, process 1. It mounts the kernel's file systems, loads the
//! virtio modules in the order the archive lists, finds the join channel among the
//! virtio-serial ports by its name (there is no udev to make `/dev/virtio-ports/NAME`)
//! and each data disk by the serial the domain gave it, and hands them to the agent.
//! When the agent ends, the guest powers off (the domain is then destroyed: its
//! `on_poweroff`).

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::initramfs::{JOIN_FILE, MODULES_DIR, MODULES_ORDER};
use super::xml::disk_serial;
use super::CHANNEL_NAME;
use crate::agents::join::rank::Placement;
use crate::agents::join::{JoinAddress, JoinRequest};
use crate::host::TargetArg;

/// How long the guest waits for its channel and disks to appear once the modules load.
const DEVICE_WAIT: Duration = Duration::from_secs(30);

/// This process is a guest's init: process 1, started as `/init`.
pub fn is_guest_init(argv0: &str) -> bool {
    std::process::id() == 1 && argv0 == "/init"
}

/// What the controller tells a guest through its initramfs (`initramfs::JOIN_FILE`):
/// the pinned certificate and the token of the command's join port, its rank, and how
/// many data disks to wait for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestJoin {
    pub fingerprint: String,
    pub token: String,
    pub rank: u32,
    pub disks: u32,
    /// How long to keep trying to join once the channel is there, seconds.
    pub join_timeout_s: u64,
}

/// What the guest found: its channel and its data disks in disk order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub channel: PathBuf,
    pub disks: Vec<PathBuf>,
    /// What happened on the way, for the controller (module loads, waits).
    pub notes: Vec<String>,
}

fn mount(src: &str, dir: &str, fstype: &str) -> Result<(), String> {
    let _ = std::fs::create_dir_all(dir);
    rustix::mount::mount(
        src,
        dir,
        fstype,
        rustix::mount::MountFlags::empty(),
        None::<&CStr>,
    )
    .map_err(|e| format!("mount {fstype} on {dir}: {e}"))
}

/// Load one module file (compressed ones through the kernel's own decompression).
fn load_module(path: &Path) -> Result<(), String> {
    const MODULE_INIT_COMPRESSED_FILE: i32 = 4;
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path.to_string_lossy();
    let flags = if name.ends_with(".ko") {
        0
    } else {
        MODULE_INIT_COMPRESSED_FILE
    };
    match rustix::system::finit_module(&f, c"", flags) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(e) => Err(format!("load module {}: {e}", path.display())),
    }
}

/// The `/dev` node of the virtio-serial port named `name`, from
/// `sysfs/class/virtio-ports/*/name`.
pub fn port_named(sysfs: &Path, name: &str) -> Option<PathBuf> {
    let dir = sysfs.join("class/virtio-ports");
    let mut ports: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
    ports.sort_by_key(|e| e.file_name());
    ports.into_iter().find_map(|e| {
        let n = std::fs::read_to_string(e.path().join("name")).ok()?;
        (n.trim() == name).then(|| PathBuf::from("/dev").join(e.file_name()))
    })
}

/// The `/dev` node of each data disk, in disk order, by the serial the domain gave it:
/// `sysfs/block/*/serial` for virtio-blk, the unit serial number page
/// (`device/vpd_pg80`, a 4-byte header then the serial) for a SCSI disk. None while
/// some disk has not appeared.
pub fn disks_by_serial(sysfs: &Path, n: u32) -> Option<Vec<PathBuf>> {
    let mut found = vec![None; n as usize];
    for e in std::fs::read_dir(sysfs.join("block")).ok()?.flatten() {
        let serial = ["serial", "device/serial", "device/vpd_pg80"]
            .iter()
            .find_map(|f| std::fs::read(e.path().join(f)).ok())
            .map(|b| {
                // vpd_pg80 is the raw page: a 4-byte header, then the serial.
                let s = String::from_utf8_lossy(&b).into_owned();
                s.trim_matches(|c: char| c.is_control() || c.is_whitespace())
                    .to_string()
            });
        let Some(serial) = serial else { continue };
        for (k, slot) in found.iter_mut().enumerate() {
            if serial.ends_with(&disk_serial(k as u32)) {
                *slot = Some(PathBuf::from("/dev").join(e.file_name()));
            }
        }
    }
    found.into_iter().collect()
}

/// Each data disk's queue set so that every request of the agent reaches the
/// hypervisor as one request: no I/O scheduler (`none`) and no merging (`nomerges` 2).
/// What could not be set, for the console.
pub fn one_to_one(sysfs: &Path, disks: &[PathBuf]) -> Vec<String> {
    let mut notes = Vec::new();
    for d in disks {
        let Some(name) = d.file_name() else { continue };
        let q = sysfs.join("block").join(name).join("queue");
        for (file, value) in [("scheduler", "none"), ("nomerges", "2")] {
            if let Err(e) = std::fs::write(q.join(file), value) {
                notes.push(format!("{}: {file} = {value}: {e}", d.display()));
            }
        }
    }
    notes
}

/// Mount the kernel's file systems, and make the console the standard output and error.
fn mount_all() -> Result<(), String> {
    mount("devtmpfs", "/dev", "devtmpfs")?;
    if let Ok(c) = std::fs::OpenOptions::new().write(true).open("/dev/console") {
        let _ = rustix::stdio::dup2_stdout(&c);
        let _ = rustix::stdio::dup2_stderr(&c);
    }
    mount("proc", "/proc", "proc")?;
    mount("sysfs", "/sys", "sysfs")?;
    let _ = mount("tmpfs", "/tmp", "tmpfs");
    Ok(())
}

/// Load the modules, then wait for the channel and `disks` data disks. The error says
/// what is missing.
pub fn boot(disks: u32) -> Result<Found, String> {
    let mut notes = Vec::new();
    let order = std::fs::read_to_string(format!("/{MODULES_ORDER}")).unwrap_or_default();
    for m in order.lines().filter(|l| !l.is_empty()) {
        if let Err(e) = load_module(&Path::new("/").join(MODULES_DIR).join(m)) {
            notes.push(e);
        }
    }
    let sysfs = Path::new("/sys");
    let began = Instant::now();
    let (channel, disks) = loop {
        let channel = port_named(sysfs, CHANNEL_NAME);
        let found = disks_by_serial(sysfs, disks);
        match (channel, found) {
            (Some(c), Some(d)) => break (c, d),
            (c, d) if began.elapsed() > DEVICE_WAIT => {
                return Err(format!(
                    "after {} s: {}{}",
                    DEVICE_WAIT.as_secs(),
                    if c.is_none() {
                        format!("no virtio-serial port named {CHANNEL_NAME}; ")
                    } else {
                        String::new()
                    },
                    if d.is_none() {
                        format!("not every one of the {disks} data disks (serials iofleet-d0…)")
                    } else {
                        String::new()
                    }
                ))
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    notes.push(format!(
        "devices ready {} ms after the modules",
        began.elapsed().as_millis()
    ));
    Ok(Found {
        channel,
        disks,
        notes,
    })
}

/// The guest's process 1: boot, say on the console what was found, join over the
/// channel as the VM's rank with its data disks as the target, then power off.
pub fn main() -> ! {
    // The console exists once devtmpfs is mounted (`mount_all`): nothing is said before.
    let code = match run_guest() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("iofleet guest: {e}");
            1
        }
    };
    eprintln!("iofleet guest: the agent ended ({code}); powering off");
    power_off()
}

fn run_guest() -> Result<i32, String> {
    mount_all()?;
    join_as_guest(read_join(&Path::new("/").join(JOIN_FILE))?)
}

/// A guest's join file; the error names it.
pub fn read_join(file: &Path) -> Result<GuestJoin, String> {
    let name = file.display();
    let text = std::fs::read(file).map_err(|e| format!("{name}: {e}"))?;
    serde_json::from_slice(&text).map_err(|e| format!("{name}: {e}"))
}

/// The agent of a worker VM once the guest's system is up, in the guest iofleet builds
/// (after `mount_all`) or in a cloud image (`iofleet agent --guest-join FILE`, started
/// by the seed's cloud-init, `nocloud`): find the channel and the data disks, join as
/// the VM's rank and run until the controller is done. Its exit code; an error says
/// what was not found.
pub fn join_as_guest(join: GuestJoin) -> Result<i32, String> {
    let mut found = boot(join.disks)?;
    // Scheduler none and no merging on the data disks: one request of the agent is one
    // of the hypervisor's.
    found
        .notes
        .extend(one_to_one(Path::new("/sys"), &found.disks));
    for n in &found.notes {
        eprintln!("iofleet guest: {n}");
    }
    eprintln!(
        "iofleet guest: rank {}, channel {}, disks {}",
        join.rank,
        found.channel.display(),
        found
            .disks
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let req = JoinRequest {
        address: JoinAddress {
            endpoint: format!("channel {CHANNEL_NAME}"),
            fingerprint: join.fingerprint,
        },
        token: join.token,
        placement: Placement {
            rank: Some(join.rank),
            size: None,
            from: "the VM's index".into(),
        },
        target: Some(TargetArg::Devices(
            found
                .disks
                .iter()
                .map(|d| d.display().to_string())
                .collect(),
        )),
        join_timeout: Duration::from_secs(join.join_timeout_s),
        channel: Some(found.channel),
        replay: false,
        replay_below: false,
    };
    Ok(crate::agents::join::join(req))
}

/// End the guest: flush and power off (process 1 must not exit: the kernel panics).
pub fn power_off() -> ! {
    rustix::fs::sync();
    let _ = rustix::system::reboot(rustix::system::RebootCommand::PowerOff);
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_channel_and_disks_are_found_by_name_and_serial() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        for (port, name) in [
            ("vport0p1", "org.qemu.guest_agent.0"),
            ("vport0p2", CHANNEL_NAME),
        ] {
            let p = s.join("class/virtio-ports").join(port);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("name"), format!("{name}\n")).unwrap();
        }
        assert_eq!(
            port_named(s, CHANNEL_NAME),
            Some(PathBuf::from("/dev/vport0p2"))
        );
        assert_eq!(port_named(s, "other"), None);
        // vda is the second disk, vdb the first; sda a SCSI disk with a VPD page.
        for (dev, file, serial) in [
            ("vda", "serial", "iofleet-d1"),
            ("vdb", "serial", "iofleet-d0\n"),
            ("sda", "device/vpd_pg80", "\0\u{80}\0\x0aiofleet-d2"),
        ] {
            let p = s.join("block").join(dev).join(file);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, serial).unwrap();
        }
        assert_eq!(
            disks_by_serial(s, 3).unwrap(),
            ["/dev/vdb", "/dev/vda", "/dev/sda"].map(PathBuf::from)
        );
        assert_eq!(disks_by_serial(s, 4), None);
        // Each disk's queue: no scheduler, no merges; a disk without one is told.
        for dev in ["vda", "vdb"] {
            std::fs::create_dir_all(s.join("block").join(dev).join("queue")).unwrap();
        }
        let notes = one_to_one(s, &["/dev/vdb", "/dev/vda", "/dev/sdq"].map(PathBuf::from));
        for dev in ["vda", "vdb"] {
            let q = s.join("block").join(dev).join("queue");
            assert_eq!(
                std::fs::read_to_string(q.join("scheduler")).unwrap(),
                "none"
            );
            assert_eq!(std::fs::read_to_string(q.join("nomerges")).unwrap(), "2");
        }
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with("/dev/sdq: scheduler = none"),
            "{notes:?}"
        );
        assert!(!is_guest_init("/init"), "a test is not process 1");
    }
}
