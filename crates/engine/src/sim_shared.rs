//! The one queue behind a shared simulated device (`sim:…,shared=NAME`): each server's
//! next free time, an atomic taken by compare-and-swap, in a file of `/dev/shm` that
//! every process naming the device maps. So the agents of one `iofleet agent --agents
//! N` process, the I/O threads of a local run, and agents in separate processes on one
//! machine (started by `mpirun`, `srun`, a loop) all pass through the same servers.
//! Times are ns of `CLOCK_MONOTONIC`, which every process of the machine reads alike.
//!
//! The file is `/dev/shm/iofleet-sim-NAME-HASH`, HASH a digest of the device's whole
//! description, so a device of the same name but other servers or service times is
//! another file, never a mix. It holds 8 bytes per server and is left in place when the
//! run ends (later runs of that device reuse it: free times in the past are free
//! servers); `rm /dev/shm/iofleet-sim-*` removes them. Within a process each device is
//! mapped once (a registry by name), and the same name with another description in one
//! process is refused. This module decides nothing about service times: `sim` draws
//! them and asks [`SharedQueue::serve`] when a server takes the I/O.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use twox_hash::XxHash3_64;

use crate::EngineError;

/// Where shared devices live.
const SHM: &str = "/dev/shm";

/// One shared device's servers: their next free times (ns of `CLOCK_MONOTONIC`).
#[derive(Debug)]
pub struct SharedQueue {
    /// The device's description, as first asked for in this process.
    model: String,
    free: ServerTimes,
}

impl SharedQueue {
    /// The device named `name`, described by `model`, with `servers` servers: mapped at
    /// this process's first ask, the same queue after; another `model` under the same
    /// name is refused.
    pub fn named(name: &str, model: &str, servers: u32) -> Result<Arc<SharedQueue>, EngineError> {
        static REGISTRY: OnceLock<Mutex<HashMap<String, Arc<SharedQueue>>>> = OnceLock::new();
        let mut all = REGISTRY
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(q) = all.get(name) {
            if q.model != model {
                return Err(EngineError::Setup(format!(
                    "sim: shared device {name} is already in use in this process as {}, not {model}",
                    q.model
                )));
            }
            return Ok(q.clone());
        }
        let q = Arc::new(SharedQueue::at(&path_of(name, model), model, servers)?);
        all.insert(name.to_string(), q.clone());
        Ok(q)
    }

    /// The queue whose times are in the file `path` (made, zeroed, when missing).
    fn at(path: &Path, model: &str, servers: u32) -> Result<SharedQueue, EngineError> {
        Ok(SharedQueue {
            model: model.to_string(),
            free: ServerTimes::map(path, servers)?,
        })
    }

    /// The queue's clock: ns of `CLOCK_MONOTONIC`, the same in every process.
    pub fn now_ns() -> u64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64
    }

    /// An I/O arriving at `now` and needing `service(start)` ns once a server takes it
    /// at `start`: first come, first served on the server free earliest. Returns
    /// (start, done).
    pub fn serve(&self, now: u64, service: impl Fn(u64) -> u64) -> (u64, u64) {
        let free = self.free.slice();
        loop {
            let (i, at) = free
                .iter()
                .map(|f| f.load(Ordering::Acquire))
                .enumerate()
                .min_by_key(|&(_, f)| f)
                .expect("a device has at least one server");
            let start = at.max(now);
            let done = start.saturating_add(service(start));
            // Another I/O (of this process or another) took this server meanwhile: look
            // again.
            if free[i]
                .compare_exchange(at, done, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return (start, done);
            }
        }
    }
}

/// `/dev/shm/iofleet-sim-NAME-HASH` of a device `model` named `name`.
pub fn path_of(name: &str, model: &str) -> PathBuf {
    let hash = XxHash3_64::oneshot(model.as_bytes());
    Path::new(SHM).join(format!("iofleet-sim-{name}-{hash:016x}"))
}

/// `servers` atomics of 8 bytes in a file mapped shared: the file's bytes are the
/// atomics, so every process that maps it sees the others' compare-and-swaps.
#[derive(Debug)]
struct ServerTimes {
    ptr: NonNull<AtomicU64>,
    servers: usize,
}

