//! `iofleet precondition [PROFILE] [--target …|--hosts FILE]`: SNIA SSS PTS
//! workload-independent preconditioning of every disk the plan uses — each disk written
//! twice over with 128 KiB sequential writes of random data — with a progress bar.
//!
//! It is a launcher operation (`Launcher::precondition`, `iofleet_fleet::precondition`):
//! the disks are the ones `iofleet run` would use with the same profile and flags
//! (`--workers`, `--disks`, `--disk-size`, `--target` or `--hosts`), planned by the same
//! `Launcher::plan`, so every safety check of a run applies unchanged (a device carrying
//! a signature, mounted or in use is refused unless `--destroy-data`), and nothing is
//! written before every disk has passed them. With `--hosts` every host preconditions
//! its own share of the disks at the same time (no progress bar: the hosts report when
//! they are done). After the second pass each disk carries the fill marker of a random
//! fill, so a following run that prepares with random data reuses it instead of filling
//! again. The workload of the profile (block sizes, read share) plays no part.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use iofleet_engine::target::PRECONDITION_BS;
use iofleet_fleet::precondition::{Preconditioned, PASSES};
use iofleet_fleet::{Observer, RunSettings};
use iofleet_profile::options::help;
use iofleet_profile::{Bytes, Context, GroupPlan, Overrides, Plan};

use crate::exit::Exit;
use crate::run::resolve::{ctrl_c_flag, fleet_exit, launcher_at};

#[derive(Args, Debug)]
pub struct PreconditionArgs {
    /// Built-in profile name or profile .toml file whose disks to precondition; without
    /// one, the default shape (1 worker, 1 disk of 1g) with the flags below.
    pub profile: Option<String>,
    /// Where the disks live: a directory (one file per disk) or, repeated, block
    /// devices split into disk regions, as for `iofleet run`.
    #[arg(long, value_name = "DIR|DEVICE", default_value = "iofleet-data")]
    pub target: Vec<PathBuf>,
    /// Allow writing block devices that carry a filesystem, partition table, LVM, RAID or
    /// other signature. Their data is destroyed.
    #[arg(long)]
    pub destroy_data: bool,
    #[arg(long, allow_negative_numbers = true, help = help("fleet.workers"))]
    pub workers: Option<i64>,
    #[arg(long, allow_negative_numbers = true, help = help("fleet.disks_per_worker"))]
    pub disks: Option<i64>,
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::size, help = help("fleet.disk_size"))]
    pub disk_size: Option<Bytes>,
    /// Use O_DIRECT (bypass the page cache); `--direct=false` for filesystems that refuse it.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub direct: bool,
    /// Precondition the disks of every host of this inventory (iofleet TOML, or Ansible
    /// INI), each host its share, as `iofleet run --hosts` places them; each host's
    /// targets come from the inventory.
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// With --hosts: a host silent this long fails the preconditioning.
    #[arg(long, value_parser = crate::args::duration, default_value = "30s", value_name = "DURATION")]
    pub host_timeout: Duration,
    /// Print what was written as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The plan whose disks are preconditioned.
fn plan(a: &PreconditionArgs) -> Result<Plan, Exit> {
    let ov = Overrides {
        workers: a.workers,
        disks: a.disks,
        disk_size: a.disk_size,
        ..Overrides::default()
    };
    let ctx = Context { direct: a.direct };
    match &a.profile {
        Some(p) => {
            let raw =
                iofleet_profile::load_with(p, &crate::inputs::text_of).map_err(Exit::input)?;
            iofleet_profile::resolve(&raw, &ov, &ctx).map_err(Exit::input)
        }
        None => iofleet_profile::resolve_flags(&ov, &ctx).map_err(Exit::input),
    }
}

