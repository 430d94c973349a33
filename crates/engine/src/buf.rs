//! I/O buffers: `AlignedBuf` is one zeroed anonymous mapping aligned to 4096 bytes (so it
//! satisfies `O_DIRECT` alignment on every common device), and `BufferPool` carves one
//! such allocation into per-slot buffers filled with pseudo-random, incompressible bytes.
//! This module only owns memory; it does not register buffers with the kernel (the
//! io_uring engine does that) and never reallocates, so pointers stay valid for the
//! pool's whole life.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

use crate::{EngineError, IoReq};

/// Alignment of every `AlignedBuf`, in bytes.
pub const BUF_ALIGN: usize = 4096;

/// A zero-initialised buffer whose first byte is aligned to `BUF_ALIGN`: an anonymous
/// private mapping of its own, so the kernel hands out zeroed pages as they are first
/// touched, and a buffer of megabytes costs nothing until it is used (writing zeros
/// over it first made every page fault at once, up to 40 ms for a fill ring's 4 MiB on
/// a busy virtual machine).
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    /// Bytes mapped: `len` rounded up to whole 4096-byte pages, at least one.
    mapped: usize,
}

// SAFETY: `AlignedBuf` uniquely owns its mapping (like `Box<[u8]>`); moving it to
// another thread moves that ownership, and `&AlignedBuf` only hands out `&[u8]`.
unsafe impl Send for AlignedBuf {}
// SAFETY: no interior mutability; shared references only allow reads.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Map `len` zeroed bytes. The mapping is rounded up to a whole number of
    /// 4096-byte pages (at least one), so a zero-length buffer is still a valid pointer.
    pub fn zeroed(len: usize) -> Result<Self, EngineError> {
        let mapped = len
            .max(1)
            .checked_next_multiple_of(BUF_ALIGN)
            .filter(|&m| m <= isize::MAX as usize)
            .ok_or_else(|| too_big(len))?;
        // SAFETY: a new anonymous private mapping: no file, no address hint, nothing
        // else refers to it. Mappings are page-aligned, and pages are a multiple of
        // BUF_ALIGN on every Linux architecture.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(too_big(len));
        }
        let ptr = NonNull::new(raw.cast::<u8>()).ok_or_else(|| too_big(len))?;
        Ok(AlignedBuf { ptr, len, mapped })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

fn too_big(len: usize) -> EngineError {
    EngineError::Setup(format!(
        "cannot allocate {len} bytes of I/O buffers; lower qd or bs"
    ))
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points to a mapping of `mapped >= len` bytes, all initialised
        // (anonymous pages read as zeros), owned by `self` and alive while `self` is
        // borrowed.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` guarantees the slice is the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `mapped` are the mapping made in `zeroed`, unmapped only here,
        // once; no slice of it outlives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.mapped);
        }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

/// One buffer per slot, all from a single `AlignedBuf`: slot `i` is bytes
/// `[i * slot_len, (i + 1) * slot_len)`. Every byte starts pseudo-random, so written
/// data does not compress or deduplicate away.
#[derive(Debug)]
pub struct BufferPool {
    buf: AlignedBuf,
    slots: u32,
    slot_len: usize,
}

impl BufferPool {
    /// `slots` buffers of `max_bs` bytes each, filled from a `SmallRng` seeded with `seed`.
    pub fn new(slots: u32, max_bs: u32, seed: u64) -> Result<Self, EngineError> {
        let mut pool = BufferPool::zeroed(slots, max_bs)?;
        SmallRng::seed_from_u64(seed).fill_bytes(&mut pool.buf);
        Ok(pool)
    }

    /// `slots` buffers of `max_bs` bytes each, zeroed: for a caller that writes every
    /// buffer before it is used (a fill generates each write's data). Filling megabytes
    /// with random bytes first cost a fill's ring 5-30 ms of its setup.
    pub fn zeroed(slots: u32, max_bs: u32) -> Result<Self, EngineError> {
        let slot_len = max_bs as usize;
        let total = slot_len
            .checked_mul(slots as usize)
            .ok_or_else(|| too_big(usize::MAX))?;
        Ok(BufferPool {
            buf: AlignedBuf::zeroed(total)?,
            slots,
            slot_len,
        })
    }

    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Bytes per slot (the engine's `max_bs`).
    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    /// The buffer of `slot`. Panics if `slot >= slots()`.
    ///
    /// Built from the slot's own address range, never through a reference to the whole
    /// pool, so other slots may be in use elsewhere (the kernel's io_uring, or psync's
    /// sync threads) while this one is read.
    #[inline]
    pub fn slot(&self, slot: u32) -> &[u8] {
        let start = self.start(slot);
        // SAFETY: `start + slot_len <= len` (checked in `start`); the bytes are
        // initialised and live as long as `self`. Engines never hand out a slot that is
        // in flight.
        unsafe { std::slice::from_raw_parts(self.buf.ptr.as_ptr().add(start), self.slot_len) }
    }

    /// The buffer of `slot`, writable. Panics if `slot >= slots()`. Like `slot`, it
    /// covers that slot's bytes only.
    #[inline]
    pub fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        let start = self.start(slot);
        // SAFETY: as in `slot`; `&mut self` and the engines' rule that a slot is touched
        // by one party at a time (its owner, or the I/O in flight on it) make this the
        // only reference to these bytes.
        unsafe { std::slice::from_raw_parts_mut(self.buf.ptr.as_ptr().add(start), self.slot_len) }
    }

