//! What every command that measures (`run`, `sweep`, `find-max`, `plan`'s search,
//! `verify`, `precondition`) decides before and after its measurements: the arguments
//! resolved into worker groups and run settings (`resolve`: a profile, `--group`s or a
//! fio job file), the fleet they run on (`launcher_for`: agents on an inventory's hosts
//! or a Kubernetes description's pods with `--hosts`, else threads here), Ctrl-C, the
//! exit code a result earns (3 for a run below its quorum of hosts), and the rate
//! arithmetic of stepped commands (`with_rate`, `offered_rate`, `closed_loop`). It
//! measures nothing: a measurement is `crate::run::measure`'s, on the fleet the
//! command's `Session` holds.

use std::os::unix::fs::FileTypeExt;
use std::sync::atomic::{AtomicBool, Ordering};

use iofleet_engine::target::TargetSpec;
use iofleet_fleet::agents::AgentLauncher;
use iofleet_fleet::hosts_file::HostsFile;
use iofleet_fleet::local::ThreadLauncher;
use iofleet_fleet::{EngineSpec, Fleet, RunSettings};
use iofleet_profile::{format_duration, Context, GroupPlan, Overrides};
use iofleet_stats::result::RunResult;

use crate::args::RunArgs;
use crate::exit::Exit;

