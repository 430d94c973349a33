//! End-to-end data verification through the binary (issue 9): a clean verified run, and
//! each fault made behind a run's back — a flipped byte, a stale unit, two units
//! swapped, a truncated disk, a run killed mid-write and a lost write after it — found
//! by `iofleet verify` (exit 4, disk and offset named) or by the run's own reads; and
//! the bad input that is refused (exit 2). Faults are made by editing the disk file;
//! the unit header and journal layouts used here are the ones docs/verify.md documents.

mod common;

use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

const UNIT: u64 = 4096;
/// Bytes of a journal before its per-unit floors.
const JOURNAL_HEADER: usize = 64;

/// The flags every run and verify of these tests share: one 4 MiB disk file in `d`.
fn shape<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "--target",
        "d",
        "--disk-size",
        "4m",
        "--direct=false",
        "--no-save",
    ];
    v.extend_from_slice(extra);
    v
}

fn disk(dir: &Path) -> PathBuf {
    dir.join("d/w000-d000.iofleet")
}

/// A verified run of `read_pct`% reads over the disk; its JSON result.
fn verified_run(dir: &Path, read_pct: &str) -> serde_json::Value {
    run_json(
        dir,
        &shape(&[
            "--verify",
            "--duration",
            "1s",
            "--interval",
            "500ms",
            "--qd",
            "8",
            "--read-pct",
            read_pct,
        ]),
    )
}

/// `iofleet verify` on the disk: exit code and stdout.
fn verify(dir: &Path) -> (Option<i32>, String) {
    let mut args = vec!["verify"];
    args.extend(shape(&[]));
    let o = run_in(dir, &args);
    (o.status.code(), format!("{}{}", stdout(&o), stderr(&o)))
}

fn read_unit(path: &Path, offset: u64) -> Vec<u8> {
    let f = fs::File::open(path).unwrap();
    let mut b = vec![0u8; UNIT as usize];
    f.read_exact_at(&mut b, offset).unwrap();
    b
}

fn write_unit(path: &Path, offset: u64, data: &[u8]) {
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(data, offset).unwrap();
}

/// The write sequence in a unit's header.
fn seq_of(unit: &[u8]) -> u64 {
    u64::from_le_bytes(unit[24..32].try_into().unwrap())
}

/// The floors of the disk's journal.
fn floors(dir: &Path) -> Vec<u64> {
    let mut p = disk(dir).into_os_string();
    p.push(".journal");
    let b = fs::read(PathBuf::from(p)).unwrap();
    b[JOURNAL_HEADER..]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The line naming the disk and offset of a corruption of `kind`.
fn names(out: &str, offset: u64, kind: &str) -> bool {
    out.lines().any(|l| {
        l.starts_with("corruption: host ")
            && l.contains(&format!("disk w000-d000 offset {offset} "))
            && l.contains(&format!(": {kind}: expected"))
    })
}

#[test]
fn a_clean_verified_run_reports_no_corruption_and_verify_agrees() {
    let d = tempfile::tempdir().unwrap();
    let v = verified_run(d.path(), "50");
    let s = &v["summary"]["verify"];
    assert_eq!(s["corruptions"], 0, "{s}");
    assert!(s["units_checked"].as_u64().unwrap() > 100, "{s}");
    // The prepare wrote verifiable units: every unit of the disk checks.
    let (code, out) = verify(d.path());
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("1 disk(s), 1024 unit(s) checked, 0 corruption(s)"),
        "{out}"
    );
    // A run without --verify that writes removes the journal (it no longer describes
    // the disk); verify then refuses the target.
    let mut args = vec!["run"];
    args.extend(shape(&["--duration", "1s", "--read-pct", "0", "--quiet"]));
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (code, out) = verify(d.path());
    assert_eq!(code, Some(2), "{out}");
}

#[test]
fn a_flipped_byte_is_named_by_disk_and_offset() {
    let d = tempfile::tempdir().unwrap();
    verified_run(d.path(), "0");
    let at = 37 * UNIT + 1000;
    let mut u = read_unit(&disk(d.path()), at - 1000);
    u[1000] ^= 0x01;
    write_unit(&disk(d.path()), at - 1000, &u);
    let (code, out) = verify(d.path());
    assert_eq!(code, Some(4), "{out}");
    assert!(names(&out, 37 * UNIT, "checksum"), "{out}");
    assert!(out.contains("1 corruption(s)"), "{out}");
}

