//! `iofleet find-max PROFILE --slo 'p99<=3ms' [--slo …]`: the highest sustained
//! open-loop rate at which every latency objective holds (see `find_max`), or with
//! `--over hosts` the most clients (hosts of the fleet), printed as a table or JSON.
//!
//! Rates here are totals over the fleet (IOPS), unlike `--rate`, which is per worker.

use std::io::Write;

use clap::Args;
use iofleet_stats::slo;

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::run::campaign::{Fingerprint, ResumeArg};
use crate::run::find_max::{find_max, report_json, report_table, SearchArgs};
use crate::run::search::End;

#[derive(Args, Debug)]
pub struct FindMaxArgs {
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub resume: ResumeArg,
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(f: FindMaxArgs) -> Result<i32, Exit> {
    let name = f.run.save.name.clone().unwrap_or_else(|| {
        let profile = f.run.profile.as_deref().unwrap_or("flags");
        format!("findmax-{profile}")
    });
    let report = find_max(
        &f.run,
        &f.search,
        &name,
        Some((
            f.resume.resume.as_deref(),
            Fingerprint::of::<FindMaxArgs>(std::env::args_os()),
        )),
    )?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if f.run.json {
        serde_json::to_writer_pretty(&mut out, &report_json(&report))
            .map_err(std::io::Error::other)
            .and_then(|_| writeln!(out))
    } else {
        write!(out, "{}", report_table(&report))
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| Exit::failure(format!("writing the result: {e}")))?;
    if report.end == End::NoneMet && report.hosts.is_some() {
        eprintln!(
            "error: no fleet size tried meets {} (not even 1 host)",
            slo::join(&report.objectives)
        );
    } else if report.end == End::NoneMet {
        eprintln!(
            "error: no rate tried meets {} (lowest tried: {:.0} IOPS)",
            slo::join(&report.objectives),
            report
                .steps
                .iter()
                .map(|s| s.point.rate)
                .fold(f64::INFINITY, f64::min)
        );
    }
    Ok(report.code)
}
