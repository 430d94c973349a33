//! A fleet across hosts: one `iofleet agent` per host, started over the system OpenSSH
//! client in batch mode (so `~/.ssh/config`, ssh-agent, ProxyJump and known_hosts all
//! apply), speaking the protocol on the session's stdin/stdout.
//!
//! Sequence: provision the binary where needed (copied when missing or different,
//! verified by SHA-256, removed afterwards if this run copied it) → hello (versions
//! checked) → clock offset from round trips → job → every host prepares and reports
//! ready → one start instant, translated to each host's clock → intervals stream back and
//! are merged by the same collector as a local run → stop (at the end, on Ctrl-C, or
//! when this process's stdin closes on the agents). A host whose connection dies is
//! marked lost at that time and the run goes on with the others.

use std::io::{BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{unbounded, Receiver, Sender};
use iofleet_profile::{combine, GroupPlan};
use iofleet_stats::result::{RunInfo, RunResult};
use sha2::{Digest, Sha256};

use crate::collect::{collect, summarize, CollectSpec, HostFacts};
use crate::controller::FleetError;
use crate::inventory::{place, HostSpec, Transport};
use crate::observer::Observer;
use crate::protocol::{
    check_hello, mono_ns, read_frame, read_magic, write_frame, AgentJob, Clock, Frame, Hello,
};
use crate::sys;
use crate::thread::{Msg, Timeline};

/// Clock round trips per host; the one with the shortest round trip sets the offset.
const CLOCK_SAMPLES: u32 = 8;

/// Run options that apply to every host.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// "auto", "io_uring", "psync" or "null".
    pub engine: String,
    pub direct: bool,
    pub destroy_data: bool,
    pub disk_size_from_cli: bool,
    pub seed: u64,
    pub cleanup: bool,
    /// A host silent this long after the run's end (or a stop) is marked lost.
    pub host_timeout: Duration,
}

/// An open session to one host's agent.
struct Conn {
    name: String,
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    stdout: Option<BufReader<std::process::ChildStdout>>,
    stderr: Arc<Mutex<String>>,
    /// Clock offset: agent clock − controller clock, ns.
    offset_ns: i64,
    rtt_ns: u64,
    /// Remote binary this run copied (removed at the end).
    copied: Option<String>,
}

fn ssh(host: &HostSpec) -> Command {
    let mut c = Command::new("ssh");
    // Keep-alives make a partitioned or frozen host close its session (and be marked
    // lost) instead of leaving the run waiting on a connection that never ends.
    c.args(&host.ssh_options).args([
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=15",
        "-o",
        "ServerAliveInterval=5",
        "-o",
        "ServerAliveCountMax=3",
        "-T",
        "--",
        &host.destination,
    ]);
    c
}

/// Quote a word for the remote POSIX shell.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

fn host_err(host: &HostSpec, what: impl std::fmt::Display) -> FleetError {
    FleetError::Setup(format!("host {} ({}): {what}", host.name, host.destination))
}

/// SHA-256 of this executable, hex.
fn self_digest() -> Result<(std::path::PathBuf, String), FleetError> {
    let exe = std::env::current_exe()
        .map_err(|e| FleetError::Setup(format!("cannot find the iofleet binary: {e}")))?;
    let bytes = std::fs::read(&exe)
        .map_err(|e| FleetError::Setup(format!("cannot read {}: {e}", exe.display())))?;
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok((exe, hex))
}