#[test]
fn a_verified_run_finds_corruption_with_its_own_reads_and_goes_on() {
    let d = tempfile::tempdir().unwrap();
    verified_run(d.path(), "0");
    // Every unit corrupt: whatever the reads touch is bad.
    let path = disk(d.path());
    for u in 0..1024 {
        let mut b = read_unit(&path, u * UNIT);
        b[2000] ^= 0xff;
        write_unit(&path, u * UNIT, &b);
    }
    let mut args = vec!["run"];
    args.extend(shape(&[
        "--verify",
        "--duration",
        "1s",
        "--read-pct",
        "100",
        "--json",
        "--quiet",
    ]));
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["summary"]["verify"];
    let n = s["corruptions"].as_u64().unwrap();
    // The run went on: it read many units, and counted every corrupt one.
    assert!(n > 100, "{s}");
    assert_eq!(s["first"].as_array().unwrap().len(), 20, "{s}");
    let c = &s["first"][0];
    assert_eq!(c["kind"], "checksum");
    assert_eq!(c["worker"], 0);
    assert_eq!(c["offset"].as_u64().unwrap() % UNIT, 0);
    assert!(c["path"].as_str().unwrap().ends_with("w000-d000.iofleet"));
}

#[test]
fn a_stale_unit_a_lost_write_is_detected() {
    let d = tempfile::tempdir().unwrap();
    verified_run(d.path(), "0");
    let before = fs::read(disk(d.path())).unwrap();
    verified_run(d.path(), "0");
    let now = floors(d.path());
    // A unit the second run rewrote: put its older version back.
    let u = (0..1024u64)
        .find(|&u| {
            let old = &before[(u * UNIT) as usize..((u + 1) * UNIT) as usize];
            now[u as usize] > seq_of(old)
        })
        .expect("the second run rewrote some unit");
    write_unit(
        &disk(d.path()),
        u * UNIT,
        &before[(u * UNIT) as usize..((u + 1) * UNIT) as usize],
    );
    let (code, out) = verify(d.path());
    assert_eq!(code, Some(4), "{out}");
    assert!(names(&out, u * UNIT, "stale"), "{out}");
}

#[test]
fn two_swapped_units_are_misdirected() {
    let d = tempfile::tempdir().unwrap();
    verified_run(d.path(), "0");
    let path = disk(d.path());
    let (a, b) = (5 * UNIT, 900 * UNIT);
    let (ua, ub) = (read_unit(&path, a), read_unit(&path, b));
    write_unit(&path, a, &ub);
    write_unit(&path, b, &ua);
    let (code, out) = verify(d.path());
    assert_eq!(code, Some(4), "{out}");
    assert!(names(&out, a, "misdirected"), "{out}");
    assert!(names(&out, b, "misdirected"), "{out}");
    assert!(out.contains("2 corruption(s)"), "{out}");
}

#[test]
fn a_truncated_disk_is_detected() {
    let d = tempfile::tempdir().unwrap();
    verified_run(d.path(), "0");
    let f = OpenOptions::new().write(true).open(disk(d.path())).unwrap();
    f.set_len(1000 * UNIT + 100).unwrap();
    drop(f);
    let (code, out) = verify(d.path());
    assert_eq!(code, Some(4), "{out}");
    // Units 1000..1024 are gone (the last one only in part).
    assert!(names(&out, 1000 * UNIT, "missing"), "{out}");
    assert!(out.contains("24 corruption(s)"), "{out}");
}

