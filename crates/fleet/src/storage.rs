//! What the storage software on an observer host spends: the processes or the cgroup
//! each `observe` entry names (`ceph-osd`, `cmdline:--id 3`, `cgroup:/system.slice/
//! longhorn.service`), read from /proc and the cgroup v2 hierarchy once per interval and
//! turned into `StorageUsage` spans. This module only reads this host; the entries are
//! checked where the inventory is read (`parse_entry`), the figures folded in
//! `iofleet_stats::usage`.
//!
//! Processes are followed one by one (pid and start time, so a reused pid is a new
//! process): a process seen for the first time counts from its start when it started
//! within the span, else from the first reading. What a process did before it exited
//! within a span is not seen; a cgroup's CPU (`cpu.stat`) and, when its controllers are
//! on, its memory (`memory.current`) and I/O (`io.stat`) count exited processes too.
//! Without those controllers (a hybrid hierarchy, where they stay with cgroup v1) memory,
//! I/O and context switches are summed over the cgroup's processes, as for names.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use iofleet_stats::StorageUsage;

/// What one `observe` entry watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watch {
    /// Processes whose executable or first argument is named so (`/proc/PID/comm` is
    /// cut at 15 characters, so it is not what names are matched against).
    Name(String),
    /// Processes whose command line (arguments joined by spaces) contains the text.
    Cmdline(String),
    /// Every process of a cgroup v2 and of its descendants; the path is below the
    /// hierarchy's root.
    Cgroup(String),
}

/// An `observe` entry as written in an inventory: `cgroup:/PATH`, `cmdline:TEXT`, or a
/// process name. The error says what is wrong with it (the caller names the key).
pub fn parse_entry(entry: &str) -> Result<Watch, String> {
    if entry.chars().any(char::is_control) {
        return Err(format!("{entry:?} contains a control character"));
    }
    if let Some(path) = entry.strip_prefix("cgroup:") {
        if !path.starts_with('/') || path.split('/').any(|c| c == "..") {
            return Err(format!(
                "{entry:?}: a cgroup is a path from the cgroup v2 root, such as cgroup:/system.slice/ceph-osd.target"
            ));
        }
        return Ok(Watch::Cgroup(path.to_string()));
    }
    if let Some(text) = entry.strip_prefix("cmdline:") {
        if text.trim().is_empty() {
            return Err(format!("{entry:?}: give the text to find in command lines"));
        }
        return Ok(Watch::Cmdline(text.to_string()));
    }
    if entry.trim().is_empty() || entry.contains('/') || entry.contains(char::is_whitespace) {
        return Err(format!(
            "{entry:?} is not a process name (a name has no '/' or space; use cmdline:TEXT or cgroup:/PATH)"
        ));
    }
    Ok(Watch::Name(entry.to_string()))
}

/// Where the cgroup v2 hierarchy is mounted, from /proc/self/mountinfo (on a hybrid
/// system it is not /sys/fs/cgroup but e.g. /sys/fs/cgroup/unified).
pub fn cgroup2_mount() -> Option<PathBuf> {
    cgroup2_mount_in(&fs::read_to_string("/proc/self/mountinfo").ok()?)
}

fn cgroup2_mount_in(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let mount = left.split_whitespace().nth(4)?;
        (right.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(unescape(mount)))
    })
}

/// A mountinfo path with its octal escapes (`\040` for a space) undone.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], oct) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One process's counters at one reading.
#[derive(Debug, Clone, Default)]
struct ProcNow {
    /// Start time, clock ticks since boot (with the pid, who the process is).
    start: u64,
    usr_ticks: u64,
    sys_ticks: u64,
    rss_kib: u64,
    read_bytes: u64,
    write_bytes: u64,
    /// Each live thread's context switches (voluntary and involuntary), by thread id,
    /// in order: the kernel counts them per thread (/proc/PID/task/TID/status; the
    /// process's own status file shows its first thread's only), so they are followed
    /// thread by thread.
    threads: Vec<(u32, u64)>,
}

/// What a set of processes did between two readings.
#[derive(Debug, Default)]
struct ProcDelta {
    usr_ticks: u64,
    sys_ticks: u64,
    rss_kib: u64,
    read_bytes: u64,
    write_bytes: u64,
    ctx_switches: u64,
    processes: u32,
}

