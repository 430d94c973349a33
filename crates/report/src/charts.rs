//! Charts for the HTML report, drawn with plotters' SVG backend (no fonts needed: text is
//! left to the browser). Each function takes the runs to overlay and returns a `Chart`
//! holding inline SVG ready to embed in HTML5 (the `xmlns` attribute, which inline SVG
//! does not need, is removed so the page carries no URL at all) and its legend.
//!
//! Legends are not drawn inside the SVG: the page renders them as HTML below the plot
//! (`Chart::legend`), so a legend can never cover data, however many runs are overlaid.
//! Latency axes are logarithmic with ticks at 1-2-5 of each decade (every decade when
//! the range spans many), labelled with units (µs, ms, s). The change axis of the
//! comparison bars spans the changes measured, not a fixed range.
//!
//! The figures plotted are those of the `RunResult`s, the per-host and per-group series
//! and the merged histograms handed in; nothing is recomputed here. Time series start at
//! the beginning of measurement (warm-up intervals are left out, so runs with different
//! warm-ups line up).

use iofleet_stats::result::IntervalRow;
use iofleet_stats::{LatencyHist, Series};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::compare::{Comparison, Metric};
use crate::RunData;

/// One drawn chart.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Stable element id in the report (`iops-time`, `latency-percentiles`,
    /// `host-1`, …).
    pub id: String,
    pub title: String,
    /// What the chart shows and how to read it.
    pub caption: String,
    pub svg: String,
    /// What each mark means, drawn by the page next to (never over) the plot.
    pub legend: Vec<LegendEntry>,
}

/// How a legend entry's mark looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Line,
    Dashed,
    Box,
    /// A box in the lighter tone of the colour (write bars of a histogram).
    LightBox,
}

#[derive(Clone, Debug)]
pub struct LegendEntry {
    pub label: String,
    /// CSS colour.
    pub color: String,
    pub mark: Mark,
}

#[derive(Debug, thiserror::Error)]
#[error("drawing the {chart} chart: {detail}")]
pub struct ChartError {
    pub chart: String,
    pub detail: String,
}

const W: u32 = 1100;
const H: u32 = 400;
/// Height of one panel of a per-host or per-group chart.
const PANEL_H: u32 = 230;

