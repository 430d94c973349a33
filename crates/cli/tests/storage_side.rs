//! The storage's own side of a run (docs/storage-side.md): `--drop-caches` empties the
//! page cache before the start, on every host that runs workers or observes.
//!
//! Dropping caches affects the whole machine, so the test that does it reads one small
//! file of its own (in the build's scratch directory, not a tmpfs) and looks only at
//! that file's pages (`fincore`).

mod common;
mod results_common;

use std::io::Read;
use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

/// A scratch directory on the build's filesystem (`/tmp` may be a tmpfs, whose pages
/// are never dropped).
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Bytes of `file` resident in the page cache, as `fincore` counts them.
fn resident_bytes(file: &Path) -> u64 {
    let o = Command::new("fincore")
        .args(["--bytes", "--noheadings", "--raw", "--output", "RES"])
        .arg(file)
        .output()
        .expect("fincore runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .expect("fincore prints a byte count")
}

/// Write `bytes` of data to `file`, flush it to the disk (clean pages), and read it
/// back through the page cache.
fn cached_file(file: &Path, bytes: usize) {
    let data: Vec<u8> = (0..bytes).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(file, &data).unwrap();
    std::fs::File::open(file).unwrap().sync_all().unwrap();
    let mut back = Vec::new();
    std::fs::File::open(file)
        .unwrap()
        .read_to_end(&mut back)
        .unwrap();
    assert_eq!(back.len(), bytes);
}

/// A one-second null-engine run in `dir` with `extra` flags.
fn short_run(dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "--engine",
        "null",
        "--qd",
        "1",
        "--duration",
        "1s",
        "--interval",
        "500ms",
        "--json",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    run_in(dir, &args)
}

#[test]
fn drop_caches_local_empties_the_page_cache_before_the_run_and_is_recorded() {
    if !need::need(
        "drop_caches_local_empties_the_page_cache_before_the_run_and_is_recorded",
        &["root", "fincore"],
    ) {
        return;
    }
    let tmp = scratch();
    let file = tmp.path().join("cached.bin");
    const SIZE: usize = 4 << 20;
    cached_file(&file, SIZE);
    // Without the flag the pages stay: this is what the drop is measured against.
    assert!(
        resident_bytes(&file) >= SIZE as u64 / 2,
        "read into the cache"
    );
    let o = short_run(tmp.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        resident_bytes(&file) >= SIZE as u64 / 2,
        "a run without --drop-caches leaves the cache alone"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["run"].get("drop_caches").is_none(), "{}", v["run"]);

    let o = short_run(tmp.path(), &["--drop-caches", "local"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        resident_bytes(&file),
        0,
        "--drop-caches local dropped the file's pages"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["run"]["drop_caches"], "local");
    results_common::assert_schema_valid(&v);
}

#[test]
fn drop_caches_runs_a_command_on_the_host_and_a_failing_one_is_named() {
    let tmp = scratch();
    let mark = tmp.path().join("dropped");
    let cmd = format!("cmd:echo once >> {}", mark.display());
    let o = short_run(tmp.path(), &["--drop-caches", &cmd]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&mark).unwrap(), "once\n");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["run"]["drop_caches"], cmd.as_str());
    results_common::assert_schema_valid(&v);

    // A sweep drops before each of its steps.
    let steps = tmp.path().join("steps");
    let cmd = format!("cmd:echo step >> {}", steps.display());
    let o = run_in(
        tmp.path(),
        &[
            "sweep",
            "--vary",
            "qd=1,2,4",
            "--engine",
            "null",
            "--duration",
            "300ms",
            "--interval",
            "300ms",
            "--drop-caches",
            &cmd,
            "--quiet",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&steps).unwrap(), "step\n".repeat(3));

    let o = short_run(
        tmp.path(),
        &["--drop-caches", "cmd:echo no way >&2; exit 3"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--drop-caches cmd:echo no way") && e.contains("no way"),
        "{e}"
    );
    // Anything but `local` and `cmd:COMMAND` is refused before anything runs, naming
    // the flag and both forms: a slip is never run as a command.
    let slip = tmp.path().join("slipped");
    for bad in [
        " ".to_string(),
        "Local".to_string(),
        "locl".to_string(),
        "cmd: ".to_string(),
        format!("touch {}", slip.display()),
    ] {
        let o = short_run(tmp.path(), &["--drop-caches", &bad]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("--drop-caches") && e.contains("`local`") && e.contains("`cmd:COMMAND`"),
            "{bad:?}: {e}"
        );
    }
    assert!(!slip.exists(), "a value without cmd: ran as a command");
}

/// In a fleet every host, the observer too, drops its caches once every host has
/// written its fill, not when its job arrives: each drop reads the last 4 KiB of the
/// worker's disk file (random data once the fill reached it, zeros before: the file is
/// allocated before it is filled) and notes how many of its bytes are not zero.
#[test]
fn in_a_fleet_every_host_drops_its_caches_after_every_hosts_fill() {
    let tmp = scratch();
    let (inv, marks) = (tmp.path().join("local.toml"), tmp.path().join("marks"));
    std::fs::write(
        &inv,
        "[[host]]\ndestination = \"w1\"\ntransport = \"local\"\ntarget = \"data\"\n\
         [[host]]\ndestination = \"storage-1\"\ntransport = \"local\"\nrole = \"observer\"\n",
    )
    .unwrap();
    // 64 MiB: the last 4 KiB block is block 16383.
    let cmd = format!(
        "cmd:for f in {dir}/data/*; do dd if=\"$f\" bs=4096 skip=16383 count=1 2>/dev/null | tr -d '\\000' | wc -c; done >> {marks}",
        dir = tmp.path().display(),
        marks = marks.display()
    );
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "--hosts",
            inv.to_str().unwrap(),
            "--engine",
            "psync",
            "--direct=false",
            "--workers",
            "1",
            "--disk-size",
            "64M",
            "--qd",
            "1",
            "--duration",
            "500ms",
            "--interval",
            "500ms",
            "--drop-caches",
            &cmd,
            "--quiet",
            "--no-save",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let seen = std::fs::read_to_string(&marks).unwrap();
    let counts: Vec<u32> = seen.lines().map(|l| l.trim().parse().unwrap()).collect();
    // One disk file, seen by the worker's drop and the observer's.
    assert_eq!(counts.len(), 2, "{seen}");
    assert!(
        counts.iter().all(|&c| c > 3000),
        "a drop before the fill ended: {seen}"
    );
}

/// Not root: `--drop-caches local` is refused before anything is written, exit 2,
/// naming the flag. As root the test runs iofleet as `nobody` to see it.
#[test]
fn drop_caches_local_is_refused_without_root() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let tmp = scratch();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("iofleet"));
    cmd.current_dir(tmp.path())
        .env("XDG_DATA_HOME", tmp.path())
        .args(["run", "--engine", "null", "--duration", "1s"])
        .args(["--drop-caches", "local", "--quiet"]);
    if need::is_root() {
        cmd.uid(65534).gid(65534);
    }
    let o = cmd.output().expect("iofleet runs");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--drop-caches local: needs root") && e.contains("whole host"),
        "{e}"
    );
    assert!(o.stdout.is_empty(), "nothing measured");
}

