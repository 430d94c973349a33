//! Campaigns (docs/campaigns.md): a matrix sweep over several keys, `disks` among them,
//! on simulated devices (each step takes well under a second), its stored steps and its
//! curves in the report.

mod common;
use common::*;

/// Runs in the store with `label` (KEY=VALUE), oldest first.
fn listed(dir: &std::path::Path, db: &str, label: &str) -> Vec<serde_json::Value> {
    let o = run_in(
        dir,
        &["results", "list", "--json", "--db", db, "--label", label],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_array().unwrap().clone()
}

/// One worker of one thread on devices of 4 servers that each take exactly 1 ms: a disk
/// at qd N < 4 completes N I/Os per ms.
const SIM: [&str; 14] = [
    "easy-run-4k100r",
    "--engine",
    "sim:servers=4,service=1ms,dist=fixed",
    "--workers",
    "1",
    "--threads",
    "1",
    "--warmup",
    "0s",
    "--duration",
    "1s",
    "--interval",
    "1s",
    "--quiet",
];

#[test]
fn a_matrix_sweep_runs_every_combination_and_stores_its_coordinates() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let mut args = vec!["sweep"];
    args.extend(SIM);
    args.extend([
        "--vary",
        "disks=1,2",
        "--vary",
        "qd=1,2",
        "--db",
        db_s,
        "--name",
        "m",
        "--json",
    ]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["vary"], "disks,qd");
    assert_eq!(v["keys"], serde_json::json!(["disks", "qd"]));
    let points = v["points"].as_array().unwrap();
    // The first key outermost; each disk at qd N completes N I/Os per ms, so IOPS is
    // 1,000 × disks × qd: both keys took effect on their step.
    let want = [
        ("1", "1", 1000.0),
        ("1", "2", 2000.0),
        ("2", "1", 2000.0),
        ("2", "2", 4000.0),
    ];
    assert_eq!(points.len(), want.len(), "{v}");
    for (p, (disks, qd, iops)) in points.iter().zip(want) {
        assert_eq!(
            (p["at"]["disks"].as_str(), p["at"]["qd"].as_str()),
            (Some(disks), Some(qd))
        );
        assert_eq!(p["value"], format!("{disks},{qd}"));
        let got = p["iops"].as_f64().unwrap();
        assert!(
            (got - iops).abs() <= iops * 0.01,
            "{disks} disks, qd {qd}: {got}"
        );
    }
    // Each step is a stored run named and labelled with its coordinates.
    let runs = listed(d.path(), db_s, "sweep=m");
    let got: Vec<(String, String, String, String, String)> = runs
        .iter()
        .map(|r| {
            let l = |k: &str| r["labels"][k].as_str().unwrap_or("-").to_string();
            (
                r["name"].as_str().unwrap().to_string(),
                l("step"),
                l("vary"),
                l("disks"),
                l("qd"),
            )
        })
        .collect();
    let want: Vec<(String, String, String, String, String)> = [
        ("m/disks=1,qd=1", "0", "1", "1"),
        ("m/disks=1,qd=2", "1", "1", "2"),
        ("m/disks=2,qd=1", "2", "2", "1"),
        ("m/disks=2,qd=2", "3", "2", "2"),
    ]
    .iter()
    .map(|(n, s, d, q)| {
        (
            n.to_string(),
            s.to_string(),
            "disks,qd".into(),
            d.to_string(),
            q.to_string(),
        )
    })
    .collect();
    assert_eq!(got, want);
    // The report draws one curve along qd per disk count.
    let mut args = vec!["report"];
    let ids: Vec<String> = runs
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    args.extend(ids.iter().map(String::as_str));
    args.extend(["--db", db_s]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = stdout(&o);
    for curve in ["sweep m (disks=1) p99", "sweep m (disks=2) p99"] {
        assert!(html.contains(curve), "no curve '{curve}' in the report");
    }
}

#[test]
fn a_matrix_table_has_a_column_per_key_and_gains_along_the_last() {
    let d = tempfile::tempdir().unwrap();
    let mut args = vec!["sweep"];
    args.extend(SIM);
    args.extend(["--vary", "disks=1,2", "--vary", "qd=1,2", "--no-save"]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].ends_with("4 step(s) of disks × qd"), "{out}");
    let head: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(&head[..3], ["disks", "qd", "IOPS"], "{out}");
    // The gain is over the previous step of the same disk count: none at each curve's
    // first step, +100% from qd 1 to qd 2.
    let gains: Vec<&str> = lines[2..6]
        .iter()
        .map(|l| l.split_whitespace().nth(7).unwrap())
        .collect();
    assert_eq!(gains, ["–", "+100%", "–", "+100%"], "{out}");
}

#[test]
fn a_matrix_refuses_what_it_cannot_vary_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    for (vary, says) in [
        (
            ["qd=1,2", "fleet.qd=4,8"],
            "--vary qd: given more than once",
        ),
        (
            ["qd=1,2", "hosts=1,2"],
            "--vary hosts: a command opens its fleet once",
        ),
        (
            ["qd=1,2", "stream.zipf=1,2"],
            "--vary stream.zipf: the profile key stream.zipf has no flag",
        ),
        (
            ["qd=1,2", "disks=1,0"],
            "--disks (fleet.disks_per_worker): 0 is out of range",
        ),
    ] {
        let mut args = vec!["sweep"];
        args.extend(SIM);
        args.extend(["--vary", vary[0], "--vary", vary[1], "--no-save"]);
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{vary:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{vary:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    // Nothing ran: no target was created.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}
