//! Prepare phase: fill a disk region with data, and the marker that says it is filled.
//!
//! Reads of never-written blocks on thin or sparse storage return without touching
//! media, so disks are filled before read tests. A fill writes the region's
//! addressable bytes sequentially in 1 MiB chunks (the run's data pattern from
//! `crate::pattern`: incompressible and not dedupable by default, or with the profile's
//! dedupe and compression ratios; or zeros), syncs, then writes a 4 KiB marker just
//! after the region recording size, pattern and region offset with a checksum (not
//! synced: it is written after the data is durable, and a lost marker only means a
//! refill). A later run that finds a valid marker for the same size and pattern can
//! skip the fill ("reuse of preconditioned volumes"). The marker is invalidated before
//! the first data write, so an interrupted fill never leaves a marker claiming a fill.
//! `precondition_pass` is the same write with 128 KiB chunks and a fresh random stream
//! per pass: SNIA's workload-independent preconditioning writes the disk twice over
//! that way (`iofleet precondition`).
//!
//! Each disk is written by several writers at once, each taking the next chunk and
//! writing it with its own buffer (one write in flight per writer), so the device sees
//! a queue of sequential writes as from fio's `iodepth`, and data generation overlaps
//! other writers' I/O. The data is the same as one writer's would be: every writer
//! generates the disk's one pattern stream at its chunk's place. `fill_plan` says how
//! many disks to fill at once and with how many writers each.
//! This module does not decide *whether* to fill and does not time anything; the
//! caller reads `progress_bytes` at its own rate.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::OFlags;

use super::{open_disk, DiskLayout, TargetError, MARKER_LEN};
use crate::pattern::{Pattern, PatternSpec};

/// Bytes per fill write.
const CHUNK: usize = 1 << 20;
/// Bytes per preconditioning write (SNIA SSS PTS: 128 KiB sequential writes).
pub const PRECONDITION_BS: usize = 128 << 10;
/// Writes in flight across every disk being filled (bench/README.md, issue 23).
pub const FILL_QUEUE: usize = 32;
/// Disks filled at once, at most.
pub const FILL_DISKS_AT_ONCE: usize = 16;

/// For `disks` disks to fill: how many to fill at once, and with how many writers each
/// (together `FILL_QUEUE` writes in flight, at least 2 writers per disk).
pub fn fill_plan(disks: usize) -> (usize, usize) {
    let at_once = disks.clamp(1, FILL_DISKS_AT_ONCE);
    (at_once, (FILL_QUEUE / at_once).max(2))
}
/// Buffer alignment for O_DIRECT (covers 512-byte and 4Kn logical blocks).
const ALIGN: usize = 4096;
/// First 16 bytes of a fill marker.
const MAGIC: &[u8; 16] = b"IOFLEET-FILL-V1\0";
// Marker layout (little-endian): magic[0..16], size u64 [16..24], pattern u8 [24],
// region_offset u64 [25..33], FNV-1a 64 of bytes 0..33 at [33..41], zeros to 4096.
// Pattern fills (code 3) also record dedupe_ratio f64 [41..49], dedupe_unit u32
// [49..53] and compress_ratio f64 [53..61]; a marker matches only byte for byte.
const CHECKED_LEN: usize = 33;

/// The data a fill writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FillPattern {
    /// Pseudo-random bytes, every 4 KiB distinct: incompressible, not dedupable.
    Random,
    /// Zeros (compresses and dedupes completely on storage that does either).
    Zero,
    /// Data with dedupe and compression ratios (see `crate::pattern`).
    Pattern(PatternSpec),
}

impl FillPattern {
    /// The fill for a run's data spec: zeros, plain random, or a ratio pattern.
    pub fn of(spec: PatternSpec) -> FillPattern {
        if spec.zero {
            FillPattern::Zero
        } else if spec.is_plain_random() {
            FillPattern::Random
        } else {
            FillPattern::Pattern(spec)
        }
    }

    fn code(self) -> u8 {
        match self {
            FillPattern::Random => 1,
            FillPattern::Zero => 2,
            FillPattern::Pattern(_) => 3,
        }
    }

    fn spec(self) -> PatternSpec {
        match self {
            FillPattern::Random => PatternSpec::RANDOM,
            FillPattern::Zero => PatternSpec {
                zero: true,
                ..PatternSpec::RANDOM
            },
            FillPattern::Pattern(s) => s,
        }
    }
}

/// How a fill ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillOutcome {
    /// Every addressable byte was written and the marker records it.
    Done,
    /// `stop` was set; some data was written, no marker was.
    Interrupted,
}

