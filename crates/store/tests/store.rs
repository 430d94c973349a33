//! The store through its public API: a synthetic run written interval by interval and
//! read back, figures recomputed from the stored histograms (not echoed from the stored
//! summary), runs left `running` by a dead process (whose unrecorded figures are
//! unknown, not 0), runs that lost hosts (listed as such), migrations from version 1,
//! run-id resolution and deletion.

use std::collections::BTreeMap;

use iofleet_stats::brief::HostBrief;
use iofleet_stats::result::{
    CpuSummary, ErrorSummary, IntervalRow, MemorySummary, Outstanding, RunInfo, RunResult,
    RunSummary, SCHEMA_VERSION,
};
use iofleet_stats::summary::median;
use iofleet_stats::{OpSummary, Sample};
use iofleet_store::{environment, ListFilter, NewRun, Relayed, RunStatus, Store, StoreError};
use rand::{Rng, SeedableRng};
use serde_json::json;

fn info(profile: &str, workers: u32) -> RunInfo {
    RunInfo {
        profile: profile.into(),
        description: String::new(),
        engine: "null".into(),
        started_at: "2025-01-01T00:00:00Z".into(),
        duration_s: 0.0,
        warmup_s: 0.25,
        interval_s: 0.25,
        interrupted: false,
        direct: true,
        target: "none".into(),
        hostname: "h1".into(),
        iofleet_version: "0.1.0".into(),
        start_skew_ms: Some(0.0),
        plan: recorded_plan(workers),
        prepare_s: None,
        kubernetes: None,
        vms: None,
        drop_caches: None,
        start_unix_ns: None,
    }
}

/// A plan of `workers` workers with two streams, `data` and `log`, as a result records it.
fn recorded_plan(workers: u32) -> iofleet_profile::RecordedPlan {
    let stream = |name: &str| {
        json!({"name": name, "bs": {"entries": [[4096, 1]]}, "read_pct": 70.0,
               "random_pct": 100.0, "align": 4096, "weight": 1, "rate_iops": null,
               "qd": null, "locality": {"kind": "uniform"}, "working_set_pct": 100.0,
               "disks": [0]})
    };
    serde_json::from_value(json!({
        "name": "p", "description": "",
        "fleet": {"workers": workers, "disks_per_worker": 1, "disk_size": 1048576,
                  "threads_per_disk": 1, "qd": 1},
        "timing": {"prepare": "none", "warmup": 0.25, "duration": 1.0, "interval": 0.25,
                   "rate_iops": null, "arrival": "poisson"},
        "streams": [stream("data"), stream("log")]
    }))
    .unwrap()
}

/// Intervals of random samples: (row, per-worker samples). Interval 0 is warm-up.
fn synthetic(workers: usize, n: u32, seed: u64) -> Vec<(IntervalRow, Vec<Sample>)> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|k| {
            let samples: Vec<Sample> = (0..workers)
                .map(|w| {
                    let mut s = Sample::new(2);
                    for _ in 0..rng.random_range(200..400) {
                        let lat = rng.random_range(10_000..200_000) * (w as u64 + 1);
                        if rng.random_bool(0.7) {
                            s.streams[0].read.record(lat, 4096);
                        } else {
                            s.streams[0].write.record(lat, 4096);
                        }
                    }
                    s.streams[1]
                        .write
                        .record(rng.random_range(1_000..5_000_000), 32768);
                    if k == 2 && w == 1 {
                        s.streams[0].write.record_error();
                    }
                    s
                })
                .collect();
            let mut fleet = Sample::new(2);
            samples.iter().for_each(|s| fleet += s);
            let secs = 0.25;
            let row = IntervalRow {
                index: k,
                t_s: k as f64 * secs,
                duration_s: secs,
                warmup: k == 0,
                ios: fleet.ios(),
                iops: fleet.ios() as f64 / secs,
                mbps: 0.0,
                read_iops: 0.0,
                write_iops: 0.0,
                p50_us: None,
                p99_us: None,
                read_p50_us: None,
                read_p99_us: None,
                write_p50_us: None,
                write_p99_us: None,
                errors: fleet.errors(),
                hosts_lost: 0,
                generator: None,
                all: Default::default(),
                read: Default::default(),
                write: Default::default(),
                net: None,
                observers: None,
            };
            (row, samples)
        })
        .collect()
}

/// Per-worker samples as workers of one disk each.
fn one_disk(samples: &[Sample]) -> Vec<Vec<Sample>> {
    samples.iter().map(|s| vec![s.clone()]).collect()
}