/// tab10: distinguishable, colour-blind-aware enough for a handful of runs.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of run `i` in every chart.
pub fn run_color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// CSS form of a run's colour, for tables next to the charts.
pub fn run_color_css(i: usize) -> String {
    let RGBColor(r, g, b) = run_color(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Opacity of the lighter tone (write bars).
pub const LIGHT_ALPHA: f64 = 0.45;

struct Line {
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// How a panel's y axis maps values.
#[derive(Clone, Copy, PartialEq)]
enum YAxis {
    /// From 0, values as they are (`compact` labels).
    Linear,
    /// Latency in µs on a log scale, 1-2-5 ticks with units.
    LogLatency,
    /// Percent, 0 to at least 100 when values come close.
    Percent,
}

struct Panel<'a> {
    x_desc: &'a str,
    y_desc: &'a str,
    y: YAxis,
    lines: Vec<Line>,
    x_fmt: Option<&'a dyn Fn(&f64) -> String>,
    x_labels: usize,
    /// Fixed x range (panels stacked in one chart share it).
    x_range: Option<(f64, f64)>,
}

fn err(chart: &str) -> impl Fn(String) -> ChartError + '_ {
    move |detail| ChartError {
        chart: chart.to_string(),
        detail,
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Axis labels: 1.2M, 450k, 12.5, 0.75.
pub fn compact(v: &f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if a >= 1e3 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 10.0 || a == 0.0 {
        trim(format!("{v:.1}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

/// A latency in µs with its unit: 0.5 µs, 200 µs, 1 ms, 2.5 s.
pub fn latency_label(us: f64) -> String {
    let (v, unit) = if us >= 1e6 {
        (us / 1e6, "s")
    } else if us >= 1e3 {
        (us / 1e3, "ms")
    } else {
        (us, "µs")
    };
    let digits = if v >= 10.0 {
        0
    } else if v >= 1.0 {
        1
    } else {
        3
    };
    format!("{} {unit}", trim(format!("{v:.digits$}")))
}

/// Tick values (in µs) for a log axis over [lo, hi] µs: 1-2-5 of each decade; only the
/// decades when that would crowd the axis (more than 12 ticks); 1, 1.5, 2, 2.5, 3, 4 … 9
/// of each decade when 1-2-5 would give fewer than three.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo) {
        return Vec::new();
    }
    let pick = |mantissas: &[f64]| -> Vec<f64> {
        let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        (d0..=d1)
            .flat_map(|d| mantissas.iter().map(move |m| m * 10f64.powi(d)))
            .filter(|v| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9))
            .collect()
    };
    let ticks = pick(&[1.0, 2.0, 5.0]);
    if ticks.len() > 12 {
        pick(&[1.0])
    } else if ticks.len() < 3 {
        pick(&[1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    } else {
        ticks
    }
}

/// Make plotters' SVG fit for inline HTML: no namespace URL, scalable.
fn finish_svg(svg: String, title: &str) -> String {
    let svg = svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    let title = crate::markup::escape(title);
    svg.replacen(
        "<svg ",
        &format!("<svg class=\"plot\" role=\"img\" aria-label=\"{title}\" "),
        1,
    )
}

fn x_extent(lines: &[Line]) -> (f64, f64) {
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    (x0, x1)
}

/// Draw one panel of lines into `area`.
fn draw_panel(area: &DrawingArea<SVGBackend<'_>, Shift>, p: &Panel<'_>) -> Result<(), String> {
    let (x0, x1) = p.x_range.unwrap_or_else(|| x_extent(&p.lines));
    let ys: Vec<f64> = p
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|q| q.1))
        .filter(|y| y.is_finite() && (p.y != YAxis::LogLatency || *y > 0.0))
        .collect();
    let max = ys.iter().cloned().fold(0.0f64, f64::max);
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(80);
    match p.y {
        YAxis::LogLatency => {
            let min = ys.iter().cloned().fold(f64::INFINITY, f64::min);
            let (lo, hi) = if min.is_finite() && max > 0.0 {
                (min / 1.5, max * 1.5)
            } else {
                (1.0, 10.0)
            };
            let y = (lo..hi).log_scale().with_key_points(log_ticks(lo, hi));
            let mut chart = builder
                .build_cartesian_2d(x0..x1, y)
                .map_err(|e| e.to_string())?;
            let yfmt = |v: &f64| latency_label(*v);
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(p.x_desc)
                .y_desc(p.y_desc)
                .x_labels(p.x_labels)
                .y_label_formatter(&yfmt)
                .label_style(("sans-serif", 13))
                .axis_desc_style(("sans-serif", 14))
                .bold_line_style(RGBColor(225, 225, 225))
                .light_line_style(RGBColor(242, 242, 242));
            if let Some(f) = p.x_fmt {
                mesh.x_label_formatter(f);
            }
            mesh.draw().map_err(|e| e.to_string())?;
            for l in &p.lines {
                let pts = l
                    .points
                    .iter()
                    .filter(|q| q.1 > 0.0 && q.1.is_finite())
                    .copied()
                    .collect();
                draw_line(&mut chart, l, pts)?;
            }
        }
        YAxis::Linear | YAxis::Percent => {
            let hi = match p.y {
                YAxis::Percent if max > 80.0 => max.max(100.0) * 1.05,
                _ if max > 0.0 => max * 1.1,
                _ => 1.0,
            };
            let mut chart = builder
                .build_cartesian_2d(x0..x1, 0.0..hi)
                .map_err(|e| e.to_string())?;
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(p.x_desc)
                .y_desc(p.y_desc)
                .x_labels(p.x_labels)
                .y_label_formatter(&compact)
                .label_style(("sans-serif", 13))
                .axis_desc_style(("sans-serif", 14))
                .light_line_style(RGBColor(235, 235, 235));
            if let Some(f) = p.x_fmt {
                mesh.x_label_formatter(f);
            }
            mesh.draw().map_err(|e| e.to_string())?;
            for l in &p.lines {
                draw_line(&mut chart, l, l.points.clone())?;
            }
        }
    }
    Ok(())
}

fn draw_line<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    l: &Line,
    pts: Vec<(f64, f64)>,
) -> Result<(), String>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    let style = l.color.stroke_width(2);
    if l.dashed {
        chart
            .draw_series(DashedLineSeries::new(pts, 7, 4, style))
            .map_err(|e| e.to_string())?;
    } else {
        chart
            .draw_series(LineSeries::new(pts, style))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Panels stacked top to bottom in one SVG.
fn draw_panels(id: &str, title: &str, panels: &[Panel<'_>], h: u32) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let mut draw = || -> Result<(), String> {
            let root =
                SVGBackend::with_string(&mut svg, (W, h * panels.len() as u32)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            let areas = root.split_evenly((panels.len(), 1));
            for (a, p) in areas.iter().zip(panels) {
                draw_panel(a, p)?;
            }
            root.present().map_err(|e| e.to_string())
        };
        draw().map_err(err(id))?;
    }
    Ok(finish_svg(svg, title))
}

/// Measured rows as (seconds since measurement start at interval end, y).
fn measured_rows(rows: &[IntervalRow], f: impl Fn(&IntervalRow) -> Option<f64>) -> Vec<(f64, f64)> {
    let measured: Vec<_> = rows.iter().filter(|i| !i.warmup).collect();
    let start = measured.first().map_or(0.0, |i| i.t_s);
    measured
        .iter()
        // An interval without the figure (no I/O in it) has no point.
        .filter_map(|i| Some((i.t_s + i.duration_s - start, f(i)?)))
        .collect()
}

/// Measured intervals of a run as (seconds since measurement start at interval end, y).
fn measured_series(r: &RunData, f: impl Fn(&IntervalRow) -> Option<f64>) -> Vec<(f64, f64)> {
    measured_rows(&r.result.intervals, f)
}

fn run_legend(runs: &[RunData], mark: Mark) -> Vec<LegendEntry> {
    runs.iter()
        .enumerate()
        .map(|(i, r)| LegendEntry {
            label: r.title(),
            color: run_color_css(i),
            mark,
        })
        .collect()
}

const SINCE_START: &str = "seconds since the start of measurement";

/// IOPS or MB/s per interval, runs overlaid.
pub fn throughput_over_time(runs: &[RunData], mbps: bool) -> Result<Chart, ChartError> {
    let (id, title, y) = if mbps {
        ("mbps-time", "Throughput over time", "MB/s")
    } else {
        ("iops-time", "IOPS over time", "IOPS")
    };
    let lines = runs
        .iter()
        .enumerate()
        .map(|(i, r)| Line {
            color: run_color(i),
            dashed: false,
            points: measured_series(r, |row| Some(if mbps { row.mbps } else { row.iops })),
        })
        .collect();
    let panel = Panel {
        x_desc: SINCE_START,
        y_desc: y,
        y: YAxis::Linear,
        lines,
        x_fmt: None,
        x_labels: 12,
        x_range: None,
    };
    Ok(Chart {
        id: id.into(),
        title: title.into(),
        caption: format!(
            "{y} of the whole fleet per measured interval (plotted at the end of each interval), one line per run."
        ),
        svg: draw_panels(id, title, &[panel], H)?,
        legend: run_legend(runs, Mark::Line),
    })
}

/// p50 (dashed) and p99 (solid) latency of all I/O per interval, runs overlaid.
pub fn latency_over_time(runs: &[RunData]) -> Result<Chart, ChartError> {
    let mut lines = Vec::new();
    let mut legend = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        lines.push(Line {
            color: run_color(i),
            dashed: false,
            points: measured_series(r, |row| row.p99_us),
        });
        lines.push(Line {
            color: run_color(i),
            dashed: true,
            points: measured_series(r, |row| row.p50_us),
        });
        for (what, mark) in [("p99", Mark::Line), ("p50", Mark::Dashed)] {
            legend.push(LegendEntry {
                label: format!("{} {what}", r.title()),
                color: run_color_css(i),
                mark,
            });
        }
    }
    let title = "Latency percentiles over time";
    let id = "latency-time";
    let panel = Panel {
        x_desc: SINCE_START,
        y_desc: "latency (log scale)",
        y: YAxis::LogLatency,
        lines,
        x_fmt: None,
        x_labels: 12,
        x_range: None,
    };
    Ok(Chart {
        id: id.into(),
        title: title.into(),
        caption: "p99 (solid) and p50 (dashed) latency of all I/O in each measured interval, from that interval's merged histogram; log scale.".into(),
        svg: draw_panels(id, title, &[panel], H)?,
        legend,
    })
}

/// Mean over a run's hosts of each host's whole-host CPU busy % per measured interval
/// (hosts that did not report an interval are left out of it).
fn cpu_points(r: &RunData) -> Vec<(f64, f64)> {
    let Some(first) = r.host_series.first() else {
        return Vec::new();
    };
    let measured: Vec<usize> = (0..first.rows.len())
        .filter(|&k| !first.rows[k].warmup)
        .collect();
    let start = measured.first().map_or(0.0, |&k| first.rows[k].t_s);
    measured
        .iter()
        .filter_map(|&k| {
            let vals: Vec<f64> = r
                .host_series
                .iter()
                .filter_map(|s| s.cpu.get(k).cloned().flatten().map(|c| c.host_pct))
                .collect();
            let row = &first.rows[k];
            (!vals.is_empty()).then(|| {
                (
                    row.t_s + row.duration_s - start,
                    vals.iter().sum::<f64>() / vals.len() as f64,
                )
            })
        })
        .collect()
}

/// Whether any run recorded CPU per interval (runs stored before it was recorded have
/// none).
pub fn has_cpu_series(runs: &[RunData]) -> bool {
    runs.iter().any(|r| !cpu_points(r).is_empty())
}

/// Whole-host CPU busy % over time, one line per run (mean over its hosts).
pub fn cpu_over_time(runs: &[RunData]) -> Result<Chart, ChartError> {
    let lines = runs
        .iter()
        .enumerate()
        .map(|(i, r)| Line {
            color: run_color(i),
            dashed: false,
            points: cpu_points(r),
        })
        .collect();
    let id = "cpu-time";
    let title = "CPU over time";
    let panel = Panel {
        x_desc: SINCE_START,
        y_desc: "host CPU busy % of all cores",
        y: YAxis::Percent,
        lines,
        x_fmt: None,
        x_labels: 12,
        x_range: None,
    };
    Ok(Chart {
        id: id.into(),
        title: title.into(),
        caption: "Busy CPU of the whole host (all processes and kernel threads), percent of all its cores, per measured interval; with several hosts, the mean over the hosts that reported the interval.".into(),
        svg: draw_panels(id, title, &[panel], H)?,
        legend: run_legend(runs, Mark::Line),
    })
}

/// Largest "nines" shown: 99.9999%.
const MAX_NINES: f64 = 6.0;

/// Percentile curve of a histogram: x = nines (−log10(1 − q)), y = latency µs.
fn percentile_points(h: &LatencyHist) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let top = (h.count() as f64).log10().clamp(0.0, MAX_NINES);
    let mut pts: Vec<(f64, f64)> = (0..)
        .map(|i| i as f64 * 0.05)
        .take_while(|x| *x < top)
        .map(|x| {
            let q = 1.0 - 10f64.powf(-x);
            (x, h.quantile_ns(q) as f64 / 1000.0)
        })
        .collect();
    pts.push((top.max(0.05), h.max_ns() as f64 / 1000.0));
    pts
}

fn nines_label(x: &f64) -> String {
    if (x - x.round()).abs() > 1e-6 || *x < 0.0 {
        return String::new();
    }
    match x.round() as u32 {
        0 => "p0".into(),
        1 => "p90".into(),
        2 => "p99".into(),
        n => format!("p99.{}", "9".repeat(n as usize - 2)),
    }
}

/// The latency distribution as a percentile plot: read (solid) and write (dashed) per
/// run, x on a log "nines" scale, y on a log latency scale.
pub fn latency_percentiles(runs: &[RunData]) -> Result<Chart, ChartError> {
    let mut lines = Vec::new();
    let mut legend = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        for (name, h, dashed) in [
            ("read", &r.read_hist, false),
            ("write", &r.write_hist, true),
        ] {
            let points = percentile_points(h);
            if !points.is_empty() {
                lines.push(Line {
                    color: run_color(i),
                    dashed,
                    points,
                });
                legend.push(LegendEntry {
                    label: format!("{} {name}", r.title()),
                    color: run_color_css(i),
                    mark: if dashed { Mark::Dashed } else { Mark::Line },
                });
            }
        }
    }
    let title = "Latency distribution";
    let id = "latency-percentiles";
    let fmt: &dyn Fn(&f64) -> String = &nines_label;
    let panel = Panel {
        x_desc: "percentile (log scale of nines: p90, p99, p99.9, …)",
        y_desc: "latency (log scale)",
        y: YAxis::LogLatency,
        lines,
        x_fmt: Some(fmt),
        x_labels: 8,
        x_range: None,
    };
    Ok(Chart {
        id: id.into(),
        title: title.into(),
        caption: "Latency at each percentile of the measured phase, read (solid) and write (dashed), from the fleet-wide merged histograms. Each step right is one more nine; the last point of a curve is the maximum.".into(),
        svg: draw_panels(id, title, &[panel], H)?,
        legend,
    })
}

/// One curve of [`load_curve`]: the steps of one sweep or find-max.
struct CurveSeries {
    /// `sweep NAME` or `find-max NAME`.
    name: String,
    /// (IOPS, p50 µs, p99 µs), by IOPS.
    points: Vec<(f64, f64, f64)>,
}

/// Whether a stored step is a closed-loop maximum (the start of a rate curve or a
/// find-max), which is not a point of the open-loop curve.
fn closed_loop_step(r: &RunData) -> bool {
    r.labels.get("rate").is_some_and(|v| v == "closed-loop")
        || r.labels.get("rate_pct").is_some_and(|v| v == "max")
}

/// The curve of a matrix sweep's step (label `vary` naming several keys): the values of
/// every key but the last, ` (bs=4k, disks=2)`; empty for a sweep of one key.
fn matrix_curve(r: &RunData) -> String {
    let Some(keys) = r.labels.get("vary") else {
        return String::new();
    };
    let keys: Vec<&str> = keys.split(',').collect();
    if keys.len() < 2 {
        return String::new();
    }
    let at: Vec<String> = keys[..keys.len() - 1]
        .iter()
        .map(|k| format!("{k}={}", r.labels.get(*k).map_or("?", String::as_str)))
        .collect();
    format!(" ({})", at.join(", "))
}

/// What [`load_curve`] draws, gathered from the runs.
struct LoadSteps {
    series: Vec<CurveSeries>,
    /// The searches' objectives, each once.
    objectives: Vec<iofleet_stats::slo::Objective>,
    /// The points searches found: (IOPS, p99 µs, run id).
    found: Vec<(f64, f64, String)>,
}

/// The steps of every sweep and find-max among `runs` (closed-loop maxima and steps
/// without latencies left out), one series per sweep or search, in run order.
fn load_steps(runs: &[RunData]) -> LoadSteps {
    let mut series: Vec<CurveSeries> = Vec::new();
    let mut objectives: Vec<iofleet_stats::slo::Objective> = Vec::new();
    let mut found: Vec<(f64, f64, String)> = Vec::new();
    for r in runs {
        let name = match (r.labels.get("sweep"), r.labels.get("findmax")) {
            (Some(s), _) => format!("sweep {s}{}", matrix_curve(r)),
            (None, Some(f)) => format!("find-max {f}"),
            _ => continue,
        };
        if closed_loop_step(r) {
            continue;
        }
        let Some(l) = r.result.summary.all.latency_us.as_ref() else {
            continue;
        };
        let iops = r.result.summary.all.iops;
        if let Some(text) = r.labels.get("slo") {
            for o in iofleet_stats::slo::split(text).unwrap_or_default() {
                if !objectives.contains(&o) {
                    objectives.push(o);
                }
            }
        }
        if r.labels.get("found").is_some_and(|v| v == "true") {
            found.push((iops, l.p99, r.id.clone()));
        }
        let point = (iops, l.p50, l.p99);
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(point),
            None => series.push(CurveSeries {
                name,
                points: vec![point],
            }),
        }
    }
    LoadSteps {
        series,
        objectives,
        found,
    }
}

