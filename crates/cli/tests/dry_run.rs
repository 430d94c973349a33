//! Runs without a profile (the workload from flags on the default shape) and `--dry-run`:
//! the printed plan is a profile that runs, and a dry run touches nothing.

mod common;

use std::fs;
use std::path::Path;

use common::*;

/// The TOML part of a dry run's stdout (comment lines dropped).
fn toml_lines(out: &str) -> Vec<&str> {
    out.lines().filter(|l| !l.starts_with('#')).collect()
}

fn dry_run(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.push("--dry-run");
    let o = run_in(dir, &all);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

/// Names and contents of every file under `dir`, recursively, sorted.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p.clone());
                out.push((p.display().to_string(), Vec::new()));
            } else {
                out.push((p.display().to_string(), fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_run_without_profile_takes_the_workload_from_flags() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("data");
    // The acceptance command, on a small disk so the fill stays small.
    let v = run_json(
        d.path(),
        &[
            "--bs",
            "4k",
            "--read-pct",
            "100",
            "--random-pct",
            "100",
            "--qd",
            "8",
            "--duration",
            "2s",
            "--target",
            t.to_str().unwrap(),
            "--disk-size",
            "4m",
        ],
    );
    let plan = &v["run"]["plan"];
    assert_eq!(plan["name"], "cli-4k-read100-random100-qd8");
    assert_eq!(plan["fleet"]["workers"], 1);
    assert_eq!(plan["fleet"]["disks_per_worker"], 1);
    assert_eq!(plan["fleet"]["threads_per_disk"], 1);
    assert_eq!(plan["fleet"]["qd"], 8);
    assert_eq!(plan["streams"][0]["read_pct"], 100.0);
    assert_eq!(plan["streams"][0]["random_pct"], 100.0);
    assert_eq!(plan["streams"][0]["bs"]["entries"][0][0], 4096);
    assert!(v["summary"]["read"]["ios"].as_u64().unwrap() > 0);
    assert_eq!(v["summary"]["write"]["ios"], 0);
    assert!(t.join("w000-d000.iofleet").is_file());
}

#[test]
fn the_default_shape_fills_in_what_the_flags_leave_out() {
    let d = tempfile::tempdir().unwrap();
    let v = run_json(
        d.path(),
        &[
            "--read-pct",
            "70",
            "--engine",
            "null",
            "--duration",
            "300ms",
            "--interval",
            "100ms",
        ],
    );
    let plan = &v["run"]["plan"];
    assert_eq!(plan["name"], "cli-4k-read70-random100-qd1");
    assert_eq!(plan["fleet"]["disk_size"], 1u64 << 30);
    assert_eq!(plan["timing"]["warmup"], 0.0);
    assert_eq!(plan["streams"][0]["working_set_pct"], 100.0);
    // Nothing given at all is still an error, not a silent 60 s run.
    let o = run_in(d.path(), &["run", "--engine", "null"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("give a profile"), "{}", stderr(&o));
}

#[test]
fn dry_run_prints_a_profile_that_runs_and_touches_nothing() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("data");
    let out = dry_run(
        d.path(),
        &[
            "easy-run-4k70r",
            "--target",
            t.to_str().unwrap(),
            "--qd",
            "2",
        ],
    );
    assert!(!t.exists(), "a dry run created the target directory");
    for needle in [
        "name = \"easy-run-4k70r\"",
        "qd = 2",
        "# Fleet",
        "workers:     2",
        "lanes:       64",
        "I/O threads:",
        "(this host)",
        "does not exist yet",
        "worker 1 disk 7: ",
        "w001-d007.iofleet (64m)",
    ] {
        assert!(out.contains(needle), "no {needle:?} in\n{out}");
    }
    // Saved as a file, it is a profile: it runs, and a dry run of it prints the same plan.
    let p = d.path().join("plan.toml");
    fs::write(&p, &out).unwrap();
    let again = dry_run(
        d.path(),
        &[p.to_str().unwrap(), "--target", t.to_str().unwrap()],
    );
    assert_eq!(toml_lines(&again), toml_lines(&out));
    let v = run_json(
        d.path(),
        &[
            p.to_str().unwrap(),
            "--engine",
            "null",
            "--duration",
            "300ms",
            "--interval",
            "100ms",
            "--warmup",
            "0s",
        ],
    );
    assert_eq!(v["run"]["plan"]["fleet"]["qd"], 2);
    assert_eq!(v["run"]["plan"]["name"], "easy-run-4k70r");
}

#[test]
fn dry_run_of_a_flags_run_leaves_an_existing_target_unchanged() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("data");
    fs::create_dir(&t).unwrap();
    fs::write(t.join("keep.txt"), b"keep me").unwrap();
    let before = snapshot(d.path());
    let db = d.path().join("results.db");
    let out = dry_run(
        d.path(),
        &[
            "--db",
            db.to_str().unwrap(),
            "--bs",
            "4k",
            "--read-pct",
            "100",
            "--random-pct",
            "100",
            "--qd",
            "8",
            "--duration",
            "2s",
            "--target",
            t.to_str().unwrap(),
        ],
    );
    assert_eq!(snapshot(d.path()), before, "a dry run changed the target");
    assert!(
        out.contains("qd = 8") && out.contains("duration = \"2s\""),
        "{out}"
    );
    assert!(out.contains("(exists)"), "{out}");
    assert!(!db.exists(), "a dry run opened the results store");
}

#[test]
fn dry_run_refuses_what_the_run_would_refuse() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("data");
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--target",
            t.to_str().unwrap(),
            "--disk-size",
            "1000t",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--disk-size"), "{}", stderr(&o));
    assert!(!t.exists());
    let o = run_in(d.path(), &["run", "easy-run-4k70r", "--dry-run", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--json"), "{}", stderr(&o));
}

#[test]
fn dry_run_of_groups_and_hosts() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("data");
    let out = dry_run(
        d.path(),
        &[
            "--group",
            "vdi=vmfleet-vdi:3",
            "--group",
            "sql=vmfleet-sql:1",
            "--target",
            t.to_str().unwrap(),
        ],
    );
    assert!(out.contains("# ---- group vdi (3 workers)"), "{out}");
    assert!(out.contains("# ---- group sql (1 workers)"), "{out}");
    assert!(out.contains("group sql: workers 3..=3"), "{out}");
    assert!(out.contains("w003-d000.iofleet"), "{out}");
    assert!(!t.exists());

    // Hosts are listed with their share and files, and never contacted (these names
    // resolve nowhere).
    let inv = d.path().join("inv.toml");
    fs::write(
        &inv,
        "[defaults]\ntarget = \"/var/tmp/iofleet\"\n\
         [[host]]\ndestination = \"nowhere-a.invalid\"\nworkers = 1\n\
         [[host]]\ndestination = \"nowhere-b.invalid\"\ntarget = [\"/dev/nvme9n1\"]\n",
    )
    .unwrap();
    let out = dry_run(
        d.path(),
        &[
            "easy-run-4k70r",
            "--hosts",
            inv.to_str().unwrap(),
            "--workers",
            "3",
        ],
    );
    assert!(
        out.contains("host nowhere-a.invalid (ssh nowhere-a.invalid): workers 0..=0"),
        "{out}"
    );
    assert!(out.contains("/var/tmp/iofleet/w000-d007.iofleet"), "{out}");
    assert!(
        out.contains("host nowhere-b.invalid (ssh nowhere-b.invalid): workers 1..=2"),
        "{out}"
    );
    assert!(
        out.contains("/dev/nvme9n1 (regions are planned on the host)"),
        "{out}"
    );

    // Inventory errors are the run's: pins beyond the run's workers, a missing file.
    let pins = d.path().join("pins.toml");
    fs::write(
        &pins,
        "[[host]]\ndestination = \"a.invalid\"\nworkers = 5\n\
         [[host]]\ndestination = \"b.invalid\"\n",
    )
    .unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            pins.to_str().unwrap(),
            "--workers",
            "2",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("pins 5 workers"), "{}", stderr(&o));
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            "missing.toml",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.toml"), "{}", stderr(&o));
}

