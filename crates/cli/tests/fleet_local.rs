//! A fleet of agents over the `local` transport (child processes of the controller, no
//! network): Ctrl-C at each phase exits 130 with what was measured and leaves no agent
//! behind, as a terminal delivers it (to the controller's whole process group).

mod common;
#[path = "support/sshd.rs"]
mod sshd;

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// Agents still running as children of `controller` (tests run in parallel, each with
/// its own controller).
fn agents(exe: &str, controller: u32) -> Vec<u32> {
    sshd::pids_matching(" agent")
        .into_iter()
        .filter(|&p| sshd::cmdline(p).starts_with(exe) && parent_of(p) == Some(controller))
        .collect()
}

/// A process's parent, from /proc/PID/stat (field 4).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// When a test interrupts the run: a state the run has reached, waited for (never a
/// guessed sleep, which a loaded machine outruns).
enum At {
    /// A host's disk file has data on it: the fill is writing.
    Preparing,
    /// `/metrics` shows measured intervals (index this far, warm-up over).
    Measuring(f64),
}

/// Interrupt a fleet run over three local agents once it is `at` that state; return the
/// exit code and the JSON result.
fn interrupt(extra: &[&str], at: At) -> (Option<i32>, Value) {
    let exe = assert_cmd::cargo::cargo_bin("iofleet");
    let exe_s = exe.to_string_lossy().into_owned();
    let tmp = tempfile::tempdir().unwrap();
    let inv = tmp.path().join("local.toml");
    std::fs::write(
        &inv,
        (1..=3)
            .map(|i| format!("[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\n"))
            .collect::<String>(),
    )
    .unwrap();
    let mut cmd = std::process::Command::new(&exe);
    cmd.current_dir(tmp.path())
        .env("XDG_DATA_HOME", scratch_data_home())
        .args(["run", "vsan-7030", "--hosts"])
        .arg(&inv)
        .args(["--workers", "3", "--no-save", "--json"])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .args(extra)
        .process_group(0);
    let run = Watched::spawn(cmd);
    let pgid = run.id();
    let t0 = Instant::now();
    while agents(&exe_s, pgid).len() < 3 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = agents(&exe_s, pgid);
    assert_eq!(started.len(), 3, "three agents started");
    // Once the controller exits, survivors would be re-parented: follow these pids.
    let alive = || -> Vec<u32> {
        started
            .iter()
            .copied()
            .filter(|&p| sshd::cmdline(p).starts_with(&exe_s))
            .collect()
    };
    match at {
        At::Preparing => {
            let filling = || {
                (1..=3).any(|i| {
                    walk_files(&tmp.path().join(format!("data{i}")))
                        .iter()
                        .any(|m| m.blocks() > 0)
                })
            };
            let t0 = Instant::now();
            while !filling() && t0.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(filling(), "the fill did not start");
        }
        At::Measuring(index) => {
            run.wait_for(
                "iofleet_interval_index",
                |i| i >= index,
                Duration::from_secs(120),
            );
            assert_eq!(run.gauge("iofleet_warmup"), Some(0.0));
        }
    }
    // As a terminal does: SIGINT to the whole foreground process group.
    assert!(std::process::Command::new("kill")
        .args(["-INT", "--", &format!("-{pgid}")])
        .status()
        .unwrap()
        .success());
    let o = run.finish();
    let t1 = Instant::now();
    while !alive().is_empty() && t1.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<String> = alive().iter().map(|&p| sshd::cmdline(p)).collect();
    assert!(left.is_empty(), "agents left behind: {left:?}");
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    (o.status.code(), v)
}

/// The metadata of every file under `dir` (none when it does not exist yet).
fn walk_files(dir: &std::path::Path) -> Vec<std::fs::Metadata> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match e.metadata() {
            Ok(m) if m.is_dir() => out.extend(walk_files(&e.path())),
            Ok(m) => out.push(m),
            Err(_) => {}
        }
    }
    out
}

#[test]
fn ctrl_c_while_hosts_prepare_exits_130_with_nothing_measured() {
    // 3 hosts × 8 disks × 512 MiB of random fill: several seconds of preparing.
    let (code, v) = interrupt(
        &["--disk-size", "512m", "--direct=false", "--cleanup"],
        At::Preparing,
    );
    assert_eq!(code, Some(130), "{v}");
    assert_eq!(v["run"]["interrupted"], true);
    assert_eq!(v["summary"]["all"]["ios"], 0);
    assert!(v["notices"].to_string().contains("preparing"), "{v}");
}

#[test]
fn ctrl_c_while_measuring_exits_130_with_what_was_measured() {
    let (code, v) = interrupt(
        &[
            "--engine",
            "null",
            "--rate",
            "2000",
            "--warmup",
            "0s",
            "--duration",
            "60s",
            "--interval",
            "200ms",
        ],
        At::Measuring(3.0),
    );
    assert_eq!(code, Some(130), "{v}");
    assert_eq!(v["run"]["interrupted"], true);
    assert!(v["summary"]["all"]["ios"].as_u64().unwrap() > 0);
    let lost: Vec<&Value> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| !h["lost_at_s"].is_null())
        .collect();
    assert!(lost.is_empty(), "a Ctrl-C loses no host: {lost:?}");
}
