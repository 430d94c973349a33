//! The `iofleet` binary: parse the command line (`cli`), call the one subcommand asked
//! for, exit with the code its outcome earns (`exit`: 0 success, 1 failure, 2 bad
//! input, 3 a run below its quorum of hosts, 4 corrupt data, 5 I/O errors, 130 Ctrl-C).
//! No logic lives here.
//!
//! A map of the crate. Its modules import one another as a tree (tests/house_rules.rs),
//! and so do its folders: `cmd/` uses `run/`, which uses `web/` and `store/`, and
//! nothing imports the root.
//!
//! ```text
//! main.rs    the root: parse, dispatch, exit; `iofleet man` and `completions`
//! cli.rs     the command line: Cli and Command, naming each command's flags
//! cmd/       one file per subcommand: its own flags, one call, what it prints; no
//!            command imports another's (what two share lives outside cmd/)
//! run/       the measuring session of every command that runs a workload:
//!   resolve.rs       arguments → worker groups + run settings; the fleet they run on
//!                    (launcher_for); Ctrl-C; the exit code; the rate arithmetic
//!   session.rs       the command's Session: its fleet, opened by its first
//!                    measurement and closed at its end, and its live outputs
//!                    (/metrics, the live view); it runs the measurements:
//!   measure.rs       Session::measure, one measurement on that fleet, with the store
//!                    and the terminal line (live.rs) around it
//!   steady.rs        Session::measure_step, once or in rounds until steady
//!   stepping.rs      Session::step, a stepped command's step (its name, labels,
//!                    seed), and the flags such a command refuses
//!   fio_job.rs       a fio job file as worker groups; fio_phases.rs its stonewall phases
//!   find_max.rs      the find-max search over steps; search.rs its decisions
//!   output.rs        what a run prints: its plan (dry_run.rs) or its result
//! web/       the listeners: http.rs (the server), access.rs (who may ask), metrics.rs
//!            (/metrics), live_web.rs + live_page.html (the live view), step.rs (a step
//!            as the live outputs announce it), serve.rs (`iofleet serve`'s pages)
//! store/     runs saved as they are measured (record.rs: --db, --no-save, --name,
//!            --label) and read back by id, name or `latest` (stored.rs)
//! args.rs    the flags several commands share: RunArgs, --convention, --output-format
//! inputs.rs  every input file read once per command
//! exit.rs    Exit: an error and the exit code it earns
//! ```
//!
//! The flow of a command that measures (`run`, `sweep`, `find-max`, `plan`):
//!
//! ```text
//!  argv ─cli─▶ Command ─▶ cmd::NAME::run ─session::resolve─▶ groups + RunSettings
//!   ─▶ Session::open (listeners, live view)
//!   ─▶ measure, once per run, step, round or phase
//!        ─▶ the command's fleet (threads here, agents over SSH, pods; opened once)
//!        ─▶ iofleet_fleet::run ─▶ RunResult, saved in the store as it goes
//!   ─▶ Session::finish (fleet closed) ─▶ output: table, JSON, fio JSON ─▶ exit code
//! ```

#![forbid(unsafe_code)]

mod args;
mod cli;
mod cmd;
mod exit;
mod inputs;
mod run;
mod store;
mod web;

/// What a unit test needs from the machine: every skip goes through it (tests-support).
#[cfg(test)]
#[path = "../../../tests-support/need.rs"]
mod need;

use clap::{CommandFactory, Parser};

use cli::{Cli, Command};
use exit::Exit;

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
    // In a worker VM iofleet built, this binary is the guest's /init (process 1).
    if iofleet_fleet::vms::guest::is_guest_init(&std::env::args().next().unwrap_or_default()) {
        iofleet_fleet::vms::guest::main();
    }
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(c) => cmd::run::run(c),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Precondition(a) => cmd::precondition::run(a),
        Command::FindMax(a) => cmd::find_max::run(a),
        Command::Plan(p) => cmd::plan::run(p),
        Command::Profiles(p) => cmd::profiles::run(p),
        Command::Results(r) => cmd::results::run(r),
        Command::Ceiling(c) => cmd::ceiling::run(c),
        Command::Compare(c) => cmd::compare::run(c),
        Command::Report(r) => cmd::report::run(r),
        Command::Serve(s) => cmd::serve::run(s),
        Command::Hosts(h) => cmd::hosts::run(h),
        Command::Kube(k) => cmd::kube::run(k),
        Command::Vms(v) => cmd::vms::run(v),
        Command::Agent(a) => cmd::agent::run(a),
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
