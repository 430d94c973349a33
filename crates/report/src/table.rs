//! The human-readable result: a headline with the columns practitioners publish (IOPS,
//! MB/s, mean/read/write latency, standard deviation, outstanding I/O, CPU, memory),
//! then, with a published-report convention (`export_in`), the figures as that tool
//! defines them beside the exact ones, then latency percentiles per direction and per
//! stream, the interval median with the median-IOPS and peak intervals, workers
//! (and their disks, when asked), and errors. Plain text, no colour. A figure that was not measured prints as `–`; a
//! run interrupted before its first measured interval prints that nothing was measured
//! instead of a table of zeros; a run below its quorum of hosts prints `INVALID:` and
//! the reasons under the run lines.
//!
//! Every table is laid out by `Grid`: columns as wide as their widest cell, and, unless
//! `wide` is set, wrapped into blocks of columns that fit `WIDTH` (120) columns, each
//! block repeating the row labels. Free text (notices, warnings) is word-wrapped to the
//! same width. With `wide`, each table row stays on one line, however long.

use std::io::{self, Write};

use iofleet_stats::result::{ErrorSummary, HostSummary, RunResult, RunSummary, VerifySummary};
use iofleet_stats::summary::counts_in_median;
use iofleet_stats::{GeneratorSummary, LatencySummary, OpSummary};

use crate::convention::Convention;
use crate::figures::opt_fixed as d;
use crate::Exporter;

/// The width the table fits unless `wide` is set.
pub const WIDTH: usize = 120;

pub struct TableExporter {
    /// Print every interval, not only a summary line about them.
    pub intervals: bool,
    /// One line per table row, however wide (no wrapping into blocks).
    pub wide: bool,
    /// Print each worker's disks (when some worker has more than one).
    pub disks: bool,
}

/// A text table: `key` leading columns label the rows and are repeated in every block.
struct Grid {
    heads: Vec<(&'static str, bool)>,
    key: usize,
    rows: Vec<Vec<String>>,
}

const INDENT: &str = "  ";
const GAP: usize = 2;

use crate::text::{escape, width};

impl Grid {
    /// Columns as (header, left-aligned).
    fn new(key: usize, heads: &[(&'static str, bool)]) -> Self {
        Grid {
            heads: heads.to_vec(),
            key,
            rows: Vec::new(),
        }
    }

    /// Add a row; its cells are escaped (`text::escape`): a name holding a line break or
    /// an escape sequence stays one visible cell.
    fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.heads.len());
        self.rows
            .push(cells.into_iter().map(|c| escape(&c).into_owned()).collect());
    }

    /// Column blocks (indices) that fit `max` characters; one block without a limit.
    fn blocks(&self, widths: &[usize], max: Option<usize>) -> Vec<Vec<usize>> {
        let keys: Vec<usize> = (0..self.key).collect();
        let key_w: usize = INDENT.len() + widths[..self.key].iter().map(|w| w + GAP).sum::<usize>();
        let mut blocks = Vec::new();
        let mut cur = keys.clone();
        let mut used = key_w;
        for (i, w) in widths.iter().enumerate().skip(self.key) {
            let fits = max.is_none_or(|m| used + w <= m);
            if !fits && cur.len() > self.key {
                blocks.push(std::mem::replace(&mut cur, keys.clone()));
                used = key_w;
            }
            cur.push(i);
            used += w + GAP;
        }
        if cur.len() > self.key || blocks.is_empty() {
            blocks.push(cur);
        }
        blocks
    }

