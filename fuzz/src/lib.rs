//! What iofleet's fuzz targets assert, shared by all of them: an input becomes text the
//! way each parser takes it, and each outcome is checked against what the code promises.
//!
//! An error names what fixes it (a profile's dotted key, an inventory's line or host, a
//! job file's file and line); a resolved plan stays within the bounds of the option table
//! (`iofleet_profile::options`) and prints back (`plan_toml`) as a profile that resolves
//! to the same plan; placed workers add up to the fleet. A panic anywhere, in the parser
//! or in these checks, is a crash the fuzzer reports. The targets themselves
//! (`fuzz_targets/`) only wire an input through the path the CLI takes; the checks live
//! here so that a new target reuses them. Nothing here reads a file or runs a process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use iofleet_fleet::inventory::{self, HostSpec, InventoryError, Role};
use iofleet_import::diskspd::{self, DiskspdError};
use iofleet_import::fio::{self, FioError};
use iofleet_import::vdbench::{self, VdbenchError};
use iofleet_profile::options::{option, DIRECT_IO_SECTOR, DISK_SIZE_MULTIPLE, MIN_DISK_SIZE};
use iofleet_profile::{
    parse_toml, plan_toml, resolve, Context, Locality, Overrides, Plan, ProfileError,
};

/// The input as the text a parser reads: invalid UTF-8 becomes U+FFFD, so every input
/// reaches the parser rather than being dropped here.
pub fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// The two contexts a profile is resolved in: direct I/O (the default) and buffered.
pub const CONTEXTS: [Context; 2] = [Context { direct: true }, Context { direct: false }];

/// A profile error names the key that fixes it (or, for TOML syntax, the line), after
/// the profile's origin; a command-line flag is named only when one set the value.
pub fn check_profile_error(e: &ProfileError, origin: &str) {
    let msg = e.to_string();
    match e {
        ProfileError::Parse {
            key: None, message, ..
        } => {
            assert!(message.contains("line "), "neither key nor line: {msg}")
        }
        ProfileError::Read { .. } | ProfileError::UnknownProfile { .. } => {
            panic!("text was parsed, yet: {msg}")
        }
        // Parse errors with a key and value errors, whatever their kind.
        _ => {
            let key = e.key().unwrap_or_else(|| panic!("no key named: {msg}"));
            assert!(
                !key.is_empty() && msg.contains(key),
                "key {key} not in: {msg}"
            );
            assert_eq!(e.flag(), None, "a flag named with no override given: {msg}");
        }
    }
    if matches!(e, ProfileError::Parse { .. } | ProfileError::Invalid { .. }) {
        assert!(
            msg.starts_with(&format!("{origin}: ")),
            "origin not named: {msg}"
        );
    }
}

/// An integer or number of the option table within its range.
fn within(key: &str, v: f64) {
    if let Err(m) = option(key).check(v) {
        panic!("the plan's {key} is {v}: {m}");
    }
}

