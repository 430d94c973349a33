//! Who may use iofleet's two HTTP listeners, `iofleet serve` and `--metrics-listen`
//! (with `--ui`), end to end over TCP (docs/security.md): on loopback only loopback
//! names, the listen address and `--allow-host` names are answered (421 for another
//! Host, against DNS rebinding; 400 without one); off loopback a bearer token is
//! required (refused without `--token-file`, 401 without the token, a notice at
//! start); other methods get 405 on both; a `/metrics` scrape is answered within 2 s
//! while 64 clients trickle their heads (dropped at the head deadline) and 64 live
//! viewers hold their streams; and a real Prometheus scrapes with the token from its
//! `credentials_file` (and gets 401 without). Every case of the policy is in
//! `access.rs`'s unit tests, the server's slots and deadlines in `http.rs`'s.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::*;

const TOKEN: &str = "listeners-test-token-0123456789";

/// A results store with one short run, shared by the tests of this file.
fn store() -> &'static Path {
    static DB: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DB.get_or_init(|| {
        // A static is never dropped: keep its directory under target/, not /tmp.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let db = dir.path().join("results.db");
        let o = iofleet()
            .args([
                "run",
                "--engine",
                "null",
                "--duration",
                "500ms",
                "--interval",
                "250ms",
            ])
            .arg("--quiet")
            .args(["--target", dir.path().join("data").to_str().unwrap()])
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        (dir, db)
    })
    .1
}

