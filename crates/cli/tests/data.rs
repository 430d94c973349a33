//! Data patterns end to end: real runs write disk files in a scratch directory, then the
//! files are read back and the written units measured, by counting distinct units and
//! with a real compressor (LZ4, each unit on its own). Bad `[data]` input is exit 2.

mod common;

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::path::Path;

use common::{iofleet, run_json, stderr};

const UNIT: usize = 4096;

/// (written units, dedupe ratio, compression ratio) of the disk files' written units. A
/// unit that is all zeros was never written (the run does not prepare the disks), except
/// under the zero pattern.
fn measure(dir: &Path, files: &[&str]) -> (usize, f64, f64) {
    let hasher = RandomState::new();
    let mut distinct = HashSet::new();
    let (mut units, mut bytes, mut packed) = (0usize, 0usize, 0usize);
    for f in files {
        let data = std::fs::read(dir.join("iofleet-data").join(f)).unwrap();
        // The last 4 KiB is the fill marker's place, not data.
        for u in data[..data.len() - UNIT].chunks(UNIT) {
            if u.iter().all(|&b| b == 0) {
                continue;
            }
            units += 1;
            bytes += u.len();
            distinct.insert(hasher.hash_one(u));
            packed += lz4_flex::block::compress(u).len();
        }
    }
    (
        units,
        units as f64 / distinct.len().max(1) as f64,
        bytes as f64 / packed.max(1) as f64,
    )
}

const FILES: [&str; 4] = [
    "w000-d000.iofleet",
    "w000-d001.iofleet",
    "w001-d000.iofleet",
    "w001-d001.iofleet",
];

/// A write-only sequential run of 2 workers × 2 disks of 4 MiB, no prepare, with `extra`.
fn write_run(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "--bs",
        "64k",
        "--read-pct",
        "0",
        "--random-pct",
        "0",
        "--workers",
        "2",
        "--disks",
        "2",
        "--disk-size",
        "4m",
        "--duration",
        "1s",
        "--interval",
        "500ms",
        "--prepare",
        "none",
        "--engine",
        "psync",
        "--direct=false",
    ];
    args.extend_from_slice(extra);
    let v = run_json(dir, &args);
    assert!(v["summary"]["write"]["ios"].as_u64().unwrap() > 0);
    assert_eq!(v["summary"]["errors"]["count"], 0);
    v
}

#[test]
fn written_units_measure_the_requested_ratios() {
    let d = tempfile::tempdir().unwrap();
    let v = write_run(d.path(), &["--dedupe-ratio", "3", "--compress-ratio", "2"]);
    let data = &v["run"]["plan"]["data"];
    assert_eq!(data["pattern"], "random");
    assert_eq!(data["dedupe_ratio"], 3.0);
    assert_eq!(data["compress_ratio"], 2.0);
    assert_eq!(data["dedupe_unit"], 4096);
    let (units, dedupe, compress) = measure(d.path(), &FILES);
    assert!(units > 1000, "{units} units written");
    assert!((dedupe - 3.0).abs() <= 0.15, "dedupe {dedupe}");
    assert!((compress - 2.0).abs() <= 0.1, "compress {compress}");
    // The table says what the writes carried.
    let id = v["stored"]["id"].as_str().expect("the run was stored");
    let o = common::run_in(d.path(), &["results", "show", id]);
    let table = common::stdout(&o);
    assert!(
        table.contains("data: random, dedupe 3:1, compress 2:1 per 4k unit"),
        "{table}"
    );
}

#[test]
fn random_writes_are_distinct_and_incompressible() {
    let d = tempfile::tempdir().unwrap();
    let v = write_run(d.path(), &[]);
    assert_eq!(v["run"]["plan"]["data"]["dedupe_ratio"], 1.0);
    let (units, dedupe, compress) = measure(d.path(), &FILES);
    assert!(units > 1000, "{units} units written");
    assert_eq!(dedupe, 1.0);
    assert!(compress < 1.01, "compress {compress}");
}

