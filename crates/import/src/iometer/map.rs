//! An Iometer configuration → iofleet raw profiles, one per step: each access
//! specification the workers run is a step (Iometer runs a worker's assigned
//! specifications one after another, each a test of its own), and a test that cycles
//! the outstanding I/Os is one step per queue depth of each specification.
//!
//! Each manager (an Iometer on one host or VM) whose disk workers have targets and
//! specifications is an iofleet worker; each distinct target of its workers is a disk,
//! driven by a thread per Iometer worker on it, each at the workers' `Number of
//! outstanding IOs` (Iometer's outstanding I/Os per target). A specification's lines are
//! streams: lines of the same `% reads`, `% random` and `align` form one stream whose
//! block sizes are weighted by `% of size`, and streams are weighted the same way.
//! `align` 0 is Iometer's sector alignment (512 bytes). A `delay` before each `burst`
//! caps the worker's rate (`timing.rate_iops` = burst × 1000 / delay); a `reply` (a
//! second, dependent transfer after each one) is refused. `Run Time` and `Ramp Up Time`
//! are the timing; `Disk maximum size` (in 512-byte sectors) the disk size. Every setting
//! is mapped, accepted with a notice (it does not change the I/O), or a [`Problem`] with
//! its file and line. Values are checked by `validate` afterwards, as for any profile.

use std::collections::BTreeSet;

use iofleet_profile::raw::{RawFleet, RawProfile, RawStream, RawTiming};

use super::parse::{Icf, Pair, Spec, SpecLine, Worker};
use super::{IometerError, Problem};
use crate::fio::Location;

/// Iometer's sector, the unit of `Disk maximum size` and of `align` 0.
const SECTOR: u64 = 512;
/// The most steps one configuration file may make (specifications × queue depths).
pub const MAX_STEPS: usize = 1024;
/// The first dated version whose access specifications are per worker (the layout read
/// here); Iometer reads older files another way.
const FIRST_DATED: (u64, u64, u64) = (1998, 5, 21);

/// One step: an access specification at one queue depth.
#[derive(Debug, Clone, PartialEq)]
pub struct IometerStep {
    /// The specification's name, with the queue depth when the test cycles it
    /// (`Database/oio=8`).
    pub name: String,
    /// The specification's name.
    pub spec: String,
    /// Where the specification is written.
    pub at: Location,
    pub raw: RawProfile,
}

/// A mapped configuration file: its steps in order, the targets' names as written, and
/// the mapping notices.
#[derive(Debug, Clone, PartialEq)]
pub struct IometerImport {
    pub steps: Vec<IometerStep>,
    /// The names of every access specification in the file, in file order.
    pub specs: Vec<String>,
    /// The running workers' targets as written, in worker order (iofleet makes its own
    /// disks).
    pub targets: Vec<String>,
    pub notices: Vec<String>,
}

struct Mapper {
    problems: Vec<Problem>,
    notices: Vec<String>,
    seen: BTreeSet<(usize, String)>,
}

impl Mapper {
    fn problem(&mut self, at: &Location, setting: &str, message: impl Into<String>) {
        let message = message.into();
        if self.seen.insert((at.line, format!("p{setting}{message}"))) {
            self.problems.push(Problem {
                at: at.clone(),
                parameter: setting.to_string(),
                message,
            });
        }
    }

    /// A notice given once for the file, however many workers' lines would repeat it.
    fn notice_once(&mut self, at: &Location, text: impl Into<String>) {
        let text = text.into();
        if self.seen.insert((0, format!("n{text}"))) {
            self.notice(at, text);
        }
    }

    fn notice(&mut self, at: &Location, text: impl Into<String>) {
        let text = text.into();
        if self.seen.insert((at.line, format!("n{text}"))) {
            self.notices.push(format!("Iometer {at}: {text}"));
        }
    }
}

/// What the test setup asks for.
#[derive(Debug, Default)]
struct Setup {
    description: Option<String>,
    timing: RawTiming,
    /// The disk workers to spawn when the file has no manager list (None: one per CPU).
    default_workers: Option<i64>,
    /// The queue depths of a test that cycles them.
    queue_depths: Option<Vec<i64>>,
}

