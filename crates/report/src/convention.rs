//! Published-report conventions: a run's figures as another tool defines the columns
//! it publishes (HCIBench, VM Fleet, Iometer), each labelled with the tool and set
//! beside iofleet's exact figure. Definitions and their sources are in
//! docs/conventions.md.
//!
//! Everything is computed from the result's per-worker summaries (`RunResult.workers`,
//! worker = VM), so a live run and the same run recomputed from the store give the same
//! figures. This module only aggregates figures that were already merged upstream; it
//! never reads histograms. `Exact` has no figures of its own: it is iofleet's table.

use std::fmt;
use std::str::FromStr;

use iofleet_stats::result::{RunResult, WorkerSummary};
use iofleet_stats::{LatencySummary, OpSummary};
use serde_json::{json, Value};

/// Bytes in a MiB, the "MB" of vdbench, DISKSPD and Iometer's binary column.
pub const MIB: f64 = 1_048_576.0;

/// Whose definitions the figures follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Convention {
    /// iofleet's own figures (I/O-weighted means, merged-histogram percentiles, MB/s).
    #[default]
    Exact,
    /// HCIBench's vdbench summary (the VxRail and vSAN reports).
    Hcibench,
    /// VM Fleet 2.x's sweep summary of per-VM DISKSPD results.
    Vmfleet,
    /// Iometer's results file.
    Iometer,
}

impl Convention {
    pub const ALL: [Convention; 4] = [
        Convention::Exact,
        Convention::Hcibench,
        Convention::Vmfleet,
        Convention::Iometer,
    ];

    /// The name given to `--convention`.
    pub fn name(self) -> &'static str {
        match self {
            Convention::Exact => "exact",
            Convention::Hcibench => "hcibench",
            Convention::Vmfleet => "vmfleet",
            Convention::Iometer => "iometer",
        }
    }

    /// The tool's name, as figure labels carry it.
    pub fn tool(self) -> &'static str {
        match self {
            Convention::Exact => "iofleet",
            Convention::Hcibench => "HCIBench",
            Convention::Vmfleet => "VM Fleet",
            Convention::Iometer => "Iometer",
        }
    }

    /// The run's figures in this convention (empty for `Exact`).
    pub fn figures(self, r: &RunResult) -> Vec<Figure> {
        if !r.measured() {
            return Vec::new();
        }
        match self {
            Convention::Exact => Vec::new(),
            Convention::Hcibench => hcibench(r),
            Convention::Vmfleet => vmfleet(r),
            Convention::Iometer => iometer(r),
        }
    }

    /// The figures as JSON: the convention's name and, per figure, its key, label,
    /// unit, definition, value and the exact figure beside it.
    pub fn to_json(self, r: &RunResult) -> Value {
        json!({
            "name": self.name(),
            "tool": self.tool(),
            "figures": self.figures(r).iter().map(Figure::to_json).collect::<Vec<_>>(),
        })
    }
}

impl fmt::Display for Convention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Convention {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Convention::ALL
            .into_iter()
            .find(|c| c.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                format!(
                    "unknown convention '{s}' (known: {})",
                    Convention::ALL.map(|c| c.name()).join(", ")
                )
            })
    }
}

/// One figure as a tool defines it, with iofleet's exact figure of the same name.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Stable key (JSON, tests): `throughput`, `latency`, `read_p99`, …
    pub key: &'static str,
    /// Label with the tool's unit and name: `MiB/s (HCIBench)`.
    pub label: String,
    /// The tool's unit: `MiB/s`, `ms`, `I/Os`, …
    pub unit: &'static str,
    pub value: Option<f64>,
    /// Decimals the tool prints.
    pub digits: usize,
    /// How the tool computes it, in one line.
    pub definition: &'static str,
    /// The exact figure beside it: its label (with unit) and value.
    pub exact_label: &'static str,
    pub exact: Option<f64>,
    pub exact_digits: usize,
    /// True when a larger value is an improvement (rates), for gains in `compare`.
    pub higher_is_better: bool,
}

