//! fio's job-file grammar, read into jobs with located options; no meaning is given here
//! beyond the vocabulary (`Known`): which option names iofleet maps, accepts or knows it
//! cannot run, which the reader needs below and `map` gives meaning to.
//!
//! A job file is ini-like: `[name]` starts a job section, `[global]` a section whose
//! options become the defaults of every job after it (several `[global]` sections may
//! appear; each affects only the jobs below it). A line whose first non-blank character is
//! `;` or `#` is a comment. `include FILE` reads another file in place (a relative path is
//! taken from the including file's directory). `${VAR}` in a value is replaced by the
//! environment variable VAR; an unset one is an error naming it. An option is `name=value`
//! or a bare `name` (a boolean option set); a name is letters, digits and `_`, as fio's
//! are. Every option keeps its file and line so that the mapping (`map`) can name where an
//! unsupported option was written.
//!
//! An included file may be anything the path names (`include /etc/shadow`), so its text
//! is never quoted unless it is a job file's: a line that is not a comment, a section, an
//! include or an option is reported by number only, and the name of an option iofleet
//! does not know is not shown (`Location::included`). Once `NOT_A_JOB_FILE` of its lines
//! are such lines before any option iofleet knows, the file is declared not a job file and
//! reading stops. Lines of the file the user named are quoted in errors as written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::FioError;

/// Where an option or section was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: usize,
    /// Written in an included file (not the one the user named): an option name that
    /// iofleet does not know is not quoted from it.
    pub included: bool,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One option as written: its name (lower case), its value after `${VAR}` expansion
/// (None for a bare `name`) and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FioOption {
    pub name: String,
    pub value: Option<String>,
    pub at: Location,
}

/// One job section with the global options in force above it, globals first, then its
/// own options in file order (a later option overrides an earlier one of the same name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FioJob {
    pub name: String,
    pub at: Location,
    pub options: Vec<FioOption>,
}

impl FioOption {
    /// The name as an error may quote it: as written, unless it comes from an included
    /// file and iofleet does not know it (it may be a line of any file at all).
    pub fn shown_name(&self) -> &str {
        if self.at.included && known(&self.name).is_none() {
            "(not shown: an unknown name in an included file)"
        } else {
            &self.name
        }
    }
}

impl FioJob {
    /// The last value given for `name` (or any of its aliases), with the option.
    pub fn get(&self, names: &[&str]) -> Option<&FioOption> {
        self.options
            .iter()
            .rev()
            .find(|o| names.contains(&o.name.as_str()))
    }
}

/// How deep `include` may nest (a file including itself is caught by this bound).
const MAX_INCLUDE_DEPTH: usize = 16;

/// An included file with this many lines that are not job-file lines (or options
/// iofleet does not know) before any option it knows is not a job file.
pub const NOT_A_JOB_FILE: usize = 3;

/// An option name as fio writes them: letters, digits and `_`.
fn is_option_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What an included file has shown of itself so far.
#[derive(Default)]
struct Seen {
    /// An option iofleet knows: it is a job file.
    known: bool,
    /// Lines that are neither comments, sections, includes nor options.
    foreign: Vec<usize>,
    /// Those and options iofleet does not know, while `known` is false.
    strange: Vec<usize>,
}

impl Seen {
    /// Line `line`, which is not blank or a comment, seen: `name` is what stands before
    /// its `=` (the whole line without one), `structural` whether it is a section or an
    /// include. False for a line that is not a job-file line: it is counted, and not read.
    fn shows(&mut self, line: usize, name: &str, structural: bool) -> bool {
        if structural {
            return true;
        }
        if !is_option_name(name) {
            self.foreign.push(line);
            if !self.known {
                self.strange.push(line);
            }
            return false;
        }
        if known(&name.to_ascii_lowercase()).is_some() {
            self.known = true;
        } else if !self.known {
            self.strange.push(line);
        }
        true
    }

    /// Enough lines that are not a job file's, before any option iofleet knows.
    fn not_a_job_file(&self) -> bool {
        !self.known && self.strange.len() >= NOT_A_JOB_FILE
    }
}

/// "lines 1, 2 and 3" / "line 4".
fn line_list(lines: &[usize]) -> String {
    let n: Vec<String> = lines.iter().map(usize::to_string).collect();
    match n.as_slice() {
        [one] => format!("line {one}"),
        [init @ .., last] => format!("lines {} and {last}", init.join(", ")),
        [] => "no line".into(),
    }
}