/// A resolved plan is within every bound the option table and `validate` promise, and
/// prints back as a profile that resolves to the same plan.
pub fn check_plan(plan: &Plan, ctx: &Context) {
    let f = &plan.fleet;
    assert!(!plan.name.trim().is_empty(), "a plan without a name");
    within("fleet.workers", f.workers.into());
    within("fleet.disks_per_worker", f.disks_per_worker.into());
    within("fleet.threads_per_disk", f.threads_per_disk.into());
    within("fleet.qd", f.qd.into());
    if let Some(n) = f.io_threads {
        within("fleet.io_threads", n.into());
    }
    assert!(f.disk_size >= MIN_DISK_SIZE, "disk_size {}", f.disk_size);
    assert_eq!(
        f.disk_size.0 % DISK_SIZE_MULTIPLE.0,
        0,
        "disk_size {}",
        f.disk_size
    );
    let t = &plan.timing;
    assert!(!t.duration.is_zero() && t.interval <= t.duration, "{t:?}");
    if let Some(r) = t.rate_iops {
        within("timing.rate_iops", r);
    }
    within("data.dedupe_ratio", plan.data.dedupe_ratio);
    within("data.compress_ratio", plan.data.compress_ratio);
    assert!(!plan.streams.is_empty(), "a plan without streams");
    for (i, s) in plan.streams.iter().enumerate() {
        assert!(
            !plan.streams[..i].iter().any(|o| o.name == s.name),
            "stream name {} twice",
            s.name
        );
        assert!(!s.bs.entries.is_empty(), "{}: no block sizes", s.name);
        for &(size, weight) in &s.bs.entries {
            assert!(
                size.0 > 0 && weight > 0 && size <= f.disk_size,
                "{}: {size}",
                s.name
            );
            assert!(
                !ctx.direct || size.0 % DIRECT_IO_SECTOR.0 == 0,
                "{}: {size}",
                s.name
            );
        }
        within("stream.read_pct", s.read_pct);
        within("stream.random_pct", s.random_pct);
        within("stream.working_set_pct", s.working_set_pct);
        assert!(
            s.align.0.is_power_of_two() && s.align <= f.disk_size,
            "{}",
            s.name
        );
        match (s.weight, s.rate_iops, s.qd) {
            (Some(w), None, None) => within("stream.weight", w.into()),
            (None, Some(r), Some(q)) => {
                within("stream.rate_iops", r);
                within("stream.qd", q.into());
            }
            lane => panic!("{}: lane {lane:?} is neither weighted nor rated", s.name),
        }
        if let Locality::Zipf { theta } = s.locality {
            within("stream.zipf", theta);
        }
        assert!(!s.disks.is_empty(), "{}: no disks", s.name);
        assert!(
            s.disks.windows(2).all(|w| w[0] < w[1]),
            "{}: disks {:?} not sorted and distinct",
            s.name,
            s.disks
        );
        assert!(
            s.disks.iter().all(|&d| d < f.disks_per_worker),
            "{}: disks {:?} of {}",
            s.name,
            s.disks,
            f.disks_per_worker
        );
    }
    // Lanes and I/Os in flight, from keys each within its bound, fit in u64 (the fleet's
    // own sums of them are u64 too).
    let lanes =
        u64::from(f.workers) * u64::from(f.disks_per_worker) * u64::from(f.threads_per_disk);
    let per_lane = plan
        .streams
        .iter()
        .filter_map(|s| s.qd)
        .map(u64::from)
        .sum::<u64>();
    lanes
        .checked_mul(per_lane + u64::from(f.qd))
        .expect("I/Os in flight pass u64");
    plan.configured_outstanding();
    let emitted = plan_toml(plan);
    let again = parse_toml(&emitted, "emitted")
        .and_then(|raw| resolve(&raw, &Overrides::default(), ctx))
        .unwrap_or_else(|e| panic!("the printed plan does not resolve: {e}\n{emitted}"));
    assert_eq!(
        &again, plan,
        "the printed plan resolves to another plan:\n{emitted}"
    );
}

/// Profile text through the path `iofleet run PROFILE.toml` takes: parsed, then resolved
/// with no override in both contexts; each outcome checked.
pub fn profile(text: &str) {
    const ORIGIN: &str = "fuzz.toml";
    let raw = match parse_toml(text, ORIGIN) {
        Ok(raw) => raw,
        Err(e) => return check_profile_error(&e, ORIGIN),
    };
    for ctx in CONTEXTS {
        match resolve(&raw, &Overrides::default(), &ctx) {
            Ok(plan) => check_plan(&plan, &ctx),
            Err(e) => check_profile_error(&e, ORIGIN),
        }
    }
}

/// The most workers a fleet (and so a host's pin, and all pins together) may have.
fn most_workers() -> u32 {
    let b = option("fleet.workers")
        .bounds()
        .expect("fleet.workers has a range");
    b.hi.expect("fleet.workers has an upper bound").0 as u32
}

/// Inventory text through the path `--hosts FILE` takes (`load_with`'s, from text):
/// an error names the flag and, when it gives a line, a line of the text; hosts read are
/// named, distinct, pinned within the fleet's bound, and placement adds up.
pub fn inventory(text: &str, format: inventory::TextFormat) {
    let file = Path::new("fuzz-inventory");
    match inventory::parse_text(file, text, format) {
        Ok(hosts) => check_hosts(&hosts),
        Err(e) => check_inventory_error(&e, text),
    }
}

