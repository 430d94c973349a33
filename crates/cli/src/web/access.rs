//! Who may use an HTTP listener (`iofleet serve`, `--metrics-listen`): the one policy
//! both listeners pass to `crate::web::http::serve`, made from `--allow-host` and
//! `--token-file` and the address the listener is bound to (docs/security.md).
//!
//! On a loopback address only a request whose `Host` is a loopback name or address
//! (`localhost`, 127.0.0.0/8, `[::1]`, any port), the listen address or an
//! `--allow-host` name is answered: a page elsewhere that rebinds its own name to
//! 127.0.0.1 (DNS rebinding) gets 421 and reads nothing. Any other address needs a
//! bearer token (a non-loopback bind without `--token-file` is refused before it
//! serves), carried by every request whatever its `Host`: as `Authorization: Bearer`
//! (scrapers), or as the cookie that one visit of `/?token=TOKEN` sets (browsers).
//! A token on a loopback address is taken too (other users of the machine). Tokens
//! are compared through their SHA-256 digests, in time that does not depend on where
//! they differ. The two flags are defined here too (`AccessArgs`), beside the parser
//! of `--allow-host`. This module decides; it does not read sockets or route paths.

use std::borrow::Cow;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use clap::Args;
use iofleet_report::markup::escape;
use sha2::{Digest, Sha256};

use crate::exit::Exit;
use crate::web::http::{Gate, Reply, Request};

/// The fewest characters a token may have (about 96 bits of base64).
pub const MIN_TOKEN: usize = 16;

/// The most a token file may hold: it holds the token alone.
const MAX_TOKEN_FILE: u64 = 4096;

/// A host as a `Host` header or `--allow-host` names it: an address or a DNS name
/// (lower case, without a trailing dot).
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostName {
    Ip(IpAddr),
    Name(String),
}

impl HostName {
    /// `text` without a port: an IPv4 address, an IPv6 address (bracketed or not) or a
    /// name of letters, digits, `-`, `_` and dots.
    fn parse(text: &str) -> Option<HostName> {
        let bare = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
        if let Ok(ip) = bare.unwrap_or(text).parse::<IpAddr>() {
            return Some(HostName::Ip(ip));
        }
        let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        (bare.is_none() && name.len() <= 253 && name.split('.').all(label_ok))
            .then_some(HostName::Name(name))
    }

    /// A `Host` header's value: the host and an optional `:PORT`.
    fn from_header(value: &str) -> Option<HostName> {
        let value = value.trim();
        let host = match value.rsplit_once(':') {
            // `[::1]:8080`, `name:8080`; a bare IPv6 address has colons of its own.
            Some((h, port))
                if port.bytes().all(|b| b.is_ascii_digit())
                    && (h.ends_with(']') || !h.contains(':')) =>
            {
                h
            }
            _ => value,
        };
        if host.contains(':') && !host.starts_with('[') {
            return None; // an IPv6 address in a Host header is bracketed
        }
        HostName::parse(host)
    }

