//! Workload-independent preconditioning (SNIA SSS PTS): every disk of a plan written
//! twice over with 128 KiB sequential writes of random data, and no measured phase. A
//! launcher operation (`Launcher::precondition`), so it runs where a run would: on this
//! host's target, or on every host of an inventory, each host on its share of the disks.
//! After the second pass each disk carries the fill marker of a random fill, so a run
//! that prepares with random data reuses it instead of filling again.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use iofleet_engine::target::{fill_plan, DiskLayout, Fill, FillWrites};
use serde::{Deserialize, Serialize};

use crate::error::FleetError;
use crate::observer::Observer;

/// Passes over every disk (SNIA: twice the capacity).
pub const PASSES: u32 = 2;

/// What preconditioning wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Preconditioned {
    pub disks: Vec<DiskWritten>,
    /// Wall time of the longest host, s.
    pub seconds: f64,
    /// Every pass of every disk finished (false: stopped; disks carry no marker).
    pub complete: bool,
    /// What the user should know (per host, prefixed with its name).
    #[serde(default)]
    pub notices: Vec<String>,
}

impl Preconditioned {
    /// Several hosts' outcomes as one: every disk, the longest time, complete only if
    /// every host completed.
    pub fn merge(parts: impl IntoIterator<Item = Preconditioned>) -> Preconditioned {
        let mut all = Preconditioned {
            complete: true,
            ..Default::default()
        };
        for p in parts {
            all.disks.extend(p.disks);
            all.seconds = all.seconds.max(p.seconds);
            all.complete &= p.complete;
            all.notices.extend(p.notices);
        }
        all
    }
}

/// One disk's share of the writing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskWritten {
    pub host: String,
    pub worker: u32,
    pub disk: u32,
    pub path: String,
    pub region_offset: u64,
    pub size: u64,
    pub bytes_written: u64,
}

/// Precondition `layout` (already created): `PASSES` passes, each a [`Fill`] of up to
/// `FILL_DISKS_AT_ONCE` disks at a time, written as `fill_plan` says; progress to
/// `observer` in bytes of the whole. Stops between writes when `stop` is set.
pub fn precondition_disks(
    layout: &[DiskLayout],
    writes: FillWrites,
    host: &str,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<Preconditioned, FleetError> {
    let total: u64 = layout.iter().map(|d| d.size).sum::<u64>() * u64::from(PASSES);
    let written: Vec<AtomicU64> = layout.iter().map(|_| AtomicU64::new(0)).collect();
    let t0 = Instant::now();
    let mut complete = true;
    for pass in 0..PASSES {
        if !one_pass(layout, pass, writes, stop, &written, total, observer)? {
            complete = false;
            break;
        }
    }
    Ok(Preconditioned {
        disks: layout
            .iter()
            .zip(&written)
            .map(|(d, w)| DiskWritten {
                host: host.to_string(),
                worker: d.worker,
                disk: d.disk,
                path: d.path.display().to_string(),
                region_offset: d.region_offset,
                size: d.size,
                bytes_written: w.load(Ordering::SeqCst),
            })
            .collect(),
        seconds: t0.elapsed().as_secs_f64(),
        complete,
        notices: Vec::new(),
    })
}

/// One pass over every disk; false when interrupted.
fn one_pass(
    layout: &[DiskLayout],
    pass: u32,
    writes: FillWrites,
    stop: &AtomicBool,
    written: &[AtomicU64],
    total: u64,
    observer: &mut dyn Observer,
) -> Result<bool, FleetError> {
    let io = fill_plan(writes);
    let before: u64 = written.iter().map(|w| w.load(Ordering::Relaxed)).sum();
    // Each disk's pass is sealed (synced, then marked) with the others' of its batch.
    let (complete, wrote) = crate::local::fill_in_batches(
        layout,
        |batch| Fill::precondition(batch, pass, writes.direct, io),
        &|_, _, _| {},
        stop,
        Duration::from_millis(100),
        |bytes| observer.prepare_progress(before + bytes, total),
    )?;
    for (w, n) in written.iter().zip(wrote) {
        w.fetch_add(n, Ordering::Relaxed);
    }
    Ok(complete && !stop.load(Ordering::SeqCst))
}
