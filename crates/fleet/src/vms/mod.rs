//! A fleet of worker VMs: an inventory file with a `[vms]` table describes the guests
//! iofleet defines on KVM hosts through libvirt, each with data disks created in a
//! storage pool on the storage under test, instead of listing hosts (docs/vms.md). This
//! module reads and checks that description and lays the fleet out: which hypervisor
//! each VM goes to, its domain and volume names, and (`xml`) the libvirt XML of each.
//!
//! Names are known before anything exists (`iofleet-NAME-I` for VM I, its disks
//! `iofleet-NAME-I-dK`), so a dry run prints every domain and volume without contacting
//! a hypervisor.
//!
//! ```toml
//! [vms]
//! name = "bench"                      # domains iofleet-bench-0, iofleet-bench-1, ...
//! hypervisors = ["qemu:///system"]    # libvirt URIs (qemu+ssh://host/system)
//! vms = 4                             # or vms_per_host = 2
//! vcpus = 2
//! memory = "1g"
//! pool = "default"                    # the libvirt storage pool the data disks live in
//! disks = 2                           # data disks per VM (default: the profile's)
//! disk_size = "4g"                    # default: the profile's disk size
//! bus = "virtio-blk"                  # or "virtio-scsi"
//! cache = "none"                      # none, directsync, writethrough, writeback, unsafe
//! io = "native"                       # native, threads, io_uring
//! queues = 1                          # virtio queues per disk
//! domain_type = "auto"                # kvm, qemu (software emulation) or auto
//! spread = "even"                     # even: round robin over hypervisors; "fill"
//! keep = false                        # keep domains and volumes for the next run
//! boot_timeout = "5m"
//! [vms.guest]
//! kernel = "/boot/vmlinuz-6.1.0-57-cloud-amd64"   # default: the newest here (copied to each hypervisor)
//! # or image = "/var/lib/libvirt/images/debian-12.qcow2" (cloud-init NoCloud seed),
//! # booted by its own boot loader, or directly with kernel (and initrd, cmdline)
//! ```

pub mod files;
pub mod guest;
pub mod hypervisor;
pub mod image;
pub mod initramfs;
pub mod launcher;
pub mod luns;
pub mod nocloud;
pub mod remote;
pub mod xml;

use std::time::Duration;

use iofleet_profile::units::{parse_bytes, parse_duration};
use serde::Deserialize;

/// The channel every guest's agent joins over, as the guest sees it
/// (`/sys/class/virtio-ports/*/name`).
pub const CHANNEL_NAME: &str = "org.iofleet.join";
/// VMs in one fleet, at most.
pub const MAX_VMS: u32 = 4096;
/// Data disks per VM, at most (virtio-blk: one PCI slot each; a q35 machine has room).
pub const MAX_DISKS: u32 = 24;

/// How a data disk reaches the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Bus {
    /// One virtio-blk device per disk (`/dev/vdX`).
    #[serde(rename = "virtio-blk")]
    VirtioBlk,
    /// Disks behind one virtio-scsi controller per VM (`/dev/sdX`).
    #[serde(rename = "virtio-scsi")]
    VirtioScsi,
}

impl Bus {
    pub fn name(self) -> &'static str {
        match self {
            Bus::VirtioBlk => "virtio-blk",
            Bus::VirtioScsi => "virtio-scsi",
        }
    }
}

/// QEMU's cache mode for a disk (libvirt's `driver cache=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cache {
    None,
    Directsync,
    Writethrough,
    Writeback,
    Unsafe,
}

impl Cache {
    pub fn name(self) -> &'static str {
        match self {
            Cache::None => "none",
            Cache::Directsync => "directsync",
            Cache::Writethrough => "writethrough",
            Cache::Writeback => "writeback",
            Cache::Unsafe => "unsafe",
        }
    }

    /// The hypervisor's page cache is bypassed (O_DIRECT on the host).
    pub fn bypasses_host_cache(self) -> bool {
        matches!(self, Cache::None | Cache::Directsync)
    }
}

