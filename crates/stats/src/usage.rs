//! What a host spends while it runs workers: iofleet's own CPU, the whole host's CPU,
//! memory, network and the block devices under its targets; on an observer host, also
//! what the storage software it watches spends (`StorageUsage`, one per `observe` entry). A `HostUsage` covers one
//! span of wall time (an interval) as raw amounts, so spans add up with `+=` and every
//! rate is computed once, over the measured phase, in `HostUsage::summary`. Reading
//! /proc is the fleet crate's job; this module only holds and folds the numbers.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// Raw amounts over a span of wall time. Zero-valued device fields with
/// `disk_devices == 0` mean no block device was found under the targets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostUsage {
    /// Wall time covered, seconds.
    pub wall_s: f64,
    /// CPU time of the iofleet process (all its threads, io_uring workers included).
    pub proc_usr_s: f64,
    pub proc_sys_s: f64,
    /// Busy and total CPU time of the whole host, all cores, seconds.
    pub host_busy_s: f64,
    pub host_total_s: f64,
    /// Peak resident set of the iofleet process so far, MiB.
    pub rss_peak_mib: f64,
    /// Host memory in use (total − available) in percent, times `wall_s` (a time
    /// integral, so spans add up to a time-weighted mean).
    pub mem_used_pct_s: f64,
    /// Bytes received and sent on every network interface but loopback.
    pub net_rx_bytes: u64,
    pub net_tx_bytes: u64,
    /// Completed I/Os, bytes moved and busy time summed over the block devices under
    /// the host's targets, and how many devices that is.
    pub disk_ios: u64,
    pub disk_bytes: u64,
    pub disk_busy_s: f64,
    pub disk_devices: u32,
    /// What each watched storage process set or cgroup spent (an observer's `observe`
    /// entries, in their order; empty elsewhere).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage: Vec<StorageUsage>,
    /// What the storage's own exporter said (an observer's `scrape`, one per metric, in
    /// their order; empty elsewhere).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scraped: Vec<ScrapedUsage>,
}

/// One exporter metric (summed over its label sets) over a span, as raw amounts: spans
/// add up with `+=`, the figure comes from `ScrapedUsage::rates`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScrapedUsage {
    /// The metric's name.
    pub name: String,
    /// It counts I/Os (`iops:NAME`): shown beside iofleet's IOPS.
    #[serde(default)]
    pub iops: bool,
    /// Its `# TYPE` is counter: the figure is its increase per second; else (a gauge)
    /// its time-weighted mean.
    #[serde(default)]
    pub counter: bool,
    /// A counter's increase, or a gauge's value times `span_s`, over the exporter's own
    /// time between its samples.
    #[serde(default)]
    pub amount: f64,
    /// The exporter's time (its sample timestamps, else the scrapes') the amount covers.
    #[serde(default)]
    pub span_s: f64,
    /// New samples the span holds.
    #[serde(default)]
    pub samples: u32,
    /// The last value seen, and when it was taken (seconds from the run's start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
    /// The exporter answered without this metric (at the span's end).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
    /// A mean latency (`latency:NAME`): `amount` is latency summed over the span in
    /// seconds (a `NAME_sum`/`NAME_count` pair's Δsum, or a latency gauge's value times
    /// its seconds held) and `count` what it is divided by (the pair's Δcount, the
    /// I/Os; the gauge's seconds held). The figure is `amount / count`, in ms.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latency: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub count: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl AddAssign<&ScrapedUsage> for ScrapedUsage {
    fn add_assign(&mut self, o: &ScrapedUsage) {
        self.count += o.count;
        self.latency |= o.latency;
        self.amount += o.amount;
        self.span_s += o.span_s;
        self.samples += o.samples;
        self.counter |= o.counter;
        if o.last.is_some() {
            self.last = o.last;
            self.at_s = o.at_s;
        }
        self.missing = o.missing;
    }
}

