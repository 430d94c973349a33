//! The run controller: checks and lays out targets, fills disks, builds every thread's
//! lanes, starts all threads at one instant, merges their interval samples in order and
//! computes the final `RunResult`.
//!
//! Intervals are merged with `+=` into per-worker samples; an interval is complete when
//! every thread has reported it (or has ended), and is then handed to the observer and
//! folded into the totals. Cluster figures are always read from merged histograms.
//! Nothing in here touches I/O in the hot path.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{unbounded, RecvTimeoutError};
use iofleet_engine::null::LatencyModel;
use iofleet_engine::target::{
    create_files, fill_disk, fill_marker_valid, logical_block_size, open_disk, plan_layout,
    DiskLayout, FillOutcome, FillPattern, LayoutRequest, TargetError, TargetSpec,
};
use iofleet_engine::{uring, EngineError};
use iofleet_profile::{Plan, Prepare};
use iofleet_stats::result::{
    CpuSummary, ErrorDetail, ErrorSummary, IntervalRow, MemorySummary, Outstanding, RunInfo,
    RunResult, RunSummary, StreamSummary, WorkerSummary, SCHEMA_VERSION,
};
use iofleet_stats::summary::median;
use iofleet_stats::{OpStats, OpSummary, Sample};

use crate::launcher::{Job, Launcher, LocalLauncher, ResolvedEngine};
use crate::observer::{IntervalSnapshot, Observer, Phase};
use crate::sys::{self, CpuSnap, CpuSpan};
use crate::thread::{thread_seed, LaneSpec, Msg, ThreadSpec, Timeline};

/// Error details kept for the whole run.
const MAX_ERROR_DETAILS: usize = 20;

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
    pub plan: Plan,
    pub engine: EngineChoice,
    pub target: TargetSpec,
    /// How the target is shown in results.
    pub target_label: String,
    pub direct: bool,
    pub destroy_data: bool,
    /// `--disk-size` was given on the command line (device targets honour it).
    pub disk_size_from_cli: bool,
    pub seed: u64,
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

/// Per-interval bookkeeping while the run is going.
struct Collector {
    workers: usize,
    streams: usize,
    reported_next: Vec<u32>,
    done: Vec<bool>,
    pending: BTreeMap<u32, Vec<Sample>>,
    errors: Vec<ErrorDetail>,
    error_count: u64,
    max_end_ns: u64,
    failures: Vec<String>,
    /// Per interval, the latest time a stopped thread ended in it.
    cuts: BTreeMap<u32, u64>,
}

impl Collector {
    fn complete(&self, k: u32) -> bool {
        self.reported_next
            .iter()
            .zip(&self.done)
            .all(|(&r, &d)| r > k || d)
    }
}