    fn is_loopback(&self) -> bool {
        match self {
            HostName::Ip(IpAddr::V4(ip)) => ip.is_loopback(),
            HostName::Ip(IpAddr::V6(ip)) => {
                ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
            HostName::Name(n) => n == "localhost",
        }
    }
}

/// `--allow-host NAME`: a host name or address, without a port.
pub fn allow_host(s: &str) -> Result<String, String> {
    match HostName::parse(s) {
        Some(_) => Ok(s.to_string()),
        None if s.contains(':') && !s.contains("::") && !s.starts_with('[') => Err(format!(
            "'{s}' has a port: give the name alone (any port is accepted)"
        )),
        None => Err(format!(
            "'{s}' is not a host name or address (letters, digits, '-', '_' and dots, or an IP address)"
        )),
    }
}

/// Who may use an HTTP listener (`serve --listen`, `--metrics-listen`): defined once,
/// applied by `Access` (docs/security.md).
#[derive(Args, Debug, Clone, Default)]
pub struct AccessArgs {
    /// Also answer requests that name this host (repeatable; a name or address, any
    /// port). On a loopback address only loopback names and addresses (localhost,
    /// 127.0.0.1, [::1]) and the listen address are answered otherwise; any other Host
    /// gets 421 (a defence against DNS rebinding).
    #[arg(long, value_name = "NAME", value_parser = allow_host)]
    pub allow_host: Vec<String>,
    /// A private file (mode 600) holding a bearer token every request must carry, as
    /// `Authorization: Bearer TOKEN` (Prometheus: `authorization.credentials_file`) or,
    /// in a browser, by opening /?token=TOKEN once. Any address but loopback needs
    /// one.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

/// The bearer token of `--token-file`, kept as digests only.
struct Token {
    file: PathBuf,
    digest: [u8; 32],
    /// The cookie a browser gets for it: `iofleet_token_PORT`, and its value (a
    /// digest of the token, so the token itself is never stored by the browser).
    cookie_name: String,
    cookie_value: String,
}

/// One listener's policy (see the module doc).
pub struct Access {
    /// The listener's flag, for messages: `--listen` or `--metrics-listen`.
    flag: &'static str,
    local: SocketAddr,
    allowed: Vec<HostName>,
    token: Option<Token>,
}

impl Access {
    /// The policy of a listener bound to `local` (as `flag` asked): exit 2 naming
    /// `--token-file` when it is needed and missing, unreadable, empty, too short, or
    /// open to other users.
    pub fn new(flag: &'static str, local: SocketAddr, args: &AccessArgs) -> Result<Access, Exit> {
        let token = match &args.token_file {
            Some(file) => {
                let token = read_token(file)?;
                let cookie = Sha256::new()
                    .chain_update(b"iofleet cookie\0")
                    .chain_update(token.as_bytes())
                    .finalize();
                Some(Token {
                    file: file.clone(),
                    digest: Sha256::digest(token.as_bytes()).into(),
                    cookie_name: format!("iofleet_token_{}", local.port()),
                    cookie_value: cookie.iter().map(|b| format!("{b:02x}")).collect(),
                })
            }
            None if !local.ip().is_loopback() => {
                return Err(Exit::input(format!(
                    "{flag} {local} is not a loopback address: anyone who can reach it could read it, so it needs --token-file FILE (a bearer token every request must carry; docs/security.md), or listen on 127.0.0.1"
                )))
            }
            None => None,
        };
        Ok(Access {
            flag,
            local,
            allowed: args
                .allow_host
                .iter()
                .filter_map(|h| HostName::parse(h))
                .collect(),
            token,
        })
    }

    /// The notice a non-loopback listener prints at start: who can `what`.
    pub fn notice(&self, what: &str) -> Option<String> {
        let token = self.token.as_ref()?;
        (!self.local.ip().is_loopback()).then(|| {
            format!(
                "notice: {} {} is not a loopback address: anyone who can reach it and holds the token in --token-file {} can {what}; the token and the pages travel unencrypted (no TLS)",
                self.flag,
                self.local,
                token.file.display()
            )
        })
    }

    /// Whether a `Host` header names this listener (loopback binds only).
    fn host_allowed(&self, host: &HostName) -> bool {
        host.is_loopback() || *host == HostName::Ip(self.local.ip()) || self.allowed.contains(host)
    }
}

impl Gate for Access {
    fn admit(&self, req: &Request) -> Result<(), Reply> {
        let mut hosts = req.header_values("host");
        let host = match (hosts.next(), hosts.next()) {
            (Some(h), None) => h,
            (None, _) => {
                return Err(refusal(
                    "400 Bad Request",
                    "",
                    "a request needs a Host header\n",
                ))
            }
            (Some(_), Some(_)) => {
                return Err(refusal(
                    "400 Bad Request",
                    "",
                    "more than one Host header\n",
                ))
            }
        };
        if self.local.ip().is_loopback()
            && !HostName::from_header(host).is_some_and(|h| self.host_allowed(&h))
        {
            let shown: String = host.chars().take(100).collect();
            return Err(refusal(
                "421 Misdirected Request",
                "",
                &format!(
                    "this iofleet listener answers its own names only, and Host '{}' is none of them (localhost, a loopback address, {}): a page elsewhere may be trying to read it through your browser (DNS rebinding). Start iofleet with --allow-host NAME to accept another name.\n",
                    shown.escape_debug(),
                    self.local.ip()
                ),
            ));
        }
        match &self.token {
            Some(t) => t.admit(req),
            None => Ok(()),
        }
    }
}

impl Token {
    /// Whether `given` is the token (through digests, in constant time).
    fn is(&self, given: &str) -> bool {
        same(&Sha256::digest(given.as_bytes()).into(), &self.digest)
    }

