//! The controller ↔ agent wire protocol, spoken over an SSH session's stdin/stdout.
//!
//! Framing: the agent first writes the 8-byte magic `IOFLEET1` (so a login banner or a
//! stray shell echo before it is skipped, not misread), then both sides exchange frames:
//! a little-endian u32 length of what follows, one kind byte, and a body. Control
//! messages have JSON bodies; interval data is binary (counters and HDR V2 histograms,
//! see `Sample::encode`) because it is the bulk of the traffic. Both sides open with
//! `Hello` carrying `PROTOCOL_VERSION`; a mismatch is refused, naming both versions.
//! A reader trusts no length it is told: every kind of frame has a size limit for the
//! session's phase (`FrameLimits`), a longer frame is refused from its header alone, and
//! an accepted one is read as its bytes arrive, so an agent that announces 4 GiB and
//! sends little holds only what it sent. This module only encodes and decodes; it never
//! blocks on anything but its reader.

use std::io::{self, Read, Write};

use iofleet_profile::GroupPlan;

pub use crate::host::TargetArg;
use crate::settings::RunSettings;
use iofleet_stats::result::{
    DiskErrors, DiskUnmeasured, ErrorDetail, VerifySummary, MAX_CORRUPTION_DETAILS,
};
use iofleet_stats::{GenSample, HostUsage, Sample};
use serde::{Deserialize, Serialize};

/// Bumped on any change to frames or their bodies.
/// 4: data verification (`Done.verify`, verify-only jobs); 5: interval samples per
/// (worker, disk), not per worker, and per-disk I/O errors (`Done.disks`); 6: observer
/// hosts (`Task::Observe`), then several directories as one target (`TargetArg::Dirs`);
/// 7: a session takes several jobs in turn (the next `Job` after a `Done`, until `Stop` or
/// the end of input), so a command opens its fleet once; no frame's layout changed;
/// 8: agents that join over TLS (`Join`, answered by `Welcome`), and the controller's
/// heartbeats to a joined agent; 9: a histogram not yet taken is encoded as a taken one
/// (its V2 header's highest value is its highest bucket's; the buckets are unchanged);
/// 10: `RunSettings.drop_caches` (`--drop-caches`), an observer's `AgentJob.observe` and
/// the storage figures in its usage (`HostUsage.storage`); 11: an observer's
/// `AgentJob.scrape` and what its exporter said (`HostUsage.scraped`); 12: a mean
/// latency from the exporter (`latency:` metrics, `ScrapedUsage.latency` and `count`),
/// `--drop-caches cmd:COMMAND` (`RunSettings.drop_caches` reads `cmd:` before a
/// command), and the `DropCaches`/`Dropped` frames: every host drops its caches once
/// all hosts are ready, before the start; an observer's storage figures end with the
/// whole of its entries, each process once (`StorageUsage.total`); 13: relays
/// (`--relay-fanout`): a relay's `Join.relay` (where the agents below it join it) and
/// `Welcome.below` (their ranks), a `Redirect` to the relay for an agent below one,
/// `AgentJob.below` (the jobs of the hosts below a relay), `Ready.below` (their names
/// as the relay knows them), and the relay's `Relayed`,
/// `HostLost` and `RelayTotals` frames (`crate::relay`); 14: per disk, what completed
/// outside the measured phase (`Done.unmeasured`).
pub const PROTOCOL_VERSION: u32 = 14;
pub const MAGIC: &[u8; 8] = b"IOFLEET1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    pub version: String,
    pub hostname: String,
    /// The sender's process id, as it says. Informational only: the controller never
    /// signals a process by it (it ends a frozen agent by the pid its own start script
    /// recorded on the host, see `agents::kill_script`). Defaulted, so that a hello from
    /// any version still decodes and the version check speaks.
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

/// A joining agent's first frame, on the TLS connection it opened to the controller's
/// join port (`crate::join`): who it is, where its launcher placed it, and the
/// command's token, which proves it was started for this command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Join {
    pub hello: Hello,
    /// Its rank in the fleet, from its launcher's environment or `--rank` (None: the
    /// controller gives it the lowest free rank).
    pub rank: Option<u32>,
    /// The fleet's size its launcher said (`OMPI_COMM_WORLD_SIZE`, `SLURM_NTASKS`, ...).
    pub size: Option<u32>,
    /// Where the rank came from (`OMPI_COMM_WORLD_RANK`, `--rank`, ...), for messages.
    pub rank_from: String,
    /// The directory or devices it runs its share on, when it names its own (else the
    /// controller's target).
    pub target: Option<TargetArg>,
    pub token: String,
    /// Where the agents below it may join it, when it can relay (`--relay-fanout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<RelayListen>,
}

/// Where a relay's own join port listens: the port on its host (the controller sends
/// agents to the address the relay's connection came from), and the SHA-256
/// fingerprint of the certificate it presents there, which they pin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelayListen {
    pub port: u16,
    pub fingerprint: String,
}

/// The controller's answer to an agent that joins below a relay: join the relay at
/// `endpoint` (pinning `fingerprint`) with the same join; or, while that relay has not
/// joined yet (`endpoint` None), ask again after `after_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Redirect {
    pub rank: u32,
    pub endpoint: Option<String>,
    pub fingerprint: Option<String>,
    pub after_ms: u64,
}

/// A relay's word that a host below it was lost (`crate::relay::Upward::HostLost`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostLost {
    /// The host, as the controller numbers them.
    pub host: u32,
    /// When, ns since the run's epoch.
    pub at_ns: u64,
    pub reason: String,
}

/// One host's job below a relay, with who it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BelowJob {
    /// The host, as the controller numbers them, and the rank it joined with.
    pub host: u32,
    pub rank: u32,
    pub job: AgentJob,
}

