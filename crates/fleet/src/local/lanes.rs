//! Lanes on shared rings: the I/O thread loop.
//!
//! A *lane* is a thread of a disk as the profile means it: its own sequential cursors,
//! its own random generator (seeded from the run seed and its place), its own queue
//! depth, stream choice and arrival schedule. A lane is not an OS thread. An *I/O
//! thread* owns one engine (one ring, holding every file its lanes use) and drives many
//! lanes of many disks and workers: it keeps every closed-loop queue full, issues every
//! open-loop queue at its intended times from one timer heap, and records each
//! completion into its lane's (worker, disk) interval `Sample` (an index fixed per lane
//! when the thread starts), so per-disk, per-worker and per-stream statistics stay exact
//! and merge with the same `+=`. A lane issues the same I/O
//! sequence for the same seed whatever else shares its thread.
//!
//! The loop (`Driver::drive`) reads as issue (closed-loop queues' free slots, then due
//! open-loop arrivals), wait (one `submit_and_reap` until a completion, the next
//! arrival, the interval's end or a stop poll), close the intervals passed, account
//! each completion; verify checks and the error path (`record_failure`, cold) are
//! named functions of their own. It is generic over the engine and the clock, so the
//! choice is made once per thread and costs nothing per I/O. Per I/O it only generates an offset, fills write
//! data from the lane's data pattern (`iofleet_engine::pattern`), queues, and records: no
//! allocation, no locks, no channels. With `--verify` a write also gets a verify header
//! per 4 KiB unit (over the pattern's data) and a read's units are checked on
//! completion, against the disk's lock-free floor table (`iofleet_engine::verify`,
//! docs/verify.md); what the checks found is sent once, at the end, before the thread's
//! `Done`. Once per interval it hands its (worker, disk) `Sample`s, and its own CPU and
//! scheduling figures (the generator
//! self-check, `GenSample`), to the collector over a channel.
//! In an open-loop queue an I/O that waits for a free slot is charged for the wait: its
//! latency counts from its intended issue time (no coordinated omission). An I/O whose
//! slot was free is timed from when it was issued; how late that was against its
//! schedule (timer wake-up, a busy thread) is the generator's issue lag, reported by the
//! self-check rather than added to the storage's latency.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use iofleet_engine::verify::{check_unit, stamp_units, DiskTable, Fault, UnitSnap, UNIT};
use iofleet_engine::{Clock, Completion, Engine, EngineError, IoReq, OpKind, Pattern, PatternSpec};
use iofleet_profile::{Arrival, Plan};
use iofleet_stats::result::{Corruption, ErrorDetail, VerifySummary, MAX_CORRUPTION_DETAILS};
use iofleet_stats::result::{DiskErrors, DiskUnmeasured, Unmeasured};
use iofleet_stats::{GenSample, Sample};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::gen::StreamGen;
use crate::source::{Msg, Timeline, TAKE_OUT_AFTER, TAKE_OUT_WINDOW};
use crate::sys::ThreadMeter;

/// The longest the loop waits for completions without looking at the stop flag (a
/// device that stopped answering). An idle thread (nothing in flight) naps until its
/// next I/O or interval boundary: whoever stops the run rings `wake_sleepers`.
const STOP_POLL_NS: u64 = 100_000_000;
/// The latency each sample's histograms are sized for before the start instant (48 KiB
/// of counts each): a memory-backed device's or the null engine's whole range.
const RESERVED_LATENCY_NS: u64 = 32_000;
/// Error details kept per I/O thread (the count is never capped).
const MAX_ERROR_DETAILS: usize = 10;
/// Which lanes of the run were taken out (their disk kept failing), shared by every
/// I/O thread of a process: a lane that trips the rule takes out its disk's other lanes
/// too, wherever they run.
#[derive(Debug, Default)]
pub struct TakenOut {
    lanes: Vec<AtomicBool>,
    any: AtomicBool,
}

impl TakenOut {
    /// Nothing taken out yet, for `lanes` lanes.
    pub fn new(lanes: usize) -> Self {
        TakenOut {
            lanes: (0..lanes).map(|_| AtomicBool::new(false)).collect(),
            any: AtomicBool::new(false),
        }
    }

    #[inline]
    fn is_out(&self, lane: usize) -> bool {
        self.lanes
            .get(lane)
            .is_some_and(|l| l.load(Ordering::Relaxed))
    }

    /// Take out every lane of `lane`'s disk (lanes of a disk are contiguous in `all`).
    fn take_out_disk(&self, all: &[LaneSpec], lane: usize) {
        let same = |i: usize| all[i].worker == all[lane].worker && all[i].disk == all[lane].disk;
        let first = (0..=lane)
            .rev()
            .take_while(|&i| same(i))
            .last()
            .unwrap_or(lane);
        for i in (first..all.len()).take_while(|&i| same(i)) {
            if let Some(l) = self.lanes.get(i) {
                l.store(true, Ordering::Relaxed);
            }
        }
        self.any.store(true, Ordering::Relaxed);
    }
}

/// One queue of a lane: streams sharing a queue depth and (optionally) an arrival rate.
#[derive(Debug, Clone)]
pub struct QueueSpec {
    /// (stream index in the plan, weight) pairs.
    pub streams: Vec<(usize, u32)>,
    pub qd: u32,
    /// Arrivals per second for this lane's queue; None = closed loop.
    pub rate: Option<f64>,
    pub arrival: Arrival,
}

/// One lane: a thread of one disk of one worker, as the profile means it.
#[derive(Debug, Clone)]
pub struct LaneSpec {
    pub worker: u32,
    pub disk: u32,
    pub thread: u32,
    pub threads_per_disk: u32,
    pub queues: Vec<QueueSpec>,
    pub seed: u64,
    /// Region of the disk within the opened file or device.
    pub region_offset: u64,
    pub disk_size: u64,
    /// What the lane's writes carry (its group's `[data]`).
    pub data: PatternSpec,
}

impl LaneSpec {
    pub fn slots(&self) -> u32 {
        self.queues.iter().map(|q| q.qd).sum()
    }
}

/// Bytes each lane holds while a run goes, for planning memory (`footprint`): its spec,
/// its generator state, one queue with a stream generator, the disk its spec points at,
/// and the small vectors these own (queue streams, pick and free lists, the look-ahead
/// deque, block-size tables, the disk's path), counted at `LANE_HEAP_BYTES`.
pub const LANE_BYTES: u64 = (std::mem::size_of::<LaneSpec>()
    + std::mem::size_of::<QueueSpec>()
    + std::mem::size_of::<Lane>()
    + std::mem::size_of::<Queue>()
    + std::mem::size_of::<StreamGen>()
    + std::mem::size_of::<Option<iofleet_engine::target::DiskLayout>>()
    + LANE_HEAP_BYTES) as u64;
const LANE_HEAP_BYTES: usize = 512;

/// Bytes each I/O in flight holds besides its buffer: its slot, its place in the
/// completion lists (the thread's and the engine's) and in its queue's free list, and
/// its share of the engine's ring (io_uring: a 64-byte submission and two 16-byte
/// completion entries, rounded up to a power of two).
pub const SLOT_BYTES: u64 = (std::mem::size_of::<Slot>()
    + 2 * std::mem::size_of::<Completion>()
    + std::mem::size_of::<u32>()
    + 2 * (64 + 2 * 16)) as u64;

/// What one I/O thread drives.
#[derive(Debug, Clone, Default)]
pub struct IoThreadSpec {
    /// Source index towards the collector.
    pub id: u32,
    /// Indexes into the run's lanes.
    pub lanes: Vec<usize>,
    /// Per lane (same order): the engine file it uses.
    pub files: Vec<u32>,
    /// The CPU this thread is pinned to, if any.
    pub cpu: Option<usize>,
}

#[derive(Clone, Copy)]
struct Slot {
    intended_ns: u64,
    offset: u64,
    len: u32,
    /// Stream index in the plan.
    stream: u16,
    queue: u32,
    op: OpKind,
    /// The write's verify sequence (`--verify`).
    seq: u64,
}

