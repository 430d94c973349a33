//! Merging what sources report into intervals, and intervals into a `RunResult`.
//!
//! A source is whatever reports intervals: a local I/O thread, or a remote host whose
//! agent already merged its own threads. Interval k is complete when every source has
//! reported it or has ended; it is then merged per worker (and kept per disk) with `+=`,
//! handed to the observer, turned into fleet, host and group rows, and, when measured,
//! folded into the per-disk totals (a worker's total is the sum of its disks'). The
//! same code serves a local run and a fleet across hosts, so both compute every figure
//! the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use iofleet_profile::Plan;
pub(crate) use iofleet_stats::fold::GroupRange;
use iofleet_stats::fold::{Folded, HostFacts, Layout};
use iofleet_stats::result::{
    CpuSummary, DiskErrors, DiskUnmeasured, ErrorDetail, ErrorSummary, IntervalRow, MemorySummary,
    Outstanding, PartIntervals, PartRow, RunInfo, RunResult, RunSummary, Unmeasured, VerifySummary,
    SCHEMA_VERSION,
};
use iofleet_stats::summary::{counts_in_median, median_of};
use iofleet_stats::{GenSample, HostUsage, OpStats, OpSummary, PackedSample, Sample};

use crate::observer::{IntervalSnapshot, Observer, Phase, RelayedParts};
use crate::relay::RelayedInterval;
use crate::source::{Msg, Timeline, TAKE_OUT_AFTER};
use crate::sys::{self, HostProbe};

/// Error details kept for the whole run.
const MAX_ERROR_DETAILS: usize = 20;
/// No worker has more disks (the range of `fleet.disks_per_worker`): a sample said to
/// come from a disk beyond it (a garbled frame) is not given memory.
const MAX_DISKS: usize = 1024;

/// Who reports and where workers live.
pub(crate) struct CollectSpec<'a> {
    pub plan: &'a Plan,
    pub timeline: &'a Timeline,
    /// Global index of the first worker of this run (or agent).
    pub worker_base: u32,
    /// The worker groups, by global worker range.
    pub groups: Vec<GroupRange>,
    pub workers: usize,
    /// Names of the reporting sources (threads or hosts), for messages.
    pub source_names: Vec<String>,
    /// Host names, and the host of each worker (by local worker index).
    pub hosts: Vec<String>,
    pub worker_host: Vec<usize>,
    /// Per host (missing entries: false): an observer, which runs no I/O; its usage is
    /// kept apart from the worker hosts'.
    pub observers: Vec<bool>,
    /// The host each source belongs to (a lost source marks its host lost).
    pub source_host: Vec<usize>,
    pub epoch: Instant,
    /// A source silent this long is given up on and its host marked lost, at the time
    /// it was last heard from; so is one that has not ended this long after the
    /// planned end (or a stop). A remote host can go quiet without its connection
    /// closing. None for local threads, which always report.
    pub silence_grace: Option<Duration>,
    /// Samples this machine as host 0 at every interval (in-process sources); remote
    /// hosts send their own usage with their intervals instead.
    pub probe: Option<HostProbe>,
    /// The engine runs in simulated time: intervals are simulated time and reach the
    /// collector whenever the threads get there, so what the hosts spent is kept over
    /// every interval, warm-up included (CPU over the real time the simulation took).
    pub simulated_time: bool,
    /// Per relay source, the hosts below it (its own host is `source_host`): they report
    /// through it (`Msg::Relayed`), and are lost with it.
    pub below: BTreeMap<usize, Vec<usize>>,
}

/// Everything the collection produced, ready to be summarised.
pub(crate) struct Collected {
    pub rows: Vec<IntervalRow>,
    /// Per host and per group, every interval's rows.
    pub host_rows: Vec<PartIntervals>,
    pub group_rows: Vec<PartIntervals>,
    /// Per worker, per disk, over the measured intervals, packed: 10,000 workers of a
    /// few disks each stay small (no per-disk figures are kept per interval).
    pub worker_totals: Vec<Vec<PackedSample>>,
    pub measured_ns: u64,
    pub interval_iops: Vec<f64>,
    pub errors: Vec<ErrorDetail>,
    pub error_count: u64,
    /// I/O errors per disk, sorted by (worker, disk).
    pub disks: Vec<DiskErrors>,
    /// What completed outside the measured phase, per (worker, disk): a map, since
    /// every disk of a large fleet has an entry, arriving in any order.
    pub unmeasured: BTreeMap<(u32, u32), Unmeasured>,
    pub failures: Vec<String>,
    pub max_end_ns: u64,
    /// Per host: when it was lost (ns since the epoch).
    pub host_lost_ns: Vec<Option<u64>>,
    pub lost_reasons: Vec<String>,
    /// Per host: what it spent over the measured intervals (every interval in simulated
    /// time).
    pub host_usage: Vec<HostUsage>,
    /// I/Os completed over the intervals `host_usage` covers (CPU per I/O divides by it).
    pub usage_ios: u64,
    /// The generator self-check over the measured intervals, and the most I/O threads
    /// that reported in one interval.
    pub generator: GenSample,
    pub io_threads: u32,
    /// What verified reads found (None: the run did not verify).
    pub verify: Option<VerifySummary>,
    /// Per group, the measured intervals of the relays whose totals never came (lost
    /// with what was below them): the fleet's and the groups' totals count them, as a
    /// flat fleet counts a lost host's intervals before its loss.
    pub unsent_groups: Vec<Sample>,
}

impl CollectSpec<'_> {
    fn is_observer(&self, h: usize) -> bool {
        self.observers.get(h).copied().unwrap_or(false)
    }

    /// The entries of `per_host` (indexed like `hosts`) of the hosts that run workers.
    fn worker_hosts<'u, T>(
        &self,
        per_host: &'u [T],
    ) -> impl Iterator<Item = &'u T> + use<'u, '_, T> {
        per_host
            .iter()
            .enumerate()
            .filter(|(h, _)| !self.is_observer(*h))
            .map(|(_, x)| x)
    }

    /// Where this run's workers live, as the fold names its rows.
    fn layout(&self) -> Layout {
        Layout {
            streams: self.plan.streams.iter().map(|s| s.name.clone()).collect(),
            hosts: self.hosts.clone(),
            worker_base: self.worker_base,
            worker_host: self.worker_host.clone(),
            groups: self.groups.clone(),
        }
    }
}

/// Merge messages until every source has ended. `give_up` is called once for each
/// source the silence rule gives up on, so its launcher can end it.
pub(crate) fn collect(
    rx: &Receiver<Msg>,
    spec: &CollectSpec<'_>,
    observer: &mut dyn Observer,
    stop: &AtomicBool,
    give_up: &mut dyn FnMut(usize),
) -> Collected {
    let mut c = Collector::new(spec, observer);
    loop {
        let msg = c.receive(rx);
        if let Ok(Msg::RelayTotals { totals, .. }) = &msg {
            observer.relay_totals(totals);
        }
        c.dispatch(msg);
        let now = Instant::now();
        c.note_stop(now, stop);
        c.check_silence(now, give_up);
        c.check_measuring(now, stop, observer);
        c.emit_complete(observer);
        if c.finished() {
            break;
        }
    }
    observer.phase(Phase::Done, 0.0);
    c.unsent_totals();
    if !c.out.unsent_groups.is_empty() {
        observer.unsent_groups(&c.out.unsent_groups);
    }
    c.out
}

impl Collected {
    /// Nothing collected yet, sized for `spec`'s workers and hosts.
    fn empty(spec: &CollectSpec<'_>) -> Collected {
        Collected {
            rows: Vec::new(),
            host_rows: Vec::new(),
            group_rows: Vec::new(),
            worker_totals: vec![Vec::new(); spec.workers],
            measured_ns: 0,
            interval_iops: Vec::new(),
            errors: Vec::new(),
            error_count: 0,
            disks: Vec::new(),
            unmeasured: BTreeMap::new(),
            failures: Vec::new(),
            max_end_ns: 0,
            host_lost_ns: vec![None; spec.hosts.len()],
            lost_reasons: Vec::new(),
            host_usage: vec![HostUsage::default(); spec.hosts.len()],
            usage_ios: 0,
            generator: GenSample::default(),
            io_threads: 0,
            verify: spec.plan.timing.verify.then(VerifySummary::default),
            unsent_groups: Vec::new(),
        }
    }
}

