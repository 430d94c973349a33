//! What a fleet adds up to: workers, disks, lanes, I/Os in flight, buffer and disk bytes,
//! summed over the worker groups in checked arithmetic. Each profile key is bounded on
//! its own by the option table; the products of several keys (a lane per thread of each
//! disk of each worker, a buffer per I/O in flight) are bounded here, once, before
//! anything is built, so that a plan whose figures overflow or pass a bound is refused
//! with the key to lower rather than allocated. It counts and allocates nothing per
//! worker, disk or lane; what those figures cost in memory is the fleet crate's estimate
//! (`iofleet_fleet::local::footprint`).

use crate::error::ProfileError;
use crate::options::{int_range, MAX_STREAMS, OPTIONS, VERIFY_UNIT};
use crate::plan::GroupPlan;
use crate::units::Bytes;
use crate::validate::intervals_in;

/// A fleet's sizes, each the sum over its worker groups.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FleetTotals {
    pub workers: u64,
    /// Every worker's disks (files or device regions).
    pub disks: u64,
    /// The disks some stream drives: each keeps its own latency statistics.
    pub driven_disks: u64,
    /// One per thread of each driven disk.
    pub lanes: u64,
    /// I/Os in flight when every lane's queues are full.
    pub in_flight: u64,
    /// Latency histograms a full interval records into: per driven disk, one per
    /// direction (read, write) of each stream that uses it.
    pub histograms: u64,
    /// Streams of all groups together.
    pub streams: u64,
    /// The largest block any stream issues: each I/O in flight holds a buffer of its
    /// lane's largest block.
    pub max_bs: Bytes,
    /// The most threads any group gives a disk (a disk's statistics are kept per I/O
    /// thread its lanes run on).
    pub threads_per_disk: u64,
    /// The buffers of every I/O in flight: `in_flight` × `max_bs`.
    pub buffer_bytes: u64,
    /// The bytes of every disk together.
    pub disk_bytes: u64,
    /// 4 KiB units of the disks a run verifies (each has an entry in its disk's table).
    pub verify_units: u64,
    /// Worker groups: results keep rows per interval for each.
    pub groups: u64,
    /// Intervals of the shared timeline, warm-up and measurement (at most
    /// `MAX_INTERVALS`, checked by `validate`).
    pub intervals: u64,
}

/// `a × b`, or the error `fail` makes when it passes `u64`.
fn mul(a: u64, b: u64, fail: impl FnOnce() -> ProfileError) -> Result<u64, ProfileError> {
    a.checked_mul(b).ok_or_else(fail)
}

fn add(a: u64, b: u64, fail: impl FnOnce() -> ProfileError) -> Result<u64, ProfileError> {
    a.checked_add(b).ok_or_else(fail)
}

/// The error for `key` (an option's key, whose flag it names, or `stream`).
fn total(key: &str, message: String) -> ProfileError {
    ProfileError::Total {
        key: key.to_string(),
        flag: OPTIONS.iter().find(|o| o.key == key).and_then(|o| o.flag),
        message,
    }
}

