//! Helpers shared by the CLI integration tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

use assert_cmd::Command;

/// The binary, with its results store redirected into a scratch directory, so tests
/// never write the user's `~/.local/share/iofleet/results.db`.
///
/// Its PATH starts with a guard whose `kubectl` fails every call: the tests never run a
/// real kubectl (a machine may have one, configured for a real cluster). Tests of
/// Kubernetes fleets put the project's stand-in before it (tests/kubernetes_flow.rs).
pub fn iofleet() -> Command {
    let mut c = Command::cargo_bin("iofleet").expect("binary is built");
    c.env("XDG_DATA_HOME", scratch_data_home())
        .env("PATH", guarded_path());
    c
}

/// PATH with the kubectl guard first (see `iofleet`).
pub fn guarded_path() -> String {
    static GUARD: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    // Made once per test binary (its tests run in parallel threads); written whole
    // under this process's own name, then renamed, so a binary never runs a
    // half-written guard.
    let guard = GUARD.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let guard = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-kubectl");
        std::fs::create_dir_all(&guard).unwrap();
        let tmp = guard.join(format!(".kubectl.{}", std::process::id()));
        std::fs::write(
            &tmp,
            "#!/bin/sh\necho 'the iofleet tests never run a real kubectl (guard in tests/common.rs)' >&2\nexit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&tmp, guard.join("kubectl")).unwrap();
        guard
    });
    format!(
        "{}:{}",
        guard.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Per test binary, under the build's own scratch directory (`target/tmp`), so that
/// nothing accumulates in the system's temporary directory run after run.
pub fn scratch_data_home() -> std::path::PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("iofleet-test-data-{}", std::process::id()))
}

/// Run iofleet with `args` in `dir`, returning the output.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    iofleet()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("iofleet runs")
}

/// `iofleet run ARGS --json --quiet` in `dir`: expects exit 0 and returns the result.
pub fn run_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "--quiet"]);
    let o = run_in(dir, &all);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

/// Stored run `run` of the store `db`, as `iofleet results export --format json` gives
/// it (the result JSON).
pub fn exported(dir: &Path, db: &Path, run: &str) -> serde_json::Value {
    let o = run_in(
        dir,
        &[
            "results",
            "export",
            run,
            "--format",
            "json",
            "--db",
            db.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[path = "../../../tests-support/need.rs"]
pub mod need;
#[allow(unused_imports)]
pub use need::{have, is_root};

/// A loop device over `img`, detached when dropped (tests that use it run as root).
pub struct Loop {
    pub dev: std::path::PathBuf,
}

impl Loop {
    pub fn attach(img: &Path) -> Loop {
        let out = std::process::Command::new("losetup")
            .args(["--find", "--show"])
            .arg(img)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Loop {
            dev: std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()),
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .arg("-d")
            .arg(&self.dev)
            .status();
    }
}

/// A run started in the background and watched through its own `/metrics`: the test waits
/// for a state the run reached (an interval measured, the warm-up begun) instead of
/// sleeping for a time it guesses. The run must be given `--metrics-listen 127.0.0.1:0`
/// and no `--quiet`: the address it bound is read from its first line on stderr, so no
/// port is picked ahead and raced for. Its stderr is kept for the end.
pub struct Watched {
    child: std::process::Child,
    addr: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Watched {
    /// Spawn `cmd` (stdout piped, stderr read here) and wait for its metrics address.
    pub fn spawn(mut cmd: std::process::Command) -> Watched {
        use std::io::BufRead;
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("iofleet starts");
        let err = child.stderr.take().unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let kept = stderr.clone();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                if let Some(addr) = line
                    .strip_prefix("metrics: http://")
                    .and_then(|l| l.strip_suffix("/metrics"))
                {
                    let _ = tx.send(addr.to_string());
                }
                let mut k = kept.lock().unwrap();
                k.push_str(&line);
                k.push('\n');
            }
        });
        // The address comes before any I/O; generous for a loaded machine.
        let addr = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .unwrap_or_else(|_| {
                let _ = child.kill();
                panic!("no metrics address on stderr: {}", stderr.lock().unwrap())
            });
        Watched {
            child,
            addr,
            stderr,
            reader: Some(reader),
        }
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The value of the unlabelled gauge `name` on `/metrics` now, if it answers.
    pub fn gauge(&self, name: &str) -> Option<f64> {
        metrics_gauge(&self.addr, name)
    }

    /// Wait until `ok` holds of `/metrics`'s gauge `name` (up to `limit`, a bound for a
    /// loaded machine, not a timing claim); panics with stderr if it never does.
    pub fn wait_for(&self, name: &str, ok: impl Fn(f64) -> bool, limit: std::time::Duration) {
        let t0 = std::time::Instant::now();
        loop {
            if self.gauge(name).is_some_and(&ok) {
                return;
            }
            assert!(
                t0.elapsed() < limit,
                "{name} never reached the state waited for: {}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// What the run wrote on stderr so far.
    pub fn stderr_now(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Send `signal` (`-INT`, `-STOP`, ...) to the run.
    pub fn signal(&self, signal: &str) {
        assert!(std::process::Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success());
    }

    /// Wait for the end: its status, stdout and every line of its stderr.
    pub fn finish(mut self) -> Output {
        let mut o = std::mem::replace(
            &mut self.child,
            std::process::Command::new("true").spawn().unwrap(),
        )
        .wait_with_output()
        .unwrap();
        if let Some(r) = self.reader.take() {
            r.join().unwrap();
        }
        o.stderr = self.stderr.lock().unwrap().clone().into_bytes();
        o
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of the unlabelled gauge `name` on the `/metrics` page at `addr`, asked as a
/// loopback client (`Host: 127.0.0.1`); None when it does not answer or has none.
pub fn metrics_gauge(addr: &str, name: &str) -> Option<f64> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    s.write_all(
        format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .ok()?;
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(name))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A loopback address with a port free now (for `--metrics-listen`, `--listen`).
pub fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("127.0.0.1:{}", l.local_addr().unwrap().port())
}

/// A command's JSON output, or a failure that says why there is none.
pub fn json_of(o: &Output) -> serde_json::Value {
    assert!(
        !o.stdout.is_empty(),
        "no output; exit {:?}: {}",
        o.status.code(),
        stderr(o)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(o)))
}

/// What docs/result.schema.json finds wrong with a result (none: it is valid).
pub fn schema_problems(v: &serde_json::Value) -> Vec<String> {
    let schema = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/result.schema.json"
    ))
    .unwrap();
    let schema = jsonschema::validator_for(&serde_json::from_str(&schema).unwrap()).unwrap();
    schema.iter_errors(v).map(|e| e.to_string()).collect()
}
