//! fio jobs → iofleet raw profiles, one per job section (one worker group each).
//!
//! A job's clones (`numjobs`) are the group's workers, `iodepth` its `fleet.qd`, one
//! thread per disk, one disk per worker unless `nrfiles` (or a `:`-separated `filename`)
//! says more. `rw`, `rwmixread`, `bs`, `bssplit`, `bsrange` and `percentage_random` make
//! the streams: one stream when reads and writes share block sizes and random share,
//! else a `read` and a `write` stream weighted by the mix. Every option is either mapped,
//! accepted because iofleet already behaves that way, turned into a notice, or reported
//! as a [`Problem`] with its file and line; options named in `ignore` are dropped with a
//! notice. Values are checked by `validate` afterwards, as for any profile.

use std::collections::BTreeSet;

use iofleet_profile::options::{int_range, MAX_BLOCK_SIZES};
use iofleet_profile::raw::{RawData, RawFleet, RawProfile, RawStream, RawTiming};
use iofleet_profile::{parse_duration, parse_hot_bands};

use super::parse::{known, FioJob, FioOption, Known, Location};
use super::size::fio_size;
use super::{FioError, Problem};

/// What a count option must be: a whole number in the range of the profile key it
/// becomes.
fn bound_text(key: &str) -> String {
    let range = int_range(key);
    format!(
        "expected a whole number in {}..={} (the range of {key})",
        range.start(),
        range.end()
    )
}

/// One job section as an iofleet worker group.
#[derive(Debug, Clone, PartialEq)]
pub struct FioGroup {
    /// The job's name (its section name, or its `name=` option).
    pub name: String,
    /// Its section name (what `--fio-job` selects).
    pub section: String,
    /// Where the job section starts.
    pub at: Location,
    pub raw: RawProfile,
    /// The iofleet engine the job's `ioengine` maps to (`io_uring`, `auto`, `psync`,
    /// `null`); None when the job does not set one.
    pub engine: Option<&'static str>,
    /// The job's `direct` (or inverted `buffered`), when set.
    pub direct: Option<bool>,
    /// Where the job's `stonewall` (or `wait_for_previous`) is written, when it makes
    /// the job wait for every job before it: the job starts a new phase. None on the
    /// first job (nothing to wait for) and on jobs that run with the ones before.
    pub stonewall: Option<Location>,
    /// The job's `directory`, when set: where fio places its files. A profile has no
    /// target, so the CLI decides what becomes of it (the run's target when `--target`
    /// is not given).
    pub directory: Option<FioDirectory>,
    /// Where the job's `verify` is written, when it turns verification on: a run on an
    /// engine that touches no storage is refused naming this line.
    pub verify: Option<Location>,
}

/// A job's `directory=`.
#[derive(Debug, Clone, PartialEq)]
pub struct FioDirectory {
    /// The value as written.
    pub value: String,
    /// The directories it names: fio separates several with `:`, and reads `\:` as a
    /// colon inside a name.
    pub paths: Vec<String>,
    pub at: Location,
}

/// The groups of a mapped job file split into phases, in order: a job with `stonewall`
/// starts a new phase; the jobs of a phase run at once.
pub fn phases(groups: &[FioGroup]) -> Vec<&[FioGroup]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, g) in groups.iter().enumerate() {
        if i > start && g.stonewall.is_some() {
            out.push(&groups[start..i]);
            start = i;
        }
    }
    if start < groups.len() {
        out.push(&groups[start..]);
    }
    out
}

/// A mapped job file: its groups, in file order, and the mapping notices.
#[derive(Debug, Clone, PartialEq)]
pub struct FioImport {
    pub groups: Vec<FioGroup>,
    pub notices: Vec<String>,
}

/// Map `jobs` to worker groups. `run_direct` is the run's direct-I/O setting (a notice
/// says when a job asks otherwise); `ignore` are option names to drop with a notice.
pub fn import(jobs: &[FioJob], run_direct: bool, ignore: &[String]) -> Result<FioImport, FioError> {
    let mut m = Mapper {
        problems: Vec::new(),
        notices: Vec::new(),
        seen: BTreeSet::new(),
    };
    let mut groups = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let job = m.drop_ignored(job, ignore);
        if let Some(g) = m.job(&job, i, run_direct) {
            groups.push(g);
        }
    }
    if !m.problems.is_empty() {
        return Err(FioError::Unsupported(m.problems));
    }
    for i in ignore {
        let used = jobs
            .iter()
            .any(|j| j.options.iter().any(|o| o.name.eq_ignore_ascii_case(i)));
        if !used {
            m.notices
                .push(format!("--fio-ignore {i}: the job file has no option {i}"));
        }
    }
    Ok(FioImport {
        groups,
        notices: m.notices,
    })
}

struct Mapper {
    problems: Vec<Problem>,
    notices: Vec<String>,
    /// (file, line, text) of problems and notices already given: a [global] option is
    /// copied into every job below it but reported once.
    seen: BTreeSet<(String, usize, String)>,
}

/// One direction's stream parameters.
#[derive(Debug, Clone, PartialEq)]
struct Direction {
    bs: String,
    random_pct: f64,
}

impl Mapper {
    fn problem(&mut self, o: &FioOption, message: impl Into<String>) {
        let message = message.into();
        if self
            .seen
            .insert((o.at.file.clone(), o.at.line, format!("p{message}")))
        {
            self.problems.push(Problem {
                at: o.at.clone(),
                option: o.shown_name().to_string(),
                message,
            });
        }
    }

    fn notice(&mut self, at: &Location, text: impl Into<String>) {
        let text = text.into();
        if self
            .seen
            .insert((at.file.clone(), at.line, format!("n{text}")))
        {
            self.notices.push(format!("fio {at}: {text}"));
        }
    }

    fn drop_ignored(&mut self, job: &FioJob, ignore: &[String]) -> FioJob {
        let mut kept = job.clone();
        kept.options.retain(|o| {
            let drop = ignore.iter().any(|i| i.eq_ignore_ascii_case(&o.name));
            if drop {
                let at = o.at.clone();
                let text = format!("option {} ignored (--fio-ignore {})", o.name, o.name);
                if self
                    .seen
                    .insert((at.file.clone(), at.line, format!("n{text}")))
                {
                    self.notices.push(format!("fio {at}: {text}"));
                }
            }
            !drop
        });
        kept
    }

