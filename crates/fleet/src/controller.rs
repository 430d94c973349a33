//! The run controller: the one path every run takes, whatever its launcher. It asks
//! the launcher to plan and then to materialize that plan, which it consumes (see
//! `launcher` for the flow), names one start instant (through a `StartGate`), releases
//! the sources, folds their interval samples with the collector, and computes the
//! `RunResult` once. A local run, a fleet of agents, a Kubernetes fleet and an agent's
//! own share all go through `run`, generic over the `Launcher`; only the launcher
//! differs.
//!
//! Intervals are merged with `+=` into per-worker (and per-disk) samples; an interval is
//! complete when every source has reported it (or has ended or been given up on), and is
//! then handed to the observer and folded into the totals. Cluster figures are always read from
//! merged histograms. Nothing in here touches I/O.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use iofleet_profile::{combine, GroupPlan, Plan};
use iofleet_stats::result::{RunInfo, RunResult};

use crate::collect::{collect, empty_result, summarize, CollectSpec, GroupRange};
use crate::error::FleetError;
use crate::launcher::{Launcher, Prepared};
use crate::observer::Observer;
use crate::settings::RunSettings;
use crate::sys;

/// Each group's worker range and scheduled rate, for per-group results and stragglers.
pub(crate) fn group_ranges(groups: &[GroupPlan]) -> Vec<GroupRange> {
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

/// Execute a run from start to end. `stop` set by the caller (Ctrl-C) ends it early;
/// what was measured until then is returned with `run.interrupted = true`.
pub fn run<L: Launcher>(
    groups: &[GroupPlan],
    settings: &RunSettings,
    launcher: &mut L,
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
    let plan = launcher.plan(groups, settings)?;
    notices.extend(plan.notices.iter().cloned());
    let preparing = Instant::now();
    let Some(prep) = launcher.materialize(plan, &stop, observer, &mut notices)? else {
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
    let prepared_in = preparing.elapsed();
    let (tx, rx) = std::sync::mpsc::channel();
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
    // This machine's usage is counted from here, just before the start instant: what
    // preparing cost is not the run's. Not at the instant itself: then every I/O thread
    // of the fleet wakes, and on a machine of many agents the reading would hold some
    // of them up.
    let mut probe = prep.probe.clone();
    if let Some(p) = probe.as_mut() {
        p.sample();
    }
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
    info.prepare_s = Some(prepared_in.as_secs_f64());
    info.drop_caches = settings.drop_caches.as_ref().map(|d| d.to_string());
    info.start_unix_ns = unix_ns(started_wall);
    observer.started(&info);

    let timeline = crate::source::Timeline::new(
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
        observers: prep.observers.clone(),
        source_host: prep.sources.iter().map(|s| s.1).collect(),
        epoch,
        silence_grace: prep.silence_grace,
        probe,
        simulated_time: prep.simulated_time,
        below: prep.below.clone(),
    };
    let collected = collect(&rx, &spec, observer, &stop, &mut |s| launcher.give_up(s));
    let mut finished = launcher.finish();
    let (kubernetes, vms) = (finished.kubernetes.take(), finished.vms.take());
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
    let mut result = summarize(
        &spec,
        collected,
        info,
        prep.configured_outstanding,
        &finished.start_late_ms,
        notices,
    );
    if let Some((run, pods)) = kubernetes {
        result.run.kubernetes = Some(run);
        for h in &mut result.hosts {
            h.kubernetes = pods.iter().find(|p| p.pod == h.host).cloned();
        }
    }
    result.run.vms = vms;
    Ok(result)
}

/// A wall-clock instant in ns since the Unix epoch (None before it).
fn unix_ns(t: SystemTime) -> Option<u64> {
    t.duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_nanos() as u64)
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
        prepare_s: None,
        kubernetes: None,
        vms: None,
        drop_caches: None,
        start_unix_ns: None,
    }
}

