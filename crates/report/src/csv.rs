//! CSV export: one tidy table for spreadsheets and data frames. Every row is one scope
//! of the run: `kind=summary` rows carry the measured-phase figures of the fleet, each
//! stream and each worker (op = all, read, write); `kind=interval` rows carry the
//! per-interval series (warm-up included, flagged); `kind=workload` rows say what ran
//! (one per worker group and stream: fleet shape, block sizes, read %, random %, engine,
//! target). Every row ends with the run's identity (store id, name, labels, profile), so
//! exports of several runs can be concatenated. Cells that a row kind does not have are
//! empty, and so are figures that were not measured (never 0). Column meanings are in
//! docs/results.md.

use std::io::{self, Write};

use iofleet_stats::result::RunResult;
use iofleet_stats::OpSummary;

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
];

/// Quote a field when it needs it (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One row under construction: cells by column name, the run's identity filled in.
struct Row(Vec<String>);

impl Row {
    fn new(kind: &str, ident: &[String; 4]) -> Row {
        let mut cells = vec![String::new(); COLUMNS.len()];
        cells[0] = kind.to_string();
        let n = COLUMNS.len();
        cells[n - 4..].clone_from_slice(ident);
        Row(cells)
    }

    fn set(&mut self, col: &str, v: impl ToString) -> &mut Row {
        let i = COLUMNS
            .iter()
            .position(|c| *c == col)
            .expect("a known column");
        self.0[i] = field(&v.to_string());
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
    row.write(out)
}

impl Exporter for CsvExporter {
    fn export(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
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
        .map(field);
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
        for i in &r.intervals {
            let head = |op: &str| {
                let mut row = Row::new("interval", &ident);
                row.set("interval", i.index)
                    .set("t_s", i.t_s)
                    .set("duration_s", i.duration_s)
                    .set("warmup", i.warmup)
                    .set("scope", "fleet")
                    .set("op", op);
                row
            };
            head("all")
                .set("ios", i.ios)
                .set("errors", i.errors)
                .set("iops", i.iops)
                .set("mbps", i.mbps)
                .opt("p50_us", i.p50_us)
                .opt("p99_us", i.p99_us)
                .write(out)?;
            head("read")
                .set("iops", i.read_iops)
                .opt("p50_us", i.read_p50_us)
                .opt("p99_us", i.read_p99_us)
                .write(out)?;
            head("write")
                .set("iops", i.write_iops)
                .opt("p50_us", i.write_p50_us)
                .opt("p99_us", i.write_p99_us)
                .write(out)?;
        }
        Ok(())
    }
}