/// The latency-versus-IOPS curve of the runs of sweeps and find-max searches (labels
/// `sweep` or `findmax`): p50 (dashed) and p99 (solid) against IOPS, one curve per
/// sweep or search, with a search's objectives as horizontal lines and the point it
/// found (label `found=true`) as a black square. None when no sweep or search has two
/// points among `runs`.
pub fn load_curve(runs: &[RunData]) -> Result<Option<Chart>, ChartError> {
    let mut steps = load_steps(runs);
    steps.series.retain(|s| s.points.len() >= 2);
    if steps.series.is_empty() {
        return Ok(None);
    }
    for s in &mut steps.series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let title = "Latency against IOPS";
    let id = "load-curve";
    let x1 = steps
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.05;
    let (lo, hi) = latency_extent(&steps.series, &steps.objectives);
    let mut svg = String::new();
    draw_load_curve(&mut svg, &steps, x1, lo, hi).map_err(err(id))?;
    let legend = load_curve_legend(&steps);
    Ok(Some(Chart {
        id: id.into(),
        title: title.into(),
        caption: "p99 (solid) and p50 (dashed) latency of all I/O against the IOPS measured, one curve per sweep (per value of every key but the last of a matrix sweep) or find-max among the reported runs (each dot a stored step; the closed-loop maximum a rate curve or find-max starts from is left out); a find-max's objectives as grey dashed lines and the rate it found as a black square; log latency scale.".into(),
        svg: finish_svg(svg, title),
        legend,
    }))
}