impl FleetTotals {
    /// The totals of `groups`, refused when the fleet's workers pass `fleet.workers`'
    /// bound, its streams `MAX_STREAMS`, or a product passes 2^64.
    pub fn of(groups: &[GroupPlan]) -> Result<Self, ProfileError> {
        let mut t = FleetTotals {
            streams: groups.iter().map(|g| g.plan.streams.len() as u64).sum(),
            groups: groups.len() as u64,
            // Groups share one timeline: the first group's.
            intervals: groups.first().map_or(0, |g| {
                let tm = &g.plan.timing;
                intervals_in(tm.warmup, tm.interval) + intervals_in(tm.duration, tm.interval)
            }),
            ..FleetTotals::default()
        };
        if t.streams > MAX_STREAMS as u64 {
            return Err(total(
                "stream",
                format!(
                    "the worker groups have {} [[stream]] tables together, more than the {MAX_STREAMS} a run may have",
                    t.streams
                ),
            ));
        }
        let most_workers = *int_range("fleet.workers").end();
        for g in groups {
            let (p, f) = (&g.plan, &g.plan.fleet);
            let w = f.workers as u64;
            t.workers += w;
            if t.workers > most_workers {
                return Err(total(
                    "fleet.workers",
                    format!(
                        "the fleet has {} workers or more (its groups and host pins together), more than the {most_workers} a fleet may have (fleet.workers is 1..={most_workers})",
                        t.workers
                    ),
                ));
            }
            // Per worker: the disks some stream drives, their histograms and slots.
            let mut driven = 0u64;
            let mut histograms = 0u64;
            for d in 0..f.disks_per_worker {
                let using = p
                    .streams
                    .iter()
                    .filter(|s| s.disks.binary_search(&d).is_ok());
                let mut any = false;
                for s in using {
                    any = true;
                    histograms += u64::from(s.read_pct > 0.0) + u64::from(s.read_pct < 100.0);
                }
                driven += u64::from(any);
            }
            let threads = f.threads_per_disk as u64;
            // Workers, disks, threads and queue depths are bounded by the option table,
            // so these products stay far below 2^64; the byte totals below may not.
            t.disks += w * f.disks_per_worker as u64;
            t.driven_disks += w * driven;
            t.lanes += w * driven * threads;
            t.histograms += w * histograms;
            t.in_flight += w * p.configured_per_worker();
            t.threads_per_disk = t.threads_per_disk.max(threads);
            t.max_bs = t.max_bs.max(
                p.streams
                    .iter()
                    .map(|s| s.bs.max())
                    .max()
                    .unwrap_or(Bytes(0)),
            );
            let disks = w * f.disks_per_worker as u64;
            let bytes = mul(disks, f.disk_size.0, || {
                total(
                    "fleet.disk_size",
                    format!(
                        "{disks} disks of {} add up to more than 2^64 bytes",
                        f.disk_size
                    ),
                )
            })?;
            t.disk_bytes = add(t.disk_bytes, bytes, || {
                total(
                    "fleet.disk_size",
                    "the fleet's disks add up to more than 2^64 bytes".into(),
                )
            })?;
            if p.timing.verify {
                t.verify_units += bytes / VERIFY_UNIT;
            }
        }
        t.buffer_bytes = mul(t.in_flight, t.max_bs.0, || {
            total(
                "fleet.qd",
                format!(
                    "{} I/Os in flight with buffers of {} add up to more than 2^64 bytes",
                    t.in_flight, t.max_bs
                ),
            )
        })?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{GroupPlan, Plan};
    use crate::{resolve, Context, Overrides};

    fn plan(toml: &str, ov: &Overrides) -> Plan {
        let raw = crate::parse_toml(toml, "t").unwrap();
        resolve(&raw, ov, &Context::default()).unwrap()
    }

    const TWO_STREAMS: &str = r#"
        name = "t"
        [fleet]
        workers = 3
        disks_per_worker = 4
        threads_per_disk = 2
        qd = 8
        disk_size = "1m"
        [[stream]]
        name = "data"
        bs = "4k:1,16k:1"
        read_pct = 70
        random_pct = 100
        disks = "0-1"
        [[stream]]
        name = "log"
        bs = "64k"
        read_pct = 0
        random_pct = 0
        rate_iops = 10.0
        qd = 2
        disks = [1]
    "#;

    #[test]
    fn totals_count_what_the_lanes_would_hold() {
        let p = plan(TWO_STREAMS, &Overrides::default());
        let t = FleetTotals::of(&GroupPlan::single(p.clone(), 0)).unwrap();
        // Disks 0 and 1 are driven (2 and 3 by no stream), two threads each.
        assert_eq!(t.workers, 3);
        assert_eq!(t.disks, 12);
        assert_eq!(t.driven_disks, 3 * 2);
        assert_eq!(t.lanes, 3 * 2 * 2);
        // Disk 0: data (read and write); disk 1: data (both) and log (write).
        assert_eq!(t.histograms, 3 * (2 + 3));
        assert_eq!(t.in_flight, p.configured_outstanding());
        assert_eq!(t.in_flight, 3 * (8 * 2 + (8 + 2) * 2));
        assert_eq!(t.max_bs, Bytes(65536));
        assert_eq!(t.buffer_bytes, t.in_flight * 65536);
        assert_eq!(t.disk_bytes, 12 << 20);
        assert_eq!(t.verify_units, 0);
        // The default timing: no warm-up, 60 s in 1 s intervals.
        assert_eq!((t.groups, t.intervals), (1, 60));
        // Two groups add up.
        let two = vec![
            GroupPlan {
                name: "a".into(),
                plan: p.clone(),
                worker_base: 0,
            },
            GroupPlan {
                name: "b".into(),
                plan: p,
                worker_base: 3,
            },
        ];
        let t2 = FleetTotals::of(&two).unwrap();
        assert_eq!(
            (t2.workers, t2.lanes, t2.in_flight, t2.streams),
            (6, 2 * t.lanes, 2 * t.in_flight, 4)
        );
    }

    #[test]
    fn a_fleet_past_its_bounds_is_refused_naming_the_key() {
        let ov = Overrides {
            workers: Some(40_000),
            ..Overrides::default()
        };
        let p = plan(TWO_STREAMS, &ov);
        let groups: Vec<GroupPlan> = ["a", "b"]
            .iter()
            .enumerate()
            .map(|(i, n)| GroupPlan {
                name: n.to_string(),
                plan: p.clone(),
                worker_base: i as u32 * 40_000,
            })
            .collect();
        let e = FleetTotals::of(&groups).unwrap_err().to_string();
        assert!(e.starts_with("--workers (fleet.workers): "), "{e}");
        assert!(e.contains("80000 workers") && e.contains("65536"), "{e}");
        // Disk bytes past 2^64: checked, not wrapped.
        let mut huge = p.clone();
        huge.fleet.disk_size = Bytes(u64::MAX / 2);
        let e = FleetTotals::of(&GroupPlan::single(huge, 0))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--disk-size (fleet.disk_size): "), "{e}");
        // Streams of all groups together.
        let many: Vec<GroupPlan> = (0..(MAX_STREAMS / 2 + 1))
            .map(|i| GroupPlan {
                name: format!("g{i}"),
                plan: plan(TWO_STREAMS, &Overrides::default()),
                worker_base: 3 * i as u32,
            })
            .collect();
        let e = FleetTotals::of(&many).unwrap_err().to_string();
        assert!(e.contains("1026 [[stream]] tables"), "{e}");
    }
}
