//! Markdown for pasting into tickets and wikis: `MarkdownExporter` writes one run
//! (its store id, name and labels, the workload it ran, headline columns, latency
//! percentiles, streams, workers; `–` for figures not measured); `report` writes several
//! stored runs with the run list, the multi-configuration table and the per-metric
//! comparison against the baseline. GitHub-flavoured tables, no HTML, no images.

use std::io::{self, Write};

use iofleet_stats::result::RunResult;
use iofleet_stats::OpSummary;

use crate::compare::{
    default_metrics, fmt_change, fmt_lat, fmt_opt, fmt_outstanding, fmt_value, metric_text,
    Comparison, Gain, Metric, Unit,
};
use crate::convention::Convention;
use crate::figures::opt1;
use crate::text::{escape, Escaped};
use crate::workload;
use crate::{Exporter, RunData};
use iofleet_profile::Bytes;

pub struct MarkdownExporter;

/// User text (names, labels, paths) as it can stand in a table cell or a heading:
/// control and bidi characters made visible (`text::escape`, so a line break cannot end
/// the row) and pipes escaped (so it cannot add a column).
fn cell(s: &str) -> String {
    escape(s).replace('|', "\\|")
}

fn lat_row(out: &mut dyn Write, label: &str, s: &OpSummary) -> io::Result<()> {
    let f = |g: fn(&iofleet_stats::LatencySummary) -> f64| fmt_lat(s, g);
    writeln!(
        out,
        "| {label} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |",
        fmt_value(s.iops, Unit::Iops),
        s.mbps,
        f(|l| l.mean),
        f(|l| l.p50),
        f(|l| l.p90),
        f(|l| l.p95),
        f(|l| l.p99),
        f(|l| l.p99_9),
        f(|l| l.p99_99),
        f(|l| l.max)
    )
}

fn write_run(out: &mut dyn Write, r: &RunResult, heading: &str) -> io::Result<()> {
    let run = &r.run;
    let s = &r.summary;
    writeln!(out, "{heading} {}", cell(&run.profile))?;
    writeln!(out)?;
    writeln!(
        out,
        "engine `{}`, target `{}`, direct I/O {}, started {}, measured {:.1} s after {:.1} s warm-up, interval {} s{}",
        run.engine,
        cell(&run.target),
        if run.direct { "on" } else { "off" },
        run.started_at,
        run.duration_s,
        run.warmup_s,
        run.interval_s,
        if run.interrupted {
            " — **interrupted: partial result**"
        } else {
            ""
        }
    )?;
    writeln!(out)?;
    if let Some(st) = &r.stored {
        writeln!(
            out,
            "run `{}`, name {}, labels {}, status {}",
            st.id,
            cell(&st.name),
            if st.labels.is_empty() {
                "(none)".to_string()
            } else {
                cell(
                    &st.labels
                        .iter()
                        .map(|(k, v)| format!("`{k}={v}`"))
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            },
            st.status
        )?;
        writeln!(out)?;
    }
    if !r.validity.valid {
        writeln!(out, "**INVALID**: {}", cell(&r.validity.reasons.join("; ")))?;
        writeln!(out)?;
    }
    write_workload(out, r)?;
    if !r.measured() {
        writeln!(
            out,
            "**Nothing was measured**: the run was interrupted before its first measured interval, so it has no figures."
        )?;
        for n in &r.notices {
            writeln!(out)?;
            writeln!(out, "> note: {}", cell(n))?;
        }
        return Ok(());
    }
    writeln!(out, "| IOPS | MB/s | latency mean µs | read µs | write µs | stddev µs | outstanding I/O | CPU % | memory % |")?;
    writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        metric_text(r, "iops"),
        metric_text(r, "mbps"),
        metric_text(r, "mean"),
        metric_text(r, "read.mean"),
        metric_text(r, "write.mean"),
        metric_text(r, "stddev"),
        fmt_outstanding(&s.outstanding_io),
        opt1(s.cpu.as_ref().map(|c| c.host_pct)),
        opt1(s.memory.as_ref().map(|m| m.host_used_pct))
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| latency µs | IOPS | MB/s | mean | p50 | p90 | p95 | p99 | p99.9 | p99.99 | max |"
    )?;
    writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    lat_row(out, "read", &s.read)?;
    lat_row(out, "write", &s.write)?;
    lat_row(out, "all", &s.all)?;
    if r.streams.len() > 1 {
        for st in &r.streams {
            lat_row(out, &format!("stream {}", cell(&st.name)), &st.all)?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "IOPS median of measured intervals: {}. I/O errors: {}.",
        fmt_opt(s.iops_median_interval, Unit::Iops),
        s.errors.count
    )?;
    if r.workers.len() > 1 {
        let iops: Vec<f64> = r.workers.iter().map(|w| w.all.iops).collect();
        let min = iops.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = iops.iter().cloned().fold(0.0, f64::max);
        writeln!(
            out,
            "Workers: {}, IOPS per worker {} to {} (slowest at {:.0}% of fastest).",
            r.workers.len(),
            fmt_value(min, Unit::Iops),
            fmt_value(max, Unit::Iops),
            if max > 0.0 { min / max * 100.0 } else { 0.0 }
        )?;
    }
    for n in &r.notices {
        writeln!(out)?;
        writeln!(out, "> note: {}", cell(n))?;
    }
    Ok(())
}

/// The workload table: per group and stream, the fleet shape and the I/O pattern.
fn write_workload(out: &mut dyn Write, r: &RunResult) -> io::Result<()> {
    let rows = workload::rows(&r.run.plan);
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "| group | stream | workers | disks | disk size | threads | qd | block sizes | read % | random % | engine | target |")?;
    writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|---|"
    )?;
    for w in rows {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&w.group),
            cell(&w.stream),
            w.workers,
            w.disks_per_worker,
            Bytes(w.disk_size_bytes),
            w.threads_per_disk,
            w.qd,
            cell(&w.block_sizes),
            w.read_pct,
            w.random_pct,
            cell(&r.run.engine),
            cell(&r.run.target)
        )?;
    }
    writeln!(out)
}

