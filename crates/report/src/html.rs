//! The HTML report: one self-contained file (inline CSS, inline SVG charts from
//! `charts`, one small inline script) that opens anywhere without a network: no external
//! scripts, fonts, images or links. It shows first each invalid run (below its quorum of
//! hosts) and why, then the runs and the workload each ran (fleet
//! shape, streams, engine, target), the environment, the multi-configuration summary
//! (with the median-IOPS and peak intervals), the runs' figures as a published report's
//! tool defines them (`--convention`, beside the exact ones), comparison bars against the baseline, IOPS, MB/s, latency and CPU over time, the
//! latency distribution with a histogram per run, per-worker and per-host spread, a
//! section per host (IOPS, p99 and CPU over time) and per worker group, percentile
//! tables and notices.
//!
//! Layout: legends are HTML next to each chart, never drawn over the plot; tables wrap
//! their text cells so the page fits a 1400 px wide window without sideways scrolling,
//! and each table sits in its own box that scrolls sideways in a narrower window (800 px:
//! `iofleet serve`'s browser test), so the page itself never does.
//!
//! The inline script only checks the page: it counts the charts that rendered with
//! visible marks and writes the count into `#chart-check`, and writes into
//! `#layout-check` how wide the page is against the window, how many tables or charts
//! stick out of it and how many legends overlap their plot, so a headless browser (and
//! a reader) can tell every chart drew and the layout holds.

use std::fmt::Write as _;

use iofleet_stats::OpSummary;

use crate::charts::{self, run_color_css, Chart, ChartError, Mark};
use crate::compare::{
    default_metrics, fmt_change, fmt_lat, fmt_opt, fmt_outstanding, fmt_value, metric_text,
    Comparison, Gain, Metric, Unit,
};
use crate::convention::{Convention, Figure};
use crate::figures::{opt1, opt_fixed};
use crate::markup::escape;
use crate::workload;
use crate::RunData;
use iofleet_profile::Bytes;

