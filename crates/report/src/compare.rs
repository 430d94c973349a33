//! Comparing runs: the metric vocabulary (`iops`, `read.p99`, `write.mean`, …) shared by
//! the comparison table, the report's bars and the `--fail-if` gate, and the tables that
//! put runs side by side with their % change against a baseline.
//!
//! Every figure is read from a `RunResult` whose summary was merged from histograms
//! upstream; this module only looks figures up, divides and formats. A figure a run did
//! not measure is `None` and printed as `–`. Gains are shown in one of two ways
//! (`Gain`): a change `(new − old) ÷ old`, undefined ("n/a") when the baseline is 0 and
//! the value is not, or a ratio `new ÷ old × 100`, as published reports give it,
//! undefined when the baseline is 0. `Pivot` lays runs out as those reports do: one row
//! per value of one label (the test), one column per value of another (the
//! configuration). With a convention other than `Exact`, the comparison adds one row
//! per figure of that tool (`convention`), labelled with the tool, below the exact rows.
//! Every column is as wide as its widest cell: names, labels and configurations are
//! never cut, and they are printed escaped (`text`): a stored name cannot move the
//! cursor or reorder the line it is printed on.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{json, Value};

use iofleet_stats::result::RunResult;
use iofleet_stats::OpSummary;

use crate::convention::{Convention, Figure};
use crate::text::{escape, Escaped};
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
    /// Mean latency of the median-IOPS interval (run-wide only).
    MedianIntervalMean,
    /// p99 latency of the median-IOPS interval (run-wide only).
    MedianIntervalP99,
    /// IOPS of the peak interval (run-wide only).
    PeakIops,
    /// Measured mean outstanding I/O (run-wide only).
    Outstanding,
    /// Whole-host CPU busy, % of all cores (run-wide only).
    Cpu,
    /// Process CPU µs per I/O (run-wide only).
    CpuPerIo,
    /// Host memory in use, % (run-wide only).
    Mem,
    /// Network received / sent, 10^6 bytes/s summed over the hosts that ran workers
    /// (run-wide only).
    NetRx,
    NetTx,
    /// Busy share of the devices under the targets, %, mean over the hosts that ran
    /// workers (run-wide only).
    DiskBusy,
    /// The observer hosts (docs/fleet.md): CPU busy, % of all cores, their mean; network
    /// received and sent, 10^6 bytes/s, and device throughput, 10^6 bytes/s, summed
    /// (run-wide only).
    ObserverCpu,
    ObserverNetRx,
    ObserverNetTx,
    ObserverDiskMbps,
    /// The storage software the observers watch (`observe`, docs/storage-side.md), every
    /// entry on every observer summed: CPU, percent of one core; read and written,
    /// 10^6 bytes/s (run-wide only).
    StorageCpu,
    StorageReadMbps,
    StorageWriteMbps,
    /// What the storage's own exporter said its IOPS were (`scrape`'s `iops:` metrics,
    /// docs/storage-side.md), run-wide.
    StorageSaidIops,
    StorageSaidLatencyMs,
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
    /// A latency in ms (the storage exporter's mean, `storage_said_latency_ms`).
    Millis,
}

