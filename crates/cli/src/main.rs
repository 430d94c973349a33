//! The `iofleet` binary: parse arguments, dispatch to one subcommand, map outcomes to
//! exit codes. No logic lives here.
//!
//! Exit codes: 0 success; 1 run-time failure; 2 bad input (a flag, a TOML key, a target
//! refused for safety); 3 hosts lost mid-run (unless --tolerate-host-loss); 4 verified
//! data found corrupt (`run --verify`, `verify`); 5 I/O errors (the run went on; failing
//! disks were taken out); 130 interrupted by Ctrl-C (what was measured is still
//! printed).

#![forbid(unsafe_code)]

mod access;
mod args;
mod cmd_ceiling;
mod cmd_compare;
mod cmd_findmax;
mod cmd_hosts;
mod cmd_kube;
mod cmd_plan;
mod cmd_precondition;
mod cmd_profiles;
mod cmd_report;
mod cmd_results;
mod cmd_run;
mod cmd_serve;
mod cmd_sweep;
mod cmd_verify;
mod dry_run;
mod find_max;
mod fio_job;
mod fio_phases;
mod http;
mod live;
mod live_session;
mod live_web;
mod metrics;
mod record;
mod search;
mod serve;
mod session;
mod steady;
mod stored;

/// What a unit test needs from the machine: every skip goes through it (tests-support).
#[cfg(test)]
#[path = "../../../tests-support/need.rs"]
mod need;

use clap::{CommandFactory, Parser};

use args::{Cli, Command, RunArgs};

/// An error that carries its exit code.
pub struct Exit {
    pub code: i32,
    pub message: String,
}

impl Exit {
    pub fn input(message: impl std::fmt::Display) -> Self {
        Exit {
            code: 2,
            message: message.to_string(),
        }
    }
    pub fn failure(message: impl std::fmt::Display) -> Self {
        Exit {
            code: 1,
            message: message.to_string(),
        }
    }
}

/// `iofleet man [SUBCOMMAND]`: the roff page of the one clap definition.
fn man(subcommand: Option<&str>) -> Result<i32, Exit> {
    let mut cmd = Cli::command();
    cmd.build();
    let page = match subcommand {
        None => cmd,
        Some(name) => {
            let sub = cmd.find_subcommand(name).cloned().ok_or_else(|| {
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .filter(|c| !c.is_hide_set())
                    .map(|c| c.get_name())
                    .collect();
                Exit::input(format!(
                    "man {name}: no such subcommand; one of {}",
                    names.join(", ")
                ))
            })?;
            // The page is iofleet-NAME(1), as git-style tools name them. clap keeps names
            // as &'static str; the process prints one page and exits.
            let title: &'static str = Box::leak(format!("iofleet-{name}").into_boxed_str());
            sub.name(title)
        }
    };
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| Exit::failure(format!("writing the man page: {e}")))?;
    Ok(0)
}

fn main() {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(c) => cmd_run::run(RunArgs {
            live: c.live,
            ..c.run
        }),
        Command::Verify(a) => cmd_verify::run(a),
        Command::Sweep(a) => cmd_sweep::run(a),
        Command::Precondition(a) => cmd_precondition::run(a),
        Command::FindMax(a) => cmd_findmax::run(a),
        Command::Plan(p) => cmd_plan::run(p),
        Command::Profiles(p) => cmd_profiles::run(p),
        Command::Results(r) => cmd_results::run(r),
        Command::Ceiling(c) => cmd_ceiling::run(c),
        Command::Compare(c) => cmd_compare::run(c),
        Command::Report(r) => cmd_report::run(r),
        Command::Serve(s) => cmd_serve::run(s),
        Command::Hosts(h) => cmd_hosts::run(h),
        Command::Kube(k) => cmd_kube::run(k),
        Command::Agent => Ok(iofleet_fleet::agents::agent::serve(
            Box::new(std::io::stdin()),
            Box::new(std::io::stdout()),
        )),
        Command::Completions { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "iofleet", &mut std::io::stdout());
            Ok(0)
        }
        Command::Man { subcommand } => man(subcommand.as_deref()),
        Command::Version => {
            println!(
                "iofleet {} (result schema {}, io_uring {})",
                env!("CARGO_PKG_VERSION"),
                iofleet_stats::result::SCHEMA_VERSION,
                match iofleet_engine::uring::probe() {
                    Ok(()) => "available".to_string(),
                    Err(e) => format!("unavailable: {e}"),
                }
            );
            Ok(0)
        }
    };
    match outcome {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // Messages echo names, labels and paths: printed escaped, line breaks kept.
            eprintln!("error: {}", iofleet_report::text::escape_lines(&e.message));
            std::process::exit(e.code);
        }
    }
}
