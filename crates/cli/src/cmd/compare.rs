//! `iofleet compare RUN RUN... [--baseline RUN] [--gain change|ratio] [--by LABEL
//! --configs LABEL] [--metric M]... [--json] [--fail-if EXPR]...`: stored runs side by
//! side with their gain against the baseline, laid out per run or, with `--by` and
//! `--configs`, as published reports do (one row per test, one column per
//! configuration), and the regression gate. An invalid run (below its quorum of hosts)
//! is marked INVALID and refused as the baseline. Exit code 1 when a `--fail-if`
//! condition holds for any compared run, 2 for a malformed flag, a missing label, an
//! unknown run or an invalid baseline.

use std::io::{self, Write};

use clap::{Args, ValueEnum};
use iofleet_report::compare::{default_metrics, Comparison, Gain, Metric, Pivot};
use iofleet_report::gate::{evaluate, Condition};

use crate::exit::Exit;
use crate::store::record::DbArg;
use crate::store::stored::{check_baseline, load_with_baseline};

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
    /// How gains are shown: change = (new − old) ÷ old (+690%), ratio = new ÷ old × 100
    /// (790%), as published reports give them.
    #[arg(long, value_enum, default_value_t = GainArg::Change)]
    pub gain: GainArg,
    /// Rows: one per value of this label (the test), e.g. --by test.
    #[arg(long, value_name = "LABEL", requires = "configs")]
    pub by: Option<String>,
    /// Columns: one per value of this label (the configuration), e.g. --configs ns; the
    /// baseline run's value is the baseline column.
    #[arg(long, value_name = "LABEL", requires = "by")]
    pub configs: Option<String>,
    /// Metric to show (repeatable) [default: iops with --by, else the full list]; names
    /// as in --fail-if (iops, read.p99, write.mean, cpu, …).
    #[arg(long = "metric", value_name = "METRIC", value_parser = metric)]
    pub metrics: Vec<Metric>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub conv: crate::args::ConventionArg,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GainArg {
    Change,
    Ratio,
}

fn metric(s: &str) -> Result<Metric, String> {
    Metric::parse(s)
        .ok_or_else(|| format!("unknown metric '{s}' (known: {})", Metric::known_names()))
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
    check_baseline(
        &runs,
        baseline,
        "give a valid run as --baseline (an invalid run may be compared, not compared against)",
    )?;
    let cmp = Comparison {
        runs: &runs,
        baseline,
        gain: match a.gain {
            GainArg::Change => Gain::Change,
            GainArg::Ratio => Gain::Ratio,
        },
        convention: a.conv.convention,
    };
    let pivot = match (&a.by, &a.configs) {
        (Some(by), Some(configs)) => Some(Pivot::new(&cmp, by, configs).map_err(Exit::input)?),
        _ => None,
    };
    let metrics = match (a.metrics.is_empty(), &pivot) {
        (false, _) => a.metrics.clone(),
        (true, Some(_)) => vec![Metric::parse("iops").expect("iops")],
        (true, None) => default_metrics(),
    };
    let checks = evaluate(&cmp, &conditions);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let werr = crate::store::stored::write_err;
    if a.json {
        let mut v = cmp.to_json(&metrics);
        if let Some(p) = &pivot {
            v["table"] = p.to_json(&cmp, &metrics);
        }
        if !conditions.is_empty() {
            v["checks"] = checks
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "condition": c.condition,
                        "run": c.run,
                        "violated": c.violated,
                        "detail": c.detail,
                    })
                })
                .collect();
        }
        serde_json::to_writer_pretty(&mut out, &v)
            .map_err(|e| Exit::failure(format!("writing the comparison: {e}")))?;
        writeln!(out).map_err(werr)?;
    } else {
        // Run names and labels are printed escaped (the report's printers do it; the
        // checks below go through the same writer).
        let mut out = iofleet_report::text::Escaped::new(&mut out);
        match &pivot {
            Some(p) => {
                cmp.write_run_list(&mut out).map_err(werr)?;
                p.write_text(&cmp, &metrics, &mut out).map_err(werr)?;
            }
            None => cmp.write_text(&metrics, &mut out).map_err(werr)?,
        }
        if !checks.is_empty() {
            writeln!(out).map_err(werr)?;
            for c in &checks {
                writeln!(out, "{c}").map_err(werr)?;
            }
        }
        out.flush().map_err(werr)?;
    }
    out.flush().map_err(werr)?;
    if conditions.is_empty() {
        return Ok(0);
    }
    let failed = checks.iter().filter(|c| c.violated).count();
    if failed > 0 {
        eprintln!(
            "error: regression gate failed: {failed} of {} checks violated",
            checks.len()
        );
        for c in checks.iter().filter(|c| c.violated) {
            eprintln!("  {}", iofleet_report::text::escape(&c.to_string()));
        }
        return Ok(1);
    }
    Ok(0)
}