/// The controller's answer to an accepted `Join`: its own hello, the rank it is, and
/// how long the agent may hear nothing before it stops by itself (the controller sends
/// a heartbeat every `heartbeat_ms`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    pub hello: Hello,
    pub rank: u32,
    pub host_timeout_ms: u64,
    pub heartbeat_ms: u64,
    /// A relay's: the ranks of the agents that join below it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub below: Vec<u32>,
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
    /// An observer's `observe` entries: the storage processes or cgroups whose CPU,
    /// memory, I/O and context switches it reports each interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observe: Vec<String>,
    /// An observer's exporter to scrape each interval (`scrape`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scrape: Option<crate::scrape::ScrapeSpec>,
    /// A relay's: the jobs of the hosts below it, which it passes on, and whose
    /// intervals it merges (`crate::relay`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub below: Vec<BelowJob>,
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
    /// A relay's: the names of the hosts below it, in the order of its job's `below`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub below: Vec<String>,
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
    /// Per disk of the agent: what completed outside the measured phase (none from a
    /// relay).
    #[serde(default)]
    pub unmeasured: Vec<DiskUnmeasured>,
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
    /// The agent is alive (sent from the job on, whenever it sent nothing else for a
    /// quarter of the host timeout).
    Heartbeat,
    /// `--drop-caches`: every host of the run has prepared (its fill written) and said
    /// ready; empty your page cache now, before the start (controller → agent).
    DropCaches,
    /// The agent's page cache is emptied (agent → controller; a failure is an `Error`).
    Dropped,
    Stop,
    Done(Done),
    Error(Failure),
    Join(Box<Join>),
    Welcome(Welcome),
    Redirect(Redirect),
    /// A relay's merged interval of the hosts below it.
    Relayed(Box<crate::relay::RelayedInterval>),
    HostLost(HostLost),
    /// A relay's totals of every (worker, disk) below it, before its `Done`.
    RelayTotals(Vec<(u32, u32, Sample)>),
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
const K_JOIN: u8 = 13;
const K_WELCOME: u8 = 14;
const K_DROP_CACHES: u8 = 15;
const K_DROPPED: u8 = 16;
const K_REDIRECT: u8 = 17;
const K_RELAYED: u8 = 18;
const K_HOST_LOST: u8 = 19;
const K_RELAY_TOTALS: u8 = 20;

/// A frame kind with its article, as messages name it ("an interval frame").
fn a_kind(kind: u8) -> String {
    let name = kind_name(kind);
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

/// How a frame kind is named in messages.
fn kind_name(kind: u8) -> &'static str {
    match kind {
        K_HELLO => "hello",
        K_JOB => "job",
        K_PING => "ping",
        K_PONG => "pong",
        K_READY => "ready",
        K_START => "start",
        K_STARTED => "started",
        K_INTERVAL => "interval",
        K_STOP => "stop",
        K_DONE => "done",
        K_ERROR => "error",
        K_HEARTBEAT => "heartbeat",
        K_JOIN => "join",
        K_WELCOME => "welcome",
        K_DROP_CACHES => "drop-caches",
        K_DROPPED => "dropped",
        K_REDIRECT => "redirect",
        K_RELAYED => "relayed",
        K_HOST_LOST => "host-lost",
        K_RELAY_TOTALS => "relay-totals",
        _ => "unknown",
    }
}

/// The largest body of a clock frame (`Ping`, `Pong`, `Started`) or a `Start`: two
/// integers in JSON, `{"seq":4294967295,"t_ns":18446744073709551615}` at most (46 bytes).
pub const CLOCK_MAX: usize = 64;
/// The largest `Hello` body: a version string, a host name (at most 64 bytes on Linux,
/// 6 bytes per byte once escaped in JSON) and two integers.
pub const HELLO_MAX: usize = 4 << 10;
/// The largest `Job` body (read by the agent): the run's resolved groups, a few KiB each.
pub const JOB_MAX: usize = 16 << 20;
/// Cells of one latency histogram at its largest: iofleet's geometry (1 ns, 3
/// significant digits: 2,048 cells up to 2,047 ns, then 1,024 per power of two) over the
/// whole u64 range, 2,048 + 53 × 1,024.
pub const HIST_CELLS: usize = 56_320;
/// The HDR V2 encoding of one latency histogram at its largest: a 40-byte header, then
/// a count of at most 9 bytes per cell.
pub const HIST_MAX: usize = 40 + HIST_CELLS * 9;
/// One (worker, disk) sample of an interval frame, without its histograms' encodings:
/// worker and disk, the stream count, and per stream and direction three u64 counters,
/// two u128 sums and a histogram length.
const SAMPLE_FIXED: usize = 4 + 4 + 4;
const DIRECTION_FIXED: usize = 3 * 8 + 2 * 16 + 4;
/// An interval frame without its samples: index, stop instant, sample count, and the
/// host usage and generator check, each a length and JSON (usage: 13 numbers; the
/// generator: 11 numbers and two histograms, each byte of their encodings at most 4
/// characters in a JSON array).
const INTERVAL_FIXED: usize = 4 + 8 + 4 + (4 + USAGE_MAX) + (4 + GEN_MAX);
const USAGE_MAX: usize = 4 << 10;
/// A host's brief in a relayed frame, in JSON: its number, three directions' counters
/// and quantiles (9 numbers each).
const BRIEF_MAX: u64 = 2 << 10;
/// What one `observe` entry adds to an interval's usage: 8 numbers and keys, plus the
/// entry's name, each of its bytes at most 6 characters in JSON (`for_job`).
const STORAGE_FIXED: usize = 512;
const GEN_MAX: usize = (4 << 10) + 2 * 4 * HIST_MAX;
/// What a ready, done or error frame may hold besides its per-disk records: messages and
/// notices.
pub const REPORT_BASE: usize = 1 << 20;
/// Per (worker, disk) of the host, in a done frame: its I/O-error record with its first
/// failures, its threads' failure messages, its preconditioning record, its counts
/// outside the measured phase and a notice.
pub const REPORT_PER_DISK: usize = 16 << 10;
/// Per corruption a done frame keeps in detail (host, paths, expected and found).
pub const REPORT_PER_CORRUPTION: usize = 8 << 10;

