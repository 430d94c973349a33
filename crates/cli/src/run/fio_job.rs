//! A fio job file as the workload of a run: `iofleet run job.fio` or `--fio FILE`.
//!
//! Reading and mapping are `iofleet_import::fio`; this file finds the job file among the
//! arguments, splits its jobs into `stonewall` phases, resolves each job's profile with
//! the command-line overrides into worker groups on one timeline per phase (as `--group`
//! does), picks the engine the jobs ask for when `--engine` is left at auto, takes the
//! jobs' `directory` as the target when `--target` is not given, and hands the mapping
//! notices to the result. Running several phases is `fio_phases`; every other caller
//! gets one phase's groups (`groups`). See docs/fio.md.

use std::path::{Path, PathBuf};

use iofleet_fleet::EngineSpec;
use iofleet_import::fio::{self, FioDirectory, FioImport};
use iofleet_profile::{format_duration, Context, GroupPlan, Overrides};

use crate::args::RunArgs;
use crate::exit::Exit;

/// The target of a run that names none, and whose job file (if any) names no directory.
pub(crate) const DEFAULT_TARGET: &str = "iofleet-data";

/// The fio job file the arguments name: `--fio FILE`, or a PROFILE ending in `.fio`.
pub(crate) fn job_file(a: &RunArgs) -> Option<PathBuf> {
    a.fio.clone().or_else(|| {
        a.profile
            .as_deref()
            .filter(|p| p.ends_with(".fio"))
            .map(PathBuf::from)
    })
}

/// Without a job file, `--fio-ignore` and `--fio-job` would do nothing: refuse them.
pub(crate) fn refuse_fio_flags(a: &RunArgs) -> Result<(), Exit> {
    let flag = match (a.fio_ignore.is_empty(), a.fio_job.is_empty()) {
        (false, _) => "--fio-ignore",
        (_, false) => "--fio-job",
        _ => return Ok(()),
    };
    Err(Exit::input(format!(
        "{flag} applies to a fio job file (a PROFILE ending in .fio, or --fio FILE)"
    )))
}

/// Read and map a job file; `${VAR}` comes from this process's environment.
/// Only the jobs named in `only` when it is not empty (`--fio-job`).
pub(crate) fn load(
    path: &Path,
    direct: bool,
    ignore: &[String],
    only: &[String],
) -> Result<FioImport, Exit> {
    let env = |v: &str| std::env::var(v).ok();
    let jobs = fio::read_job_file_with(path, &env, &crate::inputs::text).map_err(Exit::input)?;
    let jobs = fio::select(jobs, only).map_err(Exit::input)?;
    fio::import(&jobs, direct, ignore).map_err(Exit::input)
}

/// One phase of a job file: the worker groups that run at once, and where the
/// `stonewall` that starts it is written (None for the first phase).
pub(crate) struct Phase {
    pub groups: Vec<GroupPlan>,
    pub stonewall: Option<fio::Location>,
    /// The job sections' names (as `--fio-job` selects them).
    pub jobs: Vec<String>,
}

/// The run's worker groups from the job file at `path` (one per job section, placed one
/// after another), and the engine its jobs ask for when they all agree. A file of
/// several stonewall phases runs only with `iofleet run` (`phases`): refused here.
pub(crate) fn groups(
    a: &RunArgs,
    ov: &Overrides,
    path: &Path,
) -> Result<(Vec<GroupPlan>, Option<EngineSpec>), Exit> {
    let JobFile {
        mut phases,
        engine,
        notices,
    } = phases(a, ov, path)?;
    if a.dry_run && !a.quiet {
        for n in &notices {
            eprintln!("note: {n}");
        }
    }
    if let Some(p) = phases.get(1) {
        let at = p
            .stonewall
            .as_ref()
            .map(|l| l.to_string())
            .unwrap_or_default();
        return Err(Exit::input(format!(
            "{at}: stonewall: job [{}] waits for the jobs before it; a job file's stonewall \
             phases run one after another only with `iofleet run` (each a stored run); here \
             run one phase with --fio-job NAME",
            p.jobs[0]
        )));
    }
    Ok((phases.pop().map(|p| p.groups).unwrap_or_default(), engine))
}

/// A job file read and mapped.
pub(crate) struct JobFile {
    /// In order; one for a file without `stonewall`.
    pub phases: Vec<Phase>,
    /// The engine the jobs ask for when they all agree.
    pub engine: Option<EngineSpec>,
    /// The mapping notices.
    pub notices: Vec<String>,
}

