//! The find-max search behind `iofleet find-max` and `plan`'s search phase: the highest
//! sustained open-loop rate at which every latency objective holds. Each step is one run
//! of the session (`Session::step`), measured and saved as `iofleet run` does it, with
//! the profile's offered rate set by `session::with_rate`; the decisions are `search`'s,
//! the objectives `iofleet_stats::slo`'s.
//!
//! Rates here are totals over the fleet (IOPS), unlike `--rate`, which is per worker.
//!
//! `--over hosts` searches the fleet's size instead (`search::find_max_count`): each
//! step runs the first K hosts of the command's one fleet (`run::fleet_size`), each
//! with its share of the profile's load, and the answer is the most clients at which
//! every objective holds.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use iofleet_profile::{format_duration, parse_duration, GroupPlan};
use iofleet_stats::result::RunResult;
use iofleet_stats::slo::{self, Slo};

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::campaign::{self, Campaign, Fingerprint};
use crate::run::fleet_size;
use crate::run::resolve::{closed_loop, ctrl_c_flag, exit_code, offered_rate, resolve, with_rate};
use crate::run::search::{self, End, Measured, Outcome, Params};
use crate::run::session::Session;
use crate::run::stepping::check_step_args;
use crate::web::step::{Step, StepKind};

/// A search objective, latency or host CPU (`iofleet_stats::slo`'s grammar).
fn search_objective(s: &str) -> Result<Slo, String> {
    s.parse().map_err(|e: slo::ObjectiveError| e.to_string())
}

fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

/// `2%` or `2` (percent), above 0 and at most 50.
fn tolerance(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage (e.g. 2%)"))?;
    if !(v > 0.0 && v <= 50.0) {
        return Err(format!("'{s}' must be above 0% and at most 50%"));
    }
    Ok(v / 100.0)
}

/// What a search varies.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Over {
    /// The offered open-loop rate (total IOPS).
    #[default]
    Rate,
    /// The number of clients: the first K hosts of the fleet, each with its share of
    /// the profile's load.
    Hosts,
}

/// The search's own flags, shared by `find-max` and `plan`.
#[derive(Args, Debug, Clone)]
pub struct SearchArgs {
    /// What the search varies: `rate`, the offered open-loop rate, or `hosts`, the
    /// number of clients (the first K hosts of the fleet, `--listen`/`--expect` or
    /// `--hosts`, each running its share of the profile's load as given).
    #[arg(long, value_enum, default_value = "rate", value_name = "rate|hosts")]
    pub over: Over,
    /// An objective every step must meet (repeatable; all must hold): latency,
    /// `[all.|read.|write.]STAT<=LATENCY` with STAT one of p50, p90, p95, p99, p99.9,
    /// mean, max and a unit ns, us, ms or s (`p99<=3ms`, `read.p95<=2ms`), or host CPU,
    /// `[workers.|observers.]cpu<=PERCENT%` (`cpu<=40%`: the workers' hosts' busy CPU,
    /// percent of all cores).
    #[arg(long = "slo", value_name = "OBJECTIVE", value_parser = search_objective)]
    pub slo: Vec<Slo>,
    /// The first rate tried, total IOPS over the fleet [default: the profile's
    /// closed-loop maximum, measured first].
    #[arg(long, value_name = "IOPS", allow_negative_numbers = true)]
    pub start: Option<f64>,
    /// Bisection stops when the highest passing and lowest failing rate are within this
    /// share of the failing one.
    #[arg(long, default_value = "2%", value_parser = tolerance, value_name = "PERCENT")]
    pub tolerance: f64,
    /// The shortest measured duration a step may have (the profile's or --duration's).
    #[arg(long, default_value = "10s", value_parser = duration, value_name = "DURATION")]
    pub min_step: Duration,
    /// Also fail steps past the knee: mean latency above twice that of a light step at
    /// 10% of the start rate.
    #[arg(long)]
    pub stop_at_knee: bool,
    /// At most this many steps in all (repeats included).
    #[arg(long, default_value_t = 40, value_name = "N")]
    pub max_steps: usize,
}

/// One measured step of a search, as printed and stored.
pub(crate) struct StepRecord {
    pub step: usize,
    pub point: search::Point,
    pub result: RunResult,
}

