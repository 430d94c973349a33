//! Job mode's run (`mode = "job"`, module `job` for the objects): open the command's
//! join port where the description says, put its address and token in the fleet's
//! Secret, apply the Service, the Secret and the Indexed Job, and watch each pod on its
//! way — created, its ephemeral claims bound, Ready, its agent joined — until every
//! rank has joined. The joined agents are then the fleet's hosts (`AgentLauncher::joined`)
//! for every run of the command: no `kubectl exec`, one socket per pod.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iofleet_stats::result::{KubeRun, PodTimeline};
use serde_json::Value;

use super::cluster::{pod_facts, ClaimState, PodState};
use super::job::{self, joined_host};
use super::launcher::{KubeLauncher, POLL};
use super::KubeFleet;
use crate::agents::join::{JoinServer, JoinSettings, Member};
use crate::agents::AgentLauncher;
use crate::error::FleetError;
use crate::host::HostSpec;
use crate::launcher::{Launcher, Prepared};
use crate::observer::Observer;
use crate::plan::{Hosts, LaunchPlan, Pods};
use crate::settings::RunSettings;

/// How long an agent has from its connection to its join.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the wait for the pods saw: each rank's pod (name, state) and way.
struct Seen {
    pods: BTreeMap<u32, (String, PodState)>,
    timeline: BTreeMap<u32, PodTimeline>,
}

