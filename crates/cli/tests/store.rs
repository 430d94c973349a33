//! The results store through the binary: runs recorded with names and labels, listed,
//! filtered, shown, exported (JSON checked against the closed schema and equal to the
//! live result, CSV, Markdown, each saying which run it is and what it ran) and deleted;
//! run-id errors; --db/--no-save/--label handling; figures not measured shown as null
//! and `–`; and a run killed with SIGKILL mid-way.

mod results_common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use results_common::*;
use serde_json::Value;

/// The export recomputed from the stored histograms equals the live result, figure for
/// figure. Both sides come from the same summary code (the store keeps histograms and
/// counters, and one fold turns them into figures), so this proves the store loses
/// nothing; that the figures are right is checked against an independent computation
/// in `recomputed_figures_match_a_sort_of_the_raw_latencies`.
#[test]
fn recomputed_export_equals_live_result() {
    let t = two_runs();
    for (id, live) in [(&t.base_id, &t.base), (&t.cand_id, &t.cand)] {
        let o = with_db(&t.db, &["results", "export", id, "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        let rec: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_schema_valid(&rec);
        // Recomputed from the stored histograms: identical summary (I/O counts,
        // percentiles, means), streams, workers, intervals — the whole result.
        assert_eq!(rec["summary"], live["summary"]);
        assert_eq!(rec["intervals"], live["intervals"]);
        assert_eq!(rec["workers"], live["workers"]);
        // What each disk completed outside the measured phase is kept with the run.
        let u = &live["workers"][0]["disks"][0]["unmeasured"];
        assert!(u["warmup_reads"].as_u64().unwrap() > 0, "{u}");
        assert_eq!(&rec, live);
    }
}

/// Every I/O's latency, in the order they complete, of a run on the null engine with
/// the latencies given (`samples:`, cycled in order): one lane at qd 1, so I/O k takes
/// `SAMPLES[k mod n]` and completes at the sum of the latencies before it and its own.
const SAMPLES: [u64; 21] = [
    61_013, 97_021, 130_007, 250_019, 75_011, 1_900_043, 88_001, 143_009, 410_023, 69_001, 52_003,
    115_013, 640_001, 83_017, 99_991, 3_200_027, 71_003, 180_001, 92_011, 66_007, 123_457,
];

/// The oracle for the summary: the run's figures worked out from the raw latencies by a
/// sort, not by iofleet's histograms or fold. Warm-up 250 ms, 1 s measured in 250 ms
/// intervals; an I/O counts where it completes.
#[test]
fn recomputed_figures_match_a_sort_of_the_raw_latencies() {
    const WARMUP_NS: u64 = 250_000_000;
    const MEASURED_NS: u64 = 1_000_000_000;
    const INTERVAL_NS: u64 = 250_000_000;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let engine = format!(
        "null-sim:samples:{}",
        SAMPLES.map(|ns| ns.to_string()).join(",")
    );
    let o = with_db(
        &db,
        &[
            "run",
            "--engine",
            &engine,
            "--workers",
            "1",
            "--disks",
            "1",
            "--threads",
            "1",
            "--qd",
            "1",
            "--bs",
            "4k",
            "--read-pct",
            "100",
            "--warmup",
            "250ms",
            "--duration",
            "1s",
            "--interval",
            "250ms",
            "--name",
            "oracle",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let live: Value = serde_json::from_slice(&o.stdout).unwrap();
    let o = with_db(&db, &["results", "export", "oracle"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let stored: Value = serde_json::from_slice(&o.stdout).unwrap();

    // The I/Os that complete in the measured phase, and the interval of each.
    let mut measured: Vec<u64> = Vec::new();
    let mut per_interval = [0u64; 4];
    let mut t = 0u64;
    for k in 0.. {
        let lat = SAMPLES[k % SAMPLES.len()];
        t += lat;
        if t >= WARMUP_NS + MEASURED_NS {
            break;
        }
        // No completion on an edge, where a count would depend on the rule for edges.
        assert_ne!(
            t % INTERVAL_NS,
            0,
            "I/O {k} completes on an interval's edge"
        );
        if t >= WARMUP_NS {
            measured.push(lat);
            per_interval[((t - WARMUP_NS) / INTERVAL_NS) as usize] += 1;
        }
    }
    let n = measured.len() as u64;
    let mean_ns = measured.iter().sum::<u64>() as f64 / n as f64;
    let var = measured
        .iter()
        .map(|&l| (l as f64 - mean_ns).powi(2))
        .sum::<f64>()
        / n as f64;
    measured.sort_unstable();
    // Nearest rank: the smallest latency at or below which a fraction q of I/Os lie.
    // Each rank's neighbours hold the same latency, so the rule for ranks cannot matter.
    let pct = |q: f64| {
        let rank = ((q * n as f64).ceil() as usize).max(1);
        let v = measured[rank - 1];
        assert!(
            measured[rank - 2] == v && measured.get(rank).is_none_or(|&w| w == v),
            "p{q}: rank {rank} is on a step"
        );
        v
    };

    for (which, r) in [("live", &live), ("stored", &stored)] {
        let all = &r["summary"]["all"];
        assert_eq!(all["ios"].as_u64(), Some(n), "{which}");
        assert_eq!(all["bytes"].as_u64(), Some(n * 4096), "{which}");
        let iops = all["iops"].as_f64().unwrap();
        assert!((iops - n as f64).abs() < 1e-9 * n as f64, "{which}: {iops}");
        let lat = &all["latency_us"];
        let f = |k: &str| lat[k].as_f64().unwrap_or_else(|| panic!("{which} {k}"));
        // Means and deviations are kept exactly (sums of latencies and their squares).
        assert!((f("mean") - mean_ns / 1e3).abs() < 1e-6, "{which}: {lat}");
        assert!(
            (f("stddev") - var.sqrt() / 1e3).abs() < 1e-3,
            "{which}: {lat}"
        );
        // Percentiles, min and max come from the histogram: 3 significant digits, so
        // within 0.1% of the latency.
        for (k, want) in [
            ("min", measured[0]),
            ("p50", pct(0.50)),
            ("p90", pct(0.90)),
            ("p95", pct(0.95)),
            ("p99", pct(0.99)),
            ("max", measured[measured.len() - 1]),
        ] {
            let want_us = want as f64 / 1e3;
            assert!(
                (f(k) - want_us).abs() <= want_us * 1e-3,
                "{which} {k}: {} µs, the sort says {want_us} µs",
                f(k)
            );
        }
        let ios: Vec<u64> = r["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["warmup"] == false)
            .map(|i| i["all"]["ios"].as_u64().unwrap())
            .collect();
        assert_eq!(ios, per_interval, "{which}");
    }
}

#[test]
fn list_filter_show_and_labels() {
    let t = two_runs();
    let o = with_db(&t.db, &["results", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(
        text.contains(&t.base_id) && text.contains(&t.cand_id),
        "{text}"
    );
    assert!(
        text.contains("policy=raid5") && text.contains("complete"),
        "{text}"
    );

    let o = with_db(
        &t.db,
        &["results", "list", "--json", "--label", "policy=raid5"],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["id"], t.cand_id.as_str());
    assert_eq!(runs[0]["labels"]["dedupe"], "off");
    assert_eq!(runs[0]["status"], "complete");
    assert_eq!(runs[0]["intervals"], 4);
    let iops = runs[0]["iops"].as_f64().unwrap();
    let live = t.cand["summary"]["all"]["iops"].as_f64().unwrap();
    assert!((iops - live).abs() < 1e-6 * live, "{iops} vs {live}");

    let both = |args: &[&str]| {
        let mut a = vec!["results", "list", "--json"];
        a.extend_from_slice(args);
        let o = with_db(&t.db, &a);
        serde_json::from_slice::<Value>(&o.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(both(&["--label", "dedupe=off"]), 2);
    assert_eq!(
        both(&["--label", "dedupe=off", "--label", "policy=raid1"]),
        1
    );
    assert_eq!(both(&["--profile", "easy-run-4k70r"]), 2);
    assert_eq!(both(&["--profile", "vmfleet-sql"]), 0);

    // show: by unique prefix, by name, and `latest`.
    for q in [&t.base_id[..4], "mirror"] {
        let o = with_db(&t.db, &["results", "show", q]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        let s = out(&o);
        assert!(s.contains(&format!("run {}", t.base_id)), "{s}");
        assert!(
            s.contains("policy=raid1") && s.contains("IOPS") && s.contains("kernel"),
            "{s}"
        );
    }
    let o = with_db(&t.db, &["results", "show", "latest"]);
    assert!(out(&o).contains(&t.cand_id));
}

#[test]
fn show_lists_each_workers_disks() {
    let t = two_runs();
    let o = with_db(&t.db, &["results", "show", &t.base_id]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    let head = lines
        .iter()
        .position(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            c.len() > 3 && c[..4] == ["worker", "disk", "host", "IOPS"]
        })
        .unwrap_or_else(|| panic!("a per-disk table in\n{text}"));
    // Three workers of two disks: six rows, each worker's disks adding up to its IOPS.
    let rows: Vec<Vec<&str>> = lines[head + 1..head + 7]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    for (w, live) in t.base["workers"].as_array().unwrap().iter().enumerate() {
        let mine: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == w.to_string()).collect();
        assert_eq!(mine.len(), 2, "worker {w}: {rows:?}");
        assert_eq!((mine[0][1], mine[1][1]), ("0", "1"));
        let iops: f64 = mine.iter().map(|r| r[3].parse::<f64>().unwrap()).sum();
        let want = live["all"]["iops"].as_f64().unwrap();
        assert!((iops - want).abs() <= 1.0, "worker {w}: {iops} vs {want}");
        let disks = live["disks"].as_array().unwrap();
        let sum: u64 = disks
            .iter()
            .map(|d| d["all"]["ios"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, live["all"]["ios"].as_u64().unwrap());
    }
    let next = lines
        .get(head + 7)
        .and_then(|l| l.split_whitespace().next());
    assert!(
        next.is_none_or(|c| c.parse::<u32>().is_err()),
        "six disk rows:\n{text}"
    );
}

#[test]
fn csv_and_markdown_exports() {
    let t = two_runs();
    let o = with_db(&t.db, &["results", "export", &t.base_id, "--format", "csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let csv = out(&o);
    let lines: Vec<&str> = csv.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(header[0], "kind");
    assert!(header.contains(&"p99_us"));
    for l in &lines {
        assert_eq!(l.split(',').count(), header.len(), "ragged row: {l}");
    }
    let fleet_all = lines
        .iter()
        .find(|l| l.starts_with("summary,") && l.contains(",fleet,,all,"))
        .expect("fleet summary row");
    let ios: u64 = fleet_all.split(',').nth(8).unwrap().parse().unwrap();
    assert_eq!(ios, t.base["summary"]["all"]["ios"].as_u64().unwrap());
    // 3 ops × (fleet + 1 stream + 3 workers + 3 × 2 disks) summary rows; 3 ops × 5
    // intervals × (fleet + 1 host + 1 group) interval rows.
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("summary,")).count(),
        33
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("interval,")).count(),
        45
    );
    // Cells by column name: every disk row names its worker and disk, the disks of a
    // worker add up to it, and interval rows carry numbers in every figure column.
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    let ios_of = |scope: &str, name: &str, op: &str| -> u64 {
        rows.iter()
            .filter(|r| r[0] == "summary" && r[col("scope")] == scope)
            .filter(|r| r[col("name")] == name && r[col("op")] == op)
            .map(|r| r[col("ios")].parse::<u64>().unwrap())
            .sum()
    };
    for w in t.base["workers"].as_array().unwrap() {
        let name = format!("{}@{}", w["worker"], w["host"].as_str().unwrap());
        for op in ["all", "read", "write"] {
            assert_eq!(
                ios_of("disk", &name, op),
                ios_of("worker", &name, op),
                "{name} {op}"
            );
        }
    }
    let disk_rows: Vec<&Vec<&str>> = rows.iter().filter(|r| r[col("scope")] == "disk").collect();
    assert!(disk_rows
        .iter()
        .all(|r| ["0", "1"].contains(&r[col("disk")])));
    for scope in ["fleet", "host", "group"] {
        let of_scope: Vec<&Vec<&str>> = rows
            .iter()
            .filter(|r| r[0] == "interval" && r[col("scope")] == scope)
            .collect();
        assert_eq!(of_scope.len(), 15, "{scope}");
        for r in of_scope {
            // The run's one host and one group are the fleet: every row carries the
            // figures of the live result's interval, and the null engine completes
            // reads and writes in every interval.
            let index: u64 = r[col("interval")].parse().unwrap();
            let live = t.base["intervals"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["index"] == index)
                .unwrap_or_else(|| panic!("no interval {index} in the live result"));
            let live = &live[r[col("op")]];
            for c in [
                "ios", "iops", "mbps", "mean_us", "p50_us", "p90_us", "p99_us", "p99_9_us",
                "max_us",
            ] {
                let v: f64 = r[col(c)].parse().unwrap_or_else(|_| panic!("{c} in {r:?}"));
                assert_eq!(Some(v), live[c].as_f64(), "{scope} {c} in {r:?}");
            }
            assert!(live["ios"].as_u64().unwrap() > 0, "{r:?}");
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("run.md");
    let o = with_db(
        &t.db,
        &[
            "results",
            "export",
            "mirror",
            "--format",
            "markdown",
            "-o",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains("| IOPS | MB/s |") && md.contains("| read |"),
        "{md}"
    );
}

#[test]
fn exports_say_which_run_and_what_it_ran() {
    let t = two_runs();
    // JSON: the store's identity, equal to what the live run printed.
    let o = with_db(&t.db, &["results", "export", "latest", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["stored"]["id"], t.cand_id.as_str());
    assert_eq!(v["stored"]["name"], "erasure");
    assert_eq!(v["stored"]["labels"]["policy"], "raid5");
    assert_eq!(v["stored"]["labels"]["dedupe"], "off");
    assert_eq!(v["stored"]["status"], "complete");
    assert_eq!(
        v["stored"], t.cand["stored"],
        "the live result says the same"
    );
    // ... and the resolved workload as run.
    let fleet = &v["run"]["plan"]["fleet"];
    assert_eq!(
        (
            fleet["workers"].as_u64(),
            fleet["disks_per_worker"].as_u64()
        ),
        (Some(3), Some(2))
    );

    // CSV: every row ends with the identity; workload rows say what ran.
    let o = with_db(&t.db, &["results", "export", &t.base_id, "--format", "csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let csv = out(&o);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|c| *c == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r[col("run_id")], t.base_id, "{r:?}");
        assert_eq!(r[col("run_name")], "mirror");
        assert_eq!(r[col("labels")], "dedupe=off policy=raid1");
        assert_eq!(r[col("profile")], "easy-run-4k70r");
    }
    let w: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "workload").collect();
    assert_eq!(w.len(), 1, "one stream");
    let w = w[0];
    for (c, want) in [
        ("workers", "3"),
        ("disks_per_worker", "2"),
        ("threads_per_disk", "1"),
        ("qd", "4"),
        ("block_sizes", "4k"),
        ("read_pct", "70"),
        ("random_pct", "100"),
        ("engine", "null"),
        ("target", "none"),
    ] {
        assert_eq!(w[col(c)], want, "{c}");
    }
    assert!(w[col("disk_size_bytes")].parse::<u64>().unwrap() > 0);

    // Markdown: identity line and workload table.
    let o = with_db(
        &t.db,
        &["results", "export", "mirror", "--format", "markdown"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let md = out(&o);
    assert!(
        md.contains(&format!("run `{}`, name mirror", t.base_id))
            && md.contains("`dedupe=off` `policy=raid1`"),
        "{md}"
    );
    assert!(md.contains("| group | stream | workers | disks |"), "{md}");
    assert!(md.contains("| easy-run-4k70r | main | 3 | 2 |"), "{md}");
    assert!(
        md.contains("| 1 | 4 | 4k | 70 | 100 | null | none |"),
        "{md}"
    );
}

#[test]
fn schema_is_closed_and_rejects_undeclared_fields() {
    let t = two_runs();
    let o = with_db(&t.db, &["results", "export", &t.base_id]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_schema_valid(&v);
    let validator = schema();
    // An undeclared field anywhere is refused: top level, run, summary, a nested op,
    // its latencies, an interval, a worker, a host, the store identity.
    for path in [
        "",
        "/run",
        "/summary",
        "/summary/read",
        "/summary/read/latency_us",
        "/summary/cpu",
        "/summary/outstanding_io",
        "/intervals/0",
        "/workers/0",
        "/workers/0/disks/1",
        "/workers/0/disks/1/write",
        "/intervals/0/read",
        "/host_intervals/0",
        "/host_intervals/0/rows/0",
        "/group_intervals/0/rows/0/all",
        "/hosts/0",
        "/groups/0",
        "/streams/0",
        "/stored",
        "/run/plan",
    ] {
        let mut bad = v.clone();
        bad.pointer_mut(path)
            .unwrap_or_else(|| panic!("{path} exists"))
            .as_object_mut()
            .unwrap_or_else(|| panic!("{path} is an object"))
            .insert("undeclared_field".into(), Value::from(1));
        assert!(
            !validator.is_valid(&bad),
            "an undeclared field at {path:?} passed the schema"
        );
    }
    // Every object the schema describes is closed (the plan's inner objects are the
    // profile's keys, documented in docs/profiles.md).
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/result.schema.json"
    ))
    .unwrap();
    let s: Value = serde_json::from_str(&text).unwrap();
    fn walk(v: &Value, path: &str, open: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if m.contains_key("properties")
                    && m.get("additionalProperties") != Some(&Value::Bool(false))
                {
                    open.push(path.to_string());
                }
                for (k, x) in m {
                    if path.ends_with("/plan/properties") {
                        continue;
                    }
                    walk(x, &format!("{path}/{k}"), open);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, path, open)),
            _ => {}
        }
    }
    let mut open = Vec::new();
    walk(&s, "", &mut open);
    assert!(open.is_empty(), "open objects in the schema: {open:?}");
}

#[test]
fn a_direction_without_io_has_no_latencies() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let live = record_run(&db, "4000", &["--read-pct", "100", "--name", "reads"]);
    assert_schema_valid(&live);
    assert!(
        live["summary"]["read"]["latency_us"]["p99"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(live["summary"]["write"]["ios"], 0);
    assert!(
        live["summary"]["write"]["latency_us"].is_null(),
        "{}",
        live["summary"]["write"]
    );
    for i in live["intervals"].as_array().unwrap() {
        assert!(
            i["write_p50_us"].is_null() && i["write_p99_us"].is_null(),
            "{i}"
        );
        assert!(i["read_p99_us"].as_f64().unwrap() > 0.0);
    }
    // The table prints – where a figure does not exist, never 0.0.
    let o = with_db(&db, &["results", "show", "reads"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let write_row = text
        .lines()
        .find(|l| l.trim_start().starts_with("write "))
        .unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = write_row.split_whitespace().collect();
    assert_eq!(&cells[3..], ["–"; 9], "{write_row}");
    // So do CSV (empty cells) and compare (–).
    let o = with_db(&db, &["results", "export", "reads", "--format", "csv"]);
    let csv = out(&o);
    let w = csv
        .lines()
        .find(|l| l.starts_with("summary,") && l.contains(",fleet,,write,"))
        .unwrap();
    let cells: Vec<&str> = w.split(',').collect();
    assert!(cells[13..23].iter().all(|c| c.is_empty()), "{w}");
    let o = with_db(&db, &["compare", "reads", "reads"]);
    let line = out(&o)
        .lines()
        .find(|l| l.starts_with("write latency mean"))
        .unwrap()
        .to_string();
    assert!(line.contains('–') && !line.contains("0.00"), "{line}");
    // The gate: a figure neither run measured holds nothing; one measured by only one
    // run cannot be compared and fails.
    let o = with_db(
        &db,
        &["compare", "reads", "reads", "--fail-if", "write.p99 > +10%"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        out(&o).contains("not measured in either run"),
        "{}",
        out(&o)
    );
    record_run(&db, "4000", &["--name", "mixed"]);
    let o = with_db(
        &db,
        &["compare", "reads", "mixed", "--fail-if", "write.p99 > +10%"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(err(&o).contains("measured in only one run"), "{}", err(&o));
    let o = with_db(
        &db,
        &["compare", "mixed", "reads", "--fail-if", "write.p99 > 2ms"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(err(&o).contains("not measured in this run"), "{}", err(&o));
    // Nor does an absolute limit pass when neither run measured the figure.
    let o = with_db(
        &db,
        &["compare", "reads", "reads", "--fail-if", "write.p99 > 2ms"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(err(&o).contains("not measured in this run"), "{}", err(&o));
}

#[test]
fn run_id_errors_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // No store yet: reading commands say so and name --db.
    let o = with_db(&db, &["results", "list"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--db"), "{}", err(&o));

    record_run(&db, "5000", &["--name", "one"]);
    record_run(&db, "5000", &["--name", "two"]);
    // Give both runs ids with a common prefix to make it ambiguous.
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.pragma_update(None, "foreign_keys", "OFF").unwrap();
        for (name, id) in [("one", "abc11111"), ("two", "abc22222")] {
            let old: String = c
                .query_row("SELECT id FROM runs WHERE name = ?1", [name], |r| r.get(0))
                .unwrap();
            for table in ["samples", "intervals", "labels", "run_workers"] {
                c.execute(
                    &format!("UPDATE {table} SET run_id = ?2 WHERE run_id = ?1"),
                    [&old, id],
                )
                .unwrap();
            }
            c.execute("UPDATE runs SET id = ?2 WHERE id = ?1", [&old, id])
                .unwrap();
        }
    }
    let o = with_db(&db, &["results", "show", "abc"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("ambiguous") && err(&o).contains("abc11111"),
        "{}",
        err(&o)
    );
    let o = with_db(&db, &["results", "show", "abc2"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    for q in ["ffff0000", "no-such-run"] {
        let o = with_db(&db, &["results", "export", q]);
        assert_eq!(o.status.code(), Some(2));
        assert!(err(&o).contains("not found"), "{}", err(&o));
    }
    let o = with_db(&db, &["results", "delete", "abc1"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("deleted run abc11111"));
    let o = with_db(&db, &["results", "show", "abc"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "only abc22222 is left: {}",
        err(&o)
    );
    let c = rusqlite::Connection::open(&db).unwrap();
    let left: i64 = c
        .query_row(
            "SELECT count(*) FROM samples WHERE run_id = 'abc11111'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0, "a deleted run's samples are gone");
}

#[test]
fn save_flags() {
    let dir = tempfile::tempdir().unwrap();
    // --no-save writes nothing, even to the default location.
    let xdg = dir.path().join("xdg");
    let o = iofleet()
        .env("XDG_DATA_HOME", &xdg)
        .args([
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--workers",
            "1",
            "--disks",
            "1",
        ])
        .args([
            "--rate",
            "1000",
            "--duration",
            "250ms",
            "--warmup",
            "0s",
            "--interval",
            "250ms",
        ])
        .args(["--quiet", "--no-save"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(!xdg.exists());
    // Without --db the run goes to $XDG_DATA_HOME/iofleet/results.db.
    let o = iofleet()
        .env("XDG_DATA_HOME", &xdg)
        .args([
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--workers",
            "1",
            "--disks",
            "1",
        ])
        .args([
            "--rate",
            "1000",
            "--duration",
            "250ms",
            "--warmup",
            "0s",
            "--interval",
            "250ms",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("saved as run"), "{}", err(&o));
    assert!(xdg.join("iofleet/results.db").exists());
    let o = iofleet()
        .env("XDG_DATA_HOME", &xdg)
        .args(["results", "list", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);

    // A --db that cannot be created is refused before the run, naming --db.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let bad = blocker.join("sub/results.db");
    let o = with_db(
        &bad,
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--duration",
            "1s",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--db"), "{}", err(&o));
    // Malformed and repeated labels; --no-save with --db.
    for (args, needle) in [
        (vec!["--label", "novalue"], "--label"),
        (vec!["--label", "a b=c"], "label key"),
        (
            vec!["--label", "k=1", "--label", "k=2"],
            "--label k: given more than once",
        ),
    ] {
        let mut a = vec![
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--duration",
            "1s",
        ];
        a.extend(args);
        let o = with_db(&dir.path().join("x.db"), &a);
        assert_eq!(o.status.code(), Some(2), "{a:?}");
        assert!(err(&o).contains(needle), "{a:?}: {}", err(&o));
    }
    let o = with_db(
        &dir.path().join("x.db"),
        &["run", "easy-run-4k70r", "--engine", "null", "--no-save"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--no-save"), "{}", err(&o));
}

/// Poll `db` until the run has `n` intervals stored (or panic after `limit`).
fn wait_for_intervals(db: &std::path::Path, n: i64, limit: Duration) -> i64 {
    let t0 = Instant::now();
    loop {
        if let Ok(c) = rusqlite::Connection::open(db) {
            let got: i64 = c
                .query_row("SELECT count(*) FROM intervals", [], |r| r.get(0))
                .unwrap_or(0);
            if got >= n {
                return got;
            }
        }
        assert!(
            t0.elapsed() < limit,
            "no {n} intervals stored within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn sigkill_leaves_completed_intervals_and_an_incomplete_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .args([
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--workers",
            "2",
            "--disks",
            "1",
        ])
        .args([
            "--rate",
            "4000",
            "--duration",
            "30s",
            "--warmup",
            "0s",
            "--interval",
            "250ms",
        ])
        .args(["--quiet", "--name", "doomed", "--db"])
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stored = wait_for_intervals(&db, 3, Duration::from_secs(20));
    assert!(stored >= 3);
    // SIGKILL: no handler runs, nothing is flushed by the process itself.
    child.kill().unwrap();
    child.wait().unwrap();

    let o = with_db(&db, &["results", "list", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["status"], "incomplete");
    assert!(v[0]["intervals"].as_u64().unwrap() >= 3);
    let o = with_db(&db, &["results", "show", "doomed"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("status incomplete"), "{}", out(&o));
    let o = with_db(&db, &["results", "export", "latest"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_schema_valid(&r);
    assert_eq!(r["run"]["interrupted"], true);
    let intervals = r["intervals"].as_array().unwrap();
    assert!(intervals.len() as i64 >= stored);
    // What the intervals add up to is the summary.
    let ios: u64 = intervals.iter().map(|i| i["ios"].as_u64().unwrap()).sum();
    assert_eq!(ios, r["summary"]["all"]["ios"].as_u64().unwrap());
    assert!(ios > 0);
    let secs = r["run"]["duration_s"].as_f64().unwrap();
    assert!(
        (secs - 0.25 * intervals.len() as f64).abs() < 1e-6,
        "{secs}"
    );
    assert!(r["notices"][0]
        .as_str()
        .unwrap()
        .contains("without a final result"));
    // What only the live run knew is unknown: null, not 0 (and – in the table).
    assert!(r["summary"]["cpu"].is_null(), "{}", r["summary"]["cpu"]);
    assert!(r["summary"]["memory"].is_null());
    assert!(r["summary"]["outstanding_io"]["configured"].is_null());
    assert!(
        r["summary"]["outstanding_io"]["measured_mean"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let o = with_db(&db, &["results", "show", "doomed"]);
    let text = out(&o);
    assert!(text.contains("CPU: – (not measured)"), "{text}");
    assert!(text.contains("Memory: – (not measured)"), "{text}");
    assert!(
        !text.contains("/0 "),
        "no configured outstanding I/O of 0: {text}"
    );
    // An incomplete run can still be compared and reported.
    let o = with_db(&db, &["compare", "latest", "latest"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}
