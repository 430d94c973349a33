//! CSV export: one tidy table for spreadsheets and data frames. Every row is one scope
//! of the run: `kind=summary` rows carry the measured-phase figures of the fleet, each
//! stream and each worker (op = all, read, write); `kind=interval` rows carry the
//! per-interval series (warm-up included, flagged). Cells that a row kind does not have
//! are empty. Column meanings are in docs/store.md.

use std::io::{self, Write};

use iofleet_stats::result::RunResult;
use iofleet_stats::OpSummary;

use crate::Exporter;

pub struct CsvExporter;

pub const COLUMNS: &[&str] = &[
    "kind",
    "interval",
    "t_s",
    "duration_s",
    "warmup",
    "scope",
    "name",
    "op",
    "ios",
    "bytes",
    "errors",
    "iops",
    "mbps",
    "mean_us",
    "stddev_us",
    "min_us",
    "p50_us",
    "p90_us",
    "p95_us",
    "p99_us",
    "p99_9_us",
    "p99_99_us",
    "max_us",
];

/// Quote a field when it needs it (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn summary_row(
    out: &mut dyn Write,
    duration_s: f64,
    scope: &str,
    name: &str,
    op: &str,
    s: &OpSummary,
) -> io::Result<()> {
    let l = &s.latency_us;
    writeln!(
        out,
        "summary,,,{duration_s},,{scope},{},{op},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        field(name),
        s.ios,
        s.bytes,
        s.errors,
        s.iops,
        s.mbps,
        l.mean,
        l.stddev,
        l.min,
        l.p50,
        l.p90,
        l.p95,
        l.p99,
        l.p99_9,
        l.p99_99,
        l.max
    )
}

impl Exporter for CsvExporter {
    fn export(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", COLUMNS.join(","))?;
        let d = r.run.duration_s;
        let s = &r.summary;
        for (op, o) in [("all", &s.all), ("read", &s.read), ("write", &s.write)] {
            summary_row(out, d, "fleet", "", op, o)?;
        }
        for st in &r.streams {
            for (op, o) in [("all", &st.all), ("read", &st.read), ("write", &st.write)] {
                summary_row(out, d, "stream", &st.name, op, o)?;
            }
        }
        for w in &r.workers {
            let name = format!("{}@{}", w.worker, w.host);
            for (op, o) in [("all", &w.all), ("read", &w.read), ("write", &w.write)] {
                summary_row(out, d, "worker", &name, op, o)?;
            }
        }
        for i in &r.intervals {
            let head = format!(
                "interval,{},{},{},{},fleet,",
                i.index, i.t_s, i.duration_s, i.warmup
            );
            writeln!(
                out,
                "{head},all,{},,{},{},{},,,,{},,,{},,,",
                i.ios, i.errors, i.iops, i.mbps, i.p50_us, i.p99_us
            )?;
            writeln!(
                out,
                "{head},read,,,,{},,,,,{},,,{},,,",
                i.read_iops, i.read_p50_us, i.read_p99_us
            )?;
            writeln!(
                out,
                "{head},write,,,,{},,,,,{},,,{},,,",
                i.write_iops, i.write_p50_us, i.write_p99_us
            )?;
        }
        Ok(())
    }
}