/// What the fleet asks for: an iofleet worker per manager, the same for each.
#[derive(Debug, Clone, PartialEq)]
struct Fleet {
    workers: i64,
    disks: i64,
    /// The Iometer workers on each disk.
    threads: i64,
    qd: i64,
    /// `Disk maximum size` in bytes (None: the whole disk).
    size: Option<u64>,
    specs: Vec<String>,
    targets: Vec<String>,
}

/// A whole number within `lo..=hi`.
fn number(text: &str, lo: i64, hi: i64) -> Option<i64> {
    text.trim().parse().ok().filter(|n| (lo..=hi).contains(n))
}

/// Map a parsed configuration file to steps; `only` names the specifications to run
/// instead of those the workers are assigned. Every problem is in one error.
pub fn import(icf: &Icf, only: &[String]) -> Result<IometerImport, IometerError> {
    let mut m = Mapper {
        problems: Vec::new(),
        notices: Vec::new(),
        seen: BTreeSet::new(),
    };
    m.version(icf);
    let setup = m.setup(icf);
    for s in &icf.specs {
        m.check_spec(s);
    }
    let names: Vec<String> = icf.specs.iter().map(|s| s.name.clone()).collect();
    for name in only {
        if !names.iter().any(|n| n == name) {
            return Err(IometerError::NoSteps(format!(
                "the file has no access specification named '{name}'; it has: {}",
                names.join(", ")
            )));
        }
    }
    let fleet = match &icf.managers {
        Some(managers) => m.fleet(managers, only, &names),
        None => m.default_fleet(icf, &setup, only),
    };
    let steps = match &fleet {
        Some(f) => m.steps(icf, &setup, f),
        None => Vec::new(),
    };
    if !m.problems.is_empty() {
        return Err(IometerError::Unsupported(m.problems));
    }
    if steps.is_empty() {
        return Err(IometerError::NoSteps(
            "the file runs no access specification: no disk worker has both targets and an assigned access specification (name one with --spec NAME)".into(),
        ));
    }
    Ok(IometerImport {
        steps,
        specs: names,
        targets: fleet.map(|f| f.targets).unwrap_or_default(),
        notices: m.notices,
    })
}

/// A version as three numbers: `1.1.0`, or a date `2006.07.27` (with an optional
/// suffix, `2003.12.16-post`).
fn version_numbers(text: &str) -> Option<(u64, u64, u64)> {
    let word = text.split_whitespace().next()?;
    let mut parts = word.splitn(3, '.');
    let mut next = |whole: bool| -> Option<u64> {
        let p = parts.next()?;
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        (!digits.is_empty() && (!whole || digits.len() == p.len()))
            .then(|| digits.parse().ok())
            .flatten()
    };
    Some((next(true)?, next(true)?, next(false)?))
}

impl Mapper {
    /// The version line: Iometer 1.x, or a dated release from 1998.05.21.
    fn version(&mut self, icf: &Icf) {
        let Some(at) = icf.version_at.clone() else {
            return;
        };
        match version_numbers(&icf.version) {
            Some((1, _, _)) => {}
            Some(v) if v.0 > 1900 && v >= FIRST_DATED => {}
            Some(v) if v.0 > 1900 => self.problem(&at, "Version", format!("{}: files older than 1998.05.21 hold the access specifications in an older layout, which iofleet does not read; open and save the file with a current Iometer", icf.version)),
            _ => self.problem(&at, "Version", format!("'{}' is not a version of Iometer iofleet reads (1.x.y, or a dated release such as 2006.07.27)", icf.version)),
        }
    }

