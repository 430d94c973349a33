//! Comparing runs: the metric vocabulary (`iops`, `read.p99`, `write.mean`, …) shared by
//! the comparison table, the report's bars and the `--fail-if` gate, and the tables that
//! put runs side by side with their % change against a baseline.
//!
//! Every figure is read from a `RunResult` whose summary was merged from histograms
//! upstream; this module only looks figures up, divides and formats. A change is
//! `(value − baseline) ÷ baseline`; it is undefined (shown as "n/a") when the baseline
//! is 0 and the value is not.

use std::fmt::Write as _;
use std::io::{self, Write};

use iofleet_stats::result::RunResult;
use iofleet_stats::OpSummary;

use crate::RunData;

/// Which operations a metric reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    All,
    Read,
    Write,
}

/// What is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Iops,
    Mbps,
    Mean,
    Stddev,
    Min,
    P50,
    P90,
    P95,
    P99,
    P99_9,
    P99_99,
    Max,
    Ios,
    Errors,
    /// Median of per-interval IOPS (run-wide only).
    IopsMedian,
    /// Measured mean outstanding I/O (run-wide only).
    Outstanding,
    /// Whole-host CPU busy, % of all cores (run-wide only).
    Cpu,
    /// Process CPU µs per I/O (run-wide only).
    CpuPerIo,
    /// Host memory in use, % (run-wide only).
    Mem,
    /// Network received / sent, 10^6 bytes/s summed over hosts (run-wide only).
    NetRx,
    NetTx,
    /// Busy share of the devices under the targets, %, mean over hosts (run-wide only).
    DiskBusy,
}

/// The unit a metric's values are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Iops,
    MBps,
    Micros,
    Count,
    Percent,
    MicrosPerIo,
    Io,
}

impl Unit {
    /// Unit to print after a metric's label in tables (empty where the label says it).
    pub fn table_suffix(self) -> &'static str {
        match self {
            Unit::Iops | Unit::MBps | Unit::Count | Unit::Io => "",
            Unit::Micros => "µs",
            Unit::Percent => "%",
            Unit::MicrosPerIo => "µs",
        }
    }

    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Iops => "IOPS",
            Unit::MBps => "MB/s",
            Unit::Micros => "µs",
            Unit::Count => "",
            Unit::Percent => "%",
            Unit::MicrosPerIo => "µs/IO",
            Unit::Io => "I/Os",
        }
    }
}

const OP_FIELDS: &[(&str, Field)] = &[
    ("iops", Field::Iops),
    ("mbps", Field::Mbps),
    ("mean", Field::Mean),
    ("stddev", Field::Stddev),
    ("min", Field::Min),
    ("p50", Field::P50),
    ("p90", Field::P90),
    ("p95", Field::P95),
    ("p99", Field::P99),
    ("p99_9", Field::P99_9),
    ("p99_99", Field::P99_99),
    ("max", Field::Max),
    ("ios", Field::Ios),
    ("errors", Field::Errors),
];

const RUN_FIELDS: &[(&str, Field)] = &[
    ("iops_median", Field::IopsMedian),
    ("outstanding", Field::Outstanding),
    ("cpu", Field::Cpu),
    ("cpu_us_per_io", Field::CpuPerIo),
    ("mem", Field::Mem),
    ("net_rx_mbps", Field::NetRx),
    ("net_tx_mbps", Field::NetTx),
    ("disk_busy", Field::DiskBusy),
];

/// One comparable figure of a run, named by a path such as `read.p99`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    pub scope: Scope,
    pub field: Field,
}

impl Metric {
    /// Parse a metric path: `[all.|read.|write.]FIELD` or a run-wide field. `p99.9` is
    /// accepted for `p99_9`.
    pub fn parse(path: &str) -> Option<Metric> {
        let p = path.trim().to_ascii_lowercase().replace("p99.99", "p99_99");
        let p = p.replace("p99.9", "p99_9");
        if let Some((_, f)) = RUN_FIELDS.iter().find(|(n, _)| *n == p) {
            return Some(Metric {
                scope: Scope::All,
                field: *f,
            });
        }
        let (scope, rest) = match p.split_once('.') {
            Some(("all", r)) => (Scope::All, r),
            Some(("read", r)) => (Scope::Read, r),
            Some(("write", r)) => (Scope::Write, r),
            Some(_) => return None,
            None => (Scope::All, p.as_str()),
        };
        OP_FIELDS
            .iter()
            .find(|(n, _)| *n == rest)
            .map(|(_, f)| Metric { scope, field: *f })
    }