/// The collector's state over one run: what each source reported, the intervals not
/// yet complete, and what was collected so far.
struct Collector<'a> {
    spec: &'a CollectSpec<'a>,
    layout: Layout,
    streams: usize,
    n_sources: usize,
    n_intervals: u32,
    /// The nominal interval length (ns).
    nominal: u64,
    measure_s: f64,
    measure_start: Instant,
    run_end: Instant,
    /// Per source: the interval after the last it reported.
    reported_next: Vec<u32>,
    /// Per source: it ended, or was given up on.
    done: Vec<bool>,
    /// When each source was last heard from (any message counts).
    last_heard: Vec<Instant>,
    /// Per pending interval: per local worker, per disk.
    pending: BTreeMap<u32, Vec<Vec<Sample>>>,
    /// Per pending interval: what relays merged for the hosts below them.
    pending_relayed: BTreeMap<u32, RelayedParts>,
    /// Per relay source whose totals have not come yet: its measured intervals per
    /// group (what the totals count if the relay is lost first).
    relay_measured: BTreeMap<u32, Vec<Sample>>,
    /// Per interval: the latest stop inside it a source reported.
    cuts: BTreeMap<u32, u64>,
    /// Intervals some source reported in full: a stop elsewhere must not shorten them.
    ran_through: BTreeSet<u32>,
    /// Per interval: the generator figures of every source, folded.
    pending_gen: BTreeMap<u32, GenSample>,
    /// Per interval and host: usage the hosts reported with their samples.
    pending_usage: BTreeMap<u32, Vec<Option<HostUsage>>>,
    probe: Option<HostProbe>,
    /// When the collector first saw the stop flag set.
    stop_seen: Option<Instant>,
    measuring: bool,
    /// The next interval to emit.
    next_emit: u32,
    out: Collected,
}

impl<'a> Collector<'a> {
    /// Nothing heard yet; announces the first phase.
    fn new(spec: &'a CollectSpec<'a>, observer: &mut dyn Observer) -> Self {
        let n_sources = spec.source_names.len();
        let timeline = spec.timeline;
        let epoch = spec.epoch;
        let reported_next = vec![0u32; n_sources];
        let done = vec![false; n_sources];
        let last_heard = vec![epoch.max(Instant::now()); n_sources];
        let out = Collected::empty(spec);
        // The probe's span began just before the start instant (`controller::run`).
        let probe = spec.probe.clone();
        let warmup_s = spec.plan.timing.warmup.as_secs_f64();
        let measure_s = spec.plan.timing.duration.as_secs_f64();
        let measuring = timeline.warmup_intervals == 0;
        if measuring {
            observer.phase(Phase::Measure, measure_s);
        } else {
            observer.phase(Phase::Warmup, warmup_s);
        }
        Collector {
            spec,
            layout: spec.layout(),
            streams: spec.plan.streams.len(),
            n_sources,
            n_intervals: timeline.intervals(),
            nominal: spec.plan.timing.interval.as_nanos() as u64,
            measure_s,
            measure_start: epoch + Duration::from_nanos(timeline.measure_start_ns()),
            run_end: epoch + Duration::from_nanos(timeline.end_ns()),
            reported_next,
            done,
            last_heard,
            pending: BTreeMap::new(),
            pending_relayed: BTreeMap::new(),
            relay_measured: BTreeMap::new(),
            cuts: BTreeMap::new(),
            ran_through: BTreeSet::new(),
            pending_gen: BTreeMap::new(),
            pending_usage: BTreeMap::new(),
            probe,
            stop_seen: None,
            measuring,
            next_emit: 0,
            out,
        }
    }

    /// How long to wait for the next message before something is due without one.
    /// Sources that can go silent (remote hosts: a silence grace) are checked every 50
    /// ms, and so is the stop flag their give-up rule reads. This machine's own threads
    /// cannot go silent and end by themselves on a stop, so then only the start of the
    /// measure phase is due: an agent of a fleet of thousands on one machine does not
    /// wake 20 times a second for nothing (each wake-up is paid a thousand times over).
    fn wait(&self, now: Instant) -> Duration {
        const POLL: Duration = Duration::from_millis(50);
        const IDLE: Duration = Duration::from_secs(1);
        if self.spec.silence_grace.is_some() {
            return POLL;
        }
        if self.measuring {
            return IDLE;
        }
        self.measure_start
            .saturating_duration_since(now)
            .clamp(Duration::from_millis(1), IDLE)
    }

    /// The next message, waiting as long as `wait` says; one from a source that has
    /// ended reads as a timeout, any other marks its source as heard from now.
    fn receive(&mut self, rx: &Receiver<Msg>) -> Result<Msg, RecvTimeoutError> {
        let mut msg = rx.recv_timeout(self.wait(Instant::now()));
        if let Ok(m) = &msg {
            match self.done.get(m.source() as usize) {
                // A source given up on (or ended) has nothing more to say.
                Some(true) => msg = Err(RecvTimeoutError::Timeout),
                Some(false) => self.last_heard[m.source() as usize] = Instant::now(),
                None => {}
            }
        }
        msg
    }

    /// Take in one message (or its absence) by kind.
    fn dispatch(&mut self, msg: Result<Msg, RecvTimeoutError>) {
        match msg {
            Ok(Msg::Heartbeat { .. }) => {}
            Ok(Msg::Unmeasured { source: _, disks }) => {
                for d in disks {
                    *self.out.unmeasured.entry((d.worker, d.disk)).or_default() += &d.ios;
                }
            }
            Ok(Msg::Verify {
                source,
                mut summary,
            }) => self.on_verify(source, &mut summary),
            Ok(Msg::Interval {
                source,
                index,
                samples,
                errors,
                disks,
                stopped_at,
                usage,
                generator,
            }) if index < self.n_intervals && (source as usize) < self.n_sources => {
                self.on_interval(source, index, &samples, stopped_at, usage, generator);
                self.keep_errors(errors, &disks);
            }
            Ok(Msg::Done {
                source,
                end_ns,
                error,
                errors,
                disks,
                lost,
            }) => {
                self.keep_errors(errors, &disks);
                self.on_done(source, end_ns, error, lost);
            }
            Ok(Msg::Relayed { source, interval })
                if interval.index < self.n_intervals && (source as usize) < self.n_sources =>
            {
                self.on_relayed(source, *interval)
            }
            Ok(Msg::RelayTotals { source, totals }) => self.on_relay_totals(source, &totals),
            Ok(Msg::HostLost {
                source: _,
                host,
                at_ns,
                reason,
            }) => self.on_host_lost(host as usize, at_ns, reason),
            // An interval beyond the timeline (or from an unknown source) is ignored.
            Ok(Msg::Interval { .. } | Msg::Relayed { .. }) => {}
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => self.done.iter_mut().for_each(|d| *d = true),
        }
    }

    /// Add what a source's verified reads found, naming its host in the first failures.
    fn on_verify(&mut self, source: u32, summary: &mut VerifySummary) {
        let host = self
            .spec
            .source_host
            .get(source as usize)
            .and_then(|&h| self.spec.hosts.get(h));
        for c in summary.first.iter_mut().filter(|c| c.host.is_empty()) {
            c.host = host.map(|h| h.to_string()).unwrap_or_default();
        }
        *self.out.verify.get_or_insert_with(Default::default) += &*summary;
    }

    /// Take in a source's report of interval `index`: its generator figures and host
    /// usage, where it stopped (or that it ran through), and its samples.
    fn on_interval(
        &mut self,
        source: u32,
        index: u32,
        samples: &[(u32, u32, Sample)],
        stopped_at: Option<u64>,
        usage: Option<HostUsage>,
        generator: Option<Box<GenSample>>,
    ) {
        if let Some(g) = generator {
            *self.pending_gen.entry(index).or_default() += &g;
        }
        if let Some(u) = usage {
            let per_host = self
                .pending_usage
                .entry(index)
                .or_insert_with(|| vec![None; self.spec.hosts.len()]);
            per_host[self.spec.source_host[source as usize]] = Some(u);
        }
        self.note_cut(index, stopped_at, stopped_at.is_none());
        self.merge_samples(index, samples);
        let r = &mut self.reported_next[source as usize];
        *r = (*r).max(index + 1);
    }

    /// Interval `index` was cut short at `stopped_at` by some source, or `ran_through`
    /// by some source (or both, from a relay's merge).
    fn note_cut(&mut self, index: u32, stopped_at: Option<u64>, ran_through: bool) {
        if let Some(t) = stopped_at {
            let cut = self.cuts.entry(index).or_insert(0);
            *cut = (*cut).max(t);
        }
        if ran_through {
            self.ran_through.insert(index);
        }
    }

