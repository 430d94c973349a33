//! `iofleet plan vdi|sql`: how many desktops (or SQL VMs) the storage carries, by the
//! capacity rule of the S2D VDI report: units supported = IOPS ÷ per-unit IOPS, rounded
//! down (a fraction of a desktop is not supported). The IOPS come from one of three
//! sources, chosen by the flags before anything runs:
//! - `--slo`: the phase's profile through `find-max`, the IOPS at the objectives;
//! - `--at-peak`: one closed-loop run of the phase's profile (no search, no objective),
//!   its IOPS: the peak load the S2D VDI report sized at;
//! - `--from-run`: a stored run's IOPS, with a notice when that run ran another workload
//!   than the phase's.
//!
//! `--reference N` also gives the size as a whole multiple of an N-unit reference
//! deployment, as the S2D VDI report did ("8 times the 1,500-desktop reference").
//! The bandwidth printed is the basis run's MB/s.
//!
//! The per-unit figures and their sources (BRIEF §5, docs/capacity.md):
//! - VDI phases (NetApp full-clone model, as described in the S2D VDI report): boot
//!   78.5, Monday login 20.7, Tuesday login 14.6 IOPS per desktop;
//! - VDI steady state, Nutanix X-Ray's personas (read + write IOPS per desktop VM):
//!   task 8, knowledge 12, power 26;
//! - SQL: a VM Fleet 2.x SQL VM, 6,000 IOPS of 8K data (1,500 on each of 4 threads) +
//!   300 IOPS of 32K log = 6,300.

use std::io::Write;

use clap::{Args, Subcommand, ValueEnum};
use iofleet_profile::{GroupPlan, Plan, RecordedPlan, StreamPlan};

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::find_max::{find_max, report_table, SearchArgs};
use crate::run::resolve::{closed_loop, ctrl_c_flag, resolve};
use crate::run::session::Session;
use crate::run::stepping::check_step_args;
use crate::store::record::DbArg;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Boot,
    MondayLogin,
    TuesdayLogin,
    Steady,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerType {
    Task,
    Knowledge,
    Power,
}

#[derive(Subcommand, Debug)]
pub enum PlanCmd {
    /// Desktops supported in a VDI phase: IOPS ÷ the phase's per-desktop IOPS, the IOPS
    /// at the objectives (find-max), at peak (--at-peak) or of a stored run (--from-run).
    Vdi(VdiArgs),
    /// SQL VMs supported: IOPS of vmfleet-sql ÷ 6,300 IOPS per VM (VM Fleet's SQL
    /// profile), the IOPS at the objectives (find-max), at peak or of a stored run.
    Sql(SqlArgs),
}