    /// Every accepted name, for error messages and docs.
    pub fn known_names() -> String {
        let ops: Vec<&str> = OP_FIELDS.iter().map(|(n, _)| *n).collect();
        let runs: Vec<&str> = RUN_FIELDS.iter().map(|(n, _)| *n).collect();
        format!(
            "[read.|write.|all.]{{{}}} or {}",
            ops.join(","),
            runs.join(", ")
        )
    }

    fn run_wide(self) -> bool {
        RUN_FIELDS.iter().any(|(_, f)| *f == self.field)
    }

    /// Canonical path (`iops`, `read.p99`, …).
    pub fn path(self) -> String {
        let field = OP_FIELDS
            .iter()
            .chain(RUN_FIELDS)
            .find(|(_, f)| *f == self.field)
            .map(|(n, _)| *n)
            .expect("every field is named");
        match self.scope {
            _ if self.run_wide() => field.to_string(),
            Scope::All => field.to_string(),
            Scope::Read => format!("read.{field}"),
            Scope::Write => format!("write.{field}"),
        }
    }

    /// Human label for tables.
    pub fn label(self) -> String {
        let field = match self.field {
            Field::Iops => "IOPS",
            Field::Mbps => "MB/s",
            Field::Mean => "latency mean",
            Field::Stddev => "latency stddev",
            Field::Min => "latency min",
            Field::P50 => "p50",
            Field::P90 => "p90",
            Field::P95 => "p95",
            Field::P99 => "p99",
            Field::P99_9 => "p99.9",
            Field::P99_99 => "p99.99",
            Field::Max => "max",
            Field::Ios => "I/Os",
            Field::Errors => "I/O errors",
            Field::IopsMedian => "IOPS (median interval)",
            Field::Outstanding => "outstanding I/O (mean)",
            Field::Cpu => "host CPU",
            Field::CpuPerIo => "CPU per I/O",
            Field::Mem => "host memory used",
            Field::NetRx => "network received MB/s",
            Field::NetTx => "network sent MB/s",
            Field::DiskBusy => "device busy",
        };
        match self.scope {
            _ if self.run_wide() => field.to_string(),
            Scope::All => field.to_string(),
            Scope::Read => format!("read {field}"),
            Scope::Write => format!("write {field}"),
        }
    }

    pub fn unit(self) -> Unit {
        match self.field {
            Field::Iops | Field::IopsMedian => Unit::Iops,
            Field::Mbps | Field::NetRx | Field::NetTx => Unit::MBps,
            Field::DiskBusy => Unit::Percent,
            Field::Ios | Field::Errors => Unit::Count,
            Field::Outstanding => Unit::Io,
            Field::Cpu | Field::Mem => Unit::Percent,
            Field::CpuPerIo => Unit::MicrosPerIo,
            _ => Unit::Micros,
        }
    }

    /// True when a larger value is an improvement (throughput), false for latency,
    /// errors and resource use.
    pub fn higher_is_better(self) -> bool {
        matches!(
            self.field,
            Field::Iops | Field::Mbps | Field::IopsMedian | Field::Ios
        )
    }

    fn op(self, r: &RunResult) -> &OpSummary {
        match self.scope {
            Scope::All => &r.summary.all,
            Scope::Read => &r.summary.read,
            Scope::Write => &r.summary.write,
        }
    }

