//! DISKSPD command lines as iofleet workloads (docs/diskspd.md): `split_args` splits the
//! line as Windows' command prompt passes it (blanks, `"` quotes), `read` maps the flags
//! to the raw profile of one worker, with a notice for every flag that does not change
//! the I/O and an error naming each flag iofleet cannot run.
//!
//! Flag meanings follow DISKSPD's own usage text (`diskspd -?`, `CmdLineParser.cpp` in
//! github.com/microsoft/diskspd): sizes are bytes with an optional `K`/`M`/`G`/`T`
//! (powers of 1024) or `b` (blocks of `-b`) suffix; times are whole seconds; the
//! defaults are `-b64K -t1 -o2 -W5 -d10 -C0`, reads only, sequential, OS caching on.
//!
//! Like `fio`, this module knows nothing about engines or targets: the targets and the
//! direct-I/O setting come back as plain values for the CLI to apply.

use iofleet_profile::raw::{RawData, RawFleet, RawProfile, RawStream, RawTiming};
use thiserror::Error;

/// DISKSPD's defaults (its usage text).
const DEFAULT_BS: u64 = 64 * 1024;
const DEFAULT_QD: i64 = 2;
const DEFAULT_WARMUP: u64 = 5;
const DEFAULT_DURATION: u64 = 10;

/// A target as written after the flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskspdTarget {
    /// A file path: a disk made under the run's target.
    File(String),
    /// `#N`: a Windows physical drive number.
    Disk(u32),
    /// `X:`: a Windows drive letter.
    Drive(char),
}

impl DiskspdTarget {
    /// The target as written.
    pub fn written(&self) -> String {
        match self {
            DiskspdTarget::File(p) => p.clone(),
            DiskspdTarget::Disk(n) => format!("#{n}"),
            DiskspdTarget::Drive(c) => format!("{c}:"),
        }
    }
}

/// A command line read and mapped.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskspdImport {
    /// One worker: one disk per target, `-t` threads per disk, `-o` I/Os per thread.
    pub raw: RawProfile,
    pub targets: Vec<DiskspdTarget>,
    /// Whether DISKSPD bypasses the OS cache (`-S`, `-Su`, `-Sh`, `-h`): O_DIRECT.
    /// DISKSPD caches unless told otherwise.
    pub direct: bool,
    /// Flags accepted with a difference worth saying, one line each.
    pub notices: Vec<String>,
}

/// One flag iofleet cannot run, as written, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagProblem {
    pub flag: String,
    pub message: String,
}

/// Why a command line could not be read or mapped.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum DiskspdError {
    #[error("the DISKSPD command line has an unclosed \" quote")]
    Quote,
    #[error("the DISKSPD command line names no target (a file path after the flags)")]
    NoTarget,
    /// Every flag iofleet cannot run or read, each named.
    #[error("{}", problems_text(.0))]
    Flags(Vec<FlagProblem>),
}

fn problems_text(problems: &[FlagProblem]) -> String {
    let mut s = format!(
        "{} DISKSPD flag(s) iofleet cannot run as written:",
        problems.len()
    );
    for p in problems {
        s.push_str(&format!("\n  {}: {}", p.flag, p.message));
    }
    s.push_str("\n(see docs/diskspd.md)");
    s
}