fn self_check() -> iofleet_stats::GeneratorSummary {
    iofleet_stats::GeneratorSummary {
        io_threads: 2,
        busy_pct: 41.5,
        ..Default::default()
    }
}

fn expected_totals(data: &[(IntervalRow, Vec<Sample>)]) -> (Sample, f64) {
    let mut fleet = Sample::new(2);
    let mut secs = 0.0;
    for (row, samples) in data.iter().filter(|(r, _)| !r.warmup) {
        samples.iter().for_each(|s| fleet += s);
        secs += row.duration_s;
    }
    (fleet, secs)
}

fn record(store: &mut Store, name: &str, labels: &[(&str, &str)], n: u32) -> String {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let info = info("synthetic", 3);
    let env = environment("0.1.0", "none");
    let id = store
        .begin_run(&NewRun {
            name: Some(name),
            labels: &labels,
            info: &info,
            environment: &env,
        })
        .unwrap();
    for (row, samples) in synthetic(3, n, 42) {
        store
            .record_interval(&id, &row, &one_disk(&samples))
            .unwrap();
    }
    id
}

fn fake_final(info: RunInfo) -> RunResult {
    // Deliberately wrong figures: recomputation must not echo them.
    let bogus = OpSummary {
        ios: 1,
        iops: 1.0,
        ..Default::default()
    };
    RunResult {
        schema_version: SCHEMA_VERSION,
        stored: None,
        run: RunInfo {
            duration_s: 1.0,
            ..info
        },
        summary: RunSummary {
            all: bogus.clone(),
            read: bogus.clone(),
            write: bogus,
            iops_median_interval: Some(1.0),
            outstanding_io: Outstanding {
                configured: Some(96),
                measured_mean: Some(1.0),
            },
            cpu: Some(CpuSummary {
                usr_pct: 12.5,
                ..Default::default()
            }),
            memory: Some(MemorySummary {
                rss_peak_mib: 7.0,
                host_used_pct: 10.0,
            }),
            errors: ErrorSummary {
                count: 1,
                ..Default::default()
            },
            generator: Some(self_check()),
            verify: None,
            net: None,
            observers: None,
        },
        streams: vec![],
        intervals: vec![IntervalRow {
            generator: Some(self_check()),
            ..IntervalRow::from_sample(2, 0.5, 0.25, false, 0, &Sample::new(2))
        }],
        workers: vec![],
        hosts: vec![],
        groups: vec![],
        host_intervals: vec![],
        group_intervals: vec![],
        notices: vec!["from the live run".into()],
        steady_state: None,
        validity: Default::default(),
    }
}

#[test]
fn round_trip_recomputes_from_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sub/results.db");
    let mut store = Store::open(&db).unwrap();
    assert_eq!(
        store.schema_version().unwrap(),
        iofleet_store::LATEST_VERSION
    );
    let id = record(&mut store, "raid5", &[("policy", "raid5")], 6);
    store
        .finish_run(&id, &fake_final(info("synthetic", 3)))
        .unwrap();
    drop(store);

    let store = Store::open_existing(&db).unwrap();
    let a = store.analyze(&id).unwrap();
    assert_eq!(a.meta.status, RunStatus::Complete);
    assert_eq!(a.meta.name, "raid5");
    assert_eq!(a.meta.labels["policy"], "raid5");
    assert!(a.has_final);

    let data = synthetic(3, 6, 42);
    let (fleet, secs) = expected_totals(&data);
    let r = &a.result;
    assert_eq!(r.summary.all, OpSummary::from_ops(&fleet.all(), secs));
    assert_eq!(r.summary.read, OpSummary::from_ops(&fleet.read(), secs));
    assert_eq!(r.summary.write, OpSummary::from_ops(&fleet.write(), secs));
    assert_eq!(a.read_hist, fleet.read().hist);
    assert_eq!(r.streams.len(), 2);
    assert_eq!(r.streams[1].name, "log");
    assert_eq!(r.workers.len(), 3);
    assert_eq!(r.intervals.len(), 6);
    assert_eq!(r.intervals[2].errors, 1);
    let iops: Vec<f64> = r.intervals[1..].iter().map(|i| i.iops).collect();
    assert_eq!(r.summary.iops_median_interval, Some(median(&iops)));
    // What histograms cannot give comes from the stored final result.
    assert_eq!(r.summary.cpu.as_ref().unwrap().usr_pct, 12.5);
    // The generator self-check is not in the histograms: it comes from the live run.
    assert_eq!(r.summary.generator, Some(self_check()));
    assert_eq!(r.intervals[2].generator, Some(self_check()));
    assert_eq!(r.intervals[1].generator, None);
    assert_eq!(r.summary.outstanding_io.configured, Some(96));
    assert_eq!(r.notices, vec!["from the live run".to_string()]);
    // The result says which stored run it is.
    let st = r.stored.as_ref().expect("identity");
    assert_eq!((st.id.as_str(), st.name.as_str()), (id.as_str(), "raid5"));
    assert_eq!(st.labels["policy"], "raid5");
    assert_eq!(st.status, "complete");

    // The listing agrees on IOPS without reading histograms.
    let list = store.list(&ListFilter::default()).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].intervals, 5);
    assert!((list[0].iops - r.summary.all.iops).abs() < 1e-6);
}

