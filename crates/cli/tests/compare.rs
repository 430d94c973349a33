//! `iofleet compare` and its regression gate through the binary: % changes against the
//! baseline, the multi-configuration table for more than two runs, `--fail-if` exit
//! codes 1 (violated) and 0 (held), and malformed conditions (exit 2, naming --fail-if).

mod results_common;

use results_common::*;

fn compare(args: &[&str]) -> std::process::Output {
    let t = two_runs();
    let mut a = vec!["compare"];
    a.extend_from_slice(args);
    with_db(&t.db, &a)
}

#[test]
fn shows_values_and_changes_against_the_baseline() {
    let t = two_runs();
    let o = compare(&[&t.base_id, &t.cand_id]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let s = out(&o);
    assert!(s.contains(&format!("[1] {}  mirror", t.base_id)), "{s}");
    assert!(s.contains("<- baseline"), "{s}");
    // The candidate ran at half the baseline's rate: about -50% IOPS.
    let line = s
        .lines()
        .find(|l| l.starts_with("IOPS ") && !l.contains("median"))
        .unwrap();
    let change: f64 = line
        .split_whitespace()
        .last()
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!((change + 50.0).abs() < 5.0, "{line}");
    for metric in [
        "read p99 µs",
        "write p99.9 µs",
        "host CPU %",
        "outstanding I/O",
    ] {
        assert!(s.contains(metric), "{metric} missing: {s}");
    }
    // With --baseline the other run is the reference: +100%.
    let o = compare(&[&t.base_id, "--baseline", &t.cand_id]);
    let s = out(&o);
    assert!(s.contains(&format!("[2] {}  mirror", t.base_id)), "{s}");
    let line = s
        .lines()
        .find(|l| l.starts_with("IOPS ") && !l.contains("median"))
        .unwrap();
    assert!(
        line.trim_end().ends_with('%') && line.contains("+"),
        "{line}"
    );
}

#[test]
fn more_than_two_runs_get_the_configuration_table() {
    let t = two_runs();
    let o = compare(&[&t.base_id, &t.cand_id, &t.cand_id[..6]]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let s = out(&o);
    for col in [
        "configuration",
        "IOPS",
        "MB/s",
        "lat µs",
        "read µs",
        "write µs",
        "stddev µs",
        "outstanding",
        "CPU %",
        "mem %",
    ] {
        assert!(s.contains(col), "column {col}: {s}");
    }
    assert!(s.contains("dedupe=off policy=raid5"), "{s}");
}

#[test]
fn gate_fails_on_regression_and_passes_otherwise() {
    let t = two_runs();
    // Candidate at half the IOPS: 'iops < -5%' is violated.
    let o = compare(&[
        &t.base_id,
        &t.cand_id,
        "--fail-if",
        "iops < -5%",
        "--fail-if",
        "read.p99 > 10s",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", out(&o), err(&o));
    let e = err(&o);
    assert!(e.contains("regression gate failed: 1 of 2"), "{e}");
    assert!(
        e.contains("--fail-if 'iops < -5%'") && e.contains(&t.cand_id),
        "{e}"
    );
    assert!(
        !e.contains("--fail-if 'read.p99 > 10s'"),
        "held conditions are not errors: {e}"
    );
    assert!(
        out(&o).contains("ok   --fail-if 'read.p99 > 10s'"),
        "{}",
        out(&o)
    );

    // Reversed: the faster run against the slower baseline passes.
    let o = compare(&[
        "--baseline",
        &t.cand_id,
        &t.base_id,
        "--fail-if",
        "iops < -5%",
        "--fail-if",
        "mbps<=-5%",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", out(&o), err(&o));
    assert!(out(&o).contains("ok   --fail-if 'iops < -5%'"));

    // Absolute thresholds with units.
    let o = compare(&[&t.base_id, &t.cand_id, "--fail-if", "write.p99 >= 1ns"]);
    assert_eq!(o.status.code(), Some(1));
    let o = compare(&[&t.base_id, &t.cand_id, "--fail-if", "iops < 1000"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

#[test]
fn malformed_conditions_and_bad_runs_are_input_errors() {
    let t = two_runs();
    for (expr, needle) in [
        ("iops <", "no value"),
        ("latency > 5%", "unknown metric 'latency'"),
        ("read.p99 > 2", "give a unit"),
        ("iops = 5%", "no operator"),
    ] {
        let o = compare(&[&t.base_id, &t.cand_id, "--fail-if", expr]);
        assert_eq!(o.status.code(), Some(2), "{expr}");
        let e = err(&o);
        assert!(
            e.contains(&format!("--fail-if '{expr}'")) && e.contains(needle),
            "{expr}: {e}"
        );
    }
    let o = compare(&[&t.base_id]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("at least two runs"), "{}", err(&o));
    let o = compare(&[&t.base_id, "deadbeefdead"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("'deadbeefdead' not found"), "{}", err(&o));
}
