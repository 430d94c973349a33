//! `iofleet report`: the self-contained HTML report (no URL anywhere, every chart drawn)
//! and the Markdown report. The page shows the workload each run ran, legends beside
//! (never over) the plots, log latency axes with 1-2-5 ticks and units, a change axis
//! fitted to the changes, CPU over time, a latency histogram per run, and a section per
//! host and per worker group. The HTML is opened in headless Chromium at 1400 px: it
//! must load without console errors, its self-check must count every chart as rendered
//! with visible marks, nothing may stick out of the window and no legend may overlap
//! its plot, and the screenshot must show a real page. Chromium (Debian package
//! `chromium`) is installed by .ci/run; without it the test fails under CI and skips
//! with a message elsewhere.

#[path = "../../../tests-support/need.rs"]
mod need;
mod results_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use results_common::*;

/// Charts of a two-run report on one host.
const CHARTS: &[&str] = &[
    "compare-bars",
    "iops-time",
    "mbps-time",
    "latency-time",
    "cpu-time",
    "latency-percentiles",
    "latency-hist-1",
    "latency-hist-2",
    "worker-spread",
    "host-1",
];

/// The text of element `<tag ... id="id" ...> … </tag>` (first such element).
fn element<'a>(html: &'a str, tag: &str, id: &str) -> &'a str {
    let at = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("element {id} missing"));
    let open = html[..at].rfind(&format!("<{tag}")).unwrap();
    let close = html[at..]
        .find(&format!("</{tag}>"))
        .unwrap_or_else(|| panic!("{id} is closed"));
    &html[open..at + close]
}

/// The text content of every `<text>` element of an SVG.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// The labels of a figure's HTML legend.
fn legend_labels(fig: &str) -> Vec<String> {
    let Some(at) = fig.find("<ul class=\"legend\">") else {
        return Vec::new();
    };
    let ul = &fig[at..at + fig[at..].find("</ul>").unwrap()];
    ul.split("</span>")
        .skip(1)
        .map(|l| l[..l.find("</li>").unwrap_or(l.len())].to_string())
        .collect()
}

