//! What a relay sends up of each host below it per interval (`HostBrief`): the
//! counters, the latency sum and the quantiles the interval rows show, taken from the
//! host's own merged histogram, so its rows are exact without the histogram. The relay
//! builds it, the controller draws the host's rows from it, and the results store keeps
//! it (the store recomputes such a host's rows from it: it never had the histogram).

use serde::{Deserialize, Serialize};

use crate::result::{IntervalOps, IntervalRow, PartRow};
use crate::{HostUsage, OpStats, Sample};
/// One direction (or both) of a host's interval, as the interval rows need it: the
/// counters, the latency sum, and the quantiles `IntervalOps` shows, in ns, from the
/// host's merged histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpsBrief {
    pub ios: u64,
    pub bytes: u64,
    pub errors: u64,
    pub latency_sum_ns: u128,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p99_9_ns: u64,
    pub max_ns: u64,
}

impl OpsBrief {
    pub fn of(o: &OpStats) -> Self {
        OpsBrief {
            ios: o.ios,
            bytes: o.bytes,
            errors: o.errors,
            latency_sum_ns: o.latency_sum_ns,
            p50_ns: o.hist.quantile_ns(0.5),
            p90_ns: o.hist.quantile_ns(0.9),
            p99_ns: o.hist.quantile_ns(0.99),
            p99_9_ns: o.hist.quantile_ns(0.999),
            max_ns: o.hist.max_ns(),
        }
    }

    /// The row figures over an interval of `duration_s` seconds: what
    /// `IntervalOps::from_ops` gives for the sample this brief was taken from.
    pub fn interval_ops(&self, duration_s: f64) -> IntervalOps {
        let rate = |x: u64| {
            if duration_s > 0.0 {
                x as f64 / duration_s
            } else {
                0.0
            }
        };
        let us = |ns: u64| ns as f64 / 1000.0;
        let known = self.ios > 0;
        IntervalOps {
            ios: self.ios,
            iops: rate(self.ios),
            mbps: rate(self.bytes) / 1e6,
            mean_us: known.then(|| self.latency_sum_ns as f64 / self.ios as f64 / 1000.0),
            p50_us: known.then(|| us(self.p50_ns)),
            p90_us: known.then(|| us(self.p90_ns)),
            p99_us: known.then(|| us(self.p99_ns)),
            p99_9_us: known.then(|| us(self.p99_9_ns)),
            max_us: known.then(|| us(self.max_ns)),
        }
    }
}

/// One host's interval below a relay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostBrief {
    /// The host, as the controller numbers them (`Prepared::hosts`).
    pub host: u32,
    pub all: OpsBrief,
    pub read: OpsBrief,
    pub write: OpsBrief,
    /// What the host spent over the interval, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<HostUsage>,
}

impl HostBrief {
    /// The brief of `host`'s merged sample `s`.
    pub fn of(host: u32, s: &Sample, usage: Option<HostUsage>) -> Self {
        let (read, write) = (s.read(), s.write());
        let mut all = read.clone();
        all += &write;
        HostBrief {
            host,
            all: OpsBrief::of(&all),
            read: OpsBrief::of(&read),
            write: OpsBrief::of(&write),
            usage,
        }
    }
}

impl HostBrief {
    /// The host's row of interval `index`, `duration_s` long as the collector cut it:
    /// what `PartRow::from_sample` gives for the host's merged sample.
    pub fn row(&self, index: u32, duration_s: f64) -> PartRow {
        PartRow {
            index,
            all: self.all.interval_ops(duration_s),
            read: self.read.interval_ops(duration_s),
            write: self.write.interval_ops(duration_s),
            usage: None,
        }
    }

    /// The host's row of interval `index` as a fleet interval row (the report's series
    /// of the host over time): what `IntervalRow::from_sample` gives for the host's
    /// merged sample.
    pub fn interval_row(
        &self,
        index: u32,
        t_s: f64,
        duration_s: f64,
        warmup: bool,
        hosts_lost: u32,
    ) -> IntervalRow {
        let (all, read, write) = (
            self.all.interval_ops(duration_s),
            self.read.interval_ops(duration_s),
            self.write.interval_ops(duration_s),
        );
        IntervalRow {
            index,
            t_s,
            duration_s,
            warmup,
            ios: all.ios,
            iops: all.iops,
            mbps: all.mbps,
            read_iops: read.iops,
            write_iops: write.iops,
            p50_us: all.p50_us,
            p99_us: all.p99_us,
            read_p50_us: read.p50_us,
            read_p99_us: read.p99_us,
            write_p50_us: write.p50_us,
            write_p99_us: write.p99_us,
            errors: self.all.errors,
            hosts_lost,
            generator: None,
            all,
            read,
            write,
            net: None,
            observers: None,
        }
    }
}

/// What relays sent of one interval for the hosts below them: per group (the run's
/// order) their workers' merged sample, and per host below a relay its brief. Empty in
/// a run without relays.
#[derive(Debug, Clone, Copy, Default)]
pub struct Relayed<'a> {
    pub groups: &'a [Sample],
    pub hosts: &'a [HostBrief],
}

/// Per host, the brief of its merged sample (`per_host`), or the one `relayed` holds
/// for it (a host below a relay).
pub fn briefs_of(per_host: &[Sample], relayed: &[HostBrief]) -> Vec<HostBrief> {
    let mut briefs: Vec<HostBrief> = per_host
        .iter()
        .enumerate()
        .map(|(h, s)| HostBrief::of(h as u32, s, None))
        .collect();
    for b in relayed {
        if let Some(slot) = briefs.get_mut(b.host as usize) {
            *slot = HostBrief {
                usage: None,
                ..b.clone()
            };
        }
    }
    briefs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A brief's rows are the rows of the sample it was taken from, figure for figure.
    #[test]
    fn a_briefs_rows_are_its_samples_rows() {
        let mut s = Sample::new(2);
        for (i, ns) in [61_013u64, 97_021, 1_900_043, 250_019, 52_003]
            .iter()
            .enumerate()
        {
            s.streams[i % 2].read.record(*ns, 4096);
            s.streams[1].write.record(ns * 3, 8192);
        }
        s.streams[0].write.record_error();
        let b = HostBrief::of(7, &s, None);
        assert_eq!(b.row(4, 0.5), PartRow::from_sample(4, 0.5, &s));
        assert_eq!(
            b.interval_row(4, 2.0, 0.5, true, 1),
            IntervalRow::from_sample(4, 2.0, 0.5, true, 1, &s)
        );
        let empty = Sample::new(1);
        assert_eq!(
            HostBrief::of(0, &empty, None).interval_row(0, 0.0, 0.0, false, 0),
            IntervalRow::from_sample(0, 0.0, 0.0, false, 0, &empty)
        );
    }
}
