//! The result model: what a finished (or interrupted) run reports. This is the JSON
//! contract (`docs/result.schema.json`, `docs/results.md`); exporters, the results store
//! and comparisons all read this one type. Field names are part of the contract: adding
//! a field is compatible, renaming or removing one bumps `SCHEMA_VERSION`.
//!
//! A figure that was not measured is `None` (JSON `null`, `–` in tables), never 0: CPU
//! and memory of a run whose recording process died, the latencies of a direction with
//! no I/O, outstanding I/O and the interval median of a run that measured nothing.

use serde::{Deserialize, Serialize};

use crate::ops::{OpStats, Sample};
use crate::summary::OpSummary;
use crate::usage::{HostCpu, HostDisk, HostMemory, HostNet};

/// 2: figures that were not measured are null (were 0); `stored` added.
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    /// The run's identity in the results store (None: not saved).
    #[serde(default)]
    pub stored: Option<StoredRun>,
    pub run: RunInfo,
    pub summary: RunSummary,
    /// Per stream of the profile, over the measured phase.
    pub streams: Vec<StreamSummary>,
    /// Every interval of warm-up and measurement, in time order.
    pub intervals: Vec<IntervalRow>,
    /// Per worker, over the measured phase.
    pub workers: Vec<WorkerSummary>,
    /// Per host, over the measured phase (one entry for a run on this host alone).
    #[serde(default)]
    pub hosts: Vec<HostSummary>,
    /// Per worker group, over the measured phase (one entry for a single profile).
    #[serde(default)]
    pub groups: Vec<GroupSummary>,
    /// Per host, every interval (warm-up included) per direction, in `hosts` order.
    #[serde(default)]
    pub host_intervals: Vec<PartIntervals>,
    /// Per worker group, every interval per direction, in `groups` order.
    #[serde(default)]
    pub group_intervals: Vec<PartIntervals>,
    /// Things the user should know about how the run was carried out.
    pub notices: Vec<String>,
    /// Whether and when the SNIA steady-state rule held (`--steady-state` only; absent
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<crate::steady::SteadyState>,
    /// Whether the run kept its quorum of hosts (`crate::validity::judge`); a result
    /// stored before runs were judged reads as valid.
    #[serde(default)]
    pub validity: Validity,
}

/// What the quorum of hosts asked of a run (`crate::validity`) and what the run kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quorum {
    /// The rule: `all` (neither flag: every host), `any` (`--tolerate-host-loss`), or
    /// `--min-hosts` as given (`15`, `90%`).
    pub min_hosts: String,
    /// Hosts with work that had to keep running to the end.
    pub needed: u32,
    /// Hosts that had work in the run (observer hosts are not counted).
    pub with_work: u32,
    /// Hosts with work that were lost.
    pub lost: u32,
}

/// Whether a run stands for its fleet, and why not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validity {
    /// False when the run fell below its quorum.
    pub valid: bool,
    /// Why the run is invalid, one sentence each (empty when valid).
    pub reasons: Vec<String>,
    /// The quorum the run was judged by; None for a result stored before runs were
    /// judged (read as valid).
    pub quorum: Option<Quorum>,
}

impl Default for Validity {
    /// Valid and unjudged: what a result stored before validity existed reads as.
    fn default() -> Self {
        Validity {
            valid: true,
            reasons: Vec::new(),
            quorum: None,
        }
    }
}

/// Who a run is in the results store: what `--name` and `--label` said of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    /// Short id (8 hex digits).
    pub id: String,
    pub name: String,
    pub labels: std::collections::BTreeMap<String, String>,
    /// complete, hosts-lost, interrupted, incomplete or running.
    pub status: String,
}

impl RunResult {
    /// Whether any measured time was recorded: false for a run interrupted while
    /// preparing or warming up, whose figures are all unknown.
    pub fn measured(&self) -> bool {
        self.run.duration_s > 0.0
    }
}

/// One measured interval singled out by the summary (the median-IOPS or the peak-IOPS
/// interval): where it lies in `intervals` and its figures per direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalPoint {
    /// The interval's `intervals[].index`.
    pub index: u32,
    /// Start of the interval, seconds since the timeline start (start of warm-up).
    pub t_s: f64,
    pub duration_s: f64,
    pub iops: f64,
    pub all: IntervalOps,
    pub read: IntervalOps,
    pub write: IntervalOps,
}

