//! `iofleet compare` and its regression gate through the binary: % changes against the
//! baseline, the multi-configuration table for more than two runs, `--fail-if` exit
//! codes 1 (violated) and 0 (held), and malformed conditions (exit 2, naming --fail-if);
//! `--json`, `--gain ratio`, and `--by LABEL --configs LABEL` tables (one row per test,
//! one column per configuration) as published reports lay them out.

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
    // The change printed is the one the two stored runs give, (new − old) ÷ old, worked
    // out here from their own JSON: not a wall-clock expectation of the rates (a loaded
    // machine may not reach them), and the candidate's half rate makes it negative.
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
    let iops = |v: &serde_json::Value| v["summary"]["all"]["iops"].as_f64().unwrap();
    let expected = (iops(&t.cand) - iops(&t.base)) / iops(&t.base) * 100.0;
    assert!(
        (change - expected).abs() <= 0.05 + 1e-9,
        "{line} vs {expected:.3}%"
    );
    assert!(change < 0.0, "{line}");
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

#[test]
fn json_and_ratio_gains() {
    let t = two_runs();
    let o = compare(&[&t.base_id, &t.cand_id, "--json", "--gain", "ratio"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["baseline"], t.base_id.as_str());
    assert_eq!(v["gain"], "ratio");
    assert_eq!(v["runs"][1]["id"], t.cand_id.as_str());
    assert_eq!(v["runs"][1]["labels"]["policy"], "raid5");
    let iops = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "iops")
        .unwrap();
    let base = t.base["summary"]["all"]["iops"].as_f64().unwrap();
    let cand = t.cand["summary"]["all"]["iops"].as_f64().unwrap();
    assert_eq!(iops["values"][0].as_f64().unwrap(), base);
    assert!(
        iops["gains"][0].is_null(),
        "no gain for the baseline itself"
    );
    let ratio = iops["gains"][1].as_f64().unwrap();
    assert!((ratio - cand / base * 100.0).abs() < 1e-9, "{ratio}");
    // Text: the same ratio as a percentage (10,000 vs 20,000 IOPS: about 50%).
    let o = compare(&[
        &t.base_id, &t.cand_id, "--gain", "ratio", "--metric", "iops",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let line = text.lines().find(|l| l.starts_with("IOPS")).unwrap();
    assert!(line.ends_with(&format!("{ratio:.0}%")), "{line}");
    assert!(text.contains("ratio = new ÷ old × 100"), "{text}");
    // The default stays the change, (new − old) ÷ old.
    let o = compare(&[&t.base_id, &t.cand_id, "--json", "--metric", "iops"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["gain"], "change");
    let change = v["metrics"][0]["gains"][1].as_f64().unwrap();
    assert!((change - (cand - base) / base * 100.0).abs() < 1e-9);
    assert_eq!(v["metrics"].as_array().unwrap().len(), 1);
}

/// Four runs as the vSAN NVMe namespaces report lays them out: tests `seqw` and `randr`,
/// configurations `ns=none` (baseline) and `ns=8`.
struct PivotRuns {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    /// Run name and its live IOPS.
    runs: Vec<(String, f64)>,
}

fn pivot_runs() -> &'static PivotRuns {
    static RUNS: std::sync::OnceLock<PivotRuns> = std::sync::OnceLock::new();
    RUNS.get_or_init(|| {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let db = dir.path().join("pivot.db");
        let mut runs = Vec::new();
        for (test, ns, rate) in [
            ("seqw", "none", "2000"),
            ("seqw", "8", "16000"),
            ("randr", "none", "8000"),
            ("randr", "8", "24000"),
        ] {
            let name = format!("{test}-{ns}");
            let v = record_run(
                &db,
                rate,
                &[
                    "--label",
                    &format!("test={test}"),
                    "--label",
                    &format!("ns={ns}"),
                    "--name",
                    &name,
                ],
            );
            runs.push((name, v["summary"]["all"]["iops"].as_f64().unwrap()));
        }
        PivotRuns {
            _dir: dir,
            db,
            runs,
        }
    })
}

#[test]
fn by_test_and_configs_gives_one_row_per_test_and_one_column_per_configuration() {
    let PivotRuns { db, runs, .. } = pivot_runs();
    let iops = |name: &str| runs.iter().find(|(n, _)| n == name).unwrap().1;
    let names: Vec<&str> = runs.iter().map(|(n, _)| n.as_str()).collect();
    let mut args = vec!["compare"];
    args.extend(&names);
    args.extend(["--by", "test", "--configs", "ns", "--gain", "ratio"]);
    let o = with_db(db, &args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("test "))
        .unwrap_or_else(|| panic!("{text}"));
    let cols: Vec<&str> = lines[head].split_whitespace().collect();
    assert_eq!(cols, ["test", "none", "8", "8", "ratio"], "{text}");
    let rows: Vec<Vec<&str>> = lines[head + 1..]
        .iter()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "one row per test: {text}");
    for (row, test) in rows.iter().zip(["seqw", "randr"]) {
        assert_eq!(row[0], test);
        let (old, new) = (iops(&format!("{test}-none")), iops(&format!("{test}-8")));
        let grouped = |v: f64| {
            let d = format!("{:.0}", v.round());
            let mut s = String::new();
            for (i, c) in d.chars().enumerate() {
                if i > 0 && (d.len() - i) % 3 == 0 {
                    s.push(',');
                }
                s.push(c);
            }
            s
        };
        assert_eq!(row[1], grouped(old), "{text}");
        assert_eq!(row[2], grouped(new), "{text}");
        assert_eq!(row[3], format!("{:.0}%", new / old * 100.0), "{text}");
    }
    assert!(
        text.contains("ratio = new ÷ old × 100 against ns=none"),
        "{text}"
    );

    // The same table as JSON; the baseline run picks the baseline column.
    args.extend(["--json", "--baseline", "seqw-8"]);
    let o = with_db(db, &args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let table = &v["table"];
    assert_eq!(table["baseline_config"], "8");
    assert_eq!(table["columns"], serde_json::json!(["8", "none"]));
    let rows = table["tables"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let randr = rows.iter().find(|r| r["test"] == "randr").unwrap();
    let none = &randr["cells"][1];
    assert_eq!(none["config"], "none");
    let want = iops("randr-none") / iops("randr-8") * 100.0;
    assert!((none["gain"].as_f64().unwrap() - want).abs() < 1e-9);
    assert!(randr["cells"][0]["gain"].is_null());
}

#[test]
fn by_and_configs_need_their_labels() {
    let db = &pivot_runs().db;
    let t = two_runs();
    // A run without the label is named in the error (exit 2).
    let o = with_db(
        db,
        &[
            "compare",
            "seqw-none",
            "seqw-8",
            "--by",
            "test",
            "--configs",
            "policy",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("--configs policy") && err(&o).contains("has no label 'policy'"),
        "{}",
        err(&o)
    );
    let o = compare(&[
        &t.base_id,
        &t.cand_id,
        "--by",
        "test",
        "--configs",
        "policy",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("--by test") && err(&o).contains(&t.base_id),
        "{}",
        err(&o)
    );
    let o = with_db(
        db,
        &[
            "compare",
            "seqw-none",
            "seqw-8",
            "--by",
            "test",
            "--configs",
            "test",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--configs test"), "{}", err(&o));
    // --by alone, or an unknown --metric, are refused by the parser (exit 2).
    let o = compare(&[&t.base_id, &t.cand_id, "--by", "test"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--configs"), "{}", err(&o));
    let o = compare(&[&t.base_id, &t.cand_id, "--metric", "latency"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("--metric") && err(&o).contains("unknown metric"),
        "{}",
        err(&o)
    );
    let o = compare(&[&t.base_id, &t.cand_id, "--gain", "percent"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--gain"), "{}", err(&o));
}
