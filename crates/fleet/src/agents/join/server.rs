//! The join port: one TCP listener for the command and one event loop thread (mio)
//! serving every connection on it, so a joined host costs a socket and its TLS state,
//! not a process and threads.
//!
//! Connections arrive on the port, or are handed to it by the command itself
//! (`JoinServer::adopt`: a worker VM's virtio-serial channel, whose socket the command
//! connected to on the hypervisor); both are the same from then on.
//!
//! A connection is first a candidate: its TLS handshake, then the agent's magic and
//! `Join` frame (version, rank, token), all within `handshake_timeout`. A candidate is
//! refused — answered with an `Error` frame where TLS allows, logged with its address,
//! counted by reason, never a host — when it speaks no TLS, stalls, sends anything but
//! a join within the join frame's limit, runs another protocol version, proves a wrong
//! token, claims a rank already taken or outside the fleet, or comes once the fleet is
//! complete. At most `MAX_CANDIDATES` candidates are held at once (further connections
//! are closed at accept, and an agent tries again), so a flood costs bounded memory.
//!
//! An accepted agent is a member: it gets a `Welcome`, and a heartbeat every
//! `heartbeat` from then on. The agents' launcher attaches a member to a host index of
//! its run (`JoinedLink::attach`); from then on its frames are read within the limits
//! the launcher sets and arrive as the same `Event`s a session's reader thread sends, a
//! closed connection as `Event::Closed` at once. What the launcher writes (`JoinedLink`)
//! is queued here and sent as the socket takes it; a member that reads nothing while
//! more than `OUT_MAX` waits for it is closed.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, Sender};
use mio::net::{TcpListener, TcpStream, UnixStream};
use mio::{Events, Interest, Poll, Token, Waker};
use rustls::{ServerConfig, ServerConnection};

use super::address::JoinAddress;
use super::creds::Credentials;
use crate::agents::event::Event;
use crate::agents::protocol::{
    check_hello, frame_bytes, mono_ns, take_frame, take_join, Failure, Frame, FrameLimits, Hello,
    Join, Redirect, Welcome, HELLO_MAX, JOB_MAX, MAGIC,
};
use crate::error::FleetError;
use crate::host::TargetArg;

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
/// Candidates held at once; past it a new connection is closed at accept.
pub const MAX_CANDIDATES: usize = 512;
/// What may wait to be sent to one member: two of the largest jobs.
const OUT_MAX: usize = 2 * JOB_MAX + (1 << 20);
/// What rustls itself may buffer per connection, each way.
const TLS_BUFFER: usize = 256 << 10;
/// Plaintext read from one connection before its frames are taken.
const READ_BUDGET: usize = 1 << 20;
/// How long an agent below a relay that has not joined yet waits before it asks again
/// (with as much again at random): long enough that thousands of them waiting cost the
/// port little.
const RELAY_WAIT_MS: u64 = 2_000;
/// How often candidates are checked against their deadline.
const EXPIRY_CHECK: Duration = Duration::from_millis(100);
/// How many refusals of each reason are told on stderr as they happen (all are
/// counted, and the counts told at the end).
const TOLD_PER_REASON: u32 = 3;

/// Where a connection came from: an address on the network, or a channel the command
/// opened itself (a worker VM's virtio-serial socket, `JoinServer::adopt`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PeerAddr {
    Net(SocketAddr),
    Channel(String),
}

impl std::fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerAddr::Net(a) => write!(f, "{a}"),
            PeerAddr::Channel(c) => write!(f, "{c}"),
        }
    }
}

/// A connection on the loop: TCP from the port, or a Unix socket handed over.
enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    fn shutdown(&self) {
        let _ = match self {
            Conn::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            Conn::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf),
            Conn::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.write(buf),
            Conn::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.flush(),
            Conn::Unix(s) => s.flush(),
        }
    }
}

impl mio::event::Source for Conn {
    fn register(&mut self, r: &mio::Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.register(r, t, i),
            Conn::Unix(s) => s.register(r, t, i),
        }
    }
    fn reregister(&mut self, r: &mio::Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.reregister(r, t, i),
            Conn::Unix(s) => s.reregister(r, t, i),
        }
    }
    fn deregister(&mut self, r: &mio::Registry) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.deregister(r),
            Conn::Unix(s) => s.deregister(r),
        }
    }
}

/// How the join port behaves.
#[derive(Debug, Clone, Default)]
pub struct JoinSettings {
    /// Agents the port takes: ranks `first_rank..first_rank + expect`.
    pub expect: u32,
    pub first_rank: u32,
    /// The fleet's size a launcher may state (`Join.size`), when not `expect`: a
    /// relay's port takes part of a larger fleet.
    pub fleet_size: Option<u32>,
    /// `--relay-fanout`: rank r relays for the `fanout` ranks after it when r is a
    /// multiple of `fanout + 1`; the port takes only relays, and sends each other agent
    /// to its relay (`Redirect`). 0: no relays.
    pub fanout: u32,
    /// The token agents prove, when not a fresh one (a relay's port: the command's).
    pub token: Option<String>,
    /// `--relay-dedicated`: relays run no share of their own (else each runs one, as
    /// an agent of its own port, and is the first of the ranks it takes).
    pub dedicated: bool,
    /// How long an agent may hear nothing before it stops by itself (told in the
    /// welcome; the controller sends a heartbeat at least every quarter of it).
    pub host_timeout: Duration,
    /// A candidate must have joined within this.
    pub handshake_timeout: Duration,
}

/// Whether rank `r` relays, with `fanout` ranks below each relay (`--relay-fanout`):
/// every (fanout + 1)-th rank from 0.
pub fn is_relay(r: u32, fanout: u32) -> bool {
    r.is_multiple_of(fanout + 1)
}

impl JoinSettings {
    /// Whether `rank` relays for others.
    pub fn is_relay(&self, rank: u32) -> bool {
        self.fanout > 0 && is_relay(rank, self.fanout)
    }

