//! A fleet of agents over the `local` transport (child processes of the controller, no
//! network): Ctrl-C at each phase exits 130 with what was measured and leaves no agent
//! behind, as a terminal delivers it (to the controller's whole process group).

mod common;
#[path = "support/sshd.rs"]
mod sshd;

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
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

/// A stand-in agent in Python for `iofleet_path`: it greets with this build's protocol
/// and `pid` as its process id, answers clock pings, says ready to a job, and then does
/// what `after_job` says (Python lines, indented by 8). At the end of its input it
/// removes the record the start script made of it, as the real agent does.
fn fake_agent(dir: &Path, name: &str, pid: u64, after_job: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            r#"#!/usr/bin/env python3
import json, os, shutil, struct, sys, time
out, inp = sys.stdout.buffer, sys.stdin.buffer
def send(kind, body):
    b = json.dumps(body).encode()
    out.write(struct.pack('<IB', len(b) + 1, kind) + b)
    out.flush()
out.write(b'IOFLEET1')
send(1, {{'protocol': {protocol}, 'version': 'fake', 'hostname': 'fake', 'pid': {pid}}})
while True:
    head = inp.read(5)
    if len(head) < 5:
        shutil.rmtree(os.environ.get('IOFLEET_RUN_DIR', '/nonexistent'), ignore_errors=True)
        sys.exit(0)
    n, kind = struct.unpack('<IB', head)
    body = inp.read(n - 1)
    if kind == 3:
        send(4, {{'seq': json.loads(body)['seq'], 't_ns': time.monotonic_ns()}})
    elif kind == 2:
{after_job}
"#,
            protocol = iofleet_fleet::agents::protocol::PROTOCOL_VERSION,
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| !r.starts_with(" Z"))
    })
}

/// Agents that report process ids of 4294967295 (which `kill` takes as -1, every
/// process), 1, and a live `sleep`, then freeze once the run starts: each is given up
/// after --host-timeout and ended, and nothing else is signalled (the sleep lives on).
#[test]
fn an_agent_reporting_another_process_id_gets_nothing_else_killed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut sleep = std::process::Command::new("sleep")
        .arg("120")
        .spawn()
        .unwrap();
    let freeze = "        send(5, {'notices': [], 'engine': 'null', 'configured_outstanding': 0})\n    elif kind == 6:\n        while True: time.sleep(60)";
    let mut inv = String::new();
    for (i, pid) in [4_294_967_295u64, 1, sleep.id() as u64]
        .into_iter()
        .enumerate()
    {
        let path = fake_agent(tmp.path(), &format!("fake{i}"), pid, freeze);
        inv.push_str(&format!(
            "[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\niofleet_path = {path:?}\n"
        ));
    }
    std::fs::write(tmp.path().join("inv.toml"), inv).unwrap();
    let t0 = Instant::now();
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "vsan-7030",
            "--hosts",
            "inv.toml",
            "--engine",
            "null",
            "--workers",
            "3",
            "--warmup",
            "0s",
            "--duration",
            "3s",
            "--interval",
            "500ms",
            "--host-timeout",
            "1s",
            "--no-save",
            "--quiet",
            "--json",
        ],
    );
    let took = t0.elapsed();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    for h in v["hosts"].as_array().unwrap() {
        assert!(h["lost_at_s"].as_f64().is_some(), "every host is lost: {h}");
    }
    // Given up for silence: the path that runs the kill script through a second
    // connection. These fakes are Python, not the binary the start script recorded, so
    // the script signals nothing of theirs (they end with their local session); that the
    // script does end the recorded agent is agents/mod.rs's unit test and fleet_ssh's frozen
    // host. What this shows is that no reported PID is signalled.
    let notices = v["notices"].to_string();
    assert_eq!(
        notices.matches("stopped responding").count(),
        3,
        "{notices}"
    );
    assert!(
        alive(sleep.id()),
        "the sleep whose pid an agent reported lives on"
    );
    let fakes: Vec<u32> = sshd::pids_matching(&tmp.path().to_string_lossy())
        .into_iter()
        .filter(|&p| sshd::cmdline(p).contains("fake"))
        .collect();
    assert!(fakes.is_empty(), "the frozen agents were ended: {fakes:?}");
    assert!(took < Duration::from_secs(60), "{took:?}");
    sleep.kill().unwrap();
    sleep.wait().unwrap();
}

