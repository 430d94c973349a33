//! End-to-end data verification: the header every verified unit carries, the checks a
//! read makes, the in-memory table of what was written, and the per-disk journal.
//!
//! A *verify unit* is 4 KiB ([`UNIT`]). With `--verify` every written unit starts with
//! a 48-byte header ([`HEADER_LEN`]): magic, disk id, the unit's offset in its disk,
//! the write's sequence number, a timestamp and an XXH3-64 checksum of the whole unit.
//! Whatever data pattern fills the unit, the header is written over its first bytes
//! afterwards. A read checks, per unit: the magic, the checksum, the disk id (data of
//! another disk or of another journal generation), the offset (a misdirected write) and
//! the sequence against the unit's *floor* — the sequence of the last write known to
//! have completed (stale data, lost writes).
//!
//! [`DiskTable`] is the floor table of one disk, shared lock-free by every I/O thread
//! driving the disk (atomics per unit). [`Journal`] is its on-disk copy, rewritten
//! atomically (temporary file, fsync, rename) once per interval and at the end, so
//! `iofleet verify` can check a disk after the run, a crash or a kill. This module knows
//! nothing about lanes, profiles or reporting; the fleet crate calls it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use twox_hash::XxHash3_64;

use crate::target::DiskLayout;

/// Bytes per verify unit: every verified block size and offset is a multiple of it.
pub const UNIT: u64 = 4096;
/// Bytes of the header at the start of every unit.
pub const HEADER_LEN: usize = 48;
/// First 8 bytes of every verified unit.
pub const MAGIC: [u8; 8] = *b"IOFLVFY2";
/// The sequence jump between the last journalled sequence and the first one of the next
/// run on the disk: larger than the writes one disk completes in one interval, so a
/// killed run's unjournalled writes all have lower sequences than the next run's.
pub const SEQ_RESERVE: u64 = 1 << 32;

// Header layout (little-endian): magic [0..8], disk id u64 [8..16], offset in the disk
// u64 [16..24], sequence u64 [24..32], time ns since the UNIX epoch u64 [32..40],
// checksum u64 [40..48] of every other byte of the unit (see `sum_of`).
const SUM_AT: usize = 40;

/// The disk id stamped in every unit: the journal's identity (a random number drawn when
/// the journal is created) and the disk's place (worker, disk) in the fleet.
pub fn disk_id(identity: u32, worker: u32, disk: u32) -> u64 {
    (u64::from(identity) << 32) | (u64::from(worker & 0xffff) << 16) | u64::from(disk & 0xffff)
}

