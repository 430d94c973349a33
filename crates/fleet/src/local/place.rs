//! How a plan places the work on this host, counted before anything is built: the
//! lanes (one per thread of each disk a stream uses) and their queues, the I/O threads
//! they go to (how many, pinned where), each lane's disk, and the checks a layout must
//! pass (block sizes against the device, `--verify` against the engine); with the lines
//! a dry run shows of them. `ThreadLauncher::plan` decides with these and
//! `materialize` builds with the same, so the plan counts what a run builds.

use iofleet_engine::target::{logical_block_size, DiskLayout, TargetSpec};
use iofleet_engine::{Caps, EngineSpec, PatternSpec};
use iofleet_profile::{stream_offsets, DataPattern, DataPlan, FleetTotals, GroupPlan, Plan};

use super::lanes::{lane_seed, IoThreadSpec, LaneSpec, QueueSpec};
use crate::error::FleetError;
use crate::sys;

/// Queues of one lane on `disk`: one closed-loop queue shared by the weighted streams
/// (rate-capped when the profile sets a worker rate), one open-loop queue per rated
/// stream.
pub(super) fn build_queues(plan: &Plan, disk: u32) -> Vec<QueueSpec> {
    let f = &plan.fleet;
    let mut queues = Vec::new();
    let weighted: Vec<(usize, u32)> = plan
        .streams
        .iter()
        .enumerate()
        .filter(|(_, s)| s.rate_iops.is_none() && s.disks.contains(&disk))
        .map(|(i, s)| (i, s.weight.unwrap_or(1)))
        .collect();
    if !weighted.is_empty() {
        let disks_with_weighted = (0..f.disks_per_worker)
            .filter(|d| {
                plan.streams
                    .iter()
                    .any(|s| s.rate_iops.is_none() && s.disks.contains(d))
            })
            .count() as f64;
        queues.push(QueueSpec {
            streams: weighted,
            qd: f.qd,
            rate: plan
                .timing
                .rate_iops
                .map(|r| r / (disks_with_weighted * f.threads_per_disk as f64)),
            arrival: plan.timing.arrival,
        });
    }
    for (i, s) in plan.streams.iter().enumerate() {
        if let Some(rate) = s.rate_iops {
            if s.disks.contains(&disk) {
                queues.push(QueueSpec {
                    streams: vec![(i, 1)],
                    qd: s.qd.unwrap_or(f.qd),
                    rate: Some(rate / (s.disks.len() as f64 * f.threads_per_disk as f64)),
                    arrival: plan.timing.arrival,
                });
            }
        }
    }
    queues
}

/// Check the layout against the plan: block sizes and alignment against the device's
/// logical block size with direct I/O, and every stream's largest block against the
/// disk size actually available.
pub fn check_layout(plan: &Plan, layout: &[DiskLayout], direct: bool) -> Result<(), FleetError> {
    for d in layout {
        if direct {
            let lbs = logical_block_size(d);
            for (i, s) in plan.streams.iter().enumerate() {
                if let Some((bs, _)) = s.bs.entries.iter().find(|(b, _)| b.0 % lbs != 0) {
                    return Err(FleetError::Input(format!(
                        "stream[{i}] (\"{}\").bs: {} is not a multiple of {}'s logical block size ({lbs} bytes) required by direct I/O (or rerun with --direct=false)",
                        s.name,
                        bs,
                        d.path.display()
                    )));
                }
                if s.align.0 % lbs != 0 {
                    return Err(FleetError::Input(format!(
                        "stream[{i}] (\"{}\").align: {} is not a multiple of {}'s logical block size ({lbs} bytes)",
                        s.name,
                        s.align,
                        d.path.display()
                    )));
                }
            }
        }
        for (i, s) in plan.streams.iter().enumerate() {
            if s.disks.contains(&d.disk) && s.bs.max().0 > d.size {
                return Err(FleetError::Input(format!(
                    "stream[{i}] (\"{}\").bs: {} does not fit in disk {} of worker {} ({} bytes); raise --disk-size",
                    s.name,
                    s.bs.max(),
                    d.disk,
                    d.worker,
                    d.size
                )));
            }
        }
    }
    Ok(())
}

/// `--verify` needs an engine that touches storage: with `null`, `null-sim` or `sim`
/// there is no data to verify.
pub fn check_verify(groups: &[GroupPlan], engine: &EngineSpec) -> Result<(), FleetError> {
    if groups.iter().any(|g| g.plan.timing.verify) && !engine.caps().needs_target {
        return Err(FleetError::Input(format!(
            "--verify (timing.verify): the {} engine touches no storage, so there is no data to verify; use --engine io_uring, psync or auto",
            engine.name()
        )));
    }
    Ok(())
}