    /// Take in a relay's merged interval: as every host below it had reported it.
    fn on_relayed(&mut self, source: u32, r: RelayedInterval) {
        let index = r.index;
        if let Some(g) = r.generator {
            *self.pending_gen.entry(index).or_default() += &g;
        }
        self.note_cut(index, r.stopped_at, r.ran_through);
        let (n_hosts, n_groups, streams) =
            (self.spec.hosts.len(), self.spec.groups.len(), self.streams);
        let parts = self
            .pending_relayed
            .entry(index)
            .or_insert_with(|| RelayedParts {
                groups: vec![Sample::new(streams); n_groups],
                hosts: Vec::new(),
            });
        let measured = index >= self.spec.timeline.warmup_intervals;
        for (g, s) in &r.groups {
            let Some(sum) = parts.groups.get_mut(*g as usize) else {
                continue; // a group this run does not have
            };
            *sum += s;
            self.out.error_count += s.errors();
            if measured {
                self.relay_measured
                    .entry(source)
                    .or_insert_with(|| vec![Sample::new(streams); n_groups])[*g as usize] += s;
            }
        }
        for mut b in r.hosts.into_iter().filter(|b| (b.host as usize) < n_hosts) {
            if let Some(u) = b.usage.take() {
                self.pending_usage
                    .entry(index)
                    .or_insert_with(|| vec![None; n_hosts])[b.host as usize] = Some(u);
            }
            parts.hosts.push(b);
        }
        let next = &mut self.reported_next[source as usize];
        *next = (*next).max(index + 1);
    }

    /// A relay's totals of the (worker, disk)s below it: they join the run's totals
    /// as if measured here, and what the relay's intervals said is no longer needed.
    fn on_relay_totals(&mut self, source: u32, totals: &[(u32, u32, Sample)]) {
        let streams = self.streams;
        for (worker, disk, s) in totals {
            let local = worker.wrapping_sub(self.spec.worker_base) as usize;
            let d = *disk as usize;
            if let Some(tot) = self
                .out
                .worker_totals
                .get_mut(local)
                .filter(|_| d < MAX_DISKS)
            {
                if tot.len() <= d {
                    tot.resize(d + 1, PackedSample::new(streams));
                }
                tot[d].add(s);
            }
        }
        self.relay_measured.remove(&source);
    }

    /// A host below a relay was lost at `at_ns`: the relay goes on without it.
    fn on_host_lost(&mut self, host: usize, at_ns: u64, reason: String) {
        if let Some(lost) = self.out.host_lost_ns.get_mut(host) {
            lost.get_or_insert(at_ns);
            self.out.lost_reasons.push(reason);
        }
    }

    /// Source `s` is lost at `at_ns` (as its host is): so is every host below it, a
    /// relay's, at the same instant.
    fn lose_source(&mut self, s: usize, at_ns: u64) {
        let h = self.spec.source_host[s];
        self.out.host_lost_ns[h].get_or_insert(at_ns);
        for &b in self.spec.below.get(&s).into_iter().flatten() {
            if let Some(lost) = self.out.host_lost_ns.get_mut(b) {
                lost.get_or_insert(at_ns);
            }
        }
    }

    /// Add samples to pending interval `index`, per local worker and disk; a worker not
    /// in this run, or a disk beyond any worker's, is ignored.
    fn merge_samples(&mut self, index: u32, samples: &[(u32, u32, Sample)]) {
        let streams = self.streams;
        let per_disk = self
            .pending
            .entry(index)
            .or_insert_with(|| vec![Vec::new(); self.spec.workers]);
        for (worker, disk, sample) in samples {
            let local = worker.wrapping_sub(self.spec.worker_base) as usize;
            let d = *disk as usize;
            if let Some(disks) = per_disk.get_mut(local).filter(|_| d < MAX_DISKS) {
                if disks.len() <= d {
                    disks.resize(d + 1, Sample::new(streams));
                }
                disks[d] += sample;
                self.out.error_count += sample.errors();
            }
        }
    }

    /// Merge a source's per-disk error counts, and keep its error details up to the cap.
    fn keep_errors(&mut self, errors: Vec<ErrorDetail>, disks: &[DiskErrors]) {
        DiskErrors::merge_into(&mut self.out.disks, disks);
        for e in errors {
            if self.out.errors.len() < MAX_ERROR_DETAILS {
                self.out.errors.push(e);
            }
        }
    }

    /// A source ended: note when, and its host as lost or the source as failed.
    fn on_done(&mut self, source: u32, end_ns: u64, error: Option<String>, lost: bool) {
        let s = source as usize;
        self.done[s] = true;
        self.out.max_end_ns = self.out.max_end_ns.max(end_ns);
        if lost {
            // A lost host is reported in `hosts` and in a notice, not as a
            // failed source: the run goes on without it.
            self.lose_source(s, end_ns);
            self.out
                .lost_reasons
                .push(error.unwrap_or_else(|| format!("{} lost", self.spec.source_names[s])));
        } else if let Some(e) = error {
            self.out
                .failures
                .push(format!("{}: {e}", self.spec.source_names[s]));
        }
    }

    /// Remember when the stop flag was first seen set.
    fn note_stop(&mut self, now: Instant, stop: &AtomicBool) {
        if stop.load(Ordering::Relaxed) && self.stop_seen.is_none() {
            self.stop_seen = Some(now);
        }
    }

    /// Give up on every source silent for the grace, or not ended the grace after the
    /// planned end (or the stop): its host is lost when it was last heard from.
    fn check_silence(&mut self, now: Instant, give_up: &mut dyn FnMut(usize)) {
        let Some(grace) = self.spec.silence_grace else {
            return;
        };
        let end_limit = self.stop_seen.map_or(self.run_end, |t| t.min(self.run_end)) + grace;
        for s in 0..self.n_sources {
            if self.done[s] {
                continue;
            }
            let silent = now.saturating_duration_since(self.last_heard[s]) >= grace;
            if !silent && now < end_limit {
                continue;
            }
            self.done[s] = true;
            let heard_ns = self.last_heard[s]
                .saturating_duration_since(self.spec.epoch)
                .as_nanos() as u64;
            self.lose_source(s, heard_ns.min(self.spec.timeline.end_ns()));
            let name = &self.spec.source_names[s];
            self.out
                .lost_reasons
                .push(given_up_reason(name, silent, grace, heard_ns));
            give_up(s);
        }
    }

    /// Announce the measure phase once the warm-up is over, unless stopped.
    fn check_measuring(&mut self, now: Instant, stop: &AtomicBool, observer: &mut dyn Observer) {
        if !self.measuring && now >= self.measure_start && !stop.load(Ordering::Relaxed) {
            self.measuring = true;
            observer.phase(Phase::Measure, self.measure_s);
        }
    }

    /// Emit, in order, every interval each source has reported or ended before.
    fn emit_complete(&mut self, observer: &mut dyn Observer) {
        while self.next_emit < self.n_intervals
            && self
                .reported_next
                .iter()
                .zip(&self.done)
                .all(|(&r, &d)| r > self.next_emit || d)
        {
            let k = self.next_emit;
            self.next_emit += 1;
            let relayed = self.pending_relayed.remove(&k);
            let per_disk = match (self.pending.remove(&k), &relayed) {
                (Some(p), _) => p,
                // Only relays reported it: no worker here did.
                (None, Some(_)) => vec![Vec::new(); self.spec.workers],
                (None, None) => continue, // every source had ended before this interval
            };
            self.emit_interval(k, per_disk, relayed, observer);
        }
    }

    /// Merge complete interval `k` per worker into its fleet, host and group rows, fold
    /// it into the totals when measured, and hand it to the observer.
    fn emit_interval(
        &mut self,
        k: u32,
        per_disk: Vec<Vec<Sample>>,
        relayed: Option<RelayedParts>,
        observer: &mut dyn Observer,
    ) {
        let streams = self.streams;
        let per_worker: Vec<Sample> = per_disk
            .iter()
            .map(|disks| {
                let mut w = Sample::new(streams);
                disks.iter().for_each(|d| w += d);
                w
            })
            .collect();
        let usage = self.interval_usage(k);
        let (start, end) = self.span(k);
        let dur_ns = end - start;
        let warmup = k < self.spec.timeline.warmup_intervals;
        let mut fleet = Sample::new(streams);
        per_worker.iter().for_each(|w| fleet += w);
        let relayed = relayed.unwrap_or_default();
        relayed.groups.iter().for_each(|g| fleet += g);
        let host_lost_s: Vec<Option<f64>> = self
            .out
            .host_lost_ns
            .iter()
            .map(|l| l.filter(|&t| t < end).map(|t| t as f64 / 1e9))
            .collect();
        let hosts_lost = host_lost_s.iter().flatten().count() as u32;
        let mut row = IntervalRow::from_sample(
            k,
            start as f64 / 1e9,
            dur_ns as f64 / 1e9,
            warmup,
            hosts_lost,
            &fleet,
        );
        let rates = iofleet_stats::rates_of(&usage);
        (row.net, row.observers) = iofleet_stats::split_by_role(&rates, &self.spec.observers);
        self.push_part_rows(k, dur_ns as f64 / 1e9, &per_worker, &relayed, &rates);
        let gen = self.pending_gen.remove(&k).filter(|g| g.threads > 0);
        if let Some(g) = &gen {
            let workers = self.spec.worker_hosts(&usage).filter_map(Option::as_ref);
            row.generator = Some(g.summary(
                g.threads,
                &fleet.all(),
                HostUsage::busiest_other_load(workers),
            ));
        }
        if !warmup || self.spec.simulated_time {
            self.add_usage(&usage, fleet.all().ios);
        }
        if !warmup {
            self.add_measured(&per_disk, gen.as_ref(), dur_ns, row.iops);
        }
        observer.interval(&IntervalSnapshot {
            row: &row,
            workers: &per_worker,
            disks: &per_disk,
            hosts: &self.spec.hosts,
            worker_host: &self.spec.worker_host,
            usage: &usage,
            generator: gen.as_ref(),
            host_lost_s: &host_lost_s,
            layout: &self.layout,
            relayed: &relayed,
            stopped_at: self.cuts.get(&k).copied(),
            ran_through: self.ran_through.contains(&k),
        });
        self.out.rows.push(row);
    }

