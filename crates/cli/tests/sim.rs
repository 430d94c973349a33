//! The `sim` engine through the whole run path: a simulated device per disk, in
//! simulated time, deterministic for a seed and whatever the I/O thread placement.

mod common;
use common::*;

fn sim_run(dir: &std::path::Path, duration: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "easy-run-4k100r",
        "--workers",
        "2",
        "--disks",
        "2",
        "--threads",
        "2",
        "--warmup",
        "0s",
        "--duration",
        duration,
        "--no-save",
    ];
    args.extend_from_slice(extra);
    run_json(dir, &args)
}

#[test]
fn a_simulated_minute_is_deterministic_and_placement_free() {
    let d = tempfile::tempdir().unwrap();
    let engine = "sim:servers=4,service=5ms,dist=exp";
    let one = sim_run(
        d.path(),
        "60s",
        &["--engine", engine, "--qd", "2", "--io-threads", "1"],
    );
    let two = sim_run(
        d.path(),
        "60s",
        &["--engine", engine, "--qd", "2", "--io-threads", "3"],
    );
    assert_eq!(one["run"]["engine"], "sim");
    assert_eq!(one["run"]["duration_s"], 60.0, "a full simulated minute");
    // Every worker's figures, exactly, whichever thread drove its disks.
    for w in 0..2 {
        for k in ["ios", "bytes"] {
            assert_eq!(one["workers"][w]["all"][k], two["workers"][w]["all"][k]);
        }
        assert_eq!(
            one["workers"][w]["all"]["latency_us"],
            two["workers"][w]["all"]["latency_us"]
        );
    }
    // Nothing was written anywhere: the engine needs no target.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}

#[test]
fn latency_rises_once_the_lanes_outnumber_the_servers() {
    let d = tempfile::tempdir().unwrap();
    // A disk's 2 lanes share its 4 servers of 1 ms (fixed): up to 4 outstanding I/Os
    // are served at once; 16 wait in line, four times as long.
    let engine = "sim:servers=4,service=1ms,dist=fixed";
    let light = sim_run(d.path(), "10s", &["--engine", engine, "--qd", "2"]);
    let heavy = sim_run(d.path(), "10s", &["--engine", engine, "--qd", "8"]);
    let mean = |v: &serde_json::Value| v["summary"]["all"]["latency_us"]["mean"].as_f64().unwrap();
    let iops = |v: &serde_json::Value| v["summary"]["all"]["iops"].as_f64().unwrap();
    assert!((mean(&light) - 1000.0).abs() < 5.0, "{}", mean(&light));
    assert!((mean(&heavy) - 4000.0).abs() < 20.0, "{}", mean(&heavy));
    // 4 disks × 4 servers / 1 ms = 16,000 IOPS at most, reached once saturated.
    assert!((iops(&heavy) - 16_000.0).abs() < 16.0, "{}", iops(&heavy));
}

#[test]
fn sim_options_and_real_time_are_checked() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &["run", "easy-run-4k100r", "--engine", "sim:servers=0"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("servers"), "{}", stderr(&o));
    let o = run_in(
        d.path(),
        &["run", "easy-run-4k100r", "--engine", "null", "--real-time"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--real-time"), "{}", stderr(&o));
    // On the wall clock, a 1 s run takes about a second and still completes I/Os.
    let t = std::time::Instant::now();
    let v = sim_run(
        d.path(),
        "1s",
        &["--engine", "sim:servers=2,service=1ms", "--real-time"],
    );
    assert!(t.elapsed() >= std::time::Duration::from_millis(900));
    assert!(v["summary"]["all"]["ios"].as_u64().unwrap() > 100);
}

#[test]
fn a_sweep_draws_the_curve_and_saves_each_step() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    let db_s = db.to_str().unwrap();
    let o = run_in(
        d.path(),
        &[
            "sweep",
            "easy-run-4k100r",
            "--engine",
            "sim:servers=4,service=1ms,dist=fixed",
            "--workers",
            "1",
            "--disks",
            "1",
            "--threads",
            "1",
            "--warmup",
            "0s",
            "--duration",
            "10s",
            "--vary",
            "qd=2,4,8",
            "--db",
            db_s,
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["vary"], "qd");
    let points = v["points"].as_array().unwrap();
    let fig = |i: usize, k: &str| points[i][k].as_f64().unwrap();
    // 4 servers of 1 ms: 2 and 4 outstanding are served at once (1 ms); 8 queue (2 ms),
    // and throughput stops at 4,000 IOPS.
    assert_eq!(points.len(), 3);
    assert!((fig(0, "iops") - 2000.0).abs() < 2.0, "{v}");
    assert!((fig(1, "iops") - 4000.0).abs() < 4.0, "{v}");
    assert!((fig(2, "iops") - 4000.0).abs() < 4.0, "{v}");
    assert!((fig(1, "mean_us") - 1000.0).abs() < 5.0, "{v}");
    assert!((fig(2, "mean_us") - 2000.0).abs() < 10.0, "{v}");
    // Each step is a stored run, labelled with its sweep, step and value.
    let o = run_in(d.path(), &["results", "list", "--json", "--db", db_s]);
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut labels: Vec<(String, String)> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["labels"]["sweep"], "sweep-easy-run-4k100r-qd");
            (
                r["labels"]["step"].as_str().unwrap().to_string(),
                r["labels"]["qd"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    labels.sort();
    let want: Vec<(String, String)> = [("0", "2"), ("1", "4"), ("2", "8")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(labels, want);
    // The curve names each step's stored run (the list shows ids' first characters).
    for r in runs.as_array().unwrap() {
        let id = r["id"].as_str().unwrap();
        assert!(
            points
                .iter()
                .any(|p| p["run_id"].as_str().unwrap().starts_with(id)),
            "{id} is not on the curve"
        );
    }
}

#[test]
fn a_sweep_checks_every_step_before_the_first() {
    let d = tempfile::tempdir().unwrap();
    for (vary, says) in [
        ("colour=1,2", "colour"),
        ("qd=4", "at least two"),
        ("qd=1,0", "--qd (fleet.qd): 0 is out of range"),
        ("bs=4k,huge", "--vary bs=huge"),
    ] {
        let o = run_in(
            d.path(),
            &[
                "sweep",
                "easy-run-4k100r",
                "--engine",
                "sim",
                "--vary",
                vary,
                "--no-save",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{vary}");
        assert!(stderr(&o).contains(says), "{vary}: {}", stderr(&o));
    }
    // Nothing ran: no step was measured or stored, no target was created.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}
