//! A throwaway fleet of real OpenSSH servers on loopback addresses, for integration tests
//! that drive iofleet over SSH.
//!
//! Include it from a test file with
//!
//! ```ignore
//! #[path = "support/sshd.rs"]
//! mod sshd;
//! ```
//!
//! (it lives in a subdirectory of `tests/`, so cargo does not build it as a test of its own).
//!
//! [`Cluster::start`]`(n)` makes a temp dir with host keys, a client key, one `sshd_config`
//! per host and one `ssh_config` naming the hosts `h1`..`hN`; it starts `sshd -D -e` listening
//! on `127.0.0.2`, `127.0.0.3`, … (one loopback address per host, a free port each) and
//! returns once `ssh hN true` succeeds for every host. Reach a host with
//! `ssh` + [`Cluster::ssh_args`] + alias, or [`Cluster::ssh`]. Nothing ever connects outside
//! 127.0.0.0/8. The servers need root (sshd privilege separation); without root, or without
//! `sshd`/`ssh`/`ssh-keygen`, `start` prints `skip: …` and returns `None` — unless the `CI`
//! environment variable is set, where CI has installed OpenSSH and a skip would hide a real
//! failure, so it panics.
//!
//! Killing: [`Cluster::kill_sessions`] ends every process started through one host's sshd
//! (the established sessions and what they run) while the server keeps accepting;
//! [`Cluster::kill_host`] does that and also kills the listening sshd, like a host going
//! down. Session processes are found as the listener's process tree and, once the listener
//! is gone and they have been re-parented, as the processes that still hold the host's sshd
//! log file open (sshd runs with `-e`, so every sshd process it forks keeps that file as its
//! stderr). `Drop` does the same for every host, so a panicking test leaves no sshd behind.
//!
//! The free functions [`process_tree`], [`pids_matching`], [`cmdline`] and [`pids_holding`]
//! scan `/proc` and are meant for assertions such as "no `iofleet agent` process remains".
//!
//! This module only manages the servers; it knows nothing about iofleet.
#![allow(dead_code)]

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common::need;
use tempfile::TempDir;

/// Sessions run the login user's shell start-up. Where that runs `pyenv init` (as root's
/// does on our development machines), a session killed during it leaves pyenv's rehash
/// lock behind, and every later session then waits 60 s for it. A lock older than a few
/// seconds is stale (pyenv holds it for a moment), so it is removed before a cluster
/// starts; nothing else of the user's environment is touched.
pub fn clear_stale_shell_lock() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let lock = Path::new(&home).join(".pyenv/shims/.pyenv-shim");
    let stale = fs::metadata(&lock)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > Duration::from_secs(5));
    if stale {
        let _ = fs::remove_file(&lock);
    }
}

/// How long one host may take from spawn to accepting `ssh hN true`.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// One loopback sshd.
/// Tests of one binary that run fleets over these hosts, one at a time: they share this
/// machine's root home, so its `~/.cache/iofleet`.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held for a fleet test: the binary's other fleet tests wait, and the agent copies the
/// test's runs leave are removed when it ends (`RemoveCopies` drops first, while the
/// lock is still held and no other test's run is using a copy).
pub struct OneAtATime {
    _copies: RemoveCopies,
    _lock: std::sync::MutexGuard<'static, ()>,
}

pub fn one_at_a_time() -> OneAtATime {
    let lock = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    OneAtATime {
        _copies: RemoveCopies,
        _lock: lock,
    }
}

/// Removes the agent copies fleet runs keep in `~/.cache/iofleet` (every loopback host
/// is this machine's root) when dropped, the records of agents no longer running (in
/// `runs`: a test that kills a session leaves its agent's), and the directories if
/// that empties them.
pub struct RemoveCopies;

impl Drop for RemoveCopies {
    fn drop(&mut self) {
        let Ok(home) = std::env::var("HOME") else {
            return;
        };
        let dir = Path::new(&home).join(".cache/iofleet");
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("iofleet-") || name.starts_with(".upload.") {
                let _ = fs::remove_file(e.path());
            }
        }
        for e in fs::read_dir(dir.join("runs"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let pid = fs::read_to_string(e.path().join("pid")).unwrap_or_default();
            let pid = pid.trim();
            if pid.is_empty() || !Path::new("/proc").join(pid).exists() {
                let _ = fs::remove_dir_all(e.path());
            }
        }
        let _ = fs::remove_dir(dir.join("runs"));
        let _ = fs::remove_dir(&dir);
    }
}

