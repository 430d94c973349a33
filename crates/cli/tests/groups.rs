//! Worker groups: several profiles at once on one timeline (`--group NAME=PROFILE:N`),
//! reported per group and in total, and their input errors.

mod common;

use common::*;
use serde_json::Value;

#[test]
fn two_groups_run_together_and_add_up() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "--group",
            "vdi=xray-vdi-task:3",
            "--group",
            "sql=vmfleet-sql:2",
            "--engine",
            "null",
            "--duration",
            "2s",
            "--warmup",
            "0s",
            "--interval",
            "500ms",
            "--json",
            "--quiet",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["name"], "vdi");
    assert_eq!(groups[0]["profile"], "xray-vdi-task");
    assert_eq!(
        (
            groups[0]["first_worker"].as_u64(),
            groups[0]["workers"].as_u64()
        ),
        (Some(0), Some(3))
    );
    assert_eq!(
        (
            groups[1]["first_worker"].as_u64(),
            groups[1]["workers"].as_u64()
        ),
        (Some(3), Some(2))
    );
    assert_eq!(v["workers"].as_array().unwrap().len(), 5);
    let total = v["summary"]["all"]["ios"].as_u64().unwrap();
    let sum: u64 = groups
        .iter()
        .map(|g| g["all"]["ios"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, total);
    // Streams are named group/stream, and each group's rated streams keep their rates:
    // X-Ray VDI task is 4 read + 4 write IOPS per VM.
    let streams = v["streams"].as_array().unwrap();
    assert!(streams.iter().all(|s| {
        let n = s["name"].as_str().unwrap();
        n.starts_with("vdi/") || n.starts_with("sql/")
    }));
    let vdi_iops = groups[0]["all"]["iops"].as_f64().unwrap();
    assert!(
        (vdi_iops - 24.0).abs() < 8.0,
        "3 VMs × 8 IOPS, got {vdi_iops}"
    );
    assert!(v["run"]["plan"]["groups"].as_array().unwrap().len() == 2);

    let t = run_in(
        d.path(),
        &[
            "run",
            "--group",
            "a=iometer-database:1",
            "--group",
            "b=diskspd-4k-read:1",
            "--engine",
            "null",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--quiet",
            "--no-save",
        ],
    );
    assert_eq!(t.status.code(), Some(0), "{}", stderr(&t));
    let out = stdout(&t);
    assert!(
        out.contains("group") && out.contains("iometer-database"),
        "{out}"
    );
}

#[test]
fn group_input_errors_name_the_flag() {
    let d = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (
            &["run", "--group", "novalue", "--engine", "null"],
            "--group novalue",
        ),
        (
            &["run", "--group", "a=vsan-7030:0", "--engine", "null"],
            "--group a=vsan-7030:0",
        ),
        (
            &[
                "run",
                "--group",
                "a=vsan-7030",
                "--group",
                "a=jesd219",
                "--engine",
                "null",
            ],
            "used twice",
        ),
        (
            &[
                "run",
                "vsan-7030",
                "--group",
                "a=jesd219",
                "--engine",
                "null",
            ],
            "not both",
        ),
        (
            &[
                "run",
                "--group",
                "a=vsan-7030:2",
                "--workers",
                "3",
                "--engine",
                "null",
            ],
            "--workers",
        ),
        (&["run", "--group", "a=nope:2", "--engine", "null"], "nope"),
    ];
    for (args, needle) in cases {
        let o = run_in(d.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    // Groups with different timelines are refused unless the timing is set for all.
    let dir = d.path().join("slow.toml");
    std::fs::write(
        &dir,
        "name = \"slow\"\n[timing]\nduration = \"30s\"\n[[stream]]\nbs = \"4k\"\nread_pct = 100\nrandom_pct = 100\n",
    )
    .unwrap();
    let slow = format!("b={}", dir.display());
    let o = run_in(
        d.path(),
        &[
            "run",
            "--group",
            "a=vsan-7030",
            "--group",
            &slow,
            "--engine",
            "null",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--group b") && stderr(&o).contains("--duration"),
        "{}",
        stderr(&o)
    );
    let ok = run_in(
        d.path(),
        &[
            "run",
            "--group",
            "a=vsan-7030:1",
            "--group",
            &slow,
            "--engine",
            "null",
            "--no-save",
            "--quiet",
            "--duration",
            "500ms",
            "--warmup",
            "0s",
            "--interval",
            "250ms",
        ],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    // Without any profile or group, the profile argument is required.
    let o = run_in(d.path(), &["run", "--engine", "null"]);
    assert_eq!(o.status.code(), Some(2));
}
