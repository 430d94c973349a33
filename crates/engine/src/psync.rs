//! The `psync` engine: one synchronous `pread`/`pwrite` per I/O, like fio's engine of the
//! same name, on any of the files it was opened with. `queue` only records the request; `submit_and_reap` runs every recorded
//! request in queue order on the calling thread and reports each one. It is the portable
//! fallback when io_uring is missing or disabled. It does not loop over short transfers
//! (a short read at end of file is reported as the bytes it moved) and it does not use
//! vectored or asynchronous I/O: the effective queue depth is always 1.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use crate::buf::BufferPool;
use crate::{Caps, Completion, Engine, EngineError, EngineParams, IoReq, OpKind, OpenDisk};

/// Synchronous positional I/O on opened disks.
#[derive(Debug)]
pub struct PsyncEngine {
    disks: Vec<OpenDisk>,
    pool: BufferPool,
    /// Requests queued since the last `submit_and_reap`; capacity `slots`, never grows
    /// while callers keep at most `slots` I/Os outstanding.
    pending: Vec<IoReq>,
}

impl PsyncEngine {
    pub fn new(disks: Vec<OpenDisk>, params: EngineParams, seed: u64) -> Result<Self, EngineError> {
        let pool = BufferPool::new(params.slots, params.max_bs, seed)?;
        Ok(PsyncEngine {
            disks,
            pool,
            pending: Vec::with_capacity(params.slots as usize),
        })
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
        }
    }

    fn queue(&mut self, req: IoReq) -> Result<(), EngineError> {
        self.pool.check_req(&req)?;
        if req.file as usize >= self.disks.len() {
            return Err(crate::bad_file(&req, self.disks.len()));
        }
        self.pending.push(req);
        Ok(())
    }

    /// Runs every queued I/O now; `min_complete` and `timeout` have nothing to wait for.
    fn submit_and_reap(
        &mut self,
        _min_complete: u32,
        _timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<(), EngineError> {
        let PsyncEngine {
            disks,
            pool,
            pending,
        } = self;
        for req in pending.drain(..) {
            let buf = &mut pool.slot_mut(req.slot)[..req.len as usize];
            let result = transfer(&disks[req.file as usize].file, req.op, buf, req.offset);
            out.push(Completion {
                slot: req.slot,
                result,
            });
        }
        Ok(())
    }

    fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slot_mut(slot)
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
                eprintln!("skipping: /tmp does not support O_DIRECT");
                return;
            }
            Err(e) => panic!("open O_DIRECT: {e}"),
        };
        let mut e = PsyncEngine::new(disk(f), params(2, 8192), 9).unwrap();
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
