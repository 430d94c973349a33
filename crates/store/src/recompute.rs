//! Recomputing a run's figures from what is stored, never from stored percentiles.
//!
//! Samples are streamed interval by interval: each interval's per-disk samples are
//! merged with `+=` into per-worker samples, those into the interval's fleet, host and
//! group samples (giving its `IntervalRow` and `PartRow`s) and, for measured intervals,
//! into per-worker and per-disk totals (runs recorded before per-disk samples have
//! per-worker ones only, and no per-disk figures); streams, workers, hosts and groups then
//! come from the controller's own fold (`iofleet_stats::fold`) over those totals. For
//! a run that finished, the result equals the live one; for a run whose process died,
//! it is what the committed intervals add up to. Figures that histograms cannot give
//! (CPU, memory, error details, configured outstanding I/O, start skew across hosts, what
//! each disk completed outside the measured phase) come from the stored final result when
//! there is one, and are unknown (None) with a notice otherwise.
//!
//! A relayed run (`--relay-fanout`) stores no per-disk samples per interval for the
//! workers below relays: their groups' merged samples join each interval's fleet and
//! group rows, and their totals come from the relays' per-(worker, disk) totals (and,
//! for relays lost before sending them, per-group unsent totals, folded with
//! `fold_with`), so every figure but one equals the live run's. The exception is a host
//! below a relay over time: its interval rows are the ones its brief gives (counters,
//! mean and the rows' quantiles, as the live run showed them); the store never had that
//! host's histogram per interval, so nothing else of it can be recomputed. A relayed
//! run without a final result may lack its relays' totals (they come at its end): its
//! fleet and groups count what the relays sent per measured interval, and its workers
//! and hosts below relays have no totals, with a notice.

use std::collections::BTreeMap;

use iofleet_stats::brief::HostBrief;
use iofleet_stats::fold::{Folded, GroupRange, HostFacts, Layout};
use iofleet_stats::result::{
    CpuSummary, DiskUnmeasured, ErrorSummary, IntervalRow, MemorySummary, Outstanding,
    PartIntervals, PartRow, RunInfo, RunResult, RunSummary, StoredRun, SCHEMA_VERSION,
};
use iofleet_stats::summary::{counts_in_median, median_of};
use iofleet_stats::{HostResources, HostUsage, LatencyHist, OpStats, OpSummary, Sample, Series};

use crate::read::{RunMeta, RunStatus};
use crate::write::OPS_COLUMNS;
use crate::{Environment, Store, StoreError};

/// A stored run with figures recomputed from its histograms.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub meta: RunMeta,
    pub environment: Environment,
    /// The result, recomputed from stored intervals.
    pub result: RunResult,
    /// Merged histograms of the measured phase, fleet-wide.
    pub read_hist: LatencyHist,
    pub write_hist: LatencyHist,
    /// The same per host (in the order of `result.hosts`) and per worker group (in the
    /// order of `result.groups`): [read, write].
    pub host_hists: Vec<[LatencyHist; 2]>,
    pub group_hists: Vec<[LatencyHist; 2]>,
    /// Whether a final result had been stored (false for killed runs).
    pub has_final: bool,
    /// Per host, in the order of `result.hosts`: its interval rows and CPU over time.
    pub host_series: Vec<Series>,
    /// Per worker group, in the order of `result.groups`: its interval rows.
    pub group_series: Vec<Series>,
}

struct StoredInterval {
    idx: u32,
    t_s: f64,
    duration_s: f64,
    warmup: bool,
    hosts_lost: u32,
}

/// A total's read and write histograms.
fn dir_hists(s: &Sample) -> [LatencyHist; 2] {
    [s.read().hist, s.write().hist]
}

fn u128_of(blob: &[u8]) -> Option<u128> {
    Some(u128::from_le_bytes(blob.try_into().ok()?))
}

/// Same figures as the live run's interval row, from the merged fleet sample.
fn interval_row(iv: &StoredInterval, s: &Sample) -> IntervalRow {
    IntervalRow::from_sample(iv.idx, iv.t_s, iv.duration_s, iv.warmup, iv.hosts_lost, s)
}

