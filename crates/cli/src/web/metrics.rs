//! `--metrics-listen ADDR`: the run as OpenMetrics 1.0 text (or Prometheus text 0.0.4
//! when the scraper asks only for that), for Prometheus and Grafana while a run goes.
//!
//! An `Observer` folds each interval into a registry of metric families (fleet and per
//! host, per direction: I/O and byte counters, IOPS and throughput gauges, a latency
//! summary; plus the interval index, warm-up flag, hosts lost and generator warnings)
//! and renders both text formats once per interval. The listener (`crate::web::http`, with
//! `crate::web::access` deciding who may ask) answers each request with the latest
//! rendering: `GET /metrics` (and `HEAD`) only, other paths 404, other methods 405;
//! with `--ui`, `GET /` and `GET /events` are the live view's (`crate::web::live_web`). The encoding is done by the `fastmetrics` crate, which writes
//! both exposition formats and lets a summary be defined outside it; `prometheus-client`
//! has neither a summary type nor the 0.0.4 text format (see docs/metrics.md). HTTP
//! requests are parsed by `httparse` in `crate::web::http`, shared with `iofleet serve`.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use fastmetrics::encoder::{EncodeLabelSet, EncodeMetric, LabelSetEncoder, MetricEncoder};
use fastmetrics::format::text::{self, TextProfile};
use fastmetrics::metrics::counter::Counter;
use fastmetrics::metrics::family::Family;
use fastmetrics::metrics::gauge::Gauge;
use fastmetrics::raw::quantile::Quantile;
use fastmetrics::raw::{LabelSetSchema, MetricLabelSet, MetricType, TypedMetric};
use fastmetrics::registry::{Metric, Registry, Unit};
use iofleet_fleet::{IntervalSnapshot, Observer};
use iofleet_stats::brief::OpsBrief;
use iofleet_stats::Sample;

use crate::exit::Exit;
use crate::web::access::Access;
use crate::web::http::{self, Limits, Reply, Request};
use crate::web::live_web::LiveSite;

/// Content types of the two exposition formats.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Latency quantiles of the summaries.
const QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];

/// Fleets of more hosts get no per-host series: fourteen series a host make 50,000
/// hosts' page about 86 MB, rendered every interval and read whole by every scrape —
/// more than the run's own merge costs — and more series than a Prometheus server
/// wants from one target. The fleet's series and `iofleet_hosts` stay; per-host figures
/// are in the result and the live view.
pub const MAX_HOST_SERIES: usize = 1_000;

/// The latest rendering in both formats.
#[derive(Debug, Clone)]
struct Pages {
    openmetrics: String,
    text: String,
}

impl Pages {
    /// Both pages, each in a buffer sized from the last pages' lengths (`last`): the
    /// pages of a large fleet run to megabytes, and growing a buffer by doubling held up
    /// to three times that at once.
    fn render(regs: &Registries, last: (usize, usize)) -> Pages {
        let room = |len: usize| len + len / 16;
        let mut openmetrics = String::with_capacity(room(last.0));
        let mut text = String::with_capacity(room(last.1));
        // Writing into a String fails only on an invalid registry, which `Families::new`
        // would have refused; an empty page is the safe answer if it ever happens.
        if text::encode(&mut openmetrics, &regs.openmetrics, TextProfile::default()).is_err() {
            openmetrics = "# EOF\n".into();
        }
        if text::encode(&mut text, &regs.text, TextProfile::PrometheusV0_0_4).is_err() {
            text.clear();
        }
        Pages { openmetrics, text }
    }
}

/// The same metrics registered twice, once per format: in OpenMetrics a counter family
/// is named without `_total` (its sample gets the suffix), in Prometheus text 0.0.4 the
/// family carries it; both registries hold the same metric handles, so a scraper sees
/// the same series names and values in either format.
#[derive(Default)]
struct Registries {
    openmetrics: Registry,
    text: Registry,
}

