//! The small HTTP/1.1 server under `--metrics-listen` (and its `--ui` live view) and
//! `iofleet serve`: one thread accepts, each connection is answered on a thread of its
//! own (so a slow client never holds up another), one request per connection
//! (`Connection: close`); a handler may keep its connection as a stream (Server-Sent
//! Events). Request heads are parsed by `httparse` and query strings decoded by
//! `percent-encoding`. It knows no paths and no policy: a `Gate` passed in (the
//! listener's `crate::web::access::Access`) admits or answers each request, and routing is
//! the caller's handler. No TLS, no keep-alive, no request bodies: the two servers
//! answer `GET` and `HEAD` from a browser or a scraper (405 for other methods), not a
//! web application.
//!
//! What one client can hold is bounded per stage (`Limits`), so no kind of client locks
//! out another: a connection reading its head has one deadline for the whole head (not
//! a timeout that restarts with every byte), and when all head slots are taken the
//! connection that has been reading longest is dropped for the new one; a request then
//! holds a page slot while its handler runs and its reply is written (under one write
//! deadline), and a stream moves to a stream slot of its own. Trickling clients, page
//! requests and open streams therefore never take each other's slots: a `/metrics`
//! scrape is answered however many live views are open or clients trickle.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest request head read before answering 400.
const MAX_HEAD: usize = 16 * 1024;

/// How many connections each stage holds at once, and its deadlines.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections reading their request head; one more drops the longest reading.
    pub heads: usize,
    /// Requests being answered with a page; one more gets 503.
    pub pages: usize,
    /// Streams held open (live views); one more gets 503.
    pub streams: usize,
    /// The whole request head must arrive within this time of the connection's accept.
    pub head_deadline: Duration,
    /// A page's whole reply must be written within this time.
    pub write_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            heads: 128,
            pages: 32,
            streams: 64,
            head_deadline: Duration::from_secs(5),
            write_deadline: Duration::from_secs(30),
        }
    }
}

/// One request as the handlers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    /// The path without its query string, as sent (not decoded).
    pub path: String,
    /// The raw query string (after `?`, before `#`), possibly empty.
    pub query: String,
    /// `Accept` headers, joined by commas; None when there was none.
    pub accept: Option<String>,
    /// Every header as sent, names in lower case, values lossily UTF-8.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// A GET request for `target` (path and query) with `headers`.
    #[cfg(test)]
    pub fn get(target: &str, headers: &[(&str, &str)]) -> Request {
        let headers = headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
            .collect();
        Request::new("GET", target, headers)
    }

    fn new(method: &str, target: &str, headers: Vec<(String, String)>) -> Request {
        let target = target.split('#').next().unwrap_or("");
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let accept: Vec<&str> = headers
            .iter()
            .filter(|(k, _)| k == "accept")
            .map(|(_, v)| v.as_str())
            .collect();
        Request {
            method: method.to_string(),
            path: path.to_string(),
            query: query.to_string(),
            accept: (!accept.is_empty()).then(|| accept.join(",")),
            headers,
        }
    }

    /// The values of the headers called `name` (any case), in order.
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The query's `key=value` pairs in order, `+` and `%XX` decoded (as HTML forms
    /// send them); a pair without `=` has an empty value.
    pub fn params(&self) -> Vec<(String, String)> {
        self.query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect()
    }
}

/// A path segment: `%XX` decoded (not `+`), invalid UTF-8 replaced.
pub fn decode_path(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// A form-encoded component: `+` is a space, `%XX` a byte, invalid UTF-8 replaced.
pub fn decode(s: &str) -> String {
    decode_path(&s.replace('+', " "))
}

/// One HTTP answer.
#[derive(Debug, PartialEq)]
pub struct Reply {
    pub status: &'static str,
    pub content_type: &'static str,
    /// Extra header lines, each ending in CRLF.
    pub headers: Cow<'static, str>,
    pub body: String,
}

impl Reply {
    /// A plain-text answer with `headers`, never sniffed as anything else.
    pub fn plain(status: &'static str, headers: &str, body: &str) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            headers: format!("{headers}X-Content-Type-Options: nosniff\r\n").into(),
            body: body.into(),
        }
    }
}

/// What a handler answers: a whole page, or a stream that writes its own status line
/// and headers and keeps the connection (Server-Sent Events) until it returns.
pub enum Answer {
    Page(Reply),
    Stream(Box<dyn FnOnce(TcpStream) -> std::io::Result<()> + Send>),
}

impl From<Reply> for Answer {
    fn from(r: Reply) -> Answer {
        Answer::Page(r)
    }
}

