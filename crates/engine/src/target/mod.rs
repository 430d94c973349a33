//! Targets: where a fleet's disks live, and how they are planned, created, opened and
//! filled.
//!
//! A target is either a directory (one preallocated file per disk, created in it) or a
//! list of block devices (each split into equal regions, one per disk placed on it).
//! [`plan_layout`] does every check before any I/O that could cost data or space: the
//! `--target` kind, `--disk-size` against free space or device size, O_DIRECT support,
//! and, for devices, the safety checks of `safety.rs` and `signature.rs` that refuse
//! a device in use or carrying data unless `--destroy-data` was given. It writes
//! nothing, not even a missing target directory (free space and O_DIRECT are checked on
//! the nearest existing directory above it), so a refused run and `--dry-run` leave no
//! trace. [`create_files`] then creates the directory and allocates the disk files, [`open_disk`] opens one disk for an I/O thread, and `fill.rs` fills
//! regions and keeps fill markers. Engines never see paths: they get an [`OpenDisk`].
//! Every error names the flag that fixes it; [`TargetError::is_input_error`] tells the
//! binary which exit class to use.

mod fill;
mod safety;
mod signature;

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::OpenDisk;

pub use fill::{
    fill_disk, fill_marker_valid, fill_plan, precondition_pass, seal, Fill, FillIo, FillOutcome,
    FillPattern, FillWrites, Unsealed, FILL_DISKS_AT_ONCE, PRECONDITION_BS,
};
pub use signature::detect_signature;

/// Bytes reserved after every disk region for its fill marker.
pub const MARKER_LEN: u64 = 4096;

const MIB: u64 = 1 << 20;
/// Smallest device region (stride) the planner hands out.
const MIN_REGION: u64 = 2 * MIB;
/// Disk sizes and region offsets are multiples of this, so O_DIRECT works on 4Kn.
const SIZE_ALIGN: u64 = 4096;

/// Where the fleet's disks live, as given with `--target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// A directory: one file per disk is created in it (the directory too, if missing).
    Dir(PathBuf),
    /// Several existing directories, each typically its own filesystem or mount (a pod's
    /// volumes, or one mount per SSD): disk `k` of the fleet (worker-major) goes into
    /// directory `k % n`, as disks are spread over devices.
    Dirs(Vec<PathBuf>),
    /// Block devices: the fleet's disks are spread round-robin over them.
    Devices(Vec<PathBuf>),
}

impl TargetSpec {
    /// The directory or devices, as given.
    pub fn paths(&self) -> Vec<PathBuf> {
        match self {
            TargetSpec::Dir(d) => vec![d.clone()],
            TargetSpec::Dirs(v) | TargetSpec::Devices(v) => v.clone(),
        }
    }