/// The latency axis of [`load_curve`]: every p50, p99 and objective, with room.
fn latency_extent(
    series: &[CurveSeries],
    objectives: &[iofleet_stats::slo::Objective],
) -> (f64, f64) {
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|p| [p.1, p.2]))
        .chain(objectives.iter().map(|o| o.limit_us))
        .filter(|y| *y > 0.0 && y.is_finite())
        .collect();
    match (
        ys.iter().cloned().fold(f64::INFINITY, f64::min),
        ys.iter().cloned().fold(0.0f64, f64::max),
    ) {
        (min, max) if min.is_finite() && max > 0.0 => (min / 1.5, max * 1.5),
        _ => (1.0, 10.0),
    }
}

/// Draw [`load_curve`]'s chart into `svg`: objectives, curves and found points, IOPS
/// up to `x1` against latency from `lo` to `hi`.
fn draw_load_curve(
    svg: &mut String,
    steps: &LoadSteps,
    x1: f64,
    lo: f64,
    hi: f64,
) -> Result<(), String> {
    let objective_color = RGBColor(90, 90, 90);
    let root = SVGBackend::with_string(svg, (W, H)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let y = (lo..hi).log_scale().with_key_points(log_ticks(lo, hi));
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..x1, y)
        .map_err(|e| e.to_string())?;
    let yfmt = |v: &f64| latency_label(*v);
    chart
        .configure_mesh()
        .x_desc("IOPS")
        .y_desc("latency (log scale)")
        .x_labels(10)
        .x_label_formatter(&compact)
        .y_label_formatter(&yfmt)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .bold_line_style(RGBColor(225, 225, 225))
        .light_line_style(RGBColor(242, 242, 242))
        .draw()
        .map_err(|e| e.to_string())?;
    for o in &steps.objectives {
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, o.limit_us), (x1, o.limit_us)],
                4,
                4,
                objective_color.stroke_width(1),
            ))
            .map_err(|e| e.to_string())?;
    }
    for (i, s) in steps.series.iter().enumerate() {
        let c = run_color(i);
        for (dashed, pts) in [
            (
                false,
                s.points.iter().map(|p| (p.0, p.2)).collect::<Vec<_>>(),
            ),
            (true, s.points.iter().map(|p| (p.0, p.1)).collect()),
        ] {
            let pts: Vec<(f64, f64)> = pts.into_iter().filter(|p| p.1 > 0.0).collect();
            draw_line(
                &mut chart,
                &Line {
                    color: c,
                    dashed,
                    points: Vec::new(),
                },
                pts.clone(),
            )?;
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))
                .map_err(|e| e.to_string())?;
        }
    }
    chart
        .draw_series(steps.found.iter().filter(|f| f.1 > 0.0).map(|f| {
            EmptyElement::at((f.0, f.1)) + Rectangle::new([(-6, -6), (6, 6)], BLACK.filled())
        }))
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// The legend of [`load_curve`]: p99 and p50 of each curve, objectives, found points.
fn load_curve_legend(steps: &LoadSteps) -> Vec<LegendEntry> {
    let mut legend = Vec::new();
    for (i, s) in steps.series.iter().enumerate() {
        for (what, mark) in [("p99", Mark::Line), ("p50", Mark::Dashed)] {
            legend.push(LegendEntry {
                label: format!("{} {what}", s.name),
                color: run_color_css(i),
                mark,
            });
        }
    }
    for o in &steps.objectives {
        legend.push(LegendEntry {
            label: format!("objective {o}"),
            color: "#5a5a5a".into(),
            mark: Mark::Dashed,
        });
    }
    for (iops, p99, run) in &steps.found {
        legend.push(LegendEntry {
            label: format!(
                "found: {} IOPS at p99 {} (run {run})",
                compact(iops),
                latency_label(*p99)
            ),
            color: "#000000".into(),
            mark: Mark::Box,
        });
    }
    legend
}

