//! The environment a run was made in, collected once when it starts: iofleet version,
//! kernel, CPU model and cores, memory, and — for a directory or device target — the
//! filesystem and the block device behind it. Everything is read from /proc and /sys
//! without privileges; whatever cannot be read is left out (`None`), never guessed.
//! It describes the machine running the controller, not remote hosts.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub iofleet_version: String,
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
    pub cores: Option<u32>,
    pub memory_bytes: Option<u64>,
    /// Filesystem holding a directory target (none for devices or the null engine).
    pub filesystem: Option<Filesystem>,
    /// Block devices behind the target, where sysfs tells.
    pub devices: Vec<Device>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Filesystem {
    pub fstype: String,
    pub mount_point: String,
    pub source: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Device {
    pub name: String,
    pub model: Option<String>,
    pub size_bytes: Option<u64>,
    pub rotational: Option<bool>,
}

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Collect the environment. `target` is the run's target as shown in results: a
/// directory, a comma-separated list of devices, or "none".
pub fn environment(iofleet_version: &str, target: &str) -> Environment {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
        })
        .map(|kib| kib * 1024);
    let mut env = Environment {
        iofleet_version: iofleet_version.to_string(),
        hostname: read_trim("/proc/sys/kernel/hostname"),
        kernel: read_trim("/proc/sys/kernel/osrelease"),
        cpu_model,
        cores: std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u32),
        memory_bytes,
        filesystem: None,
        devices: Vec::new(),
    };
    if target == "none" || target.is_empty() {
        return env;
    }
    let paths: Vec<PathBuf> = target.split(',').map(PathBuf::from).collect();
    let is_device = |p: &Path| p.starts_with("/dev/");
    if paths.iter().all(|p| is_device(p)) {
        for p in &paths {
            if let Some(d) = device_of(p) {
                env.devices.push(d);
            }
        }
    } else if let Some(dir) = paths.first() {
        if let Some(fs) = filesystem_of(dir) {
            if fs.source.starts_with("/dev/") {
                if let Some(d) = device_of(Path::new(&fs.source)) {
                    env.devices.push(d);
                }
            }
            env.filesystem = Some(fs);
        }
    }
    env
}

/// The mount holding `dir` (or its nearest existing ancestor), from /proc/self/mountinfo.
fn filesystem_of(dir: &Path) -> Option<Filesystem> {
    let mut p = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(dir)
    };
    while !p.exists() {
        p = p.parent()?.to_path_buf();
    }
    let p = p.canonicalize().ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<Filesystem> = None;
    for line in info.lines() {
        // id parent major:minor root mount-point options [optional...] - fstype source ...
        let (pre, post) = line.split_once(" - ")?;
        let mount_point = unescape(pre.split(' ').nth(4)?);
        let mut post = post.split(' ');
        let (fstype, source) = (post.next()?, unescape(post.next()?));
        if p.starts_with(&mount_point)
            && best
                .as_ref()
                .is_none_or(|b| mount_point.len() >= b.mount_point.len())
        {
            best = Some(Filesystem {
                fstype: fstype.to_string(),
                mount_point,
                source,
            });
        }
    }
    best
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = std::str::from_utf8(&b[i + 1..i + 4]).ok();
            if let Some(v) = oct.and_then(|o| u8::from_str_radix(o, 8).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Model and size of the whole disk behind a device node (a partition reports its
/// parent disk's model and its own size).
fn device_of(dev: &Path) -> Option<Device> {
    let real = dev.canonicalize().unwrap_or_else(|_| dev.to_path_buf());
    let name = real.file_name()?.to_str()?.to_string();
    let class = PathBuf::from("/sys/class/block").join(&name);
    if !class.exists() {
        return None;
    }
    let size_bytes = read_trim(class.join("size"))
        .and_then(|s| s.parse::<u64>().ok())
        .map(|sectors| sectors * 512);
    // A partition's sysfs directory sits inside its disk's.
    let disk_dir = if class.join("partition").exists() {
        class.canonicalize().ok()?.parent()?.to_path_buf()
    } else {
        class.canonicalize().ok()?
    };
    let model = read_trim(disk_dir.join("device/model"));
    let rotational = read_trim(disk_dir.join("queue/rotational")).map(|r| r == "1");
    Some(Device {
        name,
        model,
        size_bytes,
        rotational,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_this_machine() {
        let env = environment("9.9.9", "none");
        assert_eq!(env.iofleet_version, "9.9.9");
        assert!(env.kernel.is_some());
        assert!(env.cores.unwrap_or(0) >= 1);
        assert!(env.memory_bytes.unwrap_or(0) > 0);
        assert!(env.filesystem.is_none());
    }

    #[test]
    fn directory_target_reports_its_filesystem() {
        let d = std::env::temp_dir();
        let env = environment("0", &d.join("not-yet-created").display().to_string());
        let fs = env.filesystem.expect("a mount holds the temp dir");
        assert!(!fs.fstype.is_empty());
        assert!(d.canonicalize().unwrap().starts_with(&fs.mount_point));
    }

    #[test]
    fn mountinfo_unescape() {
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }
}
