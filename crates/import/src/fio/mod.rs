//! fio job files as iofleet workloads: `parse` reads fio's job-file grammar into jobs
//! with located options; `map` turns each job into the raw profile of one worker group,
//! with notices for every difference and an error for every option iofleet cannot run;
//! `size` is fio's size grammar, which both read.
//!
//! This module knows nothing about engines, targets or flags: the engine a job asks for
//! and its direct-I/O setting come back as plain values for the CLI to apply. Mapping
//! choices and the option table are documented in docs/fio.md.

mod map;
mod parse;
mod size;

pub use map::{import, phases, FioDirectory, FioGroup, FioImport};
pub use parse::{
    parse_job_text, parse_job_text_in, read_job_file, read_job_file_with, FioJob, FioOption,
    Location,
};

use thiserror::Error;

/// One option iofleet cannot run, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub at: Location,
    pub option: String,
    pub message: String,
}

/// Why a fio job file could not be read or mapped.
#[derive(Debug, Error)]
pub enum FioError {
    #[error("cannot read fio job file {path}: {message}")]
    Read { path: String, message: String },
    #[error("{at}: {message}")]
    Syntax { at: Location, message: String },
    #[error("the fio job file has no job section (only [global]); add a [job] section")]
    NoJobs,
    /// Lines of an included file that are not job-file lines: named by number, never
    /// quoted (the file may be any file at all).
    #[error("{file} (included at {from}): {why}")]
    Included {
        file: String,
        from: Location,
        why: String,
    },
    #[error("--fio-job {name}: the job file has no job [{name}]; its jobs are: {}", .jobs.join(", "))]
    NoSuchJob { name: String, jobs: Vec<String> },
    /// Every unsupported or unknown option, each with its file, line and name.
    #[error("{}", problems_text(.0))]
    Unsupported(Vec<Problem>),
}

impl FioError {
    pub(crate) fn syntax(at: &Location, message: impl Into<String>) -> Self {
        FioError::Syntax {
            at: at.clone(),
            message: message.into(),
        }
    }
}

/// The fio option(s) a profile key comes from, to name beside a `validate` error about a
/// mapped profile (`fleet.disk_size` → `size`). `key` may carry a stream index and name.
pub fn option_of_key(key: &str) -> Option<&'static str> {
    let last = key.rsplit('.').next().unwrap_or(key);
    Some(match (key.split('.').next().unwrap_or(""), last) {
        ("fleet", "workers") => "numjobs",
        ("fleet", "qd") => "iodepth",
        ("fleet", "disk_size") => "size",
        ("fleet", "disks_per_worker") => "nrfiles or filename",
        ("timing", "duration") => "runtime",
        ("timing", "warmup") => "ramp_time",
        ("timing", "rate_iops") => "rate_iops or rate",
        (_, "bs") => "bs, bssplit or bsrange",
        (_, "align") => "blockalign, or bs when it is not given",
        (_, "read_pct") | (_, "weight") => "rwmixread or rwmixwrite",
        (_, "random_pct") => "percentage_random",
        (_, "zipf") | (_, "hot_bands") => "random_distribution",
        (_, "working_set_pct") => "size",
        _ => return None,
    })
}

/// The jobs named in `only`, in file order (all jobs when `only` is empty). A job keeps
/// the global options it had in the file.
pub fn select(jobs: Vec<FioJob>, only: &[String]) -> Result<Vec<FioJob>, FioError> {
    if let Some(name) = only.iter().find(|n| !jobs.iter().any(|j| &j.name == *n)) {
        return Err(FioError::NoSuchJob {
            name: name.clone(),
            jobs: jobs.iter().map(|j| j.name.clone()).collect(),
        });
    }
    if only.is_empty() {
        return Ok(jobs);
    }
    Ok(jobs
        .into_iter()
        .filter(|j| only.contains(&j.name))
        .collect())
}

fn problems_text(problems: &[Problem]) -> String {
    let mut s = format!(
        "{} fio option(s) iofleet cannot run as written:",
        problems.len()
    );
    for p in problems {
        s.push_str(&format!("\n  {}: {}: {}", p.at, p.option, p.message));
    }
    s.push_str("\n(--fio-ignore OPTION runs without an option, with a notice; see docs/fio.md)");
    s
}