/// A token file with `mode` in `dir`.
fn token_file(dir: &Path, mode: u32) -> PathBuf {
    let p = dir.join(format!("token-{mode:o}"));
    std::fs::write(&p, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// An iofleet process that listens: killed and reaped when dropped.
struct Listening {
    child: Child,
    /// The address it printed, as 127.0.0.1:PORT.
    addr: String,
    port: u16,
    /// What it printed on stderr before the address.
    said: String,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `iofleet ARGS` and wait for the first `http://ADDR/` it prints.
fn listening(args: &[&str]) -> Listening {
    let child = Command::new(assert_cmd::cargo::cargo_bin("iofleet"))
        .args(args)
        .env("XDG_DATA_HOME", scratch_data_home())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut l = Listening {
        child,
        addr: String::new(),
        port: 0,
        said: String::new(),
    };
    let mut lines = BufReader::new(l.child.stderr.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(at) = line.find("http://") {
            let printed: SocketAddr = line[at + 7..].split('/').next().unwrap().parse().unwrap();
            l.port = printed.port();
            l.addr = format!("127.0.0.1:{}", l.port);
            // Keep draining stderr so the process never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return l;
        }
        l.said.push_str(&line);
        l.said.push('\n');
    }
    panic!("iofleet {args:?} printed no address: {}", l.said);
}

/// A null-engine run of `duration` with `--metrics-listen ADDR --ui` and `extra`.
fn live_run(listen: &str, duration: &str, extra: &[&str]) -> Listening {
    let mut args = vec![
        "run",
        "--engine",
        "null",
        "--rate",
        "2000",
        "--duration",
        duration,
        "--warmup",
        "0s",
        "--interval",
        "250ms",
        "--no-save",
        "--metrics-listen",
        listen,
        "--ui",
    ];
    args.extend_from_slice(extra);
    listening(&args)
}

/// Send `raw` (a whole request head) to `addr`; the whole response.
fn ask(addr: &str, raw: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// `METHOD PATH` with `Host: host` and `headers` (each ending in CRLF).
fn request(addr: &str, method: &str, path: &str, host: &str, headers: &str) -> String {
    ask(
        addr,
        &format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n{headers}\r\n"),
    )
}

fn status(response: &str) -> &str {
    response.lines().next().unwrap_or("")
}

/// What a loopback listener at `l` answers on `paths` for each kind of Host and method.
fn answers_its_own_names_only(l: &Listening, paths: &[&str]) {
    let (a, port) = (&l.addr, l.port);
    for path in paths {
        for host in [
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
            format!("grafana.lab:{port}"),
            "Grafana.Lab".to_string(),
        ] {
            let r = request(a, "GET", path, &host, "");
            assert_eq!(status(&r), "HTTP/1.1 200 OK", "{path} for {host}: {r}");
        }
        let r = request(a, "GET", path, &format!("evil.example:{port}"), "");
        assert_eq!(
            status(&r),
            "HTTP/1.1 421 Misdirected Request",
            "{path}: {r}"
        );
        assert!(r.contains("--allow-host"), "{r}");
        let r = ask(a, &format!("GET {path} HTTP/1.1\r\n\r\n"));
        assert_eq!(status(&r), "HTTP/1.1 400 Bad Request", "{path}: {r}");
        let r = request(a, "POST", path, a, "Content-Length: 0\r\n");
        assert_eq!(status(&r), "HTTP/1.1 405 Method Not Allowed", "{path}: {r}");
        assert!(r.contains("\r\nAllow: GET, HEAD\r\n"), "{r}");
        let r = request(a, "HEAD", path, a, "");
        assert_eq!(status(&r), "HTTP/1.1 200 OK", "HEAD {path}: {r}");
        assert!(r.ends_with("\r\n\r\n"), "HEAD has no body: {r}");
    }
}

#[test]
fn both_listeners_answer_their_own_names_only() {
    let db = store().to_str().unwrap();
    let serve = listening(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--allow-host",
        "grafana.lab",
        "--db",
        db,
    ]);
    assert_eq!(serve.said, "", "no notice on loopback");
    answers_its_own_names_only(&serve, &["/"]);

    let run = live_run("127.0.0.1:0", "60s", &["--allow-host", "grafana.lab"]);
    assert_eq!(run.said, "", "no notice on loopback");
    answers_its_own_names_only(&run, &["/", "/metrics"]);

    // --allow-host is a listener's: without one, clap refuses it.
    let o = iofleet()
        .args(["run", "--engine", "null", "--no-save", "--allow-host", "x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--metrics-listen"), "{}", stderr(&o));
    let o = iofleet()
        .args(["serve", "--db", db, "--allow-host", "grafana.lab:3000"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--allow-host") && stderr(&o).contains("port"),
        "{}",
        stderr(&o)
    );
}

/// What a listener off loopback at `l` answers on `path` with and without its token.
fn answers_with_its_token_only(l: &Listening, path: &str) {
    let a = &l.addr;
    let r = request(a, "GET", path, a, "");
    assert_eq!(status(&r), "HTTP/1.1 401 Unauthorized", "{path}: {r}");
    assert!(r.contains("WWW-Authenticate: Bearer"), "{r}");
    let wrong = request(
        a,
        "GET",
        path,
        a,
        "Authorization: Bearer not-the-token-at-all\r\n",
    );
    assert_eq!(
        status(&wrong),
        "HTTP/1.1 401 Unauthorized",
        "{path}: {wrong}"
    );
    let bearer = format!("Authorization: Bearer {TOKEN}\r\n");
    // Whatever the Host: the token is what counts off loopback.
    for host in [a.as_str(), "evil.example"] {
        let r = request(a, "GET", path, host, &bearer);
        assert_eq!(status(&r), "HTTP/1.1 200 OK", "{path} for {host}: {r}");
    }
    // A browser: one visit with ?token= sets a cookie that then does.
    let visit = request(a, "GET", &format!("/?token={TOKEN}"), a, "");
    assert_eq!(status(&visit), "HTTP/1.1 200 OK", "{visit}");
    let cookie = visit
        .lines()
        .find_map(|l| l.strip_prefix("Set-Cookie: "))
        .and_then(|c| c.split(';').next())
        .unwrap_or_else(|| panic!("no cookie: {visit}"));
    assert_eq!(
        cookie.split('=').next(),
        Some(format!("iofleet_token_{}", l.port).as_str())
    );
    let r = request(a, "GET", path, a, &format!("Cookie: {cookie}\r\n"));
    assert_eq!(status(&r), "HTTP/1.1 200 OK", "{path} with the cookie: {r}");
}

#[test]
fn a_listener_off_loopback_needs_its_token() {
    let db = store().to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let private = token_file(dir.path(), 0o600);
    let private = private.to_str().unwrap();
    let open = token_file(dir.path(), 0o644);

    // Refused without a token, or with one others may read (exit 2, naming the flag).
    let o = iofleet()
        .args(["serve", "--listen", "0.0.0.0:0", "--db", db])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--token-file"), "{}", stderr(&o));
    let o = iofleet()
        .args(["serve", "--listen", "0.0.0.0:0", "--db", db, "--token-file"])
        .arg(&open)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("--token-file {}", open.display()))
            && stderr(&o).contains("chmod 600"),
        "{}",
        stderr(&o)
    );
    let o = iofleet()
        .args(["run", "--engine", "null", "--no-save", "--duration", "1s"])
        .args(["--metrics-listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--metrics-listen 0.0.0.0:") && stderr(&o).contains("--token-file"),
        "{}",
        stderr(&o)
    );

    // With one: a notice at start, and the token required, reached through 127.0.0.1.
    let serve = listening(&[
        "serve",
        "--listen",
        "0.0.0.0:0",
        "--db",
        db,
        "--token-file",
        private,
    ]);
    assert!(
        serve.said.contains("is not a loopback address") && serve.said.contains(private),
        "{}",
        serve.said
    );
    answers_with_its_token_only(&serve, "/");

    let run = live_run("0.0.0.0:0", "60s", &["--token-file", private]);
    assert!(
        run.said.contains("notice: --metrics-listen 0.0.0.0:")
            && run.said.contains("is not a loopback address"),
        "{}",
        run.said
    );
    answers_with_its_token_only(&run, "/metrics");
    answers_with_its_token_only(&run, "/");
}

/// A client that sends a request head one byte every 1.5 s, reconnecting as soon as it
/// is dropped, until `over`: the answers it got when dropped.
fn trickler(addr: String, over: Arc<AtomicBool>) -> Vec<String> {
    let mut dropped = Vec::new();
    while !over.load(SeqCst) {
        let Ok(mut s) = TcpStream::connect(&addr) else {
            continue;
        };
        s.set_read_timeout(Some(Duration::from_millis(1500)))
            .unwrap();
        let head = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ");
        let mut out = Vec::new();
        let mut next = head.as_bytes().iter();
        loop {
            let b = next.next().copied().unwrap_or(b'a');
            if s.write_all(&[b]).is_err() || over.load(SeqCst) {
                break;
            }
            let mut buf = [0u8; 256];
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
        if !over.load(SeqCst) {
            dropped.push(String::from_utf8_lossy(&out).into_owned());
        }
    }
    dropped
}

/// A live viewer of `/events`, reconnecting as soon as its stream ends, until `over`:
/// how many times it got the stream.
fn viewer(addr: String, over: Arc<AtomicBool>) -> usize {
    let mut streams = 0;
    while !over.load(SeqCst) {
        let Ok(mut s) = TcpStream::connect(&addr) else {
            continue;
        };
        if write!(s, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").is_err() {
            continue;
        }
        let mut first = [0u8; 15];
        if s.read_exact(&mut first).is_ok() && &first == b"HTTP/1.1 200 OK" {
            streams += 1;
        }
        // Read until the stream ends (or the test does).
        let _ = std::io::copy(&mut s, &mut std::io::sink());
    }
    streams
}

/// One scrape of /metrics: its interval index once it answered 200 within 2 s.
fn scrape(addr: &str) -> Result<u64, String> {
    let t0 = Instant::now();
    let mut s = TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_secs(2))
        .map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).map_err(|e| e.to_string())?;
    let took = t0.elapsed();
    if !raw.starts_with("HTTP/1.1 200 OK\r\n") || took > Duration::from_secs(2) {
        return Err(format!("after {took:?}: {raw}"));
    }
    Ok(raw
        .lines()
        .find_map(|l| l.strip_prefix("iofleet_interval_index "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0))
}

/// 64 threads of `client`.
fn sixty_four<T: Send + 'static>(
    addr: &str,
    over: &Arc<AtomicBool>,
    client: fn(String, Arc<AtomicBool>) -> T,
) -> Vec<std::thread::JoinHandle<T>> {
    (0..64)
        .map(|_| {
            let (addr, over) = (addr.to_string(), over.clone());
            std::thread::spawn(move || client(addr, over))
        })
        .collect()
}

#[test]
fn metrics_are_scraped_while_clients_trickle_and_viewers_hold_streams() {
    // 10 s of 250 ms intervals (0..=39): the siege lasts until interval 32, well
    // before the run ends, and longer than the head deadline (5 s).
    let run = live_run("127.0.0.1:0", "10s", &[]);
    let over = Arc::new(AtomicBool::new(false));
    let tricklers = sixty_four(&run.addr, &over, trickler);
    let viewers = sixty_four(&run.addr, &over, viewer);
    let mut scrapes = Vec::new();
    loop {
        let s = scrape(&run.addr);
        let index = s.as_ref().map_or(0, |&i| i);
        scrapes.push(s);
        if index >= 32 {
            break;
        }
        assert!(scrapes.len() < 1000, "the run never reached interval 32");
        std::thread::sleep(Duration::from_millis(100));
    }
    over.store(true, SeqCst);
    drop(run); // ends the viewers' streams
    let failed: Vec<&String> = scrapes.iter().filter_map(|s| s.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} of {} scrapes failed: {failed:?}",
        failed.len(),
        scrapes.len()
    );
    assert!(scrapes.len() >= 20, "{} scrapes", scrapes.len());
    // Every trickler was dropped at the head deadline (with a 408), though it never
    // stopped sending.
    for t in tricklers {
        let dropped = t.join().unwrap();
        assert!(!dropped.is_empty(), "a trickler was never dropped");
        assert!(
            dropped
                .iter()
                .all(|d| d.starts_with("HTTP/1.1 408 Request Timeout")),
            "{dropped:?}"
        );
    }
    // Every viewer held a stream.
    for v in viewers {
        assert!(v.join().unwrap() >= 1, "a viewer never got its stream");
    }
}