/// A lane's generator state.
struct Lane {
    rng: SmallRng,
    /// (plan stream index, its generator) for the streams this lane uses.
    gens: Vec<(usize, StreamGen)>,
    /// Index of the lane's (worker, disk) in the thread's samples.
    sample: usize,
    file: u32,
    region_offset: u64,
    /// The content of the lane's writes, salted with the lane's seed.
    data: Pattern,
    /// Index of the lane in the run's lanes.
    global: usize,
    /// Failed I/Os in a row (reset by a success).
    fail_streak: u32,
    /// Completions and failures in the lane's current window of `TAKE_OUT_WINDOW`.
    window_ios: u32,
    window_fails: u32,
    /// The floor table of the lane's disk (`--verify`).
    table: Option<Arc<DiskTable>>,
}

/// An I/O thread's verify state: per slot, the units' state when its read was issued,
/// and what the reads found.
struct Checks {
    /// Units per slot (the largest block / 4 KiB).
    per_slot: usize,
    snaps: Vec<UnitSnap>,
    /// Wall-clock ns since the UNIX epoch at the timeline's 0 (for header timestamps).
    wall_base_ns: u64,
    found: VerifySummary,
}

struct Queue {
    lane: u32,
    pick_cum: Vec<u32>,
    /// Per stream choice: index into the lane's `gens`.
    pick_gen: Vec<u16>,
    free: Vec<u32>,
    /// Mean gap between arrivals in ns (open loop only).
    gap_ns: Option<f64>,
    poisson: bool,
    next_arrival: f64,
    /// Open loop: the next arrival found no free slot; the queue waits for a completion
    /// instead of a timer.
    blocked: bool,
    /// When a slot last became free after none was (issue lag is not counted before).
    free_since: u64,
    /// Verified lanes: the queue's next `LOOK_AHEAD` I/Os (generator index, op, offset,
    /// length), drawn early so their units' table entries are fetched into the cache
    /// while the thread does other work (see `issue`). Empty elsewhere.
    ahead: std::collections::VecDeque<(usize, OpKind, u64, u32)>,
    /// Draw `ahead`: the lane is verified and this is its only queue, a closed-loop one,
    /// so drawing early keeps the lane's draws in the same order (same I/O sequence).
    look_ahead: bool,
}

impl Queue {
    #[inline]
    fn pick(&self, rng: &mut SmallRng) -> usize {
        if self.pick_gen.len() == 1 {
            return self.pick_gen[0] as usize;
        }
        let total = *self.pick_cum.last().unwrap();
        let r = rng.random_range(0..total);
        self.pick_gen[self.pick_cum.partition_point(|&c| c <= r)] as usize
    }

    /// The queue's next I/O from its lane's generators: (generator index, op, offset,
    /// length).
    #[inline]
    fn draw(
        &self,
        rng: &mut SmallRng,
        gens: &mut [(usize, StreamGen)],
    ) -> (usize, OpKind, u64, u32) {
        let g = self.pick(rng);
        let (op, offset, len) = gens[g].1.next(rng);
        (g, op, offset, len)
    }

    #[inline]
    fn advance(&mut self, rng: &mut SmallRng) {
        let gap = self.gap_ns.unwrap_or(0.0);
        self.next_arrival += if self.poisson {
            // Exponential inter-arrival time: -ln(U) × mean, U in (0, 1].
            let u: f64 = 1.0 - rng.random::<f64>();
            -u.ln() * gap
        } else {
            gap
        };
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seed for one lane's generator, derived from the run seed and the lane's place.
pub fn lane_seed(run_seed: u64, worker: u32, disk: u32, thread: u32) -> u64 {
    splitmix(run_seed ^ ((worker as u64) << 40) ^ ((disk as u64) << 20) ^ thread as u64)
}

/// Everything an I/O thread's loop reads.
pub struct ThreadWork<'a> {
    pub spec: &'a IoThreadSpec,
    /// Every lane of the run (the thread drives `spec.lanes` of them).
    pub lanes: &'a [LaneSpec],
    pub plan: &'a Plan,
    pub timeline: &'a Timeline,
    pub stop: &'a AtomicBool,
    pub tx: &'a Sender<Msg>,
    /// Measure the thread's CPU and run-queue delay (real time only).
    pub self_check: bool,
    /// Per lane of the run: its disk's floor table (`--verify`); empty when not verifying.
    pub tables: &'a [Option<Arc<DiskTable>>],
    /// Lanes taken out of the run, shared with the process's other I/O threads.
    pub taken_out: &'a TakenOut,
    /// Called once the thread's state is built, before its first I/O, with when that
    /// I/O is due (ns after the start instant; 0 with a closed-loop queue): waits for
    /// the thread's start. False: the run was stopped meanwhile, nothing is driven.
    pub at_start: &'a dyn Fn(u64) -> bool,
}

/// How many I/Os a verified lane's queue draws ahead (`Queue::ahead`): a few passes of
/// the loop, time for the prefetched table entries to arrive.
const LOOK_AHEAD: usize = 8;

/// Generate, queue and account one I/O of queue `q` in `slot`, intended at `intended`;
/// a write's buffer is filled from the lane's data pattern when `write_data`.
#[inline]
#[allow(clippy::too_many_arguments)]
fn issue<E: Engine>(
    engine: &mut E,
    lanes: &mut [Lane],
    queue: &mut Queue,
    slots: &mut [Slot],
    checks: &mut Checks,
    q: u32,
    slot: u32,
    intended: u64,
    write_data: bool,
) -> Result<(), EngineError> {
    let lane = &mut lanes[queue.lane as usize];
    let (g, op, offset, len) = match queue.ahead.pop_front() {
        Some(next) => next,
        None => queue.draw(&mut lane.rng, &mut lane.gens),
    };
    let stream = lane.gens[g].0;
    let mut vseq = 0;
    if op == OpKind::Write {
        if write_data {
            let buf = engine.buffer_mut(slot);
            lane.data.fill(&mut buf[..len as usize]);
            if let Some(t) = &lane.table {
                // The verify header goes over whatever the data pattern wrote.
                vseq = t.begin_write(offset / UNIT, u64::from(len) / UNIT);
                let time_ns = checks.wall_base_ns + intended;
                stamp_units(&mut buf[..len as usize], t.disk_id, offset, vseq, time_ns);
            }
        }
    } else if let Some(t) = &lane.table {
        let at = slot as usize * checks.per_slot;
        let first = offset / UNIT;
        for k in 0..(u64::from(len) / UNIT) {
            checks.snaps[at + k as usize] = t.snap(first + k);
        }
    }
    slots[slot as usize] = Slot {
        intended_ns: intended,
        offset,
        len,
        stream: stream as u16,
        queue: q,
        op,
        seq: vseq,
    };
    engine.queue(IoReq {
        slot,
        file: lane.file,
        op,
        offset: lane.region_offset + offset,
        len,
    })?;
    // A verified I/O reads its units' table entries first thing (a cache miss each on a
    // large disk, costing as much as the checksum on a fast target): draw the next I/Os
    // now and start fetching their entries, so they are in the cache when issued.
    if queue.look_ahead {
        if let Some(t) = &lane.table {
            while queue.ahead.len() < LOOK_AHEAD {
                let next = queue.draw(&mut lane.rng, &mut lane.gens);
                t.prefetch(next.2 / UNIT, u64::from(next.3) / UNIT);
                queue.ahead.push_back(next);
            }
        }
    }
    Ok(())
}

/// A verified I/O completed: a write ends in the floor table; a read's units are checked.
/// A unit whose checksum fails while a write to it was in flight is counted as racing, not
/// corrupt (the read may have seen part of each write).
#[inline]
fn check_completion<E: Engine>(
    engine: &mut E,
    table: &DiskTable,
    sl: &Slot,
    c: &iofleet_engine::Completion,
    ls: &LaneSpec,
    checks: &mut Checks,
    t: u64,
) {
    let first = sl.offset / UNIT;
    let n = u64::from(sl.len) / UNIT;
    let ok = c.result >= 0 && c.result as u32 == sl.len;
    if sl.op == OpKind::Write {
        table.end_write(first, n, sl.seq, ok);
        return;
    }
    if !ok {
        return;
    }
    let buf = engine.buffer_mut(c.slot);
    let at = c.slot as usize * checks.per_slot;
    for k in 0..n {
        let snap = checks.snaps[at + k as usize];
        let lo = (k * UNIT) as usize;
        let off = sl.offset + k * UNIT;
        let unit = &buf[lo..lo + UNIT as usize];
        match check_unit(unit, table.disk_id, off, snap.floor) {
            Ok(_) => checks.found.units_checked += 1,
            Err(Fault::Checksum { .. }) if !table.quiet_since(first + k, snap) => {
                checks.found.units_racing += 1
            }
            Err(fault) => {
                checks.found.units_checked += 1;
                checks.found.corruptions += 1;
                if checks.found.first.len() < MAX_CORRUPTION_DETAILS {
                    checks.found.first.push(Corruption {
                        host: String::new(),
                        worker: ls.worker,
                        disk: ls.disk,
                        path: table.path.clone(),
                        offset: off,
                        kind: fault.kind().into(),
                        expected: fault.expected(off),
                        found: fault.found(),
                        t_s: Some(t as f64 / 1e9),
                    });
                }
            }
        }
    }
}

/// Drive an I/O thread's lanes until the timeline ends or `stop` is set. Returns the
/// time the thread stopped issuing. Every interval up to the stop (all of them, on a
/// normal end) is sent to `tx`, so the collector can tell when an interval is complete.
pub fn run_lanes<E: Engine, C: Clock>(
    engine: &mut E,
    clock: &C,
    work: &ThreadWork<'_>,
) -> Result<u64, EngineError> {
    // The loop's state (lanes, queues, slots, samples) is built before the start
    // instant, so that threads woken at one instant (many agents on few CPUs, or many
    // I/O threads) do not hold each other up with their set-up.
    let mut driver = Driver::new(engine, clock, work);
    if !(work.at_start)(driver.first_due()) {
        return Ok(0);
    }
    driver.begin();
    let stopped_at = driver.drive()?;
    driver.drain();
    let stopped = driver.hand_over(stopped_at);
    driver.send_unmeasured();
    Ok(stopped)
}

/// One I/O thread's state while it drives its lanes. Its loop (`drive`) reads: issue
/// what is ready and due, wait for completions or the next instant that matters,
/// close the intervals passed, account what completed.
struct Driver<'a, E: Engine, C: Clock> {
    engine: &'a mut E,
    clock: &'a C,
    work: &'a ThreadWork<'a>,
    lanes: Vec<Lane>,
    queues: Vec<Queue>,
    /// Per slot: the I/O in flight in it.
    slots: Vec<Slot>,
    checks: Checks,
    /// Per (worker, disk) of this thread: its sample of the interval in progress.
    samples: Vec<(u32, u32, Sample)>,
    /// Closed-loop queues with free slots, and the open-loop queues' next arrivals (each
    /// open queue is either in the heap or blocked on a full queue, never both).
    ready: Vec<u32>,
    timers: BinaryHeap<Reverse<(u64, u32)>>,
    /// Completions of the last wait.
    out: Vec<Completion>,
    inflight: u32,
    /// Write data only where it lands somewhere: an engine without a target (null, sim)
    /// discards it, and filling it would measure the generator instead of the
    /// bookkeeping.
    write_data: bool,
    /// The interval in progress and where it ends.
    idx: u32,
    next_boundary: u64,
    errors: Vec<ErrorDetail>,
    error_details_left: usize,
    /// This thread's I/O errors per disk, sorted by (worker, disk); sent at the end.
    disk_errs: Vec<DiskErrors>,
    /// Per sample (as `samples`): what completed outside the measured phase.
    unmeasured: Vec<Unmeasured>,
    /// The self-check: CPU and run-queue delay per interval, and the issue lag of
    /// open-loop I/Os whose slot was free.
    meter: Option<ThreadMeter>,
    gen: GenSample,
    lap_at: u64,
    completed: u64,
    reaped_at: u64,
}