/// The largest body each kind of frame may have in one phase of a session, in bytes.
/// Stop and heartbeat frames are empty; clock, start and hello frames small and fixed
/// (`CLOCK_MAX`, `HELLO_MAX`); a job at most `JOB_MAX`. Interval and report frames (ready,
/// done, error) grow with the host's share, so the controller derives their limits from
/// the job it sent (`for_job`); before that (`greeting`) they have the size of a host
/// with no disk. docs/fleet.md lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLimits {
    /// Interval frames (and a relay's relayed frames).
    pub interval: usize,
    /// Ready, done and error frames (and a relay's totals).
    pub report: usize,
}

impl FrameLimits {
    /// Before a job: what the controller accepts from an agent it has sent no job yet,
    /// and what an agent accepts from the controller.
    pub fn greeting() -> Self {
        FrameLimits {
            interval: INTERVAL_FIXED,
            report: REPORT_BASE,
        }
    }

    /// What the controller accepts from an agent running `job`: every interval frame
    /// holds one sample per (worker, disk) of the host's share, each with a histogram per
    /// stream and direction at its largest; a done frame a record per (worker, disk)
    /// and the corruptions kept in detail.
    pub fn for_job(job: &AgentJob) -> Self {
        if !job.below.is_empty() {
            return Self::for_relay(job);
        }
        let (mut disks, mut streams) = (0u64, 0u64);
        for g in &job.groups {
            let f = &g.plan.fleet;
            disks = disks.saturating_add(f.workers as u64 * f.disks_per_worker as u64);
            streams = streams.saturating_add(g.plan.streams.len() as u64);
        }
        let kept = match job.task {
            Task::Verify { keep } => keep.max(MAX_CORRUPTION_DETAILS),
            _ => MAX_CORRUPTION_DETAILS,
        } as u64;
        let per_sample = streams
            .saturating_mul(2 * (DIRECTION_FIXED + HIST_MAX) as u64)
            .saturating_add(SAMPLE_FIXED as u64);
        // Each entry, and the whole of them (`storage::TOTAL`) after them.
        let whole = (!job.observe.is_empty()).then_some(crate::storage::TOTAL);
        let watched: u64 = job
            .observe
            .iter()
            .map(String::as_str)
            .chain(whole)
            .map(|e| (STORAGE_FIXED + 6 * e.len()) as u64)
            .chain(
                job.scrape
                    .iter()
                    .flat_map(|s| &s.metrics)
                    .map(|m| (STORAGE_FIXED + 6 * m.len()) as u64),
            )
            .sum();
        FrameLimits {
            interval: bytes(INTERVAL_FIXED, &[(disks, per_sample), (1, watched)]),
            report: bytes(
                REPORT_BASE,
                &[
                    (disks, REPORT_PER_DISK as u64),
                    (kept, REPORT_PER_CORRUPTION as u64),
                ],
            ),
        }
    }

    /// What the controller accepts from a relay running `job` (its own share, if any,
    /// and `job.below`): a relayed frame holds a sample per group of the run and a
    /// brief (and usage) per host below; its totals a sample per (worker, disk) below;
    /// its done frame what its hosts' done frames would hold together.
    fn for_relay(job: &AgentJob) -> Self {
        let (mut interval, mut report) = (INTERVAL_FIXED as u64, REPORT_BASE as u64);
        for j in std::iter::once(job).chain(job.below.iter().map(|b| &b.job)) {
            let own = AgentJob {
                below: Vec::new(),
                ..j.clone()
            };
            let l = Self::for_job(&own);
            // Its samples (a group's merge is no larger than its parts), its brief.
            interval = interval
                .saturating_add((l.interval - INTERVAL_FIXED) as u64)
                .saturating_add(BRIEF_MAX);
            // Its done frame's records, and its totals.
            report = report
                .saturating_add((l.report - REPORT_BASE) as u64)
                .saturating_add(Self::disks(&own).saturating_mul(Self::sample_bytes(&own)));
        }
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        FrameLimits {
            interval: size(interval),
            report: size(report),
        }
    }

    /// (worker, disk)s of a job's share.
    fn disks(job: &AgentJob) -> u64 {
        job.groups
            .iter()
            .map(|g| g.plan.fleet.workers as u64 * g.plan.fleet.disks_per_worker as u64)
            .sum()
    }

    /// One (worker, disk) sample of a job's streams at its largest.
    fn sample_bytes(job: &AgentJob) -> u64 {
        let streams: u64 = job.groups.iter().map(|g| g.plan.streams.len() as u64).sum();
        streams
            .saturating_mul(2 * (DIRECTION_FIXED + HIST_MAX) as u64)
            .saturating_add(SAMPLE_FIXED as u64)
    }

    /// The largest body a frame of `kind` may have; None for an unknown kind.
    fn of(&self, kind: u8) -> Option<usize> {
        Some(match kind {
            K_STOP | K_HEARTBEAT | K_DROP_CACHES | K_DROPPED => 0,
            K_PING | K_PONG | K_START | K_STARTED => CLOCK_MAX,
            K_HELLO | K_JOIN | K_WELCOME | K_REDIRECT | K_HOST_LOST => HELLO_MAX,
            K_JOB => JOB_MAX,
            K_INTERVAL | K_RELAYED => self.interval,
            K_READY | K_DONE | K_ERROR | K_RELAY_TOTALS => self.report,
            _ => return None,
        })
    }
}

