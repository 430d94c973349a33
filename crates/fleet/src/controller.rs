//! The run controller: checks and lays out targets, fills disks, builds every thread's
//! lanes, starts all threads at one instant, merges their interval samples in order and
//! computes the final `RunResult`.
//!
//! Intervals are merged with `+=` into per-worker samples; an interval is complete when
//! every thread has reported it (or has ended), and is then handed to the observer and
//! folded into the totals. Cluster figures are always read from merged histograms.
//! Nothing in here touches I/O in the hot path.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::unbounded;
use iofleet_engine::null::LatencyModel;
use iofleet_engine::target::{
    create_files, fill_disk, fill_marker_valid, logical_block_size, open_disk, plan_layout,
    DiskLayout, FillOutcome, FillPattern, LayoutRequest, TargetError, TargetSpec,
};
use iofleet_engine::{uring, EngineError};
use iofleet_profile::{combine, stream_offsets, GroupPlan, Plan, Prepare};
use iofleet_stats::result::{RunInfo, RunResult};

use crate::collect::{collect, empty_result, summarize, CollectSpec, HostFacts};
use crate::launcher::{Job, Launcher, LocalLauncher, ResolvedEngine};
use crate::observer::{Observer, Phase};
use crate::sys;
use crate::thread::{thread_seed, LaneSpec, ThreadSpec, Timeline};

/// The engine the user asked for.
#[derive(Debug, Clone)]
pub enum EngineChoice {
    /// io_uring when the kernel allows it, else psync (with one notice).
    Auto,
    Uring,
    Psync,
    Null,
    /// Null engine with injected latencies in simulated time (tests, simulations).
    NullSim(Vec<LatencyModel>),
}

#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The worker groups (one for a single profile), contiguous in worker index.
    pub groups: Vec<GroupPlan>,
    pub engine: EngineChoice,
    pub target: TargetSpec,
    /// How the target is shown in results.
    pub target_label: String,
    pub direct: bool,
    pub destroy_data: bool,
    /// `--disk-size` was given on the command line (device targets honour it).
    pub disk_size_from_cli: bool,
    pub seed: u64,
    /// Remove the disk files (never devices) when the run ends.
    pub cleanup: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A problem the user fixes by changing a flag or key (named in the message).
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Setup(String),
}

impl FleetError {
    pub fn is_input_error(&self) -> bool {
        match self {
            FleetError::Target(t) => t.is_input_error(),
            FleetError::Input(_) => true,
            FleetError::Engine(EngineError::UringUnavailable(_)) => true,
            _ => false,
        }
    }
}

/// Lanes of one thread on `disk`: one closed-loop lane shared by the weighted streams
/// (rate-capped when the profile sets a worker rate), one open-loop lane per rated stream.
fn build_lanes(plan: &Plan, disk: u32, qd_cap: Option<u32>) -> Vec<LaneSpec> {
    let f = &plan.fleet;
    let cap = |qd: u32| qd_cap.map_or(qd, |c| qd.min(c));
    let mut lanes = Vec::new();
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
        lanes.push(LaneSpec {
            streams: weighted,
            qd: cap(f.qd),
            rate_per_thread: plan
                .timing
                .rate_iops
                .map(|r| r / (disks_with_weighted * f.threads_per_disk as f64)),
            arrival: plan.timing.arrival,
        });
    }
    for (i, s) in plan.streams.iter().enumerate() {
        if let Some(rate) = s.rate_iops {
            if s.disks.contains(&disk) {
                lanes.push(LaneSpec {
                    streams: vec![(i, 1)],
                    qd: cap(s.qd.unwrap_or(f.qd)),
                    rate_per_thread: Some(
                        rate / (s.disks.len() as f64 * f.threads_per_disk as f64),
                    ),
                    arrival: plan.timing.arrival,
                });
            }
        }
    }
    lanes
}