/// The cgroup's own counters at one reading (None: the file is not there).
#[derive(Debug, Clone, Copy, Default)]
struct CgroupNow {
    usr_us: Option<u64>,
    sys_us: Option<u64>,
    mem_bytes: Option<u64>,
    io: Option<(u64, u64)>,
}

/// The name of the whole (`StorageUsage::total`): every entry, each process once.
pub const TOTAL: &str = "every entry (each process once)";

/// What a cgroup's own counters held beyond its live processes' over a span.
#[derive(Debug, Clone, Copy, Default)]
struct Extra {
    usr_s: f64,
    sys_s: f64,
    mem_mib: f64,
    read_bytes: u64,
    write_bytes: u64,
}

impl Extra {
    fn add(&mut self, o: &Extra) {
        self.usr_s += o.usr_s;
        self.sys_s += o.sys_s;
        self.mem_mib += o.mem_mib;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
    }
}

struct Watched {
    name: String,
    watch: Watch,
    /// The cgroup's directory (cgroups only).
    dir: Option<PathBuf>,
    procs: HashMap<u32, ProcNow>,
    /// Whether a process (pid, start, command name) matches: decided again when its
    /// command name changes (an exec, a rename), else once per process.
    matches: HashMap<(u32, u64, String), bool>,
    cgroup: CgroupNow,
    /// Over the last span, what the cgroup counted beyond its live processes.
    extra: Extra,
}

/// Samples what the watched storage software spends, one `StorageUsage` per entry.
pub struct StorageProbe {
    watched: Vec<Watched>,
    /// Every entry's processes at the last reading, each once (for `TOTAL`).
    union: HashMap<u32, ProcNow>,
    /// Seconds since boot at the last reading (to tell processes started since).
    last_uptime_s: f64,
}

impl StorageProbe {
    /// Start counting now for `entries` (`observe`, already checked by `parse_entry`).
    /// A cgroup that is not there, or no cgroup v2 hierarchy, is an error naming it.
    pub fn new(entries: &[String]) -> Result<Self, String> {
        let mut watched = Vec::new();
        for e in entries {
            let watch = parse_entry(e)?;
            let dir = match &watch {
                Watch::Cgroup(p) => {
                    let root = cgroup2_mount().ok_or_else(|| {
                        format!("{e:?}: no cgroup v2 hierarchy is mounted (/proc/self/mountinfo)")
                    })?;
                    let dir = root.join(p.trim_start_matches('/'));
                    if !dir.join("cgroup.procs").exists() {
                        return Err(format!(
                            "{e:?}: there is no such cgroup ({})",
                            dir.display()
                        ));
                    }
                    Some(dir)
                }
                _ => None,
            };
            watched.push(Watched {
                name: e.clone(),
                watch,
                dir,
                procs: HashMap::new(),
                matches: HashMap::new(),
                cgroup: CgroupNow::default(),
                extra: Extra::default(),
            });
        }
        let mut p = StorageProbe {
            union: HashMap::new(),
            watched,
            last_uptime_s: f64::INFINITY,
        };
        p.sample(0.0);
        Ok(p)
    }

    /// What each entry spent since the previous sample (or `new`), over a span of
    /// `wall_s` seconds (the memory integral's).
    pub fn sample(&mut self, wall_s: f64) -> Vec<StorageUsage> {
        if self.watched.is_empty() {
            return Vec::new();
        }
        let clk = rustix::param::clock_ticks_per_second() as f64;
        let uptime = uptime_s();
        let since = self.last_uptime_s;
        let listed = pids();
        let mut out: Vec<StorageUsage> = self
            .watched
            .iter_mut()
            .map(|w| w.sample(&listed, since, clk, wall_s))
            .collect();
        // The whole: each process once however many entries match it (a name and a
        // cgroup that holds it), so entries that overlap are not added up twice.
        {
            let mut union: HashMap<u32, ProcNow> = HashMap::new();
            for w in &self.watched {
                for (p, n) in &w.procs {
                    union.entry(*p).or_insert_with(|| n.clone());
                }
            }
            let d = delta(&self.union, &union, since, clk);
            self.union = union;
            // What a cgroup counted beyond its live processes (those that exited), once
            // per cgroup not inside another watched one.
            let cgroups: Vec<&str> = self
                .watched
                .iter()
                .filter_map(|w| match &w.watch {
                    Watch::Cgroup(p) => Some(p.as_str()),
                    _ => None,
                })
                .collect();
            // Not the same as an earlier entry, nor below another watched cgroup.
            let outer = |p: &str, k: usize| {
                !cgroups.iter().enumerate().any(|(j, q)| {
                    (j < k && *q == p)
                        || (*q != p && p.starts_with(&format!("{}/", q.trim_end_matches('/'))))
                })
            };
            let mut extra = Extra::default();
            let cgroup_entries = self
                .watched
                .iter()
                .filter(|w| matches!(w.watch, Watch::Cgroup(_)));
            for (k, (p, w)) in cgroups.iter().zip(cgroup_entries).enumerate() {
                if outer(p, k) {
                    extra.add(&w.extra);
                }
            }
            out.push(StorageUsage {
                name: TOTAL.into(),
                total: true,
                usr_s: d.usr_ticks as f64 / clk + extra.usr_s,
                sys_s: d.sys_ticks as f64 / clk + extra.sys_s,
                mem_mib_s: (d.rss_kib as f64 / 1024.0 + extra.mem_mib) * wall_s,
                read_bytes: d.read_bytes + extra.read_bytes,
                write_bytes: d.write_bytes + extra.write_bytes,
                ctx_switches: d.ctx_switches,
                processes: d.processes,
            });
        }
        self.last_uptime_s = uptime;
        out
    }
}