impl Registries {
    fn register<M: Metric + Clone>(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        metric: &M,
    ) -> fastmetrics::error::Result<()> {
        self.openmetrics.register_metric(
            name.to_string(),
            help.to_string(),
            unit.clone(),
            metric.clone(),
        )?;
        if M::TYPE == MetricType::Counter {
            let unit = unit.map(|u| format!("_{}", u.as_str())).unwrap_or_default();
            self.text.register_metric(
                format!("{name}{unit}_total"),
                help.to_string(),
                None::<Unit>,
                metric.clone(),
            )?;
        } else {
            self.text
                .register_metric(name.to_string(), help.to_string(), unit, metric.clone())?;
        }
        Ok(())
    }
}

pub struct Metrics {
    pages: Arc<Mutex<Pages>>,
    registries: Registries,
    families: Families,
    /// Intervals of the command's earlier runs (rounds, steps): `iofleet_interval_index`
    /// counts on across them, as the counters do.
    intervals_before: u32,
    /// Intervals seen so far, this run's included.
    intervals_seen: u32,
}

impl Metrics {
    /// Start serving on `listener` to whom `access` admits (no samples until the first
    /// interval). With `ui`, the live view's page and events are served there too.
    pub fn serve(
        listener: TcpListener,
        access: Access,
        ui: Option<LiveSite>,
    ) -> Result<Metrics, Exit> {
        let metrics = Metrics::new().map_err(|e| Exit {
            code: 1,
            message: format!("--metrics-listen: {e}"),
        })?;
        let serve = metrics.pages.clone();
        http::serve(listener, access, Limits::default(), move |r: &Request| {
            if let Some(answer) = ui.as_ref().and_then(|ui| ui.answer(r)) {
                return answer;
            }
            let page = serve.lock().unwrap_or_else(|p| p.into_inner()).clone();
            respond(&r.path, r.accept.as_deref(), &page).into()
        });
        Ok(metrics)
    }

    fn new() -> fastmetrics::error::Result<Metrics> {
        let mut registries = Registries::default();
        let families = Families::new(&mut registries)?;
        // Until the first interval the page has no samples rather than made-up zeros
        // (the plain gauges would render as 0).
        let pages = Pages::render(&Registries::default(), (0, 0));
        Ok(Metrics {
            pages: Arc::new(Mutex::new(pages)),
            registries,
            families,
            intervals_before: 0,
            intervals_seen: 0,
        })
    }

    /// The latest rendering in OpenMetrics and Prometheus text.
    #[cfg(test)]
    fn pages(&self) -> Pages {
        self.pages.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Observer for Metrics {
    fn started(&mut self, _info: &iofleet_stats::result::RunInfo) {
        self.intervals_before = self.intervals_seen;
    }

    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        let index = self.intervals_before + snap.row.index;
        self.intervals_seen = index + 1;
        self.families.record(snap, index);
        let last = {
            let shown = self.pages.lock().unwrap_or_else(|p| p.into_inner());
            (shown.openmetrics.len(), shown.text.len())
        };
        let pages = Pages::render(&self.registries, last);
        *self.pages.lock().unwrap_or_else(|p| p.into_inner()) = pages;
    }
}

// ---------------------------------------------------------------------------------
// Metric families.

/// Labels of a fleet-wide series.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct FleetLabels {
    direction: &'static str,
}

impl LabelSetSchema for FleetLabels {
    fn names() -> Option<&'static [&'static str]> {
        Some(&["direction"])
    }
}

impl EncodeLabelSet for FleetLabels {
    fn encode(&self, encoder: &mut dyn LabelSetEncoder) -> fastmetrics::error::Result<()> {
        encoder.encode(&("direction", self.direction))
    }
}

/// Labels of a per-host series.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct HostLabels {
    host: String,
    direction: &'static str,
}

impl LabelSetSchema for HostLabels {
    fn names() -> Option<&'static [&'static str]> {
        Some(&["host", "direction"])
    }
}

impl EncodeLabelSet for HostLabels {
    fn encode(&self, encoder: &mut dyn LabelSetEncoder) -> fastmetrics::error::Result<()> {
        encoder.encode(&("host", self.host.as_str()))?;
        encoder.encode(&("direction", self.direction))
    }
}

/// A summary: latency quantiles of the latest interval (NaN when it completed no I/O),
/// with the count and sum of latencies since the fleet was released.
#[derive(Debug, Default, Clone)]
struct Summary(Arc<Mutex<SummaryState>>);