/// The unit's checksum: XXH3-64 of the data after the header, then XXH3-64 of the first
/// 40 header bytes seeded with it, so every byte but the checksum's own is covered. XXH3
/// (AVX2 when the CPU has it, chosen at run time) takes about half the time of CRC-32C
/// per 4 KiB here, and the checksum is half of what `--verify` costs (bench/README.md).
#[inline]
fn sum_of(unit: &[u8]) -> u64 {
    let data = XxHash3_64::oneshot(&unit[HEADER_LEN..]);
    XxHash3_64::oneshot_with_seed(data, &unit[..SUM_AT])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Write the header of every unit of `buf` (a whole number of units starting at
/// `offset` in the disk), then each unit's checksum. Called after the data pattern is
/// filled.
#[inline]
pub fn stamp_units(buf: &mut [u8], disk_id: u64, offset: u64, seq: u64, time_ns: u64) {
    for (i, unit) in buf.chunks_exact_mut(UNIT as usize).enumerate() {
        unit[0..8].copy_from_slice(&MAGIC);
        unit[8..16].copy_from_slice(&disk_id.to_le_bytes());
        unit[16..24].copy_from_slice(&(offset + i as u64 * UNIT).to_le_bytes());
        unit[24..32].copy_from_slice(&seq.to_le_bytes());
        unit[32..40].copy_from_slice(&time_ns.to_le_bytes());
        let sum = sum_of(unit);
        unit[SUM_AT..SUM_AT + 8].copy_from_slice(&sum.to_le_bytes());
    }
}

/// What is wrong with one unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// No header: the magic is not there (never written, overwritten, zeroed).
    NoHeader { found: [u8; 8] },
    /// The checksum does not match the unit's bytes (bits changed after the write).
    Checksum { expected: u64, found: u64 },
    /// A valid unit of another disk, or of another journal generation of this disk.
    ForeignDisk { expected: u64, found: u64 },
    /// A valid unit written for another offset: a misdirected write.
    Misdirected { found: u64 },
    /// A valid unit older than the last write known to have completed: stale data, a
    /// lost write.
    Stale { floor: u64, found: u64 },
    /// The unit lies beyond the end of the file or device (a truncated disk).
    Missing { len: u64 },
}

impl Fault {
    /// A short name: no-header, checksum, foreign-disk, misdirected, stale, missing.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::NoHeader { .. } => "no-header",
            Fault::Checksum { .. } => "checksum",
            Fault::ForeignDisk { .. } => "foreign-disk",
            Fault::Misdirected { .. } => "misdirected",
            Fault::Stale { .. } => "stale",
            Fault::Missing { .. } => "missing",
        }
    }
    /// What the unit should have held, for the report (`offset` is the unit's own).
    pub fn expected(&self, offset: u64) -> String {
        match self {
            Fault::NoHeader { .. } => format!("magic {}", String::from_utf8_lossy(&MAGIC)),
            Fault::Checksum { expected, .. } => format!("xxh3 {expected:#018x}"),
            Fault::ForeignDisk { expected, .. } => format!("disk id {expected:#018x}"),
            Fault::Misdirected { .. } => format!("offset {offset}"),
            Fault::Stale { floor, .. } => format!("sequence >= {floor}"),
            Fault::Missing { .. } => format!("{UNIT} bytes at offset {offset}"),
        }
    }
    /// What the unit held.
    pub fn found(&self) -> String {
        match self {
            Fault::NoHeader { found } => format!("bytes {}", hex(found)),
            Fault::Checksum { found, .. } => format!("xxh3 {found:#018x}"),
            Fault::ForeignDisk { found, .. } => format!("disk id {found:#018x}"),
            Fault::Misdirected { found } => format!("offset {found}"),
            Fault::Stale { found, .. } => format!("sequence {found}"),
            Fault::Missing { len } => format!("end of disk at {len} bytes"),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Check one unit read at `offset` of the disk `disk_id` against `floor`; the unit's
/// sequence when it is sound.
#[inline]
pub fn check_unit(unit: &[u8], disk_id: u64, offset: u64, floor: u64) -> Result<u64, Fault> {
    if unit[0..8] != MAGIC {
        return Err(Fault::NoHeader {
            found: unit[0..8].try_into().expect("8 bytes"),
        });
    }
    let stored = u64_at(unit, SUM_AT);
    let sum = sum_of(unit);
    if stored != sum {
        return Err(Fault::Checksum {
            expected: stored,
            found: sum,
        });
    }
    let id = u64_at(unit, 8);
    if id != disk_id {
        return Err(Fault::ForeignDisk {
            expected: disk_id,
            found: id,
        });
    }
    let at = u64_at(unit, 16);
    if at != offset {
        return Err(Fault::Misdirected { found: at });
    }
    let seq = u64_at(unit, 24);
    if seq < floor {
        return Err(Fault::Stale { floor, found: seq });
    }
    Ok(seq)
}

/// Writes in flight per unit (bits 17..32), "written by overlapping writes since it was
/// last quiet" (bit 16) and a generation bumped by every write issued (bits 0..16).
const COUNT_SHIFT: u32 = 17;
const OVERLAP: u32 = 1 << 16;
const GEN_MASK: u32 = 0xffff;

/// The floor table of one disk: per unit, the sequence of the last write known to have
/// completed, and the unit's write state. Shared by the I/O threads driving the disk;
/// every operation is a few atomic instructions per unit, no lock.
///
/// Rule: a write raises the floor of its units to its sequence when it completes with
/// no other write to the unit in flight during its life. Units written by overlapping
/// writes keep their previous floor (the storage may keep either write's data), until a
/// later write completes alone.
pub struct DiskTable {
    pub disk_id: u64,
    /// Where the disk's region starts in its file or device (offsets here are relative).
    pub region_offset: u64,
    /// The disk file or device, for reports.
    pub path: String,
    units: Cells,
    next_seq: AtomicU64,
}

/// One unit's floor and in-flight state, side by side: a random I/O touches one cache
/// line of the table, not two (the table of a 1 GiB disk is megabytes, so each touch
/// is usually a cache miss, and on the memory-backed loop device at qd 32 a second miss
/// per read cost about as much as the checksum).
#[repr(align(16))]
struct UnitCell {
    floor: AtomicU64,
    state: AtomicU32,
}

/// A table's cells in anonymous memory of their own, which the kernel is asked to back
/// with huge pages (`MADV_HUGEPAGE`; Linux otherwise often gives them only on request).
/// With 4 KiB pages each random touch of a table of megabytes is also a TLB miss, which
/// in a virtual machine walks two page tables: on the memory-backed loop device at qd 32
/// that walk cost a verified read about as much as its checksum. Without huge pages
/// (refused, or THP disabled) the table works the same, only slower.
struct Cells {
    /// Zeroed memory: zeros are a valid `UnitCell` (atomics of 0).
    mem: crate::buf::AlignedBuf,
    len: usize,
}

impl Cells {
    fn new(floors: &[u64]) -> Cells {
        let len = floors.len();
        let bytes = len * std::mem::size_of::<UnitCell>();
        let mut mem = crate::buf::AlignedBuf::zeroed(bytes).unwrap_or_else(|_| {
            let layout = std::alloc::Layout::array::<UnitCell>(len).expect("table size");
            std::alloc::handle_alloc_error(layout)
        });
        if bytes > 0 {
            // SAFETY: advice on the buffer's own mapping, which it owns; best effort,
            // before the first touch, so the pages are faulted in huge.
            unsafe { libc::madvise(mem.as_mut_ptr().cast(), bytes, libc::MADV_HUGEPAGE) };
        }
        let cells = Cells { mem, len };
        for (c, &f) in cells.iter().zip(floors) {
            c.floor.store(f, Ordering::Relaxed);
        }
        cells
    }
}

impl std::ops::Deref for Cells {
    type Target = [UnitCell];
    fn deref(&self) -> &[UnitCell] {
        // SAFETY: the buffer holds `len` cells' bytes, zeroed or written only through
        // the cells' atomics, at a 4096-byte-aligned address (more than `UnitCell`
        // needs); it lives as long as `self` and is never viewed as bytes.
        unsafe { std::slice::from_raw_parts(self.mem.as_ptr().cast::<UnitCell>(), self.len) }
    }
}

/// A unit's state when a read was issued, compared when it completes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitSnap {
    pub floor: u64,
    state: u32,
}

impl DiskTable {
    /// A table of `units` units, every floor `floors[i]` (or 0), sequences from `next_seq`.
    pub fn new(disk_id: u64, region_offset: u64, floors: &[u64], next_seq: u64) -> Self {
        DiskTable {
            disk_id,
            region_offset,
            path: String::new(),
            units: Cells::new(floors),
            next_seq: AtomicU64::new(next_seq.max(1)),
        }
    }

    pub fn units(&self) -> u64 {
        self.units.len() as u64
    }

    /// A write of `n` units from unit `first` is issued: its sequence.
    ///
    /// The sequence is drawn after the units are marked in flight: a write that begins
    /// after another write to the unit ended (alone, raising the floor) then always has
    /// a higher sequence, whatever the threads' interleaving.
    #[inline]
    pub fn begin_write(&self, first: u64, n: u64) -> u64 {
        for u in first..first + n {
            let _ = self.units[u as usize].state.fetch_update(
                Ordering::AcqRel,
                Ordering::Acquire,
                |s| {
                    let count = s >> COUNT_SHIFT;
                    let overlap = if count > 0 { OVERLAP } else { s & OVERLAP };
                    Some(((count + 1) << COUNT_SHIFT) | overlap | ((s + 1) & GEN_MASK))
                },
            );
        }
        self.next_seq.fetch_add(1, Ordering::AcqRel)
    }

    /// The write `seq` of `n` units from `first` completed (`ok`: in full).
    #[inline]
    pub fn end_write(&self, first: u64, n: u64, seq: u64, ok: bool) {
        for u in first..first + n {
            let cell = &self.units[u as usize];
            let prev = cell
                .state
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                    let count = (s >> COUNT_SHIFT).saturating_sub(1);
                    let overlap = if count == 0 { 0 } else { s & OVERLAP };
                    Some((count << COUNT_SHIFT) | overlap | (s & GEN_MASK))
                })
                .unwrap_or(0);
            if ok && prev >> COUNT_SHIFT == 1 && prev & OVERLAP == 0 {
                cell.floor.fetch_max(seq, Ordering::AcqRel);
            }
        }
    }

    /// Start loading the entries of `n` units from `first` into the cache (a hint: no
    /// effect on what the table holds).
    #[inline]
    pub fn prefetch(&self, first: u64, n: u64) {
        #[cfg(target_arch = "x86_64")]
        for u in first..(first + n).min(self.units()) {
            let p = &self.units[u as usize] as *const UnitCell as *const i8;
            // SAFETY: a prefetch only hints the cache; `p` points into the table.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (first, n);
    }

    /// The unit's state, taken when a read is issued.
    #[inline]
    pub fn snap(&self, unit: u64) -> UnitSnap {
        let cell = &self.units[unit as usize];
        let state = cell.state.load(Ordering::Acquire);
        UnitSnap {
            floor: cell.floor.load(Ordering::Acquire),
            state,
        }
    }

    /// True when no write to the unit was in flight at `snap` and none was issued or
    /// completed since: what a read saw must then be exactly what the floor says.
    #[inline]
    pub fn quiet_since(&self, unit: u64, snap: UnitSnap) -> bool {
        snap.state >> COUNT_SHIFT == 0 && self.snap(unit) == snap
    }

    /// Every unit's floor now (for the journal).
    pub fn floors(&self) -> Vec<u64> {
        self.units
            .iter()
            .map(|c| c.floor.load(Ordering::Acquire))
            .collect()
    }

    /// The next sequence this table hands out.
    pub fn next_seq(&self) -> u64 {
        self.next_seq.load(Ordering::Acquire)
    }
}