/// Read a job file from disk, following includes, expanding `${VAR}` with `env`.
pub fn read_job_file(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FioJob>, FioError> {
    let mut reader = Reader::new(env);
    reader.file(path, None, 0)?;
    reader.finish()
}

/// [`read_job_file`] with the file and its includes read by `read` (a command that reads
/// each input file once hands its own reader).
pub fn read_job_file_with(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<Vec<FioJob>, FioError> {
    let mut reader = Reader::new(env);
    reader.files = Files::With(read);
    reader.file(path, None, 0)?;
    reader.finish()
}

/// Parse job-file text (no includes resolved relative to a directory other than `dir`).
pub fn parse_job_text(
    text: &str,
    origin: &str,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FioJob>, FioError> {
    let mut reader = Reader::new(env);
    reader.text(text, origin, dir, 0)?;
    reader.finish()
}

/// Parse job-file text whose includes name texts of `files` (by path, relative ones
/// taken from the including file's directory, `origin`'s being the root) and nothing
/// else: an include of any other path is "no such file", and no file of the host is read.
pub fn parse_job_text_in(
    text: &str,
    origin: &str,
    files: &BTreeMap<PathBuf, String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FioJob>, FioError> {
    let mut reader = Reader::new(env);
    reader.files = Files::Memory(files);
    reader.text(text, origin, Path::new(""), 0)?;
    reader.finish()
}

/// Where included files are read from: the host's filesystem, or, through
/// [`parse_job_text_in`], a set of texts in memory, where an include names one of them or
/// nothing and the host's files are never read (the fuzz targets in `fuzz/` read so).
enum Files<'a> {
    Host,
    Memory(&'a BTreeMap<PathBuf, String>),
    /// The host's files, read through the caller's reader.
    With(&'a dyn Fn(&Path) -> std::io::Result<String>),
}

impl Files<'_> {
    fn is_file(&self, path: &Path) -> bool {
        match self {
            Files::Host | Files::With(_) => path.is_file(),
            Files::Memory(m) => m.contains_key(path),
        }
    }

    fn read(&self, path: &Path) -> std::io::Result<String> {
        match self {
            Files::Host => std::fs::read_to_string(path),
            Files::With(read) => read(path),
            Files::Memory(m) => m.get(path).cloned().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "not among the given texts")
            }),
        }
    }
}

enum Section {
    Global,
    Job(FioJob),
}

struct Reader<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    files: Files<'a>,
    globals: Vec<FioOption>,
    jobs: Vec<FioJob>,
    current: Option<Section>,
    host: Host,
}

impl<'a> Reader<'a> {
    fn new(env: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Reader {
            host: Host::detect(),
            env,
            files: Files::Host,
            globals: Vec::new(),
            jobs: Vec::new(),
            current: None,
        }
    }

    /// Read the file at `path`, included at `from` (None: the file the user named).
    fn file(&mut self, path: &Path, from: Option<&Location>, depth: usize) -> Result<(), FioError> {
        let origin = path.display().to_string();
        let text = self.files.read(path).map_err(|e| FioError::Read {
            path: origin.clone(),
            message: e.to_string(),
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        match from {
            None => self.text(&text, &origin, &dir, depth),
            Some(from) => self.included(&text, &origin, &dir, from, depth),
        }
    }

    /// An included file: read as any other, but what it shows of itself is watched, and
    /// its lines are not quoted unless it is a job file (module doc).
    fn included(
        &mut self,
        text: &str,
        origin: &str,
        dir: &Path,
        from: &Location,
        depth: usize,
    ) -> Result<(), FioError> {
        let mut seen = Seen::default();
        let outcome = self.lines(text, origin, dir, depth, Some(&mut seen));
        let not_job = |lines: &[usize], stopped: bool| FioError::Included {
            file: origin.to_string(),
            from: from.clone(),
            why: if stopped {
                format!(
                    "not a fio job file: {} are neither comments, [sections] nor options iofleet knows, so reading stopped there (its lines are not shown)",
                    line_list(lines),
                )
            } else {
                match lines {
                    [one] => format!("line {one} is neither a comment, a [section], an include nor a name=value option (an included file's lines are not shown)"),
                    _ => format!("{} are neither comments, [sections], includes nor name=value options (an included file's lines are not shown)", line_list(lines)),
                }
            },
        };
        if seen.not_a_job_file() {
            return Err(not_job(&seen.strange, true));
        }
        outcome?;
        if !seen.foreign.is_empty() {
            return Err(not_job(&seen.foreign, false));
        }
        Ok(())
    }

    fn text(&mut self, text: &str, origin: &str, dir: &Path, depth: usize) -> Result<(), FioError> {
        self.lines(text, origin, dir, depth, None)
    }

    /// The lines of one file. `seen` is given for an included file: its lines that are not
    /// job-file lines are counted there instead of quoted in an error, and reading stops
    /// once it is clearly not a job file.
    fn lines(
        &mut self,
        text: &str,
        origin: &str,
        dir: &Path,
        depth: usize,
        mut seen: Option<&mut Seen>,
    ) -> Result<(), FioError> {
        let included = seen.is_some();
        for (i, raw_line) in text.lines().enumerate() {
            if seen.as_deref().is_some_and(Seen::not_a_job_file) {
                return Ok(());
            }
            let at = Location {
                file: origin.to_string(),
                line: i + 1,
                included,
            };
            // A `;` or `#` after a value starts a comment too, as in fio.
            let line = strip_comment(raw_line);
            if line.is_empty() {
                continue;
            }
            let (name, value) = match line.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (line, None),
            };
            let is_section = line.starts_with('[') && line.ends_with(']');
            let include = line
                .strip_prefix("include")
                .filter(|f| f.starts_with(char::is_whitespace));
            if let Some(s) = seen.as_deref_mut() {
                if !s.shows(at.line, name, is_section || include.is_some()) {
                    continue;
                }
            }
            if let Some(rest) = line.strip_prefix('[') {
                self.section(line, rest, at)?;
            } else if let Some(file) = include {
                self.include(file, dir, &at, depth)?;
            } else {
                self.option(line, name, value, at)?;
            }
        }
        Ok(())
    }

    /// A section header, `[name]` (`line`, `rest` after its `[`): the section before it
    /// closes and a job or `[global]` opens.
    fn section(&mut self, line: &str, rest: &str, at: Location) -> Result<(), FioError> {
        let name = rest.strip_suffix(']').map(str::trim).ok_or_else(|| {
            FioError::syntax(&at, format!("section header '{line}' has no closing ']'"))
        })?;
        if name.is_empty() {
            return Err(FioError::syntax(&at, "empty section name '[]'"));
        }
        self.close();
        self.current = Some(if name == "global" {
            Section::Global
        } else {
            if self.jobs.iter().any(|j| j.name == name) {
                return Err(FioError::syntax(
                    &at,
                    format!("job [{name}] is defined twice; iofleet names each worker group after its job"),
                ));
            }
            Section::Job(FioJob {
                name: name.to_string(),
                at,
                options: self.globals.clone(),
            })
        });
        Ok(())
    }

    /// `include FILE` (`file`, after the word): the file is read in place, a relative
    /// path taken from `dir`, the including file's directory.
    fn include(
        &mut self,
        file: &str,
        dir: &Path,
        at: &Location,
        depth: usize,
    ) -> Result<(), FioError> {
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(FioError::syntax(
                at,
                format!("include nested deeper than {MAX_INCLUDE_DEPTH} files (does a file include itself?)"),
            ));
        }
        let file = self.expand(file.trim(), at)?;
        let p = PathBuf::from(&file);
        let p = if p.is_absolute() { p } else { dir.join(p) };
        if !self.files.is_file(&p) {
            return Err(FioError::syntax(
                at,
                format!("include {file}: no such file ({})", p.display()),
            ));
        }
        self.file(&p, Some(at), depth + 1)
    }

