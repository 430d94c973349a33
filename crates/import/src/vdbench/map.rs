//! vdbench definitions → iofleet raw profiles, one per step: every `rd` is a step, and
//! an `rd` with a list of `iorate`s or `for...` loops is one step per combination.
//!
//! A step is one worker whose disks are the `sd`s its `wd`s use (in `sd` order), each
//! driven by the `sd`'s `threads` (or the `rd`'s) at one I/O outstanding per thread, as
//! vdbench's threads are its outstanding I/Os per `sd`. Each `wd` is a stream on its
//! `sd`s: `xfersize` → `bs`, `rdpct` → `read_pct`, `seekpct` → `random_pct`, `range` →
//! `working_set_pct`, `skew` → `weight`. The `rd`'s `iorate` (the total of the run, so
//! of the one worker) → `timing.rate_iops`, `elapsed`/`warmup`/`interval` → timing.
//! `default` definitions set what the definitions after them leave out. Every parameter
//! is mapped, accepted with a notice (it does not change the I/O), or a [`Problem`] with
//! its file and line. Values are checked by `validate` afterwards, as for any profile.

use std::collections::BTreeSet;

use iofleet_profile::raw::{RawData, RawDisks, RawFleet, RawProfile, RawStream, RawTiming};

use super::parse::{Definition, Kind, Param, ParamFile};
use super::{Problem, VdbenchError};
use crate::fio::Location;

/// vdbench's defaults (its user guide): 8 threads per sd, 4k transfers, reads only,
/// random seeks, 30 s elapsed, 1 s intervals, no warm-up beyond the first interval.
const DEFAULT_THREADS: i64 = 8;
const DEFAULT_XFERSIZE: u64 = 4096;
const DEFAULT_ELAPSED: &str = "30";
const DEFAULT_INTERVAL: &str = "1";
/// The most steps one parameter file may make (its loops multiply).
pub const MAX_STEPS: usize = 1024;

/// One step: an `rd` with one value of each of its loops.
#[derive(Debug, Clone, PartialEq)]
pub struct VdbenchStep {
    /// The `rd`'s name, with the loop values when it has several steps
    /// (`run1/xfersize=8k,rdpct=50`).
    pub name: String,
    /// The `rd`'s name.
    pub rd: String,
    /// Where the `rd` is written.
    pub at: Location,
    pub raw: RawProfile,
}

/// A mapped parameter file: its steps in order and the mapping notices.
#[derive(Debug, Clone, PartialEq)]
pub struct VdbenchImport {
    pub steps: Vec<VdbenchStep>,
    /// Whether the `sd`s ask for O_DIRECT (`openflags=o_direct` or `directio`); vdbench
    /// goes through the OS cache otherwise.
    pub direct: bool,
    /// The `lun`s as written, in disk order (iofleet makes its own disks).
    pub luns: Vec<String>,
    pub notices: Vec<String>,
}

/// General parameters (before the first definition) that do not change the I/O.
const GENERAL_NOTICED: &[(&str, &str)] = &[
    ("debug", "vdbench's own diagnostics"),
    ("data_errors", "how many data-validation errors vdbench tolerates; iofleet stops a disk at its first I/O error and reports it"),
    ("messagescan", "vdbench's scan of the system log"),
    ("report", "vdbench's report files; iofleet's output is --output-format/--json"),
    ("histogram", "vdbench's histogram buckets; iofleet keeps full latency histograms"),
    ("monitor", "vdbench's external stop file"),
    ("create_anchors", "file-system anchors: not used by raw (sd) workloads"),
];

/// Parameters anywhere that do not change the I/O.
const NOTICED: &[(&str, &str)] = &[
    (
        "host",
        "hosts: iofleet runs the fleet where --hosts (or this host) says",
    ),
    (
        "hd",
        "hosts: iofleet runs the fleet where --hosts (or this host) says",
    ),
    (
        "pause",
        "sleep between runs: iofleet runs the steps one after another",
    ),
    (
        "hitarea",
        "the area read and write hits go to, used only by rhpct/whpct (not set here)",
    ),
];

