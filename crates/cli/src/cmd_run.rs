//! `iofleet run`: resolve the profile (or, without one, the default shape of
//! `iofleet_profile::flags`) with the command-line overrides, choose targets and engine,
//! then either print the plan (`--dry-run`, see `dry_run`) or run with a live view and
//! Ctrl-C handling and export the result.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileTypeExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iofleet_engine::target::TargetSpec;
use iofleet_fleet::agents::AgentLauncher;
use iofleet_fleet::inproc::ThreadLauncher;
use iofleet_fleet::launcher::Launcher;
use iofleet_fleet::{EngineSpec, Fanout, Observer, RunSettings, StartNow};
use iofleet_profile::{format_duration, Context, DataPattern, GroupPlan, Overrides, Prepare};
use iofleet_report::{Exporter, JsonExporter, TableExporter};
use iofleet_stats::result::RunResult;

use crate::args::{PatternArg, PrepareArg, RunArgs};
use crate::dry_run;
use crate::live::LiveView;
use crate::record::StoreRecorder;
use crate::Exit;

pub(crate) fn target_spec(a: &RunArgs) -> Result<TargetSpec, Exit> {
    target_spec_of(&a.target)
}

/// `--target` as given: one directory, or block devices.
pub(crate) fn target_spec_of(target: &[std::path::PathBuf]) -> Result<TargetSpec, Exit> {
    let is_dev = |p: &std::path::Path| {
        std::fs::metadata(p)
            .map(|m| m.file_type().is_block_device())
            .unwrap_or(false)
    };
    if target.len() == 1 && !is_dev(&target[0]) {
        return Ok(TargetSpec::Dir(target[0].clone()));
    }
    if let Some(p) = target.iter().find(|p| !is_dev(p)) {
        return Err(Exit::input(format!(
            "--target {}: when several targets are given they must all be block devices",
            p.display()
        )));
    }
    Ok(TargetSpec::Devices(target.to_vec()))
}

/// Split `NAME=PROFILE[:WORKERS]`. A WORKERS count is checked against `fleet.workers`'
/// range, so `:0` or `:-1` says what the count must be.
fn parse_group(spec: &str) -> Result<(String, String, Option<i64>), Exit> {
    let bad = || {
        Exit::input(format!(
            "--group {spec}: expected NAME=PROFILE[:WORKERS], e.g. vdi=vmfleet-vdi:20"
        ))
    };
    let (name, rest) = spec.split_once('=').ok_or_else(bad)?;
    if name.is_empty() || rest.is_empty() {
        return Err(bad());
    }
    match rest.rsplit_once(':') {
        Some((profile, n)) if n.parse::<i64>().is_ok() => {
            if profile.is_empty() {
                return Err(bad());
            }
            let workers: i64 = n.parse().map_err(|_| bad())?;
            let def = iofleet_profile::options::option("fleet.workers");
            def.check(workers as f64).map_err(|m| {
                Exit::input(format!(
                    "--group {spec}: workers {}",
                    m.split_once(": ").map_or(m.as_str(), |(_, why)| why)
                ))
            })?;
            Ok((name.into(), profile.into(), Some(workers)))
        }
        _ => Ok((name.into(), rest.into(), None)),
    }
}

