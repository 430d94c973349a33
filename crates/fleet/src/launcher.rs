//! The seam between the run and where its workers execute. Every way of running
//! workers is a `Launcher`: I/O threads in this process (`inproc::ThreadLauncher`), or
//! agents reached over a transport (`agents::AgentLauncher` with `local`, `ssh`, and
//! later `kubectl exec`). The controller (`controller::run`) drives any launcher through
//! the same steps and folds what the sources report with the one collector, so the
//! rules of a run (start instant, intervals, loss, summary) exist once:
//!
//! ```text
//!   groups ──plan──▶ LaunchPlan ──materialize──▶ Prepared ──start──▶ intervals ──finish
//!            │  every check and placement;        create, fill, open,     (give_up on a
//!            │  writes nothing, contacts no host  connect, spawn          silent source)
//!            └──▶ `run --dry-run` prints the LaunchPlan and stops there
//! ```
//!
//! The same plan also feeds the launcher's one-shot operations: `verify` (check every
//! disk against its journal) and `precondition` (write every disk over, no measured
//! phase), here or on every host.
//!
//! A *source* is whatever sends interval messages: one local I/O thread, or one remote
//! host whose agent already merged its own threads. Launchers decide nothing about
//! results; they only say who reports, for which workers, on which host.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use iofleet_engine::target::{DiskLayout, TargetSpec};
use iofleet_profile::GroupPlan;
use iofleet_stats::result::{KubePod, KubeRun, VerifySummary};

use crate::agents::HostShare;
use crate::error::FleetError;
use crate::host::HostSpec;
use crate::observer::Observer;
use crate::precondition::Preconditioned;
use crate::settings::RunSettings;
use crate::source::Msg;
use crate::sys::HostProbe;

/// What a run will do, decided by `Launcher::plan` without writing anything or
/// contacting any host: the run uses exactly this (`materialize` takes it), and
/// `--dry-run` prints it.
#[derive(Debug, Clone)]
pub struct LaunchPlan {
    /// The groups as they will run (worker counts follow host pins; a single group's
    /// disk size follows the target's layout).
    pub groups: Vec<GroupPlan>,
    /// The engine, as far as it is known before anything runs (`auto` is resolved
    /// where the workers run: here, or on each host).
    pub engine: String,
    /// The run uses O_DIRECT.
    pub direct: bool,
    /// Where the workers go.
    pub placement: Placement,
    /// What the user should know before the run (idle hosts, pins, device sizes, how
    /// the engine keeps I/Os in flight).
    pub notices: Vec<String>,
}

/// Where a plan puts the workers.
#[derive(Debug, Clone)]
pub enum Placement {
    /// I/O threads of this process, on this host's target.
    Here {
        host: String,
        /// The I/O threads: how many, the lanes they drive, and why that many.
        io_threads: String,
        /// The memory the plan needs and what this host has (`footprint`).
        memory: String,
        /// The target and every disk's file or device region (None: the engine
        /// touches no storage).
        target: Option<(TargetSpec, Vec<DiskLayout>)>,
    },
    /// Agents on an inventory's hosts, each with its share of the workers; their
    /// I/O threads and device regions are decided on each host.
    Hosts(Vec<(HostSpec, HostShare)>),
}

/// One host's verify check: its name, the disks checked, and what was found.
pub type HostVerified = (String, usize, VerifySummary);