    /// One job → one group; None when a problem was recorded.
    fn job(&mut self, job: &FioJob, index: usize, run_direct: bool) -> Option<FioGroup> {
        let before = self.problems.len();
        self.check_names(job);
        let kb = self.kb_base(job);
        // Bounded as the profile key the option becomes: one bound per quantity, named
        // here at the option's own line.
        let int = |m: &mut Self, names: &[&str], key: &str| -> Option<i64> {
            let o = job.get(names)?;
            m.whole_in(o, key)
        };
        let workers = int(self, &["numjobs"], "fleet.workers");
        let qd = int(self, &["iodepth"], "fleet.qd");
        let disks = self.disks(job);
        let (read_pct, random) = self.rw(job, kb);
        let dirs = self.directions(job, kb, random);
        let mut fleet = RawFleet {
            workers,
            qd,
            threads_per_disk: Some(1),
            disks_per_worker: Some(disks),
            ..RawFleet::default()
        };
        let working_set_pct = self.size(job, kb, disks, &mut fleet);
        let timing = self.timing(job, kb, &dirs);
        let (zipf, hot_bands) = self.distribution(job, kb, disks);
        let align = self.blockalign(job, kb);
        let direct = self.direct(job, run_direct);
        let engine = self.engine(job);
        let stonewall = self.stonewall(job, index);
        let directory = self.directory(job);
        let write_through = self.sync(job);
        let verify = timing
            .verify
            .and_then(|_| job.get(&["verify"]))
            .map(|o| o.at.clone());
        if self.problems.len() > before {
            return None;
        }
        let (read, write) = dirs?;
        let stream = |name: &str, d: &Direction, read_pct: f64, weight: Option<i64>| RawStream {
            name: Some(name.into()),
            bs: Some(d.bs.clone()),
            read_pct: Some(read_pct),
            random_pct: Some(d.random_pct),
            weight,
            zipf,
            hot_bands: hot_bands.clone(),
            align: align.clone(),
            working_set_pct,
            ..RawStream::default()
        };
        let streams = if read_pct >= 100.0 {
            vec![stream("main", &read, 100.0, None)]
        } else if read_pct <= 0.0 {
            vec![stream("main", &write, 0.0, None)]
        } else if read == write {
            vec![stream("main", &read, read_pct, None)]
        } else {
            vec![
                stream("read", &read, 100.0, Some(read_pct.round() as i64)),
                stream(
                    "write",
                    &write,
                    0.0,
                    Some((100.0 - read_pct).round() as i64),
                ),
            ]
        };
        let name = job
            .get(&["name"])
            .and_then(|o| o.value.clone())
            .unwrap_or_else(|| job.name.clone());
        let mut description = format!(
            "Imported from fio job [{}] of {} (line {}) by iofleet's fio reader (docs/fio.md).",
            job.name, job.at.file, job.at.line
        );
        if let Some(d) = job.get(&["description"]).and_then(|o| o.value.as_deref()) {
            description = format!("{} {description}", d.trim_matches('"'));
        }
        Some(FioGroup {
            name: name.clone(),
            section: job.name.clone(),
            at: job.at.clone(),
            raw: RawProfile {
                name: Some(name),
                description: Some(description),
                fleet,
                timing,
                streams,
                data: RawData {
                    write_through,
                    ..RawData::default()
                },
                origin: format!("{} [{}]", job.at.file, job.name),
            },
            engine,
            direct,
            stonewall,
            directory,
            verify,
        })
    }

