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

mod fill;
pub mod footprint;
pub mod gen;
pub mod lanes;
pub mod verify;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use iofleet_engine::target::{
    create_files, logical_block_size, open_disk, plan_layout, DiskLayout, FillPattern, FillWrites,
    TargetSpec,
};
use iofleet_engine::verify::{default_cache_dir, journal_path, DiskTable};
use iofleet_engine::{BuiltEngine, Caps, Drive, EngineFile, EngineParams, EngineSpec, PatternSpec};
use iofleet_profile::{
    combine, stream_offsets, DataPattern, DataPlan, FleetTotals, GroupPlan, Plan, Prepare,
};
use iofleet_stats::result::RunResult;

use self::fill::{precondition_disks, prepare_disks};
use self::footprint::MemoryNeed;
use self::lanes::{lane_seed, run_lanes, IoThreadSpec, LaneSpec, QueueSpec, TakenOut, ThreadWork};
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

/// Everything the threads of one run share.
struct Job {
    plan: Plan,
    timeline: Timeline,
    lanes: Vec<LaneSpec>,
    /// Disk layout per lane (None for engines without a target).
    disks: Vec<Option<DiskLayout>>,
    /// Per lane: its disk's verify floor table (`--verify`).
    tables: Vec<Option<Arc<DiskTable>>>,
    io_threads: Vec<IoThreadSpec>,
    engine: EngineSpec,
    direct: bool,
    stop: Arc<AtomicBool>,
    /// Lanes whose disk kept failing and was taken out.
    taken_out: TakenOut,
    /// I/O threads that have begun (the last one to begin wakes `start`), and the
    /// latest of their start times after the epoch (ns): the start skew of this host's
    /// threads.
    started: (Mutex<usize>, Condvar),
    max_late_ns: AtomicU64,
}

/// The starting line: threads wait until it opens. Unlike a barrier it cannot deadlock
/// when fewer threads than planned reach it (a failed spawn, a panic during setup).
#[derive(Default)]
struct Gate {
    open: Mutex<Option<(Instant, Sender<Msg>)>>,
    cv: Condvar,
}

