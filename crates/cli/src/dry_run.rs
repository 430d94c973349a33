//! `iofleet run --dry-run`: what a run would do, printed, with nothing touched.
//!
//! The output is the resolved plan as profile TOML (save it and run it as a profile
//! file), followed by the fleet layout and the files or device regions as TOML comments,
//! so the whole of stdout is still a profile that runs. The same checks as a real run are
//! made (profile, flags, target kind, free space, device safety, block sizes against the
//! layout) and fail the same way, exit 2. Nothing is created, filled or written: no target
//! directory, no disk file, no results store entry, no `--output` file, no agent started.
//! Remote hosts (`--hosts`) are not contacted, so their device regions are not known.

use std::fmt::Write as _;
use std::path::PathBuf;

use iofleet_engine::target::{plan_layout, DiskLayout, TargetSpec, MARKER_LEN};
use iofleet_fleet::inproc::{check_layout, check_verify, device_size_notice};
use iofleet_fleet::inventory::{self, HostSpec};
use iofleet_fleet::protocol::TargetArg;
use iofleet_fleet::{EngineSpec, FleetError, RunSettings};
use iofleet_profile::{plan_toml, Bytes, GroupPlan};

use crate::Exit;

/// Disk files or regions listed per target before the rest is summarised.
const LIST_AT_MOST: usize = 32;