pub fn run(a: PreconditionArgs) -> Result<i32, Exit> {
    // Ctrl-C from the start: once a disk file exists, a stop must end in a clean 130.
    let stop = ctrl_c_flag();
    let groups = GroupPlan::single(plan(&a)?, 0);
    let settings = RunSettings {
        direct: a.direct,
        destroy_data: a.destroy_data,
        disk_size_from_cli: a.disk_size.is_some(),
        host_timeout: a.host_timeout,
        ..RunSettings::default()
    };
    let mut launcher = launcher_at(a.hosts.as_deref(), &a.target)?;
    let mut bar = Bar(progress_bar(a.quiet || a.hosts.is_some()));
    // Planned first: every check (free space, device signatures, mounts) before any write.
    let outcome = launcher.precondition(&groups, &settings, &stop, &mut bar);
    if let Some(b) = bar.0 {
        b.finish_and_clear();
    }
    let Some(done) = outcome.map_err(fleet_exit)? else {
        eprintln!("error: interrupted before anything was written");
        return Ok(130);
    };
    // What the launcher opened for the command goes now (a kept VM fleet stays, and
    // says so); on an error or Ctrl-C above, dropping it does the same.
    let closed = launcher.close();
    for n in done.notices.iter().chain(&closed) {
        eprintln!("note: {n}");
    }
    print_outcome(&a, &done)?;
    if !done.complete {
        eprintln!(
            "error: interrupted: the disks are partly written and carry no fill marker; run iofleet precondition again"
        );
        return Ok(130);
    }
    Ok(0)
}

/// The bar on stderr (None when quiet or stderr is not a terminal).
fn progress_bar(quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    b.set_style(
        ProgressStyle::with_template(
            "{msg} [{wide_bar}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
        )
        .expect("static template"),
    );
    Some(b)
}

/// Progress from the launcher, drawn on the bar with the pass it is in.
struct Bar(Option<ProgressBar>);

impl Observer for Bar {
    fn prepare_progress(&mut self, done: u64, total: u64) {
        let Some(b) = &self.0 else { return };
        let pass = (done * u64::from(PASSES))
            .checked_div(total)
            .map_or(1, |p| (p + 1).min(u64::from(PASSES)));
        b.set_length(total);
        b.set_position(done);
        b.set_message(format!("precondition pass {pass}/{PASSES}"));
    }
}

fn print_outcome(a: &PreconditionArgs, done: &Preconditioned) -> Result<(), Exit> {
    let total: u64 = done.disks.iter().map(|d| d.bytes_written).sum();
    let secs = done.seconds;
    let mbps = if secs > 0.0 {
        total as f64 / secs / 1e6
    } else {
        0.0
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if a.json {
        let disks: Vec<serde_json::Value> = done
            .disks
            .iter()
            .map(|d| {
                serde_json::json!({
                    "host": d.host,
                    "worker": d.worker,
                    "disk": d.disk,
                    "path": d.path,
                    "region_offset": d.region_offset,
                    "size": d.size,
                    "bytes_written": d.bytes_written,
                })
            })
            .collect();
        let v = serde_json::json!({
            "passes": PASSES,
            "bs": PRECONDITION_BS,
            "complete": done.complete,
            "bytes_written": total,
            "seconds": secs,
            "mbps": mbps,
            "disks": disks,
        });
        serde_json::to_writer_pretty(&mut out, &v)
            .map_err(std::io::Error::other)
            .and_then(|_| writeln!(out))
    } else {
        let mut t = format!(
            "precondition: {} disk(s), {PASSES} passes of {} KiB sequential writes of random data{}\n",
            done.disks.len(),
            PRECONDITION_BS >> 10,
            if done.complete { "" } else { " (INTERRUPTED)" }
        );
        for d in &done.disks {
            let host = if a.hosts.is_some() {
                format!("host {}  ", d.host)
            } else {
                String::new()
            };
            t.push_str(&format!(
                "  {host}worker {} disk {}  {} @ {}  size {}  written {}\n",
                d.worker,
                d.disk,
                d.path,
                d.region_offset,
                Bytes(d.size),
                Bytes(d.bytes_written)
            ));
        }
        t.push_str(&format!(
            "written {} in {secs:.1} s ({mbps:.1} MB/s)\n",
            Bytes(total)
        ));
        write!(out, "{t}")
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| Exit::failure(format!("writing the outcome: {e}")))
}
