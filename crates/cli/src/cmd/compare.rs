//! `iofleet compare RUN RUN... [--label KEY=VALUE]... [--baseline RUN] [--gain
//! change|ratio] [--by LABEL --configs LABEL] [--best [--best-over KEY]...] [--metric
//! M]... [--json] [--fail-if EXPR]...`: stored runs side by side with their gain against
//! the baseline, laid out per run or, with `--by` and `--configs`, as published reports
//! do (one row per test, one column per configuration), and the regression gate. With
//! `--best`, only the best run of each configuration is compared (the picking is
//! `iofleet_report::best`'s). An invalid run (below its quorum of hosts)
//! is marked INVALID and refused as the baseline. Exit code 1 when a `--fail-if`
//! condition holds for any compared run, 2 for a malformed flag, a missing label, an
//! unknown run or an invalid baseline.

use std::io::{self, Write};

use clap::{Args, ValueEnum};
use iofleet_report::best::{best_per_configuration, config_text, Best, Candidate};
use iofleet_report::compare::{default_metrics, Comparison, Gain, Metric, Pivot};
use iofleet_report::gate::{evaluate, Condition};

use iofleet_report::RunData;

use crate::exit::Exit;
use crate::store::record::{parse_label, store_exit, DbArg};
use crate::store::stored::{check_baseline, load_runs_in};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Runs to compare: ids (or unique prefixes), unique names, or `latest`.
    #[arg(required_unless_present = "labels", value_name = "RUN")]
    pub runs: Vec<String>,
    /// Also compare every stored run with this label, as `iofleet results list --label`
    /// lists them (repeatable: all must match), e.g. --label sweep=NAME.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Keep the best run (highest IOPS) of each configuration: the values of the --by
    /// and --configs labels and of every key the runs' sweeps varied, except the
    /// --best-over keys. Killed, interrupted and invalid runs never win
    /// (docs/campaigns.md).
    #[arg(long)]
    pub best: bool,
    /// With --best: a key searched over, not part of a configuration (repeatable), e.g.
    /// --best-over qd --best-over threads.
    #[arg(long = "best-over", value_name = "KEY", requires = "best")]
    pub best_over: Vec<String>,
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
    let (runs, baseline, best) = select(&a)?;
    if a.best && runs.len() < 2 {
        // One configuration: its best is the answer, with nothing to compare it with,
        // so no gate to pass: a --fail-if here would pass without being judged.
        if !conditions.is_empty() {
            return Err(Exit::input(
                "--fail-if: --best found a single configuration, so there is no baseline to judge its best against; drop --fail-if or compare several configurations (--by, --best-over)",
            ));
        }
        return print_best(&a, &runs, &best, true);
    }
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
    if a.best && !a.json {
        print_best(&a, &runs, &best, false)?;
    }
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let werr = crate::store::stored::write_err;
    if a.json {
        let mut v = cmp.to_json(&metrics);
        if a.best {
            v["best"] = best_json(&runs, &best);
        }
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

/// The runs to compare (the RUNs, then every run with the --label labels) and the
/// baseline's index; with --best, only the best of each configuration (the baseline
/// first unless --baseline names another run), with what was picked.
fn select(a: &CompareArgs) -> Result<(Vec<RunData>, usize, Vec<Best>), Exit> {
    let store = a.db.open()?;
    let mut queries = a.runs.clone();
    if !a.labels.is_empty() {
        let listed = store
            .list(&iofleet_store::ListFilter {
                labels: a.labels.clone(),
                profile: None,
            })
            .map_err(store_exit)?;
        if listed.is_empty() {
            let l: Vec<String> = a.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            return Err(Exit::input(format!(
                "--label {}: no stored run has these labels",
                l.join(" --label ")
            )));
        }
        // A run given as a RUN too is compared once.
        let given: std::collections::BTreeSet<String> = a
            .runs
            .iter()
            .filter_map(|q| store.resolve(q).ok())
            .collect();
        queries.extend(
            listed
                .into_iter()
                .map(|r| r.meta.id)
                .filter(|id| !given.contains(id)),
        );
    }
    let (runs, baseline) = load_runs_in(&store, &queries, a.baseline.as_deref())?;
    if !a.best {
        return Ok((runs, baseline, Vec::new()));
    }
    let fixed: Vec<String> = a.by.iter().chain(&a.configs).cloned().collect();
    let candidates: Vec<Candidate<'_>> = runs.iter().map(Candidate::of).collect();
    let mut best =
        best_per_configuration(&candidates, &fixed, &a.best_over).map_err(Exit::input)?;
    let base_id = a.baseline.as_ref().map(|_| runs[baseline].id.clone());
    let mut picked: Vec<RunData> = best.iter().map(|b| runs[b.run].clone()).collect();
    for (i, b) in best.iter_mut().enumerate() {
        b.run = i;
    }
    let at = match base_id {
        None => 0,
        Some(id) => match picked.iter().position(|r| r.id == id) {
            Some(i) => i,
            None => {
                picked.insert(0, runs[baseline].clone());
                for b in &mut best {
                    b.run += 1;
                }
                0
            }
        },
    };
    Ok((picked, at, best))
}

/// The best of each configuration as text (on stdout, before the comparison), or as
/// JSON when `alone` and --json.
fn print_best(a: &CompareArgs, runs: &[RunData], best: &[Best], alone: bool) -> Result<i32, Exit> {
    let werr = crate::store::stored::write_err;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if a.json {
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({ "best": best_json(runs, best) }),
        )
        .map_err(|e| Exit::failure(format!("writing the comparison: {e}")))?;
        writeln!(out).map_err(werr)?;
        return Ok(0);
    }
    let mut out = iofleet_report::text::Escaped::new(&mut out);
    let over = match a.best_over.is_empty() {
        true => String::new(),
        false => format!(" over {}", a.best_over.join(", ")),
    };
    writeln!(out, "best per configuration (highest IOPS{over}):").map_err(werr)?;
    for b in best {
        let r = &runs[b.run];
        let searched: Vec<String> = a
            .best_over
            .iter()
            .filter_map(|k| r.labels.get(k).map(|v| format!("{k}={v}")))
            .collect();
        writeln!(
            out,
            "  {:<24} run {}  {:>12.0} IOPS  {}  best of {}",
            config_text(&b.config),
            r.id,
            r.result.summary.all.iops,
            searched.join(" "),
            b.of
        )
        .map_err(werr)?;
    }
    if !alone {
        writeln!(out).map_err(werr)?;
    }
    out.flush().map_err(werr)?;
    Ok(0)
}

fn best_json(runs: &[RunData], best: &[Best]) -> serde_json::Value {
    best.iter()
        .map(|b| {
            let config: serde_json::Map<String, serde_json::Value> = b
                .config
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().into()))
                .collect();
            serde_json::json!({
                "configuration": config,
                "run_id": runs[b.run].id,
                "name": runs[b.run].name,
                "iops": runs[b.run].result.summary.all.iops,
                "of": b.of,
            })
        })
        .collect()
}
