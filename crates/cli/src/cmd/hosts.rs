//! `iofleet hosts clean --hosts FILE`: remove what fleet runs keep on an inventory's
//! hosts. A run leaves its content-addressed copy of iofleet in each host's
//! `~/.cache/iofleet` so the next run uploads nothing (copies of other versions go by
//! themselves after `KEEP_DAYS` days unused); this removes every copy and abandoned
//! upload that no process runs, on every host at once, and says per host what it
//! removed. Verify journals of the user's runs in the same directory stay.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use iofleet_fleet::agents::clean_hosts;

use crate::exit::Exit;

#[derive(Subcommand, Debug)]
pub enum HostsCmd {
    /// Remove the iofleet copies and abandoned uploads fleet runs left on every host
    /// of the inventory (those no process runs).
    Clean(CleanArgs),
}

#[derive(Args, Debug)]
pub struct CleanArgs {
    /// The inventory (iofleet TOML, or Ansible INI) whose hosts to clean.
    #[arg(long, value_name = "FILE")]
    pub hosts: PathBuf,
}

pub fn run(cmd: HostsCmd) -> Result<i32, Exit> {
    let HostsCmd::Clean(a) = cmd;
    let hosts = iofleet_fleet::inventory::load(&a.hosts).map_err(Exit::input)?;
    let mut failed = 0;
    for (name, outcome) in clean_hosts(&hosts) {
        match outcome {
            Ok(lines) => {
                let removed = lines.iter().filter(|l| l.starts_with("removed ")).count();
                for l in lines.iter().filter(|l| !l.starts_with("removed ")) {
                    println!(
                        "host {}: {} (left)",
                        iofleet_report::text::escape(&name),
                        iofleet_report::text::escape(l)
                    );
                }
                println!(
                    "host {}: {removed} file(s) removed",
                    iofleet_report::text::escape(&name)
                );
            }
            Err(e) => {
                eprintln!(
                    "error: {}",
                    iofleet_report::text::escape_lines(&e.to_string())
                );
                failed += 1;
            }
        }
    }
    Ok(if failed > 0 { 1 } else { 0 })
}
