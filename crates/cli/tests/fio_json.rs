//! `--output-format fio-json|fio-json+` on `run` and `results export --format fio-json|
//! fio-json+`: fio's JSON layout carrying iofleet's own figures. Every expected value is
//! computed here from iofleet's JSON result of the same run (written by `--output`), and
//! percentiles are read back from the bins by fio's rule, written out in this file.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

const SIM: &str = "sim:servers=4,service=200us,dist=exp";

/// `iofleet run ARGS --quiet --output-format FORMAT --output iofleet.json` in `dir`,
/// saved in `dir/r.db`: (fio document, iofleet's JSON result of the same run, the
/// document as printed).
fn run_fio(dir: &Path, format: &str, args: &[&str]) -> (Value, Value, Vec<u8>) {
    let db = dir.join("r.db");
    let out = dir.join("iofleet.json");
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--quiet", "--output-format", format, "--db"]);
    let (db_s, out_s) = (db.to_str().unwrap(), out.to_str().unwrap());
    all.extend_from_slice(&[db_s, "--output", out_s]);
    let o = run_in(dir, &all);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let fio: Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    let ours: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    (fio, ours, o.stdout)
}

/// The stored run's export is the live output, byte for byte.
fn assert_export_is(dir: &Path, format: &str, live: &[u8]) {
    let stored = export(dir, format);
    assert!(
        stored == live,
        "results export --format {format} differs from the live output"
    );
}

fn export(dir: &Path, format: &str) -> Vec<u8> {
    let db = dir.join("r.db");
    let o = run_in(
        dir,
        &[
            "results",
            "export",
            "latest",
            "--format",
            format,
            "--db",
            db.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    o.stdout
}

fn sim_args<'a>(workers: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "--engine",
        SIM,
        "--workers",
        workers,
        "--disks",
        "2",
        "--threads",
        "1",
        "--qd",
        "4",
        "--bs",
        "8k",
        "--read-pct",
        "70",
        "--random-pct",
        "100",
        "--warmup",
        "0s",
        "--duration",
        "3s",
    ];
    a.extend_from_slice(extra);
    a
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is a number"))
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{v} is an unsigned integer"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Width (ns) of the fio bucket whose written value is `key` (the bucket's middle, or
/// the value itself below 128): 2^(m-6) in [2^m, 2^(m+1)).
fn fio_width(key: u64) -> u64 {
    if key < 128 {
        1
    } else {
        1 << (63 - key.leading_zeros() - 6)
    }
}

/// fio's percentile from bins: the first bucket whose running count reaches p% of N.
fn fio_percentile(bins: &[(u64, u64)], p: f64) -> u64 {
    let n: u64 = bins.iter().map(|b| b.1).sum();
    let mut seen = 0;
    for &(k, c) in bins {
        seen += c;
        if seen as f64 >= p / 100.0 * n as f64 {
            return k;
        }
    }
    panic!("p{p} beyond the bins");
}

fn sorted_bins(clat: &Value) -> Vec<(u64, u64)> {
    let mut b: Vec<(u64, u64)> = clat["bins"]
        .as_object()
        .expect("clat_ns.bins")
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), u(v)))
        .collect();
    b.sort();
    b
}

/// One direction of a fio entry against iofleet's `OpSummary` of the same scope.
/// The measured intervals that count in iofleet's IOPS median (not warm-up, at least
/// half an interval long): their indexes.
fn counted(result: &Value) -> Vec<u64> {
    let nominal = f(&result["run"]["interval_s"]);
    result["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["warmup"] == false && f(&i["duration_s"]) * 2.0 >= nominal)
        .map(|i| u(&i["index"]))
        .collect()
}

/// One direction's figures over the counted intervals: of the fleet (`part` None), or
/// of a host or group (`("host_intervals", name)`).
fn interval_ops(result: &Value, part: Option<(&str, &Value)>, dir: &str) -> Vec<Value> {
    let keep = counted(result);
    let rows: Vec<Value> = match part {
        None => result["intervals"].as_array().unwrap().clone(),
        Some((key, name)) => result[key]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| &p["name"] == name)
            .expect("the part's intervals")["rows"]
            .as_array()
            .unwrap()
            .clone(),
    };
    rows.iter()
        .filter(|r| keep.contains(&u(&r["index"])))
        .map(|r| r[dir].clone())
        .collect()
}

