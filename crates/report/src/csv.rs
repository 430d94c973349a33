//! CSV export: one tidy table for spreadsheets and data frames. Every row is one scope
//! of the run: `kind=summary` rows carry the measured-phase figures of the fleet, each
//! stream, each worker and each disk of each worker (op = all, read, write);
//! `kind=interval` rows carry the per-interval series of the fleet, each host and each
//! worker group (one row per interval × scope × op; warm-up included, flagged); `kind=workload` rows say what ran
//! (one per worker group and stream: fleet shape, block sizes, read %, random %, engine,
//! target); with a published-report convention, `kind=convention` rows carry each of its
//! figures (`convention`, `figure`, `value`) beside the exact one (`exact_figure`,
//! `exact_value`). Every row carries the run's identity (store id, name, labels, profile), so
//! exports of several runs can be concatenated. Cells that a row kind does not have are
//! empty, and so are figures that were not measured (never 0). Text cells cannot act on
//! the reader: their control characters are escaped and a cell a spreadsheet would take
//! for a formula (`=HYPERLINK(…)`) starts with `'` (`text_field`); numbers are written
//! as numbers. Column meanings are in docs/results.md.

use std::io::{self, Write};

use iofleet_stats::result::{IntervalOps, RunResult};
use iofleet_stats::OpSummary;

use crate::convention::Convention;
use crate::text::escape;
use crate::workload;
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
    "disk",
    "group",
    "workers",
    "disks_per_worker",
    "disk_size_bytes",
    "threads_per_disk",
    "qd",
    "block_sizes",
    "read_pct",
    "random_pct",
    "engine",
    "target",
    "run_id",
    "run_name",
    "labels",
    "profile",
    "convention",
    "figure",
    "value",
    "exact_figure",
    "exact_value",
];

/// Where the run's identity (run_id, run_name, labels, profile) starts.
fn ident_at() -> usize {
    COLUMNS
        .iter()
        .position(|c| *c == "run_id")
        .expect("run_id is a column")
}

/// Quote a field when it needs it (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A text cell (a name, label, path, block-size list): control characters made visible
/// (`text::escape`), then, when it starts with a character a spreadsheet reads as the
/// start of a formula (`=`, `+`, `-`, `@`, tab, carriage return), a leading `'` so it
/// stays text; then quoted as `field` does. Numbers never go through here (`Value`),
/// so a negative figure stays a number.
pub fn text_field(s: &str) -> String {
    let s = escape(s);
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        field(&format!("'{s}"))
    } else {
        field(&s)
    }
}

/// What a cell holds: a number (written as it is) or text (`text_field`).
pub trait Value {
    fn cell(&self) -> String;
}

