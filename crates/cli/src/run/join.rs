//! A fleet of agents that join (`--listen ADDR --expect N`): the command's join port is
//! opened, the join file written (address and token, its owner's only) and the join
//! line printed; once N agents have joined (or `--join-timeout` passed, naming the ranks
//! missing) the file is removed and the agents are the fleet's hosts for every run of
//! the command. The port closes with the fleet. A dry run plans on N hosts named by
//! rank and opens nothing.

use std::path::PathBuf;
use std::time::Duration;

use iofleet_fleet::agents::join::{JoinFile, JoinServer, JoinSettings, Member};
use iofleet_fleet::agents::AgentLauncher;
use iofleet_fleet::host::{HostSpec, Reach, Role, TargetArg};
use iofleet_fleet::hosts_file::HostsFile;
use iofleet_fleet::inventory::DEFAULT_REMOTE_TARGET;
use iofleet_fleet::Fleet;

use crate::args::RunArgs;
use crate::exit::{ctrl_c_flag, fleet_exit, Exit};

/// How long a connection has, from its accept, to complete TLS and its join (at most:
/// the host timeout when shorter).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The joined fleet of `a` (`--listen`, `--expect`): waits for the agents.
pub(crate) fn joined_fleet(a: &RunArgs) -> Result<Box<dyn Fleet>, Exit> {
    let j = &a.join;
    let (listen, expect) = (
        j.listen.as_deref().expect("called with --listen"),
        j.expect
            .expect("check_join_flags: --listen without --hosts has --expect"),
    );
    let port = JoinServer::open(
        listen,
        j.advertise.as_deref(),
        JoinSettings {
            expect,
            host_timeout: a.host_timeout,
            handshake_timeout: HANDSHAKE_TIMEOUT.min(a.host_timeout),
            fanout: j.relay_fanout.unwrap_or(0),
            dedicated: j.relay_dedicated,
            ..Default::default()
        },
    )
    .map_err(fleet_exit)?;
    let file = j.join_file.clone().unwrap_or_else(default_join_file);
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Exit::failure(format!("--join-file {}: {e}", file.display())))?;
    }
    JoinFile {
        join: port.address.to_string(),
        token: port.token().to_string(),
    }
    .write(&file)
    .map_err(|e| {
        Exit::failure(format!(
            "--join-file {}: cannot write it: {e}",
            file.display()
        ))
    })?;
    let removed = RemoveFile(file.clone());
    eprintln!(
        "iofleet: waiting for {expect} agent(s) to join on {} (--join-timeout {} s); start them with\n  iofleet agent --join-file {}\nor, with the token from that file in IOFLEET_JOIN_TOKEN,\n  iofleet agent --join {}",
        port.local_addr,
        j.join_timeout.as_secs_f64(),
        file.display(),
        port.address
    );
    if let Some(k) = j.relay_fanout {
        return relayed_fleet(a, port, expect, k, removed);
    }
    let members = port
        .wait(expect, j.join_timeout, &ctrl_c_flag())
        .map_err(fleet_exit)?;
    drop(removed);
    let hosts: Vec<HostSpec> = members.iter().map(|m| host_of(a, m)).collect();
    let machines: std::collections::BTreeSet<&str> =
        members.iter().map(|m| m.hostname.as_str()).collect();
    eprintln!(
        "iofleet: {} agent(s) joined from {} host(s); ranks from {}",
        members.len(),
        machines.len(),
        rank_sources(&members)
    );
    Ok(Box::new(AgentLauncher::joined(hosts, port)))
}

/// A relayed fleet (`--relay-fanout K`): the relays join this port; the agents below
/// them join the relays, which wait for them at their first job. Its hosts are every
/// rank: the relays as they joined, the others by rank until their relays name them.
fn relayed_fleet(
    a: &RunArgs,
    port: JoinServer,
    expect: u32,
    fanout: u32,
    removed: RemoveFile,
) -> Result<Box<dyn Fleet>, Exit> {
    use iofleet_fleet::agents::relays::{is_relay, RelayLauncher};
    let ranks: Vec<u32> = (0..expect).filter(|&r| is_relay(r, fanout)).collect();
    let members = port
        .wait_for(&ranks, a.join.join_timeout, &ctrl_c_flag())
        .map_err(fleet_exit)?;
    let mut all = planned_hosts(a);
    for m in &members {
        all[m.rank as usize] = host_of(a, m);
    }
    eprintln!(
        "iofleet: {} relay(s) joined; the {} agent(s) below them join the relays (--relay-fanout {fanout})",
        members.len(),
        expect as usize - members.len()
    );
    // The file stays while the agents below the relays may still start and read it
    // (they ask this port first); it goes with the fleet.
    Ok(Box::new(KeepFile {
        fleet: Box::new(RelayLauncher::new(
            all,
            fanout,
            a.join.relay_dedicated,
            port,
        )),
        _file: removed,
    }))
}

/// A fleet that keeps a file (its join file) until the fleet goes.
struct KeepFile {
    fleet: Box<dyn Fleet>,
    _file: RemoveFile,
}

impl Fleet for KeepFile {
    fn plan(
        &self,
        groups: &[iofleet_profile::GroupPlan],
        settings: &iofleet_fleet::settings::RunSettings,
    ) -> Result<iofleet_fleet::plan::LaunchPlan, iofleet_fleet::error::FleetError> {
        self.fleet.plan(groups, settings)
    }

    fn measure(
        &mut self,
        groups: &[iofleet_profile::GroupPlan],
        settings: &iofleet_fleet::settings::RunSettings,
        gate: &mut dyn iofleet_fleet::controller::StartGate,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
        observer: &mut dyn iofleet_fleet::observer::Observer,
    ) -> Result<iofleet_stats::result::RunResult, iofleet_fleet::error::FleetError> {
        self.fleet.measure(groups, settings, gate, stop, observer)
    }