    /// `directory`: the directories it names; one that names none is a problem.
    fn directory(&mut self, job: &FioJob) -> Option<FioDirectory> {
        let o = job.get(&["directory"])?;
        let value = o.value.clone().unwrap_or_default();
        let (mut paths, mut name) = (Vec::new(), String::new());
        let mut chars = value.trim().chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&':') => name.push(chars.next().unwrap_or(':')),
                ':' => paths.push(std::mem::take(&mut name)),
                c => name.push(c),
            }
        }
        paths.push(name);
        paths.retain(|p| !p.trim().is_empty());
        if paths.is_empty() {
            self.problem(o, "expected a directory (or several, separated by ':')");
            return None;
        }
        Some(FioDirectory {
            value,
            paths,
            at: o.at.clone(),
        })
    }

    /// Every option name is mapped, accepted or reported.
    fn check_names(&mut self, job: &FioJob) {
        for o in &job.options {
            match known(&o.name) {
                Some(Known::Mapped | Known::Accepted) => {}
                Some(Known::Noticed(why)) => {
                    let at = o.at.clone();
                    self.notice(&at, format!("{} accepted: {why}", o.name));
                }
                Some(Known::Unsupported(why)) => self.problem(o, format!("not supported: {why}")),
                None => self.problem(
                    o,
                    "unknown to iofleet's fio reader (docs/fio.md lists the options it maps)",
                ),
            }
        }
        if let Some(o) = job.get(&["randrepeat"]) {
            if !bool_of(o).unwrap_or(true) {
                let at = o.at.clone();
                self.notice(&at, "randrepeat=0: iofleet repeats the I/O sequence of its --seed; give a different --seed per run instead");
            }
        }
        if let Some(o) = job.get(&["randseed"]) {
            let at = o.at.clone();
            let v = o.value.clone().unwrap_or_default();
            self.notice(&at, format!("randseed={v}: iofleet's seed is the run flag --seed (pass --seed {v} to fix it)"));
        }
    }

    fn kb_base(&mut self, job: &FioJob) -> u64 {
        match job.get(&["kb_base"]) {
            None => 1024,
            Some(o) => match o.value.as_deref().map(str::trim) {
                Some("1000") => 1000,
                Some("1024") => 1024,
                _ => {
                    self.problem(o, "expected 1000 or 1024");
                    1024
                }
            },
        }
    }

    fn disks(&mut self, job: &FioJob) -> i64 {
        let named = job.get(&["filename"]).map(|o| {
            let n = o.value.as_deref().unwrap_or("").split(':').filter(|s| !s.is_empty()).count();
            let at = o.at.clone();
            self.notice(&at, format!(
                "filename={}: iofleet makes its own disks under --target (one set per worker); the named file(s) are not used",
                o.value.as_deref().unwrap_or("")
            ));
            n.max(1) as i64
        });
        match job.get(&["nrfiles"]) {
            Some(o) => self.whole_in(o, "fleet.disks_per_worker").unwrap_or(1),
            None => named.unwrap_or(1),
        }
    }

    /// Option `o`'s value as a whole number in the range of profile key `key`; a
    /// problem at the option's line otherwise.
    fn whole_in(&mut self, o: &FioOption, key: &str) -> Option<i64> {
        let range = int_range(key);
        match o.value.as_deref().unwrap_or("").trim().parse::<u64>() {
            Ok(n) if range.contains(&n) => Some(n as i64),
            _ => {
                self.problem(o, bound_text(key));
                None
            }
        }
    }

    /// (read %, random) from rw/readwrite and rwmixread/rwmixwrite.
    fn rw(&mut self, job: &FioJob, kb: u64) -> (f64, bool) {
        let (mixed, read, random) = match job.get(&["rw", "readwrite"]) {
            None => (false, true, false),
            Some(o) => {
                let v = o.value.clone().unwrap_or_default();
                let (kind, suffix) = match v.split_once(':') {
                    Some((k, s)) => (k.trim().to_string(), Some(s.to_string())),
                    None => (v.trim().to_string(), None),
                };
                if let Some(s) = suffix {
                    self.rw_modifier(o, &v, kind.starts_with("rand"), s.trim(), kb);
                }
                match kind.as_str() {
                    "read" => (false, true, false),
                    "write" => (false, false, false),
                    "randread" => (false, true, true),
                    "randwrite" => (false, false, true),
                    "rw" | "readwrite" => (true, true, false),
                    "randrw" => (true, true, true),
                    other => {
                        self.problem(o, format!("rw={other} is not supported (iofleet issues reads and writes only: read, write, randread, randwrite, rw, randrw)"));
                        (false, true, false)
                    }
                }
            }
        };
        let mix = job.get(&["rwmixread", "rwmixwrite"]);
        let read_pct = match (mixed, mix) {
            (true, Some(o)) => match o.value.as_deref().map(|v| v.trim().parse::<f64>()) {
                Some(Ok(p)) if (0.0..=100.0).contains(&p) => {
                    if o.name == "rwmixread" {
                        p
                    } else {
                        100.0 - p
                    }
                }
                _ => {
                    self.problem(o, "expected a percentage 0 to 100");
                    50.0
                }
            },
            (true, None) => 50.0,
            (false, Some(o)) => {
                let at = o.at.clone();
                self.notice(
                    &at,
                    format!("{} has no effect: the job's rw is not a mix", o.name),
                );
                if read {
                    100.0
                } else {
                    0.0
                }
            }
            (false, None) => {
                if read {
                    100.0
                } else {
                    0.0
                }
            }
        };
        (read_pct, random)
    }

    /// The `:N` after `rw`. fio reads it per kind: on a random job, a new random offset
    /// every N I/Os (sequential in between); on a sequential one, N bytes skipped after
    /// each I/O. `:1` (random) and `:0` (sequential) are fio's defaults and iofleet's
    /// behaviour; any other N is refused, since iofleet's sequential cursor has no holes
    /// and it draws a new random offset for every I/O.
    fn rw_modifier(&mut self, o: &FioOption, v: &str, random: bool, n: &str, kb: u64) {
        if random {
            match n.parse::<u64>() {
                Ok(1) => {}
                Ok(0) | Err(_) => self.problem(
                    o,
                    format!("rw={v}: ':{n}' is not a count of I/Os of 1 or more"),
                ),
                Ok(_) => self.problem(o, format!(
                    "the ':{n}' offset modifier of rw={v} (a new random offset every {n} I/Os, sequential in between) is not supported: iofleet draws a new random offset for every I/O"
                )),
            }
        } else {
            match fio_size(n, kb) {
                Ok(0) => {}
                Ok(_) => self.problem(o, format!(
                    "the ':{n}' offset modifier of rw={v} ({n} skipped after each I/O) is not supported: iofleet's sequential cursor has no holes"
                )),
                Err(e) => self.problem(o, format!("rw={v}: {e}")),
            }
        }
    }

    /// Block sizes and random share of reads and of writes; None after a problem.
    fn directions(
        &mut self,
        job: &FioJob,
        kb: u64,
        random: bool,
    ) -> Option<(Direction, Direction)> {
        let bs = self.per_dir_sizes(job, kb)?;
        let random_pct = match (random, job.get(&["percentage_random"])) {
            (false, Some(o)) => {
                let at = o.at.clone();
                self.notice(
                    &at,
                    "percentage_random has no effect: the job's rw is sequential",
                );
                (0.0, 0.0)
            }
            (false, None) => (0.0, 0.0),
            (true, None) => (100.0, 100.0),
            (true, Some(o)) => {
                let parts = split_dirs(o.value.as_deref().unwrap_or(""));
                let pct = |s: &Option<String>| s.as_deref().map(|v| v.trim().parse::<f64>());
                let r = match pct(&parts.0) {
                    Some(Ok(p)) if (0.0..=100.0).contains(&p) => p,
                    None => 100.0,
                    _ => {
                        self.problem(o, "expected a percentage 0 to 100 (or read,write)");
                        return None;
                    }
                };
                let w = match pct(&parts.1) {
                    Some(Ok(p)) if (0.0..=100.0).contains(&p) => p,
                    None => r,
                    _ => {
                        self.problem(o, "expected a percentage 0 to 100 (or read,write)");
                        return None;
                    }
                };
                (r, w)
            }
        };
        Some((
            Direction {
                bs: bs.0,
                random_pct: random_pct.0,
            },
            Direction {
                bs: bs.1,
                random_pct: random_pct.1,
            },
        ))
    }

    /// The read and write block sizes as iofleet block-size text (`4096` or
    /// `4096:10,65536:90`), from bssplit, else bsrange, else bs (default 4k).
    fn per_dir_sizes(&mut self, job: &FioJob, kb: u64) -> Option<(String, String)> {
        // fio: bssplit wins over bsrange, which wins over bs.
        if let Some(o) = job.get(&["bssplit"]) {
            return self.both_dirs(o, |s| {
                bssplit(s.ok_or("bssplit needs a value such as 4k/10:64k/90")?, kb)
            });
        }
        if let Some(o) = job.get(&["bsrange", "blocksize_range"]) {
            return self.both_dirs(o, |s| {
                bsrange(s.ok_or("bsrange needs a value such as 4k-64k")?, kb)
            });
        }
        let Some(o) = job.get(&["bs", "blocksize"]) else {
            return Some(("4096".into(), "4096".into()));
        };
        self.both_dirs(o, |s| match s {
            None => Ok("4096".into()),
            Some(s) => fio_size(s, kb).map(|b| b.to_string()),
        })
    }

    /// `o`'s per-direction value (`READ,WRITE`; the write the read's when absent), each
    /// part through `parse` (given None for an absent read part); a part that does not
    /// parse is reported against `o`.
    fn both_dirs(
        &mut self,
        o: &FioOption,
        parse: impl Fn(Option<&str>) -> Result<String, String>,
    ) -> Option<(String, String)> {
        let (r, w) = split_dirs(o.value.as_deref().unwrap_or(""));
        let out = parse(r.as_deref()).and_then(|rs| {
            let ws = match &w {
                Some(w) => parse(Some(w))?,
                None => rs.clone(),
            };
            Ok((rs, ws))
        });
        match out {
            Ok(v) => Some(v),
            Err(e) => {
                self.problem(o, e);
                None
            }
        }
    }

    /// `size` → disk_size (split over the disks) or, as `N%`, working_set_pct.
    fn size(&mut self, job: &FioJob, kb: u64, disks: i64, fleet: &mut RawFleet) -> Option<f64> {
        let file_size = self.filesize(job, kb, fleet);
        let o = job.get(&["size"])?;
        if file_size && !o.value.as_deref().unwrap_or("").trim().ends_with('%') {
            let at = o.at.clone();
            self.notice(&at, format!(
                "size={}: with filesize, fio's size only bounds the bytes a job transfers; iofleet runs for a duration, and each disk is filesize",
                o.value.as_deref().unwrap_or("").trim()
            ));
            return None;
        }
        let v = o.value.clone().unwrap_or_default();
        if let Some(p) = v.trim().strip_suffix('%') {
            return match p.trim().parse::<f64>() {
                Ok(p) if p > 0.0 && p <= 100.0 => Some(p),
                _ => {
                    self.problem(
                        o,
                        format!("size={v}: expected a percentage above 0 and at most 100"),
                    );
                    None
                }
            };
        }
        match fio_size(&v, kb) {
            Ok(total) => {
                let per_disk = total / disks.max(1) as u64;
                let rounded = per_disk / 4096 * 4096;
                if rounded != per_disk {
                    let at = o.at.clone();
                    self.notice(&at, format!(
                        "size={v}: {per_disk} bytes per disk rounded down to {rounded} (disk_size is a multiple of 4 KiB)"
                    ));
                }
                fleet.disk_size = Some(rounded.to_string());
            }
            Err(e) => self.problem(o, e),
        }
        None
    }

    /// `sync`: fio opens the files O_SYNC (`sync`, `1`) or O_DSYNC (`dsync`) →
    /// `data.write_through` (O_DSYNC). O_SYNC also writes the file's metadata at each
    /// write, which iofleet's preallocated disks and devices do not change: a notice.
    fn sync(&mut self, job: &FioJob) -> Option<bool> {
        let o = job.get(&["sync"])?;
        match o.value.as_deref().map(str::trim) {
            Some("none") | Some("0") => None,
            Some("dsync") => Some(true),
            None | Some("sync") | Some("1") => {
                let at = o.at.clone();
                self.notice(&at, "sync: O_SYNC maps to data.write_through, which opens the disks O_DSYNC (each write durable; the metadata O_SYNC adds does not change on iofleet's preallocated disks)");
                Some(true)
            }
            Some(v) => {
                self.problem(o, format!("sync={v}: expected none, 0, sync, 1 or dsync"));
                None
            }
        }
    }

    /// `filesize`: each file's size, so each disk's (`fleet.disk_size`); `size` then
    /// only bounds the bytes transferred (a percentage still sets the working set, as
    /// fio-json writes it). A range of different ends (fio picks each file's size at
    /// random in it) is refused: iofleet's disks have one size. Whether it was set.
    fn filesize(&mut self, job: &FioJob, kb: u64, fleet: &mut RawFleet) -> bool {
        let Some(o) = job.get(&["filesize"]) else {
            return false;
        };
        let v = o.value.clone().unwrap_or_default();
        let (lo, hi) = v.split_once('-').unwrap_or((&v, &v));
        match (fio_size(lo, kb), fio_size(hi, kb)) {
            (Ok(a), Ok(b)) if a == b => {
                let rounded = a / 4096 * 4096;
                if rounded != a {
                    let at = o.at.clone();
                    self.notice(&at, format!(
                        "filesize={}: {a} bytes per disk rounded down to {rounded} (disk_size is a multiple of 4 KiB)",
                        v.trim()
                    ));
                }
                fleet.disk_size = Some(rounded.to_string());
                true
            }
            (Ok(_), Ok(_)) => {
                self.problem(o, format!(
                    "filesize={}: a range of file sizes (fio picks each file's size in it at random) is not supported: iofleet's disks have one size; give one",
                    v.trim()
                ));
                true
            }
            (Err(e), _) | (_, Err(e)) => {
                self.problem(o, e);
                true
            }
        }
    }

    fn timing(
        &mut self,
        job: &FioJob,
        kb: u64,
        dirs: &Option<(Direction, Direction)>,
    ) -> RawTiming {
        let mut t = RawTiming::default();
        let time = |m: &mut Self, o: &FioOption| -> Option<String> {
            let v = o.value.clone().unwrap_or_default();
            match parse_duration(v.trim()) {
                Ok(_) => Some(v.trim().to_string()),
                Err(e) => {
                    m.problem(o, e);
                    None
                }
            }
        };
        let runtime = job.get(&["runtime", "timeout"]);
        let time_based = job.get(&["time_based"]).and_then(bool_of).unwrap_or(false);
        match runtime {
            Some(o) => {
                t.duration = time(self, o);
                if !time_based {
                    let at = o.at.clone();
                    self.notice(&at, "runtime without time_based: iofleet runs the whole runtime, where fio would stop early once size was transferred");
                }
            }
            None => self.notice(&job.at, format!(
                "job [{}] has no runtime: iofleet runs for a duration (default 60s; set --duration), not until size is transferred",
                job.name
            )),
        }
        if let Some(o) = job.get(&["ramp_time"]) {
            t.warmup = time(self, o);
        }
        let iops = job.get(&["rate_iops"]);
        let bw = job.get(&["rate"]);
        if let (Some(_), Some(b)) = (iops, bw) {
            self.problem(b, "give rate_iops or rate, not both");
        } else if let Some(o) = iops {
            match one_value(o.value.as_deref().unwrap_or("")).map(|v| v.trim().parse::<f64>()) {
                Some(Ok(r)) if r > 0.0 => t.rate_iops = Some(r),
                _ => self.problem(o, "expected one IOPS figure > 0 for reads and writes together (per-direction rates are not supported)"),
            }
        } else if let Some(o) = bw {
            let fixed = dirs
                .as_ref()
                .and_then(|(r, w)| (r.bs == w.bs).then(|| r.bs.parse::<u64>().ok()).flatten());
            match (one_value(o.value.as_deref().unwrap_or("")), fixed) {
                (Some(v), Some(bs)) => match fio_size(&v, kb) {
                    Ok(bytes) if bytes > 0 => {
                        let iops = bytes as f64 / bs as f64;
                        t.rate_iops = Some(iops);
                        let at = o.at.clone();
                        self.notice(
                            &at,
                            format!("rate={v}: {bytes} B/s at bs {bs} is rate_iops {iops}"),
                        );
                    }
                    Ok(_) => self.problem(o, "expected a rate above 0"),
                    Err(e) => self.problem(o, e),
                },
                (None, _) => {
                    self.problem(o, "per-direction rates are not supported; give one figure")
                }
                (_, None) => self.problem(
                    o,
                    "a byte rate maps to rate_iops only with one fixed block size; use rate_iops",
                ),
            }
        }
        if t.rate_iops.is_some() {
            // fio spaces rated I/Os evenly unless rate_process=poisson.
            t.arrival = Some("uniform".into());
        }
        if let Some(o) = job.get(&["rate_process"]) {
            match o.value.as_deref().map(str::trim) {
                Some("linear") => t.arrival = Some("uniform".into()),
                Some("poisson") => t.arrival = Some("poisson".into()),
                _ => self.problem(o, "expected linear or poisson"),
            }
        }
        if let Some(o) = job.get(&["verify"]) {
            match o.value.as_deref().map(str::trim).unwrap_or("") {
                "0" | "null" => {}
                m if VERIFY_METHODS.contains(&m) => {
                    t.verify = Some(true);
                    let at = o.at.clone();
                    self.notice(&at, format!("verify={m}: iofleet verifies every write with its own header and XXH3-64 checksum per 4 KiB unit (timing.verify)"));
                }
                m => self.problem(o, format!("verify={m} is not a verify method iofleet maps")),
            }
        }
        t
    }

    /// `blockalign` (`ba`) → `stream.align`, in bytes; one value for both directions.
    fn blockalign(&mut self, job: &FioJob, kb: u64) -> Option<String> {
        let o = job.get(&["blockalign", "ba"])?;
        let Some(v) = one_value(o.value.as_deref().unwrap_or("")) else {
            self.problem(o, "per-direction alignments are not supported; give one");
            return None;
        };
        match fio_size(&v, kb) {
            Ok(0) => {
                self.problem(o, format!("blockalign={v}: an alignment of 0 bytes"));
                None
            }
            Ok(n) => Some(n.to_string()),
            Err(e) => {
                self.problem(o, e);
                None
            }
        }
    }

    /// random_distribution → (zipf, hot_bands). `zoned_abs` bands (absolute sizes) become
    /// shares of each disk, so they need a byte `size`.
    fn distribution(&mut self, job: &FioJob, kb: u64, disks: i64) -> (Option<f64>, Option<String>) {
        let Some(o) = job.get(&["random_distribution"]) else {
            return (None, None);
        };
        let v = one_value(o.value.as_deref().unwrap_or(""));
        let Some(v) = v else {
            self.problem(o, "per-direction distributions are not supported; give one");
            return (None, None);
        };
        let (kind, arg) = v.split_once(':').unwrap_or((v.as_str(), ""));
        match kind.trim() {
            "random" => (None, None),
            "zipf" => match arg.trim().parse::<f64>() {
                Ok(theta) if theta > 0.0 => (Some(theta), None),
                _ => {
                    self.problem(o, format!("zipf:{arg}: expected zipf:THETA with THETA > 0"));
                    (None, None)
                }
            },
            "zoned" | "zoned_abs" => {
                let disk = job
                    .get(&["size"])
                    .and_then(|s| fio_size(s.value.as_deref().unwrap_or(""), kb).ok())
                    .map(|total| total / disks.max(1) as u64);
                let bands = if kind.trim() == "zoned" {
                    zoned(arg)
                } else {
                    zoned_abs(arg, disk, kb)
                };
                let bands = match bands {
                    Ok(b) => b,
                    Err(e) => {
                        self.problem(o, format!("{kind}:{arg}: {e}"));
                        return (None, None);
                    }
                };
                match parse_hot_bands(&bands) {
                    Ok(_) => (None, Some(bands)),
                    Err(e) => {
                        self.problem(o, format!("{kind}:{}: {e}", arg.trim()));
                        (None, None)
                    }
                }
            }
            other => {
                self.problem(o, format!("random_distribution={other} has no iofleet equivalent (iofleet has zipf and hot bands, i.e. zoned)"));
                (None, None)
            }
        }
    }

    fn direct(&mut self, job: &FioJob, run_direct: bool) -> Option<bool> {
        let o = job.get(&["direct", "buffered"])?;
        let Some(mut d) = bool_of(o) else {
            self.problem(o, "expected 0 or 1");
            return None;
        };
        if o.name == "buffered" {
            d = !d;
        }
        if d != run_direct {
            let at = o.at.clone();
            self.notice(&at, format!(
                "{}={}: direct I/O is the run flag --direct for all groups; this run uses --direct={run_direct} (pass --direct={d} to match)",
                o.name,
                o.value.as_deref().unwrap_or("1")
            ));
        }
        Some(d)
    }

    fn engine(&mut self, job: &FioJob) -> Option<&'static str> {
        let o = job.get(&["ioengine"])?;
        let v = o.value.as_deref().unwrap_or("").trim().to_string();
        let at = o.at.clone();
        match v.as_str() {
            "io_uring" => Some("io_uring"),
            "windowsaio" | "solarisaio" => {
                self.notice(&at, format!("ioengine={v} is that system's asynchronous I/O; on Linux it runs as iofleet's auto engine (io_uring where the kernel allows it, else psync)"));
                Some("auto")
            }
            "libaio" | "posixaio" => {
                self.notice(&at, format!("ioengine={v} runs as iofleet's auto engine (io_uring where the kernel allows it, else psync)"));
                Some("auto")
            }
            "psync" | "sync" | "pvsync" | "pvsync2" | "vsync" => {
                if v != "psync" {
                    self.notice(
                        &at,
                        format!("ioengine={v} runs as iofleet's psync engine (pread/pwrite)"),
                    );
                }
                Some("psync")
            }
            "null" => Some("null"),
            _ => {
                self.problem(o, format!("ioengine={v} has no iofleet equivalent (io_uring, libaio, posixaio, windowsaio, solarisaio, psync, sync, pvsync, pvsync2, vsync, null)"));
                None
            }
        }
    }

    /// Where `stonewall`/`wait_for_previous` makes this job wait for the ones before it
    /// (a value that is not a boolean is reported).
    fn stonewall(&mut self, job: &FioJob, index: usize) -> Option<Location> {
        let o = job.get(&["stonewall", "wait_for_previous"])?;
        match bool_of(o) {
            Some(true) if index > 0 => Some(o.at.clone()),
            Some(_) => None,
            None => {
                self.problem(o, "expected 1/0, true/false, yes/no or on/off");
                None
            }
        }
    }
}