impl Figure {
    pub fn to_json(&self) -> Value {
        json!({
            "key": self.key,
            "label": self.label,
            "unit": self.unit,
            "definition": self.definition,
            "value": self.value,
            "exact_label": self.exact_label,
            "exact": self.exact,
        })
    }

    /// The value with the tool's decimals, `–` when unknown.
    pub fn value_text(&self) -> String {
        crate::figures::opt_fixed(self.value, self.digits)
    }

    /// The exact figure with its decimals, `–` when unknown.
    pub fn exact_text(&self) -> String {
        crate::figures::opt_fixed(self.exact, self.exact_digits)
    }
}

/// What a figure is built from: key, unit, definition, exact label, higher is better.
struct Def {
    key: &'static str,
    /// The column's name with the tool's unit, as the label starts.
    name: &'static str,
    unit: &'static str,
    digits: usize,
    definition: &'static str,
    exact_label: &'static str,
    exact_digits: usize,
    higher_is_better: bool,
}

fn figure(c: Convention, d: Def, value: Option<f64>, exact: Option<f64>) -> Figure {
    Figure {
        key: d.key,
        label: format!("{} ({})", d.name, c.tool()),
        unit: d.unit,
        value,
        digits: d.digits,
        definition: d.definition,
        exact_label: d.exact_label,
        exact,
        exact_digits: d.exact_digits,
        higher_is_better: d.higher_is_better,
    }
}

// ---- the aggregates, over workers (worker = VM) ----

fn op(w: &WorkerSummary, dir: Dir) -> &OpSummary {
    match dir {
        Dir::All => &w.all,
        Dir::Read => &w.read,
        Dir::Write => &w.write,
    }
}

#[derive(Clone, Copy)]
enum Dir {
    All,
    Read,
    Write,
}

/// Σ over workers.
fn sum(r: &RunResult, f: impl Fn(&WorkerSummary) -> f64) -> f64 {
    r.workers.iter().map(f).sum()
}

/// Unweighted mean over every worker of a per-worker latency figure (µs), a worker
/// without I/O in that direction counting as 0 (vdbench prints 0 for it and HCIBench
/// divides by the number of VMs); None when no worker had I/O in that direction.
fn mean_over_all_workers(
    workers: &[WorkerSummary],
    dir: Dir,
    f: impl Fn(&LatencySummary) -> f64,
) -> Option<f64> {
    let n = workers.len();
    let known: Vec<f64> = workers.iter().filter_map(|w| op(w, dir).lat(&f)).collect();
    (n > 0 && !known.is_empty()).then(|| known.iter().sum::<f64>() / n as f64)
}

/// Unweighted mean of a per-worker latency figure (µs) over the workers with I/O in
/// that direction; None when there are none.
fn mean_over_workers_with_io(
    workers: &[WorkerSummary],
    dir: Dir,
    f: impl Fn(&LatencySummary) -> f64,
) -> Option<f64> {
    let known: Vec<f64> = workers.iter().filter_map(|w| op(w, dir).lat(&f)).collect();
    (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64)
}

fn ms(us: Option<f64>) -> Option<f64> {
    us.map(|v| v / 1000.0)
}

/// Exact figures of the fleet.
fn exact(r: &RunResult, dir: Dir, f: impl Fn(&LatencySummary) -> f64) -> Option<f64> {
    let s = &r.summary;
    match dir {
        Dir::All => s.all.lat(f),
        Dir::Read => s.read.lat(f),
        Dir::Write => s.write.lat(f),
    }
}

fn iops_figure(c: Convention, r: &RunResult) -> Figure {
    figure(
        c,
        Def {
            key: "iops",
            name: "IOPS",
            unit: "IO/s",
            digits: 2,
            definition: "Σ per-worker IOPS (the same as exact)",
            exact_label: "IOPS",
            exact_digits: 0,
            higher_is_better: true,
        },
        Some(sum(r, |w| w.all.iops)),
        Some(r.summary.all.iops),
    )
}