/// The words of a command line as Windows' command prompt hands them to a program:
/// split at blanks, with `"..."` keeping blanks inside one word (the quotes removed).
/// A backslash is an ordinary character (Windows paths use it).
pub fn split_args(line: &str) -> Result<Vec<String>, DiskspdError> {
    let (mut out, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if quoted {
        return Err(DiskspdError::Quote);
    }
    if any {
        out.push(word);
    }
    Ok(out)
}

/// Whether `w` is the program's own name (`diskspd`, `.\diskspd.exe`, a full path).
fn is_program(w: &str) -> bool {
    let name = w
        .rsplit(['\\', '/'])
        .next()
        .unwrap_or(w)
        .to_ascii_lowercase();
    name == "diskspd" || name == "diskspd.exe"
}

/// Whether `w` is a flag: `-X...`, or DISKSPD's other switch character `/X...` when it
/// holds no further `/` (so a Linux path is a target).
fn is_flag(w: &str) -> bool {
    let mut c = w.chars();
    match (c.next(), c.next()) {
        (Some('-'), Some(_)) => true,
        (Some('/'), Some(x)) => x.is_ascii_alphabetic() && !w[1..].contains('/'),
        _ => false,
    }
}

/// A DISKSPD size: whole bytes with an optional `K`, `M`, `G`, `T` (powers of 1024) or
/// `b` (blocks of `bs`) suffix, any case.
fn size(text: &str, bs: u64) -> Result<u64, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (num, suffix) = text.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        format!("'{text}' is not a size (whole bytes, or with K, M, G, T or b: 4K, 1G)")
    })?;
    let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        "b" => bs,
        _ => {
            return Err(format!(
                "'{text}' has an unknown size suffix (K, M, G, T or b for blocks)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// A whole number of at least `min`.
fn count(text: &str, min: u64) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(format!("'{text}' is not a whole number of at least {min}")),
    }
}

/// A percentage 0..=100 (whole, as DISKSPD reads it); empty is 0.
fn percent(text: &str) -> Result<u64, String> {
    if text.is_empty() {
        return Ok(0);
    }
    match text.parse::<u64>() {
        Ok(n) if n <= 100 => Ok(n),
        _ => Err(format!("'{text}' is not a whole percentage 0 to 100")),
    }
}

/// What the flags asked for, before it becomes a profile.
#[derive(Default)]
struct Flags {
    threads: Option<(String, u64)>,
    total_threads: Option<(String, u64)>,
    qd: Option<u64>,
    write_pct: Option<u64>,
    /// `-r[align]`: the alignment (None: the block size).
    random: Option<(String, Option<u64>)>,
    /// `-rs<pct>`.
    random_pct: Option<(String, u64)>,
    /// `-s[i][stride]`: interlocked, the stride (None: the block size).
    sequential: Option<(String, bool, Option<u64>)>,
    thread_offset: Option<(String, u64)>,
    parallel: Option<String>,
    warmup: Option<u64>,
    duration: Option<u64>,
    cooldown: Option<u64>,
    /// `-g`: the value and whether it is IOPS (`i`) rather than bytes per millisecond.
    throughput: Option<(String, u64, bool)>,
    base: Option<(String, u64)>,
    max_offset: Option<(String, u64)>,
    create: Option<(String, u64)>,
    direct: bool,
    write_through: bool,
    pattern: Option<&'static str>,
}

/// Read a DISKSPD command line (with or without the program's name first) into the
/// profile of one worker. Every flag iofleet cannot run is named in one error.
pub fn read(line: &str) -> Result<DiskspdImport, DiskspdError> {
    let words = split_args(line)?;
    let words: &[String] = match words.first() {
        Some(w) if is_program(w) => &words[1..],
        _ => &words,
    };
    let mut m = Mapper::default();
    // DISKSPD reads -b before the other flags, so that `b` (blocks) means the same in
    // every flag wherever -b is written.
    let bs_flag = words
        .iter()
        .take_while(|w| is_flag(w))
        .filter(|w| w[1..].starts_with('b'))
        .last();
    // A bad -b is named when the flags are read one by one.
    let bs = bs_flag
        .and_then(|w| size(&w[2..], DEFAULT_BS).ok())
        .filter(|b| *b > 0)
        .unwrap_or(DEFAULT_BS);
    let mut f = Flags::default();
    let mut targets = Vec::new();
    for w in words {
        if !is_flag(w) {
            targets.push(target(w));
            continue;
        }
        if !targets.is_empty() {
            m.problem(
                w,
                "flags must come before the targets (DISKSPD refuses this too)",
            );
            continue;
        }
        m.flag(w, bs, &mut f);
    }
    if targets.is_empty() && m.problems.is_empty() {
        return Err(DiskspdError::NoTarget);
    }
    let (raw, direct) = m.profile(&f, bs, targets.len());
    if !m.problems.is_empty() {
        return Err(DiskspdError::Flags(m.problems));
    }
    Ok(DiskspdImport {
        raw,
        targets,
        direct,
        notices: m.notices,
    })
}

fn target(w: &str) -> DiskspdTarget {
    let b = w.as_bytes();
    if let Some(n) = w.strip_prefix('#').and_then(|n| n.parse().ok()) {
        return DiskspdTarget::Disk(n);
    }
    if b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return DiskspdTarget::Drive(b[0].to_ascii_uppercase() as char);
    }
    DiskspdTarget::File(w.to_string())
}

