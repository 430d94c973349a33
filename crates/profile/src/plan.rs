//! The resolved, validated plan: what a run will do, with every cross-field check
//! already passed. Nothing here parses text; `raw` does that and `validate` turns a
//! `RawProfile` into a `Plan`. The fleet and the engines consume only this type.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

/// How disks are filled before the measured phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Prepare {
    /// Incompressible pseudo-random data (the default; right for dedupe/compression).
    Random,
    /// Zero-filled blocks.
    Zero,
    /// No fill: reads of never-written blocks may not touch media.
    None,
}

/// What write data looks like (the `[data]` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DataPattern {
    /// Pseudo-random data, shaped by the dedupe and compression ratios.
    Random,
    /// Zeros: compresses and dedupes completely.
    Zero,
}

/// The data every write (and a `random` prepare) puts on the disks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DataPlan {
    pub pattern: DataPattern,
    /// Written units per distinct unit (N:1), >= 1.
    pub dedupe_ratio: f64,
    /// Unit of dedupe and compression, a multiple of 512 bytes.
    pub dedupe_unit: Bytes,
    /// Bytes of each unit per byte it compresses to (C:1), >= 1.
    pub compress_ratio: f64,
    /// Writes go through the device's volatile cache (disks opened with O_DSYNC).
    #[serde(default, skip_serializing_if = "is_false")]
    pub write_through: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for DataPlan {
    fn default() -> Self {
        DataPlan {
            pattern: DataPattern::Random,
            dedupe_ratio: 1.0,
            dedupe_unit: Bytes(4096),
            compress_ratio: 1.0,
            write_through: false,
        }
    }
}

/// How arrivals are spaced in an open-loop (rate-limited) lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Exponential inter-arrival times (a Poisson process).
    Poisson,
    /// Evenly spaced arrivals.
    Uniform,
}

/// Weighted block-size distribution; a fixed size is one entry with weight 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockSizes {
    /// (size, weight) pairs, sizes in bytes, weights > 0.
    pub entries: Vec<(Bytes, u32)>,
}

impl BlockSizes {
    pub fn fixed(bs: Bytes) -> Self {
        BlockSizes {
            entries: vec![(bs, 1)],
        }
    }
    pub fn max(&self) -> Bytes {
        self.entries.iter().map(|e| e.0).max().unwrap_or(Bytes(0))
    }
    pub fn min(&self) -> Bytes {
        self.entries.iter().map(|e| e.0).min().unwrap_or(Bytes(0))
    }
    /// Weighted mean block size in bytes.
    pub fn mean(&self) -> f64 {
        let total: u64 = self.entries.iter().map(|e| e.1 as u64).sum();
        let sum: f64 = self
            .entries
            .iter()
            .map(|e| e.0 .0 as f64 * e.1 as f64)
            .sum();
        sum / total.max(1) as f64
    }
}

/// Where in the working set random offsets land.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Locality {
    /// Every aligned block equally likely.
    Uniform,
    /// DISKSPD-style hot bands: (percent of I/O, percent of range) pairs, consecutive from
    /// the start of the working set; the remaining I/O falls uniformly on the rest.
    HotBands { bands: Vec<HotBand> },
    /// Zipf distribution over blocks with exponent `theta` (> 0); block 0 hottest.
    Zipf { theta: f64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HotBand {
    pub io_pct: f64,
    pub range_pct: f64,
}

/// One access pattern of a profile, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamPlan {
    pub name: String,
    pub bs: BlockSizes,
    /// Percent of I/Os that are reads, 0..=100.
    pub read_pct: f64,
    /// Percent of I/Os at a random offset, 0..=100; the rest continue a per-thread cursor.
    pub random_pct: f64,
    /// Offset alignment in bytes (power of two, >= 512 with direct I/O).
    pub align: Bytes,
    /// Relative share of I/Os among the closed-loop streams of a disk (None when rated).
    pub weight: Option<u32>,
    /// Own rate in IOPS per worker (open loop); None means it shares the worker lane.
    pub rate_iops: Option<f64>,
    /// Outstanding I/Os per thread for this stream's own lane (rated streams only).
    pub qd: Option<u32>,
    pub locality: Locality,
    /// Percent of each disk addressed, (0, 100].
    pub working_set_pct: f64,
    /// Disk indexes (within a worker) this stream drives, sorted, deduplicated.
    pub disks: Vec<u32>,
}

/// The fleet shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetShape {
    pub workers: u32,
    pub disks_per_worker: u32,
    /// Addressable bytes per disk (for file targets; device targets may split instead).
    pub disk_size: Bytes,
    pub threads_per_disk: u32,
    /// Outstanding I/Os per thread.
    pub qd: u32,
    /// OS threads driving the lanes on each host (None: one per usable CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_threads: Option<u32>,
    /// CPUs the I/O threads are pinned to, in turn (None: not pinned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<usize>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub prepare: Prepare,
    #[serde(with = "secs")]
    pub warmup: Duration,
    #[serde(with = "secs")]
    pub duration: Duration,
    #[serde(with = "secs")]
    pub interval: Duration,
    /// Rate cap in IOPS per worker for the closed-loop streams (None: as fast as possible).
    pub rate_iops: Option<f64>,
    pub arrival: Arrival,
    /// End-to-end data verification (`--verify`): headers on writes, checks on reads.
    #[serde(default)]
    pub verify: bool,
}

