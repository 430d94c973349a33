//! What a run will do, as `Launcher::plan` decides it without writing anything or
//! contacting any host: `LaunchPlan<P>`, the part every launcher's plan has (the groups
//! as they will run, the engine, direct I/O, notices and the run's settings) around the
//! launcher's own typed half `P`, where the workers go: `local::Here` (I/O threads of
//! this process and each disk's layout), `Hosts` (each inventory host with its share)
//! or `Pods` (a Kubernetes fleet's objects and its pods as hosts). `materialize`
//! consumes the very plan `plan` made, typed, so no launcher checks at run time that it
//! was given its own. `Placement` is what any reader prints of a plan's half (`run
//! --dry-run`); this module holds only data, no launcher.

use iofleet_engine::target::{DiskLayout, TargetSpec};
use iofleet_profile::GroupPlan;

use crate::host::HostSpec;
use crate::settings::RunSettings;

/// A plan for one run: the common part, and `placement`, the launcher's own half
/// (`Placement`, the printable form, by default).
#[derive(Debug, Clone)]
pub struct LaunchPlan<P = Placement> {
    /// The groups as they will run (worker counts follow host pins or pods; a single
    /// group's disk size follows the target's layout).
    pub groups: Vec<GroupPlan>,
    /// The engine, as far as it is known before anything runs (`auto` is resolved
    /// where the workers run: here, or on each host).
    pub engine: String,
    /// The run uses O_DIRECT.
    pub direct: bool,
    /// Where the workers go.
    pub placement: P,
    /// What the user should know before the run (idle hosts, pins, device sizes, how
    /// the engine keeps I/Os in flight).
    pub notices: Vec<String>,
    /// The run's settings (a step's seed, a round's device age), which `materialize`
    /// runs with.
    pub settings: RunSettings,
}

impl<P> LaunchPlan<P> {
    /// The same plan with its placement turned into another by `f`.
    pub fn map<Q>(self, f: impl FnOnce(P) -> Q) -> LaunchPlan<Q> {
        LaunchPlan {
            groups: self.groups,
            engine: self.engine,
            direct: self.direct,
            placement: f(self.placement),
            notices: self.notices,
            settings: self.settings,
        }
    }
}

impl<P: Into<Placement>> LaunchPlan<P> {
    /// The plan as any reader sees it (what `run --dry-run` prints).
    pub fn shown(self) -> LaunchPlan {
        self.map(Into::into)
    }
}

/// Where a plan puts the workers, as a dry run prints it.
#[derive(Debug, Clone)]
pub enum Placement {
    /// I/O threads of this process, on this host's target.
    Here {
        host: String,
        /// The I/O threads: how many, the lanes they drive, and why that many.
        io_threads: String,
        /// The memory the plan needs and what this host has (`footprint`).
        memory: String,
        /// The target and every disk's file or device region (None: the engine
        /// touches no storage).
        target: Option<(TargetSpec, Vec<DiskLayout>)>,
    },
    /// Agents on an inventory's hosts, each with its share of the workers; their
    /// I/O threads and device regions are decided on each host.
    Hosts(Vec<(HostSpec, HostShare)>),
    /// A Kubernetes fleet: the objects to create and the pods they make, as hosts.
    Pods(Pods),
    /// A fleet of worker VMs: the volumes and domains to create, the VMs as hosts.
    Vms(Vms),
}

/// The agents' half of a plan: every inventory host, in its order, with its share of
/// the workers (an idle host or an observer included).
#[derive(Debug, Clone, PartialEq)]
pub struct Hosts(pub Vec<(HostSpec, HostShare)>);

impl From<Hosts> for Placement {
    fn from(h: Hosts) -> Self {
        Placement::Hosts(h.0)
    }
}

/// One host's part of a fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct HostShare {
    /// First global worker and how many (0: the host has nothing to run).
    pub base: u32,
    pub count: u32,
    /// Its share of each group: the group's worker range clipped to the host's.
    pub groups: Vec<GroupPlan>,
}

/// A Kubernetes fleet's half of a plan: the objects `materialize` applies, what they
/// make (shown by a dry run), and the pods as the agents' hosts, each with its share.
#[derive(Debug, Clone)]
pub struct Pods {
    /// The objects, in the order to apply them, as `kubectl apply -f -` takes them.
    pub objects: Vec<serde_json::Value>,
    /// kubectl's context (None: its current one) and the namespace.
    pub context: Option<String>,
    pub namespace: String,
    /// Each pod's volumes (one per disk of its worker): their size, `filesystem` or
    /// `block`, and StorageClass (None: the cluster's default).
    pub volume_bytes: u64,
    pub volume_mode: String,
    pub storage_class: Option<String>,
    /// The objects stay after the command (`keep = true`).
    pub keep: bool,
    /// The pods in order, as hosts (their disks are the volumes), with their shares.
    pub hosts: Vec<(HostSpec, HostShare)>,
}

impl From<Pods> for Placement {
    fn from(p: Pods) -> Self {
        Placement::Pods(p)
    }
}

/// A fleet of worker VMs' half of a plan: what `materialize` creates through each
/// hypervisor (shown by a dry run, which contacts none), and the VMs as hosts.
#[derive(Debug, Clone)]
pub struct Vms {
    /// Each domain: its hypervisor (libvirt URI), name and XML, in VM order.
    pub domains: Vec<(String, String, String)>,
    /// Each data disk's volume: hypervisor, pool, name, bytes and its XML.
    pub volumes: Vec<(String, String, String, u64, String)>,
    /// How each VM boots, by domain, in words (its kernel and the initramfs iofleet
    /// writes, or its copy of the image and its seed).
    pub boot: Vec<String>,
    /// The VMs in order, as hosts (their disks the data disks), with their shares.
    pub hosts: Vec<(HostSpec, HostShare)>,
}

impl From<Vms> for Placement {
    fn from(v: Vms) -> Self {
        Placement::Vms(v)
    }
}