fn check_inventory_error(e: &InventoryError, text: &str) {
    let msg = e.to_string();
    assert!(
        msg.starts_with("--hosts fuzz-inventory"),
        "flag not named: {msg}"
    );
    if let InventoryError::File {
        line: Some(line), ..
    } = e
    {
        // A line past the last is the end of the text (an unclosed section, say).
        let lines = text.split('\n').count();
        assert!(
            (1..=lines).contains(line),
            "line {line} of a text of {lines}: {msg}"
        );
    }
}

fn check_hosts(hosts: &[HostSpec]) {
    let most = most_workers();
    assert!(!hosts.is_empty(), "an inventory without hosts was accepted");
    let mut pinned = 0u64;
    let mut names = std::collections::BTreeSet::new();
    for (i, h) in hosts.iter().enumerate() {
        for name in [&h.name, &h.destination] {
            assert!(!name.trim().is_empty(), "host {i}: an empty name {name:?}");
            assert!(
                !name.chars().any(char::is_control),
                "host {i}: a control character in {name:?}"
            );
        }
        // A set, not a scan of the hosts before: a pattern expands to 100,000 hosts.
        assert!(names.insert(&h.name), "host name {:?} twice", h.name);
        if let Some(w) = h.workers {
            assert!(
                h.role == Role::Workers,
                "{}: an observer with a pin",
                h.name
            );
            assert!((1..=most).contains(&w), "{}: pinned to {w} workers", h.name);
            pinned += u64::from(w);
        }
    }
    assert!(pinned <= u64::from(most), "pins add up to {pinned}");
    for total in [1, most] {
        let Ok(placed) = inventory::place(hosts, total) else {
            continue;
        };
        assert_eq!(placed.len(), hosts.len());
        let mut next = 0u64;
        for (h, &(base, count)) in hosts.iter().zip(&placed) {
            assert_eq!(
                u64::from(base),
                next,
                "{}: workers placed out of order",
                h.name
            );
            if let Some(w) = h.workers {
                assert_eq!(count, w, "{}: pin not kept", h.name);
            }
            if h.role == Role::Observer {
                assert_eq!(count, 0, "{}: an observer given workers", h.name);
            }
            next += u64::from(count);
        }
        let free = hosts
            .iter()
            .any(|h| h.workers.is_none() && h.role == Role::Workers);
        let want = if free { u64::from(total) } else { pinned };
        assert_eq!(next, want, "placed {next} workers of {total}");
    }
}

/// Environment variables a job file's `${VAR}` may name in the fuzzer (others are unset).
pub fn fio_env(var: &str) -> Option<String> {
    match var {
        "SIZE" => Some("64m".into()),
        "BENCH_SECONDS" => Some("10".into()),
        _ => None,
    }
}

/// A fio error names where it was written: a syntax error its file and a line of that
/// file, each unsupported option its file, line and name.
pub fn check_fio_error(e: &FioError, texts: &dyn Fn(&str) -> Option<usize>) {
    let msg = e.to_string();
    let located = |file: &str, line: usize| {
        let lines = texts(file).unwrap_or_else(|| panic!("{file} is no text given: {msg}"));
        assert!(
            (1..=lines).contains(&line),
            "{file}:{line} of {lines} lines: {msg}"
        );
    };
    match e {
        FioError::Syntax { at, .. } => {
            assert!(msg.starts_with(&format!("{at}: ")), "not located: {msg}");
            located(&at.file, at.line);
        }
        FioError::Unsupported(problems) => {
            assert!(!problems.is_empty(), "no problem listed: {msg}");
            for p in problems {
                assert!(!p.option.is_empty(), "a problem without an option: {msg}");
                assert!(msg.contains(&format!("{}: {}: ", p.at, p.option)), "{msg}");
                located(&p.at.file, p.at.line);
            }
        }
        FioError::Read { path, .. } => panic!("{path} read from disk: {msg}"),
        FioError::NoJobs | FioError::NoSuchJob { .. } => {}
        #[allow(unreachable_patterns)]
        _ => {}
    }
}