impl Watched {
    fn sample(&mut self, listed: &[u32], since_s: f64, clk: f64, wall_s: f64) -> StorageUsage {
        let pids = match &self.dir {
            Some(dir) => cgroup_pids(dir),
            None => self.matching(listed),
        };
        let now: HashMap<u32, ProcNow> = pids
            .into_iter()
            .filter_map(|p| Some((p, read_proc(p)?)))
            .collect();
        let d = delta(&self.procs, &now, since_s, clk);
        self.procs = now;
        let (mut usr_s, mut sys_s) = (d.usr_ticks as f64 / clk, d.sys_ticks as f64 / clk);
        let mut mem_mib = d.rss_kib as f64 / 1024.0;
        let (mut read_bytes, mut write_bytes) = (d.read_bytes, d.write_bytes);
        if let Some(dir) = &self.dir {
            let c = read_cgroup(dir);
            let since = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
            if let (Some(u), Some(s)) = (
                since(self.cgroup.usr_us, c.usr_us),
                since(self.cgroup.sys_us, c.sys_us),
            ) {
                (usr_s, sys_s) = (u as f64 / 1e6, s as f64 / 1e6);
            }
            if let Some(m) = c.mem_bytes {
                mem_mib = m as f64 / (1u64 << 20) as f64;
            }
            if let (Some((r0, w0)), Some((r1, w1))) = (self.cgroup.io, c.io) {
                (read_bytes, write_bytes) = (r1.saturating_sub(r0), w1.saturating_sub(w0));
            }
            // What the cgroup's counters hold beyond its live processes' (those that
            // exited): the whole (`TOTAL`) adds it to the processes it counts once.
            self.extra = Extra {
                usr_s: (usr_s - d.usr_ticks as f64 / clk).max(0.0),
                sys_s: (sys_s - d.sys_ticks as f64 / clk).max(0.0),
                mem_mib: (mem_mib - d.rss_kib as f64 / 1024.0).max(0.0),
                read_bytes: read_bytes.saturating_sub(d.read_bytes),
                write_bytes: write_bytes.saturating_sub(d.write_bytes),
            };
            self.cgroup = c;
        }
        StorageUsage {
            name: self.name.clone(),
            usr_s,
            sys_s,
            mem_mib_s: mem_mib * wall_s,
            read_bytes,
            write_bytes,
            ctx_switches: d.ctx_switches,
            processes: d.processes,
            total: false,
        }
    }

    /// The listed processes this name or command line matches (decided again when a
    /// process's command name changes, else once per process).
    fn matching(&mut self, listed: &[u32]) -> Vec<u32> {
        let own = std::process::id();
        let mut out = Vec::new();
        let mut seen = HashMap::new();
        for &pid in listed {
            if pid == own {
                continue;
            }
            let Some((start, comm)) = identity(pid) else {
                continue;
            };
            let key = (pid, start, comm);
            let hit = match self.matches.get(&key) {
                Some(&hit) => hit,
                None => process_matches(&self.watch, pid),
            };
            seen.insert(key, hit);
            if hit {
                out.push(pid);
            }
        }
        // Forget processes that are gone.
        self.matches = seen;
        out
    }
}