impl Unit {
    /// Unit to print after a metric's label in tables (empty where the label says it).
    pub fn table_suffix(self) -> &'static str {
        match self {
            Unit::Iops | Unit::MBps | Unit::Count | Unit::Io => "",
            Unit::Micros => "µs",
            Unit::Percent => "%",
            Unit::MicrosPerIo => "µs",
            Unit::Millis => "ms",
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
            Unit::Millis => "ms",
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
    ("median_interval_mean", Field::MedianIntervalMean),
    ("median_interval_p99", Field::MedianIntervalP99),
    ("peak_iops", Field::PeakIops),
    ("outstanding", Field::Outstanding),
    ("cpu", Field::Cpu),
    ("cpu_us_per_io", Field::CpuPerIo),
    ("mem", Field::Mem),
    ("net_rx_mbps", Field::NetRx),
    ("net_tx_mbps", Field::NetTx),
    ("disk_busy", Field::DiskBusy),
    ("observer_cpu", Field::ObserverCpu),
    ("observer_net_rx_mbps", Field::ObserverNetRx),
    ("observer_net_tx_mbps", Field::ObserverNetTx),
    ("observer_disk_mbps", Field::ObserverDiskMbps),
    ("storage_cpu", Field::StorageCpu),
    ("storage_read_mbps", Field::StorageReadMbps),
    ("storage_write_mbps", Field::StorageWriteMbps),
    ("storage_said_iops", Field::StorageSaidIops),
    ("storage_said_latency_ms", Field::StorageSaidLatencyMs),
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
            Field::MedianIntervalMean => "latency mean (median-IOPS interval)",
            Field::MedianIntervalP99 => "p99 (median-IOPS interval)",
            Field::PeakIops => "IOPS (peak interval)",
            Field::Outstanding => "outstanding I/O (mean)",
            Field::Cpu => "host CPU",
            Field::CpuPerIo => "CPU per I/O",
            Field::Mem => "host memory used",
            Field::NetRx => "network received MB/s",
            Field::NetTx => "network sent MB/s",
            Field::DiskBusy => "device busy",
            Field::ObserverCpu => "observer hosts' CPU",
            Field::ObserverNetRx => "observer hosts' network received MB/s",
            Field::ObserverNetTx => "observer hosts' network sent MB/s",
            Field::ObserverDiskMbps => "observer hosts' disks MB/s",
            Field::StorageCpu => "storage software CPU (of one core)",
            Field::StorageReadMbps => "storage software read MB/s",
            Field::StorageWriteMbps => "storage software written MB/s",
            Field::StorageSaidIops => "IOPS the storage's exporter said",
            Field::StorageSaidLatencyMs => "mean latency the storage's exporter said",
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
            Field::Iops | Field::IopsMedian | Field::PeakIops => Unit::Iops,
            Field::Mbps
            | Field::NetRx
            | Field::NetTx
            | Field::ObserverNetRx
            | Field::ObserverNetTx
            | Field::ObserverDiskMbps
            | Field::StorageReadMbps
            | Field::StorageWriteMbps => Unit::MBps,
            Field::DiskBusy | Field::ObserverCpu | Field::StorageCpu => Unit::Percent,
            Field::Ios | Field::Errors => Unit::Count,
            Field::StorageSaidIops => Unit::Iops,
            Field::StorageSaidLatencyMs => Unit::Millis,
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
            Field::Iops
                | Field::Mbps
                | Field::IopsMedian
                | Field::PeakIops
                | Field::Ios
                | Field::StorageSaidIops
        )
    }

    fn op(self, r: &RunResult) -> &OpSummary {
        match self.scope {
            Scope::All => &r.summary.all,
            Scope::Read => &r.summary.read,
            Scope::Write => &r.summary.write,
        }
    }

    /// The metric's value in `r`; None when the run did not measure it (no I/O in that
    /// direction, CPU not recorded, nothing measured at all, …).
    pub fn value(self, r: &RunResult) -> Option<f64> {
        let s = &r.summary;
        let o = self.op(r);
        let measured = r.measured();
        let rate = |v: f64| measured.then_some(v);
        let sum_known = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>());
        match self.field {
            Field::Iops => rate(o.iops),
            Field::Mbps => rate(o.mbps),
            Field::Mean => o.lat(|l| l.mean),
            Field::Stddev => o.lat(|l| l.stddev),
            Field::Min => o.lat(|l| l.min),
            Field::P50 => o.lat(|l| l.p50),
            Field::P90 => o.lat(|l| l.p90),
            Field::P95 => o.lat(|l| l.p95),
            Field::P99 => o.lat(|l| l.p99),
            Field::P99_9 => o.lat(|l| l.p99_9),
            Field::P99_99 => o.lat(|l| l.p99_99),
            Field::Max => o.lat(|l| l.max),
            Field::Ios => Some(o.ios as f64),
            Field::Errors => Some(o.errors as f64),
            Field::IopsMedian => s.iops_median_interval,
            Field::MedianIntervalMean => r
                .interval_headline()
                .median_interval
                .and_then(|p| p.all.mean_us),
            Field::MedianIntervalP99 => r
                .interval_headline()
                .median_interval
                .and_then(|p| p.all.p99_us),
            Field::PeakIops => r.interval_headline().peak_interval.map(|p| p.iops),
            Field::Outstanding => s.outstanding_io.measured_mean,
            Field::Cpu => s.cpu.as_ref().map(|c| c.host_pct),
            Field::CpuPerIo => s.cpu.as_ref().and_then(|c| c.us_per_io),
            Field::Mem => s.memory.as_ref().map(|m| m.host_used_pct),
            Field::NetRx => sum_known(
                worker_hosts(r)
                    .filter_map(|h| h.net.as_ref())
                    .map(|n| n.rx_mbps)
                    .collect(),
            ),
            Field::NetTx => sum_known(
                worker_hosts(r)
                    .filter_map(|h| h.net.as_ref())
                    .map(|n| n.tx_mbps)
                    .collect(),
            ),
            Field::DiskBusy => {
                let busy: Vec<f64> = worker_hosts(r)
                    .filter_map(|h| h.disk.as_ref())
                    .map(|d| d.busy_pct)
                    .collect();
                sum_known(busy.clone()).map(|s| s / busy.len() as f64)
            }
            Field::ObserverCpu => s.observers.as_ref().map(|o| o.cpu.host_pct),
            Field::ObserverNetRx => s.observers.as_ref().map(|o| o.net.rx_mbps),
            Field::ObserverNetTx => s.observers.as_ref().map(|o| o.net.tx_mbps),
            Field::ObserverDiskMbps => s
                .observers
                .as_ref()
                .and_then(|o| o.disk.as_ref())
                .map(|d| d.mbps),
            Field::StorageCpu => storage_sum(s, |e| e.cpu_pct),
            Field::StorageReadMbps => storage_sum(s, |e| e.read_mbps),
            Field::StorageWriteMbps => storage_sum(s, |e| e.write_mbps),
            Field::StorageSaidIops => s.observers.as_ref().and_then(|o| o.storage_said_iops()),
            Field::StorageSaidLatencyMs => s
                .observers
                .as_ref()
                .and_then(|o| o.storage_said_latency_ms()),
        }
    }
}

