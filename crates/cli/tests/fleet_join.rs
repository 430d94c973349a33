//! Agents that join (`run --listen ADDR --expect N`, `iofleet agent --join-file FILE`):
//! real agent processes, started as a launcher would (plain processes, `mpirun`), join
//! one controller over TLS and are its hosts for every run of the command. Counts are
//! exact where the engine runs in simulated time at a fixed rate (`workers × rate ×
//! duration`, worked out here); losses and silences use real time. The join port's
//! refusals are tried with clients that misbehave, while a real run goes on.

mod common;
#[path = "support/sshd.rs"]
mod sshd;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use iofleet_fleet::agents::join::creds::{client_config, server_name};
use iofleet_fleet::agents::join::{JoinAddress, JoinFile};
use iofleet_fleet::agents::protocol::{
    read_frame, write_frame, Frame, FrameLimits, Hello, Join, HELLO_MAX, MAGIC,
};
use serde_json::Value;
use sshd::Cluster;

/// A bound for a loaded machine, not a timing claim.
const PATIENCE: Duration = Duration::from_secs(120);

/// A profile of `workers` workers whose rated I/Os are evenly spaced, so that a rate of
/// R per worker issues exactly R I/Os a second of simulated time; written to `dir`.
fn even_profile(dir: &Path, workers: u32, duration: &str) -> String {
    let p = dir.join(format!("even-{workers}-{duration}.toml"));
    std::fs::write(
        &p,
        format!(
            "name = \"even\"\n[fleet]\nworkers = {workers}\ndisks_per_worker = 1\ndisk_size = \"16m\"\n\
             [timing]\nwarmup = \"0s\"\nduration = \"{duration}\"\ninterval = \"500ms\"\narrival = \"uniform\"\n\
             [[stream]]\nbs = \"4k\"\nread_pct = 100\nrandom_pct = 100\n"
        ),
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iofleet"));
    c.env("XDG_DATA_HOME", scratch_data_home())
        .env("PATH", guarded_path());
    c
}

/// A controller with a join port for `expect` agents, its stdout and stderr kept in
/// files of `dir`; the join file once it is written.
struct Controller {
    child: Child,
    join_file: PathBuf,
    out: PathBuf,
    err: PathBuf,
}

impl Controller {
    fn start(dir: &Path, args: &[&str], expect: u32) -> Controller {
        let tag = format!("c{}", rand::random::<u32>());
        let join_file = dir.join(format!("{tag}.join"));
        let (out, err) = (
            dir.join(format!("{tag}.out")),
            dir.join(format!("{tag}.err")),
        );
        let child = bin()
            .current_dir(dir)
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--expect", &expect.to_string()])
            .arg("--join-file")
            .arg(&join_file)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let c = Controller {
            child,
            join_file,
            out,
            err,
        };
        c.wait_until("its join file is written", |c| c.join_file.exists());
        c
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    fn wait_until(&self, what: &str, ok: impl Fn(&Controller) -> bool) {
        let t0 = Instant::now();
        while !ok(self) {
            assert!(t0.elapsed() < PATIENCE, "{what}: never; {}", self.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Every agent joined: the controller removes the join file then.
    fn wait_armed(&self) {
        self.wait_until("the fleet is complete", |c| !c.join_file.exists());
    }

    /// The exit code, stdout and stderr.
    fn finish(mut self) -> (Option<i32>, String, String) {
        let status = self.child.wait().unwrap();
        (
            status.code(),
            std::fs::read_to_string(&self.out).unwrap(),
            self.stderr(),
        )
    }

    fn join_address(&self) -> (JoinAddress, String) {
        let f = JoinFile::read(&self.join_file).unwrap();
        (JoinAddress::parse(&f.join).unwrap(), f.token)
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `iofleet agent --join-file FILE` with these extra arguments and environment, its
/// stderr piped.
fn agent(join_file: &Path, args: &[&str], env: &[(&str, String)]) -> Child {
    let mut c = bin();
    c.arg("agent").arg("--join-file").arg(join_file).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait (bounded) for an agent to exit: its code and stderr.
fn agent_exit(mut a: Child, within: Duration) -> (Option<i32>, String) {
    let t0 = Instant::now();
    loop {
        if let Some(s) = a.try_wait().unwrap() {
            let mut err = String::new();
            a.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            return (s.code(), err);
        }
        if t0.elapsed() > within {
            let _ = a.kill();
            let _ = a.wait();
            panic!("the agent did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn json(out: &str, err: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"))
}

/// The hosts of a result: (name, ios).
fn hosts(v: &Value) -> Vec<(String, u64)> {
    v["hosts"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|h| {
            (
                h["host"].as_str().unwrap().to_string(),
                h["all"]["ios"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Joined hosts of this machine, ranks 0..n, each with `ios` I/Os (as `hosts` lists them).
fn ranked_hosts(n: u32, ios: u64) -> Vec<(String, u64)> {
    let machine = iofleet_fleet::sys::hostname();
    (0..n).map(|r| (format!("{machine}-r{r}"), ios)).collect()
}

/// Every agent process exits 0 (within PATIENCE).
fn all_exit_0(agents: Vec<Child>) {
    for a in agents {
        let (code, err) = agent_exit(a, PATIENCE);
        assert_eq!(code, Some(0), "{err}");
    }
}

/// `run` of `profile` on the simulated null engine at 100 IOPS per worker, as JSON.
fn rated_run(profile: &str) -> [&str; 8] {
    [
        "run",
        profile,
        "--engine",
        "null-sim:fixed:50us",
        "--rate",
        "100",
        "--json",
        "--no-save",
    ]
}

#[test]
fn joined_agents_are_the_fleets_hosts_and_sum_exactly_as_the_run_in_process() {
    let d = tempfile::tempdir().unwrap();
    let even = even_profile(d.path(), 4, "1s");
    let shape = rated_run(&even);
    let c = Controller::start(d.path(), &shape, 4);
    // Ranks from the launcher's variable, started out of order.
    let agents: Vec<Child> = [3u32, 1, 0, 2]
        .iter()
        .map(|r| agent(&c.join_file, &[], &[("IOFLEET_RANK", r.to_string())]))
        .collect();
    let (code, out, err) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    let v = json(&out, &err);
    assert!(
        err.contains("4 agent(s) joined from 1 host(s); ranks from IOFLEET_RANK (4)"),
        "{err}"
    );
    // 4 workers × 100 I/Os a second × 1 s, one worker per agent, in rank order.
    assert_eq!(v["summary"]["all"]["ios"], 400, "{}", v["summary"]);
    assert_eq!(hosts(&v), ranked_hosts(4, 100));
    assert!(v["run"]["start_skew_ms"].as_f64().is_some(), "{}", v["run"]);
    all_exit_0(agents);
    // The same run in this process: the same figures.
    let o = run_in(d.path(), &shape[..shape.len()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let here: Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in ["ios", "iops"] {
        assert_eq!(
            here["summary"]["all"][key], v["summary"]["all"][key],
            "{key}"
        );
    }
    assert_eq!(
        here["summary"]["all"]["latency_us"],
        v["summary"]["all"]["latency_us"]
    );
}

/// `iofleet agent --agents 3` in two processes of a launcher's ranks 0 and 1: six
/// agents, each its own connection and host, ranks 0–5 (process r holds 3r … 3r+2), and
/// the merged counts exact.
#[test]
fn agents_of_one_process_join_as_hosts_of_their_own_with_consecutive_ranks() {
    let d = tempfile::tempdir().unwrap();
    let even = even_profile(d.path(), 6, "1s");
    let shape = rated_run(&even);
    let c = Controller::start(d.path(), &shape, 6);
    let procs: Vec<Child> = [1u32, 0]
        .iter()
        .map(|r| {
            agent(
                &c.join_file,
                &["--agents", "3"],
                &[
                    ("IOFLEET_RANK", r.to_string()),
                    ("IOFLEET_SIZE", "2".into()),
                ],
            )
        })
        .collect();
    let (code, out, err) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    let v = json(&out, &err);
    assert!(
        err.contains("6 agent(s) joined from 1 host(s); ranks from IOFLEET_RANK × --agents 3 (6)"),
        "{err}"
    );
    assert_eq!(v["summary"]["all"]["ios"], 600, "{}", v["summary"]);
    assert_eq!(hosts(&v), ranked_hosts(6, 100));
    all_exit_0(procs);
}

/// `launcher` (its own arguments given) starting `iofleet agent --join-file FILE`: the
/// launcher's process, its stderr piped.
fn agents_by(mut launcher: Command, file: &Path) -> Child {
    launcher
        .arg(env!("CARGO_BIN_EXE_iofleet"))
        .arg("agent")
        .arg("--join-file")
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn mpirun_starts_sixteen_agents_that_join_with_open_mpis_ranks() {
    if !common::need::need(
        "mpirun_starts_sixteen_agents_that_join_with_open_mpis_ranks",
        &["mpirun"],
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // Every rank exits 0 once the command closes its fleet, so mpirun does too.
    launched_run(d.path(), 16, "OMPI_COMM_WORLD_RANK", |file, _, _| {
        let mut mpi = Command::new("mpirun");
        mpi.args(["--allow-run-as-root", "--oversubscribe", "-np", "16"])
            // One machine, no network: the loopback only (Open MPI 4's TCP transport).
            .args(["--mca", "btl", "self", "--mca", "oob_tcp_if_include", "lo"]);
        agents_by(mpi, file)
    });
}

#[test]
fn a_sweep_over_joined_agents_joins_each_once_and_each_takes_every_step() {
    let d = tempfile::tempdir().unwrap();
    // Two workers over three agents: one agent has no work and waits, joined, through
    // every step.
    let even = even_profile(d.path(), 2, "1s");
    let c = Controller::start(
        d.path(),
        &[
            "sweep",
            &even,
            "--vary",
            "rate=100,200,300",
            "--engine",
            "null-sim:fixed:50us",
            "--json",
        ],
        3,
    );
    let agents: Vec<Child> = (0..3).map(|_| agent(&c.join_file, &[], &[])).collect();
    let pids: Vec<u32> = agents.iter().map(Child::id).collect();
    let (code, out, err) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches("agent(s) joined from").count(), 1, "{err}");
    assert!(err.contains("ranks from the controller (3)"), "{err}");
    assert!(!err.contains("refused"), "{err}");
    let v = json(&out, &err);
    let iops: Vec<f64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["iops"].as_f64().unwrap())
        .collect();
    assert_eq!(iops, vec![200.0, 400.0, 600.0], "{v}");
    // The same three processes served the three steps, and each ended with the command.
    for (a, pid) in agents.into_iter().zip(pids) {
        assert_eq!(a.id(), pid);
        let (code, err) = agent_exit(a, PATIENCE);
        assert_eq!(code, Some(0), "{err}");
    }
}

/// A TLS connection to the controller's join port, trusting its certificate.
fn tls_to(addr: &JoinAddress) -> (rustls::ClientConnection, TcpStream) {
    let tcp = TcpStream::connect(&addr.endpoint).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let conn =
        rustls::ClientConnection::new(client_config(&addr.fingerprint).unwrap(), server_name())
            .unwrap();
    (conn, tcp)
}

/// Send `bytes` after the magic over TLS; what the port answers (a frame), or how the
/// connection ended.
fn join_with(addr: &JoinAddress, bytes: &[u8]) -> String {
    let (mut conn, mut tcp) = tls_to(addr);
    let mut s = rustls::Stream::new(&mut conn, &mut tcp);
    let sent = s.write_all(MAGIC).and_then(|()| s.write_all(bytes));
    if let Err(e) = sent {
        return format!("closed: {e}");
    }
    match read_frame(&mut s, &FrameLimits::greeting()) {
        Ok(Some(Frame::Error(f))) => f.message,
        Ok(other) => format!("answered {other:?}"),
        Err(e) => format!("closed: {e}"),
    }
}

fn join_frame(token: &str, rank: Option<u32>, protocol: Option<u32>) -> Vec<u8> {
    let mut hello = Hello::ours();
    if let Some(p) = protocol {
        hello.protocol = p;
    }
    let mut b = Vec::new();
    write_frame(
        &mut b,
        &Frame::Join(Box::new(Join {
            hello,
            rank,
            size: None,
            rank_from: "test".into(),
            target: None,
            token: token.into(),
            relay: None,
        })),
    )
    .unwrap();
    b
}

/// The controller's peak resident memory so far (VmHWM), KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A controller for two joined agents and a run long enough to try the port during it
/// (simulated time: exact counts). `before` runs once rank 0 has joined, `during` once
/// both have, each with the join address and token; after `during` the run must still
/// be going. The exit code, result, stderr and the controller's peak RSS (KiB).
fn two_agent_run(
    d: &Path,
    before: impl FnOnce(&Controller, &JoinAddress, &str),
    during: impl FnOnce(&JoinAddress, &str),
) -> (Option<i32>, Value, String, u64) {
    // 12,000,000 I/Os: several seconds of this machine's time for the port to be tried
    // in.
    let even = even_profile(d, 2, "240s");
    let c = Controller::start(
        d,
        &[
            "run",
            &even,
            "--engine",
            "null-sim:fixed:10us",
            "--rate",
            "25000",
            "--json",
            "--no-save",
            "--host-timeout",
            "2s",
        ],
        2,
    );
    let pid = c.child.id();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let watch = {
        let peak = peak.clone();
        std::thread::spawn(move || {
            while let Some(kib) = peak_rss_kib(pid) {
                peak.fetch_max(kib, std::sync::atomic::Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let (addr, token) = c.join_address();
    let first = agent(&c.join_file, &["--rank", "0"], &[]);
    c.wait_until("rank 0 joined", |c| {
        c.stderr().contains("1 of 2 agent(s) joined")
    });
    before(&c, &addr, &token);
    let second = agent(&c.join_file, &["--rank", "1"], &[]);
    c.wait_armed();
    during(&addr, &token);
    let going = std::fs::metadata(&c.out).unwrap().len() == 0;
    let (code, out, err) = c.finish();
    assert!(
        going,
        "the run ended before the port was tried; make it longer: {err}"
    );
    watch.join().unwrap();
    for a in [first, second] {
        let (code, e) = agent_exit(a, PATIENCE);
        assert_eq!(code, Some(0), "{e}");
    }
    let v = json(&out, &err);
    (code, v, err, peak.load(std::sync::atomic::Ordering::SeqCst))
}

/// Whether a line of `log` says the port refused a loopback peer for `reason`.
fn refused_for(log: &str, reason: &str) -> bool {
    log.lines()
        .any(|l| l.contains("join port: refused 127.0.0.1:") && l.contains(reason))
}

#[test]
fn the_join_port_refuses_what_is_not_an_agent_of_this_command_while_a_run_goes_on() {
    let d = tempfile::tempdir().unwrap();
    // An earlier command's join file: its certificate and token are not this one's.
    let earlier = d.path().join("earlier.join");
    let mut said = Vec::new();
    let (code, v, err, _) = two_agent_run(
        d.path(),
        |c, addr, _| {
            // A second agent claiming rank 0.
            let dup = agent(&c.join_file, &["--rank", "0"], &[]);
            let (code, e) = agent_exit(dup, PATIENCE);
            assert_eq!(code, Some(2), "{e}");
            assert!(e.contains("rank 0 has already joined"), "{e}");
            JoinFile {
                join: format!("iofleet://{}/{}", addr.endpoint, "ab".repeat(32)),
                token: "cd".repeat(32),
            }
            .write(&earlier)
            .unwrap();
        },
        |addr, token| {
            // Silent connections, in the background: one that never starts TLS, one
            // that stops once TLS is up.
            let stalls: Vec<_> = (0..2)
                .map(|i| {
                    let addr = addr.clone();
                    std::thread::spawn(move || {
                        let s = if i == 0 {
                            TcpStream::connect(&addr.endpoint).unwrap()
                        } else {
                            let (mut conn, mut tcp) = tls_to(&addr);
                            while conn.is_handshaking() {
                                conn.complete_io(&mut tcp).unwrap();
                            }
                            tcp
                        };
                        let mut s = s;
                        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                        let t0 = Instant::now();
                        let mut b = [0u8; 64];
                        while matches!(s.read(&mut b), Ok(n) if n > 0) {}
                        format!("stall ended after {:?}", t0.elapsed())
                    })
                })
                .collect();
            // No TLS at all.
            let mut plain = TcpStream::connect(&addr.endpoint).unwrap();
            plain.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
            plain
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            let _ = plain.read_to_end(&mut Vec::new());
            // A wrong token, another protocol version, a rank outside the fleet, a rank
            // of the complete fleet.
            said.push(join_with(addr, &join_frame(&"00".repeat(32), None, None)));
            said.push(join_with(addr, &join_frame(token, None, Some(7))));
            said.push(join_with(addr, &join_frame(token, Some(9), None)));
            said.push(join_with(addr, &join_frame(token, Some(1), None)));
            // A frame over the join's limit, and one that is not a join: ended at the
            // header, without their bodies.
            let mut big = ((HELLO_MAX + 2) as u32).to_le_bytes().to_vec();
            big.push(13);
            said.push(join_with(addr, &big));
            said.push(join_with(addr, &[5, 0, 0, 0, 2, b'{', b'}', b'x', b'x']));
            // A join whose body is not one.
            let mut bad = 10u32.to_le_bytes().to_vec();
            bad.push(13);
            bad.extend_from_slice(b"{not json");
            said.push(join_with(addr, &bad));
            // An agent of an earlier command: it refuses this controller's certificate.
            let old = agent(&earlier, &[], &[]);
            let (code, e) = agent_exit(old, PATIENCE);
            said.push(format!("{code:?} {e}"));
            for s in stalls {
                said.push(s.join().unwrap());
            }
        },
    );
    assert_eq!(code, Some(0), "{err}");
    // The run: both agents to the end, exactly 2 × 25,000 I/Os a second over 240 s.
    assert_eq!(
        v["summary"]["all"]["ios"],
        2 * 25_000 * 240,
        "{}",
        v["summary"]
    );
    assert_eq!(hosts(&v).len(), 2);
    let says = |i: usize, what: &str| {
        assert!(said[i].contains(what), "{i}: {:?} lacks {what:?}", said[i]);
    };
    says(0, "not this command's");
    says(1, "protocol version mismatch");
    says(1, "agent protocol 7");
    says(2, "rank outside the fleet");
    says(3, "the fleet is complete");
    says(4, "oversized");
    says(5, "malformed: expected a join frame, not a job frame");
    says(6, "malformed: bad frame body");
    says(7, "Some(2)");
    says(7, "fingerprint");
    for i in 8..10 {
        says(i, "stall ended");
    }
    // Each refusal is logged with the peer's address.
    for reason in [
        "no TLS",
        "wrong token",
        "protocol version mismatch",
        "rank outside the fleet",
        "the fleet is complete",
        "oversized",
        "malformed",
        "stalled",
        "duplicate rank",
    ] {
        assert!(refused_for(&err, reason), "{reason}: {err}");
    }
}

#[test]
fn a_thousand_bogus_connections_leave_the_run_exact_and_its_memory_bounded() {
    let d = tempfile::tempdir().unwrap();
    let (code, quiet, err, quiet_peak) = two_agent_run(d.path(), |_, _, _| {}, |_, _| {});
    assert_eq!(code, Some(0), "{err}");
    let (code, v, err, peak) = two_agent_run(
        d.path(),
        |_, _, _| {},
        |addr, token| {
            // 1,000 at once from 8 threads: plain bytes, TLS with a wrong token, and
            // connections that say nothing until the port ends them.
            let threads: Vec<_> = (0..8)
                .map(|t| {
                    let (addr, token) = (addr.clone(), token.to_string());
                    std::thread::spawn(move || {
                        let mut held = Vec::new();
                        for i in 0..125 {
                            match (t * 125 + i) % 4 {
                                0 | 1 => {
                                    if let Ok(mut s) = TcpStream::connect(&addr.endpoint) {
                                        let _ = s.write_all(&[0x16; 64]);
                                        held.push(s);
                                    }
                                }
                                2 => {
                                    let wrong = format!("{}0", &token[..63]);
                                    let _ = join_with(&addr, &join_frame(&wrong, None, None));
                                }
                                _ => {
                                    if let Ok(s) = TcpStream::connect(&addr.endpoint) {
                                        held.push(s);
                                    }
                                }
                            }
                        }
                        // Until the port has ended them all.
                        for mut s in held {
                            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                            let mut b = [0u8; 64];
                            while matches!(s.read(&mut b), Ok(n) if n > 0) {}
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        },
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(v["summary"]["all"]["ios"], quiet["summary"]["all"]["ios"]);
    assert_eq!(v["summary"]["all"]["ios"], 2 * 25_000 * 240);
    assert!(err.contains("connection(s)"), "{err}");
    eprintln!(
        "controller peak RSS: {quiet_peak} KiB quiet, {peak} KiB with 1,000 bogus connections"
    );
    assert!(
        peak < quiet_peak + 50 * 1024,
        "peak RSS {peak} KiB with 1,000 bogus connections, {quiet_peak} KiB without"
    );
}

/// A real-time run of `expect` joined agents (one worker each, the null engine at a
/// fixed rate) watched through its metrics endpoint, with `extra` flags: the watched
/// controller, its join file, and the agents by rank.
fn watched_run(d: &Path, expect: u32, extra: &[&str]) -> (Watched, PathBuf, Vec<Child>) {
    watched_run_saving(d, expect, extra, &["--no-save"])
}

/// `watched_run` with the store flags `save` (`--no-save`, or `--db PATH`).
fn watched_run_saving(
    d: &Path,
    expect: u32,
    extra: &[&str],
    save: &[&str],
) -> (Watched, PathBuf, Vec<Child>) {
    let even = even_profile(d, expect, "8s");
    let join_file = d.join(format!("w{}.join", rand::random::<u32>()));
    let mut c = bin();
    c.current_dir(d)
        .args(["run", &even, "--engine", "null", "--rate", "200", "--json"])
        .args(save)
        .args(["--metrics-listen", "127.0.0.1:0"])
        .args(["--listen", "127.0.0.1:0", "--expect", &expect.to_string()])
        .arg("--join-file")
        .arg(&join_file)
        .args(extra);
    let w = Watched::spawn(c);
    let t0 = Instant::now();
    while !join_file.exists() {
        assert!(t0.elapsed() < PATIENCE, "no join file");
        std::thread::sleep(Duration::from_millis(20));
    }
    let agents = (0..expect)
        .map(|r| agent(&join_file, &["--rank", &r.to_string()], &[]))
        .collect();
    (w, join_file, agents)
}

fn signal(pid: u32, sig: &str) {
    assert!(Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success());
}

#[test]
fn a_killed_agent_is_lost_at_once_a_stopped_one_at_the_host_timeout_and_exits_once_resumed() {
    let d = tempfile::tempdir().unwrap();
    let machine = iofleet_fleet::sys::hostname();
    // Sixteen agents started as plain processes. Without a quorum flag every host must
    // stay: a killed agent and a stopped one leave the run invalid (exit 3).
    let (w, _, mut agents) = watched_run(d.path(), 16, &["--host-timeout", "2s"]);
    w.wait_for("iofleet_interval_index", |i| i >= 2.0, PATIENCE);
    let (killed, stopped) = (agents[1].id(), agents[2].id());
    signal(killed, "-KILL");
    signal(stopped, "-STOP");
    let o = w.finish();
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "host {machine}-r1 lost: its agent's connection closed"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "host {machine}-r2 stopped responding: nothing heard from it for 2 s"
        )),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let lost: Vec<usize> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, h)| h["lost_at_s"].is_number())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(lost, vec![1, 2], "{}", v["hosts"]);
    assert_eq!(v["validity"]["valid"], false, "{}", v["validity"]);
    // The stopped agent, resumed, finds its connection closed and exits by itself.
    signal(stopped, "-CONT");
    let (_, e) = agent_exit(agents.remove(2), PATIENCE);
    assert!(e.contains("the controller"), "{e}");
    let _ = agents.remove(1).wait();
    for a in agents {
        let (code, e) = agent_exit(a, PATIENCE);
        assert_eq!(code, Some(0), "{e}");
    }

    // With --min-hosts 90% of 16 (15 needed), one agent killed leaves the run valid.
    let (w, _, mut agents) = watched_run(
        d.path(),
        16,
        &["--host-timeout", "2s", "--min-hosts", "90%"],
    );
    w.wait_for("iofleet_interval_index", |i| i >= 2.0, PATIENCE);
    signal(agents[5].id(), "-KILL");
    let o = w.finish();
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "host {machine}-r5 lost: its agent's connection closed"
        )),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["validity"]["valid"], true, "{}", v["validity"]);
    assert_eq!(v["validity"]["quorum"]["needed"], 15, "{}", v["validity"]);
    assert_eq!(v["validity"]["quorum"]["lost"], 1, "{}", v["validity"]);
    let _ = agents.remove(5).wait();
    for a in agents {
        let (code, e) = agent_exit(a, PATIENCE);
        assert_eq!(code, Some(0), "{e}");
    }
}

#[test]
fn agents_stop_by_themselves_when_their_controller_goes_silent() {
    let d = tempfile::tempdir().unwrap();
    let (w, _, agents) = watched_run(d.path(), 2, &["--host-timeout", "2s"]);
    w.wait_for("iofleet_interval_index", |i| i >= 1.0, PATIENCE);
    // A frozen controller: nothing reaches the agents, not even its heartbeats.
    w.signal("-STOP");
    for a in agents {
        let (code, e) = agent_exit(a, PATIENCE);
        assert_eq!(code, Some(3), "{e}");
        assert!(
            e.contains("nothing from the controller for 2 s (its host timeout): stopping"),
            "{e}"
        );
    }
    w.signal("-KILL");
}

#[test]
fn a_fleet_short_of_its_agents_fails_at_the_join_timeout_naming_the_ranks_missing() {
    let d = tempfile::tempdir().unwrap();
    let c = Controller::start(
        d.path(),
        &[
            "run",
            "--engine",
            "null",
            "--duration",
            "1s",
            "--join-timeout",
            "2s",
        ],
        5,
    );
    let joined = agent(&c.join_file, &["--rank", "2"], &[]);
    let file = c.join_file.clone();
    let (code, out, err) = c.finish();
    assert_eq!(code, Some(1), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains(
            "--join-timeout 2 s passed with 1 of 5 agents joined: missing rank(s) 0-1, 3-4"
        ),
        "{err}"
    );
    // The join file goes with the wait, and the joined agent with the command.
    assert!(!file.exists());
    let (code, e) = agent_exit(joined, PATIENCE);
    assert_eq!(code, Some(0), "{e}");
}

#[test]
fn bad_join_input_is_refused_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    let fp = "ab".repeat(32);
    let join_fp = format!("iofleet://127.0.0.1:1/{fp}");
    for (args, env, says) in [
        (
            vec![
                "run",
                "--duration",
                "1s",
                "--listen",
                "nowhere",
                "--expect",
                "2",
            ],
            None,
            "--listen \"nowhere\"",
        ),
        (
            vec!["run", "--duration", "1s", "--listen", "127.0.0.1:0"],
            None,
            "--expect",
        ),
        (
            vec!["run", "--duration", "1s", "--expect", "2"],
            None,
            "--listen",
        ),
        (
            vec![
                "run",
                "--duration",
                "1s",
                "--listen",
                "127.0.0.1:0",
                "--expect",
                "0",
            ],
            None,
            "--expect",
        ),
        (
            vec!["agent", "--join", "http://x:1/ab"],
            None,
            "--join: \"http://x:1/ab\" is not a join address",
        ),
        (
            vec!["agent", "--join-file", "/nonexistent/j"],
            None,
            "--join-file: cannot read the join file",
        ),
        (
            vec!["agent", "--rank", "3"],
            None,
            "--rank, --target, --agents, --replay and --replay-below are for an agent that joins",
        ),
        (
            vec!["agent", "--replay-below"],
            None,
            "--rank, --target, --agents, --replay and --replay-below are for an agent that joins",
        ),
        (
            vec!["agent", "--agents", "2"],
            None,
            "--rank, --target, --agents, --replay and --replay-below are for an agent that joins",
        ),
        (vec!["agent", "--agents", "0"], None, "--agents"),
        (
            vec![
                "agent",
                "--join",
                &join_fp,
                "--rank",
                "4294967295",
                "--agents",
                "2",
            ],
            None,
            "--agents 2: rank 4294967295 × 2 is past the largest rank",
        ),
        (
            vec!["agent", "--join", &format!("iofleet://127.0.0.1:1/{fp}")],
            None,
            "IOFLEET_JOIN_TOKEN",
        ),
        (
            vec!["agent", "--join", &format!("iofleet://127.0.0.1:1/{fp}")],
            Some(("OMPI_COMM_WORLD_RANK", "first")),
            "OMPI_COMM_WORLD_RANK=\"first\"",
        ),
    ] {
        let mut c = bin();
        c.current_dir(d.path())
            .args(&args)
            .env("IOFLEET_JOIN_TOKEN", "t");
        if args.len() == 3 && args[1] == "--join" && env.is_none() {
            c.env_remove("IOFLEET_JOIN_TOKEN");
        }
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", common::stderr(&o));
        assert!(
            common::stderr(&o).contains(says),
            "{args:?}: {}",
            common::stderr(&o)
        );
    }
    // A wrong token is refused by the controller, and the agent says so (exit 2).
    let c = Controller::start(
        d.path(),
        &["run", "--engine", "null", "--duration", "1s"],
        1,
    );
    let (addr, _) = c.join_address();
    let o = bin()
        .args(["agent", "--join", &addr.to_string()])
        .env("IOFLEET_JOIN_TOKEN", "0".repeat(64))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o)
            .contains("the controller refused this agent: the join token is not this command's"),
        "{}",
        common::stderr(&o)
    );
    // The right token on stdin (--token-file -) joins.
    let mut a = bin()
        .args(["agent", "--join", &addr.to_string(), "--token-file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let token = JoinFile::read(&c.join_file).unwrap().token;
    a.stdin.take().unwrap().write_all(token.as_bytes()).unwrap();
    let (code, out, err) = c.finish();
    assert_eq!(code, Some(0), "{err}\n{out}");
    let (code, e) = agent_exit(a, PATIENCE);
    assert_eq!(code, Some(0), "{e}");
}

#[test]
fn a_dry_run_plans_on_the_ranks_expected_and_opens_nothing() {
    let d = tempfile::tempdir().unwrap();
    let join_file = d.path().join("j.json");
    let o = run_in(
        d.path(),
        &[
            "run",
            "--dry-run",
            "--workers",
            "3",
            "--listen",
            "127.0.0.1:0",
            "--expect",
            "3",
            "--join-file",
            join_file.to_str().unwrap(),
            "--target",
            "/srv/io",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let out = common::stdout(&o);
    for r in 0..3 {
        assert!(
            out.contains(&format!("host rank-{r} (the agent that joins as rank {r})")),
            "{out}"
        );
        assert!(out.contains(&format!("/srv/io/rank-{r}")), "{out}");
    }
    assert!(!join_file.exists());
}

/// A free TCP port on the loopback (bound and let go: Slurm's daemons take port numbers,
/// not sockets).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A one-node Slurm cluster on this machine for the test's life: munged, slurmctld and
/// slurmd started here with a configuration, key and state of their own (in a temporary
/// directory, on free ports), stopped when dropped.
struct Slurm {
    dir: tempfile::TempDir,
    daemons: Vec<Child>,
}

impl Slurm {
    fn start() -> Slurm {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().to_path_buf();
        let p = |name: &str| base.join(name).to_string_lossy().into_owned();
        for sub in ["state", "spool", "munge"] {
            std::fs::create_dir_all(p(sub)).unwrap();
        }
        let ok = Command::new("mungekey")
            .args(["-c", "-k", &p("munge/munge.key")])
            .status()
            .unwrap();
        assert!(ok.success(), "mungekey");
        // The node is named for this machine (its name up to the first dot, as Slurm
        // names nodes), and slurmd is told so rather than left to guess.
        let full = iofleet_fleet::sys::hostname();
        let host = full.split('.').next().unwrap_or(&full).to_string();
        // As many CPUs as the machine has: fewer configured than found is fine, more
        // would drain the node.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let conf = format!(
            "ClusterName=iofleet-test\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort={}\nSlurmdPort={}\n\
             AuthType=auth/munge\nAuthInfo=socket={}\nMpiDefault=none\nProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\nReturnToService=2\nSlurmctldPidFile={}\nSlurmdPidFile={}\n\
             SlurmdSpoolDir={}\nStateSaveLocation={}\nSlurmUser=root\nSlurmdUser=root\n\
             SchedulerType=sched/builtin\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n\
             JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n\
             JobAcctGatherType=jobacct_gather/none\nSlurmctldLogFile={}\nSlurmdLogFile={}\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN\n\
             PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:32\n",
            free_port(),
            free_port(),
            p("munge/socket"),
            p("slurmctld.pid"),
            p("slurmd.pid"),
            p("spool"),
            p("state"),
            p("slurmctld.log"),
            p("slurmd.log"),
        );
        std::fs::write(p("slurm.conf"), conf).unwrap();
        let spawn = |c: &mut Command| {
            c.stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        };
        let mut s = Slurm {
            daemons: Vec::new(),
            dir,
        };
        s.daemons.push(spawn(Command::new("munged").args([
            "-F",
            "--socket",
            &p("munge/socket"),
            "--key-file",
            &p("munge/munge.key"),
            "--log-file",
            &p("munge/munged.log"),
            "--pid-file",
            &p("munge/munged.pid"),
            "--seed-file",
            &p("munge/seed"),
        ])));
        s.daemons.push(spawn(Command::new("slurmctld").args([
            "-D",
            "-f",
            &p("slurm.conf"),
        ])));
        s.daemons.push(spawn(Command::new("slurmd").args([
            "-D",
            "-N",
            &host,
            "-f",
            &p("slurm.conf"),
        ])));
        let t0 = Instant::now();
        loop {
            let o = s
                .command("sinfo")
                .args(["-h", "-o", "%t"])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&o.stdout).trim() == "idle" {
                return s;
            }
            assert!(
                t0.elapsed() < PATIENCE,
                "the Slurm node never became idle: {}",
                std::fs::read_to_string(p("slurmctld.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A Slurm client command for this cluster.
    fn command(&self, name: &str) -> Command {
        let mut c = Command::new(name);
        c.env("SLURM_CONF", self.dir.path().join("slurm.conf"));
        c
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for d in self.daemons.iter_mut().rev() {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

#[test]
fn srun_starts_sixteen_agents_that_join_with_slurms_ranks() {
    let test = "srun_starts_sixteen_agents_that_join_with_slurms_ranks";
    if !common::need::need(
        test,
        &["root", "srun", "slurmctld", "slurmd", "munged", "mungekey"],
    ) {
        return;
    }
    let slurm = Slurm::start();
    let d = tempfile::tempdir().unwrap();
    launched_run(d.path(), 16, "SLURM_PROCID", |file, _, _| {
        let mut srun = slurm.command("srun");
        srun.args(["--overcommit", "-n", "16"]);
        agents_by(srun, file)
    });
}

/// One run of `n` agents that `launch` starts (given the join file, address and token),
/// one worker each at 50 I/Os a second of simulated time for 1 s: exit 0, the hosts in
/// rank order with exact counts, ranks from `ranks_from`, a start skew, and the
/// launcher itself exits 0.
fn launched_run(
    d: &Path,
    n: u32,
    ranks_from: &str,
    launch: impl FnOnce(&Path, &JoinAddress, &str) -> Child,
) {
    let even = even_profile(d, n, "1s");
    let c = Controller::start(
        d,
        &[
            "run",
            &even,
            "--engine",
            "null-sim:fixed:50us",
            "--rate",
            "50",
            "--json",
            "--no-save",
        ],
        n,
    );
    let (addr, token) = c.join_address();
    let launcher = launch(&c.join_file, &addr, &token);
    let (code, out, err) = c.finish();
    assert_eq!(code, Some(0), "{ranks_from}: {err}");
    assert!(
        err.contains(&format!(
            "{n} agent(s) joined from 1 host(s); ranks from {ranks_from} ({n})"
        )),
        "{err}"
    );
    let v = json(&out, &err);
    assert_eq!(
        v["summary"]["all"]["ios"],
        u64::from(n) * 50,
        "{}",
        v["summary"]
    );
    let machine = iofleet_fleet::sys::hostname();
    let want: Vec<(String, u64)> = (0..n).map(|r| (format!("{machine}-r{r}"), 50)).collect();
    assert_eq!(hosts(&v), want);
    let skew = v["run"]["start_skew_ms"].as_f64();
    assert!(skew.is_some_and(|s| s >= 0.0), "{}", v["run"]);
    let (code, e) = agent_exit(launcher, PATIENCE);
    assert_eq!(code, Some(0), "{ranks_from}: the launcher: {e}");
}

#[test]
fn pdsh_an_ssh_loop_and_ansible_start_agents_that_join() {
    let test = "pdsh_an_ssh_loop_and_ansible_start_agents_that_join";
    if !common::need::need(test, &["pdsh", "ansible"]) {
        return;
    }
    let _one = sshd::one_at_a_time();
    let Some(cluster) = Cluster::start(3) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let bin_path = env!("CARGO_BIN_EXE_iofleet");
    let cfg = cluster.ssh_config.display().to_string();
    let aliases = cluster.aliases();
    // pdsh over ssh: no rank variable, the controller numbers the agents.
    launched_run(d.path(), 3, "the controller", |file, _, _| {
        Command::new("pdsh")
            .args(["-R", "ssh", "-w", &aliases.join(",")])
            .env("PDSH_SSH_ARGS", format!("-F {cfg} -oBatchMode=yes %h"))
            .arg(format!("{bin_path} agent --join-file {}", file.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    });
    // A plain ssh loop, the token on each agent's stdin and a rank of our choosing.
    launched_run(d.path(), 3, "IOFLEET_RANK", |_, addr, token| {
        let script = aliases
            .iter()
            .enumerate()
            .map(|(r, h)| {
                format!(
                    "printf %s \"$TOKEN\" | ssh -F {cfg} -oBatchMode=yes {h} IOFLEET_RANK={r} {bin_path} agent --join {addr} --token-file - &"
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        Command::new("sh")
            .args(["-c", &format!("{script}\nwait")])
            .env("TOKEN", token)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    });
    // Ansible, ad hoc, over the same ssh.
    let inv = d.path().join("hosts.ini");
    std::fs::write(
        &inv,
        format!(
            "[fleet]\n{}\n[fleet:vars]\nansible_ssh_common_args='-F {cfg}'\nansible_python_interpreter=/usr/bin/python3\n",
            aliases.join("\n")
        ),
    )
    .unwrap();
    launched_run(d.path(), 3, "the controller", |file, _, _| {
        Command::new("ansible")
            .args([
                "fleet",
                "-i",
                inv.to_str().unwrap(),
                "-f",
                "3",
                "-m",
                "shell",
                "-a",
            ])
            .arg(format!("{bin_path} agent --join-file {}", file.display()))
            .env("ANSIBLE_HOST_KEY_CHECKING", "False")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    });
}

/// Relays (`--relay-fanout`): ranks 0, 3 and 6 relay for the two ranks after each,
/// which the port sends to them. Each relay merges the intervals of the hosts below it
/// and its own (or, `--relay-dedicated`, runs none of its own), and the counts are the
/// exact ones of a flat fleet (simulated time at a fixed rate), as is the same run in
/// this process, latencies included.
#[test]
fn relays_run_the_hosts_below_them_and_the_merge_is_exact() {
    let d = tempfile::tempdir().unwrap();
    for (dedicated, workers) in [(false, 9u32), (true, 6)] {
        let even = even_profile(d.path(), workers, "1s");
        let shape = rated_run(&even);
        let mut args = shape.to_vec();
        args.extend(["--relay-fanout", "2"]);
        if dedicated {
            args.push("--relay-dedicated");
        }
        let c = Controller::start(d.path(), &args, 9);
        let agents: Vec<Child> = [8u32, 4, 0, 1, 6, 5, 2, 7, 3]
            .iter()
            .map(|r| agent(&c.join_file, &["--rank", &r.to_string()], &[]))
            .collect();
        let (code, out, err) = c.finish();
        assert_eq!(code, Some(0), "{err}");
        assert!(
            err.contains("3 relay(s) joined; the 6 agent(s) below them join the relays"),
            "{err}"
        );
        let v = json(&out, &err);
        // One worker on each host that runs any, 100 I/Os a second × 1 s each.
        assert_eq!(
            v["summary"]["all"]["ios"],
            100 * workers as u64,
            "{}",
            v["summary"]
        );
        let want: Vec<(String, u64)> = ranked_hosts(9, 100)
            .into_iter()
            .enumerate()
            .map(|(r, (name, ios))| (name, if dedicated && r % 3 == 0 { 0 } else { ios }))
            .collect();
        assert_eq!(hosts(&v), want, "dedicated {dedicated}");
        // Each host has its interval rows, summing to its total.
        for (h, (name, ios)) in want.iter().enumerate() {
            let rows = &v["host_intervals"][h];
            assert_eq!(rows["name"], name.as_str());
            let sum: u64 = rows["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["all"]["ios"].as_u64().unwrap())
                .sum();
            assert_eq!(sum, *ios, "{name}: {rows}");
        }
        let on: Vec<&str> = v["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["host"].as_str().unwrap())
            .collect();
        let with: Vec<&str> = want
            .iter()
            .filter(|(_, ios)| *ios > 0)
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(on, with);
        let said = v["notices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("3 relay(s) ("));
        assert_eq!(said, dedicated, "{}", v["notices"]);
        all_exit_0(agents);
        let o = run_in(d.path(), &shape);
        assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
        let here: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(here["summary"]["all"], v["summary"]["all"]);
    }
}

/// A relay killed mid-run: the hosts below it are lost with it, at the same instant;
/// the other relay's hosts run to the end, and the agents below the killed relay stop
/// by themselves.
#[test]
fn a_lost_relay_takes_the_hosts_below_it_at_the_same_instant() {
    let d = tempfile::tempdir().unwrap();
    let machine = iofleet_fleet::sys::hostname();
    let (w, _, mut agents) = watched_run(
        d.path(),
        6,
        &["--host-timeout", "3s", "--relay-fanout", "2"],
    );
    w.wait_for("iofleet_interval_index", |i| i >= 2.0, PATIENCE);
    signal(agents[3].id(), "-KILL");
    let o = w.finish();
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "host {machine}-r3 lost: its agent's connection closed"
        )),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let lost: Vec<(usize, f64)> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter_map(|(i, h)| h["lost_at_s"].as_f64().map(|t| (i, t)))
        .collect();
    assert_eq!(
        lost.iter().map(|l| l.0).collect::<Vec<_>>(),
        vec![3, 4, 5],
        "{}",
        v["hosts"]
    );
    assert!(lost.iter().all(|l| l.1 == lost[0].1), "{lost:?}");
    // The hosts of the other relay ran the whole 8 s; the lost ones did not.
    let ios: Vec<u64> = hosts(&v).iter().map(|h| h.1).collect();
    assert!(ios[1] > 0 && ios[2] > 0, "{ios:?}");
    let last = v["intervals"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["hosts_lost"], 3, "{last}");
    let _ = agents.remove(3).wait();
    for (r, a) in agents.into_iter().enumerate() {
        // Below the killed relay: their relay went away; they stop by themselves.
        let (code, e) = agent_exit(a, PATIENCE);
        if r < 3 {
            assert_eq!(code, Some(0), "rank {r}: {e}");
        }
    }
}

/// Run `id` of the store `db` recomputed from what it stored (`results export`).
fn stored_export(db: &Path, id: &str) -> Value {
    let o = bin()
        .args(["results", "export", id, "--format", "json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The recomputed result equals the live one, part by part (for a readable failure),
/// then whole.
fn assert_recomputed_as_live(rec: &Value, live: &Value) {
    for part in [
        "summary",
        "streams",
        "workers",
        "hosts",
        "groups",
        "intervals",
        "host_intervals",
        "group_intervals",
    ] {
        assert_eq!(rec[part], live[part], "{part}");
    }
    assert_eq!(rec, live);
}

/// A relayed run saved to the store: nothing of the hosts below the relays was
/// recorded per (worker, disk) per interval, yet `results export` recomputes, from what
/// the relays sent (the groups' interval samples, each host's briefs, the relays'
/// totals), the live result figure for figure: fleet, streams, workers, hosts, groups
/// and every interval row.
#[test]
fn a_relayed_run_in_the_store_recomputes_as_it_ran() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    let db_arg = db.to_string_lossy().into_owned();
    // A worker on every host: a relay whose hosts all have no work gets no job, and the
    // agents below it are not waited for (docs/fleet.md "Relays").
    let even = even_profile(d.path(), 9, "1s");
    let mut args = rated_run(&even).to_vec();
    args.retain(|a| *a != "--no-save");
    args.extend(["--db", &db_arg, "--relay-fanout", "2"]);
    let c = Controller::start(d.path(), &args, 9);
    let agents: Vec<Child> = (0..9u32)
        .map(|r| agent(&c.join_file, &["--rank", &r.to_string()], &[]))
        .collect();
    let (code, out, err) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    all_exit_0(agents);
    let live = json(&out, &err);
    assert_eq!(live["summary"]["all"]["ios"], 900, "{}", live["summary"]);
    let id = live["stored"]["id"].as_str().expect("saved");
    assert_recomputed_as_live(&stored_export(&db, id), &live);
}

/// A relay killed mid-run: what it had sent of its hosts' intervals is stored, and
/// what it measured before its totals could come is stored per group (the fleet and
/// its group count it, the workers below it cannot); the recomputed result is still
/// the live one, figure for figure.
#[test]
fn a_lost_relay_s_run_in_the_store_recomputes_as_it_ran() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    let db_arg = db.to_string_lossy().into_owned();
    let (w, _, mut agents) = watched_run_saving(
        d.path(),
        6,
        &["--host-timeout", "3s", "--relay-fanout", "2"],
        &["--db", &db_arg],
    );
    w.wait_for("iofleet_interval_index", |i| i >= 2.0, PATIENCE);
    signal(agents[3].id(), "-KILL");
    let o = w.finish();
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    let live: Value = serde_json::from_slice(&o.stdout).unwrap();
    let _ = agents.remove(3).wait();
    for a in agents {
        let _ = agent_exit(a, PATIENCE);
    }
    // The lost relay's measured intervals count in the fleet, not in its workers.
    let workers: u64 = live["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["all"]["ios"].as_u64().unwrap())
        .sum();
    let fleet = live["summary"]["all"]["ios"].as_u64().unwrap();
    assert!(workers < fleet, "workers {workers}, fleet {fleet}");
    let id = live["stored"]["id"].as_str().expect("saved");
    assert_recomputed_as_live(&stored_export(&db, id), &live);
}

/// Relays need each agent's rank (the port must know where to send it), take no
/// fan-out of 0, and refuse what they cannot pass on, each naming the flag.
#[test]
fn relays_refuse_what_they_cannot_do_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            vec![
                "run",
                "--duration",
                "1s",
                "--listen",
                "127.0.0.1:0",
                "--expect",
                "3",
                "--relay-fanout",
                "0",
            ],
            "--relay-fanout",
        ),
        (
            vec![
                "run",
                "--duration",
                "1s",
                "--listen",
                "127.0.0.1:0",
                "--relay-fanout",
                "2",
            ],
            "--expect",
        ),
        (
            vec![
                "run",
                "--duration",
                "1s",
                "--listen",
                "127.0.0.1:0",
                "--expect",
                "3",
                "--relay-fanout",
                "2",
                "--drop-caches",
                "local",
            ],
            "--drop-caches: not with --relay-fanout",
        ),
    ] {
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", common::stderr(&o));
        assert!(
            common::stderr(&o).contains(says),
            "{args:?}: {}",
            common::stderr(&o)
        );
    }
    // An agent without a rank is refused, saying why; the fleet goes on waiting.
    let even = even_profile(d.path(), 2, "1s");
    let mut args = rated_run(&even).to_vec();
    args.extend(["--relay-fanout", "2"]);
    let c = Controller::start(d.path(), &args, 3);
    let (code, e) = agent_exit(agent(&c.join_file, &[], &[]), PATIENCE);
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.contains("no rank: with --relay-fanout 2 every agent needs its rank"),
        "{e}"
    );
    let agents: Vec<Child> = (0..3u32)
        .map(|r| agent(&c.join_file, &["--rank", &r.to_string()], &[]))
        .collect();
    let (code, out, err) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json(&out, &err)["summary"]["all"]["ios"], 200);
    all_exit_0(agents);
}

/// The benchmarks' agents (`--replay`, `--replay-below`): agents that run no I/O and
/// send one fixed sample per worker each interval (the job's rate, latencies 50–400
/// µs), and a relay that sends what its agents below would without them, give the
/// same exact counts and the same latency figures.
#[test]
fn replaying_agents_and_a_replaying_relay_send_what_replaying_agents_would() {
    let d = tempfile::tempdir().unwrap();
    let even = even_profile(d.path(), 2, "1s");
    let shape = rated_run(&even);
    // Two agents replaying, flat.
    let c = Controller::start(d.path(), &shape, 2);
    let agents: Vec<Child> = (0..2u32)
        .map(|r| agent(&c.join_file, &["--rank", &r.to_string(), "--replay"], &[]))
        .collect();
    let (code, out, err) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    let flat = json(&out, &err);
    all_exit_0(agents);
    // 100 I/Os a second per worker over two intervals of 0.5 s.
    assert_eq!(flat["summary"]["all"]["ios"], 200, "{}", flat["summary"]);
    let lat = &flat["summary"]["all"]["latency_us"];
    assert!((lat["min"].as_f64().unwrap() - 50.0).abs() < 0.1, "{lat}");
    assert!((lat["max"].as_f64().unwrap() - 400.0).abs() < 0.5, "{lat}");
    // A dedicated relay with the two below it, replaying them without them.
    let mut args = shape.to_vec();
    args.extend(["--relay-fanout", "2", "--relay-dedicated"]);
    let c = Controller::start(d.path(), &args, 3);
    let relay = agent(&c.join_file, &["--rank", "0", "--replay-below"], &[]);
    let (code, out, err) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    let tree = json(&out, &err);
    all_exit_0(vec![relay]);
    assert_eq!(tree["summary"]["all"], flat["summary"]["all"]);
    assert_eq!(tree["intervals"][1]["ios"], flat["intervals"][1]["ios"]);
    let names: Vec<String> = hosts(&tree).into_iter().map(|h| h.0).collect();
    assert_eq!(names[1..], ["virtual-r1", "virtual-r2"]);
}
