//! fio job files as workloads (docs/fio.md): `iofleet run job.fio` and `--fio FILE` run
//! through the normal run path with the usual flags on top, `--dry-run` prints the
//! resolved groups, `profiles from-fio` writes profiles that run, an option iofleet
//! cannot run fails with exit 2 naming file, line and option, and `--fio-ignore` runs
//! without it with a notice; `stonewall` phases run one after another, each a stored
//! run, with one fio document for all. Every run uses the null engine in a temporary
//! directory.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// Two jobs under one [global]: a 70/30 zipf mix (numjobs 2 × iodepth 4) and a rated
/// sequential-write log; the global size and runtime come from an include file and
/// `${FIO_T_SIZE}`.
fn write_jobs(dir: &Path) {
    std::fs::write(
        dir.join("common.inc"),
        "; shared settings\n[global]\nruntime=2\ntime_based\nsize=${FIO_T_SIZE}\ndirect=1\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("two.fio"),
        "include common.inc\n\
         [oltp]\n\
         rw=randrw\n\
         rwmixread=70\n\
         bssplit=4k/60:64k/40\n\
         numjobs=2\n\
         iodepth=4\n\
         random_distribution=zipf:1.2\n\
         \n\
         # the log job\n\
         [log]\n\
         rw=write\n\
         bs=32k\n\
         iodepth=1\n\
         rate_iops=200\n",
    )
    .unwrap();
}

fn run_fio(dir: &Path, args: &[&str]) -> std::process::Output {
    iofleet()
        .current_dir(dir)
        .env("FIO_T_SIZE", "16m")
        .args(args)
        .output()
        .expect("iofleet runs")
}

