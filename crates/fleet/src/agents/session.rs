//! One session to a host's agent, as the agents' launcher (`super`) opens and uses it:
//! the start script run over the host's transport (the binary checked, and sent from one
//! buffer when the host lacks it, at most `--max-uploads` hosts at a time), the
//! greeting and version check, the clock offset from round trips, a reader thread per
//! session that turns its frames into events within the limits of the session's phase,
//! writing frames to it, and ending a frozen agent through a second connection. What to
//! send and when is the launcher's; the scripts themselves are `scripts`'.

use std::io::{BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use sha2::{Digest, Sha256};

pub(super) use super::event::Event;
use super::join::JoinedLink;
use super::protocol::{
    check_hello, mono_ns, read_frame, read_frame_within, read_magic_or, write_frame, Clock,
    Failure, Frame, FrameLimits, Hello,
};
use super::scripts::{kill_script, launch_script, start_script, Launch, NEEDS_COPY};
use super::transport::{self, shell_quote, Transport};
use crate::error::FleetError;
use crate::host::HostSpec;

/// Clock round trips per host; the one with the shortest round trip sets the offset.
pub(super) const CLOCK_SAMPLES: u32 = 8;

/// Where frames to an agent are written: a session's stdin, or a joined agent's
/// connection (`JoinedLink::writer`). Taking it out closes it.
pub(super) type Stdin = Arc<Mutex<Option<Box<dyn Write + Send>>>>;

/// How the controller holds one agent.
pub(super) enum Via {
    /// A session it started over the host's transport.
    Session {
        transport: Arc<dyn Transport>,
        child: Child,
        /// Until its reader thread takes it.
        stdout: Option<BufReader<std::process::ChildStdout>>,
        /// How the agent was started, so that it can be found again on its host.
        launch: Launch,
    },
    /// An agent that joined the command's join port: the port's event loop reads its
    /// frames.
    Joined(JoinedLink),
}

/// An open session to one host's agent.
pub(super) struct Conn {
    pub(super) name: String,
    pub(super) via: Via,
    pub(super) stdin: Stdin,
    pub(super) stderr: Arc<Mutex<String>>,
    /// Set once the session's stderr closed (all of it is in `stderr`).
    pub(super) stderr_closed: Arc<AtomicBool>,
    /// What frames from the agent may hold: the greeting's, then each job's, set just
    /// before the job is sent (its reader asks at every frame's header).
    pub(super) limits: Arc<Mutex<FrameLimits>>,
    /// Clock offset: agent clock − controller clock, ns.
    pub(super) offset_ns: i64,
    pub(super) rtt_ns: u64,
}

impl Conn {
    /// A joined agent's connection, held by the join port (`link`): greeted, and
    /// version-checked, when it joined. Its clock offset is measured before each start
    /// (`refine_clocks`).
    pub(super) fn joined(name: &str, link: JoinedLink) -> Conn {
        Conn {
            name: name.to_string(),
            stdin: Arc::new(Mutex::new(Some(link.writer()))),
            via: Via::Joined(link),
            stderr: Arc::new(Mutex::new(String::new())),
            stderr_closed: Arc::new(AtomicBool::new(true)),
            limits: Arc::new(Mutex::new(FrameLimits::greeting())),
            offset_ns: 0,
            rtt_ns: u64::MAX,
        }
    }

    /// Kill and reap a session's process (a joined agent has none here).
    pub(super) fn end_process(&mut self) {
        if let Via::Session { child, .. } = &mut self.via {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the agent's process has exited (a joined agent's is not ours to wait
    /// for: it stops by itself once its connection closes).
    pub(super) fn exited(&mut self) -> bool {
        match &mut self.via {
            Via::Session { child, .. } => matches!(child.try_wait(), Ok(Some(_))),
            Via::Joined(_) => true,
        }
    }

    /// Route the agent's frames to `tx` as host `h`'s events, for the whole session: a
    /// reader thread on a session's stdout, the join port's loop for a joined agent.
    pub(super) fn spawn_reader(&mut self, h: usize, tx: Sender<Event>) {
        match &mut self.via {
            Via::Session { stdout, .. } => {
                let stdout = stdout.take().expect("set by connect");
                spawn_reader(h, stdout, self.limits.clone(), self.stdin.clone(), tx);
            }
            Via::Joined(link) => link.attach(h, self.limits.clone(), tx),
        }
    }

    pub(super) fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .trim()
            .to_string()
    }
}

pub(super) fn host_err(host: &HostSpec, what: impl std::fmt::Display) -> FleetError {
    FleetError::Setup(format!("host {} ({}): {what}", host.name, host.destination))
}

/// What an agent's `Error` frame means: the user's input (exit 2), or a failure on the
/// host.
pub(super) fn agent_failure(host: &HostSpec, f: Failure) -> FleetError {
    if f.input {
        FleetError::Input(format!("host {}: {}", host.name, f.message))
    } else {
        host_err(host, f.message)
    }
}

/// The offset of an agent's clock from the controller's, NTP style: each round trip
/// (sent at `t0`, the agent's clock read `agent`, received at `t1`) says
/// offset = agent − (t0 + t1) / 2, wrong by at most half the round trip; the round trip
/// with the least delay decides.
#[derive(Debug, Default)]
pub(super) struct ClockFit {
    /// (round trip, offset) of the best round trip so far, ns.
    pub(super) best: Option<(u64, i64)>,
}

impl ClockFit {
    pub(super) fn add(&mut self, t0: u64, agent: u64, t1: u64) {
        let rtt = t1.saturating_sub(t0);
        let offset = (agent as i128 - (t0 as i128 + t1 as i128) / 2) as i64;
        if self.best.is_none_or(|(r, _)| rtt < r) {
            self.best = Some((rtt, offset));
        }
    }
}

/// `CLOCK_SAMPLES` clock round trips with an agent that has said hello: (round trip,
/// offset) of the best, ns; `now` is the controller's clock.
pub(super) fn exchange_clock(
    from_agent: &mut impl Read,
    send: impl Fn(&Frame) -> std::io::Result<()>,
    now: impl Fn() -> u64,
) -> Result<(u64, i64), String> {
    let mut fit = ClockFit::default();
    for seq in 0..CLOCK_SAMPLES {
        let t0 = now();
        if send(&Frame::Ping(Clock { seq, t_ns: t0 })).is_err() {
            return Err("the agent closed the session".into());
        }
        match read_frame(from_agent, &FrameLimits::greeting()) {
            Ok(Some(Frame::Pong(c))) if c.seq == seq => fit.add(t0, c.t_ns, now()),
            Err(e) => return Err(format!("clock exchange failed: {e}")),
            other => return Err(format!("clock exchange failed ({other:?})")),
        }
    }
    Ok(fit.best.expect("at least one sample"))
}

/// This executable as every host that needs a copy gets it: read and hashed once, on
/// the first host's need, and streamed to each host from that one buffer, at most
/// `max_uploads` hosts at a time.
pub(super) struct Shipment {
    pub(super) exe: std::path::PathBuf,
    /// The bytes and their SHA-256 (hex), or why they could not be read.
    pub(super) image: OnceLock<Result<(Vec<u8>, String), String>>,
    pub(super) uploads: UploadSlots,
}

impl Shipment {
    pub(super) fn new(exe: std::path::PathBuf, max_uploads: u32) -> Self {
        Shipment {
            exe,
            image: OnceLock::new(),
            uploads: UploadSlots::new(max_uploads),
        }
    }

    /// The executable's bytes and SHA-256 (hex); the first caller reads them, any other
    /// waits for that one read.
    pub(super) fn image(&self) -> Result<(&[u8], &str), FleetError> {
        let image = self.image.get_or_init(|| {
            let bytes = std::fs::read(&self.exe)
                .map_err(|e| format!("cannot read {}: {e}", self.exe.display()))?;
            let hex = sha256_hex(&bytes);
            Ok((bytes, hex))
        });
        match image {
            Ok((bytes, hex)) => Ok((bytes, hex)),
            Err(e) => Err(FleetError::Setup(e.clone())),
        }
    }
}

/// SHA-256 in lower-case hex, as `sha256sum` prints it.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    super::join::creds::hex(&Sha256::digest(bytes))
}

/// A counting semaphore: at most `n` uploads at a time; the others wait their turn.
pub(super) struct UploadSlots {
    pub(super) free: Mutex<u32>,
    freed: std::sync::Condvar,
}

impl UploadSlots {
    pub(super) fn new(n: u32) -> Self {
        UploadSlots {
            free: Mutex::new(n.max(1)),
            freed: std::sync::Condvar::new(),
        }
    }

    /// Wait for a free slot; it is given back when the guard drops.
    pub(super) fn take(&self) -> UploadSlot<'_> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        UploadSlot(self)
    }
}

