//! Published-report conventions (`--convention`), the median-IOPS and peak intervals,
//! and tables that never cut names, through the binary. Runs use the null engine with
//! simulated per-worker latencies (no device, simulated time): worker 0 is ten times
//! faster than worker 1, so the workers' loads are unequal and a per-worker mean is not
//! the I/O-weighted one. Every expected figure is computed here from the run's own JSON
//! (per-worker summaries and intervals), never taken from the code under test.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

const MIB: f64 = 1_048_576.0;

/// Two unequal workers, 70% reads, 12 measured half-second intervals.
const UNEQUAL: &[&str] = &[
    "--engine",
    "null",
    "--sim-latency",
    "exp:50us;exp:500us",
    "--workers",
    "2",
    "--disks",
    "1",
    "--threads",
    "1",
    "--qd",
    "2",
    "--read-pct",
    "70",
    "--duration",
    "6s",
    "--warmup",
    "1s",
    "--interval",
    "500ms",
];

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/result.schema.json"
    ))
    .expect("schema file");
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).expect("valid schema")
}

fn check_schema(v: &Value) {
    let errors: Vec<String> = schema()
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        "{what}: {a} vs {b}"
    );
}

/// The convention's figure `key` of a result JSON.
fn figure<'a>(v: &'a Value, key: &str) -> &'a Value {
    v["convention"]["figures"]
        .as_array()
        .expect("a convention block")
        .iter()
        .find(|g| g["key"] == key)
        .unwrap_or_else(|| panic!("no figure {key}: {}", v["convention"]))
}

/// Unweighted mean over workers of `workers[].DIR.latency_us.FIELD`, in ms.
fn worker_mean_ms(v: &Value, dir: &str, field: &str) -> f64 {
    let w = v["workers"].as_array().unwrap();
    w.iter()
        .map(|w| f(&w[dir]["latency_us"][field]))
        .sum::<f64>()
        / w.len() as f64
        / 1000.0
}

fn unequal_run(dir: &Path, extra: &[&str]) -> Value {
    let mut args = UNEQUAL.to_vec();
    args.extend_from_slice(extra);
    run_json(dir, &args)
}