/// `--target` as given: one directory, several existing directories, or block devices.
pub(crate) fn target_spec_of(target: &[std::path::PathBuf]) -> Result<TargetSpec, Exit> {
    let is_dev = |p: &std::path::Path| {
        std::fs::metadata(p)
            .map(|m| m.file_type().is_block_device())
            .unwrap_or(false)
    };
    if target.len() == 1 && !is_dev(&target[0]) {
        return Ok(TargetSpec::Dir(target[0].clone()));
    }
    if target.len() > 1 && target.iter().all(|p| p.is_dir()) {
        return TargetSpec::from_paths(target).map_err(Exit::input);
    }
    if let Some(p) = target.iter().find(|p| !is_dev(p)) {
        return Err(Exit::input(format!(
            "--target {}: when several targets are given they must all be block devices, or all existing directories",
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
        let raw =
            iofleet_profile::load_with(profile, &crate::inputs::text_of).map_err(Exit::input)?;
        let plan = iofleet_profile::resolve(&raw, ov, &ctx).map_err(Exit::input)?;
        return Ok(GroupPlan::single(plan, 0));
    }
    if let Some(p) = &a.profile {
        return Err(Exit::input(format!(
            "give either a profile ({p}) or --group, not both"
        )));
    }
    if a.ov.workers.is_some() {
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
        let raw =
            iofleet_profile::load_with(&profile, &crate::inputs::text_of).map_err(Exit::input)?;
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
        // Saturating: the fleet's bound is checked on the totals (FleetTotals).
        base = base.saturating_add(n);
    }
    Ok(out)
}

/// The worker groups and run settings the arguments ask for.
pub(crate) fn resolve(a: &RunArgs) -> Result<(Vec<GroupPlan>, RunSettings), Exit> {
    let from_diskspd = match crate::run::iometer::groups(a, &a.ov)? {
        Some(groups) => Some(groups),
        None => match crate::run::vdbench::groups(a, &a.ov)? {
            Some(groups) => Some(groups),
            None => crate::run::diskspd::groups(a, &a.ov)?,
        },
    };
    let (groups, job_engine) = match (from_diskspd, crate::run::fio_job::job_file(a)) {
        (Some(groups), _) => {
            crate::run::fio_job::refuse_fio_flags(a)?;
            (groups, None)
        }
        (None, Some(path)) => crate::run::fio_job::groups(a, &a.ov, &path)?,
        (None, None) => {
            crate::run::fio_job::refuse_fio_flags(a)?;
            (groups(a, &a.ov)?, None)
        }
    };
    let engine = match &a.sim_latency {
        Some(_) if a.engine != EngineSpec::Null => {
            return Err(Exit::input("--sim-latency needs --engine null"))
        }
        Some(spec) => EngineSpec::NullSim(
            iofleet_engine::null::LatencyModel::parse_list(spec)
                .map_err(|e| Exit::input(format!("--sim-latency: {e}")))?,
        ),
        // A fio job file's ioengine applies when --engine is left at auto.
        None => match job_engine {
            Some(e) if a.engine == EngineSpec::Auto => e,
            _ => a.engine.clone(),
        },
    };
    let engine = match (engine, a.real_time) {
        (EngineSpec::Sim(mut device), true) => {
            device.real_time = true;
            EngineSpec::Sim(device)
        }
        (_, true) => return Err(Exit::input("--real-time needs --engine sim")),
        (engine, false) => engine,
    };
    if let EngineSpec::Sim(device) = &engine {
        device
            .check()
            .map_err(|e| Exit::input(format!("--engine {engine}: {e}")))?;
    }
    let settings = RunSettings {
        engine,
        direct: a.direct,
        destroy_data: a.destroy_data,
        disk_size_from_cli: a.ov.disk_size.is_some(),
        seed: a.seed,
        cleanup: a.cleanup,
        host_timeout: a.host_timeout,
        max_uploads: a.max_uploads,
        drop_caches: a.drop_caches.clone(),
        active_hosts: a.active_hosts,
    };
    Ok((groups, settings))
}

/// Where the workers run: agents on the inventory's hosts with `--hosts` (targets come
/// from the inventory), else threads of this process on the run's target
/// (`fio_job::target`).
pub(crate) fn launcher_for(a: &RunArgs) -> Result<Box<dyn Fleet>, Exit> {
    crate::run::join::check_join_flags(a)?;
    match (&a.join.listen, &a.hosts) {
        (Some(_), None) => return crate::run::join::joined_fleet(a),
        (Some(_), Some(path)) => return crate::run::join::kube_job_fleet(a, path),
        _ => {}
    }
    let target = match a.hosts {
        Some(_) => Vec::new(),
        None => match crate::run::diskspd::target(a)? {
            Some(mapped) => mapped,
            None => crate::run::fio_job::target(a)?,
        },
    };
    launcher_at(a.hosts.as_deref(), &target)
}

/// The launcher for an inventory (`--hosts`), else for `--target` on this host.
pub(crate) fn launcher_at(
    hosts: Option<&std::path::Path>,
    target: &[std::path::PathBuf],
) -> Result<Box<dyn Fleet>, Exit> {
    Ok(match hosts {
        Some(path) => match iofleet_fleet::hosts_file::read(path, &crate::inputs::text)
            .map_err(Exit::input)?
        {
            HostsFile::Kubernetes(fleet) => Box::new(iofleet_fleet::kube::KubeLauncher::new(
                *fleet,
                path.to_path_buf(),
            )),
            HostsFile::Vms(fleet) => Box::new(
                iofleet_fleet::vms::launcher::VmLauncher::new(*fleet, path.to_path_buf())
                    .map_err(Exit::input)?,
            ),
            HostsFile::Inventory(hosts) => Box::new(AgentLauncher::new(hosts)),
        },
        None => {
            let label = target
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(",");
            Box::new(ThreadLauncher::new(target_spec_of(target)?, label))
        }
    })
}

pub(crate) use crate::exit::{ctrl_c_flag, fleet_exit};

/// A run's exit code: 130 when Ctrl-C stopped it, 3 when it fell below its quorum of
/// hosts (`result.validity`, judged by `--min-hosts`; with a message), 1 when a source
/// failed, 4 when verified reads found corrupt data, 5 when I/Os failed (with a
/// message), else 0.
pub(crate) fn exit_code(result: &RunResult, stop: &AtomicBool) -> i32 {
    if result.run.interrupted && stop.load(Ordering::SeqCst) {
        130
    } else if !result.validity.valid {
        eprintln!(
            "error: the run is INVALID: {}",
            iofleet_report::text::escape_lines(&result.validity.reasons.join("; "))
        );
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

/// Set the offered rate of every group to `total` IOPS over the fleet, shared evenly
/// by its workers. Within a worker the profile's own mix of rates is kept: closed-loop
/// (weighted) streams get `timing.rate_iops`; streams with their own `rate_iops` are
/// scaled together; a profile with both keeps the ratio of its `timing.rate_iops` to
/// the streams' own rates.
pub(crate) fn with_rate(groups: &mut [GroupPlan], total: f64) -> Result<(), Exit> {
    let workers: u32 = groups.iter().map(|g| g.plan.fleet.workers).sum();
    let per_worker = total / workers.max(1) as f64;
    for g in groups {
        let p = &mut g.plan;
        let weighted = p.streams.iter().any(|s| s.rate_iops.is_none());
        let rated: f64 = p.streams.iter().filter_map(|s| s.rate_iops).sum();
        let shared = match (weighted, p.timing.rate_iops) {
            (false, _) => 0.0,
            (true, _) if rated == 0.0 => {
                p.timing.rate_iops = Some(per_worker);
                continue;
            }
            (true, Some(r)) => r,
            (true, None) => {
                return Err(Exit::input(format!(
                    "profile {}: it mixes streams with their own rate_iops and streams \
                     without; set --rate (per worker) to give the others' share of the mix",
                    p.name
                )))
            }
        };
        let scale = per_worker / (shared + rated);
        if weighted {
            p.timing.rate_iops = Some(shared * scale);
        }
        for s in p.streams.iter_mut() {
            if let Some(r) = s.rate_iops.as_mut() {
                *r *= scale;
            }
        }
    }
    Ok(())
}

/// The rate offered to the whole fleet (IOPS) by `groups`, the inverse of `with_rate`:
/// per worker, the closed-loop streams' `timing.rate_iops` plus the streams' own rates,
/// times the workers. None when some group runs closed loop (no rate to offer).
pub(crate) fn offered_rate(groups: &[GroupPlan]) -> Option<f64> {
    let mut total = 0.0;
    for g in groups {
        let p = &g.plan;
        let weighted = p.streams.iter().any(|s| s.rate_iops.is_none());
        let rated: f64 = p.streams.iter().filter_map(|s| s.rate_iops).sum();
        let shared = match (weighted, p.timing.rate_iops) {
            (false, _) => 0.0,
            (true, Some(r)) => r,
            (true, None) => return None,
        };
        total += (shared + rated) * f64::from(p.fleet.workers);
    }
    Some(total)
}

/// The groups as a closed loop (no rate cap), for the measured maximum. A group whose
/// streams all have their own rate becomes one closed-loop lane that mixes them in
/// proportion to those rates (its qd is `fleet.qd`); a group that mixes rated and
/// weighted streams is refused (`flag` named, `hint` said).
pub(crate) fn closed_loop(groups: &mut [GroupPlan], flag: &str, hint: &str) -> Result<(), Exit> {
    for g in groups {
        let p = &mut g.plan;
        p.timing.rate_iops = None;
        let rated = p.streams.iter().filter(|s| s.rate_iops.is_some()).count();
        if rated == 0 {
            continue;
        }
        if rated < p.streams.len() {
            return Err(Exit::input(format!(
                "{flag}: profile {} mixes streams with their own rate_iops and streams \
                 without, so it has no closed-loop maximum to start from{hint}",
                p.name
            )));
        }
        let top = p
            .streams
            .iter()
            .filter_map(|s| s.rate_iops)
            .fold(0.0, f64::max);
        for s in p.streams.iter_mut() {
            let r = s.rate_iops.take().unwrap_or(0.0);
            s.weight = Some(((r / top * 1000.0).round() as u32).max(1));
            s.qd = None;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(profile: &str, workers: i64) -> Vec<GroupPlan> {
        let raw = iofleet_profile::load(profile).unwrap();
        let ov = iofleet_profile::Overrides {
            workers: Some(workers),
            ..Default::default()
        };
        let plan = iofleet_profile::resolve(&raw, &ov, &iofleet_profile::Context { direct: true })
            .unwrap();
        GroupPlan::single(plan, 0)
    }

    #[test]
    fn a_total_rate_is_shared_by_the_workers_and_keeps_the_mix() {
        // Closed-loop streams: the profile's rate cap per worker.
        let mut g = groups("easy-run-4k100r", 4);
        assert!(with_rate(&mut g, 10_000.0).is_ok());
        assert_eq!(g[0].plan.timing.rate_iops, Some(2_500.0));
        // Streams with their own rate (vmfleet-sql: 6,000 + 300 per worker) scale
        // together, keeping 20:1.
        let mut g = groups("vmfleet-sql", 2);
        assert!(with_rate(&mut g, 12_600.0).is_ok());
        let r: Vec<f64> = g[0]
            .plan
            .streams
            .iter()
            .map(|s| s.rate_iops.unwrap())
            .collect();
        assert!(
            (r[0] - 6_000.0).abs() < 1e-9 && (r[1] - 300.0).abs() < 1e-9,
            "{r:?}"
        );
        assert!(with_rate(&mut g, 1_260.0).is_ok());
        let r: Vec<f64> = g[0]
            .plan
            .streams
            .iter()
            .map(|s| s.rate_iops.unwrap())
            .collect();
        assert!(
            (r[0] - 600.0).abs() < 1e-9 && (r[1] - 30.0).abs() < 1e-9,
            "{r:?}"
        );
    }

    #[test]
    fn the_offered_rate_is_the_total_with_rate_set() {
        for (profile, workers, total) in [
            ("easy-run-4k100r", 4, 10_000.0),
            ("vmfleet-sql", 2, 3_600.0),
            ("vmfleet-sql", 3, 360.0),
        ] {
            let mut g = groups(profile, workers);
            assert!(with_rate(&mut g, total).is_ok());
            let got = offered_rate(&g).unwrap();
            assert!((got - total).abs() < 1e-6, "{profile}: {got} for {total}");
        }
        // A closed loop offers no rate.
        let mut g = groups("easy-run-4k100r", 2);
        assert!(closed_loop(&mut g, "--start", "").is_ok());
        assert_eq!(offered_rate(&g), None);
    }

    #[test]
    fn rated_streams_make_one_closed_loop_mix() {
        let mut g = groups("vmfleet-sql", 1);
        assert!(closed_loop(&mut g, "--start", "").is_ok());
        let p = &g[0].plan;
        assert!(p.timing.rate_iops.is_none());
        assert!(p
            .streams
            .iter()
            .all(|s| s.rate_iops.is_none() && s.qd.is_none()));
        let w: Vec<u32> = p.streams.iter().map(|s| s.weight.unwrap()).collect();
        assert_eq!(w, vec![1000, 50]);
        // A weighted profile only loses its rate cap.
        let mut g = groups("vdi-boot", 1);
        assert!(closed_loop(&mut g, "--start", "").is_ok());
        assert!(g[0].plan.timing.rate_iops.is_none());
        assert_eq!(g[0].plan.streams[0].weight, Some(70));
    }
}