    /// The test setup's settings.
    fn setup(&mut self, icf: &Icf) -> Setup {
        let mut s = Setup::default();
        let mut test_type: Option<&Pair> = None;
        let mut queue: Option<&Pair> = None;
        for p in &icf.setup {
            let k = p.key.to_ascii_lowercase();
            match k.as_str() {
                "test description" => {
                    s.description = Some(p.value.clone()).filter(|d| !d.is_empty())
                }
                "run time" => s.timing.duration = self.run_time(p),
                "ramp up time (s)" => match number(&p.value, 0, i64::MAX) {
                    Some(n) => s.timing.warmup = Some(format!("{n}s")),
                    None => self.problem(
                        &p.at,
                        &p.key,
                        format!("'{}' is not a whole number of seconds", p.value),
                    ),
                },
                "default disk workers to spawn" => match p.value.trim() {
                    v if v.eq_ignore_ascii_case("NUMBER_OF_CPUS") => {}
                    v => match number(v, 0, i64::MAX) {
                        Some(n) => s.default_workers = Some(n),
                        None => self.problem(
                            &p.at,
                            &p.key,
                            format!("'{v}' is not a number of workers or NUMBER_OF_CPUS"),
                        ),
                    },
                },
                "default network workers to spawn" => {}
                "record results" => {}
                "worker cycling" | "disk cycling" => {}
                "queue depth cycling" => queue = Some(p),
                "test type" => test_type = Some(p),
                _ => self.problem(
                    &p.key_at,
                    &p.key,
                    "not a test setup setting iofleet knows (docs/iometer.md lists them)",
                ),
            }
        }
        if let Some(t) = test_type {
            match t.value.trim().to_ascii_uppercase().as_str() {
                "NORMAL" | "" => {}
                "CYCLE_OUTSTANDING_IOS" => match queue {
                    Some(q) => s.queue_depths = self.queue_cycle(q),
                    None => self.problem(&t.at, &t.key, "CYCLE_OUTSTANDING_IOS without a 'Queue Depth Cycling setting"),
                },
                v @ ("CYCLE_TARGETS" | "CYCLE_WORKERS" | "INCREMENT_TARGETS_PARALLEL" | "INCREMENT_TARGETS_SERIAL" | "CYCLE_WORKERS_AND_TARGETS" | "CYCLE_OUTSTANDING_IOS_AND_TARGETS") => self.problem(&t.at, &t.key, format!("{v}: a test that changes the number of workers or targets between its steps is not read; run each count with iofleet sweep --vary disks=... or --vary workers=... on the profile profiles from-iometer prints")),
                v => self.problem(&t.at, &t.key, format!("'{v}' is not an Iometer test type")),
            }
        }
        s
    }

    /// `Run Time`: hours, minutes and seconds; 0 runs until stopped.
    fn run_time(&mut self, p: &Pair) -> Option<String> {
        let parts: Vec<Option<i64>> = p
            .value
            .split_whitespace()
            .map(|v| number(v, 0, i64::MAX / 3600))
            .collect();
        let [Some(h), Some(m), Some(s)] = parts.as_slice() else {
            self.problem(
                &p.at,
                &p.key,
                format!(
                    "'{}': expected hours, minutes and seconds (whole numbers)",
                    p.value
                ),
            );
            return None;
        };
        let Some(total) = h
            .checked_mul(3600)
            .and_then(|t| t.checked_add(m.checked_mul(60)?))
            .and_then(|t| t.checked_add(*s))
        else {
            self.problem(&p.at, &p.key, format!("'{}' is too long a time", p.value));
            return None;
        };
        if total == 0 {
            self.notice(&p.at, "Run Time 0: Iometer runs until stopped; iofleet runs for the profile's duration (set --duration)");
            return None;
        }
        Some(format!("{total}s"))
    }