/// Bins per decade of the latency histograms.
const HIST_BINS_PER_DECADE: f64 = 10.0;

/// A histogram as (log10 of the bin's lower edge in µs, % of the I/Os), bins of a tenth
/// of a decade; empty bins are left out.
pub fn histogram_bins(h: &LatencyHist) -> Vec<(f64, f64)> {
    let total = h.count();
    if total == 0 {
        return Vec::new();
    }
    let mut bins: std::collections::BTreeMap<i64, u64> = Default::default();
    for (ns, count) in h.buckets() {
        let us = (ns.max(1) as f64) / 1000.0;
        let bin = (us.log10() * HIST_BINS_PER_DECADE).floor() as i64;
        *bins.entry(bin).or_default() += count;
    }
    bins.into_iter()
        .map(|(b, c)| {
            (
                b as f64 / HIST_BINS_PER_DECADE,
                c as f64 * 100.0 / total as f64,
            )
        })
        .collect()
}

/// The latency histogram of run `i`: share of reads and of writes per latency bin (a
/// tenth of a decade wide) on a log latency axis.
pub fn latency_histogram(r: &RunData, i: usize) -> Result<Chart, ChartError> {
    let id = format!("latency-hist-{}", i + 1);
    let title = format!("Latency histogram of #{} {}", i + 1, r.title());
    let read = histogram_bins(&r.read_hist);
    let write = histogram_bins(&r.write_hist);
    let step = 1.0 / HIST_BINS_PER_DECADE;
    let xs = read.iter().chain(&write).map(|b| b.0);
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x + step))
    });
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    // Room on both sides, and at least a decade across.
    x0 -= step;
    x1 += step;
    if x1 - x0 < 1.0 {
        let mid = (x0 + x1) / 2.0;
        (x0, x1) = (mid - 0.5, mid + 0.5);
    }
    let ymax = read
        .iter()
        .chain(&write)
        .map(|b| b.1)
        .fold(0.0f64, f64::max);
    let color = run_color(i);
    let mut svg = String::new();
    let mut draw = || -> Result<(), String> {
        let root = SVGBackend::with_string(&mut svg, (W, 300)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (lo, hi) = (10f64.powf(x0), 10f64.powf(x1));
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
                0.0..(ymax.max(1.0) * 1.12),
            )
            .map_err(|e| e.to_string())?;
        let xfmt = |v: &f64| latency_label(*v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("latency (log scale, bins of a tenth of a decade)")
            .y_desc("% of the direction's I/Os")
            .x_label_formatter(&xfmt)
            .y_label_formatter(&compact)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| e.to_string())?;
        let half = step / 2.0;
        for (bins, offset, style) in [
            (&read, 0.0, color.filled()),
            (&write, half, color.mix(LIGHT_ALPHA).filled()),
        ] {
            chart
                .draw_series(bins.iter().map(|&(x, pct)| {
                    let left = x + offset + half * 0.05;
                    let (l, r) = (10f64.powf(left), 10f64.powf(left + half * 0.9));
                    Rectangle::new([(l, 0.0), (r, pct)], style)
                }))
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())
    };
    draw().map_err(err(&id))?;
    let css = run_color_css(i);
    Ok(Chart {
        svg: finish_svg(svg, &title),
        caption: "Share of the measured reads and of the measured writes that completed within each latency bin, from the run's merged histograms (exact HDR buckets grouped ten to a decade); log latency axis.".into(),
        legend: vec![
            LegendEntry {
                label: "read".into(),
                color: css.clone(),
                mark: Mark::Box,
            },
            LegendEntry {
                label: "write".into(),
                color: css,
                mark: Mark::LightBox,
            },
        ],
        id,
        title,
    })
}

struct BarSeries {
    color: RGBColor,
    /// One value per category; None where the run has no such worker or host.
    values: Vec<Option<f64>>,
}

