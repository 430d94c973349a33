//! The generator's self-check: how much of a result the load generator itself may have
//! set. Each I/O thread reports, per interval, the wall time it ran, the CPU time it
//! used, the time it spent runnable but waiting for a CPU (the kernel's run-queue
//! delay), the I/Os it completed, and how late it issued open-loop I/Os against their
//! intended times (a slot was free, the thread was simply late), and how long
//! completions may have waited to be reaped while the thread was busy elsewhere. Amounts
//! are raw, so
//! threads, hosts and intervals add up with `+=`; `GenSample::summary` turns them into
//! shares and per-I/O figures and `warnings` says when they are large enough to doubt
//! the storage's numbers.
//!
//! Contention from other work on the host is judged by what it does to the I/Os in
//! flight, not per completed I/O: while an I/O thread waits for a CPU, every I/O it has
//! outstanding waits too (its completion is seen, and timed, only when the thread runs).
//! Each thread's run-queue delay in a span is weighed by its I/Os in flight over that
//! span (Little's law: the sum of their latencies over the span's wall time), which
//! estimates the latency the I/Os absorbed. Waiting alone does not prove another load
//! (waking an idle vCPU is a run-queue delay too), so the contention warning also needs
//! CPU used by other processes on the host (`OtherLoad`, from the host's usage).
//! docs/lanes.md has the calibration behind the thresholds.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use crate::hist::LatencyHist;
use crate::OpStats;

/// An I/O thread over this share of its wall time on a CPU is flagged.
pub const BUSY_WARN: f64 = 0.90;
/// Open-loop issue lag (p99) over this is flagged: the schedule slipped by more than
/// timer wake-ups on a virtual machine explain (tens to a few hundred µs).
pub const LAG_WARN_NS: u64 = 1_000_000;
/// Another load on the host: processes other than iofleet using at least this many
/// CPUs' worth (summed over the host's CPUs) ...
pub const OTHER_LOAD_WARN_CPUS: f64 = 0.25;
/// ... while the I/O threads spent over this share of their time runnable but waiting
/// for a CPU is flagged. Quiet runs on an idle virtual machine wait 7–8% of the time
/// just to wake an idle vCPU, so waiting alone, without another load, is not.
pub const CONTENDED_RUNQ: f64 = 0.02;
/// Another load of at least this many CPUs' worth is flagged even when the I/O threads
/// seldom waited for a CPU: a neighbour still shares the caches, the memory bandwidth
/// and, on SMT or virtual CPUs, the cores (one busy loop beside one I/O thread on this
/// project's test machine: no wait at all in some runs, 10% fewer IOPS).
pub const NEIGHBOUR_WARN_CPUS: f64 = 0.5;
/// I/O threads runnable but not running over this share of their time is flagged
/// whatever else runs (the generator's own threads outnumber the CPUs).
pub const RUNQ_SHARE_WARN: f64 = 0.25;

/// Other work on a host while the I/O threads ran: CPU used by every process but
/// iofleet (the host's busy time less iofleet's), in CPUs' worth, out of the host's
/// CPUs. For a fleet, the host with the most.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OtherLoad {
    pub cpus: f64,
    pub of_cpus: f64,
}