// SAFETY: the mapping is only ever reached through `&[AtomicU64]` (atomic operations),
// it is owned by this value and unmapped once, in `drop`.
unsafe impl Send for ServerTimes {}
// SAFETY: as above; shared references only perform atomic operations.
unsafe impl Sync for ServerTimes {}

impl ServerTimes {
    fn map(path: &Path, servers: u32) -> Result<ServerTimes, EngineError> {
        let bad = |what: &str, e: std::io::Error| {
            EngineError::Setup(format!(
                "sim: a shared device's queue lives in {}: cannot {what} it: {e}",
                path.display()
            ))
        };
        let bytes = servers as u64 * 8;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| bad("open", e))?;
        // Every process sizes it alike (a new file is empty until one does); a size of
        // another device cannot be, since the description is in the name.
        let len = file.metadata().map_err(|e| bad("read", e))?.len();
        if len != bytes {
            file.set_len(bytes).map_err(|e| bad("size", e))?;
        }
        // SAFETY: a new shared mapping of the first `bytes` bytes of `file`, which has
        // that many now; no address hint. The mapping outlives the descriptor (closed
        // when `file` drops), as mmap(2) allows.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(bad("map", std::io::Error::last_os_error()));
        }
        let ptr = NonNull::new(raw.cast::<AtomicU64>())
            .ok_or_else(|| bad("map", std::io::Error::other("a null mapping")))?;
        Ok(ServerTimes {
            ptr,
            servers: servers as usize,
        })
    }

    fn slice(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` is a page-aligned mapping of `servers` × 8 bytes (so aligned
        // for u64), readable and writable, alive until `drop`; `AtomicU64` has u64's
        // layout, and every access to these bytes, here or in another process, is atomic.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.servers) }
    }
}

impl Drop for ServerTimes {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped only here, once; no slice of it
        // outlives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.servers * 8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_queue_serves_everyone_first_come_first_served() {
        let d = tempfile::tempdir().unwrap();
        // One server of 100 µs: three I/Os arriving together finish one after another,
        // whoever queues them; one arriving once the server is idle starts at once.
        let q = SharedQueue::at(&d.path().join("one"), "m", 1).unwrap();
        let fixed = |_| 100_000;
        assert_eq!(q.serve(1_000, fixed), (1_000, 101_000));
        assert_eq!(q.serve(1_000, fixed), (101_000, 201_000));
        assert_eq!(q.serve(2_000, fixed), (201_000, 301_000));
        assert_eq!(q.serve(500_000, fixed), (500_000, 600_000));
        // Two servers: the earliest free one takes the next I/O.
        let q = SharedQueue::at(&d.path().join("two"), "m", 2).unwrap();
        assert_eq!(q.serve(0, |_| 300), (0, 300));
        assert_eq!(q.serve(0, |_| 100), (0, 100));
        assert_eq!(q.serve(50, |_| 10), (100, 110));
        assert_eq!(q.serve(50, |_| 10), (110, 120));
    }

    #[test]
    fn two_mappings_of_one_file_are_one_queue() {
        // As two processes map it: what one takes, the other sees taken.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("q");
        let a = SharedQueue::at(&p, "m", 1).unwrap();
        let b = SharedQueue::at(&p, "m", 1).unwrap();
        assert_eq!(a.serve(0, |_| 1_000), (0, 1_000));
        assert_eq!(b.serve(0, |_| 1_000), (1_000, 2_000));
        assert_eq!(a.serve(0, |_| 1_000), (2_000, 3_000));
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 8);
    }

    #[test]
    fn a_device_is_named_by_its_description_too() {
        let one = path_of("array", "servers=1,service=250000ns");
        let other = path_of("array", "servers=2,service=250000ns");
        assert_ne!(one, other);
        let name = one.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("iofleet-sim-array-") && name.len() == 18 + 16,
            "{name}"
        );
        assert_eq!(one, path_of("array", "servers=1,service=250000ns"));
    }
}
