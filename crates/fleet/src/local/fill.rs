//! Writing whole disks before or instead of a run: a run's prepare fill (random data or
//! zeros, skipping disks whose fill marker is valid), a verified run's fill of
//! verifiable units, and preconditioning (`iofleet precondition`: `PASSES` passes, no
//! measured phase). Every fill goes through `fill_in_batches`: `FILL_DISKS_AT_ONCE`
//! disks at a time, each batch's writers on threads, sealed even when stopped, so a
//! later run reuses what was written. Progress goes to the observer; nothing here
//! measures.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use iofleet_engine::target::{
    fill_marker_valid, fill_plan, seal, DiskLayout, Fill, FillPattern, FillWrites, TargetError,
    FILL_DISKS_AT_ONCE,
};
use iofleet_engine::verify::stamp_units;

use crate::error::FleetError;
use crate::observer::Observer;
use crate::precondition::{DiskWritten, Preconditioned, PASSES};

/// Fill every disk that lacks a valid marker; returns false when interrupted.
pub(super) fn prepare_disks(
    layout: &[DiskLayout],
    pattern: FillPattern,
    writes: FillWrites,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
    notices: &mut Vec<String>,
) -> Result<bool, FleetError> {
    let mut todo = Vec::new();
    for d in layout {
        if !fill_marker_valid(d, pattern)? {
            todo.push((d.clone(), None));
        }
    }
    fill_all(todo, layout.len(), pattern, writes, stop, observer, notices)
}

/// Run `work` on `n` scoped threads, calling `report` every `every` while any runs and
/// once when the last has ended (at once: not at the next tick); each thread's result,
/// in order. A thread's panic is re-raised here.
fn on_threads<T: Send>(
    n: usize,
    every: Duration,
    work: impl Fn() -> T + Sync,
    mut report: impl FnMut(),
) -> Vec<T> {
    std::thread::scope(|scope| {
        let (alive, ended) = crossbeam_channel::bounded::<()>(0);
        let handles: Vec<_> = (0..n)
            .map(|_| {
                // Dropped when the thread ends, however it ends: the last one
                // disconnects the channel and wakes the reporter.
                let alive = alive.clone();
                let work = &work;
                scope.spawn(move || {
                    let _alive = alive;
                    work()
                })
            })
            .collect();
        drop(alive);
        while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = ended.recv_timeout(every) {
            report();
        }
        report();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// Fill `todo` (disk, and the disk id to stamp verify headers with), in batches
/// (`fill_in_batches`); returns false when interrupted.
pub(super) fn fill_all(
    todo: Vec<(DiskLayout, Option<u64>)>,
    of: usize,
    pattern: FillPattern,
    writes: FillWrites,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
    notices: &mut Vec<String>,
) -> Result<bool, FleetError> {
    let layout_len = of;
    if todo.len() < layout_len && todo.iter().all(|(_, id)| id.is_none()) {
        notices.push(format!(
            "prepare: {} of {} disks already carry a valid fill marker and were not refilled",
            layout_len - todo.len(),
            layout_len
        ));
    }
    if todo.is_empty() {
        return Ok(true);
    }
    let total: u64 = todo.iter().map(|(d, _)| d.size).sum();
    let io = fill_plan(writes);
    // Every unit of a verified fill: sequence 0.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.as_nanos() as u64);
    let stamp = |i: usize, chunk: &mut [u8], at: u64| {
        if let Some(id) = todo[i].1 {
            stamp_units(chunk, id, at, 0, now)
        }
    };
    let layout: Vec<DiskLayout> = todo.iter().map(|(d, _)| d.clone()).collect();
    let (complete, _) = fill_in_batches(
        &layout,
        |batch| Fill::new(batch, pattern, writes.direct, io),
        &stamp,
        stop,
        Duration::from_millis(200),
        |bytes| observer.prepare_progress(bytes, total),
    )?;
    Ok(complete)
}

/// Fill `layout` in batches of `FILL_DISKS_AT_ONCE` disks: a [`Fill`] from `make` for
/// each, written by its writers on threads (`finish` is told the disk's index in
/// `layout`), then sealed: the disks written in full even when another failed or a stop
/// came, so that a later run reuses them. `report` gets the bytes written so far every
/// `every` and when a batch ends. Returns whether every disk was written with no stop,
/// and each disk's bytes written.
fn fill_in_batches(
    layout: &[DiskLayout],
    make: impl Fn(&[DiskLayout]) -> Result<Fill, TargetError>,
    finish: &(dyn Fn(usize, &mut [u8], u64) + Sync),
    stop: &AtomicBool,
    every: Duration,
    mut report: impl FnMut(u64),
) -> Result<(bool, Vec<u64>), FleetError> {
    let mut written = vec![0u64; layout.len()];
    for (n, batch) in layout.chunks(FILL_DISKS_AT_ONCE).enumerate() {
        let base = n * FILL_DISKS_AT_ONCE;
        let before: u64 = written.iter().sum();
        let fill = make(batch)?;
        let results = on_threads(
            fill.writers(),
            every,
            || fill.write(stop, &|k, chunk, at| finish(base + k, chunk, at)),
            || report(before + fill.progress()),
        );
        for (k, w) in written[base..base + batch.len()].iter_mut().enumerate() {
            *w = fill.written(k);
        }
        let (done, all) = fill.into_unsealed();
        seal(done)?;
        results.into_iter().collect::<Result<(), _>>()?;
        if !all || stop.load(Ordering::SeqCst) {
            return Ok((false, written));
        }
    }
    Ok((true, written))
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
    let (complete, wrote) = fill_in_batches(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_end_the_wait_when_they_end_not_at_the_next_report() {
        // A report due once a minute: the wait still ends with the threads, reporting
        // once more then; every thread's result comes back.
        let next = AtomicU64::new(0);
        let mut reports = 0;
        let t0 = std::time::Instant::now();
        let mut got = on_threads(
            3,
            Duration::from_secs(60),
            || next.fetch_add(1, Ordering::SeqCst),
            || reports += 1,
        );
        assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
        assert_eq!(reports, 1);
        got.sort();
        assert_eq!(got, [0, 1, 2]);
    }
}