#[test]
fn run_left_running_by_dead_process_is_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut store = Store::open(&db).unwrap();
    let id = record(&mut store, "killed", &[], 3);
    // While this (live) process records it, the run is running.
    assert_eq!(store.meta(&id).unwrap().status, RunStatus::Running);
    assert!(store.meta(&id).unwrap().recorder_alive);
    assert!(matches!(
        store.delete(&id),
        Err(StoreError::StillRunning { .. })
    ));
    drop(store);
    // A pid the kernel gave to another process since (alive, started at another time)
    // is not the recorder.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE runs SET recorder_pid = 1", [])
        .unwrap();
    drop(conn);
    let m = Store::open_existing(&db).unwrap().meta(&id).unwrap();
    assert!(!m.recorder_alive);
    assert_eq!(m.status, RunStatus::Incomplete);
    // Pretend the recorder died: a pid that cannot exist.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE runs SET recorder_pid = 2147483646", [])
        .unwrap();
    drop(conn);
    let store = Store::open_existing(&db).unwrap();
    let a = store.analyze(&id).unwrap();
    assert_eq!(a.meta.status, RunStatus::Incomplete);
    assert!(!a.has_final);
    assert!(a.result.run.interrupted);
    assert_eq!(a.result.intervals.len(), 3);
    let (fleet, secs) = expected_totals(&synthetic(3, 3, 42));
    assert_eq!(
        a.result.summary.all,
        OpSummary::from_ops(&fleet.all(), secs)
    );
    assert_eq!(a.result.run.duration_s, secs);
    assert_eq!(a.result.summary.errors.count, 1);
    assert!(a.result.notices[0].contains("without a final result"));
    // What only the live run knew is unknown, not zero.
    let s = &a.result.summary;
    assert_eq!(s.cpu, None);
    assert_eq!(s.memory, None);
    assert_eq!(s.outstanding_io.configured, None);
    assert!(s.outstanding_io.measured_mean.is_some_and(|m| m > 0.0));
}

#[test]
fn runs_that_lost_hosts_are_listed_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lost.db");
    let mut store = Store::open(&db).unwrap();
    // A run that finished with every host, one whose final result has a lost host, and
    // one whose recorder died after intervals measured without a host.
    let ok = record(&mut store, "ok", &[], 3);
    store
        .finish_run(&ok, &fake_final(info("synthetic", 3)))
        .unwrap();
    let lost = record(&mut store, "lost", &[], 3);
    let mut r = fake_final(info("synthetic", 3));
    r.hosts = vec![host("h1", None), host("h2", Some(0.4))];
    store.finish_run(&lost, &r).unwrap();
    let id = store
        .begin_run(&NewRun {
            name: Some("killed"),
            labels: &BTreeMap::new(),
            info: &info("synthetic", 3),
            environment: &environment("0.1.0", "none"),
        })
        .unwrap();
    for (mut row, samples) in synthetic(3, 3, 7) {
        row.hosts_lost = u32::from(row.index >= 1);
        store
            .record_interval(&id, &row, &one_disk(&samples))
            .unwrap();
    }
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE runs SET recorder_pid = 2147483646 WHERE id = ?1",
        [&id],
    )
    .unwrap();
    drop(conn);

    let store = Store::open_existing(&db).unwrap();
    let list = store.list(&ListFilter::default()).unwrap();
    let by_name = |n: &str| list.iter().find(|r| r.meta.name == n).unwrap();
    assert_eq!(by_name("ok").meta.status, RunStatus::Complete);
    assert_eq!(by_name("ok").meta.hosts_lost, 0);
    assert_eq!(by_name("lost").meta.status, RunStatus::HostsLost);
    assert_eq!(by_name("lost").meta.status.as_str(), "hosts-lost");
    assert_eq!(by_name("lost").meta.hosts_lost, 1);
    // A dead recorder stays incomplete, and the intervals tell the loss.
    assert_eq!(by_name("killed").meta.status, RunStatus::Incomplete);
    assert_eq!(by_name("killed").meta.hosts_lost, 1);
    let a = store.analyze(&lost).unwrap();
    assert_eq!(a.meta.status, RunStatus::HostsLost);
    assert_eq!(a.result.stored.unwrap().status, "hosts-lost");
}

