//! fio's JSON output layout (`fio --output-format=json` and `json+`), written from
//! iofleet's own result, so tools that read fio's JSON (plotting scripts, fio's
//! `fio_jsonplus_clat2csv`, dashboards) read iofleet's runs. Every number is one of
//! iofleet's figures converted to fio's unit, or a count of iofleet's histogram moved
//! into fio's bucket layout; a figure iofleet does not measure is absent (or, where fio
//! itself writes "nothing measured" that way, zero with `N` = 0). `docs/fio-json.md`
//! holds the field-by-field mapping.
//!
//! Shape: a run on one host gives `jobs`, one entry per worker group (what fio's
//! `group_reporting` gives per reporting group). A run across several hosts gives fio's
//! client/server shape instead: `client_stats`, one entry per host that ran workers and
//! an `All clients` entry for the fleet. With the histograms of the results store,
//! every entry's percentiles (fio's default list), bins and latency ranges are read
//! from its own merged histograms (fleet, host or group); without them, entries carry
//! the percentiles iofleet's result holds (p50 … p99.99) and no bins or ranges.
//!
//! This module formats; it neither measures nor merges. The histograms come from the
//! caller (the results store), because the result itself holds none.

use std::io::{self, Write};

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use iofleet_profile::{Plan, RecordedPlan};
use iofleet_stats::result::{
    median_candidates, ErrorDetail, IntervalOps, IntervalRow, PartIntervals, RunResult,
};
use iofleet_stats::{LatencyHist, LatencySummary, OpSummary};

/// fio's histogram geometry: 2^6 buckets per power of two, 29 groups (`stat.h`).
pub const PLAT_BITS: u32 = 6;
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
pub const PLAT_GROUP_NR: u64 = 29;
pub const PLAT_NR: u64 = PLAT_GROUP_NR * PLAT_VAL;

/// fio's default percentile list.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Which of fio's two JSON outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioFlavor {
    /// `--output-format=json`.
    Json,
    /// `--output-format=json+`: latency bins added.
    JsonPlus,
}

/// The merged histograms of the measured phase, `[read, write]` (from the results
/// store): the fleet's, each host's (in the order of the result's `hosts`) and each
/// worker group's (in the order of its `groups`).
#[derive(Clone, Copy, Debug)]
pub struct FioHists<'a> {
    pub fleet: [&'a LatencyHist; 2],
    pub hosts: &'a [[LatencyHist; 2]],
    pub groups: &'a [[LatencyHist; 2]],
}

/// One entry's histograms, `[read, write]`.
type DirHists<'a> = [&'a LatencyHist; 2];

fn pair(h: &[LatencyHist; 2]) -> DirHists<'_> {
    [&h[0], &h[1]]
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FioJsonError {
    #[error("fio-json+ needs the run's latency histograms, which only a saved run has (run without --no-save, or export it from the results store)")]
    NoHistograms,
}

