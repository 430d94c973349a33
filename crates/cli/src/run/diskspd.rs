//! A DISKSPD command line as the workload of a run: `iofleet run --diskspd "ARGS"`.
//!
//! Reading and mapping are `iofleet_import::diskspd`; this file resolves the profile
//! with the command-line overrides into the run's one worker group, decides where its
//! targets go (file targets: disks under `--target`; `#N` and `X:` targets only through
//! `--diskspd-map`, and then as any device `--target` is, with its `--destroy-data`
//! rule), and hands the mapping notices to the result. See docs/diskspd.md.

use std::path::PathBuf;

use iofleet_import::diskspd::{self, DiskspdImport, DiskspdTarget};
use iofleet_profile::{Context, GroupPlan, Overrides, Plan};

use crate::args::RunArgs;
use crate::exit::Exit;

/// Read the command line of `--diskspd`.
pub(crate) fn load(line: &str) -> Result<DiskspdImport, Exit> {
    diskspd::read(line).map_err(|e| Exit::input(format!("--diskspd: {e}")))
}

/// The import's profile resolved with `ov`; an error about a mapped key also names the
/// DISKSPD flag it came from, unless a flag of iofleet's set the value.
pub(crate) fn resolve(imp: &DiskspdImport, ov: &Overrides, ctx: &Context) -> Result<Plan, Exit> {
    iofleet_profile::resolve(&imp.raw, ov, ctx).map_err(|e| {
        match e.key().and_then(diskspd::flag_of_key) {
            Some(flag) if e.flag().is_none() => {
                Exit::input(format!("--diskspd: {e} (DISKSPD {flag})"))
            }
            _ => Exit::input(format!("--diskspd: {e}")),
        }
    })
}

/// `--diskspd` beside another workload, or `--diskspd-map` without it: refused.
fn refuse_conflicts(a: &RunArgs) -> Result<(), Exit> {
    let other = super::file_steps::other_workload(a, "--diskspd");
    match (a.diskspd.is_some(), other) {
        (true, Some(o)) => Err(Exit::input(format!(
            "--diskspd is the run's workload; give either it or {o}"
        ))),
        (false, _) if !a.diskspd_map.is_empty() => Err(Exit::input(
            "--diskspd-map applies to the targets of a --diskspd command line",
        )),
        _ => Ok(()),
    }
}

/// The run's one worker group from `--diskspd` (None without it).
pub(crate) fn groups(a: &RunArgs, ov: &Overrides) -> Result<Option<Vec<GroupPlan>>, Exit> {
    refuse_conflicts(a)?;
    let Some(line) = &a.diskspd else {
        return Ok(None);
    };
    let imp = load(line)?;
    mapped_targets(a, &imp)?;
    let plan = resolve(&imp, ov, &Context { direct: a.direct })?;
    if a.dry_run && !a.quiet {
        for n in notices_of(a, &imp) {
            eprintln!("note: {n}");
        }
    }
    Ok(Some(GroupPlan::single(plan, 0)))
}

/// `--diskspd-map KEY=PATH` entries: `#N` or `X:` → the path.
fn map_entries(a: &RunArgs) -> Result<Vec<(String, PathBuf)>, Exit> {
    a.diskspd_map
        .iter()
        .map(|m| match m.split_once('=') {
            Some((k, p)) if !p.is_empty() => Ok((k.trim().to_ascii_uppercase(), PathBuf::from(p))),
            _ => Err(Exit::input(format!(
                "--diskspd-map {m}: expected TARGET=PATH, e.g. '#1=/dev/nvme1n1' or 'E:=/mnt/e'"
            ))),
        })
        .collect()
}

/// Where a command line's `#N`/`X:` targets go: the paths `--diskspd-map` gives them, in
/// target order (None when every target is a file). Refused: an unmapped disk or drive,
/// files beside mapped targets, a map entry no target uses, and `--target` beside a map.
fn mapped_targets(a: &RunArgs, imp: &DiskspdImport) -> Result<Option<Vec<PathBuf>>, Exit> {
    let map = map_entries(a)?;
    for (k, _) in &map {
        if !imp
            .targets
            .iter()
            .any(|t| t.written().to_ascii_uppercase() == *k)
        {
            return Err(Exit::input(format!(
                "--diskspd-map {k}: the command line has no target {k}"
            )));
        }
    }
    let windows: Vec<&DiskspdTarget> = imp
        .targets
        .iter()
        .filter(|t| !matches!(t, DiskspdTarget::File(_)))
        .collect();
    if windows.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for t in &imp.targets {
        let written = t.written();
        let what = match t {
            DiskspdTarget::Disk(_) => "a Windows physical drive number",
            DiskspdTarget::Drive(_) => "a Windows drive letter",
            DiskspdTarget::File(_) => {
                return Err(Exit::input(format!(
                    "--diskspd: target {written} is a file beside mapped targets ({}); give \
                     every target as a file, or map every one with --diskspd-map",
                    windows
                        .iter()
                        .map(|w| w.written())
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        };
        match map.iter().find(|(k, _)| *k == written.to_ascii_uppercase()) {
            Some((_, p)) => out.push(p.clone()),
            None => {
                return Err(Exit::input(format!(
                    "--diskspd: target {written} is {what}; iofleet never maps it to a Linux \
                     device or directory on its own: give --diskspd-map '{written}=PATH' (a \
                     device is then written only as any --target device is, with \
                     --destroy-data when it holds data)"
                )))
            }
        }
    }
    if !a.target.is_empty() {
        return Err(Exit::input(
            "--target: the DISKSPD targets are placed by --diskspd-map; give one or the other",
        ));
    }
    Ok(Some(out))
}

/// The run's targets when `--diskspd` maps them (None: `--target` as usual).
pub(crate) fn target(a: &RunArgs) -> Result<Option<Vec<PathBuf>>, Exit> {
    match &a.diskspd {
        Some(line) => mapped_targets(a, &load(line)?),
        None => Ok(None),
    }
}

/// The mapping notices, with where the file targets go and how the direct-I/O setting
/// compares with DISKSPD's caching flags.
fn notices_of(a: &RunArgs, imp: &DiskspdImport) -> Vec<String> {
    let mut out = imp.notices.clone();
    let files: Vec<String> = imp
        .targets
        .iter()
        .filter_map(|t| match t {
            DiskspdTarget::File(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    if !files.is_empty() {
        out.push(format!(
            "diskspd target(s) {}: one disk each, made under the run's target (--target); the named files are not used",
            files.join(", ")
        ));
    }
    match (imp.direct, a.direct) {
        (false, true) => out.push(
            "diskspd: no -Su/-Sh, so DISKSPD would go through the OS cache; this run uses O_DIRECT (pass --direct false to match)".into(),
        ),
        (true, false) => out.push(
            "diskspd: -Su/-Sh bypass the OS cache, but this run has --direct false".into(),
        ),
        _ => {}
    }
    out
}

/// The mapping notices of the run's `--diskspd`, for the result.
pub(crate) fn notices(a: &RunArgs) -> Vec<String> {
    match a.diskspd.as_deref().map(diskspd::read) {
        Some(Ok(imp)) => notices_of(a, &imp),
        _ => Vec::new(),
    }
}
