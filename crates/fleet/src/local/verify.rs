//! `iofleet verify`: check every unit of a fleet's disks against their journals, after a
//! run, a crash or a kill. The disks are found exactly as a run finds them (the same
//! groups, target and layout planning, so the same checks and refusals); each disk's
//! journal says what every unit must hold at least. An agent runs the same check on
//! its host for `iofleet verify --hosts`. This module only reads disks; the unit and
//! journal formats live in `iofleet_engine::verify`.

use iofleet_engine::target::{plan_layout, DiskLayout, TargetSpec};
use iofleet_engine::verify::{default_cache_dir, journal_path, scan_disk, Journal};
use iofleet_profile::GroupPlan;
use iofleet_stats::result::{Corruption, VerifySummary};

use crate::error::FleetError;
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
