//! `iofleet run`: resolve the profile (or, without one, the default shape of
//! `iofleet_profile::flags`) with the command-line overrides (`session::resolve`), then
//! either print the launcher's plan (`--dry-run`, see `dry_run`) or measure through the
//! session and export the result.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::AtomicBool;

use iofleet_fleet::RunSettings;
use iofleet_profile::GroupPlan;
use iofleet_report::{JsonExporter, TableExporter};
use iofleet_stats::result::RunResult;

use crate::args::RunArgs;
use crate::dry_run;
use crate::session::{ctrl_c_flag, exit_code, fleet_exit, launcher_for, resolve};
use crate::Exit;

pub fn run(a: RunArgs) -> Result<i32, Exit> {
    crate::steady::check_args(&a)?;
    let (groups, settings) = resolve(&a)?;
    if a.dry_run {
        if let Some(path) = a
            .hosts
            .as_deref()
            .filter(|p| iofleet_fleet::kube::is_kube_file(p))
        {
            return dry_run::print_kube(path, &groups);
        }
        let plan = launcher_for(&a, settings.clone())?
            .plan(&groups)
            .map_err(fleet_exit)?;
        return dry_run::print(&plan, &settings);
    }
    execute(a, groups, settings)
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
    let stop = ctrl_c_flag();
    let result = crate::steady::measure_step(&a, &groups, settings, &stop)?;
    print_and_exit_code(&a, &result, output.as_mut(), &stop)
}

fn print_and_exit_code(
    a: &RunArgs,
    result: &RunResult,
    output: Option<&mut BufWriter<File>>,
    stop: &AtomicBool,
) -> Result<i32, Exit> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let written = if a.json {
        if !a.quiet {
            for n in &result.notices {
                eprintln!("note: {n}");
            }
        }
        JsonExporter.export_in(result, a.conv.convention, &mut out)
    } else {
        TableExporter {
            intervals: a.intervals,
            wide: a.wide,
            disks: false,
        }
        .export_in(result, a.conv.convention, &mut out)
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
