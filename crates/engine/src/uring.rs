//! The `io_uring` engine: one ring per I/O thread, and completions reaped straight from
//! the completion queue, with `user_data` = slot. It registers every file the thread
//! drives (one ring serves many disks), one fixed buffer per slot and, for the thread
//! that drives it, the ring's own fd (no file lookup per `io_uring_enter`). It falls
//! back to plain `READ`/`WRITE` on a raw fd when registration is refused (for example
//! `ENOMEM` from `RLIMIT_MEMLOCK`), declaring what it got in `Caps`.
//!
//! - **Ring.** Single issuer with deferred task work (Linux 6.1+) by default, falling
//!   back to cooperative task work, then a plain ring: completions are run when the
//!   thread waits, and no interrupt kicks it while it works. Without the SQ index
//!   array where the kernel allows it (Linux 6.6+).
//! - **Submission.** `queue` submits at once while the batch it holds back is small
//!   against what the device holds (`SUBMIT_FRACTION`): a device short of work gets its
//!   I/Os immediately, a deep queue gets batches of a few; a lone I/O goes out with the
//!   wait that follows it, in the same call.
//! - **Waiting.** One call submits what is left, runs the completions' task work and
//!   sleeps only if nothing has completed; with nothing to submit and a completion
//!   already in the queue, no call at all. On a plain ring with 4 or more I/Os in flight
//!   it submits, then polls the completion queue for up to 50 µs before sleeping (a
//!   deferred ring posts completions only on a kernel entry, so polling would find
//!   nothing). A wait of a millisecond or more that must end by a known instant
//!   (`submit_and_reap_by`) is ended by a pure timer held in the ring, which serves
//!   every later wait until it expires, instead of a timeout set up in each call.
//!
//! Every choice above was measured against fio and fio's `t/io_uring` (bench/README.md).
//! It does not use SQPOLL, IOPOLL, vectored or linked requests, and it never retries a
//! failed or short I/O: the kernel's result goes back unchanged.

use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring, Probe};

use crate::buf::BufferPool;
use crate::{Caps, Completion, Engine, EngineError, EngineParams, IoReq, OpKind, OpenDisk};

/// Largest ring the kernel accepts (`IORING_MAX_ENTRIES`).
const MAX_ENTRIES: u32 = 32_768;
/// Most buffers one ring may register (`IORING_MAX_REG_BUFFERS`).
const MAX_REG_BUFFERS: u32 = 16_384;

/// The ring flavour the kernel accepted, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupMode {
    /// `SINGLE_ISSUER | DEFER_TASKRUN` (Linux 6.1+): completions are processed only when
    /// the owning thread waits, with no inter-processor interrupts. The ring is created
    /// disabled and enabled by the first `submit_and_reap`, so the thread that first
    /// submits (not the one that built the engine) becomes its only issuer.
    DeferTaskrun,
    /// `COOP_TASKRUN` (Linux 5.19+).
    CoopTaskrun,
    /// No setup flags.
    Plain,
}

impl SetupMode {
    pub fn name(self) -> &'static str {
        match self {
            SetupMode::DeferTaskrun => "single_issuer+defer_taskrun",
            SetupMode::CoopTaskrun => "coop_taskrun",
            SetupMode::Plain => "plain",
        }
    }
}

/// Registration choices; both default to on, and each silently falls back when the
/// kernel refuses (see `UringEngine::registration_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UringOptions {
    pub fixed_files: bool,
    pub fixed_buffers: bool,
    /// Try SINGLE_ISSUER+DEFER_TASKRUN (then COOP_TASKRUN) before a plain ring. On by
    /// default: completions are then run when the thread waits, with no interrupt to
    /// kick it while it runs. On a memory-backed loop device at QD32 that took CPU per
    /// I/O from 3.5 to 2.5 µs at the same IOPS, and on the virtio disk it cost no IOPS
    /// at any depth (bench/README.md). Completion polling only applies to a plain ring.
    pub defer_taskrun: bool,
    /// With this many I/Os or more in flight, poll the completion queue for up to
    /// `poll_us` before sleeping in the kernel (0: never poll).
    pub poll_min_inflight: u32,
    pub poll_us: u32,
    /// Start every buffer with seeded random bytes (on by default: the run's writes
    /// carry them where no pattern is written over them). A fill, which generates
    /// every write's data, turns it off.
    pub random_buffers: bool,
}

impl Default for UringOptions {
    fn default() -> Self {
        UringOptions {
            fixed_files: true,
            fixed_buffers: true,
            defer_taskrun: true,
            poll_min_inflight: 4,
            poll_us: 50,
            random_buffers: true,
        }
    }
}

/// The longest an engine being dropped waits for its I/O to complete.
const QUIESCE_LIMIT: Duration = Duration::from_secs(10);

// io_uring_enter and io_uring_register constants (linux/io_uring.h).
const ENTER_GETEVENTS: u32 = 1;
const ENTER_EXT_ARG: u32 = 8;
const ENTER_REGISTERED_RING: u32 = 16;
const IORING_REGISTER_RING_FDS: u32 = 20;
const IORING_UNREGISTER_RING_FDS: u32 = 21;

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// `struct io_uring_getevents_arg`.
#[repr(C)]
struct GeteventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

/// Pure timers (`IORING_OP_TIMEOUT`) the engine keeps in the ring at once, the
/// `user_data` bit that marks their completions, and the shortest wait that uses one.
/// A bounded wait with `IORING_ENTER_EXT_ARG` arms and cancels a kernel timer every
/// time it sleeps (3-4% of the CPU per I/O on a memory-backed loop device at QD32, in
/// bench/README.md); a timer held in the ring serves every wait that must end no
/// earlier than it. Short waits (open-loop arrivals) keep the per-call timeout, so that
/// timers set for them do not wake the thread later for nothing.
const RING_TIMERS: usize = 2;
const TIMER_TAG: u64 = 1 << 63;
const RING_TIMER_MIN: Duration = Duration::from_millis(1);

/// After a poll that found nothing, skip polling for this many waits.
const POLL_BACKOFF: u32 = 16;

