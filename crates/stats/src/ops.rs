//! Counters for completed I/O. `OpStats` covers one direction (reads or writes) of one
//! stream; `StreamStats` pairs the two; `Sample` holds one `StreamStats` per stream of the
//! profile and is what a thread hands over at the end of every interval. Sums of
//! latencies and of their squares are kept exactly (u128 nanoseconds), so mean, standard
//! deviation and mean outstanding I/O merge without rounding.

use std::ops::AddAssign;

use crate::hist::{LatencyHist, PackedHist};

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

impl OpStats {
    /// This interval's figures, leaving `self` zeroed for the next (its histogram keeps
    /// its allocation; the copy is sparse).
    pub fn take(&mut self) -> OpStats {
        let out = OpStats {
            ios: self.ios,
            bytes: self.bytes,
            errors: self.errors,
            latency_sum_ns: self.latency_sum_ns,
            latency_sq_sum_ns2: self.latency_sq_sum_ns2,
            hist: self.hist.take(),
        };
        self.ios = 0;
        self.bytes = 0;
        self.errors = 0;
        self.latency_sum_ns = 0;
        self.latency_sq_sum_ns2 = 0;
        out
    }
}

impl Sample {
    /// This interval's sample, leaving `self` zeroed and ready for the next.
    pub fn take(&mut self) -> Sample {
        Sample {
            streams: self
                .streams
                .iter_mut()
                .map(|s| StreamStats {
                    read: s.read.take(),
                    write: s.write.take(),
                })
                .collect(),
        }
    }
}

/// A long-lived total of many samples (a worker's over a whole run): counters exact,
/// histograms packed (`PackedHist`), so thousands of them fit in little memory.
#[derive(Clone, Debug, Default)]
pub struct PackedSample {
    counters: Sample,
    hists: Vec<[PackedHist; 2]>,
}

impl PackedSample {
    pub fn new(streams: usize) -> Self {
        PackedSample {
            counters: Sample::new(streams),
            hists: vec![Default::default(); streams],
        }
    }

    pub fn add(&mut self, s: &Sample) {
        if self.hists.len() < s.streams.len() {
            self.hists.resize(s.streams.len(), Default::default());
            self.counters
                .streams
                .resize(s.streams.len(), StreamStats::default());
        }
        for ((tot, h), r) in self
            .counters
            .streams
            .iter_mut()
            .zip(self.hists.iter_mut())
            .zip(&s.streams)
        {
            for (i, (t, o)) in [(&mut tot.read, &r.read), (&mut tot.write, &r.write)]
                .into_iter()
                .enumerate()
            {
                t.ios += o.ios;
                t.bytes += o.bytes;
                t.errors += o.errors;
                t.latency_sum_ns += o.latency_sum_ns;
                t.latency_sq_sum_ns2 += o.latency_sq_sum_ns2;
                h[i].add(&o.hist);
            }
        }
    }

    /// The total as a `Sample`.
    pub fn to_sample(&self) -> Sample {
        let mut s = self.counters.clone();
        for (st, h) in s.streams.iter_mut().zip(&self.hists) {
            st.read.hist = h[0].to_hist();
            st.write.hist = h[1].to_hist();
        }
        s
    }
}

/// Binary wire form of a `Sample` (agent protocol, results store): per stream, per
/// direction, the counters little-endian, then the histogram in HDR V2 encoding.
impl Sample {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.streams.len() as u32).to_le_bytes());
        for s in &self.streams {
            for o in [&s.read, &s.write] {
                out.extend_from_slice(&o.ios.to_le_bytes());
                out.extend_from_slice(&o.bytes.to_le_bytes());
                out.extend_from_slice(&o.errors.to_le_bytes());
                out.extend_from_slice(&o.latency_sum_ns.to_le_bytes());
                out.extend_from_slice(&o.latency_sq_sum_ns2.to_le_bytes());
                let h = o.hist.to_v2_bytes();
                out.extend_from_slice(&(h.len() as u32).to_le_bytes());
                out.extend_from_slice(&h);
            }
        }
    }

    /// Decode one `Sample` from the front of `input`, advancing it.
    pub fn decode(input: &mut &[u8]) -> Result<Sample, String> {
        fn take<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
            if input.len() < n {
                return Err("truncated sample".into());
            }
            let (a, b) = input.split_at(n);
            *input = b;
            Ok(a)
        }
        let u32_ = |i: &mut &[u8]| -> Result<u32, String> {
            Ok(u32::from_le_bytes(take(i, 4)?.try_into().unwrap()))
        };
        let u64_ = |i: &mut &[u8]| -> Result<u64, String> {
            Ok(u64::from_le_bytes(take(i, 8)?.try_into().unwrap()))
        };
        let u128_ = |i: &mut &[u8]| -> Result<u128, String> {
            Ok(u128::from_le_bytes(take(i, 16)?.try_into().unwrap()))
        };
        let n = u32_(input)? as usize;
        if n > 1 << 16 {
            return Err(format!("implausible stream count {n}"));
        }
        // Each stream takes at least its counters and two histogram lengths: a count
        // the bytes cannot hold is refused before the streams are allocated.
        if n.saturating_mul(2 * (3 * 8 + 2 * 16 + 4)) > input.len() {
            return Err(format!(
                "truncated sample: {n} streams in {} bytes",
                input.len()
            ));
        }
        let mut sample = Sample::new(n);
        for s in sample.streams.iter_mut() {
            for o in [&mut s.read, &mut s.write] {
                o.ios = u64_(input)?;
                o.bytes = u64_(input)?;
                o.errors = u64_(input)?;
                o.latency_sum_ns = u128_(input)?;
                o.latency_sq_sum_ns2 = u128_(input)?;
                let len = u32_(input)? as usize;
                o.hist = LatencyHist::from_v2_bytes(take(input, len)?)?;
            }
        }
        Ok(sample)
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
    fn sample_wire_round_trip() {
        let mut s = Sample::new(3);
        s.streams[0].read.record(123_456, 4096);
        s.streams[2].write.record(9_999_999, 65536);
        s.streams[2].write.record_error();
        let mut buf = Vec::new();
        s.encode(&mut buf);
        Sample::new(1).encode(&mut buf);
        let mut input = &buf[..];
        assert_eq!(Sample::decode(&mut input).unwrap(), s);
        assert_eq!(Sample::decode(&mut input).unwrap(), Sample::new(1));
        assert!(input.is_empty());
        assert!(Sample::decode(&mut &buf[..10]).is_err());
        // 65,536 streams claimed by 4 bytes: refused before any is allocated.
        let e = Sample::decode(&mut &(1u32 << 16).to_le_bytes()[..]).unwrap_err();
        assert_eq!(e, "truncated sample: 65536 streams in 0 bytes");
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
