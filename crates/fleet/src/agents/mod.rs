//! The agent launcher: one `iofleet agent` per host, reached over that host's
//! transport, speaking the protocol on the session's stdin/stdout. To the controller it
//! is one source per host, whose agent already merged its own threads.
//!
//! Sequence, in one session per host: start the agent from a content-addressed copy,
//! sent on that session from one buffer when missing or different, verified by
//! SHA-256, kept for the next run (copies of other versions unused for `KEEP_DAYS`
//! removed), its process id recorded on the host with the session's nonce → hello
//! (versions checked) → clock offset from
//! round trips → job → every host prepares and reports ready (heartbeats meanwhile) →
//! clock offsets measured again on the idle fleet, and one ping to all → one start
//! instant, translated to each host's clock → intervals and heartbeats stream back →
//! stop (at the end, on Ctrl-C, or when stdin closes on the agents). A host whose connection dies is lost at that moment; one that goes silent
//! (frozen, partitioned) is lost at the moment it was last heard from, and its agent
//! is killed through a second connection, since a frozen process reads nothing: by the
//! process id the start script recorded, once the host has checked that the process
//! runs the binary it started and carries the session's nonce (`kill_script`); never by
//! anything the agent said. Frames are read within the limits of the session's phase
//! (`FrameLimits`): a frame over them ends that host's connection, naming the limit.
//!
//! The wing's parts: this module runs the fleet of sessions (`AgentLauncher`); `plan`
//! decides each host's share; `session` opens and speaks to one host's agent;
//! `scripts` are the shell scripts run on a host; `transport` runs a script there
//! (`ssh`, `local`, `kubectl`); `protocol` is the frames; `agent` is the other end;
//! `event` is what an agent's reader reports; `join` holds agents that connected back
//! to the command's port instead (`Via::Joined`: the same launcher, frames and loss
//! rules, a socket on the port's event loop instead of a session).

pub mod agent;
mod event;
pub mod join;
pub mod plan;
pub mod protocol;
pub mod relays;
mod scripts;
mod session;
pub mod transport;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, Sender};
use iofleet_profile::GroupPlan;

use self::protocol::{mono_ns, AgentJob, Clock, Done, Frame, FrameLimits, Start, Task};
use crate::error::FleetError;
use crate::host::{HostSpec, Reach, Role};
use crate::launcher::{Finished, HostVerified, Launcher, Prepared};
use crate::observer::Observer;
use crate::plan::{HostShare, Hosts, LaunchPlan};
use crate::precondition::Preconditioned;
use crate::settings::RunSettings;
use crate::source::Msg;

use self::join::JoinServer;
use self::scripts::clean_script;
pub use self::scripts::KEEP_DAYS;
use self::session::{
    agent_failure, closing, connect, host_err, kill_remote, send_to, ClockFit, Conn, Event,
    Shipment, Stdin, CLOCK_SAMPLES,
};

/// Hosts whose clocks are measured at once before a start (`refine_clocks`).
const CLOCK_BATCH: usize = 16;

/// How long agents get to exit after a stop before their sessions are killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// `iofleet hosts clean`: on every host at once, remove the iofleet copies and uploads
/// that no process runs. Per host, in inventory order: its name and the script's
/// lines (`removed PATH`, `in use PATH`, `cannot remove PATH`), or why the host could
/// not be cleaned.
pub fn clean_hosts(hosts: &[HostSpec]) -> Vec<(String, Result<Vec<String>, FleetError>)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|h| {
                s.spawn(move || {
                    let t = transport::for_host(h)?;
                    let out = t
                        .shell(&clean_script())
                        .stdin(Stdio::null())
                        .output()
                        .map_err(|e| host_err(h, format!("cannot run {}: {e}", t.kind())))?;
                    if !out.status.success() {
                        return Err(host_err(
                            h,
                            format!(
                                "{} failed: {}",
                                t.kind(),
                                String::from_utf8_lossy(&out.stderr).trim()
                            ),
                        ));
                    }
                    Ok(String::from_utf8_lossy(&out.stdout)
                        .lines()
                        .map(str::to_string)
                        .collect())
                })
            })
            .collect();
        hosts
            .iter()
            .zip(handles)
            .map(|(h, j)| {
                let r = j
                    .join()
                    .unwrap_or_else(|_| Err(host_err(h, "the clean-up thread failed")));
                (h.name.clone(), r)
            })
            .collect()
    })
}

/// The hosts' notices, each said once: prefixed with the host that said it, with the
/// hosts that said it (the first few named), or with "every host" — so a fleet of
/// hundreds of pods whose container refuses io_uring gives one notice, not hundreds.
/// In the order first said.
fn fold_host_notices(names: &[&str], said: Vec<(usize, String)>) -> Vec<String> {
    const NAMED: usize = 5;
    let mut by_text: Vec<(String, Vec<usize>)> = Vec::new();
    for (h, text) in said {
        match by_text.iter_mut().find(|(t, _)| *t == text) {
            Some((_, hosts)) if !hosts.contains(&h) => hosts.push(h),
            Some(_) => {}
            None => by_text.push((text, vec![h])),
        }
    }
    by_text
        .into_iter()
        .map(|(text, hosts)| match hosts.len() {
            1 => format!("{}: {text}", names[hosts[0]]),
            k if k == names.len() => format!("every host ({k}): {text}"),
            k => {
                let shown: Vec<&str> = hosts.iter().take(NAMED).map(|&h| names[h]).collect();
                let more = if k > NAMED {
                    format!(" and {} more", k - NAMED)
                } else {
                    String::new()
                };
                format!("{k} hosts ({}{more}): {text}", shown.join(", "))
            }
        })
        .collect()
}

/// Workers as agents on the hosts of an inventory. The sessions are opened by the
/// command's first run and stay open for its later runs (a sweep's steps, a steady
/// state's rounds, a job file's phases): each agent takes one job per run. They close
/// with `close` (or when the launcher is dropped: an error, Ctrl-C), and are opened
/// again only when a run needs other hosts, or a host's session ended.
pub struct AgentLauncher {
    hosts: Vec<HostSpec>,
    /// The settings of the run or task under way: its plan's, taken when the plan is
    /// consumed.
    settings: RunSettings,
    /// The open sessions, in the order of `open` (inventory indexes).
    conns: Vec<Conn>,
    open: Vec<usize>,
    /// Every reader's events, for the whole command (`ev_tx` is cloned into each
    /// reader); the router reads them while a run goes, the launcher between.
    events: Receiver<Event>,
    ev_tx: Sender<Event>,
    /// Turns host frames into collector messages while the run goes; says which
    /// sessions ended during the run.
    router: Option<JoinHandle<Vec<bool>>>,
    /// Sessions that ended (lost hosts): the next run opens the fleet again.
    ended: Vec<bool>,
    /// Notices about the sessions themselves (a fleet opened again), for the next run.
    session_notices: Vec<String>,
    stopper: Option<JoinHandle<()>>,
    killers: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    /// Each host's start report (controller clock, ns) and the chosen start (ns).
    started: Arc<Mutex<Vec<Option<u64>>>>,
    epoch_ns: u64,
    /// How long one frame to every host took to be answered by all (see
    /// `refine_clocks`).
    broadcast: Duration,
    /// What each host said (host, notice) when it was ready, and at its end.
    ready_notices: Vec<(usize, String)>,
    late_notices: Arc<Mutex<Vec<(usize, String)>>>,
    router_done: Arc<AtomicBool>,
    /// The command's join port, when its hosts are agents that joined it.
    join: Option<JoinServer>,
    /// Joined agents without work in the run under way (inventory index → connection),
    /// kept open for the next; what they say goes to `parked_events`.
    parked: BTreeMap<usize, Conn>,
    parked_tx: Sender<Event>,
    parked_events: Receiver<Event>,
    /// Joined hosts lost in an earlier run of the command (inventory indexes).
    lost: BTreeSet<usize>,
    /// Per relay (inventory index), the jobs of the hosts below it in the run under
    /// way (`relays::RelayLauncher`), and the names it gave them when ready.
    below: BTreeMap<usize, Vec<protocol::BelowJob>>,
    below_names: BTreeMap<usize, Vec<String>>,
}

