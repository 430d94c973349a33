//! Bounds on counts and sizes, through the CLI: a huge worker count in any inventory
//! format (a host's pin, the default pin, pins whose sum passes the bound or u32) is
//! refused with exit 2 and a message naming `workers` and the bound, for `run` and
//! `run --dry-run`, before anything is sized by it: the peak resident memory of every
//! process a case starts (iofleet, its agents, ansible-inventory) stays under 100 MiB.
//! A plan within the bounds that needs more memory than the host has is refused with
//! the figures, here (a local run), on the controller (agents on this machine) and on
//! an agent's host (over ssh); a dry run prints a large plan's counts without building
//! its lanes.
//!
//! The peak is read with getrusage(RUSAGE_CHILDREN), the largest of every child this
//! test process has waited for (and of their waited-for children): the tests take turns
//! (`SERIAL`) and every process they start must stay small, so each test's reading is
//! its own children's or an earlier one's that was already checked.

mod common;
#[path = "support/sshd.rs"]
mod sshd;

use std::path::Path;
use std::sync::Mutex;

use common::*;
use nix::sys::resource::{getrusage, UsageWho};

static SERIAL: Mutex<()> = Mutex::new(());

/// What a refused case may keep resident at its peak.
const PEAK_MIB: f64 = 100.0;

/// The largest peak resident set of any child waited for so far, in MiB (Linux reports
/// `ru_maxrss` in KiB).
fn children_peak_mib() -> f64 {
    getrusage(UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage")
        .max_rss() as f64
        / 1024.0
}

/// `iofleet ARGS` and `iofleet ARGS --dry-run` in `dir` (with the inventory reader
/// `reader`): each exits 2 with every needle in its stderr and stays under `PEAK_MIB`.
fn refused_small(dir: &Path, reader: &str, args: &[&str], needles: &[&str]) {
    for dry in [false, true] {
        let mut all = args.to_vec();
        if dry {
            all.push("--dry-run");
        }
        let o = iofleet()
            .current_dir(dir)
            .env("IOFLEET_INVENTORY_READER", reader)
            .args(&all)
            .output()
            .expect("iofleet runs");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
        assert!(!err.contains("panicked"), "{all:?}: {err}");
        for n in needles {
            assert!(err.contains(n), "{all:?}: stderr lacks {n:?}:\n{err}");
        }
        let peak = children_peak_mib();
        assert!(
            peak < PEAK_MIB,
            "{all:?}: a process reached {peak:.1} MiB resident"
        );
    }
}

/// `run vsan-7030 --engine null --hosts FILE` on an inventory written to `dir/name`.
fn refused_inventory(reader: &str, name: &str, text: &str, needles: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join(name);
    std::fs::write(&inv, text).unwrap();
    let inv = inv.to_string_lossy().into_owned();
    let args = [
        "run",
        "vsan-7030",
        "--engine",
        "null",
        "--duration",
        "1s",
        "--no-save",
        "--hosts",
        &inv,
    ];
    refused_small(d.path(), reader, &args, needles);
}

fn toml_host(name: &str, extra: &str) -> String {
    format!("[[host]]\ndestination = \"{name}\"\ntransport = \"local\"\n{extra}")
}

#[test]
fn toml_worker_pins_past_the_bound_are_refused_before_anything_is_sized() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let one = "is out of range 1..=65536: a host runs at most a fleet's workers";
    for (text, needles) in [
        // A host's pin: the review's 24 GB agent.
        (
            toml_host("h1", "workers = 1000000000\n"),
            vec!["host 'h1': workers = 1000000000", one],
        ),
        // The default pin.
        (
            format!("[defaults]\nworkers = 70000\n{}", toml_host("h1", "")),
            vec!["defaults.workers = 70000", one],
        ),
        // Pins whose sum passes u32: each is refused on its own.
        (
            toml_host("h1", "workers = 4294967295\n") + &toml_host("h2", "workers = 4294967295\n"),
            vec!["host 'h1': workers = 4294967295", one],
        ),
        // Pins within the bound one by one whose sum is past it.
        (
            toml_host("h1", "workers = 65536\n") + &toml_host("h2", "workers = 65536\n"),
            vec![
                "workers pins add up to 131072 workers",
                "more than the 65536 a fleet may have",
            ],
        ),
    ] {
        refused_inventory("auto", "hosts.toml", &text, &needles);
    }
}

#[test]
fn ini_worker_pins_past_the_bound_are_refused_before_anything_is_sized() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let base = "iofleet_transport=local";
    for (text, needles) in [
        (
            format!("[g]\nh1 {base} iofleet_workers=1000000000\n"),
            vec![
                "line 2",
                "host 'h1': iofleet_workers: 1000000000 is not a whole number in 1..=65536",
            ],
        ),
        // A group's pin, as defaults.workers is in TOML.
        (
            format!("[g]\nh1 {base}\n[all:vars]\niofleet_workers=70000\n"),
            vec![
                "line 4",
                "iofleet_workers: 70000 is not a whole number in 1..=65536",
            ],
        ),
        (
            format!("[g]\nh[1:2] {base} iofleet_workers=65536\n"),
            vec![
                "workers pins add up to 131072 workers",
                "more than the 65536 a fleet may have",
            ],
        ),
    ] {
        refused_inventory("native", "hosts.ini", &text, &needles);
    }
}

