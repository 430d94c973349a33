//! The I/O threads of one run on this host: what they share (`Job`: the plan, the
//! lanes, each lane's disk and verify table, the stop flag), the starting line they wait
//! at (`Gate`), and each thread's life: pin, open its files, build its engine, report
//! ready, wait for the start instant, run its lanes (`lanes::run_lanes`), and end its
//! source with a `Done` however the loop ended. The launcher (`super`) spawns and joins
//! them; nothing here plans or fills.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender as MsgSender;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use iofleet_engine::target::{open_disk_through, DiskLayout};
use iofleet_engine::verify::DiskTable;
use iofleet_engine::{BuiltEngine, Drive, EngineFile, EngineParams, EngineSpec};
use iofleet_profile::Plan;

use super::lanes::{run_lanes, IoThreadSpec, LaneSpec, TakenOut, ThreadWork};
use crate::source::{Msg, Timeline};
use crate::sys;

/// Everything the threads of one run share.
pub(super) struct Job {
    pub(super) plan: Plan,
    pub(super) timeline: Timeline,
    pub(super) lanes: Vec<LaneSpec>,
    /// Disk layout per lane (None for engines without a target).
    pub(super) disks: Vec<Option<DiskLayout>>,
    /// Per lane: its disk's verify floor table (`--verify`).
    pub(super) tables: Vec<Option<Arc<DiskTable>>>,
    pub(super) io_threads: Vec<IoThreadSpec>,
    pub(super) engine: EngineSpec,
    pub(super) direct: bool,
    pub(super) stop: Arc<AtomicBool>,
    /// Lanes whose disk kept failing and was taken out.
    pub(super) taken_out: TakenOut,
    /// I/O threads that have begun (the last one to begin wakes `start`), and the
    /// latest of their start times after the epoch (ns): the start skew of this host's
    /// threads.
    pub(super) started: (Mutex<usize>, Condvar),
    pub(super) max_late_ns: AtomicU64,
}

/// The starting line: threads wait until it opens. Unlike a barrier it cannot deadlock
/// when fewer threads than planned reach it (a failed spawn, a panic during setup).
#[derive(Default)]
pub(super) struct Gate {
    open: Mutex<Option<(Instant, MsgSender<Msg>)>>,
    cv: Condvar,
}

impl Gate {
    pub(super) fn wait(&self) -> (Instant, MsgSender<Msg>) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(o) = open.as_ref() {
                return o.clone();
            }
            open = self.cv.wait(open).unwrap_or_else(|p| p.into_inner());
        }
    }
    pub(super) fn open(&self, epoch: Instant, tx: MsgSender<Msg>) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = Some((epoch, tx));
        self.cv.notify_all();
    }
    pub(super) fn close(&self) {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// Reports a thread's setup outcome exactly once, even if setup panics.
pub(super) struct ReadyOnce<'a>(Option<&'a Sender<Result<(), String>>>);

impl ReadyOnce<'_> {
    pub(super) fn send(&mut self, r: Result<(), String>) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(r);
        }
    }
}

impl Drop for ReadyOnce<'_> {
    fn drop(&mut self) {
        self.send(Err("an I/O thread failed during setup".into()));
    }
}

pub(super) fn describe_io_thread(t: &IoThreadSpec, lanes: &[LaneSpec]) -> String {
    let workers = {
        let mut w: Vec<u32> = t.lanes.iter().map(|&l| lanes[l].worker).collect();
        w.sort_unstable();
        w.dedup();
        w.len()
    };
    format!(
        "I/O thread {} ({} lane(s) of {} worker(s))",
        t.id,
        t.lanes.len(),
        workers
    )
}

/// The I/O thread loop, monomorphised for the engine built for this thread.
pub(super) struct Loop<'a> {
    job: &'a Job,
    i: usize,
    tx: &'a MsgSender<Msg>,
    self_check: bool,
    at_start: &'a dyn Fn(u64) -> bool,
}

impl Drive for Loop<'_> {
    type Out = Result<u64, iofleet_engine::EngineError>;
    fn drive<E: iofleet_engine::Engine, C: iofleet_engine::Clock>(
        self,
        engine: &mut E,
        clock: &C,
    ) -> Self::Out {
        let job = self.job;
        run_lanes(
            engine,
            clock,
            &ThreadWork {
                spec: &job.io_threads[self.i],
                lanes: &job.lanes,
                plan: &job.plan,
                timeline: &job.timeline,
                stop: &job.stop,
                tx: self.tx,
                self_check: self.self_check,
                tables: &job.tables,
                taken_out: &job.taken_out,
                at_start: self.at_start,
            },
        )
    }
}

/// Pin (when asked), open this I/O thread's files and build its engine.
pub(super) fn open_engine(job: &Job, spec: &IoThreadSpec) -> Result<BuiltEngine, String> {
    if let Some(cpu) = spec.cpu {
        sys::pin_current_thread(cpu)
            .map_err(|e| format!("--cpus: cannot pin an I/O thread to CPU {cpu}: {e}"))?;
    }
    let lanes: Vec<&LaneSpec> = spec.lanes.iter().map(|&l| &job.lanes[l]).collect();
    let params = EngineParams {
        slots: lanes.iter().map(|l| l.slots()).sum(),
        max_bs: lanes
            .iter()
            .flat_map(|l| l.queues.iter().flat_map(|q| q.streams.iter()))
            .map(|&(s, _)| job.plan.streams[s].bs.max().0 as u32)
            .max()
            .unwrap_or(4096),
    };
    let writes = job.plan.writes();
    let mut files: Vec<EngineFile> = Vec::new();
    for (&l, &f) in spec.lanes.iter().zip(&spec.files) {
        if f as usize == files.len() {
            let disk = match &job.disks[l] {
                Some(d) => Some(
                    open_disk_through(d, job.direct, writes, job.plan.data.write_through)
                        .map_err(|e| e.to_string())?,
                ),
                None => None,
            };
            files.push(EngineFile {
                disk,
                worker: job.lanes[l].worker,
                seed: job.lanes[l].seed,
            });
        }
    }
    let seed = lanes.first().map_or(0, |l| l.seed);
    job.engine
        .build(files, params, seed)
        .map_err(|e| e.to_string())
}