fn mib_figure(c: Convention, r: &RunResult, definition: &'static str) -> Figure {
    figure(
        c,
        Def {
            key: "throughput",
            name: "MiB/s",
            unit: "MiB/s",
            digits: 2,
            definition,
            exact_label: "MB/s",
            exact_digits: 1,
            higher_is_better: true,
        },
        Some(sum(r, |w| w.all.mbps) * 1e6 / MIB),
        Some(r.summary.all.mbps),
    )
}

/// HCIBench's vdbench summary (`get-xls-vdbench.rb`, `parseVdbResult.rb`): sums of
/// per-VM rates, unweighted means of per-VM latency figures, the 95th percentile as
/// mean + 1.645 σ, outstanding I/O as the sum of per-VM measured queue depths.
fn hcibench(r: &RunResult) -> Vec<Figure> {
    let c = Convention::Hcibench;
    let lat = |key, name, dir, definition, exact_label| {
        figure(
            c,
            Def {
                key,
                name,
                unit: "ms",
                digits: 4,
                definition,
                exact_label,
                exact_digits: 1,
                higher_is_better: false,
            },
            ms(mean_over_all_workers(&r.workers, dir, |l| l.mean)),
            exact(r, dir, |l| l.mean),
        )
    };
    let mean = mean_over_all_workers(&r.workers, Dir::All, |l| l.mean);
    let stddev = mean_over_all_workers(&r.workers, Dir::All, |l| l.stddev);
    let outstanding: Option<f64> = (r.run.duration_s > 0.0).then(|| {
        sum(r, |w| {
            w.all.iops * w.all.lat(|l| l.mean).unwrap_or(0.0) / 1e6
        })
    });
    vec![
        iops_figure(c, r),
        mib_figure(c, r, "Σ per-worker bytes ÷ 2^20 per second (vdbench MB/sec)"),
        lat(
            "latency",
            "latency ms",
            Dir::All,
            "unweighted mean over workers of each worker's mean latency",
            "mean µs",
        ),
        lat(
            "read_latency",
            "read latency ms",
            Dir::Read,
            "unweighted mean over workers of each worker's mean read latency (0 for a worker without reads)",
            "read mean µs",
        ),
        lat(
            "write_latency",
            "write latency ms",
            Dir::Write,
            "unweighted mean over workers of each worker's mean write latency (0 for a worker without writes)",
            "write mean µs",
        ),
        figure(
            c,
            Def {
                key: "latency_stddev",
                name: "latency stddev ms",
                unit: "ms",
                digits: 2,
                definition: "unweighted mean over workers of each worker's latency standard deviation",
                exact_label: "stddev µs",
                exact_digits: 1,
                higher_is_better: false,
            },
            ms(stddev),
            exact(r, Dir::All, |l| l.stddev),
        ),
        figure(
            c,
            Def {
                key: "p95_latency",
                name: "95%tile latency ms",
                unit: "ms",
                digits: 2,
                definition: "latency + 1.645 × latency stddev (a normal approximation, not a measured percentile)",
                exact_label: "p95 µs",
                exact_digits: 1,
                higher_is_better: false,
            },
            ms(mean.zip(stddev).map(|(m, s)| m + 1.645 * s)),
            exact(r, Dir::All, |l| l.p95),
        ),
        figure(
            c,
            Def {
                key: "outstanding_io",
                name: "total outstanding IO",
                unit: "I/Os",
                digits: 1,
                definition: "Σ per-worker measured mean I/Os in flight (vdbench queue depth)",
                exact_label: "outstanding (mean)",
                exact_digits: 1,
                higher_is_better: false,
            },
            outstanding,
            r.summary.outstanding_io.measured_mean,
        ),
    ]
}