/// `queue` submits at once when the I/Os it holds back are two or more and exceed 1/8
/// of those the device already has: at low depth each pair goes out at once, at QD32
/// batches of about four. Holding a whole batch until the next wait starved a virtio
/// disk of 20-30% of its IOPS at QD 4-32 (measured against fio in bench/README.md),
/// while batches of a few keep the syscall count, and the CPU per I/O on a
/// memory-backed loop device, low. A lone I/O is left to the wait that follows, which
/// submits it in the same call: submitting it on its own cost a second `io_uring_enter`
/// per I/O at QD1.
const SUBMIT_FRACTION: u32 = 8;

/// io_uring engine for one I/O thread and the disks it drives.
///
/// Use it from one thread once it has submitted: in `DeferTaskrun` mode the kernel
/// refuses waits from any other thread (`EEXIST`).
pub struct UringEngine {
    ring: IoUring,
    /// Freed by hand in `Drop`, and only once the kernel holds no I/O on it; leaked
    /// otherwise. Kernel writes into freed memory would be far worse than a leak.
    pool: ManuallyDrop<BufferPool>,
    /// Keeps every fd (and the fixed files) open for the engine's whole life.
    disks: Vec<OpenDisk>,
    fds: Vec<RawFd>,
    mode: SetupMode,
    fixed_files: bool,
    fixed_buffers: bool,
    registration_error: Option<String>,
    /// Disabled rings (`DeferTaskrun`) are enabled by the first submission.
    enabled: bool,
    /// Queued or submitted, completion not yet reaped.
    in_flight: u32,
    /// Per slot: queued or submitted and not yet reaped. `queue` refuses such a slot and
    /// `buffer_mut` will not hand out its buffer: the kernel may be writing it.
    busy: Vec<bool>,
    poll_min_inflight: u32,
    poll: Duration,
    /// Waits left before polling is tried again after a poll found nothing.
    poll_skip: u32,
    /// The ring's own fd registered with the kernel for the thread that drives it
    /// (`IORING_REGISTER_RING_FDS`, Linux 5.18): that thread's enters pass the index
    /// and skip a file lookup per call. The registration belongs to the thread, so the
    /// index is only used from it.
    registered: Option<(std::thread::ThreadId, u32)>,
    register_tried: bool,
    /// The ring's pure timers: when each expires (None: not armed).
    timers: [Option<Instant>; RING_TIMERS],
    /// Their durations, read by the kernel when it takes the SQE (boxed: the address
    /// must not move while an SQE pointing at it waits to be submitted).
    timer_ts: Box<[types::Timespec; RING_TIMERS]>,
}

thread_local! {
    static THREAD_ID: std::thread::ThreadId = std::thread::current().id();
}

/// The calling thread's id, kept per thread: `thread::current()` takes and drops a
/// reference count, which showed in the profile of every `io_uring_enter`.
fn this_thread() -> std::thread::ThreadId {
    THREAD_ID.with(|id| *id)
}

impl std::fmt::Debug for UringEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringEngine")
            .field("disks", &self.disks)
            .field("mode", &self.mode)
            .field("fixed_files", &self.fixed_files)
            .field("fixed_buffers", &self.fixed_buffers)
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

/// Whether io_uring can run this engine here: a ring can be created, and the kernel
/// supports the read/write opcodes and timed waits (`IORING_FEAT_EXT_ARG`, 5.11+).
/// Used to resolve `--engine auto`.
pub fn probe() -> Result<(), EngineError> {
    let ring = IoUring::new(8).map_err(setup_error)?;
    check_kernel(&ring)
}

/// Whether io_uring can complete I/O on files in `dir` inline. A filesystem without
/// non-blocking reads (`RWF_NOWAIT` refused with `EOPNOTSUPP`: tmpfs, for example) makes
/// io_uring hand every request to a kernel worker thread, where plain `pread`/`pwrite`
/// is several times faster (bench/README.md). Nothing is written: a regular file already
/// in `dir` (a previous run's disk) is asked with one non-blocking read, opened as the
/// run will open its disks (`direct`); otherwise the nearest existing directory's
/// filesystem type answers (tmpfs and ramfs keep file data only in the page cache and
/// have no non-blocking reads). `None` when it cannot tell.
pub fn completes_inline_in(dir: &std::path::Path, direct: bool) -> Option<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(file) = std::fs::read_dir(dir).ok().and_then(|entries| {
        entries.flatten().find_map(|e| {
            let is_file = e.file_type().ok()?.is_file();
            let big_enough = e.metadata().ok()?.len() >= 4096;
            (is_file && big_enough).then(|| e.path())
        })
    }) {
        let answer = (|| {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(if direct { libc::O_DIRECT } else { 0 })
                .open(&file)
                .ok()?;
            let mut buf = crate::buf::AlignedBuf::zeroed(4096).ok()?;
            let r = rustix::io::preadv2(
                &f,
                &mut [io::IoSliceMut::new(&mut buf[..])],
                0,
                rustix::io::ReadWriteFlags::NOWAIT,
            );
            match r {
                Err(e) if e == rustix::io::Errno::OPNOTSUPP => Some(false),
                // Read at once, or "would block": non-blocking reads are supported.
                _ => Some(true),
            }
        })();
        if answer.is_some() {
            return answer;
        }
    }
    // The directory, or the nearest existing one above it (where it will be created).
    let mut at = dir;
    while !at.is_dir() {
        at = at.parent()?;
    }
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let fs = rustix::fs::statfs(at).ok()?;
    Some(!matches!(fs.f_type as i64, TMPFS_MAGIC | RAMFS_MAGIC))
}

fn setup_error(e: io::Error) -> EngineError {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => {
            EngineError::UringUnavailable("io_uring_setup: ENOSYS, kernel built without it".into())
        }
        Some(libc::EPERM) => {
            let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into());
            EngineError::UringUnavailable(format!(
                "io_uring_setup: EPERM; kernel.io_uring_disabled = {sysctl}, or a seccomp \
                 filter (containers) blocks it"
            ))
        }
        _ => EngineError::Setup(format!("io_uring_setup failed: {e}; try a lower qd")),
    }
}

fn check_kernel(ring: &IoUring) -> Result<(), EngineError> {
    if !ring.params().is_feature_ext_arg() {
        return Err(EngineError::UringUnavailable(
            "kernel lacks IORING_FEAT_EXT_ARG (timed waits, Linux 5.11+)".into(),
        ));
    }
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| EngineError::UringUnavailable(format!("IORING_REGISTER_PROBE: {e}")))?;
    for (code, name) in [
        (opcode::Read::CODE, "READ"),
        (opcode::Write::CODE, "WRITE"),
        (opcode::ReadFixed::CODE, "READ_FIXED"),
        (opcode::WriteFixed::CODE, "WRITE_FIXED"),
    ] {
        if !probe.is_supported(code) {
            return Err(EngineError::UringUnavailable(format!(
                "kernel lacks IORING_OP_{name}"
            )));
        }
    }
    Ok(())
}

