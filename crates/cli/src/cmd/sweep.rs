//! `iofleet sweep PROFILE --vary KEY=V1,V2,… [--vary KEY=…]`: the same run once per
//! value of one setting, or per combination of several (a matrix, the first key
//! outermost), each step measured and saved like `iofleet run` (labelled `sweep`, `step`,
//! `vary` and each key with its value), then the curve — IOPS against mean, p50 and p99
//! latency — that shows where more load stops buying throughput and starts costing
//! latency (the hockey stick). A key is any profile key with a flag, set on each step as
//! that flag would set it; every step runs on the command's one fleet (`Session`). The
//! fleet's size is a key too (`hosts=1,2,4,8`, `run::fleet_size`): each step runs the
//! first K hosts of that one fleet, each with its share of the whole fleet's load, and
//! the curve then shows where more clients stop buying throughput (its knee).
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
use iofleet_stats::slo::{self, Slo};

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::campaign::{self, Campaign, Fingerprint, ResumeArg};
use crate::run::fleet_size;
use crate::run::resolve::{closed_loop, ctrl_c_flag, exit_code, offered_rate, resolve, with_rate};
use crate::run::session::Session;
use crate::run::stepping::check_step_args;
use crate::web::step::{Step, StepKind};

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// A setting to vary and its values, in order: `qd=1,2,4,8`, `bs=4k,64k`,
    /// `disks=1,4`, `workers=1,2,4`, `read_pct=0,70,100`, `rate=1000,2000`, or any
    /// profile key that has a flag (`fleet.threads_per_disk=1,2`). Repeat it for a
    /// matrix: every combination is a step, the first key outermost.
    #[arg(
        long,
        value_name = "KEY=V1,V2,…",
        required_unless_present = "rate_curve"
    )]
    pub vary: Vec<String>,
    /// Instead of --vary: measure the closed-loop maximum, then run open loop (Poisson
    /// arrivals unless the profile says uniform) at 10, 50, 70, 80, 90, 95 and 100% of
    /// it, latency from each I/O's intended issue time.
    #[arg(long, conflicts_with_all = ["vary", "resume"])]
    pub rate_curve: bool,
    /// With --vary hosts alone: an objective every step is held to (repeatable; all must
    /// hold), `[all.|read.|write.]STAT<=LATENCY` as find-max's (`p99<=3ms`); the curve
    /// then says the most clients at which every objective held.
    #[arg(long = "slo", value_name = "OBJECTIVE", value_parser = objective, conflicts_with = "rate_curve")]
    pub slo: Vec<Slo>,
    #[command(flatten)]
    pub resume: ResumeArg,
    #[command(flatten)]
    pub run: RunArgs,
}

/// A latency objective (`iofleet_stats::slo`'s grammar; a CPU one is find-max's).
fn objective(s: &str) -> Result<Slo, String> {
    let o: Slo = s.parse().map_err(|e: slo::ObjectiveError| e.to_string())?;
    match o.latency() {
        Some(_) => Ok(o),
        None => Err(format!(
            "'{s}': a sweep holds its steps to latency objectives (p99<=3ms); a CPU objective is find-max's"
        )),
    }
}

/// Most steps one sweep may have.
const MAX_STEPS: usize = 10_000;

/// The fleet-size axis's "flag": no flag sets it, the step's `active_hosts` does.
const HOSTS_FLAG: &str = "hosts";

/// One varied setting: its name in labels and output (the flag without `--`, `-` as
/// `_`: `qd`, `read_pct`, `disks`), the flag that sets it, and its values in order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Axis {
    pub key: String,
    flag: &'static str,
    pub values: Vec<String>,
}

/// The name a key is known by in a sweep: the flag without `--`, `-` as `_`.
fn flag_key(flag: &str) -> String {
    flag.trim_start_matches("--").replace('-', "_")
}