impl ScrapedUsage {
    /// Its figure: a counter's rate per second, a gauge's mean; None without two samples.
    pub fn rates(&self) -> ScrapedRates {
        let value = if self.latency {
            // The summed latency over what it sums (I/Os, or a gauge's seconds), in ms:
            // a mean of the span, not of the intervals' means; none without an I/O.
            (self.count > 0.0).then(|| self.amount / self.count * 1e3)
        } else {
            // Per second for a counter, the time-weighted mean for a gauge: both are the
            // amount over the exporter's time.
            (self.span_s > 0.0).then(|| self.amount / self.span_s)
        };
        ScrapedRates {
            name: self.name.clone(),
            iops: self.iops,
            counter: self.counter,
            latency: self.latency,
            value,
            count: self.count,
            span_s: self.span_s,
            samples: self.samples,
            hosts: 1,
        }
    }
}

/// What the exporter said about one metric: "the storage said X".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScrapedRates {
    pub name: String,
    /// It counts I/Os (shown beside iofleet's IOPS).
    #[serde(default)]
    pub iops: bool,
    /// A counter (the value is per second) or a gauge (the value is its mean).
    #[serde(default)]
    pub counter: bool,
    /// A mean latency (`latency:NAME`): the value is in ms, the mean over `count` (the
    /// I/Os the exporter counted; for a latency gauge, its seconds held) — a mean, not a
    /// percentile.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latency: bool,
    /// None when the exporter gave fewer than two samples in the span (a latency: or
    /// counted no I/O in it).
    pub value: Option<f64>,
    /// What a latency's mean is over (see `latency`); 0 for other metrics.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub count: f64,
    /// The exporter's time the value covers, and its new samples in it.
    pub span_s: f64,
    pub samples: u32,
    /// Observer hosts these figures cover (summed over them).
    pub hosts: u32,
}

/// Several hosts' exporter figures together: values (and sample counts) summed per
/// metric name.
fn scraped_together<'a>(all: impl IntoIterator<Item = &'a ScrapedRates>) -> Vec<ScrapedRates> {
    let mut out: Vec<ScrapedRates> = Vec::new();
    for r in all {
        match out.iter_mut().find(|x| x.name == r.name) {
            Some(x) => {
                x.value = match (x.value, r.value) {
                    // A mean latency: weighted by what each mean is over, so it is the
                    // hosts' summed latency over their summed I/Os.
                    (Some(a), Some(b)) if x.latency => {
                        let n = x.count + r.count;
                        (n > 0.0).then(|| (a * x.count + b * r.count) / n)
                    }
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
                x.count += r.count;
                x.span_s = x.span_s.max(r.span_s);
                x.samples += r.samples;
                x.hosts += r.hosts;
            }
            None => out.push(r.clone()),
        }
    }
    out
}

/// Add `add` into `into`, metric by metric (matched by name; a new name is appended).
pub fn add_scraped(into: &mut Vec<ScrapedUsage>, add: &[ScrapedUsage]) {
    for a in add {
        match into.iter_mut().find(|x| x.name == a.name) {
            Some(x) => *x += a,
            None => into.push(a.clone()),
        }
    }
}

/// What the processes or the cgroup one `observe` entry names spent over a span, as raw
/// amounts: spans add up with `+=`, rates come from `StorageUsage::rates`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageUsage {
    /// The entry as written: a process name (`ceph-osd`), `cmdline:TEXT` or
    /// `cgroup:/PATH`.
    pub name: String,
    /// CPU time of the matching processes (or the cgroup), user and system, seconds.
    pub usr_s: f64,
    pub sys_s: f64,
    /// Memory in use (resident set, or the cgroup's `memory.current`) in MiB, times the
    /// span's seconds: a time integral, so spans add up to a time-weighted mean.
    pub mem_mib_s: f64,
    /// Bytes the processes had read from and written to storage (not from the page cache).
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Voluntary and involuntary context switches of their threads.
    pub ctx_switches: u64,
    /// Processes matching at the span's end (the most over spans added up).
    pub processes: u32,
    /// The whole of an observer's entries, each process once however many entries
    /// match it (sent after the entries): what `storage_cpu` and the other totals read,
    /// so entries that overlap are not added up twice.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub total: bool,
}

impl AddAssign<&StorageUsage> for StorageUsage {
    fn add_assign(&mut self, o: &StorageUsage) {
        self.usr_s += o.usr_s;
        self.sys_s += o.sys_s;
        self.mem_mib_s += o.mem_mib_s;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.ctx_switches += o.ctx_switches;
        self.processes = self.processes.max(o.processes);
        self.total |= o.total;
    }
}

