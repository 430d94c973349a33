//! Campaigns (docs/campaigns.md): a matrix sweep over several keys, `disks` among them,
//! on simulated devices (each step takes well under a second), its stored steps and its
//! curves in the report.

mod common;
use common::*;

/// The tests take it to read, the CPU objective's alone to write: it measures the host's
/// CPU, which the others' steps would add to.
static ALONE: std::sync::RwLock<()> = std::sync::RwLock::new(());

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
    let _shared = ALONE.read().unwrap_or_else(|p| p.into_inner());
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
    let _shared = ALONE.read().unwrap_or_else(|p| p.into_inner());
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
    let _shared = ALONE.read().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    for (vary, says) in [
        (
            ["qd=1,2", "fleet.qd=4,8"],
            "--vary qd: given more than once",
        ),
        (
            ["qd=1,2", "hosts=1,2"],
            "--vary hosts: a fleet-size step needs a fleet of hosts",
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

/// `sweep` of 3 × 2 steps of a second each, in real time, saved in `db` as `name`.
fn real_time_matrix<'a>(db: &'a str, name: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["sweep"];
    args.extend(SIM);
    args.extend([
        "--real-time",
        "--vary",
        "qd=1,2,3",
        "--vary",
        "disks=1,2",
        "--db",
        db,
        "--name",
        name,
    ]);
    args.extend(extra);
    args
}

/// (step, status, id, campaign) of every run of sweep `name`, oldest first.
fn steps_of(dir: &std::path::Path, db: &str, name: &str) -> Vec<(String, String, String, String)> {
    listed(dir, db, &format!("sweep={name}"))
        .iter()
        .map(|r| {
            let s = |v: &serde_json::Value| v.as_str().unwrap_or("-").to_string();
            (
                s(&r["labels"]["step"]),
                s(&r["status"]),
                s(&r["id"]),
                s(&r["labels"]["campaign"]),
            )
        })
        .collect()
}

#[test]
fn a_matrix_sweep_killed_in_its_fourth_step_resumes_with_steps_four_to_six_only() {
    let _shared = ALONE.read().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_iofleet"))
        .env("XDG_DATA_HOME", scratch_data_home())
        .env("PATH", guarded_path())
        .current_dir(d.path())
        .args(real_time_matrix(db_s, "k", &[]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let began = std::time::Instant::now();
    let step_began = |step: u32| {
        let label = format!("step={step}");
        let o = run_in(
            d.path(),
            &["results", "list", "--json", "--db", db_s, "--label", &label],
        );
        // The store may not exist yet.
        o.status.success()
            && serde_json::from_slice::<serde_json::Value>(&o.stdout)
                .is_ok_and(|v| v.as_array().is_some_and(|a| !a.is_empty()))
    };
    let wait_for = |step: u32, child: &mut std::process::Child| {
        while !step_began(step) {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the sweep ended before step {step} began"
            );
            assert!(began.elapsed().as_secs() < 120, "step {step} never began");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    // While it runs, its campaign is not resumed by another command: asked during the
    // first step, so that however long the refused command takes here, three steps of
    // the sweep's own remain before the one it is killed in.
    wait_for(0, &mut child);
    let o = run_in(d.path(), &real_time_matrix(db_s, "k", &["--resume"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is still running"), "{}", stderr(&o));
    // Then the fourth step (step 3 from 0) begins in the store, and it is killed.
    wait_for(3, &mut child);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = steps_of(d.path(), db_s, "k");
    let states: Vec<(&str, &str)> = before
        .iter()
        .map(|s| (s.0.as_str(), s.1.as_str()))
        .collect();
    assert_eq!(
        states,
        [
            ("0", "complete"),
            ("1", "complete"),
            ("2", "complete"),
            ("3", "incomplete")
        ]
    );
    let campaign = before[0].3.clone();
    assert!(before.iter().all(|s| s.3 == campaign), "{before:?}");

    let o = run_in(
        d.path(),
        &real_time_matrix(db_s, "k", &["--resume", "--json"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["campaign"], campaign.as_str());
    let after = steps_of(d.path(), db_s, "k");
    // The runs stored before are all still there, unchanged; the new ones are steps 4 to
    // 6 (3 to 5 from 0), complete and of the same campaign.
    assert_eq!(after[..before.len()], before[..]);
    let new: Vec<(&str, &str, &str)> = after[before.len()..]
        .iter()
        .map(|s| (s.0.as_str(), s.1.as_str(), s.3.as_str()))
        .collect();
    let c = campaign.as_str();
    assert_eq!(
        new,
        [
            ("3", "complete", c),
            ("4", "complete", c),
            ("5", "complete", c)
        ]
    );
    // The curve has all six steps: the first three are the runs stored before the kill.
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 6, "{v}");
    for (p, s) in points.iter().zip(before.iter().take(3)) {
        assert!(
            s.2.starts_with(p["run_id"].as_str().unwrap())
                || p["run_id"].as_str().unwrap().starts_with(&s.2),
            "{p} {s:?}"
        );
    }
    for (p, s) in points[3..].iter().zip(&after[before.len()..]) {
        assert!(p["run_id"].as_str().unwrap().starts_with(&s.2), "{p} {s:?}");
    }
    // The campaign ran to its end: there is nothing left to resume.
    let o = run_in(d.path(), &real_time_matrix(db_s, "k", &["--resume"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no unfinished campaign of sweep k"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn resume_refuses_another_profile_flags_or_fleet_naming_what_changed() {
    let _shared = ALONE.read().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let o = run_in(d.path(), &["profiles", "show", "easy-run-4k100r"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let profile = d.path().join("p.toml");
    std::fs::write(&profile, &o.stdout).unwrap();
    let p = profile.to_str().unwrap();
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", p];
        args.extend(&SIM[1..]);
        args.extend(["--vary", "qd=1,2", "--db", db_s, "--name", "r"]);
        args.extend(extra);
        run_in(d.path(), &args)
    };
    let o = sweep(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = steps_of(d.path(), db_s, "r")[0].3.clone();
    assert_eq!(id.len(), 8, "{id}");
    let resume = format!("--resume={id}");
    // The same command resumes it (every step finished: nothing runs again).
    let o = sweep(&[&resume]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(steps_of(d.path(), db_s, "r").len(), 2);
    for (extra, says) in [
        (
            vec!["--read-pct", "50"],
            "flags: --read-pct '50' was not given",
        ),
        (vec!["--seed", "7"], "flags: --seed '7' was not given"),
        (
            vec!["--target", "elsewhere"],
            "fleet: --target 'elsewhere' was not given",
        ),
    ] {
        let mut args = extra.clone();
        args.push(&resume);
        let o = sweep(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains(&format!(
                "--resume: campaign {id} was begun with another profile, flags or fleet"
            )) && e.contains(says),
            "{extra:?}: {e}"
        );
    }
    let mut text = std::fs::read_to_string(&profile).unwrap();
    text.push_str("# edited\n");
    std::fs::write(&profile, text).unwrap();
    let o = sweep(&[&resume]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("profile: the text of {p} changed")),
        "{}",
        stderr(&o)
    );
    // Nothing was measured by a refused resume.
    assert_eq!(steps_of(d.path(), db_s, "r").len(), 2);
    let o = sweep(&[&resume, "--steady-state"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--resume: a campaign measured with --steady-state cannot be resumed"),
        "{}",
        stderr(&o)
    );
    let o = sweep(&["--resume=0000beef"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no campaign 0000beef of sweep r"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_resumed_find_max_replays_its_stored_steps_and_measures_only_the_rest() {
    let _shared = ALONE.read().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let find_max = |extra: &[&str]| {
        let mut args = vec!["find-max"];
        args.extend(&SIM[..SIM.len() - 5]);
        args.extend([
            "--qd",
            "512",
            "--duration",
            "10s",
            "--start",
            "2000",
            "--slo",
            "p99<=1500us",
            "--db",
            db_s,
            "--name",
            "f",
            "--json",
            "--quiet",
        ]);
        args.extend(extra);
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let first = find_max(&[]);
    let points = first["points"].as_array().unwrap().clone();
    assert!(points.len() >= 4, "{first}");
    let id = |p: &serde_json::Value| p["run_id"].as_str().unwrap().to_string();
    // The search stopped in its last two steps: their runs are gone.
    for p in &points[points.len() - 2..] {
        let o = run_in(d.path(), &["results", "delete", &id(p), "--db", db_s]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let again = find_max(&["--resume"]);
    assert_eq!(again["campaign"], first["campaign"]);
    let replayed = again["points"].as_array().unwrap();
    // The same steps at the same rates; the stored ones taken as they were, the last
    // two measured again.
    let rates = |ps: &[serde_json::Value]| -> Vec<f64> {
        ps.iter().map(|p| p["rate"].as_f64().unwrap()).collect()
    };
    assert_eq!(rates(replayed), rates(&points));
    let n = points.len();
    for (a, b) in points[..n - 2].iter().zip(replayed) {
        assert_eq!(id(a), id(b));
    }
    for (a, b) in points[n - 2..].iter().zip(&replayed[n - 2..]) {
        assert_ne!(id(a), id(b));
    }
    assert_eq!(again["max_iops"], first["max_iops"]);
    let runs = listed(d.path(), db_s, "findmax=f");
    // The closed-loop step was not started with --start: n steps, each stored once.
    assert_eq!(runs.len(), n, "{runs:?}");
}

#[test]
fn compare_best_picks_the_highest_iops_step_of_each_configuration() {
    let _shared = ALONE.read().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let mut args = vec!["sweep"];
    args.extend(SIM);
    args.extend([
        "--vary",
        "disks=1,2",
        "--vary",
        "qd=3,1,2",
        "--db",
        db_s,
        "--name",
        "b",
    ]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run_in(
        d.path(),
        &[
            "compare",
            "--label",
            "sweep=b",
            "--best",
            "--best-over",
            "qd",
            "--db",
            db_s,
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let best = v["best"].as_array().unwrap();
    let runs = listed(d.path(), db_s, "sweep=b");
    // One configuration per disk count, each the highest-IOPS step among its three.
    assert_eq!(best.len(), 2, "{v}");
    for (b, disks) in best.iter().zip(["1", "2"]) {
        assert_eq!(b["configuration"], serde_json::json!({ "disks": disks }));
        assert_eq!(b["of"], 3);
        let mine: Vec<&serde_json::Value> = runs
            .iter()
            .filter(|r| r["labels"]["disks"] == disks)
            .collect();
        let top = mine
            .iter()
            .max_by(|a, b| {
                a["iops"]
                    .as_f64()
                    .unwrap()
                    .total_cmp(&b["iops"].as_f64().unwrap())
            })
            .unwrap();
        assert_eq!(b["run_id"], top["id"], "{v}");
        // The storage takes up to 4 I/Os at once: qd 3 is the best of 1, 2 and 3.
        assert_eq!(top["labels"]["qd"], "3");
    }
    // The comparison is of the two best runs.
    assert_eq!(v["runs"].as_array().map(Vec::len), Some(2), "{v}");
    // As text: the picks, then the comparison.
    let o = run_in(
        d.path(),
        &[
            "compare",
            "--label",
            "sweep=b",
            "--best",
            "--best-over",
            "qd",
            "--db",
            db_s,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("best per configuration (highest IOPS over qd):\n  disks=1"),
        "{out}"
    );
    assert!(out.contains("qd=3  best of 3"), "{out}");
    // A key no run carries is named.
    let o = run_in(
        d.path(),
        &[
            "compare",
            "--label",
            "sweep=b",
            "--best",
            "--best-over",
            "threads",
            "--db",
            db_s,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--best-over threads: none of the runs has a label 'threads'"),
        "{}",
        stderr(&o)
    );
    // One configuration (both keys searched over): a gate would have nothing to judge
    // the best against, and says so rather than pass.
    let o = run_in(
        d.path(),
        &[
            "compare",
            "--label",
            "sweep=b",
            "--best",
            "--best-over",
            "qd",
            "--best-over",
            "disks",
            "--fail-if",
            "iops < -5%",
            "--db",
            db_s,
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--fail-if: --best found a single configuration"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_cpu_objective_on_observers_without_any_is_refused_not_passed() {
    let _shared = ALONE.read().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let o = run_in(
        d.path(),
        &[
            "find-max",
            "--engine",
            "null",
            "--disk-size",
            "16m",
            "--prepare",
            "none",
            "--warmup",
            "0s",
            "--duration",
            "1s",
            "--min-step",
            "1s",
            "--slo",
            "observers.cpu<=40%",
            "--db",
            db.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--slo observers.cpu<=40%: the step measured no such CPU figure"),
        "{}",
        stderr(&o)
    );
}

/// Most the host may be busy without iofleet for the CPU search's figure to be its own.
const QUIET_HOST_PCT: f64 = 10.0;

#[test]
fn find_max_holds_host_cpu_at_an_objective_on_the_null_engine() {
    // Alone in this binary: the other tests' steps would count in the host's CPU.
    let _alone = ALONE.write().unwrap_or_else(|p| p.into_inner());
    // The null engine completes every I/O at once: the only cost of a higher rate is
    // the CPU that issues it, on one I/O thread, so the host's busy CPU climbs with the
    // rate. Other work on the machine adds to the host's CPU too; whatever it is, the
    // search's own measurements decide, and this checks the rule they were judged by.
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let before = need::host_busy_pct(std::time::Duration::from_secs(1));
    let o = run_in(
        d.path(),
        &[
            "find-max",
            "--engine",
            "null",
            "--io-threads",
            "1",
            "--bs",
            "4k",
            "--read-pct",
            "100",
            "--qd",
            "64",
            "--disk-size",
            "16m",
            "--prepare",
            "none",
            "--warmup",
            "0s",
            "--duration",
            "1s",
            "--min-step",
            "1s",
            "--tolerance",
            "5%",
            "--slo",
            "cpu<=40%",
            "--db",
            db.to_str().unwrap(),
            "--json",
            "--quiet",
        ],
    );
    let after = need::host_busy_pct(std::time::Duration::from_secs(1));
    // 1: no rate met the objective (the host was busier than 40% without it).
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["objectives"], serde_json::json!(["cpu<=40%"]));
    let points = v["points"].as_array().unwrap();
    let cpu = |p: &serde_json::Value| p["cpu_pct"].as_f64().expect("each step measured CPU");
    // Each step was judged by its measured host CPU.
    for p in points {
        assert_eq!(p["values"][0].as_f64(), Some(cpu(p)), "{p}");
        match p["outcome"].as_str().unwrap() {
            "pass" => assert!(cpu(p) <= 40.0, "{p}"),
            "missed cpu<=40%" => assert!(cpu(p) > 40.0, "{p}"),
            other => panic!("a step neither met nor missed the objective ({other}): {p}"),
        }
    }
    if before.max(after) > QUIET_HOST_PCT {
        eprintln!("the host was {before:.0}% busy before the search and {after:.0}% after");
        need::unavailable(
            "find_max_holds_host_cpu_at_an_objective_on_the_null_engine",
            "a host otherwise idle",
        );
        return;
    }
    assert_eq!(v["end"], "converged", "{v}");
    let found = points.iter().find(|p| p["found"] == true).unwrap();
    let rate = found["rate"].as_f64().unwrap();
    // The next step up: the lowest rate tried above the one found, which failed (the
    // majority of its measurements above 40%), within the tolerance of it.
    let above: Vec<&serde_json::Value> = points
        .iter()
        .filter(|p| p["rate"].as_f64().unwrap() > rate)
        .collect();
    let next = above
        .iter()
        .map(|p| p["rate"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert!((next - rate) / next <= 0.05, "{rate} and {next}: {v}");
    let at_next: Vec<f64> = above
        .iter()
        .filter(|p| p["rate"].as_f64().unwrap() == next)
        .map(|p| cpu(p))
        .collect();
    let over = at_next.iter().filter(|c| **c > 40.0).count();
    assert!(
        over * 2 > at_next.len(),
        "the next step up met 40%: {at_next:?}"
    );
    // The rate found holds host CPU within 5 points of the objective.
    let c = cpu(found);
    assert!((35.0..=40.0).contains(&c), "{c}% at {rate} IOPS: {v}");
}

/// The `iofleet` lines of the first `sh` block under `heading` in a doc, each split into
/// its words as a shell would (single quotes only), without the leading `iofleet`.
fn documented_commands(doc: &str, heading: &str) -> Vec<Vec<String>> {
    let text =
        std::fs::read_to_string(format!("{}/../../{doc}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let section = &text[text
        .find(heading)
        .unwrap_or_else(|| panic!("{doc}: no {heading}"))..];
    let block = &section[section.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let words = |line: &str| {
        let (mut out, mut word, mut quoted) = (Vec::new(), String::new(), false);
        for c in line.chars() {
            match c {
                '\'' => quoted = !quoted,
                ' ' if !quoted => out.extend((!word.is_empty()).then(|| std::mem::take(&mut word))),
                _ => word.push(c),
            }
        }
        out.extend((!word.is_empty()).then_some(word));
        out
    };
    block
        .lines()
        .filter_map(|l| l.strip_prefix("iofleet "))
        .map(words)
        .collect()
}

#[test]
fn vm_fleet_core_workload_commands_run_as_documented() {
    let _shared = ALONE.read().unwrap_or_else(|p| p.into_inner());
    let commands = documented_commands("docs/campaigns.md", "## VM Fleet's core workload");
    let kinds: Vec<&str> = commands.iter().map(|c| c[0].as_str()).collect();
    assert_eq!(
        kinds,
        ["sweep", "sweep", "sweep", "sweep", "run", "find-max", "find-max"]
    );
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let small = [
        "--workers",
        "1",
        "--disk-size",
        "16m",
        "--warmup",
        "0s",
        "--duration",
        "1s",
    ];
    // The share of reads and write-through of a stored step.
    let step = |id: &str| {
        let o = run_in(d.path(), &["results", "export", id, "--db", db_s]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let s = &r["summary"];
        let (reads, writes) = (
            s["read"]["iops"].as_f64().unwrap(),
            s["write"]["iops"].as_f64().unwrap(),
        );
        assert_eq!(r["run"]["plan"]["data"]["write_through"], true, "{id}");
        100.0 * reads / (reads + writes)
    };
    for c in &commands {
        let mut args: Vec<&str> = c.iter().map(String::as_str).collect();
        args.extend(small);
        args.extend(["--db", db_s, "--json", "--quiet"]);
        if c[0] == "find-max" {
            // Host CPU is an objective: measured in real time on the null engine, from a
            // low start so that the few steps allowed pass and fail.
            args.extend([
                "--engine",
                "null",
                "--io-threads",
                "1",
                "--prepare",
                "none",
                "--min-step",
                "1s",
                "--start",
                "2000",
                "--max-steps",
                "5",
            ]);
        } else {
            args.extend([
                "--engine",
                "sim:servers=4,service=1ms,dist=fixed",
                "--interval",
                "1s",
            ]);
        }
        let o = run_in(d.path(), &args);
        let line = c.join(" ");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{line}: {e}: {}", stderr(&o)));
        match c[0].as_str() {
            "sweep" if c.iter().any(|w| w == "--vary") => {
                assert_eq!(o.status.code(), Some(0), "{line}: {}", stderr(&o));
                // VM Fleet's write ratios 0, 10 and 30%: each step reads its share.
                let points = v["points"].as_array().unwrap();
                assert_eq!(points.len(), 3, "{line}: {v}");
                for (p, want) in points.iter().zip([100.0, 90.0, 70.0]) {
                    assert_eq!(p["at"]["read_pct"].as_str(), Some(&*format!("{want}")));
                    let got = step(p["run_id"].as_str().unwrap());
                    assert!((got - want).abs() <= 3.0, "{line}: {got}% reads at {want}");
                }
            }
            "sweep" => {
                assert_eq!(o.status.code(), Some(0), "{line}: {}", stderr(&o));
                // The closed-loop maximum, then the open-loop fractions of it.
                let points = v["points"].as_array().unwrap();
                assert_eq!(points[0]["value"], "max", "{line}: {v}");
                assert!(points.len() > 2, "{line}: {v}");
                let want: f64 = c[c.iter().position(|w| w == "--read-pct").unwrap() + 1]
                    .parse()
                    .unwrap();
                let got = step(points[1]["run_id"].as_str().unwrap());
                assert!((got - want).abs() <= 3.0, "{line}: {got}% reads at {want}");
            }
            "run" => {
                assert_eq!(o.status.code(), Some(0), "{line}: {}", stderr(&o));
                assert_eq!(v["run"]["profile"], "vmfleet-peak");
                assert_eq!(v["run"]["plan"]["streams"][0]["working_set_pct"], 50.0);
            }
            _ => {
                // 1: no rate met the objectives (the host was busy without the search).
                assert!(
                    matches!(o.status.code(), Some(0 | 1)),
                    "{line}: {}",
                    stderr(&o)
                );
                let slo = ["cpu<=40%", "read.mean<=3ms", "write.mean<=3ms"];
                assert_eq!(v["objectives"], serde_json::json!(slo), "{line}");
                // Every step was judged by its own host CPU and mean latencies (µs).
                for p in v["points"].as_array().unwrap() {
                    let f: Vec<f64> = (0..3).map(|i| p["values"][i].as_f64().unwrap()).collect();
                    let within = f[0] <= 40.0 && f[1] <= 3000.0 && f[2] <= 3000.0;
                    match p["outcome"].as_str().unwrap() {
                        "pass" => assert!(within, "{line}: {p}"),
                        "not sustained" => {}
                        missed => {
                            let i = slo.iter().position(|s| missed == format!("missed {s}"));
                            let i = i.unwrap_or_else(|| panic!("{line}: {p}"));
                            assert!(f[i] > [40.0, 3000.0, 3000.0][i], "{line}: {p}");
                        }
                    }
                }
            }
        }
    }
}