/// What `plan vdi` and `plan sql` share.
#[derive(Args, Debug)]
pub struct PlanCommon {
    /// Compute from this stored run's IOPS (id, unique prefix, unique name or `latest`)
    /// instead of measuring.
    #[arg(long, value_name = "RUN")]
    pub from_run: Option<String>,
    /// Size at peak, with no latency objective: one closed-loop run of the phase's
    /// profile (every rate removed, no search), units = floor(its IOPS ÷ per-unit IOPS).
    /// The S2D VDI report sized its desktops this way.
    #[arg(long, conflicts_with_all = ["slo", "from_run", "start", "stop_at_knee", "rate"])]
    pub at_peak: bool,
    /// Also size as a whole multiple of a reference deployment of N desktops (SQL VMs):
    /// floor(units ÷ N) × N. The S2D VDI report: "8 times the 1,500-desktop reference".
    #[arg(long, value_name = "N", value_parser = reference_size, allow_negative_numbers = true)]
    pub reference: Option<u64>,
    #[command(flatten)]
    pub search: SearchArgs,
    /// The run flags (engine, targets, fleet shape, --duration, --db ...) apply to every
    /// run plan makes; a PROFILE given replaces the phase's own.
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct VdiArgs {
    /// The phase: boot, monday-login (first login), tuesday-login (subsequent login) or
    /// steady.
    #[arg(long, value_enum)]
    pub phase: Phase,
    /// IOPS one desktop needs [default: the phase's: boot 78.5, monday-login 20.7,
    /// tuesday-login 14.6, steady by --worker-type].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub per_desktop_iops: Option<f64>,
    /// Steady state only: X-Ray's persona, task (8 IOPS), knowledge (12) or power (26);
    /// also picks the profile xray-vdi-TYPE [default: knowledge].
    #[arg(long, value_enum)]
    pub worker_type: Option<WorkerType>,
    #[command(flatten)]
    pub common: PlanCommon,
}

#[derive(Args, Debug)]
pub struct SqlArgs {
    /// IOPS one SQL VM needs [default: 6300, VM Fleet 2.x's SQL profile: 6,000 data
    /// (1,500 per thread x 4) + 300 log].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub per_vm_iops: Option<f64>,
    #[command(flatten)]
    pub common: PlanCommon,
}

/// VM Fleet 2.x's SQL VM: 6,000 IOPS of 8K data (4 threads throttled to 1,500 each) plus
/// 300 IOPS of 32K log.
pub const SQL_PER_VM_IOPS: f64 = 6300.0;

/// `--reference N`: a whole number of units, at least 1.
fn reference_size(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            "give the reference deployment's size in whole units, at least 1 (e.g. 1500)".into()
        })
}

/// A phase's profile and per-desktop IOPS.
fn phase_defaults(phase: Phase, worker: Option<WorkerType>) -> (String, f64) {
    match phase {
        Phase::Boot => ("vdi-boot".into(), 78.5),
        Phase::MondayLogin => ("vdi-monday-login".into(), 20.7),
        Phase::TuesdayLogin => ("vdi-tuesday-login".into(), 14.6),
        Phase::Steady => match worker.unwrap_or(WorkerType::Knowledge) {
            WorkerType::Task => ("xray-vdi-task".into(), 8.0),
            WorkerType::Knowledge => ("xray-vdi-knowledge".into(), 12.0),
            WorkerType::Power => ("xray-vdi-power".into(), 26.0),
        },
    }
}

/// Where the IOPS come from, decided from the flags before anything runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sizing {
    /// find-max under `--slo`.
    Objectives,
    /// One closed-loop run, no objective.
    AtPeak,
    /// A stored run.
    FromRun,
}

impl Sizing {
    fn of(c: &PlanCommon) -> Result<Sizing, Exit> {
        // clap already refuses --at-peak with --slo or --from-run.
        if c.at_peak {
            Ok(Sizing::AtPeak)
        } else if c.from_run.is_some() {
            Ok(Sizing::FromRun)
        } else if c.search.slo.is_empty() {
            Err(Exit::input(
                "--slo: give a latency objective to size at (e.g. --slo 'p99<=3ms'), \
                 --at-peak to size at the closed-loop maximum with no objective, \
                 or --from-run RUN to size from a stored run",
            ))
        } else {
            Ok(Sizing::Objectives)
        }
    }

    fn name(self) -> &'static str {
        match self {
            Sizing::Objectives => "find-max",
            Sizing::AtPeak => "at-peak",
            Sizing::FromRun => "from-run",
        }
    }
}

/// Where the IOPS came from.
struct Basis {
    iops: f64,
    mbps: f64,
    run_id: Option<String>,
    /// The profile the basis run ran (with several groups, their profiles joined by +).
    run_profile: Option<String>,
    /// The find-max output (table or JSON), when searched.
    search: Option<crate::run::find_max::Report>,
    /// Things the user should know about the basis (also on stderr).
    notices: Vec<String>,
}