/// A zeroed byte buffer whose usable part starts at an `ALIGN`-aligned address.
/// Over-allocating a `Vec` and slicing at the aligned offset needs no `unsafe`.
struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn zeroed(len: usize) -> Self {
        let raw = vec![0u8; len + ALIGN];
        let addr = raw.as_ptr() as usize;
        let start = (ALIGN - addr % ALIGN) % ALIGN;
        AlignedBuf { raw, start, len }
    }

    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The marker block for a region of `size` addressable bytes at `region_offset`
/// filled with `pattern`.
pub(super) fn encode_marker(size: u64, pattern: FillPattern, region_offset: u64) -> Vec<u8> {
    let mut m = vec![0u8; MARKER_LEN as usize];
    m[0..16].copy_from_slice(MAGIC);
    m[16..24].copy_from_slice(&size.to_le_bytes());
    m[24] = pattern.code();
    m[25..33].copy_from_slice(&region_offset.to_le_bytes());
    let sum = fnv1a64(&m[..CHECKED_LEN]);
    m[33..41].copy_from_slice(&sum.to_le_bytes());
    if let FillPattern::Pattern(s) = pattern {
        m[41..49].copy_from_slice(&s.dedupe_ratio.to_le_bytes());
        m[49..53].copy_from_slice(&s.dedupe_unit.to_le_bytes());
        m[53..61].copy_from_slice(&s.compress_ratio.to_le_bytes());
    }
    m
}

/// True when `block` is a marker for exactly this size, pattern and region offset.
fn marker_matches(block: &[u8], size: u64, pattern: FillPattern, region_offset: u64) -> bool {
    let Some(sum) = block.get(33..41) else {
        return false;
    };
    block[0..16] == MAGIC[..]
        && block[16..24] == size.to_le_bytes()
        && block[24] == pattern.code()
        && block[25..33] == region_offset.to_le_bytes()
        && sum == fnv1a64(&block[..CHECKED_LEN]).to_le_bytes()
        && block[41..] == encode_marker(size, pattern, region_offset)[41..]
}

fn marker_offset(d: &DiskLayout) -> Result<u64, TargetError> {
    d.region_offset
        .checked_add(d.size)
        .filter(|o| o.checked_add(MARKER_LEN).is_some())
        .ok_or_else(|| TargetError::BadLayout {
            path: d.path.clone(),
            why: "region offset + size overflows",
        })
}

/// True when the disk carries a valid fill marker for its current size and `p`.
///
/// Reads through a plain (buffered) descriptor. A missing file, a file too short to
/// hold the marker, or a marker for another size, pattern or region is `false`.
pub fn fill_marker_valid(d: &DiskLayout, p: FillPattern) -> Result<bool, TargetError> {
    let off = marker_offset(d)?;
    let mut opts = OpenOptions::new();
    opts.read(true);
    if !d.is_device {
        opts.custom_flags(OFlags::NOFOLLOW.bits() as i32);
    }
    let file = match opts.open(&d.path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(TargetError::io("cannot open", &d.path, e)),
    };
    let mut block = vec![0u8; MARKER_LEN as usize];
    match file.read_exact_at(&mut block, off) {
        Ok(()) => Ok(marker_matches(&block, d.size, p, d.region_offset)),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(TargetError::io(
            "cannot read the fill marker of",
            &d.path,
            e,
        )),
    }
}

/// Fills the disk's addressable bytes with `p`, then writes its fill marker.
///
/// Writes in 1 MiB chunks through O_DIRECT when `direct`; checks `stop` before every
/// chunk (returning [`FillOutcome::Interrupted`] without a marker) and adds each
/// chunk's bytes to `progress_bytes`. The region's size and offset must be multiples
/// of 4096 (the planner guarantees it), so every write, the marker's included, is
/// aligned for O_DIRECT on 512-byte and 4Kn devices alike.
pub fn fill_disk(
    d: &DiskLayout,
    p: FillPattern,
    direct: bool,
    writers: usize,
    stop: &AtomicBool,
    progress_bytes: &AtomicU64,
) -> Result<FillOutcome, TargetError> {
    let region = Region {
        d,
        p,
        direct,
        chunk_len: CHUNK,
        pass: 0,
        writers,
    };
    region.write(stop, progress_bytes, &|_, _| {})
}