/// QEMU's I/O mode for a disk (libvirt's `driver io=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoMode {
    Native,
    Threads,
    IoUring,
}

impl IoMode {
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Native => "native",
            IoMode::Threads => "threads",
            IoMode::IoUring => "io_uring",
        }
    }
}

/// libvirt's domain type: hardware virtualisation or software emulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DomainType {
    Kvm,
    Qemu,
    /// KVM where the hypervisor offers it, else software emulation.
    Auto,
}

/// How VMs are placed over the hypervisors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Spread {
    /// Round robin: VM I on hypervisor I mod H (anti-affinity: neighbours apart).
    Even,
    /// `vms_per_host` on the first, then the next.
    Fill,
}

/// What the guest boots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guest {
    /// A kernel of the controller, copied to each hypervisor and booted directly with an
    /// initramfs iofleet builds from its own agent (None: the newest `/boot/vmlinuz-*`
    /// here with its modules).
    Builtin { kernel: Option<String> },
    /// A disk image the user names (raw or qcow2, on the controller), copied per VM and
    /// booted with a cloud-init NoCloud seed that starts the agent (`image`).
    Image(ImageGuest),
}

/// `[vms.guest] image` and how it boots: by its own boot loader, or (with `kernel`)
/// directly from a kernel and initrd on the hypervisor with `cmdline`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageGuest {
    pub path: String,
    pub kernel: Option<String>,
    pub initrd: Option<String>,
    pub cmdline: Option<String>,
}

/// A checked `[vms]` description.
#[derive(Debug, Clone, PartialEq)]
pub struct VmFleet {
    /// The fleet's name; its domains are `iofleet-NAME-I`.
    pub name: String,
    pub hypervisors: Vec<String>,
    pub vms: u32,
    pub spread: Spread,
    /// With `spread = "fill"`: VMs per hypervisor.
    pub vms_per_host: Option<u32>,
    pub vcpus: u32,
    pub memory_bytes: u64,
    pub pool: String,
    /// None: the profile's disks per worker.
    pub disks: Option<u32>,
    /// None: the profile's disk size.
    pub disk_size: Option<u64>,
    pub bus: Bus,
    pub cache: Cache,
    pub io: IoMode,
    pub queues: u32,
    pub domain_type: DomainType,
    pub guest: Guest,
    pub keep: bool,
    pub boot_timeout: Duration,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    vms: RawVms,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVms {
    name: Option<String>,
    hypervisors: Option<Vec<String>>,
    vms: Option<u32>,
    vms_per_host: Option<u32>,
    vcpus: Option<u32>,
    memory: Option<String>,
    pool: Option<String>,
    disks: Option<u32>,
    disk_size: Option<String>,
    bus: Option<Bus>,
    cache: Option<Cache>,
    io: Option<IoMode>,
    queues: Option<u32>,
    domain_type: Option<DomainType>,
    spread: Option<Spread>,
    keep: Option<bool>,
    boot_timeout: Option<String>,
    guest: Option<RawGuest>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGuest {
    kernel: Option<String>,
    image: Option<String>,
    initrd: Option<String>,
    cmdline: Option<String>,
}

/// The file describes a VM fleet (a top-level `[vms]` table).
pub fn describes_vms(text: &str) -> bool {
    toml::from_str::<toml::Table>(text).is_ok_and(|t| t.contains_key("vms"))
}

/// Read and check a description's text (the caller names the file in errors).
pub fn parse(text: &str) -> Result<VmFleet, String> {
    let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    for other in ["host", "defaults", "kubernetes"] {
        if table.contains_key(other) {
            return Err(format!(
                "a [vms] fleet creates its own guests: remove [{other}] (one file describes one kind of fleet)"
            ));
        }
    }
    let raw: RawFile = toml::from_str(text).map_err(|e| format!("[vms]: {e}"))?;
    check(raw.vms)
}

/// A name part of libvirt objects: lowercase letters, digits and `-`, 1 to `max`.
fn name_part(key: &str, v: &str, max: usize) -> Result<(), String> {
    let ok = !v.is_empty()
        && v.len() <= max
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "vms.{key}: '{v}' is not a name (lowercase letters, digits and '-', at most {max} characters, starting and ending with a letter or digit)"
        ))
    }
}

