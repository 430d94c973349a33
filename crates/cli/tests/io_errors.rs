//! I/O errors from the target through the binary: a disk file truncated under a running
//! read test (short reads), and ENOSPC on a small loop-mounted ext4 filesystem (root
//! only). Each is counted and reported per disk with its first failures, a disk that keeps
//! failing is taken out while the run goes on, and the exit code is 5.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The child iofleet, killed if the test fails before it ends.
struct Run(Option<Child>);

impl Run {
    fn start(dir: &Path, args: &[&str]) -> Run {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--json", "--quiet"]);
        let exe = assert_cmd::cargo::cargo_bin("iofleet");
        let child = Command::new(exe)
            .env("XDG_DATA_HOME", scratch_data_home())
            .current_dir(dir)
            .args(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("iofleet starts");
        Run(Some(child))
    }

    fn wait(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Poll `ok` every 20 ms for up to 60 s.
fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(60);
    while !ok() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// True once the disk file carries its fill marker (the fill is done).
fn filled(path: &Path, size: u64) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut magic = [0u8; 16];
    f.read_exact_at(&mut magic, size).is_ok() && &magic == b"IOFLEET-FILL-V1\0"
}

fn result_of(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}); stderr: {}", stderr(o)))
}

#[test]
fn a_truncated_disk_is_taken_out_and_the_run_goes_on() {
    let d = tempfile::tempdir().unwrap();
    let run = Run::start(
        d.path(),
        &[
            "--bs",
            "4k",
            "--read-pct",
            "100",
            "--random-pct",
            "100",
            "--disks",
            "2",
            "--disk-size",
            "4m",
            "--duration",
            "4s",
            "--interval",
            "500ms",
            "--engine",
            "psync",
            "--direct=false",
        ],
    );
    let data = d.path().join("iofleet-data");
    let victim = data.join("w000-d001.iofleet");
    wait_for("the fill", || {
        filled(&data.join("w000-d000.iofleet"), 4 << 20) && filled(&victim, 4 << 20)
    });
    std::thread::sleep(Duration::from_millis(300));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&victim)
        .unwrap()
        .set_len(0)
        .unwrap();
    let o = run.wait();
    assert_eq!(o.status.code(), Some(5), "stderr: {}", stderr(&o));
    assert!(
        stderr(&o).contains("I/O error(s) on 1 disk(s), 1 taken out"),
        "{}",
        stderr(&o)
    );
    let v = result_of(&o);
    let e = &v["summary"]["errors"];
    let disks = e["disks"].as_array().unwrap();
    assert_eq!(disks.len(), 1, "{e}");
    let bad = &disks[0];
    assert_eq!(
        (bad["worker"].as_u64(), bad["disk"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(bad["count"].as_u64().unwrap() >= 32, "{bad}");
    assert_eq!(bad["count"], e["count"]);
    assert!(bad["taken_out_s"].as_f64().unwrap() > 0.0);
    let first = bad["first"].as_array().unwrap();
    assert_eq!(first.len(), 5);
    for f in first {
        assert_eq!(f["op"], "read");
        assert_eq!(f["errno"], 0);
        assert!(f["message"]
            .as_str()
            .unwrap()
            .starts_with("short transfer: 0 of 4096"));
    }
    // The other disk went on to the end: it read in the last interval too.
    let last = v["intervals"].as_array().unwrap().last().unwrap().clone();
    assert!(last["ios"].as_u64().unwrap() > 0, "{last}");
    assert!(v["notices"]
        .to_string()
        .contains("worker 0 disk 1 was taken out"));
    assert!(!v["run"]["interrupted"].as_bool().unwrap());
    // The result follows the published schema, per-disk errors included.
    let schema = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/result.schema.json"
    ))
    .unwrap();
    let schema = jsonschema::validator_for(&serde_json::from_str(&schema).unwrap()).unwrap();
    let problems: Vec<String> = schema.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(problems.is_empty(), "{problems:?}");
    // The table lists the disk, its take-out and its first failures.
    let id = v["stored"]["id"].as_str().expect("the run was stored");
    let o = run_in(d.path(), &["results", "show", id]);
    let table = stdout(&o);
    assert!(table.contains("I/O errors: "), "{table}");
    assert!(table.contains("worker 0 disk 1: "), "{table}");
    assert!(table.contains(", taken out at "), "{table}");
    assert_eq!(table.matches("(errno 0)").count(), 5, "{table}");
}

/// A 32 MiB ext4 filesystem on a loop device over a file in /dev/shm, mounted on a temp
/// dir; unmounted, detached and removed on drop, whatever happened.
struct SmallFs {
    img: PathBuf,
    dev: Option<String>,
    mnt: tempfile::TempDir,
    mounted: bool,
}