/// Parse simulated-device latencies: models separated by `;`, assigned to workers in
/// turn (worker i gets model i mod n). A model is `fixed:T`, `uniform:LO:HI`, `exp:MEAN`,
/// `lognormal:MEDIAN:SIGMA` or `samples:T1,T2,…` (cycled in order); times are
/// nanoseconds, or carry `ns`, `us` or `ms`.
pub fn parse_sim_latency(spec: &str) -> Result<Vec<LatencyModel>, String> {
    fn t(s: &str) -> Result<u64, String> {
        let s = s.trim();
        let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
            (n, 1_000_000.0)
        } else if let Some(n) = s.strip_suffix("us") {
            (n, 1_000.0)
        } else if let Some(n) = s.strip_suffix("ns") {
            (n, 1.0)
        } else {
            (s, 1.0)
        };
        let v: f64 = num
            .parse()
            .map_err(|_| format!("'{s}' is not a time (examples: 500, 80us, 2ms)"))?;
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!("'{s}' is not a time"));
        }
        Ok((v * mult).round() as u64)
    }
    let mut models = Vec::new();
    for m in spec.split(';').filter(|m| !m.trim().is_empty()) {
        let parts: Vec<&str> = m.trim().split(':').collect();
        let model = match parts.as_slice() {
            ["fixed", v] => LatencyModel::Fixed(t(v)?),
            ["uniform", lo, hi] => LatencyModel::Uniform {
                lo_ns: t(lo)?,
                hi_ns: t(hi)?,
            },
            ["exp", mean] => LatencyModel::Exponential { mean_ns: t(mean)? },
            ["lognormal", med, sigma] => LatencyModel::LogNormal {
                median_ns: t(med)?,
                sigma: sigma
                    .parse()
                    .map_err(|_| format!("'{sigma}' is not a number"))?,
            },
            ["samples", list] => LatencyModel::Samples(
                list.split(',').map(t).collect::<Result<Vec<_>, _>>()?,
            ),
            _ => {
                return Err(format!(
                    "'{m}' is not a latency model (fixed:T, uniform:LO:HI, exp:MEAN, lognormal:MEDIAN:SIGMA, samples:T1,T2,…)"
                ))
            }
        };
        model.validate().map_err(|e| e.to_string())?;
        models.push(model);
    }
    if models.is_empty() {
        return Err("no latency model given".into());
    }
    Ok(models)
}

/// The plan as recorded in results: the combined plan, plus every group's own plan when
/// there are several.
pub(crate) fn plan_json(plan: &Plan, groups: &[GroupPlan]) -> serde_json::Value {
    let mut v = serde_json::to_value(plan).unwrap_or(serde_json::Value::Null);
    if groups.len() > 1 {
        v["groups"] = serde_json::to_value(groups).unwrap_or(serde_json::Value::Null);
    }
    v
}

/// (name, profile, first worker, workers) of each group, for per-group results.
pub(crate) fn group_ranges(groups: &[GroupPlan]) -> Vec<(String, String, u32, u32)> {
    groups
        .iter()
        .map(|g| {
            (
                g.name.clone(),
                g.plan.name.clone(),
                g.worker_base,
                g.plan.fleet.workers,
            )
        })
        .collect()
}

fn resolve_engine(
    choice: &EngineChoice,
    notices: &mut Vec<String>,
) -> Result<ResolvedEngine, FleetError> {
    Ok(match choice {
        EngineChoice::Auto => match uring::probe() {
            Ok(()) => ResolvedEngine::Uring,
            Err(e) => {
                notices.push(format!("io_uring is not usable here ({e}); using psync"));
                ResolvedEngine::Psync
            }
        },
        EngineChoice::Uring => {
            uring::probe()?;
            ResolvedEngine::Uring
        }
        EngineChoice::Psync => ResolvedEngine::Psync,
        EngineChoice::Null => ResolvedEngine::Null,
        EngineChoice::NullSim(m) => {
            if m.is_empty() {
                return Err(FleetError::Input(
                    "null-sim needs at least one latency model".into(),
                ));
            }
            ResolvedEngine::NullSim(m.clone())
        }
    })
}