    /// An option, `name=value` or a bare `name` (`line` as written): it joins the section
    /// it is in, its value's `${VAR}`s expanded.
    fn option(
        &mut self,
        line: &str,
        name: &str,
        value: Option<&str>,
        at: Location,
    ) -> Result<(), FioError> {
        if !is_option_name(name) {
            return Err(FioError::syntax(
                &at,
                format!("'{line}' is not an option (expected name=value or name; a name is letters, digits and '_')"),
            ));
        }
        let value = match value {
            Some(v) => {
                let v = self.expand(v, &at)?;
                let value = evaluate(&v, &self.host).map_err(|e| {
                    if at.included {
                        // An included file's values are not quoted (module doc).
                        FioError::syntax(&at, "a value that is not a valid expression (an included file's values are not shown)")
                    } else {
                        FioError::syntax(&at, e)
                    }
                })?;
                Some(value)
            }
            None => None,
        };
        let opt = FioOption {
            name: name.to_ascii_lowercase(),
            value,
            at,
        };
        match &mut self.current {
            Some(Section::Job(job)) => job.options.push(opt),
            Some(Section::Global) => self.globals.push(opt),
            None => {
                return Err(FioError::syntax(
                    &opt.at,
                    format!(
                        "option {} comes before any section; put it under [global] or a [job]",
                        opt.shown_name()
                    ),
                ))
            }
        }
        Ok(())
    }