fn host(name: &str, lost_at_s: Option<f64>) -> iofleet_stats::result::HostSummary {
    iofleet_stats::result::HostSummary {
        host: name.into(),
        workers: 1,
        all: OpSummary::default(),
        read: OpSummary::default(),
        write: OpSummary::default(),
        start_late_ms: None,
        lost_at_s,
        observer: false,
        straggler: false,
        cpu: None,
        memory: None,
        net: None,
        disk: None,
        storage: Vec::new(),
        scraped: Vec::new(),
        kubernetes: None,
    }
}

#[test]
fn version_1_store_is_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v1.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(iofleet_store::MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        let info = serde_json::to_string(&info("old", 1)).unwrap();
        conn.execute(
            "INSERT INTO runs (id, name, profile, engine, started_at, status, info, environment)
             VALUES ('0a0b0c0d', 'old run', 'old', 'null', '2024-01-01T00:00:00Z', 'running', ?1, '{}')",
            [info],
        )
        .unwrap();
    }
    let store = Store::open(&db).unwrap();
    assert_eq!(
        store.schema_version().unwrap(),
        iofleet_store::LATEST_VERSION
    );
    let list = store.list(&ListFilter::default()).unwrap();
    assert_eq!(list.len(), 1);
    // A v1 run has no recorder: left 'running', it shows as incomplete.
    assert_eq!(list[0].meta.status, RunStatus::Incomplete);
    let a = store.analyze("0a0b0c0d").unwrap();
    assert_eq!(a.result.summary.all.ios, 0);
    drop(store);
    // Opening again is a no-op; a store from the future is refused.
    Store::open(&db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let e = Store::open(&db).err().expect("too new");
    assert!(matches!(e, StoreError::TooNew { found: 99, .. }), "{e}");
    assert!(e.to_string().contains("--db"));
}

