//! `iofleet plan vdi|sql`: desktops (or VMs) = IOPS ÷ per-unit IOPS, from a stored run,
//! at peak (one closed-loop run) or through find-max, on the `sim` engine.

mod common;
use common::*;

/// A simulated device on which the Tuesday-login fleet delivers exactly the S2D report's
/// 176,242 IOPS at peak: 11 workers, one disk each, a device of 2 servers with a fixed
/// 124,828 ns service time. Each server completes floor(1 s ÷ 124,828 ns) = 8,011 I/Os
/// in the 1 s measured (8,011 × 124,828 ns = 0.999997 s; the 8,012th would end at
/// 1.000122 s), and 11 × 2 × 8,011 = 176,242. With no bandwidth limit every block size
/// takes the same time, and qd 8 keeps both servers busy.
const S2D_PEAK: [&str; 8] = [
    "--engine",
    "sim:servers=2,service=124828ns,dist=fixed",
    "--workers",
    "11",
    "--warmup",
    "0s",
    "--duration",
    "1s",
];

#[test]
fn tuesday_login_from_a_stored_run_reproduces_the_s2d_sizing() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    // The phase's profile as a closed-loop run: the built-in file without its
    // per-desktop rate, under the same name and with the same streams.
    let src = include_str!("../../../profiles/vdi-tuesday-login.toml");
    let peak: String = src
        .lines()
        .filter(|l| !l.starts_with("rate_iops") && !l.starts_with("arrival"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(peak, src, "the profile has a rate to remove");
    std::fs::write(d.path().join("tuesday-peak.toml"), peak).unwrap();
    let mut args = vec!["run", "./tuesday-peak.toml"];
    args.extend(S2D_PEAK);
    args.extend(["--db", db_s, "--name", "s2d-tuesday", "--quiet"]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run_in(
        d.path(),
        &["results", "export", "s2d-tuesday", "--db", db_s],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(stored["summary"]["all"]["iops"].as_f64(), Some(176_242.0));

    let plan = |extra: &[&str]| {
        let mut all = vec![
            "plan",
            "vdi",
            "--phase",
            "tuesday-login",
            "--from-run",
            "s2d-tuesday",
            "--db",
            db_s,
        ];
        all.extend_from_slice(extra);
        run_in(d.path(), &all)
    };
    let o = plan(&["--reference", "1500", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["sizing"], "from-run");
    assert_eq!(v["per_desktop_iops"], 14.6);
    assert_eq!(v["iops"].as_f64(), Some(176_242.0));
    // 176,242 ÷ 14.6 = 12,071.37: 12,071 whole desktops, an integer in JSON.
    assert!(v["desktops"].is_u64(), "{}", v["desktops"]);
    assert_eq!(v["desktops"].as_u64(), Some(12_071));
    // "8 times the 1,500-desktop reference".
    assert_eq!(v["reference"]["size"].as_u64(), Some(1_500));
    assert_eq!(v["reference"]["multiple"].as_u64(), Some(8));
    assert_eq!(v["reference"]["desktops"].as_u64(), Some(12_000));
    assert_eq!(v["mbps"], stored["summary"]["all"]["mbps"]);
    assert_eq!(v["run_id"], stored["stored"]["id"]);
    // The run is the phase's workload: nothing to notice.
    assert_eq!(v["run_profile"], "vdi-tuesday-login");
    assert_eq!(v["notices"], serde_json::json!([]));
    assert!(!stderr(&o).contains("notice"), "{}", stderr(&o));

    // The table says the same in words.
    let o = plan(&["--reference", "1500"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("12,071 desktops = 176,242 IOPS ÷ 14.6 IOPS per desktop"),
        "{out}"
    );
    assert!(
        out.contains("8 × the 1,500-desktop reference = 12,000 desktops"),
        "{out}"
    );

    // A per-desktop figure can be given, and an objective given with --from-run is
    // checked against the stored run.
    let o = plan(&["--per-desktop-iops", "10", "--slo", "p99<=1us"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("misses p99<=1us"), "{}", stderr(&o));
    assert!(stdout(&o).contains("17,624 desktops"), "{}", stdout(&o));
    // One it has no figure for (the run had no observer host) is said, not passed.
    let o = plan(&["--per-desktop-iops", "10", "--slo", "observers.cpu<=40%"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("has no figure for observers.cpu<=40%"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn tuesday_login_at_peak_reproduces_the_s2d_sizing() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let mut args = vec!["plan", "vdi", "--phase", "tuesday-login", "--at-peak"];
    args.extend(S2D_PEAK);
    args.extend(["--reference", "1500", "--db", db_s, "--json", "--quiet"]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["sizing"], "at-peak");
    assert_eq!(v["profile"], "vdi-tuesday-login");
    assert_eq!(v["objectives"], serde_json::json!([]));
    // One closed-loop run, no search.
    assert!(v.get("find_max").is_none(), "{v}");
    assert_eq!(v["iops"].as_f64(), Some(176_242.0));
    assert_eq!(v["desktops"].as_u64(), Some(12_071));
    assert_eq!(v["reference"]["multiple"].as_u64(), Some(8));
    assert_eq!(v["reference"]["desktops"].as_u64(), Some(12_000));

    // The run is stored, closed loop (no rate), labelled as plan's at-peak run.
    let id = v["run_id"].as_str().unwrap();
    let o = run_in(d.path(), &["results", "export", id, "--db", db_s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(stored["summary"]["all"]["iops"].as_f64(), Some(176_242.0));
    assert_eq!(
        stored["run"]["plan"]["timing"]["rate_iops"],
        serde_json::Value::Null
    );
    let o = run_in(
        d.path(),
        &[
            "results",
            "list",
            "--json",
            "--db",
            db_s,
            "--label",
            "sizing=at-peak",
        ],
    );
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["labels"]["plan"], "plan-vdi-vdi-tuesday-login");

    // Sizing a different phase from that run still computes, with a notice naming the
    // workload the run had and the one the phase needs.
    let o = run_in(
        d.path(),
        &[
            "plan",
            "vdi",
            "--phase",
            "boot",
            "--from-run",
            id,
            "--db",
            db_s,
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 176,242 ÷ 78.5 = 2,245.1.
    assert_eq!(v["desktops"].as_u64(), Some(2_245));
    let notices = v["notices"].as_array().unwrap();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let n = notices[0].as_str().unwrap();
    assert!(
        n.contains("ran vdi-tuesday-login (") && n.contains("needs vdi-boot ("),
        "{n}"
    );
    assert!(
        stderr(&o).contains(&format!("notice: {n}")),
        "{}",
        stderr(&o)
    );

    // Same profile name, other streams: also noticed.
    let o = run_in(
        d.path(),
        &[
            "plan",
            "vdi",
            "--phase",
            "tuesday-login",
            "--from-run",
            id,
            "--read-pct",
            "50",
            "--db",
            db_s,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("stream rand-write is rand-write 4k 0% read")
            && e.contains("instead of rand-write 4k 50% read"),
        "{e}"
    );
}

/// The S2D report's Monday (first) login: 225,582 IOPS (its "VDI周一(首次)登录模拟测试"
/// figure), which it called "10,000以上" (over 10,000) desktops at 20.7 IOPS each. 7
/// workers on a device of 6 servers with a fixed 186,180 ns service time complete
/// ⌊1 s ÷ 186,180 ns⌋ = 5,371 I/Os per server (5,371 × 186,180 ns = 0.99997 s; the
/// 5,372nd would end at 1.00016 s): 7 × 6 × 5,371 = 225,582. Every quotient here has a
/// fraction above .5, so rounding to nearest would give one more than the rule's
/// floor; the answers are worked out in whole numbers, apart from the code's floats.
#[test]
fn monday_login_sizes_whole_desktops_rounded_down() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let o = run_in(
        d.path(),
        &[
            "plan",
            "vdi",
            "--phase",
            "monday-login",
            "--at-peak",
            "--engine",
            "sim:servers=6,service=186180ns,dist=fixed",
            "--workers",
            "7",
            "--warmup",
            "0s",
            "--duration",
            "1s",
            "--reference",
            "1500",
            "--db",
            db_s,
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let iops: u64 = 225_582;
    assert_eq!(v["iops"].as_f64(), Some(iops as f64));
    // 225,582 ÷ 20.7 = 2,255,820 ÷ 207 = 10,897.68: 10,897 desktops (not 10,898), over
    // the report's 10,000.
    let desktops = iops * 10 / 207;
    assert_eq!(v["desktops"].as_u64(), Some(desktops));
    assert!(desktops > 10_000);
    // 10,897 ÷ 1,500 = 7.26: 7 × the reference.
    assert_eq!(v["reference"]["multiple"].as_u64(), Some(desktops / 1_500));
    assert_eq!(
        v["reference"]["desktops"].as_u64(),
        Some(desktops / 1_500 * 1_500)
    );

    // The same run sized for a boot storm: 225,582 ÷ 78.5 = 2,255,820 ÷ 785 = 2,873.66,
    // so 2,873 desktops (not 2,874), and 2,873 ÷ 1,500 = 1.92: 1 × the reference
    // (1,500 desktops, not 3,000).
    let id = v["run_id"].as_str().unwrap();
    let o = run_in(
        d.path(),
        &[
            "plan",
            "vdi",
            "--phase",
            "boot",
            "--from-run",
            id,
            "--reference",
            "1500",
            "--db",
            db_s,
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let boot = iops * 10 / 785;
    assert_eq!(v["desktops"].as_u64(), Some(boot));
    assert_eq!(v["reference"]["multiple"].as_u64(), Some(boot / 1_500));
    assert_eq!(v["reference"]["desktops"].as_u64(), Some(1_500));
}

#[test]
fn plan_sql_measures_through_find_max() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let o = run_in(
        d.path(),
        &[
            "plan",
            "sql",
            "--engine",
            "sim:servers=8,service=500us",
            "--workers",
            "1",
            "--warmup",
            "0s",
            "--duration",
            "10s",
            "--slo",
            "p99<=5ms",
            "--db",
            db_s,
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["per_vm_iops"], 6300.0);
    let iops = v["iops"].as_f64().unwrap();
    assert!(v["vms"].is_u64(), "{}", v["vms"]);
    assert_eq!(v["vms"].as_u64().unwrap(), (iops / 6300.0).floor() as u64);
    assert_eq!(v["sizing"], "find-max");
    // The IOPS are find-max's answer for vmfleet-sql, and its found run is the basis.
    assert_eq!(v["profile"], "vmfleet-sql");
    assert_eq!(v["find_max"]["max_iops"].as_f64().unwrap(), iops);
    assert_eq!(v["run_id"], v["find_max"]["run_id"]);
    assert!(v["mbps"].as_f64().unwrap() > 0.0);
    // Its steps are stored and labelled as find-max steps.
    let o = run_in(
        d.path(),
        &[
            "results",
            "list",
            "--json",
            "--db",
            db_s,
            "--label",
            "found=true",
        ],
    );
    let found: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found[0]["labels"]["findmax"], "plan-sql-vmfleet-sql");
}

#[test]
fn bad_plan_input_is_named() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    // A store with one run, so --from-run of another is "no such run".
    let o = run_in(
        d.path(),
        &[
            "run",
            "--engine",
            "sim",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--db",
            db_s,
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for (args, says) in [
        (vec!["vdi", "--phase", "lunch"], vec!["--phase", "lunch"]),
        (
            vec!["vdi", "--phase", "boot", "--slo", "p99=<3ms"],
            vec!["--slo", "p99=<3ms"],
        ),
        (
            vec!["vdi", "--phase", "boot", "--from-run", "nosuchrun"],
            vec!["--from-run nosuchrun"],
        ),
        (
            vec!["vdi", "--phase", "boot", "--worker-type", "power"],
            vec!["--worker-type", "steady"],
        ),
        (
            vec!["vdi", "--phase", "boot", "--per-desktop-iops", "0"],
            vec!["--per-desktop-iops"],
        ),
        (vec!["sql", "--per-vm-iops", "-3"], vec!["--per-vm-iops"]),
        (vec!["vdi", "--phase", "steady"], vec!["--slo", "--at-peak"]),
        (
            vec!["vdi", "--phase", "boot", "--at-peak", "--slo", "p99<=3ms"],
            vec!["--at-peak", "--slo"],
        ),
        (
            vec![
                "vdi",
                "--phase",
                "boot",
                "--at-peak",
                "--from-run",
                "latest",
            ],
            vec!["--at-peak", "--from-run"],
        ),
        (
            vec!["vdi", "--phase", "boot", "--at-peak", "--reference", "0"],
            vec!["--reference", "'0'", "at least 1"],
        ),
        (
            vec!["sql", "--at-peak", "--reference", "-1500"],
            vec!["--reference", "'-1500'"],
        ),
        (
            vec!["sql", "--at-peak", "--reference", "1.5"],
            vec!["--reference", "'1.5'"],
        ),
    ] {
        let mut all = vec!["plan"];
        all.extend(&args);
        all.extend(["--db", db_s]);
        let o = run_in(d.path(), &all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        for s in says {
            assert!(e.contains(s), "{args:?}: {e}");
        }
    }
}
