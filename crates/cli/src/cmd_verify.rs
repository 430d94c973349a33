//! `iofleet verify`: check the disks of a verified run (`--verify`) against their
//! journals, here (`--target`, resolved as `run` resolves it) or on every host of an
//! inventory (`--hosts`). One greppable line per corruption found (up to
//! `MAX_LINES`, all counted), a summary line, and the exit code: 0 clean, 4 when any
//! unit is corrupt, 2 for bad input (a disk without a journal among them).

use iofleet_fleet::agents::AgentLauncher;
use iofleet_fleet::verify::check_target;
use iofleet_stats::result::VerifySummary;

use crate::args::RunArgs;
use crate::cmd_run::{resolve, target_spec};
use crate::Exit;

/// Corruption lines printed per host (every one is counted).
const MAX_LINES: usize = 1000;

pub fn run(a: RunArgs) -> Result<i32, Exit> {
    let (groups, settings) = resolve(&a)?;
    let fleet_err = |e: iofleet_fleet::FleetError| {
        if e.is_input_error() {
            Exit::input(e)
        } else {
            Exit::failure(e)
        }
    };
    let per_host: Vec<(String, usize, VerifySummary)> = match &a.hosts {
        None => {
            let host = iofleet_fleet::sys::hostname();
            let (disks, found) =
                check_target(&target_spec(&a)?, &groups, &settings, &host, MAX_LINES)
                    .map_err(fleet_err)?;
            vec![(host, disks, found)]
        }
        Some(path) => {
            let hosts = iofleet_fleet::inventory::load(path).map_err(Exit::input)?;
            let mut launcher = AgentLauncher::new(hosts, settings);
            launcher
                .verify_hosts(&groups, MAX_LINES)
                .map_err(fleet_err)?
        }
    };
    let mut corrupt = 0;
    for (host, disks, found) in &per_host {
        for c in &found.first {
            println!("{c}");
        }
        if found.corruptions > found.first.len() as u64 {
            println!(
                "host {host}: {} more corruption(s) not listed",
                found.corruptions - found.first.len() as u64
            );
        }
        println!(
            "verify: host {host}: {disks} disk(s), {} unit(s) checked, {} corruption(s)",
            found.units_checked, found.corruptions
        );
        corrupt += found.corruptions;
    }
    Ok(if corrupt > 0 { 4 } else { 0 })
}