#[test]
fn hcibench_figures_are_per_worker_aggregates_beside_the_exact_ones() {
    let d = tempfile::tempdir().unwrap();
    let v = unequal_run(d.path(), &["--no-save", "--convention", "hcibench"]);
    check_schema(&v);
    assert_eq!(v["convention"]["name"], "hcibench");
    let s = &v["summary"];
    let workers = v["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    // The loads are unequal: the fast worker did far more I/O.
    let ios: Vec<f64> = workers.iter().map(|w| f(&w["all"]["ios"])).collect();
    assert!(ios[0] > 3.0 * ios[1], "{ios:?}");

    // MiB/s = bytes / 2^20 / s, beside the exact MB/s.
    let mib = f(&s["all"]["bytes"]) / MIB / f(&v["run"]["duration_s"]);
    let t = figure(&v, "throughput");
    assert_eq!(t["label"], "MiB/s (HCIBench)");
    close(f(&t["value"]), mib, "MiB/s");
    assert_eq!(t["exact"], s["all"]["mbps"]);

    // Latency, read and write latency: the unweighted mean of the workers' means, ms.
    for (key, dir) in [
        ("latency", "all"),
        ("read_latency", "read"),
        ("write_latency", "write"),
    ] {
        let g = figure(&v, key);
        close(f(&g["value"]), worker_mean_ms(&v, dir, "mean"), key);
        assert_eq!(g["exact"], s[dir]["latency_us"]["mean"], "{key}");
    }
    // With unequal workers it lies above the I/O-weighted mean.
    let lat = f(&figure(&v, "latency")["value"]);
    let exact_ms = f(&s["all"]["latency_us"]["mean"]) / 1000.0;
    assert!(lat > 1.5 * exact_ms, "{lat} ms vs exact {exact_ms} ms");

    // The deviation is the mean of the workers' deviations; the "95%tile" is
    // mean + 1.645 σ of those aggregates.
    let sd = worker_mean_ms(&v, "all", "stddev");
    close(f(&figure(&v, "latency_stddev")["value"]), sd, "stddev");
    close(
        f(&figure(&v, "p95_latency")["value"]),
        worker_mean_ms(&v, "all", "mean") + 1.645 * sd,
        "p95",
    );
    assert_eq!(
        figure(&v, "p95_latency")["exact"],
        s["all"]["latency_us"]["p95"]
    );

    // Outstanding I/O: Σ per worker of its mean I/Os in flight (IOPS × mean latency),
    // which Little's law makes the fleet's measured mean.
    let oio: f64 = workers
        .iter()
        .map(|w| f(&w["all"]["iops"]) * f(&w["all"]["latency_us"]["mean"]) / 1e6)
        .sum();
    let g = figure(&v, "outstanding_io");
    close(f(&g["value"]), oio, "outstanding");
    let measured = f(&s["outstanding_io"]["measured_mean"]);
    assert!(
        (oio - measured).abs() < 1e-3 * measured,
        "{oio} vs {measured}"
    );

    // The exact result is all there, unchanged: each direction's I/Os are the workers',
    // reads and writes make up all, and the median interval's IOPS is one of the
    // measured intervals' range.
    for dir in ["all", "read", "write"] {
        let by_worker: u64 = workers
            .iter()
            .map(|w| w[dir]["ios"].as_u64().unwrap())
            .sum();
        assert_eq!(s[dir]["ios"].as_u64(), Some(by_worker), "summary.{dir}");
    }
    assert_eq!(
        f(&s["all"]["ios"]),
        f(&s["read"]["ios"]) + f(&s["write"]["ios"])
    );
    let measured: Vec<f64> = v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["warmup"] == false)
        .map(|i| f(&i["iops"]))
        .collect();
    let median = f(&s["iops_median_interval"]);
    assert!(
        measured.iter().any(|&x| x <= median) && measured.iter().any(|&x| x >= median),
        "{median} outside {measured:?}"
    );
}

#[test]
fn other_conventions_relabel_or_aggregate_as_their_tools_do() {
    let d = tempfile::tempdir().unwrap();
    let v = unequal_run(d.path(), &["--no-save", "--convention", "vmfleet"]);
    check_schema(&v);
    let s = &v["summary"];
    // VM Fleet: IOPS-weighted averages (= exact), percentiles averaged over workers.
    let avg = figure(&v, "read_average");
    close(
        f(&avg["value"]),
        f(&s["read"]["latency_us"]["mean"]) / 1000.0,
        "VM Fleet read average",
    );
    let p99 = figure(&v, "write_p99");
    assert_eq!(p99["label"], "write p99 ms (VM Fleet)");
    close(
        f(&p99["value"]),
        worker_mean_ms(&v, "write", "p99"),
        "VM Fleet write p99",
    );
    assert_eq!(p99["exact"], s["write"]["latency_us"]["p99"]);

    let v = unequal_run(d.path(), &["--no-save", "--convention", "iometer"]);
    check_schema(&v);
    let s = &v["summary"];
    close(
        f(&figure(&v, "throughput")["value"]),
        f(&s["all"]["bytes"]) / MIB / f(&v["run"]["duration_s"]),
        "Iometer MiBps",
    );
    close(
        f(&figure(&v, "mbps_decimal")["value"]),
        f(&s["all"]["mbps"]),
        "Iometer MBps",
    );
    assert_eq!(
        figure(&v, "outstanding_ios")["value"].as_f64(),
        s["outstanding_io"]["configured"].as_f64()
    );

    // exact: no convention block at all.
    let v = unequal_run(d.path(), &["--no-save"]);
    assert!(v.get("convention").is_none(), "{}", v["convention"]);
}

