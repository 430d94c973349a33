//! `iofleet sweep PROFILE --vary KEY=V1,V2,…`: the same run once per value of one
//! setting, each step measured and saved like `iofleet run` (labelled `sweep`, `step` and
//! the key), then the curve — IOPS against mean, p50 and p99 latency — that shows where
//! more load stops buying throughput and starts costing latency (the hockey stick).
//!
//! `--rate-curve` instead measures the closed-loop maximum, then runs open loop at
//! [`RATE_CURVE`] percent of it (vdbench's curve), latency counted from each I/O's
//! intended issue time; the rate arithmetic is `session::with_rate`'s.
//!
//! Steps run in the order given. Disks are filled once: the first step prepares them as
//! the profile says, and later steps find the fill marker valid and reuse the fill when
//! the disks are unchanged (steps that vary `workers` fill the new workers' disks).

use std::io::Write;

use clap::Args;
use iofleet_profile::GroupPlan;
use iofleet_report::compare::opt_fixed;
use iofleet_stats::result::RunResult;

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::resolve::{closed_loop, ctrl_c_flag, exit_code, offered_rate, resolve, with_rate};
use crate::run::session::Session;
use crate::run::stepping::check_step_args;
use crate::web::step::{Step, StepKind};

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The setting to vary and its values, in order: `qd=1,2,4,8`, `threads=1,2,4`,
    /// `workers=1,2,4`, `bs=4k,64k,1m`, `read_pct=0,30,70,100` or `rate=1000,2000`.
    #[arg(
        long,
        value_name = "KEY=V1,V2,…",
        required_unless_present = "rate_curve"
    )]
    pub vary: Option<String>,
    /// Instead of --vary: measure the closed-loop maximum, then run open loop (Poisson
    /// arrivals unless the profile says uniform) at 10, 50, 70, 80, 90, 95 and 100% of
    /// it, latency from each I/O's intended issue time.
    #[arg(long, conflicts_with = "vary")]
    pub rate_curve: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// The settings a sweep can vary.
const KEYS: [&str; 6] = ["qd", "threads", "workers", "bs", "read_pct", "rate"];

/// `KEY=V1,V2,…` into the key and its values.
fn parse_vary(s: &str) -> Result<(String, Vec<String>), Exit> {
    let (key, values) = s.split_once('=').ok_or_else(|| {
        Exit::input(format!(
            "--vary: '{s}' is not KEY=V1,V2,… (e.g. qd=1,2,4,8)"
        ))
    })?;
    let key = key.trim().to_string();
    if !KEYS.contains(&key.as_str()) {
        return Err(Exit::input(format!(
            "--vary: '{key}' cannot be varied (one of {})",
            KEYS.join(", ")
        )));
    }
    let values: Vec<String> = values
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if values.len() < 2 {
        return Err(Exit::input(format!(
            "--vary: give at least two values of {key} (e.g. {key}=1,2,4)"
        )));
    }
    Ok((key, values))
}

/// `base` with the varied setting at `value`, checked as the flag itself would be.
fn step_args(base: &RunArgs, key: &str, value: &str) -> Result<RunArgs, Exit> {
    let mut a = base.clone();
    let bad = |e: String| Exit::input(format!("--vary {key}={value}: {e}"));
    let int = || {
        value
            .parse::<i64>()
            .map_err(|_| bad("not a whole number".into()))
    };
    let num = || value.parse::<f64>().map_err(|_| bad("not a number".into()));
    match key {
        "qd" => a.ov.qd = Some(int()?),
        "threads" => a.ov.threads = Some(int()?),
        "workers" => a.ov.workers = Some(int()?),
        "read_pct" => a.ov.read_pct = Some(num()?),
        "rate" => a.ov.rate = Some(num()?),
        "bs" => a.ov.bs = Some(iofleet_profile::parse_block_sizes(value).map_err(bad)?),
        _ => unreachable!("checked by parse_vary"),
    }
    Ok(a)
}

/// The loads of `--rate-curve`, percent of the measured closed-loop maximum.
pub const RATE_CURVE: [u32; 7] = [10, 50, 70, 80, 90, 95, 100];

