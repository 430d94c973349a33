//! A fio job file of several `stonewall` phases under `iofleet run`: the phases run one
//! after another, each a measured run of its own, saved in the results store like a
//! step of `iofleet sweep` (named `NAME/phaseN`, labelled `fio-phase=N`). Each phase is
//! exactly `iofleet run FILE --fio-job JOB…` with that phase's jobs, so its stored
//! arguments rerun it alone. The table prints each phase's result as it ends;
//! `--output-format fio-json|fio-json+` prints one document listing every phase's jobs
//! with their `groupid`s numbered on, as fio does (`fio_json::export_phases`).
//!
//! Flags that describe one result (`--output`, `--output-format json`, `--json`), and
//! `--no-save`, are refused before anything runs. `--metrics-listen` (and `--ui`) serve
//! the whole file: one listener and live view for every phase (`Session`). `sweep`,
//! `find-max` and `verify` refuse such a file (`fio_job::groups`).

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use iofleet_report::fio_json::{self, FioFlavor, FioHists};
use iofleet_stats::result::RunResult;

use crate::args::{OutputFormat, RunArgs};
use crate::exit::Exit;
use crate::run::fio_job::Phase;
use crate::run::resolve::{ctrl_c_flag, exit_code, resolve};
use crate::run::session::Session;
use crate::web::step::{Step, StepKind};

/// The label each phase's stored run carries: its number, from 1.
pub(crate) const PHASE_LABEL: &str = "fio-phase";

/// A job file of several phases: its path, phases and mapping notices.
pub(crate) struct Phased {
    path: PathBuf,
    phases: Vec<Phase>,
    notices: Vec<String>,
}

/// The job file's phases when it has more than one (None: run it as one run).
pub(crate) fn several(a: &RunArgs) -> Result<Option<Phased>, Exit> {
    let Some(path) = crate::run::fio_job::job_file(a) else {
        return Ok(None);
    };
    let file = crate::run::fio_job::phases(a, &a.ov, &path)?;
    Ok((file.phases.len() > 1).then_some(Phased {
        path,
        phases: file.phases,
        notices: file.notices,
    }))
}

/// `a` narrowed to one phase: its jobs only, saved under the phase's name and label.
fn phase_args(a: &RunArgs, p: &Phase, n: usize, base: &str) -> RunArgs {
    let mut pa = a.clone();
    pa.fio_job = p.jobs.clone();
    pa.save.name = Some(format!("{base}/phase{n}"));
    pa.save.labels.push((PHASE_LABEL.into(), n.to_string()));
    pa
}

fn refuse(a: &RunArgs, phases: usize) -> Result<(), Exit> {
    let why = |flag: &str, what: &str| {
        Err(Exit::input(format!(
            "{flag}: the job file has {phases} stonewall phases, each run and saved as a run of its own; {what}"
        )))
    };
    if a.output.is_some() {
        return why(
            "--output",
            "export each from the results store (iofleet results export)",
        );
    }
    if a.json || a.output_format == Some(OutputFormat::Json) {
        return why(
            if a.json {
                "--json"
            } else {
                "--output-format json"
            },
            "export each from the results store, or use --output-format fio-json",
        );
    }
    if a.save.no_save {
        return why("--no-save", "they are read back from the results store");
    }
    if a.save.labels.iter().any(|(k, _)| k == PHASE_LABEL) {
        return Err(Exit::input(format!(
            "--label {PHASE_LABEL}: set by iofleet on each phase of a job file"
        )));
    }
    Ok(())
}

/// Run (or with `--dry-run`, print) every phase in order.
pub(crate) fn run(a: &RunArgs, file: Phased) -> Result<i32, Exit> {
    let Phased {
        path,
        phases,
        notices,
    } = file;
    refuse(a, phases.len())?;
    if a.dry_run && !a.quiet {
        for n in &notices {
            eprintln!("note: {}", iofleet_report::text::escape_lines(n));
        }
    }
    let base = a.save.name.clone().unwrap_or_else(|| {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        stem.unwrap_or_else(|| "fio".into())
    });
    let n = phases.len();
    // Every phase resolves before the first one runs: a bad phase fails fast.
    let mut steps = Vec::with_capacity(n);
    for (i, p) in phases.iter().enumerate() {
        let pa = phase_args(a, p, i + 1, &base);
        // (Quiet: the file's notices are printed once, above.)
        let mut q = pa.clone();
        q.quiet = true;
        let (groups, settings) = resolve(&q)?;
        steps.push((pa, groups, settings));
    }
    let heading = |i: usize| {
        let p = &phases[i];
        let at = match &p.stonewall {
            Some(l) => format!(" (stonewall at {l})"),
            None => String::new(),
        };
        format!("fio phase {}/{n}{at}: job(s) {}", i + 1, p.jobs.join(", "))
    };
    let fio = matches!(
        a.output_format,
        Some(OutputFormat::FioJson | OutputFormat::FioJsonPlus)
    );
    let label = |i: usize| format!("job(s) {}", phases[i].jobs.join(", "));
    let mut exit = |pa: &RunArgs, r: &RunResult, stop: &AtomicBool| {
        if fio {
            Ok(exit_code(r, stop))
        } else {
            crate::run::output::print_and_exit_code(pa, r, None, stop)
        }
    };
    let Some((code, done)) = run_planned(a, steps, &heading, &label, &mut exit)? else {
        return Ok(0);
    };
    if fio {
        print_fio(a, &done)?;
    }
    Ok(code)
}

