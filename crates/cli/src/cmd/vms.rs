//! `iofleet vms clean --hosts FILE`: remove what iofleet made for a fleet of worker VMs
//! — its domains (`iofleet-NAME-I`, destroyed and undefined), their data disks' volumes
//! (`iofleet-NAME-I-dK`) in the fleet's pool and their initramfs files — found by the
//! fleet's name on each of its hypervisors, and nothing else. For a fleet kept with
//! `keep = true`, or left behind by a run that was killed before it could remove them.
//! Lists what it removes; `--dry-run` only lists.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use iofleet_fleet::hosts_file::HostsFile;
use iofleet_fleet::vms::launcher::{leftovers, remove, virsh_all};

use crate::exit::Exit;

#[derive(Subcommand, Debug)]
pub enum VmsCmd {
    /// Remove every domain, volume and initramfs iofleet made for the fleet described
    /// in FILE.
    Clean(VmsCleanArgs),
}

#[derive(Args, Debug)]
pub struct VmsCleanArgs {
    /// The fleet's description (a TOML file with a [vms] table).
    #[arg(long, value_name = "FILE")]
    pub hosts: PathBuf,
    /// List what would be removed, and remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(cmd: VmsCmd) -> Result<i32, Exit> {
    let VmsCmd::Clean(a) = cmd;
    let fleet = match iofleet_fleet::hosts_file::read(&a.hosts, &crate::inputs::text)
        .map_err(Exit::input)?
    {
        HostsFile::Vms(f) => *f,
        _ => {
            return Err(Exit::input(format!(
                "--hosts {}: not a fleet of VMs (a TOML file with a [vms] table)",
                a.hosts.display()
            )))
        }
    };
    let hvs = virsh_all(&fleet).map_err(Exit::input)?;
    let found = leftovers(&fleet, &hvs).map_err(Exit::failure)?;
    if found.is_empty() {
        println!("vms: nothing of fleet {} is there", fleet.name);
        return Ok(0);
    }
    let verb = if a.dry_run {
        "would remove"
    } else {
        "removing"
    };
    for (h, d) in &found.domains {
        println!("{verb} domain {d} on {}", fleet.hypervisors[*h]);
    }
    for (h, v) in &found.volumes {
        println!(
            "{verb} volume {v} of pool {} on {}",
            fleet.pool, fleet.hypervisors[*h]
        );
    }
    for (h, f) in &found.files {
        println!("{verb} {} on {}", f.display(), fleet.hypervisors[*h]);
    }
    if a.dry_run {
        return Ok(0);
    }
    for e in remove(&fleet, &hvs, &found) {
        eprintln!("error: {e}");
    }
    let left = leftovers(&fleet, &hvs).map_err(Exit::failure)?;
    if left.is_empty() {
        println!("vms: fleet {} removed", fleet.name);
        Ok(0)
    } else {
        for d in &left.domains {
            eprintln!("error: still there: domain {}", d.1);
        }
        for v in &left.volumes {
            eprintln!("error: still there: volume {}", v.1);
        }
        for (h, f) in &left.files {
            eprintln!(
                "error: still there: {} on {}",
                f.display(),
                fleet.hypervisors[*h]
            );
        }
        Ok(1)
    }
}
