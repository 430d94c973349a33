//! The run controller: the one path every run takes, whatever its launcher. It asks
//! the launcher to prepare, names one start instant (through a `StartGate`), releases
//! the sources, folds their interval samples with the collector, and computes the
//! `RunResult` once. A local run, a fleet of agents and an agent's own share all go
//! through `run`; only the `Launcher` differs.
//!
//! Intervals are merged with `+=` into per-worker (and per-disk) samples; an interval is
//! complete when every source has reported it (or has ended or been given up on), and is
//! then handed to the observer and folded into the totals. Cluster figures are always read from
//! merged histograms. Nothing in here touches I/O.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::unbounded;
use iofleet_engine::target::{TargetError, TargetSpec};
use iofleet_engine::EngineError;
use iofleet_profile::{combine, GroupPlan, Plan};
use iofleet_stats::result::{RunInfo, RunResult};

use crate::collect::{collect, empty_result, summarize, CollectSpec, GroupRange};
use crate::inproc::ThreadLauncher;
use crate::launcher::{Launcher, Prepared};
use crate::observer::Observer;
use crate::settings::RunSettings;
use crate::sys;

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

/// Each group's worker range and scheduled rate, for per-group results and stragglers.
fn group_ranges(groups: &[GroupPlan]) -> Vec<GroupRange> {
    groups
        .iter()
        .map(|g| GroupRange {
            name: g.name.clone(),
            profile: g.plan.name.clone(),
            first: g.worker_base,
            workers: g.plan.fleet.workers,
            rate_per_worker: scheduled_rate(&g.plan),
        })
        .collect()
}

/// IOPS a worker of `plan` is scheduled to issue, when every stream is rate-limited:
/// the profile's rate shared by its weighted streams plus each rated stream's own.
fn scheduled_rate(plan: &Plan) -> Option<f64> {
    let weighted = plan.streams.iter().any(|s| s.rate_iops.is_none());
    let shared = match (weighted, plan.timing.rate_iops) {
        (true, None) => return None,
        (true, Some(r)) => r,
        (false, _) => 0.0,
    };
    Some(shared + plan.streams.iter().filter_map(|s| s.rate_iops).sum::<f64>())
}

/// Decides when a prepared fleet starts: a controller picks an instant far enough
/// ahead for every source; an agent asks its controller.
pub trait StartGate {
    /// Every worker is ready. Return the start instant, or an error to abort before
    /// any measured I/O. `notices` is what the user should know so far.
    fn ready(&mut self, prepared: &Prepared, notices: &[String]) -> Result<Instant, FleetError>;
}

/// Start as soon as every source can have heard of it (the launcher's margin).
pub struct StartNow;

impl StartGate for StartNow {
    fn ready(&mut self, prepared: &Prepared, _notices: &[String]) -> Result<Instant, FleetError> {
        Ok(Instant::now() + prepared.start_margin)
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
    let mut launcher = ThreadLauncher::new(target, target_label, settings.clone());
    run(groups, &mut launcher, &mut StartNow, stop, observer)
}

/// Execute a run from start to end. `stop` set by the caller (Ctrl-C) ends it early;
/// what was measured until then is returned with `run.interrupted = true`.
pub fn run(
    groups: &[GroupPlan],
    launcher: &mut dyn Launcher,
    gate: &mut dyn StartGate,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<RunResult, FleetError> {
    if groups.is_empty() {
        return Err(FleetError::Input(
            "a run needs at least one worker group".into(),
        ));
    }
    let mut notices = Vec::new();
    let Some(prep) = launcher.prepare(groups, &stop, observer, &mut notices)? else {
        notices.push("interrupted while preparing: nothing was measured".into());
        let info = run_info(
            &combine(groups),
            groups,
            "none",
            "none",
            true,
            SystemTime::now(),
        );
        return Ok(empty_result(info, notices));
    };
    let plan = combine(&prep.groups);
    let (tx, rx) = unbounded();
    let epoch = match gate.ready(&prep, &notices) {
        Ok(e) => e,
        Err(e) => {
            stop.store(true, Ordering::SeqCst);
            launcher.start(Instant::now(), tx);
            launcher.finish();
            return Err(e);
        }
    };
    let started_wall = SystemTime::now() + epoch.saturating_duration_since(Instant::now());
    let late = launcher.start(epoch, tx);
    let mut info = run_info(
        &plan,
        &prep.groups,
        &prep.engine,
        &prep.target_label,
        prep.direct,
        started_wall,
    );
    info.start_skew_ms = late.map(|l| l.as_secs_f64() * 1e3);
    observer.started(&info);

    let timeline = crate::lanes::Timeline::new(
        plan.timing.warmup,
        plan.timing.duration,
        plan.timing.interval,
    );
    let spec = CollectSpec {
        plan: &plan,
        timeline: &timeline,
        worker_base: prep.worker_base,
        groups: group_ranges(&prep.groups),
        workers: prep.worker_host.len(),
        source_names: prep.sources.iter().map(|s| s.0.clone()).collect(),
        hosts: prep.hosts.clone(),
        worker_host: prep.worker_host.clone(),
        source_host: prep.sources.iter().map(|s| s.1).collect(),
        epoch,
        silence_grace: prep.silence_grace,
        probe: prep.probe.clone(),
    };
    let collected = collect(&rx, &spec, observer, &stop, &mut |s| launcher.give_up(s));
    let finished = launcher.finish();
    for n in finished.notices {
        if !notices.contains(&n) {
            notices.push(n);
        }
    }
    // Across hosts, the skew is between the hosts' own start reports.
    let known: Vec<f64> = finished.start_late_ms.iter().flatten().copied().collect();
    if let (Some(hi), Some(lo)) = (
        known.iter().copied().reduce(f64::max),
        known.iter().copied().reduce(f64::min),
    ) {
        info.start_skew_ms = Some(hi - lo);
    }
    Ok(summarize(
        &spec,
        collected,
        info,
        prep.configured_outstanding,
        &finished.start_late_ms,
        notices,
    ))
}

fn run_info(
    plan: &Plan,
    groups: &[GroupPlan],
    engine: &str,
    target: &str,
    direct: bool,
    started: SystemTime,
) -> RunInfo {
    RunInfo {
        profile: plan.name.clone(),
        description: plan.description.clone(),
        engine: engine.into(),
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
        direct,
        target: target.into(),
        hostname: sys::hostname(),
        iofleet_version: env!("CARGO_PKG_VERSION").into(),
        start_skew_ms: None,
        plan: iofleet_profile::RecordedPlan::new(plan, groups),
    }
}
