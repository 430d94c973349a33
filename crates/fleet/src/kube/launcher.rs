//! Runs on a Kubernetes fleet: create the objects of the description, wait for every
//! pod to be Ready, then drive the pods as hosts through `AgentLauncher` over the
//! `kubectl` transport (one worker per pod, its disks on the pod's volumes), and at the
//! end of the command delete what was created unless `keep = true`. The fleet lives as
//! long as the command: its first run creates it, every later run (a sweep's steps, a
//! steady state's rounds, a job file's phases) uses the same pods and agents, and a run
//! whose objects differ (another disk count or size) deletes and creates them again,
//! saying so. Whatever ends the command — the end, an error, Ctrl-C at any phase — the
//! objects go: `close` deletes them, and so does dropping the launcher when `close` was
//! never reached.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iofleet_profile::GroupPlan;
use iofleet_stats::result::{KubePod, KubeRun};
use std::sync::mpsc::Sender;

use super::cluster::{claim_name, pod_facts, Cluster, States};
use super::{KubeFleet, Mode, VolumeMode};
use crate::agents::{plan, AgentLauncher};
use crate::error::FleetError;
use crate::host::{HostSpec, Reach, Role, TargetArg};
use crate::launcher::{Finished, HostVerified, Launcher, Prepared};
use crate::observer::Observer;
use crate::plan::{Hosts, LaunchPlan, Pods};
use crate::precondition::Preconditioned;
use crate::settings::RunSettings;
use crate::source::Msg;

/// How often the pods and claims are looked at while waiting for them.
pub(super) const POLL: Duration = Duration::from_millis(500);

pub struct KubeLauncher {
    pub(super) fleet: KubeFleet,
    /// The description's file, for the clean-up command in messages.
    file: PathBuf,
    pub(super) cluster: Cluster,
    /// The pods' agents: made for the pods of the first run, and again when a run's
    /// pods differ (their disks follow the profile).
    pub(super) agents: AgentLauncher,
    /// The objects this command applied (they may exist: deleted at its end unless
    /// `keep`), and whether the cluster had them already.
    pub(super) applied: Option<(Vec<serde_json::Value>, bool)>,
    pub(super) facts: Option<(KubeRun, Vec<KubePod>)>,
}

impl KubeLauncher {
    pub fn new(fleet: KubeFleet, file: PathBuf) -> Self {
        let cluster = Cluster::new(&fleet);
        KubeLauncher {
            agents: AgentLauncher::new(Vec::new()),
            cluster,
            fleet,
            file,
            applied: None,
            facts: None,
        }
    }

    /// Delete the fleet's objects unless they are to be kept: what was done, for the
    /// user, or why it failed and how to finish the job.
    fn clean_up(&mut self) -> Option<String> {
        self.applied.take()?;
        if self.fleet.keep {
            return Some(format!(
                "kubernetes: kept StatefulSet {} and its pods and volumes for the next run (keep = true); `iofleet kube clean --hosts {}` removes them",
                self.cluster.object,
                self.file.display()
            ));
        }
        Some(match self.cluster.delete() {
            Ok(()) if self.fleet.mode == Mode::Job => format!(
                "kubernetes: deleted Job {0}, Service {0}, Secret {0}, its pods and their volume claims",
                self.cluster.object
            ),
            Ok(()) => format!(
                "kubernetes: deleted StatefulSet {0}, Service {0}, its pods and its volume claims",
                self.cluster.object
            ),
            Err(e) => format!(
                "kubernetes: the fleet's objects could not all be deleted ({e}); `iofleet kube clean --hosts {}` removes them",
                self.file.display()
            ),
        })
    }

