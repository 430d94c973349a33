//! `iofleet plan vdi|sql`: how many desktops (or SQL VMs) the storage carries. The
//! phase's profile goes through `find-max` under the objectives (or `--from-run` takes
//! a stored run's IOPS instead of measuring), and the capacity rule of the S2D VDI report
//! does the rest: units supported = IOPS at the objective ÷ per-unit IOPS, rounded down
//! (a fraction of a desktop is not supported). The bandwidth is that step's MB/s.
//!
//! The per-unit figures and their sources (BRIEF §5, docs/capacity.md):
//! - VDI phases (NetApp full-clone model, as described in the S2D VDI report): boot
//!   78.5, Monday login 20.7, Tuesday login 14.6 IOPS per desktop;
//! - VDI steady state, Nutanix X-Ray's personas (read + write IOPS per desktop VM):
//!   task 8, knowledge 12, power 26;
//! - SQL: a VM Fleet 2.x SQL VM, 1,500 IOPS of 8K data + 300 IOPS of 32K log = 1,800.

use std::io::Write;

use clap::{Args, Subcommand, ValueEnum};
use iofleet_stats::slo;

use crate::args::RunArgs;
use crate::find_max::{find_max, report_table, SearchArgs};
use crate::record::DbArg;
use crate::Exit;

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
    /// Desktops supported in a VDI phase: the phase's profile through find-max, IOPS at
    /// the objectives ÷ the phase's per-desktop IOPS.
    Vdi(VdiArgs),
    /// SQL VMs supported: vmfleet-sql through find-max, IOPS at the objectives ÷ 1,800
    /// IOPS per VM (VM Fleet's SQL profile).
    Sql(SqlArgs),
}

/// What `plan vdi` and `plan sql` share.
#[derive(Args, Debug)]
pub struct PlanCommon {
    /// Compute from this stored run's IOPS (id, unique prefix, unique name or `latest`)
    /// instead of measuring.
    #[arg(long, value_name = "RUN")]
    pub from_run: Option<String>,
    #[command(flatten)]
    pub search: SearchArgs,
    /// The run flags (engine, targets, fleet shape, --duration, --db ...) apply to every
    /// find-max step; a PROFILE given replaces the phase's own.
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
    /// IOPS one SQL VM needs [default: 1800, VM Fleet 2.x's SQL profile: 1,500 data +
    /// 300 log].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub per_vm_iops: Option<f64>,
    #[command(flatten)]
    pub common: PlanCommon,
}

/// VM Fleet 2.x's SQL VM: 1,500 IOPS of 8K data plus 300 IOPS of 32K log.
pub const SQL_PER_VM_IOPS: f64 = 1800.0;

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

/// Where the IOPS came from.
struct Basis {
    iops: f64,
    mbps: f64,
    run_id: Option<String>,
    /// The find-max output (table or JSON), when measured.
    search: Option<crate::find_max::Report>,
}

/// Whole desktops (or VMs) that `iops` carries at `per` IOPS each: a partial one is not
/// a desktop.
fn units_supported(iops: f64, per: f64) -> f64 {
    (iops / per).floor()
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

/// The IOPS to plan with: a stored run's, or find-max's answer for `profile`.
fn basis(c: &PlanCommon, profile: String, what: &str) -> Result<(Basis, i32), Exit> {
    if let Some(q) = &c.from_run {
        let store = DbArg {
            db: c.run.save.db.clone(),
        }
        .open()
        .map_err(|e| Exit::input(format!("--from-run {q}: {}", e.message)))?;
        let run = crate::stored::load_run(&store, q)
            .map_err(|e| Exit::input(format!("--from-run {q}: {}", e.message)))?;
        let all = &run.result.summary.all;
        // Objectives given with --from-run are checked against the stored run.
        for o in &c.search.slo {
            if let slo::Verdict::Measured {
                value_us,
                met: false,
            } = o.verdict(&run.result.summary)
            {
                eprintln!(
                    "warning: run {} misses {o} ({value_us:.1} µs): its IOPS are not IOPS at the objective",
                    run.id
                );
            }
        }
        return Ok((
            Basis {
                iops: all.iops,
                mbps: all.mbps,
                run_id: Some(run.id),
                search: None,
            },
            0,
        ));
    }
    let mut run = c.run.clone();
    if run.profile.is_none() && run.group.is_empty() {
        run.profile = Some(profile);
    }
    let name =
        run.save.name.clone().unwrap_or_else(|| {
            format!("plan-{what}-{}", run.profile.as_deref().unwrap_or("groups"))
        });
    let report = find_max(&run, &c.search, &name)?;
    let code = report.code;
    let found = report.found();
    let b = Basis {
        iops: report.max_iops().unwrap_or(0.0),
        mbps: found.map_or(0.0, |s| s.result.summary.all.mbps),
        run_id: found.and_then(|s| s.result.stored.as_ref().map(|x| x.id.clone())),
        search: Some(report),
    };
    Ok((b, code))
}

pub fn run(cmd: PlanCmd) -> Result<i32, Exit> {
    let (what, unit, units_key, per_key, per, profile, label, c) = match &cmd {
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
    let (b, code) = basis(c, profile.clone(), what)?;
    let units = units_supported(b.iops, per);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if c.run.json {
        let mut v = serde_json::json!({
            "plan": what,
            "phase": label,
            "profile": if c.from_run.is_some() { None } else { c.run.profile.clone().or(Some(profile)) },
            units_key: units,
            "iops": b.iops,
            per_key: per,
            "mbps": b.mbps,
            "run_id": b.run_id,
            "objectives": c.search.slo.iter().map(|o| o.to_string()).collect::<Vec<_>>(),
        });
        if let Some(r) = &b.search {
            v["find_max"] = crate::find_max::report_json(r);
        }
        serde_json::to_writer_pretty(&mut out, &v)
            .map_err(std::io::Error::other)
            .and_then(|_| writeln!(out))
    } else {
        let mut t = String::new();
        if let Some(r) = &b.search {
            t.push_str(&report_table(r));
            t.push('\n');
        }
        t.push_str(&format!(
            "plan {what} ({label}): {} {unit} = {} IOPS ÷ {per} IOPS per {}; {:.1} MB/s{}\n",
            group_thousands(units),
            group_thousands(b.iops.round()),
            if what == "vdi" { "desktop" } else { "VM" },
            b.mbps,
            b.run_id
                .as_ref()
                .map_or(String::new(), |id| format!(" (run {id})")),
        ));
        write!(out, "{t}")
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| Exit::failure(format!("writing the plan: {e}")))?;
    Ok(code)
}

/// 12071 → "12,071".
fn group_thousands(v: f64) -> String {
    let s = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if v < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(12071.0), "12,071");
        assert_eq!(group_thousands(176242.0), "176,242");
        assert_eq!(group_thousands(999.0), "999");
        assert_eq!(group_thousands(0.0), "0");
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
        // The S2D report's figure: 176,242 Tuesday-login IOPS ÷ 14.6, whole desktops.
        assert_eq!(units_supported(176_242.0, 14.6), 12_071.0);
        assert_eq!(units_supported(14.5, 14.6), 0.0);
    }
}