/// The run's worker groups: one for a single profile, or one per `--group`, each
/// resolved with the same overrides, placed one after another, sharing one timeline.
fn groups(a: &RunArgs, ov: &Overrides) -> Result<Vec<GroupPlan>, Exit> {
    let ctx = Context { direct: a.direct };
    if a.group.is_empty() {
        let Some(profile) = a.profile.as_deref() else {
            if ov.is_empty() {
                return Err(Exit::input(
                    "give a profile to run, worker groups with --group NAME=PROFILE[:WORKERS], \
                     or workload flags for a run on the default shape (e.g. iofleet run --bs 4k \
                     --read-pct 70 --random-pct 100 --qd 32)",
                ));
            }
            let plan = iofleet_profile::resolve_flags(ov, &ctx).map_err(Exit::input)?;
            return Ok(GroupPlan::single(plan, 0));
        };
        let raw = iofleet_profile::load(profile).map_err(Exit::input)?;
        let plan = iofleet_profile::resolve(&raw, ov, &ctx).map_err(Exit::input)?;
        return Ok(GroupPlan::single(plan, 0));
    }
    if let Some(p) = &a.profile {
        return Err(Exit::input(format!(
            "give either a profile ({p}) or --group, not both"
        )));
    }
    if a.workers.is_some() {
        return Err(Exit::input(
            "--workers: with --group, give each group's workers as NAME=PROFILE:WORKERS",
        ));
    }
    let mut out: Vec<GroupPlan> = Vec::new();
    let mut base = 0;
    for spec in &a.group {
        let (name, profile, workers) = parse_group(spec)?;
        if out.iter().any(|g| g.name == name) {
            return Err(Exit::input(format!(
                "--group {spec}: the name {name} is used twice"
            )));
        }
        let raw = iofleet_profile::load(&profile).map_err(Exit::input)?;
        let mut g_ov = ov.clone();
        g_ov.workers = workers;
        let plan = iofleet_profile::resolve(&raw, &g_ov, &ctx)
            .map_err(|e| Exit::input(format!("--group {name}: {e}")))?;
        if let Some(first) = out.first() {
            let (t0, t1) = (&first.plan.timing, &plan.timing);
            if (t0.warmup, t0.duration, t0.interval) != (t1.warmup, t1.duration, t1.interval) {
                return Err(Exit::input(format!(
                    "--group {name}: its warm-up/duration/interval ({}/{}/{}) differ from group {}'s ({}/{}/{}); groups share one timeline, so set --warmup, --duration and --interval",
                    format_duration(t1.warmup), format_duration(t1.duration), format_duration(t1.interval),
                    first.name,
                    format_duration(t0.warmup), format_duration(t0.duration), format_duration(t0.interval),
                )));
            }
        }
        let n = plan.fleet.workers;
        out.push(GroupPlan {
            name,
            plan,
            worker_base: base,
        });
        base += n;
    }
    Ok(out)
}

pub fn run(a: RunArgs) -> Result<i32, Exit> {
    crate::steady::check_args(&a)?;
    let (groups, settings) = resolve(&a)?;
    if a.dry_run {
        let plan = launcher_for(&a, settings.clone())?
            .plan(&groups)
            .map_err(fleet_exit)?;
        return dry_run::print(&plan, &settings);
    }
    execute(a, groups, settings)
}

/// The worker groups and run settings the arguments ask for.
pub(crate) fn resolve(a: &RunArgs) -> Result<(Vec<GroupPlan>, RunSettings), Exit> {
    let ov = overrides(a);
    let groups = groups(a, &ov)?;
    let engine = match &a.sim_latency {
        Some(_) if a.engine != EngineSpec::Null => {
            return Err(Exit::input("--sim-latency needs --engine null"))
        }
        Some(spec) => EngineSpec::NullSim(
            iofleet_engine::null::LatencyModel::parse_list(spec)
                .map_err(|e| Exit::input(format!("--sim-latency: {e}")))?,
        ),
        None => a.engine.clone(),
    };
    let engine = match (engine, a.real_time) {
        (EngineSpec::Sim(mut device), true) => {
            device.real_time = true;
            EngineSpec::Sim(device)
        }
        (_, true) => return Err(Exit::input("--real-time needs --engine sim")),
        (engine, false) => engine,
    };
    let settings = RunSettings {
        engine,
        direct: a.direct,
        destroy_data: a.destroy_data,
        disk_size_from_cli: a.disk_size.is_some(),
        seed: a.seed,
        cleanup: a.cleanup,
        host_timeout: a.host_timeout,
    };
    Ok((groups, settings))
}