pub struct Host {
    /// The `Host` alias in the cluster's ssh_config: `h1`, `h2`, …
    pub alias: String,
    /// The loopback address sshd listens on: `127.0.0.2` for `h1`, `127.0.0.3` for `h2`, …
    pub addr: String,
    pub port: u16,
    /// An empty directory inside the temp dir, for this host to use as its target.
    pub data_dir: PathBuf,
    /// This host's sshd_config; it appears in the listener's command line.
    pub sshd_config: PathBuf,
    /// sshd's stderr (`-e`): connection and authentication messages, for debugging.
    pub log: PathBuf,
    sshd: Option<Child>,
}

/// Several loopback sshd servers and an ssh_config that reaches them by alias.
pub struct Cluster {
    pub hosts: Vec<Host>,
    /// Pass as `ssh -F <ssh_config>`; [`Cluster::ssh_args`] does.
    pub ssh_config: PathBuf,
    /// Private key the client authenticates with (already named in `ssh_config`).
    pub client_key: PathBuf,
    /// Removed when the cluster drops, after every sshd has been killed.
    pub dir: TempDir,
}

impl Cluster {
    /// Start `n` hosts, or return `None` after printing why they cannot run here (see the
    /// module docs for when that panics instead). Panics if a server fails to come up.
    pub fn start(n: usize) -> Option<Cluster> {
        Self::start_with(n, false)
    }

    /// [`Cluster::start`] with local forwarding allowed (`ssh -L`, Unix sockets
    /// included: this OpenSSH refuses a Unix socket's forwarding under
    /// `AllowTcpForwarding no`).
    pub fn start_forwarding(n: usize) -> Option<Cluster> {
        Self::start_with(n, true)
    }

    fn start_with(n: usize, forwarding: bool) -> Option<Cluster> {
        assert!(
            (1..=250).contains(&n),
            "Cluster::start: 1..=250 hosts, not {n}"
        );
        let sshd = match prerequisites() {
            Ok(sshd) => sshd,
            Err(why) if need::ci() => {
                panic!("CI is set, so OpenSSH tests must run, but {why}")
            }
            Err(why) => {
                need::skip(&why, "a loopback sshd fleet");
                return None;
            }
        };
        // sshd refuses to start without its privilege separation directory.
        fs::create_dir_all("/run/sshd").expect("create /run/sshd");
        clear_stale_shell_lock();

        let dir = tempfile::Builder::new()
            .prefix("iofleet-sshd-")
            .tempdir()
            .expect("temp dir");
        let d = dir.path();
        let client_key = d.join("client_ed25519");
        keygen(&client_key);
        let authorized_keys = d.join("authorized_keys");
        fs::copy(client_key.with_extension("pub"), &authorized_keys).expect("authorized_keys");

        let mut cluster = Cluster {
            hosts: Vec::new(),
            ssh_config: d.join("ssh_config"),
            client_key,
            dir,
        };
        for i in 0..n {
            // From here on a panic drops `cluster`, which kills the hosts started so far.
            let host = cluster.spawn_host(&sshd, i, &authorized_keys, forwarding);
            cluster.hosts.push(host);
        }
        fs::write(&cluster.ssh_config, cluster.render_ssh_config()).expect("write ssh_config");
        for i in 0..n {
            cluster.wait_ready(i);
        }
        Some(cluster)
    }

    /// Arguments that make `ssh` (or anything that forwards them to ssh) reach the aliases.
    pub fn ssh_args(&self) -> Vec<String> {
        vec!["-F".into(), self.ssh_config.display().to_string()]
    }