/// Execute a run from start to end. `stop` set by the caller (Ctrl-C) ends it early;
/// what was measured until then is returned with `run.interrupted = true`.
pub fn run(
    cfg: &RunConfig,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<RunResult, FleetError> {
    let mut notices = Vec::new();
    let mut plan = cfg.plan.clone();
    let engine = resolve_engine(&cfg.engine, &mut notices)?;
    let qd_cap = if engine.is_async() {
        None
    } else {
        let max_qd = plan
            .streams
            .iter()
            .filter_map(|s| s.qd)
            .chain([plan.fleet.qd])
            .max()
            .unwrap_or(1);
        if max_qd > 1 {
            notices.push(format!(
                "psync keeps one I/O in flight per thread: qd {max_qd} runs as qd 1 (raise --threads for more outstanding I/O)"
            ));
        }
        Some(1)
    };

    // Thread specs, before any target is touched.
    let f = plan.fleet.clone();
    let mut threads = Vec::new();
    for w in 0..f.workers {
        for d in 0..f.disks_per_worker {
            let lanes = build_lanes(&plan, d, qd_cap);
            if lanes.is_empty() {
                continue; // no stream uses this disk
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

    // Targets: every check before any write, then create, then fill.
    let mut disks: Vec<Option<DiskLayout>> = vec![None; threads.len()];
    if engine.needs_target() {
        let layout = plan_layout(
            &cfg.target,
            &LayoutRequest {
                workers: f.workers,
                disks_per_worker: f.disks_per_worker,
                disk_size: f.disk_size.0,
                disk_size_from_cli: cfg.disk_size_from_cli,
                direct: cfg.direct,
                destroy_data: cfg.destroy_data,
            },
        )?;
        check_layout(&plan, &layout, cfg.direct)?;
        create_files(&layout)?;
        // Surface open errors (O_DIRECT refused, permissions) as typed errors now.
        let writes = plan.streams.iter().any(|s| s.read_pct < 100.0);
        let needs_write = writes || plan.timing.prepare != Prepare::None;
        if let Some(first) = layout.first() {
            open_disk(first, cfg.direct, needs_write)?;
        }
        if let Some(min) = layout.iter().map(|d| d.size).min() {
            plan.fleet.disk_size = iofleet_profile::Bytes(min);
        }
        let pattern = match plan.timing.prepare {
            Prepare::Random => Some(FillPattern::Random),
            Prepare::Zero => Some(FillPattern::Zero),
            Prepare::None => None,
        };
        if let Some(p) = pattern {
            observer.phase(Phase::Prepare, 0.0);
            if !prepare_disks(&layout, p, cfg.direct, &stop, observer, &mut notices)? {
                notices.push("interrupted while preparing disks: nothing was measured".into());
                return Ok(empty_result(cfg, &plan, &engine, notices));
            }
        }
        for (i, t) in threads.iter_mut().enumerate() {
            let d = layout
                .iter()
                .find(|d| d.worker == t.worker && d.disk == t.disk)
                .expect("layout covers every disk");
            t.region_offset = d.region_offset;
            t.disk_size = d.size;
            disks[i] = Some(d.clone());
        }
    }

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
    });
    let (tx, rx) = unbounded();
    let mut launcher = LocalLauncher::default();
    launcher
        .launch(job.clone(), tx.clone())
        .map_err(FleetError::Setup)?;
    drop(tx);

    let n_threads = job.threads.len();
    let mut col = Collector {
        workers: f.workers as usize,
        streams: plan.streams.len(),
        reported_next: vec![0; n_threads],
        done: vec![false; n_threads],
        pending: BTreeMap::new(),
        errors: Vec::new(),
        error_count: 0,
        max_end_ns: 0,
        failures: Vec::new(),
        cuts: BTreeMap::new(),
    };
    let epoch = Instant::now() + Duration::from_millis(20);
    let started_wall = SystemTime::now() + Duration::from_millis(20);
    launcher.start(epoch);
    observer.started(&run_info(cfg, &plan, &engine, started_wall, 0.0, false));
    let wall = |i: Instant| i.saturating_duration_since(epoch).as_secs_f64();
    let warmup_s = plan.timing.warmup.as_secs_f64();
    let measure_s = plan.timing.duration.as_secs_f64();
    let mut cpu_start = if timeline.warmup_intervals == 0 {
        observer.phase(Phase::Measure, measure_s);
        Some(CpuSnap::now(0.0))
    } else {
        observer.phase(Phase::Warmup, warmup_s);
        None
    };
    let measure_start = epoch + Duration::from_nanos(timeline.measure_start_ns());
    let run_end = epoch + Duration::from_nanos(timeline.end_ns());
    let mut cpu_end = None;

    let n_intervals = timeline.intervals();
    let mut next_emit = 0u32;
    let mut rows = Vec::new();
    let mut worker_totals = vec![Sample::new(col.streams); col.workers];
    let mut measured_ns = 0u64;
    let mut interval_iops = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Interval {
                thread,
                worker,
                index,
                sample,
                errors,
                stopped_at,
            }) => {
                if let Some(t) = stopped_at {
                    let cut = col.cuts.entry(index).or_insert(0);
                    *cut = (*cut).max(t);
                }
                let per_worker = col
                    .pending
                    .entry(index)
                    .or_insert_with(|| vec![Sample::new(col.streams); col.workers]);
                per_worker[worker as usize] += &sample;
                col.reported_next[thread as usize] = index + 1;
                col.error_count += sample.errors();
                for e in errors {
                    if col.errors.len() < MAX_ERROR_DETAILS {
                        col.errors.push(e);
                    }
                }
            }
            Ok(Msg::Done {
                thread,
                end_ns,
                error,
            }) => {
                col.done[thread as usize] = true;
                col.max_end_ns = col.max_end_ns.max(end_ns);
                if let Some(e) = error {
                    let t = &job.threads[thread as usize];
                    col.failures.push(format!(
                        "worker {} disk {} thread {}: {e}",
                        t.worker, t.disk, t.thread
                    ));
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                col.done.iter_mut().for_each(|d| *d = true);
            }
        }
        let now = Instant::now();
        if cpu_start.is_none() && now >= measure_start {
            cpu_start = Some(CpuSnap::now(wall(now)));
            observer.phase(Phase::Measure, measure_s);
        }
        if cpu_end.is_none() && now >= run_end {
            cpu_end = Some(CpuSnap::now(wall(now)));
        }
        while next_emit < n_intervals && col.complete(next_emit) {
            let k = next_emit;
            next_emit += 1;
            let Some(per_worker) = col.pending.remove(&k) else {
                continue; // every thread had ended before this interval
            };
            let start = timeline.boundaries[k as usize];
            let mut end = timeline.boundaries[k as usize + 1];
            if let Some(&cut) = col.cuts.get(&k) {
                if cut > start && cut < end {
                    end = cut; // the interval a stop cut short
                }
            }
            let dur_ns = end - start;
            let warmup = k < timeline.warmup_intervals;
            let mut fleet = Sample::new(col.streams);
            per_worker.iter().for_each(|w| fleet += w);
            let row = interval_row(k, start, dur_ns, warmup, &fleet);
            if !warmup {
                for (tot, w) in worker_totals.iter_mut().zip(&per_worker) {
                    *tot += w;
                }
                measured_ns += dur_ns;
                let nominal = plan.timing.interval.as_nanos() as u64;
                if dur_ns * 2 >= nominal {
                    interval_iops.push(row.iops);
                }
            }
            observer.interval(&IntervalSnapshot {
                row: &row,
                workers: &per_worker,
            });
            rows.push(row);
        }
        if col.done.iter().all(|&d| d) && (next_emit >= n_intervals || col.pending.is_empty()) {
            break;
        }
    }
    launcher.join();
    // CPU is sampled at the planned end, or when the threads stopped, whichever first.
    let cpu_end = cpu_end.unwrap_or_else(|| CpuSnap::now(wall(Instant::now())));
    let cpu = cpu_start
        .map(|s| CpuSpan::between(&s, &cpu_end))
        .unwrap_or_default();
    observer.phase(Phase::Done, 0.0);

    let interrupted = col.max_end_ns < timeline.end_ns();
    let elapsed_s = measured_ns as f64 / 1e9;
    let mut fleet = Sample::new(col.streams);
    worker_totals.iter().for_each(|w| fleet += w);
    let all = fleet.all();
    let streams = plan
        .streams
        .iter()
        .zip(&fleet.streams)
        .map(|(p, s)| StreamSummary {
            name: p.name.clone(),
            all: OpSummary::from_ops(&s.all(), elapsed_s),
            read: OpSummary::from_ops(&s.read, elapsed_s),
            write: OpSummary::from_ops(&s.write, elapsed_s),
        })
        .collect();
    let host = sys::hostname();
    let workers = worker_totals
        .iter()
        .enumerate()
        .map(|(w, s)| WorkerSummary {
            worker: w as u32,
            host: host.clone(),
            all: OpSummary::from_ops(&s.all(), elapsed_s),
            read: OpSummary::from_ops(&s.read(), elapsed_s),
            write: OpSummary::from_ops(&s.write(), elapsed_s),
        })
        .collect();
    let ios = all.ios as f64;
    let per_io = |s: f64| if ios > 0.0 { s * 1e6 / ios } else { 0.0 };
    if !col.failures.is_empty() {
        notices.push(format!(
            "{} I/O thread(s) failed; see summary.errors.failed_threads",
            col.failures.len()
        ));
    }
    let mut errors = col.errors;
    errors.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let summary = RunSummary {
        all: OpSummary::from_ops(&all, elapsed_s),
        read: OpSummary::from_ops(&fleet.read(), elapsed_s),
        write: OpSummary::from_ops(&fleet.write(), elapsed_s),
        iops_median_interval: median(&interval_iops),
        outstanding_io: Outstanding {
            configured: plan_outstanding(&job),
            measured_mean: if measured_ns > 0 {
                all.latency_sum_ns as f64 / measured_ns as f64
            } else {
                0.0
            },
        },
        cpu: CpuSummary {
            usr_pct: cpu.usr_pct,
            sys_pct: cpu.sys_pct,
            host_pct: cpu.host_pct,
            us_per_io: per_io(cpu.proc_s),
            host_us_per_io: per_io(cpu.host_busy_s),
        },
        memory: MemorySummary {
            rss_peak_mib: sys::rss_peak_mib(),
            host_used_pct: sys::host_mem_used_pct(),
        },
        errors: ErrorSummary {
            count: col.error_count,
            first: errors,
            failed_threads: col.failures,
        },
    };
    Ok(RunResult {
        schema_version: SCHEMA_VERSION,
        run: run_info(cfg, &plan, &engine, started_wall, elapsed_s, interrupted),
        summary,
        streams,
        intervals: rows,
        workers,
        notices,
    })
}

