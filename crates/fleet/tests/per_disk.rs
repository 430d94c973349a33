//! Per-disk results and the per-host and per-group interval rows, against an oracle.
//! Latencies are injected by the null engine in simulated time: each disk (file) of
//! worker w draws from worker w's list of latencies in order, so every completion of
//! every qd-1 lane is known exactly. Disk 0 of every worker runs only 4 KiB reads and
//! disk 1 only 16 KiB writes, so a sample recorded under the wrong disk (or direction)
//! shows in the counts and bytes. Expected figures are computed here from raw lists, by
//! sorting.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use iofleet_engine::null::LatencyModel;
use iofleet_engine::target::TargetSpec;
use iofleet_fleet::{run_local, EngineSpec, RunSettings, Silent};
use iofleet_profile::{
    Arrival, BlockSizes, Bytes, FleetShape, GroupPlan, Locality, Plan, Prepare, StreamPlan, Timing,
};
use iofleet_stats::result::{IntervalOps, RunResult};
use iofleet_stats::OpSummary;

const INTERVAL_NS: u64 = 250_000_000;
const WARMUP_MS: u64 = 250;
const DURATION_MS: u64 = 1000;

fn stream(name: &str, bs: u64, read_pct: f64, disk: u32) -> StreamPlan {
    StreamPlan {
        name: name.into(),
        bs: BlockSizes::fixed(Bytes(bs)),
        read_pct,
        random_pct: 100.0,
        align: Bytes(4096),
        weight: Some(1),
        rate_iops: None,
        qd: None,
        locality: Locality::Uniform,
        working_set_pct: 100.0,
        disks: vec![disk],
    }
}

fn plan(workers: u32) -> Plan {
    Plan {
        name: "per-disk".into(),
        description: "test".into(),
        fleet: FleetShape {
            workers,
            disks_per_worker: 2,
            disk_size: Bytes(1 << 30),
            threads_per_disk: 1,
            qd: 1,
            io_threads: None,
            cpus: None,
        },
        timing: Timing {
            prepare: Prepare::None,
            warmup: Duration::from_millis(WARMUP_MS),
            duration: Duration::from_millis(DURATION_MS),
            interval: Duration::from_nanos(INTERVAL_NS),
            rate_iops: None,
            arrival: Arrival::Uniform,
            verify: false,
        },
        data: Default::default(),
        streams: vec![
            stream("reads", 4096, 100.0, 0),
            stream("writes", 16384, 0.0, 1),
        ],
    }
}

/// A deterministic latency list (ns) from a simple LCG.
fn lcg_list(seed: u64, n: usize, lo: u64, span: u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + ((x >> 11) % span)
        })
        .collect()
}

/// Latencies a qd-1 lane records with completions in [start, end).
fn recorded(samples: &[u64], start: u64, end: u64) -> Vec<u64> {
    let mut t = 0u64;
    let mut out = Vec::new();
    for k in 0.. {
        let lat = samples[k % samples.len()];
        t += lat;
        if t >= end {
            break;
        }
        if t >= start {
            out.push(lat);
        }
    }
    out
}