/// Make sure the host has this exact binary; returns the remote command path and
/// whether this run copied it.
fn provision(
    host: &HostSpec,
    exe: &std::path::Path,
    digest: &str,
) -> Result<(String, bool), FleetError> {
    let name = format!("iofleet-{}", &digest[..16]);
    let check = format!(
        "p=\"$HOME/.cache/iofleet/{name}\"; if [ -x \"$p\" ] && [ \"$(sha256sum \"$p\" 2>/dev/null | cut -d' ' -f1)\" = \"{digest}\" ]; then echo present; else echo missing; fi"
    );
    let out = ssh(host)
        .arg(check)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| host_err(host, format!("cannot run ssh: {e}")))?;
    if !out.status.success() {
        return Err(host_err(
            host,
            format!(
                "ssh failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    let path = format!("\"$HOME/.cache/iofleet/{name}\"");
    if String::from_utf8_lossy(&out.stdout).trim() == "present" {
        return Ok((path, false));
    }
    let upload = format!(
        "d=\"$HOME/.cache/iofleet\"; mkdir -p \"$d\" && t=\"$d/.upload.$$\" && cat > \"$t\" && chmod 755 \"$t\" && mv -f \"$t\" \"$d/{name}\" && sha256sum \"$d/{name}\""
    );
    let mut child = ssh(host)
        .arg(upload)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| host_err(host, format!("cannot run ssh: {e}")))?;
    let bytes = std::fs::read(exe)
        .map_err(|e| FleetError::Setup(format!("cannot read {}: {e}", exe.display())))?;
    let written = {
        let mut stdin = child.stdin.take().expect("piped");
        stdin.write_all(&bytes)
    };
    // Wait in every case: the remote side's message says why a copy failed.
    let out = child
        .wait_with_output()
        .map_err(|e| host_err(host, format!("copying iofleet failed: {e}")))?;
    if let Err(e) = written {
        return Err(host_err(
            host,
            format!(
                "copying iofleet failed: {e}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    let echoed = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !echoed.starts_with(digest) {
        return Err(host_err(
            host,
            format!(
                "copying iofleet failed verification (checksum {}): {}",
                echoed.split_whitespace().next().unwrap_or("none"),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    Ok((path, true))
}

fn connect(
    host: &HostSpec,
    job: AgentJob,
    exe: &std::path::Path,
    digest: &str,
) -> Result<Conn, FleetError> {
    let (mut cmd, copied) = match host.transport {
        Transport::Local => {
            let mut c = Command::new(
                host.iofleet_path
                    .as_deref()
                    .map_or(exe, std::path::Path::new),
            );
            c.arg("agent");
            (c, None)
        }
        Transport::Ssh => {
            let (path, copied) = match &host.iofleet_path {
                Some(p) => (shell_quote(p), false),
                None => provision(host, exe, digest)?,
            };
            let mut c = ssh(host);
            c.arg(format!("{path} agent"));
            (c, copied.then_some(path))
        }
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| host_err(host, format!("cannot start the agent: {e}")))?;
    let stderr = Arc::new(Mutex::new(String::new()));
    {
        let mut pipe = child.stderr.take().expect("piped");
        let buf = stderr.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            buf.lock().unwrap_or_else(|p| p.into_inner()).push_str(&s);
        });
    }
    let stdin = Arc::new(Mutex::new(child.stdin.take()));
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut conn = Conn {
        name: host.name.clone(),
        child,
        stdin,
        stdout: None,
        stderr,
        offset_ns: 0,
        rtt_ns: 0,
        copied,
    };
    let died = |conn: &mut Conn, what: String| {
        let _ = conn.child.kill();
        let _ = conn.child.wait();
        std::thread::sleep(Duration::from_millis(50));
        let err = conn
            .stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        host_err(
            host,
            format!(
                "{what}{}",
                if err.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", err.trim())
                }
            ),
        )
    };
    if let Err(e) = read_magic(&mut stdout) {
        return Err(died(&mut conn, format!("the agent did not start ({e})")));
    }
    let theirs = match read_frame(&mut stdout) {
        Ok(Some(Frame::Hello(h))) => h,
        other => {
            return Err(died(
                &mut conn,
                format!("no hello from the agent ({other:?})"),
            ))
        }
    };
    let ours = Hello::ours();
    if let Err(e) = check_hello(&ours, &theirs, &format!("host {}", host.name)) {
        let _ = conn.child.kill();
        let _ = conn.child.wait();
        return Err(FleetError::Input(e));
    }
    let send = |conn: &Conn, f: &Frame| send_to(&conn.stdin, f);
    if send(&conn, &Frame::Hello(ours)).is_err() {
        return Err(died(&mut conn, "the agent closed the session".into()));
    }
    // Clock offset, NTP style: offset = t_agent − (t_sent + t_received) / 2, from the
    // round trip with the smallest delay.
    let mut best: Option<(u64, i64)> = None;
    for seq in 0..CLOCK_SAMPLES {
        let t0 = mono_ns();
        if send(&conn, &Frame::Ping(Clock { seq, t_ns: t0 })).is_err() {
            return Err(died(&mut conn, "the agent closed the session".into()));
        }
        match read_frame(&mut stdout) {
            Ok(Some(Frame::Pong(c))) if c.seq == seq => {
                let t1 = mono_ns();
                let rtt = t1 - t0;
                let offset = c.t_ns as i64 - ((t0 as i128 + t1 as i128) / 2) as i64;
                if best.is_none_or(|(r, _)| rtt < r) {
                    best = Some((rtt, offset));
                }
            }
            other => {
                if let Ok(Some(Frame::Error(f))) = &other {
                    let _ = conn.child.wait();
                    return Err(if f.input {
                        FleetError::Input(format!("host {}: {}", host.name, f.message))
                    } else {
                        host_err(host, &f.message)
                    });
                }
                return Err(died(
                    &mut conn,
                    format!("clock exchange failed ({other:?})"),
                ));
            }
        }
    }
    let (rtt, offset) = best.expect("at least one sample");
    conn.rtt_ns = rtt;
    conn.offset_ns = offset;
    if send(&conn, &Frame::Job(Box::new(job))).is_err() {
        return Err(died(&mut conn, "the agent closed the session".into()));
    }
    conn.stdout = Some(stdout);
    Ok(conn)
}

/// What reader threads report.
enum Event {
    Frame(usize, Frame),
    Closed(usize),
}

fn spawn_reader(h: usize, mut r: BufReader<std::process::ChildStdout>, tx: Sender<Event>) {
    std::thread::spawn(move || loop {
        match read_frame(&mut r) {
            Ok(Some(f)) => {
                let done = matches!(f, Frame::Done(_) | Frame::Error(_));
                if tx.send(Event::Frame(h, f)).is_err() || done {
                    return;
                }
            }
            Ok(None) | Err(_) => {
                let _ = tx.send(Event::Closed(h));
                return;
            }
        }
    });
}

type Stdin = Arc<Mutex<Option<ChildStdin>>>;

/// Write one frame to an agent (an error once its stdin has been closed).
fn send_to(stdin: &Stdin, f: &Frame) -> std::io::Result<()> {
    let mut w = stdin.lock().unwrap_or_else(|p| p.into_inner());
    match w.as_mut() {
        Some(pipe) => write_frame(pipe, f),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "closed",
        )),
    }
}

fn send_all(conns: &[Conn], f: &Frame) {
    for c in conns {
        let _ = send_to(&c.stdin, f);
    }
}

fn shutdown(conns: &mut [Conn], hosts: &[HostSpec]) {
    send_all(conns, &Frame::Stop);
    for c in conns.iter() {
        // Closing stdin ends the agent even if it missed the Stop frame.
        c.stdin.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for c in conns.iter_mut() {
        loop {
            match c.child.try_wait() {
                Ok(Some(_)) => break,
                _ if Instant::now() >= deadline => {
                    let _ = c.child.kill();
                    let _ = c.child.wait();
                    break;
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
    for (c, h) in conns.iter().zip(hosts) {
        if let Some(path) = &c.copied {
            let _ = ssh(h)
                .arg(format!(
                    "rm -f {path}; rmdir \"$HOME/.cache/iofleet\" 2>/dev/null; true"
                ))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Run `groups` across `hosts`: the groups' workers (in group order) are placed over
/// the hosts, so a host may serve workers of several groups.
pub fn run_remote(
    groups: &[GroupPlan],
    hosts: &[HostSpec],
    opts: &RemoteOptions,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<RunResult, FleetError> {
    if groups.is_empty() {
        return Err(FleetError::Input(
            "a run needs at least one worker group".into(),
        ));
    }
    // When every host pins its worker count, the pins are the fleet.
    let mut notices = Vec::new();
    let mut owned = groups.to_vec();
    let planned: u32 = owned.iter().map(|g| g.plan.fleet.workers).sum();
    let pinned: u32 = hosts.iter().filter_map(|h| h.workers).sum();
    if hosts.iter().all(|h| h.workers.is_some()) && pinned != planned {
        if owned.len() > 1 {
            return Err(FleetError::Input(format!(
                "--hosts: every host pins its workers ({pinned} in all) but the groups have {planned}; make them agree"
            )));
        }
        notices.push(format!(
            "every host pins its worker count: running {pinned} workers, not the planned {planned}"
        ));
        owned[0].plan.fleet.workers = pinned;
    }
    let groups = &owned[..];
    let combined = combine(groups);
    let plan = &combined;
    let placement = place(hosts, plan.fleet.workers).map_err(FleetError::Input)?;
    let active: Vec<usize> = (0..hosts.len()).filter(|&i| placement[i].1 > 0).collect();
    for (i, h) in hosts.iter().enumerate() {
        if placement[i].1 == 0 {
            notices.push(format!(
                "host {} has no worker to run ({} workers over {} hosts)",
                h.name,
                plan.fleet.workers,
                hosts.len()
            ));
        }
    }
    let total_workers: u32 = placement.iter().map(|p| p.1).sum();
    let (exe, digest) = self_digest()?;

    // Connect to every host in parallel.
    let results: Vec<Result<Conn, FleetError>> = std::thread::scope(|s| {
        let handles: Vec<_> = active
            .iter()
            .map(|&i| {
                let (base, count) = placement[i];
                // This host's share of each group: the overlap of worker ranges.
                let share = groups
                    .iter()
                    .map(|g| {
                        let lo = g.worker_base.max(base);
                        let hi = (g.worker_base + g.plan.fleet.workers).min(base + count);
                        let mut g = g.clone();
                        g.worker_base = lo.min(base + count);
                        g.plan.fleet.workers = hi.saturating_sub(lo);
                        g
                    })
                    .collect();
                let job = AgentJob {
                    groups: share,
                    target: hosts[i].target.clone(),
                    direct: opts.direct,
                    destroy_data: opts.destroy_data,
                    disk_size_from_cli: opts.disk_size_from_cli,
                    engine: opts.engine.clone(),
                    seed: opts.seed,
                    cleanup: opts.cleanup,
                };
                let (exe, digest) = (&exe, &digest);
                s.spawn(move || connect(&hosts[i], job, exe, digest))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("connect does not panic"))
            .collect()
    });
    let mut conns = Vec::new();
    let mut first_err = None;
    for r in results {
        match r {
            Ok(c) => conns.push(c),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    let act_hosts: Vec<HostSpec> = active.iter().map(|&i| hosts[i].clone()).collect();
    if let Some(e) = first_err {
        shutdown(&mut conns, &act_hosts);
        return Err(e);
    }

    // Readers, then wait until every host has prepared.
    let (ev_tx, ev_rx) = unbounded();
    for (h, c) in conns.iter_mut().enumerate() {
        spawn_reader(h, c.stdout.take().expect("set by connect"), ev_tx.clone());
    }
    drop(ev_tx);
    let mut ready = vec![false; conns.len()];
    let mut engines: Vec<String> = vec![String::new(); conns.len()];
    while !ready.iter().all(|&r| r) {
        let ev = match ev_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(ev) => ev,
            Err(_) if stop.load(Ordering::SeqCst) => {
                shutdown(&mut conns, &act_hosts);
                return Err(FleetError::Setup(
                    "interrupted while the hosts were preparing".into(),
                ));
            }
            Err(_) => continue,
        };
        let failure = match ev {
            Event::Frame(h, Frame::Ready(r)) => {
                ready[h] = true;
                engines[h] = r.engine;
                notices.extend(
                    r.notices
                        .into_iter()
                        .map(|n| format!("{}: {n}", conns[h].name)),
                );
                None
            }
            Event::Frame(h, Frame::Error(f)) => Some(if f.input {
                FleetError::Input(format!("host {}: {}", conns[h].name, f.message))
            } else {
                host_err(&act_hosts[h], f.message)
            }),
            Event::Closed(h) => {
                let err = conns[h]
                    .stderr
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                Some(host_err(
                    &act_hosts[h],
                    format!("lost while preparing: {}", err.trim()),
                ))
            }
            Event::Frame(h, Frame::Done(d)) => Some(host_err(
                &act_hosts[h],
                format!("ended before the start: {}", d.notices.join("; ")),
            )),
            Event::Frame(..) => None,
        };
        if let Some(e) = failure {
            shutdown(&mut conns, &act_hosts);
            return Err(e);
        }
    }

    // One start instant for everyone, translated to each host's clock.
    let max_rtt = conns.iter().map(|c| c.rtt_ns).max().unwrap_or(0);
    let margin = Duration::from_millis(100) + Duration::from_nanos(max_rtt * 4);
    let epoch_ns = mono_ns() + margin.as_nanos() as u64;
    let epoch = Instant::now() + Duration::from_nanos(epoch_ns.saturating_sub(mono_ns()));
    let started_wall = SystemTime::now() + epoch.saturating_duration_since(Instant::now());
    for c in &conns {
        let agent_epoch = (epoch_ns as i64 + c.offset_ns).max(0) as u64;
        let _ = send_to(
            &c.stdin,
            &Frame::Start(crate::protocol::Start {
                epoch_ns: agent_epoch,
            }),
        );
    }

    // Route host events into the collector; forward a stop to every agent.
    let (tx, rx): (Sender<Msg>, Receiver<Msg>) = unbounded();
    let started: Arc<Mutex<Vec<Option<u64>>>> = Arc::new(Mutex::new(vec![None; conns.len()]));
    let names: Vec<String> = conns.iter().map(|c| c.name.clone()).collect();
    let stderrs: Vec<Arc<Mutex<String>>> = conns.iter().map(|c| c.stderr.clone()).collect();
    let offsets: Vec<i64> = conns.iter().map(|c| c.offset_ns).collect();
    let router_done = Arc::new(AtomicBool::new(false));
    let done_notices: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let router = {
        let started = started.clone();
        let done_notices = done_notices.clone();
        let router_done = router_done.clone();
        std::thread::spawn(move || {
            let mut finished = vec![false; names.len()];
            while let Ok(ev) = ev_rx.recv() {
                match ev {
                    Event::Frame(h, Frame::Interval(d)) => {
                        let _ = tx.send(Msg::Interval {
                            source: h as u32,
                            index: d.index,
                            samples: d.samples,
                            errors: Vec::new(),
                            stopped_at: d.stopped_at,
                        });
                    }
                    Event::Frame(h, Frame::Started(c)) => {
                        let ctrl = (c.t_ns as i64 - offsets[h]).max(0) as u64;
                        started.lock().unwrap_or_else(|p| p.into_inner())[h] = Some(ctrl);
                    }
                    Event::Frame(h, Frame::Done(d)) => {
                        finished[h] = true;
                        // Notices that arose during the run (the ones from before the
                        // start came with Ready), minus repeats.
                        {
                            let mut late = done_notices.lock().unwrap_or_else(|p| p.into_inner());
                            for n in d.notices {
                                let n = format!("{}: {n}", names[h]);
                                if !late.contains(&n) {
                                    late.push(n);
                                }
                            }
                        }
                        let _ = tx.send(Msg::Done {
                            source: h as u32,
                            end_ns: d.end_ns,
                            error: (!d.failures.is_empty()).then(|| d.failures.join("; ")),
                            errors: d.errors,
                            lost: false,
                        });
                    }
                    Event::Frame(h, Frame::Error(f)) => {
                        finished[h] = true;
                        let _ = tx.send(Msg::Done {
                            source: h as u32,
                            end_ns: mono_ns().saturating_sub(epoch_ns),
                            error: Some(f.message),
                            errors: Vec::new(),
                            lost: false,
                        });
                    }
                    Event::Closed(h) if !finished[h] => {
                        finished[h] = true;
                        let why = stderrs[h].lock().unwrap_or_else(|p| p.into_inner()).clone();
                        let _ = tx.send(Msg::Done {
                            source: h as u32,
                            end_ns: mono_ns().saturating_sub(epoch_ns),
                            error: Some(format!(
                                "host {} lost: its agent connection closed{}",
                                names[h],
                                if why.trim().is_empty() {
                                    String::new()
                                } else {
                                    format!(" ({})", why.trim())
                                }
                            )),
                            errors: Vec::new(),
                            lost: true,
                        });
                    }
                    _ => {}
                }
            }
            router_done.store(true, Ordering::SeqCst);
        })
    };
    let stopper = {
        let stop = stop.clone();
        let stdins: Vec<Stdin> = conns.iter().map(|c| c.stdin.clone()).collect();
        let router_done = router_done.clone();
        std::thread::spawn(move || {
            while !router_done.load(Ordering::SeqCst) {
                if stop.load(Ordering::SeqCst) {
                    for s in &stdins {
                        let _ = send_to(s, &Frame::Stop);
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };

    let timeline = Timeline::new(
        plan.timing.warmup,
        plan.timing.duration,
        plan.timing.interval,
    );
    let mut full = plan.clone();
    full.fleet.workers = total_workers;
    let plan_value = crate::controller::plan_json(&full, groups);
    if engines.iter().any(|e| e != &engines[0]) {
        let list: Vec<String> = conns
            .iter()
            .zip(&engines)
            .map(|(c, e)| format!("{} {e}", c.name))
            .collect();
        notices.push(format!("hosts run different engines: {}", list.join(", ")));
    }
    let info = RunInfo {
        profile: plan.name.clone(),
        description: plan.description.clone(),
        engine: engines[0].clone(),
        started_at: sys::rfc3339(
            started_wall
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        ),
        duration_s: 0.0,
        warmup_s: plan.timing.warmup.as_secs_f64(),
        interval_s: plan.timing.interval.as_secs_f64(),
        interrupted: false,
        direct: opts.direct,
        target: "per host (see hosts)".into(),
        hostname: sys::hostname(),
        iofleet_version: env!("CARGO_PKG_VERSION").into(),
        start_skew_ms: 0.0,
        plan: plan_value,
    };
    observer.started(&info);
    let mut worker_host = Vec::new();
    for (h, &i) in active.iter().enumerate() {
        worker_host.extend(std::iter::repeat_n(h, placement[i].1 as usize));
    }
    let spec = CollectSpec {
        plan,
        timeline: &timeline,
        worker_base: 0,
        groups: crate::controller::group_ranges(groups),
        workers: total_workers as usize,
        source_names: conns.iter().map(|c| format!("host {}", c.name)).collect(),
        hosts: conns.iter().map(|c| c.name.clone()).collect(),
        worker_host,
        source_host: (0..conns.len()).collect(),
        epoch,
        silence_grace: Some(opts.host_timeout),
    };
    let collected = collect(&rx, &spec, observer, &stop);
    shutdown(&mut conns, &act_hosts);
    let _ = router.join();
    let _ = stopper.join();

    let starts = started.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let late: Vec<Option<f64>> = starts
        .iter()
        .map(|s| s.map(|t| (t as f64 - epoch_ns as f64) / 1e6))
        .collect();
    let known: Vec<f64> = late.iter().flatten().copied().collect();
    let skew = match (
        known.iter().copied().reduce(f64::max),
        known.iter().copied().reduce(f64::min),
    ) {
        (Some(a), Some(b)) => a - b,
        _ => 0.0,
    };
    let mut info = info;
    info.start_skew_ms = skew;
    // Configured outstanding: every host runs the same per-worker lanes.
    // Configured outstanding I/O of the workers actually placed (pins may differ from
    // the plan's count): each group's share of workers 0..total.
    let configured = groups
        .iter()
        .map(|g| {
            let lo = g.worker_base.min(total_workers);
            let hi = (g.worker_base + g.plan.fleet.workers).min(total_workers);
            g.plan.configured_per_worker() * (hi - lo) as u64
        })
        .sum();
    for n in done_notices
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain(..)
    {
        if !notices.contains(&n) {
            notices.push(n);
        }
    }
    Ok(summarize(
        &spec,
        collected,
        info,
        configured,
        &HostFacts {
            start_late_ms: late,
        },
        notices,
    ))
}
