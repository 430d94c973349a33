//! A stand-in Kubernetes cluster for integration tests: a state directory and a PATH
//! whose first `kubectl` is the project's stand-in (`support/kubectl`, Python), run by
//! the interpreter that imports `kubernetes_validate` (the stand-in validates every
//! object it is given against the Kubernetes OpenAPI schemas with it). The cluster is
//! described by the test (`with_config`: contexts, namespaces, nodes, images) or is the
//! stand-in's default (one context, namespace `default`, plain nodes).
//!
//! Include it from a test file (after `mod common;`) with
//!
//! ```ignore
//! #[path = "support/kube_cluster.rs"]
//! mod kube_cluster;
//! ```
//!
//! It reads back what the stand-in keeps: the objects per context, the call log (one
//! JSON line per `kubectl` call: verb, the `--context` and `--namespace` given, the
//! context and namespace used, the objects named), the exec sessions under way. It
//! builds a minimal image root (a shell, the few tools iofleet's agent script uses and
//! the libraries they and iofleet load, copied from this machine) for pods whose image
//! the config maps to it. Dropping it kills what its pods still run and detaches their
//! loop devices. Nothing here contacts a cluster.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::need::need;
use crate::common::{guarded_path, iofleet, scratch_data_home, stderr};

/// The tools a pod's image needs for iofleet's agent script (agents/scripts.rs `start_script`
/// and `clean_script`), and `cat`, `ls` and `env` for the tests' own looks inside.
const IMAGE_TOOLS: [&str; 16] = [
    "sh",
    "find",
    "rm",
    "readlink",
    "sha256sum",
    "cut",
    "touch",
    "mkdir",
    "head",
    "chmod",
    "mv",
    "wc",
    "cat",
    "ls",
    "env",
    "sleep",
];

pub struct Cluster {
    pub dir: tempfile::TempDir,
    path: String,
}

/// The Python that imports `kubernetes_validate` (the `python3` on PATH, where
/// `./test.sh` installs it), resolved once: the stand-in runs under it directly,
/// without a version manager's shim in every call.
fn python() -> &'static Path {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let o = Command::new("python3")
            .args(["-c", "import kubernetes_validate, sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        assert!(
            o.status.success(),
            "the stand-in kubectl validates with the Python module kubernetes_validate, which python3 cannot import ({}); ./test.sh installs it",
            stderr(&o).trim()
        );
        PathBuf::from(String::from_utf8(o.stdout).unwrap().trim())
    })
}

impl Cluster {
    /// A cluster whose pods run (`exec` mounts their roots and volumes): needs root
    /// (and `ldd`, for `image`).
    pub fn new(test: &str) -> Option<Cluster> {
        Self::with_needs(
            test,
            &[
                "root",
                "unshare",
                "chroot",
                "losetup",
                "ldd",
                "python3",
                "kubernetes-validate",
            ],
        )
    }

    /// A cluster for what needs no root: apply, get, delete, scheduling, claims (no
    /// exec, no block volumes).
    pub fn unprivileged(test: &str) -> Option<Cluster> {
        Self::with_needs(test, &["python3", "kubernetes-validate"])
    }