/// What the flags do not change, and why: accepted with a notice.
const NOTICED: &[(&str, &str)] = &[
    ("L", "iofleet always measures latency (histograms per interval)"),
    ("D", "iofleet keeps per-interval results (--interval) and reports their spread"),
    ("R", "iofleet's output is chosen with --output-format/--json; --dry-run shows the resolved profile"),
    ("v", "iofleet's output is chosen with --output-format/--json"),
    ("P", "progress dots: iofleet's live progress is on stderr and --ui"),
    ("x", "completion routines or ports: how Windows reaps I/O; iofleet's engines keep the queue at -o"),
    ("l", "large pages for the buffers: iofleet allocates its own aligned buffers"),
    ("a", "CPU affinity: pin with --cpus"),
    ("n", "CPU affinity: iofleet does not pin unless --cpus is given"),
    ("z", "the random seed: pass --seed N"),
    ("e", "Windows event tracing"),
    ("I", "Windows I/O priority hints: run iofleet under ionice for that"),
    (":", "DISKSPD's experiment flags"),
];

/// Flags iofleet knows but cannot run, and why.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("rd", "non-uniform random distributions are not read from DISKSPD yet; write stream.hot_bands in a profile (same io%/range% notation)"),
    ("i", "bursts with think time between them: iofleet has no think time; pace I/O with -g or --rate"),
    ("j", "think time between bursts: iofleet has no think time; pace I/O with -g or --rate"),
    ("O", "outstanding I/Os per thread across targets (with -F): give -o per target"),
    ("X", "DISKSPD's XML profiles are not read; give the flags on the command line"),
    ("y", "synchronisation events between processes"),
    ("N", "memory-mapped I/O flush modes: iofleet does not use memory-mapped I/O"),
    ("?", "DISKSPD's usage text: not a workload"),
];

#[derive(Default)]
struct Mapper {
    problems: Vec<FlagProblem>,
    notices: Vec<String>,
}

impl Mapper {
    fn problem(&mut self, flag: &str, message: impl Into<String>) {
        self.problems.push(FlagProblem {
            flag: flag.to_string(),
            message: message.into(),
        });
    }

    fn notice(&mut self, flag: &str, text: impl AsRef<str>) {
        self.notices
            .push(format!("diskspd {flag}: {}", text.as_ref()));
    }

    /// Record one flag `w` (`-X...`) into `f`.
    fn flag(&mut self, w: &str, bs: u64, f: &mut Flags) {
        let body = &w[1..];
        let (letter, arg) = body.split_at(body.chars().next().map_or(0, char::len_utf8));
        let keep = |r: Result<u64, String>, m: &mut Self| match r {
            Ok(v) => Some(v),
            Err(e) => {
                m.problem(w, e);
                None
            }
        };
        if let Some((_, why)) = UNSUPPORTED
            .iter()
            .find(|(n, _)| body.starts_with(n) && (n.len() > 1 || *n == letter))
        {
            return self.problem(w, format!("not supported: {why}"));
        }
        match letter {
            // Its value was read first, in `read`.
            "b" => match size(arg, bs) {
                Ok(0) => self.problem(w, "a block size of 0 bytes"),
                Ok(_) => {}
                Err(e) => self.problem(w, e),
            },
            "t" => f.threads = keep(count(arg, 1), self).map(|n| (w.into(), n)),
            "F" => f.total_threads = keep(count(arg, 1), self).map(|n| (w.into(), n)),
            "o" => f.qd = keep(count(arg, 1), self),
            "w" => f.write_pct = keep(percent(arg), self),
            "r" => self.random(w, arg, bs, f),
            "s" => {
                let (interlocked, rest) = match arg.strip_prefix('i') {
                    Some(r) => (true, r),
                    None => (false, arg),
                };
                let stride = match rest {
                    "" => None,
                    r => match keep(size(r, bs), self) {
                        Some(s) => Some(s),
                        None => return,
                    },
                };
                f.sequential = Some((w.into(), interlocked, stride));
            }
            "T" => f.thread_offset = keep(size(arg, bs), self).map(|n| (w.into(), n)),
            "p" if arg.is_empty() => f.parallel = Some(w.into()),
            "d" => f.duration = keep(count(arg, 0), self),
            "W" => f.warmup = keep(count(arg, 0), self),
            "C" => f.cooldown = keep(count(arg, 0), self),
            "g" => {
                let (num, iops) = match arg.strip_suffix('i') {
                    Some(n) => (n, true),
                    None => (arg, false),
                };
                f.throughput = keep(count(num, 1), self).map(|n| (w.into(), n, iops));
            }
            "B" => self.bounds(w, arg, bs, f),
            "f" if arg.starts_with(|c: char| c.is_ascii_digit()) => {
                f.max_offset = keep(size(arg, bs), self).map(|n| (w.into(), n));
            }
            "f" if !arg.is_empty() && arg.chars().all(|c| matches!(c, 'r' | 's' | 't')) => self
                .notice(
                    w,
                    "file access hints to the Windows cache manager; the I/O is unchanged",
                ),
            "c" => f.create = keep(size(arg, bs), self).map(|n| (w.into(), n)),
            "h" if arg.is_empty() => {
                f.direct = true;
                f.write_through = true;
            }
            "S" => self.caching(w, arg, f),
            "Z" => self.data(w, arg, bs, f),
            l => match NOTICED.iter().find(|(n, _)| *n == l) {
                Some((_, why)) => self.notice(w, format!("accepted: {why}")),
                None => self.problem(
                    w,
                    "unknown DISKSPD flag (see docs/diskspd.md for those iofleet reads)",
                ),
            },
        }
    }

