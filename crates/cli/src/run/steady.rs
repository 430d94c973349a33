//! `--steady-state`: measure in rounds until the SNIA SSS PTS rule holds
//! (`iofleet_stats::steady`), for `run`, each `sweep` step and any command that measures
//! steps (`measure_step` is the one entry point; find-max calls it per step).
//!
//! A round is one run of the profile's measured duration (`--duration`), through the
//! same `measure` as `iofleet run`; warm-up runs before the first round only. After each
//! round the rule is applied to the last five; the rounds stop at the first round where
//! it holds, or after 25. Every round is saved as its own run (label `round=N`); the
//! result reported is the last round's, with a `steady_state` block (every round's
//! IOPS, the window's, its mean, range and excursion), and the stored result of that
//! last round is rewritten with the block. Rounds are not merged: each run's
//! percentiles come from its own histograms, and the SNIA steady-state figure, the
//! window's mean IOPS, is in the block.
//!
//! A simulated device is rebuilt with each run; so that it carries on where the
//! previous round left it (a drift, `docs/capacity.md`), each round's device is told
//! how much device time the earlier rounds served (`age`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use iofleet_fleet::{EngineSpec, RunSettings};
use iofleet_profile::GroupPlan;
use iofleet_stats::result::RunResult;
use iofleet_stats::steady::{first_steady_round, SteadyState, MAX_ROUNDS};

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::session::Session;
use crate::store::record::update_stored_result;
use crate::web::step::{Step, StepKind};

/// The label every round carries: its number, from 1.
pub const ROUND_LABEL: &str = "round";

/// `--label round=…` is the rounds' own: refused before anything runs.
pub(crate) fn check_args(a: &RunArgs) -> Result<(), Exit> {
    if a.steady_state && a.save.labels.iter().any(|(k, _)| k == ROUND_LABEL) {
        return Err(Exit::input(format!(
            "--label {ROUND_LABEL}: --steady-state sets this label on every round"
        )));
    }
    Ok(())
}

impl Session {
    /// Measure one step: once, or in rounds until steady with `--steady-state`.
    pub(crate) fn measure_step(
        &mut self,
        a: &RunArgs,
        groups: &[GroupPlan],
        settings: RunSettings,
        stop: &Arc<AtomicBool>,
    ) -> Result<RunResult, Exit> {
        if a.steady_state {
            self.measure_until_steady(a, groups, settings, stop)
        } else {
            self.measure(a, groups, settings, stop)
        }
    }

    /// Rounds of `groups` until the steady-state rule holds over the last five, at most
    /// 25; the last round's result with its `steady_state` block. Ctrl-C (`stop`), or a
    /// round that stopped early or lost a source, ends the rounds: the block then says the
    /// rule did not hold. Each round is announced to the command's live session.
    fn measure_until_steady(
        &mut self,
        a: &RunArgs,
        groups: &[GroupPlan],
        settings: RunSettings,
        stop: &Arc<AtomicBool>,
    ) -> Result<RunResult, Exit> {
        check_args(a)?;
        let timing = &groups
            .first()
            .ok_or_else(|| Exit::input("a run needs at least one worker group"))?
            .plan
            .timing;
        let (warmup, round) = (timing.warmup, timing.duration);
        let mut round_iops = Vec::new();
        let mut round_runs = Vec::new();
        // Device time the simulated devices have served so far.
        let mut served = Duration::ZERO;
        let mut last: Option<RunResult> = None;
        for k in 1..=MAX_ROUNDS {
            let mut ra = a.clone();
            ra.save.labels.push((ROUND_LABEL.into(), k.to_string()));
            let mut rg = groups.to_vec();
            if k > 1 {
                for g in &mut rg {
                    g.plan.timing.warmup = Duration::ZERO;
                }
            }
            let mut rs = settings.clone();
            if let EngineSpec::Sim(device) = &mut rs.engine {
                device.age_ns = device.age_ns.saturating_add(served.as_nanos() as u64);
            }
            self.announce(&Step {
                kind: StepKind::Round,
                index: k,
                of: Some(MAX_ROUNDS),
                at_most: true,
                label: format!("round {k}"),
                rate_iops: crate::run::resolve::offered_rate(&rg),
            });
            let r = self.measure(&ra, &rg, rs, stop)?;
            served += round + if k == 1 { warmup } else { Duration::ZERO };
            let cut_short = r.run.interrupted
                || stop.load(Ordering::SeqCst)
                || !r.summary.errors.failed_threads.is_empty()
                || r.hosts.iter().any(|h| h.lost_at_s.is_some());
            if !cut_short {
                round_iops.push(r.summary.all.iops);
                if let Some(s) = &r.stored {
                    round_runs.push(s.id.clone());
                }
            }
            if !a.quiet {
                eprintln!(
                    "steady state: round {k}/{MAX_ROUNDS}: {:.0} IOPS{}",
                    r.summary.all.iops,
                    if cut_short {
                        " (cut short: not counted)"
                    } else {
                        ""
                    }
                );
            }
            last = Some(r);
            if cut_short || first_steady_round(&round_iops) == Some(round_iops.len() as u32) {
                break;
            }
        }
        let mut result = last.expect("at least one round runs");
        let mut block = SteadyState::from_rounds(&round_iops, round.as_secs_f64(), round_runs);
        // The rounds stop at the first window that holds, so a held block ends there.
        block.held = block.held && first_steady_round(&round_iops) == Some(block.round);
        result.steady_state = Some(block);
        if let Some(s) = &result.stored {
            update_stored_result(&a.save, &s.id, &result);
        }
        Ok(result)
    }
}
