//! One measurement: a run of worker groups on the command's fleet (opened by its first
//! measurement and kept by the command's `Session` for the later ones), with the
//! results store and the terminal line around it and the live outputs (`/metrics`, the
//! live view) watching it too. Every round of `--steady-state`, step of `sweep` and
//! `find-max`, and phase of a fio job file is one `measure`; no command runs the fleet
//! itself. Each result is judged here by the command's quorum of hosts (`--min-hosts`,
//! `iofleet_stats::validity::judge`) before it is stored, so every command that measures
//! stores and prints the same verdict.
//!
//! ```text
//!   RunArgs ─session::resolve─▶ groups + RunSettings
//!                                     │
//!                                     └─ measure ─▶ the Session's fleet ─▶ Fleet::measure ─▶ RunResult
//!                              (observers: terminal line, store recorder, /metrics, live view)
//! ```

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iofleet_fleet::{Fanout, Observer, RunSettings, StartNow};
use iofleet_profile::GroupPlan;
use iofleet_stats::result::RunResult;
use iofleet_stats::validity::{accepted_loss, judge};

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::live::LiveView;
use crate::run::resolve::fleet_exit;
use crate::run::session::Session;
use crate::store::record::StoreRecorder;

impl Session {
    /// One run of `groups` on the command's fleet (made by its first measurement, kept for
    /// the later ones), with the store and terminal line around it and the command's live
    /// session (`/metrics`, live view) watching it too: the result, judged by the
    /// command's quorum (`--min-hosts`) and saved unless `--no-save`, with the stored
    /// identity filled in. `stop` ends it early.
    pub(crate) fn measure(
        &mut self,
        a: &RunArgs,
        groups: &[GroupPlan],
        settings: RunSettings,
        stop: &Arc<AtomicBool>,
    ) -> Result<RunResult, Exit> {
        // Open the results store before any I/O (a bad --db fails early).
        let mut recorder = StoreRecorder::open(&a.save, a.quiet)?;

        let mut live = LiveView::new(a.quiet);
        let result = {
            let (fleet, watching) = self.fleet_and_observers(a)?;
            let mut observers: Vec<&mut dyn Observer> = vec![&mut live];
            observers.extend(watching);
            if let Some(r) = recorder.as_mut() {
                observers.push(r);
            }
            fleet.measure(
                groups,
                &settings,
                &mut StartNow,
                stop.clone(),
                &mut Fanout(observers),
            )
        };
        // A command of one measurement closes its fleet now, so that what closing did is
        // in the result (and the store).
        let closed = match self.close_after_one {
            true => self.close_fleet(),
            false => Vec::new(),
        };
        live.finish();
        let mut result = result;
        if let Ok(r) = result.as_mut() {
            // A fio job file's mapping notices, where the run's own notices are.
            r.notices.extend(crate::run::fio_job::notices(a));
            r.notices.extend(crate::run::diskspd::notices(a));
            r.notices.extend(crate::run::vdbench::notices(a));
            r.notices.extend(closed);
            // Judged here, once for every command that measures, before it is stored.
            r.validity = judge(&r.hosts, a.quorum());
            r.notices.extend(accepted_loss(&r.validity, a.quorum()));
        }
        let stored = recorder.and_then(|r| r.finish(result.as_ref().ok()));
        let mut result = result.map_err(fleet_exit)?;
        // Printed and exported results say which stored run they are.
        result.stored = stored;
        Ok(result)
    }
}
