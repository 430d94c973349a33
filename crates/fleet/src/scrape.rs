//! The storage's own exporter, scraped by the observer agent at the end of every interval
//! (`scrape = "http://127.0.0.1:9283/metrics"` on an observer host, docs/storage-side.md):
//! a plain HTTP/1.1 GET over a `TcpStream`, bounded in time (`SCRAPE_TIMEOUT`) and size
//! (`SCRAPE_MAX_BYTES`), its body read as the Prometheus text exposition format, the named
//! metrics summed over their label sets and turned into `ScrapedUsage` spans.
//!
//! Alignment: a sample carries the exporter's own timestamp when it gives one (the
//! optional last field of a sample line, ms since the Unix epoch), else the scrape's
//! time. A counter's increase between two samples with different timestamps is counted
//! over the exporter's own time between them, in the interval whose scrape first saw the
//! later sample; a scrape that sees the same timestamp again (the exporter has not
//! refreshed) adds nothing, so a rate is never made of a scrape's pace.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use iofleet_stats::ScrapedUsage;
use serde::{Deserialize, Serialize};

/// How long one scrape may take, connect to last byte.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);
/// The most bytes of one answer (headers and body) read.
pub const SCRAPE_MAX_BYTES: usize = 4 << 20;
/// The most metrics one host may scrape.
pub const MOST_SCRAPED: usize = 64;

/// What an observer scrapes: the exporter's address and its metrics, each `NAME` (a
/// named series), `iops:NAME` (I/Os: shown beside iofleet's IOPS) or `latency:NAME` (a
/// mean latency, `Kind::Latency`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScrapeSpec {
    pub url: String,
    pub metrics: Vec<String>,
}

/// A named preset's metrics, each from the exporter's own documentation (the pages are
/// cited in docs/storage-side.md).
pub fn preset(name: &str) -> Option<Vec<String>> {
    let m: &[&str] = match name {
        // docs.ceph.com/en/latest/monitoring/ ("OSD performance").
        // The latencies: a perf counter's "average" is a sum and count pair, the sum in
        // seconds (docs.ceph.com/en/latest/dev/perf_counters/; IBM Storage Ceph,
        // "Average count and sum"), exported as NAME_sum and NAME_count.
        "ceph" => &[
            "iops:ceph_osd_op_r",
            "iops:ceph_osd_op_w",
            "ceph_osd_op_w_in_bytes",
            "latency:ceph_osd_op_r_latency",
            "latency:ceph_osd_op_w_latency",
        ],
        // longhorn.io/docs/latest/monitoring/metrics/ (gauges, already per second; the
        // latencies in ns).
        "longhorn" => &[
            "iops:longhorn_volume_read_iops",
            "iops:longhorn_volume_write_iops",
            "latency_ns:longhorn_volume_read_latency",
            "latency_ns:longhorn_volume_write_latency",
        ],
        // openebs.io/docs/.../replicated-pv-mayastor/advanced-operations/monitoring
        // (the pool exporter: capacity only, refreshed every five minutes).
        "openebs" => &[
            "disk_pool_used_size_bytes",
            "disk_pool_committed_size_bytes",
        ],
        _ => return None,
    };
    Some(m.iter().map(|s| s.to_string()).collect())
}

/// The presets' names, for messages.
pub const PRESETS: &str = "ceph, longhorn, openebs";

/// A Prometheus metric name: letters, digits, `_` and `:`, not starting with a digit.
fn is_metric_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().enumerate().all(|(i, c)| {
            c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
        })
}

/// What a metric entry reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// `NAME`: a named series.
    Plain,
    /// `iops:NAME`: it counts I/Os (shown beside iofleet's IOPS).
    Iops,
    /// `latency:NAME` (and `latency_ms:`, `latency_us:`, `latency_ns:`): a mean latency,
    /// from the pair `NAME_sum`/`NAME_count` when the exporter lists `NAME_count`, else
    /// from the gauge `NAME`; the sum (or the gauge) is in the unit the prefix names,
    /// seconds (Prometheus's base unit) for `latency:`. The field is that unit in s.
    Latency(f64),
}

