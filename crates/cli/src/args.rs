//! Command-line definitions. The flags that override profile keys are
//! `iofleet_profile::Overrides`, flattened into `RunArgs`: they take their help text from
//! the profile option table, so each option is described once. Values are parsed into
//! typed units by clap (sizes, durations, block-size lists), so a malformed value is a
//! clap error naming the flag, exit code 2, before anything runs.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use iofleet_fleet::EngineSpec;
use iofleet_profile::Overrides;
use iofleet_report::Convention;

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
    Run(RunCmd),
    /// Check the disks of a run made with --verify against their journals (after the run,
    /// a crash or a kill): every 4 KiB unit's header, offset, checksum and sequence. Takes
    /// the run's profile, flags and --target (or --hosts) to find the disks; exit code 4
    /// when any unit is corrupt, with one `corruption:` line per unit.
    Verify(RunArgs),
    /// List, show and document the built-in profiles, and fit a profile to an I/O trace
    /// (`profile` is an alias).
    #[command(subcommand, alias = "profile")]
    Profiles(ProfilesCmd),
    /// List, show, export and delete stored runs (the results store).
    #[command(subcommand)]
    Results(crate::cmd::results::ResultsCmd),
    /// Run a profile once per value of one setting (`--vary qd=1,2,4,8,16,32`), each step
    /// saved as a run labelled with its sweep and step, and print the curve: IOPS
    /// against mean, p50 and p99 latency.
    Sweep(crate::cmd::sweep::SweepArgs),
    /// Precondition the plan's disks as the SNIA SSS PTS does before steady-state
    /// tests: each disk written twice over with 128 KiB sequential writes of random data,
    /// with a progress bar. Every safety check of `iofleet run` applies.
    Precondition(crate::cmd::precondition::PreconditionArgs),
    /// The theoretical IOPS ceiling of a profile on a cluster described in a TOML file,
    /// per bottleneck (devices, protection, network, bandwidth), and with --run a stored
    /// run's efficiency against it.
    Ceiling(crate::cmd::ceiling::CeilingArgs),
    /// Find the highest sustained open-loop rate at which every latency objective
    /// (`--slo 'p99<=3ms'`) holds: bracketing, then bisection; every step saved as a run.
    FindMax(crate::cmd::find_max::FindMaxArgs),
    /// How many VDI desktops or SQL VMs the storage carries: a phase's profile at peak
    /// (--at-peak), through find-max under objectives (--slo), or a stored run's IOPS
    /// (--from-run), ÷ per-unit IOPS.
    #[command(subcommand)]
    Plan(crate::cmd::plan::PlanCmd),
    /// Compare stored runs against a baseline, optionally failing on regressions.
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
    /// Serve a controller on stdin/stdout (started by `run --hosts` over SSH).
    #[command(hide = true)]
    Agent,
}

#[derive(Subcommand, Debug)]
pub enum ProfilesCmd {
    /// List the built-in profiles.
    List,
    /// Print a built-in profile's TOML, ready to copy and edit.
    Show {
        /// Built-in profile name (see `iofleet profiles list`).
        name: String,
    },
    /// Print the profile reference (docs/profiles.md) generated from the option table.
    Reference,
    /// Fit a profile to an I/O trace: block sizes, random % and hot bands per
    /// direction, read % and arrival rate (docs/traces.md).
    FromTrace(FromTraceArgs),
    /// Write the profile(s) iofleet would run for a fio job file: one per job section,
    /// with the `iofleet run --group` line that runs them together (docs/fio.md).
    FromFio(FromFioArgs),
}

