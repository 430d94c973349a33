//! The fleet-size dimension of `sweep --vary hosts=…` and `find-max --over hosts`: how
//! many hosts the command's fleet has, and a step's count checked against it before
//! anything runs. A step of K hosts sets `RunArgs::active_hosts`, which becomes the run
//! settings' `active_hosts`: the fleet's plan (`agents::plan::first_hosts`) then gives
//! the first K worker hosts each its share of the whole fleet's workers and leaves the
//! others waiting, joined (or, for an inventory, their sessions closed). Every step runs
//! on the command's one fleet, so a joined agent joins once for the whole command.
//!
//! A Kubernetes fleet's pods are its hosts, so the same dimension counts pods; a VM
//! fleet's VMs will be its hosts the same way.

use iofleet_fleet::host::Role;
use iofleet_fleet::hosts_file::HostsFile;

use crate::args::RunArgs;
use crate::exit::Exit;

/// The key of the dimension in labels, tables and JSON.
pub(crate) const KEY: &str = "hosts";

/// How many hosts run workers in `a`'s fleet (`flag` names the dimension in errors):
/// `--expect N` of agents that join, an inventory's worker hosts, a Kubernetes fleet's
/// pods. Without a fleet of hosts, and with worker groups, refused; for joined agents,
/// the run's `workers` when they do not divide evenly over the hosts too (each host's
/// share is its load).
pub(crate) fn hosts_in(a: &RunArgs, workers: u32, flag: &str) -> Result<u32, Exit> {
    if a.group.len() > 1 {
        return Err(Exit::input(format!(
            "{flag}: a fleet-size step runs one profile on each host; with --group some hosts would run one group and others another"
        )));
    }
    if let Some(n) = a.join.expect {
        if !workers.is_multiple_of(n) {
            return Err(Exit::input(format!(
                "{flag}: each host carries its share of the whole fleet's workers, and {workers} worker(s) (--workers) do not divide over --expect {n} hosts: give a multiple of {n}"
            )));
        }
        return Ok(n);
    }
    let Some(path) = &a.hosts else {
        return Err(Exit::input(format!(
            "{flag}: a fleet-size step needs a fleet of hosts: agents that join (--listen ADDR --expect N) or an inventory (--hosts FILE)"
        )));
    };
    Ok(
        match iofleet_fleet::hosts_file::read(path, &crate::inputs::text).map_err(Exit::input)? {
            HostsFile::Inventory(hosts) => {
                hosts.iter().filter(|h| h.role == Role::Workers).count() as u32
            }
            HostsFile::Kubernetes(fleet) => fleet.pods,
            HostsFile::Vms(fleet) => fleet.vms,
        },
    )
}

/// One count of `flag` (`--vary hosts=K`): a whole number of hosts from 1 to `most`.
pub(crate) fn count(flag: &str, v: &str, most: u32) -> Result<u32, Exit> {
    let k: u32 = v.trim().parse().map_err(|_| {
        Exit::input(format!(
            "{flag}={v}: a fleet size is a whole number of hosts (e.g. hosts=1,2,4,8)"
        ))
    })?;
    if k == 0 {
        return Err(Exit::input(format!(
            "{flag}={v}: a fleet size is at least 1 host"
        )));
    }
    if k > most {
        return Err(Exit::input(format!(
            "{flag}={v}: the fleet has {most} host(s) that run workers, so at most {most}"
        )));
    }
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_a_whole_number_within_the_fleet() {
        assert_eq!(count("--vary hosts", "4", 8).ok(), Some(4));
        for (v, says) in [
            ("0", "at least 1 host"),
            ("9", "at most 8"),
            ("two", "whole number"),
            ("-1", "whole number"),
        ] {
            let e = count("--vary hosts", v, 8).unwrap_err();
            assert_eq!(e.code, 2);
            assert!(
                e.message.starts_with(&format!("--vary hosts={v}: ")),
                "{}",
                e.message
            );
            assert!(e.message.contains(says), "{}", e.message);
        }
    }
}