/// The page, header and section style every iofleet page shares (the report, and the
/// results browser's own pages).
pub(crate) const BASE_STYLE: &str = r#"
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d1d1f; background: #f6f7f9; }
header { background: #1f2937; color: #fff; padding: 18px 32px; }
header h1 { margin: 0 0 4px 0; font-size: 24px; }
header p { margin: 0; color: #cbd5e1; }
main { padding: 16px 32px 40px 32px; }
section { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; padding: 12px 20px; margin: 16px 0; }
h2 { font-size: 19px; margin: 6px 0 10px 0; }
"#;

const STYLE: &str = r#"
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 10px 0; max-width: 100%; }
th, td { border-bottom: 1px solid #e5e7eb; padding: 4px 8px; text-align: right; }
td { white-space: nowrap; }
td.l, td.w { white-space: normal; overflow-wrap: anywhere; }
td:first-child { white-space: nowrap; }
th { background: #f3f4f6; font-weight: 600; }
td.l, th.l { text-align: left; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.better { color: #15803d; font-weight: 600; }
.worse { color: #b91c1c; font-weight: 600; }
.base { color: #6b7280; }
.warn { color: #b45309; }
figure.chart { margin: 8px 0 18px 0; }
figure.chart figcaption { font-size: 13px; color: #4b5563; margin-top: 4px; }
svg.plot { width: 100%; height: auto; display: block; }
ul.legend { list-style: none; display: flex; flex-wrap: wrap; gap: 4px 18px; padding: 0; margin: 6px 0 0 0; font-size: 13px; }
ul.legend li { display: flex; align-items: center; }
.mark { display: inline-block; margin-right: 6px; flex: none; }
.mark.line { width: 22px; border-top: 3px solid var(--c); }
.mark.dashed { width: 22px; border-top: 3px dashed var(--c); }
.mark.box { width: 12px; height: 12px; background: var(--c); }
.mark.lightbox { width: 12px; height: 12px; background: var(--c); opacity: 0.45; }
.part { margin: 10px 0 4px 0; }
footer { font-size: 12px; color: #6b7280; padding: 0 32px 24px 32px; }
div.scroll { overflow-x: auto; max-width: 100%; }
div.scroll > table { margin-left: 0; }
@media (max-width: 900px) { header, footer { padding-left: 12px; padding-right: 12px; } main { padding: 8px 10px 24px 10px; } section { padding: 8px 10px; } th, td { padding: 3px 5px; } }
"#;

/// The report's one inline script (the chart check), exactly as the page carries it
/// between `<script>` and `</script>`: served pages allow it by its hash.
pub const CHECK_SCRIPT: &str = r##"
(function () {
  var figures = document.querySelectorAll("figure.chart");
  var rendered = 0;
  figures.forEach(function (f) {
    var svg = f.querySelector("svg");
    var marks = 0;
    if (svg) {
      // Data marks: lines of three or more points (two-point lines are axes and
      // ticks), filled bars, and dots (a two-step sweep's curve is two dots and a line).
      svg.querySelectorAll("polyline, path, rect, line, circle").forEach(function (m) {
        var b = m.getBBox();
        if (b.width <= 0 && b.height <= 0) { return; }
        if (m.tagName === "polyline" && (m.getAttribute("points") || "").trim().split(/\s+/).length >= 3) { marks++; }
        if (m.tagName === "rect" && b.width > 0 && b.height > 0 && (m.getAttribute("fill") || "").toUpperCase() !== "#FFFFFF") { marks++; }
        if (m.tagName === "circle" && b.width > 0 && b.height > 0) { marks++; }
      });
    }
    var box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
    var ok = marks > 0 && box.width > 200 && box.height > 100;
    f.setAttribute("data-marks", String(marks));
    f.setAttribute("data-rendered", ok ? "yes" : "no");
    if (ok) { rendered++; }
  });
  var out = document.getElementById("chart-check");
  out.setAttribute("data-rendered", String(rendered));
  out.setAttribute("data-expected", String(figures.length));
  out.textContent = rendered + " of " + figures.length + " charts rendered";

  // Layout: nothing wider than the window, legends clear of their plots.
  var doc = document.documentElement;
  var view = doc.clientWidth;
  var sticking = 0;
  // A table in its own sideways-scrolling box sticks out only if the box does.
  document.querySelectorAll("table, figure, svg, ul.legend, section, div.scroll").forEach(function (e) {
    if (e.tagName === "TABLE" && e.parentElement.classList.contains("scroll")) { return; }
    var scrolls = e.tagName === "svg" || e.classList.contains("scroll");
    var r = e.getBoundingClientRect();
    if (r.right > view + 0.5 || e.scrollWidth > e.clientWidth + 1 && !scrolls) { sticking++; }
  });
  var overlaps = 0, legends = 0;
  figures.forEach(function (f) {
    var svg = f.querySelector("svg"), legend = f.querySelector("ul.legend");
    if (!svg || !legend) { return; }
    legends++;
    var a = svg.getBoundingClientRect(), b = legend.getBoundingClientRect();
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) { overlaps++; }
  });
  var layout = document.getElementById("layout-check");
  layout.setAttribute("data-page-width", String(doc.scrollWidth));
  layout.setAttribute("data-window-width", String(view));
  layout.setAttribute("data-sticking-out", String(sticking));
  layout.setAttribute("data-legends", String(legends));
  layout.setAttribute("data-legend-overlaps", String(overlaps));
  layout.textContent = "page " + doc.scrollWidth + " px wide in a " + view + " px window";
})();
"##;

fn swatch(i: usize) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>",
        run_color_css(i)
    )
}

fn change_cell(cmp: &Comparison<'_>, m: Metric, i: usize) -> String {
    let c = cmp.change(m, i);
    let class = match c {
        Some(c) if c.abs() < 0.05 => "",
        Some(c) if (c > 0.0) == m.higher_is_better() => "better",
        Some(_) => "worse",
        None => "",
    };
    format!("<td class=\"{class}\">{}</td>", fmt_change(c))
}

fn env_text(env: &serde_json::Value, key: &str) -> String {
    match env.get(key) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Number(n)) => n.to_string(),
        _ => "–".into(),
    }
}

fn fs_text(env: &serde_json::Value) -> String {
    let fs = env.get("filesystem");
    let dev: Vec<String> = env
        .get("devices")
        .and_then(|d| d.as_array())
        .map(|a| {
            a.iter()
                .map(|d| {
                    let name = d.get("name").and_then(|v| v.as_str()).unwrap_or("?");
                    let model = d.get("model").and_then(|v| v.as_str()).unwrap_or("");
                    let size = d
                        .get("size_bytes")
                        .and_then(|v| v.as_f64())
                        .map(|b| format!(" {:.0} GB", b / 1e9))
                        .unwrap_or_default();
                    format!("{name} {model}{size}").trim().to_string()
                })
                .collect()
        })
        .unwrap_or_default();
    let fs = match fs {
        Some(f) if f.is_object() => format!(
            "{} on {} ({})",
            f.get("fstype").and_then(|v| v.as_str()).unwrap_or("?"),
            f.get("mount_point").and_then(|v| v.as_str()).unwrap_or("?"),
            f.get("source").and_then(|v| v.as_str()).unwrap_or("?")
        ),
        _ => String::new(),
    };
    let all = [fs, dev.join(", ")]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if all.is_empty() {
        "–".into()
    } else {
        all
    }
}

fn lat_row(h: &mut String, label: &str, s: &OpSummary) {
    let f = |g: fn(&iofleet_stats::LatencySummary) -> f64| fmt_lat(s, g);
    let _ = writeln!(
        h,
        "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        escape(label),
        fmt_value(s.iops, Unit::Iops),
        s.mbps,
        f(|l| l.mean),
        f(|l| l.stddev),
        f(|l| l.p50),
        f(|l| l.p90),
        f(|l| l.p95),
        f(|l| l.p99),
        f(|l| l.p99_9),
        f(|l| l.p99_99),
        f(|l| l.max)
    );
}

fn legend_html(c: &Chart) -> String {
    let mut h = String::from("<ul class=\"legend\">");
    for e in &c.legend {
        let class = match e.mark {
            Mark::Line => "line",
            Mark::Dashed => "dashed",
            Mark::Box => "box",
            Mark::LightBox => "lightbox",
        };
        let _ = write!(
            h,
            "<li><span class=\"mark {class}\" style=\"--c:{}\"></span>{}</li>",
            escape(&e.color),
            escape(&e.label)
        );
    }
    h.push_str("</ul>");
    h
}

fn figure(h: &mut String, c: &Chart) {
    let _ = writeln!(
        h,
        "<figure class=\"chart\" id=\"{}\">\n{}\n{}\n<figcaption>{}</figcaption>\n</figure>",
        c.id,
        c.svg,
        legend_html(c),
        escape(&c.caption)
    );
}

/// Seconds with up to two decimals: 60, 0.25, 1.5.
fn secs(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn trim_num(v: f64) -> String {
    let s = format!("{v:.1}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The workload table: one row per stream of each run (and group), with the fleet
/// shape on the stream's first row. The rows come from `workload::rows`, the reader the
/// CSV and Markdown exports use.
fn workload_table(h: &mut String, runs: &[RunData]) {
    h.push_str("<h2>Workload</h2><table id=\"workload\">\n<tr><th class=\"l\">#</th><th class=\"l\">group / profile</th><th>workers</th><th>disks per worker</th><th>disk size</th><th>threads per disk</th><th>qd per thread</th><th class=\"l\">stream</th><th class=\"l\">block sizes</th><th>read %</th><th>random %</th><th>rate IOPS per worker</th><th class=\"l\">engine</th><th class=\"l\">target</th></tr>\n");
    for (i, r) in runs.iter().enumerate() {
        let run = &r.result.run;
        let engine = format!(
            "{}{}",
            run.engine,
            if run.direct {
                ", direct I/O"
            } else {
                ", buffered"
            }
        );
        let rows = workload::rows(&run.plan);
        if rows.is_empty() {
            let _ = writeln!(
                h,
                "<tr><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td colspan=\"10\" class=\"l\">– (the stored plan could not be read)</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                swatch(i),
                i + 1,
                escape(&run.profile),
                escape(&engine),
                escape(&run.target)
            );
            continue;
        }
        for (k, w) in rows.iter().enumerate() {
            // The fleet shape is printed once per group, on its first stream.
            let first = k == 0 || rows[k - 1].group != w.group;
            let cell = |v: String| if first { v } else { String::new() };
            let who = if w.group == w.profile {
                w.profile.clone()
            } else {
                format!("{}: {}", w.group, w.profile)
            };
            let _ = writeln!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"w\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                if k == 0 { format!("{}{}", swatch(i), i + 1) } else { String::new() },
                cell(escape(&who)),
                cell(w.workers.to_string()),
                cell(w.disks_per_worker.to_string()),
                cell(Bytes(w.disk_size_bytes).to_string()),
                cell(w.threads_per_disk.to_string()),
                w.qd,
                escape(&w.stream),
                escape(&w.block_sizes),
                trim_num(w.read_pct),
                trim_num(w.random_pct),
                w.rate_iops.map_or("–".into(), |r| fmt_value(r, Unit::Iops)),
                if k == 0 { escape(&engine) } else { String::new() },
                if k == 0 { escape(&run.target) } else { String::new() },
            );
        }
    }
    h.push_str("</table>\n");
}

/// The charts of a report over `runs`, in page order.
pub fn charts_for(runs: &[RunData], baseline: usize) -> Result<Vec<Chart>, ChartError> {
    let mut out = Vec::new();
    if runs.len() > 1 {
        out.push(charts::comparison_bars(&Comparison {
            runs,
            baseline,
            gain: Gain::Change,
            convention: Convention::Exact,
        })?);
    }
    if let Some(c) = charts::load_curve(runs)? {
        out.push(c);
    }
    out.push(charts::throughput_over_time(runs, false)?);
    out.push(charts::throughput_over_time(runs, true)?);
    out.push(charts::latency_over_time(runs)?);
    if charts::has_cpu_series(runs) {
        out.push(charts::cpu_over_time(runs)?);
    }
    out.push(charts::latency_percentiles(runs)?);
    for (i, r) in runs.iter().enumerate() {
        if r.read_hist.count() + r.write_hist.count() > 0 {
            out.push(charts::latency_histogram(r, i)?);
        }
    }
    out.push(charts::worker_spread(runs)?);
    if charts::hosts(runs).len() > 1 {
        out.push(charts::host_spread(runs)?);
    }
    for (k, host) in charts::hosts(runs).iter().enumerate() {
        if runs
            .iter()
            .any(|r| r.host_series.iter().any(|s| &s.name == host))
        {
            out.push(charts::host_over_time(runs, k, host)?);
        }
    }
    if has_groups(runs) {
        for (k, g) in charts::groups(runs).iter().enumerate() {
            out.push(charts::group_over_time(runs, k, g)?);
        }
    }
    Ok(out)
}

/// Whether any run has several worker groups (a group section would otherwise repeat
/// the fleet's own figures).
fn has_groups(runs: &[RunData]) -> bool {
    runs.iter().any(|r| r.result.groups.len() > 1)
}

fn hosts_section(h: &mut String, runs: &[RunData], charts: &[Chart]) {
    let chart = |id: &str| charts.iter().find(|c| c.id == id);
    h.push_str("<section id=\"hosts\"><h2>Hosts</h2>\n<table id=\"host-table\">\n<tr><th class=\"l\">host</th><th class=\"l\">#</th><th>workers</th><th>IOPS</th><th>MB/s</th><th>read p99 µs</th><th>write p99 µs</th><th>iofleet CPU % of one core</th><th>host CPU %</th><th>RSS MiB</th><th>net rx MB/s</th><th>net tx MB/s</th><th>disk busy %</th><th>start late ms</th><th class=\"l\">state</th></tr>\n");
    for host in charts::hosts(runs) {
        for (i, r) in runs.iter().enumerate() {
            let Some(x) = r.result.hosts.iter().find(|x| x.host == host) else {
                continue;
            };
            let state = match (x.lost_at_s, x.straggler) {
                (Some(t), _) => format!("<span class=\"warn\">lost at {t:.1} s</span>"),
                (None, true) => "<span class=\"warn\">straggler</span>".into(),
                (None, false) if x.observer => "observer (no I/O)".into(),
                (None, false) => "ok".into(),
            };
            let _ = writeln!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{state}</td></tr>",
                escape(&host),
                swatch(i),
                i + 1,
                x.workers,
                fmt_value(x.all.iops, Unit::Iops),
                x.all.mbps,
                fmt_lat(&x.read, |l| l.p99),
                fmt_lat(&x.write, |l| l.p99),
                opt1(x.cpu.as_ref().map(|c| c.usr_pct + c.sys_pct)),
                opt1(x.cpu.as_ref().map(|c| c.host_pct)),
                opt1(x.memory.as_ref().map(|m| m.rss_peak_mib)),
                opt_fixed(x.net.as_ref().map(|n| n.rx_mbps), 2),
                opt_fixed(x.net.as_ref().map(|n| n.tx_mbps), 2),
                opt1(x.disk.as_ref().map(|d| d.busy_pct)),
                opt_fixed(x.start_late_ms, 2),
            );
        }
    }
    h.push_str("</table>\n");
    for (k, host) in charts::hosts(runs).iter().enumerate() {
        if let Some(c) = chart(&format!("host-{}", k + 1)) {
            let _ = writeln!(
                h,
                "<div class=\"part host\" data-host=\"{}\"><h3>Host {}</h3>",
                escape(host),
                escape(host)
            );
            figure(h, c);
            h.push_str("</div>\n");
        }
    }
    h.push_str("</section>\n");
}

/// The storage software the observer hosts watched (`observe`, docs/storage-side.md):
/// per run, host and entry, its figures over the measured phase and its CPU in every
/// interval. Nothing when no run watched any.
fn storage_section(h: &mut String, runs: &[RunData]) {
    let watched = |r: &RunData| r.result.hosts.iter().any(|x| !x.storage.is_empty());
    if !runs.iter().any(watched) {
        return;
    }
    h.push_str("<section id=\"storage\"><h2>Storage software</h2>\n<p>What the processes or cgroups each observer host watches spent (docs/storage-side.md): CPU as a share of one core and of the host's cores, memory in use, bytes read from and written to storage, context switches.</p>\n<table id=\"storage-table\">\n<tr><th class=\"l\">#</th><th class=\"l\">host</th><th class=\"l\">watching</th><th>CPU % of one core</th><th>usr %</th><th>sys %</th><th>% of host cores</th><th>memory MiB</th><th>read MB/s</th><th>written MB/s</th><th>switches/s</th><th>processes</th></tr>\n");
    let mut over_time = String::new();
    for (i, r) in runs.iter().enumerate() {
        for (hi, x) in r.result.hosts.iter().enumerate() {
            for st in iofleet_stats::usage::shown_storage(&x.storage) {
                let _ = writeln!(
                    h,
                    "<tr><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.2}</td><td>{:.2}</td><td>{:.0}</td><td>{}</td></tr>",
                    swatch(i),
                    i + 1,
                    escape(&x.host),
                    escape(&st.name),
                    st.cpu_pct,
                    st.usr_pct,
                    st.sys_pct,
                    st.host_cpu_pct,
                    st.memory_mib,
                    st.read_mbps,
                    st.write_mbps,
                    st.ctx_switches_per_s,
                    st.processes,
                );
                let rows = r
                    .result
                    .host_intervals
                    .get(hi)
                    .map_or(&[][..], |p| &p.rows[..]);
                let cpu: Vec<String> = rows
                    .iter()
                    .map(|row| {
                        let e = row
                            .usage
                            .as_ref()
                            .and_then(|u| u.storage.iter().find(|e| e.name == st.name));
                        opt1(e.map(|e| e.cpu_pct))
                    })
                    .collect();
                let _ = writeln!(
                    over_time,
                    "<li>{}{} {} <code>{}</code>: {}</li>",
                    swatch(i),
                    i + 1,
                    escape(&x.host),
                    escape(&st.name),
                    cpu.join(", ")
                );
            }
        }
    }
    h.push_str("</table>\n<p>CPU per interval, % of one core (warm-up included):</p>\n<ul class=\"storage-cpu\">\n");
    h.push_str(&over_time);
    h.push_str("</ul>\n</section>\n");
}

/// What the storage's own exporter said (`scrape`, docs/storage-side.md): per run, host
/// and metric, its figure over the measured phase — beside iofleet's IOPS, with the
/// difference, for the `iops:` metrics — and its figure in every interval. Nothing when
/// no run scraped one.
fn scraped_section(h: &mut String, runs: &[RunData]) {
    let scraped = |r: &RunData| r.result.hosts.iter().any(|x| !x.scraped.is_empty());
    if !runs.iter().any(scraped) {
        return;
    }
    h.push_str("<section id=\"scraped\"><h2>What the storage said</h2>\n<p>The storage's own exporter, scraped by each observer host at every interval (docs/storage-side.md): a counter as its increase per second, a gauge as its mean, over the exporter's own time between its samples; a latency (<code>latency:</code>) as its mean in ms, the latency it summed over the I/Os it counted — a mean, not a percentile. For the metrics that count I/Os, iofleet's IOPS beside it, for the latencies iofleet's mean latency, and how far apart they are.</p>\n<table id=\"scraped-table\">\n<tr><th class=\"l\">#</th><th class=\"l\">host</th><th class=\"l\">metric</th><th>the storage said</th><th>iofleet</th><th>apart</th><th>samples</th></tr>\n");
    let mut over_time = String::new();
    for (i, r) in runs.iter().enumerate() {
        let ours = r.result.summary.all.iops;
        let ours_ms = r
            .result
            .summary
            .all
            .latency_us
            .as_ref()
            .map(|l| l.mean / 1e3);
        for (hi, x) in r.result.hosts.iter().enumerate() {
            for m in &x.scraped {
                let (iofleet, apart) = match (m.iops, m.latency, m.value, ours_ms) {
                    (true, _, Some(v), _) if ours > 0.0 => (
                        format!("{ours:.0} IOPS"),
                        format!("{:+.1}%", (v - ours) / ours * 100.0),
                    ),
                    (_, true, Some(v), Some(o)) if o > 0.0 => (
                        format!("{o:.3} ms mean"),
                        format!("{:+.1}%", (v - o) / o * 100.0),
                    ),
                    _ => ("-".to_string(), "-".to_string()),
                };
                let _ = writeln!(
                    h,
                    "<tr><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td class=\"l\"><code>{}</code>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    swatch(i),
                    i + 1,
                    escape(&x.host),
                    escape(&m.name),
                    if m.latency {
                        " ms (mean latency)"
                    } else if m.counter {
                        " /s"
                    } else {
                        " (mean)"
                    },
                    m.value.map_or_else(|| "-".to_string(), |v| format!("{v:.2}")),
                    iofleet,
                    apart,
                    m.samples,
                );
                let rows = r
                    .result
                    .host_intervals
                    .get(hi)
                    .map_or(&[][..], |p| &p.rows[..]);
                let said: Vec<String> = rows
                    .iter()
                    .map(|row| {
                        let e = row
                            .usage
                            .as_ref()
                            .and_then(|u| u.scraped.iter().find(|e| e.name == m.name));
                        e.and_then(|e| e.value)
                            .map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
                    })
                    .collect();
                let _ = writeln!(
                    over_time,
                    "<li>{}{} {} <code>{}</code>: {}</li>",
                    swatch(i),
                    i + 1,
                    escape(&x.host),
                    escape(&m.name),
                    said.join(", ")
                );
            }
        }
    }
    h.push_str("</table>\n<p>Per interval (warm-up included; - where the exporter gave no new sample):</p>\n<ul class=\"scraped-series\">\n");
    h.push_str(&over_time);
    h.push_str("</ul>\n</section>\n");
}

/// Runs on a Kubernetes fleet: what each ran on, and every pod's node and volumes.
fn kubernetes_section(h: &mut String, runs: &[RunData]) {
    if runs.iter().all(|r| r.result.run.kubernetes.is_none()) {
        return;
    }
    h.push_str("<section id=\"kubernetes\"><h2>Kubernetes</h2>\n");
    for (i, r) in runs.iter().enumerate() {
        let Some(k) = &r.result.run.kubernetes else {
            continue;
        };
        let pods: Vec<_> = r
            .result
            .hosts
            .iter()
            .filter_map(|x| x.kubernetes.as_ref())
            .collect();
        for line in crate::kube::fleet_lines(k, pods.len()) {
            let _ = writeln!(h, "<p>{}{} {}</p>", swatch(i), i + 1, escape(&line));
        }
        if pods.iter().any(|p| p.timeline.is_some()) {
            // Job mode: each pod's way, seconds from creating the objects.
            h.push_str("<table class=\"kube-pods\">\n<tr><th class=\"l\">pod</th><th class=\"l\">node</th><th>created s</th><th>bound s</th><th>ready s</th><th>joined s</th></tr>\n");
            let s = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |s| format!("{s:.1}"));
            for p in &pods {
                let t = p.timeline.clone().unwrap_or_default();
                let _ = writeln!(
                    h,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(&p.pod),
                    escape(p.node.as_deref().unwrap_or("-")),
                    s(t.created_s),
                    s(t.bound_s),
                    s(t.ready_s),
                    s(t.joined_s),
                );
            }
            h.push_str("</table>\n");
        }
        h.push_str("<table class=\"kube-volumes\">\n<tr><th class=\"l\">pod</th><th class=\"l\">node</th><th class=\"l\">claim</th><th class=\"l\">volume</th><th class=\"l\">StorageClass</th><th class=\"l\">provisioner</th><th>bound after s</th></tr>\n");
        for p in pods {
            for v in &p.volumes {
                let _ = writeln!(
                    h,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td></tr>",
                    escape(&p.pod),
                    escape(p.node.as_deref().unwrap_or("-")),
                    escape(&v.claim),
                    escape(v.volume.as_deref().unwrap_or("-")),
                    escape(v.storage_class.as_deref().unwrap_or("-")),
                    escape(v.provisioner.as_deref().unwrap_or("-")),
                    v.bound_after_s.map_or("-".into(), |s| format!("{s:.0}")),
                );
            }
        }
        h.push_str("</table>\n");
    }
    h.push_str("</section>\n");
}

/// Runs on a fleet of worker VMs: what each ran on, every VM's way and data disks.
fn vms_section(h: &mut String, runs: &[RunData]) {
    if runs.iter().all(|r| r.result.run.vms.is_none()) {
        return;
    }
    h.push_str("<section id=\"vms\"><h2>Worker VMs</h2>\n");
    for (i, r) in runs.iter().enumerate() {
        let Some(v) = &r.result.run.vms else {
            continue;
        };
        let _ = writeln!(
            h,
            "<p>{}{} {}</p>",
            swatch(i),
            i + 1,
            escape(&crate::vms::fleet_line(v))
        );
        h.push_str("<table class=\"vms\">\n<tr><th class=\"l\">VM</th><th class=\"l\">hypervisor</th><th class=\"l\">size</th><th>defined s</th><th>running s</th><th>joined s</th><th class=\"l\">disk</th><th class=\"l\">volume</th><th class=\"l\">attached</th><th>hypervisor requests</th><th>iofleet requests</th></tr>\n");
        for vm in &v.vms {
            let t = &vm.timeline;
            for (k, d) in vm.disks.iter().enumerate() {
                let _ = writeln!(
                    h,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}/{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>",
                    escape(&vm.domain),
                    escape(&vm.hypervisor),
                    escape(&crate::vms::size(vm)),
                    crate::vms::secs(t.defined_s),
                    crate::vms::secs(t.running_s),
                    crate::vms::secs(t.joined_s),
                    escape(&d.target),
                    escape(&d.pool),
                    escape(&d.volume),
                    escape(&crate::vms::attachment(d)),
                    crate::vms::requests(d),
                    crate::vms::iofleet_requests(&r.result, vm, k),
                );
            }
        }
        h.push_str("</table>\n");
    }
    h.push_str("</section>\n");
}

fn groups_section(h: &mut String, runs: &[RunData], charts: &[Chart]) {
    let chart = |id: &str| charts.iter().find(|c| c.id == id);
    h.push_str("<section id=\"groups\"><h2>Worker groups</h2>\n<table id=\"group-table\">\n<tr><th class=\"l\">group</th><th class=\"l\">#</th><th class=\"l\">profile</th><th>workers</th><th>IOPS</th><th>MB/s</th><th>read mean µs</th><th>read p99 µs</th><th>write mean µs</th><th>write p99 µs</th></tr>\n");
    let names = charts::groups(runs);
    for g in &names {
        for (i, r) in runs.iter().enumerate() {
            let Some(x) = r.result.groups.iter().find(|x| &x.name == g) else {
                continue;
            };
            let _ = writeln!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(g),
                swatch(i),
                i + 1,
                escape(&x.profile),
                x.workers,
                fmt_value(x.all.iops, Unit::Iops),
                x.all.mbps,
                fmt_lat(&x.read, |l| l.mean),
                fmt_lat(&x.read, |l| l.p99),
                fmt_lat(&x.write, |l| l.mean),
                fmt_lat(&x.write, |l| l.p99),
            );
        }
    }
    h.push_str("</table>\n");
    for (k, g) in names.iter().enumerate() {
        if let Some(c) = chart(&format!("group-{}", k + 1)) {
            let _ = writeln!(
                h,
                "<div class=\"part group\" data-group=\"{}\"><h3>Group {}</h3>",
                escape(g),
                escape(g)
            );
            figure(h, c);
            h.push_str("</div>\n");
        }
    }
    h.push_str("</section>\n");
}

/// The page up to its main part: the document head, the title and what the report holds.
fn page_head(
    h: &mut String,
    cmp: &Comparison<'_>,
    charts: &[Chart],
    title: &str,
    generated_at: &str,
) {
    let runs = cmp.runs;
    let _ = writeln!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{BASE_STYLE}{STYLE}</style>\n</head>\n<body>",
        escape(title)
    );
    let _ = writeln!(
        h,
        "<header><h1>{}</h1><p>{} run{} · baseline {} · generated {} · {} charts</p></header>\n<main data-charts-expected=\"{}\">",
        escape(title),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        escape(&cmp.base().title()),
        escape(generated_at),
        charts.len(),
        charts.len()
    );
}

/// The runs section's first tables: each run, then the workload each ran.
fn runs_table(h: &mut String, runs: &[RunData], baseline: usize) {
    h.push_str("<section id=\"runs\"><h2>Runs</h2><table id=\"runs-table\">\n<tr><th class=\"l\">#</th><th class=\"l\">run</th><th class=\"l\">name</th><th class=\"l\">labels</th><th class=\"l\">profile</th><th class=\"l\">status</th><th class=\"l\">started (UTC)</th><th>measured s</th><th>warm-up s</th><th>interval s</th><th>workers</th><th>hosts</th></tr>\n");
    for (i, r) in runs.iter().enumerate() {
        let run = &r.result.run;
        let status = if r.status_text() == "complete" {
            escape(&r.status)
        } else {
            format!("<span class=\"warn\">{}</span>", escape(&r.status_text()))
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}{}{}</td><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            swatch(i),
            i + 1,
            if i == baseline { " <span class=\"base\">(baseline)</span>" } else { "" },
            escape(&r.id),
            escape(&r.name),
            escape(&r.labels_text()),
            escape(&run.profile),
            status,
            escape(&run.started_at),
            secs(run.duration_s),
            secs(run.warmup_s),
            secs(run.interval_s),
            r.result.workers.len(),
            r.result.hosts.len().max(1),
        );
    }
    h.push_str("</table>\n");
    workload_table(h, runs);
}

/// Each invalid run (below its quorum of hosts) and why, at the top of the page, so no
/// one reads its figures as the fleet's.
fn invalid_section(h: &mut String, runs: &[RunData]) {
    let invalid: Vec<(usize, &RunData)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.result.validity.valid)
        .collect();
    if invalid.is_empty() {
        return;
    }
    h.push_str("<section id=\"invalid\"><h2 class=\"warn\">Invalid runs</h2><ul>\n");
    for (i, r) in invalid {
        let _ = writeln!(
            h,
            "<li class=\"warn\">{}#{} <code>{}</code> INVALID: {}</li>",
            swatch(i),
            i + 1,
            escape(&r.id),
            escape(&r.result.validity.reasons.join("; "))
        );
    }
    h.push_str("</ul></section>\n");
}

/// The runs section's last table: the environment of each run.
fn environment_table(h: &mut String, runs: &[RunData]) {
    h.push_str("<h2>Environment</h2><table>\n<tr><th class=\"l\">#</th><th class=\"l\">iofleet</th><th class=\"l\">host</th><th class=\"l\">kernel</th><th class=\"l\">CPU</th><th>cores</th><th>memory GiB</th><th class=\"l\">filesystem / devices</th></tr>\n");
    for (i, r) in runs.iter().enumerate() {
        let e = &r.environment;
        let mem = e
            .get("memory_bytes")
            .and_then(|v| v.as_f64())
            .map(|b| format!("{:.1}", b / (1u64 << 30) as f64))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            swatch(i),
            i + 1,
            escape(&r.result.run.iofleet_version),
            escape(&r.result.run.hostname),
            escape(&env_text(e, "kernel")),
            escape(&env_text(e, "cpu_model")),
            escape(&env_text(e, "cores")),
            mem,
            escape(&fs_text(e))
        );
    }
    h.push_str("</table></section>\n");
}

