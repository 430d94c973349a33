//! `--metrics-listen` against the real thing: a Prometheus server (Debian's `prometheus`
//! package, installed by .ci/run) scrapes a running iofleet every second; its HTTP API
//! must return fleet and per-host series, `promtool check metrics` must accept the
//! endpoint's Prometheus-text rendering, and every PromQL expression of the Grafana
//! dashboard (docs/grafana/iofleet.json) must return data from that server. Without
//! `prometheus` and `promtool` the test fails under CI and says what is missing, and
//! skips elsewhere (tests-support/need.rs).

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Kills and reaps its process when dropped, also when the test fails.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The path of `cmd`: on PATH or in /usr/bin, or a failure saying what to install.
fn tool(cmd: &str) -> PathBuf {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .expect("sh runs");
    let found = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !found.is_empty() {
        return PathBuf::from(found);
    }
    let usr = Path::new("/usr/bin").join(cmd);
    assert!(
        usr.exists(),
        "`{cmd}` not found: this test needs a real Prometheus; install Debian's \
         `prometheus` package (apt-get install prometheus), as .ci/run does"
    );
    usr
}

/// Percent-encode a query-string value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// GET `target` from `addr` over HTTP/1.0 (so that no server answers chunked):
/// the status code, the header block and the body.
fn get(addr: &str, target: &str, accept: Option<&str>) -> Option<(u16, String, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n").ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, head.to_string(), body.to_string()))
}

/// The result vector of an instant query, or None while Prometheus cannot answer.
fn query(prom: &str, expr: &str) -> Option<Vec<Value>> {
    let (code, _, body) = get(prom, &format!("/api/v1/query?query={}", encode(expr)), None)?;
    let v: Value = serde_json::from_str(&body).ok()?;
    assert_ne!(code, 400, "Prometheus refused `{expr}`: {body}");
    (v["status"] == "success").then(|| v["data"]["result"].as_array().cloned())?
}

