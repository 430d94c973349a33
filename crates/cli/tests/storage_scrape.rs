//! The storage's own exporter (docs/storage-side.md, "The storage's exporter"): an
//! observer host scrapes it at every interval, and what it said arrives in the result,
//! the stored run, `compare`, the table and the report; an exporter that stops answering
//! gives a notice per interval and a complete run.
//!
//! The exporter is a small HTTP server this test starts on 127.0.0.1: a counter over two
//! label sets, each at the milliseconds since the server started, stamped with the same
//! instant, so the exporter itself says 2000 I/Os a second however loaded the machine;
//! and a latency pair (`_sum` in seconds, `_count`) over two label sets, one at 1 ms per
//! I/O and one with three times the I/Os at 3 ms, so the mean over its I/Os is 2.5 ms
//! (a mean of the two means would be 2 ms).

mod common;
mod results_common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use common::*;
use serde_json::Value;

/// A Prometheus exporter on 127.0.0.1; it stops answering (its listener closed) after
/// `answers` scrapes. Its address, and a flag that ends it.
fn exporter(answers: Option<usize>) -> (String, Arc<AtomicBool>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", l.local_addr().unwrap());
    l.set_nonblocking(true).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let end = done.clone();
    let now_ms = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    let base = now_ms();
    std::thread::spawn(move || {
        let mut answered = 0;
        while !end.load(Ordering::SeqCst) && answers.is_none_or(|a| answered < a) {
            let Ok((s, _)) = l.accept() else {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            };
            s.set_nonblocking(false).unwrap();
            let mut r = BufReader::new(&s);
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let t = now_ms();
            let n = t - base;
            let (sum_a, sum_b) = (n as f64 * 0.001, 3.0 * n as f64 * 0.003);
            let body = format!(
                "# HELP test_ops_total I/Os served\n# TYPE test_ops_total counter\n\
                 test_ops_total{{disk=\"a\"}} {n} {t}\ntest_ops_total{{disk=\"b\"}} {n} {t}\n\
                 # TYPE test_queue gauge\ntest_queue 3\n\
                 # TYPE test_op_latency summary\n\
                 test_op_latency_sum{{disk=\"a\"}} {sum_a:.6} {t}\n\
                 test_op_latency_count{{disk=\"a\"}} {n} {t}\n\
                 test_op_latency_sum{{disk=\"b\"}} {sum_b:.6} {t}\n\
                 test_op_latency_count{{disk=\"b\"}} {} {t}\n",
                3 * n
            );
            let _ = write!(
                &s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            answered += 1;
        }
    });
    (url, done)
}

/// A two-host local fleet: a worker and an observer scraping `url`.
fn inventory(dir: &Path, url: &str) -> String {
    let inv = dir.join("local.toml");
    std::fs::write(
        &inv,
        format!(
            "[[host]]\ndestination = \"w1\"\ntransport = \"local\"\ntarget = \"data\"\n\
             [[host]]\ndestination = \"storage-1\"\ntransport = \"local\"\nrole = \"observer\"\n\
             scrape = {url:?}\nmetrics = [\"iops:test_ops_total\", \"test_queue\", \"test_absent\", \"latency:test_op_latency\"]\n"
        ),
    )
    .unwrap();
    inv.to_str().unwrap().to_string()
}

fn run_args<'a>(inv: &'a str, name: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--hosts",
        inv,
        "--engine",
        "null",
        "--qd",
        "1",
        "--warmup",
        "500ms",
        "--duration",
        "2s",
        "--interval",
        "500ms",
        "--db",
        "r.db",
        "--name",
        name,
        "--intervals",
        "--output",
        "result.json",
        "--quiet",
    ]
}