    /// `ssh -F <ssh_config> <alias>`; append the remote command with `.arg(...)`.
    pub fn ssh(&self, alias: &str) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args(self.ssh_args()).arg(alias).stdin(Stdio::null());
        cmd
    }

    /// An iofleet inventory of every host (each its data directory as target, `extra`
    /// TOML lines added to each), written to `dir/inventory.toml`: its path.
    pub fn inventory(&self, dir: &Path, extra: &str) -> String {
        let opts: Vec<String> = self.ssh_args().iter().map(|a| format!("{a:?}")).collect();
        let mut t = format!("[ssh]\noptions = [{}]\n", opts.join(", "));
        for h in &self.hosts {
            t.push_str(&format!(
                "[[host]]\ndestination = {:?}\ntarget = {:?}\n{extra}",
                h.alias,
                h.data_dir.display().to_string()
            ));
        }
        let p = dir.join("inventory.toml");
        fs::write(&p, t).expect("write inventory");
        p.to_string_lossy().into_owned()
    }

    /// Per host, the logins its sshd accepted so far (its log's `Accepted publickey`
    /// lines: sshd logs every authenticated session at its default level).
    pub fn logins(&self) -> Vec<usize> {
        self.hosts
            .iter()
            .map(|h| {
                fs::read_to_string(&h.log)
                    .unwrap_or_default()
                    .matches("Accepted publickey")
                    .count()
            })
            .collect()
    }

    /// Aliases in order: `["h1", "h2", …]`.
    pub fn aliases(&self) -> Vec<String> {
        self.hosts.iter().map(|h| h.alias.clone()).collect()
    }

    /// Pid of host `i`'s listening sshd, or `None` once it has been killed.
    pub fn sshd_pid(&self, i: usize) -> Option<u32> {
        self.hosts[i].sshd.as_ref().map(Child::id)
    }

    /// Take host `i` down: kill every process started through it, then its listening sshd.
    /// New connections to it are refused afterwards, established ones are cut.
    pub fn kill_host(&mut self, i: usize) {
        if let Err(left) = self.take_down(i) {
            panic!(
                "processes of {} survive SIGKILL: {left:?}",
                self.hosts[i].alias
            );
        }
    }

    /// SIGKILL every process started through host `i`'s sshd (sessions and the commands
    /// they run) and wait until they are gone; the listener keeps accepting.
    pub fn kill_sessions(&self, i: usize) {
        if let Err(left) = self.end_sessions(i) {
            panic!(
                "sessions of {} survive SIGKILL: {left:?}",
                self.hosts[i].alias
            );
        }
    }

    /// [`Cluster::kill_host`] without panicking, for `Drop`.
    fn take_down(&mut self, i: usize) -> Result<(), Vec<u32>> {
        let first = self.end_sessions(i);
        if let Some(mut child) = self.hosts[i].sshd.take() {
            terminate(&mut child);
        }
        // Also catches sessions accepted between the two steps above.
        let second = self.end_sessions(i);
        first.and(second)
    }

    /// SIGKILL the session processes until none is left; `Err` with the survivors after 5 s.
    fn end_sessions(&self, i: usize) -> Result<(), Vec<u32>> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let pids = self.session_pids(i);
            if pids.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(pids);
            }
            signal("KILL", &pids);
            sleep(Duration::from_millis(20));
        }
    }

    /// Live processes started through host `i`'s sshd, not counting the listener itself.
    pub fn session_pids(&self, i: usize) -> Vec<u32> {
        let host = &self.hosts[i];
        let listener = host.sshd.as_ref().map(Child::id);
        let mut roots = pids_holding(&host.log);
        roots.extend(listener);
        let mut all = Vec::new();
        for root in roots {
            for pid in process_tree(root) {
                if Some(pid) != listener && !all.contains(&pid) {
                    all.push(pid);
                }
            }
        }
        all
    }

    fn spawn_host(&self, sshd: &Path, i: usize, authorized_keys: &Path, forwarding: bool) -> Host {
        let d = self.dir.path();
        let n = i + 1;
        let addr = Ipv4Addr::new(127, 0, 0, 2 + i as u8);
        let host_key = d.join(format!("host{n}_ed25519"));
        keygen(&host_key);
        let data_dir = d.join(format!("data-h{n}"));
        fs::create_dir(&data_dir).expect("create data dir");
        let sshd_config = d.join(format!("sshd-h{n}.conf"));
        let log = d.join(format!("sshd-h{n}.log"));
        let pid_file = d.join(format!("sshd-h{n}.pid"));

        // The port is free when we look; another process may take it before sshd binds, so
        // a bind failure is retried with a fresh port.
        for _attempt in 0..5 {
            let port = TcpListener::bind((addr, 0))
                .expect("bind probe")
                .local_addr()
                .unwrap()
                .port();
            let mut text =
                sshd_config_text(addr, port, &host_key, authorized_keys, &pid_file, true);
            if forwarding {
                text = text.replace("AllowTcpForwarding no", "AllowTcpForwarding local");
            }
            fs::write(&sshd_config, &text).expect("write sshd_config");
            let check = run(Command::new(sshd).arg("-t").arg("-f").arg(&sshd_config));
            if !check.status.success()
                && String::from_utf8_lossy(&check.stderr).contains("PerSourcePenalties")
            {
                // Older than OpenSSH 9.8: no penalties to switch off.
                text = sshd_config_text(addr, port, &host_key, authorized_keys, &pid_file, false);
                if forwarding {
                    text = text.replace("AllowTcpForwarding no", "AllowTcpForwarding local");
                }
                fs::write(&sshd_config, &text).expect("write sshd_config");
            }
            let check = run(Command::new(sshd).arg("-t").arg("-f").arg(&sshd_config));
            assert!(
                check.status.success(),
                "sshd -t rejects {}:\n{}\n{text}",
                sshd_config.display(),
                String::from_utf8_lossy(&check.stderr)
            );

            let log_file = fs::File::create(&log).expect("create sshd log");
            let child = Command::new(sshd)
                .arg("-D")
                .arg("-e")
                .arg("-f")
                .arg(&sshd_config)
                .stdin(Stdio::null())
                .stdout(log_file.try_clone().expect("dup log"))
                .stderr(log_file)
                .spawn()
                .expect("spawn sshd");
            let mut host = Host {
                alias: format!("h{n}"),
                addr: addr.to_string(),
                port,
                data_dir: data_dir.clone(),
                sshd_config: sshd_config.clone(),
                log: log.clone(),
                sshd: Some(child),
            };
            match wait_listening(&mut host) {
                Ok(()) => return host,
                Err(log_text) if log_text.contains("Address already in use") => continue,
                Err(log_text) => panic!("sshd for h{n} exited:\n{log_text}"),
            }
        }
        panic!("sshd for h{n}: no free port on {addr} after 5 attempts");
    }

    fn render_ssh_config(&self) -> String {
        let key = self.client_key.display();
        let mut s = String::from("# Written by tests/support/sshd.rs; loopback hosts only.\n");
        for h in &self.hosts {
            s += &format!(
                "Host {}\n  HostName {}\n  Port {}\n",
                h.alias, h.addr, h.port
            );
            s += &format!("  User root\n  IdentityFile {key}\n");
            s += concat!(
                "  IdentitiesOnly yes\n  IdentityAgent none\n  BatchMode yes\n",
                "  StrictHostKeyChecking no\n  CheckHostIP no\n",
                "  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /dev/null\n",
                "  LogLevel ERROR\n  ConnectTimeout 5\n",
                "  ControlMaster no\n  ControlPath none\n  ForwardAgent no\n  ForwardX11 no\n",
            );
        }
        s
    }

    /// Poll `ssh hN true` until it succeeds; panics with the sshd log after the timeout.
    fn wait_ready(&self, i: usize) {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let out = run(self.ssh(&self.hosts[i].alias).arg("true"));
            if out.status.success() {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "ssh {} true still fails after {READY_TIMEOUT:?}: {}\nsshd log:\n{}",
                    self.hosts[i].alias,
                    String::from_utf8_lossy(&out.stderr),
                    fs::read_to_string(&self.hosts[i].log).unwrap_or_default()
                );
            }
            sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Drop may run while a test panics: report, never panic, keep killing.
        for i in 0..self.hosts.len() {
            if let Err(left) = self.take_down(i) {
                eprintln!(
                    "sshd harness: processes of {} survive SIGKILL: {left:?}",
                    self.hosts[i].alias
                );
            }
        }
    }
}