/// A step measured: its arguments and result.
pub(crate) type Measured = (RunArgs, RunResult);

/// One resolved step of a file: its arguments, groups and settings.
pub(crate) type Planned = (
    RunArgs,
    Vec<iofleet_profile::GroupPlan>,
    iofleet_fleet::RunSettings,
);

/// A file's steps (fio phases, vdbench `rd`s), each resolved: with `--dry-run` each plan
/// is printed under its `heading` (None); else each is measured in turn in one session,
/// announced as a phase with its `label`, until Ctrl-C. `exit` prints a step's result as
/// the format asks and gives its exit code; the first non-zero one is the command's.
pub(crate) fn run_planned(
    a: &RunArgs,
    steps: Vec<Planned>,
    heading: &dyn Fn(usize) -> String,
    label: &dyn Fn(usize) -> String,
    exit: &mut dyn FnMut(&RunArgs, &RunResult, &AtomicBool) -> Result<i32, Exit>,
) -> Result<Option<(i32, Vec<Measured>)>, Exit> {
    if a.dry_run {
        for (i, (pa, groups, settings)) in steps.into_iter().enumerate() {
            println!("# {}", iofleet_report::text::escape(&heading(i)));
            crate::run::output::dry_run(&pa, &groups, settings)?;
        }
        return Ok(None);
    }
    let n = steps.len();
    let mut live = Session::open(a)?;
    let stop = ctrl_c_flag();
    let mut done: Vec<Measured> = Vec::new();
    let mut code = 0;
    for (i, (pa, groups, settings)) in steps.into_iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        if !a.quiet {
            eprintln!("{}", iofleet_report::text::escape(&heading(i)));
        }
        live.announce(&Step {
            kind: StepKind::Phase,
            index: i as u32 + 1,
            of: Some(n as u32),
            at_most: false,
            label: label(i),
            rate_iops: crate::run::resolve::offered_rate(&groups),
        });
        let r = live.measure_step(&pa, &groups, settings, &stop)?;
        let c = exit(&pa, &r, &stop)?;
        if code == 0 {
            code = c;
        }
        done.push((pa, r));
    }
    live.finish();
    Ok(Some((code, done)))
}

/// One fio document of every phase run, with each run's histograms from the store.
fn print_fio(a: &RunArgs, done: &[(RunArgs, RunResult)]) -> Result<(), Exit> {
    let mut flavor = if a.output_format == Some(OutputFormat::FioJsonPlus) {
        FioFlavor::JsonPlus
    } else {
        FioFlavor::Json
    };
    let mut analyses = Vec::new();
    for (pa, r) in done {
        match crate::run::output::stored_hists(pa, r) {
            Ok(h) => analyses.push(Some(h)),
            Err(e) => {
                eprintln!(
                    "warning: {}",
                    iofleet_report::text::escape_lines(&e.to_string())
                );
                flavor = FioFlavor::Json;
                analyses.push(None);
            }
        }
    }
    let runs: Vec<(&RunResult, Option<FioHists<'_>>)> = done
        .iter()
        .zip(&analyses)
        .map(|((_, r), h)| {
            let h = h.as_ref().map(|h| FioHists {
                fleet: [&h.read_hist, &h.write_hist],
                hosts: &h.host_hists,
                groups: &h.group_hists,
            });
            (r, h)
        })
        .collect();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    fio_json::export_phases(&runs, flavor, &mut out)
        .and_then(|_| out.flush())
        .map_err(|e| Exit::failure(format!("writing the result: {e}")))
}
