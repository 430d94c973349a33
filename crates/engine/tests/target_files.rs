//! Directory targets through the public API: planning, creating, opening and filling
//! disk files in temporary directories, and the errors a user sees for each mistake.

#[path = "../../../tests-support/need.rs"]
mod need;

use std::fs;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use iofleet_engine::target::{
    create_files, fill_disk, fill_marker_valid, logical_block_size, open_disk, plan_layout,
    DiskLayout, FillIo, FillOutcome, FillPattern, LayoutRequest, TargetError, TargetSpec,
    MARKER_LEN,
};

const MIB: u64 = 1 << 20;

fn req(workers: u32, disks_per_worker: u32, disk_size: u64) -> LayoutRequest {
    LayoutRequest {
        worker_base: 0,
        workers,
        disks_per_worker,
        disk_size,
        disk_size_from_cli: true,
        direct: false,
        destroy_data: false,
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn fill(d: &DiskLayout, p: FillPattern, direct: bool) -> Result<(FillOutcome, u64), TargetError> {
    let stop = AtomicBool::new(false);
    let progress = AtomicU64::new(0);
    let out = fill_disk(d, p, direct, FillIo::Threads(4), &stop, &progress)?;
    Ok((out, progress.load(Ordering::Relaxed)))
}

#[test]
fn layout_names_sizes_and_order_without_creating_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("new/sub");
    let layout = plan_layout(&TargetSpec::Dir(dir.clone()), &req(2, 3, 4 * MIB)).unwrap();
    assert!(
        !dir.exists(),
        "planning creates nothing, not even the directory"
    );
    let got: Vec<(u32, u32, PathBuf)> = layout
        .iter()
        .map(|d| (d.worker, d.disk, d.path.clone()))
        .collect();
    let want: Vec<(u32, u32, PathBuf)> = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
        .iter()
        .map(|&(w, d)| (w, d, dir.join(format!("w{w:03}-d{d:03}.iofleet"))))
        .collect();
    assert_eq!(got, want);
    for d in &layout {
        assert_eq!((d.region_offset, d.size, d.is_device), (0, 4 * MIB, false));
        assert_eq!(logical_block_size(d), 512);
    }
    create_files(&layout).unwrap();
    assert_eq!(
        files_in(&dir).len(),
        6,
        "create_files creates the directory too"
    );
}

#[test]
fn refused_plan_in_a_missing_directory_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("new/sub");
    let e = plan_layout(&TargetSpec::Dir(dir.clone()), &req(2, 2, 1u64 << 50)).unwrap_err();
    assert!(matches!(e, TargetError::NoSpace { .. }), "{e:?}");
    assert!(
        files_in(tmp.path()).is_empty(),
        "{:?}",
        files_in(tmp.path())
    );
    // Under a regular file the directory cannot be created: said before anything is.
    let f = tmp.path().join("file");
    fs::write(&f, b"x").unwrap();
    let e = plan_layout(&TargetSpec::Dir(f.join("d")), &req(1, 1, MIB)).unwrap_err();
    assert!(matches!(e, TargetError::CreateDir { .. }), "{e:?}");
    assert!(e.to_string().contains("--target"), "{e}");
}

#[test]
fn an_existing_regular_file_is_not_a_target() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("data.img");
    fs::write(&f, b"precious").unwrap();
    for spec in [
        TargetSpec::Dir(f.clone()),
        TargetSpec::Devices(vec![f.clone()]),
    ] {
        let e = plan_layout(&spec, &req(1, 1, MIB)).unwrap_err();
        assert!(matches!(e, TargetError::RegularFile(_)), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("--target") && msg.contains("existing regular file"),
            "{msg}"
        );
        assert!(e.is_input_error());
    }
    assert!(matches!(
        TargetSpec::from_paths(std::slice::from_ref(&f)),
        Err(TargetError::RegularFile(_))
    ));
    assert_eq!(fs::read(&f).unwrap(), b"precious");
}