/// fio's sample statistics: min, max, mean, deviation with n − 1.
fn stats(x: &[f64]) -> (f64, f64, f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let dev = (x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)).sqrt();
    let min = x.iter().copied().fold(f64::MAX, f64::min);
    let max = x.iter().copied().fold(f64::MIN, f64::max);
    (min, max, mean, dev)
}

fn check_samples(fio: &Value, intervals: &[Value]) {
    assert!(intervals.len() > 1, "several intervals to sample");
    assert_eq!(u(&fio["iops_samples"]), intervals.len() as u64);
    assert_eq!(u(&fio["bw_samples"]), intervals.len() as u64);
    let iops: Vec<f64> = intervals.iter().map(|i| f(&i["iops"])).collect();
    let (min, max, mean, dev) = stats(&iops);
    assert_eq!(
        (u(&fio["iops_min"]), u(&fio["iops_max"])),
        (min.round() as u64, max.round() as u64)
    );
    assert!(close(f(&fio["iops_mean"]), mean) && close(f(&fio["iops_stddev"]), dev));
    let bw: Vec<f64> = intervals
        .iter()
        .map(|i| f(&i["mbps"]) * 1e6 / 1024.0)
        .collect();
    let (min, max, mean, dev) = stats(&bw);
    assert_eq!(
        (u(&fio["bw_min"]), u(&fio["bw_max"])),
        (min.round() as u64, max.round() as u64)
    );
    assert!(close(f(&fio["bw_mean"]), mean) && close(f(&fio["bw_dev"]), dev));
}

fn check_dir(fio: &Value, ours: &Value, duration_s: f64, full: bool) {
    let ios = u(&ours["ios"]);
    let bytes = u(&ours["bytes"]);
    assert_eq!(u(&fio["total_ios"]), ios);
    assert_eq!(u(&fio["io_bytes"]), bytes);
    assert_eq!(u(&fio["io_kbytes"]), bytes / 1024);
    assert!(close(f(&fio["iops"]), f(&ours["iops"])));
    let bw_bytes = f(&ours["mbps"]) * 1e6;
    assert_eq!(u(&fio["bw_bytes"]), bw_bytes.round() as u64);
    assert_eq!(u(&fio["bw"]), (bw_bytes / 1024.0).round() as u64);
    assert_eq!(u(&fio["runtime"]), (duration_s * 1000.0).round() as u64);
    // Submission latency is not measured apart.
    assert_eq!(u(&fio["slat_ns"]["N"]), 0);
    let l = &ours["latency_us"];
    for block in ["clat_ns", "lat_ns"] {
        let c = &fio[block];
        assert_eq!(u(&c["N"]), ios, "{block}");
        assert_eq!(u(&c["min"]), (f(&l["min"]) * 1000.0).round() as u64);
        assert_eq!(u(&c["max"]), (f(&l["max"]) * 1000.0).round() as u64);
        assert!(close(f(&c["mean"]), f(&l["mean"]) * 1000.0));
        // fio's deviation is the sample one: iofleet's population one × √(N/(N−1)).
        let sample = f(&l["stddev"]) * 1000.0 * (ios as f64 / (ios - 1) as f64).sqrt();
        assert!(close(f(&c["stddev"]), sample), "{block} stddev");
    }
    let pct = fio["clat_ns"]["percentile"]
        .as_object()
        .expect("percentile");
    assert_eq!(pct.len(), if full { 17 } else { 6 });
    for (key, p) in [
        ("50.000000", "p50"),
        ("90.000000", "p90"),
        ("95.000000", "p95"),
        ("99.000000", "p99"),
        ("99.900000", "p99_9"),
        ("99.990000", "p99_99"),
    ] {
        assert_eq!(u(&pct[key]), (f(&l[p]) * 1000.0).round() as u64, "{key}");
    }
}

fn check_bins(fio: &Value, ours: &Value) {
    let bins = sorted_bins(&fio["clat_ns"]);
    assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), u(&ours["ios"]));
    let l = &ours["latency_us"];
    for (p, name) in [
        (50.0, "p50"),
        (90.0, "p90"),
        (95.0, "p95"),
        (99.0, "p99"),
        (99.9, "p99_9"),
    ] {
        let ours_ns = (f(&l[name]) * 1000.0).round() as u64;
        let fio_ns = fio_percentile(&bins, p);
        assert!(
            fio_ns.abs_diff(ours_ns) <= fio_width(fio_ns),
            "p{p}: fio bins give {fio_ns} ns, iofleet {ours_ns} ns"
        );
    }
}

