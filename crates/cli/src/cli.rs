//! The command line: `Cli` and its `Command`s, each naming the flags its command
//! module defines (`crate::cmd::*`) or the shared ones (`crate::args`). Only the crate
//! root uses it: it parses, then calls the one command asked for. `iofleet man` and
//! `iofleet completions` are generated from this one definition.

use clap::{Parser, Subcommand};

use crate::args::RunArgs;

#[derive(Parser, Debug)]
#[command(
    name = "iofleet",
    version,
    about = "Fleet benchmark for hyper-converged and software-defined storage",
    long_about = "iofleet drives a fleet of workers × disks × threads × queue depth against the \
storage under test and reports IOPS, throughput and exact latency percentiles computed from \
merged histograms."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
// Parsed once per process: the size of the `run` variant does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Run a profile (built-in name or a .toml file), or a workload given by flags, and
    /// print the result; `--dry-run` prints the plan instead.
    Run(crate::cmd::run::RunCmd),
    /// Check the disks of a run made with --verify against their journals (after the run,
    /// a crash or a kill): every 4 KiB unit's header, offset, checksum and sequence. Takes
    /// the run's profile, flags and --target (or --hosts) to find the disks; exit code 4
    /// when any unit is corrupt, with one `corruption:` line per unit.
    Verify(RunArgs),
    /// List, show and document the built-in profiles, and fit a profile to an I/O trace
    /// (`profile` is an alias).
    #[command(subcommand, alias = "profile")]
    Profiles(crate::cmd::profiles::ProfilesCmd),
    /// List, show, export and delete stored runs (the results store).
    #[command(subcommand)]
    Results(crate::cmd::results::ResultsCmd),
    /// Run a profile once per value of one setting (`--vary qd=1,2,4,8,16,32`), or per
    /// combination of several (`--vary bs=4k,64k --vary qd=1,8`), each step saved as a
    /// run labelled with its sweep, step and values, and print the curve: IOPS against
    /// mean, p50 and p99 latency.
    Sweep(crate::cmd::sweep::SweepArgs),
    /// Precondition the plan's disks as the SNIA SSS PTS does before steady-state
    /// tests: each disk written twice over with 128 KiB sequential writes of random data,
    /// with a progress bar. Every safety check of `iofleet run` applies.
    Precondition(crate::cmd::precondition::PreconditionArgs),
    /// The theoretical IOPS ceiling of a profile on a cluster described in a TOML file,
    /// per bottleneck (devices, protection, network, bandwidth), and with --run a stored
    /// run's efficiency against it.
    Ceiling(crate::cmd::ceiling::CeilingArgs),
    /// Find the highest sustained open-loop rate at which every objective (`--slo
    /// 'p99<=3ms'`, `--slo 'cpu<=40%'`) holds: bracketing, then bisection; every step
    /// saved as a run.
    FindMax(crate::cmd::find_max::FindMaxArgs),
    /// How many VDI desktops or SQL VMs the storage carries: a phase's profile at peak
    /// (--at-peak), through find-max under objectives (--slo), or a stored run's IOPS
    /// (--from-run), ÷ per-unit IOPS.
    #[command(subcommand)]
    Plan(crate::cmd::plan::PlanCmd),
    /// Compare stored runs against a baseline (or the best run of each configuration,
    /// --best), optionally failing on regressions.
    Compare(crate::cmd::compare::CompareArgs),
    /// Write a self-contained HTML (or Markdown) report of stored runs.
    Report(crate::cmd::report::ReportArgs),
    /// Serve the results store read-only to a browser: the runs list with filters, each
    /// run's report, comparisons of ticked runs, and sweep and find-max curves
    /// (docs/ui.md). Listens on 127.0.0.1:8716 unless --listen says otherwise.
    Serve(crate::cmd::serve::ServeArgs),
    /// Look after an inventory's hosts: `hosts clean --hosts FILE` removes the copies of
    /// iofleet that fleet runs keep there.
    #[command(subcommand)]
    Hosts(crate::cmd::hosts::HostsCmd),
    /// Look after a Kubernetes fleet: `kube clean --hosts FILE` deletes every object
    /// iofleet made for it (kept with `keep = true`, or left by a killed run).
    #[command(subcommand)]
    Kube(crate::cmd::kube::KubeCmd),
    /// Look after a fleet of worker VMs: `vms clean --hosts FILE` removes every domain,
    /// volume and initramfs iofleet made for it (kept with `keep = true`, or left by a
    /// killed run).
    #[command(subcommand)]
    Vms(crate::cmd::vms::VmsCmd),
    /// Print the version, result schema version and io_uring availability.
    Version,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout,
    /// e.g. `iofleet completions bash > /etc/bash_completion.d/iofleet`.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on stdout: iofleet(1), or iofleet-SUBCOMMAND(1), e.g.
    /// `iofleet man run | man -l -`.
    Man {
        /// A subcommand, for its own page (`run`, `results`, ...).
        subcommand: Option<String>,
    },
    /// Serve a controller: on stdin/stdout (as `run --hosts` starts it over SSH), or
    /// joining its port (`--join-file FILE`, or `--join ADDRESS` with the token in
    /// IOFLEET_JOIN_TOKEN), as any launcher starts it for `run --listen`.
    Agent(crate::args::AgentArgs),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every command that takes a workload takes every profile flag (the option table
    /// and the flags themselves are kept in step in `iofleet_profile::overrides`).
    #[test]
    fn workload_commands_take_every_profile_flag() {
        let cli = super::Cli::command();
        let flags: Vec<&str> = iofleet_profile::options::OPTIONS
            .iter()
            .filter_map(|o| o.flag)
            .collect();
        assert!(flags.contains(&"--qd"), "{flags:?}");
        for path in [
            &["run"][..],
            &["verify"],
            &["sweep"],
            &["find-max"],
            &["plan", "vdi"],
        ] {
            let mut cmd = &cli;
            for name in path {
                cmd = cmd
                    .find_subcommand(name)
                    .unwrap_or_else(|| panic!("no {path:?}"));
            }
            for flag in &flags {
                assert!(
                    cmd.get_arguments()
                        .any(|a| a.get_long().map(|l| format!("--{l}")).as_deref() == Some(*flag)),
                    "{path:?} has no {flag}"
                );
            }
        }
    }
}