/// Every lane of the thread with its queues: one generator state per lane, slots
/// numbered across the queues, and the (worker, disk) of each sample.
struct LaneSetup {
    lanes: Vec<Lane>,
    queues: Vec<Queue>,
    parts: Vec<(u32, u32)>,
    slots: u32,
}

/// Build the thread's lanes and queues from its spec. Each (worker, disk) is given its
/// sample here, so that recording stays one index per I/O.
fn set_up_lanes(work: &ThreadWork<'_>) -> LaneSetup {
    let (plan, spec) = (work.plan, work.spec);
    let mut parts: Vec<(u32, u32)> = Vec::new();
    let mut part_of: std::collections::HashMap<(u32, u32), usize> = Default::default();
    let mut lanes: Vec<Lane> = Vec::with_capacity(spec.lanes.len());
    let mut queues: Vec<Queue> = Vec::new();
    let mut next_slot = 0u32;
    for (li, (&lane_ix, &file)) in spec.lanes.iter().zip(&spec.files).enumerate() {
        let ls = &work.lanes[lane_ix];
        let sample = *part_of.entry((ls.worker, ls.disk)).or_insert_with(|| {
            parts.push((ls.worker, ls.disk));
            parts.len() - 1
        });
        let mut lane = Lane {
            rng: SmallRng::seed_from_u64(ls.seed),
            gens: Vec::new(),
            sample,
            file,
            region_offset: ls.region_offset,
            data: Pattern::new(ls.data, ls.seed),
            global: lane_ix,
            fail_streak: 0,
            window_ios: 0,
            window_fails: 0,
            table: work.tables.get(lane_ix).cloned().flatten(),
        };
        for qs in &ls.queues {
            let queue = new_queue(plan, ls, qs, &mut lane, li as u32, next_slot);
            next_slot += qs.qd;
            queues.push(queue);
        }
        lanes.push(lane);
    }
    LaneSetup {
        lanes,
        queues,
        parts,
        slots: next_slot,
    }
}

/// One queue of `lane` (index `li`), its slots numbered from `first_slot`; the lane
/// gains a generator for each stream it has not met yet.
fn new_queue(
    plan: &Plan,
    ls: &LaneSpec,
    qs: &QueueSpec,
    lane: &mut Lane,
    li: u32,
    first_slot: u32,
) -> Queue {
    let mut pick_cum = Vec::new();
    let mut pick_gen = Vec::new();
    let mut acc = 0;
    for &(s, w) in &qs.streams {
        acc += w.max(1);
        pick_cum.push(acc);
        let g = match lane.gens.iter().position(|(gs, _)| *gs == s) {
            Some(g) => g,
            None => {
                lane.gens.push((
                    s,
                    StreamGen::new(
                        &plan.streams[s],
                        ls.disk_size,
                        ls.thread,
                        ls.threads_per_disk,
                    ),
                ));
                lane.gens.len() - 1
            }
        };
        pick_gen.push(g as u16);
    }
    let free: Vec<u32> = (first_slot..first_slot + qs.qd).rev().collect();
    let gap_ns = qs.rate.map(|r| 1e9 / r);
    let mut queue = Queue {
        lane: li,
        pick_cum,
        pick_gen,
        free,
        gap_ns,
        poisson: qs.arrival == Arrival::Poisson,
        next_arrival: 0.0,
        blocked: false,
        free_since: 0,
        ahead: std::collections::VecDeque::with_capacity(LOOK_AHEAD),
        look_ahead: lane.table.is_some() && ls.queues.len() == 1 && gap_ns.is_none(),
    };
    if let Some(gap) = gap_ns {
        // Start each open-loop queue at a random phase so lanes do not fire in step.
        queue.next_arrival = lane.rng.random::<f64>() * gap;
    }
    queue
}

/// The queue's disk was taken out: it issues no more.
#[inline]
fn queue_out(work: &ThreadWork<'_>, queue: &Queue) -> bool {
    work.taken_out.is_out(work.spec.lanes[queue.lane as usize])
}

