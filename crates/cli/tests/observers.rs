//! Observer hosts: an inventory host with `role = "observer"` runs no I/O and reports
//! its CPU, memory, network and disks per interval, as a storage node of the system
//! under test would. Three real sshd hosts on loopback, one an observer.
//!
//! Loopback traffic is not counted (every interface but `lo` is), and every sshd host
//! here is this machine: so the test makes traffic of its own on a veth pair into a
//! network namespace it creates, during the run, and checks that the observer saw at
//! least that much leave. Needs root (sshd, `ip netns`); skips without it unless CI is
//! set.

mod common;
#[path = "support/sshd.rs"]
mod sshd;

use std::net::UdpSocket;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use sshd::Cluster;

/// A network namespace joined to this one by a veth pair: 10.231.0.1 here, 10.231.0.2
/// inside. Removed (with the pair) when dropped.
struct TestNet {
    ns: String,
}

impl TestNet {
    fn create() -> TestNet {
        let ns = format!("iofleet-obs-{}", std::process::id());
        let host_if = format!("iof{}", std::process::id() % 100_000);
        let sh = |args: &[&str]| {
            let o = Command::new("ip").args(args).output().expect("ip runs");
            assert!(
                o.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        sh(&["netns", "add", &ns]);
        let net = TestNet { ns: ns.clone() };
        sh(&[
            "link", "add", &host_if, "type", "veth", "peer", "name", "eth0", "netns", &ns,
        ]);
        sh(&["addr", "add", "10.231.0.1/30", "dev", &host_if]);
        sh(&["link", "set", &host_if, "up"]);
        sh(&["-n", &ns, "addr", "add", "10.231.0.2/30", "dev", "eth0"]);
        sh(&["-n", &ns, "link", "set", "eth0", "up"]);
        net
    }
}

impl Drop for TestNet {
    fn drop(&mut self) {
        // Deleting the namespace deletes its end of the pair, and so the pair.
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

/// Send UDP datagrams into the namespace at `rate` bytes per second until `stop` is
/// set; returns the bytes sent and the seconds it took.
fn send_traffic(rate: f64, stop: &AtomicBool) -> (u64, f64) {
    let sock = UdpSocket::bind("10.231.0.1:0").expect("bind on the veth address");
    let payload = vec![0x5au8; 1400];
    let start = Instant::now();
    let mut sent = 0u64;
    while !stop.load(Ordering::SeqCst) {
        // Paced: what is due by now.
        if sent as f64 >= rate * start.elapsed().as_secs_f64() {
            std::thread::sleep(Duration::from_millis(2));
            continue;
        }
        if let Ok(n) = sock.send_to(&payload, "10.231.0.2:9") {
            sent += n as u64;
        }
    }
    (sent, start.elapsed().as_secs_f64())
}

/// A quiet null-engine run of `vsan-7030` over the inventory, one disk per worker, no
/// warm-up; `extra` sets the rest.
fn null_run(dir: &Path, inv: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "vsan-7030",
        "--hosts",
        inv,
        "--engine",
        "null",
        "--disks",
        "1",
        "--warmup",
        "0s",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    run_in(dir, &args)
}

fn inventory(c: &Cluster, dir: &Path) -> String {
    let opts: Vec<String> = c.ssh_args().iter().map(|a| format!("{a:?}")).collect();
    let mut t = format!("[ssh]\noptions = [{}]\n", opts.join(", "));
    for (i, h) in c.hosts.iter().enumerate() {
        t.push_str(&format!("[[host]]\ndestination = {:?}\n", h.alias));
        if i == 1 {
            t.push_str("role = \"observer\"\n");
        } else {
            t.push_str(&format!(
                "target = {:?}\n",
                h.data_dir.display().to_string()
            ));
        }
    }
    let p = dir.join("inventory.toml");
    std::fs::write(&p, t).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn an_observer_host_reports_cpu_network_and_disks_per_interval_and_runs_no_io() {
    if !need::need(
        "an_observer_host_reports_cpu_network_and_disks_per_interval_and_runs_no_io",
        &["root", "ip"],
    ) {
        return;
    }
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path());
    let observer = c.hosts[1].alias.clone();

    // The dry run says what the observer does, and gives the workers to the others.
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "vsan-7030",
            "--hosts",
            &inv,
            "--workers",
            "4",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let plan = stdout(&o);
    assert!(
        plan.contains(&format!(
            "host {observer} (ssh {observer}): observer, runs no I/O"
        )),
        "{plan}"
    );
    assert!(plan.contains("every disk of the host"), "{plan}");
    assert!(
        plan.contains("workers 0..=1") && plan.contains("workers 2..=3"),
        "{plan}"
    );

    // Traffic at a steady 2 MB/s from before the run starts until after it ends, so
    // every measured interval has its share, whatever the start-up takes.
    const RATE: f64 = 2e6;
    let net = TestNet::create();
    let stop = Arc::new(AtomicBool::new(false));
    let traffic = {
        let stop = stop.clone();
        std::thread::spawn(move || send_traffic(RATE, &stop))
    };
    std::thread::sleep(Duration::from_millis(300));
    let o = null_run(
        tmp.path(),
        &inv,
        &[
            "--workers",
            "4",
            "--duration",
            "4s",
            "--interval",
            "1s",
            "--db",
            "r.db",
            "--name",
            "busy",
            "--json",
        ],
    );
    stop.store(true, Ordering::SeqCst);
    let (sent, over_s) = traffic.join().unwrap();
    drop(net);
    // The pace held on average (the sender catches up after any delay).
    assert!(
        sent as f64 >= RATE * over_s * 0.95,
        "sent {sent} in {over_s:.1} s"
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();

    // The result follows the published schema, observer fields included.
    let schema = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/result.schema.json"
    ))
    .unwrap();
    let schema = jsonschema::validator_for(&serde_json::from_str(&schema).unwrap()).unwrap();
    let problems: Vec<String> = schema.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(problems.is_empty(), "{problems:?}");

    // The observer ran no I/O: no workers, no I/Os, nothing on its disk.
    let hosts = v["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3, "{v}");
    let obs = hosts
        .iter()
        .find(|h| h["host"] == observer.as_str())
        .unwrap();
    assert_eq!(obs["observer"], true, "{obs}");
    assert_eq!(obs["workers"], 0, "{obs}");
    assert_eq!(obs["all"]["ios"], 0, "{obs}");
    assert!(v["workers"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["host"] != observer.as_str()));
    assert_eq!(
        std::fs::read_dir(&c.hosts[1].data_dir).unwrap().count(),
        0,
        "the observer's directory was written"
    );
    for h in hosts.iter().filter(|h| h["host"] != observer.as_str()) {
        assert!(h.get("observer").is_none(), "{h}");
        assert_eq!(h["workers"], 2, "{h}");
    }

    // Its CPU, network and disks over the measured phase, and in the summary.
    assert!(obs["cpu"]["host_pct"].as_f64().unwrap() > 0.0, "{obs}");
    // At least 80% of the pace: pacing is by 2 ms sleeps on a loaded machine, and
    // other traffic only adds to it.
    let tx = obs["net"]["tx_mbps"].as_f64().unwrap();
    assert!(
        tx >= RATE / 1e6 * 0.8,
        "the observer counted {tx:.3} MB/s sent, the test sent {:.3} MB/s: {obs}",
        RATE / 1e6
    );
    assert!(obs["disk"]["devices"].as_u64().unwrap() >= 1, "{obs}");
    let summary = &v["summary"]["observers"];
    assert_eq!(
        summary["net"], obs["net"],
        "one observer: the sum is its own"
    );
    assert_eq!(summary["cpu"]["host_pct"], obs["cpu"]["host_pct"]);

    // Per interval: its row of every interval carries what it spent, the fleet's row
    // the observers' figures, and the traffic shows in the intervals it was made in.
    let rows = v["host_intervals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == observer.as_str())
        .unwrap()["rows"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(rows.len(), v["intervals"].as_array().unwrap().len());
    for (r, i) in rows.iter().zip(v["intervals"].as_array().unwrap()) {
        assert_eq!(r["all"]["ios"], 0, "{r}");
        let u = &r["usage"];
        // The observer is this machine, busy with the run's workers.
        let cpu = u["cpu"]["host_pct"].as_f64().unwrap();
        assert!(cpu > 0.0 && cpu <= 100.0, "{r}");
        assert!(u["disk"]["devices"].as_u64().unwrap() >= 1, "{r}");
        assert_eq!(i["observers"]["net"], u["net"], "{i}");
        // Each whole interval saw the traffic (a short last piece may see less of it),
        // on the observer and on the worker hosts, which are this machine too.
        if i["duration_s"].as_f64().unwrap() >= 0.99 {
            for (who, tx) in [("observer", &u["net"]), ("workers' hosts", &i["net"])] {
                let tx = tx["tx_mbps"].as_f64().unwrap();
                assert!(
                    tx >= RATE / 1e6 * 0.5,
                    "interval {}: {who} counted {tx:.3} MB/s sent",
                    i["index"]
                );
            }
        }
    }

    // The fleet's own CPU and the run's figures are the worker hosts'.
    assert!(v["summary"]["all"]["ios"].as_u64().unwrap() > 0);
    let worker_ios: u64 = hosts
        .iter()
        .map(|h| h["all"]["ios"].as_u64().unwrap())
        .sum();
    assert_eq!(worker_ios, v["summary"]["all"]["ios"].as_u64().unwrap());

    // The table says which host observed and what it saw.
    let o = null_run(
        tmp.path(),
        &inv,
        &[
            "--workers",
            "2",
            "--duration",
            "2s",
            "--db",
            "r.db",
            "--name",
            "observed",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(table.contains("Observer hosts: CPU"), "{table}");
    assert!(table.contains(&format!("{observer} (observer)")), "{table}");
    // compare reads the observers' figures as metrics of their own: the run with the
    // test's traffic beside the one without, each run's own stored figures, and the
    // difference the traffic made.
    let o = run_in(
        tmp.path(),
        &[
            "compare",
            "busy",
            "observed",
            "--metric",
            "observer_cpu",
            "--metric",
            "observer_net_tx_mbps",
            "--json",
            "--db",
            "r.db",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let exported = |name: &str| -> Value {
        let o = run_in(tmp.path(), &["results", "export", name, "--db", "r.db"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()["summary"]["observers"].clone()
    };
    let runs = [exported("busy"), exported("observed")];
    let metrics = c["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 2, "{c}");
    let values = |m: &Value| -> Vec<f64> {
        m["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    assert_eq!(
        values(&metrics[0]),
        runs.iter()
            .map(|r| r["cpu"]["host_pct"].as_f64().unwrap())
            .collect::<Vec<_>>(),
        "{c}"
    );
    let tx = values(&metrics[1]);
    assert_eq!(
        tx,
        runs.iter()
            .map(|r| r["net"]["tx_mbps"].as_f64().unwrap())
            .collect::<Vec<_>>(),
        "{c}"
    );
    assert!(
        tx[0] >= RATE / 1e6 * 0.8 && tx[0] - tx[1] >= RATE / 1e6 * 0.5,
        "with the test's traffic {:.3} MB/s, without {:.3} MB/s",
        tx[0],
        tx[1]
    );
    // The stored run says the same, and so does its report's host table.
    let o = run_in(tmp.path(), &["results", "show", "observed", "--db", "r.db"]);
    assert!(stdout(&o).contains("Observer hosts: CPU"), "{}", stdout(&o));
    let o = run_in(tmp.path(), &["report", "observed", "--db", "r.db"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = stdout(&o);
    let row = html
        .lines()
        .find(|l| l.starts_with(&format!("<tr><td class=\"l\">{observer}</td>")))
        .unwrap_or_else(|| panic!("no host row for {observer}"));
    assert!(row.contains("observer (no I/O)"), "{row}");
}

#[test]
fn observer_inventory_errors_name_the_host_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    for (text, says) in [
        (
            "[[host]]\ndestination = \"a.invalid\"\n[[host]]\ndestination = \"b.invalid\"\nrole = \"observer\"\nworkers = 2\n",
            "host 'b.invalid': role = \"observer\" runs no workers",
        ),
        (
            "[[host]]\ndestination = \"b.invalid\"\nrole = \"observer\"\n",
            "every host is an observer",
        ),
        (
            "[[host]]\ndestination = \"b.invalid\"\nrole = \"storage\"\n",
            "role",
        ),
    ] {
        let inv = tmp.path().join("inv.toml");
        std::fs::write(&inv, text).unwrap();
        let o = run_in(
            tmp.path(),
            &[
                "run",
                "vsan-7030",
                "--hosts",
                inv.to_str().unwrap(),
                "--dry-run",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains("inv.toml"), "{}", stderr(&o));
    }
}
