//! A vdbench parameter file as the workload of a run: `iofleet run FILE.vdb` or
//! `--vdbench FILE`.
//!
//! Reading and mapping are `iofleet_import::vdbench`; this file finds the parameter file
//! among the arguments, picks the steps `--vdbench-step` names, resolves a step's
//! profile with the command-line overrides into the run's one worker group, and hands
//! the mapping notices to the result. A file of several steps (several `rd`s, or an
//! `rd` with loops) runs step by step under `iofleet run`, each a measured run saved in
//! the results store, as a fio job file's phases are (`several`, then
//! `crate::run::file_steps`); every other command takes one step. See docs/vdbench.md.

use std::path::{Path, PathBuf};

use iofleet_import::vdbench::{self, VdbenchImport, VdbenchStep};
use iofleet_profile::{Context, GroupPlan, Overrides, Plan};

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::file_steps::{self, Format, Stepped};

/// How a parameter file's steps are named and picked, and the label each step's stored
/// run carries (its number, from 1).
pub(crate) static FORMAT: Format = Format {
    tool: "vdbench",
    file: "parameter file",
    step_flag: "--vdbench-step",
    label: "vdbench-step",
    step_word: "rd=",
    pick: |a, name| a.vdbench_step = vec![name.to_string()],
};

/// The parameter file the arguments name: `--vdbench FILE`, or a PROFILE ending in
/// `.vdb`.
pub(crate) fn file(a: &RunArgs) -> Option<PathBuf> {
    a.vdbench.clone().or_else(|| {
        a.profile
            .as_deref()
            .filter(|p| p.ends_with(".vdb"))
            .map(PathBuf::from)
    })
}

/// Read and map the parameter file at `path`.
pub(crate) fn load(path: &Path) -> Result<VdbenchImport, Exit> {
    vdbench::read_file_with(path, &crate::inputs::text).map_err(Exit::input)
}

/// A step's profile resolved with `ov`; an error about a mapped key also names the
/// vdbench parameter it came from, unless a flag set the value.
pub(crate) fn resolve(step: &VdbenchStep, ov: &Overrides, ctx: &Context) -> Result<Plan, Exit> {
    let at = format!("vdbench {} rd={}", step.at, step.name);
    file_steps::resolve_step(
        &at,
        &step.raw,
        ov,
        ctx,
        vdbench::parameter_of_key,
        "vdbench",
    )
}

/// The parameter file beside another workload, or `--vdbench-step` without one.
pub(crate) fn refuse_conflicts(a: &RunArgs, vdb: bool) -> Result<(), Exit> {
    let other = file_steps::other_workload(a, "--vdbench");
    match (vdb, other) {
        (true, Some(o)) => Err(Exit::input(format!(
            "a vdbench parameter file is the run's workload; give either it or {o}"
        ))),
        (false, _) if !a.vdbench_step.is_empty() => Err(Exit::input(
            "--vdbench-step applies to a vdbench parameter file (a PROFILE ending in .vdb, or --vdbench FILE)",
        )),
        _ => Ok(()),
    }
}

/// The steps `--vdbench-step` names (all when it is not given), in file order.
pub(crate) fn selected<'a>(
    a: &RunArgs,
    imp: &'a VdbenchImport,
) -> Result<Vec<&'a VdbenchStep>, Exit> {
    if let Some(name) = a
        .vdbench_step
        .iter()
        .find(|n| !imp.steps.iter().any(|s| &s.name == *n))
    {
        let names: Vec<&str> = imp.steps.iter().map(|s| s.name.as_str()).collect();
        return Err(file_steps::no_such_step(&FORMAT, name, &names));
    }
    Ok(imp
        .steps
        .iter()
        .filter(|s| a.vdbench_step.is_empty() || a.vdbench_step.contains(&s.name))
        .collect())
}

/// The run's one worker group from the parameter file (None without one). A file of
/// several steps is refused here: `iofleet run` runs them in turn (`several`).
pub(crate) fn groups(a: &RunArgs, ov: &Overrides) -> Result<Option<Vec<GroupPlan>>, Exit> {
    let path = file(a);
    refuse_conflicts(a, path.is_some())?;
    let Some(path) = path else {
        return Ok(None);
    };
    let imp = load(&path)?;
    let steps = selected(a, &imp)?;
    let [step] = steps.as_slice() else {
        let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        return Err(file_steps::one_step_needed(&FORMAT, &path, &names));
    };
    let plan = resolve(step, ov, &Context { direct: a.direct })?;
    if a.dry_run && !a.quiet {
        for n in notices_of(a, &imp) {
            eprintln!("note: {}", iofleet_report::text::escape_lines(&n));
        }
    }
    Ok(Some(GroupPlan::single(plan, 0)))
}

/// The mapping notices, with where the luns go and how the direct-I/O setting compares
/// with the file's `openflags`.
pub(crate) fn notices_of(a: &RunArgs, imp: &VdbenchImport) -> Vec<String> {
    let mut out = imp.notices.clone();
    if !imp.luns.is_empty() {
        out.push(format!(
            "vdbench lun(s) {}: one disk each, made under the run's target (--target); the named luns are not used",
            imp.luns.join(", ")
        ));
    }
    match (imp.direct, a.direct) {
        (false, true) => out.push(
            "vdbench: no openflags=o_direct, so vdbench would go through the OS cache; this run uses O_DIRECT (pass --direct false to match)".into(),
        ),
        (true, false) => out.push(
            "vdbench: openflags=o_direct bypasses the OS cache, but this run has --direct false".into(),
        ),
        _ => {}
    }
    out
}

/// The mapping notices of the run's parameter file, for the result.
pub(crate) fn notices(a: &RunArgs) -> Vec<String> {
    match file(a).map(|p| load(&p)) {
        Some(Ok(imp)) => notices_of(a, &imp),
        _ => Vec::new(),
    }
}

/// The parameter file's steps when `iofleet run` has more than one to run.
pub(crate) fn several(a: &RunArgs) -> Result<Option<Stepped>, Exit> {
    let Some(path) = file(a) else {
        return Ok(None);
    };
    refuse_conflicts(a, true)?;
    let imp = load(&path)?;
    let steps: Vec<String> = selected(a, &imp)?.iter().map(|s| s.name.clone()).collect();
    let notices = notices_of(a, &imp);
    Ok((steps.len() > 1).then_some(Stepped {
        format: &FORMAT,
        path,
        steps,
        notices,
    }))
}
