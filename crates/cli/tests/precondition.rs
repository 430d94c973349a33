//! `iofleet precondition`: every byte of every disk written twice with random data, the
//! fill marker left for later runs, and the safety checks of `run` unchanged — a loop
//! device holding ext4 (over a file in /dev/shm) is refused and left identical, a
//! blank one is written. Loop-device tests need root, losetup and mkfs.ext4 (they skip
//! otherwise, saying so).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

const MIB: u64 = 1 << 20;

fn precondition(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["precondition"];
    all.extend_from_slice(args);
    run_in(dir, &all)
}

#[test]
fn a_file_target_is_written_twice_over_with_random_data() {
    let d = tempfile::tempdir().unwrap();
    // Disk files already there with a known fill: after preconditioning no 4 KiB block
    // of the data region may still hold it.
    let data = d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let size = 4 * MIB;
    for disk in 0..2 {
        let known = vec![0xabu8; (size + 4096) as usize];
        std::fs::write(data.join(format!("w000-d00{disk}.iofleet")), known).unwrap();
    }
    let o = precondition(
        d.path(),
        &[
            "--target",
            "data",
            "--disks",
            "2",
            "--disk-size",
            "4m",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["passes"], 2);
    assert_eq!(v["bs"], 128 * 1024);
    assert_eq!(v["complete"], true);
    assert_eq!(v["bytes_written"], 2 * 2 * size);
    let disks = v["disks"].as_array().unwrap();
    assert_eq!(disks.len(), 2);
    for disk in disks {
        assert_eq!(disk["size"], size);
        assert_eq!(disk["bytes_written"], 2 * size, "every byte twice: {disk}");
        let bytes = std::fs::read(d.path().join(disk["path"].as_str().unwrap())).unwrap();
        let region = &bytes[..size as usize];
        for (i, block) in region.chunks(4096).enumerate() {
            assert!(
                block.iter().any(|&b| b != 0xab),
                "block {i} still holds the old fill"
            );
            assert!(block.iter().any(|&b| b != 0), "block {i} is zeros");
        }
        // Random data: every byte value turns up, none dominates.
        let mut counts = [0u64; 256];
        region.iter().for_each(|&b| counts[b as usize] += 1);
        let expect = size / 256;
        assert!(
            counts.iter().all(|&c| c > expect / 2 && c < expect * 2),
            "not random-looking"
        );
    }
    // The two disks hold different data.
    let a = std::fs::read(data.join("w000-d000.iofleet")).unwrap();
    let b = std::fs::read(data.join("w000-d001.iofleet")).unwrap();
    assert_ne!(a[..4096], b[..4096]);

    // The disks now carry a random fill marker: a run that prepares with random data
    // reuses it.
    let o = run_in(
        d.path(),
        &[
            "run",
            "--target",
            "data",
            "--disks",
            "2",
            "--disk-size",
            "4m",
            "--prepare",
            "random",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--no-save",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        r["notices"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("2 of 2 disks already carry a valid fill marker")),
        "{}",
        r["notices"]
    );

    // The table says what was written.
    let o = precondition(
        d.path(),
        &["--target", "data", "--disks", "2", "--disk-size", "4m"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains("2 disk(s), 2 passes of 128 KiB sequential writes of random data"),
        "{t}"
    );
    assert!(t.contains("written 16m"), "{t}");
}

#[test]
fn bad_input_exits_2_naming_what_is_wrong() {
    let d = tempfile::tempdir().unwrap();
    for (args, says) in [
        (vec!["no-such-profile"], "no-such-profile"),
        (vec!["--workers", "0"], "--workers"),
        (vec!["--disk-size", "huge"], "--disk-size"),
        (
            vec!["--target", "a", "--target", "b"],
            "must all be block devices",
        ),
        (vec!["--colour"], "--colour"),
    ] {
        let o = precondition(d.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    // Nothing was created.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}

#[test]
fn ctrl_c_stops_it_without_a_marker_and_exits_130() {
    // A tmpfs target: nothing touches a block device, and the disk stays mostly sparse.
    let shm = Path::new("/dev/shm");
    if !need::environment(
        "ctrl_c_stops_it_without_a_marker_and_exits_130",
        "no /dev/shm",
        shm.is_dir(),
    ) {
        return;
    }
    let d = shm_dir();
    let target = d.path().join("data");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .current_dir(d.path())
        .args([
            "precondition",
            "--direct=false",
            "--disk-size",
            "4g",
            "--json",
        ])
        .arg("--target")
        .arg(&target)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Signal as soon as the first pass has begun writing.
    let t0 = std::time::Instant::now();
    let writing = || {
        std::fs::read_dir(&target)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                use std::os::unix::fs::MetadataExt;
                e.metadata()
                    .map(|m| m.is_file() && m.blocks() > 0)
                    .unwrap_or(false)
            })
    };
    while !writing() && t0.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(writing(), "preconditioning did not start");
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["complete"], false);
    let written = v["bytes_written"].as_u64().unwrap();
    assert!(written < 2 * 4096 * MIB, "{written}");
    // No fill marker: a run that prepares would fill again (its marker block is zeros).
    let disk = target.join("w000-d000.iofleet");
    let bytes = std::fs::File::open(&disk).unwrap();
    let mut marker = vec![0u8; 16];
    std::os::unix::fs::FileExt::read_exact_at(&bytes, &mut marker, 4096 * MIB).unwrap();
    assert_eq!(marker, vec![0u8; 16]);
}

/// A scratch directory in /dev/shm (memory), removed when dropped.
fn shm_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("iofleet-precondition-")
        .tempdir_in("/dev/shm")
        .unwrap()
}

fn image(dir: &Path, mib: u64) -> PathBuf {
    let p = dir.join("disk.img");
    std::fs::File::create(&p)
        .unwrap()
        .set_len(mib * MIB)
        .unwrap();
    p
}

fn digest(dev: &Path) -> u64 {
    std::fs::read(dev)
        .unwrap()
        .iter()
        .fold(0xcbf29ce484222325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100000001b3)
        })
}