    fn admit(&self, req: &Request) -> Result<(), Reply> {
        let bearer = req.header_values("authorization").any(|v| {
            v.trim().split_once(' ').is_some_and(|(scheme, t)| {
                scheme.eq_ignore_ascii_case("bearer") && self.is(t.trim())
            })
        });
        let expected: [u8; 32] = Sha256::digest(self.cookie_value.as_bytes()).into();
        let cookie = req.header_values("cookie").any(|v| {
            v.split(';').any(|pair| {
                pair.trim().split_once('=').is_some_and(|(k, val)| {
                    k == self.cookie_name && same(&Sha256::digest(val.as_bytes()).into(), &expected)
                })
            })
        });
        if bearer || cookie {
            return Ok(());
        }
        match req.params().iter().find(|(k, _)| k == "token") {
            Some((_, t)) if self.is(t) => Err(self.welcome(req)),
            _ => Err(refusal(
                "401 Unauthorized",
                "WWW-Authenticate: Bearer realm=\"iofleet\"\r\n",
                "this iofleet listener needs its token: send the header 'Authorization: Bearer TOKEN' (Prometheus: authorization.credentials_file), or open /?token=TOKEN once in a browser\n",
            )),
        }
    }

    /// The answer to a right `?token=`: a page that sets the cookie and goes on to the
    /// same address without the token. A page, not a redirect: a `SameSite=Strict`
    /// cookie is sent on a navigation the listener's own page starts, but not on one
    /// that a link elsewhere started, redirects included.
    fn welcome(&self, req: &Request) -> Reply {
        let path = match req.path.as_str() {
            // Only a path on this server: `//host/…` would leave it.
            p if p.starts_with('/') && !p.starts_with("//") && !p.contains('\\') => p,
            _ => "/",
        };
        let rest: Vec<&str> = req
            .query
            .split('&')
            .filter(|p| {
                !p.is_empty()
                    && crate::web::http::decode(p.split('=').next().unwrap_or("")) != "token"
            })
            .collect();
        let target = match rest.is_empty() {
            true => path.to_string(),
            false => format!("{path}?{}", rest.join("&")),
        };
        let target = escape(&target);
        Reply {
            status: "200 OK",
            content_type: "text/html; charset=utf-8",
            headers: Cow::Owned(format!(
                "Set-Cookie: {}={}; Path=/; HttpOnly; SameSite=Strict\r\nContent-Security-Policy: default-src 'none'\r\nReferrer-Policy: no-referrer\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n",
                self.cookie_name, self.cookie_value
            )),
            body: format!(
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0; url={target}\"><title>iofleet</title></head>\n<body><p>This browser now holds the listener's token. <a href=\"{target}\">Continue</a>.</p></body></html>\n"
            ),
        }
    }
}

/// A refusal in plain text (never sniffed, `Reply::plain`), never kept by a cache.
fn refusal(status: &'static str, headers: &str, body: &str) -> Reply {
    Reply::plain(
        status,
        &format!("{headers}Cache-Control: no-store\r\n"),
        body,
    )
}

/// Equal digests, compared in time that does not depend on where they differ.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token in `file`: a private regular file holding one token (surrounding
/// whitespace and the final newline ignored) of `MIN_TOKEN` or more visible ASCII
/// characters.
fn read_token(file: &Path) -> Result<String, Exit> {
    let named = |what: String| Exit::input(format!("--token-file {}: {what}", file.display()));
    // A FIFO or device would block or never end: only a regular file is opened.
    let meta = std::fs::metadata(file).map_err(|e| named(e.to_string()))?;
    if !meta.is_file() {
        return Err(named("not a regular file".into()));
    }
    let f = std::fs::File::open(file).map_err(|e| named(e.to_string()))?;
    let mode = f
        .metadata()
        .map_err(|e| named(e.to_string()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(named(format!(
            "other users may read it (mode {:03o}): make it private first (chmod 600 {})",
            mode & 0o777,
            file.display()
        )));
    }
    // As ssh does with private keys: a file another user owns, that user can rewrite.
    let (owner, me) = (meta.uid(), rustix::process::geteuid().as_raw());
    if owner != me {
        return Err(named(format!(
            "owned by uid {owner}, not by you (uid {me}): its owner could change the token;              make your own copy"
        )));
    }
    let mut text = String::new();
    f.take(MAX_TOKEN_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| named(format!("not a text file ({e})")))?;
    if text.len() as u64 > MAX_TOKEN_FILE {
        return Err(named(format!(
            "longer than {MAX_TOKEN_FILE} bytes: it holds the token alone"
        )));
    }
    let token = text.trim();
    if token.is_empty() {
        return Err(named(format!(
            "empty: put a token in it, e.g. (umask 077; head -c 24 /dev/urandom | base64 > {})",
            file.display()
        )));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(named(
            "the token has a space, a control character or a non-ASCII character: a bearer token is one word of visible ASCII".into(),
        ));
    }
    if token.len() < MIN_TOKEN {
        return Err(named(format!(
            "the token has {} characters: {MIN_TOKEN} at least, so that it cannot be guessed",
            token.len()
        )));
    }
    Ok(token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "s3cret-token-0123456789";

    /// A private token file that another user owns is refused (as root: the test gives
    /// the file to `nobody`).
    #[test]
    fn a_token_file_another_user_owns_is_refused() {
        if !crate::need::need("a_token_file_another_user_owns_is_refused", &["root"]) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = token_file(dir.path(), TOKEN, 0o600);
        std::os::unix::fs::chown(&p, Some(65534), None).unwrap();
        let e = read_token(&p).unwrap_err().message;
        assert!(
            e.contains("--token-file") && e.contains("owned by uid 65534"),
            "{e}"
        );
    }

    fn args(allow: &[&str], token: Option<&Path>) -> AccessArgs {
        AccessArgs {
            allow_host: allow.iter().map(|s| s.to_string()).collect(),
            token_file: token.map(Path::to_path_buf),
        }
    }

    fn token_file(dir: &Path, text: &str, mode: u32) -> PathBuf {
        let p = dir.join(format!("token-{mode:o}-{}", text.len()));
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    fn opened(r: Result<Access, Exit>) -> Access {
        r.unwrap_or_else(|e| panic!("{}", e.message))
    }

    fn status(a: &Access, r: &Request) -> String {
        match a.admit(r) {
            Ok(()) => "pass".into(),
            Err(reply) => reply.status.to_string(),
        }
    }

    #[test]
    fn a_loopback_listener_answers_its_own_names_only() {
        let local: SocketAddr = "127.0.0.1:9464".parse().unwrap();
        let a = opened(Access::new(
            "--metrics-listen",
            local,
            &args(&["Grafana.Lab", "10.1.2.3"], None),
        ));
        assert_eq!(a.notice("watch the run"), None);
        for host in [
            "localhost",
            "LOCALHOST:80",
            "localhost.:9464",
            "127.0.0.1:9464",
            "127.8.9.10",
            "[::1]:8080",
            "[::1]",
            "[::ffff:127.0.0.1]:1",
            "grafana.lab:3000",
            "grafana.lab.",
            "10.1.2.3:9464",
        ] {
            assert_eq!(
                status(&a, &Request::get("/", &[("Host", host)])),
                "pass",
                "{host}"
            );
        }
        for host in [
            "evil.example",
            "evil.example:9464",
            "localhost.evil.example",
            "128.0.0.1",
            "[::2]:80",
            "::1",
            "localhost:80:80",
            "",
            "127.0.0.1 :80",
        ] {
            let r = a.admit(&Request::get("/", &[("Host", host)])).unwrap_err();
            assert_eq!(r.status, "421 Misdirected Request", "{host}");
            assert!(r.body.contains("--allow-host"), "{}", r.body);
        }
        assert_eq!(status(&a, &Request::get("/", &[])), "400 Bad Request");
        let two = Request::get("/", &[("Host", "localhost"), ("Host", "evil.example")]);
        assert_eq!(status(&a, &two), "400 Bad Request");
        // The listen address itself (another loopback one here, [::1]).
        let v6 = opened(Access::new(
            "--listen",
            "[::1]:1".parse().unwrap(),
            &AccessArgs::default(),
        ));
        assert_eq!(
            status(&v6, &Request::get("/", &[("Host", "[::1]:1")])),
            "pass"
        );
    }

    #[test]
    fn allow_host_takes_names_and_addresses_without_a_port() {
        assert_eq!(allow_host("grafana.lab"), Ok("grafana.lab".into()));
        assert!(allow_host("::1").is_ok() && allow_host("[::1]").is_ok());
        assert!(allow_host("10.0.0.1").is_ok());
        assert!(allow_host("grafana.lab:3000").unwrap_err().contains("port"));
        assert!(allow_host("a b").unwrap_err().contains("not a host name"));
        assert!(allow_host("").is_err() && allow_host("a..b").is_err());
    }

    #[test]
    fn a_non_loopback_listener_needs_a_private_token_file() {
        let dir = tempfile::tempdir().unwrap();
        let any: SocketAddr = "0.0.0.0:8716".parse().unwrap();
        let e = Access::new("--listen", any, &AccessArgs::default())
            .err()
            .unwrap();
        assert_eq!(e.code, 2);
        assert!(
            e.message.contains("--listen 0.0.0.0:8716") && e.message.contains("--token-file"),
            "{}",
            e.message
        );
        let refused = |file: &Path, what: &str| {
            let e = Access::new("--listen", any, &args(&[], Some(file)))
                .err()
                .unwrap();
            assert_eq!(e.code, 2);
            assert!(
                e.message
                    .starts_with(&format!("--token-file {}: ", file.display()))
                    && e.message.contains(what),
                "{what}: {}",
                e.message
            );
        };
        refused(&dir.path().join("missing"), "No such file");
        refused(dir.path(), "not a regular file");
        refused(&token_file(dir.path(), TOKEN, 0o644), "mode 644");
        refused(&token_file(dir.path(), TOKEN, 0o640), "chmod 600");
        refused(&token_file(dir.path(), " \n", 0o600), "empty");
        refused(&token_file(dir.path(), "short\n", 0o600), "16 at least");
        refused(
            &token_file(dir.path(), "two words here, long enough", 0o600),
            "one word",
        );
        refused(
            &token_file(dir.path(), &"x".repeat(5000), 0o600),
            "longer than 4096",
        );
        let bytes = dir.path().join("binary");
        std::fs::write(&bytes, [0xffu8, 0xfe, 0x00]).unwrap();
        std::fs::set_permissions(&bytes, std::fs::Permissions::from_mode(0o600)).unwrap();
        refused(&bytes, "not a text file");

        let file = token_file(dir.path(), &format!("{TOKEN}\n"), 0o600);
        let a = opened(Access::new("--listen", any, &args(&[], Some(&file))));
        let notice = a.notice("read every run").unwrap();
        assert!(
            notice.contains("--listen 0.0.0.0:8716 is not a loopback address")
                && notice.contains(&file.display().to_string()),
            "{notice}"
        );
    }

    #[test]
    fn a_token_is_taken_as_a_bearer_a_cookie_or_once_in_the_query() {
        let dir = tempfile::tempdir().unwrap();
        let file = token_file(dir.path(), &format!("  {TOKEN}\r\n"), 0o400);
        let a = opened(Access::new(
            "--metrics-listen",
            "0.0.0.0:9464".parse().unwrap(),
            &args(&[], Some(&file)),
        ));
        // Whatever the Host: a non-loopback listener checks the token, not the name.
        let host = ("Host", "evil.example");
        let none = a.admit(&Request::get("/metrics", &[host])).unwrap_err();
        assert_eq!(none.status, "401 Unauthorized");
        assert!(
            none.headers.contains("WWW-Authenticate: Bearer"),
            "{}",
            none.headers
        );
        let bearer = format!("Bearer {TOKEN}");
        assert_eq!(
            status(
                &a,
                &Request::get("/metrics", &[host, ("Authorization", &bearer)])
            ),
            "pass"
        );
        let lower = format!("bearer  {TOKEN} ");
        assert_eq!(
            status(
                &a,
                &Request::get("/metrics", &[host, ("authorization", &lower)])
            ),
            "pass"
        );
        for wrong in [
            "Bearer s3cret-token-012345678",
            "Basic czNjcmV0",
            "Bearer",
            TOKEN,
        ] {
            assert_eq!(
                status(&a, &Request::get("/", &[host, ("Authorization", wrong)])),
                "401 Unauthorized",
                "{wrong}"
            );
        }
        // A browser: one visit with the token gets a page that sets the cookie and goes
        // on to the same address without it.
        let visit = a
            .admit(&Request::get(
                "/run/x?token=s3cret-token-0123456789&a=%22b%22",
                &[host],
            ))
            .unwrap_err();
        assert_eq!(visit.status, "200 OK");
        let set = visit
            .headers
            .lines()
            .find_map(|l| l.strip_prefix("Set-Cookie: "))
            .unwrap();
        assert!(
            set.starts_with("iofleet_token_9464=")
                && set.ends_with("; Path=/; HttpOnly; SameSite=Strict"),
            "{set}"
        );
        assert!(!set.contains(TOKEN), "the cookie is not the token: {set}");
        assert!(
            visit.body.contains("content=\"0; url=/run/x?a=%22b%22\""),
            "{}",
            visit.body
        );
        let cookie = set.split(';').next().unwrap();
        let with = |c: &str| status(&a, &Request::get("/events", &[host, ("Cookie", c)]));
        assert_eq!(with(&format!("theme=dark; {cookie}")), "pass");
        assert_eq!(
            with(&cookie.replace("iofleet_token_9464=", "iofleet_token_9465=")),
            "401 Unauthorized"
        );
        assert_eq!(with(&format!("{}0", cookie)), "401 Unauthorized");
        // A wrong token in the query is refused; a path that would leave the server
        // goes to / instead.
        assert_eq!(
            status(&a, &Request::get("/?token=nope", &[host])),
            "401 Unauthorized"
        );
        let away = a
            .admit(&Request::get(
                &format!("//evil.example/?token={TOKEN}"),
                &[host],
            ))
            .unwrap_err();
        assert!(away.body.contains("url=/\""), "{}", away.body);
    }

    #[test]
    fn a_loopback_listener_with_a_token_checks_both() {
        let dir = tempfile::tempdir().unwrap();
        let file = token_file(dir.path(), TOKEN, 0o600);
        let a = opened(Access::new(
            "--listen",
            "127.0.0.1:8716".parse().unwrap(),
            &args(&[], Some(&file)),
        ));
        assert_eq!(a.notice("read every run"), None);
        let bearer = format!("Bearer {TOKEN}");
        assert_eq!(
            status(&a, &Request::get("/", &[("Host", "localhost")])),
            "401 Unauthorized"
        );
        assert_eq!(
            status(
                &a,
                &Request::get("/", &[("Host", "evil.example"), ("Authorization", &bearer)])
            ),
            "421 Misdirected Request"
        );
        assert_eq!(
            status(
                &a,
                &Request::get("/", &[("Host", "localhost"), ("Authorization", &bearer)])
            ),
            "pass"
        );
    }
}