fn exact_quantile(sorted: &[u64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

/// Within HDR's 3 significant digits of the exact value (ns), reported in µs.
fn close(got_us: Option<f64>, exact_ns: f64, what: &str) {
    let got_us = got_us.unwrap_or_else(|| panic!("{what}: no figure"));
    let exact_us = exact_ns / 1000.0;
    assert!(
        (got_us - exact_us).abs() <= exact_us * 0.001 + 0.001,
        "{what}: reported {got_us} µs, exact {exact_us} µs"
    );
}

/// A summary against the raw latencies it covers.
fn check_summary(s: &OpSummary, lats: &[u64], bs: u64, what: &str) {
    let mut sorted = lats.to_vec();
    sorted.sort_unstable();
    assert_eq!(s.ios, sorted.len() as u64, "{what}: ios");
    assert_eq!(s.bytes, sorted.len() as u64 * bs, "{what}: bytes");
    let l = s.latency_us.as_ref().expect("latencies");
    close(Some(l.p50), exact_quantile(&sorted, 0.5), what);
    close(Some(l.p99), exact_quantile(&sorted, 0.99), what);
    close(Some(l.max), *sorted.last().unwrap() as f64, what);
    let mean = sorted.iter().sum::<u64>() as f64 / sorted.len() as f64 / 1000.0;
    assert!((l.mean - mean).abs() < 1e-6, "{what}: exact mean");
}

/// An interval row's direction against the raw latencies completed in it.
fn check_interval(o: &IntervalOps, lats: &[u64], bs: u64, what: &str) {
    let mut sorted = lats.to_vec();
    sorted.sort_unstable();
    let secs = INTERVAL_NS as f64 / 1e9;
    assert_eq!(o.ios, sorted.len() as u64, "{what}: ios");
    assert!((o.iops - sorted.len() as f64 / secs).abs() < 1e-6, "{what}");
    let mbps = (sorted.len() as u64 * bs) as f64 / secs / 1e6;
    assert!((o.mbps - mbps).abs() < 1e-9, "{what}: MB/s");
    if sorted.is_empty() {
        assert!(o.mean_us.is_none() && o.p99_us.is_none() && o.max_us.is_none());
        return;
    }
    let mean = sorted.iter().sum::<u64>() as f64 / sorted.len() as f64 / 1000.0;
    assert!((o.mean_us.unwrap() - mean).abs() < 1e-6, "{what}: mean");
    close(o.p50_us, exact_quantile(&sorted, 0.5), what);
    close(o.p90_us, exact_quantile(&sorted, 0.9), what);
    close(o.p99_us, exact_quantile(&sorted, 0.99), what);
    close(o.p99_9_us, exact_quantile(&sorted, 0.999), what);
    close(o.max_us, *sorted.last().unwrap() as f64, what);
}

fn models() -> Vec<Vec<u64>> {
    vec![
        lcg_list(11, 499, 20_000, 80_000),
        lcg_list(12, 503, 50_000, 400_000),
        lcg_list(13, 509, 5_000, 30_000),
    ]
}

fn go(groups: &[GroupPlan]) -> RunResult {
    let settings = RunSettings {
        engine: EngineSpec::NullSim(models().into_iter().map(LatencyModel::Samples).collect()),
        seed: 7,
        ..RunSettings::default()
    };
    run_local(
        groups,
        TargetSpec::Dir("unused".into()),
        "none".into(),
        &settings,
        Arc::new(AtomicBool::new(false)),
        &mut Silent,
    )
    .unwrap()
}

#[test]
fn disks_are_exact_and_add_up_to_their_worker() {
    let r = go(&GroupPlan::single(plan(3), 0));
    assert!(!r.run.interrupted);
    let start = WARMUP_MS * 1_000_000;
    let end = start + DURATION_MS * 1_000_000;
    assert_eq!(r.workers.len(), 3);
    for (w, m) in models().iter().enumerate() {
        let ws = &r.workers[w];
        assert_eq!(ws.disks.len(), 2, "worker {w} has two disks");
        let lats = recorded(m, start, end);
        // Disk 0: reads of 4 KiB only; disk 1: writes of 16 KiB only.
        let (d0, d1) = (&ws.disks[0], &ws.disks[1]);
        assert_eq!((d0.disk, d1.disk), (0, 1));
        check_summary(&d0.read, &lats, 4096, &format!("worker {w} disk 0 read"));
        check_summary(&d0.all, &lats, 4096, &format!("worker {w} disk 0 all"));
        assert_eq!(d0.write.ios, 0);
        assert!(d0.write.latency_us.is_none(), "no writes on disk 0");
        check_summary(&d1.write, &lats, 16384, &format!("worker {w} disk 1 write"));
        assert_eq!(d1.read.ios, 0);
        // The disks add up to the worker, and the worker's percentiles are those of
        // the union of its disks' latencies.
        let mut both = lats.clone();
        both.extend(&lats);
        assert_eq!(d0.all.ios + d1.all.ios, ws.all.ios);
        assert_eq!(d0.all.bytes + d1.all.bytes, ws.all.bytes);
        assert_eq!(d0.all.errors + d1.all.errors, ws.all.errors);
        assert!((d0.all.iops + d1.all.iops - ws.all.iops).abs() < 1e-6);
        assert!((d0.all.mbps + d1.all.mbps - ws.all.mbps).abs() < 1e-9);
        assert_eq!(ws.all.bytes, lats.len() as u64 * (4096 + 16384));
        both.sort_unstable();
        let l = ws.all.latency_us.as_ref().unwrap();
        close(Some(l.p99), exact_quantile(&both, 0.99), "worker p99");
        close(Some(l.p50), exact_quantile(&both, 0.5), "worker p50");
    }
}

#[test]
fn interval_rows_per_direction_host_and_group_against_raw_latencies() {
    // Two groups: workers 0 and 1, and worker 2.
    let groups = vec![
        GroupPlan {
            name: "front".into(),
            plan: plan(2),
            worker_base: 0,
        },
        GroupPlan {
            name: "back".into(),
            plan: plan(1),
            worker_base: 2,
        },
    ];
    let r = go(&groups);
    let n = r.intervals.len();
    assert_eq!(
        n as u64,
        (WARMUP_MS + DURATION_MS) * 1_000_000 / INTERVAL_NS
    );
    assert_eq!(r.group_intervals.len(), 2);
    assert_eq!(r.host_intervals.len(), r.hosts.len());
    let names: Vec<&str> = r.group_intervals.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["front", "back"]);
    let models = models();
    for (g, workers) in [(0usize, 0..2usize), (1, 2..3)] {
        let rows = &r.group_intervals[g].rows;
        assert_eq!(rows.len(), n);
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(row.index as usize, k);
            let (a, b) = (k as u64 * INTERVAL_NS, (k as u64 + 1) * INTERVAL_NS);
            let lats: Vec<u64> = workers
                .clone()
                .flat_map(|w| recorded(&models[w], a, b))
                .collect();
            let what = |op: &str| format!("group {g} interval {k} {op}");
            check_interval(&row.read, &lats, 4096, &what("read"));
            check_interval(&row.write, &lats, 16384, &what("write"));
            let mut both = lats.clone();
            both.extend(&lats);
            assert_eq!(row.all.ios, both.len() as u64, "{}", what("all"));
            close(
                row.all.p99_us,
                exact_quantile(
                    &{
                        let mut s = both.clone();
                        s.sort_unstable();
                        s
                    },
                    0.99,
                ),
                &what("all"),
            );
        }
    }
    // Every row of a part sums, with the others, to the fleet's row; over the measured
    // intervals, a part's rows add up to its total.
    for (k, fleet) in r.intervals.iter().enumerate() {
        for dir in ["all", "read", "write"] {
            let pick = |x: &iofleet_stats::result::PartRow| -> u64 {
                match dir {
                    "all" => x.all.ios,
                    "read" => x.read.ios,
                    _ => x.write.ios,
                }
            };
            let fleet_ios = match dir {
                "all" => fleet.all.ios,
                "read" => fleet.read.ios,
                _ => fleet.write.ios,
            };
            let by_group: u64 = r.group_intervals.iter().map(|p| pick(&p.rows[k])).sum();
            let by_host: u64 = r.host_intervals.iter().map(|p| pick(&p.rows[k])).sum();
            assert_eq!(by_group, fleet_ios, "interval {k} {dir} by group");
            assert_eq!(by_host, fleet_ios, "interval {k} {dir} by host");
        }
        assert_eq!(fleet.all.ios, fleet.ios);
        assert!((fleet.all.iops - fleet.iops).abs() < 1e-9);
        assert_eq!(fleet.all.p99_us, fleet.p99_us);
        assert_eq!(fleet.read.p50_us, fleet.read_p50_us);
    }
    let measured = |rows: &[iofleet_stats::result::PartRow]| -> (u64, u64) {
        rows.iter()
            .zip(&r.intervals)
            .filter(|(_, i)| !i.warmup)
            .fold((0, 0), |(rd, wr), (p, _)| {
                (rd + p.read.ios, wr + p.write.ios)
            })
    };
    for (part, total) in r.group_intervals.iter().zip(&r.groups) {
        assert_eq!(measured(&part.rows), (total.read.ios, total.write.ios));
    }
    for (part, total) in r.host_intervals.iter().zip(&r.hosts) {
        assert_eq!(part.name, total.host);
        assert_eq!(measured(&part.rows), (total.read.ios, total.write.ios));
    }
}
