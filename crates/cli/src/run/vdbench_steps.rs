//! A vdbench parameter file of several steps under `iofleet run` (several `rd`s, or an
//! `rd` with an `iorate` list or `for...` loops): the steps run one after another, each a
//! measured run of its own, saved in the results store like a step of `iofleet sweep`
//! (named `NAME/STEP`, labelled `vdbench-step=N`). Each step is exactly `iofleet run FILE
//! --vdbench-step STEP`, so its stored arguments rerun it alone. Flags that describe one
//! result (`--output`, `--json`, an `--output-format` other than the table) and
//! `--no-save` are refused before anything runs. Reading and one step's groups are
//! `crate::run::vdbench`'s.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use crate::args::{OutputFormat, RunArgs};
use crate::exit::Exit;
use crate::run::resolve::resolve;
use crate::run::vdbench::{file as vdbench_file, load, notices_of, refuse_conflicts, selected};

/// The label each step's stored run carries: its number, from 1.
pub(crate) const STEP_LABEL: &str = "vdbench-step";

/// A parameter file of several steps: its path and steps' names.
pub(crate) struct Stepped {
    path: PathBuf,
    steps: Vec<String>,
    notices: Vec<String>,
}

/// The parameter file's steps when `iofleet run` has more than one to run.
pub(crate) fn several(a: &RunArgs) -> Result<Option<Stepped>, Exit> {
    let Some(path) = vdbench_file(a) else {
        return Ok(None);
    };
    refuse_conflicts(a, true)?;
    let imp = load(&path)?;
    let steps: Vec<String> = selected(a, &imp)?.iter().map(|s| s.name.clone()).collect();
    let notices = notices_of(a, &imp);
    Ok((steps.len() > 1).then_some(Stepped {
        path,
        steps,
        notices,
    }))
}

/// Flags that describe one result, and `--no-save`, are refused before anything runs.
fn refuse(a: &RunArgs, steps: usize) -> Result<(), Exit> {
    let why = |flag: &str| {
        Err(Exit::input(format!(
            "{flag}: the parameter file has {steps} steps, each run and saved as a run of its own; export each from the results store (iofleet results export), or run one with --vdbench-step NAME"
        )))
    };
    if a.output.is_some() {
        return why("--output");
    }
    if a.json
        || a.output_format
            .as_ref()
            .is_some_and(|f| *f != OutputFormat::Table)
    {
        return why(if a.json { "--json" } else { "--output-format" });
    }
    if a.save.no_save {
        return why("--no-save");
    }
    if a.save.labels.iter().any(|(k, _)| k == STEP_LABEL) {
        return Err(Exit::input(format!(
            "--label {STEP_LABEL}: set by iofleet on each step of a parameter file"
        )));
    }
    Ok(())
}

/// Run (or with `--dry-run`, print) every step in order.
pub(crate) fn run(a: &RunArgs, file: Stepped) -> Result<i32, Exit> {
    let n = file.steps.len();
    refuse(a, n)?;
    if a.dry_run && !a.quiet {
        for note in &file.notices {
            eprintln!("note: {}", iofleet_report::text::escape_lines(note));
        }
    }
    let base = a.save.name.clone().unwrap_or_else(|| {
        let stem = file
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned());
        stem.unwrap_or_else(|| "vdbench".into())
    });
    // Every step resolves before the first one runs: a bad step fails fast.
    let mut planned = Vec::with_capacity(n);
    for (i, name) in file.steps.iter().enumerate() {
        let mut pa = a.clone();
        pa.vdbench_step = vec![name.clone()];
        pa.save.name = Some(format!("{base}/{name}"));
        pa.save
            .labels
            .push((STEP_LABEL.into(), (i + 1).to_string()));
        let mut q = pa.clone();
        q.quiet = true;
        let (groups, settings) = resolve(&q)?;
        planned.push((pa, groups, settings));
    }
    let heading = |i: usize| format!("vdbench step {}/{n}: rd={}", i + 1, file.steps[i]);
    let label = |i: usize| format!("rd={}", file.steps[i]);
    let mut exit = |pa: &RunArgs, r: &iofleet_stats::result::RunResult, stop: &AtomicBool| {
        crate::run::output::print_and_exit_code(pa, r, None, stop)
    };
    let run = crate::run::fio_phases::run_planned(a, planned, &heading, &label, &mut exit)?;
    Ok(run.map_or(0, |(code, _)| code))
}