/// `pid` and all its live descendants (parents before children), from `/proc/*/stat`.
/// Empty if `pid` is not alive. Zombies are left out: they are already dead.
pub fn process_tree(pid: u32) -> Vec<u32> {
    let procs = processes();
    if !procs.iter().any(|p| p.pid == pid) {
        return Vec::new();
    }
    let mut tree = vec![pid];
    let mut next = 0;
    while next < tree.len() {
        let parent = tree[next];
        tree.extend(procs.iter().filter(|p| p.ppid == parent).map(|p| p.pid));
        next += 1;
    }
    tree
}

/// Live processes whose command line (arguments joined by spaces) contains `needle`,
/// excluding this test process. Mind that the local `ssh` client's command line contains
/// the remote command too: filter with [`cmdline`] (e.g. `starts_with`) to tell them apart.
pub fn pids_matching(needle: &str) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|p| p.pid != std::process::id() && cmdline(p.pid).contains(needle))
        .map(|p| p.pid)
        .collect()
}

/// The command line of `pid`, arguments joined by spaces; empty if it is gone (or a
/// kernel thread). sshd rewrites its own: `sshd: root@notty`, `sshd: /usr/sbin/sshd -D …`.
pub fn cmdline(pid: u32) -> String {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw)
        .trim_end_matches('\0')
        .replace('\0', " ")
}

