//! What a source tells the collector (`Msg`) and the timeline every source of a run
//! keeps (`Timeline`): the contract between whatever runs workers (an I/O thread here,
//! an agent's host over the protocol) and the one collector (`collect`), which is all
//! the controller sees of them. With it, the rule by which a source takes a failing
//! disk out of the run (`TAKE_OUT_AFTER`), which the collector's notices name. Nothing
//! here runs I/O or folds samples.

use std::time::Duration;

use iofleet_stats::result::{DiskErrors, DiskUnmeasured, ErrorDetail, VerifySummary};
use iofleet_stats::{GenSample, Sample};

/// Failed I/Os in a row, with no success between, after which a lane's disk is taken
/// out of the run: every lane of that disk stops issuing, the others go on. A disk that
/// fails this many of a window of `TAKE_OUT_WINDOW` I/Os, with successes between (a full
/// filesystem that frees a block now and then), is taken out too.
pub const TAKE_OUT_AFTER: u32 = 32;
/// I/Os of a lane per window of the "half of them failed" rule.
pub const TAKE_OUT_WINDOW: u32 = 2 * TAKE_OUT_AFTER;

/// The interval boundaries shared by every thread of a run, in ns since the epoch.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// `boundaries[k]..boundaries[k+1]` is interval k; the first is 0.
    pub boundaries: Vec<u64>,
    /// Intervals `0..warmup_intervals` are warm-up.
    pub warmup_intervals: u32,
}

impl Timeline {
    /// Warm-up then measurement, each cut into `interval` pieces (a phase's last piece
    /// may be shorter when the phase is not a multiple of the interval).
    pub fn new(warmup: Duration, duration: Duration, interval: Duration) -> Self {
        let step = interval.as_nanos().max(1) as u64;
        let mut boundaries = vec![0u64];
        let cut = |len: u64, boundaries: &mut Vec<u64>| {
            let start = *boundaries.last().unwrap();
            let mut t = 0;
            let mut n = 0;
            while t < len {
                t = (t + step).min(len);
                boundaries.push(start + t);
                n += 1;
            }
            n
        };
        let warmup_intervals = cut(warmup.as_nanos() as u64, &mut boundaries);
        cut(duration.as_nanos() as u64, &mut boundaries);
        Timeline {
            boundaries,
            warmup_intervals,
        }
    }
    pub fn intervals(&self) -> u32 {
        (self.boundaries.len() - 1) as u32
    }
    pub fn end_ns(&self) -> u64 {
        *self.boundaries.last().unwrap()
    }
    pub fn measure_start_ns(&self) -> u64 {
        self.boundaries[self.warmup_intervals as usize]
    }
}

/// What I/O threads tell the collector.
#[derive(Debug)]
pub enum Msg {
    Interval {
        /// The reporting source: a local I/O thread, or a remote host.
        source: u32,
        index: u32,
        /// (global worker index, disk of the worker, its sample) — one entry per disk
        /// the source drives; a worker's sample is the sum of its disks'.
        samples: Vec<(u32, u32, Sample)>,
        errors: Vec<ErrorDetail>,
        /// Per-disk I/O errors of the source over the whole run: only on its last
        /// interval (empty otherwise).
        disks: Vec<DiskErrors>,
        /// Set on the last interval of a source that was stopped early: when it stopped
        /// (ns since the epoch), so the collector can cut that interval short.
        stopped_at: Option<u64>,
        /// What the source's host spent during the interval (remote hosts).
        usage: Option<iofleet_stats::HostUsage>,
        /// The generator's own figures for the interval (None in simulated time).
        generator: Option<Box<GenSample>>,
    },
    Done {
        source: u32,
        /// When the source stopped issuing, ns since the epoch.
        end_ns: u64,
        error: Option<String>,
        /// Details of I/O errors not already sent with an interval (remote sources).
        errors: Vec<ErrorDetail>,
        /// Per-disk I/O errors not already sent with an interval (remote sources).
        disks: Vec<DiskErrors>,
        /// The source vanished (a remote host whose connection died), rather than ended.
        lost: bool,
    },
    /// The source is alive (a remote host with nothing else to say yet).
    Heartbeat { source: u32 },
    /// What the source's verified reads found (`--verify`), sent before `Done`.
    Verify {
        source: u32,
        summary: Box<VerifySummary>,
    },
    /// Per disk of the source, what completed outside the measured phase (the warm-up,
    /// and after its end), sent before `Done`.
    Unmeasured {
        source: u32,
        disks: Vec<DiskUnmeasured>,
    },
    /// A relay's interval: the hosts below it merged (`relay`), in place of their own
    /// interval messages.
    Relayed {
        source: u32,
        interval: Box<crate::relay::RelayedInterval>,
    },
    /// A relay's totals of every (worker, disk) below it over the measured intervals,
    /// sent once, before its `Done`.
    RelayTotals {
        source: u32,
        totals: Vec<(u32, u32, Sample)>,
    },
    /// A relay lost one of the hosts below it (`host`, as the controller numbers them)
    /// at `at_ns` since the epoch; the relay goes on without it.
    HostLost {
        source: u32,
        host: u32,
        at_ns: u64,
        reason: String,
    },
}

impl Msg {
    /// Who sent this message.
    pub fn source(&self) -> u32 {
        match self {
            Msg::Interval { source, .. }
            | Msg::Done { source, .. }
            | Msg::Heartbeat { source }
            | Msg::Verify { source, .. }
            | Msg::Unmeasured { source, .. }
            | Msg::Relayed { source, .. }
            | Msg::RelayTotals { source, .. }
            | Msg::HostLost { source, .. } => *source,
        }
    }
}
