//! The `psync` engine: one synchronous `pread`/`pwrite` per I/O, like fio's engine of the
//! same name, on any of the files it was opened with. It is the portable fallback when
//! io_uring is missing or disabled, and what `auto` uses where io_uring would hand every
//! I/O to a kernel worker (buffered I/O on tmpfs, for example).
//!
//! `queue` only records a request; `submit_and_reap` runs them. With one slot, or while
//! the target answers at once, requests run on the calling thread, oldest first, one
//! per call (so the caller timestamps each completion as it happens): a page-cache copy
//! gains nothing from more threads on a busy CPU, and each request's latency honestly
//! includes its wait in the queue. When [`BLOCKED_STREAK`] requests in a row each take
//! longer than [`BLOCKED_NS`], the target blocks (a disk): from then on every request is
//! handed to sync threads, one per slot up to [`MAX_SYNC_THREADS`], so the qd's I/Os are
//! truly in flight. It does not loop over short transfers (a short read at end of file
//! is reported as the bytes it moved) and it does not use vectored or asynchronous I/O.
//!
//! Buffers: a slot belongs to its I/O from `queue` until its completion is returned; the
//! engine refuses to queue a slot in flight and `buffer_mut` panics on one, so a sync
//! thread's writes never alias anything the owner can reach.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::buf::BufferPool;
use crate::{Caps, Completion, Engine, EngineError, EngineParams, IoReq, OpKind, OpenDisk};

/// An I/O on the calling thread that takes longer than this may have blocked. A 4K
/// page-cache copy takes about a microsecond; a device round trip tens or hundreds.
pub const BLOCKED_NS: u64 = 50_000;

/// This many slow I/Os in a row mean the target blocks (one alone may be a preemption).
pub const BLOCKED_STREAK: u32 = 3;

/// At most this many sync threads per engine; a deeper qd waits for one.
pub const MAX_SYNC_THREADS: u32 = 128;

/// Synchronous positional I/O on opened disks.
#[derive(Debug)]
pub struct PsyncEngine {
    disks: Arc<Vec<OpenDisk>>,
    pool: BufferPool,
    /// Requests queued and not yet run, oldest first; capacity `slots`.
    pending: VecDeque<IoReq>,
    /// Per slot: queued or running, not yet returned.
    busy: Vec<bool>,
    slots: u32,
    /// An I/O slower than this on the calling thread counts towards the streak.
    blocked_ns: u64,
    slow_streak: u32,
    /// The sync threads, started once an I/O blocked (never with one slot).
    threads: Option<SyncThreads>,
}

/// A request handed to a sync thread: the slot's buffer travels as its address, which
/// stays valid and untouched by the engine's owner until the slot's completion is reaped
/// (the engine contract), and the threads are joined before the buffers are freed.
struct Job {
    req: IoReq,
    buf: *mut u8,
}

// SAFETY: the buffer a job points at belongs to that job's slot alone until its
// completion is reaped, so exactly one thread touches it at a time.
unsafe impl Send for Job {}

#[derive(Debug)]
struct SyncThreads {
    jobs: Option<Sender<Job>>,
    /// Set when the engine goes: queued jobs are skipped, not run.
    closing: Arc<AtomicBool>,
    done: Receiver<Completion>,
    handles: Vec<JoinHandle<()>>,
    in_flight: u32,
}

impl SyncThreads {
    fn start(n: u32, disks: &Arc<Vec<OpenDisk>>) -> Result<Self, EngineError> {
        let (jobs, job_rx) = crossbeam_channel::unbounded::<Job>();
        let (done_tx, done) = crossbeam_channel::unbounded();
        let closing = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::with_capacity(n as usize);
        for i in 0..n {
            let (rx, tx, disks) = (job_rx.clone(), done_tx.clone(), Arc::clone(disks));
            let closing = Arc::clone(&closing);
            let h = std::thread::Builder::new()
                .name(format!("iofleet-psync-{i}"))
                .spawn(move || {
                    for job in rx.iter() {
                        if closing.load(Ordering::Relaxed) {
                            continue;
                        }
                        let r = job.req;
                        // SAFETY: see `Job`: the slot's buffer is this job's alone.
                        let buf =
                            unsafe { std::slice::from_raw_parts_mut(job.buf, r.len as usize) };
                        let result = transfer(&disks[r.file as usize].file, r.op, buf, r.offset);
                        if tx
                            .send(Completion {
                                slot: r.slot,
                                result,
                            })
                            .is_err()
                        {
                            break;
                        }
                    }
                })
                .map_err(|e| EngineError::Setup(format!("psync: starting a sync thread: {e}")))?;
            handles.push(h);
        }
        Ok(SyncThreads {
            jobs: Some(jobs),
            closing,
            done,
            handles,
            in_flight: 0,
        })
    }
}