/// What a search found.
pub(crate) struct Report {
    pub name: String,
    /// The campaign's id (`--resume=ID`).
    pub campaign: String,
    pub objectives: Vec<Slo>,
    /// The closed-loop maximum measured first (absent with --start).
    pub closed: Option<RunResult>,
    pub steps: Vec<StepRecord>,
    /// Index into `steps` of the found point.
    pub found: Option<usize>,
    pub end: End,
    pub code: i32,
    /// With `--over hosts`: the fleet's hosts (the most a step may run).
    pub hosts: Option<u32>,
}

impl Report {
    pub fn found(&self) -> Option<&StepRecord> {
        self.found.map(|i| &self.steps[i])
    }
    /// With `--over hosts`: the most hosts at which every objective held.
    pub fn max_hosts(&self) -> Option<u32> {
        self.hosts.and(self.found().map(|s| s.point.rate as u32))
    }
    /// With `--over hosts`: the knee of the measured curve (`search::knee`), in hosts.
    pub fn knee_hosts(&self) -> Option<u32> {
        self.hosts?;
        let mut curve: Vec<(u32, Option<f64>)> = self
            .steps
            .iter()
            .filter(|s| s.point.repeat == 0 && s.point.outcome != Outcome::Interrupted)
            .map(|s| {
                let mean = s.result.summary.all.latency_us.as_ref().map(|l| l.mean);
                (s.point.rate as u32, mean)
            })
            .collect();
        curve.sort_by_key(|(k, _)| *k);
        search::knee(&curve)
    }
    /// The measured IOPS at the found rate.
    pub fn max_iops(&self) -> Option<f64> {
        self.found().map(|s| s.result.summary.all.iops)
    }
}

/// Labels every find-max step carries.
const OWN_LABELS: [&str; 10] = [
    "findmax",
    "step",
    "rate",
    fleet_size::KEY,
    "slo",
    "repeat",
    "found",
    campaign::ID_LABEL,
    campaign::FP_LABEL,
    campaign::END_LABEL,
];

/// Run the search for `a` under `s`; `name` names the search in the store. `resume` is
/// None where the command has no `--resume` (`plan`), else the campaign it continues
/// (`--resume`: an id or `latest`), if any, with the command's fingerprint, and the
/// search announces its campaign. The search has one live
/// session (`--metrics-listen`, `--ui`) for all its steps, each announced. A resumed
/// search runs again from its start, each step the store holds finished taken from
/// there instead of measured: the same measurements make the same decisions, so it
/// measures from the first step the store lacks.
pub(crate) fn find_max(
    a: &RunArgs,
    s: &SearchArgs,
    name: &str,
    resume: Option<(Option<&str>, Fingerprint)>,
) -> Result<Report, Exit> {
    let (groups, hosts) = checked_groups(a, s)?;
    let announce = resume.is_some();
    let (resume, fp) = resume.unwrap_or_default();
    let campaign = Campaign::open(a, resume, "findmax", name, fp)?;
    if announce {
        campaign.announce(&format!("find-max {name}"), a.quiet);
    }
    let mut live = Session::open(a)?;
    let report = match hosts {
        Some(most) => search_hosts(a, s, name, groups, most, &mut live, &campaign),
        None => search(a, s, name, groups, &mut live, &campaign),
    };
    live.finish();
    report
}

fn search(
    a: &RunArgs,
    s: &SearchArgs,
    name: &str,
    groups: Vec<GroupPlan>,
    live: &mut Session,
    campaign: &Campaign,
) -> Result<Report, Exit> {
    let mut run = SearchRun::new(a, s, name, groups, live, campaign);
    let (start, closed) = match s.start {
        Some(r) => (r, None),
        None => match run.closed_loop()? {
            Ok((iops, r)) => (iops, Some(r)),
            Err(report) => return Ok(report),
        },
    };
    let params = Params {
        start,
        tolerance: s.tolerance,
        limits: s.slo.iter().map(Slo::limit).collect(),
        stop_at_knee: s.stop_at_knee,
        max_steps: s.max_steps,
    };
    let mut results: Vec<RunResult> = Vec::new();
    let found = search::find_max(&params, &mut |rate: f64, repeat: u32| {
        run.measure_at(&mut results, rate, repeat)
    })?;
    Ok(run.report(found, results, closed, None))
}