/// The summary section: the columns practitioners publish, with the change in IOPS.
fn summary_section(h: &mut String, cmp: &Comparison<'_>) {
    let baseline = cmp.baseline;
    h.push_str("<section id=\"summary\"><h2>Summary</h2><table>\n<tr><th class=\"l\">#</th><th class=\"l\">configuration</th><th>IOPS</th><th>change</th><th>MB/s</th><th>latency mean µs</th><th>read µs</th><th>write µs</th><th>stddev µs</th><th>outstanding I/O</th><th>CPU %</th><th>memory %</th><th>IOPS median interval</th><th>median-IOPS interval mean µs</th><th>median-IOPS interval p99 µs</th><th>peak interval IOPS</th><th>peak interval t s</th><th>I/O errors</th></tr>\n");
    let iops = Metric::parse("iops").expect("iops");
    for row in cmp.config_rows() {
        let s = &row.result.summary;
        let points = row.result.interval_headline();
        let median = points.median_interval.as_ref();
        let peak = points.peak_interval.as_ref();
        let change = if row.index == baseline {
            "<td class=\"base\">baseline</td>".to_string()
        } else {
            change_cell(cmp, iops, row.index)
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td>{}</td>{change}<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            swatch(row.index),
            row.index + 1,
            escape(&row.config),
            metric_text(row.result, "iops"),
            metric_text(row.result, "mbps"),
            metric_text(row.result, "mean"),
            metric_text(row.result, "read.mean"),
            metric_text(row.result, "write.mean"),
            metric_text(row.result, "stddev"),
            fmt_outstanding(&s.outstanding_io),
            opt1(s.cpu.as_ref().map(|c| c.host_pct)),
            opt1(s.memory.as_ref().map(|m| m.host_used_pct)),
            fmt_opt(s.iops_median_interval, Unit::Iops),
            fmt_opt(median.and_then(|p| p.all.mean_us), Unit::Micros),
            fmt_opt(median.and_then(|p| p.all.p99_us), Unit::Micros),
            fmt_opt(peak.map(|p| p.iops), Unit::Iops),
            opt1(peak.map(|p| p.t_s)),
            s.errors.count
        );
    }
    h.push_str("</table></section>\n");
}