/// Create a ring with the best flavour the kernel accepts; `EINVAL` means "unknown
/// flag", so the next flavour is tried.
fn build_ring(entries: u32, defer_taskrun: bool) -> Result<(IoUring, SetupMode), EngineError> {
    let mut last = None;
    let modes: &[SetupMode] = if defer_taskrun {
        &[
            SetupMode::DeferTaskrun,
            SetupMode::CoopTaskrun,
            SetupMode::Plain,
        ]
    } else {
        &[SetupMode::Plain]
    };
    // Without the SQ index array (Linux 6.6+) the kernel reads each SQE straight from
    // the ring, one indirection less per I/O; older kernels refuse the flag (EINVAL)
    // and get the same mode with the array.
    let attempts = modes.iter().flat_map(|&m| [(m, true), (m, false)]);
    for (mode, no_sqarray) in attempts {
        let mut b = IoUring::builder();
        if no_sqarray {
            b.setup_no_sqarray();
        }
        // TASKRUN_FLAG makes the kernel flag pending completions in the SQ ring, so a
        // non-waiting reap (`min_complete == 0`) still enters the kernel to run them.
        match mode {
            SetupMode::DeferTaskrun => b
                .setup_single_issuer()
                .setup_defer_taskrun()
                .setup_taskrun_flag()
                .setup_r_disabled(),
            SetupMode::CoopTaskrun => b.setup_coop_taskrun().setup_taskrun_flag(),
            SetupMode::Plain => &mut b,
        };
        match b.build(entries) {
            Ok(ring) => return Ok((ring, mode)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
            Err(e) => return Err(setup_error(e)),
        }
    }
    Err(setup_error(last.expect("at least one attempt")))
}

impl UringEngine {
    pub fn new(disks: Vec<OpenDisk>, params: EngineParams, seed: u64) -> Result<Self, EngineError> {
        Self::with_options(disks, params, seed, UringOptions::default())
    }

    pub fn with_options(
        disks: Vec<OpenDisk>,
        params: EngineParams,
        seed: u64,
        opts: UringOptions,
    ) -> Result<Self, EngineError> {
        let entries = params.slots.clamp(8, MAX_ENTRIES).next_power_of_two();
        let (ring, mode) = build_ring(entries, opts.defer_taskrun)?;
        check_kernel(&ring)?;
        let mut pool = if opts.random_buffers {
            BufferPool::new(params.slots, params.max_bs, seed)?
        } else {
            BufferPool::zeroed(params.slots, params.max_bs)?
        };
        let fds: Vec<RawFd> = disks.iter().map(|d| d.file.as_raw_fd()).collect();
        let mut errors = Vec::new();

        let fixed_files = opts.fixed_files
            && match ring.submitter().register_files(&fds) {
                Ok(()) => true,
                Err(e) => {
                    errors.push(format!("fixed file: {e}"));
                    false
                }
            };

        let fixed_buffers = opts.fixed_buffers
            && if params.slots > MAX_REG_BUFFERS {
                errors.push(format!(
                    "fixed buffers: {} slots exceed the kernel's {MAX_REG_BUFFERS}",
                    params.slots
                ));
                false
            } else {
                let iovecs: Vec<libc::iovec> = (0..params.slots)
                    .map(|slot| libc::iovec {
                        iov_base: pool.slot_ptr(slot).cast(),
                        iov_len: pool.slot_len(),
                    })
                    .collect();
                // SAFETY: each iovec covers exactly one slot of `pool`'s single heap
                // allocation, which never moves and is freed only in `Drop` after every
                // I/O using it has completed (or is leaked). The kernel pins the pages,
                // so the registration itself outlives nothing it points to.
                match unsafe { ring.submitter().register_buffers(&iovecs) } {
                    Ok(()) => true,
                    Err(e) => {
                        errors.push(format!("fixed buffers: {e}"));
                        false
                    }
                }
            };

        Ok(UringEngine {
            ring,
            pool: ManuallyDrop::new(pool),
            disks,
            fds,
            mode,
            fixed_files,
            fixed_buffers,
            registration_error: (!errors.is_empty()).then(|| errors.join("; ")),
            enabled: mode != SetupMode::DeferTaskrun,
            in_flight: 0,
            busy: vec![false; params.slots as usize],
            poll_min_inflight: opts.poll_min_inflight,
            // Polling only helps where completions are posted without a kernel entry.
            poll: if mode == SetupMode::Plain {
                Duration::from_micros(opts.poll_us as u64)
            } else {
                Duration::ZERO
            },
            poll_skip: 0,
            registered: None,
            register_tried: false,
            timers: [None; RING_TIMERS],
            timer_ts: Box::new([types::Timespec::new(); RING_TIMERS]),
        })
    }

    /// The ring flavour in use.
    pub fn setup_mode(&self) -> SetupMode {
        self.mode
    }

    /// Why file or buffer registration was refused, if it was (e.g. "fixed buffers:
    /// Cannot allocate memory" when RLIMIT_MEMLOCK is too low).
    pub fn registration_error(&self) -> Option<&str> {
        self.registration_error.as_deref()
    }

    fn ensure_enabled(&mut self) -> Result<(), EngineError> {
        if !self.enabled {
            self.ring.submitter().register_enable_rings()?;
            self.enabled = true;
        }
        Ok(())
    }

    /// Register the ring's fd for the calling thread, once; None when the kernel
    /// refuses (before 5.18), and then the plain fd is used.
    fn register_ring(&mut self) {
        self.register_tried = true;
        let mut up = RsrcUpdate {
            offset: u32::MAX,
            resv: 0,
            data: self.ring.as_raw_fd() as u64,
        };
        if self.ring_fds(IORING_REGISTER_RING_FDS, &mut up) == 1 {
            self.registered = Some((this_thread(), up.offset));
        }
    }

    /// Undo `register_ring` when called from the registering thread. A registration
    /// holds a reference to the ring (and so its pinned buffers) until the thread ends,
    /// and a thread has 16 slots.
    fn unregister_ring(&mut self) {
        if let Some((thread, index)) = self.registered {
            if thread == this_thread() {
                let mut up = RsrcUpdate {
                    offset: index,
                    resv: 0,
                    data: 0,
                };
                self.ring_fds(IORING_UNREGISTER_RING_FDS, &mut up);
                self.registered = None;
            }
        }
    }

    /// `io_uring_register(IORING_[UN]REGISTER_RING_FDS)` with one update; the kernel's
    /// return (entries done, or -1).
    fn ring_fds(&self, op: u32, up: &mut RsrcUpdate) -> libc::c_long {
        // SAFETY: both operations read, and registration writes back, one
        // `io_uring_rsrc_update` (the layout of `RsrcUpdate`), borrowed for the call.
        unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                self.ring.as_raw_fd(),
                op,
                up as *mut RsrcUpdate,
                1u32,
            )
        }
    }

    /// `io_uring_enter`: submit everything queued and, when `want > 0`, wait for that
    /// many completions (up to `timeout`). The io-uring crate's submit calls, but through
    /// the registered ring fd when the calling thread registered it.
    fn enter(&mut self, want: u32, timeout: Option<&types::Timespec>) -> io::Result<usize> {
        if !self.register_tried {
            self.register_ring();
        }
        let index = match self.registered {
            Some((thread, index)) if thread == this_thread() => index,
            _ => {
                let sub = self.ring.submitter();
                return match timeout {
                    None => sub.submit_and_wait(want as usize),
                    Some(ts) => {
                        sub.submit_with_args(want as usize, &types::SubmitArgs::new().timespec(ts))
                    }
                };
            }
        };
        let (to_submit, pending) = {
            let sq = self.ring.submission();
            (sq.len() as u32, sq.taskrun() || sq.cq_overflow())
        };
        let mut flags = ENTER_REGISTERED_RING;
        // Deferred task work (completions) only runs on an enter that gets events.
        if want > 0 || pending {
            flags |= ENTER_GETEVENTS;
        }
        let arg = timeout.map(|ts| GeteventsArg {
            sigmask: 0,
            sigmask_sz: 0,
            min_wait_usec: 0,
            ts: ts as *const types::Timespec as u64,
        });
        let (argp, argsz) = match &arg {
            Some(a) => {
                flags |= ENTER_EXT_ARG;
                (
                    a as *const GeteventsArg as usize,
                    std::mem::size_of::<GeteventsArg>(),
                )
            }
            None => (0, 0),
        };
        // SAFETY: the index names this ring for this thread (checked above); `arg` and
        // the timespec it points to outlive the call; the kernel only reads them.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                index,
                to_submit,
                want,
                flags,
                argp,
                argsz,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    /// Plain ring, several I/Os in flight: submit, then poll the completion queue for
    /// up to `poll` before the caller sleeps. With several I/Os in flight the next
    /// completion is usually microseconds away, and waking an idle (virtual) CPU costs
    /// tens of microseconds and leaves the device idle meanwhile. True if a completion
    /// came (and was drained); after a poll that found nothing, polling pauses for
    /// `POLL_BACKOFF` waits.
    fn submit_and_poll(&mut self, out: &mut Vec<Completion>) -> Result<bool, EngineError> {
        if !self.ring.submission().is_empty() {
            if let Err(e) = self.enter(0, None) {
                // EBUSY (completion backlog) and EINTR are handled by the waiting call,
                // which submits again.
                if !matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EINTR)) {
                    return Err(e.into());
                }
            }
        }
        let deadline = std::time::Instant::now() + self.poll;
        loop {
            if self.ready(1) {
                self.drain(out);
                return Ok(true);
            }
            if std::time::Instant::now() >= deadline {
                self.poll_skip = POLL_BACKOFF;
                return Ok(false);
            }
            std::hint::spin_loop();
        }
    }

    /// Put a pure timer of `timeout` (expiring at `deadline`) in the ring, to be
    /// submitted by the next enter. False when every timer place is taken or the SQ is
    /// full.
    fn arm_timer(&mut self, timeout: Duration, deadline: Instant) -> bool {
        let Some(i) = self.timers.iter().position(Option::is_none) else {
            return false;
        };
        self.timer_ts[i] = types::Timespec::from(timeout);
        // count 0: a pure timer, which completions do not end early.
        let sqe = opcode::Timeout::new(&self.timer_ts[i])
            .count(0)
            .build()
            .user_data(TIMER_TAG | i as u64);
        // SAFETY: the timespec lives in `self.timer_ts` (boxed, so it does not move)
        // until the engine is dropped, and its place is not rewritten before this
        // timer's completion frees it; the kernel copies it when it takes the SQE.
        if unsafe { self.ring.submission().push(&sqe) }.is_err() {
            return false;
        }
        self.timers[i] = Some(deadline);
        true
    }

    /// At least `n` completions are waiting in the completion queue (no syscall).
    fn ready(&mut self, n: u32) -> bool {
        let mut cq = self.ring.completion();
        cq.sync();
        cq.len() >= n as usize
    }

    /// Move every completion in the CQ ring to `out`.
    fn drain(&mut self, out: &mut Vec<Completion>) {
        for cqe in self.ring.completion() {
            let data = cqe.user_data();
            if data & TIMER_TAG != 0 {
                // A ring timer expired: its place is free again. Not an I/O.
                if let Some(t) = self.timers.get_mut((data & !TIMER_TAG) as usize) {
                    *t = None;
                }
                continue;
            }
            let slot = data as u32;
            if let Some(b) = self.busy.get_mut(slot as usize) {
                *b = false;
            }
            out.push(Completion {
                slot,
                result: cqe.result(),
            });
            self.in_flight = self.in_flight.saturating_sub(1);
        }
    }

    /// Wait until the kernel holds no I/O of ours. False if it cannot tell (e.g. the
    /// engine is dropped on a thread that is not the ring's issuer).
    fn quiesce(&mut self) -> bool {
        if !self.enabled {
            // Nothing was ever submitted; queued SQEs die with the ring.
            return true;
        }
        // Bounded: a device that never completes (a dead path, a hung NFS server) must
        // not hang the thread for ever. Past the deadline the pool is leaked instead.
        let deadline = std::time::Instant::now() + QUIESCE_LIMIT;
        while self.in_flight > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            let ts = types::Timespec::from(left);
            let args = types::SubmitArgs::new().timespec(&ts);
            match self
                .ring
                .submitter()
                .submit_with_args(self.in_flight as usize, &args)
            {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR | libc::EBUSY | libc::ETIME)
                    ) => {}
                Err(_) => return false,
            }
            for cqe in self.ring.completion() {
                if cqe.user_data() & TIMER_TAG == 0 {
                    self.in_flight -= 1;
                }
            }
        }
        true
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        self.unregister_ring();
        if self.quiesce() {
            // The ring's own references to its fixed files are otherwise dropped by the
            // kernel's ring teardown, in a worker, some time after the ring is closed: a
            // block device then still looked busy to an exclusive open right after a
            // fill (and a tmpfs could not be unmounted). Unregistered here, they go now.
            if self.fixed_files {
                let _ = self.ring.submitter().unregister_files();
            }
            // SAFETY: no I/O is in flight, so the kernel will not touch the buffers
            // again (the registration only pins pages); `pool` is not used after this,
            // and Drop runs once.
            unsafe { ManuallyDrop::drop(&mut self.pool) }
        }
    }
}

