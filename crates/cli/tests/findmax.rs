//! `iofleet find-max` on the `sim` engine against queueing theory, its stored steps, and
//! its bad input.

mod common;
use common::*;

/// n! as f64.
fn fact(n: u32) -> f64 {
    (1..=n).map(f64::from).product()
}

/// Erlang C: the probability that an arrival waits in an M/M/c queue with offered load
/// `a` = λ/μ Erlangs (a < c).
fn erlang_c(c: u32, a: f64) -> f64 {
    let below: f64 = (0..c).map(|k| a.powi(k as i32) / fact(k)).sum();
    let top = a.powi(c as i32) / fact(c) * c as f64 / (c as f64 - a);
    top / (below + top)
}

/// P(response > t) in M/M/c: with probability 1 − C no wait and an Exp(μ) service;
/// with probability C an Exp(cμ − λ) wait plus an Exp(μ) service (hypoexponential).
fn response_tail(t: f64, lambda: f64, c: u32, mu: f64) -> f64 {
    let wait = erlang_c(c, lambda / mu);
    let theta = c as f64 * mu - lambda;
    let both = if (theta - mu).abs() < 1e-9 {
        (1.0 + mu * t) * (-mu * t).exp()
    } else {
        (theta * (-mu * t).exp() - mu * (-theta * t).exp()) / (theta - mu)
    };
    (1.0 - wait) * (-mu * t).exp() + wait * both
}

/// The q-quantile of the response time, s (bisection on the tail).
fn response_quantile(q: f64, lambda: f64, c: u32, mu: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 100.0 / mu);
    for _ in 0..200 {
        let m = (lo + hi) / 2.0;
        if response_tail(m, lambda, c, mu) > 1.0 - q {
            lo = m;
        } else {
            hi = m;
        }
    }
    lo
}

/// The highest λ whose p99 response time is at most `limit` s (the p99 grows with λ).
fn analytic_max(limit: f64, c: u32, mu: f64) -> f64 {
    let (mut lo, mut hi) = (1e-6, c as f64 * mu * (1.0 - 1e-9));
    for _ in 0..200 {
        let m = (lo + hi) / 2.0;
        if response_quantile(0.99, m, c, mu) <= limit {
            lo = m;
        } else {
            hi = m;
        }
    }
    lo
}

#[test]
fn the_analytic_model_is_right_where_it_is_known() {
    // One server: M/M/1 response is Exp(μ − λ), so p99 = ln(100)/(μ − λ).
    let p99 = response_quantile(0.99, 500.0, 1, 1000.0);
    assert!((p99 - 100f64.ln() / 500.0).abs() < 1e-9, "{p99}");
    // Erlang C of 2 servers at a = 1: 1/3.
    assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
}

fn sim_args<'a>(db: &'a str, duration: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    // One worker, one disk, one thread: the disk's one open-loop lane issues a Poisson
    // stream (timing.arrival defaults to poisson; exponential gaps) into one simulated
    // device of 4 servers with exponential service of mean 1 ms, served first come
    // first served: exactly the M/M/c queue (c = 4, μ = 1000/s). qd 512 gives the lane
    // enough slots that an arrival practically never waits for one (at the answer's
    // load the queue holds a few I/Os), so the generator adds no queue of its own, and
    // latency counts from the intended issue time.
    let mut a = vec![
        "find-max",
        "easy-run-4k100r",
        "--engine",
        "sim:servers=4,service=1ms,dist=exp",
        "--workers",
        "1",
        "--disks",
        "1",
        "--threads",
        "1",
        "--qd",
        "512",
        "--warmup",
        "1s",
        "--duration",
        duration,
        "--db",
        db,
        "--quiet",
    ];
    a.extend_from_slice(extra);
    a
}

#[test]
fn find_max_on_an_mmc_queue_matches_the_analytic_rate() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let o = run_in(
        d.path(),
        &sim_args(db_s, "60s", &["--slo", "p99<=10ms", "--json"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let expected = analytic_max(0.010, 4, 1000.0);
    let got = v["max_iops"].as_f64().unwrap();
    assert!(
        (got - expected).abs() / expected < 0.05,
        "find-max {got} IOPS, M/M/4 analytic {expected:.0}"
    );
    assert_eq!(v["objectives"], serde_json::json!(["p99<=10ms"]));
    assert_eq!(v["end"], "converged");
    // The closed-loop maximum (4 servers / 1 ms) started the search.
    let closed = v["closed_loop_iops"].as_f64().unwrap();
    assert!((closed - 4000.0).abs() < 40.0, "{closed}");
    let points = v["points"].as_array().unwrap();
    assert!(points.len() >= 4);
    // Exactly one point is marked found: a passing one at the answer, and no passing
    // point was offered a higher rate.
    let found: Vec<&serde_json::Value> = points.iter().filter(|p| p["found"] == true).collect();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["passed"], true);
    assert!(found[0]["p99_us"].as_f64().unwrap() <= 10_000.0);
    let best_rate = found[0]["rate"].as_f64().unwrap();
    for p in points {
        if p["passed"] == true {
            assert!(p["rate"].as_f64().unwrap() <= best_rate, "{p}");
        }
    }
    // Every step is a stored run with its labels; the found one says so.
    let o = run_in(d.path(), &["results", "list", "--json", "--db", db_s]);
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), points.len() + 1, "the closed-loop step too");
    for r in runs {
        assert_eq!(r["labels"]["findmax"], "findmax-easy-run-4k100r");
        assert_eq!(r["labels"]["slo"], "p99<=10ms");
        assert!(r["labels"]["step"].is_string() && r["labels"]["rate"].is_string());
    }
    let marked: Vec<&serde_json::Value> = runs
        .iter()
        .filter(|r| r["labels"]["found"] == "true")
        .collect();
    assert_eq!(marked.len(), 1);
    assert_eq!(
        marked[0]["id"].as_str().unwrap(),
        found[0]["run_id"].as_str().unwrap()
    );
}