    /// Interval `k`'s rows per host and per group: the workers reported here merged
    /// per host and group, with what relays merged for the hosts and groups below them.
    fn push_part_rows(
        &mut self,
        k: u32,
        duration_s: f64,
        per_worker: &[Sample],
        relayed: &RelayedParts,
        rates: &[Option<iofleet_stats::HostResources>],
    ) {
        let (per_host, mut per_group) = self.layout.sums(per_worker, self.streams);
        for (sum, g) in per_group.iter_mut().zip(&relayed.groups) {
            *sum += g;
        }
        let mut host_rows: Vec<PartRow> = per_host
            .iter()
            .map(|s| PartRow::from_sample(k, duration_s, s))
            .collect();
        for b in &relayed.hosts {
            host_rows[b.host as usize] = b.row(k, duration_s);
        }
        for (row, r) in host_rows.iter_mut().zip(rates) {
            row.usage = r.clone();
        }
        let group_rows = per_group
            .iter()
            .map(|s| PartRow::from_sample(k, duration_s, s))
            .collect();
        self.layout.push_rows(
            host_rows,
            group_rows,
            &mut self.out.host_rows,
            &mut self.out.group_rows,
        );
    }

    /// Per host, its usage over interval `k`: as reported, and this machine's probe as
    /// host 0.
    fn interval_usage(&mut self, k: u32) -> Vec<Option<HostUsage>> {
        let mut usage = self
            .pending_usage
            .remove(&k)
            .unwrap_or_else(|| vec![None; self.spec.hosts.len()]);
        if let Some(p) = self.probe.as_mut() {
            usage[0] = Some(p.sample());
        }
        usage
    }

    /// Interval `k`'s start and end (ns since the epoch): a stop inside it cuts it short,
    /// unless some source ran through it.
    fn span(&self, k: u32) -> (u64, u64) {
        let timeline = self.spec.timeline;
        let start = timeline.boundaries[k as usize];
        let mut end = timeline.boundaries[k as usize + 1];
        if let Some(&cut) = self.cuts.get(&k).filter(|_| !self.ran_through.contains(&k)) {
            if cut > start && cut < end {
                end = cut; // the interval a stop cut short
            }
        }
        (start, end)
    }

    /// Fold what the hosts spent over an interval, and its I/Os, into the run's usage.
    fn add_usage(&mut self, usage: &[Option<HostUsage>], ios: u64) {
        for (tot, u) in self.out.host_usage.iter_mut().zip(usage) {
            if let Some(u) = u {
                *tot += u;
            }
        }
        self.out.usage_ios += ios;
    }

    /// Fold a measured interval into the run's totals: generator figures, per-disk
    /// samples, measured time, and its IOPS for the median.
    fn add_measured(
        &mut self,
        per_disk: &[Vec<Sample>],
        gen: Option<&GenSample>,
        dur_ns: u64,
        iops: f64,
    ) {
        let streams = self.streams;
        let out = &mut self.out;
        if let Some(g) = gen {
            out.generator += g;
            out.io_threads = out.io_threads.max(g.threads);
        }
        for (tot, disks) in out.worker_totals.iter_mut().zip(per_disk) {
            if tot.len() < disks.len() {
                tot.resize(disks.len(), PackedSample::new(streams));
            }
            for (t, d) in tot.iter_mut().zip(disks) {
                t.add(d);
            }
        }
        out.measured_ns += dur_ns;
        if counts_in_median(dur_ns, self.nominal) {
            out.interval_iops.push(iops);
        }
    }

    /// What relays lost before their totals came measured, per group, for the fleet's
    /// and the groups' totals.
    fn unsent_totals(&mut self) {
        let n = self.spec.groups.len();
        let mut unsent = vec![Sample::new(self.streams); n];
        for per_group in std::mem::take(&mut self.relay_measured).values() {
            for (sum, g) in unsent.iter_mut().zip(per_group) {
                *sum += g;
            }
        }
        if unsent.iter().any(|g| g.ios() + g.errors() > 0) {
            self.out.unsent_groups = unsent;
        }
    }

    /// Every source has ended, and no interval is left to emit.
    fn finished(&self) -> bool {
        self.done.iter().all(|&d| d)
            && (self.next_emit >= self.n_intervals
                || (self.pending.is_empty() && self.pending_relayed.is_empty()))
    }
}

/// Why a source was given up on: silent for `grace`, or not ended within it.
fn given_up_reason(name: &str, silent: bool, grace: Duration, heard_ns: u64) -> String {
    if silent {
        format!(
            "{} stopped responding: nothing heard from it for {} s (last at {:.1} s)",
            name,
            grace.as_secs_f64(),
            heard_ns as f64 / 1e9
        )
    } else {
        format!(
            "{} did not finish within {} s of the run's end",
            name,
            grace.as_secs_f64()
        )
    }
}

/// Turn what was collected into the result.
pub(crate) fn summarize(
    spec: &CollectSpec<'_>,
    col: Collected,
    info: RunInfo,
    configured_outstanding: u64,
    start_late_ms: &[Option<f64>],
    mut notices: Vec<String>,
) -> RunResult {
    let elapsed_s = col.measured_ns as f64 / 1e9;
    let layout = spec.layout();
    let n_streams = spec.plan.streams.len();
    let facts = host_facts(spec, &col, start_late_ms);
    let Folded {
        fleet,
        streams,
        mut workers,
        hosts,
        groups,
        ..
    } = layout.fold_with(
        col.worker_totals
            .iter()
            .map(|disks| worker_total(disks, n_streams)),
        &col.unsent_groups,
        &facts,
        elapsed_s,
    );
    DiskUnmeasured::fill(
        &mut workers,
        col.unmeasured
            .iter()
            .map(|(&(worker, disk), &ios)| DiskUnmeasured { worker, disk, ios }),
    );
    let all = fleet.all();
    let usage_ios = col.usage_ios as f64;
    let per_io = |s: f64| (usage_ios > 0.0).then(|| s * 1e6 / usage_ios);
    let workers_usage: Vec<HostUsage> = spec.worker_hosts(&col.host_usage).cloned().collect();
    // Rates over the measured phase (a host that reported nothing has none).
    let rates: Vec<_> = col.host_usage.iter().map(HostUsage::summary).collect();
    let (net, observers) = iofleet_stats::split_by_role(&rates, &spec.observers);
    push_loss_notices(spec, &col, &mut notices);
    let mut errors = col.errors;
    errors.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    push_taken_out_notices(&col.disks, &mut notices);
    let summary = RunSummary {
        all: OpSummary::from_ops(&all, elapsed_s),
        read: OpSummary::from_ops(&fleet.read(), elapsed_s),
        write: OpSummary::from_ops(&fleet.write(), elapsed_s),
        iops_median_interval: median_of(&col.interval_iops),
        outstanding_io: Outstanding {
            configured: Some(configured_outstanding),
            measured_mean: (col.measured_ns > 0)
                .then(|| all.latency_sum_ns as f64 / col.measured_ns as f64),
        },
        cpu: fleet_cpu(&workers_usage, per_io),
        // Nothing measured, nothing to report (not this process's memory at the stop).
        memory: (col.measured_ns > 0)
            .then(|| fleet_memory(&workers_usage))
            .flatten(),
        errors: ErrorSummary {
            count: col.error_count,
            first: errors,
            failed_threads: col.failures,
            disks: col.disks,
        },
        generator: (col.generator.threads > 0).then(|| {
            let other = HostUsage::busiest_other_load(&workers_usage);
            col.generator.summary(col.io_threads, &all, other)
        }),
        verify: col.verify,
        net,
        observers,
    };
    let mut info = info;
    info.duration_s = elapsed_s;
    info.interrupted = col.max_end_ns < spec.timeline.end_ns();
    RunResult {
        schema_version: SCHEMA_VERSION,
        stored: None,
        run: info,
        summary,
        streams,
        intervals: col.rows,
        workers,
        hosts,
        groups,
        host_intervals: col.host_rows,
        group_intervals: col.group_rows,
        notices,
        steady_state: None,
        // Judged by the command, which knows the quorum (`iofleet_stats::validity`).
        validity: Default::default(),
    }
}

