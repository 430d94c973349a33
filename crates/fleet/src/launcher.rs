//! The seam between the run and where its workers execute. Every way of running
//! workers is a `Launcher`: I/O threads in this process (`inproc::ThreadLauncher`), or
//! agents reached over a transport (`agents::AgentLauncher` with `local`, `ssh`, and
//! later `kubectl exec`). The controller (`controller::run`) drives any launcher through
//! the same four steps — prepare, start, (give up on a silent source), finish — and
//! folds what the sources report with the one collector, so the rules of a run (start
//! instant, intervals, loss, summary) exist once.
//!
//! A *source* is whatever sends interval messages: one local I/O thread, or one remote
//! host whose agent already merged its own threads. Launchers decide nothing about
//! results; they only say who reports, for which workers, on which host.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use iofleet_profile::GroupPlan;

use crate::controller::FleetError;
use crate::lanes::Msg;
use crate::observer::Observer;
use crate::sys::HostProbe;

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
}

/// Facts a launcher learns during the run.
#[derive(Debug, Clone, Default)]
pub struct Finished {
    /// How late each host began I/O after the start instant, ms (None: unknown).
    pub start_late_ms: Vec<Option<f64>>,
    /// Notices that arose during the run.
    pub notices: Vec<String>,
}

pub trait Launcher {
    /// Get every worker ready: targets checked and laid out, disks filled, engines
    /// open. `Ok(None)` when `stop` was set before that finished (nothing was
    /// measured; nothing is left running). Notices for the user go to `notices`.
    fn prepare(
        &mut self,
        groups: &[GroupPlan],
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Prepared>, FleetError>;

    /// Release every worker at `epoch`; their messages go to `tx` until each source
    /// sends `Msg::Done`. Returns how late the last local thread began, when that is
    /// known at once (remote hosts report it later, in `finish`). After a failed start
    /// gate this is called with `stop` already set, to tear down.
    fn start(&mut self, epoch: Instant, tx: Sender<Msg>) -> Option<Duration>;

    /// The collector gave up on `source` (silent too long): end it by whatever means
    /// the launcher has, without waiting for it.
    fn give_up(&mut self, _source: usize) {}

    /// Wait for (or tear down) everything started, and report what was learnt.
    fn finish(&mut self) -> Finished;
}
