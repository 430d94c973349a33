//! Runs through the binary: JSON checked against the published schema, the table, real
//! I/O on a scratch directory with io_uring and psync, fill markers, and Ctrl-C.

mod common;

use std::os::unix::fs::MetadataExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/result.schema.json"
    ))
    .expect("schema file");
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).expect("valid schema")
}

/// `run_json`, checked against the published schema.
fn json_run(dir: &std::path::Path, args: &[&str]) -> Value {
    let v = run_json(dir, args);
    let errors: Vec<String> = schema()
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
    v
}

#[test]
fn null_engine_json_matches_schema_and_shape() {
    let d = tempfile::tempdir().unwrap();
    let v = json_run(
        d.path(),
        &[
            "vmfleet-sql",
            "--engine",
            "null",
            "--workers",
            "3",
            "--duration",
            "2s",
            "--warmup",
            "500ms",
            "--interval",
            "500ms",
        ],
    );
    assert_eq!(v["run"]["engine"], "null");
    assert_eq!(v["run"]["target"], "none");
    assert_eq!(v["run"]["interrupted"], false);
    assert_eq!(v["workers"].as_array().unwrap().len(), 3);
    let intervals = v["intervals"].as_array().unwrap();
    assert_eq!(intervals.iter().filter(|i| i["warmup"] == true).count(), 1);
    assert_eq!(intervals.iter().filter(|i| i["warmup"] == false).count(), 4);
    assert_eq!(
        v["streams"].as_array().unwrap().len(),
        2,
        "data and log streams"
    );
    // Σ workers = total; Σ streams = total.
    let total = v["summary"]["all"]["ios"].as_u64().unwrap();
    assert!(total > 0);
    let by_worker: u64 = v["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["all"]["ios"].as_u64().unwrap())
        .sum();
    let by_stream: u64 = v["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["all"]["ios"].as_u64().unwrap())
        .sum();
    assert_eq!(by_worker, total);
    assert_eq!(by_stream, total);
    // Rated streams: the log stream runs at its own 300 IOPS per worker (open loop).
    // Counted in simulated time, where the schedule is exact whatever the machine's load:
    // 3 workers × 300 IOPS × 2 s measured, while the data stream's count is its own.
    let sim = json_run(
        d.path(),
        &[
            "vmfleet-sql",
            "--engine",
            "null-sim:fixed:50us",
            "--workers",
            "3",
            "--duration",
            "2s",
            "--warmup",
            "500ms",
            "--interval",
            "500ms",
        ],
    );
    assert_eq!(
        sim["streams"][1]["all"]["ios"],
        3 * 300 * 2,
        "{}",
        sim["streams"]
    );
    assert_eq!(sim["streams"][1]["all"]["iops"], 900.0);
    assert_eq!(sim["streams"][0]["all"]["ios"], 3 * 6000 * 2);
    // No nothing-files were created for the null engine.
    assert!(!d.path().join("iofleet-data").exists());
}

#[test]
fn table_has_the_published_columns() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for col in [
        "IOPS",
        "MB/s",
        "lat mean µs",
        "read µs",
        "write µs",
        "stddev µs",
        "outstanding",
        "CPU",
        "p99.9",
        "IOPS median of",
    ] {
        assert!(out.contains(col), "table lacks {col}:\n{out}");
    }
}

#[test]
fn real_io_on_a_scratch_directory_then_no_refill() {
    let d = tempfile::tempdir().unwrap();
    let args = [
        "diskspd-4k-read",
        "--workers",
        "1",
        "--disks",
        "2",
        "--disk-size",
        "8m",
        "--qd",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ];
    let t0 = Instant::now();
    let v = json_run(d.path(), &args);
    let wall = t0.elapsed().as_secs_f64();
    assert!(["io_uring", "psync"].contains(&v["run"]["engine"].as_str().unwrap()));
    assert!(v["summary"]["read"]["ios"].as_u64().unwrap() > 0);
    // The prepare (create and fill 16 MiB) is recorded, and is part of the wall time.
    let prepared = v["run"]["prepare_s"].as_f64().unwrap();
    assert!(
        prepared > 0.0 && prepared + 1.0 < wall,
        "{prepared} s of {wall} s"
    );
    assert_eq!(v["summary"]["errors"]["count"], 0);
    for disk in ["w000-d000.iofleet", "w000-d001.iofleet"] {
        let len = std::fs::metadata(d.path().join("iofleet-data").join(disk))
            .unwrap()
            .len();
        assert_eq!(
            len,
            8 * 1024 * 1024 + 4096,
            "data plus the fill marker block"
        );
    }
    // Second run: the fill marker is valid, the disks are not filled again.
    let v2 = json_run(d.path(), &args);
    let notices = v2["notices"].to_string();
    assert!(notices.contains("valid fill marker"), "{notices}");
    assert!(v2["run"]["prepare_s"].as_f64().unwrap() > 0.0);
    // A different size is a different fill.
    let mut bigger = args.to_vec();
    bigger[6] = "12m";
    let v3 = json_run(d.path(), &bigger);
    assert!(!v3["notices"].to_string().contains("valid fill marker"));
}

#[test]
fn psync_engine_writes_at_the_profile_qd() {
    let d = tempfile::tempdir().unwrap();
    let v = json_run(
        d.path(),
        &[
            "easy-run-4k70r",
            "--engine",
            "psync",
            "--workers",
            "1",
            "--disks",
            "1",
            "--threads",
            "2",
            "--qd",
            "4",
            "--disk-size",
            "8m",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    assert_eq!(v["run"]["engine"], "psync");
    assert!(v["summary"]["write"]["ios"].as_u64().unwrap() > 0);
    assert_eq!(
        v["summary"]["outstanding_io"]["configured"], 8,
        "2 lanes at qd 4: one sync thread per slot once an I/O blocks"
    );
    assert!(v["notices"]
        .to_string()
        .contains("psync keeps one I/O in flight"));
}

#[test]
fn ctrl_c_stops_reports_and_exits_130() {
    let d = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("iofleet"));
    cmd.current_dir(d.path())
        .env("XDG_DATA_HOME", scratch_data_home())
        .args([
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--duration",
            "60s",
            "--warmup",
            "0s",
            "--json",
            "--metrics-listen",
            "127.0.0.1:0",
        ]);
    let run = Watched::spawn(cmd);
    // Two 1 s intervals measured (indexes 0 and 1), whatever the machine's load.
    run.wait_for(
        "iofleet_interval_index",
        |i| i >= 1.0,
        Duration::from_secs(120),
    );
    let signalled = Instant::now();
    run.signal("-INT");
    let o = run.finish();
    // Liveness only (the timing goal is for benchmarks): it must not run on to 60 s.
    assert!(signalled.elapsed() < Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(130), "stderr: {}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("partial result printed as JSON");
    assert_eq!(v["run"]["interrupted"], true);
    let measured = v["run"]["duration_s"].as_f64().unwrap();
    assert!(measured > 1.0 && measured < 10.0, "measured {measured}");
    assert!(v["summary"]["all"]["ios"].as_u64().unwrap() > 0);
    // The interval the stop cut short is counted for the time it ran, not its full
    // length: durations add up, and its rate is not diluted.
    let intervals = v["intervals"].as_array().unwrap();
    let sum: f64 = intervals
        .iter()
        .map(|i| i["duration_s"].as_f64().unwrap())
        .sum();
    assert!((sum - measured).abs() < 1e-6, "{sum} vs {measured}");
    // Its rate is its I/Os over the time it ran (a rate over the full second would be
    // lower by the share it did not run; the I/O rate itself depends on the machine).
    let last = intervals.last().unwrap();
    let ran = last["duration_s"].as_f64().unwrap();
    assert!(ran < 1.0, "{last}");
    let (ios, iops) = (
        last["ios"].as_f64().unwrap(),
        last["iops"].as_f64().unwrap(),
    );
    assert!(
        ios > 0.0 && (iops - ios / ran).abs() <= 1e-6 * iops,
        "{last}"
    );
    let errors: Vec<String> = schema().iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn ctrl_c_before_measuring_saves_an_interrupted_run_without_figures() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("iofleet"));
    cmd.current_dir(d.path())
        .args([
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--workers",
            "1",
            "--disks",
            "1",
            "--rate",
            "2000",
            "--warmup",
            "60s",
            "--duration",
            "60s",
            "--interval",
            "250ms",
            "--metrics-listen",
            "127.0.0.1:0",
            "--name",
            "cut-short",
            "--db",
        ])
        .arg(&db);
    let run = Watched::spawn(cmd);
    // In the warm-up: two of its intervals have ended.
    run.wait_for(
        "iofleet_interval_index",
        |i| i >= 1.0,
        Duration::from_secs(120),
    );
    assert_eq!(run.gauge("iofleet_warmup"), Some(1.0));
    run.signal("-INT");
    let o = run.finish();
    assert_eq!(o.status.code(), Some(130), "stderr: {}", stderr(&o));
    // The table says nothing was measured instead of printing zeros.
    let text = stdout(&o);
    assert!(text.contains("nothing was measured"), "{text}");
    assert!(
        !text.contains("IOPS median") && !text.contains("0.0/"),
        "{text}"
    );
    // Saved as interrupted, with no figures: null, not 0.
    let list = iofleet()
        .args(["results", "list", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list[0]["status"], "interrupted");
    assert_eq!(list[0]["intervals"], 0);
    let e = iofleet()
        .args(["results", "export", "cut-short", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(e.status.code(), Some(0), "{}", stderr(&e));
    let v: Value = serde_json::from_slice(&e.stdout).unwrap();
    let errors: Vec<String> = schema().iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(v["run"]["interrupted"], true);
    assert_eq!(v["run"]["duration_s"], 0.0);
    let s = &v["summary"];
    assert_eq!(s["all"]["ios"], 0);
    for f in ["iops_median_interval", "cpu", "memory"] {
        assert!(s[f].is_null(), "{f}: {}", s[f]);
    }
    assert!(s["outstanding_io"]["measured_mean"].is_null());
    assert!(s["all"]["latency_us"].is_null());
    let show = iofleet()
        .args(["results", "show", "cut-short", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        stdout(&show).contains("nothing was measured"),
        "{}",
        stdout(&show)
    );
}

#[test]
fn ctrl_c_while_filling_prints_and_saves_no_figures() {
    // A tmpfs target: the fill touches no block device, and the disk stays sparse.
    let shm = std::path::Path::new("/dev/shm");
    if !need::environment(
        "ctrl_c_while_filling_prints_and_saves_no_figures",
        "no /dev/shm",
        shm.is_dir(),
    ) {
        return;
    }
    let d = tempfile::tempdir_in(shm).unwrap();
    let target = d.path().join("data");
    let db = d.path().join("r.db");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .current_dir(d.path())
        .args([
            "run",
            "easy-run-4k70r",
            "--engine",
            "psync",
            "--direct=false",
        ])
        .args(["--workers", "1", "--disks", "1", "--disk-size", "4g"])
        .args([
            "--prepare",
            "random",
            "--warmup",
            "60s",
            "--duration",
            "60s",
        ])
        .args(["--quiet", "--name", "fill-cut", "--target"])
        .arg(&target)
        .arg("--db")
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Signal as soon as the fill has begun writing.
    let t0 = Instant::now();
    let filling = || {
        std::fs::read_dir(&target)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                e.metadata()
                    .map(|m| m.is_file() && m.blocks() > 0)
                    .unwrap_or(false)
            })
    };
    while !filling() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(filling(), "the fill did not start");
    let ok = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "stderr: {}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("nothing was measured"), "{text}");
    assert!(!text.contains("measured 0.0 s"), "{text}");
    let e = iofleet()
        .args(["results", "export", "fill-cut", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(e.status.code(), Some(0), "{}", stderr(&e));
    let v: Value = serde_json::from_slice(&e.stdout).unwrap();
    assert_eq!(v["stored"]["status"], "interrupted");
    assert!(
        v["notices"]
            .to_string()
            .contains("interrupted while preparing"),
        "{}",
        v["notices"]
    );
    let s = &v["summary"];
    for f in ["iops_median_interval", "cpu", "memory"] {
        assert!(s[f].is_null(), "{f}: {}", s[f]);
    }
    assert!(s["outstanding_io"]["configured"].is_null());
    assert!(s["read"]["latency_us"].is_null());
    assert!(v["run"]["start_skew_ms"].is_null());
}

#[test]
fn output_file_gets_the_json_too() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "iometer-database",
            "--engine",
            "null",
            "--duration",
            "500ms",
            "--interval",
            "250ms",
            "--output",
            "r.json",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value =
        serde_json::from_slice(&std::fs::read(d.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(v["run"]["profile"], "iometer-database");
    assert!(stdout(&o).contains("IOPS"), "table still printed");
}

#[test]
fn cleanup_removes_the_disk_files_it_used() {
    let d = tempfile::tempdir().unwrap();
    let keep = d.path().join("iofleet-data").join("unrelated.txt");
    std::fs::create_dir_all(keep.parent().unwrap()).unwrap();
    std::fs::write(&keep, b"not ours").unwrap();
    let run_with_cleanup = |disks: &str| {
        let o = run_in(
            d.path(),
            &[
                "run",
                "diskspd-4k-read",
                "--workers",
                "1",
                "--disks",
                disks,
                "--disk-size",
                "4m",
                "--duration",
                "500ms",
                "--interval",
                "250ms",
                "--warmup",
                "0s",
                "--cleanup",
                "--quiet",
                "--no-save",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    };
    run_with_cleanup("2");
    let left: Vec<String> = std::fs::read_dir(d.path().join("iofleet-data"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        ["unrelated.txt"],
        "only iofleet's disk files are removed"
    );
    // Without other files, the directory goes too.
    std::fs::remove_file(&keep).unwrap();
    run_with_cleanup("1");
    assert!(!d.path().join("iofleet-data").exists());
}

/// `--engine auto` on a filesystem without non-blocking reads (tmpfs, buffered) uses
/// psync, names it in the result and says why; on the root filesystem it stays io_uring.
#[test]
fn auto_engine_avoids_io_uring_where_it_would_punt_every_io() {
    let shm = std::path::Path::new("/dev/shm");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let tmpfs = mounts
        .lines()
        .any(|l| l.starts_with("tmpfs /dev/shm ") || l.contains(" /dev/shm tmpfs "));
    if !need::environment(
        "auto_engine_avoids_io_uring_where_it_would_punt_every_io",
        "/dev/shm is not tmpfs",
        tmpfs,
    ) {
        return;
    }
    let args = |target: &str| -> Vec<String> {
        [
            "easy-run-4k100r",
            "--target",
            target,
            "--direct=false",
            "--workers",
            "1",
            "--disks",
            "1",
            "--threads",
            "1",
            "--qd",
            "4",
            "--disk-size",
            "8m",
            "--warmup",
            "0s",
            "--duration",
            "1s",
            "--no-save",
            "--cleanup",
        ]
        .map(String::from)
        .to_vec()
    };
    let tmpfs = tempfile::tempdir_in(shm).unwrap();
    let t = tmpfs.path().join("data");
    let v = json_run(
        tmpfs.path(),
        &args(t.to_str().unwrap())
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(v["run"]["engine"], "psync", "{}", v["notices"]);
    let notices = v["notices"].to_string();
    assert!(notices.contains("non-blocking reads"), "{notices}");
    assert!(v["summary"]["all"]["ios"].as_u64().unwrap() > 0);
    let disk = tempfile::tempdir_in("/var/tmp").unwrap();
    let t = disk.path().join("data");
    let v = json_run(
        disk.path(),
        &args(t.to_str().unwrap())
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(v["run"]["engine"], "io_uring", "{}", v["notices"]);
}

#[test]
fn lanes_share_io_threads_pinned_where_asked() {
    // 2 workers × 4 disks × 4 threads = 32 lanes on the 2 I/O threads asked for, pinned
    // to the first CPU this process may use; each worker keeps its own figures.
    let d = tempfile::tempdir().unwrap();
    let cpu = first_allowed_cpu();
    let v = json_run(
        d.path(),
        &[
            "easy-run-4k70r",
            "--engine",
            "null",
            "--workers",
            "2",
            "--disks",
            "4",
            "--threads",
            "4",
            "--io-threads",
            "2",
            "--cpus",
            &cpu.to_string(),
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    let g = &v["summary"]["generator"];
    assert_eq!(g["io_threads"], 2, "{g}");
    assert_eq!(v["run"]["plan"]["fleet"]["cpus"], serde_json::json!([cpu]));
    assert_eq!(v["summary"]["outstanding_io"]["configured"], 32);
    for w in v["workers"].as_array().unwrap() {
        assert!(w["all"]["ios"].as_u64().unwrap() > 0, "{w}");
    }
}

fn first_allowed_cpu() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    list.split([',', '-']).next().unwrap().parse().unwrap()
}

/// Disks are opened with O_NOATIME, which the kernel refuses (EPERM) to a user who
/// neither owns the file nor has CAP_FOWNER; the open is then retried without it. Run
/// as `nobody` on disk files root created and left writable to all.
#[test]
fn a_disk_file_owned_by_another_user_is_still_opened() {
    use std::os::unix::fs::PermissionsExt;
    if !need::need(
        "a_disk_file_owned_by_another_user_is_still_opened",
        &["root", "setpriv"],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let open_to_all = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    open_to_all(dir, 0o777);
    let args = [
        "--target",
        "data",
        "--disk-size",
        "4m",
        "--read-pct",
        "100",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--no-save",
    ];
    run_json(dir, &args);
    let disk = dir.join("data/w000-d000.iofleet");
    assert_eq!(std::fs::metadata(&disk).unwrap().uid(), 0);
    open_to_all(&dir.join("data"), 0o777);
    open_to_all(&disk, 0o666);
    // nobody may not be able to reach the build directory: run a copy from here.
    let bin = dir.join("iofleet");
    std::fs::copy(assert_cmd::cargo::cargo_bin("iofleet"), &bin).unwrap();
    for d in ["xdg-data", "xdg-cache"] {
        std::fs::create_dir(dir.join(d)).unwrap();
        open_to_all(&dir.join(d), 0o777);
    }
    let o = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .arg("run")
        .args(args)
        .args(["--json", "--quiet"])
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("xdg-data"))
        .env("XDG_CACHE_HOME", dir.join("xdg-cache"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["summary"]["all"]["ios"].as_u64().unwrap() > 0);
}
