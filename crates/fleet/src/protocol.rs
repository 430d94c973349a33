//! The controller ↔ agent wire protocol, spoken over an SSH session's stdin/stdout.
//!
//! Framing: the agent first writes the 8-byte magic `IOFLEET1` (so a login banner or a
//! stray shell echo before it is skipped, not misread), then both sides exchange frames:
//! a little-endian u32 length of what follows, one kind byte, and a body. Control
//! messages have JSON bodies; interval data is binary (counters and HDR V2 histograms,
//! see `Sample::encode`) because it is the bulk of the traffic. Both sides open with
//! `Hello` carrying `PROTOCOL_VERSION`; a mismatch is refused, naming both versions.
//! This module only encodes and decodes; it never blocks on anything but its reader.

use std::io::{self, Read, Write};

use iofleet_profile::GroupPlan;

use crate::settings::RunSettings;
use iofleet_stats::result::{DiskErrors, ErrorDetail, VerifySummary};
use iofleet_stats::{GenSample, HostUsage, Sample};
use serde::{Deserialize, Serialize};

/// Bumped on any change to frames or their bodies.
/// 4: data verification (`Done.verify`, verify-only jobs); 5: interval samples per
/// (worker, disk), not per worker, and per-disk I/O errors (`Done.disks`).
pub const PROTOCOL_VERSION: u32 = 6;
pub const MAGIC: &[u8; 8] = b"IOFLEET1";
/// Largest frame accepted (a guard against reading garbage as a length).
const MAX_FRAME: usize = 256 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    pub version: String,
    pub hostname: String,
    /// The sender's process id (the controller ends a frozen agent by it). Defaulted,
    /// so that a hello from any version still decodes and the version check speaks.
    #[serde(default)]
    pub pid: u32,
}

impl Hello {
    pub fn ours() -> Self {
        Hello {
            protocol: PROTOCOL_VERSION,
            version: env!("CARGO_PKG_VERSION").into(),
            hostname: crate::sys::hostname(),
            pid: std::process::id(),
        }
    }
}

/// Where an agent's disks live.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TargetArg {
    Dir(String),
    /// Several directories, the disks in turn over them (`TargetSpec::Dirs`).
    Dirs(Vec<String>),
    Devices(Vec<String>),
}

/// What one agent runs: its share of the fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentJob {
    /// Every group of the run, in run order; each with `fleet.workers` and
    /// `worker_base` set to this agent's share (0 workers when it runs none of the
    /// group), so stream indexes agree across hosts.
    pub groups: Vec<GroupPlan>,
    pub target: TargetArg,
    pub settings: RunSettings,
    /// What to do with the share: run it (the default), or a one-shot task.
    #[serde(default)]
    pub task: Task,
}

/// What an agent does with its share of the fleet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub enum Task {
    /// Measure: prepare, start at the controller's instant, stream intervals.
    #[default]
    Run,
    /// `iofleet verify --hosts`: check the disks against their journals, keeping this
    /// many corruptions in detail.
    Verify { keep: usize },
    /// `iofleet precondition --hosts`: precondition the disks; no measured phase.
    Precondition,
    /// An observer host (`role = "observer"`): no I/O; start at the controller's instant
    /// and stream what the host spends each interval, on the run's timeline.
    Observe,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    pub seq: u32,
    /// Sender's monotonic clock, ns.
    pub t_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ready {
    pub notices: Vec<String>,
    /// The engine the agent resolved (`auto` decided on the host).
    pub engine: String,
    /// I/Os the agent's threads keep outstanding when every lane is full.
    pub configured_outstanding: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Start {
    /// The start instant on the agent's monotonic clock, ns.
    pub epoch_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// When the agent's threads stopped, ns since the epoch.
    pub end_ns: u64,
    pub failures: Vec<String>,
    pub errors: Vec<ErrorDetail>,
    pub notices: Vec<String>,
    /// What verified reads (`--verify`) or the verify check found on the host.
    #[serde(default)]
    pub verify: Option<VerifySummary>,
    /// Disks the verify check read (`Task::Verify`).
    #[serde(default)]
    pub disks_checked: usize,
    /// Per-disk I/O errors of the agent's disks (absent from older agents).
    #[serde(default)]
    pub disks: Vec<DiskErrors>,
    /// What preconditioning wrote (`Task::Precondition`).
    #[serde(default)]
    pub preconditioned: Option<Box<crate::precondition::Preconditioned>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub message: String,
    /// The user can fix it with a flag or key (exit code 2 on the controller).
    pub input: bool,
}

/// One interval of every worker an agent runs.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalData {
    pub index: u32,
    /// Set when a stop cut this interval short: its end, ns since the epoch.
    pub stopped_at: Option<u64>,
    /// (global worker, disk of the worker, sample), one per disk the agent drives.
    pub samples: Vec<(u32, u32, Sample)>,
    /// What the agent's host spent during the interval.
    pub usage: Option<HostUsage>,
    /// The agent's generator self-check for the interval, folded over its I/O threads.
    pub generator: Option<Box<GenSample>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Hello(Hello),
    Job(Box<AgentJob>),
    Ping(Clock),
    Pong(Clock),
    Ready(Ready),
    Start(Start),
    /// The agent released its threads (agent clock).
    Started(Clock),
    Interval(IntervalData),
    /// The agent is alive (sent at least every half interval, from the job on).
    Heartbeat,
    Stop,
    Done(Done),
    Error(Failure),
}