/// fio's latency range of a latency in ns, as one index ascending through
/// `latency_ns` (0–9), `latency_us` (10–19) and `latency_ms` (20–31): fio's
/// `io_u_mark_latency`, written out here.
fn fio_range(ns: u64) -> usize {
    const UPPER: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let (base, v) = match ns {
        0..=999 => (0, ns),
        1000..=999_999 => (10, ns / 1000),
        _ => (20, ns / 1_000_000),
    };
    base + UPPER
        .iter()
        .position(|&u| v < u)
        .unwrap_or(if v < 2000 { 10 } else { 11 })
}

/// An entry's `latency_ns`, `latency_us` and `latency_ms` as one list of 32 shares (%).
fn latency_maps(entry: &Value) -> Vec<f64> {
    const KEYS: [&str; 10] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let mut out = Vec::new();
    for (map, more) in [
        ("latency_ns", &[][..]),
        ("latency_us", &[][..]),
        ("latency_ms", &["2000", ">=2000"][..]),
    ] {
        let m = entry[map]
            .as_object()
            .unwrap_or_else(|| panic!("{map} on {}", entry["jobname"]));
        let keys: Vec<&str> = KEYS.iter().chain(more).copied().collect();
        // (serde_json's map here sorts its keys: the order is checked in the unit tests.)
        let mut want = keys.clone();
        want.sort();
        assert_eq!(
            m.keys().map(String::as_str).collect::<Vec<_>>(),
            want,
            "{map}"
        );
        out.extend(keys.iter().map(|k| f(&m[*k])));
    }
    out
}

/// The latency ranges hold every I/O of the entry, and each range's count lies between
/// what the entry's own bins (fio's buckets, read and write) put in it for sure and what
/// they may put in it (a fio bucket across a range edge may count on either side).
fn check_latency_maps(entry: &Value) {
    let shares = latency_maps(entry);
    assert!(
        (shares.iter().sum::<f64>() - 100.0).abs() < 1e-6,
        "{shares:?}"
    );
    let n = u(&entry["read"]["total_ios"]) + u(&entry["write"]["total_ios"]);
    let (mut sure, mut may) = (vec![0u64; 32], vec![0u64; 32]);
    for dir in ["read", "write"] {
        if u(&entry[dir]["total_ios"]) == 0 {
            continue;
        }
        for (key, count) in sorted_bins(&entry[dir]["clat_ns"]) {
            let w = fio_width(key);
            let low = key - w / 2;
            let (a, b) = (fio_range(low), fio_range(low + w - 1));
            if a == b {
                sure[a] += count;
            }
            for m in &mut may[a..=b] {
                *m += count;
            }
        }
    }
    for r in 0..32 {
        let count = shares[r] / 100.0 * n as f64;
        assert!(
            count + 1e-6 >= sure[r] as f64 && count <= may[r] as f64 + 1e-6,
            "range {r}: {count} I/Os, bins say {} to {}",
            sure[r],
            may[r]
        );
    }
}

fn check_options(entry: &Value) {
    let o = entry["job options"]
        .as_object()
        .expect("job options on every entry");
    for k in [
        "rw", "bs", "iodepth", "numjobs", "size", "runtime", "ioengine", "direct",
    ] {
        assert!(o.contains_key(k), "job options lack {k}: {entry:?}");
    }
    assert_eq!(o["rw"], "randrw");
    assert_eq!(o["rwmixread"], "70");
    assert_eq!(o["bs"], "8k");
    assert_eq!(o["iodepth"], "4");
    assert_eq!(o["runtime"], "3");
}