/// Configured outstanding I/O of the threads actually started (lanes after any cap).
fn plan_outstanding(job: &Job) -> u64 {
    job.threads.iter().map(|t| t.slots() as u64).sum()
}

fn interval_row(k: u32, start_ns: u64, dur_ns: u64, warmup: bool, s: &Sample) -> IntervalRow {
    let secs = dur_ns as f64 / 1e9;
    let (r, w): (OpStats, OpStats) = (s.read(), s.write());
    let mut a = r.clone();
    a += &w;
    let rate = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
    let us = |ns: u64| ns as f64 / 1000.0;
    IntervalRow {
        index: k,
        t_s: start_ns as f64 / 1e9,
        duration_s: secs,
        warmup,
        ios: a.ios,
        iops: rate(a.ios),
        mbps: rate(a.bytes) / 1e6,
        read_iops: rate(r.ios),
        write_iops: rate(w.ios),
        p50_us: us(a.hist.quantile_ns(0.5)),
        p99_us: us(a.hist.quantile_ns(0.99)),
        read_p50_us: us(r.hist.quantile_ns(0.5)),
        read_p99_us: us(r.hist.quantile_ns(0.99)),
        write_p50_us: us(w.hist.quantile_ns(0.5)),
        write_p99_us: us(w.hist.quantile_ns(0.99)),
        errors: a.errors,
    }
}

