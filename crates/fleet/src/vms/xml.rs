//! The libvirt XML of a VM fleet: each data disk's volume in the pool, and each guest's
//! domain. Written by hand (a few elements, every value escaped); the tests and
//! `run --dry-run`'s test check the documents against libvirt's own schemas with
//! `virt-xml-validate`.
//!
//! Facts of libvirt 9.0 with QEMU 10 the domain follows: `<features><acpi/></features>`
//! is required (else QEMU refuses libvirt's `-no-acpi`); a channel's Unix socket is
//! placed by libvirt (`/var/lib/libvirt/qemu/channel/target/domain-N-NAME/`), so no
//! path is given here and the launcher reads the real one from the live domain's XML.

use super::{Bus, VmFleet, VmSlot, CHANNEL_NAME};

/// `text` with XML's five special characters escaped (attribute or element content).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The XML namespace of iofleet's metadata in a domain.
pub const METADATA_NS: &str = "https://iofleet.dev/xmlns/vms/1";

/// A data disk's volume in the pool: raw, `bytes` long, allocated as the pool does
/// (sparse where it can; the fill writes every block before a measured run).
pub fn volume_xml(name: &str, bytes: u64) -> String {
    volume_xml_as(name, bytes, "raw")
}

/// A volume of `format` (`raw` or `qcow2`) and `bytes` of capacity in the pool.
pub fn volume_xml_as(name: &str, bytes: u64, format: &str) -> String {
    format!(
        "<volume>\n  <name>{}</name>\n  <capacity unit='bytes'>{bytes}</capacity>\n  <target>\n    <format type='{}'/>\n  </target>\n</volume>\n",
        escape(name),
        escape(format)
    )
}

/// How the guest boots: directly from a kernel and iofleet's initramfs, or from a disk
/// image with a cloud-init seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Boot<'a> {
    Kernel {
        kernel: &'a str,
        initrd: &'a str,
        cmdline: &'a str,
    },
    Image {
        /// The VM's copy of the image: a volume of the fleet's pool, and its format
        /// (`raw` or `qcow2`).
        disk: &'a str,
        format: &'a str,
        /// The NoCloud seed's volume (`nocloud::Seed::write`), attached read-only.
        seed: &'a str,
        /// Booted directly from a kernel on the hypervisor (with its initrd and command
        /// line), else by the image's own boot loader.
        direct: Option<Direct<'a>>,
    },
}

/// A kernel booted directly, with an initrd and a command line when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Direct<'a> {
    pub kernel: &'a str,
    pub initrd: Option<&'a str>,
    pub cmdline: Option<&'a str>,
}

/// The domain's names of an image guest's boot disk and seed: past every data disk's
/// (`vda`…`vdx`, `MAX_DISKS`).
pub const BOOT_DEV: &str = "vdz";
pub const SEED_DEV: &str = "vdy";

/// The guest's disk name for data disk `k` on `bus` (`vda`…, `sda`…), 0 ≤ k < 26.
pub fn target_dev(bus: Bus, k: u32) -> String {
    let prefix = match bus {
        Bus::VirtioBlk => "vd",
        Bus::VirtioScsi => "sd",
    };
    format!("{prefix}{}", (b'a' + (k % 26) as u8) as char)
}

/// The serial a data disk shows the guest (`/sys/block/*/serial`, `/dev/disk/by-id`),
/// so the agent finds disk K whatever name the guest's kernel gave it.
pub fn disk_serial(k: u32) -> String {
    format!("iofleet-d{k}")
}

