//! The verify journals of this host's disks. Before a run with `--verify`, every disk
//! gets one (a disk without a journal that fits is filled with verifiable units first);
//! while it runs, the journals are rewritten once per interval (`JournalSync`); a run
//! that writes without `--verify` removes them, since they no longer describe the disks.
//! `iofleet verify` checks every unit of the disks against their journals, after a run,
//! a crash or a kill (`check_target`). The disks are found exactly as a run finds them
//! (the same groups, target and layout planning, so the same checks and refusals); each
//! disk's journal says what every unit must hold at least. An agent runs the same check
//! on its host for `iofleet verify --hosts`. The unit and journal formats live in
//! `iofleet_engine::verify`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use iofleet_engine::target::{plan_layout, DiskLayout, FillPattern, FillWrites, TargetSpec};
use iofleet_engine::verify::{
    default_cache_dir, forget_journal, journal_path, scan_disk, DiskTable, Journal,
};
use iofleet_profile::GroupPlan;
use iofleet_stats::result::{Corruption, VerifySummary};

use super::fill::fill_all;
use crate::error::FleetError;
use crate::observer::{Observer, Phase};
use crate::settings::RunSettings;

/// The disks of `groups` on `target`, as a run lays them out, each with its journal.
/// A disk without a journal, or whose journal is for another size, is an input error
/// naming the target and the disk.
fn disks_with_journals(
    target: &TargetSpec,
    groups: &[GroupPlan],
    settings: &RunSettings,
) -> Result<Vec<(DiskLayout, Journal)>, FleetError> {
    let cache = default_cache_dir();
    let shown = target
        .paths()
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::new();
    for g in groups.iter().filter(|g| g.plan.fleet.workers > 0) {
        // The check reads through a plain descriptor.
        let layout = plan_layout(target, &settings.layout_request(g, false))?;
        for d in layout {
            let path = journal_path(&d, &cache);
            let journal = Journal::load(&path)
                .map_err(|e| FleetError::Input(format!("--target {shown}: {e}")))?
                .ok_or_else(|| {
                    FleetError::Input(format!(
                        "--target {shown}: disk w{:03}-d{:03} ({}) has no verify journal ({}); only disks written by a run with --verify can be verified",
                        d.worker,
                        d.disk,
                        d.path.display(),
                        path.display()
                    ))
                })?;
            if !journal.fits(&d) {
                return Err(FleetError::Input(format!(
                    "--target {shown}: the verify journal of disk w{:03}-d{:03} ({}) is for a disk of {} bytes, not {}; give the --disk-size (and profile) of the verified run",
                    d.worker,
                    d.disk,
                    d.path.display(),
                    journal.size,
                    d.size
                )));
            }
            out.push((d, journal));
        }
    }
    if out.is_empty() {
        return Err(FleetError::Input(format!(
            "--target {shown}: no disk to verify"
        )));
    }
    Ok(out)
}

