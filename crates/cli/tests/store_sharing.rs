//! Runs sharing one results store (issue 24): eight runs started together against one
//! store, and three against a store that does not exist yet, are all recorded whole; a
//! store whose filesystem fills up mid-run loses nothing (the run saves itself to a
//! private file of its own, never through a link placed where it would go, and `results
//! import` restores it exactly); `results import` refuses
//! what is not a store, a store of another schema version, and a different run under an
//! id already taken. A new store is private while an existing one keeps its mode and
//! group (and SQLite's side files follow it); a store on a read-only filesystem is
//! listed, shown, exported and served; a store path that is a directory, or on a full
//! filesystem, is refused saying so.

#[path = "../../../tests-support/need.rs"]
mod need;
mod results_common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use results_common::*;
use serde_json::Value;

/// A light null-engine run with short intervals, named `name`, recording into `db`.
fn spawn_run(dir: &Path, db: &Path, name: &str, duration: &str) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .current_dir(dir)
        .env("XDG_DATA_HOME", dir.join("xdg-unused"))
        .env("TMPDIR", dir.join("tmp"))
        .args([
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--workers",
            "2",
        ])
        .args([
            "--disks",
            "1",
            "--threads",
            "1",
            "--qd",
            "2",
            "--rate",
            "2000",
        ])
        .args([
            "--interval",
            "100ms",
            "--warmup",
            "0s",
            "--duration",
            duration,
        ])
        .args(["--json", "--quiet", "--name", name, "--db"])
        .arg(db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iofleet starts")
}

/// Wait for a run; return its live JSON result and its stderr.
fn finish(child: Child) -> (Value, String) {
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    (serde_json::from_slice(&o.stdout).unwrap(), stderr)
}

