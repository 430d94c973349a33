//! Starting I/O threads. A `Launcher` opens every thread's disk and engine, reports when
//! all are ready, releases them together at one instant, and waits for them to end.
//! `LocalLauncher` runs threads in this process; a remote launcher (an agent over SSH)
//! implements the same trait, so the controller cannot tell where work runs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use iofleet_engine::null::{LatencyModel, NullEngine};
use iofleet_engine::psync::PsyncEngine;
use iofleet_engine::target::{open_disk, DiskLayout};
use iofleet_engine::uring::UringEngine;
use iofleet_engine::{EngineParams, MonoClock, VirtualClock};
use iofleet_profile::Plan;

use crate::thread::{run_thread, Msg, ThreadSpec, Timeline};

/// The engine a run actually uses, after `auto` has been decided.
#[derive(Debug, Clone)]
pub enum ResolvedEngine {
    Uring,
    Psync,
    /// Completes instantly, no target.
    Null,
    /// Completes after injected latencies in simulated time (per worker, cycled by worker
    /// index), for deterministic tests of the whole pipeline.
    NullSim(Vec<LatencyModel>),
}

impl ResolvedEngine {
    pub fn name(&self) -> &'static str {
        match self {
            ResolvedEngine::Uring => "io_uring",
            ResolvedEngine::Psync => "psync",
            ResolvedEngine::Null => "null",
            ResolvedEngine::NullSim(_) => "null-sim",
        }
    }
    pub fn needs_target(&self) -> bool {
        matches!(self, ResolvedEngine::Uring | ResolvedEngine::Psync)
    }
    pub fn is_async(&self) -> bool {
        !matches!(self, ResolvedEngine::Psync)
    }
}

/// Everything the threads of one run share.
pub struct Job {
    pub plan: Plan,
    pub timeline: Timeline,
    pub threads: Vec<ThreadSpec>,
    /// Disk layout per thread (None for engines without a target).
    pub disks: Vec<Option<DiskLayout>>,
    pub engine: ResolvedEngine,
    pub direct: bool,
    pub stop: Arc<AtomicBool>,
    /// Threads that have begun I/O, and the latest of their start times after the
    /// epoch (ns): the start skew of this host's threads.
    pub started: AtomicU64,
    pub max_late_ns: AtomicU64,
}

pub trait Launcher {
    /// Open every thread's target and engine; return once all are ready, or the first
    /// thread's setup error (as text naming the disk).
    fn launch(&mut self, job: Arc<Job>, tx: Sender<Msg>) -> Result<(), String>;
    /// Release every launched thread at `epoch`; return once all have begun I/O (or
    /// after 2 s), with how late the last one began.
    fn start(&mut self, epoch: Instant) -> Duration;
    /// Wait until every thread has ended.
    fn join(&mut self);
}

/// The starting line: threads wait until it opens. Unlike a barrier it cannot deadlock
/// when fewer threads than planned reach it (a failed spawn, a panic during setup).
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        while !*open {
            open = self.cv.wait(open).unwrap_or_else(|p| p.into_inner());
        }
    }
    fn open(&self) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_all();
    }
}

/// Reports a thread's setup outcome exactly once, even if setup panics.
struct ReadyOnce<'a>(Option<&'a Sender<Result<(), String>>>);