/// The mean of a run's bars over its own workers or hosts (categories it lacks are
/// not zeros).
fn bar_mean(values: &[Option<f64>]) -> Option<f64> {
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64)
}

/// Vertical grouped bars: one group per category, one bar per series; dashed
/// horizontal line per series at its mean.
fn grouped_bars(
    id: &str,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    categories: &[String],
    series: &[BarSeries],
) -> Result<String, ChartError> {
    let n = categories.len().max(1);
    let s_count = series.len().max(1);
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().flatten().cloned())
        .fold(0.0f64, f64::max);
    let hi = if max > 0.0 { max * 1.15 } else { 1.0 };
    let fmt = |x: &f64| -> String {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        categories.get(i as usize).cloned().unwrap_or_default()
    };
    let draw = || -> Result<String, String> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            let mut chart = ChartBuilder::on(&root)
                .margin(12)
                .x_label_area_size(44)
                .y_label_area_size(80)
                .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0..hi)
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .x_labels(n.min(30) + 1)
                .x_label_formatter(&fmt)
                .y_label_formatter(&compact)
                .label_style(("sans-serif", 13))
                .axis_desc_style(("sans-serif", 14))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(|e| e.to_string())?;
            let width = 0.8 / s_count as f64;
            for (si, s) in series.iter().enumerate() {
                let color = s.color;
                chart
                    .draw_series(s.values.iter().enumerate().filter_map(|(c, v)| {
                        let left = c as f64 - 0.4 + si as f64 * width;
                        let v = (*v)?;
                        Some(Rectangle::new(
                            [(left, 0.0), (left + width * 0.92, v)],
                            color.filled(),
                        ))
                    }))
                    .map_err(|e| e.to_string())?;
                if let Some(mean) = bar_mean(&s.values) {
                    chart
                        .draw_series(DashedLineSeries::new(
                            [(-0.5, mean), (n as f64 - 0.5, mean)],
                            6,
                            4,
                            color.mix(0.8).stroke_width(1),
                        ))
                        .map_err(|e| e.to_string())?;
                }
            }
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(svg)
    };
    Ok(finish_svg(draw().map_err(err(id))?, title))
}

/// IOPS of each worker, runs side by side, with each run's per-worker mean dashed: a
/// straggler is a bar well below its run's line.
pub fn worker_spread(runs: &[RunData]) -> Result<Chart, ChartError> {
    let n = runs
        .iter()
        .map(|r| r.result.workers.len())
        .max()
        .unwrap_or(0);
    let categories: Vec<String> = (0..n).map(|w| w.to_string()).collect();
    let series: Vec<BarSeries> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| BarSeries {
            color: run_color(i),
            values: r.result.workers.iter().map(|w| Some(w.all.iops)).collect(),
        })
        .collect();
    let title = "IOPS per worker";
    let id = "worker-spread";
    let svg = grouped_bars(id, title, "worker", "IOPS", &categories, &series)?;
    Ok(Chart {
        id: id.into(),
        title: title.into(),
        caption: "Measured IOPS of each worker; the dashed line is the run's mean per worker. Workers far below the line are stragglers.".into(),
        svg,
        legend: run_legend(runs, Mark::Box),
    })
}

/// Distinct hosts of the runs, in first-seen order.
pub fn hosts(runs: &[RunData]) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    let named = runs.iter().flat_map(|r| {
        r.result
            .workers
            .iter()
            .map(|w| &w.host)
            .chain(r.host_series.iter().map(|s| &s.name))
    });
    for h in named {
        if !hosts.contains(h) {
            hosts.push(h.clone());
        }
    }
    hosts
}

/// Distinct worker groups of the runs (by name), in first-seen order.
pub fn groups(runs: &[RunData]) -> Vec<String> {
    let mut groups: Vec<String> = Vec::new();
    for g in runs.iter().flat_map(|r| &r.group_series) {
        if !groups.contains(&g.name) {
            groups.push(g.name.clone());
        }
    }
    groups
}

/// IOPS per host (Σ of its workers), runs side by side; only meaningful with 2+ hosts.
pub fn host_spread(runs: &[RunData]) -> Result<Chart, ChartError> {
    let categories = hosts(runs);
    let series: Vec<BarSeries> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| BarSeries {
            color: run_color(i),
            values: categories
                .iter()
                .map(|h| {
                    let mine: Vec<f64> = r
                        .result
                        .workers
                        .iter()
                        .filter(|w| &w.host == h)
                        .map(|w| w.all.iops)
                        .collect();
                    (!mine.is_empty()).then(|| mine.iter().sum())
                })
                .collect(),
        })
        .collect();
    let title = "IOPS per host";
    let id = "host-spread";
    let svg = grouped_bars(id, title, "host", "IOPS", &categories, &series)?;
    Ok(Chart {
        id: id.into(),
        title: title.into(),
        caption: "Measured IOPS of each host (sum of its workers); the dashed line is the run's mean per host.".into(),
        svg,
        legend: run_legend(runs, Mark::Box),
    })
}

/// The series named `name` of each run that has one, with the run's index.
fn part_of<'a>(
    runs: &'a [RunData],
    name: &str,
    pick: impl Fn(&'a RunData) -> &'a [Series],
) -> Vec<(usize, &'a RunData, &'a Series)> {
    runs.iter()
        .enumerate()
        .filter_map(|(i, r)| pick(r).iter().find(|s| s.name == name).map(|s| (i, r, s)))
        .collect()
}

