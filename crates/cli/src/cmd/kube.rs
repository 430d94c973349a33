//! `iofleet kube clean --hosts FILE`: delete every object iofleet made for a Kubernetes
//! fleet — its StatefulSet, Service, pods and volume claims, found by the fleet's name
//! and labels, and nothing else. For a fleet kept with `keep = true`, or left behind by
//! a run that was killed before it could delete them. Lists what it deletes; `--dry-run`
//! only lists. `iofleet kube containerfile`: a minimal Containerfile for the pods' image
//! in Job mode (this iofleet in a glibc base).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use iofleet_fleet::hosts_file::HostsFile;
use iofleet_fleet::kube::cluster::Cluster;

use crate::exit::Exit;

#[derive(Subcommand, Debug)]
pub enum KubeCmd {
    /// Delete every object iofleet made for the fleet described in FILE.
    Clean(KubeCleanArgs),
    /// Print a minimal Containerfile for the pods' image in Job mode (mode = "job"):
    /// this iofleet, the controller's own version, in a glibc base.
    Containerfile,
}

#[derive(Args, Debug)]
pub struct KubeCleanArgs {
    /// The fleet's description (a TOML file with a [kubernetes] table).
    #[arg(long, value_name = "FILE")]
    pub hosts: PathBuf,
    /// List what would be deleted, and delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(cmd: KubeCmd) -> Result<i32, Exit> {
    let a = match cmd {
        KubeCmd::Clean(a) => a,
        KubeCmd::Containerfile => {
            print!("{}", iofleet_fleet::kube::job::containerfile());
            return Ok(0);
        }
    };
    let not_kube = || {
        Exit::input(format!(
            "--hosts {}: not a Kubernetes fleet description (a TOML file with a [kubernetes] table)",
            a.hosts.display()
        ))
    };
    // What the file is, decided where every command decides it (read once).
    let is_toml = a.hosts.extension().is_some_and(|e| e == "toml");
    let kube = is_toml
        && crate::inputs::text(&a.hosts)
            .is_ok_and(|t| iofleet_fleet::inventory::describes_kubernetes(&t));
    if !kube {
        return Err(not_kube());
    }
    let HostsFile::Kubernetes(fleet) =
        iofleet_fleet::hosts_file::read(&a.hosts, &crate::inputs::text).map_err(Exit::input)?
    else {
        return Err(not_kube());
    };
    let fleet = *fleet;
    let cluster = Cluster::new(&fleet);
    let found = cluster.leftovers().map_err(Exit::failure)?;
    if found.is_empty() {
        println!(
            "kubernetes: nothing of fleet {} in namespace {}",
            fleet.name, fleet.namespace
        );
        return Ok(0);
    }
    for o in &found {
        println!(
            "{} {o}",
            if a.dry_run {
                "would delete"
            } else {
                "deleting"
            }
        );
    }
    if a.dry_run {
        return Ok(0);
    }
    cluster.delete().map_err(Exit::failure)?;
    let left = cluster.leftovers().map_err(Exit::failure)?;
    if left.is_empty() {
        println!("kubernetes: fleet {} deleted", fleet.name);
        Ok(0)
    } else {
        for o in &left {
            eprintln!("error: still there: {o}");
        }
        Ok(1)
    }
}
