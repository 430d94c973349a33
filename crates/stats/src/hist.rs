//! `LatencyHist`: an HDR histogram of latencies in nanoseconds with 3 significant digits
//! (every recorded value is kept within 0.1% of itself), auto-resizing so no latency is
//! ever out of range. Merging is exact: the merged histogram equals the histogram of the
//! union of the samples. Serialises to the compact HDR V2 encoding for storage.
//!
//! Two forms hold the same buckets. *Dense* is HDR's counts array, held in chunks of
//! 1,024 buckets (8 KiB) each allocated on the first record into it, where I/O threads
//! record: a latency far above the others (a late start's first I/O, a stalled device)
//! costs one chunk, not a grown and copied array, and taking an interval's counts walks
//! only the range recorded. *Sparse* is the list of non-empty buckets
//! (value, count): what a histogram decoded from the wire or the store becomes, and what
//! merging sparse histograms gives until it grows past `SPARSE_MAX` buckets. A
//! controller holding 10,000 workers' intervals and totals thus keeps a few hundred
//! buckets per worker instead of tens of thousands, and merges in time proportional to
//! the buckets in use. Every figure (count, min, max, quantiles, buckets) is the same in
//! either form, bucket for bucket; tests check it against HDR's own.

use std::ops::AddAssign;

/// Significant decimal digits kept by every latency histogram.
pub const SIGFIG: u8 = 3;

/// Above this many non-empty buckets a merged sparse histogram turns dense.
const SPARSE_MAX: usize = 512;

/// The bucket geometry of every `LatencyHist`: lowest discernible value 1 ns, 3
/// significant digits, so 2048 sub-buckets, the lower half of which serve bucket 0.
const SUB_HALF_MAGNITUDE: u32 = 10;
const SUB_HALF: u64 = 1 << SUB_HALF_MAGNITUDE;
const SUB_MASK: u64 = 2 * SUB_HALF - 1;
const LEADING_ZERO_BASE: u32 = 64 - SUB_HALF_MAGNITUDE - 1;

/// Lowest value of the bucket at counts-array `index` (HDR's own mapping).
fn value_for_index(index: u64) -> u64 {
    let bucket = (index >> SUB_HALF_MAGNITUDE) as i64 - 1;
    let sub = (index & (SUB_HALF - 1)) + SUB_HALF;
    if bucket < 0 {
        sub - SUB_HALF
    } else {
        sub << bucket
    }
}

/// Width of the bucket holding `value` (all values in it are recorded as one).
fn equivalent_range(value: u64) -> u64 {
    1u64 << (LEADING_ZERO_BASE - (value | SUB_MASK).leading_zeros())
}

fn highest_equivalent(lowest: u64) -> u64 {
    lowest.saturating_add(equivalent_range(lowest)) - 1
}

/// Buckets per chunk of the dense counts: half an octave of HDR's counts array.
const CHUNK: usize = SUB_HALF as usize;
/// Chunks that cover every u64 (the highest counts index is that of `u64::MAX`).
const CHUNKS: usize = (LEADING_ZERO_BASE + 2) as usize;

/// HDR's counts array (iofleet's geometry), chunk by chunk as recorded into, with the
/// range of indices that hold counts.
#[derive(Clone)]
struct Counts {
    chunks: [Option<Box<[u64; CHUNK]>>; CHUNKS],
    total: u64,
    /// Lowest and highest index with a count (`usize::MAX`, 0 when empty).
    lo: usize,
    hi: usize,
}

impl std::fmt::Debug for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counts")
            .field("total", &self.total)
            .field("buckets", &self.buckets().collect::<Vec<_>>())
            .finish()
    }
}

fn zeroed_chunk() -> Box<[u64; CHUNK]> {
    vec![0u64; CHUNK]
        .into_boxed_slice()
        .try_into()
        .expect("a chunk has CHUNK buckets")
}

impl Counts {
    fn new() -> Self {
        Counts {
            chunks: std::array::from_fn(|_| None),
            total: 0,
            lo: usize::MAX,
            hi: 0,
        }
    }

    #[inline]
    fn add_at(&mut self, i: usize, n: u64) {
        let chunk = self.chunks[i / CHUNK].get_or_insert_with(zeroed_chunk);
        chunk[i % CHUNK] += n;
        self.total += n;
        self.lo = self.lo.min(i);
        self.hi = self.hi.max(i);
    }