/// What the fold is told about each host: how late it started, when it was lost, what
/// it spent.
fn host_facts(
    spec: &CollectSpec<'_>,
    col: &Collected,
    start_late_ms: &[Option<f64>],
) -> Vec<HostFacts> {
    (0..spec.hosts.len())
        .map(|h| HostFacts {
            start_late_ms: start_late_ms.get(h).copied().flatten(),
            lost_at_s: col.host_lost_ns[h].map(|t| t as f64 / 1e9),
            resources: col.host_usage[h].summary(),
            observer: spec.is_observer(h),
            kubernetes: None,
        })
        .collect()
}

/// A worker's measured total and its disks', unpacked.
fn worker_total(disks: &[PackedSample], n_streams: usize) -> (Sample, Vec<Sample>) {
    let disks: Vec<Sample> = disks.iter().map(PackedSample::to_sample).collect();
    let mut total = Sample::new(n_streams);
    disks.iter().for_each(|d| total += d);
    (total, disks)
}

/// Notices for every lost host (when, and how many intervals went without it), why
/// each was lost, and how many sources failed.
fn push_loss_notices(spec: &CollectSpec<'_>, col: &Collected, notices: &mut Vec<String>) {
    for (h, lost) in col.host_lost_ns.iter().enumerate() {
        if let Some(t) = lost {
            let affected = col.rows.iter().filter(|r| r.hosts_lost > 0).count();
            notices.push(format!(
                "host {} was lost at {:.1} s; {affected} interval(s) were measured without it (hosts_lost > 0)",
                spec.hosts[h],
                *t as f64 / 1e9
            ));
        }
    }
    notices.extend(col.lost_reasons.iter().cloned());
    if !col.failures.is_empty() {
        notices.push(format!(
            "{} source(s) failed; see summary.errors.failed_threads",
            col.failures.len()
        ));
    }
}

/// A notice for every disk taken out after failing I/Os in a row.
fn push_taken_out_notices(disks: &[DiskErrors], notices: &mut Vec<String>) {
    for d in disks.iter() {
        if let Some(t) = d.taken_out_s {
            notices.push(format!(
                "worker {} disk {} was taken out at {t:.3} s after {TAKE_OUT_AFTER} failed I/Os in \
                 a row ({} errors in all; first: {}); the run went on without it",
                d.worker,
                d.disk,
                d.count,
                d.first.first().map_or_else(String::new, |e| format!(
                    "{} at offset {}: {}",
                    e.op, e.offset, e.message
                )),
            ));
        }
    }
}

/// The fleet's CPU from what its hosts spent: iofleet's CPU summed over hosts (percent
/// of one core), the hosts' mean busy share, and both per completed I/O.
fn fleet_cpu(usage: &[HostUsage], per_io: impl Fn(f64) -> Option<f64>) -> Option<CpuSummary> {
    let known: Vec<&HostUsage> = usage.iter().filter(|u| u.wall_s > 0.0).collect();
    let res: Vec<_> = known.iter().filter_map(|u| u.summary()).collect();
    if res.is_empty() {
        return None;
    }
    Some(CpuSummary {
        usr_pct: res.iter().map(|r| r.cpu.usr_pct).sum(),
        sys_pct: res.iter().map(|r| r.cpu.sys_pct).sum(),
        host_pct: res.iter().map(|r| r.cpu.host_pct).sum::<f64>() / res.len() as f64,
        us_per_io: per_io(known.iter().map(|u| u.proc_usr_s + u.proc_sys_s).sum()),
        host_us_per_io: per_io(known.iter().map(|u| u.host_busy_s).sum()),
    })
}

/// The fleet's memory: the largest iofleet peak on any host, the hosts' mean use.
fn fleet_memory(usage: &[HostUsage]) -> Option<MemorySummary> {
    let res: Vec<_> = usage.iter().filter_map(|u| u.summary()).collect();
    if res.is_empty() {
        return Some(MemorySummary {
            rss_peak_mib: sys::rss_peak_mib(),
            host_used_pct: sys::host_mem_used_pct(),
        });
    }
    Some(MemorySummary {
        rss_peak_mib: res
            .iter()
            .map(|r| r.memory.rss_peak_mib)
            .fold(0.0, f64::max),
        host_used_pct: res.iter().map(|r| r.memory.host_used_pct).sum::<f64>() / res.len() as f64,
    })
}

