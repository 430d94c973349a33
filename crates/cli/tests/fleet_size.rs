//! The fleet's size as the variable (`sweep --vary hosts=…`, `find-max --over hosts`):
//! agents of one `iofleet agent --agents N` process join a controller once, and each
//! step runs the first K of them, every one an open-loop client at the same rate on one
//! simulated device they all share (`sim:…,shared=NAME`, on the wall clock). That device
//! is an M/M/1 queue fed by K Poisson streams, so the most clients whose p99 holds is
//! known from queueing theory (`iofleet_engine::mmc`) and the search is checked against
//! it: at the issue's `p99<=3ms` on a host otherwise idle (a loaded one wakes threads
//! milliseconds late, and the wake-up is part of each latency), and on the same queue
//! ten times slower whatever else runs. Bad fleet sizes are refused before any agent is
//! waited for.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use iofleet_engine::mmc;
use serde_json::Value;

/// A bound for a loaded machine, not a timing claim.
const PATIENCE: Duration = Duration::from_secs(120);

/// Most the host may be busy without the test for the model's answer to be checked: a
/// busier machine wakes the clients' threads late, and each wake-up is part of an I/O's
/// latency (the rule each step was judged by is checked whatever the load).
const QUIET_HOST_PCT: f64 = 10.0;

/// The real-time tests measure latency on the wall clock: one test at a time, so that
/// another does not load the same cores meanwhile.
static WALL_CLOCK: Mutex<()> = Mutex::new(());

/// One server with exponential service fed by K open-loop clients, each at `rate` IOPS
/// (Poisson arrivals: the profile's default): an M/M/1 queue of λ = K·rate.
struct Model {
    service_us: u32,
    rate: u32,
    /// The objective: p99 at most this.
    p99_ms: u32,
    /// Each step's measured time.
    duration: &'static str,
}

impl Model {
    /// The most clients whose p99 meets the objective, by queueing theory.
    fn analytic(&self) -> f64 {
        let mu = 1e6 / self.service_us as f64;
        (mmc::max_rate(0.99, self.p99_ms as f64 / 1e3, 1, mu) / self.rate as f64).floor()
    }
}

/// The objective: `p99<=3ms` on a device of 250 µs (μ = 4000/s), 750 IOPS a
/// client. Steep on purpose: 3 clients are well inside (2.63 ms) and 4 well outside
/// (4.61 ms), so a wake-up late by up to a millisecond moves the answer one step at most.
const AT_3MS: Model = Model {
    service_us: 250,
    rate: 750,
    p99_ms: 3,
    duration: "2s",
};

/// The same queue ten times slower (2.5 ms, 75 IOPS a client, `p99<=30ms`): the few
/// milliseconds by which a loaded machine wakes a thread late are small beside it, so
/// the answer is checked against the model whatever else runs.
const AT_30MS: Model = Model {
    service_us: 2_500,
    rate: 75,
    p99_ms: 30,
    duration: "5s",
};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iofleet"));
    c.env("XDG_DATA_HOME", scratch_data_home())
        .env("PATH", guarded_path());
    c
}

/// The engine of every client: one shared device named `name`, of `service_us`.
fn device(name: &str, service_us: u32) -> String {
    format!("sim:servers=1,service={service_us}us,dist=exp,clock=real,shared={name}")
}

/// A shared device's name, new to this test; its queue's file in /dev/shm removed when
/// the name is dropped.
struct Device(String);