impl KubeLauncher {
    /// Job mode's `materialize`: the joined fleet of this command when its objects are
    /// the same, else (after deleting the earlier one) a new one, created and joined.
    pub(super) fn materialize_job(
        &mut self,
        plan: LaunchPlan<Pods>,
        objects: Vec<Value>,
        disks: u32,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Prepared>, FleetError> {
        let same = matches!(&self.applied, Some((a, _)) if *a == objects) && self.facts.is_some();
        if !same {
            if self.applied.is_some() {
                notices.extend(self.agents.close());
                // Its join port closes with it: the agents of the old pods stop.
                self.agents = AgentLauncher::new(Vec::new());
                self.cluster.delete().map_err(FleetError::Setup)?;
                notices.push(format!(
                    "kubernetes: this run's pods differ from the command's earlier runs' (disks per pod or their size): Job {} was deleted and created again",
                    self.cluster.object
                ));
                self.facts = None;
                self.applied = None;
            }
            if self
                .provision_job(objects, disks, &plan.settings, stop, observer, notices)?
                .is_none()
            {
                return Ok(None);
            }
        }
        let plan = plan.map(|pods| Hosts(pods.hosts));
        self.agents.materialize(plan, stop, observer, notices)
    }

    /// Open the join port, create the objects and wait until every rank has joined.
    /// `Ok(None)` when `stop` was set first.
    fn provision_job(
        &mut self,
        objects: Vec<Value>,
        disks: u32,
        settings: &RunSettings,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<()>, FleetError> {
        let setup = FleetError::Setup;
        let port = self.open_port(settings)?;
        if let Some(w) = job::api_warning(self.fleet.pods, self.fleet.pods) {
            notices.push(w);
        }
        let (address, token) = (port.address.to_string(), port.token().to_string());
        let applied: Vec<Value> = objects
            .iter()
            .map(|o| {
                if o["kind"] == "Secret" {
                    self.fleet.secret(&o["metadata"], Some((&address, &token)))
                } else {
                    o.clone()
                }
            })
            .collect();
        // A Job left by a killed command: its pods joined that command, and a Job's
        // template cannot change; it goes first.
        if self.cluster.exists().map_err(setup)? {
            self.applied = Some((objects.clone(), true));
            self.cluster.delete().map_err(setup)?;
            notices.push(format!(
                "kubernetes: Job {} was there already (left by a command that ended without deleting it): deleted it first",
                self.cluster.object
            ));
        }
        self.applied = Some((objects, false));
        let t0 = Instant::now();
        self.cluster.apply(&applied).map_err(setup)?;
        eprintln!(
            "iofleet: Job {} applied; its {} pod(s) join {}",
            self.cluster.object, self.fleet.pods, port.address
        );
        let Some(seen) = self.await_joined(&port, disks, t0, stop, observer)? else {
            return Ok(None);
        };
        let members = port.wait(self.fleet.pods, Duration::ZERO, stop)?;
        let hosts = self.record_joined(seen, &members, disks, t0, notices)?;
        self.agents = AgentLauncher::joined(hosts, port);
        Ok(Some(()))
    }

    /// The join port, at `controller` (or `listen`), for the fleet's pods.
    fn open_port(&self, settings: &RunSettings) -> Result<JoinServer, FleetError> {
        let (listen, host) = self.fleet.join_endpoints();
        let key = if self.fleet.listen.is_some() {
            "kubernetes.listen"
        } else {
            "kubernetes.controller"
        };
        JoinServer::open(
            &listen,
            Some(&host),
            JoinSettings {
                expect: self.fleet.pods,
                host_timeout: settings.host_timeout,
                handshake_timeout: HANDSHAKE_TIMEOUT.min(settings.host_timeout),
                ..Default::default()
            },
        )
        .map_err(|e| match e {
            FleetError::Input(m) => FleetError::Input(m.replace("--listen", key)),
            FleetError::Setup(m) => FleetError::Setup(m.replace("--listen", key)),
            e => e,
        })
    }

    /// The Kubernetes facts of the joined fleet (`seen` while waiting, `members` in rank
    /// order, the objects applied at `t0`), kept for the runs' results: its hosts.
    fn record_joined(
        &mut self,
        seen: Seen,
        members: &[Member],
        disks: u32,
        t0: Instant,
        notices: &mut Vec<String>,
    ) -> Result<Vec<HostSpec>, FleetError> {
        let joined_after_s = members
            .iter()
            .map(|m| m.joined_at.saturating_duration_since(t0).as_secs_f64())
            .fold(0.0, f64::max);
        let (_, claim_states) = self.cluster.states().map_err(FleetError::Setup)?;
        let (volumes, classes) = self.cluster.volume_facts(&claim_states, notices);
        let names: Vec<String> = (0..self.fleet.pods)
            .map(|r| {
                seen.pods.get(&r).map_or_else(
                    || format!("{}-{r}", self.cluster.object),
                    |(n, _)| n.clone(),
                )
            })
            .collect();
        let states: BTreeMap<String, PodState> = seen
            .pods
            .values()
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect();
        let mut pods = pod_facts(
            &names,
            |k, pod| KubeFleet::ephemeral_claim(pod, k),
            disks,
            &states,
            &claim_states,
            &volumes,
            &classes,
        );
        for (rank, p) in pods.iter_mut().enumerate() {
            p.timeline = seen.timeline.get(&(rank as u32)).cloned();
        }
        let ready_after_s = pods
            .iter()
            .filter_map(|p| p.timeline.as_ref().and_then(|t| t.ready_s))
            .fold(0.0, f64::max);
        let class = claim_states
            .values()
            .find_map(|c| c.storage_class.as_ref())
            .and_then(|sc| classes.get(sc).cloned());
        let hosts: Vec<HostSpec> = members
            .iter()
            .map(|m: &Member| {
                joined_host(
                    &self.fleet,
                    disks,
                    names[m.rank as usize].clone(),
                    m.rank,
                    m.id,
                    m.peer.to_string(),
                )
            })
            .collect();
        notices.push(format!(
            "kubernetes: Job {}: {} pods Ready in {ready_after_s:.1} s, their agents joined in {joined_after_s:.1} s",
            self.cluster.object,
            pods.len()
        ));
        self.facts = Some((
            KubeRun {
                context: self.fleet.context.clone(),
                namespace: self.fleet.namespace.clone(),
                fleet: self.fleet.name.clone(),
                image: self.fleet.image.clone(),
                volume_mode: self.fleet.volume_mode.name().into(),
                reused: false,
                ready_after_s,
                storage_class: class,
                kept: false,
                mode: Some("job".into()),
                joined_after_s: Some(joined_after_s),
            },
            pods,
        ));
        Ok(hosts)
    }

    /// Look at the fleet's pods and claims every half second, and at the join port,
    /// until every rank's agent has joined: each rank's pod and way. A claim not bound
    /// within `bind_timeout`, a pod not Ready or its agent not joined within
    /// `ready_timeout`, and a pod that ended before its agent joined are errors naming
    /// it; `Ok(None)` when `stop` was set first.
    fn await_joined(
        &self,
        port: &JoinServer,
        disks: u32,
        t0: Instant,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<Option<Seen>, FleetError> {
        let n = self.fleet.pods;
        let mut seen = Seen {
            pods: BTreeMap::new(),
            timeline: BTreeMap::new(),
        };
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let (pod_states, claim_states) = self.cluster.states().map_err(FleetError::Setup)?;
            let now_s = t0.elapsed().as_secs_f64();
            for (name, s) in pod_states {
                let Some(rank) = s.index.filter(|&r| r < n) else {
                    continue;
                };
                let t = seen.timeline.entry(rank).or_default();
                t.created_s.get_or_insert(now_s);
                let bound = (0..disks).all(|k| {
                    claim_states
                        .get(&KubeFleet::ephemeral_claim(&name, k))
                        .is_some_and(|c| c.bound)
                });
                if bound {
                    t.bound_s.get_or_insert(now_s);
                }
                if s.ready {
                    t.ready_s.get_or_insert(now_s);
                }
                seen.pods.insert(rank, (name, s));
            }
            let members = port.members();
            for m in &members {
                seen.timeline
                    .entry(m.rank)
                    .or_default()
                    .joined_s
                    .get_or_insert(m.joined_at.saturating_duration_since(t0).as_secs_f64());
            }
            let ready = seen.pods.values().filter(|(_, s)| s.ready).count();
            let bound = seen
                .timeline
                .values()
                .filter(|t| t.bound_s.is_some())
                .count() as u32
                * disks;
            observer.status(&format!(
                "kubernetes: {ready}/{n} pods ready, {bound}/{} volumes bound, {}/{n} agents joined, {:.0} s",
                n * disks,
                members.len(),
                now_s
            ));
            if members.len() as u32 >= n {
                return Ok(Some(seen));
            }
            if let Some(e) = self.stuck(&seen, &members, &claim_states, port, disks, t0) {
                return Err(e);
            }
            std::thread::sleep(POLL);
        }
    }

    /// Why the wait cannot go on, if it cannot: a pod that ended before its agent
    /// joined, a claim not bound within `bind_timeout`, a pod not Ready or its agent
    /// not joined within `ready_timeout` (each named).
    fn stuck(
        &self,
        seen: &Seen,
        members: &[Member],
        claim_states: &BTreeMap<String, ClaimState>,
        port: &JoinServer,
        disks: u32,
        t0: Instant,
    ) -> Option<FleetError> {
        let n = self.fleet.pods;
        let joined = |r: u32| members.iter().any(|m| m.rank == r);
        if let Some((rank, (name, s))) = seen
            .pods
            .iter()
            .find(|(r, (_, s))| matches!(s.phase.as_str(), "Failed" | "Succeeded") && !joined(**r))
        {
            let events = self.cluster.events("Pod", name);
            return Some(FleetError::Setup(format!(
                    "kubernetes: pod {name} (rank {rank}) ended before its agent joined (phase {}{}); does image {} carry iofleet {} (`iofleet kube containerfile`), and can the pods reach {}? {}",
                    s.phase,
                    s.terminated.as_ref().map_or(String::new(), |t| format!(", {t}")),
                    self.fleet.image,
                    env!("CARGO_PKG_VERSION"),
                    port.address.endpoint,
                    if events.is_empty() {
                        "It has no events".to_string()
                    } else {
                        format!("Its events: {}", events.join("; "))
                    }
                )));
        }
        let waited = t0.elapsed();
        if waited >= self.fleet.bind_timeout {
            if let Some((_, (name, _))) = seen
                .pods
                .iter()
                .find(|(r, _)| seen.timeline.get(r).is_some_and(|t| t.bound_s.is_none()))
            {
                let claim = (0..disks)
                    .map(|k| KubeFleet::ephemeral_claim(name, k))
                    .find(|c| !claim_states.get(c).is_some_and(|c| c.bound))
                    .unwrap_or_else(|| KubeFleet::ephemeral_claim(name, 0));
                return Some(self.not_ready(
                    "PersistentVolumeClaim",
                    &claim,
                    "bound",
                    "bind_timeout",
                ));
            }
        }
        if waited >= self.fleet.ready_timeout {
            if let Some((_, (name, _))) = seen.pods.iter().find(|(_, (_, s))| !s.ready) {
                return Some(self.not_ready("Pod", name, "Ready", "ready_timeout"));
            }
            let missing: Vec<String> = (0..n)
                .filter(|r| !joined(*r))
                .map(|r| {
                    seen.pods.get(&r).map_or_else(
                        || format!("rank {r} (no pod)"),
                        |(p, _)| format!("rank {r} ({p})"),
                    )
                })
                .collect();
            let refused = port.refusals();
            return Some(FleetError::Setup(format!(
                    "kubernetes: not every pod's agent joined {} within {} (kubernetes.ready_timeout): missing {}{}",
                    port.address.endpoint,
                    iofleet_profile::units::format_duration(self.fleet.ready_timeout),
                    missing.join(", "),
                    if refused.is_empty() {
                        String::new()
                    } else {
                        format!("; {}", refused.join("; "))
                    }
                )));
        }
        None
    }
}