/// What a launcher has ready once every worker can start.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The groups as they will run (worker counts may follow host pins; a single
    /// group's disk size follows the target's layout).
    pub groups: Vec<GroupPlan>,
    /// Global index of the first worker these sources run.
    pub worker_base: u32,
    /// Host names, and the host of each worker (by index from `worker_base`): as many
    /// entries as workers these sources run.
    pub hosts: Vec<String>,
    pub worker_host: Vec<usize>,
    /// Per host (as `hosts`; missing entries: false): an observer, which runs no I/O and
    /// reports only what its host spends.
    pub observers: Vec<bool>,
    /// Each reporting source: its name (for messages) and its host.
    pub sources: Vec<(String, usize)>,
    /// The engine every host resolved (several names when hosts differ).
    pub engine: String,
    /// How the target is shown in results.
    pub target_label: String,
    /// The run uses O_DIRECT.
    pub direct: bool,
    /// I/Os the sources keep outstanding when every lane is full.
    pub configured_outstanding: u64,
    /// How far ahead of now the start instant must lie for every source to get it.
    pub start_margin: Duration,
    /// A source silent this long is given up on (None: it always reports).
    pub silence_grace: Option<Duration>,
    /// Samples this machine as host 0 each interval (in-process sources only).
    pub probe: Option<HostProbe>,
    /// The engine runs in simulated time (see `CollectSpec::simulated_time`).
    pub simulated_time: bool,
}

/// Facts a launcher learns during the run.
#[derive(Debug, Clone, Default)]
pub struct Finished {
    /// How late each host began I/O after the start instant, ms (None: unknown).
    pub start_late_ms: Vec<Option<f64>>,
    /// Notices that arose during the run.
    pub notices: Vec<String>,
    /// A Kubernetes fleet's facts: the run's, and each pod's (by host name).
    pub kubernetes: Option<(KubeRun, Vec<KubePod>)>,
}

pub trait Launcher {
    /// Make every check and placement decision for a run of `groups` with this run's
    /// `settings` (a step's seed, a round's device age; what the launcher opened for the
    /// command stays): engine, targets and their layout (device safety, free space, block
    /// sizes), hosts and their shares. Writes nothing, creates nothing, contacts no host.
    fn plan(
        &mut self,
        groups: &[GroupPlan],
        settings: &RunSettings,
    ) -> Result<LaunchPlan, FleetError>;

    /// Get every worker of `plan` (from this launcher's `plan`) ready: targets
    /// created and filled, engines open, agents connected. `Ok(None)` when `stop` was
    /// set before that finished (nothing was measured; nothing is left running).
    /// Notices for the user go to `notices`.
    fn materialize(
        &mut self,
        plan: LaunchPlan,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Prepared>, FleetError>;

    /// Check every disk of `plan` against its verify journal (`iofleet verify`): per
    /// host, its name, the disks checked and what was found, the first `keep`
    /// corruptions in detail. Reads only.
    fn verify(&mut self, plan: LaunchPlan, keep: usize) -> Result<Vec<HostVerified>, FleetError>;

    /// Precondition every disk of `plan` (`iofleet precondition`): created as a run
    /// would, written over `precondition::PASSES` times, no measured phase. `Ok(None)`
    /// when `stop` was set before anything was written.
    fn precondition(
        &mut self,
        plan: LaunchPlan,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
    ) -> Result<Option<Preconditioned>, FleetError>;

    /// Release every worker at `epoch`; their messages go to `tx` until each source
    /// sends `Msg::Done`. Returns how late the last local thread began, when that is
    /// known at once (remote hosts report it later, in `finish`). After a failed start
    /// gate this is called with `stop` already set, to tear down.
    fn start(&mut self, epoch: Instant, tx: Sender<Msg>) -> Option<Duration>;

    /// The collector gave up on `source` (silent too long): end it by whatever means
    /// the launcher has, without waiting for it.
    fn give_up(&mut self, _source: usize) {}

    /// Wait for (or tear down) everything started, and report what was learnt. What the
    /// launcher opened for the command (agents' sessions, a Kubernetes fleet) stays open
    /// for the next run, unless the run was torn down.
    fn finish(&mut self) -> Finished;

    /// The command's last run is over: close what the launcher opened for it (stop the
    /// agents, delete a Kubernetes fleet's objects unless kept). What it did, for the
    /// user. Dropping a launcher closes it too (an error, Ctrl-C), so nothing is left
    /// behind on any path; `close` is the orderly end that can report.
    fn close(&mut self) -> Vec<String> {
        Vec::new()
    }
}
