//! `iofleet verify`: check the disks of a verified run (`--verify`) against their
//! journals, here (`--target`, resolved as `run` resolves it) or on every host of an
//! inventory (`--hosts`). One greppable line per corruption found (up to
//! `MAX_LINES`, all counted), a summary line, and the exit code: 0 clean, 4 when any
//! unit is corrupt, 2 for bad input (a disk without a journal among them).

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::resolve::{fleet_exit, launcher_for, resolve};

/// Corruption lines printed per host (every one is counted).
const MAX_LINES: usize = 1000;

pub fn run(a: RunArgs) -> Result<i32, Exit> {
    let (groups, settings) = resolve(&a)?;
    // The launcher a run would use, so the disks are found where the run put them.
    let mut launcher = launcher_for(&a)?;
    let per_host = launcher
        .verify(&groups, &settings, MAX_LINES)
        .map_err(fleet_exit)?;
    let mut corrupt = 0;
    for (host, disks, found) in &per_host {
        for c in &found.first {
            println!("{}", iofleet_report::text::escape_lines(&c.to_string()));
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
