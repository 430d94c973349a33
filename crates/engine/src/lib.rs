//! The hot path's lowest layer: engines that move bytes, the clocks that time them, and
//! the targets (files and block-device regions) they move bytes to.
//!
//! An engine is small on purpose (as in fio's `ioengines.h`): it queues I/Os, submits
//! them and reports completions. It does no timing, no accounting and no offset
//! generation; the fleet's thread loop does all of that around engine calls, so every
//! engine is measured the same way. This is the only crate with `unsafe` code; each
//! block carries a `// SAFETY:` note naming its invariant.

pub mod buf;
pub mod clock;
pub mod mmc;
pub mod null;
pub mod pattern;
pub mod psync;
pub mod sim;
pub mod sim_shared;
pub mod spec;
pub mod target;
pub mod uring;
pub mod verify;

/// What a unit test needs from the machine: every skip goes through it (tests-support).
#[cfg(test)]
#[path = "../../../tests-support/need.rs"]
mod need;

use std::fs::File;
use std::time::Duration;

pub use clock::{nap, wake_sleepers, Clock, MonoClock, VirtualClock};
pub use pattern::{Pattern, PatternSpec};
pub use spec::{BuiltEngine, Drive, EngineFile, EngineSpec};

/// Direction of one I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    Read,
    Write,
}

/// One I/O handed to an engine. `slot` indexes the I/O thread's in-flight table and its
/// buffer (`0..slots`); it comes back unchanged in the completion. `file` indexes the
/// files the engine was opened with (an I/O thread drives many disks through one ring).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoReq {
    pub slot: u32,
    pub file: u32,
    pub op: OpKind,
    /// Absolute byte offset in the opened file or device.
    pub offset: u64,
    pub len: u32,
}

/// A finished I/O: `result` is the byte count transferred, or a negative errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub slot: u32,
    pub result: i32,
}

/// What an engine can do, declared rather than sniffed by the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// More than one I/O may be in flight per thread (false: every call completes
    /// what it submits before returning, so the effective queue depth is 1).
    pub async_qd: bool,
    /// The engine touches a file or device (false for `null`).
    pub needs_target: bool,
    /// Buffers are registered with the kernel (io_uring fixed buffers).
    pub registered_buffers: bool,
    /// The file is registered with the kernel (io_uring fixed files).
    pub registered_files: bool,
    /// Completions follow simulated time (a virtual clock), not the wall clock.
    pub simulated_time: bool,
    /// The engine models each disk as one device that every lane driving the disk
    /// shares: the lanes of a disk must run on one I/O thread, through one file.
    pub device_per_disk: bool,
}

/// Errors an engine reports while being set up or while running.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("io_uring is not available on this kernel or is disabled ({0}); use --engine psync")]
    UringUnavailable(String),
    #[error("engine setup failed: {0}")]
    Setup(String),
    #[error("I/O submission failed: {0}")]
    Submit(#[from] std::io::Error),
}

/// Per-I/O-thread engine parameters.
#[derive(Debug, Clone, Copy)]
pub struct EngineParams {
    /// Slots (and buffers) to allocate: the most I/Os this thread keeps in flight.
    pub slots: u32,
    /// Largest I/O size in bytes; every slot's buffer has this size.
    pub max_bs: u32,
}

/// The engine interface. One instance per I/O thread, never shared; it may hold many
/// files (`IoReq::file`).
///
/// Contract: `queue` adds one I/O to the pending batch (it must not block);
/// `submit_and_reap` submits everything pending, then waits until at least
/// `min_complete` completions are available or `timeout` passes (whichever first; a
/// `None` timeout waits without limit), and appends every completion available to `out`.
/// A slot is never queued again before its completion has been returned. Engines whose
/// buffers the kernel writes (io_uring, psync) enforce it: `queue` refuses a slot in
/// flight with an error and `buffer_mut` panics on one, so a caller's bug cannot be
/// handed memory that an I/O is still filling. The null and simulated engines touch no
/// memory asynchronously and do not check.
pub trait Engine {
    fn name(&self) -> &'static str;
    fn caps(&self) -> Caps;
    fn queue(&mut self, req: IoReq) -> Result<(), EngineError>;
    fn submit_and_reap(
        &mut self,
        min_complete: u32,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<(), EngineError>;
    /// `submit_and_reap(min_complete, Some(timeout), out)` for a caller that also knows
    /// the instant the wait must end by (`timeout` from now). An engine may let a timer
    /// it already holds, expiring no later than `deadline`, end the wait instead of
    /// setting one up for this call; such a wait can return before `deadline` with
    /// nothing completed, as an interrupted one can.
    fn submit_and_reap_by(
        &mut self,
        min_complete: u32,
        timeout: Duration,
        deadline: std::time::Instant,
        out: &mut Vec<Completion>,
    ) -> Result<(), EngineError> {
        let _ = deadline;
        self.submit_and_reap(min_complete, Some(timeout), out)
    }
    /// The buffer of `slot` (length `max_bs`), for filling write data before `queue`.
    fn buffer_mut(&mut self, slot: u32) -> &mut [u8];
}

/// A target opened for an I/O thread: the file handle and the disk region inside it.
#[derive(Debug)]
pub struct OpenDisk {
    pub file: File,
    /// First byte of this disk's region within the file or device.
    pub region_offset: u64,
    /// Addressable bytes of the region.
    pub size: u64,
}

/// A request for a file the engine was not opened with.
pub(crate) fn bad_file(req: &IoReq, files: usize) -> EngineError {
    EngineError::Submit(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "I/O for file {} but the engine holds {files} file(s)",
            req.file
        ),
    ))
}