    /// `Queue Depth Cycling`: start, end, step and LINEAR or EXPONENTIAL, as Iometer
    /// steps it (adding the step, or multiplying the start by a power of it).
    fn queue_cycle(&mut self, p: &Pair) -> Option<Vec<i64>> {
        let f: Vec<&str> = p.value.split_whitespace().collect();
        let nums: Vec<Option<i64>> = f.iter().take(3).map(|v| number(v, 1, 1 << 20)).collect();
        let (Some(start), Some(end), Some(step), Some(kind)) = (
            nums.first().copied().flatten(),
            nums.get(1).copied().flatten(),
            nums.get(2).copied().flatten(),
            f.get(3).filter(|_| f.len() == 4),
        ) else {
            self.problem(&p.at, &p.key, format!("'{}': expected start, end and step (whole numbers from 1) and LINEAR or EXPONENTIAL", p.value));
            return None;
        };
        let exponential = match kind.to_ascii_uppercase().as_str() {
            "LINEAR" => false,
            "EXPONENTIAL" => step > 1,
            _ => {
                self.problem(
                    &p.at,
                    &p.key,
                    format!("'{kind}' is not LINEAR or EXPONENTIAL"),
                );
                return None;
            }
        };
        let mut out = Vec::new();
        let mut qd = start;
        let mut power = step;
        while qd <= end && out.len() <= MAX_STEPS {
            out.push(qd);
            qd = if exponential {
                let next = start.saturating_mul(power);
                power = power.saturating_mul(step);
                next
            } else {
                qd + step
            };
        }
        if out.is_empty() {
            self.problem(
                &p.at,
                &p.key,
                format!("the start ({start}) is above the end ({end})"),
            );
            return None;
        }
        Some(out)
    }

    /// The checks Iometer makes of every specification when it loads one, and a size
    /// and burst it could run.
    fn check_spec(&mut self, s: &Spec) {
        if s.lines.is_empty() {
            self.problem(&s.at, &s.name, "an access specification without lines");
            return;
        }
        let mut total = 0;
        for l in &s.lines {
            for (what, v, hi) in [
                ("% of size", l.pct, 100),
                ("% reads", l.reads, 100),
                ("% random", l.random, 100),
            ] {
                if !(0..=hi).contains(&v) {
                    self.problem(&l.at, what, format!("{v} is not a percentage 0 to 100"));
                }
            }
            for (what, v, lo) in [
                ("size", l.size, 1),
                ("delay", l.delay, 0),
                ("burst", l.burst, 1),
                ("align", l.align, 0),
                ("reply", l.reply, 0),
            ] {
                if v < lo {
                    self.problem(&l.at, what, format!("{v} is below {lo}"));
                }
            }
            total += l.pct;
        }
        if total != 100 {
            self.problem(
                &s.at,
                "% of size",
                format!("the lines of '{}' add up to {total}%, not 100%", s.name),
            );
        }
    }
}

/// One worker's default target settings: (outstanding I/Os, disk size in bytes).
struct Settings {
    qd: i64,
    size: Option<u64>,
}

impl Mapper {
    /// The disk workers of the manager list, which must agree.
    fn fleet(
        &mut self,
        managers: &[super::Manager],
        only: &[String],
        names: &[String],
    ) -> Option<Fleet> {
        // Specifications named to run go to the workers assigned any (all workers when
        // none is), so that naming an assigned one changes nothing.
        let any_assigned = managers
            .iter()
            .flat_map(|m| &m.workers)
            .any(|w| w.specs.as_ref().is_some_and(|s| !s.is_empty()));
        let mut active: Vec<(&super::Manager, Fleet)> = Vec::new();
        for mgr in managers {
            if let Some(f) = self.manager(mgr, only, names, any_assigned) {
                active.push((mgr, f));
            }
        }
        let (m0, f0) = active.first()?.clone();
        if active.len() > 1 {
            self.notice(
                &active[1].0.at,
                format!(
                    "{} managers: an iofleet worker each, run where --hosts (or this host) says",
                    active.len()
                ),
            );
        }
        for (m, f) in &active[1..] {
            for (what, same) in [
                ("targets", f.disks == f0.disks),
                ("workers per target", f.threads == f0.threads),
                ("Number of outstanding IOs", f.qd == f0.qd),
                ("Disk maximum size", f.size == f0.size),
                ("assigned access specs", f.specs == f0.specs),
            ] {
                if !same {
                    self.problem(&m.at, what, format!("manager '{}' differs from manager '{}' ({}) in its {what}; iofleet gives every worker the same", m.name, m0.name, m0.at));
                }
            }
        }
        Some(Fleet {
            workers: active.len() as i64,
            targets: active.iter().flat_map(|(_, f)| f.targets.clone()).collect(),
            ..f0
        })
    }