#[test]
fn hosts_that_pin_their_workers_dry_run_as_they_run() {
    // Every host pins its worker count (2 + 1 + 3): the fleet is their sum, not the
    // profile's workers, in the dry run as in the run (the same planning function).
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("pins.toml");
    fs::write(
        &inv,
        (1..=3)
            .zip([2, 1, 3])
            .map(|(i, w)| {
                format!("[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\nworkers = {w}\n")
            })
            .collect::<String>(),
    )
    .unwrap();
    let args = ["easy-run-4k70r", "--hosts", inv.to_str().unwrap()];
    let out = dry_run(d.path(), &args);
    assert!(out.contains("#   workers:     6"), "{out}");
    assert!(
        out.contains("running 6 workers, not the planned 2"),
        "{out}"
    );
    let shares: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("(a local agent process): workers"))
        .collect();
    assert_eq!(shares.len(), 3, "{out}");
    // Each host's share, counted: 4 threads on each of 8 disks per worker, qd 1.
    for (line, (want, workers)) in shares
        .iter()
        .zip([("0..=1", 2), ("2..=2", 1), ("3..=5", 3)])
    {
        let lanes = workers * 8 * 4;
        let counted = format!("workers {want}, {lanes} lanes, {lanes} I/Os in flight");
        assert!(line.contains(&counted), "{line} (want {counted})\n{out}");
    }
    // Each host's disk files are its own workers' (8 disks each).
    for (host, files) in [("data1", 16), ("data2", 8), ("data3", 24)] {
        assert!(
            out.contains(&format!("target directory {host}: {files} disk file(s)")),
            "{host}: {out}"
        );
    }
    assert!(!d.path().join("data1").exists());

    // The run: the same six workers, placed the same way.
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            inv.to_str().unwrap(),
            "--engine",
            "null",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--no-save",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["workers"].as_array().unwrap().len(), 6, "{v}");
    let per_host: Vec<(String, u64)> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["host"].as_str().unwrap().to_string(),
                h["workers"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        per_host,
        [
            ("l1".to_string(), 2),
            ("l2".to_string(), 1),
            ("l3".to_string(), 3)
        ]
    );
}

