//! `iofleet run`: resolve the profile (or, without one, the default shape of
//! `iofleet_profile::flags`) with the command-line overrides (`session::resolve`), then
//! either print the launcher's plan (`--dry-run`, see `dry_run`) or measure through the
//! session and export the result in the `--output-format` asked for (fio's layouts
//! read the fleet's merged histograms back from the results store, where the run was
//! just saved).

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
use crate::dry_run;
use crate::live_session::LiveSession;
use crate::session::{ctrl_c_flag, exit_code, fleet_exit, launcher_for, resolve};
use crate::Exit;

pub fn run(a: RunArgs) -> Result<i32, Exit> {
    crate::steady::check_args(&a)?;
    check_output_format(&a)?;
    // A fio job file of several stonewall phases: one run per phase.
    if let Some(file) = crate::fio_phases::several(&a)? {
        return crate::fio_phases::run(&a, file);
    }
    let (groups, settings) = resolve(&a)?;
    if a.dry_run {
        return dry_run(&a, &groups, settings);
    }
    execute(a, groups, settings)
}

/// `--dry-run`: the launcher's plan (a Kubernetes fleet's: the objects it would create).
pub(crate) fn dry_run(
    a: &RunArgs,
    groups: &[GroupPlan],
    settings: RunSettings,
) -> Result<i32, Exit> {
    let plan = launcher_for(a)?
        .plan(groups, &settings)
        .map_err(fleet_exit)?;
    dry_run::print(&plan)
}

/// The run itself: outputs, Ctrl-C, the measurement, then the result and exit code.
fn execute(a: RunArgs, groups: Vec<GroupPlan>, settings: RunSettings) -> Result<i32, Exit> {
    // Open the JSON output file before any I/O, so a bad path fails early.
    let mut output = match &a.output {
        Some(p) => {
            Some(BufWriter::new(File::create(p).map_err(|e| {
                Exit::input(format!("--output {}: {e}", p.display()))
            })?))
        }
        None => None,
    };
    // The listener and live view, once for every round of --steady-state.
    let mut live = LiveSession::open(&a)?;
    live.close_after_one = !a.steady_state;
    let stop = ctrl_c_flag();
    let result = crate::steady::measure_step(&a, &groups, settings, &stop, &mut live)?;
    live.finish();
    print_and_exit_code(&a, &result, output.as_mut(), &stop)
}

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
    Ok(exit_code(a, result, stop))
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
fn check_output_format(a: &RunArgs) -> Result<(), Exit> {
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
    let store = crate::record::DbArg {
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