struct Mapper {
    problems: Vec<Problem>,
    notices: Vec<String>,
    seen: BTreeSet<(usize, String)>,
}

impl Mapper {
    fn problem(&mut self, p: &Param, message: impl Into<String>) {
        self.problem_at(&p.at, &p.key, message);
    }

    fn problem_at(&mut self, at: &Location, key: &str, message: impl Into<String>) {
        let message = message.into();
        if self.seen.insert((at.line, format!("p{key}{message}"))) {
            self.problems.push(Problem {
                at: at.clone(),
                parameter: key.to_string(),
                message,
            });
        }
    }

    fn notice(&mut self, at: &Location, text: impl Into<String>) {
        let text = text.into();
        if self.seen.insert((at.line, format!("n{text}"))) {
            self.notices.push(format!("vdbench {at}: {text}"));
        }
    }
}

/// A vdbench size: a number with an optional `k`, `m`, `g` or `t` (powers of 1024).
pub(crate) fn size(text: &str) -> Result<u64, String> {
    let t = text.to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let mult: u64 = match suffix {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => {
            return Err(format!(
                "'{text}' is not a size (bytes, or with k, m, g or t: 4k, 1g)"
            ))
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (bytes, or with k, m, g or t: 4k, 1g)"))?;
    let bytes = n * mult as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 || bytes.fract() != 0.0 {
        return Err(format!("'{text}' is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

/// A percentage 0..=100 (decimals allowed).
fn percent(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("'{text}' is not a percentage 0 to 100")),
    }
}

/// A vdbench time: seconds, or with `s`, `m` or `h`; as iofleet's duration text.
fn time(text: &str) -> Result<String, String> {
    let t = text.to_ascii_lowercase();
    let (num, unit) = match t.strip_suffix(['s', 'm', 'h']) {
        Some(n) => (n, &t[n.len()..]),
        None => (t.as_str(), "s"),
    };
    match num.parse::<u64>() {
        Ok(n) => Ok(format!("{n}{unit}")),
        Err(_) => Err(format!(
            "'{text}' is not a time (whole seconds, or with s, m or h)"
        )),
    }
}

/// `seekpct`: a percentage, `seq`/`sequential` (0), `random` (100) or `eof`
/// (sequential; vdbench ends the run at the end of the lun).
fn seekpct(text: &str) -> Result<(f64, bool), String> {
    match text.to_ascii_lowercase().as_str() {
        "seq" | "sequential" => Ok((0.0, false)),
        "random" | "rand" => Ok((100.0, false)),
        "eof" | "-1" => Ok((0.0, true)),
        t => percent(t)
            .map(|p| (p, false))
            .map_err(|_| format!("'{text}' is not a seekpct (0 to 100, seq, random or eof)")),
    }
}

/// `xfersize`: one size, or pairs of size and percent as iofleet's block-size list
/// (`4096:50,8192:50`).
fn xfersize(p: &Param, values: &[String]) -> Result<String, String> {
    match values {
        [one] => size(one).map(|b| b.to_string()),
        [_, _, _] => Err(format!(
            "{}: (min,max,align) ranges are not supported; give sizes with percentages, e.g. (4k,50,8k,50)",
            p.text()
        )),
        pairs if pairs.len() % 2 == 0 => {
            let mut out = Vec::new();
            let mut sum = 0.0;
            for pair in pairs.chunks(2) {
                let b = size(&pair[0])?;
                let pct = percent(&pair[1])?;
                if pct.fract() != 0.0 || pct == 0.0 {
                    return Err(format!(
                        "'{}': iofleet's block-size weights are whole numbers above 0",
                        pair[1]
                    ));
                }
                sum += pct;
                out.push(format!("{b}:{pct}"));
            }
            if (sum - 100.0).abs() > 1e-9 {
                return Err(format!("the percentages add up to {sum}, not 100"));
            }
            Ok(out.join(","))
        }
        _ => Err(format!(
            "{}: expected a size or pairs of size and percent, e.g. (4k,50,8k,50)",
            p.text()
        )),
    }
}

/// `range=(start,end)` in percent of the lun: the end, when the start is 0.
fn range(p: &Param) -> Result<f64, String> {
    let (start, end) = match p.values.as_slice() {
        [s, e] => (s, e),
        _ => {
            return Err(format!(
                "{}: expected (start,end) in percent, e.g. (0,10)",
                p.text()
            ))
        }
    };
    let start = percent(start.trim_end_matches('%'))?;
    let end = percent(end.trim_end_matches('%'))?;
    if start != 0.0 {
        return Err(format!("a range starting at {start}%: iofleet addresses each disk from its start (its working set is the first working_set_pct percent); give (0,{})", end - start));
    }
    if end <= 0.0 {
        return Err("the range must end above 0%".into());
    }
    Ok(end)
}

/// Names matched by a pattern list: `all`, exact names, and `*` wildcards (`sd*`).
fn matching<'a>(patterns: &[String], names: &[&'a str]) -> Result<Vec<&'a str>, String> {
    let mut out: Vec<&str> = Vec::new();
    for p in patterns {
        let hits: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| p.eq_ignore_ascii_case("all") || wildcard(p, n))
            .collect();
        if hits.is_empty() {
            return Err(format!(
                "'{p}' matches no definition (defined: {})",
                names.join(", ")
            ));
        }
        for h in hits {
            if !out.contains(&h) {
                out.push(h);
            }
        }
    }
    Ok(out)
}

