//! A fleet across hosts, through real OpenSSH: three sshd instances on 127.0.0.2–4, the
//! controller copying its own binary to them, synchronized start, exact merging, a host
//! lost mid-run, a refused protocol version, and no agent left behind after Ctrl-C.
//! Needs root (sshd); skips without it unless CI is set (see support/sshd.rs).
//!
//! The tests share the remote binary cache (~/.cache/iofleet on this one machine), so
//! they run one at a time.

mod common;
#[path = "support/sshd.rs"]
mod sshd;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use sshd::Cluster;

fn inventory(c: &Cluster, dir: &Path, extra: &str) -> String {
    c.inventory(dir, extra)
}

fn fleet_run(dir: &Path, inv: &str, args: &[&str]) -> Output {
    let mut all = vec!["run", "vsan-7030", "--hosts", inv, "--no-save", "--quiet"];
    all.extend_from_slice(args);
    run_in(dir, &all)
}

/// Agents (the copied binary, run as `… agent`) still alive on this machine.
fn agents() -> Vec<u32> {
    sshd::pids_matching(" agent")
        .into_iter()
        .filter(|&p| {
            let c = sshd::cmdline(p);
            c.contains(".cache/iofleet/iofleet-") && !c.starts_with("ssh")
        })
        .collect()
}

