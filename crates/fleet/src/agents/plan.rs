//! The agents' plan: where a fleet's workers go on an inventory's hosts, decided
//! without contacting any, so that a run and `--dry-run` cannot disagree. Every host's
//! pins applied, the rest spread evenly (`plan_hosts`), and what this machine can check
//! before any host is contacted: `--verify` against the engine, the controller's memory
//! and that of agents it starts here. The same plan runs a Kubernetes fleet's pods.

use iofleet_profile::{FleetTotals, GroupPlan};

use crate::error::FleetError;
use crate::host::{HostSpec, Reach, Role};
use crate::inventory::place;
use crate::local::check_verify;
use crate::local::footprint::{self, MemoryNeed};
use crate::plan::{HostShare, Hosts, LaunchPlan};
use crate::settings::RunSettings;
use crate::sys;
use crate::EngineSpec;

/// The plan of a run of `groups` on `hosts` with `settings`: each host's share, the
/// engine as far as it is known here (`auto` is resolved on each host).
pub fn plan(
    hosts: &[HostSpec],
    groups: &[GroupPlan],
    settings: &RunSettings,
) -> Result<LaunchPlan<Hosts>, FleetError> {
    check_verify(groups, &settings.engine)?;
    let plan = plan_hosts(hosts, groups)?;
    check_memory(hosts, &plan, settings)?;
    Ok(LaunchPlan {
        groups: plan.groups,
        engine: match &settings.engine {
            EngineSpec::Auto => {
                "auto (each host uses io_uring where its kernel allows it, else psync)".into()
            }
            e => e.to_string(),
        },
        direct: settings.direct,
        placement: Hosts(hosts.iter().cloned().zip(plan.hosts).collect()),
        notices: plan.notices,
        settings: settings.clone(),
    })
}

/// Where a fleet's workers go on an inventory's hosts, decided without contacting any:
/// the plan that both a run and `--dry-run` use, so the two cannot disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct HostPlan {
    /// The groups as they will run: when every host pins its worker count, the pins are
    /// the fleet (a single group takes their sum).
    pub groups: Vec<GroupPlan>,
    /// Per inventory host, in its order.
    pub hosts: Vec<HostShare>,
    /// What the user should know (pins that change the worker count, idle hosts).
    pub notices: Vec<String>,
}

/// Place `groups` on `hosts`: every host's pins applied, the rest spread evenly.
pub fn plan_hosts(hosts: &[HostSpec], groups: &[GroupPlan]) -> Result<HostPlan, FleetError> {
    let mut notices = Vec::new();
    let mut groups = groups.to_vec();
    let planned = fleet_totals(&groups)?.workers;
    // Summed wide: the pins were bounded one by one; their sum is bounded below.
    let pinned: u64 = hosts.iter().filter_map(|h| h.workers).map(u64::from).sum();
    let runs_workers = |h: &&HostSpec| h.role == Role::Workers;
    if hosts
        .iter()
        .filter(runs_workers)
        .all(|h| h.workers.is_some())
        && pinned != planned
    {
        if groups.len() > 1 {
            return Err(FleetError::Input(format!(
                "--hosts: every host pins its workers ({pinned} in all) but the groups have {planned}; make them agree"
            )));
        }
        notices.push(format!(
            "every host pins its worker count: running {pinned} workers, not the planned {planned}"
        ));
        // Past u32, the totals below refuse it as past the fleet's bound.
        groups[0].plan.fleet.workers = u32::try_from(pinned).unwrap_or(u32::MAX);
    }
    // At most fleet.workers' bound, so it fits.
    let total = fleet_totals(&groups)?.workers as u32;
    let placement = place(hosts, total).map_err(FleetError::Input)?;
    let shares = hosts
        .iter()
        .zip(&placement)
        .map(|(h, &(base, count))| {
            if count == 0 && h.role == Role::Workers {
                notices.push(format!(
                    "host {} has no worker to run ({total} workers over {} hosts)",
                    h.name,
                    hosts.len()
                ));
            }
            let share = groups
                .iter()
                .map(|g| {
                    let lo = g.worker_base.max(base);
                    let hi = (g.worker_base + g.plan.fleet.workers).min(base + count);
                    let mut g = g.clone();
                    g.worker_base = lo.min(base + count);
                    g.plan.fleet.workers = hi.saturating_sub(lo);
                    g
                })
                .collect();
            HostShare {
                base,
                count,
                groups: share,
            }
        })
        .collect();
    Ok(HostPlan {
        groups,
        hosts: shares,
        notices,
    })
}

/// The fleet's totals, bounded (`FleetTotals::of`), as an input error.
fn fleet_totals(groups: &[GroupPlan]) -> Result<FleetTotals, FleetError> {
    FleetTotals::of(groups).map_err(|e| FleetError::Input(e.to_string()))
}

/// What this machine can know before contacting any host: the controller's own
/// memory and that of the agents it starts here (`transport = "local"`), against
/// what it has available. Every agent checks its own share again on its host
/// before it allocates (`ThreadLauncher::plan`).
fn check_memory(
    hosts: &[HostSpec],
    plan: &HostPlan,
    settings: &RunSettings,
) -> Result<(), FleetError> {
    let n = hosts.len() as u64;
    let mut need = MemoryNeed::of_controller(&fleet_totals(&plan.groups)?, n);
    let caps = settings.engine.caps();
    let cpus = sys::allowed_cpus().len() as u64;
    let mut local = 0;
    for (h, share) in hosts.iter().zip(&plan.hosts) {
        if h.reach != Reach::Local || share.count == 0 {
            continue;
        }
        let t = fleet_totals(&share.groups)?;
        // As the agent will place its lanes: the threads asked for, else one per
        // CPU, at most one per lane; one per lane with one I/O in flight each.
        let asked = share
            .groups
            .iter()
            .filter_map(|g| g.plan.fleet.io_threads)
            .max();
        let io_threads = if caps.async_qd {
            asked.map_or(cpus, u64::from).clamp(1, t.lanes.max(1))
        } else {
            t.lanes.max(1)
        };
        need = need.and(MemoryNeed::of_threads(&t, &caps, io_threads));
        local += 1;
    }
    let whose = match local {
        0 => "this host (the controller)".to_string(),
        n => format!("this machine (the controller and {n} local host(s))"),
    };
    need.check(footprint::available(), &whose)
}
