//! The memory a plan needs, estimated before anything is allocated from the figures the
//! run allocates by (`FleetTotals`): per lane its state (`lanes::LANE_BYTES`), per I/O
//! in flight a buffer of the largest block and its slot (`lanes::SLOT_BYTES`), per
//! driven disk a latency histogram per direction of each stream on each I/O thread that
//! records it and in the collector, per verified 4 KiB unit its table entries, per OS
//! thread its stack. Compared with what the host has available (`MemAvailable` of
//! `/proc/meminfo`), a plan that cannot fit is refused with the figure and the flag or
//! key to lower, instead of growing until the kernel's OOM killer ends the run.
//!
//! It allocates and checks nothing else. The in-process launcher checks its own plan
//! (a local run, or an agent's share on its host) and the agent launcher the
//! controller's part and the agents started on this machine, so a fleet is checked on
//! the controller with what it can know and again on every host before it allocates.

use iofleet_engine::Caps;
use iofleet_profile::FleetTotals;
use iofleet_stats::result::{IntervalRow, PartRow};

use crate::error::FleetError;
use crate::local::lanes::{LANE_BYTES, SLOT_BYTES};

/// What a process of iofleet holds whatever the plan: its code and libraries (about
/// 21 MiB resident for a debug build before any lane), the write data pool, the
/// collector's fixed state.
const BASE_BYTES: u64 = 32 << 20;
/// The latency a histogram is sized for: a dense histogram that has seen 1 s.
const HISTOGRAM_RANGE_NS: u64 = 1_000_000_000;
/// A histogram decoded from an agent's frame on the controller stays sparse (at most
/// 512 buckets of 16 bytes, `iofleet_stats::hist`): one for the interval being merged,
/// one in the worker's totals.
const REMOTE_HISTOGRAM_BYTES: u64 = 2 * 512 * 16;
/// Entries per verified 4 KiB unit: its cell in the disk's table (16 bytes), its floor
/// (8) and its place in the journal's buffer (8).
const VERIFY_UNIT_BYTES: u64 = 32;
/// An OS thread: its kernel stack and task, and the pages of its own stack it touches.
const THREAD_BYTES: u64 = 64 << 10;
/// A disk's place in the layout: its worker, index, path and region.
const DISK_BYTES: u64 = 256;

/// One part of a plan's memory: what it is, what it is made of, its bytes, and what
/// lowers it.
#[derive(Debug, Clone, PartialEq)]
struct Part {
    what: &'static str,
    of: &'static str,
    bytes: u64,
    lower: &'static str,
}

/// The memory a plan needs on one host.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryNeed {
    pub bytes: u64,
    pub lanes: u64,
    pub in_flight: u64,
    parts: Vec<Part>,
}

/// `a × b + …` of estimates: saturating, so an absurd plan is a huge figure, not a wrap.
fn times(count: u64, each: u64) -> u64 {
    count.saturating_mul(each)
}

impl MemoryNeed {
    fn new(lanes: u64, in_flight: u64, parts: Vec<Part>) -> Self {
        MemoryNeed {
            bytes: parts.iter().fold(0u64, |a, p| a.saturating_add(p.bytes)),
            lanes,
            in_flight,
            parts,
        }
    }

