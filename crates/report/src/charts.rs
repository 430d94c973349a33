//! Charts for the HTML report, drawn with plotters' SVG backend (no fonts needed: text is
//! left to the browser). Each function takes the runs to overlay and returns a `Chart`
//! holding inline SVG ready to embed in HTML5 (the `xmlns` attribute, which inline SVG
//! does not need, is removed so the page carries no URL at all).
//!
//! The figures plotted are those of the `RunResult`s and the merged histograms handed in;
//! nothing is recomputed here. Time series start at the beginning of measurement
//! (warm-up intervals are left out, so runs with different warm-ups line up).

use iofleet_stats::LatencyHist;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;

use crate::compare::{Comparison, Metric};
use crate::RunData;

/// One drawn chart.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Stable element id in the report (`iops-time`, `latency-percentiles`, …).
    pub id: &'static str,
    pub title: String,
    /// What the chart shows and how to read it.
    pub caption: String,
    pub svg: String,
}

#[derive(Debug, thiserror::Error)]
#[error("drawing the {chart} chart: {detail}")]
pub struct ChartError {
    pub chart: &'static str,
    pub detail: String,
}

const W: u32 = 1100;
const H: u32 = 400;

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

struct Line {
    label: String,
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

struct LineSpec<'a> {
    id: &'static str,
    x_desc: &'a str,
    y_desc: &'a str,
    lines: Vec<Line>,
    x_fmt: Option<&'a dyn Fn(&f64) -> String>,
    x_labels: usize,
}

fn err(chart: &'static str) -> impl Fn(String) -> ChartError {
    move |detail| ChartError { chart, detail }
}

/// Axis labels: 1.2M, 450k, 12.5, 0.75.
pub fn compact(v: &f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
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

/// Make plotters' SVG fit for inline HTML: no namespace URL, scalable.
fn finish_svg(svg: String, title: &str) -> String {
    let svg = svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    let title = crate::html::escape(title);
    svg.replacen(
        "<svg ",
        &format!("<svg class=\"plot\" role=\"img\" aria-label=\"{title}\" "),
        1,
    )
}

fn draw_lines<Y>(spec: &LineSpec<'_>, y: Y) -> Result<String, String>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let xs = spec.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1, y)
            .map_err(|e| e.to_string())?;
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(spec.x_desc)
            .y_desc(spec.y_desc)
            .x_labels(spec.x_labels)
            .y_label_formatter(&compact)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .light_line_style(RGBColor(235, 235, 235));
        if let Some(f) = spec.x_fmt {
            mesh.x_label_formatter(f);
        }
        mesh.draw().map_err(|e| e.to_string())?;
        for l in &spec.lines {
            let color = l.color;
            let style = color.stroke_width(2);
            let anno = if l.dashed {
                chart.draw_series(DashedLineSeries::new(l.points.iter().copied(), 7, 4, style))
            } else {
                chart.draw_series(LineSeries::new(l.points.iter().copied(), style))
            }
            .map_err(|e| e.to_string())?;
            let dashed = l.dashed;
            anno.label(l.label.clone()).legend(move |(x, y)| {
                let end = if dashed { x + 8 } else { x + 20 };
                PathElement::new(vec![(x, y), (end, y)], color.stroke_width(3))
            });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

fn line_chart(spec: LineSpec<'_>, log_y: bool, title: &str) -> Result<String, ChartError> {
    let ys: Vec<f64> = spec
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite() && (!log_y || *y > 0.0))
        .collect();
    let max = ys.iter().cloned().fold(0.0f64, f64::max);
    let svg = if log_y {
        let min = ys.iter().cloned().fold(f64::INFINITY, f64::min);
        let (lo, hi) = if min.is_finite() && max > 0.0 {
            (min / 1.5, max * 1.5)
        } else {
            (1.0, 10.0)
        };
        draw_lines(&spec, (lo..hi).log_scale())
    } else {
        let hi = if max > 0.0 { max * 1.1 } else { 1.0 };
        draw_lines(&spec, 0.0..hi)
    }
    .map_err(err(spec.id))?;
    Ok(finish_svg(svg, title))
}

/// Measured intervals of a run as (seconds since measurement start at interval end, y).
fn measured_series(
    r: &RunData,
    f: impl Fn(&iofleet_stats::result::IntervalRow) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let measured: Vec<_> = r.result.intervals.iter().filter(|i| !i.warmup).collect();
    let start = measured.first().map_or(0.0, |i| i.t_s);
    measured
        .iter()
        // An interval without the figure (no I/O in it) has no point.
        .filter_map(|i| Some((i.t_s + i.duration_s - start, f(i)?)))
        .collect()
}

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
            label: r.title(),
            color: run_color(i),
            dashed: false,
            points: measured_series(r, |row| Some(if mbps { row.mbps } else { row.iops })),
        })
        .collect();
    let svg = line_chart(
        LineSpec {
            id,
            x_desc: "seconds since the start of measurement",
            y_desc: y,
            lines,
            x_fmt: None,
            x_labels: 12,
        },
        false,
        title,
    )?;
    Ok(Chart {
        id,
        title: title.into(),
        caption: format!(
            "{y} of the whole fleet per measured interval (plotted at the end of each interval), one line per run."
        ),
        svg,
    })
}