    /// The fleet of `objects` (pods of `disks` volumes each), Ready: the one this
    /// command made already when its objects are the same, else created (after
    /// deleting the command's other objects, with a notice) and waited for. `Ok(None)`
    /// when `stop` was set first.
    fn provision(
        &mut self,
        objects: Vec<serde_json::Value>,
        disks: u32,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<()>, FleetError> {
        let setup = |e: String| FleetError::Setup(e);
        match &self.applied {
            Some((applied, _)) if *applied == objects && self.facts.is_some() => {
                return Ok(Some(()));
            }
            Some(_) => {
                // A StatefulSet's claim templates cannot change in place; the agents
                // run in the pods about to go.
                notices.extend(self.agents.close());
                self.cluster.delete().map_err(setup)?;
                notices.push(format!(
                    "kubernetes: this run's pods differ from the command's earlier runs' (disks per pod or their size): StatefulSet {} was deleted and created again",
                    self.cluster.object
                ));
                self.facts = None;
            }
            None => {}
        }
        let reused = match &self.applied {
            Some((_, reused)) => *reused,
            None => self.cluster.exists().map_err(setup)?,
        };
        self.applied = Some((objects.clone(), reused));
        let t0 = Instant::now();
        self.cluster.apply(&objects).map_err(setup)?;
        let pods = self.fleet.pod_names();
        let claims: Vec<String> = pods
            .iter()
            .flat_map(|p| (0..disks).map(move |k| claim_name(k, p)))
            .collect();
        let Some((pod_states, claim_states)) =
            self.await_ready(&pods, &claims, t0, stop, observer)?
        else {
            return Ok(None);
        };
        let ready_after_s = t0.elapsed().as_secs_f64();
        let (volumes, classes) = self.cluster.volume_facts(&claim_states, notices);
        let pods = pod_facts(
            &pods,
            claim_name,
            disks,
            &pod_states,
            &claim_states,
            &volumes,
            &classes,
        );
        let class = claim_states
            .values()
            .find_map(|c| c.storage_class.as_ref())
            .and_then(|sc| classes.get(sc).cloned());
        let run = KubeRun {
            context: self.fleet.context.clone(),
            namespace: self.fleet.namespace.clone(),
            fleet: self.fleet.name.clone(),
            image: self.fleet.image.clone(),
            volume_mode: self.fleet.volume_mode.name().into(),
            reused,
            ready_after_s,
            storage_class: class,
            kept: self.fleet.keep,
            mode: None,
            joined_after_s: None,
        };
        notices.push(format!(
            "kubernetes: {} pods Ready in {:.1} s{}",
            pods.len(),
            ready_after_s,
            if reused {
                " (the fleet's objects were there already)"
            } else {
                ""
            }
        ));
        self.facts = Some((run, pods));
        Ok(Some(()))
    }

    /// Wait until every pod of `pods` is Ready (applied at `t0`), saying how far it got
    /// as it goes: the pods' and claims' states then. A claim still unbound past
    /// `bind_timeout`, or a pod not Ready past `ready_timeout`, is an error naming it with
    /// its events; `Ok(None)` when `stop` was set first.
    fn await_ready(
        &self,
        pods: &[String],
        claims: &[String],
        t0: Instant,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<Option<States>, FleetError> {
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let (pod_states, claim_states) = self.cluster.states().map_err(FleetError::Setup)?;
            let ready = pods
                .iter()
                .filter(|p| pod_states.get(*p).is_some_and(|s| s.ready))
                .count();
            let bound = claims
                .iter()
                .filter(|c| claim_states.get(*c).is_some_and(|s| s.bound))
                .count();
            observer.status(&format!(
                "kubernetes: {ready}/{} pods ready, {bound}/{} volumes bound, {:.0} s",
                pods.len(),
                claims.len(),
                t0.elapsed().as_secs_f64()
            ));
            if ready == pods.len() {
                return Ok(Some((pod_states, claim_states)));
            }
            let waited = t0.elapsed();
            if waited >= self.fleet.bind_timeout {
                if let Some(c) = claims
                    .iter()
                    .find(|c| !claim_states.get(*c).is_some_and(|s| s.bound))
                {
                    return Err(self.not_ready(
                        "PersistentVolumeClaim",
                        c,
                        "bound",
                        "bind_timeout",
                    ));
                }
            }
            if waited >= self.fleet.ready_timeout {
                let p = pods
                    .iter()
                    .find(|p| !pod_states.get(*p).is_some_and(|s| s.ready))
                    .expect("a pod is not ready");
                let mut e = self.not_ready("Pod", p, "Ready", "ready_timeout");
                if let (FleetError::Setup(m), Some(s)) = (&mut e, pod_states.get(p)) {
                    m.push_str(&format!(
                        " (phase {}{})",
                        s.phase,
                        s.waiting
                            .as_ref()
                            .map_or(String::new(), |w| format!(", container waiting: {w}"))
                    ));
                }
                return Err(e);
            }
            std::thread::sleep(POLL);
        }
    }

    /// The error for an object that did not become `what` within `key`, with its
    /// events.
    pub(super) fn not_ready(&self, kind: &str, name: &str, what: &str, key: &str) -> FleetError {
        let limit = match key {
            "bind_timeout" => self.fleet.bind_timeout,
            _ => self.fleet.ready_timeout,
        };
        let events = self.cluster.events(kind, name);
        FleetError::Setup(format!(
            "kubernetes: {} {name} was not {what} within {} (kubernetes.{key}); {}",
            if kind == "Pod" { "pod" } else { "claim" },
            iofleet_profile::units::format_duration(limit),
            if events.is_empty() {
                "it has no events".to_string()
            } else {
                format!("its events: {}", events.join("; "))
            }
        ))
    }
}

/// The fleet's pods as hosts: one worker each, its disks on its volumes.
fn pod_hosts(fleet: &KubeFleet, cluster: &Cluster, disks: u32) -> Vec<HostSpec> {
    fleet
        .pod_names()
        .into_iter()
        .map(|pod| {
            let paths: Vec<String> = (0..disks).map(|k| fleet.disk_path(k)).collect();
            HostSpec {
                name: pod.clone(),
                destination: pod,
                target: match fleet.volume_mode {
                    VolumeMode::Filesystem => TargetArg::Dirs(paths),
                    VolumeMode::Block => TargetArg::Devices(paths),
                },
                workers: None,
                labels: BTreeMap::new(),
                iofleet_path: None,
                reach: Reach::Kubectl(cluster.address.clone()),
                role: Role::Workers,
                observe: Vec::new(),
                scrape: None,
            }
        })
        .collect()
}

impl KubeLauncher {
    /// The StatefulSet's pods `plan` runs on, created (or found kept) and ready, with
    /// agents for them: the plan over those hosts. `Ok(None)` when `stop` was set first.
    fn pods_for(
        &mut self,
        mut plan: LaunchPlan<Pods>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<LaunchPlan<Hosts>>, FleetError> {
        let objects = std::mem::take(&mut plan.placement.objects);
        let disks = plan.groups[0].plan.fleet.disks_per_worker;
        if self
            .provision(objects, disks, stop, observer, notices)?
            .is_none()
        {
            return Ok(None);
        }
        let plan = plan.map(|pods| Hosts(pods.hosts));
        // The pods' agents stay for the command's later runs while the pods are the same.
        if !self
            .agents
            .hosts()
            .iter()
            .eq(plan.placement.0.iter().map(|(h, _)| h))
        {
            let hosts = plan.placement.0.iter().map(|(h, _)| h.clone()).collect();
            self.agents = AgentLauncher::new(hosts);
        }
        Ok(Some(plan))
    }
}

impl Launcher for KubeLauncher {
    type Where = Pods;