#[test]
fn a_killed_run_verifies_clean_and_a_lost_write_after_it_is_caught() {
    let d = tempfile::tempdir().unwrap();
    verified_run(d.path(), "0");
    let before = fs::read(disk(d.path())).unwrap();
    let mut journal = disk(d.path()).into_os_string();
    journal.push(".journal");
    let journal = PathBuf::from(journal);
    let synced = || fs::metadata(&journal).unwrap().modified().unwrap();
    let first = synced();
    let mut args = vec!["run"];
    args.extend(shape(&[
        "--verify",
        "--duration",
        "60s",
        "--interval",
        "100ms",
        "--qd",
        "16",
        "--read-pct",
        "30",
        "--quiet",
    ]));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .env("XDG_DATA_HOME", scratch_data_home())
        .current_dir(d.path())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the journal was rewritten during the run, then a little more, so
    // writes are in flight and some completed after the last sync.
    let deadline = Instant::now() + Duration::from_secs(30);
    while synced() == first && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_ne!(synced(), first, "the journal was synced during the run");
    // No false alarm: units written after the last sync, or in flight, are accepted.
    let (code, out) = verify(d.path());
    assert_eq!(code, Some(0), "{out}");
    // A write the journal recorded, lost: its unit's older version is back.
    let now = floors(d.path());
    let u = (0..1024u64)
        .find(|&u| {
            let old = &before[(u * UNIT) as usize..((u + 1) * UNIT) as usize];
            now[u as usize] > seq_of(old)
        })
        .expect("the killed run rewrote some unit before a journal sync");
    write_unit(
        &disk(d.path()),
        u * UNIT,
        &before[(u * UNIT) as usize..((u + 1) * UNIT) as usize],
    );
    let (code, out) = verify(d.path());
    assert_eq!(code, Some(4), "{out}");
    assert!(names(&out, u * UNIT, "stale"), "{out}");
}

#[test]
fn bad_input_is_refused_naming_the_flag_or_target() {
    let d = tempfile::tempdir().unwrap();
    let mut args = vec!["run"];
    args.extend(shape(&["--verify", "--engine", "null", "--duration", "1s"]));
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--verify"), "{}", stderr(&o));
    assert!(!d.path().join("d").exists(), "nothing was created");
    // The dry run makes the same check.
    let mut args = vec!["run", "--dry-run"];
    args.extend(shape(&["--verify", "--engine", "null"]));
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--verify"), "{}", stderr(&o));

    let mut args = vec!["run"];
    args.extend(shape(&["--verify", "--bs", "6k", "--duration", "1s"]));
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--bs") && stderr(&o).contains("verify unit"),
        "{}",
        stderr(&o)
    );

    // A dedupe ratio cannot hold over units that each carry a distinct header.
    let mut args = vec!["run"];
    args.extend(shape(&[
        "--verify",
        "--dedupe-ratio",
        "3",
        "--duration",
        "1s",
    ]));
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--dedupe-ratio") && stderr(&o).contains("no dedupe ratio"),
        "{}",
        stderr(&o)
    );
    assert!(!d.path().join("d").exists(), "nothing was created");

    let (code, out) = verify(d.path());
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--target d: disk w000-d000") && out.contains("has no verify journal"),
        "{out}"
    );
}

#[test]
fn contended_units_raise_no_false_alarm() {
    // 256 units, 8 threads × qd 8 of 50/50 on psync (one OS thread per lane): writes
    // and reads of the same units overlap all the time.
    let d = tempfile::tempdir().unwrap();
    for engine in ["psync", "io_uring"] {
        let v = run_json(
            d.path(),
            &[
                "--target",
                "d",
                "--disk-size",
                "1m",
                "--direct=false",
                "--no-save",
                "--verify",
                "--engine",
                engine,
                "--threads",
                "8",
                "--qd",
                "8",
                "--read-pct",
                "50",
                "--duration",
                "2s",
            ],
        );
        let s = &v["summary"]["verify"];
        assert_eq!(s["corruptions"], 0, "{engine}: {s}");
        assert!(s["units_checked"].as_u64().unwrap() > 1000, "{engine}: {s}");
    }
    let mut args = vec!["verify"];
    args.extend(["--target", "d", "--disk-size", "1m", "--direct=false"]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn the_profile_key_turns_verification_on_and_a_bad_value_names_it() {
    let d = tempfile::tempdir().unwrap();
    let profile = |value: &str| {
        let p = d.path().join("p.toml");
        fs::write(
            &p,
            format!(
                "name = \"vp\"\n[timing]\nverify = {value}\n[[stream]]\nbs = \"4k\"\nread_pct = 50\nrandom_pct = 100\n"
            ),
        )
        .unwrap();
        p.to_string_lossy().into_owned()
    };
    let p = profile("true");
    let v = run_json(d.path(), &shape(&[&p, "--duration", "1s"]));
    assert_eq!(v["summary"]["verify"]["corruptions"], 0);
    assert_eq!(
        v["run"]["plan"]["timing"]["verify"], true,
        "{}",
        v["run"]["plan"]
    );
    let p = profile("\"yes\"");
    let mut args = vec!["run"];
    args.extend(shape(&[&p, "--duration", "1s"]));
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("timing.verify"), "{}", stderr(&o));
}