/// Add `add` into `into`, entry by entry (matched by name; a new name is appended).
pub fn add_storage(into: &mut Vec<StorageUsage>, add: &[StorageUsage]) {
    for a in add {
        match into.iter_mut().find(|x| x.name == a.name) {
            Some(x) => *x += a,
            None => into.push(a.clone()),
        }
    }
}

impl StorageUsage {
    /// Rates over `wall_s` seconds on a host whose CPUs gave `host_total_s` seconds in
    /// it; None for a span of no time.
    pub fn rates(&self, wall_s: f64, host_total_s: f64) -> Option<StorageRates> {
        if wall_s <= 0.0 {
            return None;
        }
        let cpu_s = self.usr_s + self.sys_s;
        Some(StorageRates {
            name: self.name.clone(),
            cpu_pct: cpu_s / wall_s * 100.0,
            usr_pct: self.usr_s / wall_s * 100.0,
            sys_pct: self.sys_s / wall_s * 100.0,
            host_cpu_pct: if host_total_s > 0.0 {
                cpu_s / host_total_s * 100.0
            } else {
                0.0
            },
            memory_mib: self.mem_mib_s / wall_s,
            read_mbps: self.read_bytes as f64 / wall_s / 1e6,
            write_mbps: self.write_bytes as f64 / wall_s / 1e6,
            ctx_switches_per_s: self.ctx_switches as f64 / wall_s,
            processes: self.processes,
            hosts: 1,
            total: self.total,
        })
    }
}

/// What the storage software one `observe` entry names spent, as rates: the "vSAN CPU"
/// of a Linux store.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageRates {
    /// The `observe` entry.
    pub name: String,
    /// User + system CPU, percent of one core (200 = two cores busy); `usr_pct` and
    /// `sys_pct` split it.
    pub cpu_pct: f64,
    pub usr_pct: f64,
    pub sys_pct: f64,
    /// The same CPU as a share of all the host's cores, percent.
    pub host_cpu_pct: f64,
    /// Memory in use, MiB, time-weighted mean.
    pub memory_mib: f64,
    /// Read from and written to storage, 10^6 bytes per second.
    pub read_mbps: f64,
    pub write_mbps: f64,
    pub ctx_switches_per_s: f64,
    /// Processes matching (at the end of the span).
    pub processes: u32,
    /// Observer hosts these figures cover.
    pub hosts: u32,
    /// The whole of the entries, each process once (`StorageUsage::total`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub total: bool,
}

/// The entries to show: every entry, and the whole (`StorageRates::total`) only beside
/// two entries or more (beside one it is that entry again).
pub fn shown_storage(all: &[StorageRates]) -> impl Iterator<Item = &StorageRates> {
    let entries = all.iter().filter(|e| !e.total).count();
    all.iter().filter(move |e| !e.total || entries > 1)
}

/// Several hosts' figures of the same entries together: CPU, memory, I/O, switches and
/// processes summed; the share of the hosts' cores the mean over the hosts.
fn storage_together<'a>(all: impl IntoIterator<Item = &'a StorageRates>) -> Vec<StorageRates> {
    let mut out: Vec<StorageRates> = Vec::new();
    for r in all {
        match out.iter_mut().find(|x| x.name == r.name) {
            Some(x) => {
                // Weighted by hosts, so a mean of means stays the mean over hosts.
                let n = f64::from(x.hosts + r.hosts);
                x.host_cpu_pct =
                    (x.host_cpu_pct * f64::from(x.hosts) + r.host_cpu_pct * f64::from(r.hosts)) / n;
                x.cpu_pct += r.cpu_pct;
                x.usr_pct += r.usr_pct;
                x.sys_pct += r.sys_pct;
                x.memory_mib += r.memory_mib;
                x.read_mbps += r.read_mbps;
                x.write_mbps += r.write_mbps;
                x.ctx_switches_per_s += r.ctx_switches_per_s;
                x.processes += r.processes;
                x.hosts += r.hosts;
            }
            None => out.push(r.clone()),
        }
    }
    out
}

