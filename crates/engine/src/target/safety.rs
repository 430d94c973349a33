//! Is a block device safe to overwrite? The kernel-state checks behind a device target.
//!
//! Before the planner hands out regions of a block device it asks the kernel whether
//! anything uses the device: a mount of the device or of one of its partitions
//! (`/proc/self/mountinfo`, compared by major:minor and by mount source, because
//! btrfs reports anonymous device numbers), an active swap (`/proc/swaps`), holders in
//! sysfs (device-mapper, LVM, md RAID, bcache), partitions, or an exclusive claim (an
//! `O_EXCL` open fails with `EBUSY`). Then it reads the first and last MiB and asks
//! `signature.rs` for known on-disk formats. Any hit, and any state it cannot inspect,
//! refuses the device unless the user passed `--destroy-data`. This module only reads;
//! it never writes to a device, and it does no layout arithmetic (that is `mod.rs`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;
use rustix::io::Errno;

use super::signature::{detect_signature, PROBE_LEN};
use super::TargetError;

/// The sysfs directory of a block device (`/sys/dev/block/MAJ:MIN`).
pub(super) fn sysfs_dir(rdev: u64) -> PathBuf {
    let (maj, min) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
    PathBuf::from(format!("/sys/dev/block/{maj}:{min}"))
}

/// Opens a device read-only and checks it, returning its size in bytes.
///
/// Unless `destroy_data`, refuses the device when anything uses it or it carries a
/// known signature. Reads only.
pub(super) fn probe_device(path: &Path, rdev: u64, destroy_data: bool) -> Result<u64, TargetError> {
    let refuse = |reason: String| TargetError::Refused {
        device: path.to_path_buf(),
        reason,
    };
    // A device in use (mounted, active swap, held by device-mapper, md, bcache) is
    // refused even with --destroy-data: writing under a live filesystem corrupts it
    // and can take the host down. Partitions and signatures only need the flag.
    if let Some(reason) = in_use_reason(rdev)? {
        let partitions_only = reason.starts_with("it has partitions");
        if !(partitions_only && destroy_data) {
            return Err(if partitions_only {
                refuse(reason)
            } else {
                TargetError::InUse {
                    device: path.to_path_buf(),
                    reason,
                }
            });
        }
    }
    let mut opts = OpenOptions::new();
    opts.read(true);
    // On a block device O_EXCL without O_CREAT claims it exclusively: the open fails
    // with EBUSY while a filesystem, swap, dm, md or bcache holds it.
    opts.custom_flags(OFlags::EXCL.bits() as i32);
    let mut file = opts.open(path).map_err(|e| {
        if e.raw_os_error() == Some(Errno::BUSY.raw_os_error()) {
            TargetError::InUse {
                device: path.to_path_buf(),
                reason: "it is in use by the kernel (an exclusive open failed with EBUSY: it \
                         may be mounted, an active swap, or claimed by device-mapper, md RAID, \
                         bcache or btrfs)"
                    .to_string(),
            }
        } else if matches!(
            e.raw_os_error().map(Errno::from_raw_os_error),
            Some(Errno::NXIO | Errno::NOMEDIUM)
        ) {
            no_medium(path)
        } else {
            TargetError::io("cannot open", path, e)
        }
    })?;
    let size = file
        .seek(SeekFrom::End(0))
        .map_err(|e| TargetError::io("cannot find the size of", path, e))?;
    if size == 0 {
        return Err(no_medium(path));
    }
    if !destroy_data {
        let (head, tail) =
            read_head_tail(&file, size).map_err(|e| TargetError::io("cannot read", path, e))?;
        if let Some(sig) = detect_signature(&head, &tail, size) {
            return Err(refuse(format!("it carries {sig}")));
        }
    }
    Ok(size)
}

fn no_medium(path: &Path) -> TargetError {
    TargetError::NotATarget {
        path: path.to_path_buf(),
        what: "has no data area (0 bytes: an unattached loop device, an unconfigured zram \
               device, or no medium)"
            .into(),
    }
}

/// The first and last [`PROBE_LEN`] bytes of a device of `size` bytes (plain reads).
fn read_head_tail(file: &File, size: u64) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let n = PROBE_LEN.min(size) as usize;
    let mut head = vec![0u8; n];
    file.read_exact_at(&mut head, 0)?;
    let mut tail = vec![0u8; n];
    file.read_exact_at(&mut tail, size - n as u64)?;
    Ok((head, tail))
}

/// One block device to look for in kernel tables: the device or one of its partitions.
struct Node {
    name: String,
    major: u32,
    minor: u32,
    is_partition: bool,
}

