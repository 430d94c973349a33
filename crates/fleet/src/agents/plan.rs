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
    let mut plan = plan_hosts(hosts, groups)?;
    if let Some(k) = settings.active_hosts {
        plan = first_hosts(plan, hosts, k)?;
    }
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

/// A fleet-size step: of `plan` (the whole fleet's), only the first `k` worker hosts
/// run, each its share of the whole fleet's workers; the others (and their agents) wait.
/// So the step of every host is the whole fleet's run, and each step's load grows with
/// its hosts. Refused: no host, more than the fleet has, several worker groups (a
/// prefix of the hosts would run some groups and not others), and a fleet where some
/// host has no share (a host that adds no load is not a client).
pub fn first_hosts(mut plan: HostPlan, hosts: &[HostSpec], k: u32) -> Result<HostPlan, FleetError> {
    let workers: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].role == Role::Workers)
        .collect();
    let n = workers.len();
    if k == 0 || k as usize > n {
        return Err(FleetError::Input(format!(
            "a fleet-size step of {k} host(s): the fleet has {n} host(s) that run workers, so give 1 to {n}"
        )));
    }
    if plan.groups.len() > 1 {
        return Err(FleetError::Input(
            "a fleet-size step runs one profile on each host: worker groups (--group) would run on some hosts and not others".into(),
        ));
    }
    if let Some(&i) = workers.iter().find(|&&i| plan.hosts[i].count == 0) {
        let total: u32 = plan.hosts.iter().map(|h| h.count).sum();
        return Err(FleetError::Input(format!(
            "a fleet-size step gives each host its share of the whole fleet's workers, but {total} worker(s) over {n} hosts leave host {} without any: give --workers as a multiple of {n}",
            hosts[i].name
        )));
    }
    let active = &workers[..k as usize];
    let kept: u32 = active.iter().map(|&i| plan.hosts[i].count).sum();
    for (i, share) in plan.hosts.iter_mut().enumerate() {
        if !active.contains(&i) {
            share.base = kept;
            share.count = 0;
            for g in &mut share.groups {
                g.worker_base = kept;
                g.plan.fleet.workers = 0;
            }
        }
    }
    plan.groups[0].plan.fleet.workers = kept;
    let mut counts: Vec<u32> = active.iter().map(|&i| plan.hosts[i].count).collect();
    counts.dedup();
    let each = match counts.as_slice() {
        [one] => format!("{one} worker(s) each"),
        _ => format!("{kept} workers in all"),
    };
    let waiting = n - k as usize;
    plan.notices.push(match waiting {
        0 => format!("fleet size {k}: every host runs, {each}"),
        w => format!(
            "fleet size {k}: the first {k} of {n} hosts run ({} to {}), {each}; the other {w} wait",
            hosts[active[0]].name,
            hosts[active[k as usize - 1]].name
        ),
    });
    Ok(plan)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::host::TargetArg;

    fn hosts(n: usize) -> Vec<HostSpec> {
        (0..n)
            .map(|i| HostSpec {
                name: format!("h{i}"),
                destination: format!("h{i}"),
                target: TargetArg::Dir("/t".into()),
                workers: None,
                labels: Default::default(),
                iofleet_path: None,
                reach: Reach::Local,
                role: Role::Workers,
                observe: Vec::new(),
                scrape: None,
            })
            .collect()
    }

    fn groups(workers: u32) -> Vec<GroupPlan> {
        GroupPlan::single(
            fixtures::plan(
                fixtures::fleet(workers, 1, 1, 1),
                vec![fixtures::stream("s", 100.0)],
            ),
            0,
        )
    }

    #[test]
    fn a_fleet_size_step_runs_the_first_hosts_each_with_its_whole_fleet_share() {
        let h = hosts(4);
        let full = plan_hosts(&h, &groups(8)).unwrap();
        let two = first_hosts(full.clone(), &h, 2).unwrap();
        assert_eq!(two.groups[0].plan.fleet.workers, 4);
        let counts: Vec<(u32, u32)> = two.hosts.iter().map(|s| (s.base, s.count)).collect();
        assert_eq!(counts, vec![(0, 2), (2, 2), (4, 0), (4, 0)]);
        assert_eq!(two.hosts[1].groups[0].worker_base, 2);
        assert_eq!(two.hosts[3].groups[0].plan.fleet.workers, 0);
        assert!(
            two.notices.iter().any(|n| n
                .contains("first 2 of 4 hosts run (h0 to h1), 2 worker(s) each; the other 2 wait")),
            "{:?}",
            two.notices
        );
        // Every host: the whole fleet's run.
        let all = first_hosts(full.clone(), &h, 4).unwrap();
        assert_eq!(all.hosts, full.hosts);
        assert_eq!(all.groups, full.groups);
        // An observer is not a client: the first worker hosts run.
        let mut h = hosts(3);
        h[0].role = Role::Observer;
        let p = first_hosts(plan_hosts(&h, &groups(2)).unwrap(), &h, 1).unwrap();
        let counts: Vec<u32> = p.hosts.iter().map(|s| s.count).collect();
        assert_eq!(counts, vec![0, 1, 0]);
    }

    #[test]
    fn a_fleet_size_step_refuses_what_it_cannot_run() {
        let h = hosts(4);
        let full = plan_hosts(&h, &groups(8)).unwrap();
        for (k, says) in [(0, "give 1 to 4"), (5, "give 1 to 4")] {
            let Err(FleetError::Input(e)) = first_hosts(full.clone(), &h, k) else {
                panic!("{k} accepted")
            };
            assert!(e.contains(says), "{e}");
        }
        let Err(FleetError::Input(e)) = first_hosts(plan_hosts(&h, &groups(2)).unwrap(), &h, 1)
        else {
            panic!("a host without a share accepted")
        };
        assert!(
            e.contains("leave host h2 without any") && e.contains("multiple of 4"),
            "{e}"
        );
        let mut two = groups(4);
        two.extend(groups(4).into_iter().map(|mut g| {
            g.worker_base = 4;
            g
        }));
        let Err(FleetError::Input(e)) = first_hosts(plan_hosts(&h, &two).unwrap(), &h, 2) else {
            panic!("groups accepted")
        };
        assert!(e.contains("--group"), "{e}");
    }
}