#[test]
fn a_run_in_fio_json_carries_iofleets_figures() {
    let d = tempfile::tempdir().unwrap();
    let (fio, ours, live) = run_fio(d.path(), "fio-json", &sim_args("2", &[]));
    assert!(fio["fio version"].as_str().unwrap().starts_with("iofleet-"));
    assert_eq!(u(&fio["timestamp_ms"]), u(&fio["timestamp"]) * 1000);
    assert!(fio["time"].is_string() && fio["global options"].is_object());
    assert!(fio.get("client_stats").is_none());
    let jobs = fio["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    let j = &jobs[0];
    check_options(j);
    assert_eq!(j["job options"]["numjobs"], "4"); // 2 workers × 2 disks × 1 thread
    assert_eq!(j["job options"]["ioengine"], "iofleet-sim");
    assert_eq!((u(&j["groupid"]), j["error"].as_i64()), (0, Some(0)));
    let dur = f(&ours["run"]["duration_s"]);
    assert_eq!(u(&j["job_runtime"]), (dur * 1000.0).round() as u64);
    for dir in ["read", "write"] {
        check_dir(&j[dir], &ours["summary"][dir], dur, true);
        check_samples(&j[dir], &interval_ops(&ours, None, dir));
    }
    assert!(
        j["read"]["clat_ns"].get("bins").is_none(),
        "bins are json+ only"
    );
    let shares = latency_maps(j);
    assert!((shares.iter().sum::<f64>() - 100.0).abs() < 1e-6);
    assert_eq!(u(&j["trim"]["total_ios"]), 0);
    assert_eq!(u(&j["sync"]["total_ios"]), 0);
    // The stored run exports the same document.
    assert_export_is(d.path(), "fio-json", &live);
}

#[test]
fn fio_json_plus_bins_hold_every_io_and_give_iofleets_percentiles() {
    let d = tempfile::tempdir().unwrap();
    let (fio, ours, live) = run_fio(d.path(), "fio-json+", &sim_args("2", &[]));
    let j = &fio["jobs"][0];
    for dir in ["read", "write"] {
        check_bins(&j[dir], &ours["summary"][dir]);
    }
    check_latency_maps(j);
    assert!(j["trim"]["clat_ns"].get("bins").is_none());
    // Exported from the store, byte for byte the live output.
    assert_export_is(d.path(), "fio-json+", &live);

    // fio's own converter reads it: its counts are the bins, its percentiles iofleet's.
    check_clat2csv(
        d.path(),
        "fio_json_plus_bins_hold_every_io_and_give_iofleets_percentiles",
        &live,
        &[(j, &ours["summary"])],
    );
}

/// fio's `fio_jsonplus_clat2csv` converts the `fio-json+` document `doc` (and its
/// `--validate` passes); for each job (the fio entry and iofleet's figures of the same
/// scope, with `read` and `write`) and direction with I/O, the CSV's counts are the
/// entry's bins, its cumulative counts add them up, and each percentile recomputed from
/// the CSV (the first latency whose cumulative count reaches p% of the I/Os, fio's rule)
/// is iofleet's own within one fio bucket's width.
fn check_clat2csv(dir: &Path, test: &str, doc: &[u8], jobs: &[(&Value, &Value)]) {
    if !need::need(test, &["fio_jsonplus_clat2csv"]) {
        return;
    }
    let src = dir.join("plus.json");
    std::fs::write(&src, doc).unwrap();
    let csv = dir.join("lat.csv");
    for extra in [None, Some("--validate")] {
        let mut c = std::process::Command::new("fio_jsonplus_clat2csv");
        c.arg(&src).arg(&csv).args(extra);
        let o = c.output().unwrap();
        assert!(o.status.success(), "fio_jsonplus_clat2csv: {}", stderr(&o));
    }
    for (n, (job, ours)) in jobs.iter().enumerate() {
        let text = std::fs::read_to_string(dir.join(format!("lat_job{n}.csv"))).unwrap();
        let mut lines = text.lines();
        let head: Vec<&str> = lines.next().unwrap().split(',').map(str::trim).collect();
        let rows: Vec<Vec<&str>> = lines
            .map(|l| l.split(',').map(str::trim).collect())
            .collect();
        let col = |name: String| head.iter().position(|h| *h == name).unwrap();
        for d in ["read", "write"] {
            let ios = u(&ours[d]["ios"]);
            if ios == 0 {
                continue;
            }
            let (c_count, c_cum) = (
                col(format!("{d}_clat_ns_count")),
                col(format!("{d}_clat_ns_cumulative")),
            );
            // (latency, count, cumulative) of the rows where this direction has a count.
            let csv: Vec<(u64, u64, u64)> = rows
                .iter()
                .filter(|r| !r[c_count].is_empty())
                .map(|r| {
                    let num = |i: usize| r[i].parse::<u64>().unwrap();
                    (num(0), num(c_count), num(c_cum))
                })
                .collect();
            let counts: Vec<(u64, u64)> = csv.iter().map(|r| (r.0, r.1)).collect();
            assert_eq!(counts, sorted_bins(&job[d]["clat_ns"]), "job {n} {d}");
            let mut sum = 0;
            for r in &csv {
                sum += r.1;
                assert_eq!(r.2, sum, "job {n} {d}: cumulative at {} ns", r.0);
            }
            assert_eq!(sum, ios, "job {n} {d}");
            let l = &ours[d]["latency_us"];
            for (p, name) in [
                (50.0, "p50"),
                (90.0, "p90"),
                (95.0, "p95"),
                (99.0, "p99"),
                (99.9, "p99_9"),
                (99.99, "p99_99"),
            ] {
                let from_csv = csv
                    .iter()
                    .find(|r| r.2 as f64 >= p / 100.0 * ios as f64)
                    .unwrap()
                    .0;
                let own = (f(&l[name]) * 1000.0).round() as u64;
                assert!(
                    from_csv.abs_diff(own) <= fio_width(from_csv),
                    "job {n} {d} p{p}: the CSV gives {from_csv} ns, iofleet {own} ns"
                );
            }
        }
    }
}

#[test]
fn a_fleet_of_three_hosts_gives_client_stats_per_host_and_all_clients() {
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("local.toml");
    std::fs::write(
        &inv,
        (1..=3)
            .map(|i| format!("[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\n"))
            .collect::<String>(),
    )
    .unwrap();
    let args = sim_args("3", &["--hosts", inv.to_str().unwrap()]);
    let (fio, ours, live) = run_fio(d.path(), "fio-json+", &args);
    assert!(fio.get("jobs").is_none(), "fio's client shape has no jobs");
    let clients = fio["client_stats"].as_array().expect("client_stats");
    assert_eq!(clients.len(), 4);
    let dur = f(&ours["run"]["duration_s"]);
    let hosts = ours["hosts"].as_array().unwrap();
    for (c, h) in clients.iter().zip(hosts) {
        assert_eq!(c["hostname"], h["host"]);
        check_options(c);
        assert_eq!(c["job options"]["numjobs"], "2");
        for dir in ["read", "write"] {
            // Each host's own merged histograms: fio's full list, and bins.
            check_dir(&c[dir], &h[dir], dur, true);
            check_bins(&c[dir], &h[dir]);
            let part = Some(("host_intervals", &h["host"]));
            check_samples(&c[dir], &interval_ops(&ours, part, dir));
        }
        check_latency_maps(c);
    }
    // fio's client shape keeps the workload in `global options`, as one host runs it.
    let g = &fio["global options"];
    assert_eq!(
        (&g["rw"], &g["bs"], &g["iodepth"], &g["numjobs"]),
        (&"randrw".into(), &"8k".into(), &"4".into(), &"2".into())
    );
    let all = &clients[3];
    assert_eq!(all["jobname"], "All clients");
    check_options(all);
    assert_eq!(all["job options"]["numjobs"], "6");
    for dir in ["read", "write"] {
        check_dir(&all[dir], &ours["summary"][dir], dur, true);
        check_samples(&all[dir], &interval_ops(&ours, None, dir));
        check_bins(&all[dir], &ours["summary"][dir]);
    }
    check_latency_maps(all);
    let hosts_ios: u64 = clients[..3]
        .iter()
        .map(|c| u(&c["read"]["total_ios"]))
        .sum();
    assert_eq!(hosts_ios, u(&all["read"]["total_ios"]));
    assert_export_is(d.path(), "fio-json+", &live);
}

#[test]
fn output_format_mistakes_exit_2_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    let bad = |args: &[&str], says: &str| {
        let o = run_in(d.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty());
    };
    bad(
        &["run", "--engine", "null", "--output-format", "fio"],
        "--output-format",
    );
    bad(
        &[
            "run",
            "--engine",
            "null",
            "--output-format",
            "fio-json+",
            "--no-save",
        ],
        "--output-format fio-json+",
    );
    bad(
        &[
            "run",
            "--engine",
            "null",
            "--output-format",
            "fio-json",
            "--dry-run",
        ],
        "--output-format",
    );
    bad(
        &[
            "run",
            "--engine",
            "null",
            "--output-format",
            "json",
            "--json",
        ],
        "--output-format",
    );
    bad(
        &["results", "export", "latest", "--format", "fio"],
        "--format",
    );
}

