//! Prepare phase: fill disk regions with data, and the marker that says each is filled.
//!
//! Reads of never-written blocks on thin or sparse storage return without touching
//! media, so disks are filled before read tests. A fill writes each region's
//! addressable bytes sequentially (the run's data pattern from `crate::pattern`:
//! incompressible and not dedupable by default, or with the profile's dedupe and
//! compression ratios; or zeros), syncs, then writes a 4 KiB marker just after the
//! region recording size, pattern and region offset with a checksum (not synced: it is
//! written after the data is durable, and a lost marker only means a refill). A later
//! run that finds a valid marker for the same size and pattern can skip the fill
//! ("reuse of preconditioned volumes"). The marker is invalidated before the first data
//! write, so an interrupted fill never leaves a marker claiming a fill.
//! [`Fill::precondition`] is the same write with 128 KiB writes and a fresh random
//! stream per pass: SNIA's workload-independent preconditioning writes the disk twice
//! over that way (`iofleet precondition`).
//!
//! A [`Fill`] writes up to [`FILL_DISKS_AT_ONCE`] disks together, as streams: each
//! device's disks (regions of one block device, files of one filesystem) are dealt to
//! streams that write their disks one after the other (through io_uring, one stream
//! per disk; by threads, [`FILL_STREAMS_PER_DEVICE`]), so each disk is written
//! sequentially and no writer waits between disks. Its writers
//! (threads the caller runs, [`Fill::writers`] of them) keep writes in flight as
//! [`FillIo`] says:
//! - one io_uring per stream, when the run's engine is io_uring and the writes are
//!   O_DIRECT: the writer submits its stream's writes in order (the block layer can
//!   merge them) and generates the next writes' data while the device writes those in
//!   flight; a writer whose stream is written helps the stream with the most left, so
//!   the writers end together;
//! - otherwise one write in flight per writer thread, the threads taking writes round
//!   the streams.
//!
//! The data is the same either way: each write holds its disk's one pattern stream at
//! that write's place. The disks whose every byte was written come back
//! [`Unsealed`]; [`seal`] syncs them together, then writes their markers.
//! This module does not decide *whether* to fill and does not time anything; the
//! caller reads [`Fill::progress`] at its own rate.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use rustix::fs::OFlags;

use super::{open_disk, DiskLayout, TargetError, MARKER_LEN};
use crate::buf::AlignedBuf;
use crate::pattern::{Pattern, PatternSpec};
use crate::uring::{UringEngine, UringOptions};
use crate::{Engine, EngineParams, IoReq, OpKind, OpenDisk};

/// Bytes per write of a fill by threads.
const CHUNK: usize = 1 << 20;
/// Bytes per preconditioning write (SNIA SSS PTS: 128 KiB sequential writes).
pub const PRECONDITION_BS: usize = 128 << 10;
/// Writer threads of a fill by threads, one write in flight each (bench/README.md,
/// issue 23).
pub const FILL_QUEUE: usize = 32;
/// A fill through io_uring: bytes per write, and writes in flight per ring (one ring
/// per stream, one stream per disk). 128 KiB at 32 deep per file is fio's better
/// sequential-write configuration on the reference disk, one job per file
/// (bench/README.md, issue 23). Writing 16 files of 64 MiB as 4 streams (128 writes in
/// flight on the device, half a typical block queue's 256 request slots) was 5-8% slower
/// than one stream per disk (512 in flight, as fio keeps them; two sets) and 5% slower
/// than 4 streams at 64 deep (medians of 6 interleaved rounds each).
pub const FILL_RING_BS: usize = 128 << 10;
pub const FILL_RING_DEPTH: u32 = 32;
/// Streams a device is written as by threads (32 writes in flight in all): its disks
/// are dealt to this many streams, each writing its disks one after the other (see
/// `Stream`), so each stream has about 8 writes in flight. A fill through io_uring
/// gives each disk a stream of its own ([`FILL_DISKS_AT_ONCE`] per device).
pub const FILL_STREAMS_PER_DEVICE: usize = 4;
/// Disks one [`Fill`] writes together, at most.
pub const FILL_DISKS_AT_ONCE: usize = 16;

/// How each writer of a fill keeps its writes in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillIo {
    /// This many writer threads, one write in flight each (any filesystem, buffered or
    /// O_DIRECT).
    Threads(usize),
    /// One writer per stream (see `FILL_STREAMS_PER_DEVICE`), each with its own
    /// io_uring keeping `depth` writes in flight, in the stream's order.
    Rings { depth: u32 },
}

impl FillIo {
    /// Streams a device's disks are dealt to.
    fn streams_per_device(self) -> usize {
        match self {
            FillIo::Threads(_) => FILL_STREAMS_PER_DEVICE,
            FillIo::Rings { .. } => FILL_DISKS_AT_ONCE,
        }
    }