/// `*` matches any run of characters.
fn wildcard(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| wildcard(rest, &tail[i..]))
        }
    }
}

/// A definition's parameters with the `default`s before it first (own ones last, so
/// they win in `get`).
#[derive(Debug, Clone)]
struct Effective<'a> {
    def: &'a Definition,
    params: Vec<Param>,
}

fn effective(file: &ParamFile, kind: Kind) -> Vec<Effective<'_>> {
    let mut defaults: Vec<Param> = Vec::new();
    let mut out = Vec::new();
    for d in file.definitions.iter().filter(|d| d.kind == kind) {
        if d.name.eq_ignore_ascii_case("default") {
            defaults.extend(d.params.iter().cloned());
            continue;
        }
        let mut params = defaults.clone();
        params.extend(d.params.iter().cloned());
        out.push(Effective { def: d, params });
    }
    out
}

/// What an `sd` asks for.
#[derive(Debug, Clone, PartialEq)]
struct Storage {
    name: String,
    lun: Option<String>,
    size: Option<u64>,
    range: Option<f64>,
    threads: Option<i64>,
    at: Location,
}

/// What an `rd` asks for: its wds, loops (key without `for`, values), rates, timing
/// and threads.
struct Run<'w> {
    chosen: Vec<&'w Workload>,
    loops: Vec<(String, Vec<String>)>,
    rates: Vec<Option<f64>>,
    timing: RawTiming,
    threads: Option<i64>,
    /// The file's general data settings (compratio, dedupratio) and the sds' openflags.
    data: RawData,
}

/// Why a curve is refused.
const CURVE: &str = "not supported: curve points need the measured maximum first; run `iofleet find-max` or `iofleet sweep --rate` for a load curve";

/// What a `wd` asks for.
#[derive(Debug, Clone)]
struct Workload {
    name: String,
    sds: Vec<String>,
    bs: String,
    read_pct: f64,
    random_pct: f64,
    skew: Option<f64>,
    range: Option<f64>,
    at: Location,
}