impl Exporter for MarkdownExporter {
    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        self.export_in(result, Convention::Exact, out)
    }
}

impl MarkdownExporter {
    /// One run, then its figures as `convention` defines them (none for `Exact`).
    pub fn export_in(
        &self,
        result: &RunResult,
        convention: Convention,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let out = &mut Escaped::new(out);
        write_run(out, result, "## iofleet run:")?;
        let figures = convention.figures(result);
        if figures.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(
            out,
            "### As {} reports it (`--convention {}`, worker = VM)",
            convention.tool(),
            convention.name()
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "| figure | value | iofleet exact | exact figure | definition |"
        )?;
        writeln!(out, "|---|---:|---:|---|---|")?;
        for f in &figures {
            writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell(&f.label),
                f.value_text(),
                f.exact_text(),
                f.exact_label,
                cell(f.definition)
            )?;
        }
        Ok(())
    }
}

/// The runs' figures as the comparison's convention defines them, each beside the
/// exact figure (nothing for `Exact`).
fn write_convention(cmp: &Comparison<'_>, out: &mut dyn Write) -> io::Result<()> {
    let c = cmp.convention;
    let figures: Vec<Vec<crate::convention::Figure>> =
        cmp.runs.iter().map(|r| c.figures(&r.result)).collect();
    let Some(first) = figures.iter().find(|f| !f.is_empty()) else {
        return Ok(());
    };
    writeln!(
        out,
        "## As {} reports it (`--convention {}`, worker = VM)",
        c.tool(),
        c.name()
    )?;
    writeln!(out)?;
    let mut head = "| figure |".to_string();
    let mut rule = "|---|".to_string();
    for i in 0..cmp.runs.len() {
        head.push_str(&format!(" #{} {} | #{} exact |", i + 1, c.tool(), i + 1));
        rule.push_str("---:|---:|");
    }
    writeln!(out, "{head}")?;
    writeln!(out, "{rule}")?;
    for (k, f) in first.iter().enumerate() {
        let mut line = format!("| {} |", cell(&f.label));
        for run in &figures {
            match run.get(k) {
                Some(g) => line.push_str(&format!(
                    " {} | {} {} |",
                    g.value_text(),
                    g.exact_text(),
                    g.exact_label
                )),
                None => line.push_str(" – | – |"),
            }
        }
        writeln!(out, "{line}")?;
    }
    writeln!(out)
}

