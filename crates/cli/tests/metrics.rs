//! `--metrics-listen`: OpenMetrics (or, when asked for, Prometheus text) with fleet and
//! per-host figures, served while the run goes at /metrics only; a bad address is
//! refused before any I/O. The scrape by a real Prometheus is in tests/prometheus.rs.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// Send `method target` with optional extra header lines; the raw response.
fn request(addr: &str, method: &str, target: &str, extra: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\n{extra}\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let head = response.split("\r\n\r\n").next()?;
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn body(response: &str) -> &str {
    response.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

#[test]
fn serves_openmetrics_while_running_and_only_at_metrics() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let d = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .current_dir(d.path())
        .env("XDG_DATA_HOME", scratch_data_home())
        .args([
            "run",
            "vsan-7030",
            "--engine",
            "null",
            "--rate",
            "1000",
            // Long enough never to end by itself here: the test stops it (Ctrl-C) once
            // every request below is answered, so none of them races the run's end.
            "--duration",
            "10m",
            "--warmup",
            "0s",
            "--interval",
            "500ms",
        ])
        .args(["--no-save", "--quiet", "--metrics-listen", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut page = String::new();
    while t0.elapsed() < Duration::from_secs(120) {
        // What curl sends.
        if let Some(p) = request(&addr, "GET", "/metrics", "Accept: */*\r\n") {
            if p.contains("iofleet_host_iops{") {
                page = p;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let text = request(&addr, "GET", "/metrics", "Accept: text/plain\r\n").unwrap_or_default();
    let other = request(&addr, "GET", "/other", "").unwrap_or_default();
    let post = request(&addr, "POST", "/metrics", "Content-Length: 0\r\n").unwrap_or_default();
    let garbage = (|| {
        let mut s = TcpStream::connect(&addr).ok()?;
        s.write_all(b"\x01\x02 not http\r\n\r\n").ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        Some(out)
    })()
    .unwrap_or_default();
    assert!(std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));

    assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
    assert_eq!(
        header(&page, "content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    let om = body(&page);
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# TYPE iofleet_iops gauge"), "{om}");
    assert!(om.contains("# TYPE iofleet_ios counter"), "{om}");
    assert!(
        om.contains("# TYPE iofleet_latency_seconds summary"),
        "{om}"
    );
    let read_iops: f64 = om
        .lines()
        .find_map(|l| l.strip_prefix("iofleet_iops{direction=\"read\"} "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(read_iops > 0.0);
    // The self-check's contention gauges carry a live figure (a null engine run on a
    // real clock has a self-check; this host was measured).
    let gauge = |name: &str| -> f64 {
        om.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing in\n{om}"))
    };
    let wait = gauge("iofleet_generator_cpu_wait_ratio");
    assert!((0.0..=1.0).contains(&wait), "{wait}");
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let other_load = gauge("iofleet_host_other_load_cpus");
    assert!(
        (0.0..=cpus).contains(&other_load),
        "{other_load} of {cpus} CPUs"
    );
    assert!(om.contains("iofleet_host_iops{host=\""), "per-host series");
    assert!(om.contains("iofleet_latency_seconds{direction=\"read\",quantile=\"0.99\"}"));
    // Families are grouped: each TYPE line comes right before its own samples.
    let mut seen = Vec::new();
    let mut family = "";
    for l in om.lines() {
        if let Some(t) = l.strip_prefix("# TYPE ") {
            family = t.split(' ').next().unwrap();
            assert!(!seen.contains(&family), "{family} twice in\n{om}");
            seen.push(family);
        } else if !l.starts_with('#') {
            assert!(l.starts_with(family), "{l} outside its family {family}");
        }
    }

    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert_eq!(
        header(&text, "content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(!body(&text).contains("# EOF"), "{text}");
    assert!(
        body(&text).contains("# TYPE iofleet_ios_total counter"),
        "{text}"
    );

    assert!(other.starts_with("HTTP/1.1 404 Not Found"), "{other}");
    assert!(
        post.starts_with("HTTP/1.1 405 Method Not Allowed"),
        "{post}"
    );
    assert_eq!(header(&post, "allow"), Some("GET, HEAD"));
    assert!(garbage.starts_with("HTTP/1.1 400 Bad Request"), "{garbage}");
}

#[test]
fn an_address_that_cannot_be_bound_is_refused() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "vsan-7030",
            "--engine",
            "null",
            "--no-save",
            "--metrics-listen",
            &addr,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--metrics-listen"), "{}", stderr(&o));
}