const VERIFY_METHODS: &[&str] = &[
    "1",
    "md5",
    "crc64",
    "crc32c",
    "crc32c-intel",
    "crc32",
    "crc16",
    "crc7",
    "xxhash",
    "sha512",
    "sha256",
    "sha1",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "meta",
    "pattern",
];

/// A boolean option: bare (set), or 0/1, true/false, yes/no, on/off.
fn bool_of(o: &FioOption) -> Option<bool> {
    match o.value.as_deref().map(|v| v.trim().to_ascii_lowercase()) {
        None => Some(true),
        Some(v) => match v.as_str() {
            "1" | "true" | "yes" | "on" => Some(true),
            "0" | "false" | "no" | "off" => Some(false),
            _ => None,
        },
    }
}

/// `read,write[,trim]` → (read, write); an empty part is None; a single value is read
/// only (the caller applies it to writes too).
fn split_dirs(v: &str) -> (Option<String>, Option<String>) {
    let mut parts = v.split(',').map(|p| {
        let p = p.trim();
        (!p.is_empty()).then(|| p.to_string())
    });
    (parts.next().flatten(), parts.next().flatten())
}

/// fio's `zoned` bands (`io%/range%:...`) as iofleet hot bands: an open last band
/// (`20/`, no range) takes the range the others leave.
fn zoned(arg: &str) -> Result<String, String> {
    let bands: Vec<&str> = arg.split(':').map(str::trim).collect();
    let Some((last, rest)) = bands.split_last() else {
        return Ok(String::new());
    };
    let Some(io) = last.strip_suffix('/') else {
        return Ok(arg.trim().to_string());
    };
    let mut used = 0.0;
    for band in rest {
        let range = band.split_once('/').map_or("", |(_, r)| r.trim());
        used += range
            .parse::<f64>()
            .map_err(|_| format!("band '{band}': range% '{range}' is not a number"))?;
    }
    let left = 100.0 - used;
    if left <= 0.0 {
        return Err(format!(
            "the open last band '{last}' has no range left (the others take {used}%)"
        ));
    }
    let mut out: Vec<String> = rest.iter().map(|b| b.to_string()).collect();
    out.push(format!("{io}/{left}"));
    Ok(out.join(":"))
}