/// `base` plus `n` × `each` for every (n, each) of `terms`, in bytes, saturating.
fn bytes(base: usize, terms: &[(u64, u64)]) -> usize {
    let total = terms.iter().fold(base as u64, |acc, &(n, each)| {
        acc.saturating_add(n.saturating_mul(each))
    });
    usize::try_from(total).unwrap_or(usize::MAX)
}

/// A frame's body is read into a buffer of at most this many bytes at first, grown only
/// as bytes arrive.
const FIRST_CHUNK: usize = 64 << 10;

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
            Frame::DropCaches => (K_DROP_CACHES, Vec::new()),
            Frame::Dropped => (K_DROPPED, Vec::new()),
            Frame::Done(d) => json(K_DONE, d),
            Frame::Error(e) => json(K_ERROR, e),
            Frame::Join(j) => json(K_JOIN, j),
            Frame::Welcome(w) => json(K_WELCOME, w),
            Frame::Redirect(r) => json(K_REDIRECT, r),
            Frame::HostLost(l) => json(K_HOST_LOST, l),
            Frame::Relayed(r) => {
                let mut b = Vec::new();
                crate::relay::encode(r, &mut b);
                (K_RELAYED, b)
            }
            Frame::RelayTotals(t) => {
                let mut b = Vec::with_capacity(4 + t.len() * 256);
                b.extend_from_slice(&(t.len() as u32).to_le_bytes());
                for (w, d, s) in t {
                    b.extend_from_slice(&w.to_le_bytes());
                    b.extend_from_slice(&d.to_le_bytes());
                    s.encode(&mut b);
                }
                (K_RELAY_TOTALS, b)
            }
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
            K_DROP_CACHES => Frame::DropCaches,
            K_DROPPED => Frame::Dropped,
            K_DONE => Frame::Done(j(body)?),
            K_ERROR => Frame::Error(j(body)?),
            K_JOIN => Frame::Join(Box::new(j(body)?)),
            K_WELCOME => Frame::Welcome(j(body)?),
            K_REDIRECT => Frame::Redirect(j(body)?),
            K_HOST_LOST => Frame::HostLost(j(body)?),
            K_RELAYED => Frame::Relayed(Box::new(crate::relay::decode(body)?)),
            K_RELAY_TOTALS => {
                let mut i = body;
                let n = take_u32(&mut i)? as usize;
                let mut t = Vec::with_capacity(n.min(i.len() / SAMPLE_FIXED));
                for _ in 0..n {
                    let w = take_u32(&mut i)?;
                    let d = take_u32(&mut i)?;
                    t.push((w, d, Sample::decode(&mut i).map_err(bad)?));
                }
                if !i.is_empty() {
                    return Err(bad(format!(
                        "a relay-totals frame with {} bytes past its end",
                        i.len()
                    )));
                }
                Frame::RelayTotals(t)
            }
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
                // Room for what the body can hold (a sample takes at least 12 bytes),
                // not for the count it claims.
                let mut samples = Vec::with_capacity(n.min(i.len() / SAMPLE_FIXED));
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
                if !i.is_empty() {
                    return Err(bad(format!(
                        "an interval frame with {} bytes past its end",
                        i.len()
                    )));
                }
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

/// A little-endian u32 from the front of `i`, advancing it.
fn take_u32(i: &mut &[u8]) -> io::Result<u32> {
    if i.len() < 4 {
        return Err(bad("truncated frame".into()));
    }
    let (a, b) = i.split_at(4);
    *i = b;
    Ok(u32::from_le_bytes(a.try_into().expect("4 bytes")))
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

/// Read one frame within `limits`; `Ok(None)` on a clean end of stream between frames.
/// A frame over its kind's limit is refused before its body is read (the error names
/// the kind, its length and the limit); an accepted body is read as it arrives.
pub fn read_frame(r: &mut dyn Read, limits: &FrameLimits) -> io::Result<Option<Frame>> {
    read_frame_within(r, || *limits)
}

/// [`read_frame`] with the limits asked for once a frame's header has arrived, not
/// before: a session that waits between jobs judges the next job's first frame by that
/// job's limits, set just before the job was sent.
pub fn read_frame_within(
    r: &mut dyn Read,
    limits: impl FnOnce() -> FrameLimits,
) -> io::Result<Option<Frame>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len == 0 {
        return Err(bad(
            "a frame of length 0 (it must hold at least its kind)".into()
        ));
    }
    let mut kind = [0u8; 1];
    r.read_exact(&mut kind)?;
    let kind = kind[0];
    let body_len = len - 1;
    let Some(limit) = limits().of(kind) else {
        return Err(bad(format!("unknown frame kind {kind}")));
    };
    if body_len > limit {
        return Err(bad(format!(
            "{} frame of {body_len} bytes is over the limit of {limit} bytes for {} frames",
            a_kind(kind),
            kind_name(kind)
        )));
    }
    let mut body = Vec::new();
    read_body(r, body_len, &mut body)
        .map_err(|e| io::Error::new(e.kind(), format!("inside {} frame: {e}", a_kind(kind))))?;
    Frame::decode(kind, &body).map(Some)
}

/// The bytes of one frame, as `write_frame` sends them.
pub fn frame_bytes(f: &Frame) -> Vec<u8> {
    let mut b = Vec::new();
    write_frame(&mut b, f).expect("a Vec takes every write");
    b
}