/// Whole desktops (or VMs) that `iops` carries at `per` IOPS each: a partial one is not
/// a desktop. A quotient within 1e-9 below a whole number is that number: IOPS that are
/// an exact multiple of `per` in decimal (306.6 ÷ 14.6) can land a hair below it in
/// binary floating point, and that hair is not a missing desktop.
fn units_supported(iops: f64, per: f64) -> u64 {
    let q = iops / per;
    if !(q.is_finite() && q > 0.0) {
        return 0;
    }
    let whole = q.round();
    if whole >= q && whole - q <= 1e-9 * whole {
        whole as u64
    } else {
        q.floor() as u64
    }
}

/// `units` as a whole multiple of a `size`-unit reference: (multiple, units it sizes).
fn reference_multiple(units: u64, size: u64) -> (u64, u64) {
    let times = units / size;
    (times, times * size)
}

fn per_unit(flag: &str, given: Option<f64>, default: f64) -> Result<f64, Exit> {
    match given {
        Some(v) if !(v > 0.0 && v.is_finite()) => Err(Exit::input(format!(
            "{flag} {v}: give the IOPS of one unit, above 0"
        ))),
        Some(v) => Ok(v),
        None => Ok(default),
    }
}

/// The run arguments with the phase's profile, unless a profile or groups were given.
fn with_profile(c: &PlanCommon, profile: String) -> RunArgs {
    let mut run = c.run.clone();
    if run.profile.is_none() && run.group.is_empty() {
        run.profile = Some(profile);
    }
    run
}

/// The IOPS to plan with: a stored run's, the closed-loop maximum's, or find-max's
/// answer for `profile`.
fn basis(
    c: &PlanCommon,
    sizing: Sizing,
    profile: String,
    what: &str,
) -> Result<(Basis, i32), Exit> {
    let run = with_profile(c, profile);
    let name =
        run.save.name.clone().unwrap_or_else(|| {
            format!("plan-{what}-{}", run.profile.as_deref().unwrap_or("groups"))
        });
    match sizing {
        Sizing::FromRun => from_run(c, &run),
        Sizing::AtPeak => at_peak(&run, &name),
        Sizing::Objectives => {
            if c.search.over == crate::run::find_max::Over::Hosts {
                return Err(Exit::input(
                    "--over hosts: plan sizes a cluster from the rate its storage sustains; search the clients with `iofleet find-max --over hosts`",
                ));
            }
            let report = find_max(&run, &c.search, &name, None)?;
            let code = report.code;
            let found = report.found();
            let b = Basis {
                iops: report.max_iops().unwrap_or(0.0),
                mbps: found.map_or(0.0, |s| s.result.summary.all.mbps),
                run_id: found.and_then(|s| s.result.stored.as_ref().map(|x| x.id.clone())),
                run_profile: found.map(|s| profile_of(&s.result.run.plan)),
                search: Some(report),
                notices: Vec::new(),
            };
            Ok((b, code))
        }
    }
}

/// A stored run's IOPS; notices when it ran another workload than `needs` resolves to,
/// or misses an objective given.
fn from_run(c: &PlanCommon, needs: &RunArgs) -> Result<(Basis, i32), Exit> {
    let q = c.from_run.as_deref().unwrap_or_default();
    // The workload the phase needs, resolved as a measured plan would resolve it.
    let (expected, _) = resolve(needs)?;
    let store = DbArg {
        db: c.run.save.db.clone(),
    }
    .open()
    .map_err(|e| Exit::input(format!("--from-run {q}: {}", e.message)))?;
    let run = crate::store::stored::load_run(&store, q)
        .map_err(|e| Exit::input(format!("--from-run {q}: {}", e.message)))?;
    let mut notices = Vec::new();
    let ran = &run.result.run.plan;
    if let Some(why) = workload_difference(ran, &expected) {
        notices.push(format!(
            "run {} ran {}; the phase needs {}: {why}. Its IOPS are that workload's, not the phase's",
            run.id,
            describe_groups(&ran.each_group().into_iter().map(|(_, p, _)| p).collect::<Vec<_>>()),
            describe_groups(&expected.iter().map(|g| &g.plan).collect::<Vec<_>>()),
        ));
    }
    // Objectives given with --from-run are checked against the stored run.
    // An objective the run has no figure for is said, never passed in silence.
    for o in &c.search.slo {
        match o.value(&run.result.summary) {
            Some(v) if v > o.limit() => notices.push(format!(
                "run {} misses {o} ({v:.1} {}): its IOPS are not IOPS at the objective",
                run.id,
                o.unit()
            )),
            Some(_) => {}
            None => notices.push(format!(
                "run {} has no figure for {o} (no I/O of that kind, CPU not measured, or no observer host): the objective is not checked",
                run.id
            )),
        }
    }
    let all = &run.result.summary.all;
    Ok((
        Basis {
            iops: all.iops,
            mbps: all.mbps,
            run_profile: Some(profile_of(ran)),
            run_id: Some(run.id),
            search: None,
            notices,
        },
        0,
    ))
}

