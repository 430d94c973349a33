//! Counters for completed I/O. `OpStats` covers one direction (reads or writes) of one
//! stream; `StreamStats` pairs the two; `Sample` holds one `StreamStats` per stream of the
//! profile and is what a thread hands over at the end of every interval. Sums of
//! latencies and of their squares are kept exactly (u128 nanoseconds), so mean, standard
//! deviation and mean outstanding I/O merge without rounding.

use std::ops::AddAssign;

use crate::hist::LatencyHist;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpStats {
    /// Completed I/Os (successful).
    pub ios: u64,
    /// Bytes transferred by them.
    pub bytes: u64,
    /// I/Os that completed with an error (not counted in `ios`).
    pub errors: u64,
    /// Σ latency (ns) over completed I/Os.
    pub latency_sum_ns: u128,
    /// Σ latency² (ns²) over completed I/Os.
    pub latency_sq_sum_ns2: u128,
    pub hist: LatencyHist,
}

impl OpStats {
    #[inline]
    pub fn record(&mut self, latency_ns: u64, bytes: u64) {
        self.ios += 1;
        self.bytes += bytes;
        self.latency_sum_ns += latency_ns as u128;
        self.latency_sq_sum_ns2 += (latency_ns as u128) * (latency_ns as u128);
        self.hist.record(latency_ns);
    }

    #[inline]
    pub fn record_error(&mut self) {
        self.errors += 1;
    }

    /// Exact mean latency in ns (0 when empty).
    pub fn mean_ns(&self) -> f64 {
        if self.ios == 0 {
            0.0
        } else {
            self.latency_sum_ns as f64 / self.ios as f64
        }
    }

    /// Population standard deviation of latency in ns.
    pub fn stddev_ns(&self) -> f64 {
        if self.ios == 0 {
            return 0.0;
        }
        let n = self.ios as f64;
        let mean = self.latency_sum_ns as f64 / n;
        let var = self.latency_sq_sum_ns2 as f64 / n - mean * mean;
        var.max(0.0).sqrt()
    }
}

impl AddAssign<&OpStats> for OpStats {
    fn add_assign(&mut self, rhs: &OpStats) {
        self.ios += rhs.ios;
        self.bytes += rhs.bytes;
        self.errors += rhs.errors;
        self.latency_sum_ns += rhs.latency_sum_ns;
        self.latency_sq_sum_ns2 += rhs.latency_sq_sum_ns2;
        self.hist += &rhs.hist;
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamStats {
    pub read: OpStats,
    pub write: OpStats,
}

impl StreamStats {
    /// Reads and writes together.
    pub fn all(&self) -> OpStats {
        let mut all = self.read.clone();
        all += &self.write;
        all
    }
}

impl AddAssign<&StreamStats> for StreamStats {
    fn add_assign(&mut self, rhs: &StreamStats) {
        self.read += &rhs.read;
        self.write += &rhs.write;
    }
}

/// Stats of one span (an interval, or a whole phase) for some part of the fleet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// One entry per stream of the plan, in plan order.
    pub streams: Vec<StreamStats>,
}

impl Sample {
    pub fn new(streams: usize) -> Self {
        Sample {
            streams: vec![StreamStats::default(); streams],
        }
    }

    pub fn read(&self) -> OpStats {
        let mut r = OpStats::default();
        self.streams.iter().for_each(|s| r += &s.read);
        r
    }

    pub fn write(&self) -> OpStats {
        let mut w = OpStats::default();
        self.streams.iter().for_each(|s| w += &s.write);
        w
    }

    pub fn all(&self) -> OpStats {
        let mut a = self.read();
        a += &self.write();
        a
    }

    pub fn ios(&self) -> u64 {
        self.streams.iter().map(|s| s.read.ios + s.write.ios).sum()
    }

    pub fn errors(&self) -> u64 {
        self.streams
            .iter()
            .map(|s| s.read.errors + s.write.errors)
            .sum()
    }
}

impl AddAssign<&Sample> for Sample {
    fn add_assign(&mut self, rhs: &Sample) {
        if self.streams.len() < rhs.streams.len() {
            self.streams
                .resize(rhs.streams.len(), StreamStats::default());
        }
        for (a, b) in self.streams.iter_mut().zip(&rhs.streams) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_stddev_are_exact_and_merge() {
        let xs = [100u64, 200, 300, 400, 1000];
        let mut a = OpStats::default();
        let mut b = OpStats::default();
        for (i, &x) in xs.iter().enumerate() {
            if i % 2 == 0 {
                a.record(x, 4096)
            } else {
                b.record(x, 4096)
            }
        }
        a += &b;
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<u64>() as f64 / n;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        assert_eq!(a.ios, 5);
        assert_eq!(a.bytes, 5 * 4096);
        assert!((a.mean_ns() - mean).abs() < 1e-9);
        assert!((a.stddev_ns() - var.sqrt()).abs() < 1e-6);
    }

    #[test]
    fn sample_totals() {
        let mut s = Sample::new(2);
        s.streams[0].read.record(10, 512);
        s.streams[1].write.record(20, 1024);
        s.streams[1].write.record_error();
        let mut t = Sample::new(2);
        t += &s;
        t += &s;
        assert_eq!(t.read().ios, 2);
        assert_eq!(t.write().bytes, 2048);
        assert_eq!(t.all().ios, 4);
        assert_eq!(t.errors(), 2);
    }
}