impl Store {
    /// Load a run (by full id) and recompute its result from the stored histograms.
    pub fn analyze(&self, id: &str) -> Result<Analysis, StoreError> {
        let meta = self.meta(id)?;
        let (environment, stored, info) = self.run_record(id)?;
        let (intervals, layout, n_workers) = self.placement(id, &info, stored.as_ref())?;
        let n_streams = layout.streams.len();
        let usage = self.host_usage(id)?;
        let nominal_ns = (info.interval_s * 1e9).round() as u64;
        let facts: Vec<HostFacts> = layout
            .hosts
            .iter()
            .map(|name| host_facts(stored.as_ref(), name))
            .collect();
        let relayed = self.relayed_run(id, &layout)?;
        let mut walk = Walk::new(&layout, n_streams, n_workers, intervals.len(), nominal_ns);
        walk.observers = facts.iter().map(|f| f.observer).collect();
        let mut walk = self.walk_intervals(
            id,
            &intervals,
            &layout,
            &usage,
            stored.as_ref(),
            &relayed,
            walk,
        )?;
        let unsent = walk.close_relays(stored.is_some(), &relayed);
        let elapsed_s = walk.measured_ns as f64 / 1e9;
        let Folded {
            fleet,
            streams,
            mut workers,
            hosts: host_summaries,
            groups: group_summaries,
            host_totals,
            group_totals,
        } = layout.fold_with(
            walk.worker_totals.into_iter().zip(
                walk.disk_totals
                    .into_iter()
                    .chain(std::iter::repeat(Vec::new())),
            ),
            &unsent,
            &facts,
            elapsed_s,
        );
        // What completed outside the measured phase is not in the samples: it comes
        // from the final result.
        if let Some(r) = &stored {
            DiskUnmeasured::fill(&mut workers, DiskUnmeasured::of(&r.workers));
        }
        let all = fleet.all();
        let (read, write) = (fleet.read(), fleet.write());
        let measured_mean =
            (walk.measured_ns > 0).then(|| all.latency_sum_ns as f64 / walk.measured_ns as f64);
        let ((configured, cpu, memory, errors), notices, run) = recomputed_run(
            stored.as_ref(),
            &info,
            &meta,
            (walk.error_count, walk.rows.len()),
            elapsed_s,
            host_summaries.len(),
            !unsent.is_empty(),
        );
        let result = RunResult {
            schema_version: SCHEMA_VERSION,
            stored: Some(StoredRun {
                id: meta.id.clone(),
                name: meta.name.clone(),
                labels: meta.labels.clone(),
                status: meta.status.as_str().to_string(),
            }),
            run,
            summary: RunSummary {
                all: OpSummary::from_ops(&all, elapsed_s),
                read: OpSummary::from_ops(&read, elapsed_s),
                write: OpSummary::from_ops(&write, elapsed_s),
                iops_median_interval: median_of(&walk.interval_iops),
                outstanding_io: Outstanding {
                    configured,
                    measured_mean,
                },
                cpu,
                memory,
                errors,
                generator: stored.as_ref().and_then(|r| r.summary.generator.clone()),
                verify: stored.as_ref().and_then(|r| r.summary.verify.clone()),
                // What the hosts spent over the whole phase is a fact of the live run.
                net: stored.as_ref().and_then(|r| r.summary.net.clone()),
                observers: stored.as_ref().and_then(|r| r.summary.observers.clone()),
            },
            streams,
            intervals: walk.rows,
            workers,
            hosts: host_summaries,
            groups: group_summaries,
            host_intervals: walk.host_intervals,
            group_intervals: walk.group_intervals,
            notices,
            // Not a figure: what the rounds found, as the run recorded it.
            steady_state: stored.as_ref().and_then(|r| r.steady_state.clone()),
            // Not a figure: the verdict the run was given, as it recorded it (a run
            // without a final result was never judged).
            validity: stored
                .as_ref()
                .map(|r| r.validity.clone())
                .unwrap_or_default(),
        };
        Ok(Analysis {
            meta,
            environment,
            result,
            read_hist: read.hist,
            write_hist: write.hist,
            host_hists: host_totals.iter().map(dir_hists).collect(),
            group_hists: group_totals.iter().map(dir_hists).collect(),
            has_final: stored.is_some(),
            host_series: walk.host_series,
            group_series: walk.group_series,
        })
    }