fn loops_usable(name: &str) -> bool {
    need::need(name, &["root", "losetup", "mkfs.ext4"])
        && need::environment(name, "no /dev/shm", Path::new("/dev/shm").is_dir())
}

#[test]
fn a_device_with_a_filesystem_is_refused_and_left_identical() {
    if !loops_usable("a_device_with_a_filesystem_is_refused_and_left_identical") {
        return;
    }
    let shm = shm_dir();
    let img = image(shm.path(), 32);
    assert!(Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&img)
        .status()
        .unwrap()
        .success());
    let l = Loop::attach(&img);
    let before = digest(&l.dev);
    let work = tempfile::tempdir().unwrap();
    let o = precondition(
        work.path(),
        &["--target", l.dev.to_str().unwrap(), "--quiet"],
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
fn a_blank_device_is_written_region_by_region() {
    if !loops_usable("a_blank_device_is_written_region_by_region") {
        return;
    }
    let shm = shm_dir();
    let img = image(shm.path(), 16);
    let l = Loop::attach(&img);
    let work = tempfile::tempdir().unwrap();
    let o = precondition(
        work.path(),
        &[
            "--target",
            l.dev.to_str().unwrap(),
            "--disks",
            "2",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    // Two regions of 8 MiB, each less its 4 KiB marker, written twice.
    let region = 8 * MIB - 4096;
    for disk in v["disks"].as_array().unwrap() {
        assert_eq!(disk["size"], region, "{disk}");
        assert_eq!(disk["bytes_written"], 2 * region, "{disk}");
    }
    let bytes = std::fs::read(&l.dev).unwrap();
    for (i, block) in bytes.chunks(4096).enumerate() {
        assert!(block.iter().any(|&b| b != 0), "block {i} was not written");
    }
}