impl<'a, E: Engine, C: Clock> Driver<'a, E, C> {
    fn new(engine: &'a mut E, clock: &'a C, work: &'a ThreadWork<'a>) -> Self {
        let LaneSetup {
            lanes,
            queues,
            parts,
            slots,
        } = set_up_lanes(work);
        let plan = work.plan;
        let empty = Slot {
            intended_ns: 0,
            offset: 0,
            len: 0,
            stream: 0,
            queue: 0,
            op: OpKind::Read,
            seq: 0,
        };
        let per_slot = if lanes.iter().any(|l| l.table.is_some()) {
            work.spec
                .lanes
                .iter()
                .flat_map(|&l| work.lanes[l].queues.iter().flat_map(|q| q.streams.iter()))
                .map(|&(s, _)| (plan.streams[s].bs.max().0 / UNIT) as usize)
                .max()
                .unwrap_or(1)
        } else {
            0
        };
        let checks = Checks {
            per_slot,
            snaps: vec![UnitSnap::default(); per_slot * slots as usize],
            wall_base_ns: 0, // set by `begin`
            found: VerifySummary::default(),
        };
        let samples = parts
            .iter()
            .map(|&(w, d)| {
                let mut s = Sample::new(plan.streams.len());
                // The counts of the directions each stream issues, allocated before the
                // start instant (up to RESERVED_LATENCY_NS; longer latencies grow them).
                for (st, stream) in s.streams.iter_mut().zip(&plan.streams) {
                    if stream.read_pct > 0.0 {
                        st.read.hist.reserve(RESERVED_LATENCY_NS);
                    }
                    if stream.read_pct < 100.0 {
                        st.write.hist.reserve(RESERVED_LATENCY_NS);
                    }
                }
                (w, d, s)
            })
            .collect();
        let mut ready = Vec::with_capacity(queues.len());
        let mut timers = BinaryHeap::with_capacity(queues.len());
        for (q, queue) in queues.iter().enumerate() {
            match queue.gap_ns {
                None => ready.push(q as u32),
                Some(_) => timers.push(Reverse((queue.next_arrival as u64, q as u32))),
            }
        }
        let now = clock.now_ns();
        let unmeasured = vec![Unmeasured::default(); parts.len()];
        Driver {
            unmeasured,
            write_data: engine.caps().needs_target,
            engine,
            clock,
            work,
            lanes,
            queues,
            slots: vec![empty; slots as usize],
            checks,
            samples,
            ready,
            timers,
            out: Vec::with_capacity(slots as usize),
            inflight: 0,
            idx: 0,
            next_boundary: work.timeline.boundaries[1],
            errors: Vec::new(),
            error_details_left: MAX_ERROR_DETAILS,
            disk_errs: Vec::new(),
            meter: None, // started by `begin`
            gen: GenSample::default(),
            lap_at: now,
            completed: 0,
            reaped_at: now,
        }
    }

    /// When the thread's first I/O is due, ns after the start instant: at once with a
    /// closed-loop queue, else the earliest open-loop arrival.
    fn first_due(&self) -> u64 {
        if self.ready.is_empty() {
            self.timers.peek().map_or(0, |Reverse((t, _))| *t)
        } else {
            0
        }
    }

    /// The start instant has come: what is timed from it starts now.
    fn begin(&mut self) {
        let now = self.clock.now_ns();
        let wall_now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        self.checks.wall_base_ns = wall_now.saturating_sub(now);
        self.meter = self.work.self_check.then(ThreadMeter::start);
        self.lap_at = now;
        self.reaped_at = now;
    }

    /// The loop: until the timeline ends, `stop` is set, or every disk of the thread
    /// was taken out. Returns when the thread stopped issuing.
    fn drive(&mut self) -> Result<u64, EngineError> {
        let end = self.work.timeline.end_ns();
        let work = self.work;
        loop {
            let now = self.clock.now_ns();
            if now >= end || work.stop.load(Ordering::Relaxed) {
                return Ok(now.min(end));
            }
            // Every disk of this thread taken out: nothing left to issue, the thread is
            // done (its remaining intervals are handed over empty).
            if self.inflight == 0
                && work.taken_out.any.load(Ordering::Relaxed)
                && self.queues.iter().all(|q| queue_out(work, q))
            {
                return Ok(end);
            }
            self.issue_ready(now)?;
            self.issue_due(now)?;
            let t = self.wait(now, end)?;
            self.close_intervals(t);
            self.account(t, end);
        }
    }

    /// Issue every free slot of every closed-loop queue.
    #[inline]
    fn issue_ready(&mut self, now: u64) -> Result<(), EngineError> {
        let work = self.work;
        while let Some(q) = self.ready.pop() {
            let queue = &mut self.queues[q as usize];
            if queue_out(work, queue) {
                continue;
            }
            while let Some(slot) = queue.free.pop() {
                issue(
                    self.engine,
                    &mut self.lanes,
                    queue,
                    &mut self.slots,
                    &mut self.checks,
                    q,
                    slot,
                    now,
                    self.write_data,
                )?;
                self.inflight += 1;
            }
        }
        Ok(())
    }

    /// Issue every open-loop arrival due by `now` whose queue has a free slot; a full
    /// queue is blocked until a completion frees a slot.
    #[inline]
    fn issue_due(&mut self, now: u64) -> Result<(), EngineError> {
        let work = self.work;
        while let Some(&Reverse((due, q))) = self.timers.peek() {
            if due > now {
                break;
            }
            self.timers.pop();
            let queue = &mut self.queues[q as usize];
            if queue_out(work, queue) {
                continue;
            }
            let Some(slot) = queue.free.pop() else {
                queue.blocked = true;
                continue;
            };
            let due = queue.next_arrival as u64;
            // A slot was free at the intended time: any delay since is the generator's
            // own (timer wake-up, a busy thread), reported as issue lag and not charged
            // to the storage. A slot that freed later means the storage held the I/O
            // back: latency then counts from the intended time.
            let intended = if queue.free_since <= due { now } else { due };
            self.gen
                .lag
                .record(now.saturating_sub(due.max(queue.free_since)));
            queue.advance(&mut self.lanes[queue.lane as usize].rng);
            issue(
                self.engine,
                &mut self.lanes,
                queue,
                &mut self.slots,
                &mut self.checks,
                q,
                slot,
                intended,
                self.write_data,
            )?;
            self.inflight += 1;
            self.timers.push(Reverse((queue.next_arrival as u64, q)));
        }
        Ok(())
    }

    /// Wait for a completion, the next arrival, the interval boundary, a stop poll (I/Os
    /// in flight) or a stop's bell (none in flight), whichever comes first. Returns the
    /// time after the wait.
    #[inline]
    fn wait(&mut self, now: u64, end: u64) -> Result<u64, EngineError> {
        let poll = if self.inflight == 0 {
            u64::MAX
        } else {
            now + STOP_POLL_NS
        };
        let mut wake = self.next_boundary.min(end).min(poll);
        if let Some(&Reverse((due, _))) = self.timers.peek() {
            wake = wake.min(due);
        }
        if self.inflight == 0 {
            self.clock.nap_until(wake);
        } else {
            // Self-check: from the last reap to this wait the thread was away; a
            // completion that became ready meanwhile waits up to that long to be seen.
            let self_check = self.work.self_check;
            let away = if self_check {
                self.clock.now_ns().saturating_sub(self.reaped_at)
            } else {
                0
            };
            let timeout = Duration::from_nanos(wake.saturating_sub(now));
            match self.clock.instant(wake) {
                Some(deadline) => {
                    self.engine
                        .submit_and_reap_by(1, timeout, deadline, &mut self.out)?
                }
                None => self
                    .engine
                    .submit_and_reap(1, Some(timeout), &mut self.out)?,
            }
            if self_check {
                self.gen.reap.record_count(away, self.out.len() as u64);
            }
        }
        let t = self.clock.now_ns();
        self.reaped_at = t;
        Ok(t)
    }

    /// Hand over every interval that ended by `t` (the last one is handed over at the
    /// end of the run).
    #[inline]
    fn close_intervals(&mut self, t: u64) {
        let timeline = self.work.timeline;
        while t >= self.next_boundary && self.idx + 1 < timeline.intervals() {
            self.flush(self.idx, None, Vec::new());
            self.idx += 1;
            self.next_boundary = timeline.boundaries[self.idx as usize + 1];
        }
    }

    /// Account every completion of the last wait, seen at `t`.
    #[inline]
    fn account(&mut self, t: u64, end: u64) {
        let mut out = std::mem::take(&mut self.out);
        if t >= end {
            // Completed after the timeline: counted apart, in no interval.
            self.count_after_all(&out);
        }
        for c in out.drain(..) {
            self.complete(&c, t, end);
        }
        self.out = out;
    }