impl IntervalPoint {
    fn of(i: &IntervalRow) -> Self {
        IntervalPoint {
            index: i.index,
            t_s: i.t_s,
            duration_s: i.duration_s,
            iops: i.iops,
            all: i.all.clone(),
            read: i.read.clone(),
            write: i.write.clone(),
        }
    }
}

/// The intervals the summary singles out, among those `iops_median_interval` counts
/// (measured, at least half of `interval_s` long).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalHeadline {
    /// The median-IOPS interval: with the counted intervals ordered by IOPS (ties by
    /// time), the one at position ⌈n/2⌉ (1-based), i.e. the lower of the two middle
    /// ones when n is even. None when no interval counts.
    pub median_interval: Option<IntervalPoint>,
    /// The interval with the highest IOPS (the earliest of equal ones).
    pub peak_interval: Option<IntervalPoint>,
}

impl IntervalHeadline {
    /// The points of `intervals` (intervals nominally `interval_s` long).
    pub fn of(intervals: &[IntervalRow], interval_s: f64) -> Self {
        let mut counted = median_candidates(intervals, interval_s);
        counted.sort_by(|a, b| a.iops.total_cmp(&b.iops).then(a.index.cmp(&b.index)));
        let median =
            (!counted.is_empty()).then(|| IntervalPoint::of(counted[(counted.len() - 1) / 2]));
        let peak = counted
            .iter()
            .max_by(|a, b| a.iops.total_cmp(&b.iops).then(b.index.cmp(&a.index)))
            .map(|i| IntervalPoint::of(i));
        IntervalHeadline {
            median_interval: median,
            peak_interval: peak,
        }
    }
}

/// The intervals that `summary.iops_median_interval` is the median of: measured (not
/// warm-up) and at least half of `interval_s` long (`counts_in_median`).
pub fn median_candidates(intervals: &[IntervalRow], interval_s: f64) -> Vec<&IntervalRow> {
    let ns = |s: f64| (s * 1e9).round() as u64;
    let nominal = ns(interval_s);
    intervals
        .iter()
        .filter(|i| !i.warmup && crate::summary::counts_in_median(ns(i.duration_s), nominal))
        .collect()
}

impl RunResult {
    /// The median-IOPS and peak-IOPS intervals, derived from `intervals` alone, so a
    /// live run and the same run recomputed from the store give the same points.
    pub fn interval_headline(&self) -> IntervalHeadline {
        IntervalHeadline::of(&self.intervals, self.run.interval_s)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub profile: String,
    pub description: String,
    pub engine: String,
    /// RFC 3339 UTC time at which warm-up (or measurement, without warm-up) began.
    pub started_at: String,
    /// Seconds of measurement actually performed (less than planned when interrupted).
    pub duration_s: f64,
    pub warmup_s: f64,
    pub interval_s: f64,
    pub interrupted: bool,
    pub direct: bool,
    /// The target as given (directory or devices); "none" for the null engine.
    pub target: String,
    /// The controller's host name.
    pub hostname: String,
    pub iofleet_version: String,
    /// Spread of the I/O sources' actual start instants (latest − earliest), ms; None
    /// when it was not measured.
    #[serde(default)]
    pub start_skew_ms: Option<f64>,
    /// The resolved plan (fleet shape, timing, streams) exactly as run.
    pub plan: iofleet_profile::RecordedPlan,
    /// Seconds from the start of the run until every worker was ready to start: targets
    /// created and filled, engines open, hosts connected (a Kubernetes fleet's pods
    /// created too). None for a run stored before this was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare_s: Option<f64>,
    /// A Kubernetes fleet's objects and StorageClass (absent for any other fleet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<KubeRun>,
    /// A fleet of worker VMs iofleet created through libvirt, and each VM (absent for
    /// every other fleet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vms: Option<VmRun>,
    /// How every host emptied its page cache before the start (`--drop-caches`: `local`
    /// or the command); absent when the caches were left as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_caches: Option<String>,
    /// The start instant (the timeline's zero: every interval's `t_s` counts from it),
    /// ns since the Unix epoch on the controller's clock: what series from outside the
    /// run (a storage daemon's own log, an exporter's timestamps) are aligned by. None
    /// for a run interrupted before its start, or stored before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_ns: Option<u64>,
}

/// What a run on a Kubernetes fleet ran on (docs/kubernetes.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KubeRun {
    /// The kubeconfig context (None: kubectl's current one).
    pub context: Option<String>,
    pub namespace: String,
    /// The fleet's name: its objects are `iofleet-NAME`.
    pub fleet: String,
    pub image: String,
    /// `filesystem` or `block`.
    pub volume_mode: String,
    /// The pods were there already, kept by an earlier run (`keep = true`).
    pub reused: bool,
    /// Seconds from creating the objects (or finding them) to every pod Ready.
    pub ready_after_s: f64,
    /// The StorageClass the claims were bound from, as the cluster describes it (None:
    /// it could not be read, e.g. without `get` on storageclasses).
    pub storage_class: Option<StorageClassFacts>,
    /// Kept for the next run (`keep = true`), else deleted at the end.
    pub kept: bool,
    /// `job` for an Indexed Job whose pods' agents joined (absent: the StatefulSet mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Job mode: seconds from creating the objects to every pod's agent joined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined_after_s: Option<f64>,
}