#[derive(Debug, Default)]
struct SummaryState {
    quantiles: Vec<Quantile>,
    count: u64,
    sum_ns: u128,
}

impl Summary {
    fn record(&self, s: &OpsBrief) {
        let mut st = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let quantiles_ns = [s.p50_ns, s.p90_ns, s.p99_ns, s.p99_9_ns];
        st.quantiles = QUANTILES
            .iter()
            .zip(quantiles_ns)
            .map(|(&q, ns)| {
                let v = if s.ios == 0 {
                    f64::NAN
                } else {
                    ns as f64 / 1e9
                };
                Quantile::new(q, v)
            })
            .collect();
        st.count += s.ios;
        st.sum_ns += s.latency_sum_ns;
    }
}

impl TypedMetric for Summary {
    const TYPE: MetricType = MetricType::Summary;
}

impl MetricLabelSet for Summary {
    type LabelSet = ();
}

impl EncodeMetric for Summary {
    fn encode(&self, encoder: &mut dyn MetricEncoder) -> fastmetrics::error::Result<()> {
        let st = self.0.lock().unwrap_or_else(|p| p.into_inner());
        encoder.encode_summary(&st.quantiles, st.sum_ns as f64 / 1e9, st.count, None)
    }
}

/// The I/O families of one scope (fleet, or per host), labelled by direction.
struct Io<L> {
    ios: Family<L, Counter>,
    bytes: Family<L, Counter>,
    errors: Family<L, Counter>,
    iops: Family<L, Gauge<f64>>,
    throughput: Family<L, Gauge<f64>>,
    latency: Family<L, Summary>,
}

impl<L> Io<L>
where
    L: LabelSetSchema + EncodeLabelSet + Clone + Eq + std::hash::Hash + Send + Sync + 'static,
{
    /// Register the families as `{prefix}_ios_total` and so on; `whose` ends each help.
    fn new(reg: &mut Registries, prefix: &str, whose: &str) -> fastmetrics::error::Result<Self> {
        let io = Io {
            ios: Family::default(),
            bytes: Family::default(),
            errors: Family::default(),
            iops: Family::default(),
            throughput: Family::default(),
            latency: Family::default(),
        };
        reg.register(
            &format!("{prefix}_ios"),
            &format!("I/Os completed since the fleet was released (warm-up included), {whose}"),
            None,
            &io.ios,
        )?;
        reg.register(
            &format!("{prefix}_io"), // + unit: {prefix}_io_bytes_total
            &format!("Bytes moved by completed I/Os since the fleet was released, {whose}"),
            Some(Unit::Bytes),
            &io.bytes,
        )?;
        reg.register(
            &format!("{prefix}_io_errors"),
            &format!("I/Os that failed since the fleet was released, {whose}"),
            None,
            &io.errors,
        )?;
        reg.register(
            &format!("{prefix}_iops"),
            &format!("Completed I/Os per second over the latest interval, {whose}"),
            None,
            &io.iops,
        )?;
        reg.register(
            &format!("{prefix}_throughput_bytes_per_second"),
            &format!("Bytes per second moved over the latest interval, {whose}"),
            None,
            &io.throughput,
        )?;
        reg.register(
            &format!("{prefix}_latency"), // + unit: {prefix}_latency_seconds
            &format!(
                "Completion latency: quantiles of the latest interval from merged histograms \
                 (NaN without I/O), count and sum since the fleet was released, {whose}"
            ),
            Some(Unit::Seconds),
            &io.latency,
        )?;
        Ok(io)
    }

    /// Fold in one interval's figures of one direction (a brief: every quantile the
    /// summary shows, exact, and the counters), `secs` long.
    fn record(&self, labels: &L, s: &OpsBrief, secs: f64) {
        let rate = |x: u64| {
            if secs > 0.0 {
                x as f64 / secs
            } else {
                f64::NAN
            }
        };
        self.ios.with_or_new(labels, |c| c.inc_by(s.ios));
        self.bytes.with_or_new(labels, |c| c.inc_by(s.bytes));
        self.errors.with_or_new(labels, |c| c.inc_by(s.errors));
        self.iops.with_or_new(labels, |g| g.set(rate(s.ios)));
        self.throughput
            .with_or_new(labels, |g| g.set(rate(s.bytes)));
        self.latency.with_or_new(labels, |l| l.record(s));
    }
}

