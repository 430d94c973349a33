//! How a run tells the outside world what is happening while it happens. The controller
//! calls an `Observer` from its own thread (never from I/O threads) once per event; the
//! live terminal view, the results store and, later, remote streams implement it.

use iofleet_stats::fold::Layout;
use iofleet_stats::result::{IntervalRow, RunInfo};
use iofleet_stats::{GenSample, HostUsage, Sample};

/// Run phases in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Prepare,
    Warmup,
    Measure,
    Done,
}

/// One finished interval with its raw, mergeable data per worker.
#[derive(Debug)]
pub struct IntervalSnapshot<'a> {
    pub row: &'a IntervalRow,
    /// Indexed by worker (local to this run); each holds one `StreamStats` per stream.
    pub workers: &'a [Sample],
    /// Per worker (as `workers`), per disk of the worker: the parts `workers` sums.
    pub disks: &'a [Vec<Sample>],
    /// Host names, and the host index of each worker in `workers`.
    pub hosts: &'a [String],
    pub worker_host: &'a [usize],
    /// What each host spent during this interval, when it reported it.
    pub usage: &'a [Option<HostUsage>],
    /// The generator self-check of the interval, folded over every I/O thread.
    pub generator: Option<&'a GenSample>,
    /// Per host (as `hosts`): when it was lost, seconds since the run's start, for the
    /// hosts lost before this interval's end (the ones `row.hosts_lost` counts).
    pub host_lost_s: &'a [Option<f64>],
    /// Where the workers live (hosts, groups, global worker numbers): what
    /// `Layout::interval_parts` needs to judge hosts and sum groups.
    pub layout: &'a Layout,
    /// What relays merged for the hosts below them (their workers are absent from
    /// `workers` and `disks`): empty in a fleet without relays.
    pub relayed: &'a RelayedParts,
    /// The stop rule's facts behind `row.duration_s`: the latest stop inside the
    /// interval a source reported (ns since the epoch), and whether some source ran
    /// through it (what a relay passes up, so the controller cuts as it would flat).
    pub stopped_at: Option<u64>,
    pub ran_through: bool,
}

/// What relays sent of one interval for the hosts below them (`crate::relay`): per
/// group (the run's order) their workers' samples merged, and per host its brief.
#[derive(Debug, Clone, Default)]
pub struct RelayedParts {
    pub groups: Vec<iofleet_stats::Sample>,
    pub hosts: Vec<iofleet_stats::brief::HostBrief>,
}

pub trait Observer {
    /// The fleet is released: `info` is the run as it starts (duration 0, not
    /// interrupted). Sent once, after prepare, before the first interval.
    fn started(&mut self, _info: &RunInfo) {}
    fn notice(&mut self, _msg: &str) {}
    fn phase(&mut self, _phase: Phase, _planned_s: f64) {}
    /// Prepare progress in bytes written so far of `total`.
    fn prepare_progress(&mut self, _done: u64, _total: u64) {}
    /// What the launcher is waiting for before anything can be prepared (a
    /// Kubernetes fleet's pods and volumes), as one line that replaces the last.
    fn status(&mut self, _line: &str) {}
    fn interval(&mut self, _snap: &IntervalSnapshot<'_>) {}
    /// A relay's totals of the (worker, disk)s below it over the measured intervals
    /// (`crate::relay`), as they arrive at its end: with the intervals' own samples they
    /// make every total of the run.
    fn relay_totals(&mut self, _totals: &[(u32, u32, iofleet_stats::Sample)]) {}
    /// At the end, per group (the run's order): what relays lost before their totals
    /// came measured, which the fleet's and the groups' totals count (`fold_with`).
    fn unsent_groups(&mut self, _groups: &[iofleet_stats::Sample]) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl Observer for Silent {}

/// Hands every event to several observers, in order.
pub struct Fanout<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Fanout<'_> {
    fn started(&mut self, info: &RunInfo) {
        self.0.iter_mut().for_each(|o| o.started(info));
    }
    fn notice(&mut self, msg: &str) {
        self.0.iter_mut().for_each(|o| o.notice(msg));
    }
    fn phase(&mut self, phase: Phase, planned_s: f64) {
        self.0.iter_mut().for_each(|o| o.phase(phase, planned_s));
    }
    fn prepare_progress(&mut self, done: u64, total: u64) {
        self.0
            .iter_mut()
            .for_each(|o| o.prepare_progress(done, total));
    }
    fn status(&mut self, line: &str) {
        self.0.iter_mut().for_each(|o| o.status(line));
    }
    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        self.0.iter_mut().for_each(|o| o.interval(snap));
    }
    fn relay_totals(&mut self, totals: &[(u32, u32, iofleet_stats::Sample)]) {
        self.0.iter_mut().for_each(|o| o.relay_totals(totals));
    }
    fn unsent_groups(&mut self, groups: &[iofleet_stats::Sample]) {
        self.0.iter_mut().for_each(|o| o.unsent_groups(groups));
    }
}
