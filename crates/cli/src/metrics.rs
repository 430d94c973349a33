//! `--metrics-listen ADDR`: the latest interval as Prometheus/OpenMetrics text, for
//! Grafana and friends while a run is going. An `Observer` renders the text once per
//! interval (fleet and per host: IOPS, throughput, read/write latency quantiles); a
//! small thread answers every HTTP request on the socket with the latest rendering.
//! Only GET is served and only the metrics page exists: this is an exporter, not a
//! web server, so it stays a few lines of std rather than a dependency.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iofleet_fleet::{IntervalSnapshot, Observer};
use iofleet_stats::{OpStats, Sample};

use crate::Exit;

pub struct Metrics {
    page: Arc<Mutex<String>>,
}

impl Metrics {
    /// Bind `addr` and start serving (an empty page until the first interval).
    pub fn listen(addr: &str) -> Result<(Metrics, String), Exit> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| Exit::input(format!("--metrics-listen {addr}: {e}")))?;
        let local = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| addr.to_string());
        let page = Arc::new(Mutex::new(String::from("# no interval yet\n")));
        let serve = page.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let body = serve.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let _ = answer(stream, &body);
            }
        });
        Ok((Metrics { page }, local))
    }
}

fn answer(mut s: TcpStream, body: &str) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut req = [0u8; 4096];
    let n = s.read(&mut req)?;
    let ok = req[..n].starts_with(b"GET ");
    let (status, body) = if ok {
        ("200 OK", body)
    } else {
        ("405 Method Not Allowed", "only GET is served\n")
    };
    write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn series(
    out: &mut String,
    labels: &str,
    all: &OpStats,
    read: &OpStats,
    write: &OpStats,
    secs: f64,
) {
    let rate = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
    let _ = writeln!(out, "iofleet_iops{{{labels}}} {}", rate(all.ios));
    let _ = writeln!(
        out,
        "iofleet_throughput_bytes_per_second{{{labels}}} {}",
        rate(all.bytes)
    );
    for (op, s) in [("read", read), ("write", write)] {
        for q in [0.5, 0.9, 0.99, 0.999] {
            let _ = writeln!(
                out,
                "iofleet_latency_seconds{{{labels},op=\"{op}\",quantile=\"{q}\"}} {}",
                s.hist.quantile_ns(q) as f64 / 1e9
            );
        }
    }
}

impl Observer for Metrics {
    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        let secs = snap.row.duration_s;
        let mut out = String::new();
        out.push_str("# HELP iofleet_iops Completed I/Os per second over the last interval.\n# TYPE iofleet_iops gauge\n");
        out.push_str("# HELP iofleet_throughput_bytes_per_second Bytes per second over the last interval.\n# TYPE iofleet_throughput_bytes_per_second gauge\n");
        out.push_str("# HELP iofleet_latency_seconds Latency quantiles over the last interval, from merged histograms.\n# TYPE iofleet_latency_seconds gauge\n");
        let mut fleet = Sample::default();
        snap.workers.iter().for_each(|w| fleet += w);
        series(
            &mut out,
            "scope=\"fleet\"",
            &fleet.all(),
            &fleet.read(),
            &fleet.write(),
            secs,
        );
        for (h, name) in snap.hosts.iter().enumerate() {
            let mut host = Sample::default();
            for (w, s) in snap.workers.iter().enumerate() {
                if snap.worker_host.get(w) == Some(&h) {
                    host += s;
                }
            }
            let labels = format!("scope=\"host\",host=\"{}\"", name.replace('"', "'"));
            series(
                &mut out,
                &labels,
                &host.all(),
                &host.read(),
                &host.write(),
                secs,
            );
        }
        let _ = writeln!(
            out,
            "# TYPE iofleet_interval_index gauge\niofleet_interval_index {}",
            snap.row.index
        );
        let _ = writeln!(
            out,
            "# TYPE iofleet_warmup gauge\niofleet_warmup {}",
            u8::from(snap.row.warmup)
        );
        let _ = writeln!(
            out,
            "# TYPE iofleet_hosts_lost gauge\niofleet_hosts_lost {}",
            snap.row.hosts_lost
        );
        *self.page.lock().unwrap_or_else(|p| p.into_inner()) = out;
    }
}