/// Every family the exporter serves.
struct Families {
    fleet: Io<FleetLabels>,
    host: Io<HostLabels>,
    interval_index: Gauge<i64>,
    warmup: Gauge<i64>,
    hosts: Gauge<i64>,
    hosts_lost: Gauge<i64>,
    generator_warnings: Gauge<f64>,
    generator_cpu_wait: Gauge<f64>,
    other_load: Gauge<f64>,
}

impl Families {
    fn new(reg: &mut Registries) -> fastmetrics::error::Result<Self> {
        let f = Families {
            fleet: Io::new(reg, "iofleet", "fleet-wide, per direction.")?,
            host: Io::new(reg, "iofleet_host", "per host and direction.")?,
            interval_index: Gauge::default(),
            warmup: Gauge::default(),
            hosts: Gauge::default(),
            hosts_lost: Gauge::default(),
            generator_warnings: Gauge::default(),
            generator_cpu_wait: Gauge::default(),
            other_load: Gauge::default(),
        };
        reg.register(
            "iofleet_interval_index",
            "Index of the latest finished interval (0 is the first, warm-up included), \
             counting on across the rounds or steps of one command.",
            None,
            &f.interval_index,
        )?;
        reg.register(
            "iofleet_warmup",
            "1 while the latest interval belongs to the warm-up, 0 once measuring.",
            None,
            &f.warmup,
        )?;
        reg.register("iofleet_hosts", "Hosts in the fleet.", None, &f.hosts)?;
        reg.register(
            "iofleet_hosts_lost",
            "Hosts lost before the end of the latest interval.",
            None,
            &f.hosts_lost,
        )?;
        reg.register(
            "iofleet_generator_warnings",
            "Warnings of the generator self-check in the latest interval (NaN when the \
             engine runs in simulated time and has no self-check).",
            None,
            &f.generator_warnings,
        )?;
        reg.register(
            "iofleet_generator_cpu_wait_ratio",
            "Share (0..1) of the latest interval the I/O threads spent runnable but waiting \
             for a CPU (NaN without schedstats or a self-check).",
            None,
            &f.generator_cpu_wait,
        )?;
        reg.register(
            "iofleet_host_other_load_cpus",
            "CPUs' worth used by other processes than iofleet in the latest interval, on the \
             busiest host (NaN when not measured).",
            None,
            &f.other_load,
        )?;
        Ok(f)
    }

    /// Fold in one interval, `index` since the command's first (the run's own index
    /// when it is the command's only run).
    fn record(&self, snap: &IntervalSnapshot<'_>, index: u32) {
        let secs = snap.row.duration_s;
        // The fleet: every worker reported here, and what relays merged per group.
        let mut fleet = Sample::default();
        snap.workers.iter().for_each(|w| fleet += w);
        snap.relayed.groups.iter().for_each(|g| fleet += g);
        for (direction, s) in [("read", fleet.read()), ("write", fleet.write())] {
            self.fleet
                .record(&FleetLabels { direction }, &OpsBrief::of(&s), secs);
        }
        // Each host: its workers' brief, or, below a relay, the one its relay sent.
        if snap.hosts.len() > MAX_HOST_SERIES {
            self.interval_gauges(snap, index);
            return;
        }
        let n_streams = snap.layout.streams.len();
        let per_host = iofleet_stats::fold::sum_by_host(
            snap.workers,
            snap.worker_host,
            snap.hosts.len(),
            n_streams,
        );
        let briefs = iofleet_stats::brief::briefs_of(&per_host, &snap.relayed.hosts);
        for (name, host) in snap.hosts.iter().zip(&briefs) {
            for (direction, s) in [("read", &host.read), ("write", &host.write)] {
                let labels = HostLabels {
                    host: name.clone(),
                    direction,
                };
                self.host.record(&labels, s, secs);
            }
        }
        self.interval_gauges(snap, index);
    }