impl Gate {
    fn wait(&self) -> (Instant, Sender<Msg>) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(o) = open.as_ref() {
                return o.clone();
            }
            open = self.cv.wait(open).unwrap_or_else(|p| p.into_inner());
        }
    }
    fn open(&self, epoch: Instant, tx: Sender<Msg>) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = Some((epoch, tx));
        self.cv.notify_all();
    }
    fn close(&self) {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).take();
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
        }
    }

    /// Stop and join threads already spawned (setup failed).
    fn abandon(&mut self, stop: &AtomicBool) {
        stop.store(true, Ordering::SeqCst);
        let (tx, _rx) = crossbeam_channel::unbounded();
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

/// Queues of one lane on `disk`: one closed-loop queue shared by the weighted streams
/// (rate-capped when the profile sets a worker rate), one open-loop queue per rated
/// stream.
pub(crate) fn build_queues(plan: &Plan, disk: u32) -> Vec<QueueSpec> {
    let f = &plan.fleet;
    let mut queues = Vec::new();
    let weighted: Vec<(usize, u32)> = plan
        .streams
        .iter()
        .enumerate()
        .filter(|(_, s)| s.rate_iops.is_none() && s.disks.contains(&disk))
        .map(|(i, s)| (i, s.weight.unwrap_or(1)))
        .collect();
    if !weighted.is_empty() {
        let disks_with_weighted = (0..f.disks_per_worker)
            .filter(|d| {
                plan.streams
                    .iter()
                    .any(|s| s.rate_iops.is_none() && s.disks.contains(d))
            })
            .count() as f64;
        queues.push(QueueSpec {
            streams: weighted,
            qd: f.qd,
            rate: plan
                .timing
                .rate_iops
                .map(|r| r / (disks_with_weighted * f.threads_per_disk as f64)),
            arrival: plan.timing.arrival,
        });
    }
    for (i, s) in plan.streams.iter().enumerate() {
        if let Some(rate) = s.rate_iops {
            if s.disks.contains(&disk) {
                queues.push(QueueSpec {
                    streams: vec![(i, 1)],
                    qd: s.qd.unwrap_or(f.qd),
                    rate: Some(rate / (s.disks.len() as f64 * f.threads_per_disk as f64)),
                    arrival: plan.timing.arrival,
                });
            }
        }
    }
    queues
}

/// Check the layout against the plan: block sizes and alignment against the device's
/// logical block size with direct I/O, and every stream's largest block against the
/// disk size actually available.
pub fn check_layout(plan: &Plan, layout: &[DiskLayout], direct: bool) -> Result<(), FleetError> {
    for d in layout {
        if direct {
            let lbs = logical_block_size(d);
            for (i, s) in plan.streams.iter().enumerate() {
                if let Some((bs, _)) = s.bs.entries.iter().find(|(b, _)| b.0 % lbs != 0) {
                    return Err(FleetError::Input(format!(
                        "stream[{i}] (\"{}\").bs: {} is not a multiple of {}'s logical block size ({lbs} bytes) required by direct I/O (or rerun with --direct=false)",
                        s.name,
                        bs,
                        d.path.display()
                    )));
                }
                if s.align.0 % lbs != 0 {
                    return Err(FleetError::Input(format!(
                        "stream[{i}] (\"{}\").align: {} is not a multiple of {}'s logical block size ({lbs} bytes)",
                        s.name,
                        s.align,
                        d.path.display()
                    )));
                }
            }
        }
        for (i, s) in plan.streams.iter().enumerate() {
            if s.disks.contains(&d.disk) && s.bs.max().0 > d.size {
                return Err(FleetError::Input(format!(
                    "stream[{i}] (\"{}\").bs: {} does not fit in disk {} of worker {} ({} bytes); raise --disk-size",
                    s.name,
                    s.bs.max(),
                    d.disk,
                    d.worker,
                    d.size
                )));
            }
        }
    }
    Ok(())
}

/// `--verify` needs an engine that touches storage: with `null`, `null-sim` or `sim`
/// there is no data to verify.
pub fn check_verify(groups: &[GroupPlan], engine: &EngineSpec) -> Result<(), FleetError> {
    if groups.iter().any(|g| g.plan.timing.verify) && !engine.caps().needs_target {
        return Err(FleetError::Input(format!(
            "--verify (timing.verify): the {} engine touches no storage, so there is no data to verify; use --engine io_uring, psync or auto",
            engine.name()
        )));
    }
    Ok(())
}

/// The notice a device target owes when it, not the profile, sets the disk size: without
/// `--disk-size` each disk is a whole device region (less the fill marker), whatever
/// `fleet.disk_size` said. None for directories, `--disk-size`, or an equal size.
pub fn device_size_notice(
    profile_size: u64,
    layout: &[DiskLayout],
    from_cli: bool,
) -> Option<String> {
    let devs: Vec<&DiskLayout> = layout.iter().filter(|d| d.is_device).collect();
    let lo = devs.iter().map(|d| d.size).min()?;
    let hi = devs.iter().map(|d| d.size).max()?;
    if from_cli || (lo == profile_size && hi == profile_size) {
        return None;
    }
    let mut paths: Vec<String> = devs.iter().map(|d| d.path.display().to_string()).collect();
    paths.dedup();
    let size = if lo == hi {
        format!("{}", iofleet_profile::Bytes(lo))
    } else {
        format!(
            "{} to {}",
            iofleet_profile::Bytes(lo),
            iofleet_profile::Bytes(hi)
        )
    };
    Some(format!(
        "--target {}: each disk is an equal region of the device (less a 4k fill marker), so the disk size is {size}, not the profile's {} (fleet.disk_size); give --disk-size to choose it",
        paths.join(" "),
        iofleet_profile::Bytes(profile_size)
    ))
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
        // Wait for the last I/O thread to begin (it wakes this one; a stop is checked
        // now and then), at most two seconds after the epoch. Not a poll, and not a
        // sleep until the epoch: either way this thread would wake with the I/O threads
        // (here or, on a shared machine, other hosts') and hold some of them up.
        let deadline = epoch.max(Instant::now()) + Duration::from_secs(2);
        let (count, all) = &job.started;
        let mut n = count.lock().unwrap_or_else(|p| p.into_inner());
        while *n < job.io_threads.len() && !job.stop.load(Ordering::SeqCst) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            n = all
                .wait_timeout(n, left.min(Duration::from_millis(20)))
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

/// How lanes are spread over I/O threads on this host.
#[derive(Debug, Clone)]
struct Threads {
    threads: usize,
    cpus: Option<Vec<usize>>,
}

/// What `materialize` builds from a plan: the lanes, their I/O threads, each lane's disk.
struct Built {
    engine: EngineSpec,
    lanes: Vec<LaneSpec>,
    io_threads: Vec<IoThreadSpec>,
    disks: Vec<Option<DiskLayout>>,
}

/// Every lane of every group: one per thread of each disk some stream uses, in worker,
/// disk, thread order. Queues index the groups' combined streams.
fn build_lanes(groups: &[GroupPlan], seed: u64) -> Vec<LaneSpec> {
    let offsets = stream_offsets(groups);
    let mut lanes = Vec::new();
    for (g, offset) in groups.iter().zip(&offsets) {
        let f = &g.plan.fleet;
        for w in g.worker_base..g.worker_base + f.workers {
            for d in 0..f.disks_per_worker {
                let mut queues = build_queues(&g.plan, d);
                if queues.is_empty() {
                    continue; // no stream uses this disk
                }
                for q in &mut queues {
                    q.streams.iter_mut().for_each(|s| s.0 += offset);
                }
                for t in 0..f.threads_per_disk {
                    lanes.push(LaneSpec {
                        worker: w,
                        disk: d,
                        thread: t,
                        threads_per_disk: f.threads_per_disk,
                        queues: queues.clone(),
                        seed: lane_seed(seed, w, d, t),
                        region_offset: 0,
                        disk_size: f.disk_size.0,
                        data: pattern_spec(&g.plan.data),
                    });
                }
            }
        }
    }
    lanes
}

/// The engine's data pattern for a profile's `[data]`.
pub fn pattern_spec(d: &DataPlan) -> PatternSpec {
    PatternSpec {
        zero: d.pattern == DataPattern::Zero,
        dedupe_ratio: d.dedupe_ratio,
        dedupe_unit: d.dedupe_unit.0 as u32,
        compress_ratio: d.compress_ratio,
    }
}

/// Point every lane at its disk's file or device region; the disk of each lane.
fn place_lanes_on_disks(
    lanes: &mut [LaneSpec],
    layouts: &[(usize, Vec<DiskLayout>)],
) -> Vec<Option<DiskLayout>> {
    lanes
        .iter_mut()
        .map(|t| {
            let d = layouts
                .iter()
                .flat_map(|(_, l)| l.iter())
                .find(|d| d.worker == t.worker && d.disk == t.disk)
                .expect("layout covers every disk");
            t.region_offset = d.region_offset;
            t.disk_size = d.size;
            Some(d.clone())
        })
        .collect()
}

/// How an engine with one I/O in flight per OS thread serves the plan's queue depth.
fn one_in_flight_notice(groups: &[GroupPlan], engine: &EngineSpec) -> String {
    let max_qd = groups
        .iter()
        .flat_map(|g| {
            g.plan
                .streams
                .iter()
                .filter_map(|s| s.qd)
                .chain([g.plan.fleet.qd])
        })
        .max()
        .unwrap_or(1);
    if max_qd > 1 {
        format!(
            "{} keeps one I/O in flight per OS thread: each lane has its own I/O thread, which serves its queue itself while I/Os complete at once (page-cache copies) and hands it to one sync thread per slot (qd up to {max_qd}) once an I/O blocks",
            engine.name()
        )
    } else {
        format!(
            "{} keeps one I/O in flight per OS thread: each lane has its own I/O thread",
            engine.name()
        )
    }
}

/// The engine as planned: what `auto` became on this host, and why when it matters.
fn engine_line(asked: &EngineSpec, resolved: &EngineSpec, target: &TargetSpec) -> String {
    match (asked, resolved) {
        (EngineSpec::Auto, EngineSpec::Psync)
            if matches!(target, TargetSpec::Dir(_) | TargetSpec::Dirs(_)) =>
        {
            "auto: psync (the target's filesystem has no non-blocking reads, as tmpfs; or io_uring is unavailable)".into()
        }
        (EngineSpec::Auto, other) => format!("auto: {}", other.name()),
        (e, _) => e.to_string(),
    }
}

/// The I/O threads as planned: how many, why that many, and where they are pinned.
fn io_threads_line(
    threads: u64,
    lanes: u64,
    engine: &EngineSpec,
    cpus: &Option<Vec<usize>>,
) -> String {
    let caps = engine.caps();
    let why = if !caps.async_qd {
        format!(
            "one per lane: {} keeps one I/O in flight per thread",
            engine.name()
        )
    } else if caps.device_per_disk {
        "a disk's lanes share one thread, as they share its simulated device".to_string()
    } else {
        format!("{lanes} lane(s) shared among them")
    };
    let pinned = match cpus {
        Some(c) => format!(", pinned to CPUs {}", sys::format_cpu_list(c)),
        None => String::new(),
    };
    format!("{threads} ({why}{pinned})")
}

/// Decide the I/O threads: `io_threads` (largest asked by any group), else one per CPU
/// in `cpus` or per CPU this process may use, never more than there are lanes. Engines
/// with one I/O in flight per thread get one thread per lane. `cpus` must all be CPUs
/// this process may use.
fn place_lanes(
    lanes: u64,
    groups: &[GroupPlan],
    async_qd: bool,
    notices: &mut Vec<String>,
) -> Result<Threads, FleetError> {
    let asked = groups.iter().filter_map(|g| g.plan.fleet.io_threads).max();
    let cpus = groups.iter().find_map(|g| g.plan.fleet.cpus.clone());
    let allowed = sys::allowed_cpus();
    if let Some(list) = &cpus {
        if let Some(bad) = list.iter().find(|c| !allowed.contains(c)) {
            return Err(FleetError::Input(format!(
                "--cpus (fleet.cpus): CPU {bad} is not one this process may use (it may use {})",
                sys::format_cpu_list(&allowed)
            )));
        }
    }
    let lanes_n = lanes.max(1) as usize;
    let threads = if async_qd {
        asked
            .map(|n| n as usize)
            .or(cpus.as_ref().map(Vec::len))
            .unwrap_or(allowed.len())
            .clamp(1, lanes_n)
    } else {
        if asked.is_some_and(|n| n as usize != lanes_n) {
            notices.push(format!(
                "--io-threads is ignored with an engine that keeps one I/O in flight per thread: each of the {lanes_n} lanes has its own I/O thread"
            ));
        }
        lanes_n
    };
    Ok(Threads { threads, cpus })
}

impl Threads {
    /// How many I/O threads `threads` makes for lanes adding up to `t`, counted without
    /// building them.
    fn count(&self, t: &FleetTotals, caps: &Caps) -> u64 {
        let units = if caps.device_per_disk {
            t.driven_disks
        } else {
            t.lanes
        };
        (self.threads as u64).min(units).max(1)
    }

    /// Lane i goes to I/O thread i mod n, so every thread gets a like share of every
    /// worker group; each thread opens each disk its lanes use once. Engines without a
    /// target give every lane a file of its own, so simulated latencies follow the
    /// lane's seed whatever the placement. Engines that model each disk as one device
    /// (`device_per_disk`) keep every lane of a disk on one thread, through one file:
    /// disk k (in lane order) goes to thread k mod n.
    fn threads(&self, lanes: &[LaneSpec], caps: &Caps) -> Vec<IoThreadSpec> {
        let file_per_lane = !caps.needs_target && !caps.device_per_disk;
        let mut disk_index: Vec<usize> = Vec::with_capacity(lanes.len());
        let mut disks = 0usize;
        for (i, lane) in lanes.iter().enumerate() {
            let same =
                i > 0 && (lanes[i - 1].worker, lanes[i - 1].disk) == (lane.worker, lane.disk);
            if !same && i > 0 {
                disks += 1;
            }
            disk_index.push(disks);
        }
        let units = if caps.device_per_disk {
            disks + 1
        } else {
            lanes.len()
        };
        let n = self.threads.min(units).max(1);
        let mut out: Vec<IoThreadSpec> = (0..n)
            .map(|i| IoThreadSpec {
                id: i as u32,
                cpu: self.cpus.as_ref().map(|c| c[i % c.len()]),
                ..IoThreadSpec::default()
            })
            .collect();
        // Per thread: (worker, disk) of each file opened so far. Lanes come in worker,
        // disk, thread order, so each thread meets a disk's lanes one after another:
        // the last file opened is the only one a lane can share.
        let mut opened: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
        for (i, lane) in lanes.iter().enumerate() {
            let t = if caps.device_per_disk {
                disk_index[i] % n
            } else {
                i % n
            };
            let key = (lane.worker, lane.disk);
            let file = match opened[t].last() {
                Some(&k) if k == key && !file_per_lane => opened[t].len() - 1,
                _ => {
                    opened[t].push(key);
                    opened[t].len() - 1
                }
            };
            out[t].lanes.push(i);
            out[t].files.push(file as u32);
        }
        out
    }
}

fn describe_io_thread(t: &IoThreadSpec, lanes: &[LaneSpec]) -> String {
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
struct Loop<'a> {
    job: &'a Job,
    i: usize,
    tx: &'a Sender<Msg>,
    self_check: bool,
    at_start: &'a dyn Fn() -> bool,
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
fn open_engine(job: &Job, spec: &IoThreadSpec) -> Result<BuiltEngine, String> {
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
                Some(d) => Some(open_disk(d, job.direct, writes).map_err(|e| e.to_string())?),
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

fn thread_main(job: &Job, i: usize, gate: &Gate, ready: &Sender<Result<(), String>>) {
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
        // Called by the loop once its state is built: everyone starts at the same
        // instant.
        let at_start = || {
            if !simulated {
                std::thread::sleep(epoch.saturating_duration_since(Instant::now()));
                let late = Instant::now().saturating_duration_since(epoch).as_nanos() as u64;
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

fn mono_now(epoch: Instant) -> u64 {
    Instant::now().saturating_duration_since(epoch).as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::fixtures;
    use iofleet_profile::StreamPlan;

    #[test]
    fn a_device_target_that_replaces_the_disk_size_says_so() {
        let disk = |path: &str, size: u64, is_device: bool| DiskLayout {
            worker: 0,
            disk: 0,
            path: path.into(),
            region_offset: 0,
            size,
            is_device,
        };
        let mib = 1u64 << 20;
        let regions = [
            disk("/dev/loop7", 16 * mib - 4096, true),
            disk("/dev/loop7", 16 * mib - 4096, true),
        ];
        let n = device_size_notice(64 * mib, &regions, false).unwrap();
        assert!(n.starts_with("--target /dev/loop7: "), "{n}");
        assert!(
            n.contains("disk size is 16380k, not the profile's 64m"),
            "{n}"
        );
        assert!(n.contains("--disk-size"), "{n}");
        // Given with --disk-size, or equal to the profile's, or a directory: nothing to say.
        assert_eq!(device_size_notice(64 * mib, &regions, true), None);
        assert_eq!(device_size_notice(16 * mib - 4096, &regions, false), None);
        let files = [disk("d/w000-d000.iofleet", 64 * mib, false)];
        assert_eq!(device_size_notice(32 * mib, &files, false), None);
        // Regions of unequal devices: the range.
        let mixed = [
            disk("/dev/a", 8 * mib, true),
            disk("/dev/b", 12 * mib, true),
        ];
        let n = device_size_notice(64 * mib, &mixed, false).unwrap();
        assert!(
            n.contains("--target /dev/a /dev/b") && n.contains("8m to 12m"),
            "{n}"
        );
    }

    fn plan_with(streams: Vec<StreamPlan>, disks: u32) -> Plan {
        fixtures::plan(fixtures::fleet(1, disks, 2, 4), streams)
    }

    fn stream(name: &str, rate: Option<f64>, qd: Option<u32>, disks: Vec<u32>) -> StreamPlan {
        StreamPlan {
            weight: if rate.is_none() { Some(1) } else { None },
            rate_iops: rate,
            qd,
            disks,
            ..fixtures::stream(name, 50.0)
        }
    }

    #[test]
    fn queues_split_closed_and_rated_streams() {
        let plan = plan_with(
            vec![
                stream("data", None, None, vec![0, 1]),
                stream("log", Some(300.0), Some(1), vec![1]),
            ],
            2,
        );
        let l0 = build_queues(&plan, 0);
        assert_eq!(l0.len(), 1);
        assert_eq!(l0[0].qd, 4);
        assert!(l0[0].rate.is_none());
        let l1 = build_queues(&plan, 1);
        assert_eq!(l1.len(), 2);
        assert_eq!(l1[1].qd, 1);
        // 300 IOPS per worker over 1 disk × 2 threads.
        assert_eq!(l1[1].rate, Some(150.0));
    }

    #[test]
    fn the_plan_counts_what_materialize_builds() {
        // Disk 2 of 3 is driven by no stream: it has no lanes.
        let mut p = plan_with(
            vec![
                stream("data", None, None, vec![0, 1]),
                stream("log", Some(300.0), Some(1), vec![1]),
            ],
            3,
        );
        p.fleet.workers = 5;
        let groups = GroupPlan::single(p, 0);
        let t = FleetTotals::of(&groups).unwrap();
        let lanes = build_lanes(&groups, 7);
        assert_eq!(lanes.len() as u64, t.lanes);
        assert_eq!(t.lanes, 5 * 2 * 2);
        let slots: u64 = lanes.iter().map(|l| l.slots() as u64).sum();
        assert_eq!(slots, t.in_flight);
        for caps in [
            EngineSpec::Uring.caps(),
            EngineSpec::Null.caps(),
            EngineSpec::Psync.caps(),
            EngineSpec::Sim(Default::default()).caps(),
        ] {
            for threads in [1, 3, 64] {
                let placement = Threads {
                    threads,
                    cpus: None,
                };
                assert_eq!(
                    placement.threads(&lanes, &caps).len() as u64,
                    placement.count(&t, &caps),
                    "{threads} threads, {caps:?}"
                );
            }
        }
    }
}