/// Poll `expr` until it returns a series, up to `deadline`.
fn wait_for(prom: &str, expr: &str, deadline: Instant) -> Option<Vec<Value>> {
    loop {
        if let Some(r) = query(prom, expr).filter(|r| !r.is_empty()) {
            return Some(r);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every PromQL expression of the dashboard, with Grafana's variables given the values
/// "all hosts" and a rate window several scrape intervals long.
fn dashboard_exprs(d: &Value) -> Vec<(String, String)> {
    let vars: Vec<String> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect();
    let mut panels: Vec<&Value> = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        panels.push(p);
        if let Some(inner) = p["panels"].as_array() {
            panels.extend(inner);
        }
    }
    let mut out = Vec::new();
    for p in panels {
        for t in p["targets"].as_array().into_iter().flatten() {
            let mut e = t["expr"].as_str().unwrap().to_string();
            e = e.replace("$__rate_interval", "10s");
            for v in &vars {
                e = e
                    .replace(&format!("${{{v}}}"), ".+")
                    .replace(&format!("${v}"), ".+");
            }
            assert!(!e.contains('$'), "unknown variable in `{e}`");
            out.push((p["title"].as_str().unwrap().to_string(), e));
        }
    }
    out
}

#[test]
fn prometheus_scrapes_a_run_and_the_dashboard_queries_return_data() {
    if !common::need::need(
        "prometheus_scrapes_a_run_and_the_dashboard_queries_return_data",
        &["prometheus", "promtool"],
    ) {
        return;
    }
    let prometheus = tool("prometheus");
    let promtool = tool("promtool");
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana/iofleet.json"),
        )
        .unwrap(),
    )
    .unwrap();

    // A rate-capped null-engine run: light on the CPU, long enough to be scraped; the
    // reaper ends it with the test.
    let d = tempfile::tempdir().unwrap();
    let target = format!("127.0.0.1:{}", free_port());
    let run_log = d.path().join("iofleet.log");
    let _iofleet = Reaper(
        Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
            .env("XDG_DATA_HOME", common::scratch_data_home())
            .current_dir(d.path())
            .args(["run", "vsan-7030", "--engine", "null", "--workers", "2"])
            .args(["--rate", "500", "--duration", "300s", "--warmup", "0s"])
            .args(["--interval", "1s", "--no-save", "--quiet"])
            .args(["--metrics-listen", &target])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&run_log).unwrap())
            .spawn()
            .unwrap(),
    );

    // The endpoint's Prometheus text passes promtool's lint (promtool reads that
    // format; the OpenMetrics rendering is checked by Prometheus's scrape below).
    let t0 = Instant::now();
    let text = loop {
        if let Some((200, head, body)) = get(&target, "/metrics", Some("text/plain")) {
            if body.contains("iofleet_host_iops{") {
                assert!(head.contains("text/plain; version=0.0.4"), "{head}");
                break body;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no interval served; iofleet's stderr:\n{}",
            std::fs::read_to_string(&run_log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut check = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = check.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );

    // Prometheus on a free port, scraping every second, storage in the temp dir.
    let prom = format!("127.0.0.1:{}", free_port());
    let config = d.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  \
             - job_name: iofleet\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let log_path = d.path().join("prometheus.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let _prometheus = Reaper(
        Command::new(&prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                d.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();

    let deadline = Instant::now() + Duration::from_secs(90);
    let fleet = wait_for(&prom, "sum(iofleet_iops)", deadline)
        .unwrap_or_else(|| panic!("no fleet IOPS in Prometheus; its log:\n{}", log()));
    let iops: f64 = fleet[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!(iops > 0.0, "fleet IOPS {iops}");
    let hosts = wait_for(&prom, "iofleet_host_iops", deadline)
        .unwrap_or_else(|| panic!("no per-host series in Prometheus; its log:\n{}", log()));
    assert!(
        hosts.iter().all(|s| s["metric"]["host"].is_string()),
        "{hosts:?}"
    );

    // The target is healthy: Prometheus's OpenMetrics parser took every scrape.
    let (_, _, targets) = get(&prom, "/api/v1/targets", None).unwrap();
    let targets: Value = serde_json::from_str(&targets).unwrap();
    let t = &targets["data"]["activeTargets"][0];
    assert_eq!(t["health"], "up", "{t}");
    assert_eq!(t["lastError"], "", "{t}");
    // Families arrive typed: the summary is a summary, rates are gauges.
    let (_, _, meta) = get(&prom, "/api/v1/metadata", None).unwrap();
    let meta: Value = serde_json::from_str(&meta).unwrap();
    assert_eq!(
        meta["data"]["iofleet_latency_seconds"][0]["type"], "summary",
        "{meta}"
    );
    assert_eq!(meta["data"]["iofleet_iops"][0]["type"], "gauge", "{meta}");
    assert_eq!(meta["data"]["iofleet_ios"][0]["type"], "counter", "{meta}");

    // The dashboard: its datasource is an input, and every expression returns data.
    assert_eq!(dashboard["__inputs"][0]["name"], "DS_PROMETHEUS");
    let exprs = dashboard_exprs(&dashboard);
    let all: String = exprs.iter().map(|(_, e)| e.as_str()).collect();
    for metric in [
        "iofleet_iops",
        "iofleet_host_iops",
        "iofleet_throughput_bytes_per_second",
        "iofleet_host_throughput_bytes_per_second",
        "iofleet_latency_seconds{quantile=\"0.99\"}",
        "iofleet_host_latency_seconds{host=~\".+\",quantile=\"0.99\"}",
        "iofleet_hosts_lost",
        "iofleet_generator_warnings",
    ] {
        assert!(all.contains(metric), "the dashboard shows {metric}");
    }
    let empty: Vec<_> = exprs
        .iter()
        .filter(|(_, e)| wait_for(&prom, e, deadline).is_none())
        .collect();
    assert!(
        empty.is_empty(),
        "dashboard expressions without data: {empty:?}; Prometheus log:\n{}",
        log()
    );
}