#[test]
fn json_and_table_are_output_formats_too() {
    let d = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "--engine",
        "null",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--quiet",
        "--no-save",
    ];
    let mut json = args.to_vec();
    json.extend_from_slice(&["--output-format", "json"]);
    let o = run_in(d.path(), &json);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["summary"]["read"]["ios"].as_u64().unwrap() > 0);
    let mut table = args.to_vec();
    table.extend_from_slice(&["--output-format", "table"]);
    let o = run_in(d.path(), &table);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(serde_json::from_slice::<Value>(&o.stdout).is_err());
    assert!(!o.stdout.is_empty());
}

#[test]
fn worker_groups_are_fio_jobs_with_their_own_options() {
    let d = tempfile::tempdir().unwrap();
    let args = [
        "--group",
        "rr=easy-run-4k100r:2",
        "--group",
        "sw=easy-run-256k0r:1",
        "--engine",
        "null",
        "--disks",
        "1",
        "--threads",
        "1",
        "--warmup",
        "0s",
        "--duration",
        "1s",
        "--interval",
        "250ms",
    ];
    let (fio, ours, live) = run_fio(d.path(), "fio-json+", &args);
    let jobs = fio["jobs"].as_array().unwrap();
    let groups = ours["groups"].as_array().unwrap();
    assert_eq!((jobs.len(), groups.len()), (2, 2));
    let dur = f(&ours["run"]["duration_s"]);
    for (i, (j, g)) in jobs.iter().zip(groups).enumerate() {
        assert_eq!(j["jobname"], g["name"]);
        assert_eq!(u(&j["groupid"]), i as u64);
        for dir in ["read", "write"] {
            if u(&g[dir]["ios"]) > 0 {
                // Per group: the group's own merged histograms.
                check_dir(&j[dir], &g[dir], dur, true);
                check_bins(&j[dir], &g[dir]);
                let part = Some(("group_intervals", &g["name"]));
                check_samples(&j[dir], &interval_ops(&ours, part, dir));
            } else {
                assert_eq!(u(&j[dir]["total_ios"]), 0);
            }
        }
        check_latency_maps(j);
    }
    let o = |i: usize, k: &str| jobs[i]["job options"][k].as_str().unwrap().to_string();
    assert_eq!(
        (o(0, "rw"), o(0, "bs"), o(0, "numjobs")),
        ("randread".into(), "4k".into(), "2".into())
    );
    assert_eq!(
        (o(1, "rw"), o(1, "bs"), o(1, "numjobs")),
        ("write".into(), "256k".into(), "1".into())
    );
    let ios: u64 = jobs
        .iter()
        .map(|j| u(&j["read"]["total_ios"]) + u(&j["write"]["total_ios"]))
        .sum();
    assert_eq!(ios, u(&ours["summary"]["all"]["ios"]));
    assert_export_is(d.path(), "fio-json+", &live);
    // One CSV per group, each with the group's own bins and percentiles.
    let pairs: Vec<(&Value, &Value)> = jobs.iter().zip(groups).collect();
    check_clat2csv(
        d.path(),
        "worker_groups_are_fio_jobs_with_their_own_options",
        &live,
        &pairs,
    );
}

#[test]
fn an_unsaved_run_gives_fio_json_with_iofleets_own_percentiles_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "--engine",
            "null",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--quiet",
            "--no-save",
            "--output-format",
            "fio-json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("not saved"), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let clat = &v["jobs"][0]["read"]["clat_ns"];
    assert!(u(&clat["N"]) > 0);
    let keys: Vec<&String> = clat["percentile"].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 6, "p50 to p99.99: {keys:?}");
    assert!(clat.get("bins").is_none());
    // The latency ranges come from histograms too.
    for map in ["latency_ns", "latency_us", "latency_ms"] {
        assert!(v["jobs"][0].get(map).is_none(), "{map}");
    }
}