    /// One completion: its slot freed (the queue made ready or unblocked), verified
    /// when the lane is, and recorded in its interval unless it came after the end.
    #[inline]
    fn complete(&mut self, c: &Completion, t: u64, end: u64) {
        let sl = self.slots[c.slot as usize];
        self.inflight -= 1;
        let queue = &mut self.queues[sl.queue as usize];
        if queue.free.is_empty() {
            queue.free_since = t;
            if queue.gap_ns.is_none() {
                self.ready.push(sl.queue);
            } else if queue.blocked {
                queue.blocked = false;
                self.timers
                    .push(Reverse((queue.next_arrival as u64, sl.queue)));
            }
        }
        queue.free.push(c.slot);
        let li = queue.lane as usize;
        let lane = &self.lanes[li];
        if let Some(table) = &lane.table {
            let ls = &self.work.lanes[lane.global];
            check_completion(self.engine, table, &sl, c, ls, &mut self.checks, t);
        }
        if t >= end {
            return; // completed after the timeline: not part of any interval
        }
        self.completed += 1;
        let lane = &mut self.lanes[li];
        let stats = &mut self.samples[lane.sample].2.streams[sl.stream as usize];
        let ops = if sl.op == OpKind::Read {
            &mut stats.read
        } else {
            &mut stats.write
        };
        if c.result >= 0 && c.result as u32 == sl.len {
            ops.record(t.saturating_sub(sl.intended_ns), c.result as u64);
            lane.fail_streak = 0;
            lane.window_ios += 1;
            if lane.window_ios >= TAKE_OUT_WINDOW {
                lane.window_ios = 0;
                lane.window_fails = 0;
            }
        } else {
            ops.record_error();
            lane.fail_streak += 1;
            lane.window_fails += 1;
            lane.window_ios += 1;
            let failing = lane.fail_streak >= TAKE_OUT_AFTER || lane.window_fails >= TAKE_OUT_AFTER;
            if lane.window_ios >= TAKE_OUT_WINDOW {
                lane.window_ios = 0;
                lane.window_fails = 0;
            }
            self.record_failure(li, &sl, c, t, failing);
        }
    }

    /// The error path, never taken by a successful I/O: the failure counted against
    /// its disk, described (a few per disk and per interval), and the disk taken out
    /// when it keeps failing.
    #[cold]
    #[inline(never)]
    fn record_failure(&mut self, li: usize, sl: &Slot, c: &Completion, t: u64, failing: bool) {
        let lane = &self.lanes[li];
        let ls = &self.work.lanes[lane.global];
        let at = match self
            .disk_errs
            .binary_search_by_key(&(ls.worker, ls.disk), |d| (d.worker, d.disk))
        {
            Ok(i) => i,
            Err(i) => {
                self.disk_errs
                    .insert(i, DiskErrors::new(ls.worker, ls.disk));
                i
            }
        };
        let de = &mut self.disk_errs[at];
        de.count += 1;
        if de.first.len() < DiskErrors::FIRST || self.error_details_left > 0 {
            let message = if c.result < 0 {
                std::io::Error::from_raw_os_error(-c.result).to_string()
            } else {
                format!("short transfer: {} of {} bytes", c.result, sl.len)
            };
            let detail = ErrorDetail {
                worker: ls.worker,
                disk: ls.disk,
                thread: ls.thread,
                op: if sl.op == OpKind::Read {
                    "read"
                } else {
                    "write"
                }
                .into(),
                offset: lane.region_offset + sl.offset,
                len: sl.len,
                errno: (-c.result).max(0),
                message,
                t_s: t as f64 / 1e9,
            };
            if de.first.len() < DiskErrors::FIRST {
                de.first.push(detail.clone());
            }
            if self.error_details_left > 0 {
                self.error_details_left -= 1;
                self.errors.push(detail);
            }
        }
        let taken_out = self.work.taken_out;
        if failing && !taken_out.is_out(lane.global) {
            taken_out.take_out_disk(self.work.lanes, lane.global);
            de.taken_out_s = Some(t as f64 / 1e9);
        }
    }

    /// What completed in one wait that ended after the measured phase.
    #[cold]
    fn count_after_all(&mut self, done: &[Completion]) {
        for c in done {
            let sl = self.slots[c.slot as usize];
            let li = self.queues[sl.queue as usize].lane as usize;
            self.count_after(li, sl.op);
        }
    }

    /// An I/O of lane `li` completed after the measured phase.
    fn count_after(&mut self, li: usize, op: OpKind) {
        let u = &mut self.unmeasured[self.lanes[li].sample];
        match op {
            OpKind::Read => u.after_reads += 1,
            OpKind::Write => u.after_writes += 1,
        }
    }

    /// Send, per (worker, disk) of the thread, what completed outside the measured
    /// phase (nothing when nothing did).
    fn send_unmeasured(&mut self) {
        let disks: Vec<DiskUnmeasured> = self
            .samples
            .iter()
            .zip(&self.unmeasured)
            .filter(|(_, u)| !u.is_zero())
            .map(|(&(worker, disk, _), &ios)| DiskUnmeasured { worker, disk, ios })
            .collect();
        if !disks.is_empty() {
            let _ = self.work.tx.send(Msg::Unmeasured {
                source: self.work.spec.id,
                disks,
            });
        }
    }

    /// Send interval `idx` (its samples, errors and the generator's figures) and start
    /// the next one.
    fn flush(&mut self, idx: u32, stopped_at: Option<u64>, disks: Vec<DiskErrors>) {
        if idx < self.work.timeline.warmup_intervals {
            for ((_, _, s), u) in self.samples.iter().zip(&mut self.unmeasured) {
                for st in &s.streams {
                    u.warmup_reads += st.read.ios + st.read.errors;
                    u.warmup_writes += st.write.ios + st.write.errors;
                }
            }
        }
        let generator = self.meter.as_mut().map(|m| {
            let now = self.clock.now_ns();
            let lap = m.lap();
            // The latency of what completed, by Little's law the I/Os in flight
            // integrated over the span (read before the samples are handed over).
            let io_time_ns: u128 = self
                .samples
                .iter()
                .flat_map(|(_, _, s)| &s.streams)
                .map(|st| st.read.latency_sum_ns + st.write.latency_sum_ns)
                .sum();
            let mut g = GenSample::thread_span(
                now.saturating_sub(self.lap_at),
                lap.cpu_ns,
                lap.runq_ns,
                self.completed,
            )
            .with_in_flight(u64::try_from(io_time_ns).unwrap_or(u64::MAX), lap.slices);
            self.lap_at = now;
            g.lag = self.gen.lag.take();
            g.reap = self.gen.reap.take();
            Box::new(g)
        });
        self.completed = 0;
        // A sparse copy goes; the counts arrays stay for the next interval.
        let _ = self.work.tx.send(Msg::Interval {
            source: self.work.spec.id,
            index: idx,
            samples: self
                .samples
                .iter_mut()
                .map(|(w, d, s)| (*w, *d, s.take()))
                .collect(),
            errors: std::mem::take(&mut self.errors),
            disks,
            stopped_at,
            usage: None,
            generator,
        });
    }

    /// Wait (bounded) for what is still in flight, without recording it (but writes
    /// still end in the verify table), then send what the verified reads found. A
    /// failure here does not cost the intervals already measured: they are still
    /// handed over.
    fn drain(&mut self) {
        let drain_deadline = self.clock.now_ns() + 2_000_000_000;
        while self.inflight > 0 && self.clock.now_ns() < drain_deadline {
            if self
                .engine
                .submit_and_reap(1, Some(Duration::from_millis(100)), &mut self.out)
                .is_err()
            {
                break;
            }
            self.inflight -= self.out.len() as u32;
            let mut out = std::mem::take(&mut self.out);
            for c in out.drain(..) {
                let sl = self.slots[c.slot as usize];
                let li = self.queues[sl.queue as usize].lane as usize;
                self.count_after(li, sl.op);
                let lane = &self.lanes[li];
                if let Some(table) = &lane.table {
                    let ls = &self.work.lanes[lane.global];
                    let t = self.clock.now_ns();
                    check_completion(self.engine, table, &sl, &c, ls, &mut self.checks, t);
                }
            }
            self.out = out;
        }
        if self.lanes.iter().any(|l| l.table.is_some()) {
            let _ = self.work.tx.send(Msg::Verify {
                source: self.work.spec.id,
                summary: Box::new(std::mem::take(&mut self.checks.found)),
            });
        }
    }