impl ReadyOnce<'_> {
    fn send(&mut self, r: Result<(), String>) {
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

#[derive(Default)]
pub struct LocalLauncher {
    job: Option<Arc<Job>>,
    handles: Vec<JoinHandle<()>>,
    gate: Option<Arc<Gate>>,
    epoch: Arc<OnceLock<Instant>>,
}

impl Launcher for LocalLauncher {
    fn launch(&mut self, job: Arc<Job>, tx: Sender<Msg>) -> Result<(), String> {
        let n = job.threads.len();
        self.job = Some(job.clone());
        let gate = Arc::new(Gate::default());
        self.gate = Some(gate.clone());
        let (ready_tx, ready_rx) = bounded::<Result<(), String>>(n);
        for i in 0..n {
            let job_t = job.clone();
            let tx = tx.clone();
            let gate = gate.clone();
            let ready_tx = ready_tx.clone();
            let epoch = self.epoch.clone();
            let h = std::thread::Builder::new()
                .name(format!(
                    "io-w{}d{}t{}",
                    job.threads[i].worker, job.threads[i].disk, job.threads[i].thread
                ))
                .spawn(move || thread_main(&job_t, i, &tx, &gate, &ready_tx, &epoch));
            match h {
                Ok(h) => self.handles.push(h),
                Err(e) => {
                    job.stop.store(true, Ordering::SeqCst);
                    self.start(Instant::now());
                    self.join();
                    return Err(format!("cannot start an I/O thread: {e}"));
                }
            }
        }
        drop(ready_tx);
        let mut first_err = None;
        for _ in 0..n {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert("an I/O thread ended during setup".into());
                    break;
                }
            }
        }
        match first_err {
            None => Ok(()),
            Some(e) => {
                job.stop.store(true, Ordering::SeqCst);
                self.start(Instant::now());
                self.join();
                Err(e)
            }
        }
    }

    fn start(&mut self, epoch: Instant) -> Duration {
        let _ = self.epoch.set(epoch);
        if let Some(g) = self.gate.take() {
            g.open();
        }
        let Some(job) = self.job.as_ref() else {
            return Duration::ZERO;
        };
        let deadline = epoch.max(Instant::now()) + Duration::from_secs(2);
        while job.started.load(Ordering::SeqCst) < job.threads.len() as u64
            && !job.stop.load(Ordering::SeqCst)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        Duration::from_nanos(job.max_late_ns.load(Ordering::SeqCst))
    }

    fn join(&mut self) {
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

fn thread_main(
    job: &Job,
    i: usize,
    tx: &Sender<Msg>,
    gate: &Gate,
    ready: &Sender<Result<(), String>>,
    epoch: &OnceLock<Instant>,
) {
    let mut ready = ReadyOnce(Some(ready));
    let spec = &job.threads[i];
    let params = EngineParams {
        slots: spec.slots(),
        max_bs: spec
            .lanes
            .iter()
            .flat_map(|l| l.streams.iter())
            .map(|&(s, _)| job.plan.streams[s].bs.max().0 as u32)
            .max()
            .unwrap_or(4096),
    };
    let writes = job.plan.streams.iter().any(|s| s.read_pct < 100.0);
    let open = || -> Result<iofleet_engine::OpenDisk, String> {
        let d = job.disks[i].as_ref().expect("target engines have a layout");
        open_disk(d, job.direct, writes).map_err(|e| e.to_string())
    };
    // Built once per thread and consumed at once: the size difference is irrelevant.
    #[allow(clippy::large_enum_variant)]
    enum Ready {
        Uring(UringEngine),
        Psync(PsyncEngine),
        Null(NullEngine),
        Sim(NullEngine, VirtualClock),
    }
    let engine = match &job.engine {
        ResolvedEngine::Uring => open().and_then(|d| {
            UringEngine::new(d, params, spec.seed)
                .map(Ready::Uring)
                .map_err(|e| e.to_string())
        }),
        ResolvedEngine::Psync => open().and_then(|d| {
            PsyncEngine::new(d, params, spec.seed)
                .map(Ready::Psync)
                .map_err(|e| e.to_string())
        }),
        ResolvedEngine::Null => NullEngine::new(params, spec.seed)
            .map(Ready::Null)
            .map_err(|e| e.to_string()),
        ResolvedEngine::NullSim(models) => {
            let clock = VirtualClock::new();
            let model = models[spec.worker as usize % models.len()].clone();
            NullEngine::with_latency(params, spec.seed, model, clock.clone())
                .map(|e| Ready::Sim(e, clock))
                .map_err(|e| e.to_string())
        }
    };
    let mut engine = match engine {
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
    gate.wait();
    let stop = &job.stop;
    let epoch = *epoch.get().expect("epoch is set before the gate opens");
    let mono = MonoClock::new(epoch);
    // A panic in the loop must still end this source, or the collector waits for ever.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &mut engine {
        Ready::Sim(e, clock) => {
            job.started.fetch_add(1, Ordering::SeqCst);
            run_thread(e, clock, spec, &job.plan, &job.timeline, stop, tx)
        }
        other => {
            // Everyone starts at the same instant.
            let wait = epoch.saturating_duration_since(Instant::now());
            std::thread::sleep(wait);
            let late = Instant::now().saturating_duration_since(epoch).as_nanos() as u64;
            job.max_late_ns.fetch_max(late, Ordering::SeqCst);
            job.started.fetch_add(1, Ordering::SeqCst);
            match other {
                _ if stop.load(Ordering::SeqCst) => Ok(0),
                Ready::Uring(e) => run_thread(e, &mono, spec, &job.plan, &job.timeline, stop, tx),
                Ready::Psync(e) => run_thread(e, &mono, spec, &job.plan, &job.timeline, stop, tx),
                Ready::Null(e) => run_thread(e, &mono, spec, &job.plan, &job.timeline, stop, tx),
                Ready::Sim(..) => unreachable!("handled above"),
            }
        }
    }));
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
        lost: false,
    });
    drop(engine);
}

fn mono_now(epoch: Instant) -> u64 {
    Instant::now().saturating_duration_since(epoch).as_nanos() as u64
}