impl AddAssign<&HostUsage> for HostUsage {
    fn add_assign(&mut self, o: &HostUsage) {
        self.wall_s += o.wall_s;
        self.proc_usr_s += o.proc_usr_s;
        self.proc_sys_s += o.proc_sys_s;
        self.host_busy_s += o.host_busy_s;
        self.host_total_s += o.host_total_s;
        self.rss_peak_mib = self.rss_peak_mib.max(o.rss_peak_mib);
        self.mem_used_pct_s += o.mem_used_pct_s;
        self.net_rx_bytes += o.net_rx_bytes;
        self.net_tx_bytes += o.net_tx_bytes;
        self.disk_ios += o.disk_ios;
        self.disk_bytes += o.disk_bytes;
        self.disk_busy_s += o.disk_busy_s;
        self.disk_devices = self.disk_devices.max(o.disk_devices);
        add_storage(&mut self.storage, &o.storage);
        add_scraped(&mut self.scraped, &o.scraped);
    }
}

/// One host's CPU over the measured phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCpu {
    /// iofleet's user CPU, percent of one core (200 = two cores busy).
    pub usr_pct: f64,
    /// iofleet's system CPU, percent of one core.
    pub sys_pct: f64,
    /// The whole host's busy CPU, percent of all its cores.
    pub host_pct: f64,
}

/// One host's memory over the measured phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostMemory {
    /// Peak resident set of iofleet on the host, MiB.
    pub rss_peak_mib: f64,
    /// Host memory in use (total − available), percent, time-weighted mean.
    pub host_used_pct: f64,
}

/// One host's network traffic (every interface but loopback), 10^6 bytes per second.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostNet {
    pub rx_mbps: f64,
    pub tx_mbps: f64,
}

/// The block devices under one host's targets, as the kernel counts them
/// (/proc/diskstats): what reached the devices, not what iofleet issued.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostDisk {
    pub iops: f64,
    /// 10^6 bytes per second.
    pub mbps: f64,
    /// Share of the time the devices had I/O in flight, percent (mean over devices).
    pub busy_pct: f64,
    /// How many devices these figures cover.
    pub devices: u32,
}

/// The per-host resource figures of a result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostResources {
    pub cpu: HostCpu,
    pub memory: HostMemory,
    pub net: HostNet,
    /// None when no block device lies under the host's targets (tmpfs, the null engine).
    pub disk: Option<HostDisk>,
    /// The storage software an observer watches, per `observe` entry (empty: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage: Vec<StorageRates>,
    /// What the storage's own exporter said, per scraped metric (empty: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scraped: Vec<ScrapedRates>,
}

impl HostResources {
    /// A figure of the watched storage software as a whole: the observers' wholes
    /// (each process once, however many entries match it), or in a result from before
    /// they were sent every entry summed; None when no observer watched any.
    pub fn storage_whole(&self, f: impl Fn(&StorageRates) -> f64) -> Option<f64> {
        if self.storage.is_empty() {
            return None;
        }
        Some(match self.storage.iter().find(|e| e.total) {
            Some(whole) => f(whole),
            None => self.storage.iter().map(f).sum(),
        })
    }