    /// Bytes per write of a fill (a preconditioning pass has its own).
    fn write_len(self) -> usize {
        match self {
            FillIo::Threads(_) => CHUNK,
            FillIo::Rings { .. } => FILL_RING_BS,
        }
    }
}

/// How a host writes its fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FillWrites {
    /// O_DIRECT (else through the page cache).
    pub direct: bool,
    /// The run's engine is io_uring, so the fill may be too.
    pub uring: bool,
}

/// How a host's fills are written: O_DIRECT fills of an io_uring run through one ring
/// of `FILL_RING_DEPTH` per stream; the others by `FILL_QUEUE` threads.
pub fn fill_plan(w: FillWrites) -> FillIo {
    if w.direct && w.uring {
        FillIo::Rings {
            depth: FILL_RING_DEPTH,
        }
    } else {
        FillIo::Threads(FILL_QUEUE)
    }
}

/// Alignment of every region and write of a fill, for O_DIRECT (covers 512-byte and
/// 4Kn logical blocks).
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

/// A zeroed buffer of `len` bytes aligned for O_DIRECT, for a fill of `path`.
fn aligned(len: usize, path: &Path) -> Result<AlignedBuf, TargetError> {
    AlignedBuf::zeroed(len).map_err(|_| {
        let e = io::Error::from(io::ErrorKind::OutOfMemory);
        TargetError::io("cannot allocate a buffer to fill", path, e)
    })
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

/// Fills the disk's addressable bytes with `p`, then writes its fill marker: a
/// [`Fill`] of one disk, its writers run here, then [`seal`]ed.
pub fn fill_disk(
    d: &DiskLayout,
    p: FillPattern,
    direct: bool,
    io: FillIo,
    stop: &AtomicBool,
    progress_bytes: &AtomicU64,
) -> Result<FillOutcome, TargetError> {
    let fill = Fill::new(std::slice::from_ref(d), p, direct, io)?;
    fill_here(fill, stop, progress_bytes, &|_, _, _| {})
}

/// Pass `pass` (0, 1, …) of preconditioning of one disk, sealed: see
/// [`Fill::precondition`].
pub fn precondition_pass(
    d: &DiskLayout,
    pass: u32,
    direct: bool,
    io: FillIo,
    stop: &AtomicBool,
    progress_bytes: &AtomicU64,
) -> Result<FillOutcome, TargetError> {
    let fill = Fill::precondition(std::slice::from_ref(d), pass, direct, io)?;
    fill_here(fill, stop, progress_bytes, &|_, _, _| {})
}

/// Run `fill`'s writers (with `finish`) on scoped threads, add what they wrote to
/// `progress_bytes`, and seal what was written in full.
fn fill_here(
    fill: Fill,
    stop: &AtomicBool,
    progress_bytes: &AtomicU64,
    finish: &(dyn Fn(usize, &mut [u8], u64) + Sync),
) -> Result<FillOutcome, TargetError> {
    let results = on_scoped(fill.writers(), |_| fill.write(stop, finish));
    progress_bytes.fetch_add(fill.progress(), Ordering::Relaxed);
    let (done, complete) = fill.into_unsealed();
    seal(done)?;
    results.into_iter().collect::<Result<(), _>>()?;
    Ok(if complete {
        FillOutcome::Done
    } else {
        FillOutcome::Interrupted
    })
}

/// `work(i)` for each `i` in `0..n`, each on a scoped thread of its own; the results in
/// order. A thread's panic is re-raised here.
fn on_scoped<T: Send>(n: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = (0..n).map(|i| s.spawn(move || work(i))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// A disk whose every byte is written but not yet durable, and has no marker.
#[derive(Debug)]
pub struct Unsealed {
    file: File,
    path: std::path::PathBuf,
    marker: Vec<u8>,
    marker_off: u64,
}

/// Make the data of every disk in `fills` durable, then write its marker: each disk
/// on a thread of its own, so that the filesystem and the device serve the syncs
/// together and each marker follows its own disk's sync. The first error (in the
/// order given) is returned once every disk is done; a disk whose sync failed gets no
/// marker.
pub fn seal(fills: Vec<Unsealed>) -> Result<(), TargetError> {
    let sealed = on_scoped(fills.len(), |i| fills[i].seal());
    sealed.into_iter().collect()
}

impl Unsealed {
    fn seal(&self) -> Result<(), TargetError> {
        sync_path(&self.path, &self.file)?;
        // The marker is not synced: it is written only after the data is durable, so
        // whenever it reaches the device the data is there; if a crash loses it, the
        // next run fills again. Only the order matters.
        let mut block = aligned(MARKER_LEN as usize, &self.path)?;
        block.copy_from_slice(&self.marker);
        self.file
            .write_all_at(&block, self.marker_off)
            .map_err(|e| TargetError::io("cannot write the fill marker of", &self.path, e))
    }
}

/// One disk of a [`Fill`].
struct FillDisk {
    d: DiskLayout,
    file: File,
    marker_off: u64,
    /// Bytes of this disk on the device so far.
    written: AtomicU64,
}

/// Some of the disks of a fill that share a device (regions of one block device, or
/// files of one filesystem), written one after the other. A device's disks are dealt
/// to streams (`FillIo::streams_per_device`): through io_uring one per disk, each ring
/// 32 deep; by threads four, so that the 32 writes in flight form a few sequential
/// streams, not one per disk at a write or two each (bench/README.md).
struct Stream {
    /// The disks (indices into `Fill::disks`), each with the index in the stream of
    /// its first write.
    starts: Vec<(usize, u64)>,
    /// Writes in the stream.
    len: u64,
    /// The stream's next write, when one ring writes it.
    next: AtomicU64,
}

/// Disks being filled together, shared by the writers that fill them.
pub struct Fill {
    disks: Vec<FillDisk>,
    p: FillPattern,
    io: FillIo,
    write_len: usize,
    /// The data stream: 0 for a fill, the pass for preconditioning.
    pass: u32,
    /// One stream per device: its disks one after the other.
    streams: Vec<Stream>,
    /// The next write to take, round the streams (see `take`).
    next: AtomicU64,
    /// Writes of the longest stream.
    rows: u64,
    /// Streams taken by a ring so far.
    rings: AtomicUsize,
    /// Set by a writer that failed: the others stop taking writes.
    halt: AtomicBool,
}

impl Fill {
    /// A fill of `disks` (callers give at most `FILL_DISKS_AT_ONCE`: every writer's
    /// ring holds a descriptor of each) with `p`, written as `io` says,
    /// through O_DIRECT when `direct`. Opens every disk and clears (durably) any marker
    /// of another fill before a byte of data is written. Each region's size and offset
    /// must be multiples of 4096 (the planner guarantees it), so every write, the
    /// marker's included, is aligned for O_DIRECT on 512-byte and 4Kn devices alike.
    pub fn new(
        disks: &[DiskLayout],
        p: FillPattern,
        direct: bool,
        io: FillIo,
    ) -> Result<Fill, TargetError> {
        Fill::open(disks, p, direct, io, io.write_len(), 0)
    }

    /// Pass `pass` (0, 1, …) of preconditioning: every addressable byte written once
    /// with `PRECONDITION_BS` sequential writes of pseudo-random data, a stream of its
    /// own per pass (the second pass overwrites the first with other data); sealed, it
    /// leaves the marker of a random fill, so later runs that prepare with random data
    /// reuse it.
    pub fn precondition(
        disks: &[DiskLayout],
        pass: u32,
        direct: bool,
        io: FillIo,
    ) -> Result<Fill, TargetError> {
        Fill::open(
            disks,
            FillPattern::Random,
            direct,
            io,
            PRECONDITION_BS,
            pass,
        )
    }

    fn open(
        disks: &[DiskLayout],
        p: FillPattern,
        direct: bool,
        io: FillIo,
        write_len: usize,
        pass: u32,
    ) -> Result<Fill, TargetError> {
        let mut opened = Vec::with_capacity(disks.len());
        let mut clear = Vec::with_capacity(disks.len());
        // Per device: how many of its disks so far, and its streams.
        let mut devices: Vec<((u64, u64), usize, Vec<usize>)> = Vec::new();
        let mut streams: Vec<Stream> = Vec::new();
        for (k, d) in disks.iter().enumerate() {
            let (f, cleared) = open_for_fill(d, direct)?;
            clear.push(cleared);
            let meta = f
                .file
                .metadata()
                .map_err(|e| TargetError::io("cannot open", &d.path, e))?;
            // A block device is its own device; a file lives on its filesystem's.
            let device = if d.is_device {
                (1, meta.rdev())
            } else {
                (0, meta.dev())
            };
            let at = match devices.iter().position(|x| x.0 == device) {
                Some(i) => i,
                None => {
                    devices.push((device, 0, Vec::new()));
                    devices.len() - 1
                }
            };
            let (_, seen, mine) = &mut devices[at];
            // The device's disks are dealt to its streams in turn.
            let slot = *seen % io.streams_per_device();
            *seen += 1;
            if slot == mine.len() {
                mine.push(streams.len());
                streams.push(Stream {
                    starts: Vec::new(),
                    len: 0,
                    next: AtomicU64::new(0),
                });
            }
            let s = mine[slot];
            let stream = &mut streams[s];
            stream.starts.push((k, stream.len));
            stream.len += d.size.div_ceil(write_len as u64);
            opened.push(f);
        }
        // The cleared markers are durable before any data is written.
        let cleared: Vec<(&Path, &File)> = opened
            .iter()
            .zip(&clear)
            .filter(|(_, c)| **c)
            .map(|(f, _)| (f.d.path.as_path(), &f.file))
            .collect();
        sync_each(&cleared).into_iter().collect::<Result<(), _>>()?;
        let rows = streams.iter().map(|s| s.len).max().unwrap_or(0);
        Ok(Fill {
            disks: opened,
            p,
            io,
            write_len,
            pass,
            streams,
            next: AtomicU64::new(0),
            rows,
            rings: AtomicUsize::new(0),
            halt: AtomicBool::new(false),
        })
    }

    /// How many writers to run, each on its own thread calling [`Fill::write`].
    pub fn writers(&self) -> usize {
        match self.io {
            FillIo::Threads(n) => n.max(1),
            FillIo::Rings { .. } => self.streams.len(),
        }
    }

    /// Bytes written so far, every disk together.
    pub fn progress(&self) -> u64 {
        (0..self.disks.len()).map(|k| self.written(k)).sum()
    }

    /// Bytes of disk `k` (in the order given) written so far.
    pub fn written(&self, k: usize) -> u64 {
        self.disks[k].written.load(Ordering::Relaxed)
    }

    /// One writer: takes writes until none is left, `stop` is set or another writer
    /// failed. `finish(k, data, at)` is called on every write of disk `k` after its data
    /// is generated and before it is written, with its offset in the disk (a verified
    /// fill stamps its headers there; every write is a whole number of 4 KiB units);
    /// writers call it at once, each on its own write. On an error the other writers
    /// stop too, and it is returned.
    pub fn write(
        &self,
        stop: &AtomicBool,
        finish: &(dyn Fn(usize, &mut [u8], u64) + Sync),
    ) -> Result<(), TargetError> {
        let r = match self.io {
            FillIo::Threads(_) => self.by_thread(stop, finish),
            FillIo::Rings { depth, .. } => self.by_ring(depth, stop, finish),
        };
        if r.is_err() {
            self.halt.store(true, Ordering::Relaxed);
        }
        r
    }

    /// The disks written in full, to [`seal`], and whether that is all of them.
    pub fn into_unsealed(self) -> (Vec<Unsealed>, bool) {
        let p = self.p;
        let all = self.disks.len();
        let done: Vec<Unsealed> = self
            .disks
            .into_iter()
            .filter(|f| f.written.load(Ordering::Relaxed) >= f.d.size)
            .map(|f| Unsealed {
                marker: encode_marker(f.d.size, p, f.d.region_offset),
                marker_off: f.marker_off,
                path: f.d.path,
                file: f.file,
            })
            .collect();
        let complete = done.len() == all;
        (done, complete)
    }

    /// The next write to make: its disk, index in the disk, offset and length; None
    /// when every write is taken, `stop` is set or a writer failed. Writes go round the
    /// streams (write 0 of every stream, then write 1, ...), so that devices are
    /// written at once and end together.
    fn take(&self, stop: &AtomicBool) -> Option<(usize, u64, u64, usize)> {
        let n = self.streams.len() as u64;
        loop {
            if stop.load(Ordering::Relaxed) || self.halt.load(Ordering::Relaxed) {
                return None;
            }
            let g = self.next.fetch_add(1, Ordering::Relaxed);
            if n == 0 || g >= n.saturating_mul(self.rows) {
                return None;
            }
            // A shorter stream ends before the longest one: its turn is skipped.
            if let Some(write) = self.locate(&self.streams[(g % n) as usize], g / n) {
                return Some(write);
            }
        }
    }

    /// The next write of stream `s` (for the ring that writes it, in order).
    fn take_from(&self, s: &Stream, stop: &AtomicBool) -> Option<(usize, u64, u64, usize)> {
        if stop.load(Ordering::Relaxed) || self.halt.load(Ordering::Relaxed) {
            return None;
        }
        self.locate(s, s.next.fetch_add(1, Ordering::Relaxed))
    }

    /// For a ring whose stream is written: the next write of the stream with the most
    /// left, so that the streams end together rather than one ring finishing alone
    /// (streams of equal length are not served equally fast). None when every stream
    /// is written.
    fn steal(&self, stop: &AtomicBool) -> Option<(usize, u64, u64, usize)> {
        loop {
            let left = |s: &Stream| s.len.saturating_sub(s.next.load(Ordering::Relaxed));
            let s = self.streams.iter().max_by_key(|s| left(s))?;
            if left(s) == 0 {
                return None;
            }
            // Taken by its own ring meanwhile: look again.
            if let Some(w) = self.take_from(s, stop) {
                return Some(w);
            }
            if stop.load(Ordering::Relaxed) || self.halt.load(Ordering::Relaxed) {
                return None;
            }
        }
    }

    /// Write `w` of stream `s`: its disk, index in the disk, offset and length; None
    /// past the stream's end.
    fn locate(&self, s: &Stream, w: u64) -> Option<(usize, u64, u64, usize)> {
        if w >= s.len {
            return None;
        }
        let (k, first) = s.starts[s.starts.partition_point(|&(_, f)| f <= w) - 1];
        let i = w - first;
        let size = self.disks[k].d.size;
        let at = i * self.write_len as u64;
        Some((k, i, at, (size - at).min(self.write_len as u64) as usize))
    }

    /// Write `i` (at `at`) of disk `k`'s data into `buf`: the disk's stream at the
    /// write's place, then `finish`.
    fn generate(
        &self,
        (k, i, at): (usize, u64, u64),
        buf: &mut [u8],
        finish: &(dyn Fn(usize, &mut [u8], u64) + Sync),
    ) {
        let d = &self.disks[k].d;
        // One stream per disk, salted apart from every lane and, when preconditioning,
        // from the other passes.
        let seed = 0x10f1_ee70_f111_5eed
            ^ (u64::from(d.worker) << 32 | u64::from(d.disk))
            ^ u64::from(self.pass).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut data = Pattern::new(self.p.spec(), seed);
        data.seek(i * data.units_in(self.write_len));
        data.fill(buf);
        finish(k, buf, at);
    }

    /// A writer with one write in flight: generate, write, repeat.
    fn by_thread(
        &self,
        stop: &AtomicBool,
        finish: &(dyn Fn(usize, &mut [u8], u64) + Sync),
    ) -> Result<(), TargetError> {
        let Some(first) = self.disks.first() else {
            return Ok(());
        };
        let mut buf = aligned(self.write_len, &first.d.path)?;
        while let Some((k, i, at, len)) = self.take(stop) {
            let f = &self.disks[k];
            let chunk = &mut buf[..len];
            self.generate((k, i, at), chunk, finish);
            write_at(&f.d, &f.file, chunk, f.d.region_offset + at, "cannot write")?;
            f.written.fetch_add(len as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// A writer with its own io_uring over every disk, `depth` writes in flight: while
    /// the device writes those, it generates the next writes' data in the free
    /// buffers. What is in flight completes before it returns, on a stop or an error
    /// too (the ring waits for it when dropped).
    fn by_ring(
        &self,
        depth: u32,
        stop: &AtomicBool,
        finish: &(dyn Fn(usize, &mut [u8], u64) + Sync),
    ) -> Result<(), TargetError> {
        let Some(stream) = self.streams.get(self.rings.fetch_add(1, Ordering::Relaxed)) else {
            return Ok(());
        };
        let first = &self.disks[stream.starts[0].0];
        let ring_err = |e: crate::EngineError| {
            TargetError::io(
                "cannot write through io_uring to",
                &first.d.path,
                io::Error::other(e.to_string()),
            )
        };
        // The ring's files: every disk of the fill (`IoReq::file` is the disk's index),
        // so that it can help with other streams once its own is written.
        let mut files = Vec::with_capacity(self.disks.len());
        for f in &self.disks {
            files.push(OpenDisk {
                file: f
                    .file
                    .try_clone()
                    .map_err(|e| TargetError::io("cannot open", &f.d.path, e))?,
                region_offset: f.d.region_offset,
                size: f.d.size,
            });
        }
        let depth = depth.max(1);
        let params = EngineParams {
            slots: depth,
            max_bs: self.write_len as u32,
        };
        let opts = UringOptions {
            random_buffers: false,
            ..UringOptions::default()
        };
        let mut ring = UringEngine::with_options(files, params, 0, opts).map_err(ring_err)?;
        // Per slot: the disk, offset and length of the write it holds.
        let mut writes = vec![(0usize, 0u64, 0usize); depth as usize];
        let mut free: Vec<u32> = (0..depth).rev().collect();
        let mut done = Vec::with_capacity(depth as usize);
        loop {
            // Every free buffer takes the next write, while there is one.
            while let Some(&slot) = free.last() {
                let Some((k, i, at, len)) =
                    self.take_from(stream, stop).or_else(|| self.steal(stop))
                else {
                    break;
                };
                let buf = &mut ring.buffer_mut(slot)[..len];
                self.generate((k, i, at), buf, finish);
                ring.queue(IoReq {
                    slot,
                    file: k as u32,
                    op: OpKind::Write,
                    offset: self.disks[k].d.region_offset + at,
                    len: len as u32,
                })
                .map_err(ring_err)?;
                writes[slot as usize] = (k, at, len);
                free.pop();
            }
            if free.len() == depth as usize {
                return Ok(());
            }
            ring.submit_and_reap(1, None, &mut done).map_err(ring_err)?;
            for c in done.drain(..) {
                let (k, at, len) = writes[c.slot as usize];
                let f = &self.disks[k];
                if c.result < 0 {
                    let e = io::Error::from_raw_os_error(-c.result);
                    return Err(TargetError::io("cannot write", &f.d.path, e));
                }
                // A short write (the device ran out of room, say): the rest is written
                // here, and fails here if it cannot be.
                let n = (c.result as usize).min(len);
                if n < len {
                    let rest = &ring.buffer_mut(c.slot)[n..len];
                    let off = f.d.region_offset + at + n as u64;
                    write_at(&f.d, &f.file, rest, off, "cannot write")?;
                }
                f.written.fetch_add(len as u64, Ordering::Relaxed);
                free.push(c.slot);
            }
        }
    }
}

/// Open disk `d` to be filled: check its region, and clear a marker of another fill
/// (another size or pattern); true when one was cleared, which the caller syncs before
/// any data is written. Where there is none (a new file), there is nothing to clear and
/// no sync to wait for.
fn open_for_fill(d: &DiskLayout, direct: bool) -> Result<(FillDisk, bool), TargetError> {
    // A power-of-two mask, not `is_multiple_of` (Rust 1.87; the MSRV is 1.80).
    let mask = ALIGN as u64 - 1;
    if d.size & mask != 0 || d.region_offset & mask != 0 {
        return Err(TargetError::BadLayout {
            path: d.path.clone(),
            why: "region offset and size must be multiples of 4096 bytes",
        });
    }
    let marker_off = marker_offset(d)?;
    let file = open_disk(d, direct, true)?.file;
    let mut block = aligned(MARKER_LEN as usize, &d.path)?;
    let found = match file.read_exact_at(&mut block, marker_off) {
        Ok(()) => block.starts_with(MAGIC),
        // A file that ends before its marker has none.
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => false,
        // Unreadable: cleared as if there were one.
        Err(_) => true,
    };
    if found {
        block.fill(0);
        write_at(
            d,
            &file,
            &block,
            marker_off,
            "cannot clear the fill marker of",
        )?;
    }
    let disk = FillDisk {
        d: d.clone(),
        file,
        marker_off,
        written: AtomicU64::new(0),
    };
    Ok((disk, found))
}

/// Sync every file of `files` at once (the filesystem and the device serve them
/// together): each one's result, in order.
fn sync_each(files: &[(&Path, &File)]) -> Vec<Result<(), TargetError>> {
    on_scoped(files.len(), |i| sync_path(files[i].0, files[i].1))
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

fn sync_path(path: &Path, f: &File) -> Result<(), TargetError> {
    f.sync_data()
        .map_err(|e| TargetError::io("cannot sync", path, e))
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
        let mut by_way = Vec::new();
        for io in [FillIo::Threads(3), FillIo::Rings { depth: 3 }] {
            let d = file_disk(dir.path().join(format!("{io:?}")), 33 * 4096, 0xab);
            let stop = AtomicBool::new(false);
            let mut passes = Vec::new();
            for pass in 0..2 {
                let written = AtomicU64::new(0);
                let out = precondition_pass(&d, pass, false, io, &stop, &written).unwrap();
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
            let out = precondition_pass(&d, 0, false, io, &stop, &AtomicU64::new(0)).unwrap();
            assert_eq!(out, FillOutcome::Interrupted);
            assert!(!fill_marker_valid(&d, FillPattern::Random).unwrap());
            by_way.push(passes);
        }
        assert!(by_way[0] == by_way[1], "threads and rings wrote other data");
    }

    #[test]
    fn a_fill_through_rings_gives_each_disk_a_stream_and_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let len = FILL_RING_BS as u64;
        let disks: Vec<DiskLayout> = (0..FILL_STREAMS_PER_DEVICE + 2)
            .map(|k| file_disk(dir.path().join(format!("d{k}")), len, 0))
            .collect();
        let rings = Fill::new(&disks, FillPattern::Zero, false, FillIo::Rings { depth: 2 });
        let rings = rings.unwrap();
        assert_eq!(rings.streams.len(), disks.len());
        assert_eq!(rings.writers(), disks.len());
        // By threads the same disks are dealt to a few streams.
        let threads = Fill::new(&disks, FillPattern::Zero, false, FillIo::Threads(3)).unwrap();
        assert_eq!(threads.streams.len(), FILL_STREAMS_PER_DEVICE);
        assert_eq!(threads.writers(), 3);
    }

    #[test]
    fn writes_go_round_the_streams_and_through_each_streams_disks_in_turn() {
        // Six disks on one filesystem (dealt to its four streams: the fifth and sixth
        // follow the first and second) and one on another (tmpfs), its own stream.
        let shm = Path::new("/dev/shm");
        let dir = tempfile::tempdir().unwrap();
        let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
        if !crate::need::environment(
            "writes_go_round_the_streams_and_through_each_streams_disks_in_turn",
            "/dev/shm is not a filesystem of its own here",
            dev(shm).is_some() && dev(shm) != dev(dir.path()),
        ) {
            return;
        }
        let other = tempfile::tempdir_in(shm).unwrap();
        let len = PRECONDITION_BS as u64;
        let mut disks: Vec<DiskLayout> = (0..6)
            .map(|k| {
                // The first disk takes two writes, the last of them short.
                let size = if k == 0 { 2 * len - 4096 } else { len };
                file_disk(dir.path().join(format!("d{k}")), size, 0)
            })
            .collect();
        disks.push(file_disk(other.path().join("d6"), len, 0));
        let fill = Fill::precondition(&disks, 0, false, FillIo::Threads(1)).unwrap();
        assert_eq!(fill.streams.len(), FILL_STREAMS_PER_DEVICE + 1);
        let stop = AtomicBool::new(false);
        let order: Vec<(usize, u64, usize)> = std::iter::from_fn(|| fill.take(&stop))
            .map(|(k, _, at, n)| (k, at, n))
            .collect();
        let (l, short) = (len as usize, len as usize - 4096);
        assert_eq!(
            order,
            [
                // Round 1: the first write of every stream.
                (0, 0, l),
                (1, 0, l),
                (2, 0, l),
                (3, 0, l),
                (6, 0, l),
                // Round 2: the two streams with more to write.
                (0, len, short),
                (5, 0, l),
                // Round 3: the first stream's second disk.
                (4, 0, l),
            ]
        );
        assert_eq!(fill.take(&stop), None, "nothing after the end");
    }

    /// Run `fill`'s writers with `finish`, then seal; whether every disk was written.
    fn run(fill: Fill, finish: &(dyn Fn(usize, &mut [u8], u64) + Sync)) -> bool {
        let (stop, progress) = (AtomicBool::new(false), AtomicU64::new(0));
        fill_here(fill, &stop, &progress, finish).unwrap() == FillOutcome::Done
    }

    #[test]
    fn every_way_of_writing_a_fill_writes_the_same_bytes() {
        // Three disks of three sizes, none a multiple of 128 KiB or of 1 MiB (the last
        // write of each is short; the smallest ends long before the others), filled
        // together, by one thread, by several, and through rings; random data and a
        // ratio pattern (its dedupe ids follow the stream's unit count), each with a
        // verify-like stamp naming the disk and the offset.
        let dir = tempfile::tempdir().unwrap();
        let sizes = [
            (CHUNK * 5 / 2 + 3 * 4096) as u64,
            5 * 4096,
            (CHUNK + 8192) as u64,
        ];
        let ratios = PatternSpec {
            zero: false,
            dedupe_ratio: 3.0,
            dedupe_unit: 4096,
            compress_ratio: 2.0,
        };
        // Every 4 KiB unit, as a verified fill's stamp: the same bytes whatever the
        // writes' length.
        let stamp = |k: usize, chunk: &mut [u8], at: u64| {
            for (u, unit) in chunk.chunks_mut(4096).enumerate() {
                unit[..8].copy_from_slice(&(at + u as u64 * 4096).to_le_bytes());
                unit[8] = k as u8;
            }
        };
        let ways = [
            FillIo::Threads(1),
            FillIo::Threads(7),
            FillIo::Rings { depth: 1 },
            FillIo::Rings { depth: 4 },
        ];
        for p in [FillPattern::Random, FillPattern::Pattern(ratios)] {
            let mut images = Vec::new();
            for (w, io) in ways.iter().enumerate() {
                let disks: Vec<DiskLayout> = sizes
                    .iter()
                    .enumerate()
                    .map(|(k, &size)| DiskLayout {
                        worker: 1,
                        disk: k as u32,
                        ..file_disk(dir.path().join(format!("w{w}d{k}")), size, 0xab)
                    })
                    .collect();
                let fill = Fill::new(&disks, p, false, *io).unwrap();
                // Three disks of one filesystem: three of its streams, a ring each.
                let writers = match io {
                    FillIo::Threads(n) => *n,
                    FillIo::Rings { .. } => 3,
                };
                assert_eq!(fill.writers(), writers);
                assert!(run(fill, &stamp), "{io:?}");
                let mut image = Vec::new();
                for (k, d) in disks.iter().enumerate() {
                    assert!(fill_marker_valid(d, p).unwrap(), "{io:?} disk {k}");
                    let bytes = std::fs::read(&d.path).unwrap();
                    // The stamps name this disk and each unit's place: `finish` was told
                    // which disk and where.
                    for (u, unit) in bytes[..d.size as usize].chunks(4096).enumerate() {
                        assert_eq!(unit[..8], (u as u64 * 4096).to_le_bytes());
                        assert_eq!(unit[8], k as u8);
                    }
                    assert!(bytes[..d.size as usize]
                        .chunks(4096)
                        .all(|u| u.iter().any(|&x| x != 0xab)));
                    image.push(bytes);
                }
                images.push(image);
            }
            for (io, image) in ways.iter().zip(&images) {
                assert!(*image == images[0], "{p:?}: {io:?} wrote other bytes");
            }
            // The disks are not the same stream.
            assert_ne!(images[0][0][..4096], images[0][2][..4096]);
        }
    }

    #[test]
    fn a_buffer_no_address_space_holds_is_an_error_naming_the_disk() {
        let path = Path::new("/somewhere/disk-0");
        let e = aligned(1 << 62, path).map(|_| ()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("cannot allocate a buffer to fill /somewhere/disk-0"),
            "{msg}"
        );
        let b = aligned(MARKER_LEN as usize, path).unwrap();
        assert_eq!(b.len(), MARKER_LEN as usize);
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
    }

    #[test]
    fn a_marker_that_cannot_be_written_is_named_and_the_other_disks_are_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let a = file_disk(dir.path().join("a"), 8 * 4096, 1);
        let b = file_disk(dir.path().join("b"), 8 * 4096, 2);
        let unsealed = |d: &DiskLayout, write: bool| Unsealed {
            file: OpenOptions::new()
                .read(true)
                .write(write)
                .open(&d.path)
                .unwrap(),
            path: d.path.clone(),
            marker: encode_marker(d.size, FillPattern::Zero, 0),
            marker_off: marker_offset(d).unwrap(),
        };
        // Opened read-only: its sync succeeds and its marker write fails.
        let err = seal(vec![unsealed(&a, false), unsealed(&b, true)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot write the fill marker of")
                && err.contains(&*a.path.to_string_lossy()),
            "{err}"
        );
        assert!(!fill_marker_valid(&a, FillPattern::Zero).unwrap());
        assert!(
            fill_marker_valid(&b, FillPattern::Zero).unwrap(),
            "b was not sealed"
        );
    }

    #[test]
    fn a_stopped_ring_fill_finishes_what_is_in_flight_and_seals_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let d = file_disk(dir.path().join("d"), 8 << 20, 0);
        let fill = Fill::new(
            std::slice::from_ref(&d),
            FillPattern::Random,
            false,
            FillIo::Threads(1),
        )
        .unwrap();
        assert!(run(fill, &|_, _, _| {}));
        assert!(fill_marker_valid(&d, FillPattern::Random).unwrap());
        // One ring of depth 4: the stop comes with the fourth write's data, which is
        // already taken; the four in flight complete, nothing more is written.
        let io = FillIo::Rings { depth: 4 };
        let stop = AtomicBool::new(false);
        let fill = Fill::new(std::slice::from_ref(&d), FillPattern::Zero, false, io).unwrap();
        assert!(
            !fill_marker_valid(&d, FillPattern::Random).unwrap(),
            "the old fill's marker is cleared before any data"
        );
        let at_stop = |_: usize, _: &mut [u8], at: u64| {
            if at >= 3 * FILL_RING_BS as u64 {
                stop.store(true, Ordering::SeqCst);
            }
        };
        fill.write(&stop, &at_stop).unwrap();
        assert_eq!(fill.progress(), 4 * FILL_RING_BS as u64);
        let (done, complete) = fill.into_unsealed();
        assert!(done.is_empty() && !complete);
        let bytes = std::fs::read(&d.path).unwrap();
        let zeros = 4 * FILL_RING_BS;
        assert!(bytes[..zeros].iter().all(|&b| b == 0));
        assert!(bytes[zeros..zeros + 4096].iter().any(|&b| b != 0));
        assert!(!fill_marker_valid(&d, FillPattern::Zero).unwrap());
    }

    #[test]
    fn another_fills_marker_is_cleared_before_any_data_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let d = file_disk(dir.path().join("d"), 8 * 4096, 0);
        let (go, halt) = (AtomicBool::new(false), AtomicBool::new(true));
        let io = FillIo::Threads(2);
        let out = fill_disk(&d, FillPattern::Random, false, io, &go, &AtomicU64::new(0)).unwrap();
        assert_eq!(out, FillOutcome::Done);
        assert!(fill_marker_valid(&d, FillPattern::Random).unwrap());
        // A fill of zeros stopped before its first write: the random fill's marker is
        // gone all the same, so the disk is not taken for filled with random data.
        let out = fill_disk(&d, FillPattern::Zero, false, io, &halt, &AtomicU64::new(0)).unwrap();
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
