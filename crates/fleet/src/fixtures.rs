//! Plans for the crate's unit tests: one fleet shape and stream, changed per test with
//! struct update syntax, instead of a literal in every module.

use std::time::Duration;

use iofleet_profile::{
    Arrival, BlockSizes, Bytes, FleetShape, Locality, Plan, Prepare, StreamPlan, Timing,
};

/// A fleet of `workers` × `disks` × `threads` at `qd`, 1 MiB disks.
pub fn fleet(workers: u32, disks: u32, threads: u32, qd: u32) -> FleetShape {
    FleetShape {
        workers,
        disks_per_worker: disks,
        disk_size: Bytes(1 << 20),
        threads_per_disk: threads,
        qd,
        io_threads: None,
        cpus: None,
    }
}

/// 4 KiB, 100% random and uniform over the whole of disk 0, weight 1, read `read_pct`.
pub fn stream(name: &str, read_pct: f64) -> StreamPlan {
    StreamPlan {
        name: name.into(),
        bs: BlockSizes::fixed(Bytes(4096)),
        read_pct,
        random_pct: 100.0,
        align: Bytes(4096),
        weight: Some(1),
        rate_iops: None,
        qd: None,
        locality: Locality::Uniform,
        working_set_pct: 100.0,
        disks: vec![0],
    }
}

/// One second measured in one interval, no fill, no warm-up.
pub fn plan(fleet: FleetShape, streams: Vec<StreamPlan>) -> Plan {
    Plan {
        name: "t".into(),
        description: String::new(),
        fleet,
        timing: Timing {
            prepare: Prepare::None,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(1),
            interval: Duration::from_secs(1),
            rate_iops: None,
            arrival: Arrival::Uniform,
            verify: false,
        },
        streams,
        data: Default::default(),
    }
}