const K_HELLO: u8 = 1;
const K_JOB: u8 = 2;
const K_PING: u8 = 3;
const K_PONG: u8 = 4;
const K_READY: u8 = 5;
const K_START: u8 = 6;
const K_STARTED: u8 = 7;
const K_INTERVAL: u8 = 8;
const K_STOP: u8 = 9;
const K_DONE: u8 = 10;
const K_ERROR: u8 = 11;
const K_HEARTBEAT: u8 = 12;

fn json<T: Serialize>(kind: u8, v: &T) -> (u8, Vec<u8>) {
    (
        kind,
        serde_json::to_vec(v).expect("protocol types serialise"),
    )
}

impl Frame {
    fn encode(&self) -> (u8, Vec<u8>) {
        match self {
            Frame::Hello(h) => json(K_HELLO, h),
            Frame::Job(j) => json(K_JOB, j),
            Frame::Ping(c) => json(K_PING, c),
            Frame::Pong(c) => json(K_PONG, c),
            Frame::Ready(r) => json(K_READY, r),
            Frame::Start(s) => json(K_START, s),
            Frame::Started(c) => json(K_STARTED, c),
            Frame::Stop => (K_STOP, Vec::new()),
            Frame::Heartbeat => (K_HEARTBEAT, Vec::new()),
            Frame::Done(d) => json(K_DONE, d),
            Frame::Error(e) => json(K_ERROR, e),
            Frame::Interval(i) => {
                let mut b = Vec::with_capacity(64 + i.samples.len() * 256);
                b.extend_from_slice(&i.index.to_le_bytes());
                b.extend_from_slice(&i.stopped_at.map_or(u64::MAX, |t| t).to_le_bytes());
                b.extend_from_slice(&(i.samples.len() as u32).to_le_bytes());
                for (w, d, s) in &i.samples {
                    b.extend_from_slice(&w.to_le_bytes());
                    b.extend_from_slice(&d.to_le_bytes());
                    s.encode(&mut b);
                }
                // Host usage: a length-prefixed JSON body, 0 bytes when absent.
                let usage = i
                    .usage
                    .as_ref()
                    .map(|u| serde_json::to_vec(u).expect("usage serialises"))
                    .unwrap_or_default();
                b.extend_from_slice(&(usage.len() as u32).to_le_bytes());
                b.extend_from_slice(&usage);
                // Generator self-check: the same, 0 bytes when absent.
                let gen = i
                    .generator
                    .as_ref()
                    .map(|g| serde_json::to_vec(g).expect("generator sample serialises"))
                    .unwrap_or_default();
                b.extend_from_slice(&(gen.len() as u32).to_le_bytes());
                b.extend_from_slice(&gen);
                (K_INTERVAL, b)
            }
        }
    }

