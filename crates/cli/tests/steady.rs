//! `--steady-state` through the whole run path, on simulated devices whose service time
//! drifts (in simulated time, so 25 rounds take seconds): reported steady at the round
//! the drift implies, or not steady after 25 rounds; the block in the JSON (checked
//! against the published schema), the table, the store and a sweep.

mod common;
use common::*;
use serde_json::Value;

fn schema_errors(v: &Value) -> Vec<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/result.schema.json"
    ))
    .expect("schema file");
    let schema = jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap();
    schema
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

/// One worker, one disk, one lane at qd 1 against one fixed server of 1 ms: the rate is
/// exactly 1 ÷ the service time of the moment.
fn args<'a>(engine: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "easy-run-4k100r",
        "--engine",
        engine,
        "--workers",
        "1",
        "--disks",
        "1",
        "--threads",
        "1",
        "--qd",
        "1",
        "--warmup",
        "0s",
        "--duration",
        "10s",
        "--steady-state",
    ];
    a.extend_from_slice(extra);
    a
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

#[test]
fn a_drift_that_settles_is_steady_at_the_round_it_implies() {
    // The service time starts at 2 ms and falls linearly to 1 ms at t = 100 s, so
    // IOPS(t) = 1000 ÷ (2 − t/100 s). Round k (10 s) averages
    // 10,000 × ln((2 − (k−1)/10) ÷ (2 − k/10)): 512.9, 540.7, 571.6, 606.2, 645.4,
    // 689.9, 741.1, 800.4, 870.1, 953.1, then 1000 from round 11. Windows:
    //   ending 12: 800.4 … 1000   range 21.6% > 20%            no
    //   ending 13: 870.1 … 1000   range 13.5%, excursion 12.7% > 10%  no
    //   ending 14: 953.1, 1000 ×4 range 4.7%, excursion 3.8%   yes
    // Every decision has a margin above 1.5 points, and rounds are exact to one I/O
    // (0.1 IOPS), so the round is exactly 14.
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    let db_s = db.to_str().unwrap();
    let engine = "sim:servers=1,service=1ms,dist=fixed,drift=+100%,settle=100s";
    let mut a = vec!["run"];
    a.extend(args(engine, &["--db", db_s, "--json", "--quiet"]));
    let o = run_in(d.path(), &a);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let s = &v["steady_state"];
    assert_eq!(s["held"], true, "{s}");
    assert_eq!(s["round"], 14, "{s}");
    assert_eq!(s["rounds"], 14);
    assert_eq!(s["max_rounds"], 25);
    assert_eq!(f(&s["round_s"]), 10.0);
    let expect: Vec<f64> = (1..=14)
        .map(|k| {
            let (a, b) = ((k - 1) as f64 / 10.0, k as f64 / 10.0);
            if k <= 10 {
                10_000.0 * ((2.0 - a) / (2.0 - b)).ln()
            } else {
                1000.0
            }
        })
        .collect();
    let got: Vec<f64> = s["round_iops"].as_array().unwrap().iter().map(f).collect();
    assert_eq!(got.len(), 14);
    for (k, (g, e)) in got.iter().zip(&expect).enumerate() {
        assert!((g - e).abs() < 0.25, "round {}: {g} vs {e}", k + 1);
    }
    assert_eq!(s["window_iops"].as_array().unwrap().len(), 5);
    assert!((f(&s["window_mean_iops"]) - 990.6).abs() < 0.2, "{s}");
    assert!((f(&s["range_pct"]) - 4.73).abs() < 0.05, "{s}");
    assert!((f(&s["excursion_pct"]) - 3.79).abs() < 0.05, "{s}");
    // The rest of the result is the last round's: a settled device, 1 ms per I/O.
    assert!((f(&v["summary"]["all"]["iops"]) - 1000.0).abs() < 0.2);
    assert_eq!(f(&v["run"]["duration_s"]), 10.0);

    // Every round is a stored run labelled with its number; the last one's stored
    // result carries the block.
    let runs = s["round_runs"].as_array().unwrap();
    assert_eq!(runs.len(), 14);
    assert_eq!(runs.last().unwrap(), &v["stored"]["id"]);
    let o = run_in(d.path(), &["results", "list", "--json", "--db", db_s]);
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut rounds: Vec<u32> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["labels"]["round"].as_str().unwrap().parse().unwrap())
        .collect();
    rounds.sort();
    assert_eq!(rounds, (1..=14).collect::<Vec<u32>>());
    let last = runs.last().unwrap().as_str().unwrap();
    let o = run_in(
        d.path(),
        &["results", "export", last, "--format", "json", "--db", db_s],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(stored["steady_state"], v["steady_state"]);
    assert_eq!(schema_errors(&stored), Vec::<String>::new());
    // An earlier round is a plain run.
    let o = run_in(
        d.path(),
        &[
            "results",
            "export",
            runs[0].as_str().unwrap(),
            "--format",
            "json",
            "--db",
            db_s,
        ],
    );
    let first: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(first.get("steady_state").is_none());
}