    /// Replace every `${VAR}` in `value` by its environment value.
    fn expand(&self, value: &str, at: &Location) -> Result<String, FioError> {
        let mut out = String::new();
        let mut rest = value;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after.find('}').ok_or_else(|| {
                if at.included {
                    FioError::syntax(at, "'${' without a closing '}'")
                } else {
                    FioError::syntax(at, format!("'${{' without a closing '}}' in '{value}'"))
                }
            })?;
            let var = &after[..end];
            match (self.env)(var) {
                Some(v) => out.push_str(&v),
                None => {
                    return Err(FioError::syntax(
                        at,
                        format!("environment variable {var} (in ${{{var}}}) is not set"),
                    ))
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn close(&mut self) {
        if let Some(Section::Job(job)) = self.current.take() {
            self.jobs.push(job);
        }
    }

    fn finish(mut self) -> Result<Vec<FioJob>, FioError> {
        self.close();
        if self.jobs.is_empty() {
            return Err(FioError::NoJobs);
        }
        Ok(self.jobs)
    }
}

/// The line without blanks around it and without a comment: everything from the first
/// `;` or `#` on (a whole-line comment leaves nothing).
fn strip_comment(line: &str) -> &str {
    line.split([';', '#']).next().unwrap_or("").trim()
}

/// What fio's reserved keywords stand for on this machine: `$ncpus` (online CPUs),
/// `$mb_memory` (physical memory in MiB) and `$pagesize` (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Host {
    pub ncpus: u64,
    pub mb_memory: u64,
    pub pagesize: u64,
}

impl Host {
    /// This machine's values: the memory from `/proc/meminfo`, the page size from
    /// `/proc/self/smaps` (4096 when it cannot be read).
    pub fn detect() -> Host {
        let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        let mb_memory = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(1024, |kb| kb / 1024);
        let pagesize = std::fs::read_to_string("/proc/self/smaps")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("KernelPageSize:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(4096, |kb| kb * 1024);
        Host {
            ncpus,
            mb_memory,
            pagesize,
        }
    }
}

/// Most characters an arithmetic expression may have (a bound on the evaluator's work
/// and recursion).
const MAX_EXPRESSION: usize = 256;

/// A value with fio's reserved keywords replaced and, when it is an expression, its
/// result: a value in parentheses, or one in which a keyword was replaced and that holds
/// an operator (`size=$mb_memory/4`), is evaluated (`+ - * / % ^` and parentheses over
/// numbers with size suffixes, powers of 1024), the result truncated to a whole number.
/// Any other value is returned with only its keywords replaced.
pub(crate) fn evaluate(value: &str, host: &Host) -> Result<String, String> {
    let mut text = value.to_string();
    let mut replaced = false;
    for (word, n) in [
        ("$ncpus", host.ncpus),
        ("$mb_memory", host.mb_memory),
        ("$pagesize", host.pagesize),
    ] {
        if text.contains(word) {
            text = text.replace(word, &n.to_string());
            replaced = true;
        }
    }
    let t = text.trim();
    let has_operator = t
        .char_indices()
        .any(|(i, c)| "+*/%^()".contains(c) || (c == '-' && i > 0));
    if !(t.starts_with('(') || (replaced && has_operator)) {
        return Ok(text);
    }
    if t.len() > MAX_EXPRESSION {
        return Err(format!(
            "expression '{}...' is longer than {MAX_EXPRESSION} characters",
            &t[..t.char_indices().nth(40).map_or(t.len(), |(i, _)| i)]
        ));
    }
    let mut e = Expr {
        s: t.as_bytes(),
        i: 0,
    };
    let x = e.sum().map_err(|why| format!("expression '{t}': {why}"))?;
    e.blanks();
    if e.i != e.s.len() {
        return Err(format!("expression '{t}': unexpected '{}'", &t[e.i..]));
    }
    if !x.is_finite() || x < 0.0 || x >= u64::MAX as f64 {
        return Err(format!(
            "expression '{t}' gives {x}, not a whole number of 0 or more"
        ));
    }
    Ok((x.trunc() as u64).to_string())
}

/// A recursive-descent reader of an arithmetic expression (`evaluate`).
struct Expr<'a> {
    s: &'a [u8],
    i: usize,
}

impl Expr<'_> {
    fn blanks(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.blanks();
        self.s.get(self.i).copied()
    }

    fn sum(&mut self) -> Result<f64, String> {
        let mut x = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let y = self.product()?;
            x = if op == b'+' { x + y } else { x - y };
        }
        Ok(x)
    }

    fn product(&mut self) -> Result<f64, String> {
        let mut x = self.power()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            let y = self.power()?;
            if op != b'*' && y == 0.0 {
                return Err("division by zero".into());
            }
            x = match op {
                b'*' => x * y,
                b'/' => x / y,
                _ => x % y,
            };
        }
        Ok(x)
    }

    fn power(&mut self) -> Result<f64, String> {
        let x = self.unary()?;
        if self.peek() == Some(b'^') {
            self.i += 1;
            let y = self.power()?;
            return Ok(x.powf(y));
        }
        Ok(x)
    }

    fn unary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                Ok(-self.unary()?)
            }
            Some(b'(') => {
                self.i += 1;
                let x = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err("a '(' without its ')'".into());
                }
                self.i += 1;
                Ok(x)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let start = self.i;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'.')
                {
                    self.i += 1;
                }
                let word = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                match word.parse::<f64>() {
                    Ok(x) => Ok(x),
                    Err(_) => super::size::fio_size(word, 1024).map(|n| n as f64),
                }
            }
            Some(c) => Err(format!("unexpected '{}'", c as char)),
            None => Err("ends where a number was expected".into()),
        }
    }
}

/// What iofleet makes of an option name: the vocabulary this reader needs (to tell a job
/// file from another file, and whether a name may be quoted) and the mapping gives its
/// meaning to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Known {
    /// The mapping reads it.
    Mapped,
    /// It has no effect to map: iofleet already behaves as it asks.
    Accepted,
    /// It does not change the I/O stream (logging, reporting, timing source, engine
    /// tuning): accepted with one notice, for this reason.
    Noticed(&'static str),
    /// iofleet cannot run it, for this reason.
    Unsupported(&'static str),
}

/// What iofleet makes of option `name` (lower case); None for a name it does not know.
pub(super) fn known(name: &str) -> Option<Known> {
    if MAPPED.contains(&name) {
        Some(Known::Mapped)
    } else if ACCEPTED.contains(&name) {
        Some(Known::Accepted)
    } else if let Some((_, why)) = NOTICED.iter().find(|(n, _)| *n == name) {
        Some(Known::Noticed(why))
    } else {
        UNSUPPORTED
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, why)| Known::Unsupported(why))
    }
}