/// Check every unit of every disk of `groups` on `target` against its journal. `host`
/// names this host in the corruptions; the first `keep` are kept in detail (all are
/// counted). Returns the disks checked and what was found.
pub fn check_target(
    target: &TargetSpec,
    groups: &[GroupPlan],
    settings: &RunSettings,
    host: &str,
    keep: usize,
) -> Result<(usize, VerifySummary), FleetError> {
    let disks = disks_with_journals(target, groups, settings)?;
    let mut summary = VerifySummary::default();
    for (d, journal) in &disks {
        let found = match iofleet_engine::verify::open_for_scan(d) {
            Ok(file) => scan_disk(&file, d, journal, keep)
                .map_err(|e| FleetError::Setup(format!("cannot read {}: {e}", d.path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A disk file gone entirely: every unit is missing.
                let units = journal.floors.len() as u64;
                iofleet_engine::verify::ScanOutcome {
                    units_checked: units,
                    bad: units,
                    first: vec![iofleet_engine::verify::BadUnit {
                        offset: 0,
                        fault: iofleet_engine::verify::Fault::Missing { len: 0 },
                    }],
                }
            }
            Err(e) => {
                return Err(FleetError::Setup(format!(
                    "cannot open {}: {e}",
                    d.path.display()
                )))
            }
        };
        summary.units_checked += found.units_checked;
        summary.corruptions += found.bad;
        let room = keep.saturating_sub(summary.first.len());
        summary
            .first
            .extend(found.first.iter().take(room).map(|b| Corruption {
                host: host.to_string(),
                worker: d.worker,
                disk: d.disk,
                path: d.path.display().to_string(),
                offset: b.offset,
                kind: b.fault.kind().into(),
                expected: b.fault.expected(b.offset),
                found: b.fault.found(),
                t_s: None,
            }));
    }
    Ok((disks.len(), summary))
}

/// One verified disk: its layout, journal (file and content) and floor table.
pub(super) struct JournalSlot {
    pub disk: DiskLayout,
    path: PathBuf,
    journal: Journal,
    pub table: Arc<DiskTable>,
}

/// Make every disk of `layout` verifiable: a disk with a journal that fits is used as it
/// is (its floors and next sequence carry on); any other is filled with verifiable units
/// (sequence 0) and gets a fresh journal. None when a stop interrupted the fill.
pub(super) fn verify_setup(
    layout: &[DiskLayout],
    pattern: FillPattern,
    writes: FillWrites,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
    notices: &mut Vec<String>,
) -> Result<Option<Vec<JournalSlot>>, FleetError> {
    let cache = default_cache_dir();
    let mut slots = Vec::new();
    let mut todo = Vec::new();
    for d in layout {
        let path = journal_path(d, &cache);
        let found = match Journal::load(&path) {
            Ok(j) => j,
            Err(e) => {
                notices.push(format!("verify: {e}; the disk is refilled"));
                None
            }
        };
        let journal = match found {
            Some(j) if j.fits(d) => j,
            _ => {
                let j = Journal::fresh(d);
                todo.push((d.clone(), Some(j.disk_id())));
                j
            }
        };
        let mut table = DiskTable::new(
            journal.disk_id(),
            d.region_offset,
            &journal.floors,
            journal.next_seq,
        );
        table.path = d.path.display().to_string();
        let table = Arc::new(table);
        slots.push(JournalSlot {
            disk: d.clone(),
            path,
            journal,
            table,
        });
    }
    if !todo.is_empty() {
        notices.push(format!(
            "verify: {} of {} disks had no verify journal and were filled with verifiable data",
            todo.len(),
            layout.len()
        ));
        observer.phase(Phase::Prepare, 0.0);
        let fresh: Vec<(u32, u32)> = todo.iter().map(|(d, _)| (d.worker, d.disk)).collect();
        if !fill_all(todo, layout.len(), pattern, writes, stop, observer, notices)? {
            return Ok(None);
        }
        for s in slots
            .iter()
            .filter(|s| fresh.contains(&(s.disk.worker, s.disk.disk)))
        {
            s.journal
                .store(&s.path)
                .map_err(|e| FleetError::Setup(e.to_string()))?;
        }
    }
    Ok(Some(slots))
}

/// A run without `--verify` that writes: the disks' journals no longer describe them.
pub(super) fn forget_journals(
    layout: &[DiskLayout],
    cache: &Path,
    notices: &mut Vec<String>,
) -> Result<(), FleetError> {
    let mut n = 0;
    for d in layout {
        let path = journal_path(d, cache);
        n += forget_journal(&path)
            .map_err(|e| FleetError::Setup(format!("cannot remove {}: {e}", path.display())))?
            as usize;
    }
    if n > 0 {
        notices.push(format!(
            "verify: this run writes without --verify, so the verify journals of {n} disk(s) were removed"
        ));
    }
    Ok(())
}

/// Rewrites every verified disk's journal once per interval while the run goes, and
/// once more at its end; a disk whose floors and next sequence did not change since the
/// last rewrite is skipped.
pub(super) struct JournalSync {
    done: Arc<AtomicBool>,
    handle: JoinHandle<Result<(), String>>,
}

impl JournalSync {
    pub(super) fn start(slots: Vec<JournalSlot>, every: Duration) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let handle = std::thread::spawn(move || {
            // What each journal file holds now: a rewrite that would change nothing (a
            // disk only read since) is skipped.
            let mut stored: Vec<Option<Journal>> = vec![None; slots.len()];
            let mut store_all = || -> Result<(), String> {
                for (s, last) in slots.iter().zip(stored.iter_mut()) {
                    let now = s.journal.of_table(&s.table);
                    if last.as_ref() == Some(&now) {
                        continue;
                    }
                    now.store(&s.path).map_err(|e| e.to_string())?;
                    *last = Some(now);
                }
                Ok(())
            };
            let mut first_err = None;
            loop {
                let due = Instant::now() + every;
                while Instant::now() < due && !flag.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20).min(every));
                }
                let last = flag.load(Ordering::SeqCst);
                if let Err(e) = store_all() {
                    first_err.get_or_insert(e);
                }
                if last {
                    return first_err.map_or(Ok(()), Err);
                }
            }
        });
        JournalSync { done, handle }
    }

    /// The final rewrite, after every I/O thread ended.
    pub(super) fn finish(self) -> Result<(), String> {
        self.done.store(true, Ordering::SeqCst);
        self.handle
            .join()
            .unwrap_or_else(|_| Err("the journal thread panicked".into()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_profile_and_the_engine_agree_on_the_unit() {
        assert_eq!(
            iofleet_profile::options::VERIFY_UNIT,
            iofleet_engine::verify::UNIT
        );
    }
}