/// What `now`'s processes did since `last`: a process in both (same start) by its
/// difference; a new one in full when it started after `since_s` (seconds since boot),
/// else from now on.
fn delta(
    last: &HashMap<u32, ProcNow>,
    now: &HashMap<u32, ProcNow>,
    since_s: f64,
    clk: f64,
) -> ProcDelta {
    let mut d = ProcDelta::default();
    let fresh = ProcNow::default();
    for (pid, n) in now {
        let base = match last.get(pid) {
            Some(l) if l.start == n.start => l,
            _ if n.start as f64 / clk >= since_s => &fresh,
            _ => n,
        };
        d.usr_ticks += n.usr_ticks.saturating_sub(base.usr_ticks);
        d.sys_ticks += n.sys_ticks.saturating_sub(base.sys_ticks);
        d.read_bytes += n.read_bytes.saturating_sub(base.read_bytes);
        d.write_bytes += n.write_bytes.saturating_sub(base.write_bytes);
        d.ctx_switches += thread_delta(&base.threads, &n.threads, std::ptr::eq(base, n));
        d.rss_kib += n.rss_kib;
        d.processes += 1;
    }
    d
}

/// The context switches of a process's threads since `last`, thread by thread: a thread
/// in both readings by its difference, a thread new since then in full (the last reading
/// listed every live thread). What a thread that exited in between did since the last
/// reading is lost, but it no longer hides the others' (a sum over live threads would go
/// down). `same`: the reading is its own base (a process first seen now): nothing.
fn thread_delta(last: &[(u32, u64)], now: &[(u32, u64)], same: bool) -> u64 {
    if same {
        return 0;
    }
    now.iter()
        .map(|&(tid, n)| match last.binary_search_by_key(&tid, |t| t.0) {
            Ok(i) => n.saturating_sub(last[i].1),
            Err(_) => n,
        })
        .sum()
}

fn process_matches(w: &Watch, pid: u32) -> bool {
    let Ok(raw) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    // Kernel threads have no command line.
    if raw.is_empty() {
        return false;
    }
    let args: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    match w {
        Watch::Name(name) => {
            let argv0 = args.first().map(|a| base(a));
            // A process that set its name ($0, prctl) shows it as its first argument.
            let argv0_word = args
                .first()
                .and_then(|a| a.split_whitespace().next())
                .map(base);
            let exe = fs::read_link(format!("/proc/{pid}/exe"))
                .ok()
                .map(|p| base(&p.to_string_lossy().replace(" (deleted)", "")));
            [argv0, argv0_word, exe]
                .iter()
                .any(|n| n.as_deref() == Some(name.as_str()))
        }
        Watch::Cmdline(text) => args.join(" ").contains(text.as_str()),
        Watch::Cgroup(_) => false,
    }
}

/// Every process id in /proc.
fn pids() -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The processes of a cgroup and of its descendants.
fn cgroup_pids(dir: &Path) -> Vec<u32> {
    let mut out: Vec<u32> = fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    if let Ok(children) = fs::read_dir(dir) {
        for c in children.flatten() {
            if c.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(cgroup_pids(&c.path()));
            }
        }
    }
    out
}

/// The fields of /proc/PID/stat after the command name (which may hold spaces), as
/// numbers: the first is field 3 (the state, read as 0), so field N is at N − 3.
fn stat_fields(pid: u32) -> Option<Vec<u64>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(
        rest.split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect(),
    )
}

/// Who a process is now: its start time (field 22, clock ticks since boot) and its
/// command name (field 2, which an exec or a rename changes).
fn identity(pid: u32) -> Option<(u64, String)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let start = rest.split_whitespace().nth(19)?.parse().ok()?;
    Some((start, comm))
}

fn read_proc(pid: u32) -> Option<ProcNow> {
    // Fields 14 and 15 (utime, stime: the whole process, exited threads included) and 22.
    let f = stat_fields(pid)?;
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let io = fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    Some(ProcNow {
        start: *f.get(19)?,
        usr_ticks: *f.get(11)?,
        sys_ticks: *f.get(12)?,
        rss_kib: keyed(&status, "VmRSS:").unwrap_or(0),
        read_bytes: keyed(&io, "read_bytes:").unwrap_or(0),
        write_bytes: keyed(&io, "write_bytes:").unwrap_or(0),
        threads: thread_switches(pid),
    })
}