#[test]
fn classify_target_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_path_buf();
    assert_eq!(
        TargetSpec::from_paths(std::slice::from_ref(&d)).unwrap(),
        TargetSpec::Dir(d.clone())
    );
    let missing = d.join("missing");
    assert_eq!(
        TargetSpec::from_paths(std::slice::from_ref(&missing)).unwrap(),
        TargetSpec::Dir(missing.clone())
    );
    assert!(matches!(
        TargetSpec::from_paths(&[]),
        Err(TargetError::NoTarget)
    ));
    let e = TargetSpec::from_paths(&[PathBuf::from("/dev/null")]).unwrap_err();
    assert!(e.to_string().contains("character device"), "{e}");
    let e = TargetSpec::from_paths(&[d.clone(), d.clone()]).unwrap_err();
    assert!(e.to_string().contains("given more than once"), "{e}");
    let e = TargetSpec::from_paths(&[d.clone(), PathBuf::from("/dev/null")]).unwrap_err();
    assert!(e.to_string().contains("not a directory"), "{e}");
    // A device target that is not a block device.
    let e = plan_layout(
        &TargetSpec::Devices(vec![PathBuf::from("/dev/null")]),
        &req(1, 1, MIB),
    )
    .unwrap_err();
    assert!(
        matches!(e, TargetError::NotATarget { .. }) && e.is_input_error(),
        "{e:?}"
    );
    let e = plan_layout(&TargetSpec::Devices(vec![missing]), &req(1, 1, MIB)).unwrap_err();
    assert!(matches!(e, TargetError::Missing(_)), "{e:?}");
}

#[test]
fn too_little_space_fails_before_writing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let pib = 1u64 << 50;
    let e = plan_layout(&TargetSpec::Dir(tmp.path().into()), &req(2, 2, pib)).unwrap_err();
    assert!(matches!(e, TargetError::NoSpace { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("--disk-size"), "{msg}");
    assert!(msg.contains(&tmp.path().display().to_string()), "{msg}");
    // 4 disks x (1 PiB + 4 KiB), in the unit the figure fills.
    assert!(msg.contains("need 4.00 PiB more"), "{msg}");
    assert!(e.is_input_error());
    assert!(files_in(tmp.path()).is_empty());
    // A target directory that does not exist yet is checked on the filesystem it would
    // be created on, and a refusal leaves no empty directory behind.
    let missing = tmp.path().join("new/sub");
    let e = plan_layout(&TargetSpec::Dir(missing.clone()), &req(2, 2, pib)).unwrap_err();
    assert!(matches!(e, TargetError::NoSpace { .. }), "{e:?}");
    assert!(
        !tmp.path().join("new").exists(),
        "the refused run left a directory"
    );
    // The same for a relative path whose first component is missing (its parent is the
    // current directory, the empty path).
    let rel = PathBuf::from(format!("iofleet-missing-{}/d", std::process::id()));
    let e = plan_layout(&TargetSpec::Dir(rel.clone()), &req(2, 2, pib)).unwrap_err();
    assert!(matches!(e, TargetError::NoSpace { .. }), "{e:?}");
    assert!(!rel.parent().unwrap().exists());
}

#[test]
fn invalid_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = TargetSpec::Dir(tmp.path().join("d"));
    let e = plan_layout(&spec, &req(0, 4, MIB)).unwrap_err();
    assert!(matches!(e, TargetError::NoDisks), "{e:?}");
    let e = plan_layout(&spec, &req(1, 1, MIB + 512)).unwrap_err();
    assert!(e.to_string().contains("--disk-size"), "{e}");
    assert!(
        !tmp.path().join("d").exists(),
        "invalid request created the directory"
    );
}