/// One part of the fleet over time, runs overlaid: IOPS, p99 latency and, for a host,
/// its CPU, in panels stacked on one time axis.
fn part_over_time(
    id: String,
    title: String,
    parts: &[(usize, &RunData, &Series)],
    with_cpu: bool,
) -> Result<Chart, ChartError> {
    let lines = |f: &dyn Fn(&Series) -> Vec<(f64, f64)>| -> Vec<Line> {
        parts
            .iter()
            .map(|(i, _, s)| Line {
                color: run_color(*i),
                dashed: false,
                points: f(s),
            })
            .collect()
    };
    let iops = lines(&|s| measured_rows(&s.rows, |r| Some(r.iops)));
    let p99 = lines(&|s| measured_rows(&s.rows, |r| r.p99_us));
    let cpu = lines(&|s| {
        let measured: Vec<usize> = (0..s.rows.len()).filter(|&k| !s.rows[k].warmup).collect();
        let start = measured.first().map_or(0.0, |&k| s.rows[k].t_s);
        measured
            .iter()
            .filter_map(|&k| {
                let c = s.cpu.get(k).cloned().flatten()?;
                Some((s.rows[k].t_s + s.rows[k].duration_s - start, c.host_pct))
            })
            .collect()
    });
    let range = x_extent(&iops);
    let mut panels = vec![
        Panel {
            x_desc: SINCE_START,
            y_desc: "IOPS",
            y: YAxis::Linear,
            lines: iops,
            x_fmt: None,
            x_labels: 12,
            x_range: Some(range),
        },
        Panel {
            x_desc: SINCE_START,
            y_desc: "p99 latency (log)",
            y: YAxis::LogLatency,
            lines: p99,
            x_fmt: None,
            x_labels: 12,
            x_range: Some(range),
        },
    ];
    if with_cpu {
        panels.push(Panel {
            x_desc: SINCE_START,
            y_desc: "host CPU %",
            y: YAxis::Percent,
            lines: cpu,
            x_fmt: None,
            x_labels: 12,
            x_range: Some(range),
        });
    }
    let svg = draw_panels(&id, &title, &panels, PANEL_H)?;
    let caption = if with_cpu {
        "This host's IOPS (sum of its workers), p99 latency of all its I/O (from its merged histograms) and its whole-host CPU busy % of all cores, per measured interval, one line per run; a gap in the CPU line is an interval the host did not report."
    } else {
        "This group's IOPS (sum of its workers) and p99 latency of all its I/O (from its merged histograms) per measured interval, one line per run."
    };
    Ok(Chart {
        id,
        title,
        caption: caption.into(),
        svg,
        legend: parts
            .iter()
            .map(|(i, r, _)| LegendEntry {
                label: r.title(),
                color: run_color_css(*i),
                mark: Mark::Line,
            })
            .collect(),
    })
}

/// Host `k` of `hosts(runs)` over time: IOPS, p99 and CPU.
pub fn host_over_time(runs: &[RunData], k: usize, host: &str) -> Result<Chart, ChartError> {
    let parts = part_of(runs, host, |r| &r.host_series);
    part_over_time(
        format!("host-{}", k + 1),
        format!("Host {host} over time"),
        &parts,
        true,
    )
}

/// Group `k` of `groups(runs)` over time: IOPS and p99.
pub fn group_over_time(runs: &[RunData], k: usize, group: &str) -> Result<Chart, ChartError> {
    let parts = part_of(runs, group, |r| &r.group_series);
    part_over_time(
        format!("group-{}", k + 1),
        format!("Group {group} over time"),
        &parts,
        false,
    )
}

/// Metrics shown as comparison bars.
pub const BAR_METRICS: &[&str] = &[
    "iops",
    "mbps",
    "mean",
    "read.mean",
    "write.mean",
    "read.p99",
    "write.p99",
    "p99_9",
];

/// The change axis: from the most negative to the most positive change (0 always in
/// view), widened on each side that has bars to leave room for their value labels, and
/// at least 10 points across.
pub fn change_axis(changes: &[f64]) -> (f64, f64) {
    let lo = changes.iter().cloned().fold(0.0f64, f64::min);
    let hi = changes.iter().cloned().fold(0.0f64, f64::max);
    let span = (hi - lo).max(10.0);
    let room = span * 0.18;
    let lo = if lo < 0.0 { lo - room } else { -span * 0.03 };
    let hi = if hi > 0.0 { hi + room } else { span * 0.03 };
    (lo, hi)
}