/// Raw amounts from one or more I/O threads over one span.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GenSample {
    /// I/O threads folded in (per interval: the threads that ran).
    pub threads: u32,
    /// Wall time the threads ran, summed over threads (ns).
    pub wall_ns: u64,
    /// CPU time the threads used, summed (ns).
    pub busy_ns: u64,
    /// The busiest single thread's share (0..1) of a span spent running or runnable
    /// (waiting for a CPU), i.e. never idle, in any span folded in. A thread at 1 never
    /// waited for the device or a timer: the generator, not the storage, set its pace.
    pub max_busy: f64,
    /// Time runnable but waiting for a CPU, summed; None when a thread could not
    /// tell (kernels without schedstats).
    pub runq_ns: Option<u64>,
    /// Times the threads were put on a CPU, summed (None as for `runq_ns`).
    #[serde(default)]
    pub slices: Option<u64>,
    /// The highest share (0..1) of a span a single thread spent runnable but waiting for
    /// a CPU, in any span folded in.
    #[serde(default)]
    pub max_runq: f64,
    /// Latency of the I/Os the threads completed, summed (ns): by Little's law, I/Os in
    /// flight integrated over the span.
    #[serde(default)]
    pub io_time_ns: u64,
    /// Latency those I/Os absorbed while their thread waited for a CPU, estimated per
    /// thread and span as run-queue delay × mean I/Os in flight (`io_time_ns / wall_ns`),
    /// summed (ns; None as for `runq_ns`).
    #[serde(default)]
    pub absorbed_ns: Option<u64>,
    /// I/Os the threads completed.
    pub ios: u64,
    /// Open-loop issue lag: time from an I/O's intended start, with a slot free, to
    /// its queueing.
    #[serde(with = "hist_bytes")]
    pub lag: LatencyHist,
    /// Reap wait bound, one value per completion: the time the thread spent away from its
    /// wait (issuing, recording) before the wait that reaped it. A completion that became
    /// ready in that span waited at most this long to be seen and timestamped; one that
    /// became ready during the wait, about nothing.
    #[serde(default, with = "hist_bytes")]
    pub reap: LatencyHist,
}

mod hist_bytes {
    use crate::hist::LatencyHist;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(h: &LatencyHist, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&h.to_v2_bytes())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LatencyHist, D::Error> {
        let bytes = Vec::<u8>::deserialize(d)?;
        LatencyHist::from_v2_bytes(&bytes).map_err(serde::de::Error::custom)
    }
}