/// fio's `zoned_abs` bands (`io%/SIZE:...`, sizes from the start of each file) as hot
/// bands: each size as a share of a disk of `disk` bytes. An open last band takes the
/// rest of the disk.
fn zoned_abs(arg: &str, disk: Option<u64>, kb: u64) -> Result<String, String> {
    let Some(disk) = disk.filter(|d| *d > 0) else {
        return Err("absolute zones need the job's size in bytes (size=...), to make them shares of each disk".into());
    };
    let mut out = Vec::new();
    let mut used = 0u64;
    let bands: Vec<&str> = arg.split(':').map(str::trim).collect();
    for (i, band) in bands.iter().enumerate() {
        let (io, size) = band
            .split_once('/')
            .ok_or_else(|| format!("band '{band}' is not io%/size (e.g. 60/20m)"))?;
        let bytes = if size.trim().is_empty() && i + 1 == bands.len() {
            disk.saturating_sub(used)
        } else {
            fio_size(size, kb)?
        };
        used = used.saturating_add(bytes);
        if used > disk {
            return Err(format!(
                "the zones add up to {used} bytes, more than a disk's {disk}"
            ));
        }
        out.push(format!(
            "{}/{}",
            io.trim(),
            bytes as f64 * 100.0 / disk as f64
        ));
    }
    Ok(out.join(":"))
}

/// The one value of an option that may be written per direction; None when read and
/// write differ.
fn one_value(v: &str) -> Option<String> {
    let parts: Vec<&str> = v
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    match parts.as_slice() {
        [one] => Some(one.to_string()),
        [first, rest @ ..] if rest.iter().all(|p| p == first) => Some(first.to_string()),
        _ => None,
    }
}

/// One direction of `bssplit` (`4k/10:64k/90`) as an iofleet list (`4096:10,65536:90`).
/// Parts without a percentage share what the others leave of 100 equally.
fn bssplit(v: &str, kb: u64) -> Result<String, String> {
    let mut sizes = Vec::new();
    let mut given = 0.0;
    let mut blanks = 0;
    for part in v.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (s, p) = part.split_once('/').unwrap_or((part, ""));
        let size = fio_size(s, kb)?;
        let pct = match p.trim() {
            "" => {
                blanks += 1;
                None
            }
            p => {
                let x: f64 = p
                    .parse()
                    .map_err(|_| format!("bssplit part '{part}': expected SIZE/PERCENT"))?;
                given += x;
                Some(x)
            }
        };
        sizes.push((size, pct));
    }
    if sizes.is_empty() {
        return Err("bssplit needs parts such as 4k/10:64k/90".into());
    }
    if given > 100.0 + 1e-9 {
        return Err(format!(
            "bssplit '{v}': the percentages add up to {given}, over 100"
        ));
    }
    let share = if blanks > 0 {
        (100.0 - given) / blanks as f64
    } else {
        0.0
    };
    let mut out = Vec::new();
    for (size, pct) in sizes {
        let w = pct.unwrap_or(share);
        if w <= 0.0 {
            continue;
        }
        let w = if w.fract() == 0.0 {
            format!("{w:.0}")
        } else {
            format!("{w}")
        };
        out.push(format!("{size}:{w}"));
    }
    if out.is_empty() {
        return Err(format!("bssplit '{v}': every percentage is 0"));
    }
    Ok(out.join(","))
}