    /// `-r[align]` and `-rs<pct>`.
    fn random(&mut self, w: &str, arg: &str, bs: u64, f: &mut Flags) {
        let r = match arg.strip_prefix('s') {
            Some(p) => percent(p).and_then(|p| match p {
                0 => Err("'0': -rs takes 1 to 100 (give -s for sequential)".into()),
                p => Ok(p),
            }),
            None if arg.is_empty() => {
                f.random = Some((w.into(), None));
                return;
            }
            None => size(arg, bs).and_then(|a| match a {
                0 => Err("an alignment of 0 bytes".into()),
                a => Ok(a),
            }),
        };
        match (r, arg.starts_with('s')) {
            (Ok(p), true) => f.random_pct = Some((w.into(), p)),
            (Ok(a), false) => f.random = Some((w.into(), Some(a))),
            (Err(e), _) => self.problem(w, e),
        }
    }

    /// `-B<base>[:length]`: the base offset, and the end of the range with a length.
    fn bounds(&mut self, w: &str, arg: &str, bs: u64, f: &mut Flags) {
        let (base, len) = match arg.split_once(':') {
            Some((b, l)) => (b, Some(l)),
            None => (arg, None),
        };
        let base = match size(base, bs) {
            Ok(b) => b,
            Err(e) => return self.problem(w, e),
        };
        f.base = Some((w.into(), base));
        match len.map(|l| size(l, bs)) {
            None => {}
            Some(Err(e)) => self.problem(w, e),
            Some(Ok(l)) => match base.checked_add(l) {
                Some(end) if l > 0 => f.max_offset = Some((w.into(), end)),
                _ => self.problem(w, "the range's length must be above 0"),
            },
        }
    }

    /// `-Z`, `-Zr`, `-Z<size>[,<file>]`: the written data.
    fn data(&mut self, w: &str, arg: &str, bs: u64, f: &mut Flags) {
        match arg {
            "" => f.pattern = Some("zero"),
            "r" => f.pattern = Some("random"),
            a if a.contains(',') => self.problem(
                w,
                "not supported: write data from a file; iofleet writes its own ([data] / --pattern)",
            ),
            a => match size(a, bs) {
                Ok(_) => {
                    f.pattern = Some("random");
                    self.notice(w, "DISKSPD writes from one buffer of random data; iofleet writes distinct random data in every block ([data] pattern = \"random\"), so a dedupe-capable target sees no repeats");
                }
                Err(e) => self.problem(w, e),
            },
        }
    }

    /// `-S[bhmruw]`: caching and write-through.
    fn caching(&mut self, w: &str, arg: &str, f: &mut Flags) {
        if arg.is_empty() {
            f.direct = true; // -S is -Su
        }
        for c in arg.chars() {
            match c {
                'u' => f.direct = true,
                'h' => {
                    f.direct = true;
                    f.write_through = true;
                }
                'w' => f.write_through = true,
                'b' => f.direct = false,
                'm' => self.problem(w, "not supported: memory-mapped I/O (-Sm)"),
                'r' => self.problem(
                    w,
                    "not supported: remote-filesystem caching modes (-Sr) are Windows SMB's",
                ),
                c => self.problem(w, format!("'{c}' is not a caching mode (b, h, m, r, u, w)")),
            }
        }
    }