/// The exported JSON is the result type's fields plus the documented derived ones: with
/// those removed it reads back as a `RunResult` and writes out unchanged.
#[test]
fn the_json_is_the_result_plus_the_derived_interval_points() {
    let d = tempfile::tempdir().unwrap();
    let mut v = unequal_run(d.path(), &["--no-save"]);
    check_schema(&v);
    let summary = v["summary"].as_object_mut().unwrap();
    assert!(summary
        .remove("median_interval")
        .is_some_and(|m| m.is_object()));
    assert!(summary
        .remove("peak_interval")
        .is_some_and(|m| m.is_object()));
    let typed: iofleet_stats::result::RunResult = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), v);
}

/// The median-IOPS interval (lower middle of an even count) and the peak interval,
/// found here from the JSON's own intervals.
#[test]
fn median_and_peak_intervals_are_those_of_the_intervals() {
    let d = tempfile::tempdir().unwrap();
    let v = unequal_run(d.path(), &["--no-save"]);
    let interval_s = f(&v["run"]["interval_s"]);
    let mut counted: Vec<&Value> = v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["warmup"] == false && f(&i["duration_s"]) >= interval_s / 2.0)
        .collect();
    assert_eq!(counted.len(), 12, "6 s of 500 ms intervals");
    let distinct: std::collections::BTreeSet<u64> =
        counted.iter().map(|i| f(&i["iops"]) as u64).collect();
    assert!(distinct.len() > 3, "intervals differ: {distinct:?}");
    counted.sort_by(|a, b| {
        f(&a["iops"])
            .total_cmp(&f(&b["iops"]))
            .then(a["index"].as_u64().cmp(&b["index"].as_u64()))
    });
    let median = counted[(counted.len() - 1) / 2];
    let m = &v["summary"]["median_interval"];
    assert_eq!(m["index"], median["index"]);
    for dir in ["all", "read", "write"] {
        for k in ["mean_us", "p99_us"] {
            assert_eq!(m[dir][k], median[dir][k], "{dir}.{k}");
        }
    }
    // The two middle intervals average to the published median IOPS.
    let mid = (f(&counted[5]["iops"]) + f(&counted[6]["iops"])) / 2.0;
    close(mid, f(&v["summary"]["iops_median_interval"]), "median IOPS");
    // The peak: the highest IOPS, the earliest of equal ones.
    let top = f(&counted[counted.len() - 1]["iops"]);
    let peak = counted
        .iter()
        .filter(|i| f(&i["iops"]) == top)
        .min_by_key(|i| i["index"].as_u64())
        .unwrap();
    let p = &v["summary"]["peak_interval"];
    assert_eq!(p["index"], peak["index"]);
    assert_eq!(p["iops"], peak["iops"]);
    assert_eq!(p["t_s"], peak["t_s"]);

    // The table shows both rows with the interval's index and mean latency.
    let o = run_in(
        d.path(),
        &[&["run"], UNEQUAL, &["--no-save", "--quiet", "--wide"]].concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("median-IOPS interval"), "{text}");
    assert!(text.contains("peak-IOPS interval"), "{text}");
    // Twelve intervals whose two middle ones differ: the median line says why the row's
    // IOPS is not the median.
    let median = format!(
        "IOPS median of 12 measured 0.5 s intervals: {:.0}, the mean of the two middle \
         intervals (an even count); the median-IOPS interval below is the lower of them",
        f(&v["summary"]["iops_median_interval"])
    );
    assert!(text.contains(&median), "{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("median-IOPS interval"))
        .unwrap();
    let row_iops: f64 = row.split_whitespace().nth(4).unwrap().parse().unwrap();
    assert_eq!(row_iops, f(&m["iops"]).round(), "{row}");
    assert!(
        row_iops < f(&v["summary"]["iops_median_interval"]).round(),
        "{text}"
    );
    // Eleven: the median is the middle interval's IOPS, and nothing needs saying.
    let odd: Vec<&str> = UNEQUAL
        .iter()
        .map(|a| if *a == "6s" { "5500ms" } else { a })
        .collect();
    let o = run_in(
        d.path(),
        &[&["run"], odd.as_slice(), &["--no-save", "--quiet"]].concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("IOPS median of 11 measured"), "{text}");
    assert!(!text.contains("two middle"), "{text}");
}

