//! Launcher operations across hosts, through real OpenSSH: `precondition --hosts`, and
//! data verification (issue 9): a verified fleet run
//! over three sshd hosts, then a byte changed in one host's disk file, then
//! `iofleet verify --hosts` exits 4 naming that host, disk and offset. Needs root
//! (sshd); skips without it unless CI is set (see support/sshd.rs). Run on its own, not
//! at the same time as fleet_ssh (both share the remote binary cache).

mod common;
#[path = "support/sshd.rs"]
mod sshd;

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;

use common::*;
use sshd::Cluster;

/// The tests share this machine's agent copies in ~/.cache/iofleet: one at a time.
fn inventory(c: &Cluster, dir: &Path) -> String {
    let opts: Vec<String> = c.ssh_args().iter().map(|a| format!("{a:?}")).collect();
    let mut t = format!("[ssh]\noptions = [{}]\n", opts.join(", "));
    for h in &c.hosts {
        t.push_str(&format!(
            "[[host]]\ndestination = {:?}\ntarget = {:?}\n",
            h.alias,
            h.data_dir.display().to_string()
        ));
    }
    let p = dir.join("inventory.toml");
    std::fs::write(&p, t).unwrap();
    p.to_string_lossy().into_owned()
}

/// The fleet's shape, shared by the run and the check: 3 workers (one per host), one
/// 4 MiB disk each.
const SHAPE: [&str; 6] = [
    "--workers",
    "3",
    "--disk-size",
    "4m",
    "--direct=false",
    "--no-save",
];

#[test]
fn a_verified_fleet_run_then_a_changed_byte_on_one_host_is_named_by_verify_hosts() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path());

    let mut args = vec![
        "run",
        "--hosts",
        &inv,
        "--verify",
        "--duration",
        "2s",
        "--read-pct",
        "50",
        "--qd",
        "4",
        "--quiet",
        "--json",
    ];
    args.extend(SHAPE);
    let o = run_in(tmp.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["summary"]["verify"];
    assert_eq!(s["corruptions"], 0, "{s}");
    assert!(s["units_checked"].as_u64().unwrap() > 0, "{s}");

    let mut check = vec!["verify", "--hosts", &inv];
    check.extend(SHAPE);
    let o = run_in(tmp.path(), &check);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stdout(&o)
            .matches("1 disk(s), 1024 unit(s) checked, 0 corruption(s)")
            .count(),
        3,
        "{}",
        stdout(&o)
    );

    // One byte of host h2's disk (worker 1) changes behind the fleet's back.
    let h2 = &c.hosts[1];
    let path = h2.data_dir.join("w001-d000.iofleet");
    let f = OpenOptions::new()
        .write(true)
        .read(true)
        .open(&path)
        .unwrap();
    let at = 123 * 4096 + 2048;
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x80], at).unwrap();
    drop(f);

    let o = run_in(tmp.path(), &check);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(4), "{out}{}", stderr(&o));
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("corruption: "))
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].starts_with(&format!(
            "corruption: host {} disk w001-d000 offset {} ",
            h2.alias,
            123 * 4096
        )) && lines[0].contains(": checksum: expected"),
        "{out}"
    );
}

/// `precondition --hosts`: every host writes its own share of the disks twice over, at
/// the same time; a fleet run that prepares with random data then reuses every fill.
#[test]
fn precondition_over_three_hosts_writes_each_hosts_share_and_a_run_reuses_it() {
    let _one = sshd::one_at_a_time();
    let Some(c) = Cluster::start(3) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let inv = inventory(&c, tmp.path());
    let size: u64 = 4 << 20;
    let shape = ["--workers", "3", "--disk-size", "4m", "--direct=false"];

    let mut args = vec!["precondition", "--hosts", &inv, "--json"];
    args.extend(shape);
    let o = run_in(tmp.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["complete"], true, "{v}");
    assert_eq!(v["bytes_written"], 3 * 2 * size, "{v}");
    let disks = v["disks"].as_array().unwrap();
    assert_eq!(disks.len(), 3, "{v}");
    // Worker w is on host h(w+1), in that host's target directory, written twice over.
    for (w, h) in c.hosts.iter().enumerate() {
        let d = disks
            .iter()
            .find(|d| d["host"] == h.alias.as_str())
            .unwrap_or_else(|| panic!("no disk of host {}: {v}", h.alias));
        assert_eq!(d["worker"], w as u64, "{d}");
        assert_eq!(d["bytes_written"], 2 * size, "{d}");
        let file = h.data_dir.join(format!("w{w:03}-d000.iofleet"));
        assert_eq!(d["path"], file.display().to_string(), "{d}");
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            bytes.len() as u64 > size,
            "data and fill marker: {}",
            bytes.len()
        );
        assert!(bytes[..size as usize]
            .chunks(4096)
            .all(|b| b.iter().any(|&x| x != 0)));
    }

    // The run finds every host's fill marker valid and fills nothing.
    let mut run = vec![
        "run",
        "--hosts",
        &inv,
        "--prepare",
        "random",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--no-save",
        "--quiet",
        "--json",
    ];
    run.extend(shape);
    let o = run_in(tmp.path(), &run);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Said once for the three hosts that each said it.
    let reused: Vec<&str> = r["notices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .filter(|n| n.contains("1 of 1 disks already carry a valid fill marker"))
        .collect();
    assert_eq!(reused.len(), 1, "{}", r["notices"]);
    assert!(reused[0].starts_with("every host (3): "), "{reused:?}");

    // The table names each host's disk.
    let mut args = vec!["precondition", "--hosts", &inv];
    args.extend(shape);
    let o = run_in(tmp.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = stdout(&o);
    for h in &c.hosts {
        assert!(t.contains(&format!("host {}  worker", h.alias)), "{t}");
    }
    assert!(t.contains("written 24m"), "{t}");
}