    /// Threads per disk: `-t`, or `-F` (threads in total, each on every target).
    fn threads(&mut self, f: &Flags, targets: usize) -> u64 {
        match (&f.threads, &f.total_threads) {
            (Some(_), Some((w, _))) => {
                self.problem(
                    w,
                    "-F (threads in total) conflicts with -t (threads per target)",
                );
                1
            }
            (Some((_, t)), None) => *t,
            (None, Some((w, t))) => {
                if targets > 1 {
                    self.notice(w, format!("DISKSPD's {t} threads each issue I/O to every target; iofleet runs {t} threads on each disk, the same I/O streams per target"));
                }
                *t
            }
            (None, None) => 1,
        }
    }

    /// What `-s`, `-si`, `-p` and `-T` ask of the sequential cursors, against iofleet's
    /// (one per thread, moving by the block, spaced evenly over the working set).
    fn cursors(&mut self, f: &Flags, bs: u64, threads: u64, qd: u64, random_pct: u64) {
        if let (Some((rw, _)), Some((sw, _, _))) = (&f.random, &f.sequential) {
            if f.random_pct.is_none() {
                self.notice(
                    sw,
                    format!("ignored: {rw} makes the I/O random (DISKSPD: -r overrides -s)"),
                );
            }
        }
        if let Some((w, interlocked, stride)) = &f.sequential {
            if let Some(s) = stride.filter(|s| *s != bs) {
                self.problem(w, format!("not supported: a stride of {s} bytes with {bs}-byte blocks; iofleet's sequential cursor moves by the block, with no holes or overlaps"));
            }
            if *interlocked && threads > 1 && random_pct < 100 {
                self.problem(w, format!("not supported: -si shares one sequential offset among the {threads} threads of a target; each iofleet thread keeps its own cursor (give -t1, or leave out -si)"));
            }
        }
        if let Some(w) = &f.parallel {
            if random_pct < 100 && qd > 1 {
                self.problem(w, format!("not supported: -p starts the {qd} outstanding I/Os of a thread at one offset; iofleet's sequential cursor gives each its own"));
            } else {
                self.notice(w, "no effect here (random I/O, or one I/O outstanding)");
            }
        }
        // Where the threads of a target start: iofleet spaces their cursors evenly over
        // the working set; DISKSPD starts them at -T apart (default 0: all at the start).
        if random_pct < 100 && threads > 1 {
            match &f.thread_offset {
                Some((w, t)) => {
                    let even = self.even_spacing(f, threads);
                    if even != Some(*t) {
                        self.problem(w, format!(
                            "not supported: threads {t} bytes apart; iofleet starts the {threads} threads of a disk evenly spaced over its working set ({}), so give that -T or leave it out",
                            even.map_or("its disk size ÷ threads, with -c".to_string(), |e| format!("-T{e}"))
                        ));
                    }
                }
                None => self.notice(
                    "-t",
                    format!("DISKSPD starts the sequential cursors of the {threads} threads of a target at one offset (no -T); iofleet spaces them evenly over the working set"),
                ),
            }
        } else if let Some((w, _)) = &f.thread_offset {
            self.notice(w, "no effect here (random I/O, or one thread per target)");
        }
    }