/// Context switches of each of a process's live threads (each thread counts its own),
/// by thread id, in order.
fn thread_switches(pid: u32) -> Vec<(u32, u64)> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut v: Vec<(u32, u64)> = tasks
        .flatten()
        .filter_map(|t| {
            let tid = t.file_name().to_str()?.parse().ok()?;
            let s = fs::read_to_string(t.path().join("status")).ok()?;
            Some((
                tid,
                keyed(&s, "voluntary_ctxt_switches:").unwrap_or(0)
                    + keyed(&s, "nonvoluntary_ctxt_switches:").unwrap_or(0),
            ))
        })
        .collect();
    v.sort_unstable();
    v
}

/// The number after `key` on the line that starts with it.
fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn read_cgroup(dir: &Path) -> CgroupNow {
    let cpu = fs::read_to_string(dir.join("cpu.stat")).unwrap_or_default();
    let word = |k: &str| {
        cpu.lines().find_map(|l| {
            let (key, v) = l.split_once(' ')?;
            (key == k).then(|| v.trim().parse().ok())?
        })
    };
    let io = fs::read_to_string(dir.join("io.stat")).ok().map(|t| {
        let sum = |k: &str| -> u64 {
            t.split_whitespace()
                .filter_map(|f| f.strip_prefix(k)?.parse::<u64>().ok())
                .sum()
        };
        (sum("rbytes="), sum("wbytes="))
    });
    CgroupNow {
        usr_us: word("user_usec"),
        sys_us: word("system_usec"),
        mem_bytes: fs::read_to_string(dir.join("memory.current"))
            .ok()
            .and_then(|m| m.trim().parse().ok()),
        io,
    }
}

