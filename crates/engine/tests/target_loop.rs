//! Device targets on real loop devices: the safety checks refuse devices that carry
//! data or are in use, leave their bytes untouched, and accept free devices, which are
//! split into regions that fills never leave. Runs only as root with `losetup`: under
//! CI a missing one fails the test, elsewhere it is skipped and listed (need.rs).

#[path = "../../../tests-support/need.rs"]
mod need;

use std::fs;
use std::hash::{DefaultHasher, Hasher};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64};

use iofleet_engine::target::{
    fill_disk, fill_marker_valid, logical_block_size, plan_layout, FillIo, FillOutcome,
    FillPattern, LayoutRequest, TargetError, TargetSpec, MARKER_LEN,
};

const MIB: u64 = 1 << 20;
const IMG: u64 = 64 * MIB;

/// A loop device detached on drop, whatever the test did.
struct Loop {
    dev: PathBuf,
}

impl Loop {
    fn attach(file: &Path, partscan: bool) -> Loop {
        let mut cmd = Command::new("losetup");
        if partscan {
            cmd.arg("--partscan");
        }
        let out = cmd.arg("--find").arg("--show").arg(file).output().unwrap();
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        Loop { dev }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// A mount undone on drop (declare it after the `Loop` so it drops first).
struct Mounted {
    dir: PathBuf,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // A dropped io_uring lets go of its files in the kernel's own time (its teardown
        // runs in a kernel worker), so the mount can be busy for a moment; after 5 s it
        // is detached lazily rather than left behind.
        let umount = |lazy: bool| {
            let mut c = Command::new("umount");
            if lazy {
                c.arg("-l");
            }
            c.arg(&self.dir)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        for _ in 0..50 {
            if umount(false) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        umount(true);
    }
}

fn runnable(test: &str) -> bool {
    need::need(test, &["root", "losetup"])
        && need::environment(
            test,
            "no /dev/loop-control",
            Path::new("/dev/loop-control").exists(),
        )
}

fn image(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    fs::File::create(&p).unwrap().set_len(IMG).unwrap();
    p
}

fn hash_device(dev: &Path) -> u64 {
    let f = fs::File::open(dev).unwrap();
    let mut h = DefaultHasher::new();
    let mut buf = vec![0u8; MIB as usize];
    let mut off = 0;
    while off < IMG {
        f.read_exact_at(&mut buf, off).unwrap();
        h.write(&buf);
        off += MIB;
    }
    h.finish()
}

fn req(workers: u32, disks_per_worker: u32, destroy_data: bool) -> LayoutRequest {
    LayoutRequest {
        worker_base: 0,
        workers,
        disks_per_worker,
        disk_size: 0,
        disk_size_from_cli: false,
        direct: true,
        destroy_data,
    }
}

fn devices(l: &Loop) -> TargetSpec {
    TargetSpec::Devices(vec![l.dev.clone()])
}

fn expect_refused(l: &Loop, r: &LayoutRequest, needles: &[&str]) -> String {
    let before = hash_device(&l.dev);
    let e = plan_layout(&devices(l), r).unwrap_err();
    assert!(
        matches!(e, TargetError::Refused { .. } | TargetError::InUse { .. }),
        "{e:?}"
    );
    assert!(e.is_input_error());
    let msg = e.to_string();
    assert!(msg.contains("--destroy-data"), "{msg}");
    assert!(msg.contains(&l.dev.display().to_string()), "{msg}");
    for n in needles {
        assert!(msg.contains(n), "{msg} lacks {n:?}");
    }
    assert_eq!(hash_device(&l.dev), before, "a refused device was changed");
    eprintln!("refused as expected: {msg}");
    msg
}

#[test]
fn ext4_device_is_refused_without_destroy_data() {
    if !runnable("ext4_device_is_refused_without_destroy_data") {
        return;
    }
    if !need::need(
        "ext4_device_is_refused_without_destroy_data",
        &["mkfs.ext4"],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "ext4.img");
    let st = Command::new("mkfs.ext4")
        .arg("-q")
        .arg("-F")
        .arg(&img)
        .status()
        .unwrap();
    assert!(st.success());
    let l = Loop::attach(&img, false);
    let before = hash_device(&l.dev);

    expect_refused(&l, &req(1, 2, false), &["ext4"]);

    let layout = plan_layout(&devices(&l), &req(1, 2, true)).unwrap();
    assert_eq!(layout.len(), 2);
    for (i, d) in layout.iter().enumerate() {
        assert_eq!(d.region_offset, i as u64 * 32 * MIB);
        assert_eq!(d.size, 32 * MIB - MARKER_LEN);
        assert!(d.is_device);
    }
    assert_eq!(hash_device(&l.dev), before, "planning wrote to the device");
}

#[test]
fn free_device_is_accepted_and_split_into_regions() {
    if !runnable("free_device_is_accepted_and_split_into_regions") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "zero.img");
    let l = Loop::attach(&img, false);

    let layout = plan_layout(&devices(&l), &req(2, 2, false)).unwrap();
    let got: Vec<(u32, u32, u64, u64)> = layout
        .iter()
        .map(|d| (d.worker, d.disk, d.region_offset, d.size))
        .collect();
    let sz = 16 * MIB - MARKER_LEN;
    assert_eq!(
        got,
        vec![
            (0, 0, 0, sz),
            (0, 1, 16 * MIB, sz),
            (1, 0, 32 * MIB, sz),
            (1, 1, 48 * MIB, sz)
        ]
    );
    assert_eq!(logical_block_size(&layout[0]), 512);

    // Fill two regions through O_DIRECT, by threads and through rings; their
    // neighbours stay zero.
    let rings = FillIo::Rings { depth: 8 };
    for (d, io) in [(&layout[1], FillIo::Threads(4)), (&layout[3], rings)] {
        let out = fill_disk(
            d,
            FillPattern::Random,
            true,
            io,
            &AtomicBool::new(false),
            &AtomicU64::new(0),
        )
        .unwrap();
        assert_eq!(out, FillOutcome::Done);
        assert!(fill_marker_valid(d, FillPattern::Random).unwrap());
    }
    assert!(!fill_marker_valid(&layout[2], FillPattern::Random).unwrap());
    let f = fs::File::open(&l.dev).unwrap();
    let mut buf = vec![0u8; (16 * MIB) as usize];
    for other in [0u64, 2] {
        f.read_exact_at(&mut buf, other * 16 * MIB).unwrap();
        assert!(buf.iter().all(|&b| b == 0), "region {other} was touched");
    }
    // iofleet's own data does not make the device "in use".
    plan_layout(&devices(&l), &req(2, 2, false)).unwrap();

    // Sizes: a --disk-size that does not fit, one that does, too many regions.
    let mut r = req(2, 2, false);
    r.disk_size_from_cli = true;
    r.disk_size = 16 * MIB;
    let e = plan_layout(&devices(&l), &r).unwrap_err();
    assert!(matches!(e, TargetError::DiskSizeTooLarge { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("--disk-size") && msg.contains(&sz.to_string()),
        "{msg}"
    );
    r.disk_size = 8 * MIB;
    let small = plan_layout(&devices(&l), &r).unwrap();
    assert_eq!(small[3].region_offset, 48 * MIB);
    assert_eq!(small[3].size, 8 * MIB);
    let e = plan_layout(&devices(&l), &req(40, 1, false)).unwrap_err();
    assert!(matches!(e, TargetError::DeviceTooSmall { .. }), "{e:?}");
    assert!(e.to_string().contains("--target"));

    // The same device twice would overlap regions.
    let twice = TargetSpec::Devices(vec![l.dev.clone(), l.dev.clone()]);
    let e = plan_layout(&twice, &req(2, 2, false)).unwrap_err();
    assert!(matches!(e, TargetError::DuplicateDevice { .. }), "{e:?}");
}

#[test]
fn two_devices_round_robin() {
    if !runnable("two_devices_round_robin") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let a = Loop::attach(&image(tmp.path(), "a.img"), false);
    let b = Loop::attach(&image(tmp.path(), "b.img"), false);
    let spec = TargetSpec::Devices(vec![a.dev.clone(), b.dev.clone()]);
    // 3 disks over 2 devices: a gets disks 0 and 2 (two regions), b disk 1 (one region).
    let layout = plan_layout(&spec, &req(1, 3, false)).unwrap();
    let got: Vec<(&Path, u64, u64)> = layout
        .iter()
        .map(|d| (d.path.as_path(), d.region_offset, d.size))
        .collect();
    assert_eq!(
        got,
        vec![
            (a.dev.as_path(), 0, 32 * MIB - MARKER_LEN),
            (b.dev.as_path(), 0, 64 * MIB - MARKER_LEN),
            (a.dev.as_path(), 32 * MIB, 32 * MIB - MARKER_LEN),
        ]
    );
    let e = plan_layout(&spec, &req(1, 1, false)).unwrap_err();
    assert!(matches!(e, TargetError::TooManyDevices { .. }), "{e:?}");
}

#[test]
fn swap_signature_is_refused() {
    if !runnable("swap_signature_is_refused") {
        return;
    }
    if !need::need("swap_signature_is_refused", &["mkswap"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "swap.img");
    let st = Command::new("mkswap")
        .arg(&img)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let l = Loop::attach(&img, false);
    expect_refused(&l, &req(1, 1, false), &["swap"]);
}

#[test]
fn partitioned_device_is_refused() {
    if !runnable("partitioned_device_is_refused") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "mbr.img");
    // One Linux partition from sector 2048, 8192 sectors long.
    let mut mbr = [0u8; 512];
    mbr[446 + 4] = 0x83;
    mbr[446 + 8..446 + 12].copy_from_slice(&2048u32.to_le_bytes());
    mbr[446 + 12..446 + 16].copy_from_slice(&8192u32.to_le_bytes());
    mbr[510] = 0x55;
    mbr[511] = 0xaa;
    fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .unwrap()
        .write_all_at(&mbr, 0)
        .unwrap();
    let l = Loop::attach(&img, true);
    let name = l.dev.file_name().unwrap().to_string_lossy().into_owned();
    let part = format!("/sys/class/block/{name}/{name}p1/partition");
    // Either the partition is seen, or (no partition scan here) the MBR signature is.
    let needle = if Path::new(&part).exists() {
        "partitions"
    } else {
        "DOS/MBR"
    };
    expect_refused(&l, &req(1, 1, false), &[needle]);
    plan_layout(&devices(&l), &req(1, 1, true)).unwrap();
}

#[test]
fn mounted_device_is_refused() {
    if !runnable("mounted_device_is_refused") {
        return;
    }
    if !need::need("mounted_device_is_refused", &["mkfs.ext4", "mount"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "mnt.img");
    let st = Command::new("mkfs.ext4")
        .arg("-q")
        .arg("-F")
        .arg(&img)
        .status()
        .unwrap();
    assert!(st.success());
    let l = Loop::attach(&img, false);
    let dir = tmp.path().join("mnt");
    fs::create_dir(&dir).unwrap();
    let ok = Command::new("mount")
        .arg("-o")
        .arg("ro")
        .arg(&l.dev)
        .arg(&dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    // A container may forbid mounts even to root: nothing to install for that.
    if !need::environment(
        "mounted_device_is_refused",
        "mount is not permitted here",
        ok,
    ) {
        return;
    }
    let _m = Mounted { dir: dir.clone() };
    expect_refused(
        &l,
        &req(1, 1, false),
        &["mounted at", &dir.display().to_string()],
    );
    // --destroy-data does not override a device in use.
    let msg = expect_refused(&l, &req(1, 1, true), &["mounted at", "unmount"]);
    assert!(msg.contains("does not override"), "{msg}");
}

#[test]
fn a_fill_that_runs_out_of_space_fails_naming_the_disk_and_leaves_no_marker() {
    if !need::need("a_fill_that_runs_out_of_space", &["root", "mount"]) {
        return;
    }
    // A 2 MiB tmpfs under a disk of 8 MiB: the marker (past the data) is cleared in a
    // hole, then the writers run out of space part of the way through.
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(dir.path())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !need::environment(
        "a_fill_that_runs_out_of_space",
        "mount is not permitted here",
        ok,
    ) {
        return;
    }
    let _m = Mounted {
        dir: dir.path().to_path_buf(),
    };
    let d = iofleet_engine::target::DiskLayout {
        worker: 0,
        disk: 0,
        path: dir.path().join("disk"),
        region_offset: 0,
        size: 8 << 20,
        is_device: false,
    };
    // By threads and through rings (a buffered write through io_uring fails in its
    // completion, or comes back short and fails when the rest is written).
    for io in [FillIo::Threads(4), FillIo::Rings { depth: 4 }] {
        fs::File::create(&d.path).unwrap();
        let progress = AtomicU64::new(0);
        let e = fill_disk(
            &d,
            FillPattern::Random,
            false,
            io,
            &AtomicBool::new(false),
            &progress,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("cannot write") && e.contains("disk"),
            "{io:?}: {e}"
        );
        assert!(progress.load(std::sync::atomic::Ordering::SeqCst) < d.size);
        assert!(!fill_marker_valid(&d, FillPattern::Random).unwrap());
        fs::remove_file(&d.path).unwrap();
    }
}
