//! A hypervisor on another machine (`qemu+ssh://[user@]host[:port]/system`): its files
//! and its guests' join channels, reached over OpenSSH as libvirt reaches its daemon
//! there. virsh speaks to the remote libvirt through libvirt's own ssh transport (the
//! URI as given); what iofleet itself puts on that machine (each VM's kernel and
//! initramfs), removes there (those, libvirt's QEMU log of a domain) and connects to
//! (each domain's channel socket) goes through one ssh connection per hypervisor, a
//! control master whose Unix socket lives in a private directory (mode 0700) of the
//! controller, with the same user, port, key, host-key rule and ssh binary as the URI
//! names (libvirt's `docs/uri.rst`: `keyfile`, `no_verify`, `command`; `known_hosts`,
//! which libvirt's libssh transports read, is honoured too).
//!
//! A channel is carried by OpenSSH's Unix-socket forwarding (`-O forward -L
//! LOCAL.sock:REMOTE.sock` on the master): the controller connects to the local socket
//! and ssh connects to QEMU's socket on the hypervisor. The master runs in its own
//! process group (a terminal's Ctrl-C reaches the controller, which removes the fleet
//! over it, not the master), reads its standard input from the controller (so it ends
//! with the controller even when that is killed), and is ended when this value drops.
//!
//! What this module does not do: speak libvirt's protocol (virsh does), or copy
//! anything but the few files the launcher writes.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::files::HostFiles;

/// How long the ssh connection may take to come up (its `ConnectTimeout` and the
/// authentication after it).
const CONNECT: Duration = Duration::from_secs(20);

/// How ssh reaches a `qemu+ssh://` hypervisor, as its URI says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// The URI as written (for messages).
    pub uri: String,
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    /// `keyfile=`: the private key (`ssh -i`).
    pub keyfile: Option<String>,
    /// `no_verify=1`: a new host key is accepted (`StrictHostKeyChecking=no`).
    pub no_verify: bool,
    /// `known_hosts=`: the file host keys are checked against.
    pub known_hosts: Option<String>,
    /// `command=`: the ssh binary.
    pub command: Option<String>,
}