/// Check the layout against the plan: block sizes and alignment against the device's
/// logical block size with direct I/O, and every stream's largest block against the
/// disk size actually available.
fn check_layout(plan: &Plan, layout: &[DiskLayout], direct: bool) -> Result<(), FleetError> {
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

/// Fill every disk that lacks a valid marker; returns false when interrupted.
fn prepare_disks(
    layout: &[DiskLayout],
    pattern: FillPattern,
    direct: bool,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
    notices: &mut Vec<String>,
) -> Result<bool, FleetError> {
    let mut todo = Vec::new();
    for d in layout {
        if !fill_marker_valid(d, pattern)? {
            todo.push(d.clone());
        }
    }
    if todo.len() < layout.len() {
        notices.push(format!(
            "prepare: {} of {} disks already carry a valid fill marker and were not refilled",
            layout.len() - todo.len(),
            layout.len()
        ));
    }
    if todo.is_empty() {
        return Ok(true);
    }
    let total: u64 = todo.iter().map(|d| d.size).sum();
    let progress = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(0));
    let todo = Arc::new(todo);
    let parallel = todo.len().min(4);
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..parallel)
            .map(|_| {
                let (todo, next, progress) = (todo.clone(), next.clone(), progress.clone());
                scope.spawn(move || -> Result<bool, TargetError> {
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst) as usize;
                        let Some(d) = todo.get(i) else {
                            return Ok(true);
                        };
                        if fill_disk(d, pattern, direct, stop, &progress)?
                            == FillOutcome::Interrupted
                        {
                            return Ok(false);
                        }
                    }
                })
            })
            .collect();
        while handles.iter().any(|h| !h.is_finished()) {
            observer.prepare_progress(progress.load(Ordering::Relaxed), total);
            std::thread::sleep(Duration::from_millis(200));
        }
        observer.prepare_progress(progress.load(Ordering::Relaxed), total);
        handles
            .into_iter()
            .map(|h| h.join().expect("fill thread does not panic"))
            .collect::<Vec<_>>()
    });
    let mut complete = true;
    for r in results {
        complete &= r?;
    }
    Ok(complete && !stop.load(Ordering::SeqCst))
}

/// Removes disk files when dropped (with `--cleanup`), whatever way the run ends.
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

/// Decides when a prepared fleet starts: locally at once; in an agent, at the instant
/// the controller names.
pub trait StartGate {
    /// Every thread is ready (targets open, disks filled). Return the start instant, or an
    /// error to abort before any measured I/O.
    /// `engine` is the engine this run resolved to (after `auto`); `notices` what the
    /// user should know so far (engine fallback, queue-depth cap, fills skipped).
    fn ready(&mut self, engine: &str, notices: &[String]) -> Result<Instant, FleetError>;
}

/// Start 20 ms from now (time for every thread to reach the starting line).
pub struct StartNow;

impl StartGate for StartNow {
    fn ready(&mut self, _engine: &str, _notices: &[String]) -> Result<Instant, FleetError> {
        Ok(Instant::now() + Duration::from_millis(20))
    }
}