    /// The flags as a profile of one worker, and whether it bypasses the OS cache.
    fn profile(&mut self, f: &Flags, bs: u64, targets: usize) -> (RawProfile, bool) {
        let threads = self.threads(f, targets);
        let qd = f.qd.unwrap_or(DEFAULT_QD as u64);
        // Random, partly random or sequential.
        let random_pct = match (&f.random, &f.random_pct, &f.sequential) {
            (_, Some((_, p)), _) => *p,
            (Some(_), None, _) => 100,
            _ => 0,
        };
        let align = f.random.as_ref().and_then(|(_, a)| *a);
        self.cursors(f, bs, threads, qd, random_pct);
        let disk_size = f.create.as_ref().map(|(w, c)| {
            let r = c / 4096 * 4096;
            if r != *c {
                self.notice(
                    w,
                    format!("{c} bytes rounded down to {r} (disk_size is a multiple of 4 KiB)"),
                );
            }
            r
        });
        if disk_size.is_none() {
            self.notice("-c", "not given: DISKSPD would use the existing files; iofleet makes its disks, of fleet.disk_size (default 1g; set --disk-size)");
        }
        // -B and -f: the range of each target the I/O goes to.
        if let Some((w, b)) = &f.base {
            if *b > 0 {
                self.problem(w, format!("not supported: a base offset of {b} bytes; iofleet addresses each disk from its start (its working set is the first working_set_pct percent)"));
            }
        }
        let working_set_pct = match (&f.max_offset, disk_size) {
            (None, _) => None,
            (Some((_, m)), Some(d)) if *m < d => Some(*m as f64 * 100.0 / d as f64),
            (Some(_), Some(_)) => None, // the whole disk
            (Some((w, _)), None) => {
                self.problem(w, "a maximum offset needs the disk size: give -c (iofleet makes the target files)");
                None
            }
        };
        if let Some(c) = f.cooldown.filter(|c| *c > 0) {
            self.notice(&format!("-C{c}"), "iofleet stops I/O when the measured time ends; the unmeasured cool-down is not run");
        }
        // -g: per thread per target; iofleet's rate is per worker (every thread of every disk).
        let lanes = threads * targets.max(1) as u64;
        let rate_iops = f.throughput.as_ref().map(|(w, g, iops)| {
            let per_lane = if *iops { *g as f64 } else { *g as f64 * 1000.0 / bs as f64 };
            let total = per_lane * lanes as f64;
            self.notice(w, format!(
                "{per_lane} IOPS per thread per target{}, × {lanes} thread(s) × target(s) = timing.rate_iops {total} for the worker, spaced evenly",
                if *iops { String::new() } else { format!(" ({g} bytes/ms ÷ {bs}-byte blocks)") }
            ));
            total
        });
        let write_pct = f.write_pct.unwrap_or(0);
        if let (Some((w, _)), true) = (&f.random_pct, (1..100).contains(&write_pct)) {
            if random_pct < 100 {
                self.notice(w, "DISKSPD keeps each sequential run to one direction (read or write); iofleet draws every I/O's direction on its own");
            }
        }
        let raw = RawProfile {
            name: Some("diskspd".into()),
            description: Some("Imported from a DISKSPD command line by iofleet's DISKSPD reader (docs/diskspd.md).".into()),
            fleet: RawFleet {
                workers: Some(1),
                disks_per_worker: Some(targets.max(1) as i64),
                disk_size: disk_size.map(|d| d.to_string()),
                threads_per_disk: Some(threads.min(i64::MAX as u64) as i64),
                qd: Some(qd.min(i64::MAX as u64) as i64),
                ..RawFleet::default()
            },
            timing: RawTiming {
                warmup: Some(format!("{}s", f.warmup.unwrap_or(DEFAULT_WARMUP))),
                duration: Some(format!("{}s", f.duration.unwrap_or(DEFAULT_DURATION))),
                rate_iops,
                arrival: rate_iops.map(|_| "uniform".into()),
                ..RawTiming::default()
            },
            data: RawData {
                pattern: f.pattern.map(String::from),
                write_through: f.write_through.then_some(true),
                ..RawData::default()
            },
            streams: vec![RawStream {
                name: Some("main".into()),
                bs: Some(bs.to_string()),
                read_pct: Some((100 - write_pct) as f64),
                random_pct: Some(random_pct as f64),
                align: align.map(|a| a.to_string()),
                working_set_pct,
                ..RawStream::default()
            }],
            origin: "diskspd command line".into(),
        };
        if write_pct > 0 && f.pattern.is_none() {
            self.notice("-w", "DISKSPD's default write data repeats the bytes 0 to 255; iofleet writes random data unless told otherwise (-Z for zeros, or [data] / --pattern)");
        }
        (raw, f.direct)
    }

    /// The `-T` that matches iofleet's even spacing: the working set ÷ threads, when
    /// the disk size is known.
    fn even_spacing(&self, f: &Flags, threads: u64) -> Option<u64> {
        let disk = f.create.as_ref().map(|(_, c)| c / 4096 * 4096)?;
        let ws = match &f.max_offset {
            Some((_, m)) if *m < disk => *m,
            _ => disk,
        };
        Some(ws / threads)
    }
}

/// The DISKSPD flag a profile key comes from, to name beside a profile error.
pub fn flag_of_key(key: &str) -> Option<&'static str> {
    let last = key.rsplit('.').next().unwrap_or(key);
    Some(match last {
        "workers" | "disks_per_worker" => "the targets",
        "threads_per_disk" => "-t or -F",
        "qd" => "-o",
        "disk_size" => "-c",
        "warmup" => "-W",
        // The 1 s reporting interval must fit in the measured time.
        "duration" | "interval" => "-d",
        "rate_iops" => "-g",
        "bs" => "-b",
        "read_pct" => "-w",
        "random_pct" => "-r, -rs or -s",
        "align" => "-r",
        "working_set_pct" => "-f or -B",
        "pattern" => "-Z",
        "write_through" => "-Sw or -Sh",
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
