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
    let cmd = format!("echo once >> {}", mark.display());
    let o = short_run(tmp.path(), &["--drop-caches", &cmd]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&mark).unwrap(), "once\n");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["run"]["drop_caches"], cmd.as_str());
    results_common::assert_schema_valid(&v);

    let o = short_run(tmp.path(), &["--drop-caches", "echo no way >&2; exit 3"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--drop-caches echo no way") && e.contains("no way"),
        "{e}"
    );
    let o = short_run(tmp.path(), &["--drop-caches", " "]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--drop-caches"), "{}", stderr(&o));
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