#[cfg(test)]
mod tests {
    //! The control plane without I/O: a scripted launcher whose sources send what a
    //! test says, so the start gate and the silence rule are exercised exactly.

    use std::sync::Mutex;
    use std::time::Duration;

    use iofleet_stats::Sample;
    use std::sync::mpsc::Sender;

    use super::*;
    use crate::fixtures::{fleet, plan, stream};
    use crate::launcher::{Finished, HostVerified};
    use crate::observer::Silent;
    use crate::plan::{Hosts, LaunchPlan};
    use crate::precondition::Preconditioned;
    use crate::source::Msg;

    /// Two hosts of one worker each, one source per host. A source that is not
    /// `silent` reports `ios` reads of 100 µs in its one interval, then ends.
    struct Scripted {
        silent: [bool; 2],
        ios: u64,
        grace: Option<Duration>,
        events: Arc<Mutex<Vec<String>>>,
        stop: Option<Arc<AtomicBool>>,
        /// Kept open so a silent source is silent, not ended.
        tx: Option<Sender<Msg>>,
    }

    impl Scripted {
        fn new(silent: [bool; 2], grace: Option<Duration>) -> Self {
            Scripted {
                silent,
                ios: 1000,
                grace,
                events: Default::default(),
                stop: None,
                tx: None,
            }
        }
        fn log(&self, e: impl Into<String>) {
            self.events.lock().unwrap().push(e.into());
        }
        fn events(&self) -> Vec<String> {
            self.events.lock().unwrap().clone()
        }
    }

    impl Launcher for Scripted {
        type Where = Hosts;

        fn plan(
            &self,
            groups: &[GroupPlan],
            settings: &RunSettings,
        ) -> Result<LaunchPlan<Hosts>, FleetError> {
            self.log("plan");
            Ok(LaunchPlan {
                groups: groups.to_vec(),
                engine: "scripted".into(),
                direct: false,
                placement: Hosts(Vec::new()),
                notices: vec!["planned".into()],
                settings: settings.clone(),
            })
        }

        fn materialize(
            &mut self,
            plan: LaunchPlan<Hosts>,
            stop: &Arc<AtomicBool>,
            _observer: &mut dyn Observer,
            _notices: &mut Vec<String>,
        ) -> Result<Option<Prepared>, FleetError> {
            self.log("materialize");
            self.stop = Some(stop.clone());
            Ok(Some(Prepared {
                groups: plan.groups,
                worker_base: 0,
                hosts: vec!["a".into(), "b".into()],
                worker_host: vec![0, 1],
                observers: Vec::new(),
                sources: vec![("host a".into(), 0), ("host b".into(), 1)],
                engine: "scripted".into(),
                target_label: "none".into(),
                direct: false,
                configured_outstanding: 2,
                start_margin: Duration::from_millis(5),
                silence_grace: self.grace,
                probe: None,
                simulated_time: false,
                below: Default::default(),
            }))
        }