/// Everything that can go wrong with a journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("cannot {what} the verify journal {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("the verify journal {} is damaged ({why}); remove it and run again with --verify (the disk is refilled)", path.display())]
    Damaged { path: PathBuf, why: &'static str },
}

/// The on-disk copy of a disk's floors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Journal {
    pub identity: u32,
    pub worker: u32,
    pub disk: u32,
    /// Addressable bytes of the disk when the journal was written.
    pub size: u64,
    /// The first sequence the next run on this disk uses.
    pub next_seq: u64,
    /// Per unit: the sequence of the last write known complete when the journal was synced.
    pub floors: Vec<u64>,
}

const JOURNAL_MAGIC: &[u8; 8] = b"IOFLJNL2";
/// The journal of iofleet builds whose units carried a CRC-32C (`IOFLVFY1`).
const OLD_JOURNAL_MAGIC: &[u8; 8] = b"IOFLJNL1";
const JOURNAL_HEADER: usize = 64;
// Journal layout (little-endian): magic [0..8], unit size u32 [8..12], identity u32
// [12..16], worker u32 [16..20], disk u32 [20..24], size u64 [24..32], units u64
// [32..40], next_seq u64 [40..48], zeros [48..60], CRC-32C u32 [60..64] of bytes 0..60
// and of every floor; then one u64 floor per unit.

