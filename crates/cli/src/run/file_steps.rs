//! A file of steps written for another tool (a vdbench parameter file's `rd`s, an Iometer
//! configuration file's access specifications) under `iofleet run`: the steps run one
//! after another, each a measured run of its own, saved in the results store like a
//! step of `iofleet sweep` (named `NAME/STEP`, labelled with the format's step label and
//! the step's number). Each step is exactly `iofleet run FILE` with the format's step
//! flag naming it, so its stored arguments rerun it alone. Flags that describe one result
//! (`--output`, `--json`, an `--output-format` other than the table) and `--no-save` are
//! refused before anything runs. This file holds what the formats share (how a format
//! names and picks its steps, resolving a step, the refusals of a step that is not
//! there); the run itself is `crate::run::fio_phases::run_steps`, beside the loop it
//! shares with a fio job file's phases. Reading each format, and one step's groups,
//! are the format's own module (`crate::run::vdbench`, `crate::run::iometer`).

use std::path::PathBuf;

use iofleet_profile::raw::RawProfile;
use iofleet_profile::{Context, Overrides, Plan};

use crate::args::RunArgs;
use crate::exit::Exit;

/// What differs between the formats.
pub(crate) struct Format {
    /// The tool's name, as notices and headings say it (`vdbench`, `Iometer`).
    pub tool: &'static str,
    /// What the file is (`parameter file`, `configuration file`).
    pub file: &'static str,
    /// The flag that picks a step (`--vdbench-step`).
    pub step_flag: &'static str,
    /// The label each step's stored run carries: its number, from 1.
    pub label: &'static str,
    /// What a step is called in its heading (`rd=`, `access specification `).
    pub step_word: &'static str,
    /// Make `a` run only the step named.
    pub pick: fn(&mut RunArgs, &str),
}

/// Another workload given beside a workload flag's own (`own`: `--diskspd`, `--vdbench`,
/// `--iometer`): the first of a profile (when the workload came by its flag, not as the
/// PROFILE itself), `--fio`, `--diskspd`, `--vdbench`, `--iometer`, `--group`.
pub(crate) fn other_workload(a: &RunArgs, own: &str) -> Option<&'static str> {
    let own_given = match own {
        "--diskspd" => a.diskspd.is_some(),
        "--vdbench" => a.vdbench.is_some(),
        "--iometer" => a.iometer.is_some(),
        _ => false,
    };
    [
        ("a profile", own_given && a.profile.is_some()),
        ("--fio", a.fio.is_some()),
        ("--diskspd", a.diskspd.is_some()),
        ("--vdbench", a.vdbench.is_some()),
        ("--iometer", a.iometer.is_some()),
        ("--group", !a.group.is_empty()),
    ]
    .into_iter()
    .find(|&(name, given)| given && name != own)
    .map(|(name, _)| name)
}

/// A file of several steps: its format, path, steps' names and mapping notices.
pub(crate) struct Stepped {
    pub format: &'static Format,
    pub path: PathBuf,
    pub steps: Vec<String>,
    pub notices: Vec<String>,
}

/// A step's profile resolved with `ov`; `at` says which step of which file, and an
/// error about a mapped key also names the setting it came from (`setting_of`), unless
/// a flag set the value.
pub(crate) fn resolve_step(
    at: &str,
    raw: &RawProfile,
    ov: &Overrides,
    ctx: &Context,
    setting_of: fn(&str) -> Option<&'static str>,
    tool: &str,
) -> Result<Plan, Exit> {
    iofleet_profile::resolve(raw, ov, ctx).map_err(|e| match e.key().and_then(setting_of) {
        Some(p) if e.flag().is_none() => Exit::input(format!("{at}: {e} ({tool} {p})")),
        _ => Exit::input(format!("{at}: {e}")),
    })
}

/// The refusal of a step flag whose step the file does not have.
pub(crate) fn no_such_step(f: &Format, name: &str, steps: &[&str]) -> Exit {
    Exit::input(format!(
        "{} {name}: the {} has no step {name}; its steps are: {}",
        f.step_flag,
        f.file,
        steps.join(", ")
    ))
}

/// The refusal of a file of several steps where one is needed.
pub(crate) fn one_step_needed(f: &Format, path: &std::path::Path, steps: &[&str]) -> Exit {
    Exit::input(format!(
        "{}: the {} has {} steps ({}); `iofleet run` runs them one after another, here give one with {} NAME",
        path.display(),
        f.file,
        steps.len(),
        steps.join(", "),
        f.step_flag
    ))
}