/// Who may be answered: a request the gate refuses gets the gate's reply instead of
/// the handler's.
pub trait Gate: Send + Sync + 'static {
    fn admit(&self, req: &Request) -> Result<(), Reply>;
}

/// Connections still reading their heads, oldest first, each with a handle that can
/// drop it.
#[derive(Default)]
struct Heads {
    next: u64,
    open: VecDeque<(u64, TcpStream)>,
}

/// Slots of one kind, taken and given back by `Slot`.
struct Slots {
    used: AtomicUsize,
    max: usize,
}

struct Slot(Arc<Slots>);

impl Slots {
    fn take(slots: &Arc<Slots>) -> Option<Slot> {
        if slots.used.fetch_add(1, Ordering::AcqRel) >= slots.max {
            slots.used.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Slot(slots.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The state every connection thread of one listener shares.
struct Server<G, H> {
    gate: G,
    handler: H,
    limits: Limits,
    heads: Mutex<Heads>,
    pages: Arc<Slots>,
    streams: Arc<Slots>,
}

/// Answer every connection on `listener`: `gate` admits, `handler` answers, each from
/// a thread of its own, within `limits`; returns at once with the accepting thread.
pub fn serve<G, H, A>(
    listener: TcpListener,
    gate: G,
    limits: Limits,
    handler: H,
) -> std::thread::JoinHandle<()>
where
    G: Gate,
    H: Fn(&Request) -> A + Send + Sync + 'static,
    A: Into<Answer>,
{
    let server = Arc::new(Server {
        gate,
        handler,
        limits,
        heads: Mutex::new(Heads::default()),
        pages: Arc::new(Slots {
            used: AtomicUsize::new(0),
            max: limits.pages,
        }),
        streams: Arc::new(Slots {
            used: AtomicUsize::new(0),
            max: limits.streams,
        }),
    });
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let stream = match stream {
                Ok(s) => s,
                // Out of file descriptors or the like: give closing connections a
                // moment rather than spin.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            let Some(id) = server.reading(&stream) else {
                continue;
            };
            let s = server.clone();
            // A thread that cannot be made drops its connection (closed on return).
            let _ = std::thread::Builder::new().spawn(move || {
                s.connection(stream, id);
            });
        }
    })
}

impl<G, H, A> Server<G, H>
where
    G: Gate,
    H: Fn(&Request) -> A + Send + Sync + 'static,
    A: Into<Answer>,
{
    /// Count `stream` among the connections reading their heads (dropping the one that
    /// has been reading longest when all slots are taken); None if it cannot be.
    fn reading(&self, stream: &TcpStream) -> Option<u64> {
        let handle = stream.try_clone().ok()?;
        let mut heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        while heads.open.len() >= self.limits.heads.max(1) {
            if let Some((_, oldest)) = heads.open.pop_front() {
                // Its thread's read returns at once and the thread ends.
                let _ = oldest.shutdown(Shutdown::Both);
            }
        }
        let id = heads.next;
        heads.next += 1;
        heads.open.push_back((id, handle));
        Some(id)
    }

    fn done_reading(&self, id: u64) {
        let mut heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        heads.open.retain(|(i, _)| *i != id);
    }

    /// One connection: its head, the gate, then a page or a stream in a slot of its kind.
    fn connection(&self, mut s: TcpStream, id: u64) {
        let head = read_request(&mut s, self.limits.head_deadline);
        self.done_reading(id);
        let deadline = Instant::now() + self.limits.write_deadline;
        let reply = match head {
            Head::Closed => return,
            Head::Late => Reply::plain(
                "408 Request Timeout",
                "",
                "the request head did not arrive in time\n",
            ),
            Head::Bad => Reply::plain("400 Bad Request", "", "bad request\n"),
            Head::Request(req) => match self.answer(&req) {
                Ok((Answer::Page(reply), _page_slot)) => {
                    // The page slot is held until the reply is written (or the write
                    // deadline passes): slow readers are bounded like the rest.
                    let _ = write_reply(&mut s, &reply, req.method == "HEAD", deadline);
                    return;
                }
                Ok((Answer::Stream(stream), page_slot)) => {
                    drop(page_slot);
                    match Slots::take(&self.streams) {
                        Some(_slot) => {
                            let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
                            let _ = stream(s);
                            return;
                        }
                        None => busy("too many open streams"),
                    }
                }
                Err(reply) => reply,
            },
        };
        let _ = write_reply(&mut s, &reply, false, deadline);
    }

    /// The gate's verdict, the method, then the handler's answer in a page slot, with the
    /// slot: a page keeps it while its reply is written, a stream gives it back before it
    /// takes a stream slot.
    fn answer(&self, req: &Request) -> Result<(Answer, Slot), Reply> {
        self.gate.admit(req)?;
        if req.method != "GET" && req.method != "HEAD" {
            return Err(Reply::plain(
                "405 Method Not Allowed",
                "Allow: GET, HEAD\r\n",
                "only GET and HEAD are served\n",
            ));
        }
        let slot = Slots::take(&self.pages).ok_or_else(|| busy("too many requests at once"))?;
        Ok(((self.handler)(req).into(), slot))
    }
}

fn busy(what: &str) -> Reply {
    Reply::plain(
        "503 Service Unavailable",
        "Retry-After: 5\r\n",
        &format!("{what}\n"),
    )
}

/// What came of reading a request head.
enum Head {
    Request(Request),
    /// The peer closed (or was dropped) before a whole head.
    Closed,
    /// The deadline passed first.
    Late,
    /// Not HTTP, or longer than `MAX_HEAD`.
    Bad,
}

/// The request head on `s`, all of it within `limit` of now.
fn read_request(s: &mut TcpStream, limit: Duration) -> Head {
    let deadline = Instant::now() + limit;
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
            return Head::Late;
        }
        let n = match s.read(&mut chunk) {
            Ok(0) => return Head::Closed,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Head::Late
            }
            Err(_) => return Head::Closed,
        };
        head.extend_from_slice(&chunk[..n]);
        match parse_head(&head) {
            Parsed::Request(r) => return Head::Request(r),
            Parsed::Partial => continue,
            Parsed::Bad => return Head::Bad,
        }
    }
}