/// Horizontal bars: % change of each metric against the baseline, one bar per other run.
pub fn comparison_bars(cmp: &Comparison<'_>) -> Result<Chart, ChartError> {
    let metrics: Vec<Metric> = BAR_METRICS
        .iter()
        .map(|p| Metric::parse(p).expect("built-in metric"))
        .collect();
    let m = metrics.len();
    let others: Vec<(usize, &RunData)> = cmp.others().collect();
    let k = others.len().max(1);
    // Undefined changes (baseline 0) are drawn as 0 and labelled n/a.
    let changes: Vec<Vec<Option<f64>>> = others
        .iter()
        .map(|(i, _)| metrics.iter().map(|mt| cmp.change(*mt, *i)).collect())
        .collect();
    let known: Vec<f64> = changes.iter().flatten().flatten().copied().collect();
    let (x0, x1) = change_axis(&known);
    let span = x1 - x0;
    let labels: Vec<String> = metrics.iter().map(|mt| mt.label()).collect();
    let yfmt = |y: &f64| -> String {
        let i = y.round();
        if (y - i).abs() > 1e-6 || i < 0.0 || i as usize >= m {
            return String::new();
        }
        labels[m - 1 - i as usize].clone()
    };
    let id = "compare-bars";
    let title = "Change against the baseline";
    let draw = || -> Result<String, String> {
        let mut svg = String::new();
        {
            let root =
                SVGBackend::with_string(&mut svg, (W, 60 + 44 * m as u32)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            let mut chart = ChartBuilder::on(&root)
                .margin(12)
                .x_label_area_size(44)
                .y_label_area_size(170)
                .build_cartesian_2d(x0..x1, -0.5f64..(m as f64 - 0.5))
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .x_desc(format!(
                    "% change against the baseline {}",
                    cmp.base().title()
                ))
                .y_labels(m + 1)
                .y_label_formatter(&yfmt)
                .x_label_formatter(&|x| format!("{x:+.0}%"))
                .label_style(("sans-serif", 13))
                .axis_desc_style(("sans-serif", 14))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(|e| e.to_string())?;
            let h = 0.8 / k as f64;
            for (oi, (run_index, _)) in others.iter().enumerate() {
                let color = run_color(*run_index);
                let bars = changes[oi].iter().enumerate().map(|(mi, c)| {
                    let y = (m - 1 - mi) as f64;
                    let top = y + 0.4 - oi as f64 * h;
                    Rectangle::new(
                        [(0.0, top), (c.unwrap_or(0.0), top - h * 0.9)],
                        color.filled(),
                    )
                });
                chart.draw_series(bars).map_err(|e| e.to_string())?;
                let texts = changes[oi].iter().enumerate().map(|(mi, c)| {
                    let y = (m - 1 - mi) as f64 + 0.4 - oi as f64 * h - h * 0.45;
                    let x = c.unwrap_or(0.0);
                    let text = crate::compare::fmt_change(*c);
                    let x = if x >= 0.0 {
                        x + span * 0.01
                    } else {
                        x - span * 0.01 - span * 0.0085 * text.len() as f64
                    };
                    Text::new(text, (x, y), ("sans-serif", 12).into_font().color(&BLACK))
                });
                chart.draw_series(texts).map_err(|e| e.to_string())?;
            }
            chart
                .draw_series(LineSeries::new(
                    [(0.0, -0.5), (0.0, m as f64 - 0.5)],
                    BLACK.stroke_width(1),
                ))
                .map_err(|e| e.to_string())?;
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(svg)
    };
    Ok(Chart {
        id: id.into(),
        title: title.into(),
        caption: "Change of each metric against the baseline run; the axis spans the changes measured. For IOPS and MB/s right is better; for latencies left is better.".into(),
        svg: finish_svg(draw().map_err(err(id))?, title),
        legend: others
            .iter()
            .map(|(i, r)| LegendEntry {
                label: r.title(),
                color: run_color_css(*i),
                mark: Mark::Box,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels() {
        assert_eq!(compact(&2_024_000.0), "2.02M");
        assert_eq!(compact(&450_000.0), "450k");
        assert_eq!(compact(&12.5), "12.5");
        assert_eq!(compact(&0.75), "0.75");
        assert_eq!(compact(&0.0), "0");
        assert_eq!(nines_label(&0.0), "p0");
        assert_eq!(nines_label(&2.0), "p99");
        assert_eq!(nines_label(&4.0), "p99.99");
        assert_eq!(nines_label(&2.5), "");
        assert_eq!(latency_label(0.5), "0.5 µs");
        assert_eq!(latency_label(200.0), "200 µs");
        assert_eq!(latency_label(1000.0), "1 ms");
        assert_eq!(latency_label(2500.0), "2.5 ms");
        assert_eq!(latency_label(50_000.0), "50 ms");
        assert_eq!(latency_label(2e6), "2 s");
    }

    #[test]
    fn log_ticks_are_1_2_5_per_decade() {
        // 0.8 µs … 40 ms: 1-2-5 would be 14 ticks, so every decade.
        assert_eq!(
            log_ticks(0.8, 40_000.0),
            [1.0, 10.0, 100.0, 1000.0, 10_000.0]
        );
        let t = log_ticks(7.0, 3000.0);
        let want = [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0];
        assert_eq!(t.len(), want.len(), "{t:?}");
        assert!(
            t.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-9),
            "{t:?}"
        );
        // A narrow range still gets at least three labelled ticks.
        assert_eq!(log_ticks(110.0, 350.0), [150.0, 200.0, 250.0, 300.0]);
        assert!(log_ticks(0.0, 1.0).is_empty());
    }

    #[test]
    fn change_axis_fits_the_changes() {
        let (lo, hi) = change_axis(&[-12.0, 30.0, 4.0]);
        assert!(lo < -12.0 && lo > -30.0, "{lo}");
        assert!(hi > 30.0 && hi < 50.0, "{hi}");
        // All better: the axis does not reach far into the negative side.
        let (lo, hi) = change_axis(&[690.0, 250.0]);
        assert!(lo > -30.0 && lo < 0.0, "{lo}");
        assert!(hi > 690.0 && hi < 900.0, "{hi}");
        let (lo, hi) = change_axis(&[]);
        assert!(lo < 0.0 && hi > 0.0 && hi - lo < 12.0);
    }

    #[test]
    fn a_runs_mean_bar_ignores_hosts_it_did_not_run_on() {
        assert_eq!(bar_mean(&[Some(60_000.0), None, None]), Some(60_000.0));
        assert_eq!(bar_mean(&[None, Some(10.0), Some(20.0)]), Some(15.0));
        assert_eq!(bar_mean(&[None]), None);
    }

    #[test]
    fn histogram_bins_hold_every_io() {
        let mut h = LatencyHist::new();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let bins = histogram_bins(&h);
        let total: f64 = bins.iter().map(|b| b.1).sum();
        assert!((total - 100.0).abs() < 1e-9);
        assert!(bins.windows(2).all(|w| w[0].0 < w[1].0));
        // 1 µs … 10 ms: four decades of ten bins.
        assert!(bins.len() <= 41 && bins.len() >= 38, "{}", bins.len());
        assert!(histogram_bins(&LatencyHist::new()).is_empty());
    }

    #[test]
    fn percentile_curve_is_monotonic_and_ends_at_max() {
        let mut h = LatencyHist::new();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let pts = percentile_points(&h);
        assert!(pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        let last = pts.last().unwrap();
        assert!((last.0 - 4.0).abs() < 1e-9);
        assert_eq!(last.1, h.max_ns() as f64 / 1000.0);
    }

    #[test]
    fn inline_svg_carries_no_url() {
        let svg = finish_svg(
            "<svg width=\"1\" height=\"1\" viewBox=\"0 0 1 1\" xmlns=\"http://www.w3.org/2000/svg\">\n</svg>".into(),
            "a <b>",
        );
        assert!(!svg.contains("http"));
        assert!(
            svg.starts_with("<svg class=\"plot\" role=\"img\" aria-label=\"a &lt;b&gt;\" width=")
        );
    }
}