/// Map a parsed parameter file to steps. Every problem is in one error.
pub fn import(file: &ParamFile) -> Result<VdbenchImport, VdbenchError> {
    let mut m = Mapper {
        problems: Vec::new(),
        notices: Vec::new(),
        seen: BTreeSet::new(),
    };
    let mut data = m.general(file);
    for d in &file.definitions {
        match d.kind {
            Kind::Host => m.notice(&d.at, format!("{}={}: hosts: iofleet runs the fleet where --hosts (or this host) says", d.keyword, d.name)),
            Kind::Other => m.problem_at(&d.at, &d.keyword, "file-system workloads (fsd, fwd) and replay groups (rg) are not read; iofleet's disks are files or devices driven as sd luns"),
            _ => {}
        }
    }
    let (sds, direct, write_through) = m.storage(file);
    let wds = m.workloads(file, &sds);
    if write_through {
        data.write_through = Some(true);
    }
    let steps = m.runs(file, &sds, &wds, &data);
    if !m.problems.is_empty() {
        return Err(VdbenchError::Unsupported(m.problems));
    }
    if steps.is_empty() {
        return Err(VdbenchError::NoRuns);
    }
    let luns = sds.iter().filter_map(|s| s.lun.clone()).collect();
    Ok(VdbenchImport {
        steps,
        direct,
        luns,
        notices: m.notices,
    })
}

impl Mapper {
    /// General parameters: dedupe and compression, and those that change nothing.
    fn general(&mut self, file: &ParamFile) -> RawData {
        let mut data = RawData::default();
        for p in &file.general {
            let ratio = |m: &mut Self| match p.values.as_slice() {
                [v] => match v.parse::<f64>() {
                    Ok(r) if r >= 1.0 => Some(r),
                    _ => {
                        m.problem(p, format!("'{v}' is not a ratio of at least 1"));
                        None
                    }
                },
                _ => {
                    m.problem(p, "expected one ratio");
                    None
                }
            };
            match p.key.as_str() {
                "compratio" => data.compress_ratio = ratio(self),
                "dedupratio" => data.dedupe_ratio = ratio(self),
                "dedupunit" => match size(&p.text()) {
                    Ok(b) => data.dedupe_unit = Some(b.to_string()),
                    Err(e) => self.problem(p, e),
                },
                k => match GENERAL_NOTICED.iter().find(|(n, _)| *n == k) {
                    Some((_, why)) => {
                        let at = p.at.clone();
                        self.notice(&at, format!("{k} accepted: {why}"));
                    }
                    None => self.problem(p, "not supported: unknown or unsupported general parameter (docs/vdbench.md lists those iofleet reads)"),
                },
            }
        }
        data
    }

    /// `openflags` values: (direct, write-through).
    fn openflags(&mut self, p: &Param) -> (bool, bool) {
        let (mut direct, mut wt) = (false, false);
        for v in &p.values {
            match v.to_ascii_lowercase().as_str() {
                "o_direct" | "directio" => direct = true,
                "o_dsync" => wt = true,
                "o_sync" => {
                    wt = true;
                    let at = p.at.clone();
                    self.notice(&at, "openflags=o_sync: iofleet writes through with O_DSYNC (data.write_through); file metadata is not synced with each write");
                }
                "o_rsync" => {
                    let at = p.at.clone();
                    self.notice(&at, "openflags=o_rsync accepted: it changes only reads of data being written, which iofleet never overlaps");
                }
                other => self.problem(
                    p,
                    format!("'{other}' is not supported (o_direct, directio, o_dsync, o_sync)"),
                ),
            }
        }
        (direct, wt)
    }