fn observer_rows(v: &Value) -> &Vec<Value> {
    v["host_intervals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "storage-1")
        .unwrap()["rows"]
        .as_array()
        .unwrap()
}

#[test]
fn an_observer_scrapes_the_storages_exporter_every_interval_and_it_is_shown_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, done) = exporter(None);
    let inv = inventory(tmp.path(), &url);
    let o = run_in(tmp.path(), &run_args(&inv, "scraped"));
    done.store(true, Ordering::SeqCst);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("result.json")).unwrap()).unwrap();
    results_common::assert_schema_valid(&v);
    // Every interval after the first scrape: the exporter said 2 × 1000 a second, over
    // its own timestamps.
    let rows = observer_rows(&v);
    assert!(rows.len() >= 4, "{rows:?}");
    for r in rows {
        let m = r["usage"]["scraped"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"));
        assert_eq!(m[0]["name"], "test_ops_total");
        assert_eq!(
            (&m[0]["iops"], &m[0]["counter"]),
            (&Value::Bool(true), &Value::Bool(true))
        );
        let rate = m[0]["value"].as_f64().unwrap();
        assert!((rate - 2000.0).abs() < 1.0, "{r}");
        // A gauge's mean: its value times the span over the span (not exact in f64).
        assert!((m[1]["value"].as_f64().unwrap() - 3.0).abs() < 1e-9, "{r}");
        assert!(m[2]["value"].is_null(), "{r}");
        // The latency: Δsum over Δcount of both label sets, in ms.
        assert_eq!(
            (&m[3]["name"], &m[3]["latency"]),
            (&Value::from("test_op_latency"), &Value::Bool(true))
        );
        let ms = m[3]["value"].as_f64().unwrap();
        assert!((ms - 2.5).abs() < 1e-3, "{r}");
    }
    // The summary, each interval's observers and the observer host carry it.
    let said = |o: &Value| {
        o["scraped"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "test_ops_total")
            .unwrap()["value"]
            .as_f64()
            .unwrap()
    };
    assert!(
        (said(&v["summary"]["observers"]) - 2000.0).abs() < 1.0,
        "{}",
        v["summary"]
    );
    let said_ms = |o: &Value| {
        o["scraped"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "test_op_latency")
            .unwrap()["value"]
            .as_f64()
            .unwrap()
    };
    assert!(
        (said_ms(&v["summary"]["observers"]) - 2.5).abs() < 1e-3,
        "{}",
        v["summary"]
    );
    let obs = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["host"] == "storage-1")
        .unwrap();
    assert!((said(obs) - 2000.0).abs() < 1.0, "{obs}");
    assert!((said_ms(obs) - 2.5).abs() < 1e-3, "{obs}");
    // The table: the storage's IOPS and mean latency beside iofleet's, per interval and
    // over the run.
    let table = stdout(&o);
    assert!(table.contains("storage said IOPS"), "{table}");
    assert!(table.contains("storage said mean ms"), "{table}");
    let said_row = table
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("measure"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(said_row.contains(" 2.500 "), "{said_row}");
    assert!(
        table.contains("The storage said 2000 IOPS at 2.500 ms mean latency; iofleet measured"),
        "{table}"
    );
    assert!(
        table.contains("Exporter test_queue: 3.000000 (mean)"),
        "{table}"
    );

    // The stored run, compare, the table of the stored run and the report.
    let o = run_in(
        tmp.path(),
        &["results", "export", "scraped", "--db", "r.db"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!((said(&stored["summary"]["observers"]) - 2000.0).abs() < 1.0);
    let o = run_in(
        tmp.path(),
        &[
            "compare",
            "scraped",
            "scraped",
            "--metric",
            "storage_said_iops",
            "--json",
            "--db",
            "r.db",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let got = c["metrics"][0]["values"][0].as_f64().unwrap();
    assert!((got - 2000.0).abs() < 1.0, "{c}");
    // The mean latency it said, compared and gated in ms.
    let gate = |cond: &str| {
        run_in(
            tmp.path(),
            &[
                "compare",
                "scraped",
                "scraped",
                "--metric",
                "storage_said_latency_ms",
                "--json",
                "--fail-if",
                cond,
                "--db",
                "r.db",
            ],
        )
    };
    let o = gate("storage_said_latency_ms > 3ms");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let got = c["metrics"][0]["values"][0].as_f64().unwrap();
    assert!((got - 2.5).abs() < 1e-3, "{c}");
    let o = gate("storage_said_latency_ms > 2000us");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = run_in(tmp.path(), &["results", "show", "scraped", "--db", "r.db"]);
    assert!(
        stdout(&o).contains("The storage said 2000 IOPS at 2.500 ms mean latency"),
        "{}",
        stdout(&o)
    );
    let o = run_in(tmp.path(), &["report", "scraped", "--db", "r.db"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = stdout(&o);
    assert!(
        html.contains("<h2>What the storage said</h2>"),
        "no scraped section"
    );
    assert!(
        html.contains("<code>test_ops_total</code> /s</td><td>2000.00</td>"),
        "{html}"
    );
    assert!(
        html.contains("<code>test_op_latency</code> ms (mean latency)</td><td>2.50</td>"),
        "{html}"
    );
}

#[test]
fn an_exporter_that_stops_gives_a_notice_per_interval_and_a_complete_run() {
    let tmp = tempfile::tempdir().unwrap();
    // The start's scrape and two intervals', then nothing.
    let (url, done) = exporter(Some(3));
    let inv = inventory(tmp.path(), &url);
    let mut args = run_args(&inv, "stopped");
    args.push("--json");
    let o = run_in(tmp.path(), &args);
    done.store(true, Ordering::SeqCst);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("result.json")).unwrap()).unwrap();
    let rows = observer_rows(&v);
    assert_eq!(rows.len(), v["intervals"].as_array().unwrap().len());
    let failed = rows
        .iter()
        .filter(|r| r["usage"].get("scraped").is_none())
        .count();
    let notices: Vec<&str> = v["notices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .filter(|n| n.contains(&format!("scrape {url}")))
        .collect();
    assert!(failed >= 1, "{rows:?}");
    assert_eq!(notices.len(), failed, "{notices:?}");
    assert!(
        notices
            .iter()
            .all(|n| n.starts_with("storage-1: interval ")),
        "{notices:?}"
    );
    // The intervals before it stopped kept what it said.
    assert!(rows[0]["usage"]["scraped"].is_array(), "{}", rows[0]);
}

/// `scrape` is checked where the inventory is read, naming the host and the key.
#[test]
fn scrape_keys_are_checked_naming_the_host_and_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let workers = "[[host]]\ndestination = \"w1\"\ntransport = \"local\"\n";
    let obs = "[[host]]\ndestination = \"s1\"\nrole = \"observer\"\n";
    for (file, text, says) in [
        (
            "inv.toml",
            "[[host]]\ndestination = \"w1\"\nscrape = \"http://127.0.0.1:9283/metrics\"\npreset = \"ceph\"\n".to_string(),
            "host 'w1': scrape: only an observer host scrapes an exporter",
        ),
        (
            "inv.toml",
            format!("{workers}{obs}scrape = \"https://127.0.0.1:9283/metrics\"\npreset = \"ceph\"\n"),
            "host 's1': scrape: \"https://127.0.0.1:9283/metrics\": https is not scraped",
        ),
        (
            "inv.toml",
            format!("{workers}{obs}scrape = \"http://127.0.0.1:9283/metrics\"\npreset = \"gluster\"\n"),
            "host 's1': preset: \"gluster\" is not a preset (the presets: ceph, longhorn, openebs)",
        ),
        (
            "inv.toml",
            format!("{workers}{obs}scrape = \"http://127.0.0.1:9283/metrics\"\nmetrics = [\"2fast\"]\n"),
            "host 's1': metrics: \"2fast\" is not a metric name",
        ),
        (
            "inv.toml",
            format!("{workers}{obs}metrics = [\"x\"]\n"),
            "host 's1': metrics: name the exporter to scrape too",
        ),
        (
            "inv.ini",
            "w1\ns1 iofleet_role=observer iofleet_scrape=http://127.0.0.1:9283/metrics\n".to_string(),
            "host 's1': iofleet_metrics: name the metrics to read",
        ),
    ] {
        let inv = tmp.path().join(file);
        std::fs::write(&inv, &text).unwrap();
        let o = run_in(
            tmp.path(),
            &["run", "vsan-7030", "--hosts", inv.to_str().unwrap(), "--dry-run"],
        );
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(file), "{}", stderr(&o));
    }
}