impl Journal {
    /// The journal of a freshly filled disk: a new identity, every floor 0.
    pub fn fresh(d: &DiskLayout) -> Journal {
        Journal {
            identity: rand::random::<u32>() | 1,
            worker: d.worker,
            disk: d.disk,
            size: d.size,
            next_seq: 1,
            floors: vec![0; (d.size / UNIT) as usize],
        }
    }

    pub fn disk_id(&self) -> u64 {
        disk_id(self.identity, self.worker, self.disk)
    }

    /// True when this journal describes disk `d` as it is laid out now.
    pub fn fits(&self, d: &DiskLayout) -> bool {
        self.worker == d.worker && self.disk == d.disk && self.size == d.size
    }

    fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; JOURNAL_HEADER + self.floors.len() * 8];
        b[0..8].copy_from_slice(JOURNAL_MAGIC);
        b[8..12].copy_from_slice(&(UNIT as u32).to_le_bytes());
        b[12..16].copy_from_slice(&self.identity.to_le_bytes());
        b[16..20].copy_from_slice(&self.worker.to_le_bytes());
        b[20..24].copy_from_slice(&self.disk.to_le_bytes());
        b[24..32].copy_from_slice(&self.size.to_le_bytes());
        b[32..40].copy_from_slice(&(self.floors.len() as u64).to_le_bytes());
        b[40..48].copy_from_slice(&self.next_seq.to_le_bytes());
        for (i, f) in self.floors.iter().enumerate() {
            let at = JOURNAL_HEADER + i * 8;
            b[at..at + 8].copy_from_slice(&f.to_le_bytes());
        }
        let crc = crc32c::crc32c_append(crc32c::crc32c(&b[..60]), &b[JOURNAL_HEADER..]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn decode(b: &[u8], path: &Path) -> Result<Journal, JournalError> {
        let damaged = |why| JournalError::Damaged {
            path: path.to_path_buf(),
            why,
        };
        if b.len() >= 8 && &b[0..8] == OLD_JOURNAL_MAGIC {
            return Err(damaged(
                "written by an older iofleet, whose units this one cannot check",
            ));
        }
        if b.len() < JOURNAL_HEADER || &b[0..8] != JOURNAL_MAGIC {
            return Err(damaged("no journal header"));
        }
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        if u32_at(8) as u64 != UNIT {
            return Err(damaged("another unit size"));
        }
        let units = u64_at(b, 32);
        if (b.len() - JOURNAL_HEADER) as u64 != units.saturating_mul(8) {
            return Err(damaged("length does not match its unit count"));
        }
        let crc = crc32c::crc32c_append(crc32c::crc32c(&b[..60]), &b[JOURNAL_HEADER..]);
        if crc != u32_at(60) {
            return Err(damaged("checksum mismatch"));
        }
        Ok(Journal {
            identity: u32_at(12),
            worker: u32_at(16),
            disk: u32_at(20),
            size: u64_at(b, 24),
            next_seq: u64_at(b, 40),
            floors: b[JOURNAL_HEADER..]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        })
    }

    /// The journal at `path`; None when there is none.
    pub fn load(path: &Path) -> Result<Option<Journal>, JournalError> {
        match fs::read(path) {
            Ok(b) => Journal::decode(&b, path).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(JournalError::Io {
                what: "read",
                path: path.to_path_buf(),
                source: e,
            }),
        }
    }

    /// Replace the journal at `path` atomically: a temporary file beside it, fsync,
    /// rename, fsync of the directory. A crash leaves the old journal or the new one.
    pub fn store(&self, path: &Path) -> Result<(), JournalError> {
        let io = |what, e| JournalError::Io {
            what,
            path: path.to_path_buf(),
            source: e,
        };
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| io("create the directory of", e))?;
        }
        let tmp = path.with_extension("journal-tmp");
        let mut f = File::create(&tmp).map_err(|e| io("create", e))?;
        f.write_all(&self.encode()).map_err(|e| io("write", e))?;
        f.sync_all().map_err(|e| io("sync", e))?;
        drop(f);
        fs::rename(&tmp, path).map_err(|e| io("rename", e))?;
        if let Some(dir) = path.parent() {
            if let Ok(d) = File::open(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            }) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }

    /// The journal snapshot of `table` now, for disk `d` of this journal's identity.
    pub fn of_table(&self, table: &DiskTable) -> Journal {
        Journal {
            floors: table.floors(),
            next_seq: table.next_seq().saturating_add(SEQ_RESERVE),
            ..self.clone()
        }
    }
}