#[test]
fn resolve_filters_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let e = Store::open_existing(&db).err().expect("missing");
    assert!(e.to_string().contains("--db"), "{e}");
    let mut store = Store::open(&db).unwrap();
    assert!(matches!(store.resolve("latest"), Err(StoreError::Empty)));
    // 17 runs: two of them must share a first hex digit.
    let mut ids = Vec::new();
    for i in 0..17 {
        let policy = if i % 2 == 0 { "raid1" } else { "raid5" };
        let id = record(&mut store, &format!("run{i}"), &[("policy", policy)], 1);
        store
            .finish_run(&id, &fake_final(info("synthetic", 3)))
            .unwrap();
        ids.push(id);
    }
    assert_eq!(store.resolve("latest").unwrap(), ids[16]);
    assert_eq!(store.resolve(&ids[3]).unwrap(), ids[3]);
    assert_eq!(store.resolve(&ids[3].to_uppercase()).unwrap(), ids[3]);
    assert_eq!(store.resolve("run5").unwrap(), ids[5]);
    let first = |s: &String| s[..1].to_string();
    let shared = ids
        .iter()
        .find(|a| ids.iter().filter(|b| first(b) == first(a)).count() > 1)
        .map(first)
        .unwrap();
    match store.resolve(&shared) {
        Err(StoreError::Ambiguous { matches, .. }) => assert!(matches.len() >= 2),
        other => panic!("expected ambiguous, got {other:?}"),
    }
    let unique = ids
        .iter()
        .find(|a| ids.iter().filter(|b| b[..5] == a[..5]).count() == 1)
        .unwrap();
    assert_eq!(store.resolve(&unique[..5]).unwrap(), *unique);
    assert!(matches!(
        store.resolve("ffffffffff"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.resolve("no-such-name"),
        Err(StoreError::NotFound { .. })
    ));

    let raid5 = store
        .list(&ListFilter {
            labels: vec![("policy".into(), "raid5".into())],
            profile: None,
        })
        .unwrap();
    assert_eq!(raid5.len(), 8);
    let none = store
        .list(&ListFilter {
            labels: vec![],
            profile: Some("other".into()),
        })
        .unwrap();
    assert!(none.is_empty());

    store.delete(&ids[0]).unwrap();
    assert!(matches!(
        store.resolve(&ids[0]),
        Err(StoreError::NotFound { .. }) | Err(StoreError::Ambiguous { .. })
    ));
    assert!(matches!(
        store.meta(&ids[0]),
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 16);
}

#[test]
fn default_path_follows_xdg() {
    std::env::set_var("XDG_DATA_HOME", "/tmp/xdg-test-iofleet");
    assert_eq!(
        iofleet_store::default_path().unwrap(),
        std::path::PathBuf::from("/tmp/xdg-test-iofleet/iofleet/results.db")
    );
    std::env::set_var("XDG_DATA_HOME", "relative/ignored");
    let p = iofleet_store::default_path().unwrap();
    assert!(
        p.ends_with(".local/share/iofleet/results.db"),
        "{}",
        p.display()
    );
}

#[test]
fn hosts_and_groups_over_time_add_up_to_the_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    let labels = BTreeMap::new();
    let info = info("synthetic", 3);
    let env = environment("0.1.0", "none");
    let id = store
        .begin_run(&NewRun {
            name: None,
            labels: &labels,
            info: &info,
            environment: &env,
        })
        .unwrap();
    let hosts = ["h1".to_string(), "h2".to_string()];
    store.set_worker_hosts(&id, &hosts, &[0, 0, 1]).unwrap();
    let data = synthetic(3, 4, 7);
    for (row, samples) in &data {
        store.record_interval(&id, row, &one_disk(samples)).unwrap();
        // h1 reports what it spent; h2 does not (a host that sends no usage).
        let used = iofleet_stats::HostUsage {
            wall_s: 0.25,
            proc_usr_s: 0.05,
            host_busy_s: 0.1,
            host_total_s: 0.5,
            ..Default::default()
        };
        store
            .record_usage(&id, row.index, &hosts, &[Some(used), None])
            .unwrap();
    }
    let a = store.analyze(&id).unwrap();
    let names: Vec<&str> = a.host_series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["h1", "h2"]);
    for (k, fleet_row) in a.result.intervals.iter().enumerate() {
        let (h1, h2) = (&a.host_series[0].rows[k], &a.host_series[1].rows[k]);
        assert_eq!(h1.ios + h2.ios, fleet_row.ios, "interval {k}");
        let mut expect = Sample::new(2);
        data[k].1[2..].iter().for_each(|s| expect += s);
        assert_eq!(h2.ios, expect.ios());
        let cpu = a.host_series[0].cpu[k].as_ref().expect("h1 reported");
        assert!((cpu.usr_pct - 20.0).abs() < 1e-9 && (cpu.host_pct - 20.0).abs() < 1e-9);
        assert!(a.host_series[1].cpu[k].is_none(), "h2 reported nothing");
    }
    // One profile: one group of every worker, the fleet's own rows.
    assert_eq!(a.group_series.len(), 1);
    assert_eq!(
        a.group_series[0].rows,
        a.result
            .intervals
            .iter()
            .map(|r| IntervalRow {
                generator: None,
                net: None,
                ..r.clone()
            })
            .collect::<Vec<_>>()
    );
    // The fleet's rows carry the worker hosts' network from the usage recorded: h1's
    // alone (h2 reported none).
    for (k, r) in a.result.intervals.iter().enumerate() {
        let h1 = a.result.host_intervals[0].rows[k]
            .usage
            .as_ref()
            .expect("h1 reported");
        assert_eq!(r.net.as_ref(), Some(&h1.net), "interval {k}");
        assert!(a.result.host_intervals[1].rows[k].usage.is_none());
        assert!(r.observers.is_none());
    }
    // Deleting the run deletes its usage too.
    store.finish_run(&id, &fake_final(info)).unwrap();
    store.delete(&id).unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("r.db")).unwrap();
    let left: i64 = conn
        .query_row("SELECT COUNT(*) FROM host_usage", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}