/// `--over hosts`: the most hosts, 1 to `most`, whose step meets every objective.
fn search_hosts(
    a: &RunArgs,
    s: &SearchArgs,
    name: &str,
    groups: Vec<GroupPlan>,
    most: u32,
    live: &mut Session,
    campaign: &Campaign,
) -> Result<Report, Exit> {
    // Each host's share of the whole fleet's offered rate (None: closed loop).
    let per_host = offered_rate(&groups).map(|r| r / f64::from(most));
    let mut run = SearchRun::new(a, s, name, groups, live, campaign);
    let params = Params {
        start: 1.0,
        tolerance: s.tolerance,
        limits: s.slo.iter().map(Slo::limit).collect(),
        stop_at_knee: s.stop_at_knee,
        max_steps: s.max_steps,
    };
    let mut results: Vec<RunResult> = Vec::new();
    let offered = |k: u32| per_host.map(|r| r * f64::from(k));
    let found = search::find_max_count(&params, most, &offered, &mut |k: u32, repeat: u32| {
        run.measure_hosts(&mut results, k, repeat)
    })?;
    Ok(run.report(found, results, None, Some(most)))
}

/// What one step of a search varies: the rate, or how many hosts run (`--over hosts`).
#[derive(Clone, Copy)]
enum Point {
    Rate(f64),
    Hosts(u32),
}

impl Point {
    /// The label the step's value is stored under.
    fn key(self) -> &'static str {
        match self {
            Point::Rate(_) => "rate",
            Point::Hosts(_) => fleet_size::KEY,
        }
    }
    /// Its value as labels and step names write it.
    fn value(self) -> String {
        match self {
            Point::Rate(r) => format!("{r:.0}"),
            Point::Hosts(k) => k.to_string(),
        }
    }
    /// How the step is announced (`1500 IOPS`, `4 host(s)`).
    fn said(self) -> String {
        match self {
            Point::Rate(r) => format!("{r:.0} IOPS"),
            Point::Hosts(k) => format!("{k} host(s)"),
        }
    }
}

impl SearchRun<'_> {
    /// The search's report from what it found and measured (`hosts`: the fleet's, with
    /// `--over hosts`); the found step marked in the store, the campaign ended.
    fn report(
        &mut self,
        found: search::Found,
        results: Vec<RunResult>,
        closed: Option<RunResult>,
        hosts: Option<u32>,
    ) -> Report {
        let (a, name, campaign) = (self.a, self.name, self.campaign);
        let steps: Vec<StepRecord> = found
            .points
            .into_iter()
            .zip(results)
            .enumerate()
            .map(|(i, (point, result))| StepRecord {
                step: i + 1,
                point,
                result,
            })
            .collect();
        let found_at = found.best.map(|(_, i)| i);
        // Mark the answer in the store, now that it is known.
        if let Some(id) =
            found_at.and_then(|i| steps[i].result.stored.as_ref().map(|s| s.id.clone()))
        {
            mark_found(a, &id);
        }
        if found.end == End::NoneMet {
            self.code = self.code.max(1);
        }
        if found.end != End::Interrupted {
            let last = steps.last().and_then(|s| s.result.stored.as_ref());
            campaign.end(last.map(|s| s.id.as_str()), end_text(found.end));
        }
        Report {
            name: name.to_string(),
            campaign: campaign.id.clone(),
            objectives: self.s.slo.clone(),
            closed,
            steps,
            found: found_at,
            end: found.end,
            code: self.code,
            hosts,
        }
    }
}