    fn with_needs(test: &str, needs: &[&str]) -> Option<Cluster> {
        if !need(test, needs) {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("iofleet-kube-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(dir.path().join("state")).unwrap();
        std::fs::create_dir(&bin).unwrap();
        let stand_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/kubectl");
        let wrapper = bin.join("kubectl");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nexec '{}' '{}' \"$@\"\n",
                python().display(),
                stand_in.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", bin.display(), guarded_path());
        Some(Cluster { dir, path })
    }

    /// Describe the cluster (see the stand-in's docstring): contexts, their namespaces
    /// and nodes, storage classes, images. Read at every call.
    pub fn configure(&self, config: &Value) {
        std::fs::write(
            self.state().join("config.json"),
            serde_json::to_string_pretty(config).unwrap(),
        )
        .unwrap();
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// A fleet description in the cluster's directory.
    pub fn fleet(&self, name: &str, toml: &str) -> String {
        let p = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&p, format!("[kubernetes]\nname = \"{name}\"\n{toml}")).unwrap();
        p.to_string_lossy().into_owned()
    }

    pub fn command(&self, env: &[(&str, &str)]) -> assert_cmd::Command {
        let mut c = iofleet();
        c.current_dir(self.dir.path())
            .env("PATH", &self.path)
            .env("FAKE_KUBE_STATE", self.state())
            .env("FAKE_KUBE_NODES", "4");
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    pub fn iofleet(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(env).args(args).output().unwrap()
    }

    /// `iofleet ARGS` started in the background (for Ctrl-C and killed pods).
    pub fn spawn(&self, args: &[&str], env: &[(&str, &str)]) -> Child {
        let mut c = Command::new(assert_cmd::cargo::cargo_bin("iofleet"));
        c.current_dir(self.dir.path())
            .env("XDG_DATA_HOME", scratch_data_home())
            .env("PATH", &self.path)
            .env("FAKE_KUBE_STATE", self.state())
            .env("FAKE_KUBE_NODES", "4")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        c.spawn().unwrap()
    }

    /// The stand-in itself (the cluster as the test sees it), with `input` on stdin.
    pub fn kubectl_with(&self, args: &[&str], input: &str, env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(self.dir.path().join("bin/kubectl"));
        c.env("FAKE_KUBE_STATE", self.state())
            .env("FAKE_KUBE_NODES", "4")
            .env("PATH", &self.path)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), input.as_bytes()).unwrap();
        drop(child.stdin.take());
        child.wait_with_output().unwrap()
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with(args, "", &[])
    }

    /// `kubectl ARGS -o json`, which must succeed.
    pub fn get_json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        let o = self.kubectl(&a);
        assert!(o.status.success(), "kubectl {a:?}: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    }

    fn state_json(&self) -> Value {
        std::fs::read_to_string(self.state().join("objects.json"))
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or(Value::Null)
    }

    /// The objects one context holds, as `Kind/namespace/name`.
    pub fn objects_in(&self, context: &str) -> Vec<String> {
        let mut v: Vec<String> = self.state_json()["contexts"][context]["objects"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Every object of every context, as `Kind/namespace/name`.
    pub fn objects(&self) -> Vec<String> {
        let s = self.state_json();
        let mut v: Vec<String> = s["contexts"]
            .as_object()
            .into_iter()
            .flat_map(|c| c.values())
            .flat_map(|c| c["objects"].as_object().into_iter().flat_map(|o| o.keys()))
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// One object as the stand-in keeps it (with its private `_` fields), or Null.
    pub fn object(&self, context: &str, key: &str) -> Value {
        self.state_json()["contexts"][context]["objects"][key].clone()
    }

    /// What the pods' volumes left behind: volume directories and pod roots.
    pub fn leftover_files(&self) -> Vec<String> {
        ["volumes", "pods"]
            .iter()
            .flat_map(|d| {
                std::fs::read_dir(self.state().join(d))
                    .into_iter()
                    .flatten()
            })
            .flatten()
            .map(|e| e.path().display().to_string())
            .collect()
    }

    /// Every call made so far, oldest first (see the stand-in's docstring).
    pub fn calls(&self) -> Vec<Value> {
        std::fs::read_to_string(self.state().join("calls.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The exec sessions under way in `pod` (any context).
    pub fn sessions(&self, pod: &str) -> usize {
        std::fs::read_dir(self.state().join("sessions"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                std::fs::read_to_string(e.path())
                    .ok()
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .is_some_and(|s| s["pod"] == pod)
            })
            .count()
    }

    /// The pod whose name starts with `prefix` (a Job's pods end in a random suffix),
    /// in any context and namespace.
    pub fn pod_named(&self, prefix: &str) -> Option<String> {
        self.objects()
            .into_iter()
            .filter_map(|k| k.strip_prefix("Pod/").map(str::to_string))
            .filter_map(|k| k.split_once('/').map(|(_, n)| n.to_string()))
            .find(|n| n.starts_with(prefix))
    }

    /// The pods' containers (the stand-in's runs of a Job pod's command) that still have
    /// a live process, by pod: none once a fleet is gone.
    pub fn running_containers(&self) -> Vec<String> {
        let launched =
            std::fs::read_to_string(self.state().join("launched.jsonl")).unwrap_or_default();
        let alive_groups: std::collections::BTreeSet<i64> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter_map(|stat| {
                let rest: Vec<String> = stat
                    .rsplit_once(')')?
                    .1
                    .split_whitespace()
                    .map(str::to_string)
                    .collect();
                (rest.first()? != "Z").then(|| rest.get(2)?.parse().ok())?
            })
            .collect();
        launched
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|c| {
                c["pgid"]
                    .as_i64()
                    .is_some_and(|g| alive_groups.contains(&g))
            })
            .map(|c| c["pod"].as_str().unwrap_or("").to_string())
            .collect()
    }

    pub fn wait_for(&self, what: &str, mut ready: impl FnMut() -> bool, child: &mut Child) {
        let t0 = Instant::now();
        while !ready() {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).ok();
                panic!("iofleet ended ({status}) before {what}: {err}");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "{what}: not within 120 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A minimal image root in the cluster's directory: `IMAGE_TOOLS` and the shared
    /// libraries they and the iofleet binary load (copied from this machine, found by
    /// `ldd`), `bin`, `lib`, `lib64` and `sbin` linked into `usr` as on Debian, and
    /// `/etc/iofleet-test-image`. Nothing else of the host is in it.
    pub fn image(&self) -> PathBuf {
        let root = self.dir.path().join("image");
        let usr = root.join("usr");
        for d in ["usr/bin", "usr/lib", "usr/lib64", "etc", "root", "tmp"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for (link, to) in [
            ("bin", "usr/bin"),
            ("lib", "usr/lib"),
            ("lib64", "usr/lib64"),
            ("sbin", "usr/bin"),
        ] {
            std::os::unix::fs::symlink(to, root.join(link)).unwrap();
        }
        let mut binaries = vec![assert_cmd::cargo::cargo_bin("iofleet")];
        for tool in IMAGE_TOOLS {
            let o = Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .unwrap();
            assert!(o.status.success(), "{tool} is not installed");
            let from = PathBuf::from(String::from_utf8(o.stdout).unwrap().trim());
            std::fs::copy(&from, usr.join("bin").join(tool)).unwrap();
            binaries.push(from);
        }
        for b in &binaries {
            let o = Command::new("ldd").arg(b).output().unwrap();
            for line in String::from_utf8_lossy(&o.stdout).lines() {
                // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or the loader.
                let Some(lib) = line
                    .split_whitespace()
                    .find(|w| w.starts_with('/'))
                    .map(PathBuf::from)
                else {
                    continue;
                };
                let inside = lib.strip_prefix("/usr").unwrap_or(&lib);
                let to = usr.join(inside.strip_prefix("/").unwrap());
                if !to.exists() {
                    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                    std::fs::copy(&lib, &to).unwrap();
                }
            }
        }
        std::fs::write(
            root.join("etc/iofleet-test-image"),
            "a minimal image made by the tests\n",
        )
        .unwrap();
        root
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Whatever a failed test left running or attached.
        for s in std::fs::read_dir(self.state().join("sessions"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let _ = Command::new("kill")
                .args([
                    "-KILL",
                    "--",
                    &format!("-{}", s.file_name().to_string_lossy()),
                ])
                .output();
        }
        let volumes = self.state().join("volumes");
        for v in std::fs::read_dir(&volumes).into_iter().flatten().flatten() {
            let img = v.path().join("disk.img");
            if img.exists() {
                let o = Command::new("losetup")
                    .arg("-j")
                    .arg(&img)
                    .output()
                    .unwrap();
                for line in String::from_utf8_lossy(&o.stdout).lines() {
                    if let Some(dev) = line.split(':').next() {
                        let _ = Command::new("losetup").args(["-d", dev]).output();
                    }
                }
            }
        }
    }
}
