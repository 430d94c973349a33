//! The latency-versus-IOPS curve of `iofleet report` over the runs of a sweep or a
//! find-max (simulated devices, so the steps take well under a second each).

mod common;
use common::*;

fn ids(dir: &std::path::Path, db: &str, label: &str) -> Vec<String> {
    let o = run_in(
        dir,
        &["results", "list", "--json", "--db", db, "--label", label],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn report(dir: &std::path::Path, db: &str, runs: &[String]) -> String {
    let mut args = vec!["report"];
    args.extend(runs.iter().map(String::as_str));
    args.extend(["--db", db]);
    let o = run_in(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
}

/// The `<figure>` of the load curve, if the page has one.
fn curve(html: &str) -> Option<&str> {
    let at = html.find("<figure class=\"chart\" id=\"load-curve\">")?;
    let end = html[at..].find("</figure>").unwrap();
    Some(&html[at..at + end])
}

const SIM: [&str; 12] = [
    "easy-run-4k100r",
    "--engine",
    "sim:servers=4,service=1ms",
    "--workers",
    "1",
    "--disks",
    "1",
    "--threads",
    "1",
    "--warmup",
    "0s",
    "--quiet",
];

#[test]
fn a_sweeps_runs_draw_the_curve() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let mut args = vec!["sweep"];
    args.extend(SIM);
    args.extend([
        "--duration",
        "5s",
        "--vary",
        "qd=1,4,16",
        "--db",
        db_s,
        "--name",
        "qd-curve",
    ]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let runs = ids(d.path(), db_s, "sweep=qd-curve");
    assert_eq!(runs.len(), 3);
    let html = report(d.path(), db_s, &runs);
    let fig = curve(&html).expect("the load curve is drawn");
    assert!(fig.contains("<svg"), "{fig}");
    assert!(fig.contains("sweep qd-curve p99") && fig.contains("sweep qd-curve p50"));
    // A sweep has no objective and found no point.
    assert!(
        !fig.contains("found: ") && !fig.contains("objective p"),
        "{fig}"
    );
    assert!(html.contains("Latency against load"));
    // One plain run has no curve.
    let html = report(d.path(), db_s, &runs[..1]);
    assert!(curve(&html).is_none());
}

#[test]
fn a_find_max_curve_marks_the_point_found_and_the_objective() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let mut args = vec!["find-max"];
    args.extend(SIM);
    args.extend([
        "--qd",
        "256",
        "--duration",
        "10s",
        "--start",
        "2000",
        "--slo",
        "p99<=10ms",
        "--db",
        db_s,
        "--name",
        "fm",
        "--json",
    ]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let found_id = v["run_id"].as_str().unwrap();
    let runs = ids(d.path(), db_s, "findmax=fm");
    let html = report(d.path(), db_s, &runs);
    let fig = curve(&html).expect("the load curve is drawn");
    assert!(fig.contains("find-max fm p99"), "{fig}");
    assert!(fig.contains("objective p99&lt;=10ms"), "{fig}");
    // The legend names the run found, at the IOPS find-max reported.
    let found: Vec<&str> = fig.matches("found: ").collect();
    assert_eq!(found.len(), 1, "{fig}");
    assert!(fig.contains(&format!("(run {found_id})")), "{fig}");
    let iops = v["max_iops"].as_f64().unwrap();
    let label = if iops >= 1e3 {
        format!(
            "found: {}k IOPS",
            format!("{:.1}", iops / 1e3).trim_end_matches(".0")
        )
    } else {
        format!("found: {iops:.1} IOPS")
    };
    assert!(fig.contains(&label), "{label} not in {fig}");
}
