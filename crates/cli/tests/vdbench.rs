//! vdbench parameter files as workloads (docs/vdbench.md): the file HCIBench writes for
//! the VxRail report's workload runs 1 s on files under `--target` as the workload its
//! name describes, `--dry-run` and `profiles from-vdbench` show the resolved profiles
//! (one per step), and a parameter iofleet cannot run exits 2 naming file and line.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// HCIBench's parameter file for the workload the VxRail report names
/// (../shared/seeds/002_3b2e3988706f2153.txt: "charakterystyka obciążenia:
/// vdb-8vmdk-10ws-4k-70rdpct-30randompct-2threads"): 8 disks, 10% working set, 4K, 70%
/// read, 30% random, 2 threads, each test 10 minutes ("Czas trwania każdego testu | 10
/// minut"), laid out as HCIBench's generator writes it.
const VXRAIL: &str = "\
*Auto Generated VDBench Parameter File
*8 raw disk, 30% random, 70% read
*SD:    Storage Definition
*WD:    Workload Definition
*RD:    Run Definition
debug=86
data_errors=10000
sd=sd1,lun=/dev/sda,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd2,lun=/dev/sdb,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd3,lun=/dev/sdc,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd4,lun=/dev/sdd,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd5,lun=/dev/sde,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd6,lun=/dev/sdf,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd7,lun=/dev/sdg,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd8,lun=/dev/sdh,openflags=o_direct,hitarea=0,range=(0,10),threads=2
wd=wd1,sd=(sd1,sd2,sd3,sd4,sd5,sd6,sd7,sd8),xfersize=4k,rdpct=70,seekpct=30
rd=run1,wd=wd1,iorate=max,elapsed=600
";

const NAME: &str = "vdb-8vmdk-10ws-4k-70rdpct-30randompct-2threads.vdb";

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn the_vxrail_workload_runs_on_files_as_its_name_describes() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), NAME, VXRAIL);
    let o = run_in(
        d.path(),
        &[
            "run",
            NAME,
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
            "16m",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let plan = &v["run"]["plan"];
    assert_eq!(plan["fleet"]["workers"], 1, "{plan}");
    assert_eq!(plan["fleet"]["disks_per_worker"], 8, "{plan}");
    assert_eq!(plan["fleet"]["threads_per_disk"], 2, "{plan}");
    let s = &plan["streams"][0];
    assert_eq!(s["working_set_pct"].as_f64(), Some(10.0), "{s}");
    assert_eq!(
        (s["read_pct"].as_f64(), s["random_pct"].as_f64()),
        (Some(70.0), Some(30.0)),
        "{s}"
    );
    assert!(s["bs"].to_string().contains("4096"), "{s}");
    let sum = &v["summary"];
    assert!(sum["all"]["ios"].as_u64().unwrap() > 0, "{sum}");
    assert!(sum["read"]["ios"].as_u64().unwrap() > 0, "{sum}");
    assert!(sum["write"]["ios"].as_u64().unwrap() > 0, "{sum}");
    let notices: Vec<&str> = v["notices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("/dev/sda") && n.contains("not used")),
        "{notices:?}"
    );
    // The luns are not touched: the disks are files under --target.
    assert!(d.path().join("disks").is_dir());
}

#[test]
fn dry_run_and_from_vdbench_show_every_step() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), NAME, VXRAIL);
    let o = run_in(
        d.path(),
        &["run", "--vdbench", NAME, "--target", "disks", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for want in [
        "disks_per_worker = 8",
        "threads_per_disk = 2",
        "read_pct = 70",
        "random_pct = 30",
        "working_set_pct = 10",
        "duration = \"10m\"",
    ] {
        assert!(out.contains(want), "no {want:?} in\n{out}");
    }
    assert!(
        !d.path().join("disks").exists(),
        "a dry run made the target"
    );

    write(
        d.path(),
        "sweep.vdb",
        "sd=sd1,lun=/dev/sdb,size=4m,threads=2\nwd=wd1,sd=sd1,xfersize=4k\n\
         rd=rd1,wd=wd1,elapsed=1,forrdpct=(0,100)\n",
    );
    let o = run_in(
        d.path(),
        &["run", "sweep.vdb", "--target", "disks", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("# vdbench step 1/2: rd=rd1/rdpct=0"), "{out}");
    assert!(
        out.contains("# vdbench step 2/2: rd=rd1/rdpct=100"),
        "{out}"
    );
    let o = run_in(
        d.path(),
        &[
            "run",
            "sweep.vdb",
            "--vdbench-step",
            "rd1/rdpct=100",
            "--target",
            "disks",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("read_pct = 100"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("step 1/2"), "{}", stdout(&o));

    let o = run_in(
        d.path(),
        &["profiles", "from-vdbench", "sweep.vdb", "-o", "s.toml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(d.path().join("s.toml")).unwrap();
    assert!(text.contains("# ---- step rd1/rdpct=0"), "{text}");
    assert!(text.contains("# ---- step rd1/rdpct=100"), "{text}");
}

#[test]
fn what_iofleet_cannot_run_exits_2_naming_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        "bad.vdb",
        "sd=sd1,lun=/dev/sdb\nwd=wd1,sd=sd1,rhpct=50\nrd=rd1,wd=wd1,iorate=curve\n",
    );
    let o = run_in(
        d.path(),
        &["run", "bad.vdb", "--target", "disks", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("bad.vdb:2: rhpct: not supported"), "{e}");
    assert!(e.contains("bad.vdb:3: iorate: not supported"), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    write(d.path(), "syntax.vdb", "sd=sd1,lun=(a\n");
    let o = run_in(d.path(), &["profiles", "from-vdbench", "syntax.vdb"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("syntax.vdb:1:"), "{}", stderr(&o));
    // A parameter file is the run's workload: not beside --fio.
    write(d.path(), NAME, VXRAIL);
    let o = run_in(d.path(), &["run", NAME, "--fio", "x.fio", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
