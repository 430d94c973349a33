//! Write data: the content of every written unit, controlled for dedupe and compression.
//!
//! A [`Pattern`] belongs to one writer (a lane, or the fill of one disk) and fills each
//! write buffer with one call, [`Pattern::fill`], before the write is queued. Anything
//! written over a unit afterwards (a verify header) is not this module's business.
//!
//! Content is cut into units of `dedupe_unit` bytes. The writer's k-th unit (counted
//! over all its writes) has content id `⌊k ÷ dedupe_ratio⌋`, so every `dedupe_ratio`
//! consecutive units of a writer share one content and the distinct units are
//! `1 ÷ dedupe_ratio` of those written. Content ids are salted with the writer's seed
//! (a lane's seed comes from the run seed and its worker, disk and thread), so writers
//! never share content: the ratio holds for the whole run, whatever the number of
//! lanes, threads, workers or hosts, with no coordination and deterministically from
//! the seed. With `dedupe_ratio = 1` every unit written is distinct.
//!
//! Within a unit, the first `dedupe_unit ÷ compress_ratio` bytes (rounded to 8) are
//! pseudo-random and the rest are zeros, so a compressor working per unit gets about
//! `compress_ratio : 1`. The pseudo-random bytes are a slice of one pre-generated pool
//! (shared by every pattern of the process; a slice starts in its first 256 KiB, so for
//! common units the pool stays in cache), chosen by the content id and XORed
//! with a 64-bit key from the same id: generation is a copy with an XOR (several GB/s
//! per core), yet two content ids give byte runs with nothing a compressor can match
//! (short of a collision of their 64-bit keys). This module does no I/O and keeps no per-write state beyond
//! the unit counter.

use std::sync::OnceLock;

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Largest allowed `dedupe_unit`, bytes.
pub const MAX_UNIT: usize = 1 << 20;
/// Bytes of the pool region a unit's random part may start in.
const POOL_SPAN: usize = 256 << 10;
/// Seed of the shared pool (fixed: content depends only on the writers' salts).
const POOL_SEED: u64 = 0x10f1_ee70_da7a_9001;

/// What a run writes: resolved from the profile's `[data]` table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PatternSpec {
    /// Write zeros (compresses and dedupes completely); the ratios must be 1.
    pub zero: bool,
    /// Written units per distinct unit, >= 1.
    pub dedupe_ratio: f64,
    /// Unit of dedupe and compression, bytes (a multiple of 512, at most `MAX_UNIT`).
    pub dedupe_unit: u32,
    /// Bytes of a unit per byte it compresses to, >= 1.
    pub compress_ratio: f64,
}

impl PatternSpec {
    /// Incompressible, every unit distinct (the default).
    pub const RANDOM: PatternSpec = PatternSpec {
        zero: false,
        dedupe_ratio: 1.0,
        dedupe_unit: 4096,
        compress_ratio: 1.0,
    };

    /// True when the ratios ask for nothing beyond plain random data.
    pub fn is_plain_random(&self) -> bool {
        !self.zero && self.dedupe_ratio == 1.0 && self.compress_ratio == 1.0
    }

    /// Pseudo-random bytes at the start of each unit (the rest are zeros).
    pub fn random_len(&self) -> usize {
        let unit = self.dedupe_unit.max(8) as usize;
        let r = (unit as f64 / self.compress_ratio.max(1.0) / 8.0).round() as usize * 8;
        r.clamp(8, unit)
    }
}

impl Default for PatternSpec {
    fn default() -> Self {
        PatternSpec::RANDOM
    }
}

/// The pool every pattern copies its random bytes from.
fn pool() -> &'static [u64] {
    static POOL: OnceLock<Box<[u64]>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut words = vec![0u64; (POOL_SPAN + MAX_UNIT) / 8].into_boxed_slice();
        let mut rng = SmallRng::seed_from_u64(POOL_SEED);
        words.iter_mut().for_each(|w| *w = rng.next_u64());
        words
    })
}

/// Build the data pool every pattern draws from now, rather than at the first write
/// (where it held up a fill's first writes by 7-28 ms on a busy machine): a fill has it
/// built on a thread of its own while its disks are laid out.
pub fn warm() {
    pool();
}

pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One writer's data generator: the spec, the writer's salt and its unit counter.
#[derive(Debug, Clone)]
pub struct Pattern {
    pool: &'static [u64],
    zero: bool,
    unit: usize,
    random_len: usize,
    /// `Some(n)` for a whole dedupe ratio (integer division), else the float ratio.
    ratio_int: Option<u64>,
    ratio: f64,
    salt: u64,
    units: u64,
}

impl Pattern {
    /// A generator for one writer; `salt` must differ between writers (a lane's seed).
    pub fn new(spec: PatternSpec, salt: u64) -> Self {
        let unit = (spec.dedupe_unit as usize).clamp(8, MAX_UNIT);
        let ratio = spec.dedupe_ratio.max(1.0);
        Pattern {
            // Taken at the first fill: a reader's lanes never build the pool (1.25 MiB
            // of random words, milliseconds of a CPU per process: on a machine of a
            // thousand agents that run reads, seconds before the first interval).
            pool: &[],
            zero: spec.zero,
            unit,
            random_len: PatternSpec {
                dedupe_unit: unit as u32,
                ..spec
            }
            .random_len(),
            ratio_int: (ratio.fract() == 0.0).then_some(ratio as u64),
            ratio,
            salt: splitmix(salt),
            units: 0,
        }
    }

    /// Units generated so far.
    pub fn units(&self) -> u64 {
        self.units
    }

