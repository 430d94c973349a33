//! A cloud image as a worker VM's guest (issue 40): the NoCloud seed iofleet makes for a
//! VM, read back by tools that are not iofleet's (mtools, dosfstools' fsck, blkid), and
//! the agent's `--guest-join` mode refusing what it cannot use. Booting an image is
//! measured in bench/cloud_image.py, not here: building one takes minutes.

mod common;

use std::path::Path;
use std::process::Command;

use common::{iofleet, need};
use iofleet_fleet::vms::guest::GuestJoin;
use iofleet_fleet::vms::nocloud::{self, Seed, SEED_AGENT, SEED_JOIN, SEED_LABEL};

fn run(cmd: &mut Command) -> Vec<u8> {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// File `name` of the FAT image `img`, read by mtools.
fn mtype(img: &Path, name: &str) -> Vec<u8> {
    run(Command::new("mtype")
        .arg("-i")
        .arg(img)
        .arg(format!("::/{name}")))
}

fn join() -> GuestJoin {
    GuestJoin {
        fingerprint: "ab".repeat(32),
        token: "k".repeat(64),
        rank: 5,
        disks: 3,
        join_timeout_s: 60,
    }
}

#[test]
fn the_seed_is_a_cidata_fat_file_system_with_every_file() {
    let test = "the_seed_is_a_cidata_fat_file_system_with_every_file";
    if !need::need(test, &["mdir", "mtype", "mcopy", "fsck.fat", "blkid"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // An "executable" of 5 MiB and 3 bytes: many clusters, the last one partly used.
    let agent: Vec<u8> = (0..(5u32 << 20) + 3)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let join = join();
    let seed = Seed {
        domain: "iofleet-bench-5",
        iofleet: &agent,
        join: &join,
    };
    let img = d.path().join("seed.img");
    let mut f = std::fs::File::create(&img).unwrap();
    let n = seed.write(&mut f).unwrap();
    drop(f);
    assert_eq!(std::fs::metadata(&img).unwrap().len(), n);
    assert_eq!(n % 512, 0, "whole sectors");

    // The file system is consistent to dosfstools' checker, read-only.
    run(Command::new("fsck.fat").arg("-n").arg(&img));
    // blkid (what cloud-init and mount LABEL= ask) sees a vfat file system labelled cidata.
    let probe = String::from_utf8(run(Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(&img)))
    .unwrap();
    assert!(probe.contains("TYPE=vfat\n"), "{probe}");
    assert!(probe.contains(&format!("LABEL={SEED_LABEL}\n")), "{probe}");
    assert!(probe.contains("VERSION=FAT16\n"), "{probe}");

    // Every file, by its long name, in the root directory, and nothing else.
    let listing = String::from_utf8(run(Command::new("mdir")
        .args(["-b", "-i"])
        .arg(&img)
        .arg("::/")))
    .unwrap();
    let mut names: Vec<&str> = listing
        .lines()
        .map(|l| l.trim_start_matches("::/"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["iofleet", "iofleet-join.json", "meta-data", "user-data"]
    );

    assert_eq!(
        String::from_utf8(mtype(&img, "meta-data")).unwrap(),
        "instance-id: \"iofleet-bench-5-abababababab\"\nlocal-hostname: \"iofleet-bench-5\"\n"
    );
    // The user-data is cloud-config whose runcmd starts the agent from the seed.
    let user = String::from_utf8(mtype(&img, "user-data")).unwrap();
    assert_eq!(user, nocloud::user_data());
    assert!(user.starts_with("#cloud-config\n"), "{user}");
    let config: yaml_serde::Value = yaml_serde::from_str(&user).unwrap();
    let runcmd = config["runcmd"][0].as_str().unwrap();
    assert!(
        runcmd.contains(&format!("install -m 0755 /run/iofleet/seed/{SEED_AGENT} ")),
        "{runcmd}"
    );
    assert!(
        runcmd.contains("/run/iofleet/iofleet agent --guest-join /run/iofleet/join.json"),
        "{runcmd}"
    );
    let back: GuestJoin = serde_json::from_slice(&mtype(&img, SEED_JOIN)).unwrap();
    assert_eq!(back, join);
    // The executable, byte for byte (mcopy: binary, no text conversion).
    let out = d.path().join("agent");
    run(Command::new("mcopy")
        .args(["-n", "-i"])
        .arg(&img)
        .arg(format!("::/{SEED_AGENT}"))
        .arg(&out));
    assert!(std::fs::read(&out).unwrap() == agent, "the agent differs");
}

#[test]
fn a_guest_join_the_agent_cannot_use_is_refused_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("none.json");
    let o = iofleet()
        .args(["agent", "--guest-join"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("--guest-join: {}", missing.display())),
        "{err}"
    );

    let bad = d.path().join("bad.json");
    std::fs::write(&bad, b"{\"rank\": 1}").unwrap();
    let o = iofleet()
        .args(["agent", "--guest-join"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("--guest-join: {}: missing field", bad.display())),
        "{err}"
    );

    // The VM's join file gives its rank, its disks the target.
    let good = d.path().join("join.json");
    std::fs::write(&good, serde_json::to_vec(&join()).unwrap()).unwrap();
    for extra in [
        &["--rank", "1"][..],
        &["--target", "/dev/null"],
        &["--replay"],
    ] {
        let o = iofleet()
            .args(["agent", "--guest-join"])
            .arg(&good)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--guest-join: the VM's join file"), "{err}");
    }
    let o = iofleet()
        .args(["agent", "--guest-join"])
        .arg(&good)
        .args(["--join-file", "x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot be used with"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