#[test]
fn per_disk_samples_give_disks_and_older_per_worker_samples_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    let mut store = Store::open(&db).unwrap();
    let labels = BTreeMap::new();
    let (info, env) = (info("synthetic", 3), environment("0.1.0", "none"));
    let new = NewRun {
        name: None,
        labels: &labels,
        info: &info,
        environment: &env,
    };
    // Two disks per worker, drawn apart so that a mix-up shows.
    let (d0, d1) = (synthetic(3, 4, 1), synthetic(3, 4, 2));
    let id = store.begin_run(&new).unwrap();
    for ((row, a), (_, b)) in d0.iter().zip(&d1) {
        let disks: Vec<Vec<Sample>> = a
            .iter()
            .zip(b)
            .map(|(x, y)| vec![x.clone(), y.clone()])
            .collect();
        store.record_interval(&id, row, &disks).unwrap();
    }
    let r = store.analyze(&id).unwrap().result;
    let secs = 0.75;
    let total = |data: &[(IntervalRow, Vec<Sample>)], w: usize| {
        let mut s = Sample::new(2);
        data.iter()
            .filter(|(row, _)| !row.warmup)
            .for_each(|(_, ws)| s += &ws[w]);
        s
    };
    for w in 0..3 {
        let (t0, t1) = (total(&d0, w), total(&d1, w));
        let disks = &r.workers[w].disks;
        assert_eq!(disks.len(), 2);
        assert_eq!(disks[0].all, OpSummary::from_ops(&t0.all(), secs));
        assert_eq!(disks[1].write, OpSummary::from_ops(&t1.write(), secs));
        let mut both = t0.clone();
        both += &t1;
        assert_eq!(r.workers[w].all, OpSummary::from_ops(&both.all(), secs));
    }
    // One host, one group: their interval rows are the fleet's, direction by direction.
    assert_eq!(r.host_intervals.len(), 1);
    assert_eq!(r.group_intervals.len(), 1);
    for (k, row) in r.intervals.iter().enumerate() {
        for part in [&r.host_intervals[0].rows[k], &r.group_intervals[0].rows[k]] {
            assert_eq!(part.index, row.index);
            assert_eq!(
                (&part.all, &part.read, &part.write),
                (&row.all, &row.read, &row.write)
            );
        }
    }
    // The same run as an older store kept it: per-worker samples (here disk 0's), no
    // per-disk ones. Workers then have no disks, and their figures are disk 0's.
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "INSERT INTO samples SELECT run_id, idx, worker, stream,
             read_ios, read_bytes, read_errors, read_lat_sum_ns, read_lat_sq_sum_ns2, read_hist,
             write_ios, write_bytes, write_errors, write_lat_sum_ns, write_lat_sq_sum_ns2, write_hist
         FROM disk_samples WHERE disk = 0;
         DELETE FROM disk_samples;",
    )
    .unwrap();
    drop(conn);
    let r = Store::open(&db).unwrap().analyze(&id).unwrap().result;
    for w in 0..3 {
        assert!(r.workers[w].disks.is_empty());
        assert_eq!(
            r.workers[w].all,
            OpSummary::from_ops(&total(&d0, w).all(), secs)
        );
    }
}

#[test]
fn read_only_store_reads_and_never_writes_or_migrates() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ro.db");
    let e = Store::open_read_only(&db).err().expect("missing");
    assert!(matches!(e, StoreError::Missing { .. }), "{e}");
    let id = {
        let mut store = Store::open(&db).unwrap();
        let id = record(&mut store, "kept", &[("policy", "raid1")], 2);
        store
            .finish_run(&id, &fake_final(info("synthetic", 3)))
            .unwrap();
        id
    };
    let mut ro = Store::open_read_only(&db).unwrap();
    assert_eq!(ro.resolve("kept").unwrap(), id);
    assert_eq!(ro.list(&ListFilter::default()).unwrap().len(), 1);
    assert!(ro.analyze(&id).unwrap().result.summary.all.ios > 0);
    // A write through it fails, and the run is still there.
    assert!(ro.delete(&id).is_err());
    drop(ro);
    assert_eq!(
        Store::open_existing(&db).unwrap().resolve("kept").unwrap(),
        id
    );

    // An older store is refused, not migrated.
    let old = dir.path().join("v1.db");
    {
        let conn = rusqlite::Connection::open(&old).unwrap();
        conn.execute_batch(iofleet_store::MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
    }
    let e = Store::open_read_only(&old).err().expect("old schema");
    assert!(
        matches!(e, StoreError::OtherVersion { found: 1, .. }),
        "{e}"
    );
    let conn = rusqlite::Connection::open(&old).unwrap();
    let v: u32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 1, "a read-only open migrates nothing");
}