/// The test's "storage daemon": a Perl process named past the 15 characters of
/// /proc/PID/comm (`$0`), doing CPU work and writes (flushed, so each write dirties
/// fresh pages) in a loop with short sleeps. Every ~20 ms it notes the wall clock, its
/// own CPU time (`times`, the kernel's count for the process) and the bytes it wrote;
/// on SIGTERM it prints the notes, then its CPU time, and exits.
const DAEMON: &str = r#"
use strict; use warnings; use Time::HiRes qw(time sleep); use IO::Handle;
$0 = $ARGV[0];
my $quit = 0; $SIG{TERM} = sub { $quit = 1 };
open(my $f, '+>', $ARGV[1]) or die "open: $!";
my $buf = 'x' x 65536; my ($written, $at) = (0, 0); my @log;
while (!$quit) {
    my $t0 = time; my $x = 0;
    while (time - $t0 < 0.012) { $x += sqrt($x + $_) for 1 .. 100 }
    syswrite($f, $buf) == 65536 or die "write: $!";
    $written += 65536; $at += 65536;
    if ($at >= (4 << 20)) { $f->sync; sysseek($f, 0, 0); $at = 0 }
    sleep(0.008);
    my ($u, $s) = times;
    push @log, sprintf("%.6f %.3f %d", time, $u + $s, $written);
}
print "$_\n" for @log;
my ($u, $s) = times;
printf "cpu %.3f\n", $u + $s;
"#;