/// A fuzz input's job files: the text up to the first line `#>> PATH` is the job file,
/// each such line starts the text of file PATH, which an `include PATH` reads.
pub fn split_files(input: &str) -> (&str, BTreeMap<PathBuf, String>) {
    let mut files = BTreeMap::new();
    let Some(first) = input.find("#>> ") else {
        return (input, files);
    };
    let (main, rest) = input.split_at(first);
    for chunk in rest.split("#>> ").skip(1) {
        let (path, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
        files.insert(PathBuf::from(path.trim()), body.to_string());
    }
    (main, files)
}

/// A job file through the path `iofleet run JOB.fio` takes (`fio_job::phases`): parsed
/// with includes among the input's own texts, mapped for a direct and a buffered run,
/// and each job's profile resolved; each outcome checked.
pub fn fio_job(input: &str) {
    const ORIGIN: &str = "fuzz.fio";
    let (main, files) = split_files(input);
    let lines = |file: &str| {
        let text = if file == ORIGIN {
            Some(main)
        } else {
            files.get(Path::new(file)).map(String::as_str)
        };
        text.map(|t| t.lines().count())
    };
    let jobs = match fio::parse_job_text_in(main, ORIGIN, &files, &fio_env) {
        Ok(jobs) => jobs,
        Err(e) => return check_fio_error(&e, &lines),
    };
    assert!(!jobs.is_empty(), "a job file of no job was read");
    for ctx in CONTEXTS {
        let imp = match fio::import(&jobs, ctx.direct, &[]) {
            Ok(imp) => imp,
            Err(e) => {
                check_fio_error(&e, &lines);
                continue;
            }
        };
        assert_eq!(imp.groups.len(), jobs.len(), "a group per job section");
        let phases = fio::phases(&imp.groups);
        assert_eq!(
            phases.iter().map(|p| p.len()).sum::<usize>(),
            imp.groups.len(),
            "every group in one phase"
        );
        for g in phases.iter().flat_map(|p| p.iter()) {
            match resolve(&g.raw, &Overrides::default(), &ctx) {
                Ok(plan) => check_plan(&plan, &ctx),
                Err(e) => check_profile_error(&e, &g.raw.origin),
            }
        }
    }
}

/// A DISKSPD command line through the path `iofleet run --diskspd` takes: read, then
/// its profile resolved in both contexts. A refusal names only flags the line holds
/// (as split); a read line has a target per disk and a plan within the table's bounds.
pub fn diskspd_args(input: &str) {
    let imp = match diskspd::read(input) {
        Ok(imp) => imp,
        Err(DiskspdError::Flags(problems)) => {
            let words = diskspd::split_args(input).expect("a line refused by flag splits");
            assert!(!problems.is_empty(), "a refusal of no flag");
            for p in &problems {
                assert!(words.contains(&p.flag), "{} is not a word of {input:?}", p.flag);
                assert!(!p.message.is_empty(), "{} refused without a reason", p.flag);
            }
            return;
        }
        Err(DiskspdError::Quote) => {
            assert!(input.contains('"'), "an unclosed quote in a line of none");
            return;
        }
        Err(DiskspdError::NoTarget) => return,
    };
    assert!(!imp.targets.is_empty(), "a line of no target was read");
    assert_eq!(
        imp.raw.fleet.disks_per_worker,
        Some(imp.targets.len() as i64),
        "a disk per target"
    );
    for ctx in CONTEXTS {
        match resolve(&imp.raw, &Overrides::default(), &ctx) {
            Ok(plan) => check_plan(&plan, &ctx),
            Err(e) => {
                check_profile_error(&e, &imp.raw.origin);
                if let Some(key) = e.key() {
                    assert!(
                        diskspd::flag_of_key(key).is_some(),
                        "{key} names no DISKSPD flag: {e}"
                    );
                }
            }
        }
    }
}

/// A vdbench parameter file through the path `iofleet run FILE.vdb` takes: read, then
/// each step's profile resolved in both contexts. A refusal names lines the text has; a
/// read file has at most `MAX_STEPS` steps, each one worker with a stream per wd.
pub fn vdbench_file(input: &str) {
    let lines = input.lines().count().max(1);
    let imp = match vdbench::read_text(input, "fuzz.vdb") {
        Ok(imp) => imp,
        Err(VdbenchError::Unsupported(problems)) => {
            assert!(!problems.is_empty(), "a refusal of no parameter");
            for p in &problems {
                assert!((1..=lines).contains(&p.at.line), "line {} of {lines}", p.at.line);
                assert!(!p.message.is_empty(), "{} refused without a reason", p.parameter);
            }
            return;
        }
        Err(VdbenchError::Syntax { at, .. }) => {
            assert!((1..=lines).contains(&at.line), "line {} of {lines}", at.line);
            return;
        }
        Err(VdbenchError::NoRuns) => return,
        Err(e @ VdbenchError::Read { .. }) => panic!("text was given, yet: {e}"),
    };
    assert!(!imp.steps.is_empty() && imp.steps.len() <= vdbench::MAX_STEPS);
    for step in &imp.steps {
        assert_eq!(step.raw.fleet.workers, Some(1), "one worker per step");
        assert!(!step.raw.streams.is_empty(), "a step of no stream");
        for ctx in CONTEXTS {
            match resolve(&step.raw, &Overrides::default(), &ctx) {
                Ok(plan) => check_plan(&plan, &ctx),
                Err(e) => {
                    check_profile_error(&e, &step.raw.origin);
                    if let Some(key) = e.key() {
                        assert!(
                            vdbench::parameter_of_key(key).is_some(),
                            "{key} names no vdbench parameter: {e}"
                        );
                    }
                }
            }
        }
    }
}

/// The listeners' HTTP server, compiled here from its source (it lives in the binary
/// crate): only its pure head parser is called.
#[path = "../../crates/cli/src/web/http.rs"]
#[allow(dead_code)]
mod http;

/// The request head as both listeners read it: any bytes give a verdict; a whole head
/// has a method, a path that starts the target and no `?` or `#` in it; an unfinished one
/// is under the head bound (past it, the head is refused, not read on).
pub fn http_head(data: &[u8]) {
    match http::parse_head(data) {
        http::Parsed::Request(r) => {
            assert!(!r.method.is_empty(), "{r:?}");
            assert!(!r.path.contains('?') && !r.path.contains('#'), "{r:?}");
            assert!(!r.query.contains('#'), "{r:?}");
            assert!(r.headers.iter().all(|(k, _)| k == &k.to_ascii_lowercase()));
        }
        http::Parsed::Partial => assert!(data.len() < 16 * 1024),
        http::Parsed::Bad => {}
    }
}

/// The agent's frames as the controller reads them, session after session: any bytes
/// give frames, an error or the end, and no body is kept past its kind's limit (the
/// greeting's, and a running job's of 1 MiB for intervals and reports).
pub fn agent_frames(data: &[u8]) {
    use iofleet_fleet::agents::protocol::{read_frame, FrameLimits};
    let running = FrameLimits {
        interval: 1 << 20,
        report: 1 << 20,
    };
    for limits in [FrameLimits::greeting(), running] {
        let mut r = data;
        while let Ok(Some(_)) = read_frame(&mut r, &limits) {}
    }
}

/// A joining agent's first bytes as the join port reads them (`candidate_join`), and
/// the port's incremental frame reader against the sessions' stream reader: the answer
/// for the whole input is the one the port reaches feeding it in chunks (the chunk
/// sizes taken from the input's first byte), a join takes no more than it was given,
/// and a refusal says whether the input was malformed or oversized.
pub fn join_handshake(data: &[u8]) {
    use iofleet_fleet::agents::join::server::candidate_join;
    use iofleet_fleet::agents::protocol::{read_frame, take_frame, FrameLimits};
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let whole = candidate_join(input);
    match &whole {
        Ok(Some((_, used))) => assert!(*used <= input.len()),
        Ok(None) => {}
        Err(why) => assert!(
            why.starts_with("malformed: ") || why.starts_with("oversized: "),
            "{why}"
        ),
    }
    // Fed as it might arrive: the first answer that is not "incomplete" is the whole's.
    let step = usize::from(step).max(1);
    let mut fed = 0;
    let answer = loop {
        fed = (fed + step).min(input.len());
        match candidate_join(&input[..fed]) {
            Ok(None) if fed < input.len() => continue,
            other => break other,
        }
    };
    assert_eq!(answer, whole);
    // The port's frame reader and the sessions' agree on any bytes.
    let limits = FrameLimits::greeting();
    let mut r = input;
    let streamed = read_frame(&mut r, &limits);
    match (take_frame(input, || limits), streamed) {
        (Ok(Some((f, used))), Ok(Some(g))) => {
            assert_eq!(f, g);
            assert_eq!(used, input.len() - r.len());
        }
        (Ok(None), Ok(None) | Err(_)) | (Err(_), Err(_)) => {}
        (a, b) => panic!("the port read {a:?}, a session {b:?}"),
    }
}
