//! A libvirt for worker-VM tests: the daemons (`virtlogd`, `libvirtd`) started here when
//! none runs (this machine has no service manager) and stopped by the process ids they
//! wrote when the guard drops, and a directory storage pool in a temp dir, removed with
//! everything in it. Guests run under QEMU's software emulation (`type='qemu'`): this
//! machine's KVM hangs a guest after "Booting from ROM" (issue 40).
//!
//! Include with `#[path = "support/libvirt.rs"] mod libvirt;`. It knows nothing about
//! iofleet beyond the names it is given.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const URI: &str = "qemu:///system";

/// `virsh -q -c qemu:///system ARGS`: its output, or the error it printed.
pub fn virsh(args: &[&str]) -> Result<String, String> {
    let o = Command::new("virsh")
        .args(["-q", "-c", URI])
        .args(args)
        .output()
        .map_err(|e| format!("virsh: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
    }
}

/// The daemons this guard started (it stops them), and a pool.
pub struct Libvirt {
    started: Vec<(String, PathBuf)>,
    pub pool: String,
    pub pool_dir: tempfile::TempDir,
}

fn pid_running(pidfile: &Path) -> bool {
    std::fs::read_to_string(pidfile)
        .ok()
        .and_then(|p| p.trim().parse::<u32>().ok())
        .is_some_and(|p| alive(p as i32))
}

impl Libvirt {
    /// The daemons running (started if need be) and a fresh directory pool `name`.
    pub fn start(pool: &str) -> Libvirt {
        let mut started = Vec::new();
        for (daemon, pidfile) in [
            ("virtlogd", "/run/virtlogd.pid"),
            ("libvirtd", "/run/libvirtd.pid"),
        ] {
            let pidfile = PathBuf::from(pidfile);
            if pid_running(&pidfile) {
                continue;
            }
            let s = Command::new(daemon)
                .arg("-d")
                .status()
                .unwrap_or_else(|e| panic!("{daemon}: {e}"));
            assert!(s.success(), "{daemon} -d: {s}");
            started.push((daemon.to_string(), pidfile));
        }
        let began = Instant::now();
        while virsh(&["version"]).is_err() {
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "libvirtd did not answer: {:?}",
                virsh(&["version"])
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // A pool left by a killed earlier run of the same test goes first.
        let _ = virsh(&["pool-destroy", pool]);
        let _ = virsh(&["pool-undefine", pool]);
        let pool_dir = tempfile::tempdir().unwrap();
        // QEMU runs as its own user: it must reach the volumes.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(pool_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = pool_dir.path().to_str().unwrap();
        virsh(&["pool-define-as", pool, "dir", "--target", dir]).unwrap();
        virsh(&["pool-start", pool]).unwrap();
        Libvirt {
            started,
            pool: pool.to_string(),
            pool_dir,
        }
    }

    /// The domains defined whose name starts with `prefix`.
    pub fn domains(&self, prefix: &str) -> Vec<String> {
        virsh(&["list", "--all", "--name"])
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|n| n.starts_with(prefix))
            .map(str::to_string)
            .collect()
    }

    /// The pool's volumes.
    pub fn volumes(&self) -> Vec<String> {
        virsh(&["vol-list", &self.pool])
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect()
    }

    /// QEMU processes running a guest named `prefix…`.
    pub fn qemu_processes(prefix: &str) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|c| {
                let c = String::from_utf8_lossy(c);
                c.contains("qemu-system") && c.contains(&format!("guest={prefix}"))
            })
            .count()
    }
}

/// Process `pid` runs (a zombie waiting for its reaper does not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().chars().next()))
        .flatten()
        .is_some_and(|state| state != 'Z')
}

impl Drop for Libvirt {
    fn drop(&mut self) {
        let _ = virsh(&["pool-destroy", &self.pool]);
        let _ = virsh(&["pool-undefine", &self.pool]);
        for (daemon, pidfile) in self.started.iter().rev() {
            if let Some(pid) = std::fs::read_to_string(pidfile)
                .ok()
                .and_then(|p| p.trim().parse::<i32>().ok())
            {
                let _ = Command::new("kill").arg(pid.to_string()).status();
                let began = Instant::now();
                while alive(pid) && began.elapsed() < Duration::from_secs(10) {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            let _ = daemon;
        }
    }
}