#[test]
fn find_max_prints_the_rate_and_every_point() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    // From a given start, with the knee as a stop: fewer steps, no closed-loop step.
    let o = run_in(
        d.path(),
        &sim_args(
            db.to_str().unwrap(),
            "20s",
            &[
                "--slo",
                "p99<=50ms",
                "--slo",
                "read.mean<=20ms",
                "--start",
                "3000",
                "--stop-at-knee",
                "--tolerance",
                "5%",
            ],
        ),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("p99<=50ms, read.mean<=20ms"), "{out}");
    assert!(out.contains("light (knee reference)"), "{out}");
    assert!(out.contains("past the knee"), "{out}");
    assert!(out.contains("← found"), "{out}");
    assert!(!out.contains("closed-loop maximum"), "{out}");
    // Past the knee fails before the loose objectives do: the mean at the answer is at
    // most twice the light step's (M/M/4 at 300 IOPS: about 1 ms).
    let max_line = out.lines().find(|l| l.starts_with("max: ")).unwrap();
    let iops: f64 = max_line["max: ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(iops > 1000.0 && iops < 4000.0, "{out}");
}

#[test]
fn bad_find_max_input_is_named() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    for (extra, says) in [
        (vec!["--slo", "p98<=3ms"], vec!["--slo", "p98<=3ms"]),
        (vec!["--slo", "p99<=3"], vec!["--slo", "no unit"]),
        (
            vec!["--slo", "p99<=3ms", "--min-step", "2m"],
            vec!["--duration 1m", "--min-step 2m"],
        ),
        (
            vec!["--slo", "p99<=3ms", "--tolerance", "0%"],
            vec!["--tolerance"],
        ),
        (vec!["--slo", "p99<=3ms", "--start", "-5"], vec!["--start"]),
        (
            vec!["--slo", "p99<=3ms", "--label", "found=yes"],
            vec!["--label found"],
        ),
    ] {
        let o = run_in(d.path(), &sim_args(db_s, "60s", &extra));
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        let e = stderr(&o);
        for s in says {
            assert!(e.contains(s), "{extra:?}: {e}");
        }
    }
    // A profile that mixes rated and closed-loop streams has no closed-loop maximum.
    let mixed = d.path().join("mixed.toml");
    std::fs::write(
        &mixed,
        "name = \"mixed\"\n[fleet]\nworkers = 1\n[timing]\nduration = \"10s\"\n\
         [[stream]]\nbs = \"4k\"\nread_pct = 100\nrandom_pct = 100\nrate_iops = 100.0\n\
         [[stream]]\nbs = \"4k\"\nread_pct = 0\nrandom_pct = 100\n",
    )
    .unwrap();
    for (extra, says) in [
        (vec!["--slo", "p99<=3ms"], "set --rate"),
        (
            vec!["--slo", "p99<=3ms", "--rate", "100"],
            "give the first rate with --start",
        ),
        (vec![], "--slo: give at least one"),
    ] {
        let mut args = vec![
            "find-max",
            mixed.to_str().unwrap(),
            "--engine",
            "sim",
            "--db",
            db_s,
        ];
        args.extend(extra);
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    // Nothing was measured.
    assert!(
        !db.exists() || {
            let o = run_in(d.path(), &["results", "list", "--json", "--db", db_s]);
            stdout(&o).trim() == "[]"
        }
    );
}

#[test]
fn no_rate_meeting_the_objective_exits_1_with_the_points() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    // The service alone takes 1 ms: a 100 µs p99 cannot be met at any rate.
    let o = run_in(
        d.path(),
        &sim_args(
            db.to_str().unwrap(),
            "10s",
            &["--slo", "p99<=100us", "--start", "1000", "--json"],
        ),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["max_iops"].is_null());
    assert_eq!(v["end"], "none met");
    assert!(stderr(&o).contains("no rate tried meets p99<=100us"));
}

#[test]
fn find_max_steps_run_until_steady_with_steady_state() {
    // A fixed-service device that never drifts: every step's rounds are steady at the
    // first round the five-round window can hold (5), and each round is a stored run.
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let mut a = sim_args(
        db_s,
        "5s",
        &[
            "--slo",
            "p99<=50ms",
            "--start",
            "1000",
            "--tolerance",
            "25%",
            "--min-step",
            "5s",
            "--steady-state",
        ],
    );
    let engine = a.iter().position(|s| s.starts_with("sim:")).unwrap();
    a[engine] = "sim:servers=4,service=1ms,dist=fixed";
    let o = run_in(d.path(), &a);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run_in(d.path(), &["results", "list", "--json", "--db", db_s]);
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    let steps: std::collections::BTreeSet<&str> = runs
        .iter()
        .map(|r| r["labels"]["step"].as_str().unwrap())
        .collect();
    assert!(steps.len() >= 2, "{runs:?}");
    // Five rounds per step, numbered 1..=5.
    for s in &steps {
        let rounds: Vec<&str> = runs
            .iter()
            .filter(|r| r["labels"]["step"] == *s)
            .map(|r| r["labels"]["round"].as_str().unwrap())
            .collect();
        assert_eq!(rounds.len(), 5, "step {s}: {rounds:?}");
    }
    // `--label round=…` belongs to the rounds.
    let mut bad = sim_args(db_s, "5s", &["--slo", "p99<=50ms", "--steady-state"]);
    bad.extend_from_slice(&["--label", "round=1"]);
    let o = run_in(d.path(), &bad);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--label round"), "{}", stderr(&o));
}
