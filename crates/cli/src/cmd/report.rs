//! `iofleet report RUN... [-o FILE] [--format html|markdown]`: a report over stored runs.
//! HTML is one self-contained page with charts (nothing fetched when it is opened);
//! Markdown is for tickets. Figures are recomputed from the stored histograms.

use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::{Args, ValueEnum};

use crate::exit::Exit;
use crate::store::record::DbArg;
use crate::store::stored::load_with_baseline;
use crate::store::stored::output;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    Html,
    Markdown,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Runs to report: ids (or unique prefixes), unique names, or `latest`.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<String>,
    /// The run others are compared against [default: the first RUN].
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// Write the report to this file [default: stdout].
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
    /// Title of the HTML report.
    #[arg(long, default_value = "iofleet report")]
    pub title: String,
    #[command(flatten)]
    pub conv: crate::args::ConventionArg,
    #[command(flatten)]
    pub db: DbArg,
}

pub fn run(a: ReportArgs) -> Result<i32, Exit> {
    let (runs, baseline) = load_with_baseline(&a.db, &a.runs, a.baseline.as_deref())?;
    let mut out = output(&a.output)?;
    let werr = crate::store::stored::write_err;
    match a.format {
        ReportFormat::Markdown => {
            iofleet_report::markdown::report(&runs, baseline, a.conv.convention, &mut out)
                .map_err(werr)?
        }
        ReportFormat::Html => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let page = iofleet_report::html::report(
                &runs,
                baseline,
                &a.title,
                &iofleet_fleet::sys::rfc3339(now),
                a.conv.convention,
            )
            .map_err(Exit::failure)?;
            out.write_all(page.as_bytes()).map_err(werr)?;
        }
    }
    out.flush().map_err(werr)?;
    if let Some(p) = &a.output {
        eprintln!("wrote {}", p.display());
    }
    Ok(0)
}
