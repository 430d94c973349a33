//! `iofleet compare RUN RUN... [--baseline RUN] [--fail-if EXPR]...`: stored runs side by
//! side with their % change against the baseline, and the regression gate. Exit code 1
//! when a `--fail-if` condition holds for any compared run, 2 for a malformed condition
//! or an unknown run.

use std::io::{self, Write};

use clap::Args;
use iofleet_report::compare::Comparison;
use iofleet_report::gate::{evaluate, Condition};
use iofleet_report::RunData;

use crate::cmd_results::load_run;
use crate::record::DbArg;
use crate::Exit;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Runs to compare: ids (or unique prefixes), unique names, or `latest`.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<String>,
    /// The run others are compared against [default: the first RUN]; added to the
    /// comparison when it is not one of the RUNs.
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// Exit 1 when this holds for any compared run, e.g. 'iops < -5%' or
    /// 'read.p99 > +10%' or 'write.p99 > 2ms'; repeatable (grammar: docs/compare.md).
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<String>,
    #[command(flatten)]
    pub db: DbArg,
}

/// The runs of a comparison and the baseline's index among them.
pub fn load_with_baseline(
    db: &DbArg,
    runs: &[String],
    baseline: Option<&str>,
) -> Result<(Vec<RunData>, usize), Exit> {
    let store = db.open()?;
    let mut data = runs
        .iter()
        .map(|q| load_run(&store, q))
        .collect::<Result<Vec<_>, _>>()?;
    let index = match baseline {
        None => 0,
        Some(q) => {
            let b = load_run(&store, q)?;
            match data.iter().position(|r| r.id == b.id) {
                Some(i) => i,
                None => {
                    data.insert(0, b);
                    0
                }
            }
        }
    };
    Ok((data, index))
}

pub fn run(a: CompareArgs) -> Result<i32, Exit> {
    // Conditions first: a typo in the gate is reported before anything is loaded.
    let conditions = a
        .fail_if
        .iter()
        .map(|e| e.parse::<Condition>().map_err(Exit::input))
        .collect::<Result<Vec<_>, _>>()?;
    let (runs, baseline) = load_with_baseline(&a.db, &a.runs, a.baseline.as_deref())?;
    if runs.len() < 2 {
        return Err(Exit::input(
            "compare needs at least two runs (RUN RUN..., or RUN with --baseline RUN)",
        ));
    }
    let cmp = Comparison {
        runs: &runs,
        baseline,
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let werr = crate::cmd_results::write_err;
    cmp.write_text(&mut out).map_err(werr)?;
    if conditions.is_empty() {
        return Ok(0);
    }
    let checks = evaluate(&cmp, &conditions);
    writeln!(out).map_err(werr)?;
    for c in &checks {
        writeln!(out, "{c}").map_err(werr)?;
    }
    out.flush().map_err(werr)?;
    let failed = checks.iter().filter(|c| c.violated).count();
    if failed > 0 {
        eprintln!(
            "error: regression gate failed: {failed} of {} checks violated",
            checks.len()
        );
        for c in checks.iter().filter(|c| c.violated) {
            eprintln!("  {c}");
        }
        return Ok(1);
    }
    Ok(0)
}
