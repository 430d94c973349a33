//! `iofleet report`: the self-contained HTML report (no URL anywhere, every chart drawn)
//! and the Markdown report. The HTML is opened in headless Chromium: it must load
//! without console errors, its self-check must count every chart as rendered with
//! visible marks, and the screenshot must show a real page. Chromium (Debian package
//! `chromium`) is installed by .ci/run; without it the test fails under CI and skips
//! with a message elsewhere.

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
    "latency-percentiles",
    "worker-spread",
];

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

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
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
        if std::env::var_os("CI").is_some() {
            panic!("chromium is not installed (.ci/run installs the Debian package)");
        }
        eprintln!("skip: chromium is not installed (apt-get install chromium); CI runs this test");
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
    assert_eq!(attr(tag, "data-expected").as_deref(), Some("6"), "{tag}");
    assert_eq!(attr(tag, "data-rendered").as_deref(), Some("6"), "{tag}");
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
