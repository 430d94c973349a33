//! The worker-VM launcher: on the first run of a command it opens the join port, writes
//! each VM's initramfs (the agent, its libraries, the virtio modules, a join file with
//! the VM's rank and the port's token), creates the data disks' volumes in the pool,
//! defines and starts each domain, connects to each domain's join channel (its socket
//! read from the live domain) and hands it to the port, and waits until every VM has
//! joined (per VM: defined → running → joined, timed). A guest booted from an image
//! gets, instead of the initramfs, a copy of the image and a NoCloud seed as volumes
//! (`image`). The joined agents are then the
//! fleet's hosts (`AgentLauncher::joined`) for every run of the command. `close`, and
//! dropping the launcher on any other path (an error, Ctrl-C), destroys and undefines
//! the domains, deletes the volumes, the kernel and initramfs files and libvirt's log of
//! each domain, unless `keep`. Every file on a hypervisor's machine is written, read and
//! removed through its `HostFiles` (here, or over ssh for a remote hypervisor), and
//! each channel is connected through it too (a remote one forwarded over ssh).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iofleet_profile::GroupPlan;
use iofleet_stats::result::{VmDisk, VmDiskRequests, VmHost, VmRun, VmTimeline};

use super::guest::GuestJoin;
use super::hypervisor::{Hypervisor, RequestCounts, Virsh};
use super::image::Image;
use super::initramfs::{self, Contents, GUEST_DRIVERS};
use super::luns;
use super::nocloud::Seed;
use super::xml::{self, Boot};
use super::{DomainType, Guest, VmFleet, VmSlot};
use crate::agents::join::{JoinServer, JoinSettings, Member};
use crate::agents::{plan, AgentLauncher};
use crate::error::FleetError;
use crate::host::{HostSpec, Reach, Role, TargetArg};
use crate::launcher::{Finished, HostVerified, Launcher, Prepared};
use crate::observer::Observer;
use crate::plan::{Hosts, LaunchPlan, Vms};
use crate::precondition::Preconditioned;
use crate::settings::RunSettings;
use crate::source::Msg;

/// Where each VM's kernel and initramfs are written on the hypervisor (Debian's libvirt
/// makes it, for boot files of its guests).
pub const BOOT_DIR: &str = "/var/lib/libvirt/boot";
/// libvirt's log of each domain's QEMU, kept after the domain is gone.
pub const QEMU_LOG_DIR: &str = "/var/log/libvirt/qemu";
/// The guest's kernel command line: its console on the first serial port, quiet, and a
/// panic ends the guest at once.
pub const CMDLINE: &str = "console=ttyS0 quiet panic=-1";
/// How often the domains and the port are looked at while the VMs boot.
const POLL: Duration = Duration::from_millis(200);

/// The kernel the guests boot and its version (its modules' directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub path: PathBuf,
    pub version: String,
}

/// The guest's kernel: the one `vms.guest.kernel` names, else the newest
/// `/boot/vmlinuz-*` with its modules under `/lib/modules`; with its version. An error
/// names the key.
pub fn guest_kernel(fleet: &VmFleet) -> Result<Kernel, FleetError> {
    let named = match &fleet.guest {
        Guest::Builtin { kernel } => kernel.clone(),
        Guest::Image(g) => {
            return Err(FleetError::Input(format!(
                "vms.guest.image = {:?}: the image boots its own kernel, not iofleet's initramfs",
                g.path
            )))
        }
    };
    let modules = |v: &str| Path::new("/lib/modules").join(v).join("modules.dep");
    match named {
        Some(k) => {
            let path = PathBuf::from(&k);
            if !path.is_file() {
                return Err(FleetError::Input(format!(
                    "vms.guest.kernel: {k} does not exist here (the guests boot a copy of the controller's kernel)"
                )));
            }
            let version = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("vmlinuz-"))
                .map(str::to_string)
                .ok_or_else(|| {
                    FleetError::Input(format!(
                        "vms.guest.kernel: {k} is not named vmlinuz-VERSION, so its modules (/lib/modules/VERSION) cannot be found"
                    ))
                })?;
            if !modules(&version).is_file() {
                return Err(FleetError::Input(format!(
                    "vms.guest.kernel: {k} has no modules ({} is missing)",
                    modules(&version).display()
                )));
            }
            Ok(Kernel { path, version })
        }
        None => {
            let mut found: Vec<(PathBuf, String)> = std::fs::read_dir("/boot")
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let v = name.strip_prefix("vmlinuz-")?.to_string();
                    modules(&v).is_file().then(|| (e.path(), v))
                })
                .collect();
            found.sort();
            let (path, version) = found.pop().ok_or_else(|| {
                FleetError::Input(
                    "vms.guest.kernel: there is no kernel in /boot with its modules under /lib/modules (install one, e.g. Debian's linux-image-cloud-amd64, or name one)".into(),
                )
            })?;
            Ok(Kernel { path, version })
        }
    }
}

/// What the guests boot, found and checked (a plan's and a run's): a kernel with
/// iofleet's initramfs, or an image with a seed.
#[derive(Debug, Clone)]
pub enum GuestBoot {
    Builtin(Kernel),
    Image(Image),
}

impl GuestBoot {
    /// The guest `fleet` describes: an error names the key.
    pub fn find(fleet: &VmFleet) -> Result<GuestBoot, FleetError> {
        match &fleet.guest {
            Guest::Image(g) => {
                let exe = std::env::current_exe()
                    .and_then(std::fs::metadata)
                    .map_err(|e| FleetError::Setup(format!("vms: this iofleet: {e}")))?;
                let image = Image::inspect(g, exe.len())?;
                // A hypervisor on this machine is checked now, a dry run's too; a remote
                // one when the run reaches it (`check_hypervisors`).
                if let Some(here) = fleet.hypervisors.iter().find(|u| !super::is_remote(u)) {
                    image.check_direct_boot(&super::hypervisor::Local, here)?;
                }
                Ok(GuestBoot::Image(image))
            }
            Guest::Builtin { .. } => guest_kernel(fleet).map(GuestBoot::Builtin),
        }
    }

    /// VM `slot`'s domain.
    fn domain_xml(&self, fleet: &VmFleet, slot: &VmSlot, domain_type: &str) -> String {
        match self {
            GuestBoot::Builtin(_) => xml::domain_xml(
                fleet,
                slot,
                domain_type,
                &Boot::Kernel {
                    kernel: &kernel_path(&slot.domain).to_string_lossy(),
                    initrd: &initrd_path(&slot.domain).to_string_lossy(),
                    cmdline: CMDLINE,
                },
            ),
            GuestBoot::Image(i) => i.domain_xml(fleet, slot, domain_type),
        }
    }

    /// How VM `domain` boots, for a dry run.
    fn boot_line(&self, domain: &str) -> String {
        match self {
            GuestBoot::Builtin(k) => format!(
                "kernel {} (a copy of {}), initramfs {} written by iofleet",
                kernel_path(domain).display(),
                k.path.display(),
                initrd_path(domain).display()
            ),
            GuestBoot::Image(i) => format!(
                "boots volume {} (a copy of {}, {}, vol-upload) with the NoCloud seed {} written by iofleet (vol-upload), read-only{}",
                super::image::boot_volume(domain),
                i.path.display(),
                i.format.name(),
                super::image::seed_volume(domain),
                i.kernel
                    .as_ref()
                    .map_or(String::new(), |k| format!("; directly from kernel {k}"))
            ),
        }
    }