/// Record `data` (3 workers of one disk: worker 0 on h1, workers 1 and 2 on h2) as a
/// new run: flat, or with h2 below a relay (its workers' samples only as the group's
/// merged sample and h2's brief per interval, then, when `totals`, the relay's
/// per-(worker, disk) totals, else what the relay measured as unsent); with a final
/// result when `finish` (one whose figures are bogus: recomputation ignores them).
fn record_relayed(
    store: &mut Store,
    data: &[(IntervalRow, Vec<Sample>)],
    relay: Option<bool>,
    finish: bool,
) -> String {
    let labels = BTreeMap::new();
    let (info, env) = (info("synthetic", 3), environment("0.1.0", "none"));
    let new = NewRun {
        name: None,
        labels: &labels,
        info: &info,
        environment: &env,
    };
    let id = store.begin_run(&new).unwrap();
    let hosts = ["h1".to_string(), "h2".to_string()];
    store.set_worker_hosts(&id, &hosts, &[0, 1, 1]).unwrap();
    let (mut below, mut measured) = (vec![Sample::new(2); 2], Sample::new(2));
    for (row, samples) in data {
        if relay.is_none() {
            store.record_interval(&id, row, &one_disk(samples)).unwrap();
            continue;
        }
        let mut group = Sample::new(2);
        samples[1..].iter().for_each(|s| group += s);
        if !row.warmup {
            below[0] += &samples[1];
            below[1] += &samples[2];
            measured += &group;
        }
        let briefs = [HostBrief::of(1, &group, None)];
        let relayed = Relayed {
            groups: std::slice::from_ref(&group),
            hosts: &briefs,
            host_names: &hosts,
        };
        let disks = vec![vec![samples[0].clone()], Vec::new(), Vec::new()];
        store
            .record_relayed_interval(&id, row, &disks, &relayed)
            .unwrap();
    }
    match relay {
        Some(true) => {
            // Global worker numbers from 10: the store keeps them local.
            let totals: Vec<(u32, u32, Sample)> = below
                .into_iter()
                .enumerate()
                .map(|(w, s)| (11 + w as u32, 0, s))
                .collect();
            store.record_relay_totals(&id, 10, &totals[..1]).unwrap();
            store.record_relay_totals(&id, 10, &totals[1..]).unwrap();
        }
        Some(false) => store
            .record_unsent_groups(&id, std::slice::from_ref(&measured))
            .unwrap(),
        None => {}
    }
    if finish {
        store.finish_run(&id, &fake_final(info)).unwrap();
    }
    id
}