impl Drop for SyncThreads {
    fn drop(&mut self) {
        // Queued jobs are skipped and closing the channel ends every thread once its
        // current I/O is done (a hung device still holds that one); they are joined
        // before the engine's buffers are freed.
        self.closing.store(true, Ordering::Relaxed);
        self.jobs.take();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl PsyncEngine {
    pub fn new(disks: Vec<OpenDisk>, params: EngineParams, seed: u64) -> Result<Self, EngineError> {
        let pool = BufferPool::new(params.slots, params.max_bs, seed)?;
        Ok(PsyncEngine {
            disks: Arc::new(disks),
            pool,
            pending: VecDeque::with_capacity(params.slots as usize),
            busy: vec![false; params.slots as usize],
            slots: params.slots,
            blocked_ns: BLOCKED_NS,
            slow_streak: 0,
            threads: None,
        })
    }

    /// Whether requests now go to sync threads (a request blocked on this target).
    pub fn threaded(&self) -> bool {
        self.threads.is_some()
    }
}

/// One positional transfer of the whole buffer: byte count, or negative errno.
fn transfer(file: &File, op: OpKind, buf: &mut [u8], offset: u64) -> i32 {
    loop {
        let r = match op {
            OpKind::Read => file.read_at(buf, offset),
            OpKind::Write => file.write_at(buf, offset),
        };
        match r {
            // `buf.len() <= u32::MAX` and Linux moves at most 0x7fff_f000 bytes per call.
            Ok(n) => return n as i32,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return -e.raw_os_error().unwrap_or(libc::EIO),
        }
    }
}

impl Engine for PsyncEngine {
    fn name(&self) -> &'static str {
        "psync"
    }

    fn caps(&self) -> Caps {
        Caps {
            async_qd: false,
            needs_target: true,
            registered_buffers: false,
            registered_files: false,
            simulated_time: false,
            device_per_disk: false,
        }
    }

    fn queue(&mut self, req: IoReq) -> Result<(), EngineError> {
        self.pool.check_req(&req)?;
        if req.file as usize >= self.disks.len() {
            return Err(crate::bad_file(&req, self.disks.len()));
        }
        let busy = &mut self.busy[req.slot as usize];
        if *busy {
            return Err(EngineError::Submit(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("slot {} is still in flight", req.slot),
            )));
        }
        *busy = true;
        self.pending.push_back(req);
        Ok(())
    }

