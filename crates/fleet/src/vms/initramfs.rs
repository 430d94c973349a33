//! The guest iofleet brings itself: an initramfs made of the running iofleet binary (its
//! own `/init`), the shared libraries it links, the kernel modules a guest needs to see
//! its virtio disks and channel, and the join file of the command — booted directly
//! with a kernel of the hypervisor, so no guest image is downloaded and a guest joins
//! seconds after it starts.
//!
//! The archive is the kernel's "newc" cpio format, uncompressed (the kernel takes it as
//! it is; gzip would only save a copy's disk space on the hypervisor). Modules are
//! taken from `/lib/modules/VERSION` of the kernel's version, in dependency order
//! from `modules.dep`; a driver built into the kernel (`modules.builtin`) is skipped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The drivers a guest needs: virtio over PCI, the channel (virtio-serial console
/// ports), and both disk buses (virtio-blk, virtio-scsi with SCSI disks).
pub const GUEST_DRIVERS: [&str; 5] = [
    "virtio_pci",
    "virtio_console",
    "virtio_blk",
    "virtio_scsi",
    "sd_mod",
];

/// Where things live in the guest's root.
pub const MODULES_DIR: &str = "iofleet/modules";
/// The modules' load order, one file name per line.
pub const MODULES_ORDER: &str = "iofleet/modules.order";
/// The command's join file (token and fingerprint), readable by root only.
pub const JOIN_FILE: &str = "iofleet/join.json";

/// A module's name as modules.dep and modules.builtin write it (`virtio_pci` for
/// `kernel/drivers/virtio/virtio_pci.ko.xz`; `-` and `_` are the same to the kernel).
fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

/// The modules to load for `wanted`, dependencies first, as paths relative to the
/// modules directory; drivers built into the kernel are left out. `dep` is
/// modules.dep's text, `builtin` modules.builtin's. A wanted driver that is neither
/// a module nor built in is an error naming it.
pub fn module_order(dep: &str, builtin: &str, wanted: &[&str]) -> Result<Vec<String>, String> {
    let builtin: BTreeSet<String> = builtin.lines().map(module_name).collect();
    let mut deps: std::collections::BTreeMap<String, (String, Vec<String>)> =
        std::collections::BTreeMap::new();
    for line in dep.lines() {
        let Some((m, rest)) = line.split_once(':') else {
            continue;
        };
        deps.insert(
            module_name(m),
            (
                m.trim().to_string(),
                rest.split_whitespace().map(str::to_string).collect(),
            ),
        );
    }
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    fn visit(
        name: &str,
        deps: &std::collections::BTreeMap<String, (String, Vec<String>)>,
        seen: &mut BTreeSet<String>,
        order: &mut Vec<String>,
        depth: usize,
    ) {
        if depth > 64 || !seen.insert(name.to_string()) {
            return;
        }
        if let Some((path, ds)) = deps.get(name) {
            for d in ds {
                visit(&module_name(d), deps, seen, order, depth + 1);
            }
            order.push(path.clone());
        }
    }
    for w in wanted {
        let w = w.replace('-', "_");
        if builtin.contains(&w) {
            continue;
        }
        if !deps.contains_key(&w) {
            return Err(format!(
                "the guest kernel has no driver {w} (neither a module in modules.dep nor built in)"
            ));
        }
        visit(&w, &deps, &mut seen, &mut order, 0);
    }
    Ok(order)
}

/// One file of the archive: its path in the guest (no leading `/`), mode and bytes; a
/// directory or symbolic link has its own kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir {
        path: String,
    },
    File {
        path: String,
        mode: u32,
        data: Vec<u8>,
    },
    Symlink {
        path: String,
        target: String,
    },
}