    /// Classifies `--target` values: one directory or missing path is a directory
    /// target; block devices are a device target; several existing directories are a
    /// directories target; anything else (a mix, a missing path among several) is an
    /// error.
    pub fn from_paths(paths: &[PathBuf]) -> Result<TargetSpec, TargetError> {
        let Some(first) = paths.first() else {
            return Err(TargetError::NoTarget);
        };
        if paths.len() == 1 {
            return match fs::metadata(first) {
                Ok(m) if m.file_type().is_block_device() => Ok(TargetSpec::Devices(paths.to_vec())),
                Ok(m) if m.is_dir() => Ok(TargetSpec::Dir(first.clone())),
                Ok(m) if m.is_file() => Err(TargetError::RegularFile(first.clone())),
                Ok(m) => Err(not_a_target(first, &m)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(TargetSpec::Dir(first.clone())),
                Err(e) => Err(TargetError::io("cannot inspect", first, e)),
            };
        }
        let is_dir = |p: &PathBuf| fs::metadata(p).is_ok_and(|m| m.is_dir());
        if paths.iter().all(is_dir) {
            // Each directory once (the same one under two names too).
            let mut seen = Vec::new();
            for p in paths {
                let real =
                    fs::canonicalize(p).map_err(|e| TargetError::io("cannot inspect", p, e))?;
                if seen.contains(&real) {
                    return Err(TargetError::NotATarget {
                        path: p.clone(),
                        what: "is given more than once; each directory may be used once".into(),
                    });
                }
                seen.push(real);
            }
            return Ok(TargetSpec::Dirs(paths.to_vec()));
        }
        let first_is_dir = is_dir(first);
        for p in paths {
            match fs::metadata(p) {
                Ok(m) if m.file_type().is_block_device() && !first_is_dir => {}
                Ok(m) if m.is_dir() && first_is_dir => {}
                Ok(_) if first_is_dir => {
                    return Err(TargetError::NotATarget {
                        path: p.clone(),
                        what: "is not a directory (when --target is given more than once, \
                               every value must be an existing directory, or every value a \
                               block device)"
                            .into(),
                    })
                }
                Ok(_) => {
                    return Err(TargetError::NotATarget {
                        path: p.clone(),
                        what: "is not a block device (when --target is given more than once, \
                               every value must be a block device)"
                            .into(),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(TargetError::Missing(p.clone()))
                }
                Err(e) => return Err(TargetError::io("cannot inspect", p, e)),
            }
        }
        Ok(TargetSpec::Devices(paths.to_vec()))
    }
}

/// What the fleet needs from its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutRequest {
    /// Global index of the first worker: disk files are named by global worker index, so
    /// hosts sharing one filesystem never collide.
    pub worker_base: u32,
    pub workers: u32,
    pub disks_per_worker: u32,
    /// Addressable bytes per disk (the fill marker comes on top).
    pub disk_size: u64,
    /// `disk_size` was given by the user; on devices it then overrides "fill the
    /// device" and must fit.
    pub disk_size_from_cli: bool,
    /// The run uses O_DIRECT.
    pub direct: bool,
    /// `--destroy-data`: skip the device safety checks.
    pub destroy_data: bool,
}

/// One disk of the fleet: a file, or a region of a block device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskLayout {
    pub worker: u32,
    pub disk: u32,
    pub path: PathBuf,
    /// First byte of the region in the file or device.
    pub region_offset: u64,
    /// Addressable bytes; the fill marker occupies `MARKER_LEN` bytes right after.
    pub size: u64,
    pub is_device: bool,
}

/// Everything that can go wrong planning, creating, opening or filling targets.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("no --target given; give a directory (files are created in it) or block devices")]
    NoTarget,
    #[error(
        "--target {} does not exist; give an existing block device, or a single directory \
         (created if missing)",
        .0.display()
    )]
    Missing(PathBuf),
    #[error(
        "--target {} is an existing regular file; give a directory (files are created in it) \
         or a block device",
        .0.display()
    )]
    RegularFile(PathBuf),
    #[error(
        "--target {} {what}; give a directory (files are created in it) or a block device",
        .path.display()
    )]
    NotATarget { path: PathBuf, what: String },
    #[error("--target {}: cannot create the directory: {source}", .path.display())]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("--target {} {why}; each device may be used once", .path.display())]
    DuplicateDevice { path: PathBuf, why: String },
    #[error(
        "--target names {devices} block devices but the fleet has only {disks} disks \
         (workers x disks per worker); give at most {disks} devices"
    )]
    TooManyDevices { devices: u64, disks: u64 },
    #[error("the fleet has no disks (workers x disks per worker is 0)")]
    NoDisks,
    #[error("--disk-size {size} bytes is not valid: {why}")]
    BadDiskSize { size: u64, why: &'static str },
    #[error(
        "not enough free space in {}: the disk files need {} more but {} is available; \
         lower --disk-size or give another --target",
        .dir.display(), human(*.needed), human(*.available)
    )]
    NoSpace {
        dir: PathBuf,
        needed: u64,
        available: u64,
    },
    #[error(
        "no space left while allocating {}; lower --disk-size or free space on its filesystem",
        .path.display()
    )]
    AllocNoSpace { path: PathBuf },
    #[error(
        "--disk-size {requested} bytes does not fit on {}: it is split into {regions} regions, \
         each holding at most {max} bytes ({}) of disk data; lower --disk-size or omit \
         it to use the whole region",
        .device.display(), human(*.max)
    )]
    DiskSizeTooLarge {
        device: PathBuf,
        requested: u64,
        max: u64,
        regions: u64,
    },
    #[error(
        "--target {} is too small: {size} bytes for {regions} disk region(s) of at least 2 MiB \
         each; use a larger device, more devices, or fewer disks",
        .device.display()
    )]
    DeviceTooSmall {
        device: PathBuf,
        size: u64,
        regions: u64,
    },
    #[error("refusing to write {}: {reason}; pass --destroy-data to overwrite it", .device.display())]
    Refused { device: PathBuf, reason: String },
    #[error(
        "refusing to write {}: {reason}; unmount or release it first (--destroy-data does not \
         override a device in use)",
        .device.display()
    )]
    InUse { device: PathBuf, reason: String },
    #[error(
        "the filesystem at {} does not support O_DIRECT (tmpfs before Linux 6.6 does not); \
         rerun with --direct=false",
        .0.display()
    )]
    DirectUnsupported(PathBuf),
    #[error("{}: invalid disk layout: {why}", .path.display())]
    BadLayout { path: PathBuf, why: &'static str },
    #[error("{context} {}: {source}", .path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl TargetError {
    /// True when the user can fix this by changing flags (exit-2 class); false for
    /// unexpected I/O errors and internal inconsistencies.
    pub fn is_input_error(&self) -> bool {
        !matches!(self, TargetError::Io { .. } | TargetError::BadLayout { .. })
    }

    fn io(context: &'static str, path: &Path, source: io::Error) -> Self {
        TargetError::Io {
            context,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A byte count in the largest binary unit it fills, so the figure shows however small
/// (`512 B`, `1.50 MiB`, `3.00 GiB`): a fixed GiB printed a free space of 20 MiB as 0.02
/// and one of 4 MiB as 0.00.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

fn not_a_target(path: &Path, m: &fs::Metadata) -> TargetError {
    let ft = m.file_type();
    let what = if ft.is_char_device() {
        "is a character device, not a block device"
    } else if ft.is_block_device() {
        "is a block device; pass it as a device target"
    } else if ft.is_dir() {
        "is a directory; a directory must be the only --target"
    } else {
        "is neither a directory nor a block device"
    };
    TargetError::NotATarget {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

/// File name of one disk in a directory target.
pub fn disk_file_name(worker: u32, disk: u32) -> String {
    format!("w{worker:03}-d{disk:03}.iofleet")
}

/// (worker, disk) pairs in fleet order: worker-major.
fn disk_ids(req: &LayoutRequest) -> impl Iterator<Item = (u32, u32)> {
    let dpw = req.disks_per_worker;
    let base = req.worker_base;
    (0..req.workers).flat_map(move |w| (0..dpw).map(move |d| (base + w, d)))
}

fn check_disk_size(size: u64) -> Result<(), TargetError> {
    let why = if size == 0 {
        "it must be greater than zero"
    } else if size & (SIZE_ALIGN - 1) != 0 {
        "it must be a multiple of 4 KiB (4096 bytes)"
    } else if size.checked_add(MARKER_LEN).is_none() {
        "it is too large"
    } else {
        return Ok(());
    };
    Err(TargetError::BadDiskSize { size, why })
}

/// Plans the fleet's disks on `spec`, with every check and no writes (a missing target
/// directory is left for [`create_files`] to create).
///
/// Directory: one file per disk, `size = disk_size`, checked against free space.
/// Devices: disk `k` (worker-major) goes to device `k % n`, each device split into
/// equal 1 MiB-aligned regions; `size` is the region minus the marker unless
/// `disk_size_from_cli`. Devices in use or carrying data are refused unless
/// `destroy_data`.
pub fn plan_layout(spec: &TargetSpec, req: &LayoutRequest) -> Result<Vec<DiskLayout>, TargetError> {
    let disks = u64::from(req.workers) * u64::from(req.disks_per_worker);
    if disks == 0 {
        return Err(TargetError::NoDisks);
    }
    match spec {
        TargetSpec::Dir(dir) => plan_dirs(std::slice::from_ref(dir), req),
        TargetSpec::Dirs(dirs) => plan_dirs(dirs, req),
        TargetSpec::Devices(devs) => plan_devices(devs, req, disks),
    }
}

/// Plans disk files in `dirs`: disk `k` of this request (worker-major) in `dirs[k % n]`,
/// each `disk_size` plus its fill marker, checked against the free space of every
/// filesystem they land on (directories on one filesystem share its space).
fn plan_dirs(dirs: &[PathBuf], req: &LayoutRequest) -> Result<Vec<DiskLayout>, TargetError> {
    check_disk_size(req.disk_size)?;
    if dirs.is_empty() {
        return Err(TargetError::NoTarget);
    }
    // Each directory, or (when it is still to be created) the nearest existing directory
    // above it: the filesystem its disk files will land on. Nothing is created here, so
    // a refused plan leaves nothing behind.
    let existing: Vec<&Path> = dirs
        .iter()
        .map(|d| existing_dir(d))
        .collect::<Result<_, _>>()?;
    let file_len = req.disk_size + MARKER_LEN;
    let mut needed = vec![0u64; dirs.len()];
    let mut out = Vec::new();
    for (k, (worker, disk)) in disk_ids(req).enumerate() {
        let j = k % dirs.len();
        let path = dirs[j].join(disk_file_name(worker, disk));
        // symlink_metadata: a disk file must be a regular file, never a link that
        // could point at a device or at someone else's file.
        let allocated = match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_file() => m.blocks().saturating_mul(512),
            Ok(_) => {
                return Err(TargetError::NotATarget {
                    path,
                    what: "exists and is not a regular file (a disk file of this target); \
                           remove it or choose another directory"
                        .into(),
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(TargetError::io("cannot inspect", &path, e)),
        };
        needed[j] = needed[j].saturating_add(file_len - allocated.min(file_len));
        out.push(DiskLayout {
            worker,
            disk,
            path,
            region_offset: 0,
            size: req.disk_size,
            is_device: false,
        });
    }

    // Free space per filesystem: what every directory on it needs, against what it has.
    let mut by_fs: Vec<(u64, u64, usize)> = Vec::new(); // (st_dev, needed, first dir)
    for (j, at) in existing.iter().enumerate() {
        let dev = fs::metadata(at)
            .map_err(|e| TargetError::io("cannot inspect", at, e))?
            .dev();
        match by_fs.iter_mut().find(|(d, _, _)| *d == dev) {
            Some(entry) => entry.1 = entry.1.saturating_add(needed[j]),
            None => by_fs.push((dev, needed[j], j)),
        }
    }
    for (_, need, j) in by_fs {
        let st = rustix::fs::statvfs(existing[j])
            .map_err(|e| TargetError::io("cannot statvfs", existing[j], e.into()))?;
        let available = st.f_bavail.saturating_mul(st.f_frsize);
        // A filesystem that reports no size at all (ramfs: f_blocks = 0) has no limit to
        // check against; any other one must have room for every disk file.
        if st.f_blocks > 0 && need > available {
            return Err(TargetError::NoSpace {
                dir: dirs[j].clone(),
                needed: need,
                available,
            });
        }
    }
    if req.direct {
        for (dir, at) in dirs.iter().zip(&existing) {
            // The refusal names the target given, not the directory that stood in for it.
            probe_direct(at).map_err(|e| match e {
                TargetError::DirectUnsupported(_) => TargetError::DirectUnsupported(dir.clone()),
                e => e,
            })?;
        }
    }
    Ok(out)
}

/// `dir` if it is a directory; the nearest existing directory above it if `dir` does not
/// exist yet; an error if `dir` (or what stands in its place) is anything else.
fn existing_dir(dir: &Path) -> Result<&Path, TargetError> {
    let mut at = dir;
    loop {
        match fs::metadata(at) {
            Ok(m) if m.is_dir() => return Ok(at),
            Ok(m) if at == dir && m.is_file() => {
                return Err(TargetError::RegularFile(dir.to_path_buf()))
            }
            Ok(m) if at == dir => return Err(not_a_target(dir, &m)),
            // A file where a parent directory should be: creating `dir` would fail.
            Ok(_) => {
                return Err(TargetError::CreateDir {
                    path: dir.to_path_buf(),
                    source: io::Error::new(
                        io::ErrorKind::NotADirectory,
                        format!("{} is not a directory", at.display()),
                    ),
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                return Err(TargetError::CreateDir {
                    path: dir.to_path_buf(),
                    source: e,
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => match at.parent() {
                Some(p) if !p.as_os_str().is_empty() => at = p,
                // A relative path with no existing component: the working directory.
                _ => return Ok(Path::new(".")),
            },
            Err(e) => return Err(TargetError::io("cannot inspect", at, e)),
        }
    }
}

/// Checks O_DIRECT support in `dir` with an unnamed O_TMPFILE (nothing visible is
/// created, no data is written). Filesystems without O_TMPFILE are not probed; the
/// open in [`open_disk`] reports them.
fn probe_direct(dir: &Path) -> Result<(), TargetError> {
    let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::DIRECT | OFlags::CLOEXEC;
    match rustix::fs::open(dir, flags, Mode::RUSR | Mode::WUSR) {
        Ok(_fd) => Ok(()),
        Err(Errno::INVAL) => Err(TargetError::DirectUnsupported(dir.to_path_buf())),
        Err(_) => Ok(()),
    }
}

fn plan_devices(
    devs: &[PathBuf],
    req: &LayoutRequest,
    disks: u64,
) -> Result<Vec<DiskLayout>, TargetError> {
    let n = devs.len() as u64;
    if n == 0 {
        return Err(TargetError::NoTarget);
    }
    if n > disks {
        return Err(TargetError::TooManyDevices { devices: n, disks });
    }
    if req.disk_size_from_cli {
        check_disk_size(req.disk_size)?;
    }

    // Identify every device first: kind, duplicates, partitions of listed disks.
    let mut ids: Vec<(u64, Option<PathBuf>)> = Vec::new();
    for path in devs {
        let m = match fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(TargetError::Missing(path.clone()))
            }
            Err(e) => return Err(TargetError::io("cannot inspect", path, e)),
        };
        if !m.file_type().is_block_device() {
            return Err(if m.is_file() {
                TargetError::RegularFile(path.clone())
            } else {
                not_a_target(path, &m)
            });
        }
        let rdev = m.rdev();
        let sys = fs::canonicalize(safety::sysfs_dir(rdev)).ok();
        for (j, (other_rdev, other_sys)) in ids.iter().enumerate() {
            let dup = *other_rdev == rdev;
            let nested = match (&sys, other_sys) {
                (Some(a), Some(b)) => a.parent() == Some(b) || b.parent() == Some(a),
                _ => false,
            };
            if dup || nested {
                return Err(TargetError::DuplicateDevice {
                    path: path.clone(),
                    why: if dup {
                        format!("is the same device as {}", devs[j].display())
                    } else {
                        format!(
                            "overlaps {} (one is a partition of the other)",
                            devs[j].display()
                        )
                    },
                });
            }
        }
        ids.push((rdev, sys));
    }

    // Per device: safety checks and size, then its regions.
    let mut per_dev: Vec<(u64, u64)> = Vec::new(); // (stride, addressable size)
    for (i, path) in devs.iter().enumerate() {
        let regions = disks / n + u64::from((i as u64) < disks % n);
        let dev_size = safety::probe_device(path, ids[i].0, req.destroy_data)?;
        if dev_size < regions.saturating_mul(MIN_REGION) {
            return Err(TargetError::DeviceTooSmall {
                device: path.clone(),
                size: dev_size,
                regions,
            });
        }
        let stride = (dev_size / regions) & !(MIB - 1);
        let max = stride - MARKER_LEN;
        let size = if req.disk_size_from_cli {
            if req.disk_size > max {
                return Err(TargetError::DiskSizeTooLarge {
                    device: path.clone(),
                    requested: req.disk_size,
                    max,
                    regions,
                });
            }
            req.disk_size
        } else {
            max
        };
        per_dev.push((stride, size));
    }

    Ok(disk_ids(req)
        .enumerate()
        .map(|(k, (worker, disk))| {
            let k = k as u64;
            let dev = (k % n) as usize;
            let (stride, size) = per_dev[dev];
            DiskLayout {
                worker,
                disk,
                path: devs[dev].clone(),
                region_offset: (k / n) * stride,
                size,
                is_device: true,
            }
        })
        .collect())
}

/// Creates the target directory if missing, then creates or extends every disk file to
/// `size + MARKER_LEN` bytes, allocated with
/// fallocate (sparse `set_len` where the filesystem has no fallocate). Existing
/// longer files are left as they are; devices are untouched.
pub fn create_files(layout: &[DiskLayout]) -> Result<(), TargetError> {
    for d in layout.iter().filter(|d| !d.is_device) {
        if let Some(dir) = d.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|source| TargetError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let len = d
            .size
            .checked_add(MARKER_LEN)
            .ok_or_else(|| TargetError::BadLayout {
                path: d.path.clone(),
                why: "size + marker overflows",
            })?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(OFlags::NOFOLLOW.bits() as i32)
            .open(&d.path)
            .map_err(|e| open_error(&d.path, false, false, e))?;
        let meta = file
            .metadata()
            .map_err(|e| TargetError::io("cannot inspect", &d.path, e))?;
        if !meta.is_file() {
            return Err(TargetError::NotATarget {
                path: d.path.clone(),
                what: "exists and is not a regular file; remove it or choose another directory"
                    .into(),
            });
        }
        if meta.len() >= len && meta.blocks().saturating_mul(512) >= len {
            continue;
        }
        match rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, len) {
            Ok(()) => {}
            Err(Errno::NOSPC) => {
                return Err(TargetError::AllocNoSpace {
                    path: d.path.clone(),
                })
            }
            Err(Errno::OPNOTSUPP) => {
                if meta.len() < len {
                    file.set_len(len)
                        .map_err(|e| TargetError::io("cannot extend", &d.path, e))?;
                }
            }
            Err(e) => return Err(TargetError::io("cannot allocate", &d.path, e.into())),
        }
    }
    Ok(())
}

/// Opens one disk for an I/O thread: read+write (read-only unless `write`), with
/// O_DIRECT when `direct`. Disk files are opened without following symlinks.
///
/// Disks are opened with O_NOATIME where the kernel allows it (the caller owns the file
/// or has CAP_FOWNER; otherwise the open is retried without it): a benchmark's reads
/// should not write access times to the storage under test, and checking whether to
/// costs the kernel work on every read (bench/README.md measures it).
pub fn open_disk(d: &DiskLayout, direct: bool, write: bool) -> Result<OpenDisk, TargetError> {
    open_disk_through(d, direct, write, false)
}

/// [`open_disk`], and with O_DSYNC when `write_through` (the profile's
/// `data.write_through`): every write completes once it is durable, so the block layer
/// sends it with FUA (or a flush after it) to a device with a volatile write cache. For
/// every engine that writes: the flag is on the file, not on each request.
pub fn open_disk_through(
    d: &DiskLayout,
    direct: bool,
    write: bool,
    write_through: bool,
) -> Result<OpenDisk, TargetError> {
    let mut flags = OFlags::empty();
    if direct {
        flags |= OFlags::DIRECT;
    }
    if write_through && write {
        flags |= OFlags::DSYNC;
    }
    if !d.is_device {
        flags |= OFlags::NOFOLLOW;
    }
    let open = |flags: OFlags| {
        OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(flags.bits() as i32)
            .open(&d.path)
    };
    let file = match open(flags | OFlags::NOATIME) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(flags),
        r => r,
    }
    .map_err(|e| open_error(&d.path, direct, d.is_device, e))?;
    Ok(OpenDisk {
        file,
        region_offset: d.region_offset,
        size: d.size,
    })
}

/// Maps an open(2) failure: EINVAL with O_DIRECT means the filesystem does not
/// support it; ELOOP on a disk file means it is a symlink.
fn open_error(path: &Path, direct: bool, is_device: bool, e: io::Error) -> TargetError {
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        Some(Errno::INVAL) if direct => TargetError::DirectUnsupported(path.to_path_buf()),
        Some(Errno::LOOP) if !is_device => TargetError::NotATarget {
            path: path.to_path_buf(),
            what: "is a symbolic link; disk files are never followed through links (remove it)"
                .into(),
        },
        _ => TargetError::io("cannot open", path, e),
    }
}

/// The logical block size of the disk's device (from sysfs), or 512 for files and
/// when sysfs does not say.
pub fn logical_block_size(d: &DiskLayout) -> u64 {
    if !d.is_device {
        return 512;
    }
    let Ok(m) = fs::metadata(&d.path) else {
        return 512;
    };
    let sys = safety::sysfs_dir(m.rdev());
    // A partition has no queue/ of its own: its parent disk's applies.
    [sys.join("queue"), sys.join("../queue")]
        .iter()
        .find_map(|q| fs::read_to_string(q.join("logical_block_size")).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(512)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_error_mapping() {
        let p = Path::new("/x");
        let einval = || io::Error::from_raw_os_error(Errno::INVAL.raw_os_error());
        assert!(matches!(
            open_error(p, true, false, einval()),
            TargetError::DirectUnsupported(_)
        ));
        assert!(matches!(
            open_error(p, false, false, einval()),
            TargetError::Io { .. }
        ));
        let eloop = io::Error::from_raw_os_error(Errno::LOOP.raw_os_error());
        let e = open_error(p, false, false, eloop);
        assert!(
            e.is_input_error() && e.to_string().contains("symbolic link"),
            "{e}"
        );
    }

    #[test]
    fn disk_size_rules() {
        assert!(check_disk_size(4096).is_ok());
        for bad in [0, 512, 4097, !4095u64] {
            let e = check_disk_size(bad).unwrap_err();
            assert!(e.to_string().contains("--disk-size"), "{e}");
            assert!(e.is_input_error());
        }
    }

    #[test]
    fn every_input_error_names_a_flag() {
        let p = PathBuf::from("/t");
        let errs = [
            TargetError::NoTarget,
            TargetError::Missing(p.clone()),
            TargetError::RegularFile(p.clone()),
            TargetError::NotATarget {
                path: p.clone(),
                what: "x".into(),
            },
            TargetError::CreateDir {
                path: p.clone(),
                source: io::Error::other("x"),
            },
            TargetError::DuplicateDevice {
                path: p.clone(),
                why: "x".into(),
            },
            TargetError::TooManyDevices {
                devices: 3,
                disks: 2,
            },
            TargetError::BadDiskSize { size: 1, why: "x" },
            TargetError::NoSpace {
                dir: p.clone(),
                needed: 3 << 20,
                available: 1 << 19,
            },
            TargetError::AllocNoSpace { path: p.clone() },
            TargetError::DiskSizeTooLarge {
                device: p.clone(),
                requested: 1,
                max: 0,
                regions: 1,
            },
            TargetError::DeviceTooSmall {
                device: p.clone(),
                size: 1,
                regions: 1,
            },
            TargetError::Refused {
                device: p.clone(),
                reason: "x".into(),
            },
            TargetError::DirectUnsupported(p.clone()),
        ];
        let flags = [
            "--target",
            "--disk-size",
            "--destroy-data",
            "--direct=false",
        ];
        for e in errs.iter().filter(|e| !matches!(e, TargetError::NoDisks)) {
            assert!(e.is_input_error(), "{e}");
            let msg = e.to_string();
            assert!(
                flags.iter().any(|f| msg.contains(f)),
                "no flag named in: {msg}"
            );
        }
        let io_err = TargetError::io("cannot read", &p, io::Error::other("boom"));
        assert!(!io_err.is_input_error());
        let no_space = &errs[8].to_string();
        assert!(
            no_space.contains("need 3.00 MiB more but 512.00 KiB is available"),
            "{no_space}"
        );
    }

    #[test]
    fn byte_counts_show_in_the_unit_they_fill() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(1023), "1023 B");
        assert_eq!(human(1024), "1.00 KiB");
        assert_eq!(human(3 << 19), "1.50 MiB");
        assert_eq!(human(4 << 20), "4.00 MiB");
        assert_eq!(human((1 << 50) * 4 + (16 << 10)), "4.00 PiB");
        assert_eq!(human(u64::MAX), "16.00 EiB");
    }
}