/// The job file's phases, each phase's worker groups one per job section, placed one
/// after another.
pub(crate) fn phases(a: &RunArgs, ov: &Overrides, path: &Path) -> Result<JobFile, Exit> {
    if a.fio.is_some() && a.profile.is_some() {
        return Err(Exit::input(format!(
            "give either a profile ({}) or --fio, not both",
            a.profile.as_deref().unwrap_or("")
        )));
    }
    if !a.group.is_empty() {
        return Err(Exit::input(
            "--group: a fio job file makes one worker group per job section; give either",
        ));
    }
    let imp = load(path, a.direct, &a.fio_ignore, &a.fio_job)?;
    if imp.groups.len() > 1 && ov.workers.is_some() {
        return Err(Exit::input(
            "--workers: a job file with several jobs sets each group's workers with numjobs",
        ));
    }
    for (i, g) in imp.groups.iter().enumerate() {
        if imp.groups[..i].iter().any(|o| o.name == g.name) {
            return Err(Exit::input(format!(
                "{} [{}] (line {}): the name {} is used by an earlier job",
                g.at.file, g.name, g.at.line, g.name
            )));
        }
    }
    refuse_verify_without_storage(a, &imp)?;
    let ctx = Context { direct: a.direct };
    let mut notices = imp.notices.clone();
    notices.extend(directory_notices(a, &imp));
    let mut phases = Vec::new();
    for jobs in fio::phases(&imp.groups) {
        phases.push(Phase {
            groups: phase_groups(jobs, ov, &ctx)?,
            stonewall: jobs[0].stonewall.clone(),
            jobs: jobs.iter().map(|g| g.section.clone()).collect(),
        });
    }
    Ok(JobFile {
        phases,
        engine: engine_of(&imp),
        notices,
    })
}

/// A job's `verify` on an engine that touches no storage (`--engine null`, or the jobs'
/// own `ioengine=null`): refused naming the option's file and line, as every refusal of
/// a job file is (the run's own check names only `--verify`).
fn refuse_verify_without_storage(a: &RunArgs, imp: &FioImport) -> Result<(), Exit> {
    let engine = match (&a.engine, engine_of(imp)) {
        (EngineSpec::Auto, Some(asked)) => asked,
        (given, _) => given.clone(),
    };
    if engine.caps().needs_target {
        return Ok(());
    }
    match imp.groups.iter().find_map(|g| g.verify.as_ref()) {
        Some(at) => Err(Exit::input(format!(
            "fio option iofleet cannot run as written:\n  {at}: verify: the {} engine touches \
             no storage, so there is no data to verify; run with --engine io_uring, psync or \
             auto, or --fio-ignore verify",
            engine.name()
        ))),
        None => Ok(()),
    }
}

/// Whether every job names a `directory` (a job without one writes where fio runs: one
/// target cannot serve both).
fn every_job_names_one(imp: &FioImport) -> bool {
    imp.groups.iter().all(|g| g.directory.is_some())
}

/// The distinct directories the jobs name with `directory` (in file order).
fn directories(imp: &FioImport) -> Vec<&FioDirectory> {
    let mut out: Vec<&FioDirectory> = Vec::new();
    for d in imp.groups.iter().filter_map(|g| g.directory.as_ref()) {
        if !out.iter().any(|o| o.paths == d.paths) {
            out.push(d);
        }
    }
    out
}

/// Where the run's disks go on this host: `--target` as given; else the job file's
/// `directory` when every job names the same one (fio places a job's files there, and so does iofleet,
/// with the checks any `--target` gets); else `iofleet-data`.
pub(crate) fn target(a: &RunArgs) -> Result<Vec<PathBuf>, Exit> {
    if !a.target.is_empty() {
        return Ok(a.target.clone());
    }
    if let Some(path) = job_file(a) {
        let imp = load(&path, a.direct, &a.fio_ignore, &a.fio_job)?;
        if let ([one], true) = (directories(&imp).as_slice(), every_job_names_one(&imp)) {
            let paths: Vec<PathBuf> = one.paths.iter().map(PathBuf::from).collect();
            // A device is written only when the user names it: never from a job file.
            if let Some(dev) = paths.iter().find(|p| is_block_device(p)) {
                return Err(Exit::input(format!(
                    "fio {}: directory={}: {} is a block device; iofleet writes a device only \
                     when --target names it (--target {})",
                    one.at,
                    one.value,
                    dev.display(),
                    dev.display()
                )));
            }
            return Ok(paths);
        }
    }
    Ok(vec![PathBuf::from(DEFAULT_TARGET)])
}

fn is_block_device(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device())
}

/// Whether `--target` names the directories `paths` (as written, or once resolved).
fn names_the_same(target: &[PathBuf], paths: &[String]) -> bool {
    let same = |t: &Path, p: &Path| {
        t == p || matches!((t.canonicalize(), p.canonicalize()), (Ok(x), Ok(y)) if x == y)
    };
    target.len() == paths.len() && target.iter().zip(paths).all(|(t, p)| same(t, Path::new(p)))
}