    /// The metric's value in `r`.
    pub fn value(self, r: &RunResult) -> f64 {
        let s = &r.summary;
        let o = self.op(r);
        let l = &o.latency_us;
        match self.field {
            Field::Iops => o.iops,
            Field::Mbps => o.mbps,
            Field::Mean => l.mean,
            Field::Stddev => l.stddev,
            Field::Min => l.min,
            Field::P50 => l.p50,
            Field::P90 => l.p90,
            Field::P95 => l.p95,
            Field::P99 => l.p99,
            Field::P99_9 => l.p99_9,
            Field::P99_99 => l.p99_99,
            Field::Max => l.max,
            Field::Ios => o.ios as f64,
            Field::Errors => o.errors as f64,
            Field::IopsMedian => s.iops_median_interval,
            Field::Outstanding => s.outstanding_io.measured_mean,
            Field::Cpu => s.cpu.host_pct,
            Field::CpuPerIo => s.cpu.us_per_io,
            Field::Mem => s.memory.host_used_pct,
            Field::NetRx => r
                .hosts
                .iter()
                .filter_map(|h| h.net.as_ref())
                .map(|n| n.rx_mbps)
                .sum(),
            Field::NetTx => r
                .hosts
                .iter()
                .filter_map(|h| h.net.as_ref())
                .map(|n| n.tx_mbps)
                .sum(),
            Field::DiskBusy => {
                let busy: Vec<f64> = r
                    .hosts
                    .iter()
                    .filter_map(|h| h.disk.as_ref())
                    .map(|d| d.busy_pct)
                    .collect();
                busy.iter().sum::<f64>() / busy.len().max(1) as f64
            }
        }
    }
}

/// Metrics shown by `iofleet compare`, in order.
pub fn default_metrics() -> Vec<Metric> {
    [
        "iops",
        "iops_median",
        "mbps",
        "mean",
        "read.mean",
        "write.mean",
        "stddev",
        "read.p50",
        "read.p99",
        "read.p99_9",
        "write.p50",
        "write.p99",
        "write.p99_9",
        "max",
        "outstanding",
        "cpu",
        "cpu_us_per_io",
        "mem",
        "net_rx_mbps",
        "net_tx_mbps",
        "disk_busy",
        "errors",
    ]
    .iter()
    .map(|p| Metric::parse(p).expect("built-in metric names parse"))
    .collect()
}

/// % change of `value` against `base`; None when undefined (base 0, value not).
pub fn change_pct(base: f64, value: f64) -> Option<f64> {
    if base == 0.0 {
        (value == 0.0).then_some(0.0)
    } else {
        Some((value - base) / base * 100.0)
    }
}

/// A value formatted for tables: thousands separators for large figures, sensible
/// decimals for small ones.
pub fn fmt_value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Iops | Unit::Count => group(v.round()),
        _ if v.abs() >= 1000.0 => group(v.round()),
        _ if v.abs() >= 100.0 => format!("{v:.0}"),
        _ if v.abs() >= 10.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

fn group(v: f64) -> String {
    let neg = v < 0.0;
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if neg {
        format!("-{out}")
    } else {
        out
    }
}

pub fn fmt_change(c: Option<f64>) -> String {
    match c {
        Some(c) => format!("{c:+.1}%"),
        None => "n/a".into(),
    }
}

/// Runs side by side; `baseline` indexes `runs`.
pub struct Comparison<'a> {
    pub runs: &'a [RunData],
    pub baseline: usize,
}