/// VM Fleet 2.x's sweep summary (`ReduceRowResultToSummary`): rates summed, average
/// latencies IOPS-weighted (as exact), percentiles the unweighted mean of per-VM
/// percentiles.
fn vmfleet(r: &RunResult) -> Vec<Figure> {
    let c = Convention::Vmfleet;
    let mut v = vec![
        iops_figure(c, r),
        figure(
            c,
            Def {
                key: "bandwidth",
                name: "bandwidth B/s",
                unit: "B/s",
                digits: 0,
                definition: "Σ per-worker bytes per second (the same as exact, in bytes)",
                exact_label: "MB/s",
                exact_digits: 1,
                higher_is_better: true,
            },
            Some(sum(r, |w| w.all.mbps) * 1e6),
            Some(r.summary.all.mbps),
        ),
    ];
    for (dir, name) in [(Dir::Read, "read"), (Dir::Write, "write")] {
        let (avg_key, avg_name, avg_exact) = match dir {
            Dir::Read => ("read_average", "average read ms", "read mean µs"),
            _ => ("write_average", "average write ms", "write mean µs"),
        };
        v.push(figure(
            c,
            Def {
                key: avg_key,
                name: avg_name,
                unit: "ms",
                digits: 3,
                definition: "IOPS-weighted mean of per-worker means (the same as exact)",
                exact_label: avg_exact,
                exact_digits: 1,
                higher_is_better: false,
            },
            ms(exact(r, dir, |l| l.mean)),
            exact(r, dir, |l| l.mean),
        ));
        type Pct = (
            &'static str,
            &'static str,
            &'static str,
            fn(&LatencySummary) -> f64,
        );
        let pcts: [Pct; 3] = match name {
            "read" => [
                ("read_p50", "read p50 ms", "read p50 µs", |l| l.p50),
                ("read_p90", "read p90 ms", "read p90 µs", |l| l.p90),
                ("read_p99", "read p99 ms", "read p99 µs", |l| l.p99),
            ],
            _ => [
                ("write_p50", "write p50 ms", "write p50 µs", |l| l.p50),
                ("write_p90", "write p90 ms", "write p90 µs", |l| l.p90),
                ("write_p99", "write p99 ms", "write p99 µs", |l| l.p99),
            ],
        };
        for (key, pct_name, exact_label, f) in pcts {
            v.push(figure(
                c,
                Def {
                    key,
                    name: pct_name,
                    unit: "ms",
                    digits: 3,
                    definition: "unweighted mean over workers (with I/O in that direction) of each worker's percentile",
                    exact_label,
                    exact_digits: 1,
                    higher_is_better: false,
                },
                ms(mean_over_workers_with_io(&r.workers, dir, f)),
                exact(r, dir, f),
            ));
        }
    }
    v
}

