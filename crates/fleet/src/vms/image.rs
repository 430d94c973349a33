//! A worker VM booted from a cloud image (`[vms.guest] image`): the image as
//! `qemu-img info` reads it (raw or qcow2, its virtual size), and per VM the two volumes
//! the launcher creates in the fleet's pool — `iofleet-NAME-I-boot`, a copy of the image
//! (its format and virtual size kept), and `iofleet-NAME-I-seed`, the NoCloud seed
//! (`nocloud`) that starts the VM's agent — each created and filled through the
//! `Hypervisor` (`vol-create`, then `vol-upload` from the controller), so that a remote
//! hypervisor gets them over its own connection. The domain boots from the copy with
//! the seed attached read-only (`xml::Boot::Image`): by the image's own boot loader, or
//! directly from a kernel (and initrd) on the hypervisor with the given command line.
//!
//! Not here: what the image must hold (docs/vms.md), the join and the rest of the
//! lifecycle (the launcher's, shared with the guest iofleet builds), removing the
//! volumes (the launcher's record of what it created, and `iofleet vms clean` by name).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::files::HostFiles;
use super::hypervisor::Hypervisor;
use super::nocloud::{self, Seed};
use super::xml::{self, Boot, Direct};
use super::{ImageGuest, VmFleet, VmSlot};
use crate::error::FleetError;

/// An image's format, as `qemu-img info` names it: the two a pool's volume takes as it
/// is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Raw,
    Qcow2,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Raw => "raw",
            Format::Qcow2 => "qcow2",
        }
    }
}

/// The image every VM of the fleet boots, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub path: PathBuf,
    pub format: Format,
    /// The disk the guest sees: each VM's copy has this capacity.
    pub virtual_bytes: u64,
    /// Booted directly: the kernel, initrd and command line on the hypervisor.
    pub kernel: Option<String>,
    pub initrd: Option<String>,
    pub cmdline: Option<String>,
    /// Each VM's seed volume's capacity (`nocloud::capacity` of this iofleet).
    pub seed_bytes: u64,
}

/// VM `domain`'s copy of the image, a volume of the pool.
pub fn boot_volume(domain: &str) -> String {
    format!("{domain}-boot")
}

/// VM `domain`'s NoCloud seed, a volume of the pool.
pub fn seed_volume(domain: &str) -> String {
    format!("{domain}-seed")
}

/// The format and virtual size in `qemu-img info --output=json`'s answer: raw or
/// qcow2, standing alone (a qcow2 with a backing file would be copied without it).
pub fn parse_info(json: &str) -> Result<(Format, u64), String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("qemu-img info's answer: {e}"))?;
    let format = match v["format"].as_str() {
        Some("raw") => Format::Raw,
        Some("qcow2") => Format::Qcow2,
        Some(other) => {
            return Err(format!(
                "a {other} image: iofleet copies raw and qcow2 images (qemu-img convert -O qcow2 makes one)"
            ))
        }
        None => return Err("qemu-img info names no format".into()),
    };
    if let Some(b) = v["backing-filename"].as_str() {
        return Err(format!(
            "it has a backing file ({b}), which its copies would not have: qemu-img convert -O qcow2 makes one that stands alone"
        ));
    }
    let bytes = v["virtual-size"]
        .as_u64()
        .filter(|b| *b > 0)
        .ok_or("qemu-img info names no virtual size")?;
    Ok((format, bytes))
}