    /// A manager's running workers as one iofleet worker: each distinct target one disk,
    /// driven by as many threads as Iometer workers have it. None when every worker of the
    /// manager is idle.
    fn manager(
        &mut self,
        mgr: &super::Manager,
        only: &[String],
        names: &[String],
        any_assigned: bool,
    ) -> Option<Fleet> {
        let mut active: Vec<(&Worker, Fleet)> = Vec::new();
        for w in &mgr.workers {
            if let Some(f) = self.worker(w, only, names, any_assigned) {
                active.push((w, f));
            }
        }
        let (w0, f0) = active.first()?.clone();
        for (w, f) in &active[1..] {
            for (what, same) in [
                ("Number of outstanding IOs", f.qd == f0.qd),
                ("Disk maximum size", f.size == f0.size),
                ("assigned access specs", f.specs == f0.specs),
            ] {
                if !same {
                    self.problem(&w.at, what, format!("worker '{}' differs from worker '{}' ({}) in its {what}; iofleet gives every disk the same", w.name, w0.name, w0.at));
                }
            }
        }
        // Each distinct target, in the order first named, and the workers on it.
        // A worker whose targets the file does not hold has a disk of its own, not named.
        let mut disks: Vec<(String, i64)> = Vec::new();
        let mut named = Vec::new();
        for (w, f) in &active {
            for t in &f.targets {
                match disks.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(t)) {
                    Some((_, k)) => *k += 1,
                    None => {
                        disks.push((t.clone(), 1));
                        if w.targets.is_some() {
                            named.push(t.clone());
                        }
                    }
                }
            }
        }
        let threads = disks.first().map_or(1, |(_, k)| *k);
        if let Some((t, k)) = disks.iter().find(|(_, k)| *k != threads) {
            self.problem(&mgr.at, "Target assignments", format!("manager '{}': {k} worker(s) drive target '{t}' and {threads} drive '{}'; iofleet gives every disk of a worker the same threads", mgr.name, disks[0].0));
        }
        Some(Fleet {
            workers: 1,
            disks: disks.len() as i64,
            threads,
            targets: named,
            ..f0
        })
    }

    /// One worker as a fleet of one, or None when Iometer would leave it idle.
    fn worker(
        &mut self,
        w: &Worker,
        only: &[String],
        names: &[String],
        any_assigned: bool,
    ) -> Option<Fleet> {
        let kind = w.kind.as_ref().map(|k| k.value.to_ascii_uppercase());
        if let (Some(k), Some(p)) = (&kind, &w.kind) {
            if k.starts_with("NETWORK") {
                self.problem(&p.at, "Worker type", format!("worker '{}' is a network worker: it drives network targets, and iofleet drives storage", w.name));
                return None;
            } else if k != "DISK" {
                self.problem(
                    &p.at,
                    "Worker type",
                    format!("'{}' is not DISK or NETWORK", p.value),
                );
                return None;
            }
        }
        let settings = self.settings(w);
        let mut own = Vec::new();
        for (n, at) in w.specs.iter().flatten() {
            if names.contains(n) {
                own.push(n.clone());
            } else {
                self.notice(at, format!("worker '{}' is assigned '{n}', which the file does not define: ignored, as Iometer does", w.name));
            }
        }
        let specs = if only.is_empty() {
            own
        } else if !own.is_empty() || !any_assigned {
            only.to_vec()
        } else {
            Vec::new()
        };
        let targets: Vec<String> = match &w.targets {
            Some(t) => {
                for t in t
                    .iter()
                    .filter(|t| !t.kind.trim().eq_ignore_ascii_case("DISK"))
                {
                    self.problem(
                        &t.at,
                        "Target type",
                        format!(
                            "target '{}' is of type '{}': iofleet drives disk targets only",
                            t.name, t.kind
                        ),
                    );
                }
                t.iter().map(|t| t.name.clone()).collect()
            }
            None => {
                self.notice_once(
                    &w.at,
                    format!(
                        "worker '{}': the file does not hold its targets; it drives one disk",
                        w.name
                    ),
                );
                vec![format!("(worker {})", w.name)]
            }
        };
        if specs.is_empty() || targets.is_empty() {
            let what = if targets.is_empty() {
                "no targets"
            } else {
                "no assigned access specification"
            };
            self.notice(
                &w.at,
                format!("worker '{}' has {what}: idle in Iometer, not run", w.name),
            );
            return None;
        }
        let settings = settings?;
        Some(Fleet {
            workers: 1,
            disks: targets.len() as i64,
            threads: 1,
            qd: settings.qd,
            size: settings.size,
            specs,
            targets,
        })
    }

    /// A worker's default target settings.
    fn settings(&mut self, w: &Worker) -> Option<Settings> {
        let mut s = Settings { qd: 1, size: None };
        let before = self.problems.len();
        for p in &w.settings {
            let k = p.key.to_ascii_lowercase();
            let f: Vec<&str> = p.value.split(',').map(str::trim).collect();
            if k.starts_with("number of outstanding ios") {
                match number(f[0], 1, 1 << 20) {
                    Some(n) => s.qd = n,
                    None => self.problem(
                        &p.at,
                        "Number of outstanding IOs",
                        format!("'{}' is not a number of outstanding I/Os from 1", f[0]),
                    ),
                }
                if f.get(1).is_some_and(|v| v.eq_ignore_ascii_case("ENABLED")) {
                    self.problem(&p.at, "test connection rate", "ENABLED: Iometer closes and reopens each target after every few transfers; iofleet keeps its disks open");
                }
                if f.get(3).is_some_and(|v| v.eq_ignore_ascii_case("ENABLED")) {
                    self.notice_once(
                        &p.at,
                        format!(
                            "use fixed seed: pass --seed {} for a repeatable run",
                            f.get(4).unwrap_or(&"N")
                        ),
                    );
                }
            } else if k.starts_with("disk maximum size,starting sector") {
                match number(f[0], 0, i64::MAX / SECTOR as i64) {
                    Some(0) => {}
                    Some(n) => s.size = Some(n as u64 * SECTOR),
                    None => self.problem(
                        &p.at,
                        "Disk maximum size",
                        format!("'{}' is not a number of sectors", f[0]),
                    ),
                }
                match f.get(1).map(|v| number(v, 0, i64::MAX)) {
                    Some(Some(0)) | None => {}
                    Some(Some(n)) => self.notice_once(&p.at, format!("starting sector {n}: iofleet addresses its own disks from their start (the same size of region)")),
                    Some(None) => self.problem(&p.at, "starting sector", format!("'{}' is not a sector number", f[1])),
                }
                match f.get(2).map(|v| v.trim()) {
                    None | Some("1") | Some("2") => {}
                    Some("0") => self.notice_once(&p.at, "data pattern 0 (repeating bytes): iofleet writes pseudo-random data unless told otherwise (--pattern zero for fully compressible data)"),
                    Some(v) => self.problem(&p.at, "Data pattern", format!("'{v}' is not an Iometer data pattern (0, 1 or 2)")),
                }
            } else if k == "local network interface" || k == "vi outstanding ios" {
                self.problem(&p.at, &p.key, "a network worker's setting on a disk worker");
            } else {
                self.problem(
                    &p.key_at,
                    &p.key,
                    "not a worker setting iofleet knows (docs/iometer.md lists them)",
                );
            }
        }
        (self.problems.len() == before).then_some(s)
    }

    /// The fleet of a file without a manager list: the test setup's default disk
    /// workers, one disk each at one outstanding I/O (Iometer's defaults), running
    /// `only` or the specifications assigned to disk workers by default.
    fn default_fleet(&mut self, icf: &Icf, setup: &Setup, only: &[String]) -> Option<Fleet> {
        let specs: Vec<String> = if only.is_empty() {
            icf.specs
                .iter()
                .filter(|s| {
                    let a = s.assignment.to_ascii_uppercase();
                    matches!(a.as_str(), "ALL" | "DISK" | "1" | "2")
                })
                .map(|s| s.name.clone())
                .collect()
        } else {
            only.to_vec()
        };
        let at = icf.version_at.clone()?;
        self.notice(&at, "no manager list: each access specification assigned to disk workers by default (ALL or DISK) runs on one disk driven by the test setup's default disk workers (or one), each at 1 outstanding I/O, Iometer's defaults (set --workers, --disks, --threads, --qd)");
        Some(Fleet {
            workers: 1,
            disks: 1,
            threads: setup.default_workers.unwrap_or(1).max(1),
            qd: 1,
            size: None,
            specs,
            targets: Vec::new(),
        })
    }
}