/// Live processes (other than this one) with an open file descriptor on `path` or, if
/// `path` is a directory, on anything under it. Needs root to see other users' processes.
pub fn pids_holding(path: &Path) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|p| p.pid != std::process::id())
        .filter(|p| {
            let Ok(fds) = fs::read_dir(format!("/proc/{}/fd", p.pid)) else {
                return false;
            };
            fds.flatten()
                .any(|fd| fs::read_link(fd.path()).is_ok_and(|target| target.starts_with(path)))
        })
        .map(|p| p.pid)
        .collect()
}

struct Proc {
    pid: u32,
    ppid: u32,
}

/// Every live (non-zombie) process.
fn processes() -> Vec<Proc> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = fs::read_to_string(e.path().join("stat")).ok()?;
            // "pid (comm) state ppid …"; comm may contain spaces and parentheses.
            let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
            let state = rest.next()?;
            let ppid = rest.next()?.parse().ok()?;
            (state != "Z" && state != "X").then_some(Proc { pid, ppid })
        })
        .collect()
}

/// Absolute path of sshd (it re-executes itself, so it must be absolute), or why the
/// servers cannot run here.
fn prerequisites() -> Result<PathBuf, String> {
    let uid = fs::read_to_string("/proc/self/status").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .map(|l| l.split_whitespace().nth(1) == Some("0"))
    });
    if uid != Some(true) {
        return Err("loopback sshd tests need root (sshd privilege separation)".into());
    }
    for tool in ["ssh", "ssh-keygen"] {
        if find_in_path(tool).is_none() {
            return Err(format!(
                "`{tool}` not found (apt-get install openssh-client)"
            ));
        }
    }
    ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| find_in_path("sshd"))
        .ok_or_else(|| "`sshd` not found (apt-get install openssh-server)".into())
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn keygen(key: &Path) {
    let out = run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "iofleet-test", "-f"])
        .arg(key));
    assert!(
        out.status.success(),
        "ssh-keygen {}: {}",
        key.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sshd_config_text(
    addr: Ipv4Addr,
    port: u16,
    host_key: &Path,
    authorized_keys: &Path,
    pid_file: &Path,
    penalties_option: bool,
) -> String {
    let mut s = format!(
        "ListenAddress {addr}:{port}\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\n",
        host_key.display(),
        authorized_keys.display(),
        pid_file.display()
    );
    s += concat!(
        "PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n",
        "PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\nUseDNS no\n",
        "PrintMotd no\nPrintLastLog no\nX11Forwarding no\nAllowAgentForwarding no\n",
        "AllowTcpForwarding no\nPermitTunnel no\nMaxStartups 100\nMaxSessions 100\n",
        "LoginGraceTime 30\n",
    );
    if penalties_option {
        // OpenSSH >= 9.8 would otherwise lock out 127.0.0.1 after sessions we kill.
        s += "PerSourcePenalties no\n";
    }
    s
}

/// Wait until the host's port accepts TCP connections; on sshd exiting, its log.
fn wait_listening(host: &mut Host) -> Result<(), String> {
    let addr: SocketAddr = format!("{}:{}", host.addr, host.port).parse().unwrap();
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let child = host.sshd.as_mut().expect("sshd running");
        if let Ok(Some(status)) = child.try_wait() {
            host.sshd = None;
            let log = fs::read_to_string(&host.log).unwrap_or_default();
            return Err(format!("{status}\n{log}"));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let mut child = host.sshd.take().unwrap();
            terminate(&mut child);
            let log = fs::read_to_string(&host.log).unwrap_or_default();
            return Err(format!(
                "not listening on {addr} after {READY_TIMEOUT:?}\n{log}"
            ));
        }
        sleep(Duration::from_millis(20));
    }
}

/// SIGTERM, up to 2 s to exit, then SIGKILL; always reaps.
fn terminate(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    signal("TERM", &[child.id()]);
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Send `SIG<name>` to `pids` through the shell's `kill` builtin (std has no kill(2)).
/// Processes that are already gone are not an error.
fn signal(name: &str, pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    let _ = Command::new("sh")
        .arg("-c")
        .arg(format!("kill -{name} \"$@\" 2>/dev/null"))
        .arg("sh")
        .args(pids.iter().map(u32::to_string))
        .stdin(Stdio::null())
        .status();
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"))
}
