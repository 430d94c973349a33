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