pub(super) fn thread_main(job: &Job, i: usize, gate: &Gate, ready: &Sender<Result<(), String>>) {
    let mut ready = ReadyOnce(Some(ready));
    let spec = &job.io_threads[i];
    let mut engine = match open_engine(job, spec) {
        Ok(e) => {
            ready.send(Ok(()));
            e
        }
        Err(e) => {
            ready.send(Err(e));
            gate.wait();
            return;
        }
    };
    let (epoch, tx) = gate.wait();
    sys::precise_timers();
    // Once per thread: the last to begin wakes `start`.
    let counted = std::cell::Cell::new(false);
    let count_started = || {
        if !counted.replace(true) {
            let (count, all) = &job.started;
            let mut n = count.lock().unwrap_or_else(|p| p.into_inner());
            *n += 1;
            if *n == job.io_threads.len() {
                all.notify_all();
            }
        }
    };
    // A panic in the loop must still end this source, or the collector waits for ever.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let simulated = engine.simulated_time();
        // Called by the loop once its state is built, with when its first I/O is due:
        // it begins then (see `begin_ns`), and how late it woke is its lateness.
        let at_start = |first_ns: u64| {
            if !simulated {
                let begin = epoch + Duration::from_nanos(begin_ns(first_ns, &job.timeline));
                // Naps: a stop (which rings the bell) ends them; a ring for another run
                // of this process (agents that share one) does not.
                while Instant::now() < begin && !job.stop.load(Ordering::SeqCst) {
                    iofleet_engine::nap(begin);
                }
                let late = Instant::now().saturating_duration_since(begin).as_nanos() as u64;
                job.max_late_ns.fetch_max(late, Ordering::SeqCst);
            }
            count_started();
            simulated || !job.stop.load(Ordering::SeqCst)
        };
        engine.drive(
            epoch,
            Loop {
                job,
                i,
                tx: &tx,
                self_check: !simulated,
                at_start: &at_start,
            },
        )
    }));
    // A thread that failed before its start (its engine or its state) has begun too,
    // as far as `start` is concerned.
    count_started();
    let (end_ns, error) = match outcome {
        Ok(Ok(end)) => (end, None),
        Ok(Err(e)) => (mono_now(epoch), Some(e.to_string())),
        Err(_) => (mono_now(epoch), Some("the I/O thread panicked".to_string())),
    };
    // Report before the engine is dropped: dropping waits (bounded) for I/O still in
    // the kernel, which must not hold up the end of the run.
    let _ = tx.send(Msg::Done {
        source: spec.id,
        end_ns,
        error,
        errors: Vec::new(),
        disks: Vec::new(),
        lost: false,
    });
    drop(tx);
    drop(engine);
}

/// When an I/O thread whose first I/O is due `first_ns` after the start instant
/// begins: then, but no later than the first interval boundary or `MAX_DEFER_NS`.
///
/// A thread with a closed-loop queue is due at once (0). An open-loop thread's first
/// arrival lies at a random phase of its gap (`lanes::new_queue`), so a fleet's rated
/// threads wake spread over their first gap instead of all at the start instant, where
/// a thousand agents on a few CPUs would hold each other up; and a thread's lateness is
/// measured against its own schedule. The cap keeps `LocalLauncher::start`, which waits
/// for every thread to begin, from holding up the first interval.
pub(super) fn begin_ns(first_ns: u64, timeline: &Timeline) -> u64 {
    let first_boundary = timeline.boundaries.get(1).copied().unwrap_or(0);
    first_ns.min(first_boundary).min(MAX_DEFER_NS)
}

/// The latest an I/O thread begins after the start instant (`begin_ns`).
pub(super) const MAX_DEFER_NS: u64 = 1_000_000_000;

pub(super) fn mono_now(epoch: Instant) -> u64 {
    Instant::now().saturating_duration_since(epoch).as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_begins_when_due_but_within_the_first_interval_and_a_second() {
        let s = Duration::from_secs;
        let ms = |n: u64| n * 1_000_000;
        // 1 s intervals: due at 300 ms, it begins then; due later, at the boundary.
        let one = Timeline::new(s(0), s(10), s(1));
        assert_eq!(begin_ns(0, &one), 0);
        assert_eq!(begin_ns(ms(300), &one), ms(300));
        assert_eq!(begin_ns(ms(2_500), &one), ms(1_000));
        // 100 ms intervals (a warm-up's first one too): never past the first boundary.
        let short = Timeline::new(Duration::from_millis(100), s(1), Duration::from_millis(100));
        assert_eq!(begin_ns(ms(300), &short), ms(100));
        // 5 s intervals: never past 1 s.
        let long = Timeline::new(s(0), s(30), s(5));
        assert_eq!(begin_ns(ms(2_500), &long), MAX_DEFER_NS);
        assert_eq!(begin_ns(ms(700), &long), ms(700));
    }
}