fn at_least_one(key: &str, v: Option<u32>, max: u32) -> Result<Option<u32>, String> {
    match v {
        Some(0) => Err(format!("vms.{key}: must be at least 1")),
        Some(n) if n > max => Err(format!("vms.{key}: at most {max}")),
        v => Ok(v),
    }
}

/// A libvirt connection URI iofleet drives: a QEMU hypervisor, here or over ssh.
fn hypervisor(uri: &str) -> Result<(), String> {
    let (scheme, rest) = uri
        .split_once("://")
        .ok_or_else(|| format!("vms.hypervisors: '{uri}' is not a libvirt URI (qemu:///system, qemu+ssh://host/system)"))?;
    match scheme {
        "qemu" | "qemu+ssh" => {}
        _ => {
            return Err(format!(
                "vms.hypervisors: '{uri}': iofleet drives QEMU through libvirt, here (qemu:///system) or over ssh (qemu+ssh://host/system); other drivers and transports are not supported"
            ))
        }
    }
    let path = rest.split_once('/').map_or("", |(_, p)| p);
    let path = path.split('?').next().unwrap_or_default();
    if path != "system" && path != "session" {
        return Err(format!(
            "vms.hypervisors: '{uri}' names no libvirt instance: end it with /system (or /session)"
        ));
    }
    if scheme == "qemu+ssh" && rest.starts_with('/') {
        return Err(format!(
            "vms.hypervisors: '{uri}' names no host to reach over ssh"
        ));
    }
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("vms.hypervisors: '{uri}' holds a space"));
    }
    if let Some(target) = remote::SshTarget::parse(uri) {
        target?;
    }
    Ok(())
}

/// Whether hypervisor `uri` is another machine's (reached over ssh): its files are
/// there, not here.
pub fn is_remote(uri: &str) -> bool {
    remote::SshTarget::parse(uri).is_some()
}

