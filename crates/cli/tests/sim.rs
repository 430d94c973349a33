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
