//! vdbench parameter files as iofleet workloads (docs/vdbench.md): `parse` reads the
//! file's grammar (general parameters, `sd`/`wd`/`rd`/`hd` definitions with their
//! `default`s, continuation lines, comments) into located parameters; `map` turns each
//! `rd` into steps (one per `iorate` and `for...` loop value), each the raw profile of
//! one worker, with a notice for every parameter that does not change the I/O and an
//! error naming the file and line of each one iofleet cannot run.
//!
//! Parameter meanings follow vdbench's user guide (Oracle, version 5.04). Like `fio` and
//! `diskspd`, this module knows nothing about engines or targets: the luns and the
//! direct-I/O setting come back as plain values for the CLI to apply.

mod map;
mod parse;

use std::path::Path;

pub use map::{import, VdbenchImport, VdbenchStep, MAX_STEPS};
pub use parse::{parse_text, Definition, Kind, Param, ParamFile};

use crate::fio::Location;
use thiserror::Error;

/// One parameter iofleet cannot run, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub at: Location,
    pub parameter: String,
    pub message: String,
}

/// Why a parameter file could not be read or mapped.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum VdbenchError {
    #[error("cannot read vdbench parameter file {path}: {message}")]
    Read { path: String, message: String },
    #[error("{at}: {message}")]
    Syntax { at: Location, message: String },
    #[error("the vdbench parameter file has no run definition (rd=...); add one, e.g. rd=run1,wd=wd1,iorate=max,elapsed=60")]
    NoRuns,
    /// Every parameter iofleet cannot run, each with its file, line and name.
    #[error("{}", problems_text(.0))]
    Unsupported(Vec<Problem>),
}

impl VdbenchError {
    pub(crate) fn syntax(at: &Location, message: impl Into<String>) -> Self {
        VdbenchError::Syntax {
            at: at.clone(),
            message: message.into(),
        }
    }
}

fn problems_text(problems: &[Problem]) -> String {
    let mut s = format!(
        "{} vdbench parameter(s) iofleet cannot run as written:",
        problems.len()
    );
    for p in problems {
        s.push_str(&format!("\n  {}: {}: {}", p.at, p.parameter, p.message));
    }
    s.push_str("\n(see docs/vdbench.md)");
    s
}

/// Read and map the text of a parameter file named `file` (for locations).
pub fn read_text(text: &str, file: &str) -> Result<VdbenchImport, VdbenchError> {
    import(&parse_text(text, file)?)
}

/// Read and map the parameter file at `path` through `read` (the CLI's reader, which
/// names the file in its errors).
pub fn read_file_with(
    path: &Path,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<VdbenchImport, VdbenchError> {
    let text = read(path).map_err(|e| VdbenchError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    read_text(&text, &path.display().to_string())
}

/// The vdbench parameter a profile key comes from, to name beside a profile error.
pub fn parameter_of_key(key: &str) -> Option<&'static str> {
    let last = key.rsplit('.').next().unwrap_or(key);
    Some(match last {
        "disks_per_worker" => "the sds the rd's wds use",
        "threads_per_disk" => "threads (sd or rd) or forthreads",
        "disk_size" => "size",
        "warmup" => "warmup",
        "duration" => "elapsed",
        "interval" => "interval",
        "rate_iops" => "iorate",
        "bs" => "xfersize or forxfersize",
        "read_pct" => "rdpct or forrdpct",
        "random_pct" => "seekpct or forseekpct",
        "working_set_pct" => "range",
        "weight" => "skew",
        "compress_ratio" => "compratio",
        "dedupe_ratio" => "dedupratio",
        "dedupe_unit" => "dedupunit",
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
