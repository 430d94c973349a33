//! The flags several commands share: the workload and run flags of every command that
//! measures (`RunArgs`, flattened into `run`, `verify`, `sweep`, `find-max` and `plan`),
//! `--convention` and `--output-format`. The flags that override profile keys are
//! `iofleet_profile::Overrides`, flattened into `RunArgs`: they take their help text from
//! the profile option table, so each option is described once. Values are parsed into
//! typed units by clap (sizes, durations, block-size lists), so a malformed value is a
//! clap error naming the flag, exit code 2, before anything runs. A flag only one
//! command takes is defined in that command's module (`crate::cmd`); the command line
//! itself is `crate::cli`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use iofleet_fleet::EngineSpec;
use iofleet_profile::Overrides;
use iofleet_report::Convention;
use iofleet_stats::slo::{self, Objective};
use iofleet_stats::validity::{MinHosts, MinHostsError};

use crate::web::access::AccessArgs;

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

/// A latency objective, `[all.|read.|write.]STAT<=LATENCY` (`--slo` of `run`'s live
/// view and of the find-max search).
pub(crate) fn objective(s: &str) -> Result<Objective, String> {
    s.parse().map_err(|e: slo::ObjectiveError| e.to_string())
}

fn engine(s: &str) -> Result<EngineSpec, String> {
    s.parse()
}

fn drop_caches(s: &str) -> Result<iofleet_fleet::settings::DropCaches, String> {
    s.parse()
}