/// The stored runs: name → (id, status, intervals).
fn listed(db: &Path) -> Vec<(String, String, String, u64)> {
    let o = with_db(db, &["results", "list", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
                r["intervals"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The run's figures recomputed from the store equal what the live run printed.
fn assert_recomputed_equals_live(db: &Path, id: &str, live: &Value) {
    let o = with_db(db, &["results", "export", id, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let rec: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rec["summary"], live["summary"], "run {id}");
    assert_eq!(rec["intervals"], live["intervals"], "run {id}");
    assert_eq!(&rec, live, "run {id}");
}

fn shared(db: &Path, dir: &Path, n: usize) {
    let names: Vec<String> = (0..n).map(|i| format!("shared-{i}")).collect();
    let children: Vec<Child> = names
        .iter()
        .map(|name| spawn_run(dir, db, name, "2s"))
        .collect();
    let results: Vec<(Value, String)> = children.into_iter().map(finish).collect();
    for (name, (_, stderr)) in names.iter().zip(&results) {
        assert!(!stderr.contains("warning"), "{name}: {stderr}");
    }
    let list = listed(db);
    for (name, (live, _)) in names.iter().zip(&results) {
        let (_, id, status, intervals) = list
            .iter()
            .find(|r| &r.0 == name)
            .unwrap_or_else(|| panic!("{name} is not in the store: {list:?}"));
        assert_eq!(status, "complete", "{name}");
        assert_eq!(*intervals, 20, "{name}: every 100 ms interval of 2 s");
        assert_recomputed_equals_live(db, id, live);
    }
}

#[test]
fn eight_runs_together_on_one_store_are_all_recorded() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("shared.db");
    // The store exists already (a team's shared store).
    let o = with_db(
        &db,
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    shared(&db, d.path(), 8);
    assert_eq!(listed(&db).len(), 9);
}

#[test]
fn three_runs_creating_one_new_store_are_all_recorded() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("sub").join("new.db");
    shared(&db, d.path(), 3);
    assert_eq!(listed(&db).len(), 3);
}

/// A small ext4 filesystem on a loop device, mounted; unmounted when dropped.
struct SmallFs {
    mnt: PathBuf,
}

impl SmallFs {
    /// Mounted read-only from here on (an archived share, a snapshot).
    fn read_only(&self) {
        let ok = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.mnt)
            .status()
            .unwrap();
        assert!(ok.success(), "mount -o remount,ro");
    }

    fn new(dir: &Path) -> SmallFs {
        let img = dir.join("fs.img");
        let f = std::fs::File::create(&img).unwrap();
        f.set_len(8 << 20).unwrap();
        let ok = Command::new("mkfs.ext4")
            .args(["-q", "-F", "-m", "0"])
            .arg(&img)
            .status()
            .unwrap();
        assert!(ok.success(), "mkfs.ext4");
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let ok = Command::new("mount")
            .args(["-o", "loop"])
            .arg(&img)
            .arg(&mnt)
            .status()
            .unwrap();
        assert!(ok.success(), "mount -o loop");
        SmallFs { mnt }
    }

    /// Write until the filesystem is full.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.mnt.join("filler")).unwrap();
        let block = vec![0u8; 64 << 10];
        while f.write_all(&block).is_ok() {}
        // What is left, to the last block.
        while f.write_all(&block[..4096]).is_ok() {}
        let _ = f.sync_all();
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        // Lazily if a process still holds it (a failed test's run): never left mounted.
        let ok = Command::new("umount").arg(&self.mnt).status();
        if !ok.is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
        }
    }
}

#[test]
fn a_store_on_a_full_filesystem_loses_nothing_and_import_restores_the_run() {
    if !need::need(
        "a_store_on_a_full_filesystem_loses_nothing_and_import_restores_the_run",
        &["root", "mkfs.ext4", "mount"],
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let fs = SmallFs::new(d.path());
    let db = fs.mnt.join("results.db");
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
    // Links where the run would save itself: the directory beside the store is a link
    // to another directory, and the file it would make in the working directory's is a
    // link to a file that does not exist. Neither may be followed.
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, fs.mnt.join("results.db.unsaved")).unwrap();
    let here = d.path().join("results.db.unsaved");
    std::fs::create_dir(&here).unwrap();
    std::fs::set_permissions(&here, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::create_dir(d.path().join("tmp")).unwrap();
    let child = spawn_run(d.path(), &db, "filled", "3s");
    // Once the run is being recorded, fill the store's filesystem.
    let t0 = Instant::now();
    let recording = || {
        let o = with_db(&db, &["results", "list", "--json"]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        let run = v
            .as_array()
            .and_then(|l| l.iter().find(|r| r["name"] == "filled"));
        run.map(|r| r["id"].as_str().unwrap().to_string())
    };
    let id = loop {
        if let Some(id) = recording() {
            break id;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the run never began recording"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let planted = d.path().join("planted-target");
    std::os::unix::fs::symlink(&planted, here.join(format!("{id}.db"))).unwrap();
    fs.fill();
    let (live, stderr) = finish(child);
    // It says where the run went, and how to put it back: a new private directory in
    // the temporary directory, the links untouched.
    let dirs: Vec<PathBuf> = std::fs::read_dir(d.path().join("tmp"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}: {stderr}");
    assert!(
        dirs[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("iofleet-unsaved-"),
        "{dirs:?}"
    );
    let saved = dirs[0].join(format!("{id}.db"));
    assert_eq!(mode(&dirs[0]), 0o700);
    assert_eq!(mode(&saved), 0o600);
    assert!(!planted.exists(), "a link was followed");
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());
    assert!(stderr.contains(&*saved.to_string_lossy()), "{stderr}");
    assert!(stderr.contains("iofleet results import"), "{stderr}");
    assert_eq!(stderr.matches("results store").count(), 2, "{stderr}");
    assert!(
        !stderr.contains("results store: "),
        "the prefix once: {stderr}"
    );

    // Restored elsewhere, exactly.
    let other = d.path().join("other.db");
    let o = with_db(&other, &["results", "import", saved.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("imported run"), "{}", out(&o));
    let list = listed(&other);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0].2, "complete");
    assert_eq!(list[0].3, 30);
    assert_recomputed_equals_live(&other, &list[0].1, &live);
    // Importing again changes nothing.
    let o = with_db(&other, &["results", "import", saved.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("already here, unchanged"), "{}", out(&o));

    // Back into the store it came from, once there is room: the partial record the
    // run left there is replaced by the whole run.
    std::fs::remove_file(fs.mnt.join("filler")).unwrap();
    let o = with_db(&db, &["results", "import", saved.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("over its partial record"), "{}", out(&o));
    let id = &list[0].1;
    assert_recomputed_equals_live(&db, id, &live);
    drop(fs);
}

#[test]
fn import_refuses_what_it_cannot_take_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("target.db");
    let src = d.path().join("source.db");
    let live = record_run(&src, "1000", &["--name", "one"]);
    let id = listed(&src)[0].1.clone();
    let o = with_db(&db, &["results", "import", src.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_recomputed_equals_live(&db, &id, &live);

    // Not a store.
    let text = d.path().join("notes.txt");
    std::fs::write(&text, "not a database").unwrap();
    let o = with_db(&db, &["results", "import", text.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("notes.txt"), "{}", err(&o));
    // A missing file.
    let o = with_db(&db, &["results", "import", "missing.db"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("missing.db: not an iofleet results store (no such file)"),
        "{}",
        err(&o)
    );
    // Another schema version.
    let old = d.path().join("old.db");
    let c = rusqlite::Connection::open(&old).unwrap();
    c.execute_batch("CREATE TABLE runs (id TEXT); PRAGMA user_version = 1;")
        .unwrap();
    drop(c);
    let o = with_db(&db, &["results", "import", old.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("schema version 1"), "{}", err(&o));
    // A different run under an id the store already has (its result changed here).
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "UPDATE runs SET name = 'renamed', result = '{}' WHERE id = ?1",
        [&id],
    )
    .unwrap();
    drop(c);
    let o = with_db(&db, &["results", "import", src.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains(&format!("run {id} is already in the store")),
        "{}",
        err(&o)
    );
    // Nothing was written: the store's copy is still the changed one.
    assert_eq!(listed(&db)[0].0, "renamed");
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// `db` with `-wal` or `-shm` appended.
fn side(db: &Path, ext: &str) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push(ext);
    PathBuf::from(p)
}

#[test]
fn a_new_store_is_private_and_an_existing_one_keeps_its_mode_and_group() {
    if !need::need(
        "a_new_store_is_private_and_an_existing_one_keeps_its_mode_and_group",
        &["root"],
    ) {
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let d = tempfile::tempdir().unwrap();
    // The default store, its directories made by iofleet.
    let xdg = d.path().join("xdg");
    let child = Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .env("XDG_DATA_HOME", &xdg)
        .args([
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--workers",
            "1",
        ])
        .args([
            "--duration",
            "250ms",
            "--warmup",
            "0s",
            "--interval",
            "250ms",
        ])
        .args(["--quiet", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child);
    let db = xdg.join("iofleet/results.db");
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(&xdg.join("iofleet")), 0o700);
    assert_eq!(mode(&xdg), 0o700);

    // A team's store: group-readable and writable, in a group of its own.
    let team = d.path().join("team.db");
    std::fs::write(&team, "").unwrap();
    std::fs::set_permissions(&team, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::chown(&team, None, Some(4242)).unwrap();
    // A run long enough to be looked at whatever the machine's load, stopped once seen.
    let child = spawn_run(d.path(), &team, "team", "60s");
    // While the run records, SQLite's side files exist: they follow the store.
    let t0 = Instant::now();
    while !(side(&team, "-wal").exists() && side(&team, "-shm").exists()) {
        assert!(t0.elapsed() < Duration::from_secs(30), "no -wal or -shm");
        std::thread::sleep(Duration::from_millis(20));
    }
    for f in [side(&team, "-wal"), side(&team, "-shm")] {
        assert_eq!(mode(&f), 0o640, "{}", f.display());
        assert_eq!(
            std::fs::metadata(&f).unwrap().gid(),
            4242,
            "{}",
            f.display()
        );
    }
    // Ctrl-C: the run ends, interrupted, and is kept.
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(mode(&team), 0o640);
    assert_eq!(std::fs::metadata(&team).unwrap().gid(), 4242);
    assert_eq!(listed(&team).len(), 1);
}

#[test]
fn a_store_on_a_read_only_filesystem_is_listed_shown_exported_and_served() {
    if !need::need(
        "a_store_on_a_read_only_filesystem_is_listed_shown_exported_and_served",
        &["root", "mkfs.ext4", "mount"],
    ) {
        return;
    }
    use std::io::{BufRead, BufReader, Read, Write};
    let d = tempfile::tempdir().unwrap();
    let fs = SmallFs::new(d.path());
    let db = fs.mnt.join("results.db");
    let live = record_run(&db, "1000", &["--name", "archived"]);
    // A snapshot taken while a writer had the store open: its -wal holds a change
    // (a rename) the main file does not, and there is no -shm beside it.
    let snap = fs.mnt.join("snap.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        c.execute("UPDATE runs SET name = 'renamed'", []).unwrap();
        std::fs::copy(&db, &snap).unwrap();
        std::fs::copy(side(&db, "-wal"), side(&snap, "-wal")).unwrap();
        c.execute("UPDATE runs SET name = 'archived'", []).unwrap();
    }
    fs.read_only();
    assert!(!side(&db, "-shm").exists(), "a store closed cleanly");

    let list = listed(&db);
    assert_eq!(list.len(), 1, "{list:?}");
    let id = &list[0].1;
    assert_recomputed_equals_live(&db, id, &live);
    let o = with_db(&db, &["results", "show", "archived"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains(&format!("run {id}")), "{}", out(&o));
    let o = with_db(&db, &["results", "export", id, "--format", "csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // Writing is refused, saying why.
    let o = with_db(&db, &["results", "delete", id]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("the filesystem holding it is read-only"),
        "{}",
        err(&o)
    );
    let o = with_db(
        &fs.mnt.join("new.db"),
        &["results", "import", snap.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("no store there yet, and the filesystem is read-only"),
        "{}",
        err(&o)
    );
    // The snapshot reads as its main file holds it, and says what it could not read.
    let o = with_db(&snap, &["results", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("archived"), "{}", out(&o));
    assert!(
        err(&o).contains("its") && err(&o).contains("-wal file cannot be read"),
        "{}",
        err(&o)
    );

    // Served: the list and the run's page.
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("iofleet serve printed no address: {said}");
        };
        said.push_str(&line);
        if let Some(at) = line.find("http://") {
            break line[at + 7..].split('/').next().unwrap().to_string();
        }
    };
    let get = |target: &str| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(s, "GET {target} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        raw
    };
    let pages = [get("/"), get(&format!("/run/{id}"))];
    let _ = child.kill();
    let _ = child.wait();
    for page in &pages {
        assert!(page.starts_with("HTTP/1.1 200"), "{said}\n{page}");
        assert!(page.contains(id.as_str()), "{page}");
    }
    assert!(!said.contains("not an iofleet results store"), "{said}");
    drop(fs);
}

#[test]
fn a_store_path_that_is_a_directory_or_on_a_full_filesystem_says_so() {
    let d = tempfile::tempdir().unwrap();
    for args in [
        &["results", "list"][..],
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--duration",
            "250ms",
            "--interval",
            "250ms",
        ],
    ] {
        let o = with_db(d.path(), args);
        assert_eq!(o.status.code(), Some(2), "{}", err(&o));
        assert!(
            err(&o).contains(&format!("--db {}: it is a directory", d.path().display())),
            "{}",
            err(&o)
        );
    }
    if !need::need(
        "a_store_path_that_is_a_directory_or_on_a_full_filesystem_says_so",
        &["root", "mkfs.ext4", "mount"],
    ) {
        return;
    }
    // A new store on a full filesystem.
    let fs = SmallFs::new(d.path());
    fs.fill();
    let db = fs.mnt.join("new.db");
    let o = with_db(
        &db,
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--duration",
            "250ms",
            "--interval",
            "250ms",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains(&format!(
            "--db {}: the filesystem holding it is full",
            db.display()
        )),
        "{e}"
    );
    assert!(!e.contains("disk I/O error"), "{e}");
    drop(fs);
}

#[test]
fn a_colleague_who_may_not_write_the_store_reads_it_or_is_told_why_not() {
    if !need::need(
        "a_colleague_who_may_not_write_the_store_reads_it_or_is_told_why_not",
        &["root", "setpriv"],
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let perms =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    perms(d.path(), 0o755);
    let share = d.path().join("share");
    std::fs::create_dir(&share).unwrap();
    let db = share.join("team.db");
    record_run(&db, "1000", &["--name", "shared"]);
    // As `nobody`.
    let as_other = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(assert_cmd::cargo::cargo_bin("iofleet"))
            .args(args)
            .arg("--db")
            .arg(&db)
            .env("XDG_DATA_HOME", d.path().join("xdg-unused"))
            .output()
            .unwrap()
    };
    // The store readable, its directory not writable: SQLite cannot make its -shm.
    perms(&share, 0o755);
    perms(&db, 0o644);
    let o = as_other(&["results", "list"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains(&format!("{} is not writable by this user", share.display())),
        "{}",
        err(&o)
    );
    // The directory writable: it reads, and a write says whose file it is not.
    perms(&share, 0o777);
    let o = as_other(&["results", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("shared"), "{}", out(&o));
    let o = as_other(&["results", "delete", "shared"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("is not writable by this user (its mode is 644)"),
        "{}",
        err(&o)
    );
    // Not readable at all.
    for f in [side(&db, "-wal"), side(&db, "-shm")] {
        let _ = std::fs::remove_file(f);
    }
    perms(&db, 0o600);
    let o = as_other(&["results", "list"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("cannot read it"), "{}", err(&o));
}

#[test]
fn a_store_on_a_full_tmpfs_says_so() {
    if !need::need("a_store_on_a_full_tmpfs_says_so", &["root", "mount"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mnt = d.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(ok.success(), "mount -t tmpfs");
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mnt.clone());
    let db = mnt.join("results.db");
    record_run(&db, "1000", &[]);
    {
        use std::io::Write;
        let mut f = std::fs::File::create(mnt.join("filler")).unwrap();
        while f.write_all(&[0u8; 4096]).is_ok() {}
    }
    // Opening needs room for SQLite's -shm file: tmpfs says "disk I/O error".
    let o = with_db(&db, &["results", "list"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains(&format!(
            "--db {}: the filesystem holding it is full (0 B free)",
            db.display()
        )),
        "{}",
        err(&o)
    );
}
