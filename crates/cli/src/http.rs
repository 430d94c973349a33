//! The small HTTP/1.1 server under `--metrics-listen` (and its `--ui` live view) and
//! `iofleet serve`: one thread accepts, each connection is answered on a thread of its
//! own (so a slow client never holds up another), one request per connection
//! (`Connection: close`); a handler may keep its connection as a stream (Server-Sent
//! Events). Request heads
//! are parsed by `httparse` and query strings decoded by `percent-encoding`; this module
//! only reads the head, hands a `Request` to the caller's handler and writes its `Reply`.
//! It knows no paths: routing is the caller's. No TLS, no keep-alive, no request bodies:
//! the two servers answer `GET`s from a browser or a scraper, not a web application.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest request head read before answering 400.
const MAX_HEAD: usize = 16 * 1024;

/// Connections answered at once; one more gets 503 at once.
const MAX_CONNECTIONS: usize = 64;

/// One request as the handlers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    /// The path without its query string.
    pub path: String,
    /// The raw query string (after `?`, before `#`), possibly empty.
    pub query: String,
    /// `Accept` headers, joined by commas; None when there was none.
    pub accept: Option<String>,
}

impl Request {
    /// A GET request for `target` (path and query).
    #[cfg(test)]
    pub fn get(target: &str) -> Request {
        Request::new("GET", target, None)
    }

    fn new(method: &str, target: &str, accept: Option<String>) -> Request {
        let target = target.split('#').next().unwrap_or("");
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Request {
            method: method.to_string(),
            path: path.to_string(),
            query: query.to_string(),
            accept,
        }
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
fn decode(s: &str) -> String {
    decode_path(&s.replace('+', " "))
}

/// One HTTP answer.
#[derive(Debug, PartialEq)]
pub struct Reply {
    pub status: &'static str,
    pub content_type: &'static str,
    /// Extra header lines, each ending in CRLF.
    pub headers: &'static str,
    pub body: String,
}

impl Reply {
    pub fn plain(status: &'static str, headers: &'static str, body: &str) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            headers,
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

/// Answer every connection on `listener` with `handler`, from a thread of its own;
/// returns at once with the accepting thread.
pub fn serve<H, A>(listener: TcpListener, handler: H) -> std::thread::JoinHandle<()>
where
    H: Fn(&Request) -> A + Send + Sync + 'static,
    A: Into<Answer>,
{
    let handler = Arc::new(handler);
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                active.fetch_sub(1, Ordering::AcqRel);
                let busy = Reply::plain("503 Service Unavailable", "", "too many connections\n");
                let _ = write_reply(&mut stream, &busy, false);
                continue;
            }
            let (handler, active) = (handler.clone(), active.clone());
            std::thread::spawn(move || {
                let _ = answer(stream, |r| handler(r).into());
                active.fetch_sub(1, Ordering::AcqRel);
            });
        }
    })
}

/// Read one request head from `s`, answer it and close (or hand it to a stream).
fn answer(mut s: TcpStream, handler: impl Fn(&Request) -> Answer) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    let (reply, head_only) = match read_request(&mut s)? {
        None => return Ok(()), // closed before a whole request
        Some(Ok(req)) => match handler(&req) {
            Answer::Page(reply) => (reply, req.method == "HEAD"),
            Answer::Stream(stream) => return stream(s),
        },
        Some(Err(())) => (Reply::plain("400 Bad Request", "", "bad request\n"), false),
    };
    write_reply(&mut s, &reply, head_only)
}

/// The next request head on `s`: None when the peer closed first, `Err` when it is not
/// HTTP or longer than `MAX_HEAD`.
fn read_request(s: &mut TcpStream) -> std::io::Result<Option<Result<Request, ()>>> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&head) {
            Ok(httparse::Status::Complete(_)) => {
                let accept = req
                    .headers
                    .iter()
                    .filter(|h| h.name.eq_ignore_ascii_case("accept"))
                    .map(|h| String::from_utf8_lossy(h.value).into_owned())
                    .collect::<Vec<_>>()
                    .join(",");
                return Ok(Some(Ok(Request::new(
                    req.method.unwrap_or(""),
                    req.path.unwrap_or(""),
                    (!accept.is_empty()).then_some(accept),
                ))));
            }
            Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => continue,
            _ => return Ok(Some(Err(()))),
        }
    }
}

fn write_reply(s: &mut TcpStream, reply: &Reply, head_only: bool) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
        reply.status,
        reply.content_type,
        reply.body.len(),
        reply.headers,
    )?;
    if !head_only {
        s.write_all(reply.body.as_bytes())?;
    }
    s.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_path_query_and_decodes_form_values() {
        let r = Request::get("/runs?name=my+run&label=policy%3Draid1&status=&x#frag");
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
        let r = Request::get("/run/ab%C3%A9?");
        assert_eq!((r.path.as_str(), r.query.as_str()), ("/run/ab%C3%A9", ""));
        assert!(r.params().is_empty());
        assert_eq!(decode("%ZZ%e2%82%ac"), "%ZZ€");
    }

    #[test]
    fn answers_each_connection_and_omits_the_body_of_head() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        serve(listener, |r: &Request| {
            Reply::plain(
                "200 OK",
                "X-Test: 1\r\n",
                &format!("{} {}", r.method, r.path),
            )
        });
        let fetch = |raw: &str| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(raw.as_bytes()).unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        };
        let get = fetch("GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(get.starts_with("HTTP/1.1 200 OK\r\n"), "{get}");
        assert!(
            get.contains("X-Test: 1\r\n") && get.ends_with("\r\n\r\nGET /a"),
            "{get}"
        );
        let head = fetch("HEAD /a HTTP/1.1\r\n\r\n");
        assert!(
            head.contains("Content-Length: 7\r\n") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        let bad = fetch("NOT HTTP\r\n\r\n");
        assert!(bad.starts_with("HTTP/1.1 400 Bad Request"), "{bad}");
    }
}