/// Seconds since boot.
fn uptime_s() -> f64 {
    fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_names_command_lines_or_cgroups() {
        assert_eq!(parse_entry("ceph-osd"), Ok(Watch::Name("ceph-osd".into())));
        assert_eq!(
            parse_entry("cmdline:--id 3"),
            Ok(Watch::Cmdline("--id 3".into()))
        );
        assert_eq!(
            parse_entry("cgroup:/system.slice/x.service"),
            Ok(Watch::Cgroup("/system.slice/x.service".into()))
        );
        for bad in [
            "",
            "cgroup:x",
            "cgroup:/a/../b",
            "cmdline: ",
            "/usr/bin/x",
            "a b",
            "a\nb",
        ] {
            assert!(parse_entry(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_cgroup2_mount_is_found_where_mountinfo_says() {
        let hybrid = "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n\
                      32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
                      41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount_in(hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let spaced = "41 31 0:38 / /mnt/my\\040cg rw shared:9 - cgroup2 none rw\n";
        assert_eq!(cgroup2_mount_in(spaced), Some(PathBuf::from("/mnt/my cg")));
        assert_eq!(
            cgroup2_mount_in("1 2 0:1 / / rw - ext4 /dev/vda rw\n"),
            None
        );
    }

    /// A new process counts in full when it started within the span, else from its
    /// first reading; a reused pid (another start) is a new process.
    #[test]
    fn processes_count_from_their_start_or_their_first_reading() {
        let p = |start, usr| ProcNow {
            start,
            usr_ticks: usr,
            ..Default::default()
        };
        let clk = 100.0;
        let last = HashMap::from([(1, p(100, 50)), (2, p(100, 70))]);
        // Span from 5 s after boot: pid 3 started at 6 s, pid 4 at 1 s; pid 2's number
        // now belongs to a process started at 7 s.
        let now = HashMap::from([
            (1, p(100, 80)),
            (2, p(700, 5)),
            (3, p(600, 20)),
            (4, p(100, 99)),
        ]);
        let d = delta(&last, &now, 5.0, clk);
        assert_eq!(d.usr_ticks, 30 + 5 + 20);
        assert_eq!(d.processes, 4);
    }

    /// Context switches are followed thread by thread: a thread that exited takes its
    /// count with it without hiding the others' (a sum over live threads would fall from
    /// 150 to 115, and the span would show none), a new thread counts in full.
    #[test]
    fn context_switches_are_counted_thread_by_thread() {
        let p = |threads: Vec<(u32, u64)>| ProcNow {
            start: 100,
            threads,
            ..Default::default()
        };
        let last = HashMap::from([(1, p(vec![(1, 100), (2, 50)]))]);
        let now = HashMap::from([(1, p(vec![(1, 110), (3, 5)]))]);
        assert_eq!(delta(&last, &now, 5.0, 100.0).ctx_switches, 10 + 5);
        // A process first seen now (started before the span) counts from now on.
        assert_eq!(delta(&HashMap::new(), &now, 5.0, 100.0).ctx_switches, 0);
    }

    /// A child that spins, named by two entries: each entry shows its CPU, and the
    /// whole (`TOTAL`) counts it once.
    #[test]
    fn the_whole_counts_a_process_two_entries_match_once() {
        let mark = format!("iofleet-overlap-{}", std::process::id());
        // Killed however the test ends (a spinning child must not outlive a failure).
        struct Spinner(std::process::Child);
        impl Drop for Spinner {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
        let child = Spinner(
            std::process::Command::new("sh")
                .args(["-c", &format!(": {mark}; while :; do :; done")])
                .spawn()
                .unwrap(),
        );
        // Until the child runs the shell (a process read before its exec is the test's).
        let cmdline = format!("/proc/{}/cmdline", child.0.id());
        for _ in 0..500 {
            if std::fs::read(&cmdline).is_ok_and(|c| String::from_utf8_lossy(&c).contains(&mark)) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let entries = [
            format!("cmdline:{mark}"),
            format!("cmdline:overlap-{}", std::process::id()),
        ];
        let mut probe = StorageProbe::new(&entries).unwrap();
        let cpu = |u: &StorageUsage| u.usr_s + u.sys_s;
        let (mut each, mut whole) = (0.0, 0.0);
        let mut last = Vec::new();
        // Until the child has had some CPU (however busy the machine is), at most 5 s.
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            last = probe.sample(0.1);
            assert_eq!(last.len(), 3, "{last:?}");
            // Each entry reads the process at its own moment: a clock tick apart at most.
            let tick = 1.0 / rustix::param::clock_ticks_per_second() as f64;
            assert!(
                (cpu(&last[0]) - cpu(&last[1])).abs() <= tick + 1e-9,
                "{last:?}"
            );
            assert!(last[2].total && last[2].name == TOTAL, "{last:?}");
            (each, whole) = (each + cpu(&last[0]), whole + cpu(&last[2]));
            if each >= 0.05 {
                break;
            }
        }
        drop(child);
        assert!(each >= 0.05, "{last:?}");
        assert_eq!(whole, each, "{last:?}");
        assert_eq!(
            (last[0].processes, last[1].processes, last[2].processes),
            (1, 1, 1)
        );
    }

    /// A process is matched again when its command name changes (an exec): a shell that
    /// becomes `sleep` is not `sleep` at first, then is.
    #[test]
    fn a_process_that_execs_is_matched_again() {
        let mark = format!("iofleet-exec-{}", std::process::id());
        let mut child = std::process::Command::new("sh")
            .args(["-c", &format!("read x; exec sleep 5 # {mark}")])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut w = Watched {
            name: "sleep".into(),
            watch: Watch::Name("sleep".into()),
            dir: None,
            procs: HashMap::new(),
            matches: HashMap::new(),
            cgroup: CgroupNow::default(),
            extra: Extra::default(),
        };
        assert!(!w.matching(&[pid]).contains(&pid));
        use std::io::Write;
        writeln!(child.stdin.as_mut().unwrap()).unwrap();
        let mut matched = false;
        for _ in 0..100 {
            if w.matching(&[pid]).contains(&pid) {
                matched = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(matched, "the exec'd process was not matched again");
    }

    /// A process's start time stays as it is while its CPU time grows with the work it
    /// does (fields 22, 14 and 15 of /proc/PID/stat).
    #[test]
    fn a_process_reading_keeps_its_start_and_counts_its_cpu() {
        let me = std::process::id();
        let a = read_proc(me).unwrap();
        // Spin until this thread has had 30 ms of CPU (three clock ticks), however busy
        // the machine is.
        let cpu = || rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        let ns = |t: rustix::time::Timespec| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64;
        let c0 = ns(cpu());
        let mut x = 0u64;
        while ns(cpu()) - c0 < 30_000_000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
        let b = read_proc(me).unwrap();
        assert_eq!(a.start, b.start);
        assert_eq!(identity(me).map(|i| i.0), Some(a.start));
        assert!(
            b.usr_ticks + b.sys_ticks > a.usr_ticks + a.sys_ticks,
            "{a:?} {b:?}"
        );
        let switches: u64 = b.threads.iter().map(|t| t.1).sum();
        assert!(b.rss_kib > 0 && switches > 0, "{b:?}");
    }
}