/// [`fill_disk`], with `finish` called on every chunk after its pattern is filled and
/// before it is written, with the chunk's offset in the disk (a verified fill stamps
/// its headers there; every chunk is a whole number of 4 KiB units). Writers call it
/// at once, each on its own chunk.
pub fn fill_disk_with(
    d: &DiskLayout,
    p: FillPattern,
    direct: bool,
    writers: usize,
    stop: &AtomicBool,
    progress_bytes: &AtomicU64,
    finish: &(dyn Fn(&mut [u8], u64) + Sync),
) -> Result<FillOutcome, TargetError> {
    let region = Region {
        d,
        p,
        direct,
        chunk_len: CHUNK,
        pass: 0,
        writers,
    };
    region.write(stop, progress_bytes, finish)
}

/// Pass `pass` (0, 1, …) of preconditioning: every addressable byte written once with
/// `PRECONDITION_BS` sequential writes of pseudo-random data, a stream of its own per
/// pass (the second pass overwrites the first with other data), then the fill marker
/// for a random fill, so later runs that prepare with random data reuse it. Same
/// checks, `stop` and progress as [`fill_disk`].
pub fn precondition_pass(
    d: &DiskLayout,
    pass: u32,
    direct: bool,
    writers: usize,
    stop: &AtomicBool,
    progress_bytes: &AtomicU64,
) -> Result<FillOutcome, TargetError> {
    let region = Region {
        d,
        p: FillPattern::Random,
        direct,
        chunk_len: PRECONDITION_BS,
        pass,
        writers,
    };
    region.write(stop, progress_bytes, &|_, _| {})
}

/// One disk's region to write: sequentially in `chunk_len`-byte writes (a multiple of
/// 4096) by `writers` writers at once, with stream `pass` of the disk's data.
struct Region<'a> {
    d: &'a DiskLayout,
    p: FillPattern,
    direct: bool,
    chunk_len: usize,
    pass: u32,
    writers: usize,
}

impl Region<'_> {
    /// Clear the marker, write every chunk (`finish` on each), sync, write the marker.
    fn write(
        &self,
        stop: &AtomicBool,
        progress_bytes: &AtomicU64,
        finish: &(dyn Fn(&mut [u8], u64) + Sync),
    ) -> Result<FillOutcome, TargetError> {
        let d = self.d;
        // A power-of-two mask, not `is_multiple_of` (Rust 1.87; the MSRV is 1.80).
        let mask = ALIGN as u64 - 1;
        if d.size & mask != 0 || d.region_offset & mask != 0 {
            return Err(TargetError::BadLayout {
                path: d.path.clone(),
                why: "region offset and size must be multiples of 4096 bytes",
            });
        }
        let marker_off = marker_offset(d)?;
        let file = open_disk(d, self.direct, true)?.file;
        // A marker of another fill (another size or pattern) is cleared, durably, before
        // any data is written; where there is none (a new file), there is nothing to
        // clear and no sync to wait for.
        let mut block = AlignedBuf::zeroed(MARKER_LEN as usize);
        let found = match file.read_exact_at(block.as_mut(), marker_off) {
            Ok(()) => block.as_mut().starts_with(MAGIC),
            // A file that ends before its marker has none.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => false,
            // Unreadable: cleared as if there were one.
            Err(_) => true,
        };
        if found {
            block.as_mut().fill(0);
            write_at(
                d,
                &file,
                block.as_mut(),
                marker_off,
                "cannot clear the fill marker of",
            )?;
            sync(d, &file)?;
        }

        let next = AtomicU64::new(0);
        let written = AtomicU64::new(0);
        let failed = std::sync::Mutex::new(None);
        let halt = AtomicBool::new(false);
        let writers = self.writers.max(1);
        std::thread::scope(|s| {
            for _ in 0..writers {
                s.spawn(|| {
                    let counts = [progress_bytes, &written];
                    if let Err(e) = self.writer(&file, &next, stop, &halt, counts, finish) {
                        halt.store(true, Ordering::Relaxed);
                        failed
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get_or_insert(e);
                    }
                });
            }
        });
        if let Some(e) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        if written.load(Ordering::Relaxed) < d.size {
            return Ok(FillOutcome::Interrupted);
        }
        sync(d, &file)?;

        let marker = encode_marker(d.size, self.p, d.region_offset);
        block.as_mut().copy_from_slice(&marker);
        write_at(
            d,
            &file,
            block.as_mut(),
            marker_off,
            "cannot write the fill marker of",
        )?;
        // Not synced: it is written only after the data is durable, so whenever it
        // reaches the device the data is there; if a crash loses it, the next run fills
        // again. Only the order matters, and one sync per disk less is time saved.
        Ok(FillOutcome::Done)
    }

    /// One writer: the next chunk not yet taken, until none is left, `stop` is set or
    /// another writer failed. Each write's bytes are added to both `counts` (the
    /// caller's progress, and the region's own count) once written.
    fn writer(
        &self,
        file: &File,
        next: &AtomicU64,
        stop: &AtomicBool,
        halt: &AtomicBool,
        counts: [&AtomicU64; 2],
        finish: &(dyn Fn(&mut [u8], u64) + Sync),
    ) -> Result<(), TargetError> {
        let d = self.d;
        // The fill of each disk is one stream of the pattern, salted apart from every
        // lane and, when preconditioning, from the other passes.
        let seed = 0x10f1_ee70_f111_5eed
            ^ (u64::from(d.worker) << 32 | u64::from(d.disk))
            ^ u64::from(self.pass).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut data = Pattern::new(self.p.spec(), seed);
        let per_chunk = data.units_in(self.chunk_len);
        let mut buf = AlignedBuf::zeroed(self.chunk_len);
        loop {
            if stop.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed) {
                return Ok(());
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            let at = i.saturating_mul(self.chunk_len as u64);
            if at >= d.size {
                return Ok(());
            }
            let len = (d.size - at).min(self.chunk_len as u64) as usize;
            let chunk = &mut buf.as_mut()[..len];
            if self.p != FillPattern::Zero {
                data.seek(i * per_chunk);
                data.fill(chunk);
            }
            finish(chunk, at);
            write_at(d, file, chunk, d.region_offset + at, "cannot write")?;
            for c in counts {
                c.fetch_add(len as u64, Ordering::Relaxed);
            }
        }
    }
}