/// Durations travel as seconds (f64) in JSON results and agent messages.
mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

/// A validated profile: the only input the fleet needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub name: String,
    pub description: String,
    pub fleet: FleetShape,
    pub timing: Timing,
    pub streams: Vec<StreamPlan>,
    /// Write data; absent in plans stored before it existed (then the default, random).
    #[serde(default)]
    pub data: DataPlan,
}

impl Plan {
    /// Whether any stream writes (its read share is under 100%).
    pub fn writes(&self) -> bool {
        self.streams.iter().any(|s| s.read_pct < 100.0)
    }

    /// Configured outstanding I/O for the whole fleet (every lane's qd × threads × disks).
    pub fn configured_outstanding(&self) -> u64 {
        self.configured_per_worker() * self.fleet.workers as u64
    }

    /// Configured outstanding I/O of one worker: per disk, the closed-loop lane's qd (when
    /// any weighted stream uses the disk) plus each rated stream's own qd, × threads.
    pub fn configured_per_worker(&self) -> u64 {
        let f = &self.fleet;
        let mut per_worker = 0u64;
        for disk in 0..f.disks_per_worker {
            let streams: Vec<&StreamPlan> = self
                .streams
                .iter()
                .filter(|s| s.disks.contains(&disk))
                .collect();
            if streams.iter().any(|s| s.rate_iops.is_none()) {
                per_worker += f.qd as u64 * f.threads_per_disk as u64;
            }
            for s in streams.iter().filter(|s| s.rate_iops.is_some()) {
                per_worker += s.qd.unwrap_or(f.qd) as u64 * f.threads_per_disk as u64;
            }
        }
        per_worker
    }
}

/// One worker group of a run: a profile driven by a contiguous range of the fleet's
/// workers (`plan.fleet.workers` of them, starting at global worker `worker_base`).
/// Several groups run at once on one timeline (say 20 VDI workers and 4 SQL workers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupPlan {
    pub name: String,
    pub plan: Plan,
    pub worker_base: u32,
}

/// The plan as a result records it (`run.plan`): the combined plan as run and, when the
/// run had several worker groups, each group's own plan. Reports and the store read this
/// type, never the JSON by key, so a renamed field is a compile error, not a silent 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedPlan {
    #[serde(flatten)]
    pub plan: Plan,
    /// Empty for a run of one profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupPlan>,
}

impl RecordedPlan {
    /// The record of a run of `groups` combined into `plan` (groups kept when several).
    pub fn new(plan: &Plan, groups: &[GroupPlan]) -> Self {
        RecordedPlan {
            plan: plan.clone(),
            groups: if groups.len() > 1 {
                groups.to_vec()
            } else {
                Vec::new()
            },
        }
    }

    /// Every worker group as run: (name, its plan, its first worker). A run of one
    /// profile is one group named after the profile.
    pub fn each_group(&self) -> Vec<(&str, &Plan, u32)> {
        if self.groups.is_empty() {
            vec![(self.plan.name.as_str(), &self.plan, 0)]
        } else {
            self.groups
                .iter()
                .map(|g| (g.name.as_str(), &g.plan, g.worker_base))
                .collect()
        }
    }
}

impl GroupPlan {
    /// A run of one profile: one group named after it.
    pub fn single(plan: Plan, worker_base: u32) -> Vec<GroupPlan> {
        vec![GroupPlan {
            name: plan.name.clone(),
            plan,
            worker_base,
        }]
    }
}

/// Index of each group's first stream in the combined stream list.
pub fn stream_offsets(groups: &[GroupPlan]) -> Vec<usize> {
    let mut at = 0;
    groups
        .iter()
        .map(|g| {
            let o = at;
            at += g.plan.streams.len();
            o
        })
        .collect()
}

/// The plan the threads and the collector share: every group's streams in group order
/// (named `group/stream` when there are several groups), the first group's timing
/// (groups share one timeline), and the total worker count.
pub fn combine(groups: &[GroupPlan]) -> Plan {
    let first = &groups[0].plan;
    if groups.len() == 1 {
        return first.clone();
    }
    let mut fleet = first.fleet.clone();
    fleet.workers = groups.iter().map(|g| g.plan.fleet.workers).sum();
    Plan {
        name: groups
            .iter()
            .map(|g| g.name.as_str())
            .collect::<Vec<_>>()
            .join("+"),
        description: groups
            .iter()
            .map(|g| {
                format!(
                    "{} ({} workers): {}",
                    g.name, g.plan.fleet.workers, g.plan.name
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        fleet,
        timing: first.timing.clone(),
        data: first.data,
        streams: groups
            .iter()
            .flat_map(|g| {
                g.plan.streams.iter().map(move |s| StreamPlan {
                    name: format!("{}/{}", g.name, s.name),
                    ..s.clone()
                })
            })
            .collect(),
    }
}
