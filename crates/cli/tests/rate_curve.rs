//! `iofleet sweep --rate-curve` on the `sim` engine: the closed-loop maximum, then open
//! loop at 10..100% of it, each step a stored run.

mod common;
use common::*;

#[test]
fn the_rate_curve_runs_open_loop_at_shares_of_the_maximum() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    // One M/M/4 device (4 servers, exponential 1 ms service): 4,000 IOPS at most.
    let o = run_in(
        d.path(),
        &[
            "sweep",
            "easy-run-4k100r",
            "--rate-curve",
            "--engine",
            "sim:servers=4,service=1ms",
            "--workers",
            "1",
            "--disks",
            "1",
            "--threads",
            "1",
            "--qd",
            "64",
            "--warmup",
            "1s",
            "--duration",
            "20s",
            "--db",
            db_s,
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["vary"], "rate_pct");
    let points = v["points"].as_array().unwrap();
    let values: Vec<&str> = points
        .iter()
        .map(|p| p["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["max", "10", "50", "70", "80", "90", "95", "100"]);
    let fig = |i: usize, k: &str| points[i][k].as_f64().unwrap();
    let max = fig(0, "iops");
    assert!((max - 4000.0).abs() < 40.0, "{max}");
    // Open loop: each step completes what it is offered (Poisson noise aside)...
    for (i, pct) in [10.0, 50.0, 70.0, 80.0, 90.0, 95.0].iter().enumerate() {
        let offered = max * pct / 100.0;
        let got = fig(i + 1, "iops");
        assert!(
            (got - offered).abs() / offered < 0.03,
            "{pct}%: {got} of {offered}"
        );
    }
    // ... at light load the latency is the service time (M/M/4 at 10%: 1 ms, almost no
    // wait), and p99 climbs with the load, steeply near the maximum: latency counts from
    // the intended issue time, so the queue is not hidden.
    assert!((fig(1, "mean_us") - 1000.0).abs() < 50.0, "{v}");
    for i in 2..points.len() {
        assert!(fig(i, "p99_us") > fig(i - 1, "p99_us"), "{v}");
    }
    assert!(fig(7, "mean_us") > 10.0 * fig(1, "mean_us"), "{v}");
    // Every step is a stored run labelled with its sweep, step and load.
    let o = run_in(d.path(), &["results", "list", "--json", "--db", db_s]);
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut got: Vec<(String, String)> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["labels"]["sweep"], "sweep-easy-run-4k100r-rate-curve");
            (
                r["labels"]["step"].as_str().unwrap().to_string(),
                r["labels"]["rate_pct"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort_by_key(|(s, _)| s.parse::<u32>().unwrap());
    let want: Vec<(String, String)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (i.to_string(), v.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn rate_curve_input_is_checked() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "sweep",
            "easy-run-4k100r",
            "--rate-curve",
            "--vary",
            "qd=1,2",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--rate-curve"), "{}", stderr(&o));
    let o = run_in(d.path(), &["sweep", "easy-run-4k100r"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--vary"), "{}", stderr(&o));
    let o = run_in(
        d.path(),
        &[
            "sweep",
            "easy-run-4k100r",
            "--rate-curve",
            "--engine",
            "sim",
            "--label",
            "rate_pct=5",
            "--db",
            d.path().join("r.db").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--label rate_pct"), "{}", stderr(&o));
}
