//! The in-process launcher: the fleet's workers as lanes on I/O threads of this
//! process. Its plan resolves the engine, counts the lanes (one per thread of each disk
//! of each worker) and the I/O threads without building them, refuses a plan that needs
//! more memory than this host has (`footprint`), and checks and lays out the targets
//! (every check before any write). Materializing it builds the lanes, fills disks,
//! spreads the lanes over the I/O threads (one per usable CPU unless told otherwise,
//! pinned with `cpus`), opens each I/O thread's engine over the files of its lanes, and
//! holds the threads at a starting line until the controller names the instant. A local
//! run uses it directly; an agent uses it for its share of a fleet, so both run the
//! same code. With `--verify` it also loads or creates each disk's verify journal
//! (filling disks without one with verifiable units), shares one floor table per disk
//! with the lanes, and rewrites the journals once per interval and at the end. It
//! computes no result: its threads send interval samples to the collector.
//!
//! The wing's parts: this module is the launcher (`ThreadLauncher`, `run_local`);
//! `place` counts and places the work on this host (lanes, queues, I/O threads, disks)
//! and checks a layout; `footprint` is the memory a plan needs; `fill` writes whole
//! disks (prepare fills, preconditioning); `verify` keeps and checks the verify
//! journals; `threads` is each I/O thread's life; `lanes` is the loop they run and `gen`
//! the offsets each stream issues.

mod fill;
pub mod footprint;
pub mod gen;
pub mod lanes;
mod place;
mod threads;
pub mod verify;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use iofleet_engine::target::{
    create_files, open_disk, plan_layout, DiskLayout, FillPattern, FillWrites, TargetSpec,
};
use iofleet_engine::verify::{default_cache_dir, journal_path, DiskTable};
use iofleet_engine::EngineSpec;
use iofleet_profile::{combine, FleetTotals, GroupPlan, Prepare};
use iofleet_stats::result::RunResult;

use self::fill::{precondition_disks, prepare_disks};
use self::footprint::MemoryNeed;
use self::lanes::{IoThreadSpec, LaneSpec, TakenOut};
use self::place::{
    build_lanes, engine_line, io_threads_line, one_in_flight_notice, place_lanes,
    place_lanes_on_disks, Threads,
};
pub use self::place::{check_layout, check_verify, device_size_notice, pattern_spec};
use self::threads::{describe_io_thread, thread_main, Gate, Job};
use self::verify::{forget_journals, verify_setup, JournalSlot, JournalSync};
use crate::controller::{run, StartNow};
use crate::error::FleetError;
use crate::launcher::{Finished, HostVerified, Launcher, Prepared};
use crate::observer::{Observer, Phase};
use crate::plan::{LaunchPlan, Placement};
use crate::precondition::Preconditioned;
use crate::settings::RunSettings;
use crate::source::{Msg, Timeline};
use crate::sys;

/// Removes disk files when dropped (with `--cleanup`), whatever way the run ends.
#[derive(Default)]
struct Cleanup(Vec<std::path::PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
        if let Some(dir) = self.0.first().and_then(|p| p.parent()) {
            let _ = std::fs::remove_dir(dir); // only if now empty
        }
    }
}

/// Workers as I/O threads of this process.
pub struct ThreadLauncher {
    target: TargetSpec,
    target_label: String,
    job: Option<Arc<Job>>,
    handles: Vec<JoinHandle<()>>,
    gate: Arc<Gate>,
    cleanup: Cleanup,
    journal_sync: Option<JournalSync>,
}

/// The in-process half of a plan: the engine resolved for this host, how many I/O
/// threads the lanes go to, and each active group's disk layout on the target (none
/// when the engine touches no storage). The lanes themselves are built by
/// `materialize`: a plan (and `--dry-run`) only counts them.
#[derive(Debug, Clone)]
pub struct Here {
    engine: EngineSpec,
    threads: Threads,
    layouts: Vec<(usize, Vec<DiskLayout>)>,
    /// The target, when the engine touches storage.
    target: Option<TargetSpec>,
    /// As a dry run shows them: this host, the I/O threads, the memory.
    host: String,
    io_threads: String,
    memory: String,
}

