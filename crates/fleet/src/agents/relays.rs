//! A fleet of joined agents in a tree (`--relay-fanout K`): rank r is a relay when it is
//! a multiple of K + 1, and the K ranks after it join it instead of the controller
//! (the join port sends them there, `join::server`). To the controller a relay is one
//! source: it gets one job holding the jobs of the hosts below it (`AgentJob::below`),
//! it says ready once they all are, it takes the start instant on its own clock and
//! passes it on on theirs, and each interval it sends one merged frame for all of them
//! (`crate::relay`). The hosts below are hosts of the run all the same: the plan places
//! workers on them (a relay runs none of its own), the result names them, and a relay
//! that is lost takes them with it at the same instant.
//!
//! `RelayLauncher` is the controller's side: the agents' launcher over the relays, with
//! the plan made over every host and turned into the relays' jobs, and the prepared run
//! turned back to every host.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iofleet_profile::GroupPlan;

use super::join::JoinServer;
use super::protocol::{AgentJob, BelowJob, Task};
use super::AgentLauncher;
use crate::error::FleetError;
use crate::host::HostSpec;
use crate::launcher::{Finished, HostVerified, Launcher, Prepared};
use crate::observer::Observer;
use crate::plan::{Hosts, LaunchPlan};
use crate::precondition::Preconditioned;
use crate::settings::RunSettings;
use crate::source::Msg;

pub use super::join::server::is_relay;

/// The controller's launcher of a relayed fleet.
pub struct RelayLauncher {
    /// Every host, by rank: relays (pinned to no workers of their own) and the hosts
    /// below them.
    all: Vec<HostSpec>,
    /// Per host: the relay it is below (index into `all`); None for a relay.
    above: Vec<Option<usize>>,
    /// The relays (indexes into `all`), in the order of the agents' launcher's hosts.
    relays: Vec<usize>,
    agents: AgentLauncher,
    /// Per source of the run under way: its relay (index into `all`).
    sources: Vec<usize>,
    /// Relays run no share of their own (`--relay-dedicated`).
    dedicated: bool,
}

impl RelayLauncher {
    /// The fleet of `all` (every rank, in order; the relays' entries are the agents
    /// that joined `port`), `fanout` ranks below each relay; `dedicated` relays run no
    /// share of their own.
    pub fn new(mut all: Vec<HostSpec>, fanout: u32, dedicated: bool, port: JoinServer) -> Self {
        let relays: Vec<usize> = (0..all.len())
            .filter(|&r| is_relay(r as u32, fanout))
            .collect();
        if dedicated {
            for &r in &relays {
                all[r].workers = Some(0);
            }
        }
        let above = (0..all.len())
            .map(|r| (!is_relay(r as u32, fanout)).then(|| r - r % (fanout as usize + 1)))
            .collect();
        let agents = AgentLauncher::joined(relays.iter().map(|&r| all[r].clone()).collect(), port);
        RelayLauncher {
            all,
            above,
            relays,
            agents,
            sources: Vec::new(),
            dedicated,
        }
    }
}

impl Launcher for RelayLauncher {
    type Where = Hosts;