/// Option names that the mapping (`map`) reads.
const MAPPED: &[&str] = &[
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "blocksize",
    "bssplit",
    "bsrange",
    "blocksize_range",
    "iodepth",
    "numjobs",
    "size",
    "filesize",
    "sync",
    "filename",
    "directory",
    "nrfiles",
    "direct",
    "buffered",
    "ioengine",
    "runtime",
    "timeout",
    "time_based",
    "ramp_time",
    "rate_iops",
    "rate",
    "rate_process",
    "random_distribution",
    "percentage_random",
    "randrepeat",
    "randseed",
    "verify",
    "stonewall",
    "wait_for_previous",
    "blockalign",
    "ba",
];

const LOGGING: &str = "fio's own logs; iofleet keeps its per-interval series in the result (--interval) and its per-I/O latencies in histograms";
const REPORTING: &str =
    "how fio reports; iofleet reports every group and the total, with its own percentiles";
const CLOCK: &str = "how fio reads the clock; iofleet's timing is its own";
const ENGINE_TUNING: &str = "how an engine submits or reaps I/O; iofleet's engines keep the queue at iodepth, the offsets and sizes are unchanged";
const LAYOUT: &str =
    "how fio creates or removes its files; iofleet lays out its own disks under the target";
const BUFFERS: &str = "where fio keeps its I/O buffers; iofleet allocates its own aligned buffers, and the written data is set by [data] / --pattern";
const SCHEDULING: &str =
    "process scheduling of fio's jobs; run iofleet under nice/ionice/taskset for that";

/// Options that do not change the I/O stream: accepted with one notice each, saying why.
const NOTICED: &[(&str, &str)] = &[
    ("write_bw_log", LOGGING),
    ("write_lat_log", LOGGING),
    ("write_iops_log", LOGGING),
    ("write_hist_log", LOGGING),
    ("write_iolog", LOGGING),
    ("log_avg_msec", LOGGING),
    ("log_hist_msec", LOGGING),
    ("log_hist_coarseness", LOGGING),
    ("log_max_value", LOGGING),
    ("log_offset", LOGGING),
    ("log_prio", LOGGING),
    ("log_compression", LOGGING),
    ("log_store_compressed", LOGGING),
    ("log_unix_epoch", LOGGING),
    ("log_alternate_epoch", LOGGING),
    ("per_job_logs", LOGGING),
    ("clat_percentiles", REPORTING),
    ("lat_percentiles", REPORTING),
    ("slat_percentiles", REPORTING),
    ("percentile_list", REPORTING),
    ("significant_figures", REPORTING),
    ("disable_lat", REPORTING),
    ("disable_clat", REPORTING),
    ("disable_slat", REPORTING),
    ("disable_bw_measurement", REPORTING),
    ("disable_bw", REPORTING),
    ("unified_rw_reporting", REPORTING),
    ("stats", REPORTING),
    ("unit_base", REPORTING),
    ("disk_util", REPORTING),
    ("eta", REPORTING),
    ("eta_newline", REPORTING),
    ("eta_interval", REPORTING),
    ("status_interval", REPORTING),
    ("gtod_reduce", CLOCK),
    ("gtod_cpu", CLOCK),
    ("clocksource", CLOCK),
    ("io_submit_mode", ENGINE_TUNING),
    ("iodepth_batch", ENGINE_TUNING),
    ("iodepth_batch_submit", ENGINE_TUNING),
    ("iodepth_batch_complete", ENGINE_TUNING),
    ("iodepth_batch_complete_min", ENGINE_TUNING),
    ("iodepth_batch_complete_max", ENGINE_TUNING),
    ("iodepth_low", ENGINE_TUNING),
    ("userspace_reap", ENGINE_TUNING),
    ("hipri", ENGINE_TUNING),
    ("fixedbufs", ENGINE_TUNING),
    ("registerfiles", ENGINE_TUNING),
    ("sqthread_poll", ENGINE_TUNING),
    ("sqthread_poll_cpu", ENGINE_TUNING),
    ("nonvectored", ENGINE_TUNING),
    ("fadvise_hint", ENGINE_TUNING),
    ("random_generator", "the generator behind fio's random offsets; iofleet draws them from its seeded generator with the same distribution"),
    ("allrandrepeat", "iofleet repeats every random sequence of its --seed"),
    ("create_serialize", LAYOUT),
    ("create_fsync", LAYOUT),
    ("create_on_open", LAYOUT),
    ("allow_file_create", LAYOUT),
    ("fallocate", LAYOUT),
    ("overwrite", LAYOUT),
    ("unlink", LAYOUT),
    ("unlink_each_loop", LAYOUT),
    ("mem", BUFFERS),
    ("iomem", BUFFERS),
    ("mem_align", BUFFERS),
    ("iomem_align", BUFFERS),
    ("lockmem", BUFFERS),
    ("scramble_buffers", BUFFERS),
    ("zero_buffers", BUFFERS),
    ("nice", SCHEDULING),
    ("prio", SCHEDULING),
    ("prioclass", SCHEDULING),
    ("exitall", "iofleet's groups all run the same duration and end together"),
    ("exitall_on_error", "iofleet does not stop every group at the first I/O error: it takes the failing disk out and exits 5 (docs/data.md)"),
    ("filename_format", LAYOUT),
    (
        "invalidate",
        "iofleet does not drop the page cache before a run; with direct I/O (its default) reads do not come from it",
    ),
];