#[test]
fn create_files_preallocates_size_plus_marker_and_is_idempotent() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = TargetSpec::Dir(tmp.path().into());
    let layout = plan_layout(&spec, &req(1, 2, 3 * MIB)).unwrap();
    create_files(&layout).unwrap();
    for d in &layout {
        let m = fs::metadata(&d.path).unwrap();
        assert_eq!(m.len(), 3 * MIB + MARKER_LEN);
        assert!(m.blocks() * 512 >= 3 * MIB + MARKER_LEN, "not allocated");
    }
    // Planning again finds the space already allocated, and creating again is a no-op.
    let again = plan_layout(&spec, &req(1, 2, 3 * MIB)).unwrap();
    assert_eq!(again, layout);
    create_files(&again).unwrap();
    // A longer existing file (an earlier, larger run) is not truncated.
    let small = plan_layout(&spec, &req(1, 1, MIB)).unwrap();
    create_files(&small).unwrap();
    assert_eq!(
        fs::metadata(&small[0].path).unwrap().len(),
        3 * MIB + MARKER_LEN
    );
}

#[test]
fn a_symlinked_disk_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    fs::write(&victim, b"keep").unwrap();
    let dir = tmp.path().join("t");
    fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("w000-d000.iofleet")).unwrap();
    let e = plan_layout(&TargetSpec::Dir(dir.clone()), &req(1, 1, MIB)).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    // Even with a hand-made layout, create and open never follow the link.
    let d = DiskLayout {
        worker: 0,
        disk: 0,
        path: dir.join("w000-d000.iofleet"),
        region_offset: 0,
        size: MIB,
        is_device: false,
    };
    assert!(create_files(std::slice::from_ref(&d)).is_err());
    assert!(open_disk(&d, false, true).is_err());
    assert_eq!(fs::read(&victim).unwrap(), b"keep");
}

#[test]
fn fill_writes_the_pattern_and_a_valid_marker() {
    let tmp = tempfile::tempdir().unwrap();
    // 2.5 MiB: the last chunk is shorter than 1 MiB.
    let size = 2 * MIB + 512 * 1024;
    let layout = plan_layout(&TargetSpec::Dir(tmp.path().into()), &req(1, 2, size)).unwrap();
    create_files(&layout).unwrap();
    let (random, zero) = (&layout[0], &layout[1]);

    assert!(!fill_marker_valid(random, FillPattern::Random).unwrap());
    assert_eq!(
        fill(random, FillPattern::Random, false).unwrap(),
        (FillOutcome::Done, size)
    );
    assert!(fill_marker_valid(random, FillPattern::Random).unwrap());
    assert!(!fill_marker_valid(random, FillPattern::Zero).unwrap());
    let data = fs::read(&random.path).unwrap();
    assert_eq!(data.len() as u64, size + MARKER_LEN);
    let (c0, c1) = (&data[..MIB as usize], &data[MIB as usize..2 * MIB as usize]);
    assert_ne!(c0, c1, "every chunk gets fresh random bytes");
    assert!(
        c0.iter().filter(|&&b| b == 0).count() < 10_000,
        "random data is mostly non-zero"
    );
    assert!(data[size as usize..].starts_with(b"IOFLEET-FILL-V1\0"));

    // Zero fill over a file that held other bytes.
    fs::write(&zero.path, vec![0xabu8; (size + MARKER_LEN) as usize]).unwrap();
    assert_eq!(
        fill(zero, FillPattern::Zero, false).unwrap().0,
        FillOutcome::Done
    );
    let data = fs::read(&zero.path).unwrap();
    assert!(data[..size as usize].iter().all(|&b| b == 0));
    assert!(fill_marker_valid(zero, FillPattern::Zero).unwrap());
    assert!(!fill_marker_valid(zero, FillPattern::Random).unwrap());
    // Worker/disk seeds differ, so disks never dedupe against each other.
    fill(zero, FillPattern::Random, false).unwrap();
    let a = fs::read(&random.path).unwrap();
    let b = fs::read(&zero.path).unwrap();
    assert_ne!(a[..4096], b[..4096]);
}

