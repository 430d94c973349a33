//! The five published reports replayed by their own method (docs/reports.md): each
//! report's fleet shape and workload on simulated devices set to its published figures,
//! then the table the report printed, checked within the report's own rounding.
//!
//! A simulated device (`sim`, fixed service time, simulated clock) with `S` servers and
//! service time `t` completes exactly `S × ⌊1 s ÷ t⌋` I/Os a second when at least `S` are
//! outstanding, so a fleet can be set to a published IOPS figure to within 1 in 20,000.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// Sim engine settings under which one disk with enough outstanding I/Os completes
/// `iops` a second, to within 1 in 20,000: (servers, engine spec).
fn sim_at(iops: f64) -> (u32, String) {
    let servers = (iops / 20_000.0).ceil().max(1.0) as u32;
    let per_server = iops / servers as f64;
    // The service time whose whole count of completions a second is per_server.
    let ns = (1e9 / per_server).floor() as u64;
    (
        servers,
        format!("sim:servers={servers},service={ns}ns,dist=fixed"),
    )
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// Run `profile` on one worker with one disk set to `iops`, 1 s, stored in `db`.
fn one_disk_at(dir: &Path, db: &str, profile: &str, iops: f64, extra: &[&str]) -> Value {
    let (servers, engine) = sim_at(iops);
    let qd = servers.to_string();
    let mut args = vec![
        "run",
        profile,
        "--engine",
        &engine,
        "--workers",
        "1",
        "--disks",
        "1",
        "--threads",
        "1",
        "--qd",
        &qd,
        "--warmup",
        "0s",
        "--duration",
        "1s",
        "--interval",
        "1s",
        "--db",
        db,
        "--json",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let o = run_in(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Micron's vSAN and NVMe namespaces blog (2019): HCIBench easy-run's four tests with
/// no namespaces and with 8, IOPS 1,987 / 232,483 / 96,241 / 35,210 against 15,700 /
/// 896,556 / 480,309 / 421,027: the gains 790% / 386% / 499% / 1196% (new ÷ old), and
/// the same as changes (+690% ...), one row per test, one column per configuration.
#[test]
fn vsan_nvme_namespaces_gain_table() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db = db.to_str().unwrap();
    let tests = [
        ("seqw", "easy-run-256k0r", 1_987.0, 15_700.0, "790%"),
        ("randr", "easy-run-4k100r", 232_483.0, 896_556.0, "386%"),
        ("r70w30", "easy-run-4k70r", 96_241.0, 480_309.0, "499%"),
        ("r50w50", "easy-run-8k50r", 35_210.0, 421_027.0, "1196%"),
    ];
    let mut names = Vec::new();
    for (test, profile, none, eight, _) in tests {
        for (ns, iops) in [("none", none), ("8", eight)] {
            let name = format!("{test}-{ns}");
            let v = one_disk_at(
                d.path(),
                db,
                profile,
                iops,
                &[
                    "--name",
                    &name,
                    "--label",
                    &format!("test={test}"),
                    "--label",
                    &format!("ns={ns}"),
                ],
            );
            let got = v["summary"]["all"]["iops"].as_f64().unwrap();
            assert!(
                close(got, iops, 5e-5),
                "{name}: {got} IOPS, published {iops}"
            );
            names.push(name);
        }
    }
    let compare = |gain: &str, metric: &str| {
        let mut args: Vec<&str> = vec!["compare"];
        args.extend(names.iter().map(String::as_str));
        args.extend([
            "--by",
            "test",
            "--configs",
            "ns",
            "--gain",
            gain,
            "--metric",
            metric,
            "--db",
            db,
        ]);
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    // The IOPS table with the published gains, as the blog printed them.
    let text = compare("ratio", "iops");
    for (test, _, _, _, gain) in tests {
        let row = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(test))
            .unwrap_or_else(|| panic!("no row {test}: {text}"));
        assert_eq!(row.split_whitespace().last(), Some(gain), "{text}");
    }
    // The throughput table in the change form: the same runs, the same block size per
    // test, so the change in MB/s is the change in IOPS.
    let mut args: Vec<&str> = vec!["compare"];
    args.extend(names.iter().map(String::as_str));
    args.extend([
        "--by",
        "test",
        "--configs",
        "ns",
        "--metric",
        "mbps",
        "--json",
        "--db",
        db,
    ]);
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["gain"], "change");
    let rows = v["table"]["tables"][0]["rows"].as_array().unwrap().clone();
    for (test, _, none, eight, _) in tests {
        let row = rows.iter().find(|r| r["test"] == test).unwrap();
        let change = row["cells"][1]["gain"].as_f64().unwrap();
        let want = (eight - none) / none * 100.0;
        assert!((change - want).abs() < 0.05, "{test}: {change} vs {want}");
    }
    assert!(compare("change", "mbps").contains("+690.1%"));
}

const STARWIND_CLUSTER: &str = "hosts = 12\n[device]\nper_host = 4\nread_iops = 550000\n\
    write_iops = 550000\nread_mbps = 2400\nwrite_mbps = 2000\n\
    [protection]\nscheme = \"none\"\n";

/// StarWind's HCA report: 12 hosts × 4 Optane (550K 4K random reads each) make a
/// 26.4 M ceiling; 576 VMs of DISKSPD -t1 -o16 reached 26.8 M IOPS, 101.5% of it.
#[test]
fn starwind_ceiling_and_efficiency() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db = db.to_str().unwrap();
    let cluster = d.path().join("starwind.toml");
    std::fs::write(&cluster, STARWIND_CLUSTER).unwrap();
    // 576 workers, one disk each, one thread of 16 outstanding I/Os: each disk at its
    // share of 26.8 M.
    let per_vm: f64 = 26.8e6 / 576.0;
    let ns = (1e9 / (per_vm / 16.0)).round() as u64;
    let engine = format!("sim:servers=16,service={ns}ns,dist=fixed");
    let o = run_in(
        d.path(),
        &[
            "run",
            "diskspd-4k-read",
            "--engine",
            &engine,
            "--workers",
            "576",
            "--disks",
            "1",
            "--threads",
            "1",
            "--qd",
            "16",
            "--warmup",
            "0s",
            "--duration",
            "1s",
            "--db",
            db,
            "--name",
            "starwind",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run_in(
        d.path(),
        &[
            "ceiling",
            cluster.to_str().unwrap(),
            "--profile",
            "diskspd-4k-read",
            "--run",
            "starwind",
            "--db",
            db,
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["ceiling_iops"].as_f64().unwrap(), 26.4e6, "{j}");
    let eff = j["efficiency_pct"].as_f64().unwrap();
    // Published: 26.8 M of 26.4 M; 26.8 / 26.4 = 101.5%.
    assert_eq!(format!("{eff:.1}"), "101.5", "{j}");
}

/// The vSAN 5.5 report gave its figures as the median of 60 s intervals: 2,024,000 IOPS
/// for 4K reads (32 VMs × 8 vmdks × 16 outstanding), and for the 70/30 test 652,900
/// IOPS at 2.98 ms. The 70/30 run is replayed at the published rate (open loop, evenly
/// spaced arrivals) on devices of 2.98 ms, so IOPS and latency are both the report's.
#[test]
fn vsan_5_5_median_interval_iops_and_its_latency() {
    let d = tempfile::tempdir().unwrap();
    // Reads: 256 disks, each at 1/256 of 2,024,000 (one server of 126.48 µs).
    let v = run_json(
        d.path(),
        &[
            "vsan-2m-read",
            "--engine",
            "sim:servers=1,service=126480ns,dist=fixed",
            "--workers",
            "32",
            "--warmup",
            "0s",
            "--duration",
            "3s",
            "--interval",
            "1s",
            "--no-save",
        ],
    );
    let median = v["summary"]["iops_median_interval"].as_f64().unwrap();
    assert_eq!(format!("{:.0}", median / 1e3), "2024", "{median}");

    // 70/30: 32 VMs × 8 vmdks at 652,900 IOPS in all, evenly spaced; every I/O takes
    // 2.98 ms (64 servers per device: none waits).
    let profile = d.path().join("vsan-7030-uniform.toml");
    let o = run_in(d.path(), &["profiles", "show", "vsan-7030"]);
    let text = stdout(&o).replace(
        "interval = \"1s\"",
        "interval = \"1s\"\narrival = \"uniform\"",
    );
    assert!(text.contains("arrival = \"uniform\""), "{text}");
    std::fs::write(&profile, text).unwrap();
    let per_vm = (652_900.0f64 / 32.0).to_string();
    let v = run_json(
        d.path(),
        &[
            profile.to_str().unwrap(),
            "--engine",
            "sim:servers=64,service=2980us,dist=fixed",
            "--workers",
            "32",
            "--qd",
            "32",
            "--rate",
            &per_vm,
            "--warmup",
            "1s",
            "--duration",
            "3s",
            "--interval",
            "1s",
            "--no-save",
        ],
    );
    let median = v["summary"]["iops_median_interval"].as_f64().unwrap();
    assert_eq!(format!("{:.1}", median / 1e3), "652.9", "{median}");
    let at = &v["summary"]["median_interval"];
    let mean_ms = at["all"]["mean_us"].as_f64().unwrap() / 1e3;
    assert_eq!(format!("{mean_ms:.2}"), "2.98", "{at}");
}

/// A built-in profile with its arrivals evenly spaced (`timing.arrival = "uniform"`),
/// written to `dir`: at a rate whose count per lane over the run is whole, a replay then
/// delivers the published IOPS exactly.
fn uniform(dir: &Path, profile: &str) -> String {
    let o = run_in(dir, &["profiles", "show", profile]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o).replacen("\n[timing]\n", "\n[timing]\narrival = \"uniform\"\n", 1);
    assert!(text.contains("arrival = \"uniform\""), "{text}");
    let p = dir.join(format!("{profile}-uniform.toml"));
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// The Dell EMC VxRail report's rows, run with HCIBench's vdbench workload
/// `vdb-8vmdk-10ws-4k-70rdpct-30randompct-2threads`: each configuration's published
/// IOPS, delivered by its VMs at the published per-VM rate (one lane each, evenly spaced
/// arrivals, devices whose service time is the published latency), then printed in
/// HCIBench's terms: IOPS, MiB/s (771.53 for 197,512), and the mean over VMs of each
/// VM's mean latency (2.70 ms, 9.17 ms). The rows without a published latency run on
/// 1 ms devices and check IOPS and MiB/s.
#[test]
fn vxrail_rows_in_hcibench_terms() {
    let d = tempfile::tempdir().unwrap();
    let profile = uniform(d.path(), "vxrail-4k7030");
    // (configuration, VMs, IOPS, latency ms)
    let rows: [(&str, u32, f64, Option<f64>); 7] = [
        ("2 disk groups", 32, 197_512.0, Some(2.70)),
        ("1 disk group", 32, 73_475.0, Some(9.17)),
        ("RAID-1 FTT=0", 64, 315_084.0, None),
        ("RAID-1 FTT=1", 64, 308_508.0, None),
        ("RAID-5", 64, 302_161.0, None),
        ("dedupe+compression off", 64, 152_308.0, None),
        ("dedupe+compression on", 64, 122_235.0, None),
    ];
    for (config, vms, iops, latency_ms) in rows {
        let service = format!("{}us", (latency_ms.unwrap_or(1.0) * 1e3).round());
        let engine = format!("sim:servers=64,service={service},dist=fixed");
        let rate = (iops / vms as f64).to_string();
        // The shortest run in which every VM issues a whole number of I/Os at the
        // published rate: IOPS ÷ VMs × duration is whole.
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let duration = format!("{}s", vms as u64 / gcd(iops as u64, vms as u64));
        let workers = vms.to_string();
        let v = run_json(
            d.path(),
            &[
                &profile,
                "--engine",
                &engine,
                "--workers",
                &workers,
                "--disks",
                "1",
                "--threads",
                "1",
                "--qd",
                "32",
                "--rate",
                &rate,
                "--warmup",
                "1s",
                "--duration",
                &duration,
                "--interval",
                &duration,
                "--no-save",
                "--convention",
                "hcibench",
            ],
        );
        let figures: Vec<Value> = v["convention"]["figures"].as_array().unwrap().clone();
        let fig = |key: &str| {
            figures
                .iter()
                .find(|f| f["key"] == key)
                .unwrap_or_else(|| panic!("{config}: no {key} in {figures:?}"))["value"]
                .as_f64()
                .unwrap()
        };
        assert_eq!(
            format!("{:.0}", fig("iops")),
            format!("{iops:.0}"),
            "{config}"
        );
        let mib = iops * 4096.0 / 1048576.0;
        assert_eq!(
            format!("{:.2}", fig("throughput")),
            format!("{mib:.2}"),
            "{config}"
        );
        if let Some(ms) = latency_ms {
            assert_eq!(
                format!("{:.2}", fig("latency")),
                format!("{ms:.2}"),
                "{config}"
            );
            // In flight at that load: more than the 512 threads the workload ran (one
            // I/O outstanding each), so the published latency cannot be an I/O-weighted
            // mean over those threads (docs/reports.md).
            let in_flight = fig("outstanding_io");
            assert!(
                (in_flight - iops * ms / 1e3).abs() < 1.0,
                "{config}: {in_flight}"
            );
        }
    }
    // The headline row as printed: 197,512 IOPS is 771.53 MiB/s (and 809.0 MB/s exact).
    assert_eq!(format!("{:.2}", 197_512.0 * 4096.0 / 1048576.0), "771.53");
}