impl AddAssign<&GenSample> for GenSample {
    fn add_assign(&mut self, o: &GenSample) {
        // An empty sample is the identity (it must not turn a known delay unknown).
        if o.threads == 0 {
            return;
        }
        let sum = |a: Option<u64>, b: Option<u64>| match (self.threads, a, b) {
            (0, _, b) => b,
            (_, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.runq_ns = sum(self.runq_ns, o.runq_ns);
        self.slices = sum(self.slices, o.slices);
        self.absorbed_ns = sum(self.absorbed_ns, o.absorbed_ns);
        self.max_runq = self.max_runq.max(o.max_runq);
        self.io_time_ns += o.io_time_ns;
        self.threads += o.threads;
        self.wall_ns += o.wall_ns;
        self.busy_ns += o.busy_ns;
        self.max_busy = self.max_busy.max(o.max_busy);
        self.ios += o.ios;
        self.lag += &o.lag;
        self.reap += &o.reap;
    }
}

impl GenSample {
    /// One thread's span: `busy_ns` of CPU and `runq_ns` waiting for one, over
    /// `wall_ns` of wall time.
    pub fn thread_span(wall_ns: u64, busy_ns: u64, runq_ns: Option<u64>, ios: u64) -> Self {
        GenSample {
            threads: 1,
            wall_ns,
            busy_ns,
            max_busy: if wall_ns == 0 {
                0.0
            } else {
                ((busy_ns + runq_ns.unwrap_or(0)) as f64 / wall_ns as f64).min(1.0)
            },
            runq_ns,
            slices: None,
            max_runq: match runq_ns {
                Some(r) if wall_ns > 0 => (r as f64 / wall_ns as f64).min(1.0),
                _ => 0.0,
            },
            io_time_ns: 0,
            absorbed_ns: runq_ns.map(|_| 0),
            ios,
            lag: LatencyHist::new(),
            reap: LatencyHist::new(),
        }
    }

    /// The span's I/Os in flight and scheduling count: `io_time_ns` is the summed
    /// latency of the I/Os the thread completed in the span, `slices` the times it was
    /// put on a CPU. Sets the latency absorbed while the thread waited for a CPU.
    pub fn with_in_flight(mut self, io_time_ns: u64, slices: Option<u64>) -> Self {
        self.io_time_ns = io_time_ns;
        self.slices = slices;
        self.absorbed_ns = match self.runq_ns {
            Some(r) if self.wall_ns > 0 => {
                Some((r as u128 * io_time_ns as u128 / self.wall_ns as u128) as u64)
            }
            Some(_) => Some(0),
            None => None,
        };
        self
    }

    /// Shares and per-I/O figures; `io_threads` is how many I/O threads ran (the
    /// sample of a whole run has folded each thread once per interval) and `latency`
    /// the measured latency (all directions) the figures are weighed against.
    pub fn summary(
        &self,
        io_threads: u32,
        latency: &OpStats,
        other: Option<OtherLoad>,
    ) -> GeneratorSummary {
        let pct = |a: u64, b: u64| {
            if b == 0 {
                0.0
            } else {
                a as f64 * 100.0 / b as f64
            }
        };
        let runq_us_per_io = self.runq_ns.map(|r| {
            if self.ios == 0 {
                0.0
            } else {
                r as f64 / self.ios as f64 / 1e3
            }
        });
        let (lag_p99, lag_max) = if self.lag.is_empty() {
            (None, None)
        } else {
            (
                Some(self.lag.quantile_ns(0.99) as f64 / 1e3),
                Some(self.lag.max_ns() as f64 / 1e3),
            )
        };
        let (reap_p50, reap_p99) = if self.reap.is_empty() {
            (None, None)
        } else {
            (
                Some(self.reap.quantile_ns(0.50) as f64 / 1e3),
                Some(self.reap.quantile_ns(0.99) as f64 / 1e3),
            )
        };
        let runq_pct = self.runq_ns.map(|r| pct(r, self.wall_ns));
        let runq_absorbed_pct = self.absorbed_ns.map(|a| pct(a, self.io_time_ns));
        let runq_wait_us = match (self.runq_ns, self.slices) {
            (Some(r), Some(n)) if n > 0 => Some(r as f64 / n as f64 / 1e3),
            _ => None,
        };
        let mut s = GeneratorSummary {
            io_threads,
            busy_pct: pct(self.busy_ns, self.wall_ns),
            max_busy_pct: self.max_busy * 100.0,
            runq_us_per_io,
            runq_pct,
            max_runq_pct: runq_pct.map(|_| self.max_runq * 100.0),
            runq_absorbed_pct,
            runq_wait_us,
            other_load_cpus: other.map(|o| o.cpus),
            open_loop_ios: self.lag.count(),
            issue_lag_p99_us: lag_p99,
            issue_lag_max_us: lag_max,
            reap_wait_p50_us: reap_p50,
            reap_wait_p99_us: reap_p99,
            warnings: Vec::new(),
        };
        let p99_ns = if latency.hist.is_empty() {
            0.0
        } else {
            latency.hist.quantile_ns(0.99) as f64
        };
        s.warnings = s.warnings(p99_ns, other);
        s
    }
}

/// The generator's self-check over an interval or the measured phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorSummary {
    /// I/O threads that drove the lanes (fleet-wide).
    pub io_threads: u32,
    /// Mean CPU share of the I/O threads, percent.
    pub busy_pct: f64,
    /// The busiest I/O thread's share of an interval spent running or waiting to run
    /// (never idle), percent; the highest over the intervals.
    pub max_busy_pct: f64,
    /// Run-queue delay of the I/O threads per completed I/O, µs (null when the kernel
    /// does not keep schedstats).
    pub runq_us_per_io: Option<f64>,
    /// Share of the I/O threads' time spent runnable but waiting for a CPU, percent
    /// (null without schedstats, and in runs recorded before it was measured).
    #[serde(default)]
    pub runq_pct: Option<f64>,
    /// The highest share of an interval a single I/O thread spent waiting for a CPU.
    #[serde(default)]
    pub max_runq_pct: Option<f64>,
    /// Estimated share of the measured latency that I/Os in flight spent while their
    /// I/O thread waited for a CPU, percent.
    #[serde(default)]
    pub runq_absorbed_pct: Option<f64>,
    /// Mean wait for a CPU each time an I/O thread was scheduled, µs.
    #[serde(default)]
    pub runq_wait_us: Option<f64>,
    /// CPUs' worth used by other processes on the host (the busiest host of a fleet)
    /// while the I/O threads ran; null where the host was not measured.
    #[serde(default)]
    pub other_load_cpus: Option<f64>,
    /// Open-loop I/Os issued (0 in a closed-loop run).
    pub open_loop_ios: u64,
    /// How late open-loop I/Os were issued against their intended time, µs.
    pub issue_lag_p99_us: Option<f64>,
    pub issue_lag_max_us: Option<f64>,
    /// The most a completion may have waited to be reaped while its I/O thread was busy
    /// issuing or recording (an upper bound per completion), median and p99, µs; null
    /// when no completion was reaped or in simulated time.
    #[serde(default)]
    pub reap_wait_p50_us: Option<f64>,
    #[serde(default)]
    pub reap_wait_p99_us: Option<f64>,
    /// Why the generator, rather than the storage, may have set the result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl GeneratorSummary {
    fn warnings(&self, p99_ns: f64, other: Option<OtherLoad>) -> Vec<String> {
        let mut w = Vec::new();
        if self.max_busy_pct > BUSY_WARN * 100.0 {
            w.push(format!(
                "an I/O thread was busy (running or waiting for a CPU) {:.0}% of the time: the generator may have limited the I/O rate (more --io-threads or CPUs, or fewer lanes)",
                self.max_busy_pct
            ));
        }
        if let Some(q) = self.runq_pct {
            let absorbed = self.runq_absorbed_pct.unwrap_or(0.0);
            let wait = self.runq_wait_us.map_or(String::new(), |w| {
                format!(", {w:.0} µs each time it was woken")
            });
            let tail = if p99_ns > 0.0 {
                format!(" (p99 {:.0} µs)", p99_ns / 1e3)
            } else {
                String::new()
            };
            let loaded = other.filter(|o| o.cpus >= OTHER_LOAD_WARN_CPUS);
            if let Some(o) = loaded.filter(|_| q > CONTENDED_RUNQ * 100.0) {
                w.push(format!(
                    "another load used {:.1} of the host's {:.0} CPUs while the I/O threads waited for a CPU {q:.1}% of the time{wait}; the I/Os in flight meanwhile absorbed about {absorbed:.0}% of the measured latency: IOPS and latency, the tail{tail} most of all, are partly the host's contention, not the storage's",
                    o.cpus, o.of_cpus
                ));
            } else if let Some(o) = other.filter(|o| o.cpus >= NEIGHBOUR_WARN_CPUS) {
                w.push(format!(
                    "another load used {:.1} of the host's {:.0} CPUs during the measurement; the I/O threads seldom waited for a CPU ({q:.1}% of the time), but a neighbour still shares caches, memory bandwidth and, on SMT or virtual CPUs, the cores: compare with a quiet run",
                    o.cpus, o.of_cpus
                ));
            } else if q > RUNQ_SHARE_WARN * 100.0 {
                w.push(format!(
                    "the I/O threads waited for a CPU {q:.1}% of the time{wait}; the I/Os in flight meanwhile absorbed about {absorbed:.0}% of the measured latency: the generator's threads outnumber the free CPUs (fewer --io-threads, or --cpus)"
                ));
            }
        }
        if let Some(p99) = self.issue_lag_p99_us {
            if p99 * 1e3 > LAG_WARN_NS as f64 {
                w.push(format!(
                    "open-loop I/Os were issued up to {p99:.0} µs late (p99) against their schedule: the load offered was burstier than planned"
                ));
            }
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Measured latency whose mean and p99 are both `ns`.
    fn lat(ns: f64) -> OpStats {
        let mut o = OpStats::default();
        o.record(ns as u64, 4096);
        o
    }

    fn span(wall: u64, busy: u64, runq: Option<u64>, ios: u64) -> GenSample {
        GenSample::thread_span(wall, busy, runq, ios)
    }

    #[test]
    fn spans_fold_and_summarise() {
        let mut g = GenSample::default();
        g += &GenSample::default();
        g += &span(1_000_000_000, 500_000_000, Some(2_000_000), 1_000);
        g += &span(1_000_000_000, 900_000_000, Some(50_000_000), 1_000);
        assert_eq!(g.threads, 2);
        assert_eq!(g.runq_ns, Some(52_000_000));
        let s = g.summary(2, &lat(1_000_000.0), None);
        assert!((s.busy_pct - 70.0).abs() < 1e-9, "{}", s.busy_pct);
        // 90% on a CPU and 5% waiting for one: busy 95% of the time.
        assert!((s.max_busy_pct - 95.0).abs() < 1e-9);
        assert_eq!(s.runq_us_per_io, Some(26.0));
        assert_eq!(s.issue_lag_p99_us, None);
        // 95% busy is flagged; the run-queue delay, reported per I/O, is not judged per
        // I/O: against a 104 µs mean latency 26 µs is a quarter of it, yet the threads
        // waited 2.6% of the time with no other load (an idle vCPU waking up).
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("95% of the time"));
        let s = g.summary(2, &lat(104_000.0), None);
        assert_eq!(s.runq_us_per_io, Some(26.0));
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        // A thread that cannot read schedstats makes the sum unknown.
        g += &span(1, 1, None, 1);
        assert_eq!(g.runq_ns, None);
        assert_eq!(g.summary(3, &lat(1e6), None).runq_us_per_io, None);
    }

    #[test]
    fn contention_is_weighed_by_what_was_in_flight_and_needs_another_load() {
        // One thread over 1 s: 100 ms waiting for a CPU, 30 I/Os in flight throughout
        // (30 s of I/O time over 1 s), 40,000 I/Os, 10,000 times scheduled.
        let g = span(1_000_000_000, 400_000_000, Some(100_000_000), 40_000)
            .with_in_flight(30_000_000_000, Some(10_000));
        assert_eq!(g.absorbed_ns, Some(3_000_000_000));
        let quiet = g.summary(1, &lat(750_000.0), None);
        // Per completed I/O the wait is 2.5 µs, 0.3% of the mean: it hides what the
        // 30 waiting I/Os absorbed, a tenth of all their latency.
        assert_eq!(quiet.runq_us_per_io, Some(2.5));
        assert_eq!(quiet.runq_pct, Some(10.0));
        assert_eq!(quiet.max_runq_pct, Some(10.0));
        assert_eq!(quiet.runq_absorbed_pct, Some(10.0));
        assert_eq!(quiet.runq_wait_us, Some(10.0));
        assert_eq!(quiet.other_load_cpus, None);
        // Waiting alone is an idle vCPU waking up, not another load: not warned.
        assert!(quiet.warnings.is_empty(), "{:?}", quiet.warnings);
        let busy = OtherLoad {
            cpus: 1.0,
            of_cpus: 2.0,
        };
        let s = g.summary(1, &lat(750_000.0), Some(busy));
        assert_eq!(s.other_load_cpus, Some(1.0));
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        for part in [
            "another load used 1.0 of the host's 2 CPUs",
            "waited for a CPU 10.0% of the time, 10 µs each time",
            "absorbed about 10% of the measured latency",
            "(p99 750 µs)",
        ] {
            assert!(s.warnings[0].contains(part), "{part}: {}", s.warnings[0]);
        }
        // The kernel threads serving iofleet's own I/O are not another load.
        let kernel = OtherLoad {
            cpus: 0.1,
            of_cpus: 2.0,
        };
        assert!(g
            .summary(1, &lat(750_000.0), Some(kernel))
            .warnings
            .is_empty());
        // Another load that took no CPU from the I/O threads: a small one is not a
        // finding, a neighbour of half a CPU or more is still named.
        let apart = span(1_000_000_000, 400_000_000, Some(10_000_000), 40_000)
            .with_in_flight(30_000_000_000, Some(10_000));
        let small = OtherLoad {
            cpus: 0.3,
            of_cpus: 2.0,
        };
        assert!(apart
            .summary(1, &lat(750_000.0), Some(small))
            .warnings
            .is_empty());
        let s = apart.summary(1, &lat(750_000.0), Some(busy));
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(
            s.warnings[0].contains("seldom waited for a CPU (1.0% of the time)"),
            "{:?}",
            s.warnings
        );
        // Waiting 30% of the time is warned whatever else runs.
        let own = span(1_000_000_000, 400_000_000, Some(300_000_000), 40_000)
            .with_in_flight(30_000_000_000, Some(10_000));
        let s = own.summary(1, &lat(750_000.0), None);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(
            s.warnings[0].contains("outnumber the free CPUs"),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn contention_figures_fold_across_threads_and_spans() {
        // Two threads: 10 I/Os in flight waiting 50 ms, and 2 in flight waiting 200 ms.
        let a =
            span(1_000_000_000, 1, Some(50_000_000), 100).with_in_flight(10_000_000_000, Some(500));
        let b = span(1_000_000_000, 1, Some(200_000_000), 100)
            .with_in_flight(2_000_000_000, Some(1_500));
        let mut g = GenSample::default();
        g += &a;
        g += &b;
        assert_eq!(g.absorbed_ns, Some(500_000_000 + 400_000_000));
        assert_eq!(g.io_time_ns, 12_000_000_000);
        assert_eq!(g.slices, Some(2_000));
        assert!((g.max_runq - 0.2).abs() < 1e-12);
        let s = g.summary(2, &lat(1e6), None);
        assert_eq!(s.runq_pct, Some(12.5));
        assert_eq!(s.runq_absorbed_pct, Some(7.5));
        assert_eq!(s.runq_wait_us, Some(125.0));
        // A thread without schedstats makes every run-queue figure unknown.
        g += &span(1, 1, None, 1).with_in_flight(1, None);
        assert_eq!((g.absorbed_ns, g.slices), (None, None));
        let s = g.summary(3, &lat(1e6), None);
        assert_eq!((s.runq_pct, s.runq_absorbed_pct), (None, None));
    }

    #[test]
    fn issue_lag_is_flagged_beyond_timer_wake_ups() {
        let mut g = span(1_000_000_000, 100_000_000, Some(0), 100);
        for _ in 0..100 {
            g.lag.record(3_000_000);
        }
        let s = g.summary(1, &lat(1_000_000.0), None);
        let p99 = s.issue_lag_p99_us.unwrap();
        assert!((p99 - 3_000.0).abs() < 30.0, "{p99}");
        assert_eq!(s.open_loop_ios, 100);
        assert!(
            s.warnings.iter().any(|w| w.contains("late")),
            "{:?}",
            s.warnings
        );
        // 300 µs late is a virtual machine's timer wake-up: not a finding.
        let mut small = span(1_000_000_000, 100_000_000, Some(0), 100);
        small.lag.record(300_000);
        assert!(small.summary(1, &lat(100_000.0), None).warnings.is_empty());
    }

    #[test]
    fn reap_wait_bounds_fold_per_completion() {
        // Thread A reaped 98 completions after 2 µs away and 2 after 50 µs; thread B
        // reaped none (it slept): the fold is A's bounds, weighted per completion.
        let mut a = span(1_000_000_000, 100_000_000, Some(0), 100);
        a.reap.record_count(2_000, 98);
        a.reap.record_count(50_000, 2);
        a.reap.record_count(7_000, 0);
        let mut g = span(1_000_000_000, 1_000, Some(0), 0);
        assert_eq!(g.summary(1, &lat(1e5), None).reap_wait_p99_us, None);
        g += &a;
        assert_eq!(g.reap.count(), 100);
        let s = g.summary(2, &lat(100_000.0), None);
        let (p50, p99) = (s.reap_wait_p50_us.unwrap(), s.reap_wait_p99_us.unwrap());
        assert!((p50 - 2.0).abs() < 0.01, "{p50}");
        assert!((p99 - 50.0).abs() < 0.1, "{p99}");
        // A bound is reported, not warned on.
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn serde_round_trip_keeps_the_lag_histogram() {
        let mut g = span(10, 5, Some(1), 3);
        g.lag.record(12_345);
        g.reap.record_count(3_000, 4);
        let json = serde_json::to_string(&g).unwrap();
        let back: GenSample = serde_json::from_str(&json).unwrap();
        assert_eq!(back, g);
    }
}
