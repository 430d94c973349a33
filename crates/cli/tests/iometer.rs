//! Iometer configuration files as workloads (docs/iometer.md): a file written for the
//! workload the vSAN 5.5 report drove with Iometer runs 1 s on files under `--target` as
//! the report describes it, `--dry-run` and `profiles from-iometer` show the resolved
//! profiles (one per step), and a setting iofleet cannot run exits 2 naming file and line.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// The vSAN 5.5 report's 100% read test (../shared/seeds/003_f1a88333bc03fb30.txt,
/// "100% 读取基准分析", its workload configuration): in each VM, Iometer with 8 workers,
/// each on a single 8 GB vmdk, 100% read, 80% random, 4096-byte I/Os aligned on 4096-byte
/// boundaries, 16 outstanding I/Os; run for one hour. Written in the layout Iometer's
/// dated releases of that time save (2006.07.27: no data pattern, no fixed seed), one
/// worker per vmdk, its 8 GB as 16,777,216 sectors of 512 bytes.
fn vsan_read() -> String {
    let mut t = String::from(
        "Version 2006.07.27 \n\
'TEST SETUP ====================================================================\n\
'Test Description\n\tvSAN 5.5 100% read\n\
'Run Time\n'\thours      minutes    seconds\n\t1          0          0\n\
'Ramp Up Time (s)\n\t0\n\
'Default Disk Workers to Spawn\n\tNUMBER_OF_CPUS\n\
'Default Network Workers to Spawn\n\t0\n\
'Record Results\n\tALL\n\
'Worker Cycling\n'\tstart      step       step type\n\t1          1          LINEAR\n\
'Disk Cycling\n'\tstart      step       step type\n\t1          1          LINEAR\n\
'Queue Depth Cycling\n'\tstart      end        step       step type\n\t1          32         2          EXPONENTIAL\n\
'Test Type\n\tNORMAL\n\
'END test setup\n\
'ACCESS SPECIFICATIONS =========================================================\n\
'Access specification name,default assignment\n\tvsan-read,NONE\n\
'size,% of size,% reads,% random,delay,burst,align,reply\n\
\t4096,100,100,80,0,1,4096,0\n\
'END access specifications\n\
'MANAGER LIST ==================================================================\n\
'Manager ID, manager name\n\t1,vsan-vm-01\n\
'Manager network address\n\t\n",
    );
    for (w, disk) in ["sdb", "sdc", "sdd", "sde", "sdf", "sdg", "sdh", "sdi"]
        .iter()
        .enumerate()
    {
        t.push_str(&format!(
            "'Worker\n\tWorker {}\n'Worker type\n\tDISK\n\
'Default target settings for worker\n\
'Number of outstanding IOs,test connection rate,transactions per connection\n\t16,DISABLED,1\n\
'Disk maximum size,starting sector\n\t16777216,0\n\
'End default target settings for worker\n\
'Assigned access specs\n\tvsan-read\n'End assigned access specs\n\
'Target assignments\n'Target\n\t{disk}\n'Target type\n\tDISK\n'End target\n'End target assignments\n\
'End worker\n",
            w + 1
        ));
    }
    t.push_str("'End manager\n'END manager list\nVersion 2006.07.27 \n");
    t
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn the_vsan_read_workload_runs_on_files_as_the_report_describes() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "vsan-read.icf", &vsan_read());
    let o = run_in(
        d.path(),
        &[
            "run",
            "vsan-read.icf",
            "--target",
            "disks",
            "--no-save",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--interval",
            "1s",
            "--disk-size",
            "4m",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let plan = &v["run"]["plan"];
    let fleet = &plan["fleet"];
    // The VM's Iometer (one manager) is one worker; its 8 Iometer workers, each on a
    // vmdk of its own, are 8 disks of one thread each.
    assert_eq!(fleet["workers"], 1, "{plan}");
    assert_eq!(fleet["disks_per_worker"], 8, "{plan}");
    assert_eq!(fleet["threads_per_disk"], 1, "{plan}");
    assert_eq!(fleet["qd"], 16, "{plan}");
    let s = &plan["streams"][0];
    assert_eq!(
        (s["read_pct"].as_f64(), s["random_pct"].as_f64()),
        (Some(100.0), Some(80.0)),
        "{s}"
    );
    assert!(s["bs"].to_string().contains("4096"), "{s}");
    assert!(s["align"].to_string().contains("4096"), "{s}");
    let sum = &v["summary"];
    assert!(sum["read"]["ios"].as_u64().unwrap() > 0, "{sum}");
    assert_eq!(sum["write"]["ios"].as_u64(), Some(0), "{sum}");
    let notices: Vec<&str> = v["notices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("sdb") && n.contains("not used")),
        "{notices:?}"
    );
    assert!(d.path().join("disks").is_dir());
}

#[test]
fn dry_run_and_from_iometer_show_the_resolved_profiles() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "vsan-read.icf", &vsan_read());
    let o = run_in(
        d.path(),
        &[
            "run",
            "--iometer",
            "vsan-read.icf",
            "--target",
            "disks",
            "--disk-size",
            "16m",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for want in [
        "workers = 1",
        "disks_per_worker = 8",
        "threads_per_disk = 1",
        "qd = 16",
        "read_pct = 100",
        "random_pct = 80",
        "align = \"4k\"",
        "duration = \"1h\"",
    ] {
        assert!(out.contains(want), "no {want:?} in\n{out}");
    }
    assert!(
        !d.path().join("disks").exists(),
        "a dry run made the target"
    );

    // Two specifications assigned: a step each, in turn; --iometer-spec picks one.
    let two = vsan_read()
        .replace(
            "'END access specifications",
            "'Access specification name,default assignment\n\tmixed,NONE\n\
'size,% of size,% reads,% random,delay,burst,align,reply\n\
\t4096,60,70,80,0,1,4096,0\n\t65536,40,70,80,0,1,4096,0\n'END access specifications",
        )
        .replace(
            "\tvsan-read\n'End assigned",
            "\tvsan-read\n\tmixed\n'End assigned",
        );
    write(d.path(), "two.icf", &two);
    let o = run_in(
        d.path(),
        &[
            "run",
            "two.icf",
            "--target",
            "disks",
            "--disk-size",
            "16m",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("# Iometer step 1/2: access specification vsan-read"),
        "{out}"
    );
    assert!(
        out.contains("# Iometer step 2/2: access specification mixed"),
        "{out}"
    );
    assert!(out.contains("bs = \"4k:60,64k:40\""), "{out}");
    let o = run_in(
        d.path(),
        &[
            "run",
            "two.icf",
            "--iometer-spec",
            "mixed",
            "--target",
            "disks",
            "--disk-size",
            "16m",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("read_pct = 70"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("step 1/2"), "{}", stdout(&o));

    let o = run_in(
        d.path(),
        &["profiles", "from-iometer", "two.icf", "-o", "s.toml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(d.path().join("s.toml")).unwrap();
    assert!(text.contains("# ---- step vsan-read"), "{text}");
    assert!(text.contains("# ---- step mixed"), "{text}");
    let o = run_in(
        d.path(),
        &["profiles", "from-iometer", "two.icf", "--spec", "mixed"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("# ---- step"), "{}", stdout(&o));
    assert!(stdout(&o).contains("read_pct = 70"), "{}", stdout(&o));
}

#[test]
fn what_iofleet_cannot_run_exits_2_naming_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let bad = vsan_read().replace("4096,100,100,80,0,1,4096,0", "4096,100,100,80,0,1,4096,512");
    let line = bad.lines().position(|l| l.contains(",4096,512")).unwrap() + 1;
    write(d.path(), "bad.icf", &bad);
    let o = run_in(
        d.path(),
        &["run", "bad.icf", "--target", "disks", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains(&format!("bad.icf:{line}: reply:")), "{e}");
    assert!(!e.contains("panicked"), "{e}");

    let garbage = vsan_read().replace(
        "'Record Results\n\tALL\n",
        "'Record Results\n\tALL\nnot iometer\n",
    );
    let line = garbage.lines().position(|l| l == "not iometer").unwrap() + 1;
    write(d.path(), "syntax.icf", &garbage);
    let o = run_in(d.path(), &["profiles", "from-iometer", "syntax.icf"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("syntax.icf:{line}:")),
        "{}",
        stderr(&o)
    );

    write(
        d.path(),
        "old.icf",
        &vsan_read().replace("2006.07.27", "1998.01.05"),
    );
    let o = run_in(d.path(), &["run", "old.icf", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("old.icf:1: Version"), "{}", stderr(&o));

    // A configuration file is the run's workload: not beside --fio.
    let o = run_in(
        d.path(),
        &["run", "--iometer", "bad.icf", "--fio", "x.fio", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
