//! How a run tells the outside world what is happening while it happens. The controller
//! calls an `Observer` from its own thread (never from I/O threads) once per event; the
//! live terminal view, the results store and, later, remote streams implement it.

use iofleet_stats::result::IntervalRow;
use iofleet_stats::Sample;

/// Run phases in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Prepare,
    Warmup,
    Measure,
    Done,
}

/// One finished interval with its raw, mergeable data per worker.
#[derive(Debug)]
pub struct IntervalSnapshot<'a> {
    pub row: &'a IntervalRow,
    /// Indexed by worker; each holds one `StreamStats` per stream.
    pub workers: &'a [Sample],
}

pub trait Observer {
    fn notice(&mut self, _msg: &str) {}
    fn phase(&mut self, _phase: Phase, _planned_s: f64) {}
    /// Prepare progress in bytes written so far of `total`.
    fn prepare_progress(&mut self, _done: u64, _total: u64) {}
    fn interval(&mut self, _snap: &IntervalSnapshot<'_>) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl Observer for Silent {}
