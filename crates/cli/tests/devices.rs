//! Block devices through the binary, on loop devices over files in a temp dir: a device
//! holding ext4 is refused without --destroy-data and its bytes stay identical; a blank
//! device is split into disk regions (listed by a dry run that writes nothing) and
//! driven. Needs root and losetup (skips otherwise, saying so).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn runnable(name: &str) -> bool {
    need::need(name, &["root", "losetup"])
}

fn image(dir: &Path, mib: u64) -> PathBuf {
    let p = dir.join("disk.img");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(mib << 20).unwrap();
    p
}

fn digest(dev: &Path) -> u64 {
    // FNV-1a over the whole device: any changed byte changes it.
    let bytes = std::fs::read(dev).unwrap();
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

#[test]
fn ext4_loop_device_is_refused_and_left_identical() {
    if !need::need(
        "ext4_loop_device_is_refused_and_left_identical",
        &["root", "losetup", "mkfs.ext4"],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), 64);
    assert!(Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&img)
        .status()
        .unwrap()
        .success());
    let l = Loop::attach(&img);
    let before = digest(&l.dev);
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--target",
            l.dev.to_str().unwrap(),
            "--workers",
            "1",
            "--disks",
            "2",
            "--duration",
            "1s",
            "--quiet",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ext4") && err.contains("--destroy-data"),
        "{err}"
    );
    assert_eq!(digest(&l.dev), before, "the refused device was modified");
}

#[test]
fn blank_loop_device_is_split_into_regions_and_driven() {
    if !runnable("blank_loop_device_is_split_into_regions_and_driven") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), 64);
    let l = Loop::attach(&img);
    // A dry run lists the regions it would use and writes nothing.
    let before = digest(&l.dev);
    let dev = l.dev.to_str().unwrap();
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--target",
            dev,
            "--workers",
            "2",
            "--disks",
            "2",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(digest(&l.dev), before, "a dry run wrote the device");
    let mib = 1u64 << 20;
    let last = format!(
        "worker 1 disk 1: {dev} bytes {}..{} (16380k)",
        48 * mib,
        64 * mib - 4096
    );
    assert!(out.contains(&last), "no {last:?} in\n{out}");
    assert!(out.contains("disk_size = \"16380k\""), "{out}");
    assert!(out.contains("not the profile's 64m"), "{out}");
    // Worker groups would split the same device: refused by a dry run as by a run.
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "--group",
            "a=easy-run-4k70r:1",
            "--group",
            "b=easy-run-4k70r:1",
            "--target",
            dev,
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("worker groups need a directory target"));
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--target",
            l.dev.to_str().unwrap(),
            "--workers",
            "2",
            "--disks",
            "2",
            "--threads",
            "1",
            "--qd",
            "4",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["summary"]["write"]["ios"].as_u64().unwrap() > 0);
    assert_eq!(v["summary"]["errors"]["count"], 0);
    // Four regions of 16 MiB, each 16 MiB − 4 KiB addressable.
    assert_eq!(
        v["run"]["plan"]["fleet"]["disk_size"],
        16 * 1024 * 1024 - 4096
    );
    // The device, not the profile (64m), set the disk size: a notice says so.
    let notices = v["notices"].to_string();
    assert!(
        notices.contains("disk size is 16380k, not the profile's 64m"),
        "{notices}"
    );
    // It now carries iofleet data (random fill), which is not a signature: a rerun works.
    let again = run_in(
        tmp.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--target",
            l.dev.to_str().unwrap(),
            "--workers",
            "2",
            "--disks",
            "2",
            "--threads",
            "1",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let v2: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert!(v2["notices"].to_string().contains("valid fill marker"));
}