/// The daemon's notes: (wall clock s, CPU s, bytes written) in time order.
type Notes = Vec<(f64, f64, f64)>;

/// The daemon's CPU time and bytes written by wall-clock instant `t` (seconds since the
/// Unix epoch), read off its notes, linearly between the two around `t`.
fn at(notes: &Notes, t: f64) -> (f64, f64) {
    let k = notes.partition_point(|n| n.0 <= t);
    assert!(
        k > 0 && k < notes.len(),
        "the daemon ran from before to after {t}"
    );
    let (a, b) = (notes[k - 1], notes[k]);
    let w = (t - a.0) / (b.0 - a.0);
    (a.1 + w * (b.1 - a.1), a.2 + w * (b.2 - a.2))
}

/// The cgroup v2 hierarchy's mount point, as /proc/self/mountinfo says.
fn cgroup2() -> Option<std::path::PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .ok()?
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.split_whitespace().next()? == "cgroup2")
                .then(|| left.split_whitespace().nth(4).map(std::path::PathBuf::from))?
        })
}

/// A cgroup the test made, removed (once empty) when dropped.
struct TestCgroup(std::path::PathBuf);

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn an_observer_watches_a_storage_daemon_by_name_and_by_cgroup_as_its_own_rusage_says() {
    let test = "an_observer_watches_a_storage_daemon_by_name_and_by_cgroup_as_its_own_rusage_says";
    if !need::need(test, &["root", "perl"]) {
        return;
    }
    let mount = cgroup2();
    if !need::environment(test, "a cgroup v2 hierarchy", mount.is_some()) {
        return;
    }
    let tmp = scratch();
    let pid = std::process::id();
    let cg_path = format!("/iofleet-test-{pid}");
    let cg = TestCgroup(mount.unwrap().join(&cg_path[1..]));
    std::fs::create_dir(&cg.0).unwrap();
    // Longer than /proc/PID/comm's 15 characters.
    let name = format!("iofleet-test-storaged-{pid}");
    let script = tmp.path().join("daemon.pl");
    std::fs::write(&script, DAEMON).unwrap();
    let mut daemon = Command::new("perl")
        .arg(&script)
        .arg(&name)
        .arg(tmp.path().join("daemon.data"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::write(cg.0.join("cgroup.procs"), daemon.id().to_string()).unwrap();

    let marks = tmp.path().join("dropped");
    let inv = tmp.path().join("local.toml");
    std::fs::write(
        &inv,
        format!(
            "[[host]]\ndestination = \"w1\"\ntransport = \"local\"\ntarget = \"data\"\n\
             [[host]]\ndestination = \"storage-1\"\ntransport = \"local\"\nrole = \"observer\"\n\
             observe = [{name:?}, \"cgroup:{cg_path}\"]\n"
        ),
    )
    .unwrap();
    let drop_cmd = format!("cmd:echo dropped >> {}", marks.display());
    let o = run_in(
        tmp.path(),
        &[
            "run",
            "--hosts",
            inv.to_str().unwrap(),
            "--engine",
            "null",
            "--qd",
            "1",
            "--warmup",
            "1s",
            "--duration",
            "2s",
            "--interval",
            "1s",
            "--drop-caches",
            &drop_cmd,
            "--db",
            "r.db",
            "--name",
            "watched",
            "--intervals",
            "--output",
            "result.json",
            "--quiet",
        ],
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(daemon.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let mut said = String::new();
    daemon
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    assert!(daemon.wait().unwrap().success(), "{said}");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("result.json")).unwrap()).unwrap();
    results_common::assert_schema_valid(&v);
    // The table names each entry over the measured phase, and its CPU per interval.
    let table = stdout(&o);
    assert!(table.contains(&format!("Storage {name}: CPU")), "{table}");
    assert!(
        table.contains(&format!("Storage cgroup:{cg_path}: CPU")),
        "{table}"
    );
    assert!(table.contains("storage CPU%"), "{table}");
    // The worker host and the observer each dropped their caches.
    assert_eq!(
        std::fs::read_to_string(&marks).unwrap(),
        "dropped\n".repeat(2)
    );

    let notes: Notes = said
        .lines()
        .filter(|l| !l.starts_with("cpu "))
        .map(|l| {
            let f: Vec<f64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            (f[0], f[1], f[2])
        })
        .collect();
    let rusage: f64 = said.lines().last().unwrap()[4..].parse().unwrap();
    assert!((rusage - notes.last().unwrap().1).abs() < 0.05, "{said}");
    check_watched(&v, &notes, &name, &format!("cgroup:{cg_path}"));
    check_stored_and_shown(tmp.path(), &name);
}

/// The observer's figures for each entry agree with the daemon's own notes: CPU over
/// the run within 10% (relative), each interval within 10% or 0.05 of a core; what it
/// wrote within 25%; memory and context switches seen.
fn check_watched(v: &Value, notes: &Notes, name: &str, cgroup: &str) {
    let start = v["run"]["start_unix_ns"].as_u64().expect("start_unix_ns") as f64 / 1e9;
    let intervals = v["intervals"].as_array().unwrap();
    let rows = v["host_intervals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "storage-1")
        .unwrap()["rows"]
        .as_array()
        .unwrap();
    assert_eq!(rows.len(), intervals.len());
    for entry in [name, cgroup] {
        let (mut seen_cpu, mut seen_bytes, mut own_cpu, mut own_bytes) = (0.0, 0.0, 0.0, 0.0);
        for (r, i) in rows.iter().zip(intervals) {
            let (t, d) = (
                i["t_s"].as_f64().unwrap(),
                i["duration_s"].as_f64().unwrap(),
            );
            let e = r["usage"]["storage"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == entry)
                .unwrap_or_else(|| panic!("{entry} in {r}"));
            let (c0, b0) = at(notes, start + t);
            let (c1, b1) = at(notes, start + t + d);
            let (cores, own) = (e["cpu_pct"].as_f64().unwrap() / 100.0, (c1 - c0) / d);
            assert!(
                (cores - own).abs() <= (0.1 * own).max(0.05),
                "{entry}, interval {}: observed {cores:.3} cores, the daemon says {own:.3}",
                i["index"]
            );
            assert_eq!(e["processes"], 1, "{e}");
            assert!(e["memory_mib"].as_f64().unwrap() > 1.0, "{e}");
            assert!(e["ctx_switches_per_s"].as_f64().unwrap() >= 10.0, "{e}");
            seen_cpu += cores * d;
            seen_bytes += e["write_mbps"].as_f64().unwrap() * 1e6 * d;
            own_cpu += c1 - c0;
            own_bytes += b1 - b0;
        }
        // It had work to be seen doing, however busy the machine was.
        assert!(
            own_cpu > 0.1 && own_bytes > 1e6,
            "{own_cpu} CPU s, {own_bytes} bytes"
        );
        assert!(
            (seen_cpu - own_cpu).abs() <= 0.1 * own_cpu,
            "{entry}: observed {seen_cpu:.3} CPU s over the run, the daemon says {own_cpu:.3}"
        );
        assert!(
            (seen_bytes - own_bytes).abs() <= 0.25 * own_bytes,
            "{entry}: observed {seen_bytes:.0} bytes written, the daemon says {own_bytes:.0}"
        );
        // The observer's summary over the measured phase and the fleet's rows carry it.
        let obs = v["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["host"] == "storage-1")
            .unwrap();
        let find = |list: &Value| list.as_array().unwrap().iter().any(|e| e["name"] == entry);
        assert!(find(&obs["storage"]), "{obs}");
        assert!(
            find(&v["summary"]["observers"]["storage"]),
            "{}",
            v["summary"]
        );
        assert!(intervals.iter().all(|i| find(&i["observers"]["storage"])));
    }
}

/// The stored run, `compare`, the table and the report show what was watched.
fn check_stored_and_shown(dir: &Path, name: &str) {
    let o = run_in(dir, &["results", "export", "watched", "--db", "r.db"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
    // The daemon is watched by name and by cgroup: each entry shows it, and the whole
    // (what storage_cpu reads) counts it once, not twice.
    let entries = stored["summary"]["observers"]["storage"]
        .as_array()
        .unwrap();
    let cpu_of = |e: &Value| e["cpu_pct"].as_f64().unwrap();
    let each = cpu_of(entries.iter().find(|e| e["name"] == name).unwrap());
    let summed: f64 = entries
        .iter()
        .filter(|e| e.get("total").is_none())
        .map(cpu_of)
        .sum();
    let cpu = cpu_of(
        entries
            .iter()
            .find(|e| e["total"] == true)
            .unwrap_or_else(|| panic!("{}", stored["summary"])),
    );
    assert!(each > 10.0, "{}", stored["summary"]);
    assert!((cpu - each).abs() < 0.1 * each, "{}", stored["summary"]);
    assert!(cpu < 0.6 * summed, "{}", stored["summary"]);
    let o = run_in(
        dir,
        &[
            "compare",
            "watched",
            "watched",
            "--metric",
            "storage_cpu",
            "--json",
            "--db",
            "r.db",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let got = c["metrics"][0]["values"][0].as_f64().unwrap();
    assert!((got - cpu).abs() < 1e-9, "{c}");
    let o = run_in(dir, &["results", "show", "watched", "--db", "r.db"]);
    let table = stdout(&o);
    assert!(table.contains(&format!("Storage {name}: CPU")), "{table}");
    let o = run_in(dir, &["report", "watched", "--db", "r.db"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = stdout(&o);
    assert!(
        html.contains("<h2>Storage software</h2>"),
        "no storage section"
    );
    assert!(
        html.contains(&format!("<td class=\"l\">{name}</td>")),
        "{name}"
    );
}

/// `observe` is checked where the inventory is read (TOML and Ansible), naming the host
/// and the key; a cgroup missing on the host is refused before the start; a dry run
/// says what an observer watches.
#[test]
fn observe_entries_are_checked_naming_the_host_and_the_key() {
    let tmp = scratch();
    let workers = "[[host]]\ndestination = \"w1\"\ntransport = \"local\"\n";
    for (file, text, says) in [
        (
            "inv.toml",
            "[[host]]\ndestination = \"w1\"\nobserve = [\"ceph-osd\"]\n".to_string(),
            "host 'w1': observe: only an observer host watches storage software",
        ),
        (
            "inv.toml",
            format!("{workers}[[host]]\ndestination = \"s1\"\nrole = \"observer\"\nobserve = [\"cgroup:system.slice\"]\n"),
            "host 's1': observe: \"cgroup:system.slice\": a cgroup is a path from the cgroup v2 root",
        ),
        (
            "inv.toml",
            format!("{workers}[[host]]\ndestination = \"s1\"\nrole = \"observer\"\nobserve = [\"ceph osd\"]\n"),
            "host 's1': observe: \"ceph osd\" is not a process name",
        ),
        (
            "inv.ini",
            "w1\ns1 iofleet_role=observer iofleet_observe=7\n".to_string(),
            "host 's1': iofleet_observe: 7 is neither an entry nor a list of entries",
        ),
    ] {
        let inv = tmp.path().join(file);
        std::fs::write(&inv, &text).unwrap();
        let o = run_in(
            tmp.path(),
            &["run", "vsan-7030", "--hosts", inv.to_str().unwrap(), "--dry-run"],
        );
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(file), "{}", stderr(&o));
    }
    let inv = tmp.path().join("ok.toml");
    let missing = format!("cgroup:/iofleet-test-absent-{}", std::process::id());
    std::fs::write(
        &inv,
        format!("{workers}[[host]]\ndestination = \"s1\"\ntransport = \"local\"\nrole = \"observer\"\nobserve = [\"ceph-osd\", {missing:?}]\n"),
    )
    .unwrap();
    let args = [
        "run",
        "--hosts",
        inv.to_str().unwrap(),
        "--engine",
        "null",
        "--qd",
        "1",
    ];
    let o = run_in(tmp.path(), &[&args[..], &["--dry-run"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("and watches ceph-osd, {missing}")),
        "{}",
        stdout(&o)
    );
    let o = run_in(
        tmp.path(),
        &[&args[..], &["--duration", "1s", "--quiet", "--no-save"]].concat(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("host s1: observe: ")
            && e.contains(&format!("{missing:?}: there is no such cgroup")),
        "{e}"
    );
}