/// Where the journal of disk `d` lives: beside a disk file (`NAME.journal`); for a
/// device region, in `cache_dir` under the device's canonical path and region offset.
pub fn journal_path(d: &DiskLayout, cache_dir: &Path) -> PathBuf {
    if d.is_device {
        let dev = fs::canonicalize(&d.path).unwrap_or_else(|_| d.path.clone());
        let key: String = dev
            .to_string_lossy()
            .trim_start_matches('/')
            .replace('/', "_");
        cache_dir.join(format!("{key}@{}.journal", d.region_offset))
    } else {
        let mut p = d.path.clone().into_os_string();
        p.push(".journal");
        PathBuf::from(p)
    }
}

/// The directory for device journals: `$XDG_CACHE_HOME/iofleet/journals`, else
/// `$HOME/.cache/iofleet/journals`, else `./.iofleet-journals`.
pub fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    match base {
        Some(b) => b.join("iofleet").join("journals"),
        None => PathBuf::from(".iofleet-journals"),
    }
}

/// One bad unit found by [`scan_disk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadUnit {
    /// Offset of the unit in the disk.
    pub offset: u64,
    pub fault: Fault,
}

/// What [`scan_disk`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanOutcome {
    pub units_checked: u64,
    /// Every bad unit is counted; the first `keep` are kept.
    pub bad: u64,
    pub first: Vec<BadUnit>,
}