/// The keys a sweep can vary, as [`flag_key`] names them (each flag once).
fn variable_keys() -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for o in iofleet_profile::options::OPTIONS {
        if let Some(f) = o.flag.filter(|f| *f != "--verify") {
            let k = flag_key(f);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys
}

/// The flag that sets `key`: a profile key (`fleet.qd`), its last part (`qd`,
/// `threads_per_disk`) or its flag's name (`threads`, `read-pct`).
fn flag_of(key: &str) -> Result<&'static str, Exit> {
    let k = key.replace('-', "_");
    if matches!(k.as_str(), "pods" | "vms") {
        return Err(Exit::input(format!(
            "--vary {key}: a fleet's pods (and a VM fleet's VMs) are its hosts: vary hosts=1,2,4,… (docs/campaigns.md)"
        )));
    }
    let known = || variable_keys().join(", ");
    let matching = iofleet_profile::options::OPTIONS.iter().filter(|o| {
        o.key == k
            || o.key.rsplit('.').next() == Some(k.as_str())
            || o.flag.is_some_and(|f| flag_key(f) == k)
    });
    let mut unflagged = None;
    for o in matching {
        match o.flag {
            Some("--verify") => {
                return Err(Exit::input(format!(
                    "--vary {key}: --verify only turns verification on; it has no values to vary"
                )))
            }
            Some(f) => return Ok(f),
            None => unflagged = Some(o.key),
        }
    }
    Err(Exit::input(match unflagged {
        Some(o) => format!(
            "--vary {key}: the profile key {o} has no flag, so a sweep cannot set it; \
             write one profile per value, or vary one of {}",
            known()
        ),
        None => format!("--vary: '{key}' cannot be varied (one of {})", known()),
    }))
}

/// `KEY=V1,V2,…` into its axis.
fn parse_vary(s: &str) -> Result<Axis, Exit> {
    let (key, values) = s.split_once('=').ok_or_else(|| {
        Exit::input(format!(
            "--vary: '{s}' is not KEY=V1,V2,… (e.g. qd=1,2,4,8)"
        ))
    })?;
    let key = key.trim();
    let flag = match key {
        fleet_size::KEY | "fleet.hosts" => HOSTS_FLAG,
        _ => flag_of(key)?,
    };
    let key = flag_key(flag);
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
    Ok(Axis { key, flag, values })
}

/// Every `--vary` as its axis: a key given twice (by any of its names) is refused, and
/// so is a matrix of more than [`MAX_STEPS`] steps.
pub(crate) fn parse_matrix(vary: &[String]) -> Result<Vec<Axis>, Exit> {
    let mut axes: Vec<Axis> = Vec::new();
    for v in vary {
        let axis = parse_vary(v)?;
        if axes.iter().any(|a| a.flag == axis.flag) {
            return Err(Exit::input(format!(
                "--vary {}: given more than once (each key is one dimension of the matrix)",
                axis.key
            )));
        }
        axes.push(axis);
    }
    let steps = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .filter(|n| *n <= MAX_STEPS);
    if steps.is_none() {
        return Err(Exit::input(format!(
            "--vary: the matrix has more than {MAX_STEPS} steps; vary fewer keys or values"
        )));
    }
    Ok(axes)
}

/// The steps of a matrix in order, each the index of its value on every axis: the
/// first axis outermost (`--vary bs=4k,64k --vary qd=1,8` runs 4k/1, 4k/8, 64k/1,
/// 64k/8).
pub(crate) fn cells(axes: &[Axis]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new()];
    for a in axes {
        out = out
            .into_iter()
            .flat_map(|c| {
                (0..a.values.len()).map(move |i| {
                    let mut c = c.clone();
                    c.push(i);
                    c
                })
            })
            .collect();
    }
    out
}

/// One step's coordinates, `(key, value)` per axis.
pub(crate) fn coords(axes: &[Axis], cell: &[usize]) -> Vec<(String, String)> {
    axes.iter()
        .zip(cell)
        .map(|(a, i)| (a.key.clone(), a.values[*i].clone()))
        .collect()
}