    /// The run's recorded environment, its final result if one was stored, and its
    /// info (the final result's, else the one recorded at the start).
    fn run_record(
        &self,
        id: &str,
    ) -> Result<(Environment, Option<RunResult>, RunInfo), StoreError> {
        let corrupt = corrupt_run(id);
        let (info, env, final_json): (String, String, Option<String>) = self.conn.query_row(
            "SELECT info, environment, result FROM runs WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let start_info: RunInfo =
            serde_json::from_str(&info).map_err(|e| corrupt(format!("run info: {e}")))?;
        let environment: Environment = serde_json::from_str(&env).unwrap_or_default();
        let stored: Option<RunResult> = match final_json {
            Some(j) => {
                Some(serde_json::from_str(&j).map_err(|e| corrupt(format!("final result: {e}")))?)
            }
            None => None,
        };
        let info = stored.as_ref().map_or(start_info, |r| r.run.clone());
        Ok((environment, stored, info))
    }

    /// The stored intervals, the layout of the stored workers, and the number of workers
    /// (every placed worker and every one with samples).
    fn placement(
        &self,
        id: &str,
        info: &RunInfo,
        stored: Option<&RunResult>,
    ) -> Result<(Vec<StoredInterval>, Layout, usize), StoreError> {
        let stream_names: Vec<String> = info
            .plan
            .plan
            .streams
            .iter()
            .map(|s| s.name.clone())
            .collect();
        let mut hosts = self.worker_hosts(id, &info.hostname)?;
        let intervals = self.stored_intervals(id)?;

        // Every worker that has samples, also one a v1 store did not place (it runs on
        // the recording host, as the result says).
        let sampled: Option<i64> = self.conn.query_row(
            "SELECT MAX(w) + 1 FROM (SELECT MAX(worker) AS w FROM samples WHERE run_id = ?1
                                     UNION ALL SELECT MAX(worker) FROM disk_samples WHERE run_id = ?1)",
            [id],
            |r| r.get(0),
        )?;
        let n_workers = hosts.len().max(sampled.unwrap_or(0) as usize);
        hosts.resize(n_workers, info.hostname.clone());
        // The layout is known before the samples are read, so that each interval's worker
        // samples can also be merged per host and per group (same `+=`, same row
        // function) for the parts over time; the totals are folded over the same layout.
        let layout = layout_of(&info.plan, stored, stream_names, &hosts);
        Ok((intervals, layout, hosts.len()))
    }

