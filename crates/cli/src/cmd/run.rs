//! `iofleet run`: resolve the profile (or, without one, the default shape of
//! `iofleet_profile::flags`) with the command-line overrides (`session::resolve`), then
//! either print the launcher's plan (`--dry-run`) or measure once through the session
//! (in rounds with `--steady-state`) and print the result in the `--output-format`
//! asked for (`crate::run::output`). A fio job file of several stonewall phases runs
//! phase by phase (`crate::run::fio_phases`), a vdbench parameter file of several
//! steps step by step (`crate::run::vdbench_steps`).

use std::fs::File;
use std::io::BufWriter;

use clap::Args;
use iofleet_fleet::RunSettings;
use iofleet_profile::GroupPlan;

use crate::args::{LiveInputs, RunArgs};
use crate::exit::Exit;
use crate::run::resolve::{ctrl_c_flag, resolve};
use crate::run::session::Session;
use crate::run::{fio_phases, output, steady, vdbench_steps};

/// `iofleet run`: the workload and run flags every workload command takes, and what
/// only `run`'s live view draws.
#[derive(Args, Debug)]
pub struct RunCmd {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub live: LiveInputs,
}

pub fn run(c: RunCmd) -> Result<i32, Exit> {
    let a = RunArgs {
        live: c.live,
        ..c.run
    };
    steady::check_args(&a)?;
    output::check_output_format(&a)?;
    // A fio job file of several stonewall phases: one run per phase.
    if let Some(file) = fio_phases::several(&a)? {
        return fio_phases::run(&a, file);
    }
    // A vdbench parameter file of several steps: one run per step.
    if let Some(file) = vdbench_steps::several(&a)? {
        return vdbench_steps::run(&a, file);
    }
    let (groups, settings) = resolve(&a)?;
    if a.dry_run {
        return output::dry_run(&a, &groups, settings);
    }
    execute(a, groups, settings)
}

/// The run itself: outputs, Ctrl-C, the measurement, then the result and exit code.
fn execute(a: RunArgs, groups: Vec<GroupPlan>, settings: RunSettings) -> Result<i32, Exit> {
    // Open the JSON output file (--output) before any I/O, so a bad path fails early.
    let mut file = match &a.output {
        Some(p) => {
            Some(BufWriter::new(File::create(p).map_err(|e| {
                Exit::input(format!("--output {}: {e}", p.display()))
            })?))
        }
        None => None,
    };
    // The listener and live view, once for every round of --steady-state.
    let mut live = Session::open(&a)?;
    live.close_after_one = !a.steady_state;
    let stop = ctrl_c_flag();
    let result = live.measure_step(&a, &groups, settings, &stop)?;
    live.finish();
    output::print_and_exit_code(&a, &result, file.as_mut(), &stop)
}
