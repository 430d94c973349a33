//! `iofleet ceiling`: the theoretical ceiling of a profile on a described cluster (issue
//! 8, item 6), through the binary: the published 26.4 M figure, protection penalties, a
//! network-bound case, efficiency of a stored run, and every bad cluster file exit 2.

mod common;
use common::*;

use std::path::Path;

/// The cluster file of issue 8: 12 hosts × 4 devices of 550K 4K random-read IOPS.
const CLUSTER: &str = r#"hosts = 12
[device]            # rated figures of one device
per_host = 4
read_iops = 550000  # 4K random read
write_iops = 500000
read_mbps = 2500
write_mbps = 2000
[network]
nics_per_host = 2
nic_gbps = 100
remote_share = 0.5  # share of I/O that crosses hosts
[protection]
scheme = "mirror"   # none | mirror | erasure
copies = 2          # mirror
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn ceiling_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["ceiling"];
    all.extend_from_slice(args);
    all.push("--json");
    let o = run_in(dir, &all);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// A one-stream profile file of `bs` at `read_pct`.
fn profile(dir: &Path, bs: &str, read_pct: u32) -> String {
    write(
        dir,
        &format!("p-{bs}-{read_pct}.toml"),
        &format!(
            "name = \"p\"\n[[stream]]\nbs = \"{bs}\"\nread_pct = {read_pct}\nrandom_pct = 100\n"
        ),
    )
}