/// Notices for the jobs' `directory` where it is not the run's target: with `--hosts`
/// (each host's inventory target), beside a `--target` that names another place, and
/// when the jobs disagree (one target serves every group).
fn directory_notices(a: &RunArgs, imp: &FioImport) -> Vec<String> {
    let dirs = directories(imp);
    let at = |d: &FioDirectory| format!("fio {}: directory={}", d.at, d.value);
    if a.hosts.is_some() {
        return dirs
            .iter()
            .map(|d| {
                format!(
                    "{}: with --hosts each host's disks go under its target in the inventory, \
                     not in this directory",
                    at(d)
                )
            })
            .collect();
    }
    if !a.target.is_empty() {
        let given: Vec<String> = a.target.iter().map(|t| t.display().to_string()).collect();
        return dirs
            .iter()
            .filter(|d| !names_the_same(&a.target, &d.paths))
            .map(|d| {
                format!(
                    "{}: the disks go under --target {}, as given, not in this directory",
                    at(d),
                    given.join(",")
                )
            })
            .collect();
    }
    if !dirs.is_empty() && !every_job_names_one(imp) {
        return vec![format!(
            "fio {}: some jobs name no directory; one target serves every group, here \
             {DEFAULT_TARGET} (pass --target)",
            dirs[0].at.file,
        )];
    }
    if dirs.len() > 1 {
        let values: Vec<&str> = dirs.iter().map(|d| d.value.as_str()).collect();
        return vec![format!(
            "fio {}: the jobs name different directories ({}); one target serves every group, \
             here {DEFAULT_TARGET} (pass --target)",
            dirs[0].at.file,
            values.join(", ")
        )];
    }
    Vec::new()
}

/// The worker groups of one phase's jobs, placed one after another.
fn phase_groups(
    jobs: &[fio::FioGroup],
    ov: &Overrides,
    ctx: &Context,
) -> Result<Vec<GroupPlan>, Exit> {
    let mut out: Vec<GroupPlan> = Vec::new();
    let mut base = 0;
    for g in jobs {
        let job = format!("{} [{}] (line {})", g.at.file, g.name, g.at.line);
        let plan = resolve(g, ov, ctx)?;
        if let Some(first) = out.first() {
            let (t0, t1) = (&first.plan.timing, &plan.timing);
            if (t0.warmup, t0.duration, t0.interval) != (t1.warmup, t1.duration, t1.interval) {
                return Err(Exit::input(format!(
                    "{job}: its ramp_time/runtime ({}/{}) differ from job [{}]'s ({}/{}); the jobs \
                     of a phase run at once on one timeline, so give them the same (or set --warmup and --duration)",
                    format_duration(t1.warmup),
                    format_duration(t1.duration),
                    first.name,
                    format_duration(t0.warmup),
                    format_duration(t0.duration),
                )));
            }
        }
        let n = plan.fleet.workers;
        out.push(GroupPlan {
            name: g.name.clone(),
            plan,
            worker_base: base,
        });
        // Saturating: the fleet's bound is checked on the totals (FleetTotals).
        base = base.saturating_add(n);
    }
    if let [one] = out.as_slice() {
        out = GroupPlan::single(one.plan.clone(), 0);
    }
    Ok(out)
}

/// A job's profile resolved with `ov`; an error about a mapped key also names the fio
/// option it came from, unless a flag set the value.
pub(crate) fn resolve(
    g: &fio::FioGroup,
    ov: &Overrides,
    ctx: &Context,
) -> Result<iofleet_profile::Plan, Exit> {
    iofleet_profile::resolve(&g.raw, ov, ctx).map_err(|e| {
        match e.key().and_then(fio::option_of_key) {
            Some(opt) if e.flag().is_none() => Exit::input(format!("{e} (fio option {opt})")),
            _ => Exit::input(e),
        }
    })
}

/// The engine every job asks for, if they agree (jobs without ioengine do not count).
fn engine_of(imp: &FioImport) -> Option<EngineSpec> {
    let mut names = imp.groups.iter().filter_map(|g| g.engine);
    let first = names.next()?;
    if names.any(|n| n != first) {
        return None;
    }
    first.parse().ok()
}

/// The mapping notices of the run's job file, for the result (re-read: reading a job
/// file has no side effect).
pub(crate) fn notices(a: &RunArgs) -> Vec<String> {
    let Some(path) = job_file(a) else {
        return Vec::new();
    };
    let Ok(imp) = load(&path, a.direct, &a.fio_ignore, &a.fio_job) else {
        return Vec::new();
    };
    let mut out = imp.notices.clone();
    out.extend(directory_notices(a, &imp));
    let asked: Vec<&str> = imp.groups.iter().filter_map(|g| g.engine).collect();
    if a.engine == EngineSpec::Auto && engine_of(&imp).is_none() && asked.len() > 1 {
        out.push(format!(
            "fio {}: the jobs ask for different ioengines ({}); one engine runs every group, here auto (set --engine)",
            path.display(),
            asked.join(", ")
        ));
    }
    out
}
