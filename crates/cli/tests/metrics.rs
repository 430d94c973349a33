//! `--metrics-listen`: Prometheus/OpenMetrics text with fleet and per-host figures,
//! served while the run goes; a bad address is refused before any I/O.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

fn get(addr: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

#[test]
fn serves_the_latest_interval_while_running() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let d = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .current_dir(d.path())
        .args([
            "run",
            "vsan-7030",
            "--engine",
            "null",
            "--duration",
            "4s",
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
    while t0.elapsed() < Duration::from_secs(10) {
        if let Some(p) = get(&addr) {
            if p.contains("iofleet_iops{scope=\"fleet\"}") {
                page = p;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
    assert!(page.contains("# TYPE iofleet_iops gauge"));
    let fleet: f64 = page
        .lines()
        .find(|l| l.starts_with("iofleet_iops{scope=\"fleet\"}"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(fleet > 0.0);
    assert!(page.contains("scope=\"host\",host="), "per-host series");
    assert!(page.contains("iofleet_latency_seconds{scope=\"fleet\",op=\"read\",quantile=\"0.99\"}"));
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