#[test]
fn forty_eight_devices_of_550k_read_iops_make_26_4_million() {
    let d = tempfile::tempdir().unwrap();
    let c = write(d.path(), "cluster.toml", CLUSTER);
    let j = ceiling_json(d.path(), &[&c, "--profile", "diskspd-4k-read"]);
    assert!(close(j["ceiling_iops"].as_f64().unwrap(), 26.4e6), "{j}");
    assert_eq!(j["binding"], "devices");
    let b = &j["bottlenecks"];
    for name in ["devices", "protection", "network", "bandwidth"] {
        assert!(b[name].as_f64().unwrap() >= 26.4e6 - 1e-3, "{name}: {j}");
    }
    assert!(j.get("efficiency_pct").is_none(), "no --run, no efficiency");

    // The table says the same.
    let o = run_in(d.path(), &["ceiling", &c, "--profile", "diskspd-4k-read"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("binding: devices at 26400000 IOPS"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn mirrors_and_erasure_coding_charge_writes() {
    let d = tempfile::tempdir().unwrap();
    let p = profile(d.path(), "4k", 0);
    let with = |protection: &str| {
        // Write MB/s high enough that 4K writes stay bound by operations, not bytes.
        let text = CLUSTER
            .replace(
                "scheme = \"mirror\"   # none | mirror | erasure\ncopies = 2          # mirror\n",
                protection,
            )
            .replace("write_mbps = 2000", "write_mbps = 4000");
        let c = write(d.path(), "c.toml", &text);
        ceiling_json(d.path(), &[&c, "--profile", &p])
    };
    let none = with("scheme = \"none\"\n");
    let raw = 48.0 * 500_000.0;
    assert!(close(
        none["bottlenecks"]["protection"].as_f64().unwrap(),
        raw
    ));
    for copies in [2.0, 3.0] {
        let j = with(&format!("scheme = \"mirror\"\ncopies = {copies}\n"));
        let prot = j["bottlenecks"]["protection"].as_f64().unwrap();
        assert!(close(prot, raw / copies), "{copies} copies: {j}");
        assert!(close(j["bottlenecks"]["devices"].as_f64().unwrap(), raw));
        assert_eq!(j["binding"], "protection");
    }
    // 4+2 read-modify-write: 3 device reads (550K) and 3 device writes (500K) per write.
    let j = with("scheme = \"erasure\"\ndata = 4\nparity = 2\n");
    let prot = j["bottlenecks"]["protection"].as_f64().unwrap();
    assert!(
        close(prot, 48.0 / (3.0 / 550_000.0 + 3.0 / 500_000.0)),
        "{j}"
    );
    assert_eq!(j["binding"], "protection");
}

#[test]
fn small_nics_and_large_blocks_bind_on_the_network() {
    let d = tempfile::tempdir().unwrap();
    let text = CLUSTER
        .replace("nics_per_host = 2", "nics_per_host = 1")
        .replace("nic_gbps = 100", "nic_gbps = 10")
        .replace("remote_share = 0.5", "remote_share = 1");
    let c = write(d.path(), "c.toml", &text);
    let p = profile(d.path(), "1m", 100);
    let j = ceiling_json(d.path(), &[&c, "--profile", &p]);
    assert_eq!(j["binding"], "network", "{j}");
    // 12 hosts × 10 Gb/s ÷ 1 MiB per read.
    assert!(close(
        j["ceiling_iops"].as_f64().unwrap(),
        12.0 * 10e9 / 8.0 / 1_048_576.0
    ));
    // Without a [network] table nothing crosses: bandwidth binds instead.
    let end = text.find("[network]").unwrap();
    let start = text.find("[protection]").unwrap();
    let c = write(
        d.path(),
        "c2.toml",
        &format!("{}{}", &text[..end], &text[start..]),
    );
    let j = ceiling_json(d.path(), &[&c, "--profile", &p]);
    assert_eq!(j["binding"], "bandwidth", "{j}");
    assert!(j["bottlenecks"].get("network").is_none());
    assert!(j["unbounded"]["network"].is_string());
}

#[test]
fn a_stored_run_is_reported_as_efficiency() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let db = db.to_str().unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "diskspd-4k-read",
            "--engine",
            "sim:servers=1,service=1ms,dist=fixed",
            "--workers",
            "1",
            "--disks",
            "1",
            "--threads",
            "1",
            "--qd",
            "1",
            "--warmup",
            "0s",
            "--duration",
            "5s",
            "--quiet",
            "--db",
            db,
            "--name",
            "measured",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run_in(d.path(), &["results", "export", "measured", "--db", db]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let iops = stored["summary"]["all"]["iops"].as_f64().unwrap();
    assert!(iops > 0.0);

    // One host, one device of 2000 read IOPS: the run (about 1000 IOPS) is about half.
    let c = write(
        d.path(),
        "one.toml",
        "hosts = 1\n[device]\nper_host = 1\nread_iops = 2000\nwrite_iops = 2000\n\
         read_mbps = 1000\nwrite_mbps = 1000\n",
    );
    let j = ceiling_json(
        d.path(),
        &[
            &c,
            "--profile",
            "diskspd-4k-read",
            "--run",
            "measured",
            "--db",
            db,
        ],
    );
    assert!(close(j["ceiling_iops"].as_f64().unwrap(), 2000.0), "{j}");
    let eff = j["efficiency_pct"].as_f64().unwrap();
    assert!(close(eff, iops / 2000.0 * 100.0), "{eff} vs {iops}");
    assert!((40.0..=60.0).contains(&eff), "{eff}");
    assert_eq!(j["run"]["name"], "measured");
    let o = run_in(
        d.path(),
        &[
            "ceiling",
            &c,
            "--profile",
            "diskspd-4k-read",
            "--run",
            "measured",
            "--db",
            db,
        ],
    );
    assert!(stdout(&o).contains("% of the ceiling"), "{}", stdout(&o));
    assert!(
        !stderr(&o).contains("note:"),
        "same profile: {}",
        stderr(&o)
    );
    // A run of another profile is still compared, with a note saying so.
    let o = run_in(
        d.path(),
        &[
            "ceiling",
            &c,
            "--profile",
            "easy-run-4k70r",
            "--run",
            "measured",
            "--db",
            db,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ran profile 'diskspd-4k-read'"),
        "{}",
        stderr(&o)
    );

    let o = run_in(
        d.path(),
        &[
            "ceiling",
            &c,
            "--profile",
            "diskspd-4k-read",
            "--run",
            "nosuch",
            "--db",
            db,
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn bad_cluster_files_exit_2_naming_the_key_and_file() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &str)] = &[
        ("per_host = 4", "per_host = 4\nrpm = 7200", "device.rpm"),
        ("hosts = 12", "hosts = 12\ncpus = 2", "cpus"),
        ("hosts = 12", "hosts = \"twelve\"", "hosts"),
        (
            "read_iops = 550000",
            "read_iops = -550000",
            "device.read_iops",
        ),
        ("write_iops = 500000", "write_iops = 0", "device.write_iops"),
        ("read_mbps = 2500", "read_mbps = -1", "device.read_mbps"),
        ("nic_gbps = 100", "nic_gbps = 0", "network.nic_gbps"),
        ("hosts = 12", "hosts = 0", "hosts"),
        ("per_host = 4", "per_host = 0", "device.per_host"),
        (
            "nics_per_host = 2",
            "nics_per_host = 0",
            "network.nics_per_host",
        ),
        ("copies = 2 ", "copies = 0 ", "protection.copies"),
        ("copies = 2 ", "copies = 13 ", "protection.copies"),
        (
            "remote_share = 0.5",
            "remote_share = 1.5",
            "network.remote_share",
        ),
        (
            "remote_share = 0.5",
            "remote_share = -0.1",
            "network.remote_share",
        ),
        ("remote_share = 0.5", "", "network.remote_share"),
        ("write_mbps = 2000", "", "device.write_mbps"),
        (
            "scheme = \"mirror\"",
            "scheme = \"raid5\"",
            "protection.scheme",
        ),
        (
            "scheme = \"mirror\"   # none | mirror | erasure\ncopies = 2",
            "scheme = \"erasure\"\ndata = 4",
            "protection.parity",
        ),
        (
            "scheme = \"mirror\"   # none | mirror | erasure\ncopies = 2",
            "scheme = \"erasure\"\nparity = 2",
            "protection.data",
        ),
        (
            "scheme = \"mirror\"   # none | mirror | erasure\ncopies = 2",
            "scheme = \"erasure\"\ndata = 4\nparity = 2\ncopies = 2",
            "protection.copies",
        ),
    ];
    for (from, to, key) in cases {
        assert!(CLUSTER.contains(from), "{from}");
        let c = write(d.path(), "bad.toml", &CLUSTER.replacen(from, to, 1));
        let o = run_in(d.path(), &["ceiling", &c, "--profile", "diskspd-4k-read"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{to}: {err}");
        assert!(err.contains("bad.toml"), "{to}: {err}");
        assert!(err.contains(&format!("{key}:")), "{to}: wants {key}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A missing file names the file; an unknown profile names the profile.
    let o = run_in(
        d.path(),
        &["ceiling", "nope.toml", "--profile", "diskspd-4k-read"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope.toml"), "{}", stderr(&o));
    let c = write(d.path(), "ok.toml", CLUSTER);
    let o = run_in(d.path(), &["ceiling", &c, "--profile", "no-such-profile"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no-such-profile"), "{}", stderr(&o));
}