/// The run's groups, once the step flags, the objectives, the step length, the start
/// rate and the rate arithmetic are checked (before anything runs); with `--over
/// hosts`, the fleet's hosts too.
fn checked_groups(a: &RunArgs, s: &SearchArgs) -> Result<(Vec<GroupPlan>, Option<u32>), Exit> {
    check_step_args(a, &OWN_LABELS)?;
    if s.slo.is_empty() {
        return Err(Exit::input(
            "--slo: give at least one objective, e.g. --slo 'p99<=3ms' or --slo 'cpu<=40%'",
        ));
    }
    let (groups, _) = resolve(a)?;
    let measured = groups[0].plan.timing.duration;
    if measured < s.min_step {
        return Err(Exit::input(format!(
            "--duration {}: a find-max step must measure at least --min-step {}",
            format_duration(measured),
            format_duration(s.min_step)
        )));
    }
    if let Some(r) = s.start {
        if !(r > 0.0 && r.is_finite()) {
            return Err(Exit::input(format!(
                "--start {r}: give a rate above 0 IOPS"
            )));
        }
    }
    if s.over == Over::Hosts {
        if s.start.is_some() {
            return Err(Exit::input(
                "--start: a search --over hosts starts at 1 host; each host runs the profile's own rate",
            ));
        }
        let workers = groups.iter().map(|g| g.plan.fleet.workers).sum();
        let most = fleet_size::hosts_in(a, workers, "--over hosts")?;
        return Ok((groups, Some(most)));
    }
    // The rate arithmetic is checked before anything runs.
    with_rate(&mut groups.clone(), 1.0)?;
    Ok((groups, None))
}

/// A search under way: what every step runs and is labelled with, and the worst exit
/// code so far.
struct SearchRun<'a> {
    a: &'a RunArgs,
    s: &'a SearchArgs,
    name: &'a str,
    groups: Vec<GroupPlan>,
    slo_label: String,
    stop: Arc<AtomicBool>,
    code: i32,
    live: &'a mut Session,
    campaign: &'a Campaign,
}

impl<'a> SearchRun<'a> {
    fn new(
        a: &'a RunArgs,
        s: &'a SearchArgs,
        name: &'a str,
        groups: Vec<GroupPlan>,
        live: &'a mut Session,
        campaign: &'a Campaign,
    ) -> Self {
        SearchRun {
            a,
            s,
            name,
            groups,
            slo_label: slo::join(&s.slo),
            stop: ctrl_c_flag(),
            code: 0,
            live,
            campaign,
        }
    }

    /// The labels of step `step` at `rate`.
    fn labels(&self, step: usize, rate: &str) -> Vec<(String, String)> {
        let mut l = vec![
            ("findmax".to_string(), self.name.to_string()),
            ("step".to_string(), step.to_string()),
            ("rate".to_string(), rate.to_string()),
            ("slo".to_string(), self.slo_label.clone()),
        ];
        l.extend(self.campaign.labels());
        l
    }

    /// Step `step` at `key` = `value` (`rate` or `hosts`; `repeat`) as the store holds
    /// it finished, when this search resumes a campaign that measured it.
    fn finished(&self, step: usize, key: &str, value: &str, repeat: u32) -> Option<RunResult> {
        let r = self.campaign.finished(&step.to_string())?;
        let labels = &r.stored.as_ref()?.labels;
        let stored_repeat = labels.get("repeat").map_or("0", String::as_str);
        let same = labels.get(key).map(String::as_str) == Some(value)
            && stored_repeat == repeat.to_string();
        same.then_some(r)
    }

    /// Measure the closed-loop maximum, the default start rate: its IOPS and run, or
    /// the search's report when it was interrupted or measured nothing.
    fn closed_loop(&mut self) -> Result<Result<(f64, RunResult), Report>, Exit> {
        let (a, name) = (self.a, self.name);
        let mut g = self.groups.clone();
        closed_loop(&mut g, "--start", "; give the first rate with --start")?;
        let (r, c) = match self.finished(0, "rate", "closed-loop", 0) {
            Some(r) => {
                if !a.quiet {
                    eprintln!("find-max: the closed-loop maximum{}", before(&r));
                }
                let c = exit_code(&r, &self.stop);
                (r, c)
            }
            None => {
                if !a.quiet {
                    eprintln!("find-max: measuring the closed-loop maximum");
                }
                self.live.announce(&Step {
                    kind: StepKind::FindMax,
                    index: 0,
                    of: None,
                    at_most: false,
                    label: "the closed-loop maximum".into(),
                    rate_iops: None,
                });
                self.live.step(
                    a,
                    &g,
                    format!("{name}/closed-loop"),
                    self.labels(0, "closed-loop"),
                    a.seed,
                    &self.stop,
                )?
            }
        };
        self.code = self.code.max(c);
        let iops = r.summary.all.iops;
        if c == 130 || iops.is_nan() || iops <= 0.0 {
            return Ok(Err(Report {
                name: name.to_string(),
                campaign: self.campaign.id.clone(),
                objectives: self.s.slo.clone(),
                closed: Some(r),
                steps: Vec::new(),
                found: None,
                end: if c == 130 {
                    End::Interrupted
                } else {
                    End::NoneMet
                },
                code: self.code.max(1),
                hosts: None,
            }));
        }
        Ok(Ok((iops, r)))
    }