fn check(r: RawVms) -> Result<VmFleet, String> {
    let name = r.name.unwrap_or_else(|| "fleet".into());
    // iofleet-NAME-IIII-dKK stays a short, valid volume and domain name.
    name_part("name", &name, 40)?;
    let hypervisors = r
        .hypervisors
        .unwrap_or_else(|| vec!["qemu:///system".to_string()]);
    if hypervisors.is_empty() {
        return Err("vms.hypervisors: name at least one (qemu:///system)".into());
    }
    for h in &hypervisors {
        hypervisor(h)?;
    }
    if let Some(dup) = hypervisors
        .iter()
        .enumerate()
        .find(|(i, h)| hypervisors[..*i].contains(h))
    {
        return Err(format!("vms.hypervisors: '{}' is named twice", dup.1));
    }
    let spread = r.spread.unwrap_or(Spread::Even);
    let per_host = at_least_one("vms_per_host", r.vms_per_host, MAX_VMS)?;
    let vms = vm_count(r.vms, per_host, hypervisors.len() as u32, spread)?;
    let vcpus = at_least_one("vcpus", r.vcpus, 256)?.unwrap_or(1);
    let memory_bytes = match r.memory {
        None => 512 << 20,
        Some(m) => match parse_bytes(&m) {
            Ok(b) if b.get() >= 128 << 20 => b.get(),
            Ok(_) => return Err("vms.memory: at least 128m (the guest's kernel and agent)".into()),
            Err(e) => return Err(format!("vms.memory: {e}")),
        },
    };
    let pool = r.pool.unwrap_or_else(|| "default".into());
    if pool.is_empty()
        || pool.len() > 64
        || !pool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(format!(
            "vms.pool: '{pool}' is not a libvirt pool name (letters, digits, '-', '_', '.')"
        ));
    }
    let disks = at_least_one("disks", r.disks, MAX_DISKS)?;
    let disk_size = match r.disk_size {
        None => None,
        Some(s) => match parse_bytes(&s) {
            Ok(b) if b.get() >= 1 << 20 => Some(b.get()),
            Ok(_) => return Err("vms.disk_size: at least 1m".into()),
            Err(e) => return Err(format!("vms.disk_size: {e}")),
        },
    };
    let queues = at_least_one("queues", r.queues, 64)?.unwrap_or(1);
    let cache = r.cache.unwrap_or(Cache::None);
    let io = r.io.unwrap_or(IoMode::Native);
    if io == IoMode::Native && !cache.bypasses_host_cache() {
        return Err(format!(
            "vms.io: \"native\" needs a cache mode that bypasses the hypervisor's page cache (cache = \"none\" or \"directsync\"); QEMU refuses it with cache = \"{}\": set io = \"threads\" or \"io_uring\"",
            cache.name()
        ));
    }
    let guest = guest(r.guest)?;
    let boot_timeout = match r.boot_timeout {
        None => Duration::from_secs(300),
        Some(t) => match parse_duration(&t) {
            Ok(d) if !d.is_zero() => d,
            Ok(_) => return Err("vms.boot_timeout: must be longer than 0".into()),
            Err(e) => return Err(format!("vms.boot_timeout: {e}")),
        },
    };
    Ok(VmFleet {
        name,
        hypervisors,
        vms,
        spread,
        vms_per_host: per_host,
        vcpus,
        memory_bytes,
        pool,
        disks,
        disk_size,
        bus: r.bus.unwrap_or(Bus::VirtioBlk),
        cache,
        io,
        queues,
        domain_type: r.domain_type.unwrap_or(DomainType::Auto),
        guest,
        keep: r.keep.unwrap_or(false),
        boot_timeout,
    })
}

/// The VMs in all: `vms`, or `vms_per_host` on each of `n_hosts` hypervisors (both: the
/// VMs must fit).
fn vm_count(
    vms: Option<u32>,
    per_host: Option<u32>,
    n_hosts: u32,
    spread: Spread,
) -> Result<u32, String> {
    let vms = match (at_least_one("vms", vms, MAX_VMS)?, per_host) {
        (Some(v), None) => v,
        (None, Some(k)) => k
            .checked_mul(n_hosts)
            .filter(|&v| v <= MAX_VMS)
            .ok_or(format!("vms.vms_per_host: more than {MAX_VMS} VMs in all"))?,
        (Some(v), Some(k)) => {
            if v > k.saturating_mul(n_hosts) {
                return Err(format!(
                    "vms.vms: {v} VMs do not fit {k} per hypervisor on {n_hosts} hypervisor(s)"
                ));
            }
            v
        }
        (None, None) => return Err("vms.vms: how many VMs (or vms_per_host)".into()),
    };
    if spread == Spread::Fill && per_host.is_none() {
        return Err(
            "vms.spread: \"fill\" fills each hypervisor with vms_per_host VMs: give vms_per_host"
                .into(),
        );
    }
    Ok(vms)
}