impl Device {
    fn new(tag: &str) -> Device {
        Device(format!("{tag}{}", rand::random::<u32>()))
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        let prefix = format!("iofleet-sim-{}-", self.0);
        for e in std::fs::read_dir("/dev/shm")
            .into_iter()
            .flatten()
            .flatten()
        {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Run `args` as the controller of a fleet of `hosts` agents that join (its join file
/// in `dir`), and one `iofleet agent --agents HOSTS` process that joins it: the
/// command's exit code, stdout and stderr, once the agents have ended with it.
fn with_agents(dir: &Path, args: &[&str], hosts: u32) -> (Option<i32>, String, String) {
    with_agent_processes(dir, args, hosts, 1)
}

/// [`with_agents`] with the agents in `processes` processes of `hosts / processes` each.
fn with_agent_processes(
    dir: &Path,
    args: &[&str],
    hosts: u32,
    processes: u32,
) -> (Option<i32>, String, String) {
    let join_file = dir.join(format!("j{}.join", rand::random::<u32>()));
    let (out, err) = (dir.join("c.out"), dir.join("c.err"));
    let n = hosts.to_string();
    let mut controller = bin()
        .current_dir(dir)
        .args(args)
        .args(["--listen", "127.0.0.1:0", "--expect", &n])
        .arg("--join-file")
        .arg(&join_file)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !join_file.exists() {
        if let Some(s) = controller.try_wait().unwrap() {
            panic!("exited {s} before waiting for agents: {}", read(&err));
        }
        assert!(t0.elapsed() < PATIENCE, "no join file: {}", read(&err));
        std::thread::sleep(Duration::from_millis(20));
    }
    let each = (hosts / processes).to_string();
    let mut agents: Vec<Child> = (0..processes)
        .map(|_| {
            bin()
                .arg("agent")
                .arg("--join-file")
                .arg(&join_file)
                .args(["--agents", &each])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let status = controller.wait().unwrap();
    // The agents end with the command that they joined.
    let t0 = Instant::now();
    for a in &mut agents {
        while a.try_wait().unwrap().is_none() {
            if t0.elapsed() > PATIENCE {
                let _ = a.kill();
                panic!("the agents did not end with the command");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    (status.code(), read(&out), read(&err))
}

fn read(p: &PathBuf) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// The workload flags: one worker per host (`hosts` workers over as many hosts), one disk, one
/// thread, each an open-loop client at `rate` IOPS with room in its queue.
fn clients<'a>(hosts: &'a str, rate: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "easy-run-4k100r",
        "--workers",
        hosts,
        "--disks",
        "1",
        "--threads",
        "1",
        "--qd",
        "64",
        "--rate",
        rate,
        "--warmup",
        "500ms",
        "--interval",
        "500ms",
        "--quiet",
    ];
    a.extend_from_slice(extra);
    a
}

#[test]
fn the_model_gives_three_clients_at_the_objective() {
    // What the searches below are checked against: K clients offer λ = 750·K to one
    // server of μ = 4000/s, whose p99 is ln(100)/(μ − λ): 2.63 ms at 3 clients, 4.61 at
    // 4; ten times slower, ten times the latency.
    let p99 = |k: u32| mmc::response_quantile(0.99, (750 * k) as f64, 1, 4_000.0);
    assert!((p99(3) - 100f64.ln() / (4_000.0 - 2_250.0)).abs() < 1e-9);
    assert!(p99(3) <= 3e-3 && p99(4) > 3e-3);
    assert_eq!(AT_3MS.analytic(), 3.0);
    assert_eq!(AT_30MS.analytic(), 3.0);
}

/// `find-max --over hosts` of `m` on 8 joined agents of one process: its exit code, its
/// JSON (checked for the rules every step was judged by) and stderr.
fn search_clients(m: &Model) -> (Option<i32>, Value, String) {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let name = Device::new("fm");
    let engine = device(&name.0, m.service_us);
    let data = d.path().join("data");
    let rate = m.rate.to_string();
    let slo = format!("p99<={}ms", m.p99_ms);
    let mut args = vec!["find-max"];
    args.extend(clients("8", &rate, &[]));
    args.extend([
        "--engine",
        &engine,
        "--duration",
        m.duration,
        "--min-step",
        "1s",
        "--over",
        "hosts",
        "--slo",
        &slo,
        "--json",
        "--db",
        db.to_str().unwrap(),
        "--target",
        data.to_str().unwrap(),
    ]);
    let (code, out, err) = with_agents(d.path(), &args, 8);
    // 1: not even one host met the objective (a loaded machine wakes its I/O threads
    // late, and the wake-up counts in each I/O's latency).
    assert!(matches!(code, Some(0 | 1)), "{err}");
    // Joined once, for the whole search.
    assert_eq!(err.matches("agent(s) joined from").count(), 1, "{err}");
    let mut v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(
        (v["over"].as_str(), v["hosts"].as_u64()),
        (Some("hosts"), Some(8))
    );
    let points = v["points"].as_array().unwrap();
    let found = v["max_hosts"].as_f64();
    for p in points {
        let k = p["hosts"].as_f64().unwrap();
        // Each step ran its hosts' load: K clients at the rate (sustained up to 5
        // clients, 3,750 of 4,000; the search does not go past the first failure).
        let iops = p["iops"].as_f64().unwrap();
        let offered = k * m.rate as f64;
        assert!(
            (iops - offered).abs() / offered < 0.15,
            "{k} hosts: {iops} IOPS\n{v}"
        );
        // Each step was judged by its own p99, and none with more hosts than the
        // answer passed.
        let p99 = p["p99_us"].as_f64().unwrap();
        assert_eq!(p["values"][0].as_f64(), Some(p99), "{p}");
        assert_eq!(p["passed"] == true, p99 <= m.p99_ms as f64 * 1e3, "{p}");
        if found.is_none_or(|f| k > f) {
            assert_eq!(p["passed"], false, "{p}");
        }
    }
    // Every step is a stored run labelled with its hosts.
    let o = run_in(
        d.path(),
        &["results", "list", "--json", "--db", db.to_str().unwrap()],
    );
    let runs: Value = serde_json::from_slice(&o.stdout).unwrap();
    let labelled = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["labels"]["hosts"].is_string())
        .count();
    assert_eq!(labelled, points.len(), "{runs}");
    // What each step's own self-check saw of the host: another load's CPUs, and its
    // warnings (I/O threads kept from a CPU, open-loop I/Os issued late).
    let mut seen = Vec::new();
    for p in points {
        let id = p["run_id"].as_str().unwrap();
        let r = exported(d.path(), &db, id);
        let g = &r["summary"]["generator"];
        let other = g["other_load_cpus"].as_f64().unwrap_or(0.0);
        if other >= iofleet_stats::generator::OTHER_LOAD_WARN_CPUS {
            seen.push(format!("step {id}: another load used {other:.2} CPUs"));
        }
        for w in g["warnings"].as_array().into_iter().flatten() {
            seen.push(format!("step {id}: {w}"));
        }
    }
    v["host_seen"] = serde_json::json!(seen);
    (code, v, err)
}

/// The answer of a search of `m` is the model's within one step, and the latency grew
/// with the clients.
fn matches_the_model(m: &Model, code: Option<i32>, v: &Value, err: &str) {
    assert_eq!(code, Some(0), "{err}");
    let found = v["max_hosts"].as_f64().unwrap_or_else(|| panic!("{v}"));
    let analytic = m.analytic();
    assert!(
        (found - analytic).abs() <= 1.0,
        "find-max: {found} clients; the M/M/1 model: {analytic}\n{v}"
    );
    // At the most hosts measured, latency well above 1 host's: an M/M/1 sojourn time is
    // exponential with rate μ − λ, so its mean and its p99 grow alike (by the model 3.2
    // times). The mean is compared: one run's p99 at 1 host swings with this machine's
    // load (2.8 ms once, beside the suite's other tests on two cores), its mean less.
    let points = v["points"].as_array().unwrap();
    let mean_at = |k: f64| {
        points
            .iter()
            .find(|p| p["hosts"].as_f64() == Some(k))
            .and_then(|p| p["mean_us"].as_f64())
    };
    let top = points
        .iter()
        .filter_map(|p| p["hosts"].as_f64())
        .fold(0.0, f64::max);
    let (one, most) = (mean_at(1.0).unwrap(), mean_at(top).unwrap());
    assert!(
        most > 2.0 * one,
        "mean {one} µs at 1 host, {most} at {top}\n{v}"
    );
}

#[test]
fn find_max_over_hosts_finds_the_most_clients_the_shared_device_carries() {
    let _one = WALL_CLOCK.lock().unwrap_or_else(|p| p.into_inner());
    let before = need::host_busy_pct(Duration::from_secs(1));
    let (code, v, err) = search_clients(&AT_3MS);
    let after = need::host_busy_pct(Duration::from_secs(1));
    // Quiet before and after, and during: no step's self-check saw another load or
    // flagged the generator (CI once saw a step's p99 at 9.6 ms, 2 clients, with the
    // host idle on both sides of the search).
    let during = v["host_seen"].as_array().map_or(0, Vec::len);
    if before.max(after) > QUIET_HOST_PCT || during > 0 {
        eprintln!(
            "the host was {before:.0}% busy before the search and {after:.0}% after; during it: {}",
            v["host_seen"]
        );
        need::unavailable(
            "find_max_over_hosts_finds_the_most_clients_the_shared_device_carries",
            "a host otherwise idle",
        );
        return;
    }
    // On a quiet host the wake-ups are small beside 3 ms.
    matches_the_model(&AT_3MS, code, &v, &err);
}

#[test]
fn find_max_over_hosts_matches_the_model_ten_times_slower_whatever_else_runs() {
    let _one = WALL_CLOCK.lock().unwrap_or_else(|p| p.into_inner());
    let (code, v, err) = search_clients(&AT_30MS);
    matches_the_model(&AT_30MS, code, &v, &err);
}

#[test]
fn a_sweep_over_hosts_runs_each_step_on_one_joined_fleet() {
    let _one = WALL_CLOCK.lock().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    let name = Device::new("sw");
    let engine = device(&name.0, 250);
    let data = d.path().join("data");
    let mut args = vec!["sweep"];
    args.extend(clients("4", "200", &[]));
    args.extend([
        "--engine",
        &engine,
        "--duration",
        "1s",
        "--vary",
        "hosts=1,2,4",
        "--slo",
        "p99<=3ms",
        "--json",
        "--no-save",
        "--target",
        data.to_str().unwrap(),
    ]);
    let (code, out, err) = with_agents(d.path(), &args, 4);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches("agent(s) joined from").count(), 1, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let points = v["points"].as_array().unwrap();
    let hosts: Vec<&str> = points
        .iter()
        .map(|p| p["at"]["hosts"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["1", "2", "4"], "{v}");
    // Each step's load is its hosts' (200 IOPS each).
    for p in points {
        let k: f64 = p["value"].as_str().unwrap().parse().unwrap();
        let iops = p["iops"].as_f64().unwrap();
        assert!((iops - 200.0 * k).abs() / (200.0 * k) < 0.15, "{p}");
    }
    assert!(v["knee_hosts"].is_u64(), "{v}");
    // Each step was held to the objective by its own p99, and the max clients at SLO is
    // the most hosts up to which every step passed. (By the model every step passes,
    // 1.44 ms at 800 IOPS on a device of 4,000, but a loaded machine's late wake-ups
    // count in the latency, so the rule is what is checked here.)
    let passed: Vec<bool> = points.iter().map(|p| p["passed"] == true).collect();
    for p in points {
        assert_eq!(
            p["passed"] == true,
            p["p99_us"].as_f64().unwrap() <= 3_000.0,
            "{p}"
        );
    }
    let most = ["1", "2", "4"]
        .iter()
        .zip(&passed)
        .take_while(|(_, ok)| **ok)
        .last()
        .map(|(k, _)| k.parse::<u64>().unwrap());
    assert_eq!(v["max_hosts_at_slo"].as_u64(), most, "{v}");
}

#[test]
fn bad_fleet_sizes_are_refused_naming_the_flag() {
    let _one = WALL_CLOCK.lock().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    let engine = device("refused", 250);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "sweep",
                "--vary",
                "hosts=0,1",
                "--listen",
                "127.0.0.1:0",
                "--expect",
                "2",
            ],
            "--vary hosts=0: a fleet size is at least 1 host",
        ),
        (
            vec![
                "sweep",
                "--vary",
                "hosts=1,3",
                "--listen",
                "127.0.0.1:0",
                "--expect",
                "2",
            ],
            "--vary hosts=3: the fleet has 2 host(s) that run workers, so at most 2",
        ),
        (
            vec!["sweep", "--vary", "hosts=1,2"],
            "--vary hosts: a fleet-size step needs a fleet of hosts",
        ),
        (
            vec![
                "find-max",
                "--over",
                "hosts",
                "--slo",
                "p99<=3ms",
                "--min-step",
                "1s",
            ],
            "--over hosts: a fleet-size step needs a fleet of hosts",
        ),
        (
            vec![
                "find-max",
                "--over",
                "hosts",
                "--slo",
                "p99<=3ms",
                "--min-step",
                "1s",
                "--listen",
                "127.0.0.1:0",
                "--expect",
                "3",
            ],
            "--over hosts: each host carries its share",
        ),
        (
            vec![
                "sweep",
                "--vary",
                "pods=1,2",
                "--listen",
                "127.0.0.1:0",
                "--expect",
                "2",
            ],
            "--vary pods: a fleet's pods (and a VM fleet's VMs) are its hosts",
        ),
        (
            vec!["sweep", "--vary", "qd=1,2", "--slo", "p99<=3ms"],
            "--slo: a sweep holds its steps to objectives with --vary hosts alone",
        ),
        (
            vec!["sweep", "--vary", "hosts=1,2", "--slo", "cpu<=40%"],
            "a sweep holds its steps to latency objectives",
        ),
    ];
    for (args, says) in cases {
        let mut a = args.clone();
        a.extend([
            "--workers",
            "2",
            "--duration",
            "1s",
            "--engine",
            &engine,
            "--no-save",
        ]);
        let o = run_in(d.path(), &a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    // A shared device on simulated time cannot be: one queue, many engines' clocks.
    let o = run_in(
        d.path(),
        &[
            "run",
            "--engine",
            "sim:shared=x",
            "--duration",
            "1s",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--engine sim:") && stderr(&o).contains("runs on the wall clock only"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_inventory_grows_by_its_first_hosts_in_order() {
    // Three local hosts of an inventory, two workers each when all run, at 100 IOPS per
    // worker in simulated time: every step completes exactly its hosts' share.
    let _one = WALL_CLOCK.lock().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("local.toml");
    std::fs::write(
        &inv,
        (1..=3)
            .map(|i| format!("[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\n"))
            .collect::<String>(),
    )
    .unwrap();
    // Evenly spaced arrivals: a rate of R issues exactly R I/Os a second of simulated time.
    let profile = d.path().join("even.toml");
    std::fs::write(
        &profile,
        "name = \"even\"\n[fleet]\nworkers = 6\ndisks_per_worker = 1\ndisk_size = \"16m\"\n\
         [timing]\nwarmup = \"0s\"\nduration = \"2s\"\ninterval = \"500ms\"\narrival = \"uniform\"\n\
         [[stream]]\nbs = \"4k\"\nread_pct = 100\nrandom_pct = 100\n",
    )
    .unwrap();
    let o = run_in(
        d.path(),
        &[
            "sweep",
            profile.to_str().unwrap(),
            "--engine",
            "null-sim:fixed:50us",
            "--rate",
            "100",
            "--vary",
            "hosts=1,3,2",
            "--hosts",
            inv.to_str().unwrap(),
            "--no-save",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let iops: Vec<f64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["iops"].as_f64().unwrap())
        .collect();
    assert_eq!(iops, [200.0, 600.0, 400.0], "{v}");
    // Two workers over three hosts leave one without a share: refused when planned.
    let o = run_in(
        d.path(),
        &[
            "sweep",
            "--engine",
            "null-sim:fixed:50us",
            "--workers",
            "2",
            "--duration",
            "1s",
            "--vary",
            "hosts=1,2",
            "--hosts",
            inv.to_str().unwrap(),
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("leave host l3 without any: give --workers as a multiple of 3"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn agents_of_separate_processes_share_one_device() {
    let _one = WALL_CLOCK.lock().unwrap_or_else(|p| p.into_inner());
    // Four clients at 85 IOPS, two agents in each of two processes, on one server of
    // 2.5 ms: λ = 340 of μ = 400, p99 = ln(100)/60 s = 77 ms by the model. Had each
    // process a device of its own (λ = 170 each), 20 ms.
    let d = tempfile::tempdir().unwrap();
    let name = Device::new("xp");
    let engine = device(&name.0, 2_500);
    let data = d.path().join("data");
    let mut args = vec!["run"];
    args.extend(clients("4", "85", &[]));
    args.extend([
        "--engine",
        &engine,
        "--duration",
        "4s",
        "--json",
        "--no-save",
        "--target",
        data.to_str().unwrap(),
    ]);
    let (code, out, err) = with_agent_processes(d.path(), &args, 4, 2);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let p99 = v["summary"]["all"]["latency_us"]["p99"].as_f64().unwrap();
    // Above their geometric mean, 39 ms: one queue, not two.
    assert!(p99 > 39_000.0, "p99 {p99} µs\n{v}");
}

#[test]
fn a_fleet_size_sweep_killed_in_its_second_step_resumes_from_it() {
    let _one = WALL_CLOCK.lock().unwrap_or_else(|p| p.into_inner());
    // An inventory of three local hosts, a step of each size, on the wall clock (so
    // that the sweep can be killed during a step).
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("local.toml");
    std::fs::write(
        &inv,
        (1..=3)
            .map(|i| format!("[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\n"))
            .collect::<String>(),
    )
    .unwrap();
    let db = d.path().join("r.db");
    let (inv_s, db_s) = (inv.to_str().unwrap(), db.to_str().unwrap());
    let sweep = |extra: &[&'static str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "sweep",
            "--engine",
            "null",
            "--workers",
            "3",
            "--rate",
            "100",
            "--warmup",
            "0s",
            "--duration",
            "2s",
            "--prepare",
            "none",
            "--disk-size",
            "16m",
            "--vary",
            "hosts=1,2,3",
            "--hosts",
            inv_s,
            "--db",
            db_s,
        ]
        .map(String::from)
        .to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let mut child = bin()
        .current_dir(d.path())
        .args(sweep(&["--quiet"]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its second step (hosts=2) is recorded as begun.
    let t0 = Instant::now();
    loop {
        let o = run_in(
            d.path(),
            &[
                "results", "list", "--json", "--db", db_s, "--label", "hosts=2",
            ],
        );
        let begun = o.status.success()
            && serde_json::from_slice::<Value>(&o.stdout)
                .is_ok_and(|v| v.as_array().is_some_and(|a| !a.is_empty()));
        if begun {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended first");
        assert!(t0.elapsed() < PATIENCE, "step 2 never began");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let args = sweep(&["--resume", "--json"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 finished step(s) taken from the store"),
        "{}",
        stderr(&o)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let hosts: Vec<&str> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["at"]["hosts"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["1", "2", "3"], "{v}");
}