    /// The host of each placed worker, by worker index (gaps: the recording host).
    fn worker_hosts(&self, id: &str, hostname: &str) -> Result<Vec<String>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT worker, host FROM run_workers WHERE run_id = ?1 ORDER BY worker")?;
        let rows = st.query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
        let mut hosts = Vec::new();
        for row in rows {
            let (w, h) = row?;
            let w = w as usize;
            if hosts.len() <= w {
                hosts.resize(w + 1, hostname.to_string());
            }
            hosts[w] = h;
        }
        Ok(hosts)
    }

    /// The run's stored intervals, in order.
    fn stored_intervals(&self, id: &str) -> Result<Vec<StoredInterval>, StoreError> {
        let mut st = self.conn.prepare(
            "SELECT idx, t_s, duration_s, warmup, hosts_lost FROM intervals WHERE run_id = ?1 ORDER BY idx",
        )?;
        let rows = st.query_map([id], |r| {
            Ok(StoredInterval {
                idx: r.get(0)?,
                t_s: r.get(1)?,
                duration_s: r.get(2)?,
                warmup: r.get(3)?,
                hosts_lost: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stream the run's samples (per worker and per disk) interval by interval in one
    /// query, merging each interval's into `walk`.
    #[allow(clippy::too_many_arguments)]
    fn walk_intervals(
        &self,
        id: &str,
        intervals: &[StoredInterval],
        layout: &Layout,
        usage: &BTreeMap<(u32, String), HostUsage>,
        stored: Option<&RunResult>,
        relayed: &RelayedRun,
        mut walk: Walk,
    ) -> Result<Walk, StoreError> {
        let mut st = self.conn.prepare(
            "SELECT idx, worker, stream,
                    read_ios, read_bytes, read_errors, read_lat_sum_ns, read_lat_sq_sum_ns2, read_hist,
                    write_ios, write_bytes, write_errors, write_lat_sum_ns, write_lat_sq_sum_ns2, write_hist,
                    -1 AS disk
             FROM samples WHERE run_id = ?1
             UNION ALL
             SELECT idx, worker, stream,
                    read_ios, read_bytes, read_errors, read_lat_sum_ns, read_lat_sq_sum_ns2, read_hist,
                    write_ios, write_bytes, write_errors, write_lat_sum_ns, write_lat_sq_sum_ns2, write_hist,
                    disk
             FROM disk_samples WHERE run_id = ?1
             ORDER BY idx, worker, disk, stream",
        )?;
        let mut samples = st.query([id])?;
        let mut pending: Option<SampleRow> = None;
        for iv in intervals {
            let mut per_worker: Vec<Sample> = vec![Sample::new(walk.n_streams); walk.n_workers];
            let mut per_disk: Vec<Vec<Sample>> = vec![Vec::new(); walk.n_workers];
            read_interval_samples(
                &mut samples,
                &mut pending,
                iv.idx,
                walk.n_streams,
                &mut per_worker,
                &mut per_disk,
                id,
            )?;
            let this = Relayed {
                groups: relayed.groups.get(&iv.idx).map_or(&[], Vec::as_slice),
                hosts: relayed.hosts.get(&iv.idx).map_or(&[], Vec::as_slice),
            };
            walk.add_interval(iv, layout, usage, stored, &per_worker, &per_disk, &this);
        }
        Ok(walk)
    }

    /// What relays sent of run `id`, placed on `layout` (a brief of a host the layout
    /// does not have, or a group it does not have, is ignored).
    fn relayed_run(&self, id: &str, layout: &Layout) -> Result<RelayedRun, StoreError> {
        let n_streams = layout.streams.len();
        let n_groups = layout.groups.len();
        let mut out = RelayedRun::default();
        self.each_stored_sample(id, "relayed_samples", "idx, grp", |k, s, ops| {
            let groups = out
                .groups
                .entry(k[0] as u32)
                .or_insert_with(|| vec![Sample::new(n_streams); n_groups]);
            if let Some(g) = groups.get_mut(k[1] as usize) {
                ops.add_to(g, s);
            }
        })?;
        self.each_stored_sample(id, "relay_totals", "worker, disk", |k, s, ops| {
            let mut sample = Sample::new(n_streams);
            ops.add_to(&mut sample, s);
            out.totals.push((k[0] as usize, k[1] as usize, sample));
        })?;
        let mut unsent = vec![Sample::new(n_streams); n_groups];
        let mut any = false;
        self.each_stored_sample(id, "unsent_groups", "grp", |k, s, ops| {
            if let Some(g) = unsent.get_mut(k[0] as usize) {
                ops.add_to(g, s);
                any = true;
            }
        })?;
        if any {
            out.unsent = unsent;
        }
        let mut st = self
            .conn
            .prepare("SELECT idx, host, brief FROM relayed_hosts WHERE run_id = ?1 ORDER BY idx")?;
        let rows = st.query_map([id], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        for row in rows {
            let (idx, host, text) = row?;
            let brief: HostBrief =
                serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
                    id: id.into(),
                    detail: format!("brief of host {host} in interval {idx}: {e}"),
                })?;
            if let Some(h) = layout.hosts.iter().position(|n| *n == host) {
                out.hosts.entry(idx).or_default().push((h, brief));
            }
        }
        Ok(out)
    }

    /// Call `f` with every stored stream row of run `id` in `table`: the `keys`
    /// columns' values (integers), the stream and its figures.
    fn each_stored_sample(
        &self,
        id: &str,
        table: &str,
        keys: &str,
        mut f: impl FnMut(&[i64], usize, StreamOps),
    ) -> Result<(), StoreError> {
        let n_keys = keys.split(',').count();
        let mut st = self.conn.prepare(&format!(
            "SELECT {keys}, stream, {OPS_COLUMNS} FROM {table} WHERE run_id = ?1"
        ))?;
        let mut rows = st.query([id])?;
        while let Some(r) = rows.next()? {
            let k: Vec<i64> = (0..n_keys)
                .map(|i| r.get::<_, i64>(i))
                .collect::<Result<_, _>>()?;
            let s = r.get::<_, i64>(n_keys)? as usize;
            f(&k, s, stream_ops(r, n_keys + 1, id)?);
        }
        Ok(())
    }

    /// What each host spent per interval, keyed by (interval, host).
    fn host_usage(&self, id: &str) -> Result<BTreeMap<(u32, String), HostUsage>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT idx, host, usage FROM host_usage WHERE run_id = ?1")?;
        let rows = st.query_map([id], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (idx, host, text) = row?;
            let u: HostUsage = serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
                id: id.into(),
                detail: format!("host usage of interval {idx} on {host}: {e}"),
            })?;
            out.insert((idx, host), u);
        }
        Ok(out)
    }
}

/// How a stored run that cannot be read back is reported.
fn corrupt_run(id: &str) -> impl Fn(String) -> StoreError + Copy + '_ {
    move |detail: String| StoreError::Corrupt {
        id: id.into(),
        detail,
    }
}

/// A sample as read: (interval, worker, disk or -1 for a per-worker sample, stream, figures).
type SampleRow = (u32, usize, i64, usize, StreamOps);