/// What the guest boots: iofleet's own initramfs with a kernel, or an image (booted
/// by its boot loader, or directly with `kernel`, `initrd` and `cmdline`).
fn guest(g: Option<RawGuest>) -> Result<Guest, String> {
    let Some(g) = g else {
        return Ok(Guest::Builtin { kernel: None });
    };
    if let Some(k) = &g.kernel {
        absolute("guest.kernel", k)?;
    }
    let Some(path) = g.image else {
        for (key, v) in [("initrd", &g.initrd), ("cmdline", &g.cmdline)] {
            if v.is_some() {
                return Err(format!(
                    "vms.guest.{key}: only with vms.guest.image (the guest iofleet builds boots its own initramfs with its own command line)"
                ));
            }
        }
        return Ok(Guest::Builtin { kernel: g.kernel });
    };
    absolute("guest.image", &path)?;
    if g.kernel.is_none() {
        for (key, v) in [("initrd", &g.initrd), ("cmdline", &g.cmdline)] {
            if v.is_some() {
                return Err(format!(
                    "vms.guest.{key}: the image boots by its own boot loader unless vms.guest.kernel names a kernel to boot it directly"
                ));
            }
        }
    }
    if let Some(i) = &g.initrd {
        absolute("guest.initrd", i)?;
    }
    if let Some(c) = &g.cmdline {
        if c.trim().is_empty() || c.chars().any(|c| c.is_control()) {
            return Err(format!(
                "vms.guest.cmdline: {c:?} is not a kernel command line (one line, not empty)"
            ));
        }
    }
    Ok(Guest::Image(ImageGuest {
        path,
        kernel: g.kernel,
        initrd: g.initrd,
        cmdline: g.cmdline,
    }))
}

/// A path on the hypervisor: absolute, no space (it goes into domain XML and commands).
fn absolute(key: &str, p: &str) -> Result<(), String> {
    if !p.starts_with('/') || p.chars().any(|c| c.is_control()) {
        return Err(format!(
            "vms.{key}: '{p}' is not an absolute path on the hypervisor"
        ));
    }
    Ok(())
}

/// One VM of the fleet as laid out: its index (its rank when it joins), its hypervisor
/// and names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmSlot {
    pub index: u32,
    /// Index into `VmFleet::hypervisors`.
    pub hypervisor: usize,
    pub domain: String,
    /// The data disks' volume names in the pool, in disk order.
    pub volumes: Vec<String>,
}

impl VmFleet {
    /// The domain name of VM `i`.
    pub fn domain_name(&self, i: u32) -> String {
        format!("iofleet-{}-{i}", self.name)
    }

    /// Each VM's hypervisor and names, for `disks` data disks per VM.
    pub fn layout(&self, disks: u32) -> Vec<VmSlot> {
        let h = self.hypervisors.len() as u32;
        (0..self.vms)
            .map(|i| {
                let hypervisor = match (self.spread, self.vms_per_host) {
                    (Spread::Fill, Some(k)) => (i / k) as usize,
                    _ => (i % h) as usize,
                };
                let domain = self.domain_name(i);
                let volumes = (0..disks).map(|k| format!("{domain}-d{k}")).collect();
                VmSlot {
                    index: i,
                    hypervisor,
                    domain,
                    volumes,
                }
            })
            .collect()
    }