/// What a run on a fleet of worker VMs ran on (docs/vms.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VmRun {
    /// The fleet's name: its domains are `iofleet-NAME-I`.
    pub fleet: String,
    /// `qemu` (software emulation) or `kvm`.
    pub domain_type: String,
    /// What the guests booted: the kernel, with the initramfs iofleet built.
    pub guest: String,
    /// Seconds from the first volume created to every VM's agent joined.
    pub joined_after_s: f64,
    /// Kept for the next command (`keep = true`), else removed at its end.
    pub kept: bool,
    /// Each VM, in rank order (its domain is its host's name).
    pub vms: Vec<VmHost>,
}

/// One worker VM: where it ran, its size, its data disks and its way to the fleet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VmHost {
    /// The libvirt URI of its hypervisor.
    pub hypervisor: String,
    pub domain: String,
    pub vcpus: u32,
    pub memory_bytes: u64,
    pub disks: Vec<VmDisk>,
    pub timeline: VmTimeline,
}

/// One data disk of a VM: its volume and how the hypervisor attaches it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VmDisk {
    pub pool: String,
    pub volume: String,
    pub bytes: u64,
    /// `virtio-blk` or `virtio-scsi`.
    pub bus: String,
    /// QEMU's cache and I/O modes.
    pub cache: String,
    pub io: String,
    /// The disk's name in the domain (`vda`, `sdb`).
    pub target: String,
    /// The requests the hypervisor completed for it over the run (`virsh domstats
    /// --block` after the fill and at the end); None when it could not be read (a VM
    /// lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<VmDiskRequests>,
}

/// A disk's completed requests as the hypervisor counted them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmDiskRequests {
    pub reads: u64,
    pub writes: u64,
}

/// A VM's way to the fleet, seconds from the first volume created by the controller's
/// clock: defined, running (started), and joined (the join port accepted its agent).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmTimeline {
    pub defined_s: Option<f64>,
    pub running_s: Option<f64>,
    pub joined_s: Option<f64>,
}

/// A StorageClass as the cluster describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StorageClassFacts {
    pub name: String,
    pub provisioner: String,
    #[serde(default)]
    pub parameters: std::collections::BTreeMap<String, String>,
    pub reclaim_policy: Option<String>,
    pub volume_binding_mode: Option<String>,
}

/// One pod of a Kubernetes fleet: where it ran and its volumes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KubePod {
    pub pod: String,
    /// The node it was scheduled on.
    pub node: Option<String>,
    pub volumes: Vec<KubeVolume>,
    /// Job mode: when the pod was seen created, its claims bound, it Ready, and when its
    /// agent joined, in seconds from creating the objects (absent: the StatefulSet mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<PodTimeline>,
}

/// A pod's way to the fleet, seconds from creating the objects by the controller's
/// clock: `created`, `bound` and `ready` as its polls of the cluster (every half second)
/// first saw them, `joined` when the join port accepted its agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PodTimeline {
    pub created_s: Option<f64>,
    pub bound_s: Option<f64>,
    pub ready_s: Option<f64>,
    pub joined_s: Option<f64>,
}