#[test]
fn several_target_directories_take_the_disks_in_turn_in_the_plan_and_the_run() {
    // Two directories (two mounts in real life: one per SSD, or a pod's volumes): the
    // dry run lists each disk file where the run then puts it.
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    fs::create_dir(&a).unwrap();
    fs::create_dir(&b).unwrap();
    let (a_s, b_s) = (a.to_str().unwrap(), b.to_str().unwrap());
    let args = [
        "easy-run-4k70r",
        "--target",
        a_s,
        "--target",
        b_s,
        "--workers",
        "1",
        "--disks",
        "3",
        "--disk-size",
        "1m",
        "--engine",
        "psync",
        "--direct=false",
    ];
    let out = dry_run(d.path(), &args);
    assert!(
        out.contains(&format!("# Target: directories {a_s} {b_s}")),
        "{out}"
    );
    for (dir, file) in [(a_s, "w000-d000"), (b_s, "w000-d001"), (a_s, "w000-d002")] {
        assert!(
            out.contains(&format!("{dir}/{file}.iofleet")),
            "{file}: {out}"
        );
    }
    assert_eq!(fs::read_dir(&a).unwrap().count(), 0, "the dry run wrote");
    let mut run: Vec<&str> = vec!["run"];
    run.extend_from_slice(&args);
    run.extend(["--duration", "1s", "--warmup", "0s", "--no-save", "--quiet"]);
    let o = run_in(d.path(), &run);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let names = |p: &Path| {
        let mut v: Vec<String> = fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&a), ["w000-d000.iofleet", "w000-d002.iofleet"]);
    assert_eq!(names(&b), ["w000-d001.iofleet"]);
    // A missing directory among several is refused, naming the rule.
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--target",
            a_s,
            "--target",
            "nope",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("or all existing directories"),
        "{}",
        stderr(&o)
    );
}
