//! `iofleet agent --join`: an agent that connects to its controller's join port
//! instead of being reached over a session. It opens TLS to the address it was given,
//! trusting only the pinned certificate, sends its magic and `Join` (version, rank from
//! its launcher, token), and on the controller's `Welcome` serves the session as any
//! agent does (`agent::serve_greeted`), through a socket pair this thread bridges to
//! the TLS connection.
//!
//! It stops by itself: when the connection closes, and when nothing at all (not even
//! the controller's heartbeat) arrived for the host timeout the welcome named — a
//! controller that froze or was partitioned away. Either way the session's input ends,
//! which stops its run as a closed stdin stops a session's agent, and the process exits.
//! A connection refused or reset before the handshake (the controller not listening
//! yet, or over its candidates) is tried again until `--join-timeout`; a refusal is
//! final.
//!
//! A worker VM joins the same way over its virtio-serial channel instead of TCP
//! (`JoinRequest::channel`, see `vms`): the port is opened once the hypervisor's end is
//! connected, and TLS, the join and the session run over it as over a socket.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use rustls::{ClientConfig, ClientConnection};

use super::address::JoinAddress;
use super::creds::{client_config, server_name};
use super::rank::Placement;
use super::server::{JoinServer, JoinSettings};
use crate::agents::agent::{self, RelayPort};
use crate::agents::protocol::{
    check_hello, read_frame, write_frame, Frame, FrameLimits, Hello, Join, Redirect, RelayListen,
    Welcome, MAGIC,
};
use crate::host::TargetArg;

/// What `iofleet agent --join` was given.
pub struct JoinRequest {
    pub address: JoinAddress,
    pub token: String,
    pub placement: Placement,
    pub target: Option<TargetArg>,
    /// How long to keep trying to reach the controller.
    pub join_timeout: Duration,
    /// A virtio-serial port to join over instead of the address's endpoint (a worker
    /// VM's channel, whose other end the controller holds).
    pub channel: Option<PathBuf>,
    /// `--replay`: run no I/O, send fixed intervals (benchmarks of the controller).
    pub replay: bool,
    /// `--replay-below`: as a relay, send what the hosts below would send if each
    /// replayed, without them (benchmarks of the controller).
    pub replay_below: bool,
}

/// What a join runs over: a TCP connection, or a VM's virtio-serial port.
trait Link: Read + Write + AsFd + Send {
    /// Bound blocking reads (None: unbounded), where the link can.
    fn limit_reads(&self, t: Option<Duration>) -> io::Result<()>;
    /// Bound blocking writes, where the link can.
    fn limit_writes(&self, t: Option<Duration>) -> io::Result<()>;
    /// End it both ways.
    fn end(&self);
}