    /// What the storage's exporter said its IOPS were: the `iops:` metrics' figures
    /// summed; None when no such metric had two samples.
    pub fn storage_said_iops(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .scraped
            .iter()
            .filter(|m| m.iops)
            .filter_map(|m| m.value)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    /// What the storage's exporter said its mean latency was, ms: every `latency:`
    /// metric's summed latency over their summed counts (reads and writes weighted by
    /// their I/Os); None when none counted an I/O. A mean, not a percentile.
    pub fn storage_said_latency_ms(&self) -> Option<f64> {
        let (sum, n) = self
            .scraped
            .iter()
            .filter(|m| m.latency && m.count > 0.0)
            .filter_map(|m| m.value.map(|v| (v * m.count, m.count)))
            .fold((0.0, 0.0), |(s, n), (v, c)| (s + v, n + c));
        (n > 0.0).then(|| sum / n)
    }

    /// Several hosts' figures together: traffic, I/Os and bytes summed; CPU and memory
    /// shares the mean over the hosts; iofleet's own CPU summed; the largest iofleet
    /// peak; device busy time the mean over all their devices. None for no host.
    pub fn together<'a>(hosts: impl IntoIterator<Item = &'a HostResources>) -> Option<Self> {
        let hosts: Vec<&HostResources> = hosts.into_iter().collect();
        if hosts.is_empty() {
            return None;
        }
        let n = hosts.len() as f64;
        let sum = |f: &dyn Fn(&HostResources) -> f64| hosts.iter().map(|h| f(h)).sum::<f64>();
        let disks: Vec<&HostDisk> = hosts.iter().filter_map(|h| h.disk.as_ref()).collect();
        let devices: u32 = disks.iter().map(|d| d.devices).sum();
        Some(HostResources {
            cpu: HostCpu {
                usr_pct: sum(&|h| h.cpu.usr_pct),
                sys_pct: sum(&|h| h.cpu.sys_pct),
                host_pct: sum(&|h| h.cpu.host_pct) / n,
            },
            memory: HostMemory {
                rss_peak_mib: hosts
                    .iter()
                    .map(|h| h.memory.rss_peak_mib)
                    .fold(0.0, f64::max),
                host_used_pct: sum(&|h| h.memory.host_used_pct) / n,
            },
            net: HostNet {
                rx_mbps: sum(&|h| h.net.rx_mbps),
                tx_mbps: sum(&|h| h.net.tx_mbps),
            },
            disk: (devices > 0).then(|| HostDisk {
                iops: disks.iter().map(|d| d.iops).sum(),
                mbps: disks.iter().map(|d| d.mbps).sum(),
                busy_pct: disks
                    .iter()
                    .map(|d| d.busy_pct * d.devices as f64)
                    .sum::<f64>()
                    / devices as f64,
                devices,
            }),
            storage: storage_together(hosts.iter().flat_map(|h| h.storage.iter())),
            scraped: scraped_together(hosts.iter().flat_map(|h| h.scraped.iter())),
        })
    }
}

/// What an interval's hosts spent, split by role: the network of the hosts that run
/// workers, summed, and the observer hosts' figures together (`HostResources::together`).
/// `rates` holds each host's rates (`rates_of`); `observer` is indexed like it (missing
/// entries: a worker host).
pub fn split_by_role(
    rates: &[Option<HostResources>],
    observer: &[bool],
) -> (Option<HostNet>, Option<HostResources>) {
    let is_observer = |h: usize| observer.get(h).copied().unwrap_or(false);
    let of = |want: bool| {
        rates
            .iter()
            .enumerate()
            .filter(move |(h, _)| is_observer(*h) == want)
            .filter_map(|(_, r)| r.as_ref())
    };
    let net = HostResources::together(of(false)).map(|r| r.net);
    (net, HostResources::together(of(true)))
}

/// Each host's rates over its span (`HostUsage::summary`), as `split_by_role` and the
/// host rows take them.
pub fn rates_of(usage: &[Option<HostUsage>]) -> Vec<Option<HostResources>> {
    usage
        .iter()
        .map(|u| u.as_ref().and_then(HostUsage::summary))
        .collect()
}

impl HostUsage {
    /// CPU used by every process on the host but iofleet over the span, in CPUs' worth,
    /// out of the host's CPUs; None when the span or the host's CPU was not measured.
    pub fn other_load(&self) -> Option<crate::OtherLoad> {
        if self.wall_s <= 0.0 || self.host_total_s <= 0.0 {
            return None;
        }
        let own = self.proc_usr_s + self.proc_sys_s;
        Some(crate::OtherLoad {
            cpus: ((self.host_busy_s - own) / self.wall_s).max(0.0),
            of_cpus: self.host_total_s / self.wall_s,
        })
    }

