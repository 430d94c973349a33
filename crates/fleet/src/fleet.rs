//! `Fleet`: a launcher as a command holds it, for every measurement of the command
//! (a sweep's steps, a steady state's rounds, a job file's phases) and its one-shot
//! operations, closed once at the end. Each operation plans and then acts in one call,
//! so its checks still come before any write and the plan goes straight from `plan` to
//! the launcher that made it. Object safe, so a command holds a `Box<dyn Fleet>` of
//! whatever its `--hosts` or `--target` named; every `Launcher` is one (the blanket
//! impl), with the one run path (`controller::run`) behind `measure`.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iofleet_profile::GroupPlan;
use iofleet_stats::result::RunResult;

use crate::controller::{run, StartGate};
use crate::error::FleetError;
use crate::launcher::{HostVerified, Launcher};
use crate::observer::Observer;
use crate::plan::LaunchPlan;
use crate::precondition::Preconditioned;
use crate::settings::RunSettings;

pub trait Fleet {
    /// The plan of a run of `groups` with `settings`, as any reader sees it (`run
    /// --dry-run`): every check a run makes before it writes; nothing written, no host
    /// contacted.
    fn plan(&self, groups: &[GroupPlan], settings: &RunSettings) -> Result<LaunchPlan, FleetError>;

    /// One measurement of `groups` on this fleet (`controller::run`); `stop` ends it
    /// early. What the fleet opened for it stays open for the next one.
    fn measure(
        &mut self,
        groups: &[GroupPlan],
        settings: &RunSettings,
        gate: &mut dyn StartGate,
        stop: Arc<AtomicBool>,
        observer: &mut dyn Observer,
    ) -> Result<RunResult, FleetError>;

    /// Check every disk `groups` would run on against its verify journal
    /// (`Launcher::verify`), the first `keep` corruptions per host in detail.
    fn verify(
        &mut self,
        groups: &[GroupPlan],
        settings: &RunSettings,
        keep: usize,
    ) -> Result<Vec<HostVerified>, FleetError>;

    /// Precondition every disk `groups` would run on (`Launcher::precondition`).
    fn precondition(
        &mut self,
        groups: &[GroupPlan],
        settings: &RunSettings,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
    ) -> Result<Option<Preconditioned>, FleetError>;

    /// The command is over: close what the fleet opened (`Launcher::close`); what that
    /// did, for the user.
    fn close(&mut self) -> Vec<String>;
}

impl<L: Launcher> Fleet for L {
    fn plan(&self, groups: &[GroupPlan], settings: &RunSettings) -> Result<LaunchPlan, FleetError> {
        Launcher::plan(self, groups, settings).map(LaunchPlan::shown)
    }

    fn measure(
        &mut self,
        groups: &[GroupPlan],
        settings: &RunSettings,
        gate: &mut dyn StartGate,
        stop: Arc<AtomicBool>,
        observer: &mut dyn Observer,
    ) -> Result<RunResult, FleetError> {
        run(groups, settings, self, gate, stop, observer)
    }

    fn verify(
        &mut self,
        groups: &[GroupPlan],
        settings: &RunSettings,
        keep: usize,
    ) -> Result<Vec<HostVerified>, FleetError> {
        let plan = Launcher::plan(self, groups, settings)?;
        Launcher::verify(self, plan, keep)
    }

    fn precondition(
        &mut self,
        groups: &[GroupPlan],
        settings: &RunSettings,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
    ) -> Result<Option<Preconditioned>, FleetError> {
        let plan = Launcher::plan(self, groups, settings)?;
        Launcher::precondition(self, plan, stop, observer)
    }

    fn close(&mut self) -> Vec<String> {
        Launcher::close(self)
    }
}