impl Engine for UringEngine {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn caps(&self) -> Caps {
        Caps {
            async_qd: true,
            needs_target: true,
            registered_buffers: self.fixed_buffers,
            registered_files: self.fixed_files,
            simulated_time: false,
            device_per_disk: false,
        }
    }

    fn queue(&mut self, req: IoReq) -> Result<(), EngineError> {
        self.pool.check_req(&req)?;
        if req.file as usize >= self.fds.len() {
            return Err(crate::bad_file(&req, self.fds.len()));
        }
        // `check_req` bounded the slot by the pool's slot count, the length of `busy`.
        let busy = &mut self.busy[req.slot as usize];
        if *busy {
            return Err(EngineError::Submit(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("slot {} is still in flight", req.slot),
            )));
        }
        let buf = self.pool.slot_ptr(req.slot);
        // `slots <= MAX_REG_BUFFERS` whenever buffers are fixed, so the index fits u16.
        let index = req.slot as u16;
        macro_rules! rw {
            ($fd:expr) => {
                match (req.op, self.fixed_buffers) {
                    (OpKind::Read, true) => opcode::ReadFixed::new($fd, buf, req.len, index)
                        .offset(req.offset)
                        .build(),
                    (OpKind::Write, true) => opcode::WriteFixed::new($fd, buf, req.len, index)
                        .offset(req.offset)
                        .build(),
                    (OpKind::Read, false) => opcode::Read::new($fd, buf, req.len)
                        .offset(req.offset)
                        .build(),
                    (OpKind::Write, false) => opcode::Write::new($fd, buf, req.len)
                        .offset(req.offset)
                        .build(),
                }
            };
        }
        let sqe = if self.fixed_files {
            rw!(types::Fixed(req.file))
        } else {
            rw!(types::Fd(self.fds[req.file as usize]))
        }
        .user_data(req.slot as u64);
        loop {
            // SAFETY: the SQE points at `req.len` bytes inside slot `req.slot`'s buffer
            // (checked above); the pool never moves and outlives every in-flight I/O
            // (Drop waits or leaks), and the caller does not touch the slot again until
            // its completion is returned (the `Engine` contract). The fd is owned by
            // `self.disks` (index checked above), and the fixed file / buffer `index` are
            // registered when used.
            if unsafe { self.ring.submission().push(&sqe) }.is_ok() {
                self.busy[req.slot as usize] = true;
                break;
            }
            // SQ full (only when slots exceed the ring size): make room.
            self.ensure_enabled()?;
            self.enter(0, None)?;
        }
        self.in_flight += 1;
        // Submit early once the batch held back is more than 1/SUBMIT_FRACTION of
        // what the device holds: a device with little to do gets its I/Os at once.
        let held = self.ring.submission().len() as u32;
        let at_device = self.in_flight - held;
        if held >= 2 && held * SUBMIT_FRACTION > at_device {
            self.ensure_enabled()?;
            if let Err(e) = self.enter(0, None) {
                // The waiting call submits again; only a real failure is reported.
                if !matches!(
                    e.raw_os_error(),
                    Some(libc::EBUSY) | Some(libc::EINTR) | Some(libc::EAGAIN)
                ) {
                    return Err(e.into());
                }
            }
        }
        Ok(())
    }

    fn submit_and_reap(
        &mut self,
        min_complete: u32,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<(), EngineError> {
        self.ensure_enabled()?;
        // Without a timeout, never wait for more than can ever arrive.
        let mut want = match timeout {
            None => min_complete.min(self.in_flight),
            Some(_) => min_complete,
        } as usize;
        let ts = timeout.map(types::Timespec::from);
        if min_complete > 0 && self.ready(min_complete) && self.ring.submission().is_empty() {
            // Already there and nothing to submit: no call at all.
            self.drain(out);
            return Ok(());
        }
        if min_complete == 1 && !self.poll.is_zero() && self.in_flight >= self.poll_min_inflight {
            if self.poll_skip > 0 {
                self.poll_skip -= 1;
            } else if self.submit_and_poll(out)? {
                return Ok(());
            }
        }
        // One call submits what is held back, runs the completions' task work and
        // returns at once if enough completed; it sleeps only otherwise.
        loop {
            let r = self.enter(want as u32, ts.as_ref());
            match r {
                Ok(_) => break,
                Err(e) => match e.raw_os_error() {
                    // Timed out: return what has completed.
                    Some(libc::ETIME) => break,
                    // A signal: retry an unbounded wait, or return early from a timed
                    // one (restarting would stretch the timeout).
                    Some(libc::EINTR) if ts.is_none() => continue,
                    Some(libc::EINTR) => break,
                    // CQ overflow backlog: make room, then submit again (waiting only
                    // for what is still missing).
                    Some(libc::EBUSY) => {
                        let before = out.len();
                        self.drain(out);
                        want = want.saturating_sub(out.len() - before);
                        if want == 0 {
                            return Ok(());
                        }
                    }
                    _ => return Err(e.into()),
                },
            }
        }
        self.drain(out);
        Ok(())
    }

    fn submit_and_reap_by(
        &mut self,
        min_complete: u32,
        timeout: Duration,
        deadline: Instant,
        out: &mut Vec<Completion>,
    ) -> Result<(), EngineError> {
        let covered = self.timers.iter().flatten().any(|&t| t <= deadline);
        if min_complete == 0
            || self.in_flight == 0
            || !(covered || timeout >= RING_TIMER_MIN && self.arm_timer(timeout, deadline))
        {
            return self.submit_and_reap(min_complete, Some(timeout), out);
        }
        // A ring timer ends the wait by `deadline` (or a little after, as a timeout
        // would: both count from when the kernel takes them).
        self.submit_and_reap(min_complete, None, out)
    }

    fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
        assert!(
            !self.busy.get(slot as usize).copied().unwrap_or(false),
            "io_uring: slot {slot} is in flight"
        );
        self.pool.slot_mut(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{File, OpenOptions};
    use std::os::unix::fs::OpenOptionsExt;
    use std::time::Instant;

    const BS: u32 = 4096;

    fn disk(file: File) -> Vec<OpenDisk> {
        vec![OpenDisk {
            file,
            region_offset: 0,
            size: 1 << 20,
        }]
    }

    fn params(slots: u32) -> EngineParams {
        EngineParams { slots, max_bs: BS }
    }

    fn req(slot: u32, op: OpKind, offset: u64) -> IoReq {
        IoReq {
            slot,
            file: 0,
            op,
            offset,
            len: BS,
        }
    }

    /// Reap until `n` completions arrived, with a generous deadline per call.
    fn reap_n(e: &mut UringEngine, n: usize) -> Vec<Completion> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let before = out.len();
            e.submit_and_reap(1, Some(Duration::from_secs(5)), &mut out)
                .unwrap();
            assert!(out.len() > before, "no completion within 5 s");
        }
        out.sort_by_key(|c| c.slot);
        out
    }

    /// Write `slots` distinct blocks all in flight at once, wipe the buffers, read them
    /// all back at once, and compare.
    fn round_trip(e: &mut UringEngine, slots: u32) {
        for slot in 0..slots {
            e.buffer_mut(slot).fill(slot as u8 + 1);
            e.queue(req(slot, OpKind::Write, slot as u64 * BS as u64))
                .unwrap();
        }
        let mut out = Vec::with_capacity(slots as usize);
        e.submit_and_reap(slots, None, &mut out).unwrap();
        out.sort_by_key(|c| c.slot);
        let want: Vec<_> = (0..slots)
            .map(|slot| Completion {
                slot,
                result: BS as i32,
            })
            .collect();
        assert_eq!(out, want);

        for slot in 0..slots {
            e.buffer_mut(slot).fill(0);
            // Read block `slots - 1 - slot` so no slot can pass by reading its own data.
            let block = (slots - 1 - slot) as u64;
            e.queue(req(slot, OpKind::Read, block * BS as u64)).unwrap();
        }
        assert_eq!(reap_n(e, slots as usize), want);
        for slot in 0..slots {
            let expect = (slots - slot) as u8;
            assert!(
                e.buffer_mut(slot).iter().all(|&b| b == expect),
                "slot {slot}"
            );
        }
    }

    #[test]
    fn inline_completion_probe_tells_tmpfs_from_a_disk_filesystem() {
        // /var/tmp is on the root filesystem here (ext4: non-blocking reads).
        let disk = tempfile::tempdir_in("/var/tmp").unwrap();
        assert_eq!(completes_inline_in(disk.path(), false), Some(true));
        assert_eq!(
            completes_inline_in(&disk.path().join("not/yet/created"), false),
            Some(true),
            "probes the nearest existing directory"
        );
        let shm = std::path::Path::new("/dev/shm");
        let is_tmpfs = rustix::fs::statfs(shm).is_ok_and(|s| s.f_type == 0x0102_1994);
        if crate::need::environment(
            "inline_completion_probe_tells_tmpfs_from_a_disk_filesystem",
            "/dev/shm is not tmpfs",
            is_tmpfs,
        ) {
            let d = tempfile::tempdir_in(shm).unwrap();
            // An empty directory: the filesystem type answers, and nothing is written.
            assert_eq!(completes_inline_in(d.path(), false), Some(false));
            assert!(
                std::fs::read_dir(d.path()).unwrap().next().is_none(),
                "nothing written"
            );
            // A file there (a previous run's disk) is asked with a non-blocking read.
            std::fs::write(d.path().join("disk"), [7u8; 8192]).unwrap();
            assert_eq!(completes_inline_in(d.path(), false), Some(false));
            let on_disk = tempfile::tempdir_in("/var/tmp").unwrap();
            std::fs::write(on_disk.path().join("disk"), [7u8; 8192]).unwrap();
            assert_eq!(completes_inline_in(on_disk.path(), false), Some(true));
        }
    }

    #[test]
    fn probe_succeeds_on_this_kernel() {
        probe().unwrap();
    }

    #[test]
    fn a_slot_in_flight_is_refused_until_its_completion_is_reaped() {
        let mut e = UringEngine::new(disk(tempfile::tempfile().unwrap()), params(2), 7).unwrap();
        e.buffer_mut(0).fill(3);
        e.queue(req(0, OpKind::Write, 0)).unwrap();
        // Queued (not yet reaped): the slot and its buffer are the kernel's.
        let err = e.queue(req(0, OpKind::Read, 4096)).unwrap_err();
        assert!(
            err.to_string().contains("slot 0 is still in flight"),
            "{err}"
        );
        // Another slot is free.
        e.queue(req(1, OpKind::Write, 4096)).unwrap();
        let done = reap_n(&mut e, 2);
        assert!(done.iter().all(|c| c.result == BS as i32), "{done:?}");
        // Reaped: the slot is the caller's again.
        e.buffer_mut(0).fill(0);
        e.queue(req(0, OpKind::Read, 0)).unwrap();
        let done = reap_n(&mut e, 1);
        assert_eq!(done[0].result, BS as i32);
        assert!(e.buffer_mut(0).iter().all(|&b| b == 3));
    }

    #[test]
    #[should_panic(expected = "in flight")]
    fn the_buffer_of_a_slot_in_flight_is_not_handed_out() {
        let mut e = UringEngine::new(disk(tempfile::tempfile().unwrap()), params(2), 8).unwrap();
        e.queue(req(1, OpKind::Write, 0)).unwrap();
        e.buffer_mut(1);
    }

    #[test]
    fn round_trip_with_fixed_file_and_buffers_at_several_depths() {
        for slots in [1, 3, 8, 32] {
            let mut e =
                UringEngine::new(disk(tempfile::tempfile().unwrap()), params(slots), 1).unwrap();
            let caps = e.caps();
            assert_eq!(
                (caps.registered_buffers, caps.registered_files),
                (true, true),
                "registration refused: {:?}",
                e.registration_error()
            );
            assert!(caps.async_qd && caps.needs_target);
            eprintln!("io_uring setup mode: {}", e.setup_mode().name());
            round_trip(&mut e, slots);
        }
    }

    #[test]
    fn one_ring_drives_several_files_registered_or_not() {
        for fixed_files in [true, false] {
            let files: Vec<File> = (0..3).map(|_| tempfile::tempfile().unwrap()).collect();
            let disks = files
                .iter()
                .flat_map(|f| disk(f.try_clone().unwrap()))
                .collect();
            let opts = UringOptions {
                fixed_files,
                ..UringOptions::default()
            };
            let mut e = UringEngine::with_options(disks, params(3), 4, opts).unwrap();
            assert_eq!(e.caps().registered_files, fixed_files);
            // File i gets block i+1 written; no other file is touched.
            for i in 0..3u32 {
                e.queue(IoReq {
                    file: i,
                    ..req(i, OpKind::Write, (i as u64 + 1) * BS as u64)
                })
                .unwrap();
            }
            assert_eq!(reap_n(&mut e, 3).len(), 3);
            let lens: Vec<u64> = files.iter().map(|f| f.metadata().unwrap().len()).collect();
            assert_eq!(lens, [2 * BS as u64, 3 * BS as u64, 4 * BS as u64]);
            let err = e
                .queue(IoReq {
                    file: 3,
                    ..req(0, OpKind::Read, 0)
                })
                .unwrap_err()
                .to_string();
            assert!(err.contains("file 3"), "{err}");
        }
    }

    #[test]
    fn round_trip_without_registration_uses_plain_ops() {
        let opts = UringOptions {
            fixed_files: false,
            fixed_buffers: false,
            ..UringOptions::default()
        };
        let mut e =
            UringEngine::with_options(disk(tempfile::tempfile().unwrap()), params(4), 2, opts)
                .unwrap();
        let caps = e.caps();
        assert!(!caps.registered_buffers && !caps.registered_files);
        assert_eq!(e.registration_error(), None);
        round_trip(&mut e, 4);
    }

    #[test]
    fn deferred_taskrun_by_default_plain_ring_on_request() {
        let mut d = UringEngine::new(disk(tempfile::tempfile().unwrap()), params(8), 5).unwrap();
        // Linux 6.1+ has it; older kernels fall back to a cooperative or plain ring.
        eprintln!("default setup mode: {}", d.setup_mode().name());
        round_trip(&mut d, 8);
        // The plain ring works end to end, polling or not.
        for poll_us in [0, 50] {
            let opts = UringOptions {
                defer_taskrun: false,
                poll_us,
                ..UringOptions::default()
            };
            let mut p =
                UringEngine::with_options(disk(tempfile::tempfile().unwrap()), params(8), 6, opts)
                    .unwrap();
            assert_eq!(p.setup_mode(), SetupMode::Plain);
            round_trip(&mut p, 8);
        }
    }

    #[test]
    fn queue_submits_early_in_small_batches() {
        let mut e = UringEngine::new(disk(tempfile::tempfile().unwrap()), params(32), 9).unwrap();
        e.queue(req(0, OpKind::Write, 0)).unwrap();
        assert_eq!(
            e.ring.submission().len(),
            1,
            "a lone I/O waits for the wait"
        );
        e.queue(req(1, OpKind::Write, BS as u64)).unwrap();
        assert_eq!(e.ring.submission().len(), 0, "a pair goes out at once");
        for slot in 2..32 {
            e.queue(req(slot, OpKind::Write, slot as u64 * BS as u64))
                .unwrap();
            let held = e.ring.submission().len() as u32;
            assert!(
                held < 2 || held * SUBMIT_FRACTION <= e.in_flight - held,
                "slot {slot}: {held} held back with {} at the device",
                e.in_flight - held
            );
        }
        assert_eq!(reap_n(&mut e, 32).len(), 32);
    }

    #[test]
    fn polling_never_and_always_gives_the_same_io() {
        // Deep queues take the polling path (8 ≥ 4 in flight); a zero poll never does.
        for poll_us in [0, 1_000] {
            let opts = UringOptions {
                poll_us,
                defer_taskrun: false,
                ..UringOptions::default()
            };
            let mut e =
                UringEngine::with_options(disk(tempfile::tempfile().unwrap()), params(8), 7, opts)
                    .unwrap();
            round_trip(&mut e, 8);
        }
    }

    #[test]
    fn built_on_one_thread_used_on_another() {
        let mut e = UringEngine::new(disk(tempfile::tempfile().unwrap()), params(4), 3).unwrap();
        std::thread::spawn(move || round_trip(&mut e, 4))
            .join()
            .unwrap();
    }

    #[test]
    fn the_ring_fd_is_registered_by_the_thread_that_drives_it_and_used_only_there() {
        // A plain ring may change threads: the second thread must not use the first
        // one's registration (it names a ring of that thread, not of this one).
        let opts = UringOptions {
            defer_taskrun: false,
            ..UringOptions::default()
        };
        let mut e =
            UringEngine::with_options(disk(tempfile::tempfile().unwrap()), params(4), 4, opts)
                .unwrap();
        round_trip(&mut e, 4);
        let (by, _) = e.registered.expect("Linux 5.18+ registers ring fds");
        assert_eq!(by, std::thread::current().id());
        // Another thread registers a ring of its own at the same index first.
        std::thread::spawn(move || {
            let mut other =
                UringEngine::new(disk(tempfile::tempfile().unwrap()), params(4), 5).unwrap();
            round_trip(&mut other, 4);
            round_trip(&mut e, 4);
            round_trip(&mut other, 4);
            assert_ne!(e.registered.unwrap().0, std::thread::current().id());
        })
        .join()
        .unwrap();
        // Dropping an engine on its thread gives the slot back: a thread has only 16.
        for seed in 0..20 {
            let mut e =
                UringEngine::new(disk(tempfile::tempfile().unwrap()), params(2), seed).unwrap();
            round_trip(&mut e, 2);
            assert!(e.registered.is_some(), "engine {seed} found no free slot");
        }
    }

    #[test]
    fn timeout_with_nothing_in_flight_returns_empty_after_the_timeout() {
        let mut e = UringEngine::new(disk(tempfile::tempfile().unwrap()), params(2), 4).unwrap();
        let mut out = Vec::new();
        let t0 = Instant::now();
        e.submit_and_reap(1, Some(Duration::from_millis(20)), &mut out)
            .unwrap();
        let waited = t0.elapsed();
        assert!(out.is_empty());
        assert!(waited >= Duration::from_millis(15), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        // No timeout and nothing in flight: returns at once instead of hanging.
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert!(out.is_empty());
    }

    /// A FIFO nobody writes yet (opened read-write, so opening does not wait for a
    /// writer): a read of it stays in flight until the test writes.
    fn fifo(dir: &tempfile::TempDir) -> File {
        let path = dir.path().join("fifo");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap()
    }

    #[test]
    fn a_ring_timer_ends_a_wait_nothing_completes_and_serves_later_deadlines() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let pipe = fifo(&dir);
        let mut writer = pipe.try_clone().unwrap();
        let mut disks = disk(pipe);
        disks.extend(disk(tempfile::tempfile().unwrap()));
        let mut e = UringEngine::new(disks, params(2), 4).unwrap();
        let stuck = IoReq {
            slot: 0,
            file: 0,
            op: OpKind::Read,
            offset: 0,
            len: 8,
        };
        e.queue(stuck).unwrap();
        e.queue(IoReq {
            file: 1,
            ..req(1, OpKind::Write, 0)
        })
        .unwrap();
        let mut out = Vec::new();
        let span = Duration::from_millis(300);
        let t0 = Instant::now();
        // The write completes at once; the wait leaves a timer in the ring for t0 + span.
        e.submit_and_reap_by(1, span, t0 + span, &mut out).unwrap();
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!((out[0].slot, out[0].result), (1, BS as i32));
        assert_eq!(e.timers.iter().flatten().count(), 1);
        // A later deadline is served by that timer: no second one, and the wait (only
        // the FIFO read in flight) ends when it expires, with no I/O to report.
        out.clear();
        e.submit_and_reap_by(1, span, Instant::now() + span, &mut out)
            .unwrap();
        let waited = t0.elapsed();
        assert!(out.is_empty(), "a timer is not an I/O: {out:?}");
        assert!(
            waited >= Duration::from_millis(250) && waited < Duration::from_secs(3),
            "{waited:?}"
        );
        assert!(
            e.timers.iter().all(Option::is_none),
            "the expired timer's place is free"
        );
        // A short wait keeps the per-call timeout: no ring timer for it.
        let t1 = Instant::now();
        let short = Duration::from_micros(200);
        e.submit_and_reap_by(1, short, t1 + short, &mut out)
            .unwrap();
        assert!(out.is_empty());
        assert!(e.timers.iter().all(Option::is_none));
        // The FIFO read completes once written to; the engine then drops cleanly.
        writer.write_all(b"12345678").unwrap();
        let got = reap_n(&mut e, 1);
        assert_eq!((got[0].slot, got[0].result), (0, 8));
        assert_eq!(e.in_flight, 0);
    }

    #[test]
    fn a_ring_timer_in_flight_is_not_waited_for_at_drop() {
        let mut e = UringEngine::new(disk(tempfile::tempfile().unwrap()), params(2), 4).unwrap();
        e.queue(req(0, OpKind::Write, 0)).unwrap();
        let mut out = Vec::new();
        let long = Duration::from_secs(30);
        e.submit_and_reap_by(1, long, Instant::now() + long, &mut out)
            .unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(e.timers.iter().flatten().count(), 1);
        let t0 = Instant::now();
        drop(e);
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    }

    #[test]
    fn non_waiting_reap_eventually_sees_the_completion() {
        let mut e = UringEngine::new(disk(tempfile::tempfile().unwrap()), params(1), 5).unwrap();
        e.queue(req(0, OpKind::Write, 0)).unwrap();
        let mut out = Vec::new();
        for _ in 0..2000 {
            e.submit_and_reap(0, None, &mut out).unwrap();
            if !out.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        assert_eq!(
            out,
            [Completion {
                slot: 0,
                result: BS as i32
            }]
        );
    }

    #[test]
    fn errors_come_back_as_negative_errno() {
        let named = tempfile::NamedTempFile::new().unwrap();
        let ro = File::open(named.path()).unwrap();
        let mut e = UringEngine::new(disk(ro), params(2), 6).unwrap();
        e.queue(req(0, OpKind::Write, 0)).unwrap();
        e.queue(req(1, OpKind::Read, 0)).unwrap();
        let out = reap_n(&mut e, 2);
        assert_eq!(
            out,
            [
                Completion {
                    slot: 0,
                    result: -libc::EBADF
                },
                // Empty file: a read at offset 0 is a clean 0-byte transfer.
                Completion { slot: 1, result: 0 }
            ]
        );
        assert!(e.queue(req(2, OpKind::Read, 0)).is_err());
    }

    #[test]
    fn o_direct_round_trip_with_fixed_buffers() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let f = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(dir.path().join("direct"))
        {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                crate::need::environment(
                    "io_uring O_DIRECT round trip",
                    "/tmp does not support O_DIRECT",
                    false,
                );
                return;
            }
            Err(e) => panic!("open O_DIRECT: {e}"),
        };
        let mut e = UringEngine::new(disk(f), params(8), 7).unwrap();
        round_trip(&mut e, 8);
        // Misaligned offset: O_DIRECT is in effect, and the kernel says so.
        e.queue(IoReq {
            slot: 0,
            file: 0,
            op: OpKind::Read,
            offset: 100,
            len: BS,
        })
        .unwrap();
        assert_eq!(reap_n(&mut e, 1)[0].result, -libc::EINVAL);
    }

    #[test]
    fn drop_with_io_in_flight_waits_for_it() {
        let mut e = UringEngine::new(disk(tempfile::tempfile().unwrap()), params(8), 8).unwrap();
        for slot in 0..8 {
            e.queue(req(slot, OpKind::Write, slot as u64 * BS as u64))
                .unwrap();
        }
        let mut out = Vec::new();
        e.submit_and_reap(0, None, &mut out).unwrap();
        let pending = e.in_flight;
        assert_eq!(pending as usize + out.len(), 8);
        assert!(e.quiesce());
        assert_eq!(e.in_flight, 0);
    }
}