    /// Run one step at `rate` (its `repeat`-th repeat), keep its result in `results`,
    /// and return what the search judges it by.
    fn measure_at(
        &mut self,
        results: &mut Vec<RunResult>,
        rate: f64,
        repeat: u32,
    ) -> Result<Measured, Exit> {
        self.measure_point(results, Point::Rate(rate), repeat)
    }

    /// Step `i` of `--over hosts`: the first `k` hosts (its `repeat`-th repeat), kept
    /// in `results`, judged as `measure_at` judges a rate.
    fn measure_hosts(
        &mut self,
        results: &mut Vec<RunResult>,
        k: u32,
        repeat: u32,
    ) -> Result<Measured, Exit> {
        self.measure_point(results, Point::Hosts(k), repeat)
    }

    /// One step at `point` (its `repeat`-th repeat): taken from the store when a resumed
    /// campaign measured it, else measured; kept in `results` and judged.
    fn measure_point(
        &mut self,
        results: &mut Vec<RunResult>,
        point: Point,
        repeat: u32,
    ) -> Result<Measured, Exit> {
        let (a, name) = (self.a, self.name);
        let i = results.len() + 1;
        let again = if repeat > 0 { " (again: noisy)" } else { "" };
        let (key, value) = (point.key(), point.value());
        let said = point.said();
        let (r, c) = match self.finished(i, key, &value, repeat) {
            Some(r) => {
                if !a.quiet {
                    eprintln!("find-max step {i}: {said}{again}{}", before(&r));
                }
                let c = exit_code(&r, &self.stop);
                (r, c)
            }
            None => {
                let mut at = a.clone();
                let mut g = self.groups.clone();
                let (mut l, label, rate_iops) = match point {
                    Point::Rate(rate) => {
                        with_rate(&mut g, rate)?;
                        let label = if repeat > 0 { "again: noisy" } else { "" };
                        (self.labels(i, &value), label.to_string(), Some(rate))
                    }
                    Point::Hosts(k) => {
                        at.active_hosts = Some(k);
                        let mut l = self.labels(i, "profile");
                        l.push((key.to_string(), value.clone()));
                        (l, format!("{said}{again}"), None)
                    }
                };
                if repeat > 0 {
                    l.push(("repeat".to_string(), repeat.to_string()));
                }
                if !a.quiet {
                    eprintln!("find-max step {i}: {said}{again}");
                }
                self.live.announce(&Step {
                    kind: StepKind::FindMax,
                    index: i as u32,
                    of: None,
                    at_most: false,
                    label,
                    rate_iops,
                });
                self.live.step(
                    &at,
                    &g,
                    format!("{name}/{key}={value}"),
                    l,
                    a.seed.wrapping_add(repeat as u64),
                    &self.stop,
                )?
            }
        };
        self.judged(results, r, c)
    }

    /// What the search judges a step `r` (exit code `c`) by; the step kept in `results`.
    fn judged(
        &mut self,
        results: &mut Vec<RunResult>,
        r: RunResult,
        c: i32,
    ) -> Result<Measured, Exit> {
        self.code = self.code.max(c);
        // A CPU objective the step could not measure (no observer host, or no CPU
        // figure) cannot be judged: refused, not passed.
        if let Some(o) = self
            .s
            .slo
            .iter()
            .find(|o| matches!(o, Slo::Cpu(_)) && o.value(&r.summary).is_none())
        {
            if !(c == 130 || r.run.interrupted) {
                return Err(Exit::input(format!(
                    "--slo {o}: the step measured no such CPU figure (for observers.cpu: the fleet has no observer host), so the objective cannot be judged"
                )));
            }
        }
        let m = Measured {
            iops: r.summary.all.iops,
            mean_us: r.summary.all.latency_us.as_ref().map(|l| l.mean),
            values: self.s.slo.iter().map(|o| o.value(&r.summary)).collect(),
            interrupted: c == 130 || r.run.interrupted,
        };
        results.push(r);
        Ok(m)
    }
}

