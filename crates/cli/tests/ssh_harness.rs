//! The loopback sshd harness (`support/sshd.rs`) against real OpenSSH: every alias reaches
//! its own address, a session carries binary stdin/stdout unchanged, killing a host or its
//! sessions does exactly that, and dropping a cluster leaves no process behind.
//!
//! Each test skips (prints `skip: …`) without root or OpenSSH, unless `CI` is set.

mod common;
#[path = "support/sshd.rs"]
mod sshd;

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use sshd::{cmdline, pids_holding, pids_matching, process_tree, Cluster};

fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        sleep(Duration::from_millis(20));
    }
}

/// A `sleep` command line no other test (or test run) uses, so `pids_matching` finds ours.
fn unique_sleep() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "sleep 30.{}{:03}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Processes running `command` itself, not the local ssh client that names it.
fn remote_pids(command: &str) -> Vec<u32> {
    pids_matching(command)
        .into_iter()
        .filter(|&p| cmdline(p).starts_with(command))
        .collect()
}

/// Start `sleep` on `alias` over ssh; returns the ssh client and the remote sleep's pid.
fn remote_sleep(cluster: &Cluster, alias: &str) -> (Child, u32, String) {
    let command = unique_sleep();
    let client = cluster
        .ssh(alias)
        .arg(&command)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ssh");
    let mut pid = None;
    let found = wait_until(Duration::from_secs(5), || {
        pid = remote_pids(&command).first().copied();
        pid.is_some()
    });
    assert!(found, "`{command}` never started on {alias}");
    (client, pid.unwrap(), command)
}

/// Wait for an ssh client to exit by itself; its exit status.
fn exits_within(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let mut status = None;
    wait_until(timeout, || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    status
}

fn ssh_ok(cluster: &Cluster, alias: &str) -> bool {
    cluster
        .ssh(alias)
        .arg("true")
        .stderr(Stdio::null())
        .status()
        .expect("run ssh")
        .success()
}

#[test]
fn each_alias_reaches_its_own_loopback_address() {
    let Some(cluster) = Cluster::start(3) else {
        return;
    };
    assert_eq!(cluster.aliases(), ["h1", "h2", "h3"]);
    for (host, want) in cluster
        .hosts
        .iter()
        .zip(["127.0.0.2", "127.0.0.3", "127.0.0.4"])
    {
        assert_eq!(host.addr, want);
        assert!(host.data_dir.is_dir(), "{} has no data dir", host.alias);
        let out = Command::new("ssh")
            .args(cluster.ssh_args())
            .arg(&host.alias)
            .arg("echo $SSH_CONNECTION")
            .stdin(Stdio::null())
            .output()
            .expect("run ssh");
        assert!(
            out.status.success(),
            "{}: {}",
            host.alias,
            String::from_utf8_lossy(&out.stderr)
        );
        // "client_ip client_port server_ip server_port"
        let text = String::from_utf8(out.stdout).unwrap();
        let fields: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(fields.len(), 4, "SSH_CONNECTION = {text:?}");
        assert_eq!(fields[2], want, "server address of {}", host.alias);
        assert_eq!(
            fields[3],
            host.port.to_string(),
            "server port of {}",
            host.alias
        );
        assert!(
            fields[0].starts_with("127."),
            "client address {}",
            fields[0]
        );
    }
}

#[test]
fn session_stdin_stdout_carry_one_mib_of_binary_unchanged() {
    let Some(cluster) = Cluster::start(1) else {
        return;
    };
    // Every byte value, in an order that is not periodic at any small length.
    let mut x: u32 = 0x1234_5678;
    let sent: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect();
    let mut child = cluster
        .ssh("h1")
        .arg("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ssh");
    let mut stdin = child.stdin.take().unwrap();
    let to_send = sent.clone();
    // Write from another thread: cat echoes while we write, and pipes are small.
    let writer = std::thread::spawn(move || {
        stdin.write_all(&to_send).expect("write to ssh");
        // Dropping stdin closes it: EOF reaches the remote cat, which then exits.
    });
    let mut received = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut received)
        .expect("read from ssh");
    writer.join().unwrap();
    let out = child.wait_with_output().expect("wait ssh");
    assert!(
        out.status.success(),
        "ssh cat: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(received.len(), sent.len());
    assert!(received == sent, "bytes changed on the way through ssh");
}

#[test]
fn kill_host_takes_down_one_host_and_its_sessions_only() {
    let Some(mut cluster) = Cluster::start(3) else {
        return;
    };
    let (mut client, sleep_pid, _) = remote_sleep(&cluster, "h2");
    let listener = cluster.sshd_pid(1).unwrap();
    assert!(process_tree(listener).contains(&sleep_pid));

    cluster.kill_host(1);
    assert_eq!(cluster.sshd_pid(1), None);
    assert!(process_tree(listener).is_empty(), "h2's sshd still runs");
    assert!(
        process_tree(sleep_pid).is_empty(),
        "the session's sleep survived kill_host"
    );
    let status = exits_within(&mut client, Duration::from_secs(5))
        .expect("ssh to a killed host did not exit");
    assert!(!status.success());

    let t = Instant::now();
    assert!(!ssh_ok(&cluster, "h2"), "h2 still accepts connections");
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "connection refused should be fast"
    );
    assert!(ssh_ok(&cluster, "h1"));
    assert!(ssh_ok(&cluster, "h3"));
}

