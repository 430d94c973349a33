//! The seam between the run and where its workers execute. Every way of running
//! workers is a `Launcher`: I/O threads in this process (`local::ThreadLauncher`),
//! agents reached over a transport (`agents::AgentLauncher`: `local`, `ssh`), or the
//! pods of a Kubernetes fleet (`kube::KubeLauncher`, agents over `kubectl exec`). The
//! controller (`controller::run`) drives any launcher through the same steps and folds
//! what the sources report with the one collector, so the rules of a run (start
//! instant, intervals, loss, summary) exist once:
//!
//! ```text
//!   groups ──plan──▶ LaunchPlan<Where> ──materialize──▶ Prepared ──start──▶ intervals ──finish
//!            │  every check and placement;    create, fill, open,       (give_up on a
//!            │  writes nothing, contacts      connect, spawn:           silent source)
//!            │  no host                       consumes the plan
//!            └──▶ `run --dry-run` prints the plan (`LaunchPlan::shown`) and stops there
//! ```
//!
//! A plan is a value: `materialize` takes the one `plan` returned, typed per launcher
//! (`Launcher::Where`), and nothing of it stays in the launcher. The same plan also
//! feeds the launcher's one-shot operations: `verify` (check every disk against its
//! journal) and `precondition` (write every disk over, no measured phase), here or on
//! every host. What a command holds is a `fleet::Fleet`, which plans and acts in one
//! call, for any launcher.
//!
//! A *source* is whatever sends interval messages: one local I/O thread, or one remote
//! host whose agent already merged its own threads. Launchers decide nothing about
//! results; they only say who reports, for which workers, on which host.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iofleet_profile::GroupPlan;
use iofleet_stats::result::{KubePod, KubeRun, VerifySummary};
use std::sync::mpsc::Sender;

use crate::error::FleetError;
use crate::observer::Observer;
use crate::plan::{LaunchPlan, Placement};
use crate::precondition::Preconditioned;
use crate::settings::RunSettings;
use crate::source::Msg;
use crate::sys::HostProbe;

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
    /// Per relay source (index into `sources`), the hosts below it, which report
    /// merged through it (`crate::relay`) and are lost with it; empty without relays.
    pub below: std::collections::BTreeMap<usize, Vec<usize>>,
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
    /// A fleet of worker VMs' facts (`vms::VmLauncher`).
    pub vms: Option<iofleet_stats::result::VmRun>,
}

pub trait Launcher {
    /// This launcher's half of a plan: where it puts a run's workers, as its
    /// `materialize` needs them (`local::Here`, `plan::Hosts`, `plan::Pods`);
    /// `Placement` is what any reader prints of it.
    type Where: Into<Placement>;

    /// Make every check and placement decision for a run of `groups` with this run's
    /// `settings` (a step's seed, a round's device age; what the launcher opened for the
    /// command stays): engine, targets and their layout (device safety, free space, block
    /// sizes), hosts and their shares. Writes nothing, creates nothing, contacts no host,
    /// changes nothing in the launcher.
    fn plan(
        &self,
        groups: &[GroupPlan],
        settings: &RunSettings,
    ) -> Result<LaunchPlan<Self::Where>, FleetError>;

    /// Get every worker of `plan` (this launcher's `plan`, consumed) ready: targets
    /// created and filled, engines open, agents connected. `Ok(None)` when `stop` was
    /// set before that finished (nothing was measured; nothing is left running).
    /// Notices for the user go to `notices`.
    fn materialize(
        &mut self,
        plan: LaunchPlan<Self::Where>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Prepared>, FleetError>;

    /// Check every disk of `plan` against its verify journal (`iofleet verify`): per
    /// host, its name, the disks checked and what was found, the first `keep`
    /// corruptions in detail. Reads only.
    fn verify(
        &mut self,
        plan: LaunchPlan<Self::Where>,
        keep: usize,
    ) -> Result<Vec<HostVerified>, FleetError>;

    /// Precondition every disk of `plan` (`iofleet precondition`): created as a run
    /// would, written over `precondition::PASSES` times, no measured phase. `Ok(None)`
    /// when `stop` was set before anything was written.
    fn precondition(
        &mut self,
        plan: LaunchPlan<Self::Where>,
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
