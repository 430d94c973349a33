//! What a test needs from the machine, checked one way in every test binary (included
//! with `#[path]`): a tool on PATH, root, a capability. Present: the test runs. Missing
//! under CI (`CI` set, as `.ci/run` runs): the test fails and names what is missing,
//! because CI installs every tool and a skip there would hide a real failure. Missing
//! elsewhere: the test says `skipped: TOOL not installed` and returns, and the skip is
//! appended to the file named by `IOFLEET_SKIP_LOG` (the README's test command sets it
//! and prints a summary of every skip at the end). Environment facts that no install
//! provides (a filesystem without O_DIRECT, a container that forbids mounts) go through
//! `environment`, which skips under CI too but is still listed.
#![allow(dead_code)]

use std::io::Write;

/// CI is running the suite (`CI` set to anything but empty, `0` or `false`).
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// The effective user is root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// `cmd` is on PATH (or in /usr/sbin, /sbin, where Debian keeps losetup and sshd).
pub fn have(cmd: &str) -> bool {
    std::process::Command::new("sh")
        .args([
            "-c",
            &format!("command -v {cmd} || test -x /usr/sbin/{cmd} || test -x /sbin/{cmd}"),
        ])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn log(what: &str, test: &str) {
    if let Some(path) = std::env::var_os("IOFLEET_SKIP_LOG") {
        // One write per line, O_APPEND: lines from parallel tests never interleave.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
        {
            let _ = f.write_all(format!("{what}\t{test}\n").as_bytes());
        }
    }
}

/// Whether every one of `needs` is present: "root", or a command name. Missing ones fail
/// the test under CI and skip it elsewhere (see the module doc).
pub fn need(test: &str, needs: &[&str]) -> bool {
    let missing: Vec<&str> = needs
        .iter()
        .copied()
        .filter(|n| if *n == "root" { !is_root() } else { !have(n) })
        .collect();
    if missing.is_empty() {
        return true;
    }
    if ci() {
        panic!(
            "CI is set, so {test} must run, but {} {} missing (.ci/run installs the tools and runs as root)",
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" }
        );
    }
    for m in &missing {
        if *m == "root" {
            eprintln!("skipped: {test} needs root");
        } else {
            eprintln!("skipped: {m} not installed ({test})");
        }
        log(m, test);
    }
    false
}

/// Skip for a reason found elsewhere (`what` missing): said and logged like `need`'s.
pub fn skip(what: &str, test: &str) {
    eprintln!("skipped: {what} ({test})");
    log(what, test);
}

/// A fact of this machine that no install provides (`what` says which): skipped even
/// under CI, and listed in the summary.
pub fn environment(test: &str, what: &str, ok: bool) -> bool {
    if !ok {
        eprintln!("skipped: {test}: {what}");
        log(what, test);
    }
    ok
}