/// p50 (dashed) and p99 (solid) latency of all I/O per interval, runs overlaid.
pub fn latency_over_time(runs: &[RunData]) -> Result<Chart, ChartError> {
    let mut lines = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        lines.push(Line {
            label: format!("{} p99", r.title()),
            color: run_color(i),
            dashed: false,
            points: measured_series(r, |row| row.p99_us),
        });
        lines.push(Line {
            label: format!("{} p50", r.title()),
            color: run_color(i),
            dashed: true,
            points: measured_series(r, |row| row.p50_us),
        });
    }
    let title = "Latency percentiles over time";
    let svg = line_chart(
        LineSpec {
            id: "latency-time",
            x_desc: "seconds since the start of measurement",
            y_desc: "latency µs (log scale)",
            lines,
            x_fmt: None,
            x_labels: 12,
        },
        true,
        title,
    )?;
    Ok(Chart {
        id: "latency-time",
        title: title.into(),
        caption: "p99 (solid) and p50 (dashed) latency of all I/O in each measured interval, from that interval's merged histogram; log scale.".into(),
        svg,
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
    for (i, r) in runs.iter().enumerate() {
        for (name, h, dashed) in [
            ("read", &r.read_hist, false),
            ("write", &r.write_hist, true),
        ] {
            let points = percentile_points(h);
            if !points.is_empty() {
                lines.push(Line {
                    label: format!("{} {name}", r.title()),
                    color: run_color(i),
                    dashed,
                    points,
                });
            }
        }
    }
    let title = "Latency distribution";
    let fmt: &dyn Fn(&f64) -> String = &nines_label;
    let svg = line_chart(
        LineSpec {
            id: "latency-percentiles",
            x_desc: "percentile (log scale of nines: p90, p99, p99.9, …)",
            y_desc: "latency µs (log scale)",
            lines,
            x_fmt: Some(fmt),
            x_labels: 8,
        },
        true,
        title,
    )?;
    Ok(Chart {
        id: "latency-percentiles",
        title: title.into(),
        caption: "Latency at each percentile of the measured phase, read (solid) and write (dashed), from the fleet-wide merged histograms. Each step right is one more nine; the last point of a curve is the maximum.".into(),
        svg,
    })
}

struct BarSeries {
    label: String,
    color: RGBColor,
    values: Vec<f64>,
}

/// Vertical grouped bars: one group per category, one bar per series; dashed
/// horizontal line per series at its mean.
fn grouped_bars(
    id: &'static str,
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
        .flat_map(|s| s.values.iter().cloned())
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
                let anno = chart
                    .draw_series(s.values.iter().enumerate().map(|(c, v)| {
                        let left = c as f64 - 0.4 + si as f64 * width;
                        Rectangle::new([(left, 0.0), (left + width * 0.92, *v)], color.filled())
                    }))
                    .map_err(|e| e.to_string())?;
                anno.label(s.label.clone()).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                });
                if !s.values.is_empty() {
                    let mean = s.values.iter().sum::<f64>() / s.values.len() as f64;
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
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(|e| e.to_string())?;
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
            label: r.title(),
            color: run_color(i),
            values: r.result.workers.iter().map(|w| w.all.iops).collect(),
        })
        .collect();
    let title = "IOPS per worker";
    let svg = grouped_bars(
        "worker-spread",
        title,
        "worker",
        "IOPS",
        &categories,
        &series,
    )?;
    Ok(Chart {
        id: "worker-spread",
        title: title.into(),
        caption: "Measured IOPS of each worker; the dashed line is the run's mean per worker. Workers far below the line are stragglers.".into(),
        svg,
    })
}