fn min_hosts(s: &str) -> Result<MinHosts, String> {
    s.parse().map_err(|e: MinHostsError| e.to_string())
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
    #[arg(long = "slo", value_name = "OBJECTIVE", value_parser = objective, requires = "ui")]
    pub slo: Vec<Objective>,
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
    /// a fio job file ending in .fio (docs/fio.md), a vdbench parameter file ending
    /// in .vdb (docs/vdbench.md), or an Iometer configuration file ending in .icf
    /// (docs/iometer.md). Without one (and without --group),
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
    /// Run a DISKSPD command line (quoted, e.g. "-b4K -t1 -o16 -w0 -Sh -L -r -d900
    /// data.dat"): one worker, a disk per target under --target, -t threads per disk, -o
    /// I/Os per thread; the flags below still apply on top (docs/diskspd.md).
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub diskspd: Option<String>,
    /// With --diskspd: where a `#N` (physical drive) or `X:` (drive letter) target goes,
    /// e.g. '#1=/dev/nvme1n1' (repeatable). Never guessed; a device is then written as
    /// any --target device is, with --destroy-data when it holds data.
    #[arg(long, value_name = "TARGET=PATH")]
    pub diskspd_map: Vec<String>,
    /// Run a vdbench parameter file whatever its name (a PROFILE ending in .vdb is one
    /// too): one worker, a disk per sd under --target, the sd's threads per disk, a
    /// stream per wd; each rd (and each value of its iorate list and for-loops) is a step,
    /// run one after another; the flags below still apply on top (docs/vdbench.md).
    #[arg(long, value_name = "FILE")]
    pub vdbench: Option<PathBuf>,
    /// With a vdbench parameter file: run only this step (repeatable), named as
    /// `iofleet profiles from-vdbench` prints them (`run1`, `run1/xfersize=8k`).
    #[arg(long, value_name = "STEP")]
    pub vdbench_step: Vec<String>,
    /// Run an Iometer configuration file whatever its name (a PROFILE ending in .icf is
    /// one too): a worker per manager, a disk per target under --target, a thread per
    /// Iometer worker on it with the worker's outstanding I/Os; each assigned access
    /// specification (and each queue depth of a cycling test) is a step, run one after
    /// another; the flags below still apply on top (docs/iometer.md).
    #[arg(long, value_name = "FILE")]
    pub iometer: Option<PathBuf>,
    /// With an Iometer configuration file: run only this step (repeatable), named as
    /// `iofleet profiles from-iometer` prints them (`Database`, `Database/oio=4`), or any
    /// access specification of the file on its workers in place of those assigned.
    #[arg(long, value_name = "STEP")]
    pub iometer_spec: Vec<String>,

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
    /// `run`'s `--baseline` and `--slo` for the live view (`cmd::run::RunCmd`); empty
    /// elsewhere.
    #[arg(skip)]
    pub live: LiveInputs,
    /// A fleet-size step's number of active hosts (`sweep --vary hosts=K`, `find-max
    /// --over hosts`): the first K hosts run, each its share of the whole fleet; None
    /// elsewhere.
    #[arg(skip)]
    pub active_hosts: Option<u32>,
    /// Agents that join this command's port (--listen, --expect) as the fleet's hosts.
    #[command(flatten)]
    pub join: JoinArgs,
    /// With --hosts: a host still silent this long after the run's end (or a Ctrl-C) is
    /// marked lost, as a host whose connection closed would be.
    #[arg(long, value_parser = duration, default_value = "30s", value_name = "DURATION", allow_hyphen_values = true)]
    pub host_timeout: Duration,
    /// With --hosts: copies of iofleet sent to hosts at the same time; the other hosts
    /// wait their turn (the controller holds one copy in memory whatever this is).
    #[arg(long, default_value_t = iofleet_fleet::settings::MAX_UPLOADS, value_parser = clap::value_parser!(u32).range(1..), value_name = "N", allow_negative_numbers = true)]
    pub max_uploads: u32,
    /// The hosts that must keep running to the end for the run to be valid: N hosts, or
    /// P% of the hosts that had work, rounded up (90% of 16 is 15). A run that keeps
    /// them exits 0 and its notices name the hosts lost; one below is stored and printed
    /// INVALID with the reasons and exits 3. Without it (or --tolerate-host-loss), every
    /// host must keep running. See docs/fleet.md "Validity".
    #[arg(long, value_name = "N|P%", value_parser = min_hosts, conflicts_with = "tolerate_host_loss")]
    pub min_hosts: Option<MinHosts>,
    /// Any number of hosts may be lost mid-run: the run stays valid and exits 0 (a quorum
    /// of none; see --min-hosts).
    #[arg(long)]
    pub tolerate_host_loss: bool,
    /// Remove the disk files this run used when it ends (directory targets only).
    #[arg(long)]
    pub cleanup: bool,
    /// Empty the page cache of every host (workers and observers) before each run, sweep
    /// step and steady-state round, after the fill: `local` (sync, then write 3 to
    /// /proc/sys/vm/drop_caches; needs root) or `cmd:COMMAND`, a command each host runs
    /// with `sh -c`. It affects the whole host, not only iofleet's files
    /// (docs/storage-side.md).
    #[arg(long, value_name = "local|cmd:COMMAND", value_parser = drop_caches)]
    pub drop_caches: Option<iofleet_fleet::settings::DropCaches>,
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

impl RunArgs {
    /// The quorum a measurement is judged by: `--min-hosts`, any with
    /// `--tolerate-host-loss`, else every host.
    pub fn quorum(&self) -> MinHosts {
        match (self.min_hosts, self.tolerate_host_loss) {
            (Some(m), _) => m,
            (None, true) => MinHosts::Any,
            (None, false) => MinHosts::Every,
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

/// A fleet of agents that join (docs/fleet.md "Agents that join"): any launcher starts
/// `iofleet agent --join-file FILE` (or `--join ADDRESS` with the token in the
/// environment), and the run starts when `--expect` agents have joined.
#[derive(Args, Debug, Clone, Default)]
pub struct JoinArgs {
    /// Open a join port on ADDR (HOST:PORT; port 0 picks a free one) for this command:
    /// the fleet's hosts are the agents that join it over TLS, started by any launcher
    /// (mpirun, srun, pdsh, ssh). Prints the join line; needs --expect. With --hosts
    /// naming a Kubernetes fleet in Job mode: where its pods' join port listens
    /// (instead of the file's listen or controller).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// With --listen: how many agents the fleet takes (ranks 0 to N-1); the first run
    /// starts once all have joined.
    #[arg(long, value_name = "N", requires = "listen", value_parser = clap::value_parser!(u32).range(1..), allow_negative_numbers = true)]
    pub expect: Option<u32>,
    /// With --listen: how long the agents have to join; past it the command fails,
    /// naming the ranks missing.
    #[arg(long, value_parser = duration, default_value = "5m", value_name = "DURATION", allow_hyphen_values = true)]
    pub join_timeout: Duration,
    /// With --listen: where to write the join file (the join address and token, readable
    /// by its owner only), for agents that share this file system. Default:
    /// ~/.cache/iofleet/join/PID.json. Removed when the command ends.
    #[arg(long, value_name = "FILE", requires = "listen")]
    pub join_file: Option<PathBuf>,
    /// With --listen: the host name or address agents reach this controller at, in the
    /// join address. Default: the address listened on (this machine's host name for
    /// 0.0.0.0 or [::]).
    #[arg(long, value_name = "HOST", requires = "listen")]
    pub advertise: Option<String>,
    /// With --listen and --expect: a tree of relays, each taking K agents below it
    /// (ranks 0, K+1, 2(K+1), ... relay; the K ranks after each join it instead of this
    /// controller): one connection and one merged interval per relay. Every agent needs
    /// its rank from its launcher (docs/fleet.md "Relays").
    #[arg(long, value_name = "K", requires = "expect", value_parser = clap::value_parser!(u32).range(1..), allow_negative_numbers = true)]
    pub relay_fanout: Option<u32>,
    /// With --relay-fanout: relays run no workers of their own, only merge (where a
    /// relay's merging would disturb its own measurement). By default each relay runs
    /// a share like any host.
    #[arg(long, requires = "relay_fanout")]
    pub relay_dedicated: bool,
}

/// `iofleet agent`: serve a controller on stdin/stdout (as `run --hosts` starts it), or
/// join one's port.
#[derive(Args, Debug, Clone, Default)]
pub struct AgentArgs {
    /// Join the controller at this address (`iofleet://HOST:PORT/FINGERPRINT`, as its
    /// join line prints it); the token comes from --token-file or IOFLEET_JOIN_TOKEN.
    #[arg(long, value_name = "ADDRESS", conflicts_with = "join_file")]
    pub join: Option<String>,
    /// Join the controller whose join file (address and token) this is.
    #[arg(long, value_name = "FILE")]
    pub join_file: Option<PathBuf>,
    /// Inside a worker VM booted from a cloud image (its seed's cloud-init starts this,
    /// docs/vms.md): join over the VM's channel with this join file of the seed's,
    /// its data disks found by their serials.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["join", "join_file"])]
    pub guest_join: Option<PathBuf>,
    /// With --join: read the token from this file (`-`: standard input) instead of
    /// IOFLEET_JOIN_TOKEN.
    #[arg(long, value_name = "FILE", requires = "join")]
    pub token_file: Option<PathBuf>,
    /// This agent's rank, when its launcher sets none iofleet knows (see docs/fleet.md);
    /// else the controller gives it the lowest free rank.
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    /// Run this agent's share here (a directory, repeated directories, or block
    /// devices) instead of where the controller's --target says.
    #[arg(long, value_name = "DIR|DEVICE")]
    pub target: Vec<PathBuf>,
    /// How long to keep trying to reach the controller's port.
    #[arg(long, value_parser = duration, default_value = "5m", value_name = "DURATION", allow_hyphen_values = true)]
    pub join_timeout: Duration,
    /// Run N agents in this process, each with its own connection and rank (process
    /// rank r of s holds agent ranks r·N … r·N+N−1 of s·N): many agents on few
    /// machines, as a benchmark of the controller or a rehearsal of a large fleet.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub agents: u32,
    /// Benchmarks of the controller only (bench/relays.py): run no I/O; at the end of
    /// each interval send one fixed, pre-encoded interval per worker (the job's rate
    /// per worker, latencies spread 50–400 µs), so many agents cost their machine
    /// little and the merged result is known exactly.
    #[arg(long)]
    pub replay: bool,
    /// Benchmarks of the controller only (bench/join_scale.py --virtual-leaves): as a
    /// relay, send what the hosts below it would send if each ran with --replay, without
    /// them (they need not be started), so one machine can load a controller with the
    /// frames of a fleet it could not start.
    #[arg(long)]
    pub replay_below: bool,
}