/// The entries as a newc cpio archive (with its trailer), as the kernel unpacks it.
pub fn newc(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ino = 1u32;
    let mut put = |out: &mut Vec<u8>, path: &str, mode: u32, data: &[u8]| {
        let name_len = path.len() + 1;
        let header = format!(
            "070701{ino:08x}{mode:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{name_len:08x}{:08x}",
            0, // uid
            0, // gid
            1, // nlink
            0, // mtime
            data.len(),
            0, // devmajor
            0, // devminor
            0, // rdevmajor
            0, // rdevminor
            0, // check
        );
        ino += 1;
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(path.as_bytes());
        out.push(0);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
        out.extend_from_slice(data);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    };
    for e in entries {
        match e {
            Entry::Dir { path } => put(&mut out, path, 0o040755, &[]),
            Entry::File { path, mode, data } => {
                put(&mut out, path, 0o100000 | (mode & 0o7777), data)
            }
            Entry::Symlink { path, target } => put(&mut out, path, 0o120777, target.as_bytes()),
        }
    }
    put(&mut out, "TRAILER!!!", 0, &[]);
    out
}

/// Every directory above `path` (`a`, `a/b` for `a/b/c`), for the archive to create
/// before the file.
fn parents(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut acc = String::new();
    let parts: Vec<&str> = path.split('/').collect();
    for p in &parts[..parts.len().saturating_sub(1)] {
        if !acc.is_empty() {
            acc.push('/');
        }
        acc.push_str(p);
        out.push(acc.clone());
    }
    out
}

/// What goes into a guest's initramfs.
pub struct Contents<'a> {
    /// The iofleet binary (the guest's `/init` and its agent).
    pub iofleet: &'a [u8],
    /// Shared libraries it links: (path in the guest, e.g. `lib/x86_64-linux-gnu/libc.so.6`, bytes).
    pub libs: Vec<(String, Vec<u8>)>,
    /// Kernel modules in load order: (file name, bytes).
    pub modules: Vec<(String, Vec<u8>)>,
    /// The join file's bytes.
    pub join: &'a [u8],
}

/// The archive: `/init` → `/bin/iofleet`, the libraries, the modules with their
/// order, the join file (mode 0600), and the mount points the init uses.
pub fn archive(c: &Contents<'_>) -> Vec<u8> {
    let mut entries = Vec::new();
    let mut dirs = BTreeSet::new();
    let mut add_dirs = |path: &str, entries: &mut Vec<Entry>| {
        for d in parents(path) {
            if dirs.insert(d.clone()) {
                entries.push(Entry::Dir { path: d });
            }
        }
    };
    for d in ["dev", "proc", "sys", "tmp"] {
        add_dirs(&format!("{d}/x"), &mut entries);
    }
    add_dirs("bin/iofleet", &mut entries);
    entries.push(Entry::File {
        path: "bin/iofleet".into(),
        mode: 0o755,
        data: c.iofleet.to_vec(),
    });
    entries.push(Entry::Symlink {
        path: "init".into(),
        target: "/bin/iofleet".into(),
    });
    for (path, data) in &c.libs {
        add_dirs(path, &mut entries);
        entries.push(Entry::File {
            path: path.clone(),
            mode: 0o755,
            data: data.clone(),
        });
    }
    let mut order = String::new();
    for (name, data) in &c.modules {
        let path = format!("{MODULES_DIR}/{name}");
        add_dirs(&path, &mut entries);
        entries.push(Entry::File {
            path,
            mode: 0o644,
            data: data.clone(),
        });
        order.push_str(name);
        order.push('\n');
    }
    add_dirs(MODULES_ORDER, &mut entries);
    entries.push(Entry::File {
        path: MODULES_ORDER.into(),
        mode: 0o644,
        data: order.into_bytes(),
    });
    entries.push(Entry::File {
        path: JOIN_FILE.into(),
        mode: 0o600,
        data: c.join.to_vec(),
    });
    newc(&entries)
}