    /// What the I/O threads of one process need for `t`, on `io_threads` threads of an
    /// engine with `caps`: a local run, or an agent's share (which keeps its one host's
    /// interval rows too).
    pub fn of_threads(t: &FleetTotals, caps: &Caps, io_threads: u64) -> Self {
        let copies = t.threads_per_disk.min(io_threads).max(1) + 1;
        let histogram = iofleet_stats::hist::dense_bytes(HISTOGRAM_RANGE_NS);
        // An engine with one I/O in flight per thread serves a deeper queue with a
        // thread per slot once an I/O blocks.
        let threads = if caps.async_qd {
            io_threads
        } else {
            io_threads.saturating_add(t.in_flight)
        };
        let parts = vec![
            Part {
                what: "the I/O buffers",
                of: "the largest block for each I/O in flight",
                bytes: t
                    .buffer_bytes
                    .saturating_add(times(t.in_flight, SLOT_BYTES)),
                lower: "--qd (fleet.qd, stream.qd) or the block size (--bs, stream.bs)",
            },
            Part {
                what: "the latency histograms",
                of: "per disk, per stream and direction",
                bytes: times(times(t.histograms, copies), histogram),
                lower: "--workers (fleet.workers) or --disks (fleet.disks_per_worker)",
            },
            Part {
                what: "the lanes",
                of: "one per thread of each disk",
                bytes: times(t.lanes, LANE_BYTES)
                    .saturating_add(times(t.disks, DISK_BYTES * u64::from(caps.needs_target))),
                lower: "--threads (fleet.threads_per_disk), --disks or --workers",
            },
            Part {
                what: "the verify tables",
                of: "per 4 KiB unit of every disk",
                bytes: times(t.verify_units, VERIFY_UNIT_BYTES),
                lower: "--disk-size (fleet.disk_size), or run without --verify",
            },
            Part {
                what: "the OS threads",
                of: "a stack and a kernel task each",
                bytes: times(threads, THREAD_BYTES),
                lower: if caps.async_qd {
                    "--io-threads (fleet.io_threads)"
                } else {
                    "--qd (fleet.qd) with this engine (a thread per I/O in flight)"
                },
            },
            rows(t, 1),
            Part {
                what: "the process itself",
                of: "code, libraries, the write data",
                bytes: BASE_BYTES,
                lower: "nothing (it does not grow with the plan)",
            },
        ];
        MemoryNeed::new(t.lanes, t.in_flight, parts)
    }

    /// What the controller of a fleet of `hosts` needs for `t`, merging what its agents
    /// send.
    pub fn of_controller(t: &FleetTotals, hosts: u64) -> Self {
        let parts = vec![
            Part {
                what: "the merged statistics",
                of: "per disk, per stream and direction",
                bytes: times(t.histograms, REMOTE_HISTOGRAM_BYTES),
                lower: "--workers (fleet.workers) or --disks (fleet.disks_per_worker)",
            },
            rows(t, hosts),
            Part {
                what: "the process itself",
                of: "code, libraries, the write data",
                bytes: BASE_BYTES,
                lower: "nothing (it does not grow with the plan)",
            },
        ];
        MemoryNeed::new(0, 0, parts)
    }

    /// Two needs on one machine.
    pub fn and(mut self, other: MemoryNeed) -> Self {
        for p in other.parts {
            match self.parts.iter_mut().find(|q| q.what == p.what) {
                Some(q) => q.bytes = q.bytes.saturating_add(p.bytes),
                None => self.parts.push(p),
            }
        }
        MemoryNeed::new(
            self.lanes.saturating_add(other.lanes),
            self.in_flight.saturating_add(other.in_flight),
            self.parts,
        )
    }

    /// "1.2 GiB for 64 lanes with 2,048 I/Os in flight".
    pub fn summary(&self) -> String {
        format!(
            "{} for {} lanes with {} I/Os in flight",
            gib(self.bytes),
            thousands(self.lanes),
            thousands(self.in_flight)
        )
    }

    /// The need beside what is available, for `--dry-run`: "1.2 GiB for 64 lanes with
    /// 2,048 I/Os in flight (22.8 GiB available)".
    pub fn line(&self, available: Option<u64>) -> String {
        match available {
            Some(a) => format!("{} ({} available)", self.summary(), gib(a)),
            None => format!("{} (what is available is unknown)", self.summary()),
        }
    }

    /// Refuse the plan unless it fits in `available` bytes; `host` says whose memory
    /// ("this host", "this machine (the controller and 3 local hosts)").
    pub fn check(&self, available: Option<u64>, host: &str) -> Result<(), FleetError> {
        let Some(available) = available else {
            return Ok(());
        };
        if self.bytes <= available {
            return Ok(());
        }
        let largest = self
            .parts
            .iter()
            .max_by_key(|p| p.bytes)
            .expect("a need has parts");
        Err(FleetError::Input(format!(
            "the plan needs {}; {host} has {} available (MemAvailable). The largest part is {}, {} ({}): lower {}",
            self.summary(),
            gib(available),
            largest.what,
            gib(largest.bytes),
            largest.of,
            largest.lower
        )))
    }
}

/// The rows a run keeps for every interval: the fleet's, and one per host and per group.
fn rows(t: &FleetTotals, hosts: u64) -> Part {
    let row = std::mem::size_of::<IntervalRow>() as u64;
    let part = std::mem::size_of::<PartRow>() as u64;
    Part {
        what: "the interval rows",
        of: "the fleet's, each host's and each group's, per interval",
        bytes: times(
            t.intervals,
            row.saturating_add(times(hosts.saturating_add(t.groups), part)),
        ),
        lower: "the number of intervals (a longer --interval, a shorter --duration)",
    }
}