    fn plan(
        &self,
        groups: &[GroupPlan],
        settings: &RunSettings,
    ) -> Result<LaunchPlan<Hosts>, FleetError> {
        if settings.drop_caches.is_some() {
            return Err(FleetError::Input(
                "--drop-caches: not with --relay-fanout yet (every host must drop at one moment, which the relays do not pass on)".into(),
            ));
        }
        let mut plan = super::plan::plan(&self.all, groups, settings)?;
        if !self.dedicated {
            return Ok(plan);
        }
        // A relay has no worker of its own by design: not worth a notice each.
        let relays: Vec<&str> = self
            .relays
            .iter()
            .map(|&r| self.all[r].name.as_str())
            .collect();
        plan.notices.retain(|n| {
            !relays
                .iter()
                .any(|r| n.starts_with(&format!("host {r} has no worker")))
        });
        const NAMED: usize = 5;
        let more = relays.len().saturating_sub(NAMED);
        plan.notices.push(format!(
            "{} relay(s) ({}{}) run no workers of their own: each merges the intervals of the hosts below it",
            relays.len(),
            relays[..relays.len().min(NAMED)].join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
        Ok(plan)
    }

    fn materialize(
        &mut self,
        plan: LaunchPlan<Hosts>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Prepared>, FleetError> {
        let placed = plan.placement.0.clone();
        // Each host with work below a relay (and a relay's own share): its job, in the
        // relay's.
        let mut below: BTreeMap<usize, Vec<BelowJob>> = BTreeMap::new();
        for (i, (spec, share)) in placed.iter().enumerate() {
            let r = match self.above[i] {
                Some(r) => r,
                None if !self.dedicated => i,
                None => continue,
            };
            if share.count == 0 {
                continue;
            }
            let relay = self.relays.iter().position(|&x| x == r).expect("a relay");
            below.entry(relay).or_default().push(BelowJob {
                host: i as u32,
                rank: i as u32,
                job: AgentJob {
                    groups: share.groups.clone(),
                    target: spec.target.clone(),
                    settings: plan.settings.clone(),
                    task: Task::Run,
                    observe: Vec::new(),
                    scrape: None,
                    below: Vec::new(),
                },
            });
        }
        // Which hosts each relay has below it, for after the jobs are handed over.
        let below_hosts: BTreeMap<usize, Vec<usize>> = below
            .iter()
            .map(|(&r, jobs)| (r, jobs.iter().map(|b| b.host as usize).collect()))
            .collect();
        self.agents.set_below(below);
        let relays = plan.map(|_| Hosts(self.relays.iter().map(|&r| placed[r].clone()).collect()));
        let Some(mut prep) = self.agents.materialize(relays, stop, observer, notices)? else {
            return Ok(None);
        };
        // The relays with work below them are the run's sources, in order.
        let active: Vec<usize> = (0..self.relays.len())
            .filter(|i| below_hosts.contains_key(i))
            .collect();
        self.sources = active.iter().map(|&i| self.relays[i]).collect();
        let mut names: Vec<String> = self.all.iter().map(|h| h.name.clone()).collect();
        for &i in &active {
            if let Some(said) = self.agents.below_names(i) {
                for (&h, name) in below_hosts[&i].iter().zip(said) {
                    names[h] = name.clone();
                }
            }
        }
        prep.hosts = names;
        prep.worker_base = 0;
        prep.worker_host = placed
            .iter()
            .enumerate()
            .flat_map(|(h, (_, s))| std::iter::repeat_n(h, s.count as usize))
            .collect();
        prep.observers = vec![false; self.all.len()];
        prep.sources = prep
            .sources
            .into_iter()
            .map(|(name, h)| (name, self.sources[h]))
            .collect();
        prep.below = active
            .iter()
            .enumerate()
            .map(|(s, i)| (s, below_hosts[i].clone()))
            .collect();
        Ok(Some(prep))
    }

    fn verify(
        &mut self,
        _plan: LaunchPlan<Hosts>,
        _keep: usize,
    ) -> Result<Vec<HostVerified>, FleetError> {
        Err(FleetError::Input(
            "iofleet verify: not through relays (--relay-fanout) yet".into(),
        ))
    }

    fn precondition(
        &mut self,
        _plan: LaunchPlan<Hosts>,
        _stop: &Arc<AtomicBool>,
        _observer: &mut dyn Observer,
    ) -> Result<Option<Preconditioned>, FleetError> {
        Err(FleetError::Input(
            "iofleet precondition: not through relays (--relay-fanout) yet".into(),
        ))
    }

    fn start(&mut self, epoch: Instant, tx: std::sync::mpsc::Sender<Msg>) -> Option<Duration> {
        self.agents.start(epoch, tx)
    }

    fn give_up(&mut self, source: usize) {
        self.agents.give_up(source)
    }

    fn finish(&mut self) -> Finished {
        let mut f = self.agents.finish();
        // How late each relay's hosts began, as the relay said it (the hosts below it
        // are not timed one by one here).
        let mut late = vec![None; self.all.len()];
        for (s, l) in f.start_late_ms.iter().enumerate() {
            if let Some(&r) = self.sources.get(s) {
                late[r] = *l;
            }
        }
        f.start_late_ms = late;
        f
    }

    fn close(&mut self) -> Vec<String> {
        self.agents.close()
    }
}