/// One row of the samples query.
fn sample_row(r: &rusqlite::Row<'_>, id: &str) -> Result<SampleRow, StoreError> {
    Ok((
        r.get(0)?,
        r.get::<_, i64>(1)? as usize,
        r.get::<_, i64>(15)?,
        r.get::<_, i64>(2)? as usize,
        stream_ops(r, 3, id)?,
    ))
}

/// A stream's read and write figures, stored in the `OPS_COLUMNS` from column `base`.
fn stream_ops(r: &rusqlite::Row<'_>, base: usize, id: &str) -> Result<StreamOps, StoreError> {
    let corrupt = corrupt_run(id);
    let op = |base: usize| -> Result<OpStats, StoreError> {
        let blob = |i: usize| -> Result<Vec<u8>, StoreError> { Ok(r.get(i)?) };
        let hist: Option<Vec<u8>> = r.get(base + 5)?;
        Ok(OpStats {
            ios: r.get::<_, i64>(base)? as u64,
            bytes: r.get::<_, i64>(base + 1)? as u64,
            errors: r.get::<_, i64>(base + 2)? as u64,
            latency_sum_ns: u128_of(&blob(base + 3)?)
                .ok_or_else(|| corrupt("latency sum".into()))?,
            latency_sq_sum_ns2: u128_of(&blob(base + 4)?)
                .ok_or_else(|| corrupt("latency square sum".into()))?,
            hist: match hist {
                Some(b) => LatencyHist::from_v2_bytes(&b).map_err(corrupt)?,
                None => LatencyHist::new(),
            },
        })
    };
    Ok(StreamOps {
        read: op(base)?,
        write: op(base + 6)?,
    })
}

impl StreamOps {
    /// Add these figures to stream `s` of `sample` (grown as needed).
    fn add_to(&self, sample: &mut Sample, s: usize) {
        if sample.streams.len() <= s {
            sample.streams.resize(s + 1, Default::default());
        }
        sample.streams[s].read += &self.read;
        sample.streams[s].write += &self.write;
    }
}

/// What relays sent of a relayed run (`--relay-fanout`), as stored: per interval the
/// groups' merged samples and the briefs of the hosts below relays (by layout host),
/// the relays' (local worker, disk) totals, and per group what lost relays measured.
#[derive(Default)]
struct RelayedRun {
    groups: BTreeMap<u32, Vec<Sample>>,
    hosts: BTreeMap<u32, Vec<(usize, HostBrief)>>,
    totals: Vec<(usize, usize, Sample)>,
    unsent: Vec<Sample>,
}

/// Merge every sample of interval `idx` into `per_worker` and `per_disk` (grown as
/// needed), skipping orphans; the first sample of a later interval is kept in `pending`.
fn read_interval_samples(
    samples: &mut rusqlite::Rows<'_>,
    pending: &mut Option<SampleRow>,
    idx: u32,
    n_streams: usize,
    per_worker: &mut Vec<Sample>,
    per_disk: &mut Vec<Vec<Sample>>,
    id: &str,
) -> Result<(), StoreError> {
    loop {
        if pending.is_none() {
            let Some(r) = samples.next()? else { break };
            *pending = Some(sample_row(r, id)?);
        }
        let (sample_idx, _, _, _, _) = pending.as_ref().expect("set above");
        if *sample_idx != idx {
            if *sample_idx < idx {
                *pending = None; // orphan sample without an interval row
                continue;
            }
            break;
        }
        let (_, w, d, s, ops) = pending.take().expect("set above");
        if per_worker.len() <= w {
            per_worker.resize(w + 1, Sample::new(n_streams));
            per_disk.resize(w + 1, Vec::new());
        }
        ops.add_to(&mut per_worker[w], s);
        if let Ok(d) = usize::try_from(d) {
            let disks = &mut per_disk[w];
            if disks.len() <= d {
                disks.resize(d + 1, Sample::new(n_streams));
            }
            ops.add_to(&mut disks[d], s);
        }
    }
    Ok(())
}

/// What the pass over the stored intervals adds up.
struct Walk {
    n_streams: usize,
    /// Workers placed: each interval's samples start with one per worker.
    n_workers: usize,
    /// The run's interval length, for which intervals count in the median.
    nominal_ns: u64,
    host_series: Vec<Series>,
    group_series: Vec<Series>,
    worker_totals: Vec<Sample>,
    disk_totals: Vec<Vec<Sample>>,
    host_intervals: Vec<PartIntervals>,
    group_intervals: Vec<PartIntervals>,
    rows: Vec<IntervalRow>,
    measured_ns: u64,
    /// Per group, what relays sent of the measured intervals (empty without relays).
    relayed_measured: Vec<Sample>,
    interval_iops: Vec<f64>,
    error_count: u64,
    /// Per layout host: an observer (as the stored result says), whose usage is kept
    /// apart from the worker hosts'.
    observers: Vec<bool>,
}