/// A relayed run recomputes as the same run recorded flat: fleet, streams, workers,
/// hosts, groups, every interval row, the hosts' and groups' rows and series and their
/// histograms; it moves between stores with what the relays sent, and is deleted with
/// it. With the relay lost before its totals, the fleet and the group still count what
/// it measured, and its workers have nothing.
#[test]
fn a_relayed_run_recomputes_as_the_flat_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut store = Store::open(&db).unwrap();
    let data = synthetic(3, 5, 11);
    let flat_id = record_relayed(&mut store, &data, None, true);
    let tree_id = record_relayed(&mut store, &data, Some(true), true);
    let flat = store.analyze(&flat_id).unwrap();
    let tree = store.analyze(&tree_id).unwrap();
    let (f, t) = (&flat.result, &tree.result);
    assert_eq!(t.summary, f.summary);
    assert_eq!(t.streams, f.streams);
    assert_eq!(t.workers, f.workers);
    assert_eq!(t.hosts, f.hosts);
    assert_eq!(t.groups, f.groups);
    assert_eq!(t.intervals, f.intervals);
    assert_eq!(t.host_intervals, f.host_intervals);
    assert_eq!(t.group_intervals, f.group_intervals);
    assert_eq!(tree.host_series, flat.host_series);
    assert_eq!(tree.group_series, flat.group_series);
    assert_eq!(tree.host_hists, flat.host_hists);
    assert_eq!(tree.group_hists, flat.group_hists);
    assert_eq!(
        (tree.read_hist, tree.write_hist),
        (flat.read_hist, flat.write_hist)
    );
    assert!(f.hosts[1].all.ios > 0 && f.workers[2].all.ios > 0);
    // The listing's interval counts include the relayed group.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let ios = |id: &str| -> i64 {
        conn.query_row(
            "SELECT SUM(ios) FROM intervals WHERE run_id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(ios(&tree_id), ios(&flat_id));

    // Moved to another store with everything the relays sent.
    let other = dir.path().join("other.db");
    Store::open(&other).unwrap();
    store.push_run(&other, &tree_id).unwrap();
    let moved = Store::open(&other).unwrap().analyze(&tree_id).unwrap();
    assert_eq!(moved.result.workers, f.workers);
    assert_eq!(moved.result.host_intervals, f.host_intervals);

    // The relay lost before its totals: fleet and group as flat, its workers empty.
    let lost_id = record_relayed(&mut store, &data, Some(false), true);
    let lost = store.analyze(&lost_id).unwrap().result;
    assert_eq!(lost.summary.all, f.summary.all);
    assert_eq!(lost.streams, f.streams);
    assert_eq!(lost.groups, f.groups);
    assert_eq!(lost.intervals, f.intervals);
    assert_eq!(lost.workers[0], f.workers[0]);
    assert_eq!(lost.hosts[0], f.hosts[0]);
    assert_eq!(lost.workers[1].all.ios + lost.workers[2].all.ios, 0);
    assert_eq!(lost.hosts[1].all.ios, 0);

    // Killed before its end (no final result, no relay totals): its fleet and group
    // count what the relay sent per interval, its workers below the relay nothing, as
    // a notice says; the same run killed flat has the same fleet and groups.
    let killed_id = record_relayed(&mut store, &data, Some(true), false);
    let killed_flat_id = record_relayed(&mut store, &data, None, false);
    store.abandon_run(&killed_id).unwrap();
    store.abandon_run(&killed_flat_id).unwrap();
    conn.execute("DELETE FROM relay_totals WHERE run_id = ?1", [&killed_id])
        .unwrap();
    let killed = store.analyze(&killed_id).unwrap().result;
    let killed_flat = store.analyze(&killed_flat_id).unwrap().result;
    assert_eq!(killed.summary.all, killed_flat.summary.all);
    assert_eq!(killed.streams, killed_flat.streams);
    assert_eq!(killed.groups, killed_flat.groups);
    assert_eq!(killed.intervals, killed_flat.intervals);
    assert_eq!(killed.workers[0], killed_flat.workers[0]);
    assert_eq!(killed.workers[1].all.ios + killed.workers[2].all.ios, 0);
    assert!(
        killed
            .notices
            .iter()
            .any(|n| n.contains("below relays have no totals")),
        "{:?}",
        killed.notices
    );

    // A brief that cannot be read back is a damaged run, named with its host and
    // interval; a brief of a host the run does not have is ignored.
    conn.execute(
        "UPDATE relayed_hosts SET host = 'elsewhere' WHERE run_id = ?1 AND idx = 1",
        [&tree_id],
    )
    .unwrap();
    let a = store.analyze(&tree_id).unwrap().result;
    assert_eq!(a.host_intervals[1].rows[1].all.ios, 0);
    assert_eq!(a.host_intervals[1].rows[2], f.host_intervals[1].rows[2]);
    conn.execute(
        "UPDATE relayed_hosts SET brief = '{\"host\": 1' WHERE run_id = ?1 AND idx = 2",
        [&tree_id],
    )
    .unwrap();
    let e = store.analyze(&tree_id).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
    assert!(
        e.to_string().contains("brief of host h2 in interval 2"),
        "{e}"
    );

    // A count beyond what SQLite holds is refused, naming it, and nothing is written.
    let mut huge = Sample::new(2);
    huge.streams[1].write.ios = u64::MAX;
    let e = store
        .record_relay_totals(&killed_id, 0, &[(0, 0, huge)])
        .unwrap_err();
    assert!(matches!(e, StoreError::Overflow(_)), "{e:?}");
    assert!(
        e.to_string().contains(&format!("write ios = {}", u64::MAX)),
        "{e}"
    );
    let kept: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM relay_totals WHERE run_id = ?1",
            [&killed_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kept, 0);

    // Deleting the runs deletes what the relays sent.
    for id in [&flat_id, &tree_id, &lost_id, &killed_id, &killed_flat_id] {
        store.delete(id).unwrap();
    }
    for table in [
        "relayed_samples",
        "relayed_hosts",
        "relay_totals",
        "unsent_groups",
    ] {
        let left: i64 = conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0, "{table}");
    }
}