fn overrides(a: &RunArgs) -> Overrides {
    Overrides {
        workers: a.workers,
        disks: a.disks,
        disk_size: a.disk_size,
        threads: a.threads,
        qd: a.qd,
        bs: a.bs.clone(),
        read_pct: a.read_pct,
        random_pct: a.random_pct,
        working_set: a.working_set,
        duration: a.duration,
        warmup: a.warmup,
        interval: a.interval,
        rate: a.rate,
        prepare: a.prepare.map(|p| match p {
            PrepareArg::Random => Prepare::Random,
            PrepareArg::Zero => Prepare::Zero,
            PrepareArg::None => Prepare::None,
        }),
        io_threads: a.io_threads,
        cpus: a.cpus.clone(),
        verify: a.verify.then_some(true),
        pattern: a.pattern.map(|p| match p {
            PatternArg::Random => DataPattern::Random,
            PatternArg::Zero => DataPattern::Zero,
        }),
        dedupe_ratio: a.dedupe_ratio,
        dedupe_unit: a.dedupe_unit,
        compress_ratio: a.compress_ratio,
    }
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

/// Where the workers run: agents on the inventory's hosts with `--hosts` (targets come
/// from the inventory), else threads of this process on `--target`.
fn launcher_for(a: &RunArgs, settings: RunSettings) -> Result<Box<dyn Launcher>, Exit> {
    Ok(match &a.hosts {
        Some(path) => {
            let hosts = iofleet_fleet::inventory::load(path).map_err(Exit::input)?;
            Box::new(AgentLauncher::new(hosts, settings))
        }
        None => {
            let label = a
                .target
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(",");
            Box::new(ThreadLauncher::new(target_spec(a)?, label, settings))
        }
    })
}

/// A fleet error as an exit: 2 for bad input, 1 otherwise.
pub(crate) fn fleet_exit(e: iofleet_fleet::FleetError) -> Exit {
    if e.is_input_error() {
        Exit::input(e)
    } else {
        Exit::failure(e)
    }
}

/// Launcher, store, live view and metrics around one run of `groups`: the result, saved
/// unless `--no-save`, with the stored identity filled in. `stop` ends it early.
pub(crate) fn measure(
    a: &RunArgs,
    groups: &[GroupPlan],
    settings: RunSettings,
    stop: &Arc<AtomicBool>,
) -> Result<RunResult, Exit> {
    let mut launcher = launcher_for(a, settings)?;

    // Open the results store before any I/O (a bad --db fails early).
    let mut recorder = StoreRecorder::open(&a.save, a.quiet)?;

    let mut metrics = match &a.metrics_listen {
        Some(addr) => {
            let (m, local) = crate::metrics::Metrics::listen(addr)?;
            if !a.quiet {
                eprintln!("metrics: http://{local}/metrics");
            }
            Some(m)
        }
        None => None,
    };
    let mut live = LiveView::new(a.quiet);
    let result = {
        let mut observers: Vec<&mut dyn Observer> = vec![&mut live];
        if let Some(m) = metrics.as_mut() {
            observers.push(m);
        }
        if let Some(r) = recorder.as_mut() {
            observers.push(r);
        }
        iofleet_fleet::run(
            groups,
            &mut *launcher,
            &mut StartNow,
            stop.clone(),
            &mut Fanout(observers),
        )
    };
    drop(launcher);
    live.finish();
    let stored = recorder.and_then(|r| r.finish(result.as_ref().ok()));
    let mut result = result.map_err(fleet_exit)?;
    // Printed and exported results say which stored run they are.
    result.stored = stored;
    Ok(result)
}

/// A flag the first Ctrl-C sets (stop and report what was measured); a second Ctrl-C
/// exits at once.
pub(crate) fn ctrl_c_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if s.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    stop
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
        JsonExporter.export(result, &mut out)
    } else {
        TableExporter {
            intervals: a.intervals,
            wide: a.wide,
            disks: false,
        }
        .export(result, &mut out)
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| Exit::failure(format!("writing the result: {e}")))?;
    if let Some(f) = output {
        JsonExporter
            .export(result, f)
            .and_then(|_| f.flush())
            .map_err(|e| Exit::failure(format!("--output: {e}")))?;
    }
    Ok(exit_code(a, result, stop))
}

/// A run's exit code: 130 when Ctrl-C stopped it, 3 when hosts were lost (unless
/// `--tolerate-host-loss`, with a message), 1 when a source failed, 4 when verified
/// reads found corrupt data, 5 when I/Os failed (with a message), else 0.
pub(crate) fn exit_code(a: &RunArgs, result: &RunResult, stop: &AtomicBool) -> i32 {
    let lost = result
        .hosts
        .iter()
        .filter(|h| h.lost_at_s.is_some())
        .count();
    if result.run.interrupted && stop.load(Ordering::SeqCst) {
        130
    } else if lost > 0 && !a.tolerate_host_loss {
        eprintln!("error: {lost} host(s) lost during the run (--tolerate-host-loss accepts this)");
        3
    } else if !result.summary.errors.failed_threads.is_empty() {
        1
    } else if result
        .summary
        .verify
        .as_ref()
        .is_some_and(|v| v.corruptions > 0)
    {
        4
    } else if result.summary.errors.count > 0 {
        let e = &result.summary.errors;
        let out = e.disks.iter().filter(|d| d.taken_out_s.is_some()).count();
        eprintln!(
            "error: {} I/O error(s) on {} disk(s), {out} taken out; see the I/O errors above \
             (summary.errors in JSON)",
            e.count,
            e.disks.len().max(1)
        );
        5
    } else {
        0
    }
}