    fn decode(kind: u8, body: &[u8]) -> io::Result<Frame> {
        fn j<T: for<'de> Deserialize<'de>>(body: &[u8]) -> io::Result<T> {
            serde_json::from_slice(body).map_err(|e| bad(format!("bad frame body: {e}")))
        }
        Ok(match kind {
            K_HELLO => Frame::Hello(j(body)?),
            K_JOB => Frame::Job(Box::new(j(body)?)),
            K_PING => Frame::Ping(j(body)?),
            K_PONG => Frame::Pong(j(body)?),
            K_READY => Frame::Ready(j(body)?),
            K_START => Frame::Start(j(body)?),
            K_STARTED => Frame::Started(j(body)?),
            K_STOP => Frame::Stop,
            K_HEARTBEAT => Frame::Heartbeat,
            K_DONE => Frame::Done(j(body)?),
            K_ERROR => Frame::Error(j(body)?),
            K_INTERVAL => {
                fn take<'a>(i: &mut &'a [u8], n: usize) -> io::Result<&'a [u8]> {
                    if i.len() < n {
                        return Err(bad("truncated interval frame".into()));
                    }
                    let (a, b) = i.split_at(n);
                    *i = b;
                    Ok(a)
                }
                let mut i = body;
                let u32_ = |i: &mut &[u8]| -> io::Result<u32> {
                    Ok(u32::from_le_bytes(take(i, 4)?.try_into().unwrap()))
                };
                let index = u32_(&mut i)?;
                let stop = u64::from_le_bytes(take(&mut i, 8)?.try_into().unwrap());
                let n = u32_(&mut i)? as usize;
                let mut samples = Vec::with_capacity(n.min(1 << 16));
                for _ in 0..n {
                    let w = u32_(&mut i)?;
                    let d = u32_(&mut i)?;
                    let s = Sample::decode(&mut i).map_err(bad)?;
                    samples.push((w, d, s));
                }
                let n = u32_(&mut i)? as usize;
                let usage = match n {
                    0 => None,
                    n => Some(j(take(&mut i, n)?)?),
                };
                let n = u32_(&mut i)? as usize;
                let generator = match n {
                    0 => None,
                    n => Some(j(take(&mut i, n)?)?),
                };
                Frame::Interval(IntervalData {
                    index,
                    stopped_at: (stop != u64::MAX).then_some(stop),
                    samples,
                    usage,
                    generator,
                })
            }
            other => return Err(bad(format!("unknown frame kind {other}"))),
        })
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Write one frame and flush.
pub fn write_frame(w: &mut dyn Write, f: &Frame) -> io::Result<()> {
    let (kind, body) = f.encode();
    let len = (body.len() + 1) as u32;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&[kind])?;
    w.write_all(&body)?;
    w.flush()
}

/// Read one frame; `Ok(None)` on a clean end of stream between frames.
pub fn read_frame(r: &mut dyn Read) -> io::Result<Option<Frame>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(bad(format!("implausible frame length {len}")));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    Frame::decode(buf[0], &buf[1..]).map(Some)
}

/// Skip anything before the magic (at most 64 KiB), so banners cannot desynchronise.
pub fn read_magic(r: &mut dyn Read) -> io::Result<()> {
    read_magic_or(r, MAGIC).map(|_| ())
}

/// Like [`read_magic`], but stop at `other` too: true at the magic, false at `other`,
/// whichever comes first.
pub fn read_magic_or(r: &mut dyn Read, other: &[u8; 8]) -> io::Result<bool> {
    let mut window = [0u8; 8];
    let mut seen = 0usize;
    let mut byte = [0u8; 1];
    while seen < 65536 + 8 {
        r.read_exact(&mut byte)?;
        window.rotate_left(1);
        window[7] = byte[0];
        seen += 1;
        if seen >= 8 && &window == MAGIC {
            return Ok(true);
        }
        if seen >= 8 && &window == other {
            return Ok(false);
        }
    }
    Err(bad("no iofleet agent greeting in the first 64 KiB".into()))
}