fn html_report(dir: &Path) -> (PathBuf, String) {
    let t = two_runs();
    let path = dir.join("report.html");
    let o = with_db(
        &t.db,
        &[
            "report",
            &t.base_id,
            &t.cand_id,
            "-o",
            path.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let html = std::fs::read_to_string(&path).unwrap();
    (path, html)
}

#[test]
fn html_is_self_contained_with_every_chart() {
    let dir = tempfile::tempdir().unwrap();
    let (_, html) = html_report(dir.path());
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no URL may appear"
    );
    for forbidden in ["<link", "src=", "@import", "url("] {
        assert!(
            !html.contains(forbidden),
            "external resource marker {forbidden}"
        );
    }
    for id in CHARTS {
        let at = html
            .find(&format!("<figure class=\"chart\" id=\"{id}\">"))
            .unwrap_or_else(|| panic!("chart {id} missing"));
        let fig = &html[at..at + html[at..].find("</figure>").unwrap()];
        assert!(fig.contains("<svg"), "{id} has an SVG");
        assert!(
            fig.contains("<polyline") || fig.contains("<rect"),
            "{id} has drawn marks"
        );
    }
    assert!(
        !html.contains("id=\"host-spread\""),
        "one host: no host chart"
    );
    assert!(
        !html.contains("id=\"groups\""),
        "one group per run: no group section"
    );
    let t = two_runs();
    for s in [
        t.base_id.as_str(),
        &t.cand_id,
        "policy=raid5",
        "Environment",
        "p99.9",
    ] {
        assert!(html.contains(s), "{s} missing");
    }
}

/// Numbers of SVG tick labels with a latency unit, in µs.
fn latency_ticks(texts: &[String]) -> Vec<f64> {
    texts
        .iter()
        .filter_map(|t| {
            let (n, unit) = t.split_once(' ')?;
            let scale = match unit {
                "µs" => 1.0,
                "ms" => 1e3,
                "s" => 1e6,
                _ => return None,
            };
            Some(n.parse::<f64>().ok()? * scale)
        })
        .collect()
}

#[test]
fn html_shows_the_workload_and_readable_charts() {
    let dir = tempfile::tempdir().unwrap();
    let (_, html) = html_report(dir.path());

    // The workload each run ran: fleet shape, stream, engine and target.
    let workload = element(&html, "table", "workload");
    for head in [
        "workers",
        "disks per worker",
        "disk size",
        "threads per disk",
        "qd per thread",
        "block sizes",
        "read %",
        "random %",
        "engine",
        "target",
    ] {
        assert!(
            workload.contains(&format!(">{head}</th>")),
            "{head}: {workload}"
        );
    }
    // record_run: easy-run-4k70r (64m disks, 4k 70% read 100% random) with 3 workers,
    // 2 disks, 1 thread, qd 4, null engine.
    assert!(
        workload.contains("<td>3</td><td>2</td><td>64m</td><td>1</td><td>4</td><td class=\"l\">main</td><td class=\"w\">4k</td><td>70</td><td>100</td>"),
        "{workload}"
    );
    assert!(workload.contains("null, direct I/O") && workload.contains(">none<"));

    for id in CHARTS {
        let fig = element(&html, "figure", id);
        let svg = &fig[..fig.find("</svg>").unwrap()];
        let texts = svg_texts(svg);
        // Legends are HTML beside the plot, never text drawn inside it.
        let labels = legend_labels(fig);
        assert!(!labels.is_empty(), "{id} has a legend");
        for l in &labels {
            assert!(
                !texts.iter().any(|t| t.contains(l.as_str())),
                "{id}: legend entry {l} drawn inside the plot"
            );
        }
        let after_svg = &fig[fig.find("</svg>").unwrap()..];
        assert!(after_svg.contains("<ul class=\"legend\">"), "{id}");
    }

    // Log latency axes: at least three labelled ticks, with units, at 1-2-5 (or, on a
    // narrow range, whole or half steps) of their decade.
    for id in [
        "latency-time",
        "latency-percentiles",
        "latency-hist-1",
        "host-1",
    ] {
        let fig = element(&html, "figure", id);
        let ticks = latency_ticks(&svg_texts(&fig[..fig.find("</svg>").unwrap()]));
        assert!(ticks.len() >= 3, "{id}: latency ticks {ticks:?}");
        for t in &ticks {
            let halves = 2.0 * t / 10f64.powf(t.log10().floor());
            assert!(
                (halves - halves.round()).abs() < 1e-6,
                "{id}: tick {t} µs is not a round value of its decade"
            );
        }
    }

    // The change axis spans the changes measured (bar labels carry one decimal,
    // ticks none).
    let fig = element(&html, "figure", "compare-bars");
    let texts = svg_texts(&fig[..fig.find("</svg>").unwrap()]);
    let pct = |t: &String| t.strip_suffix('%')?.parse::<f64>().ok();
    let changes: Vec<f64> = texts
        .iter()
        .filter(|t| t.contains('.'))
        .filter_map(pct)
        .collect();
    let ticks: Vec<f64> = texts
        .iter()
        .filter(|t| !t.contains('.'))
        .filter_map(pct)
        .collect();
    assert!(!changes.is_empty() && ticks.len() >= 2, "{texts:?}");
    let lo = changes.iter().cloned().fold(0.0f64, f64::min);
    let hi = changes.iter().cloned().fold(0.0f64, f64::max);
    let span = (hi - lo).max(10.0);
    for t in &ticks {
        assert!(
            *t >= lo - 0.3 * span && *t <= hi + 0.3 * span,
            "tick {t}% far outside the changes {lo}%..{hi}%"
        );
    }

    // CPU over time, and one host section with IOPS, p99 and CPU panels.
    let host = element(&html, "section", "hosts");
    assert_eq!(host.matches("class=\"part host\"").count(), 1, "{host}");
    let fig = element(&html, "figure", "host-1");
    let texts = svg_texts(&fig[..fig.find("</svg>").unwrap()]);
    for axis in ["IOPS", "p99 latency (log)", "host CPU %"] {
        assert!(
            texts.iter().any(|t| t == axis),
            "host-1 lacks {axis}: {texts:?}"
        );
    }
    let host_table = element(&html, "table", "host-table");
    assert_eq!(
        host_table.matches("<tr><td class=\"l\">").count(),
        2,
        "one row per run"
    );
}

#[test]
fn report_has_a_section_per_host_and_per_group() {
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("local.toml");
    std::fs::write(
        &inv,
        (1..=2)
            .map(|i| format!("[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\n"))
            .collect::<String>(),
    )
    .unwrap();
    let db = dir.path().join("results.db");
    let o = iofleet()
        .current_dir(dir.path())
        .args([
            "run",
            "--group",
            "a=iometer-database:2",
            "--group",
            "b=diskspd-4k-read:2",
        ])
        .arg("--hosts")
        .arg(&inv)
        .args(["--engine", "null", "--duration", "1s", "--warmup", "250ms"])
        .args([
            "--interval",
            "250ms",
            "--rate",
            "2000",
            "--quiet",
            "--name",
            "fleet",
        ])
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let page = dir.path().join("fleet.html");
    let o = with_db(&db, &["report", "fleet", "-o", page.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let html = std::fs::read_to_string(&page).unwrap();

    let workload = element(&html, "table", "workload");
    assert!(workload.contains("a: iometer-database") && workload.contains("b: diskspd-4k-read"));
    assert!(
        workload.contains("<td class=\"w\">8k</td><td>67</td><td>100</td>"),
        "{workload}"
    );

    let hosts = element(&html, "section", "hosts");
    for h in ["l1", "l2"] {
        assert!(
            hosts.contains(&format!("data-host=\"{h}\"")),
            "{h}: {hosts}"
        );
    }
    for id in ["host-1", "host-2", "host-spread", "cpu-time"] {
        let fig = element(&html, "figure", id);
        assert!(
            fig.contains("<polyline") || fig.contains("<rect"),
            "{id} drew"
        );
    }
    let texts = svg_texts(element(&html, "figure", "host-2"));
    assert!(texts.iter().any(|t| t == "host CPU %"), "{texts:?}");

    let groups = element(&html, "section", "groups");
    for g in ["a", "b"] {
        assert!(
            groups.contains(&format!("data-group=\"{g}\"")),
            "{g}: {groups}"
        );
    }
    for id in ["group-1", "group-2"] {
        let fig = element(&html, "figure", id);
        assert!(fig.contains("<polyline"), "{id} drew");
        let texts = svg_texts(fig);
        assert!(texts.iter().any(|t| t == "IOPS") && !texts.iter().any(|t| t == "host CPU %"));
    }
    let table = element(&html, "table", "group-table");
    assert!(table.contains("iometer-database") && table.contains("diskspd-4k-read"));
}

#[test]
fn markdown_report_for_tickets() {
    let t = two_runs();
    let o = with_db(
        &t.db,
        &["report", &t.base_id, &t.cand_id, "--format", "markdown"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let md = out(&o);
    assert!(md.starts_with("# iofleet report"));
    assert!(
        md.contains("## Configurations") && md.contains("| 2 | dedupe=off policy=raid5 |"),
        "{md}"
    );
    assert!(md.contains("## Change against the baseline (#1)"));
    assert!(!md.contains("<svg"));
    let o = with_db(&t.db, &["report", "nope-not-a-run"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Chromium wherever PATH has it (Debian's `chromium`, or `chromium-browser`).
fn chromium() -> Option<PathBuf> {
    need::which("chromium").or_else(|| need::which("chromium-browser"))
}

/// Run chromium headless on `page` with `extra` flags; returns its output. Output goes
/// to files (chromium logs a lot; an undrained pipe would block it).
fn headless(bin: &Path, page: &Path, extra: &[String]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (logs.path().join("out"), logs.path().join("err"));
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()))
        .spawn()
        .expect("chromium starts");
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if t0.elapsed() > Duration::from_secs(90) {
            child.kill().ok();
            child.wait().ok();
            panic!(
                "chromium did not finish within 90 s: {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Output {
        status,
        stdout: std::fs::read(&out_path).unwrap(),
        stderr: std::fs::read(&err_path).unwrap(),
    }
}

/// Console messages chromium logged (any level: the report's script logs nothing).
fn console_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE"))
        .map(str::to_string)
        .collect()
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
    Some(tag[at..at + tag[at..].find('"')?].to_string())
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        // Fails under CI (it installs Debian's chromium), skips elsewhere.
        need::need("html_report_renders_in_headless_chromium", &["chromium"]);
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (page, _) = html_report(dir.path());

    // The console check catches errors: a page with a failing script is flagged.
    let broken = dir.path().join("broken.html");
    std::fs::write(
        &broken,
        "<!DOCTYPE html><p>x</p><script>undefinedFunction();</script>",
    )
    .unwrap();
    let o = headless(&bin, &broken, &["--dump-dom".into()]);
    assert!(
        console_lines(&o)
            .iter()
            .any(|l| l.contains("undefinedFunction")),
        "console capture works: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    // DOM after the page's own check ran.
    let o = headless(
        &bin,
        &page,
        &["--dump-dom".into(), "--window-size=1400,3000".into()],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        console_lines(&o).is_empty(),
        "console: {:#?}",
        console_lines(&o)
    );
    let dom = String::from_utf8_lossy(&o.stdout);
    let check_at = dom.find("id=\"chart-check\"").expect("chart check present");
    let tag =
        &dom[dom[..check_at].rfind('<').unwrap()..check_at + dom[check_at..].find('>').unwrap()];
    let n = CHARTS.len().to_string();
    assert_eq!(
        attr(tag, "data-expected").as_deref(),
        Some(n.as_str()),
        "{tag}"
    );
    assert_eq!(
        attr(tag, "data-rendered").as_deref(),
        Some(n.as_str()),
        "{tag}"
    );

    // Layout at 1400 px: the page is no wider than the window (no sideways scroll),
    // no table or chart sticks out, every chart's legend is clear of its plot.
    let at = dom
        .find("id=\"layout-check\"")
        .expect("layout check present");
    let tag = &dom[dom[..at].rfind('<').unwrap()..at + dom[at..].find('>').unwrap()];
    let num = |k: &str| -> u32 {
        attr(tag, k)
            .unwrap_or_else(|| panic!("{k} in {tag}"))
            .parse()
            .unwrap()
    };
    assert!(
        num("data-window-width") <= 1400 && num("data-window-width") > 1300,
        "{tag}"
    );
    assert!(
        num("data-page-width") <= num("data-window-width"),
        "page scrolls sideways: {tag}"
    );
    assert_eq!(num("data-sticking-out"), 0, "{tag}");
    assert_eq!(num("data-legends"), CHARTS.len() as u32, "{tag}");
    assert_eq!(num("data-legend-overlaps"), 0, "{tag}");
    // The tables and sections that show what was run, per host and per run.
    for id in [
        "runs-table",
        "workload",
        "hosts",
        "host-table",
        "latency-hist-1",
    ] {
        assert!(
            dom.contains(&format!("id=\"{id}\"")),
            "{id} missing from the DOM"
        );
    }
    for id in CHARTS {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("{id}"));
        let open = &dom[dom[..at].rfind('<').unwrap()..at + dom[at..].find('>').unwrap()];
        assert_eq!(
            attr(open, "data-rendered").as_deref(),
            Some("yes"),
            "{id}: {open}"
        );
        let marks: u32 = attr(open, "data-marks").unwrap().parse().unwrap();
        assert!(marks >= 1, "{id} has visible marks");
    }

    // Screenshot: exists and is not blank.
    let shot = dir.path().join("shot.png");
    let o = headless(
        &bin,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,3000".into(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        console_lines(&o).is_empty(),
        "console: {:#?}",
        console_lines(&o)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().expect("frame fits in memory")];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1400, 3000));
    let bpp = info.line_size / info.width as usize;
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(bpp).collect();
    let mut colours: Vec<&[u8]> = pixels.iter().step_by(97).copied().collect();
    colours.sort();
    colours.dedup();
    assert!(
        colours.len() > 20,
        "screenshot has {} colours: blank?",
        colours.len()
    );
    let white = pixels.iter().filter(|p| p[..3] == [255, 255, 255]).count();
    assert!(
        white < pixels.len() * 95 / 100,
        "screenshot is almost all white"
    );
}

/// The user docs describe iofleet on their own: no reference to the project's internal
/// briefs (docs/compare.md once pointed readers at "BRIEF §3" for the summary columns).
#[test]
fn docs_cite_no_internal_brief() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    assert!(files.len() > 3);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("BRIEF §"),
            "{} cites an internal brief",
            f.display()
        );
    }
}
