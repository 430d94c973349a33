//! `iofleet agent`: the same binary, run on a host by the controller over a transport,
//! speaking the protocol on stdin/stdout. It runs its share of the fleet through the
//! very same `controller::run` and `ThreadLauncher` as a local run: it prepares, reports
//! ready, starts at the instant the controller names (on its own clock), and streams
//! every interval's per-disk samples back, with a heartbeat whenever it has sent nothing
//! for a quarter of the host timeout, so a frozen host is noticed. One session takes
//! several jobs in turn (a sweep's steps, a steady state's rounds, a job file's phases:
//! the controller opens the fleet once per command), each answered with its `Done`,
//! until a Stop or the end of its input. It never listens on a port, and it stops by itself when its stdin closes
//! (the controller or the session went away), so no orphan keeps running. A job may
//! instead carry a one-shot task (`protocol::Task`): verify the host's disks against
//! their journals, or precondition them; the agent answers with one `Done`, heartbeating
//! meanwhile. It reads the controller's frames within the greeting's limits
//! (`FrameLimits::greeting`), and when it ends it removes the record the controller's
//! start script made of its process (`RUN_DIR_ENV`).

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError};
use iofleet_engine::target::TargetSpec;
use iofleet_stats::result::{DiskUnmeasured, RunInfo};

use std::collections::BTreeMap;

use iofleet_profile::GroupPlan;

use crate::agents::join::JoinServer;
use crate::agents::protocol::{
    check_hello, mono_ns, read_frame, write_frame, AgentJob, BelowJob, Clock, Done, Failure, Frame,
    FrameLimits, Hello, IntervalData, Ready, TargetArg, Task, MAGIC,
};
use crate::agents::AgentLauncher;
use crate::controller::{run, StartGate};
use crate::error::FleetError;
use crate::host::HostSpec;
use crate::launcher::{Launcher, Prepared};
use crate::local::ThreadLauncher;
use crate::observer::{IntervalSnapshot, Observer, Silent};
use crate::plan::{HostShare, Hosts, LaunchPlan};
use crate::relay::{Forwarder, SubtreeTotals, Upward};
use crate::settings::DropCaches;
use crate::settings::RunSettings;
use crate::storage::StorageProbe;

/// The environment variable the controller's start script sets for the agent: the run's
/// private directory on the host, where it recorded the agent's process id. The
/// controller ends a frozen agent only if that process carries it (`agents::kill_script`).
pub const RUN_DIR_ENV: &str = "IOFLEET_RUN_DIR";

/// The record of this agent's process (`RUN_DIR_ENV`), removed when the agent ends:
/// the pid file, if it names this process, and the directory once empty.
struct RunRecord(Option<PathBuf>);

impl RunRecord {
    fn from_env() -> Self {
        RunRecord(std::env::var_os(RUN_DIR_ENV).map(PathBuf::from))
    }
}