/// A run recorded in a store shows the same convention figures and intervals from the
/// store (recomputed from its histograms) as it printed live.
#[test]
fn a_stored_run_gives_the_live_figures() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    let db = db.to_str().unwrap();
    let live = unequal_run(
        d.path(),
        &["--db", db, "--name", "unequal", "--convention", "hcibench"],
    );
    let o = run_in(
        d.path(),
        &[
            "results",
            "export",
            "unequal",
            "--convention",
            "hcibench",
            "--db",
            db,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
    check_schema(&stored);
    let live_figs = live["convention"]["figures"].as_array().unwrap();
    let stored_figs = stored["convention"]["figures"].as_array().unwrap();
    assert_eq!(live_figs.len(), stored_figs.len());
    for (a, b) in live_figs.iter().zip(stored_figs) {
        assert_eq!(a["key"], b["key"]);
        for k in ["value", "exact"] {
            match (a[k].as_f64(), b[k].as_f64()) {
                (Some(x), Some(y)) => close(x, y, &format!("{} {k}", a["key"])),
                (x, y) => assert_eq!(x, y, "{} {k}", a["key"]),
            }
        }
    }
    for k in ["median_interval", "peak_interval"] {
        assert_eq!(
            live["summary"][k]["index"], stored["summary"][k]["index"],
            "{k}"
        );
        assert_eq!(
            live["summary"][k]["iops"], stored["summary"][k]["iops"],
            "{k}"
        );
    }
    // `results show` prints the labelled figures beside the exact ones.
    let o = run_in(
        d.path(),
        &[
            "results",
            "show",
            "unequal",
            "--convention",
            "hcibench",
            "--db",
            db,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let mib = format!("{:.2}", f(&figure(&live, "throughput")["value"]));
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("MiB/s (HCIBench)"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(&mib), "{line} lacks {mib}");
    assert!(text.contains("iofleet exact"), "{text}");
    // The CSV export carries them as kind=convention rows.
    let o = run_in(
        d.path(),
        &[
            "results",
            "export",
            "unequal",
            "--format",
            "csv",
            "--convention",
            "hcibench",
            "--db",
            db,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let csv = stdout(&o);
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let row = csv
        .lines()
        .find(|l| l.starts_with("convention,") && l.contains(",throughput,"))
        .unwrap_or_else(|| panic!("{csv}"));
    let cells: Vec<&str> = row.split(',').collect();
    assert_eq!(cells[col("convention")], "hcibench");
    let value: f64 = cells[col("value")].parse().unwrap();
    close(value, f(&figure(&live, "throughput")["value"]), "CSV MiB/s");
}

/// `compare` and `report` show the convention rows and the interval figures.
#[test]
fn compare_and_report_show_the_convention() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    let db = db.to_str().unwrap();
    unequal_run(d.path(), &["--db", db, "--name", "first"]);
    unequal_run(d.path(), &["--db", db, "--name", "second"]);
    let o = run_in(
        d.path(),
        &[
            "compare",
            "first",
            "second",
            "--convention",
            "hcibench",
            "--db",
            db,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for row in [
        "MiB/s (HCIBench)",
        "latency ms (HCIBench)",
        "MB/s",
        "IOPS (peak interval)",
        "p99 (median-IOPS interval) µs",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(row)),
            "no row {row}: {text}"
        );
    }
    // --json: each run's figures; none without a convention.
    let json = |extra: &[&str]| -> Value {
        let mut args = vec!["compare", "first", "second", "--json", "--db", db];
        args.extend_from_slice(extra);
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let v = json(&["--convention", "hcibench"]);
    let runs = v["convention"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs[0]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["label"] == "MiB/s (HCIBench)"));
    assert!(json(&[]).get("convention").is_none());

    let o = run_in(
        d.path(),
        &[
            "report",
            "first",
            "second",
            "--convention",
            "hcibench",
            "--db",
            db,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(
        page.contains("As HCIBench reports it"),
        "no convention section"
    );
    assert!(page.contains("MiB/s (HCIBench)"));
    assert!(page.contains("peak interval IOPS"));
    assert!(page.contains("median-IOPS interval p99 µs"));
}

#[test]
fn a_bad_convention_is_refused_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    for args in [
        &["run", "--engine", "null", "--convention", "vdbench"][..],
        &["results", "show", "latest", "--convention", "vdbench"],
        &["results", "export", "latest", "--convention", "vdbench"],
        &["compare", "a", "b", "--convention", "vdbench"],
        &["report", "a", "--convention", "vdbench"],
    ] {
        let o = run_in(d.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("--convention"), "{args:?}: {e}");
        assert!(e.contains("hcibench"), "{args:?}: {e}");
    }
}

/// Names and labels of 40+ characters appear whole, and columns stay aligned.
#[test]
fn long_names_and_labels_are_not_cut() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    let db = db.to_str().unwrap();
    let long_name = "a-rather-long-run-name-for-the-nightly-vdi-boot-storm";
    let long_test = "test=monday-login-storm-with-antivirus-scans-enabled";
    let long_cfg = "cfg=two-disk-groups-with-dedupe-and-compression-on";
    let short = [
        "--engine",
        "null",
        "--duration",
        "300ms",
        "--warmup",
        "0s",
        "--interval",
        "100ms",
        "--quiet",
        "--db",
        db,
    ];
    // Short names that no run id (8 hex digits) can start with: "b" would be ambiguous
    // with every id beginning with b.
    for (name, test, cfg) in [
        (long_name, long_test, long_cfg),
        ("run-x", long_test, "cfg=one"),
        ("run-y", "test=other", long_cfg),
    ] {
        let mut args = vec!["run", "--name", name, "--label", test, "--label", cfg];
        args.extend_from_slice(&short);
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let labels = format!("{long_cfg} {long_test}");

    let o = run_in(d.path(), &["results", "list", "--db", db]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains(long_name), "{text}");
    assert!(text.contains(&labels), "{text}");
    // Every row's labels start in the column of the `labels` heading.
    let lines: Vec<&str> = text.lines().collect();
    let at = |l: &str, s: &str| l.find(s).map(|b| l[..b].chars().count());
    let col = at(lines[0], "labels").unwrap();
    for l in &lines[1..] {
        assert_eq!(at(l, "cfg="), Some(col), "{text}");
    }

    // compare: the run list and the configuration table (3 runs).
    let o = run_in(
        d.path(),
        &["compare", long_name, "run-x", "run-y", "--db", db],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains(long_name), "{text}");
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("run "))
        .take(4)
        .collect();
    assert_eq!(table.len(), 4, "{text}");
    assert!(table[1].contains(&labels), "{text}");
    // The IOPS column ends in the same place on every row.
    let end = at(table[0], "IOPS").unwrap() + 4;
    for row in &table[1..] {
        let chars: Vec<char> = row.chars().collect();
        assert!(
            chars[end - 1].is_ascii_digit() && chars[end] == ' ',
            "IOPS column misaligned:\n{}",
            table.join("\n")
        );
    }

    // --by / --configs: long test and configuration values whole.
    let o = run_in(
        d.path(),
        &[
            "compare",
            long_name,
            "run-x",
            "run-y",
            "--by",
            "test",
            "--configs",
            "cfg",
            "--db",
            db,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for v in [long_test, long_cfg] {
        let value = v.split_once('=').unwrap().1;
        assert!(
            text.lines().any(|l| l.contains(value) && !l.contains(':')),
            "{value} cut: {text}"
        );
    }
}