impl Walk {
    /// Nothing added yet: an empty series for each host and group of `layout`.
    fn new(
        layout: &Layout,
        n_streams: usize,
        n_workers: usize,
        n_intervals: usize,
        nominal_ns: u64,
    ) -> Walk {
        let series = |name: &String| Series {
            name: name.clone(),
            ..Default::default()
        };
        Walk {
            n_streams,
            n_workers,
            nominal_ns,
            host_series: layout.hosts.iter().map(series).collect(),
            group_series: layout.groups.iter().map(|g| series(&g.name)).collect(),
            worker_totals: vec![Sample::new(n_streams); n_workers],
            disk_totals: vec![Vec::new(); n_workers],
            host_intervals: Vec::new(),
            group_intervals: Vec::new(),
            rows: Vec::with_capacity(n_intervals),
            measured_ns: 0,
            interval_iops: Vec::new(),
            relayed_measured: Vec::new(),
            error_count: 0,
            observers: Vec::new(),
        }
    }

    /// Add one interval's merged samples: its rows per host and group, its fleet row
    /// and, for a measured interval, its share of the totals.
    #[allow(clippy::too_many_arguments)]
    fn add_interval(
        &mut self,
        iv: &StoredInterval,
        layout: &Layout,
        usage: &BTreeMap<(u32, String), HostUsage>,
        stored: Option<&RunResult>,
        per_worker: &[Sample],
        per_disk: &[Vec<Sample>],
        relayed: &Relayed<'_>,
    ) {
        let by_host: Vec<Option<HostUsage>> = layout
            .hosts
            .iter()
            .map(|h| usage.get(&(iv.idx, h.clone())).cloned())
            .collect();
        let rates = iofleet_stats::rates_of(&by_host);
        self.push_parts(iv, layout, usage, &rates, per_worker, relayed);
        let mut fleet = Sample::new(self.n_streams);
        per_worker.iter().for_each(|w| fleet += w);
        relayed.groups.iter().for_each(|g| fleet += g);
        self.error_count += fleet.errors();
        let mut row = interval_row(iv, &fleet);
        (row.net, row.observers) = iofleet_stats::split_by_role(&rates, &self.observers);
        // The self-check is not in the histograms: it comes from the final result.
        row.generator = stored
            .and_then(|r| r.intervals.iter().find(|x| x.index == iv.idx))
            .and_then(|x| x.generator.clone());
        if !iv.warmup {
            self.add_to_totals(per_worker, per_disk);
            if self.relayed_measured.len() < relayed.groups.len() {
                let n_streams = self.n_streams;
                self.relayed_measured
                    .resize(relayed.groups.len(), Sample::new(n_streams));
            }
            for (sum, g) in self.relayed_measured.iter_mut().zip(relayed.groups) {
                *sum += g;
            }
            let dur_ns = (iv.duration_s * 1e9).round() as u64;
            self.measured_ns += dur_ns;
            if counts_in_median(dur_ns, self.nominal_ns) {
                self.interval_iops.push(row.iops);
            }
        }
        self.rows.push(row);
    }

    /// One interval's rows per host (with its CPU) and per group: parts and series. As
    /// the live run does, the groups add what relays merged, and a host below a relay
    /// has the rows of its brief.
    fn push_parts(
        &mut self,
        iv: &StoredInterval,
        layout: &Layout,
        usage: &BTreeMap<(u32, String), HostUsage>,
        rates: &[Option<iofleet_stats::HostResources>],
        per_worker: &[Sample],
        relayed: &Relayed<'_>,
    ) {
        let (per_host, mut per_group) = layout.sums(per_worker, self.n_streams);
        for (sum, g) in per_group.iter_mut().zip(relayed.groups) {
            *sum += g;
        }
        let mut host_rows: Vec<PartRow> = per_host
            .iter()
            .map(|s| PartRow::from_sample(iv.idx, iv.duration_s, s))
            .collect();
        let mut series_rows: Vec<IntervalRow> =
            per_host.iter().map(|s| interval_row(iv, s)).collect();
        for (h, b) in relayed.hosts {
            if let (Some(row), Some(series)) = (host_rows.get_mut(*h), series_rows.get_mut(*h)) {
                *row = b.row(iv.idx, iv.duration_s);
                *series = b.interval_row(iv.idx, iv.t_s, iv.duration_s, iv.warmup, iv.hosts_lost);
            }
        }
        for (row, r) in host_rows.iter_mut().zip(rates) {
            row.usage = r.clone();
        }
        let group_rows = per_group
            .iter()
            .map(|s| PartRow::from_sample(iv.idx, iv.duration_s, s))
            .collect();
        layout.push_rows(
            host_rows,
            group_rows,
            &mut self.host_intervals,
            &mut self.group_intervals,
        );
        for ((series, row), name) in self
            .host_series
            .iter_mut()
            .zip(series_rows)
            .zip(&layout.hosts)
        {
            series.rows.push(row);
            series.cpu.push(
                usage
                    .get(&(iv.idx, name.clone()))
                    .and_then(HostUsage::summary)
                    .map(|r| r.cpu),
            );
        }
        for (series, sample) in self.group_series.iter_mut().zip(&per_group) {
            series.rows.push(interval_row(iv, sample));
        }
    }