/// The domain of `slot`: `domain_type` is `kvm` or `qemu`.
pub fn domain_xml(fleet: &VmFleet, slot: &VmSlot, domain_type: &str, boot: &Boot<'_>) -> String {
    let mut x = String::new();
    let kib = fleet.memory_bytes / 1024;
    x.push_str(&format!("<domain type='{}'>\n", escape(domain_type)));
    x.push_str(&format!("  <name>{}</name>\n", escape(&slot.domain)));
    x.push_str(&format!(
        "  <metadata>\n    <iofleet:vm xmlns:iofleet='{METADATA_NS}' fleet='{}' index='{}'/>\n  </metadata>\n",
        escape(&fleet.name),
        slot.index
    ));
    x.push_str(&format!("  <memory unit='KiB'>{kib}</memory>\n"));
    x.push_str(&format!("  <vcpu>{}</vcpu>\n", fleet.vcpus));
    x.push_str("  <os>\n    <type arch='x86_64' machine='q35'>hvm</type>\n");
    match boot {
        Boot::Kernel {
            kernel,
            initrd,
            cmdline,
        } => {
            x.push_str(&format!("    <kernel>{}</kernel>\n", escape(kernel)));
            x.push_str(&format!("    <initrd>{}</initrd>\n", escape(initrd)));
            x.push_str(&format!("    <cmdline>{}</cmdline>\n", escape(cmdline)));
        }
        Boot::Image {
            direct: Some(d), ..
        } => {
            x.push_str(&format!("    <kernel>{}</kernel>\n", escape(d.kernel)));
            if let Some(i) = d.initrd {
                x.push_str(&format!("    <initrd>{}</initrd>\n", escape(i)));
            }
            if let Some(c) = d.cmdline {
                x.push_str(&format!("    <cmdline>{}</cmdline>\n", escape(c)));
            }
        }
        // The image's boot loader, from its disk (`<boot order='1'/>` there: libvirt
        // refuses `<os><boot dev=…/>` beside a device's boot order).
        Boot::Image { direct: None, .. } => {}
    }
    x.push_str("  </os>\n  <features>\n    <acpi/>\n  </features>\n");
    // A guest that stops is gone: nothing restarts it behind the run's back.
    x.push_str("  <on_poweroff>destroy</on_poweroff>\n  <on_reboot>destroy</on_reboot>\n  <on_crash>destroy</on_crash>\n");
    x.push_str("  <devices>\n");
    if let Boot::Image {
        disk,
        format,
        seed,
        direct,
    } = boot
    {
        let pool = escape(&fleet.pool);
        x.push_str(&format!(
            "    <disk type='volume' device='disk'>\n      <driver name='qemu' type='{}'/>\n      <source pool='{pool}' volume='{}'/>\n      <target dev='{BOOT_DEV}' bus='virtio'/>\n{}    </disk>\n",
            escape(format),
            escape(disk),
            if direct.is_none() {
                "      <boot order='1'/>\n"
            } else {
                ""
            }
        ));
        // The seed is a FAT file system of 512-byte sectors (`nocloud`): a disk, since a
        // CD-ROM's 2048-byte sectors cannot hold it.
        x.push_str(&format!(
            "    <disk type='volume' device='disk'>\n      <driver name='qemu' type='raw'/>\n      <source pool='{pool}' volume='{}'/>\n      <target dev='{SEED_DEV}' bus='virtio'/>\n      <readonly/>\n    </disk>\n",
            escape(seed)
        ));
    }
    if fleet.bus == Bus::VirtioScsi {
        x.push_str(&format!(
            "    <controller type='scsi' index='0' model='virtio-scsi'>\n      <driver queues='{}'/>\n    </controller>\n",
            fleet.queues
        ));
    }
    for (k, vol) in slot.volumes.iter().enumerate() {
        let k = k as u32;
        let (bus, queues) = match fleet.bus {
            Bus::VirtioBlk => ("virtio", format!(" queues='{}'", fleet.queues)),
            Bus::VirtioScsi => ("scsi", String::new()),
        };
        x.push_str(&format!(
            "    <disk type='volume' device='disk'>\n      <driver name='qemu' type='raw' cache='{}' io='{}'{queues}/>\n      <source pool='{}' volume='{}'/>\n      <target dev='{}' bus='{bus}'/>\n      <serial>{}</serial>\n    </disk>\n",
            fleet.cache.name(),
            fleet.io.name(),
            escape(&fleet.pool),
            escape(vol),
            target_dev(fleet.bus, k),
            disk_serial(k),
        ));
    }
    x.push_str("    <controller type='virtio-serial' index='0'/>\n");
    x.push_str(&format!(
        "    <channel type='unix'>\n      <source mode='bind'/>\n      <target type='virtio' name='{CHANNEL_NAME}'/>\n    </channel>\n"
    ));
    // The guest's console, kept by libvirt's log daemon (read when a guest fails to join).
    x.push_str("    <serial type='pty'>\n      <target port='0'/>\n    </serial>\n");
    x.push_str(
        "    <console type='pty'>\n      <target type='serial' port='0'/>\n    </console>\n",
    );
    x.push_str("    <memballoon model='none'/>\n");
    x.push_str("  </devices>\n</domain>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn fleet(extra: &str) -> VmFleet {
        parse(&format!("[vms]\nname = \"t\"\nvms = 2\n{extra}")).unwrap()
    }

    /// `doc` checked against libvirt's schema for `kind` by `virt-xml-validate`
    /// (libvirt-clients, which ./test.sh and .ci/run install).
    fn validate(kind: &str, doc: &str) {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join(format!("{kind}.xml"));
        std::fs::write(&f, doc).unwrap();
        let o = std::process::Command::new("virt-xml-validate")
            .arg(&f)
            .arg(kind)
            .output()
            .expect("virt-xml-validate (Debian's libvirt-clients) checks the XML: install it");
        assert!(
            o.status.success(),
            "{}{}\n{doc}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }

    #[test]
    fn values_are_escaped() {
        assert_eq!(escape("a<b>&'\""), "a&lt;b&gt;&amp;&apos;&quot;");
        let v = volume_xml("x&y", 4096);
        assert!(v.contains("<name>x&amp;y</name>"), "{v}");
        assert!(v.contains("<capacity unit='bytes'>4096</capacity>"), "{v}");
    }

    #[test]
    fn a_virtio_blk_domain_has_each_disk_with_its_modes_serial_and_the_channel() {
        let f = fleet("vcpus = 2\nmemory = \"1g\"\npool = \"p1\"\nqueues = 2");
        let slot = &f.layout(2)[1];
        let x = domain_xml(
            &f,
            slot,
            "qemu",
            &Boot::Kernel {
                kernel: "/boot/vmlinuz",
                initrd: "/var/lib/iofleet/i.img",
                cmdline: "console=ttyS0 quiet",
            },
        );
        assert!(x.starts_with("<domain type='qemu'>"), "{x}");
        assert!(x.contains("<name>iofleet-t-1</name>"), "{x}");
        assert!(x.contains("<memory unit='KiB'>1048576</memory>"), "{x}");
        assert!(x.contains("<vcpu>2</vcpu>"), "{x}");
        assert!(x.contains("<acpi/>"), "{x}");
        for k in 0..2 {
            assert!(
                x.contains(&format!("<source pool='p1' volume='iofleet-t-1-d{k}'/>")),
                "{x}"
            );
            assert!(x.contains(&format!("<serial>iofleet-d{k}</serial>")), "{x}");
        }
        assert!(x.contains("<target dev='vdb' bus='virtio'/>"), "{x}");
        assert!(x.contains("cache='none' io='native' queues='2'"), "{x}");
        assert!(x.contains(&format!("name='{CHANNEL_NAME}'")), "{x}");
        validate("domain", &x);
        validate("storagevol", &volume_xml(&slot.volumes[0], 1 << 30));
    }

    #[test]
    fn a_virtio_scsi_domain_from_an_image_has_one_controller_with_the_queues() {
        let f = fleet("bus = \"virtio-scsi\"\nqueues = 4\ncache = \"directsync\"\npool = \"p1\"");
        let slot = &f.layout(3)[0];
        let x = domain_xml(
            &f,
            slot,
            "kvm",
            &Boot::Image {
                disk: "iofleet-t-0-boot",
                format: "qcow2",
                seed: "iofleet-t-0-seed",
                direct: None,
            },
        );
        assert_eq!(x.matches("model='virtio-scsi'").count(), 1, "{x}");
        assert!(x.contains("<driver queues='4'/>"), "{x}");
        assert!(x.contains("<target dev='sdc' bus='scsi'/>"), "{x}");
        assert!(x.contains("cache='directsync' io='native'/>"), "{x}");
        assert!(
            x.contains("<driver name='qemu' type='qcow2'/>\n      <source pool='p1' volume='iofleet-t-0-boot'/>\n      <target dev='vdz' bus='virtio'/>\n      <boot order='1'/>"),
            "the copy of the image, booted by its boot loader: {x}"
        );
        assert!(!x.contains("<kernel>") && !x.contains("<boot dev="), "{x}");
        assert!(
            x.contains("<source pool='p1' volume='iofleet-t-0-seed'/>\n      <target dev='vdy' bus='virtio'/>\n      <readonly/>"),
            "the seed, a read-only disk: {x}"
        );
        assert!(!x.contains("cdrom"), "{x}");
        validate("domain", &x);
        validate(
            "storagevol",
            &volume_xml_as("iofleet-t-0-boot", 1 << 30, "qcow2"),
        );
    }

    #[test]
    fn an_image_booted_directly_has_its_kernel_and_no_boot_order() {
        let f = fleet("");
        let slot = &f.layout(1)[1];
        let x = domain_xml(
            &f,
            slot,
            "qemu",
            &Boot::Image {
                disk: "iofleet-t-1-boot",
                format: "raw",
                seed: "iofleet-t-1-seed",
                direct: Some(Direct {
                    kernel: "/var/tmp/img/vmlinuz",
                    initrd: Some("/var/tmp/img/initrd.img"),
                    cmdline: Some("root=LABEL=iofleet-root console=ttyS0 a<b"),
                }),
            },
        );
        assert!(x.contains("<kernel>/var/tmp/img/vmlinuz</kernel>\n    <initrd>/var/tmp/img/initrd.img</initrd>\n    <cmdline>root=LABEL=iofleet-root console=ttyS0 a&lt;b</cmdline>"), "{x}");
        assert!(!x.contains("<boot "), "{x}");
        assert!(
            x.contains("<driver name='qemu' type='raw'/>\n      <source pool='default' volume='iofleet-t-1-boot'/>"),
            "{x}"
        );
        validate("domain", &x);
        let bare = domain_xml(
            &f,
            slot,
            "qemu",
            &Boot::Image {
                disk: "iofleet-t-1-boot",
                format: "raw",
                seed: "iofleet-t-1-seed",
                direct: Some(Direct {
                    kernel: "/k",
                    initrd: None,
                    cmdline: None,
                }),
            },
        );
        assert!(bare.contains("<kernel>/k</kernel>\n  </os>"), "{bare}");
        assert!(
            !bare.contains("<initrd>") && !bare.contains("<cmdline>"),
            "{bare}"
        );
        validate("domain", &bare);
    }
}