/// The memory this machine has available for new work: `MemAvailable` of
/// /proc/meminfo (None where it cannot be read: the check is skipped).
pub fn available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Bytes as GiB with one decimal, or MiB below one GiB ("37.2 GiB", "180 MiB").
fn gib(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / GIB)
    } else {
        format!("{} MiB", bytes.div_ceil(1 << 20))
    }
}

/// `4000000` as `4,000,000`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{plan, stream};
    use iofleet_engine::EngineSpec;
    use iofleet_profile::{Bytes, GroupPlan};

    fn totals(workers: u32, qd: u32, bs: u64) -> FleetTotals {
        let mut p = plan(
            crate::fixtures::fleet(workers, 1, 1, qd),
            vec![stream("s", 100.0)],
        );
        p.streams[0].bs = iofleet_profile::BlockSizes::fixed(Bytes(bs));
        FleetTotals::of(&GroupPlan::single(p, 0)).unwrap()
    }

    #[test]
    fn the_need_grows_with_the_figures_the_run_allocates() {
        let caps = EngineSpec::Uring.caps();
        let small = MemoryNeed::of_threads(&totals(1, 1, 4096), &caps, 1);
        assert!(
            small.bytes > BASE_BYTES && small.bytes < 40 << 20,
            "{small:?}"
        );
        // Each I/O in flight holds a buffer of the block size and its slot.
        let deep = MemoryNeed::of_threads(&totals(1, 1000, 4096), &caps, 1);
        assert_eq!(deep.bytes - small.bytes, 999 * (4096 + SLOT_BYTES));
        // A worker more: a lane, its I/O's buffer, a read histogram on its I/O thread
        // and in the collector.
        let two = MemoryNeed::of_threads(&totals(2, 1, 4096), &caps, 1);
        let histogram = iofleet_stats::hist::dense_bytes(HISTOGRAM_RANGE_NS);
        assert_eq!(
            two.bytes - small.bytes,
            LANE_BYTES + DISK_BYTES + 4096 + SLOT_BYTES + 2 * histogram
        );
        assert!(histogram > 100_000 && histogram < 400_000, "{histogram}");
    }

    #[test]
    fn a_plan_past_the_memory_is_refused_with_its_figures_and_what_to_lower() {
        let caps = EngineSpec::Uring.caps();
        let need = MemoryNeed::of_threads(&totals(1000, 4096, 1 << 20), &caps, 2);
        assert_eq!(need.lanes, 1000);
        assert_eq!(need.in_flight, 4_096_000);
        assert!(need.check(Some(need.bytes), "this host").is_ok());
        assert!(need.check(None, "this host").is_ok());
        let e = need.check(Some(8 << 30), "this host").unwrap_err();
        assert!(e.is_input_error());
        let e = e.to_string();
        // The buffers alone: an MiB for each of the 4,096,000 I/Os in flight.
        assert!(need.bytes > 4_096_000 << 20);
        let start = format!(
            "the plan needs {} for 1,000 lanes with 4,096,000 I/Os in flight; this host has 8.0 GiB available",
            gib(need.bytes)
        );
        assert!(e.starts_with(&start), "{e}");
        assert!(
            e.contains("The largest part is the I/O buffers, 4001.0 GiB")
                && e.ends_with(
                    "lower --qd (fleet.qd, stream.qd) or the block size (--bs, stream.bs)"
                ),
            "{e}"
        );
    }

    #[test]
    fn needs_on_one_machine_add_up() {
        let caps = EngineSpec::Null.caps();
        let a = MemoryNeed::of_threads(&totals(3, 2, 4096), &caps, 2);
        let c = MemoryNeed::of_controller(&totals(3, 2, 4096), 3);
        let both = a.clone().and(c.clone());
        assert_eq!(both.bytes, a.bytes + c.bytes);
        assert_eq!((both.lanes, both.in_flight), (3, 6));
    }

    #[test]
    fn figures_read_as_people_write_them() {
        assert_eq!(thousands(4_000_000), "4,000,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(gib(3 << 29), "1.5 GiB");
        assert_eq!(gib(180 << 20), "180 MiB");
        assert_eq!(gib(1), "1 MiB");
    }
}