/// Labels the at-peak run carries.
const AT_PEAK_LABELS: [&str; 2] = ["plan", "sizing"];

/// One closed-loop run of `run`'s profile, saved like a find-max step: the peak.
fn at_peak(run: &RunArgs, name: &str) -> Result<(Basis, i32), Exit> {
    check_step_args(run, &AT_PEAK_LABELS)?;
    let (mut groups, _) = resolve(run)?;
    closed_loop(&mut groups, "--at-peak", "")?;
    if !run.quiet {
        eprintln!("plan: measuring the closed-loop maximum (at peak, no latency objective)");
    }
    let labels = vec![
        ("plan".to_string(), name.to_string()),
        ("sizing".to_string(), "at-peak".to_string()),
    ];
    let mut live = Session::open(run)?;
    let stop = ctrl_c_flag();
    let (r, mut code) = live.step(
        run,
        &groups,
        format!("{name}/at-peak"),
        labels,
        run.seed,
        &stop,
    )?;
    live.finish();
    let iops = r.summary.all.iops;
    if code != 130 && (iops.is_nan() || iops <= 0.0) {
        code = code.max(1);
    }
    Ok((
        Basis {
            iops: if iops.is_nan() { 0.0 } else { iops },
            mbps: r.summary.all.mbps,
            run_id: r.stored.as_ref().map(|s| s.id.clone()),
            run_profile: Some(profile_of(&r.run.plan)),
            search: None,
            notices: Vec::new(),
        },
        code,
    ))
}

/// The profile a run ran; with several groups, theirs joined by `+`.
fn profile_of(p: &RecordedPlan) -> String {
    p.each_group()
        .iter()
        .map(|(_, plan, _)| plan.name.as_str())
        .collect::<Vec<_>>()
        .join("+")
}

/// Why the workload `ran` is not the `expected` groups' (None: the same profiles with
/// the same streams). Compared: profile names, and each stream's block sizes, read and
/// random shares, alignment, locality, working set and share of the mix. Not compared:
/// the fleet's shape, timing and rates, which sizing sets itself (find-max and at-peak
/// runs carry their own rates).
fn workload_difference(ran: &RecordedPlan, expected: &[GroupPlan]) -> Option<String> {
    let ran = ran.each_group();
    if ran.len() != expected.len() {
        return Some(format!(
            "{} worker group(s) instead of {}",
            ran.len(),
            expected.len()
        ));
    }
    for ((_, r, _), e) in ran.iter().zip(expected) {
        let e = &e.plan;
        if r.name != e.name {
            return Some(format!("profile {} instead of {}", r.name, e.name));
        }
        if let Some(why) = streams_difference(&r.streams, &e.streams) {
            return Some(format!("profile {}: {why}", r.name));
        }
    }
    None
}