/// One volume of a pod: its claim and the volume bound to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KubeVolume {
    /// The PersistentVolumeClaim.
    pub claim: String,
    /// The PersistentVolume bound to it.
    pub volume: Option<String>,
    pub storage_class: Option<String>,
    /// The CSI driver (or in-tree provisioner) that made it.
    pub provisioner: Option<String>,
    /// Seconds from the claim's creation to its volume's (the API server's
    /// timestamps, whole seconds): how long the storage took to provision it. None
    /// when the volume is older than the claim (pre-provisioned) or unreadable.
    pub bound_after_s: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub all: OpSummary,
    pub read: OpSummary,
    pub write: OpSummary,
    /// Median over measured intervals of each interval's IOPS (None: no full interval
    /// was measured).
    pub iops_median_interval: Option<f64>,
    pub outstanding_io: Outstanding,
    /// None when not measured (e.g. the recording process died).
    pub cpu: Option<CpuSummary>,
    /// None when not measured (e.g. the recording process died).
    pub memory: Option<MemorySummary>,
    pub errors: ErrorSummary,
    /// The generator's self-check over the measured phase (null in simulated time).
    #[serde(default)]
    pub generator: Option<crate::GeneratorSummary>,
    /// End-to-end data verification (`--verify`); absent when the run did not verify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifySummary>,
    /// Network traffic of the hosts that ran workers over the measured phase, summed
    /// (absent when no host reported it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<crate::HostNet>,
    /// The observer hosts over the measured phase, together: their mean CPU and memory
    /// use, their network and disk traffic summed (absent: no observer host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observers: Option<crate::HostResources>,
}

/// Corruptions detail kept per run (the count is never capped).
pub const MAX_CORRUPTION_DETAILS: usize = 20;

/// What the reads of a verified run (or `iofleet verify`) found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifySummary {
    /// 4 KiB units read and checked (header, offset, checksum, sequence).
    pub units_checked: u64,
    /// Units whose checksum could not be relied on because a write to them was in flight
    /// while they were read (neither checked nor counted as corrupt).
    pub units_racing: u64,
    /// Corrupt units found, over the whole run (warm-up included).
    pub corruptions: u64,
    /// The first corruptions in detail.
    pub first: Vec<Corruption>,
}

impl std::ops::AddAssign<&VerifySummary> for VerifySummary {
    fn add_assign(&mut self, o: &VerifySummary) {
        self.units_checked += o.units_checked;
        self.units_racing += o.units_racing;
        self.corruptions += o.corruptions;
        let room = MAX_CORRUPTION_DETAILS.saturating_sub(self.first.len());
        self.first.extend(o.first.iter().take(room).cloned());
    }
}

/// One corrupt 4 KiB unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Corruption {
    /// The host whose disk it is.
    pub host: String,
    pub worker: u32,
    pub disk: u32,
    /// The disk file or device.
    pub path: String,
    /// Offset of the unit in the disk (bytes from the start of the disk's region).
    pub offset: u64,
    /// no-header, checksum, foreign-disk, misdirected, stale or missing.
    pub kind: String,
    pub expected: String,
    pub found: String,
    /// When the read found it, seconds since the run's timeline start (None for
    /// `iofleet verify`).
    pub t_s: Option<f64>,
}

