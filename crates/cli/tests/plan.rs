//! `iofleet plan vdi|sql`: desktops (or VMs) = IOPS at the objective ÷ per-unit IOPS,
//! from a stored run or through find-max on the `sim` engine.

mod common;
use common::*;

#[test]
fn tuesday_login_from_a_stored_run_reproduces_the_s2d_sizing() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    // A stored run near the S2D report's 176,242 Tuesday-login IOPS, made honestly: the
    // profile's 8 workers offered 22,030.25 IOPS each (176,242 in all, Poisson arrivals)
    // on simulated devices with room to spare, so they carry what is offered.
    let o = run_in(
        d.path(),
        &[
            "run",
            "vdi-tuesday-login",
            "--engine",
            "sim:servers=8,service=100us",
            "--rate",
            "22030.25",
            "--warmup",
            "0s",
            "--duration",
            "2s",
            "--db",
            db_s,
            "--name",
            "s2d-tuesday",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run_in(
        d.path(),
        &["results", "export", "s2d-tuesday", "--db", db_s],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let iops = stored["summary"]["all"]["iops"].as_f64().unwrap();
    assert!((iops - 176_242.0).abs() / 176_242.0 < 0.01, "{iops}");

    let o = run_in(
        d.path(),
        &[
            "plan",
            "vdi",
            "--phase",
            "tuesday-login",
            "--from-run",
            "s2d-tuesday",
            "--db",
            db_s,
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["per_desktop_iops"], 14.6);
    assert_eq!(v["iops"].as_f64().unwrap(), iops);
    let desktops = v["desktops"].as_f64().unwrap();
    assert_eq!(desktops, (iops / 14.6).floor());
    // About the report's 12,071 (176,242 ÷ 14.6), within the run's 1%.
    assert!((desktops - 12_071.0).abs() / 12_071.0 < 0.01, "{desktops}");
    let mbps = stored["summary"]["all"]["mbps"].as_f64().unwrap();
    assert_eq!(v["mbps"].as_f64().unwrap(), mbps);
    assert_eq!(v["run_id"], stored["stored"]["id"]);

    // The table says the same in words, and a per-desktop figure can be given.
    let o = run_in(
        d.path(),
        &[
            "plan",
            "vdi",
            "--phase",
            "tuesday-login",
            "--from-run",
            "s2d-tuesday",
            "--per-desktop-iops",
            "10",
            "--slo",
            "p99<=1us",
            "--db",
            db_s,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // An objective given with --from-run is checked against the stored run.
    assert!(stderr(&o).contains("misses p99<=1us"), "{}", stderr(&o));
    let out = stdout(&o);
    let want = format!("{} desktops", group((iops / 10.0).floor() as u64));
    assert!(out.contains(&want), "{want} not in {out}");
}

fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
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
    assert_eq!(v["per_vm_iops"], 1800.0);
    let iops = v["iops"].as_f64().unwrap();
    assert_eq!(v["vms"].as_f64().unwrap(), (iops / 1800.0).floor());
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
        (vec!["vdi", "--phase", "steady"], vec!["--slo"]),
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