/// The notice a device target owes when it, not the profile, sets the disk size: without
/// `--disk-size` each disk is a whole device region (less the fill marker), whatever
/// `fleet.disk_size` said. None for directories, `--disk-size`, or an equal size.
pub fn device_size_notice(
    profile_size: u64,
    layout: &[DiskLayout],
    from_cli: bool,
) -> Option<String> {
    let devs: Vec<&DiskLayout> = layout.iter().filter(|d| d.is_device).collect();
    let lo = devs.iter().map(|d| d.size).min()?;
    let hi = devs.iter().map(|d| d.size).max()?;
    if from_cli || (lo == profile_size && hi == profile_size) {
        return None;
    }
    let mut paths: Vec<String> = devs.iter().map(|d| d.path.display().to_string()).collect();
    paths.dedup();
    let size = if lo == hi {
        format!("{}", iofleet_profile::Bytes(lo))
    } else {
        format!(
            "{} to {}",
            iofleet_profile::Bytes(lo),
            iofleet_profile::Bytes(hi)
        )
    };
    Some(format!(
        "--target {}: each disk is an equal region of the device (less a 4k fill marker), so the disk size is {size}, not the profile's {} (fleet.disk_size); give --disk-size to choose it",
        paths.join(" "),
        iofleet_profile::Bytes(profile_size)
    ))
}

/// How lanes are spread over I/O threads on this host.
#[derive(Debug, Clone)]
pub(super) struct Threads {
    pub(super) threads: usize,
    pub(super) cpus: Option<Vec<usize>>,
}

/// Every lane of every group: one per thread of each disk some stream uses, in worker,
/// disk, thread order. Queues index the groups' combined streams.
pub(super) fn build_lanes(groups: &[GroupPlan], seed: u64) -> Vec<LaneSpec> {
    let offsets = stream_offsets(groups);
    let mut lanes = Vec::new();
    for (g, offset) in groups.iter().zip(&offsets) {
        let f = &g.plan.fleet;
        for w in g.worker_base..g.worker_base + f.workers {
            for d in 0..f.disks_per_worker {
                let mut queues = build_queues(&g.plan, d);
                if queues.is_empty() {
                    continue; // no stream uses this disk
                }
                for q in &mut queues {
                    q.streams.iter_mut().for_each(|s| s.0 += offset);
                }
                for t in 0..f.threads_per_disk {
                    lanes.push(LaneSpec {
                        worker: w,
                        disk: d,
                        thread: t,
                        threads_per_disk: f.threads_per_disk,
                        queues: queues.clone(),
                        seed: lane_seed(seed, w, d, t),
                        region_offset: 0,
                        disk_size: f.disk_size.0,
                        data: pattern_spec(&g.plan.data),
                    });
                }
            }
        }
    }
    lanes
}

/// The engine's data pattern for a profile's `[data]`.
pub fn pattern_spec(d: &DataPlan) -> PatternSpec {
    PatternSpec {
        zero: d.pattern == DataPattern::Zero,
        dedupe_ratio: d.dedupe_ratio,
        dedupe_unit: d.dedupe_unit.0 as u32,
        compress_ratio: d.compress_ratio,
    }
}

/// Point every lane at its disk's file or device region; the disk of each lane.
pub(super) fn place_lanes_on_disks(
    lanes: &mut [LaneSpec],
    layouts: &[(usize, Vec<DiskLayout>)],
) -> Vec<Option<DiskLayout>> {
    lanes
        .iter_mut()
        .map(|t| {
            let d = layouts
                .iter()
                .flat_map(|(_, l)| l.iter())
                .find(|d| d.worker == t.worker && d.disk == t.disk)
                .expect("layout covers every disk");
            t.region_offset = d.region_offset;
            t.disk_size = d.size;
            Some(d.clone())
        })
        .collect()
}

/// How an engine with one I/O in flight per OS thread serves the plan's queue depth.
pub(super) fn one_in_flight_notice(groups: &[GroupPlan], engine: &EngineSpec) -> String {
    let max_qd = groups
        .iter()
        .flat_map(|g| {
            g.plan
                .streams
                .iter()
                .filter_map(|s| s.qd)
                .chain([g.plan.fleet.qd])
        })
        .max()
        .unwrap_or(1);
    if max_qd > 1 {
        format!(
            "{} keeps one I/O in flight per OS thread: each lane has its own I/O thread, which serves its queue itself while I/Os complete at once (page-cache copies) and hands it to one sync thread per slot (qd up to {max_qd}) once an I/O blocks",
            engine.name()
        )
    } else {
        format!(
            "{} keeps one I/O in flight per OS thread: each lane has its own I/O thread",
            engine.name()
        )
    }
}

