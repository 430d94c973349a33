//! `LatencyHist`: an HDR histogram of latencies in nanoseconds with 3 significant digits
//! (every recorded value is kept within 0.1% of itself), auto-resizing so no latency is
//! ever out of range. Merging is exact: the merged histogram equals the histogram of the
//! union of the samples. Serialises to the compact HDR V2 encoding for storage.
//! The bucket array is allocated on the first record: an empty histogram costs nothing,
//! which matters when a controller holds thousands of workers' intervals.

use std::ops::AddAssign;

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

/// Significant decimal digits kept by every latency histogram.
pub const SIGFIG: u8 = 3;

#[derive(Clone, Debug)]
pub struct LatencyHist {
    h: Option<Histogram<u64>>,
}

fn fresh() -> Histogram<u64> {
    // Auto-resizing from a small initial range: memory follows the largest latency
    // seen, and recording never fails for being out of range.
    let mut h = Histogram::<u64>::new(SIGFIG).expect("static histogram bounds are valid");
    h.auto(true);
    h
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

impl LatencyHist {
    pub fn new() -> Self {
        LatencyHist { h: None }
    }

    /// Record one latency in nanoseconds (0 is recorded as 1 ns).
    #[inline]
    pub fn record(&mut self, latency_ns: u64) {
        let h = self.h.get_or_insert_with(fresh);
        // With auto-resize on, `record` only fails if memory cannot be grown; saturate then.
        if h.record(latency_ns.max(1)).is_err() {
            h.saturating_record(latency_ns.max(1));
        }
    }

    pub fn count(&self) -> u64 {
        self.h.as_ref().map_or(0, |h| h.len())
    }

    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Value at quantile `q` in 0..=1, in nanoseconds (0 when empty).
    pub fn quantile_ns(&self, q: f64) -> u64 {
        match &self.h {
            Some(h) if !h.is_empty() => h.value_at_quantile(q),
            _ => 0,
        }
    }

    pub fn max_ns(&self) -> u64 {
        match &self.h {
            Some(h) if !h.is_empty() => h.max(),
            _ => 0,
        }
    }

    pub fn min_ns(&self) -> u64 {
        match &self.h {
            Some(h) if !h.is_empty() => h.min(),
            _ => 0,
        }
    }

    pub fn reset(&mut self) {
        if let Some(h) = self.h.as_mut() {
            h.reset();
        }
    }

    /// Every (highest equivalent value, count) bucket with a non-zero count, ascending.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.h.iter().flat_map(|h| {
            h.iter_recorded().map(|v| {
                (
                    h.highest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                )
            })
        })
    }

    /// Compact HDR V2 encoding (for the results store and the agent protocol); an
    /// empty histogram encodes as zero bytes.
    pub fn to_v2_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(h) = self.h.as_ref().filter(|h| !h.is_empty()) {
            V2Serializer::new()
                .serialize(h, &mut out)
                .expect("serialising into a Vec cannot fail");
        }
        out
    }

    pub fn from_v2_bytes(bytes: &[u8]) -> Result<Self, String> {
        if bytes.is_empty() {
            return Ok(LatencyHist::new());
        }
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| format!("bad histogram encoding: {e:?}"))?;
        h.auto(true);
        Ok(LatencyHist { h: Some(h) })
    }
}

impl AddAssign<&LatencyHist> for LatencyHist {
    fn add_assign(&mut self, rhs: &LatencyHist) {
        let Some(r) = rhs.h.as_ref().filter(|r| !r.is_empty()) else {
            return;
        };
        match self.h.as_mut() {
            None => self.h = Some(r.clone()),
            // Auto-resize makes `add` infallible except on allocation failure.
            Some(h) => h.add(r).expect("auto-resizing histogram accepts any range"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

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
    }

    #[test]
    fn empty_is_zero() {
        let h = LatencyHist::new();
        assert_eq!(h.quantile_ns(0.99), 0);
        assert_eq!(h.max_ns(), 0);
    }
}