    /// Hand over the interval in progress and, on a normal end, every remaining one;
    /// the last carries this thread's per-disk errors. Returns when the thread stopped.
    fn hand_over(&mut self, stopped_at: u64) -> u64 {
        let timeline = self.work.timeline;
        let (end, n_intervals) = (timeline.end_ns(), timeline.intervals());
        if stopped_at < end {
            let disks = std::mem::take(&mut self.disk_errs);
            self.flush(self.idx, Some(stopped_at), disks);
            return stopped_at;
        }
        for k in self.idx..n_intervals {
            let disks = if k + 1 == n_intervals {
                std::mem::take(&mut self.disk_errs)
            } else {
                Vec::new()
            };
            self.flush(k, None, disks);
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iofleet_engine::null::LatencyModel;
    use iofleet_engine::{
        Caps, Completion, Drive, EngineFile, EngineParams, EngineSpec, VirtualClock,
    };
    use iofleet_profile::{BlockSizes, Bytes, FleetShape, StreamPlan};
    use std::time::Instant;

    fn plan(streams: Vec<StreamPlan>) -> Plan {
        crate::fixtures::plan(
            FleetShape {
                disk_size: Bytes(64 << 20),
                ..crate::fixtures::fleet(8, 1, 1, 2)
            },
            streams,
        )
    }

    fn stream(name: &str, read: f64, random: f64) -> StreamPlan {
        StreamPlan {
            bs: BlockSizes {
                entries: vec![(Bytes(4096), 3), (Bytes(65536), 1)],
            },
            random_pct: random,
            ..crate::fixtures::stream(name, read)
        }
    }

    /// Lane `w`: worker w, disk 0, thread 0, two weighted streams at `qd`.
    fn lane(w: u32, qd: u32, rate: Option<f64>) -> LaneSpec {
        LaneSpec {
            worker: w,
            disk: 0,
            thread: 0,
            threads_per_disk: 1,
            queues: vec![QueueSpec {
                streams: vec![(0, 3), (1, 1)],
                qd,
                rate,
                arrival: Arrival::Poisson,
            }],
            seed: lane_seed(42, w, 0, 0),
            region_offset: 1 << 30,
            disk_size: 64 << 20,
            data: PatternSpec::RANDOM,
        }
    }

    /// An engine that logs every request per file and completes each after `lat_ns` of
    /// simulated time.
    struct Recorder {
        clock: VirtualClock,
        lat_ns: u64,
        due: Vec<(u64, Completion)>,
        log: Vec<Vec<(OpKind, u64, u32)>>,
        buf: Vec<u8>,
        /// Files whose I/Os fail with this errno: every `fail_period`-th of them (1: all).
        fail: Vec<(u32, i32)>,
        fail_period: usize,
        /// When the first request came.
        first_at: Option<u64>,
    }

    impl Engine for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn caps(&self) -> Caps {
            EngineSpec::Null.caps()
        }
        fn queue(&mut self, req: IoReq) -> Result<(), EngineError> {
            self.log[req.file as usize].push((req.op, req.offset, req.len));
            self.first_at.get_or_insert(self.clock.now_ns());
            let due = self.clock.now_ns() + self.lat_ns;
            let nth = self.log[req.file as usize].len();
            let result = match self.fail.iter().find(|f| f.0 == req.file) {
                Some(&(_, errno)) if nth.is_multiple_of(self.fail_period.max(1)) => -errno,
                _ => req.len as i32,
            };
            self.due.push((
                due,
                Completion {
                    slot: req.slot,
                    result,
                },
            ));
            Ok(())
        }
        fn submit_and_reap(
            &mut self,
            _min: u32,
            timeout: Option<Duration>,
            out: &mut Vec<Completion>,
        ) -> Result<(), EngineError> {
            let next = self.due.iter().map(|d| d.0).min();
            let limit = self.clock.now_ns() + timeout.map_or(u64::MAX, |t| t.as_nanos() as u64);
            match next {
                Some(t) if t <= limit => self.clock.advance_to(t),
                _ => self.clock.advance_to(limit),
            }
            let now = self.clock.now_ns();
            self.due.retain(|(t, c)| {
                if *t <= now {
                    out.push(*c);
                    false
                } else {
                    true
                }
            });
            Ok(())
        }
        fn buffer_mut(&mut self, _slot: u32) -> &mut [u8] {
            &mut self.buf
        }
    }

    /// Run `lanes` (indexes into `all`) on one I/O thread with the recorder; returns
    /// the log per lane.
    fn record(all: &[LaneSpec], lanes: &[usize], plan: &Plan) -> Vec<Vec<(OpKind, u64, u32)>> {
        record_verified(all, lanes, plan, &[])
    }

    /// `record` with a verify table per lane of `all` (none when `tables` is empty).
    fn record_verified(
        all: &[LaneSpec],
        lanes: &[usize],
        plan: &Plan,
        tables: &[Option<Arc<DiskTable>>],
    ) -> Vec<Vec<(OpKind, u64, u32)>> {
        record_starting(all, lanes, plan, tables, &|_| true).log
    }

    /// `record_verified` with the thread's start hook, returning the engine.
    fn record_starting(
        all: &[LaneSpec],
        lanes: &[usize],
        plan: &Plan,
        tables: &[Option<Arc<DiskTable>>],
        at_start: &dyn Fn(u64) -> bool,
    ) -> Recorder {
        let spec = IoThreadSpec {
            id: 0,
            lanes: lanes.to_vec(),
            files: (0..lanes.len() as u32).collect(),
            cpu: None,
        };
        let clock = VirtualClock::new();
        let mut e = Recorder {
            clock: clock.clone(),
            lat_ns: 7_000,
            due: Vec::new(),
            log: vec![Vec::new(); lanes.len()],
            buf: vec![0; 65536],
            fail: Vec::new(),
            fail_period: 1,
            first_at: None,
        };
        let timeline = Timeline::new(
            Duration::ZERO,
            Duration::from_millis(20),
            Duration::from_millis(5),
        );
        let (tx, _rx) = std::sync::mpsc::channel();
        let stop = AtomicBool::new(false);
        let taken_out = TakenOut::new(all.len());
        let work = ThreadWork {
            spec: &spec,
            lanes: all,
            plan,
            timeline: &timeline,
            stop: &stop,
            tx: &tx,
            self_check: false,
            tables,
            taken_out: &taken_out,
            at_start,
        };
        run_lanes(&mut e, &clock, &work).unwrap();
        e
    }

    #[test]
    fn a_thread_is_told_when_its_first_i_o_is_due() {
        // A thread with a closed-loop queue is due at once; one whose queues all issue
        // at a rate, at its earliest first arrival (a random phase of the gap), which is
        // when it issues its first I/O.
        let plan = plan(vec![stream("a", 70.0, 100.0), stream("b", 0.0, 0.0)]);
        let told = std::cell::Cell::new(None);
        let hook = |first: u64| {
            told.set(Some(first));
            true
        };
        let closed = [lane(0, 2, Some(500.0)), lane(1, 2, None)];
        let e = record_starting(&closed, &[0, 1], &plan, &[], &hook);
        assert_eq!(told.get(), Some(0));
        assert_eq!(e.first_at, Some(0));
        let mut firsts = Vec::new();
        for w in 0..8 {
            let rated = [lane(w, 2, Some(500.0)), lane(w + 8, 2, Some(400.0))];
            let e = record_starting(&rated, &[0, 1], &plan, &[], &hook);
            let first = told.get().unwrap();
            assert!(
                first > 0 && first < 2_000_000,
                "worker {w}: due at {first} ns"
            );
            assert_eq!(e.first_at, Some(first), "worker {w}");
            firsts.push(first);
        }
        // The phases differ between workers (their seeds do).
        firsts.sort_unstable();
        firsts.dedup();
        assert_eq!(firsts.len(), 8, "{firsts:?}");
    }

    #[test]
    fn a_verified_lane_issues_the_same_sequence_as_an_unverified_one() {
        // Verified closed-loop lanes draw their I/Os ahead (to prefetch table entries);
        // the sequence must not change, nor may it for open-loop lanes, which do not.
        let plan = plan(vec![stream("a", 70.0, 100.0), stream("b", 0.0, 0.0)]);
        for rate in [None, Some(20_000.0)] {
            let all: Vec<LaneSpec> = (0..3).map(|w| lane(w, 4, rate)).collect();
            let tables: Vec<Option<Arc<DiskTable>>> = all
                .iter()
                .map(|l| {
                    let units = (l.disk_size / UNIT) as usize;
                    Some(Arc::new(DiskTable::new(
                        1,
                        l.region_offset,
                        &vec![0; units],
                        1,
                    )))
                })
                .collect();
            let plain = record(&all, &[0, 1, 2], &plan);
            let verified = record_verified(&all, &[0, 1, 2], &plan, &tables);
            for (w, (p, v)) in plain.iter().zip(&verified).enumerate() {
                assert!(p.len() > 100, "lane {w} issued {} I/Os", p.len());
                let n = p.len().min(v.len());
                assert_eq!(p[..n], v[..n], "lane {w}, rate {rate:?}");
            }
        }
    }

    #[test]
    fn a_lane_issues_the_same_sequence_alone_or_sharing_a_ring() {
        let plan = plan(vec![stream("a", 70.0, 100.0), stream("b", 0.0, 0.0)]);
        for rate in [None, Some(20_000.0)] {
            let all: Vec<LaneSpec> = (0..8).map(|w| lane(w, 3, rate)).collect();
            let shared = record(&all, &(0..8).collect::<Vec<_>>(), &plan);
            for (w, shared_log) in shared.iter().enumerate() {
                let alone = record(&all, &[w], &plan).remove(0);
                assert!(alone.len() > 100, "lane {w} issued {} I/Os", alone.len());
                let n = alone.len().min(shared_log.len());
                assert!(n * 10 >= alone.len() * 9, "{n} of {}", alone.len());
                assert_eq!(alone[..n], shared_log[..n], "lane {w}, rate {rate:?}");
                // Every offset is inside the lane's region and aligned.
                assert!(alone.iter().all(|&(_, off, len)| off >= 1 << 30
                    && off + len as u64 <= (1 << 30) + (64 << 20)
                    && off % 4096 == 0));
            }
            // Lanes differ from one another (each has its own seed).
            assert_ne!(shared[0][..50], shared[1][..50]);
        }
    }

    /// Runs a built engine's loop (the fleet's `Drive`) and gathers every message.
    struct Go<'a>(&'a ThreadWork<'a>);
    impl Drive for Go<'_> {
        type Out = Result<u64, EngineError>;
        fn drive<E: Engine, C: Clock>(self, engine: &mut E, clock: &C) -> Self::Out {
            run_lanes(engine, clock, self.0)
        }
    }

