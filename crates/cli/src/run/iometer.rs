//! An Iometer configuration file as the workload of a run: `iofleet run FILE.icf` or
//! `--iometer FILE`.
//!
//! Reading and mapping are `iofleet_import::iometer`; this file finds the configuration
//! file among the arguments, picks the steps `--iometer-spec` names (a step, or an access
//! specification to run on the file's workers in place of those assigned), resolves a
//! step's profile with the command-line overrides into the run's one worker group, and
//! hands the mapping notices to the result. A file of several steps (several assigned
//! specifications, or a test that cycles the outstanding I/Os) runs step by step under
//! `iofleet run` (`several`, then `crate::run::fio_phases::run_steps`); every other
//! command takes one step. See docs/iometer.md.

use std::path::{Path, PathBuf};

use iofleet_import::iometer::{self, IometerImport, IometerStep};
use iofleet_profile::{Context, GroupPlan, Overrides, Plan};

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::file_steps::{self, Format, Stepped};

/// How a configuration file's steps are named and picked, and the label each step's
/// stored run carries (its number, from 1).
pub(crate) static FORMAT: Format = Format {
    tool: "Iometer",
    file: "configuration file",
    step_flag: "--iometer-spec",
    label: "iometer-step",
    step_word: "access specification ",
    pick: |a, name| a.iometer_spec = vec![name.to_string()],
};

/// The configuration file the arguments name: `--iometer FILE`, or a PROFILE ending in
/// `.icf` (in any case).
pub(crate) fn file(a: &RunArgs) -> Option<PathBuf> {
    a.iometer.clone().or_else(|| {
        a.profile
            .as_deref()
            .filter(|p| p.to_ascii_lowercase().ends_with(".icf"))
            .map(PathBuf::from)
    })
}

/// Read and map the configuration file at `path`; `names` are steps or access
/// specifications (`--iometer-spec`, `--spec`): the specifications among them (a step
/// `SPEC/oio=N` names its specification) run in place of those the workers are assigned.
pub(crate) fn load(path: &Path, names: &[String]) -> Result<IometerImport, Exit> {
    let specs: Vec<String> = names
        .iter()
        .map(|n| {
            n.rsplit_once("/oio=")
                .map_or(n.as_str(), |(s, _)| s)
                .to_string()
        })
        .collect();
    iometer::read_file_with(path, &specs, &crate::inputs::text).map_err(Exit::input)
}

/// A step's profile resolved with `ov`; an error about a mapped key also names the
/// Iometer setting it came from, unless a flag set the value.
pub(crate) fn resolve(step: &IometerStep, ov: &Overrides, ctx: &Context) -> Result<Plan, Exit> {
    let at = format!("Iometer {} access specification '{}'", step.at, step.name);
    file_steps::resolve_step(
        &at,
        &step.raw,
        ov,
        ctx,
        iometer::parameter_of_key,
        "Iometer",
    )
}

/// The configuration file beside another workload, or `--iometer-spec` without one.
pub(crate) fn refuse_conflicts(a: &RunArgs, icf: bool) -> Result<(), Exit> {
    let other = file_steps::other_workload(a, "--iometer");
    match (icf, other) {
        (true, Some(o)) => Err(Exit::input(format!(
            "an Iometer configuration file is the run's workload; give either it or {o}"
        ))),
        (false, _) if !a.iometer_spec.is_empty() => Err(Exit::input(
            "--iometer-spec applies to an Iometer configuration file (a PROFILE ending in .icf, or --iometer FILE)",
        )),
        _ => Ok(()),
    }
}

/// The steps `names` pick (all when there are none), in file order: a name is a step's
/// (`Database/oio=4`) or its specification's (`Database`).
pub(crate) fn selected<'a>(
    names: &[String],
    imp: &'a IometerImport,
) -> Result<Vec<&'a IometerStep>, Exit> {
    let picks = |s: &IometerStep, n: &String| &s.name == n || &s.spec == n;
    if let Some(name) = names
        .iter()
        .find(|n| !imp.steps.iter().any(|s| picks(s, n)))
    {
        let steps: Vec<&str> = imp.steps.iter().map(|s| s.name.as_str()).collect();
        return Err(file_steps::no_such_step(&FORMAT, name, &steps));
    }
    Ok(imp
        .steps
        .iter()
        .filter(|s| names.is_empty() || names.iter().any(|n| picks(s, n)))
        .collect())
}

/// The run's one worker group from the configuration file (None without one). A file of
/// several steps is refused here: `iofleet run` runs them in turn (`several`).
pub(crate) fn groups(a: &RunArgs, ov: &Overrides) -> Result<Option<Vec<GroupPlan>>, Exit> {
    let path = file(a);
    refuse_conflicts(a, path.is_some())?;
    let Some(path) = path else {
        return Ok(None);
    };
    let imp = load(&path, &a.iometer_spec)?;
    let steps = selected(&a.iometer_spec, &imp)?;
    let [step] = steps.as_slice() else {
        let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        return Err(file_steps::one_step_needed(&FORMAT, &path, &names));
    };
    let plan = resolve(step, ov, &Context { direct: a.direct })?;
    if a.dry_run && !a.quiet {
        for n in notices_of(&imp) {
            eprintln!("note: {}", iofleet_report::text::escape_lines(&n));
        }
    }
    Ok(Some(GroupPlan::single(plan, 0)))
}

/// The mapping notices, with where the targets go.
pub(crate) fn notices_of(imp: &IometerImport) -> Vec<String> {
    let mut out = imp.notices.clone();
    let named: Vec<&str> = imp
        .targets
        .iter()
        .map(String::as_str)
        .filter(|t| !t.is_empty())
        .collect();
    if !named.is_empty() {
        out.push(format!(
            "Iometer target(s) {}: one disk each, made under the run's target (--target); the named targets are not used",
            named.join(", ")
        ));
    }
    out
}

/// The mapping notices of the run's configuration file, for the result.
pub(crate) fn notices(a: &RunArgs) -> Vec<String> {
    match file(a).map(|p| load(&p, &a.iometer_spec)) {
        Some(Ok(imp)) => notices_of(&imp),
        _ => Vec::new(),
    }
}

/// The configuration file's steps when `iofleet run` has more than one to run.
pub(crate) fn several(a: &RunArgs) -> Result<Option<Stepped>, Exit> {
    let Some(path) = file(a) else {
        return Ok(None);
    };
    refuse_conflicts(a, true)?;
    let imp = load(&path, &a.iometer_spec)?;
    let steps: Vec<String> = selected(&a.iometer_spec, &imp)?
        .iter()
        .map(|s| s.name.clone())
        .collect();
    Ok((steps.len() > 1).then_some(Stepped {
        format: &FORMAT,
        path,
        steps,
        notices: notices_of(&imp),
    }))
}