#[test]
fn kill_sessions_ends_remote_commands_and_keeps_the_server() {
    let Some(cluster) = Cluster::start(2) else {
        return;
    };
    let (mut c1, sleep1, _) = remote_sleep(&cluster, "h1");
    let (mut c2, sleep2, _) = remote_sleep(&cluster, "h2");
    let tree = process_tree(cluster.sshd_pid(0).unwrap());
    assert!(
        tree.contains(&sleep1),
        "sleep {sleep1} not under h1's sshd: {tree:?}"
    );
    assert!(!tree.contains(&sleep2), "h2's sleep under h1's sshd");
    assert!(cluster.session_pids(0).contains(&sleep1));

    cluster.kill_sessions(0);
    assert!(
        process_tree(sleep1).is_empty(),
        "sleep survived kill_sessions"
    );
    let status =
        exits_within(&mut c1, Duration::from_secs(5)).expect("ssh client outlived its session");
    assert!(!status.success());
    // h1 still serves, h2's session is untouched.
    assert!(ssh_ok(&cluster, "h1"));
    assert_eq!(process_tree(sleep2).first(), Some(&sleep2));
    assert!(c2.try_wait().unwrap().is_none());

    cluster.kill_sessions(1);
    assert!(exits_within(&mut c2, Duration::from_secs(5)).is_some());
}

#[test]
fn drop_leaves_no_sshd_nor_session_even_when_orphaned() {
    let Some(cluster) = Cluster::start(2) else {
        return;
    };
    let dir = cluster.dir.path().to_path_buf();
    let configs: Vec<String> = cluster
        .hosts
        .iter()
        .map(|h| h.sshd_config.display().to_string())
        .collect();
    for config in &configs {
        assert_eq!(
            pids_matching(config).len(),
            1,
            "the listener's command line names {config}"
        );
    }
    let (mut c1, sleep1, cmd1) = remote_sleep(&cluster, "h1");
    let (mut c2, _, cmd2) = remote_sleep(&cluster, "h2");
    // Kill h1's listener behind the harness's back: its session gets re-parented away from
    // the listener's tree, and Drop must still find it (through the sshd log it holds).
    let listener = cluster.sshd_pid(0).unwrap();
    Command::new("kill")
        .arg("-TERM")
        .arg(listener.to_string())
        .status()
        .expect("kill");
    assert!(wait_until(Duration::from_secs(5), || pids_matching(
        &configs[0]
    )
    .is_empty()));
    assert!(
        process_tree(sleep1).contains(&sleep1),
        "the orphaned session lives on"
    );

    drop(cluster);
    for config in &configs {
        assert_eq!(
            pids_matching(config),
            Vec::<u32>::new(),
            "an sshd with {config} survived Drop"
        );
    }
    assert_eq!(
        pids_matching(&cmd1),
        Vec::<u32>::new(),
        "orphaned session survived Drop"
    );
    assert_eq!(
        pids_matching(&cmd2),
        Vec::<u32>::new(),
        "session survived Drop"
    );
    assert_eq!(
        pids_holding(&dir),
        Vec::<u32>::new(),
        "processes still hold files in the temp dir"
    );
    assert!(!dir.exists(), "temp dir not removed");
    assert!(exits_within(&mut c1, Duration::from_secs(5)).is_some());
    assert!(exits_within(&mut c2, Duration::from_secs(5)).is_some());
}