#[test]
fn fill_with_o_direct_where_the_filesystem_supports_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = req(1, 1, 2 * MIB);
    r.direct = true;
    let layout = match plan_layout(&TargetSpec::Dir(tmp.path().into()), &r) {
        Err(TargetError::DirectUnsupported(p)) => {
            let what = format!("{} has no O_DIRECT", p.display());
            need::environment(
                "fill_with_o_direct_where_the_filesystem_supports_it",
                &what,
                false,
            );
            return;
        }
        other => other.unwrap(),
    };
    create_files(&layout).unwrap();
    assert_eq!(
        fill(&layout[0], FillPattern::Random, true).unwrap().0,
        FillOutcome::Done
    );
    assert!(fill_marker_valid(&layout[0], FillPattern::Random).unwrap());
    let od = open_disk(&layout[0], true, false).unwrap();
    assert_eq!((od.region_offset, od.size), (0, 2 * MIB));

    // Through io_uring rings, O_DIRECT: the same bytes, marker included.
    let threads = fs::read(&layout[0].path).unwrap();
    fs::write(&layout[0].path, vec![0xee; threads.len()]).unwrap();
    let io = FillIo::Rings { depth: 4 };
    let (stop, progress) = (AtomicBool::new(false), AtomicU64::new(0));
    let out = fill_disk(&layout[0], FillPattern::Random, true, io, &stop, &progress).unwrap();
    assert_eq!(out, FillOutcome::Done);
    assert_eq!(progress.load(Ordering::Relaxed), 2 * MIB);
    assert!(fs::read(&layout[0].path).unwrap() == threads);
}

#[test]
fn marker_is_invalid_after_a_size_change() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = TargetSpec::Dir(tmp.path().into());
    let layout = plan_layout(&spec, &req(1, 1, 2 * MIB)).unwrap();
    create_files(&layout).unwrap();
    fill(&layout[0], FillPattern::Zero, false).unwrap();
    assert!(fill_marker_valid(&layout[0], FillPattern::Zero).unwrap());
    // Larger: the marker would live past the end of the file.
    let bigger = plan_layout(&spec, &req(1, 1, 3 * MIB)).unwrap();
    assert!(!fill_marker_valid(&bigger[0], FillPattern::Zero).unwrap());
    create_files(&bigger).unwrap();
    assert!(!fill_marker_valid(&bigger[0], FillPattern::Zero).unwrap());
    // Smaller: the "marker" position holds data.
    let smaller = plan_layout(&spec, &req(1, 1, MIB)).unwrap();
    assert!(!fill_marker_valid(&smaller[0], FillPattern::Zero).unwrap());
    // And the original layout is still valid.
    assert!(fill_marker_valid(&layout[0], FillPattern::Zero).unwrap());
    // A missing file has no marker.
    let other = plan_layout(&spec, &req(2, 1, MIB)).unwrap();
    assert!(!fill_marker_valid(&other[1], FillPattern::Zero).unwrap());
}

#[test]
fn an_interrupted_fill_writes_no_marker_and_clears_an_old_one() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = plan_layout(&TargetSpec::Dir(tmp.path().into()), &req(1, 1, 2 * MIB)).unwrap();
    create_files(&layout).unwrap();
    let d = &layout[0];
    let stop = AtomicBool::new(true);
    let progress = AtomicU64::new(0);
    let stopped = || {
        fill_disk(
            d,
            FillPattern::Random,
            false,
            FillIo::Threads(4),
            &stop,
            &progress,
        )
    };
    assert_eq!(stopped().unwrap(), FillOutcome::Interrupted);
    assert_eq!(progress.load(Ordering::Relaxed), 0);
    assert!(!fill_marker_valid(d, FillPattern::Random).unwrap());

    fill(d, FillPattern::Random, false).unwrap();
    assert!(fill_marker_valid(d, FillPattern::Random).unwrap());
    assert_eq!(stopped().unwrap(), FillOutcome::Interrupted);
    assert!(
        !fill_marker_valid(d, FillPattern::Random).unwrap(),
        "a refill that did not finish must not leave the old marker"
    );
}