pub fn run(s: SweepArgs) -> Result<i32, Exit> {
    crate::run::steady::check_args(&s.run)?;
    let Some(vary) = s.vary.as_deref() else {
        return rate_curve(&s);
    };
    let (key, values) = parse_vary(vary)?;
    check_step_args(&s.run, &["sweep", "step", key.as_str()])?;
    // Every step is checked before the first one runs: a bad value fails fast.
    let mut steps = Vec::with_capacity(values.len());
    for v in &values {
        let a = step_args(&s.run, &key, v)?;
        let (groups, settings) = resolve(&a)?;
        steps.push((v.clone(), a, groups, settings));
    }
    let sweep = s.run.save.name.clone().unwrap_or_else(|| {
        let profile = s.run.profile.as_deref().unwrap_or("flags");
        format!("sweep-{profile}-{key}")
    });
    // One listener and live view for every step (and round).
    let mut live = Session::open(&s.run)?;
    let stop = ctrl_c_flag();
    let mut done: Vec<(String, RunResult)> = Vec::new();
    let mut code = 0;
    let mut failed = None;
    let n = steps.len();
    for (i, (value, mut a, groups, settings)) in steps.into_iter().enumerate() {
        a.save.name = Some(format!("{sweep}/{key}={value}"));
        a.save.labels.extend([
            ("sweep".to_string(), sweep.clone()),
            ("step".to_string(), i.to_string()),
            (key.clone(), value.clone()),
        ]);
        if !a.quiet {
            eprintln!("step {}/{n}: {key} = {value}", i + 1);
        }
        live.announce(&sweep_step(i, n, format!("{key}={value}"), &groups));
        match live.measure_step(&a, &groups, settings, &stop) {
            Ok(result) => {
                // The worst step decides: an invalid step (3) or a failed source (1) in
                // any step is the sweep's, as in `iofleet run`.
                let c = exit_code(&result, &stop);
                code = code.max(c);
                done.push((value, result));
                if c == 130 {
                    break;
                }
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    live.finish();
    print_curve(&s, &sweep, &key, &done)?;
    match failed {
        Some(e) => Err(e),
        None => Ok(code),
    }
}

/// `--rate-curve`: the closed-loop maximum (step 0, `rate_pct=max`), then one open-loop
/// step per load of [`RATE_CURVE`].
fn rate_curve(s: &SweepArgs) -> Result<i32, Exit> {
    const KEY: &str = "rate_pct";
    check_step_args(&s.run, &["sweep", "step", KEY])?;
    let (groups, _) = resolve(&s.run)?;
    let mut closed = groups.clone();
    closed_loop(&mut closed, "--rate-curve", "")?;
    // The rate arithmetic is checked before anything runs.
    with_rate(&mut groups.clone(), 1.0)?;
    let sweep = s.run.save.name.clone().unwrap_or_else(|| {
        let profile = s.run.profile.as_deref().unwrap_or("flags");
        format!("sweep-{profile}-rate-curve")
    });
    let labels = |i: usize, v: &str| {
        vec![
            ("sweep".to_string(), sweep.clone()),
            ("step".to_string(), i.to_string()),
            (KEY.to_string(), v.to_string()),
        ]
    };
    let mut live = Session::open(&s.run)?;
    let stop = ctrl_c_flag();
    let n = RATE_CURVE.len() + 1;
    if !s.run.quiet {
        eprintln!("step 1/{n}: the closed-loop maximum");
    }
    let mut done: Vec<(String, RunResult)> = Vec::new();
    live.announce(&sweep_step(0, n, format!("{KEY}=max"), &closed));
    let (max, mut code) = live.step(
        &s.run,
        &closed,
        format!("{sweep}/{KEY}=max"),
        labels(0, "max"),
        s.run.seed,
        &stop,
    )?;
    let top = max.summary.all.iops;
    done.push(("max".into(), max));
    let mut failed = None;
    if code != 130 && top > 0.0 {
        for (i, pct) in RATE_CURVE.iter().enumerate() {
            let rate = top * *pct as f64 / 100.0;
            let mut g = groups.clone();
            with_rate(&mut g, rate)?;
            if !s.run.quiet {
                eprintln!("step {}/{n}: {pct}% = {rate:.0} IOPS", i + 2);
            }
            live.announce(&sweep_step(i + 1, n, format!("{KEY}={pct}"), &g));
            match live.step(
                &s.run,
                &g,
                format!("{sweep}/{KEY}={pct}"),
                labels(i + 1, &pct.to_string()),
                s.run.seed,
                &stop,
            ) {
                Ok((r, c)) => {
                    code = code.max(c);
                    done.push((pct.to_string(), r));
                    if c == 130 {
                        break;
                    }
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
    }
    live.finish();
    print_curve(s, &sweep, KEY, &done)?;
    match failed {
        Some(e) => Err(e),
        None => Ok(code),
    }
}

/// The live view's announcement of step `i` (from 0) of `n`.
fn sweep_step(i: usize, n: usize, label: String, groups: &[GroupPlan]) -> Step {
    Step {
        kind: StepKind::Sweep,
        index: i as u32 + 1,
        of: Some(n as u32),
        at_most: false,
        label,
        rate_iops: offered_rate(groups),
    }
}

/// Print the curve (table or `--json`); the steps measured so far are printed even
/// when a later one failed.
fn print_curve(
    s: &SweepArgs,
    sweep: &str,
    key: &str,
    done: &[(String, RunResult)],
) -> Result<(), Exit> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if s.run.json {
        serde_json::to_writer_pretty(&mut out, &curve_json(sweep, key, done))
            .map_err(std::io::Error::other)
            .and_then(|_| writeln!(out))
    } else {
        write!(out, "{}", curve_table(sweep, key, done))
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| Exit::failure(format!("writing the curve: {e}")))
}

/// The curve as JSON: one point per step, with the stored run of each.
fn curve_json(sweep: &str, key: &str, done: &[(String, RunResult)]) -> serde_json::Value {
    let points: Vec<serde_json::Value> = done
        .iter()
        .map(|(value, r)| {
            let all = &r.summary.all;
            let lat = all.latency_us.as_ref();
            serde_json::json!({
                "value": value,
                "run_id": r.stored.as_ref().map(|s| s.id.clone()),
                "iops": all.iops,
                "mbps": all.mbps,
                "mean_us": lat.map(|l| l.mean),
                "p50_us": lat.map(|l| l.p50),
                "p99_us": lat.map(|l| l.p99),
                "interrupted": r.run.interrupted,
                "valid": r.validity.valid,
                "invalid_reasons": r.validity.reasons,
                "steady_state": r.steady_state.as_ref().map(|s| serde_json::json!({
                    "held": s.held,
                    "round": s.round,
                    "window_mean_iops": s.window_mean_iops,
                })),
            })
        })
        .collect();
    serde_json::json!({ "sweep": sweep, "vary": key, "points": points })
}

/// The curve as a table, with each step's IOPS gain over the previous one: where the
/// gain falls towards zero while p99 keeps rising, the knee has passed.
fn curve_table(sweep: &str, key: &str, done: &[(String, RunResult)]) -> String {
    let mut t = format!(
        "sweep {sweep}: {} step(s) of {key}\n{:>10} {:>12} {:>8} {:>10} {:>10} {:>10} {:>9}  run\n",
        done.len(),
        key,
        "IOPS",
        "MB/s",
        "mean µs",
        "p50 µs",
        "p99 µs",
        "IOPS Δ"
    );
    let mut prev: Option<f64> = None;
    for (value, r) in done {
        let all = &r.summary.all;
        let lat = all.latency_us.as_ref();
        let gain = prev
            .filter(|p| *p > 0.0)
            .map(|p| format!("{:+.0}%", (all.iops - p) / p * 100.0))
            .unwrap_or_else(|| "–".into());
        t.push_str(&format!(
            "{:>10} {:>12.0} {:>8.1} {:>10} {:>10} {:>10} {:>9}  {}{}\n",
            value,
            all.iops,
            all.mbps,
            opt_fixed(lat.map(|l| l.mean), 1),
            opt_fixed(lat.map(|l| l.p50), 1),
            opt_fixed(lat.map(|l| l.p99), 1),
            gain,
            r.stored.as_ref().map_or("(not saved)", |s| s.id.as_str()),
            if r.run.interrupted {
                " (interrupted)"
            } else {
                ""
            }
        ));
        if !r.validity.valid {
            t.push_str(&format!(
                "{:>10} INVALID: {}\n",
                "",
                iofleet_report::text::escape(&r.validity.reasons.join("; "))
            ));
        }
        if let Some(s) = &r.steady_state {
            t.push_str(&format!(
                "{:>10} {}\n",
                "",
                iofleet_report::table::steady_line(s)
            ));
        }
        prev = Some(all.iops);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vary_names_what_is_wrong() {
        let Ok((k, v)) = parse_vary("qd=1, 2,4") else {
            panic!("a good --vary is refused")
        };
        assert_eq!(
            (k.as_str(), v),
            ("qd", vec!["1".into(), "2".into(), "4".into()])
        );
        for (bad, says) in [
            ("qd", "KEY=V1"),
            ("colour=1,2", "colour"),
            ("qd=4", "at least two"),
        ] {
            let Err(e) = parse_vary(bad) else {
                panic!("{bad} is accepted")
            };
            let e = e.message;
            assert!(e.contains(says) && e.contains("--vary"), "{bad}: {e}");
        }
    }
}