/// The engine as planned: what `auto` became on this host, and why when it matters.
pub(super) fn engine_line(
    asked: &EngineSpec,
    resolved: &EngineSpec,
    target: &TargetSpec,
) -> String {
    match (asked, resolved) {
        (EngineSpec::Auto, EngineSpec::Psync)
            if matches!(target, TargetSpec::Dir(_) | TargetSpec::Dirs(_)) =>
        {
            "auto: psync (the target's filesystem has no non-blocking reads, as tmpfs; or io_uring is unavailable)".into()
        }
        (EngineSpec::Auto, other) => format!("auto: {}", other.name()),
        (e, _) => e.to_string(),
    }
}

/// The I/O threads as planned: how many, why that many, and where they are pinned.
pub(super) fn io_threads_line(
    threads: u64,
    lanes: u64,
    engine: &EngineSpec,
    cpus: &Option<Vec<usize>>,
) -> String {
    let caps = engine.caps();
    let why = if !caps.async_qd {
        format!(
            "one per lane: {} keeps one I/O in flight per thread",
            engine.name()
        )
    } else if caps.device_per_disk {
        "a disk's lanes share one thread, as they share its simulated device".to_string()
    } else {
        format!("{lanes} lane(s) shared among them")
    };
    let pinned = match cpus {
        Some(c) => format!(", pinned to CPUs {}", sys::format_cpu_list(c)),
        None => String::new(),
    };
    format!("{threads} ({why}{pinned})")
}

/// Decide the I/O threads: `io_threads` (largest asked by any group), else one per CPU
/// in `cpus` or per CPU this process may use, never more than there are lanes. Engines
/// with one I/O in flight per thread get one thread per lane. `cpus` must all be CPUs
/// this process may use.
pub(super) fn place_lanes(
    lanes: u64,
    groups: &[GroupPlan],
    async_qd: bool,
    notices: &mut Vec<String>,
) -> Result<Threads, FleetError> {
    let asked = groups.iter().filter_map(|g| g.plan.fleet.io_threads).max();
    let cpus = groups.iter().find_map(|g| g.plan.fleet.cpus.clone());
    let allowed = sys::allowed_cpus();
    if let Some(list) = &cpus {
        if let Some(bad) = list.iter().find(|c| !allowed.contains(c)) {
            return Err(FleetError::Input(format!(
                "--cpus (fleet.cpus): CPU {bad} is not one this process may use (it may use {})",
                sys::format_cpu_list(&allowed)
            )));
        }
    }
    let lanes_n = lanes.max(1) as usize;
    let threads = if async_qd {
        asked
            .map(|n| n as usize)
            .or(cpus.as_ref().map(Vec::len))
            .unwrap_or(allowed.len())
            .clamp(1, lanes_n)
    } else {
        if asked.is_some_and(|n| n as usize != lanes_n) {
            notices.push(format!(
                "--io-threads is ignored with an engine that keeps one I/O in flight per thread: each of the {lanes_n} lanes has its own I/O thread"
            ));
        }
        lanes_n
    };
    Ok(Threads { threads, cpus })
}

impl Threads {
    /// How many I/O threads `threads` makes for lanes adding up to `t`, counted without
    /// building them.
    pub(super) fn count(&self, t: &FleetTotals, caps: &Caps) -> u64 {
        let units = if caps.device_per_disk {
            t.driven_disks
        } else {
            t.lanes
        };
        (self.threads as u64).min(units).max(1)
    }