impl std::fmt::Display for Corruption {
    /// The greppable line: `corruption: host H disk w000-d001 offset 12288 (PATH): KIND: expected E, found F`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "corruption: host {} disk w{:03}-d{:03} offset {} ({}): {}: expected {}, found {}",
            self.host,
            self.worker,
            self.disk,
            self.offset,
            self.path,
            self.kind,
            self.expected,
            self.found
        )
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Outstanding {
    /// Σ qd over every thread lane of the fleet (None: not recorded).
    pub configured: Option<u64>,
    /// Time-averaged I/Os in flight (Σ latency ÷ elapsed, Little's law); None when
    /// nothing was measured.
    pub measured_mean: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSummary {
    /// Process user CPU, percent of one core (200 = two cores busy).
    pub usr_pct: f64,
    /// Process system CPU, percent of one core.
    pub sys_pct: f64,
    /// Whole-host busy CPU, percent of all cores (includes kernel threads such as loop).
    pub host_pct: f64,
    /// Process CPU (usr + sys) microseconds per completed I/O (None without I/O).
    pub us_per_io: Option<f64>,
    /// Whole-host busy CPU microseconds per completed I/O (None without I/O).
    pub host_us_per_io: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySummary {
    /// Peak resident set size of the iofleet process, MiB.
    pub rss_peak_mib: f64,
    /// Host memory in use (total − available), percent.
    pub host_used_pct: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorSummary {
    /// I/Os that failed, over the whole run (warm-up included).
    pub count: u64,
    /// The first few failures in detail (the count is never truncated).
    pub first: Vec<ErrorDetail>,
    /// I/O threads that stopped on an engine failure, with the reason.
    pub failed_threads: Vec<String>,
    /// Per disk that saw an I/O error: its count, first failures and whether it was
    /// taken out; sorted by worker, then disk. Absent in results stored before it existed.
    #[serde(default)]
    pub disks: Vec<DiskErrors>,
}

/// The I/O errors of one disk (a worker's disk index).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiskErrors {
    pub worker: u32,
    pub disk: u32,
    /// Failed I/Os on this disk over the whole run (warm-up included).
    pub count: u64,
    /// The disk's first failures, earliest first (at most [`DiskErrors::FIRST`]).
    pub first: Vec<ErrorDetail>,
    /// When the disk was taken out of the run (seconds since the timeline start), or None.
    pub taken_out_s: Option<f64>,
}

impl DiskErrors {
    /// Failures kept in detail per disk.
    pub const FIRST: usize = 5;

    pub fn new(worker: u32, disk: u32) -> Self {
        DiskErrors {
            worker,
            disk,
            count: 0,
            first: Vec::new(),
            taken_out_s: None,
        }
    }

    /// Fold `other` (the same disk, seen by another thread or host) into `self`.
    pub fn merge(&mut self, other: &DiskErrors) {
        self.count += other.count;
        self.first.extend(other.first.iter().cloned());
        self.first.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        self.first.truncate(Self::FIRST);
        self.taken_out_s = match (self.taken_out_s, other.taken_out_s) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// Merge `add` into the per-disk list `into`, keyed by (worker, disk), kept sorted.
    pub fn merge_into(into: &mut Vec<DiskErrors>, add: &[DiskErrors]) {
        for d in add {
            match into.binary_search_by_key(&(d.worker, d.disk), |x| (x.worker, x.disk)) {
                Ok(i) => into[i].merge(d),
                Err(i) => {
                    let mut fresh = DiskErrors::new(d.worker, d.disk);
                    fresh.merge(d);
                    into.insert(i, fresh);
                }
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub worker: u32,
    pub disk: u32,
    pub thread: u32,
    pub op: String,
    pub offset: u64,
    pub len: u32,
    pub errno: i32,
    pub message: String,
    /// Seconds since the run's timeline start.
    pub t_s: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamSummary {
    pub name: String,
    pub all: OpSummary,
    pub read: OpSummary,
    pub write: OpSummary,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalRow {
    pub index: u32,
    /// Start of the interval, seconds since the timeline start (start of warm-up).
    pub t_s: f64,
    pub duration_s: f64,
    pub warmup: bool,
    pub ios: u64,
    pub iops: f64,
    pub mbps: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    /// Latency percentiles of the interval, µs; None for a direction without I/O in it.
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub read_p50_us: Option<f64>,
    pub read_p99_us: Option<f64>,
    pub write_p50_us: Option<f64>,
    pub write_p99_us: Option<f64>,
    pub errors: u64,
    /// Hosts lost before the end of this interval: a non-zero value marks an interval
    /// measured with part of the fleet missing.
    #[serde(default)]
    pub hosts_lost: u32,
    /// The generator's self-check for this interval (absent in simulated time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<crate::GeneratorSummary>,
    /// The interval's figures per direction (mean, p90, p99.9 and max included).
    #[serde(default)]
    pub all: IntervalOps,
    #[serde(default)]
    pub read: IntervalOps,
    #[serde(default)]
    pub write: IntervalOps,
    /// Network traffic of the hosts that run workers over the interval, summed (every
    /// interface but loopback; absent when no host reported it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<crate::HostNet>,
    /// The observer hosts over the interval, together (`HostResources::together`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observers: Option<crate::HostResources>,
}

/// One direction (or both) over one interval: rates and latency, µs. Latencies are None
/// for a direction without I/O in the interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalOps {
    pub ios: u64,
    pub iops: f64,
    /// MB/s (10^6 bytes per second).
    pub mbps: f64,
    pub mean_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p99_9_us: Option<f64>,
    pub max_us: Option<f64>,
}

impl IntervalOps {
    /// The figures of `o` over an interval of `duration_s` seconds.
    pub fn from_ops(o: &OpStats, duration_s: f64) -> Self {
        let rate = |x: u64| {
            if duration_s > 0.0 {
                x as f64 / duration_s
            } else {
                0.0
            }
        };
        let us = |ns: u64| ns as f64 / 1000.0;
        let known = o.ios > 0;
        let q = |p: f64| known.then(|| us(o.hist.quantile_ns(p)));
        IntervalOps {
            ios: o.ios,
            iops: rate(o.ios),
            mbps: rate(o.bytes) / 1e6,
            mean_us: known.then(|| o.mean_ns() / 1000.0),
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            p99_9_us: q(0.999),
            max_us: known.then(|| us(o.hist.max_ns())),
        }
    }
}

/// One interval of one part of the fleet (a host or a worker group), per direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartRow {
    /// The fleet's interval (`intervals[].index`) this row belongs to.
    pub index: u32,
    pub all: IntervalOps,
    pub read: IntervalOps,
    pub write: IntervalOps,
    /// What the host spent over the interval, as it reported it (host rows only; absent
    /// when unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::HostResources>,
}

impl PartRow {
    /// The row of a part's merged sample over an interval of `duration_s` seconds; the
    /// live run and recomputation from the store call this alike.
    pub fn from_sample(index: u32, duration_s: f64, s: &Sample) -> Self {
        let (read, write) = (s.read(), s.write());
        let mut all = read.clone();
        all += &write;
        PartRow {
            index,
            all: IntervalOps::from_ops(&all, duration_s),
            read: IntervalOps::from_ops(&read, duration_s),
            write: IntervalOps::from_ops(&write, duration_s),
            usage: None,
        }
    }
}

/// A host's or a worker group's interval rows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PartIntervals {
    /// Host or group name (as in `hosts[].host` or `groups[].name`).
    pub name: String,
    /// One row per interval of the run, in time order.
    pub rows: Vec<PartRow>,
}

impl IntervalRow {
    /// The row for one interval of `duration_s` seconds from the fleet's merged sample;
    /// used by the live run and by recomputation from stored histograms alike.
    pub fn from_sample(
        index: u32,
        t_s: f64,
        duration_s: f64,
        warmup: bool,
        hosts_lost: u32,
        s: &Sample,
    ) -> Self {
        let (r, w): (OpStats, OpStats) = (s.read(), s.write());
        let mut a = r.clone();
        a += &w;
        let rate = |x: u64| {
            if duration_s > 0.0 {
                x as f64 / duration_s
            } else {
                0.0
            }
        };
        let q = |o: &OpStats, p: f64| (o.ios > 0).then(|| o.hist.quantile_ns(p) as f64 / 1000.0);
        IntervalRow {
            index,
            t_s,
            duration_s,
            warmup,
            ios: a.ios,
            iops: rate(a.ios),
            mbps: rate(a.bytes) / 1e6,
            read_iops: rate(r.ios),
            write_iops: rate(w.ios),
            p50_us: q(&a, 0.5),
            p99_us: q(&a, 0.99),
            read_p50_us: q(&r, 0.5),
            read_p99_us: q(&r, 0.99),
            write_p50_us: q(&w, 0.5),
            write_p99_us: q(&w, 0.99),
            errors: a.errors,
            hosts_lost,
            generator: None,
            all: IntervalOps::from_ops(&a, duration_s),
            read: IntervalOps::from_ops(&r, duration_s),
            write: IntervalOps::from_ops(&w, duration_s),
            net: None,
            observers: None,
        }
    }
}

/// Whether a host is a straggler: it was not lost, the fleet has several hosts, and it
/// started more than 100 ms after the earliest host or delivered under 80% of the
/// median host's IOPS per worker (`iops` and `median_iops` are per worker).
pub fn is_straggler(
    lost: bool,
    hosts: usize,
    late_ms: Option<f64>,
    earliest_late_ms: f64,
    iops: f64,
    median_iops: f64,
) -> bool {
    !lost
        && hosts > 1
        && (late_ms.is_some_and(|l| l - earliest_late_ms > 100.0) || iops < 0.8 * median_iops)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSummary {
    pub host: String,
    pub workers: u32,
    pub all: OpSummary,
    pub read: OpSummary,
    pub write: OpSummary,
    /// How late this host started I/O against the chosen start instant, ms (remote hosts).
    pub start_late_ms: Option<f64>,
    /// When the host was lost, seconds since the timeline start (None: it finished).
    pub lost_at_s: Option<f64>,
    /// An observer host: it ran no I/O and reported only what it spent (CPU, memory,
    /// network, disks), e.g. a storage node of the system under test.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub observer: bool,
    /// Started more than 100 ms after the earliest host, or, in some group it runs,
    /// delivered under 80% of that group's reference IOPS per worker (its scheduled
    /// rate, else the median of the group's hosts that were not lost); see `fold`.
    pub straggler: bool,
    /// What the host spent over the measured phase, as it reported it (None: unknown,
    /// e.g. a host lost before its first measured interval).
    #[serde(default)]
    pub cpu: Option<HostCpu>,
    #[serde(default)]
    pub memory: Option<HostMemory>,
    #[serde(default)]
    pub net: Option<HostNet>,
    /// None also when no block device lies under the host's targets.
    #[serde(default)]
    pub disk: Option<HostDisk>,
    /// The storage software an observer host watched (`observe`), per entry, over the
    /// measured phase; absent for other hosts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage: Vec<crate::StorageRates>,
    /// What the storage's own exporter said (an observer's `scrape`), per metric, over
    /// the measured phase; absent for other hosts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scraped: Vec<crate::ScrapedRates>,
    /// A pod of a Kubernetes fleet: its node and volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<KubePod>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    pub name: String,
    /// The profile the group runs.
    pub profile: String,
    /// Global index of the group's first worker, and its number of workers.
    pub first_worker: u32,
    pub workers: u32,
    /// IOPS each worker was scheduled to issue when every stream of the group is
    /// rate-limited (absent: closed loop); its hosts are judged against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_worker: Option<f64>,
    pub all: OpSummary,
    pub read: OpSummary,
    pub write: OpSummary,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerSummary {
    pub worker: u32,
    pub host: String,
    pub all: OpSummary,
    pub read: OpSummary,
    pub write: OpSummary,
    /// Per disk of the worker, over the measured phase; they add up to the worker's
    /// figures. Empty when the run was recorded without per-disk data (older stores).
    #[serde(default)]
    pub disks: Vec<DiskSummary>,
}

/// One disk of one worker, over the measured phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiskSummary {
    /// The disk's index within its worker (0-based, as in `ErrorDetail::disk`).
    pub disk: u32,
    pub all: OpSummary,
    pub read: OpSummary,
    pub write: OpSummary,
    /// What the disk completed outside the measured phase, which the figures above
    /// leave out but the device (or hypervisor, or array) counted too. None in results
    /// from before it was recorded, and for workers below a relay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<Unmeasured>,
}

/// I/Os of one disk that completed outside the measured phase: during the warm-up,
/// and after the measured phase ended (in flight at its end, completed while the
/// threads drained). Failed I/Os count too: they were requests all the same. With the
/// measured figures' I/Os and errors they add up to every request the disk was sent
/// from the start instant on, so a counter read before the warm-up and after the run
/// (`/proc/diskstats`, a hypervisor's, an array's) can be matched exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmeasured {
    pub warmup_reads: u64,
    pub warmup_writes: u64,
    pub after_reads: u64,
    pub after_writes: u64,
}

impl Unmeasured {
    pub fn is_zero(&self) -> bool {
        *self == Unmeasured::default()
    }
}

impl std::ops::AddAssign<&Unmeasured> for Unmeasured {
    fn add_assign(&mut self, o: &Unmeasured) {
        self.warmup_reads += o.warmup_reads;
        self.warmup_writes += o.warmup_writes;
        self.after_reads += o.after_reads;
        self.after_writes += o.after_writes;
    }
}

/// One disk's `Unmeasured`, as a source reports it at its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskUnmeasured {
    pub worker: u32,
    pub disk: u32,
    pub ios: Unmeasured,
}

impl DiskUnmeasured {
    /// Each listed disk's counts into `workers`' per-disk summaries (a disk the
    /// summaries do not list, or a worker they do not hold, is left out).
    pub fn fill(workers: &mut [WorkerSummary], all: impl IntoIterator<Item = DiskUnmeasured>) {
        let at: std::collections::HashMap<u32, usize> = workers
            .iter()
            .enumerate()
            .map(|(i, w)| (w.worker, i))
            .collect();
        for d in all {
            let Some(&i) = at.get(&d.worker) else {
                continue;
            };
            if let Some(s) = workers[i].disks.iter_mut().find(|s| s.disk == d.disk) {
                *s.unmeasured.get_or_insert_with(Unmeasured::default) += &d.ios;
            }
        }
    }

    /// The per-disk counts `workers`' summaries carry, as a list.
    pub fn of(workers: &[WorkerSummary]) -> Vec<DiskUnmeasured> {
        workers
            .iter()
            .flat_map(|w| {
                w.disks.iter().filter_map(move |d| {
                    d.unmeasured.map(|ios| DiskUnmeasured {
                        worker: w.worker,
                        disk: d.disk,
                        ios,
                    })
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod disk_error_tests {
    use super::*;

    fn detail(t_s: f64) -> ErrorDetail {
        ErrorDetail {
            worker: 0,
            disk: 1,
            thread: 0,
            op: "write".into(),
            offset: 0,
            len: 4096,
            errno: 28,
            message: "No space left on device".into(),
            t_s,
        }
    }

    #[test]
    fn per_disk_errors_merge_by_disk_keeping_the_earliest() {
        let mut all = Vec::new();
        let a = DiskErrors {
            count: 4,
            first: (0..4).map(|i| detail(1.0 + i as f64)).collect(),
            taken_out_s: Some(3.0),
            ..DiskErrors::new(0, 1)
        };
        let b = DiskErrors {
            count: 3,
            first: vec![detail(0.5), detail(9.0), detail(0.7)],
            taken_out_s: Some(2.0),
            ..DiskErrors::new(0, 1)
        };
        let other = DiskErrors {
            count: 1,
            first: vec![detail(0.1)],
            ..DiskErrors::new(0, 0)
        };
        DiskErrors::merge_into(&mut all, &[a]);
        DiskErrors::merge_into(&mut all, &[b, other]);
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].worker, all[0].disk, all[0].count), (0, 0, 1));
        assert_eq!(all[0].taken_out_s, None);
        let d = &all[1];
        assert_eq!((d.disk, d.count, d.taken_out_s), (1, 7, Some(2.0)));
        let times: Vec<f64> = d.first.iter().map(|e| e.t_s).collect();
        assert_eq!(times, vec![0.5, 0.7, 1.0, 2.0, 3.0]);
    }
}

#[cfg(test)]
mod interval_headline_tests {
    use super::*;

    fn row(index: u32, iops: f64, duration_s: f64, warmup: bool) -> IntervalRow {
        let ops = IntervalOps {
            iops,
            mean_us: Some(1000.0 + index as f64),
            p99_us: Some(2000.0 + index as f64),
            ..Default::default()
        };
        IntervalRow {
            index,
            t_s: index as f64,
            duration_s,
            warmup,
            ios: iops as u64,
            iops,
            mbps: 0.0,
            read_iops: iops,
            write_iops: 0.0,
            p50_us: None,
            p99_us: ops.p99_us,
            read_p50_us: None,
            read_p99_us: ops.p99_us,
            write_p50_us: None,
            write_p99_us: None,
            errors: 0,
            hosts_lost: 0,
            generator: None,
            all: ops.clone(),
            read: ops,
            write: IntervalOps::default(),
            net: None,
            observers: None,
        }
    }

    #[test]
    fn odd_count_takes_the_middle_interval_and_skips_warmup_and_short_ones() {
        let rows = vec![
            row(0, 9_000.0, 1.0, true), // warm-up: never counted
            row(1, 300.0, 1.0, false),
            row(2, 100.0, 1.0, false),
            row(3, 200.0, 1.0, false),
            row(4, 10_000.0, 0.4, false), // shorter than half an interval
        ];
        let h = IntervalHeadline::of(&rows, 1.0);
        let m = h.median_interval.unwrap();
        assert_eq!((m.index, m.iops), (3, 200.0));
        assert_eq!(m.all.mean_us, Some(1003.0));
        assert_eq!(m.read.p99_us, Some(2003.0));
        let p = h.peak_interval.unwrap();
        assert_eq!((p.index, p.iops, p.t_s), (1, 300.0, 1.0));
        // The median of the same intervals' IOPS is that interval's IOPS.
        let iops: Vec<f64> = median_candidates(&rows, 1.0)
            .iter()
            .map(|i| i.iops)
            .collect();
        assert_eq!(crate::summary::median(&iops), m.iops);
    }

    #[test]
    fn even_count_takes_the_lower_middle_interval_and_ties_go_to_the_earliest() {
        let rows = vec![
            row(0, 400.0, 1.0, false),
            row(1, 100.0, 1.0, false),
            row(2, 300.0, 1.0, false),
            row(3, 200.0, 1.0, false),
        ];
        let h = IntervalHeadline::of(&rows, 1.0);
        assert_eq!(h.median_interval.unwrap().index, 3);
        assert_eq!(h.peak_interval.unwrap().index, 0);
        let ties = vec![
            row(0, 100.0, 1.0, false),
            row(1, 500.0, 1.0, false),
            row(2, 100.0, 1.0, false),
            row(3, 500.0, 1.0, false),
        ];
        let h = IntervalHeadline::of(&ties, 1.0);
        assert_eq!(h.median_interval.unwrap().index, 2);
        assert_eq!(h.peak_interval.unwrap().index, 1);
        assert_eq!(
            IntervalHeadline::of(&ties[..0], 1.0),
            IntervalHeadline::default()
        );
    }
}