    /// Whether `rank` joins a relay rather than this port.
    pub fn below_a_relay(&self, rank: u32) -> bool {
        self.fanout > 0 && !self.is_relay(rank)
    }

    /// The ranks relay `rank` takes on its own port: the ones below it, and first its
    /// own unless relays are dedicated.
    pub fn below(&self, rank: u32) -> Vec<u32> {
        if !self.is_relay(rank) {
            return Vec::new();
        }
        let own = (!self.dedicated).then_some(rank);
        own.into_iter()
            .chain(rank + 1..=rank + self.fanout)
            .filter(|&r| r < self.first_rank + self.expect)
            .collect()
    }
}

/// Takes connections for a join port from another thread (`JoinServer::adopter`): a
/// relay's own agent connects to its relay's port this way, again after a failed try.
#[derive(Clone)]
pub struct Adopter {
    link: Arc<LoopLink>,
}

impl Adopter {
    /// A new socket pair: one end taken by the port as a candidate (labelled `label`),
    /// the other returned, to join through.
    pub fn connect(&self, label: &str) -> Result<std::os::unix::net::UnixStream, FleetError> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()
            .map_err(|e| FleetError::Setup(format!("join port: {label}: {e}")))?;
        self.adopt(ours, label)?;
        Ok(theirs)
    }

    /// Take `stream` as if it had arrived on the port (`JoinServer::adopt`).
    pub fn adopt(
        &self,
        stream: std::os::unix::net::UnixStream,
        label: &str,
    ) -> Result<(), FleetError> {
        stream
            .set_nonblocking(true)
            .map_err(|e| FleetError::Setup(format!("join port: {label}: {e}")))?;
        self.link
            .send(Cmd::Adopt(UnixStream::from_std(stream), label.to_string()));
        Ok(())
    }
}

/// An accepted agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub id: u64,
    pub rank: u32,
    pub hostname: String,
    pub pid: u32,
    pub peer: PeerAddr,
    pub rank_from: String,
    pub target: Option<TargetArg>,
    /// When it was accepted (the controller's clock).
    pub joined_at: Instant,
}

impl Member {
    /// This agent as a host of the fleet, running its share on `target`: named
    /// `machine-rRANK`, labelled with its rank and machine, reached by its membership.
    pub fn host(&self, target: TargetArg) -> crate::host::HostSpec {
        let mut labels = BTreeMap::new();
        labels.insert("rank".to_string(), self.rank.to_string());
        labels.insert("machine".to_string(), self.hostname.clone());
        crate::host::HostSpec {
            name: format!("{}-r{}", self.hostname, self.rank),
            destination: self.peer.to_string(),
            target,
            workers: None,
            labels,
            iofleet_path: None,
            reach: crate::host::Reach::Joined {
                rank: self.rank,
                member: self.id,
            },
            role: crate::host::Role::Workers,
            observe: Vec::new(),
            scrape: None,
        }
    }
}

/// The refusals so far, by reason: how many, and the first peer.
#[derive(Debug, Default)]
struct Refusals {
    by_reason: BTreeMap<String, (u32, PeerAddr)>,
}

#[derive(Default)]
struct Roster {
    members: BTreeMap<u32, Member>,
    /// Set once the fleet is complete: later joins are refused.
    armed: bool,
    /// Per relay rank, where the agents below it join it (endpoint, fingerprint).
    relays: BTreeMap<u32, (String, String)>,
    /// Relays welcomed that have not yet said where they listen: members once they
    /// have (a run must not start before the agents below them can be sent there).
    announcing: BTreeMap<u32, Member>,
}

struct Shared {
    roster: Mutex<Roster>,
    changed: Condvar,
    refusals: Mutex<Refusals>,
}

impl Shared {
    /// Whether member `id` is a relay that has not yet said where it listens.
    fn announcing(&self, id: u64) -> bool {
        let roster = self.roster.lock().unwrap_or_else(|p| p.into_inner());
        roster.announcing.values().any(|m| m.id == id)
    }

    fn refuse(&self, peer: PeerAddr, reason: &str) {
        // A reason without the details that vary per peer, to count by.
        let kind = reason.split(':').next().unwrap_or(reason).to_string();
        let mut r = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        let entry = r.by_reason.entry(kind).or_insert((0, peer.clone()));
        entry.0 += 1;
        if entry.0 <= TOLD_PER_REASON {
            eprintln!("iofleet: join port: refused {peer}: {reason}");
        }
    }
}

enum Cmd {
    /// A connection the command opened itself, to take as a candidate.
    Adopt(UnixStream, String),
    Send(u64, Vec<u8>),
    Close(u64),
    Attach(u64, Attached),
    Shutdown,
}

struct Attached {
    h: usize,
    limits: Arc<Mutex<FrameLimits>>,
    tx: Sender<Event>,
}

/// How the launcher's side reaches the loop.
struct LoopLink {
    tx: Sender<Cmd>,
    waker: Waker,
}

impl LoopLink {
    fn send(&self, cmd: Cmd) {
        if self.tx.send(cmd).is_ok() {
            let _ = self.waker.wake();
        }
    }
}

/// The command's join port.
pub struct JoinServer {
    pub address: JoinAddress,
    pub local_addr: SocketAddr,
    token: String,
    shared: Arc<Shared>,
    link: Arc<LoopLink>,
    thread: Option<JoinHandle<()>>,
}