    /// On the calling thread: runs the oldest queued I/Os, at least one and
    /// `min_complete` if that many are queued, and returns them; `timeout` has nothing
    /// to wait for. Once the target blocks: hands every queued I/O to the sync threads
    /// and waits for at least `min_complete` of what they hold, or `timeout`.
    fn submit_and_reap(
        &mut self,
        min_complete: u32,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<(), EngineError> {
        let before = out.len();
        if self.threads.is_none() {
            let mut run = min_complete.max(1);
            while run > 0 {
                let Some(req) = self.pending.pop_front() else {
                    break;
                };
                run -= 1;
                let t0 = Instant::now();
                let buf = &mut self.pool.slot_mut(req.slot)[..req.len as usize];
                let result = transfer(&self.disks[req.file as usize].file, req.op, buf, req.offset);
                self.busy[req.slot as usize] = false;
                out.push(Completion {
                    slot: req.slot,
                    result,
                });
                if self.slots > 1 && t0.elapsed().as_nanos() as u64 >= self.blocked_ns {
                    self.slow_streak += 1;
                } else {
                    self.slow_streak = 0;
                }
                if self.slow_streak >= BLOCKED_STREAK {
                    let n = self.slots.min(MAX_SYNC_THREADS);
                    self.threads = Some(SyncThreads::start(n, &self.disks)?);
                    break;
                }
            }
            if self.threads.is_none() {
                return Ok(());
            }
        }
        let threads = self.threads.as_mut().expect("started above");
        let jobs = threads.jobs.as_ref().expect("open while the engine lives");
        while let Some(req) = self.pending.pop_front() {
            let buf = self.pool.slot_ptr(req.slot);
            jobs.send(Job { req, buf })
                .map_err(|_| EngineError::Setup("psync: the sync threads ended".into()))?;
            threads.in_flight += 1;
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let busy = &mut self.busy;
        let mut take = |c: Completion, out: &mut Vec<Completion>| {
            busy[c.slot as usize] = false;
            out.push(c);
        };
        loop {
            while let Ok(c) = threads.done.try_recv() {
                threads.in_flight -= 1;
                take(c, out);
            }
            if out.len() - before >= min_complete as usize || threads.in_flight == 0 {
                return Ok(());
            }
            let got = match deadline {
                Some(d) => match threads.done.recv_deadline(d) {
                    Ok(c) => c,
                    Err(RecvTimeoutError::Timeout) => return Ok(()),
                    Err(RecvTimeoutError::Disconnected) => {
                        return Err(EngineError::Setup("psync: the sync threads ended".into()))
                    }
                },
                None => threads
                    .done
                    .recv()
                    .map_err(|_| EngineError::Setup("psync: the sync threads ended".into()))?,
            };
            threads.in_flight -= 1;
            take(got, out);
        }
    }

    fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
        assert!(
            !self.busy.get(slot as usize).copied().unwrap_or(false),
            "psync: slot {slot} is in flight"
        );
        self.pool.slot_mut(slot)
    }
}

impl Drop for PsyncEngine {
    fn drop(&mut self) {
        // Join the sync threads (their I/O may still point into the buffers) first.
        self.threads.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::os::unix::fs::OpenOptionsExt;

    fn params(slots: u32, max_bs: u32) -> EngineParams {
        EngineParams { slots, max_bs }
    }

    fn disk(file: File) -> Vec<OpenDisk> {
        vec![OpenDisk {
            file,
            region_offset: 0,
            size: 1 << 20,
        }]
    }

    fn req(slot: u32, op: OpKind, offset: u64, len: u32) -> IoReq {
        IoReq {
            slot,
            file: 0,
            op,
            offset,
            len,
        }
    }

    #[test]
    fn caps_declare_a_synchronous_engine() {
        let e = PsyncEngine::new(disk(tempfile::tempfile().unwrap()), params(1, 512), 0).unwrap();
        assert_eq!(e.name(), "psync");
        let caps = e.caps();
        assert!(!caps.async_qd && caps.needs_target);
    }

    #[test]
    fn writes_then_reads_back_in_queue_order() {
        let mut e =
            PsyncEngine::new(disk(tempfile::tempfile().unwrap()), params(4, 4096), 1).unwrap();
        // Served on this thread, in order, however slow a busy machine makes an I/O.
        e.blocked_ns = u64::MAX;
        e.buffer_mut(0).fill(0x11);
        e.buffer_mut(1).fill(0x22);
        e.queue(req(0, OpKind::Write, 0, 4096)).unwrap();
        e.queue(req(1, OpKind::Write, 8192, 4096)).unwrap();
        // Read the second block back in the same batch: order must be preserved.
        e.queue(req(2, OpKind::Read, 8192, 4096)).unwrap();
        let mut out = Vec::with_capacity(4);
        e.submit_and_reap(3, None, &mut out).unwrap();
        let want: Vec<_> = [0, 1, 2]
            .map(|slot| Completion { slot, result: 4096 })
            .into();
        assert_eq!(out, want);
        assert!(e.buffer_mut(2).iter().all(|&b| b == 0x22));

        out.clear();
        e.queue(req(3, OpKind::Read, 0, 4096)).unwrap();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!(
            out,
            [Completion {
                slot: 3,
                result: 4096
            }]
        );
        assert!(e.buffer_mut(3).iter().all(|&b| b == 0x11));

        // Nothing queued: nothing to report.
        out.clear();
        e.submit_and_reap(1, Some(Duration::from_millis(1)), &mut out)
            .unwrap();
        assert!(out.is_empty());
    }

    /// An engine where every I/O counts as slow: after `BLOCKED_STREAK` of them, the rest
    /// go to the threads.
    fn threaded(disks: Vec<OpenDisk>, slots: u32) -> PsyncEngine {
        let mut e = PsyncEngine::new(disks, params(slots, 4096), 1).unwrap();
        e.blocked_ns = 0;
        e
    }

    #[test]
    fn a_blocking_io_hands_the_queue_to_one_thread_per_slot() {
        let mut e = threaded(disk(tempfile::tempfile().unwrap()), 4);
        for slot in 0..4 {
            e.buffer_mut(slot).fill(slot as u8 + 1);
            e.queue(req(slot, OpKind::Write, slot as u64 * 4096, 4096))
                .unwrap();
        }
        let mut out = Vec::new();
        // Three writes run here and "block"; the fourth goes to the threads.
        e.submit_and_reap(4, None, &mut out).unwrap();
        assert!(e.threaded());
        let threads = e.threads.as_ref().unwrap();
        assert_eq!(threads.handles.len(), 4, "one sync thread per slot");
        assert!(threads.handles.iter().all(|h| !h.is_finished()));
        let mut slots: Vec<u32> = out.iter().map(|c| c.slot).collect();
        slots.sort_unstable();
        assert_eq!(slots, [0, 1, 2, 3]);
        assert!(out.iter().all(|c| c.result == 4096));
        // Read every block back through the threads, into other slots' buffers.
        for slot in 0..4 {
            e.buffer_mut(slot).fill(0);
            e.queue(req(slot, OpKind::Read, (3 - slot) as u64 * 4096, 4096))
                .unwrap();
        }
        out.clear();
        while out.len() < 4 {
            e.submit_and_reap(1, Some(Duration::from_secs(5)), &mut out)
                .unwrap();
        }
        for slot in 0..4u32 {
            let want = (3 - slot) as u8 + 1;
            assert!(e.buffer_mut(slot).iter().all(|&b| b == want), "slot {slot}");
        }
        // Nothing in flight: a reap returns at once with nothing.
        out.clear();
        e.submit_and_reap(1, Some(Duration::from_secs(5)), &mut out)
            .unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn inline_runs_the_oldest_first_one_per_call_and_guards_slots_in_flight() {
        let mut e =
            PsyncEngine::new(disk(tempfile::tempfile().unwrap()), params(3, 4096), 1).unwrap();
        e.blocked_ns = u64::MAX;
        for slot in 0..3 {
            e.queue(req(slot, OpKind::Write, slot as u64 * 4096, 4096))
                .unwrap();
        }
        // Queued and not returned: the slot is the I/O's.
        assert!(e.queue(req(1, OpKind::Read, 0, 4096)).is_err());
        let mut out = Vec::new();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!(out.iter().map(|c| c.slot).collect::<Vec<_>>(), [0]);
        e.submit_and_reap(0, None, &mut out).unwrap();
        assert_eq!(out.iter().map(|c| c.slot).collect::<Vec<_>>(), [0, 1]);
        // Returned slots are the owner's again; slot 2 is still queued.
        e.buffer_mut(0).fill(1);
        e.queue(req(0, OpKind::Write, 0, 4096)).unwrap();
        e.submit_and_reap(2, None, &mut out).unwrap();
        assert_eq!(out.iter().map(|c| c.slot).collect::<Vec<_>>(), [0, 1, 2, 0]);
        assert!(!e.threaded());
    }

    #[test]
    #[should_panic(expected = "in flight")]
    fn the_buffer_of_a_slot_in_flight_is_not_handed_out() {
        let mut e =
            PsyncEngine::new(disk(tempfile::tempfile().unwrap()), params(2, 4096), 1).unwrap();
        e.queue(req(1, OpKind::Write, 0, 4096)).unwrap();
        e.buffer_mut(1);
    }

    #[test]
    fn one_slot_never_starts_threads() {
        let mut e = threaded(disk(tempfile::tempfile().unwrap()), 1);
        let mut out = Vec::new();
        for _ in 0..2 * BLOCKED_STREAK {
            e.queue(req(0, OpKind::Write, 0, 4096)).unwrap();
            e.submit_and_reap(1, None, &mut out).unwrap();
        }
        assert_eq!(out.len(), 2 * BLOCKED_STREAK as usize);
        assert!(!e.threaded());
    }

    #[test]
    fn each_request_goes_to_its_own_file() {
        let (a, b) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
        let mut disks = disk(a);
        disks.extend(disk(b));
        let mut e = PsyncEngine::new(disks, params(2, 4096), 3).unwrap();
        e.queue(IoReq {
            file: 1,
            ..req(0, OpKind::Write, 4096, 4096)
        })
        .unwrap();
        let mut out = Vec::new();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!(out[0].result, 4096);
        let lens: Vec<u64> = e
            .disks
            .iter()
            .map(|d| d.file.metadata().unwrap().len())
            .collect();
        assert_eq!(lens, [0, 8192], "only the second file was written");
    }

    #[test]
    fn short_read_at_end_of_file_reports_bytes_moved() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(6000).unwrap();
        let mut e = PsyncEngine::new(disk(f), params(2, 4096), 1).unwrap();
        e.blocked_ns = u64::MAX;
        e.queue(req(0, OpKind::Read, 4096, 4096)).unwrap();
        e.queue(req(1, OpKind::Read, 8192, 4096)).unwrap();
        let mut out = Vec::new();
        e.submit_and_reap(2, None, &mut out).unwrap();
        assert_eq!(
            out,
            [
                Completion {
                    slot: 0,
                    result: 6000 - 4096
                },
                Completion { slot: 1, result: 0 }
            ]
        );
    }

    #[test]
    fn errors_come_back_as_negative_errno() {
        let named = tempfile::NamedTempFile::new().unwrap();
        let ro = File::open(named.path()).unwrap();
        let mut e = PsyncEngine::new(disk(ro), params(1, 4096), 1).unwrap();
        e.queue(req(0, OpKind::Write, 0, 4096)).unwrap();
        let mut out = Vec::new();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!(
            out,
            [Completion {
                slot: 0,
                result: -libc::EBADF
            }]
        );
    }

    #[test]
    fn requests_outside_the_buffers_are_refused() {
        let mut e =
            PsyncEngine::new(disk(tempfile::tempfile().unwrap()), params(2, 4096), 1).unwrap();
        assert!(e.queue(req(2, OpKind::Read, 0, 512)).is_err());
        assert!(e.queue(req(0, OpKind::Read, 0, 8192)).is_err());
        let other_file = IoReq {
            file: 1,
            ..req(0, OpKind::Read, 0, 512)
        };
        let err = e.queue(other_file).unwrap_err().to_string();
        assert!(err.contains("file 1"), "{err}");
        let mut out = Vec::new();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn o_direct_round_trip_with_aligned_buffers() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let path = dir.path().join("direct");
        let f = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                crate::need::environment(
                    "psync O_DIRECT round trip",
                    "/tmp does not support O_DIRECT",
                    false,
                );
                return;
            }
            Err(e) => panic!("open O_DIRECT: {e}"),
        };
        let mut e = PsyncEngine::new(disk(f), params(2, 8192), 9).unwrap();
        e.blocked_ns = u64::MAX;
        let written = e.buffer_mut(0).to_vec();
        e.queue(req(0, OpKind::Write, 4096, 8192)).unwrap();
        e.queue(req(1, OpKind::Read, 4096, 8192)).unwrap();
        let mut out = Vec::new();
        e.submit_and_reap(2, None, &mut out).unwrap();
        assert_eq!(out[0].result, 8192);
        assert_eq!(out[1].result, 8192);
        assert_eq!(e.buffer_mut(1), &written[..]);
        // A misaligned length is refused by the kernel, proving O_DIRECT is in effect.
        e.queue(req(0, OpKind::Write, 4096, 100)).unwrap();
        out.clear();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!(out[0].result, -libc::EINVAL);
    }
}
