//! Runs sharing one results store (issue 24): eight runs started together against one
//! store, and three against a store that does not exist yet, are all recorded whole; a
//! store whose filesystem fills up mid-run loses nothing (the run saves itself to a file
//! of its own and `results import` restores it exactly); and `results import` refuses
//! what is not a store, a store of another schema version, and a different run under an
//! id already taken.

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
    let d = tempfile::tempdir().unwrap();
    let fs = SmallFs::new(d.path());
    let db = fs.mnt.join("results.db");
    let child = spawn_run(d.path(), &db, "filled", "3s");
    // Once the run is being recorded, fill the store's filesystem.
    let t0 = Instant::now();
    let recording = || {
        let o = with_db(&db, &["results", "list", "--json"]);
        String::from_utf8_lossy(&o.stdout).contains("\"filled\"")
    };
    while !recording() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the run never began recording"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    fs.fill();
    let (live, stderr) = finish(child);
    // It says where the run went, and how to put it back.
    let file = d.path().join("results.db.unsaved-");
    let saved: PathBuf = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().starts_with(&*file.to_string_lossy()))
        .unwrap_or_else(|| panic!("no saved run in {}: {stderr}", d.path().display()));
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