/// The convention section: each run's figures as the chosen tool defines them, beside
/// iofleet's exact ones (nothing for `Exact`).
fn convention_section(h: &mut String, cmp: &Comparison<'_>) {
    let c = cmp.convention;
    let figures: Vec<Vec<Figure>> = cmp.runs.iter().map(|r| c.figures(&r.result)).collect();
    let Some(first) = figures.iter().find(|f| !f.is_empty()) else {
        return;
    };
    let _ = write!(
        h,
        "<section id=\"convention\"><h2>As {tool} reports it</h2>\n<p>Figures as {tool} defines them (<code>--convention {name}</code>; worker = VM), each beside iofleet's exact figure; definitions and sources in docs/conventions.md.</p>\n<table id=\"convention-table\">\n<tr><th class=\"l\">figure</th><th class=\"l\">definition</th>",
        tool = escape(c.tool()),
        name = c.name()
    );
    for i in 0..cmp.runs.len() {
        let _ = write!(
            h,
            "<th>{}#{} {}</th><th>#{} exact</th><th class=\"l\">exact figure</th>",
            swatch(i),
            i + 1,
            escape(c.tool()),
            i + 1
        );
    }
    h.push_str("</tr>\n");
    for (k, f) in first.iter().enumerate() {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l w\">{}</td>",
            escape(&f.label),
            escape(f.definition)
        );
        for run in &figures {
            match run.get(k) {
                Some(g) => {
                    let _ = write!(
                        h,
                        "<td>{}</td><td>{}</td><td class=\"l\">{}</td>",
                        g.value_text(),
                        g.exact_text(),
                        escape(g.exact_label)
                    );
                }
                None => h.push_str("<td>–</td><td>–</td><td></td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></section>\n");
}

/// The comparison section: every default metric of every run against the baseline.
fn comparison_section(h: &mut String, cmp: &Comparison<'_>, charts: &[Chart]) {
    let (runs, baseline) = (cmp.runs, cmp.baseline);
    let chart = |id: &str| charts.iter().find(|c| c.id == id);
    h.push_str("<section id=\"comparison\"><h2>Comparison against the baseline</h2>\n");
    if let Some(c) = chart("compare-bars") {
        figure(h, c);
    }
    h.push_str("<table>\n<tr><th class=\"l\">metric</th>");
    for (i, _) in runs.iter().enumerate() {
        let _ = write!(h, "<th>{}#{}</th>", swatch(i), i + 1);
        if i != baseline {
            let _ = write!(h, "<th>change</th>");
        }
    }
    h.push_str("</tr>\n");
    for m in default_metrics() {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{} {}</td>",
            escape(&m.label()),
            m.unit().table_suffix()
        );
        for (i, r) in runs.iter().enumerate() {
            let _ = write!(h, "<td>{}</td>", fmt_opt(m.value(&r.result), m.unit()));
            if i != baseline {
                h.push_str(&change_cell(cmp, m, i));
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></section>\n");
}

/// The curve of a sweep or a find-max among the runs, if charted.
fn load_section(h: &mut String, charts: &[Chart]) {
    let chart = |id: &str| charts.iter().find(|c| c.id == id);
    if let Some(c) = chart("load-curve") {
        h.push_str("<section id=\"load\"><h2>Latency against load</h2>\n");
        figure(h, c);
        h.push_str("</section>\n");
    }
}

/// The over-time section: IOPS, MB/s, latency and CPU charts.
fn over_time_section(h: &mut String, charts: &[Chart]) {
    let chart = |id: &str| charts.iter().find(|c| c.id == id);
    h.push_str("<section id=\"over-time\"><h2>Over time</h2>\n");
    for id in ["iops-time", "mbps-time", "latency-time", "cpu-time"] {
        if let Some(c) = chart(id) {
            figure(h, c);
        }
    }
    if chart("cpu-time").is_none() {
        h.push_str("<p class=\"warn\">CPU over time: not recorded for these runs (runs stored before iofleet recorded per-interval host usage).</p>\n");
    }
    h.push_str("</section>\n");
}

/// The latency section: percentiles, then per run its latency table and histogram.
fn latency_section(h: &mut String, runs: &[RunData], charts: &[Chart]) {
    let chart = |id: &str| charts.iter().find(|c| c.id == id);
    h.push_str("<section id=\"latency\"><h2>Latency distribution</h2>\n");
    if let Some(c) = chart("latency-percentiles") {
        figure(h, c);
    }
    for (i, r) in runs.iter().enumerate() {
        let s = &r.result.summary;
        let _ = writeln!(
            h,
            "<h3>{}#{} <code>{}</code> {}</h3><table>\n<tr><th class=\"l\">latency µs</th><th>IOPS</th><th>MB/s</th><th>mean</th><th>stddev</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th></tr>",
            swatch(i),
            i + 1,
            escape(&r.id),
            escape(&r.config_text())
        );
        lat_row(h, "read", &s.read);
        lat_row(h, "write", &s.write);
        lat_row(h, "all", &s.all);
        if r.result.streams.len() > 1 {
            for st in &r.result.streams {
                lat_row(h, &format!("stream {}", st.name), &st.all);
            }
        }
        h.push_str("</table>\n");
        if let Some(c) = chart(&format!("latency-hist-{}", i + 1)) {
            figure(h, c);
        }
    }
    h.push_str("</section>\n");
}

/// The spread section: how workers and hosts compare.
fn spread_section(h: &mut String, charts: &[Chart]) {
    let chart = |id: &str| charts.iter().find(|c| c.id == id);
    h.push_str("<section id=\"spread\"><h2>Workers and hosts</h2>\n");
    for id in ["worker-spread", "host-spread"] {
        if let Some(c) = chart(id) {
            figure(h, c);
        }
    }
    h.push_str("</section>\n");
}

/// The notices of every run, if any.
fn notices_section(h: &mut String, runs: &[RunData]) {
    let notes: Vec<(usize, &String)> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.result.notices.iter().map(move |n| (i, n)))
        .collect();
    if !notes.is_empty() {
        h.push_str("<section id=\"notices\"><h2>Notices</h2><ul>\n");
        for (i, n) in notes {
            let _ = writeln!(h, "<li>{}#{}: {}</li>", swatch(i), i + 1, escape(n));
        }
        h.push_str("</ul></section>\n");
    }
}

/// The end of the page: the footer with its checks, and the check script.
fn page_foot(h: &mut String, charts: &[Chart]) {
    let _ = writeln!(
        h,
        "</main>\n<footer>iofleet report · figures recomputed from the stored histograms · <span id=\"chart-check\">{} charts</span> · <span id=\"layout-check\">layout</span></footer>\n<script>{CHECK_SCRIPT}</script>\n</body>\n</html>",
        charts.len()
    );
}

/// The whole report page. `generated_at` is shown in the header; `convention` adds a
/// section of the runs' figures as that tool defines them (none for `Exact`).
pub fn report(
    runs: &[RunData],
    baseline: usize,
    title: &str,
    generated_at: &str,
    convention: Convention,
) -> Result<String, ChartError> {
    let cmp = Comparison {
        runs,
        baseline,
        gain: Gain::Change,
        convention,
    };
    let charts = charts_for(runs, baseline)?;
    let mut h = String::new();
    page_head(&mut h, &cmp, &charts, title, generated_at);
    invalid_section(&mut h, runs);

    // Runs, the workload each ran, and the environment.
    runs_table(&mut h, runs, baseline);
    environment_table(&mut h, runs);

    // Summary: the columns practitioners publish.
    summary_section(&mut h, &cmp);
    convention_section(&mut h, &cmp);

    // Comparison against the baseline.
    if runs.len() > 1 {
        comparison_section(&mut h, &cmp, &charts);
    }

    // The curve of a sweep or a find-max among the runs.
    load_section(&mut h, &charts);

    over_time_section(&mut h, &charts);
    latency_section(&mut h, runs, &charts);
    spread_section(&mut h, &charts);
    hosts_section(&mut h, runs, &charts);
    storage_section(&mut h, runs);
    scraped_section(&mut h, runs);
    kubernetes_section(&mut h, runs);
    vms_section(&mut h, runs);
    if has_groups(runs) {
        groups_section(&mut h, runs, &charts);
    }

    notices_section(&mut h, runs);
    page_foot(&mut h, &charts);
    Ok(scroll_tables(&h))
}

/// Every table in a box that scrolls sideways on its own, so that a narrow window (a
/// laptop's half screen, a phone) scrolls a wide table rather than the whole page. Text
/// from runs is escaped, so `<table` and `</table>` only ever open and close tables.
fn scroll_tables(h: &str) -> String {
    h.replace("<table", "<div class=\"scroll\"><table")
        .replace("</table>", "</table></div>")
}