/// What the bytes of a request head read so far make.
#[derive(Debug, PartialEq)]
pub enum Parsed {
    /// A whole head.
    Request(Request),
    /// A head not yet whole, and under `MAX_HEAD`: read on.
    Partial,
    /// Not HTTP, more than 64 headers, or `MAX_HEAD` without a whole head.
    Bad,
}

/// The request in `head`, the bytes read so far (`httparse` parses; this names what the
/// handlers see). Pure: the fuzz target and the property tests call it on any bytes.
pub fn parse_head(head: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {
            let headers = req
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect();
            Parsed::Request(Request::new(
                req.method.unwrap_or(""),
                req.path.unwrap_or(""),
                headers,
            ))
        }
        Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => Parsed::Partial,
        _ => Parsed::Bad,
    }
}

/// Whether the peer of a stream has closed its side (or the connection failed): a
/// read that does not wait finds the end of the stream. Bytes it sent are discarded.
pub fn peer_closed(s: &TcpStream) -> bool {
    if s.set_nonblocking(true).is_err() {
        return true;
    }
    let mut buf = [0u8; 512];
    let mut r = s;
    let closed = loop {
        match r.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => break e.kind() != ErrorKind::WouldBlock,
        }
    };
    s.set_nonblocking(false).is_err() || closed
}