impl SmallFs {
    fn new() -> SmallFs {
        let img = PathBuf::from(format!(
            "/dev/shm/iofleet-enospc-{}.img",
            std::process::id()
        ));
        let mut fs = SmallFs {
            img,
            dev: None,
            mnt: tempfile::tempdir().unwrap(),
            mounted: false,
        };
        std::fs::File::create(&fs.img)
            .unwrap()
            .set_len(32 << 20)
            .unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&fs.img)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = String::from_utf8(out.stdout).unwrap().trim().to_string();
        fs.dev = Some(dev.clone());
        let ok = |c: &mut Command| {
            let o = c.output().unwrap();
            assert!(
                o.status.success(),
                "{c:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        ok(Command::new("mkfs.ext4").args(["-q", "-F", "-m", "0", &dev]));
        ok(Command::new("mount").arg(&dev).arg(fs.mnt.path()));
        fs.mounted = true;
        fs
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(self.mnt.path()).status();
        }
        if let Some(dev) = &self.dev {
            let _ = Command::new("losetup").args(["-d", dev]).status();
        }
        let _ = std::fs::remove_file(&self.img);
    }
}

/// Write until the filesystem is full (1 MiB, then 4 KiB pieces), then sync.
fn fill_up(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    for piece in [1usize << 20, 4096] {
        let buf = vec![0x5au8; piece];
        while f.write_all(&buf).is_ok() {}
    }
    let _ = f.sync_all();
}

/// Keeps a filesystem full until dropped: after `fill_up`, blocks the filesystem gives
/// back (ext4 returns what it reserved for buffered writes once they are synced) are
/// taken again at once, so a disk whose writes need a block never gets one and fails
/// every write in a row, as a full filesystem does.
struct KeepFull {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl KeepFull {
    fn new(path: &Path) -> KeepFull {
        use std::io::Write;
        use std::sync::atomic::{AtomicBool, Ordering};
        fill_up(path);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let path = path.to_path_buf();
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                let buf = vec![0x5au8; 4096];
                while !stop.load(Ordering::SeqCst) {
                    while f.write_all(&buf).is_ok() {}
                    let _ = f.sync_all();
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        KeepFull {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for KeepFull {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn enospc_on_a_full_filesystem_takes_every_disk_out_and_ends_the_run() {
    if !need::need(
        "enospc_on_a_full_filesystem_takes_every_disk_out_and_ends_the_run",
        &["root", "losetup", "mkfs.ext4", "fallocate"],
    ) {
        return;
    }
    let fs = SmallFs::new();
    let target = fs.mnt.path().to_str().unwrap().to_string();
    let cwd = tempfile::tempdir().unwrap();
    // Write-only, no prepare: the disk files are created (allocated) and written at once.
    let run = Run::start(
        cwd.path(),
        &[
            "--target",
            &target,
            "--bs",
            "4k",
            "--read-pct",
            "0",
            "--random-pct",
            "100",
            "--disks",
            "2",
            "--disk-size",
            "8m",
            "--duration",
            "20s",
            "--interval",
            "500ms",
            "--prepare",
            "none",
            "--engine",
            "psync",
        ],
    );
    let data = fs.mnt.path();
    let disks = [
        data.join("w000-d000.iofleet"),
        data.join("w000-d001.iofleet"),
    ];
    wait_for("the disk files", || {
        disks
            .iter()
            .all(|p| std::fs::metadata(p).is_ok_and(|m| m.len() >= 8 << 20))
    });
    std::thread::sleep(Duration::from_millis(300));
    // Free the disks' blocks behind the run's back and let another file take the space:
    // every write into a hole now needs a block the filesystem does not have.
    for p in &disks {
        let st = Command::new("fallocate")
            .args(["--punch-hole", "--offset", "0", "--length", "8MiB"])
            .arg(p)
            .status()
            .unwrap();
        assert!(st.success());
    }
    let full = KeepFull::new(&fs.mnt.path().join("hog"));
    let o = run.wait();
    drop(full);
    assert_eq!(o.status.code(), Some(5), "stderr: {}", stderr(&o));
    assert!(stderr(&o).contains("2 taken out"), "{}", stderr(&o));
    let v = result_of(&o);
    let e = &v["summary"]["errors"];
    let per_disk = e["disks"].as_array().unwrap();
    assert_eq!(per_disk.len(), 2, "{e}");
    for (i, d) in per_disk.iter().enumerate() {
        assert_eq!(d["disk"].as_u64(), Some(i as u64));
        let f = &d["first"][0];
        // Taken out at or after its first failure, before the 20 s the run was to take.
        let out = d["taken_out_s"].as_f64().unwrap();
        assert!(f["t_s"].as_f64().unwrap() <= out && out < 20.0, "{d}");
        assert_eq!(f["errno"], 28, "{d}");
        assert_eq!(f["op"], "write");
        assert!(
            f["message"].as_str().unwrap().contains("No space left"),
            "{f}"
        );
    }
    // With every disk out the run ended early instead of idling for 20 s: its last
    // intervals are empty.
    let last = v["intervals"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["ios"], 0, "{last}");
    assert!(v["summary"]["write"]["ios"].as_u64().unwrap() > 0);
}