#[test]
fn yaml_worker_pins_through_ansible_inventory_are_refused() {
    if !need::need(
        "yaml_worker_pins_through_ansible_inventory_are_refused",
        &["ansible-inventory"],
    ) {
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    refused_inventory(
        "ansible-inventory",
        "hosts.yml",
        "all:\n  hosts:\n    h1:\n      iofleet_transport: local\n      iofleet_workers: 1000000000\n",
        &[
            "line 5",
            "host 'h1': iofleet_workers: 1000000000 is not a whole number in 1..=65536",
        ],
    );
}

/// A plan every key of which is within its bounds, but whose buffers alone (an MiB for
/// each of 4,096,000 I/Os in flight) pass any host's memory.
const TOO_BIG: [&str; 14] = [
    "run",
    "--bs",
    "1m",
    "--read-pct",
    "100",
    "--random-pct",
    "100",
    "--qd",
    "4096",
    "--workers",
    "1000",
    "--engine",
    "null",
    "--no-save",
];

#[test]
fn a_plan_past_this_hosts_memory_is_refused_with_its_figures() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    let figures = [
        "the plan needs",
        "GiB for 1,000 lanes with 4,096,000 I/Os in flight; this host has",
        "GiB available (MemAvailable)",
        "The largest part is the I/O buffers",
        "lower --qd (fleet.qd, stream.qd) or the block size (--bs, stream.bs)",
    ];
    refused_small(d.path(), "auto", &TOO_BIG, &figures);
    // The same plan on an agent started on this machine: the controller counts it in.
    let inv = d.path().join("local.toml");
    std::fs::write(&inv, toml_host("h1", "")).unwrap();
    let mut args = TOO_BIG.to_vec();
    args.extend(["--hosts", inv.to_str().unwrap()]);
    refused_small(
        d.path(),
        "auto",
        &args,
        &[
            "GiB for 1,000 lanes with 4,096,000 I/Os in flight; this machine (the controller and 1 local host(s)) has",
            "lower --qd",
        ],
    );
    // Past what one host's I/O threads can number at all: refused before the lanes are
    // counted into memory.
    refused_small(
        d.path(),
        "auto",
        &[
            "run",
            "--bs",
            "4k",
            "--workers",
            "65536",
            "--disks",
            "1024",
            "--threads",
            "256",
            "--qd",
            "4096",
            "--engine",
            "null",
            "--no-save",
        ],
        &["--qd (fleet.qd): 70368744177664 I/Os in flight on one host"],
    );
}

#[test]
fn an_agent_refuses_a_share_past_its_hosts_memory() {
    // Over ssh the controller cannot know the host's memory: the agent checks its share
    // before it allocates, and its refusal is the user's input (exit 2).
    let Some(c) = sshd::Cluster::start(1) else {
        return;
    };
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    let opts: Vec<String> = c.ssh_args().iter().map(|a| format!("{a:?}")).collect();
    let bin = assert_cmd::cargo::cargo_bin("iofleet");
    let inv = d.path().join("ssh.toml");
    std::fs::write(
        &inv,
        format!(
            "[ssh]\noptions = [{}]\n[[host]]\ndestination = {:?}\niofleet_path = {:?}\n",
            opts.join(", "),
            c.hosts[0].alias,
            bin.display().to_string()
        ),
    )
    .unwrap();
    let mut args = TOO_BIG.to_vec();
    args.extend(["--hosts", inv.to_str().unwrap()]);
    let o = run_in(d.path(), &args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let host = format!("host {}: the plan needs", c.hosts[0].alias);
    assert!(err.contains(&host), "{err}");
    assert!(
        err.contains("for 1,000 lanes with 4,096,000 I/Os in flight; this host has"),
        "{err}"
    );
}

#[test]
fn a_dry_run_counts_the_lanes_without_building_them() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    // 524,288 lanes: their specs alone would take more than PEAK_MIB to build.
    let args = [
        "run",
        "--bs",
        "512",
        "--workers",
        "2048",
        "--threads",
        "256",
        "--io-threads",
        "2",
        "--engine",
        "null",
        "--dry-run",
    ];
    let o = run_in(d.path(), &args);
    let (out, err) = (stdout(&o), stderr(&o));
    let fits = !err.contains("the plan needs");
    if !need::environment(
        "a_dry_run_counts_the_lanes_without_building_them",
        "2 GiB of available memory for the plan it prints",
        fits,
    ) {
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("#   lanes:       524288 "), "{out}");
    assert!(out.contains("#   outstanding: 524288 I/Os"), "{out}");
    assert!(
        out.contains(" GiB for 524,288 lanes with 524,288 I/Os in flight ("),
        "{out}"
    );
    let peak = children_peak_mib();
    assert!(
        peak < PEAK_MIB,
        "the dry run reached {peak:.1} MiB resident"
    );
}