/// The shared libraries `binary` loads, as `ldd` finds them on this machine: (path in
/// the guest, path here). The dynamic loader is one of them.
pub fn linked_libraries(binary: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let o = std::process::Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| {
            format!(
                "cannot run ldd to find what {} links: {e}",
                binary.display()
            )
        })?;
    let text = String::from_utf8_lossy(&o.stdout);
    if text.contains("not a dynamic executable") || text.contains("statically linked") {
        return Ok(Vec::new());
    }
    if !o.status.success() {
        return Err(format!(
            "ldd {}: {}",
            binary.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` or
        // `/lib64/ld-linux-x86-64.so.2 (0x...)`; the vDSO has no file.
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line
                .split_whitespace()
                .next()
                .filter(|p| p.starts_with('/')),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            out.push((p.trim_start_matches('/').to_string(), PathBuf::from(p)));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEP: &str = "\
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/char/virtio_console.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/scsi/virtio_scsi.ko: kernel/drivers/scsi/scsi_mod.ko kernel/drivers/scsi/scsi_common.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/scsi/sd_mod.ko: kernel/drivers/scsi/scsi_mod.ko kernel/drivers/scsi/scsi_common.ko
kernel/drivers/scsi/scsi_mod.ko: kernel/drivers/scsi/scsi_common.ko
kernel/drivers/scsi/scsi_common.ko:
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_ring.ko:
";

    /// Each module comes after every module it needs, once, and built-in drivers are
    /// not loaded.
    #[test]
    fn modules_load_after_what_they_need_and_built_ins_are_skipped() {
        let order = module_order(DEP, "", &GUEST_DRIVERS).unwrap();
        let names: Vec<String> = order.iter().map(|p| module_name(p)).collect();
        let at = |m: &str| names.iter().position(|n| n == m).unwrap();
        assert_eq!(names.len(), 11, "{names:?}");
        for (before, after) in [
            ("virtio_ring", "virtio"),
            ("virtio", "virtio_pci"),
            ("virtio_pci_modern_dev", "virtio_pci"),
            ("virtio_pci_legacy_dev", "virtio_pci"),
            ("virtio", "virtio_console"),
            ("scsi_common", "scsi_mod"),
            ("scsi_mod", "virtio_scsi"),
            ("scsi_mod", "sd_mod"),
        ] {
            assert!(at(before) < at(after), "{before} before {after}: {names:?}");
        }
        let built_in = "kernel/drivers/scsi/scsi_mod.ko\nkernel/drivers/scsi/sd_mod.ko\n";
        let order = module_order(DEP, built_in, &["sd_mod", "virtio-blk"]).unwrap();
        assert_eq!(
            order,
            [
                "kernel/drivers/virtio/virtio_ring.ko",
                "kernel/drivers/virtio/virtio.ko",
                "kernel/drivers/block/virtio_blk.ko"
            ]
        );
        let e = module_order(DEP, "", &["nvme"]).unwrap_err();
        assert!(e.contains("no driver nvme"), "{e}");
    }

    /// The archive is what the system's own cpio reads back, names and bytes.
    #[test]
    fn the_archive_is_newc_as_cpio_reads_it() {
        let a = archive(&Contents {
            iofleet: b"\x7fELF...",
            libs: vec![("lib64/ld-linux-x86-64.so.2".into(), b"ld".to_vec())],
            modules: vec![("virtio.ko".into(), b"mod".to_vec())],
            join: b"{\"token\":\"t\"}",
        });
        assert!(a.len().is_multiple_of(4));
        let d = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("cpio")
            .args(["-idm", "--quiet"])
            .current_dir(d.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("cpio (Debian's cpio) reads the archive back");
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&a).unwrap();
        assert!(child.wait().unwrap().success());
        let r = |p: &str| std::fs::read(d.path().join(p)).unwrap();
        assert_eq!(r("bin/iofleet"), b"\x7fELF...");
        assert_eq!(r("lib64/ld-linux-x86-64.so.2"), b"ld");
        assert_eq!(r("iofleet/modules/virtio.ko"), b"mod");
        assert_eq!(r("iofleet/modules.order"), b"virtio.ko\n");
        assert_eq!(
            std::fs::read_link(d.path().join("init")).unwrap(),
            PathBuf::from("/bin/iofleet")
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| {
            std::fs::metadata(d.path().join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(JOIN_FILE), 0o600);
        assert_eq!(mode("bin/iofleet"), 0o755);
        assert!(d.path().join("proc").is_dir() && d.path().join("dev").is_dir());
    }

    #[test]
    fn the_libraries_of_this_test_binary_are_found() {
        let me = std::env::current_exe().unwrap();
        let libs = linked_libraries(&me).unwrap();
        assert!(libs.iter().any(|(g, _)| g.contains("libc.so")), "{libs:?}");
        assert!(libs
            .iter()
            .all(|(g, h)| !g.starts_with('/') && h.is_absolute()));
    }
}
