//! DISKSPD command lines as workloads (docs/diskspd.md): `iofleet run --diskspd "ARGS"`
//! runs the StarWind report's line on a file, `--dry-run` and `profiles from-diskspd`
//! show the resolved profile (which runs as a profile file), a flag iofleet cannot run
//! exits 2 naming it, and a `#N` disk number is never mapped to a device without
//! `--diskspd-map`. The profile key `-Sh`/`-Sw` set, `data.write_through`, is shown to
//! reach a loop device as flushes (root only).

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// The StarWind report's DISKSPD line (../shared/seeds/004, quoted there as
/// `.\diskspd.exe -b4 -t1 -o16 -w0 -Sh -L -r -d900 [...]`), with the block size its
/// prose gives ("-b4K for the 4 kB block size") and a target file for the elided rest.
const STARWIND: &str = r".\diskspd.exe -b4K -t1 -o16 -w0 -Sh -L -r -d900 data.dat";

fn diskspd(dir: &Path, line: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", "--diskspd", line, "--target", "disks", "--no-save"];
    args.extend_from_slice(extra);
    run_in(dir, &args)
}

#[test]
fn the_starwind_line_runs_on_a_file_as_it_describes() {
    let d = tempfile::tempdir().unwrap();
    let o = diskspd(
        d.path(),
        STARWIND,
        &[
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--disk-size",
            "16m",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let plan = &v["run"]["plan"];
    assert_eq!(plan["fleet"]["workers"], 1, "{plan}");
    assert_eq!(plan["fleet"]["threads_per_disk"], 1);
    assert_eq!(plan["fleet"]["qd"], 16);
    let s = &plan["streams"][0];
    assert_eq!(
        (s["read_pct"].as_f64(), s["random_pct"].as_f64()),
        (Some(100.0), Some(100.0))
    );
    assert_eq!(plan["data"]["write_through"], true);
    assert!(
        v["summary"]["all"]["ios"].as_u64().unwrap() > 0,
        "{}",
        v["summary"]
    );
    let notices: Vec<&str> = v["notices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("diskspd -L: accepted")),
        "{notices:?}"
    );
    assert!(
        notices
            .iter()
            .any(|n| n.contains("data.dat: one disk each")),
        "{notices:?}"
    );
    // The named file is not used: the disk is made under --target.
    assert!(!d.path().join("data.dat").exists());
    assert!(d.path().join("disks").is_dir());
}

#[test]
fn dry_run_and_from_diskspd_show_the_resolved_profile_which_runs_as_a_file() {
    let d = tempfile::tempdir().unwrap();
    let o = diskspd(d.path(), STARWIND, &["--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for want in [
        "qd = 16",
        "bs = \"4k\"",
        "random_pct = 100",
        "write_through = true",
        "duration = \"15m\"",
    ] {
        assert!(out.contains(want), "no {want:?} in\n{out}");
    }
    assert!(
        !d.path().join("disks").exists(),
        "a dry run made the target"
    );

    let o = run_in(
        d.path(),
        &["profiles", "from-diskspd", STARWIND, "-o", "sw.toml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(d.path().join("sw.toml")).unwrap();
    assert!(
        text.starts_with("# iofleet profile from the DISKSPD command line: "),
        "{text}"
    );
    assert!(text.contains("write_through = true"), "{text}");
    let o = run_in(
        d.path(),
        &["run", "sw.toml", "--target", "disks", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("qd = 16"), "{}", stdout(&o));
}

#[test]
fn what_iofleet_cannot_run_exits_2_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    // As quoted in the report, -b4 is 4 bytes.
    let o = diskspd(
        d.path(),
        r".\diskspd.exe -b4 -t1 -o16 -w0 -Sh -L -r -d900 data.dat",
        &["--dry-run"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("stream[0]") && e.contains("(DISKSPD -b)"), "{e}");
    // Unsupported and unknown flags, all named at once.
    let o = diskspd(d.path(), "-b4K -rdpct90/10 -Q -r data.dat", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("  -rdpct90/10: not supported"), "{e}");
    assert!(e.contains("  -Q: unknown DISKSPD flag"), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    // --diskspd is the workload: not beside a profile.
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--diskspd",
            "-r data.dat",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--diskspd is the run's workload"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_disk_number_is_never_mapped_without_diskspd_map() {
    let d = tempfile::tempdir().unwrap();
    let o = diskspd(d.path(), "-b4K -r -w30 #1", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("target #1 is a Windows physical drive number"),
        "{e}"
    );
    assert!(e.contains("--diskspd-map '#1=PATH'"), "{e}");
    // A map entry for a target the line does not have, and --target beside a map.
    let o = run_in(
        d.path(),
        &[
            "run",
            "--diskspd",
            "-r #1",
            "--diskspd-map",
            "#2=/dev/null",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--diskspd-map #2: the command line has no target #2"));
    let o = run_in(
        d.path(),
        &[
            "run",
            "--diskspd",
            "-r #1",
            "--diskspd-map",
            "#1=mapped",
            "--target",
            "x",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("placed by --diskspd-map"),
        "{}",
        stderr(&o)
    );
    // Mapped to a directory, the disk goes there.
    std::fs::create_dir(d.path().join("mapped")).unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "--diskspd",
            "-b4K -r -c16M #1",
            "--diskspd-map",
            "#1=mapped",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("mapped"), "{}", stdout(&o));
}

/// The flushes the block layer has completed on `dev` (field 16 of /sys/block/DEV/stat,
/// "flush I/Os", Documentation/block/stat.rst).
fn flushes(dev: &Path) -> u64 {
    let name = dev.file_name().unwrap().to_str().unwrap();
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    let fields: Vec<u64> = stat
        .split_whitespace()
        .map(|f| f.parse().unwrap())
        .collect();
    assert!(fields.len() >= 17, "no flush fields in {stat:?}");
    fields[15]
}

/// Sequential 4 KiB writes at qd 1 for a second on `dev`, with or without
/// `data.write_through` (written on its own in the profile's [data] table).
fn write_second(dir: &Path, dev: &Path, engine: &str, write_through: bool) -> u64 {
    let profile = dir.join(format!("wt-{write_through}.toml"));
    std::fs::write(
        &profile,
        format!(
            "name = \"wt\"\n[timing]\nprepare = \"none\"\nduration = \"1s\"\n\
             [data]\nwrite_through = {write_through}\n\
             [[stream]]\nbs = \"4k\"\nread_pct = 0\nrandom_pct = 0\n"
        ),
    )
    .unwrap();
    let v = run_json(
        dir,
        &[
            profile.to_str().unwrap(),
            "--target",
            dev.to_str().unwrap(),
            "--engine",
            engine,
            "--no-save",
        ],
    );
    v["summary"]["all"]["ios"].as_u64().unwrap()
}

#[test]
fn write_through_writes_reach_a_loop_device_as_flushes() {
    const TEST: &str = "write_through_writes_reach_a_loop_device_as_flushes";
    if !need::need(TEST, &["root", "losetup"])
        || !need::environment(TEST, "no /dev/shm", Path::new("/dev/shm").is_dir())
    {
        return;
    }
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let img = shm.path().join("wt.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    // Detached when dropped, also when an assertion below fails.
    let l = Loop::attach(&img);
    for engine in ["psync", "io_uring"] {
        let before = flushes(&l.dev);
        let ios = write_second(shm.path(), &l.dev, engine, false);
        let without = flushes(&l.dev) - before;
        let before = flushes(&l.dev);
        let ios_wt = write_second(shm.path(), &l.dev, engine, true);
        let with = flushes(&l.dev) - before;
        println!(
            "{engine}: {ios} writes, {without} flushes without write_through; \
             {ios_wt} writes, {with} flushes with it"
        );
        assert!(ios > 0 && ios_wt > 0);
        // Every write-through write is followed by a flush (the loop device has a
        // volatile cache and no FUA); plain O_DIRECT writes are not.
        assert!(
            with * 2 >= ios_wt,
            "{engine}: {with} flushes for {ios_wt} writes"
        );
        assert!(
            without * 10 < with,
            "{engine}: {without} flushes without, {with} with"
        );
    }
}