/// Execute a run from start to end. `stop` set by the caller (Ctrl-C) ends it early;
/// what was measured until then is returned with `run.interrupted = true`.
pub fn run(
    cfg: &RunConfig,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<RunResult, FleetError> {
    run_gated(cfg, stop, observer, &mut StartNow)
}

/// `run`, with the start instant decided by `gate`.
pub fn run_gated(
    cfg: &RunConfig,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
    gate: &mut dyn StartGate,
) -> Result<RunResult, FleetError> {
    let mut notices = Vec::new();
    let groups = &cfg.groups;
    if groups.is_empty() {
        return Err(FleetError::Input(
            "a run needs at least one worker group".into(),
        ));
    }
    let mut plan = combine(groups);
    let offsets = stream_offsets(groups);
    let worker_base = groups[0].worker_base;
    let engine = resolve_engine(&cfg.engine, &mut notices)?;
    let qd_cap = if engine.is_async() {
        None
    } else {
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
            notices.push(format!(
                "psync keeps one I/O in flight per thread: qd {max_qd} runs as qd 1 (raise --threads for more outstanding I/O)"
            ));
        }
        Some(1)
    };
    let active_groups = groups.iter().filter(|g| g.plan.fleet.workers > 0).count();
    if active_groups > 1 && matches!(cfg.target, TargetSpec::Devices(_)) && engine.needs_target() {
        return Err(FleetError::Input(
            "--target: worker groups need a directory target (each group would split the same devices)".into(),
        ));
    }

    // Thread specs, before any target is touched. Lanes index the combined stream list.
    let mut threads = Vec::new();
    for (g, offset) in groups.iter().zip(&offsets) {
        let f = &g.plan.fleet;
        for w in g.worker_base..g.worker_base + f.workers {
            for d in 0..f.disks_per_worker {
                let mut lanes = build_lanes(&g.plan, d, qd_cap);
                if lanes.is_empty() {
                    continue; // no stream uses this disk
                }
                for l in &mut lanes {
                    l.streams.iter_mut().for_each(|s| s.0 += offset);
                }
                for t in 0..f.threads_per_disk {
                    threads.push(ThreadSpec {
                        id: threads.len() as u32,
                        worker: w,
                        disk: d,
                        thread: t,
                        threads_per_disk: f.threads_per_disk,
                        lanes: lanes.clone(),
                        seed: thread_seed(cfg.seed, w, d, t),
                        region_offset: 0,
                        disk_size: f.disk_size.0,
                    });
                }
            }
        }
    }

    // Targets: every check before any write, then create, then fill.
    let mut disks: Vec<Option<DiskLayout>> = vec![None; threads.len()];
    let mut cleanup = Cleanup(Vec::new());
    if engine.needs_target() {
        let mut layouts = Vec::new();
        for g in groups.iter().filter(|g| g.plan.fleet.workers > 0) {
            let f = &g.plan.fleet;
            let layout = plan_layout(
                &cfg.target,
                &LayoutRequest {
                    worker_base: g.worker_base,
                    workers: f.workers,
                    disks_per_worker: f.disks_per_worker,
                    disk_size: f.disk_size.0,
                    disk_size_from_cli: cfg.disk_size_from_cli,
                    direct: cfg.direct,
                    destroy_data: cfg.destroy_data,
                },
            )?;
            check_layout(&g.plan, &layout, cfg.direct)?;
            layouts.push((g, layout));
        }
        if cfg.cleanup {
            cleanup.0 = layouts
                .iter()
                .flat_map(|(_, l)| l.iter())
                .filter(|d| !d.is_device)
                .map(|d| d.path.clone())
                .collect();
        }
        for (g, layout) in &layouts {
            create_files(layout)?;
            // Surface open errors (O_DIRECT refused, permissions) as typed errors now.
            let writes = g.plan.streams.iter().any(|s| s.read_pct < 100.0);
            let needs_write = writes || g.plan.timing.prepare != Prepare::None;
            if let Some(first) = layout.first() {
                open_disk(first, cfg.direct, needs_write)?;
            }
        }
        if groups.len() == 1 {
            if let Some(min) = layouts
                .iter()
                .flat_map(|(_, l)| l.iter())
                .map(|d| d.size)
                .min()
            {
                plan.fleet.disk_size = iofleet_profile::Bytes(min);
            }
        }
        for (g, layout) in &layouts {
            let pattern = match g.plan.timing.prepare {
                Prepare::Random => Some(FillPattern::Random),
                Prepare::Zero => Some(FillPattern::Zero),
                Prepare::None => None,
            };
            if let Some(p) = pattern {
                observer.phase(Phase::Prepare, 0.0);
                if !prepare_disks(layout, p, cfg.direct, &stop, observer, &mut notices)? {
                    notices.push("interrupted while preparing disks: nothing was measured".into());
                    let info = run_info(cfg, &plan, &engine, SystemTime::now());
                    return Ok(empty_result(info, notices));
                }
            }
        }
        for (i, t) in threads.iter_mut().enumerate() {
            let d = layouts
                .iter()
                .flat_map(|(_, l)| l.iter())
                .find(|d| d.worker == t.worker && d.disk == t.disk)
                .expect("layout covers every disk");
            t.region_offset = d.region_offset;
            t.disk_size = d.size;
            disks[i] = Some(d.clone());
        }
    }
    let f = plan.fleet.clone();

    let timeline = Timeline::new(
        plan.timing.warmup,
        plan.timing.duration,
        plan.timing.interval,
    );
    let job = Arc::new(Job {
        plan: plan.clone(),
        timeline: timeline.clone(),
        threads,
        disks,
        engine: engine.clone(),
        direct: cfg.direct,
        stop: stop.clone(),
        started: AtomicU64::new(0),
        max_late_ns: AtomicU64::new(0),
    });
    let (tx, rx) = unbounded();
    let mut launcher = LocalLauncher::default();
    launcher
        .launch(job.clone(), tx.clone())
        .map_err(FleetError::Setup)?;
    drop(tx);

    let epoch = match gate.ready(engine.name(), &notices) {
        Ok(e) => e,
        Err(e) => {
            stop.store(true, Ordering::SeqCst);
            launcher.start(Instant::now());
            launcher.join();
            return Err(e);
        }
    };
    let started_wall = SystemTime::now() + epoch.saturating_duration_since(Instant::now());
    let late = launcher.start(epoch);
    let mut info = run_info(cfg, &plan, &engine, started_wall);
    info.start_skew_ms = late.as_secs_f64() * 1e3;
    observer.started(&info);

    let host = sys::hostname();
    let spec = CollectSpec {
        plan: &plan,
        timeline: &timeline,
        worker_base,
        groups: group_ranges(groups),
        workers: f.workers as usize,
        source_names: job
            .threads
            .iter()
            .map(|t| format!("worker {} disk {} thread {}", t.worker, t.disk, t.thread))
            .collect(),
        hosts: vec![host],
        worker_host: vec![0; f.workers as usize],
        source_host: vec![0; job.threads.len()],
        epoch,
        silence_grace: None,
    };
    let collected = collect(&rx, &spec, observer, &stop);
    launcher.join();
    let configured = job.threads.iter().map(|t| t.slots() as u64).sum();
    Ok(summarize(
        &spec,
        collected,
        info,
        configured,
        &HostFacts::default(),
        notices,
    ))
}

