//! The whole pipeline (lanes, interval rotation, per-worker merge, summary) must report
//! the percentiles of the union of every recorded latency, never an average of
//! per-worker percentiles. Latencies are injected by the null engine in simulated time,
//! so each thread's sequence of completions is known exactly and the expected figures
//! are computed here independently, from raw samples, by sorting.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use iofleet_engine::null::LatencyModel;
use iofleet_engine::target::TargetSpec;
use iofleet_fleet::{run_local, EngineSpec, RunSettings, Silent};
use iofleet_profile::{
    Arrival, BlockSizes, Bytes, FleetShape, GroupPlan, Locality, Plan, Prepare, StreamPlan, Timing,
};

/// Run `groups` on this host's threads (no target: the engine is simulated).
fn go(groups: &[GroupPlan], settings: &RunSettings) -> iofleet_stats::result::RunResult {
    run_local(
        groups,
        TargetSpec::Dir("unused".into()),
        "none".into(),
        settings,
        Arc::new(AtomicBool::new(false)),
        &mut Silent,
    )
    .unwrap()
}

/// A deterministic pseudo-random latency list (ns) from a simple LCG, independent of
/// the engine's own generators.
fn lcg_list(seed: u64, n: usize, f: impl Fn(f64) -> u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            f((x >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn plan(workers: u32, disks: u32, threads: u32, warmup_ms: u64, duration_ms: u64) -> Plan {
    Plan {
        name: "exact".into(),
        description: "test".into(),
        fleet: FleetShape {
            workers,
            disks_per_worker: disks,
            disk_size: Bytes(1 << 30),
            threads_per_disk: threads,
            qd: 1,
            io_threads: None,
            cpus: None,
        },
        timing: Timing {
            prepare: Prepare::None,
            warmup: Duration::from_millis(warmup_ms),
            duration: Duration::from_millis(duration_ms),
            interval: Duration::from_millis(250),
            rate_iops: None,
            arrival: Arrival::Uniform,
            verify: false,
        },
        streams: vec![StreamPlan {
            name: "s".into(),
            bs: BlockSizes::fixed(Bytes(4096)),
            read_pct: 70.0,
            random_pct: 100.0,
            align: Bytes(4096),
            weight: Some(1),
            rate_iops: None,
            qd: None,
            locality: Locality::Uniform,
            working_set_pct: 100.0,
            disks: (0..disks).collect(),
        }],
        data: Default::default(),
    }
}

/// Latencies a qd-1 thread records in [start, end): I/O k completes at the running sum
/// of the cycled samples.
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

fn close(got_us: f64, exact_ns: f64, what: &str) {
    let exact_us = exact_ns / 1000.0;
    // HDR keeps 3 significant digits: within 0.1% of the exact value.
    assert!(
        (got_us - exact_us).abs() <= exact_us * 0.001 + 0.001,
        "{what}: reported {got_us} µs, exact {exact_us} µs"
    );
}

#[test]
fn merged_percentiles_equal_union_of_raw_samples() {
    let models = [
        // Worker 0: uniform 50..150 µs.
        lcg_list(1, 997, |u| 50_000 + (u * 100_000.0) as u64),
        // Worker 1: mostly 80 µs, 2% at 2..6 ms (a slow node).
        lcg_list(2, 1009, |u| {
            if u < 0.02 {
                2_000_000 + (u * 200_000_000.0) as u64
            } else {
                80_000 + (u * 10_000.0) as u64
            }
        }),
        // Worker 2: heavy tail, 20 µs .. ~20 ms.
        lcg_list(3, 1013, |u| {
            20_000 + (1.0 / (1.0 - u * 0.999) * 20_000.0) as u64
        }),
    ];
    let (workers, disks, threads) = (3u32, 2u32, 2u32);
    let (warmup_ms, duration_ms) = (500u64, 3000u64);
    let settings = RunSettings {
        engine: EngineSpec::NullSim(models.iter().cloned().map(LatencyModel::Samples).collect()),
        seed: 42,
        ..RunSettings::default()
    };
    let groups = GroupPlan::single(plan(workers, disks, threads, warmup_ms, duration_ms), 0);
    let result = go(&groups, &settings);
    assert!(!result.run.interrupted);
    assert_eq!(result.run.engine, "null-sim");

    let start = warmup_ms * 1_000_000;
    let end = (warmup_ms + duration_ms) * 1_000_000;
    let mut union = Vec::new();
    let mut per_worker_p99 = Vec::new();
    for (w, m) in models.iter().enumerate() {
        let one_thread = recorded(m, start, end);
        let mut worker: Vec<u64> = Vec::new();
        for _ in 0..disks * threads {
            worker.extend(&one_thread);
        }
        worker.sort_unstable();
        let ws = &result.workers[w];
        assert_eq!(ws.all.ios, worker.len() as u64, "worker {w} I/O count");
        close(
            ws.all.latency_us.as_ref().unwrap().p99,
            exact_quantile(&worker, 0.99),
            "worker p99",
        );
        per_worker_p99.push(exact_quantile(&worker, 0.99));
        union.extend(worker);
    }
    union.sort_unstable();
    let all = &result.summary.all;
    assert_eq!(all.ios, union.len() as u64);
    assert_eq!(result.summary.read.ios + result.summary.write.ios, all.ios);
    close(
        all.latency_us.as_ref().unwrap().p50,
        exact_quantile(&union, 0.5),
        "p50",
    );
    close(
        all.latency_us.as_ref().unwrap().p90,
        exact_quantile(&union, 0.9),
        "p90",
    );
    close(
        all.latency_us.as_ref().unwrap().p99,
        exact_quantile(&union, 0.99),
        "p99",
    );
    close(
        all.latency_us.as_ref().unwrap().p99_9,
        exact_quantile(&union, 0.999),
        "p99.9",
    );
    close(
        all.latency_us.as_ref().unwrap().max,
        *union.last().unwrap() as f64,
        "max",
    );
    let mean = union.iter().map(|&x| x as f64).sum::<f64>() / union.len() as f64;
    assert!(
        (all.latency_us.as_ref().unwrap().mean - mean / 1000.0).abs() < 1e-6,
        "exact mean"
    );
    // The average of per-worker p99s (what some tools report) is not the fleet p99.
    let avg_p99 = per_worker_p99.iter().sum::<f64>() / per_worker_p99.len() as f64;
    assert!((avg_p99 - exact_quantile(&union, 0.99)).abs() > exact_quantile(&union, 0.99) * 0.05);

    // Measured window and intervals: 2 warm-up + 12 measured intervals of 250 ms.
    assert!((result.run.duration_s - 3.0).abs() < 1e-9);
    assert_eq!(result.intervals.iter().filter(|i| i.warmup).count(), 2);
    assert_eq!(result.intervals.iter().filter(|i| !i.warmup).count(), 12);
    let interval_ios: u64 = result
        .intervals
        .iter()
        .filter(|i| !i.warmup)
        .map(|i| i.ios)
        .sum();
    assert_eq!(interval_ios, all.ios, "intervals add up to the total");
    // Little's law: mean outstanding = Σ latency / elapsed ≈ 12 qd-1 threads, busy.
    let o = result.summary.outstanding_io;
    assert_eq!(o.configured, Some(12));
    assert!((o.measured_mean.unwrap() - 12.0).abs() < 0.1, "{o:?}");
}

#[test]
fn open_loop_rate_is_honoured_and_latency_counts_from_intended_time() {
    // One thread at 1000 IOPS uniform arrivals against a device that takes 5 ms: with
    // qd 2 the device can only finish 400/s, so the backlog grows and latency measured
    // from the intended issue time must grow far beyond the 5 ms service time.
    let mut p = plan(1, 1, 1, 0, 2000);
    p.fleet.qd = 2;
    p.timing.rate_iops = Some(1000.0);
    let settings = RunSettings {
        engine: EngineSpec::NullSim(vec![LatencyModel::Fixed(5_000_000)]),
        ..RunSettings::default()
    };
    let r = go(&GroupPlan::single(p.clone(), 0), &settings);
    let iops = r.summary.all.iops;
    assert!((iops - 400.0).abs() < 5.0, "device-bound rate {iops}");
    assert!(
        r.summary.all.latency_us.as_ref().unwrap().p99 > 500_000.0,
        "backlog shows in latency"
    );

    // Under the device's capacity, the achieved rate is the requested one and latency
    // is the service time.
    p.timing.rate_iops = Some(100.0);
    let r = go(&GroupPlan::single(p, 0), &settings);
    assert!(
        (r.summary.all.iops - 100.0).abs() < 2.0,
        "{}",
        r.summary.all.iops
    );
    assert!((r.summary.all.latency_us.as_ref().unwrap().p99 - 5000.0).abs() < 5.0);
}