    fn plan(
        &self,
        groups: &[GroupPlan],
        settings: &RunSettings,
    ) -> Result<LaunchPlan<Pods>, FleetError> {
        let (group, mut notices) = self.fleet.group(groups)?;
        let disks = group.plan.fleet.disks_per_worker;
        let hosts = match self.fleet.mode {
            Mode::StatefulSet => pod_hosts(&self.fleet, &self.cluster, disks),
            Mode::Job => super::job::planned_hosts(&self.fleet, disks),
        };
        let mut plan = plan::plan(&hosts, &[group], settings)?;
        notices.append(&mut plan.notices);
        plan.notices = notices;
        let group = &plan.groups[0].plan;
        let (objects, volume_bytes) = (
            self.fleet.manifests(group),
            self.fleet.volume_bytes(group.fleet.disk_size.get()),
        );
        let fleet = &self.fleet;
        Ok(plan.map(|hosts| Pods {
            objects,
            context: fleet.context.clone(),
            namespace: fleet.namespace.clone(),
            volume_bytes,
            volume_mode: fleet.volume_mode.name().into(),
            storage_class: fleet.storage_class.clone(),
            keep: fleet.keep,
            hosts: hosts.0,
        }))
    }

    fn materialize(
        &mut self,
        mut plan: LaunchPlan<Pods>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Prepared>, FleetError> {
        if self.fleet.mode == Mode::Job {
            let objects = std::mem::take(&mut plan.placement.objects);
            let disks = plan.groups[0].plan.fleet.disks_per_worker;
            return self.materialize_job(plan, objects, disks, stop, observer, notices);
        }
        let Some(plan) = self.pods_for(plan, stop, observer, notices)? else {
            return Ok(None);
        };
        self.agents.materialize(plan, stop, observer, notices)
    }

    fn verify(
        &mut self,
        _plan: LaunchPlan<Pods>,
        _keep: usize,
    ) -> Result<Vec<HostVerified>, FleetError> {
        Err(FleetError::Input(
            "a Kubernetes fleet runs `iofleet run` and, kept, `iofleet precondition` (verify a kept fleet's volumes: not built yet)".into(),
        ))
    }

    fn precondition(
        &mut self,
        plan: LaunchPlan<Pods>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
    ) -> Result<Option<Preconditioned>, FleetError> {
        // Preconditioned volumes serve the runs of later commands: only a kept fleet,
        // which the next command reuses, carries them there (`keep` is refused with
        // mode = "job": a Job's pods never stay).
        if !self.fleet.keep {
            return Err(FleetError::Input(format!(
                "kubernetes.keep: fleet '{}' is deleted when this command ends, its preconditioned volumes with it: set keep = true, and the next command reuses the fleet and its filled volumes",
                self.fleet.name
            )));
        }
        let mut notices = Vec::new();
        let Some(plan) = self.pods_for(plan, stop, observer, &mut notices)? else {
            return Ok(None);
        };
        let found = self.agents.precondition(plan, stop, observer)?;
        Ok(found.map(|mut f| {
            f.notices.splice(0..0, notices);
            f
        }))
    }

    fn start(&mut self, epoch: Instant, tx: Sender<Msg>) -> Option<Duration> {
        self.agents.start(epoch, tx)
    }

    fn give_up(&mut self, source: usize) {
        self.agents.give_up(source)
    }

    fn finish(&mut self) -> Finished {
        let mut finished = self.agents.finish();
        finished.kubernetes = self.facts.clone();
        finished
    }

    fn close(&mut self) -> Vec<String> {
        // The agents first: they run in the pods about to be deleted.
        let mut notices = self.agents.close();
        notices.extend(self.clean_up());
        notices
    }
}

impl Drop for KubeLauncher {
    /// A command that ended before `close` (an error, Ctrl-C while provisioning or
    /// preparing) still deletes what it created.
    fn drop(&mut self) {
        if let Some(n) = self.clean_up() {
            eprintln!("note: {n}");
        }
    }
}