/// ` (finished before: run ID)`: a step taken from the store.
fn before(r: &RunResult) -> String {
    let id = r.stored.as_ref().map_or("", |s| s.id.as_str());
    format!(" (finished before: run {id})")
}

/// Label the found step's run `found=true` (a warning if the store refuses).
fn mark_found(a: &RunArgs, id: &str) {
    let path = match &a.save.db {
        Some(p) => Ok(p.clone()),
        None => iofleet_store::default_path(),
    };
    let done = path
        .and_then(|p| iofleet_store::Store::open(&p))
        .and_then(|mut s| s.set_label(id, "found", "true"));
    if let Err(e) = done {
        eprintln!("warning: could not mark run {id} as the one found: {e}");
    }
}

fn outcome_text(o: Outcome, objectives: &[Slo]) -> String {
    match o {
        Outcome::Pass => "pass".into(),
        Outcome::Missed(i) => format!("missed {}", objectives[i]),
        Outcome::NotSustained => "not sustained".into(),
        Outcome::PastKnee => "past the knee".into(),
        Outcome::Light => "light (knee reference)".into(),
        Outcome::Interrupted => "interrupted".into(),
    }
}

fn end_text(e: End) -> &'static str {
    match e {
        End::Converged => "converged",
        End::NoneMet => "none met",
        End::NoFailure => "no failure",
        End::OutOfSteps => "out of steps",
        End::Interrupted => "interrupted",
    }
}

pub(crate) fn report_json(r: &Report) -> serde_json::Value {
    if r.hosts.is_some() {
        return hosts_json(r);
    }
    let lat_json = |res: &RunResult| {
        serde_json::to_value(&res.summary.all.latency_us).unwrap_or(serde_json::Value::Null)
    };
    let points: Vec<serde_json::Value> = r
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let lat = s.result.summary.all.latency_us.as_ref();
            serde_json::json!({
                "step": s.step,
                "rate": s.point.rate,
                "repeat": s.point.repeat,
                "iops": s.result.summary.all.iops,
                "mean_us": lat.map(|l| l.mean),
                "p50_us": lat.map(|l| l.p50),
                "p99_us": lat.map(|l| l.p99),
                "values_us": r.objectives.iter().zip(&s.point.measured.values)
                    .map(|(o, v)| o.latency().and(*v))
                    .collect::<Vec<_>>(),
                "values": s.point.measured.values,
                "cpu_pct": s.result.summary.cpu.as_ref().map(|c| c.host_pct),
                "observers_cpu_pct": s.result.summary.observers.as_ref().map(|o| o.cpu.host_pct),
                "outcome": outcome_text(s.point.outcome, &r.objectives),
                "passed": s.point.outcome.passed(),
                "noisy": s.point.noisy,
                "found": r.found == Some(i),
                "valid": s.result.validity.valid,
                "invalid_reasons": s.result.validity.reasons,
                "run_id": s.result.stored.as_ref().map(|x| x.id.clone()),
            })
        })
        .collect();
    let found = r.found();
    serde_json::json!({
        "findmax": r.name,
        "campaign": r.campaign,
        "objectives": r.objectives.iter().map(|o| o.to_string()).collect::<Vec<_>>(),
        "max_iops": r.max_iops(),
        "rate": found.map(|s| s.point.rate),
        "found_step": found.map(|s| s.step),
        "run_id": found.and_then(|s| s.result.stored.as_ref().map(|x| x.id.clone())),
        "latency_us": found.map(|s| lat_json(&s.result)),
        "end": end_text(r.end),
        "closed_loop_iops": r.closed.as_ref().map(|c| c.summary.all.iops),
        "over": "rate",
        "points": points,
    })
}