/// A figure of the watched storage software as a whole, each process once however
/// many entries match it (`HostResources::storage_whole`); None when the run's
/// observers watched none.
fn storage_sum(
    s: &iofleet_stats::result::RunSummary,
    f: impl Fn(&iofleet_stats::StorageRates) -> f64,
) -> Option<f64> {
    s.observers.as_ref()?.storage_whole(f)
}

/// The hosts of `r` that ran workers (observers left out).
fn worker_hosts(r: &RunResult) -> impl Iterator<Item = &iofleet_stats::result::HostSummary> {
    r.hosts.iter().filter(|h| !h.observer)
}

/// Metrics shown by `iofleet compare`, in order.
pub fn default_metrics() -> Vec<Metric> {
    [
        "iops",
        "iops_median",
        "peak_iops",
        "median_interval_mean",
        "median_interval_p99",
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

/// How a run's figure is set against the baseline's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Gain {
    /// `(new − old) ÷ old`, printed as a signed percentage (+385.0%).
    #[default]
    Change,
    /// `new ÷ old × 100`, printed as a percentage (790%), as published reports give gains.
    Ratio,
}

impl Gain {
    pub fn as_str(self) -> &'static str {
        match self {
            Gain::Change => "change",
            Gain::Ratio => "ratio",
        }
    }

    /// Column heading for tables.
    pub fn heading(self) -> &'static str {
        match self {
            Gain::Change => "change",
            Gain::Ratio => "ratio",
        }
    }

    /// How the gain is computed, for captions.
    pub fn formula(self) -> &'static str {
        match self {
            Gain::Change => "(new − old) ÷ old",
            Gain::Ratio => "new ÷ old × 100",
        }
    }

    /// The gain of `value` against `base`, in percent; None when either is unknown or
    /// the gain is undefined (base 0).
    pub fn of(self, base: Option<f64>, value: Option<f64>) -> Option<f64> {
        let (base, value) = (base?, value?);
        match self {
            Gain::Change => change_pct(base, value),
            Gain::Ratio => (base != 0.0).then(|| value / base * 100.0),
        }
    }

    pub fn fmt(self, g: Option<f64>) -> String {
        match (self, g) {
            (Gain::Change, c) => fmt_change(c),
            (Gain::Ratio, Some(r)) => format!("{r:.0}%"),
            (Gain::Ratio, None) => "n/a".into(),
        }
    }
}