    /// The guest, for the result.
    fn describe(&self) -> String {
        match self {
            GuestBoot::Builtin(k) => format!("{} with iofleet's initramfs", k.path.display()),
            GuestBoot::Image(i) => i.describe(),
        }
    }
}

/// What the guests carry: each VM's initramfs but its join file, or the agent its seed
/// holds.
enum Payload {
    /// The initramfs's parts, and the kernel copied beside it on each hypervisor.
    Initramfs {
        parts: GuestParts,
        kernel: Vec<u8>,
    },
    Seed(Vec<u8>),
}

impl Payload {
    /// What `guest`'s VMs carry, read once for the fleet.
    fn read(guest: &GuestBoot) -> Result<Payload, FleetError> {
        Ok(match guest {
            GuestBoot::Builtin(kernel) => Payload::Initramfs {
                parts: GuestParts::read(kernel)?,
                kernel: std::fs::read(&kernel.path).map_err(|e| {
                    FleetError::Input(format!("vms.guest.kernel: {}: {e}", kernel.path.display()))
                })?,
            },
            GuestBoot::Image(_) => Payload::Seed(
                this_agent(|_| ())
                    .map_err(|e| FleetError::Setup(format!("vms: the seed's agent: {e}")))?
                    .0,
            ),
        })
    }
}

/// The domain type a fleet runs: `kvm` or `qemu`; `auto` is KVM where `/dev/kvm`
/// opens, else software emulation.
pub fn domain_type(t: DomainType) -> &'static str {
    match t {
        DomainType::Kvm => "kvm",
        DomainType::Qemu => "qemu",
        DomainType::Auto => {
            let kvm = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/kvm")
                .is_ok();
            if kvm {
                "kvm"
            } else {
                "qemu"
            }
        }
    }
}

/// The domain type of a run: `auto` asked of each hypervisor's libvirt (`auto_type`).
fn run_domain_type(
    t: DomainType,
    hypervisors: &[Box<dyn Hypervisor>],
) -> Result<&'static str, FleetError> {
    if t != DomainType::Auto {
        return Ok(domain_type(t));
    }
    let answers = hypervisors
        .iter()
        .map(|hv| hv.kvm().map(|kvm| (hv.name().to_string(), kvm)))
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| {
            FleetError::Setup(format!(
                "vms.domain_type: \"auto\" asks each hypervisor whether it offers KVM: {e}"
            ))
        })?;
    auto_type(&answers)
}

/// `auto` from each hypervisor's answer (name, offers KVM): `kvm` when every one offers
/// it, `qemu` when none does. Hypervisors that differ are refused, naming
/// `vms.domain_type`: one fleet's guests under KVM and under software emulation would
/// give figures that cannot be summed.
fn auto_type(answers: &[(String, bool)]) -> Result<&'static str, FleetError> {
    let names = |kvm: bool| -> Vec<&str> {
        answers
            .iter()
            .filter(|(_, k)| *k == kvm)
            .map(|(n, _)| n.as_str())
            .collect()
    };
    let (with, without) = (names(true), names(false));
    match (with.is_empty(), without.is_empty()) {
        (_, true) => Ok("kvm"),
        (true, false) => Ok("qemu"),
        (false, false) => Err(FleetError::Input(format!(
            "vms.domain_type: \"auto\": {} offer(s) KVM and {} do(es) not; one fleet runs under one domain type: set domain_type = \"qemu\" (software emulation on every hypervisor) or leave out those without KVM",
            with.join(", "),
            without.join(", ")
        ))),
    }
}

/// The domain type a plan (a dry run, which contacts no hypervisor) shows, and for
/// `auto` with a remote hypervisor the notice that the run decides it there.
fn planned_domain_type(fleet: &VmFleet) -> (&'static str, Option<String>) {
    if fleet.domain_type == DomainType::Auto
        && fleet.hypervisors.iter().any(|h| super::is_remote(h))
    {
        return (
            "kvm",
            Some("vms.domain_type = \"auto\": the domains show type 'kvm'; the run asks each hypervisor's libvirt (virsh capabilities) and uses 'qemu', software emulation, where none offers KVM".into()),
        );
    }
    (domain_type(fleet.domain_type), None)
}

/// The initramfs file of VM `domain`.
pub fn initrd_path(domain: &str) -> PathBuf {
    Path::new(BOOT_DIR).join(format!("{domain}.initrd"))
}

/// VM `domain`'s kernel on its hypervisor: a copy of the controller's guest kernel
/// beside its initramfs (the guest is iofleet's: the controller's kernel with its
/// modules in the initramfs, on every hypervisor, here or remote).
pub fn kernel_path(domain: &str) -> PathBuf {
    Path::new(BOOT_DIR).join(format!("{domain}.kernel"))
}

/// libvirt's log of `domain`'s QEMU on its hypervisor.
fn qemu_log(domain: &str) -> PathBuf {
    Path::new(QEMU_LOG_DIR).join(format!("{domain}.log"))
}

/// A data disk's volume size: the profile's disk size and its fill marker (or
/// `vms.disk_size`), rounded up to whole MiB.
pub fn volume_bytes(fleet: &VmFleet, disk_size: u64) -> u64 {
    const MIB: u64 = 1 << 20;
    let want = fleet
        .disk_size
        .unwrap_or(disk_size + iofleet_engine::target::MARKER_LEN);
    want.div_ceil(MIB) * MIB
}

/// The VMs as the plan and a dry run see them: one host per VM, named by its domain,
/// its disks the data disks by the names the domain gives them.
fn vm_host(fleet: &VmFleet, slot: &VmSlot, member: u64, target: TargetArg) -> HostSpec {
    let mut labels = BTreeMap::new();
    labels.insert("rank".to_string(), slot.index.to_string());
    labels.insert(
        "hypervisor".to_string(),
        fleet.hypervisors[slot.hypervisor].clone(),
    );
    HostSpec {
        name: slot.domain.clone(),
        destination: format!("channel of {}", slot.domain),
        target,
        workers: None,
        labels,
        iofleet_path: None,
        reach: Reach::Joined {
            rank: slot.index,
            member,
        },
        role: Role::Workers,
        observe: Vec::new(),
        scrape: None,
    }
}

fn planned_target(fleet: &VmFleet, disks: u32) -> TargetArg {
    TargetArg::Devices(
        (0..disks)
            .map(|k| format!("/dev/{}", xml::target_dev(fleet.bus, k)))
            .collect(),
    )
}

/// What this command created, so that exactly that is removed.
#[derive(Debug, Default)]
struct Created {
    /// (hypervisor index, pool, volume)
    volumes: Vec<(usize, String, String)>,
    /// (hypervisor index, domain)
    domains: Vec<(usize, String)>,
    /// (hypervisor index, kernel or initramfs)
    files: Vec<(usize, PathBuf)>,
}