    /// The `sd`s, and whether they ask for direct I/O and write-through.
    fn storage(&mut self, file: &ParamFile) -> (Vec<Storage>, bool, bool) {
        let (mut out, mut direct, mut wt) = (Vec::new(), false, false);
        for e in effective(file, Kind::Storage) {
            let mut s = Storage {
                name: e.def.name.clone(),
                lun: None,
                size: None,
                range: None,
                threads: None,
                at: e.def.at.clone(),
            };
            for p in &e.params {
                match p.key.as_str() {
                    "lun" => s.lun = Some(p.text()),
                    "size" => match size(&p.text()) {
                        Ok(b) => s.size = Some(b),
                        Err(e) => self.problem(p, e),
                    },
                    "range" => match range(p) {
                        Ok(r) => s.range = Some(r),
                        Err(e) => self.problem(p, e),
                    },
                    "threads" | "thread" => match p.text().parse::<i64>() {
                        Ok(t) if t >= 1 => s.threads = Some(t),
                        _ => self.problem(p, "expected a whole number of threads, at least 1"),
                    },
                    "openflags" => {
                        let (d, w) = self.openflags(p);
                        direct |= d;
                        wt |= w;
                    }
                    k => self.common(p, k),
                }
            }
            out.push(s);
        }
        (out, direct, wt)
    }

    /// A parameter every definition may have that changes nothing, else a problem.
    fn common(&mut self, p: &Param, key: &str) {
        if key == "rhpct" || key == "whpct" {
            if p.text().parse::<f64>() == Ok(0.0) {
                return;
            }
            return self.problem(p, "not supported: read/write cache hits aimed at a hit area; iofleet's offsets follow random_pct, working_set_pct and hot_bands");
        }
        match NOTICED.iter().find(|(n, _)| *n == key) {
            // Once per parameter: HCIBench writes `hitarea=0` on every sd line.
            Some((_, why)) => {
                if self.seen.insert((0, format!("k{key}"))) {
                    let at = p.at.clone();
                    self.notice(&at, format!("{key} accepted (here and wherever else it is written): {why}"));
                }
            }
            None => self.problem(p, "not supported: unknown or unsupported parameter here (docs/vdbench.md lists those iofleet reads)"),
        }
    }

    /// The `wd`s.
    fn workloads(&mut self, file: &ParamFile, sds: &[Storage]) -> Vec<Workload> {
        let names: Vec<&str> = sds.iter().map(|s| s.name.as_str()).collect();
        let mut out = Vec::new();
        for e in effective(file, Kind::Workload) {
            let mut w = Workload {
                name: e.def.name.clone(),
                sds: Vec::new(),
                bs: DEFAULT_XFERSIZE.to_string(),
                read_pct: 100.0,
                random_pct: 100.0,
                skew: None,
                range: None,
                at: e.def.at.clone(),
            };
            let mut has_sd = false;
            for p in &e.params {
                match p.key.as_str() {
                    "sd" => {
                        has_sd = true;
                        match matching(&p.values, &names) {
                            Ok(v) => w.sds = v.into_iter().map(String::from).collect(),
                            Err(e) => self.problem(p, e),
                        }
                    }
                    "xfersize" => match xfersize(p, &p.values) {
                        Ok(b) => w.bs = b,
                        Err(e) => self.problem(p, e),
                    },
                    "rdpct" => match percent(&p.text()) {
                        Ok(r) => w.read_pct = r,
                        Err(e) => self.problem(p, e),
                    },
                    "seekpct" => match seekpct(&p.text()) {
                        Ok((r, eof)) => {
                            w.random_pct = r;
                            if eof {
                                let at = p.at.clone();
                                self.notice(&at, "seekpct=eof: sequential; vdbench ends the run at the end of the lun, iofleet wraps at the end of the working set and runs for elapsed");
                            }
                        }
                        Err(e) => self.problem(p, e),
                    },
                    "skew" => match percent(&p.text()) {
                        Ok(s) if s > 0.0 => w.skew = Some(s),
                        _ => self.problem(p, "expected a percentage above 0"),
                    },
                    "range" => match range(p) {
                        Ok(r) => w.range = Some(r),
                        Err(e) => self.problem(p, e),
                    },
                    "openflags" => {
                        let (d, wt) = self.openflags(p);
                        if d || wt {
                            self.problem(p, "openflags on a wd: give them on the sd (iofleet opens every disk one way)");
                        }
                    }
                    "iorate" => self.problem(p, "not supported: a wd's own rate; give iorate on the rd (the total of the run)"),
                    k => self.common(p, k),
                }
            }
            if !has_sd {
                if names.is_empty() {
                    self.problem_at(&w.at, "sd", "the wd names no sd, and none is defined");
                }
                w.sds = names.iter().map(|s| s.to_string()).collect();
            }
            out.push(w);
        }
        out
    }