    /// The units one write of `len` bytes takes (a partial unit counts as one).
    pub fn units_in(&self, len: usize) -> u64 {
        len.div_ceil(self.unit) as u64
    }

    /// Continue from unit `units`, as if that many had been generated: writers that
    /// share one sequential stream (a parallel fill) each start where their write is.
    pub fn seek(&mut self, units: u64) {
        self.units = units;
    }

    /// Fill `buf` (one write) with the next units of this writer. A write that is not
    /// a multiple of the unit ends with the leading bytes of a unit.
    #[inline]
    pub fn fill(&mut self, buf: &mut [u8]) {
        if self.zero {
            buf.fill(0);
            return;
        }
        if self.pool.is_empty() {
            self.pool = pool();
        }
        for chunk in buf.chunks_mut(self.unit) {
            let k = self.units;
            self.units += 1;
            let id = match self.ratio_int {
                Some(n) => k / n,
                None => (k as f64 / self.ratio) as u64,
            };
            self.unit_content(chunk, id);
        }
    }

    /// The content of unit `id`, or its first `chunk.len()` bytes.
    #[inline]
    fn unit_content(&self, chunk: &mut [u8], id: u64) {
        let key = splitmix(self.salt ^ id.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        let start = ((key >> 40) as usize) % (POOL_SPAN / 8);
        let rand = self.random_len.min(chunk.len());
        let (head, tail) = chunk.split_at_mut(rand);
        let words = &self.pool[start..start + head.len().div_ceil(8)];
        let mut dst = head.chunks_exact_mut(8);
        for (d, &w) in (&mut dst).zip(words) {
            d.copy_from_slice(&(w ^ key).to_le_bytes());
        }
        let rest = dst.into_remainder();
        if !rest.is_empty() {
            let last = (words[words.len() - 1] ^ key).to_le_bytes();
            rest.copy_from_slice(&last[..rest.len()]);
        }
        tail.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn spec(dedupe: f64, compress: f64, unit: u32) -> PatternSpec {
        PatternSpec {
            zero: false,
            dedupe_ratio: dedupe,
            dedupe_unit: unit,
            compress_ratio: compress,
        }
    }

    #[test]
    fn random_len_rounds_to_words_within_the_unit() {
        assert_eq!(spec(1.0, 1.0, 4096).random_len(), 4096);
        assert_eq!(spec(1.0, 2.0, 4096).random_len(), 2048);
        assert_eq!(spec(1.0, 3.0, 4096).random_len(), 1368);
        assert_eq!(spec(1.0, 1000.0, 512).random_len(), 8);
    }

    #[test]
    fn same_salt_same_data_other_salt_other_data() {
        let mut a = Pattern::new(PatternSpec::RANDOM, 1);
        let mut b = Pattern::new(PatternSpec::RANDOM, 1);
        let mut c = Pattern::new(PatternSpec::RANDOM, 2);
        let (mut x, mut y, mut z) = (vec![0u8; 8192], vec![0u8; 8192], vec![0u8; 8192]);
        a.fill(&mut x);
        b.fill(&mut y);
        c.fill(&mut z);
        assert_eq!(x, y);
        assert_ne!(x[..4096], z[..4096]);
        assert_ne!(x[..4096], x[4096..]);
        assert_eq!(a.units(), 2);
    }

    #[test]
    fn dedupe_ratio_groups_consecutive_units() {
        let mut p = Pattern::new(spec(3.0, 1.0, 4096), 9);
        let mut buf = vec![0u8; 4096 * 9];
        p.fill(&mut buf);
        let u: Vec<&[u8]> = buf.chunks(4096).collect();
        assert!(u[0] == u[1] && u[1] == u[2] && u[2] != u[3] && u[3] == u[5]);
        let distinct: HashSet<&[u8]> = u.iter().copied().collect();
        assert_eq!(distinct.len(), 3);
        // A fractional ratio: 2.5 → ids 0,0,0,1,1,2,2,2,3,3 over ten units.
        let mut p = Pattern::new(spec(2.5, 1.0, 512), 9);
        let mut buf = vec![0u8; 512 * 10];
        p.fill(&mut buf);
        let distinct: HashSet<&[u8]> = buf.chunks(512).collect();
        assert_eq!(distinct.len(), 4);
    }

    #[test]
    fn compressed_units_end_in_zeros_and_partial_units_are_prefixes() {
        let mut p = Pattern::new(spec(1.0, 2.0, 4096), 5);
        let mut buf = vec![0xAAu8; 4096 + 1000];
        p.fill(&mut buf);
        assert!(buf[2048..4096].iter().all(|&b| b == 0));
        assert!(buf[..2048].iter().filter(|&&b| b == 0).count() < 64);
        assert!(buf[4096..].iter().filter(|&&b| b == 0).count() < 32);
        let mut q = Pattern::new(spec(1.0, 2.0, 4096), 5);
        let mut whole = vec![0u8; 8192];
        q.fill(&mut whole);
        assert_eq!(buf[4096..], whole[4096..5096]);
        // An odd tail length is filled too (buffered I/O allows any size).
        let mut r = Pattern::new(PatternSpec::RANDOM, 5);
        let mut odd = vec![0u8; 13];
        r.fill(&mut odd);
        assert_eq!(odd[..], whole[..13]);
    }

    #[test]
    fn zero_writes_zeros() {
        let mut p = Pattern::new(
            PatternSpec {
                zero: true,
                ..PatternSpec::RANDOM
            },
            1,
        );
        let mut buf = vec![7u8; 10_000];
        p.fill(&mut buf);
        assert!(buf.iter().all(|&b| b == 0));
    }
}