/// Write all of `bytes` by `deadline` (a timeout per write would let a client that
/// reads a byte at a time hold the connection for ever).
fn write_by(s: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        s.set_write_timeout(Some(left))?;
        match s.write(bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn write_reply(
    s: &mut TcpStream,
    reply: &Reply,
    head_only: bool,
    deadline: Instant,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
        reply.status,
        reply.content_type,
        reply.body.len(),
        reply.headers,
    );
    write_by(s, head.as_bytes(), deadline)?;
    if !head_only {
        write_by(s, reply.body.as_bytes(), deadline)?;
    }
    s.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gate that admits every request.
    struct Open;

    impl Gate for Open {
        fn admit(&self, _req: &Request) -> Result<(), Reply> {
            Ok(())
        }
    }

    fn fetch(addr: std::net::SocketAddr, raw: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn splits_path_query_and_decodes_form_values() {
        let r = Request::get("/runs?name=my+run&label=policy%3Draid1&status=&x#frag", &[]);
        assert_eq!(r.path, "/runs");
        assert_eq!(
            r.params(),
            vec![
                ("name".into(), "my run".into()),
                ("label".into(), "policy=raid1".into()),
                ("status".into(), String::new()),
                ("x".into(), String::new()),
            ]
        );
        let r = Request::get("/run/ab%C3%A9?", &[("Accept", "a"), ("ACCEPT", "b")]);
        assert_eq!((r.path.as_str(), r.query.as_str()), ("/run/ab%C3%A9", ""));
        assert!(r.params().is_empty());
        assert_eq!(r.accept.as_deref(), Some("a,b"));
        assert_eq!(r.header_values("accept").collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(decode("%ZZ%e2%82%ac"), "%ZZ€");
    }

    #[test]
    fn answers_each_connection_and_omits_the_body_of_head() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        serve(listener, Open, Limits::default(), |r: &Request| {
            Reply::plain(
                "200 OK",
                "X-Test: 1\r\n",
                &format!(
                    "{} {} {:?}",
                    r.method,
                    r.path,
                    r.header_values("host").next()
                ),
            )
        });
        let get = fetch(addr, "GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(get.starts_with("HTTP/1.1 200 OK\r\n"), "{get}");
        assert!(
            get.contains("X-Test: 1\r\n") && get.ends_with("\r\n\r\nGET /a Some(\"x\")"),
            "{get}"
        );
        let head = fetch(addr, "HEAD /a HTTP/1.1\r\n\r\n");
        assert!(
            head.contains("Content-Length: 12\r\n") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        let bad = fetch(addr, "NOT HTTP\r\n\r\n");
        assert!(bad.starts_with("HTTP/1.1 400 Bad Request"), "{bad}");
        // Other methods: 405, whatever the path, before the handler.
        let post = fetch(addr, "POST /a HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
        assert!(
            post.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
            "{post}"
        );
        assert!(post.contains("\r\nAllow: GET, HEAD\r\n"), "{post}");
    }

    #[test]
    fn the_gate_answers_what_it_refuses() {
        struct NoSecret;
        impl Gate for NoSecret {
            fn admit(&self, req: &Request) -> Result<(), Reply> {
                match req.path.as_str() {
                    "/secret" => Err(Reply::plain("403 Forbidden", "", "no\n")),
                    _ => Ok(()),
                }
            }
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        serve(listener, NoSecret, Limits::default(), |_: &Request| {
            Reply::plain("200 OK", "", "yes\n")
        });
        let r = fetch(addr, "GET /secret HTTP/1.1\r\n\r\n");
        assert!(
            r.starts_with("HTTP/1.1 403 Forbidden") && r.ends_with("no\n"),
            "{r}"
        );
        // Even for a method the server does not serve: the gate comes first.
        let r = fetch(addr, "DELETE /secret HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 403 Forbidden"), "{r}");
        assert!(fetch(addr, "GET /open HTTP/1.1\r\n\r\n").ends_with("yes\n"));
    }

    /// A connection that sends `prefix`, then one more header byte every `gap`: how
    /// long until the server closed it, and its answer.
    fn trickle(addr: std::net::SocketAddr, prefix: &[u8], gap: Duration) -> (Duration, String) {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(gap)).unwrap();
        let t0 = Instant::now();
        let mut out = Vec::new();
        for b in prefix.iter().chain(std::iter::repeat(&b'a')) {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            let mut buf = [0u8; 256];
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "never dropped");
        }
        (t0.elapsed(), String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn a_head_that_trickles_is_dropped_at_its_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = Limits {
            head_deadline: Duration::from_millis(600),
            ..Limits::default()
        };
        serve(listener, Open, limits, |_: &Request| {
            Reply::plain("200 OK", "", "")
        });
        // One header byte every 100 ms: each read succeeds long before any per-read
        // timeout, yet the head as a whole is late.
        let (took, answer) = trickle(
            addr,
            b"GET / HTTP/1.1\r\nX-Slow: ",
            Duration::from_millis(100),
        );
        assert!(took >= Duration::from_millis(600), "{took:?}");
        assert!(
            answer.starts_with("HTTP/1.1 408 Request Timeout"),
            "{answer}"
        );
    }

    #[test]
    fn a_new_connection_drops_the_longest_reading_head_when_all_slots_are_taken() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = Limits {
            heads: 2,
            head_deadline: Duration::from_secs(600),
            ..Limits::default()
        };
        serve(listener, Open, limits, |_: &Request| {
            Reply::plain("200 OK", "", "ok\n")
        });
        // Two silent connections take both head slots.
        let silent: Vec<TcpStream> = (0..2)
            .map(|_| {
                let s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                s
            })
            .collect();
        // The listener accepts in order: by the time it reads this request's head, it
        // has counted both silent ones.
        assert!(fetch(addr, "GET / HTTP/1.1\r\n\r\n").ends_with("ok\n"));
        // The first silent one was dropped for it; the second is still open.
        let mut buf = [0u8; 1];
        assert_eq!((&silent[0]).read(&mut buf).unwrap(), 0);
        silent[1].set_nonblocking(true).unwrap();
        assert_eq!(
            (&silent[1]).read(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
    }

    #[test]
    fn pages_and_streams_keep_slots_of_their_own() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = Limits {
            streams: 2,
            ..Limits::default()
        };
        let (hung_up, gone) = std::sync::mpsc::channel::<()>();
        let hung_up = Mutex::new(hung_up);
        serve(listener, Open, limits, move |r: &Request| {
            if r.path != "/stream" {
                return Answer::Page(Reply::plain("200 OK", "", "page\n"));
            }
            let hung_up = hung_up.lock().unwrap().clone();
            Answer::Stream(Box::new(move |mut s: TcpStream| {
                s.write_all(b"HTTP/1.1 200 OK\r\n\r\nopen\n")?;
                // Until the viewer hangs up.
                while !peer_closed(&s) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = hung_up.send(());
                Ok(())
            }))
        });
        // A stream, once its first line has come: Err with the answer if refused.
        let open = || -> Result<TcpStream, String> {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            s.write_all(b"GET /stream HTTP/1.1\r\n\r\n").unwrap();
            let mut got = Vec::new();
            let mut byte = [0u8; 1];
            while !got.ends_with(b"open\n") {
                match s.read(&mut byte) {
                    Ok(1) => got.push(byte[0]),
                    _ => return Err(String::from_utf8_lossy(&got).into_owned()),
                }
            }
            Ok(s)
        };
        let mut streams: Vec<TcpStream> = (0..2).map(|_| open().unwrap()).collect();
        // A third stream is refused; pages are still answered.
        let refused = open().unwrap_err();
        assert!(
            refused.starts_with("HTTP/1.1 503 Service Unavailable"),
            "{refused}"
        );
        assert!(fetch(addr, "GET /page HTTP/1.1\r\n\r\n").ends_with("page\n"));
        // A viewer that hangs up is noticed (its handler returns) and its slot is given
        // back: a new viewer gets it (once the handler's thread has ended).
        drop(streams.pop());
        gone.recv_timeout(Duration::from_secs(60)).unwrap();
        let t0 = Instant::now();
        let again = loop {
            match open() {
                Ok(s) => break s,
                Err(_) if t0.elapsed() < Duration::from_secs(60) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => panic!("the slot was not given back: {e}"),
            }
        };
        streams.push(again);
    }

    /// Property tests of the request head (issue 35): any bytes give a verdict without a
    /// panic, a head past `MAX_HEAD` is refused rather than read on, and a head built from
    /// parts parses back to those parts while each of its prefixes asks to read on.
    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        fn token() -> impl Strategy<Value = String> {
            "[A-Za-z][A-Za-z0-9-]{0,15}"
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

            #[test]
            fn any_bytes_give_a_verdict(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
                match parse_head(&bytes) {
                    Parsed::Request(r) => prop_assert!(!r.method.is_empty()),
                    Parsed::Partial => prop_assert!(bytes.len() < MAX_HEAD),
                    Parsed::Bad => {}
                }
            }

            #[test]
            fn a_head_past_its_bound_is_refused(fill in proptest::collection::vec(b'a'..=b'z', MAX_HEAD..MAX_HEAD + 64)) {
                let mut head = b"GET /metrics HTTP/1.1\r\nX-Fill: ".to_vec();
                head.extend_from_slice(&fill);
                prop_assert_eq!(parse_head(&head), Parsed::Bad);
            }

            #[test]
            fn a_head_built_from_parts_parses_back_to_them(
                method in "[A-Z]{1,7}",
                path in "/[a-z0-9/._-]{0,30}",
                query in proptest::option::of("[a-z0-9=&%+]{0,20}"),
                headers in proptest::collection::vec((token(), "[ -~]{0,30}"), 0..12),
            ) {
                let target = match &query {
                    Some(q) => format!("{path}?{q}"),
                    None => path.clone(),
                };
                let mut text = format!("{method} {target} HTTP/1.1\r\n");
                for (k, v) in &headers {
                    text.push_str(&format!("{k}: {v}\r\n"));
                }
                text.push_str("\r\n");
                let bytes = text.as_bytes();
                for cut in 0..bytes.len() {
                    prop_assert_eq!(parse_head(&bytes[..cut]), Parsed::Partial, "prefix of {} bytes", cut);
                }
                let Parsed::Request(r) = parse_head(bytes) else {
                    return Err(TestCaseError::fail(format!("not parsed: {text:?}")));
                };
                prop_assert_eq!(&r.method, &method);
                prop_assert_eq!(&r.path, &path);
                prop_assert_eq!(r.query, query.unwrap_or_default());
                let expected: Vec<(String, String)> = headers
                    .iter()
                    .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
                    .collect();
                prop_assert_eq!(r.headers, expected);
            }
        }
    }
}