#[test]
fn a_job_file_runs_as_worker_groups() {
    let d = tempfile::tempdir().unwrap();
    write_jobs(d.path());
    let o = run_fio(
        d.path(),
        &[
            "run",
            "two.fio",
            "--engine",
            "null",
            "--target",
            "data",
            "--json",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let groups = v["groups"].as_array().unwrap();
    let shape: Vec<(&str, u64, u64)> = groups
        .iter()
        .map(|g| {
            (
                g["name"].as_str().unwrap(),
                g["workers"].as_u64().unwrap(),
                g["first_worker"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(shape, vec![("oltp", 2, 0), ("log", 1, 2)]);
    assert_eq!(v["workers"].as_array().unwrap().len(), 3);
    let streams: Vec<&str> = v["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(streams, vec!["oltp/main", "log/main"]);
    // The plans as run, field by field.
    let plans = v["run"]["plan"]["groups"].as_array().unwrap();
    let oltp = &plans[0]["plan"];
    assert_eq!(oltp["fleet"]["workers"], 2);
    assert_eq!(oltp["fleet"]["qd"], 4);
    assert_eq!(oltp["fleet"]["disk_size"], 16 << 20);
    assert_eq!(oltp["streams"][0]["read_pct"], 70.0);
    assert_eq!(oltp["streams"][0]["random_pct"], 100.0);
    assert_eq!(oltp["streams"][0]["locality"]["kind"], "zipf");
    assert_eq!(
        oltp["streams"][0]["locality"]["theta"], 1.2,
        "{}",
        oltp["streams"][0]
    );
    let log = &plans[1]["plan"];
    assert_eq!(log["timing"]["rate_iops"], 200.0);
    assert_eq!(log["streams"][0]["read_pct"], 0.0);
    assert_eq!(log["streams"][0]["random_pct"], 0.0);
    // The log stream is held to its rate: an open-loop schedule of 200 IOPS issues at
    // most 200 × 2 s (on the wall clock a loaded machine may issue fewer; the exact count
    // is a_rate_applies_to_each_of_numjobs's, in simulated time).
    let log_ios = groups[1]["all"]["ios"].as_u64().unwrap();
    assert!((1..=401).contains(&log_ios), "{}", groups[1]["all"]);
    assert!(
        groups[0]["read"]["ios"].as_u64().unwrap() > 0,
        "{}",
        groups[0]
    );
    assert!(
        groups[0]["write"]["ios"].as_u64().unwrap() > 0,
        "{}",
        groups[0]
    );
}

/// fio's `rate_iops` is per job, and `numjobs=N` makes N jobs of it: 3 jobs at 200 IOPS
/// beside 1 at 50 issue 3 × 200 × 2 s = 1,200 and 1 × 50 × 2 s = 100 I/Os, which a rate
/// shared by a section's jobs would make 400. Counted in simulated time (the null engine
/// with a fixed latency, evenly spaced arrivals as fio's), not on the wall clock.
#[test]
fn a_rate_applies_to_each_of_numjobs() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("rated.fio"),
        "[global]\nruntime=2\ntime_based\nsize=16m\nrw=write\nbs=32k\niodepth=4\n\
         [many]\nnumjobs=3\nrate_iops=200\n\
         [one]\nrate_iops=50\n",
    )
    .unwrap();
    let o = run_fio(
        d.path(),
        &[
            "run",
            "rated.fio",
            "--engine",
            "null-sim:fixed:100us",
            "--json",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["run"]["duration_s"], 2.0);
    let groups: Vec<(&str, u64, u64)> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["name"].as_str().unwrap(),
                g["workers"].as_u64().unwrap(),
                g["all"]["ios"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(groups, [("many", 3, 1_200), ("one", 1, 100)]);
    let per_worker: Vec<u64> = v["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["all"]["ios"].as_u64().unwrap())
        .collect();
    assert_eq!(per_worker, [400, 400, 400, 100]);
}

#[test]
fn usual_flags_apply_on_top_and_dry_run_prints_the_groups() {
    let d = tempfile::tempdir().unwrap();
    write_jobs(d.path());
    let o = run_fio(
        d.path(),
        &[
            "run",
            "--fio",
            "two.fio",
            "--engine",
            "null",
            "--qd",
            "8",
            "--duration",
            "1s",
            "--target",
            "data",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("# ---- group oltp (2 workers)"), "{out}");
    assert!(out.contains("# ---- group log (1 workers)"), "{out}");
    assert!(out.contains("bs = \"4k:60,64k:40\""), "{out}");
    assert_eq!(
        out.matches("qd = 8").count(),
        2,
        "--qd applies to every group: {out}"
    );
    assert_eq!(out.matches("duration = \"1s\"").count(), 2, "{out}");
    assert!(!d.path().join("data").exists(), "a dry run creates nothing");
    // The fio flags need a job file.
    let o = run_fio(
        d.path(),
        &["run", "vsan-7030", "--fio-ignore", "fsync", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--fio-ignore applies to a fio job file"),
        "{}",
        stderr(&o)
    );
    // --workers cannot say which job it means.
    let o = run_fio(d.path(), &["run", "two.fio", "--workers", "3", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--workers"), "{}", stderr(&o));
}

/// A job file as written for Windows with fio's logging and timing options: it runs, the
/// engine as iofleet's native one, with one notice for the engine and one per logging
/// option, an inline comment and an open last zone read as fio reads them.
#[test]
fn a_windows_job_with_logging_options_runs_with_one_notice_each() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("win.fio"),
        "[global]\nioengine=windowsaio ; Windows' native asynchronous I/O\nthread\n\
         direct=1\ntime_based\ntimeout=900\ngroup_reporting\nwrite_bw_log=bw\n\
         gtod_reduce=1\nio_submit_mode=offload\nsize=8m\n\
         [raw]\nblocksize=4k,2048k\nrw=randrw\nrwmixread=90 # the read-heavy run\n\
         iodepth=8\nnumjobs=2\nrandom_distribution=zoned:50/5:30/15:20/\n",
    )
    .unwrap();
    let o = run_fio(
        d.path(),
        &["run", "win.fio", "--target", "data", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.contains("hot_bands = \"50/5:30/15:20/80\""), "{out}");
    assert!(
        out.contains("read_pct = 100") && out.contains("weight = 90"),
        "{out}"
    );
    for (what, line) in [
        ("ioengine=windowsaio", 2),
        ("write_bw_log accepted", 8),
        ("gtod_reduce accepted", 9),
        ("io_submit_mode accepted", 10),
    ] {
        let n: Vec<&str> = err.lines().filter(|l| l.contains(what)).collect();
        assert_eq!(n.len(), 1, "{what}: {err}");
        assert!(n[0].contains(&format!("win.fio:{line}: ")), "{}", n[0]);
    }
    let o = run_fio(
        d.path(),
        &[
            "run",
            "win.fio",
            "--engine",
            "null",
            "--target",
            "data",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn an_unsupported_option_names_file_line_and_option() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("bad.fio"),
        "[global]\nruntime=1\n[a]\nrw=randread\nfsync=4\nverify_backlog=16\n",
    )
    .unwrap();
    let o = run_fio(
        d.path(),
        &[
            "run",
            "bad.fio",
            "--engine",
            "null",
            "--target",
            "data",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("bad.fio:5: fsync: not supported"), "{e}");
    assert!(e.contains("bad.fio:6: verify_backlog: unknown"), "{e}");
    assert!(!d.path().join("data").exists(), "nothing ran");

    // Ignoring both runs, with a notice per option in the result.
    let o = run_fio(
        d.path(),
        &[
            "run",
            "bad.fio",
            "--engine",
            "null",
            "--target",
            "data",
            "--no-save",
            "--json",
            "--fio-ignore",
            "fsync",
            "--fio-ignore",
            "verify_backlog",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let notices: Vec<&str> = v["notices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notices.contains(&"fio bad.fio:5: option fsync ignored (--fio-ignore fsync)"),
        "{notices:?}"
    );
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("fio bad.fio:6: option verify_backlog ignored")),
        "{notices:?}"
    );
    assert!(v["summary"]["all"]["ios"].as_u64().unwrap() > 0);
}

/// A job file of two stonewall phases: [w] writes, then [r] and [r2] read at once.
const PHASES: &str = "[global]\nruntime=1\nbs=4k\n[w]\nrw=write\n[r]\nstonewall\nrw=read\n[r2]\nrw=randread\nnumjobs=2\n";

#[test]
fn stonewall_phases_run_one_after_another_each_a_stored_run() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("phases.fio"), PHASES).unwrap();
    let db = d.path().join("r.db");
    let db = db.to_str().unwrap();
    let o = run_fio(
        d.path(),
        &[
            "run",
            "phases.fio",
            "--engine",
            "null",
            "--warmup",
            "0s",
            "--db",
            db,
            "--output-format",
            "fio-json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("fio phase 2/2 (stonewall at phases.fio:7): job(s) r, r2"),
        "{}",
        stderr(&o)
    );
    // One fio document lists every job of both phases, groupids numbered on.
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let jobs: Vec<(String, u64, u64, u64)> = doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let ios = |d: &str| j[d]["total_ios"].as_u64().unwrap();
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["groupid"].as_u64().unwrap(),
                ios("read"),
                ios("write"),
            )
        })
        .collect();
    let names: Vec<(&str, u64)> = jobs.iter().map(|j| (j.0.as_str(), j.1)).collect();
    assert_eq!(names, [("w", 0), ("r", 1), ("r2", 2)]);
    assert!(jobs[0].3 > 0 && jobs[0].2 == 0, "[w] only writes: {jobs:?}");
    assert!(jobs[1].2 > 0 && jobs[1].3 == 0 && jobs[2].2 > 0, "{jobs:?}");
    assert_eq!(doc["jobs"][2]["job options"]["numjobs"], "2");
    // Each phase is a stored run of its own, labelled, with only its jobs' I/O: the
    // write phase ran alone, not beside the reads.
    let o = run_fio(d.path(), &["results", "list", "--db", db, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let runs: Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for (n, name, reads) in [(1, "phases/phase1", false), (2, "phases/phase2", true)] {
        let label = format!("fio-phase={n}");
        let o = run_fio(
            d.path(),
            &["results", "list", "--db", db, "--json", "--label", &label],
        );
        let found: Value = serde_json::from_slice(&o.stdout).unwrap();
        let id = found[0]["id"]
            .as_str()
            .expect("the phase's run")
            .to_string();
        let o = run_fio(
            d.path(),
            &["results", "export", &id, "--format", "json", "--db", db],
        );
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["stored"]["name"], name);
        let s = &r["summary"];
        let (rd, wr) = (
            s["read"]["ios"].as_u64().unwrap(),
            s["write"]["ios"].as_u64().unwrap(),
        );
        assert_eq!((rd > 0, wr > 0), (reads, !reads), "phase {n}");
        let groups: Vec<&str> = r["groups"]
            .as_array()
            .map(|g| g.iter().map(|g| g["name"].as_str().unwrap()).collect())
            .unwrap_or_default();
        if n == 2 {
            assert_eq!(groups, ["r", "r2"]);
        }
    }
    // The table prints each phase's result as it ends, in order.
    let o = run_fio(
        d.path(),
        &[
            "run",
            "phases.fio",
            "--engine",
            "null",
            "--warmup",
            "0s",
            "--db",
            db,
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let p1 = out
        .find("name phases/phase1  labels fio-phase=1")
        .expect("phase 1's table");
    let p2 = out
        .find("name phases/phase2  labels fio-phase=2")
        .expect("phase 2's table");
    assert!(p1 < p2 && out[p2..].contains("stream r2/main"), "{out}");
    // --dry-run prints each phase.
    let o = run_fio(
        d.path(),
        &["run", "phases.fio", "--engine", "null", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let w = out.find("# fio phase 1/2: job(s) w").expect("phase 1");
    let r = out
        .find("# fio phase 2/2 (stonewall at phases.fio:7): job(s) r, r2")
        .expect("phase 2");
    assert!(w < r && out[w..r].contains("name = \"w\"") && out[r..].contains("name = \"r2\""));
}

#[test]
fn stonewall_phases_refuse_what_one_run_would_take_and_unset_variables_are_refused() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("phases.fio"), PHASES).unwrap();
    let refused = |args: &[&str], says: &str| {
        let o = run_fio(d.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    };
    // Commands that run one workload refuse the phases, naming file, line and option.
    refused(
        &[
            "sweep",
            "phases.fio",
            "--engine",
            "null",
            "--vary",
            "qd=1,2",
        ],
        "phases.fio:7: stonewall: job [r] waits for the jobs before it",
    );
    refused(
        &["verify", "phases.fio", "--engine", "null"],
        "phases.fio:7: stonewall",
    );
    refused(
        &[
            "find-max",
            "phases.fio",
            "--engine",
            "null",
            "--slo",
            "p99<=3ms",
        ],
        "phases.fio:7: stonewall",
    );
    for (flag, says) in [
        (
            &["--output", "x.json"][..],
            "--output: the job file has 2 stonewall phases",
        ),
        (
            &["--no-save"],
            "--no-save: the job file has 2 stonewall phases",
        ),
        (&["--json"], "--json: the job file has 2 stonewall phases"),
        (&["--label", "fio-phase=9"], "--label fio-phase"),
    ] {
        let mut args = vec!["run", "phases.fio", "--engine", "null"];
        args.extend_from_slice(flag);
        refused(&args, says);
    }
    // One phase at a time runs: the stonewall of the only job has nothing to wait for.
    let o = run_fio(
        d.path(),
        &[
            "run",
            "phases.fio",
            "--fio-job",
            "r",
            "--engine",
            "null",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("name = \"r\"") && !out.contains("name = \"w\""),
        "{out}"
    );
    assert!(out.contains("read_pct = 100.0"), "{out}");
    let o = run_fio(
        d.path(),
        &["run", "phases.fio", "--fio-job", "x", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--fio-job x: the job file has no job [x]; its jobs are: w, r, r2"),
        "{}",
        stderr(&o)
    );

    write_jobs(d.path());
    let o = iofleet()
        .current_dir(d.path())
        .env_remove("FIO_T_SIZE")
        .args(["run", "two.fio", "--engine", "null", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("common.inc:5: environment variable FIO_T_SIZE"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn from_fio_writes_profiles_that_run_as_groups() {
    let d = tempfile::tempdir().unwrap();
    write_jobs(d.path());
    let o = run_fio(
        d.path(),
        &["profile", "from-fio", "two.fio", "-o", "p.toml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(
            "run them together: iofleet run --group oltp=p-oltp.toml --group log=p-log.toml"
        ),
        "{e}"
    );
    let oltp = std::fs::read_to_string(d.path().join("p-oltp.toml")).unwrap();
    assert!(
        oltp.contains("workers = 2") && oltp.contains("zipf = 1.2"),
        "{oltp}"
    );
    let v = run_json(
        d.path(),
        &[
            "--group",
            "oltp=p-oltp.toml",
            "--group",
            "log=p-log.toml",
            "--engine",
            "null",
            "--target",
            "data",
            "--no-save",
        ],
    );
    let groups: Vec<(&str, u64)> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["name"].as_str().unwrap(), g["workers"].as_u64().unwrap()))
        .collect();
    assert_eq!(groups, vec![("oltp", 2), ("log", 1)]);

    // One job: one profile on stdout, which `iofleet run FILE` accepts.
    std::fs::write(
        d.path().join("one.fio"),
        "[r]\nrw=randread\nbs=4k\niodepth=2\nruntime=1\nsize=8m\n",
    )
    .unwrap();
    let o = run_fio(d.path(), &["profiles", "from-fio", "one.fio"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::write(d.path().join("one.toml"), stdout(&o)).unwrap();
    let v = run_json(
        d.path(),
        &[
            "one.toml",
            "--engine",
            "null",
            "--target",
            "data",
            "--no-save",
        ],
    );
    assert_eq!(v["run"]["plan"]["fleet"]["qd"], 2);
    assert_eq!(v["run"]["plan"]["streams"][0]["read_pct"], 100.0);
}

#[test]
fn an_invalid_mapped_value_names_the_profile_key_and_the_fio_option() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("small.fio"),
        "[a]\nrw=randread\nsize=100k\nruntime=1\n",
    )
    .unwrap();
    let o = run_fio(
        d.path(),
        &["run", "small.fio", "--engine", "null", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("small.fio [a]: fleet.disk_size: "), "{e}");
    assert!(e.contains("(fio option size)"), "{e}");
}

/// `verify` on an engine that touches no storage is refused naming its file and line,
/// whether `--engine null` or the job's own `ioengine=null` chose the engine; on files
/// the same job runs.
#[test]
fn verify_on_the_null_engine_names_the_option_and_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("v.fio"),
        "[global]\nruntime=1\n[v]\nrw=randwrite\nsize=8m\nverify=crc32c\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("vn.fio"),
        "[v]\nioengine=null\nrw=randwrite\nsize=8m\nruntime=1\nverify=md5\n",
    )
    .unwrap();
    for (file, extra, line) in [
        ("v.fio", &["--engine", "null"][..], "v.fio:6: verify: "),
        ("vn.fio", &[][..], "vn.fio:6: verify: "),
    ] {
        let mut args = vec!["run", file, "--target", "data", "--no-save", "--dry-run"];
        args.extend_from_slice(extra);
        let o = run_fio(d.path(), &args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{file}: {e}");
        assert!(e.contains(line), "{file}: {e}");
        assert!(e.contains("the null engine touches no storage"), "{e}");
    }
    let o = run_fio(
        d.path(),
        &[
            "run",
            "v.fio",
            "--engine",
            "psync",
            "--target",
            "data",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn stonewall_phases_of_a_fleet_give_fios_client_shape_with_a_group_per_phase() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("fleet.fio"),
        "[global]\nruntime=1\nbs=4k\nnumjobs=3\n[w]\nrw=write\n[r]\nstonewall\nrw=read\n",
    )
    .unwrap();
    let inv = d.path().join("local.toml");
    std::fs::write(
        &inv,
        (1..=3)
            .map(|i| format!("[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\n"))
            .collect::<String>(),
    )
    .unwrap();
    let db = d.path().join("r.db");
    let o = run_fio(
        d.path(),
        &[
            "run",
            "fleet.fio",
            "--engine",
            "null",
            "--warmup",
            "0s",
            "--quiet",
            "--hosts",
            inv.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--output-format",
            "fio-json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(doc.get("jobs").is_none());
    let entries: Vec<(String, String, u64, bool)> = doc["client_stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["jobname"].as_str().unwrap().into(),
                e["hostname"].as_str().unwrap().into(),
                e["groupid"].as_u64().unwrap(),
                e["read"]["total_ios"].as_u64().unwrap() > 0,
            )
        })
        .collect();
    // Each phase: its three hosts, then All clients; the write phase is group 0 and
    // reads nothing, the read phase group 1.
    assert_eq!(entries.len(), 8, "{entries:?}");
    for (i, e) in entries.iter().enumerate() {
        let phase = i / 4;
        assert_eq!(e.2, phase as u64, "{e:?}");
        assert_eq!(e.3, phase == 1, "{e:?}");
        match i % 4 {
            3 => assert_eq!(e.0, "All clients"),
            h => assert_eq!(
                (e.0.as_str(), e.1.as_str()),
                (["w", "r"][phase], ["l1", "l2", "l3"][h])
            ),
        }
    }
}

/// `include` of a file that is not a job file (lines shaped like /etc/shadow's; a file of
/// the test's own, not the real one): the run is refused naming the file, where it was
/// included and its line numbers, and none of its text reaches stdout or stderr, whether
/// it is included inside a job or before the first section.
#[test]
fn an_included_file_that_is_not_a_job_file_is_never_echoed() {
    let d = tempfile::tempdir().unwrap();
    let lines = [
        "root:$6$iofleetsalt$Q9xHASHroot0123456789abcdef:19800:0:99999:7:::",
        "daemon:*:19800:0:99999:7:::",
        "operator:$y$j9T$HASHoperator$zzzzzzzz:19800:0:99999:7:::",
        "svcaccount",
    ];
    std::fs::write(d.path().join("shadow"), lines.join("\n")).unwrap();
    for job in [
        "[a]\nrw=randread\nsize=16m\ninclude shadow\n",
        "include shadow\n[a]\nrw=randread\n",
    ] {
        std::fs::write(d.path().join("job.fio"), job).unwrap();
        let o = run_fio(
            d.path(),
            &[
                "run",
                "job.fio",
                "--engine",
                "null",
                "--no-save",
                "--dry-run",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        for line in lines {
            for part in line.split([':', '$']).filter(|p| p.len() > 2) {
                assert!(!all.contains(part), "'{part}' echoed: {all}");
            }
        }
        assert!(
            all.contains("shadow (included at job.fio:") && all.contains("lines 1, 2 and 3"),
            "{all}"
        );
    }
}

/// fio places a job's files in its `directory`: without `--target`, so does iofleet, with
/// the checks any target gets; a `--target` naming the same place gets no notice, and one
/// naming another place, `--hosts`, or jobs that disagree say the directory is not used.
#[test]
fn a_jobs_directory_is_the_target_unless_target_is_given() {
    let d = tempfile::tempdir().unwrap();
    let job = |name: &str, size: &str, dir: &str| {
        std::fs::write(
            d.path().join(name),
            format!("[j]\nrw=randread\nsize={size}\nruntime=1\ntime_based\ndirectory={dir}\n"),
        )
        .unwrap();
    };
    job("dir.fio", "1m", "jobdir");
    let o = run_fio(
        d.path(),
        &[
            "run",
            "dir.fio",
            "--engine",
            "psync",
            "--direct=false",
            "--warmup",
            "0s",
            "--json",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["run"]["target"], "jobdir");
    assert!(d.path().join("jobdir/w000-d000.iofleet").is_file());
    assert!(!d.path().join("iofleet-data").exists());
    // What a run says about directories: on stderr, and in a JSON result's notices.
    let said = |o: &std::process::Output| {
        let notices = serde_json::from_slice::<Value>(&o.stdout)
            .map(|v| v["notices"].clone())
            .unwrap_or_default();
        let notices = notices.as_array().cloned().unwrap_or_default();
        let mut lines: Vec<String> = stderr(o).lines().map(str::to_string).collect();
        lines.extend(
            notices
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string)),
        );
        lines.retain(|l| l.contains("director"));
        lines
    };
    assert_eq!(said(&o), Vec::<String>::new());
    // A profile has no target: from-fio says which to run it with.
    let o = run_fio(d.path(), &["profiles", "from-fio", "dir.fio"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        said(&o),
        [
            "note: fio dir.fio:6: directory=jobdir: a profile has no target; run it with --target \
          jobdir"
        ]
    );

    // A dry run names what a run would do; --target as the directory says nothing more.
    let dry = |file: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            file,
            "--engine",
            "psync",
            "--direct=false",
            "--dry-run",
        ];
        args.extend(extra);
        run_fio(d.path(), &args)
    };
    for same in ["jobdir", "./jobdir/"] {
        let o = dry("dir.fio", &["--target", same]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(said(&o), Vec::<String>::new(), "--target {same}");
    }
    let o = dry("dir.fio", &["--target", "other"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        said(&o),
        [
            "note: fio dir.fio:6: directory=jobdir: the disks go under --target other, as given, \
          not in this directory"
        ]
    );
    let inv = d.path().join("local.toml");
    std::fs::write(
        &inv,
        "[[host]]\ndestination = \"l1\"\ntransport = \"local\"\ntarget = \"data1\"\n",
    )
    .unwrap();
    let o = dry("dir.fio", &["--hosts", inv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(said(&o)[0].contains("with --hosts each host's disks go under its target"));

    // The directory is checked as --target is: too little space is refused, naming it,
    // and nothing is created.
    job("big.fio", "1000t", "bigdir");
    let o = dry("big.fio", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not enough free space in bigdir"),
        "{}",
        stderr(&o)
    );
    assert!(!d.path().join("bigdir").exists());

    // A block device is written only when --target names it, never from a job file (a
    // device node made here, never opened).
    if need::need(
        "a_jobs_directory_is_the_target_unless_target_is_given",
        &["root", "mknod"],
    ) {
        let node = d.path().join("blk");
        let made = std::process::Command::new("mknod")
            .args([node.to_str().unwrap(), "b", "7", "250"])
            .status()
            .unwrap();
        assert!(made.success());
        job("dev.fio", "1m", node.to_str().unwrap());
        let o = dry("dev.fio", &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o)
                .contains("is a block device; iofleet writes a device only when --target names it"),
            "{}",
            stderr(&o)
        );
    }

    // Jobs in different directories: one target serves every group, the default.
    std::fs::write(
        d.path().join("two.fio"),
        "[global]\nruntime=1\ntime_based\nrw=read\n[a]\ndirectory=d1\n[b]\ndirectory=d2\n",
    )
    .unwrap();
    let o = dry("two.fio", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Target: directory iofleet-data"),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        said(&o),
        [
            "note: fio two.fio: the jobs name different directories (d1, d2); one target serves \
          every group, here iofleet-data (pass --target)"
        ]
    );

    // One job names a directory and the other none (fio would write that one where it
    // runs): the directory is not taken for both, and the notice says why.
    std::fs::write(
        d.path().join("mixed.fio"),
        "[global]\nruntime=1\ntime_based\nrw=read\n[a]\ndirectory=d1\n[b]\n",
    )
    .unwrap();
    let o = dry("mixed.fio", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Target: directory iofleet-data"),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        said(&o),
        [
            "note: fio mixed.fio: some jobs name no directory; one target serves every group, \
          here iofleet-data (pass --target)"
        ]
    );
}