/// Distinct hosts of the runs, in first-seen order.
pub fn hosts(runs: &[RunData]) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    for w in runs.iter().flat_map(|r| &r.result.workers) {
        if !hosts.contains(&w.host) {
            hosts.push(w.host.clone());
        }
    }
    hosts
}

/// IOPS per host (Σ of its workers), runs side by side; only meaningful with 2+ hosts.
pub fn host_spread(runs: &[RunData]) -> Result<Chart, ChartError> {
    let categories = hosts(runs);
    let series: Vec<BarSeries> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| BarSeries {
            label: r.title(),
            color: run_color(i),
            values: categories
                .iter()
                .map(|h| {
                    r.result
                        .workers
                        .iter()
                        .filter(|w| &w.host == h)
                        .map(|w| w.all.iops)
                        .sum()
                })
                .collect(),
        })
        .collect();
    let title = "IOPS per host";
    let svg = grouped_bars("host-spread", title, "host", "IOPS", &categories, &series)?;
    Ok(Chart {
        id: "host-spread",
        title: title.into(),
        caption: "Measured IOPS of each host (sum of its workers); the dashed line is the run's mean per host.".into(),
        svg,
    })
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
    let span = changes
        .iter()
        .flatten()
        .flatten()
        .fold(5.0f64, |a, c| a.max(c.abs()))
        * 1.25;
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
                .build_cartesian_2d(-span..span, -0.5f64..(m as f64 - 0.5))
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
            for (oi, (run_index, run)) in others.iter().enumerate() {
                let color = run_color(*run_index);
                let bars = changes[oi].iter().enumerate().map(|(mi, c)| {
                    let y = (m - 1 - mi) as f64;
                    let top = y + 0.4 - oi as f64 * h;
                    Rectangle::new(
                        [(0.0, top), (c.unwrap_or(0.0), top - h * 0.9)],
                        color.filled(),
                    )
                });
                let anno = chart.draw_series(bars).map_err(|e| e.to_string())?;
                anno.label(run.title()).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                });
                let texts = changes[oi].iter().enumerate().map(|(mi, c)| {
                    let y = (m - 1 - mi) as f64 + 0.4 - oi as f64 * h - h * 0.45;
                    let x = c.unwrap_or(0.0);
                    let text = crate::compare::fmt_change(*c);
                    let x = if x >= 0.0 {
                        x + span * 0.01
                    } else {
                        x - span * 0.01 - span * 0.012 * text.len() as f64
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
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(|e| e.to_string())?;
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(svg)
    };
    Ok(Chart {
        id,
        title: title.into(),
        caption: "Change of each metric against the baseline run. For IOPS and MB/s right is better; for latencies left is better.".into(),
        svg: finish_svg(draw().map_err(err(id))?, title),
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