fn run_info(
    cfg: &RunConfig,
    plan: &Plan,
    engine: &ResolvedEngine,
    started: SystemTime,
    duration_s: f64,
    interrupted: bool,
) -> RunInfo {
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
        duration_s,
        warmup_s: plan.timing.warmup.as_secs_f64(),
        interval_s: plan.timing.interval.as_secs_f64(),
        interrupted,
        direct: cfg.direct,
        target: if engine.needs_target() {
            cfg.target_label.clone()
        } else {
            "none".into()
        },
        hostname: sys::hostname(),
        iofleet_version: env!("CARGO_PKG_VERSION").into(),
        plan: serde_json::to_value(plan).unwrap_or(serde_json::Value::Null),
    }
}

fn empty_result(
    cfg: &RunConfig,
    plan: &Plan,
    engine: &ResolvedEngine,
    notices: Vec<String>,
) -> RunResult {
    let empty = OpSummary::from_ops(&OpStats::default(), 0.0);
    RunResult {
        schema_version: SCHEMA_VERSION,
        run: run_info(cfg, plan, engine, SystemTime::now(), 0.0, true),
        summary: RunSummary {
            all: empty.clone(),
            read: empty.clone(),
            write: empty,
            iops_median_interval: 0.0,
            outstanding_io: Outstanding::default(),
            cpu: CpuSummary::default(),
            memory: MemorySummary {
                rss_peak_mib: sys::rss_peak_mib(),
                host_used_pct: sys::host_mem_used_pct(),
            },
            errors: ErrorSummary::default(),
        },
        streams: Vec::new(),
        intervals: Vec::new(),
        workers: Vec::new(),
        notices,
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