#[derive(Args, Debug)]
pub struct FromFioArgs {
    /// The fio job file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Write the profile to this file; with several jobs, STEM-JOB.EXT per job. Default:
    /// stdout, groups separated by `# ---- group NAME` lines.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the profiles without this fio option (repeatable), with a notice.
    #[arg(long, value_name = "OPTION")]
    pub fio_ignore: Vec<String>,
    /// Write only this job section's profile (repeatable), e.g. one phase of a file whose
    /// jobs are separated by stonewall.
    #[arg(long, value_name = "NAME")]
    pub fio_job: Vec<String>,
    /// Check block sizes for direct I/O (as `iofleet run --direct`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub direct: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormatArg {
    /// blkparse's default text output (queue `Q` events of reads and writes).
    Blkparse,
    /// time,op,offset,length: seconds, R/W or read/write, bytes, bytes; header optional.
    Csv,
    /// SNIA IOTTA MSR-Cambridge: Timestamp (100 ns ticks), Hostname, DiskNumber, Type,
    /// Offset, Size, ResponseTime.
    Msr,
}

#[derive(Args, Debug)]
pub struct FromTraceArgs {
    /// The trace file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The trace's format.
    #[arg(long, value_enum)]
    pub format: TraceFormatArg,
    /// Fit one profile per window of this length (e.g. 60s), written as
    /// STEM-wNN.toml next to --output, numbered from 1 in time order.
    #[arg(long, value_parser = duration, allow_hyphen_values = true, value_name = "DURATION")]
    pub split: Option<Duration>,
    /// Write the profile to this file (required with --split); default: stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub(crate) use iofleet_profile::overrides::{duration, size};

/// `--convention`, defined once for every command that prints or exports results.
#[derive(Args, Debug, Clone, Copy)]
pub struct ConventionArg {
    /// Also show the figures as a published report's tool defines them, each labelled
    /// with the tool and beside iofleet's exact figure (worker = VM): exact (iofleet's
    /// own, the default), hcibench (MiB/s, per-worker-mean latency and deviation, sum of
    /// per-worker outstanding I/O), vmfleet (per-worker-mean percentiles), iometer (MiB/s
    /// and MB/s, configured outstanding I/Os). See docs/conventions.md.
    #[arg(long, default_value = "exact", value_parser = convention, value_name = "exact|hcibench|vmfleet|iometer")]
    pub convention: Convention,
}

fn convention(s: &str) -> Result<Convention, String> {
    s.parse()
}

fn engine(s: &str) -> Result<EngineSpec, String> {
    s.parse()
}

/// Who may use an HTTP listener (`serve --listen`, `--metrics-listen`): defined once,
/// applied by `crate::web::access::Access` (docs/security.md).
#[derive(Args, Debug, Clone, Default)]
pub struct AccessArgs {
    /// Also answer requests that name this host (repeatable; a name or address, any
    /// port). On a loopback address only loopback names and addresses (localhost,
    /// 127.0.0.1, [::1]) and the listen address are answered otherwise; any other Host
    /// gets 421 (a defence against DNS rebinding).
    #[arg(long, value_name = "NAME", value_parser = crate::web::access::allow_host)]
    pub allow_host: Vec<String>,
    /// A private file (mode 600) holding a bearer token every request must carry, as
    /// `Authorization: Bearer TOKEN` (Prometheus: `authorization.credentials_file`) or,
    /// in a browser, by opening /?token=TOKEN once. Any address but loopback needs
    /// one.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

/// `iofleet run`: the workload and run flags every workload command takes, and what
/// only `run`'s live view draws.
#[derive(Args, Debug)]
pub struct RunCmd {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub live: LiveInputs,
}

/// What the live view (`--ui`) draws beside the run, given to `run` only: sweep and
/// find-max take no baseline, and find-max's `--slo` is its search's objective.
#[derive(Args, Debug, Clone, Default)]
pub struct LiveInputs {
    /// With --ui: a stored run (id, unique id prefix, name, or `latest`, from the --db
    /// store) whose IOPS and p99 over time the live view draws beside this run's. Only
    /// the live view uses it: nothing is compared or judged (see `iofleet compare`).
    #[arg(long, value_name = "RUN", requires = "ui")]
    pub baseline: Option<String>,
    /// With --ui: a latency objective (`p99<=3ms`, `read.p95<=2ms`; repeatable) drawn
    /// as a line on the live view's latency chart. Only the live view uses it: the run
    /// does not pass or fail on it (find-max searches under objectives).
    #[arg(long = "slo", value_name = "OBJECTIVE", value_parser = crate::run::find_max::objective, requires = "ui")]
    pub slo: Vec<iofleet_stats::slo::Objective>,
}

#[derive(Args, Debug, Clone)]
#[command(group(
    clap::ArgGroup::new("listener_access")
        .args(["allow_host", "token_file"])
        .multiple(true)
        .requires("metrics_listen")
))]
pub struct RunArgs {
    /// Built-in profile name (`iofleet profiles list`), path to a profile .toml file, or
    /// a fio job file ending in .fio (docs/fio.md). Without one (and without --group),
    /// the workload flags below apply to a default shape: 1 worker, 1 disk of 1g, 1
    /// thread, qd 1, 4k random reads, 60s (see docs/profiles.md).
    pub profile: Option<String>,
    /// A worker group NAME=PROFILE[:WORKERS] (repeatable): several profiles run at once on
    /// one timeline, e.g. `--group vdi=vmfleet-vdi:20 --group sql=vmfleet-sql:4`;
    /// results are reported per group and in total.
    #[arg(long, value_name = "NAME=PROFILE[:WORKERS]")]
    pub group: Vec<String>,
    /// Run a fio job file whatever its name (a PROFILE ending in .fio is one too): each
    /// job section is a worker group, all at once; the flags below still apply on top
    /// (docs/fio.md).
    #[arg(long, value_name = "FILE")]
    pub fio: Option<PathBuf>,
    /// With a fio job file: run without this fio option (repeatable), with a notice per
    /// place it was written; any other option iofleet cannot run is an error.
    #[arg(long, value_name = "OPTION")]
    pub fio_ignore: Vec<String>,
    /// With a fio job file: run only this job section (repeatable), e.g. one phase of a
    /// file whose jobs are separated by stonewall.
    #[arg(long, value_name = "NAME")]
    pub fio_job: Vec<String>,