/// The latency prefixes and their units in seconds.
const LATENCY_UNITS: &[(&str, f64)] = &[
    ("latency:", 1.0),
    ("latency_ms:", 1e-3),
    ("latency_us:", 1e-6),
    ("latency_ns:", 1e-9),
];

/// A metric entry: its name, and what it reads.
pub fn parse_metric(entry: &str) -> Result<(String, Kind), String> {
    let (name, kind) = match entry.strip_prefix("iops:") {
        Some(n) => (n, Kind::Iops),
        None => LATENCY_UNITS
            .iter()
            .find_map(|(p, unit)| entry.strip_prefix(p).map(|n| (n, Kind::Latency(*unit))))
            .unwrap_or((entry, Kind::Plain)),
    };
    // `latency_ps:NAME` is a legal metric name, but surely a unit iofleet does not know.
    if kind == Kind::Plain {
        if let Some((p, _)) = entry
            .split_once(':')
            .filter(|(p, _)| p.starts_with("latency"))
        {
            return Err(format!(
                "{entry:?}: {p}: is not a latency's unit; give latency: (seconds), latency_ms:, latency_us: or latency_ns:"
            ));
        }
    }
    if !is_metric_name(name) {
        return Err(format!(
            "{entry:?} is not a metric name (letters, digits, '_' and ':', not starting with a digit; iops:NAME marks I/Os, latency:NAME a mean latency from NAME_sum/NAME_count in seconds, latency_ms:, latency_us: or latency_ns: in that unit)"
        ));
    }
    Ok((name.to_string(), kind))
}

/// The exporter's host, port and path from an `http://` address. The error completes
/// "host 'NAME': scrape".
pub fn parse_url(url: &str) -> Result<(String, u16, String), String> {
    if url.starts_with("https://") {
        return Err(format!(
            "{url:?}: https is not scraped (iofleet has no TLS client for exporters); give the exporter's http:// address on the host's loopback"
        ));
    }
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url:?} is not an http:// address"))?;
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!("{url:?} holds a space or control character"));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
            h,
            p.parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| format!("{url:?}: {p:?} is not a port"))?,
        ),
        _ => (authority, 80),
    };
    if host.is_empty() || host.contains('@') {
        return Err(format!("{url:?} names no host"));
    }
    Ok((
        host.trim_matches(['[', ']']).to_string(),
        port,
        path.to_string(),
    ))
}

/// One sample line of the exposition format.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    /// The labels as written between the braces (not taken apart: metrics are summed
    /// over their label sets).
    pub labels: String,
    pub value: f64,
    /// The exporter's timestamp, ms since the Unix epoch.
    pub at_ms: Option<i64>,
}

/// An exposition: its samples and the metric types its `# TYPE` lines give.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    pub counters: Vec<String>,
}

/// Read the Prometheus text exposition format (version 0.0.4). The error names the line.
pub fn parse_exposition(text: &str) -> Result<Exposition, String> {
    let mut out = Exposition::default();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            let mut w = c.split_whitespace();
            if w.next() == Some("TYPE") {
                if let (Some(name), Some("counter")) = (w.next(), w.next()) {
                    out.counters.push(name.to_string());
                }
            }
            continue;
        }
        out.samples
            .push(sample_line(line).map_err(|m| format!("line {}: {m}", n + 1))?);
    }
    Ok(out)
}

fn sample_line(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .ok_or("a sample has a name and a value")?;
    let name = &line[..name_end];
    if !is_metric_name(name) {
        return Err(format!("{name:?} is not a metric name"));
    }
    let mut rest = &line[name_end..];
    let mut labels = String::new();
    if rest.starts_with('{') {
        // Up to the closing brace outside quotes (a label value may hold '}' or '\"').
        let b = rest.as_bytes();
        let (mut i, mut quoted) = (1, false);
        loop {
            match b.get(i) {
                None => return Err("a label set is not closed".into()),
                Some(b'\\') if quoted => i += 1,
                Some(b'"') => quoted = !quoted,
                Some(b'}') if !quoted => break,
                _ => {}
            }
            i += 1;
        }
        labels = rest[1..i].to_string();
        rest = &rest[i + 1..];
    }
    let mut w = rest.split_whitespace();
    let value = w.next().ok_or("a sample has a value")?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v
            .parse::<f64>()
            .map_err(|_| format!("{v:?} is not a number"))?,
    };
    let at_ms = match w.next() {
        None => None,
        Some(t) => Some(
            t.parse::<i64>()
                .map_err(|_| format!("{t:?} is not a timestamp in ms"))?,
        ),
    };
    if w.next().is_some() {
        return Err("text after the timestamp".into());
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
        at_ms,
    })
}