impl Drop for RunRecord {
    fn drop(&mut self) {
        let Some(dir) = &self.0 else { return };
        let pid = dir.join("pid");
        let ours =
            std::fs::read_to_string(&pid).is_ok_and(|p| p.trim() == std::process::id().to_string());
        if ours {
            let _ = std::fs::remove_file(&pid);
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The agent's output to its controller, shared by the threads that send frames, with
/// when a frame was last sent (so the heartbeat goes only into silence).
struct Output {
    w: Mutex<Box<dyn Write + Send>>,
    /// `mono_ns` of the last frame sent.
    last_ns: AtomicU64,
}

type Out = Arc<Output>;

fn output(w: Box<dyn Write + Send>) -> Out {
    Arc::new(Output {
        w: Mutex::new(Box::new(BufWriter::new(w))),
        last_ns: AtomicU64::new(mono_ns()),
    })
}

fn send(out: &Out, f: &Frame) -> io::Result<()> {
    let mut w = out.w.lock().unwrap_or_else(|p| p.into_inner());
    write_frame(&mut **w, f)?;
    out.last_ns.store(mono_ns(), Ordering::Relaxed);
    Ok(())
}

/// What the stdin reader hands over.
enum Control {
    Job(Box<AgentJob>),
    /// Every host is ready: empty the page cache (`--drop-caches`) before the start.
    DropCaches,
    Start(u64),
    /// Stop frame or end of input: the session ends.
    Stop,
}

struct Gate {
    out: Out,
    control: Receiver<Control>,
    /// The start instant on this host's clock, for the streamer's `Started` report.
    epoch_ns: Arc<AtomicU64>,
    /// `--drop-caches`: how to empty the page cache when the controller says every host
    /// is ready (after every host's fill, before the start; workers and observers alike).
    drop_caches: Option<DropCaches>,
    /// A relay's: the names of the hosts below it (`Ready::below`).
    below_names: Vec<String>,
}

impl StartGate for Gate {
    fn ready(&mut self, prepared: &Prepared, notices: &[String]) -> Result<Instant, FleetError> {
        self.ready_as(Ready {
            notices: notices.to_vec(),
            engine: prepared.engine.clone(),
            configured_outstanding: prepared.configured_outstanding,
            below: self.below_names.clone(),
        })
    }
}

impl Gate {
    /// Report `ready` and wait for the controller's start instant (on this host's clock).
    /// With `--drop-caches`, the controller first says when every host is ready: the
    /// page cache is emptied then, once no host of the run writes its fill any more.
    fn ready_as(&mut self, ready: Ready) -> Result<Instant, FleetError> {
        let unreachable =
            |e: std::io::Error| FleetError::Setup(format!("cannot reach the controller: {e}"));
        send(&self.out, &Frame::Ready(ready)).map_err(unreachable)?;
        loop {
            match self.control.recv() {
                Ok(Control::DropCaches) => {
                    if let Some(how) = &self.drop_caches {
                        crate::sys::drop_caches(how)?;
                    }
                    send(&self.out, &Frame::Dropped).map_err(unreachable)?;
                }
                Ok(Control::Start(epoch_ns)) => {
                    self.epoch_ns.store(epoch_ns, Ordering::SeqCst);
                    let now = mono_ns();
                    let ahead = Duration::from_nanos(epoch_ns.saturating_sub(now));
                    return Ok(Instant::now() + ahead);
                }
                _ => {
                    return Err(FleetError::Setup(
                        "the controller stopped the run before it started".into(),
                    ))
                }
            }
        }
    }
}

struct Streamer {
    out: Out,
    worker_base: u32,
    nominal_ns: u64,
    epoch_ns: Arc<AtomicU64>,
    /// When this host's last I/O thread began, on its clock, until it is sent.
    started_ns: Option<u64>,
}

impl Streamer {
    /// Report the start instant: with the first interval, or at the end of a run that
    /// had none. Not at once: at the start instant every host of a fleet wakes its I/O
    /// threads, and on hosts that share CPUs (agents of one machine) a frame sent then
    /// through the session would hold up other hosts' threads.
    fn send_started(&mut self) {
        if let Some(t) = self.started_ns.take() {
            let _ = send(&self.out, &Frame::Started(Clock { seq: 0, t_ns: t }));
        }
    }
}

impl Observer for Streamer {
    fn started(&mut self, info: &RunInfo) {
        // Called once every I/O thread has begun; `start_skew_ms` is how late the last
        // one began after the epoch. Report that instant on this host's clock.
        self.started_ns = Some(
            self.epoch_ns.load(Ordering::SeqCst) + (info.start_skew_ms.unwrap_or(0.0) * 1e6) as u64,
        );
    }

    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        self.send_started();
        let row = snap.row;
        let start_ns = (row.t_s * 1e9).round() as u64;
        let dur_ns = (row.duration_s * 1e9).round() as u64;
        let data = IntervalData {
            index: row.index,
            // A stop-shortened interval carries its end; a phase's short last piece has
            // the same end as its boundary, which the controller ignores.
            stopped_at: (dur_ns < self.nominal_ns).then_some(start_ns + dur_ns),
            samples: snap
                .disks
                .iter()
                .enumerate()
                .flat_map(|(i, disks)| {
                    let w = self.worker_base + i as u32;
                    disks
                        .iter()
                        .enumerate()
                        .map(move |(d, s)| (w, d as u32, s.clone()))
                })
                .collect(),
            usage: snap.usage.first().cloned().flatten(),
            generator: snap.generator.cloned().map(Box::new),
        };
        let _ = send(&self.out, &Frame::Interval(data));
    }
}

fn target(job: &AgentJob) -> (TargetSpec, String) {
    match &job.target {
        TargetArg::Dir(d) => (TargetSpec::Dir(PathBuf::from(d)), d.clone()),
        TargetArg::Dirs(v) => (
            TargetSpec::Dirs(v.iter().map(PathBuf::from).collect()),
            v.join(","),
        ),
        TargetArg::Devices(v) => (
            TargetSpec::Devices(v.iter().map(PathBuf::from).collect()),
            v.join(","),
        ),
    }
}

/// Until `quit` disconnects (its sender is dropped), send a heartbeat whenever nothing
/// was sent for `period`: a host streaming its intervals sends none.
fn heartbeat(out: Out, period: Duration, quit: Receiver<()>) {
    std::thread::spawn(move || {
        let period_ns = period.as_nanos() as u64;
        let mut wait = period;
        while let Err(RecvTimeoutError::Timeout) = quit.recv_timeout(wait) {
            let quiet_ns = mono_ns().saturating_sub(out.last_ns.load(Ordering::Relaxed));
            wait = if quiet_ns >= period_ns {
                if send(&out, &Frame::Heartbeat).is_err() {
                    return;
                }
                period
            } else {
                Duration::from_nanos(period_ns - quiet_ns)
            };
        }
    });
}

/// How often an agent says it is alive when it has nothing else to say: a quarter of
/// the host timeout its controller applies (a silent host is lost after it), between
/// 10 ms and 5 s.
fn heartbeat_period(host_timeout: Duration) -> Duration {
    (host_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(5))
}

/// Serve one controller on `input`/`output`. Returns the process exit code.
pub fn serve(input: Box<dyn Read + Send>, output_w: Box<dyn Write + Send>) -> i32 {
    let _record = RunRecord::from_env();
    let limits = FrameLimits::greeting();
    let out = output(output_w);
    let mut input = BufReader::new(input);
    {
        let mut w = out.w.lock().unwrap_or_else(|p| p.into_inner());
        if w.write_all(MAGIC).is_err() {
            return 1;
        }
    }
    let ours = Hello::ours();
    if send(&out, &Frame::Hello(ours.clone())).is_err() {
        return 1;
    }
    match read_frame(&mut input, &limits) {
        Ok(Some(Frame::Hello(theirs))) => {
            if let Err(e) = check_hello(&ours, &theirs, "the controller") {
                return fail(&out, e, true);
            }
        }
        _ => return fail(&out, "expected the controller's hello".into(), false),
    }
    session(input, out, None)
}

/// Serve a controller that already greeted this agent (a joined agent: `join`), from
/// its first job on.
pub fn serve_greeted(input: Box<dyn Read + Send>, output_w: Box<dyn Write + Send>) -> i32 {
    let out = output(output_w);
    session(BufReader::new(input), out, None)
}

/// `serve_greeted` for a relay (`--relay-fanout`): its jobs carry the jobs of the
/// agents below it, which join `relay`'s port; it runs them and sends up their merge.
pub fn serve_relay(
    input: Box<dyn Read + Send>,
    output_w: Box<dyn Write + Send>,
    relay: RelayPort,
) -> i32 {
    let out = output(output_w);
    session(
        BufReader::new(input),
        out,
        Some(Relay::Waiting(Box::new(relay))),
    )
}

/// `serve_greeted` for `iofleet agent --replay` (benchmarks of the controller): every
/// measured job runs no I/O and sends fixed, pre-encoded intervals (`replay_task`).
pub fn serve_replay(input: Box<dyn Read + Send>, output_w: Box<dyn Write + Send>) -> i32 {
    let out = output(output_w);
    session(BufReader::new(input), out, Some(Relay::Replay))
}

/// `serve_greeted` for a relay started with `--replay` (benchmarks of the controller at
/// scales one machine cannot start for real): see `virtual_relay_task`.
pub fn serve_virtual_relay(input: Box<dyn Read + Send>, output_w: Box<dyn Write + Send>) -> i32 {
    let out = output(output_w);
    session(BufReader::new(input), out, Some(Relay::Virtual))
}

/// Say why the agent ends (an `Error` frame): its exit code, 2 for the user's input.
fn fail(out: &Out, message: String, input: bool) -> i32 {
    let _ = send(out, &Frame::Error(Failure { message, input }));
    if input {
        2
    } else {
        1
    }
}

/// The session after the greeting: jobs until a Stop or the end of input.
fn session(input: BufReader<Box<dyn Read + Send>>, out: Out, mut relay: Option<Relay>) -> i32 {
    let limits = FrameLimits::greeting();
    // One thread reads every frame after the hello, for the whole session: clock pings
    // are answered at once, jobs, starts and stops are handed over, and the end of input
    // stops whatever runs and ends the session.
    let stop = Arc::new(AtomicBool::new(false));
    let control = spawn_control(input, limits, out.clone(), stop.clone());
    // Jobs in turn (a sweep's steps, a steady state's rounds, a job file's phases), each
    // answered with its Done, until a Stop or the end of input.
    loop {
        let job = match control.recv() {
            Ok(Control::Job(job)) => *job,
            // The controller closed the session or stopped it between jobs.
            Ok(Control::Stop) | Err(_) => return 0,
            Ok(Control::Start(_)) => return fail(&out, "a start before any job".into(), false),
            Ok(Control::DropCaches) => {
                return fail(&out, "a drop-caches before any job".into(), false)
            }
        };
        if stop.load(Ordering::SeqCst) {
            return 0;
        }
        match serve_job(&job, &out, &control, &stop, &mut relay) {
            Ok(done) => {
                if send(&out, &Frame::Done(done)).is_err() {
                    return 1;
                }
            }
            Err(e) => return fail(&out, e.to_string(), e.is_input_error()),
        }
    }
}

/// Read the controller's frames (within `limits`) until the session ends, on a thread
/// of their own: pings answered at once, the rest handed over on the returned channel.
/// A Stop, or the end of input, sets `stop`.
fn spawn_control(
    mut input: BufReader<Box<dyn Read + Send>>,
    limits: FrameLimits,
    out: Out,
    stop: Arc<AtomicBool>,
) -> Receiver<Control> {
    let (tx, rx) = unbounded();
    std::thread::spawn(move || loop {
        let handed = match read_frame(&mut input, &limits) {
            Ok(Some(Frame::Ping(c))) => {
                let pong = Frame::Pong(Clock {
                    seq: c.seq,
                    t_ns: mono_ns(),
                });
                if send(&out, &pong).is_err() {
                    Control::Stop
                } else {
                    continue;
                }
            }
            Ok(Some(Frame::Job(job))) => Control::Job(job),
            Ok(Some(Frame::Start(s))) => Control::Start(s.epoch_ns),
            Ok(Some(Frame::DropCaches)) => Control::DropCaches,
            Ok(Some(Frame::Stop)) => Control::Stop,
            Ok(Some(_)) => continue,
            // The end of input (or what cannot be read): the controller is gone.
            Ok(None) | Err(_) => Control::Stop,
        };
        let ends = matches!(handed, Control::Stop);
        if ends {
            stop.store(true, Ordering::SeqCst);
            // Idle I/O threads nap until their next I/O: wake them to see the stop.
            iofleet_engine::wake_sleepers();
        }
        if tx.send(handed).is_err() || ends {
            return;
        }
    });
    rx
}

/// One job of the session, heartbeating while it runs: its `Done`.
fn serve_job(
    job: &AgentJob,
    out: &Out,
    control: &Receiver<Control>,
    stop: &Arc<AtomicBool>,
    relay: &mut Option<Relay>,
) -> Result<Done, FleetError> {
    let interval = job
        .groups
        .first()
        .map_or(Duration::from_secs(1), |g| g.plan.timing.interval);
    // The heartbeat thread ends as soon as this job does (its sender dropped).
    let (beats, quit) = bounded::<()>(0);
    heartbeat(
        out.clone(),
        heartbeat_period(job.settings.host_timeout),
        quit,
    );
    let outcome = match job.task {
        _ if !job.below.is_empty() && job.task != Task::Run => Err(FleetError::Input(
            "verify and precondition run on every host directly: not through relays (--relay-fanout)"
                .into(),
        )),
        Task::Run if matches!(relay, Some(Relay::Replay)) => replay_task(job, out, control.clone(), stop),
        Task::Run if matches!(relay, Some(Relay::Virtual)) => {
            virtual_relay_task(job, out, control.clone(), stop)
        }
        Task::Run if !job.below.is_empty() => match relay {
            Some(r) => relay_task(job, out, control.clone(), stop.clone(), r),
            None => Err(FleetError::Setup(
                "a job for the hosts below a relay came to an agent that is not one".into(),
            )),
        },
        Task::Verify { keep } => verify_task(job, keep),
        Task::Precondition => precondition_task(job, stop),
        Task::Run => run_task(job, out, control.clone(), stop.clone(), interval),
        Task::Observe => observe_task(job, out, control.clone(), stop),
    };
    drop(beats);
    outcome
}

/// A `Done` with nothing in it but what a task sets.
fn done() -> Done {
    Done {
        end_ns: 0,
        failures: Vec::new(),
        errors: Vec::new(),
        notices: Vec::new(),
        verify: None,
        disks_checked: 0,
        disks: Vec::new(),
        unmeasured: Vec::new(),
        preconditioned: None,
    }
}

/// `Task::Verify`: check this host's disks against their journals.
fn verify_task(job: &AgentJob, keep: usize) -> Result<Done, FleetError> {
    let (target, _) = target(job);
    let host = crate::sys::hostname();
    let (disks, found) =
        crate::local::verify::check_target(&target, &job.groups, &job.settings, &host, keep)?;
    Ok(Done {
        verify: Some(found),
        disks_checked: disks,
        ..done()
    })
}

/// `Task::Precondition`: precondition this host's disks, as a local run would lay them
/// out; a Stop from the controller ends it between writes.
fn precondition_task(job: &AgentJob, stop: &Arc<AtomicBool>) -> Result<Done, FleetError> {
    let (target, label) = target(job);
    let mut launcher = ThreadLauncher::new(target, label);
    let plan = launcher.plan(&job.groups, &job.settings)?;
    let notices = plan.notices.clone();
    let found = launcher.precondition(plan, stop, &mut Silent)?;
    Ok(Done {
        notices,
        preconditioned: found.map(Box::new),
        ..done()
    })
}

/// `Task::Run`: the share measured by the one run path, started at the controller's
/// instant, every interval streamed.
fn run_task(
    job: &AgentJob,
    out: &Out,
    control: Receiver<Control>,
    stop: Arc<AtomicBool>,
    interval: Duration,
) -> Result<Done, FleetError> {
    let (target, label) = target(job);
    let mut launcher = ThreadLauncher::new(target, label);
    let epoch_ns = Arc::new(AtomicU64::new(0));
    // The caches are dropped when the controller says every host is ready (the gate),
    // not after this host's own fill: another host may still be writing its fill to
    // the storage. Whether this host may is checked before anything is written.
    let mut settings = job.settings.clone();
    let drop_caches = settings.drop_caches.take();
    if let Some(how) = &drop_caches {
        crate::sys::check_drop_caches(how)?;
    }
    let mut gate = Gate {
        out: out.clone(),
        control,
        epoch_ns: epoch_ns.clone(),
        drop_caches,
        below_names: Vec::new(),
    };
    let mut streamer = Streamer {
        out: out.clone(),
        worker_base: job.groups.first().map_or(0, |g| g.worker_base),
        nominal_ns: interval.as_nanos() as u64,
        epoch_ns,
        started_ns: None,
    };
    let result = run(
        &job.groups,
        &settings,
        &mut launcher,
        &mut gate,
        stop,
        &mut streamer,
    );
    streamer.send_started();
    Ok(done_of(&result?))
}

/// A relay's join port, for its session: the agents below it join here.
pub struct RelayPort {
    pub port: JoinServer,
    /// Their ranks.
    pub below: Vec<u32>,
    /// How long they have to join once the first job comes.
    pub join_timeout: Duration,
    /// The relay's second join, which says where it listens.
    pub(crate) announce: crate::agents::protocol::Join,
}

/// A relay's hosts below: their port until the first job, then their agents as a
/// joined fleet (for every job of the session).
pub enum Relay {
    Waiting(Box<RelayPort>),
    Joined(Box<Subtree>),
    /// Not a relay: an agent that replays fixed intervals (`--replay`).
    Replay,
    /// A relay that replays (`--replay`): the hosts below it need not exist; it sends
    /// what it would send for them if each replayed (`virtual_relay_task`).
    Virtual,
}

/// The agents below a relay, and the plan the controller made for them (the jobs it
/// sent), which the relay runs as it is: `plan` hands it over instead of planning.
pub struct Subtree {
    agents: AgentLauncher,
    /// Each host below, by rank.
    hosts: BTreeMap<u32, HostSpec>,
    next: Option<LaunchPlan<Hosts>>,
}

impl Relay {
    /// The hosts below, joined: on the first job, waiting for them within the join
    /// timeout (an error names the ranks that did not join), each with its own target
    /// if it named one, else the one its job names (the controller's target for it).
    fn subtree(
        &mut self,
        below: &[BelowJob],
        stop: &AtomicBool,
    ) -> Result<&mut Subtree, FleetError> {
        if let Relay::Waiting(r) = self {
            let members = r.port.wait_for(&r.below, r.join_timeout, stop)?;
            let job_target = |rank: u32| {
                below
                    .iter()
                    .find(|b| b.rank == rank)
                    .map(|b| b.job.target.clone())
            };
            let hosts: Vec<HostSpec> = members
                .iter()
                .map(|m| below_host(m, job_target(m.rank)))
                .collect();
            let by_rank = members.iter().map(|m| m.rank).zip(hosts.clone()).collect();
            // The port moves into the launcher: take it out of the waiting state.
            let Relay::Waiting(r) = std::mem::replace(self, Relay::Replay) else {
                unreachable!("matched above")
            };
            *self = Relay::Joined(Box::new(Subtree {
                agents: AgentLauncher::joined(hosts, r.port),
                hosts: by_rank,
                next: None,
            }));
        }
        match self {
            Relay::Joined(sub) => Ok(sub),
            Relay::Waiting(_) => unreachable!("joined above"),
            Relay::Replay | Relay::Virtual => Err(FleetError::Setup(
                "a job for the hosts below a relay came to an agent that replays".into(),
            )),
        }
    }
}

/// A host below a relay, as the relay's launcher holds it: named as the controller
/// names a joined agent (`machine-rRANK`), its own target if it named one, else
/// `target` (its job's; an empty list of directories when it has none).
fn below_host(m: &crate::agents::join::Member, target: Option<TargetArg>) -> HostSpec {
    m.host(
        m.target
            .clone()
            .or(target)
            .unwrap_or(TargetArg::Dirs(Vec::new())),
    )
}

impl Launcher for Subtree {
    type Where = Hosts;

    fn plan(&self, _: &[GroupPlan], _: &RunSettings) -> Result<LaunchPlan<Hosts>, FleetError> {
        self.next
            .clone()
            .ok_or_else(|| FleetError::Setup("a relay's run without the controller's plan".into()))
    }

    fn materialize(
        &mut self,
        plan: LaunchPlan<Hosts>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
        notices: &mut Vec<String>,
    ) -> Result<Option<Prepared>, FleetError> {
        self.agents.materialize(plan, stop, observer, notices)
    }

    fn verify(
        &mut self,
        plan: LaunchPlan<Hosts>,
        keep: usize,
    ) -> Result<Vec<crate::launcher::HostVerified>, FleetError> {
        self.agents.verify(plan, keep)
    }

    fn precondition(
        &mut self,
        plan: LaunchPlan<Hosts>,
        stop: &Arc<AtomicBool>,
        observer: &mut dyn Observer,
    ) -> Result<Option<crate::precondition::Preconditioned>, FleetError> {
        self.agents.precondition(plan, stop, observer)
    }

    fn start(
        &mut self,
        epoch: Instant,
        tx: std::sync::mpsc::Sender<crate::source::Msg>,
    ) -> Option<Duration> {
        self.agents.start(epoch, tx)
    }

    fn give_up(&mut self, source: usize) {
        self.agents.give_up(source)
    }

    fn finish(&mut self) -> crate::launcher::Finished {
        self.agents.finish()
    }

    fn close(&mut self) -> Vec<String> {
        self.agents.close()
    }
}

/// The run's groups as the hosts below a relay hold them: per group (the run's order,
/// which every share keeps), its workers below and the first of them.
fn subtree_groups(below: &[BelowJob]) -> Result<Vec<GroupPlan>, FleetError> {
    let first = below
        .first()
        .ok_or_else(|| FleetError::Setup("a relay's job with no host below".into()))?;
    let mut groups = first.job.groups.clone();
    for (g, group) in groups.iter_mut().enumerate() {
        let parts = below.iter().filter_map(|b| b.job.groups.get(g));
        let with: Vec<&GroupPlan> = parts.filter(|p| p.plan.fleet.workers > 0).collect();
        group.plan.fleet.workers = with.iter().map(|p| p.plan.fleet.workers).sum();
        if let Some(base) = with.iter().map(|p| p.worker_base).min() {
            group.worker_base = base;
        }
    }
    Ok(groups)
}

/// A share as the controller placed it: its first worker and how many.
fn share_of(job: &AgentJob) -> HostShare {
    let with = job.groups.iter().filter(|g| g.plan.fleet.workers > 0);
    HostShare {
        base: with.clone().map(|g| g.worker_base).min().unwrap_or(0),
        count: with.map(|g| g.plan.fleet.workers).sum(),
        groups: job.groups.clone(),
    }
}

/// The observer of a relay's run: what its own collector makes of the hosts below
/// goes up (`crate::relay::Forwarder`), after the start report, as a host's streamer
/// sends its intervals.
struct RelayStreamer<F: FnMut(Upward)> {
    forward: Forwarder<F>,
    out: Out,
    epoch_ns: Arc<AtomicU64>,
    started_ns: Option<u64>,
}

impl<F: FnMut(Upward)> Observer for RelayStreamer<F> {
    fn started(&mut self, info: &RunInfo) {
        self.started_ns = Some(
            self.epoch_ns.load(Ordering::SeqCst) + (info.start_skew_ms.unwrap_or(0.0) * 1e6) as u64,
        );
    }

    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        if let Some(t) = self.started_ns.take() {
            let _ = send(&self.out, &Frame::Started(Clock { seq: 0, t_ns: t }));
        }
        self.forward.interval(snap);
    }
}

/// `Task::Run` on a relay: the jobs below it run as the controller placed them, through
/// the one run path over the agents that joined it; each interval their merge goes up,
/// each lost host is named, and before the `Done` their totals.
fn relay_task(
    job: &AgentJob,
    out: &Out,
    control: Receiver<Control>,
    stop: Arc<AtomicBool>,
    relay: &mut Relay,
) -> Result<Done, FleetError> {
    if job.settings.drop_caches.is_some() {
        return Err(FleetError::Input(
            "--drop-caches: not with relays (--relay-fanout) yet".into(),
        ));
    }
    let sub = relay.subtree(&job.below, &stop)?;
    let groups = subtree_groups(&job.below)?;
    let mut placement = Vec::new();
    for b in &job.below {
        let host =
            sub.hosts.get(&b.rank).cloned().ok_or_else(|| {
                FleetError::Setup(format!("rank {} is not below this relay", b.rank))
            })?;
        placement.push((host, share_of(&b.job)));
    }
    sub.next = Some(LaunchPlan {
        groups: groups.clone(),
        engine: job.settings.engine.to_string(),
        direct: job.settings.direct,
        placement: Hosts(placement),
        notices: Vec::new(),
        settings: job.settings.clone(),
    });
    let plan = iofleet_profile::combine(&groups);
    let timeline = crate::source::Timeline::new(
        plan.timing.warmup,
        plan.timing.duration,
        plan.timing.interval,
    );
    let epoch_ns = Arc::new(AtomicU64::new(0));
    let mut gate = Gate {
        out: out.clone(),
        control,
        epoch_ns: epoch_ns.clone(),
        drop_caches: None,
        below_names: job
            .below
            .iter()
            .map(|b| {
                sub.hosts
                    .get(&b.rank)
                    .map_or_else(|| format!("rank-{}", b.rank), |h| h.name.clone())
            })
            .collect(),
    };
    let up = out.clone();
    let mut streamer = RelayStreamer {
        forward: Forwarder::new(
            job.below.iter().map(|b| b.host).collect(),
            crate::controller::group_ranges(&groups),
            SubtreeTotals::new(
                timeline.warmup_intervals,
                timeline.intervals(),
                plan.streams.len(),
            ),
            move |u| {
                let f = match u {
                    Upward::Interval(i) => Frame::Relayed(i),
                    Upward::HostLost {
                        host,
                        at_ns,
                        reason,
                    } => Frame::HostLost(crate::agents::protocol::HostLost {
                        host,
                        at_ns,
                        reason,
                    }),
                };
                let _ = send(&up, &f);
            },
        ),
        out: out.clone(),
        epoch_ns,
        started_ns: None,
    };
    let result = run(&groups, &job.settings, sub, &mut gate, stop, &mut streamer);
    if let Some(t) = streamer.started_ns.take() {
        let _ = send(out, &Frame::Started(Clock { seq: 0, t_ns: t }));
    }
    let result = result?;
    send(out, &Frame::RelayTotals(streamer.forward.totals.samples()))
        .map_err(|e| FleetError::Setup(format!("cannot reach the controller: {e}")))?;
    // What completed outside the measured phase stays below a relay, which merges per
    // group (docs/results.md).
    Ok(Done {
        unmeasured: Vec::new(),
        ..done_of(&result)
    })
}

/// One (worker, disk)'s replayed interval (`--replay`): the rate per worker of the
/// job's first group (1 I/O a second without one) over the interval, spread over the
/// worker's disks (at least one I/O each), latencies 50, 100, ..., 400 µs in turn, the
/// first stream's largest block; reads unless the stream only writes.
pub fn replay_sample(plan: &iofleet_profile::Plan) -> iofleet_stats::Sample {
    let mut s = iofleet_stats::Sample::new(plan.streams.len().max(1));
    let rate = plan.timing.rate_iops.unwrap_or(1.0);
    let disks = plan.fleet.disks_per_worker.max(1) as f64;
    let ios = ((rate * plan.timing.interval.as_secs_f64() / disks).round() as u64).max(1);
    let (bytes, reads) = plan
        .streams
        .first()
        .map_or((4096, true), |st| (st.bs.max().0, st.read_pct > 0.0));
    for i in 0..ios {
        let lat = 50_000 * (1 + i % 8);
        let st = &mut s.streams[0];
        if reads {
            st.read.record(lat, bytes);
        } else {
            st.write.record(lat, bytes);
        }
    }
    s
}

/// `Task::Run` with `--replay`: ready at once, then at the end of each interval of the
/// run's timeline one interval frame of the share's (worker, disk)s, each
/// `replay_sample`, encoded once; a stop ends it at the next boundary.
fn replay_task(
    job: &AgentJob,
    out: &Out,
    control: Receiver<Control>,
    stop: &AtomicBool,
) -> Result<Done, FleetError> {
    let plan = iofleet_profile::combine(&job.groups);
    let timeline = crate::source::Timeline::new(
        plan.timing.warmup,
        plan.timing.duration,
        plan.timing.interval,
    );
    let one = replay_sample(&plan);
    let mut samples = Vec::new();
    for g in &job.groups {
        for w in g.worker_base..g.worker_base + g.plan.fleet.workers {
            for d in 0..g.plan.fleet.disks_per_worker {
                samples.push((w, d, one.clone()));
            }
        }
    }
    let frame = crate::agents::protocol::frame_bytes(&Frame::Interval(IntervalData {
        index: 0,
        stopped_at: None,
        samples,
        usage: None,
        generator: None,
    }));
    let Some(()) = replay_frames(out, control, Vec::new(), &timeline, frame, stop, |_| {})? else {
        return Ok(done());
    };
    Ok(Done {
        end_ns: timeline.end_ns(),
        ..done()
    })
}

/// `Task::Run` of a relay started with `--replay`: what it would send if every host
/// below it replayed (`replay_sample` per (worker, disk), `replay_task`) and joined it,
/// without them — one relayed frame per interval (their merge, encoded once), their
/// totals, their names by rank. The controller gets from it exactly what it gets from a
/// relay of replaying agents, so one machine can measure the controller at fleet sizes
/// it could not start (bench/join_scale.py --virtual-leaves).
fn virtual_relay_task(
    job: &AgentJob,
    out: &Out,
    control: Receiver<Control>,
    stop: &AtomicBool,
) -> Result<Done, FleetError> {
    let groups = subtree_groups(&job.below)?;
    let plan = iofleet_profile::combine(&groups);
    let timeline = crate::source::Timeline::new(
        plan.timing.warmup,
        plan.timing.duration,
        plan.timing.interval,
    );
    let one = replay_sample(&plan);
    let per_host: Vec<(u32, crate::relay::DiskSamples)> = job
        .below
        .iter()
        .map(|b| {
            let mut samples = Vec::new();
            for g in &b.job.groups {
                for w in g.worker_base..g.worker_base + g.plan.fleet.workers {
                    for d in 0..g.plan.fleet.disks_per_worker {
                        samples.push((w, d, one.clone()));
                    }
                }
            }
            (b.host, samples)
        })
        .collect();
    let children = per_host
        .iter()
        .map(|(host, samples)| crate::relay::ChildInterval {
            host: *host,
            samples,
            stopped_at: None,
            usage: None,
        });
    let ranges = crate::controller::group_ranges(&groups);
    let merged = crate::relay::merge_interval(0, children, &ranges, plan.streams.len());
    let frame = crate::agents::protocol::frame_bytes(&Frame::Relayed(Box::new(merged)));
    let mut totals = SubtreeTotals::new(
        timeline.warmup_intervals,
        timeline.intervals(),
        plan.streams.len(),
    );
    let names = job
        .below
        .iter()
        .map(|b| format!("virtual-r{}", b.rank))
        .collect();
    let each = |k: u32| {
        for (_, samples) in &per_host {
            totals.add(k, samples);
        }
    };
    let Some(()) = replay_frames(out, control, names, &timeline, frame, stop, each)? else {
        return Ok(done());
    };
    send(out, &Frame::RelayTotals(totals.samples()))
        .map_err(|e| FleetError::Setup(format!("cannot reach the controller: {e}")))?;
    Ok(Done {
        end_ns: timeline.end_ns(),
        ..done()
    })
}

/// Replaying (`--replay`, `--replay-below`): say ready (with `names` below, for a
/// relay) and, at the end of each interval of `timeline` after the controller's start,
/// send `frame` (an interval or relayed frame, encoded once) with that interval's index,
/// `each` told of it first; the start report with the first. None when a stop came
/// first.
fn replay_frames(
    out: &Out,
    control: Receiver<Control>,
    names: Vec<String>,
    timeline: &crate::source::Timeline,
    mut frame: Vec<u8>,
    stop: &AtomicBool,
    mut each: impl FnMut(u32),
) -> Result<Option<()>, FleetError> {
    let epoch_ns = Arc::new(AtomicU64::new(0));
    let mut gate = Gate {
        out: out.clone(),
        control,
        epoch_ns: epoch_ns.clone(),
        drop_caches: None,
        below_names: names.clone(),
    };
    let epoch = gate.ready_as(Ready {
        notices: Vec::new(),
        engine: "replay".into(),
        configured_outstanding: 0,
        below: names,
    })?;
    let unreachable = |e: io::Error| FleetError::Setup(format!("cannot reach the controller: {e}"));
    for k in 0..timeline.intervals() {
        let due = epoch + Duration::from_nanos(timeline.boundaries[k as usize + 1]);
        while Instant::now() < due {
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            std::thread::sleep(
                due.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(200)),
            );
        }
        if k == 0 {
            let started = Clock {
                seq: 0,
                t_ns: epoch_ns.load(Ordering::SeqCst),
            };
            send(out, &Frame::Started(started)).map_err(unreachable)?;
        }
        each(k);
        // The index is the body's first field: after the length and the kind.
        frame[5..9].copy_from_slice(&k.to_le_bytes());
        let mut w = out.w.lock().unwrap_or_else(|p| p.into_inner());
        w.write_all(&frame)
            .and_then(|()| w.flush())
            .map_err(unreachable)?;
        out.last_ns.store(mono_ns(), Ordering::Relaxed);
    }
    Ok(Some(()))
}

