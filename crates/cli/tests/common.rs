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
