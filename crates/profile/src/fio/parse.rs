//! fio's job-file grammar, read into jobs with located options; no meaning is given here.
//!
//! A job file is ini-like: `[name]` starts a job section, `[global]` a section whose
//! options become the defaults of every job after it (several `[global]` sections may
//! appear; each affects only the jobs below it). A line whose first non-blank character is
//! `;` or `#` is a comment. `include FILE` reads another file in place (a relative path is
//! taken from the including file's directory). `${VAR}` in a value is replaced by the
//! environment variable VAR; an unset one is an error naming it. An option is `name=value`
//! or a bare `name` (a boolean option set). Every option keeps its file and line so that
//! the mapping (`map`) can name where an unsupported option was written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::FioError;

/// Where an option or section was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: usize,
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

/// Read a job file from disk, following includes, expanding `${VAR}` with `env`.
pub fn read_job_file(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FioJob>, FioError> {
    let mut reader = Reader::new(env);
    reader.file(path, 0)?;
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
}

impl Files<'_> {
    fn is_file(&self, path: &Path) -> bool {
        match self {
            Files::Host => path.is_file(),
            Files::Memory(m) => m.contains_key(path),
        }
    }

    fn read(&self, path: &Path) -> std::io::Result<String> {
        match self {
            Files::Host => std::fs::read_to_string(path),
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
}

impl<'a> Reader<'a> {
    fn new(env: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Reader {
            env,
            files: Files::Host,
            globals: Vec::new(),
            jobs: Vec::new(),
            current: None,
        }
    }

    fn file(&mut self, path: &Path, depth: usize) -> Result<(), FioError> {
        let origin = path.display().to_string();
        let text = self.files.read(path).map_err(|e| FioError::Read {
            path: origin.clone(),
            message: e.to_string(),
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        self.text(&text, &origin, &dir, depth)
    }

    fn text(&mut self, text: &str, origin: &str, dir: &Path, depth: usize) -> Result<(), FioError> {
        for (i, raw_line) in text.lines().enumerate() {
            let at = Location {
                file: origin.to_string(),
                line: i + 1,
            };
            let line = raw_line.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
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
                        at: at.clone(),
                        options: self.globals.clone(),
                    })
                });
                continue;
            }
            if let Some(file) = line.strip_prefix("include") {
                if file.starts_with(char::is_whitespace) {
                    if depth >= MAX_INCLUDE_DEPTH {
                        return Err(FioError::syntax(
                            &at,
                            format!("include nested deeper than {MAX_INCLUDE_DEPTH} files (does a file include itself?)"),
                        ));
                    }
                    let file = self.expand(file.trim(), &at)?;
                    let p = PathBuf::from(&file);
                    let p = if p.is_absolute() { p } else { dir.join(p) };
                    if !self.files.is_file(&p) {
                        return Err(FioError::syntax(
                            &at,
                            format!("include {file}: no such file ({})", p.display()),
                        ));
                    }
                    self.file(&p, depth + 1)?;
                    continue;
                }
            }
            let (name, value) = match line.split_once('=') {
                Some((n, v)) => (n.trim(), Some(self.expand(v.trim(), &at)?)),
                None => (line, None),
            };
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(FioError::syntax(
                    &at,
                    format!("'{line}' is not an option (expected name=value or name)"),
                ));
            }
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
                            opt.name
                        ),
                    ))
                }
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
                FioError::syntax(at, format!("'${{' without a closing '}}' in '{value}'"))
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
}