pub struct VmLauncher {
    fleet: VmFleet,
    /// The description's file, for the clean-up command in messages.
    file: PathBuf,
    hypervisors: Vec<Box<dyn Hypervisor>>,
    agents: AgentLauncher,
    created: Created,
    /// The fleet that joined: its disks per VM and the bytes asked of each, and the
    /// facts of it for the results.
    joined: Option<(u32, u64, VmRun)>,
    /// The hypervisors' request counts per disk when the workers were ready.
    before: RequestCounts,
}

impl VmLauncher {
    /// A launcher that drives each hypervisor of `fleet` through `virsh`.
    pub fn new(fleet: VmFleet, file: PathBuf) -> Result<Self, String> {
        let hypervisors = virsh_all(&fleet)?;
        Ok(Self::with(fleet, file, hypervisors))
    }

    /// A launcher over the given hypervisors (one per `fleet.hypervisors`, in order).
    pub fn with(fleet: VmFleet, file: PathBuf, hypervisors: Vec<Box<dyn Hypervisor>>) -> Self {
        VmLauncher {
            fleet,
            file,
            hypervisors,
            agents: AgentLauncher::new(Vec::new()),
            created: Created::default(),
            joined: None,
            before: RequestCounts::new(),
        }
    }

    /// The group as a VM fleet runs it: one worker per VM, `vms.disks` data disks and
    /// `vms.disk_size` when given.
    fn group(&self, groups: &[GroupPlan]) -> Result<(GroupPlan, Vec<String>), FleetError> {
        let [group] = groups else {
            return Err(FleetError::Input(
                "--group: a fleet of VMs runs one profile (one worker per VM)".into(),
            ));
        };
        let mut group = group.clone();
        let mut notices = self.fleet.notices();
        let f = &mut group.plan.fleet;
        if f.workers != self.fleet.vms {
            notices.push(format!(
                "one worker per VM: running {} workers, not the profile's {}",
                self.fleet.vms, f.workers
            ));
            f.workers = self.fleet.vms;
        }
        if let Some(d) = self.fleet.disks {
            f.disks_per_worker = d;
        }
        if let Some(s) = self.fleet.disk_size {
            // The volume also holds the disk's fill marker after its data.
            let data = s
                .checked_sub(iofleet_engine::target::MARKER_LEN)
                .filter(|d| *d >= 1 << 20)
                .ok_or_else(|| {
                    FleetError::Input(format!(
                        "vms.disk_size: {s} bytes leave no room for a disk and its fill marker"
                    ))
                })?;
            f.disk_size = iofleet_profile::Bytes(data / 4096 * 4096);
        }
        Ok((group, notices))
    }

    /// Everything this command created goes (unless `keep`, the fleet's own at the
    /// command's end): what was done, for the user, or what failed and how to finish.
    fn clean_up(&mut self, keep: bool) -> Option<String> {
        let c = std::mem::take(&mut self.created);
        if c.domains.is_empty() && c.volumes.is_empty() && c.files.is_empty() {
            return None;
        }
        self.joined = None;
        if keep {
            return Some(format!(
                "vms: kept {} domain(s) and {} volume(s) (keep = true); `iofleet vms clean --hosts {}` removes them",
                c.domains.len(),
                c.volumes.len(),
                self.file.display()
            ));
        }
        let mut failed = Vec::new();
        for (h, d) in &c.domains {
            let hv = &self.hypervisors[*h];
            if let Err(e) = hv.destroy(d) {
                failed.push(e);
            }
            if let Err(e) = hv.undefine(d) {
                failed.push(e);
            }
            let _ = hv.files().remove(&qemu_log(d));
        }
        for (h, pool, v) in &c.volumes {
            if let Err(e) = self.hypervisors[*h].delete_volume(pool, v) {
                failed.push(e);
            }
        }
        for (h, f) in &c.files {
            if let Err(e) = self.hypervisors[*h].files().remove(f) {
                failed.push(e);
            }
        }
        Some(if failed.is_empty() {
            format!(
                "vms: destroyed and undefined {} domain(s), deleted {} volume(s)",
                c.domains.len(),
                c.volumes.len()
            )
        } else {
            format!(
                "vms: not everything could be removed ({}); `iofleet vms clean --hosts {}` removes the rest",
                failed.join("; "),
                self.file.display()
            )
        })
    }

    /// Each hypervisor answers and has the pool: an error naming the key otherwise.
    fn check_hypervisors(&self, guest: &GuestBoot) -> Result<(), FleetError> {
        for hv in &self.hypervisors {
            if let GuestBoot::Image(image) = guest {
                image.check_direct_boot(hv.files(), hv.name())?;
            }
            hv.domains().map_err(|e| {
                FleetError::Setup(format!(
                    "vms.hypervisors: '{}' cannot be reached: {e}",
                    hv.name()
                ))
            })?;
            hv.volumes(&self.fleet.pool).map_err(|e| {
                FleetError::Setup(format!(
                    "vms.pool: '{}' on {}: {e}",
                    self.fleet.pool,
                    hv.name()
                ))
            })?;
        }
        Ok(())
    }