    /// The `rd`s, each one step per combination of its loops.
    fn runs(
        &mut self,
        file: &ParamFile,
        sds: &[Storage],
        wds: &[Workload],
        data: &RawData,
    ) -> Vec<VdbenchStep> {
        let mut steps = Vec::new();
        for e in effective(file, Kind::Run) {
            let before = self.problems.len();
            let mut run = self.run_params(&e, wds);
            run.data = data.clone();
            if run.chosen.is_empty() {
                self.problem_at(&e.def.at, "wd", "the rd runs no wd (none is defined)");
            }
            if self.problems.len() > before {
                continue;
            }
            let count = run
                .loops
                .iter()
                .fold(run.rates.len(), |n, (_, v)| n.saturating_mul(v.len()));
            if count > MAX_STEPS {
                self.problem_at(&e.def.at, "rd", format!("its loops make {count} steps; iofleet runs at most {MAX_STEPS} from one file"));
                continue;
            }
            let combos = combinations(&run.loops);
            for combo in &combos {
                for rate in &run.rates {
                    let mut label: Vec<String> =
                        combo.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    if run.rates.len() > 1 {
                        label.push(format!(
                            "iorate={}",
                            rate.map_or("max".into(), |r| r.to_string())
                        ));
                    }
                    let name = if count > 1 {
                        format!("{}/{}", e.def.name, label.join(","))
                    } else {
                        e.def.name.clone()
                    };
                    let at = &e.def.at;
                    if let Some(raw) = self.step(at, &name, sds, &run, combo, *rate) {
                        steps.push(VdbenchStep {
                            name,
                            rd: e.def.name.clone(),
                            at: at.clone(),
                            raw,
                        });
                    }
                }
            }
        }
        steps
    }

    /// An `rd`'s parameters.
    fn run_params<'w>(&mut self, e: &Effective<'_>, wds: &'w [Workload]) -> Run<'w> {
        let wd_names: Vec<&str> = wds.iter().map(|w| w.name.as_str()).collect();
        let mut run = Run {
            chosen: wds.iter().collect(),
            loops: Vec::new(),
            rates: vec![None],
            timing: RawTiming {
                duration: Some(format!("{DEFAULT_ELAPSED}s")),
                interval: Some(format!("{DEFAULT_INTERVAL}s")),
                ..RawTiming::default()
            },
            threads: None,
            data: RawData::default(),
        };
        for p in &e.params {
            let t = |m: &mut Self| match time(&p.text()) {
                Ok(t) => Some(t),
                Err(e) => {
                    m.problem(p, e);
                    None
                }
            };
            match p.key.as_str() {
                "wd" => match matching(&p.values, &wd_names) {
                    Ok(v) => {
                        run.chosen = wds
                            .iter()
                            .filter(|w| v.contains(&w.name.as_str()))
                            .collect()
                    }
                    Err(e) => self.problem(p, e),
                },
                "elapsed" => run.timing.duration = t(self),
                "warmup" => run.timing.warmup = t(self),
                "interval" => run.timing.interval = t(self),
                "iorate" => run.rates = self.iorate(p),
                "threads" => match p.text().parse::<i64>() {
                    Ok(n) if n >= 1 => run.threads = Some(n),
                    _ => self.problem(p, "expected a whole number of threads, at least 1"),
                },
                "distribution" => match p.text().to_ascii_lowercase().as_str() {
                    "exponential" => run.timing.arrival = Some("poisson".into()),
                    "uniform" | "deterministic" => run.timing.arrival = Some("uniform".into()),
                    v => self.problem(p, format!("'{v}' is not a distribution (exponential, uniform, deterministic)")),
                },
                "format" => match p.text().to_ascii_lowercase().as_str() {
                    "no" => {}
                    "yes" => {
                        let at = p.at.clone();
                        self.notice(&at, "format=yes accepted: iofleet fills its disks before the run (timing.prepare)");
                    }
                    _ => self.problem(p, "not supported: only format=yes or no (iofleet fills its disks before the run)"),
                },
                "forxfersize" | "forrdpct" | "forseekpct" | "forthreads" => {
                    let key = p.key.trim_start_matches("for").to_string();
                    run.loops.push((key, p.values.clone()));
                }
                "maxdata" => self.problem(p, "not supported: ending a run after an amount of data; iofleet runs for elapsed (--duration)"),
                "curve" => self.problem(p, CURVE),
                "openflags" => {
                    let (d, wt) = self.openflags(p);
                    if d || wt {
                        self.problem(p, "openflags on an rd: give them on the sd (iofleet opens every disk one way)");
                    }
                }
                k if k.starts_with("for") => self.problem(p, "not supported: iofleet reads the loops forxfersize, forrdpct, forseekpct and forthreads"),
                k => self.common(p, k),
            }
        }
        run
    }