/// `base` with each axis's flag set to the step's value, parsed and checked as the
/// flag itself is on the command line; what the step does not vary stays as given.
fn step_args(base: &RunArgs, at: &[(String, String)], axes: &[Axis]) -> Result<RunArgs, Exit> {
    use clap::FromArgMatches;
    let mut a = base.clone();
    for ((key, value), axis) in at.iter().zip(axes) {
        if axis.flag == HOSTS_FLAG {
            // Checked against the fleet in `run`, before the first step.
            a.active_hosts = Some(fleet_size::count("--vary hosts", value, u32::MAX)?);
            continue;
        }
        let bad = |e: String| Exit::input(format!("--vary {key}={value}: {e}"));
        let cmd = iofleet_profile::Overrides::augment_args(
            clap::Command::new("vary")
                .no_binary_name(true)
                .color(clap::ColorChoice::Never),
        );
        let m = cmd
            .try_get_matches_from([format!("{}={value}", axis.flag)])
            .map_err(|e| {
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or_default();
                bad(first.trim_start_matches("error: ").to_string())
            })?;
        // The on/off flags (`--verify`, `--write-through`) only turn something on, and
        // the update sets every one the step does not name back to off: a step keeps
        // the command's.
        let (verify, write_through) = (a.ov.verify, a.ov.write_through);
        a.ov.update_from_arg_matches(&m)
            .map_err(|e| bad(e.to_string()))?;
        a.ov.verify |= verify;
        a.ov.write_through |= write_through;
    }
    Ok(a)
}

/// `NAME/k1=v1,k2=v2`: a step's run name.
fn step_name(sweep: &str, at: &[(String, String)]) -> String {
    format!("{sweep}/{}", coords_text(at))
}