    /// What the user should know about the disks' cache mode before a run.
    pub fn notices(&self) -> Vec<String> {
        let mut n = Vec::new();
        if !self.cache.bypasses_host_cache() {
            n.push(format!(
                "vms.cache = \"{}\": the hypervisor's page cache sits between the guests and the storage, so its effect is measured too (cache = \"none\" measures the storage)",
                self.cache.name()
            ));
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(body: &str) -> VmFleet {
        parse(&format!("[vms]\n{body}")).unwrap()
    }

    fn parse_err(body: &str) -> String {
        parse(&format!("[vms]\n{body}")).unwrap_err()
    }

    #[test]
    fn defaults_are_one_local_hypervisor_cache_none_io_native() {
        let f = parse_ok("vms = 2");
        assert_eq!(f.hypervisors, ["qemu:///system"]);
        assert_eq!((f.vms, f.vcpus, f.memory_bytes), (2, 1, 512 << 20));
        assert_eq!(
            (f.cache, f.io, f.bus),
            (Cache::None, IoMode::Native, Bus::VirtioBlk)
        );
        assert_eq!(f.guest, Guest::Builtin { kernel: None });
        assert!(f.notices().is_empty());
        assert_eq!(f.domain_name(1), "iofleet-fleet-1");
    }

    #[test]
    fn every_key_is_read() {
        let f = parse_ok(
            r#"name = "bench"
hypervisors = ["qemu:///system", "qemu+ssh://root@kvm2/system"]
vms_per_host = 3
vcpus = 4
memory = "2g"
pool = "ssd_pool"
disks = 8
disk_size = "10g"
bus = "virtio-scsi"
cache = "writeback"
io = "threads"
queues = 4
domain_type = "qemu"
spread = "fill"
keep = true
boot_timeout = "2m"
[vms.guest]
image = "/var/lib/libvirt/images/debian.qcow2"
"#,
        );
        assert_eq!(f.vms, 6);
        assert_eq!((f.vcpus, f.memory_bytes, f.queues), (4, 2 << 30, 4));
        assert_eq!((f.disks, f.disk_size), (Some(8), Some(10 << 30)));
        assert_eq!(f.bus, Bus::VirtioScsi);
        assert_eq!(f.domain_type, DomainType::Qemu);
        assert!(f.keep);
        assert_eq!(f.boot_timeout, Duration::from_secs(120));
        assert_eq!(
            f.guest,
            Guest::Image(ImageGuest {
                path: "/var/lib/libvirt/images/debian.qcow2".into(),
                kernel: None,
                initrd: None,
                cmdline: None,
            })
        );
        let direct = parse_ok(
            "vms = 1\n[vms.guest]\nimage = \"/i.qcow2\"\nkernel = \"/k\"\ninitrd = \"/i\"\ncmdline = \"root=LABEL=r console=ttyS0\"",
        );
        assert_eq!(
            direct.guest,
            Guest::Image(ImageGuest {
                path: "/i.qcow2".into(),
                kernel: Some("/k".into()),
                initrd: Some("/i".into()),
                cmdline: Some("root=LABEL=r console=ttyS0".into()),
            })
        );
        let n = f.notices();
        assert!(n[0].contains("page cache"), "{n:?}");
        // fill: three on the first hypervisor, then three on the second.
        let l = f.layout(2);
        let hv: Vec<usize> = l.iter().map(|s| s.hypervisor).collect();
        assert_eq!(hv, [0, 0, 0, 1, 1, 1]);
        assert_eq!(l[4].volumes, ["iofleet-bench-4-d0", "iofleet-bench-4-d1"]);
    }

    #[test]
    fn even_spread_alternates_hypervisors() {
        let f = parse_ok(
            r#"vms = 5
hypervisors = ["qemu:///system", "qemu+ssh://a/system"]"#,
        );
        let hv: Vec<usize> = f.layout(1).iter().map(|s| s.hypervisor).collect();
        assert_eq!(hv, [0, 1, 0, 1, 0]);
    }

    #[test]
    fn bad_values_name_their_key() {
        for (body, says) in [
            ("", "vms.vms: how many VMs"),
            ("vms = 0", "vms.vms: must be at least 1"),
            ("vms = 5000", "vms.vms: at most 4096"),
            ("vms = 1\nname = \"Bad_Name\"", "vms.name: 'Bad_Name'"),
            (
                "vms = 1\nhypervisors = []",
                "vms.hypervisors: name at least one",
            ),
            (
                "vms = 1\nhypervisors = [\"xen:///system\"]",
                "iofleet drives QEMU",
            ),
            (
                "vms = 1\nhypervisors = [\"qemu:///\"]",
                "names no libvirt instance",
            ),
            (
                "vms = 1\nhypervisors = [\"qemu+ssh:///system\"]",
                "names no host",
            ),
            (
                "vms = 1\nhypervisors = [\"qemu+ssh://root@h:port/system\"]",
                "vms.hypervisors: 'qemu+ssh://root@h:port/system': 'port' is not a port",
            ),
            (
                "vms = 1\nhypervisors = [\"qemu:///system\", \"qemu:///system\"]",
                "named twice",
            ),
            ("vms = 9\nvms_per_host = 4", "do not fit 4 per hypervisor"),
            ("vms = 2\nspread = \"fill\"", "give vms_per_host"),
            ("vms = 1\nmemory = \"64m\"", "vms.memory: at least 128m"),
            ("vms = 1\nmemory = \"lots\"", "vms.memory:"),
            ("vms = 1\npool = \"a b\"", "vms.pool:"),
            ("vms = 1\ndisks = 25", "vms.disks: at most 24"),
            ("vms = 1\ndisk_size = \"1k\"", "vms.disk_size: at least 1m"),
            ("vms = 1\ncache = \"fast\"", "unknown variant `fast`"),
            ("vms = 1\nbus = \"ide\"", "unknown variant `ide`"),
            (
                "vms = 1\nboot_timeout = \"0s\"",
                "vms.boot_timeout: must be longer",
            ),
            ("vms = 1\ncolor = \"red\"", "unknown field `color`"),
            (
                "vms = 1\n[vms.guest]\nimage = \"i.qcow2\"",
                "vms.guest.image: 'i.qcow2' is not an absolute path",
            ),
            (
                "vms = 1\n[vms.guest]\ninitrd = \"/boot/i\"",
                "vms.guest.initrd: only with vms.guest.image",
            ),
            (
                "vms = 1\n[vms.guest]\nkernel = \"/boot/k\"\ncmdline = \"quiet\"",
                "vms.guest.cmdline: only with vms.guest.image",
            ),
            (
                "vms = 1\n[vms.guest]\nimage = \"/i.qcow2\"\ninitrd = \"/boot/i\"",
                "vms.guest.initrd: the image boots by its own boot loader unless vms.guest.kernel",
            ),
            (
                "vms = 1\n[vms.guest]\nimage = \"/i.qcow2\"\ncmdline = \"root=/dev/vda\"",
                "vms.guest.cmdline: the image boots by its own boot loader",
            ),
            (
                "vms = 1\n[vms.guest]\nimage = \"/i.qcow2\"\nkernel = \"/k\"\ninitrd = \"i\"",
                "vms.guest.initrd: 'i' is not an absolute path",
            ),
            (
                "vms = 1\n[vms.guest]\nimage = \"/i.qcow2\"\nkernel = \"/k\"\ncmdline = \"a\\nb\"",
                "vms.guest.cmdline: \"a\\nb\" is not a kernel command line",
            ),
            (
                "vms = 1\n[vms.guest]\nimage = \"/i.qcow2\"\nkernel = \"vmlinuz\"",
                "vms.guest.kernel: 'vmlinuz' is not an absolute path",
            ),
            (
                "vms = 1\n[vms.guest]\nimage = \"/i.qcow2\"\nsize = \"2g\"",
                "unknown field `size`",
            ),
            (
                "vms = 1\n[vms.guest]\nkernel = \"vmlinuz\"",
                "vms.guest.kernel",
            ),
        ] {
            let e = parse_err(body);
            assert!(e.contains(says), "{body:?}: {e}");
        }
        let e = parse("[vms]\nvms = 1\n[[host]]\ndestination = \"a\"").unwrap_err();
        assert!(e.contains("remove [host]"), "{e}");
        assert!(describes_vms("[vms]\nvms = 1"));
        assert!(!describes_vms("[[host]]\ndestination = \"a\""));
    }

    #[test]
    fn native_io_through_the_host_cache_is_refused_as_qemu_refuses_it() {
        let e = parse_err("vms = 1\ncache = \"writethrough\"");
        assert!(
            e.starts_with("vms.io:") && e.contains("QEMU refuses it"),
            "{e}"
        );
        let f = parse_ok("vms = 1\ncache = \"writethrough\"\nio = \"io_uring\"");
        assert_eq!(f.notices().len(), 1);
    }
}