impl Comparison<'_> {
    pub fn base(&self) -> &RunData {
        &self.runs[self.baseline]
    }

    /// Runs other than the baseline, with their indices.
    pub fn others(&self) -> impl Iterator<Item = (usize, &RunData)> {
        self.runs
            .iter()
            .enumerate()
            .filter(move |(i, _)| *i != self.baseline)
    }

    /// Change of `m` in run `i` against the baseline.
    pub fn change(&self, m: Metric, i: usize) -> Option<f64> {
        change_pct(m.value(&self.base().result), m.value(&self.runs[i].result))
    }

    /// The plain-text comparison printed by `iofleet compare`.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "runs:")?;
        for (i, r) in self.runs.iter().enumerate() {
            writeln!(
                out,
                "  [{}] {}  {}  {}{}{}",
                i + 1,
                r.id,
                r.name,
                r.labels_text(),
                if r.status != "complete" {
                    format!("  ({})", r.status)
                } else {
                    String::new()
                },
                if i == self.baseline {
                    "  <- baseline"
                } else {
                    ""
                }
            )?;
        }
        writeln!(out)?;
        if self.runs.len() > 2 {
            self.write_config_table(out)?;
            writeln!(out)?;
        }
        // Per metric: the value per run and its change against the baseline.
        let mut header = format!("{:<26}", "metric");
        for (i, _) in self.runs.iter().enumerate() {
            let _ = write!(header, " {:>12}", format!("[{}]", i + 1));
            if i != self.baseline {
                let _ = write!(header, " {:>10}", "change");
            }
        }
        writeln!(out, "{}", header.trim_end())?;
        for m in default_metrics() {
            let mut line = format!(
                "{:<26}",
                format!("{} {}", m.label(), m.unit().table_suffix()).trim_end()
            );
            for (i, r) in self.runs.iter().enumerate() {
                let _ = write!(line, " {:>12}", fmt_value(m.value(&r.result), m.unit()));
                if i != self.baseline {
                    let _ = write!(line, " {:>10}", fmt_change(self.change(m, i)));
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }

    /// The multi-configuration table: one row per run with the columns practitioners
    /// publish (BRIEF §3) and the IOPS change against the baseline.
    pub fn write_config_table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "{:<4} {:<20} {:>12} {:>8} {:>9} {:>10} {:>9} {:>9} {:>10} {:>11} {:>6} {:>6}",
            "run",
            "configuration",
            "IOPS",
            "change",
            "MB/s",
            "lat µs",
            "read µs",
            "write µs",
            "stddev µs",
            "outstanding",
            "CPU %",
            "mem %"
        )?;
        let iops = Metric::parse("iops").expect("iops");
        for row in self.config_rows() {
            writeln!(
                out,
                "{:<4} {:<20} {:>12} {:>8} {:>9} {:>10} {:>9} {:>9} {:>10} {:>11} {:>6.1} {:>6.1}",
                format!("[{}]", row.index + 1),
                row.config.chars().take(20).collect::<String>(),
                fmt_value(row.result.summary.all.iops, iops.unit()),
                if row.index == self.baseline {
                    "base".to_string()
                } else {
                    fmt_change(self.change(iops, row.index))
                },
                format!("{:.1}", row.result.summary.all.mbps),
                fmt_value(row.result.summary.all.latency_us.mean, Unit::Micros),
                fmt_value(row.result.summary.read.latency_us.mean, Unit::Micros),
                fmt_value(row.result.summary.write.latency_us.mean, Unit::Micros),
                fmt_value(row.result.summary.all.latency_us.stddev, Unit::Micros),
                format!(
                    "{:.1}/{}",
                    row.result.summary.outstanding_io.measured_mean,
                    row.result.summary.outstanding_io.configured
                ),
                row.result.summary.cpu.host_pct,
                row.result.summary.memory.host_used_pct
            )?;
        }
        Ok(())
    }

    pub(crate) fn config_rows(&self) -> Vec<ConfigRow<'_>> {
        self.runs
            .iter()
            .enumerate()
            .map(|(index, r)| ConfigRow {
                index,
                config: r.config_text(),
                result: &r.result,
            })
            .collect()
    }
}

pub(crate) struct ConfigRow<'a> {
    pub index: usize,
    pub config: String,
    pub result: &'a RunResult,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_paths_parse_and_round_trip() {
        for p in [
            "iops",
            "read.p99",
            "write.mean",
            "all.p99_9",
            "p99_99",
            "read.max",
            "cpu",
            "iops_median",
        ] {
            let m = Metric::parse(p).unwrap_or_else(|| panic!("{p}"));
            assert_eq!(Metric::parse(&m.path()), Some(m));
        }
        assert_eq!(Metric::parse("read.p99.9"), Metric::parse("read.p99_9"));
        assert_eq!(Metric::parse("all.p99").unwrap().path(), "p99");
        assert!(Metric::parse("read.cpu").is_none());
        assert!(Metric::parse("latency").is_none());
        assert!(Metric::parse("disk.iops").is_none());
    }

    #[test]
    fn change_and_formatting() {
        assert_eq!(change_pct(100.0, 95.0), Some(-5.0));
        assert_eq!(change_pct(0.0, 0.0), Some(0.0));
        assert_eq!(change_pct(0.0, 1.0), None);
        assert_eq!(fmt_value(2_024_000.0, Unit::Iops), "2,024,000");
        assert_eq!(fmt_value(2.94, Unit::Micros), "2.94");
        assert_eq!(fmt_change(Some(385.04)), "+385.0%");
        assert_eq!(fmt_change(None), "n/a");
    }
}