/// Kills and reaps its process when dropped, also when the test fails.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free port on loopback.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The state Prometheus at `prom` reports for each scrape job: (health, last error).
fn targets(prom: &str) -> Vec<(String, String, String)> {
    let Ok(mut s) = TcpStream::connect(prom) else {
        return Vec::new();
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = write!(s, "GET /api/v1/targets HTTP/1.0\r\nHost: {prom}\r\n\r\n");
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    v["data"]["activeTargets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or("").to_string();
            (s("scrapePool"), s("health"), s("lastError"))
        })
        .collect()
}

#[test]
fn prometheus_scrapes_with_the_token_from_its_credentials_file() {
    let test = "prometheus_scrapes_with_the_token_from_its_credentials_file";
    if !common::need::need(test, &["prometheus"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let token = token_file(dir.path(), 0o600);
    let run = live_run(
        "0.0.0.0:0",
        "60s",
        &["--token-file", token.to_str().unwrap()],
    );
    // Two jobs on the same target: one sends the token (Prometheus's own
    // `authorization.credentials_file`), one does not.
    let prom = format!("127.0.0.1:{}", free_port());
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  \
             - job_name: with-token\n    authorization:\n      credentials_file: {}\n    static_configs:\n      - targets: ['{}']\n  \
             - job_name: without\n    static_configs:\n      - targets: ['{}']\n",
            token.display(),
            run.addr,
            run.addr
        ),
    )
    .unwrap();
    let log = dir.path().join("prometheus.log");
    let _prometheus = Reaper(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    let seen = loop {
        let seen = targets(&prom);
        let health = |job: &str| seen.iter().find(|t| t.0 == job).map(|t| t.1.clone());
        if health("with-token").as_deref() == Some("up")
            && health("without").as_deref() == Some("down")
        {
            break seen;
        }
        if t0.elapsed() > Duration::from_secs(90) {
            panic!(
                "targets {seen:?}; Prometheus log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let without = seen.iter().find(|t| t.0 == "without").unwrap();
    assert!(without.2.contains("401"), "{without:?}");
}
