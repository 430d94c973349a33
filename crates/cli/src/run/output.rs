//! What `iofleet run` prints: with `--dry-run`, the launcher's plan (`dry_run`, formatted
//! by `crate::run::dry_run`); else the result in the `--output-format` asked for (fio's
//! layouts read the fleet's merged histograms back from the results store, where the
//! run was just saved) and the exit code it earns. Shared by the run command
//! (`crate::cmd::run`) and the phases of a fio job file (`crate::run::fio_phases`).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::AtomicBool;

use iofleet_fleet::RunSettings;
use iofleet_profile::GroupPlan;
use iofleet_report::fio_json::{self, FioFlavor, FioHists};
use iofleet_report::{JsonExporter, TableExporter};
use iofleet_stats::result::RunResult;
use iofleet_store::Analysis;

use crate::args::{OutputFormat, RunArgs};
use crate::exit::Exit;
use crate::run::dry_run;
use crate::run::resolve::{exit_code, fleet_exit, launcher_for};

/// `--dry-run`: the launcher's plan (a Kubernetes fleet's: the objects it would create).
pub(crate) fn dry_run(
    a: &RunArgs,
    groups: &[GroupPlan],
    settings: RunSettings,
) -> Result<i32, Exit> {
    // A joined fleet plans on its expected ranks; nothing listens in a dry run.
    crate::run::join::check_join_flags(a)?;
    let fleet: Box<dyn iofleet_fleet::Fleet> = match (&a.join.listen, &a.hosts) {
        (Some(_), None) => Box::new(iofleet_fleet::agents::AgentLauncher::new(
            crate::run::join::planned_hosts(a),
        )),
        _ => launcher_for(a)?,
    };
    let plan = fleet.plan(groups, &settings).map_err(fleet_exit)?;
    dry_run::print(&plan)
}

/// The result printed on stdout in the format asked for (and with `--output`, its JSON
/// to that file), and the exit code it earns.
pub(crate) fn print_and_exit_code(
    a: &RunArgs,
    result: &RunResult,
    output: Option<&mut BufWriter<File>>,
    stop: &AtomicBool,
) -> Result<i32, Exit> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let format = output_format(a);
    if format != OutputFormat::Table && !a.quiet {
        for n in &result.notices {
            eprintln!("note: {}", iofleet_report::text::escape_lines(n));
        }
    }
    let written = match format {
        OutputFormat::Json => JsonExporter.export_in(result, a.conv.convention, &mut out),
        OutputFormat::Table => TableExporter {
            intervals: a.intervals,
            wide: a.wide,
            disks: false,
        }
        .export_in(result, a.conv.convention, &mut out),
        OutputFormat::FioJson | OutputFormat::FioJsonPlus => {
            let hists = stored_hists(a, result);
            let mut flavor = fio_flavor(format);
            if let Err(e) = &hists {
                eprintln!(
                    "warning: {}",
                    iofleet_report::text::escape_lines(&e.to_string())
                );
                flavor = FioFlavor::Json;
            }
            let hists = hists.ok();
            let h = hists.as_ref().map(|a| FioHists {
                fleet: [&a.read_hist, &a.write_hist],
                hosts: &a.host_hists,
                groups: &a.group_hists,
            });
            fio_json::export(result, h, flavor, &mut out)
        }
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| Exit::failure(format!("writing the result: {e}")))?;
    if let Some(f) = output {
        JsonExporter
            .export_in(result, a.conv.convention, f)
            .and_then(|_| f.flush())
            .map_err(|e| Exit::failure(format!("--output: {e}")))?;
    }
    Ok(exit_code(result, stop))
}

/// The stdout format: `--output-format`, else json with `--json`, else the table.
fn output_format(a: &RunArgs) -> OutputFormat {
    a.output_format.unwrap_or(if a.json {
        OutputFormat::Json
    } else {
        OutputFormat::Table
    })
}

fn fio_flavor(f: OutputFormat) -> FioFlavor {
    if f == OutputFormat::FioJsonPlus {
        FioFlavor::JsonPlus
    } else {
        FioFlavor::Json
    }
}

/// Refuse, before anything runs, an output format the run could not give.
pub(crate) fn check_output_format(a: &RunArgs) -> Result<(), Exit> {
    match a.output_format {
        Some(_) if a.dry_run => Err(Exit::input(
            "--output-format: --dry-run prints the plan, not a result",
        )),
        Some(OutputFormat::FioJsonPlus) if a.save.no_save => Err(Exit::input(
            "--output-format fio-json+: the latency bins come from the run's histograms in the \
             results store; drop --no-save (or use fio-json)",
        )),
        _ => Ok(()),
    }
}

/// The run read back from the results store it was saved in, for its merged histograms
/// of the measured phase (fleet, hosts, groups): the result itself holds none.
pub(crate) fn stored_hists(a: &RunArgs, result: &RunResult) -> Result<Analysis, String> {
    let why = |e: String| {
        format!(
            "fio JSON without the run's histograms (percentiles: p50 to p99.99 only, no bins): {e}"
        )
    };
    let Some(stored) = &result.stored else {
        return Err(why("the run was not saved in the results store".into()));
    };
    let store = crate::store::record::DbArg {
        db: a.save.db.clone(),
    }
    .open()
    .map_err(|e| why(e.message))?;
    let analysis = store
        .resolve(&stored.id)
        .and_then(|id| store.analyze(&id))
        .map_err(|e| why(e.to_string()))?;
    Ok(analysis)
}
