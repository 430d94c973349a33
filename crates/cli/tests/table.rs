//! The result table printed after `iofleet run` and by `results show`: it fits 120
//! columns (tables wrap into blocks of columns that repeat the row labels), `--wide`
//! keeps every table row on one line, stream rows are labelled as streams so a stream
//! named `read` is not taken for the read direction, and the median line counts the
//! intervals the median used.

mod common;

use std::fs;
use std::path::Path;

use common::*;

fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

fn table(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--engine", "null", "--duration", "1s", "--warmup", "0s"]);
    all.extend_from_slice(&["--quiet", "--db", "results.db"]);
    let o = run_in(dir, &all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn easy_run_table_fits_120_columns() {
    let d = tempfile::tempdir().unwrap();
    for workers in ["1", "3"] {
        let out = table(d.path(), &["easy-run-4k70r", "--workers", workers]);
        assert!(widest(&out) <= 120, "{} columns:\n{out}", widest(&out));
        for col in [
            "IOPS",
            "lat mean µs",
            "outstanding",
            "p99.9",
            "p99.99",
            "max",
        ] {
            assert!(out.contains(col), "table lacks {col}:\n{out}");
        }
    }
    // The stored run shows the same table.
    let o = run_in(
        d.path(),
        &["results", "show", "latest", "--db", "results.db"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = stdout(&o);
    assert!(widest(&shown) <= 120, "{shown}");
    assert!(shown.contains("p99.99"), "{shown}");
}

fn two_stream_profile(dir: &Path, first: &str, second: &str) -> String {
    let p = dir.join("streams.toml");
    fs::write(
        &p,
        format!(
            "name = \"streams\"\n[fleet]\nworkers = 1\ndisk_size = \"4m\"\n[timing]\nduration = \"1s\"\n\
             [[stream]]\nname = \"{first}\"\nbs = \"4k\"\nread_pct = 0\nrandom_pct = 100\n\
             [[stream]]\nname = \"{second}\"\nbs = \"8k\"\nread_pct = 100\nrandom_pct = 0\n"
        ),
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn stream_rows_are_labelled_as_streams() {
    let d = tempfile::tempdir().unwrap();
    let p = two_stream_profile(d.path(), "read", "write");
    let out = table(d.path(), &[&p]);
    let rows = |label: &str| {
        out.lines()
            .filter(|l| l.split_whitespace().next() == Some(label))
            .count()
    };
    // One direction row each; the streams of the same names say they are streams.
    assert_eq!(rows("read"), 1, "{out}");
    assert_eq!(rows("write"), 1, "{out}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("stream read ")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("stream write ")),
        "{out}"
    );
}

#[test]
fn wide_tables_wrap_into_blocks_unless_wide() {
    let d = tempfile::tempdir().unwrap();
    let long = "a-stream-with-a-name-long-enough-to-push-the-latency-table-past-120";
    let p = two_stream_profile(d.path(), long, "short");
    let out = table(d.path(), &[&p]);
    assert!(widest(&out) <= 120, "{out}");
    // The latency table wrapped: its label column heads each of its blocks.
    assert_eq!(out.matches("latency µs").count(), 2, "{out}");
    assert_eq!(out.matches(&format!("stream {long}")).count(), 2, "{out}");

    let wide = table(d.path(), &[&p, "--wide"]);
    assert!(widest(&wide) > 120, "{wide}");
    assert_eq!(wide.matches("latency µs").count(), 1, "{wide}");
    let row = wide
        .lines()
        .find(|l| l.contains(&format!("stream {long}")))
        .unwrap();
    assert!(
        row.split_whitespace().count() >= 13,
        "every column on one line: {row}"
    );

    let o = run_in(
        d.path(),
        &["results", "show", "latest", "--wide", "--db", "results.db"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).matches("latency µs").count(), 1);
}

#[test]
fn median_line_counts_the_intervals_the_median_used() {
    let d = tempfile::tempdir().unwrap();
    // 1.1 s in 0.5 s intervals: 0.5, 0.5 and a final 0.1 s, which the median leaves out.
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--warmup",
            "0s",
            "--duration",
            "1100ms",
            "--interval",
            "500ms",
            "--rate",
            "1000",
            "--intervals",
            "--quiet",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("IOPS median of 2 measured 0.5 s intervals: ")
            && out.contains("(1 shorter than half of 0.5 s left out)"),
        "{out}"
    );
    let rows = out.lines().filter(|l| l.contains(" measure ")).count();
    assert_eq!(rows, 3, "three measured rows are printed: {out}");
}

#[test]
fn every_optional_line_fits_120_columns() {
    use iofleet_report::{Exporter, TableExporter};
    use iofleet_stats::result::{Corruption, DiskErrors, ErrorDetail, RunResult};
    // A saturated generator (warnings) from a real run, then every other optional part
    // a run can carry: I/O errors per disk with their first failures, a failed thread,
    // verify corruptions with long paths, several hosts, one lost and one late, notices.
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--workers",
            "4",
            "--io-threads",
            "1",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--no-save",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut r: RunResult = serde_json::from_slice(&o.stdout).unwrap();
    let g = r.summary.generator.as_mut().unwrap();
    assert!(!g.warnings.is_empty(), "{g:?}");
    // Every figure of the generator line at its widest.
    g.runq_pct = Some(99.9);
    g.runq_wait_us = Some(123_456.0);
    g.runq_us_per_io = Some(12_345.67);
    g.other_load_cpus = Some(127.99);
    g.issue_lag_p99_us = Some(1_234_567.0);
    g.reap_wait_p50_us = Some(12_345.6);
    g.reap_wait_p99_us = Some(123_456.7);
    g.warnings.push("another load used 127.9 of the host's 128 CPUs while the I/O threads waited for a CPU 99.9% of the time, 123456 µs each time it was woken; the I/Os in flight meanwhile absorbed about 99% of the measured latency".into());
    let long_path = format!("/srv/{}/w000-d000", "storage-under-test".repeat(6));
    let failure = ErrorDetail {
        worker: 123,
        disk: 45,
        thread: 6,
        op: "write".into(),
        offset: 10_737_418_240,
        len: 1_048_576,
        errno: 5,
        message: "Input/output error (os error 5) on a device that stopped answering".into(),
        t_s: 1234.567,
    };
    r.summary.errors.count = 123_456_789;
    r.summary.errors.first = vec![failure.clone()];
    let mut disk = DiskErrors::new(123, 45);
    disk.count = 123_456_789;
    disk.first = vec![failure.clone(); 3];
    disk.taken_out_s = Some(1234.5);
    r.summary.errors.disks = vec![disk];
    r.summary.errors.failed_threads =
        vec![format!("I/O thread 3 on {long_path}: the engine could not be set up: io_uring_setup failed with ENOMEM after 3 tries")];
    r.summary.verify = Some(iofleet_stats::result::VerifySummary {
        units_checked: 123_456_789_012,
        units_racing: 123_456_789,
        corruptions: 123_456_789,
        first: vec![Corruption {
            host: "storage-node-with-a-long-name.example.internal".into(),
            worker: 123,
            disk: 45,
            path: long_path.clone(),
            offset: 10_737_418_240,
            kind: "stale write".into(),
            expected: "sequence 123456789 written at 1234.5 s".into(),
            found: "sequence 123456700 written at 1200.1 s".into(),
            t_s: Some(1234.5),
        }],
    });
    let first = r.hosts[0].clone();
    r.hosts = (0..3)
        .map(|i| {
            let mut h = first.clone();
            h.host = format!("root@storage-node-{i}-with-a-long-name.example.internal");
            h
        })
        .collect();
    r.hosts[1].lost_at_s = Some(1234.5);
    r.hosts[2].start_late_ms = Some(123.45);
    r.notices.push(format!(
        "--target {long_path}: a notice long enough to need wrapping, as the prepare notices are"
    ));
    let mut text = Vec::new();
    TableExporter {
        intervals: true,
        wide: false,
        disks: true,
    }
    .export(&r, &mut text)
    .unwrap();
    let text = String::from_utf8(text).unwrap();
    for part in [
        "Generator:",
        "warning:",
        "I/O errors:",
        "verify:",
        "LOST at",
        "note:",
    ] {
        assert!(text.contains(part), "{part} missing:\n{text}");
    }
    assert!(widest(&text) <= 120, "{} columns:\n{text}", widest(&text));
}