    /// Where disks live: a directory (created; one file per disk); repeated, existing
    /// directories (each worker's disks in turn over them, e.g. one mount per SSD) or
    /// block devices split into disk regions. Default: a fio job file's `directory`, else
    /// iofleet-data.
    #[arg(long, value_name = "DIR|DEVICE")]
    pub target: Vec<PathBuf>,
    /// Allow writing block devices that carry a filesystem, partition table, LVM, RAID or
    /// other signature. Their data is destroyed.
    #[arg(long)]
    pub destroy_data: bool,
    /// Run the fleet across the hosts of this inventory (iofleet TOML, or Ansible INI)
    /// over SSH; each host's targets come from the inventory.
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// Serve GET /metrics on this address (e.g. 127.0.0.1:9464) while the run goes, as
    /// OpenMetrics (Prometheus text when asked for): fleet and per-host I/O counters,
    /// IOPS, throughput and latency summaries of the latest interval (docs/metrics.md).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: also serve the live view on that listener, a page at `/`
    /// that follows the run by Server-Sent Events (phase, IOPS, MB/s, latency over
    /// time, a strip per host; docs/ui.md). Who may read it: --allow-host and
    /// --token-file (docs/security.md).
    #[arg(long, requires = "metrics_listen")]
    pub ui: bool,
    /// With --metrics-listen: who may use the listener (--allow-host, --token-file).
    #[command(flatten)]
    pub access: AccessArgs,
    /// `run`'s `--baseline` and `--slo` for the live view (`RunCmd`); empty elsewhere.
    #[arg(skip)]
    pub live: LiveInputs,
    /// With --hosts: a host still silent this long after the run's end (or a Ctrl-C) is
    /// marked lost, as a host whose connection closed would be.
    #[arg(long, value_parser = duration, default_value = "30s", value_name = "DURATION", allow_hyphen_values = true)]
    pub host_timeout: Duration,
    /// With --hosts: copies of iofleet sent to hosts at the same time; the other hosts
    /// wait their turn (the controller holds one copy in memory whatever this is).
    #[arg(long, default_value_t = iofleet_fleet::settings::MAX_UPLOADS, value_parser = clap::value_parser!(u32).range(1..), value_name = "N", allow_negative_numbers = true)]
    pub max_uploads: u32,
    /// With --hosts: a host lost mid-run does not make the exit code 3.
    #[arg(long)]
    pub tolerate_host_loss: bool,
    /// Remove the disk files this run used when it ends (directory targets only).
    #[arg(long)]
    pub cleanup: bool,
    /// I/O engine: auto (io_uring where the kernel allows it, else psync, with one
    /// notice), io_uring, psync (pread/pwrite, one I/O in flight per thread), null
    /// (completes every I/O without touching storage: iofleet's own overhead), or
    /// sim[:servers=N,service=T,dist=exp|fixed|lognormal,sigma=S,max_mbps=M,drift=±P%,
    /// settle=T|never,ramp=T] (a
    /// simulated device per disk, in simulated time; see docs/capacity.md), or
    /// null-sim:MODELS (null with simulated latencies, see --sim-latency).
    #[arg(long, default_value = "auto", value_parser = engine, value_name = "ENGINE")]
    pub engine: EngineSpec,
    /// With --engine null: complete I/Os after simulated latencies, in simulated time
    /// (models `fixed:T`, `uniform:LO:HI`, `exp:MEAN`, `lognormal:MEDIAN:SIGMA`,
    /// `samples:T1,T2,…`, separated by `;`, one per worker in turn; times in ns or with
    /// ns/us/ms). For testing and what-if studies; no storage is touched.
    #[arg(long, value_name = "SPEC", hide = true, requires = "engine")]
    pub sim_latency: Option<String>,
    /// With --engine sim: run the simulated devices on the wall clock instead of in
    /// simulated time (same as `clock=real` in the engine's options).
    #[arg(long)]
    pub real_time: bool,
    /// Use O_DIRECT (bypass the page cache); `--direct=false` for filesystems that refuse it.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub direct: bool,
    /// Print the resolved plan as profile TOML (it runs as a profile file), the fleet
    /// layout and the files or device regions the run would use, then stop: nothing is
    /// created, filled or written. Every check of a real run is made (exit 2 if one fails).
    #[arg(long, conflicts_with_all = ["json", "output"])]
    pub dry_run: bool,