    /// The relays' totals of the (worker, disk)s below them, added to the totals.
    /// What the relays' totals leave to the fleet's and groups' totals: a run that
    /// ended records its relays' totals (and what lost relays measured) before its
    /// final result; without one they may never have come, and the fleet and the groups
    /// count what relays sent per measured interval, the workers below them nothing.
    fn close_relays(&mut self, ended: bool, relayed: &RelayedRun) -> Vec<Sample> {
        if ended {
            self.add_relay_totals(&relayed.totals);
            relayed.unsent.clone()
        } else {
            std::mem::take(&mut self.relayed_measured)
        }
    }

    fn add_relay_totals(&mut self, totals: &[(usize, usize, Sample)]) {
        let n_streams = self.n_streams;
        for (w, d, s) in totals {
            if self.worker_totals.len() <= *w {
                self.worker_totals.resize(w + 1, Sample::new(n_streams));
                self.disk_totals.resize(w + 1, Vec::new());
            }
            self.worker_totals[*w] += s;
            let disks = &mut self.disk_totals[*w];
            if disks.len() <= *d {
                disks.resize(d + 1, Sample::new(n_streams));
            }
            disks[*d] += s;
        }
    }

    /// A measured interval's worker and disk samples added to the totals.
    fn add_to_totals(&mut self, per_worker: &[Sample], per_disk: &[Vec<Sample>]) {
        let n_streams = self.n_streams;
        if self.worker_totals.len() < per_worker.len() {
            self.worker_totals
                .resize(per_worker.len(), Sample::new(n_streams));
        }
        for (tot, w) in self.worker_totals.iter_mut().zip(per_worker) {
            *tot += w;
        }
        if self.disk_totals.len() < per_disk.len() {
            self.disk_totals.resize(per_disk.len(), Vec::new());
        }
        for (tot, disks) in self.disk_totals.iter_mut().zip(per_disk) {
            if tot.len() < disks.len() {
                tot.resize(disks.len(), Sample::new(n_streams));
            }
            for (t, d) in tot.iter_mut().zip(disks) {
                *t += d;
            }
        }
    }
}

/// The summary's configured outstanding I/O, CPU, memory and errors.
type SummaryExtra = (
    Option<u64>,
    Option<CpuSummary>,
    Option<MemorySummary>,
    ErrorSummary,
);

/// What histograms cannot give: the summary's extra figures, the notices and the run,
/// from the stored result; without one, unknowns (errors only counted), a notice why
/// (unless still running) and the run as started, marked interrupted.
/// The run's facts and the summary's figures histograms cannot give (`not_recomputed`),
/// with what a run not (or not yet) ended changes in them, and the notices saying so.
#[allow(clippy::too_many_arguments)]
fn recomputed_run(
    stored: Option<&RunResult>,
    info: &RunInfo,
    meta: &RunMeta,
    (error_count, n_intervals): (u64, usize),
    elapsed_s: f64,
    hosts: usize,
    relays_unsent: bool,
) -> (SummaryExtra, Vec<String>, RunInfo) {
    let (extra, mut notices, mut run) =
        not_recomputed(stored, info, meta, error_count, n_intervals);
    if stored.is_none() || meta.status == RunStatus::Running {
        run.duration_s = elapsed_s;
    }
    if stored.is_none() && hosts > 1 {
        // Across hosts the skew is computed from the hosts' start reports at the end.
        run.start_skew_ms = None;
    }
    if meta.status == RunStatus::Running {
        notices.push("the run is still being recorded: figures so far".into());
    }
    if stored.is_none() && relays_unsent {
        notices.push(
            "the workers and hosts below relays have no totals (their relays send them at the run's end): the fleet's and the groups' totals count what the relays sent per interval".into(),
        );
    }
    (extra, notices, run)
}