    /// The fleet `plan` runs on, joined: the one this command made for its earlier runs
    /// when their disks were the same, else (removing one that differs) a new one.
    /// `Ok(None)` when `stop` was set first.
    fn fleet_for(
        &mut self,
        plan: &LaunchPlan<Vms>,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<()>, FleetError> {
        let disks = plan.groups[0].plan.fleet.disks_per_worker;
        let bytes = volume_bytes(&self.fleet, plan.groups[0].plan.fleet.disk_size.get());
        match &self.joined {
            Some((d, b, _)) if (*d, *b) == (disks, bytes) => return Ok(Some(())),
            Some(_) => {
                // The VMs' disks differ from this run's: a new fleet (kept or not, the
                // old one cannot serve this run).
                notices.extend(self.agents.close());
                self.agents = AgentLauncher::new(Vec::new());
                notices.extend(self.clean_up(false));
                notices.push(
                    "vms: this run's data disks differ from the command's earlier runs' (disks per VM or their size): the fleet was removed and created again".into(),
                );
            }
            None => {}
        }
        self.provision(disks, bytes, &plan.settings, stop, observer, notices)
    }

    /// Create the fleet and wait until every VM joined: its hosts. `Ok(None)` when
    /// `stop` was set first (what was created goes at `close` or drop).
    fn provision(
        &mut self,
        disks: u32,
        volume_bytes: u64,
        settings: &RunSettings,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<()>, FleetError> {
        let setup = FleetError::Setup;
        let guest = GuestBoot::find(&self.fleet)?;
        self.check_hypervisors(&guest)?;
        let dtype = run_domain_type(self.fleet.domain_type, &self.hypervisors)?;
        let n = self.fleet.vms;
        let port = self.open_port(settings)?;
        let payload = Payload::read(&guest)?;
        let mut layout = self.fleet.layout(disks);
        let luns = luns::assign(
            &mut layout,
            &self.hypervisors,
            &self.fleet.pool,
            volume_bytes,
        )
        .map_err(setup)?;
        notices.extend(luns::notices(&luns, &self.hypervisors, &self.fleet.pool));
        let reuse = self.kept_fleet(&layout, &luns, volume_bytes, &guest, notices)?;
        let t0 = Instant::now();
        let mut timeline: Vec<VmTimeline> = vec![VmTimeline::default(); n as usize];
        for slot in &layout {
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let h = slot.hypervisor;
            let pool = self.fleet.pool.clone();
            for v in slot.volumes.iter().filter(|_| luns[h].is_none()) {
                if !reuse {
                    self.hypervisors[h]
                        .create_volume(&pool, &xml::volume_xml(v, volume_bytes))
                        .map_err(|e| setup(format!("vms.pool: '{pool}': volume {v}: {e}")))?;
                }
                self.created.volumes.push((h, pool.clone(), v.clone()));
            }
            let join = GuestJoin {
                fingerprint: port.address.fingerprint.clone(),
                token: port.token().to_string(),
                rank: slot.index,
                disks,
                join_timeout_s: self.fleet.boot_timeout.as_secs().max(1),
            };
            self.write_boot(slot, (&guest, reuse), &payload, &join)?;
            let doc = guest.domain_xml(&self.fleet, slot, dtype);
            let hv = &self.hypervisors[h];
            hv.define(&doc).map_err(setup)?;
            self.created.domains.push((h, slot.domain.clone()));
            timeline[slot.index as usize].defined_s = Some(t0.elapsed().as_secs_f64());
            observer.status(&format!("vms: {} defined", slot.domain));
        }
        if self
            .start_domains(&layout, &port, (&mut timeline, t0), stop, observer)?
            .is_none()
        {
            return Ok(None);
        }
        eprintln!(
            "iofleet: {n} VM(s) of fleet {} started ({dtype}); waiting for them to join",
            self.fleet.name
        );
        let waited = self.await_joined(&port, &layout, &mut timeline, t0, stop, observer);
        let Some(members) = self.kvm_hint(waited, dtype)? else {
            return Ok(None);
        };
        let joined_after_s = t0.elapsed().as_secs_f64();
        let hosts: Vec<HostSpec> = members
            .iter()
            .map(|m| {
                let slot = &layout[m.rank as usize];
                let target = m
                    .target
                    .clone()
                    .unwrap_or_else(|| planned_target(&self.fleet, disks));
                let mut h = vm_host(&self.fleet, slot, m.id, target);
                h.destination = m.peer.to_string();
                h
            })
            .collect();
        let vms = self.vm_facts(&layout, &timeline, volume_bytes, &luns);
        notices.push(format!(
            "vms: {n} VM(s) of fleet {} joined in {joined_after_s:.1} s ({dtype}, {})",
            self.fleet.name,
            match &guest {
                GuestBoot::Builtin(k) => format!("kernel {}", k.path.display()),
                GuestBoot::Image(i) => format!("image {}", i.path.display()),
            }
        ));
        self.joined = Some((
            disks,
            volume_bytes,
            VmRun {
                fleet: self.fleet.name.clone(),
                domain_type: dtype.into(),
                guest: guest.describe(),
                joined_after_s,
                kept: self.fleet.keep,
                vms,
            },
        ));
        self.agents = AgentLauncher::joined(hosts, port);
        Ok(Some(()))
    }

    /// VM `slot`'s boot files: its initramfs written here, or its copy of the image and
    /// its seed created in the pool (each recorded as created as soon as it exists).
    fn write_boot(
        &mut self,
        slot: &VmSlot,
        (guest, kept): (&GuestBoot, bool),
        payload: &Payload,
        join: &GuestJoin,
    ) -> Result<(), FleetError> {
        match (guest, payload) {
            (GuestBoot::Image(image), Payload::Seed(agent)) => {
                let h = slot.hypervisor;
                let pool = self.fleet.pool.clone();
                let seed = Seed {
                    domain: &slot.domain,
                    iofleet: agent,
                    join,
                };
                let created = &mut self.created.volumes;
                image.create(&*self.hypervisors[h], &pool, &seed, kept, &mut |v| {
                    created.push((h, pool.clone(), v))
                })
            }
            (_, Payload::Initramfs { parts, kernel }) => {
                let h = slot.hypervisor;
                let initramfs = parts.archive(join)?;
                let (initrd, own_kernel) = (initrd_path(&slot.domain), kernel_path(&slot.domain));
                for (path, data) in [(&initrd, &initramfs), (&own_kernel, kernel)] {
                    self.created.files.push((h, path.clone()));
                    self.hypervisors[h]
                        .files()
                        .write(path, data)
                        .map_err(|e| FleetError::Setup(format!("vms: {}: {e}", slot.domain)))?;
                }
                Ok(())
            }
            (GuestBoot::Builtin(_), Payload::Seed(_)) => Err(FleetError::Setup(
                "vms: a seed for a guest booted from a kernel".into(),
            )),
        }
    }

    /// Start each domain and hand its join channel to `port`, noting when it ran.
    /// `Ok(None)` when `stop` was set first.
    fn start_domains(
        &self,
        layout: &[VmSlot],
        port: &JoinServer,
        (timeline, t0): (&mut [VmTimeline], Instant),
        stop: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<Option<()>, FleetError> {
        let setup = FleetError::Setup;
        for slot in layout {
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let hv = &self.hypervisors[slot.hypervisor];
            hv.start(&slot.domain).map_err(setup)?;
            timeline[slot.index as usize].running_s = Some(t0.elapsed().as_secs_f64());
            let channel = hv.channel(&slot.domain).map_err(setup)?;
            let stream = hv.files().connect(&channel, &slot.domain).map_err(|e| {
                setup(format!(
                    "vms: {}: cannot connect to its join channel {}: {e}",
                    slot.domain,
                    channel.display()
                ))
            })?;
            port.adopt(stream, &format!("channel of {}", slot.domain))?;
            observer.status(&format!("vms: {} running", slot.domain));
        }
        Ok(Some(()))
    }

    /// Names are fixed: what a kept fleet or a killed command left is in the way. With
    /// `keep = true`, a fleet of exactly `layout`'s domains and volumes (each volume at
    /// least `volume_bytes`) is reused: `Ok(true)`, its running domains powered off to
    /// start again with this command's join file, its volumes as they are (a disk
    /// filled before is not filled again). A kept fleet booted from an image also keeps
    /// each VM's copy of the image and gets a new seed (this command's token, and an
    /// instance-id of this command's, so cloud-init starts the agent again). Anything
    /// else there is not this command's to remove: an error names it and `iofleet vms
    /// clean`.
    fn kept_fleet(
        &self,
        layout: &[VmSlot],
        luns: &[Option<BTreeMap<String, u64>>],
        volume_bytes: u64,
        guest: &GuestBoot,
        notices: &mut Vec<String>,
    ) -> Result<bool, FleetError> {
        let found = leftovers(&self.fleet, &self.hypervisors).map_err(FleetError::Setup)?;
        if found.is_empty() {
            return Ok(false);
        }
        let mut domains: Vec<(usize, String)> = layout
            .iter()
            .map(|s| (s.hypervisor, s.domain.clone()))
            .collect();
        let volumes: Vec<(usize, String)> = layout
            .iter()
            .filter(|s| luns[s.hypervisor].is_none())
            .flat_map(|s| s.volumes.iter().map(move |v| (s.hypervisor, v.clone())))
            .collect();
        // An image guest's copy and seed, per VM.
        let image = match guest {
            GuestBoot::Image(i) => Some(i),
            GuestBoot::Builtin(_) => None,
        };
        let copies: Vec<(usize, String)> = layout
            .iter()
            .filter(|_| image.is_some())
            .map(|s| (s.hypervisor, super::image::boot_volume(&s.domain)))
            .collect();
        let mut expected = volumes.clone();
        expected.extend(copies.iter().cloned());
        expected.extend(
            layout
                .iter()
                .filter(|_| image.is_some())
                .map(|s| (s.hypervisor, super::image::seed_volume(&s.domain))),
        );
        domains.sort();
        expected.sort();
        let (mut fd, mut fv) = (found.domains.clone(), found.volumes.clone());
        fd.sort();
        fv.sort();
        if self.fleet.keep && fd == domains && fv == expected {
            if let Some(i) = image {
                self.kept_copies(i, &copies)?;
            }
            let sizes = self.kept_sizes(&volumes)?;
            if let Some((v, size)) = sizes.iter().find(|(_, size)| *size < volume_bytes) {
                return Err(FleetError::Setup(format!(
                    "vms: the kept fleet {}'s volume {v} holds {size} bytes, less than the {volume_bytes} this run's disks need; `iofleet vms clean --hosts {}` removes the fleet, to be created again",
                    self.fleet.name,
                    self.file.display()
                )));
            }
            // Defined again below, from this description: the old definition goes (its
            // volumes stay).
            for (h, d) in &domains {
                let hv = &self.hypervisors[*h];
                let _ = hv.destroy(d);
                hv.undefine(d).map_err(FleetError::Setup)?;
            }
            notices.push(format!(
                "vms: the kept fleet {} is reused: {} domain(s) started again with this command's join file, {} volume(s) as they are (disks filled before are not filled again){}",
                self.fleet.name,
                domains.len(),
                volumes.len(),
                image.map_or(String::new(), |i| format!(
                    "; each VM's copy of {} as its guest left it (not copied again), its seed made again",
                    i.path.display()
                ))
            ));
            return Ok(true);
        }
        self.refuse(&found)
    }

    /// A kept fleet's copies of image `i` can hold it: one smaller than its virtual size
    /// was made from another image (the description changed since) and is refused,
    /// naming it and `vms clean`. (Larger is no proof of another image: a pool of
    /// block volumes rounds sizes up. Their bytes are the guests' by now, not compared.)
    fn kept_copies(&self, i: &Image, copies: &[(usize, String)]) -> Result<(), FleetError> {
        for (v, size) in self.kept_sizes(copies)? {
            if size < i.virtual_bytes {
                return Err(FleetError::Setup(format!(
                    "vms: the kept fleet {}'s copy {v} holds an image of {size} bytes, less than {} ({}'s virtual size): it was made from another image; `iofleet vms clean --hosts {}` removes the fleet, to be created again",
                    self.fleet.name,
                    i.virtual_bytes,
                    i.path.display(),
                    self.file.display()
                )));
            }
        }
        Ok(())
    }

    /// The capacity of each of `volumes` (hypervisor, name) in the fleet's pool.
    fn kept_sizes(&self, volumes: &[(usize, String)]) -> Result<Vec<(String, u64)>, FleetError> {
        let pool = &self.fleet.pool;
        volumes
            .iter()
            .map(|(h, v)| {
                let hv = &self.hypervisors[*h];
                hv.volume_size(pool, v)
                    .map(|size| (v.clone(), size))
                    .map_err(|e| {
                        FleetError::Setup(format!("vms.pool: '{pool}' on {}: {e}", hv.name()))
                    })
            })
            .collect()
    }

    /// Leftovers in the way, refused with their names and `iofleet vms clean`.
    fn refuse(&self, found: &Leftovers) -> Result<bool, FleetError> {
        let mut names: Vec<String> = found.domains.iter().map(|d| d.1.clone()).collect();
        names.extend(found.volumes.iter().map(|v| v.1.clone()));
        names.extend(found.files.iter().map(|f| f.1.display().to_string()));
        let differs = if self.fleet.keep {
            " and is not the fleet this run would keep (other VMs or disks), so it is not reused"
        } else {
            ""
        };
        Err(FleetError::Setup(format!(
            "vms: fleet {} is there already ({}: kept with keep = true, or left by a command that was killed){differs}; `iofleet vms clean --hosts {}` removes it",
            self.fleet.name,
            names.join(", "),
            self.file.display()
        )))
    }

    /// The fleet's join port: its TCP side on loopback only, for no one (the VMs come
    /// by channel); a VM's handshake may take its whole boot.
    fn open_port(&self, settings: &RunSettings) -> Result<JoinServer, FleetError> {
        JoinServer::open(
            "127.0.0.1:0",
            None,
            JoinSettings {
                expect: self.fleet.vms,
                host_timeout: settings.host_timeout,
                handshake_timeout: self.fleet.boot_timeout,
                ..Default::default()
            },
        )
        .map_err(|e| {
            FleetError::Setup(
                e.to_string()
                    .replace("--listen 127.0.0.1:0", "vms: the join port (127.0.0.1)"),
            )
        })
    }

    /// A boot timeout under KVM says how to fall back to software emulation.
    fn kvm_hint<T>(&self, waited: Result<T, FleetError>, dtype: &str) -> Result<T, FleetError> {
        match waited {
            Err(FleetError::Setup(m)) if dtype == "kvm" && m.starts_with("vms.boot_timeout") => {
                Err(FleetError::Setup(format!(
                    "{m}; the domains ran under KVM (vms.domain_type = \"{}\"): where a guest hangs under this hypervisor's KVM, domain_type = \"qemu\" boots it under software emulation",
                    match self.fleet.domain_type {
                        DomainType::Auto => "auto",
                        _ => "kvm",
                    }
                )))
            }
            w => w,
        }
    }

    /// Each VM's facts for the result: where it runs, its size, its disks, its way.
    fn vm_facts(
        &self,
        layout: &[VmSlot],
        timeline: &[VmTimeline],
        volume_bytes: u64,
        luns: &[Option<BTreeMap<String, u64>>],
    ) -> Vec<VmHost> {
        layout
            .iter()
            .map(|slot| VmHost {
                hypervisor: self.fleet.hypervisors[slot.hypervisor].clone(),
                domain: slot.domain.clone(),
                vcpus: self.fleet.vcpus,
                memory_bytes: self.fleet.memory_bytes,
                disks: slot
                    .volumes
                    .iter()
                    .enumerate()
                    .map(|(k, v)| VmDisk {
                        pool: self.fleet.pool.clone(),
                        volume: v.clone(),
                        bytes: luns[slot.hypervisor]
                            .as_ref()
                            .and_then(|l| l.get(v).copied())
                            .unwrap_or(volume_bytes),
                        bus: self.fleet.bus.name().into(),
                        cache: self.fleet.cache.name().into(),
                        io: self.fleet.io.name().into(),
                        target: xml::target_dev(self.fleet.bus, k as u32),
                        requests: None,
                    })
                    .collect(),
                timeline: timeline[slot.index as usize].clone(),
            })
            .collect()
    }

    /// Wait until every VM's agent has joined `port`: the members in rank order. A VM
    /// that stopped before joining is an error at once; one not joined within
    /// `boot_timeout` an error naming it. `Ok(None)` when `stop` was set first.
    fn await_joined(
        &self,
        port: &JoinServer,
        layout: &[VmSlot],
        timeline: &mut [VmTimeline],
        t0: Instant,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<Option<Vec<Member>>, FleetError> {
        let n = layout.len() as u32;
        let mut last_state = Instant::now();
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let members = port.members();
            for m in &members {
                if let Some(t) = timeline.get_mut(m.rank as usize) {
                    t.joined_s
                        .get_or_insert(m.joined_at.saturating_duration_since(t0).as_secs_f64());
                }
            }
            observer.status(&format!(
                "vms: {}/{n} VMs joined, {:.0} s",
                members.len(),
                t0.elapsed().as_secs_f64()
            ));
            if members.len() as u32 >= n {
                return port.wait(n, Duration::ZERO, stop).map(Some);
            }
            let missing: Vec<&VmSlot> = layout
                .iter()
                .filter(|s| !members.iter().any(|m| m.rank == s.index))
                .collect();
            if last_state.elapsed() >= Duration::from_secs(1) {
                last_state = Instant::now();
                for s in &missing {
                    let state = self.hypervisors[s.hypervisor]
                        .state(&s.domain)
                        .unwrap_or_default();
                    if !state.is_empty() && state != "running" && state != "paused" {
                        return Err(FleetError::Setup(format!(
                            "vms: {} (rank {}) is {state} and never joined{}",
                            s.domain,
                            s.index,
                            self.qemu_log_tail(s)
                        )));
                    }
                }
            }
            if t0.elapsed() >= self.fleet.boot_timeout {
                let names: Vec<String> = missing
                    .iter()
                    .map(|s| format!("{} (rank {})", s.domain, s.index))
                    .collect();
                let refused = port.refusals();
                return Err(FleetError::Setup(format!(
                    "vms.boot_timeout: {} of {n} VM(s) did not join within {}: {}{}{}",
                    missing.len(),
                    iofleet_profile::units::format_duration(self.fleet.boot_timeout),
                    names.join(", "),
                    if refused.is_empty() {
                        String::new()
                    } else {
                        format!("; {}", refused.join("; "))
                    },
                    missing
                        .first()
                        .map_or(String::new(), |s| self.qemu_log_tail(s))
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// The last lines of libvirt's log of VM `slot`'s QEMU on its hypervisor, for an
    /// error.
    fn qemu_log_tail(&self, slot: &VmSlot) -> String {
        let p = qemu_log(&slot.domain);
        match self.hypervisors[slot.hypervisor].files().tail(&p, 3) {
            Some(text) => format!("; {}: {}", p.display(), text.replace('\n', " | ")),
            None => String::new(),
        }
    }

    /// The hypervisors' request counts of every VM's disks now.
    fn requests_now(&self) -> RequestCounts {
        let mut out = RequestCounts::new();
        let Some((_, _, run)) = &self.joined else {
            return out;
        };
        for (h, hv) in self.hypervisors.iter().enumerate() {
            let uri = &self.fleet.hypervisors[h];
            let domains: Vec<String> = run
                .vms
                .iter()
                .filter(|v| &v.hypervisor == uri)
                .map(|v| v.domain.clone())
                .collect();
            // One domain at a time when the call for all fails (a VM gone).
            match hv.block_requests(&domains) {
                Ok(c) => out.extend(c),
                Err(_) => {
                    for d in domains {
                        out.extend(hv.block_requests(&[d]).unwrap_or_default());
                    }
                }
            }
        }
        out
    }
}

/// The agent a guest runs: this very iofleet, its debug symbols stripped when `objcopy`
/// is there; its bytes, and what `also` makes of a file holding them.
fn this_agent<T>(also: impl FnOnce(&Path) -> T) -> Result<(Vec<u8>, T), String> {
    let exe = std::env::current_exe().map_err(|e| format!("this iofleet: {e}"))?;
    let stripped = std::env::temp_dir().join(format!("iofleet-guest-{}", std::process::id()));
    let ok = std::process::Command::new("objcopy")
        .arg("--strip-debug")
        .arg(&exe)
        .arg(&stripped)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let agent = if ok { stripped } else { exe };
    let bytes = std::fs::read(&agent).map_err(|e| format!("{}: {e}", agent.display()));
    let made = also(&agent);
    if ok {
        let _ = std::fs::remove_file(&agent);
    }
    Ok((bytes?, made))
}

/// What every VM's initramfs holds but its join file: the agent (this very iofleet,
/// its debug symbols stripped when `objcopy` is there), its libraries and the kernel's
/// virtio modules.
struct GuestParts {
    iofleet: Vec<u8>,
    libs: Vec<(String, Vec<u8>)>,
    modules: Vec<(String, Vec<u8>)>,
}

impl GuestParts {
    fn read(kernel: &Kernel) -> Result<GuestParts, FleetError> {
        let fail = |e: String| FleetError::Setup(format!("vms: the guest's initramfs: {e}"));
        let (iofleet, libs) = this_agent(initramfs::linked_libraries).map_err(fail)?;
        let libs = libs
            .map_err(fail)?
            .into_iter()
            .map(|(g, h)| {
                std::fs::read(&h)
                    .map(|b| (g, b))
                    .map_err(|e| fail(format!("{}: {e}", h.display())))
            })
            .collect::<Result<_, _>>()?;
        let mods = Path::new("/lib/modules").join(&kernel.version);
        let dep = std::fs::read_to_string(mods.join("modules.dep"))
            .map_err(|e| fail(format!("{}: {e}", mods.display())))?;
        let builtin = std::fs::read_to_string(mods.join("modules.builtin")).unwrap_or_default();
        let modules = initramfs::module_order(&dep, &builtin, &GUEST_DRIVERS)
            .map_err(|e| FleetError::Input(format!("vms.guest.kernel: {e}")))?
            .into_iter()
            .map(|rel| {
                let name = rel.rsplit('/').next().unwrap_or(&rel).to_string();
                std::fs::read(mods.join(&rel))
                    .map(|b| (name, b))
                    .map_err(|e| fail(format!("{rel}: {e}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(GuestParts {
            iofleet,
            libs,
            modules,
        })
    }

    /// One VM's initramfs: these parts and its join file.
    fn archive(&self, join: &GuestJoin) -> Result<Vec<u8>, FleetError> {
        let join = serde_json::to_vec(join).map_err(|e| FleetError::Setup(e.to_string()))?;
        Ok(initramfs::archive(&Contents {
            iofleet: &self.iofleet,
            libs: self.libs.clone(),
            modules: self.modules.clone(),
            join: &join,
        }))
    }
}

impl Launcher for VmLauncher {
    type Where = Vms;

    fn plan(
        &self,
        groups: &[GroupPlan],
        settings: &RunSettings,
    ) -> Result<LaunchPlan<Vms>, FleetError> {
        let guest = GuestBoot::find(&self.fleet)?;
        let (group, mut notices) = self.group(groups)?;
        let disks = group.plan.fleet.disks_per_worker;
        if disks > super::MAX_DISKS {
            return Err(FleetError::Input(format!(
                "vms.disks: {disks} data disks per VM, at most {}",
                super::MAX_DISKS
            )));
        }
        let bytes = volume_bytes(&self.fleet, group.plan.fleet.disk_size.get());
        let layout = self.fleet.layout(disks);
        let hosts: Vec<HostSpec> = layout
            .iter()
            .map(|s| vm_host(&self.fleet, s, 0, planned_target(&self.fleet, disks)))
            .collect();
        let mut plan = plan::plan(&hosts, &[group], settings)?;
        notices.append(&mut plan.notices);
        let (dtype, auto) = planned_domain_type(&self.fleet);
        notices.extend(auto);
        plan.notices = notices;
        let fleet = &self.fleet;
        Ok(plan.map(|hosts| {
            let uri = |s: &VmSlot| fleet.hypervisors[s.hypervisor].clone();
            Vms {
                domains: layout
                    .iter()
                    .map(|s| (uri(s), s.domain.clone(), guest.domain_xml(fleet, s, dtype)))
                    .collect(),
                // Per VM: an image guest's copy and seed, then the data disks.
                volumes: layout
                    .iter()
                    .flat_map(|s| {
                        let image = match &guest {
                            GuestBoot::Image(i) => i.volumes(&s.domain).to_vec(),
                            GuestBoot::Builtin(_) => Vec::new(),
                        };
                        let data = s
                            .volumes
                            .iter()
                            .map(|v| (v.clone(), bytes, xml::volume_xml(v, bytes)));
                        image
                            .into_iter()
                            .chain(data)
                            .map(|(v, b, x)| (uri(s), fleet.pool.clone(), v, b, x))
                            .collect::<Vec<_>>()
                    })
                    .collect(),
                boot: layout.iter().map(|s| guest.boot_line(&s.domain)).collect(),
                hosts: hosts.0,
            }
        }))
    }

    fn materialize(
        &mut self,
        plan: LaunchPlan<Vms>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Prepared>, FleetError> {
        if self.fleet_for(&plan, stop, observer, notices)?.is_none() {
            return Ok(None);
        }
        let plan = plan.map(|v| Hosts(v.hosts));
        let prepared = self.agents.materialize(plan, stop, observer, notices)?;
        self.before = self.requests_now();
        Ok(prepared)
    }

    fn verify(
        &mut self,
        _plan: LaunchPlan<Vms>,
        _keep: usize,
    ) -> Result<Vec<HostVerified>, FleetError> {
        Err(FleetError::Input(
            "a fleet of VMs cannot be verified by a later command: each guest keeps its disks' verify journals in its own memory, gone when it stops (a run's --verify checks every read as it goes)".into(),
        ))
    }

    fn precondition(
        &mut self,
        plan: LaunchPlan<Vms>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
    ) -> Result<Option<Preconditioned>, FleetError> {
        // Preconditioned disks serve the runs of later commands: only a fleet that
        // stays, and that a later command reuses, can carry them there.
        if !self.fleet.keep {
            return Err(FleetError::Input(format!(
                "vms.keep: fleet '{}' is removed when this command ends, its preconditioned disks with it: set keep = true, and the next command reuses the fleet and its filled disks",
                self.fleet.name
            )));
        }
        let mut notices = Vec::new();
        if self
            .fleet_for(&plan, stop, observer, &mut notices)?
            .is_none()
        {
            return Ok(None);
        }
        let found = self
            .agents
            .precondition(plan.map(|v| Hosts(v.hosts)), stop, observer)?;
        Ok(found.map(|mut f| {
            f.notices.splice(0..0, notices);
            f
        }))
    }

    fn start(&mut self, epoch: Instant, tx: Sender<Msg>) -> Option<Duration> {
        self.agents.start(epoch, tx)
    }

    fn give_up(&mut self, source: usize) {
        self.agents.give_up(source)
    }

    fn finish(&mut self) -> Finished {
        let mut finished = self.agents.finish();
        let after = self.requests_now();
        let before = std::mem::take(&mut self.before);
        finished.vms = self.joined.as_ref().map(|(_, _, run)| {
            let mut run = run.clone();
            for vm in &mut run.vms {
                for d in &mut vm.disks {
                    let key = (vm.domain.clone(), d.target.clone());
                    d.requests = match (before.get(&key), after.get(&key)) {
                        (Some(b), Some(a)) => Some(VmDiskRequests {
                            reads: a.0.saturating_sub(b.0),
                            writes: a.1.saturating_sub(b.1),
                        }),
                        _ => None,
                    };
                }
            }
            run
        });
        finished
    }

    fn close(&mut self) -> Vec<String> {
        // The agents first: they run in the VMs about to go.
        let mut notices = self.agents.close();
        notices.extend(self.clean_up(self.fleet.keep));
        notices
    }
}

impl Drop for VmLauncher {
    /// A command that ended before `close` (an error, Ctrl-C while the VMs boot) still
    /// removes what it created.
    fn drop(&mut self) {
        if let Some(n) = self.clean_up(self.fleet.keep) {
            eprintln!("note: {n}");
        }
    }
}

/// `name` is one of fleet `fleet`'s objects: the domain `iofleet-FLEET-I`, its data disk
/// `iofleet-FLEET-I-dK`, its initramfs `iofleet-FLEET-I.initrd` or its kernel
/// `iofleet-FLEET-I.kernel`, or an image guest's copy of the image `iofleet-FLEET-I-boot`
/// and seed `iofleet-FLEET-I-seed`, and nothing of a fleet whose name merely starts the
/// same (`iofleet-FLEET-2-…` of fleet `FLEET-2`).
pub fn is_fleet_object(fleet: &str, name: &str) -> bool {
    let Some(rest) = name.strip_prefix(&format!("iofleet-{fleet}-")) else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // A VM's boot files and volumes carry its index alone.
    if let Some(i) = [".initrd", ".kernel", "-boot", "-seed"]
        .iter()
        .find_map(|s| rest.strip_suffix(s))
    {
        return digits(i);
    }
    match rest.split_once("-d") {
        Some((i, k)) => digits(i) && digits(k),
        None => digits(rest),
    }
}

/// What `iofleet vms clean` found of a fleet: per hypervisor, its domains, volumes and
/// boot files.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Leftovers {
    /// (hypervisor index, domain)
    pub domains: Vec<(usize, String)>,
    /// (hypervisor index, volume)
    pub volumes: Vec<(usize, String)>,
    /// (hypervisor index, kernel or initramfs)
    pub files: Vec<(usize, PathBuf)>,
}

impl Leftovers {
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty() && self.volumes.is_empty() && self.files.is_empty()
    }
}

/// Every object of `fleet` on its hypervisors (by name, `is_fleet_object`), whoever made
/// it. An error names the hypervisor or pool that could not be listed.
pub fn leftovers(fleet: &VmFleet, hvs: &[Box<dyn Hypervisor>]) -> Result<Leftovers, String> {
    let mut found = Leftovers::default();
    for (h, hv) in hvs.iter().enumerate() {
        let domains = hv
            .domains()
            .map_err(|e| format!("vms.hypervisors: '{}' cannot be reached: {e}", hv.name()))?;
        found.domains.extend(
            domains
                .into_iter()
                .filter(|d| is_fleet_object(&fleet.name, d))
                .map(|d| (h, d)),
        );
        let volumes = hv
            .volumes(&fleet.pool)
            .map_err(|e| format!("vms.pool: '{}' on {}: {e}", fleet.pool, hv.name()))?;
        found.volumes.extend(
            volumes
                .into_iter()
                .filter(|v| is_fleet_object(&fleet.name, v))
                .map(|v| (h, v)),
        );
        let mut files: Vec<String> = hv
            .files()
            .list(Path::new(BOOT_DIR))?
            .into_iter()
            .filter(|n| {
                (n.ends_with(".initrd") || n.ends_with(".kernel"))
                    && is_fleet_object(&fleet.name, n)
            })
            .collect();
        files.sort();
        found
            .files
            .extend(files.into_iter().map(|n| (h, Path::new(BOOT_DIR).join(n))));
    }
    Ok(found)
}

/// Remove what `leftovers` found: domains destroyed and undefined (their QEMU logs
/// removed), volumes deleted, files removed. What could not be removed.
pub fn remove(fleet: &VmFleet, hvs: &[Box<dyn Hypervisor>], found: &Leftovers) -> Vec<String> {
    let mut failed = Vec::new();
    for (h, d) in &found.domains {
        let hv = &hvs[*h];
        if let Err(e) = hv.destroy(d).and_then(|_| hv.undefine(d)) {
            failed.push(e);
        }
        let _ = hv.files().remove(&qemu_log(d));
    }
    for (h, v) in &found.volumes {
        if let Err(e) = hvs[*h].delete_volume(&fleet.pool, v) {
            failed.push(e);
        }
    }
    for (h, f) in &found.files {
        if let Err(e) = hvs[*h].files().remove(f) {
            failed.push(e);
        }
    }
    failed
}

/// libvirt's `Virsh` for each hypervisor of `fleet`, in order.
pub fn virsh_all(fleet: &VmFleet) -> Result<Vec<Box<dyn Hypervisor>>, String> {
    fleet
        .hypervisors
        .iter()
        .map(|u| Virsh::new(u).map(|v| Box::new(v) as Box<dyn Hypervisor>))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_one_domain_type_for_the_whole_fleet_asked_of_each_hypervisor() {
        let a = |v: &[(&str, bool)]| -> Vec<(String, bool)> {
            v.iter().map(|(n, k)| (n.to_string(), *k)).collect()
        };
        assert_eq!(auto_type(&a(&[("h1", true), ("h2", true)])).unwrap(), "kvm");
        assert_eq!(
            auto_type(&a(&[("h1", false), ("h2", false)])).unwrap(),
            "qemu"
        );
        let e = auto_type(&a(&[("h1", true), ("h2", false), ("h3", true)]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("vms.domain_type: \"auto\": h1, h3 offer(s) KVM and h2 do(es) not"),
            "{e}"
        );
        // A dry run with a remote hypervisor shows kvm and says the run decides there;
        // one with only this machine's decides here, with nothing to say.
        let remote = super::super::parse(
            "[vms]\nvms = 1\nhypervisors = [\"qemu:///system\", \"qemu+ssh://kvm2/system\"]",
        )
        .unwrap();
        let (t, notice) = planned_domain_type(&remote);
        assert_eq!(t, "kvm");
        assert!(notice.unwrap().contains("virsh capabilities"));
        let here = super::super::parse("[vms]\nvms = 1").unwrap();
        assert_eq!(
            planned_domain_type(&here),
            (domain_type(DomainType::Auto), None)
        );
        let fixed = super::super::parse(
            "[vms]\nvms = 1\ndomain_type = \"qemu\"\nhypervisors = [\"qemu+ssh://kvm2/system\"]",
        )
        .unwrap();
        assert_eq!(planned_domain_type(&fixed), ("qemu", None));
    }

    #[test]
    fn volumes_hold_the_disk_and_its_marker_in_whole_mib() {
        let f = super::super::parse("[vms]\nvms = 1").unwrap();
        assert_eq!(volume_bytes(&f, 64 << 20), 65 << 20);
        let f = super::super::parse("[vms]\nvms = 1\ndisk_size = \"100m\"").unwrap();
        assert_eq!(volume_bytes(&f, 64 << 20), 100 << 20);
        assert_eq!(
            initrd_path("iofleet-a-0"),
            Path::new("/var/lib/libvirt/boot/iofleet-a-0.initrd")
        );
    }

    #[test]
    fn a_fleet_s_objects_are_told_from_another_fleet_s_by_name() {
        for n in [
            "iofleet-a-0",
            "iofleet-a-12-d3",
            "iofleet-a-7.initrd",
            "iofleet-a-7.kernel",
            "iofleet-a-3-boot",
            "iofleet-a-3-seed",
        ] {
            assert!(is_fleet_object("a", n), "{n}");
        }
        for n in [
            "iofleet-a-2-0",
            "iofleet-a-b-0",
            "iofleet-a-",
            "iofleet-a-0-d",
            "iofleet-a-0-x1",
            "iofleet-ab-0",
            "other-a-0",
            "iofleet-a-0.qcow2",
            "iofleet-a-0-d1.kernel",
            "iofleet-a-0-d1.initrd",
            "iofleet-a-x.kernel",
            "iofleet-a-boot",
            "iofleet-a-0-d1-boot",
            "iofleet-a-0-seed.img",
            "iofleet-a-2-0-seed",
        ] {
            assert!(!is_fleet_object("a", n), "{n}");
        }
        assert!(is_fleet_object("a-2", "iofleet-a-2-0"));
    }

    #[test]
    fn a_missing_kernel_or_an_image_is_an_error_naming_the_key() {
        let f =
            super::super::parse("[vms]\nvms = 1\n[vms.guest]\nkernel = \"/nonexistent/vmlinuz-1\"")
                .unwrap();
        let e = guest_kernel(&f).unwrap_err().to_string();
        assert!(
            e.contains("vms.guest.kernel: /nonexistent/vmlinuz-1 does not exist"),
            "{e}"
        );
        let f = super::super::parse("[vms]\nvms = 1\n[vms.guest]\nimage = \"/i.qcow2\"").unwrap();
        let e = guest_kernel(&f).unwrap_err().to_string();
        assert!(e.contains("vms.guest.image"), "{e}");
        let e = GuestBoot::find(&f).unwrap_err().to_string();
        assert!(
            e.contains("vms.guest.image: /i.qcow2: does not exist"),
            "{e}"
        );
    }
}