/// A file on the hypervisor `key` names (where the hypervisor is this machine).
impl Image {
    /// The image `guest` names, its format and size read by `qemu-img info`, and the
    /// kernel and initrd it boots directly there; `agent_bytes`, the size of the agent
    /// its seeds carry. An error names the key.
    pub fn inspect(guest: &ImageGuest, agent_bytes: u64) -> Result<Image, FleetError> {
        let path = &guest.path;
        let bad = |e: String| FleetError::Input(format!("vms.guest.image: {path}: {e}"));
        if !Path::new(path).is_file() {
            return Err(bad("does not exist (or is not a file)".into()));
        }
        let o = Command::new("qemu-img")
            .args(["info", "--output=json", "-U", path])
            .output()
            .map_err(|e| {
                bad(format!(
                    "qemu-img (Debian's qemu-utils) reads its format: {e}"
                ))
            })?;
        if !o.status.success() {
            return Err(bad(format!(
                "qemu-img info: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )));
        }
        let (format, virtual_bytes) =
            parse_info(&String::from_utf8_lossy(&o.stdout)).map_err(bad)?;
        let seed_bytes = nocloud::capacity(agent_bytes)
            .map_err(|e| FleetError::Setup(format!("vms: the seed: {e}")))?;
        Ok(Image {
            path: PathBuf::from(path),
            format,
            virtual_bytes,
            kernel: guest.kernel.clone(),
            initrd: guest.initrd.clone(),
            cmdline: guest.cmdline.clone(),
            seed_bytes,
        })
    }

    /// The direct boot's kernel and initrd, files on the hypervisor: an error names the
    /// key and, through `files`, the hypervisor `name` where one is missing.
    pub fn check_direct_boot(&self, files: &dyn HostFiles, name: &str) -> Result<(), FleetError> {
        for (key, p) in [("kernel", &self.kernel), ("initrd", &self.initrd)] {
            let Some(p) = p else { continue };
            match files.is_file(Path::new(p)) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(FleetError::Input(format!(
                    "vms.guest.{key}: {p} does not exist on hypervisor {name} (or is not a file)"
                )))
                }
                Err(e) => {
                    return Err(FleetError::Setup(format!(
                        "vms.guest.{key}: {p} on hypervisor {name}: {e}"
                    )))
                }
            }
        }
        Ok(())
    }

    /// VM `domain`'s volumes before its data disks: (name, capacity, XML) of its copy
    /// of the image and of its seed.
    pub fn volumes(&self, domain: &str) -> [(String, u64, String); 2] {
        let boot = boot_volume(domain);
        let seed = seed_volume(domain);
        [
            (
                boot.clone(),
                self.virtual_bytes,
                xml::volume_xml_as(&boot, self.virtual_bytes, self.format.name()),
            ),
            (
                seed.clone(),
                self.seed_bytes,
                xml::volume_xml(&seed, self.seed_bytes),
            ),
        ]
    }

    /// The domain of `slot`, booting from its copy of the image with its seed.
    pub fn domain_xml(&self, fleet: &VmFleet, slot: &VmSlot, domain_type: &str) -> String {
        let (disk, seed) = (boot_volume(&slot.domain), seed_volume(&slot.domain));
        let direct = self.kernel.as_deref().map(|kernel| Direct {
            kernel,
            initrd: self.initrd.as_deref(),
            cmdline: self.cmdline.as_deref(),
        });
        xml::domain_xml(
            fleet,
            slot,
            domain_type,
            &Boot::Image {
                disk: &disk,
                format: self.format.name(),
                seed: &seed,
                direct,
            },
        )
    }

    /// The guest, as the result and the messages name it.
    pub fn describe(&self) -> String {
        let how = match (&self.kernel, &self.initrd) {
            (None, _) => "by its boot loader".to_string(),
            (Some(k), None) => format!("directly from kernel {k}"),
            (Some(k), Some(i)) => format!("directly from kernel {k} and initrd {i}"),
        };
        format!(
            "image {} ({}, {} MiB) with iofleet's NoCloud seed, booted {how}",
            self.path.display(),
            self.format.name(),
            self.virtual_bytes >> 20
        )
    }

    /// Create VM `domain`'s copy of the image and its seed in `pool` of `hv` and fill
    /// them; `created` learns each volume as soon as it exists (so that a failure
    /// after it still removes it). A kept VM's (`kept`) copy stays as its guest left
    /// it; its seed, which holds the command's token, is made again.
    pub fn create(
        &self,
        hv: &dyn Hypervisor,
        pool: &str,
        seed: &Seed<'_>,
        kept: bool,
        created: &mut dyn FnMut(String),
    ) -> Result<(), FleetError> {
        let setup =
            |v: &str, e: String| FleetError::Setup(format!("vms.pool: '{pool}': volume {v}: {e}"));
        let [(boot, _, boot_xml), (seed_name, seed_cap, seed_xml)] = self.volumes(seed.domain);
        if kept {
            created(boot.clone());
            hv.delete_volume(pool, &seed_name)
                .map_err(|e| setup(&seed_name, e))?;
        } else {
            hv.create_volume(pool, &boot_xml)
                .map_err(|e| setup(&boot, e))?;
            created(boot.clone());
            hv.upload_volume(pool, &boot, &self.path)
                .map_err(|e| setup(&boot, e))?;
        }
        hv.create_volume(pool, &seed_xml)
            .map_err(|e| setup(&seed_name, e))?;
        created(seed_name.clone());
        let file = SeedFile::write(seed, seed_cap).map_err(|e| setup(&seed_name, e))?;
        hv.upload_volume(pool, &seed_name, &file.0)
            .map_err(|e| setup(&seed_name, e))
    }
}

/// A seed written to a file of the controller's temp dir for its upload, readable by
/// its owner only (it holds the join token), removed when dropped.
struct SeedFile(PathBuf);

impl SeedFile {
    fn write(seed: &Seed<'_>, capacity: u64) -> Result<SeedFile, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = std::env::temp_dir().join(format!(
            "iofleet-seed-{}-{}",
            std::process::id(),
            seed.domain
        ));
        let _ = std::fs::remove_file(&path);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let out = SeedFile(path);
        let mut w = std::io::BufWriter::new(file);
        let n = seed.write(&mut w)?;
        w.flush().map_err(|e| format!("{}: {e}", out.0.display()))?;
        if n > capacity {
            return Err(format!(
                "the seed takes {n} bytes, more than the {capacity} planned"
            ));
        }
        Ok(out)
    }
}

