//! What a test needs from the machine, checked one way in every test binary (included
//! with `#[path]`): a tool on PATH, root, a capability of this machine. Every skip in the
//! suite goes through here, and `suite_rules.rs` checks the test sources for early returns
//! and skip messages that do not.
//!
//! Present: the test runs. Missing under CI (`CI` set, as `.ci/run` runs): the test fails
//! and names what is missing, because CI installs every tool and runs as root on a machine
//! that has loop devices, mounts and `/dev/shm`: a skip there would hide a real failure.
//! Missing elsewhere: the test says `skipped: ...` and returns, and the skip is appended to
//! the file named by `IOFLEET_SKIP_LOG` (the README's test command sets it and prints a
//! summary of every skip at the end).
//!
//! The one exception is [`CI_CANNOT_PROVIDE`]: what the CI machine cannot have, each with
//! the issue that says so. A test that needs one of those calls [`unavailable`]; it is
//! skipped under CI too, listed apart in the summary, and never passes silently.
#![allow(dead_code)]

use std::io::Write;

/// What the CI machine cannot provide (what, why and the issue that says so). `unavailable`
/// accepts only these; everything else missing under CI fails its test.
pub const CI_CANNOT_PROVIDE: &[(&str, &str)] = &[
    (
        "a real Kubernetes cluster (IOFLEET_KUBE_CONTEXT)",
        "the CI machine has no network and no cluster; the stand-in kubectl covers the flow (issue 36)",
    ),
    (
        "a host otherwise idle",
        "the suite must pass beside other load (issue 36): a figure of the whole host's CPU is checked only when nothing else runs, the rule it was judged by always (issue 42)",
    ),
];

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
/// A predicate only: a test that returns on it must go through [`need`] instead.
pub fn have(cmd: &str) -> bool {
    which(cmd).is_some()
}

/// Where `cmd` is: on PATH, or in /usr/sbin or /sbin.
pub fn which(cmd: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(cmd))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// One line of the skip log: what was missing, the test, and whether CI may skip it.
fn log(what: &str, test: &str, ci_allowed: bool) {
    if let Some(path) = std::env::var_os("IOFLEET_SKIP_LOG") {
        // One write per line, O_APPEND: lines from parallel tests never interleave.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
        {
            let kind = if ci_allowed { "ci-cannot" } else { "missing" };
            let _ = f.write_all(format!("{what}\t{test}\t{kind}\n").as_bytes());
        }
    }
}

/// Fail under CI, or say and log the skip elsewhere. Every skip ends here.
fn skipped(test: &str, what: &str) {
    if ci() {
        panic!(
            "CI is set, so {test} must run, but {what} (.ci/run installs the tools and runs \
             as root on a machine that has them; tests-support/need.rs)"
        );
    }
    eprintln!("skipped: {test}: {what}");
    log(what, test, false);
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
    let what = missing
        .iter()
        .map(|m| {
            if *m == "root" {
                "root".to_string()
            } else {
                format!("{m} not installed")
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    skipped(test, &what);
    false
}

/// Skip for a reason found elsewhere (`what` is missing): fails under CI, like `need`.
pub fn skip(what: &str, test: &str) {
    skipped(test, what);
}

/// A fact of this machine that `ok` says holds (`what` says what is missing when it does
/// not): /dev/shm, loop devices, a permitted mount. Fails under CI, where the machine has
/// them; elsewhere skipped and listed.
pub fn environment(test: &str, what: &str, ok: bool) -> bool {
    if !ok {
        skipped(test, what);
    }
    ok
}

/// Skip `test`, which needs `what`, one of [`CI_CANNOT_PROVIDE`]: skipped even under CI,
/// and listed apart in the summary. Panics for anything not in that list: a test cannot
/// declare its own exemption.
pub fn unavailable(test: &str, what: &str) {
    let Some((_, why)) = CI_CANNOT_PROVIDE.iter().find(|(w, _)| *w == what) else {
        panic!("{test}: {what:?} is not in need::CI_CANNOT_PROVIDE; use need::need or need::environment");
    };
    eprintln!("skipped: {test}: {what} ({why})");
    log(what, test, true);
}

/// The host's busy CPU over `span`, percent of all cores, from the first line of
/// /proc/stat (busy = total − idle − iowait, as iofleet counts it): what decides whether
/// a test that needs "a host otherwise idle" (`CI_CANNOT_PROVIDE`) can judge.
pub fn host_busy_pct(span: std::time::Duration) -> f64 {
    let read = || -> (u64, u64) {
        let stat = std::fs::read_to_string("/proc/stat").unwrap();
        let f: Vec<u64> = stat
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|x| x.parse().unwrap())
            .collect();
        let total: u64 = f.iter().sum();
        (total - f[3] - f[4], total)
    };
    let (b0, t0) = read();
    std::thread::sleep(span);
    let (b1, t1) = read();
    100.0 * (b1 - b0) as f64 / (t1 - t0).max(1) as f64
}