/// `--over hosts` as JSON: the most hosts, the knee, and per step its hosts and figures.
fn hosts_json(r: &Report) -> serde_json::Value {
    let points: Vec<serde_json::Value> = r
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let all = &s.result.summary.all;
            let lat = all.latency_us.as_ref();
            serde_json::json!({
                "step": s.step,
                "hosts": s.point.rate as u32,
                "repeat": s.point.repeat,
                "iops": all.iops,
                "mbps": all.mbps,
                "mean_us": lat.map(|l| l.mean),
                "p50_us": lat.map(|l| l.p50),
                "p99_us": lat.map(|l| l.p99),
                "values": s.point.measured.values,
                "outcome": outcome_text(s.point.outcome, &r.objectives),
                "passed": s.point.outcome.passed(),
                "noisy": s.point.noisy,
                "found": r.found == Some(i),
                "valid": s.result.validity.valid,
                "invalid_reasons": s.result.validity.reasons,
                "run_id": s.result.stored.as_ref().map(|x| x.id.clone()),
            })
        })
        .collect();
    let found = r.found();
    serde_json::json!({
        "findmax": r.name,
        "campaign": r.campaign,
        "over": "hosts",
        "hosts": r.hosts,
        "objectives": r.objectives.iter().map(|o| o.to_string()).collect::<Vec<_>>(),
        "max_hosts": r.max_hosts(),
        "knee_hosts": r.knee_hosts(),
        "max_iops": r.max_iops(),
        "found_step": found.map(|s| s.step),
        "run_id": found.and_then(|s| s.result.stored.as_ref().map(|x| x.id.clone())),
        "latency_us": found.map(|s| serde_json::to_value(&s.result.summary.all.latency_us).unwrap_or(serde_json::Value::Null)),
        "end": end_text(r.end),
        "points": points,
    })
}

/// `--over hosts` as a table: the most clients at the objectives, the knee, each step.
fn hosts_table(r: &Report, most: u32) -> String {
    let objectives = slo::join(&r.objectives).replace(';', ", ");
    let mut t = format!(
        "find-max {} over hosts (1 to {most}): {objectives}\n",
        r.name
    );
    let fx = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.1}"));
    match r.found() {
        Some(s) => {
            let all = &s.result.summary.all;
            let l = all.latency_us.as_ref();
            t.push_str(&format!(
                "max clients at SLO: {} host(s), {:.0} IOPS, {:.1} MB/s (step {}, run {}); search {}\n\
                 latency there µs: mean {} p50 {} p99 {} max {}\n",
                s.point.rate as u32,
                all.iops,
                all.mbps,
                s.step,
                s.result.stored.as_ref().map_or("not saved", |x| x.id.as_str()),
                end_text(r.end),
                fx(l.map(|l| l.mean)),
                fx(l.map(|l| l.p50)),
                fx(l.map(|l| l.p99)),
                fx(l.map(|l| l.max)),
            ));
        }
        None => t.push_str(&format!(
            "max clients at SLO: none found; search {}\n",
            end_text(r.end)
        )),
    }
    if let Some(k) = r.knee_hosts() {
        t.push_str(&format!(
            "knee: {k} host(s) (the most before mean latency passes twice that of 1 host)\n"
        ));
    }
    t.push_str(&format!(
        "{:>5} {:>6} {:>12} {:>8} {:>10} {:>10} {:>10}  {:<24} run\n",
        "step", "hosts", "IOPS", "MB/s", "mean µs", "p50 µs", "p99 µs", "outcome"
    ));
    for (i, s) in r.steps.iter().enumerate() {
        let all = &s.result.summary.all;
        let l = all.latency_us.as_ref();
        let mut outcome = outcome_text(s.point.outcome, &r.objectives);
        if s.point.noisy {
            outcome.push_str(" (noisy)");
        }
        t.push_str(&format!(
            "{:>5} {:>6} {:>12.0} {:>8.1} {:>10} {:>10} {:>10}  {:<24} {}{}\n",
            s.step,
            s.point.rate as u32,
            all.iops,
            all.mbps,
            fx(l.map(|l| l.mean)),
            fx(l.map(|l| l.p50)),
            fx(l.map(|l| l.p99)),
            outcome,
            s.result
                .stored
                .as_ref()
                .map_or("(not saved)", |x| x.id.as_str()),
            if r.found == Some(i) {
                "  ← found"
            } else {
                ""
            }
        ));
        if !s.result.validity.valid {
            t.push_str(&format!(
                "{:>5} INVALID: {}\n",
                "",
                iofleet_report::text::escape(&s.result.validity.reasons.join("; "))
            ));
        }
    }
    t
}