impl AgentLauncher {
    /// Agents that joined `port`, as the fleet's hosts (`hosts`, each `Reach::Joined`).
    /// The port stays open while the launcher lives, and closes with it.
    pub fn joined(hosts: Vec<HostSpec>, port: JoinServer) -> Self {
        let mut l = AgentLauncher::new(hosts);
        l.join = Some(port);
        l
    }

    pub fn new(hosts: Vec<HostSpec>) -> Self {
        let (ev_tx, events) = unbounded();
        let (parked_tx, parked_events) = unbounded();
        AgentLauncher {
            join: None,
            parked: BTreeMap::new(),
            parked_tx,
            parked_events,
            lost: BTreeSet::new(),
            below: BTreeMap::new(),
            below_names: BTreeMap::new(),
            hosts,
            settings: RunSettings::default(),
            conns: Vec::new(),
            open: Vec::new(),
            events,
            ev_tx,
            router: None,
            ended: Vec::new(),
            session_notices: Vec::new(),
            stopper: None,
            killers: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            started: Arc::new(Mutex::new(Vec::new())),
            epoch_ns: 0,
            broadcast: Duration::ZERO,
            ready_notices: Vec::new(),
            late_notices: Arc::new(Mutex::new(Vec::new())),
            router_done: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Consume `plan`: its settings become the run's, and its groups and each
    /// inventory host's share (in inventory order) are what the run or task sends.
    fn take(&mut self, plan: LaunchPlan<Hosts>) -> (Vec<GroupPlan>, Vec<HostShare>) {
        self.settings = plan.settings;
        let shares = plan.placement.0.into_iter().map(|(_, s)| s).collect();
        (plan.groups, shares)
    }

    /// The hosts of the inventory.
    pub fn hosts(&self) -> &[HostSpec] {
        &self.hosts
    }

    /// The jobs of the hosts below each relay (inventory index) for the next run: a
    /// relay gets its job with them, even with no work of its own.
    pub fn set_below(&mut self, below: BTreeMap<usize, Vec<protocol::BelowJob>>) {
        self.below = below;
    }

    /// The names relay `i` (inventory index) gave the hosts below it when it was ready,
    /// in the order of its jobs below.
    pub fn below_names(&self, i: usize) -> Option<&[String]> {
        self.below_names.get(&i).map(Vec::as_slice)
    }

    /// Stop every agent, wait (bounded) for them to exit, kill what is left. The copies
    /// stay for the next command.
    fn shutdown(&mut self) {
        let parked = std::mem::take(&mut self.parked);
        self.conns.extend(parked.into_values());
        for c in &self.conns {
            let _ = send_to(&c.stdin, &Frame::Stop);
            // Closing stdin ends the agent even if it missed the Stop frame.
            c.stdin.lock().unwrap_or_else(|p| p.into_inner()).take();
        }
        let deadline = Instant::now() + EXIT_GRACE;
        for i in 0..self.conns.len() {
            loop {
                if self.conns[i].exited() {
                    break;
                }
                if Instant::now() >= deadline {
                    self.killers.extend(kill_remote(&mut self.conns[i]));
                    self.conns[i].end_process();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        for k in self.killers.drain(..) {
            let _ = k.join();
        }
        self.conns.clear();
        self.open.clear();
        self.ended.clear();
        // What the closed sessions' readers still had to say is of no run.
        while self.events.try_recv().is_ok() {}
    }

    /// Sessions to the hosts `active` (inventory indexes, in order), every one ready
    /// for a job: the open ones when they are these hosts and all alive, else the fleet
    /// closed and opened again (said in a notice). None when `stop` was set meanwhile.
    fn ensure_open(
        &mut self,
        active: &[usize],
        stop: &AtomicBool,
    ) -> Result<Option<()>, FleetError> {
        if self.join.is_some() {
            return self.arrange_joined(active).map(Some);
        }
        // A session that ended between runs (its reader said so) is a lost host.
        while let Ok(ev) = self.events.try_recv() {
            if let Event::Closed(h, _) = ev {
                if let Some(e) = self.ended.get_mut(h) {
                    *e = true;
                }
            }
        }
        let alive = self.ended.iter().all(|e| !e);
        if !self.conns.is_empty() && self.open == active && alive {
            return Ok(Some(()));
        }
        if !self.conns.is_empty() {
            let why = if alive {
                "this run has work for other hosts"
            } else {
                "a host's session ended in the run before"
            };
            self.session_notices.push(format!(
                "the fleet's sessions were opened again: {why} ({} host(s) with work, {} before)",
                active.len(),
                self.open.len()
            ));
            self.shutdown();
        }
        if self.connect_all(active, stop)?.is_none() {
            return Ok(None);
        }
        for (h, c) in self.conns.iter_mut().enumerate() {
            c.spawn_reader(h, self.ev_tx.clone());
        }
        self.open = active.to_vec();
        self.ended = vec![false; active.len()];
        Ok(Some(()))
    }

    /// A joined fleet's connections for the hosts `active` (inventory indexes, in
    /// order). An agent that joined cannot be started again, so none is closed between
    /// runs: the hosts with work are attached to their place in this run, the others
    /// wait parked for a later one. A joined host lost in an earlier run is an error.
    fn arrange_joined(&mut self, active: &[usize]) -> Result<(), FleetError> {
        while let Ok(ev) = self.events.try_recv() {
            if let Event::Closed(h, _) = ev {
                if let Some(e) = self.ended.get_mut(h) {
                    *e = true;
                }
            }
        }
        while let Ok(ev) = self.parked_events.try_recv() {
            if let Event::Closed(i, _) = ev {
                self.lost.insert(i);
            }
        }
        let mut pool: BTreeMap<usize, Conn> = std::mem::take(&mut self.parked);
        for (h, c) in std::mem::take(&mut self.conns).into_iter().enumerate() {
            let i = self.open[h];
            if self.ended.get(h).copied().unwrap_or(false) {
                self.lost.insert(i);
            }
            pool.insert(i, c);
        }
        if let Some(&i) = active.iter().find(|i| self.lost.contains(i)) {
            self.parked = pool;
            return Err(host_err(
                &self.hosts[i],
                "was lost earlier in this command: an agent that joined is not started again (start it again, and the command)",
            ));
        }
        let port = self.join.as_ref().expect("a joined fleet");
        for &i in active {
            let c = match pool.remove(&i) {
                Some(c) => c,
                None => match &self.hosts[i].reach {
                    Reach::Joined { member, .. } => {
                        Conn::joined(&self.hosts[i].name, port.link(*member))
                    }
                    _ => return Err(host_err(&self.hosts[i], "did not join this command")),
                },
            };
            self.conns.push(c);
        }
        for (h, c) in self.conns.iter_mut().enumerate() {
            c.spawn_reader(h, self.ev_tx.clone());
        }
        for (&i, c) in pool.iter_mut() {
            c.spawn_reader(i, self.parked_tx.clone());
        }
        self.parked = pool;
        self.open = active.to_vec();
        self.ended = vec![false; active.len()];
        Ok(())
    }

    /// Send each open session its job (`jobs` in the order of `open`), with the limits
    /// its frames may have from now on.
    fn send_jobs(&mut self, jobs: Vec<(usize, AgentJob)>) -> Result<(), FleetError> {
        for (h, (i, job)) in jobs.into_iter().enumerate() {
            let c = &self.conns[h];
            *c.limits.lock().unwrap_or_else(|p| p.into_inner()) = FrameLimits::for_job(&job);
            if send_to(&c.stdin, &Frame::Job(Box::new(job))).is_err() {
                let e = host_err(
                    &self.hosts[i],
                    "its agent's connection closed before the job",
                );
                self.shutdown();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Open (or keep) the sessions of `jobs`' hosts and send every job: None when
    /// `stop` was set before the sessions were open.
    fn dispatch(
        &mut self,
        jobs: Vec<(usize, AgentJob)>,
        stop: &AtomicBool,
    ) -> Result<Option<()>, FleetError> {
        let active: Vec<usize> = jobs.iter().map(|(i, _)| *i).collect();
        if self.ensure_open(&active, stop)?.is_none() {
            return Ok(None);
        }
        self.send_jobs(jobs)?;
        Ok(Some(()))
    }

    /// Each host with work, and its agent job.
    fn host_jobs(&mut self, shares: &[HostShare], task: Task) -> Vec<(usize, AgentJob)> {
        // The jobs below relays go into their relays' jobs once (a fleet of 50,000
        // hosts' jobs are held once, not copied).
        let mut below_all = std::mem::take(&mut self.below);
        // Observers take part in a measured run only; one-shot tasks are the disks'.
        let observe = task == Task::Run;
        shares
            .iter()
            .enumerate()
            .filter_map(|(i, share)| {
                let below = below_all.remove(&i).unwrap_or_default();
                let task = match self.hosts[i].role {
                    Role::Observer if observe => Task::Observe,
                    Role::Observer => return None,
                    Role::Workers if share.count == 0 && below.is_empty() => return None,
                    Role::Workers => task,
                };
                let job = AgentJob {
                    groups: share.groups.clone(),
                    target: self.hosts[i].target.clone(),
                    settings: self.settings.clone(),
                    task,
                    observe: if task == Task::Observe {
                        self.hosts[i].observe.clone()
                    } else {
                        Vec::new()
                    },
                    scrape: if task == Task::Observe {
                        self.hosts[i].scrape.clone()
                    } else {
                        None
                    },
                    below,
                };
                Some((i, job))
            })
            .collect()
    }

    /// How session `h` ended, to follow "its agent's connection" (see [`closing`]).
    /// Waits a moment for the last of its stderr to arrive.
    fn closing_words(&self, h: usize, reason: Option<String>) -> String {
        closing(reason, || {
            std::thread::sleep(Duration::from_millis(50));
            self.conns[h].stderr_text()
        })
    }

    /// Run a one-shot `task` on every host with work and wait for each agent's one
    /// `Done` (agents heartbeat meanwhile; one silent for `--host-timeout` fails the
    /// task). A set `stop` is passed on to the agents, whose `Done` then says how far
    /// they got. Per host with work: its inventory name and `Done`; None when `stop` was
    /// set before every host was connected.
    fn run_task(
        &mut self,
        shares: &[HostShare],
        task: Task,
        stop: &AtomicBool,
    ) -> Result<Option<Vec<(String, Done)>>, FleetError> {
        let jobs = self.host_jobs(shares, task);
        let active: Vec<HostSpec> = jobs.iter().map(|(i, _)| self.hosts[*i].clone()).collect();
        if self.dispatch(jobs, stop)?.is_none() {
            return Ok(None);
        }
        let ev_rx = self.events.clone();
        let n = self.conns.len();
        let mut done: Vec<Option<Done>> = vec![None; n];
        let mut heard = vec![Instant::now(); n];
        let mut stop_sent = false;
        let timeout = self.settings.host_timeout;
        let mut failure = None;
        while failure.is_none() && done.iter().any(Option::is_none) {
            if stop.load(Ordering::SeqCst) && !stop_sent {
                self.conns.iter().for_each(|c| {
                    let _ = send_to(&c.stdin, &Frame::Stop);
                });
                stop_sent = true;
            }
            match ev_rx.recv_timeout(Duration::from_millis(100)) {
                Ok(Event::Frame(h, Frame::Done(d))) => done[h] = Some(d),
                Ok(Event::Frame(h, Frame::Error(f))) => {
                    failure = Some(agent_failure(&active[h], f));
                }
                Ok(Event::Frame(h, _) | Event::Pong(h, ..)) => heard[h] = Instant::now(),
                Ok(Event::Closed(h, reason)) if done[h].is_none() => {
                    self.ended[h] = true;
                    failure = Some(host_err(
                        &active[h],
                        format!(
                            "its agent's connection {} before it was done",
                            self.closing_words(h, reason)
                        ),
                    ));
                }
                Ok(Event::Closed(..)) => {}
                Err(_) => {
                    if let Some(h) =
                        (0..n).find(|&h| done[h].is_none() && heard[h].elapsed() >= timeout)
                    {
                        failure = Some(host_err(
                            &active[h],
                            format!(
                                "nothing heard from it for {} s (--host-timeout)",
                                timeout.as_secs_f64()
                            ),
                        ));
                    }
                }
            }
        }
        if failure.is_some() || stop_sent {
            self.shutdown();
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(Some(
                active
                    .into_iter()
                    .map(|h| h.name)
                    .zip(done.into_iter().flatten())
                    .collect(),
            )),
        }
    }

    /// Start a reader per host, then wait until every host has prepared and said
    /// ready: per host the engine it resolved, and the I/Os all keep outstanding.
    /// Agents heartbeat while they prepare, so a host that goes silent is noticed here
    /// too. None when `stop` was set meanwhile (every session is shut down).
    #[allow(clippy::type_complexity)]
    fn await_ready(
        &mut self,
        active_hosts: &[HostSpec],
        stop: &AtomicBool,
        notices: &mut Vec<String>,
    ) -> Result<Option<(Vec<String>, u64)>, FleetError> {
        let ev_rx = self.events.clone();
        let n = self.conns.len();
        let mut ready = vec![false; n];
        let mut engines = vec![String::new(); n];
        let mut configured = 0u64;
        let mut said: Vec<(usize, String)> = Vec::new();
        let mut heard = vec![Instant::now(); n];
        let timeout = self.settings.host_timeout;
        while !ready.iter().all(|&r| r) {
            let ev = match ev_rx.recv_timeout(Duration::from_millis(100)) {
                Ok(ev) => Some(ev),
                Err(_) if stop.load(Ordering::SeqCst) => {
                    self.shutdown();
                    return Ok(None);
                }
                Err(_) => None,
            };
            let failure = match ev {
                Some(Event::Frame(h, f)) => {
                    heard[h] = Instant::now();
                    match f {
                        Frame::Ready(r) => {
                            ready[h] = true;
                            if !r.below.is_empty() {
                                self.below_names.insert(self.open[h], r.below);
                            }
                            engines[h] = r.engine;
                            configured += r.configured_outstanding;
                            said.extend(r.notices.into_iter().map(|n| (h, n)));
                            None
                        }
                        Frame::Error(f) => Some(agent_failure(&active_hosts[h], f)),
                        Frame::Done(d) => Some(host_err(
                            &active_hosts[h],
                            format!("ended before the start: {}", d.notices.join("; ")),
                        )),
                        _ => None,
                    }
                }
                Some(Event::Pong(h, ..)) => {
                    heard[h] = Instant::now();
                    None
                }
                Some(Event::Closed(h, reason)) => {
                    Some(self.closed_while_preparing(&active_hosts[h], h, reason))
                }
                None => heard.iter().position(|t| t.elapsed() >= timeout).map(|h| {
                    host_err(
                        &active_hosts[h],
                        format!(
                            "lost while preparing: nothing heard from it for {} s (--host-timeout)",
                            timeout.as_secs_f64()
                        ),
                    )
                }),
            };
            if let Some(e) = failure {
                self.shutdown();
                return Err(e);
            }
        }
        let names: Vec<&str> = self.conns.iter().map(|c| c.name.as_str()).collect();
        notices.extend(fold_host_notices(&names, said.clone()));
        self.ready_notices = said;
        // Every host has written its fill and is ready: now every host, workers and
        // observers alike, empties its page cache, and the start waits for all of them.
        if self.settings.drop_caches.is_some() {
            match self.drop_caches_everywhere(&ev_rx, active_hosts, stop) {
                Ok(true) => {}
                Ok(false) => {
                    self.shutdown();
                    return Ok(None);
                }
                Err(e) => {
                    self.shutdown();
                    return Err(e);
                }
            }
        }
        if let Err(e) = self.refine_clocks(&ev_rx, active_hosts) {
            self.shutdown();
            return Err(e);
        }
        Ok(Some((engines, configured)))
    }

    /// `--drop-caches`: tell every host to empty its page cache and wait until each
    /// says it did; a host that fails (its `Error` names the flag and the host), closes
    /// or falls silent for --host-timeout is an error. False when `stop` was set.
    fn drop_caches_everywhere(
        &self,
        ev_rx: &Receiver<Event>,
        hosts: &[HostSpec],
        stop: &AtomicBool,
    ) -> Result<bool, FleetError> {
        let n = self.conns.len();
        for (h, (c, host)) in self.conns.iter().zip(hosts).enumerate() {
            send_to(&c.stdin, &Frame::DropCaches)
                .map_err(|_| self.closed_while_preparing(host, h, None))?;
        }
        let mut dropped = vec![false; n];
        let mut heard = vec![Instant::now(); n];
        let timeout = self.settings.host_timeout;
        while !dropped.iter().all(|&d| d) {
            let ev = match ev_rx.recv_timeout(Duration::from_millis(100)) {
                Ok(ev) => Some(ev),
                Err(_) if stop.load(Ordering::SeqCst) => return Ok(false),
                Err(_) => None,
            };
            match ev {
                Some(Event::Frame(h, f)) => {
                    heard[h] = Instant::now();
                    match f {
                        Frame::Dropped => dropped[h] = true,
                        Frame::Error(f) => return Err(agent_failure(&hosts[h], f)),
                        _ => {}
                    }
                }
                Some(Event::Pong(h, ..)) => heard[h] = Instant::now(),
                Some(Event::Closed(h, reason)) => {
                    return Err(self.closed_while_preparing(&hosts[h], h, reason))
                }
                None => {
                    if let Some(h) = heard.iter().position(|t| t.elapsed() >= timeout) {
                        return Err(host_err(
                            &hosts[h],
                            format!(
                                "lost while dropping its caches: nothing heard from it for {} s (--host-timeout)",
                                timeout.as_secs_f64()
                            ),
                        ));
                    }
                }
            }
        }
        Ok(true)
    }

    fn closed_while_preparing(
        &self,
        host: &HostSpec,
        h: usize,
        reason: Option<String>,
    ) -> FleetError {
        let words = match self.closing_words(h, reason) {
            w if w == "closed" => "closed without a message".into(),
            w => w,
        };
        host_err(
            host,
            format!("lost while preparing: its agent's connection {words}"),
        )
    }

    /// Measure every agent's clock offset again once the whole fleet is prepared and
    /// idle. The exchange at connect time ran while every host was starting at once,
    /// when round trips are long and lopsided, and an offset is only as good as half
    /// its round trip. `CLOCK_BATCH` hosts at a time, `CLOCK_SAMPLES` round trips each
    /// through the readers (a reply is timed as it is read), the batch's order turned at
    /// each round so that no host always waits behind the others; each host keeps its
    /// better fit. (One host at a time took 8 round trips per host in a row: 8,000 for
    /// 1,000 joined agents.) Then one ping to every host at once, as the start will
    /// go: the time until the last reply (`broadcast`) says how far ahead the start
    /// instant must be.
    fn refine_clocks(
        &mut self,
        ev_rx: &Receiver<Event>,
        hosts: &[HostSpec],
    ) -> Result<(), FleetError> {
        let n = self.conns.len();
        for first in (0..n).step_by(CLOCK_BATCH) {
            let batch = first..(first + CLOCK_BATCH).min(n);
            let size = batch.len();
            let mut fits: Vec<ClockFit> = (0..size).map(|_| ClockFit::default()).collect();
            for seq in 0..CLOCK_SAMPLES {
                let mut sent = vec![0u64; size];
                for k in 0..size {
                    let k = (k + seq as usize) % size;
                    sent[k] = mono_ns();
                    self.ping(hosts, first + k, seq, sent[k])?;
                }
                let mut heard = vec![false; size];
                for _ in 0..size {
                    let waiting = first + heard.iter().position(|&x| !x).unwrap_or(0);
                    let (g, c, t1) = self.pong(ev_rx, hosts, waiting, |g, c| {
                        c.seq == seq && batch.contains(&g) && !heard[g - first]
                    })?;
                    heard[g - first] = true;
                    fits[g - first].add(sent[g - first], c.t_ns, t1);
                }
            }
            for (k, fit) in fits.into_iter().enumerate() {
                let c = &mut self.conns[first + k];
                if let Some((rtt, offset)) = fit.best.filter(|&(rtt, _)| rtt < c.rtt_ns) {
                    c.rtt_ns = rtt;
                    c.offset_ns = offset;
                }
            }
        }
        let t0 = Instant::now();
        for h in 0..n {
            self.ping(hosts, h, CLOCK_SAMPLES, 0)?;
        }
        let mut heard = vec![false; n];
        for _ in 0..n {
            let waiting = heard.iter().position(|&x| !x).unwrap_or(0);
            let (g, ..) = self.pong(ev_rx, hosts, waiting, |g, c| {
                c.seq == CLOCK_SAMPLES && !heard[g]
            })?;
            heard[g] = true;
        }
        self.broadcast = t0.elapsed();
        Ok(())
    }

    fn ping(&self, hosts: &[HostSpec], h: usize, seq: u32, t_ns: u64) -> Result<(), FleetError> {
        send_to(&self.conns[h].stdin, &Frame::Ping(Clock { seq, t_ns }))
            .map_err(|_| self.closed_while_preparing(&hosts[h], h, None))
    }

    /// The next clock reply `wanted` accepts (host, reply, controller clock when read);
    /// a host that closes or fails meanwhile, or `waiting` silent for --host-timeout,
    /// is an error. Other frames (heartbeats) pass.
    fn pong(
        &self,
        ev_rx: &Receiver<Event>,
        hosts: &[HostSpec],
        waiting: usize,
        wanted: impl Fn(usize, &Clock) -> bool,
    ) -> Result<(usize, Clock, u64), FleetError> {
        let timeout = self.settings.host_timeout;
        loop {
            match ev_rx.recv_timeout(timeout) {
                Ok(Event::Pong(g, c, t1)) if wanted(g, &c) => return Ok((g, c, t1)),
                Ok(Event::Closed(g, reason)) => {
                    return Err(self.closed_while_preparing(&hosts[g], g, reason))
                }
                Ok(Event::Frame(g, Frame::Error(f))) => return Err(agent_failure(&hosts[g], f)),
                Ok(_) => {}
                Err(_) => {
                    return Err(host_err(
                        &hosts[waiting],
                        format!(
                        "lost while preparing: no answer to a clock ping for {} s (--host-timeout)",
                        timeout.as_secs_f64()
                    ),
                    ))
                }
            }
        }
    }

    /// Connect to the hosts `active` (inventory indexes) in parallel; None when `stop`
    /// was set meanwhile (every session that did open is shut down).
    fn connect_all(
        &mut self,
        active: &[usize],
        stop: &AtomicBool,
    ) -> Result<Option<()>, FleetError> {
        let exe = std::env::current_exe()
            .map_err(|e| FleetError::Setup(format!("cannot find the iofleet binary: {e}")))?;
        let ship = Arc::new(Shipment::new(exe, self.settings.max_uploads));
        let (tx, rx) = unbounded();
        let n = active.len();
        for (order, &i) in active.iter().enumerate() {
            let (host, ship, tx) = (self.hosts[i].clone(), ship.clone(), tx.clone());
            std::thread::spawn(move || {
                let _ = tx.send((order, connect(&host, &ship)));
            });
        }
        drop(tx);
        let mut slots: Vec<Option<Conn>> = (0..n).map(|_| None).collect();
        let mut first_err = None;
        // Every connect ends (transport timeouts bound it); a stop only changes what
        // is done with the sessions once they are open.
        for (order, r) in rx.iter() {
            match r {
                Ok(c) => slots[order] = Some(c),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        self.conns = slots.into_iter().flatten().collect();
        if let Some(e) = first_err {
            self.shutdown();
            return Err(e);
        }
        if stop.load(Ordering::SeqCst) {
            self.shutdown();
            return Ok(None);
        }
        Ok(Some(()))
    }
}

impl Launcher for AgentLauncher {
    type Where = Hosts;

    fn plan(
        &self,
        groups: &[GroupPlan],
        settings: &RunSettings,
    ) -> Result<LaunchPlan<Hosts>, FleetError> {
        plan::plan(&self.hosts, groups, settings)
    }

    fn materialize(
        &mut self,
        plan: LaunchPlan<Hosts>,
        stop: &Arc<AtomicBool>,
        _observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Prepared>, FleetError> {
        self.stop = stop.clone();
        let (groups, shares) = self.take(plan);
        let jobs = self.host_jobs(&shares, Task::Run);
        let active: Vec<usize> = jobs.iter().map(|(i, _)| *i).collect();
        if self.dispatch(jobs, stop)?.is_none() {
            return Ok(None);
        }
        notices.append(&mut self.session_notices);
        let active_hosts: Vec<HostSpec> = active.iter().map(|&i| self.hosts[i].clone()).collect();

        let Some((engines, configured)) = self.await_ready(&active_hosts, stop, notices)? else {
            return Ok(None);
        };
        let n = self.conns.len();
        let observers: Vec<bool> = active_hosts
            .iter()
            .map(|h| h.role == Role::Observer)
            .collect();
        // The engines of the hosts that run I/O (an observer runs none).
        let run: Vec<(&str, &String)> = self
            .conns
            .iter()
            .zip(&engines)
            .zip(&observers)
            .filter(|(_, &o)| !o)
            .map(|((c, e), _)| (c.name.as_str(), e))
            .collect();
        if run.iter().any(|(_, e)| *e != run[0].1) {
            let list: Vec<String> = run.iter().map(|(h, e)| format!("{h} {e}")).collect();
            notices.push(format!("hosts run different engines: {}", list.join(", ")));
        }
        let engine = run[0].1.clone();
        let mut worker_host = Vec::new();
        for (h, &i) in active.iter().enumerate() {
            worker_host.extend(std::iter::repeat_n(h, shares[i].count as usize));
        }
        let max_rtt = self.conns.iter().map(|c| c.rtt_ns).max().unwrap_or(0);
        // The first worker of the hosts with work (0 for a whole fleet; a relay's hosts
        // below it start further on).
        let worker_base = active
            .iter()
            .map(|&i| &shares[i])
            .filter(|s| s.count > 0)
            .map(|s| s.base)
            .min()
            .unwrap_or(0);
        Ok(Some(Prepared {
            groups,
            worker_base,
            hosts: self.conns.iter().map(|c| c.name.clone()).collect(),
            worker_host,
            observers,
            sources: (0..n)
                .map(|h| (format!("host {}", self.conns[h].name), h))
                .collect(),
            engine,
            target_label: "per host (see hosts)".into(),
            direct: self.settings.direct,
            configured_outstanding: configured,
            // Far enough ahead for the start to reach every host: four of the slowest
            // round trips, or ten times what a ping to every host took to be answered,
            // whichever is more. Sending to hundreds of hosts takes a while, and a
            // start wakes more on each host than a ping does (see docs/fleet.md).
            start_margin: Duration::from_millis(100)
                + Duration::from_nanos(max_rtt * 4).max(self.broadcast * 10),
            silence_grace: Some(self.settings.host_timeout),
            probe: None,
            simulated_time: self.settings.engine.caps().simulated_time,
            below: Default::default(),
        }))
    }

    fn verify(
        &mut self,
        plan: LaunchPlan<Hosts>,
        keep: usize,
    ) -> Result<Vec<HostVerified>, FleetError> {
        let (_, shares) = self.take(plan);
        let never = AtomicBool::new(false);
        let done = self.run_task(&shares, Task::Verify { keep }, &never)?;
        Ok(done
            .unwrap_or_default()
            .into_iter()
            .map(|(name, d)| {
                let mut found = d.verify.unwrap_or_default();
                for c in &mut found.first {
                    c.host = name.clone();
                }
                (name, d.disks_checked, found)
            })
            .collect())
    }

    fn precondition(
        &mut self,
        plan: LaunchPlan<Hosts>,
        stop: &Arc<AtomicBool>,
        _observer: &mut dyn Observer,
    ) -> Result<Option<Preconditioned>, FleetError> {
        let notices = plan.notices.clone();
        let (_, shares) = self.take(plan);
        let Some(done) = self.run_task(&shares, Task::Precondition, stop)? else {
            return Ok(None);
        };
        let mut all = Preconditioned::merge(done.into_iter().map(|(name, d)| {
            let mut p = d.preconditioned.map(|p| *p).unwrap_or_default();
            p.disks.iter_mut().for_each(|w| w.host = name.clone());
            p.notices = d.notices.iter().map(|n| format!("{name}: {n}")).collect();
            p
        }));
        all.notices.splice(0..0, notices);
        Ok(Some(all))
    }

    fn start(&mut self, epoch: Instant, tx: std::sync::mpsc::Sender<Msg>) -> Option<Duration> {
        let epoch_ns =
            mono_ns() + epoch.saturating_duration_since(Instant::now()).as_nanos() as u64;
        self.epoch_ns = epoch_ns;
        *self.started.lock().unwrap_or_else(|p| p.into_inner()) = vec![None; self.conns.len()];
        if !self.stop.load(Ordering::SeqCst) {
            for c in &self.conns {
                let agent_epoch = (epoch_ns as i64 + c.offset_ns).max(0) as u64;
                let _ = send_to(
                    &c.stdin,
                    &Frame::Start(Start {
                        epoch_ns: agent_epoch,
                    }),
                );
            }
        }
        // Route host events into the collector.
        let ev_rx = self.events.clone();
        let names: Vec<String> = self.conns.iter().map(|c| c.name.clone()).collect();
        let stderrs: Vec<Arc<Mutex<String>>> =
            self.conns.iter().map(|c| c.stderr.clone()).collect();
        let offsets: Vec<i64> = self.conns.iter().map(|c| c.offset_ns).collect();
        let (started, late, router_done) = (
            self.started.clone(),
            self.late_notices.clone(),
            self.router_done.clone(),
        );
        self.router_done.store(false, Ordering::SeqCst);
        self.router = Some(std::thread::spawn(move || {
            let ended = route(
                ev_rx, tx, &names, &stderrs, &offsets, epoch_ns, &started, &late,
            );
            router_done.store(true, Ordering::SeqCst);
            ended
        }));
        // Forward a stop (Ctrl-C) to every agent.
        let stop = self.stop.clone();
        let stdins: Vec<Stdin> = self.conns.iter().map(|c| c.stdin.clone()).collect();
        let router_done = self.router_done.clone();
        self.stopper = Some(std::thread::spawn(move || {
            while !router_done.load(Ordering::SeqCst) {
                if stop.load(Ordering::SeqCst) {
                    for s in &stdins {
                        let _ = send_to(s, &Frame::Stop);
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }));
        None
    }

    fn give_up(&mut self, source: usize) {
        if let Some(c) = self.conns.get_mut(source) {
            self.killers.extend(kill_remote(c));
        }
    }

    fn finish(&mut self) -> Finished {
        // Every source has sent its Done (or was given up on and killed, which ends its
        // session): the router ends by itself, and the sessions stay open for the next
        // run. A run torn down (`stop` set: Ctrl-C, a failed start) closes them first.
        let names: Vec<String> = self.conns.iter().map(|c| c.name.clone()).collect();
        if self.stop.load(Ordering::SeqCst) {
            self.shutdown();
        }
        if let Some(r) = self.router.take() {
            // Bounded all the same: past it, closing the sessions ends their readers.
            let deadline = Instant::now() + self.settings.host_timeout + EXIT_GRACE;
            while !r.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if !r.is_finished() {
                self.shutdown();
            }
            if let Ok(ended) = r.join() {
                if ended.len() == self.ended.len() {
                    self.ended = ended;
                }
            }
        }
        for k in self.killers.drain(..) {
            let _ = k.join();
        }
        self.router_done.store(true, Ordering::SeqCst);
        if let Some(s) = self.stopper.take() {
            let _ = s.join();
        }
        let starts = self
            .started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Finished {
            start_late_ms: starts
                .iter()
                .map(|s| s.map(|t| (t as f64 - self.epoch_ns as f64) / 1e6))
                .collect(),
            notices: {
                let late = std::mem::take(
                    &mut *self.late_notices.lock().unwrap_or_else(|p| p.into_inner()),
                );
                let new: Vec<(usize, String)> = late
                    .into_iter()
                    .filter(|said| !self.ready_notices.contains(said))
                    .collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                fold_host_notices(&names, new)
            },
            kubernetes: None,
            vms: None,
        }
    }

    fn close(&mut self) -> Vec<String> {
        self.shutdown();
        let mut notices = std::mem::take(&mut self.session_notices);
        // What the join port refused over the command, by reason.
        if let Some(port) = &self.join {
            notices.extend(port.refusals());
        }
        notices
    }
}

impl Drop for AgentLauncher {
    /// A command that ends before `close` (an error, Ctrl-C) still stops every agent.
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Turn host frames into collector messages until every reader has ended.
#[allow(clippy::too_many_arguments)]
fn route(
    ev_rx: Receiver<Event>,
    tx: std::sync::mpsc::Sender<Msg>,
    names: &[String],
    stderrs: &[Arc<Mutex<String>>],
    offsets: &[i64],
    epoch_ns: u64,
    started: &Mutex<Vec<Option<u64>>>,
    late_notices: &Mutex<Vec<(usize, String)>>,
) -> Vec<bool> {
    let mut finished = vec![false; names.len()];
    let mut ended = vec![false; names.len()];
    while !finished.iter().all(|&f| f) {
        let Ok(ev) = ev_rx.recv() else { break };
        let msg = match ev {
            Event::Frame(h, Frame::Interval(d)) => Msg::Interval {
                source: h as u32,
                index: d.index,
                samples: d.samples,
                errors: Vec::new(),
                disks: Vec::new(),
                stopped_at: d.stopped_at,
                usage: d.usage,
                generator: d.generator,
            },
            Event::Frame(h, Frame::Relayed(interval)) => Msg::Relayed {
                source: h as u32,
                interval,
            },
            Event::Frame(h, Frame::HostLost(l)) => Msg::HostLost {
                source: h as u32,
                host: l.host,
                at_ns: l.at_ns,
                reason: l.reason,
            },
            Event::Frame(h, Frame::RelayTotals(totals)) => Msg::RelayTotals {
                source: h as u32,
                totals,
            },
            Event::Frame(h, Frame::Started(c)) => {
                let ctrl = (c.t_ns as i64 - offsets[h]).max(0) as u64;
                started.lock().unwrap_or_else(|p| p.into_inner())[h] = Some(ctrl);
                Msg::Heartbeat { source: h as u32 }
            }
            Event::Frame(h, Frame::Done(d)) => {
                finished[h] = true;
                if let Some(mut v) = d.verify {
                    // Corruptions name the host as the inventory does.
                    for c in &mut v.first {
                        c.host = names[h].clone();
                    }
                    let _ = tx.send(Msg::Verify {
                        source: h as u32,
                        summary: Box::new(v),
                    });
                }
                if !d.unmeasured.is_empty() {
                    let _ = tx.send(Msg::Unmeasured {
                        source: h as u32,
                        disks: d.unmeasured,
                    });
                }
                // What the host said by its end (`finish` drops what it said when
                // ready, and folds the rest over hosts).
                late_notices
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(d.notices.into_iter().map(|n| (h, n)));
                Msg::Done {
                    source: h as u32,
                    end_ns: d.end_ns,
                    error: (!d.failures.is_empty()).then(|| d.failures.join("; ")),
                    errors: d.errors,
                    disks: d.disks,
                    lost: false,
                }
            }
            Event::Frame(h, Frame::Error(f)) => {
                finished[h] = true;
                Msg::Done {
                    source: h as u32,
                    end_ns: mono_ns().saturating_sub(epoch_ns),
                    error: Some(f.message),
                    errors: Vec::new(),
                    disks: Vec::new(),
                    lost: false,
                }
            }
            Event::Frame(h, _) | Event::Pong(h, ..) => Msg::Heartbeat { source: h as u32 },
            Event::Closed(h, reason) if !finished[h] => {
                finished[h] = true;
                ended[h] = true;
                let how = closing(reason, || {
                    std::thread::sleep(Duration::from_millis(50)); // let stderr arrive
                    let why = stderrs[h].lock().unwrap_or_else(|p| p.into_inner());
                    why.trim().to_string()
                });
                Msg::Done {
                    source: h as u32,
                    end_ns: mono_ns().saturating_sub(epoch_ns),
                    error: Some(format!(
                        "host {} lost: its agent's connection {how}",
                        names[h]
                    )),
                    errors: Vec::new(),
                    disks: Vec::new(),
                    lost: true,
                }
            }
            Event::Closed(h, _) => {
                ended[h] = true;
                continue;
            }
        };
        let _ = tx.send(msg);
    }
    ended
}

#[cfg(test)]
mod tests {
    use std::io::{BufReader, Write};

    use sha2::{Digest, Sha256};

    use super::agent::RUN_DIR_ENV;
    use super::protocol::{check_hello, read_frame, read_magic, write_frame, Hello};
    use super::scripts::{kill_script, launch_script, start_script, Launch};
    use super::session::{exchange_clock, sha256_hex, UploadSlots};
    use super::transport::shell_quote;
    use super::*;
    use std::process::Command;

    #[test]
    fn notices_said_by_several_hosts_are_said_once() {
        let names = ["a", "b", "c", "d", "e", "f", "g"];
        let io = "io_uring is not usable here; using psync".to_string();
        let own = |h: usize| (h, format!("disk of {}", names[h]));
        // Every host: one line. Each host's own: its own line, in the order said.
        let all: Vec<(usize, String)> = (0..7).map(|h| (h, io.clone())).chain([own(2)]).collect();
        assert_eq!(
            fold_host_notices(&names, all),
            [format!("every host (7): {io}"), "c: disk of c".into()]
        );
        // Some hosts: named, the first five, then how many more.
        let some: Vec<(usize, String)> = (0..6).map(|h| (h, io.clone())).collect();
        assert_eq!(
            fold_host_notices(&names, some),
            [format!("6 hosts (a, b, c, d, e and 1 more): {io}")]
        );
        let two = vec![(3, io.clone()), (1, io.clone()), (3, io.clone())];
        assert_eq!(
            fold_host_notices(&names, two),
            [format!("2 hosts (d, b): {io}")]
        );
    }

    #[test]
    fn uploads_take_turns_at_most_max_at_a_time() {
        use std::sync::atomic::AtomicUsize;
        let slots = UploadSlots::new(2);
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    let _turn = slots.take();
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "two at a time, and both used"
        );
        assert_eq!(*slots.free.lock().unwrap(), 2, "every turn given back");
    }

    /// The start script as a host runs it (`sh`, a scratch HOME): what it printed on
    /// stdout and stderr, and its exit code, given `send` on stdin once it asks.
    fn start_on_host(home: &std::path::Path, image: &[u8], send: &[u8]) -> (String, String, i32) {
        let digest = sha256_hex(image);
        let (script, _) = start_script(&digest, image.len());
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .env("HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                // The whole input at once: a script that needs no copy reads none of it.
                let mut stdin = c.stdin.take().unwrap();
                let _ = stdin.write_all(send);
                drop(stdin);
                c.wait_with_output()
            })
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.code().unwrap_or(-1),
        )
    }

    /// What a host's cache holds, sorted, but the runs' records (`runs`).
    fn cache_of(home: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(home.join(".cache/iofleet"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name != "runs")
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    #[test]
    fn the_start_script_runs_a_verified_copy_asks_for_one_otherwise_and_never_runs_a_bad_one() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        // A stand-in for iofleet: greets and says how it was started.
        let image = b"#!/bin/sh\nprintf IOFLEET1; echo \" ran $1\"\n".to_vec();
        // No copy: the script asks, receives exactly the copy's bytes, verifies, runs it.
        let (out, err, code) = start_on_host(home.path(), &image, &image);
        assert_eq!(
            (out.as_str(), code),
            ("IOFLEET?IOFLEET1 ran agent\n", 0),
            "{err}"
        );
        let cache = cache_of(home.path());
        assert_eq!(cache.len(), 1, "{cache:?}");
        let copy = home.path().join(".cache/iofleet").join(&cache[0]);
        assert_eq!(std::fs::read(&copy).unwrap(), image);
        assert_eq!(
            std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
            0o755
        );
        // The copy is there: run at once, nothing asked for or read.
        let (out, _, code) = start_on_host(home.path(), &image, b"");
        assert_eq!((out.as_str(), code), ("IOFLEET1 ran agent\n", 0));
        // A changed byte: asked for again and replaced.
        std::fs::write(&copy, b"#!/bin/sh\nprintf IOFLEET1; echo \" BAD $1\"\n").unwrap();
        let (out, _, code) = start_on_host(home.path(), &image, &image);
        assert_eq!((out.as_str(), code), ("IOFLEET?IOFLEET1 ran agent\n", 0));
        // Bytes that are not the copy, or too few of them: refused, removed, never run.
        std::fs::remove_file(&copy).unwrap();
        let mut wrong = image.clone();
        wrong[12] ^= 1;
        for (send, says) in [
            (
                &wrong[..],
                format!("({} of {} bytes, SHA-256 ", image.len(), image.len()),
            ),
            (
                &image[..9],
                format!("(9 of {} bytes, SHA-256 ", image.len()),
            ),
        ] {
            let (out, err, code) = start_on_host(home.path(), &image, send);
            assert_eq!((out.as_str(), code), ("IOFLEET?", 1), "{err}");
            assert!(err.contains("the copy received does not verify"), "{err}");
            assert!(err.contains(&says), "{says}: {err}");
            assert_eq!(cache_of(home.path()), Vec::<String>::new());
        }
    }

    #[test]
    fn the_shipment_is_read_and_hashed_once_for_every_host() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("iofleet");
        std::fs::write(&exe, b"not really an executable").unwrap();
        let ship = Shipment::new(exe.clone(), 4);
        let (bytes, digest) = ship.image().unwrap();
        let expect: String = Sha256::digest(b"not really an executable")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            (bytes, digest),
            (&b"not really an executable"[..], &expect[..])
        );
        // Later hosts get the buffer read first, even if the file changed since.
        std::fs::write(&exe, b"changed").unwrap();
        let (again, _) = ship.image().unwrap();
        assert!(std::ptr::eq(bytes, again), "one buffer for every host");
        // A binary that cannot be read is an error naming it, for every host.
        let gone = Shipment::new(dir.path().join("missing"), 4);
        let e = gone.image().unwrap_err().to_string();
        assert!(e.starts_with("cannot read") && e.contains("missing"), "{e}");
        assert_eq!(gone.image().unwrap_err().to_string(), e);
    }

    #[test]
    fn the_clock_offset_is_the_agent_reading_against_the_round_trip_midpoint() {
        let mut fit = ClockFit::default();
        // Sent at 1,000 and back at 3,000: the agent read its clock at the midpoint,
        // 2,000 on ours, as far as the controller can tell; it read 5,002,000.
        fit.add(1_000, 5_002_000, 3_000);
        assert_eq!(fit.best, Some((2_000, 5_000_000)));
        // A slower round trip does not replace it, whatever it says.
        fit.add(10_000, 9_000_000, 20_000);
        assert_eq!(fit.best, Some((2_000, 5_000_000)));
        // A quicker one does, and an agent behind the controller has a negative offset.
        fit.add(50_000, 40_100, 50_200);
        assert_eq!(fit.best, Some((200, -10_000)));
        // Clocks near the top of u64 do not overflow the midpoint.
        let mut big = ClockFit::default();
        big.add(u64::MAX - 100, u64::MAX - 50, u64::MAX);
        assert_eq!(big.best, Some((100, 0)));
    }

    /// A controller whose clock runs `SHIFT` behind, against a real agent's control
    /// loop over an in-memory pipe.
    #[test]
    fn the_clock_exchange_with_an_agent_finds_its_offset_within_half_a_round_trip() {
        const SHIFT: u64 = 7_000_000_000;
        let (to_agent_r, to_agent_w) = std::io::pipe().unwrap();
        let (from_agent_r, from_agent_w) = std::io::pipe().unwrap();
        let agent =
            std::thread::spawn(move || agent::serve(Box::new(to_agent_r), Box::new(from_agent_w)));
        let to_agent = Mutex::new(to_agent_w);
        let send = |f: &Frame| write_frame(&mut *to_agent.lock().unwrap(), f);
        let mut from_agent = BufReader::new(from_agent_r);
        read_magic(&mut from_agent).unwrap();
        match read_frame(&mut from_agent, &FrameLimits::greeting()) {
            Ok(Some(Frame::Hello(h))) => check_hello(&Hello::ours(), &h, "agent").unwrap(),
            other => panic!("expected the agent's hello, got {other:?}"),
        }
        send(&Frame::Hello(Hello::ours())).unwrap();
        let controller_now = || mono_ns() - SHIFT;
        let (rtt, offset) = exchange_clock(&mut from_agent, send, controller_now).unwrap();
        assert!(rtt > 0);
        let error = (offset - SHIFT as i64).unsigned_abs();
        assert!(
            error <= rtt / 2 + 1,
            "offset {offset} ns is {error} ns from the true {SHIFT} (round trip {rtt} ns)"
        );
        // A controller that stops before sending work: the agent ends cleanly.
        send(&Frame::Stop).unwrap();
        assert_eq!(agent.join().unwrap(), 0);
    }

    #[test]
    fn an_agent_that_answers_out_of_turn_fails_the_clock_exchange() {
        let (to_agent_r, to_agent_w) = std::io::pipe().unwrap();
        let (mut from_agent_r, mut from_agent_w) = std::io::pipe().unwrap();
        // The "agent" answers the first ping with the wrong sequence number.
        let fake = std::thread::spawn(move || {
            let mut input = BufReader::new(to_agent_r);
            if let Ok(Some(Frame::Ping(c))) = read_frame(&mut input, &FrameLimits::greeting()) {
                let pong = Frame::Pong(Clock {
                    seq: c.seq + 1,
                    t_ns: 0,
                });
                write_frame(&mut from_agent_w, &pong).unwrap();
            }
        });
        let to_agent = Mutex::new(to_agent_w);
        let send = |f: &Frame| write_frame(&mut *to_agent.lock().unwrap(), f);
        let err = exchange_clock(&mut from_agent_r, send, mono_ns).unwrap_err();
        assert!(err.starts_with("clock exchange failed"), "{err}");
        fake.join().unwrap();
    }

    /// A process started as `sh` runs it on a host, `HOME` and working directory given.
    fn host_sh(home: &std::path::Path, cwd: &std::path::Path, script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script])
            .env("HOME", home)
            .env_remove(RUN_DIR_ENV)
            .current_dir(cwd);
        c
    }

    /// `hosts clean` leaves an upload whose writer still runs (another run's, on a shared
    /// host) and removes one whose writer is gone. It removed both before: an observer run
    /// beside a fleet's upload then failed at `chmod` of its vanished copy.
    #[test]
    fn clean_keeps_an_upload_in_progress_and_removes_an_abandoned_one() {
        let home = tempfile::tempdir().unwrap();
        let d = home.path().join(".cache/iofleet");
        std::fs::create_dir_all(&d).unwrap();
        let mut writer = Command::new("sleep").arg("60").spawn().unwrap();
        let live = d.join(format!(".upload.{}", writer.id()));
        let gone = d.join(".upload.4000000");
        std::fs::write(&live, "part").unwrap();
        std::fs::write(&gone, "part").unwrap();
        let o = host_sh(home.path(), home.path(), &clean_script())
            .output()
            .unwrap();
        let _ = writer.kill();
        let _ = writer.wait();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(&format!("in use {}", live.display())), "{out}");
        assert!(
            out.contains(&format!("removed {}", gone.display())),
            "{out}"
        );
        assert!(live.exists() && !gone.exists(), "{out}");
    }

    /// Wait (generously) until `cond` holds.
    fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !cond() {
            assert!(t0.elapsed() < Duration::from_secs(20), "waited for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether process `pid` exists (and is not a zombie).
    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s.rsplit_once(')').is_some_and(|(_, r)| r.starts_with(" Z")))
    }

    /// The host's side of ending a frozen agent, with a copy of `sh` for the agent
    /// binary (it runs the `agent` file of its working directory: it waits on its stdin).
    /// Whatever process id the run's record names — one that does not exist, 4294967295
    /// (which `kill` takes as -1, every process), 1, a `sleep`, the same binary without
    /// this run's mark, not a number — nothing is signalled; the agent the script
    /// launched is, and then only it, even once its binary was replaced by another copy.
    /// Stale records of other runs are removed at the next start, live and young ones
    /// kept.
    #[test]
    fn the_kill_script_ends_only_the_agent_its_start_script_recorded() {
        use std::os::unix::process::ExitStatusExt;
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(cwd.path().join("agent"), "read x\n").unwrap();
        let runs = home.path().join(".cache/iofleet/runs");
        std::fs::create_dir_all(&runs).unwrap();
        let bin = cwd.path().join("iofleet-copy");
        let sh = std::fs::canonicalize("/bin/sh").unwrap();
        std::fs::copy(&sh, &bin).unwrap();
        let bin_s = bin.to_string_lossy().into_owned();
        let spawn = |c: &mut Command| c.stdin(Stdio::piped()).spawn().unwrap();
        // Bystanders: a sleep, and the same binary carrying another run's mark.
        let sleep = spawn(Command::new("sleep").arg("60"));
        let other_run = runs.join("other");
        let other = spawn(
            host_sh(
                home.path(),
                cwd.path(),
                &format!("exec {} agent", shell_quote(&bin_s)),
            )
            .env(RUN_DIR_ENV, &other_run),
        );
        // Records of earlier runs: the other run's (old, its agent alive), one old and
        // gone, one young and gone.
        let ten_min_ago = std::time::SystemTime::now() - Duration::from_secs(11 * 60);
        for (name, pid, old) in [
            ("other", other.id(), true),
            ("gone", 4_000_000, true),
            ("young", 4_000_000, false),
        ] {
            let d = runs.join(name);
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("pid"), format!("{pid}\n")).unwrap();
            if old {
                std::fs::File::open(&d)
                    .unwrap()
                    .set_modified(ten_min_ago)
                    .unwrap();
            }
        }
        let launch = Launch::new(shell_quote(&bin_s));
        let mut agent = spawn(&mut host_sh(
            home.path(),
            cwd.path(),
            &launch_script(&launch),
        ));
        let dir = runs.join(&launch.nonce);
        let mark = format!("{RUN_DIR_ENV}={}", dir.display());
        let environ = |pid: u32| std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let marked = |pid: u32| {
            environ(pid)
                .split(|&b| b == 0)
                .any(|v| v == mark.as_bytes())
        };
        wait_for("the agent to carry its mark", || marked(agent.id()));
        assert_eq!(
            std::fs::read_to_string(dir.join("pid")).unwrap().trim(),
            agent.id().to_string(),
            "the recorded process is the one the transport runs"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "the run's directory is private");
        let mut left = cache_names(&runs);
        left.sort();
        let mut want = vec![launch.nonce.clone(), "other".into(), "young".into()];
        want.sort();
        assert_eq!(left, want, "the old record of a gone agent was removed");
        let kill = |record: &str| -> String {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("pid"), record).unwrap();
            let out = host_sh(home.path(), cwd.path(), &kill_script(&launch))
                .output()
                .unwrap();
            assert!(!dir.exists(), "the record is removed once used");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        let says = |pid: &str, why: &str| format!("process {pid} {why}");
        let not_it = format!("does not run {bin_s}");
        for (record, said) in [
            ("4294967295\n".to_string(), says("4294967295", &not_it)),
            ("1\n".into(), says("1", &not_it)),
            (
                format!("{}\n", sleep.id()),
                says(&sleep.id().to_string(), &not_it),
            ),
            (
                format!("{}\n", other.id()),
                says(&other.id().to_string(), "does not carry this run's mark"),
            ),
            (
                "-1\n".into(),
                format!("no process recorded in {}", dir.display()),
            ),
            (
                "".into(),
                format!("no process recorded in {}", dir.display()),
            ),
            (
                format!("{} 1\n", agent.id()),
                format!("no process recorded in {}", dir.display()),
            ),
        ] {
            assert_eq!(kill(&record), said, "record {record:?}");
            assert!(alive(agent.id()) && alive(sleep.id()) && alive(other.id()));
        }
        // Another copy put in its place (a host sharing its home with another that
        // uploaded the same copy): the agent's binary reads as deleted, and is still it.
        std::fs::copy(&sh, cwd.path().join("new")).unwrap();
        std::fs::rename(cwd.path().join("new"), &bin).unwrap();
        let exe = std::fs::read_link(format!("/proc/{}/exe", agent.id())).unwrap();
        assert_eq!(exe.to_string_lossy(), format!("{bin_s} (deleted)"));
        assert_eq!(
            kill(&format!("{}\n", agent.id())),
            format!("ended {}", agent.id())
        );
        assert_eq!(agent.wait().unwrap().signal(), Some(9));
        assert!(
            alive(sleep.id()) && alive(other.id()),
            "only the agent was signalled"
        );
        for mut c in [sleep, other] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// The entries of a directory.
    fn cache_names(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// A start whose record cannot be made (here a nonce seen twice; a home that cannot
    /// be written is the same case) still starts the agent, unrecorded and unmarked, and
    /// says so: such a host ran before the record existed, and must still run.
    #[test]
    fn a_start_that_cannot_record_its_agent_starts_it_unrecorded() {
        let home = tempfile::tempdir().unwrap();
        let launch = Launch::new(shell_quote("/bin/sh"));
        let dir = home.path().join(".cache/iofleet/runs").join(&launch.nonce);
        std::fs::create_dir_all(&dir).unwrap();
        // `sh agent` runs the file `agent` in the working directory: it prints the mark.
        std::fs::write(
            home.path().join("agent"),
            format!("echo \"mark=${{{RUN_DIR_ENV}:-none}}\"\n"),
        )
        .unwrap();
        let out = host_sh(home.path(), home.path(), &launch_script(&launch))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "mark=none\n");
        assert!(!dir.join("pid").exists(), "nothing recorded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "cannot record the agent's process in {}",
                dir.display()
            )),
            "{err}"
        );
    }

    /// An agent that announces a 4 GiB interval frame: its reader refuses it from the
    /// header, names the limit, and ends the connection (the agent sees its stdin close
    /// and exits).
    #[test]
    fn a_frame_over_its_limit_ends_the_hosts_connection_naming_the_limit() {
        let mut child = Command::new("sh")
            .args([
                "-c",
                r"printf '\377\377\377\377\010'; cat > /dev/null; echo gone >&2",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin: Stdin = Arc::new(Mutex::new(
            child
                .stdin
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Write + Send>),
        ));
        let (tx, rx) = unbounded();
        let limits = FrameLimits::for_job(&AgentJob {
            groups: vec![GroupPlan {
                name: "g".into(),
                plan: crate::fixtures::plan(
                    crate::fixtures::fleet(2, 1, 1, 1),
                    vec![crate::fixtures::stream("s", 50.0)],
                ),
                worker_base: 0,
            }],
            target: protocol::TargetArg::Dir("/tmp".into()),
            settings: RunSettings::default(),
            task: Task::Run,
            below: Vec::new(),
            observe: Vec::new(),
            scrape: None,
        });
        let stdout = BufReader::new(child.stdout.take().unwrap());
        session::spawn_reader(3, stdout, Arc::new(Mutex::new(limits)), stdin.clone(), tx);
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Event::Closed(3, Some(why))) => assert_eq!(
                why,
                format!(
                    "an interval frame of 4294967294 bytes is over the limit of {} bytes for interval frames",
                    limits.interval
                )
            ),
            _ => panic!("expected the session's end, with why"),
        }
        assert!(
            stdin.lock().unwrap().is_none(),
            "the agent's stdin is closed"
        );
        let out = child.wait_with_output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stderr), "gone\n");
    }
}
