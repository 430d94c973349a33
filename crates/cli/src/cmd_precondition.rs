//! `iofleet precondition [PROFILE] [--target …]`: SNIA SSS PTS workload-independent
//! preconditioning of every disk the plan uses on this host — each disk written twice
//! over with 128 KiB sequential writes of random data — with a progress bar.
//!
//! The disks are the ones `iofleet run` would use with the same profile and flags
//! (`--workers`, `--disks`, `--disk-size`, `--target`): planned by the same
//! `plan_layout`, so every safety check of a run applies unchanged (a device carrying
//! a signature, mounted or in use is refused unless `--destroy-data`), and nothing is
//! written before every disk has passed them. After the second pass each disk carries
//! the fill marker of a random fill, so a following run that prepares with random data
//! reuses it instead of filling again. The workload of the profile (block sizes, read
//! share) plays no part. Fleets across hosts are not preconditioned from here: run
//! the command on each host.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use iofleet_engine::target::{
    create_files, plan_layout, precondition_pass, DiskLayout, FillOutcome, LayoutRequest,
    TargetError, PRECONDITION_BS,
};
use iofleet_profile::options::help;
use iofleet_profile::{Bytes, Context, Overrides, Plan};

use crate::cmd_run::{ctrl_c_flag, target_spec_of};
use crate::Exit;

/// Passes over every disk (SNIA: twice the capacity).
pub const PASSES: u32 = 2;

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
    /// Print what was written as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

fn target_exit(e: TargetError) -> Exit {
    if e.is_input_error() {
        Exit::input(e)
    } else {
        Exit::failure(e)
    }
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
            let raw = iofleet_profile::load(p).map_err(Exit::input)?;
            iofleet_profile::resolve(&raw, &ov, &ctx).map_err(Exit::input)
        }
        None => iofleet_profile::resolve_flags(&ov, &ctx).map_err(Exit::input),
    }
}

pub fn run(a: PreconditionArgs) -> Result<i32, Exit> {
    // Ctrl-C from the start: once a disk file exists, a stop must end in a clean 130.
    let stop = ctrl_c_flag();
    let plan = plan(&a)?;
    let spec = target_spec_of(&a.target)?;
    // Every check (free space, device signatures, mounts) before any write.
    let layout = plan_layout(
        &spec,
        &LayoutRequest {
            worker_base: 0,
            workers: plan.fleet.workers,
            disks_per_worker: plan.fleet.disks_per_worker,
            disk_size: plan.fleet.disk_size.0,
            disk_size_from_cli: a.disk_size.is_some(),
            direct: a.direct,
            destroy_data: a.destroy_data,
        },
    )
    .map_err(target_exit)?;
    create_files(&layout).map_err(target_exit)?;

    let per_pass: u64 = layout.iter().map(|d| d.size).sum();
    let total = per_pass * u64::from(PASSES);
    let bar = progress_bar(a.quiet, total);
    let written: Vec<AtomicU64> = layout.iter().map(|_| AtomicU64::new(0)).collect();
    let t0 = Instant::now();
    let mut complete = true;
    for pass in 0..PASSES {
        if let Some(b) = &bar {
            b.set_message(format!("precondition pass {}/{PASSES}", pass + 1));
        }
        if !one_pass(&layout, pass, a.direct, &stop, &written, bar.as_ref())? {
            complete = false;
            break;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let bytes: Vec<u64> = written.iter().map(|w| w.load(Ordering::SeqCst)).collect();
    print_outcome(&a, &layout, &bytes, secs, complete)?;
    if !complete {
        eprintln!(
            "error: interrupted: the disks are partly written and carry no fill marker; run iofleet precondition again"
        );
        return Ok(130);
    }
    Ok(0)
}

/// The bar on stderr (None when quiet or stderr is not a terminal).
fn progress_bar(quiet: bool, total: u64) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    b.set_style(
        ProgressStyle::with_template(
            "{msg} [{wide_bar}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
        )
        .expect("static template"),
    );
    Some(b)
}

/// One pass over every disk, up to four disks at a time; false when interrupted.
fn one_pass(
    layout: &[DiskLayout],
    pass: u32,
    direct: bool,
    stop: &AtomicBool,
    written: &[AtomicU64],
    bar: Option<&ProgressBar>,
) -> Result<bool, Exit> {
    let next = AtomicU64::new(0);
    let parallel = layout.len().clamp(1, 4);
    let results: Vec<Result<bool, TargetError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..parallel)
            .map(|_| {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::SeqCst) as usize;
                    let Some(d) = layout.get(i) else {
                        return Ok(true);
                    };
                    // Each write adds its bytes to the disk's count as it lands.
                    if precondition_pass(d, pass, direct, stop, &written[i])?
                        == FillOutcome::Interrupted
                    {
                        return Ok(false);
                    }
                })
            })
            .collect();
        while handles.iter().any(|h| !h.is_finished()) {
            if let Some(b) = bar {
                let done: u64 = written.iter().map(|w| w.load(Ordering::Relaxed)).sum();
                b.set_position(done);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("precondition thread does not panic"))
            .collect()
    });
    let mut complete = true;
    for r in results {
        complete &= r.map_err(target_exit)?;
    }
    Ok(complete && !stop.load(Ordering::SeqCst))
}

fn print_outcome(
    a: &PreconditionArgs,
    layout: &[DiskLayout],
    bytes: &[u64],
    secs: f64,
    complete: bool,
) -> Result<(), Exit> {
    let total: u64 = bytes.iter().sum();
    let mbps = if secs > 0.0 {
        total as f64 / secs / 1e6
    } else {
        0.0
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if a.json {
        let disks: Vec<serde_json::Value> = layout
            .iter()
            .zip(bytes)
            .map(|(d, b)| {
                serde_json::json!({
                    "worker": d.worker,
                    "disk": d.disk,
                    "path": d.path.display().to_string(),
                    "region_offset": d.region_offset,
                    "size": d.size,
                    "bytes_written": b,
                })
            })
            .collect();
        let v = serde_json::json!({
            "passes": PASSES,
            "bs": PRECONDITION_BS,
            "complete": complete,
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
            layout.len(),
            PRECONDITION_BS >> 10,
            if complete { "" } else { " (INTERRUPTED)" }
        );
        for (d, b) in layout.iter().zip(bytes) {
            t.push_str(&format!(
                "  worker {} disk {}  {} @ {}  size {}  written {}\n",
                d.worker,
                d.disk,
                d.path.display(),
                d.region_offset,
                Bytes(d.size),
                Bytes(*b)
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