/// `%XX` escapes of a URI parameter's value decoded.
fn unescape(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl SshTarget {
    /// The ssh target of a `qemu+ssh://` URI; `None` for any other URI. An error names
    /// `vms.hypervisors` and the URI.
    pub fn parse(uri: &str) -> Option<Result<SshTarget, String>> {
        let rest = uri.strip_prefix("qemu+ssh://")?;
        Some(Self::parse_rest(uri, rest))
    }

    fn parse_rest(uri: &str, rest: &str) -> Result<SshTarget, String> {
        let bad = |why: &str| format!("vms.hypervisors: '{uri}': {why}");
        let (authority, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let query = tail.split_once('?').map_or("", |(_, q)| q);
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) if !u.is_empty() => (Some(unescape(u)), h),
            Some(_) => return Err(bad("an empty user before '@'")),
            None => (None, authority),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| bad("an IPv6 address without its closing ']'"))?;
            (h, after.strip_prefix(':'))
        } else {
            match hostport.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() {
            return Err(bad("names no host to reach over ssh"));
        }
        if host.starts_with('-') {
            return Err(bad("a host name cannot start with '-'"));
        }
        let port = match port {
            None => None,
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| bad(&format!("'{p}' is not a port")))?,
            ),
        };
        let mut t = SshTarget {
            uri: uri.to_string(),
            user,
            host: host.to_string(),
            port,
            keyfile: None,
            no_verify: false,
            known_hosts: None,
            command: None,
        };
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let v = unescape(v);
            match k {
                "keyfile" => t.keyfile = Some(v),
                "known_hosts" => t.known_hosts = Some(v),
                "command" => t.command = Some(v),
                "no_verify" => t.no_verify = v != "0" && !v.is_empty(),
                // libvirt's own (daemon mode, proxy, socket, netcat, no_tty): virsh reads
                // them; iofleet's ssh is always in batch mode.
                _ => {}
            }
        }
        Ok(t)
    }

    /// `user@host` (or `host`), as ssh takes it after `--`.
    pub fn destination(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        }
    }

    /// The ssh binary and the options every ssh of this hypervisor takes: the URI's
    /// port, key, host-key rule, in batch mode with keep-alives, through `control`.
    pub fn base_args(&self, control: &Path) -> (String, Vec<String>) {
        let mut a: Vec<String> = Vec::new();
        if let Some(p) = self.port {
            a.extend(["-p".into(), p.to_string()]);
        }
        if let Some(k) = &self.keyfile {
            a.extend(["-i".into(), k.clone()]);
        }
        if self.no_verify {
            a.extend(["-o".into(), "StrictHostKeyChecking=no".into()]);
        }
        if let Some(k) = &self.known_hosts {
            a.extend(["-o".into(), format!("UserKnownHostsFile={k}")]);
        }
        for o in [
            "BatchMode=yes",
            "ConnectTimeout=15",
            "ServerAliveInterval=5",
            "ServerAliveCountMax=3",
        ] {
            a.extend(["-o".into(), o.into()]);
        }
        a.extend(["-o".into(), format!("ControlPath={}", control.display())]);
        (self.command.clone().unwrap_or_else(|| "ssh".into()), a)
    }

    /// The control master: one connection for every file and channel of this
    /// hypervisor, ending when its standard input closes (`cat`'s end of file).
    pub fn master_args(&self, control: &Path) -> (String, Vec<String>) {
        let (ssh, mut a) = self.base_args(control);
        a.extend(
            [
                "-o",
                "ControlMaster=yes",
                "-o",
                "ControlPersist=no",
                "-o",
                "ExitOnForwardFailure=yes",
                "-T",
                "--",
            ]
            .map(String::from),
        );
        a.push(self.destination());
        a.push("exec cat >/dev/null".into());
        (ssh, a)
    }

    /// A command on the hypervisor through the master (or, with the master gone, over
    /// a connection of its own: `ControlMaster=no` falls back to one).
    pub fn command_args(&self, control: &Path, script: &str) -> (String, Vec<String>) {
        let (ssh, mut a) = self.base_args(control);
        a.extend(["-o", "ControlMaster=no", "-T", "--"].map(String::from));
        a.push(self.destination());
        a.push(script.into());
        (ssh, a)
    }

    /// The master told to forward `local` (a Unix socket it creates here) to `remote`
    /// (a Unix socket on the hypervisor); `op` is `forward`, `check` or `exit`.
    pub fn control_args(
        &self,
        control: &Path,
        op: &str,
        forward: Option<(&Path, &Path)>,
    ) -> (String, Vec<String>) {
        let (ssh, mut a) = self.base_args(control);
        a.extend(["-O".into(), op.into()]);
        if let Some((local, remote)) = forward {
            a.extend([
                "-L".into(),
                format!("{}:{}", local.display(), remote.display()),
            ]);
        }
        a.push("--".into());
        a.push(self.destination());
        (ssh, a)
    }
}

/// A path on the hypervisor quoted for its shell.
fn quote(p: &Path) -> String {
    format!("'{}'", p.to_string_lossy().replace('\'', r"'\''"))
}

/// A private directory for the control socket and the channels' local ends: mode 0700,
/// removed with everything in it when dropped.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn new() -> std::io::Result<PrivateDir> {
        use std::os::unix::fs::DirBuilderExt;
        static N: AtomicU32 = AtomicU32::new(0);
        let tmp = std::env::temp_dir();
        if N.load(Ordering::SeqCst) == 0 {
            sweep_stale(&tmp);
        }
        let p = tmp.join(format!(
            "iofleet-ssh-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&p)?;
        Ok(PrivateDir(p))
    }
}

/// Remove what an iofleet killed outright (SIGKILL: no drop ran) left in `tmp`: the
/// private directories of processes that no longer run, this user's only. Their
/// sockets are dead (the master's session ended with its stdin); a directory of a
/// process that runs, of another user, or whose control socket still answers (a
/// process of another PID namespace sharing this `tmp`) is left alone.
fn sweep_stale(tmp: &Path) {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    for entry in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("iofleet-ssh-")
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, n)| n.parse::<u32>().ok().and(pid.parse::<u32>().ok()))
        else {
            continue;
        };
        let ours = std::fs::symlink_metadata(entry.path())
            .is_ok_and(|m| m.is_dir() && Some(m.uid()) == me);
        let answers = || UnixStream::connect(entry.path().join("ctl")).is_ok();
        if ours && !Path::new(&format!("/proc/{pid}")).exists() && !answers() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The master connection while it runs.