/// `k1=v1,k2=v2`.
fn coords_text(at: &[(String, String)]) -> String {
    at.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The loads of `--rate-curve`, percent of the measured closed-loop maximum.
pub const RATE_CURVE: [u32; 7] = [10, 50, 70, 80, 90, 95, 100];

pub fn run(s: SweepArgs) -> Result<i32, Exit> {
    crate::run::steady::check_args(&s.run)?;
    if s.vary.is_empty() {
        return rate_curve(&s);
    }
    let axes = parse_matrix(&s.vary)?;
    let keys: Vec<String> = axes.iter().map(|a| a.key.clone()).collect();
    let mut own = vec!["sweep", "step", "vary"];
    own.extend(keys.iter().map(String::as_str));
    own.extend(campaign::LABELS);
    check_step_args(&s.run, &own)?;
    if !s.slo.is_empty() && keys != [fleet_size::KEY] {
        return Err(Exit::input(
            "--slo: a sweep holds its steps to objectives with --vary hosts alone (the most clients at SLO); find-max searches the rate at an objective",
        ));
    }
    if let Some(hosts) = axes.iter().find(|a| a.flag == HOSTS_FLAG) {
        let (groups, _) = resolve(&s.run)?;
        let workers = groups.iter().map(|g| g.plan.fleet.workers).sum();
        let most = fleet_size::hosts_in(&s.run, workers, "--vary hosts")?;
        for v in &hosts.values {
            fleet_size::count("--vary hosts", v, most)?;
        }
    }
    // Every step is checked before the first one runs: a bad value fails fast.
    let mut steps = Vec::new();
    for cell in cells(&axes) {
        let at = coords(&axes, &cell);
        let a = step_args(&s.run, &at, &axes)?;
        let (groups, settings) = resolve(&a)?;
        steps.push((at, a, groups, settings));
    }
    let sweep = s.run.save.name.clone().unwrap_or_else(|| {
        let profile = s.run.profile.as_deref().unwrap_or("flags");
        format!("sweep-{profile}-{}", keys.join("-"))
    });
    let n = steps.len();
    let campaign = Campaign::open(
        &s.run,
        s.resume.resume.as_deref(),
        "sweep",
        &sweep,
        Fingerprint::of::<SweepArgs>(std::env::args_os()),
    )?;
    campaign.announce(&format!("sweep {sweep}, {n} step(s)"), s.run.quiet);
    // One listener and live view for every step (and round).
    let mut live = Session::open(&s.run)?;
    let stop = ctrl_c_flag();
    let mut done: Vec<(Vec<(String, String)>, RunResult)> = Vec::new();
    let mut code = 0;
    let mut failed = None;
    for (i, (at, mut a, groups, settings)) in steps.into_iter().enumerate() {
        let label = coords_text(&at);
        let said: Vec<String> = at.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        if let Some(r) = campaign.finished(&i.to_string()) {
            if !a.quiet {
                let id = r.stored.as_ref().map_or("", |s| s.id.as_str());
                eprintln!(
                    "step {}/{n}: {} (finished before: run {id})",
                    i + 1,
                    said.join(", ")
                );
            }
            code = code.max(exit_code(&r, &stop));
            done.push((at, r));
            continue;
        }
        a.save.name = Some(step_name(&sweep, &at));
        a.save.labels.extend([
            ("sweep".to_string(), sweep.clone()),
            ("step".to_string(), i.to_string()),
            ("vary".to_string(), keys.join(",")),
        ]);
        a.save.labels.extend(at.iter().cloned());
        a.save.labels.extend(campaign.labels());
        if !a.quiet {
            eprintln!("step {}/{n}: {}", i + 1, said.join(", "));
        }
        live.announce(&sweep_step(i, n, label, &groups));
        match live.measure_step(&a, &groups, settings, &stop) {
            Ok(result) => {
                // The worst step decides: an invalid step (3) or a failed source (1) in
                // any step is the sweep's, as in `iofleet run`.
                let c = exit_code(&result, &stop);
                code = code.max(c);
                done.push((at, result));
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
    if failed.is_none() && code != 130 && done.len() == n {
        let last = done.last().and_then(|(_, r)| r.stored.as_ref());
        campaign.end(last.map(|s| s.id.as_str()), "done");
    }
    live.finish();
    print_curve(&s, &sweep, &keys, Some(&campaign.id), &done)?;
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
    let at = |v: &str| vec![(KEY.to_string(), v.to_string())];
    let mut done: Vec<(Vec<(String, String)>, RunResult)> = Vec::new();
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
    done.push((at("max"), max));
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
                    done.push((at(&pct.to_string()), r));
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
    print_curve(s, &sweep, &[KEY.to_string()], None, &done)?;
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
    keys: &[String],
    campaign: Option<&str>,
    done: &[(Vec<(String, String)>, RunResult)],
) -> Result<(), Exit> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if s.run.json {
        serde_json::to_writer_pretty(&mut out, &curve_json(sweep, keys, campaign, &s.slo, done))
            .map_err(std::io::Error::other)
            .and_then(|_| writeln!(out))
    } else {
        write!(out, "{}", curve_table(sweep, keys, &s.slo, done))
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| Exit::failure(format!("writing the curve: {e}")))
}

/// The curve as JSON: one point per step, with its coordinates and stored run. `vary`
/// is the keys joined by commas and `value` the step's values likewise (one key: its
/// value); `at` maps each key to the step's value.
fn curve_json(
    sweep: &str,
    keys: &[String],
    campaign: Option<&str>,
    objectives: &[Slo],
    done: &[(Vec<(String, String)>, RunResult)],
) -> serde_json::Value {
    let points: Vec<serde_json::Value> = done
        .iter()
        .map(|(at, r)| {
            let all = &r.summary.all;
            let lat = all.latency_us.as_ref();
            let values: Vec<&str> = at.iter().map(|(_, v)| v.as_str()).collect();
            let at: serde_json::Map<String, serde_json::Value> = at
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                .collect();
            serde_json::json!({
                "value": values.join(","),
                "at": at,
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
    let mut v = serde_json::json!({ "sweep": sweep, "vary": keys.join(","), "keys": keys, "points": points });
    if let Some(c) = campaign {
        v["campaign"] = c.into();
    }
    if let Some(k) = hosts_knee(keys, done) {
        v["knee_hosts"] = k.into();
    }
    if !objectives.is_empty() {
        v["objectives"] = objectives.iter().map(|o| o.to_string()).collect();
        v["max_hosts_at_slo"] = hosts_at_slo(objectives, done).into();
        for (p, (_, r)) in v["points"].as_array_mut().into_iter().flatten().zip(done) {
            p["passed"] = meets(objectives, r).into();
        }
    }
    v
}

/// Whether step `r` meets every objective (one it has no figure for, such as reads of a
/// write-only mix, is not missed) and was not interrupted.
fn meets(objectives: &[Slo], r: &RunResult) -> bool {
    !r.run.interrupted
        && objectives
            .iter()
            .all(|o| o.value(&r.summary).is_none_or(|v| v <= o.limit()))
}

/// The most hosts at which every objective held, every smaller count of the sweep too
/// (None when even the fewest missed).
fn hosts_at_slo(objectives: &[Slo], done: &[(Vec<(String, String)>, RunResult)]) -> Option<u32> {
    let mut steps: Vec<(u32, bool)> = done
        .iter()
        .filter_map(|(at, r)| Some((at.first()?.1.parse().ok()?, meets(objectives, r))))
        .collect();
    steps.sort_by_key(|(k, _)| *k);
    steps
        .iter()
        .take_while(|(_, ok)| *ok)
        .last()
        .map(|(k, _)| *k)
}

/// A fleet-size curve's knee (`search::knee`): the most hosts before the mean latency
/// passes twice that of the fewest. Only for a sweep of the hosts alone.
fn hosts_knee(keys: &[String], done: &[(Vec<(String, String)>, RunResult)]) -> Option<u32> {
    if keys != [fleet_size::KEY] {
        return None;
    }
    let curve: Vec<(u32, Option<f64>)> = done
        .iter()
        .filter(|(_, r)| !r.run.interrupted)
        .filter_map(|(at, r)| {
            let k = at.first()?.1.parse().ok()?;
            Some((k, r.summary.all.latency_us.as_ref().map(|l| l.mean)))
        })
        .collect();
    crate::run::search::knee(&curve)
}

/// The curve as a table, one column per key, with each step's IOPS gain over the
/// previous step of the same curve (the same values of every key but the last): where
/// the gain falls towards zero while p99 keeps rising, the knee has passed.
fn curve_table(
    sweep: &str,
    keys: &[String],
    objectives: &[Slo],
    done: &[(Vec<(String, String)>, RunResult)],
) -> String {
    let widths: Vec<usize> = keys.iter().map(|k| k.chars().count().max(10)).collect();
    let mut t = format!(
        "sweep {sweep}: {} step(s) of {}\n",
        done.len(),
        keys.join(" × ")
    );
    for (k, w) in keys.iter().zip(&widths) {
        t.push_str(&format!("{k:>w$} "));
    }
    t.push_str(&format!(
        "{:>12} {:>8} {:>10} {:>10} {:>10} {:>9}  run\n",
        "IOPS", "MB/s", "mean µs", "p50 µs", "p99 µs", "IOPS Δ"
    ));
    let indent = widths.iter().sum::<usize>() + widths.len() - 1;
    let mut prev: Option<(&[(String, String)], f64)> = None;
    for (at, r) in done {
        let all = &r.summary.all;
        let lat = all.latency_us.as_ref();
        let outer = &at[..at.len().saturating_sub(1)];
        let gain = prev
            .filter(|(o, p)| *o == outer && *p > 0.0)
            .map(|(_, p)| format!("{:+.0}%", (all.iops - p) / p * 100.0))
            .unwrap_or_else(|| "–".into());
        for ((_, v), w) in at.iter().zip(&widths) {
            t.push_str(&format!("{v:>w$} "));
        }
        t.push_str(&format!(
            "{:>12.0} {:>8.1} {:>10} {:>10} {:>10} {:>9}  {}{}\n",
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
                "{:>indent$} INVALID: {}\n",
                "",
                iofleet_report::text::escape(&r.validity.reasons.join("; "))
            ));
        }
        if let Some(s) = &r.steady_state {
            t.push_str(&format!(
                "{:>indent$} {}\n",
                "",
                iofleet_report::table::steady_line(s)
            ));
        }
        prev = Some((outer, all.iops));
    }
    if let Some(k) = hosts_knee(keys, done) {
        let first = done.first().map_or("", |(at, _)| at[0].1.as_str());
        t.push_str(&format!(
            "knee: {k} host(s) (the most before mean latency passes twice that of {first} host(s))\n"
        ));
    }
    if !objectives.is_empty() {
        let at = slo::join(objectives).replace(';', ", ");
        t.push_str(&match hosts_at_slo(objectives, done) {
            Some(k) => format!("max clients at SLO ({at}): {k} host(s)\n"),
            None => format!("max clients at SLO ({at}): none (the fewest hosts missed)\n"),
        });
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn ok<T>(r: Result<T, Exit>) -> T {
        r.unwrap_or_else(|e| panic!("{}", e.message))
    }

    #[test]
    fn vary_names_what_is_wrong() {
        let Ok(a) = parse_vary("qd=1, 2,4") else {
            panic!("a good --vary is refused")
        };
        assert_eq!(
            (a.key.as_str(), a.values),
            ("qd", vec!["1".into(), "2".into(), "4".into()])
        );
        for (bad, says) in [
            ("qd", "KEY=V1"),
            ("colour=1,2", "colour"),
            ("qd=4", "at least two"),
            ("stream.align=4k,8k", "stream.align has no flag"),
            ("verify=1,2", "no values to vary"),
            ("pods=1,2", "are its hosts: vary hosts"),
        ] {
            let Err(e) = parse_vary(bad) else {
                panic!("{bad} is accepted")
            };
            let e = e.message;
            assert!(e.contains(says) && e.contains("--vary"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_key_is_known_by_its_profile_key_its_last_part_or_its_flag() {
        for (given, key) in [
            ("fleet.qd", "qd"),
            ("threads_per_disk", "threads"),
            ("fleet.disks_per_worker", "disks"),
            ("disks", "disks"),
            ("read-pct", "read_pct"),
            ("stream.read_pct", "read_pct"),
            ("rate", "rate"),
            ("timing.rate_iops", "rate"),
            ("working_set", "working_set"),
        ] {
            let a = ok(parse_vary(&format!("{given}=1,2")));
            assert_eq!(a.key, key, "{given}");
        }
        // One key, two names: one dimension.
        let e = parse_matrix(&["qd=1,2".into(), "fleet.qd=4,8".into()]).unwrap_err();
        assert!(
            e.message.contains("--vary qd: given more than once"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_matrix_runs_every_combination_first_key_outermost() {
        let axes = ok(parse_matrix(&["bs=4k,64k".into(), "qd=1,8,32".into()]));
        let steps: Vec<String> = cells(&axes)
            .iter()
            .map(|c| coords_text(&coords(&axes, c)))
            .collect();
        assert_eq!(
            steps,
            [
                "bs=4k,qd=1",
                "bs=4k,qd=8",
                "bs=4k,qd=32",
                "bs=64k,qd=1",
                "bs=64k,qd=8",
                "bs=64k,qd=32"
            ]
        );
        let big: Vec<String> = (0..5)
            .map(|i| {
                format!(
                    "{}=1,2,3,4,5,6,7",
                    ["qd", "threads", "workers", "disks", "rate"][i]
                )
            })
            .collect();
        let e = parse_matrix(&big).unwrap_err();
        assert!(e.message.contains("more than 10000 steps"), "{}", e.message);
    }

    #[test]
    fn a_step_sets_its_keys_and_keeps_every_other_flag() {
        let cli = crate::cli::Cli::try_parse_from([
            "iofleet",
            "sweep",
            "easy-run-4k100r",
            "--qd",
            "8",
            "--workers",
            "3",
            "--verify",
            "--write-through",
            "--vary",
            "bs=4k,64k",
            "--vary",
            "disks=1,2",
        ])
        .unwrap();
        let crate::cli::Command::Sweep(s) = cli.command else {
            panic!("not a sweep")
        };
        let axes = ok(parse_matrix(&s.vary));
        let at = coords(&axes, &[1, 0]);
        let a = ok(step_args(&s.run, &at, &axes));
        assert_eq!(a.ov.disks, Some(1));
        assert_eq!(
            a.ov.bs,
            Some(iofleet_profile::parse_block_sizes("64k").unwrap())
        );
        assert_eq!(
            (a.ov.qd, a.ov.workers, a.ov.verify, a.ov.write_through),
            (Some(8), Some(3), true, true)
        );
        // A bad value names the step's key and value, and what is wrong with it.
        let bad = vec![("disks".to_string(), "two".to_string())];
        let e = step_args(&s.run, &bad, &axes[1..]).unwrap_err();
        assert!(
            e.message
                .starts_with("--vary disks=two: invalid value 'two' for '--disks"),
            "{}",
            e.message
        );
    }
}