/// Refuse a peer that speaks another protocol version, naming both sides.
pub fn check_hello(ours: &Hello, theirs: &Hello, peer: &str) -> Result<(), String> {
    if ours.protocol == theirs.protocol {
        Ok(())
    } else {
        Err(format!(
            "protocol version mismatch with {peer}: it runs iofleet {} (agent protocol {}), this controller runs iofleet {} (agent protocol {}); install the same iofleet version on both",
            theirs.version, theirs.protocol, ours.version, ours.protocol
        ))
    }
}

/// This host's monotonic clock in ns (the clock both ends exchange).
pub fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let mut s = Sample::new(2);
        s.streams[1].write.record(5000, 4096);
        let frames = vec![
            Frame::Hello(Hello::ours()),
            Frame::Ping(Clock { seq: 3, t_ns: 77 }),
            Frame::Interval(IntervalData {
                index: 9,
                stopped_at: Some(123),
                samples: vec![(4, 1, s.clone()), (5, 0, Sample::new(2))],
                usage: Some(HostUsage {
                    wall_s: 0.5,
                    net_rx_bytes: 7,
                    ..Default::default()
                }),
                generator: Some({
                    let mut g = GenSample::thread_span(1_000, 400, Some(30), 12);
                    g.lag.record(2_500);
                    Box::new(g)
                }),
            }),
            Frame::Interval(IntervalData {
                index: 1,
                stopped_at: None,
                samples: vec![],
                usage: None,
                generator: None,
            }),
            Frame::Stop,
            Frame::Heartbeat,
            Frame::Done(Done {
                end_ns: 5,
                failures: vec![],
                errors: vec![],
                notices: vec!["n".into()],
                verify: None,
                disks_checked: 0,
                disks: vec![DiskErrors {
                    count: 40,
                    taken_out_s: Some(1.5),
                    ..DiskErrors::new(3, 1)
                }],
                preconditioned: None,
            }),
            Frame::Error(Failure {
                message: "x".into(),
                input: true,
            }),
        ];
        let mut buf = b"banner text\n".to_vec();
        buf.extend_from_slice(MAGIC);
        for f in &frames {
            write_frame(&mut buf, f).unwrap();
        }
        let mut r = &buf[..];
        read_magic(&mut r).unwrap();
        for f in &frames {
            assert_eq!(read_frame(&mut r).unwrap().as_ref(), Some(f));
        }
        assert_eq!(read_frame(&mut r).unwrap(), None);
    }

    #[test]
    fn the_greeting_or_its_alternative_is_found_past_a_banner() {
        for (tail, agent) in [(&MAGIC[..], true), (&b"IOFLEET?"[..], false)] {
            let mut buf = b"IOFLEE banner IOFLEET\n".to_vec();
            buf.extend_from_slice(tail);
            let mut r = &buf[..];
            assert_eq!(read_magic_or(&mut r, b"IOFLEET?").unwrap(), agent);
            assert!(r.is_empty());
        }
        // Neither before the end: an error, not a hang or a guess.
        let mut r: &[u8] = b"IOFLEET";
        assert!(read_magic_or(&mut r, b"IOFLEET?").is_err());
    }

    #[test]
    fn a_done_without_per_disk_errors_still_reads() {
        // An agent from before per-disk errors sends no `disks` key.
        let d: Done =
            serde_json::from_str(r#"{"end_ns": 1, "failures": [], "errors": [], "notices": []}"#)
                .unwrap();
        assert!(d.disks.is_empty());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff, 1];
        assert!(read_frame(&mut r).is_err());
        let mut r: &[u8] = &[2, 0, 0, 0, 99, 0];
        assert!(read_frame(&mut r).is_err());
        let mut r: &[u8] = b"no magic here";
        assert!(read_magic(&mut r).is_err());
    }

    #[test]
    fn version_mismatch_names_both_versions() {
        let ours = Hello::ours();
        let mut theirs = ours.clone();
        theirs.protocol = 99;
        theirs.version = "9.9.9".into();
        let e = check_hello(&ours, &theirs, "h2").unwrap_err();
        assert!(
            e.contains("9.9.9") && e.contains(env!("CARGO_PKG_VERSION")),
            "{e}"
        );
        assert!(e.contains("protocol 99") && e.contains("h2"), "{e}");
    }
}