impl Drop for SeedFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vms::files::Local;

    #[test]
    fn qemu_img_info_gives_the_format_and_virtual_size() {
        let qcow2 = r#"{"virtual-size": 3145728, "filename": "/i.qcow2", "format": "qcow2", "actual-size": 200704}"#;
        assert_eq!(parse_info(qcow2), Ok((Format::Qcow2, 3 << 20)));
        let raw = r#"{"virtual-size": 4096, "format": "raw"}"#;
        assert_eq!(parse_info(raw), Ok((Format::Raw, 4096)));
        for (json, says) in [
            (r#"{"virtual-size": 1, "format": "vmdk"}"#, "a vmdk image"),
            (
                r#"{"virtual-size": 1, "format": "qcow2", "backing-filename": "base.qcow2"}"#,
                "backing file (base.qcow2)",
            ),
            (r#"{"format": "raw"}"#, "no virtual size"),
            (r#"{"virtual-size": 1}"#, "no format"),
            ("not json", "qemu-img info's answer"),
        ] {
            let e = parse_info(json).unwrap_err();
            assert!(e.contains(says), "{json}: {e}");
        }
    }

    /// Another machine's files: only these paths are files there.
    struct Elsewhere(Vec<String>);

    impl HostFiles for Elsewhere {
        fn write(&self, _: &Path, _: &[u8]) -> Result<(), String> {
            Err("read-only".into())
        }
        fn remove(&self, _: &Path) -> Result<(), String> {
            Err("read-only".into())
        }
        fn is_file(&self, path: &Path) -> Result<bool, String> {
            Ok(self.0.iter().any(|p| Path::new(p) == path))
        }
        fn list(&self, _: &Path) -> Result<Vec<String>, String> {
            Ok(Vec::new())
        }
        fn tail(&self, _: &Path, _: usize) -> Option<String> {
            None
        }
        fn connect(
            &self,
            socket: &Path,
            _: &str,
        ) -> Result<std::os::unix::net::UnixStream, String> {
            Err(format!("{}: not here", socket.display()))
        }
    }

    fn guest(path: &str) -> ImageGuest {
        ImageGuest {
            path: path.into(),
            kernel: None,
            initrd: None,
            cmdline: None,
        }
    }

    #[test]
    fn an_image_is_read_by_qemu_img_and_its_files_must_exist() {
        let e = Image::inspect(&guest("/nonexistent/i.qcow2"), 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("vms.guest.image: /nonexistent/i.qcow2: does not exist"),
            "{e}"
        );
        // qemu-img (Debian's qemu-utils, which ./test.sh and .ci/run install with QEMU)
        // reads the images below.
        Command::new("qemu-img")
            .arg("--version")
            .output()
            .expect("qemu-img (Debian's qemu-utils) reads the test images: install it");
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("i.qcow2");
        let o = Command::new("qemu-img")
            .args(["create", "-q", "-f", "qcow2"])
            .arg(&img)
            .arg("3M")
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        let mut g = guest(img.to_str().unwrap());
        let i = Image::inspect(&g, 10 << 20).unwrap();
        assert_eq!((i.format, i.virtual_bytes), (Format::Qcow2, 3 << 20));
        assert_eq!(i.seed_bytes, nocloud::capacity(10 << 20).unwrap());
        let [(boot, bytes, x), (seed, _, sx)] = i.volumes("iofleet-a-1");
        assert_eq!((boot.as_str(), bytes), ("iofleet-a-1-boot", 3 << 20));
        assert!(x.contains("<format type='qcow2'/>"), "{x}");
        assert_eq!(seed, "iofleet-a-1-seed");
        assert!(sx.contains("<format type='raw'/>"), "{sx}");
        assert!(i.describe().contains("(qcow2, 3 MiB)"), "{}", i.describe());
        // The direct boot's files are the hypervisor's: asked of its files, here or
        // over ssh, and an error names the key and the hypervisor.
        g.kernel = Some("/nonexistent/vmlinuz".into());
        let i = Image::inspect(&g, 1).unwrap();
        let e = i
            .check_direct_boot(&Local, "qemu:///system")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("vms.guest.kernel: /nonexistent/vmlinuz does not exist on hypervisor qemu:///system"),
            "{e}"
        );
        let there = Elsewhere(vec!["/nonexistent/vmlinuz".into()]);
        i.check_direct_boot(&there, "qemu+ssh://kvm2/system")
            .unwrap();
        g.kernel = Some(img.to_str().unwrap().into());
        g.initrd = Some("/nonexistent/initrd".into());
        let i = Image::inspect(&g, 1).unwrap();
        let e = i.check_direct_boot(&Local, "here").unwrap_err().to_string();
        assert!(
            e.contains("vms.guest.initrd: /nonexistent/initrd does not exist on hypervisor here"),
            "{e}"
        );
        let e = i
            .check_direct_boot(&there, "qemu+ssh://kvm2/system")
            .unwrap_err()
            .to_string();
        assert!(e.contains("vms.guest.kernel:") && e.contains("kvm2"), "{e}");
        // Not an image qemu-img reads as raw or qcow2: a directory is not a file.
        let e = Image::inspect(&guest(d.path().to_str().unwrap()), 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("vms.guest.image:"), "{e}");
        let vmdk = d.path().join("i.vmdk");
        let o = Command::new("qemu-img")
            .args(["create", "-q", "-f", "vmdk"])
            .arg(&vmdk)
            .arg("1M")
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        let e = Image::inspect(&guest(vmdk.to_str().unwrap()), 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("vms.guest.image:") && e.contains("a vmdk image"),
            "{e}"
        );
    }
}