/// The result of a run that measured nothing (interrupted while preparing): every
/// figure is unknown, not zero.
pub(crate) fn empty_result(info: RunInfo, notices: Vec<String>) -> RunResult {
    let empty = OpSummary::from_ops(&OpStats::default(), 0.0);
    let mut info = info;
    info.interrupted = true;
    RunResult {
        schema_version: SCHEMA_VERSION,
        stored: None,
        run: info,
        summary: RunSummary {
            all: empty.clone(),
            read: empty.clone(),
            write: empty,
            iops_median_interval: None,
            outstanding_io: Outstanding::default(),
            cpu: None,
            memory: None,
            errors: ErrorSummary::default(),
            generator: None,
            verify: None,
            net: None,
            observers: None,
        },
        streams: Vec::new(),
        intervals: Vec::new(),
        workers: Vec::new(),
        hosts: Vec::new(),
        groups: Vec::new(),
        host_intervals: Vec::new(),
        group_intervals: Vec::new(),
        notices,
        steady_state: None,
        validity: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        use crate::fixtures::{fleet, plan, stream};
        plan(fleet(3, 1, 1, 1), vec![stream("s", 100.0)])
    }

    fn range(first: u32, workers: u32, rate: Option<f64>) -> GroupRange {
        GroupRange {
            name: format!("g{first}"),
            profile: "p".into(),
            first,
            workers,
            rate_per_worker: rate,
        }
    }

    /// Hosts a (workers 0, 1) and b (worker 2), one group; each worker did `ios[w]`
    /// reads in 1 s.
    fn stragglers(ios: [u64; 3]) -> Vec<bool> {
        stragglers_in(ios, vec![range(0, 3, None)])
    }

    fn stragglers_in(ios: [u64; 3], groups: Vec<GroupRange>) -> Vec<bool> {
        let plan = plan();
        let timeline = Timeline::new(
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        let spec = CollectSpec {
            plan: &plan,
            timeline: &timeline,
            worker_base: 0,
            groups,
            workers: 3,
            source_names: vec!["a".into(), "b".into()],
            hosts: vec!["a".into(), "b".into()],
            worker_host: vec![0, 0, 1],
            observers: Vec::new(),
            source_host: vec![0, 1],
            epoch: Instant::now(),
            silence_grace: None,
            probe: None,
            simulated_time: false,
            below: BTreeMap::new(),
        };
        let worker_totals = ios
            .iter()
            .map(|&n| {
                let mut s = Sample::new(1);
                (0..n).for_each(|_| s.streams[0].read.record(1000, 4096));
                let mut p = PackedSample::new(1);
                p.add(&s);
                vec![p]
            })
            .collect();
        let col = Collected {
            rows: Vec::new(),
            host_rows: Vec::new(),
            group_rows: Vec::new(),
            worker_totals,
            measured_ns: 1_000_000_000,
            interval_iops: Vec::new(),
            errors: Vec::new(),
            error_count: 0,
            disks: Vec::new(),
            unmeasured: BTreeMap::new(),
            failures: Vec::new(),
            max_end_ns: 1_000_000_000,
            host_lost_ns: vec![None, None],
            lost_reasons: Vec::new(),
            host_usage: vec![HostUsage::default(); 2],
            usage_ios: 0,
            generator: GenSample::default(),
            io_threads: 0,
            verify: None,
            unsent_groups: Vec::new(),
        };
        let r = summarize(&spec, col, run_info(), 3, &[], Vec::new());
        assert_eq!(
            r.hosts.iter().map(|h| h.all.ios).sum::<u64>(),
            ios.iter().sum::<u64>()
        );
        r.hosts.iter().map(|h| h.straggler).collect()
    }

    fn run_info() -> RunInfo {
        serde_json::from_value(serde_json::json!({
            "profile": "p", "description": "", "engine": "null", "started_at": "",
            "duration_s": 0.0, "warmup_s": 0.0, "interval_s": 1.0, "interrupted": false,
            "direct": true, "target": "none", "hostname": "h", "iofleet_version": "0",
            "plan": iofleet_profile::RecordedPlan::new(
                &crate::fixtures::plan(
                    crate::fixtures::fleet(3, 1, 1, 1),
                    vec![crate::fixtures::stream("s", 100.0)],
                ),
                &[],
            )
        }))
        .unwrap()
    }

    /// Four hosts of three workers of two disks (12 workers, two groups: 0–4 and 5–11,
    /// so host 1 holds both), two streams, one warm-up and three measured intervals of
    /// 1 s; per interval and host, its samples (random I/Os, latencies over five
    /// decades).
    struct TreeRun {
        plan: Plan,
        timeline: Timeline,
        reports: Vec<Vec<Vec<(u32, u32, Sample)>>>,
        /// Per host: where a stop cut its last interval (None: it ran through).
        stops: Vec<Option<u64>>,
    }

    impl TreeRun {
        fn new(seed: u64) -> TreeRun {
            use rand::{Rng, SeedableRng};
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
            let mut plan = crate::fixtures::plan(
                crate::fixtures::fleet(12, 2, 1, 1),
                vec![
                    crate::fixtures::stream("r", 100.0),
                    crate::fixtures::stream("w", 0.0),
                ],
            );
            plan.timing.warmup = Duration::from_secs(1);
            plan.timing.duration = Duration::from_secs(3);
            let timeline = Timeline::new(
                plan.timing.warmup,
                plan.timing.duration,
                plan.timing.interval,
            );
            let mut reports = Vec::new();
            for _k in 0..4 {
                let mut hosts = Vec::new();
                for h in 0..4u32 {
                    let mut samples = Vec::new();
                    for w in h * 3..h * 3 + 3 {
                        for d in 0..2u32 {
                            let mut s = Sample::new(2);
                            for _ in 0..rng.random_range(0..300) {
                                let lat = 10f64.powf(rng.random_range(3.0..8.0)) as u64;
                                let st = &mut s.streams[rng.random_range(0..2)];
                                if rng.random_bool(0.4) {
                                    st.write.record(lat, 8192);
                                } else {
                                    st.read.record(lat, 4096);
                                }
                            }
                            samples.push((w, d, s));
                        }
                    }
                    hosts.push(samples);
                }
                reports.push(hosts);
            }
            TreeRun {
                plan,
                timeline,
                reports,
                stops: vec![None; 4],
            }
        }

        /// The spec with `sources` reporting, on hosts `source_host`, relays' hosts
        /// below them in `below`.
        fn spec(
            &self,
            source_host: Vec<usize>,
            below: BTreeMap<usize, Vec<usize>>,
        ) -> CollectSpec<'_> {
            CollectSpec {
                plan: &self.plan,
                timeline: &self.timeline,
                worker_base: 0,
                groups: vec![range(0, 5, None), range(5, 7, None)],
                workers: 12,
                source_names: source_host.iter().map(|h| format!("s{h}")).collect(),
                hosts: (0..4).map(|h| format!("h{h}")).collect(),
                worker_host: (0..12).map(|w| w / 3).collect(),
                observers: Vec::new(),
                source_host,
                epoch: Instant::now(),
                silence_grace: None,
                probe: None,
                simulated_time: false,
                below,
            }
        }

        /// Every host its own source, as a flat fleet; hosts in `lost` stop reporting
        /// after interval 2 and are lost at 3 s.
        fn flat(&self, lost: &[u32]) -> RunResult {
            let spec = self.spec(vec![0, 1, 2, 3], BTreeMap::new());
            let (tx, rx) = std::sync::mpsc::channel();
            for (k, hosts) in self.reports.iter().enumerate() {
                for (h, samples) in hosts.iter().enumerate() {
                    if k == 3 && lost.contains(&(h as u32)) {
                        continue;
                    }
                    tx.send(Msg::Interval {
                        source: h as u32,
                        index: k as u32,
                        samples: samples.clone(),
                        errors: Vec::new(),
                        disks: Vec::new(),
                        stopped_at: self.stops[h].filter(|_| k == 3),
                        usage: None,
                        generator: None,
                    })
                    .unwrap();
                }
            }
            for h in 0..4u32 {
                let lost = lost.contains(&h);
                tx.send(Msg::Done {
                    source: h,
                    end_ns: self.end_ns(h, lost),
                    error: lost.then(|| format!("h{h} lost")),
                    errors: Vec::new(),
                    disks: Vec::new(),
                    lost,
                })
                .unwrap();
            }
            drop(tx);
            self.result(&spec, &rx)
        }

        fn end_ns(&self, h: u32, lost: bool) -> u64 {
            match (lost, self.stops[h as usize]) {
                (true, _) => 3_000_000_000,
                (false, Some(t)) => t,
                (false, None) => 4_000_000_000,
            }
        }

        /// Relays on hosts 0 and 2, each with the next host below it; the relay on
        /// host 2 is lost after interval 2 (before its totals) when `lose` is set.
        fn relayed(&self, lose: bool) -> RunResult {
            let below = BTreeMap::from([(0, vec![1]), (1, vec![3])]);
            let spec = self.spec(vec![0, 2], below);
            let (tx, rx) = std::sync::mpsc::channel();
            let groups = spec.groups.clone();
            for (r, hosts) in [[0u32, 1], [2, 3]].iter().enumerate() {
                let lost = lose && r == 1;
                let mut totals = crate::relay::SubtreeTotals::new(1, 4, 2);
                for (k, reports) in self.reports.iter().enumerate() {
                    if k == 3 && lost {
                        break;
                    }
                    let children = hosts.iter().map(|&h| crate::relay::ChildInterval {
                        host: h,
                        samples: &reports[h as usize],
                        stopped_at: None,
                        usage: None,
                    });
                    let merged = crate::relay::merge_interval(k as u32, children, &groups, 2);
                    tx.send(Msg::Relayed {
                        source: r as u32,
                        interval: Box::new(merged),
                    })
                    .unwrap();
                    for &h in hosts {
                        totals.add(k as u32, &reports[h as usize]);
                    }
                }
                if !lost {
                    tx.send(Msg::RelayTotals {
                        source: r as u32,
                        totals: totals.samples(),
                    })
                    .unwrap();
                }
                tx.send(Msg::Done {
                    source: r as u32,
                    end_ns: if lost { 3_000_000_000 } else { 4_000_000_000 },
                    error: lost.then(|| "the relay on h2 lost".to_string()),
                    errors: Vec::new(),
                    disks: Vec::new(),
                    lost,
                })
                .unwrap();
            }
            drop(tx);
            self.result(&spec, &rx)
        }

        /// Relays on hosts 0 and 2 as they run: each relay's own collector over its
        /// two hosts (their agents' messages), its `Forwarder` sending up what the
        /// controller's collector then takes in. Host 3 stops after interval 2 and is
        /// lost at 3 s when `lose_host3` is set; its relay goes on.
        fn relayed_through_collectors(&self, lose_host3: bool) -> RunResult {
            use crate::relay::{Forwarder, SubtreeTotals, Upward};
            let below = BTreeMap::from([(0, vec![1]), (1, vec![3])]);
            let spec = self.spec(vec![0, 2], below);
            let (tx, rx) = std::sync::mpsc::channel();
            for (r, hosts) in [[0u32, 1], [2, 3]].iter().enumerate() {
                let mut relay_spec = self.spec(vec![0, 1], BTreeMap::new());
                relay_spec.worker_base = r as u32 * 6;
                relay_spec.workers = 6;
                relay_spec.hosts = hosts.iter().map(|h| format!("h{h}")).collect();
                relay_spec.worker_host = vec![0, 0, 0, 1, 1, 1];
                let (ctx, crx) = std::sync::mpsc::channel();
                for (k, reports) in self.reports.iter().enumerate() {
                    for (local, &h) in hosts.iter().enumerate() {
                        if lose_host3 && h == 3 && k == 3 {
                            continue;
                        }
                        ctx.send(Msg::Interval {
                            source: local as u32,
                            index: k as u32,
                            samples: reports[h as usize].clone(),
                            errors: Vec::new(),
                            disks: Vec::new(),
                            stopped_at: self.stops[h as usize].filter(|_| k == 3),
                            usage: None,
                            generator: None,
                        })
                        .unwrap();
                    }
                }
                for (local, &h) in hosts.iter().enumerate() {
                    let lost = lose_host3 && h == 3;
                    ctx.send(Msg::Done {
                        source: local as u32,
                        end_ns: self.end_ns(h, lost),
                        error: lost.then(|| format!("h{h} lost")),
                        errors: Vec::new(),
                        disks: Vec::new(),
                        lost,
                    })
                    .unwrap();
                }
                drop(ctx);
                let mut up = Vec::new();
                let mut fwd = Forwarder::new(
                    hosts.to_vec(),
                    relay_spec.groups.clone(),
                    SubtreeTotals::new(1, 4, 2),
                    |u| up.push(u),
                );
                let stop = std::sync::atomic::AtomicBool::new(false);
                collect(&crx, &relay_spec, &mut fwd, &stop, &mut |_| {});
                let totals = fwd.totals.samples();
                for u in up {
                    tx.send(match u {
                        Upward::Interval(interval) => Msg::Relayed {
                            source: r as u32,
                            interval,
                        },
                        Upward::HostLost {
                            host,
                            at_ns,
                            reason,
                        } => Msg::HostLost {
                            source: r as u32,
                            host,
                            at_ns,
                            reason,
                        },
                    })
                    .unwrap();
                }
                tx.send(Msg::RelayTotals {
                    source: r as u32,
                    totals,
                })
                .unwrap();
                tx.send(Msg::Done {
                    source: r as u32,
                    end_ns: hosts.iter().map(|&h| self.end_ns(h, false)).max().unwrap(),
                    error: None,
                    errors: Vec::new(),
                    disks: Vec::new(),
                    lost: false,
                })
                .unwrap();
            }
            drop(tx);
            self.result(&spec, &rx)
        }

        fn result(&self, spec: &CollectSpec<'_>, rx: &Receiver<Msg>) -> RunResult {
            let stop = std::sync::atomic::AtomicBool::new(false);
            let col = collect(rx, spec, &mut crate::Silent, &stop, &mut |_| {});
            summarize(spec, col, run_info(), 1, &[], Vec::new())
        }
    }

    #[test]
    fn relays_give_the_flat_result_figure_for_figure() {
        let run = TreeRun::new(17);
        let (mut flat, mut tree) = (run.flat(&[]), run.relayed(false));
        // This process's memory, read at each summary: not a figure of the merge.
        (flat.summary.memory, tree.summary.memory) = (None, None);
        assert!(flat.summary.all.ios > 1000, "{}", flat.summary.all.ios);
        assert_eq!(tree.intervals, flat.intervals, "the fleet's interval rows");
        assert_eq!(tree.host_intervals, flat.host_intervals, "each host's rows");
        assert_eq!(
            tree.group_intervals, flat.group_intervals,
            "each group's rows"
        );
        assert_eq!(tree.summary, flat.summary);
        assert_eq!(tree.streams, flat.streams);
        assert_eq!(
            tree.workers, flat.workers,
            "every worker's and disk's totals"
        );
        assert_eq!(tree.hosts, flat.hosts);
        assert_eq!(tree.groups, flat.groups);
    }

    #[test]
    fn relays_running_their_own_collectors_give_the_flat_result() {
        // Each relay's collector decides completeness and loss below it; its forwarder
        // sends the merge up. Whole, and with a host lost below a relay that goes on.
        for (lose, stops) in [
            (false, [None; 4]),
            (true, [None; 4]),
            // A stop inside the last interval: it ends at the latest host's stop...
            (
                false,
                [3_400_000_000, 3_600_000_000, 3_500_000_000, 3_450_000_000].map(Some),
            ),
            // ... unless one ran through it.
            (
                false,
                [
                    Some(3_400_000_000),
                    None,
                    Some(3_500_000_000),
                    Some(3_450_000_000),
                ],
            ),
        ] {
            let mut run = TreeRun::new(29);
            run.stops = stops.to_vec();
            let lost: &[u32] = if lose { &[3] } else { &[] };
            let (mut flat, mut tree) = (run.flat(lost), run.relayed_through_collectors(lose));
            (flat.summary.memory, tree.summary.memory) = (None, None);
            assert!(flat.summary.all.ios > 1000);
            assert_eq!(tree.intervals, flat.intervals, "lose {lose}");
            assert_eq!(tree.host_intervals, flat.host_intervals, "lose {lose}");
            assert_eq!(tree.group_intervals, flat.group_intervals, "lose {lose}");
            assert_eq!(tree.summary, flat.summary, "lose {lose}");
            assert_eq!(tree.workers, flat.workers, "lose {lose}");
            assert_eq!(tree.hosts, flat.hosts, "lose {lose}");
            assert_eq!(tree.groups, flat.groups, "lose {lose}");
            assert_eq!(tree.intervals[3].hosts_lost, lost.len() as u32);
            let last = tree.intervals[3].duration_s;
            match stops {
                [Some(_), Some(_), ..] => assert!((last - 0.6).abs() < 1e-9, "{last}"),
                _ => assert!((last - 1.0).abs() < 1e-9, "{last}"),
            }
        }
    }

    #[test]
    fn a_lost_relay_loses_the_hosts_below_it_at_once_and_the_totals_keep_their_work() {
        let run = TreeRun::new(23);
        let (flat, tree) = (run.flat(&[2, 3]), run.relayed(true));
        assert_eq!(
            tree.intervals, flat.intervals,
            "hosts_lost counts both hosts"
        );
        assert_eq!(tree.intervals[3].hosts_lost, 2);
        let lost_at: Vec<Option<f64>> = tree.hosts.iter().map(|h| h.lost_at_s).collect();
        assert_eq!(lost_at, [None, None, Some(3.0), Some(3.0)]);
        assert_eq!(
            lost_at,
            flat.hosts.iter().map(|h| h.lost_at_s).collect::<Vec<_>>()
        );
        // What the lost hosts did before the loss counts in the fleet's and groups'
        // totals, as in a flat fleet; the hosts' own totals went with their relay.
        assert_eq!(tree.summary.all, flat.summary.all);
        assert_eq!(tree.streams, flat.streams);
        assert_eq!(tree.groups, flat.groups);
        assert_eq!(tree.hosts[..2], flat.hosts[..2]);
        assert!(flat.hosts[2].all.ios > 0);
        assert_eq!(tree.hosts[2].all.ios, 0);
    }

    #[test]
    fn a_stop_cuts_only_intervals_no_source_ran_through() {
        // Source 0 stops at 0.95 s inside interval 0; source 1 runs interval 0 to its
        // end and stops at 1.03 s inside interval 1.
        let plan = plan();
        let timeline = Timeline::new(
            Duration::ZERO,
            Duration::from_secs(3),
            Duration::from_secs(1),
        );
        let spec = CollectSpec {
            plan: &plan,
            timeline: &timeline,
            worker_base: 0,
            groups: vec![range(0, 2, None)],
            workers: 2,
            source_names: vec!["t0".into(), "t1".into()],
            hosts: vec!["h".into()],
            worker_host: vec![0, 0],
            observers: Vec::new(),
            source_host: vec![0, 0],
            epoch: Instant::now(),
            silence_grace: None,
            probe: None,
            simulated_time: false,
            below: BTreeMap::new(),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let interval = |source: u32, index: u32, stopped_at: Option<u64>| Msg::Interval {
            source,
            index,
            samples: vec![(source, 0, Sample::new(1))],
            errors: Vec::new(),
            disks: Vec::new(),
            stopped_at,
            usage: None,
            // Each source's I/O thread: 40% busy over its 1 s, 100 µs in the run
            // queue, 10 I/Os, one open-loop I/O issued 5 µs late.
            generator: Some({
                let mut g = GenSample::thread_span(1_000_000_000, 400_000_000, Some(100_000), 10);
                g.lag.record(5_000);
                Box::new(g)
            }),
        };
        let done = |source: u32, end_ns: u64| Msg::Done {
            source,
            end_ns,
            error: None,
            errors: Vec::new(),
            disks: Vec::new(),
            lost: false,
        };
        tx.send(interval(0, 0, Some(950_000_000))).unwrap();
        tx.send(done(0, 950_000_000)).unwrap();
        tx.send(interval(1, 0, None)).unwrap();
        tx.send(interval(1, 1, Some(1_030_000_000))).unwrap();
        tx.send(done(1, 1_030_000_000)).unwrap();
        drop(tx);
        let stop = std::sync::atomic::AtomicBool::new(true);
        let col = collect(&rx, &spec, &mut crate::Silent, &stop, &mut |_| {});
        let d: Vec<f64> = col.rows.iter().map(|r| r.duration_s).collect();
        assert_eq!(col.rows.len(), 2);
        assert!(
            (d[0] - 1.0).abs() < 1e-9,
            "interval 0 ran through on t1: {d:?}"
        );
        assert!(
            (d[1] - 0.03).abs() < 1e-9,
            "interval 1 cut at the stop: {d:?}"
        );
        assert_eq!(col.measured_ns, 1_030_000_000);
        // The self-check folds every source's figures per interval and over the run.
        let g0 = col.rows[0]
            .generator
            .as_ref()
            .expect("interval 0 self-check");
        assert_eq!(g0.io_threads, 2);
        assert!((g0.busy_pct - 40.0).abs() < 1e-9);
        assert_eq!(g0.runq_us_per_io, Some(10.0));
        assert_eq!(g0.open_loop_ios, 2);
        assert_eq!(col.io_threads, 2);
        assert_eq!(
            col.generator.threads, 3,
            "two in interval 0, one in interval 1"
        );
        assert_eq!(col.generator.ios, 30);
    }

    #[test]
    fn samples_merge_per_disk_and_a_disk_beyond_any_worker_is_ignored() {
        let plan = plan();
        let timeline = Timeline::new(
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        let spec = CollectSpec {
            plan: &plan,
            timeline: &timeline,
            worker_base: 0,
            groups: vec![range(0, 1, None)],
            workers: 1,
            source_names: vec!["t0".into(), "t1".into()],
            hosts: vec!["h".into()],
            worker_host: vec![0],
            observers: Vec::new(),
            source_host: vec![0, 0],
            epoch: Instant::now(),
            silence_grace: None,
            probe: None,
            simulated_time: false,
            below: BTreeMap::new(),
        };
        let reads = |n: u64| {
            let mut s = Sample::new(1);
            (0..n).for_each(|_| s.streams[0].read.record(1000, 4096));
            s
        };
        let (tx, rx) = std::sync::mpsc::channel();
        // Two threads drive disks 0 and 2 of worker 0; one garbled entry names disk 5000.
        for (source, samples) in [
            (0u32, vec![(0u32, 0u32, reads(3))]),
            (1, vec![(0, 2, reads(5)), (0, 5000, reads(7))]),
        ] {
            tx.send(Msg::Interval {
                source,
                index: 0,
                samples,
                errors: Vec::new(),
                disks: Vec::new(),
                stopped_at: None,
                usage: None,
                generator: None,
            })
            .unwrap();
            tx.send(Msg::Done {
                source,
                end_ns: 1_000_000_000,
                error: None,
                errors: Vec::new(),
                disks: Vec::new(),
                lost: false,
            })
            .unwrap();
        }
        drop(tx);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let col = collect(&rx, &spec, &mut crate::Silent, &stop, &mut |_| {});
        assert_eq!(col.rows[0].ios, 8);
        let ios: Vec<u64> = col.worker_totals[0]
            .iter()
            .map(|d| d.to_sample().ios())
            .collect();
        assert_eq!(ios, [3, 0, 5]);
        assert_eq!(col.host_rows[0].rows[0].read.ios, 8);
        assert_eq!(col.group_rows[0].rows[0].all.ios, 8);
    }

    #[test]
    fn a_silent_source_is_given_up_after_the_grace() {
        let plan = plan();
        let timeline = Timeline::new(
            Duration::ZERO,
            Duration::from_millis(100),
            Duration::from_millis(100),
        );
        let spec = CollectSpec {
            plan: &plan,
            timeline: &timeline,
            worker_base: 0,
            groups: vec![range(0, 1, None)],
            workers: 1,
            source_names: vec!["host quiet".into()],
            hosts: vec!["quiet".into()],
            worker_host: vec![0],
            observers: Vec::new(),
            source_host: vec![0],
            epoch: Instant::now(),
            silence_grace: Some(Duration::from_millis(200)),
            probe: None,
            simulated_time: false,
            below: BTreeMap::new(),
        };
        // The sender stays alive and silent, as a frozen host's connection would.
        let (_tx, rx) = std::sync::mpsc::channel::<Msg>();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let col = collect(&rx, &spec, &mut crate::Silent, &stop, &mut |_| {});
        assert!(col.host_lost_ns[0].is_some());
        assert!(
            col.lost_reasons[0].contains("stopped responding"),
            "{:?}",
            col.lost_reasons
        );
    }

    #[test]
    fn hosts_are_compared_per_worker() {
        // b runs one worker at the same per-worker rate as a's two: not a straggler.
        assert_eq!(stragglers([100, 100, 100]), [false, false]);
        // b's worker delivers half of a's per-worker rate: a straggler.
        assert_eq!(stragglers([100, 100, 50]), [false, true]);
    }

    #[test]
    fn a_rate_limited_group_is_judged_against_its_own_rate() {
        // a runs a closed-loop group (workers 0, 1), b a group scheduled at 10 IOPS per
        // worker (worker 2): b delivering its 10 IOPS is on par, not a straggler beside
        // a's 100; delivering 5 of its 10 it is one.
        let groups = || vec![range(0, 2, None), range(2, 1, Some(10.0))];
        assert_eq!(stragglers_in([100, 100, 10], groups()), [false, false]);
        assert_eq!(stragglers_in([100, 100, 5], groups()), [false, true]);
        // Judged against the fleet instead, b would have been flagged.
        assert_eq!(stragglers([100, 100, 10]), [false, true]);
    }

    /// One source on one host: a 1 s warm-up and two measured 1 s intervals of 1,000
    /// reads each, whose reports took 0.9 s, then 2 ms and 1 ms of real time, as a
    /// simulation's do when the threads race ahead of the collector. Returns the
    /// collected run and its CPU figure.
    fn cpu_of_a_burst(simulated_time: bool) -> (Collected, CpuSummary) {
        let plan = plan();
        let timeline = Timeline::new(
            Duration::from_secs(1),
            Duration::from_secs(2),
            Duration::from_secs(1),
        );
        let spec = CollectSpec {
            plan: &plan,
            timeline: &timeline,
            worker_base: 0,
            groups: vec![range(0, 1, None)],
            workers: 1,
            source_names: vec!["host a".into()],
            hosts: vec!["a".into()],
            worker_host: vec![0],
            observers: Vec::new(),
            source_host: vec![0],
            epoch: Instant::now(),
            silence_grace: None,
            probe: None,
            simulated_time,
            below: BTreeMap::new(),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        // (real seconds, CPU seconds) per interval: one core busy throughout.
        for (index, (wall_s, cpu_s)) in [(0.9, 0.9), (0.002, 0.002), (0.001, 0.001)]
            .into_iter()
            .enumerate()
        {
            let mut s = Sample::new(1);
            (0..1000).for_each(|_| s.streams[0].read.record(1000, 4096));
            tx.send(Msg::Interval {
                source: 0,
                index: index as u32,
                samples: vec![(0, 0, s)],
                errors: Vec::new(),
                disks: Vec::new(),
                stopped_at: None,
                usage: Some(HostUsage {
                    wall_s,
                    proc_usr_s: cpu_s,
                    ..Default::default()
                }),
                generator: None,
            })
            .unwrap();
        }
        tx.send(Msg::Done {
            source: 0,
            end_ns: 3_000_000_000,
            error: None,
            errors: Vec::new(),
            disks: Vec::new(),
            lost: false,
        })
        .unwrap();
        drop(tx);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let col = collect(&rx, &spec, &mut crate::Silent, &stop, &mut |_| {});
        let ios = col.usage_ios as f64;
        let cpu = fleet_cpu(&col.host_usage, |s| Some(s * 1e6 / ios)).unwrap();
        (col, cpu)
    }

    #[test]
    fn simulated_time_keeps_cpu_over_the_real_time_of_every_interval() {
        // Real time: the measured intervals' spans, as before.
        let (col, cpu) = cpu_of_a_burst(false);
        assert_eq!(col.usage_ios, 2000);
        assert!((col.host_usage[0].wall_s - 0.003).abs() < 1e-12);
        assert!((cpu.us_per_io.unwrap() - 1.5).abs() < 1e-9, "{cpu:?}");
        // Simulated time: every interval, warm-up included, so the figure is the CPU
        // over the real time the simulation took, and per I/O over all its I/Os.
        let (col, cpu) = cpu_of_a_burst(true);
        assert_eq!(col.usage_ios, 3000);
        assert_eq!(
            col.measured_ns, 2_000_000_000,
            "the measured phase is unchanged"
        );
        assert!((col.host_usage[0].wall_s - 0.903).abs() < 1e-12);
        assert!((cpu.usr_pct - 100.0).abs() < 1e-9, "{cpu:?}");
        assert!((cpu.us_per_io.unwrap() - 301.0).abs() < 1e-9, "{cpu:?}");
    }
}