    /// The most loaded host's other load among `hosts` (None when none was measured).
    pub fn busiest_other_load<'a>(
        hosts: impl IntoIterator<Item = &'a HostUsage>,
    ) -> Option<crate::OtherLoad> {
        hosts
            .into_iter()
            .filter_map(HostUsage::other_load)
            .max_by(|a, b| a.cpus.total_cmp(&b.cpus))
    }

    /// Rates over the span this usage covers; None when it covers no time.
    pub fn summary(&self) -> Option<HostResources> {
        if self.wall_s <= 0.0 {
            return None;
        }
        let w = self.wall_s;
        let rate = |x: u64| x as f64 / w;
        Some(HostResources {
            cpu: HostCpu {
                usr_pct: self.proc_usr_s / w * 100.0,
                sys_pct: self.proc_sys_s / w * 100.0,
                host_pct: if self.host_total_s > 0.0 {
                    self.host_busy_s / self.host_total_s * 100.0
                } else {
                    0.0
                },
            },
            memory: HostMemory {
                rss_peak_mib: self.rss_peak_mib,
                host_used_pct: self.mem_used_pct_s / w,
            },
            net: HostNet {
                rx_mbps: rate(self.net_rx_bytes) / 1e6,
                tx_mbps: rate(self.net_tx_bytes) / 1e6,
            },
            disk: (self.disk_devices > 0).then(|| HostDisk {
                iops: rate(self.disk_ios),
                mbps: rate(self.disk_bytes) / 1e6,
                busy_pct: self.disk_busy_s / (w * self.disk_devices as f64) * 100.0,
                devices: self.disk_devices,
            }),
            storage: self
                .storage
                .iter()
                .filter_map(|st| st.rates(w, self.host_total_s))
                .collect(),
            scraped: self.scraped.iter().map(ScrapedUsage::rates).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_add_up_to_rates_over_the_whole() {
        let a = HostUsage {
            wall_s: 1.0,
            proc_usr_s: 0.5,
            proc_sys_s: 0.25,
            host_busy_s: 1.0,
            host_total_s: 2.0,
            rss_peak_mib: 10.0,
            mem_used_pct_s: 40.0,
            net_rx_bytes: 1_000_000,
            net_tx_bytes: 3_000_000,
            disk_ios: 100,
            disk_bytes: 409_600,
            disk_busy_s: 0.5,
            disk_devices: 1,
            storage: Vec::new(),
            scraped: Vec::new(),
        };
        let b = HostUsage {
            wall_s: 3.0,
            proc_usr_s: 0.5,
            host_busy_s: 1.0,
            host_total_s: 6.0,
            rss_peak_mib: 12.0,
            mem_used_pct_s: 3.0 * 60.0,
            disk_ios: 300,
            disk_busy_s: 0.5,
            disk_devices: 1,
            ..Default::default()
        };
        let mut t = a.clone();
        t += &b;
        let r = t.summary().unwrap();
        assert_eq!(r.cpu.usr_pct, 25.0);
        assert!((r.cpu.host_pct - 25.0).abs() < 1e-9);
        assert_eq!(r.memory.rss_peak_mib, 12.0);
        assert!((r.memory.host_used_pct - 55.0).abs() < 1e-9);
        assert_eq!(r.net.rx_mbps, 0.25);
        let d = r.disk.unwrap();
        assert_eq!((d.iops, d.busy_pct), (100.0, 25.0));
        let none = HostUsage {
            wall_s: 1.0,
            ..Default::default()
        };
        assert!(none.summary().unwrap().disk.is_none());
        assert!(HostUsage::default().summary().is_none());
    }

    /// The storage software as a whole is the observers' whole entry when they sent
    /// one (each process once), else every entry summed; the whole is shown only beside
    /// two entries or more.
    #[test]
    fn the_whole_of_the_storage_entries_is_read_once() {
        let e = |name: &str, cpu_pct: f64, total: bool| StorageRates {
            name: name.into(),
            cpu_pct,
            hosts: 1,
            total,
            ..Default::default()
        };
        let of = |storage: Vec<StorageRates>| HostResources {
            storage,
            ..Default::default()
        };
        // A daemon watched by name and by its cgroup: 40% each, 40% as a whole.
        let both = of(vec![
            e("osd", 40.0, false),
            e("cgroup:/osd", 40.0, false),
            e("all", 40.0, true),
        ]);
        assert_eq!(both.storage_whole(|s| s.cpu_pct), Some(40.0));
        assert_eq!(shown_storage(&both.storage).count(), 3);
        // Two hosts' wholes together: summed.
        let two = HostResources::together([&both, &both]).unwrap();
        assert_eq!(two.storage_whole(|s| s.cpu_pct), Some(80.0));
        // One entry: its whole is not shown again.
        let one = of(vec![e("osd", 40.0, false), e("all", 40.0, true)]);
        assert_eq!(shown_storage(&one.storage).count(), 1);
        // A result from before the whole: the entries summed.
        let old = of(vec![e("osd", 40.0, false), e("mon", 5.0, false)]);
        assert_eq!(old.storage_whole(|s| s.cpu_pct), Some(45.0));
        assert_eq!(of(Vec::new()).storage_whole(|s| s.cpu_pct), None);
    }

    /// Two observers' mean latencies together are their summed latency over their
    /// summed I/Os, not the mean of their means; the storage's mean latency weighs the
    /// read and write metrics by their I/Os too.
    #[test]
    fn said_latencies_go_together_by_their_counts() {
        let lat = |name: &str, amount: f64, count: f64| ScrapedUsage {
            name: name.into(),
            latency: true,
            amount,
            count,
            span_s: 1.0,
            samples: 1,
            ..Default::default()
        };
        let host = |v: Vec<ScrapedUsage>| {
            HostUsage {
                wall_s: 1.0,
                scraped: v,
                ..Default::default()
            }
            .summary()
            .unwrap()
        };
        // Host a: 100 reads at 1 ms; host b: 300 reads at 3 ms and 100 writes at 10 ms.
        let a = host(vec![lat("r", 0.1, 100.0)]);
        let b = host(vec![lat("r", 0.9, 300.0), lat("w", 1.0, 100.0)]);
        assert_eq!(a.scraped[0].value, Some(1.0));
        let both = HostResources::together([&a, &b]).unwrap();
        let r = &both.scraped[0];
        assert_eq!((r.count, r.hosts), (400.0, 2));
        assert!((r.value.unwrap() - 2.5).abs() < 1e-9, "{r:?}");
        // Reads and writes: 2.0 s over 500 I/Os.
        assert!((both.storage_said_latency_ms().unwrap() - 4.0).abs() < 1e-9);
        assert_eq!(both.storage_said_iops(), None);
        // No I/O counted anywhere: no latency.
        let idle = host(vec![lat("r", 0.0, 0.0)]);
        assert_eq!(idle.scraped[0].value, None);
        assert_eq!(idle.storage_said_latency_ms(), None);
    }

    /// A watched entry's spans add up by name into rates over the whole; hosts together
    /// sum an entry's CPU and I/O and take the mean of its share of the hosts' cores.
    #[test]
    fn storage_entries_add_up_by_name_and_hosts_go_together() {
        let osd = |usr_s: f64, write_bytes: u64| StorageUsage {
            name: "ceph-osd".into(),
            usr_s,
            sys_s: 0.25,
            mem_mib_s: 100.0,
            write_bytes,
            ctx_switches: 50,
            processes: 2,
            ..Default::default()
        };
        let span = |st: Vec<StorageUsage>| HostUsage {
            wall_s: 1.0,
            host_total_s: 4.0,
            storage: st,
            ..Default::default()
        };
        let mon = StorageUsage {
            name: "cgroup:/mon".into(),
            sys_s: 0.5,
            processes: 1,
            ..Default::default()
        };
        let mut t = span(vec![osd(0.75, 1_000_000)]);
        t += &span(vec![mon.clone(), osd(0.25, 3_000_000)]);
        assert_eq!(
            t.storage
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["ceph-osd", "cgroup:/mon"]
        );
        let r = t.summary().unwrap();
        let o = &r.storage[0];
        // 1.5 s of CPU over 2 s: 75% of a core, of 8 CPU-seconds 18.75%.
        assert_eq!((o.cpu_pct, o.usr_pct, o.sys_pct), (75.0, 50.0, 25.0));
        assert_eq!(o.host_cpu_pct, 18.75);
        assert_eq!(
            (o.memory_mib, o.write_mbps, o.ctx_switches_per_s),
            (100.0, 2.0, 50.0)
        );
        assert_eq!((o.processes, o.hosts), (2, 1));
        assert_eq!(r.storage[1].cpu_pct, 25.0);
        // Two hosts: one watching both entries, one only the OSDs at another share.
        let mut other = r.clone();
        other.storage.truncate(1);
        other.storage[0].host_cpu_pct = 6.25;
        let both = HostResources::together([&r, &other]).unwrap();
        let o = &both.storage[0];
        assert_eq!((o.cpu_pct, o.processes, o.hosts), (150.0, 4, 2));
        assert_eq!(o.host_cpu_pct, 12.5);
        assert_eq!(both.storage[1].hosts, 1);
        // No entry watched: nothing, and nothing in the JSON.
        let plain = HostUsage {
            wall_s: 1.0,
            ..Default::default()
        };
        assert!(plain.summary().unwrap().storage.is_empty());
        assert!(!serde_json::to_string(&plain).unwrap().contains("storage"));
    }
}