    /// Start of `slot`'s buffer, valid for `slot_len()` bytes while the pool lives.
    /// Panics if `slot >= slots()`.
    #[inline]
    pub fn slot_ptr(&mut self, slot: u32) -> *mut u8 {
        let start = self.start(slot);
        // SAFETY: `start + slot_len <= buf.len()` (checked in `start`), so the offset
        // stays inside the allocation.
        unsafe { self.buf.as_mut_ptr().add(start) }
    }

    /// Reject a request whose slot or length falls outside this pool, before any engine
    /// hands the buffer to the kernel. Only the error path allocates.
    #[inline]
    pub fn check_req(&self, req: &IoReq) -> Result<(), EngineError> {
        if req.slot < self.slots && req.len as usize <= self.slot_len {
            return Ok(());
        }
        Err(EngineError::Submit(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "I/O for slot {} of {} bytes does not fit the engine's {} slots of {} bytes",
                req.slot, req.len, self.slots, self.slot_len
            ),
        )))
    }

    #[inline]
    fn start(&self, slot: u32) -> usize {
        assert!(
            slot < self.slots,
            "slot {slot} out of range (pool has {} slots)",
            self.slots
        );
        slot as usize * self.slot_len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buf_is_aligned_and_zeroed() {
        for len in [0usize, 1, 511, 4096, 4097, 1 << 20] {
            let b = AlignedBuf::zeroed(len).unwrap();
            assert_eq!(b.as_ptr() as usize % BUF_ALIGN, 0, "len {len}");
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn aligned_buf_is_writable_through_deref_mut() {
        let mut b = AlignedBuf::zeroed(10_000).unwrap();
        b[9_999] = 7;
        b[0] = 3;
        assert_eq!((b[0], b[9_999]), (3, 7));
    }

    #[test]
    fn a_buffer_takes_no_memory_until_it_is_touched() {
        // 64 MiB mapped and read as zeros, none of it resident until written: the
        // kernel zeroes each page as it is first touched.
        let len = 64 << 20;
        let mut b = AlignedBuf::zeroed(len).unwrap();
        let resident = |b: &AlignedBuf| {
            let mut v = vec![0u8; len / 4096];
            // SAFETY: `b` maps `len` bytes (a multiple of the page size) at a page-aligned
            // address; `v` has a byte per page.
            let r = unsafe { libc::mincore(b.as_ptr() as *mut _, len, v.as_mut_ptr()) };
            assert_eq!(r, 0, "mincore: {}", std::io::Error::last_os_error());
            v.iter().filter(|&&x| x & 1 != 0).count()
        };
        assert_eq!(resident(&b), 0, "pages were touched before any use");
        b[len / 2] = 1;
        assert!(resident(&b) >= 1);
        assert_eq!(b[len / 2 - 1], 0);
    }

    #[test]
    fn absurd_size_is_an_error_not_an_abort() {
        assert!(AlignedBuf::zeroed(usize::MAX - 10).is_err());
        // Rounds up fine, but no address space holds it: the mapping is refused.
        assert!(AlignedBuf::zeroed(1 << 62).is_err());
        assert!(BufferPool::new(u32::MAX, u32::MAX, 1).is_err());
    }

    #[test]
    fn pool_slots_are_disjoint_and_laid_out_contiguously() {
        let mut p = BufferPool::new(4, 8192, 42).unwrap();
        assert_eq!(p.slot_len(), 8192);
        let base = p.slot_ptr(0) as usize;
        assert_eq!(base % BUF_ALIGN, 0);
        for i in 0..4 {
            assert_eq!(p.slot_ptr(i) as usize, base + i as usize * 8192);
            assert_eq!(p.slot_mut(i).len(), 8192);
        }
        p.slot_mut(1).fill(0xAB);
        assert!(p.slot(0).iter().any(|&x| x != 0xAB));
        assert!(p.slot(2).iter().any(|&x| x != 0xAB));
        assert!(p.slot(1).iter().all(|&x| x == 0xAB));
    }

    #[test]
    fn pool_is_filled_with_seeded_random_bytes() {
        let a = BufferPool::new(2, 4096, 7).unwrap();
        let b = BufferPool::new(2, 4096, 7).unwrap();
        let c = BufferPool::new(2, 4096, 8).unwrap();
        assert_eq!(a.slot(1), b.slot(1));
        assert_ne!(a.slot(1), c.slot(1));
        assert_ne!(a.slot(0), a.slot(1));
        // Roughly uniform bytes: every value occurs in 8 KiB, no long zero runs.
        let mut seen = [false; 256];
        for &x in a.slot(0).iter().chain(a.slot(1)) {
            seen[x as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        // A zeroed pool: the same slots, every byte zero.
        let mut z = BufferPool::zeroed(2, 4096).unwrap();
        assert_eq!((z.slots(), z.slot_len()), (2, 4096));
        assert!(z.slot(0).iter().chain(z.slot(1)).all(|&x| x == 0));
        assert_eq!(z.slot_ptr(1) as usize % 4096, 0);
    }

    #[test]
    fn check_req_rejects_foreign_slots_and_oversized_lengths() {
        use crate::OpKind;
        let p = BufferPool::new(2, 4096, 0).unwrap();
        let req = |slot, len| IoReq {
            slot,
            file: 0,
            op: OpKind::Read,
            offset: 0,
            len,
        };
        assert!(p.check_req(&req(1, 4096)).is_ok());
        assert!(p.check_req(&req(2, 512)).is_err());
        assert!(p.check_req(&req(0, 4097)).is_err());
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn slot_out_of_range_panics() {
        let mut p = BufferPool::new(2, 512, 0).unwrap();
        let _ = p.slot_mut(2);
    }
}