impl JoinServer {
    /// Listen on `listen` (`HOST:PORT`; port 0 picks one) with fresh credentials. The
    /// join address names `advertise` when given, else the address listened on (the
    /// machine's host name for an unspecified address).
    pub fn open(
        listen: &str,
        advertise: Option<&str>,
        settings: JoinSettings,
    ) -> Result<Self, FleetError> {
        let at: SocketAddr = listen.parse().map_err(|_| {
            FleetError::Input(format!(
                "--listen {listen:?}: not an address and port (e.g. 0.0.0.0:7070, 127.0.0.1:0)"
            ))
        })?;
        let mut listener = TcpListener::bind(at)
            .map_err(|e| FleetError::Setup(format!("--listen {listen}: cannot listen: {e}")))?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| FleetError::Setup(format!("--listen {listen}: {e}")))?;
        let mut creds = Credentials::generate()?;
        if let Some(t) = &settings.token {
            creds.token = t.clone();
        }
        let config = creds.server_config()?;
        let poll = Poll::new().map_err(|e| FleetError::Setup(format!("join port: {e}")))?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(|e| FleetError::Setup(format!("join port: {e}")))?;
        let waker = Waker::new(poll.registry(), WAKER)
            .map_err(|e| FleetError::Setup(format!("join port: {e}")))?;
        let (tx, rx) = unbounded();
        let shared = Arc::new(Shared {
            roster: Mutex::new(Roster::default()),
            changed: Condvar::new(),
            refusals: Mutex::new(Refusals::default()),
        });
        let host = match advertise {
            Some(h) => h.to_string(),
            None if local_addr.ip().is_unspecified() => crate::sys::hostname(),
            None if local_addr.is_ipv6() => format!("[{}]", local_addr.ip()),
            None => local_addr.ip().to_string(),
        };
        let address = JoinAddress {
            endpoint: format!("{host}:{}", local_addr.port()),
            fingerprint: creds.fingerprint.clone(),
        };
        let token = creds.token.clone();
        let mut el = EventLoop {
            poll,
            listener,
            config,
            creds,
            shared: shared.clone(),
            rx,
            // Room for the whole fleet and the candidates at once: growing the table
            // of ten thousand peers held the old and the new one together.
            peers: HashMap::with_capacity((settings.expect as usize).min(1 << 16) + MAX_CANDIDATES),
            next: 2,
            candidates: 0,
            heartbeat: (settings.host_timeout / 4)
                .clamp(Duration::from_millis(100), Duration::from_secs(1)),
            settings,
        };
        let thread = std::thread::Builder::new()
            .name("join port".into())
            .spawn(move || el.run())
            .map_err(|e| FleetError::Setup(format!("join port: {e}")))?;
        Ok(JoinServer {
            address,
            local_addr,
            token,
            shared,
            link: Arc::new(LoopLink { tx, waker }),
            thread: Some(thread),
        })
    }

    /// The token agents prove (for the join file; never printed).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Take a connection the command opened itself (a worker VM's channel, connected to
    /// its socket on the hypervisor) as if it had arrived on the port: the agent at its
    /// other end joins through it with TLS, its magic and token like any other, within
    /// the handshake timeout. `label` names it in messages (`channel of iofleet-b-0`).
    pub fn adopt(
        &self,
        stream: std::os::unix::net::UnixStream,
        label: &str,
    ) -> Result<(), FleetError> {
        self.adopter().adopt(stream, label)
    }

    /// A handle that takes connections for this port from any thread (`adopt`), for as
    /// long as the port is open.
    pub fn adopter(&self) -> Adopter {
        Adopter {
            link: self.link.clone(),
        }
    }

    /// Wait until `expect` agents have joined (ranks 0..expect), then refuse further
    /// joins: the members in rank order. Past `timeout`, or once `stop` is set, an error
    /// naming the ranks still missing and the hosts that did join.
    pub fn wait(
        &self,
        expect: u32,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<Vec<Member>, FleetError> {
        let ranks: Vec<u32> = (0..expect).collect();
        self.wait_for(&ranks, timeout, stop)
    }

    /// `wait` for the members of `ranks` (a relayed fleet's relays; a relay's ranks
    /// below it).
    pub fn wait_for(
        &self,
        ranks: &[u32],
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<Vec<Member>, FleetError> {
        let expect = ranks.len() as u32;
        let deadline = Instant::now() + timeout;
        let mut roster = self.shared.roster.lock().unwrap_or_else(|p| p.into_inner());
        // Progress as agents join: at the first, then at most once a second.
        let (mut told, mut told_at) = (0usize, Instant::now() - Duration::from_secs(1));
        loop {
            let joined = roster.members.len();
            if joined != told && (told == 0 || told_at.elapsed() >= Duration::from_secs(1)) {
                eprintln!("iofleet: {joined} of {expect} agent(s) joined");
                (told, told_at) = (joined, Instant::now());
            }
            if roster.members.len() as u32 >= expect {
                roster.armed = true;
                return Ok(roster.members.values().cloned().collect());
            }
            let now = Instant::now();
            if now >= deadline || stop.load(Ordering::SeqCst) {
                let missing: Vec<u32> = ranks
                    .iter()
                    .copied()
                    .filter(|r| !roster.members.contains_key(r))
                    .collect();
                let hosts: BTreeMap<&str, u32> =
                    roster.members.values().fold(BTreeMap::new(), |mut m, x| {
                        *m.entry(x.hostname.as_str()).or_default() += 1;
                        m
                    });
                let hosts: Vec<String> = hosts.iter().map(|(h, n)| format!("{h} ({n})")).collect();
                let why = if stop.load(Ordering::SeqCst) {
                    "stopped".to_string()
                } else {
                    format!("--join-timeout {} s passed", timeout.as_secs_f64())
                };
                return Err(FleetError::Setup(format!(
                    "{why} with {} of {expect} agents joined: missing rank(s) {}; joined from: {}{}",
                    roster.members.len(),
                    ranges(&missing),
                    if hosts.is_empty() { "none".into() } else { hosts.join(", ") },
                    self.refusal_note()
                )));
            }
            let wait = (deadline - now).min(Duration::from_millis(100));
            roster = self
                .shared
                .changed
                .wait_timeout(roster, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The agents that have joined so far, in rank order (without waiting, and without
    /// closing the fleet to further joins as `wait` does).
    pub fn members(&self) -> Vec<Member> {
        let roster = self.shared.roster.lock().unwrap_or_else(|p| p.into_inner());
        roster.members.values().cloned().collect()
    }

    fn refusal_note(&self) -> String {
        match self.refusals() {
            r if r.is_empty() => String::new(),
            r => format!("; {}", r.join("; ")),
        }
    }

    /// Every refusal so far, by reason: "refused N connection(s): REASON (first from
    /// ADDR)".
    pub fn refusals(&self) -> Vec<String> {
        let r = self
            .shared
            .refusals
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        r.by_reason
            .iter()
            .map(|(why, (n, first))| {
                format!("the join port refused {n} connection(s): {why} (first from {first})")
            })
            .collect()
    }

    /// How the agents' launcher speaks to member `id`.
    pub fn link(&self, id: u64) -> JoinedLink {
        JoinedLink {
            id,
            link: self.link.clone(),
        }
    }
}

impl Drop for JoinServer {
    /// The port closes with the command: every connection still open is closed (its
    /// agent stops), and the listener with them.
    fn drop(&mut self) {
        self.link.send(Cmd::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a candidate has sent so far (`buf`, the plaintext from its first byte): its
/// join and the bytes it took, None while incomplete, or why it is refused ("malformed:
/// ...", "oversized: ...") as soon as that can be told — from its first bytes when they
/// are not the magic, from a frame's header when the frame is not a join or is over the
/// join's limit. The same answer whatever chunks the bytes arrive in.
pub fn candidate_join(buf: &[u8]) -> Result<Option<(Join, usize)>, String> {
    let n = MAGIC.len().min(buf.len());
    if buf[..n] != MAGIC[..n] {
        return Err("malformed: it does not speak the iofleet protocol".into());
    }
    if buf.len() < MAGIC.len() {
        return Ok(None);
    }
    match take_join(&buf[MAGIC.len()..]) {
        Ok(Some((join, used))) => Ok(Some((join, MAGIC.len() + used))),
        Ok(None) => Ok(None),
        Err(e) if e.to_string().contains("over the limit") => Err(format!("oversized: {e}")),
        Err(e) => Err(format!("malformed: {e}")),
    }
}

/// `[0, 1, 2, 5, 7, 8]` as "0-2, 5, 7-8".
fn ranges(xs: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < xs.len() {
        let mut j = i;
        while j + 1 < xs.len() && xs[j + 1] == xs[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            xs[i].to_string()
        } else {
            format!("{}-{}", xs[i], xs[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

/// The launcher's handle on one member: what it writes (`writer`, a frame per flush)
/// goes to the agent, and `attach` routes what the agent sends. Dropping the writer
/// closes the connection.
#[derive(Clone)]
pub struct JoinedLink {
    id: u64,
    link: Arc<LoopLink>,
}

impl std::fmt::Debug for JoinedLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JoinedLink({})", self.id)
    }
}

impl PartialEq for JoinedLink {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && Arc::ptr_eq(&self.link, &other.link)
    }
}
impl Eq for JoinedLink {}

impl JoinedLink {
    /// A writer to the agent: the bytes written are sent at each flush (`write_frame`
    /// flushes each frame); dropping it closes the connection.
    pub(crate) fn writer(&self) -> Box<dyn Write + Send> {
        Box::new(LinkWriter {
            id: self.id,
            link: self.link.clone(),
            buf: Vec::new(),
        })
    }

    /// Route the agent's frames, read within `limits`, to `tx` as host `h`'s events.
    pub(in crate::agents) fn attach(
        &self,
        h: usize,
        limits: Arc<Mutex<FrameLimits>>,
        tx: Sender<Event>,
    ) {
        self.link
            .send(Cmd::Attach(self.id, Attached { h, limits, tx }));
    }
}

struct LinkWriter {
    id: u64,
    link: Arc<LoopLink>,
    buf: Vec<u8>,
}

impl Write for LinkWriter {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.link
                .send(Cmd::Send(self.id, std::mem::take(&mut self.buf)));
        }
        Ok(())
    }
}

impl Drop for LinkWriter {
    fn drop(&mut self) {
        let _ = self.flush();
        self.link.send(Cmd::Close(self.id));
    }
}

enum Phase {
    /// TLS, then the magic and a join, before `deadline`.
    Candidate {
        deadline: Instant,
    },
    Member {
        attached: Option<Attached>,
    },
}

struct Peer {
    /// Its token's number: a member's `Member::id`.
    id: u64,
    tcp: Conn,
    tls: ServerConnection,
    addr: PeerAddr,
    phase: Phase,
    /// Plaintext read and not yet taken as frames.
    inbuf: Vec<u8>,
    /// Plaintext waiting for rustls to take it.
    out: Vec<u8>,
    /// Whether writable readiness is asked for.
    writing: bool,
    /// Whether it was told why it is refused.
    told: bool,
    /// Its end was read (TCP's, or TLS' close): it ends once what it sent is taken.
    eof: bool,
}

/// Give back a peer's buffer once it is empty, if it grew past a few KiB: a job or a
/// burst of frames would otherwise keep its largest size for the whole command, for each
/// of thousands of peers. Then at most 1 MiB is kept while a frame is in progress.
fn release(buf: &mut Vec<u8>) {
    if buf.is_empty() && buf.capacity() > KEEP_BUFFER {
        *buf = Vec::new();
    } else if buf.capacity() > (1 << 20) && buf.len() < (64 << 10) {
        buf.shrink_to(64 << 10);
    }
}

/// The buffer a peer keeps between frames (`release`).
const KEEP_BUFFER: usize = 4 << 10;

/// Why a connection ends.
enum End {
    /// Refused as a candidate: logged and counted.
    Refused(String),
    /// A candidate below a relay, sent to it: neither refused nor a member.
    Redirected,
    /// A member's connection closed (None) or was ended over what it sent.
    Closed(Option<String>),
}

struct EventLoop {
    poll: Poll,
    listener: TcpListener,
    config: Arc<ServerConfig>,
    creds: Credentials,
    shared: Arc<Shared>,
    rx: Receiver<Cmd>,
    peers: HashMap<Token, Peer>,
    next: usize,
    candidates: usize,
    heartbeat: Duration,
    settings: JoinSettings,
}

impl EventLoop {
    fn run(&mut self) {
        let mut events = Events::with_capacity(1024);
        let mut next_beat = Instant::now() + self.heartbeat;
        let mut next_expiry = Instant::now();
        loop {
            let now = Instant::now();
            let tick = next_beat
                .saturating_duration_since(now)
                .min(Duration::from_millis(250));
            if let Err(e) = self.poll.poll(&mut events, Some(tick)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    eprintln!("iofleet: join port: {e}");
                    return;
                }
            }
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    t => self.serve(t, ev.is_readable()),
                }
            }
            // Commands from the launcher (the waker only says there are some).
            while let Ok(cmd) = self.rx.try_recv() {
                if !self.command(cmd) {
                    self.close_all();
                    return;
                }
            }
            let now = Instant::now();
            if now >= next_beat {
                self.beat();
                next_beat = now + self.heartbeat;
            }
            if now >= next_expiry {
                self.expire(now);
                next_expiry = now + EXPIRY_CHECK;
            }
        }
    }

    fn accept(&mut self) {
        loop {
            let (tcp, addr) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Out of file descriptors and the like: try again at the next event.
                Err(_) => return,
            };
            let _ = tcp.set_nodelay(true);
            self.candidate(Conn::Tcp(tcp), PeerAddr::Net(addr));
        }
    }

    /// Take a connection as a candidate: it must join within the handshake timeout.
    fn candidate(&mut self, mut conn: Conn, addr: PeerAddr) {
        if self.candidates >= MAX_CANDIDATES {
            self.shared.refuse(
                addr,
                &format!(
                    "over {MAX_CANDIDATES} connections in their handshake at once: closed at accept"
                ),
            );
            return;
        }
        let Ok(mut tls) = ServerConnection::new(self.config.clone()) else {
            return;
        };
        let token = Token(self.next);
        self.next += 1;
        if self
            .poll
            .registry()
            .register(&mut conn, token, Interest::READABLE)
            .is_err()
        {
            return;
        }
        tls.set_buffer_limit(Some(TLS_BUFFER));
        self.candidates += 1;
        self.peers.insert(
            token,
            Peer {
                id: token.0 as u64,
                tcp: conn,
                tls,
                addr,
                phase: Phase::Candidate {
                    deadline: Instant::now() + self.settings.handshake_timeout,
                },
                inbuf: Vec::new(),
                out: Vec::new(),
                writing: false,
                told: false,
                eof: false,
            },
        );
        // What it sent before it was registered is read now (readiness is edge-triggered).
        self.serve(token, true);
    }

    /// Read and write what the socket allows; take the frames read.
    fn serve(&mut self, t: Token, readable: bool) {
        let outcome = (|| {
            // A budget at a time, the frames taken after each: what one connection has
            // buffered stays within a frame and the budget, and the socket is read
            // until it would block (readiness is edge-triggered).
            while let Some(p) = self.peers.get_mut(&t).filter(|_| readable) {
                let more = p.read(READ_BUDGET)?;
                self.take(t)?;
                if let Some(p) = self.peers.get(&t).filter(|p| p.eof) {
                    return Err(p.ended());
                }
                if !more {
                    break;
                }
            }
            if self.peers.contains_key(&t) {
                self.flush(t)?;
            }
            Ok(())
        })();
        if let Err(end) = outcome {
            self.end(t, end);
        }
    }

    /// Take the complete frames `t` has sent.
    fn take(&mut self, t: Token) -> Result<(), End> {
        let p = self.peers.get_mut(&t).expect("a live peer");
        match &p.phase {
            Phase::Candidate { .. } => {
                let Some(join) = p.take_join()? else {
                    return Ok(());
                };
                self.admit(t, join)
            }
            Phase::Member { attached: None } if self.shared.announcing(p.id) => {
                self.relay_listens(t)
            }
            Phase::Member { attached: None } => {
                // Nothing is expected before the first job; what comes is kept (within
                // the greeting's limits) until the member is attached.
                if p.inbuf.len() > HELLO_MAX + (1 << 20) {
                    return Err(End::Closed(Some(
                        "it sent over 1 MiB before its first job".into(),
                    )));
                }
                Ok(())
            }
            Phase::Member { attached: Some(a) } => {
                let mut used = 0;
                loop {
                    let limits = || *a.limits.lock().unwrap_or_else(|p| p.into_inner());
                    match take_frame(&p.inbuf[used..], limits) {
                        Ok(Some((f, n))) => {
                            used += n;
                            let ev = match f {
                                Frame::Pong(c) => Event::Pong(a.h, c, mono_ns()),
                                f => Event::Frame(a.h, f),
                            };
                            let _ = a.tx.send(ev);
                        }
                        Ok(None) => break,
                        Err(e) => return Err(End::Closed(Some(e.to_string()))),
                    }
                }
                p.inbuf.drain(..used);
                release(&mut p.inbuf);
                Ok(())
            }
        }
    }

    /// Accept or refuse a candidate's join.
    fn admit(&mut self, t: Token, join: Join) -> Result<(), End> {
        let ours = Hello::ours();
        let p = self.peers.get_mut(&t).expect("a live peer");
        // The token first: nothing, not even this controller's version, is told to a
        // peer that cannot prove it.
        if !self.creds.token_matches(&join.token) {
            p.say_error(
                "the join token is not this command's (an earlier command's, or mistyped)",
                true,
            );
            return Err(End::Refused("wrong token".into()));
        }
        if let Err(e) = check_hello(&ours, &join.hello, &format!("agent {}", p.addr)) {
            p.say_error(&e, true);
            return Err(End::Refused(format!("protocol version mismatch: {e}")));
        }
        let (expect, first) = (self.settings.expect, self.settings.first_rank);
        let size = self.settings.fleet_size.unwrap_or(expect);
        let mut roster = self.shared.roster.lock().unwrap_or_else(|p| p.into_inner());
        let refusal = if let Some(n) = join.size.filter(|&n| n != size) {
            Some(format!(
                "fleet size mismatch: its launcher started {n} ({}), this command expects {size} (--expect)",
                join.rank_from
            ))
        } else if let Some(r) = join.rank.filter(|&r| r < first || r >= first + expect) {
            Some(format!(
                "rank outside the fleet: rank {r} ({}) is outside ranks {first}-{} (--expect {size})",
                join.rank_from,
                first + expect - 1
            ))
        } else if self.settings.fanout > 0 && join.rank.is_none() {
            Some(format!(
                "no rank: with --relay-fanout {} every agent needs its rank from its launcher (an MPI or Slurm rank variable, or --rank)",
                self.settings.fanout
            ))
        } else if roster.armed && !join.rank.is_some_and(|r| self.settings.below_a_relay(r)) {
            Some(format!(
                "the fleet is complete: all {expect} agents have joined"
            ))
        } else {
            join.rank
                .and_then(|r| roster.members.get(&r).or_else(|| roster.announcing.get(&r)))
                .map(|m| {
                    format!(
                        "duplicate rank: rank {} has already joined from {} ({})",
                        m.rank, m.peer, m.hostname
                    )
                })
        };
        if let Some(why) = refusal {
            drop(roster);
            p.say_error(&why, true);
            return Err(End::Refused(why));
        }
        // An agent below a relay is sent to it (or told to ask again until its relay
        // has said where it listens); it is never a member here.
        if let Some(r) = join.rank.filter(|&r| self.settings.below_a_relay(r)) {
            let relay = r - r % (self.settings.fanout + 1);
            let at = roster.relays.get(&relay).cloned();
            drop(roster);
            p.queue(&frame_bytes(&Frame::Redirect(Redirect {
                rank: r,
                endpoint: at.as_ref().map(|a| a.0.clone()),
                fingerprint: at.map(|a| a.1),
                after_ms: RELAY_WAIT_MS,
            })));
            let _ = p.write();
            p.tls.send_close_notify();
            return Err(End::Redirected);
        }
        let Some(rank) = join
            .rank
            .or_else(|| (0..expect).find(|r| !roster.members.contains_key(r)))
        else {
            drop(roster);
            let why = format!("the fleet is complete: all {expect} agents have joined");
            p.say_error(&why, true);
            return Err(End::Refused(why));
        };
        let member = Member {
            id: t.0 as u64,
            rank,
            hostname: join.hello.hostname.clone(),
            pid: join.hello.pid,
            peer: p.addr.clone(),
            rank_from: join.rank_from.clone(),
            target: join.target.clone(),
            joined_at: Instant::now(),
        };
        if !self.settings.below(rank).is_empty() {
            roster.announcing.insert(rank, member);
        } else {
            roster.members.insert(rank, member);
        }
        drop(roster);
        self.shared.changed.notify_all();
        p.phase = Phase::Member { attached: None };
        self.candidates -= 1;
        p.queue(&frame_bytes(&Frame::Welcome(Welcome {
            hello: ours,
            rank,
            host_timeout_ms: self.settings.host_timeout.as_millis() as u64,
            heartbeat_ms: self.heartbeat.as_millis() as u64,
            below: self.settings.below(rank),
        })));
        Ok(())
    }

    /// A relay member says where the agents below it join it (its second `Join`, with
    /// `relay` set): the endpoint is the address its connection came from, at the port
    /// it names.
    fn relay_listens(&mut self, t: Token) -> Result<(), End> {
        let p = self.peers.get_mut(&t).expect("a live peer");
        let Some((join, used)) = crate::agents::protocol::take_join(&p.inbuf)
            .map_err(|e| End::Closed(Some(e.to_string())))?
        else {
            return Ok(());
        };
        p.inbuf.drain(..used);
        let (Some(relay), PeerAddr::Net(addr)) = (join.relay, &p.addr) else {
            return Err(End::Closed(Some(
                "a relay's second join must say where it listens, over the network".into(),
            )));
        };
        let endpoint = match addr.ip() {
            std::net::IpAddr::V6(ip) => format!("[{ip}]:{}", relay.port),
            ip => format!("{ip}:{}", relay.port),
        };
        let id = p.id;
        let mut roster = self.shared.roster.lock().unwrap_or_else(|p| p.into_inner());
        let Some(rank) = roster
            .announcing
            .values()
            .find(|m| m.id == id)
            .map(|m| m.rank)
        else {
            return Err(End::Closed(Some(
                "a relay said twice where it listens".into(),
            )));
        };
        let member = roster.announcing.remove(&rank).expect("found above");
        roster.members.insert(rank, member);
        roster.relays.insert(rank, (endpoint, relay.fingerprint));
        drop(roster);
        self.shared.changed.notify_all();
        Ok(())
    }

    /// Hand rustls what waits and write what it has; ask for writable readiness while
    /// something is left.
    fn flush(&mut self, t: Token) -> Result<(), End> {
        let registry = self.poll.registry();
        let p = self.peers.get_mut(&t).expect("a live peer");
        p.write().map_err(|e| End::Closed(Some(e)))?;
        let want = p.tls.wants_write() || !p.out.is_empty();
        if want != p.writing {
            let interest = if want {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            let _ = registry.reregister(&mut p.tcp, t, interest);
            p.writing = want;
        }
        Ok(())
    }

    /// A command from the launcher; false to shut down.
    fn command(&mut self, cmd: Cmd) -> bool {
        match cmd {
            Cmd::Send(id, bytes) => {
                let t = Token(id as usize);
                if let Some(p) = self.peers.get_mut(&t) {
                    p.queue(&bytes);
                    if p.out.len() > OUT_MAX {
                        self.end(
                            t,
                            End::Closed(Some(format!(
                                "it read nothing while {} MiB waited for it",
                                OUT_MAX >> 20
                            ))),
                        );
                    } else if let Err(end) = self.flush(t) {
                        self.end(t, end);
                    }
                }
            }
            Cmd::Close(id) => {
                let t = Token(id as usize);
                if let Some(mut p) = self.peers.remove(&t) {
                    p.close_gracefully();
                    let _ = self.poll.registry().deregister(&mut p.tcp);
                    self.left(&p, None);
                }
            }
            Cmd::Attach(id, a) => {
                let t = Token(id as usize);
                match self.peers.get_mut(&t) {
                    Some(p) => {
                        p.phase = Phase::Member { attached: Some(a) };
                        if let Err(end) = self.take(t) {
                            self.end(t, end);
                        }
                    }
                    // It left before its first run.
                    None => {
                        let _ = a.tx.send(Event::Closed(a.h, None));
                    }
                }
            }
            Cmd::Adopt(stream, label) => {
                self.candidate(Conn::Unix(stream), PeerAddr::Channel(label))
            }
            Cmd::Shutdown => return false,
        }
        true
    }

    /// A heartbeat to every member with nothing else waiting.
    fn beat(&mut self) {
        let beat = frame_bytes(&Frame::Heartbeat);
        let members: Vec<Token> = self
            .peers
            .iter()
            .filter(|(_, p)| matches!(p.phase, Phase::Member { .. }) && p.out.is_empty())
            .map(|(t, _)| *t)
            .collect();
        for t in members {
            if let Some(p) = self.peers.get_mut(&t) {
                p.queue(&beat);
            }
            if let Err(end) = self.flush(t) {
                self.end(t, end);
            }
        }
    }

    /// Refuse the candidates past their deadline.
    fn expire(&mut self, now: Instant) {
        let late: Vec<Token> = self
            .peers
            .iter()
            .filter(|(_, p)| matches!(p.phase, Phase::Candidate { deadline } if now >= deadline))
            .map(|(t, _)| *t)
            .collect();
        for t in late {
            let secs = self.settings.handshake_timeout.as_secs_f64();
            self.end(
                t,
                End::Refused(format!("stalled: no join within {secs} s of connecting")),
            );
        }
    }

    fn end(&mut self, t: Token, end: End) {
        let Some(mut p) = self.peers.remove(&t) else {
            return;
        };
        // A refused candidate that speaks TLS hears why (once).
        if let End::Refused(why) = &end {
            if !p.tls.is_handshaking() && !p.told {
                p.say_error(&format!("refused: {why}"), true);
            }
        }
        let _ = p.write();
        let _ = self.poll.registry().deregister(&mut p.tcp);
        match end {
            End::Refused(why) => {
                self.candidates -= 1;
                self.shared.refuse(p.addr.clone(), &why);
            }
            End::Redirected => {
                self.candidates -= 1;
                p.tcp.shutdown();
            }
            End::Closed(why) => self.left(&p, why),
        }
    }

    /// A member's connection is gone: its run hears so, or, before it was attached, its
    /// rank is free again (while the fleet is not yet complete).
    fn left(&mut self, p: &Peer, why: Option<String>) {
        match &p.phase {
            Phase::Member { attached: Some(a) } => {
                let _ = a.tx.send(Event::Closed(a.h, why));
            }
            Phase::Member { attached: None } => {
                let mut roster = self.shared.roster.lock().unwrap_or_else(|p| p.into_inner());
                let id = p.id;
                if !roster.armed {
                    roster.members.retain(|_, m| m.id != id);
                }
                roster.announcing.retain(|_, m| m.id != id);
                drop(roster);
                self.shared.changed.notify_all();
            }
            Phase::Candidate { .. } => self.candidates -= 1,
        }
    }

    fn close_all(&mut self) {
        let tokens: Vec<Token> = self.peers.keys().copied().collect();
        for t in tokens {
            if let Some(mut p) = self.peers.remove(&t) {
                p.close_gracefully();
                let _ = self.poll.registry().deregister(&mut p.tcp);
            }
        }
    }
}

impl Peer {
    /// How its connection's end is told, once what it sent before it was taken.
    fn ended(&self) -> End {
        match self.phase {
            Phase::Candidate { .. } => End::Refused("closed before it joined".into()),
            Phase::Member { .. } => End::Closed(None),
        }
    }

    /// Read what the socket has into `inbuf`, through TLS, up to about `budget` bytes:
    /// whether the budget ran out before the socket was drained.
    fn read(&mut self, budget: usize) -> Result<bool, End> {
        let start = self.inbuf.len();
        let fail = |p: &Peer, e: String| match p.phase {
            Phase::Candidate { .. } => End::Refused(e),
            Phase::Member { .. } => End::Closed(Some(e)),
        };
        loop {
            match self.tls.read_tls(&mut self.tcp) {
                // The end: what came before it is taken first (`ended`).
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(fail(self, format!("read failed: {e}"))),
            }
            if let Err(e) = self.tls.process_new_packets() {
                // Tell the peer (a TLS alert) where it can hear it.
                let _ = self.tls.write_tls(&mut self.tcp);
                return Err(fail(self, format!("no TLS: {e}")));
            }
            let cap = match self.phase {
                Phase::Candidate { .. } => MAGIC.len() + 5 + HELLO_MAX,
                Phase::Member { .. } => usize::MAX,
            };
            let mut chunk = [0u8; 16 << 10];
            loop {
                match self.tls.reader().read(&mut chunk) {
                    Ok(0) => {
                        self.eof = true;
                        return Ok(false);
                    }
                    Ok(n) => {
                        self.inbuf.extend_from_slice(&chunk[..n]);
                        if self.inbuf.len() > cap {
                            return Err(fail(
                                self,
                                format!("oversized: over {cap} bytes before a join"),
                            ));
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(fail(self, format!("TLS: {e}"))),
                }
            }
            if self.inbuf.len() - start >= budget {
                return Ok(true);
            }
        }
    }

    /// A candidate's magic and join frame, once all of it is in.
    fn take_join(&mut self) -> Result<Option<Join>, End> {
        match candidate_join(&self.inbuf) {
            Ok(Some((join, used))) => {
                self.inbuf.drain(..used);
                Ok(Some(join))
            }
            Ok(None) => Ok(None),
            Err(why) => Err(End::Refused(why)),
        }
    }

    fn queue(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// An error frame to a refused candidate, so its agent can say why.
    fn say_error(&mut self, message: &str, input: bool) {
        self.told = true;
        self.queue(&frame_bytes(&Frame::Error(Failure {
            message: message.to_string(),
            input,
        })));
        // Into rustls before its close: nothing written after a close is sent.
        let _ = self.write();
        self.tls.send_close_notify();
    }

    /// Move what waits into rustls and rustls' records to the socket, as far as each
    /// takes them.
    fn write(&mut self) -> Result<(), String> {
        self.feed()?;
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.tcp) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("write failed: {e}")),
            }
            // Room freed in rustls: take more of what waits.
            self.feed()?;
        }
        Ok(())
    }

    /// Hand rustls as much of what waits as its buffer takes.
    fn feed(&mut self) -> Result<(), String> {
        while !self.out.is_empty() {
            match self.tls.writer().write(&self.out) {
                Ok(0) => break,
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) => return Err(format!("TLS: {e}")),
            }
        }
        release(&mut self.out);
        Ok(())
    }

    /// What waits, then TLS' close, as far as the socket takes them now.
    fn close_gracefully(&mut self) {
        let _ = self.write();
        self.tls.send_close_notify();
        let _ = self.write();
        self.tcp.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_peer_buffer_is_given_back_once_it_grew() {
        let mut b: Vec<u8> = Vec::with_capacity(64 << 10);
        b.extend_from_slice(&[1; 100]);
        release(&mut b);
        assert_eq!(b.capacity(), 64 << 10, "kept while it holds bytes");
        b.clear();
        release(&mut b);
        assert_eq!(b.capacity(), 0, "given back once empty");
        let mut small: Vec<u8> = Vec::with_capacity(1 << 10);
        release(&mut small);
        assert_eq!(small.capacity(), 1 << 10, "a small one is kept");
        let mut huge: Vec<u8> = Vec::with_capacity(4 << 20);
        huge.extend_from_slice(&[1; 100]);
        release(&mut huge);
        assert!(huge.capacity() < 1 << 20 && huge.len() == 100);
    }
    use crate::agents::join::creds::{client_config, server_name};
    use crate::agents::protocol::write_frame;

    fn port(expect: u32) -> JoinServer {
        JoinServer::open(
            "127.0.0.1:0",
            None,
            JoinSettings {
                expect,
                host_timeout: Duration::from_secs(30),
                handshake_timeout: Duration::from_secs(10),
                ..Default::default()
            },
        )
        .unwrap()
    }

    /// A member over raw TLS: the stream after its welcome.
    fn join(
        port: &JoinServer,
        rank: u32,
    ) -> rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream> {
        let tcp = std::net::TcpStream::connect(port.local_addr).unwrap();
        let conn = rustls::ClientConnection::new(
            client_config(&port.address.fingerprint).unwrap(),
            server_name(),
        )
        .unwrap();
        let mut s = rustls::StreamOwned::new(conn, tcp);
        s.write_all(MAGIC).unwrap();
        let join = Frame::Join(Box::new(Join {
            hello: Hello::ours(),
            rank: Some(rank),
            size: None,
            rank_from: "test".into(),
            target: None,
            token: port.token().into(),
            relay: None,
        }));
        write_frame(&mut s, &join).unwrap();
        let welcome = crate::agents::protocol::read_frame(&mut s, &FrameLimits::greeting());
        assert!(matches!(welcome, Ok(Some(Frame::Welcome(w))) if w.rank == rank));
        s
    }

    #[test]
    fn what_a_member_sent_before_closing_arrives_before_its_close() {
        let port = port(1);
        let mut agent = join(&port, 0);
        let members = port
            .wait(1, Duration::from_secs(60), &AtomicBool::new(false))
            .unwrap();
        assert_eq!(members[0].rank, 0);
        let (tx, rx) = unbounded();
        let link = port.link(members[0].id);
        link.attach(5, Arc::new(Mutex::new(FrameLimits::greeting())), tx);
        // The launcher speaks after attaching (as it sends a job); the agent answers.
        let mut w = link.writer();
        write_frame(&mut *w, &Frame::Stop).unwrap();
        let limits = FrameLimits::greeting();
        while !matches!(
            crate::agents::protocol::read_frame(&mut agent, &limits),
            Ok(Some(Frame::Stop))
        ) {}
        // A frame and the close in one go, as an agent's last words and exit.
        write_frame(&mut agent, &Frame::Heartbeat).unwrap();
        agent.conn.send_close_notify();
        agent.flush().unwrap();
        drop(agent);
        let first = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(matches!(first, Event::Frame(5, Frame::Heartbeat)));
        let second = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(matches!(second, Event::Closed(5, None)));
        drop(w);
    }

    #[test]
    fn the_launchers_frames_reach_the_member_and_closing_its_writer_ends_it() {
        let port = port(1);
        let mut agent = join(&port, 0);
        let members = port
            .wait(1, Duration::from_secs(60), &AtomicBool::new(false))
            .unwrap();
        let mut w = port.link(members[0].id).writer();
        write_frame(&mut *w, &Frame::Stop).unwrap();
        drop(w);
        let limits = FrameLimits::greeting();
        // Heartbeats may come first; then the stop, then the end.
        loop {
            match crate::agents::protocol::read_frame(&mut agent, &limits) {
                Ok(Some(Frame::Heartbeat)) => continue,
                Ok(Some(Frame::Stop)) => break,
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(
            crate::agents::protocol::read_frame(&mut agent, &limits),
            Ok(None)
        ));
    }

    #[test]
    fn ranks_missing_are_told_as_ranges() {
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), "0-2, 5, 7-8");
        assert_eq!(ranges(&[3]), "3");
        assert_eq!(ranges(&[]), "");
    }
}