/// A possibly unknown value formatted for tables: `–` when unknown.
pub fn fmt_opt(v: Option<f64>, unit: Unit) -> String {
    v.map_or_else(|| "–".into(), |v| fmt_value(v, unit))
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
    /// How gains are shown in tables (the gate and the change chart always use changes).
    pub gain: Gain,
    /// Whose definitions the extra rows follow (`Exact`: none), beside the exact ones.
    pub convention: Convention,
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

    /// Change of `m` in run `i` against the baseline, in percent; None when undefined or
    /// when either run did not measure `m`.
    pub fn change(&self, m: Metric, i: usize) -> Option<f64> {
        Gain::Change.of(m.value(&self.base().result), m.value(&self.runs[i].result))
    }

    /// Gain of `m` in run `i` against the baseline, as `self.gain` says.
    pub fn gain(&self, m: Metric, i: usize) -> Option<f64> {
        self.gain
            .of(m.value(&self.base().result), m.value(&self.runs[i].result))
    }

    /// The plain-text comparison printed by `iofleet compare`, over `metrics`, then
    /// the convention's figures (if any). Columns are as wide as their widest cell:
    /// nothing is cut.
    pub fn write_text(&self, metrics: &[Metric], out: &mut dyn Write) -> io::Result<()> {
        let out = &mut Escaped::new(out);
        self.write_run_list(out)?;
        if self.runs.len() > 2 {
            self.write_config_table(out)?;
            writeln!(out)?;
        }
        // Per metric: the value per run and its gain against the baseline.
        let mut rows: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
        for &m in metrics {
            rows.push((
                format!("{} {}", m.label(), m.unit().table_suffix())
                    .trim_end()
                    .to_string(),
                self.runs
                    .iter()
                    .map(|r| fmt_opt(m.value(&r.result), m.unit()))
                    .collect(),
                (0..self.runs.len())
                    .map(|i| self.gain.fmt(self.gain(m, i)))
                    .collect(),
            ));
        }
        let figures: Vec<Vec<Figure>> = self
            .runs
            .iter()
            .map(|r| self.convention.figures(&r.result))
            .collect();
        let base = &figures[self.baseline];
        for (k, f) in base.iter().enumerate() {
            let value = |i: usize| figures[i].get(k).and_then(|g| g.value);
            rows.push((
                f.label.clone(),
                (0..self.runs.len())
                    .map(|i| figures[i].get(k).map_or("–".into(), |g| g.value_text()))
                    .collect(),
                (0..self.runs.len())
                    .map(|i| self.gain.fmt(self.gain.of(value(self.baseline), value(i))))
                    .collect(),
            ));
        }
        let w0 = rows
            .iter()
            .map(|r| width(&r.0))
            .chain([26])
            .max()
            .unwrap_or(0);
        let wv = rows
            .iter()
            .flat_map(|r| r.1.iter().map(|v| width(v)))
            .chain([12])
            .max()
            .unwrap_or(12);
        let wg = rows
            .iter()
            .flat_map(|r| r.2.iter().map(|v| width(v)))
            .chain([10])
            .max()
            .unwrap_or(10);
        let mut header = pad_right("metric", w0);
        for (i, _) in self.runs.iter().enumerate() {
            let _ = write!(header, " {}", pad_left(&format!("[{}]", i + 1), wv));
            if i != self.baseline {
                let _ = write!(header, " {}", pad_left(self.gain.heading(), wg));
            }
        }
        writeln!(out, "{}", header.trim_end())?;
        for (label, values, gains) in &rows {
            let mut line = pad_right(label, w0);
            for i in 0..self.runs.len() {
                let _ = write!(line, " {}", pad_left(&values[i], wv));
                if i != self.baseline {
                    let _ = write!(line, " {}", pad_left(&gains[i], wg));
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        if !base.is_empty() {
            writeln!(out)?;
            writeln!(
                out,
                "rows labelled ({}) follow --convention {} (worker = VM); the exact figures are the rows above; definitions in docs/conventions.md",
                self.convention.tool(),
                self.convention.name()
            )?;
        }
        if self.gain == Gain::Ratio {
            writeln!(out)?;
            writeln!(out, "ratio = new ÷ old × 100 against the baseline")?;
        }
        Ok(())
    }

    /// The numbered list of runs, the baseline marked, an invalid run's reasons under it.
    pub fn write_run_list(&self, out: &mut dyn Write) -> io::Result<()> {
        let out = &mut Escaped::new(out);
        writeln!(out, "runs:")?;
        for (i, r) in self.runs.iter().enumerate() {
            writeln!(
                out,
                "  [{}] {}  {}  {}{}{}",
                i + 1,
                escape(&r.id),
                escape(&r.name),
                escape(&r.labels_text()),
                if r.status_text() != "complete" {
                    format!("  ({})", r.status_text())
                } else {
                    String::new()
                },
                if i == self.baseline {
                    "  <- baseline"
                } else {
                    ""
                }
            )?;
            if !r.result.validity.valid {
                writeln!(
                    out,
                    "      INVALID: {}",
                    escape(&r.result.validity.reasons.join("; "))
                )?;
            }
        }
        writeln!(out)
    }

    /// The multi-configuration table: one row per run with the columns practitioners
    /// publish (those of the VxRail/HCIBench report: IOPS, MB/s, mean, read and write
    /// latency, standard deviation, outstanding I/O, CPU, memory) and the IOPS gain
    /// against the baseline.
    pub fn write_config_table(&self, out: &mut dyn Write) -> io::Result<()> {
        let out = &mut Escaped::new(out);
        let rows = self.config_rows();
        let wc = rows
            .iter()
            .map(|r| width(&r.config))
            .chain([width("configuration")])
            .max()
            .unwrap_or(0);
        let wr = rows
            .iter()
            .map(|r| width(&format!("[{}]", r.index + 1)))
            .chain([4])
            .max()
            .unwrap_or(4);
        writeln!(
            out,
            "{} {} {:>12} {:>8} {:>9} {:>10} {:>9} {:>9} {:>10} {:>11} {:>6} {:>6}",
            pad_right("run", wr),
            pad_right("configuration", wc),
            "IOPS",
            self.gain.heading(),
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
        let v = |r: &RunResult, p: &str| {
            let m = Metric::parse(p).expect("built-in metric");
            fmt_opt(m.value(r), m.unit())
        };
        for row in rows {
            let r = row.result;
            let line = format!(
                "{} {} {:>12} {:>8} {:>9} {:>10} {:>9} {:>9} {:>10} {:>11} {:>6} {:>6}",
                pad_right(&format!("[{}]", row.index + 1), wr),
                pad_right(&row.config, wc),
                v(r, "iops"),
                if row.index == self.baseline {
                    "base".to_string()
                } else {
                    self.gain.fmt(self.gain(iops, row.index))
                },
                opt1(Metric::parse("mbps").expect("mbps").value(r)),
                v(r, "mean"),
                v(r, "read.mean"),
                v(r, "write.mean"),
                v(r, "stddev"),
                fmt_outstanding(&r.summary.outstanding_io),
                opt1(Metric::parse("cpu").expect("cpu").value(r)),
                opt1(Metric::parse("mem").expect("mem").value(r)),
            );
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }

    /// The comparison as JSON (`compare --json`): the runs, the baseline, and per metric
    /// each run's value and gain (null where unknown or undefined).
    pub fn to_json(&self, metrics: &[Metric]) -> Value {
        let mut v = json!({
            "baseline": self.base().id,
            "gain": self.gain.as_str(),
            "gain_formula": self.gain.formula(),
            "runs": self.runs.iter().map(run_json).collect::<Vec<_>>(),
            "metrics": metrics.iter().map(|&m| json!({
                "metric": m.path(),
                "label": m.label(),
                "unit": m.unit().suffix(),
                "higher_is_better": m.higher_is_better(),
                "values": self.runs.iter().map(|r| m.value(&r.result)).collect::<Vec<_>>(),
                "gains": (0..self.runs.len())
                    .map(|i| if i == self.baseline { None } else { self.gain(m, i) })
                    .collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        if self.convention != Convention::Exact {
            v["convention"] = json!({
                "name": self.convention.name(),
                "tool": self.convention.tool(),
                "runs": self
                    .runs
                    .iter()
                    .map(|r| self.convention.to_json(&r.result)["figures"].clone())
                    .collect::<Vec<_>>(),
            });
        }
        v
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

fn run_json(r: &RunData) -> Value {
    json!({
        "id": r.id,
        "name": r.name,
        "labels": r.labels,
        "status": r.status,
        "profile": r.result.run.profile,
        "valid": r.result.validity.valid,
        "invalid_reasons": r.result.validity.reasons,
    })
}

/// Outstanding I/O as `measured/configured`, `–` for an unknown part.
pub fn fmt_outstanding(o: &iofleet_stats::result::Outstanding) -> String {
    format!(
        "{}/{}",
        o.measured_mean
            .map_or_else(|| "–".into(), |m| format!("{m:.1}")),
        o.configured.map_or_else(|| "–".into(), |c| c.to_string())
    )
}

/// A run's figure named by a built-in metric path, formatted for tables (`–` when the
/// run did not measure it).
pub fn metric_text(r: &RunResult, path: &str) -> String {
    let m = Metric::parse(path).expect("built-in metric");
    fmt_opt(m.value(r), m.unit())
}

/// One latency figure of an op formatted for tables, `–` when it had no I/O.
pub fn fmt_lat(s: &OpSummary, f: fn(&iofleet_stats::LatencySummary) -> f64) -> String {
    fmt_opt(s.lat(f), Unit::Micros)
}

/// Runs laid out as published reports do: one row per value of the `by` label (the
/// test), one column per value of the `configs` label (the configuration), each cell
/// the median of its runs' figures, with the gain of each configuration against the
/// baseline's in the same row.
#[derive(Clone, Debug)]
pub struct Pivot {
    pub by: String,
    pub configs: String,
    /// Row values, in order of first appearance among the runs.
    pub tests: Vec<String>,
    /// Column values, the baseline's first, then in order of first appearance.
    pub columns: Vec<String>,
    /// cells[test][column]: indices into the runs.
    pub cells: Vec<Vec<Vec<usize>>>,
}

impl Pivot {
    /// Lay `runs` out by label `by` (rows) and `configs` (columns); the baseline run's
    /// `configs` value is the baseline column. A run lacking either label is an error
    /// naming it.
    pub fn new(cmp: &Comparison<'_>, by: &str, configs: &str) -> Result<Pivot, String> {
        let label = |r: &RunData, key: &str, flag: &str| {
            r.labels.get(key).cloned().ok_or_else(|| {
                format!(
                    "{flag} {key}: run {} ({}) has no label '{key}' (its labels: {})",
                    r.id,
                    r.name,
                    if r.labels.is_empty() {
                        "none".to_string()
                    } else {
                        r.labels_text()
                    }
                )
            })
        };
        if by == configs {
            return Err(format!(
                "--configs {configs}: must be another label than --by {by}"
            ));
        }
        let mut tests: Vec<String> = Vec::new();
        let mut columns = vec![label(cmp.base(), configs, "--configs")?];
        let mut at: Vec<(usize, usize)> = Vec::new();
        for r in cmp.runs {
            let (t, c) = (label(r, by, "--by")?, label(r, configs, "--configs")?);
            let ti = tests.iter().position(|x| *x == t).unwrap_or_else(|| {
                tests.push(t);
                tests.len() - 1
            });
            let ci = columns.iter().position(|x| *x == c).unwrap_or_else(|| {
                columns.push(c);
                columns.len() - 1
            });
            at.push((ti, ci));
        }
        let mut cells = vec![vec![Vec::new(); columns.len()]; tests.len()];
        for (i, (t, c)) in at.into_iter().enumerate() {
            cells[t][c].push(i);
        }
        Ok(Pivot {
            by: by.into(),
            configs: configs.into(),
            tests,
            columns,
            cells,
        })
    }

    /// The cell's figure: the median over its runs that measured `m` (None: no run, or
    /// none measured it).
    pub fn value(&self, cmp: &Comparison<'_>, m: Metric, t: usize, c: usize) -> Option<f64> {
        let known: Vec<f64> = self.cells[t][c]
            .iter()
            .filter_map(|&i| m.value(&cmp.runs[i].result))
            .collect();
        iofleet_stats::summary::median_of(&known)
    }

    /// Gain of column `c` against the baseline column in row `t`.
    pub fn gain(&self, cmp: &Comparison<'_>, m: Metric, t: usize, c: usize) -> Option<f64> {
        cmp.gain
            .of(self.value(cmp, m, t, 0), self.value(cmp, m, t, c))
    }

    /// One table per metric: the test column, then per configuration its value and
    /// (but for the baseline) its gain.
    pub fn write_text(
        &self,
        cmp: &Comparison<'_>,
        metrics: &[Metric],
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let out = &mut Escaped::new(out);
        let w0 = self
            .tests
            .iter()
            .map(|t| width(t))
            .chain([width(&self.by)])
            .max()
            .unwrap_or(4);
        // Each configuration's value column, and its gain column, as wide as its name.
        let wv: Vec<usize> = self.columns.iter().map(|c| width(c).max(12)).collect();
        let gain_head = |name: &str| format!("{name} {}", cmp.gain.heading());
        let wg: Vec<usize> = self
            .columns
            .iter()
            .map(|c| width(&gain_head(c)).max(10))
            .collect();
        for (k, &m) in metrics.iter().enumerate() {
            if k > 0 {
                writeln!(out)?;
            }
            writeln!(
                out,
                "{}: one row per {}, one column per {}; {} = {} against {}={}",
                format!("{} {}", m.label(), m.unit().table_suffix()).trim_end(),
                self.by,
                self.configs,
                cmp.gain.heading(),
                cmp.gain.formula(),
                self.configs,
                escape(&self.columns[0])
            )?;
            let mut head = pad_right(&self.by, w0);
            for (c, name) in self.columns.iter().enumerate() {
                let _ = write!(head, "  {}", pad_left(name, wv[c]));
                if c > 0 {
                    let _ = write!(head, "  {}", pad_left(&gain_head(name), wg[c]));
                }
            }
            writeln!(out, "{}", head.trim_end())?;
            for (t, test) in self.tests.iter().enumerate() {
                let mut line = pad_right(test, w0);
                for c in 0..self.columns.len() {
                    let _ = write!(
                        line,
                        "  {}",
                        pad_left(&fmt_opt(self.value(cmp, m, t, c), m.unit()), wv[c])
                    );
                    if c > 0 {
                        let _ = write!(
                            line,
                            "  {}",
                            pad_left(&cmp.gain.fmt(self.gain(cmp, m, t, c)), wg[c])
                        );
                    }
                }
                writeln!(out, "{}", line.trim_end())?;
            }
        }
        Ok(())
    }

    /// The tables as JSON: per metric, per test, per configuration the runs, the value
    /// and the gain (null for the baseline column, unknown or undefined figures).
    pub fn to_json(&self, cmp: &Comparison<'_>, metrics: &[Metric]) -> Value {
        json!({
            "by": self.by,
            "configs": self.configs,
            "baseline_config": self.columns[0],
            "columns": self.columns,
            "tables": metrics.iter().map(|&m| json!({
                "metric": m.path(),
                "unit": m.unit().suffix(),
                "rows": self.tests.iter().enumerate().map(|(t, test)| json!({
                    "test": test,
                    "cells": self.columns.iter().enumerate().map(|(c, config)| json!({
                        "config": config,
                        "runs": self.cells[t][c].iter().map(|&i| cmp.runs[i].id.clone()).collect::<Vec<_>>(),
                        "value": self.value(cmp, m, t, c),
                        "gain": if c == 0 { None } else { self.gain(cmp, m, t, c) },
                    })).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }
}

pub use crate::text::width;
// The binary reads the dash renderer from here too (`compare::opt_fixed`, `compare::opt1`).
pub use crate::figures::{opt1, opt_fixed};

/// `s` escaped (`text::escape`) and left-aligned in `w` columns, never cut.
pub fn pad_right(s: &str, w: usize) -> String {
    let s = escape(s);
    format!("{s}{}", " ".repeat(w.saturating_sub(width(&s))))
}

/// `s` escaped (`text::escape`) and right-aligned in `w` columns, never cut.
pub fn pad_left(s: &str, w: usize) -> String {
    let s = escape(s);
    format!("{}{s}", " ".repeat(w.saturating_sub(width(&s))))
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

    #[test]
    fn gains_as_change_or_ratio() {
        // vSAN 7 NVMe namespaces, 256K sequential write: 1,987 → 15,700 IOPS.
        let r = Gain::Ratio.of(Some(1987.0), Some(15700.0)).unwrap();
        assert_eq!(Gain::Ratio.fmt(Some(r)), "790%");
        let c = Gain::Change.of(Some(1987.0), Some(15700.0)).unwrap();
        assert_eq!(Gain::Change.fmt(Some(c)), "+690.1%");
        assert_eq!(Gain::Ratio.of(Some(0.0), Some(1.0)), None);
        assert_eq!(Gain::Change.of(None, Some(1.0)), None);
        assert_eq!(Gain::Ratio.of(Some(1.0), None), None);
        assert_eq!(fmt_opt(None, Unit::Micros), "–");
    }
}