    #[inline]
    fn record_n(&mut self, value: u64, n: u64) {
        self.add_at(index_for_value(value) as usize, n);
    }

    /// (counts index, count) of every non-empty bucket, ascending.
    fn indexed(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        // Empty: `lo` above `hi`, an empty range.
        (self.lo..=self.hi).filter_map(|i| {
            let c = self.chunks[i / CHUNK]
                .as_ref()
                .map_or(0, |ch| ch[i % CHUNK]);
            (c > 0).then_some((i, c))
        })
    }

    /// (lowest value, count) of every non-empty bucket, ascending.
    fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.indexed().map(|(i, c)| (value_for_index(i as u64), c))
    }

    /// Empty again; the chunks stay for the next interval, and only the range recorded
    /// is written.
    fn reset(&mut self) {
        if self.total > 0 {
            for c in self.lo / CHUNK..=self.hi / CHUNK {
                if let Some(chunk) = self.chunks[c].as_mut() {
                    let from = if c == self.lo / CHUNK {
                        self.lo % CHUNK
                    } else {
                        0
                    };
                    let to = if c == self.hi / CHUNK {
                        self.hi % CHUNK
                    } else {
                        CHUNK - 1
                    };
                    chunk[from..=to].fill(0);
                }
            }
        }
        self.total = 0;
        self.lo = usize::MAX;
        self.hi = 0;
    }

    /// Allocate the chunks for latencies up to `max_ns` and touch their pages.
    fn reserve(&mut self, max_ns: u64) {
        for c in 0..=index_for_value(max_ns.max(1)) as usize / CHUNK {
            let chunk = self.chunks[c].get_or_insert_with(zeroed_chunk);
            // One write per page, which the compiler cannot drop: the page is faulted
            // in now rather than at the first record.
            for k in (0..CHUNK).step_by(512) {
                *std::hint::black_box(&mut chunk[k]) = 0;
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        self.chunks.iter().flatten().count() * CHUNK * std::mem::size_of::<u64>()
    }
}

/// The value at quantile `q` of ascending (lowest value, count) buckets holding `total`
/// (0 when empty): HDR's definition, the highest value equivalent to the bucket where
/// the count reaches ⌈q·n⌉ (at least 1); its lowest value for q = 0.
fn quantile_of(buckets: impl Iterator<Item = (u64, u64)>, total: u64, q: f64) -> u64 {
    if total == 0 {
        return 0;
    }
    let q = q.min(1.0);
    let target = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (v, c) in buckets {
        seen += c;
        if seen >= target {
            return if q == 0.0 { v } else { highest_equivalent(v) };
        }
    }
    0
}

#[derive(Clone, Debug)]
enum Form {
    Empty,
    Dense(Box<Counts>),
    /// Non-empty buckets as (lowest value, count), ascending; `total` is their sum.
    Sparse {
        buckets: Vec<(u64, u64)>,
        total: u64,
    },
}

#[derive(Clone, Debug)]
pub struct LatencyHist {
    form: Form,
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for LatencyHist {
    fn eq(&self, other: &Self) -> bool {
        self.count() == other.count() && self.buckets().eq(other.buckets())
    }
}

/// Bytes of a dense histogram's counts once it has recorded every latency up to
/// `max_ns`: what each histogram an I/O thread records into may grow to (for planning
/// memory).
pub fn dense_bytes(max_ns: u64) -> u64 {
    let chunks = index_for_value(max_ns.max(1)) / CHUNK as u64 + 1;
    chunks * (CHUNK * std::mem::size_of::<u64>()) as u64
}

impl LatencyHist {
    pub fn new() -> Self {
        LatencyHist { form: Form::Empty }
    }

    /// The dense form, converting to it first.
    fn dense(&mut self) -> &mut Counts {
        if !matches!(self.form, Form::Dense(_)) {
            let mut h = Counts::new();
            if let Form::Sparse { buckets, .. } = &self.form {
                for &(v, c) in buckets {
                    h.record_n(v, c);
                }
            }
            self.form = Form::Dense(Box::new(h));
        }
        match &mut self.form {
            Form::Dense(h) => h,
            _ => unreachable!("just made dense"),
        }
    }

    /// Allocate the counts for latencies up to `max_ns` now, recording nothing: an I/O
    /// thread does it before the start instant, so its first records do not grow the
    /// array (a reallocation and fresh pages) when every host of a fleet starts at once.
    pub fn reserve(&mut self, max_ns: u64) {
        if self.count() == 0 {
            self.dense().reserve(max_ns);
        }
    }

    /// Record one latency in nanoseconds (0 is recorded as 1 ns).
    #[inline]
    pub fn record(&mut self, latency_ns: u64) {
        let h = match &mut self.form {
            Form::Dense(h) => h,
            _ => self.dense(),
        };
        h.record_n(latency_ns.max(1), 1);
    }

    /// Record `n` occurrences of one value in nanoseconds.
    #[inline]
    pub fn record_count(&mut self, value_ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        let h = match &mut self.form {
            Form::Dense(h) => h,
            _ => self.dense(),
        };
        h.record_n(value_ns.max(1), n);
    }

    pub fn count(&self) -> u64 {
        match &self.form {
            Form::Empty => 0,
            Form::Dense(h) => h.total,
            Form::Sparse { total, .. } => *total,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Value at quantile `q` in 0..=1, in nanoseconds (0 when empty); the same value
    /// HDR gives: the highest value equivalent to the bucket where the count reaches
    /// ⌈q·n⌉ (at least 1).
    pub fn quantile_ns(&self, q: f64) -> u64 {
        match &self.form {
            Form::Dense(h) => quantile_of(h.buckets(), h.total, q),
            Form::Sparse { buckets, total } => quantile_of(buckets.iter().copied(), *total, q),
            Form::Empty => 0,
        }
    }

    pub fn max_ns(&self) -> u64 {
        match &self.form {
            Form::Dense(h) if h.total > 0 => highest_equivalent(value_for_index(h.hi as u64)),
            Form::Sparse { buckets, .. } => buckets.last().map_or(0, |b| highest_equivalent(b.0)),
            _ => 0,
        }
    }

    pub fn min_ns(&self) -> u64 {
        match &self.form {
            Form::Dense(h) if h.total > 0 => value_for_index(h.lo as u64),
            Form::Sparse { buckets, .. } => buckets.first().map_or(0, |b| b.0),
            _ => 0,
        }
    }

    pub fn reset(&mut self) {
        match &mut self.form {
            Form::Dense(h) => h.reset(),
            _ => self.form = Form::Empty,
        }
    }

    /// Every (highest equivalent value, count) bucket with a non-zero count, ascending.
    pub fn buckets(&self) -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        match &self.form {
            Form::Empty => Box::new(std::iter::empty()),
            Form::Dense(h) => Box::new(h.buckets().map(|(v, c)| (highest_equivalent(v), c))),
            Form::Sparse { buckets, .. } => {
                Box::new(buckets.iter().map(|&(v, c)| (highest_equivalent(v), c)))
            }
        }
    }

    /// Non-empty buckets as (lowest value, count), ascending.
    fn lowest_buckets(&self) -> Vec<(u64, u64)> {
        match &self.form {
            Form::Empty => Vec::new(),
            Form::Dense(h) => h.buckets().collect(),
            Form::Sparse { buckets, .. } => buckets.clone(),
        }
    }

    /// Compact HDR V2 encoding (for the results store and the agent protocol); an
    /// empty histogram encodes as zero bytes. The sparse form is encoded directly.
    pub fn to_v2_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match &self.form {
            Form::Dense(h) => encode_sparse(&h.buckets().collect::<Vec<_>>(), &mut out),
            Form::Sparse { buckets, .. } => encode_sparse(buckets, &mut out),
            _ => {}
        }
        out
    }

    /// A sparse copy of this histogram, leaving it empty (a dense one keeps its counts
    /// array for the next interval: no allocation per interval in the hot loop).
    pub fn take(&mut self) -> LatencyHist {
        let out = match &mut self.form {
            Form::Dense(h) if h.total > 0 => {
                let total = h.total;
                let buckets = h.buckets().collect();
                h.reset();
                Form::Sparse { buckets, total }
            }
            Form::Dense(_) => Form::Empty,
            other => std::mem::replace(other, Form::Empty),
        };
        LatencyHist { form: out }
    }

    /// Decode the HDR V2 encoding of a histogram of iofleet's own geometry, straight
    /// into the sparse form (no counts array is built, so memory follows the bytes
    /// read). Any other encoding is refused: HDR's own decoder would allocate the counts
    /// of whatever range and precision a 40-byte header claims (48 MB for one claiming 5
    /// digits over the u64 range), and the bytes may come from an agent or a shared store.
    pub fn from_v2_bytes(bytes: &[u8]) -> Result<Self, String> {
        if bytes.is_empty() {
            return Ok(LatencyHist::new());
        }
        decode_sparse(bytes).ok_or_else(|| {
            format!(
                "bad histogram encoding: not an HDR V2 histogram of iofleet's geometry (lowest 1 ns, {SIGFIG} significant digits)"
            )
        })
    }
}

/// Decode a V2 encoding of iofleet's geometry (lowest 1, 3 digits) into the sparse form;
/// None for anything else (then HDR's own decoder decides).
fn decode_sparse(bytes: &[u8]) -> Option<LatencyHist> {
    let be32 = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let be64 = |at: usize| Some(u64::from_be_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
    // Cookie, payload length, normalising offset, digits, lowest, highest, ratio.
    if be32(0)? != 0x1c84_9313 || be32(8)? != 0 || be32(12)? != SIGFIG as u32 || be64(16)? != 1 {
        return None;
    }
    if f64::from_bits(be64(32)?) != 1.0 {
        return None;
    }
    let len = be32(4)? as usize;
    let mut payload = bytes.get(40..40 + len)?;
    let mut buckets = Vec::new();
    let mut total = 0u64;
    let mut index = 0u64;
    while !payload.is_empty() {
        // LEB128 with a 9th byte carrying all 8 bits, then zig-zag.
        let mut v = 0u64;
        let mut i = 0;
        loop {
            let b = *payload.get(i)?;
            if i == 8 {
                v |= (b as u64) << 56;
                i += 1;
                break;
            }
            v |= ((b & 0x7f) as u64) << (7 * i);
            i += 1;
            if b & 0x80 == 0 {
                break;
            }
        }
        payload = &payload[i..];
        let n = ((v >> 1) as i64) ^ -((v & 1) as i64);
        if n < 0 {
            index = index.checked_add(n.unsigned_abs())?; // a run of empty buckets
        } else {
            if n > 0 {
                buckets.push((value_for_index(index), n as u64));
                total = total.checked_add(n as u64)?;
            }
            index += 1;
        }
        if index > (64 << SUB_HALF_MAGNITUDE) {
            return None;
        }
    }
    Some(LatencyHist {
        form: if total == 0 {
            Form::Empty
        } else {
            Form::Sparse { buckets, total }
        },
    })
}

/// Counts-array index of the bucket whose lowest value is `v` (HDR's own mapping).
fn index_for_value(v: u64) -> u64 {
    let bucket = LEADING_ZERO_BASE - (v | SUB_MASK).leading_zeros();
    let sub = v >> bucket;
    ((bucket as u64 + 1) << SUB_HALF_MAGNITUDE) + sub - SUB_HALF
}

fn put_varint(out: &mut Vec<u8>, n: i64) {
    let mut v = ((n << 1) ^ (n >> 63)) as u64; // zig-zag
    for _ in 0..8 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8); // the 9th byte carries all 8 bits
}

/// HDR V2 encoding of ascending (lowest value, count) buckets, as HDR writes it: the
/// header, then each count, with runs of empty buckets as negative run lengths.
fn encode_sparse(buckets: &[(u64, u64)], out: &mut Vec<u8>) {
    let Some(&(last, _)) = buckets.last() else {
        return;
    };
    let mut payload = Vec::with_capacity(buckets.len() * 3);
    let mut next = 0u64;
    for &(v, c) in buckets {
        let i = index_for_value(v);
        if i > next {
            put_varint(&mut payload, -((i - next) as i64));
        }
        put_varint(&mut payload, c as i64);
        next = i + 1;
    }
    out.extend_from_slice(&0x1c84_9313u32.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&(SIGFIG as u32).to_be_bytes());
    out.extend_from_slice(&1u64.to_be_bytes());
    out.extend_from_slice(&highest_equivalent(last).max(2).to_be_bytes());
    out.extend_from_slice(&1.0f64.to_bits().to_be_bytes());
    out.extend_from_slice(&payload);
}

/// Merge two ascending bucket lists.
fn merge_sorted(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push((a[i].0, a[i].1 + b[j].1));
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

impl AddAssign<&LatencyHist> for LatencyHist {
    fn add_assign(&mut self, rhs: &LatencyHist) {
        if rhs.is_empty() {
            return;
        }
        match (&mut self.form, &rhs.form) {
            (Form::Empty, _) => self.form = rhs.form.clone(),
            (Form::Dense(h), Form::Dense(r)) => {
                for (i, c) in r.indexed() {
                    h.add_at(i, c);
                }
            }
            (Form::Dense(h), Form::Sparse { buckets, .. }) => {
                for &(v, c) in buckets {
                    h.record_n(v, c);
                }
            }
            (
                Form::Sparse { buckets, total },
                Form::Sparse {
                    buckets: rb,
                    total: rt,
                },
            ) => {
                let merged = merge_sorted(buckets, rb);
                if merged.len() > SPARSE_MAX {
                    self.form = Form::Sparse {
                        buckets: merged,
                        total: *total + rt,
                    };
                    self.dense();
                } else {
                    *total += rt;
                    *buckets = merged;
                }
            }
            (Form::Sparse { .. }, Form::Dense(_)) => {
                let rb = rhs.lowest_buckets();
                let h = self.dense();
                for (v, c) in rb {
                    h.record_n(v, c);
                }
            }
            (_, Form::Empty) => {}
        }
    }
}

/// Fold recent additions into the packed buckets after this many merges, or sooner
/// when they hold more than `SPARSE_MAX` buckets.
const FOLD_EVERY: u32 = 16;

/// A long-lived accumulator of many histograms (a worker's totals over a whole run):
/// its buckets varint-packed, a few bytes per non-empty bucket, so its size follows the
/// distinct latencies seen rather than the latency range, and does not grow once the
/// distribution is covered. Recent additions stay sparse and are folded in every
/// `FOLD_EVERY` merges, which keeps the cost of a merge near the size of what is added.
#[derive(Clone, Debug, Default)]
pub struct PackedHist {
    /// (index delta, count) pairs as LEB128 varints, ascending by HDR counts index.
    packed: Vec<u8>,
    recent: LatencyHist,
    merges: u32,
}

fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_u64(input: &mut &[u8]) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some((&b, rest)) = input.split_first() {
        *input = rest;
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    v
}

/// Iterate (lowest value, count) of a packed bucket list.
fn unpack(mut bytes: &[u8]) -> impl Iterator<Item = (u64, u64)> + '_ {
    let mut index = 0u64;
    let mut first = true;
    std::iter::from_fn(move || {
        if bytes.is_empty() {
            return None;
        }
        let delta = get_u64(&mut bytes);
        index = if first { delta } else { index + delta };
        first = false;
        let count = get_u64(&mut bytes);
        Some((value_for_index(index), count))
    })
}

impl PackedHist {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, h: &LatencyHist) {
        if h.is_empty() {
            return;
        }
        self.recent += h;
        self.merges += 1;
        let big = match &self.recent.form {
            Form::Sparse { buckets, .. } => buckets.len() > SPARSE_MAX / 2,
            Form::Dense(_) => true,
            Form::Empty => false,
        };
        if big || self.merges >= FOLD_EVERY {
            self.fold();
        }
    }

    /// Merge the recent additions into the packed buckets.
    fn fold(&mut self) {
        self.merges = 0;
        if self.recent.is_empty() {
            return;
        }
        let recent = std::mem::take(&mut self.recent).lowest_buckets();
        let mut out = Vec::with_capacity(self.packed.len() + recent.len() * 3);
        let mut last: Option<u64> = None;
        let mut put = |out: &mut Vec<u8>, v: u64, c: u64| {
            let i = index_for_value(v);
            put_u64(out, last.map_or(i, |l| i - l));
            put_u64(out, c);
            last = Some(i);
        };
        let packed = std::mem::take(&mut self.packed);
        let mut old = unpack(&packed).peekable();
        let mut new = recent.into_iter().peekable();
        loop {
            match (old.peek().copied(), new.peek().copied()) {
                (Some(a), Some(b)) if a.0 == b.0 => {
                    put(&mut out, a.0, a.1 + b.1);
                    old.next();
                    new.next();
                }
                (Some(a), Some(b)) if a.0 < b.0 => {
                    put(&mut out, a.0, a.1);
                    old.next();
                }
                (_, Some(b)) => {
                    put(&mut out, b.0, b.1);
                    new.next();
                }
                (Some(a), None) => {
                    put(&mut out, a.0, a.1);
                    old.next();
                }
                (None, None) => break,
            }
        }
        out.shrink_to_fit();
        self.packed = out;
    }

    /// Everything added so far, as a histogram (sparse, or dense when large).
    pub fn to_hist(&self) -> LatencyHist {
        let buckets: Vec<(u64, u64)> = unpack(&self.packed).collect();
        let total = buckets.iter().map(|b| b.1).sum();
        let mut h = if total == 0 {
            LatencyHist::new()
        } else {
            LatencyHist {
                form: Form::Sparse { buckets, total },
            }
        };
        h += &self.recent;
        h
    }

    /// Heap bytes held (for memory accounting in tests and benchmarks).
    pub fn heap_bytes(&self) -> usize {
        self.packed.capacity()
            + match &self.recent.form {
                Form::Sparse { buckets, .. } => buckets.capacity() * 16,
                Form::Dense(h) => h.heap_bytes(),
                Form::Empty => 0,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::Histogram;
    use rand::{Rng, SeedableRng};

    /// HDR's own figures of one of its histograms: count, min, max, quantiles and the
    /// non-empty buckets as (highest equivalent value, count).
    fn hdr_figures(h: &Histogram<u64>) -> (u64, u64, u64, Vec<u64>, Vec<(u64, u64)>) {
        let qs = [0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];
        (
            h.len(),
            h.min(),
            h.max(),
            qs.iter().map(|&q| h.value_at_quantile(q)).collect(),
            h.iter_recorded()
                .map(|v| {
                    (
                        h.highest_equivalent(v.value_iterated_to()),
                        v.count_at_value(),
                    )
                })
                .collect(),
        )
    }

    /// The same figures of a `LatencyHist`.
    fn figures(h: &LatencyHist) -> (u64, u64, u64, Vec<u64>, Vec<(u64, u64)>) {
        let qs = [0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];
        (
            h.count(),
            h.min_ns(),
            h.max_ns(),
            qs.iter().map(|&q| h.quantile_ns(q)).collect(),
            h.buckets().collect(),
        )
    }

    fn hdr() -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(SIGFIG).unwrap();
        h.auto(true);
        h
    }

    /// The dense form, recorded value by value, gives every figure HDR's own histogram
    /// of the same values gives, from 1 ns to the top of the u64 range; so does its
    /// encoding, decoded by HDR; and it stays so after a reset and a reuse.
    #[test]
    fn dense_form_gives_every_figure_hdr_gives() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let mut ours = LatencyHist::new();
        ours.reserve(32_000);
        for round in 0..3 {
            let mut theirs = hdr();
            let n = [1usize, 5_000, 40_000][round];
            for _ in 0..n {
                let v = match rng.random_range(0..100) {
                    0 => rng.random_range(1..4_096),
                    1 => rng.random_range(1u64 << 40..u64::MAX / 2),
                    2..=5 => rng.random_range(1_000_000..5_000_000_000),
                    _ => rng.random_range(20_000..400_000),
                };
                let k = rng.random_range(1..4);
                ours.record_count(v, k);
                theirs.record_n(v, k).unwrap();
            }
            assert!(matches!(ours.form, Form::Dense(_)));
            assert_eq!(figures(&ours), hdr_figures(&theirs), "round {round}");
            let bytes = ours.to_v2_bytes();
            let back: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
            assert_eq!(hdr_figures(&back), hdr_figures(&theirs), "round {round}");
            // Taken, it is empty and its copy holds every figure.
            let taken = ours.take();
            assert!(ours.is_empty() && ours.buckets().next().is_none());
            assert_eq!(ours.quantile_ns(0.5), 0);
            assert_eq!(figures(&taken), hdr_figures(&theirs), "round {round}");
        }
        // The extremes of the range: every value has its bucket.
        let mut ours = LatencyHist::new();
        for v in [0, 1, 2047, 2048, 2049, u64::MAX / 4, u64::MAX] {
            ours.record(v);
        }
        assert_eq!(ours.count(), 7);
        assert_eq!(ours.min_ns(), 1);
        assert_eq!(ours.quantile_ns(0.5), 2049);
        assert!(ours.max_ns() >= u64::MAX - u64::MAX / 1000);
    }

    /// A reserved dense histogram holds its first chunks, and a far latency adds one
    /// chunk, not the range between.
    #[test]
    fn a_far_latency_costs_one_chunk() {
        let mut h = LatencyHist::new();
        h.reserve(32_000);
        let Form::Dense(c) = &h.form else {
            panic!("reserved dense")
        };
        let reserved = c.heap_bytes();
        assert_eq!(reserved as u64, dense_bytes(32_000));
        h.record(60_000_000);
        let Form::Dense(c) = &h.form else {
            panic!("still dense")
        };
        assert_eq!(c.heap_bytes(), reserved + CHUNK * 8);
        assert!(dense_bytes(60_000_000) > 2 * dense_bytes(32_000));
    }

    /// A reserved histogram is empty, and once recorded into holds exactly what a
    /// fresh one would; a reserve after records changes nothing.
    #[test]
    fn reserving_records_nothing() {
        let mut r = LatencyHist::new();
        r.reserve(32_000);
        assert_eq!(r.count(), 0);
        assert!(r.is_empty());
        let mut f = LatencyHist::new();
        for v in [150, 900, 31_000, 2_000_000] {
            r.record(v);
            f.record(v);
        }
        assert_eq!(r, f);
        assert_eq!(r.quantile_ns(0.5), f.quantile_ns(0.5));
        r.reserve(1_000_000_000);
        assert_eq!(r, f);
        assert_eq!(r.take(), f.take());
    }

    fn exact_quantile(sorted: &[u64], q: f64) -> u64 {
        // Same definition HDR uses: the smallest value v such that at least q of the
        // samples are <= v.
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    #[test]
    fn merged_equals_union_and_matches_raw_quantiles() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut parts: Vec<LatencyHist> = Vec::new();
        let mut all = Vec::new();
        for part in 0..5u64 {
            let mut h = LatencyHist::new();
            for _ in 0..20_000 {
                // Heavy tail: mostly ~100 µs, some up to 50 ms.
                let v = if rng.random_bool(0.01) {
                    rng.random_range(1_000_000..50_000_000)
                } else {
                    rng.random_range(50_000..150_000) * (part + 1)
                };
                h.record(v);
                all.push(v);
            }
            parts.push(h);
        }
        let mut merged = LatencyHist::new();
        for p in &parts {
            merged += p;
        }
        let mut union = LatencyHist::new();
        all.iter().for_each(|&v| union.record(v));
        assert_eq!(merged, union);
        all.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            let exact = exact_quantile(&all, q) as f64;
            let got = merged.quantile_ns(q) as f64;
            assert!(
                (got - exact).abs() <= exact * 0.001 + 1.0,
                "q={q}: hdr {got} vs exact {exact}"
            );
        }
        assert_eq!(merged.count(), all.len() as u64);
    }

    #[test]
    fn v2_round_trip() {
        let mut h = LatencyHist::new();
        for v in [1u64, 10, 1000, 123_456, 9_999_999_999] {
            h.record(v);
        }
        let back = LatencyHist::from_v2_bytes(&h.to_v2_bytes()).unwrap();
        assert_eq!(h, back);
        assert!(LatencyHist::from_v2_bytes(b"junk").is_err());
        // Another geometry (5 digits up to 2^63, which HDR would give 48 MB of counts)
        // is refused from its header.
        let mut foreign = Vec::new();
        for word in [0x1c84_9313u32, 0, 0, 5] {
            foreign.extend_from_slice(&word.to_be_bytes());
        }
        for word in [1u64, u64::MAX / 2, 1.0f64.to_bits()] {
            foreign.extend_from_slice(&word.to_be_bytes());
        }
        let e = LatencyHist::from_v2_bytes(&foreign).unwrap_err();
        assert!(
            e.contains("not an HDR V2 histogram of iofleet's geometry"),
            "{e}"
        );
    }

    /// A histogram with `n` latencies from a heavy-tailed mix, and the raw values.
    fn random_hist(seed: u64, n: usize) -> (LatencyHist, Vec<u64>) {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut h = LatencyHist::new();
        let mut raw = Vec::new();
        for _ in 0..n {
            let v = match rng.random_range(0..100) {
                0 => rng.random_range(1..2_000),
                1..=3 => rng.random_range(1_000_000..5_000_000_000),
                _ => rng.random_range(20_000..400_000),
            };
            h.record(v);
            raw.push(v);
        }
        (h, raw)
    }

    fn dense_copy(h: &LatencyHist) -> LatencyHist {
        let mut d = h.clone();
        d.dense();
        d
    }

    #[test]
    fn sparse_form_gives_every_figure_hdr_gives() {
        for (seed, n) in [(1, 1), (2, 7), (3, 300), (4, 50_000)] {
            let (dense, _) = random_hist(seed, n);
            let bytes = dense.to_v2_bytes();
            let sparse = LatencyHist::from_v2_bytes(&bytes).unwrap();
            assert!(matches!(sparse.form, Form::Sparse { .. }), "decoded sparse");
            assert_eq!(sparse, dense);
            assert_eq!(sparse.count(), dense.count());
            assert_eq!(sparse.min_ns(), dense.min_ns(), "n={n}");
            assert_eq!(sparse.max_ns(), dense.max_ns(), "n={n}");
            for q in [0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
                assert_eq!(sparse.quantile_ns(q), dense.quantile_ns(q), "n={n} q={q}");
            }
            // Re-encoding the sparse form gives the same histogram back, through our
            // decoder and through HDR's own.
            let again = sparse.to_v2_bytes();
            assert_eq!(LatencyHist::from_v2_bytes(&again).unwrap(), dense);
            let hdr: Histogram<u64> = Deserializer::new().deserialize(&mut &again[..]).unwrap();
            assert_eq!(hdr_figures(&hdr), figures(&dense));
            // Taking a dense histogram leaves it empty and gives its sparse copy.
            let mut d = dense.clone();
            let t = d.take();
            assert!(d.is_empty() && matches!(d.form, Form::Dense(_)));
            assert!(matches!(t.form, Form::Sparse { .. }));
            assert_eq!(t, dense);
        }
    }

    #[test]
    fn merging_either_form_gives_the_same_histogram() {
        let parts: Vec<(LatencyHist, Vec<u64>)> = (0..40)
            .map(|i| random_hist(100 + i, 40 + 25 * i as usize))
            .collect();
        let mut all_dense = LatencyHist::new();
        let mut all_sparse = LatencyHist::new();
        let mut sparse_into_dense = LatencyHist::new();
        sparse_into_dense.record(5); // start dense
        let mut union = LatencyHist::new();
        union.record(5);
        for (h, raw) in &parts {
            let s = LatencyHist::from_v2_bytes(&h.to_v2_bytes()).unwrap();
            all_dense += &dense_copy(h);
            all_sparse += &s;
            sparse_into_dense += &s;
            raw.iter().for_each(|&v| union.record(v));
        }
        // Enough distinct buckets that the sparse sum turned dense on the way.
        assert!(matches!(all_sparse.form, Form::Dense(_)));
        assert_eq!(all_sparse, all_dense);
        assert_eq!(sparse_into_dense, union);
        // Sparse + dense, and small sparse sums that stay sparse.
        let (a, _) = random_hist(7, 20);
        let (b, _) = random_hist(8, 20);
        let (sa, sb) = (
            LatencyHist::from_v2_bytes(&a.to_v2_bytes()).unwrap(),
            LatencyHist::from_v2_bytes(&b.to_v2_bytes()).unwrap(),
        );
        let mut x = sa.clone();
        x += &sb;
        assert!(matches!(x.form, Form::Sparse { .. }));
        let mut y = a.clone();
        y += &b;
        assert_eq!(x, y);
        let mut z = sa.clone();
        z += &b;
        assert_eq!(z, y);
        // Recording into a sparse histogram keeps what it had.
        let mut r = sa.clone();
        r.record(123);
        let mut r2 = a.clone();
        r2.record(123);
        assert_eq!(r, r2);
    }

    #[test]
    fn packed_totals_equal_the_merged_histogram_and_stay_small() {
        let mut packed = PackedHist::new();
        let mut merged = LatencyHist::new();
        for i in 0..300 {
            let (h, _) = random_hist(1000 + i, 20);
            let s = LatencyHist::from_v2_bytes(&h.to_v2_bytes()).unwrap();
            packed.add(&s);
            merged += &h;
            if i % 37 == 0 {
                assert_eq!(packed.to_hist(), merged, "after {i} merges");
            }
        }
        let total = packed.to_hist();
        assert_eq!(total, merged);
        for q in [0.5, 0.99, 0.999, 1.0] {
            assert_eq!(total.quantile_ns(q), merged.quantile_ns(q));
        }
        // A few bytes per non-empty bucket, far below the dense counts array.
        let buckets = merged.buckets().count();
        assert!(
            packed.heap_bytes() < buckets * 8 + 20 * 16 * 16,
            "{} B",
            packed.heap_bytes()
        );
        assert!(PackedHist::new().to_hist().is_empty());
    }

    #[test]
    fn empty_is_zero() {
        let h = LatencyHist::new();
        assert_eq!(h.quantile_ns(0.99), 0);
        assert_eq!(h.max_ns(), 0);
    }
}