    fn verify(
        &mut self,
        groups: &[iofleet_profile::GroupPlan],
        settings: &iofleet_fleet::settings::RunSettings,
        keep: usize,
    ) -> Result<Vec<iofleet_fleet::launcher::HostVerified>, iofleet_fleet::error::FleetError> {
        self.fleet.verify(groups, settings, keep)
    }

    fn precondition(
        &mut self,
        groups: &[iofleet_profile::GroupPlan],
        settings: &iofleet_fleet::settings::RunSettings,
        stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
        observer: &mut dyn iofleet_fleet::observer::Observer,
    ) -> Result<Option<iofleet_fleet::precondition::Preconditioned>, iofleet_fleet::error::FleetError>
    {
        self.fleet.precondition(groups, settings, stop, observer)
    }

    fn close(&mut self) -> Vec<String> {
        self.fleet.close()
    }
}

/// --listen with --expect (agents that join), or with --hosts naming a Kubernetes fleet
/// in Job mode (its pods are the agents, as many as its pods).
pub(crate) fn check_join_flags(a: &RunArgs) -> Result<(), Exit> {
    match (&a.join.listen, &a.hosts, a.join.expect) {
        (Some(_), None, None) => Err(Exit::input(
            "--listen: needs --expect N (how many agents the fleet takes)",
        )),
        (Some(_), Some(_), Some(_)) => Err(Exit::input(
            "--expect: with --hosts, the fleet's pods are the agents (kubernetes.pods); give --listen without --expect",
        )),
        (Some(_), Some(_), None) if a.join.join_file.is_some() => Err(Exit::input(
            "--join-file: a Kubernetes fleet's pods read the join address and token from its Secret",
        )),
        _ if a.join.relay_fanout.is_some() && a.drop_caches.is_some() => Err(Exit::input(
            "--drop-caches: not with --relay-fanout yet (every host must drop its caches at one moment, which relays do not pass on)",
        )),
        (Some(_), Some(_), None) if a.join.relay_fanout.is_some() => Err(Exit::input(
            "--relay-fanout: with --listen and --expect only (a Kubernetes fleet's pods join the controller directly)",
        )),
        _ => Ok(()),
    }
}

/// `--hosts FILE --listen ADDR [--advertise HOST]`: the Kubernetes fleet of FILE, in Job
/// mode, its join port where the flags say.
pub(crate) fn kube_job_fleet(a: &RunArgs, path: &std::path::Path) -> Result<Box<dyn Fleet>, Exit> {
    let HostsFile::Kubernetes(fleet) =
        iofleet_fleet::hosts_file::read(path, &crate::inputs::text).map_err(Exit::input)?
    else {
        return Err(Exit::input(format!(
            "--listen: with --hosts, only the pods of a Kubernetes fleet in Job mode join (mode = \"job\"); {} is an inventory of hosts",
            path.display()
        )));
    };
    let mut fleet = *fleet;
    fleet
        .join_at(a.join.listen.as_deref(), a.join.advertise.as_deref())
        .map_err(|e| Exit::input(format!("{e} ({})", path.display())))?;
    Ok(Box::new(iofleet_fleet::kube::KubeLauncher::new(
        fleet,
        path.to_path_buf(),
    )))
}

/// The hosts a dry run plans on: one per expected rank, none contacted.
pub(crate) fn planned_hosts(a: &RunArgs) -> Vec<HostSpec> {
    let expect = a.join.expect.unwrap_or(1);
    (0..expect)
        .map(|rank| HostSpec {
            name: format!("rank-{rank}"),
            destination: format!("rank {rank} (joins)"),
            target: controller_target(a).under(&format!("rank-{rank}")),
            workers: None,
            labels: Default::default(),
            iofleet_path: None,
            reach: Reach::Joined { rank, member: 0 },
            role: Role::Workers,
            observe: Vec::new(),
            scrape: None,
        })
        .collect()
}

/// Where joined agents run their shares unless they name their own: the command's
/// --target, else the inventories' default, each under `rank-N` (agents may share a
/// file system).
fn controller_target(a: &RunArgs) -> TargetArg {
    TargetArg::from_paths(
        a.target
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
    )
    .unwrap_or_else(|| TargetArg::Dir(DEFAULT_REMOTE_TARGET.into()))
}

/// A joined agent as a host: named by its machine and rank, its rank and machine as
/// labels (so groups and pins can address it).
fn host_of(a: &RunArgs, m: &Member) -> HostSpec {
    m.host(
        m.target
            .clone()
            .unwrap_or_else(|| controller_target(a).under(&format!("rank-{}", m.rank))),
    )
}

/// "OMPI_COMM_WORLD_RANK (16)", or several sources with their counts.
fn rank_sources(members: &[Member]) -> String {
    let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
    for m in members {
        *by.entry(m.rank_from.as_str()).or_default() += 1;
    }
    by.iter()
        .map(|(from, n)| {
            let from = if *from == "none" {
                "the controller"
            } else {
                from
            };
            format!("{from} ({n})")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// ~/.cache/iofleet/join/PID.json (the temporary directory without a home).
fn default_join_file() -> PathBuf {
    let base = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/iofleet/join"))
        .unwrap_or_else(|| std::env::temp_dir().join("iofleet-join"));
    base.join(format!("{}.json", std::process::id()))
}

/// Removes the join file when the wait ends, whichever way.
struct RemoveFile(PathBuf);

impl Drop for RemoveFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