/// Iometer's results file: rates summed, response times I/O-weighted (as exact), MB/s
/// in both units, outstanding I/Os the configured queue depth.
fn iometer(r: &RunResult) -> Vec<Figure> {
    let c = Convention::Iometer;
    let lat = |key, name, dir, f: fn(&LatencySummary) -> f64, definition, exact_label| {
        figure(
            c,
            Def {
                key,
                name,
                unit: "ms",
                digits: 4,
                definition,
                exact_label,
                exact_digits: 1,
                higher_is_better: false,
            },
            ms(exact(r, dir, f)),
            exact(r, dir, f),
        )
    };
    vec![
        iops_figure(c, r),
        mib_figure(
            c,
            r,
            "Σ bytes ÷ 2^20 per second (\"MiBps (Binary)\"; \"MBps\" before Iometer 1.1.0)",
        ),
        figure(
            c,
            Def {
                key: "mbps_decimal",
                name: "MB/s decimal",
                unit: "MB/s",
                digits: 2,
                definition: "Σ bytes ÷ 10^6 per second (\"MBps (Decimal)\", the same as exact)",
                exact_label: "MB/s",
                exact_digits: 1,
                higher_is_better: true,
            },
            Some(sum(r, |w| w.all.mbps)),
            Some(r.summary.all.mbps),
        ),
        lat(
            "average_response_time",
            "average response time ms",
            Dir::All,
            |l| l.mean,
            "I/O-weighted mean over all I/Os (the same as exact)",
            "mean µs",
        ),
        lat(
            "average_read_response_time",
            "average read response time ms",
            Dir::Read,
            |l| l.mean,
            "I/O-weighted mean over all reads (the same as exact)",
            "read mean µs",
        ),
        lat(
            "average_write_response_time",
            "average write response time ms",
            Dir::Write,
            |l| l.mean,
            "I/O-weighted mean over all writes (the same as exact)",
            "write mean µs",
        ),
        lat(
            "maximum_response_time",
            "maximum response time ms",
            Dir::All,
            |l| l.max,
            "maximum over all I/Os (the same as exact)",
            "max µs",
        ),
        figure(
            c,
            Def {
                key: "outstanding_ios",
                name: "# of outstanding I/Os",
                unit: "I/Os",
                digits: 0,
                definition: "configured queue depth summed over workers' targets (not measured)",
                exact_label: "outstanding (mean)",
                exact_digits: 1,
                higher_is_better: false,
            },
            r.summary.outstanding_io.configured.map(|c| c as f64),
            r.summary.outstanding_io.measured_mean,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use iofleet_stats::StreamStats;

    #[test]
    fn names_parse_and_bad_ones_list_the_choices() {
        for c in Convention::ALL {
            assert_eq!(c.name().parse::<Convention>(), Ok(c));
        }
        assert_eq!("HCIBench".parse::<Convention>(), Ok(Convention::Hcibench));
        let e = "vdbench".parse::<Convention>().unwrap_err();
        assert!(e.contains("exact, hcibench, vmfleet, iometer"), "{e}");
    }

    /// A worker of one second that completed `reads` and `writes`, each given as
    /// (count, latency µs), summarised as a run summarises a worker.
    fn worker(reads: (u64, u64), writes: (u64, u64)) -> (StreamStats, WorkerSummary) {
        let mut s = StreamStats::default();
        for (ops, (n, us)) in [(&mut s.read, reads), (&mut s.write, writes)] {
            for _ in 0..n {
                ops.record(us * 1_000, 4096);
            }
        }
        let w = WorkerSummary {
            worker: 0,
            host: "h".into(),
            all: OpSummary::from_ops(&s.all(), 1.0),
            read: OpSummary::from_ops(&s.read, 1.0),
            write: OpSummary::from_ops(&s.write, 1.0),
            disks: Vec::new(),
        };
        (s, w)
    }

    /// The two-worker example of docs/conventions.md: 9,000 IOPS at 0.5 ms and 1,000
    /// IOPS at 4.5 ms are (9,000 × 0.5 + 1,000 × 4.5) ÷ 10,000 = 0.9 ms over I/Os (the
    /// fleet's merged figure) but (0.5 + 4.5) ÷ 2 = 2.5 ms as a mean of worker means.
    #[test]
    fn a_mean_of_worker_means_is_not_the_io_weighted_mean() {
        let (fast, w0) = worker((9_000, 500), (0, 0));
        let (slow, w1) = worker((1_000, 4_500), (0, 0));
        let per_worker = mean_over_all_workers(&[w0, w1], Dir::All, |l| l.mean).unwrap();
        assert_eq!(per_worker, 2_500.0);
        let mut fleet = fast;
        fleet += &slow;
        let exact = OpSummary::from_ops(&fleet.all(), 1.0);
        assert_eq!(exact.lat(|l| l.mean), Some(900.0));
    }

    /// HCIBench divides by every VM, a VM without writes counting 0; VM Fleet's
    /// percentiles here average the workers that had I/O in the direction.
    #[test]
    fn workers_without_io_in_a_direction() {
        let w = [
            worker((100, 200), (100, 1_000)).1,
            worker((100, 400), (0, 0)).1,
        ];
        // (1,000 + 0) ÷ 2 VMs, and 1,000 over the one VM that wrote.
        assert_eq!(
            mean_over_all_workers(&w, Dir::Write, |l| l.mean),
            Some(500.0)
        );
        assert_eq!(
            mean_over_workers_with_io(&w, Dir::Write, |l| l.mean),
            Some(1_000.0)
        );
        assert_eq!(
            mean_over_all_workers(&w, Dir::Read, |l| l.mean),
            Some(300.0)
        );
        let none = [worker((100, 1), (0, 0)).1];
        assert_eq!(mean_over_all_workers(&none, Dir::Write, |l| l.mean), None);
    }
}