        fn start(&mut self, _epoch: Instant, tx: Sender<Msg>) -> Option<Duration> {
            let stopped = self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst));
            self.log(format!("start stop={stopped}"));
            if stopped {
                return None;
            }
            for source in 0..2u32 {
                if self.silent[source as usize] {
                    continue;
                }
                let mut s = Sample::new(1);
                (0..self.ios).for_each(|_| s.streams[0].read.record(100_000, 4096));
                let sent = tx.send(Msg::Interval {
                    source,
                    index: 0,
                    samples: vec![(source, 0, s)],
                    errors: Vec::new(),
                    disks: Vec::new(),
                    stopped_at: None,
                    usage: None,
                    generator: None,
                });
                let done = tx.send(Msg::Done {
                    source,
                    end_ns: 1_000_000_000,
                    error: None,
                    errors: Vec::new(),
                    disks: Vec::new(),
                    lost: false,
                });
                assert!(sent.is_ok() && done.is_ok());
            }
            self.tx = Some(tx);
            Some(Duration::ZERO)
        }

        fn verify(
            &mut self,
            _: LaunchPlan<Hosts>,
            _: usize,
        ) -> Result<Vec<HostVerified>, FleetError> {
            Err(FleetError::Setup("not scripted".into()))
        }

        fn precondition(
            &mut self,
            _: LaunchPlan<Hosts>,
            _: &Arc<AtomicBool>,
            _: &mut dyn Observer,
        ) -> Result<Option<Preconditioned>, FleetError> {
            Err(FleetError::Setup("not scripted".into()))
        }

        fn give_up(&mut self, source: usize) {
            self.log(format!("give_up {source}"));
        }

        fn finish(&mut self) -> Finished {
            self.log("finish");
            self.tx = None;
            Finished::default()
        }
    }

    fn groups() -> Vec<GroupPlan> {
        GroupPlan::single(plan(fleet(2, 1, 1, 1), vec![stream("s", 100.0)]), 0)
    }

    struct Refuse;

    impl StartGate for Refuse {
        fn ready(&mut self, p: &Prepared, notices: &[String]) -> Result<Instant, FleetError> {
            assert_eq!(p.sources.len(), 2);
            assert_eq!(notices, ["planned"], "the plan's notices reach the gate");
            Err(FleetError::Setup("host b: its clock is 3 s off".into()))
        }
    }

    #[test]
    fn a_start_gate_that_refuses_stops_every_source_before_any_io() {
        let mut l = Scripted::new([false, false], None);
        let stop = Arc::new(AtomicBool::new(false));
        let err = run(
            &groups(),
            &RunSettings::default(),
            &mut l,
            &mut Refuse,
            stop.clone(),
            &mut Silent,
        )
        .expect_err("a refused start is an error");
        assert_eq!(err.to_string(), "host b: its clock is 3 s off");
        assert!(stop.load(Ordering::SeqCst), "the sources are told to stop");
        // Started only to be torn down (with stop already set), then finished.
        assert_eq!(
            l.events(),
            ["plan", "materialize", "start stop=true", "finish"]
        );
    }

    #[test]
    fn a_silent_source_is_given_up_once_and_its_host_lost() {
        let mut l = Scripted::new([false, true], Some(Duration::from_millis(300)));
        let stop = Arc::new(AtomicBool::new(false));
        let r = run(
            &groups(),
            &RunSettings::default(),
            &mut l,
            &mut StartNow,
            stop,
            &mut Silent,
        )
        .unwrap();
        let events = l.events();
        assert_eq!(
            events.iter().filter(|e| e.starts_with("give_up")).count(),
            1,
            "{events:?}"
        );
        assert_eq!(
            events,
            [
                "plan",
                "materialize",
                "start stop=false",
                "give_up 1",
                "finish"
            ]
        );
        assert!(r.hosts[0].lost_at_s.is_none(), "host a reported: {r:?}");
        assert!(r.hosts[1].lost_at_s.is_some(), "host b never spoke");
        assert_eq!(r.summary.all.ios, 1000, "host a's I/Os are the run's");
        assert_eq!(r.hosts[0].all.ios, 1000);
        assert_eq!(r.hosts[1].all.ios, 0);
    }

    #[test]
    fn a_run_of_sources_that_all_report_gives_up_on_none() {
        let mut l = Scripted::new([false, false], Some(Duration::from_millis(300)));
        let stop = Arc::new(AtomicBool::new(false));
        let r = run(
            &groups(),
            &RunSettings::default(),
            &mut l,
            &mut StartNow,
            stop,
            &mut Silent,
        )
        .unwrap();
        assert_eq!(
            l.events(),
            ["plan", "materialize", "start stop=false", "finish"]
        );
        assert!(r.hosts.iter().all(|h| h.lost_at_s.is_none()));
        assert_eq!(r.summary.all.ios, 2000);
    }
}
