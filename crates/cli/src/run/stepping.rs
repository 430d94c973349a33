//! One step of a stepping command (`sweep --rate-curve`, `find-max`, `plan --at-peak`):
//! the run arguments with the step's name, labels and seed, measured once or in
//! steady-state rounds (`Session::measure_step`), and the exit code it earns; and the run
//! flags such a command refuses before anything runs (`check_step_args`).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iofleet_profile::GroupPlan;
use iofleet_stats::result::RunResult;

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::resolve::{exit_code, resolve};
use crate::run::session::Session;

impl Session {
    /// Measure one step: `a` with `labels` added, its groups `groups`. Returns the result
    /// and its exit code.
    pub(crate) fn step(
        &mut self,
        a: &RunArgs,
        groups: &[GroupPlan],
        name: String,
        labels: Vec<(String, String)>,
        seed: u64,
        stop: &Arc<AtomicBool>,
    ) -> Result<(RunResult, i32), Exit> {
        let mut a = a.clone();
        a.save.name = Some(name);
        a.save.labels.extend(labels);
        a.seed = seed;
        a.ov.rate = None;
        let (_, settings) = resolve(&a)?;
        // With --steady-state, every step is measured in rounds until steady.
        let r = self.measure_step(&a, groups, settings, stop)?;
        let code = exit_code(&r, stop);
        Ok((r, code))
    }
}

/// The run arguments every stepping command refuses, and the labels it sets itself.
pub(crate) fn check_step_args(a: &RunArgs, own: &[&str]) -> Result<(), Exit> {
    crate::run::steady::check_args(a)?;
    if a.dry_run || a.output.is_some() || a.output_format.is_some() {
        return Err(Exit::input(
            "--dry-run, --output and --output-format apply to `iofleet run`; each step is saved in the results store",
        ));
    }
    if let Some((k, _)) = a
        .save
        .labels
        .iter()
        .find(|(k, _)| own.contains(&k.as_str()))
    {
        return Err(Exit::input(format!(
            "--label {k}: this command sets this label on every step"
        )));
    }
    Ok(())
}