fn not_recomputed(
    stored: Option<&RunResult>,
    info: &RunInfo,
    meta: &RunMeta,
    error_count: u64,
    n_intervals: usize,
) -> (SummaryExtra, Vec<String>, RunInfo) {
    match stored {
        Some(r) => (
            (
                r.summary.outstanding_io.configured,
                r.summary.cpu.clone(),
                r.summary.memory.clone(),
                r.summary.errors.clone(),
            ),
            r.notices.clone(),
            r.run.clone(),
        ),
        None => {
            let mut run = info.clone();
            run.interrupted = true;
            (
                (
                    None,
                    None,
                    None,
                    ErrorSummary {
                        count: error_count,
                        ..Default::default()
                    },
                ),
                if meta.status == RunStatus::Running {
                    Vec::new()
                } else {
                    vec![format!(
                        "the recording process ended without a final result ({}): figures are recomputed from the {} intervals stored; CPU, memory, the generator self-check and configured outstanding I/O were not recorded",
                        meta.status.as_str(),
                        n_intervals
                    )]
                },
                run,
            )
        }
    }
}

/// Where the stored workers lived. Hosts keep the stored result's order (else first
/// appearance); group ranges, with their scheduled rates, come from the stored result,
/// else from the recorded plan (its `groups` when there are several, else one group of
/// every worker; a plan's rate is not re-derived, so such groups are judged as closed
/// loop).
fn layout_of(
    plan: &iofleet_profile::RecordedPlan,
    stored: Option<&RunResult>,
    streams: Vec<String>,
    worker_hosts: &[String],
) -> Layout {
    let mut hosts: Vec<String> = stored
        .map(|r| r.hosts.iter().map(|h| h.host.clone()).collect())
        .unwrap_or_default();
    for h in worker_hosts {
        if !hosts.contains(h) {
            hosts.push(h.clone());
        }
    }
    let worker_host = worker_hosts
        .iter()
        .map(|h| {
            hosts
                .iter()
                .position(|n| n == h)
                .expect("every worker's host is named")
        })
        .collect();
    let groups = match stored {
        Some(r) if !r.groups.is_empty() => r
            .groups
            .iter()
            .map(|g| GroupRange {
                name: g.name.clone(),
                profile: g.profile.clone(),
                first: g.first_worker,
                workers: g.workers,
                rate_per_worker: g.rate_per_worker,
            })
            .collect(),
        // Groups from the recorded plan; a run of one profile is one group of every
        // worker, whatever its plan's worker count.
        _ if plan.groups.is_empty() => vec![GroupRange {
            name: plan.plan.name.clone(),
            profile: plan.plan.name.clone(),
            first: 0,
            workers: worker_hosts.len() as u32,
            rate_per_worker: None,
        }],
        _ => plan
            .groups
            .iter()
            .map(|g| GroupRange {
                name: g.name.clone(),
                profile: g.plan.name.clone(),
                first: g.worker_base,
                workers: g.plan.fleet.workers,
                rate_per_worker: None,
            })
            .collect(),
    };
    Layout {
        streams,
        hosts,
        worker_base: 0,
        worker_host,
        groups,
    }
}

/// Start lateness, loss time and what the host spent are facts of the live run: they
/// come from the stored result, as the host reported them.
fn host_facts(stored: Option<&RunResult>, name: &str) -> HostFacts {
    let Some(live) = stored.and_then(|r| r.hosts.iter().find(|x| x.host == name)) else {
        return HostFacts::default();
    };
    let resources = match (&live.cpu, &live.memory, &live.net) {
        (Some(cpu), Some(memory), Some(net)) => Some(HostResources {
            cpu: cpu.clone(),
            memory: memory.clone(),
            net: net.clone(),
            disk: live.disk.clone(),
            storage: live.storage.clone(),
            scraped: live.scraped.clone(),
        }),
        _ => None,
    };
    HostFacts {
        start_late_ms: live.start_late_ms,
        lost_at_s: live.lost_at_s,
        resources,
        observer: live.observer,
        kubernetes: live.kubernetes.clone(),
    }
}

struct StreamOps {
    read: OpStats,
    write: OpStats,
}

/// What relays sent of one interval: per group its merged sample, per layout host
/// below a relay its brief.
struct Relayed<'a> {
    groups: &'a [Sample],
    hosts: &'a [(usize, HostBrief)],
}