impl From<Here> for Placement {
    fn from(h: Here) -> Self {
        Placement::Here {
            host: h.host,
            io_threads: h.io_threads,
            memory: h.memory,
            target: h.target.map(|t| {
                let all = h.layouts.into_iter().flat_map(|(_, l)| l).collect();
                (t, all)
            }),
        }
    }
}

impl ThreadLauncher {
    pub fn new(target: TargetSpec, target_label: String) -> Self {
        ThreadLauncher {
            target,
            target_label,
            job: None,
            handles: Vec::new(),
            gate: Arc::new(Gate::default()),
            cleanup: Cleanup::default(),
            journal_sync: None,
        }
    }

    /// Create every disk of `plan` (files, or check device regions open), then fill
    /// what the plan prepares, or set up verify journals. `None` when `stop` cut the
    /// fill short.
    fn lay_out_targets(
        &mut self,
        plan: &LaunchPlan<Here>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Vec<JournalSlot>>, FleetError> {
        let (groups, layouts) = (&plan.groups, &plan.placement.layouts);
        let direct = plan.settings.direct;
        let uring = plan.placement.engine == EngineSpec::Uring;
        let writes = FillWrites { direct, uring };
        if plan.settings.cleanup {
            // Every run's files, removed when the command's launcher goes.
            let files = layouts
                .iter()
                .flat_map(|(_, l)| l.iter())
                .filter(|d| !d.is_device)
                .flat_map(|d| [journal_path(d, Path::new("")), d.path.clone()]);
            for f in files {
                if !self.cleanup.0.contains(&f) {
                    self.cleanup.0.push(f);
                }
            }
        }
        // The data every write draws from is built while the files are created, not
        // before the first write (if the thread cannot start, the first write builds it).
        // A run that only reads disks it neither fills nor verifies needs none.
        let writes_data = groups.iter().any(|g| {
            g.plan.timing.prepare == Prepare::Random || g.plan.timing.verify || g.plan.writes()
        });
        if writes_data {
            let _ = std::thread::Builder::new()
                .name("iofleet-data".into())
                .spawn(iofleet_engine::pattern::warm);
        }
        for (gi, layout) in layouts {
            create_files(layout)?;
            // Surface open errors (O_DIRECT refused, permissions) as typed errors now.
            let p = &groups[*gi].plan;
            let needs_write = p.writes() || p.timing.prepare != Prepare::None;
            if let Some(first) = layout.first() {
                open_disk(first, direct, needs_write)?;
            }
        }
        let verify = groups.iter().any(|g| g.plan.timing.verify);
        let cache = default_cache_dir();
        let mut journals = Vec::new();
        for (gi, layout) in layouts {
            let plan = &groups[*gi].plan;
            let pattern = match plan.timing.prepare {
                Prepare::Random => Some(FillPattern::of(pattern_spec(&plan.data))),
                Prepare::Zero => Some(FillPattern::Zero),
                Prepare::None => None,
            };
            if verify {
                let p = pattern.unwrap_or(FillPattern::Random);
                match verify_setup(layout, p, writes, stop, observer, notices)? {
                    Some(j) => journals.extend(j),
                    None => return Ok(None),
                }
                continue;
            }
            if plan.writes() || pattern.is_some() {
                forget_journals(layout, &cache, notices)?;
            }
            if let Some(p) = pattern {
                observer.phase(Phase::Prepare, 0.0);
                if !prepare_disks(layout, p, writes, stop, observer, notices)? {
                    return Ok(None);
                }
            }
        }
        Ok(Some(journals))
    }

    /// What every I/O thread shares, with the verify journals' writer started.
    fn job_for(
        &mut self,
        groups: &[GroupPlan],
        built: Built,
        journals: Vec<JournalSlot>,
        direct: bool,
        stop: &Arc<AtomicBool>,
    ) -> Arc<Job> {
        let plan = combine(groups);
        let Built {
            engine,
            lanes,
            io_threads,
            disks,
        } = built;
        let tables: Vec<Option<Arc<DiskTable>>> = lanes
            .iter()
            .map(|l| {
                journals
                    .iter()
                    .find(|j| (j.disk.worker, j.disk.disk) == (l.worker, l.disk))
                    .map(|j| j.table.clone())
            })
            .collect();
        if !journals.is_empty() {
            self.journal_sync = Some(JournalSync::start(journals, plan.timing.interval));
        }
        let timeline = Timeline::new(
            plan.timing.warmup,
            plan.timing.duration,
            plan.timing.interval,
        );
        let job = Arc::new(Job {
            plan,
            timeline,
            taken_out: TakenOut::new(lanes.len()),
            lanes,
            disks,
            io_threads,
            tables,
            engine,
            direct,
            stop: stop.clone(),
            started: (Mutex::new(0), Condvar::new()),
            max_late_ns: AtomicU64::new(0),
        });
        self.job = Some(job.clone());
        job
    }

    /// Start every I/O thread and wait until each has opened its engine (they then
    /// wait at the starting line). On any failure every thread is stopped and joined.
    fn spawn_io_threads(
        &mut self,
        job: &Arc<Job>,
        stop: &Arc<AtomicBool>,
    ) -> Result<(), FleetError> {
        let n = job.io_threads.len();
        let (ready_tx, ready_rx) = bounded::<Result<(), String>>(n);
        for i in 0..n {
            let (job_t, gate, ready_tx) = (job.clone(), self.gate.clone(), ready_tx.clone());
            let h = std::thread::Builder::new()
                .name(format!("iofleet-io{i}"))
                .spawn(move || thread_main(&job_t, i, &gate, &ready_tx));
            match h {
                Ok(h) => self.handles.push(h),
                Err(e) => {
                    self.abandon(stop);
                    return Err(FleetError::Setup(format!(
                        "cannot start an I/O thread: {e}"
                    )));
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
        if let Some(e) = first_err {
            self.abandon(stop);
            return Err(FleetError::Setup(e));
        }
        Ok(())
    }

    /// What the controller needs of a materialized job.
    fn prepared(&self, groups: Vec<GroupPlan>, job: &Job) -> Prepared {
        let needs_target = job.engine.caps().needs_target;
        Prepared {
            worker_base: groups[0].worker_base,
            groups,
            hosts: vec![sys::hostname()],
            worker_host: vec![0; job.plan.fleet.workers as usize],
            observers: Vec::new(),
            sources: job
                .io_threads
                .iter()
                .map(|t| (describe_io_thread(t, &job.lanes), 0))
                .collect(),
            engine: job.engine.name().into(),
            target_label: if needs_target {
                self.target_label.clone()
            } else {
                "none".into()
            },
            direct: job.direct,
            configured_outstanding: job.lanes.iter().map(|t| t.slots() as u64).sum(),
            start_margin: Duration::from_millis(20),
            silence_grace: None,
            probe: Some(sys::HostProbe::new(if needs_target {
                sys::devices_under(&self.target.paths())
            } else {
                Vec::new()
            })),
            simulated_time: job.engine.caps().simulated_time,
            below: Default::default(),
        }
    }

    /// Stop and join threads already spawned (setup failed).
    fn abandon(&mut self, stop: &AtomicBool) {
        stop.store(true, Ordering::SeqCst);
        let (tx, _rx) = std::sync::mpsc::channel();
        self.gate.open(Instant::now(), tx);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        self.gate.close();
    }
}

/// A run on this host's threads: `groups` against `target`.
pub fn run_local(
    groups: &[GroupPlan],
    target: TargetSpec,
    target_label: String,
    settings: &RunSettings,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<RunResult, FleetError> {
    let mut launcher = ThreadLauncher::new(target, target_label);
    run(
        groups,
        settings,
        &mut launcher,
        &mut StartNow,
        stop,
        observer,
    )
}

impl Launcher for ThreadLauncher {
    type Where = Here;

    fn plan(
        &self,
        groups: &[GroupPlan],
        settings: &RunSettings,
    ) -> Result<LaunchPlan<Here>, FleetError> {
        let cfg = settings;
        let mut notices = Vec::new();
        let dir = match &self.target {
            TargetSpec::Dir(d) => Some(d.as_path()),
            // The engine is chosen for the first directory's filesystem.
            TargetSpec::Dirs(v) => v.first().map(|d| d.as_path()),
            TargetSpec::Devices(_) => None,
        };
        if let Some(how) = &cfg.drop_caches {
            sys::check_drop_caches(how)?;
        }
        let engine = cfg.engine.resolve_for_dir(dir, cfg.direct, &mut notices)?;
        let caps = engine.caps();
        check_verify(groups, &engine)?;
        if !caps.async_qd {
            notices.push(one_in_flight_notice(groups, &engine));
        }
        let active_groups = groups.iter().filter(|g| g.plan.fleet.workers > 0).count();
        if active_groups > 1 && matches!(self.target, TargetSpec::Devices(_)) && caps.needs_target {
            return Err(FleetError::Input(
                "--target: worker groups need a directory target (each group would split the same devices)".into(),
            ));
        }
        let mut groups = groups.to_vec();
        // What the lanes add up to, bounded, and the memory they need against what this
        // host has: before any lane is built or any target touched.
        let totals = FleetTotals::of(&groups).map_err(|e| FleetError::Input(e.to_string()))?;
        if totals.in_flight > u32::MAX as u64 {
            return Err(FleetError::Input(format!(
                "--qd (fleet.qd): {} I/Os in flight on one host, more than its I/O threads can number ({})",
                totals.in_flight,
                u32::MAX
            )));
        }
        let placement = place_lanes(totals.lanes, &groups, caps.async_qd, &mut notices)?;
        let io_threads = placement.count(&totals, &caps);
        let need = MemoryNeed::of_threads(&totals, &caps, io_threads);
        let available = footprint::available();
        need.check(available, "this host")?;

        // Targets: every check, before anything is written (`materialize` writes).
        let mut layouts = Vec::new();
        if caps.needs_target {
            for (gi, g) in groups.iter().enumerate() {
                if g.plan.fleet.workers == 0 {
                    continue;
                }
                let layout = plan_layout(&self.target, &cfg.layout_request(g, cfg.direct))?;
                check_layout(&g.plan, &layout, cfg.direct)?;
                notices.extend(device_size_notice(
                    g.plan.fleet.disk_size.0,
                    &layout,
                    cfg.disk_size_from_cli,
                ));
                layouts.push((gi, layout));
            }
            if groups.len() == 1 {
                if let Some(min) = layouts
                    .iter()
                    .flat_map(|(_, l)| l.iter())
                    .map(|d| d.size)
                    .min()
                {
                    groups[0].plan.fleet.disk_size = iofleet_profile::Bytes(min);
                }
            }
        }
        let here = Here {
            host: sys::hostname(),
            io_threads: io_threads_line(io_threads, totals.lanes, &engine, &placement.cpus),
            memory: need.line(available),
            target: caps.needs_target.then(|| self.target.clone()),
            engine: engine.clone(),
            threads: placement,
            layouts,
        };
        Ok(LaunchPlan {
            groups,
            engine: engine_line(&cfg.engine, &engine, &self.target),
            direct: cfg.direct,
            placement: here,
            notices,
            settings: settings.clone(),
        })
    }

    fn materialize(
        &mut self,
        plan: LaunchPlan<Here>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Prepared>, FleetError> {
        // Lanes, as the plan counted them; queues index the combined streams.
        let mut lanes = build_lanes(&plan.groups, plan.settings.seed);
        let caps = plan.placement.engine.caps();
        let io_threads = plan.placement.threads.threads(&lanes, &caps);
        let mut disks = vec![None; lanes.len()];
        let mut journals = Vec::new();
        if caps.needs_target {
            let Some(j) = self.lay_out_targets(&plan, stop, observer, notices)? else {
                return Ok(None);
            };
            journals = j;
            disks = place_lanes_on_disks(&mut lanes, &plan.placement.layouts);
        }
        // The fill is written: now the cache, so the run starts with it empty.
        if let Some(how) = &plan.settings.drop_caches {
            sys::drop_caches(how)?;
        }
        let built = Built {
            engine: plan.placement.engine,
            lanes,
            io_threads,
            disks,
        };
        let groups = plan.groups;
        let job = self.job_for(&groups, built, journals, plan.settings.direct, stop);
        self.spawn_io_threads(&job, stop)?;
        Ok(Some(self.prepared(groups, &job)))
    }

    fn verify(
        &mut self,
        plan: LaunchPlan<Here>,
        keep: usize,
    ) -> Result<Vec<HostVerified>, FleetError> {
        let host = sys::hostname();
        let (disks, found) =
            verify::check_target(&self.target, &plan.groups, &plan.settings, &host, keep)?;
        Ok(vec![(host, disks, found)])
    }

    fn precondition(
        &mut self,
        plan: LaunchPlan<Here>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
    ) -> Result<Option<Preconditioned>, FleetError> {
        let here = plan.placement;
        if !here.engine.caps().needs_target {
            return Err(FleetError::Input(format!(
                "--engine {}: it touches no storage, so there is nothing to precondition",
                here.engine.name()
            )));
        }
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let layout: Vec<DiskLayout> = here.layouts.into_iter().flat_map(|(_, l)| l).collect();
        create_files(&layout)?;
        let writes = FillWrites {
            direct: plan.settings.direct,
            uring: here.engine == EngineSpec::Uring,
        };
        let mut done = precondition_disks(&layout, writes, &sys::hostname(), stop, observer)?;
        done.notices = plan.notices;
        Ok(Some(done))
    }

    fn start(&mut self, epoch: Instant, tx: Sender<Msg>) -> Option<Duration> {
        self.gate.open(epoch, tx);
        let job = self.job.as_ref()?;
        // Wait for the last I/O thread to begin (it wakes this one; a thread that sees
        // a stop at the start counts as begun), at most two seconds after the latest a
        // thread begins (`threads::begin_ns`).
        // Not a poll, and not a sleep until the epoch: either way this thread would wake
        // with the I/O threads (here or, on a shared machine, other hosts') and hold
        // some of them up; a poll every 20 ms, on a machine of a thousand agents, kept
        // both CPUs busy from the start frame to the epoch and made hosts start late.
        let deadline = epoch.max(Instant::now())
            + Duration::from_nanos(threads::begin_ns(u64::MAX, &job.timeline))
            + Duration::from_secs(2);
        let (count, all) = &job.started;
        let mut n = count.lock().unwrap_or_else(|p| p.into_inner());
        while *n < job.io_threads.len() && !job.stop.load(Ordering::SeqCst) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            n = all
                .wait_timeout(n, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(n);
        Some(Duration::from_nanos(job.max_late_ns.load(Ordering::SeqCst)))
    }

    fn finish(&mut self) -> Finished {
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        // Threads hold the only senders besides the gate's: drop it so the channel ends.
        self.gate.close();
        let mut finished = Finished::default();
        if let Some(sync) = self.journal_sync.take() {
            if let Err(e) = sync.finish() {
                finished.notices.push(format!("verify: {e}"));
            }
        }
        finished
    }
}

/// What `materialize` builds from a plan: the lanes, their I/O threads, each lane's disk.
struct Built {
    engine: EngineSpec,
    lanes: Vec<LaneSpec>,
    io_threads: Vec<IoThreadSpec>,
    disks: Vec<Option<DiskLayout>>,
}