fn streams_difference(ran: &[StreamPlan], expected: &[StreamPlan]) -> Option<String> {
    if ran.len() != expected.len() {
        return Some(format!(
            "{} streams instead of {}",
            ran.len(),
            expected.len()
        ));
    }
    let (mr, me) = (mix(ran), mix(expected));
    for (i, (r, e)) in ran.iter().zip(expected).enumerate() {
        let same = r.name == e.name
            && r.bs == e.bs
            && r.read_pct == e.read_pct
            && r.random_pct == e.random_pct
            && r.align == e.align
            && r.locality == e.locality
            && r.working_set_pct == e.working_set_pct
            && mr[i].0 == me[i].0
            && (mr[i].1 - me[i].1).abs() <= 0.005;
        if !same {
            return Some(format!(
                "stream {} is {} instead of {}",
                r.name,
                describe_stream(r, mr[i].1),
                describe_stream(e, me[i].1)
            ));
        }
    }
    None
}

/// Each stream's share of the mix: (own rate?, share among the streams of its kind).
/// When every stream is of one kind, kinds are not told apart: a closed-loop run turns
/// all-rated streams into weights in the same proportions.
fn mix(streams: &[StreamPlan]) -> Vec<(bool, f64)> {
    let one_kind = streams.iter().all(|s| s.rate_iops.is_some())
        || streams.iter().all(|s| s.rate_iops.is_none());
    let value = |s: &StreamPlan| match s.rate_iops {
        Some(r) => (true, r),
        None => (false, s.weight.unwrap_or(1) as f64),
    };
    let total = |rated: bool| -> f64 {
        streams
            .iter()
            .map(value)
            .filter(|(k, _)| one_kind || *k == rated)
            .map(|(_, v)| v)
            .sum()
    };
    streams
        .iter()
        .map(|s| {
            let (k, v) = value(s);
            (!one_kind && k, v / total(k).max(f64::MIN_POSITIVE))
        })
        .collect()
}