/// Largest number of sizes a `bsrange` becomes: as many as a `stream.bs` list holds.
const MAX_RANGE_SIZES: u64 = MAX_BLOCK_SIZES as u64;

/// `bsrange` `MIN-MAX` → every multiple of MIN up to MAX, equally weighted.
fn bsrange(v: &str, kb: u64) -> Result<String, String> {
    let (lo, hi) = v
        .split_once('-')
        .ok_or_else(|| format!("bsrange '{v}': expected MIN-MAX such as 4k-64k"))?;
    let (lo, hi) = (fio_size(lo, kb)?, fio_size(hi, kb)?);
    if lo == 0 || hi < lo {
        return Err(format!("bsrange '{v}': expected 0 < MIN <= MAX"));
    }
    let n = hi / lo;
    if n > MAX_RANGE_SIZES {
        return Err(format!(
            "bsrange '{v}' has {n} multiples of its minimum; iofleet maps at most {MAX_RANGE_SIZES} (use bssplit)"
        ));
    }
    Ok((1..=n)
        .map(|k| format!("{}:1", k * lo))
        .collect::<Vec<_>>()
        .join(","))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use iofleet_profile::{resolve, Context, Locality, Overrides};

    use super::*;
    use crate::fio::parse::parse_job_text;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn map(text: &str, ignore: &[&str]) -> Result<FioImport, FioError> {
        let jobs = parse_job_text(text, "t.fio", Path::new("."), &no_env)?;
        let ignore: Vec<String> = ignore.iter().map(|s| s.to_string()).collect();
        import(&jobs, true, &ignore)
    }

    const TWO_JOBS: &str = "\
[global]
ioengine=libaio
direct=1
runtime=30
time_based
ramp_time=5s
size=1g

[oltp]
rw=randrw
rwmixread=70
bs=8k
numjobs=4
iodepth=16
random_distribution=zipf:1.2

[log]
rw=write
bs=32k
iodepth=1
rate_iops=300
";

    #[test]
    fn global_and_jobs_become_groups_field_by_field() {
        let imp = map(TWO_JOBS, &[]).unwrap();
        assert_eq!(imp.groups.len(), 2);
        let oltp = &imp.groups[0];
        assert_eq!(oltp.name, "oltp");
        assert_eq!(oltp.at.line, 9);
        assert_eq!(oltp.engine, Some("auto"));
        assert_eq!(oltp.direct, Some(true));
        let f = &oltp.raw.fleet;
        assert_eq!(
            (f.workers, f.qd, f.disks_per_worker, f.threads_per_disk),
            (Some(4), Some(16), Some(1), Some(1))
        );
        assert_eq!(f.disk_size.as_deref(), Some("1073741824"));
        assert_eq!(oltp.raw.timing.duration.as_deref(), Some("30"));
        assert_eq!(oltp.raw.timing.warmup.as_deref(), Some("5s"));
        assert_eq!(oltp.raw.timing.rate_iops, None);
        assert_eq!(oltp.raw.streams.len(), 1);
        let s = &oltp.raw.streams[0];
        assert_eq!(s.bs.as_deref(), Some("8192"));
        assert_eq!((s.read_pct, s.random_pct), (Some(70.0), Some(100.0)));
        assert_eq!(s.zipf, Some(1.2));

        let log = &imp.groups[1];
        assert_eq!(log.raw.fleet.workers, None, "numjobs absent: the default 1");
        assert_eq!(log.raw.fleet.qd, Some(1));
        assert_eq!(log.raw.timing.rate_iops, Some(300.0));
        assert_eq!(log.raw.timing.arrival.as_deref(), Some("uniform"));
        let s = &log.raw.streams[0];
        assert_eq!((s.read_pct, s.random_pct), (Some(0.0), Some(0.0)));
        assert_eq!(s.bs.as_deref(), Some("32768"));
        assert_eq!(s.zipf, None);
        // libaio is named in a notice, once although [global] reaches both jobs.
        let libaio: Vec<_> = imp
            .notices
            .iter()
            .filter(|n| n.contains("libaio"))
            .collect();
        assert_eq!(libaio.len(), 1, "{:?}", imp.notices);
        assert!(libaio[0].starts_with("fio t.fio:2: "), "{}", libaio[0]);

        // The mapped profiles resolve as any profile does.
        let plan = resolve(&oltp.raw, &Overrides::default(), &Context { direct: true }).unwrap();
        assert_eq!(plan.fleet.workers, 4);
        assert_eq!(plan.fleet.qd, 16);
        assert_eq!(plan.timing.duration, std::time::Duration::from_secs(30));
        assert_eq!(plan.streams[0].locality, Locality::Zipf { theta: 1.2 });
    }

    #[test]
    fn per_direction_block_sizes_make_a_read_and_a_write_stream() {
        let text = "[mix]\nrw=randrw\nrwmixwrite=25\nbssplit=4k/50:64k/50,8k/:16k/\nruntime=10\n";
        let imp = map(text, &[]).unwrap();
        let st = &imp.groups[0].raw.streams;
        assert_eq!(st.len(), 2);
        assert_eq!(st[0].name.as_deref(), Some("read"));
        assert_eq!(st[0].bs.as_deref(), Some("4096:50,65536:50"));
        assert_eq!((st[0].read_pct, st[0].weight), (Some(100.0), Some(75)));
        assert_eq!(st[1].name.as_deref(), Some("write"));
        assert_eq!(st[1].bs.as_deref(), Some("8192:50,16384:50"));
        assert_eq!((st[1].read_pct, st[1].weight), (Some(0.0), Some(25)));

        let text = "[m]\nrw=rw\nbs=4k,64k\nruntime=10\n";
        let st = &map(text, &[]).unwrap().groups[0].raw.streams;
        assert_eq!(st.len(), 2);
        assert_eq!(
            (st[0].bs.as_deref(), st[0].weight),
            (Some("4096"), Some(50))
        );
        assert_eq!(st[1].bs.as_deref(), Some("65536"));
        assert_eq!((st[0].random_pct, st[1].random_pct), (Some(0.0), Some(0.0)));

        // Same sizes both ways: one stream with the mix.
        let text = "[m]\nrw=randrw\nbs=4k,4k\npercentage_random=80\nruntime=10\n";
        let st = &map(text, &[]).unwrap().groups[0].raw.streams;
        assert_eq!(st.len(), 1);
        assert_eq!((st[0].read_pct, st[0].random_pct), (Some(50.0), Some(80.0)));

        // Random reads, sequential writes: two streams, the same block size.
        let text = "[m]\nrw=randrw\nrwmixread=60\npercentage_random=100,0\nruntime=10\n";
        let st = &map(text, &[]).unwrap().groups[0].raw.streams;
        let got: Vec<_> = st
            .iter()
            .map(|s| (s.read_pct, s.random_pct, s.weight))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(100.0), Some(100.0), Some(60)),
                (Some(0.0), Some(0.0), Some(40))
            ]
        );
    }

    #[test]
    fn sizes_follow_kb_base_and_bsrange_lists_multiples() {
        assert_eq!(fio_size("4k", 1024), Ok(4096));
        assert_eq!(fio_size("4k", 1000), Ok(4000));
        assert_eq!(fio_size("4KiB", 1000), Ok(4096));
        assert_eq!(fio_size("1m", 1024), Ok(1 << 20));
        assert_eq!(fio_size("2g", 1024), Ok(2 << 30));
        assert_eq!(fio_size("1t", 1024), Ok(1 << 40));
        assert!(fio_size("4x", 1024).is_err());
        let e = fio_size("-5g", 1024).unwrap_err();
        assert!(e.contains("'-5g' is negative"), "{e}");
        let text = "[r]\nrw=randread\nbsrange=4k-16k\nkb_base=1024\nsize=30%\nruntime=1m\n";
        let g = &map(text, &[]).unwrap().groups[0];
        assert_eq!(
            g.raw.streams[0].bs.as_deref(),
            Some("4096:1,8192:1,12288:1,16384:1")
        );
        assert_eq!(g.raw.streams[0].working_set_pct, Some(30.0));
        assert_eq!(g.raw.fleet.disk_size, None);
        // nrfiles splits size over the disks.
        let text = "[r]\nnrfiles=4\nsize=64m\nruntime=1\n";
        let f = &map(text, &[]).unwrap().groups[0].raw.fleet;
        assert_eq!(
            (f.disks_per_worker, f.disk_size.as_deref()),
            (Some(4), Some("16777216"))
        );
    }

    #[test]
    fn zoned_maps_to_hot_bands_and_other_distributions_are_named() {
        let text = "[z]\nrw=randread\nrandom_distribution=zoned:60/10:30/20:10/70\nruntime=5\n";
        let s = &map(text, &[]).unwrap().groups[0].raw.streams[0];
        assert_eq!(s.hot_bands.as_deref(), Some("60/10:30/20:10/70"));
        let e = map("[p]\nrw=randread\nrandom_distribution=pareto:0.9\n", &[]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("t.fio:3: random_distribution: random_distribution=pareto"),
            "{msg}"
        );
    }

    #[test]
    fn directory_names_one_or_several_directories_without_a_notice() {
        let imp = map(
            "[a]\nrw=read\ndirectory=/mnt/a:/mnt/b\\:c\nruntime=1\n[b]\nrw=read\nruntime=1\n",
            &[],
        )
        .unwrap();
        let d = imp.groups[0].directory.as_ref().unwrap();
        assert_eq!(d.paths, ["/mnt/a", "/mnt/b:c"]);
        assert_eq!((d.value.as_str(), d.at.line), ("/mnt/a:/mnt/b\\:c", 3));
        assert_eq!(imp.groups[1].directory, None);
        // What becomes of it depends on --target, which only the CLI knows.
        assert!(
            !imp.notices.iter().any(|n| n.contains("directory")),
            "{:?}",
            imp.notices
        );
        let FioError::Unsupported(p) = map("[a]\nrw=read\ndirectory=:\n", &[]).unwrap_err() else {
            panic!("not Unsupported");
        };
        assert_eq!(p[0].option, "directory");
    }

    #[test]
    fn unsupported_options_are_all_named_with_file_and_line() {
        let text =
            "[global]\nfsync=1\n[a]\nrw=read\nfrobnicate=3\nrw=trimwrite\n[b]\nrw=randread:8\n";
        let FioError::Unsupported(p) = map(text, &[]).unwrap_err() else {
            panic!("not Unsupported");
        };
        let got: Vec<(usize, &str)> = p.iter().map(|p| (p.at.line, p.option.as_str())).collect();
        assert_eq!(
            got,
            vec![(2, "fsync"), (5, "frobnicate"), (6, "rw"), (8, "rw")],
            "{p:?}"
        );
        assert!(p[0].message.contains("flushes"), "{}", p[0].message);
        assert!(p[3].message.contains("':8'"), "{}", p[3].message);
        assert!(p[3].message.contains("every 8 I/Os"), "{}", p[3].message);
    }

    #[test]
    fn filesize_sets_each_disks_size_and_a_range_is_refused() {
        // One size per file: each disk is that size, whatever nrfiles; size then only
        // bounds the bytes transferred (a notice).
        let text = "[global]\nfilesize=8m\n[a]\nnrfiles=2\nsize=64m\nruntime=1\n";
        let imp = map(text, &[]).unwrap();
        let f = &imp.groups[0].raw.fleet;
        assert_eq!(
            (f.disks_per_worker, f.disk_size.as_deref()),
            (Some(2), Some("8388608"))
        );
        assert!(
            imp.notices
                .iter()
                .any(|n| n.contains("t.fio:5: size=64m: with filesize")),
            "{:?}",
            imp.notices
        );
        // size=N% beside filesize is the working set, as fio-json writes it.
        let g = &map("[a]\nfilesize=16m\nsize=25%\nruntime=1\n", &[])
            .unwrap()
            .groups[0];
        assert_eq!(g.raw.fleet.disk_size.as_deref(), Some("16777216"));
        assert_eq!(g.raw.streams[0].working_set_pct, Some(25.0));
        // A range of equal ends is one size; of different ends, refused at its line.
        let g = &map("[a]\nfilesize=4m-4m\nruntime=1\n", &[]).unwrap().groups[0];
        assert_eq!(g.raw.fleet.disk_size.as_deref(), Some("4194304"));
        let FioError::Unsupported(p) = map("[a]\nfilesize=1m-8m\n", &[]).unwrap_err() else {
            panic!("not Unsupported");
        };
        assert_eq!((p[0].at.line, p[0].option.as_str()), (2, "filesize"));
        assert!(
            p[0].message.contains("a range of file sizes"),
            "{}",
            p[0].message
        );
    }

    #[test]
    fn sync_maps_to_write_through() {
        for (v, want) in [
            ("dsync", Some(true)),
            ("1", Some(true)),
            ("sync", Some(true)),
            ("0", None),
            ("none", None),
        ] {
            let g = &map(&format!("[a]\nrw=write\nsync={v}\nruntime=1\n"), &[])
                .unwrap()
                .groups[0];
            assert_eq!(g.raw.data.write_through, want, "sync={v}");
        }
        let imp = map("[a]\nrw=write\nsync=1\nruntime=1\n", &[]).unwrap();
        assert!(
            imp.notices
                .iter()
                .any(|n| n.starts_with("fio t.fio:3: sync: O_SYNC")),
            "{:?}",
            imp.notices
        );
        let FioError::Unsupported(p) = map("[a]\nsync=always\n", &[]).unwrap_err() else {
            panic!("not Unsupported");
        };
        assert_eq!((p[0].at.line, p[0].option.as_str()), (2, "sync"));
    }

    #[test]
    fn rw_modifiers_that_are_fios_defaults_map_and_others_are_refused() {
        for text in ["[a]\nrw=randread:1\n", "[a]\nrw=write:0\n"] {
            let g = &map(text, &[]).unwrap().groups[0];
            assert_eq!(g.raw.streams.len(), 1, "{text}");
        }
        let g = &map("[a]\nrw=randread:1\n", &[]).unwrap().groups[0];
        assert_eq!(g.raw.streams[0].random_pct, Some(100.0));
        let text = "[a]\nrw=randwrite:4\n[b]\nrw=read:64k\n[c]\nrw=randread:0\n";
        let FioError::Unsupported(p) = map(text, &[]).unwrap_err() else {
            panic!("not Unsupported");
        };
        let got: Vec<(usize, &str)> = p.iter().map(|p| (p.at.line, p.option.as_str())).collect();
        assert_eq!(got, vec![(2, "rw"), (4, "rw"), (6, "rw")], "{p:?}");
        assert!(p[0].message.contains("every 4 I/Os"), "{}", p[0].message);
        assert!(p[1].message.contains("no holes"), "{}", p[1].message);
        assert!(p[2].message.contains("1 or more"), "{}", p[2].message);
    }

    #[test]
    fn counts_are_bounded_as_the_keys_they_become() {
        let text = "[a]\nnumjobs=70000\niodepth=0\nnrfiles=2000\n[b]\nnumjobs=65536\niodepth=4096\nnrfiles=1024\n";
        let FioError::Unsupported(p) = map(text, &[]).unwrap_err() else {
            panic!("not Unsupported");
        };
        let got: Vec<(usize, &str, &str)> = p
            .iter()
            .map(|p| (p.at.line, p.option.as_str(), p.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    2,
                    "numjobs",
                    "expected a whole number in 1..=65536 (the range of fleet.workers)"
                ),
                (
                    3,
                    "iodepth",
                    "expected a whole number in 1..=4096 (the range of fleet.qd)"
                ),
                (
                    4,
                    "nrfiles",
                    "expected a whole number in 1..=1024 (the range of fleet.disks_per_worker)"
                ),
            ]
        );
    }

    #[test]
    fn ignored_options_run_with_a_notice() {
        let text = "[global]\nfsync=1\n[a]\nrw=read\nruntime=5\n[b]\nrw=write\nruntime=5\n";
        let imp = map(text, &["fsync"]).unwrap();
        assert_eq!(imp.groups.len(), 2);
        let n: Vec<_> = imp.notices.iter().filter(|n| n.contains("fsync")).collect();
        assert_eq!(
            n,
            vec!["fio t.fio:2: option fsync ignored (--fio-ignore fsync)"]
        );
    }

    #[test]
    fn stonewall_starts_a_phase_after_the_first_job() {
        let text = "[a]\nstonewall\nruntime=5\n[b]\nrw=write\nruntime=5\n[c]\nrw=read\nwait_for_previous=1\nruntime=5\n[d]\nstonewall=0\nruntime=5\n";
        let imp = map(text, &[]).unwrap();
        let at: Vec<Option<usize>> = imp
            .groups
            .iter()
            .map(|g| g.stonewall.as_ref().map(|l| l.line))
            .collect();
        // [a]'s has nothing to wait for; [d] says no.
        assert_eq!(at, [None, None, Some(9), None]);
        let names: Vec<Vec<&str>> = phases(&imp.groups)
            .iter()
            .map(|p| p.iter().map(|g| g.name.as_str()).collect())
            .collect();
        assert_eq!(names, [vec!["a", "b"], vec!["c", "d"]]);
        // In [global], every job after the first waits: one phase each.
        let imp = map("[global]\nstonewall\nruntime=5\n[a]\n[b]\n[c]\n", &[]).unwrap();
        assert_eq!(phases(&imp.groups).len(), 3);
        let e = map("[a]\n[b]\nstonewall=maybe\n", &[]).unwrap_err();
        assert!(
            e.to_string().contains("t.fio:3: stonewall: expected"),
            "{e}"
        );
    }

    #[test]
    fn verify_rate_and_engines_map() {
        let text = "[v]\nrw=randwrite\nbs=4k\nverify=crc32c\nrate=4m\nioengine=psync\nruntime=5\n";
        let g = &map(text, &[]).unwrap().groups[0];
        assert_eq!(g.raw.timing.verify, Some(true));
        assert_eq!(g.raw.timing.rate_iops, Some(1024.0));
        assert_eq!(g.engine, Some("psync"));
        let e = map("[x]\nioengine=rbd\n", &[]).unwrap_err();
        assert!(
            e.to_string().contains("t.fio:2: ioengine: ioengine=rbd"),
            "{e}"
        );
        let e = map("[x]\nrate_iops=100,200\n", &[]).unwrap_err();
        assert!(e.to_string().contains("per-direction"), "{e}");
    }

    #[test]
    fn an_open_last_zone_takes_the_rest_and_absolute_zones_become_shares() {
        let text = "[z]\nrw=randread\nrandom_distribution=zoned:50/5:30/15:20/\nruntime=1\n";
        let s = &map(text, &[]).unwrap().groups[0].raw.streams[0];
        assert_eq!(s.hot_bands.as_deref(), Some("50/5:30/15:20/80"));
        assert_eq!(zoned("60/10:40/"), Ok("60/10:40/90".into()));
        assert!(zoned("60/100:40/").unwrap_err().contains("no range left"));
        // zoned_abs: sizes as shares of each disk (size 2g over 2 files: 1 GiB each).
        let text = "[z]\nrw=randread\nnrfiles=2\nsize=2g\nrandom_distribution=zoned_abs:60/256m:30/512m:10/\nruntime=1\n";
        let s = &map(text, &[]).unwrap().groups[0].raw.streams[0];
        assert_eq!(s.hot_bands.as_deref(), Some("60/25:30/50:10/25"));
        let e = map(
            "[z]\nrw=randread\nrandom_distribution=zoned_abs:60/1g\n",
            &[],
        )
        .unwrap_err();
        assert!(
            e.to_string().contains(
                "t.fio:3: random_distribution: zoned_abs:60/1g: absolute zones need the job's size"
            ),
            "{e}"
        );
        let e = zoned_abs("60/2g", Some(1 << 30), 1024).unwrap_err();
        assert!(e.contains("more than a disk's"), "{e}");
    }

    #[test]
    fn options_that_do_not_change_the_io_get_one_notice_each() {
        let text = "[global]\nwrite_bw_log=bw\ngtod_reduce=1\nio_submit_mode=offload\n[a]\nrw=read\nruntime=1\nlog_avg_msec=1000\n[b]\nrw=write\nruntime=1\n";
        let imp = map(text, &[]).unwrap();
        assert_eq!(imp.groups.len(), 2);
        for (name, line) in [
            ("write_bw_log", 2),
            ("gtod_reduce", 3),
            ("io_submit_mode", 4),
            ("log_avg_msec", 8),
        ] {
            let n: Vec<_> = imp
                .notices
                .iter()
                .filter(|n| n.contains(&format!("{name} accepted")))
                .collect();
            assert_eq!(n.len(), 1, "{name}: {:?}", imp.notices);
            assert!(n[0].starts_with(&format!("fio t.fio:{line}: ")), "{}", n[0]);
        }
    }

    #[test]
    fn windowsaio_runs_native_with_a_notice() {
        let imp = map("[w]\nioengine=windowsaio\nrw=randread\nruntime=1\n", &[]).unwrap();
        assert_eq!(imp.groups[0].engine, Some("auto"));
        let n: Vec<_> = imp
            .notices
            .iter()
            .filter(|n| n.contains("windowsaio"))
            .collect();
        assert_eq!(n.len(), 1, "{:?}", imp.notices);
        assert!(n[0].starts_with("fio t.fio:2: "), "{}", n[0]);
    }

    #[test]
    fn blockalign_becomes_the_stream_alignment() {
        let imp = map("[a]\nrw=randread\nbs=4k\nblockalign=64k\nruntime=1\n", &[]).unwrap();
        assert_eq!(imp.groups[0].raw.streams[0].align.as_deref(), Some("65536"));
        let imp = map("[a]\nrw=randread\nba=8k,8k\nruntime=1\n", &[]).unwrap();
        assert_eq!(imp.groups[0].raw.streams[0].align.as_deref(), Some("8192"));
        let e = map("[a]\nrw=randread\nba=4k,8k\n", &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("t.fio:3: ba: per-direction alignments"),
            "{e}"
        );
        let e = map("[a]\nrw=randread\nblockalign=0\n", &[]).unwrap_err();
        assert!(e.to_string().contains("t.fio:3: blockalign:"), "{e}");
    }

    #[test]
    fn latency_target_and_ratemin_are_refused_by_name_and_line() {
        let e = map("[a]\nrw=read\nratemin=10m\nlatency_target=5ms\n", &[]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("t.fio:3: ratemin: not supported"), "{msg}");
        assert!(
            msg.contains("t.fio:4: latency_target: not supported"),
            "{msg}"
        );
    }
}