/// The `Done` of a measured run: when it ended and what went wrong.
fn done_of(result: &iofleet_stats::result::RunResult) -> Done {
    let end_ns = if result.run.interrupted {
        result
            .intervals
            .last()
            .map(|r| ((r.t_s + r.duration_s) * 1e9).round() as u64)
            .unwrap_or(0)
    } else {
        ((result.run.warmup_s + result.run.duration_s) * 1e9).round() as u64
    };
    Done {
        end_ns,
        failures: result.summary.errors.failed_threads.clone(),
        errors: result.summary.errors.first.clone(),
        notices: result.notices.clone(),
        verify: result.summary.verify.clone(),
        disks: result.summary.errors.disks.clone(),
        unmeasured: DiskUnmeasured::of(&result.workers),
        ..done()
    }
}

/// The block devices an observer watches: the devices its target lists, the device
/// under a directory target, or (an empty device list) every disk of the host.
fn watched_devices(target: &TargetArg) -> Vec<(u32, u32)> {
    match target {
        TargetArg::Devices(v) if v.is_empty() => crate::sys::whole_disks(),
        TargetArg::Devices(v) => {
            crate::sys::devices_under(&v.iter().map(PathBuf::from).collect::<Vec<_>>())
        }
        TargetArg::Dir(d) => crate::sys::devices_under(&[PathBuf::from(d)]),
        TargetArg::Dirs(v) => {
            crate::sys::devices_under(&v.iter().map(PathBuf::from).collect::<Vec<_>>())
        }
    }
}