/// Read every unit of disk `d` and check it against `journal`, keeping the first `keep`
/// bad units. Reads in 1 MiB pieces through `file` (opened by the caller).
pub fn scan_disk(
    file: &File,
    d: &DiskLayout,
    journal: &Journal,
    keep: usize,
) -> io::Result<ScanOutcome> {
    const PIECE: u64 = 1 << 20;
    let id = journal.disk_id();
    let mut out = ScanOutcome::default();
    let mut buf = crate::buf::AlignedBuf::zeroed(PIECE as usize)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let mut at = 0u64;
    let push = |out: &mut ScanOutcome, offset, fault| {
        out.bad += 1;
        if out.first.len() < keep {
            out.first.push(BadUnit { offset, fault });
        }
    };
    let end = d.size.min(journal.floors.len() as u64 * UNIT);
    while at < end {
        let want = (end - at).min(PIECE) as usize;
        let got = read_full(file, &mut buf[..want], d.region_offset + at)?;
        for u in 0..(want as u64 / UNIT) {
            let off = at + u * UNIT;
            out.units_checked += 1;
            let lo = (u * UNIT) as usize;
            if lo + UNIT as usize > got {
                push(
                    &mut out,
                    off,
                    Fault::Missing {
                        len: at + got as u64,
                    },
                );
                continue;
            }
            let floor = journal.floors[(off / UNIT) as usize];
            if let Err(f) = check_unit(&buf[lo..lo + UNIT as usize], id, off, floor) {
                push(&mut out, off, f);
            }
        }
        at += want as u64;
    }
    Ok(out)
}