struct Master {
    dir: PrivateDir,
    child: Child,
    /// Its standard input: closed, the master's session ends.
    stdin: Option<ChildStdin>,
}

/// A remote hypervisor's files and sockets, over ssh.
pub struct Ssh {
    pub target: SshTarget,
    master: Mutex<Option<Master>>,
}

impl Ssh {
    pub fn new(target: SshTarget) -> Ssh {
        Ssh {
            target,
            master: Mutex::new(None),
        }
    }

    fn err(&self, what: &str, e: impl std::fmt::Display) -> String {
        format!(
            "vms.hypervisors: '{}': ssh to {}: {what}: {e}",
            self.target.uri, self.target.host
        )
    }

    /// The control socket of the running master, started if need be.
    fn control(&self) -> Result<PathBuf, String> {
        let mut m = self.master.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(master) = m.as_mut() {
            if matches!(master.child.try_wait(), Ok(None)) {
                return Ok(master.dir.0.join("ctl"));
            }
            *m = None;
        }
        let dir = PrivateDir::new().map_err(|e| self.err("a private directory", e))?;
        let control = dir.0.join("ctl");
        let log = dir.0.join("master.log");
        let (ssh, args) = self.target.master_args(&control);
        let log_file = std::fs::File::create(&log).map_err(|e| self.err("its log", e))?;
        let mut child = Command::new(&ssh)
            .args(&args)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| self.err(&format!("cannot run {ssh}"), e))?;
        let stdin = child.stdin.take();
        let mut master = Master { dir, child, stdin };
        let t0 = Instant::now();
        loop {
            if let Ok(Some(status)) = master.child.try_wait() {
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(self.err(
                    "the connection failed",
                    format!("{status}: {}", said.trim()),
                ));
            }
            let (ssh, args) = self.target.control_args(&control, "check", None);
            let ok = Command::new(&ssh)
                .args(&args)
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                break;
            }
            if t0.elapsed() > CONNECT {
                end(&self.target, &mut master);
                return Err(self.err(
                    "the connection failed",
                    format!("not up within {} s", CONNECT.as_secs()),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        *m = Some(master);
        Ok(control)
    }

    /// Run `script` on the hypervisor with `input` on its standard input: its output.
    fn run(&self, script: &str, input: Option<&[u8]>) -> Result<String, String> {
        let control = self.control()?;
        let (ssh, args) = self.target.command_args(&control, script);
        let mut child = Command::new(&ssh)
            .args(&args)
            .process_group(0)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.err(&format!("cannot run {ssh}"), e))?;
        let mut written = Ok(());
        if let (Some(data), Some(mut w)) = (input, child.stdin.take()) {
            written = w.write_all(data);
        }
        let o = child.wait_with_output().map_err(|e| self.err(script, e))?;
        if !o.status.success() {
            return Err(self.err(
                script,
                format!(
                    "{}: {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
            ));
        }
        written.map_err(|e| self.err(script, e))?;
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }
}

/// End a master: told to exit, its input closed, killed if it stays, and reaped.
fn end(target: &SshTarget, m: &mut Master) {
    let (ssh, args) = target.control_args(&m.dir.0.join("ctl"), "exit", None);
    let _ = Command::new(ssh)
        .args(args)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    m.stdin = None;
    let t0 = Instant::now();
    while matches!(m.child.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = m.child.kill();
    let _ = m.child.wait();
}

impl Drop for Ssh {
    fn drop(&mut self) {
        let m = self.master.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(mut master) = m.take() {
            end(&self.target, &mut master);
        }
    }
}

impl HostFiles for Ssh {
    fn write(&self, path: &Path, data: &[u8]) -> Result<(), String> {
        let dir = path.parent().unwrap_or(Path::new("/"));
        // umask: the file is its owner's only from its first byte (an initramfs holds
        // the join token). Written under its own name, so that a write cut short is
        // found by name and removed like the whole file.
        self.run(
            &format!(
                "umask 077 && mkdir -p {} && cat > {}",
                quote(dir),
                quote(path)
            ),
            Some(data),
        )
        .map(drop)
    }

    fn remove(&self, path: &Path) -> Result<(), String> {
        self.run(&format!("rm -f {}", quote(path)), None).map(drop)
    }

    fn is_file(&self, path: &Path) -> Result<bool, String> {
        let out = self.run(
            &format!("if [ -f {} ]; then echo file; fi", quote(path)),
            None,
        )?;
        Ok(out.trim() == "file")
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>, String> {
        let out = self.run(
            &format!("if [ -d {0} ]; then ls -1A {0}; fi", quote(dir)),
            None,
        )?;
        Ok(out.lines().map(str::to_string).collect())
    }

    fn tail(&self, path: &Path, lines: usize) -> Option<String> {
        self.run(&format!("tail -n {lines} {}", quote(path)), None)
            .ok()
            .filter(|s| !s.is_empty())
    }

    fn connect(&self, socket: &Path, name: &str) -> Result<UnixStream, String> {
        let control = self.control()?;
        let dir = control.parent().unwrap_or(Path::new("/"));
        let local = dir.join(format!("{name}.sock"));
        let _ = std::fs::remove_file(&local);
        let (ssh, args) = self
            .target
            .control_args(&control, "forward", Some((&local, socket)));
        let o = Command::new(&ssh)
            .args(&args)
            .process_group(0)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| self.err(&format!("cannot run {ssh}"), e))?;
        if !o.status.success() {
            return Err(self.err(
                &format!("forwarding {}", socket.display()),
                String::from_utf8_lossy(&o.stderr).trim(),
            ));
        }
        let stream = UnixStream::connect(&local)
            .map_err(|e| self.err(&format!("the forwarded {}", local.display()), e))?;
        // The local end is connected: its name is no longer needed.
        let _ = std::fs::remove_file(&local);
        Ok(stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(uri: &str) -> SshTarget {
        SshTarget::parse(uri).unwrap().unwrap()
    }

    #[test]
    fn a_killed_iofleet_s_private_directories_are_swept_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let mut gone = Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let mut alive = Command::new("sleep").arg("30").spawn().unwrap();
        let names = [
            format!("iofleet-ssh-{dead}-0"),
            format!("iofleet-ssh-{}-3", alive.id()),
            format!("iofleet-ssh-{dead}-x"),
            format!("other-{dead}-0"),
        ];
        for n in &names {
            std::fs::create_dir(tmp.path().join(n)).unwrap();
        }
        std::fs::write(tmp.path().join(&names[0]).join("control"), "").unwrap();
        // A dead PID's directory whose control socket still answers is in use (another
        // PID namespace): left.
        let listening = format!("iofleet-ssh-{dead}-2");
        std::fs::create_dir(tmp.path().join(&listening)).unwrap();
        let _master =
            std::os::unix::net::UnixListener::bind(tmp.path().join(&listening).join("ctl"))
                .unwrap();
        // A file of that name is not a directory of ours.
        std::fs::write(tmp.path().join(format!("iofleet-ssh-{dead}-1")), "").unwrap();
        sweep_stale(tmp.path());
        let _ = alive.kill();
        let _ = alive.wait();
        let mut left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want = vec![
            names[1].clone(),
            names[2].clone(),
            names[3].clone(),
            format!("iofleet-ssh-{dead}-1"),
            listening,
        ];
        want.sort();
        assert_eq!(left, want);
    }

    #[test]
    fn a_uri_gives_user_host_port_and_key() {
        let t = target(
            "qemu+ssh://root@127.0.0.2:2222/system?keyfile=/tmp/k%20ey&no_verify=1&known_hosts=/kh&command=/usr/bin/ssh&no_tty=1",
        );
        assert_eq!(t.user.as_deref(), Some("root"));
        assert_eq!(t.host, "127.0.0.2");
        assert_eq!(t.port, Some(2222));
        assert_eq!(t.keyfile.as_deref(), Some("/tmp/k ey"));
        assert!(t.no_verify);
        assert_eq!(t.known_hosts.as_deref(), Some("/kh"));
        assert_eq!(t.command.as_deref(), Some("/usr/bin/ssh"));
        assert_eq!(t.destination(), "root@127.0.0.2");

        let t = target("qemu+ssh://kvm2/system");
        assert_eq!((&t.user, t.port, &t.keyfile), (&None, None, &None));
        assert_eq!(t.destination(), "kvm2");
        assert!(!t.no_verify);
        let t = target("qemu+ssh://admin@[fe80::1]:22/system?no_verify=0");
        assert_eq!((t.host.as_str(), t.port), ("fe80::1", Some(22)));
        assert!(!t.no_verify);
        assert!(SshTarget::parse("qemu:///system").is_none());
    }

    #[test]
    fn a_bad_uri_is_an_error_naming_the_key_and_the_uri() {
        for (uri, says) in [
            ("qemu+ssh://h:port/system", "'port' is not a port"),
            ("qemu+ssh://h:0/system", "'0' is not a port"),
            ("qemu+ssh://@h/system", "an empty user"),
            ("qemu+ssh://:22/system", "names no host"),
            (
                "qemu+ssh://-oProxyCommand=x/system",
                "cannot start with '-'",
            ),
            ("qemu+ssh://[::1/system", "closing ']'"),
        ] {
            let e = SshTarget::parse(uri).unwrap().unwrap_err();
            assert!(
                e.starts_with(&format!("vms.hypervisors: '{uri}': ")) && e.contains(says),
                "{uri}: {e}"
            );
        }
    }

    #[test]
    fn every_ssh_uses_the_uri_s_port_key_and_host_key_rule_through_one_master() {
        let t = target("qemu+ssh://root@h:2200/system?keyfile=/k&no_verify=1");
        let ctl = Path::new("/tmp/d/ctl");
        let (ssh, a) = t.master_args(ctl);
        assert_eq!(ssh, "ssh");
        let a = a.join(" ");
        assert!(
            a.starts_with("-p 2200 -i /k -o StrictHostKeyChecking=no -o BatchMode=yes"),
            "{a}"
        );
        assert!(
            a.ends_with(
                "-o ControlPath=/tmp/d/ctl -o ControlMaster=yes -o ControlPersist=no -o ExitOnForwardFailure=yes -T -- root@h exec cat >/dev/null"
            ),
            "{a}"
        );
        let (_, a) = t.control_args(
            ctl,
            "forward",
            Some((Path::new("/tmp/d/x.sock"), Path::new("/var/lib/q/x"))),
        );
        assert!(
            a.join(" ").ends_with(
                "-o ControlPath=/tmp/d/ctl -O forward -L /tmp/d/x.sock:/var/lib/q/x -- root@h"
            ),
            "{a:?}"
        );
        let (_, a) = t.command_args(ctl, "rm -f '/b/x'");
        assert!(
            a.join(" ")
                .ends_with("-o ControlMaster=no -T -- root@h rm -f '/b/x'"),
            "{a:?}"
        );
        let t = target("qemu+ssh://h/system?known_hosts=/kh&command=/opt/ssh");
        let (ssh, a) = t.base_args(ctl);
        assert_eq!(ssh, "/opt/ssh");
        assert_eq!(&a[..2], ["-o", "UserKnownHostsFile=/kh"]);
        assert!(!a.contains(&"-p".to_string()) && !a.contains(&"-i".to_string()));
        assert_eq!(quote(Path::new("/a'b")), r"'/a'\''b'");
    }

    #[test]
    fn an_ssh_that_fails_or_is_missing_is_an_error_naming_the_key_and_the_host() {
        let uri = "qemu+ssh://root@h9/system?command=/bin/false";
        let ssh = Ssh::new(target(uri));
        let e = ssh.write(Path::new("/b/x"), b"x").unwrap_err();
        assert!(
            e.starts_with(&format!(
                "vms.hypervisors: '{uri}': ssh to h9: the connection failed"
            )),
            "{e}"
        );
        let e = ssh.list(Path::new("/b")).unwrap_err();
        assert!(e.contains("the connection failed"), "{e}");
        let e = ssh
            .connect(Path::new("/var/lib/q/s"), "iofleet-a-0")
            .unwrap_err();
        assert!(e.contains("the connection failed"), "{e}");
        assert_eq!(ssh.tail(Path::new("/l"), 3), None);
        let ssh = Ssh::new(target("qemu+ssh://h9/system?command=/nonexistent/ssh"));
        let e = ssh.remove(Path::new("/b/x")).unwrap_err();
        assert!(e.contains("ssh to h9: cannot run /nonexistent/ssh"), "{e}");
    }
}