    /// Lane i goes to I/O thread i mod n, so every thread gets a like share of every
    /// worker group; each thread opens each disk its lanes use once. Engines without a
    /// target give every lane a file of its own, so simulated latencies follow the
    /// lane's seed whatever the placement. Engines that model each disk as one device
    /// (`device_per_disk`) keep every lane of a disk on one thread, through one file:
    /// disk k (in lane order) goes to thread k mod n.
    pub(super) fn threads(&self, lanes: &[LaneSpec], caps: &Caps) -> Vec<IoThreadSpec> {
        let file_per_lane = !caps.needs_target && !caps.device_per_disk;
        let mut disk_index: Vec<usize> = Vec::with_capacity(lanes.len());
        let mut disks = 0usize;
        for (i, lane) in lanes.iter().enumerate() {
            let same =
                i > 0 && (lanes[i - 1].worker, lanes[i - 1].disk) == (lane.worker, lane.disk);
            if !same && i > 0 {
                disks += 1;
            }
            disk_index.push(disks);
        }
        let units = if caps.device_per_disk {
            disks + 1
        } else {
            lanes.len()
        };
        let n = self.threads.min(units).max(1);
        let mut out: Vec<IoThreadSpec> = (0..n)
            .map(|i| IoThreadSpec {
                id: i as u32,
                cpu: self.cpus.as_ref().map(|c| c[i % c.len()]),
                ..IoThreadSpec::default()
            })
            .collect();
        // Per thread: (worker, disk) of each file opened so far. Lanes come in worker,
        // disk, thread order, so each thread meets a disk's lanes one after another:
        // the last file opened is the only one a lane can share.
        let mut opened: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
        for (i, lane) in lanes.iter().enumerate() {
            let t = if caps.device_per_disk {
                disk_index[i] % n
            } else {
                i % n
            };
            let key = (lane.worker, lane.disk);
            let file = match opened[t].last() {
                Some(&k) if k == key && !file_per_lane => opened[t].len() - 1,
                _ => {
                    opened[t].push(key);
                    opened[t].len() - 1
                }
            };
            out[t].lanes.push(i);
            out[t].files.push(file as u32);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::fixtures;
    use iofleet_profile::StreamPlan;

    #[test]
    fn a_device_target_that_replaces_the_disk_size_says_so() {
        let disk = |path: &str, size: u64, is_device: bool| DiskLayout {
            worker: 0,
            disk: 0,
            path: path.into(),
            region_offset: 0,
            size,
            is_device,
        };
        let mib = 1u64 << 20;
        let regions = [
            disk("/dev/loop7", 16 * mib - 4096, true),
            disk("/dev/loop7", 16 * mib - 4096, true),
        ];
        let n = device_size_notice(64 * mib, &regions, false).unwrap();
        assert!(n.starts_with("--target /dev/loop7: "), "{n}");
        assert!(
            n.contains("disk size is 16380k, not the profile's 64m"),
            "{n}"
        );
        assert!(n.contains("--disk-size"), "{n}");
        // Given with --disk-size, or equal to the profile's, or a directory: nothing to say.
        assert_eq!(device_size_notice(64 * mib, &regions, true), None);
        assert_eq!(device_size_notice(16 * mib - 4096, &regions, false), None);
        let files = [disk("d/w000-d000.iofleet", 64 * mib, false)];
        assert_eq!(device_size_notice(32 * mib, &files, false), None);
        // Regions of unequal devices: the range.
        let mixed = [
            disk("/dev/a", 8 * mib, true),
            disk("/dev/b", 12 * mib, true),
        ];
        let n = device_size_notice(64 * mib, &mixed, false).unwrap();
        assert!(
            n.contains("--target /dev/a /dev/b") && n.contains("8m to 12m"),
            "{n}"
        );
    }

    fn plan_with(streams: Vec<StreamPlan>, disks: u32) -> Plan {
        fixtures::plan(fixtures::fleet(1, disks, 2, 4), streams)
    }

    fn stream(name: &str, rate: Option<f64>, qd: Option<u32>, disks: Vec<u32>) -> StreamPlan {
        StreamPlan {
            weight: if rate.is_none() { Some(1) } else { None },
            rate_iops: rate,
            qd,
            disks,
            ..fixtures::stream(name, 50.0)
        }
    }

    #[test]
    fn queues_split_closed_and_rated_streams() {
        let plan = plan_with(
            vec![
                stream("data", None, None, vec![0, 1]),
                stream("log", Some(300.0), Some(1), vec![1]),
            ],
            2,
        );
        let l0 = build_queues(&plan, 0);
        assert_eq!(l0.len(), 1);
        assert_eq!(l0[0].qd, 4);
        assert!(l0[0].rate.is_none());
        let l1 = build_queues(&plan, 1);
        assert_eq!(l1.len(), 2);
        assert_eq!(l1[1].qd, 1);
        // 300 IOPS per worker over 1 disk × 2 threads.
        assert_eq!(l1[1].rate, Some(150.0));
    }

    #[test]
    fn the_plan_counts_what_materialize_builds() {
        // Disk 2 of 3 is driven by no stream: it has no lanes.
        let mut p = plan_with(
            vec![
                stream("data", None, None, vec![0, 1]),
                stream("log", Some(300.0), Some(1), vec![1]),
            ],
            3,
        );
        p.fleet.workers = 5;
        let groups = GroupPlan::single(p, 0);
        let t = FleetTotals::of(&groups).unwrap();
        let lanes = build_lanes(&groups, 7);
        assert_eq!(lanes.len() as u64, t.lanes);
        assert_eq!(t.lanes, 5 * 2 * 2);
        let slots: u64 = lanes.iter().map(|l| l.slots() as u64).sum();
        assert_eq!(slots, t.in_flight);
        for caps in [
            EngineSpec::Uring.caps(),
            EngineSpec::Null.caps(),
            EngineSpec::Psync.caps(),
            EngineSpec::Sim(Default::default()).caps(),
        ] {
            for threads in [1, 3, 64] {
                let placement = Threads {
                    threads,
                    cpus: None,
                };
                assert_eq!(
                    placement.threads(&lanes, &caps).len() as u64,
                    placement.count(&t, &caps),
                    "{threads} threads, {caps:?}"
                );
            }
        }
    }
}