    /// `iorate`: `max`, a rate, or a list of them (one step each).
    fn iorate(&mut self, p: &Param) -> Vec<Option<f64>> {
        let mut out = Vec::new();
        for v in &p.values {
            match v.to_ascii_lowercase().as_str() {
                "max" => out.push(None),
                "curve" => self.problem(p, CURVE),
                t => match t.parse::<f64>() {
                    Ok(r) if r > 0.0 && r.is_finite() => out.push(Some(r)),
                    _ => self.problem(
                        p,
                        format!("'{v}' is not an I/O rate (max, or I/Os per second above 0)"),
                    ),
                },
            }
        }
        if out.is_empty() {
            out.push(None);
        }
        out
    }

    /// One step's profile.
    fn step(
        &mut self,
        at: &Location,
        name: &str,
        sds: &[Storage],
        run: &Run<'_>,
        combo: &[(String, String)],
        rate: Option<f64>,
    ) -> Option<RawProfile> {
        let wds = &run.chosen;
        // The disks: the sds the wds use, in sd order.
        let used: Vec<&Storage> = sds
            .iter()
            .filter(|s| wds.iter().any(|w| w.sds.contains(&s.name)))
            .collect();
        let first = used.first()?;
        for s in &used[1..] {
            for (what, same) in [
                ("size", s.size == first.size),
                ("threads", s.threads == first.threads),
                ("range", s.range == first.range),
            ] {
                if !same {
                    self.problem_at(&s.at, what, format!("differs from sd {}'s ({}); iofleet gives every disk of a worker the same {what}", first.name, first.at));
                }
            }
        }
        let looped = |key: &str| combo.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let threads = match looped("threads") {
            Some(t) => match t.parse::<i64>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    self.problem_at(
                        at,
                        "forthreads",
                        format!("'{t}' is not a whole number of threads, at least 1"),
                    );
                    return None;
                }
            },
            None => run.threads.or(first.threads).unwrap_or(DEFAULT_THREADS),
        };
        let weights = self.weights(at, wds);
        let mut streams = Vec::new();
        for (w, weight) in wds.iter().zip(weights) {
            streams.push(self.stream(at, w, &used, combo, weight)?);
        }
        if first.size.is_none() {
            self.notice(&first.at, "no size: vdbench would use the whole lun; iofleet makes its disks of fleet.disk_size (default 1g; set --disk-size)");
        }
        let mut timing = run.timing.clone();
        timing.rate_iops = rate;
        Some(RawProfile {
            name: Some(name.replace('/', "-").replace(['=', ','], "_")),
            description: Some(format!(
                "Imported from vdbench rd={name} of {} (line {}) by iofleet's vdbench reader (docs/vdbench.md).",
                at.file, at.line
            )),
            fleet: RawFleet {
                workers: Some(1),
                disks_per_worker: Some(used.len() as i64),
                disk_size: first.size.map(|b| b.to_string()),
                threads_per_disk: Some(threads),
                qd: Some(1),
                ..RawFleet::default()
            },
            timing,
            data: run.data.clone(),
            streams,
            origin: format!("{} rd={name}", at.file),
        })
    }

    /// Each wd's `stream.weight` from its skew: None when no wd has one; wds without a
    /// skew share what the others leave of 100%.
    fn weights(&mut self, at: &Location, wds: &[&Workload]) -> Vec<Option<i64>> {
        let skewed = wds.iter().any(|w| w.skew.is_some());
        if skewed && wds.iter().any(|w| w.sds != wds[0].sds) {
            self.problem_at(at, "skew", "skew between wds on different sds: iofleet weighs streams per disk; give the wds the same sds");
        }
        let given: f64 = wds.iter().filter_map(|w| w.skew).sum();
        let unskewed = wds.iter().filter(|w| w.skew.is_none()).count();
        if skewed && (given > 100.0 + 1e-9 || (unskewed == 0 && (given - 100.0).abs() > 1e-9)) {
            self.problem_at(
                at,
                "skew",
                format!("the wds' skews add up to {given}%, not 100%"),
            );
        }
        let rest = if unskewed > 0 {
            ((100.0 - given) / unskewed as f64).max(0.0)
        } else {
            0.0
        };
        wds.iter()
            .map(|w| skewed.then(|| (w.skew.unwrap_or(rest) * 100.0).round().max(1.0) as i64))
            .collect()
    }

    /// One wd's stream on the step's disks `used`, with the loop values of `combo`.
    fn stream(
        &mut self,
        at: &Location,
        w: &Workload,
        used: &[&Storage],
        combo: &[(String, String)],
        weight: Option<i64>,
    ) -> Option<RawStream> {
        let looped = |key: &str| combo.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let bs = match looped("xfersize") {
            Some(x) => match size(&x) {
                Ok(b) => b.to_string(),
                Err(e) => {
                    self.problem_at(at, "forxfersize", e);
                    return None;
                }
            },
            None => w.bs.clone(),
        };
        let read_pct = match looped("rdpct").map(|v| percent(&v)) {
            Some(Ok(r)) => r,
            Some(Err(e)) => {
                self.problem_at(at, "forrdpct", e);
                return None;
            }
            None => w.read_pct,
        };
        let random_pct = match looped("seekpct").map(|v| seekpct(&v)) {
            Some(Ok((r, _))) => r,
            Some(Err(e)) => {
                self.problem_at(at, "forseekpct", e);
                return None;
            }
            None => w.random_pct,
        };
        let sd_range = used.first().and_then(|s| s.range);
        let working_set_pct = match (w.range, sd_range) {
            (Some(a), Some(b)) if a < 100.0 && b < 100.0 => {
                self.problem_at(
                    &w.at,
                    "range",
                    "a range on both the wd and its sds: give one",
                );
                None
            }
            (Some(a), _) => Some(a),
            (None, b) => b,
        };
        let disks = (w.sds.len() < used.len()).then(|| {
            RawDisks::List(
                used.iter()
                    .enumerate()
                    .filter(|(_, s)| w.sds.contains(&s.name))
                    .map(|(i, _)| i as i64)
                    .collect(),
            )
        });
        Some(RawStream {
            name: Some(w.name.clone()),
            bs: Some(bs),
            read_pct: Some(read_pct),
            random_pct: Some(random_pct),
            weight,
            working_set_pct,
            disks,
            ..RawStream::default()
        })
    }
}

/// Every combination of the loops' values, the first loop outermost; one empty
/// combination without loops.
fn combinations(loops: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (key, values) in loops {
        out = out
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((key.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    out
}
