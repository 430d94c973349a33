//! A located problem shared by the readers of foreign workload files (vdbench, Iometer):
//! one thing iofleet cannot run, with the file and line it was written on, and the text
//! that lists every such problem of a file at once.

use crate::fio::Location;

/// One parameter iofleet cannot run, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub at: Location,
    pub parameter: String,
    pub message: String,
}

/// Every problem of a `tool`'s file, one per line, then the docs page that explains them;
/// `what` is what the tool calls the things it sets (`parameter`, `setting`).
pub(crate) fn problems_text(tool: &str, what: &str, problems: &[Problem], page: &str) -> String {
    let mut s = format!(
        "{} {tool} {what}(s) iofleet cannot run as written:",
        problems.len()
    );
    for p in problems {
        s.push_str(&format!("\n  {}: {}: {}", p.at, p.parameter, p.message));
    }
    s.push_str(&format!("\n(see {page})"));
    s
}