/// fio's bucket index of a latency in ns (`plat_val_to_idx`): values under 128 have a
/// bucket each; above, each power of two [2^m, 2^(m+1)) is split into 64 buckets of
/// 2^(m-6) ns; the last bucket takes everything from 2^34 ns (about 17 s) up.
pub fn plat_idx(value_ns: u64) -> u64 {
    if value_ns < 2 * PLAT_VAL {
        return value_ns;
    }
    let msb = 63 - value_ns.leading_zeros() as u64;
    let error_bits = msb - PLAT_BITS as u64;
    let base = (error_bits + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (value_ns >> error_bits);
    (base + offset).min(PLAT_NR - 1)
}

/// Lowest value and width (ns) of fio bucket `idx`.
pub fn plat_range(idx: u64) -> (u64, u64) {
    if idx < 2 * PLAT_VAL {
        return (idx, 1);
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let low = (1u64 << (error_bits + PLAT_BITS as u64)) + (idx % PLAT_VAL) * (1 << error_bits);
    (low, 1 << error_bits)
}

/// The value fio writes for bucket `idx` (`plat_idx_to_val`: the bucket's middle,
/// `low + width/2`; the value itself below 128): the key of `bins`, and the value of a
/// percentile that falls in the bucket.
pub fn plat_value(idx: u64) -> u64 {
    let (low, width) = plat_range(idx);
    low + width / 2
}

/// iofleet's histogram in fio's buckets, ascending: (fio bucket index, count). Each
/// iofleet bucket lies inside one fio bucket (iofleet's are 2^(m-10) ns wide in
/// [2^m, 2^(m+1)), 1 ns below 2048; fio's 2^(m-6), 1 ns below 128, both aligned to
/// their width), so every count moves whole and the conversion is exact; only fio's
/// last bucket, open-ended, gathers several.
pub fn fio_buckets(h: &LatencyHist) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (highest, count) in h.buckets() {
        let idx = plat_idx(highest);
        match out.last_mut() {
            Some(last) if last.0 == idx => last.1 += count,
            _ => out.push((idx, count)),
        }
    }
    out
}

/// Upper ends (exclusive) of fio's latency ranges in each unit (`io_u_mark_latency`),
/// written as the ranges' keys in `latency_ns`, `latency_us` and `latency_ms`.
const LAT_UPPER: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
/// The millisecond map's two more: 1000 to 1999 ms, and 2000 ms up.
const LAT_MS_MORE: [&str; 2] = ["2000", ">=2000"];

/// fio's latency range of a latency in ns (`io_u_mark_latency`): (unit, range). Unit 0
/// is ns (below 1 µs), 1 µs (below 1 ms, the value ÷ 1000 rounded down), 2 ms (the
/// value ÷ 10^6 rounded down); range i holds the values from the key before it (0 for
/// the first) up to below `LAT_UPPER[i]`; in ms, 10 is 1000 to 1999 and 11 the rest.
pub fn lat_range(value_ns: u64) -> (usize, usize) {
    let (unit, v) = match value_ns {
        0..=999 => (0, value_ns),
        1000..=999_999 => (1, value_ns / 1000),
        _ => (2, value_ns / 1_000_000),
    };
    let range = match LAT_UPPER.iter().position(|&u| v < u) {
        Some(i) => i,
        None if v < 2000 => 10,
        None => 11,
    };
    (unit, range)
}

/// fio's `latency_ns`, `latency_us` and `latency_ms`: the percentage of the I/Os (read
/// and write together) in each range, from iofleet's histograms. Each iofleet bucket is
/// counted whole in the range that holds its highest value (the value iofleet reports
/// for the bucket, in its percentiles too). Up to 20 µs every range edge is an edge of
/// iofleet's buckets too, so the counts are those fio would make of the same I/Os;
/// from 50 µs up an edge can fall inside an iofleet bucket (50 µs inside [49 984,
/// 50 016) ns), and that bucket's I/Os below the edge are counted in the range above:
/// I/Os within 0.1% under an edge. Nothing is split or estimated.
pub fn latency_shares(hists: DirHists<'_>) -> [Vec<(String, f64)>; 3] {
    let mut counts = [vec![0u64; 10], vec![0u64; 10], vec![0u64; 12]];
    let mut total = 0u64;
    for h in hists {
        for (highest, count) in h.buckets() {
            let (unit, range) = lat_range(highest);
            counts[unit][range] += count;
            total += count;
        }
    }
    let key = |i: usize| match LAT_UPPER.get(i) {
        Some(u) => u.to_string(),
        None => LAT_MS_MORE[i - LAT_UPPER.len()].to_string(),
    };
    counts.map(|c| {
        c.iter()
            .enumerate()
            .map(|(i, &n)| {
                let pct = if total > 0 {
                    n as f64 / total as f64 * 100.0
                } else {
                    0.0
                };
                (key(i), pct)
            })
            .collect()
    })
}

/// The percentile fio reads from its buckets (`calc_clat_percentiles`): the value of
/// the first bucket whose running count reaches p% of the total.
pub fn fio_percentile(buckets: &[(u64, u64)], p: f64) -> Option<u64> {
    let total: u64 = buckets.iter().map(|b| b.1).sum();
    let mut seen = 0u64;
    for &(idx, c) in buckets {
        seen += c;
        if seen as f64 >= p / 100.0 * total as f64 {
            return Some(plat_value(idx));
        }
    }
    None
}

/// Write the document, pretty-printed, with a final newline.
pub fn export(
    result: &RunResult,
    hists: Option<FioHists<'_>>,
    flavor: FioFlavor,
    out: &mut dyn Write,
) -> io::Result<()> {
    let doc = document(result, hists, flavor).map_err(io::Error::other)?;
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
    writeln!(out)
}

/// Several runs made one after another (the stonewall phases of a fio job file) as one
/// document, as fio writes a job file whose jobs are separated by `stonewall`: every
/// run's entries in order, the `groupid`s of each run numbered on after the previous
/// run's (fio gives each stonewall phase a new group); the header (version, time, global
/// options) is the first run's. Each run's entries are those `export` gives it.
pub fn export_phases(
    runs: &[(&RunResult, Option<FioHists<'_>>)],
    flavor: FioFlavor,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut merged: Option<Document> = None;
    let mut next_group = 0;
    for (r, hists) in runs {
        let mut d = document(r, *hists, flavor).map_err(io::Error::other)?;
        let mut top = next_group;
        for e in d.jobs.iter_mut().chain(d.client_stats.iter_mut()).flatten() {
            e.groupid += next_group;
            top = top.max(e.groupid + 1);
        }
        next_group = top;
        match &mut merged {
            None => merged = Some(d),
            Some(m) => {
                append(&mut m.jobs, d.jobs);
                append(&mut m.client_stats, d.client_stats);
            }
        }
    }
    serde_json::to_writer_pretty(&mut *out, &merged).map_err(io::Error::other)?;
    writeln!(out)
}

fn append(to: &mut Option<Vec<Job>>, more: Option<Vec<Job>>) {
    match (to.as_mut(), more) {
        (Some(v), Some(m)) => v.extend(m),
        (None, Some(m)) => *to = Some(m),
        (_, None) => {}
    }
}

/// The document as a JSON value.
pub fn to_value(
    result: &RunResult,
    hists: Option<FioHists<'_>>,
    flavor: FioFlavor,
) -> Result<serde_json::Value, FioJsonError> {
    let doc = document(result, hists, flavor)?;
    Ok(serde_json::to_value(doc).unwrap_or(serde_json::Value::Null))
}

/// Options as fio writes them: string values, in the order given.
#[derive(Clone, Debug, Default)]
struct Options(Vec<(&'static str, String)>);

impl Options {
    fn put(&mut self, k: &'static str, v: impl Into<String>) {
        self.0.retain(|(key, _)| *key != k);
        self.0.push((k, v.into()));
    }

    fn remove(&mut self, k: &str) {
        self.0.retain(|(key, _)| *key != k);
    }
}

impl Serialize for Options {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A map keyed by numbers written as strings, in ascending order (`"99.000000"`, a
/// bucket's value in ns, a latency range's upper end).
#[derive(Clone, Debug)]
struct NumMap<V = u64>(Vec<(String, V)>);

impl<V: Serialize> Serialize for NumMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

#[derive(Serialize)]
struct Document {
    #[serde(rename = "fio version")]
    fio_version: String,
    timestamp: i64,
    timestamp_ms: i64,
    time: String,
    #[serde(rename = "global options")]
    global_options: Options,
    #[serde(skip_serializing_if = "Option::is_none")]
    jobs: Option<Vec<Job>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_stats: Option<Vec<Job>>,
}

#[derive(Serialize)]
struct Job {
    jobname: String,
    groupid: u32,
    error: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    hostname: Option<String>,
    #[serde(rename = "job options")]
    job_options: Options,
    read: Dir,
    write: Dir,
    trim: Dir,
    sync: Sync,
    job_runtime: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    usr_cpu: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sys_cpu: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_ns: Option<NumMap<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_us: Option<NumMap<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_ms: Option<NumMap<f64>>,
}

#[derive(Serialize)]
struct Dir {
    io_bytes: u64,
    io_kbytes: u64,
    bw_bytes: u64,
    bw: u64,
    iops: f64,
    runtime: u64,
    total_ios: u64,
    slat_ns: Lat,
    clat_ns: Lat,
    lat_ns: Lat,
    #[serde(flatten)]
    samples: SampleStats,
}

#[derive(Serialize)]
struct SampleStats {
    bw_min: u64,
    bw_max: u64,
    bw_mean: f64,
    bw_dev: f64,
    bw_samples: u64,
    iops_min: u64,
    iops_max: u64,
    iops_mean: f64,
    iops_stddev: f64,
    iops_samples: u64,
}

#[derive(Serialize)]
struct Sync {
    total_ios: u64,
    lat_ns: Lat,
}

#[derive(Clone, Serialize, Default)]
struct Lat {
    min: u64,
    max: u64,
    mean: f64,
    stddev: f64,
    #[serde(rename = "N")]
    n: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    percentile: Option<NumMap>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bins: Option<NumMap>,
}

fn document(
    r: &RunResult,
    hists: Option<FioHists<'_>>,
    flavor: FioFlavor,
) -> Result<Document, FioJsonError> {
    if flavor == FioFlavor::JsonPlus && hists.is_none() {
        return Err(FioJsonError::NoHistograms);
    }
    let plus = flavor == FioFlavor::JsonPlus;
    let timestamp = epoch_of(&r.run.started_at).unwrap_or(0);
    let worker_hosts = r.hosts.iter().filter(|h| !h.observer).count();
    let ms = duration_ms(r.run.duration_s);
    let entries: Vec<Job> = if worker_hosts > 1 {
        client_scopes(r, hists)
    } else {
        group_scopes(r, hists)
    }
    .into_iter()
    .map(|s| job(s, plus, ms))
    .collect();
    let (jobs, client_stats) = if worker_hosts > 1 {
        (None, Some(entries))
    } else {
        (Some(entries), None)
    };
    Ok(Document {
        fio_version: format!("iofleet-{}", r.run.iofleet_version),
        timestamp,
        timestamp_ms: timestamp * 1000,
        time: ctime(timestamp),
        global_options: if worker_hosts > 1 {
            client_global_options(r)
        } else {
            global_options(r)
        },
        jobs,
        client_stats,
    })
}

/// The measured intervals that count in the IOPS median: fio's samples.
struct Samples<'a> {
    r: &'a RunResult,
    counted: Vec<u32>,
}

impl<'a> Samples<'a> {
    fn of(r: &'a RunResult) -> Self {
        let counted = median_candidates(&r.intervals, r.run.interval_s)
            .iter()
            .map(|i| i.index)
            .collect();
        Samples { r, counted }
    }

    /// The fleet's, per direction.
    fn fleet(&self) -> [Vec<IntervalOps>; 2] {
        let rows = self
            .r
            .intervals
            .iter()
            .filter(|i| self.counted.contains(&i.index));
        let rows: Vec<&IntervalRow> = rows.collect();
        [
            rows.iter().map(|i| i.read.clone()).collect(),
            rows.iter().map(|i| i.write.clone()).collect(),
        ]
    }

    /// A host's or group's (`parts` is `host_intervals` or `group_intervals`).
    fn part(&self, parts: &[PartIntervals], name: &str) -> [Vec<IntervalOps>; 2] {
        let rows: Vec<_> = parts
            .iter()
            .find(|p| p.name == name)
            .map(|p| {
                let rows = p.rows.iter();
                rows.filter(|r| self.counted.contains(&r.index)).collect()
            })
            .unwrap_or_default();
        [
            rows.iter().map(|r| r.read.clone()).collect(),
            rows.iter().map(|r| r.write.clone()).collect(),
        ]
    }
}

fn fleet_cpu(r: &RunResult) -> Option<(f64, f64)> {
    r.summary.cpu.as_ref().map(|c| (c.usr_pct, c.sys_pct))
}

/// A fleet across hosts: one entry per host that ran workers, then `All clients`.
fn client_scopes<'a>(r: &'a RunResult, hists: Option<FioHists<'a>>) -> Vec<Scope<'a>> {
    let samples = Samples::of(r);
    let plan = &r.run.plan;
    let mut scopes = Vec::new();
    for (i, h) in r.hosts.iter().enumerate().filter(|(_, h)| !h.observer) {
        let mut options = fleet_options(r);
        if let Some(n) = lanes_per_worker(plan) {
            options.put("numjobs", (n * h.workers as u64).to_string());
        }
        let on_host = |w: u32| r.workers.iter().any(|x| x.worker == w && x.host == h.host);
        scopes.push(Scope {
            name: plan.plan.name.clone(),
            groupid: 0,
            hostname: Some(h.host.clone()),
            options,
            ops: [&h.read, &h.write],
            intervals: samples.part(&r.host_intervals, &h.host),
            hists: hists.and_then(|x| x.hosts.get(i)).map(pair),
            error: first_errno(r, |d| on_host(d.worker)),
            cpu: h.cpu.as_ref().map(|c| (c.usr_pct, c.sys_pct)),
        });
    }
    scopes.push(Scope {
        name: "All clients".into(),
        groupid: 0,
        hostname: Some(r.run.hostname.clone()),
        options: fleet_options(r),
        ops: [&r.summary.read, &r.summary.write],
        intervals: samples.fleet(),
        hists: hists.map(|x| x.fleet),
        error: first_errno(r, |_| true),
        cpu: fleet_cpu(r),
    });
    scopes
}

/// A run on one host: one entry per worker group (the whole fleet for one group).
fn group_scopes<'a>(r: &'a RunResult, hists: Option<FioHists<'a>>) -> Vec<Scope<'a>> {
    let samples = Samples::of(r);
    let plans = r.run.plan.each_group();
    let whole = r.groups.len() <= 1;
    let mut scopes = Vec::new();
    for (gid, g) in r.groups.iter().enumerate() {
        let mut options = Options::default();
        options.put("name", g.name.clone());
        if let Some((_, p, _)) = plans.iter().find(|(n, _, _)| *n == g.name) {
            plan_options(&mut options, p);
        }
        engine_options(&mut options, r);
        let range = g.first_worker..g.first_worker + g.workers;
        scopes.push(Scope {
            name: g.name.clone(),
            groupid: gid as u32,
            hostname: None,
            options,
            ops: [&g.read, &g.write],
            intervals: if whole {
                samples.fleet()
            } else {
                samples.part(&r.group_intervals, &g.name)
            },
            hists: if whole {
                hists.map(|x| x.fleet)
            } else {
                hists.and_then(|x| x.groups.get(gid)).map(pair)
            },
            error: first_errno(r, |d| range.contains(&d.worker)),
            cpu: if whole { fleet_cpu(r) } else { None },
        });
    }
    scopes
}

/// What one entry covers: the whole fleet, a worker group or a host.
struct Scope<'a> {
    name: String,
    groupid: u32,
    hostname: Option<String>,
    options: Options,
    /// Read and write over the measured phase.
    ops: [&'a OpSummary; 2],
    /// Read and write over each measured interval that counts in the IOPS median.
    intervals: [Vec<IntervalOps>; 2],
    /// The scope's merged histograms, when known (from the store).
    hists: Option<DirHists<'a>>,
    error: i32,
    /// Process user and system CPU, percent of one core.
    cpu: Option<(f64, f64)>,
}

fn job(s: Scope<'_>, plus: bool, runtime_ms: u64) -> Job {
    let [read, write] = s.ops;
    let [read_iv, write_iv] = &s.intervals;
    let [latency_ns, latency_us, latency_ms] = match s.hists {
        Some(h) => latency_shares(h).map(|m| Some(NumMap(m))),
        None => [None, None, None],
    };
    Job {
        jobname: s.name,
        groupid: s.groupid,
        error: s.error,
        hostname: s.hostname,
        job_options: s.options,
        read: dir(read, read_iv, s.hists.map(|h| h[0]), plus, runtime_ms),
        write: dir(write, write_iv, s.hists.map(|h| h[1]), plus, runtime_ms),
        trim: dir(&OpSummary::default(), &[], None, false, runtime_ms),
        sync: Sync {
            total_ios: 0,
            lat_ns: Lat::default(),
        },
        job_runtime: runtime_ms,
        usr_cpu: s.cpu.map(|c| c.0),
        sys_cpu: s.cpu.map(|c| c.1),
        latency_ns,
        latency_us,
        latency_ms,
    }
}

/// fio's min, max, mean and sample standard deviation (n − 1, as fio's `calc_lat`) of
/// a series; zeros for an empty one.
fn series_stats(x: &[f64]) -> (f64, f64, f64, f64) {
    if x.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let dev = if x.len() > 1 {
        (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let min = x.iter().copied().fold(f64::INFINITY, f64::min);
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max, mean, dev)
}

/// fio's bandwidth and IOPS sample statistics over iofleet's intervals (fio samples
/// every 500 ms per job; iofleet's samples are its measured intervals of the scope that
/// count in the IOPS median, i.e. without the last one when it is cut short).
fn samples(ran: bool, iv: &[IntervalOps]) -> SampleStats {
    let iv = if ran { iv } else { &[] };
    let bw: Vec<f64> = iv.iter().map(|i| i.mbps * 1e6 / 1024.0).collect();
    let iops: Vec<f64> = iv.iter().map(|i| i.iops).collect();
    let (bw_min, bw_max, bw_mean, bw_dev) = series_stats(&bw);
    let (iops_min, iops_max, iops_mean, iops_stddev) = series_stats(&iops);
    SampleStats {
        bw_min: bw_min.round() as u64,
        bw_max: bw_max.round() as u64,
        bw_mean,
        bw_dev,
        bw_samples: bw.len() as u64,
        iops_min: iops_min.round() as u64,
        iops_max: iops_max.round() as u64,
        iops_mean,
        iops_stddev,
        iops_samples: iops.len() as u64,
    }
}

/// One direction. iofleet's latency runs from the I/O's intended issue to the
/// completion seen, i.e. fio's total latency (`lat_ns`); iofleet does not time the
/// submission apart, so `slat_ns` has N = 0 (as fio writes it for a synchronous engine)
/// and `clat_ns` carries the same figures as `lat_ns`, with the percentiles and bins
/// under it where fio puts them by default.
fn dir(
    s: &OpSummary,
    intervals: &[IntervalOps],
    hist: Option<&LatencyHist>,
    plus: bool,
    runtime_ms: u64,
) -> Dir {
    let ran = s.ios > 0;
    // iofleet's throughput (MB/s, 10^6 bytes per second) in bytes per second.
    let bw_bytes = s.mbps * 1e6;
    let clat = match &s.latency_us {
        Some(l) if ran => latency(l, s.ios, hist, plus),
        _ => Lat::default(),
    };
    // fio's lat_ns: the same figures, the distribution left under clat_ns.
    let lat_ns = Lat {
        percentile: None,
        bins: None,
        ..clat.clone()
    };
    Dir {
        io_bytes: s.bytes,
        io_kbytes: s.bytes >> 10,
        bw_bytes: bw_bytes.round() as u64,
        bw: (bw_bytes / 1024.0).round() as u64,
        iops: s.iops,
        runtime: if ran { runtime_ms } else { 0 },
        total_ios: s.ios,
        slat_ns: Lat::default(),
        clat_ns: clat,
        lat_ns,
        samples: samples(ran, intervals),
    }
}

fn ns(us: f64) -> u64 {
    (us * 1000.0).round() as u64
}

fn latency(l: &LatencySummary, n: u64, hist: Option<&LatencyHist>, plus: bool) -> Lat {
    let percentile = Some(NumMap(match hist {
        Some(h) => DEFAULT_PERCENTILES
            .iter()
            .map(|&p| (format!("{p:.6}"), h.quantile_ns(p / 100.0)))
            .collect(),
        None => [
            (50.0, l.p50),
            (90.0, l.p90),
            (95.0, l.p95),
            (99.0, l.p99),
            (99.9, l.p99_9),
            (99.99, l.p99_99),
        ]
        .iter()
        .map(|&(p, us)| (format!("{p:.6}"), ns(us)))
        .collect(),
    }));
    let bins = match (plus, hist) {
        (true, Some(h)) => Some(NumMap(
            fio_buckets(h)
                .into_iter()
                .map(|(idx, c)| (plat_value(idx).to_string(), c))
                .collect(),
        )),
        _ => None,
    };
    Lat {
        min: ns(l.min),
        max: ns(l.max),
        mean: l.mean * 1000.0,
        // fio's deviation is the sample one (n − 1); iofleet's the population one.
        stddev: if n > 1 {
            l.stddev * 1000.0 * (n as f64 / (n - 1) as f64).sqrt()
        } else {
            0.0
        },
        n,
        percentile,
        bins,
    }
}

fn duration_ms(s: f64) -> u64 {
    (s * 1000.0).round() as u64
}

/// errno of the earliest recorded failure among the workers `pick` selects; 0 without.
fn first_errno(r: &RunResult, pick: impl Fn(&ErrorDetail) -> bool) -> i32 {
    r.summary
        .errors
        .first
        .iter()
        .filter(|d| pick(d))
        .min_by(|a, b| a.t_s.total_cmp(&b.t_s))
        .map_or(0, |d| d.errno)
}

/// Job lanes (fio jobs of `iodepth` each) per worker: disks × threads per disk.
fn lanes_per_worker(p: &RecordedPlan) -> Option<u64> {
    p.groups
        .is_empty()
        .then(|| p.plan.fleet.disks_per_worker as u64 * p.plan.fleet.threads_per_disk as u64)
}

fn secs(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s}")
    }
}

fn engine_options(o: &mut Options, r: &RunResult) {
    let engine = match r.run.engine.as_str() {
        e @ ("io_uring" | "psync" | "null") => e.to_string(),
        other => format!("iofleet-{other}"),
    };
    o.put("ioengine", engine);
    o.put("direct", if r.run.direct { "1" } else { "0" });
}

fn global_options(r: &RunResult) -> Options {
    let mut o = Options::default();
    engine_options(&mut o, r);
    let t = &r.run.plan.plan.timing;
    o.put("time_based", "1");
    o.put("runtime", secs(t.duration));
    o.put("ramp_time", secs(t.warmup));
    o
}

/// The global options of the client shape. fio's client sends the same job file to
/// every server, and readers of its output (fio-plot) take the workload from the
/// document's `global options`, where such job files keep it; so for a run of one
/// profile they hold its options as one host runs them: the plan's, with `numjobs`
/// the lanes of one host (left out when the hosts run different numbers of workers).
fn client_global_options(r: &RunResult) -> Options {
    let mut o = Options::default();
    let plan = &r.run.plan;
    if let Some(n) = lanes_per_worker(plan) {
        plan_options(&mut o, &plan.plan);
        let mut per_host = r.hosts.iter().filter(|h| !h.observer).map(|h| h.workers);
        match per_host.next() {
            Some(w) if per_host.all(|x| x == w) => o.put("numjobs", (n * w as u64).to_string()),
            _ => o.remove("numjobs"),
        }
    }
    for (k, v) in global_options(r).0 {
        o.put(k, v);
    }
    o
}

/// The options of the whole fleet: the plan's when the run has one group, else those
/// every group shares.
fn fleet_options(r: &RunResult) -> Options {
    let mut o = Options::default();
    o.put("name", r.run.plan.plan.name.clone());
    if r.run.plan.groups.is_empty() {
        plan_options(&mut o, &r.run.plan.plan);
    }
    for (k, v) in global_options(r).0 {
        o.put(k, v);
    }
    o
}

/// fio's words for a plan: rw, rwmixread, percentage_random and bs of a plan of one
/// stream (several streams have no one-job equivalent and are left out); iodepth,
/// numjobs (every lane: workers × disks × threads), size (per disk, or the working
/// set as fio's percentage form), runtime and ramp_time in seconds.
fn plan_options(o: &mut Options, p: &Plan) {
    if let [s] = p.streams.as_slice() {
        let random = s.random_pct >= 100.0;
        let seq = s.random_pct <= 0.0;
        let rw = match (s.read_pct, random || !seq) {
            (r, true) if r >= 100.0 => "randread",
            (r, false) if r >= 100.0 => "read",
            (r, true) if r <= 0.0 => "randwrite",
            (r, false) if r <= 0.0 => "write",
            (_, true) => "randrw",
            (_, false) => "rw",
        };
        o.put("rw", rw);
        if s.read_pct > 0.0 && s.read_pct < 100.0 {
            o.put("rwmixread", fmt_num(s.read_pct));
        }
        if !random && !seq {
            o.put("percentage_random", fmt_num(s.random_pct));
        }
        match s.bs.entries.as_slice() {
            [(b, _)] => o.put("bs", b.to_string()),
            many => {
                let total: u64 = many.iter().map(|e| e.1 as u64).sum();
                if total == 100 {
                    let split: Vec<String> = many.iter().map(|(b, w)| format!("{b}/{w}")).collect();
                    o.put("bssplit", split.join(":"));
                }
            }
        }
        if s.working_set_pct < 100.0 {
            o.put("size", format!("{}%", fmt_num(s.working_set_pct)));
            o.put("filesize", p.fleet.disk_size.to_string());
        } else {
            o.put("size", p.fleet.disk_size.to_string());
        }
    } else {
        o.put("size", p.fleet.disk_size.to_string());
    }
    o.put("iodepth", p.fleet.qd.to_string());
    let lanes =
        p.fleet.workers as u64 * p.fleet.disks_per_worker as u64 * p.fleet.threads_per_disk as u64;
    o.put("numjobs", lanes.to_string());
    o.put("runtime", secs(p.timing.duration));
    o.put("ramp_time", secs(p.timing.warmup));
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ` (UTC).
fn epoch_of(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// `ctime`'s form, UTC: `Thu Nov 26 07:49:00 2026`.
fn ctime(epoch: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = epoch.div_euclid(86_400);
    let rem = epoch.rem_euclid(86_400);
    let (y, m, d) = iofleet_profile::units::civil_from_days(days);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {y}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values spread over every magnitude iofleet records (1 ns to ~30 s), from a
    /// fixed-seed generator.
    fn spread(n: usize) -> Vec<u64> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let mag = x % 35;
                (x >> 8) % (1u64 << mag) + 1
            })
            .collect()
    }

    #[test]
    fn buckets_follow_fios_layout() {
        // Values fio writes as bin keys in its own json+ output (fio 3.33, null engine).
        assert_eq!(plat_value(plat_idx(15)), 15);
        assert_eq!(plat_value(plat_idx(127)), 127);
        assert_eq!(plat_value(plat_idx(128)), 129);
        assert_eq!(plat_value(plat_idx(129)), 129);
        assert_eq!(plat_value(plat_idx(257)), 258);
        assert_eq!(plat_value(plat_idx(4_046_000)), 4_046_848);
        assert_eq!(plat_idx(u64::MAX), PLAT_NR - 1);
        for v in spread(20_000).into_iter().filter(|&v| v < 1 << 34) {
            let i = plat_idx(v);
            let (low, width) = plat_range(i);
            assert!(low <= v && v < low + width, "{v} not in bucket {i}");
            assert_eq!(plat_idx(low), i);
            assert_eq!(plat_idx(low + width - 1), i);
            // fio's precision: a bucket is at most 1/64 of its values wide.
            assert!(width == 1 || width * 64 <= low);
        }
    }

    #[test]
    fn histogram_moves_into_fio_buckets_exactly() {
        let values = spread(50_000);
        let mut h = LatencyHist::new();
        let mut direct = std::collections::BTreeMap::<u64, u64>::new();
        for &v in &values {
            h.record(v);
            *direct.entry(plat_idx(v)).or_default() += 1;
        }
        let converted = fio_buckets(&h);
        assert_eq!(
            converted.iter().map(|b| b.1).sum::<u64>(),
            values.len() as u64
        );
        // Each value lands in the fio bucket fio itself would have put it in.
        assert_eq!(converted, direct.into_iter().collect::<Vec<_>>());
        // A sparse histogram (as decoded from the store) converts the same.
        let back = LatencyHist::from_v2_bytes(&h.to_v2_bytes()).unwrap();
        assert_eq!(fio_buckets(&back), converted);
    }

    #[test]
    fn percentiles_from_the_bins_fall_in_the_bucket_of_iofleets() {
        let values: Vec<u64> = spread(30_000)
            .into_iter()
            .map(|v| v % 5_000_000 + 1)
            .collect();
        let mut h = LatencyHist::new();
        values.iter().for_each(|&v| h.record(v));
        let b = fio_buckets(&h);
        for p in DEFAULT_PERCENTILES {
            let ours = h.quantile_ns(p / 100.0);
            let fio = fio_percentile(&b, p).unwrap();
            assert_eq!(plat_idx(fio), plat_idx(ours), "p{p}: {fio} vs {ours}");
            let (_, width) = plat_range(plat_idx(ours));
            assert!(fio.abs_diff(ours) <= width, "p{p}: {fio} vs {ours}");
        }
    }

    #[test]
    fn latency_ranges_are_fios() {
        // fio's io_u_mark_latency: ns below 1 µs, then µs, then ms, each range from the
        // key before it up to below its own key.
        for (v, want) in [
            (0, (0, 0)),
            (1, (0, 0)),
            (2, (0, 1)),
            (9, (0, 2)),
            (10, (0, 3)),
            (999, (0, 9)),
            (1000, (1, 0)),
            (1999, (1, 0)),
            (2000, (1, 1)),
            (49_999, (1, 4)),
            (50_000, (1, 5)),
            (999_999, (1, 9)),
            (1_000_000, (2, 0)),
            (999_999_999, (2, 9)),
            (1_000_000_000, (2, 10)),
            (1_999_999_999, (2, 10)),
            (2_000_000_000, (2, 11)),
            (u64::MAX, (2, 11)),
        ] {
            assert_eq!(lat_range(v), want, "{v} ns");
        }
    }

    /// The shares fio would write for these exact latencies.
    fn direct_shares(values: &[u64]) -> [Vec<f64>; 3] {
        let mut c = [vec![0u64; 10], vec![0u64; 10], vec![0u64; 12]];
        for &v in values {
            let (u, r) = lat_range(v);
            c[u][r] += 1;
        }
        c.map(|c| {
            c.iter()
                .map(|&n| n as f64 / values.len() as f64 * 100.0)
                .collect()
        })
    }

    fn shares_of(values: &[u64], split_at: usize) -> [Vec<(String, f64)>; 3] {
        let (mut r, mut w) = (LatencyHist::new(), LatencyHist::new());
        for (i, &v) in values.iter().enumerate() {
            if i < split_at {
                r.record(v)
            } else {
                w.record(v)
            }
        }
        latency_shares([&r, &w])
    }

    #[test]
    fn latency_shares_are_fios_for_the_same_ios_below_50us() {
        // Below 49 984 ns: the bucket at 50 µs, [49 984, 50 016), is the first across an
        // edge.
        let values: Vec<u64> = spread(40_000).into_iter().map(|v| v % 49_984).collect();
        let got = shares_of(&values, 25_000);
        let keys: Vec<Vec<&str>> = got
            .iter()
            .map(|m| m.iter().map(|(k, _)| k.as_str()).collect())
            .collect();
        let base = [
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
        ];
        assert_eq!(keys[0], base);
        assert_eq!(keys[1], base);
        assert_eq!(keys[2][..10], base);
        assert_eq!(keys[2][10..], ["2000", ">=2000"]);
        // Every edge below 50 µs is an edge of iofleet's buckets: fio's own counts.
        // (0 is recorded as 1 ns, in the same range.)
        let want = direct_shares(&values);
        for u in 0..3 {
            for (i, (_, pct)) in got[u].iter().enumerate() {
                assert!((pct - want[u][i]).abs() < 1e-9, "unit {u} range {i}");
            }
        }
        let total: f64 = got.iter().flatten().map(|x| x.1).sum();
        assert!((total - 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_bucket_across_an_edge_counts_where_its_highest_value_is() {
        // 49 999 ns is in iofleet's bucket [49 984, 50 016): counted at 50 µs and up
        // ("100"), as the bucket's highest value is; 49 983 ns stays below ("50").
        let got = shares_of(&[49_999, 49_983, 3_000_000_000, 1_500_000_000], 2);
        assert_eq!(got[1][4], ("50".into(), 25.0));
        assert_eq!(got[1][5], ("100".into(), 25.0));
        assert_eq!(got[2][10], ("2000".into(), 25.0));
        assert_eq!(got[2][11], (">=2000".into(), 25.0));
        // Spread over every magnitude: each range's share differs from fio's count of
        // the same I/Os by at most the I/Os within one iofleet bucket under its edges.
        let values = spread(20_000);
        let got = shares_of(&values, 10_000);
        let want = direct_shares(&values);
        let near_edge = |lo: u64, hi: u64| {
            values.iter().filter(|&&v| (lo..hi).contains(&v)).count() as f64 / values.len() as f64
                * 100.0
        };
        let mut slack = 0.0;
        for e in [50u64, 100, 250, 500, 750, 1000] {
            for scale in [1000u64, 1_000_000] {
                let edge = e * scale;
                let width = 1u64 << (63 - edge.leading_zeros() - 10);
                slack += near_edge(edge - width, edge);
            }
        }
        slack += near_edge(2_000_000_000 - (1 << 20), 2_000_000_000);
        for u in 0..3 {
            for (i, (_, pct)) in got[u].iter().enumerate() {
                assert!(
                    (pct - want[u][i]).abs() <= slack + 1e-9,
                    "unit {u} range {i}"
                );
            }
        }
    }

    #[test]
    fn a_direction_converts_iofleets_figures_and_leaves_slat_unmeasured() {
        let mut ops = iofleet_stats::OpStats::default();
        for i in 1..=1000u64 {
            ops.record(i * 1500, 8192);
        }
        let s = OpSummary::from_ops(&ops, 2.0);
        let d = dir(&s, &[], Some(&ops.hist), true, 2000);
        assert_eq!(
            (d.io_bytes, d.io_kbytes, d.total_ios),
            (8_192_000, 8000, 1000)
        );
        assert_eq!(d.iops, 500.0);
        assert_eq!(d.bw_bytes, 4_096_000);
        assert_eq!(d.bw, 4000);
        assert_eq!(d.runtime, 2000);
        assert_eq!((d.slat_ns.n, d.slat_ns.min, d.slat_ns.max), (0, 0, 0));
        let c = &d.clat_ns;
        assert_eq!(
            (c.n, c.min, c.max),
            (1000, ops.hist.min_ns(), ops.hist.max_ns())
        );
        assert!((c.mean - ops.mean_ns()).abs() < 1e-6);
        assert!((c.stddev - ops.stddev_ns() * (1000.0f64 / 999.0).sqrt()).abs() < 1e-6);
        let pct = c.percentile.as_ref().unwrap();
        assert_eq!(pct.0.len(), 17);
        assert_eq!(pct.0[12], ("99.000000".into(), ops.hist.quantile_ns(0.99)));
        let bins = c.bins.as_ref().unwrap();
        assert_eq!(bins.0.iter().map(|b| b.1).sum::<u64>(), 1000);
        // lat_ns: the same figures, without the distribution.
        assert_eq!((d.lat_ns.n, d.lat_ns.min), (1000, c.min));
        assert!(d.lat_ns.percentile.is_none() && d.lat_ns.bins.is_none());
        // Without histograms: iofleet's own six percentiles, no bins.
        let d = dir(&s, &[], None, false, 2000);
        let keys: Vec<&str> = d
            .clat_ns
            .percentile
            .as_ref()
            .unwrap()
            .0
            .iter()
            .map(|k| k.0.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "50.000000",
                "90.000000",
                "95.000000",
                "99.000000",
                "99.900000",
                "99.990000"
            ]
        );
        assert!(d.clat_ns.bins.is_none());
        // A direction without I/O: zeros with N = 0, as fio writes it.
        let d = dir(&OpSummary::default(), &[], None, true, 2000);
        assert_eq!((d.runtime, d.clat_ns.n, d.bw), (0, 0, 0));
        assert!(d.clat_ns.percentile.is_none());
    }

    #[test]
    fn interval_samples_give_fios_sample_statistics() {
        let iv = |iops: f64| IntervalOps {
            ios: iops as u64,
            iops,
            mbps: iops * 4096.0 / 1e6,
            ..Default::default()
        };
        let s = samples(true, &[iv(100.0), iv(300.0), iv(200.0)]);
        assert_eq!((s.iops_min, s.iops_max, s.iops_samples), (100, 300, 3));
        assert_eq!((s.iops_mean, s.iops_stddev), (200.0, 100.0));
        assert_eq!((s.bw_min, s.bw_max, s.bw_samples), (400, 1200, 3));
        assert!((s.bw_mean - 800.0).abs() < 1e-9 && (s.bw_dev - 400.0).abs() < 1e-9);
        let one = samples(true, &[iv(50.0)]);
        assert_eq!((one.iops_mean, one.iops_stddev), (50.0, 0.0));
        assert_eq!(samples(false, &[iv(50.0)]).iops_samples, 0);
    }

    #[test]
    fn times_are_written_as_fio_writes_them() {
        assert_eq!(epoch_of("2026-11-26T07:49:00Z"), Some(1_795_679_340));
        assert_eq!(ctime(1_795_679_340), "Thu Nov 26 07:49:00 2026");
        assert_eq!(ctime(951_782_400), "Tue Feb 29 00:00:00 2000");
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(epoch_of("bad"), None);
    }
}