/// `Task::Observe`: an observer host runs no I/O. It is ready at once, starts at the
/// controller's instant, and at the end of each interval of the run's timeline sends
/// what its host spent during it (a stop cuts the interval it falls in, and ends it).
fn observe_task(
    job: &AgentJob,
    out: &Out,
    control: Receiver<Control>,
    stop: &AtomicBool,
) -> Result<Done, FleetError> {
    let timing = iofleet_profile::combine(&job.groups).timing;
    let timeline = crate::source::Timeline::new(timing.warmup, timing.duration, timing.interval);
    let devices = watched_devices(&job.target);
    // An observer's host drops its caches too (a storage node's are what matter), at
    // the gate with every other host: once all are ready, so after every fill. Whether
    // it may is checked now.
    if let Some(how) = &job.settings.drop_caches {
        crate::sys::check_drop_caches(how)?;
    }
    // What it watches is checked before it reports ready: a cgroup that is not there is
    // the inventory's error.
    let mut storage =
        StorageProbe::new(&job.observe).map_err(|m| FleetError::Input(format!("observe: {m}")))?;
    let mut scraper = job
        .scrape
        .as_ref()
        .map(crate::scrape::Scraper::new)
        .transpose()
        .map_err(|m| FleetError::Input(format!("scrape: {m}")))?;
    // A scrape that fails is a notice for its interval, never the run's end.
    let mut notices = ScrapeNotices::default();
    let epoch_ns = Arc::new(AtomicU64::new(0));
    let mut gate = Gate {
        out: out.clone(),
        control,
        epoch_ns: epoch_ns.clone(),
        drop_caches: job.settings.drop_caches.clone(),
        below_names: Vec::new(),
    };
    let epoch = gate.ready_as(Ready {
        notices: Vec::new(),
        engine: "observer".into(),
        configured_outstanding: 0,
        below: Vec::new(),
    })?;
    let stopped = |until: Instant| {
        while Instant::now() < until {
            if stop.load(Ordering::SeqCst) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
        stop.load(Ordering::SeqCst)
    };
    if stopped(epoch) {
        return Ok(done());
    }
    let mut probe = crate::sys::HostProbe::new(devices);
    storage.sample(0.0);
    if let Some(m) = scraper.as_mut().and_then(|s| s.start()) {
        notices.push(format!("at the start: {m}"));
    }
    let since_epoch = || Instant::now().saturating_duration_since(epoch).as_nanos() as u64;
    for (k, &end) in timeline.boundaries.iter().skip(1).enumerate() {
        let cut = stopped(epoch + Duration::from_nanos(end));
        if k == 0 {
            // Its start, with the first interval as an I/O host reports it (see
            // `Streamer::send_started`): an observer starts at the instant itself.
            let started = Clock {
                seq: 0,
                t_ns: epoch_ns.load(Ordering::SeqCst),
            };
            let _ = send(out, &Frame::Started(started));
        }
        let at = since_epoch();
        let mut usage = probe.sample();
        usage.storage = storage.sample(usage.wall_s);
        if let Some(s) = scraper.as_mut() {
            match s.sample() {
                Ok(v) => usage.scraped = v,
                Err(m) => notices.push(format!("interval {}: {m}", k + 1)),
            }
        }
        let data = IntervalData {
            index: k as u32,
            stopped_at: (cut && at < end).then_some(at),
            samples: Vec::new(),
            usage: Some(usage),
            generator: None,
        };
        send(out, &Frame::Interval(data))
            .map_err(|e| FleetError::Setup(format!("cannot reach the controller: {e}")))?;
        if cut {
            return Ok(Done {
                end_ns: at,
                notices: notices.take(),
                ..done()
            });
        }
    }
    Ok(Done {
        end_ns: timeline.end_ns(),
        notices: notices.take(),
        ..done()
    })
}

/// The scrape notices of a run: every one up to `MOST`, then a count of the rest (a
/// long run against a stopped exporter fails at every interval).
#[derive(Default)]
struct ScrapeNotices {
    kept: Vec<String>,
    more: usize,
}

impl ScrapeNotices {
    const MOST: usize = 32;

    fn push(&mut self, m: String) {
        if self.kept.len() < Self::MOST {
            // A notice names the address and why; an exporter's own words are cut short.
            self.kept.push(m.chars().take(400).collect());
        } else {
            self.more += 1;
        }
    }

    fn take(&mut self) -> Vec<String> {
        let mut v = std::mem::take(&mut self.kept);
        if self.more > 0 {
            v.push(format!("{} more scrapes failed", self.more));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An agent ending removes its record, and only its own: a record another process
    /// wrote (a later start that reused the directory) stays.
    #[test]
    fn an_agent_removes_its_own_record_when_it_ends() {
        let runs = tempfile::tempdir().unwrap();
        for (pid, removed) in [(std::process::id(), true), (1, false)] {
            let dir = runs.path().join(format!("run-{pid}"));
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("pid"), format!("{pid}\n")).unwrap();
            drop(RunRecord(Some(dir.clone())));
            assert_eq!(!dir.exists(), removed, "record of {pid}");
        }
        // No record to remove (an agent not started by a start script): nothing done.
        drop(RunRecord(None));
    }
}