impl Node {
    fn matches_rdev(&self, rdev: u64) -> bool {
        rustix::fs::major(rdev) == self.major && rustix::fs::minor(rdev) == self.minor
    }

    /// "it" or "its partition NAME", for messages.
    fn subject(&self) -> String {
        if self.is_partition {
            format!("its partition {}", self.name)
        } else {
            "it".to_string()
        }
    }
}

/// Why the device with number `rdev` is in use, or `None`. State that cannot be read
/// is itself a reason: without it we cannot tell the device is free.
fn in_use_reason(rdev: u64) -> Result<Option<String>, TargetError> {
    let sys = sysfs_dir(rdev);
    let cannot = |what: String, e: io::Error| {
        Ok(Some(format!(
            "cannot check whether it is in use ({what}: {e})"
        )))
    };
    let sys = match fs::canonicalize(&sys) {
        Ok(p) => p,
        Err(e) => return cannot(format!("reading {}", sys.display()), e),
    };
    let mountinfo = match fs::read_to_string("/proc/self/mountinfo") {
        Ok(t) => t,
        Err(e) => return cannot("reading /proc/self/mountinfo".into(), e),
    };
    let swaps = match fs::read_to_string("/proc/swaps") {
        Ok(t) => t,
        // A kernel without swap support has no /proc/swaps.
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return cannot("reading /proc/swaps".into(), e),
    };
    let state = KernelState {
        sys: &sys,
        major: rustix::fs::major(rdev),
        minor: rustix::fs::minor(rdev),
        mountinfo: &mountinfo,
        swaps: &swaps,
        rdev_of: &block_rdev,
    };
    Ok(state.in_use())
}

/// The device number of `path` when it is a block device.
fn block_rdev(path: &str) -> Option<u64> {
    fs::metadata(path)
        .ok()
        .filter(|m| m.file_type().is_block_device())
        .map(|m| m.rdev())
}

/// What the kernel says about one device, gathered so the judgement is testable with
/// a fake sysfs tree and /proc texts.
struct KernelState<'a> {
    /// The device's canonical sysfs directory (its name is the kernel name).
    sys: &'a Path,
    major: u32,
    minor: u32,
    mountinfo: &'a str,
    swaps: &'a str,
    /// Device number of a block-device path (mount sources, swap files).
    rdev_of: &'a dyn Fn(&str) -> Option<u64>,
}

impl KernelState<'_> {
    fn in_use(&self) -> Option<String> {
        let cannot = |what: String, e: io::Error| {
            Some(format!("cannot check whether it is in use ({what}: {e})"))
        };
        let name = self
            .sys
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut nodes = vec![Node {
            name,
            major: self.major,
            minor: self.minor,
            is_partition: false,
        }];
        match partitions(self.sys) {
            Ok(p) => nodes.extend(p),
            Err(e) => return cannot(format!("listing {}", self.sys.display()), e),
        }

        for m in parse_mountinfo(self.mountinfo) {
            // Only /dev paths are stat'ed: a mount source elsewhere could hang.
            let source_rdev = if m.source.starts_with("/dev/") {
                (self.rdev_of)(&m.source)
            } else {
                None
            };
            let hit = nodes.iter().find(|n| {
                (n.major, n.minor) == (m.major, m.minor)
                    || source_rdev.is_some_and(|r| n.matches_rdev(r))
            });
            if let Some(n) = hit {
                return Some(format!("{} is mounted at {}", n.subject(), m.mount_point));
            }
        }

        for file in parse_swaps(self.swaps) {
            let Some(rdev) = (self.rdev_of)(&file) else {
                continue;
            };
            if let Some(n) = nodes.iter().find(|n| n.matches_rdev(rdev)) {
                return Some(format!("{} is an active swap area", n.subject()));
            }
        }

        for n in &nodes {
            let dir = if n.is_partition {
                self.sys.join(&n.name).join("holders")
            } else {
                self.sys.join("holders")
            };
            let holders = match list_names(&dir) {
                Ok(h) => h,
                Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return cannot(format!("listing {}", dir.display()), e),
            };
            if !holders.is_empty() {
                return Some(format!(
                    "{} is held by {} (device-mapper, LVM, md RAID or bcache uses it)",
                    n.subject(),
                    holders.join(", ")
                ));
            }
        }

        let parts: Vec<&str> = nodes
            .iter()
            .filter(|n| n.is_partition)
            .map(|n| n.name.as_str())
            .collect();
        if !parts.is_empty() {
            return Some(format!("it has partitions ({})", parts.join(", ")));
        }
        None
    }
}