/// Where the run would go: this host's target, or an inventory's hosts.
pub enum Where<'a> {
    Local(&'a TargetSpec),
    Hosts(&'a [HostSpec]),
}

pub fn print(groups: &[GroupPlan], at: Where<'_>, settings: &RunSettings) -> Result<i32, Exit> {
    let mut groups = groups.to_vec();
    let mut out = String::new();
    let mut notes: Vec<String> = Vec::new();
    let caps = settings.engine.caps();
    check_verify(&groups, &settings.engine).map_err(fleet_exit)?;

    // Hosts: the placement a run makes (pins applied), planned by the same function.
    let host_plan = match at {
        Where::Hosts(hosts) => {
            let p = iofleet_fleet::agents::plan_hosts(hosts, &groups).map_err(fleet_exit)?;
            groups = p.groups.clone();
            notes.extend(p.notices.iter().cloned());
            Some(p)
        }
        Where::Local(_) => None,
    };

    // Local layouts first: a single group's disk size follows its device regions.
    let mut layouts: Vec<Vec<DiskLayout>> = Vec::new();
    if let Where::Local(target) = at {
        if caps.needs_target {
            if groups.len() > 1 && matches!(target, TargetSpec::Devices(_)) {
                return Err(Exit::input(
                    "--target: worker groups need a directory target (each group would split the same devices)",
                ));
            }
            for g in &groups {
                let f = &g.plan.fleet;
                let layout = plan_layout(target, &settings.layout_request(g, settings.direct))
                    .map_err(|e| fleet_exit(FleetError::from(e)))?;
                check_layout(&g.plan, &layout, settings.direct).map_err(fleet_exit)?;
                notes.extend(device_size_notice(
                    f.disk_size.0,
                    &layout,
                    settings.disk_size_from_cli,
                ));
                layouts.push(layout);
            }
            if let ([g], [layout]) = (groups.as_mut_slice(), layouts.as_slice()) {
                if let Some(min) = layout.iter().map(|d| d.size).min() {
                    g.plan.fleet.disk_size = Bytes(min);
                }
            }
        }
    }

    // The plan(s), as profile TOML.
    writeln!(
        out,
        "# iofleet run --dry-run: the resolved plan as a profile. Nothing was created or written."
    )
    .ok();
    if groups.len() == 1 {
        writeln!(
            out,
            "# Save this output as a .toml file and run it: iofleet run FILE (with the same --target)."
        )
        .ok();
        writeln!(out, "{}", plan_toml(&groups[0].plan)).ok();
    } else {
        writeln!(
            out,
            "# One profile per worker group; save each part as a .toml file and run them together with\n\
             # --group NAME=FILE:WORKERS (each group's workers are given on --group)."
        )
        .ok();
        for g in &groups {
            writeln!(
                out,
                "\n# ---- group {} ({} workers): --group {}=FILE:{} ----",
                g.name, g.plan.fleet.workers, g.name, g.plan.fleet.workers
            )
            .ok();
            writeln!(out, "{}", plan_toml(&g.plan)).ok();
        }
    }

    // The fleet.
    let total_workers: u32 = groups.iter().map(|g| g.plan.fleet.workers).sum();
    let lanes = iofleet_fleet::inproc::lane_count(&groups) as u64;
    let disks: u64 = groups
        .iter()
        .map(|g| g.plan.fleet.workers as u64 * g.plan.fleet.disks_per_worker as u64)
        .sum();
    let outstanding: u64 = groups.iter().map(|g| g.plan.configured_outstanding()).sum();
    writeln!(out, "# Fleet").ok();
    writeln!(out, "#   workers:     {total_workers}").ok();
    for g in &groups {
        let f = &g.plan.fleet;
        writeln!(
            out,
            "#     group {}: workers {}..={}, {} disk(s) of {} each, {} thread(s) per disk, qd {}",
            g.name,
            g.worker_base,
            (g.worker_base + f.workers).saturating_sub(1),
            f.disks_per_worker,
            f.disk_size,
            f.threads_per_disk,
            f.qd
        )
        .ok();
    }
    writeln!(out, "#   disks:       {disks}").ok();
    writeln!(
        out,
        "#   lanes:       {lanes} (one per thread of each disk a stream uses)"
    )
    .ok();
    writeln!(
        out,
        "#   outstanding: {outstanding} I/Os when every lane is full"
    )
    .ok();
    writeln!(
        out,
        "#   engine:      {}",
        engine_line(&settings.engine, &at, settings.direct)
    )
    .ok();
    writeln!(
        out,
        "#   direct I/O:  {}",
        if settings.direct {
            "yes (O_DIRECT)"
        } else {
            "no"
        }
    )
    .ok();

    match at {
        Where::Local(target) => {
            writeln!(
                out,
                "#   host:        {} (this host)",
                iofleet_fleet::sys::hostname()
            )
            .ok();
            // What `auto` becomes here decides one I/O thread per lane (psync) or not.
            let engine = resolve_here(&settings.engine, target, settings.direct)
                .unwrap_or_else(|_| settings.engine.clone());
            writeln!(
                out,
                "#   I/O threads: {}",
                io_threads_line(&groups, &engine)?
            )
            .ok();
            if !caps.needs_target {
                writeln!(
                    out,
                    "# Target: none ({} touches no storage)",
                    settings.engine.name()
                )
                .ok();
            } else {
                target_lines(&mut out, target, &layouts.concat());
            }
        }
        Where::Hosts(hosts) => {
            writeln!(
                out,
                "#   hosts:       {} (not contacted: I/O threads and device regions are decided on each host)",
                hosts.len()
            )
            .ok();
            let shares = host_plan.as_ref().map_or(&[][..], |p| &p.hosts[..]);
            for (h, share) in hosts.iter().zip(shares) {
                host_lines(&mut out, h, share);
            }
        }
    }
    for n in &notes {
        writeln!(out, "# note: {n}").ok();
    }
    print!("{out}");
    Ok(0)
}

fn fleet_exit(e: FleetError) -> Exit {
    if e.is_input_error() {
        Exit::input(e)
    } else {
        Exit::failure(e)
    }
}

/// The engine a local run would use: `auto` resolved for this kernel and, on a
/// directory target, for its filesystem (the check writes nothing).
fn resolve_here(
    engine: &EngineSpec,
    target: &TargetSpec,
    direct: bool,
) -> Result<EngineSpec, iofleet_engine::EngineError> {
    let dir = match target {
        TargetSpec::Dir(d) => Some(d.as_path()),
        TargetSpec::Devices(_) => None,
    };
    engine.resolve_for_dir(dir, direct, &mut Vec::new())
}

fn engine_line(engine: &EngineSpec, at: &Where<'_>, direct: bool) -> String {
    match (engine, at) {
        (EngineSpec::Auto, Where::Hosts(_)) => {
            "auto (each host uses io_uring where its kernel allows it, else psync)".into()
        }
        (EngineSpec::Auto, Where::Local(target)) => match resolve_here(engine, target, direct) {
            Ok(EngineSpec::Psync) if matches!(target, TargetSpec::Dir(_)) => {
                "auto: psync (the target's filesystem has no non-blocking reads, as tmpfs; or io_uring is unavailable)".into()
            }
            Ok(other) => format!("auto: {}", other.name()),
            Err(e) => format!("auto: {e}"),
        },
        (e, _) => e.to_string(),
    }
}

/// The I/O threads the in-process launcher would start, from its own placement.
fn io_threads_line(groups: &[GroupPlan], engine: &EngineSpec) -> Result<String, Exit> {
    let (n, lanes, cpus) =
        iofleet_fleet::inproc::planned_io_threads(groups, engine).map_err(fleet_exit)?;
    let caps = engine.caps();
    let why = if !caps.async_qd {
        format!(
            "one per lane: {} keeps one I/O in flight per thread",
            engine.name()
        )
    } else if caps.device_per_disk {
        "a disk's lanes share one thread, as they share its simulated device".to_string()
    } else {
        format!("{lanes} lane(s) shared among them")
    };
    let pinned = match &cpus {
        Some(c) => format!(
            ", pinned to CPUs {}",
            iofleet_fleet::sys::format_cpu_list(c)
        ),
        None => String::new(),
    };
    Ok(format!("{n} ({why}{pinned})"))
}

fn target_lines(out: &mut String, target: &TargetSpec, layout: &[DiskLayout]) {
    match target {
        TargetSpec::Dir(d) => {
            let state = if d.is_dir() {
                "exists"
            } else {
                "does not exist yet; the run creates it"
            };
            writeln!(out, "# Target: directory {} ({state})", d.display()).ok();
            let bytes: u64 = layout.iter().map(|l| l.size + MARKER_LEN).sum();
            writeln!(
                out,
                "#   {} disk file(s), {:.2} GiB in all (each disk plus a {} fill marker)",
                layout.len(),
                bytes as f64 / (1u64 << 30) as f64,
                Bytes(MARKER_LEN)
            )
            .ok();
        }
        TargetSpec::Devices(devs) => {
            let names: Vec<String> = devs.iter().map(|d| d.display().to_string()).collect();
            writeln!(
                out,
                "# Target: block device(s) {}, split into equal regions",
                names.join(" ")
            )
            .ok();
        }
    }
    for d in layout.iter().take(LIST_AT_MOST) {
        let place = if d.is_device {
            format!(
                "{} bytes {}..{}",
                d.path.display(),
                d.region_offset,
                d.region_offset + d.size
            )
        } else {
            d.path.display().to_string()
        };
        writeln!(
            out,
            "#   worker {} disk {}: {place} ({})",
            d.worker,
            d.disk,
            Bytes(d.size)
        )
        .ok();
    }
    if layout.len() > LIST_AT_MOST {
        writeln!(out, "#   ... and {} more", layout.len() - LIST_AT_MOST).ok();
    }
}

fn host_lines(out: &mut String, h: &HostSpec, share: &iofleet_fleet::agents::HostShare) {
    let (base, count) = (share.base, share.count);
    let via = match h.transport {
        inventory::TransportKind::Ssh => format!("ssh {}", h.destination),
        inventory::TransportKind::Local => "a local agent process".into(),
    };
    if count == 0 {
        writeln!(out, "#   host {} ({via}): no worker to run", h.name).ok();
        return;
    }
    writeln!(
        out,
        "#   host {} ({via}): workers {base}..={}",
        h.name,
        base + count - 1
    )
    .ok();
    match &h.target {
        TargetArg::Dir(dir) => {
            let mut files = Vec::new();
            for g in &share.groups {
                let lo = g.worker_base;
                for w in lo..lo + g.plan.fleet.workers {
                    for d in 0..g.plan.fleet.disks_per_worker {
                        files.push(
                            PathBuf::from(dir).join(iofleet_engine::target::disk_file_name(w, d)),
                        );
                    }
                }
            }
            writeln!(
                out,
                "#     target directory {dir}: {} disk file(s)",
                files.len()
            )
            .ok();
            for f in files.iter().take(LIST_AT_MOST) {
                writeln!(out, "#       {}", f.display()).ok();
            }
            if files.len() > LIST_AT_MOST {
                writeln!(out, "#       ... and {} more", files.len() - LIST_AT_MOST).ok();
            }
        }
        TargetArg::Devices(devs) => {
            writeln!(
                out,
                "#     target devices {} (regions are planned on the host)",
                devs.join(" ")
            )
            .ok();
        }
    }
}