fn write_at(
    d: &DiskLayout,
    f: &File,
    buf: &[u8],
    off: u64,
    what: &'static str,
) -> Result<(), TargetError> {
    f.write_all_at(buf, off)
        .map_err(|e| TargetError::io(what, &d.path, e))
}

fn sync(d: &DiskLayout, f: &File) -> Result<(), TargetError> {
    f.sync_data()
        .map_err(|e| TargetError::io("cannot sync", &d.path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trip_and_every_field_counts() {
        let m = encode_marker(1 << 30, FillPattern::Random, 4 << 20);
        assert_eq!(m.len(), MARKER_LEN as usize);
        assert!(m.starts_with(b"IOFLEET-FILL-V1\0"));
        assert!(m[41..].iter().all(|&b| b == 0));
        assert!(marker_matches(&m, 1 << 30, FillPattern::Random, 4 << 20));
        assert!(!marker_matches(
            &m,
            (1 << 30) + 4096,
            FillPattern::Random,
            4 << 20
        ));
        assert!(!marker_matches(&m, 1 << 30, FillPattern::Zero, 4 << 20));
        assert!(!marker_matches(&m, 1 << 30, FillPattern::Random, 0));
        for i in 0..41 {
            let mut bad = m.clone();
            bad[i] ^= 0x01;
            assert!(
                !marker_matches(&bad, 1 << 30, FillPattern::Random, 4 << 20),
                "flipped byte {i} still valid"
            );
        }
        assert!(!marker_matches(&[0u8; 4096], 0, FillPattern::Zero, 0));
        assert!(!marker_matches(&[], 0, FillPattern::Zero, 0));
    }

    #[test]
    fn pattern_markers_record_the_ratios() {
        let spec = |d: f64, c: f64| PatternSpec {
            dedupe_ratio: d,
            compress_ratio: c,
            ..PatternSpec::RANDOM
        };
        let p = FillPattern::of(spec(3.0, 2.0));
        assert_eq!(p, FillPattern::Pattern(spec(3.0, 2.0)));
        assert_eq!(FillPattern::of(PatternSpec::RANDOM), FillPattern::Random);
        let m = encode_marker(1 << 20, p, 0);
        assert!(marker_matches(&m, 1 << 20, p, 0));
        for other in [
            FillPattern::Random,
            FillPattern::Zero,
            FillPattern::of(spec(2.0, 2.0)),
            FillPattern::of(spec(3.0, 1.5)),
            FillPattern::of(PatternSpec {
                dedupe_unit: 8192,
                ..spec(3.0, 2.0)
            }),
        ] {
            assert!(!marker_matches(&m, 1 << 20, other, 0), "{other:?}");
        }
    }

    #[test]
    fn aligned_buffer_is_aligned() {
        for len in [1, 4096, CHUNK] {
            let mut b = AlignedBuf::zeroed(len);
            let s = b.as_mut();
            assert_eq!(s.len(), len);
            assert_eq!(s.as_ptr() as usize % ALIGN, 0);
        }
    }

    /// A disk file of `size` bytes (and room for the marker) at `path`, every byte `byte`.
    fn file_disk(path: std::path::PathBuf, size: u64, byte: u8) -> DiskLayout {
        std::fs::write(&path, vec![byte; (size + MARKER_LEN) as usize]).unwrap();
        DiskLayout {
            worker: 0,
            disk: 0,
            path,
            region_offset: 0,
            size,
            is_device: false,
        }
    }

    #[test]
    fn precondition_passes_write_every_byte_with_new_data_and_leave_a_marker() {
        // 33 × 4 KiB: not a multiple of 128 KiB, so the last write is short.
        let dir = tempfile::tempdir().unwrap();
        let d = file_disk(dir.path().join("d"), 33 * 4096, 0xab);
        let stop = AtomicBool::new(false);
        let mut passes = Vec::new();
        for pass in 0..2 {
            let written = AtomicU64::new(0);
            let out = precondition_pass(&d, pass, false, 3, &stop, &written).unwrap();
            assert_eq!(out, FillOutcome::Done);
            assert_eq!(written.load(Ordering::SeqCst), d.size);
            assert!(fill_marker_valid(&d, FillPattern::Random).unwrap());
            let bytes = std::fs::read(&d.path).unwrap();
            assert_eq!(
                bytes.len() as u64,
                d.size + MARKER_LEN,
                "nothing past the marker"
            );
            passes.push(bytes[..d.size as usize].to_vec());
        }
        for (a, b) in passes[0].chunks(4096).zip(passes[1].chunks(4096)) {
            assert_ne!(a, b, "the second pass wrote the same data");
            assert!(a.iter().any(|&x| x != 0xab) && b.iter().any(|&x| x != 0xab));
        }
        // A stop before the first write leaves no marker.
        stop.store(true, Ordering::SeqCst);
        let out = precondition_pass(&d, 0, false, 3, &stop, &AtomicU64::new(0)).unwrap();
        assert_eq!(out, FillOutcome::Interrupted);
        assert!(!fill_marker_valid(&d, FillPattern::Random).unwrap());
    }

    #[test]
    fn several_writers_write_exactly_what_one_writer_writes() {
        // 2.5 chunks: the last write is short. Random data and a ratio pattern (its
        // dedupe ids follow the stream's unit count), each with a verify-like stamp.
        let dir = tempfile::tempdir().unwrap();
        let size = (CHUNK * 5 / 2) as u64;
        let ratios = PatternSpec {
            zero: false,
            dedupe_ratio: 3.0,
            dedupe_unit: 4096,
            compress_ratio: 2.0,
        };
        for p in [FillPattern::Random, FillPattern::Pattern(ratios)] {
            let mut images = Vec::new();
            for writers in [1, 2, 7] {
                let d = DiskLayout {
                    worker: 1,
                    disk: 2,
                    ..file_disk(dir.path().join(format!("d{writers}")), size, 0xab)
                };
                let progress = AtomicU64::new(0);
                let stamp =
                    |chunk: &mut [u8], at: u64| chunk[..8].copy_from_slice(&at.to_le_bytes());
                let out = fill_disk_with(
                    &d,
                    p,
                    false,
                    writers,
                    &AtomicBool::new(false),
                    &progress,
                    &stamp,
                )
                .unwrap();
                assert_eq!(out, FillOutcome::Done);
                assert_eq!(progress.load(Ordering::SeqCst), size);
                assert!(fill_marker_valid(&d, p).unwrap());
                images.push(std::fs::read(&d.path).unwrap());
            }
            assert!(images[0][..size as usize]
                .chunks(4096)
                .all(|u| u.iter().any(|&x| x != 0xab)));
            assert!(images.iter().all(|i| *i == images[0]), "{p:?}");
        }
    }

    #[test]
    fn another_fills_marker_is_cleared_before_any_data_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let d = file_disk(dir.path().join("d"), 8 * 4096, 0);
        let (go, halt) = (AtomicBool::new(false), AtomicBool::new(true));
        let out = fill_disk(&d, FillPattern::Random, false, 2, &go, &AtomicU64::new(0)).unwrap();
        assert_eq!(out, FillOutcome::Done);
        assert!(fill_marker_valid(&d, FillPattern::Random).unwrap());
        // A fill of zeros stopped before its first write: the random fill's marker is
        // gone all the same, so the disk is not taken for filled with random data.
        let out = fill_disk(&d, FillPattern::Zero, false, 2, &halt, &AtomicU64::new(0)).unwrap();
        assert_eq!(out, FillOutcome::Interrupted);
        assert!(!fill_marker_valid(&d, FillPattern::Random).unwrap());
        assert!(!fill_marker_valid(&d, FillPattern::Zero).unwrap());
    }

    #[test]
    fn fnv_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