fn run_info(cfg: &RunConfig, plan: &Plan, engine: &ResolvedEngine, started: SystemTime) -> RunInfo {
    RunInfo {
        profile: plan.name.clone(),
        description: plan.description.clone(),
        engine: engine.name().into(),
        started_at: sys::rfc3339(
            started
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        ),
        duration_s: 0.0,
        warmup_s: plan.timing.warmup.as_secs_f64(),
        interval_s: plan.timing.interval.as_secs_f64(),
        interrupted: false,
        direct: cfg.direct,
        target: if engine.needs_target() {
            cfg.target_label.clone()
        } else {
            "none".into()
        },
        hostname: sys::hostname(),
        iofleet_version: env!("CARGO_PKG_VERSION").into(),
        start_skew_ms: 0.0,
        plan: plan_json(plan, &cfg.groups),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iofleet_profile::{Arrival, BlockSizes, Bytes, FleetShape, Locality, StreamPlan, Timing};

    fn plan_with(streams: Vec<StreamPlan>, disks: u32) -> Plan {
        Plan {
            name: "t".into(),
            description: String::new(),
            fleet: FleetShape {
                workers: 1,
                disks_per_worker: disks,
                disk_size: Bytes(1 << 20),
                threads_per_disk: 2,
                qd: 4,
            },
            timing: Timing {
                prepare: Prepare::None,
                warmup: Duration::ZERO,
                duration: Duration::from_secs(1),
                interval: Duration::from_secs(1),
                rate_iops: None,
                arrival: Arrival::Uniform,
            },
            streams,
        }
    }

    fn stream(name: &str, rate: Option<f64>, qd: Option<u32>, disks: Vec<u32>) -> StreamPlan {
        StreamPlan {
            name: name.into(),
            bs: BlockSizes::fixed(Bytes(4096)),
            read_pct: 50.0,
            random_pct: 100.0,
            align: Bytes(4096),
            weight: if rate.is_none() { Some(1) } else { None },
            rate_iops: rate,
            qd,
            locality: Locality::Uniform,
            working_set_pct: 100.0,
            disks,
        }
    }

    #[test]
    fn sim_latency_specs() {
        let m = parse_sim_latency("fixed:80us; samples:1,2ms,3;uniform:1:2").unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[0], LatencyModel::Fixed(80_000));
        assert_eq!(m[1], LatencyModel::Samples(vec![1, 2_000_000, 3]));
        assert!(parse_sim_latency("gauss:1").is_err());
        assert!(parse_sim_latency("fixed:x").is_err());
        assert!(parse_sim_latency("uniform:5:1").is_err());
        assert!(parse_sim_latency("").is_err());
    }

    #[test]
    fn lanes_split_closed_and_rated_streams() {
        let plan = plan_with(
            vec![
                stream("data", None, None, vec![0, 1]),
                stream("log", Some(300.0), Some(1), vec![1]),
            ],
            2,
        );
        let l0 = build_lanes(&plan, 0, None);
        assert_eq!(l0.len(), 1);
        assert_eq!(l0[0].qd, 4);
        assert!(l0[0].rate_per_thread.is_none());
        let l1 = build_lanes(&plan, 1, None);
        assert_eq!(l1.len(), 2);
        assert_eq!(l1[1].qd, 1);
        // 300 IOPS per worker over 1 disk × 2 threads.
        assert_eq!(l1[1].rate_per_thread, Some(150.0));
        let capped = build_lanes(&plan, 1, Some(1));
        assert!(capped.iter().all(|l| l.qd == 1));
    }
}