/// The first frame in `buf`, for a reader that collects bytes as they arrive (the join
/// port's event loop): `Ok(None)` while the frame is incomplete, else the frame and how
/// many bytes of `buf` it took. A frame over its kind's limit in `limits` (asked once
/// its header is in) or one that does not decode is an error as in
/// [`read_frame_within`], found as soon as its header is in.
pub fn take_frame(
    buf: &[u8],
    limits: impl FnOnce() -> FrameLimits,
) -> io::Result<Option<(Frame, usize)>> {
    let Some(len) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
    if len == 0 {
        return Err(bad(
            "a frame of length 0 (it must hold at least its kind)".into()
        ));
    }
    let Some(&kind) = buf.get(4) else {
        return Ok(None);
    };
    let body_len = len - 1;
    let Some(limit) = limits().of(kind) else {
        return Err(bad(format!("unknown frame kind {kind}")));
    };
    if body_len > limit {
        return Err(bad(format!(
            "{} frame of {body_len} bytes is over the limit of {limit} bytes for {} frames",
            a_kind(kind),
            kind_name(kind)
        )));
    }
    if buf.len() < 5 + body_len {
        return Ok(None);
    }
    let f = Frame::decode(kind, &buf[5..5 + body_len])?;
    Ok(Some((f, 5 + body_len)))
}

/// A joining agent's `Join` frame at the start of `buf` ([`take_frame`]); any other
/// kind is refused at its header.
pub fn take_join(buf: &[u8]) -> io::Result<Option<(Join, usize)>> {
    // The kind is judged once the length is known to be one a frame may have (a length
    // of 0 is refused as such, whatever follows it), so that the answer is the same
    // however the bytes arrive.
    let sized = buf
        .get(..4)
        .is_some_and(|l| u32::from_le_bytes(l.try_into().expect("4 bytes")) != 0);
    if let Some(&kind) = buf.get(4).filter(|_| sized) {
        if kind != K_JOIN {
            return Err(bad(format!(
                "expected a join frame, not {} frame",
                a_kind(kind)
            )));
        }
    }
    match take_frame(buf, FrameLimits::greeting)? {
        Some((Frame::Join(j), n)) => Ok(Some((*j, n))),
        Some(_) => Err(bad("expected a join frame".into())),
        None => Ok(None),
    }
}