pub(super) struct UploadSlot<'a>(&'a UploadSlots);

impl Drop for UploadSlot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// Run `script` on the host with its output piped back, and read up to the agent's
/// greeting: the session, its stdout, and whether the agent greeted (false: the script
/// said [`NEEDS_COPY`] and waits for the copy).
#[allow(clippy::type_complexity)]
pub(super) fn open_session(
    host: &HostSpec,
    transport: &Arc<dyn Transport>,
    script: &str,
    launch: Launch,
) -> Result<(Conn, BufReader<std::process::ChildStdout>, bool), FleetError> {
    // `exec`: the agent replaces the shell, so its pid is the one recorded. Its own
    // process group: a terminal's Ctrl-C reaches the controller, which stops the agents
    // in order, and not the sessions, whose death would read as lost hosts.
    let mut child = transport
        .shell(script)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| host_err(host, format!("cannot start the agent: {e}")))?;
    let stderr = Arc::new(Mutex::new(String::new()));
    let stderr_closed = Arc::new(AtomicBool::new(false));
    {
        let mut pipe = child.stderr.take().expect("piped");
        let (buf, closed) = (stderr.clone(), stderr_closed.clone());
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            buf.lock().unwrap_or_else(|p| p.into_inner()).push_str(&s);
            closed.store(true, Ordering::SeqCst);
        });
    }
    let stdin: Stdin = Arc::new(Mutex::new(
        child
            .stdin
            .take()
            .map(|s| Box::new(s) as Box<dyn Write + Send>),
    ));
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut conn = Conn {
        name: host.name.clone(),
        via: Via::Session {
            transport: transport.clone(),
            child,
            stdout: None,
            launch,
        },
        stdin,
        stderr,
        stderr_closed,
        limits: Arc::new(Mutex::new(FrameLimits::greeting())),
        offset_ns: 0,
        rtt_ns: 0,
    };
    match read_magic_or(&mut stdout, NEEDS_COPY) {
        Ok(greeted) => Ok((conn, stdout, greeted)),
        Err(e) => Err(ended(
            host,
            &mut conn,
            format!("the agent did not start ({e})"),
        )),
    }
}