macro_rules! numeric_cells {
    ($($t:ty),*) => {$(
        impl Value for $t {
            fn cell(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
numeric_cells!(u8, u32, u64, usize, i32, i64, f64, bool);

impl Value for str {
    fn cell(&self) -> String {
        text_field(self)
    }
}

impl Value for String {
    fn cell(&self) -> String {
        text_field(self)
    }
}

impl<T: Value + ?Sized> Value for &T {
    fn cell(&self) -> String {
        (**self).cell()
    }
}

/// One row under construction: cells by column name, the run's identity filled in.
struct Row(Vec<String>);

impl Row {
    fn new(kind: &str, ident: &[String; 4]) -> Row {
        let mut cells = vec![String::new(); COLUMNS.len()];
        cells[0] = kind.to_string();
        let at = ident_at();
        cells[at..at + 4].clone_from_slice(ident);
        Row(cells)
    }

    fn set(&mut self, col: &str, v: impl Value) -> &mut Row {
        let i = COLUMNS
            .iter()
            .position(|c| *c == col)
            .expect("a known column");
        self.0[i] = v.cell();
        self
    }

    fn opt(&mut self, col: &str, v: Option<f64>) -> &mut Row {
        match v {
            Some(v) => self.set(col, v),
            None => self,
        }
    }

    fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", self.0.join(","))
    }
}

fn summary_row(
    out: &mut dyn Write,
    ident: &[String; 4],
    r: &RunResult,
    scope: &str,
    name: &str,
    op: &str,
    s: &OpSummary,
) -> io::Result<()> {
    let mut row = Row::new("summary", ident);
    row.set("duration_s", r.run.duration_s)
        .set("scope", scope)
        .set("name", name)
        .set("op", op)
        .set("ios", s.ios)
        .set("bytes", s.bytes)
        .set("errors", s.errors);
    fill_summary(&mut row, r, s);
    row.write(out)
}

/// Rates and latencies of a measured-phase row.
fn fill_summary(row: &mut Row, r: &RunResult, s: &OpSummary) {
    if r.measured() {
        row.set("iops", s.iops).set("mbps", s.mbps);
    }
    let l = |f: fn(&iofleet_stats::LatencySummary) -> f64| s.lat(f);
    row.opt("mean_us", l(|l| l.mean))
        .opt("stddev_us", l(|l| l.stddev))
        .opt("min_us", l(|l| l.min))
        .opt("p50_us", l(|l| l.p50))
        .opt("p90_us", l(|l| l.p90))
        .opt("p95_us", l(|l| l.p95))
        .opt("p99_us", l(|l| l.p99))
        .opt("p99_9_us", l(|l| l.p99_9))
        .opt("p99_99_us", l(|l| l.p99_99))
        .opt("max_us", l(|l| l.max));
}

/// A disk's summary row: a worker's row with its disk set.
fn disk_row(
    out: &mut dyn Write,
    mut row: Row,
    r: &RunResult,
    name: &str,
    op: &str,
    s: &OpSummary,
) -> io::Result<()> {
    row.set("duration_s", r.run.duration_s)
        .set("scope", "disk")
        .set("name", name)
        .set("op", op)
        .set("ios", s.ios)
        .set("bytes", s.bytes)
        .set("errors", s.errors);
    fill_summary(&mut row, r, s);
    row.write(out)
}

/// The figures an interval row carries for one direction.
fn interval_cells<'a>(row: &'a mut Row, o: &IntervalOps) -> &'a mut Row {
    row.set("ios", o.ios)
        .set("iops", o.iops)
        .set("mbps", o.mbps)
        .opt("mean_us", o.mean_us)
        .opt("p50_us", o.p50_us)
        .opt("p90_us", o.p90_us)
        .opt("p99_us", o.p99_us)
        .opt("p99_9_us", o.p99_9_us)
        .opt("max_us", o.max_us)
}

impl Exporter for CsvExporter {
    fn export(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        self.export_in(r, Convention::Exact, out)
    }
}

impl CsvExporter {
    /// The table, with one `kind=convention` row per figure of `convention` (none for
    /// `Exact`) after the fleet's summary rows.
    pub fn export_in(
        &self,
        r: &RunResult,
        convention: Convention,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        writeln!(out, "{}", COLUMNS.join(","))?;
        let ident = [
            r.stored.as_ref().map_or("", |s| s.id.as_str()),
            r.stored.as_ref().map_or("", |s| s.name.as_str()),
            &r.stored.as_ref().map_or_else(String::new, |s| {
                s.labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            }),
            r.run.profile.as_str(),
        ]
        .map(text_field);
        for w in workload::rows(&r.run.plan) {
            Row::new("workload", &ident)
                .set("scope", "stream")
                .set("name", &w.stream)
                .set("group", &w.group)
                .set("workers", w.workers)
                .set("disks_per_worker", w.disks_per_worker)
                .set("disk_size_bytes", w.disk_size_bytes)
                .set("threads_per_disk", w.threads_per_disk)
                .set("qd", w.qd)
                .set("block_sizes", &w.block_sizes)
                .set("read_pct", w.read_pct)
                .set("random_pct", w.random_pct)
                .set("engine", &r.run.engine)
                .set("target", &r.run.target)
                .write(out)?;
        }
        let s = &r.summary;
        for (op, o) in [("all", &s.all), ("read", &s.read), ("write", &s.write)] {
            summary_row(out, &ident, r, "fleet", "", op, o)?;
        }
        for f in convention.figures(r) {
            Row::new("convention", &ident)
                .set("duration_s", r.run.duration_s)
                .set("scope", "fleet")
                .set("name", &f.label)
                .set("convention", convention.name())
                .set("figure", f.key)
                .opt("value", f.value)
                .set("exact_figure", f.exact_label)
                .opt("exact_value", f.exact)
                .write(out)?;
        }
        for st in &r.streams {
            for (op, o) in [("all", &st.all), ("read", &st.read), ("write", &st.write)] {
                summary_row(out, &ident, r, "stream", &st.name, op, o)?;
            }
        }
        for w in &r.workers {
            let name = format!("{}@{}", w.worker, w.host);
            for (op, o) in [("all", &w.all), ("read", &w.read), ("write", &w.write)] {
                summary_row(out, &ident, r, "worker", &name, op, o)?;
            }
        }
        for w in &r.workers {
            let name = format!("{}@{}", w.worker, w.host);
            for d in &w.disks {
                for (op, o) in [("all", &d.all), ("read", &d.read), ("write", &d.write)] {
                    let mut row = Row::new("summary", &ident);
                    row.set("disk", d.disk);
                    disk_row(out, row, r, &name, op, o)?;
                }
            }
        }
        let parts = [("host", &r.host_intervals), ("group", &r.group_intervals)];
        for (k, i) in r.intervals.iter().enumerate() {
            let head = |scope: &str, name: &str, op: &str| {
                let mut row = Row::new("interval", &ident);
                row.set("interval", i.index)
                    .set("t_s", i.t_s)
                    .set("duration_s", i.duration_s)
                    .set("warmup", i.warmup)
                    .set("scope", scope)
                    .set("name", name)
                    .set("op", op);
                row
            };
            for (op, o) in [("all", &i.all), ("read", &i.read), ("write", &i.write)] {
                let mut row = head("fleet", "", op);
                if op == "all" {
                    row.set("errors", i.errors);
                }
                interval_cells(&mut row, o).write(out)?;
            }
            for (scope, list) in parts {
                for part in list.iter() {
                    // Rows run in interval order: the k-th is this interval's.
                    let at = part.rows.get(k).filter(|p| p.index == i.index);
                    let Some(p) = at.or_else(|| part.rows.iter().find(|p| p.index == i.index))
                    else {
                        continue;
                    };
                    for (op, o) in [("all", &p.all), ("read", &p.read), ("write", &p.write)] {
                        interval_cells(&mut head(scope, &part.name, op), o).write(out)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_a_spreadsheet_would_evaluate_stays_text() {
        assert_eq!(
            text_field("=HYPERLINK(\"http://x\",\"y\")"),
            "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""
        );
        for (given, want) in [
            ("+1", "'+1"),
            ("-5%", "'-5%"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "\\tx"),
            ("a=b", "a=b"),
            ("4k/60:64k/40", "4k/60:64k/40"),
            ("evil\u{1b}]0;t\u{7}", "evil\\x1b]0;t\\x07"),
            ("line\nbreak", "line\\nbreak"),
        ] {
            assert_eq!(text_field(given), want, "{given:?}");
        }
    }

    #[test]
    fn numbers_stay_numbers() {
        let mut row = Row::new(
            "summary",
            &[String::new(), String::new(), String::new(), String::new()],
        );
        let change = -5.0 * 1.5;
        row.set("iops", change).set("ios", 12u64).set("name", "-5");
        let line = row.0.join(",");
        assert!(line.contains(",-7.5,"), "{line}");
        assert!(line.contains(",'-5,"), "{line}");
        assert!(line.contains(",12,"), "{line}");
    }
}
