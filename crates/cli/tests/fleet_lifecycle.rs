//! One fleet per command, over real OpenSSH (three sshd instances on 127.0.0.2–4): a
//! sweep's steps, a steady state's rounds and a fio job file's stonewall phases run on
//! agents started once per host for the whole command (counted in each sshd's log of
//! accepted logins), and each step's result is what the same step run alone gives. The
//! engine is the null engine in simulated time at a fixed rate, so the counts are exact
//! whatever the machine's load: `workers × rate × duration`, worked out here. Needs root
//! (sshd); skips without it unless CI is set (see support/sshd.rs).

mod common;
#[path = "support/sshd.rs"]
mod sshd;

use std::path::Path;

use common::*;
use serde_json::Value;
use sshd::Cluster;

/// Three workers (one per host), one disk each, 1 s measured in 500 ms intervals, the
/// null engine in simulated time: every count below is exact.
const SHAPE: [&str; 12] = [
    "--engine",
    "null-sim:fixed:50us",
    "--workers",
    "3",
    "--disks",
    "1",
    "--duration",
    "1s",
    "--warmup",
    "0s",
    "--interval",
    "500ms",
];

/// A profile whose rated I/Os are evenly spaced (`timing.arrival = "uniform"`), so that a
/// rate of R per worker issues exactly R I/Os a second of simulated time; written to
/// `dir`: its path.
fn even_profile(dir: &Path) -> String {
    let p = dir.join("even.toml");
    std::fs::write(
        &p,
        "name = \"even\"\n[fleet]\nworkers = 3\ndisks_per_worker = 1\ndisk_size = \"16m\"\n\
         [timing]\nwarmup = \"0s\"\nduration = \"1s\"\ninterval = \"500ms\"\narrival = \"uniform\"\n\
         [[stream]]\nbs = \"4k\"\nread_pct = 100\nrandom_pct = 100\n",
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

/// Per host, the logins its sshd accepted since `before` (`Cluster::logins`).
fn logins_since(c: &Cluster, before: &[usize]) -> Vec<usize> {
    c.logins().iter().zip(before).map(|(a, b)| a - b).collect()
}

/// `iofleet ARGS` against the cluster's inventory, exit 0 expected: its stdout as JSON,
/// and the logins each host accepted meanwhile.
fn command(c: &Cluster, dir: &Path, inv: &str, args: &[&str]) -> (Value, Vec<usize>) {
    let before = c.logins();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--hosts", inv, "--quiet"]);
    all.extend(SHAPE);
    let o = run_in(dir, &all);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    let logins = logins_since(c, &before);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    (v, logins)
}

#[test]
fn a_sweep_logs_in_once_per_host_and_each_step_is_the_step_run_alone() {
    // The tests share the hosts' agent copies (~/.cache/iofleet): one at a time.
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let inv = c.inventory(d.path(), "");
    let even = even_profile(d.path());
    let rates = [100u32, 200, 300];
    let (curve, logins) = command(
        &c,
        d.path(),
        &inv,
        &["sweep", &even, "--vary", "rate=100,200,300", "--json"],
    );
    // One session per host for the three steps (three per host before: one a step).
    assert_eq!(logins, vec![1, 1, 1], "{curve}");
    let points = curve["points"].as_array().unwrap();
    assert_eq!(points.len(), 3, "{curve}");
    for (p, rate) in points.iter().zip(rates) {
        // 3 workers × the rate per worker, over 1 s of simulated time.
        assert_eq!(p["iops"], f64::from(3 * rate), "{p}");
        assert_eq!(p["interrupted"], false);
    }
    // The middle step alone, in a command of its own: the same figures.
    let (alone, logins) = command(
        &c,
        d.path(),
        &inv,
        &["run", &even, "--rate", "200", "--json", "--no-save"],
    );
    assert_eq!(logins, vec![1, 1, 1]);
    let all = &alone["summary"]["all"];
    assert_eq!(all["ios"], 3 * 200, "{all}");
    assert_eq!(all["iops"], points[1]["iops"], "{all}");
    assert_eq!(all["latency_us"]["p99"], points[1]["p99_us"], "{all}");
}

#[test]
fn steady_state_rounds_and_fio_phases_log_in_once_per_host() {
    // The tests share the hosts' agent copies (~/.cache/iofleet): one at a time.
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let inv = c.inventory(d.path(), "");
    let even = even_profile(d.path());

    // Rounds until steady: at a fixed rate every round is the same, so the rule holds
    // at the fifth, the first with a full window of five.
    let (r, logins) = command(
        &c,
        d.path(),
        &inv,
        &["run", &even, "--rate", "100", "--steady-state", "--json"],
    );
    assert_eq!(logins, vec![1, 1, 1], "{}", r["steady_state"]);
    let block = &r["steady_state"];
    assert_eq!(block["held"], true, "{block}");
    assert_eq!(block["round"], 5, "{block}");
    let rounds: Vec<f64> = block["round_iops"]
        .as_array()
        .unwrap_or_else(|| panic!("{block}"))
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(rounds, vec![300.0; 5], "{block}");
    assert_eq!(r["summary"]["all"]["ios"], 300, "{}", r["summary"]["all"]);

    // Two stonewall phases of a fio job file: one session per host for both. Each
    // phase is a job of 3 (numjobs) at `rate_iops` each, evenly spaced as fio spaces
    // them, so each phase's count is exact too.
    let job = d.path().join("phases.fio");
    std::fs::write(
        &job,
        "[global]\nruntime=1\nbs=4k\nsize=16m\nnumjobs=3\nrate_iops=50\n[w]\nrw=randwrite\n[r]\nstonewall\nrw=randread\n",
    )
    .unwrap();
    let before = c.logins();
    let mut all = vec!["run", job.to_str().unwrap(), "--hosts", &inv, "--quiet"];
    // The shape without --workers and --disks: the job file's numjobs says them.
    all.extend(&SHAPE[..2]);
    all.extend(&SHAPE[6..]);
    all.extend(["--output-format", "fio-json"]);
    let o = run_in(d.path(), &all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(logins_since(&c, &before), vec![1, 1, 1], "{}", stderr(&o));
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    // fio's client layout (one entry per host and job, and "All clients" per group):
    // the fleet's figures of each phase.
    let stats = v["client_stats"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"));
    let ios: Vec<(u64, u64, u64)> = stats
        .iter()
        .filter(|j| j["jobname"] == "All clients")
        .map(|j| {
            (
                j["groupid"].as_u64().unwrap(),
                j["read"]["total_ios"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
            )
        })
        .collect();
    // 3 workers × 50 IOPS × 1 s in each phase: writes, then reads.
    assert_eq!(ios, vec![(0, 0, 150), (1, 150, 0)], "{v}");
}

/// A named pipe at `path` that gives `text` to its first reader and, to any later one, a
/// line no reader accepts (so a second read fails the command, naming the file, instead
/// of waiting forever). `served()` says how many readers opened it.
struct Pipe {
    path: std::path::PathBuf,
    opened: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Pipe {
    fn new(path: std::path::PathBuf, text: &str) -> Pipe {
        use std::sync::atomic::Ordering::SeqCst;
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {}", path.display());
        let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (p, n, d, text) = (path.clone(), opened.clone(), done.clone(), text.to_string());
        let writer = std::thread::spawn(move || loop {
            // Blocks until a reader opens the pipe.
            let Ok(mut w) = std::fs::OpenOptions::new().write(true).open(&p) else {
                return;
            };
            if d.load(SeqCst) {
                return;
            }
            let body = match n.fetch_add(1, SeqCst) {
                0 => text.clone(),
                k => format!("@@ read a second time (read {}) @@\n", k + 1),
            };
            let _ = std::io::Write::write_all(&mut w, body.as_bytes());
            drop(w);
            // Wait for that reader to close before serving the next: while it reads, a
            // writer's open succeeds at once and its bytes would join the same read.
            while !d.load(SeqCst) && reader_present(&p) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        Pipe {
            path,
            opened,
            done,
            writer: Some(writer),
        }
    }

    fn arg(&self) -> &str {
        self.path.to_str().unwrap()
    }

    fn served(&self) -> usize {
        self.opened.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Whether a reader holds the pipe open: a non-blocking open for writing fails
/// (ENXIO) when none does.
fn reader_present(p: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(p)
        .is_ok()
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // Release the writer waiting for a reader.
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::fs::File::open(&self.path);
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// Each input file is read once per command: the profile, a fio job file and an
/// inventory given as named pipes, which can be read only once, serve a sweep of three
/// steps, two stonewall phases, and a fleet's steps (agents over the local transport).
#[test]
fn each_input_file_is_read_once_per_command() {
    let d = tempfile::tempdir().unwrap();
    let text = tempfile::tempdir().unwrap();
    let profile = Pipe::new(
        d.path().join("even.toml"),
        &std::fs::read_to_string(even_profile(text.path())).unwrap(),
    );
    let hosts: String = (0..3)
        .map(|i| {
            format!(
                "[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\n"
            )
        })
        .collect();
    let inventory = Pipe::new(d.path().join("hosts.toml"), &hosts);
    let mut args = vec![
        "sweep",
        profile.arg(),
        "--vary",
        "rate=100,200,300",
        "--hosts",
        inventory.arg(),
        "--json",
        "--quiet",
    ];
    args.extend(SHAPE);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let curve: Value = serde_json::from_slice(&o.stdout).unwrap();
    let iops: Vec<f64> = curve["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["iops"].as_f64().unwrap())
        .collect();
    assert_eq!(iops, vec![300.0, 600.0, 900.0], "{curve}");
    assert_eq!((profile.served(), inventory.served()), (1, 1));

    // A job file of two phases, run here: one read for the phases, the target (its
    // directory), the engine and the notices.
    let job = Pipe::new(
        d.path().join("phases.fio"),
        "[global]\nruntime=1\nbs=4k\nsize=16m\nrate_iops=50\ndirectory=fio-data\n[w]\nrw=randwrite\n[r]\nstonewall\nrw=randread\n",
    );
    let mut args = vec!["run", job.arg(), "--quiet"];
    args.extend(&SHAPE[..2]);
    args.extend(&SHAPE[6..]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(job.served(), 1);
}