#[test]
fn a_drift_that_never_settles_is_not_steady_after_25_rounds() {
    // The service time starts at 0.5 ms and grows by 0.5 ms every 10 s without end:
    // round k averages 2000 × ln((k+1)/k) IOPS; over rounds 21–25 (93.0 … 78.4) the
    // least-squares excursion is still 17% of the mean, and larger before.
    let d = tempfile::tempdir().unwrap();
    let engine = "sim:servers=1,service=1ms,dist=fixed,drift=-50%,settle=never,ramp=10s";
    let mut a = vec!["run"];
    a.extend(args(engine, &["--no-save"]));
    let o = run_in(d.path(), &a);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(
        table.contains("steady state: NOT reached after 25 round(s) of at most 25"),
        "{table}"
    );
    // Progress per round on stderr.
    assert!(stderr(&o).contains("round 25/25"), "{}", stderr(&o));

    let mut a = vec!["run"];
    a.extend(args(engine, &["--no-save", "--json", "--quiet"]));
    let v = {
        let o = run_in(d.path(), &a);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let s = &v["steady_state"];
    assert_eq!(s["held"], false, "{s}");
    assert_eq!(
        (s["round"].as_u64(), s["rounds"].as_u64()),
        (Some(25), Some(25))
    );
    assert_eq!(s["round_iops"].as_array().unwrap().len(), 25);
    let last = f(&s["round_iops"][24]);
    assert!(
        (last - 2000.0 * (26.0f64 / 25.0).ln()).abs() < 0.25,
        "{last}"
    );
    assert!(f(&s["excursion_pct"]) > 15.0, "{s}");
    assert_eq!(s["round_runs"], serde_json::json!([]));
}

#[test]
fn a_sweep_step_measures_until_steady() {
    let d = tempfile::tempdir().unwrap();
    let engine = "sim:servers=1,service=1ms,dist=fixed,drift=+100%,settle=100s";
    let mut a = vec!["sweep"];
    a.extend(args(
        engine,
        &["--vary", "qd=1,2", "--no-save", "--json", "--quiet"],
    ));
    // `args` sets --qd 1; the sweep's --vary qd overrides it per step.
    let o = run_in(d.path(), &a);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    for p in v["points"].as_array().unwrap() {
        // One server: qd 2 queues behind it at the same rate, so both steps settle
        // at round 14 (each step's device starts new).
        assert_eq!(p["steady_state"]["held"], true, "{p}");
        assert_eq!(p["steady_state"]["round"], 14, "{p}");
    }
}

#[test]
fn steady_state_input_errors_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k100r",
            "--engine",
            "sim",
            "--steady-state",
            "--label",
            "round=3",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--label round"), "{}", stderr(&o));
    for (engine, says) in [
        ("sim:drift=+50%", "settle"),
        ("sim:drift=50,settle=1s", "drift"),
        ("sim:drift=+50%,settle=never", "ramp"),
    ] {
        let o = run_in(
            d.path(),
            &["run", "easy-run-4k100r", "--engine", engine, "--no-save"],
        );
        assert_eq!(o.status.code(), Some(2), "{engine}");
        assert!(stderr(&o).contains(says), "{engine}: {}", stderr(&o));
    }
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}