pub(crate) fn report_table(r: &Report) -> String {
    if let Some(most) = r.hosts {
        return hosts_table(r, most);
    }
    let objectives = slo::join(&r.objectives);
    let mut t = format!("find-max {}: {}\n", r.name, objectives.replace(';', ", "));
    if let Some(c) = &r.closed {
        t.push_str(&format!(
            "closed-loop maximum: {:.0} IOPS ({}){}\n",
            c.summary.all.iops,
            c.stored.as_ref().map_or("not saved", |s| s.id.as_str()),
            match c.validity.valid {
                true => String::new(),
                false => format!(
                    " INVALID: {}",
                    iofleet_report::text::escape(&c.validity.reasons.join("; "))
                ),
            }
        ));
    }
    match r.found() {
        Some(s) => {
            let l = s.result.summary.all.latency_us.as_ref();
            let f = |g: fn(&iofleet_stats::LatencySummary) -> f64| {
                l.map_or("–".into(), |l| format!("{:.1}", g(l)))
            };
            t.push_str(&format!(
                "max: {:.0} IOPS (offered {:.0}; step {}, run {}); search {}\n\
                 latency there µs: mean {} p50 {} p90 {} p99 {} p99.9 {} max {}\n",
                s.result.summary.all.iops,
                s.point.rate,
                s.step,
                s.result
                    .stored
                    .as_ref()
                    .map_or("not saved", |x| x.id.as_str()),
                end_text(r.end),
                f(|l| l.mean),
                f(|l| l.p50),
                f(|l| l.p90),
                f(|l| l.p99),
                f(|l| l.p99_9),
                f(|l| l.max),
            ));
        }
        None => t.push_str(&format!("max: none found; search {}\n", end_text(r.end))),
    }
    // With a CPU objective, a column of the workers' (or observers') CPU it bounds.
    let cpu = r.objectives.iter().find(|o| matches!(o, Slo::Cpu(_)));
    t.push_str(&format!(
        "{:>5} {:>12} {:>12} {:>10} {:>10} {:>10}{}  {:<24} run\n",
        "step",
        "offered",
        "IOPS",
        "mean µs",
        "p50 µs",
        "p99 µs",
        if cpu.is_some() { "   CPU %" } else { "" },
        "outcome"
    ));
    for (i, s) in r.steps.iter().enumerate() {
        let l = s.result.summary.all.latency_us.as_ref();
        let fx = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.1}"));
        let mut outcome = outcome_text(s.point.outcome, &r.objectives);
        if s.point.noisy {
            outcome.push_str(" (noisy)");
        }
        let cpu_col = cpu.map_or(String::new(), |o| {
            format!(" {:>7}", fx(o.value(&s.result.summary)))
        });
        t.push_str(&format!(
            "{:>5} {:>12.0} {:>12.0} {:>10} {:>10} {:>10}{}  {:<24} {}{}\n",
            s.step,
            s.point.rate,
            s.result.summary.all.iops,
            fx(l.map(|l| l.mean)),
            fx(l.map(|l| l.p50)),
            fx(l.map(|l| l.p99)),
            cpu_col,
            outcome,
            s.result
                .stored
                .as_ref()
                .map_or("(not saved)", |x| x.id.as_str()),
            if r.found == Some(i) {
                "  ← found"
            } else {
                ""
            }
        ));
        if !s.result.validity.valid {
            t.push_str(&format!(
                "{:>5} INVALID: {}\n",
                "",
                iofleet_report::text::escape(&s.result.validity.reasons.join("; "))
            ));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_takes_a_percentage() {
        assert_eq!(tolerance("2%"), Ok(0.02));
        assert_eq!(tolerance("5"), Ok(0.05));
        assert!(tolerance("0%").unwrap_err().contains("above 0%"));
        assert!(tolerance("x").unwrap_err().contains("'x'"));
    }
}