/// The partitions of the device whose sysfs directory is `sys`: subdirectories that
/// contain a `partition` file; their `dev` file holds MAJ:MIN.
fn partitions(sys: &Path) -> io::Result<Vec<Node>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(sys)? {
        let entry = entry?;
        let dir = entry.path();
        if !dir.join("partition").is_file() {
            continue;
        }
        let Ok(dev) = fs::read_to_string(dir.join("dev")) else {
            continue;
        };
        let Some((major, minor)) = parse_maj_min(dev.trim()) else {
            continue;
        };
        out.push(Node {
            name: entry.file_name().to_string_lossy().into_owned(),
            major,
            minor,
            is_partition: true,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn list_names(dir: &Path) -> io::Result<Vec<String>> {
    let mut names = fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<io::Result<Vec<_>>>()?;
    names.sort();
    Ok(names)
}

fn parse_maj_min(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// One line of `/proc/self/mountinfo`, the fields we use.
#[derive(Debug, PartialEq, Eq)]
struct Mount {
    major: u32,
    minor: u32,
    mount_point: String,
    source: String,
}

/// Parses `/proc/self/mountinfo` (proc(5)): field 3 is MAJ:MIN, field 5 the mount
/// point; after the optional fields and a lone `-` come the fs type and the source.
/// Lines that do not parse are skipped.
fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let (major, minor) = parse_maj_min(fields.get(2)?)?;
            let mount_point = unescape(fields.get(4)?);
            let sep = fields.iter().skip(6).position(|f| *f == "-")? + 6;
            let source = unescape(fields.get(sep + 2)?);
            Some(Mount {
                major,
                minor,
                mount_point,
                source,
            })
        })
        .collect()
}

/// The file names in `/proc/swaps` (first column, after the header line).
fn parse_swaps(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(unescape)
        .collect()
}

/// Undoes the kernel's octal escapes (`\040` for a space) in /proc tables.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = b[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
25 22 0:5 / /dev rw,relatime - devtmpfs devtmpfs rw,size=123k
31 22 0:45 / /mnt/my\\040data rw,relatime shared:7 master:2 - btrfs /dev/loop3 rw,ssd
40 22 7:1 / /srv rw - xfs /dev/loop1p1 rw
garbage line
";

    #[test]
    fn mountinfo_fields_optional_fields_and_escapes() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m.len(), 4);
        assert_eq!(
            m[0],
            Mount {
                major: 253,
                minor: 0,
                mount_point: "/".into(),
                source: "/dev/vda".into()
            }
        );
        assert_eq!(m[1].source, "devtmpfs");
        // btrfs: anonymous 0:N device number, the source names the device.
        assert_eq!((m[2].major, m[2].minor), (0, 45));
        assert_eq!(m[2].mount_point, "/mnt/my data");
        assert_eq!(m[2].source, "/dev/loop3");
        assert_eq!((m[3].major, m[3].minor), (7, 1));
    }

    #[test]
    fn swaps_file_names() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/zram0                              partition\t8388604\t\t0\t\t100\n\
                    /swap\\040file                           file\t\t1048572\t\t0\t\t-2\n";
        assert_eq!(parse_swaps(text), vec!["/dev/zram0", "/swap file"]);
        assert!(parse_swaps("Filename Type Size Used Priority\n").is_empty());
    }

    #[test]
    fn unescape_octal_only() {
        assert_eq!(unescape(r"a\040b\134c"), r"a b\c");
        assert_eq!(unescape(r"trailing\04"), r"trailing\04");
        assert_eq!(unescape(r"\999"), r"\999");
    }

    /// A fake sysfs directory for device 7:9 named loop9, with `parts` partitions
    /// (numbered 259:1, 259:2, …).
    fn fake_sys(root: &Path, parts: usize) -> PathBuf {
        let sys = root.join("loop9");
        fs::create_dir_all(sys.join("holders")).unwrap();
        fs::create_dir_all(sys.join("queue")).unwrap();
        fs::write(sys.join("dev"), "7:9\n").unwrap();
        for i in 1..=parts {
            let p = sys.join(format!("loop9p{i}"));
            fs::create_dir_all(p.join("holders")).unwrap();
            fs::write(p.join("partition"), format!("{i}\n")).unwrap();
            fs::write(p.join("dev"), format!("259:{i}\n")).unwrap();
        }
        sys
    }

    fn judge(sys: &Path, mountinfo: &str, swaps: &str) -> Option<String> {
        // Path → device number, as stat would answer for these fake nodes.
        let rdev_of = |p: &str| match p {
            "/dev/loop9" => Some(rustix::fs::makedev(7, 9)),
            "/dev/loop9p2" => Some(rustix::fs::makedev(259, 2)),
            "/dev/vda" => Some(rustix::fs::makedev(253, 0)),
            _ => None,
        };
        KernelState {
            sys,
            major: 7,
            minor: 9,
            mountinfo,
            swaps,
            rdev_of: &rdev_of,
        }
        .in_use()
    }

    const SWAPS_HEADER: &str = "Filename Type Size Used Priority\n";

    #[test]
    fn a_free_device_is_not_in_use() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = fake_sys(tmp.path(), 0);
        assert_eq!(judge(&sys, MOUNTINFO, SWAPS_HEADER), None);
        // No holders directory at all (old kernels) is not a reason either.
        fs::remove_dir(sys.join("holders")).unwrap();
        assert_eq!(judge(&sys, "", ""), None);
    }

    #[test]
    fn mounted_by_number_by_source_or_through_a_partition() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = fake_sys(tmp.path(), 2);
        let by_number = "30 1 7:9 / /data rw - xfs /dev/whatever rw\n";
        assert_eq!(
            judge(&sys, by_number, "").unwrap(),
            "it is mounted at /data"
        );
        // btrfs: anonymous device number, source names the device.
        let by_source = "30 1 0:77 / /b rw - btrfs /dev/loop9 rw\n";
        assert_eq!(judge(&sys, by_source, "").unwrap(), "it is mounted at /b");
        let partition = "30 1 259:1 / /p1 rw - ext4 /dev/loop9p1 rw\n";
        assert_eq!(
            judge(&sys, partition, "").unwrap(),
            "its partition loop9p1 is mounted at /p1"
        );
        let part_source = "30 1 0:78 / /p2 rw - btrfs /dev/loop9p2 rw\n";
        assert_eq!(
            judge(&sys, part_source, "").unwrap(),
            "its partition loop9p2 is mounted at /p2"
        );
    }

    #[test]
    fn swap_on_the_device_or_a_partition() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = fake_sys(tmp.path(), 2);
        let swaps = format!("{SWAPS_HEADER}/dev/loop9 partition 100 0 -2\n");
        assert_eq!(
            judge(&sys, "", &swaps).unwrap(),
            "it is an active swap area"
        );
        let swaps =
            format!("{SWAPS_HEADER}/dev/loop9p2 partition 100 0 -2\n/swapfile file 1 0 -3\n");
        assert_eq!(
            judge(&sys, "", &swaps).unwrap(),
            "its partition loop9p2 is an active swap area"
        );
        let other = format!("{SWAPS_HEADER}/dev/vda partition 100 0 -2\n");
        assert!(judge(&sys, "", &other).unwrap().contains("partitions"));
    }

    #[test]
    fn holders_of_the_device_or_a_partition() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = fake_sys(tmp.path(), 0);
        fs::create_dir(sys.join("holders/dm-3")).unwrap();
        fs::create_dir(sys.join("holders/dm-1")).unwrap();
        let why = judge(&sys, "", "").unwrap();
        assert!(why.starts_with("it is held by dm-1, dm-3 "), "{why}");

        let tmp = tempfile::tempdir().unwrap();
        let sys = fake_sys(tmp.path(), 1);
        fs::create_dir(sys.join("loop9p1/holders/md127")).unwrap();
        let why = judge(&sys, "", "").unwrap();
        assert!(
            why.starts_with("its partition loop9p1 is held by md127"),
            "{why}"
        );
    }

    #[test]
    fn partitions_alone_refuse() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = fake_sys(tmp.path(), 2);
        // Subdirectories that are not partitions (queue, holders, power) do not count.
        fs::create_dir_all(sys.join("power")).unwrap();
        assert_eq!(
            judge(&sys, MOUNTINFO, SWAPS_HEADER).unwrap(),
            "it has partitions (loop9p1, loop9p2)"
        );
    }

    #[test]
    fn unreadable_sysfs_is_a_reason() {
        let tmp = tempfile::tempdir().unwrap();
        let why = judge(&tmp.path().join("gone"), "", "").unwrap();
        assert!(
            why.starts_with("cannot check whether it is in use"),
            "{why}"
        );
    }

    #[test]
    fn maj_min() {
        assert_eq!(parse_maj_min("259:3"), Some((259, 3)));
        assert_eq!(parse_maj_min("259"), None);
        assert_eq!(parse_maj_min("a:b"), None);
    }
}