    #[test]
    fn workers_sharing_a_ring_keep_exact_results_against_an_oracle() {
        // Three workers, qd 2 each, fixed simulated latencies of 100 µs, 300 µs and
        // 1 ms, all on one I/O thread. Oracle: worker w completes qd × ⌊(end − 1) / lat⌋
        // I/Os, every one of latency exactly lat.
        let mut p = plan(vec![stream("a", 100.0, 100.0)]);
        p.streams[0].bs = BlockSizes::fixed(Bytes(4096));
        let lats = [100_000u64, 300_000, 1_000_000];
        let all: Vec<LaneSpec> = (0..3)
            .map(|w| LaneSpec {
                queues: vec![QueueSpec {
                    streams: vec![(0, 1)],
                    qd: 2,
                    rate: None,
                    arrival: Arrival::Uniform,
                }],
                ..lane(w, 2, None)
            })
            .collect();
        let models = lats.iter().map(|&l| LatencyModel::Fixed(l)).collect();
        let files = (0..3)
            .map(|w| EngineFile {
                disk: None,
                worker: w,
                seed: w as u64,
            })
            .collect();
        let mut engine = EngineSpec::NullSim(models)
            .build(
                files,
                EngineParams {
                    slots: 6,
                    max_bs: 4096,
                },
                1,
            )
            .unwrap();
        let spec = IoThreadSpec {
            id: 0,
            lanes: vec![0, 1, 2],
            files: vec![0, 1, 2],
            cpu: None,
        };
        let timeline = Timeline::new(
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_millis(250),
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = AtomicBool::new(false);
        let taken_out = TakenOut::new(all.len());
        let work = ThreadWork {
            spec: &spec,
            lanes: &all,
            plan: &p,
            timeline: &timeline,
            stop: &stop,
            tx: &tx,
            self_check: false,
            tables: &[],
            taken_out: &taken_out,
            at_start: &|_| true,
        };
        let end = engine.drive(Instant::now(), Go(&work)).unwrap();
        assert_eq!(end, 1_000_000_000);
        drop(tx);
        let mut per_worker = vec![Sample::new(1); 3];
        let mut intervals = 0;
        for m in rx.iter() {
            if let Msg::Interval {
                samples, generator, ..
            } = m
            {
                intervals += 1;
                assert!(generator.is_none(), "no self-check in simulated time");
                for (w, d, s) in samples {
                    assert_eq!(d, 0, "each worker here has one disk");
                    per_worker[w as usize] += &s;
                }
            }
        }
        assert_eq!(intervals, 4);
        for (w, lat) in lats.iter().enumerate() {
            let r = &per_worker[w].streams[0].read;
            assert_eq!(r.ios, 2 * ((1_000_000_000 - 1) / lat), "worker {w}");
            // Every latency exactly `lat`: the sums are exact, and the histogram is the
            // one `ios` records of `lat` make.
            assert_eq!(r.latency_sum_ns, r.ios as u128 * *lat as u128);
            assert_eq!(r.latency_sq_sum_ns2, r.ios as u128 * (*lat as u128).pow(2));
            let mut want = iofleet_stats::LatencyHist::new();
            (0..r.ios).for_each(|_| want.record(*lat));
            assert_eq!(r.hist, want, "worker {w}");
            assert_eq!(r.bytes, r.ios * 4096);
        }
    }

    #[test]
    fn timeline_cuts_phases() {
        let t = Timeline::new(
            Duration::from_millis(2500),
            Duration::from_secs(3),
            Duration::from_secs(1),
        );
        assert_eq!(t.warmup_intervals, 3);
        assert_eq!(t.intervals(), 6);
        assert_eq!(t.measure_start_ns(), 2_500_000_000);
        assert_eq!(t.end_ns(), 5_500_000_000);
        assert_eq!(t.boundaries[3], 2_500_000_000);
        assert_eq!(t.boundaries[2], 2_000_000_000);
        let none = Timeline::new(
            Duration::ZERO,
            Duration::from_secs(2),
            Duration::from_secs(1),
        );
        assert_eq!(none.warmup_intervals, 0);
        assert_eq!(none.intervals(), 2);
    }

    /// The requests one file saw: (op, offset, len).
    type IoLog = Vec<(OpKind, u64, u32)>;

    /// Run lanes 0..n (lane w = worker w, file w) on one thread whose engine fails every
    /// I/O of the files in `fail`; returns the messages, the log and where the clock ended.
    fn run_failing(n: u32, fail: Vec<(u32, i32)>) -> (Vec<Msg>, Vec<IoLog>, u64) {
        run_failing_every(n, fail, 1)
    }

    /// The thread's last interval (what it reported outside the measured phase follows).
    fn last_interval(msgs: &[Msg]) -> Option<&Msg> {
        msgs.iter()
            .rev()
            .find(|m| matches!(m, Msg::Interval { .. }))
    }

    /// [`run_failing`], failing every `period`-th I/O of the files in `fail`.
    fn run_failing_every(
        n: u32,
        fail: Vec<(u32, i32)>,
        period: usize,
    ) -> (Vec<Msg>, Vec<IoLog>, u64) {
        run_logged(n, fail, period, Duration::ZERO, 0.0)
    }

    /// `n` lanes of one worker each (qd 3, 4 KiB, `read_pct`), files `fail` failing every
    /// `period`-th I/O, over `warmup` and 20 ms measured in 5 ms intervals.
    fn run_logged(
        n: u32,
        fail: Vec<(u32, i32)>,
        period: usize,
        warmup: Duration,
        read_pct: f64,
    ) -> (Vec<Msg>, Vec<IoLog>, u64) {
        let mut plan = plan(vec![stream("w", read_pct, 100.0)]);
        plan.streams[0].bs = BlockSizes::fixed(Bytes(4096));
        let all: Vec<LaneSpec> = (0..n)
            .map(|w| LaneSpec {
                queues: vec![QueueSpec {
                    streams: vec![(0, 1)],
                    qd: 3,
                    rate: None,
                    arrival: Arrival::Uniform,
                }],
                ..lane(w, 3, None)
            })
            .collect();
        let spec = IoThreadSpec {
            id: 0,
            lanes: (0..n as usize).collect(),
            files: (0..n).collect(),
            cpu: None,
        };
        let clock = VirtualClock::new();
        let mut e = Recorder {
            clock: clock.clone(),
            lat_ns: 7_000,
            due: Vec::new(),
            log: vec![Vec::new(); n as usize],
            buf: vec![0; 65536],
            fail,
            fail_period: period,
            first_at: None,
        };
        let timeline = Timeline::new(warmup, Duration::from_millis(20), Duration::from_millis(5));
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = AtomicBool::new(false);
        let taken_out = TakenOut::new(all.len());
        let work = ThreadWork {
            spec: &spec,
            lanes: &all,
            plan: &plan,
            timeline: &timeline,
            stop: &stop,
            tx: &tx,
            self_check: false,
            tables: &[],
            taken_out: &taken_out,
            at_start: &|_| true,
        };
        assert_eq!(run_lanes(&mut e, &clock, &work).unwrap(), timeline.end_ns());
        drop(tx);
        (rx.iter().collect(), e.log, clock.now_ns())
    }

    #[test]
    fn every_request_is_measured_or_counted_outside_the_measured_phase() {
        // Reads and writes, a warm-up, one disk failing now and then: per disk, what the
        // engine was sent is the measured intervals' I/Os and errors plus what the
        // thread reported outside them (the warm-up, and what was in flight at the end).
        let warmup = Duration::from_millis(10);
        let (msgs, log, _) = run_logged(2, vec![(1, 5)], 7, warmup, 50.0);
        let warmup_intervals = 2;
        let mut measured = [[0u64; 2]; 2];
        let mut in_warmup = [[0u64; 2]; 2];
        let mut outside: Vec<DiskUnmeasured> = Vec::new();
        for m in &msgs {
            match m {
                Msg::Interval { index, samples, .. } => {
                    for (w, _, s) in samples {
                        let into = if *index < warmup_intervals {
                            &mut in_warmup[*w as usize]
                        } else {
                            &mut measured[*w as usize]
                        };
                        for st in &s.streams {
                            into[0] += st.read.ios + st.read.errors;
                            into[1] += st.write.ios + st.write.errors;
                        }
                    }
                }
                Msg::Unmeasured { disks, .. } => outside.extend(disks),
                _ => {}
            }
        }
        assert_eq!(outside.len(), 2, "{outside:?}");
        for (w, d) in outside.iter().enumerate() {
            assert_eq!((d.worker, d.disk), (w as u32, 0));
            let u = d.ios;
            assert_eq!([u.warmup_reads, u.warmup_writes], in_warmup[w]);
            assert!(in_warmup[w][0] > 0 && in_warmup[w][1] > 0, "{u:?}");
            // Closed loop at qd 3: the slots in flight when the timeline ended.
            assert!((1..=3).contains(&(u.after_reads + u.after_writes)), "{u:?}");
            let sent = |op: OpKind| log[w].iter().filter(|r| r.0 == op).count() as u64;
            assert_eq!(
                measured[w][0] + u.warmup_reads + u.after_reads,
                sent(OpKind::Read),
                "disk of worker {w}"
            );
            assert_eq!(
                measured[w][1] + u.warmup_writes + u.after_writes,
                sent(OpKind::Write),
                "disk of worker {w}"
            );
        }
        // The failing disk's errors are among what was counted.
        let errors: u64 = msgs
            .iter()
            .filter_map(|m| match m {
                Msg::Interval { samples, .. } => Some(samples),
                _ => None,
            })
            .flatten()
            .filter(|(w, _, _)| *w == 1)
            .map(|(_, _, s)| s.errors())
            .sum();
        assert!(errors > 0);
    }

    #[test]
    fn a_disk_that_keeps_failing_is_taken_out_and_the_others_go_on() {
        let (msgs, log, _) = run_failing(2, vec![(1, 28)]); // ENOSPC
        let mut per_worker = vec![Sample::new(1); 2];
        let mut disks = Vec::new();
        let mut intervals = 0;
        for m in &msgs {
            if let Msg::Interval {
                samples,
                disks: d,
                index,
                ..
            } = m
            {
                intervals += 1;
                for (w, _, s) in samples {
                    per_worker[*w as usize] += s;
                }
                assert!(d.is_empty() || *index == 3, "per-disk errors come last");
                disks.extend(d.iter().cloned());
            }
        }
        assert_eq!(intervals, 4);
        // Worker 0 ran through, without errors.
        assert!(per_worker[0].streams[0].write.ios > 1000);
        assert_eq!(per_worker[0].errors(), 0);
        // Worker 1's disk failed TAKE_OUT_AFTER times in a row and was taken out: the
        // I/Os still in flight then failed too, and nothing more was issued.
        assert_eq!(disks.len(), 1, "{disks:?}");
        let d = &disks[0];
        assert_eq!((d.worker, d.disk), (1, 0));
        let issued = log[1].len() as u64;
        assert_eq!(d.count, issued);
        assert_eq!(per_worker[1].errors(), issued);
        assert!(
            (TAKE_OUT_AFTER as u64..TAKE_OUT_AFTER as u64 + 3).contains(&issued),
            "{issued} I/Os issued to the failing disk"
        );
        assert_eq!(d.first.len(), DiskErrors::FIRST);
        assert!(d.first.windows(2).all(|w| w[0].t_s <= w[1].t_s));
        let e = &d.first[0];
        assert_eq!(
            (e.worker, e.disk, e.op.as_str(), e.errno),
            (1, 0, "write", 28)
        );
        assert_eq!(e.offset, log[1][0].1, "the first failure is the first I/O");
        assert!(e.message.to_lowercase().contains("space"), "{}", e.message);
        let t = d.taken_out_s.expect("taken out");
        assert!(t > 0.0 && t < 0.02);
    }

    #[test]
    fn a_disk_failing_half_its_ios_between_successes_is_taken_out() {
        // The first I/O logged fails; with period 2 every other I/O fails, so no 32 fail
        // in a row, but 32 of a window of 64 do: taken out. With period 4 a window holds
        // 16 failures: the disk stays in.
        for (period, out) in [(2, true), (4, false)] {
            let (msgs, log, _) = run_failing_every(2, vec![(1, 5)], period);
            let Some(Msg::Interval { disks, .. }) = last_interval(&msgs) else {
                panic!("the last message is an interval");
            };
            assert_eq!(disks.len(), 1, "period {period}");
            let d = &disks[0];
            assert_eq!(d.disk, 0);
            assert_eq!(d.worker, 1);
            assert_eq!(
                d.taken_out_s.is_some(),
                out,
                "period {period}: {} I/Os, {} failed",
                log[1].len(),
                d.count
            );
            if out {
                // Taken out at the 32nd failure, within the first window (64 I/Os),
                // plus what was in flight (qd 3).
                assert!(log[1].len() <= 64 + 3, "{} I/Os", log[1].len());
            } else {
                assert!(log[1].len() > 1000, "{} I/Os", log[1].len());
                // One in four failed, less the few in flight at the end (not counted).
                let every_fourth = log[1].len().div_ceil(4) as u64;
                assert!(
                    (every_fourth - 3..=every_fourth).contains(&d.count),
                    "{} of {every_fourth}",
                    d.count
                );
            }
        }
    }

    #[test]
    fn a_thread_whose_disks_are_all_taken_out_ends_early() {
        let (msgs, log, ended) = run_failing(2, vec![(0, 5), (1, 5)]);
        // Every interval is still handed over (empty after the take-out), at once.
        let intervals = msgs
            .iter()
            .filter(|m| matches!(m, Msg::Interval { .. }))
            .count();
        assert_eq!(intervals, 4);
        assert!(ended < 5_000_000, "the thread went on until {ended} ns");
        let Some(Msg::Interval { disks, .. }) = last_interval(&msgs) else {
            panic!("the last message is an interval");
        };
        assert_eq!(disks.len(), 2);
        for (d, l) in disks.iter().zip(&log) {
            assert_eq!(d.count, l.len() as u64);
            assert!(d.taken_out_s.is_some());
            assert_eq!(d.first[0].errno, 5);
        }
    }
}