/// Several runs: list, multi-configuration table, comparison, then each run.
pub fn report(
    runs: &[RunData],
    baseline: usize,
    convention: Convention,
    out: &mut dyn Write,
) -> io::Result<()> {
    let out = &mut Escaped::new(out);
    let cmp = Comparison {
        runs,
        baseline,
        gain: Gain::Change,
        convention,
    };
    writeln!(out, "# iofleet report")?;
    writeln!(out)?;
    writeln!(
        out,
        "| # | run | name | labels | profile | status | started |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|")?;
    for (i, r) in runs.iter().enumerate() {
        writeln!(
            out,
            "| {}{} | `{}` | {} | {} | {} | {} | {} |",
            i + 1,
            if i == baseline { " (baseline)" } else { "" },
            r.id,
            cell(&r.name),
            cell(&r.labels_text()),
            cell(&r.result.run.profile),
            r.status_text(),
            r.result.run.started_at
        )?;
    }
    writeln!(out)?;
    if runs.len() > 1 {
        writeln!(out, "## Configurations")?;
        writeln!(out)?;
        writeln!(out, "| # | configuration | IOPS | change | MB/s | latency µs | read µs | write µs | stddev µs | outstanding I/O | CPU % | memory % |")?;
        writeln!(
            out,
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        )?;
        let iops = Metric::parse("iops").expect("iops");
        for row in cmp.config_rows() {
            let s = &row.result.summary;
            writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.index + 1,
                cell(&row.config),
                metric_text(row.result, "iops"),
                if row.index == baseline {
                    "baseline".to_string()
                } else {
                    fmt_change(cmp.change(iops, row.index))
                },
                metric_text(row.result, "mbps"),
                metric_text(row.result, "mean"),
                metric_text(row.result, "read.mean"),
                metric_text(row.result, "write.mean"),
                metric_text(row.result, "stddev"),
                fmt_outstanding(&s.outstanding_io),
                opt1(s.cpu.as_ref().map(|c| c.host_pct)),
                opt1(s.memory.as_ref().map(|m| m.host_used_pct))
            )?;
        }
        writeln!(out)?;
        writeln!(out, "## Change against the baseline (#{})", baseline + 1)?;
        writeln!(out)?;
        let mut head = "| metric |".to_string();
        let mut rule = "|---|".to_string();
        for (i, _) in runs.iter().enumerate() {
            head.push_str(&format!(" #{} |", i + 1));
            rule.push_str("---:|");
            if i != baseline {
                head.push_str(&format!(" #{} change |", i + 1));
                rule.push_str("---:|");
            }
        }
        writeln!(out, "{head}")?;
        writeln!(out, "{rule}")?;
        for m in default_metrics() {
            let mut line = format!("| {} {} |", m.label(), m.unit().table_suffix());
            for (i, r) in runs.iter().enumerate() {
                line.push_str(&format!(" {} |", fmt_opt(m.value(&r.result), m.unit())));
                if i != baseline {
                    line.push_str(&format!(" {} |", fmt_change(cmp.change(m, i))));
                }
            }
            writeln!(out, "{line}")?;
        }
        writeln!(out)?;
    }
    write_convention(&cmp, out)?;
    for (i, r) in runs.iter().enumerate() {
        write_run(
            out,
            &r.result,
            &format!("## #{} `{}` {} —", i + 1, r.id, cell(&r.config_text())),
        )?;
        writeln!(out)?;
    }
    Ok(())
}