/// Read until `buf` is full or the end of the file; the bytes read.
fn read_full(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Remove the journal of `d` if there is one (a run without `--verify` writes data
/// without headers, so the journal no longer describes the disk). True if one was removed.
pub fn forget_journal(path: &Path) -> io::Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Open a disk file or device for the verify scan (read only, no O_DIRECT: a plain
/// descriptor reads what the storage returns once the page cache holds nothing newer).
pub fn open_for_scan(d: &DiskLayout) -> io::Result<File> {
    OpenOptions::new().read(true).open(&d.path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_unit_checks_and_every_fault_is_told_apart() {
        let mut buf = vec![0xabu8; 3 * UNIT as usize];
        let id = disk_id(7, 1, 2);
        stamp_units(&mut buf, id, 8192, 5, 123);
        let unit = |i: usize| buf[i * 4096..(i + 1) * 4096].to_vec();
        assert_eq!(check_unit(&unit(1), id, 8192 + 4096, 5), Ok(5));
        assert_eq!(check_unit(&unit(1), id, 8192 + 4096, 3), Ok(5));
        assert_eq!(
            check_unit(&unit(1), id, 8192 + 4096, 6),
            Err(Fault::Stale { floor: 6, found: 5 })
        );
        assert_eq!(
            check_unit(&unit(0), id, 8192 + 4096, 0),
            Err(Fault::Misdirected { found: 8192 })
        );
        assert!(matches!(
            check_unit(&unit(0), disk_id(8, 1, 2), 8192, 0),
            Err(Fault::ForeignDisk { .. })
        ));
        // Every part of the unit is covered: magic, disk id, offset, sequence, time, the
        // checksum itself, the data.
        for at in [0usize, 9, 20, 30, 35, 41, 47, 48, 2000, 4095] {
            let mut u = unit(2);
            u[at] ^= 0x10;
            let r = check_unit(&u, id, 8192 + 8192, 0);
            assert!(
                matches!(r, Err(Fault::Checksum { .. }) | Err(Fault::NoHeader { .. })),
                "byte {at}: {r:?}"
            );
        }
        assert!(matches!(
            check_unit(&[0u8; 4096], id, 0, 0),
            Err(Fault::NoHeader { .. })
        ));
    }

    #[test]
    fn floors_rise_only_for_writes_that_completed_alone() {
        let t = DiskTable::new(1, 0, &[0; 4], 10);
        let a = t.begin_write(0, 2);
        assert_eq!(a, 10);
        let snap = t.snap(1);
        t.end_write(0, 2, a, true);
        assert_eq!(t.snap(0).floor, 10);
        assert!(!t.quiet_since(1, snap), "a write was in flight");
        let quiet = t.snap(1);
        assert!(t.quiet_since(1, quiet));
        // Two overlapping writes: the floor stays where it was, whichever ends first.
        let b = t.begin_write(1, 1);
        let c = t.begin_write(1, 1);
        t.end_write(1, 1, c, true);
        t.end_write(1, 1, b, true);
        assert_eq!(t.snap(1).floor, 10);
        assert!(!t.quiet_since(1, quiet), "writes came and went");
        // A later write alone raises it again; a failed one does not.
        let d = t.begin_write(1, 1);
        t.end_write(1, 1, d, true);
        assert_eq!(t.snap(1).floor, d);
        let e = t.begin_write(3, 1);
        t.end_write(3, 1, e, false);
        assert_eq!(t.snap(3).floor, 0);
    }

    #[test]
    fn journal_round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.journal");
        assert_eq!(Journal::load(&path).unwrap(), None);
        let j = Journal {
            identity: 9,
            worker: 3,
            disk: 1,
            size: 3 * UNIT,
            next_seq: 77,
            floors: vec![0, 5, 9],
        };
        j.store(&path).unwrap();
        assert_eq!(Journal::load(&path).unwrap(), Some(j));
        let mut b = fs::read(&path).unwrap();
        b[64 + 8] ^= 1;
        fs::write(&path, &b).unwrap();
        assert!(matches!(
            Journal::load(&path),
            Err(JournalError::Damaged { .. })
        ));
        // A journal of the CRC-32C unit format is refused by name, not misread.
        b[0..8].copy_from_slice(b"IOFLJNL1");
        fs::write(&path, &b).unwrap();
        let e = Journal::load(&path).unwrap_err().to_string();
        assert!(e.contains("older iofleet"), "{e}");
    }
}