#[test]
fn zero_pattern_writes_zeros() {
    let d = tempfile::tempdir().unwrap();
    // Random data first, then zeros over it: sequential writes that cover every disk
    // leave no unit that is not zero.
    let first = write_run(d.path(), &[]);
    assert!(measure(d.path(), &FILES).0 > 1000);
    let v = write_run(d.path(), &["--pattern", "zero"]);
    assert_eq!(v["run"]["plan"]["data"]["pattern"], "zero");
    let bytes = v["summary"]["write"]["bytes"].as_u64().unwrap();
    assert!(
        bytes >= 8 * (4 << 20),
        "{bytes} bytes written: too few to cover the disks"
    );
    let (units, ..) = measure(d.path(), &FILES);
    assert_eq!(units, 0, "non-zero units left");
    let show = |v: &serde_json::Value| {
        let id = v["stored"]["id"].as_str().expect("the run was stored");
        common::stdout(&common::run_in(d.path(), &["results", "show", id]))
    };
    assert!(show(&v).contains("\ndata: zero\n"), "{}", show(&v));
    // The default (distinct, incompressible) says nothing.
    assert!(!show(&first).contains("data:"), "{}", show(&first));
}

#[test]
fn prepare_fills_with_the_ratios() {
    let d = tempfile::tempdir().unwrap();
    run_json(
        d.path(),
        &[
            "--bs",
            "4k",
            "--read-pct",
            "100",
            "--workers",
            "2",
            "--disks",
            "2",
            "--disk-size",
            "4m",
            "--duration",
            "100ms",
            "--interval",
            "100ms",
            "--engine",
            "psync",
            "--direct=false",
            "--dedupe-ratio",
            "3",
            "--compress-ratio",
            "2",
        ],
    );
    let (units, dedupe, compress) = measure(d.path(), &FILES);
    assert_eq!(units, 4 * 1024, "every unit of every disk filled");
    assert!((dedupe - 3.0).abs() <= 0.15, "dedupe {dedupe}");
    assert!((compress - 2.0).abs() <= 0.1, "compress {compress}");
    // Other ratios are another fill: the marker does not let the old one count.
    let v = run_json(
        d.path(),
        &[
            "--bs",
            "4k",
            "--read-pct",
            "100",
            "--workers",
            "2",
            "--disks",
            "2",
            "--disk-size",
            "4m",
            "--duration",
            "100ms",
            "--interval",
            "100ms",
            "--engine",
            "psync",
            "--direct=false",
            "--dedupe-ratio",
            "2",
        ],
    );
    assert!(!v["notices"].to_string().contains("valid fill marker"));
    let (_, dedupe, compress) = measure(d.path(), &FILES);
    assert!((dedupe - 2.0).abs() <= 0.1, "dedupe {dedupe}");
    assert!(compress < 1.01, "compress {compress}");
}

#[test]
fn bad_data_flags_and_keys_exit_2_naming_them() {
    let d = tempfile::tempdir().unwrap();
    let profile = d.path().join("p.toml");
    for (args, needles) in [
        (
            vec!["--dedupe-ratio", "0"],
            vec!["--dedupe-ratio", "data.dedupe_ratio"],
        ),
        (
            vec!["--compress-ratio", "0.5"],
            vec!["--compress-ratio", "data.compress_ratio"],
        ),
        (
            vec!["--dedupe-unit", "1000"],
            vec!["--dedupe-unit", "data.dedupe_unit", "512"],
        ),
    ] {
        let mut all = vec!["run", "--bs", "4k", "--engine", "null", "--duration", "1s"];
        all.extend_from_slice(&args);
        let o = iofleet().current_dir(d.path()).args(&all).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        for n in needles {
            assert!(err.contains(n), "{args:?}: {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
    std::fs::write(
        &profile,
        "name = \"p\"\n[data]\ndedupe_ratio = 0\n[[stream]]\nbs = \"4k\"\nread_pct = 0\n\
         random_pct = 0\n",
    )
    .unwrap();
    let o = iofleet()
        .current_dir(d.path())
        .args(["run", profile.to_str().unwrap(), "--engine", "null"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("data.dedupe_ratio"), "{}", stderr(&o));
}