/// A profile name from a step name: letters, digits, `-`, `_` and `.` kept, the rest `_`.
fn profile_name(step: &str) -> String {
    step.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl Mapper {
    /// Each specification of the fleet at each queue depth.
    fn steps(&mut self, icf: &Icf, setup: &Setup, f: &Fleet) -> Vec<IometerStep> {
        let qds = setup.queue_depths.clone();
        let count = f
            .specs
            .len()
            .saturating_mul(qds.as_ref().map_or(1, Vec::len));
        if count > MAX_STEPS {
            if let Some(at) = &icf.version_at {
                self.problem(at, "Queue Depth Cycling", format!("the file makes {count} steps; iofleet runs at most {MAX_STEPS} from one file"));
            }
            return Vec::new();
        }
        let mut out = Vec::new();
        for name in &f.specs {
            let Some(spec) = icf.specs.iter().find(|s| &s.name == name) else {
                continue;
            };
            let Some((streams, rate)) = self.streams(spec) else {
                continue;
            };
            let depths: Vec<Option<i64>> = match &qds {
                Some(q) => q.iter().map(|d| Some(*d)).collect(),
                None => vec![None],
            };
            for qd in depths {
                let step = match qd {
                    Some(d) => format!("{name}/oio={d}"),
                    None => name.clone(),
                };
                let mut timing = setup.timing.clone();
                timing.rate_iops = rate;
                timing.arrival = rate.map(|_| "uniform".to_string());
                let desc = setup
                    .description
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default();
                out.push(IometerStep {
                    raw: RawProfile {
                        name: Some(profile_name(&step)),
                        description: Some(format!("Imported from the Iometer access specification '{step}'{desc} of {} (line {}) by iofleet's Iometer reader (docs/iometer.md).", spec.at.file, spec.at.line)),
                        fleet: RawFleet {
                            workers: Some(f.workers),
                            disks_per_worker: Some(f.disks),
                            disk_size: f.size.map(|b| b.to_string()),
                            threads_per_disk: Some(f.threads),
                            qd: Some(qd.unwrap_or(f.qd)),
                            ..RawFleet::default()
                        },
                        timing,
                        data: Default::default(),
                        streams: streams.clone(),
                        origin: format!("{} access specification '{step}'", spec.at.file),
                    },
                    name: step,
                    spec: name.clone(),
                    at: spec.at.clone(),
                });
            }
        }
        out
    }

    /// A specification's streams and the rate its delay sets (None: as fast as the
    /// outstanding I/Os allow).
    fn streams(&mut self, s: &Spec) -> Option<(Vec<RawStream>, Option<f64>)> {
        // A line Iometer would not load is refused by `check_spec`; nothing more is made of it.
        let loadable = |l: &SpecLine| {
            (0..=100).contains(&l.pct)
                && l.size >= 1
                && l.burst >= 1
                && l.delay >= 0
                && l.align >= 0
                && l.reply >= 0
        };
        if !s.lines.iter().all(loadable) {
            return None;
        }
        let before = self.problems.len();
        let lines: Vec<&SpecLine> = s.lines.iter().filter(|l| l.pct > 0).collect();
        for l in s.lines.iter().filter(|l| l.pct == 0) {
            self.notice(&l.at, "a line of 0% of size: never chosen, left out");
        }
        for l in &lines {
            if l.reply > 0 {
                self.problem(&l.at, "reply", format!("{}: Iometer follows each transfer by a dependent reply of this size in the other direction (request and response pairs, meant for network targets); iofleet's I/Os are independent, so set reply 0", l.reply));
            }
            if l.align > 0 && (l.align as u64).count_ones() != 1 {
                self.problem(
                    &l.at,
                    "align",
                    format!(
                        "{}: iofleet aligns random offsets to a power of two",
                        l.align
                    ),
                );
            }
        }
        let rate = self.rate(s, &lines);
        if self.problems.len() > before || lines.is_empty() {
            return None;
        }
        // Each line's share of I/Os: % of size times the burst (a burst is that many I/Os
        // of the line in a row), over the bursts' common divisor.
        let g = lines.iter().fold(0, |g, l| gcd(g, l.burst));
        if lines.len() > 1 && lines.iter().any(|l| l.burst > 1) {
            self.notice(&s.at, format!("'{}': bursts of several I/Os of one line; iofleet draws the line of each I/O on its own, in the same shares (% of size x burst)", s.name));
        }
        let streams = streams_of(s, g);
        Some((streams, rate))
    }

    /// The rate a delay sets: Iometer waits `delay` ms before each burst of `burst` I/Os,
    /// so a worker issues at most burst × 1000 / delay I/Os a second.
    fn rate(&mut self, s: &Spec, lines: &[&SpecLine]) -> Option<f64> {
        let first = lines.first()?;
        if lines.iter().all(|l| l.delay == 0) {
            return None;
        }
        if let Some(l) = lines
            .iter()
            .find(|l| l.delay != first.delay || l.burst != first.burst)
        {
            self.problem(&l.at, "delay", format!("lines of '{}' with different delays or bursts ({} ms x {} here, {} ms x {} on line {}): iofleet caps a worker at one rate", s.name, l.delay, l.burst, first.delay, first.burst, first.at.line));
            return None;
        }
        let rate = first.burst as f64 * 1000.0 / first.delay as f64;
        self.notice(&first.at, format!("delay {} ms before each burst of {}: a rate of at most {rate} IOPS per worker (timing.rate_iops), spread evenly; Iometer sends each burst at once, and its rate is lower by the time a burst takes", first.delay, first.burst));
        Some(rate)
    }
}

/// Lines of one direction mix: the same `% reads`, `% random` and `align`, with each size's
/// share of I/Os and the spec line (from 1) the mix starts on.
struct Mix {
    reads: i64,
    random: i64,
    align: i64,
    sizes: Vec<(i64, i64)>,
    first: usize,
}

/// A specification's streams: one per mix of its lines (chosen more than 0% of the
/// time), its sizes weighted by share (% of size x burst / `g`), the streams too when
/// there are several.
fn streams_of(s: &Spec, g: i64) -> Vec<RawStream> {
    let mut mixes: Vec<Mix> = Vec::new();
    for (i, l) in s.lines.iter().enumerate().filter(|(_, l)| l.pct > 0) {
        let share = l.pct.saturating_mul(l.burst) / g;
        let same = |m: &&mut Mix| (m.reads, m.random, m.align) == (l.reads, l.random, l.align);
        match mixes.iter_mut().find(same) {
            Some(m) => match m.sizes.iter_mut().find(|(b, _)| *b == l.size) {
                Some((_, w)) => *w = w.saturating_add(share),
                None => m.sizes.push((l.size, share)),
            },
            None => mixes.push(Mix {
                reads: l.reads,
                random: l.random,
                align: l.align,
                sizes: vec![(l.size, share)],
                first: i + 1,
            }),
        }
    }
    let several = mixes.len() > 1;
    mixes
        .into_iter()
        .map(|m| {
            let weight = m.sizes.iter().fold(0i64, |t, (_, w)| t.saturating_add(*w));
            let bs = match m.sizes.as_slice() {
                [(b, _)] => b.to_string(),
                _ => m
                    .sizes
                    .iter()
                    .map(|(b, w)| format!("{b}:{w}"))
                    .collect::<Vec<_>>()
                    .join(","),
            };
            let align = if m.align == 0 { SECTOR } else { m.align as u64 };
            RawStream {
                name: Some(if several {
                    format!("line{}", m.first)
                } else {
                    "main".into()
                }),
                bs: Some(bs),
                read_pct: Some(m.reads as f64),
                random_pct: Some(m.random as f64),
                align: Some(align.to_string()),
                weight: several.then_some(weight),
                ..RawStream::default()
            }
        })
        .collect()
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.max(1)
    } else {
        gcd(b, a % b)
    }
}