#[test]
fn a_fill_stays_inside_its_region() {
    // A device-like layout inside one file: regions at 1 MiB strides.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("regions");
    let total = 4 * MIB;
    fs::write(&path, vec![0x5au8; total as usize]).unwrap();
    let d = DiskLayout {
        worker: 0,
        disk: 1,
        path: path.clone(),
        region_offset: MIB,
        size: MIB - MARKER_LEN,
        is_device: false,
    };
    assert_eq!(
        fill(&d, FillPattern::Zero, false).unwrap().0,
        FillOutcome::Done
    );
    assert!(fill_marker_valid(&d, FillPattern::Zero).unwrap());
    let data = fs::read(&path).unwrap();
    assert_eq!(data.len() as u64, total);
    assert!(
        data[..MIB as usize].iter().all(|&b| b == 0x5a),
        "region before touched"
    );
    assert!(
        data[2 * MIB as usize..].iter().all(|&b| b == 0x5a),
        "region after touched"
    );
    assert!(data[MIB as usize..(2 * MIB - MARKER_LEN) as usize]
        .iter()
        .all(|&b| b == 0));

    // Misaligned hand-made layouts are rejected, not half-written.
    let bad = DiskLayout {
        size: MIB - 512,
        ..d.clone()
    };
    let e = fill(&bad, FillPattern::Zero, false).unwrap_err();
    assert!(!e.is_input_error(), "{e}");
}

#[test]
fn o_direct_unsupported_is_an_input_error_naming_the_flag() {
    // procfs never supports O_DIRECT: the real open path maps EINVAL.
    let d = DiskLayout {
        worker: 0,
        disk: 0,
        path: PathBuf::from("/proc/version"),
        region_offset: 0,
        size: 4096,
        is_device: false,
    };
    let e = open_disk(&d, true, false).unwrap_err();
    assert!(matches!(e, TargetError::DirectUnsupported(_)), "{e:?}");
    assert!(e.is_input_error());
    let msg = e.to_string();
    assert!(
        msg.contains("--direct=false") && msg.contains("/proc/version"),
        "{msg}"
    );
    // Without O_DIRECT it opens fine.
    let od = open_disk(&d, false, false).unwrap();
    let mut b = [0u8; 5];
    od.file.read_exact_at(&mut b, 0).unwrap();
    assert_eq!(&b, b"Linux");
}

#[test]
fn o_direct_on_tmpfs() {
    // tmpfs gained O_DIRECT in Linux 6.6: on older kernels planning must refuse it up
    // front; on newer ones it must work.
    let shm = Path::new("/dev/shm");
    if !need::environment("o_direct_on_tmpfs", "no /dev/shm", shm.is_dir()) {
        return;
    }
    let tmp = tempfile::tempdir_in(shm).unwrap();
    let mut r = req(1, 1, MIB);
    r.direct = true;
    match plan_layout(&TargetSpec::Dir(tmp.path().into()), &r) {
        Err(e @ TargetError::DirectUnsupported(_)) => {
            assert!(e.to_string().contains("--direct=false"));
            assert!(files_in(tmp.path()).is_empty());
        }
        Ok(layout) => {
            eprintln!("note: this kernel's tmpfs supports O_DIRECT");
            create_files(&layout).unwrap();
            open_disk(&layout[0], true, true).unwrap();
        }
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn reads_through_an_open_disk_leave_the_access_time_alone() {
    // With relatime (the Linux default) a read updates an access time older than the
    // modification time; a disk opened with O_NOATIME leaves it.
    let tmp = tempfile::tempdir().unwrap();
    let layout = plan_layout(&TargetSpec::Dir(tmp.path().into()), &req(1, 1, 2 * MIB)).unwrap();
    create_files(&layout).unwrap();
    fill(&layout[0], FillPattern::Zero, false).unwrap();
    let old = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: 1_000_000_000,
            tv_nsec: 0,
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: 0,
            tv_nsec: rustix::fs::UTIME_OMIT,
        },
    };
    let path = &layout[0].path;
    rustix::fs::utimensat(rustix::fs::CWD, path, &old, rustix::fs::AtFlags::empty()).unwrap();
    let atime = || fs::metadata(path).unwrap().atime();
    assert_eq!(atime(), 1_000_000_000);
    let od = open_disk(&layout[0], false, false).unwrap();
    let mut buf = vec![0u8; 4096];
    od.file.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(atime(), 1_000_000_000, "the read changed the access time");
    // The same read through a plain descriptor does change it: the check above can fail.
    fs::File::open(path)
        .unwrap()
        .read_exact_at(&mut buf, 4096)
        .unwrap();
    assert_ne!(
        atime(),
        1_000_000_000,
        "this filesystem does not keep access times"
    );
}

