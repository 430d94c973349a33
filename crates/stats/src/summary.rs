//! Turning accumulated `OpStats` into reportable figures: rates over an elapsed time and
//! latency percentiles in microseconds. Percentiles come from the (merged) histogram;
//! mean and standard deviation from exact sums.

use serde::{Deserialize, Serialize};

use crate::ops::OpStats;

/// Latency figures in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub p99_99: f64,
    pub max: f64,
}

impl LatencySummary {
    pub fn from_ops(s: &OpStats) -> Self {
        let us = |ns: u64| ns as f64 / 1000.0;
        let h = &s.hist;
        LatencySummary {
            mean: s.mean_ns() / 1000.0,
            stddev: s.stddev_ns() / 1000.0,
            min: us(h.min_ns()),
            p50: us(h.quantile_ns(0.50)),
            p90: us(h.quantile_ns(0.90)),
            p95: us(h.quantile_ns(0.95)),
            p99: us(h.quantile_ns(0.99)),
            p99_9: us(h.quantile_ns(0.999)),
            p99_99: us(h.quantile_ns(0.9999)),
            max: us(h.max_ns()),
        }
    }
}

/// One direction (or both) over a span: counts, rates and latency.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpSummary {
    pub ios: u64,
    pub bytes: u64,
    pub errors: u64,
    pub iops: f64,
    /// Throughput in MB/s (10^6 bytes per second).
    pub mbps: f64,
    /// None when no I/O completed: a direction without I/O has no latencies.
    pub latency_us: Option<LatencySummary>,
}

impl OpSummary {
    pub fn from_ops(s: &OpStats, elapsed_s: f64) -> Self {
        let per_s = |x: f64| if elapsed_s > 0.0 { x / elapsed_s } else { 0.0 };
        OpSummary {
            ios: s.ios,
            bytes: s.bytes,
            errors: s.errors,
            iops: per_s(s.ios as f64),
            mbps: per_s(s.bytes as f64) / 1e6,
            latency_us: (s.ios > 0).then(|| LatencySummary::from_ops(s)),
        }
    }

    /// One latency figure (µs), None when no I/O completed.
    pub fn lat(&self, f: impl Fn(&LatencySummary) -> f64) -> Option<f64> {
        self.latency_us.as_ref().map(f)
    }
}

/// Whether a measured interval of `duration_ns` counts in the IOPS median of intervals
/// `nominal_ns` long: one shorter than half of it (the last one, cut short by the run's
/// end) would understate the rate, and is left out.
pub fn counts_in_median(duration_ns: u64, nominal_ns: u64) -> bool {
    duration_ns * 2 >= nominal_ns
}

/// Median of a list of values (mean of the two middle values for an even count); 0 for
/// an empty list (see `median_of` for the undefined case).
pub fn median(values: &[f64]) -> f64 {
    median_of(values).unwrap_or(0.0)
}

/// Median of a list of values; None for an empty list.
pub fn median_of(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_percentiles() {
        let mut s = OpStats::default();
        for i in 1..=1000u64 {
            s.record(i * 1000, 4096);
        }
        let sum = OpSummary::from_ops(&s, 2.0);
        assert_eq!(sum.iops, 500.0);
        assert!((sum.mbps - 1000.0 * 4096.0 / 2.0 / 1e6).abs() < 1e-9);
        let l = sum.latency_us.unwrap();
        assert!((l.p50 - 500.0).abs() <= 0.5);
        assert!((l.p99 - 990.0).abs() <= 1.0);
        assert!((l.max - 1000.0).abs() <= 1.0);
        assert!((l.mean - 500.5).abs() < 1e-9);
    }

    #[test]
    fn no_io_has_no_latency() {
        let sum = OpSummary::from_ops(&OpStats::default(), 2.0);
        assert_eq!(sum.ios, 0);
        assert_eq!(sum.latency_us, None);
        assert_eq!(sum.lat(|l| l.mean), None);
    }

    #[test]
    fn median_even_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median_of(&[]), None);
    }
}