    /// The profile keys' flags (`--qd`, `--bs`, `--duration`, ...), from the option table.
    #[command(flatten)]
    pub ov: Overrides,

    /// Measure in rounds of --duration until the SNIA steady-state rule holds over the
    /// last 5 rounds (IOPS range ≤ 20% and least-squares excursion ≤ 10% of their
    /// mean), at most 25 rounds; warm-up before the first round only. Each round is
    /// saved (label round=N); the result is the last round's, with a steady_state
    /// block (docs/capacity.md).
    #[arg(long)]
    pub steady_state: bool,

    /// Print the result as JSON (docs/result.schema.json) on stdout instead of the table
    /// (the same as --output-format json).
    #[arg(long)]
    pub json: bool,
    /// What the result is printed as on stdout: table, json (docs/result.schema.json),
    /// fio-json or fio-json+ (fio's --output-format=json / json+ layout, docs/fio-json.md)
    /// [default: table, json with --json].
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
    pub output_format: Option<OutputFormat>,
    /// Also write the JSON result to this file.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print every interval in the table.
    #[arg(long)]
    pub intervals: bool,
    /// Print each table row of the result on one line, however wide (by default tables
    /// wrap into blocks of columns that fit 120 columns).
    #[arg(long)]
    pub wide: bool,
    /// --convention: the figures as a published report's tool defines them.
    #[command(flatten)]
    pub conv: ConventionArg,
    /// No live progress line and no notices on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Seed for offsets and data (same seed, same I/O sequence per thread).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Results store: --db, --no-save, --name, --label.
    #[command(flatten)]
    pub save: crate::store::record::SaveArgs,
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

/// `iofleet run --output-format`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Table,
    Json,
    #[value(name = "fio-json")]
    FioJson,
    #[value(name = "fio-json+")]
    FioJsonPlus,
}