/// `rest 4k:40,16k:30,32k:30 70% read 50% random (50% of I/O)`.
fn describe_stream(s: &StreamPlan, share: f64) -> String {
    let bs = if s.bs.entries.len() == 1 {
        s.bs.entries[0].0.to_string()
    } else {
        s.bs.entries
            .iter()
            .map(|(b, w)| format!("{b}:{w}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "{} {bs} {}% read {}% random ({:.0}% of I/O)",
        s.name,
        s.read_pct,
        s.random_pct,
        share * 100.0
    )
}

/// `vdi-boot (seq-read 64k:50,… ; …)`, groups joined by ` + `.
fn describe_groups(plans: &[&Plan]) -> String {
    plans
        .iter()
        .map(|p| {
            let m = mix(&p.streams);
            let streams = p
                .streams
                .iter()
                .zip(m)
                .map(|(s, (_, share))| describe_stream(s, share))
                .collect::<Vec<_>>()
                .join("; ");
            format!("{} ({streams})", p.name)
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// What a plan prints, JSON or text.
struct Sized<'a> {
    what: &'static str,
    /// "desktops" or "SQL VMs"; `key` the JSON key of the count.
    unit: &'static str,
    key: &'static str,
    per_key: &'static str,
    per: f64,
    label: String,
    profile: String,
    sizing: Sizing,
    units: u64,
    reference: Option<(u64, u64, u64)>,
    b: &'a Basis,
}

impl Sized<'_> {
    fn json(&self, c: &PlanCommon) -> serde_json::Value {
        let b = self.b;
        let mut v = serde_json::json!({
            "plan": self.what,
            "phase": self.label,
            "sizing": self.sizing.name(),
            "profile": self.profile,
            "run_profile": b.run_profile,
            self.key: self.units,
            "iops": b.iops,
            self.per_key: self.per,
            "mbps": b.mbps,
            "run_id": b.run_id,
            "objectives": c.search.slo.iter().map(|o| o.to_string()).collect::<Vec<_>>(),
            "reference": self.reference.map(|(size, times, units)| serde_json::json!({
                "size": size,
                "multiple": times,
                self.key: units,
            })),
            "notices": b.notices,
        });
        if let Some(r) = &b.search {
            v["find_max"] = crate::run::find_max::report_json(r);
        }
        v
    }

    fn text(&self) -> String {
        let b = self.b;
        let mut t = String::new();
        if let Some(r) = &b.search {
            t.push_str(&report_table(r));
            t.push('\n');
        }
        let how = match self.sizing {
            Sizing::Objectives => "at the objectives",
            Sizing::AtPeak => "at peak, no latency objective",
            Sizing::FromRun => "from a stored run",
        };
        t.push_str(&format!(
            "plan {} ({}, {how}): {} {} = {} IOPS ÷ {} IOPS per {}; {:.1} MB/s{}\n",
            self.what,
            self.label,
            group_thousands(self.units),
            self.unit,
            group_thousands(b.iops.round() as u64),
            self.per,
            if self.what == "vdi" { "desktop" } else { "VM" },
            b.mbps,
            b.run_id
                .as_ref()
                .map_or(String::new(), |id| format!(" (run {id})")),
        ));
        if let Some((size, times, units)) = self.reference {
            t.push_str(&format!(
                "reference: {times} × the {}-{} reference = {} {}\n",
                group_thousands(size),
                if self.what == "vdi" { "desktop" } else { "VM" },
                group_thousands(units),
                self.unit,
            ));
        }
        t
    }
}

pub fn run(cmd: PlanCmd) -> Result<i32, Exit> {
    let (what, unit, key, per_key, per, profile, label, c) = match &cmd {
        PlanCmd::Vdi(v) => {
            if v.worker_type.is_some() && v.phase != Phase::Steady {
                return Err(Exit::input(
                    "--worker-type: applies to --phase steady only (the other phases have one per-desktop figure)",
                ));
            }
            let (profile, default) = phase_defaults(v.phase, v.worker_type);
            let per = per_unit("--per-desktop-iops", v.per_desktop_iops, default)?;
            let phase = v
                .phase
                .to_possible_value()
                .map(|p| p.get_name().to_string())
                .unwrap_or_default();
            (
                "vdi",
                "desktops",
                "desktops",
                "per_desktop_iops",
                per,
                profile,
                phase,
                &v.common,
            )
        }
        PlanCmd::Sql(s) => {
            let per = per_unit("--per-vm-iops", s.per_vm_iops, SQL_PER_VM_IOPS)?;
            (
                "sql",
                "SQL VMs",
                "vms",
                "per_vm_iops",
                per,
                "vmfleet-sql".to_string(),
                "sql".to_string(),
                &s.common,
            )
        }
    };
    let sizing = Sizing::of(c)?;
    let (b, code) = basis(c, sizing, profile.clone(), what)?;
    for n in &b.notices {
        eprintln!("notice: {n}");
    }
    let units = units_supported(b.iops, per);
    let sized = Sized {
        what,
        unit,
        key,
        per_key,
        per,
        label,
        profile: c.run.profile.clone().unwrap_or(profile),
        sizing,
        units,
        reference: c.reference.map(|size| {
            let (times, at) = reference_multiple(units, size);
            (size, times, at)
        }),
        b: &b,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if c.run.json {
        serde_json::to_writer_pretty(&mut out, &sized.json(c))
            .map_err(std::io::Error::other)
            .and_then(|_| writeln!(out))
    } else {
        write!(out, "{}", sized.text())
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| Exit::failure(format!("writing the plan: {e}")))?;
    Ok(code)
}

/// 12071 → "12,071".
fn group_thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(12071), "12,071");
        assert_eq!(group_thousands(176242), "176,242");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1000), "1,000");
        assert_eq!(group_thousands(0), "0");
    }

    #[test]
    fn phases_have_their_published_figures() {
        assert_eq!(
            phase_defaults(Phase::TuesdayLogin, None),
            ("vdi-tuesday-login".into(), 14.6)
        );
        assert_eq!(phase_defaults(Phase::Boot, None).1, 78.5);
        assert_eq!(phase_defaults(Phase::MondayLogin, None).1, 20.7);
        assert_eq!(
            phase_defaults(Phase::Steady, Some(WorkerType::Power)),
            ("xray-vdi-power".into(), 26.0)
        );
        assert_eq!(phase_defaults(Phase::Steady, None).1, 12.0);
        assert_eq!(phase_defaults(Phase::Steady, Some(WorkerType::Task)).1, 8.0);
    }

    #[test]
    fn units_are_whole_and_rounded_down() {
        // The S2D report's figure: 176,242 Tuesday-login IOPS ÷ 14.6 = 12,071.37.
        assert_eq!(units_supported(176_242.0, 14.6), 12_071);
        // 12,071 × 14.6 = 176,236.6 carries 12,071; a tenth of an IOPS less does not.
        assert_eq!(units_supported(176_236.6, 14.6), 12_071);
        assert_eq!(units_supported(176_236.5, 14.6), 12_070);
        assert_eq!(units_supported(14.5, 14.6), 0);
        // 21 × 14.6 in binary floating point is 306.59999999999997, and ÷ 14.6 gives
        // 20.999999999999996: still 21 desktops, not 20.
        let iops = 21.0 * 14.6;
        assert!(iops / 14.6 < 21.0);
        assert_eq!(units_supported(iops, 14.6), 21);
        assert_eq!(units_supported(f64::NAN, 14.6), 0);
        assert_eq!(units_supported(0.0, 14.6), 0);
    }

    #[test]
    fn the_reference_multiple_is_whole() {
        // "8 times the 1,500-desktop reference".
        assert_eq!(reference_multiple(12_071, 1_500), (8, 12_000));
        assert_eq!(reference_multiple(1_499, 1_500), (0, 0));
        assert_eq!(reference_multiple(3_000, 1_500), (2, 3_000));
        assert_eq!(reference_size("1500"), Ok(1500));
        assert!(reference_size("0").unwrap_err().contains("at least 1"));
        assert!(reference_size("-3").is_err());
        assert!(reference_size("1.5").is_err());
    }

    fn stream(name: &str, read: f64, weight: Option<u32>, rate: Option<f64>) -> StreamPlan {
        StreamPlan {
            name: name.into(),
            bs: iofleet_profile::BlockSizes::fixed(iofleet_profile::Bytes(4096)),
            read_pct: read,
            random_pct: 100.0,
            align: iofleet_profile::Bytes(4096),
            weight,
            rate_iops: rate,
            qd: None,
            locality: iofleet_profile::Locality::Uniform,
            working_set_pct: 100.0,
            disks: vec![0],
        }
    }

    #[test]
    fn a_closed_loop_run_of_rated_streams_is_the_same_workload() {
        // X-Ray's rated streams, and the same streams as a closed-loop run weighs them.
        let rated = [
            stream("read", 100.0, None, Some(6.0)),
            stream("write", 0.0, None, Some(6.0)),
        ];
        let weighed = [
            stream("read", 100.0, Some(1000), None),
            stream("write", 0.0, Some(1000), None),
        ];
        assert_eq!(streams_difference(&weighed, &rated), None);
        // Another mix, or another read share, is another workload.
        let other = [
            stream("read", 100.0, Some(1000), None),
            stream("write", 0.0, Some(500), None),
        ];
        let why = streams_difference(&other, &rated).unwrap();
        assert!(
            why.contains("stream read") && why.contains("67% of I/O"),
            "{why}"
        );
        let other = [
            stream("read", 90.0, None, Some(6.0)),
            stream("write", 0.0, None, Some(6.0)),
        ];
        assert!(streams_difference(&other, &rated)
            .unwrap()
            .contains("90% read"));
        assert!(streams_difference(&rated[..1], &rated)
            .unwrap()
            .contains("1 streams instead of 2"));
    }
}