/// Options with no effect to map: iofleet already behaves as they ask.
const ACCEPTED: &[&str] = &[
    "name",
    "description",
    "kb_base",
    "thread",
    "group_reporting",
    "new_group",
    "norandommap",
];

/// Options iofleet knows but cannot run, with the reason.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("fsync", "iofleet issues no flushes of its own (no fsync calls); sync=dsync (data.write_through) makes each write durable instead"),
    ("fdatasync", "iofleet issues no flushes"),
    ("end_fsync", "iofleet issues no flushes"),
    (
        "offset",
        "disks are addressed from their start (working_set_pct)",
    ),
    ("offset_increment", "disks are addressed from their start"),
    ("io_size", "iofleet runs for a duration, not a byte count"),
    ("io_limit", "iofleet runs for a duration, not a byte count"),
    (
        "number_ios",
        "iofleet runs for a duration, not an I/O count",
    ),
    (
        "loops",
        "iofleet runs for a duration; repeat runs with `iofleet sweep` or a script",
    ),
    ("startdelay", "all groups start together on one timeline"),
    ("ratemin", "iofleet has no minimum-rate abort; check a result's rate afterwards (iofleet compare)"),
    ("latency_target", "iofleet does not lower the queue depth to meet a latency; iofleet find-max --slo searches for the rate that meets one"),
    ("latency_window", "goes with latency_target (iofleet find-max --slo)"),
    ("latency_percentile", "goes with latency_target (iofleet find-max --slo)"),
    ("max_latency", "iofleet does not abort on a latency; iofleet find-max --slo searches for the rate that meets one"),
    ("thinktime", "iofleet has no pause between I/Os; pace them with rate_iops"),
    ("read_iolog", "iofleet does not replay fio I/O logs"),
    ("exec_prerun", "iofleet does not run commands named in a job file"),
    ("exec_postrun", "iofleet does not run commands named in a job file"),
    ("rate_min", "iofleet has no minimum-rate abort"),
    ("rate_iops_min", "iofleet has no minimum-rate abort"),
    ("zonemode", "zoned devices are not supported"),
    (
        "cpus_allowed",
        "use the --cpus flag (fleet.cpus) for the whole run",
    ),
    (
        "refill_buffers",
        "written data is set by [data] / --pattern",
    ),
    (
        "buffer_compress_percentage",
        "use --compress-ratio ([data] compress_ratio)",
    ),
    (
        "dedupe_percentage",
        "use --dedupe-ratio ([data] dedupe_ratio)",
    ),
    ("fsync_on_close", "iofleet issues no flushes"),
    ("create_only", "iofleet lays out its disks and runs; there is no layout-only job"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn env(v: &str) -> Option<String> {
        (v == "SIZE").then(|| "64m".to_string())
    }

    #[test]
    fn globals_apply_to_the_jobs_after_them() {
        let text =
            "; comment\n[global]\nbs=4k\n# another\n[a]\nrw=read\n[global]\nbs=8k\n[b]\ndirect\n";
        let jobs = parse_job_text(text, "t.fio", Path::new("."), &env).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].name, "a");
        assert_eq!(jobs[0].get(&["bs"]).unwrap().value.as_deref(), Some("4k"));
        assert_eq!(jobs[1].get(&["bs"]).unwrap().value.as_deref(), Some("8k"));
        let d = jobs[1].get(&["direct"]).unwrap();
        assert_eq!(d.value, None);
        assert_eq!(d.at.line, 10);
        assert!(jobs[0].get(&["direct"]).is_none());
    }

    #[test]
    fn variables_expand_and_an_unset_one_is_named() {
        let jobs = parse_job_text("[a]\nsize=${SIZE}\n", "t.fio", Path::new("."), &env).unwrap();
        assert_eq!(
            jobs[0].get(&["size"]).unwrap().value.as_deref(),
            Some("64m")
        );
        let e = parse_job_text("[a]\nsize=${NOPE}\n", "t.fio", Path::new("."), &env).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.fio:2: environment variable NOPE (in ${NOPE}) is not set"
        );
    }

    #[test]
    fn options_outside_a_section_and_empty_files_are_refused() {
        let e = parse_job_text("bs=4k\n[a]\n", "t.fio", Path::new("."), &env).unwrap_err();
        assert!(e.to_string().starts_with("t.fio:1: option bs"), "{e}");
        let e = parse_job_text("[global]\nbs=4k\n", "t.fio", Path::new("."), &env).unwrap_err();
        assert!(e.to_string().contains("no job section"), "{e}");
    }

    #[test]
    fn include_reads_a_file_relative_to_the_including_one() {
        let dir = std::env::temp_dir().join(format!("iofleet-fio-inc-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/common.fio"), "[global]\nbs=${SIZE}\n").unwrap();
        std::fs::write(
            dir.join("main.fio"),
            "include sub/common.fio\n[a]\nrw=read\n",
        )
        .unwrap();
        let jobs = read_job_file(&dir.join("main.fio"), &env).unwrap();
        let bs = jobs[0].get(&["bs"]).unwrap();
        assert_eq!(bs.value.as_deref(), Some("64m"));
        assert!(bs.at.file.ends_with("sub/common.fio"), "{}", bs.at);
        assert_eq!(bs.at.line, 2);
        std::fs::write(dir.join("main.fio"), "include nope.fio\n[a]\n").unwrap();
        let e = read_job_file(&dir.join("main.fio"), &env).unwrap_err();
        assert!(
            e.to_string().contains(":1: include nope.fio: no such file"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file of shadow-like lines, included: the error names it, where it was included
    /// and its line numbers, and quotes none of its text.
    #[test]
    fn an_included_file_that_is_not_a_job_file_is_never_quoted() {
        let dir = std::env::temp_dir().join(format!("iofleet-fio-shadow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let secret = [
            "root:$6$Zq8salt$SECRETHASHroot:19000:0:99999:7:::",
            "daemon:*:19000:0:99999:7:::",
            "hunter2",
            "[oops",
            "SECRETWORD=SECRETVALUE",
        ];
        let shadow = dir.join("shadow");
        std::fs::write(&shadow, secret.join("\n")).unwrap();
        let main = dir.join("main.fio");
        let check = |text: &str, want: &str| {
            std::fs::write(&main, text).unwrap();
            let e = read_job_file(&main, &env).unwrap_err().to_string();
            for line in &secret {
                for part in line.split([':', '$', '=', '[']).filter(|p| p.len() > 3) {
                    assert!(!e.contains(part), "{part} quoted in: {e}");
                }
            }
            assert!(e.contains(want), "{e}");
            assert!(e.contains("main.fio:"), "{e}");
        };
        // Lines 1, 2 and 3 (the third an unknown bare name) end the reading.
        check(
            "[a]\nrw=read\ninclude shadow\n",
            "not a fio job file: lines 1, 2 and 3 are neither",
        );
        // Before any section: the same.
        check("include shadow\n[a]\n", "lines 1, 2 and 3");
        // A file whose options iofleet knows is a job file: a line that is not one is
        // named by number only, as an unknown option's name is.
        std::fs::write(&shadow, "bs=4k\nhunter2\nroot:$6$x\n").unwrap();
        std::fs::write(&main, "[a]\ninclude shadow\n").unwrap();
        let e = read_job_file(&main, &env).unwrap_err().to_string();
        assert!(
            e.contains("line 3 is neither a comment") && !e.contains("root"),
            "{e}"
        );
        std::fs::write(&shadow, "bs=4k\nhunter2\n").unwrap();
        let jobs = read_job_file(&main, &env).unwrap();
        let unknown = jobs[0].get(&["hunter2"]).unwrap();
        assert!(unknown.at.included);
        assert_eq!(
            unknown.shown_name(),
            "(not shown: an unknown name in an included file)"
        );
        assert_eq!(jobs[0].get(&["bs"]).unwrap().shown_name(), "bs");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_named_file_is_quoted_and_names_are_fio_names() {
        let e = parse_job_text("[a]\nbs 4k\n", "t.fio", Path::new("."), &env).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.fio:2: 'bs 4k' is not an option"),
            "{e}"
        );
        let e = parse_job_text("[a]\nroot:x=1\n", "t.fio", Path::new("."), &env).unwrap_err();
        assert!(e.to_string().contains("'root:x=1' is not an option"), "{e}");
        let jobs = parse_job_text("[a]\nhunter2\n", "t.fio", Path::new("."), &env).unwrap();
        assert_eq!(jobs[0].get(&["hunter2"]).unwrap().shown_name(), "hunter2");
    }

    #[test]
    fn a_semicolon_or_hash_after_a_value_starts_a_comment() {
        let text = "[global]\nbs=4k ; block size\n[a] # the job\nrw=randread# comment\ndirect ;\n";
        let jobs = parse_job_text(text, "t.fio", Path::new("."), &env).unwrap();
        assert_eq!(jobs[0].name, "a");
        assert_eq!(jobs[0].get(&["bs"]).unwrap().value.as_deref(), Some("4k"));
        assert_eq!(
            jobs[0].get(&["rw"]).unwrap().value.as_deref(),
            Some("randread")
        );
        assert_eq!(jobs[0].get(&["direct"]).unwrap().value, None);
        assert_eq!(strip_comment("  ; all comment"), "");
        assert_eq!(strip_comment("size=1g#x;y"), "size=1g");
    }

    const HOST: Host = Host {
        ncpus: 6,
        mb_memory: 8000,
        pagesize: 4096,
    };

    #[test]
    fn keywords_are_replaced_and_expressions_evaluated() {
        assert_eq!(evaluate("$ncpus", &HOST).unwrap(), "6");
        assert_eq!(evaluate("$mb_memory/4", &HOST).unwrap(), "2000");
        assert_eq!(evaluate("$pagesize", &HOST).unwrap(), "4096");
        assert_eq!(evaluate("$ncpus*2+1", &HOST).unwrap(), "13");
        assert_eq!(evaluate("(4k*2)", &HOST).unwrap(), "8192");
        assert_eq!(evaluate("(2^10 - 24) % 1000", &HOST).unwrap(), "0");
        assert_eq!(evaluate("(10/4)", &HOST).unwrap(), "2");
        assert_eq!(evaluate("((1+2)*(3+4))", &HOST).unwrap(), "21");
        assert_eq!(evaluate("(-3+5)", &HOST).unwrap(), "2");
        // Values that are not expressions are left as written.
        assert_eq!(evaluate("4k-64k", &HOST).unwrap(), "4k-64k");
        assert_eq!(evaluate("4k/10:64k/90", &HOST).unwrap(), "4k/10:64k/90");
        assert_eq!(evaluate("randread", &HOST).unwrap(), "randread");
        assert_eq!(evaluate("$ncpus", &HOST).unwrap(), "6");
        // Errors say what is wrong with the expression.
        let e = evaluate("(4k/0)", &HOST).unwrap_err();
        assert!(e.contains("division by zero"), "{e}");
        let e = evaluate("(1+2", &HOST).unwrap_err();
        assert!(e.contains("without its ')'"), "{e}");
        let e = evaluate("(1-2)", &HOST).unwrap_err();
        assert!(e.contains("not a whole number of 0 or more"), "{e}");
        let e = evaluate("(1+x)", &HOST).unwrap_err();
        assert!(e.contains("unexpected 'x'"), "{e}");
        let long = format!("({})", "1+".repeat(200) + "1");
        assert!(evaluate(&long, &HOST).unwrap_err().contains("longer than"));
    }

    #[test]
    fn an_expression_error_names_the_file_and_line() {
        let e = parse_job_text("[a]\nsize=(1+)\n", "t.fio", Path::new("."), &env).unwrap_err();
        assert!(
            e.to_string().starts_with("t.fio:2: expression '(1+)'"),
            "{e}"
        );
        let jobs =
            parse_job_text("[a]\nnumjobs=(2*3) ; six\n", "t.fio", Path::new("."), &env).unwrap();
        assert_eq!(
            jobs[0].get(&["numjobs"]).unwrap().value.as_deref(),
            Some("6")
        );
    }

    #[test]
    fn the_host_has_cpus_memory_and_a_page_size() {
        let h = Host::detect();
        assert!(
            h.ncpus >= 1 && h.mb_memory >= 1 && h.pagesize >= 4096,
            "{h:?}"
        );
    }

    #[test]
    fn logging_options_are_noticed_and_exec_is_refused() {
        assert!(matches!(known("write_bw_log"), Some(Known::Noticed(_))));
        assert!(matches!(known("gtod_reduce"), Some(Known::Noticed(_))));
        assert!(matches!(known("blockalign"), Some(Known::Mapped)));
        assert!(matches!(known("exec_prerun"), Some(Known::Unsupported(_))));
        for (n, _) in NOTICED {
            assert!(
                !MAPPED.contains(n) && !ACCEPTED.contains(n),
                "{n} listed twice"
            );
            assert!(!UNSUPPORTED.iter().any(|(u, _)| u == n), "{n} listed twice");
        }
    }

    /// An expression of small whole numbers, written out, and its value: sums, products
    /// and differences that stay at 0 or more, so that the value is exact.
    fn expression() -> impl proptest::strategy::Strategy<Value = (String, i64)> {
        use proptest::prelude::*;
        let leaf = (0i64..10).prop_map(|n| (n.to_string(), n));
        leaf.prop_recursive(3, 8, 2, |inner| {
            (inner.clone(), inner, 0..3usize).prop_map(|((a, x), (b, y), op)| match op {
                0 => (format!("({a} + {b})"), x + y),
                1 => (format!("({a}*{b})"), x * y),
                _ => (format!("(({a}+{b}) - {b})"), x),
            })
        })
    }

    proptest::proptest! {
        #[test]
        fn an_expression_evaluates_to_its_value((text, value) in expression()) {
            let got = evaluate(&format!("({text})"), &HOST);
            proptest::prop_assert_eq!(got, Ok(value.to_string()));
        }

        #[test]
        fn any_value_evaluates_or_is_refused_without_panicking(v in "[-+*/%^()0-9kmg $a-z_.;#]{0,60}") {
            // Never panics; a value that is not an expression comes back as written.
            if let Ok(out) = evaluate(&v, &HOST) {
                let expression = v.trim().starts_with('(') || v.contains('$');
                proptest::prop_assert!(expression || out == v, "{v} -> {out}");
            }
            let line = format!("bs={v}");
            let kept = strip_comment(&line);
            proptest::prop_assert!(!kept.contains(';') && !kept.contains('#'));
            proptest::prop_assert!(line.starts_with(kept));
        }
    }
}