/// Start a 3-worker null-engine run of `duration` across the inventory's hosts (JSON on
/// stdout) and return once all three agents are running.
fn spawn_fleet(dir: &Path, inv: &str, duration: &str, extra: &[&str]) -> std::process::Child {
    // Agents of an earlier run may still be on their way out: count only new ones.
    let before = agents();
    let new_agents = || agents().into_iter().filter(|p| !before.contains(p)).count();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .current_dir(dir)
        .args([
            "run",
            "vsan-7030",
            "--hosts",
            inv,
            "--no-save",
            "--quiet",
            "--json",
        ])
        .args([
            "--engine",
            "null",
            "--workers",
            "3",
            "--disks",
            "1",
            "--warmup",
            "0s",
        ])
        .args(["--interval", "500ms", "--duration", duration])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Sessions start the login shell first and each host receives the agent binary (a
    // debug build is over 100 MB); on a loaded machine that can take a while.
    let t0 = Instant::now();
    let mut running = new_agents();
    while running < 3 && t0.elapsed() < Duration::from_secs(120) {
        sshd::clear_stale_shell_lock();
        std::thread::sleep(Duration::from_millis(100));
        running = new_agents();
    }
    if running < 3 {
        // Do not leave a controller running into the next test.
        let mut child = child;
        let _ = child.kill();
        let o = child.wait_with_output().unwrap();
        panic!(
            "three agents did not start in {:?} ({running} running): {}",
            t0.elapsed(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    child
}

/// What fleet runs put in a host's `~/.cache/iofleet`: agent copies (`iofleet-HASH`) and
/// uploads in progress (`.upload.PID`); sorted. Other entries (the verify journals of
/// the user's own runs) are not the agents'.
fn agent_files(cache: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(cache)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p: &std::path::PathBuf| {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        name.starts_with("iofleet-") || name.starts_with(".upload.")
    });
    v.sort();
    v
}

/// `workers` null-engine workers for a second, no warm-up.
fn null_second(workers: &str) -> [&str; 8] {
    [
        "--engine",
        "null",
        "--workers",
        workers,
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ]
}

/// Set `path`'s modification time `secs` seconds in the past.
fn age_by(path: &Path, secs: u64) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(secs))
        .unwrap()
}

fn exact_quantile(sorted: &[u64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

#[test]
fn three_hosts_sum_exactly_and_merge_percentiles_from_histograms() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path(), "");
    // Two known latency sequences (ns), assigned to workers in turn; 6 workers, 2 per
    // host, 1 disk × 1 thread × qd 1 each: every worker's recorded latencies are known.
    let a: Vec<u64> = (0..97).map(|i| 50_000 + i * 1_000).collect();
    let b: Vec<u64> = (0..89)
        .map(|i| {
            if i % 20 == 0 {
                3_000_000
            } else {
                120_000 + i * 100
            }
        })
        .collect();
    let join = |v: &[u64]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let spec = format!("samples:{};samples:{}", join(&a), join(&b));
    let o = fleet_run(
        tmp.path(),
        &inv,
        &[
            "--engine",
            "null",
            "--sim-latency",
            &spec,
            "--workers",
            "6",
            "--disks",
            "1",
            "--threads",
            "1",
            "--qd",
            "1",
            "--duration",
            "2s",
            "--warmup",
            "0s",
            "--interval",
            "500ms",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let hosts = v["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    let names: Vec<&str> = hosts.iter().map(|h| h["host"].as_str().unwrap()).collect();
    assert_eq!(names, ["h1", "h2", "h3"]);
    let total = v["summary"]["all"]["ios"].as_u64().unwrap();
    let by_host: u64 = hosts
        .iter()
        .map(|h| h["all"]["ios"].as_u64().unwrap())
        .sum();
    assert_eq!(by_host, total, "total equals the sum of the hosts");
    for h in hosts {
        assert_eq!(h["workers"], 2);
        assert!(h["lost_at_s"].is_null());
    }
    assert!(v["run"]["start_skew_ms"].as_f64().unwrap() >= 0.0);
    assert_eq!(v["run"]["engine"], "null-sim");

    // Independent computation from the raw samples: worker w uses list w % 2; each
    // I/O completes at the running sum of its latencies; the measured window is 2 s.
    let end = 2_000_000_000u64;
    let mut union = Vec::new();
    for w in 0..6 {
        let list = if w % 2 == 0 { &a } else { &b };
        let mut t = 0u64;
        for k in 0.. {
            t += list[k % list.len()];
            if t >= end {
                break;
            }
            union.push(list[k % list.len()]);
        }
    }
    union.sort_unstable();
    assert_eq!(total, union.len() as u64);
    let lat = &v["summary"]["all"]["latency_us"];
    for (key, q) in [("p50", 0.5), ("p99", 0.99), ("p99_9", 0.999)] {
        let exact = exact_quantile(&union, q) / 1000.0;
        let got = lat[key].as_f64().unwrap();
        assert!(
            (got - exact).abs() <= exact * 0.001 + 0.001,
            "{key}: {got} vs exact {exact}"
        );
    }

    // Stored in the results database, the run keeps each worker's host, and the result
    // recomputed from the stored histograms agrees with the live one.
    let db = tmp.path().join("results.db");
    let db = db.to_str().unwrap();
    let stored_run = run_in(
        tmp.path(),
        &[
            "run",
            "vsan-7030",
            "--hosts",
            &inv,
            "--db",
            db,
            "--quiet",
            "--json",
            "--engine",
            "null",
            "--sim-latency",
            &spec,
            "--workers",
            "6",
            "--disks",
            "1",
            "--threads",
            "1",
            "--qd",
            "1",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--interval",
            "500ms",
        ],
    );
    assert_eq!(stored_run.status.code(), Some(0), "{}", stderr(&stored_run));
    let live: Value = serde_json::from_slice(&stored_run.stdout).unwrap();
    let export = run_in(
        tmp.path(),
        &[
            "results", "export", "latest", "--format", "json", "--db", db,
        ],
    );
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    let again: Value = serde_json::from_slice(&export.stdout).unwrap();
    let hosts_of = |v: &Value| -> Vec<String> {
        v["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["host"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(hosts_of(&again), ["h1", "h1", "h2", "h2", "h3", "h3"]);
    assert_eq!(hosts_of(&again), hosts_of(&live));
    assert_eq!(
        again["summary"]["all"]["ios"],
        live["summary"]["all"]["ios"]
    );
    assert_eq!(
        again["summary"]["all"]["latency_us"]["p99"],
        live["summary"]["all"]["latency_us"]["p99"]
    );

    // The table shows per-host rows and the measured skew.
    let t = fleet_run(tmp.path(), &inv, &null_second("3"));
    assert_eq!(t.status.code(), Some(0), "{}", stderr(&t));
    let out = stdout(&t);
    assert!(out.contains("start skew") && out.contains("h2"), "{out}");
    // The copied binary stays for the next run, content-addressed, and nothing else of
    // this run is left on the hosts. (Verify journals of the user's own runs may live
    // beside it: not the agent's.)
    let cache = Path::new(&std::env::var("HOME").unwrap()).join(".cache/iofleet");
    assert_eq!(agent_files(&cache), [own_copy(&cache)]);
    clean(tmp.path(), &inv);
}

/// Where this build's copy lives on a host: `iofleet-` and the first 16 hex digits of
/// its SHA-256.
fn own_copy(cache: &Path) -> std::path::PathBuf {
    let o = std::process::Command::new("sha256sum")
        .arg(env!("CARGO_BIN_EXE_iofleet"))
        .output()
        .unwrap();
    cache.join(format!(
        "iofleet-{}",
        &String::from_utf8_lossy(&o.stdout)[..16]
    ))
}

/// `iofleet hosts clean` over the inventory: exits 0, prints a line per host; returns
/// its output.
fn clean(dir: &Path, inv: &str) -> String {
    let o = run_in(dir, &["hosts", "clean", "--hosts", inv]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
}

/// A run leaves its copy for the next, which uploads nothing (the copy keeps its
/// inode); a copy changed on the host is replaced by a verified one before anything
/// runs it; `hosts clean` then leaves no iofleet file on any of the three hosts.
#[test]
fn the_copy_stays_for_the_next_run_a_changed_one_is_replaced_and_clean_removes_it() {
    use std::os::unix::fs::{FileExt, MetadataExt};
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path(), "");
    let cache = Path::new(&std::env::var("HOME").unwrap()).join(".cache/iofleet");
    clean(tmp.path(), &inv);
    assert!(agent_files(&cache).is_empty(), "{:?}", agent_files(&cache));
    let args = null_second("3");
    let run = || {
        let o = fleet_run(tmp.path(), &inv, &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    };
    // Sessions each host accepted so far (sshd logs one line per login).
    let logins = || -> Vec<usize> {
        c.hosts
            .iter()
            .map(|h| {
                std::fs::read_to_string(&h.log)
                    .unwrap_or_default()
                    .matches("Accepted publickey")
                    .count()
            })
            .collect()
    };
    // A host is checked, sent its copy when it has none, and started in one session.
    let one_session_each = |what: &str, run: &dyn Fn()| {
        let before = logins();
        run();
        let per_host: Vec<usize> = logins().iter().zip(&before).map(|(a, b)| a - b).collect();
        assert_eq!(per_host, vec![1; 3], "sessions per host of {what}");
    };
    one_session_each("a run that sends the copy", &run);
    let copy = own_copy(&cache);
    let first = std::fs::metadata(&copy).unwrap().ino();
    one_session_each("a run that finds the copy", &run);
    assert_eq!(
        std::fs::metadata(&copy).unwrap().ino(),
        first,
        "a second run uploads nothing"
    );
    // One byte changed on the host: the next run sends a fresh copy and verifies it.
    let f = std::fs::File::options().write(true).open(&copy).unwrap();
    f.write_at(b"X", 4096).unwrap();
    drop(f);
    run();
    // (Not told by its inode: three hosts upload to this one home at once, and the
    // number freed by one replacement may be the next upload's.)
    let on_host = std::fs::read(&copy).unwrap();
    let ours = std::fs::read(env!("CARGO_BIN_EXE_iofleet")).unwrap();
    assert!(
        on_host == ours,
        "the changed copy was replaced by this build"
    );

    let out = clean(tmp.path(), &inv);
    for h in &c.hosts {
        assert!(out.contains(&format!("host {}: ", h.alias)), "{out}");
    }
    // The hosts share this machine's home: one host removes the copy, the others find
    // nothing left.
    assert_eq!(out.matches("1 file(s) removed").count(), 1, "{out}");
    assert!(agent_files(&cache).is_empty(), "{:?}", agent_files(&cache));
}

#[test]
fn a_host_lost_mid_run_is_marked_and_exits_3() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path(), "");
    for tolerate in [false, true] {
        let extra: &[&str] = if tolerate {
            &["--tolerate-host-loss"]
        } else {
            &[]
        };
        let addr = free_addr();
        let mut extra = extra.to_vec();
        extra.extend(["--metrics-listen", &addr]);
        let child = spawn_fleet(tmp.path(), &inv, "6s", &extra);
        // Once two 0.5 s intervals are measured, kill host h2's session (its agent
        // included): the run's clock is then past 1 s, whatever the machine's load.
        wait_for_interval(&addr, 1);
        c.kill_sessions(1);
        let o = child.wait_with_output().unwrap();
        let want = if tolerate { 0 } else { 3 };
        assert_eq!(
            o.status.code(),
            Some(want),
            "tolerate={tolerate}: {}",
            stderr(&o)
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        // An SSH fleet is judged by the same quorum: every host, or any with the flag.
        assert_eq!(v["validity"]["valid"], tolerate, "{}", v["validity"]);
        let hosts = v["hosts"].as_array().unwrap();
        let lost_at = hosts[1]["lost_at_s"].as_f64().expect("h2 is marked lost");
        assert!(lost_at > 0.5 && lost_at < 5.5, "lost at {lost_at}");
        assert!(hosts[0]["lost_at_s"].is_null() && hosts[2]["lost_at_s"].is_null());
        assert!(hosts[0]["all"]["ios"].as_u64().unwrap() > 0);
        assert_eq!(v["run"]["interrupted"], false, "the others ran to the end");
        let intervals = v["intervals"].as_array().unwrap();
        assert!(
            intervals.iter().any(|i| i["hosts_lost"] == 1),
            "affected intervals are marked"
        );
        assert_eq!(intervals.first().unwrap()["hosts_lost"], 0);
        assert!(v["notices"].to_string().contains("h2"));
    }
}

/// The server address of the SSH session a process runs in (from `SSH_CONNECTION`).
fn server_addr(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(b"SSH_CONNECTION="))
        .and_then(|v| {
            String::from_utf8_lossy(v)
                .split_whitespace()
                .nth(2)
                .map(String::from)
        })
}

/// The `iofleet_interval_index` gauge at `addr`, if it answers.
fn interval_index(addr: &str) -> Option<u64> {
    metrics_gauge(addr, "iofleet_interval_index").map(|i| i as u64)
}

/// Wait until the run at `addr` has finished interval `index` (a bound for a loaded
/// machine, not a timing claim).
fn wait_for_interval(addr: &str, index: u64) {
    let t0 = Instant::now();
    while interval_index(addr).is_none_or(|i| i < index) {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "interval {index} never ended"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Host `i`'s agent: the agent process (not a shell about to exec it) of this cluster's
/// host `i`, whose session came in on that host's address. Retried briefly: sessions
/// may still be starting. Exactly one.
fn host_agent(c: &Cluster, i: usize) -> Vec<u32> {
    let find = || -> Vec<u32> {
        let mine = c.session_pids(i);
        agents()
            .into_iter()
            .filter(|p| mine.contains(p))
            .filter(|&p| {
                sshd::cmdline(p)
                    .split_whitespace()
                    .next()
                    .is_some_and(|exe| exe.contains("/.cache/iofleet/iofleet-"))
            })
            .filter(|&p| server_addr(p).as_deref() == Some(c.hosts[i].addr.as_str()))
            .collect()
    };
    let t0 = Instant::now();
    let mut found = find();
    while found.len() != 1 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
        found = find();
    }
    assert_eq!(
        found.len(),
        1,
        "one agent on host {i}: {found:?} of {:?}",
        agents()
    );
    found
}

/// Every event of the live view's `/events` stream at `addr`, with when it arrived,
/// sent on as they come (a thread reads the stream until the run ends it).
fn follow_events(addr: &str) -> std::sync::mpsc::Receiver<(Instant, Value)> {
    use std::io::{BufRead, Write};
    let (tx, rx) = std::sync::mpsc::channel();
    let mut s = std::net::TcpStream::connect(addr).expect("the live view answers");
    s.set_read_timeout(Some(Duration::from_secs(90))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(s).lines() {
            let Ok(line) = line else { return };
            if let Some(data) = line.strip_prefix("data: ") {
                let v: Value = serde_json::from_str(data).expect("an event is JSON");
                if tx.send((Instant::now(), v)).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// The acceptance of the live view over a fleet: three sshd hosts, `--ui`, one host's
/// agent frozen mid-run. Over `/events`, the host strip marks it lost (and only it)
/// within `--host-timeout` of the freeze (plus one interval for the strip to be sent);
/// in a real browser the page shows the lost mark on its strip.
#[test]
fn a_frozen_host_shows_as_lost_on_the_live_page_within_the_host_timeout() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path(), "");
    let addr = free_addr();
    let timeout_s = 4.0;
    // Long enough for Chromium to start on a loaded machine before the freeze, and for
    // the loss to be seen after it.
    let child = spawn_fleet(
        tmp.path(),
        &inv,
        "40s",
        &["--host-timeout", "4s", "--metrics-listen", &addr, "--ui"],
    );
    let events = follow_events(&addr);
    let h2 = host_agent(&c, 1);
    wait_for_interval(&addr, 2);
    // The page, opened before the host is frozen: the freeze waits for it.
    let browser = need::need(
        "a_frozen_host_shows_as_lost_on_the_live_page_within_the_host_timeout (browser)",
        &["chromium", "chromedriver", "python3"],
    ) && have_selenium();
    let shots = tempfile::tempdir().unwrap();
    let ready = shots.path().join("ready");
    let page = browser.then(|| {
        std::process::Command::new("timeout")
            .args(["120", "python3"])
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/ui/live_lost.py"
            ))
            .arg("--base")
            .arg(format!("http://{addr}"))
            .arg("--out")
            .arg(shots.path())
            .arg("--ready")
            .arg(&ready)
            // Chromium's own scratch folders go where the test cleans up, not in /tmp.
            .env("TMPDIR", shots.path())
            .args(["--host", &c.hosts[1].alias])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    });
    let t0 = Instant::now();
    while page.is_some() && !ready.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the page never opened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(std::process::Command::new("kill")
        .args(["-STOP", &h2[0].to_string()])
        .status()
        .unwrap()
        .success());
    let frozen = Instant::now();
    // Over HTTP: the first host strip that marks a host lost.
    let mut seen = Vec::new();
    let (at, strip) = loop {
        let (at, ev) = events
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no host marked lost; events: {seen:?}"));
        let marked = ev["type"] == "hosts"
            && ev["hosts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|h| !h["lost_at_s"].is_null());
        if marked {
            break (at, ev);
        }
        seen.push(ev);
    };
    let after = at.saturating_duration_since(frozen).as_secs_f64();
    let hosts = strip["hosts"].as_array().unwrap();
    let lost: Vec<&str> = hosts
        .iter()
        .filter(|h| !h["lost_at_s"].is_null())
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(lost, [c.hosts[1].alias.as_str()], "{strip}");
    assert!(hosts.iter().all(|h| h["straggler"].is_boolean()), "{strip}");
    assert!(
        hosts[1]["straggler"] == false,
        "a lost host is no straggler: {strip}"
    );
    // Not before the timeout less the longest silence of a live agent (it heartbeats
    // when it has sent nothing for a quarter of the timeout, so its last frame may
    // precede the freeze by that much), and a little for `kill` to return; after it, by
    // a margin that holds while Chromium starts beside it on a loaded machine (the
    // timing itself is a benchmark's claim, not a test's).
    assert!(
        after >= timeout_s * 0.75 - 0.1 && after <= timeout_s + 4.0,
        "marked lost {after:.2} s after the freeze (--host-timeout 4s)"
    );
    // The interval sent with that strip counts the host as lost.
    let interval = seen
        .iter()
        .rev()
        .find(|e| e["type"] == "interval")
        .expect("an interval before its strip");
    assert_eq!(interval["index"], strip["index"], "{interval}");
    assert_eq!(interval["hosts_lost"], 1, "{interval}");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    // The strip's time of loss is the result's.
    assert_eq!(hosts[1]["lost_at_s"], v["hosts"][1]["lost_at_s"], "{strip}");
    if let Some(p) = page {
        let o = p.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "the browser script failed: {}{}",
            String::from_utf8_lossy(&o.stdout),
            stderr(&o)
        );
        let seen: Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
        eprintln!("marked lost {after:.2} s after the freeze; the page saw {seen}");
        assert_eq!(
            seen["lost"],
            serde_json::json!([c.hosts[1].alias]),
            "{seen}"
        );
        assert_eq!(seen["pages"].as_array().unwrap().len(), 2, "{seen}");
        for shot in seen["pages"].as_array().unwrap() {
            assert!(shot["scroll"].as_u64() <= shot["inner"].as_u64(), "{shot}");
            let png = Path::new(shot["png"].as_str().unwrap());
            assert!(std::fs::metadata(png).unwrap().len() > 0);
            // IOFLEET_UI_SHOTS=DIR keeps the screenshots (docs/ui.md shows one).
            if let Some(dir) = std::env::var_os("IOFLEET_UI_SHOTS") {
                std::fs::copy(png, Path::new(&dir).join(png.file_name().unwrap())).unwrap();
            }
        }
    }
}

/// Whether Python can import Selenium (installed by test.sh from PyPI); under CI it
/// must.
fn have_selenium() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import selenium"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok || !need::ci(),
        "CI is set but Python's selenium is missing"
    );
    if !ok {
        need::skip(
            "selenium (PyPI) not installed",
            "the live page in a browser",
        );
    }
    ok
}

#[test]
fn a_frozen_host_is_lost_when_it_went_silent_and_its_agent_is_ended() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path(), "");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = spawn_fleet(
        tmp.path(),
        &inv,
        "12s",
        &["--host-timeout", "5s", "--metrics-listen", &addr],
    );
    let h2 = host_agent(&c, 1);
    wait_for_interval(&addr, 3);
    // Where the run is: interval `before` is complete (its end has passed) and the next
    // one is not yet merged, so the run's clock is in [(before+1)·0.5 s, (before+2)·0.5 s
    // + delivery] when the stop is sent.
    let before = interval_index(&addr).expect("metrics answer");
    let polled = Instant::now();
    assert!(std::process::Command::new("kill")
        .args(["-STOP", &h2[0].to_string()])
        .status()
        .unwrap()
        .success());
    let stop_lo = (before + 1) as f64 * 0.5;
    let stop_hi = (before + 2) as f64 * 0.5 + polled.elapsed().as_secs_f64() + 0.1;
    // The metrics go on advancing with the two remaining hosts once h2 is given up on
    // (5 s of silence), well before the run's end.
    // Waited for, not slept for: the index passes the stalled interval by several.
    wait_for_interval(&addr, before + 4);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let hosts = v["hosts"].as_array().unwrap();
    let lost_at = hosts[1]["lost_at_s"].as_f64().expect("h2 is marked lost");
    // Lost when it was last heard from: within one interval (0.5 s) of the stop.
    assert!(
        lost_at >= stop_lo - 0.5 && lost_at <= stop_hi,
        "lost at {lost_at} s; stopped between {stop_lo} and {stop_hi} s"
    );
    assert!(hosts[0]["lost_at_s"].is_null() && hosts[2]["lost_at_s"].is_null());
    let intervals = v["intervals"].as_array().unwrap();
    for iv in intervals {
        let end = iv["t_s"].as_f64().unwrap() + iv["duration_s"].as_f64().unwrap();
        let flagged = iv["hosts_lost"].as_u64().unwrap() == 1;
        assert_eq!(
            flagged,
            end > lost_at,
            "interval {iv} against loss at {lost_at}"
        );
    }
    let notices = v["notices"].to_string();
    assert!(notices.contains("stopped responding"), "{notices}");
    // Nothing of this run is left on any host 5 s after it ended.
    let t1 = Instant::now();
    while !agents().is_empty() && t1.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left: Vec<String> = agents().iter().map(|&p| sshd::cmdline(p)).collect();
    assert!(left.is_empty(), "agents left behind: {left:?}");
}

/// One profile in simulated time (null engine, injected latencies, fixed seed):
/// in-process, over the `local` transport and over ssh. Every path goes through the
/// same launcher seam and fold, so counts and percentiles are identical, and equal to
/// what the store recomputes from its histograms.
#[test]
fn in_process_local_transport_and_ssh_fold_identically() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("results.db");
    let db_s = db.to_string_lossy().into_owned();
    let ssh_inv = inventory(&c, tmp.path(), "");
    let local_inv = tmp.path().join("local.toml");
    std::fs::write(
        &local_inv,
        (1..=3)
            .map(|i| format!("[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\n"))
            .collect::<String>(),
    )
    .unwrap();
    let local_inv = local_inv.to_string_lossy().into_owned();
    let run = |hosts: Option<&str>| -> Value {
        let mut args = vec![
            "run",
            "vsan-7030",
            "--engine",
            "null",
            "--sim-latency",
            "exp:200us;fixed:80us;lognormal:100us:0.5",
            "--workers",
            "3",
            "--disks",
            "2",
            "--threads",
            "2",
            "--warmup",
            "1s",
            "--duration",
            "3s",
            "--interval",
            "1s",
            "--seed",
            "7",
            "--json",
            "--quiet",
            "--db",
            &db_s,
        ];
        if let Some(h) = hosts {
            args.extend(["--hosts", h]);
        }
        let o = run_in(tmp.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{hosts:?}: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let inproc = run(None);
    let local = run(Some(&local_inv));
    let ssh = run(Some(&ssh_inv));
    assert!(inproc["summary"]["all"]["ios"].as_u64().unwrap() > 1000);
    // Workers without their host names, intervals without anything host-specific.
    let workers = |v: &Value| -> Vec<Value> {
        v["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                let mut w = w.clone();
                w.as_object_mut().unwrap().remove("host");
                w
            })
            .collect()
    };
    for (name, other) in [("local transport", &local), ("ssh", &ssh)] {
        for part in ["all", "read", "write"] {
            assert_eq!(
                inproc["summary"][part], other["summary"][part],
                "{name}: summary.{part}"
            );
        }
        assert_eq!(inproc["streams"], other["streams"], "{name}: streams");
        assert_eq!(workers(&inproc), workers(other), "{name}: workers");
        assert_eq!(inproc["intervals"], other["intervals"], "{name}: intervals");
        assert_eq!(other["hosts"].as_array().unwrap().len(), 3, "{name}");
    }
    // The store recomputes the same figures from its histograms, for each run.
    let o = run_in(tmp.path(), &["results", "list", "--json", "--db", &db_s]);
    let runs: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<String> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3);
    for id in &ids {
        let o = run_in(
            tmp.path(),
            &["results", "export", id, "--format", "json", "--db", &db_s],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let rec: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(rec["summary"]["all"], inproc["summary"]["all"], "run {id}");
        assert_eq!(rec["intervals"], inproc["intervals"], "run {id}");
    }
}

/// Every host reports what it spends: iofleet's and the host's CPU, memory, network and
/// the block device under its target. The fleet's CPU per I/O is the agents' CPU (not
/// the controller's), and the store gives back the same figures.
#[test]
fn hosts_report_cpu_memory_network_and_disk() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path(), "");
    let db = tmp.path().join("results.db");
    let db_s = db.to_string_lossy().into_owned();
    // Real I/O (O_DIRECT on the host's filesystem), so the device sees it.
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "vsan-7030",
            "--hosts",
            &inv,
            "--workers",
            "3",
            "--disks",
            "1",
            "--disk-size",
            "16m",
            "--qd",
            "4",
            "--warmup",
            "0s",
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "--json",
            "--quiet",
            "--db",
            &db_s,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let live: Value = serde_json::from_slice(&o.stdout).unwrap();
    let hosts = live["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    let mut agents_cpu_s = 0.0;
    for h in hosts {
        let cpu = &h["cpu"];
        assert!(cpu["host_pct"].as_f64().unwrap() > 0.0, "{h}");
        assert!(cpu["usr_pct"].as_f64().unwrap() + cpu["sys_pct"].as_f64().unwrap() > 0.0);
        assert!(h["memory"]["rss_peak_mib"].as_f64().unwrap() > 0.0, "{h}");
        assert!(h["net"]["rx_mbps"].as_f64().unwrap() >= 0.0, "{h}");
        assert!(h["net"]["tx_mbps"].as_f64().unwrap() >= 0.0, "{h}");
        let disk = &h["disk"];
        assert!(disk["iops"].as_f64().unwrap() > 0.0, "{h}");
        assert!(disk["busy_pct"].as_f64().unwrap() > 0.0, "{h}");
        assert_eq!(disk["devices"], 1);
        agents_cpu_s += (cpu["usr_pct"].as_f64().unwrap() + cpu["sys_pct"].as_f64().unwrap())
            / 100.0
            * live["run"]["duration_s"].as_f64().unwrap();
    }
    // CPU per I/O is the agents' CPU over the fleet's I/Os.
    let ios = live["summary"]["all"]["ios"].as_f64().unwrap();
    let us_per_io = live["summary"]["cpu"]["us_per_io"].as_f64().unwrap();
    let expect = agents_cpu_s * 1e6 / ios;
    assert!(
        (us_per_io - expect).abs() <= 0.15 * expect,
        "us_per_io {us_per_io} against the agents' {expect}"
    );
    // The store gives back the same figures.
    let o = run_in(
        tmp.path(),
        &[
            "results", "export", "latest", "--format", "json", "--db", &db_s,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rec: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rec["hosts"], live["hosts"]);
    assert_eq!(rec["summary"]["cpu"], live["summary"]["cpu"]);
}

/// What a SIGKILLed controller leaves behind (an upload abandoned over 10 minutes ago)
/// and a copy of another version unused for over `KEEP_DAYS` (7) days are removed by
/// the next run to that host; a copy of another version used lately stays, and so does
/// the run's own copy, for the next run.
#[test]
fn stale_agent_copies_are_removed_by_the_next_run() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(1) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path(), "");
    let cache = std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/iofleet");
    std::fs::create_dir_all(&cache).unwrap();
    // A copy of another version unused for 8 days and an upload abandoned as long ago,
    // and a copy of another version used a moment ago.
    let age = |path: &Path| age_by(path, 8 * 24 * 3600);
    let stale = cache.join("iofleet-00000000deadbeef");
    std::fs::write(&stale, b"#!/bin/sh\n").unwrap();
    age(&stale);
    let upload = cache.join(".upload.1");
    std::fs::write(&upload, b"partial").unwrap();
    age(&upload);
    let fresh = cache.join("iofleet-00000000cafef00d");
    std::fs::write(&fresh, b"#!/bin/sh\n").unwrap();
    let o = fleet_run(tmp.path(), &inv, &null_second("1"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let left = agent_files(&cache);
    let mut expect = vec![cache.join("iofleet-00000000cafef00d"), own_copy(&cache)];
    expect.sort();
    assert_eq!(
        left,
        expect,
        "only the recent copy of another version and the run's own are left in {}",
        cache.display()
    );
    // A week-old copy of another version is not yet stale.
    age_by(&fresh, 6 * 24 * 3600);
    let o = fleet_run(tmp.path(), &inv, &null_second("1"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(agent_files(&cache), expect);
    clean(tmp.path(), &inv);
    assert!(agent_files(&cache).is_empty());
}

#[test]
fn ctrl_c_leaves_no_agent_behind() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path(), "");
    let addr = free_addr();
    let child = spawn_fleet(tmp.path(), &inv, "60s", &["--metrics-listen", &addr]);
    wait_for_interval(&addr, 1);
    assert!(std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["run"]["interrupted"], true);
    // No agent process remains on any host.
    let t1 = Instant::now();
    while !agents().is_empty() && t1.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left: Vec<String> = agents().iter().map(|&p| sshd::cmdline(p)).collect();
    assert!(left.is_empty(), "agents left behind: {left:?}");
    drop(c);
}

#[test]
fn an_agent_speaking_another_protocol_is_refused() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(1) else { return };
    let tmp = tempfile::tempdir().unwrap();
    // A stand-in agent that greets with protocol 99 from iofleet 9.9.9.
    let fake = tmp.path().join("old-iofleet");
    std::fs::write(
        &fake,
        "#!/usr/bin/env python3\nimport json, struct, sys\n\
         body = json.dumps({'protocol': 99, 'version': '9.9.9', 'hostname': 'old'}).encode()\n\
         sys.stdout.buffer.write(b'IOFLEET1' + struct.pack('<I', len(body) + 1) + bytes([1]) + body)\n\
         sys.stdout.flush()\nsys.stdin.read()\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("755")
        .arg(&fake)
        .status()
        .unwrap();
    let inv = inventory(
        &c,
        tmp.path(),
        &format!("iofleet_path = {:?}\n", fake.display().to_string()),
    );
    let o = fleet_run(tmp.path(), &inv, &["--engine", "null", "--duration", "1s"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("9.9.9") && err.contains(env!("CARGO_PKG_VERSION")),
        "{err}"
    );
    assert!(err.contains("protocol 99") && err.contains("h1"), "{err}");
}

#[test]
fn an_unreachable_host_is_named() {
    let _one = sshd::one_at_a_time();
    let Some(mut c) = Cluster::start(2) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path(), "");
    c.kill_host(1);
    let o = fleet_run(tmp.path(), &inv, &["--engine", "null", "--duration", "1s"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("host h2"), "{err}");
    assert!(
        agents().is_empty(),
        "the reachable host's agent was stopped too"
    );
    // Cleaning: the reachable host is cleaned, the other named, exit 1.
    let o = run_in(tmp.path(), &["hosts", "clean", "--hosts", &inv]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("host h1: "), "{out}");
    assert!(err.contains("host h2") && !out.contains("host h2"), "{err}");
}

#[test]
fn worker_groups_are_placed_across_hosts() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path(), "");
    // 3 VDI + 3 SQL workers over 3 hosts: h2 serves one worker of each group.
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "--group",
            "vdi=xray-vdi-task:3",
            "--group",
            "sql=vmfleet-sql:3",
            "--hosts",
            &inv,
            "--engine",
            "null",
            "--duration",
            "2s",
            "--warmup",
            "0s",
            "--interval",
            "500ms",
            "--json",
            "--quiet",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let workers: Vec<(u64, String)> = v["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["worker"].as_u64().unwrap(),
                w["host"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let hosts: Vec<&str> = workers.iter().map(|w| w.1.as_str()).collect();
    assert_eq!(hosts, ["h1", "h1", "h2", "h2", "h3", "h3"]);
    let total = v["summary"]["all"]["ios"].as_u64().unwrap();
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    let by_group: u64 = groups
        .iter()
        .map(|g| g["all"]["ios"].as_u64().unwrap())
        .sum();
    let by_host: u64 = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["all"]["ios"].as_u64().unwrap())
        .sum();
    assert_eq!(by_group, total);
    assert_eq!(by_host, total);
    // Every worker did I/O with its own group's streams (names group/stream).
    for w in v["workers"].as_array().unwrap() {
        assert!(w["all"]["ios"].as_u64().unwrap() > 0, "{w}");
    }
    let vdi_iops = groups[0]["all"]["iops"].as_f64().unwrap();
    assert!(
        (vdi_iops - 24.0).abs() < 8.0,
        "3 VMs × 8 IOPS, got {vdi_iops}"
    );
}