/// End a session that failed: kill it, and say why with what the host wrote on stderr.
pub(super) fn ended(host: &HostSpec, conn: &mut Conn, what: String) -> FleetError {
    conn.end_process();
    // The stderr reader ends when the session's stderr closes (a proxy process may hold
    // it open a little longer: a moment, not a join).
    let deadline = Instant::now() + Duration::from_millis(500);
    while !conn.stderr_closed.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let err = conn.stderr_text();
    let why = if err.is_empty() {
        String::new()
    } else {
        format!(": {err}")
    };
    host_err(host, format!("{what}{why}"))
}

/// The host's start script asked for the copy: send it on the session from `ship`'s one
/// buffer (at most `max_uploads` hosts at a time), then read the greeting of the agent
/// the script starts once the copy verifies.
pub(super) fn send_copy(
    host: &HostSpec,
    conn: &mut Conn,
    stdout: &mut BufReader<std::process::ChildStdout>,
    ship: &Shipment,
) -> Result<(), FleetError> {
    let (bytes, _) = ship.image()?;
    let turn = ship.uploads.take();
    let written = {
        let mut stdin = conn.stdin.lock().unwrap_or_else(|p| p.into_inner());
        match stdin.as_mut() {
            Some(w) => w.write_all(bytes).and_then(|()| w.flush()),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    };
    drop(turn);
    if let Err(e) = written {
        return Err(ended(host, conn, format!("copying iofleet failed ({e})")));
    }
    match read_magic_or(stdout, NEEDS_COPY) {
        Ok(true) => Ok(()),
        Ok(false) => Err(ended(
            host,
            conn,
            "the host asked for the copy twice".into(),
        )),
        Err(e) => Err(ended(
            host,
            conn,
            format!("the copy of iofleet sent did not start ({e})"),
        )),
    }
}

/// Start the agent on `host` (sending it a copy of iofleet if it has none), check
/// versions, measure the clock offset. Jobs are sent later (`send_jobs`), one per run
/// of the command.
pub(super) fn connect(host: &HostSpec, ship: &Shipment) -> Result<Conn, FleetError> {
    let transport: Arc<dyn Transport> = Arc::from(transport::for_host(host)?);
    let (script, launch) = match &host.iofleet_path {
        Some(p) => {
            let launch = Launch::new(shell_quote(p));
            (launch_script(&launch), launch)
        }
        None if transport.shares_binary() => {
            let launch = Launch::new(shell_quote(&ship.exe.to_string_lossy()));
            (launch_script(&launch), launch)
        }
        None => {
            let (bytes, digest) = ship.image()?;
            start_script(digest, bytes.len())
        }
    };
    let (mut conn, mut stdout, greeted) = open_session(host, &transport, &script, launch)?;
    if !greeted {
        send_copy(host, &mut conn, &mut stdout, ship)?;
    }
    let theirs = match read_frame(&mut stdout, &FrameLimits::greeting()) {
        Ok(Some(Frame::Hello(h))) => h,
        Err(e) => {
            return Err(ended(
                host,
                &mut conn,
                format!("no hello from the agent: {e}"),
            ))
        }
        other => {
            return Err(ended(
                host,
                &mut conn,
                format!("no hello from the agent ({other:?})"),
            ))
        }
    };
    let ours = Hello::ours();
    if let Err(e) = check_hello(&ours, &theirs, &format!("host {}", host.name)) {
        conn.end_process();
        return Err(FleetError::Input(e));
    }
    let send = |conn: &Conn, f: &Frame| send_to(&conn.stdin, f);
    if send(&conn, &Frame::Hello(ours)).is_err() {
        return Err(ended(
            host,
            &mut conn,
            "the agent closed the session".into(),
        ));
    }
    let (rtt, offset) = match exchange_clock(&mut stdout, |f| send(&conn, f), mono_ns) {
        Ok(fit) => fit,
        Err(e) => return Err(ended(host, &mut conn, e)),
    };
    conn.rtt_ns = rtt;
    conn.offset_ns = offset;
    if let Via::Session { stdout: slot, .. } = &mut conn.via {
        *slot = Some(stdout);
    }
    Ok(conn)
}

/// Read session `h`'s frames until it ends, for the whole session (every run of the
/// command), each within the limits its job set (`limits`, asked once the frame's
/// header is in). A frame the reader cannot accept (over its limit, or not a frame)
/// ends the connection: its stdin is closed and its stdout dropped, so the agent stops
/// and its session closes, and the reader says why.
pub(super) fn spawn_reader(
    h: usize,
    mut r: BufReader<std::process::ChildStdout>,
    limits: Arc<Mutex<FrameLimits>>,
    stdin: Stdin,
    tx: Sender<Event>,
) {
    std::thread::spawn(move || loop {
        let now = || *limits.lock().unwrap_or_else(|p| p.into_inner());
        match read_frame_within(&mut r, now) {
            Ok(Some(Frame::Pong(c))) => {
                if tx.send(Event::Pong(h, c, mono_ns())).is_err() {
                    return;
                }
            }
            Ok(Some(f)) => {
                if tx.send(Event::Frame(h, f)).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                stdin.lock().unwrap_or_else(|p| p.into_inner()).take();
                drop(r);
                let _ = tx.send(Event::Closed(h, Some(e.to_string())));
                return;
            }
            // The end of the stream, between frames or inside one (the session died).
            Ok(None) | Err(_) => {
                let _ = tx.send(Event::Closed(h, None));
                return;
            }
        }
    });
}

/// How a session ended, to follow "its agent's connection": `was ended: REASON` when
/// the controller ended it over a frame it could not accept, else `closed`, with what
/// the host wrote on stderr (`stderr`, asked only then) in parentheses.
pub(super) fn closing(reason: Option<String>, stderr: impl FnOnce() -> String) -> String {
    match reason {
        Some(r) => format!("was ended: {r}"),
        None => match stderr() {
            err if err.is_empty() => "closed".into(),
            err => format!("closed ({err})"),
        },
    }
}

/// Write one frame to an agent (an error once its stdin has been closed).
pub(super) fn send_to(stdin: &Stdin, f: &Frame) -> std::io::Result<()> {
    let mut w = stdin.lock().unwrap_or_else(|p| p.into_inner());
    match w.as_mut() {
        Some(pipe) => write_frame(pipe, f),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "closed",
        )),
    }
}

/// Kill an agent through a second connection (a frozen agent reads no Stop), by the
/// process its start script recorded and the host checked (`kill_script`), then its
/// session. Bounded by the transport's own connect timeout.
pub(super) fn kill_remote(conn: &mut Conn) -> Option<JoinHandle<()>> {
    conn.stdin.lock().unwrap_or_else(|p| p.into_inner()).take();
    // A joined agent's connection is closed with its writer; the agent stops by itself
    // then, or, if frozen, once it runs again.
    let Via::Session {
        transport,
        child,
        launch,
        ..
    } = &mut conn.via
    else {
        return None;
    };
    let script = kill_script(launch);
    let t = transport.clone();
    let handle = std::thread::spawn(move || {
        let _ = t
            .shell(&script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    });
    let _ = child.kill();
    Some(handle)
}