/// Read exactly `len` bytes into `buf` as they arrive: the buffer starts at most
/// `FIRST_CHUNK` large and grows with what was read, never with what was announced.
fn read_body(r: &mut dyn Read, len: usize, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.reserve(len.min(FIRST_CHUNK));
    let got = r.take(len as u64).read_to_end(buf)?;
    if got < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the stream ended after {got} of {len} bytes"),
        ));
    }
    Ok(())
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
    use iofleet_stats::result::Unmeasured;
    use sha2::Digest;

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
                unmeasured: vec![DiskUnmeasured {
                    worker: 3,
                    disk: 1,
                    ios: Unmeasured {
                        after_writes: 2,
                        ..Default::default()
                    },
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
        let limits = FrameLimits::for_job(&job(2, 1, 2, Task::Run));
        for f in &frames {
            assert_eq!(read_frame(&mut r, &limits).unwrap().as_ref(), Some(f));
        }
        assert_eq!(read_frame(&mut r, &limits).unwrap(), None);
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
        let greeting = FrameLimits::greeting();
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff, 1];
        assert!(read_frame(&mut r, &greeting).is_err());
        let mut r: &[u8] = &[2, 0, 0, 0, 99, 0];
        assert!(read_frame(&mut r, &greeting).is_err());
        let mut r: &[u8] = &[0, 0, 0, 0];
        assert!(read_frame(&mut r, &greeting).is_err());
        let mut r: &[u8] = b"no magic here";
        assert!(read_magic(&mut r).is_err());
    }

    /// The job of a host running `workers` × `disks` with `streams` streams.
    fn job(workers: u32, disks: u32, streams: usize, task: Task) -> AgentJob {
        use crate::fixtures::{fleet, plan, stream};
        let streams = (0..streams)
            .map(|i| stream(&format!("s{i}"), 50.0))
            .collect();
        AgentJob {
            groups: vec![GroupPlan {
                name: "g".into(),
                plan: plan(fleet(workers, disks, 1, 1), streams),
                worker_base: 0,
            }],
            target: TargetArg::Dir("/tmp".into()),
            settings: RunSettings::default(),
            task,
            observe: Vec::new(),
            scrape: None,
            below: Vec::new(),
        }
    }

    /// A frame's bytes: its length, `kind`, and a body of `len` bytes of `fill`.
    fn raw(kind: u8, len: usize, fill: u8) -> Vec<u8> {
        let mut b = ((len + 1) as u32).to_le_bytes().to_vec();
        b.push(kind);
        b.resize(5 + len, fill);
        b
    }

    /// Each class of frame kind at its phase's limit is read whole (then its body is
    /// judged), and one byte more is refused from the header alone, naming the kind and
    /// the limit.
    #[test]
    fn every_kind_of_frame_is_read_up_to_its_limit_and_refused_past_it() {
        let greeting = FrameLimits::greeting();
        let running = FrameLimits::for_job(&job(3, 2, 1, Task::Run));
        let classes: [(&str, u8, usize, &FrameLimits); 8] = [
            ("stop", K_STOP, 0, &greeting),
            ("heartbeat", K_HEARTBEAT, 0, &running),
            ("pong", K_PONG, CLOCK_MAX, &greeting),
            ("hello", K_HELLO, HELLO_MAX, &greeting),
            ("job", K_JOB, JOB_MAX, &greeting),
            ("error", K_ERROR, greeting.report, &greeting),
            ("done", K_DONE, running.report, &running),
            ("interval", K_INTERVAL, running.interval, &running),
        ];
        for (name, kind, limit, limits) in classes {
            assert_eq!(limits.of(kind), Some(limit), "{name}");
            let at = raw(kind, limit, b' ');
            let mut r = &at[..];
            match read_frame(&mut r, limits) {
                Ok(_) => assert_eq!(limit, 0, "{name}: only an empty body decodes"),
                Err(e) => assert!(!e.to_string().contains("limit"), "{name}: {e}"),
            }
            assert!(
                r.is_empty(),
                "{name}: the whole frame at its limit was read"
            );
            let past = raw(kind, limit + 1, b' ');
            let mut r = &past[..];
            let e = read_frame(&mut r, limits).unwrap_err().to_string();
            let says = format!(
                "{} frame of {} bytes is over the limit of {limit} bytes",
                a_kind(kind),
                limit + 1
            );
            assert!(e.starts_with(&says), "{e}");
            assert_eq!(r.len(), limit + 1, "{name}: nothing of the body was read");
        }
        // The phase decides: before the job an interval frame the size of a three-disk
        // host's is refused, after it read.
        let frame = raw(K_INTERVAL, greeting.interval + 1, 0);
        assert!(read_frame(&mut &frame[..], &greeting).is_err());
        let e = read_frame(&mut &frame[..], &running)
            .unwrap_err()
            .to_string();
        let past = greeting.interval + 1 - 24;
        assert_eq!(
            e,
            format!("an interval frame with {past} bytes past its end")
        );
        // An unknown kind is refused, whatever its length.
        let e = read_frame(&mut &raw(200, 0, 0)[..], &running).unwrap_err();
        assert_eq!(e.to_string(), "unknown frame kind 200");
    }

    /// A reader that hands out `total` bytes in `chunk`-byte pieces, then ends.
    struct Trickle {
        left: usize,
        chunk: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.left.min(self.chunk).min(buf.len());
            buf[..n].fill(7);
            self.left -= n;
            Ok(n)
        }
    }

    /// An agent that announces 4 GiB and sends 300 KiB before its stream ends: the
    /// buffer holds about what arrived, never what was announced, and the error says
    /// how much came of how much.
    #[test]
    fn a_body_is_buffered_as_it_arrives_not_as_announced() {
        let announced = u32::MAX as usize - 1;
        let mut buf = Vec::new();
        let mut r = Trickle {
            left: 300 << 10,
            chunk: 1000,
        };
        let e = read_body(&mut r, announced, &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(buf.len(), 300 << 10);
        assert!(
            buf.capacity() <= 2 * (300 << 10) + FIRST_CHUNK,
            "{} bytes reserved for 300 KiB received",
            buf.capacity()
        );
        // Through the frame reader, with no limit in the way.
        let huge = FrameLimits {
            interval: usize::MAX,
            report: 0,
        };
        let mut head = ((announced + 1) as u32).to_le_bytes().to_vec();
        head.push(K_INTERVAL);
        let mut r = (&head[..]).chain(Trickle {
            left: 5000,
            chunk: 100,
        });
        let e = read_frame(&mut r, &huge).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("inside an interval frame: the stream ended after 5000 of {announced} bytes")
        );
        // With the limits of a real job, the same header is refused before any body.
        let running = FrameLimits::for_job(&job(3, 2, 1, Task::Run));
        let mut r = (&head[..]).chain(Trickle {
            left: 5000,
            chunk: 100,
        });
        let e = read_frame(&mut r, &running).unwrap_err().to_string();
        assert!(
            e.contains(&format!("over the limit of {} bytes", running.interval)),
            "{e}"
        );
    }

    /// The limits hold what a legal frame can: clock values at their largest, a host
    /// name of escaped control characters, a histogram with every cell in use (the
    /// geometry `HIST_CELLS` counts), an interval of such samples.
    #[test]
    fn legal_frames_at_their_largest_fit_their_limits() {
        let body_len = |f: &Frame| f.encode().1.len();
        let clock = Clock {
            seq: u32::MAX,
            t_ns: u64::MAX,
        };
        assert!(body_len(&Frame::Pong(clock.clone())) <= CLOCK_MAX);
        assert!(body_len(&Frame::Start(Start { epoch_ns: u64::MAX })) <= CLOCK_MAX);
        let hello = Hello {
            protocol: u32::MAX,
            version: "9999.9999.9999-rc.999".into(),
            hostname: "\u{1}".repeat(64),
            pid: u32::MAX,
        };
        assert!(body_len(&Frame::Hello(hello)) <= HELLO_MAX);
        // Every cell of the geometry: each value 1..2,047, then 1,024 per power of two,
        // up to the top of u64. With a count of 1 in each, the payload is one byte per
        // cell from 0 (0 ns, recorded as 1 ns, stays empty: one byte too).
        let mut h = iofleet_stats::LatencyHist::new();
        for v in 1..2048u64 {
            h.record(v);
        }
        for shift in 1..=53u32 {
            for sub in 1024..2048u64 {
                h.record(sub << shift);
            }
        }
        h.record(u64::MAX);
        assert_eq!(h.to_v2_bytes().len() - 40, HIST_CELLS);
        // A three-disk host with two streams: its interval frame with every histogram
        // that full fits its limit, with room for counts up to 9 bytes.
        let limits = FrameLimits::for_job(&job(3, 1, 2, Task::Run));
        let mut s = Sample::new(2);
        for st in &mut s.streams {
            st.read.hist = h.clone();
            st.write.hist = h.clone();
        }
        let full = Frame::Interval(IntervalData {
            index: u32::MAX,
            stopped_at: Some(u64::MAX),
            samples: (0..3).map(|w| (w, 0, s.clone())).collect(),
            usage: Some(HostUsage {
                wall_s: f64::MAX,
                ..Default::default()
            }),
            generator: Some(Box::new(GenSample {
                lag: h.clone(),
                reap: h.clone(),
                ..Default::default()
            })),
        });
        let len = body_len(&full);
        assert!(len <= limits.interval, "{len} > {}", limits.interval);
        // A verify job keeping many corruptions has room for them in its done frame.
        let keep = FrameLimits::for_job(&job(3, 1, 1, Task::Verify { keep: 1000 }));
        assert_eq!(
            keep.report - limits.report,
            (1000 - MAX_CORRUPTION_DETAILS) * REPORT_PER_CORRUPTION
        );
    }

    /// A relay's limits hold what it sends for its own share and every host below it:
    /// their interval frames' room and a brief each, their done frames' room and a
    /// total per (worker, disk) at its largest.
    #[test]
    fn a_relays_limits_hold_its_subtrees_frames() {
        let host = job(2, 3, 2, Task::Run);
        let one = FrameLimits::for_job(&host);
        let mut relay = job(1, 1, 2, Task::Run);
        let own = FrameLimits::for_job(&relay);
        relay.below = (0..4)
            .map(|h| BelowJob {
                host: h + 1,
                rank: h + 1,
                job: host.clone(),
            })
            .collect();
        let tree = FrameLimits::for_job(&relay);
        let per_sample = (2 * 2 * (DIRECTION_FIXED + HIST_MAX) + SAMPLE_FIXED) as u64;
        assert_eq!(
            tree.interval as u64,
            own.interval as u64 + 4 * (one.interval - INTERVAL_FIXED) as u64 + 5 * BRIEF_MAX
        );
        assert_eq!(
            tree.report as u64,
            own.report as u64
                + per_sample // the relay's own (worker, disk) total
                + 4 * ((one.report - REPORT_BASE) as u64 + 6 * per_sample)
        );
    }

    /// One frame of every kind, with fixed contents, as the wire carries them.
    fn every_kind() -> Vec<Frame> {
        let mut s = Sample::new(2);
        s.streams[0].read.record(12_345, 4096);
        s.streams[1].write.record(9_876_543, 65536);
        s.streams[1].write.record_error();
        let clock = Clock { seq: 7, t_ns: 1 };
        let hello = Hello {
            protocol: PROTOCOL_VERSION,
            version: "v".into(),
            hostname: "h".into(),
            pid: 2,
        };
        vec![
            Frame::Hello(hello.clone()),
            Frame::Job(Box::new({
                let mut j = job(2, 1, 1, Task::Verify { keep: 3 });
                j.settings.drop_caches = Some(crate::settings::DropCaches::Command("sync".into()));
                j.observe = vec!["ceph-osd".into(), "cgroup:/system.slice".into()];
                j.scrape = Some(crate::scrape::ScrapeSpec {
                    url: "http://127.0.0.1:9283/metrics".into(),
                    metrics: vec![
                        "iops:ceph_osd_op_w".into(),
                        "latency:ceph_osd_op_r_latency".into(),
                    ],
                });
                j.below = vec![BelowJob {
                    host: 1,
                    rank: 4,
                    job: job(1, 2, 2, Task::Run),
                }];
                j
            })),
            Frame::Ping(clock.clone()),
            Frame::Pong(clock.clone()),
            Frame::Ready(Ready {
                notices: vec!["n".into()],
                engine: "null".into(),
                configured_outstanding: 4,
                below: vec!["h-r4".into()],
            }),
            Frame::Start(Start { epoch_ns: 5 }),
            Frame::Started(clock),
            Frame::Interval(IntervalData {
                index: 1,
                stopped_at: Some(2),
                samples: vec![(0, 0, s.clone())],
                usage: Some(HostUsage {
                    wall_s: 0.5,
                    storage: vec![
                        iofleet_stats::StorageUsage {
                            name: "ceph-osd".into(),
                            usr_s: 0.25,
                            write_bytes: 4096,
                            processes: 2,
                            ..Default::default()
                        },
                        iofleet_stats::StorageUsage {
                            name: crate::storage::TOTAL.into(),
                            usr_s: 0.25,
                            processes: 2,
                            total: true,
                            ..Default::default()
                        },
                    ],
                    scraped: vec![
                        iofleet_stats::ScrapedUsage {
                            name: "ceph_osd_op_w".into(),
                            iops: true,
                            counter: true,
                            amount: 300.0,
                            span_s: 1.0,
                            samples: 1,
                            last: Some(1000.0),
                            at_s: Some(0.5),
                            missing: false,
                            latency: false,
                            count: 0.0,
                        },
                        iofleet_stats::ScrapedUsage {
                            name: "ceph_osd_op_r_latency".into(),
                            latency: true,
                            amount: 0.75,
                            count: 300.0,
                            span_s: 1.0,
                            samples: 1,
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                }),
                generator: Some(Box::new(GenSample::thread_span(1_000, 400, Some(30), 12))),
            }),
            Frame::Heartbeat,
            Frame::DropCaches,
            Frame::Dropped,
            Frame::Stop,
            Frame::Done(Done {
                end_ns: 9,
                failures: vec!["f".into()],
                errors: vec![],
                notices: vec![],
                verify: None,
                disks_checked: 1,
                disks: vec![DiskErrors::new(0, 0)],
                unmeasured: vec![DiskUnmeasured {
                    worker: 0,
                    disk: 0,
                    ios: Unmeasured {
                        warmup_reads: 1,
                        warmup_writes: 2,
                        after_reads: 3,
                        after_writes: 4,
                    },
                }],
                preconditioned: None,
            }),
            Frame::Error(Failure {
                message: "m".into(),
                input: false,
            }),
            Frame::Join(Box::new(Join {
                hello: hello.clone(),
                rank: Some(3),
                size: Some(16),
                rank_from: "OMPI_COMM_WORLD_RANK".into(),
                target: Some(TargetArg::Dir("/d".into())),
                token: "t".into(),
                relay: Some(RelayListen {
                    port: 7071,
                    fingerprint: "ab".repeat(32),
                }),
            })),
            Frame::Welcome(Welcome {
                hello,
                rank: 3,
                host_timeout_ms: 30_000,
                heartbeat_ms: 1_000,
                below: vec![4, 5, 6],
            }),
            Frame::Redirect(Redirect {
                rank: 5,
                endpoint: Some("10.0.0.3:7071".into()),
                fingerprint: Some("cd".repeat(32)),
                after_ms: 0,
            }),
            Frame::HostLost(HostLost {
                host: 5,
                at_ns: 3_000_000_000,
                reason: "rank 5 lost".into(),
            }),
            Frame::Relayed(Box::new(crate::relay::RelayedInterval {
                index: 2,
                stopped_at: Some(7),
                ran_through: true,
                groups: vec![(0, s.clone())],
                hosts: vec![crate::relay::HostBrief::of(4, &s, None)],
                generator: None,
            })),
            Frame::RelayTotals(vec![(0, 0, s.clone()), (1, 2, Sample::new(2))]),
        ]
    }

    /// An observer's interval frame with every `observe` entry's figures at their
    /// longest fits the limit its job gives, which has room for them beyond a host's usage.
    #[test]
    fn an_observers_storage_figures_fit_its_interval_limit() {
        let mut job = job(0, 1, 1, Task::Observe);
        job.observe = (0..64)
            .map(|i| format!("cmdline:\u{1}{i:0>200}\"quoted\""))
            .collect();
        let worst = |name: &str| iofleet_stats::StorageUsage {
            name: name.to_string(),
            usr_s: -f64::MAX,
            sys_s: -f64::MAX,
            mem_mib_s: -f64::MAX,
            read_bytes: u64::MAX,
            write_bytes: u64::MAX,
            ctx_switches: u64::MAX,
            processes: u32::MAX,
            total: name == crate::storage::TOTAL,
        };
        let frame = Frame::Interval(IntervalData {
            index: u32::MAX,
            stopped_at: Some(u64::MAX - 1),
            samples: Vec::new(),
            usage: Some(HostUsage {
                wall_s: -f64::MAX,
                // Every entry, then the whole of them.
                storage: job
                    .observe
                    .iter()
                    .map(String::as_str)
                    .chain([crate::storage::TOTAL])
                    .map(worst)
                    .collect(),
                ..Default::default()
            }),
            generator: None,
        });
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &frame).unwrap();
        let back = read_frame(&mut &bytes[..], &FrameLimits::for_job(&job)).unwrap();
        assert!(
            back.as_ref() == Some(&frame),
            "the frame reads back as it was written"
        );
        // The entries need room beyond a host's usage: the job's limit gives it.
        let Frame::Interval(i) = &frame else {
            unreachable!()
        };
        let usage = serde_json::to_vec(i.usage.as_ref().unwrap()).unwrap().len();
        assert!(usage > USAGE_MAX, "{usage}");
        let watching = FrameLimits::for_job(&job).interval;
        job.observe.clear();
        assert!(watching >= FrameLimits::for_job(&job).interval + usage - USAGE_MAX);
    }

    /// The frames' bytes, pinned with the protocol version they belong to: a change to
    /// any frame or body fails here until `PROTOCOL_VERSION` is bumped (with its line in
    /// the changelog above it and in docs/fleet.md) and the digest updated with it.
    #[test]
    fn the_frames_bytes_change_only_with_the_protocol_version() {
        const GOLDEN: (u32, &str) = (
            14,
            "fdf21433d094b043333262bc927e9c860a3e67810caace725989e16fd613386e",
        );
        let mut wire = Vec::new();
        for f in every_kind() {
            write_frame(&mut wire, &f).unwrap();
        }
        let digest: String = sha2::Sha256::digest(&wire)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            (PROTOCOL_VERSION, digest.as_str()),
            GOLDEN,
            "the frames' bytes changed: bump PROTOCOL_VERSION, say what changed in its changelog and docs/fleet.md, and pin the new digest with the new version"
        );
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

    /// Property tests of the frames (issue 35): every frame written reads back equal,
    /// with nothing left over; a stream cut anywhere inside a frame never gives a frame (past its
    /// length, an error); and any bytes at all (a broken or hostile agent) give a frame, an error or
    /// the end, never a panic or an allocation past the limits.
    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

            #[test]
            fn every_frame_reads_back_and_every_cut_is_an_error(which in 0usize..64, cut in any::<prop::sample::Index>()) {
                let frames = every_kind();
                let f = &frames[which % frames.len()];
                let running = FrameLimits::for_job(&job(3, 2, 1, Task::Run));
                let mut bytes = Vec::new();
                write_frame(&mut bytes, f).unwrap();
                let mut r = &bytes[..];
                let back = read_frame(&mut r, &running).unwrap();
                prop_assert_eq!(back.as_ref(), Some(f));
                prop_assert!(r.is_empty());
                let at = 1 + cut.index(bytes.len() - 1);
                let mut r = &bytes[..at];
                let got = read_frame(&mut r, &running);
                // Inside the length the stream ends as a session does (no frame);
                // past it, the frame is cut short: an error.
                if at < 4 {
                    prop_assert!(!matches!(got, Ok(Some(_))), "cut at {}", at);
                } else {
                    prop_assert!(got.is_err(), "cut at {} of {}", at, bytes.len());
                }
            }

            #[test]
            fn any_bytes_give_a_frame_an_error_or_the_end(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
                for limits in [FrameLimits::greeting(), FrameLimits::for_job(&job(3, 2, 1, Task::Run))] {
                    let mut r = &bytes[..];
                    // Read frames until the end or an error, as a session does.
                    for _ in 0..bytes.len() + 1 {
                        match read_frame(&mut r, &limits) {
                            Ok(Some(_)) => continue,
                            Ok(None) | Err(_) => break,
                        }
                    }
                }
            }

            #[test]
            fn a_changed_byte_gives_a_frame_or_an_error(which in 0usize..64, at in any::<prop::sample::Index>(), byte in any::<u8>()) {
                let frames = every_kind();
                let mut bytes = Vec::new();
                write_frame(&mut bytes, &frames[which % frames.len()]).unwrap();
                let i = at.index(bytes.len());
                bytes[i] = byte;
                let mut r = &bytes[..];
                let _ = read_frame(&mut r, &FrameLimits::greeting());
            }
        }
    }
}