/// GET the address: its body, or why not. Bounded by `SCRAPE_TIMEOUT` and
/// `SCRAPE_MAX_BYTES`; only a 200 answer's body is taken.
pub fn fetch(url: &str) -> Result<String, String> {
    let (host, port, path) = parse_url(url)?;
    let deadline = std::time::Instant::now() + SCRAPE_TIMEOUT;
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, SCRAPE_TIMEOUT).map_err(|e| e.to_string())?;
    let left = || {
        deadline
            .saturating_duration_since(std::time::Instant::now())
            .max(Duration::from_millis(1))
    };
    s.set_write_timeout(Some(left()))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/plain; version=0.0.4\r\nConnection: close\r\nUser-Agent: iofleet\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let mut buf = [0u8; 64 << 10];
    loop {
        if std::time::Instant::now() >= deadline {
            return Err(format!("no whole answer within {:?}", SCRAPE_TIMEOUT));
        }
        s.set_read_timeout(Some(left()))
            .map_err(|e| e.to_string())?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.len() > SCRAPE_MAX_BYTES {
                    return Err(format!(
                        "the answer is longer than {SCRAPE_MAX_BYTES} bytes"
                    ));
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(format!("no whole answer within {:?}", SCRAPE_TIMEOUT))
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    body_of(&got)
}

/// The body of a whole HTTP/1.x answer (plain or chunked), or why not.
pub fn body_of(answer: &[u8]) -> Result<String, String> {
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the answer has no end of headers")?;
    let head = std::str::from_utf8(&answer[..split]).map_err(|_| "the headers are not text")?;
    let mut lines = head.lines();
    let status = lines.next().unwrap_or_default();
    let code = status.split_whitespace().nth(1).unwrap_or_default();
    if code != "200" {
        return Err(format!("the exporter answered {status:?}"));
    }
    let chunked = lines.any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.to_ascii_lowercase().contains("chunked")
        })
    });
    let body = &answer[split + 4..];
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    String::from_utf8(body).map_err(|_| "the body is not UTF-8 text".into())
}

fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let eol = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk size line is not ended")?;
        let size = std::str::from_utf8(&b[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok())
            .ok_or("a chunk size is not hexadecimal")?;
        b = &b[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if b.len() < size + 2 {
            return Err("a chunk is cut short".into());
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

/// The last sample of one metric the scraper saw: its value summed over label sets and
/// its time (ms since the Unix epoch).
#[derive(Clone, Copy, Debug)]
struct Seen {
    value: f64,
    at_ms: i64,
    /// A latency pair's count (its `value` is then the sum, in seconds); None for a
    /// single series.
    count: Option<f64>,
}

/// Scrapes one exporter at each interval's end and turns what it saw into spans.
pub struct Scraper {
    url: String,
    metrics: Vec<(String, Kind)>,
    last: Vec<Option<Seen>>,
    /// The run's start on this host's wall clock, ms since the Unix epoch.
    start_ms: i64,
}

/// Now, ms since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Scraper {
    pub fn new(spec: &ScrapeSpec) -> Result<Scraper, String> {
        parse_url(&spec.url)?;
        let metrics = spec
            .metrics
            .iter()
            .map(|m| parse_metric(m))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Scraper {
            url: spec.url.clone(),
            last: vec![None; metrics.len()],
            metrics,
            start_ms: now_ms(),
        })
    }

    /// The run starts now (its first sample is the baseline).
    pub fn start(&mut self) -> Option<String> {
        self.start_ms = now_ms();
        self.sample().err()
    }

    /// Scrape once: the spans since the last scrape (one per metric, in their order),
    /// or a notice naming the address and why it failed.
    pub fn sample(&mut self) -> Result<Vec<ScrapedUsage>, String> {
        let got = fetch(&self.url)
            .and_then(|body| parse_exposition(&body))
            .map_err(|m| format!("scrape {}: {m}", self.url))?;
        Ok(self.take(&got, now_ms()))
    }

    /// The spans an exposition read at `now_ms` gives.
    pub fn take(&mut self, got: &Exposition, now_ms: i64) -> Vec<ScrapedUsage> {
        let mut out = Vec::with_capacity(self.metrics.len());
        for k in 0..self.metrics.len() {
            let (name, kind) = &self.metrics[k];
            if let Kind::Latency(unit) = *kind {
                let name = name.clone();
                out.push(self.latency(k, &name, unit, got, now_ms));
                continue;
            }
            let (name, kind) = &self.metrics[k];
            let counter = got.counters.iter().any(|c| c == name);
            let mut span = ScrapedUsage {
                name: name.clone(),
                iops: *kind == Kind::Iops,
                counter,
                ..Default::default()
            };
            let mine: Vec<&Sample> = got.samples.iter().filter(|s| &s.name == name).collect();
            if mine.is_empty() {
                span.missing = true;
                out.push(span);
                continue;
            }
            let now = Seen {
                // A NaN or an infinity is no count (and would not survive JSON).
                value: finite_sum(&mine),
                at_ms: latest(&mine, now_ms),
                count: None,
            };
            span.last = Some(now.value);
            // In f64: an exporter's timestamp may be anything an i64 holds.
            span.at_s = Some((now.at_ms as f64 - self.start_ms as f64) / 1e3);
            if let Some(prev) = self.last[k] {
                if now.at_ms > prev.at_ms {
                    let dt = (now.at_ms as f64 - prev.at_ms as f64) / 1e3;
                    span.span_s = dt;
                    span.samples = 1;
                    // A counter's increase (a reset counts from zero); a gauge's value
                    // held over the exporter's time since its last sample.
                    span.amount = if counter {
                        if now.value >= prev.value {
                            now.value - prev.value
                        } else {
                            now.value
                        }
                    } else {
                        now.value * dt
                    };
                }
            }
            // What JSON cannot carry (a sum or product past f64's range) is not counted.
            if !(span.amount.is_finite() && now.value.is_finite()) {
                span.amount = 0.0;
                span.span_s = 0.0;
                span.samples = 0;
                span.last = None;
                span.missing = true;
                out.push(span);
                continue;
            }
            if self.last[k].is_none_or(|p| now.at_ms > p.at_ms) {
                self.last[k] = Some(now);
            }
            out.push(span);
        }
        out
    }

    /// A mean latency's span (`Kind::Latency`, unit in seconds): from the pair
    /// `NAME_sum`/`NAME_count` (each summed over its label sets) the increase of both
    /// between two samples of different times, a reset (either going down) counting from
    /// zero; else from the gauge `NAME` (its mean over label sets) held over the time
    /// since its last sample, weighted by that time. `amount` is latency in seconds,
    /// `count` what it is over; nothing new (a repeated time, no I/O counted) adds
    /// nothing, so an interval without I/O has no latency rather than 0 ms.
    fn latency(
        &mut self,
        k: usize,
        name: &str,
        unit: f64,
        got: &Exposition,
        now_ms: i64,
    ) -> ScrapedUsage {
        let mut span = ScrapedUsage {
            name: name.to_string(),
            latency: true,
            ..Default::default()
        };
        let named =
            |n: &str| -> Vec<&Sample> { got.samples.iter().filter(|s| s.name == n).collect() };
        let (sums, counts) = (
            named(&format!("{name}_sum")),
            named(&format!("{name}_count")),
        );
        let gauge = named(name);
        let now = if !counts.is_empty() && !sums.is_empty() {
            Seen {
                value: finite_sum(&sums) * unit,
                at_ms: latest(&sums, now_ms).max(latest(&counts, now_ms)),
                count: Some(finite_sum(&counts)),
            }
        } else if !gauge.is_empty() {
            Seen {
                // A latency does not add up over volumes: their mean.
                value: finite_sum(&gauge) / finite_count(&gauge).max(1) as f64 * unit,
                at_ms: latest(&gauge, now_ms),
                count: None,
            }
        } else {
            span.missing = true;
            return span;
        };
        if !now.value.is_finite() || !now.count.is_none_or(f64::is_finite) {
            span.missing = true;
            return span;
        }
        // The last value, in ms: the pair's mean since the exporter began, the gauge's.
        span.last = match now.count {
            Some(c) => (c > 0.0).then(|| now.value / c * 1e3),
            None => Some(now.value * 1e3),
        };
        span.at_s = Some((now.at_ms as f64 - self.start_ms as f64) / 1e3);
        match self.last[k] {
            Some(prev) if now.at_ms > prev.at_ms => {
                let dt = (now.at_ms as f64 - prev.at_ms as f64) / 1e3;
                span.span_s = dt;
                span.samples = 1;
                match (now.count, prev.count) {
                    (Some(c), Some(pc)) => {
                        let (d_sum, d_count) = if now.value < prev.value || c < pc {
                            (now.value, c)
                        } else {
                            (now.value - prev.value, c - pc)
                        };
                        // No I/O counted: no latency (a sum that grew alone is not one).
                        if d_count > 0.0 {
                            (span.amount, span.count) = (d_sum, d_count);
                        }
                    }
                    (None, None) => (span.amount, span.count) = (now.value * dt, dt),
                    // The exporter switched between a pair and a gauge: a new baseline.
                    _ => {}
                }
            }
            Some(_) => return span,
            None => {}
        }
        self.last[k] = Some(now);
        span
    }
}

/// A metric's value summed over its label sets; a NaN or an infinity is no count (and
/// would not survive JSON).
fn finite_sum(mine: &[&Sample]) -> f64 {
    mine.iter().map(|s| s.value).filter(|v| v.is_finite()).sum()
}

/// How many of a metric's label sets have a finite value.
fn finite_count(mine: &[&Sample]) -> usize {
    mine.iter().filter(|s| s.value.is_finite()).count()
}

/// A metric's time: the latest of its label sets' timestamps, else the scrape's.
fn latest(mine: &[&Sample], now_ms: i64) -> i64 {
    mine.iter().filter_map(|s| s.at_ms).max().unwrap_or(now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_exposition_format_is_read_with_labels_types_and_timestamps() {
        let text = "# HELP ops Operations\n# TYPE ops counter\nops{d=\"osd.0\",x=\"a}b\\\"c\"} 10 1700000000000\nops{d=\"osd.1\"} 2.5e1\n\nlat 1.5\nup +Inf\n";
        let e = parse_exposition(text).unwrap();
        assert_eq!(e.counters, ["ops"]);
        assert_eq!(e.samples.len(), 4);
        assert_eq!(e.samples[0].labels, "d=\"osd.0\",x=\"a}b\\\"c\"");
        assert_eq!(e.samples[0].at_ms, Some(1_700_000_000_000));
        assert_eq!(e.samples[1].value, 25.0);
        assert_eq!(e.samples[3].value, f64::INFINITY);
        let bad = parse_exposition("ok 1\nops{d=\"x\" 3\n").unwrap_err();
        assert!(bad.starts_with("line 2:"), "{bad}");
        assert!(parse_exposition("ops one").unwrap_err().contains("\"one\""));
        assert!(parse_exposition("ops 1 2 3").is_err());
    }

    #[test]
    fn addresses_are_http_only_and_taken_apart() {
        assert_eq!(
            parse_url("http://127.0.0.1:9283/metrics").unwrap(),
            ("127.0.0.1".into(), 9283, "/metrics".into())
        );
        assert_eq!(
            parse_url("http://[::1]:80").unwrap(),
            ("::1".into(), 80, "/".into())
        );
        assert!(parse_url("https://x/metrics")
            .unwrap_err()
            .contains("https"));
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("http://x:0/").is_err());
        assert!(parse_url("http:///m").is_err());
    }

    #[test]
    fn answers_are_taken_plain_or_chunked_and_only_when_200() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nops 1\n";
        assert_eq!(body_of(plain).unwrap(), "ops 1\n");
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nops\r\n3\r\n 1\n\r\n0\r\n\r\n";
        assert_eq!(body_of(chunked).unwrap(), "ops 1\n");
        let e = body_of(b"HTTP/1.1 503 Busy\r\n\r\n").unwrap_err();
        assert!(e.contains("503"), "{e}");
        assert!(body_of(b"HTTP/1.1 200 OK\r\n").is_err());
    }

    /// A counter's rate is taken over the exporter's own time between two distinct
    /// samples; a repeated timestamp adds nothing; a missing metric says so.
    #[test]
    fn counters_are_aligned_by_the_exporters_timestamps() {
        let mut s = Scraper::new(&ScrapeSpec {
            url: "http://127.0.0.1:1/m".into(),
            metrics: vec!["iops:ops".into(), "gone".into()],
        })
        .unwrap();
        s.start_ms = 1_000;
        let at = |v: f64, t: i64| Exposition {
            samples: vec![
                Sample {
                    name: "ops".into(),
                    labels: "a=\"1\"".into(),
                    value: v,
                    at_ms: Some(t),
                },
                Sample {
                    name: "ops".into(),
                    labels: "a=\"2\"".into(),
                    value: v,
                    at_ms: Some(t - 10),
                },
            ],
            counters: vec!["ops".into()],
        };
        let first = s.take(&at(100.0, 2_000), 5_000);
        assert_eq!((first[0].samples, first[0].at_s), (0, Some(1.0)));
        assert!(first[1].missing);
        let second = s.take(&at(400.0, 4_000), 6_000);
        // 2 × 300 more over the exporter's 2 s (not the scrape's 1 s).
        assert_eq!((second[0].amount, second[0].span_s), (600.0, 2.0));
        assert!(second[0].iops && second[0].counter);
        let same = s.take(&at(400.0, 4_000), 7_000);
        assert_eq!(
            (same[0].amount, same[0].span_s, same[0].samples),
            (0.0, 0.0, 0)
        );
    }

    /// A latency pair's mean is Δsum over Δcount over every label set (not a mean of
    /// means); a repeated time adds nothing, no I/O counted gives no latency, a reset
    /// counts from zero; a latency gauge is its mean over label sets, in its unit.
    #[test]
    fn latency_pairs_give_the_mean_of_the_span() {
        let mut s = Scraper::new(&ScrapeSpec {
            url: "http://127.0.0.1:1/m".into(),
            metrics: vec!["latency:op_lat".into(), "latency_ns:vol_lat".into()],
        })
        .unwrap();
        s.start_ms = 0;
        let sample = |name: &str, l: &str, value: f64, t: i64| Sample {
            name: name.into(),
            labels: l.into(),
            value,
            at_ms: Some(t),
        };
        // Two label sets: (sum a, count a), (sum b, count b), at time t; the gauge at
        // 1 ms and 3 ms on two volumes.
        let at = |a: (f64, f64), b: (f64, f64), t: i64| Exposition {
            samples: vec![
                sample("op_lat_sum", "d=\"a\"", a.0, t),
                sample("op_lat_count", "d=\"a\"", a.1, t),
                sample("op_lat_sum", "d=\"b\"", b.0, t),
                sample("op_lat_count", "d=\"b\"", b.1, t),
                sample("vol_lat", "v=\"x\"", 1e6, t),
                sample("vol_lat", "v=\"y\"", 3e6, t),
            ],
            counters: Vec::new(),
        };
        let first = s.take(&at((1.0, 100.0), (2.0, 100.0), 1_000), 0);
        assert_eq!((first[0].samples, first[0].count), (0, 0.0));
        assert!(first[0].latency && !first[0].missing);
        // The lifetime mean so far: 3 s over 200 I/Os.
        assert_eq!(first[0].last, Some(15.0));
        // 100 I/Os at 1 ms on a, 300 at 3 ms on b: 1.0 s over 400 I/Os, 2.5 ms (a mean
        // of the two means would say 2 ms).
        let second = s.take(&at((1.1, 200.0), (2.9, 400.0), 2_000), 0);
        assert_eq!(second[0].count, 400.0);
        assert!((second[0].amount - 1.0).abs() < 1e-12);
        assert!((second[0].rates().value.unwrap() - 2.5).abs() < 1e-9);
        // The gauge in ns: the volumes' mean, 2 ms, weighted by the 1 s it was held.
        assert_eq!(second[1].count, 1.0);
        assert!((second[1].rates().value.unwrap() - 2.0).abs() < 1e-9);
        // The same time again: nothing, and the next span covers it all.
        let same = s.take(&at((9.0, 900.0), (9.0, 900.0), 2_000), 0);
        assert_eq!(
            (same[0].samples, same[0].count, same[0].amount),
            (0, 0.0, 0.0)
        );
        assert_eq!(same[0].rates().value, None);
        // No I/O counted: no latency (not 0 ms), though time passed.
        let idle = s.take(&at((1.1, 200.0), (2.9, 400.0), 3_000), 0);
        assert_eq!((idle[0].samples, idle[0].span_s), (1, 1.0));
        assert_eq!(idle[0].rates().value, None);
        // A reset (the exporter restarted): counted from zero, 0.5 s over 100 I/Os.
        let reset = s.take(&at((0.25, 50.0), (0.25, 50.0), 4_000), 0);
        assert_eq!(reset[0].count, 100.0);
        assert!((reset[0].rates().value.unwrap() - 5.0).abs() < 1e-9);
        // Spans add up as sums: 1.0 + 0.5 s over 400 + 100 I/Os, 3 ms.
        let mut all = second[0].clone();
        for x in [&same[0], &idle[0], &reset[0]] {
            all += x;
        }
        assert!((all.rates().value.unwrap() - 3.0).abs() < 1e-9);
        // Neither the pair nor the gauge: missing.
        let none = s.take(&Exposition::default(), 5_000);
        assert!(none[0].missing && none[1].missing);
    }

    #[test]
    fn presets_name_valid_metrics() {
        for p in PRESETS.split(", ") {
            for m in preset(p).unwrap() {
                parse_metric(&m).unwrap();
            }
        }
        assert!(preset("gluster").is_none());
        assert_eq!(
            parse_metric("latency_ns:longhorn_volume_read_latency").unwrap(),
            ("longhorn_volume_read_latency".into(), Kind::Latency(1e-9))
        );
        assert_eq!(
            parse_metric("latency:x").unwrap(),
            ("x".into(), Kind::Latency(1.0))
        );
        assert!(parse_metric("latency_ps:x").is_err());
        assert!(parse_metric("iops:").is_err());
        assert!(parse_metric("9lives").is_err());
    }

    proptest! {
        /// Any text is read or refused without a panic, and sample lines written from
        /// parts read back as those parts.
        #[test]
        fn the_parser_never_panics_and_reads_back_what_it_is_given(
            text in "\\PC{0,200}",
            name in "[a-z_][a-z0-9_]{0,20}",
            label in "[ -~]{0,20}",
            value in -1e12f64..1e12,
            at in proptest::option::of(0i64..4_000_000_000_000),
        ) {
            let _ = parse_exposition(&text);
            let escaped = label.replace('\\', "\\\\").replace('"', "\\\"");
            let line = match at {
                Some(t) => format!("{name}{{l=\"{escaped}\"}} {value:e} {t}"),
                None => format!("{name}{{l=\"{escaped}\"}} {value:e}"),
            };
            let e = parse_exposition(&line).unwrap();
            prop_assert_eq!(e.samples.len(), 1);
            prop_assert_eq!(&e.samples[0].name, &name);
            prop_assert_eq!(e.samples[0].value, value);
            prop_assert_eq!(e.samples[0].at_ms, at);
        }
    }
}