    /// The gauges of interval `index`: where the run is, its hosts, its generator.
    fn interval_gauges(&self, snap: &IntervalSnapshot<'_>, index: u32) {
        self.interval_index.set(i64::from(index));
        self.warmup.set(i64::from(snap.row.warmup));
        self.hosts.set(snap.hosts.len() as i64);
        self.hosts_lost.set(i64::from(snap.row.hosts_lost));
        self.generator_warnings.set(match &snap.row.generator {
            Some(g) => g.warnings.len() as f64,
            None => f64::NAN,
        });
        let g = snap.row.generator.as_ref();
        self.generator_cpu_wait
            .set(g.and_then(|g| g.runq_pct).map_or(f64::NAN, |q| q / 100.0));
        self.other_load
            .set(g.and_then(|g| g.other_load_cpus).unwrap_or(f64::NAN));
    }
}

// ---------------------------------------------------------------------------------
// HTTP.

/// The answer to a GET (or HEAD) of `path` with the scraper's `Accept` header.
fn respond(path: &str, accept: Option<&str>, pages: &Pages) -> Reply {
    let path = path.split(['?', '#']).next().unwrap_or("");
    if path != "/metrics" {
        return Reply::plain("404 Not Found", "", "not found: only /metrics is served\n");
    }
    let (content_type, body) = if wants_openmetrics(accept) {
        (OPENMETRICS, pages.openmetrics.clone())
    } else {
        (PROMETHEUS_TEXT, pages.text.clone())
    };
    Reply {
        status: "200 OK",
        content_type,
        headers: "X-Content-Type-Options: nosniff\r\n".into(),
        body,
    }
}

/// Whether an `Accept` header is answered in OpenMetrics: yes unless it rates plain
/// text above OpenMetrics (a scraper that asks only for `text/plain`). No header, `*/*`
/// and media types we do not serve get OpenMetrics.
fn wants_openmetrics(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return true };
    let (mut om, mut txt) = (0.0f64, 0.0f64);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| {
                let (k, v) = p.split_once('=')?;
                (k.trim().eq_ignore_ascii_case("q"))
                    .then(|| v.trim().parse::<f64>().ok())
                    .flatten()
            })
            .next()
            .unwrap_or(1.0);
        match media.as_str() {
            "application/openmetrics-text" | "application/*" => om = om.max(q),
            "text/plain" | "text/*" => txt = txt.max(q),
            "*/*" => {
                om = om.max(q);
                txt = txt.max(q);
            }
            _ => {}
        }
    }
    txt <= om
}

#[cfg(test)]
mod tests {
    use super::*;

    use iofleet_fleet::observer::RelayedParts;
    use iofleet_stats::fold::Layout;
    use iofleet_stats::result::IntervalRow;
    use iofleet_stats::StreamStats;

    fn pages() -> Pages {
        Pages {
            openmetrics: "om\n# EOF\n".into(),
            text: "text\n".into(),
        }
    }