    fn print(&self, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
        let widths: Vec<usize> = self
            .heads
            .iter()
            .enumerate()
            .map(|(i, (h, _))| {
                self.rows
                    .iter()
                    .map(|r| width(&r[i]))
                    .chain([width(h)])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for (b, cols) in self.blocks(&widths, max).iter().enumerate() {
            if b > 0 {
                writeln!(out)?;
            }
            let line = |cells: &dyn Fn(usize) -> String| -> String {
                let mut s = String::from(INDENT);
                for (k, &i) in cols.iter().enumerate() {
                    let c = cells(i);
                    let pad = " ".repeat(widths[i].saturating_sub(width(&c)));
                    if k > 0 {
                        s.push_str(&" ".repeat(GAP));
                    }
                    if self.heads[i].1 {
                        s.push_str(&c);
                        s.push_str(&pad);
                    } else {
                        s.push_str(&pad);
                        s.push_str(&c);
                    }
                }
                s.trim_end().to_string()
            };
            writeln!(out, "{}", line(&|i| self.heads[i].0.to_string()))?;
            for r in &self.rows {
                writeln!(out, "{}", line(&|i| r[i].clone()))?;
            }
        }
        Ok(())
    }
}

/// Word-wrap `text` to `max` characters (none: one line, as is); continuation lines
/// are indented by `hang` spaces. A word longer than a line stays whole; a text that
/// fits is printed as it is.
fn wrap(out: &mut dyn Write, text: &str, max: Option<usize>, hang: usize) -> io::Result<()> {
    let text = crate::text::escape(text);
    let text = text.as_ref();
    let max = match max {
        Some(m) if width(text) > m => m,
        _ => return writeln!(out, "{text}"),
    };
    let mut line = String::new();
    // A word longer than a continuation line (a long path) is cut into pieces that fit.
    let room = max.saturating_sub(hang).max(1);
    let pieces = text.split_whitespace().flat_map(|word| {
        let chars: Vec<char> = word.chars().collect();
        chars
            .chunks(room)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
    });
    for word in pieces {
        if !line.is_empty() && width(&line) + 1 + width(&word) > max {
            writeln!(out, "{line}")?;
            line = " ".repeat(hang);
        } else if !line.trim().is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    writeln!(out, "{line}")
}

fn f0(v: f64) -> String {
    format!("{v:.0}")
}
fn f1(v: f64) -> String {
    format!("{v:.1}")
}

/// Columns of the latency rows (`lat_cells`): the row label, then the figures.
const LATENCY_COLUMNS: &[(&str, bool)] = &[
    ("latency µs", true),
    ("IOPS", false),
    ("MB/s", false),
    ("mean", false),
    ("stddev", false),
    ("p50", false),
    ("p90", false),
    ("p95", false),
    ("p99", false),
    ("p99.9", false),
    ("p99.99", false),
    ("max", false),
];

/// The figure columns a worker, disk or group table ends with.
const FIGURE_HEADS: [(&str, bool); 6] = [
    ("IOPS", false),
    ("MB/s", false),
    ("read mean", false),
    ("read p99", false),
    ("write mean", false),
    ("write p99", false),
];

/// `keys` followed by the figure columns.
fn with_figures(keys: &[(&'static str, bool)]) -> Vec<(&'static str, bool)> {
    keys.iter().chain(FIGURE_HEADS.iter()).copied().collect()
}

/// A row: its key cells, then the figures of (all, read, write).
fn row_with_figures<const N: usize>(
    keys: [String; N],
    [all, read, write]: [&OpSummary; 3],
) -> Vec<String> {
    let mut row = Vec::from(keys);
    row.extend([
        f0(all.iops),
        f1(all.mbps),
        d(read.lat(|l| l.mean), 1),
        d(read.lat(|l| l.p99), 1),
        d(write.lat(|l| l.mean), 1),
        d(write.lat(|l| l.p99), 1),
    ]);
    row
}

fn lat_cells(label: String, s: &OpSummary) -> Vec<String> {
    let figures: [fn(&LatencySummary) -> f64; 9] = [
        |l| l.mean,
        |l| l.stddev,
        |l| l.p50,
        |l| l.p90,
        |l| l.p95,
        |l| l.p99,
        |l| l.p99_9,
        |l| l.p99_99,
        |l| l.max,
    ];
    let mut cells = vec![label, f0(s.iops), f1(s.mbps)];
    cells.extend(figures.map(|f| d(s.lat(f), 1)));
    cells
}

/// One line on a `--steady-state` run: whether and at which round the rule held, the
/// window's mean IOPS, range and excursion, and whose figures the table shows.
pub fn steady_line(s: &iofleet_stats::steady::SteadyState) -> String {
    let first = s.round.saturating_sub(s.window_iops.len() as u32) + 1;
    let pct = |v: Option<f64>| v.map_or_else(|| "–".to_string(), |v| format!("{v:.1}%"));
    let window = format!(
        "rounds {first}–{}: mean {} IOPS, range {}, excursion {}",
        s.round,
        s.window_mean_iops.map_or_else(|| "–".to_string(), f0),
        pct(s.range_pct),
        pct(s.excursion_pct),
    );
    if s.held {
        format!(
            "steady state: held at round {} of at most {} ({window}); figures are the last round's",
            s.round, s.max_rounds
        )
    } else {
        format!(
            "steady state: NOT reached after {} round(s) of at most {} (last window {window}; limits 20% and 10%); figures are the last round's",
            s.rounds, s.max_rounds
        )
    }
}

/// What the writes carried (`run.plan.data`, per group when groups differ), when it was
/// not the default of distinct, incompressible units: `data: random, dedupe 3:1,
/// compress 2:1 per 4k unit`.
fn data_lines(plan: &iofleet_profile::RecordedPlan) -> Vec<String> {
    use iofleet_profile::{DataPattern, DataPlan};
    let text = |d: &DataPlan| -> Option<String> {
        if d.pattern == DataPattern::Zero {
            return Some("zero".into());
        }
        if d.dedupe_ratio == 1.0 && d.compress_ratio == 1.0 {
            return None;
        }
        Some(format!(
            "random, dedupe {}:1, compress {}:1 per {} unit",
            d.dedupe_ratio, d.compress_ratio, d.dedupe_unit
        ))
    };
    if plan.groups.is_empty() {
        text(&plan.plan.data)
            .map(|t| format!("data: {t}"))
            .into_iter()
            .collect()
    } else {
        plan.groups
            .iter()
            .filter_map(|g| Some(format!("data ({}): {}", g.name, text(&g.plan.data)?)))
            .collect()
    }
}

/// The run line, the stored run's id, name and labels, and what the writes carried.
fn write_run_lines(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let run = &r.run;
    wrap(
        out,
        &format!(
            "iofleet {}  profile {}  engine {}  direct I/O {}  target {}",
            run.iofleet_version,
            run.profile,
            run.engine,
            if run.direct { "on" } else { "off" },
            run.target,
        ),
        max,
        2,
    )?;
    if let Some(st) = &r.stored {
        wrap(
            out,
            &format!(
                "run {}  name {}  labels {}",
                st.id,
                st.name,
                if st.labels.is_empty() {
                    "(none)".to_string()
                } else {
                    st.labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                }
            ),
            max,
            2,
        )?;
    }
    for line in data_lines(&run.plan) {
        wrap(out, &line, max, 2)?;
    }
    Ok(())
}

/// `INVALID: <reasons>` for a run that fell below its quorum of hosts, at the top, so
/// no one reads its figures as the fleet's.
fn write_invalid(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    match r.validity.valid {
        true => Ok(()),
        false => wrap(
            out,
            &format!("INVALID: {}", r.validity.reasons.join("; ")),
            max,
            9,
        ),
    }
}

/// A run interrupted before its first measured interval: when it started, and its notes.
fn write_unmeasured(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let run = &r.run;
    wrap(
        out,
        &format!(
            "started {}  INTERRUPTED before the first measured interval: nothing was measured, so there are no figures",
            run.started_at
        ),
        max,
        2,
    )?;
    write_notices(r, out, max)
}

/// When the run started, how long it measured, and how the steady state went.
fn write_started(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let run = &r.run;
    writeln!(
        out,
        "started {}  measured {:.1} s after {:.1} s warm-up{}{}",
        run.started_at,
        run.duration_s,
        run.warmup_s,
        run.prepare_s
            .map_or(String::new(), |p| format!(", prepared in {p:.1} s")),
        if run.interrupted {
            "  (INTERRUPTED: partial result)"
        } else {
            ""
        }
    )?;
    if let Some(st) = &r.steady_state {
        wrap(out, &steady_line(st), max, 2)?;
    }
    writeln!(out)?;
    Ok(())
}

/// The headline: IOPS, MB/s, mean latencies, outstanding I/O, CPU and memory.
fn write_headline(s: &RunSummary, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let mut head = Grid::new(
        0,
        &[
            ("IOPS", false),
            ("MB/s", false),
            ("lat mean µs", false),
            ("read µs", false),
            ("write µs", false),
            ("stddev µs", false),
            ("outstanding", false),
            ("CPU %", false),
            ("mem %", false),
        ],
    );
    head.row(vec![
        f0(s.all.iops),
        f1(s.all.mbps),
        d(s.all.lat(|l| l.mean), 1),
        d(s.read.lat(|l| l.mean), 1),
        d(s.write.lat(|l| l.mean), 1),
        d(s.all.lat(|l| l.stddev), 1),
        crate::compare::fmt_outstanding(&s.outstanding_io),
        d(s.cpu.as_ref().map(|c| c.host_pct), 1),
        d(s.memory.as_ref().map(|m| m.host_used_pct), 1),
    ]);
    head.print(out, max)?;
    writeln!(out)?;
    Ok(())
}

/// Latency percentiles per direction and, with several streams, per stream.
fn write_latencies(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let s = &r.summary;
    // Direction rows are `read`, `write`, `all`; stream rows say `stream NAME`, so a
    // stream named `read` is never taken for the read direction.
    let mut lat = Grid::new(1, LATENCY_COLUMNS);
    lat.row(lat_cells("read".into(), &s.read));
    lat.row(lat_cells("write".into(), &s.write));
    lat.row(lat_cells("all".into(), &s.all));
    if r.streams.len() > 1 {
        for st in &r.streams {
            lat.row(lat_cells(format!("stream {}", st.name), &st.all));
        }
    }
    lat.print(out, max)?;
    writeln!(out)?;
    Ok(())
}

/// The median of the measured intervals' IOPS, and how many intervals it counts.
fn write_interval_median(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let run = &r.run;
    let s = &r.summary;
    let measured: Vec<_> = r.intervals.iter().filter(|i| !i.warmup).collect();
    // The median's own rule (`counts_in_median`).
    let ns = |s: f64| (s * 1e9).round() as u64;
    let used = measured
        .iter()
        .filter(|i| counts_in_median(ns(i.duration_s), ns(run.interval_s)))
        .count();
    let interval = format!("{:.3}", run.interval_s);
    let interval = interval.trim_end_matches('0').trim_end_matches('.');
    // With an even count the median is the mean of the two middle intervals, and the
    // median-IOPS interval (a real one) is the lower of them: say so where they differ.
    let lower = r.interval_headline().median_interval.map(|p| p.iops);
    let between = if used % 2 == 0 && d(lower, 0) != d(s.iops_median_interval, 0) {
        ", the mean of the two middle intervals (an even count); the median-IOPS interval \
         below is the lower of them"
    } else {
        ""
    };
    wrap(
        out,
        &format!(
            "IOPS median of {used} measured {interval} s intervals: {}{}{between}",
            d(s.iops_median_interval, 0),
            if used < measured.len() {
                format!(
                    " ({} shorter than half of {interval} s left out)",
                    measured.len() - used
                )
            } else {
                String::new()
            }
        ),
        max,
        2,
    )?;
    write_interval_points(r, out, max)
}

/// The median-IOPS and peak-IOPS intervals with their latencies per direction.
fn write_interval_points(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let h = r.interval_headline();
    let points = [
        ("median-IOPS interval", h.median_interval),
        ("peak-IOPS interval", h.peak_interval),
    ];
    if points.iter().all(|(_, p)| p.is_none()) {
        return Ok(());
    }
    let mut g = Grid::new(
        1,
        &[
            ("interval", true),
            ("#", false),
            ("t s", false),
            ("IOPS", false),
            ("mean µs", false),
            ("p99 µs", false),
            ("read mean", false),
            ("read p99", false),
            ("write mean", false),
            ("write p99", false),
        ],
    );
    for (name, p) in points {
        let Some(p) = p else { continue };
        g.row(vec![
            name.to_string(),
            p.index.to_string(),
            f1(p.t_s),
            f0(p.iops),
            d(p.all.mean_us, 1),
            d(p.all.p99_us, 1),
            d(p.read.mean_us, 1),
            d(p.read.p99_us, 1),
            d(p.write.mean_us, 1),
            d(p.write.p99_us, 1),
        ]);
    }
    g.print(out, max)
}

/// The run's figures as a published-report convention defines them, each beside
/// iofleet's exact figure (nothing for `Exact`).
fn write_convention(
    r: &RunResult,
    convention: Convention,
    out: &mut dyn Write,
    max: Option<usize>,
) -> io::Result<()> {
    let figures = convention.figures(r);
    if figures.is_empty() {
        return Ok(());
    }
    wrap(
        out,
        &format!(
            "As {} reports it (--convention {}; worker = VM; definitions in docs/conventions.md):",
            convention.tool(),
            convention.name()
        ),
        max,
        2,
    )?;
    let mut g = Grid::new(
        1,
        &[
            ("figure", true),
            ("value", false),
            ("iofleet exact", false),
            ("exact figure", true),
            ("definition", true),
        ],
    );
    for f in &figures {
        g.row(vec![
            f.label.clone(),
            f.value_text(),
            f.exact_text(),
            f.exact_label.to_string(),
            f.definition.to_string(),
        ]);
    }
    g.print(out, max)?;
    writeln!(out)
}

/// Every interval, warm-up included (`intervals`).
fn write_interval_table(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let mut heads = vec![
        ("t s", false),
        ("phase", false),
        ("IOPS", false),
        ("MB/s", false),
        ("p50 µs", false),
        ("p99 µs", false),
    ];
    // What the hosts spent, when they reported it: the worker hosts' network, and the
    // observer hosts' CPU and network.
    let net = r.intervals.iter().any(|i| i.net.is_some());
    let observed = r.intervals.iter().any(|i| i.observers.is_some());
    let watched = r
        .intervals
        .iter()
        .any(|i| i.observers.as_ref().is_some_and(|o| !o.storage.is_empty()));
    // What the storage's own exporter said, beside iofleet's IOPS (docs/storage-side.md).
    let said = r.intervals.iter().any(|i| {
        i.observers
            .as_ref()
            .is_some_and(|o| o.scraped.iter().any(|m| m.iops))
    });
    if said {
        heads.insert(3, ("storage said IOPS", false));
        heads.insert(4, ("said Δ%", false));
    }
    // Its mean latency (a mean, not a percentile) beside iofleet's mean.
    let said_latency = r.intervals.iter().any(|i| {
        i.observers
            .as_ref()
            .is_some_and(|o| o.scraped.iter().any(|m| m.latency))
    });
    if said_latency {
        heads.extend([("mean ms", false), ("storage said mean ms", false)]);
    }
    if net {
        heads.extend([("net rx MB/s", false), ("net tx MB/s", false)]);
    }
    if observed {
        heads.extend([
            ("obs CPU%", false),
            ("obs rx MB/s", false),
            ("obs tx MB/s", false),
        ]);
    }
    if watched {
        heads.push(("storage CPU%", false));
    }
    let mut g = Grid::new(2, &heads);
    let dash = || "-".to_string();
    for i in &r.intervals {
        let mut cells = vec![
            f1(i.t_s),
            if i.warmup { "warm-up" } else { "measure" }.into(),
            f0(i.iops),
            f1(i.mbps),
            d(i.p50_us, 1),
            d(i.p99_us, 1),
        ];
        if said {
            let s = i.observers.as_ref().and_then(|o| o.storage_said_iops());
            cells.insert(3, s.map_or_else(dash, f0));
            cells.insert(4, s.map_or_else(dash, |s| said_apart(s, i.iops)));
        }
        if said_latency {
            let ms = |v: f64| format!("{v:.3}");
            cells.push(i.all.mean_us.map_or_else(dash, |u| ms(u / 1e3)));
            let s = i
                .observers
                .as_ref()
                .and_then(|o| o.storage_said_latency_ms());
            cells.push(s.map_or_else(dash, ms));
        }
        if net {
            let n = i.net.as_ref();
            cells.push(n.map_or_else(dash, |n| format!("{:.2}", n.rx_mbps)));
            cells.push(n.map_or_else(dash, |n| format!("{:.2}", n.tx_mbps)));
        }
        if observed {
            let o = i.observers.as_ref();
            cells.push(o.map_or_else(dash, |o| f1(o.cpu.host_pct)));
            cells.push(o.map_or_else(dash, |o| format!("{:.2}", o.net.rx_mbps)));
            cells.push(o.map_or_else(dash, |o| format!("{:.2}", o.net.tx_mbps)));
        }
        if watched {
            // Every watched entry of every observer, each process once, % of one core.
            let cpu = i
                .observers
                .as_ref()
                .and_then(|o| o.storage_whole(|s| s.cpu_pct));
            cells.push(cpu.map_or_else(dash, f1));
        }
        g.row(cells);
    }
    g.print(out, max)?;
    Ok(())
}

/// What iofleet and the host spent in CPU and memory.
fn write_cpu_memory(s: &RunSummary, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    match &s.cpu {
        Some(c) => wrap(
            out,
            &format!(
                "CPU: iofleet usr {:.1}% sys {:.1}% (of one core), host {:.1}% of all cores; {} µs per I/O (host {} µs)",
                c.usr_pct,
                c.sys_pct,
                c.host_pct,
                d(c.us_per_io, 2),
                d(c.host_us_per_io, 2)
            ),
            max,
            5,
        )?,
        None => writeln!(out, "CPU: – (not measured)")?,
    }
    match &s.memory {
        Some(m) => writeln!(
            out,
            "Memory: iofleet peak RSS {:.1} MiB, host {:.1}% in use",
            m.rss_peak_mib, m.host_used_pct
        )?,
        None => writeln!(out, "Memory: – (not measured)")?,
    }
    Ok(())
}

/// Across hosts: the network of the hosts that ran workers, and the observer hosts.
fn write_fleet_usage(s: &RunSummary, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    if let Some(n) = &s.net {
        writeln!(
            out,
            "Network of the worker hosts: {:.2} MB/s received, {:.2} MB/s sent (all interfaces but lo)",
            n.rx_mbps, n.tx_mbps
        )?;
    }
    if let Some(o) = &s.observers {
        let disk = o.disk.as_ref().map_or_else(String::new, |d| {
            format!(
                "; disks {:.0} IOPS, {:.1} MB/s, {:.1}% busy ({} device{})",
                d.iops,
                d.mbps,
                d.busy_pct,
                d.devices,
                if d.devices == 1 { "" } else { "s" }
            )
        });
        wrap(
            out,
            &format!(
                "Observer hosts: CPU {:.1}% of all cores, memory {:.1}% in use; network {:.2} MB/s received, {:.2} MB/s sent{disk}",
                o.cpu.host_pct, o.memory.host_used_pct, o.net.rx_mbps, o.net.tx_mbps
            ),
            max,
            5,
        )?;
        for st in iofleet_stats::usage::shown_storage(&o.storage) {
            wrap(out, &storage_line(st), max, 5)?;
        }
        if let Some(line) = said_line(o, s) {
            wrap(out, &line, max, 5)?;
        }
        for m in &o.scraped {
            wrap(out, &scraped_line(m), max, 5)?;
        }
    }
    Ok(())
}

/// "The storage said X IOPS at Y ms; iofleet measured A IOPS at B ms": what the
/// storage's exporter said beside iofleet's figures over the measured phase, the
/// latencies both means (not percentiles); None when it said neither.
fn said_line(o: &iofleet_stats::HostResources, s: &RunSummary) -> Option<String> {
    let (iops, ms) = (o.storage_said_iops(), o.storage_said_latency_ms());
    if iops.is_none() && ms.is_none() {
        return None;
    }
    let ours_ms = s.all.latency_us.as_ref().map(|l| l.mean / 1e3);
    let mut said = String::from("The storage said");
    let mut ours = String::from("iofleet measured");
    let mut apart = Vec::new();
    if let Some(v) = iops {
        said.push_str(&format!(" {v:.0} IOPS"));
        ours.push_str(&format!(" {:.0} IOPS", s.all.iops));
        apart.push(format!("IOPS {}", said_apart(v, s.all.iops)));
    }
    if let Some(v) = ms {
        said.push_str(&format!(" at {v:.3} ms mean latency"));
        match ours_ms {
            Some(m) => {
                ours.push_str(&format!(" at {m:.3} ms mean"));
                apart.push(format!("latency {}", said_apart(v, m)));
            }
            None => ours.push_str(" no latency"),
        }
    }
    Some(format!("{said}; {ours} ({} apart)", apart.join(", ")))
}

/// How far what the storage said lies from iofleet's figure, percent of iofleet's.
fn said_apart(said: f64, ours: f64) -> String {
    if ours > 0.0 {
        format!("{:+.1}%", (said - ours) / ours * 100.0)
    } else {
        "-".into()
    }
}

/// One scraped exporter metric over the measured phase (docs/storage-side.md).
fn scraped_line(m: &iofleet_stats::ScrapedRates) -> String {
    let what = if m.latency {
        " ms mean latency"
    } else if m.counter {
        "/s"
    } else {
        " (mean)"
    };
    match m.value {
        Some(v) => format!(
            "Exporter {}: {v:.6}{what} over {:.1} s of its own time, {} sample{}",
            m.name,
            m.span_s,
            m.samples,
            if m.samples == 1 { "" } else { "s" }
        ),
        None => format!(
            "Exporter {}: fewer than two samples in the measured phase",
            m.name
        ),
    }
}

/// One watched storage entry over the measured phase (docs/storage-side.md).
fn storage_line(st: &iofleet_stats::StorageRates) -> String {
    let count = |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "Storage {}: CPU {:.1}% of one core (usr {:.1}%, sys {:.1}%; {:.1}% of the host's cores), memory {:.1} MiB, read {:.2} MB/s, written {:.2} MB/s, {:.0} context switches/s; {} on {}",
        st.name,
        st.cpu_pct,
        st.usr_pct,
        st.sys_pct,
        st.host_cpu_pct,
        st.memory_mib,
        st.read_mbps,
        st.write_mbps,
        st.ctx_switches_per_s,
        count(st.processes, "process", "processes"),
        count(st.hosts, "host", "hosts"),
    )
}

/// The generator's self-check and its warnings.
fn write_generator(
    g: &GeneratorSummary,
    out: &mut dyn Write,
    max: Option<usize>,
) -> io::Result<()> {
    // Waiting for a CPU: the share of the I/O threads' time, per wake-up and
    // per I/O, and what else ran on the host meanwhile.
    let cpu_wait = match (g.runq_pct, g.runq_us_per_io) {
        (Some(q), r) => {
            let mut parts = Vec::new();
            if let Some(w) = g.runq_wait_us {
                parts.push(format!("{w:.0} µs per wake-up"));
            }
            if let Some(r) = r {
                parts.push(format!("{r:.2} µs per I/O"));
            }
            format!(
                ", waiting for a CPU {q:.1}% of the time ({})",
                parts.join(", ")
            )
        }
        (None, Some(r)) => format!(", run-queue delay {r:.2} µs per I/O"),
        (None, None) => ", run-queue delay unknown".to_string(),
    };
    let other = g
        .other_load_cpus
        .map_or(String::new(), |o| format!(", other processes {o:.2} CPUs"));
    let mut lag = g.issue_lag_p99_us.map_or(String::new(), |l| {
        format!(", open-loop issue lag p99 {l:.0} µs")
    });
    if let (Some(p50), Some(p99)) = (g.reap_wait_p50_us, g.reap_wait_p99_us) {
        lag += &format!(", reap wait ≤ {p50:.1} µs (p50) / {p99:.1} µs (p99)");
    }
    wrap(
        out,
        &format!(
            "Generator: {} I/O thread{}, {:.0}% busy (busiest {:.0}%){cpu_wait}{other}{lag}",
            g.io_threads,
            if g.io_threads == 1 { "" } else { "s" },
            g.busy_pct,
            g.max_busy_pct
        ),
        max,
        11,
    )?;
    for w in &g.warnings {
        wrap(out, &format!("warning: {w}"), max, 9)?;
    }
    Ok(())
}

/// The network and devices of a run on one host.
fn write_single_host(h: &HostSummary, out: &mut dyn Write) -> io::Result<()> {
    if let Some(n) = &h.net {
        writeln!(
            out,
            "Network: {:.2} MB/s received, {:.2} MB/s sent (all interfaces but lo)",
            n.rx_mbps, n.tx_mbps
        )?;
    }
    if let Some(d) = &h.disk {
        writeln!(
            out,
            "Devices under the target: {:.0} IOPS, {:.1} MB/s, {:.1}% busy ({} device{})",
            d.iops,
            d.mbps,
            d.busy_pct,
            d.devices,
            if d.devices == 1 { "" } else { "s" }
        )?;
    }
    Ok(())
}

/// One row per worker.
fn write_workers(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    writeln!(out)?;
    let mut g = Grid::new(2, &with_figures(&[("worker", false), ("host", true)]));
    for w in &r.workers {
        g.row(row_with_figures(
            [w.worker.to_string(), w.host.clone()],
            [&w.all, &w.read, &w.write],
        ));
    }
    g.print(out, max)?;
    Ok(())
}

/// One row per disk of every worker (`disks`).
fn write_disks(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    writeln!(out)?;
    let mut g = Grid::new(
        3,
        &with_figures(&[("worker", false), ("disk", false), ("host", true)]),
    );
    for w in &r.workers {
        for x in &w.disks {
            g.row(row_with_figures(
                [w.worker.to_string(), x.disk.to_string(), w.host.clone()],
                [&x.all, &x.read, &x.write],
            ));
        }
    }
    g.print(out, max)?;
    Ok(())
}

/// One row per worker group.
fn write_groups(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    writeln!(out)?;
    let mut g = Grid::new(
        1,
        &with_figures(&[("group", true), ("profile", true), ("workers", false)]),
    );
    for x in &r.groups {
        g.row(row_with_figures(
            [x.name.clone(), x.profile.clone(), x.workers.to_string()],
            [&x.all, &x.read, &x.write],
        ));
    }
    g.print(out, max)?;
    Ok(())
}

/// One row per host, its state and lateness, then the total with the start skew.
fn write_hosts(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let run = &r.run;
    let s = &r.summary;
    writeln!(out)?;
    let mut g = Grid::new(
        1,
        &[
            ("host", true),
            ("workers", false),
            ("IOPS", false),
            ("MB/s", false),
            ("read p99", false),
            ("write p99", false),
            ("late ms", false),
            ("state", true),
        ],
    );
    for h in &r.hosts {
        let state = match (h.lost_at_s, h.straggler) {
            (Some(t), _) => format!("LOST at {t:.1} s"),
            (None, true) => "straggler".to_string(),
            (None, false) if h.observer => "observer".to_string(),
            (None, false) => "ok".to_string(),
        };
        g.row(vec![
            h.host.clone(),
            h.workers.to_string(),
            f0(h.all.iops),
            f1(h.all.mbps),
            d(h.read.lat(|l| l.p99), 1),
            d(h.write.lat(|l| l.p99), 1),
            h.start_late_ms
                .map_or("-".to_string(), |l| format!("{l:.2}")),
            state,
        ]);
    }
    g.row(vec![
        "total".into(),
        r.workers.len().to_string(),
        f0(s.all.iops),
        f1(s.all.mbps),
        String::new(),
        String::new(),
        String::new(),
        format!("start skew {} ms", d(run.start_skew_ms, 2)),
    ]);
    g.print(out, max)?;
    Ok(())
}

/// A Kubernetes fleet: what it ran on, and each pod's node and volumes.
fn write_kubernetes(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let Some(k) = &r.run.kubernetes else {
        return Ok(());
    };
    writeln!(out)?;
    let pods: Vec<_> = r
        .hosts
        .iter()
        .filter_map(|h| h.kubernetes.as_ref())
        .collect();
    for line in crate::kube::fleet_lines(k, pods.len()) {
        wrap(out, &line, max, 2)?;
    }
    // Job mode: each pod's way, seconds from creating the objects.
    let timelines = pods.iter().any(|p| p.timeline.is_some());
    let mut columns = vec![
        ("pod", true),
        ("node", true),
        ("volumes", false),
        ("bound after s", false),
        ("provisioner", true),
    ];
    if timelines {
        columns.extend([
            ("created s", false),
            ("bound s", false),
            ("ready s", false),
            ("joined s", false),
        ]);
    }
    let mut g = Grid::new(1, &columns);
    for p in pods {
        let provisioners: std::collections::BTreeSet<&str> = p
            .volumes
            .iter()
            .filter_map(|v| v.provisioner.as_deref())
            .collect();
        let mut row = vec![
            p.pod.clone(),
            p.node.clone().unwrap_or_else(|| "-".into()),
            p.volumes.len().to_string(),
            match crate::kube::bind_range(p) {
                Some((lo, hi)) if lo == hi => format!("{lo:.0}"),
                Some((lo, hi)) => format!("{lo:.0}-{hi:.0}"),
                None => "-".into(),
            },
            provisioners.into_iter().collect::<Vec<_>>().join(","),
        ];
        if timelines {
            let t = p.timeline.clone().unwrap_or_default();
            for s in [t.created_s, t.bound_s, t.ready_s, t.joined_s] {
                row.push(s.map_or_else(|| "-".into(), |s| format!("{s:.1}")));
            }
        }
        g.row(row);
    }
    g.print(out, max)
}

/// A fleet of worker VMs: what it ran on, and each VM's way and data disks.
fn write_vms(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    let Some(v) = &r.run.vms else {
        return Ok(());
    };
    writeln!(out)?;
    wrap(out, &crate::vms::fleet_line(v), max, 2)?;
    let mut g = Grid::new(
        1,
        &[
            ("VM", true),
            ("hypervisor", true),
            ("size", true),
            ("defined s", false),
            ("running s", false),
            ("joined s", false),
            ("disk", true),
            ("volume", true),
            ("attached", true),
            ("hypervisor requests", false),
            ("iofleet requests", false),
        ],
    );
    for vm in &v.vms {
        let t = &vm.timeline;
        for (k, d) in vm.disks.iter().enumerate() {
            let first = k == 0;
            let or_blank = |s: String| if first { s } else { String::new() };
            g.row(vec![
                or_blank(vm.domain.clone()),
                or_blank(vm.hypervisor.clone()),
                or_blank(crate::vms::size(vm)),
                or_blank(crate::vms::secs(t.defined_s)),
                or_blank(crate::vms::secs(t.running_s)),
                or_blank(crate::vms::secs(t.joined_s)),
                d.target.clone(),
                format!("{}/{}", d.pool, d.volume),
                crate::vms::attachment(d),
                crate::vms::requests(d),
                crate::vms::iofleet_requests(r, vm, k),
            ]);
        }
    }
    g.print(out, max)
}

/// What each host spent: CPU, memory, network and the devices under the target.
fn write_host_resources(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    writeln!(out)?;
    let mut g = Grid::new(
        1,
        &[
            ("host resources", true),
            ("iofleet%", false),
            ("host CPU%", false),
            ("RSS MiB", false),
            ("net rx", false),
            ("net tx", false),
            ("disk IOPS", false),
            ("disk MB/s", false),
            ("busy%", false),
        ],
    );
    let dash = || "-".to_string();
    for h in &r.hosts {
        let cpu = h.cpu.as_ref();
        let net = h.net.as_ref();
        let disk = h.disk.as_ref();
        g.row(vec![
            if h.observer {
                format!("{} (observer)", h.host)
            } else {
                h.host.clone()
            },
            cpu.map_or_else(dash, |c| f1(c.usr_pct + c.sys_pct)),
            cpu.map_or_else(dash, |c| f1(c.host_pct)),
            h.memory.as_ref().map_or_else(dash, |m| f1(m.rss_peak_mib)),
            net.map_or_else(dash, |n| format!("{:.2}", n.rx_mbps)),
            net.map_or_else(dash, |n| format!("{:.2}", n.tx_mbps)),
            disk.map_or_else(dash, |d| f0(d.iops)),
            disk.map_or_else(dash, |d| f1(d.mbps)),
            disk.map_or_else(dash, |d| f1(d.busy_pct)),
        ]);
    }
    g.print(out, max)?;
    Ok(())
}

/// The I/O error count, per disk or as sampled, and the threads that failed.
fn write_errors(e: &ErrorSummary, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    writeln!(out, "I/O errors: {}", e.count)?;
    let detail = |d: &iofleet_stats::result::ErrorDetail| {
        format!(
            "t={:.3}s worker {} disk {} thread {} {} offset {} len {}: {} (errno {})",
            d.t_s, d.worker, d.disk, d.thread, d.op, d.offset, d.len, d.message, d.errno
        )
    };
    // Per disk when known (its count, take-out and first failures), else the sample.
    for d in &e.disks {
        let out_at = d
            .taken_out_s
            .map_or_else(String::new, |t| format!(", taken out at {t:.3}s"));
        wrap(
            out,
            &format!(
                "  worker {} disk {}: {} error(s){out_at}",
                d.worker, d.disk, d.count
            ),
            max,
            4,
        )?;
        for x in &d.first {
            wrap(out, &format!("    {}", detail(x)), max, 6)?;
        }
    }
    if e.disks.is_empty() {
        for d in &e.first {
            wrap(out, &format!("  {}", detail(d)), max, 4)?;
        }
    }
    for f in &e.failed_threads {
        wrap(out, &format!("  thread failed: {f}"), max, 4)?;
    }
    Ok(())
}

/// What data verification found, with its first corruptions.
fn write_verify(v: &VerifySummary, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    wrap(
        out,
        &format!(
            "verify: {} corruption(s) in {} unit(s) checked ({} read while being written, not checked)",
            v.corruptions, v.units_checked, v.units_racing
        ),
        max,
        8,
    )?;
    for c in &v.first {
        wrap(out, &format!("  {c}"), max, 4)?;
    }
    Ok(())
}

/// The run's notices.
fn write_notices(r: &RunResult, out: &mut dyn Write, max: Option<usize>) -> io::Result<()> {
    for n in &r.notices {
        wrap(out, &format!("note: {n}"), max, 6)?;
    }
    Ok(())
}

impl Exporter for TableExporter {
    fn export(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        self.export_in(r, Convention::Exact, out)
    }
}

impl TableExporter {
    /// The table, with the figures of `convention` (beside the exact ones) after the
    /// headline when it is not `Exact`.
    pub fn export_in(
        &self,
        r: &RunResult,
        convention: Convention,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        // Names, labels, paths and notices carry user-given text: everything printed
        // goes out escaped (the layout measures escaped widths, `text::width`).
        let out = &mut crate::text::Escaped::new(out);
        let max = (!self.wide).then_some(WIDTH);
        write_run_lines(r, out, max)?;
        write_invalid(r, out, max)?;
        if !r.measured() {
            return write_unmeasured(r, out, max);
        }
        write_started(r, out, max)?;
        write_headline(&r.summary, out, max)?;
        write_convention(r, convention, out, max)?;
        write_latencies(r, out, max)?;
        write_interval_median(r, out, max)?;
        if self.intervals {
            write_interval_table(r, out, max)?;
        }
        write_cpu_memory(&r.summary, out, max)?;
        if let Some(g) = &r.summary.generator {
            write_generator(g, out, max)?;
        }
        if let [h] = &r.hosts[..] {
            write_single_host(h, out)?;
        } else {
            write_fleet_usage(&r.summary, out, max)?;
        }
        if r.workers.len() > 1 {
            write_workers(r, out, max)?;
        }
        if self.disks && r.workers.iter().any(|w| w.disks.len() > 1) {
            write_disks(r, out, max)?;
        }
        if r.groups.len() > 1 {
            write_groups(r, out, max)?;
        }
        if r.hosts.len() > 1 || r.hosts.iter().any(|h| h.lost_at_s.is_some()) {
            write_hosts(r, out, max)?;
            if r.hosts.iter().any(|h| h.cpu.is_some()) {
                write_host_resources(r, out, max)?;
            }
        }
        write_kubernetes(r, out, max)?;
        write_vms(r, out, max)?;
        write_errors(&r.summary.errors, out, max)?;
        if let Some(v) = &r.summary.verify {
            write_verify(v, out, max)?;
        }
        write_notices(r, out, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(g: &Grid, max: Option<usize>) -> String {
        let mut v = Vec::new();
        g.print(&mut v, max).unwrap();
        String::from_utf8(v).unwrap()
    }

    fn wide_grid() -> Grid {
        let heads: Vec<(&'static str, bool)> = std::iter::once(("row", true))
            .chain(["aaaaaaaaaa"; 14].map(|h| (h, false)))
            .collect();
        let mut g = Grid::new(1, &heads);
        g.row(
            std::iter::once("first µs".to_string())
                .chain((0..14).map(|i| format!("{}", i * 1000)))
                .collect(),
        );
        g
    }

    #[test]
    fn grid_wraps_into_blocks_that_repeat_the_row_label() {
        let g = wide_grid();
        let text = render(&g, Some(WIDTH));
        let max = text.lines().map(width).max().unwrap();
        assert!(max <= WIDTH, "{max} columns:\n{text}");
        let blocks = text.split("\n\n").count();
        assert_eq!(blocks, 2, "{text}");
        assert_eq!(text.matches("first µs").count(), 2, "{text}");
        assert!(text.contains("13000"));
        // Wide: one header line and one row line.
        let wide = render(&g, None);
        assert_eq!(wide.lines().count(), 2, "{wide}");
        assert!(wide.lines().next().unwrap().chars().count() > WIDTH);
    }

    #[test]
    fn columns_align_right_or_left() {
        let mut g = Grid::new(1, &[("name", true), ("n", false)]);
        g.row(vec!["a".into(), "1".into()]);
        g.row(vec!["bbbbbb".into(), "100".into()]);
        assert_eq!(
            render(&g, Some(WIDTH)),
            "  name      n\n  a         1\n  bbbbbb  100\n"
        );
    }

    #[test]
    fn unknown_latencies_print_as_dashes_aligned_by_characters() {
        let mut g = Grid::new(1, LATENCY_COLUMNS);
        let read = OpSummary {
            iops: 1000.0,
            latency_us: Some(LatencySummary {
                mean: 123456.7,
                ..Default::default()
            }),
            ..Default::default()
        };
        g.row(lat_cells("read".into(), &read));
        // A direction without I/O has no latencies: `–`, never 0.0.
        g.row(lat_cells("write".into(), &OpSummary::default()));
        let text = render(&g, Some(WIDTH));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2].split_whitespace().filter(|c| *c == "–").count(), 9);
        // `–` is one column though three bytes: the rows end in the same column.
        assert_eq!(width(lines[1]), width(lines[2]), "{text}");
        assert!(lines.iter().all(|l| width(l) <= WIDTH), "{text}");
    }

    #[test]
    fn text_wraps_with_a_hanging_indent() {
        let mut v = Vec::new();
        let long = format!("note: {}", "word ".repeat(60));
        wrap(&mut v, &long, Some(40), 6).unwrap();
        let text = String::from_utf8(v).unwrap();
        assert!(text.lines().count() > 1);
        assert!(text.lines().all(|l| width(l) <= 40), "{text}");
        assert!(text.lines().skip(1).all(|l| l.starts_with("      word")));
        let mut v = Vec::new();
        wrap(&mut v, &long, None, 6).unwrap();
        assert_eq!(String::from_utf8(v).unwrap().lines().count(), 1);
    }
}