#[test]
fn several_directories_take_the_disks_in_turn_and_share_a_filesystems_space() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = ["a", "b", "c"].iter().map(|n| tmp.path().join(n)).collect();
    for d in &dirs {
        fs::create_dir(d).unwrap();
    }
    // Classified from --target values: existing directories make a directories target;
    // a missing one, or a mix with a device, is refused.
    assert_eq!(
        TargetSpec::from_paths(&dirs).unwrap(),
        TargetSpec::Dirs(dirs.clone())
    );
    let with_missing = [dirs[0].clone(), tmp.path().join("nope")];
    let e = TargetSpec::from_paths(&with_missing).unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
    let file = tmp.path().join("f");
    fs::write(&file, b"x").unwrap();
    let e = TargetSpec::from_paths(&[dirs[0].clone(), file.clone()]).unwrap_err();
    assert!(
        e.to_string()
            .contains("every value must be an existing directory"),
        "{e}"
    );

    // 2 workers x 2 disks over 3 directories: disk k (worker-major) in directory k % 3.
    let spec = TargetSpec::Dirs(dirs.clone());
    let layout = plan_layout(&spec, &req(2, 2, 4 * MIB)).unwrap();
    let placed: Vec<(u32, u32, PathBuf)> = layout
        .iter()
        .map(|d| (d.worker, d.disk, d.path.parent().unwrap().to_path_buf()))
        .collect();
    assert_eq!(
        placed,
        vec![
            (0, 0, dirs[0].clone()),
            (0, 1, dirs[1].clone()),
            (1, 0, dirs[2].clone()),
            (1, 1, dirs[0].clone()),
        ]
    );
    assert!(layout.iter().all(|d| d.size == 4 * MIB && !d.is_device));
    create_files(&layout).unwrap();
    assert_eq!(
        files_in(&dirs[0]),
        ["w000-d000.iofleet", "w001-d001.iofleet"]
    );
    assert_eq!(files_in(&dirs[1]), ["w000-d001.iofleet"]);
    assert_eq!(files_in(&dirs[2]), ["w001-d000.iofleet"]);

    // Free space is counted per filesystem: three directories on one filesystem need
    // what all their files need together. Find a size each directory's share fits in
    // alone but the three shares together do not.
    let st = rustix::fs::statvfs(tmp.path()).unwrap();
    let avail = st.f_bavail * st.f_frsize;
    if st.f_blocks > 0 {
        // 3 workers x 1 disk: one file per directory, each 40% of the space.
        let size = (avail * 2 / 5) / 4096 * 4096;
        let one = plan_layout(&TargetSpec::Dir(dirs[0].clone()), &req(1, 1, size));
        assert!(one.is_ok(), "one file of 40% fits: {one:?}");
        let e = plan_layout(&spec, &req(3, 1, size)).unwrap_err();
        assert!(matches!(e, TargetError::NoSpace { .. }), "{e:?}");
    }
}