    #[test]
    fn negotiation_prefers_openmetrics_unless_only_text_is_asked_for() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert!(wants_openmetrics(Some(prometheus)));
        assert!(wants_openmetrics(None));
        assert!(wants_openmetrics(Some("*/*")));
        assert!(wants_openmetrics(Some("application/json")));
        assert!(!wants_openmetrics(Some("text/plain;version=0.0.4")));
        assert!(!wants_openmetrics(Some("text/plain, */*;q=0.5")));
        assert!(!wants_openmetrics(Some(
            "application/openmetrics-text;q=0, text/plain"
        )));
        assert!(!wants_openmetrics(Some(
            "application/openmetrics-text;q=0.2, TEXT/PLAIN;q=0.9"
        )));
    }

    #[test]
    fn routes_paths() {
        let p = pages();
        let r = respond("/metrics", None, &p);
        assert_eq!((r.status, r.content_type), ("200 OK", OPENMETRICS));
        assert_eq!(r.body, p.openmetrics);
        let r = respond("/metrics?x=1", Some("text/plain"), &p);
        assert_eq!((r.status, r.content_type), ("200 OK", PROMETHEUS_TEXT));
        assert_eq!(r.body, p.text);
        assert_eq!(respond("/", None, &p).status, "404 Not Found");
        assert_eq!(respond("/metricsx", None, &p).status, "404 Not Found");
    }

    /// A sample of `ios` reads of `bs` bytes at `lat_ns` each, and no writes.
    fn reads(ios: u64, bs: u64, lat_ns: u64) -> Sample {
        let mut st = StreamStats::default();
        for _ in 0..ios {
            st.read.record(lat_ns, bs);
        }
        Sample { streams: vec![st] }
    }

    fn row(index: u32) -> IntervalRow {
        IntervalRow::from_sample(index, index as f64, 1.0, index == 0, 0, &Sample::default())
    }

    fn value(page: &str, series: &str) -> f64 {
        page.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("{series} in\n{page}"))
            .parse()
            .unwrap()
    }

    #[test]
    fn intervals_become_counters_gauges_and_summaries() {
        let mut m = Metrics::new().unwrap();
        assert_eq!(
            m.pages().openmetrics,
            "# EOF\n",
            "no samples before an interval"
        );
        let hosts = ["a\"b".to_string(), "c".to_string()];
        let workers = [reads(10, 4096, 1_000_000), reads(30, 4096, 3_000_000)];
        for index in 0..2 {
            m.interval(&IntervalSnapshot {
                row: &row(index),
                workers: &workers,
                disks: &[vec![workers[0].clone()], vec![workers[1].clone()]],
                hosts: &hosts,
                worker_host: &[0, 1],
                usage: &[None, None],
                generator: None,
                host_lost_s: &[None, None],
                layout: &Layout::default(),
                relayed: &Default::default(),
                stopped_at: None,
                ran_through: true,
            });
        }
        let p = m.pages();
        let om = &p.openmetrics;
        assert!(om.ends_with("# EOF\n"), "{om}");
        assert!(om.contains("# TYPE iofleet_ios counter"), "{om}");
        assert!(
            om.contains("# TYPE iofleet_latency_seconds summary"),
            "{om}"
        );
        assert!(
            om.contains("# UNIT iofleet_latency_seconds seconds"),
            "{om}"
        );
        // Counters add up over intervals; gauges hold the latest interval.
        assert_eq!(value(om, "iofleet_ios_total{direction=\"read\"}"), 80.0);
        assert_eq!(value(om, "iofleet_ios_total{direction=\"write\"}"), 0.0);
        assert_eq!(
            value(om, "iofleet_io_bytes_total{direction=\"read\"}"),
            80.0 * 4096.0
        );
        assert_eq!(value(om, "iofleet_iops{direction=\"read\"}"), 40.0);
        assert_eq!(
            value(om, "iofleet_host_iops{host=\"c\",direction=\"read\"}"),
            30.0
        );
        // Label values are escaped, not rewritten.
        assert_eq!(
            value(om, "iofleet_host_iops{host=\"a\\\"b\",direction=\"read\"}"),
            10.0
        );
        // Quantiles from the merged fleet histogram: 3/4 of the I/Os took 3 ms.
        let p99 = value(
            om,
            "iofleet_latency_seconds{direction=\"read\",quantile=\"0.99\"}",
        );
        assert!((p99 - 0.003).abs() < 0.0002, "{p99}");
        let p50 = value(
            om,
            "iofleet_latency_seconds{direction=\"read\",quantile=\"0.5\"}",
        );
        assert!((p50 - 0.003).abs() < 0.0002, "{p50}");
        assert_eq!(
            value(om, "iofleet_latency_seconds_count{direction=\"read\"}"),
            80.0
        );
        let sum = value(om, "iofleet_latency_seconds_sum{direction=\"read\"}");
        assert!((sum - 2.0 * (0.01 + 0.09)).abs() < 1e-9, "{sum}");
        // A direction without I/O has unknown quantiles, not zeros.
        assert!(value(
            om,
            "iofleet_latency_seconds{direction=\"write\",quantile=\"0.99\"}"
        )
        .is_nan());
        assert_eq!(value(om, "iofleet_interval_index"), 1.0);
        assert_eq!(value(om, "iofleet_warmup"), 0.0);
        assert_eq!(value(om, "iofleet_hosts"), 2.0);
        assert!(value(om, "iofleet_generator_warnings").is_nan());
        assert!(value(om, "iofleet_generator_cpu_wait_ratio").is_nan());
        assert!(value(om, "iofleet_host_other_load_cpus").is_nan());

        // The same figures in Prometheus text 0.0.4, without the OpenMetrics trailer.
        let txt = &p.text;
        assert!(!txt.contains("# EOF"), "{txt}");
        assert!(!txt.contains("# UNIT"), "{txt}");
        assert_eq!(value(txt, "iofleet_ios_total{direction=\"read\"}"), 80.0);
        assert!(
            txt.contains("# TYPE iofleet_latency_seconds summary"),
            "{txt}"
        );
    }

    /// Host c below a relay (its worker zero here; its sample in the relayed group and
    /// its brief): the same page, counters, gauges and quantiles, as the flat run's.
    /// Past `MAX_HOST_SERIES` hosts the page keeps the fleet's series and gauges, and
    /// serves no host's series; at the limit it serves every host's.
    #[test]
    fn a_fleet_past_the_host_limit_has_no_per_host_series() {
        for (n, per_host) in [(MAX_HOST_SERIES, true), (MAX_HOST_SERIES + 1, false)] {
            let mut m = Metrics::new().unwrap();
            let hosts: Vec<String> = (0..n).map(|h| format!("h{h}")).collect();
            let workers = vec![reads(2, 4096, 1_000_000); n];
            let worker_host: Vec<usize> = (0..n).collect();
            m.interval(&IntervalSnapshot {
                row: &row(0),
                workers: &workers,
                disks: &[],
                hosts: &hosts,
                worker_host: &worker_host,
                usage: &vec![None; n],
                generator: None,
                host_lost_s: &vec![None; n],
                layout: &Layout::default(),
                relayed: &Default::default(),
                stopped_at: None,
                ran_through: true,
            });
            let om = m.pages().openmetrics;
            assert_eq!(value(&om, "iofleet_hosts"), n as f64);
            assert_eq!(value(&om, "iofleet_interval_index"), 0.0);
            assert_eq!(
                value(&om, "iofleet_ios_total{direction=\"read\"}"),
                2.0 * n as f64,
                "the fleet's series stay"
            );
            assert_eq!(om.contains("host=\"h0\""), per_host, "{n} hosts");
        }
    }

    #[test]
    fn hosts_below_a_relay_are_served_as_flat_ones() {
        let hosts = ["a".to_string(), "c".to_string()];
        let workers = [reads(10, 4096, 1_000_000), reads(30, 8192, 3_000_000)];
        let below = [workers[0].clone(), Sample::new(1)];
        let (workers, below): (&[Sample], &[Sample]) = (&workers, &below);
        let relayed = RelayedParts {
            groups: vec![workers[1].clone()],
            hosts: vec![iofleet_stats::brief::HostBrief::of(1, &workers[1], None)],
        };
        let (mut flat, mut tree) = (Metrics::new().unwrap(), Metrics::new().unwrap());
        let layout = Layout::default();
        let snap = |row, workers, relayed| IntervalSnapshot {
            row,
            workers,
            disks: &[],
            hosts: &hosts,
            worker_host: &[0, 1],
            usage: &[None, None],
            generator: None,
            host_lost_s: &[None, None],
            layout: &layout,
            relayed,
            stopped_at: None,
            ran_through: true,
        };
        let nothing = RelayedParts::default();
        let rows = [row(0), row(1)];
        for r in &rows {
            flat.interval(&snap(r, workers, &nothing));
            tree.interval(&snap(r, below, &relayed));
        }
        let (flat, tree) = (flat.pages(), tree.pages());
        // Series come in hash order: compare the pages' lines as sets.
        let lines = |page: &str| {
            let mut l: Vec<String> = page.lines().map(str::to_string).collect();
            l.sort();
            l
        };
        assert_eq!(lines(&tree.openmetrics), lines(&flat.openmetrics));
        assert_eq!(lines(&tree.text), lines(&flat.text));
        let om = &tree.openmetrics;
        assert_eq!(value(om, "iofleet_ios_total{direction=\"read\"}"), 80.0);
        assert_eq!(
            value(
                om,
                "iofleet_host_io_bytes_total{host=\"c\",direction=\"read\"}"
            ),
            60.0 * 8192.0
        );
        let p99 = value(
            om,
            "iofleet_host_latency_seconds{host=\"c\",direction=\"read\",quantile=\"0.99\"}",
        );
        assert!((p99 - 0.003).abs() < 0.0002, "{p99}");
    }
}
