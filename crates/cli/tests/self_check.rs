//! The generator self-check, end to end. Its own test binary, so that no other test's
//! runs compete for the CPUs while the light run is measured: run-queue delay from a
//! neighbour is exactly what the self-check reports.

mod common;

use common::*;

#[test]
fn self_check_flags_a_saturated_generator_not_a_device_bound_run() {
    // Saturated: 128 lanes on the null engine, whose I/Os complete at once, all on one
    // I/O thread: the thread never waits for the "device", so it is busy all the time.
    let d = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "easy-run-4k70r",
        "--engine",
        "null",
        "--workers",
        "4",
        "--io-threads",
        "1",
        "--duration",
        "2s",
        "--warmup",
        "0s",
        "--no-save",
    ];
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(table.contains("Generator: 1 I/O thread,"), "{table}");
    assert!(table.contains("warning: an I/O thread was busy"), "{table}");
    let mut json_args = args[1..].to_vec();
    json_args.retain(|a| *a != "--no-save");
    let v = run_json(d.path(), &json_args);
    let g = &v["summary"]["generator"];
    assert!(g["max_busy_pct"].as_f64().unwrap() > 90.0, "{g}");
    assert!(g["warnings"].to_string().contains("busy"), "{g}");
    assert!(v["intervals"][0]["generator"]["busy_pct"]
        .as_f64()
        .is_some());

    // Device-bound: one lane at qd 1 on a real file, and an open-loop lane at a
    // modest rate: the I/O thread mostly waits for the device or its timer.
    let disk = tempfile::tempdir_in("/var/tmp").unwrap();
    let t = disk.path().join("data");
    for extra in [&["--qd", "1"][..], &["--rate", "500"][..]] {
        let mut a = vec![
            "easy-run-4k100r",
            "--target",
            t.to_str().unwrap(),
            "--workers",
            "1",
            "--disks",
            "1",
            "--threads",
            "1",
            "--disk-size",
            "16m",
            "--prepare",
            "zero",
            "--warmup",
            "0s",
            "--duration",
            "2s",
            "--no-save",
            "--cleanup",
        ];
        a.extend_from_slice(extra);
        let v = run_json(disk.path(), &a);
        let g = &v["summary"]["generator"];
        assert!(g["max_busy_pct"].as_f64().unwrap() < 90.0, "{extra:?}: {g}");
        assert_eq!(g.get("warnings"), None, "{extra:?}: {g}");
        // Every completion was reaped by a real thread: the reap-wait bound is measured,
        // and its median is no more than its p99.
        let (p50, p99) = (
            g["reap_wait_p50_us"].as_f64().unwrap(),
            g["reap_wait_p99_us"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p50 <= p99, "{extra:?}: {g}");
        if extra[0] == "--rate" {
            assert!(g["open_loop_ios"].as_u64().unwrap() > 500, "{g}");
            assert!(g["issue_lag_p99_us"].as_f64().is_some(), "{g}");
        }
    }
}