/// An agent that announces a 4 GiB interval frame (then sends a few bytes and waits) is
/// refused from the frame's header: the run stops naming the host, the kind and the
/// limit, at once.
#[test]
fn an_agent_announcing_a_huge_frame_is_refused_naming_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let huge = "        out.write(struct.pack('<IB', 0xffffffff, 8) + b'x' * 1000); out.flush()";
    let path = fake_agent(tmp.path(), "fake", 7, huge);
    std::fs::write(
        tmp.path().join("inv.toml"),
        format!("[[host]]\ndestination = \"l1\"\ntransport = \"local\"\niofleet_path = {path:?}\n"),
    )
    .unwrap();
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "vsan-7030",
            "--hosts",
            "inv.toml",
            "--engine",
            "null",
            "--duration",
            "1s",
            "--no-save",
            "--quiet",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("host l1 (l1): lost while preparing: its agent's connection was ended: an interval frame of 4294967294 bytes is over the limit of "),
        "{err}"
    );
    assert!(err.contains(" bytes for interval frames"), "{err}");
}

/// One fleet per command, when a host is lost in a step: that step reports it (its
/// point is invalid, the sweep exits 3), and the next step opens the fleet's sessions again, so every host
/// runs it, with a notice saying why the sessions were opened again.
#[test]
fn a_host_lost_in_a_sweep_step_is_reconnected_for_the_next_step() {
    let exe = assert_cmd::cargo::cargo_bin("iofleet");
    let exe_s = exe.to_string_lossy().into_owned();
    let tmp = tempfile::tempdir().unwrap();
    let inv = tmp.path().join("local.toml");
    std::fs::write(
        &inv,
        (1..=2)
            .map(|i| format!("[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\n"))
            .collect::<String>(),
    )
    .unwrap();
    let db = tmp.path().join("results.db");
    let mut cmd = std::process::Command::new(&exe);
    cmd.current_dir(tmp.path())
        .args(["sweep", "vsan-7030", "--vary", "qd=1,2", "--hosts"])
        .arg(&inv)
        .args(["--engine", "null", "--workers", "2", "--disks", "1"])
        .args(["--warmup", "0s", "--interval", "500ms", "--duration", "4s"])
        .args(["--json", "--db", db.to_str().unwrap()])
        .args(["--metrics-listen", "127.0.0.1:0"]);
    let run = Watched::spawn(cmd);
    let controller = run.id();
    // The first step measures: end one host's agent (its session ends with it).
    run.wait_for(
        "iofleet_interval_index",
        |i| i >= 1.0,
        Duration::from_secs(120),
    );
    let first = agents(&exe_s, controller);
    assert_eq!(first.len(), 2, "two agents in the first step");
    assert!(std::process::Command::new("kill")
        .args(["-KILL", &first[0].to_string()])
        .status()
        .unwrap()
        .success());
    let o = run.finish();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let curve: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    let points = curve["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{curve}");
    // The step that lost a host is flagged in the curve (every host was its quorum).
    assert_eq!(points[0]["valid"], false, "{curve}");
    assert!(points[0]["invalid_reasons"][0]
        .as_str()
        .is_some_and(|r| r.starts_with("1 of 2 hosts lost (l")));
    assert_eq!(points[1]["valid"], true, "{curve}");
    // Each step as stored: the first lost a host, the second ran on both.
    let stored =
        |i: usize| -> Value { exported(tmp.path(), &db, points[i]["run_id"].as_str().unwrap()) };
    let (one, two) = (stored(0), stored(1));
    let lost = |v: &Value| -> usize {
        v["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| !h["lost_at_s"].is_null())
            .count()
    };
    assert_eq!(lost(&one), 1, "{}", one["hosts"]);
    assert_eq!(lost(&two), 0, "{}", two["hosts"]);
    for h in two["hosts"].as_array().unwrap() {
        assert!(h["all"]["ios"].as_u64().unwrap() > 0, "{h}");
    }
    let notices = two["notices"].to_string();
    assert!(
        notices.contains("sessions were opened again: a host's session ended in the run before"),
        "{notices}"
    );
}

/// The quorum of hosts (`--min-hosts`), on four local hosts of which one is lost half a
/// second into the measurement (a stand-in agent that ends itself then, so the loss comes
/// at a moment the run reaches, not a guessed sleep): 75% keeps the run valid (exit 0, a
/// notice names the loss), 4 makes it invalid (exit 3, stored `valid: false` with the
/// reasons, `INVALID` in the table and the list, refused as a compare baseline), no flag
/// is every host (exit 3), `--tolerate-host-loss` accepts the loss (exit 0). The four
/// runs go at once, each light (a null engine at a set rate).
#[test]
fn a_run_below_its_quorum_of_hosts_is_invalid_and_at_it_is_valid() {
    let tmp = tempfile::tempdir().unwrap();
    let dies = "        send(5, {'notices': [], 'engine': 'null', 'configured_outstanding': 0})\n    elif kind == 6:\n        epoch = json.loads(body)['epoch_ns']\n        time.sleep(max(0.0, (epoch - time.monotonic_ns()) / 1e9 + 0.5))\n        shutil.rmtree(os.environ.get('IOFLEET_RUN_DIR', '/nonexistent'), ignore_errors=True)\n        sys.exit(0)";
    let fake = fake_agent(tmp.path(), "dies", 7, dies);
    let mut inv: String = (1..=3)
        .map(|i| {
            format!(
                "[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\n"
            )
        })
        .collect();
    inv.push_str(&format!(
        "[[host]]\ndestination = \"l4\"\ntransport = \"local\"\niofleet_path = {fake:?}\n"
    ));
    std::fs::write(tmp.path().join("inv.toml"), inv).unwrap();
    let db = tmp.path().join("results.db");
    let db = db.to_str().unwrap();
    let run = |name: &'static str, extra: &'static [&'static str]| {
        let dir = tmp.path().to_path_buf();
        let db = db.to_string();
        std::thread::spawn(move || {
            let mut args = vec![
                "run",
                "vsan-7030",
                "--hosts",
                "inv.toml",
                "--engine",
                "null",
                "--workers",
                "4",
                "--disks",
                "1",
                "--rate",
                "500",
                "--warmup",
                "0s",
                "--interval",
                "500ms",
                "--duration",
                "2s",
                "--name",
                name,
                "--db",
                &db,
            ];
            args.extend_from_slice(extra);
            run_in(&dir, &args)
        })
    };
    let quorum = run("quorum", &["--min-hosts", "75%", "--json"]);
    let short = run("short", &["--min-hosts", "4"]);
    let every = run("every", &["--json", "--quiet"]);
    let any = run("any", &["--tolerate-host-loss", "--json", "--quiet"]);
    let json = |o: &std::process::Output| -> Value {
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(o)))
    };

    // 75% of 4 hosts is 3: valid, exit 0, the loss named.
    let o = quorum.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["validity"]["valid"], true, "{}", v["validity"]);
    assert_eq!(
        v["validity"]["quorum"],
        serde_json::json!({"min_hosts": "75%", "needed": 3, "with_work": 4, "lost": 1})
    );
    let notices = v["notices"].to_string();
    assert!(notices.contains("host l4 was lost at "), "{notices}");
    assert!(
        notices.contains("1 of 4 hosts lost; --min-hosts 75% needs 3: the run is valid"),
        "{notices}"
    );
    let lost_at = v["hosts"][3]["lost_at_s"].as_f64().expect("l4 is lost");
    assert!(lost_at > 0.0 && lost_at < 2.0, "{lost_at}");

    // 4 of 4: invalid, exit 3, INVALID at the top of the table, the reason on stderr.
    let o = short.join().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let table = stdout(&o);
    let first: Vec<&str> = table.lines().take(4).collect();
    let reason = "1 of 4 hosts lost (l4 at ";
    assert!(
        first
            .iter()
            .any(|l| l.starts_with(&format!("INVALID: {reason}"))
                && l.ends_with("s); --min-hosts 4 needs 4")),
        "{table}"
    );
    assert!(
        stderr(&o).contains(&format!("error: the run is INVALID: {reason}")),
        "{}",
        stderr(&o)
    );

    // Neither flag: every host must keep running.
    let o = every.join().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["validity"]["valid"], false);
    assert_eq!(v["validity"]["quorum"]["min_hosts"], "all");
    let why = v["validity"]["reasons"][0].as_str().unwrap();
    assert!(
        why.starts_with(reason) && why.contains("without --min-hosts every host must keep running"),
        "{why}"
    );

    // --tolerate-host-loss: any loss.
    let o = any.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["validity"]["valid"], true);
    assert_eq!(v["validity"]["quorum"]["min_hosts"], "any");

    // As stored: the verdict and its reasons come back, and the list says INVALID.
    let o = run_in(tmp.path(), &["results", "export", "short", "--db", db]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored = json(&o);
    assert_eq!(stored["validity"]["valid"], false);
    assert_eq!(stored["validity"]["quorum"]["needed"], 4);
    assert!(stored["validity"]["reasons"][0]
        .as_str()
        .unwrap()
        .starts_with(reason));
    let o = run_in(tmp.path(), &["results", "list", "--db", db]);
    let list = stdout(&o);
    let line = |name: &str| {
        list.lines()
            .find(|l| l.contains(&format!("  {name}  ")))
            .unwrap_or_else(|| panic!("{name} listed: {list}"))
            .to_string()
    };
    assert!(line("short").contains("hosts-lost INVALID"), "{list}");
    assert!(line("quorum").contains("hosts-lost  "), "{list}");
    assert!(!line("quorum").contains("INVALID"), "{list}");

    // Not a baseline; a candidate marked as such.
    let o = run_in(tmp.path(), &["compare", "short", "quorum", "--db", db]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("(short) is INVALID, so it cannot be the baseline: 1 of 4 hosts lost"),
        "{err}"
    );
    let o = run_in(tmp.path(), &["compare", "quorum", "short", "--db", db]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let cmp = stdout(&o);
    assert!(cmp.contains("(hosts-lost INVALID)"), "{cmp}");
    assert!(cmp.contains(&format!("      INVALID: {reason}")), "{cmp}");
}