impl Link for TcpStream {
    fn limit_reads(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)
    }
    fn limit_writes(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_write_timeout(t)
    }
    fn end(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

/// A Unix socket (a channel handed over in-process; the tests' stand-in for a port).
impl Link for UnixStream {
    fn limit_reads(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)
    }
    fn limit_writes(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_write_timeout(t)
    }
    fn end(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

/// A character device (a virtio-serial port): no timeouts of its own; the hypervisor's
/// end going away reads as the end of input.
impl Link for std::fs::File {
    fn limit_reads(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
    fn limit_writes(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
    fn end(&self) {}
}

/// Why a join attempt failed.
enum Attempt {
    /// Worth trying again (not reached, reset before the handshake).
    Again(String),
    /// The controller sends this agent to its relay (`--relay-fanout`), or asks it to
    /// come back once the relay is there.
    Redirect(Redirect),
    /// A refusal or a mismatch: say it and exit with this code.
    Final(String, i32),
}

/// Join, serve the controller, and return the process exit code.
pub fn join(req: JoinRequest) -> i32 {
    match req.channel.clone() {
        Some(port) => join_over(&req, || open_channel(&port)),
        None => join_over(&req, || connect_tcp(&req)),
    }
}

/// Join over what `connect` opens, trying again until the join timeout; then serve.
fn join_over<S: Link>(req: &JoinRequest, connect: impl Fn() -> Result<S, Attempt>) -> i32 {
    let config = match client_config(&req.address.fingerprint) {
        Ok(c) => c,
        Err(e) => return say(&e, 2),
    };
    let deadline = Instant::now() + req.join_timeout;
    let mut wait = Duration::from_millis(50);
    let where_to = match &req.channel {
        Some(p) => p.display().to_string(),
        None => req.address.endpoint.clone(),
    };
    let (link, tls, welcome) = loop {
        let outcome = match connect().and_then(|s| attempt(req, &config, s)) {
            // Below a relay: join it instead, once the controller says where it is.
            Err(Attempt::Redirect(r)) => match join_relay(req, &r) {
                Ok((tcp, tls, welcome)) => {
                    return bridge(tcp, tls, &welcome, None, req.replay, false)
                }
                Err(e) => Err(e),
            },
            other => other,
        };
        match outcome {
            Ok(joined) => break joined,
            Err(Attempt::Final(e, code)) => return say(&e, code),
            Err(Attempt::Redirect(_)) => unreachable!("a redirect is followed above"),
            Err(Attempt::Again(e)) if Instant::now() >= deadline => {
                return say(
                    &format!(
                        "could not join {where_to} within --join-timeout {} s: {e}",
                        req.join_timeout.as_secs_f64()
                    ),
                    1,
                )
            }
            Err(Attempt::Again(_)) => {
                // Spread the retries of a fleet that started at once.
                let jitter = rand::rng().random_range(0..=wait.as_millis() as u64);
                std::thread::sleep(wait + Duration::from_millis(jitter));
                wait = (wait * 2).min(Duration::from_secs(2));
            }
        }
    };
    // A relay opens its own join port for the agents below it and says where, before
    // its first job.
    let relay = if welcome.below.is_empty() {
        None
    } else {
        match open_relay_port(req, &welcome) {
            Ok(port) => Some(port),
            Err(e) => return say(&e, 1),
        }
    };
    bridge(link, tls, &welcome, relay, req.replay, req.replay_below)
}

/// Join the relay `r` names (pinning its certificate) with the same join; while it has
/// not said where it listens, wait as the controller asked and try the controller again.
fn join_relay(
    req: &JoinRequest,
    r: &Redirect,
) -> Result<(TcpStream, ClientConnection, Welcome), Attempt> {
    let (Some(endpoint), Some(fingerprint)) = (&r.endpoint, &r.fingerprint) else {
        // Spread the agents of one relay over the wait, so they do not come back at once.
        let wait = r.after_ms.min(10_000);
        std::thread::sleep(Duration::from_millis(
            wait + rand::rng().random_range(0..=wait),
        ));
        return Err(Attempt::Again(format!(
            "rank {}: its relay has not joined yet",
            r.rank
        )));
    };
    let config = client_config(fingerprint).map_err(|e| Attempt::Final(e, 1))?;
    let relay = JoinRequest {
        address: JoinAddress {
            endpoint: endpoint.clone(),
            fingerprint: fingerprint.clone(),
        },
        token: req.token.clone(),
        placement: req.placement.clone(),
        target: req.target.clone(),
        join_timeout: req.join_timeout,
        channel: None,
        replay: req.replay,
        replay_below: false,
    };
    let tcp = connect_tcp(&relay)?;
    match attempt(&relay, &config, tcp) {
        Err(Attempt::Redirect(_)) => Err(Attempt::Final(
            format!("the relay at {endpoint} sent this agent on again"),
            1,
        )),
        other => other,
    }
}

/// A relay's join port for the agents below it (`welcome.below`): any address, a port
/// the system picks, this command's token; its port and certificate are said to the
/// controller, which sends those agents here.
fn open_relay_port(req: &JoinRequest, welcome: &Welcome) -> Result<RelayPort, String> {
    let first = welcome.below[0];
    let own = welcome.below.contains(&welcome.rank);
    let port = JoinServer::open(
        "0.0.0.0:0",
        None,
        JoinSettings {
            expect: welcome.below.len() as u32,
            first_rank: first,
            fleet_size: req.placement.size,
            host_timeout: Duration::from_millis(welcome.host_timeout_ms),
            handshake_timeout: Duration::from_secs(10),
            token: Some(req.token.clone()),
            ..Default::default()
        },
    )
    .map_err(|e| format!("cannot open the relay's join port: {e}"))?;
    if own {
        // The relay's own share runs as an agent of its own port, in this process,
        // joined over a socket pair: measured, lost and merged as any host below it.
        let adopter = port.adopter();
        let own_req = JoinRequest {
            address: port.address.clone(),
            token: req.token.clone(),
            placement: Placement {
                rank: Some(welcome.rank),
                size: req.placement.size,
                from: "the relay's own rank".into(),
            },
            target: req.target.clone(),
            join_timeout: req.join_timeout,
            channel: None,
            replay: req.replay,
            replay_below: false,
        };
        std::thread::Builder::new()
            .name("relay's own agent".into())
            .spawn(move || join_adopted(&own_req, &adopter))
            .map_err(|e| format!("cannot start the relay's own agent: {e}"))?;
    }
    Ok(RelayPort {
        announce: Join {
            hello: Hello::ours(),
            rank: Some(welcome.rank),
            size: req.placement.size,
            rank_from: req.placement.from.clone(),
            target: req.target.clone(),
            token: req.token.clone(),
            relay: Some(RelayListen {
                port: port.local_addr.port(),
                fingerprint: port.address.fingerprint.clone(),
            }),
        },
        port,
        below: welcome.below.clone(),
        join_timeout: req.join_timeout,
    })
}

/// Join a port of this process through a socket pair whose other end the port takes
/// (`Adopter`), a new pair for each try until the join timeout; then serve.
pub fn join_adopted(req: &JoinRequest, adopter: &super::server::Adopter) -> i32 {
    join_over(req, || {
        adopter
            .connect("this relay's own agent")
            .map_err(|e| Attempt::Again(e.to_string()))
    })
}

/// Join as every agent of `requests`, each on a thread of its own with its own
/// connection (`iofleet agent --agents N`); the process exit code is the worst of
/// theirs (the first nonzero, in rank order).
pub fn join_all(mut requests: Vec<JoinRequest>) -> i32 {
    if requests.len() == 1 {
        return join(requests.remove(0));
    }
    let agents: Vec<_> = requests
        .into_iter()
        .map(|req| {
            std::thread::Builder::new()
                .name("iofleet-agent".into())
                .spawn(move || join(req))
        })
        .collect();
    let mut code = 0;
    for a in agents {
        let c = match a {
            Ok(h) => h.join().unwrap_or(1),
            Err(e) => say(&format!("cannot start an agent's thread: {e}"), 1),
        };
        if code == 0 {
            code = c;
        }
    }
    code
}

fn say(message: &str, code: i32) -> i32 {
    eprintln!("iofleet agent: {message}");
    code
}

/// A TCP connection to the join address.
fn connect_tcp(req: &JoinRequest) -> Result<TcpStream, Attempt> {
    let again = |e: io::Error| Attempt::Again(e.to_string());
    let addrs: Vec<_> = req
        .address
        .endpoint
        .to_socket_addrs()
        .map_err(|e| Attempt::Again(format!("cannot resolve {}: {e}", req.address.endpoint)))?
        .collect();
    let mut last = Attempt::Again(format!("{} resolves to no address", req.address.endpoint));
    for a in &addrs {
        match TcpStream::connect_timeout(a, Duration::from_secs(10)) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => last = again(e),
        }
    }
    Err(last)
}

/// The virtio-serial port, once the hypervisor's end of it is open (until then the
/// port reads as closed and reports a hang-up).
fn open_channel(port: &std::path::Path) -> Result<std::fs::File, Attempt> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(port)
        .map_err(|e| Attempt::Again(format!("{}: {e}", port.display())))?;
    let mut fds = [PollFd::from_borrowed_fd(f.as_fd(), PollFlags::OUT)];
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    let _ = poll(&mut fds, Some(&tick));
    let r = fds[0].revents();
    if r.contains(PollFlags::HUP) || !r.contains(PollFlags::OUT) {
        return Err(Attempt::Again(format!(
            "{}: the hypervisor's end of the channel is not open yet",
            port.display()
        )));
    }
    Ok(f)
}

/// One try over an open link: TLS, join, and the controller's answer.
fn attempt<S: Link>(
    req: &JoinRequest,
    config: &Arc<ClientConfig>,
    mut tcp: S,
) -> Result<(S, ClientConnection, Welcome), Attempt> {
    let again = |e: io::Error| Attempt::Again(e.to_string());
    tcp.limit_reads(Some(Duration::from_secs(30)))
        .map_err(again)?;
    let mut tls = ClientConnection::new(config.clone(), server_name())
        .map_err(|e| Attempt::Final(format!("TLS: {e}"), 1))?;
    let hello = Hello::ours();
    let join = Frame::Join(Box::new(Join {
        hello: hello.clone(),
        rank: req.placement.rank,
        size: req.placement.size,
        rank_from: req.placement.from.clone(),
        target: req.target.clone(),
        token: req.token.clone(),
        relay: None,
    }));
    let answer = {
        let mut s = rustls::Stream::new(&mut tls, &mut tcp);
        let sent = s.write_all(MAGIC).and_then(|()| write_frame(&mut s, &join));
        match sent.and_then(|()| read_frame(&mut s, &FrameLimits::greeting())) {
            Ok(f) => f,
            // A certificate that is not the pinned one is final; a reset before the
            // handshake ended (a controller over its candidates) is worth another try.
            Err(e) if e.to_string().contains("fingerprint") => {
                return Err(Attempt::Final(format!("refused the controller: {e}"), 2))
            }
            Err(e) => return Err(Attempt::Again(e.to_string())),
        }
    };
    match answer {
        Some(Frame::Welcome(w)) => {
            check_hello(&hello, &w.hello, "the controller").map_err(|e| Attempt::Final(e, 2))?;
            tcp.limit_reads(None).map_err(again)?;
            Ok((tcp, tls, w))
        }
        Some(Frame::Redirect(r)) => Err(Attempt::Redirect(r)),
        Some(Frame::Error(f)) => Err(Attempt::Final(
            format!("the controller refused this agent: {}", f.message),
            if f.input { 2 } else { 1 },
        )),
        Some(other) => Err(Attempt::Final(
            format!("the controller answered the join with {other:?}"),
            1,
        )),
        None => Err(Attempt::Again(
            "the controller closed the connection".into(),
        )),
    }
}

/// Serve the session over the joined connection: a thread runs the agent's session on
/// one end of a socket pair, this thread moves bytes between the other end and TLS, and
/// ends the session's input when the controller closes or is silent for the host
/// timeout. The session's exit code.
fn bridge<S: Link>(
    mut tcp: S,
    mut tls: ClientConnection,
    welcome: &Welcome,
    relay: Option<RelayPort>,
    replay: bool,
    replay_below: bool,
) -> i32 {
    if let Some(r) = &relay {
        // Where the agents below join, before anything else of the session.
        let said = write_plain(
            &mut tls,
            &mut tcp,
            &Frame::Join(Box::new(r.announce.clone())),
        );
        if let Err(e) = said {
            return say(
                &format!("cannot tell the controller where this relay listens: {e}"),
                1,
            );
        }
    }
    let (mut mine, session) = match start_session(relay, replay, replay_below) {
        Ok(s) => s,
        Err(e) => return say(&e, 1),
    };
    let silence = Duration::from_millis(welcome.host_timeout_ms.max(1000));
    // A controller that stops reading must not hold this thread in a write forever.
    let _ = tcp.limit_writes(Some(silence));
    let mut heard = Instant::now();
    let mut silent = false;
    let mut buf = vec![0u8; 64 << 10];
    let why = loop {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let mut fds = [
            PollFd::from_borrowed_fd(tcp.as_fd(), PollFlags::IN),
            PollFd::from_borrowed_fd(mine.as_fd(), PollFlags::IN),
        ];
        // Woken by either side, or when the controller's silence would pass the host
        // timeout: no wake-up of its own while traffic flows (a fleet of thousands of
        // agents on a machine pays for every tick).
        let left = silence
            .saturating_sub(heard.elapsed())
            .max(Duration::from_millis(10));
        let tick = Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        if let Err(e) = poll(&mut fds, Some(&tick)) {
            if e != rustix::io::Errno::INTR {
                break format!("poll: {e}");
            }
        }
        let (from_ctrl, from_session) =
            (!fds[0].revents().is_empty(), !fds[1].revents().is_empty());
        if from_ctrl {
            match tls.read_tls(&mut tcp) {
                Ok(0) => break "the controller closed the connection".into(),
                Ok(_) => heard = Instant::now(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break format!("the connection failed: {e}"),
            }
            if let Err(e) = tls.process_new_packets() {
                break format!("TLS: {e}");
            }
            match drain_plaintext(&mut tls, &mut mine, &mut buf) {
                Ok(true) => {}
                Ok(false) => break "the controller ended the session".into(),
                Err(e) => break e,
            }
        }
        if from_session {
            match mine.read(&mut buf) {
                // The session ended (its Done and Stop, or an error it sent).
                Ok(0) => break String::new(),
                Ok(n) => {
                    let sent = tls
                        .writer()
                        .write_all(&buf[..n])
                        .and_then(|()| write_out(&mut tls, &mut tcp));
                    if let Err(e) = sent {
                        break format!("sending to the controller failed: {e}");
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break format!("the session failed: {e}"),
            }
        }
        if heard.elapsed() > silence {
            silent = true;
            break format!(
                "nothing from the controller for {} s (its host timeout): stopping",
                silence.as_secs_f64()
            );
        }
    };
    // End the session's input (its run stops as on a closed stdin) and let it finish.
    let _ = mine.shutdown(Shutdown::Both);
    tls.send_close_notify();
    let _ = write_out(&mut tls, &mut tcp);
    tcp.end();
    if !why.is_empty() {
        eprintln!("iofleet agent: {why}");
    }
    let code = session.join().unwrap_or(1);
    // A controller gone silent is said by the exit code too (whatever the stopped
    // session made of its cut input).
    if silent {
        3
    } else {
        code
    }
}

/// The session of a joined agent, on a thread of its own at one end of a socket pair:
/// the other end, for the bridge, and the thread (its exit code).
fn start_session(
    relay: Option<RelayPort>,
    replay: bool,
    replay_below: bool,
) -> Result<(UnixStream, std::thread::JoinHandle<i32>), String> {
    let (mine, theirs) =
        UnixStream::pair().map_err(|e| format!("cannot make a socket pair: {e}"))?;
    let session_in = theirs
        .try_clone()
        .map_err(|e| format!("cannot clone a socket: {e}"))?;
    let (input, output): (Box<dyn Read + Send>, Box<dyn Write + Send>) =
        (Box::new(session_in), Box::new(theirs));
    let session = std::thread::spawn(move || match relay {
        // A replaying relay's hosts below need not come (benchmarks only).
        Some(_) if replay_below => agent::serve_virtual_relay(input, output),
        Some(r) => agent::serve_relay(input, output, r),
        None if replay => agent::serve_replay(input, output),
        None => agent::serve_greeted(input, output),
    });
    Ok((mine, session))
}

/// Move the plaintext rustls holds to the session; false once the controller closed
/// its TLS session.
fn drain_plaintext(
    tls: &mut ClientConnection,
    to: &mut UnixStream,
    buf: &mut [u8],
) -> Result<bool, String> {
    loop {
        match tls.reader().read(buf) {
            Ok(0) => return Ok(false),
            Ok(n) => to
                .write_all(&buf[..n])
                .map_err(|e| format!("the session failed: {e}"))?,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) => return Err(format!("TLS: {e}")),
        }
    }
}

/// One frame through TLS, written out at once.
fn write_plain(tls: &mut ClientConnection, tcp: &mut impl Write, f: &Frame) -> io::Result<()> {
    write_frame(&mut tls.writer(), f)?;
    write_out(tls, tcp)
}

/// Write every TLS record waiting (blocking, bounded by the socket's write timeout).
fn write_out(tls: &mut ClientConnection, tcp: &mut impl Write) -> io::Result<()> {
    while tls.wants_write() {
        tls.write_tls(tcp)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::join::creds::Credentials;
    use crate::agents::protocol::take_join;

    /// A controller of another protocol version: it welcomes whatever joins, naming
    /// `protocol`.
    fn other_controller(protocol: u32) -> (JoinAddress, String) {
        let creds = Credentials::generate().unwrap();
        let config = creds.server_config().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = JoinAddress {
            endpoint: listener.local_addr().unwrap().to_string(),
            fingerprint: creds.fingerprint.clone(),
        };
        let token = creds.token.clone();
        std::thread::spawn(move || {
            let (tcp, _) = listener.accept().unwrap();
            let conn = rustls::ServerConnection::new(config).unwrap();
            let mut s = rustls::StreamOwned::new(conn, tcp);
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let join = loop {
                let n = s.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
                if let Ok(Some((j, _))) = take_join(&buf[MAGIC.len().min(buf.len())..]) {
                    break j;
                }
            };
            let mut hello = Hello::ours();
            hello.protocol = protocol;
            hello.version = "9.9.9".into();
            let welcome = Frame::Welcome(Welcome {
                hello,
                rank: join.rank.unwrap_or(0),
                host_timeout_ms: 30_000,
                heartbeat_ms: 1_000,
                below: Vec::new(),
            });
            write_frame(&mut s, &welcome).unwrap();
            // Hold the connection until the agent has read the welcome and gone.
            let _ = s.read(&mut chunk);
        });
        (address, token)
    }

    /// A channel the controller opened itself (as it will a worker VM's) and handed to its
    /// join port: the agent at the other end joins through it as over TCP, and is a
    /// member known by the channel's name.
    #[test]
    fn an_agent_joins_over_a_channel_the_port_adopted() {
        use crate::agents::join::server::{JoinServer, JoinSettings, PeerAddr};
        let port = JoinServer::open(
            "127.0.0.1:0",
            None,
            JoinSettings {
                expect: 1,
                host_timeout: Duration::from_secs(30),
                handshake_timeout: Duration::from_secs(10),
                ..Default::default()
            },
        )
        .unwrap();
        let (theirs, mine) = UnixStream::pair().unwrap();
        port.adopt(theirs, "channel of iofleet-t-0").unwrap();
        let req = JoinRequest {
            address: port.address.clone(),
            token: port.token().to_string(),
            placement: Placement {
                rank: Some(0),
                size: None,
                from: "the VM's index".into(),
            },
            target: None,
            join_timeout: Duration::from_secs(10),
            channel: None,
            replay: false,
            replay_below: false,
        };
        let config = client_config(&port.address.fingerprint).unwrap();
        let joined = std::thread::spawn(move || match attempt(&req, &config, mine) {
            Ok((link, _, welcome)) => Ok((link, welcome.rank)),
            Err(Attempt::Again(e) | Attempt::Final(e, _)) => Err(e),
            Err(Attempt::Redirect(r)) => Err(format!("sent on: {r:?}")),
        });
        let stop = std::sync::atomic::AtomicBool::new(false);
        let members = port.wait(1, Duration::from_secs(10), &stop).unwrap();
        assert_eq!(members.len(), 1);
        assert_eq!(
            members[0].peer,
            PeerAddr::Channel("channel of iofleet-t-0".into())
        );
        assert_eq!(members[0].rank_from, "the VM's index");
        let (_link, rank) = joined.join().unwrap().unwrap();
        assert_eq!(rank, 0);
    }

    #[test]
    fn an_agent_refuses_a_controller_of_another_protocol_naming_both_versions() {
        let (address, token) = other_controller(99);
        let config = client_config(&address.fingerprint).unwrap();
        let req = JoinRequest {
            address,
            token,
            placement: Placement {
                rank: Some(0),
                size: None,
                from: "--rank".into(),
            },
            target: None,
            join_timeout: Duration::from_secs(30),
            channel: None,
            replay: false,
            replay_below: false,
        };
        match connect_tcp(&req).and_then(|s| attempt(&req, &config, s)) {
            Err(Attempt::Final(e, code)) => {
                assert_eq!(code, 2);
                assert!(
                    e.contains("protocol version mismatch with the controller"),
                    "{e}"
                );
                assert!(e.contains("iofleet 9.9.9 (agent protocol 99)"), "{e}");
                assert!(
                    e.contains(&format!(
                        "agent protocol {}",
                        crate::agents::protocol::PROTOCOL_VERSION
                    )),
                    "{e}"
                );
            }
            Err(Attempt::Again(e)) => panic!("tried again: {e}"),
            Err(Attempt::Redirect(r)) => panic!("sent on: {r:?}"),
            Ok(_) => panic!("joined a controller of protocol 99"),
        }
    }
}
